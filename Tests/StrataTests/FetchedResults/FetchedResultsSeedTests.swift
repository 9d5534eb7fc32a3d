import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Records what a controller reports.
final class RecordingDelegate: FetchedResultsControllerDelegate {
    var events: [FetchedResultsEvent] = []
    var calls: [String] = []

    func controllerWillChangeContent(_ controller: AnyFetchedResultsController) { calls.append("will") }
    func controller(_ controller: AnyFetchedResultsController, didChange section: FetchedSection, atSectionIndex index: Int,
                    for type: FetchedResultsChangeType) { calls.append("section \(type) \(section.name) \(index)") }
    func controller(_ controller: AnyFetchedResultsController, didChange objectID: ObjectID, at indexPath: FetchedIndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
        calls.append("object \(type) \(objectID.primaryKey) \(indexPath.map(\.description) ?? "-") \(newIndexPath.map(\.description) ?? "-")")
    }
    func controllerDidChangeContent(_ controller: AnyFetchedResultsController) { calls.append("did") }
    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) { events.append(event) }

    var lastChanges: FetchedChanges? {
        if case .changes(let changes)? = events.last { return changes }
        return nil
    }
}

/// The seed scenarios' model, written as a SwiftData user would: the same entities, names and
/// hash as `TestModels.goods()`.
@Entity("Category") final class SeedCategory: ManagedObject {
    var name: String
    @Relationship(inverse: \SeedGood.category) var goods: Set<SeedGood> = []
}

@Entity("Good") final class SeedGood: ManagedObject {
    var name: String
    var number: Int64 = 0
    var category: SeedCategory?
}

@Entity("Number") final class SeedNumber: ManagedObject {
    @Attribute(.indexed) var value: Int64
    var isEven: Bool = false
    var label: String?
}

/// The seed scenarios: goods in categories on the three-tier stack, through the typed API
/// (`@Entity`, `#Predicate`, `SortDescriptor`, `FetchedResultsController<SeedGood>`).
@Suite struct FetchedResultsSeedTests {
    struct Fixture {
        let container: PersistentContainer
        let controller: FetchedResultsController<SeedGood>
        let delegate = RecordingDelegate()
        var main: ManagedObjectContext { container.mainContext }

        /// Fruit: Apple, Banana; Vegetable: Carrot — sectioned by category name, sorted by name.
        init() throws {
            container = try PersistentContainer(inMemoryWith: try Model(version: "goods-1", types: [SeedCategory.self, SeedGood.self]))
            let update = container.newUpdateContext()
            try update.performAndWait {
                for (category, goods) in [("Fruit", ["Apple", "Banana"]), ("Vegetable", ["Carrot"])] {
                    let c = try update.insert(SeedCategory.self)
                    c.name = category
                    for name in goods {
                        let g = try update.insert(SeedGood.self)
                        g.name = name
                        g.category = c
                    }
                }
                try update.saveToStore()
            }
            var request = FetchRequest<SeedGood>(sortBy: [SortDescriptor(\.category?.name), SortDescriptor(\.name)])
            request.fetchBatchSize = 50
            controller = try FetchedResultsController(request, context: container.mainContext, sectionBy: \.category?.name)
            try container.mainContext.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
        }

        func layout() -> [String] {
            main.performAndWait {
                (controller.sections ?? []).map { section in
                    section.name + ": " + section.objectIDs.map { id in
                        (try? main.existingObject(with: id, as: SeedGood.self).name) ?? "?"
                    }.joined(separator: ", ")
                }
            }
        }

