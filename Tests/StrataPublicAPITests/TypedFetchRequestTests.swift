import Foundation
import Testing
import Strata

/// `FetchRequest<Good>` as a package that imports only Strata writes it, with a class that
/// describes its own entity by hand (what `@Entity` generates).
@Suite struct TypedFetchRequestTests {
    final class Shelf: ManagedObject, PersistentEntity {
        static let entityDescription = Entity("Shelf", class: Shelf.self, attributes: [
            Attribute("label", .string, isOptional: false),
            Attribute("rank", .int64, isOptional: false, defaultValue: .int64(0)),
        ])
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Shelf.label: "label"
            case \Shelf.rank: "rank"
            default: nil
            }
        }
        var label: String {
            get { self[attribute: "label"] ?? "" }
            set { self[attribute: "label"] = newValue }
        }
        var rank: Int64 {
            get { self[attribute: "rank"] ?? 0 }
            set { self[attribute: "rank"] = newValue }
        }
    }

    @Test func typedRequestFetchesTheClassAndSharesTheStringAPI() throws {
        let model = try Model(version: "typed-1", types: [Shelf.self])
        let container = try PersistentContainer(inMemoryWith: model)
        let context = container.mainContext
        try context.performAndWait {
            for (label, rank) in [("b", 2), ("a", 1), ("c", 3)] {
                let shelf = try context.insert(Shelf.self)
                shelf.label = label
                shelf.rank = Int64(rank)
            }
            try context.saveToStore()

            let request = FetchRequest<Shelf>(condition: try Condition("rank >= %@", 2), sortKeys: [.ascending("label")])
            let shelves: [Shelf] = try context.fetch(request)
            #expect(shelves.map(\.label) == ["b", "c"])
            #expect(try context.count(for: request) == 2)
            #expect(try context.fetchObjectIDs(request) == shelves.map(\.objectID))
            // The string API's request runs the same code and returns the same objects.
            let untyped = try context.fetch(FetchRequest(entityName: "Shelf", predicate: try Condition("rank >= %@", 2),
                                                         sortKeys: [.ascending("label")]))
            #expect(untyped.map(\.objectID) == shelves.map(\.objectID))
            #expect(request.untyped == FetchRequest(entityName: "Shelf", predicate: try Condition("rank >= %@", 2),
                                                    sortKeys: [.ascending("label")]))
        }
    }

    @Test func modelFromTypesHasTheHandWrittenHash() throws {
        let typed = try Model(version: "typed-1", types: [Shelf.self])
        let written = try Model(version: "typed-1", entities: [Entity("Shelf", attributes: [
            Attribute("label", .string, isOptional: false),
            Attribute("rank", .int64, isOptional: false, defaultValue: .int64(0)),
        ])])
        #expect(typed.versionHash == written.versionHash)
    }
}
