import Foundation
import Testing
import StrataTestSupport
@testable import Strata

// Well-typed random predicates for PredicateDifferentialTests (data: PredicateDifferential+Fixture.swift).

/// A piece of a format string with the arguments its `%` specifiers take, in order.
struct Fragment {
    var text: String
    var arguments: [Any?] = []

    static func + (lhs: Fragment, rhs: Fragment) -> Fragment {
        Fragment(text: lhs.text + rhs.text, arguments: lhs.arguments + rhs.arguments)
    }
}

/// Generates well-typed random predicates on Employee as format strings with arguments.
struct PredicateGenerator {
    var rng: SplitMix64
    let fixture: DifferentialFixture

    static let maximumDepth = 4

    enum Kind { case string, number, object(String) }

    /// A constant the predicate compares with.
    enum Value {
        case null
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case object(ObjectID)

        var raw: Any? {
            switch self {
            case .null: nil
            case .string(let v): v
            case .int(let v): v
            case .double(let v): v
            case .bool(let v): v
            case .object(let v): v
            }
        }
    }

    // Scalar key paths on Employee by kind.
    static let stringPaths = ["name", "email", "department.name", "department.company.name", "badge.code",
                              "projects.@max.title", "projects.@min.title", "badge.owner.name", "department.employees.@max.name",
                              "department.employees.@min.email"]
    static let numberPaths = ["age", "height", "projects.@count", "department.employees.@avg.height", "department.employees.@sum.age",
                              "department.employees.@min.age", "department.employees.@max.height", "department.employees.@count",
                              "department.company.departments.@count", "desk.number", "badge.owner.age", "department.employees.@sum.height",
                              "department.employees.@avg.age"]
    static let objectPaths: [(path: String, entity: String)] = [
        ("SELF", "Employee"), ("department", "Department"), ("badge", "Badge"), ("department.company", "Company"),
        ("badge.owner", "Employee"), ("desk", "Desk"),
    ]
    /// Paths through a to-many relationship, for ANY/ALL/NONE.
    static let quantifiedPaths: [(path: String, kind: Kind)] = [
        ("projects.title", .string), ("projects.title", .string), ("projects.title", .string),
        ("projects", .object("Project")), ("projects.members.@count", .number),
        ("department.employees.name", .string), ("department.employees.age", .number),
        ("department.employees.height", .number), ("department.employees", .object("Employee")),
        ("department.company.departments.name", .string),
    ]

    init(seed: UInt64, index: Int, fixture: DifferentialFixture) {
        rng = SplitMix64(seed: seed, stream: index)
        self.fixture = fixture
    }

    mutating func predicate() -> Fragment { predicate(depth: 0) }

    // MARK: Structure

    private mutating func predicate(depth: Int) -> Fragment {
        if depth >= PredicateGenerator.maximumDepth || rng.chance(depth == 0 ? 0.4 : 0.6) { return comparison() }
        switch rng.int(0...5) {
        case 0, 1:
            let inner = predicate(depth: depth + 1)
            return Fragment(text: rng.pick(["NOT (", "not (", "!(", "NOT(", "! ("])) + inner + Fragment(text: ")")
        case 2, 3:
            return binary(depth, rng.pick([" AND ", " && ", " and ", " AnD "]))
        default:
            return binary(depth, rng.pick([" OR ", " || ", " or "]))
        }
    }

    private mutating func binary(_ depth: Int, _ connective: String) -> Fragment {
        let l = predicate(depth: depth + 1), r = predicate(depth: depth + 1)
        return Fragment(text: "(") + l + Fragment(text: connective) + r + Fragment(text: ")")
    }

    private mutating func comparison() -> Fragment {
        switch rng.weighted([(6, 0), (6, 1), (6, 2), (3, 3), (4, 4), (3, 5), (4, 6), (2, 7), (5, 8), (3, 9), (1, 10), (2, 11)]) {
        case 0: return stringComparison()
        case 1: return stringOperator()
        case 2: return numberComparison()
        case 3: return between()
        case 4: return inList()
        case 5: return nilCheck()
        case 6: return objectComparison()
        case 7: return membership()
        case 8: return quantified()
        case 9: return pathAgainstPath()
        case 11: return constantAgainstConstant()
        default: return Fragment(text: rng.pick(["TRUEPREDICATE", "FALSEPREDICATE", "truepredicate", "FalsePredicate"]))
        }
    }

    // MARK: Comparisons

