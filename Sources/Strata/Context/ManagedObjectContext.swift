internal import Foundation
internal import Synchronization
internal import StrataSQLite

/// A scratch pad of objects: insert, change and delete them, fetch with pending changes included,
/// then `save()` or `rollback()`.
///
/// A *root* context (``StoreCoordinator/newContext(name:)``) saves to the store. A *child* context
/// (``newChildContext(name:)``) reads through its parent, sees the parent's pending changes, and
/// saves into the parent's memory only; ``saveToStore()`` saves the whole chain.
///
/// Every context runs on its own serial queue. Use it inside ``performAndWait(_:)`` (re-entrant)
/// or ``perform(_:)`` (async); touching it or its objects from elsewhere stops with a precondition
/// failure that says so. ``ObjectID``s cross contexts; objects do not.
///
/// ```swift
/// let context = coordinator.newContext()
/// try context.performAndWait {
///     let good = try context.insert("Good")
///     try good.setValue("Apple", forKey: "name")
///     try context.save()          // one BEGIN IMMEDIATE … COMMIT; generation + 1
/// }
/// ```
// Every plain mutable property is read and written only by code running on `queue` (checked by
// `assertOnQueue()` at every entry point); `link` (its owner), `mergesFromParent` and `hasListeners` are
// atomics; `children` and `listeners` are behind locks.
// @unchecked because: queue confinement, atomics and locks, as above, not the compiler, make it safe.
public final class ManagedObjectContext: @unchecked Sendable {
    public let coordinator: StoreCoordinator
    /// The context this one saves into; `nil` for a root context, which saves to the store.
    public let parent: ManagedObjectContext?
    /// The root of this context's tree (itself for a root).
    var root: ManagedObjectContext { parent?.root ?? self }
    /// A name for logs and debugging.
    public let name: String?

    let queue: DispatchQueue
    /// Queue owner and liveness, shared with this context's objects.
    let link = ContextLink()

    // Unchecked exclusivity: touched once or twice per object inserted, fetched or saved, only
    // on the context's queue, and never held inout across a call that touches them again.
    @exclusivity(unchecked) var registered = ObjectTable()
    @exclusivity(unchecked) var inserted = ObjectTable()
    @exclusivity(unchecked) var updated = ObjectTable()
    @exclusivity(unchecked) var deleted = ObjectTable()
    /// Objects with pending changes whose row another connection deleted (learnt from
    /// ``StoreCoordinator/processExternalChanges()``): a rollback removes them instead of bringing
    /// back values no row holds.
    var goneElsewhere = Set<ObjectID>()
    /// The listener that tells objects' observers of changes no setter made (made with the
    /// first object an `@Entity` property read gave a registrar: `startObservingObjects`).
    var objectObservation: ContextObservation?
    /// Observed objects whose to-many relationships a merge changed (a member joined or left
    /// elsewhere), and those relationships' names: told with the merge's objects-did-change.
    var toManyObservationQueue: [(ManagedObject, [String])] = []
    /// Objects with pending changes under which a merge brought a newer row, while the merge
    /// policy leaves the conflict to the save: the row the changes were made over, which the save
    /// checks against the store (or the parent) instead of the merged one. Emptied with the
    /// pending changes (a save, a rollback, a refresh). See `mergeUnderPendingChanges(_:_:)`.
    var conflictBases: [ObjectID: RowSnapshot] = [:]

    var policy: MergePolicy = .error
    var uniqueKeyResolution: UniqueKeyConflictResolution = .upsert
    /// ``transactionAuthor``, behind its own lock: set from any thread, as Core Data's is set
    /// on a view context from the main thread right after making it.
    private let authorStorage = Locked<String?>(nil)
    var author: String? { authorStorage.withLock { $0 } }
    let mergesFromParent = Atomic<Bool>(false)
    let children = Locked<[WeakContext]>([])
    let listeners = Locked(ContextListeners())
    let hasListeners = Atomic<Bool>(false)
    var localChanges = ObjectChanges()
    private var lastInserted: EntityInfo?

    init(coordinator: StoreCoordinator, parent: ManagedObjectContext?, name: String?) {
        self.coordinator = coordinator
        self.parent = parent
        self.name = name
        queue = DispatchQueue(label: "strata.context.\(name ?? "unnamed")")
        link.attach(self)
        coordinator.contexts.register(self)
    }

    deinit { link.detach() }

    /// A new context whose parent is this one: it reads through this context (seeing its pending
    /// changes) and its `save()` pushes into this context's memory without touching the store.
    public func newChildContext(name: String? = nil) -> ManagedObjectContext {
        let child = ManagedObjectContext(coordinator: coordinator, parent: self, name: name)
        children.withLock { list in
            list.removeAll { $0.context == nil }
            list.append(WeakContext(context: child))
        }
        return child
    }

