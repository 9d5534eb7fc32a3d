public import Foundation
public import StrataSQLite

/// What `strata_meta` records about a store, read in one snapshot.
public struct StoreMetadata: Sendable, Equatable {
    /// Random at creation. A store file replaced by another gets another UUID.
    public var storeUUID: UUID
    /// The store file format version (``StoreCoordinator/formatVersion``).
    public var formatVersion: Int
    /// Bumped by exactly 1 in the same transaction as every data write.
    public var generation: Int64
    /// 16 random bytes set by every commit, together with the generation: a commit lost to power
    /// failure followed by another commit reuses the generation but not the nonce.
    public var nonce: Data
    /// Per entity: the store generation of the last commit that wrote the entity's rows
    /// (0 until its first write). It changes only when that entity is touched.
    public var entityGenerations: [String: Int64]
    /// Per entity: the nonce of the commit that last wrote its rows (empty before its first
    /// write). With the generation it names that commit even after a lost commit's generation was
    /// reused, which is what a section cache checks.
    public var entityNonces: [String: Data] = [:]
    public var modelVersion: String
    public var modelHash: String
}

/// What one commit wrote.
public struct CommitResult: Sendable, Equatable {
    public var generation: Int64
    public var nonce: Data
    /// The entities whose rows the commit wrote.
    public var touchedEntities: Set<String>
}

/// How a store is opened.
public struct StoreOptions: Sendable {
    /// SQLite `synchronous` (default NORMAL: WAL commits survive process crashes).
    public var synchronous: StrataSQLiteSynchronous = .normal
    public var busyTimeout: Duration = .seconds(5)
    /// Page cache size for the store connection in KiB; `nil` keeps SQLite's 2 MiB.
    public var cacheSizeKiB: Int? = nil
    /// The size in bytes the `-wal` is truncated to when SQLite restarts it (SQLite's
    /// `journal_size_limit`; default 16 MiB): a large import's `-wal` does not keep its peak size.
    /// A commit that leaves the `-wal` past twice this checkpoints and truncates it, when no
    /// reader holds an older snapshot. `nil`: no limit (SQLite's default).
    public var walSizeLimit: Int64? = 16 << 20
    /// Whether a store whose write-ahead log is damaged opens anyway (default: refuse with
    /// ``StoreError/walDamaged(_:)``). On: the transactions the damage describes are dropped, as
    /// SQLite's recovery drops them, and the damaged log is first copied beside the store as
    /// `<store>-wal.damaged-<seconds since 1970>` for inspection. See <doc:CrashGuarantees>.
    public var acceptsWALLoss = false
    /// SQLite's journal mode (default WAL; `.delete` is the rollback journal).
    public var journalMode: StrataSQLiteJournalMode = .wal
    /// Whether a store made by another model version may be migrated when opened (default: refuse).
    public var migration: MigrationMode = .none
    /// Called on the opening thread as a migration proceeds: step, objects done and total.
    public var migrationProgress: (@Sendable (MigrationProgress) -> Void)? = nil
    /// Where section caches live; `nil`: beside the store, in `<store file name>.caches`.
    public var sectionCacheDirectory: URL? = nil
    /// Whether a section cache is brought up to date after this coordinator's commits from the
    /// keys they wrote (default on), rather than by re-running its request: a one-row commit then
    /// reads that row and a few more, not the list. Any commit it did not see (another process's,
    /// a batch request's) makes the next refresh a full one. Off: every refresh re-runs the request
    /// (what benchmarks compare against).
    public var incrementalCacheRefresh = true
    /// Change records a section cache file may hold before a refresh compacts them into its body
    /// (test API: the crash suite lowers it so that compaction is reached in a few commits).
    @_spi(Testing) public var cacheChangeRecordLimit = 64
    /// Let SQL errors print statement arguments (off: arguments are user data).
    public var publicStatementArguments = false
    /// Whether a store this coordinator creates gets a checksum on every page (default on):
    /// a page whose bytes changed on disk is ``StoreError/corruptPage(path:page:)``, never data.
    /// An existing store keeps what it has; ``StoreCoordinator/addPageChecksums(toStoreAt:)``
    /// adds them to one made without.
    public var pageChecksums = true
    /// Open the store for reading only (Core Data's `NSReadOnlyPersistentStoreOption`): no writer
    /// connection, nothing created or written, not even a `-wal` where the store's folder can't
    /// be written (the file is then read `immutable`); fetches, faults and results controllers
    /// work as usual, and a context's `save()` with changes throws
    /// ``StoreError/readOnly(path:reason:)``, as do batch requests. The store must exist and be
    /// of this model (a migration writes, so it is refused). See <doc:ReadOnlyStores>.
    public var readOnly = false
    /// Whether this coordinator's commits record history, how long it is kept, and whether the
    /// coordinator follows other connections' commits as they land (all on by default; see
    /// ``HistoryOptions`` and <doc:HistoryAndOtherProcesses>).
    public var history = HistoryOptions()
    public init() {}
}

public typealias StrataSQLiteJournalMode = StrataSQLite.Connection.Configuration.JournalMode
public typealias StrataSQLiteSynchronous = StrataSQLite.Connection.Configuration.Synchronous
