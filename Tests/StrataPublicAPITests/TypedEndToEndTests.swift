import Foundation
import Testing
import Strata

@Entity final class Shop: ManagedObject {
    @Attribute(.indexed) var name: String
    @Relationship(inverse: \Ware.shop, deleteRule: .cascade) var wares: Set<Ware> = []
}

@Entity final class Ware: ManagedObject {
    var name: String
    var price: Double = 0
    var shop: Shop?
}

/// The SwiftData-style path a newcomer takes, end to end: `@Entity` classes, `#Predicate`,
/// `SortDescriptor` through a to-one, a typed sectioned controller.
@Suite struct TypedEndToEndTests {
    @Test func entityPredicateSortAndSectionedController() throws {
        let model = try Model(version: "1", types: [Shop.self, Ware.self])
        let container = try PersistentContainer(inMemoryWith: model)
        let main = container.mainContext
        try main.performAndWait {
            for (shopName, wares) in [("Greens", [("Leek", 2.0), ("Kale", 3.5)]), ("Fruit", [("Apple", 1.0), ("Fig", 4.0)])] {
                let shop = try main.insert(Shop.self)
                shop.name = shopName
                for (name, price) in wares {
                    let ware = try main.insert(Ware.self)
                    ware.name = name
                    ware.price = price
                    ware.shop = shop
                }
            }
            try main.saveToStore()

            let cheap = FetchRequest<Ware>(predicate: #Predicate { $0.price < 3.6 && $0.shop?.name != "Nowhere" },
                                           sortBy: [SortDescriptor(\.shop?.name), SortDescriptor(\.name)])
            let wares: [Ware] = try main.fetch(cheap)
            #expect(wares.map(\.name) == ["Apple", "Kale", "Leek"])
            #expect(try main.count(for: cheap) == 3)

            let controller = try FetchedResultsController(cheap, context: main, sectionBy: \.shop?.name)
            try controller.performFetch()
            #expect(controller.sections?.map(\.name) == ["Fruit", "Greens"])
            let first: Ware = try controller.object(at: FetchedIndexPath(item: 0, section: 1))
            #expect(first.name == "Kale")
            #expect(try controller.fetchedObjects?.map(\.name) == ["Apple", "Kale", "Leek"])
        }
    }

    @Test func untranslatablePredicateThrowsBeforeAnySQL() throws {
        let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Shop.self, Ware.self]))
        let main = container.mainContext
        let request = FetchRequest<Ware>(predicate: #Predicate { $0.price * 2 > 3 })
        container.coordinator.resetStatistics()
        main.performAndWait {
            #expect(throws: PredicateTranslationError.self) { try main.fetch(request) }
        }
        #expect(container.coordinator.statistics.totalExecuted == 0)
    }
}
