public import Foundation

/// The identity of a stored object: its entity and primary key. `Sendable`: pass it between contexts
/// and threads, then ask each context for its own object with ``ManagedObjectContext/object(with:)``.
///
/// IDs are **permanent from insert**: the primary key is reserved from the store when the object is
/// inserted, so an ID never changes on save and survives `VACUUM` and reopening. Its URI form is
/// `strata://<store-uuid>/<Entity>/<pk>`.
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The entity's name, interned: one ``EntityName`` per distinct name for the life of the
    /// process, so an ID is 16 bytes (not 24 with a `String`), two IDs compare by address, and
    /// copying one retains nothing. Kept as an address so that the ID is plainly `Sendable`.
    let entityAddress: UInt
    public let primaryKey: Int64

    public init(entityName: String, primaryKey: Int64) {
        self.init(entity: EntityName.interned(entityName), primaryKey: primaryKey)
    }

    /// An ID of an entity whose interned name is at hand (``EntityInfo/internedName``): no lookup.
    init(entity: EntityName, primaryKey: Int64) {
        entityAddress = entity.address
        self.primaryKey = primaryKey
    }

    var entity: EntityName {
        Unmanaged<EntityName>.fromOpaque(UnsafeRawPointer(bitPattern: entityAddress).unsafelyUnwrapped).takeUnretainedValue()
    }

    public var entityName: String { entity.name }

    public var description: String { "\(entityName)/\(primaryKey)" }

    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.primaryKey == rhs.primaryKey && lhs.entityAddress == rhs.entityAddress
    }

    /// Hashes the primary key only: IDs of different entities with the same key are still told
    /// apart by `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        guard lhs.entityAddress != rhs.entityAddress else { return lhs.primaryKey < rhs.primaryKey }
        // Different entities, so different names: by name (a save sorts its new rows this way).
        return EntityName.precedes(lhs.entity, rhs.entity)
    }

    /// `strata://<store-uuid>/<Entity>/<pk>`.
    public func uriRepresentation(storeUUID: UUID) -> URL {
        URL(string: "strata://\(storeUUID.uuidString)/\(entityName)/\(primaryKey)")!
    }
}

/// An entity's name, interned (``ObjectID``). One per distinct name, never freed: the table holds
/// them, and they are as many as the entity names a process uses.
final class EntityName: Sendable {
    let name: String
    /// An ASCII name's first 8 bytes, big-endian, zero-padded: two names whose prefixes differ
    /// are ordered by them without a string comparison. `nil` for other names (`String`'s order
    /// is by normalised scalars, which bytes of an unnormalised name need not follow).
    private let asciiPrefix: UInt64?

    /// The address an ``ObjectID`` keeps (interned names are never freed).
    var address: UInt { UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }

    private init(_ name: String) {
        self.name = name
        if name.utf8.allSatisfy({ $0 < 0x80 }) {
            asciiPrefix = name.utf8.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (56 - 8 * $1.offset) }
        } else {
            asciiPrefix = nil
        }
    }

    /// Whether `lhs`'s name sorts before `rhs`'s (as `String` orders them).
    static func precedes(_ lhs: EntityName, _ rhs: EntityName) -> Bool {
        if let left = lhs.asciiPrefix, let right = rhs.asciiPrefix, left != right { return left < right }
        return lhs.name < rhs.name
    }

    private static let table = Locked<[String: EntityName]>([:])

    static func interned(_ name: String) -> EntityName {
        table.withLock { names in
            if let existing = names[name] { return existing }
            let new = EntityName(name)
            names[name] = new
            return new
        }
    }
}
