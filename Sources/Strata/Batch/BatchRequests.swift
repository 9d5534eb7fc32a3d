public import Foundation
internal import StrataSQLite

// Batch requests (issue 20): Core Data's NSBatchInsertRequest, NSBatchUpdateRequest and
// NSBatchDeleteRequest, without their merge-it-yourself step. Each runs as one transaction on
// the coordinator's connection, materialises no object, stamps the store like any commit
// (generation, nonce, per-entity stamps) and is then merged into every context of the
// coordinator, and so into every results controller. See StoreCoordinator+Batch.swift.

/// Inserts rows straight into the store: no objects, one transaction.
///
/// ```swift
/// // Rows as dictionaries (to-ones as ObjectIDs):
/// let request = BatchInsertRequest(entityName: "Good", objects: [["name": "Apple", "category": fruitID]])
/// // Or a closure that fills each row in place, typed by key path:
/// let typed = BatchInsertRequest(Good.self, count: names.count) { index, row in
///     try row.set(\.name, names[index])
///     try row.set(\.category, fruitID)
/// }
/// let result = try container.coordinator.execute(typed)   // result.objectIDs: the new rows
/// ```
///
/// Every row is validated as a save validates an object (types, required values, the attribute
/// rules); a to-one must name a row that exists, or one inserted by the same request. Anything
/// wrong and nothing is written. The closure runs under the coordinator's lock, inside the
/// transaction: it must not use a context or the coordinator (that would wait for itself).
public struct BatchInsertRequest<Result: ManagedObject> {
    public let entityName: String
    /// How many rows the request inserts.
    public let count: Int
    /// What a row whose unique key (``Entity/uniqueKeys``) a stored row, or an earlier row of the
    /// request, already holds does: see ``BatchConflictResolution``. Ignored for an entity
    /// without unique keys.
    public var onConflict: BatchConflictResolution
    let fill: (Int, inout BatchRow<Result>) throws -> Void
    /// `count` rows, each filled by `fill(index, &row)`; a property left unset takes its default.
    public init(entityName: String, count: Int, onConflict: BatchConflictResolution = .fail,
                fill: @escaping (Int, inout BatchRow<Result>) throws -> Void) {
        precondition(count >= 0, "BatchInsertRequest count must not be negative.")
        self.entityName = entityName
        self.count = count
        self.onConflict = onConflict
        self.fill = fill
    }
}

/// What a ``BatchInsertRequest``'s row does when a row already holds one of its unique keys
/// (``Entity/uniqueKeys``): SQLite's `ON CONFLICT`, GRDB's upsert, SwiftData's unique attribute.
public enum BatchConflictResolution: Sendable, Equatable {
    /// The request throws ``BatchError/uniqueKeyConflict(entity:key:values:)`` and writes nothing.
    case fail
    /// The row is skipped; the stored row stays as it is (counted as unchanged).
    case ignore
    /// The row *is* the stored one (an upsert): the properties the fill set are written over it,
    /// the others keep their values; it keeps its `ObjectID`. A row that would change nothing
    /// writes nothing (counted as unchanged), and a request that changes no row commits nothing.
    /// The history records an update, and results controllers report one.
    case update
}

extension BatchInsertRequest where Result == ManagedObject {
    /// One row per dictionary: property names to values, as `setValue(_:forKey:)` takes them
    /// (an `ObjectID` or an object for a to-one).
    public init(entityName: String, objects: [[String: Any]], onConflict: BatchConflictResolution = .fail) {
        self.init(entityName: entityName, count: objects.count, onConflict: onConflict) { index, row in
            for (key, value) in objects[index] { try row.set(value, forKey: key) }
        }
    }
}

extension BatchInsertRequest where Result: PersistentEntity {
    /// `count` rows of `Result`'s entity, each filled by `fill(index, &row)` through key paths.
    public init(_ type: Result.Type, count: Int, onConflict: BatchConflictResolution = .fail,
                fill: @escaping (Int, inout BatchRow<Result>) throws -> Void) {
        self.init(entityName: Result.entityName, count: count, onConflict: onConflict, fill: fill)
    }
}

