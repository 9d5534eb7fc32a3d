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

/// The seed scenarios: goods in categories on the three-tier stack.
@Suite struct FetchedResultsSeedTests {
    struct Fixture {
        let container: PersistentContainer
        let controller: FetchedResultsController<ManagedObject>
        let delegate = RecordingDelegate()
        var main: ManagedObjectContext { container.mainContext }

        /// Fruit: Apple, Banana; Vegetable: Carrot — sectioned by category name, sorted by name.
        init() throws {
            container = try PersistentContainer(inMemoryWith: TestModels.goods())
            let update = container.newUpdateContext()
            try update.performAndWait {
                for (category, goods) in [("Fruit", ["Apple", "Banana"]), ("Vegetable", ["Carrot"])] {
                    let c = try update.insert("Category")
                    try c.setValue(category, forKey: "name")
                    for name in goods {
                        let g = try update.insert("Good")
                        try g.setValue(name, forKey: "name")
                        try g.setValue(c, forKey: "category")
                    }
                }
                try update.saveToStore()
            }
            var request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
            request.fetchBatchSize = 50
            controller = FetchedResultsController(fetchRequest: request, managedObjectContext: container.mainContext,
                                                  sectionNameKeyPath: "category.name")
            try container.mainContext.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
        }

        func layout() -> [String] {
            main.performAndWait {
                (controller.sections ?? []).map { section in
                    section.name + ": " + section.objectIDs.map { id in
                        (try? main.existingObject(with: id).value(forKey: "name") as? String) ?? "?"
                    }.joined(separator: ", ")
                }
            }
        }

        func goodID(_ name: String) throws -> ObjectID {
            try main.performAndWait {
                try main.fetchObjectIDs(FetchRequest(entityName: "Good", predicate: try Condition("name == %@", name)))[0]
            }
        }
    }

    @Test func sectionsIndexTitlesAndPaths() throws {
        let f = try Fixture()
        #expect(f.layout() == ["Fruit: Apple, Banana", "Vegetable: Carrot"])
        try f.main.performAndWait {
            #expect(f.controller.sectionIndexTitles == ["F", "V"])
            #expect(f.controller.section(forSectionIndexTitle: "V", at: 1) == 1)
            let banana = try f.controller.object(at: FetchedIndexPath(item: 1, section: 0))
            #expect(try banana.value(forKey: "name") as? String == "Banana")
            #expect(f.controller.indexPath(for: banana) == FetchedIndexPath(item: 1, section: 0))
            #expect(try f.controller.fetchedObjects?.count == 3)
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
            let category = try update.insert("Category")
            try category.setValue("Dairy", forKey: "name")
            let good = try update.insert("Good")
            try good.setValue("Milk", forKey: "name")
            try good.setValue(category, forKey: "category")
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
            let good = try update.existingObject(with: banana)
            try good.setValue((good.value(forKey: "number") as? Int64 ?? 0) + 1, forKey: "number")
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
            try update.existingObject(with: apple).setValue("Cherry", forKey: "name")
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
            let vegetable = try update.fetch(FetchRequest(entityName: "Category", predicate: try Condition("name == 'Vegetable'")))[0]
            try update.existingObject(with: banana).setValue(vegetable, forKey: "category")
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
            let fruit = try update.fetch(FetchRequest(entityName: "Category", predicate: try Condition("name == 'Fruit'")))[0]
            try fruit.setValue("Zest", forKey: "name")
            try update.save()
        }
        f.main.performAndWait {}
        let changes = try #require(f.delegate.lastChanges)
        #expect(changes.applied() == changes.after)
        #expect(f.layout() == ["Vegetable: Carrot", "Zest: Apple, Banana"])
    }

    @Test func siblingPredicateScenarioReportsAnInsertOnMainsController() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.numbers())
        let background = container.newBackgroundContext()
        let ids = try background.performAndWait {
            let numbers = try (0..<4).map { i in
                let n = try background.insert("Number")
                try n.setValue(Int64(i), forKey: "value")
                return n
            }
            try background.save()
            return numbers.map(\.objectID)
        }
        container.waitForPendingMerges()
        let delegate = RecordingDelegate()
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Number", predicate: try Condition("isEven == YES"), sortKeys: [.ascending("value")]),
            managedObjectContext: container.mainContext)
        try container.mainContext.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            #expect(controller.snapshot.objectIDs.isEmpty)
        }
        try background.performAndWait {
            try background.existingObject(with: ids[0]).setValue(true, forKey: "isEven")
            try background.existingObject(with: ids[2]).setValue(true, forKey: "isEven")
            try background.save()
        }
        container.waitForPendingMerges()
        let changes = try #require(delegate.lastChanges)
        #expect(changes.objects == [.insert(ids[0], at: FetchedIndexPath(item: 0, section: 0)),
                                    .insert(ids[2], at: FetchedIndexPath(item: 1, section: 0))])
        #expect(container.mainContext.performAndWait { controller.snapshot.objectIDs } == [ids[0], ids[2]])
    }

    @Test func aSectionKeyThatIsNotTheFirstSortKeyIsRefusedNamingBoth() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Good", sortKeys: [.ascending("name")]),
            managedObjectContext: container.mainContext, sectionNameKeyPath: "category.name")
        _ = container.mainContext.performAndWait {
            #expect(throws: FetchedResultsError.sectionKeyNotFirstSortKey(sectionKeyPath: "category.name", firstSortKey: "name")) {
                try controller.performFetch()
            }
        }
        let unsorted = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Good"), managedObjectContext: container.mainContext)
        _ = container.mainContext.performAndWait {
            #expect(throws: FetchedResultsError.missingSortKeys(entity: "Good")) { try unsorted.performFetch() }
        }
    }
}
