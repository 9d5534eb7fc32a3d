/// Makes a ``ManagedObject`` subclass describe its own entity: its stored properties become the
/// entity's attributes and relationships, read and written through the object's context.
///
/// ```swift
/// @Entity final class Category: ManagedObject {
///     @Attribute(.indexed) var name: String
///     @Relationship(inverse: \Good.category, deleteRule: .cascade) var goods: Set<Good> = []
/// }
///
/// @Entity final class Good: ManagedObject {
///     @Attribute(maxLength: 80) var name: String
///     @Attribute(minValue: 0) var number: Int64 = 0
///     var category: Category
/// }
///
/// let model = try Model(version: "1", types: [Category.self, Good.self])
/// ```
///
/// The class must be `final` and inherit from ``ManagedObject`` (named in its inheritance
/// clause). The macro generates, for each stored `var`, a getter and setter over the typed
/// subscripts (`self[attribute: "name"]`, `self[toOne:]`, `self[toMany:]`, `self[codable:]`:
/// the same calls a hand-written accessor makes, so they cost the same), and the
/// ``PersistentEntity`` conformance: `entityDescription` (with `managedClass` the class),
/// `entityName` and `propertyName(for:)`. The entity is named after the class;
/// `@Entity("Item")` names it otherwise.
///
/// What each stored property becomes, by its type:
///
/// | Swift type | stored as |
/// |---|---|
/// | `String`, `Int` and `Int64`, `Int16`, `Int32`, `Double`, `Float`, `Bool`, `Date`, `Data`, `UUID`, `URL`, `Decimal` | an attribute of that type (`Int` and `Int64` as `int64`, `Data` as `binary`) |
/// | an `@Entity` class, `Category?` | a to-one relationship |
/// | `Set<Good>` of an `@Entity` class | a to-many relationship: it needs `@Relationship(inverse:)` |
/// | any other `Codable` type (a struct, an enum, `[String]`) | one `binary` attribute holding its JSON (``ManagedObject/subscript(codable:)``): opaque to predicates and sort keys |
/// | `@Transient` | nothing: a plain stored property of the object, never saved |
///
/// Optionality and defaults:
///
/// - `T?` is an optional property. `T` is required (`isOptional: false`), and so is `T!`, which
///   reads `nil` until it is set.
/// - The initial value is the attribute's `defaultValue`: every new object starts with it. It is
///   computed once, when the entity description is built, so `Date()`, `.now` and `UUID()` are
///   refused (every object would share the one value): set such values after `insert`.
/// - A required property without an initial value has no default: the save refuses the object
///   until the property is set, and until then the getter reads the type's zero (`""`, `0`,
///   `false`, empty `Data`). `Date`, `UUID`, `URL` and `Codable` types have no zero: give them an
///   initial value, or declare them `T?` or `T!`. A required to-one (`var category: Category`)
///   must be set before it is read (reading it unset is a precondition failure that says so);
///   declare it `Category!` to read `nil` until then.
///
/// Relationships: a to-many is `Set<Destination>` (never optional: it may be empty; `= []` is
/// allowed) and must name its inverse, `@Relationship(inverse: \Good.category)`, because one
/// macro sees one class. A to-one may leave the inverse out when the other side names it:
/// ``Model/init(version:types:)`` fills it in. Ordered (`[Good]`) to-manys are not supported.
/// Mismatched inverses are the model's ``ModelError`` when the model is built.
///
/// Mistakes are compile-time errors that say what to write instead: a struct, enum or actor, a
/// class that isn't final or names no `ManagedObject` superclass, a `let`, a type Strata can't
/// store (a tuple, a function), a to-many without its inverse, a `@Transient` property without
/// an initial value, `@Attribute` on a computed property.
@attached(member, names: named(entityDescription), named(entityName), named(propertyName(for:)), named(keyPath(forPropertyNamed:)), named(_notifyObservers(of:willSet:)))
@attached(memberAttribute)
@attached(extension, conformances: PersistentEntity)
public macro Entity(_ name: String? = nil) = #externalMacro(module: "StrataMacros", type: "EntityMacro")

/// Sets an `@Entity` property's ``Attribute`` options: `.indexed`, `.unique`, `.preserveValueOnDeletion`,
/// validation bounds, a regular expression and the previous version's name for a lightweight rename.
///
/// ```swift
/// @Attribute(.indexed, maxLength: 80) var name: String
/// @Attribute(minValue: 0, maxValue: 10_000) var number: Int32 = 0
/// @Attribute(renamingIdentifier: "title") var name: String
/// ```
///
/// On a property of another `Codable` type it also says "an encoded attribute, not a
/// relationship", which a `Set` of a `Codable` struct needs (a bare `Set<Tag>` reads as a
/// to-many). `.unique` makes the attribute a unique key (``Attribute/isUnique``); a key of
/// several properties is `#Unique`.
@attached(peer)
public macro Attribute(
    _ options: Attribute.Option..., minValue: Double? = nil, maxValue: Double? = nil,
    minLength: Int? = nil, maxLength: Int? = nil, regex: String? = nil, renamingIdentifier: String? = nil
) = #externalMacro(module: "StrataMacros", type: "AttributeMacro")

/// Declares an `@Entity` property a relationship and sets its ``Relationship`` options: the
/// inverse (a key path on the destination class: its last component is the inverse's name), the
/// ``Relationship/DeleteRule`` and the previous version's name.
///
/// ```swift
/// @Relationship(inverse: \Good.category, deleteRule: .cascade) var goods: Set<Good> = []
/// ```
///
/// Every to-many needs it with an inverse. A to-one may omit it when the other side names it.
@attached(peer)
public macro Relationship(
    inverse: AnyKeyPath? = nil, deleteRule: Relationship.DeleteRule = .nullify, renamingIdentifier: String? = nil
) = #externalMacro(module: "StrataMacros", type: "RelationshipMacro")

/// Declares an `@Entity` class's unique keys (SwiftData's `#Unique`), one array of key paths per
/// key; written in the class body:
///
/// ```swift
/// @Entity final class Book: ManagedObject {
///     #Unique<Book>([\.isbn], [\.title, \.author])
///     var isbn: String
///     var title: String
///     var author: Author?
/// }
/// ```
///
/// The key paths are checked by the compiler; `@Entity` checks that each names an attribute or a
/// to-one of the class, and adds the keys to ``Entity/uniquenessConstraints``.
@freestanding(declaration)
public macro Unique<T>(_ keys: [PartialKeyPath<T>]...) = #externalMacro(module: "StrataMacros", type: "UniqueMacro")

/// Leaves an `@Entity` class's stored property out of the entity: a plain stored property of the
/// object instance, never saved, fetched or seen by another context. It needs an initial value
/// (the context creates objects, so no initialiser can set it).
@attached(peer)
public macro Transient() = #externalMacro(module: "StrataMacros", type: "TransientMacro")

/// The accessors `@Entity` adds to each persistent property. Not API: write `@Entity`.
@attached(accessor, names: named(get), named(set))
public macro _PersistedProperty() = #externalMacro(module: "StrataMacros", type: "PersistedPropertyMacro")

extension Attribute {
    /// An `@Attribute` option.
    public enum Option: Sendable, Hashable {
        /// The column gets its own index (``Attribute/isIndexed``).
        case indexed
        /// No two rows hold the same value (``Attribute/isUnique``), as SwiftData's option of the
        /// same name.
        case unique
        /// A delete keeps the attribute's last value in the store's history
        /// (``Attribute/preservesValueOnDeletion``), as SwiftData's option of the same name.
        case preserveValueOnDeletion
    }
}
