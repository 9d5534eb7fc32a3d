public import Foundation

/// A non-nil attribute value, tagged with its type.
///
/// You rarely write these by hand: `setValue(_:forKey:)` takes plain Swift values and
/// converts them (an `Int` into an `int16` attribute is range-checked, a `String` into a number is
/// refused). Defaults in a model are `AttributeValue`s, and they have literal forms:
/// `.string("Misc")`, `.int64(0)`.
public enum AttributeValue: Sendable, Hashable, CustomStringConvertible {
    case int16(Int16)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case float(Float)
    case bool(Bool)
    case string(String)
    case date(Date)
    case binary(Data)
    case uuid(UUID)
    case url(URL)
    case decimal(Decimal)

    /// The attribute type this value belongs to.
    public var type: AttributeType {
        switch self {
        case .int16: .int16
        case .int32: .int32
        case .int64: .int64
        case .double: .double
        case .float: .float
        case .bool: .bool
        case .string: .string
        case .date: .date
        case .binary: .binary
        case .uuid: .uuid
        case .url: .url
        case .decimal: .decimal
        }
    }

    /// The plain Swift value (`Int16`, `String`, `Date`, …).
    public var swiftValue: any Sendable {
        switch self {
        case .int16(let v): v
        case .int32(let v): v
        case .int64(let v): v
        case .double(let v): v
        case .float(let v): v
        case .bool(let v): v
        case .string(let v): v
        case .date(let v): v
        case .binary(let v): v
        case .uuid(let v): v
        case .url(let v): v
        case .decimal(let v): v
        }
    }

    // MARK: Plain values
    //
    // Each accessor returns the value when it is of that type and `nil` otherwise; nothing is
    // parsed or rounded. `description` is not a plain value: it quotes strings (`"Ann"`) and
    // abbreviates data (`<3 bytes>`).

    /// The string of a `.string` value.
    public var stringValue: String? {
        if case .string(let v) = self { return v }
        return nil
    }

    /// The integer of an `.int16`, `.int32` or `.int64` value, widened to `Int64`.
    public var int64Value: Int64? {
        switch self {
        case .int16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .int64(let v): v
        default: nil
        }
    }

    /// The integer of an `.int16`, `.int32` or `.int64` value as an `Int` (`nil` as well when it
    /// doesn't fit, which only happens where `Int` has 32 bits).
    public var intValue: Int? { int64Value.flatMap { Int(exactly: $0) } }

    /// The number of a `.double` or `.float` value, as a `Double` (a `Float` widens exactly).
    public var doubleValue: Double? {
        switch self {
        case .double(let v): v
        case .float(let v): Double(v)
        default: nil
        }
    }

    /// The number of a `.float` value.
    public var floatValue: Float? {
        if case .float(let v) = self { return v }
        return nil
    }

    /// The flag of a `.bool` value.
    public var boolValue: Bool? {
        if case .bool(let v) = self { return v }
        return nil
    }

    /// The date of a `.date` value.
    public var dateValue: Date? {
        if case .date(let v) = self { return v }
        return nil
    }

    /// The bytes of a `.binary` value.
    public var dataValue: Data? {
        if case .binary(let v) = self { return v }
        return nil
    }

    /// The UUID of a `.uuid` value.
    public var uuidValue: UUID? {
        if case .uuid(let v) = self { return v }
        return nil
    }

    /// The URL of a `.url` value.
    public var urlValue: URL? {
        if case .url(let v) = self { return v }
        return nil
    }

    /// The decimal of a `.decimal` value.
    public var decimalValue: Decimal? {
        if case .decimal(let v) = self { return v }
        return nil
    }

    /// The value as a `Double`, for numeric range validation and sorting.
    var numericValue: Double? {
        switch self {
        case .int16(let v): Double(v)
        case .int32(let v): Double(v)
        case .int64(let v): Double(v)
        case .double(let v): v
        case .float(let v): Double(v)
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        case .date(let v): v.timeIntervalSinceReferenceDate
        case .bool(let v): v ? 1 : 0
        default: nil
        }
    }

    /// A readable form for messages and logs: strings quoted (`"Ann"`), data as its size
    /// (`<3 bytes>`), everything else as Swift prints it. For the plain value use ``stringValue``,
    /// ``int64Value`` and the other accessors, or ``swiftValue``.
    public var description: String {
        switch self {
        case .string(let v): "\"\(v)\""
        case .binary(let v): "<\(v.count) bytes>"
        // Foundation's Date.description stops on a date that is not finite (a NaN read from JSON).
        case .date(let v) where !v.timeIntervalSinceReferenceDate.isFinite: "date(\(v.timeIntervalSinceReferenceDate))"
        default: "\(swiftValue)"
        }
    }

