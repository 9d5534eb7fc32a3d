internal import Foundation

/// How the objects of one model version become the next's, when lightweight migration can't infer
/// it: which source objects are carried (a filter over `$source`), what each destination value is
/// (a source key path, a constant, an expression or Swift code), how relationships are re-linked,
/// and, per entity, an optional policy that may transform, split or drop objects.
///
/// ```swift
/// let mapping = try MappingModel(from: v3, to: v4, entityMappings: [
///     EntityMapping("Employee", to: "Employee", filter: "$source.height < 100", attributes: [
///         "heightInches": .expression("$source.height / 2.54"),
///         "displayName": .expression("uppercase($source.name)"),
///     ]),
///     EntityMapping("Department", to: "Department"),
/// ])
/// options.migration = .mapped(versions: [v1, v2, v3, v4], mappings: [mapping])
/// ```
///
/// Values not named in `attributes` are carried from the source attribute of the same name (or the
/// destination attribute's renaming identifier), converted when the types differ; otherwise they
/// get the destination's default. To-one relationships are re-linked likewise, through
/// `relationships` or by name: the new object points at the object its source's related object
/// became. A destination entity no mapping feeds starts empty.
public struct MappingModel: Sendable {
    public let source: Model
    public let destination: Model
    public let entityMappings: [EntityMapping]

    /// - Throws: ``MigrationError/invalidMapping(mapping:reason:)`` for an entity, key, filter or
    ///   expression that names something neither model has: checked here, before any store is touched.
    public init(from source: Model, to destination: Model, entityMappings: [EntityMapping]) throws(MigrationError) {
        self.source = source
        self.destination = destination
        self.entityMappings = entityMappings
        for mapping in entityMappings { _ = try ResolvedEntityMapping(mapping, source: source, destination: destination) }
    }

    /// What running it does, as a dry run lists it.
    public var steps: [MigrationStep] {
        var steps = entityMappings.map { mapping in
            MigrationStep.mapEntity(from: mapping.sourceEntity, to: mapping.destinationEntity,
                                    filter: mapping.filter?.description, customPolicy: mapping.policy != nil)
        }
        let fed = Set(entityMappings.map(\.destinationEntity))
        steps += destination.entities.filter { !fed.contains($0.name) }.map { .addEntity($0.name) }
        let read = Set(entityMappings.map(\.sourceEntity))
        steps += source.entities.filter { !read.contains($0.name) }.map { .removeEntity($0.name) }
        return steps
    }
}

/// One source entity mapped to one destination entity.
public struct EntityMapping: Sendable {
    public var sourceEntity: String
    public var destinationEntity: String
    /// Which source objects are carried; `nil` carries all. Key paths are written `$source.key`.
    public var filter: Condition?
    /// Destination attribute → its value. Attributes not listed are inferred (see ``MappingModel``).
    public var attributes: [String: MappingValue]
    /// Destination to-one relationship → the source to-one relationship whose object's migrated
    /// counterpart it points at. Relationships not listed are inferred by name.
    public var relationships: [String: String]
    /// Called once per carried source object with the object the mapping made from it; returns
    /// what to insert instead: `[]` drops it, `[object]` keeps or transforms it, more splits it
    /// (objects of other destination entities too). The first object returned in
    /// ``destinationEntity`` is the one relationships to this source object reach.
    public var policy: MigrationPolicy?

    /// - Parameter filter: a condition over `$source`, e.g. `"$source.height < 100"`.
    /// - Throws: ``ConditionParseError`` naming the position of a bad filter.
    public init(_ sourceEntity: String, to destinationEntity: String, filter: String? = nil,
                attributes: [String: MappingValue] = [:], relationships: [String: String] = [:],
                policy: MigrationPolicy? = nil) throws {
        self.sourceEntity = sourceEntity
        self.destinationEntity = destinationEntity
        self.filter = try filter.map { try Condition($0) }
        self.attributes = attributes
        self.relationships = relationships
        self.policy = policy
    }
}

/// A custom per-object migration policy (Core Data's `NSEntityMigrationPolicy`
/// `createDestinationInstances(forSource:in:manager:)`). Errors it throws abort the migration,
/// which then leaves the store untouched.
public typealias MigrationPolicy = @Sendable (_ source: MigrationSource, _ mapped: MappedObject) throws -> [MappedObject]

