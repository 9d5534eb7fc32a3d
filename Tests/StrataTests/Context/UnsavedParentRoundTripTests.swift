import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A value saved into main only (left unsaved there), then set back to what the store holds by
/// another update context and saved through to the store: the writer must not call that a
/// conflict (the benchmark's one-flight change alternates `save()` and `saveToStore()` so).
///
/// Found on 2026-11-30: the 11th save of this order was refused as a conflict (`ours 1, theirs
/// 1, stored 1 (read as 2359)`). At the 6th, main held a no-op update (saved into main, then set
/// back by the next save into main), and the merge of the cascade's commit recorded a conflict
/// base for it, the value it had been read with; the writer did the same. A merge over an update
/// whose row is back at its read values now records no base.
@Suite struct UnsavedParentRoundTripTests {
    @Test func aValueSavedIntoMainThenSetBackAndSavedToTheStoreIsNoConflict() throws {
        let directory = TemporaryDirectory("strata-roundtrip")
        let id: ObjectID
        do {
            // Written by another container, as the benchmark's store is: main has never seen the row.
            let seeding = try PersistentContainer(model: TestModels.goods(), url: directory.file("goods.sqlite"))
            id = try seeding.mainContext.performAndWait {
                let category = try seeding.mainContext.insert("Category")
                try category.setValue("Fruit", forKey: "name")
                var target: ManagedObject?
                for index in 0..<40 {
                    let good = try seeding.mainContext.insert("Good")
                    try good.setValue("g\(index)", forKey: "name")
                    try good.setValue(Int64(index * 60), forKey: "number")
                    try good.setValue(category, forKey: "category")
                    if index == 20 { target = good }
                }
                let good = target!
                try seeding.mainContext.saveToStore()
                return good.objectID
            }
            seeding.coordinator.close()
        }
        let container = try PersistentContainer(model: TestModels.goods(), url: directory.file("goods.sqlite"))
        defer { container.coordinator.close() }
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("number")]),
                                                  managedObjectContext: main, sectionNameKeyPath: "category.name")
        let recorder = ChangesRecorder()
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
        }
        // The benchmark's order: save and saveToStore alternate, and which goes first alternates
        // too, while the value alternates call by call.
        var call = 0
        for round in 0..<8 {
            for k in 0..<2 {
                call += 1
                let value: Int64 = call % 2 == 0 ? 1 : 2359
                let toStore = (k + round) % 2 == 1
                let update = container.newUpdateContext()
                try update.performAndWait {
                    try update.existingObject(with: id).setValue(value, forKey: "number")
                    update.processPendingChanges()
                    do {
                        if toStore { try update.saveToStore() } else { try update.save() }
                    } catch {
                        throw ConflictAtCall(call: call, error: error)
                    }
                }
                _ = main.performAndWait { recorder.changes.last }
            }
        }
        let stored = try StoreInspector(url: directory.file("goods.sqlite")).compute(
            CanonicalRequest(FetchRequest(entityName: "Good", sortKeys: [.ascending("number")]), sectionKeyPath: nil))
        #expect(stored.keys.contains(id.primaryKey))
    }

    struct ConflictAtCall: Error, CustomStringConvertible {
        var call: Int
        var error: any Error
        var description: String { "call \(call): \(error)" }
    }
}

