import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The 200,000-batch soak's finding (seed 7667667786942605206, batch 17,851): an object saved
/// with a to-one naming an object that another save had deleted. The commit wrote the dangling
/// key, so the store held an item whose category no longer existed; main kept showing the
/// category's section while a fresh fetch had the item without one.
///
/// A save that would write such a reference is refused with a ``MergeConflictError`` under
/// every policy (Core Data refuses it too, as a dangling reference): nothing is written and
/// every context stays as it was, so the app can roll back or re-point the object.
@Suite struct DanglingReferenceTests {
    typealias Fixture = FetchedResultsRegressionTests

    /// A category "C" in the store, read by main; returns its ID.
    static func seedCategory(_ container: PersistentContainer) throws -> ObjectID {
        let seed = container.newUpdateContext()
        return try seed.performAndWait {
            let category = try seed.insert("Category")
            try category.setValue("C", forKey: "name")
            try seed.saveToStore()
            return category.objectID
        }
    }

    /// Items whose category key names no category row: must be none, always.
    static func danglingItems(_ url: URL) throws -> Int {
        let coordinator = try StoreCoordinator(model: Fixture.model(), url: url)
        defer { coordinator.close() }
        return try coordinator.withConnection { db in
            let category = try #require(Fixture.model().schema.infos["Category"])
            let item = try #require(Fixture.model().schema.infos["Item"])
            let sql = "SELECT count(*) FROM \(item.table) WHERE \"category\" IS NOT NULL AND \"category\" NOT IN (SELECT \"_pk\" FROM \(category.table))"
            let statement = try db.prepare(sql)
            _ = try statement.step()
            return Int(statement.int64(at: 0))
        }
    }

    /// Another coordinator deletes the category main's new item points at; main's save to the
    /// store is refused and changes nothing.
    @Test(arguments: [MergePolicy.error, .inMemoryWinsPerProperty, .storeWinsPerProperty, .overwrite, .rollback])
    func saveNamingACategoryDeletedElsewhereIsRefused(policy: MergePolicy) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url)
        let main = container.mainContext
        let categoryID = try Self.seedCategory(container)
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("category.name"), .ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main, sectionNameKeyPath: "category.name")
        let delegate = RecordingDelegate()
        let itemID = try main.performAndWait {
            main.mergePolicy = policy
            try controller.performFetch()
            controller.delegate = delegate
            let item = try main.insert("Item")
            try item.setValue("x", forKey: "name")
            try item.setValue(try main.existingObject(with: categoryID), forKey: "category")
            return item.objectID
        }
        let other = try StoreCoordinator(model: Fixture.model(), url: url)
        let elsewhere = other.newContext(name: "elsewhere")
        try elsewhere.performAndWait {
            try elsewhere.delete(try elsewhere.existingObject(with: categoryID))
            try elsewhere.save()
        }
        other.close()
        _ = try container.coordinator.processExternalChanges()
        let generation = try container.coordinator.metadata().generation
        let error = try main.performAndWait {
            try #require(throws: MergeConflictError.self) { try main.saveToStore() }
        }
        #expect(error.conflicts.count == 1, "\(error)")
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.objectID == itemID && conflict.key == "category", "\(conflict)")
        #expect(conflict.ours == .object(categoryID) && conflict.theirs == .missing(categoryID), "\(conflict)")
        #expect(try container.coordinator.metadata().generation == generation, "a refused save writes nothing")
        try main.performAndWait {
            #expect(main.insertedObjects.map(\.objectID) == [itemID], "main keeps its new item")
            // The app's way out: the item without a category saves.
            try main.existingObject(with: itemID).setValue(nil, forKey: "category")
            try main.saveToStore()
            #expect(Fixture.layout(controller) == ["[\(itemID.primaryKey)]"])
        }
        #expect(try Fixture.freshLayout(container, request, sectionKeyPath: "category.name") == ["[\(itemID.primaryKey)]"])
        container.coordinator.close()
        #expect(try Self.danglingItems(url) == 0)
    }

    /// The same through the stack: a background save deletes the category while main holds a new
    /// item pointing at it; main.save() then writer.save() is refused at the writer.
    @Test func backgroundDeleteThenMainAndWriterSaveIsRefused() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url)
        let main = container.mainContext
        let writer = container.writerContext
        let categoryID = try Self.seedCategory(container)
        let itemID = try main.performAndWait {
            let item = try main.insert("Item")
            try item.setValue("x", forKey: "name")
            try item.setValue(try main.existingObject(with: categoryID), forKey: "category")
            return item.objectID
        }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.delete(try background.existingObject(with: categoryID))
            try background.save()
        }
        try main.performAndWait { try main.save() }
        let error = try writer.performAndWait {
            try #require(throws: MergeConflictError.self) { try writer.save() }
        }
        #expect(error.conflicts.map(\.objectID) == [itemID], "\(error)")
        writer.performAndWait { writer.rollback() }
        container.coordinator.close()
        #expect(try Self.danglingItems(url) == 0)
    }

    /// The check's cost is the destinations, not the rows: 200 new items in 3 categories read
    /// 3 primary keys.
    @Test func eachDestinationIsLookedUpOncePerCommit() throws {
        let container = try PersistentContainer(inMemoryWith: Fixture.model())
        let update = container.newUpdateContext()
        let categories = try update.performAndWait {
            let categories = try (0..<3).map { n in
                let category = try update.insert("Category")
                try category.setValue("C\(n)", forKey: "name")
                return category
            }
            try update.saveToStore()
            return categories
        }
        container.coordinator.resetStatistics()
        try update.performAndWait {
            for n in 0..<200 {
                let item = try update.insert("Item")
                try item.setValue("x\(n)", forKey: "name")
                try item.setValue(categories[n % 3], forKey: "category")
            }
            try update.saveToStore()
        }
        let lookups = container.coordinator.statistics.statements.filter { $0.sql.hasPrefix("SELECT 1 FROM") }
        #expect(lookups.map(\.executed).reduce(0, +) == 3, "\(lookups)")
    }
}
