import Foundation
import Testing
import StrataTestSupport
@testable import Strata

@Suite struct AttributeRoundTripTests {
    /// Computed, not stored: see ``SectionCacheFaultTests/old``.
    static var bigBlob: Data { Data((0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }) }

    /// (key, value written) — each read back after closing and reopening the store.
    static func cases() -> [[String: Any?]] { [
        ["i16": Int16.min, "i32": Int32.max, "i64": Int64.min, "dbl": -0.0, "flt": Float.leastNonzeroMagnitude,
         "flag": true, "text": "", "when": Date(timeIntervalSinceReferenceDate: 0.000_001),
         "blob": Data(), "uid": UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
         "link": URL(string: "file:///tmp/a%20b")!, "amount": Decimal(string: "-0.000000000000000001")!],
        ["i16": Int16.max, "i32": Int32.min, "i64": Int64.max, "dbl": Double.infinity, "flt": -Float.infinity,
         "flag": false, "text": "ÉCOLE école 日本語 🇵🇱 \u{0} end", "when": Date(timeIntervalSince1970: 1_732_000_000.123_456),
         "blob": bigBlob, "uid": UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!,
         "link": URL(string: "https://例え.jp/パス?q=1")!, "amount": Decimal(string: "99999999999999999999999999999999999999")!],
        ["dbl": Double.greatestFiniteMagnitude, "flt": Float.greatestFiniteMagnitude, "when": Date.distantPast, "text": "x"],
        ["dbl": -Double.leastNonzeroMagnitude, "when": Date.distantFuture, "text": String(repeating: "ß", count: 100_000)],
        [:], // every attribute nil
    ] }

    @Test(arguments: 0..<5)
    func everyAttributeTypeRoundTripsThroughTheStore(_ index: Int) throws {
        let values = Self.cases()[index]
        let store = try TestStore()
        let id = try store.context.performAndWait {
            let sample = try store.context.insert("Sample")
            for (key, value) in values { try sample.setValue(value ?? nil, forKey: key) }
            try store.context.save()
            return sample.objectID
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait {
            let sample = try reopened.context.existingObject(with: id)
            for attribute in TestModels.allTypes {
                let read = try sample.value(forKey: attribute.name)
                let written = values[attribute.name] ?? nil
                try Self.expectIdentical(read, written, key: attribute.name)
            }
        }
    }

    static func expectIdentical(_ read: Any?, _ written: Any?, key: String) throws {
        switch (read, written) {
        case (nil, nil): return
        case let (r as Double, w as Double):
            #expect(r.bitPattern == w.bitPattern, "\(key): \(r) vs \(w)")
        case let (r as Float, w as Float):
            #expect(r.bitPattern == w.bitPattern, "\(key): \(r) vs \(w)")
        case let (r as Date, w as Date):
            #expect(r.timeIntervalSinceReferenceDate.bitPattern == w.timeIntervalSinceReferenceDate.bitPattern, "\(key)")
        case let (r as String, w as String):
            #expect(Array(r.utf8) == Array(w.utf8), "\(key): \(r.utf8.count) vs \(w.utf8.count) bytes")
        case let (r as Data, w as Data):
            #expect(r == w, "\(key): \(r.count) vs \(w.count) bytes")
        case let (r as AnyHashable, w as AnyHashable):
            #expect(r == w, "\(key): \(r) vs \(w)")
        default:
            Issue.record("\(key): read \(String(describing: read)), wrote \(String(describing: written))")
        }
    }

    @Test func integerValuesConvertOnlyWhenExact() throws {
        let store = try TestStore()
        try store.context.performAndWait {
            let sample = try store.context.insert("Sample")
            try sample.setValue(42, forKey: "i16")
            #expect(try sample.value(forKey: "i16") as? Int16 == 42)
            try sample.setValue(7, forKey: "dbl")
            #expect(try sample.value(forKey: "dbl") as? Double == 7)
            #expect(throws: ObjectError.invalidValue(entity: "Sample", key: "i16", reason: "40000 is out of range for int16")) {
                try sample.setValue(40_000, forKey: "i16")
            }
            #expect(try sample.value(forKey: "i16") as? Int16 == 42)
        }
    }
}
