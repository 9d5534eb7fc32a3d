import CSQLiteRaw
import Foundation

// The practical limit: the SQLite C API directly, prepared statements, one transaction per
// import, rows decoded into the Swift structs of Dataset.swift. Configured as Strata configures
// its connection: WAL, synchronous=NORMAL, SQLite's default page cache, and opened with
// SQLITE_OPEN_NOMUTEX (issue 20): each connection is used by one thread at a time, so SQLite's
// per-connection mutex, which the system library's default "serialized" mode takes in every
// sqlite3_step, sqlite3_bind_* and sqlite3_column_* call, is left out, as Strata leaves it out.
// No allocation per row beyond the row itself: the flights' text is bound SQLITE_STATIC with its
// byte count (no copy by SQLite, no strlen), and a decoded row's only possible allocation is its
// tail number's String (none: tail numbers are at most 6 bytes, which Swift stores inline).

/// `SQLITE_TRANSIENT`: SQLite copies bound text before the call returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

var sqliteVersion: String { String(cString: sqlite3_libversion()) }

final class RawDB {
    let handle: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(db)
            throw VersusError("SQLite \(rc): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
    }

    deinit { sqlite3_close_v2(handle) }

    func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw VersusError("SQLite \(rc): \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil))
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil))
        guard let statement else { throw VersusError("empty statement: \(sql)") }
        return statement
    }

    /// Runs `sql` and calls `body` for each row.
    func forEachRow(_ sql: String, bind: (OpaquePointer) throws -> Void = { _ in }, _ body: (OpaquePointer) throws -> Void) throws {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        try bind(statement)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try check(rc); break }
            try body(statement)
        }
    }

    /// The entity tables' and indexes' CREATE statements (Strata's own tables left out), by name.
    func schemaSQL() throws -> [String] {
        var sql: [String] = []
        try forEachRow("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'strata%' AND name NOT LIKE 'sqlite%' AND name NOT LIKE 'grdb%' ORDER BY name") {
            sql.append(text($0, 0) ?? "")
        }
        return sql
    }

    func createSchema() throws {
        for statement in FlightsSQL.schema { try execute(statement) }
    }

    // MARK: Import

    /// Every table in one `BEGIN IMMEDIATE … COMMIT`, one prepared statement per table.
    func importAll(_ data: Dataset, flights: [Flight]) throws {
        try execute("BEGIN IMMEDIATE")
        let airline = try prepare(FlightsSQL.insertAirline)
        defer { sqlite3_finalize(airline) }
        for a in data.airlines {
            sqlite3_bind_int64(airline, 1, a.pk)
            bind(airline, 2, a.carrier)
            bind(airline, 3, a.name)
            try step(airline)
        }
        let airport = try prepare(FlightsSQL.insertAirport)
        defer { sqlite3_finalize(airport) }
        for a in data.airports {
            sqlite3_bind_int64(airport, 1, a.pk)
            bind(airport, 2, a.faa)
            bind(airport, 3, a.name)
            sqlite3_bind_double(airport, 4, a.lat)
            sqlite3_bind_double(airport, 5, a.lon)
            sqlite3_bind_int64(airport, 6, a.alt)
            bind(airport, 7, a.tz)
            bind(airport, 8, a.dst)
            bind(airport, 9, a.tzone)
            try step(airport)
        }
        let plane = try prepare(FlightsSQL.insertPlane)
        defer { sqlite3_finalize(plane) }
        for p in data.planes {
            sqlite3_bind_int64(plane, 1, p.pk)
            bind(plane, 2, p.tailnum)
            bind(plane, 3, p.year)
            bind(plane, 4, p.type)
            bind(plane, 5, p.manufacturer)
            bind(plane, 6, p.model)
            sqlite3_bind_int64(plane, 7, p.engines)
            sqlite3_bind_int64(plane, 8, p.seats)
            bind(plane, 9, p.speed)
            bind(plane, 10, p.engine)
            try step(plane)
        }
        try insertFlightRows(flights)
        try execute("COMMIT")
    }

    /// `flights` alone in one `BEGIN IMMEDIATE … COMMIT` (the --large stores, a chunk at a time).
    func insertFlights(_ flights: [Flight]) throws {
        try execute("BEGIN IMMEDIATE")
        try insertFlightRows(flights)
        try execute("COMMIT")
    }

    /// The flights through one prepared INSERT, in the caller's transaction.
    private func insertFlightRows(_ flights: [Flight]) throws {
        let flight = try prepare(FlightsSQL.insertFlight)
        defer { sqlite3_finalize(flight) }
        for f in flights {
            sqlite3_bind_int64(flight, 1, f.pk)
            sqlite3_bind_int64(flight, 2, f.year)
            sqlite3_bind_int64(flight, 3, f.month)
            sqlite3_bind_int64(flight, 4, f.day)
            bind(flight, 5, f.depTime)
            sqlite3_bind_int64(flight, 6, f.schedDepTime)
            bind(flight, 7, f.depDelay)
            bind(flight, 8, f.arrTime)
            sqlite3_bind_int64(flight, 9, f.schedArrTime)
            bind(flight, 10, f.arrDelay)
            sqlite3_bind_int64(flight, 11, f.flight)
            bind(flight, 13, f.airTime)
            sqlite3_bind_double(flight, 14, f.distance)
            sqlite3_bind_int64(flight, 15, f.hour)
            sqlite3_bind_int64(flight, 16, f.minute)
            sqlite3_bind_double(flight, 17, f.timeHour.timeIntervalSinceReferenceDate)
            sqlite3_bind_int64(flight, 18, f.airline)
            sqlite3_bind_int64(flight, 19, f.origin)
            bind(flight, 20, f.dest)
            bind(flight, 21, f.plane)
            // The tail number bound without a copy: SQLITE_STATIC, valid until the step is done.
            if var tailnum = f.tailnum {
                try tailnum.withUTF8 { utf8 in
                    try utf8.withMemoryRebound(to: CChar.self) { text in
                        if let base = text.baseAddress {
                            sqlite3_bind_text(flight, 12, base, Int32(text.count), nil)  // nil: SQLITE_STATIC
                        } else {
                            sqlite3_bind_text(flight, 12, "", 0, sqliteTransient)
                        }
                        try step(flight)
                    }
                }
            } else {
                sqlite3_bind_null(flight, 12)
                try step(flight)
            }
        }
    }

    private func step(_ statement: OpaquePointer) throws {
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { try check(rc); throw VersusError("insert returned \(rc)") }
        sqlite3_reset(statement)
    }

    private func bind(_ s: OpaquePointer, _ i: Int32, _ value: String) {
        sqlite3_bind_text(s, i, value, -1, sqliteTransient)
    }
    private func bind(_ s: OpaquePointer, _ i: Int32, _ value: String?) {
        if let value { sqlite3_bind_text(s, i, value, -1, sqliteTransient) } else { sqlite3_bind_null(s, i) }
    }
    private func bind(_ s: OpaquePointer, _ i: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(s, i, value) } else { sqlite3_bind_null(s, i) }
    }
    private func bind(_ s: OpaquePointer, _ i: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(s, i, value) } else { sqlite3_bind_null(s, i) }
    }

    // MARK: Fetch

    /// Decodes `FlightsSQL.flightColumns` at the current row.
    private func flight(_ s: OpaquePointer) -> Flight {
        Flight(pk: sqlite3_column_int64(s, 0), year: sqlite3_column_int64(s, 1), month: sqlite3_column_int64(s, 2),
               day: sqlite3_column_int64(s, 3), depTime: int(s, 4), schedDepTime: sqlite3_column_int64(s, 5),
               depDelay: double(s, 6), arrTime: int(s, 7), schedArrTime: sqlite3_column_int64(s, 8),
               arrDelay: double(s, 9), flight: sqlite3_column_int64(s, 10), tailnum: text(s, 11),
               airTime: double(s, 12), distance: sqlite3_column_double(s, 13), hour: sqlite3_column_int64(s, 14),
               minute: sqlite3_column_int64(s, 15),
               timeHour: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(s, 16)),
               airline: sqlite3_column_int64(s, 17), origin: sqlite3_column_int64(s, 18),
               dest: int(s, 19), plane: int(s, 20))
    }

    /// Flights from `sql` (which selects `FlightsSQL.flightColumns`), with bound arguments.
    func flights(_ sql: String, bind arguments: (OpaquePointer) -> Void = { _ in }) throws -> [Flight] {
        var result: [Flight] = []
        try forEachRow(sql, bind: { arguments($0) }) { result.append(flight($0)) }
        return result
    }

    @inline(never) // a symbol for callgrind's --toggle-collect (STRATA_PROFILE=raw-fetch)
    func allFlights() throws -> [Flight] { try flights(FlightsSQL.allFlights) }

    func jfkDelayed() throws -> [Flight] {
        try flights(FlightsSQL.jfkDelayed) { s in
            sqlite3_bind_text(s, 1, "JFK", -1, sqliteTransient)
            sqlite3_bind_int64(s, 2, 60)
        }
    }

    func tailnumPrefix() throws -> [Flight] {
        try flights(FlightsSQL.tailnumPrefix) { s in sqlite3_bind_text(s, 1, "n1%", -1, sqliteTransient) }
    }

    /// What a hand-written list runs on opening: the ordered IDs, then the section counts.
    func listIDsAndSections() throws -> (ids: [Int64], sections: [(name: String, count: Int)]) {
        var ids: [Int64] = []
        try forEachRow(FlightsSQL.orderedIDs) { ids.append(sqlite3_column_int64($0, 0)) }
        var sections: [(name: String, count: Int)] = []
        try forEachRow(FlightsSQL.sectionCounts) { sections.append((text($0, 0) ?? "", Int(sqlite3_column_int64($0, 1)))) }
        return (ids, sections)
    }

    /// Runs any statement and decodes every column of every row by its storage class (for
    /// Strata's own list statement, run through the C API).
    func decodedRows(_ sql: String) throws -> [[RawValue]] {
        var rows: [[RawValue]] = []
        try forEachRow(sql) { s in
            let count = sqlite3_column_count(s)
            var row: [RawValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(s, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(s, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(s, column)))
                case SQLITE_TEXT: row.append(.text(text(s, column) ?? ""))
                case SQLITE_NULL: row.append(.null)
                default: row.append(.blob)
                }
            }
            rows.append(row)
        }
        return rows
    }

    func orderedIDs() throws -> [Int64] {
        var ids: [Int64] = []
        try forEachRow(FlightsSQL.orderedIDs) { ids.append(sqlite3_column_int64($0, 0)) }
        return ids
    }

    func count(_ table: String) throws -> Int {
        var n = 0
        try forEachRow("SELECT count(*) FROM \"\(table)\"") { n = Int(sqlite3_column_int64($0, 0)) }
        return n
    }

    /// The migration's add-column, in its own transaction.
    func addStatusColumn() throws {
        try execute("BEGIN IMMEDIATE")
        try execute(FlightsSQL.addColumn)
        try execute("COMMIT")
    }
}

enum RawValue {
    case null, integer(Int64), real(Double), text(String), blob
}

private func text(_ s: OpaquePointer, _ column: Int32) -> String? {
    guard let text = sqlite3_column_text(s, column) else { return nil }
    let count = Int(sqlite3_column_bytes(s, column))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
}

@inline(__always)
private func int(_ s: OpaquePointer, _ column: Int32) -> Int64? {
    sqlite3_column_type(s, column) == SQLITE_NULL ? nil : sqlite3_column_int64(s, column)
}

@inline(__always)
private func double(_ s: OpaquePointer, _ column: Int32) -> Double? {
    sqlite3_column_type(s, column) == SQLITE_NULL ? nil : sqlite3_column_double(s, column)
}
