import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@_spi(Testing) @testable import Strata

/// Issue 46, point 1: the store changes identity under a follower — replaced by another
/// coordinator, an older copy restored (same UUID, lower generation, or the old generation reached
/// again by other commits), migrated to another model by another process. The follower must see
/// it: contexts drop their objects, old tokens throw, nothing is saved over an unrelated row, and
/// nothing is read with the wrong model.
@Suite struct StoreIdentityTests {
    struct Fixture {
        let directory = TemporaryDirectory("strata-identity")
        let url: URL
        /// Another connection (as another process would be), not following.
        let other: StoreCoordinator
        let container: PersistentContainer
        let controller: FetchedResultsController<ManagedObject>
        let reloads = Locked<[String]>([])
        let observation: ContextObservation
        let delegate = RecordingDelegate()

        init() throws {
            url = directory.file("numbers.sqlite")
            other = try StoreCoordinator(model: TestModels.numbers(), url: url, options: .notFollowing)
            container = try PersistentContainer(model: TestModels.numbers(), url: url)
            let main = container.mainContext
            controller = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Number", sortKeys: [.ascending("value")]),
                                                  managedObjectContext: main)
            let (controller, delegate) = (controller, delegate)
            try main.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
            let reloads = reloads
            observation = main.addObserver { notification in
                if case .reload(let reason) = notification.event { reloads.withLock { $0.append("\(reason)") } }
            }
        }

        /// Commits `values` as new numbers through the other coordinator; the generation after.
        @discardableResult
        func insert(_ values: [Int64]) throws -> Int64 {
            let context = other.newContext()
            try context.performAndWait {
                for value in values { try context.insert("Number").setValue(value, forKey: "value") }
                try context.save()
            }
            return try other.currentHistoryToken().generation
        }

        /// Waits until the follower saw `condition` hold, and the contexts' queues ran.
        func wait(_ condition: (ExternalChangeStatistics) -> Bool) {
            let deadline = ContinuousClock.now + .seconds(10)
            while !condition(container.coordinator.externalChangeStatistics), ContinuousClock.now < deadline { usleep(500) }
            container.waitForPendingMerges()
        }

        /// The controller's values, and a fresh fetch's.
        func listed() throws -> [Int64] {
            let main = container.mainContext, controller = controller
            return try main.performAndWait {
                try (controller.fetchedManagedObjects ?? []).map { try $0.value(forKey: "value") as! Int64 }
            }
        }

        func fresh() throws -> [Int64] {
            let context = other.newContext()
            return try context.performAndWait {
                try context.fetch(FetchRequest(entityName: "Number", sortKeys: [.ascending("value")])).map { try $0.value(forKey: "value") as! Int64 }
            }
        }

        /// A copy of the store as it is now (SQLite's backup API, as `sqlite3 .backup` makes one).
        func copy(to name: String) throws -> URL {
            let target = directory.file(name)
            let source = try Connection(path: url.path)
            defer { source.close() }
            let copy = try Connection(path: target.path)
            defer { copy.close() }
            try copy.restore(from: source)
            return target
        }

        /// Restores `copy` over the live store through another connection (`sqlite3 .restore`):
        /// the same UUID, an older generation.
        func restore(_ copy: URL) throws {
            let source = try Connection(path: copy.path)
            defer { source.close() }
            let live = try Connection(path: url.path)
            defer { live.close() }
            try live.restore(from: source)
            // The other coordinator (not following) takes the store as it is now before it commits
            // again: its commits are refused until then (StoreError.storeReplacedElsewhere).
            try other.processExternalChanges()
        }

