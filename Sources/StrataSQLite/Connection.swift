internal import CSQLite
internal import CStrataVFS
internal import Foundation

/// A connection to one SQLite database: a file or memory.
///
/// A `Connection` is not thread-safe and not `Sendable`: its owner serialises every use
/// (Strata's store coordinator holds it behind a lock). It is the only type in Strata that
/// talks to `sqlite3_*`, together with ``Statement``.
///
/// ```swift
/// let db = try Connection(path: "/tmp/x.sqlite")        // WAL, synchronous=NORMAL
/// try db.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)")
/// try db.transaction(.immediate) {
///     try db.cachedStatement("INSERT INTO t(b) VALUES (?)").execute(.text("x"))
/// }
/// ```
public final class Connection {
    /// How a connection is opened.
    public struct Configuration: Sendable {
        /// SQLite's `journal_mode`.
        public enum JournalMode: String, Sendable { case wal = "WAL", delete = "DELETE", truncate = "TRUNCATE", memory = "MEMORY" }
        /// SQLite's `synchronous` setting: how often SQLite fsyncs.
        public enum Synchronous: String, Sendable { case off = "OFF", normal = "NORMAL", full = "FULL", extra = "EXTRA" }

        /// Open read-only (no file is created, no pragma that writes is issued).
        public var readOnly = false
        /// Create the file when it does not exist (ignored when read-only).
        public var createIfMissing = true
        /// Journal mode set at open (file databases that are writable only). Default WAL.
        public var journalMode: JournalMode = .wal
        /// Whether a writable file database gets ``journalMode`` at open; `false` leaves the
        /// file's own mode alone (and writes nothing at open).
        public var setsJournalMode = true
        /// Default `.normal`: in WAL mode a commit survives a process crash; a power loss may
        /// lose the last commits but never corrupts the file.
        public var synchronous: Synchronous = .normal
        /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
        public var busyTimeout: Duration = .seconds(5)
        /// Page cache size in KiB (`PRAGMA cache_size=-N`); `nil` keeps SQLite's default (2 MiB).
        public var cacheSizeKiB: Int? = nil
        /// Whether errors may print statement arguments. Off by default: arguments hold user data.
        public var publicStatementArguments = false
        /// Whether a database file this connection creates gets page checksums (on by default):
        /// 8 reserved bytes at the end of every page hold a checksum that Strata's VFS shim
        /// writes with the page and verifies when it reads it. A mismatch is an error whose
        /// ``SQLiteError/corruptPage`` names the page. An existing file keeps what it has: its
        /// checksums are verified and maintained whatever this says.
        public var pageChecksums = true
        /// Whether file names may be `file:` URIs (`SQLITE_OPEN_URI`), for this connection's
        /// path and for the files `ATTACH` and `VACUUM INTO` name. Off by default.
        public var uriFilenames = false
        /// Open with SQLite's `immutable=1`: no locks, no `-wal`/`-shm`, no check for changes made
        /// by others, for a file that nobody can change while it is open (on a read-only mount).
        /// Implies ``readOnly``. Set by ``Connection/openReadOnly(pathBytes:displayPath:configuration:)``
        /// when an ordinary read-only open is refused for want of write access.
        public var immutable = false
        /// SQLite's `journal_size_limit` for a writable connection, in bytes: after a checkpoint
        /// resets the `-wal`, the file is truncated to at most this size (without it the `-wal`
        /// keeps its peak size, a large import's, for as long as the store is open). `nil` keeps
        /// SQLite's default (no limit).
        public var journalSizeLimit: Int64? = 16 << 20

        public init() {}
    }

    /// The database path (`:memory:` for an in-memory database).
    public let path: String
    public let configuration: Configuration

    /// Called with the SQL text of every statement when it starts executing (Core Data's SQLDebug).
    public var trace: (@Sendable (String) -> Void)?

