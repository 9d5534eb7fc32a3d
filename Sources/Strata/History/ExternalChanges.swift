internal import Foundation
internal import StrataSQLite

/// What a coordinator knows of other connections' commits (another process, another
/// coordinator on the same file: *external changes*), and what follows them. Owned by the
/// coordinator, always present: ``StoreCoordinator/processExternalChanges()`` uses it whether or
/// not the coordinator follows (``HistoryOptions/followsOtherConnections``).
///
/// - `state`: the generation caught up with, the entities', the nonce, the statistics (its own lock).
/// - `lock`: one catch-up at a time; the store's replacement takes it too. Taken before the
///   writer's lock, never inside it.
/// - `reader`: the catch-ups' own connection, opened at the first one, used under `lock` only.
/// - `follower`: the file watch and poll timer that schedule catch-ups; `nil` when not following.
// @unchecked Sendable because `reader`, the one mutable stored property, is touched only under
// `lock`; the others are locks of their own.
final class ExternalChanges: @unchecked Sendable {
    let state = Locked(FollowState())
    let lock = NSLock()
    var reader: Connection?
    let follower = Locked<ExternalChangeFollower?>(nil)

    /// Stops following for good: the watch and timer first, then (once a catch-up under way has
    /// finished) the state and the reader. No catch-up reads after it.
    func stop() {
        follower.withLock { $0 }?.stop()
        lock.withLock {
            state.withLock { $0.stopped = true }
            reader?.close()
            reader = nil
        }
    }
}

/// What following other connections did since the coordinator opened.
public struct ExternalChangeStatistics: Sendable, Equatable {
    /// The last generation this coordinator has caught up with (its own commits included).
    public var generation: Int64 = 0
    /// Other connections' transactions merged from the history, and their rows.
    public var transactionsMerged = 0
    public var rowsMerged = 0
    /// Times the history did not reach back to the last generation seen (pruned, written
    /// without history, a migration): the contexts were told which entities
    /// changed and results controllers re-ran their requests.
    public var reruns = 0
    /// Catch-ups that failed to read the store (busy, an I/O error, a corrupt page); each left
    /// the contexts as they were, and the next notice or poll tried again.
    public var failedCatchUps = 0
    /// Catch-ups whose history held a record this build can't read (a newer Strata wrote it,
    /// or it is damaged): the contexts were told which entities changed instead (a re-run, also
    /// counted in ``reruns``), and following went on past it. The last such record's reason is
    /// in ``lastUndecodableRecord``.
    public var undecodableCatchUps = 0
    public var lastUndecodableRecord: String?
    /// Times the store turned out to be another store under the same path: replaced (another
    /// UUID), an older copy restored (a lower generation, or the same generation reached by other
    /// commits), or rebuilt by another process's migration. Every context dropped its objects and
    /// posted ``ContextEvent/reload(_:)`` with ``ReloadReason/storeReplaced``.
    public var replacements = 0
    /// Set when another process migrated the store to another model: following stopped, and
    /// every read and write of this coordinator throws ``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)``
    /// (nothing is read with the wrong model). Reopen the store with its new model.
    public var modelChangedElsewhere = false
    /// Times the file change watch (inotify) failed under this coordinator's follower: it then
    /// polls at ``HistoryOptions/pollInterval`` instead, so commits still arrive, later. (The
    /// watch is the process's: its failure is logged once, as a warning on `strata.change-watch`.)
    public var changeWatchFailures = 0
}

/// The follower's state: the generation caught up with and, for a re-run, the entities'.
struct FollowState {
    /// Set by ``StoreCoordinator/close()``: the follower reads nothing more.
    var stopped = false
    /// A test's pause (``StoreCoordinator/setFollowingPaused(_:)``).
    var paused = false
    var generation: Int64 = 0
    var entityGenerations: [String: Int64] = [:]
    /// The store's nonce at `generation` (the commit's, which the history records too): the
    /// same generation with another nonce is another lineage (an older copy restored and
    /// committed to again).
    var nonce = Data()
    /// The nonce each of this coordinator's commits wrote, by generation, until
    /// ``StoreCoordinator/noteOwnCommit(generation:touched:)`` takes it (after the COMMIT).
    var ownNonces: [Int64: Data] = [:]
    var statistics = ExternalChangeStatistics()
}

