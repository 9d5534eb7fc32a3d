import Foundation
import StrataTestSupport
@testable import Strata

// Random Foundation predicates on Employee, built at run time from PredicateExpressions, each
// with its format-string twin (for TypedPredicateDifferentialTests). The generator is generic
// over the class family: run with equal random streams, it builds the same predicate for Strata's
// classes (`CorpFamily`) and for the plain mirrors (`PlainFamily`, strings through `encode`).

typealias BoolExpression = any StandardPredicateExpression<Bool>
typealias Expression<T> = any StandardPredicateExpression<T>

// MARK: Building blocks

func keyPath<R: StandardPredicateExpression, V>(_ base: R, _ path: any KeyPath<R.Output, V> & Sendable) -> PredicateExpressions.KeyPath<R, V> {
    PredicateExpressions.KeyPath(root: base, keyPath: path)
}

func value<T: Codable>(_ value: T) -> PredicateExpressions.Value<T> { PredicateExpressions.Value(value) }

/// `wrapped?.…`: an optional chain whose body is not optional.
func chain<L: StandardPredicateExpression, W, R: StandardPredicateExpression>(
    _ wrapped: L, _ body: (PredicateExpressions.Variable<W>) -> R
) -> PredicateExpressions.OptionalFlatMap<L, W, R, R.Output> where L.Output == W? {
    PredicateExpressions.OptionalFlatMap(wrapped, body)
}

/// `wrapped?.…?.…`: an optional chain whose body is optional.
func chainFlat<L: StandardPredicateExpression, W, R: StandardPredicateExpression, V>(
    _ wrapped: L, _ body: (PredicateExpressions.Variable<W>) -> R
) -> PredicateExpressions.OptionalFlatMap<L, W, R, V> where L.Output == W?, R.Output == V? {
    PredicateExpressions.OptionalFlatMap(wrapped, body)
}

// A closure-taking expression (`contains(where:)`, an optional chain) needs its body's static
// type, and the generator's bodies are existentials: a dummy variable reveals the type, and the
// (pure) builder runs again with the real variable.

func containsWhere<S: StandardPredicateExpression>(
    _ sequence: S, _ builder: (PredicateExpressions.Variable<S.Output.Element>) -> BoolExpression
) -> BoolExpression where S.Output: Sequence {
    func make<T: StandardPredicateExpression<Bool>>(_: T) -> BoolExpression {
        PredicateExpressions.SequenceContainsWhere(sequence) { builder($0) as! T }
    }
    return make(builder(PredicateExpressions.Variable()))
}

func allSatisfy<S: StandardPredicateExpression>(
    _ sequence: S, _ builder: (PredicateExpressions.Variable<S.Output.Element>) -> BoolExpression
) -> BoolExpression where S.Output: Sequence {
    func make<T: StandardPredicateExpression<Bool>>(_: T) -> BoolExpression {
        PredicateExpressions.SequenceAllSatisfy(sequence) { builder($0) as! T }
    }
    return make(builder(PredicateExpressions.Variable()))
}

/// `wrapped?.…` with a body of run-time type.
func chainAny<L: StandardPredicateExpression, W, V>(
    _ wrapped: L, _ builder: (PredicateExpressions.Variable<W>) -> Expression<V>
) -> Expression<V?> where L.Output == W? {
    func make<T: StandardPredicateExpression<V>>(_: T) -> Expression<V?> {
        let flatMap: PredicateExpressions.OptionalFlatMap<L, W, T, V> = PredicateExpressions.OptionalFlatMap(wrapped) { builder($0) as! T }
        return flatMap
    }
    return make(builder(PredicateExpressions.Variable()))
}

/// `wrapped?.…?.…` with an optional body of run-time type.
func chainFlatAny<L: StandardPredicateExpression, W, V>(
    _ wrapped: L, _ builder: (PredicateExpressions.Variable<W>) -> Expression<V?>
) -> Expression<V?> where L.Output == W? {
    func make<T: StandardPredicateExpression<V?>>(_: T) -> Expression<V?> {
        let flatMap: PredicateExpressions.OptionalFlatMap<L, W, T, V> = PredicateExpressions.OptionalFlatMap(wrapped) { builder($0) as! T }
        return flatMap
    }
    return make(builder(PredicateExpressions.Variable()))
}

func rangeContains<R: StandardPredicateExpression, E: StandardPredicateExpression>(_ range: R, _ element: E) -> BoolExpression
where R.Output: RangeExpression, E.Output == R.Output.Bound {
    PredicateExpressions.RangeExpressionContains(range: range, element: element)
}