    var handle: OpaquePointer?
    private var statementCache: [String: Statement] = [:]
    private var counters: [String: StatementCounter] = [:]
    /// ``truncateWAL(ifLargerThan:wait:)``'s back-off: calls still to skip, and the last number skipped.
    private var truncationSkips = 0, truncationBackoff = 0

    /// Opens (and by default creates) the database at `path`.
    public convenience init(path: String, configuration: Configuration = Configuration()) throws {
        try self.init(pathBytes: Array(path.utf8), displayPath: path, configuration: configuration)
    }

    /// Opens (and by default creates) the database whose path is exactly `pathBytes` (a Linux
    /// file name need not be UTF-8; a `String` can't hold one that is not). `displayPath` is
    /// ``path``, for messages (default: the bytes decoded as UTF-8, repaired).
    public init(pathBytes: [UInt8], displayPath: String? = nil, configuration: Configuration = Configuration()) throws {
        precondition(!pathBytes.contains(0), "Connection(pathBytes:): a path can't contain NUL")
        let path = displayPath ?? String(decoding: pathBytes, as: UTF8.self)
        self.path = path
        self.configuration = configuration
        var flags = SQLITE_OPEN_NOMUTEX
        if configuration.uriFilenames || configuration.immutable { flags |= SQLITE_OPEN_URI }
        if configuration.readOnly || configuration.immutable {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if configuration.createIfMissing { flags |= SQLITE_OPEN_CREATE }
        }
        let registered = strata_vfs_register()
        guard registered == SQLITE_OK else {
            throw SQLiteError(code: ResultCode(rawValue: registered), message: "cannot register Strata's checksum VFS")
        }
        var db: OpaquePointer?
        let name = configuration.immutable ? Connection.immutableURI(pathBytes) : pathBytes
        let code = (name + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { sqlite3_open_v2($0.baseAddress, &db, flags, STRATA_VFS_NAME) }
        }
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: ResultCode(rawValue: code), message: "cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        let milliseconds = configuration.busyTimeout.components.seconds * 1000
            + configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
        do {
            if configuration.pageChecksums && !configuration.readOnly && !configuration.immutable && path != ":memory:" {
                try reservePageChecksumsIfNew()
            }
            if !configuration.readOnly && !configuration.immutable && configuration.setsJournalMode && path != ":memory:" {
                _ = try pragma("journal_mode", set: configuration.journalMode.rawValue)
            }
            try execute("PRAGMA synchronous=\(configuration.synchronous.rawValue)")
            if let kib = configuration.cacheSizeKiB { try execute("PRAGMA cache_size=-\(kib)") }
            if let limit = configuration.journalSizeLimit, !configuration.readOnly, !configuration.immutable, path != ":memory:" {
                _ = try pragma("journal_size_limit", set: String(limit))
            }
        } catch {
            close()
            throw error
        }
    }

    /// Sets the journal mode (`PRAGMA journal_mode`), which writes the database header when the
    /// mode changes: for a connection opened with ``Configuration/setsJournalMode`` `false`
    /// once it knows the file is one it may write.
    public func setJournalMode(_ mode: Configuration.JournalMode) throws {
        _ = try pragma("journal_mode", set: mode.rawValue)
    }

    /// Whether closing this connection, when it is the last one to a WAL database, checkpoints
    /// the log into the file (SQLite's default; `SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`). Off, a
    /// connection that only read leaves the file's bytes as they were.
    public func setCheckpointOnClose(_ enabled: Bool) throws {
        let code = strata_set_checkpoint_on_close(liveHandle, enabled ? 1 : 0)
        guard code == SQLITE_OK else { throw error(code: code, sql: nil) }
    }

