import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@testable import Strata

/// A request that reads every root row and sorts first through a to-one (a results controller
/// sectioned by `group.name`, the benchmark's `airline.name`) scans the table once: SQLite's
/// planner would otherwise walk the to-one's index and read each page once per group.
@Suite struct ScanHintTests {
    static let model = try! Model(version: "scan-1", entities: [
        Entity("Group", attributes: [Attribute("name", .string)],
               relationships: [Relationship("rows", .toMany, to: "Row", inverse: "group")]),
        Entity("Row", attributes: [Attribute("rank", .int64, isIndexed: true), Attribute("pad", .string)],
               relationships: [Relationship("group", .toOne, to: "Group", inverse: "rows")]),
    ])

    static let groups = 16, rows = 3_000

    /// Rows spread round-robin over the groups (each page holds rows of every group, as the
    /// flights do airlines), some without a group; ranks repeat so the key breaks ties.
    func seeded() throws -> TestStore {
        let store = try TestStore(model: Self.model)
        try store.context.performAndWait {
            let groups = try (0..<Self.groups).map { index -> ManagedObject in
                let group = try store.context.insert("Group")
                try group.setValue("group \((index * 7) % Self.groups)", forKey: "name")
                return group
            }
            for index in 0..<Self.rows {
                let row = try store.context.insert("Row")
                try row.setValue(Int64(index % 97), forKey: "rank")
                try row.setValue(String(repeating: "x", count: 150 + index % 50), forKey: "pad")
                if index % 31 != 0 { try row.setValue(groups[index % Self.groups], forKey: "group") }
            }
            try store.context.save()
        }
        return store
    }

    func plan(_ predicate: String? = nil, sort: [SortKey]) throws -> FetchPlan {
        try FetchPlan(FetchRequest(entityName: "Row", predicate: try predicate.map { try Condition($0) }, sortKeys: sort),
                      schema: Self.model.schema)
    }

    func queryPlan(_ sql: String, _ store: TestStore) throws -> [String] {
        try store.coordinator.withConnection { db in
            let statement = try db.prepare("EXPLAIN QUERY PLAN " + sql)
            var details: [String] = []
            try statement.forEachRow { details.append($0.string(at: 3)) }
            return details
        }
    }

    /// The keys `sql` returns in order, and the pages read from the file to return them, with a
    /// page cache of 10 pages emptied first.
    func keysAndPageReads(_ sql: String, _ store: TestStore) throws -> (keys: [Int64], pageReads: Int) {
        try store.coordinator.withConnection { db in
            try db.execute("PRAGMA cache_size=10")
            try db.execute("PRAGMA shrink_memory")
            _ = db.pageReads(reset: true)
            let statement = try db.prepare(sql)
            var keys: [Int64] = []
            try statement.forEachRow { keys.append($0.int64(at: 0)) }
            return (keys, db.pageReads())
        }
    }

    @Test func onlyAWholeTableSortedFirstThroughAToOneGetsTheHint() throws {
        #expect(try plan(sort: [.ascending("group.name"), .ascending("rank")]).scanHint == " NOT INDEXED")
        #expect(try plan(sort: [.descending("group.name")]).scanHint == " NOT INDEXED")
        // A condition may want an index; a first key on the root may be an index's order.
        #expect(try plan("rank > 5", sort: [.ascending("group.name")]).scanHint == "")
        #expect(try plan(sort: [.ascending("rank"), .ascending("group.name")]).scanHint == "")
        #expect(try plan(sort: [.ascending("rank")]).scanHint == "")
        #expect(try plan(sort: []).scanHint == "")
    }

    @Test func theHintedQueryReadsEachPageOnceAndReturnsTheSameRows() throws {
        let store = try seeded()
        let plan = try plan(sort: [.ascending("group.name"), .descending("rank")])
        let hinted = plan.keyAndSortValuesSQL(withVersion: true)
        #expect(hinted.contains("AS t0 NOT INDEXED LEFT JOIN"))
        let unhinted = hinted.replacingOccurrences(of: " NOT INDEXED", with: "")

        let details = try queryPlan(hinted, store)
        #expect(details.contains { $0.hasPrefix("SCAN t0") && !$0.contains("INDEX") }, "\(details)")
        #expect(try queryPlan(unhinted, store).contains { $0.contains("t0 USING INDEX") }, "the planner's own choice changed")

        let pageCount = try store.coordinator.withConnection { db in guard case .integer(let count) = try db.pragma("page_count") else { return Int64(0) }
            return count }
        let withHint = try keysAndPageReads(hinted, store), without = try keysAndPageReads(unhinted, store)
        #expect(withHint.keys == without.keys)
        #expect(withHint.keys.count == Self.rows)
        // Each page of the file at most once (the table's pages, the group table's, the schema);
        // the index walk reads the table's pages about once per group.
        #expect(withHint.pageReads <= Int(pageCount), "hinted: \(withHint.pageReads) page reads, file \(pageCount) pages")
        #expect(without.pageReads > 4 * withHint.pageReads, "unhinted \(without.pageReads), hinted \(withHint.pageReads)")
        print("scan-hint: rows=\(Self.rows) file-pages=\(pageCount) page-reads hinted=\(withHint.pageReads) index-walk=\(without.pageReads)")

        // The fetch and the controller run the hinted statement and agree with memory's order.
        let request = FetchRequest(entityName: "Row", sortKeys: [.ascending("group.name"), .descending("rank")])
        let fetched = try store.context.performAndWait { try store.context.fetch(request).map(\.objectID.primaryKey) }
        #expect(fetched == withHint.keys)
        let expected = try store.context.performAndWait {
            try store.context.fetch(FetchRequest(entityName: "Row")).map { row -> (String?, Int64, Int64) in
                let group = try row.value(forKey: "group") as? ManagedObject
                return (try group?.value(forKey: "name") as? String, try row.value(forKey: "rank") as! Int64, row.objectID.primaryKey)
            }
            .sorted { a, b in
                if a.0 != b.0 { return a.0 == nil || (b.0 != nil && a.0! < b.0!) }
                if a.1 != b.1 { return a.1 > b.1 }
                return a.2 < b.2
            }
            .map(\.2)
        }
        #expect(fetched == expected)
        let controller = try store.context.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: store.context,
                                                      sectionNameKeyPath: "group.name")
            try controller.performFetch()
            return controller
        }
        let listed = store.context.performAndWait { controller.snapshot.objectIDs.map(\.primaryKey) }
        #expect(listed == expected)
    }
}
