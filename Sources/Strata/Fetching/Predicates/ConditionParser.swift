internal import Foundation

/// Recursive-descent parser for NSPredicate's format language.
///
/// Precedence, loosest first: `OR`/`||`, `AND`/`&&`, `NOT`/`!`, comparison. `AND` and `OR` are
/// left-associative. Keywords are case-insensitive; `#word` escapes a key named like a keyword.
struct ConditionParser {
    enum Token: Equatable {
        case identifier(String, escaped: Bool)
        case integer(Int64)
        case double(Double)
        case string(String)
        case format(String)          // "@", "K", "d", "i", "ld", "lld", "f", "lf"
        case variable(String)
        case symbol(String)          // ( ) { } , . [ ] == != < <= > >= && || ! @
        case end
    }

    private let format: String
    private let scalars: [Unicode.Scalar]
    private var arguments: [Any?]
    private var argumentIndex = 0
    private var tokens: [(token: Token, offset: Int)] = []
    private var position = 0
    private var depth = 0
    static let maximumDepth = 100

    init(_ format: String, arguments: [Any?]) {
        self.format = format
        scalars = Array(format.unicodeScalars)
        self.arguments = arguments
    }

    private func error(_ message: String, expected: String, at offset: Int? = nil) -> ConditionParseError {
        ConditionParseError(message: message, expected: expected, format: format,
                            offset: offset ?? (position < tokens.count ? tokens[position].offset : scalars.count))
    }

    mutating func parse() throws -> Condition {
        try tokenize()
        let condition = try parseOr()
        guard case .end = current else {
            throw error("unexpected \(describe(current))", expected: "AND, OR or the end of the predicate")
        }
        if argumentIndex < arguments.count {
            throw error("\(arguments.count - argumentIndex) format argument(s) left unused", expected: "one argument per %@, %K, %d or %f")
        }
        return condition
    }

    // MARK: Lexer

