import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Foundation predicates with no Strata equivalent throw ``PredicateTranslationError`` naming the
/// part that doesn't translate, before any SQL runs.
@Suite struct TypedPredicateErrorTests {
    struct Case {
        var predicate: Predicate<Corp.Employee>
        /// Text the error's expression must contain (the offending expression's type).
        var expression: String
        /// Text the error's reason must contain.
        var reason: String
        var line: Int
    }

    static func cases() -> [Case] {
        var cases: [Case] = []
        func add(_ predicate: Predicate<Corp.Employee>, _ expression: String, _ reason: String, line: Int = #line) {
            cases.append(Case(predicate: predicate, expression: expression, reason: reason, line: line))
        }
        let big = Int16.max, zero = 0, notANumber = Double("nan")!
        let other = ObjectID(entityName: "Employee", primaryKey: 1)

        add(#Predicate<Corp.Employee> { $0.shout == "ANN" }, "KeyPath", "is not a persistent property of Employee")
        add(#Predicate<Corp.Employee> { ($0.age ?? 0) + 1 > 30 }, "Arithmetic", "arithmetic on a value read from the object")
        add(#Predicate<Corp.Employee> { ($0.height ?? 0) * 2 > 30 }, "Arithmetic", "arithmetic on a value read from the object")
        add(#Predicate<Corp.Employee> { -($0.height ?? 0) > 30 }, "UnaryMinus", "arithmetic on a value read from the object")
        add(#Predicate<Corp.Employee> { $0.projects.count / 2 > 1 }, "IntDivision", "arithmetic on a value read from the object")
        add(#Predicate<Corp.Employee> { $0.name.count > 3 }, "KeyPath", "no string length")
        add(#Predicate<Corp.Employee> { ($0.age ?? 0) > big + 1 }, "Arithmetic", "overflows")
        add(#Predicate<Corp.Employee> { $0.projects.count > 10 / zero }, "IntDivision", "divides by zero")
        add(#Predicate<Corp.Employee> { ($0.height ?? 0) > notANumber }, "Comparison", "NaN")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.members.contains { m in m.name == "Ann" } } }, "SequenceContainsWhere", "one to-many step")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == "Apollo" && p.members.count > 1 } }, "SequenceContainsWhere", "no SUBQUERY")
        add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title == "Apollo" || p.members.count > 1 } }, "SequenceAllSatisfy", "no SUBQUERY")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == e.name } }, "SequenceContainsWhere", "value of the outer object")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title.contains(e.name) } }, "SequenceContainsWhere", "value of the outer object")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in "Apollo 11".contains(p.title) } }, "SequenceContainsWhere", "on the left of CONTAINS")
        add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == p.title } }, "SequenceContainsWhere", "two values of the element")
        add(#Predicate<Corp.Employee> { $0.projects.first?.title == "Apollo" }, "KeyPath", "only .count and .isEmpty")
        add(#Predicate<Corp.Employee> { $0.projects.contains { _ in true } && $0.name.contains(/A.+/) }, "StringContainsRegex", "Strata has no equivalent")
        add(#Predicate<Corp.Employee> { $0.email! == $0.shout }, "KeyPath", "is not a persistent property")
        add(#Predicate<Corp.Employee> { $0.name.starts(with: $0.shout) }, "KeyPath", "is not a persistent property")
        add(#Predicate<Corp.Employee> { ($0.age! + 1) == 30 || $0.objectID == other }, "Arithmetic", "arithmetic")
        add(#Predicate<Corp.Employee> { $0.department?.employees.first?.name == "Ann" }, "KeyPath", "only .count and .isEmpty")
        let names = ["Ann"]
        add(#Predicate<Corp.Employee> { $0.name == names[3] }, "CollectionIndexSubscript", "evaluating its constant value failed")
        return cases
    }

    @Test func untranslatablePredicatesThrowNamingTheExpressionBeforeAnySQL() throws {
        let store = try TestStore(model: CorpModel.model)
        let context = store.context
        try context.performAndWait {
            let employee = try context.insert(Corp.Employee.self)
            employee.name = "Ann"
            try context.save()
            let executed = store.coordinator.statistics.totalExecuted
            for c in Self.cases() {
                let location = SourceLocation(fileID: #fileID, filePath: #filePath, line: c.line, column: 1)
                do {
                    _ = try context.fetch(try FetchRequest(Corp.Employee.self, predicate: c.predicate))
                    Issue.record("line \(c.line): translated", sourceLocation: location)
                } catch let error as PredicateTranslationError {
                    guard case let .unsupported(expression, reason) = error else { continue }
                    #expect(expression.contains(c.expression), "line \(c.line): \(error)", sourceLocation: location)
                    #expect(reason.contains(c.reason), "line \(c.line): \(error)", sourceLocation: location)
                    #expect("\(error)".hasPrefix("cannot translate `"), sourceLocation: location)
                } catch {
                    Issue.record("line \(c.line): \(type(of: error)) \(error)", sourceLocation: location)
                }
            }
            #expect(store.coordinator.statistics.totalExecuted == executed, "a statement ran before translation failed")
        }
    }

    @Test func errorDescriptionNamesExpressionAndReason() throws {
        let error = #expect(throws: PredicateTranslationError.self) {
            try Condition(#Predicate<Corp.Employee> { ($0.age ?? 0) + 1 > 30 })
        }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.hasPrefix("cannot translate `Arithmetic(lhs: NilCoalesce(lhs: KeyPath(root: Variable("))
        #expect(text.hasSuffix("for Strata: " + "arithmetic on a value read from the object: Strata conditions compare values, they don't compute them (move the arithmetic to the constant side)"))
    }

    /// Translation checks shapes; the model's types are checked where every condition's are,
    /// when the fetch is planned (still before SQL).
    @Test func typeMismatchesAreConditionErrorsAtPlanning() throws {
        let store = try TestStore(model: CorpModel.model)
        try store.context.performAndWait {
            let someDepartment = ObjectID(entityName: "Department", primaryKey: 1)
            let request = try FetchRequest(Corp.Employee.self, predicate: #Predicate { $0.objectID == someDepartment })
            #expect(request.condition == (try Condition("SELF == %@", someDepartment)))
            let executed = store.coordinator.statistics.totalExecuted
            #expect(throws: ConditionError.self) { try store.context.fetch(request) }
            #expect(store.coordinator.statistics.totalExecuted == executed)
        }
    }
}