/// Sets properties of every row a predicate selects, straight in the store: no objects, one
/// `UPDATE`, one transaction.
///
/// ```swift
/// var request = BatchUpdateRequest(FetchRequest<Good>(predicate: #Predicate { $0.price > 100 }))
/// try request.set(\.onSale, to: true)
/// let result = try context.execute(request)     // result.count rows, result.objectIDs
/// ```
///
/// The values are constants (no expressions), validated once as a save would validate them.
/// Rows that already hold the values are left alone; each changed row's version is bumped and
/// the change merged into every context (an object with unsaved edits keeps them over the new
/// row, as after Core Data's merge of a batch's IDs). The fetch request's predicate, limit and
/// offset select the rows; its sort keys order the limit's window only.
public struct BatchUpdateRequest<Result: ManagedObject> {
    public var fetchRequest: FetchRequest<Result>
    /// Property name → new value (`nil` clears an optional property).
    public var propertiesToUpdate: [String: Any?]

    public init(_ fetchRequest: FetchRequest<Result>, propertiesToUpdate: [String: Any?] = [:]) {
        self.fetchRequest = fetchRequest
        self.propertiesToUpdate = propertiesToUpdate
    }
}

extension BatchUpdateRequest where Result == ManagedObject {
    public init(entityName: String, predicate: Condition? = nil, propertiesToUpdate: [String: Any?]) {
        self.init(FetchRequest(entityName: entityName, condition: predicate), propertiesToUpdate: propertiesToUpdate)
    }
}

extension BatchUpdateRequest where Result: PersistentEntity {
    /// The rows `predicate` selects (every row for `nil`); their new values are given with `set(_:to:)`.
    public init(_ type: Result.Type, predicate: Predicate<Result>?) {
        self.init(FetchRequest<Result>(predicate: predicate))
    }

    /// Sets the property `keyPath` names to `value` in every selected row.
    public mutating func set<Value>(_ keyPath: KeyPath<Result, Value>, to value: Value) throws {
        guard let key = Result.propertyName(for: keyPath) else {
            throw ObjectError.unknownKey(entity: Result.entityName, key: "\(keyPath)")
        }
        propertiesToUpdate[key] = .some(value)
    }

    /// Points the to-one `keyPath` names at the row of `id` in every selected row.
    public mutating func set<Destination: ManagedObject>(_ keyPath: KeyPath<Result, Destination?>, to id: ObjectID?) throws {
        guard let key = Result.propertyName(for: keyPath) else {
            throw ObjectError.unknownKey(entity: Result.entityName, key: "\(keyPath)")
        }
        propertiesToUpdate[key] = .some(id)
    }
}

/// Deletes the rows a predicate selects (or the rows of some IDs) straight in the store: no
/// objects, one transaction.
///
/// Delete rules are applied in SQL where they need no objects: **nullify** clears the inverse
/// to-one column of the related rows (their versions bumped) or removes the join rows of a
/// many-to-many; **no action** leaves the related rows as they are, as a context's delete does.
/// Rules that need objects are refused when they would reach a row, with nothing written:
/// **cascade** (``BatchError/cascadeNeedsObjects(entity:relationship:related:)``: the related
/// objects' own rules would have to run; delete them first, or delete through a context) and
/// **deny** (``BatchError/denied(entity:relationship:related:)``). Nullifying a required inverse
/// to-one is refused as a save would refuse it (``BatchError/requiredInverse(entity:relationship:related:)``).
public struct BatchDeleteRequest<Result: ManagedObject> {
    enum Selection {
        case request(FetchRequest<Result>)
        case ids(entityName: String, [ObjectID])
    }
    let selection: Selection

    /// The rows `fetchRequest` selects (predicate, limit and offset).
    public init(_ fetchRequest: FetchRequest<Result>) {
        selection = .request(fetchRequest)
    }

    /// The rows of `objectIDs`, all of entity `entityName`; IDs of rows already gone are skipped.
    public init(entityName: String, objectIDs: [ObjectID]) {
        selection = .ids(entityName: entityName, objectIDs)
    }

    public var entityName: String {
        switch selection {
        case .request(let request): request.entityName
        case .ids(let name, _): name
        }
    }
}

