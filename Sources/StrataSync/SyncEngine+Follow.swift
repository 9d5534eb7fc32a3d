internal import Foundation
@_spi(StrataSync) internal import Strata
internal import PostgresNIO
internal import Logging

extension SyncEngine {
    /// Keeps the store and the server in step until the calling task is cancelled: a round at
    /// once, then one whenever another replica pushes (PostgreSQL's `LISTEN/NOTIFY`, no polling of
    /// the server) or a local commit lands (the store's generation, looked at every
    /// `pollInterval`). When the server is down or the connection breaks, the error goes into
    /// ``SyncStatus/lastError`` and the engine connects again (after 0.1 s, doubling to 5 s);
    /// nothing is lost meanwhile: local commits wait in the history.
    ///
    /// - Throws: the errors no retry can mend (``SyncError/modelMismatch(server:local:)``,
    ///   ``SyncError/unsupportedModel(_:)``, ``SyncError/historyExpired(pushedThrough:)``,
    ///   ``SyncError/replicaUnknown(replica:store:)``, ``SyncError/seedConflict``,
    ///   ``SyncError/serverSchemaTooNew(found:supported:)``, ``SyncError/undecodableTransaction(seq:reason:)``);
    ///   returns when the task is cancelled.
    public func follow(pollInterval: Duration = .milliseconds(50)) async throws {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await followOnce(pollInterval: pollInterval)
                delay = .milliseconds(100)
            } catch let error as SyncError where !error.isPermanent {
                recordFailure(error)
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            } catch is CancellationError {
                return
            }
        }
    }

    private func recordFailure(_ error: SyncError) {
        update { $0.lastError = error }
    }

    /// One connection's life: listen, sync, then sync on every wake-up until something fails.
    private func followOnce(pollInterval: Duration) async throws {
        let listener = try await server.connect(logger: logger)
        let worker: PostgresConnection
        do { worker = try await server.connect(logger: logger) } catch {
            try? await listener.close()
            throw error
        }
        defer {
            Task {
                try? await listener.close()
                try? await worker.close()
            }
        }
        let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The server's news.
            group.addTask {
                do {
                    try await listener.listen(on: ServerSchema.channel) { notifications in
                        wake.yield()                                // listening now: catch up once
                        for try await notification in notifications {
                            if let seq = Int64(notification.payload) { self.update { $0.serverSeq = max($0.serverSeq, seq) } }
                            wake.yield()
                        }
                    }
                } catch {
                    throw ServerSchema.describe(error, doing: "listening for other replicas' pushes")
                }
                throw SyncError.serverUnavailable("the server ended the notifications")
            }
            // Local commits, and a round when none ran for 5 s (a connection that died without a
            // word is found out by that round's deadline). A round's own commit (the pulled
            // transactions it applied) is not news: while a round runs nothing is looked at, and
            // the generation it ended at counts as seen.
            group.addTask {
                var quiet = Duration.zero
                var seen = (try? self.coordinator.currentGeneration()) ?? 0
                var rounds = self.roundProgress.rounds
                while !Task.isCancelled {
                    try await Task.sleep(for: pollInterval)
                    quiet += pollInterval
                    let progress = self.roundProgress
                    if progress.inFlight { continue }
                    if progress.rounds != rounds { rounds = progress.rounds; quiet = .zero }
                    seen = max(seen, progress.settled)
                    // A generation that can't be read wakes a round too: the round reads it again,
                    // and its error goes into the status (not taken for "nothing changed").
                    let now: Int64? = try? self.coordinator.currentGeneration()
                    if now != seen || quiet >= .seconds(5) {
                        seen = now ?? seen
                        quiet = .zero
                        wake.yield()
                    }
                }
            }
            // The rounds, each holding the store's sync lock only while it runs: a `sync()` or
            // `compact()` on the same store (this engine, another one, another process) waits for
            // the round in progress, not for the follower to end.
            group.addTask {
                for await _ in wakeUps {
                    do {
                        let lock = try await SyncFileLock.acquire(path: self.storePathForLock)
                        defer { lock.release() }
                        _ = try await self.withDeadline(worker) { try await self.round(worker) }
                    } catch {
                        throw error as? SyncError ?? ServerSchema.describe(error, doing: "syncing")
                    }
                }
            }
            defer { wake.finish() }
            try await group.next()
            group.cancelAll()
        }
    }
}

extension SyncError {
    /// Whether retrying can't mend it.
    var isPermanent: Bool {
        switch self {
        case .serverUnavailable, .server, .local, .alreadySyncing: false
        case .modelMismatch, .serverSchemaTooNew, .unsupportedModel, .historyNotKept, .historyExpired, .replicaUnknown,
             .seedConflict, .undecodableTransaction: true
        }
    }
}

/// An exclusive `flock` on a file beside the store: one round at a time per store, in this
/// process or another (a lock ends with its process, even a killed one).
final class SyncFileLock {
    /// How long ``acquire(path:)`` waits for a round in progress elsewhere.
    static let patience = Duration.seconds(60)

    private var descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    /// Takes the lock, waiting (without blocking a thread) while another round holds it: up to
    /// ``patience``, then ``SyncError/alreadySyncing(path:)``. Cancelling the task stops the wait.
    static func acquire(path: String) async throws -> SyncFileLock {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SyncError.local("can't open \(path): \(String(cString: strerror(errno)))") }
        let lock = SyncFileLock(descriptor: descriptor)
        let deadline = ContinuousClock.now + patience
        var pause = Duration.milliseconds(1)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline else { throw SyncError.alreadySyncing(path: path) }
            try await Task.sleep(for: pause)                   // the lock's deinit closes on a throw
            pause = min(pause * 2, .milliseconds(20))
        }
        return lock
    }

    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
