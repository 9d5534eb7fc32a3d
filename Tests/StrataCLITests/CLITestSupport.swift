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

    /// Runs `strata arguments…`; with `asNobody`, as uid/gid 65534 through `setpriv` (root only).
    static func run(_ arguments: [String], asNobody: Bool = false) throws -> CLIResult {
        let process = Process()
        if asNobody {
            process.executableURL = URL(fileURLWithPath: try #require(setpriv))
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        let scratch = TemporaryDirectory("strata-cli-output")
        let outURL = scratch.file("out"), errURL = scratch.file("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
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

    init(journalMode: StrataSQLiteJournalMode = .wal, cacheDirectory: URL? = nil) throws {
        directory = TemporaryDirectory("strata-cli")
        url = directory.file("goods.sqlite")
        var options = StoreOptions()
        options.journalMode = journalMode
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
    func makeCache(_ spec: (name: String, request: FetchRequest, section: String?)) throws -> FetchedSnapshot {
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
