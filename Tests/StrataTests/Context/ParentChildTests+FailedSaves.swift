import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A failed save, at any level of the chain, leaves every level exactly as it was.
extension ParentChildTests {
    // MARK: 5. A failed save changes nothing anywhere

    @Test func aFailedUpdateSaveLeavesEveryLevelAsItWas() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve", "age": 12, "department": try update.existingObject(with: seed.tech)]).objectID
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].insertedObjects == [eve])
        #expect(before.levels[0].updatedObjects == [seed.ann, seed.tech])
        #expect(before.levels[1].updatedObjects == [seed.cy])
        #expect(before.levels[2].updatedObjects == [seed.gemini])

        // Validation: Eve is 12 (minimum 16).
        update.performAndWait {
            #expect(throws: ValidationError.self) { try update.save() }
            #expect(throws: ValidationError.self) { try update.saveToStore() }
        }
        #expect(try Self.state(levels, coordinator) == before)

        // A conflict with main: main changed Ann's name too since the child read it.
        try main.performAndWait { try main.existingObject(with: seed.ann).setValue("Anna", forKey: "name") }
        let beforeConflict = try Self.state(levels, coordinator)
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: eve).setValue(20, forKey: "age")
            let afterFix = LevelState(update)
            do {
                try update.save()
                Issue.record("the save should have met main's change to Ann's name")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) \($0.ours) \($0.theirs) \($0.original)" } == ["\(seed.ann) name \"Annie\" \"Anna\" \"Ann\""])
            }
            #expect(LevelState(update) == afterFix)
        }
        var expected = beforeConflict
        expected.levels[0] = update.performAndWait { LevelState(update) }
        #expect(try Self.state(levels, coordinator) == expected)
        try update.performAndWait { () throws -> Void in
            #expect(try update.existingObject(with: seed.ann).value(forKey: "name") as? String == "Annie")
            #expect(try update.existingObject(with: eve).value(forKey: "age") as? Int16 == 20)
        }

        // The child takes main's name; the whole chain saves.
        try update.performAndWait { () throws -> Void in
            update.mergePolicy = .rollback
            #expect(try update.saveToStore()?.generation == 2)
            #expect(try update.existingObject(with: seed.ann).value(forKey: "name") as? String == "Anna")
        }
        for context in levels { context.performAndWait { #expect(!context.hasChanges) } }
    }

    @Test func aFailedMainSaveLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        // The invalid value arises in main itself: Cy is 120 (maximum 99).
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(120, forKey: "age") }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)])
            try update.save()                                             // valid: it reaches main
            return eve.objectID
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].hasChanges == false)
        #expect(before.levels[1].insertedObjects == [eve])
        #expect(before.levels[1].updatedObjects == [seed.bob, seed.cy, seed.tech])
        #expect(before.levels[2].updatedObjects == [seed.gemini])

        coordinator.resetStatistics()
        main.performAndWait {
            do {
                try main.save()
                Issue.record("main's save should have failed validation")
            } catch let error as ValidationError {
                #expect(error.failures.map { "\($0.objectID) \($0.key) \($0.rule)" } == ["\(seed.cy) age maxValue"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(try Self.state(levels, coordinator) == before)

        // saveToStore from the update context fails at main the same way, and changes nothing.
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: seed.ann).setValue(42, forKey: "age")
        }
        let beforeCascade = try Self.state(levels, coordinator)
        update.performAndWait { () -> Void in
            #expect(throws: ValidationError.self) { try update.saveToStore() }
        }
        #expect(try Self.state(levels, coordinator) == beforeCascade)
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "name") as? String == "Robert")
            #expect(try main.existingObject(with: seed.ann).value(forKey: "age") as? Int16 == 41)
            #expect(try main.existingObject(with: seed.cy).value(forKey: "age") as? Int16 == 120)
        }

        // Fixed in main, the same saveToStore goes through.
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" }
                == ["Ann 42", "Cy 29", "Eve 30", "Robert 35"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
    }

    @Test func aConflictAtTheWriterFailsSaveToStoreAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        // The update context reads Bob (through main and the writer, neither of which registers him).
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)]).objectID
        }
        // A sibling background context changes Bob's age and commits (generation 2).
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: seed.bob).setValue(60, forKey: "age")
            #expect(try background.save()?.generation == 2)
        }
        container.waitForPendingMerges()
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.generation == 2)
        #expect(before.levels[1].registered[seed.bob] == nil && before.levels[2].registered[seed.bob] == nil)

        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the writer's commit should have met the background save")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) ours \($0.ours) theirs \($0.theirs) stored \($0.stored)" }
                        == ["\(seed.bob) name ours \"Robert\" theirs \"Bob\" stored \"Bob\"", "\(seed.bob) age ours 35 theirs 60 stored 60"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(try Self.state(levels, coordinator) == before)
        try update.performAndWait { () throws -> Void in
            #expect(try update.existingObject(with: seed.bob).value(forKey: "name") as? String == "Robert")
            #expect(try update.existingObject(with: eve).isInserted)
        }
        try writer.performAndWait { () throws -> Void in
            #expect(try writer.existingObject(with: seed.gemini).value(forKey: "title") as? String == "Gemini II")
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 60", "Cy 28"])

        // The child re-reads Bob keeping its change; the same saveToStore succeeds.
        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            try update.refresh(bob, mergeChanges: true)
            #expect(try bob.value(forKey: "age") as? Int16 == 60)
            #expect(try update.saveToStore()?.generation == 3)
        }
        #expect(try coordinator.metadata().generation == 3)
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" }
                == ["Ann 41", "Cy 29", "Eve 30", "Robert 60"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
    }

    @Test func aConflictInTheStoreFailsSaveToStoreThroughCleanAncestorsAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
        }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve"]).objectID
        }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: seed.bob).setValue(60, forKey: "age")
            #expect(try background.save()?.generation == 2)
        }
        container.waitForPendingMerges()
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 60)
            #expect(!main.hasChanges)
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the commit should have met the background save")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) ours \($0.ours) theirs \($0.theirs)" }
                        == ["\(seed.bob) name ours \"Robert\" theirs \"Bob\"", "\(seed.bob) age ours 35 theirs 60"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(try Self.state(levels, coordinator) == before)
        #expect(try Self.stored(url, "Employee") == ["Ann", "Bob", "Cy"])

        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            try update.refresh(bob, mergeChanges: true)
            #expect(try update.saveToStore()?.generation == 3)
            #expect(try update.existingObject(with: eve).isInserted == false)
        }
        try main.performAndWait { () throws -> Void in
            let bob = try main.existingObject(with: seed.bob)
            #expect(try bob.value(forKey: "name") as? String == "Robert")
            #expect(try bob.value(forKey: "age") as? Int16 == 60)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Cy 28", "Eve 30", "Robert 60"])
    }

    @Test func aValidationFailureAtTheWriterFailsSaveToStoreAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // The writer's own pending change is invalid: a 25-character department name (maximum 20).
        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales and Marketing Team", forKey: "name") }
        try main.performAndWait { () throws -> Void in
            try main.existingObject(with: seed.cy).setValue(29, forKey: "age")
            try main.delete(try main.existingObject(with: seed.gemini))
        }
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            try update.delete(try update.existingObject(with: seed.badge))
            _ = try Self.make(update, "Project", ["title": "Vostok", "members": [try update.existingObject(with: seed.bob)]])
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].deletedObjects == [seed.badge])
        #expect(before.levels[1].deletedObjects == [seed.gemini])

        coordinator.resetStatistics()
        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the writer's save should have failed validation")
            } catch let error as ValidationError {
                #expect(error.failures.map { "\($0.objectID) \($0.key) \($0.rule)" } == ["\(seed.sales) name maxLength"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(coordinator.statistics.executions(startingWith: "BEGIN") == 0)
        #expect(try Self.state(levels, coordinator) == before)

        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales & Marketing", forKey: "name") }
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        #expect(try Self.stored(url, "Department") == ["Sales & Marketing", "Tech"])
        #expect(try Self.stored(url, "Badge", sortKey: "code") == [])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Annie,Cy", "Vostok Bob"])
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Annie 41", "Bob 35", "Cy 29"])
    }

    @Test func aFailedSaveToStoreLeavesAnAutomaticallyMergingSiblingAsItWas() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales and Marketing Team", forKey: "name") }
        // A sibling of the update context that merges what main receives.
        let watcher = container.newUpdateContext(name: "watcher")
        watcher.automaticallyMergesChangesFromParent = true
        try watcher.performAndWait { () throws -> Void in
            #expect(try watcher.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
        let update = container.newUpdateContext()
        try update.performAndWait { try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name") }
        let levels = [update, watcher, main, writer]
        let before = try Self.state(levels, coordinator)
        update.performAndWait { () -> Void in #expect(throws: ValidationError.self) { try update.saveToStore() } }
        watcher.performAndWait {}                       // any merge handed to the watcher has run
        #expect(try Self.state(levels, coordinator) == before)
        try watcher.performAndWait { () throws -> Void in
            #expect(try watcher.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
    }
}
