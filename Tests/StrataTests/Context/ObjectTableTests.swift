import Foundation
@testable import Strata
import Testing

/// `ObjectTable`, the contexts' identity map and change tables, checked against the dictionary it
/// replaced: random inserts, replacements, removals (which leave holes and shift index entries
/// back), lookups, copies mutated apart, rebuilds, and iteration in the order objects were added
/// (a replaced object keeps its place), over keys of two entities that collide on purpose.
@Suite struct ObjectTableTests {
    static let model = try! Model(entities: [
        Entity("A", attributes: [Attribute("name", .string)]),
        Entity("B", attributes: [Attribute("name", .string)]),
    ])

    /// The largest key range: 5,000 (60,000 random steps, each checked against a dictionary and
    /// an order list); `STRATA_OBJECT_TABLE_KEYS` sets it (CI's AddressSanitizer pass: 1,000,
    /// where the 5,000 case alone took six of its seven minutes; the plain pass runs 5,000).
    static let largeKeyRange = ProcessInfo.processInfo.environment["STRATA_OBJECT_TABLE_KEYS"].flatMap { Int($0) } ?? 5_000

    @Test(arguments: [20, 300, largeKeyRange])
    func behavesAsTheDictionary(keyRange: Int) throws {
        let coordinator = try StoreCoordinator(inMemoryWith: Self.model)
        let context = coordinator.newContext()
        try context.performAndWait {
            // Faults of both entities, the same keys in each (negative ones too).
            var objects: [ManagedObject] = []
            for entity in ["A", "B"] {
                for key in -keyRange / 4..<keyRange {
                    objects.append(try context.object(with: ObjectID(entityName: entity, primaryKey: Int64(key))))
                }
            }
            var generator = SystemRandomNumberGenerator()
            var table = ObjectTable(), reference: [ObjectID: ManagedObject] = [:]
            // The order iteration must give: first added first, a replacement in place.
            var order: [ObjectID] = []
            var copies: [(ObjectTable, [ObjectID: ManagedObject], [ObjectID])] = []
            var counts = [String: Int]()
            for step in 0..<(keyRange * 12) {
                let object = objects.randomElement(using: &generator)!
                let id = object.objectID
                let usedBefore = table.entriesUsed, countBefore = table.count
                switch Int.random(in: 0..<11, using: &generator) {
                case 0..<5:
                    counts[reference[id] == nil ? "insert" : "replace", default: 0] += 1
                    if reference[id] == nil { order.append(id) }
                    table[id] = object
                    reference[id] = object
                case 5..<8:
                    counts[reference[id] == nil ? "remove absent" : "remove", default: 0] += 1
                    order.removeAll { $0 == id }
                    #expect(table.removeValue(forKey: id) === reference.removeValue(forKey: id))
                case 8:
                    counts["set nil", default: 0] += 1
                    order.removeAll { $0 == id }
                    table[id] = nil
                    reference[id] = nil
                case 9:
                    // Several absent keys at once (what a fetch into an empty context does),
                    // into a table that may hold holes or share its storage with a copy.
                    var batch: [ManagedObject] = []
                    for candidate in objects.shuffled(using: &generator).prefix(8)
                    where reference[candidate.objectID] == nil && !batch.contains(where: { $0 === candidate }) {
                        batch.append(candidate)
                    }
                    counts["insert new (batch)", default: 0] += 1
                    counts["insert new (objects)", default: 0] += batch.count
                    batch.withUnsafeBufferPointer { table.insertNew($0) }
                    for added in batch {
                        reference[added.objectID] = added
                        order.append(added.objectID)
                        #expect(table[added.objectID] === added)
                    }
                default:
                    // A copy now and then, checked at the end (a few dozen: each check is whole).
                    if copies.count < 40 {
                        counts["copy", default: 0] += 1
                        copies.append((table, reference, order))
                    }
                }
                #expect(table[id] === reference[id])
                #expect(table.count == reference.count)
                if Self.rebuiltDroppingHoles(table, usedBefore: usedBefore, countBefore: countBefore) {
                    counts["rebuild dropping holes", default: 0] += 1
                }
                if step % max(97, keyRange * 2) == 0 { try Self.expectSame(table, reference, order) }
            }
            // Every lookup, present or not.
            for object in objects { #expect(table[object.objectID] === reference[object.objectID]) }
            try Self.expectSame(table, reference, order)
            // Copies kept their contents while the table changed on.
            for (copy, expected, expectedOrder) in copies { try Self.expectSame(copy, expected, expectedOrder) }
            // Removing all but a few objects and adding new ones rebuilds the table without its
            // holes, in order.
            for id in order.dropLast(3) { table[id] = nil }
            order = Array(order.suffix(3))
            reference = reference.filter { order.contains($0.key) }
            #expect(table.entriesUsed > table.count, "the removals left holes")
            let room = table.entryCapacity - table.entriesUsed
            var finalRebuilds = 0, added = 0
            for object in objects where reference[object.objectID] == nil {
                let usedBefore = table.entriesUsed, countBefore = table.count
                table[object.objectID] = object
                if Self.rebuiltDroppingHoles(table, usedBefore: usedBefore, countBefore: countBefore) { finalRebuilds += 1 }
                reference[object.objectID] = object
                order.append(object.objectID)
                added += 1
            }
            try Self.expectSame(table, reference, order)
            // (A batch of new keys may have grown the table enough that the additions fit.)
            if added > room {
                #expect(finalRebuilds >= 1, "adding past the entries' capacity rebuilt the table without its holes")
            }
            counts["rebuild dropping holes", default: 0] += finalRebuilds
            table.removeAll()
            #expect(table.isEmpty && table[objects[0].objectID] == nil)
            print("object-table: keys=\(keyRange) \(counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")) copies=\(copies.count)")
            #expect(counts["remove", default: 0] > 0 && counts["replace", default: 0] > 0 && counts["insert new (objects)", default: 0] > 0)
        }
    }

