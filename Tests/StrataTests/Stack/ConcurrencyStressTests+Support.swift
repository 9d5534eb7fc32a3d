import Foundation
import Testing
import StrataTestSupport
@testable import Strata

// The nesting workload and the thread-safe tallies of the concurrency stress suite (they use
// Strata's NSLock-backed `Locked`, which ThreadSanitizer understands).
// MARK: - Nesting operations

/// The contexts of the contention test and one step of it: always child → parent.
struct NestingStack: Sendable {
    let writer: ManagedObjectContext
    let main: ManagedObjectContext
    let updates: [ManagedObjectContext]
    let grandchildren: [ManagedObjectContext]
    let background: ManagedObjectContext

    /// Runs operation `(worker + iteration) % 6`; returns the value it inserted and saved, if any.
    func step(worker: Int, iteration: Int) throws -> Int64? {
        let k = (worker + iteration) % updates.count
        let update = updates[k]
        let grandchild = grandchildren[k]
        let value = Int64(worker) * 100_000 + Int64(iteration)
        func insertAndSave(_ context: ManagedObjectContext, root: Bool) throws -> Int64 {
            try context.performAndWait {
                let number = try context.insert("Number")
                try number.setValue(value, forKey: "value")
                try number.setValue(value.isMultiple(of: 2), forKey: "isEven")
                if root { try context.save() } else { try context.saveToStore() }
                return value
            }
        }
        switch (worker + iteration) % 6 {
        case 0:
            // Four levels of synchronous nesting, each checking it owns its queue.
            let owned = grandchild.performAndWait {
                update.performAndWait { main.performAndWait { writer.performAndWait { writer.isOnQueue && main.isOnQueue } } }
            }
            if !owned { throw NestingError.notOnQueue("grandchild → update → main → writer") }
            return nil
        case 1:
            return try insertAndSave(update, root: false)          // update → main → writer → SQLite
        case 2:
            return try insertAndSave(grandchild, root: false)      // grandchild → update → main → writer → SQLite
        case 3:
            // A fetch in a grandchild reads through every ancestor (pending changes, overlays).
            _ = try grandchild.performAndWait {
                try grandchild.count(for: FetchRequest(entityName: "Number", predicate: try Condition("isEven == YES")))
            }
            return nil
        case 4:
            // main re-entrant, then up to writer.
            _ = try main.performAndWait {
                try main.performAndWait { try writer.performAndWait { try writer.count(for: FetchRequest(entityName: "Number")) } }
            }
            return nil
        default:
            return try insertAndSave(background, root: true)       // merged down asynchronously
        }
    }
}

enum NestingError: Error {
    case notOnQueue(String)
}

// MARK: - Helpers

/// An integer several threads count with.
final class Counter: Sendable {
    private let storage: Locked<Int>
    init(_ value: Int = 0) { storage = Locked(value) }
    var value: Int { storage.withLock { $0 } }
    func increment() { storage.withLock { $0 += 1 } }
    func decrement() { storage.withLock { $0 -= 1 } }
}

/// Values several threads append to.
final class Collector<Element: Sendable>: Sendable {
    private let storage = Locked<[Element]>([])
    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var items: [Element] { storage.withLock { $0 } }
}

/// The union of the objects-did-change a context posted.
final class ChangeLog: Sendable {
    private let storage = Locked<(changes: ObjectChanges, events: Int)>((ObjectChanges(), 0))
    func record(_ changes: ObjectChanges) {
        storage.withLock {
            $0.changes.inserted.formUnion(changes.inserted)
            $0.changes.updated.formUnion(changes.updated)
            $0.changes.deleted.formUnion(changes.deleted)
            $0.events += 1
        }
    }
    var changes: (inserted: Set<ObjectID>, updated: Set<ObjectID>, deleted: Set<ObjectID>, events: Int) {
        storage.withLock { ($0.changes.inserted, $0.changes.updated, $0.changes.deleted, $0.events) }
    }
}

/// Starts `count` threads running `body(index)`; the group is left when each finishes.
func startThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            body(index)
            group.leave()
        }.start()
    }
    return group
}

struct DeadlineExceeded: Error, CustomStringConvertible {
    var what: String
    var seconds: Int
    var description: String { "\(what) did not finish within \(seconds) s: deadlock suspected" }
}

/// Runs `body`, throwing ``DeadlineExceeded`` if it has not finished after `seconds` (its task is
/// then left blocked, so that a deadlock fails the test instead of hanging the run).
func withDeadline<T: Sendable>(seconds: Int, _ what: String,
                                       _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let once = ResumeOnce(continuation)
        let timer = Task.detached {
            try? await Task.sleep(for: .seconds(seconds))
            if !Task.isCancelled { once.resume(with: .failure(DeadlineExceeded(what: what, seconds: seconds))) }
        }
        Task {   // not detached: the body's #expect needs the test's task-locals
            do { once.resume(with: .success(try await body())) } catch { once.resume(with: .failure(error)) }
            timer.cancel()
        }
    }
}

final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Locked<CheckedContinuation<T, any Error>?>
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Locked(continuation) }
    func resume(with result: Result<T, any Error>) {
        continuation.withLock { slot in
            defer { slot = nil }
            return slot
        }?.resume(with: result)
    }
}
