import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@_spi(Testing) @testable import Strata

/// Issue 46: following another connection's commits where no lockstep test goes — a commit merged
/// while later ones have already landed, a history record this build can't read, a close with
/// merges still queued.
@Suite struct TrustedFollowingTests {
    /// Numbers 10, 20, 30, 40 saved through a coordinator of their own (so that main holds none of
    /// their objects: a controller reads them from the store), then a container on the same file
    /// that follows it, with a controller on main sorted by value.
    struct Fixture {
        let directory = TemporaryDirectory("strata-trusted-following")
        let url: URL
        let other: StoreCoordinator
        let otherContext: ManagedObjectContext
        let ids: [ObjectID]
        let container: PersistentContainer
        let controller: FetchedResultsController<ManagedObject>
        let delegate = RecordingDelegate()

        init() throws {
            url = directory.file("numbers.sqlite")
            other = try StoreCoordinator(model: TestModels.numbers(), url: url, options: .notFollowing)
            otherContext = other.newContext(name: "other")
            let context = otherContext
            ids = try context.performAndWait {
                let ids = try [10, 20, 30, 40].map { value -> ObjectID in
                    let n = try context.insert("Number")
                    try n.setValue(Int64(value), forKey: "value")
                    return n.objectID
                }
                try context.save()
                context.reset()
                return ids
            }
            container = try PersistentContainer(model: TestModels.numbers(), url: url)
            let main = container.mainContext
            controller = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Number", sortKeys: [.ascending("value")]),
                                                  managedObjectContext: main)
            let (controller, delegate) = (controller, delegate)
            try main.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
        }

        /// Commits through the other coordinator; returns the store's generation after it.
        @discardableResult
        func commit(_ body: (ManagedObjectContext) throws -> Void) throws -> Int64 {
            let context = otherContext
            try context.performAndWait {
                try body(context)
                try context.save()
                context.reset()
            }
            return try other.currentHistoryToken().generation
        }

        /// Waits until the container's follower has caught up with `generation` and its merges ran.
        func waitForFollower(_ generation: Int64) {
            let deadline = ContinuousClock.now + .seconds(10)
            while container.coordinator.externalChangeStatistics.generation < generation, ContinuousClock.now < deadline { usleep(500) }
            container.waitForPendingMerges()
        }

        func values() throws -> [Int64] {
            let main = container.mainContext
            let controller = controller
            return try main.performAndWait {
                try (controller.fetchedManagedObjects ?? []).map { try $0.value(forKey: "value") as! Int64 }
            }
        }

