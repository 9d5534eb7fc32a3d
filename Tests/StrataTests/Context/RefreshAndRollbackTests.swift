import Foundation
import Testing
import StrataTestSupport
@testable import Strata
import Synchronization

/// Throwing changes away (rollback, rollbackToStore, reset) and reading them again (refresh), on
/// real store files. Uses the company fixture of ``ParentChildTests``.
@Suite struct RefreshAndRollbackTests {
    typealias Fixture = ParentChildTests

    /// Records the events a context posts, as the IDs they name.
    final class Changes: Sendable {
        private let events = Mutex<[ContextEvent]>([])

        func observe(_ context: ManagedObjectContext) -> ContextObservation {
            context.addObserver { [self] notification in events.withLock { $0.append(notification.event) } }
        }

        func take() -> [ContextEvent] { events.withLock { events in defer { events = [] }; return events } }

        /// The objects-did-change events taken, in order.
        func takeChanges() -> [ObjectChanges] {
            take().compactMap { if case .objectsDidChange(let changes) = $0 { changes } else { nil } }
        }
    }

    /// A root context on its own coordinator, on a seeded store file.
    static func rootContext(_ url: URL) throws -> (StoreCoordinator, ManagedObjectContext) {
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
        return (coordinator, coordinator.newContext(name: "root"))
    }

