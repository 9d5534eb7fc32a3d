// Result streams (issue 49): `for try await results in context.results(for: request)`.
//
// A stream is a results controller on the context, tracking, whose events are turned into
// elements: the first is the fetch, each later one a change set that altered the results
// (inserts, deletes, moves, updates of objects in them) or a reload. Nothing is fetched again
// per change: the controller's exact change sets carry each element.
//
// Objects stay confined to their context's queue, so an element carries the layout (Sendable
// IDs and sections) and gives its typed objects on the context's queue:
//
//     for try await results in main.results(for: FetchRequest<Good>(sortBy: [SortDescriptor(\.name)])) {
//         let names = try await main.perform { try results.objects().map(\.name) }
//     }

/// One state of a fetch request's results, as a result stream delivers it.
public struct FetchedResults<Result: ManagedObject>: Sendable {
    /// The sections and their ordered IDs.
    public let snapshot: FetchedSnapshot
    /// What changed since the element before: `nil` for the first element and after a reload
    /// (a reset, a store replaced, a change that could not be followed row by row).
    public let changes: FetchedChanges?
    private let context: ContextReference

    init(snapshot: FetchedSnapshot, changes: FetchedChanges?, context: ManagedObjectContext) {
        self.snapshot = snapshot
        self.changes = changes
        self.context = ContextReference(context: context)
    }

    /// Every ID, in order (section by section).
    public var objectIDs: [ObjectID] { snapshot.objectIDs }
    public var count: Int { snapshot.numberOfObjects }
    public var isEmpty: Bool { count == 0 }

    /// The objects, in order, read in one statement per batch of faults. Call it on the
    /// context's queue (inside `perform`); the objects belong to that context.
    ///
    /// - Throws: ``ObjectError/objectNotFound(_:)`` for a row deleted since this element (a
    ///   later element reports the delete).
    public func objects() throws -> [Result] {
        try objects(with: objectIDs)
    }

    /// The objects this element's change set inserted and updated (the typed side of
    /// ``changes``), on the context's queue; every object for a first element or a reload.
    public func changedObjects() throws -> [Result] {
        guard let changes else { return try objects() }
        let ids = changes.objects.compactMap { change -> ObjectID? in
            switch change {
            case .insert(let id, _), .update(let id, _, _), .move(let id, _, _): id
            case .delete: nil
            }
        }
        return try objects(with: ids)
    }

    private func objects(with ids: [ObjectID]) throws -> [Result] {
        guard let context = context.context else {
            preconditionFailure("FetchedResults.objects() after its context was released: keep the context while you read its results.")
        }
        context.assertOnQueue()
        let objects = try ids.map { try context.object(with: $0) }
        try context.fulfill(batch: objects.filter(\.isFault))
        return objects.map { object in
            guard let typed = object as? Result else {
                preconditionFailure("FetchedResults<\(Result.self)> holds \(type(of: object)) objects of \(object.entityName): name \(Result.self) as the entity's class (Entity(class:) or @Entity).")
            }
            return typed
        }
    }
}

/// A context, held weakly in a Sendable element: only dereferenced on its own queue.
// @unchecked because: the reference is only read by `FetchedResults.objects()`, which checks
// that it runs on the context's queue before touching the context.
private struct ContextReference: @unchecked Sendable {
    weak var context: ManagedObjectContext?
}

/// Keeps a stream's controller alive until the stream ends.
// @unchecked because: both fields are set and cleared on the context's queue only (the stream's
// set-up and its termination are both enqueued there).
private final class StreamState: @unchecked Sendable {
    var controller: AnyFetchedResultsController?
    var sink = 0
}

extension ManagedObjectContext {
    /// The results of `request`, live: the first element is the fetch, then one element per
    /// change that alters the results — a save here or in another context, a merge, a batch
    /// request, another process's commit — each with its change set. Sectioned by
    /// `sectionNameKeyPath` (the request's first sort key) when given.
    ///
    /// The stream ends, and tracking stops, when the consuming task is cancelled or the stream
    /// is released; it finishes with the error when the fetch fails or a change cannot be
    /// followed (``FetchedResultsError/trackingFailed(reason:)``). Call it from anywhere.
    ///
    /// SwiftData's `@Query` and GRDB's `ValueObservation` re-fetch the whole value on every
    /// change; a result stream carries the controller's exact change sets and reads nothing
    /// again.
    public func results<Result: ManagedObject>(for request: FetchRequest<Result>, sectionNameKeyPath: String? = nil)
        -> AsyncThrowingStream<FetchedResults<Result>, any Error> {
        let (stream, continuation) = AsyncThrowingStream<FetchedResults<Result>, any Error>.makeStream()
        let state = StreamState()
        enqueue { [self] in
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: self,
                                                      sectionNameKeyPath: sectionNameKeyPath)
            do {
                try controller.performFetch()
            } catch {
                continuation.finish(throwing: error)
                return
            }
            state.controller = controller
            continuation.yield(FetchedResults(snapshot: controller.snapshot, changes: nil, context: self))
            // Each event goes into the stream's buffer on the context's queue, as a delegate call
            // would: no task in between (one would wait for a free thread of the cooperative
            // pool, which blocking work elsewhere can hold).
            state.sink = controller.addSink { [unowned self] event in
                switch event {
                case .changes(let changes):
                    guard !changes.isEmpty else { return }
                    continuation.yield(FetchedResults(snapshot: changes.after, changes: changes, context: self))
                case .reload(let snapshot):
                    continuation.yield(FetchedResults(snapshot: snapshot, changes: nil, context: self))
                case .failed(let error):
                    continuation.finish(throwing: error)
                }
            }
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.enqueue {
                state.controller?.removeSink(state.sink)
                state.controller = nil
            }
        }
        return stream
    }
}
