import Foundation
import StrataSQLite
import Testing

@Suite struct ValueRoundTripTests {
    /// Inserts `value` into a column declared as `declaredType` and reads it back with `value(at:)`,
    /// together with SQLite's own `typeof()` of the stored value.
    private func roundTrip(_ value: SQLiteValue, declaredType: String = "") throws -> (value: SQLiteValue, typeOf: String) {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE v(x \(declaredType))")
        try db.cachedStatement("INSERT INTO v(x) VALUES (?)").execute(value)
        let rows = try db.rows("SELECT x, typeof(x) FROM v")
        try #require(rows.count == 1)
        guard case .text(let typeOf) = rows[0][1] else {
            Issue.record("typeof() returned \(rows[0][1])")
            return (rows[0][0], "")
        }
        return (rows[0][0], typeOf)
    }

    @Test(arguments: [Int64.min, -1, 0, 1, 42, Int64.max])
    func integersRoundTripExactly(number: Int64) throws {
        let result = try roundTrip(.integer(number))
        #expect(result.value == .integer(number))
        #expect(result.typeOf == "integer")
    }

    @Test(arguments: [
        Double.infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 0.1, -1.5, .pi, 1e300,
    ])
    func doublesRoundTripBitForBit(number: Double) throws {
        let result = try roundTrip(.real(number))
        guard case .real(let read) = result.value else {
            Issue.record("expected .real, got \(result.value)")
            return
        }
        #expect(read.bitPattern == number.bitPattern)
        #expect(result.typeOf == "real")
    }

    @Test func negativeZeroKeepsItsSignInAnUntypedColumn() throws {
        let result = try roundTrip(.real(-0.0))
        guard case .real(let read) = result.value else {
            Issue.record("expected .real, got \(result.value)")
            return
        }
        #expect(read == 0)
        #expect(read.sign == .minus)
        #expect(read.bitPattern == (-0.0 as Double).bitPattern)
    }

    @Test func nanIsStoredAsNull() throws {
        let result = try roundTrip(.real(.nan))
        #expect(result.value == .null)
        #expect(result.typeOf == "null")
    }

    @Test func emptyStringStaysAnEmptyStringNotNull() throws {
        let result = try roundTrip(.text(""))
        #expect(result.value == .text(""))
        #expect(result.typeOf == "text")
    }

