import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Saving level by level and in one cascade, and deletes through the chain.
extension ParentChildTests {
    // MARK: 2. Saving level by level

    @Test func updateSaveReachesMainOnlyThenWriterThenTheStore() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "age": 22, "department": try update.existingObject(with: seed.tech)])
            try update.existingObject(with: seed.bob).setValue(36, forKey: "age")
            return eve.objectID
        }
        let bytesBefore = Self.fileBytes(url)
        #expect(bytesBefore[0] != nil)

        // update → main: no statement, store untouched.
        coordinator.resetStatistics()
        try update.performAndWait { () throws -> Void in #expect(try update.save() == nil) }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(Self.fileBytes(url) == bytesBefore)
        #expect(try coordinator.metadata().generation == 1)
        try update.performAndWait { () throws -> Void in
            #expect(!update.hasChanges)
            #expect(try update.existingObject(with: eve).isInserted == false)
        }
        try main.performAndWait { () throws -> Void in
            #expect(main.hasChanges)
            #expect(Set(main.insertedObjects.map(\.objectID)) == [eve])
            #expect(Set(main.updatedObjects.map(\.objectID)) == [seed.bob, seed.tech])
            let object = try main.existingObject(with: eve)
            #expect(object.isInserted)
            #expect(try object.value(forKey: "name") as? String == "Eve")
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 36)
            #expect(try Self.names(main.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy", "Eve"])
        }
        writer.performAndWait { #expect(!writer.hasChanges) }

        // main → writer: no statement, store untouched.
        coordinator.resetStatistics()
        try main.performAndWait { () throws -> Void in #expect(try main.save() == nil) }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(Self.fileBytes(url) == bytesBefore)
        #expect(try coordinator.metadata().generation == 1)
        main.performAndWait { #expect(!main.hasChanges) }
        try writer.performAndWait { () throws -> Void in
            #expect(writer.hasChanges)
            #expect(Set(writer.insertedObjects.map(\.objectID)) == [eve])
            #expect(Set(writer.updatedObjects.map(\.objectID)) == [seed.bob, seed.tech])
            #expect(try writer.existingObject(with: eve).value(forKey: "age") as? Int16 == 22)
            #expect(try writer.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 36)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 35", "Cy 28"])

        // writer → SQLite: one commit, generation + 1.
        let result = try writer.performAndWait { try writer.save() }
        #expect(result?.generation == 2)
        #expect(try coordinator.metadata().generation == 2)
        writer.performAndWait { #expect(!writer.hasChanges) }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 36", "Cy 28", "Eve 22"])
        // The store row has the ID the object had since its insert in the update context.
        #expect(try Self.stored(url, "Employee") { "\($0.objectID)" } == ["Ann \(seed.ann)", "Bob \(seed.bob)", "Cy \(seed.cy)", "Eve \(eve)"])
        #expect(try Self.stored(url, "Department") { try Self.names($0.value(forKey: "employees")).joined(separator: ",") }
                == ["Sales Ann,Bob", "Tech Cy,Eve"])

        // The same ID at every level: nothing was remapped.
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(context.registered[eve]?.objectID == eve)
                #expect(try context.existingObject(with: eve).value(forKey: "name") as? String == "Eve")
            }
        }
    }

    @Test func saveToStoreSavesEveryLevelInOneCommit() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // Main and the writer have changes of their own; saveToStore takes them along.
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        let update = container.newUpdateContext()
        let (eve, result) = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.sales)])
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            coordinator.resetStatistics()
            let result = try update.saveToStore()
            #expect(coordinator.statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
            #expect(coordinator.statistics.executions(startingWith: "UPDATE strata_meta SET generation") == 1)
            #expect(coordinator.statistics.executions(startingWith: "COMMIT") == 1)
            return (eve.objectID, result)
        }
        #expect(result?.generation == 2)
        #expect(result?.touchedEntities == ["Employee", "Department", "Project"])
        #expect(try coordinator.metadata().generation == 2)
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(!context.hasChanges)
                #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty && context.deletedObjects.isEmpty)
                let object = try context.existingObject(with: eve)
                #expect(object.objectID == eve)
                #expect(!object.hasChanges)
                #expect(try object.value(forKey: "name") as? String == "Eve")
            }
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Annie 41", "Bob 35", "Cy 29", "Eve 30"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
        // Nothing left to save anywhere: no statement, no new generation.
        coordinator.resetStatistics()
        #expect(try update.performAndWait { try update.saveToStore() } == nil)
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(try coordinator.metadata().generation == 2)
    }

    @Test func saveToStoreThroughCleanAncestorsCommitsOnceAndBringsEveryLevelUpToDate() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // Main and the writer hold clean objects the update changes; neither has changes of its own.
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
            #expect(try Self.names(main.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy"])
        }
        try writer.performAndWait { () throws -> Void in
            #expect(try writer.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
        }
        let update = container.newUpdateContext()
        let (eve, result) = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)])
            try update.existingObject(with: seed.bob).setValue(36, forKey: "age")
            coordinator.resetStatistics()
            let result = try update.saveToStore()
            #expect(coordinator.statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
            #expect(coordinator.statistics.executions(startingWith: "UPDATE strata_meta SET generation") == 1)
            return (eve.objectID, result)
        }
        #expect(result?.generation == 2)
        #expect(try coordinator.metadata().generation == 2)
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(!context.hasChanges)
                #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty && context.deletedObjects.isEmpty)
                let bob = try context.existingObject(with: seed.bob)
                #expect(!bob.hasChanges)
                #expect(try bob.value(forKey: "age") as? Int16 == 36)
                let object = try context.existingObject(with: eve)
                #expect(object.objectID == eve && !object.isInserted)
                #expect(try object.value(forKey: "name") as? String == "Eve")
                #expect(try Self.names(context.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy", "Eve"])
            }
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 36", "Cy 28", "Eve 30"])
        // A later change of main's Bob saves without a conflict: main's snapshot is the saved row.
        try main.performAndWait { () throws -> Void in
            try main.existingObject(with: seed.bob).setValue(37, forKey: "age")
            #expect(try main.saveToStore()?.generation == 3)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 37", "Cy 28", "Eve 30"])
    }

    // MARK: 3. Deletes through the chain

    @Test func cascadeDeletePushedThroughTheChainArrivesInTheStore() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            try update.delete(try update.existingObject(with: seed.sales))        // cascade: Ann (and her badge), Bob
            #expect(Set(update.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
            #expect(Set(update.updatedObjects.map(\.objectID)) == [seed.acme, seed.apollo, seed.gemini])
            try update.save()
        }
        try main.performAndWait { () throws -> Void in
            #expect(Set(main.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
            #expect(Set(main.updatedObjects.map(\.objectID)) == [seed.acme, seed.apollo, seed.gemini])
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Employee")) == [seed.cy])
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Badge")) == [])
            #expect(try Self.names(main.existingObject(with: seed.acme).value(forKey: "departments")) == ["Tech"])
            #expect(try Self.names(main.existingObject(with: seed.apollo).value(forKey: "members")) == ["Cy"])
            #expect(throws: ObjectError.objectNotFound(seed.ann)) { try main.existingObject(with: seed.ann) }
        }
        #expect(try coordinator.metadata().generation == 1)
        // Update has nothing left; saveToStore carries main's and then the writer's changes.
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        writer.performAndWait { #expect(!writer.hasChanges && writer.registered[seed.ann] == nil) }
        #expect(try Self.stored(url, "Employee") == ["Cy"])
        #expect(try Self.stored(url, "Department") == ["Tech"])
        #expect(try Self.stored(url, "Badge", sortKey: "code") == [])
        #expect(try Self.stored(url, "Company") { try Self.names($0.value(forKey: "departments")).joined(separator: ",") } == ["Acme Tech"])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Cy", "Gemini"])
    }

    /// Deleting an object applies its delete rules to destinations the context has not read yet
    /// (faults made from the relationship's keys); that must work at every level. Run in child
    /// processes: this used to stop the process (index out of range on the fault's empty row).
    @Test func deletingAnObjectWhoseRelatedObjectsAreFaultsDoesNotCrash() async {
        // The stores live in folders this process removes: a child that stopped would leave its own.
        let directory = TemporaryDirectory()
        // A root context: deleting Sales (cascade to its employees, whose inverse is to-one).
        await #expect(processExitsWith: .success) { [folder = directory.url as URL] in
            let url = folder.appendingPathComponent("c1.sqlite")
            let seed = try ParentChildTests.seed(url)
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            let context = coordinator.newContext()
            try context.performAndWait {
                try context.delete(try context.object(with: seed.sales))
                precondition(Set(context.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
                try context.save()
            }
        }
        // A root context: deleting Cy, whose department and projects (to-many inverses) are faults
        // that the nullify rule marks changed.
        await #expect(processExitsWith: .success) { [folder = directory.url as URL] in
            let url = folder.appendingPathComponent("c2.sqlite")
            let seed = try ParentChildTests.seed(url)
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            let context = coordinator.newContext()
            try context.performAndWait {
                try context.delete(try context.object(with: seed.cy))
                precondition(Set(context.updatedObjects.map(\.objectID)) == [seed.tech, seed.apollo])
                try context.save()
                let apollo = try context.existingObject(with: seed.apollo).value(forKey: "members") as? Set<ManagedObject>
                precondition(apollo?.map(\.objectID) == [seed.ann])
            }
        }
        // An update context of the stack: deleting Ann's badge (nullify; the inverse is Ann's to-one).
        let third = TemporaryDirectory()
        await #expect(processExitsWith: .success) { [folder = third.url as URL] in
            let (_, _, seed, container) = try ParentChildTests.container(in: TemporaryDirectory(existing: folder))
            let update = container.newUpdateContext()
            try update.performAndWait {
                try update.delete(try update.object(with: seed.badge))
                precondition(Set(update.deletedObjects.map(\.objectID)) == [seed.badge])
                precondition(Set(update.updatedObjects.map(\.objectID)) == [seed.ann])
                try update.saveToStore()
            }
        }
    }

    @Test func insertingThenDeletingInAChildLeavesNoTrace() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // In one child, before any save.
        let update = container.newUpdateContext()
        let ghost = try update.performAndWait {
            let ghost = try Self.make(update, "Employee", ["name": "Ghost", "department": try update.existingObject(with: seed.sales)])
            try ghost.setValue(Set([try update.existingObject(with: seed.apollo)]), forKey: "projects")
            try update.delete(ghost)
            #expect(ghost.managedObjectContext == nil)
            #expect(!update.hasChanges)
            #expect(try Self.names(update.existingObject(with: seed.sales).value(forKey: "employees")) == ["Ann", "Bob"])
            #expect(try Self.names(update.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann", "Cy"])
            #expect(try update.saveToStore() == nil)
            return ghost.objectID
        }
        // Inserted in one child and saved into main, deleted by another child: gone before the store.
        let first = container.newUpdateContext()
        let (temp, tmp) = try first.performAndWait {
            let temp = try Self.make(first, "Department", ["name": "Temp", "company": try first.existingObject(with: seed.acme)])
            let tmp = try Self.make(first, "Employee", ["name": "Tmp", "department": temp])
            try tmp.setValue(Set([try first.existingObject(with: seed.apollo)]), forKey: "projects")
            try first.save()
            return (temp.objectID, tmp.objectID)
        }
        main.performAndWait { #expect(Set(main.insertedObjects.map(\.objectID)) == [temp, tmp]) }
        let second = container.newUpdateContext()
        try second.performAndWait { () throws -> Void in
            try second.delete(try second.existingObject(with: temp))         // cascade: Tmp
            #expect(Set(second.deletedObjects.map(\.objectID)) == [temp, tmp])
            try second.save()
        }
        try main.performAndWait { () throws -> Void in
            #expect(!main.hasChanges)
            #expect(main.insertedObjects.isEmpty && main.deletedObjects.isEmpty && main.updatedObjects.isEmpty)
            #expect(main.registered[temp] == nil && main.registered[tmp] == nil && main.registered[ghost] == nil)
            #expect(try Self.names(main.existingObject(with: seed.acme).value(forKey: "departments")) == ["Sales", "Tech"])
            #expect(try Self.names(main.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann", "Cy"])
        }
        coordinator.resetStatistics()
        #expect(try second.performAndWait { try second.saveToStore() } == nil)
        #expect(coordinator.statistics.totalExecuted == 0)
        writer.performAndWait { #expect(!writer.hasChanges && writer.registered.isEmpty) }
        #expect(try coordinator.metadata().generation == 1)
        #expect(try Self.stored(url, "Employee") == ["Ann", "Bob", "Cy"])
        #expect(try Self.stored(url, "Department") == ["Sales", "Tech"])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Ann,Cy", "Gemini Bob"])
    }
}
