import Foundation
import Strata
import StrataTestSupport
import Testing

/// The faulting and batching rules CoreDataDifferences.md lists, counted with `StoreStatistics`:
/// what a fetch, a to-one, a to-many and a results controller read, and in how many statements.
@Suite struct BatchFaultingTests {
    /// Fruit (apple, banana, cherry) and Vegetable (kale, leek, okra), saved.
    static func store() throws -> StoreCoordinator {
        let coordinator = try StoreCoordinator(inMemoryWith: TestModels.goods())
        let context = coordinator.newContext()
        try context.performAndWait {
            for (categoryName, goods) in [("Fruit", ["apple", "banana", "cherry"]), ("Vegetable", ["kale", "leek", "okra"])] {
                let category = try context.insert("Category")
                try category.setValue(categoryName, forKey: "name")
                for name in goods {
                    let good = try context.insert("Good")
                    try good.setValue(name, forKey: "name")
                    try good.setValue(category, forKey: "category")
                }
            }
            try context.save()
        }
        return coordinator
    }

    static let goodsByName = FetchRequest(entityName: "Good", sortKeys: [.ascending("name")])

    /// A fetch reads every matched row, values included, in one statement; each to-one
    /// destination is a fault read on first use, one statement per object.
    @Test func aFetchReadsItsRowsAndEachToOneDestinationIsReadOnItsOwn() throws {
        let coordinator = try Self.store()
        let context = coordinator.newContext()
        coordinator.resetStatistics()
        let goods = try context.performAndWait { try context.fetch(Self.goodsByName) }
        #expect(coordinator.statistics.executions(of: .select) == 1)
        #expect(coordinator.statistics.rowsRead(of: .select, entity: "Good") == 6)
        try context.performAndWait {
            #expect(goods.allSatisfy { !$0.isFault })
            coordinator.resetStatistics()
            _ = try goods.map { try $0.value(forKey: "name") }                 // already read: no SQL
            #expect(coordinator.statistics.totalExecuted == 0)
            let categories = try goods.map { try #require(try $0.value(forKey: "category") as? ManagedObject) }
            #expect(coordinator.statistics.totalExecuted == 0)                  // faults: no I/O yet
            _ = try categories.map { try $0.value(forKey: "name") }             // two categories, two statements
            #expect(coordinator.statistics.executions(of: .select, entity: "Category") == 2)
            #expect(coordinator.statistics.totalExecuted == 2)
        }
    }

    /// No relationship prefetching: fetching the destinations first in the same context does the
    /// same (registered objects are not read again).
    @Test func fetchingTheDestinationsFirstIsThePrefetch() throws {
        let coordinator = try Self.store()
        let context = coordinator.newContext()
        try context.performAndWait {
            _ = try context.fetch(FetchRequest(entityName: "Category"))
            let goods = try context.fetch(Self.goodsByName)
            coordinator.resetStatistics()
            _ = try goods.map { try ($0.value(forKey: "category") as? ManagedObject)?.value(forKey: "name") }
            #expect(coordinator.statistics.totalExecuted == 0)
        }
    }

    /// A to-many reads its members' keys in one statement; the members are faults, each read on
    /// its own unless already registered.
    @Test func aToManyReadsItsKeysOnceAndItsMembersOneByOne() throws {
        let coordinator = try Self.store()
        let context = coordinator.newContext()
        try context.performAndWait {
            let fruit = try context.fetch(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))[0]
            coordinator.resetStatistics()
            let members = try #require(try fruit.value(forKey: "goods") as? Set<ManagedObject>)
            #expect(coordinator.statistics.executions(of: .select, entity: "Good") == 1)
            #expect(coordinator.statistics.rowsRead(entity: "Good") == 3)       // the keys
            _ = try fruit.value(forKey: "goods")                                 // read once
            #expect(coordinator.statistics.totalExecuted == 1)
            _ = try members.map { try $0.value(forKey: "name") }
            #expect(coordinator.statistics.executions(of: .select, entity: "Good") == 4)
        }
    }

    /// `fetchBatchSize` is the results controller's: `object(at:)` reads the whole batch around
    /// the path (aligned on multiples of the size) in one statement; `context.fetch` ignores it.
    @Test func aControllerReadsFaultsABatchAtATime() throws {
        let coordinator = try Self.store()
        let context = coordinator.newContext()
        var request = Self.goodsByName
        request.fetchBatchSize = 2
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        try context.performAndWait {
            try controller.performFetch()
            coordinator.resetStatistics()
            let kale = try controller.object(at: FetchedIndexPath(item: 3, section: 0))
            #expect(try kale.value(forKey: "name") as? String == "kale")
            #expect(coordinator.statistics.executions(of: .select, entity: "Good") == 1)
            #expect(coordinator.statistics.rowsRead(entity: "Good") == 2)        // cherry and kale: items 2 and 3
            _ = try controller.object(at: FetchedIndexPath(item: 2, section: 0)).value(forKey: "name")
            #expect(coordinator.statistics.totalExecuted == 1)
            _ = try controller.fetchedObjects                                   // the two other batches
            #expect(coordinator.statistics.executions(of: .select, entity: "Good") == 3)

            coordinator.resetStatistics()
            let fresh = coordinator.newContext()
            _ = try fresh.performAndWait { try fresh.fetch(request) }
            #expect(coordinator.statistics.executions(of: .select) == 1)
            #expect(coordinator.statistics.rowsRead(of: .select) == 6)
        }
    }
}