    private mutating func stringComparison() -> Fragment {
        let path = rng.pick(PredicateGenerator.stringPaths)
        let op = orderingOperator()
        let value: Value = ["==", "=", "!=", "<>"].contains(op) && rng.chance(0.1) ? .null : .string(stringValue())
        if rng.chance(0.15) { return emit(value) + Fragment(text: " \(op)\(options()) ") + keyPath(path) }
        return keyPath(path) + Fragment(text: " \(op)\(options()) ") + emit(value)
    }

    private mutating func stringOperator() -> Fragment {
        let path = rng.pick(PredicateGenerator.stringPaths)
        let op = rng.weighted([(3, "CONTAINS"), (3, "BEGINSWITH"), (3, "ENDSWITH"), (4, "LIKE"), (3, "MATCHES")])
        let rhs = stringOperand(for: op)
        let spelled = rng.chance(0.2) ? op.lowercased() : op
        if op != "MATCHES", rng.chance(0.1) {
            // The constant on the left: "ÉCOLE" CONTAINS[cd] name.
            return rhs + Fragment(text: " \(spelled)\(options()) ") + keyPath(path)
        }
        return keyPath(path) + Fragment(text: " \(spelled)\(options()) ") + rhs
    }

    /// The right side of a string operator: a needle, a LIKE pattern, a regex, or occasionally nil.
    private mutating func stringOperand(for op: String) -> Fragment {
        switch op {
        case "MATCHES": return emit(.string(rng.pick(TrickyStrings.regexes)))
        case "LIKE": return rng.chance(0.05) ? emit(.null) : emit(.string(likePattern()))
        default:
            if rng.chance(0.05) { return emit(.null) }
            return emit(.string(rng.chance(0.6) ? fragmentOfString() : stringValue()))
        }
    }

    private mutating func numberComparison() -> Fragment {
        let path = rng.pick(PredicateGenerator.numberPaths)
        let op = orderingOperator()
        let value: Value = ["==", "=", "!=", "<>"].contains(op) && rng.chance(0.1) ? (rng.chance(0.8) ? .null : .bool(rng.chance(0.5))) : numberValue()
        if rng.chance(0.15) { return emit(value) + Fragment(text: " \(op) ") + keyPath(path) }
        return keyPath(path) + Fragment(text: " \(op) ") + emit(value)
    }

    private mutating func between() -> Fragment {
        let spelled = rng.pick(["BETWEEN", "between"])
        if rng.chance(0.65) {
            var (a, b) = (numberValue(), numberValue())
            if rng.chance(0.05) { a = .null }
            if rng.chance(0.05) { b = .null }
            return keyPath(rng.pick(PredicateGenerator.numberPaths)) + Fragment(text: " \(spelled) ") + list([a, b])
        }
        let (a, b) = (Value.string(stringValue()), Value.string(stringValue()))
        return keyPath(rng.pick(PredicateGenerator.stringPaths)) + Fragment(text: " \(spelled)\(options()) ") + list([a, b])
    }

    private mutating func inList() -> Fragment {
        let spelled = rng.pick(["IN", "in"])
        // Now and then a list long enough for the SQL back end's json_each or grouped IN forms.
        let large = rng.chance(0.04)
        let count = large ? rng.int(501...1_100) : rng.int(0...4)
        switch rng.int(0...2) {
        case 0:
            var values = (0..<count).map { _ in Value.string(stringValue()) }
            if rng.chance(0.3) { values.insert(.null, at: rng.int(0...values.count)) }
            let path = large && rng.chance(0.5) ? rng.pick(["name", "badge.owner.name", "projects.@min.title"]) : rng.pick(PredicateGenerator.stringPaths)
            return keyPath(path) + Fragment(text: " \(spelled)\(options()) ") + list(values)
        case 1:
            let integers = large && rng.chance(0.5)
            var values = (0..<count).map { _ in integers ? Value.int(Int64(rng.int(-5...120))) : numberValue() }
            if rng.chance(0.3) { values.insert(.null, at: rng.int(0...values.count)) }
            return keyPath(rng.pick(PredicateGenerator.numberPaths)) + Fragment(text: " \(spelled) ") + list(values)
        default:
            let (path, entity) = rng.pick(PredicateGenerator.objectPaths)
            var values = (0..<count).map { _ in Value.object(objectID(entity)) }
            if rng.chance(0.3) { values.insert(.null, at: rng.int(0...values.count)) }
            return keyPath(path) + Fragment(text: " \(spelled) ") + list(values)
        }
    }

