import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Random and mutated format strings: the parser either returns a condition whose canonical form
/// parses back to it, or throws a ``ConditionParseError`` — never another error, a crash or a hang.
/// Pathological inputs (deep nesting, huge literals, long chains) finish quickly and don't overflow the stack.
///
/// The run is seeded: `PREDICATE_FUZZ_SEED=<n>` replays a run, `PREDICATE_FUZZ_INPUTS=<n>` changes its size.
@Suite struct PredicateFuzzTests {
    /// SplitMix64 (StrataTestSupport): small, fast and reproducible on every platform.
    typealias SeededGenerator = SplitMix64

    // MARK: Inputs

    /// Valid predicates to mutate: every construct of the language.
    static let corpus: [String] = [
        "age > 5", "age >= 18 AND age < 65", "name BEGINSWITH[cd] 'é'", "name CONTAINS[c] \"smith\" OR email ENDSWITH '@x.org'",
        "NOT (department.name == 'Sales')", "department.employees.@count > 3", "ANY projects.title LIKE[c] 'ap*'",
        "ALL projects.title != nil", "NONE projects.title MATCHES '^X.*'", "SOME projects.title IN {'a', 'b', \"c\"}",
        "age BETWEEN {18, 65}", "age IN %@", "name == %@ AND age > %d", "%K == %@", "height > %f OR height < %lf",
        "age == %i OR age == %ld OR age == %lld", "SELF IN %@", "department == nil", "department.name == $NAME AND age < $MAX",
        "TRUEPREDICATE", "FALSEPREDICATE OR YES == TRUE", "#and == 1 AND #in.#like == NO",
        "x == -1.5e-3 AND y == 0x1F AND z == 1e3 AND w == .5", "when > CAST(-5, \"NSDate\")", "blob == CAST('AAEC', \"NSData\")",
        "uid == CAST(\"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\", \"UUID\")", "amount < CAST('12.50', \"NSDecimalNumber\")",
        "department.employees.@sum.age > 100 || !(age =< 20)", #"name == 'a\n\t\"\'\\\u{e9}\u00e9'"#,
        "(a == 1 OR b <> 2) AND (c != 3 OR d => 4)", "employees.@avg.age >= 30.5 && employees.@max.height < 200",
        "SELF == CAST('Employee/3', \"ObjectID\")",
    ]

    /// Pieces random inputs are built from, weighted toward the language's tokens.
    static let tokens: [String] = [
        "AND", "OR", "NOT", "and", "or", "not", "ANY", "ALL", "NONE", "SOME", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH",
        "ENDSWITH", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "nil", "NULL", "YES", "NO", "TRUE", "FALSE",
        "SELF", "self", "CAST", "CAST(", "\"NSDate\"", "'UUID'",
        "==", "=", "!=", "<>", "<", "<=", ">", ">=", "=<", "=>", "&&", "||", "!", "(", ")", "(", ")", "{", "}", ",", ".",
        "[", "]", "[c]", "[d]", "[cd]", "@", "@count", "@sum", "@avg", ".@max.",
        "%@", "%@", "%@", "%K", "%d", "%i", "%ld", "%lld", "%f", "%lf", "%", "%q", "%%", "$", "$X", "$NAME",
        "\"", "'", "\"", "'", "\\", "\\n", "\\u{e9}", "\\u00e9", "\\u{", "\\'", "\\\"", "\\0", "\\x",
        "0", "1", "5", "9", "42", "-", "+", "-5", "1e3", "e", "E", "1.5", ".5", "0x1F", "0x", "0b1", "9223372036854775808",
        "age", "name", "department", "employees", "projects", "title", "_", "#", "#and", "#1",
        "é", "e\u{301}", "\u{301}", "日本", "🙂", "\u{2028}", "\u{FEFF}", "\u{85}", "ß", "İ",
        " ", " ", " ", " ", "\n", "\t", "\0", "\r\n",
    ]

