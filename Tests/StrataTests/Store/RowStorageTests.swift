import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// ``RowStorage`` keeps a row's values in one allocation of slots (issue 20). This suite checks it
/// against the plain arrays it replaced: every value of every type, in every slot (a value whose
/// type differs from the slot's is boxed), copies that must not see each other's changes, and
/// the references it holds (strings, boxes) released exactly once (AddressSanitizer runs it).
@Suite struct RowStorageTests {
    static let types: [AttributeType] = [.int16, .int32, .int64, .double, .float, .bool, .string, .date, .binary, .uuid, .url, .decimal]

    /// A value of `type` more often than not (the common case: natively stored), else of any
    /// type or nil.
    static func randomValue(_ rng: inout SplitMix64, preferring type: AttributeType) -> AttributeValue? {
        guard Int.random(in: 0..<10, using: &rng) < 6 else { return randomValue(&rng) }
        while true {
            if let value = randomValue(&rng), value.type == type { return value }
        }
    }

    static func randomValue(_ rng: inout SplitMix64) -> AttributeValue? {
        switch Int.random(in: 0..<14, using: &rng) {
        case 0: return .int16(Int16.random(in: .min ... .max, using: &rng))
        case 1: return .int32(Int32.random(in: .min ... .max, using: &rng))
        case 2: return .int64([0, -1, .min, .max, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng)!)
        case 3: return .double([0.0, -0.0, .infinity, -.infinity, .ulpOfOne, Double.random(in: -1e9...1e9, using: &rng)].randomElement(using: &rng)!)
        case 4: return .float([0, -0.0, .infinity, Float.random(in: -1e6...1e6, using: &rng)].randomElement(using: &rng)!)
        case 5: return .bool(Bool.random(using: &rng))
        case 6:
            // Small (inline) and large (heap) strings, non-ASCII among them.
            let lengths = [0, 1, 15, 16, 40]
            let count = lengths.randomElement(using: &rng)!
            return .string(String((0..<count).map { _ in "aÉz😀 ".randomElement(using: &rng)! }))
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &rng)) / 8))
        case 8: return .binary(Data((0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case 9: return .uuid(UUID())
        case 10: return .url(URL(string: "https://example.com/\(Int.random(in: 0...999, using: &rng))")!)
        case 11: return .decimal(Decimal(string: "\(Int.random(in: -99999...99999, using: &rng)).\(Int.random(in: 0...99, using: &rng))")!)
        default: return nil
        }
    }

    /// Random rows, changes, copies and comparisons, against arrays; prints how often a value
    /// went into a slot of its own type and into one of another type (a string or data into a
    /// number's slot is boxed; a number into another number's slot keeps its own tag).
    @Test func slotsBehaveAsTheArraysTheyReplaced() {
        var rng = SplitMix64(seed: 0x5EED_0020)
        var ownType = 0, otherType = 0, copies = 0, comparisons = 0, resets = 0, viewChanges = 0, replacements = 0
        for _ in 0..<300 {
            let types = (0..<Int.random(in: 0...14, using: &rng)).map { _ in Self.types.randomElement(using: &rng)! }
            let toOneCount = Int.random(in: 0...3, using: &rng)
            let layout = RowLayout(attributeTypes: types, toOneCount: toOneCount)
            let defaults = types.indices.filter { _ in Bool.random(using: &rng) }.map { ($0, Self.randomValue(&rng)) }
            // Each model: the arrays, and the row that must read the same.
            var models: [([AttributeValue?], [Int64?])] = [(Array(repeating: nil, count: types.count), Array(repeating: nil, count: toOneCount))]
            var rows = [RowSnapshot(layout: layout)]
            for (index, value) in defaults {
                models[0].0[index] = value
                rows[0].setAttribute(value, at: index)
            }
            for _ in 0..<40 {
                let which = Int.random(in: 0..<rows.count, using: &rng)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0...4 where !types.isEmpty:
                    let index = Int.random(in: 0..<types.count, using: &rng)
                    let value = Self.randomValue(&rng, preferring: types[index])
                    if let value { if value.type == types[index] { ownType += 1 } else { otherType += 1 } }
                    models[which].0[index] = value
                    rows[which].setAttribute(value, at: index)
                case 5 where toOneCount > 0:
                    let index = Int.random(in: 0..<toOneCount, using: &rng)
                    let key: Int64? = Bool.random(using: &rng) ? Int64.random(in: .min ... .max, using: &rng) : nil
                    models[which].1[index] = key
                    // Through the direct call, or the view's `_modify`.
                    if Bool.random(using: &rng) { rows[which].setToOne(key, at: index) } else { rows[which].toOnes[index] = key; viewChanges += 1 }
                case 6:
                    // A copy shares the storage until one of them changes.
                    models.append(models[which])
                    rows.append(rows[which])
                    copies += 1
                case 7 where !types.isEmpty:
                    // Changes through the collection view (its `_modify`) and whole replacement.
                    let index = Int.random(in: 0..<types.count, using: &rng)
                    let value = Self.randomValue(&rng, preferring: types[index])
                    models[which].0[index] = value
                    rows[which].attributes[index] = value
                    viewChanges += 1
                    let other = Int.random(in: 0..<rows.count, using: &rng)
                    models[which].0 = models[other].0
                    rows[which].attributes = rows[other].attributes
                    models[which].1 = models[other].1
                    rows[which].toOnes = rows[other].toOnes
                    replacements += 1
                case 8:
                    // Back to the defaults, in place (a batch insert's reuse of one row).
                    var fresh: [AttributeValue?] = Array(repeating: nil, count: types.count)
                    for (index, value) in defaults { fresh[index] = value }
                    models[which] = (fresh, Array(repeating: nil, count: toOneCount))
                    rows[which].resetToDefaults(defaults.compactMap { pair in pair.1.map { (pair.0, $0) } }, layout: layout)
                    resets += 1
                default:
                    let other = Int.random(in: 0..<rows.count, using: &rng)
                    let expected = models[which].0 == models[other].0 && models[which].1 == models[other].1
                    #expect((rows[which] == rows[other]) == expected)
                    comparisons += 1
                }
                for (model, row) in zip(models, rows) {
                    #expect(Array(row.attributes) == model.0)
                    #expect(Array(row.toOnes) == model.1)
                    for index in model.0.indices { #expect(row.attribute(index) == model.0[index]) }
                }
            }
            // The arrays' own initialiser lays the row out from its values.
            let rebuilt = RowSnapshot(attributes: models[0].0, toOnes: models[0].1)
            #expect(rebuilt == rows[0])
        }
        print("row-storage: values of the slot's type=\(ownType) of another type=\(otherType) copies=\(copies) comparisons=\(comparisons) resets=\(resets) view-changes=\(viewChanges) replacements=\(replacements)")
        #expect(ownType > 1_000 && otherType > 1_000 && copies > 100 && comparisons > 100 && resets > 100 && viewChanges > 100 && replacements > 100)
    }

    /// A flight's row (16 attributes, 3 to-ones) is one allocation of 216 bytes, where the two
    /// arrays it replaces took 416 + 80 (and the first `RowStorage`, with its shapes in each row,
    /// 264).
    @Test func aFlightsRowIsOneSmallAllocation() {
        let types: [AttributeType] = Array(repeating: .int64, count: 10) + Array(repeating: .double, count: 4) + [.string, .date]
        let layout = RowLayout(attributeTypes: types, toOneCount: 3)
        // 15 words of numbers, 2 of a string, 3 of keys; then 19 tags: 179 bytes, in 23 words.
        // The shapes live in the layout's table, shared by every row.
        #expect(layout.wordCount == 23)
        // The object's header (16 bytes), the row's own header (16), the words.
        #expect(MemoryLayout<RowStorageHeader>.size == 16)
        #expect(16 + 16 + layout.wordCount * 8 == 216)
        // Two layouts of the same shapes share one table.
        let again = RowLayout(attributeTypes: types, toOneCount: 3)
        #expect(again.header.shapes == layout.header.shapes)
    }

    /// Reading the same attribute from a row and from its copy gives equal strings, and a
    /// change to one does not reach the other (copy on write).
    @Test func aCopyDoesNotSeeTheOriginalsChanges() {
        let layout = RowLayout(attributeTypes: [.string, .binary, .int64], toOneCount: 1)
        var row = RowSnapshot(layout: layout)
        row.setAttribute(.string(String(repeating: "long string ", count: 4)), at: 0)
        row.setAttribute(.binary(Data([1, 2, 3])), at: 1)
        row.setToOne(7, at: 0)
        var copy = row
        copy.setAttribute(.string("other"), at: 0)
        copy.setAttribute(nil, at: 1)
        copy.setToOne(nil, at: 0)
        #expect(row.attribute(0) == .string(String(repeating: "long string ", count: 4)))
        #expect(row.attribute(1) == .binary(Data([1, 2, 3])))
        #expect(row.toOnes[0] == 7)
        #expect(copy.attribute(0) == .string("other") && copy.attribute(1) == nil && copy.toOnes[0] == nil)
        #expect(row != copy)
    }
}

