import Foundation
import Testing
import StrataTestSupport
@testable import Strata
import StrataSQLite

@Suite struct StoreGenerationTests {
    func insertDepartment(_ store: TestStore, _ name: String) throws -> ObjectID {
        try store.context.performAndWait {
            let department = try store.context.insert("Department")
            try department.setValue(name, forKey: "name")
            try store.context.save()
            return department.objectID
        }
    }

    @Test func everySaveBumpsTheGenerationByExactlyOne() throws {
        let store = try TestStore()
        #expect(store.generation == 0)
        _ = try insertDepartment(store, "A")
        #expect(store.generation == 1)
        let id = try insertDepartment(store, "B")
        #expect(store.generation == 2)
        let result = try store.context.performAndWait {
            try store.context.existingObject(with: id).setValue("C", forKey: "name")
            return try store.context.save()
        }
        #expect(result?.generation == 3)
        #expect(store.generation == 3)
    }

    @Test func readsAndEmptySavesLeaveTheGenerationAndRunNoStatement() throws {
        let store = try TestStore()
        let id = try insertDepartment(store, "A")
        let before = try store.coordinator.metadata()
        try store.context.performAndWait {
            _ = try store.context.fetch(FetchRequest(entityName: "Department", sortKeys: [.ascending("name")]))
            _ = try store.context.count(for: FetchRequest(entityName: "Department"))
            _ = try store.context.existingObject(with: id).value(forKey: "employees")
            store.coordinator.resetStatistics()
            #expect(try store.context.save() == nil)
            // Setting a value back to what it was is no change either.
            let department = try store.context.existingObject(with: id)
            try department.setValue("Z", forKey: "name")
            try department.setValue("A", forKey: "name")
            #expect(store.context.hasChanges == false)
            #expect(try store.context.save() == nil)
            #expect(store.coordinator.statistics.totalExecuted == 0)
        }
        #expect(try store.coordinator.metadata() == before)
    }