    private mutating func tokenize() throws {
        var i = 0
        func peek(_ offset: Int = 0) -> Unicode.Scalar? { i + offset < scalars.count ? scalars[i + offset] : nil }
        while i < scalars.count {
            let c = scalars[i]
            let start = i
            if c.properties.isWhitespace { i += 1; continue }
            if c == "\"" || c == "'" {
                i += 1
                var text = String.UnicodeScalarView()
                var closed = false
                while let s = peek() {
                    i += 1
                    if s == c { closed = true; break }
                    if s == "\\" {
                        guard let escaped = peek() else { break }
                        i += 1
                        switch escaped {
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        case "r": text.append("\r")
                        case "0": text.append("\0")
                        case "\\", "\"", "'": text.append(escaped)
                        case "u":
                            var hex = ""
                            if peek() == "{" {
                                i += 1
                                while let h = peek(), h != "}" { hex.unicodeScalars.append(h); i += 1; if hex.count > 8 { break } }
                                guard peek() == "}" else { throw error("unterminated \\u{…} escape", expected: "hex digits and }", at: i) }
                                i += 1
                            } else {
                                for _ in 0..<4 { if let h = peek() { hex.unicodeScalars.append(h); i += 1 } }
                            }
                            guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                                throw error("invalid \\u escape '\(hex)'", expected: "a Unicode scalar in hex", at: start)
                            }
                            text.append(scalar)
                        default:
                            throw error("unknown escape \\\(escaped)", expected: "\\n, \\t, \\r, \\0, \\\\, \\\", \\' or \\u{…}", at: i - 2)
                        }
                    } else {
                        text.append(s)
                    }
                }
                guard closed else { throw error("unterminated string", expected: "a closing \(c)", at: start) }
                tokens.append((.string(String(text)), start))
                continue
            }
            if c.properties.isAlphabetic || c == "_" || c == "#" {
                let escaped = c == "#"
                if escaped { i += 1 }
                var name = ""
                while let s = peek(), s.properties.isAlphabetic || s == "_" || ("0"..."9").contains(s) {
                    name.unicodeScalars.append(s)
                    i += 1
                }
                guard !name.isEmpty else { throw error("'#' must be followed by a name", expected: "a key name", at: start) }
                tokens.append((.identifier(name, escaped: escaped), start))
                continue
            }
            let startsNumber = { (s: Unicode.Scalar?, t: Unicode.Scalar?) -> Bool in
                guard let s else { return false }
                return ("0"..."9").contains(s) || (s == "." && t.map { ("0"..."9").contains($0) } == true)
            }
            if startsNumber(c, peek(1)) || ((c == "-" || c == "+") && startsNumber(peek(1), peek(2))) {
                tokens.append((try lexNumber(&i), start))
                continue
            }
            if c == "%" {
                i += 1
                var spec = ""
                while let s = peek(), "@Kdilf".unicodeScalars.contains(s), spec.count < 3 {
                    spec.unicodeScalars.append(s)
                    i += 1
                    if s == "@" || s == "K" || s == "d" || s == "i" || s == "f" { break }
                }
                guard ["@", "K", "d", "i", "ld", "lld", "f", "lf"].contains(spec) else {
                    let shown = spec.isEmpty ? (peek().map { String($0) } ?? "") : spec
                    throw error("unknown format specifier %\(shown)", expected: "%@, %K, %d, %i, %ld, %lld, %f or %lf", at: start)
                }
                tokens.append((.format(spec), start))
                continue
            }
            if c == "$" {
                i += 1
                var name = ""
                while let s = peek(), s.properties.isAlphabetic || s == "_" || ("0"..."9").contains(s) {
                    name.unicodeScalars.append(s)
                    i += 1
                }
                guard !name.isEmpty else { throw error("'$' must be followed by a variable name", expected: "a name like $LIMIT", at: start) }
                tokens.append((.variable(name), start))
                continue
            }
            let two = peek(1).map { String(c) + String($0) } ?? String(c)
            if ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"].contains(two) {
                let normalized = ["<>": "!=", "=<": "<=", "=>": ">="][two] ?? two
                tokens.append((.symbol(normalized), start))
                i += 2
                continue
            }
            if "(){},.[]<>=!@".unicodeScalars.contains(c) {
                tokens.append((.symbol(c == "=" ? "==" : String(c)), start))
                i += 1
                continue
            }
            throw error("unexpected character '\(c)'", expected: "a key, a value, an operator or a parenthesis", at: start)
        }
        tokens.append((.end, scalars.count))
    }

    private func lexNumber(_ i: inout Int) throws -> Token {
        let start = i
        var sign = ""
        if scalars[i] == "-" || scalars[i] == "+" {
            if scalars[i] == "-" { sign = "-" }
            i += 1
        }
        if scalars[i] == "0", i + 1 < scalars.count, "xXoObB".unicodeScalars.contains(scalars[i + 1]) {
            let radix = "xX".unicodeScalars.contains(scalars[i + 1]) ? 16 : ("oO".unicodeScalars.contains(scalars[i + 1]) ? 8 : 2)
            i += 2
            var digits = ""
            while i < scalars.count, scalars[i].properties.isASCIIHexDigit { digits.unicodeScalars.append(scalars[i]); i += 1 }
            guard let value = Int64(sign + digits, radix: radix) else {
                throw error("invalid base-\(radix) integer", expected: "digits of base \(radix) that fit in 64 bits", at: start)
            }
            return .integer(value)
        }
        var text = sign
        var isDouble = false
        while i < scalars.count {
            let s = scalars[i]
            if ("0"..."9").contains(s) {
                text.unicodeScalars.append(s)
            } else if s == "." && !isDouble && !text.contains("e") {
                isDouble = true
                text.unicodeScalars.append(s)
            } else if (s == "e" || s == "E") && !text.contains("e") {
                isDouble = true
                text += "e"
                if i + 1 < scalars.count, scalars[i + 1] == "-" || scalars[i + 1] == "+" {
                    i += 1
                    text.unicodeScalars.append(scalars[i])
                }
            } else {
                break
            }
            i += 1
        }
        if isDouble {
            guard let value = Double(text), !value.isNaN else { throw error("invalid number '\(text)'", expected: "a decimal number", at: start) }
            return .double(value)
        }
        guard let value = Int64(text) else {
            throw error("integer \(text) does not fit in 64 bits", expected: "an integer between \(Int64.min) and \(Int64.max)", at: start)
        }
        return .integer(value)
    }

    // MARK: Grammar

    private var current: Token { tokens[position].token }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func isKeyword(_ token: Token, _ words: String...) -> Bool {
        guard case .identifier(let name, false) = token else { return false }
        return words.contains(name.uppercased())
    }

    private func describe(_ token: Token) -> String {
        switch token {
        case .identifier(let name, _): "'\(name)'"
        case .integer(let v): "number \(v)"
        case .double(let v): "number \(v)"
        case .string(let s): "string \"\(s)\""
        case .format(let f): "%\(f)"
        case .variable(let v): "$\(v)"
        case .symbol(let s): "'\(s)'"
        case .end: "end of predicate"
        }
    }

    private mutating func enter() throws {
        depth += 1
        if depth > ConditionParser.maximumDepth {
            throw error("nesting deeper than \(ConditionParser.maximumDepth) levels", expected: "a flatter predicate")
        }
    }

    private mutating func parseOr() throws -> Condition {
        try enter(); defer { depth -= 1 }
        var terms = [try parseAnd()]
        while isKeyword(current, "OR") || current == .symbol("||") {
            advance()
            terms.append(try parseAnd())
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws -> Condition {
        var terms = [try parseNot()]
        while isKeyword(current, "AND") || current == .symbol("&&") {
            advance()
            terms.append(try parseNot())
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseNot() throws -> Condition {
        if isKeyword(current, "NOT") || current == .symbol("!") {
            try enter(); defer { depth -= 1 }
            advance()
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> Condition {
        if current == .symbol("(") {
            advance()
            let inner = try parseOr()
            guard current == .symbol(")") else { throw error("unclosed parenthesis: found \(describe(current))", expected: "')'") }
            advance()
            return inner
        }
        if isKeyword(current, "TRUEPREDICATE") { advance(); return .constant(true) }
        if isKeyword(current, "FALSEPREDICATE") { advance(); return .constant(false) }
        return .comparison(try parseComparison())
    }

    private mutating func parseComparison() throws -> Comparison {
        var quantifier: Comparison.Quantifier?
        if isKeyword(current, "ANY", "SOME") { quantifier = .anyOf; advance() }
        else if isKeyword(current, "ALL") { quantifier = .allOf; advance() }
        else if isKeyword(current, "NONE") { quantifier = .noneOf; advance() }
        let lhs = try parseOperand(after: quantifier == nil ? nil : "a quantifier")
        let operatorOffset = tokens[position].offset
        let op: Comparison.Operator
        switch current {
        case .symbol(let s) where ["==", "!=", "<", "<=", ">", ">="].contains(s):
            op = Comparison.Operator(rawValue: s)!
        case .identifier(let word, false):
            guard let keyword = Comparison.Operator(rawValue: word.uppercased()), keyword.rawValue.first!.isLetter else { fallthrough }
            op = keyword
        default:
            throw error("expected an operator after \(lhs), found \(describe(current))",
                        expected: "==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES")
        }
        advance()
        var options: Comparison.Options = []
        if current == .symbol("[") {
            advance()
            guard case .identifier(let flags, false) = current, !flags.isEmpty,
                  flags.lowercased().allSatisfy({ "cdn".contains($0) }) else {
                throw error("invalid comparison options \(describe(current))", expected: "[c], [d] or [cd]")
            }
            if flags.lowercased().contains("c") { options.insert(.caseInsensitive) }
            if flags.lowercased().contains("d") { options.insert(.diacriticInsensitive) }
            advance()
            guard current == .symbol("]") else { throw error("unclosed options bracket", expected: "']'") }
            advance()
        }
        let rhs = try parseOperand(after: "'\(op.rawValue)'")
        if op == .between {
            guard case .list(let items) = rhs, items.count == 2 else {
                if case .variable = rhs { return Comparison(lhs, op, rhs, options: options, quantifier: quantifier) }
                throw error("BETWEEN needs two bounds", expected: "{low, high}", at: operatorOffset)
            }
        }
        return Comparison(lhs, op, rhs, options: options, quantifier: quantifier)
    }

    private mutating func parseOperand(after context: String?) throws -> Operand {
        let offset = tokens[position].offset
        switch current {
        case .string(let s): advance(); return .constant(.string(s))
        case .integer(let v): advance(); return .constant(.int(v))
        case .double(let v): advance(); return .constant(.double(v))
        case .variable(let name):
            advance()
            // `$source.height` (a mapping filter): a key path rooted at the variable.
            if current == .symbol(".") { return .keyPath(try parseKeyPathRest(["$" + name])) }
            return .variable(name)
        case .format(let spec):
            advance()
            return try substitute(spec, offset: offset)
        case .symbol("{"):
            try enter(); defer { depth -= 1 }
            advance()
            var items: [Operand] = []
            if current != .symbol("}") {
                while true {
                    items.append(try parseOperand(after: "'{'"))
                    if current == .symbol(",") { advance(); continue }
                    break
                }
            }
            guard current == .symbol("}") else { throw error("unclosed list: found \(describe(current))", expected: "',' or '}'") }
            advance()
            return .list(items)
        case .identifier(let name, let escaped):
            if !escaped {
                switch name.uppercased() {
                case "NIL", "NULL": advance(); return .constant(.null)
                case "YES", "TRUE": advance(); return .constant(.bool(true))
                case "NO", "FALSE": advance(); return .constant(.bool(false))
                case "CAST": return try parseCast()
                case "SELF":
                    advance()
                    return .keyPath(try parseKeyPathRest(["SELF"]))
                default:
                    if conditionKeywords.contains(name.uppercased()) {
                        throw error("\(name.uppercased()) is a keyword, not a key", expected: "a value or key path\(context.map { " after \($0)" } ?? "") (write #\(name) for a key named \(name))")
                    }
                }
            }
            advance()
            return .keyPath(try parseKeyPathRest([name]))
        case .symbol("@"):
            advance()
            guard case .identifier(let name, _) = current else { throw error("'@' must name an aggregate", expected: "@count, @sum, @avg, @min or @max") }
            advance()
            return .keyPath(try parseKeyPathRest(["@" + name]))
        default:
            throw error("expected a value\(context.map { " after \($0)" } ?? ""), found \(describe(current))",
                        expected: "a key path, a string, a number, nil, YES/NO, {list}, %@ or $VARIABLE")
        }
    }

    /// Reads `.segment` pieces after the first segment of a key path.
    private mutating func parseKeyPathRest(_ first: [String]) throws -> String {
        var segments = first
        while current == .symbol(".") {
            advance()
            switch current {
            case .identifier(let name, _):
                segments.append(name)
                advance()
            case .symbol("@"):
                advance()
                guard case .identifier(let name, _) = current,
                      ["count", "sum", "avg", "min", "max"].contains(name.lowercased()) else {
                    throw error("unknown aggregate \(describe(current))", expected: "@count, @sum, @avg, @min or @max")
                }
                segments.append("@" + name.lowercased())
                advance()
            default:
                throw error("a '.' must be followed by a key", expected: "a key name or @count/@sum/@avg/@min/@max")
            }
        }
        return segments.joined(separator: ".")
    }

    /// `CAST(value, "Type")` for NSDate (seconds since 2001), NSData (base64), UUID, NSDecimalNumber, ObjectID.
    private mutating func parseCast() throws -> Operand {
        let offset = tokens[position].offset
        advance()
        guard current == .symbol("(") else { throw error("CAST needs '('", expected: "CAST(value, \"Type\")") }
        advance()
        let value = current
        advance()
        guard current == .symbol(",") else { throw error("CAST needs a type", expected: "',' then a quoted type name") }
        advance()
        guard case .string(let type) = current else { throw error("CAST type must be a quoted name", expected: "\"NSDate\", \"NSData\", \"UUID\", \"NSDecimalNumber\" or \"ObjectID\"") }
        advance()
        guard current == .symbol(")") else { throw error("CAST needs ')'", expected: "')'") }
        advance()
        let bad = { (self: Self) in self.error("CAST of \(self.describe(value)) to \"\(type)\" is not valid", expected: "a number for NSDate, a string for the others", at: offset) }
        switch (type, value) {
        case ("NSDate", .integer(let v)): return .constant(.date(Date(timeIntervalSinceReferenceDate: Double(v))))
        case ("NSDate", .double(let v)): return .constant(.date(Date(timeIntervalSinceReferenceDate: v)))
        case ("NSData", .string(let s)):
            guard let data = Data(base64Encoded: s) else { throw bad(self) }
            return .constant(.data(data))
        case ("UUID", .string(let s)):
            guard let uuid = UUID(uuidString: s) else { throw bad(self) }
            return .constant(.uuid(uuid))
        case ("NSDecimalNumber", .string(let s)):
            guard let decimal = Decimal(string: s, locale: posixLocale) else { throw bad(self) }
            return .constant(.decimal(decimal))
        case ("ObjectID", .string(let s)):
            let parts = s.split(separator: "/")
            guard parts.count == 2, let key = Int64(parts[1]) else { throw bad(self) }
            return .constant(.objectID(ObjectID(entityName: String(parts[0]), primaryKey: key)))
        default:
            throw bad(self)
        }
    }

    private mutating func substitute(_ spec: String, offset: Int) throws -> Operand {
        guard argumentIndex < arguments.count else {
            throw error("no argument for %\(spec) (argument \(argumentIndex + 1))", expected: "as many arguments as format specifiers", at: offset)
        }
        let argument = arguments[argumentIndex]
        argumentIndex += 1
        switch spec {
        case "K":
            guard let key = argument as? String, !key.isEmpty else {
                throw error("%K needs a key path string, got \(argument.map { "\(type(of: $0))" } ?? "nil")", expected: "a String key path", at: offset)
            }
            let valid = key.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { segment in
                !segment.isEmpty && (segment.hasPrefix("@") ? segment.dropFirst() : segment[...]).unicodeScalars.allSatisfy {
                    $0.properties.isAlphabetic || $0 == "_" || ("0"..."9").contains($0)
                } && segment != "@"
            }
            guard valid else {
                throw error("%K key path '\(key)' is not made of names joined by '.'", expected: "a key path such as department.name", at: offset)
            }
            return .keyPath(key)
        case "d", "i", "ld", "lld":
            guard case .int(let v)? = ConditionValue(argument: argument) else {
                throw error("%\(spec) needs an integer", expected: "an integer argument", at: offset)
            }
            return .constant(.int(v))
        case "f", "lf":
            switch ConditionValue(argument: argument) {
            case .double(let v)? where v.isNaN:
                throw error("NaN is not a value a condition can hold", expected: "a number", at: offset)
            case .double(let v)?: return .constant(.double(v))
            case .int(let v)?: return .constant(.double(Double(v)))
            default: throw error("%\(spec) needs a floating-point number", expected: "a Double argument", at: offset)
            }
        default:
            return try ConditionParser.operand(fromArgument: argument, format: format, offset: offset)
        }
    }

    /// A `%@` argument or a `$VARIABLE` value: a constant, or a list for arrays and sets.
    static func operand(fromArgument argument: Any?, format: String, offset: Int) throws -> Operand {
        if let value = ConditionValue(argument: argument) {
            if case .double(let v) = value, v.isNaN {
                throw ConditionParseError(message: "NaN is not a value a condition can hold", expected: "a number", format: format, offset: offset)
            }
            return .constant(value)
        }
        if let argument, !(argument is String), let sequence = argument as? any Sequence {
            var items: [Operand] = []
            for element in sequence {
                items.append(try operand(fromArgument: element, format: format, offset: offset))
            }
            return .list(items)
        }
        throw ConditionParseError(
            message: "a \(argument.map { "\(type(of: $0))" } ?? "nil") cannot be a condition value",
            expected: "a number, Bool, String, Date, Data, UUID, URL, Decimal, ObjectID, ManagedObject, nil or an array of them",
            format: format, offset: offset)
    }
}
