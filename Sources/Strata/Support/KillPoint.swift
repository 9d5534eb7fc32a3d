internal import Foundation
internal import Synchronization

/// Named places where a crash test can end the process at once.
///
/// Compiled into every build, and inert unless the program opts in: a crash-test harness calls
/// ``armFromEnvironment()``, after which `STRATA_KILL_POINT=name` ends the process (SIGKILL: no
/// flush, no `atexit`) the first time `name` is reached, `STRATA_KILL_POINT=name:3` the third
/// time. A program that does not call it ignores the variable. Disarmed, a kill point costs one
/// relaxed atomic load and a branch.
///
/// Context kill points are named after the context (`update.save.pushed`, `main.save.pushed`,
/// `writer.committed`); the ``catalogue`` lists them for the stack of a ``PersistentContainer``.
/// The points inside a commit's transaction (`transaction.begun`, `rows.written`,
/// `generation.bumped`, `entities.stamped`, and the history's `history.transaction.written`,
/// `history.change.written`, `history.written`) carry the name of the root context that commits,
/// also when ``ManagedObjectContext/saveToStore()`` commits a descendant's changes straight
/// through ancestors that have none (`writer.transaction.begun` for an update context's save).
///
/// Test API (`@_spi(Testing) import Strata`), not part of Strata's public interface.
@_spi(Testing) public enum KillPoint {
    /// Whether a point is armed or an observer is set: the one load a disarmed point costs.
    private static let active = Atomic<Bool>(false)
    /// The armed point and after how many hits it fires, the hits so far, and the observer.
    private static let state = Locked(State())

    private struct State: Sendable {
        var armed: (name: String, nth: Int)?
        var hits = 0
        var observer: (@Sendable (String) -> Void)?
    }

    /// Arms the point `STRATA_KILL_POINT` names (`name` or `name:nth`), for a crash-test harness.
    /// Returns the armed name, `nil` when the variable is unset or empty.
    @discardableResult
    public static func armFromEnvironment() -> String? {
        let armed = parse(ProcessInfo.processInfo.environment["STRATA_KILL_POINT"])
        state.withLock { state in
            state.armed = armed
            state.hits = 0
            active.store(armed != nil || state.observer != nil, ordering: .relaxed)
        }
        return armed?.name
    }

    /// Whether a kill point is armed (the exit hook then stays out of the way).
    static var isArmed: Bool { active.load(ordering: .relaxed) && state.withLock { $0.armed != nil } }

    static func parse(_ value: String?) -> (name: String, nth: Int)? {
        guard let value, !value.isEmpty else { return nil }
        if let colon = value.lastIndex(of: ":"), let nth = Int(value[value.index(after: colon)...]), nth >= 1 {
            return (String(value[..<colon]), nth)
        }
        return (value, 1)
    }

    /// Tests only: `observer` is called with each point's full name as it is reached, on the
    /// thread that reaches it (a test holds a commit open between its statements by blocking
    /// there); `nil` removes it.
    static func setObserver(_ observer: (@Sendable (String) -> Void)?) {
        state.withLock { state in
            state.observer = observer
            active.store(state.armed != nil || observer != nil, ordering: .relaxed)
        }
    }

    /// Ends the process if `name` is the armed point (and this is its nth hit).
    @inline(__always)
    static func hit(_ name: StaticString) {
        guard active.load(ordering: .relaxed) else { return }
        reached(name.description)
    }

    /// The same for a context's point: `"<context name>.<point>"`.
    @inline(__always)
    static func hit(_ point: StaticString, in context: String?) {
        guard active.load(ordering: .relaxed) else { return }
        reached("\(context ?? "context").\(point)")
    }

    private static func reached(_ name: String) {
        let (observer, fires) = state.withLock { state -> ((@Sendable (String) -> Void)?, Bool) in
            guard let armed = state.armed, armed.name == name else { return (state.observer, false) }
            state.hits += 1
            return (state.observer, state.hits == armed.nth)
        }
        observer?(name)
        guard fires else { return }
        FileHandle.standardError.write(Data("strata: kill point \(name) reached, ending the process\n".utf8))
        POSIX.killSelf()
    }

    /// Every kill point of a ``PersistentContainer`` stack (contexts named `update`, `main`,
    /// `writer`) and of the section cache, in the order a save and a cache write reach them.
    public static let catalogue: [String] = [
        "update.save.begin", "update.save.validated", "update.save.pushed",
        "main.save.begin", "main.save.validated", "main.frc.updated", "main.save.pushed",
        "writer.save.begin", "writer.save.validated", "writer.transaction.begun", "writer.rows.written",
        "writer.generation.bumped", "writer.entities.stamped",
        "writer.history.transaction.written", "writer.history.change.written", "writer.history.written",
        "writer.committed", "writer.merged", "writer.notified",
        "cache.rebuild.begin", "cache.refresh.append", "cache.append.written", "cache.append.fsynced",
        "cache.refresh.incremental", "cache.rebuild.fetched", "cache.encoded",
        "cache.tmp.created", "cache.tmp.half-written", "cache.tmp.written", "cache.tmp.fsynced",
        "cache.renamed", "cache.dir.fsynced",
        "cache.cleanup.begin", "cache.cleanup.removed",
        "cache.load.validated",
    ]
}
