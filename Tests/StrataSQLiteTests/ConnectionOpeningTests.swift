import Foundation
import StrataSQLite
import Testing

@Suite struct ConnectionOpeningTests {
    @Test func configurationDefaultsAreWALNormalFiveSecondsAndRedacted() {
        let configuration = Connection.Configuration()
        #expect(configuration.readOnly == false)
        #expect(configuration.createIfMissing == true)
        #expect(configuration.journalMode == .wal)
        #expect(configuration.synchronous == .normal)
        #expect(configuration.busyTimeout == .seconds(5))
        #expect(configuration.cacheSizeKiB == nil)
        #expect(configuration.publicStatementArguments == false)
    }

    @Test func fileDatabaseOpensInWALJournalMode() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        let db = try Connection(path: path)
        #expect(db.path == path)
        #expect(try db.pragma("journal_mode") == .text("wal"))
        try db.execute("CREATE TABLE t(a)")
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test(arguments: [
        (Connection.Configuration.JournalMode.delete, "delete"),
        (.truncate, "truncate"),
        (.memory, "memory"),
        (.wal, "wal"),
    ])
    func journalModeIsConfigurableForFileDatabases(mode: Connection.Configuration.JournalMode, expected: String) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.path(), configuration: .with { $0.journalMode = mode })
        #expect(try db.pragma("journal_mode") == .text(expected))
    }

    @Test func inMemoryDatabaseKeepsMemoryJournalMode() throws {
        let db = try Connection.inMemory()
        #expect(db.path == ":memory:")
        #expect(try db.pragma("journal_mode") == .text("memory"))
    }

    @Test func inMemoryDatabasesArePrivateToTheirConnection() throws {
        let first = try Connection.inMemory()
        let second = try Connection.inMemory()
        try first.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1)")
        #expect(try first.count("t") == 1)
        #expect(try second.column("SELECT count(*) FROM sqlite_schema WHERE name = 't'") == [.integer(0)])
    }

    @Test func synchronousDefaultsToNormal() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.path())
        #expect(try db.pragma("synchronous") == .integer(1))
    }

    @Test(arguments: [
        (Connection.Configuration.Synchronous.off, Int64(0)),
        (.normal, 1),
        (.full, 2),
        (.extra, 3),
    ])
    func synchronousIsConfigurable(setting: Connection.Configuration.Synchronous, expected: Int64) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.path(), configuration: .with { $0.synchronous = setting })
        #expect(try db.pragma("synchronous") == .integer(expected))
    }

    @Test(arguments: [
        (Duration.seconds(5), Int64(5000)),
        (.milliseconds(50), 50),
        (.milliseconds(1500), 1500),
        (.seconds(2), 2000),
        (.microseconds(2500), 2),
        (.zero, 0),
    ])
    func busyTimeoutIsPassedToSQLiteInMilliseconds(timeout: Duration, expectedMilliseconds: Int64) throws {
        let db = try Connection.inMemory(configuration: .with { $0.busyTimeout = timeout })
        #expect(try db.pragma("busy_timeout") == .integer(expectedMilliseconds))
    }

    @Test func busyTimeoutIsHonouredWhenAnotherConnectionHoldsTheWriteLock() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let configuration = Connection.Configuration.with { $0.busyTimeout = .milliseconds(50) }
        let waiter = try Connection(path: directory.path(), configuration: configuration)
        let holder = try Connection(path: directory.path(), configuration: configuration)
        try waiter.execute("CREATE TABLE t(a)")
        try holder.execute("BEGIN IMMEDIATE")

        let clock = ContinuousClock()
        let start = clock.now
        let error = try #require(throws: SQLiteError.self) {
            try waiter.execute("INSERT INTO t VALUES (1)")
        }
        let waited = clock.now - start
        #expect(error.code == .SQLITE_BUSY)
        #expect(error.message == "database is locked")
        #expect(error.sql == "INSERT INTO t VALUES (1)")
        #expect(waited >= .milliseconds(40), "SQLite gave up before the configured busy timeout")
        #expect(waited < .seconds(2), "the configured 50 ms timeout was not used (default is 5 s)")

        try holder.execute("ROLLBACK")
        try waiter.execute("INSERT INTO t VALUES (1)")
        #expect(try waiter.count("t") == 1)
    }

    @Test func cacheSizeIsConfigurableInKiB() throws {
        let configured = try Connection.inMemory(configuration: .with { $0.cacheSizeKiB = 8192 })
        #expect(try configured.pragma("cache_size") == .integer(-8192))
        let standard = try Connection.inMemory()
        #expect(try standard.pragma("cache_size") == .integer(-2000))
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        do {
            let writer = try Connection(path: path)
            try writer.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1)")
        }
        let reader = try Connection(path: path, configuration: .with { $0.readOnly = true })
        #expect(reader.configuration.readOnly)
        #expect(try reader.column("SELECT a FROM t") == [.integer(1)])

        let error = try #require(throws: SQLiteError.self) {
            try reader.execute("INSERT INTO t VALUES (2)")
        }
        #expect(error.code == .SQLITE_READONLY)
        #expect(error.message == "attempt to write a readonly database")
        #expect(try reader.column("SELECT a FROM t") == [.integer(1)])
    }

    @Test func readOnlyOpenOfAMissingFileFailsWithCantOpenAndCreatesNothing() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path("missing.sqlite")
        let error = try #require(throws: SQLiteError.self) {
            _ = try Connection(path: path, configuration: .with { $0.readOnly = true })
        }
        #expect(error.code == .SQLITE_CANTOPEN)
        #expect(error.message.hasPrefix("cannot open \(path): "))
        #expect(error.sql == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func openWithoutCreateIfMissingDoesNotCreateTheFile() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path("missing.sqlite")
        let error = try #require(throws: SQLiteError.self) {
            _ = try Connection(path: path, configuration: .with { $0.createIfMissing = false })
        }
        #expect(error.code == .SQLITE_CANTOPEN)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(arguments: [false, true])
    func openingANonDatabaseFileFailsWithNotADatabase(readOnly: Bool) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path("notes.txt")
        let letters = Array("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789\n".utf8)
        let contents = Data((0..<8192).map { _ in letters.randomElement()! })
        try contents.write(to: URL(fileURLWithPath: path))

        // Opening runs the first query (the journal_mode or synchronous pragma): that is where SQLite notices.
        let error = try #require(throws: SQLiteError.self) {
            let db = try Connection(path: path, configuration: .with { $0.readOnly = readOnly })
            _ = try db.pragma("user_version")
        }
        #expect(error.code == .SQLITE_NOTADB)
        #expect(error.message == "file is not a database")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents, "the file must be left untouched")
    }

    @Test func dataWrittenBeforeCloseIsReadAfterReopening() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        let first = try Connection(path: path)
        try first.execute("CREATE TABLE t(a TEXT)")
        try first.cachedStatement("INSERT INTO t VALUES (?)").execute(.text("kept"))
        first.close()

        let second = try Connection(path: path)
        #expect(try second.column("SELECT a FROM t") == [.text("kept")])
    }
}
