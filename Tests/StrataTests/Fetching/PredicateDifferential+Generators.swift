import Foundation
import Testing
import StrataTestSupport
@testable import Strata

// Seeded data and well-typed random predicates for PredicateDifferentialTests.

/// SplitMix64: small, fast, and the same sequence everywhere for a seed. (The helpers below don't
/// use the standard library's `random(in:using:)`, whose algorithm may change between releases.)
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    /// An independent stream for case `index` of a run seeded with `seed`: a case reproduces from
    /// (seed, index) alone.
    init(seed: UInt64, stream index: Int) {
        var mixer = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: index) &* 0xD1B5_4A32_D192_ED03))
        state = mixer.next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `range` (modulo bias is irrelevant here).
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }

    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    /// Picks by weight: `[(3, a), (1, b)]` returns `a` three times as often as `b`.
    mutating func weighted<T>(_ items: [(Int, T)]) -> T {
        var roll = int(0...(items.reduce(0) { $0 + $1.0 } - 1))
        for (weight, item) in items {
            if roll < weight { return item }
            roll -= weight
        }
        return items[items.count - 1].1
    }

    /// `count` distinct elements of `items`, in random order.
    mutating func sample<T>(_ items: [T], _ count: Int) -> [T] {
        var pool = items
        var result: [T] = []
        while result.count < count, !pool.isEmpty { result.append(pool.remove(at: int(0...(pool.count - 1)))) }
        return result
    }
}

/// Run settings from the environment.
enum DifferentialSettings {
    static let defaultSeed: UInt64 = 0x5EED_2024_57A7_A001
    static let iterations = 10_000

    static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["STRATA_PREDICATE_SEED"]?.trimmingCharacters(in: .whitespaces),
              !text.isEmpty else { return defaultSeed }
        if text.lowercased().hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
        if let value = UInt64(text) { return value }
        return UInt64(bitPattern: Int64(truncatingIfNeeded: text.hashValue))   // not reproducible; only for odd input
    }

    /// `STRATA_PREDICATE_VERBOSE=1` prints every case with its result sizes.
    static var verbose: Bool { ProcessInfo.processInfo.environment["STRATA_PREDICATE_VERBOSE"].map { $0 != "" && $0 != "0" } ?? false }

    static func cases(default value: Int) -> Int {
        guard let text = ProcessInfo.processInfo.environment["STRATA_PREDICATE_CASES"], let n = Int(text), n > 0 else { return value }
        return n
    }
}

/// The strings that make string semantics interesting: case, diacritics (precomposed and
/// decomposed), ß, dotted İ, a titlecase digraph, CJK, LIKE wildcards, quotes, emoji.
enum TrickyStrings {
    static let pool: [String] = [
        "", "école", "ÉCOLE", "Ecole", "e\u{301}cole", "Straße", "STRASSE", "İstanbul", "ǅ", "日本",
        "a*b?c", "O'Brien", "x\"y", "🙂", "👩‍💻", "Ann", "ann", "Bob", "zed", "É", "e", "ß", "a\u{0}b", "tab\tback\\slash",
    ]
    /// Extra needles for comparisons and string operators.
    static let needles: [String] = [
        "E", "é", "e\u{301}", "\u{301}", "strasse", "STRAẞE", "istanbul", "i\u{307}stanbul", "İ", "ǆ", "Ǆ", "dž",
        "日", "本", "*", "?", "a", "A", "'", "\"", "\\", "O'", "cole", "COLE", "ss", "SS", "🙂", "💻", "zz", "a.b",
        "\u{0}", "\n", "\r\n", "\t", "\u{7F}", "\u{1B}[0m", "\u{FEFF}", "\u{200D}", "ﬁ", "ﬃ", "\u{2126}", "\u{3A9}", "\u{212B}", "\u{C5}", "A\u{30A}",
    ]
    /// Valid regular expressions for MATCHES (whole-string match).
    static let regexes: [String] = [
        "[a-e].*", "É.*", ".*", ".*e.*", "[^a-z]*", "\\w+", "(?i)ecole", "e\u{301}.*", ".*ß", "[A-Z][a-z]+",
        ".", "\\p{L}+", "", ".*(cole|COLE)", "[0-9a-z ]*", "O'.*", ".*\".*", "..?.?", "\\S*\\s\\S*", "[ǅǆǄ]",
    ]

