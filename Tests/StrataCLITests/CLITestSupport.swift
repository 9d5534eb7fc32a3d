import Foundation
import Testing
import Strata
import StrataSQLite
import StrataTestSupport

/// What one run of the built `strata` binary gave.
struct CLIResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var error: String

    /// Standard error's lines (without the final newline).
    var errorLines: [String] { error.lines }

    var description: String { "exit \(status)\nstdout:\n\(output)\nstderr:\n\(error)" }

    /// The output parsed as JSON.
    func json() throws -> Any { try JSONSerialization.jsonObject(with: Data(output.utf8)) }
    func jsonObject() throws -> [String: Any] { try #require(try json() as? [String: Any], "\(self)") }
    func jsonArray() throws -> [[String: Any]] { try #require(try json() as? [[String: Any]], "\(self)") }
}

/// Runs the real `strata` executable (built beside the test bundle) as a child process.
enum CLI {
    static var executable: URL { Bundle.main.bundleURL.appendingPathComponent("strata") }

    /// `setpriv`, to run the binary as an unprivileged user when the tests run as root.
    static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isRoot: Bool { getuid() == 0 }

    /// Whether `setpriv` can switch to uid 65534 here (it needs CAP_SETUID, which a container may drop).
    static let canDropPrivileges: Bool = {
        guard let setpriv, let truePath = ["/usr/bin/true", "/bin/true"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: setpriv)
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", truePath]
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// Runs `strata arguments…`; with `asNobody`, as uid/gid 65534 through `setpriv` (root only);
    /// `environment` adds to (or replaces) this process's variables.
    static func run(_ arguments: [String], asNobody: Bool = false, environment: [String: String] = [:]) throws -> CLIResult {
        let process = Process()
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if asNobody {
            process.executableURL = URL(fileURLWithPath: try #require(setpriv))
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        let scratch = TemporaryDirectory("strata-cli-output")
        let outURL = scratch.file("out"), errURL = scratch.file("err")
        // Close-on-exec: a child that another test spawns meanwhile (an exit test counting its
        // descriptors) must not inherit these; Process dups them onto the CLI's 1 and 2.
        func create(_ url: URL) throws -> FileHandle {
            let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
            return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        }
        let out = try create(outURL), err = try create(errURL)
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return CLIResult(status: process.terminationStatus, output: try String(contentsOf: outURL, encoding: .utf8),
                         error: try String(contentsOf: errURL, encoding: .utf8))
    }
}

extension CLI {
    /// Runs `strata` with each argument given as its bytes, through `posix_spawn`: `Process`
    /// takes `String` arguments, which can't hold a file name that is not UTF-8.
    static func run(bytes arguments: [[UInt8]]) throws -> CLIResult {
        let scratch = TemporaryDirectory("strata-cli-output")
        let outPath = scratch.file("out").path, errPath = scratch.file("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([Array(executable.path.utf8)] + arguments).map { bytes in
            let argument = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (index, byte) in bytes.enumerated() { argument[index] = CChar(bitPattern: byte) }
            argument[bytes.count] = 0
            return argument
        } + [nil]
        defer { for argument in argv { argument?.deallocate() } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        try #require(spawned == 0, "posix_spawn: \(String(cString: strerror(spawned)))")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            try #require(errno == EINTR, "waitpid: \(String(cString: strerror(errno)))")
        }
        try #require(status & 0x7F == 0, "strata was killed by signal \(status & 0x7F)")
        return CLIResult(status: (status >> 8) & 0xFF, output: try String(contentsOf: URL(fileURLWithPath: outPath), encoding: .utf8),
                         error: try String(contentsOf: URL(fileURLWithPath: errPath), encoding: .utf8))
    }
}

/// File calls on paths given as bytes (FileManager on Linux takes `String` paths and repairs
/// names that are not UTF-8).
enum RawFiles {
    /// `folder/name`, as bytes.
    static func path(_ folder: URL, _ name: [UInt8]) -> [UInt8] { Array(folder.path.utf8) + [UInt8(ascii: "/")] + name }

    static func withCString<T>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try (path + [0]).withUnsafeBufferPointer { try $0.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) } }
    }

    static func rename(_ from: [UInt8], _ to: [UInt8]) throws {
        let result = withCString(from) { from in withCString(to) { Glibc.rename(from, $0) } }
        try #require(result == 0, "rename: \(String(cString: strerror(errno)))")
    }

    static func exists(_ path: [UInt8]) -> Bool {
        var info = stat()
        return withCString(path) { lstat($0, &info) } == 0
    }

    /// The names in a folder (not `.` and `..`), sorted by their bytes; empty when it can't be read.
    static func names(_ folder: [UInt8]) -> [[UInt8]] {
        guard let directory = withCString(folder, { opendir($0) }) else { return [] }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [UInt8(ascii: ".")], name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Every byte of a file.
    static func contents(_ path: [UInt8]) throws -> Data {
        let fd = withCString(path) { open($0, O_RDONLY) }
        try #require(fd >= 0, "open: \(String(cString: strerror(errno)))")
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            try #require(count >= 0)
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
        }
    }

    /// Removes `path` and everything under it (`rm -rf`), whatever bytes the names hold.
    static func removeTree(_ path: [UInt8]) {
        var info = stat()
        guard withCString(path, { lstat($0, &info) }) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for name in names(path) { removeTree(path + [UInt8(ascii: "/")] + name) }
            _ = withCString(path) { rmdir($0) }
        } else {
            _ = withCString(path) { unlink($0) }
        }
    }
}

