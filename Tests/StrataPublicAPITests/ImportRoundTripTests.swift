import Foundation
import Testing
import Strata
import StrataTestSupport

/// `importFile` of random rows of every attribute type, a to-one found by a unique key, and
/// rules: each row reads back as written, a re-run changes nothing (no commit), an edited file
/// updates exactly the edited rows, and the work is counted: one statement a row in the common
/// cases (an insert into an empty store, a look-up over a full one).
@Suite struct ImportRoundTripTests {
    static let model: Model = {
        let shelf = Entity("Shelf", attributes: [Attribute("label", .string, isOptional: false, isUnique: true)],
                           relationships: [Relationship("items", .toMany, to: "Item", inverse: "shelf")])
        let item = Entity("Item", attributes: [
            Attribute("code", .string, isOptional: false, isUnique: true),
            Attribute("small", .int16), Attribute("medium", .int32), Attribute("big", .int64),
            Attribute("ratio", .double), Attribute("single", .float), Attribute("flag", .bool),
            Attribute("note", .string), Attribute("when", .date), Attribute("blob", .binary),
            Attribute("ident", .uuid), Attribute("link", .url), Attribute("amount", .decimal),
            Attribute("rated", .int64, minValue: 0, maxValue: 10),
            Attribute("kind", .string, defaultValue: .string("plain")),
        ], relationships: [Relationship("shelf", .toOne, to: "Shelf", inverse: "items")])
        return try! Model(version: "roundtrip", entities: [shelf, item])
    }()

    static let columns = ["code", "small", "medium", "big", "ratio", "single", "flag", "note", "when", "blob", "ident",
                          "link", "amount", "rated", "shelf"]
    static let shelves = ["A", "B", "Ç, d", "E \"e\""]

    /// A row's values by column (nil: no value), as the file writes them and a fetch must read them.
    typealias Row = [String: AttributeValue?]

