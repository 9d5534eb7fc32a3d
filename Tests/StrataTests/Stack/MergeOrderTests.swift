import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Merges that arrive out of commit order never leave an object older than the store.
@Suite(.serialized) struct MergeOrderTests {
    /// The update context's save (generation 3) is merged into main before the background save
    /// it follows (generation 2): the update saves from inside the background's did-save, which
    /// is posted before that save is handed on. The test checks that the order really was the
    /// hard one (main had the update's value and not yet the background's when the update's save
    /// returned), then that the late, older merge did not undo the newer one. (Mutation this
    /// fails: a merge that applies a did-save's rows without comparing row versions leaves main
    /// with `isEven == false`, the background's older row.)
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
        let seenAfterUpdate = Locked<(isEven: Bool?, label: String?, generation: Int64?)?>(nil)
        let observation = background.addObserver { notification in
            guard case .didSave = notification.event, seenAfterUpdate.withLock({ $0 == nil }) else { return }
            let generation = try! update.performAndWait { try update.saveToStore() }?.generation
            let seen = try! main.performAndWait {
                let object = try main.existingObject(with: id)
                return (try object.value(forKey: "isEven") as? Bool, try object.value(forKey: "label") as? String, generation)
            }
            seenAfterUpdate.withLock { $0 = seen }
        }
        try background.performAndWait {
            try background.existingObject(with: id).setValue("bg", forKey: "label"); try background.save()
        }
        observation.cancel()
        let seen = try #require(seenAfterUpdate.withLock { $0 })
        #expect(seen.generation == 3)
        #expect(seen.isEven == true && seen.label == nil, "the hard order: the update's merge reached main first")
        container.waitForPendingMerges()
        let current = try main.performAndWait { try main.existingObject(with: id).current }
        let row = try container.coordinator.row(for: id)!
        #expect(current == row)
        #expect(try main.performAndWait { try main.existingObject(with: id).value(forKey: "isEven") as? Bool } == true)
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
