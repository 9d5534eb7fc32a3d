internal import Foundation

/// Reads ``Model/jsonData()``'s form without `Codable`: a strict JSON parser over the bytes and
/// the model's fields read by name, as the `Codable` conformances read them.
///
/// Opening a store with another model decodes the stored model (a lightweight migration,
/// `strata store info`). Through `JSONDecoder` that was a third of a migration's CPU (0.3 ms
/// for the flights model; `perf`): `Codable`'s generic containers look type metadata up for every
/// field. This reader gives up (returns `nil`) on anything it does not expect — a JSON
/// feature outside the grammar, a duplicate key, a missing field, a value of another type, a
/// number that is not an exact integer where one is needed — and the caller then decodes with
/// `JSONDecoder`, so a model it returns is the one `JSONDecoder` would return, and every error
/// is `JSONDecoder`'s. `ModelJSONReaderTests` checks both on every test model and on mutated
/// JSON.
struct ModelJSONReader {
    /// A parsed JSON value. Numbers keep their text (each field converts it as `JSONDecoder` would).
    indirect enum Value {
        case object(Fields)
        case array([Value])
        case string(String)
        case number(Substring.UTF8View)
        case bool(Bool)
        case null
    }

    /// An object's members in order. A model's objects have at most a dozen keys, so a linear
    /// search beats hashing every key into a dictionary (the reader's largest cost).
    struct Fields {
        var members: [(key: String, value: Value)] = []

        subscript(key: String) -> Value? {
            for member in members where member.key == key { return member.value }
            return nil
        }

        /// Adds a member; false when the key is already there.
        mutating func add(_ key: String, _ value: Value) -> Bool {
            for member in members where member.key == key { return false }
            members.append((key, value))
            return true
        }
    }