    /// What a save does when another context changed an object since this one read it. Default
    /// ``MergePolicy/error``.
    public var mergePolicy: MergePolicy {
        get { assertOnQueue(); return policy }
        set { assertOnQueue(); policy = newValue }
    }

    /// The author the store's history records for this context's commits (Core Data's
    /// `transactionAuthor`; settable from any thread): ``HistoryTransaction/author``, and what
    /// ``StoreCoordinator/history(after:author:limit:includingRowValues:)`` filters on. ``saveToStore()`` records the
    /// author of the context it is called on, else of the nearest ancestor that has one; a
    /// child's plain ``save()`` records nothing itself (its changes are recorded by the save
    /// that commits them, with that save's author).
    public var transactionAuthor: String? {
        get { author }
        set { authorStorage.withLock { $0 = newValue } }
    }

    /// Sync bookkeeping (key → value) that this root context's next commit writes with its rows,
    /// in the same transaction (a commit that writes some also clears the before-images of
    /// ``StoreCoordinator/installSyncCapture()``); emptied by a save that commits. Use on the
    /// context's queue.
    @_spi(StrataSync)
    public var syncStateForNextCommit: [String: String] = [:]

    /// The store generation this root context's next commit requires: the commit throws
    /// ``StoreMovedError`` (and writes nothing) when any commit landed since. `nil`: none.
    /// Emptied by a save that commits.
    @_spi(StrataSync)
    public var requiredGenerationForNextCommit: Int64?

    /// When true, this context merges what others save: for a root context, every save of another
    /// root context on the same coordinator; for a child, every change its parent receives from a
    /// merge or from another child's save. Merges run asynchronously on this context's queue, in
    /// save order; they never need the main queue. Default `false`, as in Core Data.
    public var automaticallyMergesChangesFromParent: Bool {
        get { mergesFromParent.load(ordering: .acquiring) }
        set {
            mergesFromParent.store(newValue, ordering: .releasing)
            if parent == nil, newValue { coordinator.contexts.registerMergingRoot(self) }
        }
    }

    var schema: Schema { coordinator.model.schema }

    // MARK: Queue confinement

    /// True when the caller runs on this context's queue (inside `perform`/`performAndWait`).
    public var isOnQueue: Bool { link.isOnQueue }

    func assertOnQueue(_ function: StaticString = #function) {
        precondition(isOnQueue, "ManagedObjectContext.\(function) called off the context's queue: wrap the call in context.performAndWait { … } or await context.perform { … }.")
    }

