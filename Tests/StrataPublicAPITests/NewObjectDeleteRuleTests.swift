import Foundation
import Testing
import Strata

/// A new object (inserted, not yet saved) deleted while others still name it: its deny rule is
/// checked at `delete` — a save would find no row to check it against — and a refused delete
/// changes nothing; without members it leaves no trace. (Found by the controller model test:
/// an update context deleted a new owner that a new item named, and main got an item naming a
/// row that never existed.)
@Suite struct NewObjectDeleteRuleTests {
    @Test func aNewObjectsDenyRuleIsCheckedAtDelete() throws {
        let container = try PersistentContainer(inMemoryWith: try GoneRowTests.model())
        let main = container.mainContext
        try main.performAndWait {
            let depot = try main.insert(Depot.self)
            depot.name = "North"
            let truck = try main.insert(Truck.self)
            truck.plate = "AB-123"
            truck.depot = depot
            do {
                try main.delete(depot)
                Issue.record("a new depot holding a truck was deleted")
            } catch let error as ValidationError {
                #expect(error.failures.map(\.rule) == [.deny])
                #expect("\(error)".contains("trucks"))
            }
            // As it was.
            #expect(depot.isInserted && !depot.isDeleted && truck.depot === depot)
            #expect(main.insertedObjects.count == 2)
            // Once the truck lets go, the new depot goes without a trace, and the save writes the truck alone.
            truck.depot = nil
            try main.delete(depot)
            #expect(main.insertedObjects.count == 1)
            try main.saveToStore()
            #expect(try main.count(for: FetchRequest<Depot>()) == 0)
            #expect(try main.count(for: FetchRequest<Truck>()) == 1)
        }
    }
}
