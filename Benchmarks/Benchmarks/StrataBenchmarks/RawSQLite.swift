import CSQLiteRaw

/// The baseline: the same work done directly on the SQLite C API, with no Strata code involved.

struct RawSQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { "SQLite error \(code): \(message)" }
}

/// `SQLITE_TRANSIENT`: SQLite copies bound text before the call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One raw connection, configured as Strata configures its own: WAL, synchronous=NORMAL, and
/// SQLITE_OPEN_NOMUTEX (one thread at a time uses it, so no per-call connection mutex).
final class RawDatabase {
    let handle: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(db)
            throw RawSQLiteError(code: rc, message: message)
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
    }

    deinit { sqlite3_close_v2(handle) }

    func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw RawSQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
        }
    }

    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil))
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil))
        guard let statement else { throw RawSQLiteError(code: SQLITE_MISUSE, message: "empty statement: \(sql)") }
        return statement
    }

    /// The table and index Strata creates for entity `Item` (see Strata's `Schema`).
    func createItemSchema() throws {
        try execute(#"CREATE TABLE "Item" ("_pk" INTEGER PRIMARY KEY, "name" TEXT, "category" INTEGER, "number" INTEGER, "isEven" INTEGER)"#)
        try execute(#"CREATE INDEX "Item_category_name" ON "Item" ("category", "name")"#)
    }

    /// Inserts `rows` with explicit keys in one transaction through one prepared statement.
    func insert(_ rows: [ItemRow]) throws {
        try execute("BEGIN IMMEDIATE")
        let statement = try prepare(#"INSERT INTO "Item" ("_pk", "name", "category", "number", "isEven") VALUES (?, ?, ?, ?, ?)"#)
        defer { sqlite3_finalize(statement) }
        for row in rows {
            try check(sqlite3_bind_int64(statement, 1, row.pk))
            try check(sqlite3_bind_text(statement, 2, row.name, -1, sqliteTransient))
            try check(sqlite3_bind_int64(statement, 3, row.category))
            try check(sqlite3_bind_int64(statement, 4, row.number))
            try check(sqlite3_bind_int64(statement, 5, row.isEven ? 1 : 0))
            try check(sqlite3_step(statement))
            try check(sqlite3_reset(statement))
        }
        try execute("COMMIT")
    }

    /// Every row sorted by (category, name), decoded into `ItemRow`s. `_pk` breaks ties, as in Strata's
    /// ORDER BY; the (category, name) index covers it (the index carries the rowid).
    func fetchSorted() throws -> [ItemRow] {
        let statement = try prepare(#"SELECT "_pk", "name", "category", "number", "isEven" FROM "Item" ORDER BY "category" ASC, "name" ASC, "_pk" ASC"#)
        defer { sqlite3_finalize(statement) }
        var rows: [ItemRow] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try check(rc); break }
            let name: String
            if let text = sqlite3_column_text(statement, 1) {
                let count = Int(sqlite3_column_bytes(statement, 1))
                name = String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
            } else {
                name = ""
            }
            rows.append(ItemRow(
                pk: sqlite3_column_int64(statement, 0),
                name: name,
                category: sqlite3_column_int64(statement, 2),
                number: sqlite3_column_int64(statement, 3),
                isEven: sqlite3_column_int64(statement, 4) != 0
            ))
        }
        return rows
    }
}

/// A raw database in `store` with the Item schema and `rows`; closed again.
func makeRawStore(_ store: TemporaryStore, rows: [ItemRow]) throws -> TemporaryStore {
    let db = try RawDatabase(path: store.path)
    try db.createItemSchema()
    try db.insert(rows)
    return store
}
