import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The typed to-one setter (which goes straight to the context, without `setValue`'s `Any`) keeps
/// inverses in step as `setValue` does; after a save, to-manys that only gained members are read
/// again on next use (not rebuilt), and loaded ones take their changes in place. Either way a
/// read after the save gives the members the save left, at every level of the chain.
@Suite struct ToManyAfterSaveTests {
    static func names(_ value: Any?) -> [String] {
        ((value as? Set<ManagedObject>) ?? []).map { ($0[attribute: "name"] as String?) ?? "?" }.sorted()
    }

    @Test func theTypedToOneSetterKeepsInversesInStep() throws {
        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            let sales = try context.insert("Department"), tech = try context.insert("Department")
            sales[attribute: "name"] = "Sales"
            tech[attribute: "name"] = "Tech"
            var people: [ManagedObject] = []
            for name in ["Ann", "Bob", "Cid"] {
                let person = try context.insert("Employee")
                person[attribute: "name"] = name
                person[toOne: "department"] = sales
                people.append(person)
            }
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann", "Bob", "Cid"])
            people[1][toOne: "department"] = tech
            people[2][toOne: "department"] = nil as ManagedObject?
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann"])
            #expect(Self.names(try tech.value(forKey: "employees")) == ["Bob"])
            #expect((people[1][toOne: "department"] as ManagedObject?) === tech)
            #expect((people[2][toOne: "department"] as ManagedObject?) == nil)
        }
    }

    @Test func toManysThatOnlyGainedMembersAreReadAgainAfterASave() throws {
        let store = try TestStore()
        let statements = Locked(0)
        let main = store.context
        let child = main.newChildContext(name: "update")
        var salesID: ObjectID?
        try child.performAndWait {
            let sales = try child.insert("Department")
            sales[attribute: "name"] = "Sales"
            for name in ["Ann", "Bob"] {
                let person = try child.insert("Employee")
                person[attribute: "name"] = name
                person[toOne: "department"] = sales
            }
            salesID = sales.objectID
            try child.save()
            // Unloaded by the save (it only gained members): read again from the parent.
            #expect(sales.toMany[0].committed == nil)
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann", "Bob"])
            try child.saveToStore()
            store.coordinator.setTrace { sql in if sql.contains("SELECT") { statements.withLock { $0 += 1 } } }
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann", "Bob"])
            // Loaded again: a second read asks nobody.
            let before = statements.withLock { $0 }
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann", "Bob"])
            #expect(statements.withLock { $0 } == before)
            store.coordinator.setTrace(nil)
        }
        // A context that never saw the objects reads the same from the store.
        let other = store.coordinator.newContext()
        try other.performAndWait {
            let employees = try other.existingObject(with: salesID!).value(forKey: "employees")
            #expect(Self.names(employees) == ["Ann", "Bob"])
        }
    }

    @Test func aLoadedToManyTakesRemovalsAndAdditionsInPlace() throws {
        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            let sales = try context.insert("Department")
            sales[attribute: "name"] = "Sales"
            var people: [String: ManagedObject] = [:]
            for name in ["Ann", "Bob", "Cid"] {
                let person = try context.insert("Employee")
                person[attribute: "name"] = name
                if name != "Cid" { person[toOne: "department"] = sales }
                people[name] = person
            }
            try context.save()
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Ann", "Bob"])   // loads the set
            people["Ann"]![toOne: "department"] = nil as ManagedObject?
            people["Cid"]![toOne: "department"] = sales
            try context.save()
            // The set had members and lost one: changed in place, still loaded.
            #expect(sales.toMany[0].committed == [people["Bob"]!.objectID.primaryKey, people["Cid"]!.objectID.primaryKey])
            #expect(Self.names(try sales.value(forKey: "employees")) == ["Bob", "Cid"])
        }
        let other = store.coordinator.newContext()
        try other.performAndWait {
            let employees = try other.fetch(FetchRequest(entityName: "Department")).first?.value(forKey: "employees")
            #expect(Self.names(employees) == ["Bob", "Cid"])
        }
    }

    @Test func theTypedToOneSetterStopsOnAWrongEntityOrAnotherContext() async {
        // Folders this process removes: a child stopped by the precondition runs no deinitializer.
        let (first, second) = (TemporaryDirectory(), TemporaryDirectory())
        await #expect(processExitsWith: .failure) { [folder = first.url as URL] in
            let store = try TestStore(directory: TemporaryDirectory(existing: folder))
            try store.context.performAndWait {
                let person = try store.context.insert("Employee")
                person[toOne: "department"] = try store.context.insert("Project")
            }
        }
        await #expect(processExitsWith: .failure) { [folder = second.url as URL] in
            let store = try TestStore(directory: TemporaryDirectory(existing: folder))
            let other = store.coordinator.newContext()
            let foreign = try other.performAndWait { try other.insert("Department") }
            try store.context.performAndWait {
                let person = try store.context.insert("Employee")
                person[toOne: "department"] = foreign
            }
        }
    }
}
