import Foundation
import Testing
import StrataTestSupport
@testable import Strata
import Synchronization

/// What contexts report (objects-did-change, willSave, didSave, reload) through callbacks and
/// `events()`, and how other contexts' saves are merged, on real store files. Uses the company
/// fixture of ``ParentChildTests``.
@Suite struct ContextEventTests {
    typealias Fixture = ParentChildTests

    /// Records every notification a context's callback receives: the event, the objects it came
    /// with (by identity) and whether it ran on the context's queue.
    final class Recorder: Sendable {
        struct Entry: Sendable {
            let event: ContextEvent
            let objects: [ObjectID: ObjectIdentifier]
            let onQueue: Bool
        }
        private let entries = Mutex<[Entry]>([])

        func observe(_ context: ManagedObjectContext) -> ContextObservation {
            context.addObserver { [self] notification in
                let entry = Entry(event: notification.event, objects: notification.objects.mapValues(ObjectIdentifier.init),
                                  onQueue: context.isOnQueue)
                entries.withLock { $0.append(entry) }
            }
        }

        var count: Int { entries.withLock { $0.count } }
        func take() -> [Entry] { entries.withLock { entries in defer { entries = [] }; return entries } }
        func takeEvents() -> [String] { take().map { ContextEventTests.describe($0.event) } }
    }

    actor Collector {
        var events: [String] = []
        func append(_ event: ContextEvent) { events.append(ContextEventTests.describe(event)) }
        var count: Int { events.count }
    }

    static func ids(_ ids: Set<ObjectID>) -> String { ids.sorted().map(\.description).joined(separator: ",") }

    static func changed(inserted: Set<ObjectID> = [], updated: Set<ObjectID> = [], deleted: Set<ObjectID> = [],
                        refreshed: Set<ObjectID> = [], invalidated: Set<ObjectID> = []) -> String {
        var parts = ["objectsDidChange"]
        if !inserted.isEmpty { parts.append("inserted [\(ids(inserted))]") }
        if !updated.isEmpty { parts.append("updated [\(ids(updated))]") }
        if !deleted.isEmpty { parts.append("deleted [\(ids(deleted))]") }
        if !refreshed.isEmpty { parts.append("refreshed [\(ids(refreshed))]") }
        if !invalidated.isEmpty { parts.append("invalidated [\(ids(invalidated))]") }
        return parts.joined(separator: " ")
    }

    static func didSave(_ generation: Int64?, inserted: Set<ObjectID> = [], updated: Set<ObjectID> = [], deleted: Set<ObjectID> = []) -> String {
        "didSave generation \(generation.map(String.init) ?? "nil") inserted [\(ids(inserted))] updated [\(ids(updated))] deleted [\(ids(deleted))]"
    }

    static func describe(_ event: ContextEvent) -> String {
        switch event {
        case .objectsDidChange(let c):
            changed(inserted: c.inserted, updated: c.updated, deleted: c.deleted, refreshed: c.refreshed, invalidated: c.invalidated)
        case .willSave:
            "willSave"
        case .didSave(let save):
            didSave(save.generation, inserted: save.inserted, updated: save.updated, deleted: save.deleted)
        case .reload(let reason):
            "reload \(reason.rawValue)"
        }
    }

    static func age(_ object: ManagedObject) throws -> Int16? { try object.value(forKey: "age") as? Int16 }

    /// A seeded store file and a root context on it.
    static func rootContext() throws -> (TemporaryDirectory, URL, ParentChildTests.Seed, StoreCoordinator, ManagedObjectContext) {
        let directory = TemporaryDirectory()
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
        return (directory, url, seed, coordinator, coordinator.newContext(name: "root"))
    }

