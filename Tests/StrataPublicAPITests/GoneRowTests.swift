import Foundation
import Testing
import Strata

@Entity final class Region: ManagedObject {
    var name: String
    @Relationship(inverse: \Journey.region) var journeys: Set<Journey> = []
}

@Entity final class Journey: ManagedObject {
    var name: String
    var region: Region?
}

@Entity final class Depot: ManagedObject {
    var name: String
    @Relationship(inverse: \Truck.depot, deleteRule: .deny) var trucks: Set<Truck> = []
}

@Entity final class Truck: ManagedObject {
    var plate: String
    var depot: Depot?
}

/// One rule for a row gone elsewhere, on every route (a batch delete, a background context's
/// save, another coordinator): its object leaves the context and every relationship that names
/// it lets go — also a new object's pending to-one. And no commit leaves a key to a row that is
/// gone: a delete reaches rows saved elsewhere after the deleting context applied its rules.
@Suite struct GoneRowTests {
    static func model() throws -> Model {
        try Model(version: "1", types: [Region.self, Journey.self, Depot.self, Truck.self])
    }

    /// These tests choose when the app hears of another coordinator (processExternalChanges()):
    /// it does not follow other connections by itself.
    static var notFollowing: StoreOptions {
        var options = StoreOptions()
        options.history.followsOtherConnections = false
        return options
    }

    final class Recorder: FetchedResultsControllerDelegate {
        var events: [FetchedResultsEvent] = []
        func controller(_ controller: FetchedResultsController<Journey>, didReport event: FetchedResultsEvent) { events.append(event) }
        var updates: [ObjectID] {
            events.flatMap { event -> [ObjectID] in
                guard case .changes(let changes) = event else { return [] }
                return changes.objects.compactMap { if case .update(let id, _, _) = $0 { id } else { nil } }
            }
        }
    }

    static let sort = [SortDescriptor(\Journey.region?.name), SortDescriptor(\Journey.name)]

    /// Regions "north" and "south", a saved journey "a" in the south; returns north's ID.
    static func seed(_ main: ManagedObjectContext) throws -> ObjectID {
        try main.performAndWait {
            let north = try main.insert(Region.self)
            north.name = "north"
            let south = try main.insert(Region.self)
            south.name = "south"
            let a = try main.insert(Journey.self)
            a.name = "a"
            a.region = south
            try main.saveToStore()
            return north.objectID
        }
    }

    /// The controller's objects against Foundation's own sort of the same objects, and the
    /// section names against the objects' own `region?.name`.
    static func checkAgainstFoundation(_ controller: FetchedResultsController<Journey>, _ context: ManagedObjectContext) throws {
        try context.performAndWait {
            let objects = try #require(try controller.fetchedObjects)
            #expect(objects.map(\.name) == objects.sorted(using: sort).map(\.name))
            #expect(objects.map(\.name) == (try context.fetch(FetchRequest<Journey>(sortBy: sort))).map(\.name))
            var names: [String] = []
            for name in objects.map({ $0.region?.name ?? "" }) where names.last != name { names.append(name) }
            #expect(controller.sections?.map(\.name) == names)
        }
    }

