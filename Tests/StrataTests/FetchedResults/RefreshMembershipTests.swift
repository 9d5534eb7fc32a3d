import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A good moved to another category on main, then refreshed without merging (its move
/// discarded), between refreshes of the category that merge: the category's members and a
/// list of "categories with a numbered good" follow, and the save agrees with main.
@Suite struct RefreshMembershipTests {
    @Test func discardingAMoveBetweenMergingRefreshesOfTheCategory() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        let update = container.newUpdateContext()
        let (a, good) = try update.performAndWait { () throws -> (ObjectID, ObjectID) in
            let a = try update.insert("Category"), b = try update.insert("Category")
            try a.setValue("A", forKey: "name")
            try b.setValue("B", forKey: "name")
            let g = try update.insert("Good")
            try g.setValue("g", forKey: "name")
            try g.setValue(Int64(5), forKey: "number")
            try g.setValue(b, forKey: "category")
            try update.saveToStore()
            return (a.objectID, g.objectID)
        }
        let main = container.mainContext
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Category", predicate: try Condition("ANY goods.number > 0"), sortKeys: [.ascending("name")]),
            managedObjectContext: main)
        try main.performAndWait {
            try controller.performFetch()
            let g = try main.existingObject(with: good), categoryA = try main.existingObject(with: a)
            try g.setValue(categoryA, forKey: "category")
            main.processPendingChanges()
            try main.refresh(categoryA, mergeChanges: true)
            try main.refresh(g, mergeChanges: false)
            try main.refresh(categoryA, mergeChanges: true)
            main.processPendingChanges()
            let members = (try categoryA.value(forKey: "goods") as? Set<ManagedObject>)?.map(\.objectID) ?? []
            #expect(members.isEmpty, "A's members after the move was discarded: \(members)")
            #expect(controller.snapshot.objectIDs.map(\.primaryKey) == [2], "\(controller.snapshot.objectIDs)")
            try main.saveToStore()
        }
        let fresh = container.coordinator.newContext()
        let stored = try fresh.performAndWait { try fresh.fetchObjectIDs(controller.fetchRequest) }
        #expect(main.performAndWait { controller.snapshot.objectIDs } == stored)
    }

    /// The same with the category new on main (unsaved): its members are all pending, and the
    /// discarded move must leave them too.
    @Test func discardingAMoveIntoACategoryNewOnMain() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        let update = container.newUpdateContext()
        let good = try update.performAndWait { () throws -> ObjectID in
            let b = try update.insert("Category")
            try b.setValue("B", forKey: "name")
            let g = try update.insert("Good")
            try g.setValue("g", forKey: "name")
            try g.setValue(Int64(5), forKey: "number")
            try g.setValue(b, forKey: "category")
            try update.saveToStore()
            return g.objectID
        }
        let main = container.mainContext
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Category", predicate: try Condition("ANY goods.number > 0"), sortKeys: [.ascending("name")]),
            managedObjectContext: main)
        try main.performAndWait {
            try controller.performFetch()
            let categoryA = try main.insert("Category")
            try categoryA.setValue("A", forKey: "name")
            let g = try main.existingObject(with: good)
            try g.setValue(categoryA, forKey: "category")
            main.processPendingChanges()
            #expect(controller.snapshot.objectIDs.count == 1)
            try main.refresh(g, mergeChanges: false)
            main.processPendingChanges()
            let members = (try categoryA.value(forKey: "goods") as? Set<ManagedObject>)?.map(\.objectID) ?? []
            #expect(members.isEmpty, "A's members after the move was discarded: \(members)")
            #expect(controller.snapshot.objectIDs.count == 1, "\(controller.snapshot.objectIDs)")
            try main.saveToStore()
        }
        let fresh = container.coordinator.newContext()
        let stored = try fresh.performAndWait { try fresh.fetchObjectIDs(controller.fetchRequest) }
        #expect(main.performAndWait { controller.snapshot.objectIDs } == stored)
    }
}