    /// Waits (up to 10 s) until `condition` holds.
    static func eventually(_ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while await !condition() {
            guard ContinuousClock.now < deadline else { Issue.record("timed out"); return }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    // MARK: Objects-did-change from local edits

    @Test func localEditsPostOneObjectsDidChangeWhenTheOutermostBlockEnds() async throws {
        let (directory, _, seed, _, context) = try Self.rootContext()
        defer { withExtendedLifetime(directory) {} }
        let (ann, bob, badge) = try context.performAndWait {
            (try context.existingObject(with: seed.ann), try context.existingObject(with: seed.bob), try context.existingObject(with: seed.badge))
        }
        let recorder = Recorder()
        let observation = recorder.observe(context)
        defer { observation.cancel() }
        let dee = try context.performAndWait {
            let dee = try context.insert("Employee")
            try dee.setValue("Dee", forKey: "name")              // inserted and changed: reported as inserted
            try ann.setValue(42, forKey: "age")
            try context.performAndWait { try bob.setValue("Robert", forKey: "name") }
            #expect(recorder.count == 0)                          // not when the nested block ends
            try context.delete(badge)                             // Ann's badge: Ann changes again
            #expect(recorder.count == 0)
            return dee
        }
        let entries = recorder.take()
        #expect(entries.map { Self.describe($0.event) } == [Self.changed(inserted: [dee.objectID], updated: [seed.ann, seed.bob], deleted: [seed.badge])])
        #expect(entries.first?.objects == [dee.objectID: ObjectIdentifier(dee), seed.ann: ObjectIdentifier(ann),
                                           seed.bob: ObjectIdentifier(bob), seed.badge: ObjectIdentifier(badge)])
        #expect(entries.first?.onQueue == true)

        // A block without changes reports nothing; processPendingChanges() reports early, once.
        context.performAndWait {}
        #expect(recorder.count == 0)
        try context.performAndWait { () throws -> Void in
            try ann.setValue(43, forKey: "age")
            context.processPendingChanges()
            #expect(recorder.takeEvents() == [Self.changed(updated: [seed.ann])])
        }
        #expect(recorder.count == 0)
        // An async perform block reports the same way, when it ends.
        let countInside = try await context.perform {
            try context.existingObject(with: seed.bob).setValue(36, forKey: "age")
            return recorder.count
        }
        context.performAndWait {}
        #expect(countInside == 0)
        #expect(recorder.takeEvents() == [Self.changed(updated: [seed.bob])])
    }

    // MARK: willSave and didSave

