public import Foundation

/// The identity of a stored object: its entity and primary key. `Sendable`: pass it between contexts
/// and threads, then ask each context for its own object with ``ManagedObjectContext/object(with:)``.
///
/// IDs are **permanent from insert**: the primary key is reserved from the store when the object is
/// inserted, so an ID never changes on save and survives `VACUUM` and reopening. Its URI form is
/// `strata://<store-uuid>/<Entity>/<pk>`.
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let entityName: String
    public let primaryKey: Int64

    public init(entityName: String, primaryKey: Int64) {
        self.entityName = entityName
        self.primaryKey = primaryKey
    }

    public var description: String { "\(entityName)/\(primaryKey)" }

    /// Hashes the primary key only: hashing the entity name too costs a string hash per lookup,
    /// and IDs of different entities with the same key are still told apart by `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        (lhs.entityName, lhs.primaryKey) < (rhs.entityName, rhs.primaryKey)
    }

    /// `strata://<store-uuid>/<Entity>/<pk>`.
    public func uriRepresentation(storeUUID: UUID) -> URL {
        URL(string: "strata://\(storeUUID.uuidString)/\(entityName)/\(primaryKey)")!
    }
}
