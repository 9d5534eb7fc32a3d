import Foundation
import StrataSQLite
import Testing

@Suite struct TransactionTests {
    private func makeDatabase() throws -> Connection {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER)")
        return db
    }

    private func insert(_ value: Int64, into db: Connection) throws {
        try db.cachedStatement("INSERT INTO t(a) VALUES (?)").execute(.integer(value))
    }

    @Test func transactionCommitsWhenTheBodyReturns() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.path())
        let observer = try Connection(path: directory.path())
        try db.execute("CREATE TABLE t(a INTEGER)")
        #expect(!db.isInTransaction)

        var insideTransaction = false
        var countSeenByObserverDuringTransaction: Int64 = -1
        let result = try db.transaction {
            insideTransaction = db.isInTransaction
            try insert(1, into: db)
            try insert(2, into: db)
            countSeenByObserverDuringTransaction = try observer.count("t")
            return "done"
        }
        #expect(result == "done")
        #expect(insideTransaction)
        #expect(countSeenByObserverDuringTransaction == 0)
        #expect(!db.isInTransaction)
        #expect(try observer.column("SELECT a FROM t ORDER BY a") == [.integer(1), .integer(2)])
        #expect(db.statistics.executions(startingWith: "BEGIN DEFERRED") == 1)
        #expect(db.statistics.executions(startingWith: "COMMIT") == 1)
        #expect(db.statistics.executions(startingWith: "ROLLBACK") == 0)
    }

    @Test func transactionRollsBackAndRethrowsWhenTheBodyThrows() throws {
        let db = try makeDatabase()
        try insert(1, into: db)

        let thrown = try #require(throws: DeliberateFailure.self) {
            try db.transaction {
                try insert(2, into: db)
                try insert(3, into: db)
                #expect(try db.count("t") == 3)
                throw DeliberateFailure(tag: "body")
            }
        }
        #expect(thrown == DeliberateFailure(tag: "body"))
        #expect(!db.isInTransaction)
        #expect(try db.count("t") == 1)
        #expect(db.statistics.executions(startingWith: "ROLLBACK") == 1)
        #expect(db.statistics.executions(startingWith: "COMMIT") == 0)
    }

    @Test func immediateTransactionTakesTheWriteLockAtBegin() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let noWait = Connection.Configuration.with { $0.busyTimeout = .zero }
        let db = try Connection(path: directory.path(), configuration: noWait)
        let other = try Connection(path: directory.path(), configuration: noWait)
        try db.execute("CREATE TABLE t(a INTEGER)")

        let otherWriterError: SQLiteError? = try db.transaction(.immediate) {
            // No statement has run in the body yet: the lock must come from BEGIN IMMEDIATE itself.
            #expect(throws: SQLiteError.self) { try other.execute("BEGIN IMMEDIATE") }
        }
        #expect(otherWriterError?.code == .SQLITE_BUSY)
        #expect(!other.isInTransaction)
        #expect(db.statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)

        // Once committed, the lock is released.
        try other.execute("BEGIN IMMEDIATE")
        try other.execute("ROLLBACK")
    }

    @Test func deferredTransactionTakesNoWriteLockUntilItWrites() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let noWait = Connection.Configuration.with { $0.busyTimeout = .zero }
        let db = try Connection(path: directory.path(), configuration: noWait)
        let other = try Connection(path: directory.path(), configuration: noWait)
        try db.execute("CREATE TABLE t(a INTEGER)")

        try db.transaction(.deferred) {
            try other.execute("BEGIN IMMEDIATE")
            #expect(other.isInTransaction)
            try other.execute("ROLLBACK")
        }
        #expect(db.statistics.executions(startingWith: "BEGIN DEFERRED") == 1)
    }

    @Test func exclusiveTransactionRunsBeginExclusive() throws {
        let db = try makeDatabase()
        try db.transaction(.exclusive) { try insert(1, into: db) }
        #expect(db.statistics.executions(startingWith: "BEGIN EXCLUSIVE") == 1)
        #expect(try db.count("t") == 1)
    }

    @Test func failedCommitRollsBackAndRethrows() throws {
        let db = try Connection.inMemory()
        try db.execute("""
            PRAGMA foreign_keys = ON;
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        let error = try #require(throws: SQLiteError.self) {
            try db.transaction {
                try db.execute("INSERT INTO child VALUES (99)")
            }
        }
        #expect(error.code == .SQLITE_CONSTRAINT_FOREIGNKEY)
        #expect(error.sql == "COMMIT")
        #expect(!db.isInTransaction)
        #expect(try db.count("child") == 0)
    }

    @Test func transactionInsideATransactionFails() throws {
        let db = try makeDatabase()
        let error = try #require(throws: SQLiteError.self) {
            try db.transaction {
                try insert(1, into: db)
                try db.transaction { try insert(2, into: db) }
            }
        }
        #expect(error.code == .SQLITE_ERROR)
        #expect(error.message == "cannot start a transaction within a transaction")
        #expect(!db.isInTransaction)
        #expect(try db.count("t") == 0)
    }

    @Test func savepointReleasesItsWorkWhenTheBodyReturns() throws {
        let db = try makeDatabase()
        var inTransaction = false
        let value = try db.savepoint {
            inTransaction = db.isInTransaction
            try insert(1, into: db)
            return 7
        }
        #expect(value == 7)
        #expect(inTransaction, "a savepoint outside a transaction opens one")
        #expect(!db.isInTransaction)
        #expect(try db.column("SELECT a FROM t") == [.integer(1)])
        #expect(db.statistics.executions(startingWith: "SAVEPOINT \"strata\"") == 1)
        #expect(db.statistics.executions(startingWith: "RELEASE \"strata\"") == 1)
    }

    @Test func savepointOutsideATransactionRollsBackWhenTheBodyThrows() throws {
        let db = try makeDatabase()
        try insert(1, into: db)
        #expect(throws: DeliberateFailure(tag: "savepoint")) {
            try db.savepoint {
                try insert(2, into: db)
                throw DeliberateFailure(tag: "savepoint")
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.column("SELECT a FROM t") == [.integer(1)])
    }

    @Test func innerSavepointRollbackKeepsOuterWork() throws {
        let db = try makeDatabase()
        try db.transaction(.immediate) {
            try insert(1, into: db)
            try db.savepoint("outer") {
                try insert(2, into: db)
                #expect(throws: DeliberateFailure.self) {
                    try db.savepoint("inner") {
                        try insert(3, into: db)
                        throw DeliberateFailure(tag: "inner")
                    }
                }
                #expect(db.isInTransaction)
                try insert(4, into: db)
            }
            try insert(5, into: db)
        }
        #expect(!db.isInTransaction)
        #expect(try db.column("SELECT a FROM t ORDER BY a") == [.integer(1), .integer(2), .integer(4), .integer(5)])
    }

    @Test func nestedSavepointsWithTheSameNameRollBackOnlyTheInnermost() throws {
        let db = try makeDatabase()
        try db.savepoint {
            try insert(1, into: db)
            try? db.savepoint {
                try insert(2, into: db)
                throw DeliberateFailure(tag: "inner")
            }
            try insert(3, into: db)
        }
        #expect(try db.column("SELECT a FROM t ORDER BY a") == [.integer(1), .integer(3)])
    }

    @Test func outerSavepointRollbackDiscardsReleasedInnerWork() throws {
        let db = try makeDatabase()
        #expect(throws: DeliberateFailure.self) {
            try db.savepoint("outer") {
                try db.savepoint("inner") { try insert(1, into: db) }
                throw DeliberateFailure(tag: "outer")
            }
        }
        #expect(try db.count("t") == 0)
        #expect(!db.isInTransaction)
    }

    @Test func savepointNamesAreQuoted() throws {
        let db = try makeDatabase()
        try db.savepoint("it's a \"name\"; DROP TABLE t") { try insert(1, into: db) }
        #expect(try db.count("t") == 1)
        #expect(db.statistics.executions(startingWith: #"SAVEPOINT "it's a ""name""; DROP TABLE t""#) == 1)
    }

    @Test func rollbackQuietlyOutsideATransactionDoesNothing() throws {
        let db = try makeDatabase()
        db.rollbackQuietly()
        #expect(db.statistics.executions(startingWith: "ROLLBACK") == 0)
        try db.execute("BEGIN")
        try insert(1, into: db)
        #expect(db.isInTransaction)
        db.rollbackQuietly()
        #expect(!db.isInTransaction)
        #expect(try db.count("t") == 0)
        #expect(db.statistics.executions(startingWith: "ROLLBACK") == 1)
    }

    @Test func isInTransactionFollowsBeginAndCommit() throws {
        let db = try makeDatabase()
        #expect(!db.isInTransaction)
        try db.execute("BEGIN IMMEDIATE")
        #expect(db.isInTransaction)
        try db.execute("COMMIT")
        #expect(!db.isInTransaction)
    }
}
