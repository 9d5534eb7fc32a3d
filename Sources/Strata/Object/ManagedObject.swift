internal import Foundation

/// An object of the graph: one row of an entity, confined to the context that registered it.
///
/// Use it dynamically (`value(forKey:)`, `setValue(_:forKey:)`) or subclass it for typed properties:
///
/// ```swift
/// final class Good: ManagedObject {
///     var name: String {
///         get { self[attribute: "name"] ?? "" }
///         set { self[attribute: "name"] = newValue }
///     }
///     var category: Category? {
///         get { self[toOne: "category"] }
///         set { self[toOne: "category"] = newValue }
///     }
/// }
/// // and name the class in the model: Entity("Good", class: Good.self, attributes: …)
/// ```
///
/// The `@Entity` macro writes those accessors and the entity from the stored properties:
/// `@Entity final class Good: ManagedObject { var name: String; var category: Category? }`.
///
/// Objects are not `Sendable`: pass ``objectID`` between contexts instead. Touching an object
/// off its context's queue is a programmer error and stops with a precondition failure.
open class ManagedObject: Hashable, CustomStringConvertible {
    /// The permanent identity of the object: its entity's name and primary key.
    // Made on demand rather than stored: the entity's name is `info.name`, and an object without
    // the name's 16 bytes is one malloc size class smaller (96 bytes, not 112), 16 bytes less
    // for every object an import holds.
    public var objectID: ObjectID { ObjectID(entity: info.internedName, primaryKey: primaryKey) }
    /// The object's primary key in its entity's table. Changed only by a save that makes an
    /// inserted object the stored row holding its unique key (`adoptUniqueKeyHolders`).
    var primaryKey: Int64
    @usableFromInline let info: EntityInfo
    /// The way to the context: shared by all its objects, held strongly (see ``ContextLink``).
    @usableFromInline let link: ContextLink
    /// The context, or `nil` once it was released.
    var context: ManagedObjectContext? { link.context }

    // `@exclusivity(unchecked)`: these are read or written on every attribute access, and
    // Swift's dynamic exclusivity check on a class property costs as much as the access itself.
    // It is safe: an object is confined to its context's queue (checked on every public entry
    // point), and no code here holds an inout access to one of them across a call that could
    // touch the same object again.

    /// Values as this context sees them now (pending changes included). Valid when not a fault.
    @usableFromInline @exclusivity(unchecked) final var current: RowSnapshot
    /// Values as last read from or written to the parent store; `nil` for a new object.
    @exclusivity(unchecked) var committed: RowSnapshot?
    @exclusivity(unchecked) var toMany: [ToManyState]
    /// The object's `Observation` registrar and the values its observers last heard of: made on
    /// the first read of an `@Entity` property in a context that ``ManagedObjectContext/observesObjects``
    /// (see `ManagedObject+Observation.swift`). `nil` for every object nobody read that way.
    @usableFromInline @exclusivity(unchecked) final var observationBox: ObservationBox?
    /// True until the row is read from the store on first access.
    @exclusivity(unchecked) public internal(set) final var isFault: Bool
    @usableFromInline @exclusivity(unchecked) final var state: LifecycleState = .clean

    @usableFromInline enum LifecycleState { case clean, inserted, updated, deleted, invalid }

    /// Everything an object is created with; made by the context only.
    public struct Creation {
        // `unowned(unsafe)`: a creation lives only for the initialiser call it is made for, and
        // only the context makes one, from an entity description and a link it holds itself for
        // that call. The object takes its own strong references; the creation takes none, so
        // making and dropping it costs no atomic reference count (two fewer retains and releases
        // per object fetched or inserted).
        unowned(unsafe) let info: EntityInfo
        let id: ObjectID
        unowned(unsafe) let link: ContextLink
        let row: RowSnapshot?
        let isNew: Bool
    }

