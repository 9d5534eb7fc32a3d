import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Following a change costs O(k log n): counted as rows re-evaluated and rows probed, never
/// timed. 20,000 goods in 40 categories, sectioned by category name, sorted by name.
@Suite struct TrackingCostTests {
    static let goodCount = 20_000
    static let categoryCount = 40

    struct Fixture {
        let container: PersistentContainer
        let controller: FetchedResultsController<ManagedObject>
        let delegate = RecordingDelegate()
        let categories: [ObjectID]
        let goods: [ObjectID]
        var main: ManagedObjectContext { container.mainContext }

        init() throws {
            container = try PersistentContainer(inMemoryWith: TestModels.goods())
            let update = container.newUpdateContext()
            (categories, goods) = try update.performAndWait {
                var rng = SystemRandomNumberGenerator()
                let categories = try (0..<TrackingCostTests.categoryCount).map { i in
                    let c = try update.insert("Category")
                    try c.setValue(String(format: "Category %03d", i), forKey: "name")
                    return c
                }
                var goods: [ManagedObject] = []
                for i in 0..<TrackingCostTests.goodCount {
                    let g = try update.insert("Good")
                    try g.setValue("good \(UInt32.random(in: 0...UInt32.max, using: &rng)) \(i)", forKey: "name")
                    try g.setValue(categories[i % categories.count], forKey: "category")
                    goods.append(g)
                }
                try update.saveToStore()
                return (categories.map(\.objectID), goods.map(\.objectID))
            }
            controller = FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")]),
                managedObjectContext: container.mainContext, sectionNameKeyPath: "category.name")
            try container.mainContext.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
        }

        /// Runs `edit` in a new update context and saves it into main (`toStore`: all the way).
        func change(toStore: Bool = false, _ edit: (ManagedObjectContext) throws -> Void) throws -> FetchedResultsTracking {
            let before = main.performAndWait { controller.trackingStatistics }
            let update = container.newUpdateContext()
            try update.performAndWait {
                try edit(update)
                if toStore { try update.saveToStore() } else { try update.save() }
            }
            container.waitForPendingMerges()
            let after = main.performAndWait { controller.trackingStatistics }
            return FetchedResultsTracking(reruns: after.reruns - before.reruns,
                                          rowsEvaluated: after.rowsEvaluated - before.rowsEvaluated,
                                          rowsProbed: after.rowsProbed - before.rowsProbed)
        }