    private mutating func nilCheck() -> Fragment {
        let path = rng.pick(["email", "age", "height", "name", "department", "badge", "desk", "department.company",
                             "department.name", "badge.code", "department.company.name", "projects.@max.title",
                             "department.employees.@avg.height", "department.employees.@min.age", "badge.owner"])
        let op = rng.pick(["==", "!=", "=", "<>"])
        if rng.chance(0.15) { return emit(.null) + Fragment(text: " \(op) ") + keyPath(path) }
        return keyPath(path) + Fragment(text: " \(op) ") + emit(.null)
    }

    private mutating func objectComparison() -> Fragment {
        let (path, entity) = rng.weighted([(3, ("SELF", "Employee")), (4, ("department", "Department"))]
                                            + PredicateGenerator.objectPaths.map { (1, ($0.path, $0.entity)) })
        if rng.chance(0.3) {
            // SELF IN %@ with an array argument, or a literal list.
            let values = (0..<rng.int(0...6)).map { _ in Value.object(objectID(entity)) } + (rng.chance(0.2) ? [Value.null] : [])
            return keyPath(path) + Fragment(text: " IN ") + list(values)
        }
        let op = rng.pick(["==", "!=", "=", "<>"])
        let value: Value = rng.chance(0.1) ? .null : .object(objectID(entity))
        if rng.chance(0.15) { return emit(value) + Fragment(text: " \(op) ") + keyPath(path) }
        return keyPath(path) + Fragment(text: " \(op) ") + emit(value)
    }

    /// `%@ IN projects`, `projects CONTAINS %@`, `%@ IN department.employees`.
    private mutating func membership() -> Fragment {
        let (path, entity) = rng.weighted([(4, ("projects", "Project")), (1, ("department.employees", "Employee")),
                                           (1, ("department.company.departments", "Department"))])
        let value: Value = rng.chance(0.05) ? .null : .object(objectID(entity))
        if rng.chance(0.7) { return emit(value) + Fragment(text: " IN ") + keyPath(path) }
        return keyPath(path) + Fragment(text: " CONTAINS ") + emit(value)
    }

    private mutating func quantified() -> Fragment {
        let quantifier = rng.weighted([(3, "ANY"), (2, "ALL"), (2, "NONE"), (1, "SOME"), (1, "any"), (1, "all")])
        let (path, kind) = rng.pick(PredicateGenerator.quantifiedPaths)
        let head = Fragment(text: quantifier + " ") + keyPath(path)
        switch kind {
        case .string:
            switch rng.int(0...3) {
            case 0:
                let op = orderingOperator()
                return head + Fragment(text: " \(op)\(options()) ") + emit(rng.chance(0.05) && ["==", "!="].contains(op) ? .null : .string(stringValue()))
            case 1:
                let op = rng.pick(["CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES"])
                return head + Fragment(text: " \(op)\(options()) ") + stringOperand(for: op)
            case 2:
                let values = (0..<rng.int(0...3)).map { _ in Value.string(stringValue()) }
                return head + Fragment(text: " IN\(options()) ") + list(values)
            default:
                return head + Fragment(text: " BETWEEN\(options()) ") + list([.string(stringValue()), .string(stringValue())])
            }
        case .number:
            switch rng.int(0...2) {
            case 0, 1: return head + Fragment(text: " \(orderingOperator()) ") + emit(numberValue())
            default: return head + Fragment(text: " BETWEEN ") + list([numberValue(), numberValue()])
            }
        case .object(let entity):
            if rng.chance(0.25) {
                return head + Fragment(text: " IN ") + list((0..<rng.int(0...3)).map { _ in Value.object(objectID(entity)) })
            }
            return head + Fragment(text: " \(rng.pick(["==", "!="])) ") + emit(rng.chance(0.05) ? .null : .object(objectID(entity)))
        }
    }

    /// Two key paths of the same kind: `name ==[c] department.name`, `age < department.employees.@avg.age`.
    private mutating func pathAgainstPath() -> Fragment {
        switch rng.int(0...4) {
        case 0, 1:
            let l = rng.pick(PredicateGenerator.stringPaths), r = rng.pick(PredicateGenerator.stringPaths)
            let op = rng.chance(0.6) ? orderingOperator() : rng.pick(["CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE"])
            return keyPath(l) + Fragment(text: " \(op)\(options()) ") + keyPath(r)
        case 2, 3:
            let l = rng.pick(PredicateGenerator.numberPaths), r = rng.pick(PredicateGenerator.numberPaths)
            return keyPath(l) + Fragment(text: " \(orderingOperator()) ") + keyPath(r)
        default:
            let pairs = [("badge.owner", "SELF"), ("SELF", "badge.owner"), ("department", "department"), ("desk", "desk"),
                         ("badge.owner.department", "department")]
            let (l, r) = rng.pick(pairs)
            return keyPath(l) + Fragment(text: " \(rng.pick(["==", "!="])) ") + keyPath(r)
        }
    }