    /// Called by the context. Subclasses must not declare other designated initialisers
    /// (they inherit this one), and never call it themselves: insert through the context.
    public required init(_ creation: Creation) {
        info = creation.info
        assert(creation.id.entityName == creation.info.name, "an object's ID names its own entity")
        primaryKey = creation.id.primaryKey
        link = creation.link
        // No call into `Array(repeating:count:)` for the many entities without to-manys (see
        // `RowSnapshot.init(defaultsOf:)` on what that call costs).
        let toManyCount = creation.info.toManys.count
        toMany = toManyCount == 0 ? [] : Array(repeating: ToManyState(), count: toManyCount)
        if creation.isNew {
            current = RowSnapshot(defaultsOf: creation.info)
            committed = nil
            isFault = false
            state = .inserted
            for index in toMany.indices { toMany[index].committed = [] }
        } else if let row = creation.row {
            current = row
            committed = row
            isFault = false
        } else {
            current = .empty
            committed = nil
            isFault = true
        }
    }

    /// Tells the observers of property `name` that it changes (`willSet`) or changed (`didSet`).
    /// `@Entity` overrides it with a case for each persistent property (the base class knows
    /// none); not for calling: a context calls it when it hears of a change that no setter made.
    open func _notifyObservers(of name: String, willSet: Bool) {}

    /// The entity's name.
    public var entityName: String { info.name }
    /// The entity description.
    public var entity: Entity { info.entity }
    /// The context the object lives in; `nil` once deleted and saved, rolled back out, or reset.
    public var managedObjectContext: ManagedObjectContext? { state == .invalid ? nil : context }
    public var isInserted: Bool { state == .inserted }
    public var isDeleted: Bool { state == .deleted }
    public var isUpdated: Bool { state == .updated }
    /// True when the object has unsaved changes (inserted, updated or deleted).
    public var hasChanges: Bool { state == .inserted || state == .deleted || state == .updated }

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    open var description: String {
        guard !isFault else { return "<\(objectID) fault>" }
        let values = info.attributes.indices.map { "\(info.attributes[$0].name)=\(current.attributes[$0].map { "\($0)" } ?? "nil")" }
        return "<\(objectID) \(values.joined(separator: " "))>"
    }

    // MARK: Loading

    /// Reads the object's row now if it is a fault, so that its properties can be read without
    /// stopping: a typed property (an `@Entity` property, `self[attribute:]`, `self[toOne:]`)
    /// whose fault cannot be fulfilled stops with a precondition failure, as Core Data's "could
    /// not fulfill a fault" does, where this throws the error. Does nothing for an object that
    /// is no fault.
    ///
    /// - Throws: ``ObjectError/objectNotFound(_:)`` when the row no longer exists (deleted by
    ///   another context, a batch request or another process), ``StoreError/corruptPage(path:page:)``
    ///   for a page that fails its checksum, ``StoreError/closed(path:)`` when the coordinator was
    ///   closed, ``StoreError/sqlite(_:)`` for an I/O error.
    public func load() throws {
        checkAccess()
        guard isFault else { return }
        try link.withContext { context in
            if context.coordinator.isClosed { throw StoreError.closed(path: context.coordinator.url?.path ?? ":memory:") }
            try context.fulfill(self)
        }
    }

    // MARK: Dynamic access

    /// The value of an attribute (`Int16`, `String`, `Date`, …), a to-one destination
    /// (`ManagedObject?`) or a to-many relationship (`Set<ManagedObject>`).
    ///
    /// - Throws: ``ObjectError/unknownKey(entity:key:)`` for a key the entity lacks,
    ///   ``ObjectError/objectNotFound(_:)`` when the object's row no longer exists.
    public func value(forKey key: String) throws -> Any? {
        checkAccess()
        guard let slot = info.slot(key) else { throw ObjectError.unknownKey(entity: info.name, key: key) }
        if isFault { try link.withContext { try $0.fulfill(self) } }
        switch slot {
        case .attribute(let index): return current.attribute(index)?.swiftValue
        case .toOne(let index): return try link.withContext { try $0.toOneObject(self, index) }
        case .toMany(let index): return try link.withContext { try $0.toManyObjects(self, index) }
        }
    }

