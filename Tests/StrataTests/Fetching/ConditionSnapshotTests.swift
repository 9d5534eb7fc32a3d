import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The in-memory back end on committed rows (no managed objects) agrees with SQL.
@Suite struct ConditionSnapshotTests {
    @Test func storedRowsEvaluateLikeTheSQLFetch() throws {
        let store = try TestStore()
        let ids: [ObjectID] = try store.context.performAndWait {
            let sales = try store.context.insert("Department")
            try sales.setValue("Ventes École", forKey: "name")
            let apollo = try store.context.insert("Project")
            try apollo.setValue("Apollo", forKey: "title")
            var ids: [ObjectID] = []
            for (index, name) in ["Ann", "bob", "Émile", "zoë"].enumerated() {
                let employee = try store.context.insert("Employee")
                try employee.setValue(name, forKey: "name")
                try employee.setValue(20 + index * 10, forKey: "age")
                if index % 2 == 0 { try employee.setValue(sales, forKey: "department") }
                if index < 3 { try employee.setValue([apollo], forKey: "projects") }
                ids.append(employee.objectID)
            }
            try store.context.save()
            store.context.reset()
            return ids
        }
        let predicates = [
            "department.name CONTAINS[cd] 'ecole'", "ANY projects.title == 'Apollo'", "projects.@count == 0",
            "NOT (age > 30)", "name BEGINSWITH[c] 'é' OR age BETWEEN {25, 35}", "department == nil",
            "department.employees.@avg.age > 25", "SELF IN %@",
        ]
        for format in predicates {
            let condition = try Condition(format: format, argumentArray: format.contains("%@") ? [Array(ids.prefix(2))] : [])
            let fetched = try store.context.performAndWait {
                Set(try store.context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: condition)))
            }
            let evaluated = Set(try ids.filter { try store.coordinator.evaluate(condition, onStoredObject: $0) == true })
            #expect(fetched == evaluated, "\(format)")
        }
        let school = try Condition("department.name CONTAINS[cd] 'ecole'")
        #expect(try ids.filter { try store.coordinator.evaluate(school, onStoredObject: $0) == true } == [ids[0], ids[2]])
        #expect(try store.coordinator.evaluate(.truePredicate, onStoredObject: ObjectID(entityName: "Employee", primaryKey: 999_999)) == nil)
    }
}

/// Regression: the regex cache keyed patterns by `String`, so a decomposed pattern compiled first
/// was served for the precomposed one (canonically equal, different bytes) and matched nothing.
@Suite struct RegexCacheTests {
    @Test func canonicallyEqualPatternsAreCompiledSeparately() {
        #expect(RegexCache.matches("e\u{301}.*", options: [.caseInsensitive], "e\u{301}cole"))
        #expect(RegexCache.matches("\u{E9}.*", options: [.caseInsensitive], "\u{E9}cole"))
        #expect(!RegexCache.matches("e\u{301}.*", options: [.caseInsensitive], "\u{E9}cole"))
    }
}