extension BatchDeleteRequest where Result == ManagedObject {
    public init(entityName: String, predicate: Condition? = nil) {
        self.init(FetchRequest(entityName: entityName, condition: predicate))
    }
}

extension BatchDeleteRequest where Result: PersistentEntity {
    /// The rows of `objectIDs`, of `Result`'s entity.
    public init(_ type: Result.Type, objectIDs: [ObjectID]) {
        self.init(entityName: Result.entityName, objectIDs: objectIDs)
    }

    /// The rows `predicate` selects (every row of the entity for `nil`):
    /// `BatchDeleteRequest(Good.self, predicate: #Predicate { $0.price == 0 })`. A predicate with
    /// no Strata equivalent makes the execute throw ``PredicateTranslationError``, before any SQL.
    public init(_ type: Result.Type, predicate: Predicate<Result>?) {
        self.init(FetchRequest<Result>(predicate: predicate))
    }
}

/// What a batch request did.
public struct BatchResult: Sendable, Equatable {
    public var entityName: String
    /// The rows inserted, updated or deleted.
    public var count: Int { objectIDs.count }
    /// Their IDs, in primary-key order.
    public var objectIDs: [ObjectID]
    /// The store's generation after the request's commit; `nil` when it changed no row (nothing
    /// was committed).
    public var generation: Int64?
    /// Every entity whose rows the commit changed (the request's, and those whose relationships a
    /// delete rule cleared).
    public var touchedEntities: Set<String>
    /// A batch insert of an entity with unique keys: the rows it inserted, the stored rows it
    /// updated, and the rows that changed nothing (equal to the stored row, or ignored).
    public var inserted = 0, updated = 0, unchanged = 0
    /// Rows skipped because they break the model (a library import's), by the request's index.

    init(entityName: String, objectIDs: [ObjectID], generation: Int64?, touchedEntities: Set<String>) {
        self.entityName = entityName
        self.objectIDs = objectIDs
        self.generation = generation
        self.touchedEntities = touchedEntities
    }

    public static func == (a: BatchResult, b: BatchResult) -> Bool {
        a.entityName == b.entityName && a.objectIDs == b.objectIDs && a.generation == b.generation && a.touchedEntities == b.touchedEntities
            && a.inserted == b.inserted && a.updated == b.updated && a.unchanged == b.unchanged
    }
}

/// A batch request refused before anything was written.
public enum BatchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A batch delete would cascade to `related` rows: their own delete rules need objects.
    case cascadeNeedsObjects(entity: String, relationship: String, related: Int)
    /// A batch delete met a deny rule with `related` rows still related.
    case denied(entity: String, relationship: String, related: Int)
    /// Nullifying would clear a required to-one of `related` rows.
    case requiredInverse(entity: String, relationship: String, related: Int)
    /// `count` rows would name a `key` destination that does not exist (no dangling keys).
    case missingDestinations(entity: String, key: String, count: Int)
    /// A to-many cannot be set by a batch request: set its inverse to-one on the other side.
    case toManyNotSupported(entity: String, key: String)
    /// A row holds a unique key (`key`, its property names) that a stored row, or an earlier row
    /// of the request, already holds (`values`, as text), and the request's ``BatchConflictResolution``
    /// is `.fail`; or a row holds two unique keys held by two different rows, which no resolution
    /// can make one row.
    case uniqueKeyConflict(entity: String, key: [String], values: [String])

    public var description: String {
        switch self {
        case let .cascadeNeedsObjects(entity, relationship, related):
            "a batch delete of \(entity) would cascade through \(relationship) to \(related) row(s), whose delete rules need objects: delete those first, or delete through a context"
        case let .denied(entity, relationship, related):
            "\(entity).\(relationship) denies the delete: \(related) related row(s) remain"
        case let .requiredInverse(entity, relationship, related):
            "deleting would clear the required inverse of \(entity).\(relationship) in \(related) row(s): delete or re-point them first"
        case let .missingDestinations(entity, key, count):
            "\(count) \(entity) row(s) would name a \(key) that does not exist"
        case let .toManyNotSupported(entity, key):
            "\(entity).\(key) is a to-many: a batch request sets the inverse to-one on the other side instead"
        case let .uniqueKeyConflict(entity, key, values):
            "a \(entity) row's unique key (\(key.joined(separator: ", "))) = (\(values.joined(separator: ", "))) is already held by another row"
                + " (onConflict: .fail; .update makes the row the stored one, .ignore skips it)"
        }
    }
}