    @Test func willSaveAndDidSaveSurroundARootSave() throws {
        let (directory, _, seed, coordinator, context) = try Self.rootContext()
        defer { withExtendedLifetime(directory) {} }
        let recorder = Recorder()
        let observation = recorder.observe(context)
        defer { observation.cancel() }
        let (dee, ann, badge) = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            let badge = try context.existingObject(with: seed.badge)
            let dee = try Fixture.make(context, "Employee", ["name": "Dee"])
            try ann.setValue(42, forKey: "age")
            try context.delete(badge)
            #expect(try context.save()?.generation == 2)
            #expect(recorder.count == 3)                          // all three before the block ends
            return (dee, ann, badge)
        }
        let entries = recorder.take()
        #expect(entries.map { Self.describe($0.event) } == [
            Self.changed(inserted: [dee.objectID], updated: [seed.ann], deleted: [seed.badge]),
            "willSave",
            Self.didSave(2, inserted: [dee.objectID], updated: [seed.ann], deleted: [seed.badge]),
        ])
        // didSave comes with the objects, the deleted one included (no longer in a context).
        #expect(entries.last?.objects == [dee.objectID: ObjectIdentifier(dee), seed.ann: ObjectIdentifier(ann),
                                          seed.badge: ObjectIdentifier(badge)])
        let entriesOnQueue = entries.allSatisfy(\.onQueue)
        #expect(entriesOnQueue)
        context.performAndWait { #expect(badge.managedObjectContext == nil) }
        #expect(try coordinator.metadata().generation == 2)
        // Nothing to save: no event at all.
        try context.performAndWait { () throws -> Void in #expect(try context.save() == nil) }
        #expect(recorder.count == 0)
    }

    @Test func aChildSavesDidSaveHasNoGenerationAndTheParentReportsWhatArrived() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer) = (container.mainContext, container.writerContext)
        let update = container.newUpdateContext()
        let recorders = (update: Recorder(), main: Recorder(), writer: Recorder())
        let observations = [recorders.update.observe(update), recorders.main.observe(main), recorders.writer.observe(writer)]
        defer { observations.forEach { $0.cancel() } }
        let dee = try update.performAndWait {
            let dee = try Fixture.make(update, "Employee", ["name": "Dee"])
            try update.existingObject(with: seed.ann).setValue(42, forKey: "age")
            try update.delete(try update.existingObject(with: seed.badge))
            #expect(try update.save() == nil)
            return dee.objectID
        }
        let arrived = Self.changed(inserted: [dee], updated: [seed.ann], deleted: [seed.badge])
        #expect(recorders.update.takeEvents() == [arrived, "willSave", Self.didSave(nil, inserted: [dee], updated: [seed.ann], deleted: [seed.badge])])
        let mainEntries = recorders.main.take()
        #expect(mainEntries.map { Self.describe($0.event) } == [arrived])
        // Main's notification names its own objects: the new one and Ann (now registered there).
        let mainObjects = main.performAndWait { main.registered.filter { [dee, seed.ann, seed.badge].contains($0.key) }.mapValues(ObjectIdentifier.init) }
        #expect(mainEntries.first?.objects == mainObjects)
        #expect(mainEntries.first?.objects.keys.sorted() == [seed.ann, seed.badge, dee].sorted())
        let mainEntriesOnQueue = mainEntries.allSatisfy(\.onQueue)
        #expect(mainEntriesOnQueue)
        #expect(recorders.writer.count == 0)

        try main.performAndWait { () throws -> Void in #expect(try main.save() == nil) }
        #expect(recorders.main.takeEvents() == ["willSave", Self.didSave(nil, inserted: [dee], updated: [seed.ann], deleted: [seed.badge])])
        #expect(recorders.writer.takeEvents() == [arrived])

        let result = try writer.performAndWait { try writer.save() }
        #expect(result?.generation == 2)
        #expect(recorders.writer.takeEvents() == ["willSave", Self.didSave(2, inserted: [dee], updated: [seed.ann], deleted: [seed.badge])])
        container.waitForPendingMerges()
        #expect(recorders.main.count == 0)
        #expect(recorders.update.count == 0)
    }

    @Test func saveToStoreReportsAtEveryLevel() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer) = (container.mainContext, container.writerContext)
        let update = container.newUpdateContext()
        let recorders = (update: Recorder(), main: Recorder(), writer: Recorder())
        let observations = [recorders.update.observe(update), recorders.main.observe(main), recorders.writer.observe(writer)]
        defer { observations.forEach { $0.cancel() } }
        let dee = try update.performAndWait {
            let dee = try Fixture.make(update, "Employee", ["name": "Dee"])
            try update.existingObject(with: seed.ann).setValue(42, forKey: "age")
            #expect(try update.saveToStore()?.generation == 2)
            return dee.objectID
        }
        container.waitForPendingMerges()
        let saved = Self.changed(inserted: [dee], updated: [seed.ann])
        // The update context saw its save reach the store; main and the writer each report the
        // saved objects once.
        #expect(recorders.update.takeEvents() == [saved, "willSave", Self.didSave(2, inserted: [dee], updated: [seed.ann])])
        #expect(recorders.main.takeEvents() == [saved])
        #expect(recorders.writer.takeEvents() == [saved])
    }

    // MARK: events()

    @Test func theEventsStreamReceivesTheSameEventsAsCallbacks() async throws {
        let (directory, _, seed, coordinator, context) = try Self.rootContext()
        defer { withExtendedLifetime(directory) {} }
        let recorder = Recorder()
        let observation = recorder.observe(context)
        defer { observation.cancel() }
        // One stream read after the fact (events are buffered), one consumed concurrently.
        let buffered = context.events()
        let collector = Collector()
        let live = context.events()
        let consumer = Task {
            for await event in live {
                await collector.append(event)
                if await collector.count == 6 { break }
            }
        }
        let dee = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            let badge = try context.existingObject(with: seed.badge)
            let dee = try Fixture.make(context, "Employee", ["name": "Dee"])
            try ann.setValue(42, forKey: "age")
            try context.delete(badge)
            try context.save()
            return dee.objectID
        }
        try context.performAndWait { () throws -> Void in
            try context.existingObject(with: seed.bob).setValue(36, forKey: "age")
        }
        try context.performAndWait { () throws -> Void in
            try context.refresh(try context.existingObject(with: seed.bob), mergeChanges: false)
            context.reset()
        }
        let expected = recorder.takeEvents()
        #expect(expected == [
            Self.changed(inserted: [dee], updated: [seed.ann], deleted: [seed.badge]),
            "willSave",
            Self.didSave(2, inserted: [dee], updated: [seed.ann], deleted: [seed.badge]),
            Self.changed(updated: [seed.bob]),
            Self.changed(refreshed: [seed.bob]),
            "reload reset",
        ])

        var received: [String] = []
        for await event in buffered {
            received.append(Self.describe(event))
            if received.count == expected.count { break }
        }
        #expect(received == expected)
        await consumer.value
        #expect(await collector.events == expected)
        #expect(try coordinator.metadata().generation == 2)
    }

    @Test func aCancelledObservationReceivesNothingMore() async throws {
        let (directory, _, seed, _, context) = try Self.rootContext()
        defer { withExtendedLifetime(directory) {} }
        let bob = try context.performAndWait { try context.existingObject(with: seed.bob) }
        func touch(_ age: Int) throws { try context.performAndWait { try bob.setValue(age, forKey: "age") } }

        // Cancelled.
        let recorder = Recorder()
        let observation = recorder.observe(context)
        try touch(36)
        #expect(recorder.count == 1)
        observation.cancel()
        try touch(37)
        #expect(recorder.count == 1)
        observation.cancel()                                      // twice is harmless

        // Released.
        let released = Recorder()
        try withExtendedLifetime(released.observe(context)) { _ in
            try touch(38)
            #expect(released.count == 1)
        }
        try touch(39)
        #expect(released.count == 1)

        // A stream whose consuming task is cancelled ends and is unregistered; another stream
        // of the same context stays registered and keeps receiving. (Mutations this fails: the
        // stream's onTermination not removing it — `streams` keeps two; removing every stream
        // when one ends — the live one misses touch 41.)
        let collector = Collector(), live = Collector()
        let stream = context.events(), liveStream = context.events()
        let consumer = Task {
            for await event in stream { await collector.append(event) }
        }
        let liveConsumer = Task {
            for await event in liveStream { await live.append(event) }
        }
        try touch(40)
        try await Self.eventually {
            let (one, other) = (await collector.count, await live.count)
            return one == 1 && other == 1
        }
        #expect(context.listeners.withLock { $0.streams.count } == 2)
        consumer.cancel()
        await consumer.value
        #expect(context.listeners.withLock { $0.streams.count == 1 && $0.callbacks.isEmpty })
        try touch(41)
        try await Self.eventually { await live.count == 2 }
        #expect(await live.events == [Self.changed(updated: [seed.bob]), Self.changed(updated: [seed.bob])])
        liveConsumer.cancel()
        await liveConsumer.value
        #expect(context.listeners.withLock { $0.streams.isEmpty && $0.callbacks.isEmpty })
        #expect(recorder.count == 1 && released.count == 1)
    }

    // MARK: Merging other contexts' saves

    @Test func aBackgroundSaveIsMergedIntoTheWriterAndMain() throws {
        let (directory, url, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // Main holds Ann (clean), Bob (with a pending name) and Ann's badge; the writer holds Ann.
        let (ann, bob, badge) = try main.performAndWait {
            // Main's pending change saves on top of the merged row under a policy that keeps
            // its properties (under `.error` its save would meet the merged save as a conflict).
            main.mergePolicy = .inMemoryWinsPerProperty
            let bob = try main.existingObject(with: seed.bob)
            try bob.setValue("Robert", forKey: "name")
            return (try main.existingObject(with: seed.ann), bob, try main.existingObject(with: seed.badge))
        }
        let writerAnn = try writer.performAndWait { try writer.existingObject(with: seed.ann) }
        let recorders = (main: Recorder(), writer: Recorder())
        let observations = [recorders.main.observe(main), recorders.writer.observe(writer)]
        defer { observations.forEach { $0.cancel() } }

        let background = container.newBackgroundContext()
        let dee = try background.performAndWait {
            let ann = try background.existingObject(with: seed.ann)
            try ann.setValue(42, forKey: "age")
            try background.existingObject(with: seed.bob).setValue(36, forKey: "age")
            try background.delete(try background.existingObject(with: seed.badge))   // Ann loses it too
            try background.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title")
            let dee = try Fixture.make(background, "Employee", ["name": "Dee"])
            #expect(try background.save()?.generation == 2)
            return dee.objectID
        }
        container.waitForPendingMerges()
        coordinator.resetStatistics()
        try main.performAndWait { () throws -> Void in
            // The clean object took the saved values, without SQL.
            #expect(!ann.isFault)
            #expect(try Self.age(ann) == 42)
            #expect(try ann.value(forKey: "badge") == nil)
            // The changed object kept its change and took the rest.
            #expect(try bob.value(forKey: "name") as? String == "Robert")
            #expect(try Self.age(bob) == 36)
            #expect(bob.isUpdated && main.hasChanges)
            #expect(Set(main.updatedObjects) == [bob])
            // The deleted object left main.
            #expect(badge.managedObjectContext == nil)
            #expect(main.registered[seed.badge] == nil)
        }
        try writer.performAndWait { () throws -> Void in
            #expect(try Self.age(writerAnn) == 42)
            #expect(!writer.hasChanges)
        }
        #expect(coordinator.statistics.totalExecuted == 0)

        // One objects-did-change each, naming every saved ID, registered or not.
        let expected = Self.changed(inserted: [dee], updated: [seed.ann, seed.bob, seed.gemini], deleted: [seed.badge])
        let mainEntries = recorders.main.take()
        #expect(mainEntries.map { Self.describe($0.event) } == [expected])
        #expect(mainEntries.first?.objects == [seed.ann: ObjectIdentifier(ann), seed.bob: ObjectIdentifier(bob),
                                               seed.badge: ObjectIdentifier(badge)])
        let mainEntriesOnQueue = mainEntries.allSatisfy(\.onQueue)
        #expect(mainEntriesOnQueue)
        let writerEntries = recorders.writer.take()
        #expect(writerEntries.map { Self.describe($0.event) } == [expected])
        #expect(writerEntries.first?.objects == [seed.ann: ObjectIdentifier(writerAnn)])

        // New objects are visible; main's pending change saves on top (its policy keeps its properties).
        try main.performAndWait { () throws -> Void in
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
                    == [seed.ann, seed.cy, dee, seed.bob])
            #expect(try main.saveToStore()?.generation == 3)
        }
        #expect(try Fixture.stored(url, "Employee") { "\(try Self.age($0) ?? 0)" } == ["Ann 42", "Cy 28", "Dee 30", "Robert 36"])
        #expect(try Fixture.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
    }

    @Test func aMergeNamesObjectsWhoseOnlyChangeIsMembership() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        let (sales, tech) = try main.performAndWait {
            let sales = try main.existingObject(with: seed.sales)
            let tech = try main.existingObject(with: seed.tech)
            #expect(try Fixture.names(sales.value(forKey: "employees")) == ["Ann", "Bob"])
            #expect(try Fixture.names(tech.value(forKey: "employees")) == ["Cy"])
            return (sales, tech)
        }
        let recorder = Recorder()
        let observation = recorder.observe(main)
        defer { observation.cancel() }
        let background = container.newBackgroundContext()
        let backgroundRecorder = Recorder()
        let backgroundObservation = backgroundRecorder.observe(background)
        defer { backgroundObservation.cancel() }
        try background.performAndWait { () throws -> Void in
            let bob = try background.existingObject(with: seed.bob)
            try bob.setValue(try background.existingObject(with: seed.tech), forKey: "department")    // Sales and Tech change membership only
            #expect(Set(background.updatedObjects.map(\.objectID)) == [seed.bob, seed.sales, seed.tech])
            try background.save()
        }
        container.waitForPendingMerges()
        try main.performAndWait { () throws -> Void in
            #expect(try Fixture.names(sales.value(forKey: "employees")) == ["Ann"])
            #expect(try Fixture.names(tech.value(forKey: "employees")) == ["Bob", "Cy"])
        }
        // What the saving context called updated, its didSave and the merge report call updated too.
        #expect(backgroundRecorder.takeEvents().last == Self.didSave(2, updated: [seed.bob, seed.sales, seed.tech]))
        #expect(recorder.takeEvents() == [Self.changed(updated: [seed.bob, seed.sales, seed.tech])])
    }

    @Test func mergeChangesFromADidSaveCapturedFromAnEvent() throws {
        let (directory, url, seed, coordinator, first) = try Self.rootContext()
        defer { withExtendedLifetime(directory) {} }
        let second = coordinator.newContext(name: "second")
        #expect(!second.automaticallyMergesChangesFromParent)
        let (ann, bob, badge) = try second.performAndWait {
            // As above: the pending change saves on top of the merged row under this policy.
            second.mergePolicy = .inMemoryWinsPerProperty
            let bob = try second.existingObject(with: seed.bob)
            try bob.setValue("Robert", forKey: "name")
            return (try second.existingObject(with: seed.ann), bob, try second.existingObject(with: seed.badge))
        }
        let captured = Mutex<DidSave?>(nil)
        let capture = first.addObserver { notification in
            if case .didSave(let save) = notification.event { captured.withLock { $0 = save } }
        }
        defer { capture.cancel() }
        let dee = try first.performAndWait {
            try first.existingObject(with: seed.ann).setValue(42, forKey: "age")
            try first.existingObject(with: seed.bob).setValue(36, forKey: "age")
            try first.delete(try first.existingObject(with: seed.badge))
            let dee = try Fixture.make(first, "Employee", ["name": "Dee"])
            try first.save()
            return dee.objectID
        }
        let save = try #require(captured.withLock { $0 })
        #expect(save.generation == 2)
        #expect(save.inserted == [dee] && save.updated == [seed.ann, seed.bob] && save.deleted == [seed.badge])

        let recorder = Recorder()
        let observation = recorder.observe(second)
        defer { observation.cancel() }
        try second.performAndWait { () throws -> Void in
            // Nothing merged by itself.
            #expect(try Self.age(ann) == 41)
            #expect(badge.managedObjectContext === second)
            coordinator.resetStatistics()
            second.mergeChanges(from: save)
            #expect(try Self.age(ann) == 42)
            #expect(try bob.value(forKey: "name") as? String == "Robert")
            #expect(try Self.age(bob) == 36)
            #expect(badge.managedObjectContext == nil)
            #expect(try ann.value(forKey: "badge") == nil)
            #expect(coordinator.statistics.totalExecuted == 0)
            // Bob's change saves over the merged row: his name, their age.
            #expect(try second.save()?.generation == 3)
        }
        #expect(recorder.takeEvents().first == Self.changed(inserted: [dee], updated: [seed.ann, seed.bob], deleted: [seed.badge]))
        #expect(try Fixture.stored(url, "Employee") { "\(try Self.age($0) ?? 0)" } == ["Ann 42", "Cy 28", "Dee 30", "Robert 36"])
    }
}
