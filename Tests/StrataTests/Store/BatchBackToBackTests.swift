import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Several batch commits landing before main has taken the news of the first.
@Suite struct BatchBackToBackTests {
    @Test func everyRowChangedByBackToBackBatchesIsReported() throws {
        var failures: [String] = []
        for round in 0..<200 {
            let container = try PersistentContainer(inMemoryWith: try Model(version: "goods-1", types: [SeedCategory.self, SeedGood.self]))
            let coordinator = container.coordinator
            let ids = try coordinator.execute(BatchInsertRequest(SeedGood.self, count: 6) { i, row in
                try row.set(\.name, "g\(i)")
            }).objectIDs
            container.waitForPendingMerges()
            let delegate = RecordingDelegate()
            let main = container.mainContext
            let controller = FetchedResultsController(FetchRequest<SeedGood>(sortBy: [SortDescriptor(\.name)]), context: main)
            try main.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
                // Registered, clean objects, as a list's cells hold them.
                _ = try controller.fetchedObjects?.map(\.number)
            }
            var changed: Set<ObjectID> = []
            for (n, id) in ids.enumerated() where n % 2 == round % 2 {
                try coordinator.execute(BatchUpdateRequest(entityName: "Good", predicate: try Condition("SELF IN %@", [id]),
                                                           propertiesToUpdate: ["number": Int64(round + 1)]))
                changed.insert(id)
            }
            container.waitForPendingMerges()
            var reported: Set<ObjectID> = []
            main.performAndWait {
                for case .changes(let changes) in delegate.events {
                    for change in changes.objects {
                        if case let .update(id, _, _) = change { reported.insert(id) }
                        if case let .move(id, _, _) = change { reported.insert(id) }
                    }
                }
            }
            if reported != changed { failures.append("round \(round): changed \(changed.map(\.primaryKey).sorted()) reported \(reported.map(\.primaryKey).sorted())") }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5)) (\(failures.count) of 200)")
    }
}
