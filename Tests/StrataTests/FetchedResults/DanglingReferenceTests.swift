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

    /// A category "C" with an item "x" in the store; returns their IDs.
    static func seedItem(_ container: PersistentContainer) throws -> (ObjectID, ObjectID) {
        let seed = container.newUpdateContext()
        return try seed.performAndWait {
            let category = try seed.insert("Category")
            try category.setValue("C", forKey: "name")
            let item = try seed.insert("Item")
            try item.setValue("x", forKey: "name")
            try item.setValue(category, forKey: "category")
            try seed.saveToStore()
            return (category.objectID, item.objectID)
        }
    }

    /// Another coordinator on the same file deletes `ids` and saves; `container` hears of it
    /// through processExternalChanges().
    static func deleteElsewhere(_ ids: [ObjectID], url: URL, heardBy container: PersistentContainer, told: Bool = true) throws {
        let other = try StoreCoordinator(model: Fixture.model(), url: url, options: .notFollowing)
        let elsewhere = other.newContext(name: "elsewhere")
        try elsewhere.performAndWait {
            for id in ids { try elsewhere.delete(try elsewhere.existingObject(with: id)) }
            try elsewhere.save()
        }
        other.close()
        if told { _ = try container.coordinator.processExternalChanges() }
    }

    /// The dangling-key check's primary-key lookups (`SELECT 1 FROM …`) since the coordinator's
    /// statistics were last reset.
    static func destinationLookups(_ container: PersistentContainer) -> Int {
        container.coordinator.statistics.statements.filter { $0.sql.hasPrefix("SELECT 1 FROM") }.map(\.executed).reduce(0, +)
    }

    /// Items whose category key names no category row: must be none, always.
    static func danglingItems(_ url: URL) throws -> Int {
        let coordinator = try StoreCoordinator(model: Fixture.model(), url: url, options: .notFollowing)
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
        let container = try PersistentContainer(model: Fixture.model(), url: url, options: .notFollowing)
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
        // Main has not heard of it yet: its save names a gone row.
        try DanglingReferenceTests.deleteElsewhere([categoryID], url: url, heardBy: container, told: false)
        let generation = try container.coordinator.metadata().generation
        let error = try main.performAndWait {
            try #require(throws: MergeConflictError.self) { try main.saveToStore() }
        }
        #expect(error.conflicts.count == 1, "\(error)")
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.objectID == itemID && conflict.key == "category", "\(conflict)")
        #expect(conflict.ours == .object(categoryID) && conflict.theirs == .missing(categoryID), "\(conflict)")
        #expect(try container.coordinator.metadata().generation == generation, "a refused save writes nothing")
        main.performAndWait {
            #expect(main.insertedObjects.map(\.objectID) == [itemID], "main keeps its new item")
        }
        // Once main hears of the delete, its item lets go of the gone category (issue 39's rule
        // for rows gone elsewhere), and the save goes through.
        _ = try container.coordinator.processExternalChanges()
        try main.performAndWait {
            let category = try main.existingObject(with: itemID).value(forKey: "category")
            #expect(category == nil)
            try main.saveToStore()
            #expect(Fixture.layout(controller) == ["[\(itemID.primaryKey)]"])
        }
        #expect(try Fixture.freshLayout(container, request, sectionKeyPath: "category.name") == ["[\(itemID.primaryKey)]"])
        container.coordinator.close()
        #expect(try Self.danglingItems(url) == 0)
    }

    /// The same through the stack: main holds a new item pointing at a category and saves it into
    /// the writer; a background save deletes the category before the writer has heard of it (in
    /// the writer's own block); writer.save() is refused. (Once the writer has merged the
    /// background save, its item lets go of the category instead: `GoneRowTests`.)
    @Test func backgroundDeleteThenMainAndWriterSaveIsRefused() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url, options: .notFollowing)
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
        try main.performAndWait { try main.save() }
        let error = try writer.performAndWait {
            try background.performAndWait {
                try background.delete(try background.existingObject(with: categoryID))
                try background.save()
            }
            return try #require(throws: MergeConflictError.self) { try writer.save() }
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
        #expect(Self.destinationLookups(container) == 3)
    }

    /// Each inserted row is checked right after its INSERT, before the rows of entities that
    /// sort after it are written: a destination this commit inserts later is known from the
    /// commit's IDs (no lookup, no conflict), one in the store is looked up once, and one
    /// deleted elsewhere is still refused.
    @Test func destinationsWrittenLaterInTheCommitAreKnown() throws {
        let model = try Model(entities: [
            Entity("Apple", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("zebra", .toOne, to: "Zebra", inverse: "apples")]),
            Entity("Zebra", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("apples", .toMany, to: "Apple", inverse: "zebra")]),
        ])
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-dangling-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: url) }
        let container = try PersistentContainer(model: model, url: url, options: .notFollowing)
        defer { container.coordinator.close() }
        let update = container.newUpdateContext()
        // One save: Apple rows (written first) name Zebras the same save inserts.
        let (stored, doomed) = try update.performAndWait {
            container.coordinator.resetStatistics()
            let zebras = try (0..<3).map { n in
                let zebra = try update.insert("Zebra")
                try zebra.setValue("z\(n)", forKey: "name")
                return zebra
            }
            for n in 0..<30 {
                let apple = try update.insert("Apple")
                try apple.setValue(zebras[n % 3], forKey: "zebra")
            }
            try update.saveToStore()
            return (zebras[0].objectID, zebras[1].objectID)
        }
        #expect(Self.destinationLookups(container) == 0)
        // A later save naming a stored Zebra looks it up once.
        container.coordinator.resetStatistics()
        try update.performAndWait {
            let zebra = try update.existingObject(with: stored)
            for _ in 0..<5 { try update.insert("Apple").setValue(zebra, forKey: "zebra") }
            try update.saveToStore()
        }
        #expect(Self.destinationLookups(container) == 1)
        // A Zebra deleted by another coordinator: the new Apple naming it is refused, nothing written.
        let zebra = try update.performAndWait { try update.existingObject(with: doomed) }
        let other = try StoreCoordinator(model: model, url: url, options: .notFollowing)
        let elsewhere = other.newContext(name: "elsewhere")
        try elsewhere.performAndWait {
            try elsewhere.delete(try elsewhere.existingObject(with: doomed))
            try elsewhere.save()
        }
        other.close()
        try update.performAndWait {
            let apple = try update.insert("Apple")
            try apple.setValue(zebra, forKey: "zebra")
            let error = try #require(throws: MergeConflictError.self) { try update.saveToStore() }
            #expect(error.conflicts.map(\.key) == ["zebra"])
        }
        let apples = try container.coordinator.withConnection { db in
            let statement = try db.prepare("SELECT count(*) FROM \(try #require(model.schema.infos["Apple"]).table)")
            _ = try statement.step()
            return statement.int64(at: 0)
        }
        #expect(apples == 35)
    }
}