    static func randomRow(_ code: Int, _ generator: inout SplitMix64) -> Row {
        func maybe(_ value: AttributeValue) -> AttributeValue? { Int.random(in: 0..<6, using: &generator) == 0 ? nil : value }
        let notes = ["plain", "", "comma, inside", "quote \"inside\"", "line\nbreak", "ünïcödé ✓", " padded ", "NA-not"]
        return [
            "code": .string("c\(code)"),
            "small": maybe(.int16([Int16.min, -1, 0, 7, Int16.max].randomElement(using: &generator)!)),
            "medium": maybe(.int32(Int32.random(in: .min ... .max, using: &generator))),
            "big": maybe(.int64([Int64.min, -5, 0, Int64.max, Int64.random(in: .min ... .max, using: &generator)].randomElement(using: &generator)!)),
            "ratio": maybe(.double(Double.random(in: -1e6...1e6, using: &generator))),
            "single": maybe(.float(Float.random(in: -1000...1000, using: &generator))),
            "flag": maybe(.bool(Bool.random(using: &generator))),
            "note": maybe(.string(notes.randomElement(using: &generator)!)),
            "when": maybe(.date(Date(timeIntervalSince1970: Double(Int.random(in: -2_000_000_000...2_000_000_000, using: &generator)) + [0, 0.5].randomElement(using: &generator)!))),
            "blob": maybe(.binary(Data((0..<Int.random(in: 1...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }))),
            "ident": maybe(.uuid(UUID(uuid: (0..<16).reduce(into: UUID().uuid) { u, i in withUnsafeMutableBytes(of: &u) { $0[i] = UInt8.random(in: 0...255, using: &generator) } }))),
            "link": maybe(.url(URL(string: "https://example.com/\(code)?q=\(Int.random(in: 0...9, using: &generator))")!)),
            "amount": maybe(.decimal(Decimal(string: "\(Int.random(in: -99_999...99_999, using: &generator)).\(Int.random(in: 10...99, using: &generator))")!)),
            "rated": maybe(.int64(Int64.random(in: 0...10, using: &generator))),
            "shelf": maybe(.string(shelves.randomElement(using: &generator)!)),
        ]
    }

    static func field(_ value: AttributeValue?, _ generator: inout SplitMix64) -> String {
        func quoted(_ text: String) -> String {
            text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) || text.isEmpty || text.first == " " || Bool.random(using: &generator)
                ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        switch value {
        case nil: return Bool.random(using: &generator) ? "NA" : ""
        case .int16(let v)?: return String(v)
        case .int32(let v)?: return String(v)
        case .int64(let v)?: return String(v)
        case .double(let v)?: return "\(v)"
        case .float(let v)?: return "\(v)"
        case .bool(let v)?: return [v ? "true" : "false", v ? "1" : "0", v ? "yes" : "no"].randomElement(using: &generator)!
        case .string(let v)?: return quoted(v)
        case .date(let v)?: return iso.string(from: v)
        case .binary(let v)?: return v.base64EncodedString()
        case .uuid(let v)?: return v.uuidString
        case .url(let v)?: return quoted(v.absoluteString)
        case .decimal(let v)?: return "\(v)"
        }
    }

    static func csv(_ rows: [Row], extra: [String], _ generator: inout SplitMix64) -> String {
        var text = columns.joined(separator: ",") + "\n"
        for row in rows { text += columns.map { field(row[$0] ?? nil, &generator) }.joined(separator: ",") + "\n" }
        return text + extra.joined()
    }

    /// Whether `value` (a fetched object's) is `expected`.
    static func same(_ value: Any?, _ expected: AttributeValue?) -> Bool {
        switch expected {
        case nil: return value == nil
        case .int16(let v)?: return value as? Int16 == v
        case .int32(let v)?: return value as? Int32 == v
        case .int64(let v)?: return value as? Int64 == v
        case .double(let v)?: return value as? Double == v
        case .float(let v)?: return value as? Float == v
        case .bool(let v)?: return value as? Bool == v
        case .string(let v)?: return value as? String == v
        case .date(let v)?: return value as? Date == v
        case .binary(let v)?: return value as? Data == v
        case .uuid(let v)?: return value as? UUID == v
        case .url(let v)?: return value as? URL == v
        case .decimal(let v)?: return value as? Decimal == v
        }
    }

    func check(_ coordinator: StoreCoordinator, _ rows: [Row]) throws {
        let context = coordinator.newContext(name: "check")
        try context.performAndWait {
            let items = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(items.count == rows.count)
            let byCode = Dictionary(uniqueKeysWithValues: try items.map { (try $0.value(forKey: "code") as! String, $0) })
            for row in rows {
                guard case .string(let code)?? = row["code"], let item = byCode[code] else {
                    Issue.record("row \(String(describing: row["code"])) was not imported")
                    continue
                }
                for column in Self.columns where column != "shelf" && column != "code" {
                    let value = try item.value(forKey: column)
                    #expect(Self.same(value, row[column] ?? nil), "\(code).\(column): \(String(describing: value)) vs \(String(describing: row[column] ?? nil))")
                }
                let label = try (item.value(forKey: "shelf") as? ManagedObject)?.value(forKey: "label") as? String
                #expect(Self.same(label, row["shelf"] ?? nil), "\(code).shelf")
                #expect(try item.value(forKey: "kind") as? String == "plain")
            }
        }
    }

    @Test func everyTypeReadsBackAndAReRunChangesNothing() throws {
        let folder = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: Self.model, url: folder.file("items.sqlite"))
        defer { coordinator.close() }
        try coordinator.execute(BatchInsertRequest<ManagedObject>(entityName: "Shelf", count: Self.shelves.count) { index, row in
            try row.set(Self.shelves[index], forKey: "label")
        })
        var generator = SplitMix64(seed: 4_848)
        var rows = (0..<1_500).map { Self.randomRow($0, &generator) }
        // Rows the import must refuse: a rule broken, a shelf no row has, a number too big for
        // its type, a key part missing.
        let bad = [
            "bad1,1,1,1,1,1,true,x,,,,,,11,A\n", "bad2,1,1,1,1,1,true,x,,,,,,1,Nowhere\n",
            "bad3,40000,1,1,1,1,true,x,,,,,,1,A\n", ",1,1,1,1,1,true,x,,,,,,1,A\n",
        ]
        let csv = folder.file("items.csv")
        try Data(Self.csv(rows, extra: bad, &generator).utf8).write(to: csv)
        var options = ImportOptions(entity: "Item")
        options.mapping = ["shelf": "shelf.label"]
        options.nullText = "NA"
        options.batchSize = 400
        options.rejects = folder.file("rejects.csv")
        coordinator.resetStatistics()
        let first = try coordinator.importFile(at: csv, options: options)
        #expect((first.inserted, first.updated, first.unchanged, first.rejected) == (1_500, 0, 0, 4))
        // One statement a row: its insert (the batches' few look-ups of shelves and keys aside).
        let inserts = coordinator.statistics.executions(of: .insert, entity: "Item")
        let selects = coordinator.statistics.executions(of: .select, entity: "Item")
        print("import-roundtrip empty: rows=1500 item-inserts=\(inserts) item-selects=\(selects)")
        #expect(inserts == 1_500)
        #expect(selects <= 4 * 2)
        try check(coordinator, rows)
        let rejects = try String(contentsOf: folder.file("rejects.csv"), encoding: .utf8)
        for reason in ["maxValue", "no Shelf has label = Nowhere", #"40000"" is not a int16"#, "required"] {
            #expect(rejects.contains(reason), "\(reason) in \(rejects)")
        }

        // Again in full: every row unchanged, one look-up each, no write, no commit.
        let generation = try coordinator.currentHistoryToken().generation
        options.restart = true
        coordinator.resetStatistics()
        let again = try coordinator.importFile(at: csv, options: options)
        #expect((again.inserted, again.updated, again.unchanged, again.commits) == (0, 0, 1_500, 0))
        #expect(try coordinator.currentHistoryToken().generation == generation)
        let lookups = coordinator.statistics.executions(of: .select, entity: "Item")
        let tried = coordinator.statistics.executions(of: .insert, entity: "Item")
        print("import-roundtrip full: rows=1500 item-selects=\(lookups) item-inserts=\(tried)")
        #expect(lookups <= 1_500 + 4 + 8)
        #expect(tried <= 8)

        // The file edited: a random tenth of the rows get one column changed (to nil included);
        // exactly those are updated, the history says which columns, the rest read unchanged.
        var edited: Set<Int> = []
        for index in rows.indices where Int.random(in: 0..<10, using: &generator) == 0 {
            let column = Self.columns.dropFirst().randomElement(using: &generator)!
            let fresh = Self.randomRow(index, &generator)[column] ?? nil
            if fresh != rows[index][column] ?? nil {
                rows[index][column] = .some(fresh)
                edited.insert(index)
            }
        }
        try Data(Self.csv(rows, extra: bad, &generator).utf8).write(to: csv)
        options.restart = false
        let token = try coordinator.currentHistoryToken()
        let third = try coordinator.importFile(at: csv, options: options)
        #expect((third.inserted, third.updated, third.unchanged, third.rejected) == (0, edited.count, 1_500 - edited.count, 4))
        try check(coordinator, rows)
        let updates = try coordinator.history(after: token).flatMap(\.changes).filter { $0.kind == .update }
        #expect(updates.count == edited.count)
        print("import-roundtrip edited: rows=1500 edited=\(edited.count) updates=\(third.updated) history-updates=\(updates.count)")
    }
}