        /// The layout equals a fresh fetch.
        func checkAgainstFreshFetch() throws {
            let fresh = FetchedResultsController(fetchRequest: controller.fetchRequest, managedObjectContext: main,
                                                 sectionNameKeyPath: "category.name")
            try main.performAndWait {
                try fresh.performFetch()
                #expect(fresh.snapshot == controller.snapshot)
            }
        }
    }

    /// A binary search over n rows probes at most about 2·log2(n) rows (chunks, then a chunk).
    static var probeBound: Int { 2 * Int(log2(Double(goodCount)).rounded(.up)) + 4 }

    @Test func renamingOneGoodEvaluatesOneRowAndProbesLogarithmically() throws {
        let fixture = try Fixture()
        let cost = try fixture.change { update in
            try update.existingObject(with: fixture.goods[7]).setValue("aaa first", forKey: "name")
        }
        #expect(cost.reruns == 0)
        #expect(cost.rowsEvaluated == 1)
        #expect(cost.rowsProbed > 0 && cost.rowsProbed <= Self.probeBound, "probed \(cost.rowsProbed)")
        let changes = try #require(fixture.delegate.lastChanges)
        #expect(changes.objects.count == 1)
        if case .move(let id, let from, let to) = changes.objects.first {
            #expect(id == fixture.goods[7] && from.section == to.section && to.item == 0)
        } else {
            Issue.record("expected a move, got \(changes.objects)")
        }
        try fixture.checkAgainstFreshFetch()
    }

    /// A second change in the same section compares with the sort values the first placement
    /// read where the layout still lists those rows as they were (the upper steps of the binary
    /// search visit the same rows): fewer rows read. A renamed category (a value read through
    /// the key path) empties them, and every step still equals a fresh fetch.
    @Test func laterPlacementsCompareWithValuesReadBeforeUnlessARelatedValueChanged() throws {
        let fixture = try Fixture()
        func statistics() -> FetchedResultsTracking { fixture.main.performAndWait { fixture.controller.trackingStatistics } }
        let first = try fixture.change { update in
            try update.existingObject(with: fixture.goods[40]).setValue("m first", forKey: "name")
        }
        #expect(first.rowsProbed > 0)
        let before = statistics()
        _ = try fixture.change { update in
            try update.existingObject(with: fixture.goods[80]).setValue("m second", forKey: "name")
        }
        let after = statistics()
        let fromMemory = after.rowsProbedFromMemory - before.rowsProbedFromMemory, read = after.rowsProbed - before.rowsProbed
        #expect(fromMemory > 0, "the second placement read \(read) rows and took none from memory")
        #expect(read < first.rowsProbed, "read \(read), the first placement \(first.rowsProbed)")
        try fixture.checkAgainstFreshFetch()
        // Goods 40, 80 and 120 are all in category 0: renaming it re-places its goods by the new
        // name, and what the earlier placements read (with the old name) is not used again.
        let heldBefore = fixture.main.performAndWait {
            fixture.controller.placementValues.values.filter { $0.values.first == .text("Category 000") }.count
        }
        #expect(heldBefore > 0)
        _ = try fixture.change { update in
            try update.existingObject(with: fixture.categories[0]).setValue("Category 000 renamed", forKey: "name")
        }
        try fixture.checkAgainstFreshFetch()
        let oldName = fixture.main.performAndWait {
            fixture.controller.placementValues.values.filter { $0.values.first == .text("Category 000") }.count
        }
        #expect(oldName == 0, "\(oldName) rows kept the old category name")
        _ = try fixture.change { update in
            try update.existingObject(with: fixture.goods[120]).setValue("m third", forKey: "name")
        }
        try fixture.checkAgainstFreshFetch()
        #expect(statistics().reruns == 0)
    }

    @Test func movingAGoodToAnotherCategoryEvaluatesOnlyThatGood() throws {
        // Both categories' `goods` change too, but no key path reads it: their goods stay put.
        let fixture = try Fixture()
        for toStore in [false, true] {
            let cost = try fixture.change(toStore: toStore) { update in
                try update.existingObject(with: fixture.goods[toStore ? 11 : 10])
                    .setValue(try update.existingObject(with: fixture.categories[3]), forKey: "category")
            }
            #expect(cost.reruns == 0)
            #expect(cost.rowsEvaluated == 1, "saveToStore: \(toStore)")
            #expect(cost.rowsProbed <= Self.probeBound)
            try fixture.checkAgainstFreshFetch()
        }
    }

    @Test func renamingACategoryReevaluatesItsGoodsOnly() throws {
        let fixture = try Fixture()
        let perCategory = Self.goodCount / Self.categoryCount
        let cost = try fixture.change { update in
            try update.existingObject(with: fixture.categories[5]).setValue("Category 999", forKey: "name")
        }
        #expect(cost.reruns == 0)
        #expect(cost.rowsEvaluated == perCategory)
        let changes = try #require(fixture.delegate.lastChanges)
        #expect(changes.sections.count == 2)           // "Category 005" deleted, "Category 999" inserted
        #expect(changes.objects.count == perCategory)  // each good moves across sections
        #expect(changes.applied() == changes.after)
        try fixture.checkAgainstFreshFetch()
    }

    @Test func aSiblingCommitIsFollowedRowByRow() throws {
        let fixture = try Fixture()
        let before = fixture.main.performAndWait { fixture.controller.trackingStatistics }
        let background = fixture.container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: fixture.goods[99]).setValue("zzz last", forKey: "name")
            _ = try background.save()
        }
        fixture.container.waitForPendingMerges()
        let after = fixture.main.performAndWait { fixture.controller.trackingStatistics }
        #expect(after.reruns == before.reruns)
        #expect(after.rowsEvaluated - before.rowsEvaluated == 1)
        try fixture.checkAgainstFreshFetch()
    }

    @Test func snapshotsShareStorageAndIndexPathsNeedNoScan() throws {
        let fixture = try Fixture()
        try fixture.main.performAndWait { () throws -> Void in
            let snapshot = fixture.controller.snapshot
            #expect(snapshot.numberOfObjects == Self.goodCount)
            #expect(snapshot.sections.count == Self.categoryCount)
            let path = FetchedIndexPath(item: 123, section: 17)
            let id = snapshot.objectID(at: path)
            #expect(fixture.controller.indexPath(forObjectID: id) == path)
            let object = try fixture.controller.object(at: path)
            #expect(object.objectID == id)
        }
    }
}
