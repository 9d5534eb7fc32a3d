import Foundation
@testable import Strata
import Testing

/// `ObjectID` keeps its entity's name interned (16 bytes, compared by address): it must still
/// behave exactly as the pair (entity name, primary key) it stands for.
@Suite struct ObjectIDTests {
    @Test func anIDIsSixteenBytes() {
        #expect(MemoryLayout<ObjectID>.size == 16)
    }

    /// Equality, hashing and order agree with the (name, key) pair, over random IDs of names that
    /// share prefixes, differ only in case, are long enough to live on the heap, or are not ASCII
    /// (one of them in two normalisations).
    @Test func equalityHashAndOrderAreThoseOfTheNameAndKey() {
        let names = ["Good", "Goods", "good", "Category", "A", "",
                     "AnEntityWhoseNameIsLongerThanFifteenBytes", "AnEntityWhoseNameIsLongerThanFifteenBytesToo",
                     // Non-ASCII, one of them twice: precomposed and decomposed (equal as `String`s).
                     "Été", "E\u{301}té", "Zoë", "Goods\u{301}"]
        var generator = SystemRandomNumberGenerator()
        var pairs: [(String, Int64)] = []
        for _ in 0..<400 {
            pairs.append((names.randomElement(using: &generator)!, Int64.random(in: -3...3, using: &generator)))
        }
        var comparisons = 0, equal = 0
        for (leftName, leftKey) in pairs.prefix(80) {
            // A name built anew each time (not the literal's storage) must intern to the same entity.
            let left = ObjectID(entityName: String(decoding: Array(leftName.utf8), as: UTF8.self), primaryKey: leftKey)
            #expect(left.entityName == leftName && left.primaryKey == leftKey)
            for (rightName, rightKey) in pairs {
                let right = ObjectID(entityName: rightName, primaryKey: rightKey)
                let same = leftName == rightName && leftKey == rightKey
                #expect((left == right) == same)
                if same { #expect(left.hashValue == right.hashValue); equal += 1 }
                #expect((left < right) == ((leftName, leftKey) < (rightName, rightKey)))
                comparisons += 1
            }
        }
        print("object-id: comparisons=\(comparisons) equal=\(equal)")
        #expect(equal > 0)
    }

    /// Names interned from many threads at once give one entity each.
    @Test func namesInternedConcurrentlyAreOne() async {
        let names = (0..<32).map { "Concurrent\($0)-\(UUID())" }
        let ids = await withTaskGroup(of: [ObjectID].self) { group in
            for _ in 0..<8 {
                group.addTask { names.map { ObjectID(entityName: $0, primaryKey: 1) } }
            }
            var all: [[ObjectID]] = []
            for await list in group { all.append(list) }
            return all
        }
        for list in ids { #expect(list == ids[0]) }
        #expect(Set(ids.flatMap { $0 }).count == names.count)
    }

    /// An object's ID, made from its entity's interned name, equals one made from the name.
    @Test func anObjectsIDEqualsOneMadeFromItsName() throws {
        let model = try Model(entities: [Entity("Good", attributes: [Attribute("name", .string)])])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-objectid-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let container = try PersistentContainer(model: model, url: directory.appendingPathComponent("goods.sqlite"))
        let context = container.newUpdateContext()
        try context.performAndWait {
            let good = try context.insert("Good")
            let id = ObjectID(entityName: "Good", primaryKey: good.objectID.primaryKey)
            #expect(good.objectID == id)
            #expect(try context.object(with: id) === good)
            #expect(good.objectID.description == "Good/\(good.objectID.primaryKey)")
        }
    }
}