    /// Gives a database file that has no page yet the reserve and the application id of a
    /// checksummed store, before anything (the journal mode) writes its first page.
    private func reservePageChecksumsIfNew() throws {
        var pages: Int64 = 0
        try prepare("PRAGMA page_count").forEachRow { pages = $0.int64(at: 0) }
        guard pages == 0 else { return }
        try setRequestedReserveBytes(Int(STRATA_CHECKSUM_RESERVE))
        try execute("PRAGMA application_id = \(STRATA_CHECKSUM_APPLICATION_ID)")
    }

    /// Sets the reserved bytes per page that the next `VACUUM` (or `VACUUM INTO`) writes
    /// (`SQLITE_FCNTL_RESERVE_BYTES`); the file itself is unchanged until then.
    public func setRequestedReserveBytes(_ count: Int, schema: String = "main") throws {
        var reserve = Int32(count)
        let code = sqlite3_file_control(liveHandle, schema, SQLITE_FCNTL_RESERVE_BYTES, &reserve)
        guard code == SQLITE_OK else { throw error(code: code, sql: nil) }
    }

    /// The page-checksum state of the main database file.
    public var pageChecksumState: PageChecksumState {
        var state = StrataPageState()
        guard sqlite3_file_control(liveHandle, "main", STRATA_FCNTL_PAGE_STATE, &state) == SQLITE_OK else {
            return PageChecksumState(checksummed: false, pageSize: 0, faults: 0, lastFaultPage: nil)
        }
        return PageChecksumState(checksummed: state.checksummed != 0, pageSize: Int(state.pageSize), faults: Int(state.faults),
                                 lastFaultPage: state.lastFaultPage > 0 ? Int(state.lastFaultPage) : nil)
    }

    /// Opens a private in-memory database.
    public static func inMemory(configuration: Configuration = Configuration()) throws -> Connection {
        try Connection(path: ":memory:", configuration: configuration)
    }

    deinit { close() }

