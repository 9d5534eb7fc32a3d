internal import StrataSQLite

/// The SQL a ``StoreCoordinator`` ran since it opened or since
/// ``StoreCoordinator/resetStatistics()``: what a test asserts to pin the work a feature does
/// (Core Data's `-com.apple.CoreData.SQLDebug`, as numbers).
///
/// Every SQL text is counted apart, with how often it was prepared and executed and how many rows
/// it returned, and is sorted by kind (`SELECT`, `INSERT`, …) and by the entities whose tables it
/// names:
///
/// ```swift
/// coordinator.resetStatistics()
/// try context.performAndWait { try context.save() }
/// let statistics = coordinator.statistics
/// #expect(statistics.executions(of: .update, entity: "Good") == 1)
/// #expect(statistics.executions(of: .transaction) == 2)        // BEGIN IMMEDIATE, COMMIT
/// #expect(statistics.rowsRead(of: .select, entity: "Good") == 0)
/// ```
public struct StoreStatistics: Sendable, Equatable {
    /// What a statement does, from its first keyword.
    public enum StatementKind: String, Sendable, Hashable, CaseIterable {
        case select, insert, update, delete
        /// `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE`.
        case transaction
        /// Anything else: `PRAGMA`, `CREATE`, `DROP`, `ALTER`, `VACUUM`, …
        case other

        init(sql: String) {
            let word = sql.prefix { !$0.isWhitespace && $0 != "(" && $0 != ";" }.uppercased()
            switch word {
            case "SELECT": self = .select
            case "INSERT", "REPLACE": self = .insert
            case "UPDATE": self = .update
            case "DELETE": self = .delete
            case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE": self = .transaction
            default: self = .other
            }
        }
    }

    /// The counts of one SQL text.
    public struct StatementCounts: Sendable, Equatable {
        public let sql: String
        public let kind: StatementKind
        /// The entities whose tables the statement reads or writes: every table named after
        /// `FROM`, `JOIN`, `INTO` or `UPDATE` (a many-to-many join table counts for both of its
        /// entities). Empty for Strata's own tables (`strata_meta`, `strata_entity`) and for
        /// statements that name no table.
        public let entities: Set<String>
        public let prepared: Int
        public let executed: Int
        /// Rows the statement returned: a `SELECT`'s rows, a `RETURNING` clause's, a `PRAGMA`'s
        /// answer. Rows SQLite only scanned to find them are not counted.
        public let rowsRead: Int
    }

    /// Every SQL text counted, sorted by its text.
    public let statements: [StatementCounts]

    /// No statements: what the statistics are right after a reset.
    public init() { statements = [] }

    /// Wraps the connection's counters; `tables` maps a quoted table name to its entities.
    init(_ counters: StatementStatistics, tables: [String: [String]]) {
        statements = counters.executed.keys.sorted().map { sql in
            var entities = Set<String>()
            for (table, names) in tables where StoreStatistics.names(table, in: sql) { entities.formUnion(names) }
            return StatementCounts(sql: sql, kind: StatementKind(sql: sql), entities: entities,
                                   prepared: counters.prepared[sql] ?? 0, executed: counters.executed[sql] ?? 0,
                                   rowsRead: counters.rowsRead[sql] ?? 0)
        }
    }

    /// The quoted table names of `schema`'s entities and join tables, each with its entities.
    static func tables(of schema: Schema) -> [String: [String]] {
        var tables: [String: [String]] = [:]
        for info in schema.infos.values { tables[info.table] = [info.name] }
        for join in schema.joinTables { tables[quoted(join.name)] = [join.first.entity, join.second.entity] }
        return tables
    }

    private static func names(_ table: String, in sql: String) -> Bool {
        guard sql.contains(table) else { return false }
        return ["FROM ", "JOIN ", "INTO ", "UPDATE "].contains { sql.contains($0 + table) }
    }

    /// How many times each SQL text was prepared (a statement cache miss).
    public var prepared: [String: Int] { Dictionary(uniqueKeysWithValues: statements.map { ($0.sql, $0.prepared) }) }
    /// How many times each SQL text was executed.
    public var executed: [String: Int] { Dictionary(uniqueKeysWithValues: statements.map { ($0.sql, $0.executed) }) }

    public var totalPrepared: Int { statements.reduce(0) { $0 + $1.prepared } }
    public var totalExecuted: Int { statements.reduce(0) { $0 + $1.executed } }
    public var totalRowsRead: Int { statements.reduce(0) { $0 + $1.rowsRead } }

    /// Executions of statements of `kind` (any kind when `nil`) that read or write `entity`'s
    /// table (any table, or none, when `nil`).
    public func executions(of kind: StatementKind? = nil, entity: String? = nil) -> Int {
        matching(kind, entity).reduce(0) { $0 + $1.executed }
    }

    /// Rows returned by statements of `kind` that read or write `entity`'s table (`nil`: any).
    public func rowsRead(of kind: StatementKind? = nil, entity: String? = nil) -> Int {
        matching(kind, entity).reduce(0) { $0 + $1.rowsRead }
    }

    /// Executions of statements whose SQL starts with `prefix` (case-insensitive).
    public func executions(startingWith prefix: String) -> Int {
        let prefix = prefix.uppercased()
        return statements.filter { $0.sql.uppercased().hasPrefix(prefix) }.reduce(0) { $0 + $1.executed }
    }

    /// Preparations of statements whose SQL starts with `prefix` (case-insensitive).
    public func preparations(startingWith prefix: String) -> Int {
        let prefix = prefix.uppercased()
        return statements.filter { $0.sql.uppercased().hasPrefix(prefix) }.reduce(0) { $0 + $1.prepared }
    }

    private func matching(_ kind: StatementKind?, _ entity: String?) -> [StatementCounts] {
        statements.filter { (kind == nil || $0.kind == kind) && (entity.map($0.entities.contains) ?? true) }
    }
}