/// Where a caller's value for one property goes, converted as `setValue(_:forKey:)` converts it.
enum PropertyAssignment {
    case attribute(Int, AttributeValue?)
    case toOne(Int, Int64?)
}

extension EntityInfo {
    /// `value` for property `key` (whose slot is `slot`), converted as `setValue(_:forKey:)`
    /// converts it: a to-one takes an `ObjectID` or an object of its destination.
    ///
    /// - Throws: ``ObjectError/unknownKey(entity:key:)``, ``ObjectError/wrongType(entity:key:expected:actual:)``,
    ///   ``BatchError/toManyNotSupported(entity:key:)``.
    func assignment(of value: Any?, to slot: Slot?, key: String) throws -> PropertyAssignment {
        // A typed setter's `String?` arrives as an `Any` holding an optional: unwrap it.
        let value = value.flatMap(unwrappedValue)
        switch slot {
        case .attribute(let index)?:
            guard let value, !(value is NSNull) else { return .attribute(index, nil) }
            guard let converted = AttributeValue.convert(value, to: attributeTypes[index]) else {
                throw ObjectError.wrongType(entity: name, key: key, expected: "\(attributeTypes[index])", actual: "\(type(of: value))")
            }
            return .attribute(index, converted)
        case .toOne(let index)?:
            let destination = toOnes[index].destination
            switch value {
            case nil, is NSNull: return .toOne(index, nil)
            case let id as ObjectID where id.entityName == destination: return .toOne(index, id.primaryKey)
            case let object as ManagedObject where object.objectID.entityName == destination: return .toOne(index, object.primaryKey)
            default:
                throw ObjectError.wrongType(entity: name, key: key, expected: "an ObjectID of \(destination)", actual: "\(type(of: value!))")
            }
        case .toMany?:
            throw BatchError.toManyNotSupported(entity: name, key: key)
        case nil:
            throw ObjectError.unknownKey(entity: name, key: key)
        }
    }
}

extension RowSnapshot {
    /// Sets attribute or to-one `key` from a caller's value (see ``EntityInfo/assignment(of:to:key:)``).
    mutating func assign(_ value: Any?, forKey key: String, info: EntityInfo) throws {
        switch try info.assignment(of: value, to: info.slot(key), key: key) {
        case .attribute(let index, let value): setAttribute(value, at: index)
        case .toOne(let index, let key): setToOne(key, at: index)
        }
    }
}

/// A value a ``BatchRow`` stores without converting: `String`, `Int`, `Int64`, `Double`, `Bool`,
/// `Date`.
public protocol BatchValue {
    /// The attribute type the value goes into unconverted.
    static var batchAttributeType: AttributeType { get }
    var batchAttributeValue: AttributeValue { get }
}

extension String: BatchValue {
    public static var batchAttributeType: AttributeType { .string }
    public var batchAttributeValue: AttributeValue { .string(self) }
}

extension Int64: BatchValue {
    public static var batchAttributeType: AttributeType { .int64 }
    public var batchAttributeValue: AttributeValue { .int64(self) }
}

extension Int: BatchValue {
    public static var batchAttributeType: AttributeType { .int64 }
    public var batchAttributeValue: AttributeValue { .int64(Int64(self)) }
}

extension Double: BatchValue {
    public static var batchAttributeType: AttributeType { .double }
    public var batchAttributeValue: AttributeValue { .double(self) }
}

extension Bool: BatchValue {
    public static var batchAttributeType: AttributeType { .bool }
    public var batchAttributeValue: AttributeValue { .bool(self) }
}

extension Date: BatchValue {
    public static var batchAttributeType: AttributeType { .date }
    public var batchAttributeValue: AttributeValue { .date(self) }
}
