internal import Foundation
internal import Synchronization
internal import StrataSQLite

/// A scratch pad of objects: insert, change and delete them, fetch with pending changes included,
/// then `save()` or `rollback()`.
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
// @unchecked because: every mutable property is read and written only by code running on
// `queue` (checked by `assertOnQueue()` at every entry point); `owner` is an atomic.
public final class ManagedObjectContext: @unchecked Sendable {
    public let coordinator: StoreCoordinator
    /// A name for logs and debugging.
    public let name: String?

    let queue: DispatchQueue
    private let owner = Atomic<UInt>(0)

    var registered: [ObjectID: ManagedObject] = [:]
    var inserted: [ObjectID: ManagedObject] = [:]
    var updated: [ObjectID: ManagedObject] = [:]
    var deleted: [ObjectID: ManagedObject] = [:]

    init(coordinator: StoreCoordinator, name: String?) {
        self.coordinator = coordinator
        self.name = name
        queue = DispatchQueue(label: "strata.context.\(name ?? "unnamed")")
    }

    var schema: Schema { coordinator.model.schema }

    // MARK: Queue confinement

    private static func currentThread() -> UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }

    /// True when the caller runs on this context's queue (inside `perform`/`performAndWait`).
    public var isOnQueue: Bool { owner.load(ordering: .acquiring) == Self.currentThread() }

    func assertOnQueue(_ function: StaticString = #function) {
        precondition(isOnQueue, "ManagedObjectContext.\(function) called off the context's queue: wrap the call in context.performAndWait { … } or await context.perform { … }.")
    }

    /// Runs `body` on the context's queue and waits for it. Re-entrant: called from the context's
    /// own queue it runs `body` at once.
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue { return try body() }
        return try queue.sync {
            let previous = owner.exchange(Self.currentThread(), ordering: .acquiringAndReleasing)
            defer { owner.store(previous, ordering: .releasing) }
            return try body()
        }
    }

    /// Runs `body` on the context's queue and returns its result.
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let previous = self.owner.exchange(Self.currentThread(), ordering: .acquiringAndReleasing)
                defer { self.owner.store(previous, ordering: .releasing) }
                continuation.resume(with: Result { try body() })
            }
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
    }

    func info(_ entityName: String) throws -> EntityInfo {
        guard let info = schema.infos[entityName] else { throw ObjectError.unknownEntity(entityName) }
        return info
    }

    /// Inserts a new object of `entityName` with the model's defaults. Its ID is permanent at once.
    @discardableResult
    public func insert(_ entityName: String) throws -> ManagedObject {
        assertOnQueue()
        let info = try info(entityName)
        let id = ObjectID(entityName: entityName, primaryKey: try coordinator.reservePrimaryKey(for: entityName))
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, context: self, row: nil, isNew: true))
        registered[id] = object
        inserted[id] = object
        return object
    }

    /// Inserts a new object of the entity whose class is `type` (or of `entityName`), typed.
    public func insert<T: ManagedObject>(_ type: T.Type, entity entityName: String? = nil) throws -> T {
        let name = try entityName ?? self.entityName(for: type)
        guard let object = try insert(name) as? T else {
            throw ObjectError.wrongType(entity: name, key: "class", expected: "\(type)", actual: "\(try info(name).entity.managedClass)")
        }
        return object
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
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, context: self, row: nil, isNew: false))
        registered[id] = object
        return object
    }

    /// The object for `id`, its row read now. Throws ``ObjectError/objectNotFound(_:)`` when the
    /// store has no such row (or this context deleted it).
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        let object = try object(with: id)
        if object.state == .deleted { throw ObjectError.objectNotFound(id) }
        try fulfill(object)
        return object
    }

    /// Reads a fault's row.
    func fulfill(_ object: ManagedObject) throws {
        guard object.isFault else { return }
        let info = object.info
        let row: RowSnapshot? = try coordinator.withConnection { db in
            let statement = try db.cachedStatement(info.selectSQL + " WHERE \(quoted(primaryKeyColumn)) = ?")
            try statement.bind(object.objectID.primaryKey, at: 1)
            defer { statement.reset() }
            return try statement.step() ? RowSnapshot(statement: statement, info: info) : nil
        }
        guard let row else { throw ObjectError.objectNotFound(object.objectID) }
        object.current = row
        object.committed = row
        object.isFault = false
    }

    /// Registers `row` as object `key` of `info`: an unchanged registered object takes the fresher
    /// values; one with pending changes keeps them.
    func register(_ info: EntityInfo, _ key: Int64, _ row: RowSnapshot) -> ManagedObject {
        let id = ObjectID(entityName: info.name, primaryKey: key)
        if let object = registered[id] {
            if object.isFault || object.state == .clean {
                object.current = row
                object.committed = row
                object.isFault = false
            }
            return object
        }
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, context: self, row: row, isNew: false))
        registered[id] = object
        return object
    }

    // MARK: Rollback and reset

    /// Discards every pending change: inserted objects leave the context, changed and deleted
    /// ones return to their last saved values.
    public func rollback() {
        assertOnQueue()
        for object in inserted.values {
            object.state = .invalid
            registered[object.objectID] = nil
        }
        for object in Array(updated.values) + Array(deleted.values) {
            if let committed = object.committed { object.current = committed }
            for index in object.toMany.indices {
                object.toMany[index].added = []
                object.toMany[index].removed = []
            }
            object.state = .clean
        }
        inserted = [:]
        updated = [:]
        deleted = [:]
    }

    /// Forgets every object, changed or not. Objects held elsewhere become unusable.
    public func reset() {
        assertOnQueue()
        for object in registered.values { object.state = .invalid }
        registered = [:]
        inserted = [:]
        updated = [:]
        deleted = [:]
    }
}
