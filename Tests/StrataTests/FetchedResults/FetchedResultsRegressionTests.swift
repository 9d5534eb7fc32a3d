import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The four findings of issue 16, each as the scenario that showed it. Every test fails on the
/// commit before the fix.
@Suite struct FetchedResultsRegressionTests {
    /// `Category(name)` ⟷ `Item(name, note, flag)`, `Category.items` nullify.
    static func model() -> Model {
        try! Model(version: "frc-regression-1", entities: [
            Entity("Category", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("items", .toMany, to: "Item", inverse: "category", deleteRule: .nullify)]),
            Entity("Item", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("note", .string),
                Attribute("flag", .bool, isOptional: false, defaultValue: .bool(false)),
            ], relationships: [Relationship("category", .toOne, to: "Category", inverse: "items")]),
        ])
    }

    /// The layout as `Section[key key …]` strings.
    static func layout(_ controller: AnyFetchedResultsController) -> [String] {
        controller.snapshot.sections.map { "\($0.name)[" + $0.objectIDs.map { "\($0.primaryKey)" }.joined(separator: " ") + "]" }
    }

    /// The same request on a fresh context of the same coordinator.
    static func freshLayout(_ container: PersistentContainer, _ request: AnyFetchRequest, sectionKeyPath: String? = nil) throws -> [String] {
        let context = container.coordinator.newContext(name: "fresh")
        return try context.performAndWait {
            let fresh = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: sectionKeyPath)
            try fresh.performFetch()
            return layout(fresh)
        }
    }

    /// Finding 1: deleting a category on main (its items nullified in memory) took the item
    /// whose primary key equals the category's out of a flat list of items, for good.
    @Test func nullifyOnMainKeepsTheItemsListed() throws {
        let container = try PersistentContainer(inMemoryWith: Self.model())
        let main = container.mainContext
        let update = container.newUpdateContext()
        let categoryID = try update.performAndWait {
            let category = try update.insert("Category")
            try category.setValue("C", forKey: "name")
            for name in ["x", "y"] {
                let item = try update.insert("Item")
                try item.setValue(name, forKey: "name")
                try item.setValue(category, forKey: "category")
            }
            try update.saveToStore()
            return category.objectID
        }
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
        }
        #expect(categoryID.primaryKey == 1, "the scenario needs Category/1 beside Item/1")
        try main.performAndWait { try main.delete(try main.existingObject(with: categoryID)) }
        main.performAndWait {
            #expect(Self.layout(controller) == ["[1 2]"])
            // Both items changed (their category went to nil): each reported once, as an update.
            #expect(delegate.calls == ["will", "object update 1 [0, 0] [0, 0]", "object update 2 [0, 1] [0, 1]", "did"]
                    || delegate.calls == ["will", "object update 2 [0, 1] [0, 1]", "object update 1 [0, 0] [0, 0]", "did"],
                    "\(delegate.calls)")
        }
        try main.performAndWait { _ = try main.saveToStore() }
        main.performAndWait { #expect(Self.layout(controller) == ["[1 2]"]) }
        #expect(try Self.freshLayout(container, request) == ["[1 2]"])
    }

    /// Finding 2: one background save that deletes a category, moves an item to another
    /// category and toggles the flag of an item of a third, under a controller whose predicate
    /// reads through the relationship: a still-matching item was reported deleted.
    @Test func mixedBackgroundSaveUnderARelationshipPredicateKeepsMatchingItems() throws {
        let container = try PersistentContainer(inMemoryWith: Self.model())
        let main = container.mainContext
        let seed = container.newUpdateContext()
        // Categories A…D are 1…4; items 1…8 in A B C A A B C D, only item8 flagged: keys of both
        // entities overlap, and item4 (in A) shares its key with category D.
        let (categories, items) = try seed.performAndWait {
            var categories: [ManagedObject] = []
            for name in ["A", "B", "C", "D"] {
                let category = try seed.insert("Category")
                try category.setValue(name, forKey: "name")
                categories.append(category)
            }
            var items: [ObjectID] = []
            for (k, c) in [0, 1, 2, 0, 0, 1, 2, 3].enumerated() {
                let item = try seed.insert("Item")
                try item.setValue("item\(k + 1)", forKey: "name")
                try item.setValue(k == 7, forKey: "flag")
                try item.setValue(categories[c], forKey: "category")
                items.append(item.objectID)
            }
            try seed.saveToStore()
            return (categories.map(\.objectID), items)
        }
        var request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        request.predicate = try Condition("category.name != %@ AND flag == NO", "B")
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
        }
        // Unflagged and not in B: item1 (A), item3 (C), item4 (A), item5 (A), item7 (C).
        main.performAndWait { #expect(Self.layout(controller) == ["[1 3 4 5 7]"]) }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            // Delete category D (4): item8 loses its category (nullify).
            try background.delete(try background.existingObject(with: categories[3]))
            // Move item4 from A to C: still listed.
            try background.existingObject(with: items[3]).setValue(try background.existingObject(with: categories[2]), forKey: "category")
            // Toggle the flag of item2 (category B): still excluded by its category.
            try background.existingObject(with: items[1]).setValue(true, forKey: "flag")
            // Flag item1 (A): leaves.
            try background.existingObject(with: items[0]).setValue(true, forKey: "flag")
            _ = try background.save()
        }
        container.waitForPendingMerges()
        main.performAndWait {
            #expect(Self.layout(controller) == ["[3 4 5 7]"])
            let deleted = delegate.events.flatMap { event -> [Int64] in
                guard case .changes(let changes) = event else { return [] }
                return changes.objects.compactMap { if case .delete(let id, _) = $0 { id.primaryKey } else { nil } }
            }
            #expect(deleted == [1], "only item1 leaves: \(delegate.calls)")
        }
        #expect(try Self.freshLayout(container, request) == ["[3 4 5 7]"])
    }

    /// Finding 3: with a fetch limit, an unchanged row was reported updated again by a later,
    /// unrelated background save.
    @Test func fetchLimitNeverReportsAnUnchangedRowAgain() throws {
        let container = try PersistentContainer(inMemoryWith: Self.model())
        let main = container.mainContext
        let seed = container.newUpdateContext()
        let items = try seed.performAndWait {
            var items: [ObjectID] = []
            for name in ["a", "b", "c", "d", "e"] {
                let item = try seed.insert("Item")
                try item.setValue(name, forKey: "name")
                items.append(item.objectID)
            }
            try seed.saveToStore()
            return items
        }
        var request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        request.fetchLimit = 3
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            try update.existingObject(with: items[1]).setValue("changed", forKey: "note")
            _ = try update.save()
        }
        try main.performAndWait { _ = try main.saveToStore() }
        main.performAndWait {
            #expect(delegate.calls == ["will", "object update 2 [0, 1] [0, 1]", "did"], "\(delegate.calls)")
            delegate.calls = []
        }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: items[4]).setValue("elsewhere", forKey: "note")
            _ = try background.save()
        }
        container.waitForPendingMerges()
        main.performAndWait {
            #expect(delegate.calls.isEmpty, "a change outside the window reported: \(delegate.calls)")
            #expect(Self.layout(controller) == ["[1 2 3]"])
        }
    }

    /// Finding 4: a controller without a section key has exactly one section, also when empty;
    /// rows come and go inside it without section changes.
    @Test func flatListAlwaysHasOneSection() throws {
        let container = try PersistentContainer(inMemoryWith: Self.model())
        let main = container.mainContext
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            #expect(controller.sections?.count == 1)
            #expect(controller.sections?.first?.numberOfObjects == 0)
            #expect(controller.snapshot.sections.map(\.name) == [""])
        }
        let update = container.newUpdateContext()
        let id = try update.performAndWait {
            let item = try update.insert("Item")
            try item.setValue("only", forKey: "name")
            try update.saveToStore()
            return item.objectID
        }
        main.performAndWait {
            #expect(delegate.calls == ["will", "object insert \(id.primaryKey) - [0, 0]", "did"], "\(delegate.calls)")
            #expect(controller.sections?.count == 1)
            delegate.calls = []
        }
        try update.performAndWait {
            try update.delete(try update.existingObject(with: id))
            try update.saveToStore()
        }
        main.performAndWait {
            #expect(delegate.calls == ["will", "object delete \(id.primaryKey) [0, 0] -", "did"], "\(delegate.calls)")
            #expect(controller.sections?.count == 1)
            #expect(controller.sections?.first?.numberOfObjects == 0)
        }
        // A sectioned controller with no rows has no sections.
        let sectioned = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortKeys: [.ascending("note")]),
                                                 managedObjectContext: main, sectionNameKeyPath: "note")
        try main.performAndWait {
            try sectioned.performFetch()
            #expect(sectioned.sections?.count == 0)
        }
    }
}
