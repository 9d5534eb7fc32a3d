public import Foundation

/// A managed object model: the entities of one version of an app's data, defined in Swift.
///
/// A model is validated when created (names, inverses, defaults, regular expressions) and carries a
/// stable **version hash**: SHA-256 over a canonical text of every entity's storage-shaping
/// properties, sorted by name, so declaration order never changes it. A store records the hash of
/// the model that created it and refuses to open with another.
///
/// ```swift
/// let model = try Model(version: "1", entities: [
///     Entity("Category", attributes: [Attribute("name", .string, isOptional: false)],
///            relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category", deleteRule: .cascade)]),
///     Entity("Good", attributes: [Attribute("name", .string, isOptional: false)],
///            relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods")]),
/// ])
/// ```
public struct Model: Sendable, Hashable {
    /// A name for this version ("1", "2024-06"): for people and error messages, not part of the hash.
    public let versionIdentifier: String
    /// The entities, sorted by name.
    public let entities: [Entity]
    /// Hex SHA-256 of the sorted entity hashes.
    public let versionHash: String
    /// Each entity's hex SHA-256 of its canonical schema text.
    public let entityVersionHashes: [String: String]
    let schema: Schema

    public init(version: String = "1", entities: [Entity]) throws {
        versionIdentifier = version
        self.entities = entities.sorted { $0.name < $1.name }
        try ModelValidator.validate(self.entities)
        var hashes: [String: String] = [:]
        for entity in self.entities { hashes[entity.name] = SHA256.hex(Array(entity.canonicalSchemaText.utf8)) }
        entityVersionHashes = hashes
        versionHash = SHA256.hex(Array(hashes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: "\n").utf8))
        schema = Schema(entities: self.entities)
    }

    public func entity(named name: String) -> Entity? { schema.infos[name]?.entity }

    public static func == (lhs: Model, rhs: Model) -> Bool {
        lhs.versionIdentifier == rhs.versionIdentifier && lhs.entities == rhs.entities
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(versionIdentifier)
        hasher.combine(versionHash)
    }

    /// Returns a copy whose entities instantiate the given classes (by entity name). Use it on a
    /// model decoded from JSON to attach your ``ManagedObject`` subclasses.
    public func withClasses(_ classes: [String: ManagedObject.Type]) throws -> Model {
        try Model(version: versionIdentifier, entities: entities.map { entity in
            var entity = entity
            if let type = classes[entity.name] { entity.managedClass = type }
            return entity
        })
    }
}

// MARK: - JSON

extension Model: Codable {
    private enum CodingKeys: String, CodingKey { case format, versionIdentifier, versionHash, entities }

    /// The JSON format version written by ``jsonData()``.
    public static let jsonFormat = 1

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let format = try c.decode(Int.self, forKey: .format)
        guard format == Model.jsonFormat else {
            throw DecodingError.dataCorruptedError(forKey: .format, in: c,
                debugDescription: "model JSON format \(format) is not supported (this Strata reads \(Model.jsonFormat))")
        }
        try self.init(version: c.decode(String.self, forKey: .versionIdentifier),
                      entities: c.decode([Entity].self, forKey: .entities))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Model.jsonFormat, forKey: .format)
        try c.encode(versionIdentifier, forKey: .versionIdentifier)
        try c.encode(versionHash, forKey: .versionHash)
        try c.encode(entities, forKey: .entities)
    }

    /// The model as JSON with sorted keys: byte-identical for equal models. Encoded once per
    /// model value (its copies share it).
    public func jsonData() -> Data {
        schema.modelJSON.withLock { cached in
            if let cached { return Data(cached) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            // Encoding plain strings, ints and arrays cannot fail.
            let data = try! encoder.encode(self)
            cached = Array(data)
            return data
        }
    }

    /// Decodes a model from ``jsonData()``'s form (entities get the plain ``ManagedObject`` class).
    public init(json: Data) throws {
        // The strict reader first (no `Codable`); anything it does not expect is JSONDecoder's,
        // which also gives every error (``ModelJSONReader``).
        if let (version, entities) = ModelJSONReader.read(json) {
            self = try Model(version: version, entities: entities)
            return
        }
        self = try JSONDecoder().decode(Model.self, from: json)
    }

    /// ``init(json:)`` through `JSONDecoder` only (tests compare the two).
    static func decodedByJSONDecoder(_ json: Data) throws -> Model {
        try JSONDecoder().decode(Model.self, from: json)
    }
}

