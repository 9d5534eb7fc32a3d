import Foundation
import Testing
import Strata
import StrataTestSupport

// The `@Entity` macro as an app uses it: through `import Strata` only (not `@testable`).

// `strata demo`'s model (Sources/StrataCLI/Demo.swift), with other class names: `@Entity("…")`
// gives the entities the demo's names.

@Entity("Category") final class TypedCategory: ManagedObject {
    @Attribute(.indexed) var name: String
    @Relationship(inverse: \TypedGood.category, deleteRule: .cascade) var goods: Set<TypedGood> = []
}

@Entity("Good") final class TypedGood: ManagedObject {
    @Attribute(maxLength: 80) var name: String
    @Attribute(minValue: 0) var number: Int64 = 0
    var category: TypedCategory
}

/// `TestModels.allTypes`: every attribute type, optional.
@Entity("Sample") final class TypedSample: ManagedObject {
    var i16: Int16?
    var i32: Int32?
    var i64: Int64?
    var dbl: Double?
    var flt: Float?
    var flag: Bool?
    var text: String?
    var when: Date?
    var blob: Data?
    var uid: UUID?
    var link: URL?
    var amount: Decimal?
}

/// Defaults, required types read as their zero, Codable values, a transient, a to-one whose
/// inverse only the other side names, an implicitly unwrapped required attribute.
struct Dimensions: Codable, Hashable {
    var width: Double
    var height: Double
}

enum Finish: String, Codable {
    case matte, gloss
}

@Entity final class Gadget: ManagedObject {
    var title: String
    var count: Int = 3
    var rating: Int16 = -1
    var ratio: Double?
    var created: Date!
    var finish: Finish = .matte
    var size: Dimensions?
    var tags: [String] = []
    @Attribute(renamingIdentifier: "labels") var labels: Set<String>?
    var owner: Owner?
    @Transient var scratch = 0
}

@Entity final class Owner: ManagedObject {
    var name: String?
    @Relationship(inverse: \Gadget.owner) var gadgets: Set<Gadget> = []
}

