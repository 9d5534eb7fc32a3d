/// An attribute of an entity: a name, a type, optionality, a default, validation rules and indexing.
///
/// ```swift
/// Attribute("name", .string, isOptional: false, maxLength: 80, isIndexed: true)
/// Attribute("number", .int32, defaultValue: .int32(0), minValue: 0, maxValue: 10_000)
/// ```
public struct Attribute: Sendable, Hashable, Codable {
    public var name: String
    public var type: AttributeType
    /// A non-optional attribute must hold a value when saved (its default counts).
    public var isOptional: Bool
    /// The value a newly inserted object starts with.
    public var defaultValue: AttributeValue?
    /// Inclusive numeric bounds (numbers; dates in seconds since 2001-01-01).
    public var minValue: Double?
    public var maxValue: Double?
    /// Inclusive length bounds: characters for strings, bytes for binary data.
    public var minLength: Int?
    public var maxLength: Int?
    /// A regular expression (NSRegularExpression syntax) that the whole string must match.
    public var regex: String?
    /// Whether the column gets its own index.
    public var isIndexed: Bool
    /// Whether no two rows may hold the same value (SwiftData's `@Attribute(.unique)`): a unique
    /// index on the column, and an inserted object whose value a row already holds *becomes* that
    /// row when saved (see ``Entity/uniquenessConstraints`` and <doc:ImportingALibrary>). Rows
    /// without a value (`nil`) never collide, as in SQL. Part of the version hash.
    public var isUnique: Bool
    /// The attribute's name in the previous model version, for lightweight renames.
    public var renamingIdentifier: String?
    /// Whether a delete keeps this attribute's last value in the store's history (SwiftData's
    /// `preserveValueOnDeletion`): the delete's ``HistoryChange/preservedValues`` hold it, so that a
    /// reader of the history (a sync) can tell which row went. Not part of the version hash: it
    /// shapes no column, and turning it on or off needs no migration.
    public var preservesValueOnDeletion: Bool

    public init(
        _ name: String, _ type: AttributeType, isOptional: Bool = true, defaultValue: AttributeValue? = nil,
        minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        regex: String? = nil, isIndexed: Bool = false, renamingIdentifier: String? = nil,
        preservesValueOnDeletion: Bool = false, isUnique: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.regex = regex
        self.isIndexed = isIndexed
        self.renamingIdentifier = renamingIdentifier
        self.preservesValueOnDeletion = preservesValueOnDeletion
        self.isUnique = isUnique
    }
}

// Written by hand so that `preservesValueOnDeletion` and `isUnique` are written only when set: the model JSON of
// a store made by 0.2.0 (which had no such key) reads the same, and a model without the option
// writes exactly what 0.2.0 wrote.
extension Attribute {
    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional, defaultValue, minValue, maxValue, minLength, maxLength, regex, isIndexed,
             renamingIdentifier, preservesValueOnDeletion, isUnique
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try c.decode(String.self, forKey: .name), try c.decode(AttributeType.self, forKey: .type),
                  isOptional: try c.decode(Bool.self, forKey: .isOptional),
                  defaultValue: try c.decodeIfPresent(AttributeValue.self, forKey: .defaultValue),
                  minValue: try c.decodeIfPresent(Double.self, forKey: .minValue),
                  maxValue: try c.decodeIfPresent(Double.self, forKey: .maxValue),
                  minLength: try c.decodeIfPresent(Int.self, forKey: .minLength),
                  maxLength: try c.decodeIfPresent(Int.self, forKey: .maxLength),
                  regex: try c.decodeIfPresent(String.self, forKey: .regex),
                  isIndexed: try c.decode(Bool.self, forKey: .isIndexed),
                  renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
                  preservesValueOnDeletion: try c.decodeIfPresent(Bool.self, forKey: .preservesValueOnDeletion) ?? false,
                  isUnique: try c.decodeIfPresent(Bool.self, forKey: .isUnique) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(type, forKey: .type)
        try c.encode(isOptional, forKey: .isOptional)
        try c.encodeIfPresent(defaultValue, forKey: .defaultValue)
        try c.encodeIfPresent(minValue, forKey: .minValue)
        try c.encodeIfPresent(maxValue, forKey: .maxValue)
        try c.encodeIfPresent(minLength, forKey: .minLength)
        try c.encodeIfPresent(maxLength, forKey: .maxLength)
        try c.encodeIfPresent(regex, forKey: .regex)
        try c.encode(isIndexed, forKey: .isIndexed)
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        if preservesValueOnDeletion { try c.encode(true, forKey: .preservesValueOnDeletion) }
        if isUnique { try c.encode(true, forKey: .isUnique) }
    }
}