    @Test func entityGenerationsMoveOnlyForTouchedEntities() throws {
        let store = try TestStore()
        _ = try insertDepartment(store, "A")                       // generation 1 touches Department
        try store.context.performAndWait {
            let project = try store.context.insert("Project")
            try project.setValue("P", forKey: "title")
            try store.context.save()                                // generation 2 touches Project
        }
        let generations = try store.coordinator.metadata().entityGenerations
        #expect(generations == ["Sample": 0, "Company": 0, "Department": 1, "Employee": 0, "Badge": 0,
                                "Project": 2, "Desk": 0, "Item": 0])
    }

    @Test func everyCommitSetsAFreshNonce() throws {
        let store = try TestStore()
        var nonces = [try store.coordinator.metadata().nonce]
        for name in ["A", "B", "C"] {
            _ = try insertDepartment(store, name)
            nonces.append(try store.coordinator.metadata().nonce)
        }
        #expect(Set(nonces).count == 4)
        #expect(nonces.allSatisfy { $0.count == 16 })
    }

    @Test func aStoreOpenedWithAnotherModelIsRefusedAndUntouched() throws {
        let store = try TestStore()
        _ = try insertDepartment(store, "A")
        store.coordinator.close()
        let before = try Data(contentsOf: store.url)
        let other = try Model(version: "2", entities: TestModels.company().entities.map { entity in
            var entity = entity
            if entity.name == "Badge" { entity.attributes.append(Attribute("issued", .date)) }
            return entity
        })
        #expect(throws: StoreError.modelMismatch(path: store.url.path, storeVersion: "1", storeHash: TestModels.company().versionHash,
                                                 modelVersion: "2", modelHash: other.versionHash)) {
            try StoreCoordinator(model: other, url: store.url)
        }
        let after = try Data(contentsOf: store.url)
        #expect(SHA256.hex(before) == SHA256.hex(after))
        #expect(before == after)
        // Still opens with its own model, data intact.
        let reopened = try TestStore(directory: store.directory)
        #expect(try reopened.context.performAndWait { try reopened.context.count(for: FetchRequest(entityName: "Department")) } == 1)
    }

    /// A store whose last commits are still in its WAL (the process died before a checkpoint),
    /// opened with another model: refused, and neither the file nor its WAL changes (the
    /// connection that read the store's identity does not checkpoint on close). Opened with its
    /// own model, the commits are there.
    @Test func aCrashedStoreOpenedWithAnotherModelKeepsItsFileAndWAL() throws {
        let store = try TestStore()
        for name in ["A", "B", "C"] { _ = try insertDepartment(store, name) }
        // A copy of the file and its WAL while the coordinator is open: what a crash leaves.
        let crashed = TemporaryDirectory("strata-crashed-wal")
        let url = crashed.file("store.sqlite")
        try FileManager.default.copyItem(at: store.url, to: url)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: store.url.path + "-wal"), to: URL(fileURLWithPath: url.path + "-wal"))
        store.coordinator.close()
        let file = try Data(contentsOf: url), wal = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
        #expect(wal.count > 32, "the copy's WAL holds the commits")
        let other = try Model(version: "2", entities: TestModels.company().entities.map { entity in
            var entity = entity
            if entity.name == "Badge" { entity.attributes.append(Attribute("issued", .date)) }
            return entity
        })
        #expect(throws: StoreError.self) { try StoreCoordinator(model: other, url: url) }
        #expect(try Data(contentsOf: url) == file)
        #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal")) == wal)
        let reopened = try StoreCoordinator(model: TestModels.company(), url: url)
        let context = reopened.newContext()
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Department")) } == 3)
        reopened.close()
    }

    @Test func notADatabaseAndNotAStrataStoreAreTypedErrors() throws {
        let directory = TemporaryDirectory()
        let junk = directory.file("junk.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: junk)
        #expect(throws: StoreError.notADatabase(path: junk.path)) { try StoreCoordinator(model: TestModels.company(), url: junk) }
        let foreign = directory.file("foreign.sqlite")
        let connection = try StrataSQLite.Connection(path: foreign.path)
        try connection.execute("CREATE TABLE t(x)")
        connection.close()
        #expect(throws: StoreError.notAStrataStore(path: foreign.path)) { try StoreCoordinator(model: TestModels.company(), url: foreign) }
    }

    @Test func savingAThousandInsertsPreparesOnceInOneTransaction() throws {
        let store = try TestStore()
        try store.context.performAndWait {
            for index in 0..<1000 {
                let item = try store.context.insert("Item")
                try item.setValue("item \(index)", forKey: "name")
                try item.setValue(index % 10, forKey: "category")
            }
            store.coordinator.resetStatistics()
            try store.context.save()
        }
        let statistics = store.coordinator.statistics
        let insert = store.coordinator.model.schema.infos["Item"]!.insertSQL
        #expect(statistics.prepared[insert] == 1)
        #expect(statistics.executed[insert] == 1000)
        #expect(statistics.executions(startingWith: "BEGIN") == 1)
        #expect(statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
        #expect(statistics.executions(startingWith: "COMMIT") == 1)
        #expect(statistics.executions(startingWith: "UPDATE strata_meta") == 1)
        #expect(statistics.executions(startingWith: "UPDATE strata_entity") == 1)
        // The history: the transaction and one record for the run of 1,000 new rows (one key range).
        #expect(statistics.executions(startingWith: "INSERT INTO strata_history") == 2)
        #expect(statistics.totalExecuted == 1006)
    }

    @Test func objectIDsAndURIsSurviveVacuumAndReopen() throws {
        let store = try TestStore()
        let ids: [ObjectID] = try store.context.performAndWait {
            let ids = try (0..<50).map { index -> ObjectID in
                let item = try store.context.insert("Item")
                try item.setValue("n\(index)", forKey: "name")
                try item.setValue(index, forKey: "category")
                return item.objectID
            }
            try store.context.save()
            for id in ids.prefix(25) { try store.context.delete(store.context.object(with: id)) }
            try store.context.save()
            return Array(ids.suffix(25))
        }
        let uris = ids.map(store.coordinator.uri(for:))
        #expect(uris[0].absoluteString == "strata://\(store.coordinator.storeUUID.uuidString)/Item/\(ids[0].primaryKey)")
        try store.coordinator.vacuum()
        let reopened = try store.reopened()
        #expect(reopened.coordinator.storeUUID == store.coordinator.storeUUID)
        try reopened.context.performAndWait {
            for (offset, uri) in uris.enumerated() {
                let id = try reopened.coordinator.objectID(forURI: uri)
                #expect(id == ids[offset])
                let item = try reopened.context.existingObject(with: id)
                #expect(try item.value(forKey: "name") as? String == "n\(offset + 25)")
            }
            // New keys never reuse old ones.
            let fresh = try reopened.context.insert("Item")
            #expect(fresh.objectID.primaryKey > ids.last!.primaryKey)
        }
    }

    @Test func uriErrorsAreTyped() throws {
        let store = try TestStore()
        let other = UUID()
        let foreign = URL(string: "strata://\(other.uuidString)/Item/1")!
        #expect(throws: StoreError.uriOfAnotherStore(uri: foreign.absoluteString, storeUUID: store.coordinator.storeUUID)) {
            try store.coordinator.objectID(forURI: foreign)
        }
        #expect(throws: StoreError.malformedURI("https://example.com/Item/1")) {
            try store.coordinator.objectID(forURI: URL(string: "https://example.com/Item/1")!)
        }
        #expect(throws: ObjectError.unknownEntity("Nope")) {
            try store.coordinator.objectID(forURI: URL(string: "strata://\(store.coordinator.storeUUID.uuidString)/Nope/1")!)
        }
    }
}