    /// Whether the step just taken rebuilt the table and dropped holes it had: it held more
    /// entries than objects before, and as many as it holds objects now.
    static func rebuiltDroppingHoles(_ table: ObjectTable, usedBefore: Int, countBefore: Int) -> Bool {
        usedBefore > countBefore && table.entriesUsed == table.count
    }

    /// The table holds the objects (8 bytes an entry, a 4-byte entry number and a control byte a
    /// slot), not their IDs beside them.
    @Test func aSlotIsAnObjectReference() {
        #expect(MemoryLayout<ManagedObject?>.stride == 8)
        #expect(MemoryLayout<ObjectTable>.size == 8)
    }

    static func expectSame(_ table: ObjectTable, _ reference: [ObjectID: ManagedObject], _ order: [ObjectID],
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Array(table.keys) == order, "iteration is in the order objects were added", sourceLocation: sourceLocation)
        #expect(table.count == reference.count, sourceLocation: sourceLocation)
        var seen = Set<ObjectID>()
        for (id, object) in table {
            #expect(object.objectID == id, sourceLocation: sourceLocation)
            #expect(reference[id] === object, sourceLocation: sourceLocation)
            #expect(seen.insert(id).inserted, "\(id) listed twice", sourceLocation: sourceLocation)
        }
        #expect(seen.count == reference.count, sourceLocation: sourceLocation)
        #expect(Set(table.keys) == Set(reference.keys), sourceLocation: sourceLocation)
        #expect(table.values.count == reference.count, sourceLocation: sourceLocation)
    }
}

/// Dictionary-shaped views of a table, for tests that compare a context's tables with
/// expectations (the library itself never needs them).
extension ObjectTable {
    /// The entries as a dictionary, each object transformed (as `Dictionary.mapValues`).
    func mapValues<T>(_ transform: (ManagedObject) throws -> T) rethrows -> [ObjectID: T] {
        var result: [ObjectID: T] = [:]
        for object in values { result[object.objectID] = try transform(object) }
        return result
    }

    /// The entries that satisfy `isIncluded`, as a dictionary (as `Dictionary.filter`).
    func filter(_ isIncluded: ((key: ObjectID, value: ManagedObject)) throws -> Bool) rethrows -> [ObjectID: ManagedObject] {
        var result: [ObjectID: ManagedObject] = [:]
        for entry in self where try isIncluded(entry) { result[entry.key] = entry.value }
        return result
    }
}
