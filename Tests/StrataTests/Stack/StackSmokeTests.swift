import Foundation
import Testing
import StrataTestSupport
@testable import Strata
import Synchronization

/// End-to-end slices of the three-tier stack and the sibling layout.
@Suite struct StackSmokeTests {
    @Test func updateSaveReachesMainOnlyThenWriterThenStore() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: TestModels.numbers(), url: directory.file("s.sqlite"))
        let update = container.newUpdateContext()
        let id = try update.performAndWait {
            let number = try update.insert("Number")
            try number.setValue(Int64(7), forKey: "value")
            container.coordinator.resetStatistics()
            try update.save()
            #expect(container.coordinator.statistics.totalExecuted == 0)
            return number.objectID
        }
        #expect(try container.coordinator.metadata().generation == 0)
        try container.mainContext.performAndWait {
            let number = try container.mainContext.existingObject(with: id)
            #expect(try number.value(forKey: "value") as? Int64 == 7)
            #expect(number.isInserted)
            let fetched = try container.mainContext.fetch(FetchRequest(entityName: "Number", predicate: try Condition("value == 7")))
            #expect(fetched.map(\.objectID) == [id])
            try container.mainContext.save()
        }
        #expect(try container.coordinator.metadata().generation == 0)
        let result = try container.writerContext.performAndWait { try container.writerContext.save() }
        #expect(result?.generation == 1)
        let fresh = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("s.sqlite")).newContext()
        let stored = try fresh.performAndWait { try fresh.existingObject(with: id).value(forKey: "value") }
        #expect(stored as? Int64 == 7)
    }

    @Test func siblingSeedScenario() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.numbers())
        let main = container.mainContext
        let seen = Mutex<[ObjectChanges]>([])
        let observation = main.addObserver { notification in
            if case .objectsDidChange(let changes) = notification.event { seen.withLock { $0.append(changes) } }
        }
        defer { observation.cancel() }
        let background = container.newBackgroundContext()
        let ids = try background.performAndWait {
            let objects = try (0..<4).map { i in
                let number = try background.insert("Number")
                try number.setValue(Int64(i), forKey: "value")
                try number.setValue(false, forKey: "isEven")
                return number
            }
            try background.save()
            try objects[0].setValue(true, forKey: "isEven")
            try objects[2].setValue(true, forKey: "isEven")
            try background.save()
            return objects.map(\.objectID)
        }
        container.waitForPendingMerges()
        try main.performAndWait {
            let even = try main.fetch(FetchRequest(entityName: "Number", predicate: try Condition("isEven == YES"), sortKeys: [.ascending("value")]))
            #expect(even.map(\.objectID) == [ids[0], ids[2]])
        }
        let changes = seen.withLock { $0 }
        #expect(changes.count == 2)
        #expect(changes.first?.inserted == Set(ids))
        #expect(changes.last?.updated == [ids[0], ids[2]])
    }
}