    /// Sets an attribute (a Swift value of the attribute's type, or `nil`), a to-one relationship (a
    /// ``ManagedObject`` of the destination entity in the same context, or `nil`) or a to-many
    /// relationship (a `Set` or array of such objects). Inverse relationships are kept in step.
    ///
    /// - Throws: ``ObjectError/unknownKey(entity:key:)``, ``ObjectError/wrongType(entity:key:expected:actual:)``,
    ///   ``ObjectError/invalidValue(entity:key:reason:)`` (NaN, out of range for `Int16`/`Int32`),
    ///   ``ObjectError/objectInAnotherContext(entity:key:)``. Nothing changes when it throws.
    public func setValue(_ value: Any?, forKey key: String) throws {
        checkAccess()
        guard let slot = info.slot(key) else { throw ObjectError.unknownKey(entity: info.name, key: key) }
        try link.withContext { try set(value, forKey: key, slot: slot, in: $0) }
    }

    private func set(_ value: Any?, forKey key: String, slot: Slot, in context: ManagedObjectContext) throws {
        try context.fulfill(self)
        switch slot {
        case .attribute(let index):
            try context.setAttribute(self, index, try convertAttribute(value, index: index))
        case .toOne(let index):
            try context.setToOne(self, index, try destinationObject(value, key: key, entity: info.toOnes[index].destination))
        case .toMany(let index):
            let destination = info.toManys[index].destination
            let objects: [ManagedObject]
            switch value {
            case nil: objects = []
            case let set as Set<ManagedObject>: objects = Array(set)
            case let array as [ManagedObject]: objects = array
            case let sequence as any Sequence:
                objects = try sequence.map {
                    guard let object = $0 as? ManagedObject else {
                        throw ObjectError.wrongType(entity: info.name, key: key, expected: "a set of \(destination)", actual: "\(type(of: value!))")
                    }
                    return object
                }
            default:
                throw ObjectError.wrongType(entity: info.name, key: key, expected: "a set of \(destination)", actual: "\(type(of: value!))")
            }
            for object in objects { _ = try destinationObject(object, key: key, entity: destination) }
            try context.setToMany(self, index, objects)
        }
    }

    func convertAttribute(_ value: Any?, index: Int) throws -> AttributeValue? {
        guard let value else { return nil }
        guard let converted = AttributeValue.convert(value, to: info.attributeTypes[index]) else {
            if value is NSNull { return nil }
            let attribute = info.attributes[index]
            if AttributeValue.convert(value, to: .int64) != nil, [.int16, .int32].contains(attribute.type) {
                throw ObjectError.invalidValue(entity: info.name, key: attribute.name, reason: "\(value) is out of range for \(attribute.type)")
            }
            throw ObjectError.wrongType(entity: info.name, key: attribute.name, expected: attribute.type.rawValue, actual: "\(type(of: value))")
        }
        if case .double(let v) = converted, v.isNaN { throw nanError(info.attributes[index]) }
        if case .float(let v) = converted, v.isNaN { throw nanError(info.attributes[index]) }
        return converted
    }

    private func nanError(_ attribute: Attribute) -> ObjectError {
        .invalidValue(entity: info.name, key: attribute.name, reason: "NaN cannot be stored (SQLite stores NaN as NULL)")
    }

    func destinationObject(_ value: Any?, key: String, entity: String) throws -> ManagedObject? {
        guard let value else { return nil }
        guard let object = value as? ManagedObject else {
            throw ObjectError.wrongType(entity: info.name, key: key, expected: entity, actual: "\(type(of: value))")
        }
        return try destinationObject(object, key: key, entity: entity)
    }

    /// `object`, checked to be of `entity` and usable from this object's context.
    func destinationObject(_ object: ManagedObject, key: String, entity: String) throws -> ManagedObject {
        guard object.info.name == entity else {
            throw ObjectError.wrongType(entity: info.name, key: key, expected: entity, actual: "\(type(of: object))")
        }
        guard object.link === link, object.state != .invalid else {
            throw ObjectError.objectInAnotherContext(entity: info.name, key: key)
        }
        return object
    }

    /// Stops with a precondition failure unless the object is usable here: still in a live
    /// context, and touched on that context's queue. No reference counting (the read path).
    @inline(__always)
    func checkAccess(_ function: StaticString = #function) {
        guard state != .invalid, link.isAlive else { noLongerInAContext() }
        guard link.isOnQueue else { offQueue(function) }
    }

