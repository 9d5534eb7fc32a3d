internal import Foundation
internal import StrataSQLite

/// Read-only connections to a WAL store, beside the coordinator's one writer connection: every
/// read (fetch, count, fault, relationship fault, a results controller's fetch and its cache's
/// validation) takes one, so that no read waits for a commit and a commit waits for no read.
///
/// Each read runs in its own read transaction (or autocommit statement) and ends it before the
/// connection goes back, so the next read on it starts a new snapshot: a read that starts after
/// a commit returned sees that commit (read-your-writes). A connection is used by one thread at
/// a time: it is taken out of `idle` for the read and put back after.
///
/// Connections are opened on demand, by the first read that finds none idle (opening one and
/// reading the schema costs about half a million instructions: a coordinator that only commits,
/// such as a migration's, opens none), and up to `limit` idle ones are kept.
final class ReaderPool: Sendable {
    let path: String
    let configuration: Connection.Configuration
    let limit: Int
    /// The idle connections, the trace new ones take, and whether the pool was closed.
    private let state = Locked(State())

    // A `Connection` is not thread-safe; `idle` holds only connections no thread uses, and the
    // counters and trace of those are read and set only under the lock: @unchecked because the
    // pool, not the type, makes each connection's use exclusive.
    private struct State: @unchecked Sendable {
        var idle: [Connection] = []
        var trace: (@Sendable (String) -> Void)?
        var closed = false
    }

    init(path: String, configuration: Connection.Configuration, limit: Int = 4) {
        var configuration = configuration
        configuration.readOnly = true
        configuration.createIfMissing = false
        configuration.setsJournalMode = false
        self.path = path
        self.configuration = configuration
        self.limit = limit
    }

    private func open() throws -> Connection {
        let connection = try Connection(path: path, configuration: configuration)
        try StringMatching.register(on: connection)
        // Warm: the schema is read now, not by the first fetch.
        _ = try connection.pragma("schema_version")
        connection.endReads()
        // Opening is the pool's work, not the read's: the counters start at the first read.
        connection.resetStatistics()
        return connection
    }

    /// Thrown by a read after ``close()`` (the coordinator turns it into ``StoreError/closed(path:)``).
    struct Closed: Error {}

    /// A reader of its own, outside the pool and its statistics (the follower's: its reads are
    /// background work, not the app's). The caller closes it.
    func openDetached() throws -> Connection {
        if state.withLock(\.closed) { throw Closed() }
        return try open()
    }

    /// Runs `body` with a reader no other thread uses.
    func withReader<T>(_ body: (Connection) throws -> T) throws -> T {
        let taken: Connection? = try state.withLock { state in
            if state.closed { throw Closed() }
            return state.idle.popLast()
        }
        let connection: Connection
        if let taken {
            connection = taken
        } else {
            connection = try open()
            connection.trace = state.withLock { $0.trace }
        }
        defer {
            // No snapshot goes back with it: a statement left stepping (a count read by one step,
            // a loop that threw) would keep its read transaction, and the next read on this
            // connection would not see commits made since.
            connection.endReads()
            state.withLock { state in
                if state.closed || state.idle.count >= limit {
                    connection.close()
                } else {
                    state.idle.append(connection)
                }
            }
        }
        return try body(connection)
    }

    /// The readers' statement counters (idle readers only: a reader in use is mid-read, and
    /// its counters are read when it is back).
    var statistics: [StatementStatistics] { state.withLock { $0.idle.map(\.statistics) } }

    func resetStatistics() { state.withLock { state in for connection in state.idle { connection.resetStatistics() } } }

    func setTrace(_ trace: (@Sendable (String) -> Void)?) {
        state.withLock { state in
            state.trace = trace
            for connection in state.idle { connection.trace = trace }
        }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            for connection in state.idle { connection.close() }
            state.idle = []
        }
    }
}