func equal<T: Equatable>(_ l: some StandardPredicateExpression<T>, _ r: some StandardPredicateExpression<T>) -> BoolExpression {
    PredicateExpressions.Equal(lhs: l, rhs: r)
}
func notEqual<T: Equatable>(_ l: some StandardPredicateExpression<T>, _ r: some StandardPredicateExpression<T>) -> BoolExpression {
    PredicateExpressions.NotEqual(lhs: l, rhs: r)
}
func compare<T: Comparable>(_ l: some StandardPredicateExpression<T>, _ op: PredicateExpressions.ComparisonOperator,
                            _ r: some StandardPredicateExpression<T>) -> BoolExpression {
    PredicateExpressions.Comparison(lhs: l, rhs: r, op: op)
}
func coalesce<T: Codable>(_ l: some StandardPredicateExpression<T?>, _ fallback: T) -> Expression<T> {
    PredicateExpressions.NilCoalesce(lhs: l, rhs: PredicateExpressions.Value(fallback))
}
func and(_ l: some StandardPredicateExpression<Bool>, _ r: some StandardPredicateExpression<Bool>) -> BoolExpression {
    PredicateExpressions.Conjunction(lhs: l, rhs: r)
}
func or(_ l: some StandardPredicateExpression<Bool>, _ r: some StandardPredicateExpression<Bool>) -> BoolExpression {
    PredicateExpressions.Disjunction(lhs: l, rhs: r)
}
func not(_ e: some StandardPredicateExpression<Bool>) -> BoolExpression { PredicateExpressions.Negation(e) }
func ternary(_ test: some StandardPredicateExpression<Bool>, _ a: some StandardPredicateExpression<Bool>,
             _ b: some StandardPredicateExpression<Bool>) -> BoolExpression {
    PredicateExpressions.Conditional(test: test, trueBranch: a, falseBranch: b)
}
func stringContains(_ base: some StandardPredicateExpression<String>, _ other: some StandardPredicateExpression<String>) -> BoolExpression {
    PredicateExpressions.CollectionContainsCollection(base: base, other: other)
}
func stringStarts(_ base: some StandardPredicateExpression<String>, _ prefix: some StandardPredicateExpression<String>) -> BoolExpression {
    PredicateExpressions.SequenceStartsWith(base: base, prefix: prefix)
}
/// `path?.contains(needle)` / `path?.starts(with: needle)`: a `Bool?`.
func optionalStringTest(_ path: some StandardPredicateExpression<String?>, contains: Bool, _ needle: String) -> Expression<Bool?> {
    contains
        ? chain(path) { PredicateExpressions.CollectionContainsCollection(base: $0, other: value(needle)) }
        : chain(path) { PredicateExpressions.SequenceStartsWith(base: $0, prefix: value(needle)) }
}
func sequenceContains<T: Codable & Equatable>(_ items: [T], _ element: some StandardPredicateExpression<T>) -> BoolExpression {
    PredicateExpressions.SequenceContains(sequence: value(items), element: element)
}

extension Fragment {
    init(_ text: String, _ arguments: Any?...) { self.init(text: text, arguments: arguments) }
    static func + (lhs: Fragment, rhs: String) -> Fragment { lhs + Fragment(text: rhs) }
    static func + (lhs: String, rhs: Fragment) -> Fragment { Fragment(text: lhs) + rhs }
}

/// `path ?? fallback` inside a condition: the condition on the fallback where the path is nil,
/// on the path where it isn't (written out in full, so the twin doesn't share the translator's
/// simplifications).
func coalesced(_ path: String, _ fallback: Any?, _ body: (Fragment) -> Fragment) -> Fragment {
    "((" + path + " == nil AND " + body(Fragment("%@", fallback)) + ") OR (" + path + " != nil AND " + body(Fragment(path)) + "))"
}

let swiftOperators: [(PredicateExpressions.ComparisonOperator, String)] = [(.lessThan, "<"), (.lessThanOrEqual, "<="), (.greaterThan, ">"), (.greaterThanOrEqual, ">=")]

func holds<T: Comparable>(_ a: T, _ op: PredicateExpressions.ComparisonOperator, _ b: T) -> Bool {
    switch op {
    case .lessThan: a < b
    case .lessThanOrEqual: a <= b
    case .greaterThan: a > b
    default: a >= b
    }
}

// MARK: Generator

struct TypedPredicateGenerator<F: CompanyFamily> {
    typealias Root = PredicateExpressions.Variable<F.Employee>
    typealias Result = (expression: BoolExpression, twin: Fragment)

    var rng: SplitMix64
    let fixture: DifferentialFixture
    let encode: (String) -> String
    let root: Root

    init(seed: UInt64, index: Int, fixture: DifferentialFixture, root: Root, encode: @escaping (String) -> String) {
        rng = SplitMix64(seed: seed, stream: index)
        self.fixture = fixture
        self.root = root
        self.encode = encode
    }

    mutating func predicate() -> Result { predicate(depth: 0) }