    /// A random ASCII name (letters, digits, spaces): valid for Employee.name.
    static func asciiName(_ rng: inout SplitMix64) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ")
        return String((0..<rng.int(1...10)).map { _ in rng.pick(letters) })
    }

    /// A random email matching the model's regex `[a-z.]+@[a-z]+\.[a-z]+`.
    static func email(_ rng: inout SplitMix64) -> String {
        func word(_ rng: inout SplitMix64, _ length: ClosedRange<Int>, dots: Bool) -> String {
            let letters = Array(dots ? "abcdeeeklmnorstz." : "abcdeklmnorstz")
            var text = String((0..<rng.int(length)).map { _ in rng.pick(letters) })
            if text.allSatisfy({ $0 == "." }) { text = "e" + text }
            return text
        }
        return word(&rng, 1...8, dots: true) + "@" + word(&rng, 1...6, dots: false) + "." + rng.pick(["com", "org", "io", "e"])
    }
}

/// The seeded store contents and the IDs and values predicates draw from.
struct DifferentialFixture {
    var employeeIDs: [ObjectID] = []
    var departmentIDs: [ObjectID] = []
    var companyIDs: [ObjectID] = []
    var projectIDs: [ObjectID] = []
    var badgeIDs: [ObjectID] = []
    var deskIDs: [ObjectID] = []
    /// String constants: the tricky pool, the needles, stored values and fragments of them.
    var strings: [String] = []
    var emails: [String] = []
    var heights: [Double] = []
    /// Numbers the numeric key paths actually take (ages, counts, sums, averages, minima…), so
    /// comparisons hit boundaries instead of mostly matching nothing or everything.
    var numbers: [Double] = []

    static let numberPool: [Double] = [0, -0.0, 0.25, 1, 2, 3, 5, 15, 16, 16.5, 17, 30, 42, 98, 99, 99.75, 100,
                                       170, 182.75, -1, -1.5, 1e15, -1e15, 1e15 + 0.25, 2e15, -300.5, 1e300,
                                       9.223372036854775807e18, -9.223372036854775808e18, 9_007_199_254_740_992, .leastNonzeroMagnitude, -1e-300]

