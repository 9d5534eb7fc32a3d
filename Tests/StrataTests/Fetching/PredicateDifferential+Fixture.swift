import Foundation
import Testing
import StrataTestSupport
@testable import Strata

// Run settings, tricky strings and the seeded data set for PredicateDifferentialTests.

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
