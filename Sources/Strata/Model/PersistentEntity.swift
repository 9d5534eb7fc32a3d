/// A ``ManagedObject`` subclass that describes its own entity: what the `@Entity` macro
/// generates, and what a hand-written class can conform to as well.
///
/// The typed API (`FetchRequest<Good>`, Foundation `Predicate<Good>` and `SortDescriptor<Good>`,
/// `Model(version:types:)`) reads a class's entity and turns the key paths it is given into
/// the property names the string API uses, so both share one implementation.
public protocol PersistentEntity: ManagedObject {
    /// The entity this class is stored as. Its `managedClass` is `Self`.
    static var entityDescription: Entity { get }

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
    /// The entity's name.
    public static var entityName: String { entityDescription.name }

    public static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? { nil }
}

extension Model {
    /// A model built from classes that describe their own entities (`@Entity` classes).
    ///
    /// The version hash depends only on the entities' storage, so a model built from types has
    /// the same hash as the same model written as ``Entity`` values, and opens the same stores.
    public init(version: String = "1", types: [any PersistentEntity.Type]) throws {
        try self.init(version: version, entities: types.map { $0.entityDescription })
    }
}