    /// Inserts ~3 companies, 8 departments, 8 projects, `employees` employees with badges and desks.
    /// Call on the context's queue; saves nothing.
    static func populate(_ context: ManagedObjectContext, rng: inout SplitMix64, employees employeeCount: Int = 40) throws -> DifferentialFixture {
        var fixture = DifferentialFixture()
        func insert(_ entity: String, _ values: [String: Any?]) throws -> ManagedObject {
            let object = try context.insert(entity)
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { try object.setValue(value, forKey: key) }
            return object
        }
        let pool = TrickyStrings.pool
        let companies = try (0..<3).map { _ in try insert("Company", ["name": rng.pick(pool)]) }
        // The first departments take the tricky names in order so each run has the interesting ones.
        let departmentNames = ["école", "ÉCOLE", "Ecole", "e\u{301}cole", "Straße", "STRASSE", "İstanbul", rng.pick(pool)]
        var departments: [ManagedObject] = []
        for (index, name) in departmentNames.enumerated() {
            let department = try insert("Department", ["name": index == 7 ? rng.pick(pool + [""]) : name])
            if rng.chance(0.75) { try department.setValue(rng.pick(companies), forKey: "company") }
            departments.append(department)
        }
        let projects = try (0..<8).map { index in
            try insert("Project", ["title": index < 4 ? ["ǅ", "日本", "a*b?c", "O'Brien"][index] : rng.pick(pool)])
        }
        let desks = try (0..<5).map { try insert("Desk", ["number": Int32($0 * 7 - 3)]) }

        var members: [Int: [(age: Int16?, height: Double?)]] = [:]      // by department index
        var projectMembers = Array(repeating: 0, count: projects.count)
        var largePositiveUsed = false, largeNegativeUsed = false
        func height() -> Double? {
            // Multiples of 0.25 with a total magnitude below 2^51 keep every @sum/@avg exact in any order.
            switch rng.int(0...11) {
            case 0: return nil
            case 1: return 0
            case 2: return -0.0
            case 3: return -1.5
            case 4: return 0.25
            case 5: return 170
            case 6:
                if !largePositiveUsed { largePositiveUsed = true; return 1e15 }
                return 182.75
            case 7:
                if !largeNegativeUsed { largeNegativeUsed = true; return -1e15 }
                return -300.5
            default: return Double(rng.int(-1200...1200)) * 0.25
            }
        }
        for index in 0..<employeeCount {
            // The first employees take names every run should have: a NUL inside, the prefix before
            // it, and the same word precomposed and decomposed.
            let fixedNames = ["a\u{0}b", "a", "école", "e\u{301}cole"]
            var name: String = switch rng.int(0...4) {
            case 0, 1: rng.pick(pool.filter { !$0.isEmpty })
            case 2: TrickyStrings.asciiName(&rng)
            case 3: rng.pick(pool.filter { !$0.isEmpty }) + rng.pick([" ", "", "-"]) + rng.pick(pool.filter { !$0.isEmpty })
            default: rng.pick(["Ann", "ann", "Bob", "zed", "É", "e", "ß", "école", "Ecole"])
            }
            if index < fixedNames.count { name = fixedNames[index] }
            let employee = try insert("Employee", ["name": name])
            if rng.chance(0.7) {
                let email = TrickyStrings.email(&rng)
                try employee.setValue(email, forKey: "email")
                fixture.emails.append(email)
            }
            let age: Int16? = switch rng.int(0...5) {
            case 0: nil
            case 1: Int16(rng.pick([16, 99]))
            case 2: 30                                                        // the model's default
            default: Int16(rng.int(16...99))
            }
            if age != 30 { try employee.setValue(age, forKey: "age") }
            let h = height()
            try employee.setValue(h, forKey: "height")
            if let h { fixture.heights.append(h) }
            if index < 2 || rng.chance(0.8) {
                let d = rng.int(0...(departments.count - 1))
                try employee.setValue(departments[d], forKey: "department")
                members[d, default: []].append((age, h))
            }
            if index % 7 != 3 {
                let chosen = rng.sample(Array(projects.indices), rng.int(0...5))
                for p in chosen { projectMembers[p] += 1 }
                try employee.setValue(chosen.map { projects[$0] }, forKey: "projects")
                fixture.numbers.append(Double(chosen.count))
            }
            if let age { fixture.numbers.append(Double(age)) }
            if rng.chance(0.5) {
                let code = rng.chance(0.5) ? rng.pick(pool) : "B-\(index)"
                let badge = try insert("Badge", ["code": code])
                try employee.setValue(badge, forKey: "badge")
                fixture.badgeIDs.append(badge.objectID)
                fixture.strings.append(code)
            }
            if rng.chance(0.3) { try employee.setValue(rng.pick(desks), forKey: "desk") }
            fixture.employeeIDs.append(employee.objectID)
            fixture.strings.append(name)
        }
        for group in members.values {
            let ages = group.compactMap(\.age).map(Double.init), heights = group.compactMap(\.height)
            fixture.numbers += [Double(group.count), ages.reduce(0, +), heights.reduce(0, +)]
            fixture.numbers += [ages.min(), heights.max(), ages.isEmpty ? nil : ages.reduce(0, +) / Double(ages.count),
                                heights.isEmpty ? nil : heights.reduce(0, +) / Double(heights.count)].compactMap { $0 }
        }
        fixture.numbers += projectMembers.map(Double.init)
        fixture.numbers += (0...5).map(Double.init) + desks.indices.map { Double($0 * 7 - 3) }
        fixture.departmentIDs = departments.map(\.objectID)
        fixture.companyIDs = companies.map(\.objectID)
        fixture.projectIDs = projects.map(\.objectID)
        fixture.deskIDs = desks.map(\.objectID)
        fixture.strings = Array(Set(fixture.strings + pool + TrickyStrings.needles + fixture.emails)).sorted()
        return fixture
    }

    /// An ID of `entity` that no row has.
    static func missing(_ entity: String) -> ObjectID { ObjectID(entityName: entity, primaryKey: 987_654) }
}

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
