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
    let logger: Logger
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


    func update(_ change: (inout SyncStatus) -> Void) {
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
        try await onConnection(doing: "syncing") { connection in try await self.round(connection) }
    }

    /// `body` on a new connection, bounded by ``withDeadline(_:_:)``, with the store's sync lock
    /// held; the connection closed after. A failure, as a ``SyncError``, goes into
    /// ``SyncStatus/lastError`` too.
    func onConnection<T: Sendable>(doing: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let lock = try await SyncFileLock.acquire(path: storePathForLock)
        defer { lock.release() }
        do {
            let connection = try await server.connect(logger: logger)
            defer { Task { try? await connection.close() } }
            return try await withDeadline(connection) { try await body(connection) }
        } catch {
            let failure = error as? SyncError ?? ServerSchema.describe(error, doing: doing)
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

    func local<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SyncError { throw error } catch { throw SyncError.local(String(describing: error)) }
    }

    func history(after generation: Int64, limit: Int?) throws -> [HistoryTransaction] {
        do {
            let token = generation > 0 ? HistoryToken(store: coordinator.storeUUID, generation: generation) : nil
            return try coordinator.history(after: token, limit: limit, includingRowValues: true)
        } catch HistoryError.expired {
            throw SyncError.historyExpired(pushedThrough: generation)
        } catch {
            throw SyncError.local(String(describing: error))
        }
    }

    func hasUnpushed(after generation: Int64) throws -> Bool {
        let pushed = Int64(try local { try coordinator.syncState() }[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
        guard pushed < generation else { return false }
        return try history(after: pushed, limit: nil).contains { $0.author != SyncEngine.transactionAuthor && $0.kind != .migration }
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
