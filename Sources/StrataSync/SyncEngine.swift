public import Foundation
@_spi(StrataSync) public import Strata
internal import PostgresNIO
public import Logging
internal import Synchronization

/// Where a replica stands (``SyncEngine/status``).
public struct SyncStatus: Sendable, Equatable {
    /// This replica's number on the server (its key block), once enrolled.
    public var replica: Int64?
    /// The last local generation pushed (every local commit up to it is on the server).
    public var pushedThrough: Int64 = 0
    /// The last server transaction applied here.
    public var pulledThrough: Int64 = 0
    /// Local transactions not yet pushed, as of the last look.
    public var pending: Int = 0
    /// The newest server transaction this engine has heard of.
    public var serverSeq: Int64 = 0
    /// Since the engine was made: transactions pushed and pulled, rounds completed.
    public var pushedTransactions = 0
    public var pulledTransactions = 0
    public var rounds = 0
    /// Times an apply found that a local commit had landed after the push, and pushed again first.
    public var storeMovedRetries = 0
    public var lastSync: Date?
    /// The last error a round met (``SyncEngine/follow(pollInterval:)`` retries), `nil` after a round succeeds.
    public var lastError: SyncError?

    public init() {}
}

/// What one round did.
public struct SyncReport: Sendable, Equatable {
    public var pushed = 0
    public var pulled = 0
    /// Pulled transactions this replica had pushed itself (already applied).
    public var pulledOwn = 0
    public var inserted = 0, updated = 0, deleted = 0
    /// Rows merged into the row that held their unique key first.
    public var merged = 0
    /// Times the apply found a local commit had landed meanwhile, and pushed again first.
    public var storeMovedRetries = 0
    /// Whether this replica was behind the server's compacted log and started from its snapshot.
    public var bootstrapped = false
}

/// Syncs one store with a PostgreSQL database that other replicas of it sync with too.
///
/// ```swift
/// let engine = try SyncEngine(coordinator: container.coordinator, server: SyncServer(url: "postgresql://app@db.example/app"))
/// try await engine.sync()          // push, then pull, once
/// try await engine.follow()        // or: keep both up to date until the task is cancelled
/// ```
///
/// A round pushes every local commit not yet pushed (read from the store's history, with its
/// values), then applies what other replicas pushed, in the server's order, as one save of a
/// root context: results controllers report exact change sets. See <doc:SyncingWithPostgreSQL>.
public final class SyncEngine: Sendable {
    public let coordinator: StoreCoordinator
    public let server: SyncServer
    public let name: String?
    /// How long one wait on the server may last before the round gives up (the connection is
    /// closed and the round fails with ``SyncError/serverUnavailable(_:)``): a server that stops
    /// answering never leaves a round waiting for good. The round's local work does not count.
    public let timeout: Duration
    private let logger: Logger
    private let storePath: String
    private let state = Mutex(EngineState())

    private struct EngineState {
        var status = SyncStatus()
        var preparedSchema = false
        var installedCapture = false
        /// The store's generation when the last round ended: every commit up to it was pushed and
        /// every pulled transaction applied (``follow(pollInterval:)`` wakes only for commits after it).
        var settledGeneration: Int64 = 0
        /// Whether a round is running now (its own commits are not news to the follower).
        var roundInFlight = false
        var watchers: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    }

    /// History author of the commits that apply pulled transactions: never pushed back.
    public static let transactionAuthor = SyncApply.author
    static let replicaKey = "replica", pulledKey = "pulled-through", seedKey = "seed-pending"
    static let pageSize = 256

    /// - Throws: ``SyncError/unsupportedModel(_:)``, ``SyncError/historyNotKept``.
    public init(coordinator: StoreCoordinator, server: SyncServer, name: String? = nil, timeout: Duration = .seconds(30),
                logger: Logger? = nil) throws {
        guard let url = coordinator.url else { throw SyncError.local("an in-memory store can't be synced") }
        guard coordinator.keepsHistory else { throw SyncError.historyNotKept }
        try SyncEngine.checkModel(coordinator.model)
        self.coordinator = coordinator
        self.server = server
        self.name = name
        self.timeout = timeout
        self.storePath = url.path
        var logger = logger ?? Logger(label: "strata.sync")
        if logger.logLevel < .warning, ProcessInfo.processInfo.environment["STRATA_SYNC_DEBUG"] == nil { logger.logLevel = .warning }
        self.logger = logger
        let local = (try? coordinator.syncState()) ?? [:]
        state.withLock {
            $0.status.replica = local[SyncEngine.replicaKey].flatMap(Int64.init)
            $0.status.pushedThrough = local[StoreCoordinator.pushedThroughKey].flatMap(Int64.init) ?? 0
            $0.status.pulledThrough = local[SyncEngine.pulledKey].flatMap(Int64.init) ?? 0
        }
    }

