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
    /// The attribute's name in the previous model version, for lightweight renames.
    public var renamingIdentifier: String?

    public init(
        _ name: String, _ type: AttributeType, isOptional: Bool = true, defaultValue: AttributeValue? = nil,
        minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        regex: String? = nil, isIndexed: Bool = false, renamingIdentifier: String? = nil
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
    }
}