    /// The version identifier and entities of a model's JSON, or `nil` (decode with `JSONDecoder`).
    static func read(_ data: Data) -> (version: String, entities: [Entity])? {
        let bytes = [UInt8](data)
        let document = bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer)
            return parser.parseDocument()
        }
        guard let root = document, case .object(let fields) = root else { return nil }
        guard let format = integer(fields["format"]), format == Model.jsonFormat,
              case .string(let version)? = fields["versionIdentifier"],
              case .array(let list)? = fields["entities"] else { return nil }
        var entities: [Entity] = []
        entities.reserveCapacity(list.count)
        for value in list {
            guard let entity = entity(value) else { return nil }
            entities.append(entity)
        }
        return (version, entities)
    }

    // MARK: Fields

    private static func entity(_ value: Value) -> Entity? {
        guard case .object(let fields) = value, case .string(let name)? = fields["name"],
              case .array(let attributeList)? = fields["attributes"],
              case .array(let relationshipList)? = fields["relationships"],
              case .array(let indexList)? = fields["compoundIndexes"],
              let renaming = optionalString(fields["renamingIdentifier"]) else { return nil }
        var attributes: [Attribute] = []
        for value in attributeList {
            guard let attribute = attribute(value) else { return nil }
            attributes.append(attribute)
        }
        var relationships: [Relationship] = []
        for value in relationshipList {
            guard let relationship = relationship(value) else { return nil }
            relationships.append(relationship)
        }
        guard let indexes = nameLists(indexList) else { return nil }
        var unique: [[String]] = []
        switch fields["uniquenessConstraints"] {
        case nil: break
        case .array(let list)?:
            guard let lists = nameLists(list) else { return nil }
            unique = lists
        default: return nil
        }
        return Entity(name, attributes: attributes, relationships: relationships, compoundIndexes: indexes,
                      uniquenessConstraints: unique, renamingIdentifier: renaming.value)
    }

    /// `[["a", "b"], ["c"]]`: lists of property names.
    private static func nameLists(_ list: [Value]) -> [[String]]? {
        var lists: [[String]] = []
        for value in list {
            guard case .array(let names) = value else { return nil }
            var names2: [String] = []
            for name in names {
                guard case .string(let text) = name else { return nil }
                names2.append(text)
            }
            lists.append(names2)
        }
        return lists
    }

    private static func attribute(_ value: Value) -> Attribute? {
        guard case .object(let fields) = value, case .string(let name)? = fields["name"],
              case .string(let typeName)? = fields["type"], let type = AttributeType(rawValue: typeName),
              case .bool(let isOptional)? = fields["isOptional"], case .bool(let isIndexed)? = fields["isIndexed"],
              let minValue = optionalDouble(fields["minValue"]), let maxValue = optionalDouble(fields["maxValue"]),
              let minLength = optionalInteger(fields["minLength"]), let maxLength = optionalInteger(fields["maxLength"]),
              let regex = optionalString(fields["regex"]), let renaming = optionalString(fields["renamingIdentifier"]),
              let defaultValue = optionalAttributeValue(fields["defaultValue"]) else { return nil }
        var attribute = Attribute(name, type, isOptional: isOptional)
        attribute.defaultValue = defaultValue.value
        attribute.minValue = minValue.value
        attribute.maxValue = maxValue.value
        attribute.minLength = minLength.value
        attribute.maxLength = maxLength.value
        attribute.regex = regex.value
        attribute.isIndexed = isIndexed
        attribute.renamingIdentifier = renaming.value
        switch fields["preservesValueOnDeletion"] {
        case nil: break
        case .bool(let preserves)?: attribute.preservesValueOnDeletion = preserves
        default: return nil
        }
        switch fields["isUnique"] {
        case nil: break
        case .bool(let unique)?: attribute.isUnique = unique
        default: return nil
        }
        return attribute
    }

    private static func relationship(_ value: Value) -> Relationship? {
        guard case .object(let fields) = value, case .string(let name)? = fields["name"],
              case .string(let kindName)? = fields["kind"], let kind = Relationship.Kind(rawValue: kindName),
              case .string(let destination)? = fields["destination"],
              case .string(let ruleName)? = fields["deleteRule"], let rule = Relationship.DeleteRule(rawValue: ruleName),
              case .bool(let isOptional)? = fields["isOptional"],
              let inverse = optionalString(fields["inverse"]),
              let renaming = optionalString(fields["renamingIdentifier"]) else { return nil }
        return Relationship(name, kind, to: destination, inverse: inverse.value, deleteRule: rule,
                            isOptional: isOptional, renamingIdentifier: renaming.value)
    }

    /// An optional field: `.some(nil)` when absent or `null` (as `decodeIfPresent`), `nil` when
    /// present with another type (give up).
    private struct Present<T> { var value: T? }

    private static func optionalString(_ value: Value?) -> Present<String>? {
        switch value {
        case nil, .null?: Present(value: nil)
        case .string(let text)?: Present(value: text)
        default: nil
        }
    }

    private static func optionalInteger(_ value: Value?) -> Present<Int>? {
        switch value {
        case nil, .null?: return Present(value: nil)
        default: return integer(value).map { Present(value: $0) }
        }
    }

    private static func optionalDouble(_ value: Value?) -> Present<Double>? {
        switch value {
        case nil, .null?: return Present(value: nil)
        case .number(let text)?:
            // Finite values only: anything else is JSONDecoder's to judge.
            guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite else { return nil }
            return Present(value: number)
        default: return nil
        }
    }

    private static func optionalAttributeValue(_ value: Value?) -> Present<AttributeValue>? {
        switch value {
        case nil, .null?: return Present(value: nil)
        case .object(let fields)?:
            guard case .string(let typeName)? = fields["type"], let type = AttributeType(rawValue: typeName),
                  case .string(let text)? = fields["value"] else { return nil }
            // As AttributeValue's `init(from:)` reads it; a bad value gives up (JSONDecoder throws).
            let decoded = AttributeValue(jsonText: text, as: type)
            return decoded.map { Present(value: $0) }
        default: return nil
        }
    }

    /// A JSON integer literal (no fraction, no exponent) that fits an `Int`.
    private static func integer(_ value: Value?) -> Int? {
        guard case .number(let text)? = value else { return nil }
        guard !text.contains(UInt8(ascii: ".")), !text.contains(UInt8(ascii: "e")), !text.contains(UInt8(ascii: "E")) else { return nil }
        return Int(String(decoding: text, as: UTF8.self))
    }

    // MARK: Parsing (RFC 8259, strictly, on the shared ``JSONScanner``)

    struct Parser {
        private var scanner: JSONScanner

        /// Lives only inside the `withUnsafeBufferPointer` that lends `bytes`.
        init(bytes: UnsafeBufferPointer<UInt8>) { scanner = JSONScanner(bytes) }

        mutating func parseDocument() -> Value? {
            do {
                scanner.skipWhitespace()
                let value = try Parser.value(&scanner, depth: 0)
                scanner.skipWhitespace()
                return scanner.isAtEnd ? value : nil
            } catch {
                return nil
            }
        }

        /// One value. Nesting limit: the model's JSON is 5 levels deep; deeper input is
        /// JSONDecoder's.
        private static func value(_ scanner: inout JSONScanner, depth: Int) throws(JSONScanner.Failure) -> Value {
            switch scanner.next {
            case UInt8(ascii: "{")?:
                guard depth < 32 else { throw scanner.failure("nested too deep") }
                var fields = Fields()
                try scanner.object { scanner, key throws(JSONScanner.Failure) in
                    let member = try value(&scanner, depth: depth + 1)
                    // A repeated key: which one counts is JSONDecoder's to say.
                    // The lookup is linear: an object far larger than any of a model's (a dozen
                    // keys) is JSONDecoder's, so no input makes the reader quadratic.
                    guard fields.members.count < 64, fields.add(key, member) else { throw scanner.failure("a repeated key") }
                }
                return .object(fields)
            case UInt8(ascii: "[")?:
                guard depth < 32 else { throw scanner.failure("nested too deep") }
                var values: [Value] = []
                try scanner.array { scanner throws(JSONScanner.Failure) in values.append(try value(&scanner, depth: depth + 1)) }
                return .array(values)
            case UInt8(ascii: "\"")?: return .string(try scanner.string())
            case UInt8(ascii: "t")?: try scanner.literal("true"); return .bool(true)
            case UInt8(ascii: "f")?: try scanner.literal("false"); return .bool(false)
            case UInt8(ascii: "n")?: try scanner.literal("null"); return .null
            case nil: throw scanner.failure("unexpected end")
            default: return .number(try scanner.number().text)
            }
        }
    }
}