/// The soak's second finding, after the refusal: main edits an item another coordinator then
/// deletes, with the category a new item of main's points at; main.save() then writer.save()
/// is refused (the missing category), the writer rolls back, and main's lists must match a fresh
/// fetch again (neither the edited item nor the new one exists any more).
@Suite struct RefusedWriterSaveAfterExternalDeleteTests {
    typealias Fixture = FetchedResultsRegressionTests

    @Test func mainListsMatchTheStoreAfterTheWriterRollsBack() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url, options: .notFollowing)
        let main = container.mainContext
        let writer = container.writerContext
        let (categoryID, itemID) = try DanglingReferenceTests.seedItem(container)
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        let category = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            let item = try main.existingObject(with: itemID)
            try item.setValue("edited", forKey: "note")
            let category = try main.existingObject(with: categoryID)
            try category.setValue("renamed", forKey: "name")   // pending: stays an object, not a fault
            return category
        }
        try DanglingReferenceTests.deleteElsewhere([itemID, categoryID], url: url, heardBy: container)
        try main.performAndWait {
            let item = try main.insert("Item")
            try item.setValue("new", forKey: "name")
            try item.setValue(category, forKey: "category")
            try main.save()
        }
        let refused = writer.performAndWait { () -> Bool in
            do { try writer.save(); return false } catch is MergeConflictError { writer.rollback(); return true } catch { return false }
        }
        #expect(refused)
        let fresh = try Fixture.freshLayout(container, request)
        main.performAndWait { #expect(Fixture.layout(controller) == fresh, "\(delegate.calls)") }
        container.coordinator.close()
        #expect(try DanglingReferenceTests.danglingItems(url) == 0)
    }
}