    /// Runs `body` on the context's queue and waits for it. Re-entrant: called from the context's
    /// own queue it runs `body` at once.
    ///
    /// Local changes made inside are reported (one objects-did-change) when the outermost block ends.
    /// The result may be ignored (`context.performAndWait { try context.save() }` needs no `_ =`).
    @discardableResult
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue { return try body() }
        return try queue.sync {
            let previous = link.owner.exchange(ContextLink.currentThread(), ordering: .acquiringAndReleasing)
            defer {
                if !localChanges.isEmpty { processPendingChanges() }
                link.owner.store(previous, ordering: .releasing)
            }
            return try body()
        }
    }

    /// Runs `body` on the context's queue and returns its result, which may be ignored.
    @discardableResult
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the context's queue later, as a `perform` block.
    func enqueue(_ body: @escaping @Sendable () -> Void) {
        queue.async {
            let previous = self.link.owner.exchange(ContextLink.currentThread(), ordering: .acquiringAndReleasing)
            defer {
                if !self.localChanges.isEmpty { self.processPendingChanges() }
                self.link.owner.store(previous, ordering: .releasing)
            }
            body()
        }
    }

    // MARK: Registry

    /// Every object the context holds.
    public var registeredObjects: Set<ManagedObject> { assertOnQueue(); return Set(registered.values) }
    public var insertedObjects: Set<ManagedObject> { assertOnQueue(); return Set(inserted.values) }
    public var updatedObjects: Set<ManagedObject> { assertOnQueue(); return Set(updated.values.filter(hasPendingDifference)) }
    public var deletedObjects: Set<ManagedObject> { assertOnQueue(); return Set(deleted.values) }

    /// True when a save would write something.
    public var hasChanges: Bool {
        assertOnQueue()
        return !inserted.isEmpty || !deleted.isEmpty || updated.values.contains(where: hasPendingDifference)
    }

    func hasPendingDifference(_ object: ManagedObject) -> Bool {
        object.current != object.committed || object.toMany.contains(where: \.hasChanges)
            || (!conflictBases.isEmpty && conflictBases[object.objectID] != nil)
    }

    /// The row a save checks `object`'s pending changes against: the one they were made over.
    func original(of object: ManagedObject) -> RowSnapshot? {
        if !conflictBases.isEmpty, let base = conflictBases[object.objectID] { return base }
        return object.committed
    }

    /// `info(_:)` for inserts, remembering the last entity: a loop inserting one entity compares
    /// one name instead of hashing it per object.
    private func insertInfo(_ entityName: String) throws -> EntityInfo {
        if let last = lastInserted, last.name == entityName { return last }
        let found = try info(entityName)
        lastInserted = found
        return found
    }

    func info(_ entityName: String) throws -> EntityInfo {
        guard let info = schema.infos[entityName] else { throw ObjectError.unknownEntity(entityName) }
        return info
    }

    /// Inserts a new object of `entityName` with the model's defaults. Its ID is permanent at once.
    @discardableResult
    public func insert(_ entityName: String) throws -> ManagedObject {
        assertOnQueue()
        let info = try insertInfo(entityName)
        let id = ObjectID(entity: info.internedName, primaryKey: try coordinator.reservePrimaryKey(for: info))
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: nil, isNew: true))
        registered[id] = object
        inserted[id] = object
        noteLocal(id, \.inserted)
        return object
    }

    /// Inserts a new object of the entity whose class is `type` (or of `entityName`), typed.
    /// The class is checked before anything is registered: a wrong one throws and leaves the
    /// context as it was.
    public func insert<T: ManagedObject>(_ type: T.Type, entity entityName: String? = nil) throws -> T {
        assertOnQueue()
        let name = try entityName ?? self.entityName(for: type)
        let managedClass = try insertInfo(name).entity.managedClass
        guard managedClass is T.Type else {
            throw ObjectError.wrongType(entity: name, key: "class", expected: "\(type)", actual: "\(managedClass)")
        }
        // The class was checked: the cast cannot fail.
        return try insert(name) as! T
    }

    /// Reads the rows of the faults among `objects` now (in one statement per entity for a root
    /// context), so that their properties can be read without stopping (see
    /// ``ManagedObject/load()``).
    ///
    /// - Throws: the first error a row's read gives: ``ObjectError/objectNotFound(_:)`` for a row
    ///   that no longer exists, ``StoreError/corruptPage(path:page:)``, an I/O error.
    public func fulfill(_ objects: some Sequence<ManagedObject>) throws {
        assertOnQueue()
        for object in objects {
            precondition(object.context === self, "fulfill(_:) was given an object of another context: pass context.object(with: object.objectID) instead.")
            try object.load()
        }
    }

    func entityName(for type: ManagedObject.Type) throws -> String {
        let matches = coordinator.model.entities.filter { ObjectIdentifier($0.managedClass) == ObjectIdentifier(type) }
        guard matches.count == 1 else { throw ObjectError.unknownEntity("(class \(type))") }
        return matches[0].name
    }

    /// The object for `id` in this context: the registered one, or a fault that reads its row on
    /// first access. Does no I/O.
    public func object(with id: ObjectID) throws -> ManagedObject {
        assertOnQueue()
        if let object = registered[id] { return object }
        let info = try info(id.entityName)
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: nil, isNew: false))
        registered[id] = object
        return object
    }

    /// The object for `id`, its row read now. Throws ``ObjectError/objectNotFound(_:)`` when the
    /// store has no such row (or this context deleted it).
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        let wasRegistered = registered[id] != nil
        let object = try object(with: id)
        if object.state == .deleted { throw ObjectError.objectNotFound(id) }
        do {
            try fulfill(object)
        } catch {
            // Leave no fault behind for a row that does not exist.
            if !wasRegistered {
                registered[id] = nil
                object.state = .invalid
            }
            throw error
        }
        return object
    }

    /// The object for `id` as its typed class (`try context.existingObject(with: id, as: Good.self)`),
    /// its row read now, as SwiftData's `model(for:)` with the type checked.
    ///
    /// - Throws: ``ObjectError/objectNotFound(_:)`` as ``existingObject(with:)``, and
    ///   ``ObjectError/wrongType(entity:key:expected:actual:)`` when the entity's class is not `T`.
    public func existingObject<T: ManagedObject>(with id: ObjectID, as type: T.Type) throws -> T {
        let object = try existingObject(with: id)
        guard let typed = object as? T else {
            throw ObjectError.wrongType(entity: id.entityName, key: "class", expected: "\(T.self)", actual: "\(Swift.type(of: object))")
        }
        return typed
    }

    /// Reads a fault's row: from the parent context for a child, from the store for a root.
    @inline(__always)
    func fulfill(_ object: ManagedObject) throws {
        if object.isFault { try fulfillFault(object) }
    }

    /// ``fulfill(_:)``'s slow path, out of line: every attribute write and read of a live
    /// object calls `fulfill` (an import's 30,000 flights, 20 times each).
    private func fulfillFault(_ object: ManagedObject) throws {
        guard let row = try parentRow(for: object.objectID) else { throw ObjectError.objectNotFound(object.objectID) }
        object.load(row)
    }

    /// Registers `row` as object `key` of `info`: an unchanged registered object takes the fresher
    /// values; one with pending changes keeps them.
    func register(_ info: EntityInfo, _ key: Int64, _ row: RowSnapshot) -> ManagedObject {
        let id = ObjectID(entity: info.internedName, primaryKey: key)
        if let object = registered[id] {
            if object.isFault || object.state == .clean {
                object.load(row)
            }
            return object
        }
        return registerNew(info, id, row)
    }

    /// Registers a row whose object is known not to be registered (the caller checked).
    /// `consuming`: a fetch's row moves into the object, where a borrowed one was retained for
    /// the object and released by its owner after (callgrind).
    @inline(__always)
    func registerNew(_ info: EntityInfo, _ id: ObjectID, _ row: consuming RowSnapshot) -> ManagedObject {
        let object = makeObject(info, id, consume row)
        registered[id] = object
        return object
    }

    /// The object of a stored row, not registered yet: the caller registers it at once
    /// (``ObjectTable/insertNew(_:)`` for many).
    @inline(__always)
    func makeObject(_ info: EntityInfo, _ id: ObjectID, _ row: consuming RowSnapshot) -> ManagedObject {
        info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: consume row, isNew: false))
    }

    // MARK: Rollback and reset

    /// Discards every pending change: inserted objects leave the context, changed and deleted
    /// ones return to the values the level above holds now (read again, in one read per entity),
    /// and an object whose row is gone by now leaves the context.
    ///
    /// Children that merge automatically hear of it as of any change of this context's values:
    /// their unchanged objects take the values back, objects this context had from them (a
    /// child's save) return, leave or come back with them, so that no list of a child keeps a
    /// row that is not there.
    public func rollback() {
        assertOnQueue()
        var changes = ObjectChanges(deleted: Set(inserted.keys), refreshed: Set(updated.keys).union(deleted.keys))
        // Objects inserted and deleted again since the last report left no trace in the context;
        // their insert may have been reported, so their end is reported too.
        for id in localChanges.deleted where registered[id] == nil && deleted[id] == nil { changes.deleted.insert(id) }
        var forwarded = RowChanges()
        for object in inserted.values {
            object.state = .invalid
            registered[object.objectID] = nil
            forwarded.deleted.insert(object.objectID)
        }
        var removed = inserted
        let reverted = Array(updated.values) + Array(deleted.values)
        // What the level above holds now. A read that fails leaves the saved snapshots in use.
        let current = (try? parentRows(for: reverted.filter { !goneElsewhere.contains($0.objectID) }.map(\.objectID)))
        for object in reverted where goneElsewhere.contains(object.objectID) || (current != nil && current?[object.objectID] == nil) {
            invalidate(object, into: &changes, removed: &removed)
            forwarded.deleted.insert(object.objectID)
        }
        goneElsewhere = []
        conflictBases = [:]
        for object in reverted where object.state != .invalid {
            let wasDeleted = object.state == .deleted
            if let row = current?[object.objectID] {
                object.current = row
                object.committed = row
            } else if let committed = object.committed {
                object.current = committed
            }
            for index in object.toMany.indices {
                object.toMany[index].added = []
                object.toMany[index].removed = []
                object.toMany[index].committed = nil
            }
            object.state = .clean
            registered[object.objectID] = object
            if wasDeleted { forwarded.inserted.append((object.objectID, object.current)) } else { forwarded.updated.append((object.objectID, object.current)) }
            forwarded.toManyTouched.insert(object.objectID)
        }
        inserted = [:]
        updated = [:]
        deleted = [:]
        localChanges = ObjectChanges()
        changes.refreshed.subtract(changes.deleted)
        if !changes.isEmpty { post(.objectsDidChange(changes), removed: removed) }
        forward(forwarded, except: nil)
    }

    /// Forgets every object, changed or not. Objects held elsewhere become unusable. Posts
    /// ``ContextEvent/reload(_:)`` with ``ReloadReason/reset``: observers start over from a fetch.
    public func reset() {
        assertOnQueue()
        dropAllObjects(.reset)
    }

    /// The store under the coordinator was replaced: every object goes, pending changes included.
    func storeWasReplaced() { dropAllObjects(.storeReplaced) }

    /// Forgets every object, pending changes included, and posts a reload event.
    private func dropAllObjects(_ reason: ReloadReason) {
        for object in registered.values { object.state = .invalid }
        registered = [:]
        inserted = [:]
        updated = [:]
        deleted = [:]
        goneElsewhere = []
        conflictBases = [:]
        localChanges = ObjectChanges()
        post(.reload(reason))
    }
}
