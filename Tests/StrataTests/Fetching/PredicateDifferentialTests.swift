import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Differential property tests: the SQL back end (`fetchObjectIDs`) and the in-memory back end
/// (`context.evaluate`) must select the same employees for every well-typed predicate, and every
/// predicate's canonical description must parse back to the same tree.
///
/// Reproduce a run with `STRATA_PREDICATE_SEED=<seed>`; change its size with
/// `STRATA_PREDICATE_CASES=<n>`. Data and generators: PredicateDifferential+Generators.swift.
@Suite struct PredicateDifferentialTests {
    static let maximumReported = 5
    /// Every this many cases the third back end, evaluation on committed rows
    /// (`StoreCoordinator.evaluate(_:onStoredObject:)`), is checked too (it queries per hop, so not always).
    static let storedRowStride = 40

    @Test func sqlAndMemoryAgreeOnRandomPredicates() throws {
        let seed = DifferentialSettings.seed
        let iterations = DifferentialSettings.cases(default: DifferentialSettings.iterations)
        let verbose = DifferentialSettings.verbose
        print("PredicateDifferential: seed \(seed) (STRATA_PREDICATE_SEED=\(seed) reproduces this run), \(iterations) cases")
        var casesRun = 0, disagreements = 0, roundTripFailures = 0, generatorFailures = 0
        var matchedNone = 0, matchedAll = 0
        defer { print("predicate-differential: cases=\(casesRun) disagreements=\(disagreements) seed=\(seed)") }

        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            var dataRNG = SplitMix64(seed: seed)
            let fixture = try DifferentialFixture.populate(context, rng: &dataRNG)
            try context.save()
            let employees = try context.fetch(FetchRequest(entityName: "Employee"))
            #expect(employees.count == fixture.employeeIDs.count)
            #expect(context.hasChanges == false)

            for index in 0..<iterations {
                var generator = PredicateGenerator(seed: seed, index: index, fixture: fixture)
                let fragment = generator.predicate()
                let where_ = "seed=\(seed) case=\(index)"
                casesRun += 1

                // The generated format must parse: a failure here is a generator bug.
                let condition: Condition
                do {
                    condition = try Condition(format: fragment.text, argumentArray: fragment.arguments)
                } catch {
                    generatorFailures += 1
                    if generatorFailures <= Self.maximumReported {
                        Issue.record("generator bug (\(where_)): format does not parse: \(visible(fragment.text)) arguments \(fragment.arguments)\n\(error)")
                    }
                    continue
                }

                // (a) Canonical round trip: same tree, and the same description scalar for scalar.
                do {
                    let reparsed = try Condition(condition.description)
                    if reparsed != condition || !reparsed.description.unicodeScalars.elementsEqual(condition.description.unicodeScalars) {
                        roundTripFailures += 1
                        if roundTripFailures <= Self.maximumReported {
                            Issue.record("canonical round trip changed the predicate (\(where_)): \(visible(condition.description)) → \(visible(reparsed.description))")
                        }
                    }
                } catch {
                    roundTripFailures += 1
                    if roundTripFailures <= Self.maximumReported {
                        Issue.record("canonical description does not parse back (\(where_)): \(visible(condition.description))\n\(error)")
                    }
                }

                // (b) SQL and (c) memory.
                func memory(_ condition: Condition) throws -> Set<ObjectID> {
                    Set(try employees.filter { try context.evaluate(condition, on: $0) }.map(\.objectID))
                }
                let sql: SQLAnswer, memoryIDs: Set<ObjectID>
                do {
                    sql = try Self.sqlFetch(condition, context)
                    memoryIDs = try memory(condition)
                } catch let error where error is ConditionError || error is ObjectError {
                    generatorFailures += 1
                    if generatorFailures <= Self.maximumReported {
                        Issue.record("generator bug (\(where_)): ill-typed predicate \(visible(condition.description)): \(error)")
                    }
                    continue
                } catch {
                    disagreements += 1
                    Issue.record("a back end failed (\(where_)) on \(visible(condition.description)): \(error)")
                    if disagreements >= Self.maximumReported { break }
                    continue
                }
                if verbose { print("case \(index): sql=\(sql) memory=\(memoryIDs.count) \(visible(condition.description))") }
                guard case .ids(let sqlIDs) = sql, sqlIDs == memoryIDs else {
                    disagreements += 1
                    let minimal = try shrink(condition) { try Self.sqlFetch($0, context) != .ids(try memory($0)) }
                    var report = try disagreementReport(where_, condition, sql: sql, memory: memoryIDs, context: context)
                    if fragment.text.unicodeScalars.count < 600 {
                        report += "\n  format: \(visible(fragment.text)) arguments: \(fragment.arguments.map { visible(String(describing: $0 ?? "nil")) })"
                    }
                    if minimal != condition {
                        report += "\n  smallest disagreeing sub-predicate:\n"
                            + (try disagreementReport(where_, minimal, sql: Self.sqlFetch(minimal, context), memory: memory(minimal), context: context))
                    }
                    Issue.record(Comment(rawValue: report))
                    if disagreements >= Self.maximumReported { break }
                    continue
                }
                if sqlIDs.isEmpty { matchedNone += 1 }
                if sqlIDs.count == employees.count { matchedAll += 1 }
                if index % Self.storedRowStride == 0 {
                    let rowIDs = Set(try fixture.employeeIDs.filter { try store.coordinator.evaluate(condition, onStoredObject: $0) == true })
                    if rowIDs != sqlIDs {
                        disagreements += 1
                        Issue.record(Comment(rawValue: try disagreementReport(where_, condition, sql: sql, memory: rowIDs, context: context,
                                                                              memoryLabel: "stored-row evaluation")))
                        if disagreements >= Self.maximumReported { break }
                    }
                }
            }
        }
        print("PredicateDifferential: \(casesRun) cases, \(matchedNone) matched no employee, \(matchedAll) matched all, "
              + "\(roundTripFailures) round-trip failures, \(generatorFailures) generator failures")
        #expect(generatorFailures == 0, "the generator produced predicates the parser or binder rejects (seed \(seed))")
        #expect(roundTripFailures == 0, "\(roundTripFailures) predicates did not survive Condition(c.description) == c (seed \(seed))")
        #expect(disagreements == 0, "SQL and in-memory evaluation disagreed (seed \(seed))")
    }

    /// With unsaved changes a fetch merges them in memory: its result must equal the in-memory
    /// filter over every current employee (stored and not deleted, plus inserted), and — once the
    /// changes are saved — the SQL answer for the same predicate.
    @Test func fetchWithPendingChangesMatchesInMemoryFilter() throws {
        let seed = DifferentialSettings.seed
        let perPhase = max(1, DifferentialSettings.cases(default: 500 * 20) / 20 / 2)
        var disagreements = 0, generatorFailures = 0, casesRun = 0
        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            var rng = SplitMix64(seed: seed ^ 0xA11C_E5ED)
            let fixture = try DifferentialFixture.populate(context, rng: &rng, employees: 30)
            try context.save()
            let stored = try context.fetch(FetchRequest(entityName: "Employee"))     // registers every employee
            func object(_ id: ObjectID) throws -> ManagedObject { try context.existingObject(with: id) }

            /// Runs a phase's predicates; returns each with what the fetch answered.
            @discardableResult
            func runPhase(_ phase: String, streamOffset: Int) throws -> [(Condition, Set<ObjectID>, String)] {
                var answers: [(Condition, Set<ObjectID>, String)] = []
                let current = context.registeredObjects.filter { $0.entityName == "Employee" && !$0.isDeleted }
                    .sorted { $0.objectID < $1.objectID }
                for index in 0..<perPhase where disagreements < Self.maximumReported {
                    casesRun += 1
                    var generator = PredicateGenerator(seed: seed, index: streamOffset + index, fixture: fixture)
                    let fragment = generator.predicate()
                    let where_ = "seed=\(seed) phase=\(phase) case=\(streamOffset + index)"
                    do {
                        let condition = try Condition(format: fragment.text, argumentArray: fragment.arguments)
                        let fetched = try Self.sqlFetch(condition, context)
                        let expected = Set(try current.filter { try context.evaluate(condition, on: $0) }.map(\.objectID))
                        if case .ids(let ids) = fetched { answers.append((condition, ids, where_)) }
                        if fetched != .ids(expected) {
                            disagreements += 1
                            Issue.record(Comment(rawValue: try disagreementReport(where_, condition, sql: fetched, memory: expected, context: context,
                                                                                  sqlLabel: "fetch with pending changes", memoryLabel: "in-memory filter")))
                        }
                    } catch let error where error is ConditionError || error is ObjectError || error is ConditionParseError {
                        generatorFailures += 1
                        if generatorFailures <= Self.maximumReported { Issue.record("generator bug (\(where_)): \(visible(fragment.text)): \(error)") }
                    }
                }
                return answers
            }

            // Phase 1: only related objects change (Department, Company, Project, Badge). Predicates
            // reading just Employee columns still go to SQL; the others must merge.
            let departments = try fixture.departmentIDs.map(object)
            let projects = try fixture.projectIDs.map(object)
            try departments[1].setValue("e\u{301}COLE", forKey: "name")
            try departments[4].setValue(rng.pick(TrickyStrings.pool), forKey: "name")
            try departments[2].setValue(nil, forKey: "company")
            try departments[3].setValue(try object(fixture.companyIDs[2]), forKey: "company")
            try projects[0].setValue("Straße", forKey: "title")
            try projects[5].setValue("", forKey: "title")
            for id in fixture.badgeIDs.prefix(2) { try object(id).setValue(rng.pick(TrickyStrings.pool), forKey: "code") }
            let newDepartment = try context.insert("Department")
            try newDepartment.setValue("ǅ", forKey: "name")
            try newDepartment.setValue(try object(fixture.companyIDs[0]), forKey: "company")
            try context.insert("Project").setValue("日本", forKey: "title")
            #expect(context.hasChanges)
            try runPhase("related", streamOffset: 1_000_000)

            // Phase 2: employees change too; two are inserted and two deleted.
            let changed = rng.sample(stored, 8)
            for (n, employee) in changed.enumerated() {
                switch n % 4 {
                case 0: try employee.setValue(rng.pick(TrickyStrings.pool.filter { !$0.isEmpty }), forKey: "name")
                case 1: try employee.setValue(rng.pick([nil, 0.25, -0.0, 1e15 - 0.5, 170.0]), forKey: "height")
                case 2: try employee.setValue(rng.chance(0.5) ? nil : newDepartment, forKey: "department")
                default:
                    try employee.setValue(rng.pick(departments), forKey: "department")
                    try employee.setValue(nil, forKey: "email")
                    try employee.setValue(Int16(rng.pick([16, 99, 42])), forKey: "age")
                }
            }
            try projects[1].setValue(rng.sample(stored, 4), forKey: "members")      // from the project side
            try stored[0].setValue(rng.sample(projects, 3), forKey: "projects")
            if let badgeID = fixture.badgeIDs.last {
                try object(badgeID).setValue(stored[1], forKey: "owner")             // steals a badge
            }
            for (name, department) in [("e\u{301}cole", newDepartment), ("Zoë", departments[0])] {
                let employee = try context.insert("Employee")
                try employee.setValue(name, forKey: "name")
                try employee.setValue(department, forKey: "department")
                try employee.setValue(rng.sample(projects, 2), forKey: "projects")
                try employee.setValue(Double(rng.int(-40...800)) * 0.25, forKey: "height")
                let badge = try context.insert("Badge")
                try badge.setValue("B-new-\(name)", forKey: "code")
                try employee.setValue(badge, forKey: "badge")
            }
            let survivors = stored.filter { !changed.contains($0) && $0 !== stored[0] && $0 !== stored[1] }
            for employee in rng.sample(survivors, 2) { try context.delete(employee) }
            let answers = try runPhase("employees", streamOffset: 2_000_000)

            // Saved, the same predicates go to SQL and must select what the merged fetch did.
            try context.save()
            #expect(context.hasChanges == false)
            for (condition, before, where_) in answers where disagreements < Self.maximumReported {
                let after = try Self.sqlFetch(condition, context)
                if after != .ids(before) {
                    disagreements += 1
                    Issue.record(Comment(rawValue: try disagreementReport(where_, condition, sql: after, memory: before, context: context,
                                                                          sqlLabel: "SQL after save", memoryLabel: "fetch with pending changes before save")))
                }
            }
        }
        print("PredicateDifferential pending changes: \(casesRun) cases, \(disagreements) disagreements, seed \(seed)")
        #expect(generatorFailures == 0, "the generator produced predicates the parser or binder rejects (seed \(seed))")
        #expect(disagreements == 0, "fetch with pending changes and the in-memory filter disagreed (seed \(seed))")
    }

    /// Ill-typed predicates are rejected by the binder, the same way for a fetch and for `evaluate`.
    @Test func illTypedPredicatesAreRejectedByBothBackEnds() throws {
        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            let department = try context.insert("Department")
            try department.setValue("Sales", forKey: "name")
            let employee = try context.insert("Employee")
            try employee.setValue("Ann", forKey: "name")
            try context.save()
            let conditionErrors: [Condition] = [
                try Condition("name > 5"),
                try Condition("age CONTAINS 'a'"),
                try Condition("age == 'x'"),
                try Condition("age ==[c] 5"),
                try Condition("department < %@", department.objectID),
                try Condition("SELF == %@", department.objectID),
                try Condition("department == %@", employee.objectID),
                try Condition("projects.title == 'x'"),
                try Condition("ANY name == 'x'"),
                try Condition("ANY projects.title == name"),
                try Condition("name MATCHES '['"),
                try Condition("name MATCHES nil"),
                try Condition("name == {'a', 'b'}"),
                try Condition("name IN 'a'"),
                try Condition("projects.@sum.title > 1"),
                try Condition("projects.@count.title > 1"),
                try Condition("department.name.first == 'S'"),
                try Condition("name IN {'a', 1}"),
                try Condition("age BETWEEN {1, 'b'}"),
            ]
            for condition in conditionErrors {
                #expect(throws: ConditionError.self, "\(condition)") {
                    try context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: condition))
                }
                #expect(throws: ConditionError.self, "\(condition)") { try context.evaluate(condition, on: employee) }
            }
            for condition in [try Condition("salary == 1"), try Condition("department.budget > 1"), try Condition("ANY projects.budget > 1")] {
                #expect(throws: ObjectError.self, "\(condition)") {
                    try context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: condition))
                }
                #expect(throws: ObjectError.self, "\(condition)") { try context.evaluate(condition, on: employee) }
            }
        }
    }

    // MARK: Fetching

    /// What `fetchObjectIDs` answers, or — when the SQL back end built a statement whose `?`
    /// placeholders don't match its arguments, which StrataSQLite's `Statement.bind` stops on with a
    /// precondition failure — that problem, reported instead of trapping the whole test process.
    enum SQLAnswer: Equatable, CustomStringConvertible {
        case ids(Set<ObjectID>)
        case malformedStatement(placeholders: Int, arguments: Int, sql: String)

        var description: String {
            switch self {
            case .ids(let ids): "\(ids.count)"
            case let .malformedStatement(placeholders, arguments, sql):
                "no answer: the SQL back end builds `\(sql.count > 600 ? sql.prefix(600) + "…" : sql)` with parameters up to ?\(placeholders) (not all referenced, or more than) \(arguments) arguments (Statement.bind traps)"
            }
        }
    }

    static func sqlFetch(_ condition: Condition, _ context: ManagedObjectContext) throws -> SQLAnswer {
        let request = FetchRequest(entityName: "Employee", predicate: condition)
        let plan = try FetchPlan(request, schema: context.coordinator.model.schema)
        let sql = plan.whereSQL + plan.orderSQL       // every `?` is a parameter: values are never inlined
        // Parameters are numbered (`?N`, possibly repeated) or bare (`?`, numbered one past the
        // highest so far, as SQLite does): the statement takes as many arguments as its highest
        // number, and every argument must be referenced.
        let scalars = Array(sql.unicodeScalars)
        var numbers = Set<Int>(), placeholders = 0, index = 0
        while index < scalars.count {
            guard scalars[index] == "?" else { index += 1; continue }
            var digits = ""
            index += 1
            while index < scalars.count, ("0"..."9").contains(scalars[index]) { digits.unicodeScalars.append(scalars[index]); index += 1 }
            let number = Int(digits) ?? placeholders + 1
            numbers.insert(number)
            placeholders = max(placeholders, number)
        }
        if placeholders != plan.arguments.count || numbers.count != plan.arguments.count {
            return .malformedStatement(placeholders: placeholders, arguments: plan.arguments.count, sql: sql)
        }
        return .ids(Set(try context.fetchObjectIDs(request)))
    }

    // MARK: Reporting

    /// The smallest sub-predicate on which `disagrees` still holds: follows AND/OR/NOT operands,
    /// then drops items from a comparison's list while the disagreement stays (at most `budget` tries).
    func shrink(_ condition: Condition, budget: Int = 300, _ disagrees: (Condition) throws -> Bool) throws -> Condition {
        var remaining = budget
        return try shrinking(condition) { candidate in
            guard remaining > 0 else { return false }
            remaining -= 1
            do {
                return try disagrees(candidate)
            } catch let error where error is ConditionError || error is ObjectError {
                return false                                   // a shrunk candidate the binder rejects
            }
        }
    }

    private func shrinking(_ condition: Condition, _ disagrees: (Condition) throws -> Bool) throws -> Condition {
        let children: [Condition] = switch condition {
        case .not(let inner): [inner]
        case .and(let terms), .or(let terms): terms
        case .constant, .comparison: []
        }
        for child in children where try disagrees(child) { return try shrinking(child, disagrees) }
        guard case .comparison(var comparison) = condition, comparison.op != .between,
              case .list(var items) = comparison.rhs, items.count > 1 else {
            return condition
        }
        var chunk = max(1, items.count / 2)
        while true {
            var start = 0, removed = false
            while start < items.count, items.count > 1 {
                var candidate = items
                candidate.removeSubrange(start..<min(start + chunk, items.count))
                comparison.rhs = .list(candidate)
                if try disagrees(.comparison(comparison)) { items = candidate; removed = true } else { start += chunk }
            }
            if chunk == 1 && !removed { break }
            chunk = max(1, chunk / 2)
        }
        comparison.rhs = .list(items)
        return .comparison(comparison)
    }

    /// A predicate's description for a report, long lists elided.
    func abbreviated(_ condition: Condition) -> String {
        let text = condition.description
        let scalars = text.unicodeScalars
        guard scalars.count > 600 else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(500))) + "… (\(scalars.count - 500) more characters)"
    }

    /// A disagreement: the predicate, the IDs only one side selected and one such row's values.
    func disagreementReport(_ where_: String, _ condition: Condition, sql answer: SQLAnswer, memory: Set<ObjectID>,
                            context: ManagedObjectContext, sqlLabel: String = "SQL", memoryLabel: String = "memory") throws -> String {
        guard case .ids(let sql) = answer else {
            return """
                \(sqlLabel) fails (\(where_))
                  predicate: \(abbreviated(condition))
                  \(sqlLabel): \(answer)
                  \(memoryLabel): \(memory.count) employees \(memory.sorted().prefix(8).map(\.description))\(memory.count > 8 ? "…" : "")
                """
        }
        let onlySQL = sql.subtracting(memory).sorted(), onlyMemory = memory.subtracting(sql).sorted()
        var report = """
            \(sqlLabel) and \(memoryLabel) disagree (\(where_))
              predicate: \(abbreviated(condition))
              only in \(sqlLabel): \(onlySQL.map(\.description))
              only in \(memoryLabel): \(onlyMemory.map(\.description))
            """
        if visible(condition.description) != condition.description {
            report += "\n  escaped:   " + visible(abbreviated(condition))
        }
        if let id = onlySQL.first ?? onlyMemory.first {
            report += "\n  row \(id): " + (try describeEmployee(id, context))
        }
        return report
    }

    func describeEmployee(_ id: ObjectID, _ context: ManagedObjectContext) throws -> String {
        let employee = try context.object(with: id)
        func text(_ object: ManagedObject?, _ key: String) throws -> String {
            guard let object else { return "(no object)" }
            return try object.value(forKey: key).map { $0 is String ? "\"\(visible("\($0)"))\"" : "\($0)" } ?? "nil"
        }
        let department = try employee.value(forKey: "department") as? ManagedObject
        let company = try department?.value(forKey: "company") as? ManagedObject
        let badge = try employee.value(forKey: "badge") as? ManagedObject
        let projects = (try employee.value(forKey: "projects") as? Set<ManagedObject> ?? []).sorted { $0.objectID < $1.objectID }
        return "name=\(try text(employee, "name")) email=\(try text(employee, "email")) age=\(try text(employee, "age")) "
            + "height=\(try text(employee, "height")) department=\(try text(department, "name")) company=\(try text(company, "name")) "
            + "badge=\(try text(badge, "code")) projects=[\(try projects.map { try text($0, "title") }.joined(separator: ", "))]"
    }
}

/// `text` with every scalar outside printable ASCII written `\u{…}`, so decomposed accents show.
func visible(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value >= 0x20 && scalar.value < 0x7F { out.unicodeScalars.append(scalar) }
        else { out += "\\u{\(String(scalar.value, radix: 16))}" }
    }
    return out
}
