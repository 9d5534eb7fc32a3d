import Foundation
import Testing
import Strata

/// A typed request is edited as SwiftData's `FetchDescriptor` is: its `predicate` and `sortBy`
/// are Foundation values, settable after init, each translated when set (a bad one's error goes
/// when it is replaced); the string form's `condition` and `sortKeys` stay for run-time models.
@Suite struct EditableTypedRequestTests {
    @Test func predicateAndSortByAreSetAfterInit() throws {
        let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Shop.self, Ware.self]))
        let main = container.mainContext
        try main.performAndWait {
            for (name, price) in [("Leek", 2.0), ("Kale", 3.5), ("Fig", 4.0), ("Apple", 1.0)] {
                let ware = try main.insert(Ware.self)
                ware.name = name
                ware.price = price
            }
            try main.saveToStore()

            var request = FetchRequest<Ware>()
            #expect(try main.fetch(request).count == 4)
            request.predicate = #Predicate { $0.price < 3.6 }
            request.sortBy = [SortDescriptor(\.name)]
            #expect(try main.fetch(request).map(\.name) == ["Apple", "Kale", "Leek"])
            request.sortBy = [SortDescriptor(\.price, order: .reverse)]
            request.fetchLimit = 2
            #expect(try main.fetch(request).map(\.name) == ["Kale", "Leek"])
            #expect(request.predicate != nil && request.sortBy.count == 1)

            // One with no Strata equivalent fails the fetch before SQL; replacing it fixes it.
            request.predicate = #Predicate { $0.price * 2 > 3 }
            #expect(throws: PredicateTranslationError.self) { try main.fetch(request) }
            request.predicate = #Predicate { $0.price > 1.5 }
            #expect(try main.fetch(request).map(\.name) == ["Fig", "Kale"])
            request.predicate = nil
            #expect(try main.count(for: request) == 2)   // the limit still applies

            // The string form on the same request: it replaces the typed predicate.
            request.condition = try Condition("name BEGINSWITH %@", "L")
            #expect(request.predicate == nil)
            #expect(try main.fetch(request).map(\.name) == ["Leek"])

            // A controller takes the edited request.
            request.fetchLimit = nil
            request.predicate = #Predicate { $0.price >= 2 }
            let controller = FetchedResultsController(request, context: main)
            try controller.performFetch()
            #expect(try controller.fetchedObjects?.map(\.name) == ["Fig", "Kale", "Leek"])
        }
        // Batch requests take a typed predicate the same way.
        var cheaper = BatchUpdateRequest(Ware.self, predicate: #Predicate { $0.price > 3 })
        try cheaper.set(\.price, to: 3.0)
        #expect(try container.coordinator.execute(cheaper).count == 2)
        #expect(try container.coordinator.execute(BatchDeleteRequest(Ware.self, predicate: #Predicate { $0.name == "Leek" })).count == 1)
        #expect(try main.performAndWait { try main.count(for: FetchRequest<Ware>(predicate: #Predicate { $0.price == 3 })) } == 2)
    }
}
