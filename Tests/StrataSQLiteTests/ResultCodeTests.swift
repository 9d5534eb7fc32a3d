import Foundation
import StrataSQLite
import Testing

@Suite struct ResultCodeTests {
    @Test(arguments: [
        (ResultCode.SQLITE_CONSTRAINT_UNIQUE, Int32(2067), ResultCode.SQLITE_CONSTRAINT),
        (.SQLITE_CONSTRAINT_PRIMARYKEY, 1555, .SQLITE_CONSTRAINT),
        (.SQLITE_CONSTRAINT_NOTNULL, 1299, .SQLITE_CONSTRAINT),
        (.SQLITE_CONSTRAINT_FOREIGNKEY, 787, .SQLITE_CONSTRAINT),
        (.SQLITE_CONSTRAINT_CHECK, 275, .SQLITE_CONSTRAINT),
        (.SQLITE_BUSY_SNAPSHOT, 517, .SQLITE_BUSY),
        (.SQLITE_BUSY_TIMEOUT, 773, .SQLITE_BUSY),
        (.SQLITE_IOERR_READ, 266, .SQLITE_IOERR),
        (.SQLITE_IOERR_SHORT_READ, 522, .SQLITE_IOERR),
        (.SQLITE_IOERR_WRITE, 778, .SQLITE_IOERR),
        (.SQLITE_IOERR_FSYNC, 1034, .SQLITE_IOERR),
        (.SQLITE_READONLY_DBMOVED, 1032, .SQLITE_READONLY),
    ])
    func extendedCodesMatchTheirPrimaryCode(code: ResultCode, rawValue: Int32, primary: ResultCode) {
        #expect(code.rawValue == rawValue)
        #expect(code.primaryResultCode == primary)
        #expect(!code.isPrimary)
        #expect(primary ~= code)
        #expect(code ~= code)
    }

    @Test func primaryCodesHaveSQLiteRawValues() {
        #expect(ResultCode.SQLITE_OK.rawValue == 0)
        #expect(ResultCode.SQLITE_ERROR.rawValue == 1)
        #expect(ResultCode.SQLITE_BUSY.rawValue == 5)
        #expect(ResultCode.SQLITE_READONLY.rawValue == 8)
        #expect(ResultCode.SQLITE_CANTOPEN.rawValue == 14)
        #expect(ResultCode.SQLITE_CONSTRAINT.rawValue == 19)
        #expect(ResultCode.SQLITE_RANGE.rawValue == 25)
        #expect(ResultCode.SQLITE_NOTADB.rawValue == 26)
        #expect(ResultCode.SQLITE_ROW.rawValue == 100)
        #expect(ResultCode.SQLITE_DONE.rawValue == 101)
    }

    @Test func primaryCodeIsItsOwnPrimary() {
        #expect(ResultCode.SQLITE_CONSTRAINT.isPrimary)
        #expect(ResultCode.SQLITE_CONSTRAINT.primaryResultCode == .SQLITE_CONSTRAINT)
        #expect(ResultCode.SQLITE_DONE.isPrimary)
        #expect(ResultCode.SQLITE_CONSTRAINT ~= .SQLITE_CONSTRAINT)
    }

    @Test func primaryCodeMatchesItsExtendedCodes() {
        #expect(ResultCode.SQLITE_CONSTRAINT ~= .SQLITE_CONSTRAINT_UNIQUE)
        #expect(ResultCode.SQLITE_BUSY ~= .SQLITE_BUSY_SNAPSHOT)
    }

    @Test func primaryCodeDoesNotMatchAnotherPrimarysExtendedCodes() {
        #expect(!(ResultCode.SQLITE_BUSY ~= .SQLITE_CONSTRAINT_UNIQUE))
        #expect(!(ResultCode.SQLITE_CONSTRAINT ~= .SQLITE_BUSY))
        #expect(!(ResultCode.SQLITE_ERROR ~= .SQLITE_CONSTRAINT_UNIQUE))
    }

    @Test func extendedCodeDoesNotMatchAnotherExtendedCode() {
        #expect(!(ResultCode.SQLITE_CONSTRAINT_NOTNULL ~= .SQLITE_CONSTRAINT_UNIQUE))
        #expect(!(ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= .SQLITE_CONSTRAINT_PRIMARYKEY))
    }