    private mutating func predicate(depth: Int) -> Result {
        if depth >= 3 || rng.chance(depth == 0 ? 0.35 : 0.6) { return leaf() }
        switch rng.int(0...6) {
        case 0:
            let inner = predicate(depth: depth + 1)
            return (not(inner.expression), "NOT (" + inner.twin + ")")
        case 1, 2:
            let l = predicate(depth: depth + 1), r = predicate(depth: depth + 1)
            return (and(l.expression, r.expression), "(" + l.twin + " AND " + r.twin + ")")
        case 3, 4:
            let l = predicate(depth: depth + 1), r = predicate(depth: depth + 1)
            return (or(l.expression, r.expression), "(" + l.twin + " OR " + r.twin + ")")
        default:
            let t = simpleLeaf(), a = predicate(depth: depth + 1), b = predicate(depth: depth + 1)
            return (ternary(t.expression, a.expression, b.expression),
                    "((" + t.twin + " AND " + a.twin + ") OR (NOT (" + t.twin + ") AND " + b.twin + "))")
        }
    }

    private mutating func leaf() -> Result {
        switch rng.weighted([(5, 0), (4, 1), (5, 2), (6, 3), (3, 4), (4, 5), (4, 6), (2, 7), (6, 8), (4, 9), (2, 10), (3, 11), (2, 12)]) {
        case 0: return stringEquality()
        case 1: return stringOrdering()
        case 2: return stringOperator()
        case 3: return numberComparison()
        case 4: return nilCheck()
        case 5: return objectComparison()
        case 6: return membership()
        case 7: return range()
        case 8: return projectQuantifier()
        case 9: return chainedQuantifier()
        case 10: return constantSequenceQuantifier()
        case 11: return pathAgainstPath()
        default: return constants()
        }
    }

    /// A leaf that reads only the employee's own row or to-one paths (for ternary tests and the
    /// independent part of a quantifier's test).
    private mutating func simpleLeaf() -> Result {
        switch rng.int(0...3) {
        case 0: return stringEquality()
        case 1: return nilCheck()
        case 2: return stringOrdering()
        default: return numberComparison(simple: true)
        }
    }

    // MARK: Values

    private mutating func string() -> String {
        rng.chance(0.15) ? rng.pick(TrickyStrings.pool) : rng.pick(fixture.strings)
    }