        func close() {
            observation.cancel()
            container.coordinator.close()
            other.close()
        }
    }

    @Test func anotherCoordinatorsReplaceStoreIsFollowed() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let backupStore = try StoreCoordinator(model: TestModels.numbers(), url: fixture.directory.file("backup.sqlite"))
        let backupContext = backupStore.newContext()
        try backupContext.performAndWait {
            for value in [7, 8, 9] as [Int64] { try backupContext.insert("Number").setValue(value, forKey: "value") }
            try backupContext.save()
        }
        backupStore.close()
        try fixture.insert([1, 2])
        fixture.wait { $0.transactionsMerged >= 1 }
        let oldToken = try fixture.container.coordinator.currentHistoryToken()
        try fixture.other.replaceStore(withContentsOf: fixture.directory.file("backup.sqlite"))
        // replaceStore restores the backup's pages, then gives the store its new UUID: a follower
        // may see both states, each a replacement.
        fixture.wait { $0.replacements >= 1 && fixture.container.coordinator.storeUUID == fixture.other.storeUUID }
        #expect((1...2).contains(fixture.container.coordinator.externalChangeStatistics.replacements))
        #expect(fixture.container.coordinator.storeUUID == fixture.other.storeUUID)
        #expect(Set(fixture.reloads.withLock { $0 }) == ["storeReplaced"])
        #expect(try fixture.listed() == [7, 8, 9])
        #expect(throws: HistoryError.self) { try fixture.container.coordinator.history(after: oldToken) }
    }

    /// A pending edit on `Number/k` while another connection restores an older copy in which
    /// key k is another row: the save is refused (before the follower noticed) or the edit is
    /// dropped (after), and the other row is never overwritten.
    @Test func aPendingEditIsNeverSavedOverTheRowOfARestoredCopy() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let coordinator = fixture.container.coordinator
        try fixture.insert([1])
        let copy = try fixture.copy(to: "copy.sqlite")
        // After the copy: key 2 is "2" here; in the restored copy key 2 will be "900".
        try fixture.insert([2])
        fixture.wait { $0.transactionsMerged >= 2 }
        let context = coordinator.newContext(name: "editor")
        let edited = try context.performAndWait {
            let number = try context.fetch(FetchRequest(entityName: "Number", predicate: try Condition("value == 2")))[0]
            try number.setValue(Int64(222), forKey: "value")
            return number.objectID
        }
        coordinator.setFollowingPaused(true)
        try fixture.restore(copy)
        try fixture.insert([900])                 // the restored lineage's key 2, maybe
        let error = context.performAndWait { () -> (any Error)? in
            do { try context.save(); return nil } catch { return error }
        }
        #expect(error as? StoreError == .storeReplacedElsewhere(path: fixture.url.path), "\(String(describing: error))")
        coordinator.setFollowingPaused(false)
        fixture.wait { $0.replacements >= 1 }
        #expect(context.performAndWait { context.hasChanges } == false)
        #expect(try fixture.fresh() == [1, 900])
        #expect(try fixture.listed() == [1, 900])
        _ = edited
    }

    /// An older copy restored, then committed to past the generation the follower knew, while
    /// it was paused: the generation is higher, but the history at the known generation names
    /// another commit (lineage), so it is a replacement, not 3 new commits.
    @Test func anOlderCopyCommittedPastTheKnownGenerationIsAnotherLineage() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let coordinator = fixture.container.coordinator
        try fixture.insert([1])
        let copy = try fixture.copy(to: "copy.sqlite")
        let before = try fixture.insert([2])
        try fixture.insert([3])
        fixture.wait { $0.generation >= before + 1 }
        let known = try coordinator.currentHistoryToken()
        coordinator.setFollowingPaused(true)
        try fixture.restore(copy)
        for value in [10, 20, 30, 40] as [Int64] { try fixture.insert([value]) }
        #expect(try fixture.other.currentHistoryToken().generation > known.generation)
        coordinator.setFollowingPaused(false)
        fixture.wait { $0.replacements >= 1 }
        #expect(coordinator.externalChangeStatistics.replacements == 1)
        #expect(try fixture.listed() == fixture.fresh())
        #expect(try fixture.listed() == [1, 10, 20, 30, 40])
        // The old lineage's token: refused, not read as if the new commits followed it.
        #expect {
            _ = try coordinator.history(after: known)
        } throws: { error in
            if case .expired = error as? HistoryError { return true }
            return false
        }
    }

    /// Another process migrates the store to another model: following stops with a reported
    /// event, and nothing is read with the old model.
    @Test func aModelChangedByAnotherProcessStopsFollowingAndReads() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        try fixture.insert([1, 2])
        fixture.wait { $0.transactionsMerged >= 1 }
        fixture.other.close()
        let v2 = try Model(version: "numbers-2", entities: [
            Entity("Number", attributes: [
                Attribute("value", .int64, isOptional: false, isIndexed: true),
                Attribute("isEven", .bool, isOptional: false, defaultValue: .bool(false)),
                Attribute("label", .string),
                Attribute("note", .string),
            ]),
        ])
        var options = StoreOptions.notFollowing
        options.migration = .lightweight(versions: [TestModels.numbers()])
        let migrated = try StoreCoordinator(model: v2, url: fixture.url, options: options)
        defer { migrated.close() }
        let coordinator = fixture.container.coordinator
        fixture.wait { $0.modelChangedElsewhere }
        #expect(coordinator.externalChangeStatistics.modelChangedElsewhere)
        let main = fixture.container.mainContext
        let error = main.performAndWait { () -> (any Error)? in
            do { _ = try main.fetch(FetchRequest(entityName: "Number")); return nil } catch { return error }
        }
        guard case .modelMismatch? = error as? StoreError else {
            Issue.record("a fetch with the old model threw \(String(describing: error))")
            return
        }
    }
}