/// Every file and folder under a folder with its bytes: taken before and after a command that
/// must change nothing on disk.
struct DirectorySnapshot: Equatable, CustomStringConvertible {
    /// Relative path → bytes (`nil` for a folder).
    var entries: [String: Data?]

    /// `openFiles`: files to read through a handle the caller keeps open. Closing any descriptor
    /// of a file drops every POSIX lock this process holds on it, so a file the test holds an
    /// SQLite lock on must be read through a descriptor that stays open.
    init(_ root: URL, openFiles: [String: FileHandle] = [:]) throws {
        entries = [:]
        let base = root.standardizedFileURL.path
        let enumerator = try #require(FileManager.default.enumerator(atPath: base))
        while let relative = enumerator.nextObject() as? String {
            let path = base + "/" + relative
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                entries[relative] = Data?.none
            } else if let handle = openFiles[path] {
                try handle.seek(toOffset: 0)
                entries[relative] = try handle.readToEnd() ?? Data()
            } else {
                entries[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
            }
        }
    }

    /// FNV-1a over every path and its bytes, in path order.
    var hash: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add<S: Sequence>(_ bytes: S) where S.Element == UInt8 { for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 } }
        for path in entries.keys.sorted() {
            add(path.utf8)
            add([0])
            if let data = entries[path]! { add(data) } else { add([1]) }
            add([0])
        }
        return hash
    }

    var description: String {
        entries.keys.sorted().map { "\($0) (\(entries[$0]!.map { "\($0.count) bytes" } ?? "folder"))" }.joined(separator: ", ")
    }
}

