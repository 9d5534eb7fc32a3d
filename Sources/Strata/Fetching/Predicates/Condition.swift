public import Foundation

/// A predicate in NSPredicate's format language, parsed once into this tree. (Not `Predicate`:
/// Foundation has one.)
///
/// ```swift
/// let tall = try Condition("isEven == YES AND height < %@", 100)
/// let named = try Condition("department.name BEGINSWITH[cd] %@", "école")
/// let busy = try Condition("ANY projects.title == 'Apollo' OR projects.@count > 3")
/// let built = Condition.key("height") < 100 && .key("isEven") == true      // the builder API
/// ```
///
/// The same tree runs as bound SQL (a fetch) and in memory (unsaved objects, the results
/// controller); the two agree on every input. ``description`` is a canonical format string that
/// parses back to an equal tree.
public indirect enum Condition: Sendable, Hashable {
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    case not(Condition)
    /// Every term holds. Chains are flat (`a AND b AND c` is one node with three terms), so a
    /// predicate of thousands of terms is shallow; an empty list is true.
    case and([Condition])
    /// At least one term holds; an empty list is false.
    case or([Condition])
    case comparison(Comparison)
}

/// One comparison: `[quantifier] lhs operator[options] rhs`.
public struct Comparison: Sendable, Hashable {
    public enum Quantifier: String, Sendable, Hashable {
        /// `ANY` (also spelled `SOME`): at least one member satisfies the comparison.
        case anyOf = "ANY"
        /// `ALL`: every member satisfies it (true for no members).
        case allOf = "ALL"
        /// `NONE`: no member satisfies it.
        case noneOf = "NONE"
    }

    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case between = "BETWEEN"
        case `in` = "IN"
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case like = "LIKE"
        case matches = "MATCHES"

        var isStringOperator: Bool {
            switch self {
            case .contains, .beginsWith, .endsWith, .like, .matches: true
            default: false
            }
        }
    }

    /// `[c]` case-insensitive, `[d]` diacritic-insensitive, `[cd]` both.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let caseInsensitive = Options(rawValue: 1)
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    public var quantifier: Quantifier?
    public var lhs: Operand
    public var op: Operator
    public var options: Options
    public var rhs: Operand

    public init(_ lhs: Operand, _ op: Operator, _ rhs: Operand, options: Options = [], quantifier: Quantifier? = nil) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.options = options
        self.quantifier = quantifier
    }
}

/// One side of a comparison.
public indirect enum Operand: Sendable, Hashable {
    /// A dotted key path (`department.name`, `employees.@count`, `employees.@sum.salary`, `SELF`).
    case keyPath(String)
    case constant(ConditionValue)
    /// `{a, b, c}`: for `IN` and `BETWEEN`.
    case list([Operand])
    /// `$NAME`, replaced by ``Condition/substituting(_:)``.
    case variable(String)
}

extension Operand {
    /// A constant for a builder value (unsupported types become `nil`, which matches nothing but `== nil`).
    static func value(_ value: Any?) -> Operand {
        if let converted = ConditionValue(argument: value) { return .constant(converted) }
        return .constant(.null)
    }
}

/// A constant in a condition.
///
/// Equality follows what a fetch compares: strings are equal when their UTF-8 bytes are (so `"é"`
/// and `"e\u{301}"`, equal as Swift strings, are different constants, as they match different rows).
public enum ConditionValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case decimal(Decimal)
    case objectID(ObjectID)

    /// Converts a format argument or substitution value. `nil` for a type the language has no constant for.
    init?(argument: Any?) {
        guard let argument else { self = .null; return }
        if !(argument is Bool), let integer = AttributeValue.integer(argument) {
            self = .int(integer)
            return
        }
        switch argument {
        case is NSNull: self = .null
        case let v as ConditionValue: self = v
        case let v as Bool: self = .bool(v)
        case is UInt, is UInt64: return nil          // beyond Int64 (smaller ones converted above)
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(v))
        case let v as String: self = .string(v)
        case let v as Substring: self = .string(String(v))
        case let v as Date: self = .date(v)
        case let v as Data: self = .data(v)
        case let v as UUID: self = .uuid(v)
        case let v as URL: self = .string(v.absoluteString)
        case let v as Decimal: self = .decimal(v)
        case let v as ObjectID: self = .objectID(v)
        case let v as ManagedObject: self = .objectID(v.objectID)
        case let v as AttributeValue: self.init(argument: v.swiftValue)
        default:
            if let optional = argument as? any OptionalProtocol, optional.isNil { self = .null; return }
            return nil
        }
    }
}

