/// How `BEGIN` takes its locks.
public enum TransactionKind: String, Sendable {
    /// Locks on first read or write.
    case deferred = "DEFERRED"
    /// Takes the write lock at once: the choice for every write transaction (no upgrade deadlocks).
    case immediate = "IMMEDIATE"
    case exclusive = "EXCLUSIVE"
}

extension Connection {
    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try cachedStatement("BEGIN \(kind.rawValue)").execute()
        let result: T
        do {
            result = try body()
        } catch {
            rollbackQuietly()
            throw error
        }
        do {
            try cachedStatement("COMMIT").execute()
        } catch {
            rollbackQuietly()
            throw error
        }
        return result
    }

    /// Runs `body` inside `SAVEPOINT name`: RELEASE on return, ROLLBACK TO + RELEASE on throw.
    /// Nests inside transactions and other savepoints.
    public func savepoint<T>(_ name: String = "strata", _ body: () throws -> T) throws -> T {
        let quoted = name.utf8.contains(UInt8(ascii: "\"")) ? "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : "\"" + name + "\""
        try cachedStatement("SAVEPOINT \(quoted)").execute()
        do {
            let result = try body()
            try cachedStatement("RELEASE \(quoted)").execute()
            return result
        } catch {
            try? cachedStatement("ROLLBACK TO \(quoted)").execute()
            try? cachedStatement("RELEASE \(quoted)").execute()
            throw error
        }
    }

    /// Rolls back the open transaction, if any, ignoring errors (SQLite may already have rolled back).
    public func rollbackQuietly() {
        guard isInTransaction else { return }
        try? cachedStatement("ROLLBACK").execute()
    }
}
