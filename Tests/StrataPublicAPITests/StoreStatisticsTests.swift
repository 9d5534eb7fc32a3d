import Foundation
import Strata
import StrataTestSupport
import Testing

/// `StoreCoordinator.statistics` as a package that imports only Strata sees it: statements by
/// kind and by entity, and the rows they returned.
@Suite struct StoreStatisticsTests {
    /// One category with three goods, saved; counted from the save on.
    @Test func aSaveAndAFetchCountedByKindAndEntity() throws {
        let coordinator = try StoreCoordinator(inMemoryWith: TestModels.goods())
        let context = coordinator.newContext()
        try context.performAndWait {
            let fruit = try context.insert("Category")
            try fruit.setValue("Fruit", forKey: "name")
            for name in ["Apple", "Banana", "Cherry"] {
                let good = try context.insert("Good")
                try good.setValue(name, forKey: "name")
                try good.setValue(fruit, forKey: "category")
            }
            coordinator.resetStatistics()        // the inserts' key reservations aside
            #expect(coordinator.statistics == StoreStatistics())
            try context.save()
        }
        var statistics: StoreStatistics = coordinator.statistics
        #expect(statistics.executions(of: .insert, entity: "Good") == 3)
        #expect(statistics.executions(of: .insert, entity: "Category") == 1)
        // The rows, and the history: the transaction and one record per run of an entity's new rows.
        #expect(statistics.executions(of: .insert) == 4 + 3)
        #expect(statistics.executions(startingWith: "INSERT INTO strata_history_change") == 2)
        #expect(statistics.executions(of: .transaction) == 2)                 // BEGIN IMMEDIATE, COMMIT
        #expect(statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
        #expect(statistics.executions(of: .update, entity: "Good") == 0)      // strata_meta and strata_entity only
        #expect(statistics.executions(of: .select) == 0)
        #expect(statistics.executions(of: .other) == 0)
        #expect(statistics.executions() == statistics.totalExecuted)
        #expect(statistics.rowsRead(of: .update) == 1)                        // the generation bump's RETURNING
        #expect(statistics.statements.allSatisfy { $0.prepared <= $0.executed })

        coordinator.resetStatistics()
        let reader = coordinator.newContext()
        let counts = try reader.performAndWait {
            let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
            let goods = try reader.fetch(request)
            let category = try #require(try goods[0].value(forKey: "category") as? ManagedObject)
            let members = try #require(try category.value(forKey: "goods") as? Set<ManagedObject>)
            return (goods.count, members.count)
        }
        #expect(counts == (3, 3))
        statistics = coordinator.statistics
        // The fetch names both tables (a join for the sort key); the category's row and its goods' keys follow.
        let fetch = try #require(statistics.statements.first { $0.kind == .select && $0.entities == ["Good", "Category"] })
        #expect(fetch.executed == 1 && fetch.rowsRead == 3)
        #expect(statistics.executions(of: .select, entity: "Category") == 2)   // the fetch, the category's row
        #expect(statistics.executions(of: .select, entity: "Good") == 2)       // the fetch, the category's goods
        #expect(statistics.rowsRead(of: .select, entity: "Good") == 6)
        #expect(statistics.rowsRead(entity: "Category") == 4)
        #expect(statistics.totalRowsRead == statistics.rowsRead())
        #expect(statistics.executions(of: .insert) + statistics.executions(of: .update) + statistics.executions(of: .delete) == 0)
    }

    /// A many-to-many's join table counts for both of its entities; Strata's own tables for none.
    @Test func joinTablesCountForBothEntities() throws {
        let coordinator = try StoreCoordinator(inMemoryWith: TestModels.company())
        let context = coordinator.newContext()
        try context.performAndWait {
            let ann = try context.insert("Employee")
            try ann.setValue("Ann", forKey: "name")
            let apollo = try context.insert("Project")
            try apollo.setValue("Apollo", forKey: "title")
            try apollo.setValue(Set([ann]), forKey: "members")
            coordinator.resetStatistics()
            try context.save()
        }
        let statistics = coordinator.statistics
        #expect(statistics.executions(of: .insert, entity: "Project") == 2)    // its row and the link
        #expect(statistics.executions(of: .insert, entity: "Employee") == 2)
        // The rows and the link; the history's transaction, its two inserts and the link.
        #expect(statistics.executions(of: .insert) == 3 + 4)
        let meta = try #require(statistics.statements.first { $0.sql.contains("strata_meta") })
        #expect(meta.kind == .update && meta.entities.isEmpty)
        #expect(StoreStatistics.StatementKind.allCases.reduce(0) { $0 + statistics.executions(of: $1) } == statistics.totalExecuted)
    }
}