    /// Converts a plain Swift value to an attribute value of `type`, or `nil` when it is the wrong
    /// type or out of the type's range. The reason is in ``conversionFailure(_:to:)``.
    static func convert(_ value: Any, to type: AttributeType) -> AttributeValue? {
        // The exact Swift type first: one successful cast, no failed ones (a failed cast from
        // `Any` walks the bridging machinery and costs several times a successful one).
        switch type {
        case .string: if let v = value as? String { return .string(v) }
        case .int64: if let v = value as? Int64 { return .int64(v) }
        case .bool: if let v = value as? Bool { return .bool(v) }
        case .double: if let v = value as? Double { return .double(v) }
        case .int16, .int32, .float, .date, .binary, .uuid, .url, .decimal: break
        }
        if let tagged = value as? AttributeValue {
            return tagged.type == type ? tagged : convert(tagged.swiftValue, to: type)
        }
        switch type {
        case .int16: return integer(value).flatMap(Int16.init(exactly:)).map(AttributeValue.int16)
        case .int32: return integer(value).flatMap(Int32.init(exactly:)).map(AttributeValue.int32)
        case .int64: return integer(value).map(AttributeValue.int64)
        case .double:
            if let v = value as? Double { return .double(v) }
            if let v = value as? Float { return .double(Double(v)) }
            if let v = integer(value), let d = Double(exactly: v) { return .double(d) }
            return nil
        case .float:
            if let v = value as? Float { return .float(v) }
            if let v = value as? Double { return .float(Float(v)) }
            if let v = integer(value), let f = Float(exactly: v) { return .float(f) }
            return nil
        case .bool: return (value as? Bool).map(AttributeValue.bool)
        case .string:
            if let v = value as? String { return .string(v) }
            if let v = value as? Substring { return .string(String(v)) }
            return nil
        case .date: return (value as? Date).map(AttributeValue.date)
        case .binary:
            if let v = value as? Data { return .binary(v) }
            if let v = value as? [UInt8] { return .binary(Data(v)) }
            return nil
        case .uuid: return (value as? UUID).map(AttributeValue.uuid)
        case .url: return (value as? URL).map(AttributeValue.url)
        case .decimal:
            if let v = value as? Decimal { return .decimal(v) }
            if let v = integer(value) { return .decimal(Decimal(v)) }
            if let v = value as? Double, v.isFinite { return .decimal(Decimal(v)) }
            return nil
        }
    }

    /// Any Swift integer as `Int64`, or `nil` (a `Bool` is not an integer here).
    static func integer(_ value: Any) -> Int64? {
        switch value {
        case let v as Int: Int64(v)
        case let v as Int64: v
        case let v as Int32: Int64(v)
        case let v as Int16: Int64(v)
        case let v as Int8: Int64(v)
        case let v as UInt8: Int64(v)
        case let v as UInt16: Int64(v)
        case let v as UInt32: Int64(v)
        case let v as UInt: Int64(exactly: v)
        case let v as UInt64: Int64(exactly: v)
        default: nil
        }
    }
}

// MARK: - JSON: a tagged, lossless form ({"type": "double", "value": "-0.0"})

extension AttributeValue: Codable {
    private enum CodingKeys: String, CodingKey { case type, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(AttributeType.self, forKey: .type)
        let text = try container.decode(String.self, forKey: .value)
        func bad() -> DecodingError {
            .dataCorruptedError(forKey: .value, in: container, debugDescription: "'\(text)' is not a valid \(type) value")
        }
        guard let value = AttributeValue(jsonText: text, as: type) else { throw bad() }
        self = value
    }

    /// A value from its JSON text as ``encode(to:)`` writes it (`nil` when the text is not a
    /// valid value of `type`); shared with ``ModelJSONReader``.
    init?(jsonText text: String, as type: AttributeType) {
        switch type {
        case .int16: guard let v = Int16(text) else { return nil }; self = .int16(v)
        case .int32: guard let v = Int32(text) else { return nil }; self = .int32(v)
        case .int64: guard let v = Int64(text) else { return nil }; self = .int64(v)
        case .double: guard let v = UInt64(text, radix: 16) else { return nil }; self = .double(Double(bitPattern: v))
        case .float: guard let v = UInt32(text, radix: 16) else { return nil }; self = .float(Float(bitPattern: v))
        case .bool: guard let v = Bool(text) else { return nil }; self = .bool(v)
        case .string: self = .string(text)
        case .date:
            guard let v = UInt64(text, radix: 16) else { return nil }
            self = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: v)))
        case .binary: guard let v = Data(base64Encoded: text) else { return nil }; self = .binary(v)
        case .uuid: guard let v = UUID(uuidString: text) else { return nil }; self = .uuid(v)
        case .url: guard let v = URL(string: text) else { return nil }; self = .url(v)
        case .decimal: guard let v = Decimal(string: text, locale: posixLocale) else { return nil }; self = .decimal(v)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        let text: String = switch self {
        case .int16(let v): String(v)
        case .int32(let v): String(v)
        case .int64(let v): String(v)
        // Floating point values as bit patterns: exact for -0.0, NaN payloads and subnormals.
        case .double(let v): String(v.bitPattern, radix: 16)
        case .float(let v): String(v.bitPattern, radix: 16)
        case .bool(let v): String(v)
        case .string(let v): v
        case .date(let v): String(v.timeIntervalSinceReferenceDate.bitPattern, radix: 16)
        case .binary(let v): v.base64EncodedString()
        case .uuid(let v): v.uuidString
        case .url(let v): v.absoluteString
        case .decimal(let v): NSDecimalNumber(decimal: v).description(withLocale: Locale(identifier: "en_US_POSIX"))
        }
        try container.encode(text, forKey: .value)
    }
}