    /// Finalises every statement and closes the database. Safe to call twice.
    public func close() {
        statementCache.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Whether ``close()`` has run.
    public var isClosed: Bool { handle == nil }

    var liveHandle: OpaquePointer {
        guard let handle else {
            preconditionFailure("Connection to \(path) used after close(): open a new Connection instead.")
        }
        return handle
    }

    // MARK: Statements

    /// Prepares a new statement (not cached).
    public func prepare(_ sql: String) throws -> Statement {
        var statementHandle: OpaquePointer?
        let code = sqlite3_prepare_v3(liveHandle, sql, -1, 0, &statementHandle, nil)
        guard code == SQLITE_OK, let statementHandle else {
            throw error(code: code, sql: sql)
        }
        let counter = counter(for: sql)
        counter.prepared += 1
        return Statement(connection: self, handle: statementHandle, sql: sql, counter: counter)
    }

    /// A prepared statement for `sql`, prepared once per connection and reused (reset, bindings cleared).
    public func cachedStatement(_ sql: String) throws -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            statement.clearBindings()
            return statement
        }
        let statement = try prepare(sql)
        statementCache[sql] = statement
        return statement
    }

    /// Runs one or more `;`-separated statements without arguments.
    public func execute(_ sql: String) throws {
        var remaining = Connection.trimmed(sql)
        while !remaining.isEmpty {
            var statementHandle: OpaquePointer?
            var consumed = 0
            let code = remaining.withCString { start -> Int32 in
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v3(liveHandle, start, -1, 0, &statementHandle, &tail)
                if let tail { consumed = start.distance(to: tail) }
                return code
            }
            // On a syntax error SQLite's tail stops at the bad token: report the rest of the script.
            guard code == SQLITE_OK else { throw error(code: code, sql: remaining) }
            var text = Connection.trimmed(String(remaining.utf8.prefix(consumed)) ?? remaining)
            if text.hasSuffix(";") { text.removeLast() }
            remaining = String(remaining.utf8.dropFirst(consumed)).map(Connection.trimmed) ?? ""
            guard let statementHandle else { continue } // comment or whitespace only
            let counter = counter(for: text)
            counter.prepared += 1
            let statement = Statement(connection: self, handle: statementHandle, sql: counter.sql, counter: counter)
            try statement.execute()
        }
    }

    /// `text` without leading and trailing white space (Unicode's White_Space, line breaks
    /// included). Not Foundation's `trimmingCharacters(in:)`, which goes through `NSString` and
    /// was most of opening a connection (perf).
    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        if first == scalars.startIndex, last == scalars.index(before: scalars.endIndex) { return text }
        return String(scalars[first...last])
    }

    /// Reads a pragma's value, or sets it and returns what SQLite answers.
    @discardableResult
    public func pragma(_ name: String, set value: String? = nil) throws -> SQLiteValue {
        let sql = value.map { "PRAGMA \(name)=\($0)" } ?? "PRAGMA \(name)"
        let statement = try prepare(sql)
        return try statement.step() ? statement.value(at: 0) : .null
    }

    /// The rowid of the last successful INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(liveHandle) }
    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(liveHandle)) }
    /// True while a transaction is open.
    public var isInTransaction: Bool { sqlite3_get_autocommit(liveHandle) == 0 }

    /// The size of this database's `-wal` file in bytes (0 when there is none).
    public var walFileSize: Int64 {
        var info = stat()
        guard stat(path + "-wal", &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }

    /// When the `-wal` is larger than `bytes` (a large commit, or readers that kept the log from
    /// restarting: every reader on a snapshot that uses the log stops a writer from starting it
    /// again, and followers read after every commit), checkpoints it whole and truncates it to zero
    /// bytes. It waits up to `wait` for the readers under way to finish (readers that start
    /// meanwhile read the database file, the log being all copied back); if they do not, it is a
    /// passive checkpoint, and a later call tries again. Returns whether the file was truncated.
    ///
    /// Readers that keep refusing do not slow every commit by `wait`: after a refused attempt the
    /// next 1, 2, 4, … (at most 64) calls skip it (found under ThreadSanitizer, where followers lag
    /// by seconds: a writer waited 100 ms at every commit and made 16 commits a second).
    @discardableResult
    public func truncateWAL(ifLargerThan bytes: Int64, wait: Duration = .milliseconds(100)) -> Bool {
        guard path != ":memory:", !configuration.readOnly, !isInTransaction, walFileSize > bytes else {
            truncationBackoff = 0
            truncationSkips = 0
            return false
        }
        if truncationSkips > 0 {
            truncationSkips -= 1
            return false
        }
        let handle = liveHandle
        sqlite3_busy_timeout(handle, Int32(clamping: wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000))
        defer {
            let milliseconds = configuration.busyTimeout.components.seconds * 1000
                + configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000
            sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
        }
        var logFrames: Int32 = 0, checkpointed: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &logFrames, &checkpointed)
        if code != SQLITE_OK {
            _ = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &checkpointed)
            truncationBackoff = min(max(1, truncationBackoff * 2), 64)
            truncationSkips = truncationBackoff
            return false
        }
        truncationBackoff = 0
        return true
    }

    /// Resets every statement of this connection that is still stepping (a `SELECT` read part
    /// way), and rolls back a transaction left open, so that the connection holds no read
    /// snapshot: its next statement reads the last committed state. Returns how many
    /// statements were reset. What a pool of read connections calls before a connection goes
    /// back, so that no later read is served from an earlier snapshot.
    @discardableResult
    public func endReads() -> Int {
        var reset = 0
        var statement = sqlite3_next_stmt(liveHandle, nil)
        while let current = statement {
            if sqlite3_stmt_busy(current) != 0 {
                sqlite3_reset(current)
                reset += 1
            }
            statement = sqlite3_next_stmt(liveHandle, current)
        }
        if isInTransaction { _ = sqlite3_exec(liveHandle, "ROLLBACK", nil, nil, nil) }
        return reset
    }

    // MARK: Statistics

    private func counter(for sql: String) -> StatementCounter {
        if let counter = counters[sql] { return counter }
        let counter = StatementCounter(sql: sql)
        counters[sql] = counter
        return counter
    }

    /// How many times each SQL text was prepared and executed, and how many rows it returned,
    /// since open or the last reset.
    public var statistics: StatementStatistics {
        var result = StatementStatistics()
        for (sql, counter) in counters where counter.prepared > 0 || counter.executed > 0 || counter.rows > 0 {
            result.prepared[sql] = counter.prepared
            result.executed[sql] = counter.executed
            result.rowsRead[sql] = counter.rows
        }
        return result
    }

    /// Pages this connection has read from the file (its page cache's misses,
    /// `SQLITE_DBSTATUS_CACHE_MISS`) since open or the last call with `reset`.
    public func pageReads(reset: Bool = false) -> Int {
        var current: Int32 = 0, highwater: Int32 = 0
        sqlite3_db_status(liveHandle, SQLITE_DBSTATUS_CACHE_MISS, &current, &highwater, reset ? 1 : 0)
        return Int(current)
    }

    /// Sets every counter back to zero.
    public func resetStatistics() {
        for counter in counters.values { counter.prepared = 0; counter.executed = 0; counter.rows = 0 }
    }

    func error(code: Int32, sql: String?, arguments: [SQLiteValue] = []) -> SQLiteError {
        let extended = sqlite3_extended_errcode(liveHandle)
        var error = SQLiteError(
            code: extended == 0 ? ResultCode(rawValue: code) : ResultCode(rawValue: extended),
            message: String(cString: sqlite3_errmsg(liveHandle)),
            sql: sql, arguments: arguments,
            argumentsArePublic: configuration.publicStatementArguments)
        if error.code.rawValue == 10 | (32 << 8), let page = pageChecksumState.lastFaultPage {
            error.corruptPage = page
            error.message = "page \(page) of \(path) fails its checksum"
        }
        return error
    }
}