        /// Every change set reported applies exactly to its `before`, each starting where the last ended.
        func checkChangeSets(from start: FetchedSnapshot) {
            var layout = start
            for event in delegate.events {
                guard case .changes(let changes) = event else {
                    Issue.record("the controller reported \(event), not a change set")
                    continue
                }
                #expect(changes.before == layout)
                #expect(changes.applied() == changes.after)
                layout = changes.after
            }
            #expect(layout == container.mainContext.performAndWait { controller.snapshot })
        }
    }

    /// Holds `context`'s queue (a block waits on it) until the returned semaphore is signalled:
    /// what it is handed meanwhile queues up behind.
    static func hold(_ context: ManagedObjectContext) -> DispatchSemaphore {
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            context.performAndWait {
                held.signal()
                release.wait()
            }
        }
        held.wait()
        return release
    }

    /// The list [10, 20, 30, 40]; another connection inserts 15, then (before main merged the
    /// insert) sets 30 to 5. Main's merge of the insert reads its neighbours from the store, where
    /// 30 is already 5: compared with that, 15 went after it (between 30 and 40) and stayed there
    /// for good. Now a neighbour that no longer reads as the list placed it is placed again too.
    @Test func aRowInsertedWhileALaterCommitMovedItsNeighbourLandsInOrder() throws {
        let fixture = try Fixture()
        let main = fixture.container.mainContext
        let start = main.performAndWait { fixture.controller.snapshot }
        // Main's queue is held: the merge of the first commit waits behind it while the second lands.
        let release = Self.hold(main)
        let first = try fixture.commit { context in
            let n = try context.insert("Number")
            try n.setValue(Int64(15), forKey: "value")
        }
        // The follower read the first commit and handed it on (the writer context merged it and
        // queued main's merge behind the held block).
        let deadline = ContinuousClock.now + .seconds(10)
        while fixture.container.coordinator.externalChangeStatistics.generation < first, ContinuousClock.now < deadline { usleep(500) }
        fixture.container.writerContext.performAndWait {}
        fixture.container.coordinator.setFollowingPaused(true)
        let second = try fixture.commit { context in
            try context.existingObject(with: fixture.ids[2]).setValue(Int64(5), forKey: "value")
        }
        release.signal()
        main.performAndWait {}
        fixture.container.coordinator.setFollowingPaused(false)
        fixture.waitForFollower(second)
        #expect(try fixture.values() == [5, 10, 15, 20, 40])
        fixture.checkChangeSets(from: start)
        #expect(main.performAndWait { fixture.controller.trackingStatistics.stalePlacements } >= 1)
        fixture.container.coordinator.close()
        fixture.other.close()
    }

    /// A history record this build can't read (here: a transaction kind from a newer Strata)
    /// makes the follower re-run instead of merging, once; it reports it and keeps following.
    @Test func anUndecodableHistoryRecordFallsBackToARerunAndFollowingGoesOn() throws {
        let fixture = try Fixture()
        let coordinator = fixture.container.coordinator
        coordinator.setFollowingPaused(true)
        let first = try fixture.commit { context in
            let n = try context.insert("Number")
            try n.setValue(Int64(25), forKey: "value")
        }
        // A newer build's record: an unknown kind, and a change whose data is not JSON.
        let raw = try Connection(path: fixture.url.path, configuration: Connection.Configuration())
        try raw.execute("UPDATE strata_history SET kind = 'bulk-merge-v9' WHERE token = \(first)")
        try raw.execute("UPDATE strata_history_change SET data = '{not json' WHERE token = \(first)")
        raw.close()
        #expect(throws: HistoryError.self) { try fixture.other.history(after: HistoryToken(store: fixture.other.storeUUID, generation: first - 1)) }
        coordinator.setFollowingPaused(false)
        fixture.waitForFollower(first)
        #expect(try fixture.values() == [10, 20, 25, 30, 40])
        var statistics = coordinator.externalChangeStatistics
        #expect(statistics.undecodableCatchUps == 1)
        #expect(statistics.lastUndecodableRecord?.contains("bulk-merge-v9") == true)
        // Following goes on past it: the next commit is merged from the history, not re-run.
        let reruns = statistics.reruns
        let second = try fixture.commit { context in
            try context.existingObject(with: fixture.ids[0]).setValue(Int64(50), forKey: "value")
        }
        fixture.waitForFollower(second)
        #expect(try fixture.values() == [20, 25, 30, 40, 50])
        statistics = coordinator.externalChangeStatistics
        #expect(statistics.reruns == reruns)
        #expect(statistics.transactionsMerged >= 1)
        #expect(statistics.undecodableCatchUps == 1)
        fixture.checkChangeSets(from: FetchedSnapshot(sections: [FetchedSection(name: "", indexTitle: nil, objectIDs: fixture.ids)]))
        coordinator.close()
        fixture.other.close()
    }

    /// `close()` while merges of another connection's commits are queued for main: nothing is
    /// read after close, nothing stops the process, and reads after close throw
    /// `StoreError.closed`.
    @Test func closingWithMergesQueuedIsClean() throws {
        let fixture = try Fixture()
        let main = fixture.container.mainContext
        let release = Self.hold(main)
        var last: Int64 = 0
        for value in 1...20 {
            last = try fixture.commit { context in
                let n = try context.insert("Number")
                try n.setValue(Int64(value), forKey: "value")
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while fixture.container.coordinator.externalChangeStatistics.generation < last, ContinuousClock.now < deadline { usleep(500) }
        fixture.container.writerContext.performAndWait {}
        let reportsBefore = fixture.delegate.events.count
        fixture.container.coordinator.close()
        release.signal()
        main.performAndWait {}
        #expect(main.performAndWait { fixture.delegate.events.count } == reportsBefore)
        let error = main.performAndWait { () -> (any Error)? in
            do {
                _ = try main.fetch(FetchRequest(entityName: "Number"))
                return nil
            } catch {
                return error
            }
        }
        guard case .closed? = error as? StoreError else {
            Issue.record("a fetch after close threw \(String(describing: error)), not StoreError.closed")
            return
        }
        #expect(throws: StoreError.self) { try fixture.container.coordinator.history() }
        #expect(throws: StoreError.self) { try fixture.container.coordinator.currentHistoryToken() }
        fixture.other.close()
    }

    /// A list that knows a related object from the store, ahead of its context: another
    /// connection relabelled shelf S from "A" to "B"; main still holds S as "A" (the follower had
    /// not merged it yet); the list, fetched after the commit, shows S's books under "B". A
    /// sibling's save then renames one of them. Placing it by main's view of S put it alone under
    /// "A", and when the relabel was merged nothing moved it (S's values were already known as
    /// "B"): the two-process burst test's finding. Now the placement re-runs the request.
    @Test func aRowIsNotPlacedByARelatedObjectOlderThanTheListKnowsIt() throws {
        let directory = TemporaryDirectory("strata-related-ahead")
        let url = directory.file("shelves.sqlite")
        let model = TestModels.bookshelf()
        let container = try PersistentContainer(model: model, url: url)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let seed = container.newUpdateContext()
        let (shelfID, bookIDs) = try seed.performAndWait {
            let s = try seed.insert("Shelf")
            try s.setValue("A", forKey: "label")
            let t = try seed.insert("Shelf")
            try t.setValue("C", forKey: "label")
            var books: [ObjectID] = []
            for (title, shelf) in [("x", s), ("y", s), ("z", t)] {
                let book = try seed.insert("Book")
                try book.setValue(title, forKey: "title")
                try book.setValue(shelf, forKey: "shelf")
                books.append(book.objectID)
            }
            try seed.saveToStore()
            return (s.objectID, books)
        }
        container.waitForPendingMerges()
        // Main holds S with its values.
        let label = try main.performAndWait { try main.existingObject(with: shelfID).value(forKey: "label") as? String }
        #expect(label == "A")

        // Another connection relabels S; main does not hear of it yet.
        container.coordinator.setFollowingPaused(true)
        let other = try StoreCoordinator(model: model, url: url, options: .notFollowing)
        defer { other.close() }
        let elsewhere = other.newContext()
        try elsewhere.performAndWait {
            try elsewhere.existingObject(with: shelfID).setValue("B", forKey: "label")
            try elsewhere.save()
        }

        let request = FetchRequest(entityName: "Book", sortKeys: [.ascending("shelf.label"), .ascending("title")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main, sectionNameKeyPath: "shelf.label")
        let delegate = RecordingDelegate()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = delegate
        }
        main.performAndWait { #expect(FetchedResultsRegressionTests.layout(controller) == ["B[\(bookIDs[0].primaryKey) \(bookIDs[1].primaryKey)]", "C[\(bookIDs[2].primaryKey)]"]) }

        // A sibling renames x to yy (after y): main merges it and the list places it.
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: bookIDs[0]).setValue("yy", forKey: "title")
            try background.save()
        }
        container.waitForPendingMerges()
        let fresh = try FetchedResultsRegressionTests.freshLayout(container, request, sectionKeyPath: "shelf.label")
        main.performAndWait {
            #expect(FetchedResultsRegressionTests.layout(controller) == fresh)
            #expect(controller.trackingStatistics.relatedAheadReruns == 1)
        }

        // Once main hears of the relabel, the list still shows every book of S under "B".
        container.coordinator.setFollowingPaused(false)
        #expect(container.coordinator.waitUntilFollowed(try other.currentHistoryToken().generation))
        container.waitForPendingMerges()
        let after = try FetchedResultsRegressionTests.freshLayout(container, request, sectionKeyPath: "shelf.label")
        main.performAndWait {
            #expect(after == ["B[\(bookIDs[1].primaryKey) \(bookIDs[0].primaryKey)]", "C[\(bookIDs[2].primaryKey)]"])
            #expect(FetchedResultsRegressionTests.layout(controller) == after)
        }
    }
}
