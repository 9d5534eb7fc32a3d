import Foundation
import StrataSQLite
import Synchronization

/// A fresh directory under the system temporary directory; call `remove()` in a `defer`.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StrataSQLiteTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of a file named `name` inside the directory (the file is not created).
    func path(_ name: String = "test.sqlite") -> String {
        url.appendingPathComponent(name).path
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Collects the SQL passed to `Connection.trace`, which may be called from any thread.
final class TraceRecorder: Sendable {
    private let lines = Mutex<[String]>([])

    func record(_ sql: String) {
        lines.withLock { $0.append(sql) }
    }

    var recorded: [String] {
        lines.withLock { $0 }
    }
}

/// An error thrown by test bodies to trigger rollbacks.
struct DeliberateFailure: Error, Equatable {
    var tag: String
}

extension Connection.Configuration {
    /// The default configuration with a few fields changed.
    static func with(_ change: (inout Connection.Configuration) -> Void) -> Connection.Configuration {
        var configuration = Connection.Configuration()
        change(&configuration)
        return configuration
    }
}

extension Connection {
    /// Every row of `sql`, each as the list of its columns' values.
    func rows(_ sql: String, _ arguments: SQLiteValue...) throws -> [[SQLiteValue]] {
        let statement = try prepare(sql)
        if !arguments.isEmpty { try statement.bind(arguments) }
        var result: [[SQLiteValue]] = []
        try statement.forEachRow { row in
            result.append((0..<row.columnCount).map { row.value(at: $0) })
        }
        return result
    }

    /// The first column of every row of `sql`.
    func column(_ sql: String) throws -> [SQLiteValue] {
        try rows(sql).map { $0[0] }
    }

    /// `SELECT count(*) FROM table`.
    func count(_ table: String) throws -> Int64 {
        let statement = try prepare("SELECT count(*) FROM \(table)")
        guard try statement.step() else { return -1 }
        return statement.int64(at: 0)
    }
}