extension ConditionValue {
    public static func == (lhs: ConditionValue, rhs: ConditionValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)): a.utf8.elementsEqual(b.utf8)
        case let (.date(a), .date(b)): a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case let (.data(a), .data(b)): a == b
        case let (.uuid(a), .uuid(b)): a == b
        case let (.decimal(a), .decimal(b)): a == b
        case let (.objectID(a), .objectID(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let v): hasher.combine(1); hasher.combine(v)
        case .int(let v): hasher.combine(2); hasher.combine(v)
        case .double(let v): hasher.combine(3); hasher.combine(v.bitPattern)
        case .string(let v): hasher.combine(4); hasher.combine(v.utf8.count); for byte in v.utf8 { hasher.combine(byte) }
        case .date(let v): hasher.combine(5); hasher.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): hasher.combine(6); hasher.combine(v)
        case .uuid(let v): hasher.combine(7); hasher.combine(v)
        case .decimal(let v): hasher.combine(8); hasher.combine(v)
        case .objectID(let v): hasher.combine(9); hasher.combine(v)
        }
    }
}

protocol OptionalProtocol { var isNil: Bool { get } }
extension Optional: OptionalProtocol { var isNil: Bool { self == nil } }

// MARK: - Builder API

extension Condition {
    /// Parses an NSPredicate-style format string. `%@`, `%K`, `%d`, `%i`, `%ld`, `%lld`, `%f`, `%lf`
    /// take `arguments` in order.
    ///
    /// - Throws: ``ConditionParseError`` naming the line, column and what was expected.
    public init(_ format: String, _ arguments: Any?...) throws {
        var parser = ConditionParser(format, arguments: arguments)
        self = try parser.parse()
    }

    /// Parses with an array of arguments.
    public init(format: String, argumentArray: [Any?]) throws {
        var parser = ConditionParser(format, arguments: argumentArray)
        self = try parser.parse()
    }

    /// Replaces every `$NAME` by `variables["NAME"]`.
    /// - Throws: ``ConditionParseError`` when a variable has no value or a value of no supported type.
    public func substituting(_ variables: [String: Any?]) throws -> Condition {
        try mapOperands { operand in
            guard case .variable(let name) = operand else { return operand }
            guard let entry = variables[name] else {
                throw ConditionParseError(message: "no value for $\(name)", expected: "a value for every variable", format: "$\(name)", offset: 0)
            }
            return try ConditionParser.operand(fromArgument: entry, format: "$\(name)", offset: 0)
        }
    }

    func mapOperands(_ transform: (Operand) throws -> Operand) rethrows -> Condition {
        func mapOperand(_ operand: Operand) throws -> Operand {
            if case .list(let items) = operand { return .list(try items.map(mapOperand)) }
            return try transform(operand)
        }
        switch self {
        case .constant: return self
        case .not(let c): return .not(try c.mapOperands(transform))
        case .and(let terms): return .and(try terms.map { try $0.mapOperands(transform) })
        case .or(let terms): return .or(try terms.map { try $0.mapOperands(transform) })
        case .comparison(var c):
            c.lhs = try mapOperand(c.lhs)
            c.rhs = try mapOperand(c.rhs)
            return .comparison(c)
        }
    }

