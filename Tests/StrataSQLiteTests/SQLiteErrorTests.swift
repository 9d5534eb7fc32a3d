import Foundation
import StrataSQLite
import Testing

@Suite struct SQLiteErrorTests {
    private static let insert = "INSERT INTO accounts(id, token) VALUES (?, ?)"
    private static let secret = "hunter2-s3cr3t-token"

    /// Violates the primary key of `accounts` with a secret among the arguments.
    private func duplicateInsertError(publicArguments: Bool) throws -> SQLiteError {
        let db = try Connection.inMemory(configuration: .with { $0.publicStatementArguments = publicArguments })
        try db.execute("CREATE TABLE accounts(id INTEGER PRIMARY KEY, token TEXT)")
        try db.cachedStatement(Self.insert).execute(.integer(1), .text("first"))
        return try #require(throws: SQLiteError.self) {
            try db.cachedStatement(Self.insert).execute(.integer(1), .text(Self.secret))
        }
    }

    @Test func errorCarriesTheSQLMessageAndArguments() throws {
        let error = try duplicateInsertError(publicArguments: false)
        #expect(error.code == .SQLITE_CONSTRAINT_PRIMARYKEY)
        #expect(error.message == "UNIQUE constraint failed: accounts.id")
        #expect(error.sql == Self.insert)
        #expect(error.arguments == [.integer(1), .text(Self.secret)])
        #expect(error.argumentsArePublic == false)
    }

    @Test func descriptionRedactsArgumentsByDefault() throws {
        let error = try duplicateInsertError(publicArguments: false)
        #expect(!error.description.contains(Self.secret))
        #expect(!String(describing: error).contains(Self.secret))
        #expect(!"\(error)".contains(Self.secret))
        #expect(error.description == """
            SQLite error 1555 (constraint failed): UNIQUE constraint failed: accounts.id \
            — while executing `\(Self.insert)` with 2 argument(s) \
            (redacted; set publicStatementArguments to show them)
            """)
    }

    @Test func descriptionShowsArgumentsWhenTheyArePublic() throws {
        let error = try duplicateInsertError(publicArguments: true)
        #expect(error.argumentsArePublic)
        #expect(error.description.contains(Self.secret))
        #expect(error.description == """
            SQLite error 1555 (constraint failed): UNIQUE constraint failed: accounts.id \
            — while executing `\(Self.insert)` with arguments [1, '\(Self.secret)']
            """)
    }

    @Test func descriptionWithoutSQLOrArgumentsIsCodeAndMessage() {
        let error = SQLiteError(code: .SQLITE_BUSY, message: "database is locked")
        #expect(error.sql == nil)
        #expect(error.arguments.isEmpty)
        #expect(error.description == "SQLite error 5 (database is locked): database is locked")
    }

    @Test func descriptionWithSQLButNoArgumentsMentionsNoArguments() throws {
        let db = try Connection.inMemory()
        let error = try #require(throws: SQLiteError.self) {
            try db.execute("SELECT * FROM missing_table")
        }
        #expect(error.code == .SQLITE_ERROR)
        #expect(error.arguments.isEmpty)
        #expect(error.description == "SQLite error 1 (SQL logic error): no such table: missing_table — while executing `SELECT * FROM missing_table`")
    }

    @Test func prepareErrorCarriesTheWholeSQL() throws {
        let db = try Connection.inMemory()
        let sql = "SELECT nope FROM nowhere WHERE"
        let error = try #require(throws: SQLiteError.self) { _ = try db.prepare(sql) }
        #expect(error.code == .SQLITE_ERROR)
        #expect(error.sql == sql)
        #expect(error.message == "incomplete input")
    }

    @Test func bindingOutOfRangeThrowsRangeError() throws {
        let db = try Connection.inMemory()
        let statement = try db.prepare("SELECT ?")
        let error = try #require(throws: SQLiteError.self) { try statement.bind(.integer(1), at: 2) }
        #expect(error.code == .SQLITE_RANGE)
        #expect(error.sql == "SELECT ?")
        #expect(error.message == "column index out of range")
    }

    @Test func errorArgumentsFollowTheStatementsBindings() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a UNIQUE NOT NULL)")
        let statement = try db.prepare("INSERT INTO t VALUES (?)")
        try statement.execute(.text("x"))

        // execute() without arguments keeps the previous bindings, and the error reports them.
        let kept = try #require(throws: SQLiteError.self) { try statement.execute() }
        #expect(kept.code == .SQLITE_CONSTRAINT_UNIQUE)
        #expect(kept.arguments == [.text("x")])

        statement.clearBindings()
        let cleared = try #require(throws: SQLiteError.self) { try statement.execute() }
        #expect(cleared.code == .SQLITE_CONSTRAINT_NOTNULL)
        #expect(cleared.arguments.isEmpty)
    }
}
