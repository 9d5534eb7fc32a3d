/// A ``ManagedObject`` subclass that describes its own entity: what the `@Entity` macro
/// generates, and what a hand-written class can conform to as well.
///
/// The typed API (`FetchRequest<Good>`, Foundation `Predicate<Good>` and `SortDescriptor<Good>`,
/// `Model(version:types:)`) reads a class's entity and turns the key paths it is given into
/// the property names the string API uses, so both share one implementation.
public protocol PersistentEntity: ManagedObject {
    /// The entity this class is stored as. Its `managedClass` is `Self`.
    static var entityDescription: Entity { get }

    /// The entity's name: `entityDescription.name` unless the class answers it directly.
    ///
    /// A requirement (not only the extension's default) so that a relationship can name its
    /// destination without building the destination's description: two `@Entity` classes that
    /// point at each other would otherwise each initialise the other's `static let
    /// entityDescription` while building their own.
    static var entityName: String { get }

    /// The name of the attribute or relationship that `keyPath` (a key path rooted at this
    /// class, one component long) reads, or nil when it reads no persistent property.
    static func propertyName(for keyPath: AnyKeyPath) -> String?

    /// The key path of the persistent property named `name` (one component long), or nil: the
    /// inverse of ``propertyName(for:)``.
    ///
    /// Only needed to take apart key paths of more than one component, such as
    /// `SortDescriptor(\Good.category?.name)`: Swift can't split a key path, so Strata compares
    /// it with the key paths of the properties it could go through. The default returns nil, and
    /// such a sort descriptor then throws ``PredicateTranslationError``.
    static func keyPath(forPropertyNamed name: String) -> AnyKeyPath?
}

extension PersistentEntity {
    /// The entity's name: its description's.
    public static var entityName: String { entityDescription.name }

    public static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? { nil }
}

extension Model {
    /// A model built from classes that describe their own entities (`@Entity` classes).
    ///
    /// The version hash depends only on the entities' storage, so a model built from types has
    /// the same hash as the same model written as ``Entity`` values, and opens the same stores.
    ///
    /// A class sees only its own side of a relationship, so one side may leave the inverse out
    /// (`@Entity` requires it on every to-many; a to-one may omit it). Here a relationship with no
    /// inverse gets the name of the relationship on its destination that names it as inverse.
    /// Anything else that doesn't match is the validator's ``ModelError``, as for entities.
    public init(version: String = "1", types: [any PersistentEntity.Type]) throws {
        try self.init(version: version, entities: Model.completingInverses(types.map { $0.entityDescription }))
    }

    /// Fills each relationship's missing inverse from the destination's relationship that names
    /// it as its inverse (the first one, when several do: the validator reports the rest).
    static func completingInverses(_ described: [Entity]) -> [Entity] {
        var entities = described
        var indexByName: [String: Int] = [:]
        for (index, entity) in entities.enumerated() where indexByName[entity.name] == nil {
            indexByName[entity.name] = index
        }
        for source in entities.indices {
            for relationship in entities[source].relationships {
                guard let inverse = relationship.inverse, let destination = indexByName[relationship.destination],
                      let slot = entities[destination].relationships.firstIndex(where: { $0.name == inverse }),
                      entities[destination].relationships[slot].inverse == nil,
                      entities[destination].relationships[slot].destination == entities[source].name
                else { continue }
                entities[destination].relationships[slot].inverse = relationship.name
            }
        }
        return entities
    }
}
