internal import Foundation

/// What the code that `@Entity` generates calls. Not API: the names and shapes may change with
/// the macro, so write ``Entity``, ``Attribute`` and ``Relationship`` values by hand instead.
///
/// A macro sees only the syntax of one class: it cannot tell whether `var size: Size?` names
/// a `Codable` struct or another `@Entity` class. The overloads below let the type checker
/// decide (a ``PersistentEntity`` is a to-one relationship, a `Codable` value an encoded
/// attribute), and the unavailable ones turn the shapes Strata can't store into compile-time
/// errors that say what to write instead.
public enum _EntityMacroSupport {
    /// One persistent property of an entity, in declaration order.
    public enum Property: Sendable {
        case attribute(Attribute)
        case relationship(Relationship)
    }

    /// The entity: attributes and relationships each in declaration order.
    public static func entity(_ name: String, class managedClass: ManagedObject.Type, _ properties: [Property],
                              unique: [[String]] = []) -> Entity {
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        for property in properties {
            switch property {
            case .attribute(let attribute): attributes.append(attribute)
            case .relationship(let relationship): relationships.append(relationship)
            }
        }
        return Entity(name, class: managedClass, attributes: attributes, relationships: relationships, uniquenessConstraints: unique)
    }

    // MARK: Declared relationships (`@Relationship`)

    /// A to-one relationship to `Destination`'s entity.
    public static func toOne<Destination: PersistentEntity>(
        _ name: String, _ destination: Destination.Type, isOptional: Bool, inverse: String? = nil,
        deleteRule: Relationship.DeleteRule = .nullify, renamingIdentifier: String? = nil
    ) -> Property {
        .relationship(Relationship(name, .toOne, to: Destination.entityName, inverse: inverse, deleteRule: deleteRule,
                                   isOptional: isOptional, renamingIdentifier: renamingIdentifier))
    }

    /// A to-many relationship to `Destination`'s entity (a to-many is optional: it may be empty).
    public static func toMany<Destination: PersistentEntity>(
        _ name: String, _ destination: Destination.Type, inverse: String,
        deleteRule: Relationship.DeleteRule = .nullify, renamingIdentifier: String? = nil
    ) -> Property {
        .relationship(Relationship(name, .toMany, to: Destination.entityName, inverse: inverse, deleteRule: deleteRule,
                                   renamingIdentifier: renamingIdentifier))
    }

    // MARK: Declared Codable attributes (`@Attribute` on a type that is not an attribute type)

    /// `attribute` (a `binary` one) with `defaultValue`'s JSON as its default.
    public static func codable<Value: Codable>(_ attribute: Attribute, _ type: Value.Type, defaultValue: Value? = nil) -> Property {
        var attribute = attribute
        if let defaultValue {
            attribute.defaultValue = .binary(ManagedObject.encodedCodable(defaultValue, for: "the default of \(attribute.name)"))
        }
        return .attribute(attribute)
    }

    // MARK: Undeclared properties of other types: the type decides

    /// A to-one relationship without `@Relationship`: its inverse comes from the other side.
    public static func inferred<Destination: PersistentEntity>(_ name: String, _ type: Destination.Type, isOptional: Bool) -> Property {
        toOne(name, type, isOptional: isOptional)
    }

    /// A `Codable` value, stored as JSON in a `binary` attribute.
    public static func inferred<Value: Codable>(_ name: String, _ type: Value.Type, isOptional: Bool, defaultValue: Value? = nil) -> Property {
        codable(Attribute(name, .binary, isOptional: isOptional), type, defaultValue: defaultValue)
    }

    @available(*, unavailable, message: "ordered to-many relationships are not supported; use Set<Destination> with @Relationship(inverse:)")
    public static func inferred<Destination: PersistentEntity>(_ name: String, _ type: [Destination].Type, isOptional: Bool) -> Property {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "ordered to-many relationships are not supported; use Set<Destination> with @Relationship(inverse:)")
    public static func inferred<Destination: PersistentEntity>(
        _ name: String, _ type: [Destination].Type, isOptional: Bool, defaultValue: [Destination]?
    ) -> Property {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "Strata can't store this type: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient")
    public static func inferred<Value>(_ name: String, _ type: Value.Type, isOptional: Bool) -> Property {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "Strata can't store this type: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient")
    public static func inferred<Value>(_ name: String, _ type: Value.Type, isOptional: Bool, defaultValue: Value?) -> Property {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "a relationship has no initial value: remove '= …' (declare it optional to start empty)")
    public static func inferred<Destination: PersistentEntity>(
        _ name: String, _ type: Destination.Type, isOptional: Bool, defaultValue: Destination?
    ) -> Property {
        fatalError("unavailable")
    }
}

extension ManagedObject {
    // The accessors of undeclared properties of other types (see `_EntityMacroSupport`): the
    // property's type picks the overload, each forwarding to the typed subscript it names.
    // Inlinable, so the generated property costs what the hand-written `self[toOne:]` does.

    /// A to-one relationship (`Destination` is a ``ManagedObject``) or a `Codable` value.
    @inlinable
    public subscript<Destination: ManagedObject>(_persisted key: String) -> Destination? {
        get { self[toOne: key] }
        set { self[toOne: key] = newValue }
    }

    @inlinable
    public subscript<Value: Codable>(_persisted key: String) -> Value? {
        get { self[codable: key] }
        set { self[codable: key] = newValue }
    }

    /// A non-optional property without an initial value: a required to-one.
    @inlinable
    public subscript<Destination: ManagedObject>(_persistedRequired key: String) -> Destination {
        get { self[requiredToOne: key] }
        set { self[toOne: key] = newValue }
    }

    @available(*, unavailable, message: "ordered to-many relationships are not supported; use Set<Destination> with @Relationship(inverse:)")
    public subscript<Destination: ManagedObject>(_persisted key: String) -> [Destination]? {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    @available(*, unavailable, message: "a non-optional Codable property needs an initial value (its default): write '= value', or declare it optional ('T?') or required but unset until written ('T!')")
    public subscript<Value: Codable>(_persistedRequired key: String) -> Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}
