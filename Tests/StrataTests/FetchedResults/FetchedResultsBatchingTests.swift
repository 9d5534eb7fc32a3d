import Foundation
import Testing
import StrataSQLite
import StrataTestSupport
@testable import Strata

/// What a results controller costs in statements over a large store: one SELECT to fetch, none
/// to build a snapshot or a change set, one page of `fetchBatchSize` rows to show an object.
@Suite struct FetchedResultsBatchingTests {
    static let rowCount = 10_000
    static let categoryCount = 10

    /// A store file with `rowCount` goods in `categoryCount` categories, written by a root
    /// context of a coordinator that is closed afterwards.
    static func makeStore(in directory: TemporaryDirectory) throws -> URL {
        let url = directory.file("goods.sqlite")
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
        let root = coordinator.newContext(name: "seed")
        try root.performAndWait {
            let categories = try (0..<categoryCount).map { index -> ManagedObject in
                let category = try root.insert("Category")
                try category.setValue("Category \(index)", forKey: "name")
                return category
            }
            for index in 0..<rowCount {
                let good = try root.insert("Good")
                try good.setValue("Good " + String(repeating: "0", count: 5 - String(index).count) + String(index), forKey: "name")
                try good.setValue(Int64(index % 100), forKey: "number")
                try good.setValue(categories[index % categoryCount], forKey: "category")
            }
            try root.save()
        }
        coordinator.close()
        return url
    }

    /// Statements whose SQL reads the Good table.
    static func goodStatements(_ statistics: StoreStatistics) -> Int {
        statistics.executed.filter { $0.key.uppercased().hasPrefix("SELECT") && $0.key.contains("Good") }.values.reduce(0, +)
    }

    static func materialisedGoods(_ context: ManagedObjectContext) -> Int {
        context.registeredObjects.filter { $0.entityName == "Good" && !$0.isFault }.count
    }

    @Test(.timeLimit(.minutes(30))) func oneSelectToFetchNoneForSnapshotsOnePagePerObject() throws {
        let directory = TemporaryDirectory("strata-frc-batching")
        let container = try PersistentContainer(model: TestModels.goods(), url: try Self.makeStore(in: directory))
        let main = container.mainContext
        var request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
        request.fetchBatchSize = 50
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main, sectionNameKeyPath: "category.name")
        let delegate = RecordingDelegate()

        // performFetch: one SELECT (IDs and sort values), no object materialised.
        let (fetchStatements, fetchTotal, registeredAfterFetch) = try main.performAndWait {
            #expect(main.registeredObjects.isEmpty)
            container.coordinator.resetStatistics()
            try controller.performFetch()
            let statistics = container.coordinator.statistics
            controller.delegate = delegate
            return (statistics.executions(startingWith: "SELECT"), statistics.totalExecuted, main.registeredObjects.count)
        }
        #expect(fetchTotal == fetchStatements, "performFetch ran statements other than its SELECT")
        #expect(registeredAfterFetch == 0, "performFetch registered \(registeredAfterFetch) objects")

        // One change through a sibling context: "Good 00003" (Category 3, first row) renamed
        // past its section's other goods, a move within the section.
        let background = container.newBackgroundContext()
        let moved = try background.performAndWait {
            let good = try background.fetch(FetchRequest(entityName: "Good", predicate: try Condition("name == %@", "Good 00003")))[0]
            try good.setValue("Good 99999", forKey: "name")
            try background.save()
            return good.objectID
        }
        container.waitForPendingMerges()

        // The snapshot and the change set come from IDs alone.
        container.coordinator.resetStatistics()
        let (snapshot, changes) = main.performAndWait { (controller.snapshot, delegate.lastChanges) }
        let applied = changes?.applied()
        let snapshotStatistics = container.coordinator.statistics
        let snapshotStatements = Self.goodStatements(snapshotStatistics)
        #expect(snapshotStatistics.totalExecuted == 0, "building a snapshot and a change set ran \(snapshotStatistics.executed)")
        #expect(snapshot.objectIDs.count == Self.rowCount)
        #expect(snapshot.sections.count == Self.categoryCount)
        let section3 = FetchedIndexPath(item: 0, section: 3)
        let last3 = FetchedIndexPath(item: Self.rowCount / Self.categoryCount - 1, section: 3)
        #expect(changes?.objects == [.move(moved, from: section3, to: last3)])
        #expect(changes?.sections.isEmpty == true)
        #expect(applied == changes?.after)
        #expect(snapshot.sections[3].objectIDs.last == moved)

        // object(at:) on a row whose page was never read: one statement, one page of 50.
        let path = FetchedIndexPath(item: 123, section: 5)
        let (objectStatements, objectGoodStatements, pageRows, name) = try main.performAndWait {
            let before = Self.materialisedGoods(main)
            container.coordinator.resetStatistics()
            let object = try controller.object(at: path)
            let statistics = container.coordinator.statistics
            let rows = Self.materialisedGoods(main) - before
            return (statistics.totalExecuted, Self.goodStatements(statistics), rows, try object.value(forKey: "name") as? String)
        }
        // Section 5 holds goods 5, 15, 25, …: item 123 is good 1235.
        #expect(name == "Good 01235")
        #expect(objectStatements == 1, "object(at:) ran \(objectStatements) statements")
        #expect(objectGoodStatements == 1)

        print("frc-batching: rows=\(Self.rowCount) fetch-statements=\(fetchStatements) snapshot-statements=\(snapshotStatements) batch-rows=\(pageRows)")
        #expect(fetchStatements == 1)
        #expect(snapshotStatements == 0)
        #expect(pageRows == 50)
    }
}