/// A destination attribute's value in an ``EntityMapping``.
public enum MappingValue: Sendable {
    /// A key path on the source object (`"name"`, `"department.name"` through to-ones).
    case source(String)
    case constant(AttributeValue?)
    /// An expression over `$source`: arithmetic (`+ - * /`, `+` also joins strings), parentheses,
    /// numbers, 'strings', `nil`, `YES`/`NO`, and the functions `uppercase`, `lowercase`, `trim`,
    /// `length`, `abs`, `round`, `floor`, `ceil`, `coalesce(a, b, …)` and `now()`.
    /// For example `"$source.height / 2.54"` or `"$source.first + ' ' + $source.last"`.
    case expression(String)
    /// Swift code computing the value from the source object.
    case computed(@Sendable (MigrationSource) throws -> AttributeValue?)
}

/// One object the migration reads from the store being migrated.
public struct MigrationSource {
    public let entity: String
    /// The object's key in the source store.
    public let primaryKey: Int64
    let info: EntityInfo
    let row: RowSnapshot
    let reader: SourceReader

    /// The value at a key path: an attribute, or one reached through to-one relationships
    /// (`"department.name"`); `nil` for a nil value or relationship on the way.
    /// - Throws: ``MigrationError/invalidMapping(mapping:reason:)`` for a key the source entity doesn't have.
    public func value(forKey keyPath: String) throws -> AttributeValue? {
        var current = self
        let segments = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for (position, key) in segments.enumerated() {
            switch current.info.slot(key) {
            case .attribute(let index)? where position == segments.count - 1:
                return current.row.attributes[index]
            case .toOne(let index)? where position < segments.count - 1:
                guard let next = try current.related(index) else { return nil }
                current = next
            default:
                throw MigrationError.invalidMapping(mapping: entity, reason: "\(current.entity) has no attribute path \(key.debugDescription) (in \(keyPath.debugDescription))")
            }
        }
        throw MigrationError.invalidMapping(mapping: entity, reason: "empty key path")
    }

    /// The key of the object a to-one relationship points at, or `nil`.
    public func relatedKey(_ relationship: String) throws -> Int64? {
        guard case .toOne(let index)? = info.slot(relationship) else {
            throw MigrationError.invalidMapping(mapping: entity, reason: "\(entity) has no to-one relationship \(relationship.debugDescription)")
        }
        return row.toOnes[index]
    }

    /// A reference to the object a to-one relationship's object became, for a policy's ``MappedObject``.
    public func migratedReference(_ relationship: String) throws -> MigrationReference? {
        guard case .toOne(let index)? = info.slot(relationship) else {
            throw MigrationError.invalidMapping(mapping: entity, reason: "\(entity) has no to-one relationship \(relationship.debugDescription)")
        }
        return row.toOnes[index].map { .migrated(from: info.toOneDestinations[index], key: $0) }
    }

    /// This object as a reference (what it became in a destination entity).
    public var reference: MigrationReference { .migrated(from: entity, key: primaryKey) }

    private func related(_ index: Int) throws -> MigrationSource? {
        guard let key = row.toOnes[index] else { return nil }
        return try reader.object(entity: info.toOneDestinations[index], key: key)
    }
}

/// An object to insert into the destination store.
public struct MappedObject: Sendable {
    public var entity: String
    /// Attribute values set; attributes not set get the destination default.
    public private(set) var values: [String: AttributeValue?] = [:]
    /// To-one relationships: which migrated object each points at.
    public var relationships: [String: MigrationReference] = [:]

    public init(entity: String, values: [String: AttributeValue?] = [:], relationships: [String: MigrationReference] = [:]) {
        self.entity = entity
        self.values = values
        self.relationships = relationships
    }

    /// An attribute's value: `nil` when it is nil or not set.
    public subscript(key: String) -> AttributeValue? {
        get { values[key] ?? nil }
        set { values[key] = .some(newValue) }
    }
}

/// The object a relationship of a ``MappedObject`` points at.
public enum MigrationReference: Sendable, Hashable {
    /// What the source object `key` of entity `from` became in the relationship's destination entity.
    case migrated(from: String, key: Int64)
    /// Another object returned by the same policy call, by its index in the returned array.
    case returned(Int)
}

/// How far a migration has got, reported on the opening thread.
public struct MigrationProgress: Sendable, Equatable {
    /// 1-based step of `stepCount` (one per model version migrated to).
    public var step: Int
    public var stepCount: Int
    /// The destination model version this step migrates to.
    public var version: String
    /// Source objects processed and to process in this step.
    public var objectsDone: Int
    public var objectsTotal: Int
}