    private mutating func needle() -> String {
        let scalars = Array(string().unicodeScalars)
        guard !scalars.isEmpty, rng.chance(0.7) else { return string() }
        let start = rng.int(0...(scalars.count - 1)), end = rng.int(start...scalars.count)
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[start..<end])
        return String(view)
    }

    private mutating func age() -> Int16 {
        switch rng.int(0...3) {
        case 0: rng.pick([16, 30, 99, 0, -1, 100, 42])
        case 1:
            if let n = fixture.numbers.isEmpty ? nil : Int16(exactly: rng.pick(fixture.numbers)) { n } else { 30 }
        default: Int16(rng.int(16...99))
        }
    }

    private mutating func height() -> Double {
        rng.chance(0.6) && !fixture.heights.isEmpty ? rng.pick(fixture.heights) : rng.pick(DifferentialFixture.numberPool.filter { $0.isFinite })
    }

    private mutating func count() -> Int { rng.int(0...6) }

    private mutating func id(_ entity: String) -> ObjectID {
        let ids: [ObjectID] = switch entity {
        case "Employee": fixture.employeeIDs
        case "Department": fixture.departmentIDs
        case "Company": fixture.companyIDs
        case "Project": fixture.projectIDs
        default: fixture.badgeIDs
        }
        return ids.isEmpty || rng.chance(0.05) ? DifferentialFixture.missing(entity) : rng.pick(ids)
    }

    private mutating func equalityOperator() -> (Bool, String) { rng.chance(0.6) ? (true, "==") : (false, "!=") }

    private func equality<T: Equatable>(_ isEqual: Bool, _ l: some StandardPredicateExpression<T>, _ r: some StandardPredicateExpression<T>) -> BoolExpression {
        isEqual ? equal(l, r) : notEqual(l, r)
    }

    // MARK: Paths

    private var name: PredicateExpressions.KeyPath<Root, String> { keyPath(root, F.employeeName) }

    /// A `String?` path and its twin.
    private mutating func optionalStringPath() -> (Expression<String?>, String) {
        switch rng.int(0...4) {
        case 0: return (keyPath(root, F.employeeEmail), "email")
        case 1: return (chain(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentName) }, "department.name")
        case 2:
            let path: Expression<String?> = chainFlat(keyPath(root, F.employeeDepartment)) { d in
                chain(keyPath(d, F.departmentCompany)) { keyPath($0, F.companyName) }
            }
            return (path, "department.company.name")
        case 3: return (chain(keyPath(root, F.employeeBadge)) { keyPath($0, F.badgeCode) }, "badge.code")
        default:
            let path: Expression<String?> = chainFlat(keyPath(root, F.employeeBadge)) { b in
                chain(keyPath(b, F.badgeOwner)) { keyPath($0, F.employeeName) }
            }
            return (path, "badge.owner.name")
        }
    }

    /// An `Int16?` path and its twin.
    private mutating func optionalAgePath() -> (Expression<Int16?>, String) {
        if rng.chance(0.7) { return (keyPath(root, F.employeeAge), "age") }
        let path: Expression<Int16?> = chainFlat(keyPath(root, F.employeeBadge)) { b in
            chainFlat(keyPath(b, F.badgeOwner)) { keyPath($0, F.employeeAge) }
        }
        return (path, "badge.owner.age")
    }

    // MARK: Leaves

    private mutating func stringEquality() -> Result {
        let s = string()
        let (isEqual, op) = equalityOperator()
        if rng.chance(0.4) {
            if rng.chance(0.2) { return (equality(isEqual, value(encode(s)), name), Fragment("%@ \(op) name", s)) }
            return (equality(isEqual, name, value(encode(s))), Fragment("name \(op) %@", s))
        }
        let (path, twin) = optionalStringPath()
        if rng.chance(0.15) {
            return (equality(isEqual, path, PredicateExpressions.NilLiteral<String>()), Fragment("\(twin) \(op) nil"))
        }
        let constant: String? = rng.chance(0.1) ? nil : s
        return (equality(isEqual, path, value(constant.map(encode))), Fragment("\(twin) \(op) %@", constant))
    }

    private mutating func stringOrdering() -> Result {
        let (op, text) = rng.pick(swiftOperators)
        let s = string()
        if rng.chance(0.4) { return (compare(name, op, value(encode(s))), Fragment("name \(text) %@", s)) }
        let (path, twin) = optionalStringPath()
        let fallback = rng.chance(0.5) ? "" : string()
        return (compare(coalesce(path, encode(fallback)), op, value(encode(s))),
                coalesced(twin, fallback) { $0 + " \(text) " + Fragment("%@", s) })
    }

    private mutating func stringOperator() -> Result {
        let contains = rng.chance(0.55)
        let op = contains ? "CONTAINS" : "BEGINSWITH"
        let n = needle()
        switch rng.int(0...5) {
        case 0, 1:
            let e = contains ? stringContains(name, value(encode(n))) : stringStarts(name, value(encode(n)))
            return (e, Fragment("name \(op) %@", n))
        case 2:
            let s = string()
            let e = contains ? stringContains(value(encode(s)), name) : stringStarts(value(encode(s)), name)
            return (e, Fragment("%@ \(op) name", s))
        default:
            let (path, twin) = optionalStringPath()
            let test = optionalStringTest(path, contains: contains, encode(n))
            let body = Fragment("\(twin) \(op) %@", n)
            switch rng.int(0...5) {
            case 0: return (equal(test, value(Bool?(true))), body)
            case 1: return (coalesce(test, false), body)
            case 2: return (coalesce(test, true), "(\(twin) == nil OR " + body + ")")
            case 3: return (equal(test, value(Bool?(false))), "(\(twin) != nil AND NOT (" + body + "))")
            case 4: return (notEqual(test, value(Bool?(true))), "NOT (" + body + ")")
            default: return (equal(test, PredicateExpressions.NilLiteral<Bool>()), Fragment("\(twin) == nil"))
            }
        }
    }

    private mutating func numberComparison(simple: Bool = false) -> Result {
        switch rng.int(0...(simple ? 3 : 7)) {
        case 0, 1:
            let (path, twin) = optionalAgePath()
            return optionalNumber(path, twin, age(), age())
        case 2:
            return optionalNumber(keyPath(root, F.employeeHeight), "height", height(), height())
        case 3:
            let desk: Expression<Int32?> = chain(keyPath(root, F.employeeDesk)) { keyPath($0, F.deskNumber) }
            let numbers: [Int32] = [-3, 4, 11, 18, 25, 0, 99]
            return optionalNumber(desk, "desk.number", rng.pick(numbers), rng.pick(numbers))
        case 4:
            let (op, text) = rng.pick(swiftOperators + [(.lessThan, "<")])
            let k = count()
            let projects = keyPath(keyPath(root, F.employeeProjects), \Set<F.Project>.count)
            if rng.chance(0.3) { return (equal(projects, value(k)), Fragment("projects.@count == %@", k)) }
            return (compare(projects, op, value(k)), Fragment("projects.@count \(text) %@", k))
        case 5:
            // `department?.employees.count`: nil when the department is.
            let counted: Expression<Int?> = chain(keyPath(root, F.employeeDepartment)) { keyPath(keyPath($0, F.departmentEmployees), \Set<F.Employee>.count) }
            return guardedCount(counted, guardPath: "department", path: "department.employees.@count")
        case 6:
            let counted: Expression<Int?> = chainFlat(keyPath(root, F.employeeDepartment)) { d in
                chain(keyPath(d, F.departmentCompany)) { keyPath(keyPath($0, F.companyDepartments), \Set<F.Department>.count) }
            }
            return guardedCount(counted, guardPath: "department.company", path: "department.company.departments.@count")
        default:
            switch rng.int(0...3) {
            case 0:
                return (keyPath(keyPath(root, F.employeeProjects), \Set<F.Project>.isEmpty), Fragment("projects.@count == 0"))
            case 1:
                return (not(keyPath(keyPath(root, F.employeeProjects), \Set<F.Project>.isEmpty)), Fragment("NOT (projects.@count == 0)"))
            case 2:
                let empty: Expression<Bool?> = chain(keyPath(root, F.employeeDepartment)) { keyPath(keyPath($0, F.departmentEmployees), \Set<F.Employee>.isEmpty) }
                return (coalesce(empty, true), Fragment("(department == nil OR department.employees.@count == 0)"))
            default:
                if rng.chance(0.5) { return (keyPath(name, \String.isEmpty), Fragment("name == %@", "")) }
                let empty: Expression<Bool?> = chain(keyPath(root, F.employeeEmail)) { keyPath($0, \String.isEmpty) }
                return (coalesce(empty, true), Fragment("(email == nil OR email == %@)", ""))
            }
        }
    }

    /// `path == v`, `path != v` (v may be nil) or `(path ?? fallback) op v`.
    private mutating func optionalNumber<T: Comparable & Codable>(_ path: Expression<T?>, _ twin: String, _ v: T, _ other: T) -> Result {
        if rng.chance(0.35) {
            let (isEqual, op) = equalityOperator()
            let constant: T? = rng.chance(0.15) ? nil : v
            return (equality(isEqual, path, value(constant)), Fragment("\(twin) \(op) %@", constant))
        }
        let (op, text) = rng.pick(swiftOperators)
        let fallback = rng.chance(0.5) ? v : other
        return (compare(coalesce(path, fallback), op, value(v)), coalesced(twin, fallback) { $0 + " \(text) " + Fragment("%@", v) })
    }

    /// A count through an optional chain (`department?.employees.count`).
    private mutating func guardedCount(_ counted: Expression<Int?>, guardPath: String, path: String) -> Result {
        let k = count()
        switch rng.int(0...3) {
        case 0: return (equal(counted, value(Int?(k))), Fragment("(\(guardPath) != nil AND \(path) == %@)", k))
        case 1: return (notEqual(counted, value(Int?(k))), Fragment("(\(guardPath) == nil OR \(path) != %@)", k))
        case 2: return (equal(counted, PredicateExpressions.NilLiteral<Int>()), Fragment("\(guardPath) == nil"))
        default:
            let (op, text) = rng.pick(swiftOperators)
            let fallback = count()
            return (compare(coalesce(counted, fallback), op, value(k)),
                    "((\(guardPath) == nil AND " + Fragment("%@ \(text) %@", fallback, k) + ") OR (\(guardPath) != nil AND " + Fragment("\(path) \(text) %@", k) + "))")
        }
    }

    private mutating func nilCheck() -> Result {
        let isEqual = rng.chance(0.5)
        let op = isEqual ? "==" : "!="
        switch rng.int(0...7) {
        case 0: return (equality(isEqual, keyPath(root, F.employeeEmail), PredicateExpressions.NilLiteral<String>()), Fragment("email \(op) nil"))
        case 1: return (equality(isEqual, keyPath(root, F.employeeAge), PredicateExpressions.NilLiteral<Int16>()), Fragment("age \(op) nil"))
        case 2: return (equality(isEqual, keyPath(root, F.employeeHeight), PredicateExpressions.NilLiteral<Double>()), Fragment("height \(op) nil"))
        case 3:
            let path = keyPath(root, F.employeeDepartment)
            return (isEqual ? equal(path, PredicateExpressions.NilLiteral<F.Department>()) : notEqual(path, PredicateExpressions.NilLiteral<F.Department>()),
                    Fragment("department \(op) nil"))
        case 4:
            let path = keyPath(root, F.employeeBadge)
            return (isEqual ? equal(path, PredicateExpressions.NilLiteral<F.Badge>()) : notEqual(path, PredicateExpressions.NilLiteral<F.Badge>()),
                    Fragment("badge \(op) nil"))
        case 5:
            let path = keyPath(root, F.employeeDesk)
            return (isEqual ? equal(path, PredicateExpressions.NilLiteral<F.Desk>()) : notEqual(path, PredicateExpressions.NilLiteral<F.Desk>()),
                    Fragment("desk \(op) nil"))
        case 6:
            let path = chainFlat(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentCompany) }
            return (isEqual ? equal(path, PredicateExpressions.NilLiteral<F.Company>()) : notEqual(path, PredicateExpressions.NilLiteral<F.Company>()),
                    Fragment("department.company \(op) nil"))
        default:
            let path = chainFlat(keyPath(root, F.employeeBadge)) { keyPath($0, F.badgeOwner) }
            return (isEqual ? equal(path, PredicateExpressions.NilLiteral<F.Employee>()) : notEqual(path, PredicateExpressions.NilLiteral<F.Employee>()),
                    Fragment("badge.owner \(op) nil"))
        }
    }

    private mutating func objectComparison() -> Result {
        let (isEqual, op) = equalityOperator()
        switch rng.int(0...4) {
        case 0:
            let employee = id("Employee")
            return (equality(isEqual, keyPath(root, F.employeeID), value(employee)), Fragment("SELF \(op) %@", employee))
        case 1:
            let department: ObjectID? = rng.chance(0.1) ? nil : id("Department")
            let path: Expression<ObjectID?> = chain(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentID) }
            return (equality(isEqual, path, value(department)), Fragment("department \(op) %@", department))
        case 2:
            let company = id("Company")
            let path: Expression<ObjectID?> = chainFlat(keyPath(root, F.employeeDepartment)) { d in
                chain(keyPath(d, F.departmentCompany)) { keyPath($0, F.companyID) }
            }
            return (equality(isEqual, path, value(Optional(company))), Fragment("department.company \(op) %@", company))
        case 3:
            let owner = id("Employee")
            let path: Expression<ObjectID?> = chainFlat(keyPath(root, F.employeeBadge)) { b in
                chain(keyPath(b, F.badgeOwner)) { keyPath($0, F.employeeID) }
            }
            return (equality(isEqual, path, value(Optional(owner))), Fragment("badge.owner \(op) %@", owner))
        default:
            // The badge's owner is the employee (a to-one and its inverse): path against path.
            let path: Expression<ObjectID?> = chainFlat(keyPath(root, F.employeeBadge)) { b in
                chain(keyPath(b, F.badgeOwner)) { keyPath($0, F.employeeID) }
            }
            let missing = DifferentialFixture.missing("Employee")
            return (equality(isEqual, coalesce(path, missing), keyPath(root, F.employeeID)),
                    coalesced("badge.owner", missing) { $0 + " \(op) SELF" })
        }
    }

    private mutating func membership() -> Result {
        let size = rng.int(0...4)
        switch rng.int(0...5) {
        case 0:
            let names = (0..<size).map { _ in string() }
            return (sequenceContains(names.map(encode), name), Fragment("name IN %@", names))
        case 1:
            let emails: [String?] = (0..<size).map { _ in rng.chance(0.2) ? nil : string() }
            return (sequenceContains(emails.map { $0.map(encode) }, keyPath(root, F.employeeEmail)), Fragment("email IN %@", emails))
        case 2:
            let ages: [Int16?] = (0..<size).map { _ in rng.chance(0.2) ? nil : age() }
            return (sequenceContains(ages, keyPath(root, F.employeeAge)), Fragment("age IN %@", ages))
        case 3:
            let ids = (0..<size).map { _ in id("Employee") }
            return (sequenceContains(ids, keyPath(root, F.employeeID)), Fragment("SELF IN %@", ids))
        case 4:
            let ids: [ObjectID?] = (0..<size).map { _ in rng.chance(0.2) ? nil : id("Department") }
            let path: Expression<ObjectID?> = chain(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentID) }
            return (sequenceContains(ids, path), Fragment("department IN %@", ids))
        default:
            let names: [String?] = (0..<size).map { _ in rng.chance(0.2) ? nil : string() }
            let (path, twin) = optionalStringPath()
            return (sequenceContains(names.map { $0.map(encode) }, path), Fragment("\(twin) IN %@", names))
        }
    }

    private mutating func range() -> Result {
        switch rng.int(0...2) {
        case 0:
            var (low, high) = (age(), age())
            if low > high { swap(&low, &high) }
            let fallback = age()
            let e = rangeContains(value(low...high), coalesce(keyPath(root, F.employeeAge), fallback))
            return (e, coalesced("age", fallback) { $0 + " BETWEEN " + Fragment("%@", [low, high]) })
        case 1:
            var (low, high) = (height(), height())
            if low > high { swap(&low, &high) }
            let fallback = height()
            let e = rangeContains(value(low..<high), coalesce(keyPath(root, F.employeeHeight), fallback))
            return (e, coalesced("height", fallback) { "(" + $0 + " >= " + Fragment("%@", low) + " AND " + $0 + " < " + Fragment("%@", high) + ")" })
        default:
            let (low, high) = (rng.int(0...3), rng.int(2...6))
            let bounds = PredicateExpressions.ClosedRange(lower: value(min(low, high)), upper: value(max(low, high)))
            let e = rangeContains(bounds, keyPath(keyPath(root, F.employeeProjects), \Set<F.Project>.count))
            return (e, Fragment("projects.@count BETWEEN %@", [min(low, high), max(low, high)]))
        }
    }

    // MARK: Quantifiers

    /// One comparison on a project (the builder's variable), with its twin for a quantifier word.
    /// The builder is pure: it may run more than once.
    private mutating func projectTest() -> ((PredicateExpressions.Variable<F.Project>) -> BoolExpression, (String) -> Fragment) {
        let encode = self.encode
        switch rng.int(0...6) {
        case 0, 1:
            let s = string()
            let choices: [(PredicateExpressions.ComparisonOperator?, String)] = [(nil, "=="), (nil, "!="), (.lessThan, "<"), (.greaterThanOrEqual, ">=")]
            let (op, text) = rng.pick(choices)
            return ({ p in
                let title = keyPath(p, F.projectTitle)
                return switch (op, text) {
                case (nil, "=="): equal(title, value(encode(s)))
                case (nil, _): notEqual(title, value(encode(s)))
                case let (op?, _): compare(title, op, value(encode(s)))
                }
            }, { Fragment("\($0) projects.title \(text) %@", s) })
        case 2:
            let n = needle()
            return ({ stringContains(keyPath($0, F.projectTitle), value(encode(n))) }, { Fragment("\($0) projects.title CONTAINS %@", n) })
        case 3:
            let n = needle()
            return ({ stringStarts(keyPath($0, F.projectTitle), value(encode(n))) }, { Fragment("\($0) projects.title BEGINSWITH %@", n) })
        case 4:
            let project = id("Project")
            return ({ equal(keyPath($0, F.projectID), value(project)) }, { Fragment("\($0) projects == %@", project) })
        case 5:
            let k = count()
            let (op, text) = rng.pick(swiftOperators)
            return ({ compare(keyPath(keyPath($0, F.projectMembers), \Set<F.Employee>.count), op, value(k)) },
                    { Fragment("\($0) projects.members.@count \(text) %@", k) })
        default:
            let ids = (0..<rng.int(0...3)).map { _ in id("Project") }
            return ({ sequenceContains(ids, keyPath($0, F.projectID)) }, { Fragment("\($0) projects IN %@", ids) })
        }
    }

    private mutating func projectQuantifier() -> Result {
        let projects = keyPath(root, F.employeeProjects)
        let (a, ta) = projectTest(), (b, tb) = projectTest()
        let k = simpleLeaf()
        let form = rng.int(0...3)
        if rng.chance(0.55) {
            switch form {
            case 0: return (containsWhere(projects) { a($0) }, ta("ANY"))
            case 1: return (containsWhere(projects) { or(a($0), b($0)) }, "(" + ta("ANY") + " OR " + tb("ANY") + ")")
            case 2: return (containsWhere(projects) { not(a($0)) }, "NOT (" + ta("ALL") + ")")
            default: return (containsWhere(projects) { and(a($0), k.expression) }, "(" + ta("ANY") + " AND " + k.twin + ")")
            }
        }
        switch form {
        case 0: return (allSatisfy(projects) { a($0) }, ta("ALL"))
        case 1: return (allSatisfy(projects) { and(a($0), b($0)) }, "(" + ta("ALL") + " AND " + tb("ALL") + ")")
        case 2: return (allSatisfy(projects) { not(a($0)) }, ta("NONE"))
        default: return (allSatisfy(projects) { or(a($0), k.expression) }, "(" + ta("ALL") + " OR " + k.twin + ")")
        }
    }

    /// `department?.employees.contains { … } ?? false` and friends: a quantifier behind an optional chain.
    private mutating func chainedQuantifier() -> Result {
        let any = rng.chance(0.5)
        let wrap = rng.int(0...1)          // 0: the natural default (?? false for contains, ?? true for allSatisfy); 1: the other
        let word = any ? "ANY" : "ALL"
        let encode = self.encode
        let k = age(), s = string()
        if rng.chance(0.7) {
            let choice = rng.int(0...2)
            let build: (PredicateExpressions.Variable<F.Employee>) -> BoolExpression = { m in
                switch choice {
                case 0: equal(keyPath(m, F.employeeName), value(encode(s)))
                case 1: equal(keyPath(m, F.employeeAge), value(Int16?(k)))
                default: compare(coalesce(keyPath(m, F.employeeAge), Int16(0)), .greaterThan, value(k))
                }
            }
            let body = switch choice {
            case 0: Fragment("\(word) department.employees.name == %@", s)
            case 1: Fragment("\(word) department.employees.age == %@", k)
            default:
                // `($0.age ?? 0) > k`: a member with no age passes when 0 > k.
                switch (0 > k, any) {
                case (false, _): Fragment("\(word) department.employees.age > %@", k)
                case (true, true): Fragment("(ANY department.employees.age == nil OR ANY department.employees.age > %@)", k)
                case (true, false): Fragment("NONE department.employees.age <= %@", k)
                }
            }
            let test: Expression<Bool?> = chainAny(keyPath(root, F.employeeDepartment)) { d in
                any ? containsWhere(keyPath(d, F.departmentEmployees), build) : allSatisfy(keyPath(d, F.departmentEmployees), build)
            }
            return wrapped(test, body, guardPath: "department", any: any, wrap: wrap)
        }
        let body = Fragment("\(word) department.company.departments.name != %@", s)
        let build: (PredicateExpressions.Variable<F.Department>) -> BoolExpression = { notEqual(keyPath($0, F.departmentName), value(encode(s))) }
        let test: Expression<Bool?> = chainFlatAny(keyPath(root, F.employeeDepartment)) { d in
            chainAny(keyPath(d, F.departmentCompany)) { c in
                any ? containsWhere(keyPath(c, F.companyDepartments), build) : allSatisfy(keyPath(c, F.companyDepartments), build)
            }
        }
        return wrapped(test, body, guardPath: "department.company", any: any, wrap: wrap)
    }

    private func wrapped(_ test: Expression<Bool?>, _ body: Fragment, guardPath: String, any: Bool, wrap: Int) -> Result {
        switch (any, wrap) {
        case (true, 0): (coalesce(test, false), body)
        case (true, _): (coalesce(test, true), "(\(guardPath) == nil OR " + body + ")")
        case (false, 0): (coalesce(test, true), body)
        case (false, _): (equal(test, value(Bool?(true))), "(\(guardPath) != nil AND " + body + ")")
        }
    }

    /// `contains(where:)`/`allSatisfy` over a captured array, reading the employee.
    private mutating func constantSequenceQuantifier() -> Result {
        let size = rng.int(0...3)
        let name = self.name, root = self.root
        switch rng.int(0...2) {
        case 0:
            let names = (0..<size).map { _ in string() }
            return (containsWhere(value(names.map(encode))) { equal($0, name) }, Fragment("name IN %@", names))
        case 1:
            let prefixes = (0..<size).map { _ in needle() }
            let twins = prefixes.map { Fragment("name BEGINSWITH %@", $0) }
            return (containsWhere(value(prefixes.map(encode))) { stringStarts(name, $0) },
                    twins.isEmpty ? Fragment("FALSEPREDICATE") : twins.dropFirst().reduce("(" + twins[0]) { $0 + " OR " + $1 } + ")")
        default:
            let ages = (0..<size).map { _ in age() }
            let fallback = age()
            let twins = ages.map { a in coalesced("age", fallback) { $0 + " < " + Fragment("%@", a) } }
            return (allSatisfy(value(ages)) { compare(coalesce(keyPath(root, F.employeeAge), fallback), .lessThan, $0) },
                    twins.isEmpty ? Fragment("TRUEPREDICATE") : twins.dropFirst().reduce("(" + twins[0]) { $0 + " AND " + $1 } + ")")
        }
    }

    private mutating func pathAgainstPath() -> Result {
        let (isEqual, op) = equalityOperator()
        switch rng.int(0...2) {
        case 0:
            let department: Expression<String?> = chain(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentName) }
            return (equality(isEqual, keyPath(root, F.employeeEmail), department), Fragment("email \(op) department.name"))
        case 1:
            let department: Expression<String?> = chain(keyPath(root, F.employeeDepartment)) { keyPath($0, F.departmentName) }
            let fallback = rng.chance(0.5) ? "" : string()
            return (equality(isEqual, coalesce(department, encode(fallback)), name), coalesced("department.name", fallback) { $0 + " \(op) name" })
        default:
            let (swiftOp, text) = rng.pick(swiftOperators)
            let (a, b) = (age(), age())
            let owner: Expression<Int16?> = chainFlat(keyPath(root, F.employeeBadge)) { b in
                chainFlat(keyPath(b, F.badgeOwner)) { keyPath($0, F.employeeAge) }
            }
            return (compare(coalesce(keyPath(root, F.employeeAge), a), swiftOp, coalesce(owner, b)),
                    coalesced("age", a) { l in coalesced("badge.owner.age", b) { r in l + " \(text) " + r } })
        }
    }

    /// Constant parts Foundation evaluates: arithmetic on captured values, literals, constant comparisons.
    private mutating func constants() -> Result {
        switch rng.int(0...4) {
        case 0:
            let k = count()
            let sum = PredicateExpressions.Arithmetic(lhs: value(k), rhs: value(1), op: .add)
            return (compare(keyPath(keyPath(root, F.employeeProjects), \Set<F.Project>.count), .greaterThan, sum), Fragment("projects.@count > %@", k + 1))
        case 1:
            let x = height(), fallback = height()
            let negative = PredicateExpressions.UnaryMinus(value(x))
            return (compare(coalesce(keyPath(root, F.employeeHeight), fallback), .greaterThan, negative),
                    coalesced("height", fallback) { $0 + " > " + Fragment("%@", -x) })
        case 2:
            let b = rng.chance(0.5)
            return (value(b), Fragment(b ? "TRUEPREDICATE" : "FALSEPREDICATE"))
        case 3:
            let (a, b) = (count(), count())
            let (op, _) = rng.pick(swiftOperators)
            return (compare(value(a), op, value(b)), Fragment(holds(a, op, b) ? "TRUEPREDICATE" : "FALSEPREDICATE"))
        default:
            // Two conditions compared as Booleans.
            let email = equal(keyPath(root, F.employeeEmail), PredicateExpressions.NilLiteral<String>())
            let age = equal(keyPath(root, F.employeeAge), PredicateExpressions.NilLiteral<Int16>())
            return (equal(email, age),
                    Fragment("((email == nil AND age == nil) OR (NOT (email == nil) AND NOT (age == nil)))"))
        }
    }
}
