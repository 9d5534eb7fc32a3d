import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Streams, reloads and the cost of not listening.
@Suite struct FetchedResultsEventTests {
    func numbers(_ count: Int) throws -> (PersistentContainer, [ObjectID]) {
        let container = try PersistentContainer(inMemoryWith: TestModels.numbers())
        let update = container.newUpdateContext()
        let ids = try update.performAndWait {
            let ids = try (0..<count).map { i -> ObjectID in
                let n = try update.insert("Number")
                try n.setValue(Int64(i), forKey: "value")
                return n.objectID
            }
            try update.saveToStore()
            return ids
        }
        return (container, ids)
    }

    func controller(_ container: PersistentContainer) throws -> FetchedResultsController<ManagedObject> {
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Number", sortKeys: [.ascending("value")]),
            managedObjectContext: container.mainContext)
        try container.mainContext.performAndWait { try controller.performFetch() }
        return controller
    }

    @Test func theStreamReceivesTheSameChangeSetsAsTheDelegate() async throws {
        let (container, ids) = try numbers(3)
        let controller = try controller(container)
        let delegate = RecordingDelegate()
        let stream = container.mainContext.performAndWait {
            controller.delegate = delegate
            return controller.changes()
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            try update.delete(update.existingObject(with: ids[1]))
            try update.save()
        }
        container.mainContext.performAndWait {}
        var iterator = stream.makeAsyncIterator()
        guard case .changes(let streamed)? = await iterator.next() else {
            Issue.record("the stream ended or reported a reload")
            return
        }
        #expect(streamed == delegate.lastChanges)
        #expect(streamed.objects == [.delete(ids[1], at: FetchedIndexPath(item: 1, section: 0))])
    }

    @Test func resetAndStoreReplacementReportOneReloadEach() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: TestModels.numbers(), url: directory.file("live.sqlite"))
        let update = container.newUpdateContext()
        try update.performAndWait {
            for i in 0..<3 { try update.insert("Number").setValue(Int64(i), forKey: "value") }
            try update.saveToStore()
        }
        let controller = try controller(container)
        let delegate = RecordingDelegate()
        container.mainContext.performAndWait {
            controller.delegate = delegate
            container.mainContext.reset()
        }
        #expect(delegate.events.count == 1)
        if case .reload(let snapshot)? = delegate.events.last { #expect(snapshot.objectIDs.count == 3) }
        else { Issue.record("expected a reload, got \(delegate.events)") }

        let backup = directory.file("backup.sqlite")
        let other = try StoreCoordinator(model: TestModels.numbers(), url: backup)
        let context = other.newContext()
        try context.performAndWait {
            try context.insert("Number").setValue(Int64(42), forKey: "value")
            try context.save()
        }
        other.close()
        try container.coordinator.replaceStore(withContentsOf: backup)
        container.mainContext.performAndWait {}
        #expect(delegate.events.count == 2)
        if case .reload(let snapshot)? = delegate.events.last { #expect(snapshot.objectIDs.count == 1) }
        else { Issue.record("expected a reload, got \(delegate.events)") }
    }

    @Test func withoutADelegateOrStreamNothingIsTracked() throws {
        let (container, ids) = try numbers(3)
        let controller = try controller(container)
        let update = container.newUpdateContext()
        try update.performAndWait {
            try update.delete(update.existingObject(with: ids[0]))
            try update.saveToStore()
        }
        container.mainContext.performAndWait {
            // Not tracking: the layout is what performFetch read, as in Core Data.
            #expect(controller.snapshot.objectIDs == ids)
            #expect(!container.mainContext.isObserved)
        }
    }

    @Test func aDelegateSetAgainCatchesUpAndAReleasedOneStopsTracking() throws {
        let (container, ids) = try numbers(3)
        let controller = try controller(container)
        let main = container.mainContext
        var delegate: RecordingDelegate? = RecordingDelegate()
        main.performAndWait {
            controller.delegate = delegate
            controller.delegate = nil
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            try update.delete(update.existingObject(with: ids[0]))
            try update.saveToStore()
        }
        main.performAndWait {
            #expect(controller.snapshot.objectIDs == ids)            // not tracking: as fetched
            controller.delegate = delegate                          // tracking again: caught up first
            #expect(controller.snapshot.objectIDs == Array(ids[1...]))
        }
        delegate = nil                                              // released, never set to nil
        try update.performAndWait {
            try update.delete(update.existingObject(with: ids[1]))
            try update.saveToStore()
        }
        main.performAndWait { #expect(!main.isObserved) }
    }

    @Test func aCaseInsensitiveSectionKeyIsRefused() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Good", sortKeys: [SortKey("name", comparison: .caseInsensitive)]),
            managedObjectContext: container.mainContext, sectionNameKeyPath: "name")
        _ = container.mainContext.performAndWait {
            #expect(throws: FetchedResultsError.sectionKeyNeedsBinaryComparison(sectionKeyPath: "name")) { try controller.performFetch() }
        }
    }

    @Test func aStreamWhoseConsumerIsGoneStopsTracking() throws {
        let (container, _) = try numbers(2)
        let controller = try controller(container)
        let main = container.mainContext
        var stream: AsyncStream<FetchedResultsEvent>? = main.performAndWait { controller.changes() }
        main.performAndWait { #expect(main.isObserved) }
        #expect(stream != nil)
        stream = nil                        // released: its termination handler runs
        main.performAndWait {}              // the removal it queued
        main.performAndWait { #expect(!main.isObserved) }
    }
}
