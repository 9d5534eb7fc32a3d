import Foundation

// Shared plumbing of the runner: the contenders, errors, the clock, temporary stores, resident
// memory. No SQLite module is imported here: the raw C API (`CSQLiteRaw`) and GRDB each live in
// their own file.

/// The three sides of every comparison, in the order they run within a round.
enum Contender: Int, CaseIterable, Sendable, Hashable {
    case raw, grdb, strata

    var label: String {
        switch self {
        case .raw: "raw SQLite"
        case .grdb: "GRDB"
        case .strata: "Strata"
        }
    }

    var tag: String {
        switch self {
        case .raw: "raw"
        case .grdb: "grdb"
        case .strata: "strata"
        }
    }
}

struct VersusError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: Time

let clock = ContinuousClock()

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// Runs `body` and returns its result with the wall-clock seconds it took.
@inline(__always)
func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = clock.now
    let result = try body()
    return (result, (clock.now - start).seconds)
}

/// The median of `values` (the mean of the two middle ones for an even count).
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

// MARK: Stores on disk

/// The runner's scratch folder (removed at exit), one subfolder per store so that a store's WAL,
/// SHM and section-cache folder go with it.
final class Scratch: Sendable {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-versus-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    /// A new, empty folder for one store; the store file is `store.sqlite` in it.
    func newStore(_ label: String) throws -> StorePath {
        let directory = root.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return StorePath(directory: directory)
    }

    func removeAll() { try? FileManager.default.removeItem(at: root) }
}

/// One store's folder and file.
struct StorePath: Sendable {
    let directory: URL
    var url: URL { directory.appendingPathComponent("store.sqlite") }
    var path: String { url.path }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// A copy of the store file (closed, so the WAL is checkpointed into it) in a new folder,
    /// flushed to disk: a workload that syncs the database file (a WAL checkpoint) must not pay
    /// for writing back the copy itself.
    func copy(in scratch: Scratch, label: String) throws -> StorePath {
        let copy = try scratch.newStore(label)
        try FileManager.default.copyItem(at: url, to: copy.url)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy.path + suffix)
        }
        for file in [copy.path, copy.path + "-wal"] where FileManager.default.fileExists(atPath: file) {
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: file))
            try handle.synchronize()
            try handle.close()
        }
        return copy
    }

    var fileBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}

// MARK: Memory

/// glibc's `malloc_trim`: returns freed heap pages to the system (not in Swift's Glibc module).
@_silgen_name("malloc_trim") func glibcMallocTrim(_ pad: Int) -> Int32

/// Resident bytes of this process (`/proc/self/statm`), after returning freed memory to the system.
func residentBytes() -> Int {
    _ = glibcMallocTrim(0)
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
          let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The peak resident bytes of this process so far (`VmHWM` in `/proc/self/status`), or nil.
func peakResidentBytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kB = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
    return kB * 1024
}

// MARK: Output

/// Prints at once (stdout is a pipe under `swift run`: no line buffering otherwise).
func say(_ text: String) {
    print(text)
    fflush(nil)  // every output stream (naming `stdout` is not concurrency-safe in Swift 6)
}

/// A size in short: "10k", "1M", "10M".
func shortCount(_ n: Int) -> String {
    n >= 1_000_000 ? "\(n / 1_000_000)M" : n >= 1000 ? "\(n / 1000)k" : "\(n)"
}

func formatCount(_ n: Int) -> String {
    let digits = String(n)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return out
}