        func goodID(_ name: String) throws -> ObjectID {
            try main.performAndWait {
                try main.fetchObjectIDs(FetchRequest<SeedGood>(predicate: #Predicate { $0.name == name }))[0]
            }
        }
    }

    @Test func theTypedModelIsTheHandWrittenOne() throws {
        #expect(try Model(version: "goods-1", types: [SeedCategory.self, SeedGood.self]).versionHash == TestModels.goods().versionHash)
        #expect(try Model(version: "numbers-1", types: [SeedNumber.self]).versionHash == TestModels.numbers().versionHash)
    }

    @Test func sectionsIndexTitlesAndPaths() throws {
        let f = try Fixture()
        #expect(f.layout() == ["Fruit: Apple, Banana", "Vegetable: Carrot"])
        try f.main.performAndWait {
            #expect(f.controller.sectionIndexTitles == ["F", "V"])
            #expect(f.controller.section(forSectionIndexTitle: "V", at: 1) == 1)
            let banana: SeedGood = try f.controller.object(at: FetchedIndexPath(item: 1, section: 0))
            #expect(banana.name == "Banana")
            #expect(f.controller.indexPath(for: banana) == FetchedIndexPath(item: 1, section: 0))
            #expect(try f.controller.fetchedObjects?.map(\.name) == ["Apple", "Banana", "Carrot"])
        }
    }

    @Test func deletingTheLastGoodOfACategoryDeletesItsSection() throws {
        let f = try Fixture()
        let carrot = try f.goodID("Carrot")
        let update = f.container.newUpdateContext()
        try update.performAndWait {
            try update.delete(update.existingObject(with: carrot))
            try update.save()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.sections.count == 1)
        if case let .delete(section, index) = changes.sections[0] {
            #expect(section.name == "Vegetable")
            #expect(index == 1)
        } else { Issue.record("expected a section deletion, got \(changes.sections)") }
        #expect(changes.objects == [.delete(carrot, at: FetchedIndexPath(item: 0, section: 1))])
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Fruit: Apple, Banana"])
        #expect(f.delegate.calls == ["will", "section delete Vegetable 1", "object delete \(carrot.primaryKey) [1, 0] -", "did"])
    }

    @Test func insertingAGoodInANewCategoryInsertsASection() throws {
        let f = try Fixture()
        let update = f.container.newUpdateContext()
        let dairy = try update.performAndWait {
            let category = try update.insert(SeedCategory.self)
            category.name = "Dairy"
            let good = try update.insert(SeedGood.self)
            good.name = "Milk"
            good.category = category
            try update.saveToStore()
            return good.objectID
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.sections.count == 1)
        if case let .insert(section, index) = changes.sections[0] {
            #expect(section.name == "Dairy")
            #expect(index == 0)
        } else { Issue.record("expected a section insertion, got \(changes.sections)") }
        #expect(changes.objects == [.insert(dairy, at: FetchedIndexPath(item: 0, section: 0))])
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Dairy: Milk", "Fruit: Apple, Banana", "Vegetable: Carrot"])
    }

    @Test func tappingAGoodReportsAnUpdateAtItsPath() throws {
        let f = try Fixture()
        let banana = try f.goodID("Banana")
        let update = f.container.newUpdateContext()
        try update.performAndWait {
            let good = try update.existingObject(with: banana, as: SeedGood.self)
            good.number += 1
            try update.save()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.sections.isEmpty)
        let path = FetchedIndexPath(item: 1, section: 0)
        #expect(changes.objects == [.update(banana, from: path, to: path)])
        #expect(f.layout() == ["Fruit: Apple, Banana", "Vegetable: Carrot"])
    }

    @Test func renamingAGoodPastItsNeighbourIsOneMoveNeverAlsoAnUpdate() throws {
        let f = try Fixture()
        let apple = try f.goodID("Apple")
        let update = f.container.newUpdateContext()
        try update.performAndWait {
            try update.existingObject(with: apple, as: SeedGood.self).name = "Cherry"
            try update.saveToStore()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.objects == [.move(apple, from: FetchedIndexPath(item: 0, section: 0), to: FetchedIndexPath(item: 1, section: 0))])
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Fruit: Banana, Cherry", "Vegetable: Carrot"])
    }

    @Test func movingAGoodToAnotherCategoryIsAMoveAcrossSections() throws {
        let f = try Fixture()
        let banana = try f.goodID("Banana")
        let update = f.container.newUpdateContext()
        try update.performAndWait {
            let vegetable = try update.fetch(FetchRequest<SeedCategory>(predicate: #Predicate { $0.name == "Vegetable" }))[0]
            try update.existingObject(with: banana, as: SeedGood.self).category = vegetable
            try update.save()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.objects == [.move(banana, from: FetchedIndexPath(item: 1, section: 0), to: FetchedIndexPath(item: 0, section: 1))])
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Fruit: Apple", "Vegetable: Banana, Carrot"])
    }

    @Test func renamingACategoryMovesItsGoods() throws {
        let f = try Fixture()
        let update = f.container.newUpdateContext()
        try update.performAndWait {
            let fruit = try update.fetch(FetchRequest<SeedCategory>(predicate: #Predicate { $0.name == "Fruit" }))[0]
            fruit.name = "Zest"
            try update.save()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Vegetable: Carrot", "Zest: Apple, Banana"])
    }

    @Test func siblingPredicateScenarioReportsAnInsertOnMainsController() throws {
        let container = try PersistentContainer(inMemoryWith: try Model(version: "numbers-1", types: [SeedNumber.self]))
        let background = container.newBackgroundContext()
        let ids = try background.performAndWait {
            let numbers = try (0..<4).map { i in
                let n = try background.insert(SeedNumber.self)
                n.value = Int64(i)
                return n
            }
            try background.save()
            return numbers.map(\.objectID)
        }
        container.waitForPendingMerges()
        let delegate = RecordingDelegate()
        let controller = FetchedResultsController(
            FetchRequest<SeedNumber>(predicate: #Predicate { $0.isEven }, sortBy: [SortDescriptor(\.value)]),
            context: container.mainContext)
        try container.mainContext.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            #expect(controller.snapshot.objectIDs.isEmpty)
        }
        try background.performAndWait {
            try background.existingObject(with: ids[0], as: SeedNumber.self).isEven = true
            try background.existingObject(with: ids[2], as: SeedNumber.self).isEven = true
            try background.save()
        }
        container.waitForPendingMerges()
        let changes = try #require(delegate.lastChanges)
        #expect(changes.objects == [.insert(ids[0], at: FetchedIndexPath(item: 0, section: 0)),
                                    .insert(ids[2], at: FetchedIndexPath(item: 1, section: 0))])
        #expect(container.mainContext.performAndWait { controller.snapshot.objectIDs } == [ids[0], ids[2]])
    }

    @Test func aSectionKeyThatIsNotTheFirstSortKeyIsRefusedNamingBoth() throws {
        let container = try PersistentContainer(inMemoryWith: try Model(version: "goods-1", types: [SeedCategory.self, SeedGood.self]))
        let typed = try FetchedResultsController(FetchRequest<SeedGood>(sortBy: [SortDescriptor(\.name)]),
                                                 context: container.mainContext, sectionBy: \.category?.name)
        // The string API (models built at run time) is the same machine and says the same.
        let untyped = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Good", sortKeys: [.ascending("name")]),
            managedObjectContext: container.mainContext, sectionNameKeyPath: "category.name")
        for controller in [typed, untyped] as [AnyFetchedResultsController] {
            _ = container.mainContext.performAndWait {
                #expect(throws: FetchedResultsError.sectionKeyNotFirstSortKey(sectionKeyPath: "category.name", firstSortKey: "name")) {
                    try controller.performFetch()
                }
            }
        }
        let unsorted = FetchedResultsController(FetchRequest<SeedGood>(), context: container.mainContext)
        _ = container.mainContext.performAndWait {
            #expect(throws: FetchedResultsError.missingSortKeys(entity: "Good")) { try unsorted.performFetch() }
        }
    }
}