    /// `~=` is (pattern, value): an extended *pattern* matches only itself, so
    /// `error.code ~= .SQLITE_CONSTRAINT` (operands swapped) is false for a UNIQUE violation.
    @Test func extendedPatternDoesNotMatchItsPrimaryCode() {
        #expect(!(ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= .SQLITE_CONSTRAINT))
    }

    @Test func descriptionShowsTheNumberAndSQLitesText() {
        #expect(ResultCode.SQLITE_OK.description == "0 (not an error)")
        #expect(ResultCode.SQLITE_BUSY.description == "5 (database is locked)")
        #expect(ResultCode.SQLITE_CONSTRAINT_UNIQUE.description == "2067 (constraint failed)")
        #expect(ResultCode.SQLITE_NOTADB.description == "26 (file is not a database)")
    }

    @Test func uniqueViolationThrowsExactlyConstraintUnique() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a UNIQUE)")
        try db.cachedStatement("INSERT INTO t(a) VALUES (?)").execute(.integer(1))
        let error = try #require(throws: SQLiteError.self) {
            try db.cachedStatement("INSERT INTO t(a) VALUES (?)").execute(.integer(1))
        }
        #expect(error.code == .SQLITE_CONSTRAINT_UNIQUE)
        #expect(error.code != .SQLITE_CONSTRAINT)
        #expect(error.message == "UNIQUE constraint failed: t.a")

        let matched: String
        switch error.code {
        case .SQLITE_BUSY: matched = "busy"
        case .SQLITE_CONSTRAINT: matched = "constraint"
        default: matched = "other"
        }
        #expect(matched == "constraint")

        let extendedMatch: String
        switch error.code {
        case .SQLITE_CONSTRAINT_PRIMARYKEY: extendedMatch = "primary key"
        case .SQLITE_CONSTRAINT_UNIQUE: extendedMatch = "unique"
        default: extendedMatch = "other"
        }
        #expect(extendedMatch == "unique")
        #expect(try db.count("t") == 1)
    }

    @Test func constraintViolationsReportTheirExtendedCodes() throws {
        let db = try Connection.inMemory()
        try db.execute("""
            PRAGMA foreign_keys = ON;
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(
                id INTEGER PRIMARY KEY,
                parent INTEGER REFERENCES parent(id),
                name TEXT NOT NULL,
                age INTEGER CHECK (age >= 0)
            );
            INSERT INTO parent(id) VALUES (1);
            INSERT INTO child(id, parent, name, age) VALUES (1, 1, 'a', 1);
            """)
        let insert = "INSERT INTO child(id, parent, name, age) VALUES (?, ?, ?, ?)"
        func failure(_ arguments: SQLiteValue...) throws -> ResultCode {
            let statement = try db.cachedStatement(insert)
            try statement.bind(arguments)
            let error = try #require(throws: SQLiteError.self) { try statement.execute() }
            return error.code
        }
        #expect(try failure(.integer(1), .integer(1), .text("b"), .integer(1)) == .SQLITE_CONSTRAINT_PRIMARYKEY)
        #expect(try failure(.integer(2), .integer(1), .null, .integer(1)) == .SQLITE_CONSTRAINT_NOTNULL)
        #expect(try failure(.integer(2), .integer(1), .text("b"), .integer(-1)) == .SQLITE_CONSTRAINT_CHECK)
        #expect(try failure(.integer(2), .integer(99), .text("b"), .integer(1)) == .SQLITE_CONSTRAINT_FOREIGNKEY)
        #expect(try db.count("child") == 1)
    }

    @Test func catchClauseCanFilterOnThePrimaryCode() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a NOT NULL)")
        var caught: ResultCode?
        do {
            try db.cachedStatement("INSERT INTO t(a) VALUES (?)").execute(.null)
        } catch let error as SQLiteError where .SQLITE_CONSTRAINT ~= error.code {
            caught = error.code
        }
        #expect(caught == .SQLITE_CONSTRAINT_NOTNULL)
    }
}
