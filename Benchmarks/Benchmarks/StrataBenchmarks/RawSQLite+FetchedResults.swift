import CSQLiteRaw

/// The raw side of the results-controller benchmarks: the goods schema Strata creates, and the
/// queries a hand-written list on the SQLite C API would run for the same screen.

extension RawDatabase {
    /// The tables and index Strata creates for `goodsBenchmarkModel` (checked against a Strata
    /// store with `sqlite3 .schema`): the to-one `category` is a column with an index; the to-many
    /// inverse has no storage of its own.
    func createGoodsSchema() throws {
        try execute(#"CREATE TABLE "Category" ("_pk" INTEGER PRIMARY KEY, "name" TEXT, "_version" INTEGER NOT NULL DEFAULT 1)"#)
        try execute(#"CREATE TABLE "Good" ("_pk" INTEGER PRIMARY KEY, "name" TEXT, "number" INTEGER, "category" INTEGER, "_version" INTEGER NOT NULL DEFAULT 1)"#)
        try execute(#"CREATE INDEX "Good_category" ON "Good" ("category")"#)
    }

    /// Categories get keys 1…100, goods 1…N, in one transaction.
    func insertGoods(_ data: GoodsData) throws {
        try execute("BEGIN IMMEDIATE")
        let category = try prepare(#"INSERT INTO "Category" ("_pk", "name") VALUES (?, ?)"#)
        defer { sqlite3_finalize(category) }
        for (index, name) in data.categories.enumerated() {
            try check(sqlite3_bind_int64(category, 1, Int64(index + 1)))
            try check(sqlite3_bind_text(category, 2, name, -1, sqliteTransient))
            try check(sqlite3_step(category))
            try check(sqlite3_reset(category))
        }
        let good = try prepare(#"INSERT INTO "Good" ("_pk", "name", "number", "category") VALUES (?, ?, 0, ?)"#)
        defer { sqlite3_finalize(good) }
        for (index, row) in data.goods.enumerated() {
            try check(sqlite3_bind_int64(good, 1, Int64(index + 1)))
            try check(sqlite3_bind_text(good, 2, row.name, -1, sqliteTransient))
            try check(sqlite3_bind_int64(good, 3, Int64(row.category + 1)))
            try check(sqlite3_step(good))
            try check(sqlite3_reset(good))
        }
        try execute("COMMIT")
    }

    /// Runs `sql` (no parameters) and decodes each row as (key, section name, name).
    func goodRows(_ sql: String) throws -> [RawGoodRow] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        var rows: [RawGoodRow] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try check(rc); break }
            rows.append(RawGoodRow(pk: sqlite3_column_int64(statement, 0),
                                   section: rawText(statement, 1), name: rawText(statement, 2)))
        }
        return rows
    }

    /// The section names and their row counts, in section order.
    func sectionCounts() throws -> [(name: String, count: Int)] {
        let statement = try prepare(rawSectionCountSQL)
        defer { sqlite3_finalize(statement) }
        var sections: [(name: String, count: Int)] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try check(rc); break }
            sections.append((rawText(statement, 0), Int(sqlite3_column_int64(statement, 1))))
        }
        return sections
    }

    /// What a hand-written list does on opening: the ordered keys with their sort values, and the
    /// section counts.
    func listAndSections(_ sql: String) throws -> (rows: [RawGoodRow], sections: [(name: String, count: Int)]) {
        (try goodRows(sql), try sectionCounts())
    }

    /// `UPDATE "Good" SET "name" = ?` for one row, in its own transaction, as Strata writes it
    /// (with the version bump).
    func renameGood(_ pk: Int64, to name: String) throws {
        try execute("BEGIN IMMEDIATE")
        let statement = try prepare(#"UPDATE "Good" SET "name" = ?, "_version" = "_version" + 1 WHERE "_pk" = ?"#)
        defer { sqlite3_finalize(statement) }
        try check(sqlite3_bind_text(statement, 1, name, -1, sqliteTransient))
        try check(sqlite3_bind_int64(statement, 2, pk))
        try check(sqlite3_step(statement))
        try execute("COMMIT")
    }

    /// Where good `pk` is now, as (section, item), from two small indexed queries: how many
    /// sections sort before its category's name, and how many goods of its category sort before
    /// it. What a hand-written list that knows its order would ask after changing one row.
    func position(ofGood pk: Int64) throws -> (section: Int, item: Int) {
        let statement = try prepare(#"""
            SELECT (SELECT count(*) FROM "Category" AS c2 WHERE c2."name" < c."name"
                        AND EXISTS (SELECT 1 FROM "Good" AS g3 WHERE g3."category" = c2."_pk")),
                   (SELECT count(*) FROM "Good" AS g2 WHERE g2."category" = g."category"
                        AND (g2."name" < g."name" OR (g2."name" = g."name" AND g2."_pk" < g."_pk")))
            FROM "Good" AS g JOIN "Category" AS c ON c."_pk" = g."category" WHERE g."_pk" = ?
            """#)
        defer { sqlite3_finalize(statement) }
        try check(sqlite3_bind_int64(statement, 1, pk))
        guard sqlite3_step(statement) == SQLITE_ROW else {
            throw RawSQLiteError(code: SQLITE_NOTFOUND, message: "no good \(pk)")
        }
        return (Int(sqlite3_column_int64(statement, 0)), Int(sqlite3_column_int64(statement, 1)))
    }
}

/// One row of the raw list: key, section name (the category's), good's name.
struct RawGoodRow {
    var pk: Int64
    var section: String
    var name: String
}

private func rawText(_ statement: OpaquePointer, _ column: Int32) -> String {
    guard let text = sqlite3_column_text(statement, column) else { return "" }
    let count = Int(sqlite3_column_bytes(statement, column))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
}

/// The natural hand-written query: a join, ordered by category name, name, key.
let rawGoodsJoinSQL = #"SELECT g."_pk", c."name", g."name" FROM "Good" AS g LEFT JOIN "Category" AS c ON c."_pk" = g."category" ORDER BY c."name" ASC, g."name" ASC, g."_pk" ASC"#

/// The section counts, as Core Data's section query would ask for them.
let rawSectionCountSQL = #"SELECT c."name", count(*) FROM "Good" AS g LEFT JOIN "Category" AS c ON c."_pk" = g."category" GROUP BY c."name" ORDER BY c."name" ASC"#
