import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// `replaceStore(withContentsOf:)`: the content swapped in one step, a new identity, a reload
/// event in every context, and refusals that leave the store as it was.
@Suite struct StoreReplacementTests {
    /// A store of `TestModels.numbers()` at `url` holding `values`; closed again.
    func makeStore(_ url: URL, values: [Int64]) throws -> StoreMetadata {
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            for value in values { try context.insert("Number").setValue(value, forKey: "value") }
            try context.save()
        }
        return try coordinator.metadata()
    }

    func values(_ context: ManagedObjectContext) throws -> [Int64] {
        try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Number", sortKeys: [.ascending("value")]))
                .map { try $0.value(forKey: "value") as? Int64 ?? -1 }
        }
    }

    @Test func replacingSwapsTheContentGivesANewIdentityAndReloadsEveryContext() throws {
        let directory = TemporaryDirectory()
        let backup = try makeStore(directory.file("backup.sqlite"), values: [7, 8, 9])
        let container = try PersistentContainer(model: TestModels.numbers(), url: directory.file("live.sqlite"))
        let update = container.newUpdateContext()
        let background = container.newBackgroundContext()
        let oldUUID = container.coordinator.storeUUID
        let held = try container.mainContext.performAndWait {
            let number = try container.mainContext.insert("Number")
            try number.setValue(Int64(1), forKey: "value")
            try container.mainContext.saveToStore()
            try number.setValue(Int64(2), forKey: "value")      // pending, dropped by the replacement
            return number
        }
        let reloads = Locked<[String]>([])
        let observations = [container.writerContext, container.mainContext, update, background].map { context in
            context.addObserver { notification in
                if case .reload(let reason) = notification.event { reloads.withLock { $0.append("\(context.name ?? "?"):\(reason)") } }
            }
        }
        defer { observations.forEach { $0.cancel() } }

        try container.coordinator.replaceStore(withContentsOf: directory.file("backup.sqlite"))
        for context in [container.writerContext, container.mainContext, update, background] { context.performAndWait {} }

        #expect(Set(reloads.withLock { $0 }) == ["writer:storeReplaced", "main:storeReplaced", "update:storeReplaced", "background:storeReplaced"])
        let metadata = try container.coordinator.metadata()
        #expect(container.coordinator.storeUUID == metadata.storeUUID)
        #expect(metadata.storeUUID != oldUUID)
        #expect(metadata.storeUUID != backup.storeUUID)
        #expect(metadata.generation == backup.generation)
        #expect(metadata.nonce != backup.nonce)
        let mainHasChanges = container.mainContext.performAndWait { container.mainContext.hasChanges }
        #expect(!mainHasChanges)
        let heldIsGone = container.mainContext.performAndWait { held.managedObjectContext == nil }
        #expect(heldIsGone)
        #expect(try values(container.mainContext) == [7, 8, 9])
        #expect(try values(update) == [7, 8, 9])
        // New inserts get keys past the replaced content's rows.
        let inserted = try update.performAndWait {
            let number = try update.insert("Number")
            try number.setValue(Int64(10), forKey: "value")
            try update.saveToStore()
            return number.objectID
        }
        #expect(try values(background) == [7, 8, 9, 10])
        #expect(inserted.primaryKey > 3)
        // The backup itself was only read.
        let reopened = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("backup.sqlite"))
        #expect(try reopened.metadata() == backup)
    }

    @Test func aStoreOfAnotherModelOrNoStoreIsRefusedAndNothingChanges() throws {
        let directory = TemporaryDirectory()
        let company = try StoreCoordinator(model: TestModels.company(), url: directory.file("company.sqlite"))
        company.close()
        try Data("not a database at all".utf8).write(to: directory.file("junk.sqlite"))
        let store = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("live.sqlite"))
        let context = store.newContext()
        try context.performAndWait {
            try context.insert("Number").setValue(Int64(5), forKey: "value")
            try context.save()
        }
        let before = try store.metadata()
        #expect(throws: StoreError.self) { try store.replaceStore(withContentsOf: directory.file("company.sqlite")) }
        #expect(throws: StoreError.notADatabase(path: directory.file("junk.sqlite").path)) {
            try store.replaceStore(withContentsOf: directory.file("junk.sqlite"))
        }
        #expect(throws: StoreError.notAStrataStore(path: directory.file("missing.sqlite").path)) {
            try store.replaceStore(withContentsOf: directory.file("missing.sqlite"))
        }
        #expect(try store.metadata() == before)
        #expect(store.storeUUID == before.storeUUID)
        #expect(try values(context) == [5])
    }
}