    public static let truePredicate = Condition.constant(true)
    public static let falsePredicate = Condition.constant(false)

    /// A key path operand for the builder: `.key("height") < 100`.
    public static func key(_ path: String) -> ConditionKey { ConditionKey(path: path) }

    /// `a && b && c` builds one flat AND of three terms, as the parser does for `a AND b AND c`.
    public static func && (lhs: Condition, rhs: Condition) -> Condition {
        if case .and(let terms) = lhs { return .and(terms + [rhs]) }
        return .and([lhs, rhs])
    }
    public static func || (lhs: Condition, rhs: Condition) -> Condition {
        if case .or(let terms) = lhs { return .or(terms + [rhs]) }
        return .or([lhs, rhs])
    }
    public static prefix func ! (condition: Condition) -> Condition { .not(condition) }
}

/// A key path in the builder API.
public struct ConditionKey: Sendable {
    public let path: String

    private func compare(_ op: Comparison.Operator, _ value: Any?, _ options: Comparison.Options = []) -> Condition {
        .comparison(Comparison(.keyPath(path), op, Operand.value(value), options: options))
    }

    public static func == (key: ConditionKey, value: Any?) -> Condition { key.compare(.equal, value) }
    public static func != (key: ConditionKey, value: Any?) -> Condition { key.compare(.notEqual, value) }
    public static func < (key: ConditionKey, value: Any?) -> Condition { key.compare(.less, value) }
    public static func <= (key: ConditionKey, value: Any?) -> Condition { key.compare(.lessOrEqual, value) }
    public static func > (key: ConditionKey, value: Any?) -> Condition { key.compare(.greater, value) }
    public static func >= (key: ConditionKey, value: Any?) -> Condition { key.compare(.greaterOrEqual, value) }

    public func contains(_ text: String, _ options: Comparison.Options = []) -> Condition { compare(.contains, text, options) }
    public func beginsWith(_ text: String, _ options: Comparison.Options = []) -> Condition { compare(.beginsWith, text, options) }
    public func endsWith(_ text: String, _ options: Comparison.Options = []) -> Condition { compare(.endsWith, text, options) }
    public func like(_ pattern: String, _ options: Comparison.Options = []) -> Condition { compare(.like, pattern, options) }
    public func matches(_ regex: String, _ options: Comparison.Options = []) -> Condition { compare(.matches, regex, options) }
    public func isIn(_ values: [Any?]) -> Condition {
        .comparison(Comparison(.keyPath(path), .in, .list(values.map(Operand.value))))
    }
    public func between(_ low: Any?, _ high: Any?) -> Condition {
        .comparison(Comparison(.keyPath(path), .between, .list([Operand.value(low), Operand.value(high)])))
    }
    /// `ANY path <op> value` and friends: `.key("employees.name").any == "Ann"`.
    public var any: QuantifiedKey { QuantifiedKey(path: path, quantifier: .anyOf) }
    public var all: QuantifiedKey { QuantifiedKey(path: path, quantifier: .allOf) }
    public var none: QuantifiedKey { QuantifiedKey(path: path, quantifier: .noneOf) }
}

/// A quantified key path in the builder API.
public struct QuantifiedKey: Sendable {
    let path: String
    let quantifier: Comparison.Quantifier
    private func compare(_ op: Comparison.Operator, _ value: Any?) -> Condition {
        .comparison(Comparison(.keyPath(path), op, Operand.value(value), quantifier: quantifier))
    }
    public static func == (key: QuantifiedKey, value: Any?) -> Condition { key.compare(.equal, value) }
    public static func != (key: QuantifiedKey, value: Any?) -> Condition { key.compare(.notEqual, value) }
    public static func < (key: QuantifiedKey, value: Any?) -> Condition { key.compare(.less, value) }
    public static func > (key: QuantifiedKey, value: Any?) -> Condition { key.compare(.greater, value) }
}
