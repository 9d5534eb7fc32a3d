import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The typed reads' attribute lookup (``AttributeKeys``) answers what the byte lookup
/// (``SlotTable``) answers for every key, finds every small attribute name at its first probe,
/// and leaves every other key (long names, relationships, unknown keys) to the byte lookup.
@Suite struct AttributeKeysTests {
    /// Names of the kinds a model has: short and long, sharing lengths and end bytes, accented.
    static let names = ["dep_time", "dxp_time", "arr_time", "air_time", "a", "b", "tailnum", "time_hour",
                        "sched_dep_time", "a_property_name_longer_than_fifteen_bytes", "é_accented", "fifteen_bytes_x"]
        + (0..<60).map { "p\($0)" }

    @Test func answersAsTheByteLookupDoes() {
        let keys = AttributeKeys(Self.names)
        var firstProbe = 0, small = 0
        for (index, name) in Self.names.enumerated() {
            if name.utf8.count <= 15 {
                small += 1
                #expect(keys.index(name) == index, "\(name)")
                if keys.probes(name) == 1 { firstProbe += 1 }
            } else {
                // A long name's words point at its storage: left to the byte lookup.
                #expect(keys.index(name) == -1, "\(name)")
            }
            // The same bytes in a string built at run time: found by its words too when small
            // (a small string's words are its bytes), never a wrong index.
            let native = String(decoding: Array(name.utf8), as: UTF8.self)
            #expect([index, -1].contains(keys.index(native)), "\(name)")
        }
        #expect(firstProbe == small, "every small name at its first probe: \(firstProbe) of \(small)")
        for miss in ["", "dep_tim", "dep_timee", "dzp_time", "A", "c", "p60", "a_property_name_longer_than_fifteen_bytez", "e_accented"] {
            #expect(keys.index(miss) == -1, "\(miss)")
        }
        print("attribute-keys: names=\(Self.names.count) small=\(small) first-probe=\(firstProbe)")
    }

    /// Entities of many attributes too: the table grows until one multiplier places every small
    /// name alone (up to 64 entries a name), so a hit never probes, checked up to 300 attributes.
    /// Past that the table stops growing and some names probe (991 of 1,000 at the first probe
    /// here): every answer is still right.
    @Test(arguments: [1, 16, 100, 300, 1_000])
    func everySmallNameAtItsFirstProbe(count: Int) {
        let names = (0..<count).map { "attribute_\($0)" }
        let keys = AttributeKeys(names)
        var firstProbe = 0
        for (index, name) in names.enumerated() {
            #expect(keys.index(name) == index, "\(name)")
            if keys.probes(name) == 1 { firstProbe += 1 }
        }
        if count <= 300 {
            #expect(firstProbe == count, "\(firstProbe) of \(count) at the first probe")
        } else {
            #expect(firstProbe * 100 >= count * 95, "\(firstProbe) of \(count) at the first probe")
        }
        #expect(keys.index("attribute_\(count)") == -1)
        print("attribute-keys: names=\(count) first-probe=\(firstProbe)")
    }

