import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Merges that arrive out of commit order never leave an object older than the store.
@Suite(.serialized) struct MergeOrderTests {
    @Test func aCascadeMergedAheadOfAnEarlierBackgroundMergeIsNotUndoneByIt() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.numbers())
        let main = container.mainContext, writer = container.writerContext
        let background = container.newBackgroundContext(name: "bg")
        let update = container.newUpdateContext(name: "update")
        let id = try background.performAndWait {
            let n = try background.insert("Number"); try n.setValue(Int64(1), forKey: "value"); try background.save(); return n.objectID
        }
        container.waitForPendingMerges()
        try main.performAndWait { _ = try main.existingObject(with: id) }
        try update.performAndWait {
            update.mergePolicy = .overwrite
            writer.performAndWait { writer.mergePolicy = .overwrite }
            try update.existingObject(with: id).setValue(true, forKey: "isEven")
        }
        // Keep the writer busy so that the background save's merge reaches main after the cascade's.
        writer.enqueue { Thread.sleep(forTimeInterval: 0.3) }
        try background.performAndWait {
            try background.existingObject(with: id).setValue("bg", forKey: "label"); try background.save()
        }
        let result = try update.performAndWait { try update.saveToStore() }
        #expect(result?.generation == 3)
        container.waitForPendingMerges()
        let current = try main.performAndWait { try main.existingObject(with: id).current }
        let row = try container.coordinator.row(for: id)!
        #expect(current == row)
    }

    @Test func twoRootSavesMergedInReverseOrderLeaveMainAtTheLatest() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.numbers())
        let a = container.newBackgroundContext(name: "a")
        let b = container.newBackgroundContext(name: "b")
        let main = container.mainContext
        let id = try a.performAndWait {
            let n = try a.insert("Number"); try n.setValue(Int64(1), forKey: "value"); try a.save(); return n.objectID
        }
        container.waitForPendingMerges()
        try main.performAndWait { _ = try main.existingObject(with: id) }
        // b saves (generation 3) from inside a's did-save, before a's merge is queued.
        let observation = a.addObserver { n in
            if case .didSave = n.event {
                try! b.performAndWait { try b.existingObject(with: id).setValue("b", forKey: "label"); try b.save() }
            }
        }
        try a.performAndWait { try a.existingObject(with: id).setValue("a", forKey: "label"); try a.save() }
        observation.cancel()
        container.waitForPendingMerges()
        let current = try main.performAndWait { try main.existingObject(with: id).current }
        let row = try container.coordinator.row(for: id)!
        #expect(current == row)
    }
}
