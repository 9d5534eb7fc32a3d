import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Commits made through another connection (here: a second coordinator on the same file, as
/// another process would) reach contexts and controllers through `processExternalChanges()`.
@Suite struct ExternalChangesTests {
    /// A container at `url` holding `count` numbers 0, 10, 20, …, saved; their IDs in that order.
    static func numbers(_ count: Int, at url: URL) throws -> (PersistentContainer, [ObjectID]) {
        // These tests choose the moment: nothing follows the file by itself.
        var options = StoreOptions()
        options.history.followsOtherConnections = false
        let container = try PersistentContainer(model: TestModels.numbers(), url: url, options: options)
        let update = container.newUpdateContext()
        let ids = try update.performAndWait {
            let ids = try (0..<count).map { i -> ObjectID in
                let n = try update.insert("Number")
                try n.setValue(Int64(i * 10), forKey: "value")
                return n.objectID
            }
            try update.saveToStore()
            return ids
        }
        return (container, ids)
    }

    @Test func anotherConnectionsCommitReachesMainsControllerAsAnExactChangeSet() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("shared.sqlite")
        let (container, ids) = try Self.numbers(3, at: url)
        let main = container.mainContext
        let delegate = RecordingDelegate()
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Number", sortKeys: [.ascending("value")]), managedObjectContext: main)
        let held = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            return try main.existingObject(with: ids[0])
        }
        // Nothing happened elsewhere yet, and our own commits are no news.
        #expect(try container.coordinator.processExternalChanges().isEmpty)

        let other = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let elsewhere = other.newContext()
        let added = try elsewhere.performAndWait {
            try elsewhere.existingObject(with: ids[0]).setValue(Int64(25), forKey: "value")   // 0 → 25: moves past 10 and 20
            let n = try elsewhere.insert("Number")
            try n.setValue(Int64(15), forKey: "value")
            try elsewhere.save()
            return n.objectID
        }
        other.close()

        #expect(try container.coordinator.processExternalChanges() == ["Number"])
        container.waitForPendingMerges()
        let changes = try #require(delegate.lastChanges)
        #expect(changes.applied() == changes.after)
        #expect(changes.objects.contains(.insert(added, at: FetchedIndexPath(item: 1, section: 0))))
        #expect(main.performAndWait { controller.snapshot.objectIDs } == [ids[1], added, ids[2], ids[0]])
        // main's object was turned into a fault and reads the new value.
        let value = try main.performAndWait { try held.value(forKey: "value") as? Int64 }
        #expect(value == 25)
        #expect(try container.coordinator.processExternalChanges().isEmpty)
    }

    /// Found by the model test's 200,000-batch soak (seed 11595247941790151521, batch 9,741).
    /// While main has unsaved changes, a windowed list re-runs from memory and stamps its rows
    /// with their contents. Another connection changes a value of a listed row that no sort key
    /// reads; before main hears of it, main rolls back, and the window re-runs from the store: it
    /// reads the row's new version while main still shows the old values. The list used to adopt
    /// that version as the row's stamp, so when the news arrived the row looked unchanged and its
    /// update was never reported.
    @Test func aWindowReRunBeforeTheNewsKeepsTheStampItCompared() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("shared.sqlite")
        let (container, ids) = try Self.numbers(4, at: url)
        let main = container.mainContext
        let delegate = RecordingDelegate()
        var request = FetchRequest(entityName: "Number", sortKeys: [.ascending("value")])
        request.fetchLimit = 3
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            _ = try main.existingObject(with: ids[1]).value(forKey: "label")
            // An unsaved edit: the window re-runs from memory, rows stamped by content.
            try main.existingObject(with: ids[0]).setValue("draft", forKey: "label")
            main.processPendingChanges()
        }

        let other = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let elsewhere = other.newContext()
        try elsewhere.performAndWait {
            try elsewhere.existingObject(with: ids[1]).setValue("theirs", forKey: "label")
            try elsewhere.save()
        }
        other.close()

        // The edit undone: the window re-runs from the store before main hears of the commit.
        main.performAndWait { main.rollback() }
        #expect(main.performAndWait { controller.snapshot.objectIDs } == Array(ids[0..<3]))
        delegate.events = []
        #expect(try container.coordinator.processExternalChanges() == ["Number"])
        container.waitForPendingMerges()
        let label = try main.performAndWait { try main.existingObject(with: ids[1]).value(forKey: "label") as? String }
        #expect(label == "theirs")
        #expect(delegate.lastChanges?.objects == [.update(ids[1], from: FetchedIndexPath(item: 1, section: 0), to: FetchedIndexPath(item: 1, section: 0))])
    }
}