/// Per-SQL counters shared by every statement prepared from the same text.
final class StatementCounter {
    let sql: String
    var prepared = 0
    var executed = 0
    /// Rows returned (steps that produced a row). Bumped once per row on the fetch path, so
    /// without the dynamic exclusivity check (only the connection's owner touches it).
    @exclusivity(unchecked) var rows = 0
    init(sql: String) { self.sql = sql }
}

/// Counts of statements prepared and executed, and of the rows they returned, keyed by SQL text:
/// what tests assert on. (`Strata`'s `StoreCoordinator.statistics` wraps it in a `StoreStatistics`
/// that also counts by statement kind and entity.)
///
/// ```swift
/// db.resetStatistics()
/// try context.save()
/// #expect(db.statistics.executions(startingWith: "BEGIN") == 1)
/// ```
public struct StatementStatistics: Sendable, Equatable {
    public var prepared: [String: Int] = [:]
    public var executed: [String: Int] = [:]
    /// Rows each SQL text returned: every step that produced a row (a `SELECT`'s rows, a
    /// `RETURNING` clause's, a `PRAGMA`'s answer). Rows SQLite only scanned are not counted.
    public var rowsRead: [String: Int] = [:]
    public init() {}

    public var totalPrepared: Int { prepared.values.reduce(0, +) }
    public var totalExecuted: Int { executed.values.reduce(0, +) }
    public var totalRowsRead: Int { rowsRead.values.reduce(0, +) }

    /// Executions of statements whose SQL starts with `prefix` (case-insensitive).
    public func executions(startingWith prefix: String) -> Int {
        executed.filter { $0.key.uppercased().hasPrefix(prefix.uppercased()) }.values.reduce(0, +)
    }
    /// Preparations of statements whose SQL starts with `prefix` (case-insensitive).
    public func preparations(startingWith prefix: String) -> Int {
        prepared.filter { $0.key.uppercased().hasPrefix(prefix.uppercased()) }.values.reduce(0, +)
    }
}
