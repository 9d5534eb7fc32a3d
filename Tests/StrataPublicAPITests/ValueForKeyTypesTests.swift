import Foundation
import Strata
import StrataTestSupport
import Testing

/// The Swift type `value(forKey:)` returns for every attribute type and for relationships, as
/// GettingStarted.md's table lists them; and `performAndWait`'s result may be ignored.
@Suite struct ValueForKeyTypesTests {
    final class Category: ManagedObject {}
    final class Good: ManagedObject {}

    static let model = try! Model(version: "types-1", entities: [
        Entity("Sample", attributes: TestModels.allTypes,
               relationships: [Relationship("other", .toOne, to: "Sample"),
                               Relationship("owner", .toOne, to: "Category", inverse: "samples")]),
        Entity("Category", class: Category.self, attributes: [Attribute("name", .string)],
               relationships: [Relationship("samples", .toMany, to: "Sample", inverse: "owner")]),
        Entity("Good", class: Good.self, attributes: [Attribute("name", .string)]),
    ])

    @Test func eachAttributeTypeAndRelationshipReturnsTheDocumentedType() throws {
        let coordinator = try StoreCoordinator(inMemoryWith: Self.model)
        let writer = coordinator.newContext()
        try writer.performAndWait {
            let sample = try writer.insert("Sample")
            let values: [String: Any] = [
                "i16": Int16(1), "i32": Int32(2), "i64": Int64(3), "dbl": 4.5, "flt": Float(5.5), "flag": true,
                "text": "six", "when": Date(timeIntervalSinceReferenceDate: 7), "blob": Data([8]),
                "uid": UUID(), "link": URL(string: "https://example.com/9")!, "amount": Decimal(10),
            ]
            for (key, value) in values { try sample.setValue(value, forKey: key) }
            try sample.setValue(try writer.insert(Category.self), forKey: "owner")
            _ = try writer.insert("Sample")                       // every value nil
            try writer.save()
        }
        let context = coordinator.newContext()                   // read back from the store
        try context.performAndWait {
            let samples = try context.fetch(FetchRequest(entityName: "Sample"))
            let (full, empty) = (samples[0], samples[1])
            #expect(try full.value(forKey: "i16") is Int16)
            #expect(try full.value(forKey: "i32") is Int32)
            #expect(try full.value(forKey: "i64") is Int64)
            #expect(try full.value(forKey: "dbl") is Double)
            #expect(try full.value(forKey: "flt") is Float)
            #expect(try full.value(forKey: "flag") is Bool)
            #expect(try full.value(forKey: "text") is String)
            #expect(try full.value(forKey: "when") is Date)
            #expect(try full.value(forKey: "blob") is Data)
            #expect(try full.value(forKey: "uid") is UUID)
            #expect(try full.value(forKey: "link") is URL)
            #expect(try full.value(forKey: "amount") is Decimal)
            for attribute in TestModels.allTypes { #expect(try empty.value(forKey: attribute.name) == nil, "\(attribute.name)") }
            // To-one: the destination (of the entity's class), or nil itself (not an Optional in an Any).
            #expect(try full.value(forKey: "owner") is Category)
            #expect(try full.value(forKey: "other") == nil)
            // To-many: always a Set<ManagedObject>, empty when there are no members.
            let category = try #require(try full.value(forKey: "owner") as? ManagedObject)
            #expect((try category.value(forKey: "samples") as? Set<ManagedObject>)?.count == 1)
            let lonely = try context.insert(Category.self)
            #expect((try lonely.value(forKey: "samples") as? Set<ManagedObject>) == [])
        }
    }

    /// `performAndWait` and `perform` are `@discardableResult`: these lines would not compile under
    /// `-warnings-as-errors` otherwise.
    @Test func performResultsMayBeIgnored() async throws {
        let coordinator = try StoreCoordinator(inMemoryWith: TestModels.goods())
        let context = coordinator.newContext()
        context.performAndWait { 42 }
        try context.performAndWait {
            let category = try context.insert("Category")
            try category.setValue("Fruit", forKey: "name")
            try context.save()                      // returns a CommitResult?
        }
        try await context.perform { try context.count(for: FetchRequest(entityName: "Category")) }
        #expect(context.performAndWait { context.hasChanges } == false)
    }
}