    static func checkModel(_ model: Model) throws {
        for entity in model.entities {
            for relationship in entity.relationships {
                if relationship.deleteRule == .deny || relationship.deleteRule == .noAction {
                    throw SyncError.unsupportedModel("\(entity.name).\(relationship.name) has delete rule \(relationship.deleteRule.rawValue) (sync supports nullify and cascade)")
                }
                if relationship.isToMany {
                    let inverse = relationship.inverse.flatMap { name in
                        model.entities.first { $0.name == relationship.destination }?.relationships.first { $0.name == name }
                    }
                    if inverse == nil || inverse!.isToMany {
                        throw SyncError.unsupportedModel("\(entity.name).\(relationship.name) is a many-to-many relationship (sync supports to-ones and their inverse to-manys)")
                    }
                }
            }
        }
    }

    // MARK: Status

    public var status: SyncStatus { state.withLock { $0.status } }

    /// Every status change from now on, starting with the current status.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        let current = state.withLock { state in
            state.watchers[id] = continuation
            return state.status
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) } }
        return stream
    }

    var storePathForLock: String { storePath + ".sync-lock" }
    /// Whether a round runs now, and the generation the last one ended at (for the follower).
    var roundProgress: (inFlight: Bool, settled: Int64, rounds: Int) {
        state.withLock { ($0.roundInFlight, $0.settledGeneration, $0.status.rounds) }
    }
    var syncLogger: Logger { logger }

    func updateStatus(_ change: (inout SyncStatus) -> Void) { update(change) }

    private func update(_ change: (inout SyncStatus) -> Void) {
        let (status, watchers) = state.withLock { state in
            change(&state.status)
            return (state.status, Array(state.watchers.values))
        }
        for watcher in watchers { watcher.yield(status) }
    }

    /// Local transactions not pushed yet (read from the history now).
    public func pendingTransactions() throws -> Int {
        let pushed = Int64(try coordinator.syncState()[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
        return try history(after: pushed, limit: nil).filter { $0.author != SyncEngine.transactionAuthor && $0.kind != .migration }.count
    }

    // MARK: A round

    /// Pushes every local commit not yet pushed, then applies every server transaction not yet
    /// applied. Enrols the store first if it never synced with this database.
    /// - Throws: ``SyncError``.
    @discardableResult
    public func sync() async throws -> SyncReport {
        let lock = try await SyncFileLock.acquire(path: storePathForLock)
        defer { lock.release() }
        do {
            let connection = try await server.connect(logger: logger)
            defer { Task { try? await connection.close() } }
            return try await withDeadline(connection) { try await self.round(connection) }
        } catch {
            let failure = error as? SyncError ?? ServerSchema.describe(error, doing: "syncing")
            update { $0.lastError = failure }
            throw failure
        }
    }

    /// Runs `body` (a round on `connection`), closing the connection when one wait on the server
    /// lasts longer than ``timeout`` (the round's local work does not count, nor time this process
    /// was not scheduled): the queries waiting on it fail, and so does the round. The caller is answered then even if `body` ignores the
    /// closing (it ends on its own, later).
    func withDeadline<T: Sendable>(_ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeout = self.timeout
        let answer = AnswerOnce<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                answer.set(continuation)
                let watch = ServerWatch()
                let work = Task { await ServerWatch.$current.withValue(watch) { answer.resume(with: await Result(catching: body)) } }
                Task {
                    let tick = min(timeout / 4, .seconds(1))
                    var last = ContinuousClock.now
                    while !answer.isAnswered {
                        try? await Task.sleep(for: tick)
                        // Woken late: this process was not scheduled for a while (every thread of
                        // the cooperative pool busy with blocking work, or the process stopped).
                        // The server's answer may be waiting for a thread just as this check did:
                        // that time is not the server's.
                        let now = ContinuousClock.now
                        let late = now - last - tick
                        last = now
                        if late > tick { watch.forgive(late) }
                        guard watch.isOverdue(timeout) else { continue }
                        guard answer.resume(with: .failure(SyncError.serverUnavailable("no answer from the server in \(timeout)"))) else { return }
                        work.cancel()
                        try? await connection.close()
                        return
                    }
                }
            }
        } onCancel: {
            answer.resume(with: .failure(CancellationError()))
            Task { try? await connection.close() }
        }
    }

    func round(_ connection: PostgresConnection) async throws -> SyncReport {
        state.withLock { $0.roundInFlight = true }
        defer { state.withLock { $0.roundInFlight = false } }
        if !state.withLock({ $0.preparedSchema }) {
            try await ServerSchema.prepare(connection, model: coordinator.model.versionIdentifier, logger: logger)
            state.withLock { $0.preparedSchema = true }
        }
        let replica = try await enrol(connection)
        if !state.withLock({ $0.installedCapture }) {
            try local { try coordinator.installSyncCapture() }
            state.withLock { $0.installedCapture = true }
        }
        var report = SyncReport()
        var settled: Int64 = 0
        while true {
            report.pushed += try await push(connection, replica: replica)
            let generation = try local { try self.coordinator.currentGeneration() }
            // Another local commit after the push: push it first (nothing local may be unpushed
            // while pulled values are applied).
            if try hasUnpushed(after: generation) { continue }
            let pulled = try await pull(connection, replica: replica, generation: generation, report: &report)
            if pulled == nil { report.storeMovedRetries += 1; continue }
            if pulled == 0 { settled = generation; break }
        }
        state.withLock { $0.settledGeneration = max($0.settledGeneration, settled) }
        let pending = (try? pendingTransactions()) ?? 0
        update {
            $0.rounds += 1
            $0.storeMovedRetries += report.storeMovedRetries
            $0.lastSync = Date()
            $0.lastError = nil
            $0.pending = pending
        }
        return report
    }

    private func local<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SyncError { throw error } catch { throw SyncError.local(String(describing: error)) }
    }

    private func history(after generation: Int64, limit: Int?) throws -> [HistoryTransaction] {
        do {
            let token = generation > 0 ? HistoryToken(store: coordinator.storeUUID, generation: generation) : nil
            return try coordinator.history(after: token, limit: limit, includingRowValues: true)
        } catch HistoryError.expired {
            throw SyncError.historyExpired(pushedThrough: generation)
        } catch {
            throw SyncError.local(String(describing: error))
        }
    }

    private func hasUnpushed(after generation: Int64) throws -> Bool {
        let pushed = Int64(try local { try coordinator.syncState() }[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
        guard pushed < generation else { return false }
        return try history(after: pushed, limit: nil).contains { $0.author != SyncEngine.transactionAuthor && $0.kind != .migration }
    }

    // MARK: Enrolling

    /// The replica's number: registered with the server on the first round (the store's keys
    /// move to its block, and a store that had rows pushes them once, as a `seed` transaction).
    private func enrol(_ connection: PostgresConnection) async throws -> Int64 {
        var local = try self.local { try coordinator.syncState() }
        let uuid = coordinator.storeUUID.uuidString
        if let known = local[SyncEngine.replicaKey].flatMap(Int64.init) {
            let rows = try await ServerSchema.run("looking up this replica", logger) {
                try await connection.query("SELECT replica, pushed_through FROM strata_sync_replica WHERE replica = \(known) AND store_uuid = \(uuid)", logger: logger)
                    .collect()
            }
            guard let row = rows.first else { throw SyncError.replicaUnknown(replica: known, store: coordinator.storeUUID) }
            // A push the server committed before this process could note it (killed between).
            let serverPushed = try row.decode((Int64, Int64).self).1
            let pushed = Int64(local[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
            if serverPushed > pushed { try self.local { try coordinator.writeSyncState([StoreCoordinator.pushedThroughKey: String(serverPushed)]) } }
            if local[SyncEngine.seedKey] == "1" { try await pushSeed(connection, replica: known) }
            update { $0.replica = known; $0.pushedThrough = max(serverPushed, pushed) }
            return known
        }
        // Register (or find this store's registration from a run killed before it noted it).
        let replica: Int64 = try await ServerSchema.run("registering this replica", logger) {
            let rows = try await connection.query("""
                INSERT INTO strata_sync_replica (store_uuid, name) VALUES (\(uuid), \(name ?? ProcessInfo.processInfo.hostName))
                ON CONFLICT (store_uuid) DO UPDATE SET name = EXCLUDED.name RETURNING replica
                """, logger: logger).collect()
            return try rows[0].decode(Int64.self)
        }
        SyncKillPoint.hit("enrol.registered")
        try self.local {
            try coordinator.installSyncCapture()
            try coordinator.moveKeys(toBlock: replica)
        }
        let snapshot = try self.local { try coordinator.snapshotRows() }
        local = [SyncEngine.replicaKey: String(replica), StoreCoordinator.pushedThroughKey: String(snapshot.generation),
                 SyncEngine.pulledKey: "0", SyncEngine.seedKey: snapshot.rows.isEmpty ? "0" : "1"]
        try self.local { try coordinator.writeSyncState(local) }
        if !snapshot.rows.isEmpty { try await pushSeed(connection, replica: replica) }
        update { $0.replica = replica; $0.pushedThrough = snapshot.generation }
        return replica
    }

    /// The rows the store had when sync was switched on, as one transaction (local generation 0).
    private func pushSeed(_ connection: PostgresConnection, replica: Int64) async throws {
        let snapshot = try local { try coordinator.snapshotRows() }
        let changes = snapshot.rows.map { id, row in
            SyncChange(kind: .insert, entity: id.entityName, key: id.primaryKey, attributes: row.attributes, toOnes: row.toOnes.mapValues { $0?.primaryKey })
        }
        let json = try SyncJSON.encode(changes)
        try await ServerSchema.run("pushing this store's rows", logger) {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                let seeded = try await connection.query("SELECT count(*) FROM strata_sync_replica WHERE seeded AND replica <> \(replica)", logger: logger)
                    .collect()[0].decode(Int64.self)
                if seeded > 0 { throw SyncError.seedConflict }
                try await connection.query("""
                    INSERT INTO strata_sync_txn (seq, replica, local_generation, kind, changes)
                    VALUES ((SELECT \(unescaped: ServerSchema.nextSeq)), \(replica), 0, 'seed', \(json)::json)
                    ON CONFLICT (replica, local_generation) DO NOTHING
                    """, logger: logger)
                try await connection.query("UPDATE strata_sync_replica SET seeded = true WHERE replica = \(replica)", logger: logger)
                try await connection.query("SELECT pg_notify(\(ServerSchema.channel), (SELECT max(seq)::text FROM strata_sync_txn))", logger: logger)
            }
        }
        try local { try coordinator.writeSyncState([SyncEngine.seedKey: "0"]) }
    }

    // MARK: Push

    /// Pushes local transactions after the last pushed, a page per server transaction; returns
    /// how many were pushed. Idempotent: a page the server committed before a kill is not added
    /// again (`(replica, local_generation)` is unique).
    private func push(_ connection: PostgresConnection, replica: Int64) async throws -> Int {
        var pushedCount = 0
        var pushed = Int64(try local { try coordinator.syncState() }[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
        while true {
            let page = try history(after: pushed, limit: SyncEngine.pageSize)
            guard let last = page.last?.token.generation else { break }
            let outgoing: [(Int64, String, String)] = try page.compactMap { transaction in
                guard transaction.author != SyncEngine.transactionAuthor, transaction.kind != .migration else { return nil }
                let changes = transaction.changes.compactMap(SyncChange.init)
                guard !changes.isEmpty else { return nil }
                return (transaction.token.generation, transaction.kind.rawValue, try SyncJSON.encode(changes))
            }
            if !outgoing.isEmpty {
                try await ServerSchema.run("pushing local transactions", logger) {
                    try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                        // Already on the server (a push killed after its commit): kept out even
                        // when its transaction was compacted away.
                        let known = try await connection.query("SELECT pushed_through FROM strata_sync_replica WHERE replica = \(replica)", logger: logger)
                            .collect().first?.decode(Int64.self) ?? 0
                        for (generation, kind, json) in outgoing where generation > known {
                            try await connection.query("""
                                INSERT INTO strata_sync_txn (seq, replica, local_generation, kind, changes)
                                VALUES ((SELECT \(unescaped: ServerSchema.nextSeq)), \(replica), \(generation), \(kind), \(json)::json)
                                ON CONFLICT (replica, local_generation) DO NOTHING
                                """, logger: logger)
                            ServerWatch.progress()
                        }
                        try await connection.query("""
                            UPDATE strata_sync_replica SET pushed_through = greatest(pushed_through, \(last)) WHERE replica = \(replica)
                            """, logger: logger)
                        try await connection.query("SELECT pg_notify(\(ServerSchema.channel), (SELECT max(seq)::text FROM strata_sync_txn))", logger: logger)
                        SyncKillPoint.hit("push.sent")
                    }
                }
                SyncKillPoint.hit("push.committed")
                pushedCount += outgoing.count
            }
            try local { try coordinator.writeSyncState([StoreCoordinator.pushedThroughKey: String(last)]) }
            pushed = last
            let count = outgoing.count
            update { $0.pushedThrough = last; $0.pushedTransactions += count }
        }
        return pushedCount
    }

    // MARK: Pull

    /// Applies every server transaction after the pulled position: folded onto the base (the
    /// server's state at that position, see ``SyncFold``) and the rows that changed written into
    /// the store in one save, with the new position. Returns how many it read (0: up to date),
    /// or `nil` when a local commit landed meanwhile (nothing was applied: push again first).
    private func pull(_ connection: PostgresConnection, replica: Int64, generation: Int64, report: inout SyncReport) async throws -> Int? {
        let local = try self.local { try coordinator.syncState() }
        let pulled = Int64(local[SyncEngine.pulledKey] ?? "") ?? 0
        let log = try await readLog(connection, after: pulled)
        let transactions = log.transactions
        SyncKillPoint.hit("pull.read")
        guard let last = transactions.last?.seq ?? (log.snapshot != nil ? log.snapshotThrough : nil) else { return 0 }
        var aliases: [String: Int64] = [:]
        for (key, value) in local where key.hasPrefix("alias:") { aliases[key] = Int64(value) }
        let model = coordinator.model
        let folded: (overlay: [ObjectID: FoldRow?], aliases: [String: Int64], merged: Int)
        if let snapshot = log.snapshot {
            // Behind the compacted log: the snapshot is the base, every local row is compared.
            var fold = SyncFold(model: model, base: SnapshotBase(rows: snapshot.rows), aliases: snapshot.aliases)
            for transaction in transactions { try fold.apply(transaction) }
            var rows: [ObjectID: FoldRow?] = snapshot.rows.mapValues { .some($0) }
            for (id, row) in fold.overlay { rows[id] = .some(row) }
            for (id, _) in try self.local({ try coordinator.snapshotRows() }).rows where rows[id] == nil { rows[id] = .some(nil) }
            folded = (rows, snapshot.aliases.merging(fold.newAliases) { $1 }, fold.merged)
        } else {
            folded = try self.local {
                try coordinator.withSyncBase { base in
                    var fold = SyncFold(model: model, base: LocalBase(base: base), aliases: aliases)
                    for transaction in transactions { try fold.apply(transaction) }
                    return (try fold.rowsToWrite(changedSinceApply: base.changedSinceApply()), fold.newAliases, fold.merged)
                }
            }
        }
        let context = coordinator.newContext(name: "strata.sync")
        context.transactionAuthor = SyncEngine.transactionAuthor
        let outcome: (SyncApply.Counts, committed: Bool) = try context.performAndWait {
            let counts: SyncApply.Counts
            do {
                counts = try SyncApply.write(folded.overlay, into: context, model: model)
            } catch let error as SyncError {
                throw error
            } catch {
                throw SyncError.local("applying server transactions up to \(last): \(error)")
            }
            var bookkeeping = [SyncEngine.pulledKey: String(last)]
            for (key, value) in folded.aliases { bookkeeping[key] = String(value) }
            SyncKillPoint.hit("apply.built")
            context.syncStateForNextCommit = bookkeeping
            context.requiredGenerationForNextCommit = generation
            do {
                if context.hasChanges, try context.save() != nil { return (counts, true) }
                try coordinator.writeSyncState(bookkeeping, requiringGeneration: generation, clearingCapture: true)
                return (counts, true)
            } catch is StoreMovedError {
                context.rollback()
                return (counts, false)
            } catch {
                context.rollback()
                throw SyncError.local("saving server transactions up to \(last): \(error)")
            }
        }
        guard outcome.committed else { return nil }
        SyncKillPoint.hit("apply.committed")
        report.pulled += transactions.count
        report.pulledOwn += transactions.filter { $0.replica == replica }.count
        report.inserted += outcome.0.inserted
        report.updated += outcome.0.updated
        report.deleted += outcome.0.deleted
        report.merged += folded.merged
        let count = max(transactions.count, 1)
        if log.snapshot != nil { report.bootstrapped = true }
        update {
            $0.pulledThrough = last
            $0.pulledTransactions += count
            $0.serverSeq = max($0.serverSeq, last)
        }
        return count
    }

    struct Snapshot {
        var rows: [ObjectID: FoldRow]
        var aliases: [String: Int64]
    }

    /// The log after `after`, read in one repeatable-read transaction: when `after` is behind the
    /// compacted part, the snapshot and the transactions after it.
    func readLog(_ connection: PostgresConnection, after: Int64) async throws -> (transactions: [SyncTransaction], snapshot: Snapshot?, snapshotThrough: Int64) {
        try await ServerSchema.run("reading the server's log", logger) {
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                let through = try await connection.query("""
                    SELECT coalesce((SELECT value::bigint FROM strata_sync_meta WHERE key = 'snapshot-through'), 0)
                    """, logger: logger).collect().first?.decode(Int64.self) ?? 0
                var snapshot: Snapshot?
                var from = after
                if after < through {
                    var rows: [ObjectID: FoldRow] = [:]
                    for try await json in try await connection.query("SELECT row::text FROM strata_sync_snapshot", logger: logger).decode(String.self) {
                        for change in try SyncJSON.decode("[\(json)]", seq: through) {
                            rows[ObjectID(entityName: change.entity, primaryKey: change.key)] = FoldRow(attributes: change.attributes, toOnes: change.toOnes)
                        }
                    }
                    var aliases: [String: Int64] = [:]
                    for try await (name, target) in try await connection.query("SELECT name, target FROM strata_sync_snapshot_alias", logger: logger)
                        .decode((String, Int64).self) { aliases[name] = target }
                    snapshot = Snapshot(rows: rows, aliases: aliases)
                    from = through
                }
                var transactions: [SyncTransaction] = []
                while true {
                    let page = try await readTransactions(connection, after: transactions.last?.seq ?? from, limit: SyncEngine.pageSize, replica: nil)
                    transactions += page
                    if page.count < SyncEngine.pageSize { break }
                }
                try await connection.query("COMMIT", logger: logger)
                return (transactions, snapshot, through)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    // MARK: Compaction

    /// Folds the server's log up to this replica's position into a snapshot on the server and
    /// drops those transactions (after a round, so that the position is the server's last
    /// transaction). A replica behind the snapshot then starts from it, and the transactions
    /// after it. Returns the snapshot's position.
    @discardableResult
    public func compact() async throws -> Int64 {
        let lock = try await SyncFileLock.acquire(path: storePathForLock)
        defer { lock.release() }
        do {
            let connection = try await server.connect(logger: logger)
            defer { Task { try? await connection.close() } }
            return try await withDeadline(connection) {
                _ = try await self.round(connection)
                return try await self.writeSnapshot(connection)
            }
        } catch {
            let failure = error as? SyncError ?? ServerSchema.describe(error, doing: "compacting")
            update { $0.lastError = failure }
            throw failure
        }
    }

    private func writeSnapshot(_ connection: PostgresConnection) async throws -> Int64 {
        let (through, rows, aliases): (Int64, [(ObjectID, HistoryRow)], [(String, Int64)]) = try local {
            try coordinator.withSyncBase { base in
                let state = try coordinator.syncState()
                let aliases = state.compactMap { key, value in key.hasPrefix("alias:") ? Int64(value).map { (key, $0) } : nil }
                return (Int64(state[SyncEngine.pulledKey] ?? "") ?? 0, try base.allRows(), aliases)
            }
        }
        let encoded = try rows.map { id, row in
            (id.entityName, id.primaryKey, String(try SyncJSON.encode([SyncChange(kind: .insert, entity: id.entityName, key: id.primaryKey,
                                                                                  attributes: row.attributes, toOnes: row.toOnes.mapValues { $0?.primaryKey })]).dropFirst().dropLast()))
        }
        return try await ServerSchema.run("writing the snapshot", logger) {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                let current = try await connection.query("""
                    SELECT coalesce((SELECT value::bigint FROM strata_sync_meta WHERE key = 'snapshot-through'), 0)
                    """, logger: logger).collect().first?.decode(Int64.self) ?? 0
                guard through > current else { return current }
                try await connection.query("DELETE FROM strata_sync_snapshot", logger: logger)
                try await connection.query("DELETE FROM strata_sync_snapshot_alias", logger: logger)
                for chunk in stride(from: 0, to: encoded.count, by: 500) {
                    let rows = encoded[chunk..<min(chunk + 500, encoded.count)]
                    var bindings = PostgresBindings()
                    var values: [String] = []
                    for (index, (entity, key, json)) in rows.enumerated() {
                        bindings.append(entity)
                        bindings.append(key)
                        bindings.append(json)
                        values.append("($\(3 * index + 1), $\(3 * index + 2), $\(3 * index + 3)::json)")
                    }
                    try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO strata_sync_snapshot (entity, key, row) VALUES " + values.joined(separator: ", "),
                                                              binds: bindings), logger: logger)
                    ServerWatch.progress()
                }
                for (name, target) in aliases {
                    try await connection.query("INSERT INTO strata_sync_snapshot_alias (name, target) VALUES (\(name), \(target))", logger: logger)
                }
                try await connection.query("""
                    INSERT INTO strata_sync_meta (key, value) VALUES ('snapshot-through', \(String(through)))
                    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                    """, logger: logger)
                try await connection.query("DELETE FROM strata_sync_txn WHERE seq <= \(through)", logger: logger)
                return through
            }
        }
    }

    /// Server transactions after `after` (all replicas', or one replica's), in the server's order.
    func readTransactions(_ connection: PostgresConnection, after: Int64, limit: Int?, replica: Int64?) async throws -> [SyncTransaction] {
        try await ServerSchema.run("reading the server's log", logger) {
            let rows: PostgresRowSequence
            switch (replica, limit) {
            case let (replica?, _):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE replica = \(replica) AND seq > \(after) ORDER BY seq
                    """, logger: logger)
            case let (nil, limit?):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE seq > \(after) ORDER BY seq LIMIT \(limit)
                    """, logger: logger)
            case (nil, nil):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE seq > \(after) ORDER BY seq
                    """, logger: logger)
            }
            var result: [SyncTransaction] = []
            for try await (seq, replica, generation, kind, json) in rows.decode((Int64, Int64, Int64, String, String).self) {
                result.append(SyncTransaction(seq: seq, replica: replica, localGeneration: generation, kind: kind,
                                              changes: try SyncJSON.decode(json, seq: seq)))
                ServerWatch.progress()
            }
            return result
        }
    }
}

/// A continuation resumed once, by whichever of several tasks answers first.
final class AnswerOnce<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, early: Result<T, any Error>?, done: Bool)>((nil, nil, false))

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let early = state.early {
                state.early = nil
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    var isAnswered: Bool { state.withLock { $0.done } }

    /// Resumes the continuation with `result` unless an answer came first; `true` if this was it.
    @discardableResult
    func resume(with result: Result<T, any Error>) -> Bool {
        let continuation: CheckedContinuation<T, any Error>?? = state.withLock { state in
            guard !state.done else { return .none }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return .some(nil)
            }
            state.continuation = nil
            return .some(continuation)
        }
        guard case .some(let waiting) = continuation else { return false }
        waiting?.resume(with: result)
        return true
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