    static let keyPaths = ["age", "name", "department.name", "employees.@count", "SELF", "and", "in.like", "projects.title", "é"]
    /// Keys `%K` accepts that are not made of key names (see PredicateParserTests).
    static let oddKeyPaths = ["first name", "1st"]

    static func randomScalar(_ rng: inout SeededGenerator) -> String {
        let ranges: [ClosedRange<UInt32>] = [0x00...0x7F, 0x80...0x2FF, 0x300...0x36F, 0x2000...0x206F, 0x3040...0x30FF, 0x1F300...0x1F6FF, 0xE000...0xF8FF]
        let range = ranges.randomElement(using: &rng)!
        return String(Unicode.Scalar(UInt32.random(in: range, using: &rng)).map(Character.init) ?? "?")
    }

    static func randomInput(_ rng: inout SeededGenerator) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...40, using: &rng) {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<75: text += tokens.randomElement(using: &rng)!
            case 75..<90: text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng)))
            default: text += randomScalar(&rng)
            }
        }
        return text
    }

    static func mutated(_ rng: inout SeededGenerator) -> String {
        var scalars = Array(corpus.randomElement(using: &rng)!.unicodeScalars)
        let rounds = [1, 1, 1, 1, 1, 2, 2, 3, 4].randomElement(using: &rng)!
        for _ in 0..<rounds {
            let position = Int.random(in: 0...scalars.count, using: &rng)
            let length = min(Int.random(in: 1...6, using: &rng), scalars.count - position)
            let piece = Bool.random(using: &rng) ? tokens.randomElement(using: &rng)! : randomScalar(&rng)
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: scalars.insert(contentsOf: piece.unicodeScalars, at: position)
            case 1: scalars.removeSubrange(position..<(position + length))
            case 2: scalars.replaceSubrange(position..<(position + length), with: piece.unicodeScalars)
            case 3:
                let copyLength = min(Int.random(in: 1...24, using: &rng), scalars.count - position)
                let copy = scalars[position..<(position + copyLength)]
                scalars.insert(contentsOf: copy, at: Int.random(in: 0...scalars.count, using: &rng))
            case 4: scalars.removeSubrange(position...)
            case 5:
                if scalars.count > 1 { scalars.swapAt(Int.random(in: 0..<scalars.count, using: &rng), Int.random(in: 0..<scalars.count, using: &rng)) }
            case 6:
                // Combine with another predicate: mostly valid, and deeper.
                let other = corpus.randomElement(using: &rng)!
                let joiner = ["AND", "OR", "&&", "||", "AND NOT"].randomElement(using: &rng)!
                let text = String(String.UnicodeScalarView(scalars))
                let combined = Bool.random(using: &rng) ? "(\(text)) \(joiner) (\(other))" : "NOT (\(text)) \(joiner) \(other)"
                scalars = Array(combined.unicodeScalars)
            default:
                scalars.insert(contentsOf: [" ", "\n", "\t", "\u{2028}", "\u{FEFF}"].randomElement(using: &rng)!.unicodeScalars, at: position)
            }
        }
        return String(String.UnicodeScalarView(scalars))
    }

    /// A key path segment the canonical form cannot spell: not a name (`#1abc`, or anything `%K` was given).
    static func unspellableSegment(in condition: Condition) -> String? {
        var found: String?
        func isName(_ segment: Substring) -> Bool {
            guard let first = segment.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return false }
            return segment.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0 == "_" || ("0"..."9").contains($0) }
        }
        _ = condition.mapOperands { operand in
            if case .keyPath(let path) = operand, found == nil {
                for segment in path.split(separator: ".", omittingEmptySubsequences: false)
                where !isName(segment.hasPrefix("@") ? segment.dropFirst() : segment) {
                    found = String(segment)
                    break
                }
            }
            return operand
        }
        return found
    }

    // MARK: Arguments

    static func randomString(_ rng: inout SeededGenerator) -> String {
        let pieces = ["a", "Z", "é", "e\u{301}", "'", "\"", "\\", "%@", "$X", "\0", "\n", "\u{7F}", "🙂", " OR 1=1", " "]
        return (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
    }

    static func randomValue(_ rng: inout SeededGenerator) -> Any? {
        switch Int.random(in: 0..<22, using: &rng) {
        case 0: return Int.random(in: -1_000...1_000, using: &rng)
        case 1: return [Int64.min, Int64.max, 0, -1].randomElement(using: &rng)!
        case 2: return Double.random(in: -1e6...1e6, using: &rng)
        case 3: return [-0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, 1e-7].randomElement(using: &rng)!
        case 4: return Double.nan
        case 5, 6: return randomString(&rng)
        case 7: return Bool.random(using: &rng)
        case 8: return nil
        case 9: return Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -5_000_000_000...5_000_000_000, using: &rng)) / 8)
        case 10: return UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        case 11: return Data((0..<Int.random(in: 0...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 12: return Decimal(string: ["12.50", "-0.001", "0", "123456789.123456789"].randomElement(using: &rng)!)!
        case 13: return ObjectID(entityName: ["Employee", "Department"].randomElement(using: &rng)!, primaryKey: Int64.random(in: -5...1_000, using: &rng))
        case 14: return (0..<Int.random(in: 0...4, using: &rng)).map { _ in Int.random(in: -9...9, using: &rng) }
        case 15: return (0..<Int.random(in: 0...3, using: &rng)).map { _ in randomString(&rng) }
        case 16: return Float(Int.random(in: -100...100, using: &rng)) / 4
        case 17: return UInt64.max                       // no Int64 for it: rejected
        case 18: return NSObject()                       // no condition value: rejected
        case 19: return [1, "a", nil] as [Any?]
        case 20: return URL(string: "https://example.com/a?b=c")!
        default: return keyPaths.randomElement(using: &rng)!
        }
    }

    /// One argument per format specifier in `format` (of a fitting kind), most of the time; a random
    /// number of random arguments otherwise.
    static func arguments(for format: String, _ rng: inout SeededGenerator) -> [Any?] {
        if Int.random(in: 0..<4, using: &rng) == 0 {
            return (0..<Int.random(in: 0...3, using: &rng)).map { _ in randomValue(&rng) }
        }
        var result: [Any?] = []
        let scalars = Array(format.unicodeScalars)
        var index = 0
        while index < scalars.count {
            defer { index += 1 }
            guard scalars[index] == "%", index + 1 < scalars.count else { continue }
            switch scalars[index + 1] {
            case "K":
                result.append(Int.random(in: 0..<20, using: &rng) == 0 ? oddKeyPaths.randomElement(using: &rng)! : keyPaths.randomElement(using: &rng)!)
            case "d", "i", "l":
                result.append(Int.random(in: 0..<10, using: &rng) == 0 ? randomValue(&rng) : Int.random(in: -50...50, using: &rng))
                if scalars[index + 1] == "l" && index + 2 < scalars.count && scalars[index + 2] == "f" {
                    result[result.count - 1] = Double.random(in: -10...10, using: &rng)
                }
            case "f": result.append(Double.random(in: -10...10, using: &rng))
            default: result.append(randomValue(&rng))
            }
        }
        return result
    }

    // MARK: The run

    struct Tally {
        var inputs = 0, parsed = 0, rejected = 0, substituted = 0
        /// Problem kind → count and a few examples.
        var problems: [String: (count: Int, examples: [String])] = [:]
        var slowest: (seconds: Double, input: String) = (0, "")

        mutating func problem(_ kind: String, _ example: String) {
            var entry = problems[kind] ?? (0, [])
            entry.count += 1
            if entry.examples.count < 3 { entry.examples.append(example) }
            problems[kind] = entry
        }
    }

    static func check(_ format: String, _ arguments: [Any?], _ rng: inout SeededGenerator, into tally: inout Tally) {
        tally.inputs += 1
        let start = ContinuousClock.now
        defer {
            let seconds = Self.seconds(ContinuousClock.now - start)
            if seconds > tally.slowest.seconds { tally.slowest = (seconds, format) }
        }
        let condition: Condition
        do {
            condition = try Condition(format: format, argumentArray: arguments)
        } catch is ConditionParseError {
            tally.rejected += 1
            return
        } catch {
            tally.problem("threw \(type(of: error)), not ConditionParseError", "\(format.debugDescription) → \(error)")
            return
        }
        tally.parsed += 1
        roundTrip(condition, format, into: &tally)
        // Fill in any $VARIABLEs (some left out) and check the result the same way.
        var variables: Set<String> = []
        _ = condition.mapOperands { operand in
            if case .variable(let name) = operand { variables.insert(name) }
            return operand
        }
        guard !variables.isEmpty else { return }
        var values: [String: Any?] = [:]
        for name in variables where Int.random(in: 0..<8, using: &rng) != 0 { values[name] = randomValue(&rng) }
        do {
            let filled = try condition.substituting(values)
            tally.substituted += 1
            roundTrip(filled, format + " (substituted)", into: &tally)
        } catch is ConditionParseError {
        } catch {
            tally.problem("substituting threw \(type(of: error)), not ConditionParseError", "\(format.debugDescription) → \(error)")
        }
    }

    static func roundTrip(_ condition: Condition, _ format: String, into tally: inout Tally) {
        let canonical = condition.description
        if let segment = unspellableSegment(in: condition), (try? Condition(canonical)) != condition {
            tally.problem("key path segment the canonical form cannot spell (a #-escaped name starting with a digit, or a %K string that is not a key)",
                          "\(format.debugDescription) → \(canonical.debugDescription) (segment \(segment.debugDescription))")
            return
        }
        let reparsed: Condition
        do {
            reparsed = try Condition(canonical)
        } catch let error as ConditionParseError {
            tally.problem("canonical form does not parse: \(error.message)", "\(format.debugDescription) → \(canonical.debugDescription)")
            return
        } catch {
            tally.problem("canonical form threw \(type(of: error))", "\(format.debugDescription) → \(canonical.debugDescription)")
            return
        }
        if reparsed != condition {
            tally.problem("canonical form parses to another condition", "\(format.debugDescription) → \(canonical.debugDescription) → \(reparsed)")
        } else if !reparsed.description.unicodeScalars.elementsEqual(canonical.unicodeScalars) {
            tally.problem("canonical form is not a fixed point", "\(canonical.debugDescription) → \(reparsed.description.debugDescription)")
        }
    }

    @Test(.timeLimit(.minutes(30))) func randomAndMutatedInputsParseOrThrowParseErrors() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["PREDICATE_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EED_2026
        let count = environment["PREDICATE_FUZZ_INPUTS"].flatMap { Int($0) } ?? 100_000
        var rng = SeededGenerator(seed: seed)
        var tally = Tally()
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for index in 0..<count {
                let format = index % 2 == 0 ? Self.randomInput(&rng) : Self.mutated(&rng)
                let arguments = Self.arguments(for: format, &rng)
                Self.check(format, arguments, &rng, into: &tally)
            }
        }
        print("predicate-fuzz: inputs=\(tally.inputs) parsed=\(tally.parsed) rejected=\(tally.rejected) seed=\(seed)")
        print("predicate-fuzz: substituted=\(tally.substituted) elapsed=\(elapsed) slowest=\(String(format: "%.4f", tally.slowest.seconds))s problems=\(tally.problems.values.map(\.count).reduce(0, +))")
        #expect(tally.inputs == count)
        #expect(tally.parsed + tally.rejected == count)
        // Both outcomes are exercised: the corpus mutations parse often, random strings mostly don't.
        #expect(tally.parsed >= count / 20)
        #expect(tally.rejected >= count / 4)
        #expect(tally.slowest.seconds < 1 * Self.timeScale, "slowest input: \(tally.slowest.input.debugDescription)")
        for (kind, entry) in tally.problems.sorted(by: { $0.key < $1.key }) {
            let examples = entry.examples.joined(separator: "\n  ")
            Issue.record("\(entry.count)× \(kind) (seed \(seed)), e.g.:\n  \(examples)")
        }
    }

    // MARK: Pathological inputs

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Multiplies the time limits below: `STRATA_TIME_SCALE` (default 1). The sanitizer runs in CI
    /// set it, as their builds run many times slower; the limits catch blow-ups, not constant factors.
    static let timeScale = ProcessInfo.processInfo.environment["STRATA_TIME_SCALE"].flatMap { Double($0) } ?? 1

    @Test func hundredThousandOpenParenthesesFailFast() throws {
        let clock = ContinuousClock()
        var error: ConditionParseError?
        let elapsed = clock.measure {
            error = #expect(throws: ConditionParseError.self) { try Condition(String(repeating: "(", count: 100_000)) }
        }
        #expect(error?.message == "nesting deeper than 100 levels")
        #expect(error?.column == 101)
        #expect(Self.seconds(elapsed) < 5 * Self.timeScale, "\(elapsed)")
    }

    @Test func tenThousandNotsFailFast() throws {
        let clock = ContinuousClock()
        var error: ConditionParseError?
        let elapsed = clock.measure {
            error = #expect(throws: ConditionParseError.self) { try Condition(String(repeating: "NOT ", count: 10_000) + "a == 1") }
        }
        #expect(error?.message == "nesting deeper than 100 levels")
        #expect(error?.column == 397)                  // at the 100th NOT
        #expect(Self.seconds(elapsed) < 5 * Self.timeScale, "\(elapsed)")
        // Mixed nesting counts the same way.
        let mixed = #expect(throws: ConditionParseError.self) { try Condition(String(repeating: "!(", count: 10_000) + "a == 1") }
        #expect(mixed?.message == "nesting deeper than 100 levels")
    }

    @Test func oneMegabyteStringLiteral() throws {
        let unit = #"abc \"q\" \\ \n é'"#                // 18 scalars, escapes included
        let literal = String(repeating: unit, count: 1_048_576 / unit.unicodeScalars.count + 1)
        #expect(literal.utf8.count > 1_048_576)
        let value = String(repeating: "abc \"q\" \\ \n é'", count: 1_048_576 / unit.unicodeScalars.count + 1)
        let clock = ContinuousClock()
        var condition: Condition?
        let parse = clock.measure { condition = try? Condition("name == \"\(literal)\"") }
        #expect(condition == .comparison(Comparison(.keyPath("name"), .equal, .constant(.string(value)))))
        if let condition {
            let roundTrip = clock.measure { #expect((try? Condition(condition.description)) == condition) }
            #expect(Self.seconds(parse) + Self.seconds(roundTrip) < 15 * Self.timeScale, "parse \(parse), round trip \(roundTrip)")
        }
        // Unterminated: the error points at the quote and the excerpt stays short.
        let error = #expect(throws: ConditionParseError.self) { try Condition("name == \"" + literal) }
        #expect(error?.message == "unterminated string")
        #expect(error.map { "\($0.line):\($0.column)" } == "1:9")
        #expect((error?.excerpt.unicodeScalars.count ?? .max) <= 2 + 120 + 3 + 120)
    }

    static func chain(_ count: Int, _ term: String = "age == 1") -> String {
        Array(repeating: term, count: count).joined(separator: " OR ")
    }

    @Test func thousandTermOrChainWorksInProcess() throws {
        let chain = try Condition(Self.chain(1_000))
        #expect(chain == (try Condition(Self.chain(1_000))))
        #expect(chain.hashValue == (try Condition(Self.chain(1_000))).hashValue)
        // AND/OR chains are flat: one node, one pair of parentheses, however long.
        #expect(chain.description == "(" + Self.chain(1_000) + ")")
        #expect(try Condition(chain.description) == chain)
    }

    /// A 50,000-term flat OR chain parses (the chain is a loop, not recursion), but the tree is 50,000 deep.
    /// Parsing and releasing it must work; so must using it. Each runs in a child process so a stack
    /// overflow fails one test instead of killing the run.
    @Test func fiftyThousandTermOrChainParses() async {
        await #expect(processExitsWith: .success) {
            let clock = ContinuousClock()
            let elapsed = clock.measure {
                guard (try? Condition(PredicateFuzzTests.chain(50_000))) != nil else { exit(2) }
            }
            if PredicateFuzzTests.seconds(elapsed) > 20 * PredicateFuzzTests.timeScale { exit(3) }
        }
    }

    @Test func fiftyThousandTermOrChainCanBeComparedAndHashed() async {
        await #expect(processExitsWith: .success) {
            let a = try? Condition(PredicateFuzzTests.chain(50_000))
            let b = try? Condition(PredicateFuzzTests.chain(50_000))
            guard a != nil, a == b, a.hashValue == b.hashValue else { exit(2) }
        }
    }

    @Test func fiftyThousandTermOrChainCanBeDescribed() async {
        await #expect(processExitsWith: .success) {
            guard let chain = try? Condition(PredicateFuzzTests.chain(50_000)) else { exit(2) }
            guard chain.description.hasSuffix("age == 1)") else { exit(3) }
        }
    }

    /// Fetching with it returns the right rows (exit 2: the fetch threw; exit 3: wrong rows; a signal: a crash).
    @Test func fiveThousandTermOrChainCanBeFetched() async {
        // The child ends with exit(), which runs no deinitializer: its store's folder is this process's.
        let directory = TemporaryDirectory()
        await #expect(processExitsWith: .success) { [folder = directory.url as URL] in
            exit(PredicateFuzzTests.fetchFiveThousandTermChain(in: folder))
        }
    }

    /// The work of the test above, in a function of its own so that the condition, the store and
    /// everything they hold are released before the child process calls `exit`.
    ///
    /// CI runs this suite under AddressSanitizer, whose LeakSanitizer checks at exit. When the body
    /// called `exit` with the condition still in scope, it reported the whole tree (4,999 nodes
    /// from `parsePrimary`, as many from `parseOperand`) as leaked: not a cycle, but a live value
    /// it cannot trace, because Swift stores the case of an indirect enum in the spare bits of the
    /// pointer to its box, and LeakSanitizer only follows untagged pointers (a `Condition` held by
    /// a global is reported the same way; `parsedConditionsAreFreed` in PredicateLifetimeTests
    /// shows every node is freed once the last reference goes). Nothing is left to report now.
    static func fetchFiveThousandTermChain(in folder: URL) -> Int32 {
        // 5,000 terms: five times SQLite's expression depth limit, which only a balanced tree
        // stays under. (50,000 works too, but SQLite takes minutes to prepare it.)
        guard let chain = try? Condition(PredicateFuzzTests.chain(5_000, "age == 45")),
              let store = try? TestStore(directory: TemporaryDirectory(existing: folder)) else { return 4 }
        defer { store.coordinator.close() }
        return store.context.performAndWait {
            do {
                for age in [20, 45] {
                    let employee = try store.context.insert("Employee")
                    try employee.setValue("e\(age)", forKey: "name")
                    try employee.setValue(age, forKey: "age")
                }
                try store.context.save()
                return try store.context.count(for: FetchRequest(entityName: "Employee", predicate: chain)) == 1 ? 0 : 3
            } catch {
                return 2
            }
        }
    }
}
