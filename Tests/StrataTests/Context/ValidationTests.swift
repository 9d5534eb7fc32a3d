import Foundation
import Testing
import StrataTestSupport
@testable import Strata
import StrataSQLite

@Suite struct ValidationTests {
    @Test func aFailedSaveListsEveryFailureAndChangesNothing() throws {
        let store = try TestStore()
        let (keptID, generation) = try store.context.performAndWait {
            let kept = try store.context.insert("Department")
            try kept.setValue("Kept", forKey: "name")
            try store.context.save()
            return (kept.objectID, try store.coordinator.metadata().generation)
        }
        let metadata = try store.coordinator.metadata()
        try store.context.performAndWait {
            let context = store.context
            let kept = try context.existingObject(with: keptID)
            try kept.setValue("A name longer than twenty", forKey: "name")          // maxLength 20
            let bad = try context.insert("Employee")                                  // name required
            try bad.setValue("not an email", forKey: "email")                         // regex
            try bad.setValue(12, forKey: "age")                                       // minValue 16
            let old = try context.insert("Employee")
            try old.setValue("", forKey: "name")                                      // minLength 1
            try old.setValue(120, forKey: "age")                                      // maxValue 99
            store.coordinator.resetStatistics()
            do {
                try context.save()
                Issue.record("save should have failed")
            } catch let error as ValidationError {
                let found = error.failures.map { "\($0.objectID.entityName).\($0.key) \($0.rule)" }.sorted()
                #expect(found == ["Department.name maxLength", "Employee.age maxValue", "Employee.age minValue",
                                  "Employee.email regex", "Employee.name minLength", "Employee.name required"])
                #expect(error.description.contains("\"not an email\" does not match"))
            }
            // Nothing ran, nothing changed: the context keeps every pending value.
            #expect(store.coordinator.statistics.totalExecuted == 0)
            #expect(context.hasChanges)
            #expect(context.insertedObjects.count == 2)
            #expect(try kept.value(forKey: "name") as? String == "A name longer than twenty")
            #expect(try bad.value(forKey: "age") as? Int16 == 12)
            // Fix everything; the same objects save.
            try kept.setValue("Fixed", forKey: "name")
            try bad.setValue("Bad", forKey: "name")
            try bad.setValue("bad.name@example.com", forKey: "email")
            try bad.setValue(40, forKey: "age")
            try old.setValue("Old", forKey: "name")
            try old.setValue(99, forKey: "age")
            #expect(try context.save()?.generation == generation + 1)
        }
        #expect(try store.coordinator.metadata().generation == metadata.generation + 1)
    }

    @Test func aFailedCommitLeavesTheContextAsItWas() throws {
        let store = try TestStore()
        store.coordinator.close()
        var options = StoreOptions()
        options.busyTimeout = .milliseconds(20)
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: store.url, options: options)
        let context = coordinator.newContext()
        try context.performAndWait {
            let department = try context.insert("Department")
            try department.setValue("Ops", forKey: "name")
            // Another connection holds the write lock: BEGIN IMMEDIATE fails with SQLITE_BUSY.
            let blocker = try StrataSQLite.Connection(path: store.url.path)
            defer { blocker.close() }
            try blocker.execute("BEGIN IMMEDIATE")
            do {
                try context.save()
                Issue.record("save should have failed while the store is locked")
            } catch let StoreError.busy(path, timeout) {
                #expect(path == store.url.path && timeout == .milliseconds(20))
            }
            try blocker.execute("ROLLBACK")
            #expect(context.hasChanges)
            #expect(department.isInserted)
            #expect(try department.value(forKey: "name") as? String == "Ops")
            #expect(try coordinator.metadata().generation == 0)
            try context.save()
            #expect(try coordinator.metadata().generation == 1)
        }
    }

    @Test func badKeysAndValuesAreTypedErrors() throws {
        let store = try TestStore()
        try store.context.performAndWait {
            let employee = try store.context.insert("Employee")
            let project = try store.context.insert("Project")
            #expect(throws: ObjectError.unknownKey(entity: "Employee", key: "salary")) { try employee.setValue(1, forKey: "salary") }
            #expect(throws: ObjectError.unknownKey(entity: "Employee", key: "salary")) { try employee.value(forKey: "salary") }
            #expect(throws: ObjectError.wrongType(entity: "Employee", key: "name", expected: "string", actual: "Int")) {
                try employee.setValue(42, forKey: "name")
            }
            #expect(throws: ObjectError.wrongType(entity: "Employee", key: "department", expected: "Department", actual: "ManagedObject")) {
                try employee.setValue(project, forKey: "department")
            }
            #expect(throws: ObjectError.invalidValue(entity: "Employee", key: "height", reason: "NaN cannot be stored (SQLite stores NaN as NULL)")) {
                try employee.setValue(Double.nan, forKey: "height")
            }
            #expect(throws: ObjectError.unknownEntity("Nope")) { try store.context.insert("Nope") }
            #expect(throws: ObjectError.unknownKey(entity: "Employee", key: "salary")) {
                try store.context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("salary")]))
            }
            let other = store.coordinator.newContext()
            let stranger = try other.performAndWait { try other.insert("Department") }
            #expect(throws: ObjectError.objectInAnotherContext(entity: "Employee", key: "department")) {
                try employee.setValue(stranger, forKey: "department")
            }
            #expect(try employee.value(forKey: "height") as? Double == 170)        // default, untouched
        }
    }
}
