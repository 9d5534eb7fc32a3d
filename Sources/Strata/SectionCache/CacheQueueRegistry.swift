internal import Foundation

/// Cache writes survive a normal process exit: every coordinator that has queued cache work
/// registers its cache queue here, and an `atexit` hook waits for the registered queues, so that
/// an app that fetches and then returns from `main` (or calls `exit`) without
/// ``StoreCoordinator/close()`` still gets its cache file. ``StoreCoordinator/close()`` and a
/// coordinator's `deinit` wait for their own queue.
///
/// The registry holds the queues, never the coordinators: it keeps no coordinator alive, and a
/// queue whose coordinator was released from the queue itself (its last reference held by a
/// refresh) stays registered until the work queued behind that refresh has run.
enum CacheQueueRegistry {
    /// Set on each registered queue (value: its token), so that a flush that runs on a cache queue
    /// does not wait for that queue, that is for itself.
    static let onQueueKey = DispatchSpecificKey<Int>()
    /// The longest the exit hook waits for all queues together: a hook that can't finish must not
    /// keep the process from ending.
    static let exitDeadline: DispatchTimeInterval = .seconds(10)

    private struct State {
        var lastToken = 0
        var queues: [Int: DispatchQueue] = [:]
    }

    private static let state = Locked(State())

    /// Installs the exit hook, once (at the first registration). The hook is a C function pointer:
    /// the closure captures nothing and reaches the registry through its static members.
    private static let exitHook: Void = {
        atexit { CacheQueueRegistry.flushAtExit() }
    }()

    /// Registers `queue` until ``unregister(_:)``; returns its token.
    static func register(_ queue: DispatchQueue) -> Int {
        _ = exitHook
        let token = state.withLock { state in
            state.lastToken += 1
            state.queues[state.lastToken] = queue
            return state.lastToken
        }
        queue.setSpecific(key: onQueueKey, value: token)
        return token
    }

    static func unregister(_ token: Int) {
        _ = state.withLock { $0.queues.removeValue(forKey: token) }
    }

    /// Whether `token` is registered (tests).
    static func isRegistered(_ token: Int) -> Bool {
        state.withLock { $0.queues[token] != nil }
    }

    /// Whether the caller runs on the queue registered as `token`.
    static func isOnQueue(_ token: Int) -> Bool {
        DispatchQueue.getSpecific(key: onQueueKey) == token
    }

    /// The exit hook: waits until the work queued so far on every registered queue has run (all
    /// together at most ``exitDeadline``), except the queue the exit was called from, which can't
    /// be waited for from itself. The registry's lock is held only to copy the list, never while
    /// waiting. Does nothing while a kill point is armed: the crash suite's processes must end as
    /// the kill points and its kills decide (a reached kill point ends the process with `_exit`,
    /// which runs no exit hook anyway).
    static func flushAtExit() {
        if KillPoint.isArmed { return }
        let queues = state.withLock { $0.queues }
        let current = DispatchQueue.getSpecific(key: onQueueKey)
        let deadline = DispatchTime.now() + exitDeadline
        for (token, queue) in queues.sorted(by: { $0.key < $1.key }) where token != current {
            let drained = DispatchSemaphore(value: 0)
            queue.async { drained.signal() }
            if drained.wait(timeout: deadline) == .timedOut { return }
        }
    }
}