    @Test(arguments: ["ÉCOLE école 日本語 🇵🇱", "e\u{301}", "\u{E9}", "Zażółć gęślą jaźń", "it's \"quoted\""])
    func nonASCIIStringsRoundTripWithTheirExactBytes(text: String) throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE v(x TEXT)")
        try db.cachedStatement("INSERT INTO v VALUES (?)").execute(.text(text))
        let rows = try db.rows("SELECT x, length(x), length(CAST(x AS BLOB)) FROM v")
        try #require(rows.count == 1)
        guard case .text(let read) = rows[0][0] else {
            Issue.record("expected .text, got \(rows[0][0])")
            return
        }
        // Swift's == ignores normalisation differences ("é" == "e\u{301}"): compare the bytes.
        #expect(Array(read.utf8) == Array(text.utf8))
        #expect(rows[0][1] == .integer(Int64(text.unicodeScalars.count)))
        #expect(rows[0][2] == .integer(Int64(text.utf8.count)))
    }

    @Test func stringWithAnEmbeddedNULRoundTripsWithItsLength() throws {
        let text = "a\u{0}b"
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE v(x TEXT)")
        try db.cachedStatement("INSERT INTO v VALUES (?)").execute(.text(text))
        let statement = try db.prepare("SELECT x, length(CAST(x AS BLOB)) FROM v")
        #expect(try statement.step())
        let read = statement.string(at: 0)
        #expect(Array(read.utf8) == [0x61, 0x00, 0x62])
        #expect(read.utf8.count == 3)
        #expect(statement.value(at: 0) == .text(text))
        #expect(statement.int64(at: 1) == 3)
    }

    @Test func emptyDataStaysAZeroLengthBlobNotNull() throws {
        let result = try roundTrip(.blob(Data()))
        #expect(result.value == .blob(Data()))
        #expect(result.typeOf == "blob")
    }

    @Test func fiveMegabyteBlobRoundTripsByteExact() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let size = 5 * 1024 * 1024
        var generator = SystemRandomNumberGenerator()
        var blob = Data(count: size)
        blob.withUnsafeMutableBytes { buffer in
            let words = buffer.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = generator.next() }
        }

        let db = try Connection(path: directory.path())
        try db.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, x BLOB)")
        try db.cachedStatement("INSERT INTO v(x) VALUES (?)").execute(.blob(blob))
        db.close()

        let reopened = try Connection(path: directory.path())
        let statement = try reopened.prepare("SELECT x, length(x) FROM v")
        #expect(try statement.step())
        let read = statement.data(at: 0)
        #expect(read.count == size)
        #expect(read == blob)
        #expect(statement.int64(at: 1) == Int64(size))
    }

    @Test func nullRoundTripsAsNull() throws {
        let result = try roundTrip(.null)
        #expect(result.value == .null)
        #expect(result.typeOf == "null")
    }

    @Test func nullColumnReadsAsZeroEmptyStringAndEmptyData() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT NULL, 5")
        #expect(try statement.step())
        #expect(statement.isNull(at: 0))
        #expect(!statement.isNull(at: 1))
        #expect(statement.int64(at: 0) == 0)
        #expect(statement.double(at: 0) == 0)
        #expect(statement.string(at: 0) == "")
        #expect(statement.data(at: 0) == Data())
        #expect(statement.value(at: 0) == .null)
    }

    @Test func valueReportsTheStorageClassOfEachColumn() throws {
        let db = try Connection.inMemory()
        let rows = try db.rows("SELECT 1, 1.5, 'x', x'00ff', NULL, '', x''")
        #expect(rows == [[.integer(1), .real(1.5), .text("x"), .blob(Data([0x00, 0xFF])), .null, .text(""), .blob(Data())]])
    }

    @Test func declaredColumnAffinityDecidesTheStorageClass() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE v(i INTEGER, r REAL, t TEXT)")
        try db.cachedStatement("INSERT INTO v VALUES (?, ?, ?)").execute(.text("42"), .integer(3), .integer(7))
        #expect(try db.rows("SELECT i, r, t FROM v") == [[.integer(42), .real(3.0), .text("7")]])
    }

    @Test func typedBindOverloadsBindTheirStorageClass() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT ?, ?, ?, ?, ?")
        try statement.bind(Int64(-7), at: 1)
        try statement.bind(2.25, at: 2)
        try statement.bind("héllo", at: 3)
        try statement.bind(Data([1, 2, 3]), at: 4)
        try statement.bindNull(at: 5)
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .integer(-7))
        #expect(statement.value(at: 1) == .real(2.25))
        #expect(statement.value(at: 2) == .text("héllo"))
        #expect(statement.value(at: 3) == .blob(Data([1, 2, 3])))
        #expect(statement.value(at: 4) == .null)
        #expect(try statement.step() == false)
    }

    @Test func unboundParametersAreNull() throws {
        let db = try Connection.inMemory()
        #expect(try db.rows("SELECT ?, ?") == [[.null, .null]])
    }
}

@Suite struct SQLiteValueTests {
    @Test(arguments: [
        (SQLiteValue.null, "NULL"),
        (.integer(-5), "-5"),
        (.integer(Int64.max), "9223372036854775807"),
        (.real(1.5), "1.5"),
        (.text("it's"), "'it''s'"),
        (.text(""), "''"),
        (.blob(Data([0x00, 0xAB, 0xFF])), "x'00abff'"),
        (.blob(Data()), "x''"),
    ])
    func descriptionIsAnSQLLiteral(value: SQLiteValue, expected: String) {
        #expect(value.description == expected)
    }

    @Test func onlyNullIsNull() {
        #expect(SQLiteValue.null.isNull)
        #expect(!SQLiteValue.integer(0).isNull)
        #expect(!SQLiteValue.text("").isNull)
        #expect(!SQLiteValue.blob(Data()).isNull)
        #expect(!SQLiteValue.real(0).isNull)
    }
}