    private func noLongerInAContext() -> Never {
        preconditionFailure("\(objectID) is no longer in a context (deleted and saved, rolled back, reset, or its context was released); fetch it again with context.object(with:).")
    }

    private func offQueue(_ function: StaticString) -> Never {
        preconditionFailure("ManagedObject.\(function) called off its context's queue: wrap the call in context.performAndWait { … } or await context.perform { … }.")
    }
}

extension ManagedObject {
    /// The to-many members as they are now become the committed ones.
    func acceptToManyChanges() {
        for index in toMany.indices where toMany[index].hasChanges { toMany[index].acceptChanges() }
    }

    /// Takes `row` as both the current and the saved values: the object is no longer a fault.
    func load(_ row: RowSnapshot) {
        current = row
        committed = row
        isFault = false
    }

    /// Forgets the values and the to-many members: everything is read again on next access.
    func turnIntoFault() {
        isFault = true
        committed = nil
        resetToMany()
    }

    /// Forgets the to-many members: they are read again on next use.
    func resetToMany() {
        for index in toMany.indices { toMany[index] = ToManyState() }
    }
}

/// A to-many relationship's value: the stored set (loaded on first use) plus pending changes.
///
/// Keys added while nothing is committed or removed (a new object's inverse to-manys: the import
/// case, where every new flight joins its airline's `flights`) are appended to `appended` without
/// hashing, and folded into the set when anything else reads or changes the relationship.
struct ToManyState {
    var committed: Set<Int64>?
    private var addedSet: Set<Int64> = []
    /// Added keys not yet in `addedSet` (may repeat); only ever non-empty while `removed` is empty
    /// and `committed` is nil or empty.
    private var appended: [Int64] = []
    var removed: Set<Int64> = []

    init(committed: Set<Int64>? = nil) { self.committed = committed }

    var added: Set<Int64> {
        get { appended.isEmpty ? addedSet : addedSet.union(appended) }
        set {
            addedSet = newValue
            appended = []
        }
    }

    var hasChanges: Bool { !addedSet.isEmpty || !appended.isEmpty || !removed.isEmpty }

    private mutating func fold() {
        guard !appended.isEmpty else { return }
        addedSet.formUnion(appended)
        appended = []
    }

    // Empty sets are checked first: a lookup hashes the key even in an empty set.
    mutating func add(_ key: Int64) {
        if removed.isEmpty, committed?.isEmpty ?? true {
            appended.append(key)
            return
        }
        fold()
        if !removed.isEmpty, removed.remove(key) != nil { return }
        if let committed, !committed.isEmpty, committed.contains(key) { return }
        addedSet.insert(key)
    }

    mutating func remove(_ key: Int64) {
        fold()
        if !addedSet.isEmpty, addedSet.remove(key) != nil { return }
        removed.insert(key)
    }

    func value(committed: Set<Int64>) -> Set<Int64> { committed.union(added).subtracting(removed) }

    /// Drops `keys` (rows gone elsewhere) from the members, saved and pending alike. True when
    /// any was a member.
    mutating func forget(_ keys: Set<Int64>) -> Bool {
        fold()
        var found = false
        if committed?.isDisjoint(with: keys) == false {
            committed?.subtract(keys)
            found = true
        }
        if !addedSet.isDisjoint(with: keys) {
            addedSet.subtract(keys)
            found = true
        }
        removed.subtract(keys)
        return found
    }

    /// The members as they are now become the committed ones (after a save).
    ///
    /// Only additions to a relationship with no known members (a new object's inverse to-many:
    /// every flight of an import joining its airline's `flights`) leave it unloaded instead: it is
    /// read again on next use, from the level the save reached. Building a set of every added key
    /// here was 9% of an import's save (callgrind: 336 M of 3,729 M instructions); most such sets
    /// are never read. Otherwise the set is changed in place, in the time of the changes, not of
    /// the relationship's size.
    mutating func acceptChanges() {
        guard var members = committed, !members.isEmpty || !removed.isEmpty else {
            self = ToManyState()
            return
        }
        committed = nil
        if !appended.isEmpty { members.formUnion(appended) }
        members.formUnion(addedSet)
        members.subtract(removed)
        self = ToManyState(committed: members)
    }
}
