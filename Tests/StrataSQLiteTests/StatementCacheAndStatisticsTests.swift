import Foundation
import StrataSQLite
import Testing

@Suite struct StatementCacheAndStatisticsTests {
    @Test func cachedStatementReturnsTheSameObjectAndPreparesOnce() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        let sql = "INSERT INTO t(a) VALUES (?)"
        let first = try db.cachedStatement(sql)
        for index in 0..<1000 {
            let statement = try db.cachedStatement(sql)
            #expect(statement === first)
            try statement.execute(.integer(Int64(index)))
        }
        #expect(first.sql == sql)
        #expect(db.statistics.prepared[sql] == 1)
        #expect(db.statistics.executed[sql] == 1000)
        #expect(try db.count("t") == 1000)
        #expect(try db.column("SELECT sum(a) FROM t") == [.integer(499_500)])
    }

    @Test func differentSQLGetsADifferentCachedStatement() throws {
        let db = try Connection.inMemory()
        let one = try db.cachedStatement("SELECT 1")
        let two = try db.cachedStatement("SELECT 2")
        #expect(one !== two)
        #expect(one.sql == "SELECT 1")
        #expect(two.sql == "SELECT 2")
    }

    @Test func prepareIsNeverCached() throws {
        let db = try Connection.inMemory()
        let first = try db.prepare("SELECT 1")
        let second = try db.prepare("SELECT 1")
        #expect(first !== second)
        #expect(db.statistics.prepared["SELECT 1"] == 2)
        #expect(db.statistics.executed["SELECT 1"] == 0)
    }

    @Test func cachedStatementIsResetWhenHandedOutAgain() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2), (3)")
        let sql = "SELECT a FROM t ORDER BY a"
        let statement = try db.cachedStatement(sql)
        #expect(try statement.step())
        #expect(try statement.step())
        #expect(statement.int64(at: 0) == 2)

        let again = try db.cachedStatement(sql)
        #expect(try again.step())
        #expect(again.int64(at: 0) == 1, "a cached statement must start from the first row")
        #expect(db.statistics.executed[sql] == 2)
    }

    /// Connection.swift documents cachedStatement as "reset, bindings cleared", but it only resets:
    /// the previous execution's bindings are reused.
    @Test func cachedStatementComesBackWithBindingsCleared() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        let sql = "INSERT INTO t(a) VALUES (?)"
        try db.cachedStatement(sql).execute(.integer(5))
        try db.cachedStatement(sql).execute()
        let values = try db.column("SELECT a FROM t ORDER BY rowid")
        #expect(values == [.integer(5), .null])
    }

    @Test func freshConnectionCountsTheStatementsRunAtOpen() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let file = try Connection(path: directory.path(), configuration: .with { $0.cacheSizeKiB = 1024 })
        var expected = StatementStatistics()
        // A new file: page_count (0) says so, application_id marks it checksummed before the
        // journal mode writes its first page; journal_size_limit bounds the -wal (issue 46).
        expected.prepared = ["PRAGMA page_count": 1, "PRAGMA application_id = 1398035011": 1,
                             "PRAGMA journal_mode=WAL": 1, "PRAGMA synchronous=NORMAL": 1, "PRAGMA cache_size=-1024": 1,
                             "PRAGMA journal_size_limit=16777216": 1]
        expected.executed = expected.prepared
        // page_count, journal_mode and journal_size_limit answer with a row (0, "wal", the limit).
        expected.rowsRead = ["PRAGMA page_count": 1, "PRAGMA application_id = 1398035011": 0,
                             "PRAGMA journal_mode=WAL": 1, "PRAGMA synchronous=NORMAL": 0, "PRAGMA cache_size=-1024": 0,
                             "PRAGMA journal_size_limit=16777216": 1]
        #expect(file.statistics == expected)

        let memory = try Connection.inMemory(configuration: .with { $0.synchronous = .full })
        #expect(memory.statistics.prepared == ["PRAGMA synchronous=FULL": 1])
        #expect(memory.statistics.executed == ["PRAGMA synchronous=FULL": 1])
    }

    @Test func resetStatisticsZeroesEveryCounter() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        try db.transaction { try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.integer(1)) }
        #expect(db.statistics.totalExecuted == 5) // PRAGMA synchronous, CREATE, BEGIN, INSERT, COMMIT
        #expect(db.statistics.totalPrepared == 5)

        db.resetStatistics()
        #expect(db.statistics == StatementStatistics())
        #expect(db.statistics.totalPrepared == 0)
        #expect(db.statistics.totalExecuted == 0)

        // Counting resumes from zero; the cached statement is not prepared again.
        try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.integer(2))
        #expect(db.statistics.executed == ["INSERT INTO t VALUES (?)": 1])
        #expect(db.statistics.prepared["INSERT INTO t VALUES (?)", default: 0] == 0)
        #expect(db.statistics.totalPrepared == 0)
        #expect(db.statistics.totalExecuted == 1)
    }

    @Test func rowsReadCountsTheRowsEachStatementReturned() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        for value in 1...5 { try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.integer(Int64(value))) }
        db.resetStatistics()
        let select = "SELECT a FROM t WHERE a > ?"
        try db.cachedStatement(select).execute(.integer(2))            // 3 rows
        try db.cachedStatement(select).execute(.integer(4))            // 1 row
        let first = try db.cachedStatement("SELECT a FROM t ORDER BY a")
        _ = try first.step()                                             // 1 row read, then reset
        first.reset()
        try db.cachedStatement("UPDATE t SET a = a + 10 WHERE a = ? RETURNING a").execute(.integer(1))
        try db.cachedStatement("DELETE FROM t WHERE a = ?").execute(.integer(2))
        let statistics = db.statistics
        #expect(statistics.rowsRead[select] == 4)
        #expect(statistics.rowsRead["SELECT a FROM t ORDER BY a"] == 1)
        #expect(statistics.rowsRead["UPDATE t SET a = a + 10 WHERE a = ? RETURNING a"] == 1)
        #expect(statistics.rowsRead["DELETE FROM t WHERE a = ?"] == 0)
        #expect(statistics.totalRowsRead == 6)
        db.resetStatistics()
        #expect(db.statistics.totalRowsRead == 0)
    }

    @Test func executionsStartingWithCountsByCaseInsensitivePrefix() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        db.resetStatistics()
        for value in 1...3 {
            try db.transaction { try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.integer(Int64(value))) }
        }
        try db.transaction(.immediate) {}
        let statistics = db.statistics
        #expect(statistics.executions(startingWith: "BEGIN") == 4)
        #expect(statistics.executions(startingWith: "begin") == 4)
        #expect(statistics.executions(startingWith: "BEGIN DEFERRED") == 3)
        #expect(statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
        #expect(statistics.executions(startingWith: "COMMIT") == 4)
        #expect(statistics.executions(startingWith: "INSERT") == 3)
        #expect(statistics.executions(startingWith: "DELETE") == 0)
        #expect(statistics.preparations(startingWith: "BEGIN") == 2)
        #expect(statistics.preparations(startingWith: "insert") == 1)
        #expect(statistics.totalExecuted == 11)
    }

    @Test func executeRunsEveryStatementOfAScript() throws {
        let db = try Connection.inMemory()
        db.resetStatistics()
        try db.execute("""
            CREATE TABLE t(a INTEGER, b TEXT);
            INSERT INTO t VALUES (1, 'école');

            INSERT INTO t VALUES (2, '日本語');
            INSERT INTO t VALUES (3, 'three');
            """)
        let statistics = db.statistics
        #expect(try db.rows("SELECT a, b FROM t ORDER BY a") == [
            [.integer(1), .text("école")],
            [.integer(2), .text("日本語")],
            [.integer(3), .text("three")],
        ])
        #expect(statistics.executions(startingWith: "CREATE TABLE") == 1)
        #expect(statistics.executions(startingWith: "INSERT") == 3)
        #expect(statistics.totalExecuted == 4)
        #expect(statistics.totalPrepared == 4)
    }

    @Test func executeSkipsCommentsAndEmptyStatements() throws {
        let db = try Connection.inMemory()
        try db.execute("  -- only a comment\n")
        try db.execute(";;")
        try db.execute("")
        try db.execute("CREATE TABLE t(a);; INSERT INTO t VALUES (1); -- trailing comment")
        #expect(try db.column("SELECT a FROM t") == [.integer(1)])
    }

    @Test func executeStopsAtTheFirstFailingStatement() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        let error = try #require(throws: SQLiteError.self) {
            try db.execute("INSERT INTO t VALUES (1); INSERT INTO missing VALUES (2); INSERT INTO t VALUES (3)")
        }
        #expect(error.code == .SQLITE_ERROR)
        #expect(error.message == "no such table: missing")
        #expect(error.sql?.hasPrefix("INSERT INTO missing VALUES (2)") == true)
        #expect(try db.column("SELECT a FROM t") == [.integer(1)])
    }

    /// When a script statement has a syntax error, SQLite's tail pointer stops at the offending token,
    /// and `execute(_:)` reports only the text up to there (`SELEC`) as the failing SQL.
    @Test func executeReportsTheWholeStatementWithASyntaxError() throws {
        let db = try Connection.inMemory()
        let error = try #require(throws: SQLiteError.self) {
            try db.execute("SELECT 1; SELEC 2 FROM t; SELECT 3")
        }
        #expect(error.code == .SQLITE_ERROR)
        #expect(error.message == #"near "SELEC": syntax error"#)
        #expect(error.sql?.hasPrefix("SELEC 2 FROM t") == true)
    }

    @Test func traceReceivesEveryStatementInOrder() throws {
        let db = try Connection.inMemory()
        let recorder = TraceRecorder()
        db.trace = { recorder.record($0) }
        try db.execute("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)")
        try db.transaction(.immediate) {
            try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.integer(2))
        }
        var rows: [Int64] = []
        try db.prepare("SELECT a FROM t ORDER BY a").forEachRow { rows.append($0.int64(at: 0)) }
        _ = try db.pragma("user_version")

        #expect(rows == [1, 2])
        #expect(recorder.recorded == [
            "CREATE TABLE t(a INTEGER)",
            "INSERT INTO t VALUES (1)",
            "BEGIN IMMEDIATE",
            "INSERT INTO t VALUES (?)",
            "COMMIT",
            "SELECT a FROM t ORDER BY a",
            "PRAGMA user_version",
        ])
    }

    @Test func traceCanBeRemoved() throws {
        let db = try Connection.inMemory()
        let recorder = TraceRecorder()
        db.trace = { recorder.record($0) }
        try db.execute("SELECT 1")
        db.trace = nil
        try db.execute("SELECT 2")
        #expect(recorder.recorded == ["SELECT 1"])
    }

    @Test func traceIsCalledForStatementsThatFail() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a NOT NULL)")
        let recorder = TraceRecorder()
        db.trace = { recorder.record($0) }
        #expect(throws: SQLiteError.self) { try db.cachedStatement("INSERT INTO t VALUES (?)").execute(.null) }
        #expect(recorder.recorded == ["INSERT INTO t VALUES (?)"])
        #expect(db.statistics.executed["INSERT INTO t VALUES (?)"] == 1)
    }
}