@Suite struct EntityMacroTests {
    /// The demo's model as `Entity` values (Demo.swift), plus `TestModels.allTypes`.
    static func handWritten() throws -> Model {
        try Model(version: "demo-1", entities: [
            Entity("Category",
                   attributes: [Attribute("name", .string, isOptional: false, isIndexed: true)],
                   relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category", deleteRule: .cascade)]),
            Entity("Good",
                   attributes: [
                       Attribute("name", .string, isOptional: false, maxLength: 80),
                       Attribute("number", .int64, isOptional: false, defaultValue: .int64(0), minValue: 0),
                   ],
                   relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods", isOptional: false)]),
            Entity("Sample", attributes: TestModels.allTypes),
        ])
    }

    static func typed() throws -> Model {
        try Model(version: "demo-1", types: [TypedCategory.self, TypedGood.self, TypedSample.self])
    }

    static func gadgets() throws -> Model {
        try Model(version: "gadgets-1", types: [Gadget.self, Owner.self])
    }

    @Test func typedModelHasTheHandWrittenModelsVersionHash() throws {
        let hand = try Self.handWritten(), typed = try Self.typed()
        #expect(typed.versionHash == hand.versionHash)
        #expect(typed.entityVersionHashes == hand.entityVersionHashes)
        // Not only the storage: every rule and default is the hand-written one too.
        for entity in hand.entities {
            let mine = try #require(typed.entity(named: entity.name))
            #expect(mine.attributes == entity.attributes)
            #expect(mine.relationships == entity.relationships)
        }
        #expect(typed.entity(named: "Good")?.managedClass == TypedGood.self)
        #expect(TypedGood.entityDescription.managedClass == TypedGood.self)
        #expect(TypedGood.entityName == "Good")
        #expect(Gadget.entityName == "Gadget")
    }

    @Test func aStoreMadeWithTheHandWrittenModelOpensWithTheTypedOne() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("demo.sqlite")
        do {
            let coordinator = try StoreCoordinator(model: Self.handWritten(), url: url)
            defer { coordinator.close() }
            let context = coordinator.newContext(name: "hand")
            try context.performAndWait {
                let fruit = try context.insert("Category")
                try fruit.setValue("Fruit", forKey: "name")
                let apple = try context.insert("Good")
                try apple.setValue("Apple", forKey: "name")
                try apple.setValue(Int64(7), forKey: "number")
                try apple.setValue(fruit, forKey: "category")
                try context.save()
            }
        }
        let coordinator = try StoreCoordinator(model: Self.typed(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "typed")
        try context.performAndWait {
            let goods = try context.fetch(FetchRequest(entityName: "Good"), as: TypedGood.self)
            #expect(goods.map(\.name) == ["Apple"])
            #expect(goods.first?.number == 7)
            #expect(goods.first?.category.name == "Fruit")
            let fruit = try #require(goods.first?.category)
            #expect(fruit.goods.map(\.name) == ["Apple"])
        }
    }

    @Test func demoModelRoundTripsThroughGeneratedAccessors() throws {
        let store = try TestStore(model: Self.typed())
        try store.context.performAndWait {
            let fruit = try store.context.insert(TypedCategory.self)
            fruit.name = "Fruit"
            let apple = try store.context.insert(TypedGood.self)
            #expect(apple.name == "", "a required String without a default reads its zero until set")
            #expect(apple.number == 0, "the initial value is the default")
            apple.name = "Apple"
            apple.category = fruit
            #expect(fruit.goods == [apple], "the inverse is maintained")
            let banana = try store.context.insert(TypedGood.self)
            banana.name = "Banana"
            banana.number = 2
            fruit.goods.insert(banana)
            #expect(banana.category == fruit, "the inverse is maintained from the to-many side too")
            try store.context.save()
        }
        let reopened = try store.reopened(model: Self.typed())
        try reopened.context.performAndWait {
            let categories = try reopened.context.fetch(FetchRequest(entityName: "Category"), as: TypedCategory.self)
            #expect(categories.map(\.name) == ["Fruit"])
            let goods = try #require(categories.first).goods.sorted { $0.name < $1.name }
            #expect(goods.map(\.name) == ["Apple", "Banana"])
            #expect(goods.map(\.number) == [0, 2])
            // The rules came along: maxLength 80 and a required category.
            let long = try reopened.context.insert(TypedGood.self)
            long.name = String(repeating: "x", count: 81)
            #expect(throws: ValidationError.self) { try reopened.context.save() }
            reopened.context.rollback()
            // Cascade: deleting the category deletes its goods.
            try reopened.context.delete(try #require(categories.first))
            try reopened.context.save()
            #expect(try reopened.context.count(for: FetchRequest(entityName: "Good")) == 0)
        }
    }

    @Test func everyAttributeTypeRoundTrips() throws {
        let store = try TestStore(model: Self.typed())
        let when = Date(timeIntervalSinceReferenceDate: 1234.5)
        let uid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let link = URL(string: "https://example.com/a?b=c")!
        let amount = Decimal(string: "12345678901234567890.5")!
        try store.context.performAndWait {
            let sample = try store.context.insert(TypedSample.self)
            #expect(sample.i16 == nil && sample.text == nil && sample.amount == nil)
            sample.i16 = -16; sample.i32 = 32; sample.i64 = .max; sample.dbl = -0.5; sample.flt = 1.5
            sample.flag = true; sample.text = "Żółć"; sample.when = when; sample.blob = Data([0, 255])
            sample.uid = uid; sample.link = link; sample.amount = amount
            try store.context.save()
        }
        let reopened = try store.reopened(model: Self.typed())
        try reopened.context.performAndWait {
            let sample = try #require(try reopened.context.fetch(FetchRequest(entityName: "Sample"), as: TypedSample.self).first)
            #expect(sample.i16 == -16 && sample.i32 == 32 && sample.i64 == .max)
            #expect(sample.dbl == -0.5 && sample.flt == 1.5 && sample.flag == true && sample.text == "Żółć")
            #expect(sample.when == when && sample.blob == Data([0, 255]) && sample.uid == uid)
            #expect(sample.link == link && sample.amount == amount)
            sample.text = nil
            #expect(sample.text == nil)
        }
    }

    @Test func codableDefaultsTransientAndInferredInverseRoundTrip() throws {
        let model = try Self.gadgets()
        // The to-one names no inverse; the model takes it from Owner.gadgets.
        #expect(Gadget.entityDescription.relationships.first?.inverse == nil)
        #expect(model.entity(named: "Gadget")?.relationship(named: "owner")?.inverse == "gadgets")
        let attributes = try #require(model.entity(named: "Gadget")).attributes
        #expect(attributes.map(\.name) == ["title", "count", "rating", "ratio", "created", "finish", "size", "tags", "labels"])
        #expect(attributes.map(\.type) == [.string, .int64, .int16, .double, .date, .binary, .binary, .binary, .binary])
        #expect(attributes.map(\.isOptional) == [false, false, false, true, false, false, true, false, true])
        #expect(attributes[1].defaultValue == .int64(3) && attributes[2].defaultValue == .int16(-1))
        #expect(attributes[5].defaultValue == .binary(Data("\"matte\"".utf8)), "Codable defaults are their JSON")
        #expect(attributes[7].defaultValue == .binary(Data("[]".utf8)))
        #expect(attributes[8].renamingIdentifier == "labels")

        let store = try TestStore(model: model)
        let created = Date(timeIntervalSinceReferenceDate: 99)
        try store.context.performAndWait {
            let gadget = try store.context.insert(Gadget.self)
            #expect(gadget.title == "" && gadget.count == 3 && gadget.rating == -1 && gadget.ratio == nil)
            #expect(gadget.created == nil, "T! reads nil until set")
            #expect(gadget.finish == .matte && gadget.size == nil && gadget.tags == [] && gadget.labels == nil)
            #expect(throws: ValidationError.self, "created is required") { try store.context.save() }
            gadget.title = "Lamp"
            gadget.created = created
            gadget.finish = .gloss
            gadget.size = Dimensions(width: 2, height: 0.5)
            gadget.tags = ["b", "a"]
            gadget.labels = ["x"]
            gadget.scratch = 42
            let owner = try store.context.insert(Owner.self)
            owner.name = "Ann"
            gadget.owner = owner
            #expect(owner.gadgets == [gadget], "the inverse the model filled in is maintained")
            #expect(try gadget.value(forKey: "size") as? Data == Data(#"{"height":0.5,"width":2}"#.utf8), "sorted-key JSON")
            try store.context.save()
            #expect(gadget.scratch == 42)
        }
        let reopened = try store.reopened(model: model)
        try reopened.context.performAndWait {
            let gadget = try #require(try reopened.context.fetch(FetchRequest(entityName: "Gadget"), as: Gadget.self).first)
            #expect(gadget.title == "Lamp" && gadget.created == created && gadget.finish == .gloss)
            #expect(gadget.size == Dimensions(width: 2, height: 0.5) && gadget.tags == ["b", "a"] && gadget.labels == ["x"])
            #expect(gadget.scratch == 0, "a transient is not stored")
            #expect(gadget.owner?.name == "Ann")
            #expect(gadget.owner?.gadgets == [gadget])
            gadget.size = nil
            gadget.owner = nil
            try reopened.context.save()
            #expect(gadget.size == nil)
        }
    }

    @Test func propertyNamesForKeyPaths() {
        #expect(TypedGood.propertyName(for: \TypedGood.name) == "name")
        #expect(TypedGood.propertyName(for: \TypedGood.number) == "number")
        #expect(TypedGood.propertyName(for: \TypedGood.category) == "category")
        #expect(TypedCategory.propertyName(for: \TypedCategory.goods) == "goods")
        #expect(Gadget.propertyName(for: \Gadget.finish) == "finish")
        #expect(Gadget.propertyName(for: \Gadget.scratch) == nil, "a transient is no persistent property")
        #expect(Gadget.propertyName(for: \Gadget.objectID) == nil)
        #expect(Gadget.propertyName(for: \Owner.name) == nil, "a key path rooted elsewhere")
        #expect(Gadget.propertyName(for: \Gadget.owner?.name) == nil, "two components")
    }
}