    /// Issue 39, situation 2: the batch delete of a region that an unsaved new journey points at.
    @Test(arguments: ["batch delete", "background save", "another coordinator"])
    func aPendingToOneToARowDeletedElsewhereBecomesNil(route: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-gone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let container = try PersistentContainer(model: try Self.model(), url: url, options: Self.notFollowing)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let northID = try Self.seed(main)
        let controller = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: main, sectionBy: \.region?.name)
        let recorder = Recorder()
        let child = container.newUpdateContext()
        let jID: ObjectID = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            let j = try main.insert(Journey.self)
            j.name = "j"
            j.region = try main.existingObject(with: northID, as: Region.self)
            main.processPendingChanges()
            return j.objectID
        }
        // A child of main has read j (pointing at north) before the delete.
        try child.performAndWait {
            let j = try child.existingObject(with: jID, as: Journey.self)
            #expect(j.region?.name == "north")
        }
        switch route {
        case "batch delete":
            try container.coordinator.execute(BatchDeleteRequest(Region.self, objectIDs: [northID]))
        case "background save":
            let background = container.newBackgroundContext()
            try background.performAndWait {
                try background.delete(try background.existingObject(with: northID))
                try background.save()
            }
        default:
            let other = try StoreCoordinator(model: try Self.model(), url: url, options: Self.notFollowing)
            let elsewhere = other.newContext()
            try elsewhere.performAndWait {
                try elsewhere.delete(try elsewhere.existingObject(with: northID))
                try elsewhere.save()
            }
            other.close()
            try container.coordinator.processExternalChanges()
        }
        // The merges are queued on each context: let them run, parents first.
        container.writerContext.performAndWait {}
        main.performAndWait {}
        child.performAndWait {}
        try main.performAndWait {
            let j = try main.existingObject(with: jID, as: Journey.self)
            #expect(j.region == nil, "j's region is gone")
            #expect(!j.isDeleted && j.isInserted)
            #expect(throws: ObjectError.objectNotFound(northID)) { _ = try main.existingObject(with: northID) }
        }
        try child.performAndWait {
            let j = try child.existingObject(with: jID, as: Journey.self)
            #expect(j.region == nil, "the child reads j without its region too")
        }
        try Self.checkAgainstFoundation(controller, main)
        // j saves without a region; the store holds no key to a gone row.
        try main.performAndWait { try main.saveToStore() }
        try Self.checkAgainstFoundation(controller, main)
        let fresh = try PersistentContainer(model: try Self.model(), url: url, options: Self.notFollowing)
        defer { fresh.coordinator.close() }
        try fresh.mainContext.performAndWait {
            let journeys = try fresh.mainContext.fetch(FetchRequest<Journey>(sortBy: Self.sort))
            #expect(journeys.map(\.name) == ["j", "a"])
            #expect(journeys.map { $0.region?.name } == [nil, "south"])
        }
    }

    /// Issue 39, situation 3, as issue 46 (point 9) settled it: main deletes a region (unsaved);
    /// then another context (or a batch insert) saves a journey pointing at it. When main hears
    /// of the journey, the region's delete rule (nullify) reaches it in that merge: main's save
    /// writes the delete and the journey without a region (0.1.0 committed the delete and left the
    /// journey's key to a gone row; 0.3.0 refused the save). A save made before main heard of the
    /// journey is refused, naming both rows (``aDeleteThatHasNotHeardOfANewcomerIsRefused()``).
    @Test(arguments: ["background save", "batch insert"])
    func aDeleteReachesRowsSavedElsewhereAfterIt(route: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-gone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let container = try PersistentContainer(model: try Self.model(), url: url, options: Self.notFollowing)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let northID = try Self.seed(main)
        let controller = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: main, sectionBy: \.region?.name)
        let recorder = Recorder()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            try main.delete(try main.existingObject(with: northID))
        }
        let xID: ObjectID
        switch route {
        case "background save":
            let background = container.newBackgroundContext()
            xID = try background.performAndWait {
                let x = try background.insert(Journey.self)
                x.name = "x"
                x.region = try background.existingObject(with: northID, as: Region.self)
                try background.save()
                return x.objectID
            }
        default:
            let result = try container.coordinator.execute(BatchInsertRequest(Journey.self, count: 1) { _, row in
                try row.set(\.name, "x")
                try row.set(\.region, northID)
            })
            xID = try #require(result.objectIDs.first)
        }
        container.writerContext.performAndWait {}
        main.performAndWait {}
        try main.performAndWait {
            let x = try main.existingObject(with: xID, as: Journey.self)
            #expect(x.region == nil, "the pending delete's nullify reached x")
            #expect(x.isUpdated)
        }
        try Self.checkAgainstFoundation(controller, main)
        try main.performAndWait { try main.saveToStore() }
        container.writerContext.performAndWait {}
        main.performAndWait {}
        try Self.checkAgainstFoundation(controller, main)
        try main.performAndWait {
            let names = try #require(try controller.fetchedObjects).map { "\($0.name):\($0.region?.name ?? "-")" }
            #expect(names == ["x:-", "a:south"])
        }
        let fresh = try PersistentContainer(model: try Self.model(), url: url, options: Self.notFollowing)
        defer { fresh.coordinator.close() }
        try fresh.mainContext.performAndWait {
            let regions = try fresh.mainContext.fetch(FetchRequest<Region>(sortBy: [SortDescriptor(\.name)]))
            #expect(regions.map(\.name) == ["south"])
            let journeys = try fresh.mainContext.fetch(FetchRequest<Journey>(sortBy: Self.sort))
            #expect(journeys.map { "\($0.name):\($0.region?.name ?? "-")" } == ["x:-", "a:south"])
            // No key names a row that is gone: every journey with a region key reads it.
            for journey in journeys { try journey.region?.load() }
        }
    }

    /// Main deletes a region and saves before it hears of a journey another context saved at
    /// that region (all in one block of main, so the merge waits behind it): the commit finds
    /// the journey and refuses the save, naming both rows; nothing is written. Rolling back and
    /// deleting again, once main has heard of the journey, nullifies it.
    @Test func aDeleteThatHasNotHeardOfANewcomerIsRefused() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        let northID = try Self.seed(main)
        let background = container.newBackgroundContext()
        let generation = try container.coordinator.metadata().generation
        let (xID, error) = try main.performAndWait {
            let xID: ObjectID = try background.performAndWait {
                let x = try background.insert(Journey.self)
                x.name = "x"
                x.region = try background.existingObject(with: northID, as: Region.self)
                try background.save()
                return x.objectID
            }
            try main.delete(try main.existingObject(with: northID))
            let error = try #require(throws: MergeConflictError.self) { try main.saveToStore() }
            return (xID, error)
        }
        #expect(error.conflicts.contains { $0.objectID == northID && $0.theirs == .referenced(by: xID) }, "\(error)")
        #expect(try container.coordinator.metadata().generation == generation + 1, "a refused save writes nothing")
        container.writerContext.performAndWait {}
        try main.performAndWait {
            main.rollback()
            try main.delete(try main.existingObject(with: northID))
            try main.saveToStore()
            #expect(try main.existingObject(with: xID, as: Journey.self).region == nil)
        }
    }

    /// Under deny, a truck saved elsewhere at the depot main deleted refuses main's save, naming
    /// both rows; main keeps its delete, and the store is untouched.
    @Test func denyRefusesADeleteThatRowsSavedElsewhereStillName() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        let background = container.newBackgroundContext()
        // All in one block of main: main reads the depot's (empty) trucks, a background context
        // saves a truck at the depot, and main deletes the depot and saves before it hears of
        // the truck — validation passes on what main knew; the commit finds the truck.
        let (depotID, truckID, error) = try main.performAndWait {
            let depot = try main.insert(Depot.self)
            depot.name = "d"
            try main.saveToStore()
            #expect(depot.trucks.isEmpty)
            let depotID = depot.objectID
            let truckID: ObjectID = try background.performAndWait {
                let truck = try background.insert(Truck.self)
                truck.plate = "T1"
                truck.depot = try background.existingObject(with: depotID, as: Depot.self)
                try background.save()
                return truck.objectID
            }
            try main.delete(depot)
            let error = try #require(throws: MergeConflictError.self) { try main.saveToStore() }
            return (depotID, truckID, error)
        }
        #expect(error.conflicts.contains { $0.objectID == depotID && $0.theirs == .referenced(by: truckID) }, "\(error)")
        #expect("\(error)".contains("\(truckID)") && "\(error)".contains("\(depotID)"))
        main.performAndWait { #expect(main.deletedObjects.map(\.objectID) == [depotID], "main keeps its delete") }
        try background.performAndWait {
            let truck = try background.existingObject(with: truckID, as: Truck.self)
            #expect(truck.depot?.name == "d", "the store is untouched")
        }
    }

    /// Records, at each report, the values every listed journey shows, so that each reported
    /// update can be checked against a real change of the row's values.
    final class ValueRecorder: FetchedResultsControllerDelegate {
        var last: [ObjectID: String] = [:]
        var spurious: [ObjectID] = []
        var updates = 0
        func values(_ controller: FetchedResultsController<Journey>) -> [ObjectID: String] {
            var values: [ObjectID: String] = [:]
            for journey in (try? controller.fetchedObjects) ?? [] { values[journey.objectID] = "\(journey.name)|\(journey.region?.name ?? "-")" }
            return values
        }
        func controller(_ controller: FetchedResultsController<Journey>, didReport event: FetchedResultsEvent) {
            let now = values(controller)
            if case .changes(let changes) = event {
                for case .update(let id, _, _) in changes.objects {
                    updates += 1
                    if last[id] == now[id] { spurious.append(id) }
                }
            }
            last = now
        }
    }

    /// Issue 39, situation 4: an update context's save refused by a conflict (its new journey
    /// names a region a batch request deleted), then rolled back, while main holds changes of
    /// its own (so the save goes level by level): every update main's list reports is a real
    /// change of the row's values.
    @Test func aRefusedSaveThenRollbackReportsNoUpdateOfUnchangedRows() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        let northID = try Self.seed(main)
        let controller = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: main, sectionBy: \.region?.name)
        let recorder = ValueRecorder()
        try main.performAndWait {
            for name in ["b", "c", "d"] {
                let journey = try main.insert(Journey.self)
                journey.name = name
                journey.region = try main.existingObject(with: northID, as: Region.self)
            }
            try main.saveToStore()
            try controller.performFetch()
            controller.delegate = recorder
            recorder.last = recorder.values(controller)
            // A change of main's own, unsaved.
            try #require(try controller.fetchedObjects?.first { $0.name == "c" }).name = "c2"
            main.processPendingChanges()
        }
        let update = container.newUpdateContext()
        // A list on the update context too: its save is the one refused.
        let updateList = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: update, sectionBy: \.region?.name)
        let updateRecorder = ValueRecorder()
        try update.performAndWait {
            try updateList.performFetch()
            updateList.delegate = updateRecorder
            updateRecorder.last = updateRecorder.values(updateList)
        }
        let background = container.newBackgroundContext()
        for round in 0..<3 {
            let regionID: ObjectID = try background.performAndWait {
                let region = try background.insert(Region.self)
                region.name = "s\(round)"
                try background.save()
                return region.objectID
            }
            container.writerContext.performAndWait {}
            main.performAndWait {}
            try update.performAndWait {
                for journey in try update.fetch(FetchRequest<Journey>(sortBy: Self.sort)) where journey.name != "j" {
                    journey.name = journey.name + "!"
                }
                let j = try update.insert(Journey.self)
                j.name = "j\(round)"
                let region = try update.insert(Region.self)
                region.name = "r\(round)"
                j.region = try update.existingObject(with: regionID, as: Region.self)
                // South goes before the save reaches the store: the save is refused.
                try container.coordinator.execute(BatchDeleteRequest(Region.self, objectIDs: [j.region!.objectID]))
                #expect(throws: (any Error).self) { try update.saveToStore() }
                update.rollback()
            }
            container.writerContext.performAndWait {}
            main.performAndWait {}
            update.performAndWait {}
            main.performAndWait {}
            _ = northID
        }
        #expect(recorder.spurious.isEmpty, "main: updates reported for rows whose values did not change: \(recorder.spurious) of \(recorder.updates)")
        #expect(updateRecorder.spurious.isEmpty, "update: updates reported for rows whose values did not change: \(updateRecorder.spurious) of \(updateRecorder.updates)")
        #expect(recorder.updates > 0 && updateRecorder.updates > 0)
        try Self.checkAgainstFoundation(controller, main)
    }

    /// Issue 39, situation 4, level by level: main holds an edit of its own, so an update
    /// context's `saveToStore()` pushes into main, main into the writer, and the writer's commit
    /// is refused by a conflict (another coordinator changed main's edited row; the writer's
    /// policy is `.error`); everything is put back and the update context rolls back. Every
    /// update main's list reports is a real change of what it shows: the put-back reports the
    /// pushed row going back, not main's own edit, which never changed.
    @Test func aRefusedLevelByLevelSaveReportsNoUpdateOfUnchangedRows() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-gone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let container = try PersistentContainer(model: try Self.model(), url: url, options: Self.notFollowing)
        defer { container.coordinator.close() }
        let main = container.mainContext
        _ = try Self.seed(main)
        try main.performAndWait {
            for name in ["b", "c"] {
                let journey = try main.insert(Journey.self)
                journey.name = name
            }
            try main.saveToStore()
        }
        let controller = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: main, sectionBy: \.region?.name)
        let recorder = ValueRecorder()
        let aID: ObjectID = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            recorder.last = recorder.values(controller)
            let a = try #require(try controller.fetchedObjects?.first { $0.name == "a" })
            a.name = "a1"
            main.processPendingChanges()
            return a.objectID
        }
        container.writerContext.performAndWait { container.writerContext.mergePolicy = .error }
        let other = try StoreCoordinator(model: try Self.model(), url: url, options: Self.notFollowing)
        let elsewhere = other.newContext()
        try elsewhere.performAndWait {
            try elsewhere.existingObject(with: aID, as: Journey.self).name = "aX"
            try elsewhere.save()
        }
        other.close()
        let updatesBefore = recorder.updates
        let update = container.newUpdateContext()
        try update.performAndWait {
            let b = try #require(try update.fetch(FetchRequest<Journey>(predicate: #Predicate { $0.name == "b" })).first)
            b.name = "b1"
            #expect(throws: MergeConflictError.self) { try update.saveToStore() }
            update.rollback()
        }
        main.performAndWait {}
        #expect(recorder.updates > updatesBefore, "the push and its put-back are real changes")
        #expect(recorder.spurious.isEmpty, "updates reported for rows whose values did not change: \(recorder.spurious)")
        try main.performAndWait {
            let a = try main.existingObject(with: aID, as: Journey.self)
            #expect(a.name == "a1", "main keeps its edit")
        }
    }

    /// Issue 39, situation 4 as it was found: main holds a new journey pointing at a region that
    /// a batch request deletes (situation 2), and an update context then edits journeys and calls
    /// `saveToStore()`, level by level through main; in 0.1.0 the writer refused main's dangling
    /// key, everything was put back, and the update context rolled back. Every update main's list
    /// reports must be a real change of what it shows.
    @Test func aSaveThroughAMainHoldingAGhostReportsNoUpdateOfUnchangedRows() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        let northID = try Self.seed(main)
        try main.performAndWait {
            for name in ["b", "c"] {
                let journey = try main.insert(Journey.self)
                journey.name = name
                journey.region = try main.existingObject(with: northID, as: Region.self)
            }
            try main.saveToStore()
        }
        let controller = try FetchedResultsController(FetchRequest<Journey>(sortBy: Self.sort), context: main, sectionBy: \.region?.name)
        let recorder = ValueRecorder()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            recorder.last = recorder.values(controller)
            let j = try main.insert(Journey.self)
            j.name = "j"
            j.region = try main.existingObject(with: northID, as: Region.self)
            main.processPendingChanges()
        }
        try container.coordinator.execute(BatchDeleteRequest(Region.self, objectIDs: [northID]))
        container.writerContext.performAndWait {}
        main.performAndWait {}
        let update = container.newUpdateContext()
        for _ in 0..<3 {
            try update.performAndWait {
                for journey in try update.fetch(FetchRequest<Journey>(sortBy: Self.sort)) where !journey.isInserted {
                    journey.name = journey.name + "!"
                }
                do { try update.saveToStore() } catch { update.rollback() }
            }
            container.writerContext.performAndWait {}
            main.performAndWait {}
        }
        #expect(recorder.spurious.isEmpty, "updates reported for rows whose values did not change: \(recorder.spurious) of \(recorder.updates)")
        try Self.checkAgainstFoundation(controller, main)
    }
}