/// A goods store in a temporary folder, made by the library, with the section caches results
/// controllers wrote for it. Every step opens its own coordinator and closes it again, so that
/// the `strata` runs find no connection open.
final class CLIFixture {
    /// Goods by category name then name, sectioned by category: reads Good and Category.
    static let byCategory = (name: "by-category", request: FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")]),
                             section: Optional("category.name"))
    /// Goods by name, one section: reads Good only.
    static let byName = (name: "by-name", request: FetchRequest(entityName: "Good", sortKeys: [.ascending("name")]), section: String?.none)
    /// Categories by name: reads Category only.
    static let categories = (name: "categories", request: FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]),
                             section: String?.none)

    /// (category, goods) in insertion order; goods are inserted interleaved, so keys are not in
    /// section order.
    static let goods: [(category: String, names: [String])] = [
        ("Fruit", ["Cherry", "Apple", "Banana", "Fig"]),
        ("Bakery", ["Pretzel", "Baguette"]),
        ("Dairy", ["Milk", "Brie", "Gouda"]),
    ]

    let directory: TemporaryDirectory
    let url: URL
    let options: StoreOptions

    init(journalMode: StrataSQLiteJournalMode = .wal, cacheDirectory: URL? = nil, pageChecksums: Bool = true) throws {
        directory = TemporaryDirectory("strata-cli")
        url = directory.file("goods.sqlite")
        var options = StoreOptions()
        options.journalMode = journalMode
        options.pageChecksums = pageChecksums
        options.sectionCacheDirectory = cacheDirectory
        self.options = options
        try withCoordinator { coordinator in
            let context = coordinator.newContext(name: "seed")
            try context.performAndWait {
                var categories: [String: ManagedObject] = [:]
                for (category, _) in CLIFixture.goods {
                    let object = try context.insert("Category")
                    try object.setValue(category, forKey: "name")
                    categories[category] = object
                }
                var number: Int64 = 0
                for round in 0..<4 {
                    for (category, names) in CLIFixture.goods where round < names.count {
                        number += 1
                        let good = try context.insert("Good")
                        try good.setValue(names[round], forKey: "name")
                        try good.setValue(number, forKey: "number")
                        try good.setValue(categories[category], forKey: "category")
                    }
                }
                _ = try context.save()
            }
        }
    }

    /// A store with three caches: `by-name` valid, `by-category` and `categories` stale after a
    /// new category, and `broken`, a copy of `by-name` with one byte flipped (corrupt).
    static func withFourCaches() throws -> CLIFixture {
        let fixture = try CLIFixture()
        try fixture.makeCache(byCategory)
        try fixture.makeCache(byName)
        try fixture.makeCache(categories)
        try fixture.addCategory("Empty")
        var bytes = try Data(contentsOf: try fixture.cacheURL("by-name"))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: try fixture.cacheURL("broken"))
        return fixture
    }

    var path: String { url.path }
    var cacheFolder: URL { options.sectionCacheDirectory ?? URL(fileURLWithPath: url.path + ".caches") }
    func cacheURL(_ name: String) throws -> URL { try SectionCacheStore(storeURL: url, directory: options.sectionCacheDirectory).url(forCacheNamed: name) }

    /// Runs `body` with a coordinator on the store, then closes it.
    @discardableResult
    func withCoordinator<T>(_ body: (StoreCoordinator) throws -> T) throws -> T {
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: options)
        defer { coordinator.close() }
        return try body(coordinator)
    }

    /// A results controller with cache `name` fetches (writing the cache); returns its snapshot.
    @discardableResult
    func makeCache(_ spec: (name: String, request: AnyFetchRequest, section: String?)) throws -> FetchedSnapshot {
        try withCoordinator { coordinator in
            let context = coordinator.newContext(name: "list")
            let controller = FetchedResultsController(fetchRequest: spec.request, managedObjectContext: context,
                                                      sectionNameKeyPath: spec.section, cacheName: spec.name)
            let snapshot = try context.performAndWait {
                try controller.performFetch()
                return controller.snapshot
            }
            coordinator.waitForCacheWrites()
            return snapshot
        }
    }

    /// Commits a new category (no goods): caches reading Category go stale, the others stay valid.
    func addCategory(_ name: String) throws {
        try withCoordinator { coordinator in
            let context = coordinator.newContext(name: "edit")
            try context.performAndWait {
                let category = try context.insert("Category")
                try category.setValue(name, forKey: "name")
                _ = try context.save()
            }
        }
    }

    func metadata() throws -> StoreMetadata { try withCoordinator { try $0.metadata() } }

    /// The store's folder as it is now (store, caches, everything).
    func snapshot() throws -> DirectorySnapshot { try DirectorySnapshot(directory.url) }

    func fileSize(_ url: URL) throws -> Int64 {
        try #require((try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value)
    }
}

/// zlib's CRC-32, to check the checksum `inspect` shows.
func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
    }
    return ~crc
}

extension String {
    /// The lines, without the empty one after the final newline.
    var lines: [String] { split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
}