/// The soak's third finding (seed 7667667786942605206, batch 6,412 after the refusal above):
/// main edits an item, another coordinator deletes it, main.save() then writer.save(). The
/// writer's commit finds the row gone and drops the item (their delete wins), but main, which had
/// pushed it, was never told: its lists kept the item the store no longer has.
@Suite struct ResolutionNewsReachChildrenTests {
    typealias Fixture = FetchedResultsRegressionTests

    @Test(arguments: [MergePolicy.inMemoryWinsPerProperty, .storeWinsPerProperty, .rollback])
    func itemDroppedByTheWritersCommitLeavesMainsList(policy: MergePolicy) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url, options: .notFollowing)
        let main = container.mainContext
        let writer = container.writerContext
        let (_, itemID) = try DanglingReferenceTests.seedItem(container)
        for context in [main, writer] { context.performAndWait { context.mergePolicy = policy } }
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            try main.existingObject(with: itemID).setValue("edited", forKey: "note")
        }
        try DanglingReferenceTests.deleteElsewhere([itemID], url: url, heardBy: container)
        var outcome = "saved"
        do {
            try main.performAndWait { try main.save() }
            try writer.performAndWait { try writer.save() }
        } catch let error as MergeConflictError {
            outcome = "refused: \(error)"
            writer.performAndWait { writer.rollback() }
            main.performAndWait { main.rollback() }
        }
        main.performAndWait {}
        let fresh = try Fixture.freshLayout(container, request)
        #expect(fresh == ["[]"], "\(outcome)")
        main.performAndWait { #expect(Fixture.layout(controller) == fresh, "\(outcome) \(delegate.calls)") }
        container.coordinator.close()
    }
}

/// The soak's fourth finding (seed 7667667786942605206, batch 6,412): main edits an item,
/// another coordinator deletes it, main sets the value back; main.save() had nothing of the item
/// to push, made it a clean object whose row was gone, and main's lists kept it for good.
@Suite struct UndoneEditOfARowDeletedElsewhereTests {
    typealias Fixture = FetchedResultsRegressionTests

    @Test func itemLeavesMainsListsAtTheSave() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let container = try PersistentContainer(model: Fixture.model(), url: url, options: .notFollowing)
        let main = container.mainContext
        let writer = container.writerContext
        let (_, itemID) = try DanglingReferenceTests.seedItem(container)
        let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            try main.existingObject(with: itemID).setValue(true, forKey: "flag")
        }
        try DanglingReferenceTests.deleteElsewhere([itemID], url: url, heardBy: container)
        try main.performAndWait {
            let item = try main.existingObject(with: itemID)
            try item.setValue(false, forKey: "flag")   // back to what was read
            try main.save()
        }
        try writer.performAndWait { try writer.save() }
        main.performAndWait {}
        let fresh = try Fixture.freshLayout(container, request)
        #expect(fresh == ["[]"])
        main.performAndWait {
            #expect(Fixture.layout(controller) == fresh, "\(delegate.calls)")
            #expect(main.registered[itemID] == nil)
        }
        container.coordinator.close()
    }
}
