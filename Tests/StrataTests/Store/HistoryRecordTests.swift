import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@testable import Strata

/// What the history records on each route that writes rows: many-to-many links, a batch delete's
/// kept values and the rows it nullified, a lightweight migration, pruning, tokens of another
/// store, and a store of 0.2.0 (no history tables) opened and written.
@Suite struct HistoryRecordTests {
    static func company() throws -> (TemporaryDirectory, StoreCoordinator) {
        let directory = TemporaryDirectory("strata-history-records")
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: directory.file("company.sqlite"))
        return (directory, coordinator)
    }

    @Test func manyToManyMembersAreRecordedOnTheOwner() throws {
        let (directory, coordinator) = try Self.company()
        defer { coordinator.close(); _ = directory }
        let context = coordinator.newContext()
        let (ann, apollo) = try context.performAndWait {
            let ann = try context.insert("Employee")
            try ann.setValue("Ann", forKey: "name")
            let apollo = try context.insert("Project")
            try apollo.setValue("Apollo", forKey: "title")
            try context.save()
            let start = try coordinator.currentHistoryToken()
            try apollo.setValue(Set([ann]), forKey: "members")
            try context.save()
            let linked = try coordinator.history(after: start)
            #expect(linked.count == 1)
            let change = try #require(linked.first?.changes.first)
            #expect(change.kind == .update)
            let members = change.addedMembers.values.flatMap { $0 } + change.removedMembers.values.flatMap { $0 }
            #expect(Set(members).isSubset(of: [ann.objectID, apollo.objectID]) && members.count == 1)
            return (ann.objectID, apollo.objectID)
        }
        _ = (ann, apollo)
    }

    @Test func aBatchDeleteRecordsItsRowsAndTheRowsItNullified() throws {
        let (directory, coordinator) = try Self.company()
        defer { coordinator.close(); _ = directory }
        let context = coordinator.newContext()
        let (badgeID, ownerID) = try context.performAndWait {
            let ann = try context.insert("Employee")
            try ann.setValue("Ann", forKey: "name")
            let badge = try context.insert("Badge")
            try badge.setValue("B-1", forKey: "code")
            try ann.setValue(badge, forKey: "badge")
            try context.save()
            return (badge.objectID, ann.objectID)
        }
        let start = try coordinator.currentHistoryToken()
        coordinator.transactionAuthor = "cleanup"
        let result = try coordinator.execute(BatchDeleteRequest(entityName: "Badge"))
        #expect(result.objectIDs == [badgeID])
        let transaction = try #require(try coordinator.history(after: start).first)
        #expect(transaction.kind == .batchDelete && transaction.author == "cleanup")
        #expect(transaction.changes.contains { $0.objectID == badgeID && $0.kind == .delete })
        let cleared = try #require(transaction.changes.first { $0.objectID == ownerID })
        #expect(cleared.kind == .update && cleared.toOnes == ["badge": ObjectID?.none])
    }

    @Test func aBatchInsertIsOneRangeAndABatchUpdateOneRecord() throws {
        let directory = TemporaryDirectory("strata-history-records")
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("n.sqlite"))
        defer { coordinator.close() }
        let start = try coordinator.currentHistoryToken()
        coordinator.resetStatistics()
        let inserted = try coordinator.execute(BatchInsertRequest(entityName: "Number", objects: (0..<1000).map { ["value": Int64($0)] }))
        #expect(inserted.objectIDs.count == 1000)
        // One transaction row, one change row holding the range.
        #expect(coordinator.statistics.executions(startingWith: "INSERT INTO strata_history_change") == 1)
        _ = try coordinator.execute(BatchUpdateRequest(entityName: "Number", predicate: try Condition("value < 10"), propertiesToUpdate: ["label": "small"]))
        let transactions = try coordinator.history(after: start)
        #expect(transactions.map(\.kind) == [.batchInsert, .batchUpdate])
        #expect(transactions[0].changes.count == 1000 && transactions[0].changes.allSatisfy { $0.kind == .insert })
        #expect(transactions[1].changes.count == 10)
        #expect(transactions[1].changes.allSatisfy { $0.attributes == ["label": .string("small")] })
        #expect(HistoryLog.encodeKeys(Array(1...1000)) == "[[1,1000]]")
        #expect(HistoryLog.encodeKeys([3, 10, 11, 12, 13, 14, 20, 21]) == "[3,[10,14],20,21]")
        #expect(try HistoryLog.decodeKeys("[3,[10,14],20,21]") == [3, 10, 11, 12, 13, 14, 20, 21])
    }

    @Test func valuesOfEveryTypeRoundTrip() throws {
        let info = try #require(TestModels.company().schema.infos["Sample"])
        let values: [AttributeValue?] = [
            .int16(-3), .int32(7), .int64(Int64.max), .double(.infinity), .float(1.5), .bool(true),
            .string("quote \" backslash \\ newline \n tab \t é 🇵🇱"), .date(Date(timeIntervalSinceReferenceDate: 12.25)),
            .binary(Data([0, 1, 2, 255])), .uuid(UUID()), .url(URL(string: "https://example.com/a?b=c")!),
            .decimal(Decimal(string: "12.345")!),
        ]
        for (value, attribute) in zip(values, info.attributes) {
            let json = try HistoryJSON.parse(HistoryLog.encode(value))
            #expect(try HistoryLog.decode(json, as: attribute.type) == value, "\(attribute.name)")
        }
        #expect(try HistoryLog.decode(HistoryJSON.parse("null"), as: .string) == nil)
        #expect(try HistoryLog.decode(HistoryJSON.parse(HistoryLog.encode(.double(.nan))), as: .double)?.description.contains("nan") == true)
    }

    @Test func aTokenOfAnotherStoreIsRefused() throws {
        let (directory, coordinator) = try Self.company()
        defer { coordinator.close(); _ = directory }
        let stranger = HistoryToken(store: UUID(), generation: 1)
        #expect(throws: HistoryError.tokenOfAnotherStore(token: stranger, store: coordinator.storeUUID)) {
            _ = try coordinator.history(after: stranger)
        }
    }

    @Test func pruningKeepsTheLastTransactions() throws {
        let directory = TemporaryDirectory("strata-history-records")
        var options = StoreOptions()
        options.history.maximumTransactions = 10
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("n.sqlite"), options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            for i in 0..<130 {
                let n = try context.insert("Number")
                try n.setValue(Int64(i), forKey: "value")
                try context.save()
            }
        }
        // Pruned at the 64th and 128th commits: 10 kept then, and the two since.
        let tokens = try coordinator.history().map(\.token.generation)
        #expect(tokens == Array(119...130))
        try coordinator.deleteHistory(before: Date().addingTimeInterval(60))
        #expect(try coordinator.history().isEmpty)
    }

    @Test func aStoreOfTheLastReleaseGetsItsHistoryTablesAndALightweightMigrationItsRecord() throws {
        let directory = TemporaryDirectory("strata-history-records")
        let url = directory.file("old.sqlite")
        let old = try StoreCoordinator(model: TestModels.company(), url: url)
        old.close()
        // What 0.2.0 left: no history tables.
        let raw = try Connection(path: url.path, configuration: Connection.Configuration())
        try raw.execute("DROP TABLE strata_history")
        try raw.execute("DROP TABLE strata_history_change")
        raw.close()
        let reopened = try StoreCoordinator(model: TestModels.company(), url: url)
        let context = reopened.newContext()
        try context.performAndWait {
            let c = try context.insert("Company")
            try c.setValue("Acme", forKey: "name")
            try context.save()
        }
        #expect(try reopened.history().map(\.kind) == [.save])
        reopened.close()

        var options = StoreOptions()
        options.migration = .lightweight(versions: [TestModels.company()])
        var entities = TestModels.company().entities
        entities[entities.firstIndex { $0.name == "Company" }!].attributes.append(Attribute("motto", .string))
        let migrated = try StoreCoordinator(model: try Model(version: "2", entities: entities), url: url, options: options)
        defer { migrated.close() }
        let kinds = try migrated.history().map(\.kind)
        #expect(kinds == [.save, .migration])
    }
}
