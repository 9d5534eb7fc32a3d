internal import Foundation

/// Object IDs a change touched, by kind.
public struct ObjectChanges: Sendable, Equatable {
    public var inserted: Set<ObjectID> = []
    public var updated: Set<ObjectID> = []
    public var deleted: Set<ObjectID> = []
    /// Objects whose values were re-read (``ManagedObjectContext/refresh(_:mergeChanges:)``, or a
    /// failed cascading save putting them back as they were).
    public var refreshed: Set<ObjectID> = []
    /// Objects that left the context without a delete of theirs: their row vanished.
    public var invalidated: Set<ObjectID> = []
    /// Entities whose rows another connection (another process, another coordinator on the
    /// file) changed: which rows is not known, so whoever lists them reads them again. Set by
    /// ``StoreCoordinator/processExternalChanges()``.
    public var entitiesChangedElsewhere: Set<String> = []
    /// Objects whose values as this context shows them did not change, though the row they were
    /// read from did: a merge moved one to an owner deleted here, and that delete's rule let go
    /// of it again. Named by the store version the values were read at before: a list that
    /// stamped the row with that version re-stamps it by its content, without reporting it.
    var unchangedOverNewRow: [ObjectID: Int64] = [:]

    public init(inserted: Set<ObjectID> = [], updated: Set<ObjectID> = [], deleted: Set<ObjectID> = [],
                refreshed: Set<ObjectID> = [], invalidated: Set<ObjectID> = [], entitiesChangedElsewhere: Set<String> = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.refreshed = refreshed
        self.invalidated = invalidated
        self.entitiesChangedElsewhere = entitiesChangedElsewhere
    }

    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty
            && entitiesChangedElsewhere.isEmpty
    }

    /// Every ID named, whatever the kind.
    public var all: Set<ObjectID> { inserted.union(updated).union(deleted).union(refreshed).union(invalidated) }

    /// Adds the edits a context made while merging these changes (a pending delete's rule on a
    /// newcomer): one change set. An object the merge inserts and the edit changes is reported
    /// as inserted (with the edit's values); one it inserts and the edit deletes is reported as
    /// deleted (its row is in the store: a list that reads rows there learns that it is gone here).
    mutating func absorb(_ edits: ObjectChanges) {
        guard !edits.isEmpty else { return }
        inserted.subtract(edits.deleted)
        updated.formUnion(edits.updated.subtracting(inserted))
        deleted.formUnion(edits.deleted)
        updated.subtract(deleted)
        refreshed.subtract(updated.union(deleted))
    }
}

/// What a save wrote: the IDs, and the committed store generation when the save reached the store.
///
/// Pass it to another context's ``ManagedObjectContext/mergeChanges(from:)`` to bring that context
/// up to date without reading the store.
public struct DidSave: Sendable {
    public var inserted: Set<ObjectID> { rows.insertedIDs }
    public var updated: Set<ObjectID> { rows.updatedIDs }
    public var deleted: Set<ObjectID> { rows.deleted }
    /// The generation the commit created; `nil` for a child context's save (it reached only the
    /// parent's memory).
    public let generation: Int64?
    /// The rows as saved, so that a merge needs no SQL.
    let rows: RowChanges

    init(_ rows: RowChanges, generation: Int64?) {
        self.rows = rows
        self.generation = generation
    }
}

/// Rows a save or merge carries from one context to another. Arrays, not dictionaries: a save
/// of 100,000 objects appends 100,000 rows without hashing one ID.
struct RowChanges: Sendable {
    var inserted: [(ObjectID, RowSnapshot)] = []
    var updated: [(ObjectID, RowSnapshot)] = []
    var deleted: Set<ObjectID> = []
    /// Objects whose to-many relationships changed (a member joined or left): a context holding
    /// one re-reads those relationships on next use.
    var toManyTouched: Set<ObjectID> = []

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && toManyTouched.isEmpty }

    /// The entities of the rows inserted, updated or deleted.
    var changedEntityNames: Set<String> {
        var names = Set<String>()
        for (id, _) in inserted { names.insert(id.entityName) }
        for (id, _) in updated { names.insert(id.entityName) }
        for id in deleted { names.insert(id.entityName) }
        return names
    }

    var insertedIDs: Set<ObjectID> { Set(inserted.lazy.map(\.0)) }
    var updatedIDs: Set<ObjectID> { Set(updated.lazy.map(\.0)) }

    /// The IDs as objects-did-change reports them.
    var objectChanges: ObjectChanges { ObjectChanges(inserted: insertedIDs, updated: updatedIDs, deleted: deleted) }

    /// These rows as they ended after a commit's conflicts were resolved.
    func applying(_ resolutions: [ObjectID: Resolution]) -> RowChanges {
        guard !resolutions.isEmpty else { return self }
        var rows = self
        rows.inserted.removeAll { resolutions[$0.0] != nil }
        rows.updated.removeAll { resolutions[$0.0] != nil }
        for (id, resolution) in resolutions {
            switch resolution {
            case .written(let row), .adoptedTheirs(let row):
                rows.deleted.remove(id)
                rows.updated.append((id, row))
            case .deletedByThem:
                rows.deleted.insert(id)
            }
        }
        return rows
    }
}

/// Why a context's objects all went away at once.
public enum ReloadReason: String, Sendable {
    /// ``ManagedObjectContext/reset()``.
    case reset
    /// The store under the context was replaced; every object ID may name something else now.
    case storeReplaced
}