    /// Every typed read of a stored object, through both lookups (a literal key, a key made at
    /// run time, a long name), for each type's own tag, a converted type, nil, and misuse-free
    /// reads of every attribute of `TestModels.allTypes` against `value(forKey:)`.
    @Test func typedReadsOfStoredObjects() throws {
        let longName = "a_property_name_longer_than_fifteen_bytes"
        let model = try Model(version: "1", entities: [
            Entity("Row", attributes: [
                Attribute("i64", .int64), Attribute("i16", .int16), Attribute("dbl", .double), Attribute("text", .string),
                Attribute("flag", .bool), Attribute("when", .date), Attribute(longName, .string), Attribute("none", .int64),
            ]),
        ])
        let directory = TemporaryDirectory()
        let url = directory.file("keys.sqlite")
        let when = Date(timeIntervalSinceReferenceDate: 123_456.5)
        do {
            let coordinator = try StoreCoordinator(model: model, url: url)
            defer { coordinator.close() }
            let context = coordinator.newContext()
            try context.performAndWait {
                let row = try context.insert("Row")
                try row.setValue(Int64(-7), forKey: "i64")
                try row.setValue(Int16(12), forKey: "i16")
                try row.setValue(2.5, forKey: "dbl")
                try row.setValue(String(repeating: "heap string ", count: 3), forKey: "text")
                try row.setValue(true, forKey: "flag")
                try row.setValue(when, forKey: "when")
                try row.setValue("long", forKey: longName)
                try context.save()
            }
        }
        let coordinator = try StoreCoordinator(model: model, url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let row = try #require(try context.fetch(FetchRequest(entityName: "Row")).first)
            #expect(row[attribute: "i64"] as Int64? == -7)
            #expect(row[attribute: "i64"] as Int? == -7)
            #expect(row[attribute: "i16"] as Int64? == 12)          // converted: int16's tag
            #expect(row[attribute: "i16"] as Int16? == 12)          // the generic read
            #expect(row[attribute: "dbl"] as Double? == 2.5)
            #expect(row[attribute: "text"] as String? == String(repeating: "heap string ", count: 3))
            #expect(row[attribute: "flag"] as Bool? == true)
            #expect(row[attribute: "when"] as Date? == when)
            #expect(row[attribute: longName] as String? == "long")   // the byte lookup
            #expect(row[attribute: "none"] as Int64? == nil)
            let key = String(decoding: Array("dbl".utf8), as: UTF8.self)
            #expect(row[attribute: key] as Double? == 2.5)
            let built = ["t", "e", "x", "t"].joined()
            #expect(row[attribute: built] as String? == String(repeating: "heap string ", count: 3))
        }
    }

    /// Each entry carries where its attribute's value and tag are in a row of the entity (the
    /// typed reads go straight there): the row layout's own offsets, wide slots (strings,
    /// UUIDs) shifting every value after them, and a value written through the row is the one
    /// found at the entry's offset, with its tag.
    @Test func entriesCarryTheRowsOffsets() throws {
        let types: [AttributeType] = [.string, .int64, .uuid, .double, .string, .date, .bool]
        let names = ["name", "count", "identifier", "score", "note", "when", "flag"]
        let layout = RowLayout(attributeTypes: types, toOneCount: 2)
        let keys = AttributeKeys(names, layout: layout)
        var valueOffsets: [UInt32] = []
        for (index, name) in names.enumerated() {
            let entry = try #require(keys.entry(name)).pointee
            #expect(entry.index == index)
            let offsets = layout.offsets(ofAttribute: index)
            #expect(entry.valueOffset == offsets.value && entry.tagOffset == offsets.tag, "\(name)")
            valueOffsets.append(entry.valueOffset)
        }
        #expect(valueOffsets == [0, 16, 24, 40, 48, 64, 72], "strings and UUIDs take two words")
        #expect(keys.entry("missing") == nil && keys.entry("a_name_longer_than_fifteen") == nil)

        let row = RowSnapshot(attributes: [.string("n"), .int64(7), .uuid(UUID()), .double(2.5), .string("x"), .date(Date(timeIntervalSinceReferenceDate: 9)), .bool(true)],
                              toOnes: [nil, 3])
        let entries = try names.map { try #require(keys.entry($0)) }
        #expect(row.attributeValue(entries[1], taggedAs: RowTag.int64)?.load(as: Int64.self) == 7)
        #expect(row.attributeValue(entries[3], taggedAs: RowTag.double)?.load(as: Double.self) == 2.5)
        #expect(row.attributeValue(entries[5], taggedAs: RowTag.date)?.load(as: Double.self) == 9)
        #expect(row.attributeValue(entries[4], taggedAs: RowTag.string)?.load(as: String.self) == "x")
        // Another tag than the slot holds: no address (the read takes its general path).
        #expect(row.attributeValue(entries[1], taggedAs: RowTag.double) == nil)
        // A fault's empty row has no attribute at all.
        #expect(RowSnapshot.empty.attributeValue(entries[0], taggedAs: RowTag.string) == nil)
    }
}
