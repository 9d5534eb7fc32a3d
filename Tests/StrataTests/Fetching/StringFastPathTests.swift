import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@testable import Strata

/// The C fast path of `strata_fold` / `strata_match` (strata_strings.c) against their
/// definition, `StringMatching` in Swift: random texts, mostly ASCII (the fast path) with
/// wildcards, case and the odd non-ASCII scalar (the fallback), every operator and option, the
/// left side folded by `strata_fold` or inside `strata_match`.
@Suite struct StringFastPathTests {
    static let alphabet: [String] = ["a", "b", "A", "B", "z", "Z", "*", "?", "%", "_", " ", ".", "é", "É", "e\u{301}", "ß", "İ", "日", "\u{0}", "@", "[", "`", "{"]

    static func text(_ rng: inout SplitMix64, ascii: Bool) -> String {
        let letters = ascii ? alphabet.filter { $0.utf8.allSatisfy { $0 < 0x80 } } : alphabet
        return (0..<rng.int(0...7)).map { _ in rng.pick(letters) }.joined()
    }

    @Test func fastPathAgreesWithTheSwiftDefinition() throws {
        let connection = try Connection.inMemory()
        defer { connection.close() }
        try StringMatching.register(on: connection)
        let match = try connection.prepare("SELECT strata_match(?1, ?2, ?3, ?4), strata_match(?1, ?2 | 256, ?5, ?4), strata_fold(?5, ?2)")
        var rng = SplitMix64(seed: 0xFA57)
        let operators: [Comparison.Operator] = [.contains, .beginsWith, .endsWith, .like]
        var cases = 0, asciiCases = 0
        for _ in 0..<20_000 {
            let raw = Self.text(&rng, ascii: rng.chance(0.8))
            let options = Comparison.Options(rawValue: rng.int(0...3))
            // The pattern as the SQL back end binds it: a constant folded once.
            let pattern = StringMatching.fold(Self.text(&rng, ascii: rng.chance(0.8)), options)
            let op = rng.pick(operators)
            let folded = StringMatching.fold(raw, options)
            let expected = StringMatching.evaluate(op, options, .text(folded), .text(pattern))
            try match.bind([.integer(StringMatching.operatorCodes[op]!), .integer(Int64(options.rawValue)), .text(folded), .text(pattern), .text(raw)])
            #expect(try match.step())
            let (viaFold, inMatch, fold) = (match.int64(at: 0), match.int64(at: 1), match.string(at: 2))
            match.reset()
            #expect(viaFold == (expected ? 1 : 0), "\(op) \(options.rawValue) \(raw.debugDescription) \(pattern.debugDescription)")
            #expect(inMatch == (expected ? 1 : 0), "folded in match: \(op) \(options.rawValue) \(raw.debugDescription) \(pattern.debugDescription)")
            #expect(Array(fold.utf8) == Array(folded.utf8), "fold \(options.rawValue) \(raw.debugDescription)")
            cases += 1
            if raw.utf8.allSatisfy({ $0 < 0x80 }) { asciiCases += 1 }
        }
        // Values that are not text: no match, and folding leaves them as they are.
        let other = try connection.prepare("SELECT strata_match(2, 257, 42, '4'), strata_match(2, 1, 'a', NULL), typeof(strata_fold(42, 1)), strata_fold(NULL, 1) IS NULL")
        #expect(try other.step())
        #expect(other.int64(at: 0) == 0 && other.int64(at: 1) == 0 && other.string(at: 2) == "integer" && other.int64(at: 3) == 1)
        print("string-fast-path: cases=\(cases) ascii=\(asciiCases)")
        #expect(asciiCases > 10_000)
    }

    /// A case-sensitive BEGINSWITH on a string attribute is also a range of the column: SQLite
    /// searches the attribute's index, and the rows are those memory selects, prefixes at the
    /// edges of Unicode included.
    @Test func caseSensitiveBeginsWithIsAnIndexRange() throws {
        let model = try Model(version: "prefix-1", entities: [
            Entity("Word", attributes: [Attribute("text", .string, isOptional: false, isIndexed: true)]),
        ])
        let store = try TestStore(model: model)
        let context = store.context
        let words = ["", "a", "ab", "abc", "abd", "ac", "b", "A", "ab\u{10FFFF}", "ab\u{10FFFF}z", "a\u{D7FF}", "a\u{D7FF}x", "a\u{E000}",
                     "\u{10FFFF}", "\u{10FFFF}\u{10FFFF}", "é", "e\u{301}", "日本", "日"]
        try context.performAndWait {
            for word in words { try context.insert("Word").setValue(word, forKey: "text") }
            try context.save()
        }
        let prefixes = ["a", "ab", "ab\u{10FFFF}", "a\u{D7FF}", "\u{10FFFF}", "é", "e", "日", "A", "abc"]
        for prefix in prefixes {
            let request = FetchRequest(entityName: "Word", predicate: try Condition("text BEGINSWITH %@", prefix))
            let found = try context.performAndWait { try context.fetch(request).map { try $0.value(forKey: "text") as! String } }
            let expected = words.filter { $0.utf8.starts(with: prefix.utf8) }
            #expect(found.sorted() == expected.sorted(), "prefix \(prefix.debugDescription)")
        }
        // The plan: a search of the attribute's index, not a scan of the table.
        let plan = try FetchPlan(FetchRequest(entityName: "Word", predicate: try Condition("text BEGINSWITH 'ab'")), schema: store.coordinator.model.schema)
        let details = try store.coordinator.withConnection { db in
            let statement = try db.prepare("EXPLAIN QUERY PLAN " + plan.selectSQL("t0.\"_pk\""))
            try statement.bind(plan.arguments)
            var details: [String] = []
            try statement.forEachRow { details.append($0.string(at: 3)) }
            return details
        }
        #expect(details.contains { $0.contains("USING COVERING INDEX") || $0.contains("USING INDEX") }, "\(details)")
        #expect(ConditionSQL.successor(ofPrefix: "a\u{D7FF}") == "a\u{E000}")
        #expect(ConditionSQL.successor(ofPrefix: "b\u{10FFFF}") == "c")
        #expect(ConditionSQL.successor(ofPrefix: "\u{10FFFF}") == nil)
    }
}
