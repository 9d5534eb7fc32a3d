import Foundation
import StrataSQLite
import Testing

@Suite struct StatementTests {
    @Test func statementDescribesItsParametersAndColumns() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT ? AS first, ? + 1 AS second, 'x' AS third")
        #expect(statement.parameterCount == 2)
        #expect(statement.columnCount == 3)
        #expect(statement.columnName(at: 0) == "first")
        #expect(statement.columnName(at: 1) == "second")
        #expect(statement.columnName(at: 2) == "third")
        #expect(statement.sql == "SELECT ? AS first, ? + 1 AS second, 'x' AS third")
    }

    /// Text is read into a `String` by two routes (small text of up to 15 bytes made in place,
    /// longer text decoded): both must give what `String(decoding:as:)` gives for the same bytes,
    /// invalid UTF-8 repaired alike, at every length around the 15-byte edge.
    @Test func textReadsAsStringDecodingGivesIt() throws {
        let db = try Connection.inMemory()
        var generator = SystemRandomNumberGenerator()
        let alphabets: [[UInt8]] = [
            Array(0x20...0x7E),                                   // printable ASCII
            [0x00, 0x01, 0x41, 0x7F],                             // NUL and edges of ASCII
            Array("héllo wörld ü 日本 🙂".utf8),                     // valid multi-byte pieces
            [0x41, 0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xE6, 0xF0, 0xFF], // invalid and truncated sequences
        ]
        var cases = 0, small = 0, nonASCII = 0
        for length in 0...40 {
            for alphabet in alphabets {
                for _ in 0..<25 {
                    let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
                    let hex = bytes.map { String(format: "%02X", $0) }.joined()
                    let statement = try db.prepare("SELECT CAST(X'\(hex)' AS TEXT)")
                    #expect(try statement.step())
                    let expected = String(decoding: bytes, as: UTF8.self)
                    let read = statement.string(at: 0), optional = statement.optionalString(at: 0)
                    #expect(read == expected && Array(read.utf8) == Array(expected.utf8), "bytes \(hex)")
                    #expect(optional == expected && optional.map { Array($0.utf8) } == Array(expected.utf8), "bytes \(hex)")
                    // The third route: written straight into a row's 16-byte slot, as a fetch does.
                    let slot = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
                    #expect(statement.initializeString(at: 0, into: slot))
                    let initialized = slot.assumingMemoryBound(to: String.self).move()
                    slot.deallocate()
                    #expect(initialized == expected && Array(initialized.utf8) == Array(expected.utf8), "bytes \(hex)")
                    statement.reset()
                    cases += 1
                    if length <= 15 { small += 1 }
                    if bytes.contains(where: { $0 >= 0x80 }) { nonASCII += 1 }
                }
            }
        }
        print("statement-text: cases=\(cases) small=\(small) non-ascii=\(nonASCII)")
        #expect(small > 0 && nonASCII > 0)
    }

    /// A NULL column writes nothing and says so; an empty text writes "".
    @Test func initializeStringTellsNullFromEmpty() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT NULL, '', 'N14228', 'fifteen_bytes_x', 'sixteen_bytes_xy'")
        #expect(try statement.step())
        let slot = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        defer { slot.deallocate() }
        #expect(!statement.initializeString(at: 0, into: slot))
        for (column, expected) in [(Int32(1), ""), (2, "N14228"), (3, "fifteen_bytes_x"), (4, "sixteen_bytes_xy")] {
            #expect(statement.initializeString(at: column, into: slot))
            #expect(slot.assumingMemoryBound(to: String.self).move() == expected)
        }
    }

    @Test func stepReturnsEachRowThenFalse() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a); INSERT INTO t VALUES (10), (20)")
        let statement = try db.prepare("SELECT a FROM t ORDER BY a")
        #expect(try statement.step())
        #expect(statement.int64(at: 0) == 10)
        #expect(try statement.step())
        #expect(statement.int64(at: 0) == 20)
        #expect(try statement.step() == false)
    }

    @Test func forEachRowVisitsRowsInOrderAndCanRunAgain() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a); INSERT INTO t VALUES (3), (1), (2)")
        let statement = try db.prepare("SELECT a FROM t ORDER BY a")
        var first: [Int64] = []
        try statement.forEachRow { first.append($0.int64(at: 0)) }
        var second: [Int64] = []
        try statement.forEachRow { second.append($0.int64(at: 0)) }
        #expect(first == [1, 2, 3])
        #expect(second == [1, 2, 3])
        #expect(db.statistics.executed["SELECT a FROM t ORDER BY a"] == 2)
    }

    @Test func forEachRowStopsAndResetsWhenTheBodyThrows() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1), (2), (3)")
        let statement = try db.prepare("SELECT a FROM t ORDER BY a")
        var seen: [Int64] = []
        #expect(throws: DeliberateFailure(tag: "row 2")) {
            try statement.forEachRow { row in
                seen.append(row.int64(at: 0))
                if row.int64(at: 0) == 2 { throw DeliberateFailure(tag: "row 2") }
            }
        }
        #expect(seen == [1, 2])
        #expect(try statement.step())
        #expect(statement.int64(at: 0) == 1, "the statement was reset")
    }

    @Test func resetKeepsBindings() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a)")
        let statement = try db.prepare("INSERT INTO t VALUES (?)")
        try statement.execute(.integer(7))
        statement.reset()
        try statement.execute()
        #expect(try db.column("SELECT a FROM t") == [.integer(7), .integer(7)])
    }

    @Test func clearBindingsBindsNull() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT ?")
        try statement.bind([.text("bound")])
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .text("bound"))
        statement.reset()
        statement.clearBindings()
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .null)
    }

    @Test func bindReplacesEveryArgument() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT ?, ?")
        try statement.bind([.integer(1), .text("a")])
        statement.reset()
        try statement.bind([.real(2.5), .null])
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .real(2.5))
        #expect(statement.value(at: 1) == .null)
    }

    @Test func executeDiscardsRowsAndCanRunAgain() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1), (2)")
        let statement = try db.prepare("SELECT a FROM t")
        try statement.execute()
        try statement.execute()
        #expect(db.statistics.executed["SELECT a FROM t"] == 2)
        #expect(try statement.step())
        #expect(statement.int64(at: 0) == 1)
    }

    @Test func failedStepResetsSoTheStatementCanRunAgain() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a UNIQUE)")
        let statement = try db.prepare("INSERT INTO t VALUES (?)")
        try statement.execute(.integer(1))
        #expect(throws: SQLiteError.self) { try statement.execute(.integer(1)) }
        try statement.execute(.integer(2))
        #expect(try db.column("SELECT a FROM t ORDER BY a") == [.integer(1), .integer(2)])
    }

    @Test func lastInsertRowIDAndChangesReportTheLastStatement() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER)")
        let insert = try db.cachedStatement("INSERT INTO t(id, a) VALUES (?, ?)")
        try insert.execute(.integer(10), .integer(1))
        #expect(db.lastInsertRowID == 10)
        #expect(db.changes == 1)
        try db.cachedStatement("INSERT INTO t(a) VALUES (?)").execute(.integer(1))
        #expect(db.lastInsertRowID == 11)
        try db.execute("INSERT INTO t(a) VALUES (2)")
        #expect(db.lastInsertRowID == 12)

        try db.execute("UPDATE t SET a = a + 100 WHERE a = 1")
        #expect(db.changes == 2)
        try db.execute("DELETE FROM t")
        #expect(db.changes == 3)
        #expect(db.lastInsertRowID == 12)
    }

    @Test func pragmaSetReturnsSQLitesAnswer() throws {
        let db = try Connection.inMemory()
        #expect(try db.pragma("user_version") == .integer(0))
        #expect(try db.pragma("user_version", set: "42") == .null)
        #expect(try db.pragma("user_version") == .integer(42))
        #expect(try db.pragma("cache_size", set: "-4096") == .null)
        #expect(try db.pragma("cache_size") == .integer(-4096))
    }
}

@Suite struct ConnectionLifecycleTests {
    @Test func closeTwiceIsSafe() throws {
        let db = try Connection.inMemory()
        #expect(!db.isClosed)
        db.close()
        #expect(db.isClosed)
        db.close()
        #expect(db.isClosed)
    }

    @Test func closingWithAnOutstandingStatementIsSafe() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT 1")
        #expect(try statement.step())
        _ = try db.cachedStatement("SELECT 2")
        db.close()
        #expect(db.isClosed)
        withExtendedLifetime(statement) {}
    }

    @Test func closingRollsBackAndReleasesLocks() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let noWait = Connection.Configuration.with { $0.busyTimeout = .zero }
        let holder = try Connection(path: directory.path(), configuration: noWait)
        let other = try Connection(path: directory.path(), configuration: noWait)
        try holder.execute("CREATE TABLE t(a); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
        #expect(throws: SQLiteError.self) { try other.execute("BEGIN IMMEDIATE") }

        holder.close()
        try other.execute("BEGIN IMMEDIATE")
        #expect(try other.count("t") == 0)
        try other.execute("COMMIT")
    }
}