/// Everything a context reports, in the order it happens.
public enum ContextEvent: Sendable {
    /// Objects of the context changed: local edits (reported when the outermost `perform` block
    /// ends, or at the start of a save), a child's save, a merge, a refresh.
    case objectsDidChange(ObjectChanges)
    /// A save is about to validate and write.
    case willSave
    /// A save finished.
    case didSave(DidSave)
    /// Every object was dropped; start over from a fetch.
    case reload(ReloadReason)
}

/// An event delivered to a callback on the context's queue, with the registered objects it names.
public struct ContextNotification {
    public let event: ContextEvent
    /// The objects the event names that the context holds (deleted ones included, already
    /// turned invalid when the deletion was saved or merged).
    public let objects: [ObjectID: ManagedObject]
}

/// Keeps a callback registered; ``cancel()`` (or releasing it) unregisters.
public final class ContextObservation: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    init(_ onCancel: @escaping @Sendable () -> Void) { self.onCancel = Locked(onCancel) }

    public func cancel() {
        let body = onCancel.withLock { body in defer { body = nil }; return body }
        body?()
    }

    deinit { cancel() }
}

/// The listeners of one context.
struct ContextListeners {
    // @unchecked because: callbacks are only called on the owning context's queue.
    struct Callback: @unchecked Sendable {
        let body: (ContextNotification) -> Void
    }

    var nextToken = 0
    var callbacks: [Int: Callback] = [:]
    var streams: [Int: AsyncStream<ContextEvent>.Continuation] = [:]

    var isEmpty: Bool { callbacks.isEmpty && streams.isEmpty }
}

extension ManagedObjectContext {
    /// Calls `handler` on the context's queue with every event, until the returned observation is
    /// cancelled or released.
    public func addObserver(_ handler: @escaping (ContextNotification) -> Void) -> ContextObservation {
        let token = listeners.withLock { listeners in
            listeners.nextToken += 1
            listeners.callbacks[listeners.nextToken] = .init(body: handler)
            hasListeners.store(true, ordering: .releasing)
            return listeners.nextToken
        }
        return ContextObservation { [weak self] in self?.removeListener(token) }
    }

    /// Every event from now on, as an async sequence (IDs only: objects stay on their queue).
    /// The sequence ends when the consuming task is cancelled.
    public func events() -> AsyncStream<ContextEvent> {
        let (stream, continuation) = AsyncStream<ContextEvent>.makeStream()
        let token = listeners.withLock { listeners in
            listeners.nextToken += 1
            listeners.streams[listeners.nextToken] = continuation
            hasListeners.store(true, ordering: .releasing)
            return listeners.nextToken
        }
        continuation.onTermination = { [weak self] _ in self?.removeListener(token) }
        return stream
    }

    /// Whether anyone listens: build an event's ID sets only then.
    var isObserved: Bool { hasListeners.load(ordering: .acquiring) }

    private func removeListener(_ token: Int) {
        listeners.withLock { listeners in
            listeners.callbacks[token] = nil
            listeners.streams[token] = nil
            // With nobody left, local edits stop being recorded.
            hasListeners.store(!listeners.isEmpty, ordering: .releasing)
        }
    }

    /// Delivers `event`: callbacks first (synchronously, on this queue), then streams. `removed`
    /// holds objects the event names that already left the registry.
    func post(_ event: ContextEvent, removed: ObjectTable = [:]) {
        guard hasListeners.load(ordering: .acquiring) else { return }
        let (callbacks, streams) = listeners.withLock { (Array($0.callbacks.values), Array($0.streams.values)) }
        if !callbacks.isEmpty {
            var objects: [ObjectID: ManagedObject] = [:]
            let ids: Set<ObjectID> = switch event {
            case .objectsDidChange(let changes): changes.all
            case .didSave(let save): save.inserted.union(save.updated).union(save.deleted)
            case .willSave, .reload: []
            }
            for id in ids { if let object = registered[id] ?? removed[id] { objects[id] = object } }
            let notification = ContextNotification(event: event, objects: objects)
            for callback in callbacks { callback.body(notification) }
        }
        for stream in streams { stream.yield(event) }
    }

    /// Records a local change for the next objects-did-change (only while someone listens).
    func noteLocal(_ id: ObjectID, _ kind: WritableKeyPath<ObjectChanges, Set<ObjectID>>) {
        guard hasListeners.load(ordering: .relaxed) else { return }
        localChanges[keyPath: kind].insert(id)
    }

    /// ``noteLocal(_:_:)`` for an object: its ID is made only when someone listens (every
    /// attribute set of an import comes through here).
    @inline(__always)
    func noteLocal(_ object: ManagedObject, _ kind: WritableKeyPath<ObjectChanges, Set<ObjectID>>) {
        guard hasListeners.load(ordering: .relaxed) else { return }
        localChanges[keyPath: kind].insert(object.objectID)
    }

    /// Posts the local changes made since the last call as one objects-did-change. Runs when the
    /// outermost `perform`/`performAndWait` block ends and at the start of a save; call it to
    /// report earlier.
    public func processPendingChanges() {
        assertOnQueue()
        guard !localChanges.isEmpty else { return }
        var changes = localChanges
        localChanges = ObjectChanges()
        // An object inserted and changed since the last report is reported as inserted only.
        changes.updated.subtract(changes.inserted)
        changes.updated.subtract(changes.deleted)
        let both = changes.inserted.intersection(changes.deleted)
        changes.inserted.subtract(both)
        changes.deleted.subtract(both)
        if !changes.isEmpty { post(.objectsDidChange(changes)) }
    }
}
