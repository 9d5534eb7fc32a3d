import Foundation
import Testing
import StrataTestSupport
@testable import Strata

@Suite struct RelationshipTests {
    func names(_ objects: Any?) -> [String] {
        ((objects as? Set<ManagedObject>) ?? []).compactMap { try? $0.value(forKey: "name") as? String }.sorted()
    }

    func insert(_ context: ManagedObjectContext, _ entity: String, _ values: [String: Any]) throws -> ManagedObject {
        let object = try context.insert(entity)
        for (key, value) in values { try object.setValue(value, forKey: key) }
        return object
    }

    @Test func oneToManyKeepsBothSidesAndPersists() throws {
        let store = try TestStore()
        let (sales, ann, bob) = try store.context.performAndWait {
            let sales = try insert(store.context, "Department", ["name": "Sales"])
            let tech = try insert(store.context, "Department", ["name": "Tech"])
            let ann = try insert(store.context, "Employee", ["name": "Ann", "department": sales])
            let bob = try insert(store.context, "Employee", ["name": "Bob"])
            try sales.setValue([ann, bob], forKey: "employees")
            #expect(try bob.value(forKey: "department") as? ManagedObject === sales)
            #expect(names(try sales.value(forKey: "employees")) == ["Ann", "Bob"])
            try bob.setValue(tech, forKey: "department")                 // moves Bob
            #expect(names(try sales.value(forKey: "employees")) == ["Ann"])
            #expect(names(try tech.value(forKey: "employees")) == ["Bob"])
            try store.context.save()
            return (sales.objectID, ann.objectID, bob.objectID)
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait {
            let department = try reopened.context.existingObject(with: sales)
            #expect(names(try department.value(forKey: "employees")) == ["Ann"])
            let annObject = try reopened.context.existingObject(with: ann)
            #expect((try annObject.value(forKey: "department") as? ManagedObject)?.objectID == sales)
            let bobDepartment = try reopened.context.existingObject(with: bob).value(forKey: "department") as? ManagedObject
            #expect(try bobDepartment?.value(forKey: "name") as? String == "Tech")
        }
    }

    @Test func manyToManyUsesAJoinTableFromBothSides() throws {
        let store = try TestStore()
        let ids = try store.context.performAndWait {
            let ann = try insert(store.context, "Employee", ["name": "Ann"])
            let bob = try insert(store.context, "Employee", ["name": "Bob"])
            let apollo = try insert(store.context, "Project", ["title": "Apollo"])
            let gemini = try insert(store.context, "Project", ["title": "Gemini"])
            try ann.setValue([apollo, gemini], forKey: "projects")
            try gemini.setValue([ann, bob], forKey: "members")
            try store.context.save()
            try apollo.setValue([bob], forKey: "members")                  // Ann leaves Apollo, Bob joins
            try store.context.save()
            return (ann.objectID, bob.objectID, apollo.objectID, gemini.objectID)
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait { () throws -> Void in
            func titles(_ id: ObjectID) throws -> [String] {
                try (reopened.context.existingObject(with: id).value(forKey: "projects") as? Set<ManagedObject> ?? [])
                    .map { try $0.value(forKey: "title") as? String ?? "" }.sorted()
            }
            #expect(try titles(ids.0) == ["Gemini"])
            #expect(try titles(ids.1) == ["Apollo", "Gemini"])
            #expect(names(try reopened.context.existingObject(with: ids.3).value(forKey: "members")) == ["Ann", "Bob"])
        }
    }

    @Test func oneToOneIsStoredOnBothSidesAndStealingABadgeClearsTheOldOwner() throws {
        let store = try TestStore()
        let (ann, bob, badge) = try store.context.performAndWait {
            let ann = try insert(store.context, "Employee", ["name": "Ann"])
            let bob = try insert(store.context, "Employee", ["name": "Bob"])
            let badge = try insert(store.context, "Badge", ["code": "B-1"])
            try ann.setValue(badge, forKey: "badge")
            try store.context.save()
            try badge.setValue(bob, forKey: "owner")
            #expect(try ann.value(forKey: "badge") == nil)
            try store.context.save()
            return (ann.objectID, bob.objectID, badge.objectID)
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait { () throws -> Void in
            #expect(try reopened.context.existingObject(with: ann).value(forKey: "badge") == nil)
            #expect((try reopened.context.existingObject(with: bob).value(forKey: "badge") as? ManagedObject)?.objectID == badge)
            #expect((try reopened.context.existingObject(with: badge).value(forKey: "owner") as? ManagedObject)?.objectID == bob)
        }
    }

    @Test func deleteRulesNullifyCascadeDenyAndNoAction() throws {
        let store = try TestStore()
        let ids = try store.context.performAndWait {
            let acme = try insert(store.context, "Company", ["name": "Acme"])
            let sales = try insert(store.context, "Department", ["name": "Sales", "company": acme])
            let ann = try insert(store.context, "Employee", ["name": "Ann", "department": sales])
            let bob = try insert(store.context, "Employee", ["name": "Bob", "department": sales])
            let badge = try insert(store.context, "Badge", ["code": "B-1", "owner": ann])
            let apollo = try insert(store.context, "Project", ["title": "Apollo", "members": [ann, bob]])
            let desk = try insert(store.context, "Desk", ["number": 7, "occupants": [bob]])
            try store.context.save()
            return (acme: acme.objectID, sales: sales.objectID, ann: ann.objectID, bob: bob.objectID,
                    badge: badge.objectID, apollo: apollo.objectID, desk: desk.objectID)
        }
        let context = store.context
        try context.performAndWait {
            // deny: a company with departments cannot go.
            try context.delete(context.object(with: ids.acme))
            do {
                try context.save()
                Issue.record("deny rule not enforced")
            } catch let error as ValidationError {
                #expect(error.failures.map(\.rule) == [.deny])
                #expect(error.failures.first?.key == "departments")
                #expect(error.failures.first?.objectID == ids.acme)
            }
            context.rollback()
            #expect(context.hasChanges == false)

            // nullify (badge ↔︎ owner, projects ↔︎ members) when deleting Bob, and noAction from the desk.
            try context.delete(context.object(with: ids.bob))
            #expect(names(try context.object(with: ids.apollo).value(forKey: "members")) == ["Ann"])
            #expect(names(try context.object(with: ids.sales).value(forKey: "employees")) == ["Ann"])
            try context.save()

            try context.delete(context.object(with: ids.desk))            // noAction: Bob is gone anyway; desk row goes
            try context.save()

            // cascade: deleting Sales deletes Ann, and Ann's badge (cascade from employee).
            try context.delete(context.object(with: ids.sales))
            #expect(context.deletedObjects.map(\.objectID).sorted() == [ids.ann, ids.badge, ids.sales].sorted())
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 0)
            #expect(try context.count(for: FetchRequest(entityName: "Badge")) == 0)
            #expect(try context.count(for: FetchRequest(entityName: "Department")) == 0)
            #expect(names(try context.existingObject(with: ids.apollo).value(forKey: "members")) == [])
            // deny no longer applies: the company has no departments.
            try context.delete(context.object(with: ids.acme))
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Company")) == 0)
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait { () throws -> Void in
            #expect(names(try reopened.context.existingObject(with: ids.apollo).value(forKey: "members")) == [])
            #expect(throws: ObjectError.objectNotFound(ids.ann)) { try reopened.context.existingObject(with: ids.ann) }
        }
    }

    @Test func noActionLeavesTheDestinationPointingAtTheDeletedRow() throws {
        let store = try TestStore()
        try store.context.performAndWait {
            let desk = try insert(store.context, "Desk", ["number": 1])
            let ann = try insert(store.context, "Employee", ["name": "Ann", "desk": desk])
            try store.context.save()
            try store.context.delete(desk)
            try store.context.save()
            // Ann still holds the deleted desk's key: following it finds no row (Core Data's noAction).
            let dangling = try #require(try ann.value(forKey: "desk") as? ManagedObject)
            #expect(dangling.objectID == desk.objectID)
            #expect(throws: ObjectError.objectNotFound(desk.objectID)) { try dangling.value(forKey: "number") }
        }
    }
}