/// Follows one coordinator's store: schedules a catch-up when the change watch (or the poll
/// timer) says the files changed. Catch-ups run on `queue`, one at a time; notices that arrive
/// while one is queued share it.
// @unchecked Sendable because `registration`, `watch`, `pollInterval` and `timer` are touched only under `lock`;
// `queued` and `retryQueued` are locks of their own; `coordinator` is a weak reference, set once.
final class ExternalChangeFollower: @unchecked Sendable {
    let queue = DispatchQueue(label: "strata.external-changes", qos: .userInitiated)
    private weak var coordinator: StoreCoordinator?
    private let queued = Locked(false)
    /// Set while a look deferred by a busy writer is queued.
    private let retryQueued = Locked(false)
    private let lock = NSLock()
    private var registration: (folder: String, token: Int)?
    private var watch: ChangeWatch?
    private var pollInterval: Duration = .seconds(1)
    private var timer: (any DispatchSourceTimer)?

    init(_ coordinator: StoreCoordinator) { self.coordinator = coordinator }

    /// Follows the store at `path`: notices from `watch` (the process's inotify watch) and a
    /// poll timer, or the timer alone at `pollInterval` where there is no watch or it died.
    func start(path: String, pollInterval: Duration, watch: ChangeWatch? = ChangeWatch.shared) {
        lock.withLock {
            self.pollInterval = pollInterval
            self.watch = watch
            registration = watch?.watch(file: path, notice: { [weak self] in self?.notice() },
                                        died: { [weak self] in self?.watchDied() })
            // Without inotify: poll. With it, a slow poll too, for the one notice inotify can't
            // give: a commit whose last write landed before its WAL index was updated.
            schedulePoll(every: registration == nil ? pollInterval : max(pollInterval, .seconds(1)))
        }
    }

    /// Under `lock`: the poll timer, replacing the one there was.
    private func schedulePoll(every interval: Duration) {
        timer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .milliseconds(10))
        timer.setEventHandler { [weak self] in self?.catchUp() }
        timer.resume()
        self.timer = timer
    }

    /// The change watch failed: counted, and the poll runs at its full rate from now on (with
    /// a catch-up at once, for a notice the dying watch may have missed).
    private func watchDied() {
        let following = lock.withLock { () -> Bool in
            guard timer != nil else { return false }      // stopped
            registration = nil
            schedulePoll(every: pollInterval)
            return true
        }
        guard following else { return }
        coordinator?.external.state.withLock { $0.statistics.changeWatchFailures += 1 }
        notice()
    }

    func stop() {
        lock.withLock {
            if let registration { watch?.stop(registration) }
            registration = nil
            timer?.cancel()
            timer = nil
        }
    }

    deinit { stop() }

    /// A file changed: catch up now, and once more shortly after (a reader can start between a
    /// commit's last write to the `-wal` and the update of its index).
    func notice() {
        let first = queued.withLock { queued -> Bool in
            defer { queued = true }
            return !queued
        }
        guard first else { return }
        queue.async { [self] in
            queued.withLock { $0 = false }
            catchUp()
            queue.asyncAfter(deadline: .now() + .milliseconds(15)) { [weak self] in self?.catchUp() }
        }
    }

    private func catchUp() {
        // Stopped (the coordinator closed, or the store's model changed elsewhere): the catch-up
        // itself reads nothing once `FollowState.stopped` is set, the one "stopped" flag.
        guard let coordinator else { return }
        // This coordinator is writing (a commit, a batch, an import): no other connection can
        // commit until it is done, and its own writes are what woke us. Look again shortly, once,
        // instead of reading beside every write (an import's WAL writes come by the thousand).
        if coordinator.writerIsBusy() {
            let first = retryQueued.withLock { queued -> Bool in
                defer { queued = true }
                return !queued
            }
            guard first else { return }
            queue.asyncAfter(deadline: .now() + .milliseconds(5)) { [weak self] in
                guard let self else { return }
                retryQueued.withLock { $0 = false }
                catchUp()
            }
            return
        }
        // A failed read (the store busy being replaced, an I/O error) leaves the state as it was:
        // the next notice, or the poll, tries again; the failure is counted, never read as news.
        do {
            try coordinator.catchUpWithExternalChanges(.mergeRows)
        } catch {
            coordinator.external.state.withLock { $0.statistics.failedCatchUps += 1 }
        }
    }
}

