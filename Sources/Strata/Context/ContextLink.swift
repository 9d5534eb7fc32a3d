internal import Foundation
// Public: the typed reads inline the queue check (`isOnQueue`) into their callers.
public import Synchronization
public import CStrataThread

/// What a context shares with each of its objects: the thread that runs the context's queue now,
/// whether the context still exists, and the way back to it.
///
/// Objects do not keep their context alive (Core Data's rule as well: keep your context). They
/// used to reach it through a `weak` reference, but a context is also weakly referenced by its
/// coordinator and its parent, so it has a side table, and every weak load and every retain or
/// release of it goes through that table: about a quarter of the samples of fetching and reading
/// every flight (perf: weak loads 8%, slow releases 17%). An object
/// now holds this link strongly (a plain object: cheap to retain), checks its queue and liveness
/// here, and borrows the context unretained only when it needs it: to read a fault, to write.
@usableFromInline
// `owner` and `alive` are atomics; `unmanaged` is written once, in the context's initialiser,
// before the link is shared with any object or thread; `observesObjects` is written on the
// context's queue (its setter asserts it) and read by typed reads, which a read off the queue
// stops at once (their queue check, just after). @unchecked Sendable because of these rules,
// which the compiler cannot see.
final class ContextLink: @unchecked Sendable {
    /// The thread running a block on the context's queue (0 when none).
    @usableFromInline let owner = Atomic<UInt>(0)
    @usableFromInline let alive = Atomic<Bool>(true)
    private var unmanaged: Unmanaged<ManagedObjectContext>?
    /// ``ManagedObjectContext/observesObjects``: read by every `@Entity` property read.
    @usableFromInline @exclusivity(unchecked) var observesObjects = false

    init() {}

    /// Called once by the context's initialiser.
    func attach(_ context: ManagedObjectContext) { unmanaged = Unmanaged.passUnretained(context) }

    /// Called by the context's `deinit`: objects still held elsewhere become unusable. The owner
    /// goes back to 0 as well (no block of a context can run while it is deinitialised: each
    /// holds it), so that ``isOnQueue`` is false for a link whose context is gone.
    func detach() {
        alive.store(false, ordering: .releasing)
        owner.store(0, ordering: .releasing)
    }

    @inlinable var isAlive: Bool { alive.load(ordering: .acquiring) }

    /// The context, or `nil` once it was released.
    var context: ManagedObjectContext? {
        guard isAlive, let unmanaged else { return nil }
        return unmanaged.takeUnretainedValue()
    }

    /// Calls `body` with the context borrowed (no retain: the caller runs on the context's queue,
    /// inside a block the context itself runs, so it cannot be released meanwhile).
    @inline(__always)
    func withContext<T>(_ body: (ManagedObjectContext) throws -> T) rethrows -> T {
        try unmanaged!._withUnsafeGuaranteedRef(body)
    }

    /// The calling thread's identity (`strata_current_thread`: the thread pointer, read with no
    /// call, on Linux).
    @inlinable static func currentThread() -> UInt { UInt(strata_current_thread()) }

    /// True when the caller runs on the context's queue (inside `perform`/`performAndWait`);
    /// never true once the context is gone (``detach()``), so a true answer also says that the
    /// context is alive: the typed reads' fast path checks this alone.
    @inlinable @inline(__always)
    var isOnQueue: Bool { owner.load(ordering: .acquiring) == ContextLink.currentThread() }
}
