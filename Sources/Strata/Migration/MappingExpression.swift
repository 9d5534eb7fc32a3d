internal import Foundation

/// A parsed ``MappingValue/expression(_:)``: arithmetic, strings, functions and `$source` key paths.
indirect enum MappingExpression: Sendable, Equatable {
    case constant(AttributeValue?)
    case source(String)
    case unary(String, MappingExpression)
    case binary(String, MappingExpression, MappingExpression)
    case call(String, [MappingExpression])

    static let functions: [String: ClosedRange<Int>] = [
        "uppercase": 1...1, "lowercase": 1...1, "trim": 1...1, "length": 1...1, "abs": 1...1,
        "round": 1...1, "floor": 1...1, "ceil": 1...1, "coalesce": 1...16, "now": 0...0,
    ]

    /// Every `$source` key path the expression reads.
    var keyPaths: [String] {
        switch self {
        case .constant: []
        case .source(let path): [path]
        case .unary(_, let e): e.keyPaths
        case .binary(_, let l, let r): l.keyPaths + r.keyPaths
        case .call(_, let arguments): arguments.flatMap(\.keyPaths)
        }
    }

    // MARK: Parsing

    /// - Throws: ``ConditionParseError`` naming the position.
    init(parsing text: String) throws {
        var parser = Parser(scalars: Array(text.unicodeScalars), text: text)
        self = try parser.parseAll()
    }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        let text: String
        var i = 0

        func fail(_ message: String, expected: String, at offset: Int? = nil) -> ConditionParseError {
            ConditionParseError(message: message, expected: expected, format: text, offset: offset ?? i)
        }

        mutating func skipSpace() { while i < scalars.count, scalars[i].properties.isWhitespace { i += 1 } }
        mutating func peek() -> Unicode.Scalar? { skipSpace(); return i < scalars.count ? scalars[i] : nil }
        static func isNameScalar(_ s: Unicode.Scalar) -> Bool { s.properties.isAlphabetic || s == "_" || ("0"..."9").contains(s) }

        mutating func parseAll() throws -> MappingExpression {
            let e = try parseSum()
            if let s = peek() { throw fail("unexpected '\(s)'", expected: "an operator (+ - * /) or the end") }
            return e
        }

        mutating func parseSum() throws -> MappingExpression {
            var e = try parseProduct()
            while let s = peek(), s == "+" || s == "-" {
                i += 1
                e = .binary(String(s), e, try parseProduct())
            }
            return e
        }

        mutating func parseProduct() throws -> MappingExpression {
            var e = try parseUnary()
            while let s = peek(), s == "*" || s == "/" {
                i += 1
                e = .binary(String(s), e, try parseUnary())
            }
            return e
        }

        mutating func parseUnary() throws -> MappingExpression {
            if peek() == "-" {
                i += 1
                return .unary("-", try parseUnary())
            }
            return try parsePrimary()
        }

        mutating func name() -> String {
            var name = ""
            while i < scalars.count, Parser.isNameScalar(scalars[i]) { name.unicodeScalars.append(scalars[i]); i += 1 }
            return name
        }

        mutating func parsePrimary() throws -> MappingExpression {
            guard let s = peek() else { throw fail("expected a value, found the end", expected: "a number, a 'string', $source.key, a function call or '('") }
            let start = i
            if s == "(" {
                i += 1
                let e = try parseSum()
                guard peek() == ")" else { throw fail("unclosed '('", expected: "')'") }
                i += 1
                return e
            }
            if s == "'" || s == "\"" { return .constant(.string(try string(quote: s))) }
            if ("0"..."9").contains(s) || (s == "." && i + 1 < scalars.count && ("0"..."9").contains(scalars[i + 1])) {
                var literal = ""
                while i < scalars.count, ("0"..."9").contains(scalars[i]) || scalars[i] == "." || scalars[i] == "e" || scalars[i] == "E" {
                    literal.unicodeScalars.append(scalars[i])
                    i += 1
                }
                if let v = Int64(literal) { return .constant(.int64(v)) }
                if let v = Double(literal) { return .constant(.double(v)) }
                throw fail("bad number \(literal)", expected: "a number like 12 or 2.54", at: start)
            }
            if s == "$" {
                i += 1
                let variable = name()
                guard variable == "source" else {
                    throw fail("unknown variable $\(variable)", expected: "$source", at: start)
                }
                var segments: [String] = []
                while i < scalars.count, scalars[i] == "." {
                    i += 1
                    let key = name()
                    guard !key.isEmpty else { throw fail("a '.' must be followed by a key", expected: "a key name") }
                    segments.append(key)
                }
                guard !segments.isEmpty else { throw fail("$source needs a key path", expected: "$source.key", at: i) }
                return .source(segments.joined(separator: "."))
            }
            guard Parser.isNameScalar(s) else { throw fail("unexpected '\(s)'", expected: "a number, a 'string', $source.key, a function call or '('") }
            let word = name()
            switch word.uppercased() {
            case "NIL", "NULL": return .constant(nil)
            case "YES", "TRUE": return .constant(.bool(true))
            case "NO", "FALSE": return .constant(.bool(false))
            default: break
            }
            guard let arity = MappingExpression.functions[word.lowercased()] else {
                throw fail("unknown name \(word)", expected: "$source.\(word), a 'string', or one of \(MappingExpression.functions.keys.sorted().joined(separator: ", "))", at: start)
            }
            guard peek() == "(" else { throw fail("\(word) must be called", expected: "'(' after \(word)") }
            i += 1
            var arguments: [MappingExpression] = []
            if peek() != ")" {
                while true {
                    arguments.append(try parseSum())
                    if peek() == "," { i += 1; continue }
                    break
                }
            }
            guard peek() == ")" else { throw fail("unclosed call of \(word)", expected: "',' or ')'") }
            i += 1
            guard arity.contains(arguments.count) else {
                throw fail("\(word) takes \(arity.lowerBound == arity.upperBound ? "\(arity.lowerBound)" : "\(arity.lowerBound)…\(arity.upperBound)") argument(s), got \(arguments.count)",
                           expected: "a matching argument count", at: start)
            }
            return .call(word.lowercased(), arguments)
        }

        mutating func string(quote: Unicode.Scalar) throws -> String {
            let start = i
            i += 1
            var value = ""
            while i < scalars.count {
                let c = scalars[i]
                i += 1
                if c == quote { return value }
                if c == "\\", i < scalars.count {
                    value.unicodeScalars.append(scalars[i])
                    i += 1
                } else {
                    value.unicodeScalars.append(c)
                }
            }
            throw fail("unterminated string", expected: "a closing \(quote)", at: start)
        }
    }

    // MARK: Evaluation

    func evaluate(_ source: MigrationSource) throws -> AttributeValue? {
        switch self {
        case .constant(let value): return value
        case .source(let path): return try source.value(forKey: path)
        case .unary(_, let e):
            guard let value = try e.evaluate(source) else { return nil }
            if let v = Self.integer(value) { return .int64(0 &- v) }
            guard let d = value.numericValue else { throw Self.typeError("-", value) }
            return .double(-d)
        case let .binary(op, l, r):
            guard let a = try l.evaluate(source), let b = try r.evaluate(source) else { return nil }
            if op == "+", case .string(let x) = a {
                guard case .string(let y) = b else { throw Self.typeError("+", b) }
                return .string(x + y)
            }
            if op != "/", let x = Self.integer(a), let y = Self.integer(b) {
                let (result, overflow) = switch op {
                case "+": x.addingReportingOverflow(y)
                case "-": x.subtractingReportingOverflow(y)
                default: x.multipliedReportingOverflow(by: y)
                }
                if !overflow { return .int64(result) }
            }
            guard let x = a.numericValue, !(a.type == .string) else { throw Self.typeError(op, a) }
            guard let y = b.numericValue else { throw Self.typeError(op, b) }
            switch op {
            case "+": return .double(x + y)
            case "-": return .double(x - y)
            case "*": return .double(x * y)
            default: return .double(x / y)
            }
        case let .call(name, arguments):
            if name == "now" { return .date(Date()) }
            if name == "coalesce" {
                for argument in arguments { if let value = try argument.evaluate(source) { return value } }
                return nil
            }
            guard let value = try arguments[0].evaluate(source) else { return nil }
            switch name {
            case "uppercase", "lowercase", "trim", "length":
                guard case .string(let s) = value else { throw Self.typeError(name, value) }
                switch name {
                case "uppercase": return .string(s.uppercased())
                case "lowercase": return .string(s.lowercased())
                case "trim": return .string(s.trimmingCharacters(in: .whitespacesAndNewlines))
                default: return .int64(Int64(s.count))
                }
            default:
                if let v = Self.integer(value), v != .min { return .int64(name == "abs" ? Swift.abs(v) : v) }
                guard let d = value.numericValue else { throw Self.typeError(name, value) }
                switch name {
                case "abs": return .double(Swift.abs(d))
                case "round": return .double(d.rounded())
                case "floor": return .double(d.rounded(.down))
                default: return .double(d.rounded(.up))
                }
            }
        }
    }

    private static func integer(_ value: AttributeValue) -> Int64? {
        switch value {
        case .int16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .int64(let v): v
        default: nil
        }
    }

    private static func typeError(_ op: String, _ value: AttributeValue) -> MigrationError {
        .invalidMapping(mapping: "expression", reason: "\(op) can't take \(value) (a \(value.type))")
    }
}
