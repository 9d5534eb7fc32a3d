/// An entity: a kind of object, stored as one table.
///
/// ```swift
/// Entity("Good", class: Good.self, attributes: [
///     Attribute("name", .string, isOptional: false),
///     Attribute("number", .int64, defaultValue: .int64(0)),
/// ], relationships: [
///     Relationship("category", .toOne, to: "Category", inverse: "goods"),
/// ])
/// ```
public struct Entity: Sendable, Hashable, Codable {
    public var name: String
    public var attributes: [Attribute]
    public var relationships: [Relationship]
    /// Extra multi-column indexes, each a list of attribute or to-one names.
    public var compoundIndexes: [[String]]
    /// Keys no two rows may share, each a list of attribute or to-one names (Core Data's
    /// `uniquenessConstraints`, SwiftData's `#Unique`): `[["isbn"], ["title", "author"]]`. An
    /// attribute marked ``Attribute/isUnique`` is one more, of its own name. Each is a unique
    /// index; an inserted object whose key a row already holds becomes that row when saved. A key
    /// with a `nil` part never collides, as in SQL. Part of the version hash.
    public var uniquenessConstraints: [[String]]
    public var renamingIdentifier: String?
    /// The class instantiated for this entity's objects (``ManagedObject`` or a subclass).
    /// Not part of the JSON form or the version hash; compared by identity.
    public var managedClass: ManagedObject.Type

    public init(
        _ name: String, class managedClass: ManagedObject.Type = ManagedObject.self,
        attributes: [Attribute] = [], relationships: [Relationship] = [],
        compoundIndexes: [[String]] = [], uniquenessConstraints: [[String]] = [], renamingIdentifier: String? = nil
    ) {
        self.name = name
        self.managedClass = managedClass
        self.attributes = attributes
        self.relationships = relationships
        self.compoundIndexes = compoundIndexes
        self.uniquenessConstraints = uniquenessConstraints
        self.renamingIdentifier = renamingIdentifier
    }

    /// Every unique key: each ``Attribute/isUnique`` attribute's, then ``uniquenessConstraints``
    /// (a key listed twice counts once).
    public var uniqueKeys: [[String]] {
        var keys = attributes.filter(\.isUnique).map { [$0.name] }
        for key in uniquenessConstraints where !keys.contains(key) { keys.append(key) }
        return keys
    }

    public func attribute(named name: String) -> Attribute? { attributes.first { $0.name == name } }
    public func relationship(named name: String) -> Relationship? { relationships.first { $0.name == name } }

    private enum CodingKeys: String, CodingKey {
        case name, attributes, relationships, compoundIndexes, uniquenessConstraints, renamingIdentifier
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        attributes = try c.decode([Attribute].self, forKey: .attributes)
        relationships = try c.decode([Relationship].self, forKey: .relationships)
        compoundIndexes = try c.decode([[String]].self, forKey: .compoundIndexes)
        uniquenessConstraints = try c.decodeIfPresent([[String]].self, forKey: .uniquenessConstraints) ?? []
        renamingIdentifier = try c.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        managedClass = ManagedObject.self
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(attributes, forKey: .attributes)
        try c.encode(relationships, forKey: .relationships)
        try c.encode(compoundIndexes, forKey: .compoundIndexes)
        // Only when set: a model without unique keys writes what 0.3.0 wrote.
        if !uniquenessConstraints.isEmpty { try c.encode(uniquenessConstraints, forKey: .uniquenessConstraints) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
    }

    public static func == (lhs: Entity, rhs: Entity) -> Bool {
        lhs.name == rhs.name && lhs.attributes == rhs.attributes && lhs.relationships == rhs.relationships
            && lhs.compoundIndexes == rhs.compoundIndexes && lhs.uniquenessConstraints == rhs.uniquenessConstraints
            && lhs.renamingIdentifier == rhs.renamingIdentifier
            && ObjectIdentifier(lhs.managedClass) == ObjectIdentifier(rhs.managedClass)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(attributes)
        hasher.combine(relationships)
    }

    /// The canonical text the version hash is computed from: everything that shapes storage,
    /// with properties sorted by name so declaration order never matters. Defaults, validation
    /// rules and renaming identifiers do not change storage and are left out (as in Core Data).
    var canonicalSchemaText: String {
        // Appended to one string (no interpolation, no parts joined): a migration hashes the
        // stored model on every opening that migrates.
        func flag(_ value: Bool) -> String { value ? "true" : "false" }
        var text = "entity " + name
        text.reserveCapacity(64 * (attributes.count + relationships.count + 1))
        for a in attributes.sorted(by: { $0.name < $1.name }) {
            text += "\nattribute "; text += a.name; text += " "; text += a.type.rawValue
            text += " optional="; text += flag(a.isOptional); text += " indexed="; text += flag(a.isIndexed)
        }
        for r in relationships.sorted(by: { $0.name < $1.name }) {
            text += "\nrelationship "; text += r.name; text += " "; text += r.kind.rawValue; text += " "; text += r.destination
            text += " inverse="; text += r.inverse ?? "-"; text += " optional="; text += flag(r.isOptional)
        }
        for index in compoundIndexes.map({ $0.joined(separator: ",") }).sorted() {
            text += "\nindex "; text += index
        }
        // Only when there are any: the hash of a model without unique keys is 0.3.0's.
        for key in Set(uniqueKeys.map { $0.joined(separator: ",") }).sorted() {
            text += "\nunique "; text += key
        }
        return text
    }
}
