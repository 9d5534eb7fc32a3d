internal import Foundation

/// Named places where a crash test can end the process at once.
///
/// Compiled into every build and armed only by the environment:
/// `STRATA_KILL_POINT=name` ends the process (SIGKILL: no flush, no `atexit`) the first time
/// `name` is reached, `STRATA_KILL_POINT=name:3` the third time. Disarmed, a kill point costs one
/// load and a branch.
///
/// Context kill points are named after the context (`update.save.pushed`, `main.save.pushed`,
/// `writer.committed`); the ``catalogue`` lists them for the stack of a ``PersistentContainer``.
/// The points inside a commit's transaction (`transaction.begun`, `rows.written`,
/// `generation.bumped`, `entities.stamped`) carry the name of the root context that commits,
/// also when ``ManagedObjectContext/saveToStore()`` commits a descendant's changes straight
/// through ancestors that have none (`writer.transaction.begun` for an update context's save).
public enum KillPoint {
    /// The armed point and after how many hits it fires; `nil` when disarmed (read once).
    private static let armed: (name: String, nth: Int)? = parse(ProcessInfo.processInfo.environment["STRATA_KILL_POINT"])
    private static let hits = Locked<Int>(0)

    static func parse(_ value: String?) -> (name: String, nth: Int)? {
        guard let value, !value.isEmpty else { return nil }
        if let colon = value.lastIndex(of: ":"), let nth = Int(value[value.index(after: colon)...]), nth >= 1 {
            return (String(value[..<colon]), nth)
        }
        return (value, 1)
    }

    /// Tests only: called with each point's full name as it is reached, on the thread that
    /// reaches it (a test holds a commit open between its statements by blocking here).
    static let observer = Locked<(@Sendable (String) -> Void)?>(nil)

    /// Ends the process if `name` is the armed point (and this is its nth hit).
    @inline(__always)
    static func hit(_ name: StaticString) {
        if let observe = observer.withLock({ $0 }) { observe(name.description) }
        guard let armed else { return }
        fire(name.description, armed)
    }

    /// The same for a context's point: `"<context name>.<point>"`.
    @inline(__always)
    static func hit(_ point: StaticString, in context: String?) {
        if let observe = observer.withLock({ $0 }) { observe("\(context ?? "context").\(point)") }
        guard let armed else { return }
        fire("\(context ?? "context").\(point)", armed)
    }

    private static func fire(_ name: String, _ armed: (name: String, nth: Int)) {
        guard name == armed.name else { return }
        let count = hits.withLock { hits -> Int in
            hits += 1
            return hits
        }
        guard count == armed.nth else { return }
        FileHandle.standardError.write(Data("strata: kill point \(name) reached, ending the process\n".utf8))
        kill(getpid(), SIGKILL)
        _exit(137)                                        // not reached
    }

    /// Every kill point of a ``PersistentContainer`` stack (contexts named `update`, `main`,
    /// `writer`) and of the section cache, in the order a save and a cache write reach them.
    public static let catalogue: [String] = [
        "update.save.begin", "update.save.validated", "update.save.pushed",
        "main.save.begin", "main.save.validated", "main.frc.updated", "main.save.pushed",
        "writer.save.begin", "writer.save.validated", "writer.transaction.begun", "writer.rows.written",
        "writer.generation.bumped", "writer.entities.stamped", "writer.committed", "writer.merged", "writer.notified",
        "cache.rebuild.begin", "cache.refresh.incremental", "cache.rebuild.fetched", "cache.encoded",
        "cache.tmp.created", "cache.tmp.half-written", "cache.tmp.written", "cache.tmp.fsynced",
        "cache.renamed", "cache.dir.fsynced",
        "cache.cleanup.begin", "cache.cleanup.removed",
        "cache.load.validated",
    ]
}