/// A model that cannot be used, with every problem found.
public struct ModelError: Error, Sendable, CustomStringConvertible, Equatable {
    public var problems: [String]
    public var description: String { "invalid model: " + problems.joined(separator: "; ") }
}

enum ModelValidator {
    static func validate(_ entities: [Entity]) throws {
        var problems: [String] = []
        var byName: [String: Entity] = [:]
        for entity in entities {
            if byName[entity.name] != nil { problems.append("entity \(entity.name) is defined twice") }
            byName[entity.name] = entity
            if !isIdentifier(entity.name) || entity.name.lowercased().hasPrefix("strata_") {
                problems.append("entity name '\(entity.name)' must be letters, digits and _ (not starting with a digit, _ or strata_)")
            }
        }
        for entity in entities {
            var seen = Set<String>()
            let names = entity.attributes.map(\.name) + entity.relationships.map(\.name)
            for name in names {
                if !seen.insert(name).inserted { problems.append("\(entity.name).\(name) is defined twice") }
                if !isIdentifier(name) { problems.append("property name '\(entity.name).\(name)' must be letters, digits and _ (not starting with a digit or _)") }
                if ["self", "nil", "null", "true", "false", "yes", "no"].contains(name.lowercased()) {
                    problems.append("property name '\(entity.name).\(name)' is reserved by the predicate language")
                }
            }
            for attribute in entity.attributes {
                if let value = attribute.defaultValue, value.type != attribute.type {
                    problems.append("\(entity.name).\(attribute.name): default \(value) is a \(value.type), not a \(attribute.type)")
                }
                if let pattern = attribute.regex, (try? NSRegularExpression(pattern: pattern)) == nil {
                    problems.append("\(entity.name).\(attribute.name): regex '\(pattern)' does not compile")
                }
                // A float is stored as a REAL too, and a date as its seconds: NaN in any of them
                // would read back as NULL (and, as a model's value, never equals itself).
                let isNaN: Bool = switch attribute.defaultValue {
                case .double(let v)?: v.isNaN
                case .float(let v)?: v.isNaN
                case .date(let v)?: v.timeIntervalSinceReferenceDate.isNaN
                default: false
                }
                if isNaN {
                    problems.append("\(entity.name).\(attribute.name): NaN cannot be stored (SQLite stores NaN as NULL)")
                }
            }
            for r in entity.relationships {
                guard let destination = byName[r.destination] else {
                    problems.append("\(entity.name).\(r.name): destination entity \(r.destination) does not exist")
                    continue
                }
                guard let inverseName = r.inverse else {
                    if r.isToMany { problems.append("\(entity.name).\(r.name): a to-many relationship needs an inverse") }
                    continue
                }
                guard let inverse = destination.relationship(named: inverseName) else {
                    problems.append("\(entity.name).\(r.name): inverse \(r.destination).\(inverseName) does not exist")
                    continue
                }
                if inverse.destination != entity.name || inverse.inverse != r.name {
                    problems.append("\(entity.name).\(r.name) and \(r.destination).\(inverseName) are not each other's inverse")
                }
                if r.isToMany && inverse.isToMany && entity.name == destination.name && inverseName == r.name {
                    problems.append("\(entity.name).\(r.name): a many-to-many relationship cannot be its own inverse; use two relationships")
                }
            }
            for index in entity.compoundIndexes {
                for key in index where entity.attribute(named: key) == nil
                    && entity.relationship(named: key).map({ $0.isToMany }) != false {
                    problems.append("\(entity.name): compound index key '\(key)' is not an attribute or to-one relationship")
                }
            }
            for key in entity.uniquenessConstraints {
                if key.isEmpty { problems.append("\(entity.name): a uniqueness constraint names no property") }
                if Set(key).count != key.count { problems.append("\(entity.name): uniqueness constraint \(key) names a property twice") }
                for name in key where entity.attribute(named: name) == nil
                    && entity.relationship(named: name).map({ $0.isToMany }) != false {
                    problems.append("\(entity.name): uniqueness constraint key '\(name)' is not an attribute or to-one relationship")
                }
            }
        }
        if !problems.isEmpty { throw ModelError(problems: problems) }
    }

    static func isIdentifier(_ name: String) -> Bool {
        // ASCII letters, digits and `_`, a letter first: byte ranges (the Unicode property
        // lookups this replaced cost a third of validating a model; perf).
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        guard let first = name.utf8.first, isLetter(first) else { return false }
        return name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
    }
}