    /// No key path at all: `"x" IN {"a", "x"}`, `5 BETWEEN {1, 10}`, `nil == nil`, `"é" BEGINSWITH[d] "e"`.
    private mutating func constantAgainstConstant() -> Fragment {
        switch rng.int(0...5) {
        case 0:
            var values = (0..<rng.int(0...4)).map { _ in Value.string(stringValue()) }
            let lhsIsNil = rng.chance(0.1)
            let lhs: Value = lhsIsNil ? .null : (values.isEmpty || rng.chance(0.3) ? .string(stringValue()) : rng.pick(values))
            let options = lhsIsNil && values.isEmpty ? "" : options()      // [c]/[d] need a string on some side
            if rng.chance(0.2) { values.append(.null) }
            return emit(lhs) + Fragment(text: " IN\(options) ") + list(values)
        case 1:
            var values = (0..<rng.int(0...4)).map { _ in numberValue() }
            let lhs: Value = rng.chance(0.1) ? .null : (values.isEmpty || rng.chance(0.3) ? numberValue() : rng.pick(values))
            if rng.chance(0.2) { values.append(.null) }
            return emit(lhs) + Fragment(text: " IN ") + list(values)
        case 2:
            return emit(numberValue()) + Fragment(text: " BETWEEN ") + list([numberValue(), numberValue()])
        case 3:
            return emit(.string(stringValue())) + Fragment(text: " BETWEEN\(options()) ") + list([.string(stringValue()), .string(stringValue())])
        case 4:
            let op = rng.pick(["CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES"])
            return emit(.string(stringValue())) + Fragment(text: " \(op)\(options()) ") + stringOperand(for: op)
        default:
            if rng.chance(0.3) {
                let id = Value.object(objectID("Employee"))
                if rng.chance(0.5) { return emit(id) + Fragment(text: " IN ") + list([id, .object(objectID("Employee"))]) }
                return emit(id) + Fragment(text: " \(rng.pick(["==", "!="])) ") + emit(rng.chance(0.5) ? id : .object(objectID("Employee")))
            }
            let op = orderingOperator()
            return emit(rng.chance(0.1) ? .null : numberValue()) + Fragment(text: " \(op) ") + emit(rng.chance(0.1) ? .null : numberValue())
        }
    }

    // MARK: Pieces

    private mutating func orderingOperator() -> String {
        rng.weighted([(4, "=="), (1, "="), (3, "!="), (1, "<>"), (2, "<"), (2, "<="), (1, "=<"), (2, ">"), (2, ">="), (1, "=>")])
    }

    private mutating func options() -> String {
        rng.weighted([(5, ""), (3, "[c]"), (3, "[d]"), (4, "[cd]"), (1, "[dc]"), (1, "[C]"), (1, "[cdn]")])
    }

    private mutating func stringValue() -> String {
        rng.chance(0.15) ? rng.pick(TrickyStrings.pool) : rng.pick(fixture.strings)
    }

