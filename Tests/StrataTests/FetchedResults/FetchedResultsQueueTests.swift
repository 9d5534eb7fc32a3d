import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A results controller belongs to its context's queue: every public accessor stops, with a
/// message that names the fix, when called off it (exit tests: the precondition ends a child
/// process), and answers normally on it.
@Suite struct FetchedResultsQueueTests {
    /// The delegate the off-queue setter tries to set.
    final class Listener: FetchedResultsControllerDelegate {}

    /// A fetched, sectioned controller on a root context of an in-memory store with three goods
    /// in two categories. The controller holds its context, which holds the coordinator.
    static func fetchedController() throws -> FetchedResultsController<ManagedObject> {
        let coordinator = try StoreCoordinator(inMemoryWith: TestModels.goods())
        let context = coordinator.newContext(name: "main")
        let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                  sectionNameKeyPath: "category.name")
        try context.performAndWait {
            for (categoryName, goods) in [("Fruit", ["Apple", "Pear"]), ("Vegetable", ["Leek"])] {
                let category = try context.insert("Category")
                try category.setValue(categoryName, forKey: "name")
                for name in goods {
                    let good = try context.insert("Good")
                    try good.setValue(name, forKey: "name")
                    try good.setValue(category, forKey: "category")
                }
            }
            try context.save()
            try controller.performFetch()
        }
        return controller
    }

    /// The ID of the first good (read on the queue, so that only the call under test is off it).
    static func firstID(_ controller: AnyFetchedResultsController) -> ObjectID {
        controller.managedObjectContext.performAndWait { controller.snapshot.objectID(at: FetchedIndexPath(item: 0, section: 0)) }
    }

    /// Every accessor, on the queue: what the exit-test control runs, and the in-process check.
    static func useEverything(_ controller: FetchedResultsController<ManagedObject>) throws {
        let context = controller.managedObjectContext
        try context.performAndWait {
            precondition(controller.sections?.map(\.name) == ["Fruit", "Vegetable"])
            let snapshot = controller.snapshot
            precondition(snapshot.numberOfObjects == 3)
            precondition(controller.numberOfObjects == 3)
            precondition(controller.layoutBytes > 0)
            precondition(controller.sectionIndexTitles == ["F", "V"])
            precondition(controller.section(forSectionIndexTitle: "V", at: 1) == 1)
            let objects = try controller.fetchedObjects
            precondition(objects?.count == 3)
            let first = snapshot.objectID(at: FetchedIndexPath(item: 0, section: 0))
            precondition(controller.indexPath(forObjectID: first) == FetchedIndexPath(item: 0, section: 0))
            let object = try controller.object(at: FetchedIndexPath(item: 1, section: 0))
            precondition(controller.indexPath(for: object) == FetchedIndexPath(item: 1, section: 0))
            precondition(controller.trackingStatistics == FetchedResultsTracking())
            precondition(controller.cacheStatus == .none)
            _ = controller.changes()
            let listener = Listener()
            controller.delegate = listener
            controller.delegate = nil
            try controller.performFetch()
        }
    }

    @Test func everyAccessorAnswersOnTheQueue() throws {
        let controller = try Self.fetchedController()
        try Self.useEverything(controller)
    }

    /// The control: the same calls inside performAndWait exit normally.
    @Test func theSameCallsOnTheQueueExitNormally() async {
        await #expect(processExitsWith: .success) {
            try FetchedResultsQueueTests.useEverything(try FetchedResultsQueueTests.fetchedController())
        }
    }

    @Test func snapshotOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().snapshot
        }
        try Self.expectStops(naming: "snapshot", stopped)
    }

    @Test func indexPathForObjectIDOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let controller = try FetchedResultsQueueTests.fetchedController()
            let id = FetchedResultsQueueTests.firstID(controller)
            _ = controller.indexPath(forObjectID: id)
        }
        try Self.expectStops(naming: "indexPath(forObjectID:)", stopped)
    }

    @Test func numberOfObjectsOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().numberOfObjects
        }
        try Self.expectStops(naming: "numberOfObjects", stopped)
    }

    @Test func sectionsOffTheQueueStop() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().sections
        }
        try Self.expectStops(naming: "sections", stopped)
    }

    @Test func layoutBytesOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().layoutBytes
        }
        try Self.expectStops(naming: "layoutBytes", stopped)
    }

    @Test func sectionIndexOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().sectionIndexTitles
        }
        try Self.expectStops(naming: "sectionIndexTitles", stopped)
        let stoppedAgain = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().section(forSectionIndexTitle: "F", at: 0)
        }
        try Self.expectStops(naming: "section(forSectionIndexTitle:at:)", stoppedAgain)
    }

    @Test func fetchedObjectsOffTheQueueStop() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().fetchedObjects
        }
        try Self.expectStops(naming: "fetchedObjects", stopped)
    }

    @Test func indexPathForObjectOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let controller = try FetchedResultsQueueTests.fetchedController()
            let context = controller.managedObjectContext
            let object = try context.performAndWait { try controller.object(at: FetchedIndexPath(item: 0, section: 0)) }
            _ = controller.indexPath(for: object)
        }
        try Self.expectStops(naming: "indexPath(for:)", stopped)
    }

    @Test func trackingStatisticsAndCacheStatusOffTheQueueStop() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().trackingStatistics
        }
        try Self.expectStops(naming: "trackingStatistics", stopped)
        let stoppedAgain = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().cacheStatus
        }
        try Self.expectStops(naming: "cacheStatus", stoppedAgain)
    }

    @Test func changesOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FetchedResultsQueueTests.fetchedController().changes()
        }
        try Self.expectStops(naming: "changes()", stopped)
    }

    @Test func settingTheDelegateOffTheQueueStops() async throws {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let controller = try FetchedResultsQueueTests.fetchedController()
            let listener = FetchedResultsQueueTests.Listener()
            controller.delegate = listener
            withExtendedLifetime(listener) {}
        }
        try Self.expectStops(naming: "delegate", stopped)
    }

    /// Checks that the child stopped with the controller's message: the accessor and the fix,
    /// worded like the context's own confinement checks.
    static func expectStops(naming accessor: String, _ result: ExitTest.Result?,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let message = String(decoding: try #require(result, sourceLocation: sourceLocation).standardErrorContent, as: UTF8.self)
        #expect(message.contains("FetchedResultsController.\(accessor) called off its context's queue: "
                                 + "wrap the call in context.performAndWait { … } or await context.perform { … }."),
                "\(message)", sourceLocation: sourceLocation)
    }

    /// A tracking controller is called back on the queue (delegate, stream, cache refresh after
    /// a commit): none of its own reads of the layout trips the check.
    @Test func trackingAndCacheRefreshesStayOnTheQueue() async throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: TestModels.goods(), url: directory.file("goods.sqlite"))
        defer { container.coordinator.close() }
        let main = container.mainContext
        let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main, cacheName: "goods")
        let delegate = Snapshots()
        let events = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
            return controller.changes()
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            let good = try update.insert("Good")
            try good.setValue("Fig", forKey: "name")
            try update.saveToStore()
        }
        var iterator = events.makeAsyncIterator()
        guard case .changes(let changes)? = await iterator.next() else {
            Issue.record("expected a change set")
            return
        }
        #expect(changes.after.numberOfObjects == 1)
        container.coordinator.waitForCacheWrites()
        main.performAndWait {
            #expect(delegate.counts == [1])
            #expect(controller.numberOfObjects == 1)
        }
    }

    final class Snapshots: FetchedResultsControllerDelegate {
        var counts: [Int] = []
        func controller(_ controller: AnyFetchedResultsController, didChangeContentWith snapshot: FetchedSnapshot) {
            counts.append(snapshot.numberOfObjects)
        }
    }
}
