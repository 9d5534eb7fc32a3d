import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Issue 46, point 5: another process's commit reaches exactly the contexts that the same commit
/// made by a sibling context in this process reaches. A root context that merges others' saves
/// (`automaticallyMergesChangesFromParent`) hears both; one that does not hears neither, and its
/// pending edits stay until its save meets the commit (under `MergePolicy.error`, a conflict).
@Suite struct WhoHearsTests {
    enum Route: String, CaseIterable, CustomTestStringConvertible {
        case siblingContext, otherProcess
        var testDescription: String { rawValue }
    }

    /// A store with numbers 1, 2, 3; a root context `target` holding number 2 with a pending
    /// edit; then the route deletes number 2 and updates number 3.
    func run(_ route: Route, merging: Bool) throws -> (target: ManagedObjectContext, held: ManagedObject, other: ManagedObject,
                                                       coordinator: StoreCoordinator, cleanup: () -> Void) {
        let directory = TemporaryDirectory("strata-who-hears")
        let url = directory.file("numbers.sqlite")
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let ids = try TestModels.saveNumbers([1, 2, 3], in: coordinator)
        let target = coordinator.newContext(name: "target")
        target.automaticallyMergesChangesFromParent = merging
        let (held, other) = try target.performAndWait {
            let held = try target.existingObject(with: ids[1])
            try held.setValue("mine", forKey: "label")
            let other = try target.existingObject(with: ids[2])
            _ = try other.value(forKey: "value")
            return (held, other)
        }
        var others: [StoreCoordinator] = []
        switch route {
        case .siblingContext:
            let sibling = coordinator.newContext(name: "sibling")
            try sibling.performAndWait {
                try sibling.delete(try sibling.existingObject(with: ids[1]))
                try sibling.existingObject(with: ids[2]).setValue(Int64(30), forKey: "value")
                try sibling.save()
            }
        case .otherProcess:
            let another = try StoreCoordinator(model: TestModels.numbers(), url: url, options: .notFollowing)
            others.append(another)
            let context = another.newContext()
            let generation = try context.performAndWait {
                try context.delete(try context.existingObject(with: ids[1]))
                try context.existingObject(with: ids[2]).setValue(Int64(30), forKey: "value")
                try context.save()
                return try another.currentHistoryToken().generation
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while coordinator.externalChangeStatistics.generation < generation, ContinuousClock.now < deadline { usleep(500) }
        }
        target.performAndWait {}
        return (target, held, other, coordinator, {
            for other in others { other.close() }
            coordinator.close()
            _ = directory
        })
    }

    @Test(arguments: Route.allCases)
    func aRootThatDoesNotMergeHearsNeitherAndItsSaveMeetsTheCommit(route: Route) throws {
        let (target, held, other, _, cleanup) = try run(route, merging: false)
        defer { cleanup() }
        target.performAndWait {
            // Nothing came in: the pending edit is there, the other object shows what it read.
            #expect(target.hasChanges)
            #expect((try? held.value(forKey: "label")) as? String == "mine")
            #expect((try? other.value(forKey: "value")) as? Int64 == 3)
            #expect(throws: MergeConflictError.self) { try target.save() }
        }
    }

    @Test(arguments: Route.allCases)
    func aMergingRootHearsBothTheSameWay(route: Route) throws {
        let (target, held, other, _, cleanup) = try run(route, merging: true)
        defer { cleanup() }
        target.performAndWait {
            // The update was merged. The delete reached it too, but the held object has a
            // pending edit: under the default `.error` it stays, with its edit, and its save
            // meets the delete as a conflict, as it would have without the merge (issue 46,
            // point 5; PolicyRouteTests has every policy and route).
            #expect((try? other.value(forKey: "value")) as? Int64 == 30)
            #expect(target.registeredObjects.contains(held) && (try? held.value(forKey: "label")) as? String == "mine")
            #expect(throws: MergeConflictError.self) { try target.save() }
            // A rollback takes it out: its row is gone.
            target.rollback()
            #expect(!target.registeredObjects.contains(held))
        }
    }
}