    /// A run of Unicode scalars from a value (may split a grapheme: "\u{301}cole").
    private mutating func fragmentOfString() -> String {
        let scalars = Array(stringValue().unicodeScalars)
        guard !scalars.isEmpty else { return "" }
        let start = rng.int(0...(scalars.count - 1))
        let end = rng.int(start...scalars.count)
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[start..<end])
        return String(result)
    }

    private mutating func likePattern() -> String {
        if rng.chance(0.1) { return rng.pick(["*", "?", "", "*e*", "É*", "*?", "??", "*ß", "?cole", "*'*", "*\"*", "a\\*"]) }
        var pattern = String.UnicodeScalarView()
        if rng.chance(0.3) { pattern.append("*") }
        for scalar in stringValue().unicodeScalars {
            switch rng.int(0...9) {
            case 0, 1: pattern.append("?")
            case 2: if pattern.last != "*" { pattern.append("*") }
            default: pattern.append(scalar)
            }
        }
        if rng.chance(0.3) { pattern.append("*") }
        return String(pattern)
    }

    private mutating func numberValue() -> Value {
        switch rng.int(0...9) {
        case 0, 1:
            if rng.chance(0.1) {
                return .int(rng.pick([Int64.max, Int64.min, 9_007_199_254_740_993, -9_007_199_254_740_993, 1 << 62]))
            }
            return .int(Int64(rng.pick([0, 1, 2, 3, 4, 5, 15, 16, 17, 30, 42, 98, 99, 100, -1, -16, 32767, 40000])))
        case 2:
            return .int(Int64(rng.int(16...99)))
        case 3:
            return .double(rng.pick(fixture.heights.isEmpty ? [170] : fixture.heights))
        case 4, 5, 6:
            // A value some path takes: as an integer when it is one (mixing integer and real constants).
            let n = rng.pick(fixture.numbers.isEmpty ? [0] : fixture.numbers)
            if let i = Int64(exactly: n), rng.chance(0.5) { return .int(i) }
            return .double(n)
        default:
            return .double(rng.pick(DifferentialFixture.numberPool))
        }
    }

    private mutating func objectID(_ entity: String) -> ObjectID {
        let ids: [ObjectID] = switch entity {
        case "Employee": fixture.employeeIDs
        case "Department": fixture.departmentIDs
        case "Company": fixture.companyIDs
        case "Project": fixture.projectIDs
        case "Badge": fixture.badgeIDs
        case "Desk": fixture.deskIDs
        default: []
        }
        if ids.isEmpty || rng.chance(0.05) { return DifferentialFixture.missing(entity) }
        return rng.pick(ids)
    }

    /// A key path: written out, or as `%K` with the path as argument.
    private mutating func keyPath(_ path: String) -> Fragment {
        rng.chance(0.1) ? Fragment(text: "%K", arguments: [path]) : Fragment(text: path)
    }

    /// A list: literal `{a, b}` (each item literal or `%@`) or one `%@` with a Swift array.
    private mutating func list(_ values: [Value]) -> Fragment {
        if rng.chance(0.4) {
            let array: [Any?] = values.map(\.raw)
            return Fragment(text: "%@", arguments: [array])
        }
        var fragment = Fragment(text: "{")
        for (index, value) in values.enumerated() {
            if index > 0 { fragment.text += rng.pick([", ", ","]) }
            fragment = fragment + emit(value)
        }
        return fragment + Fragment(text: "}")
    }

    /// A constant: a literal in the format string (negative numbers too: `-1.5`, `-0x10`), or a
    /// `%@`/`%d`/`%f` argument.
    private mutating func emit(_ value: Value) -> Fragment {
        let literal = rng.chance(0.5)
        switch value {
        case .null:
            return literal ? Fragment(text: rng.pick(["nil", "NIL", "NULL", "null"])) : Fragment(text: "%@", arguments: [nil])
        case .bool(let v):
            return literal ? Fragment(text: v ? rng.pick(["YES", "TRUE"]) : rng.pick(["NO", "FALSE"])) : Fragment(text: "%@", arguments: [v])
        case .string(let v):
            if literal { return Fragment(text: quote(v)) }
            return Fragment(text: "%@", arguments: [rng.chance(0.1) ? Substring(v) as Any : v])
        case .int(let v):
            if literal {
                let text = rng.chance(0.15) ? (v < 0 ? "-0x" : "0x") + String(v.magnitude, radix: 16) : String(v)
                return Fragment(text: v >= 0 && rng.chance(0.05) ? "+" + text : text)
            }
            switch rng.int(0...3) {
            case 0: return Fragment(text: rng.pick(["%d", "%i", "%ld", "%lld"]), arguments: [Int(v)])
            case 1: if let small = Int16(exactly: v) { return Fragment(text: "%@", arguments: [small]) }
                return Fragment(text: "%@", arguments: [v])
            default: return Fragment(text: "%@", arguments: [Int(v)])
            }
        case .double(let v):
            if literal, v.isFinite {
                return Fragment(text: ConditionValue.format(v))
            }
            return rng.chance(0.3) ? Fragment(text: rng.pick(["%f", "%lf"]), arguments: [v]) : Fragment(text: "%@", arguments: [v])
        case .object(let id):
            if literal { return Fragment(text: "CAST(\(quote("\(id.entityName)/\(id.primaryKey)")), \"ObjectID\")") }
            return Fragment(text: "%@", arguments: [id])
        }
    }

    /// A string literal in single or double quotes, some scalars written as `\u{…}` escapes.
    private mutating func quote(_ text: String) -> String {
        let q: Unicode.Scalar = rng.chance(0.5) ? "\"" : "'"
        var out = String.UnicodeScalarView([q])
        for scalar in text.unicodeScalars {
            if scalar == q || scalar == "\\" {
                out.append("\\"); out.append(scalar)
            } else if scalar.value > 0x7F, rng.chance(0.1) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        out.append(q)
        return String(out)
    }
}