    /// Changes a row through a second coordinator on the same file (another process, as far as
    /// the first coordinator can tell).
    static func elsewhere(_ url: URL, _ body: (ManagedObjectContext) throws -> Void) throws {
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "elsewhere")
        try context.performAndWait {
            try body(context)
            try context.save()
        }
    }

    static func age(_ object: ManagedObject) throws -> Int16? { try object.value(forKey: "age") as? Int16 }
    static func name(_ object: ManagedObject) throws -> String? { try object.value(forKey: "name") as? String }

    // MARK: Rollback

    @Test func rollbackOfAChildKeepsTheParentsPendingChanges() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        let dee = try main.performAndWait {
            try main.existingObject(with: seed.bob).setValue(50, forKey: "age")
            return try Fixture.make(main, "Employee", ["name": "Dee", "department": try main.existingObject(with: seed.tech)]).objectID
        }
        let mainBefore = main.performAndWait { Fixture.LevelState(main) }
        let update = container.newUpdateContext()
        let changes = Changes()
        let observation = changes.observe(update)
        defer { observation.cancel() }
        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            #expect(try Self.age(bob) == 50)
            try bob.setValue("Robert", forKey: "name")
            try bob.setValue(51, forKey: "age")
            let eve = try Fixture.make(update, "Employee", ["name": "Eve"])
            try update.delete(try update.existingObject(with: seed.cy))
            let ann = try update.existingObject(with: seed.ann)
            try ann.setValue(try update.existingObject(with: seed.tech), forKey: "department")
            update.processPendingChanges()
            _ = changes.take()

            update.rollback()
            #expect(!update.hasChanges)
            #expect(update.insertedObjects.isEmpty && update.updatedObjects.isEmpty && update.deletedObjects.isEmpty)
            #expect(eve.managedObjectContext == nil)
            #expect(update.registered[eve.objectID] == nil)
            // Back to what the parent holds: its pending values, not the store's.
            #expect(try Self.name(bob) == "Bob")
            #expect(try Self.age(bob) == 50)
            let cy = try update.existingObject(with: seed.cy)
            #expect(!cy.isDeleted && cy.managedObjectContext === update)
            #expect((try ann.value(forKey: "department") as? ManagedObject)?.objectID == seed.sales)
            #expect(try Fixture.names(update.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy", "Dee"])
            #expect(try Fixture.names(update.existingObject(with: seed.sales).value(forKey: "employees")) == ["Ann", "Bob"])
            #expect(try Fixture.names(update.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann", "Cy"])
            #expect(try update.fetchObjectIDs(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
                    == [seed.ann, seed.bob, seed.cy, dee])
            #expect(changes.takeChanges() == [ObjectChanges(
                deleted: [eve.objectID], refreshed: [seed.bob, seed.cy, seed.ann, seed.sales, seed.tech, seed.apollo])])
        }
        #expect(main.performAndWait { Fixture.LevelState(main) } == mainBefore)
        try main.performAndWait { () throws -> Void in
            #expect(try Self.age(main.existingObject(with: seed.bob)) == 50)
            #expect(Set(main.insertedObjects.map(\.objectID)) == [dee])
        }
        #expect(try container.coordinator.metadata().generation == 1)
    }

    @Test func rollbackToStoreDiscardsEveryLevel() throws {
        let (directory, url, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer) = (container.mainContext, container.writerContext)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        let dee = try main.performAndWait {
            let dee = try Fixture.make(main, "Employee", ["name": "Dee", "department": try main.existingObject(with: seed.tech)])
            try main.save()                                                   // pending in the writer
            try main.existingObject(with: seed.bob).setValue(50, forKey: "age")   // pending in main
            return dee.objectID
        }
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            #expect(try Self.age(update.existingObject(with: seed.bob)) == 50)
            #expect(try Self.name(update.existingObject(with: dee)) == "Dee")
            try update.existingObject(with: seed.cy).setValue("Cyrus", forKey: "name")
            _ = try Fixture.make(update, "Project", ["title": "Vostok"])

            update.rollbackToStore()
            #expect(!update.hasChanges)
            #expect(try Self.name(update.existingObject(with: seed.cy)) == "Cy")
        }
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(!context.hasChanges)
                #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty && context.deletedObjects.isEmpty)
            }
        }
        try writer.performAndWait { () throws -> Void in
            #expect(writer.registered[dee] == nil)
            #expect(try writer.existingObject(with: seed.gemini).value(forKey: "title") as? String == "Gemini")
            #expect(throws: ObjectError.objectNotFound(dee)) { try writer.existingObject(with: dee) }
        }
        try main.performAndWait { () throws -> Void in
            #expect(main.registered[dee] == nil)
            #expect(try Self.age(main.existingObject(with: seed.bob)) == 35)
            // (Dee's row is gone everywhere: reading her as a member would throw.)
            #expect((try? Fixture.names(main.existingObject(with: seed.tech).value(forKey: "employees"))) == ["Cy"])
        }
        // The update context no longer shows what its ancestors threw away, even for objects it had
        // read through them.
        try update.performAndWait { () throws -> Void in
            #expect(try Self.age(update.existingObject(with: seed.bob)) == 35)
            #expect(throws: ObjectError.objectNotFound(dee)) { try update.existingObject(with: dee) }
            #expect(try update.fetchObjectIDs(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
                    == [seed.ann, seed.bob, seed.cy])
        }
        #expect(try container.coordinator.metadata().generation == 1)
        #expect(try Fixture.stored(url, "Employee") == ["Ann", "Bob", "Cy"])
        #expect(try Fixture.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini"])
    }

    // MARK: Reset

    @Test func resetPostsReloadResetAndForgetsEveryObject() async throws {
        let directory = TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let (coordinator, context) = try Self.rootContext(url)
        let stream = context.events()
        let changes = Changes()
        let observation = changes.observe(context)
        defer { observation.cancel() }
        let held = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            try ann.setValue("Annie", forKey: "name")
            _ = try Fixture.make(context, "Employee", ["name": "Eve"])
            return ann.objectID
        }
        #expect(changes.take().count == 1)
        try context.performAndWait { () throws -> Void in
            let ann = try context.object(with: held)
            context.reset()
            #expect(ann.managedObjectContext == nil)
            #expect(context.registeredObjects.isEmpty)
            #expect(!context.hasChanges)
            #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty)
        }
        let events = changes.take()
        #expect(events.count == 1)
        if case .reload(let reason)? = events.first { #expect(reason == .reset) } else { Issue.record("expected reload(.reset), got \(events)") }
        // The stream saw the same two events.
        var received: [String] = []
        for await event in stream {
            switch event {
            case .objectsDidChange: received.append("objectsDidChange")
            case .reload(let reason): received.append("reload \(reason.rawValue)")
            default: received.append("\(event)")
            }
            if received.count == 2 { break }
        }
        #expect(received == ["objectsDidChange", "reload reset"])
        // Starting over: a fresh object, the stored values, nothing saved.
        try context.performAndWait { () throws -> Void in
            let ann = try context.existingObject(with: held)
            #expect(try Self.name(ann) == "Ann")
            #expect(try context.fetchObjectIDs(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])) == [seed.ann, seed.bob, seed.cy])
        }
        #expect(try coordinator.metadata().generation == 1)
    }

    @Test func resetOfAChildLeavesTheParentAlone() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        try main.performAndWait { try main.existingObject(with: seed.bob).setValue(50, forKey: "age") }
        let update = container.newUpdateContext()
        let changes = Changes()
        let observation = changes.observe(update)
        defer { observation.cancel() }
        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            try bob.setValue(51, forKey: "age")
            update.processPendingChanges()
            _ = changes.take()
            update.reset()
            #expect(bob.managedObjectContext == nil)
            #expect(!update.hasChanges && update.registeredObjects.isEmpty)
            #expect(try Self.age(update.existingObject(with: seed.bob)) == 50)
        }
        let events = changes.take()
        #expect(events.count == 1)
        if case .reload(.reset)? = events.first {} else { Issue.record("expected reload(.reset), got \(events)") }
        try main.performAndWait { () throws -> Void in
            #expect(Set(main.updatedObjects.map(\.objectID)) == [seed.bob])
            #expect(try Self.age(main.existingObject(with: seed.bob)) == 50)
        }
    }

    // MARK: Refresh

    @Test func refreshWithoutMergingTurnsTheObjectIntoAFaultAndDropsItsChange() throws {
        let directory = TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let (coordinator, context) = try Self.rootContext(url)
        let changes = Changes()
        let observation = changes.observe(context)
        defer { observation.cancel() }
        let ann = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            try ann.setValue("Annie", forKey: "name")
            return ann
        }
        try Self.elsewhere(url) { try $0.existingObject(with: seed.ann).setValue(50, forKey: "age") }
        _ = changes.take()
        try context.performAndWait { () throws -> Void in
            #expect(context.hasChanges)
            try context.refresh(ann, mergeChanges: false)
            #expect(ann.isFault)
            #expect(!ann.hasChanges && !ann.isUpdated)
            #expect(ann.managedObjectContext === context)
            #expect(!context.hasChanges)
            #expect(context.updatedObjects.isEmpty)
            #expect(context.registeredObjects == [ann])
            // Read again on next access: the store's values, the change gone.
            #expect(try Self.name(ann) == "Ann")
            #expect(try Self.age(ann) == 50)
            #expect(!ann.isFault)
            #expect(try context.save() == nil)
        }
        #expect(changes.takeChanges() == [ObjectChanges(refreshed: [seed.ann])])
        #expect(try coordinator.metadata().generation == 2)
    }

    @Test func refreshMergingTakesTheStoresValuesAndKeepsTheLocalChange() throws {
        let directory = TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let (coordinator, context) = try Self.rootContext(url)
        let ann = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            try ann.setValue("Annie", forKey: "name")
            return ann
        }
        // A sibling root context on the same coordinator (not merging automatically) changes the row.
        let sibling = coordinator.newContext(name: "sibling")
        try sibling.performAndWait {
            let row = try sibling.existingObject(with: seed.ann)
            try row.setValue(50, forKey: "age")
            try row.setValue(180.5, forKey: "height")
            #expect(try sibling.save()?.generation == 2)
        }
        let changes = Changes()
        let observation = changes.observe(context)
        defer { observation.cancel() }
        try context.performAndWait { () throws -> Void in
            #expect(try Self.age(ann) == 41)                     // not merged yet
            try context.refresh(ann, mergeChanges: true)
            #expect(!ann.isFault)
            #expect(try Self.name(ann) == "Annie")
            #expect(try Self.age(ann) == 50)
            #expect(try ann.value(forKey: "height") as? Double == 180.5)
            #expect(ann.isUpdated && context.hasChanges)
            #expect(Set(context.updatedObjects) == [ann])
            // The snapshot is the row just read: the save is no conflict.
            #expect(try context.save()?.generation == 3)
        }
        #expect(changes.takeChanges() == [ObjectChanges(refreshed: [seed.ann])])
        #expect(try Fixture.stored(url, "Employee") { "\(try Self.age($0) ?? 0) \(try $0.value(forKey: "height") as? Double ?? 0)" }
                == ["Annie 50 180.5", "Bob 35 170.0", "Cy 28 170.0"])
    }

    @Test func refreshMergingInvalidatesAnObjectWhoseRowWasDeletedElsewhere() throws {
        let directory = TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let (_, context) = try Self.rootContext(url)
        let (bob, cy) = try context.performAndWait {
            let bob = try context.existingObject(with: seed.bob)
            try bob.setValue("Robert", forKey: "name")                 // a pending change does not save it
            return (bob, try context.existingObject(with: seed.cy))
        }
        try Self.elsewhere(url) { other in
            try other.delete(try other.existingObject(with: seed.bob))
            try other.delete(try other.existingObject(with: seed.cy))
        }
        let changes = Changes()
        let observation = changes.observe(context)
        defer { observation.cancel() }
        try context.performAndWait { () throws -> Void in
            try context.refresh(bob, mergeChanges: true)
            #expect(bob.managedObjectContext == nil)
            #expect(!context.registeredObjects.contains(bob))
            #expect(!context.hasChanges)
            #expect(context.updatedObjects.isEmpty)
            #expect(throws: ObjectError.objectNotFound(seed.bob)) { try context.existingObject(with: seed.bob) }
            // Without merging, the object becomes a fault whose row is gone.
            try context.refresh(cy, mergeChanges: false)
            #expect(cy.isFault)
            #expect(throws: ObjectError.objectNotFound(seed.cy)) { try cy.value(forKey: "name") }
        }
        #expect(changes.takeChanges() == [ObjectChanges(invalidated: [seed.bob]), ObjectChanges(refreshed: [seed.cy])])
    }

    @Test func refreshAllObjectsFaultsCleanObjectsAndRereadsChangedOnes() throws {
        let directory = TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let url = directory.file("company.sqlite")
        let seed = try Fixture.seed(url)
        let (coordinator, context) = try Self.rootContext(url)
        let (ann, bob, cy, eve) = try context.performAndWait {
            let ann = try context.existingObject(with: seed.ann)
            let bob = try context.existingObject(with: seed.bob)
            try bob.setValue("Robert", forKey: "name")
            let cy = try context.existingObject(with: seed.cy)
            let eve = try Fixture.make(context, "Employee", ["name": "Eve"])
            return (ann, bob, cy, eve)
        }
        try Self.elsewhere(url) { other in
            try other.existingObject(with: seed.ann).setValue(50, forKey: "age")
            try other.existingObject(with: seed.bob).setValue(60, forKey: "age")
        }
        let changes = Changes()
        let observation = changes.observe(context)
        defer { observation.cancel() }
        try context.performAndWait { () throws -> Void in
            coordinator.resetStatistics()
            try context.refreshAllObjects()
            // Clean objects become faults without I/O; the changed one is re-read (one row).
            #expect(coordinator.statistics.totalExecuted == 1)
            #expect(ann.isFault && cy.isFault)
            #expect(!bob.isFault && !eve.isFault)
            #expect(try Self.name(bob) == "Robert")
            #expect(try Self.age(bob) == 60)
            #expect(bob.isUpdated)
            #expect(eve.isInserted)
            #expect(Set(context.updatedObjects) == [bob] && Set(context.insertedObjects) == [eve])
            #expect(try Self.age(ann) == 50)
            #expect(try Self.age(cy) == 28)
            #expect(try context.save()?.generation == 3)
        }
        #expect(changes.takeChanges() == [ObjectChanges(refreshed: [seed.ann, seed.bob, seed.cy])])
        #expect(try Fixture.stored(url, "Employee") { "\(try Self.age($0) ?? 0)" } == ["Ann 50", "Cy 28", "Eve 30", "Robert 60"])
    }

    @Test func refreshInAChildReadsTheParentsPendingValues() throws {
        let (directory, _, seed, container) = try Fixture.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        try main.performAndWait { try main.existingObject(with: seed.bob).setValue(50, forKey: "age") }
        let update = container.newUpdateContext()
        let bob = try update.performAndWait {
            let bob = try update.existingObject(with: seed.bob)
            #expect(try Self.age(bob) == 50)
            try bob.setValue("Robert", forKey: "name")
            return bob
        }
        try main.performAndWait { try main.existingObject(with: seed.bob).setValue(55, forKey: "age") }
        try update.performAndWait { () throws -> Void in
            #expect(try Self.age(bob) == 50)
            try update.refresh(bob, mergeChanges: true)
            #expect(try Self.name(bob) == "Robert")
            #expect(try Self.age(bob) == 55)
            #expect(bob.isUpdated)
            try update.refresh(bob, mergeChanges: false)
            #expect(bob.isFault && !update.hasChanges)
            #expect(try Self.name(bob) == "Bob")
            #expect(try Self.age(bob) == 55)
        }
        #expect(try container.coordinator.metadata().generation == 1)
    }
}
