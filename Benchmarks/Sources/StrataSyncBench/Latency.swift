import Foundation
import Strata
import StrataSync

// One change on replica A to the results controller delegate of replica B: A saves one row and
// calls `sync()`; B runs `follow()` (LISTEN/NOTIFY, no polling of the server) and applies the
// pull as a root context save, which B's writer and then B's main context merge; a
// `FetchedResultsController` on B's main context reports it to its delegate. Measured: A's save
// start → the delegate's `controllerDidChangeContent`.

let clock = ContinuousClock()

/// The delegate's calls, time-stamped, and one waiter for the next. `@unchecked Sendable`:
/// every stored property is read and written with `lock` held.
final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [ContinuousClock.Instant] = []
    private var waiter: (index: Int, continuation: CheckedContinuation<ContinuousClock.Instant?, Never>)?

    var count: Int { lock.withLock { times.count } }

    /// Called by the delegate, on B's main context's queue.
    func record(_ instant: ContinuousClock.Instant) {
        let resume: (CheckedContinuation<ContinuousClock.Instant?, Never>, ContinuousClock.Instant)? = lock.withLock {
            times.append(instant)
            guard let waiter, times.count > waiter.index else { return nil }
            self.waiter = nil
            return (waiter.continuation, times[waiter.index])
        }
        if let (continuation, time) = resume { continuation.resume(returning: time) }
    }

    /// The time of call number `index` (0-based), waiting for it up to `timeout`; `nil` if it did not come.
    func wait(for index: Int, timeout: Duration) async -> ContinuousClock.Instant? {
        var timer: Task<Void, Never>?
        let result: ContinuousClock.Instant? = await withCheckedContinuation { continuation in
            let ready: ContinuousClock.Instant?? = lock.withLock {
                if times.count > index { return .some(times[index]) }
                waiter = (index, continuation)
                return .none
            }
            if let ready {
                continuation.resume(returning: ready)
            } else {
                timer = Task {
                    try? await Task.sleep(for: timeout)
                    self.expire(index)
                }
            }
        }
        timer?.cancel()
        return result
    }

    private func expire(_ index: Int) {
        let continuation: CheckedContinuation<ContinuousClock.Instant?, Never>? = lock.withLock {
            guard let waiter, waiter.index == index else { return nil }
            self.waiter = nil
            return waiter.continuation
        }
        continuation?.resume(returning: nil)
    }
}

/// B's controller's delegate: stamps each `controllerDidChangeContent`.
final class ArrivalProbe: FetchedResultsControllerDelegate {
    let arrivals: Arrivals
    init(_ arrivals: Arrivals) { self.arrivals = arrivals }
    func controllerDidChangeContent(_ controller: AnyFetchedResultsController) { arrivals.record(clock.now) }
}

struct LatencyResult {
    /// A's save start → B's delegate, in ms, one per measured round.
    var toDelegate: [Double]
    /// A's save start → A's `sync()` returned, in ms.
    var aSync: [Double]
    /// Delegate calls beyond one per round (should be 0).
    var extraCalls: Int
    var rowsInController: Int
    /// A's `sync()` with nothing to push or pull, in ms (the fixed cost of a round).
    var idleSync: [Double] = []
}

enum Latency {
    /// Runs `warmup + rounds` rounds; B already holds A's rows. A pause between rounds (longer
    /// than `follow`'s 50 ms look at the local generation, which wakes B once more after its own
    /// apply) keeps each round's notification from queueing behind the last round's tail.
    static func run(a: StoreCoordinator, syncA: SyncEngine, b: StoreCoordinator, syncB: SyncEngine,
                    rowKey: ObjectID, warmup: Int, rounds: Int) async throws -> LatencyResult {
        // B: the three-tier stack on its store; the controller on the main context (a queue of
        // its own, not the main thread), its delegate set: from now on B's changes reach it.
        let container = PersistentContainer(coordinator: b)
        let main = container.mainContext
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Flight", sortKeys: [.ascending("month"), .ascending("day")]),
            managedObjectContext: main)
        let arrivals = Arrivals()
        let probe = ArrivalProbe(arrivals)
        let rowsInController = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = probe
            return controller.numberOfObjects
        }

        // B follows; wait for its first round (it catches up once when listening starts).
        let roundsBefore = syncB.status.rounds
        let follower = Task { try await syncB.follow() }
        defer { follower.cancel() }
        let started = clock.now
        while syncB.status.rounds == roundsBefore {
            if clock.now - started > .seconds(60) { throw BenchError("B's follow() did not complete a round in 60 s: \(String(describing: syncB.status.lastError))") }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(200))

        let editor = a.newContext(name: "editor")
        var result = LatencyResult(toDelegate: [], aSync: [], extraCalls: 0, rowsInController: rowsInController)
        let callsBefore = arrivals.count
        for round in 0..<(warmup + rounds) {
            let index = arrivals.count
            let value = Double(round) + 0.25                  // a new value every round
            let start = clock.now
            try editor.performAndWait {
                let flight = try editor.existingObject(with: rowKey)
                flight[attribute: "dep_delay"] = value
                _ = try editor.save()
            }
            try await syncA.sync()
            let synced = clock.now
            guard let arrival = await arrivals.wait(for: index, timeout: .seconds(30)) else {
                throw BenchError("round \(round): B's delegate heard nothing in 30 s (B: \(syncB.status))")
            }
            if round >= warmup {
                result.toDelegate.append((arrival - start).milliseconds)
                result.aSync.append((synced - start).milliseconds)
            }
            try await Task.sleep(for: .milliseconds(150))
        }
        result.extraCalls = arrivals.count - callsBefore - (warmup + rounds)
        // A round with nothing to do: the fixed cost every change pays (a new connection, the
        // replica's lookup, the history's and the log's reads).
        for round in 0..<(warmup + rounds) {
            let start = clock.now
            let report = try await syncA.sync()
            if round >= warmup { result.idleSync.append((clock.now - start).milliseconds) }
            guard report.pushed == 0, report.pulled == 0 else { throw BenchError("an idle sync moved something: \(report)") }
        }
        // The value B shows is A's last one.
        let shown: Double? = try main.performAndWait { try main.existingObject(with: rowKey)[attribute: "dep_delay"] }
        guard shown == Double(warmup + rounds - 1) + 0.25 else {
            throw BenchError("B shows dep_delay \(String(describing: shown)) after the last round")
        }
        main.performAndWait { controller.delegate = nil }
        follower.cancel()
        _ = await follower.result
        return result
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
    var milliseconds: Double { seconds * 1000 }
}
