internal import Foundation
internal import PostgresNIO
internal import Logging
internal import Synchronization

/// The server's side: tables created and versioned by the library, in the database the URL names.
///
/// - `strata_sync_meta`: the schema's version and the model every replica must have.
/// - `strata_sync_replica`: one row per replica (its number is its key block), with the last
///   local generation it pushed and the last server transaction it applied.
/// - `strata_sync_txn`: the log. `seq` is the server's order: assigned under an advisory lock
///   held to the commit, so transactions commit in `seq` order, without gaps; a reader that has
///   seen `seq` has seen everything before it. `(replica, local_generation)` is unique: a push
///   retried after its commit adds nothing (and a replica's `pushed_through`, updated in the same
///   transaction, keeps it out once its row is compacted away).
/// - `strata_sync_snapshot`, `strata_sync_snapshot_alias`: the state the log up to
///   `snapshot-through` (in `strata_sync_meta`) folds to, written by ``SyncEngine/compact()``,
///   which then drops those transactions; a replica behind it starts from the snapshot.
enum ServerSchema {
    static let version = 1
    /// The channel a push notifies, with the last `seq` as the payload.
    static let channel = "strata_sync"
    /// The advisory lock every push and every schema change holds to its commit.
    static let lockKey: Int64 = 0x5354_5241_5441            // "STRATA"

    /// The next `seq` (under the advisory lock): past every transaction in the log, and past the
    /// compacted part (whose transactions are gone: `max(seq)` alone would start again at 1).
    static let nextSeq = "greatest((SELECT coalesce(max(seq), 0) FROM strata_sync_txn), "
        + "(SELECT coalesce(max(value::bigint), 0) FROM strata_sync_meta WHERE key = 'snapshot-through')) + 1"

    static func prepare(_ connection: PostgresConnection, model: String, logger: Logger) async throws {
        try await run("preparing the sync schema", logger) {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS strata_sync_meta (key text PRIMARY KEY, value text NOT NULL)
                    """, logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS strata_sync_replica (
                        replica bigserial PRIMARY KEY, store_uuid text NOT NULL UNIQUE, name text,
                        enrolled_at timestamptz NOT NULL DEFAULT now(), seeded boolean NOT NULL DEFAULT false,
                        pushed_through bigint NOT NULL DEFAULT 0, pulled_through bigint NOT NULL DEFAULT 0)
                    """, logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS strata_sync_txn (
                        seq bigint PRIMARY KEY, replica bigint NOT NULL REFERENCES strata_sync_replica,
                        local_generation bigint NOT NULL, kind text NOT NULL,
                        committed_at timestamptz NOT NULL DEFAULT now(), changes json NOT NULL,
                        UNIQUE (replica, local_generation))
                    """, logger: logger)
                // The compacted part of the log: the state it folds to, at `snapshot-through`.
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS strata_sync_snapshot (entity text NOT NULL, key bigint NOT NULL, row json NOT NULL,
                        PRIMARY KEY (entity, key))
                    """, logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS strata_sync_snapshot_alias (name text PRIMARY KEY, target bigint NOT NULL)
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO strata_sync_meta (key, value) VALUES ('schema-version', \(String(version))), ('model', \(model))
                    ON CONFLICT (key) DO NOTHING
                    """, logger: logger)
                var found: [String: String] = [:]
                for try await (key, value) in try await connection.query("SELECT key, value FROM strata_sync_meta", logger: logger)
                    .decode((String, String).self) { found[key] = value }
                let schema = Int(found["schema-version"] ?? "") ?? 0
                if schema > version { throw SyncError.serverSchemaTooNew(found: schema, supported: version) }
                if let stored = found["model"], stored != model { throw SyncError.modelMismatch(server: stored, local: model) }
            }
        }
    }

    /// Runs `body`, turning PostgreSQL's errors into ``SyncError``s that say what was being done.
    static func run<T>(_ doing: String, _ logger: Logger, _ body: () async throws -> T) async throws -> T {
        let watch = ServerWatch.current
        watch?.begin()
        defer { watch?.end() }
        do {
            return try await body()
        } catch let error as SyncError {
            throw error
        } catch let error as PostgresTransactionError {
            if let inner = error.closureError as? SyncError { throw inner }
            throw describe(error.closureError ?? error.commitError ?? error.beginError ?? error, doing: doing)
        } catch {
            throw describe(error, doing: doing)
        }
    }

    static func describe(_ error: any Error, doing: String) -> SyncError {
        if let error = error as? SyncError { return error }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return .server(doing: doing, message: message)
            }
            return .serverUnavailable("\(doing): \(error.code)")
        }
        return .serverUnavailable("\(doing): \(String(reflecting: error))")
    }
}

/// How long a round has been waiting on the server (``SyncEngine/withDeadline(_:_:)`` gives up past
/// its timeout): only the time inside ``ServerSchema/run(_:_:_:)`` counts, not the round's local
/// work (a large pull folds and writes for as long as it needs), nor time the process was not
/// scheduled (``forgive(_:)``: under a cooperative pool kept busy by blocking work, an answer that
/// came in time may wait seconds for a thread, and a round failed on it would fail for nothing).
final class ServerWatch: Sendable {
    @TaskLocal static var current: ServerWatch?

    private let state = Mutex<(depth: Int, since: ContinuousClock.Instant?)>((0, nil))

    func begin() {
        state.withLock { state in
            if state.depth == 0 { state.since = .now }
            state.depth += 1
        }
    }

    func end() {
        state.withLock { state in
            state.depth -= 1
            if state.depth == 0 { state.since = nil }
        }
    }

    /// The server answered (a statement done, a row read): the wait starts again from now.
    static func progress() {
        current?.state.withLock { state in if state.depth > 0 { state.since = .now } }
    }

    /// Moves the start of the current wait `duration` later (not past now): time in which this
    /// process could not have read an answer.
    func forgive(_ duration: Duration) {
        state.withLock { state in
            guard let since = state.since else { return }
            state.since = min(since + duration, .now)
        }
    }

    /// Whether one wait on the server has lasted longer than `timeout`.
    func isOverdue(_ timeout: Duration) -> Bool {
        state.withLock { state in state.since.map { ContinuousClock.now - $0 > timeout } ?? false }
    }
}
