internal import Foundation

/// Words the parser reads as keywords; a key path segment spelled like one is written `#word`.
let conditionKeywords: Set<String> = [
    "AND", "OR", "NOT", "ANY", "ALL", "NONE", "SOME", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH", "ENDSWITH",
    "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "YES", "NO", "TRUE", "FALSE", "SELF", "CAST",
]

extension Condition: CustomStringConvertible {
    /// The canonical format string: every compound parenthesised, constants in a form that parses
    /// back exactly (`CAST(…, "NSDate")` for dates). `Condition(c.description) == c`.
    public var description: String {
        switch self {
        case .constant(true): "TRUEPREDICATE"
        case .constant(false): "FALSEPREDICATE"
        // Compounds parenthesise themselves, so NOT needs no parentheses of its own: a chain of
        // NOTs stays as shallow as it was written.
        case .not(let c): "NOT \(c)"
        case .and(let terms): terms.isEmpty ? "TRUEPREDICATE" : "(" + terms.map(\.description).joined(separator: " AND ") + ")"
        case .or(let terms): terms.isEmpty ? "FALSEPREDICATE" : "(" + terms.map(\.description).joined(separator: " OR ") + ")"
        case .comparison(let c): c.description
        }
    }
}

extension Comparison: CustomStringConvertible {
    public var description: String {
        var text = quantifier.map { $0.rawValue + " " } ?? ""
        text += "\(lhs) \(op.rawValue)"
        if !options.isEmpty {
            text += "[" + (options.contains(.caseInsensitive) ? "c" : "") + (options.contains(.diacriticInsensitive) ? "d" : "") + "]"
        }
        return text + " \(rhs)"
    }
}

extension Operand: CustomStringConvertible {
    public var description: String {
        switch self {
        case .keyPath(let path):
            path.split(separator: ".", omittingEmptySubsequences: false).map { segment in
                let s = String(segment)
                if s == "SELF" || s.hasPrefix("@") { return s }
                let startsWithDigit = s.unicodeScalars.first.map { ("0"..."9").contains($0) } ?? false
                return conditionKeywords.contains(s.uppercased()) || startsWithDigit ? "#" + s : s
            }.joined(separator: ".")
        case .constant(let value): value.description
        case .list(let items): "{" + items.map(\.description).joined(separator: ", ") + "}"
        case .variable(let name): "$" + name
        }
    }
}

extension ConditionValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let v): v ? "YES" : "NO"
        case .int(let v): String(v)
        case .double(let v): ConditionValue.format(v)
        case .string(let v): ConditionValue.quote(v)
        case .date(let v): "CAST(\(ConditionValue.format(v.timeIntervalSinceReferenceDate)), \"NSDate\")"
        case .data(let v): "CAST(\(ConditionValue.quote(v.base64EncodedString())), \"NSData\")"
        case .uuid(let v): "CAST(\(ConditionValue.quote(v.uuidString)), \"UUID\")"
        case .decimal(let v): "CAST(\(ConditionValue.quote(NSDecimalNumber(decimal: v).description(withLocale: posixLocale))), \"NSDecimalNumber\")"
        case .objectID(let v): "CAST(\(ConditionValue.quote("\(v.entityName)/\(v.primaryKey)")), \"ObjectID\")"
        }
    }

    /// A double that parses back as the same double (and as a double, not an integer).
    static func format(_ value: Double) -> String {
        if value.isInfinite { return value < 0 ? "-1e999" : "1e999" }
        let text = "\(value)"
        return text.contains(".") || text.contains("e") || text.contains("n") ? text : text + ".0"
    }

    static func quote(_ text: String) -> String {
        quotedString(text, escapingDelete: true) { "\\u{" + String($0, radix: 16) + "}" }
    }
}
