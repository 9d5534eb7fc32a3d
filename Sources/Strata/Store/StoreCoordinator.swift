public import Foundation
internal import StrataSQLite

/// The store coordinator: owns the SQLite connection of one store file and is the only part of
/// Strata that reads or writes it.
///
/// Opening checks that the file is a Strata store made by the same model (by version hash) before
/// anything writes to it; a new or empty file gets the schema and `strata_meta`. Commits go through
/// one writer connection, serialised by a lock; reads go through a pool of read-only connections
/// (a WAL store on a file) and never wait for a commit, so contexts on different queues may share
/// one coordinator. With ``StoreOptions/readOnly`` there is no writer: see <doc:ReadOnlyStores>.
///
/// ```swift
/// let coordinator = try StoreCoordinator(model: model, url: URL(filePath: "/tmp/goods.sqlite"))
/// let context = coordinator.newContext()
/// ```
//
// What it holds: the file's identity (`model`, `url`, `uuid`), the writer connection and its lock,
// the reader pool, the key reservations, and one object per feature, each with its own state and
// lock (`contexts`, `caches`, `external`). Lock order: `external.lock`, then `lock`, then any
// `Locked` box; never the other way round.
//
// Its mutable properties (`connection`'s use, `uuid`, `refreshModelJSON`, `commitsSincePrune`) are
// touched only inside `lock.withLock` (here and in StoreCoordinator+Commit.swift, through
// `withConnection`); everything else is immutable after init or a lock of its own.
// @unchecked Sendable because every mutable property is guarded by `lock`, as listed above.
public final class StoreCoordinator: @unchecked Sendable {
    /// The store format this Strata writes and reads.
    public static let formatVersion = 1

    // MARK: The file's identity

    public let model: Model
    /// The store file, or `nil` for an in-memory store.
    public let url: URL?
    /// Whether the store was opened with ``StoreOptions/readOnly``: every read works, and every
    /// save, batch request and replacement throws ``StoreError/readOnly(path:reason:)``.
    public let isReadOnly: Bool
    /// Random at creation; a new one when the store is replaced (``replaceStore(withContentsOf:)``).
    public var storeUUID: UUID { lock.withLock { uuid } }
    /// Guarded by `lock` (read inside a commit, which holds it).
    var uuid: UUID
    /// Set when another process migrated the store to another model: every read and write throws it.
    let identityProblem = Locked<StoreError?>(nil)
    /// ``StoreOptions/history``.
    let historyOptions: HistoryOptions
    /// 16 random bytes naming this coordinator in the history's `writer` column: the commits
    /// it reads back there are its own (already merged into its contexts).
    let writerID = StoreCoordinator.randomNonce()

    // MARK: The writer, the readers, the keys

    private let lock = NSLock()
    private let connection: Connection
    /// This coordinator's count in ``OpenStores`` (a file store), left at ``close()`` or when the
    /// coordinator is released, or its init threw.
    private let registration: OpenStores.Registration?
    /// The read-only connections every read takes (a WAL store on a file; `nil` for an
    /// in-memory store or another journal mode, whose reads share the writer connection).
    let readers: ReaderPool?
    /// Per entity (by `EntityInfo.ordinal`): the keys reserved and not yet handed out. Its own
    /// lock, so that an insert served from a reserved block never waits for a commit (which
    /// holds `lock` for its whole transaction); taken inside `lock`, never the other way round.
    let reservedKeys = Locked<[(next: Int64, end: Int64, block: Int64)]>([])
    /// Whether the next commit rewrites the model's JSON in `strata_meta` (guarded by `lock`).
    var refreshModelJSON: Bool
    /// Commits since the history was last pruned (guarded by `lock`).
    var commitsSincePrune = 0
    /// A test's clock for the history's records (seconds since 1970); `nil`: the system's.
    let historyClock = Locked<Double?>(nil)
    /// The author batch requests record in the history (a context's save records the
    /// context's ``ManagedObjectContext/transactionAuthor``).
    public var transactionAuthor: String? {
        get { batchAuthor.withLock { $0 } }
        set { batchAuthor.withLock { $0 = newValue } }
    }
    private let batchAuthor = Locked<String?>(nil)

    // MARK: One object per feature

    /// The contexts made on this coordinator (see ``ContextRegistry``).
    let contexts = ContextRegistry()
    /// The section caches and what keeps them current (see ``SectionCacheService``).
    let caches: SectionCacheService
    /// What this coordinator knows of other connections' commits, and its follower (see
    /// ``ExternalChanges``).
    let external = ExternalChanges()
    /// The section caches of this store: where results controllers keep them, and what
    /// `deleteCache(named:)` removes. `nil` for an in-memory store.
    public var sectionCaches: SectionCacheStore? { caches.store }

    /// Takes the identity of the store as another connection left it (replaced, restored).
    func adoptIdentity(of metadata: StoreMetadata) {
        lock.withLock { uuid = metadata.storeUUID }
    }

    /// Opens the store at `url`, creating it when the file does not exist or is empty.
    ///
    /// - Throws: ``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)`` when the
    ///   store was made by another model (the file is not touched), ``StoreError/notADatabase(path:)``,
    ///   ``StoreError/notAStrataStore(path:)``, ``StoreError/unsupportedFormat(path:found:supported:)``.
    public init(model: Model, url: URL, options: StoreOptions = StoreOptions()) throws {
        self.model = model
        self.url = url
        caches = SectionCacheService(storeURL: url, directory: options.sectionCacheDirectory,
                                     incremental: options.incrementalCacheRefresh, readOnly: options.readOnly,
                                     changeRecordLimit: options.cacheChangeRecordLimit)
        let path = url.path
        var configuration = Connection.Configuration()
        configuration.synchronous = options.synchronous
        configuration.journalMode = options.journalMode
        configuration.busyTimeout = options.busyTimeout
        configuration.cacheSizeKiB = options.cacheSizeKiB
        configuration.journalSizeLimit = options.walSizeLimit
        configuration.publicStatementArguments = options.publicStatementArguments
        configuration.pageChecksums = options.pageChecksums
        isReadOnly = options.readOnly
        historyOptions = options.history
        // A `-wal` left by a process that did not close the store is scanned before SQLite's
        // recovery reads it: damage that recovery would take for a torn tail is refused.
        registration = try OpenStores.enter(path) { try WALScanner.checkBeforeOpening(path, accepts: options.acceptsWALLoss) }
        if options.readOnly {
            (connection, uuid) = try StoreCoordinator.openReadOnly(path: path, model: model, options: options, configuration: configuration)
            refreshModelJSON = false
            readers = ReaderPool(path: path, configuration: connection.configuration)
            try noteStoreState()
            startFollowing()
            return
        }
        // An existing file is opened once, and checked (perhaps migrated) on the connection kept:
        // `opened` is that connection, unless a mapping model rebuilt the file beside it.
        let existing: ExistingStore?, opened: Connection?
        if let size = FileSystemPath(path).fileSize, size > 0 {
            (existing, opened) = try StoreCoordinator.openExisting(path: path, model: model, configuration: configuration, options: options)
        } else {
            (existing, opened) = (nil, nil)
        }
        do {
            connection = try opened ?? Connection(path: path, configuration: configuration)
            try StringMatching.register(on: connection)
            if let existing {
                uuid = existing.uuid
                refreshModelJSON = existing.modelJSON != String(decoding: model.jsonData(), as: UTF8.self)
                try StoreCoordinator.upgradeEntityTable(connection)
                try HistoryLog.createTables(connection)
            } else {
                uuid = UUID()
                refreshModelJSON = false
                try StoreCoordinator.create(connection, model: model, uuid: uuid)
            }
        } catch let error as SQLiteError {
            throw StoreCoordinator.storeError(error, openingForWritesAt: path)
        }
        readers = options.journalMode == .wal ? ReaderPool(path: path, configuration: connection.configuration) : nil
        try noteStoreState()
        startFollowing()
    }

    /// Opens a private in-memory store (for tests and scratch work).
    public init(inMemoryWith model: Model, options: StoreOptions = StoreOptions()) throws {
        self.model = model
        url = nil
        isReadOnly = false
        caches = SectionCacheService(storeURL: nil, directory: nil, incremental: options.incrementalCacheRefresh, readOnly: false,
                                     changeRecordLimit: options.cacheChangeRecordLimit)
        historyOptions = options.history
        uuid = UUID()
        refreshModelJSON = false
        readers = nil
        registration = nil
        var configuration = Connection.Configuration()
        configuration.publicStatementArguments = options.publicStatementArguments
        do {
            connection = try Connection.inMemory(configuration: configuration)
            try StringMatching.register(on: connection)
            try StoreCoordinator.create(connection, model: model, uuid: uuid)
        } catch let error as SQLiteError {
            throw StoreError(error, path: ":memory:")
        }
    }

    /// Finds commits made through other connections since the last look (another process,
    /// another coordinator on the same file), and tells every context of this coordinator which
    /// entities they touched: unchanged objects of those entities become faults (read again on
    /// next access) and each context posts an objects-did-change with
    /// ``ObjectChanges/entitiesChangedElsewhere``, on its own queue. A results controller re-runs
    /// its request on it and reports the exact change set.
    ///
    /// Call it when the app may have missed some (on activation, on a timer, after a helper
    /// process ran). A coordinator that follows other connections
    /// (``HistoryOptions/followsOtherConnections``) needs no call: it merges their rows from the
    /// store's history as they land, and this call then finds nothing left. It costs one read of
    /// the store's generation when nothing happened. Returns the entities changed elsewhere.
    @discardableResult
    public func processExternalChanges() throws -> Set<String> {
        try catchUpWithExternalChanges(.tellEntities)
    }

    /// Starts the bookkeeping of ``processExternalChanges()`` (at open).
    private func noteStoreState() throws {
        let metadata = try withConnection { db in try StoreCoordinator.readMetadata(db) }
        external.state.withLock { state in
            state.generation = metadata.generation
            state.entityGenerations = metadata.entityGenerations
            state.nonce = metadata.nonce
            state.statistics.generation = metadata.generation
        }
    }

    /// Replaces the store's whole content with the Strata store at `source` (a backup, say), in
    /// one step, and gives the store a new UUID and nonce: anything stamped with the old identity
    /// (URIs, section caches) no longer matches.
    ///
    /// Every context of this coordinator drops all its objects, pending changes included, and
    /// posts ``ContextEvent/reload(_:)`` with ``ReloadReason/storeReplaced`` (on its own queue,
    /// asynchronously). The source must be a Strata store of this model; it is read, not changed.
    ///
    /// - Throws: ``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)``,
    ///   ``StoreError/notAStrataStore(path:)``, ``StoreError/notADatabase(path:)``, ``StoreError/sqlite(_:)``,
    ///   ``StoreError/pageChecksumsDiffer(path:source:storeHasChecksums:)`` (a backup made with the
    ///   other ``StoreOptions/pageChecksums`` setting). When it throws, this store is unchanged.
    public func replaceStore(withContentsOf source: URL) throws {
        try refuseWriteIfReadOnly("a replacement")
        guard try StoreCoordinator.probe(path: source.path, model: model) != nil else {
            throw StoreError.notAStrataStore(path: source.path)
        }
        if let url, url.standardizedFileURL.resolvingSymlinksInPath() == source.standardizedFileURL.resolvingSymlinksInPath() {
            preconditionFailure("replaceStore(withContentsOf:) was given the store's own file: pass a copy.")
        }
        var configuration = Connection.Configuration()
        configuration.readOnly = true
        let newUUID = UUID()
        // The follower's lock first (as a catch-up takes it): no catch-up reads between the
        // restore and the new identity.
        try external.lock.withLock { try withConnection { db in
            let reader = try Connection(path: source.path, configuration: configuration)
            defer { reader.close() }
            // The backup API copies pages with their reserved bytes: a checksummed store must get
            // checksummed pages, and the other way round (else pages would be checksummed by
            // half, or content overwritten by checksums).
            try reader.prepare("SELECT count(*) FROM sqlite_master").forEachRow { _ in }
            let storeHasChecksums = db.pageChecksumState.checksummed
            guard reader.pageChecksumState.checksummed == storeHasChecksums else {
                throw StoreError.pageChecksumsDiffer(path: db.path, source: source.path, storeHasChecksums: storeHasChecksums)
            }
            try db.restore(from: reader)
            try StoreCoordinator.upgradeEntityTable(db)
            try HistoryLog.createTables(db)
            try db.cachedStatement("UPDATE strata_meta SET store_uuid = ?, nonce = ? WHERE id = 1")
                .execute(.text(newUUID.uuidString), .blob(StoreCoordinator.randomNonce()))
            reservedKeys.withLock { $0 = [] }
            uuid = newUUID
            let metadata = try StoreCoordinator.readMetadata(db)
            external.state.withLock { state in
                state.generation = metadata.generation
                state.entityGenerations = metadata.entityGenerations
                state.nonce = metadata.nonce
            }
        } }
        for context in contexts.all() {
            context.enqueue { context.storeWasReplaced() }
        }
    }

    /// A new root context that saves straight to this store.
    public func newContext(name: String? = nil) -> ManagedObjectContext {
        ManagedObjectContext(coordinator: self, parent: nil, name: name)
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { lock.withLock { connection.isClosed } }

    /// Closes the connection, after waiting for the section cache writes queued so far. Using the
    /// coordinator afterwards is a programmer error. (A coordinator that is released, or a
    /// process that exits normally, also waits for them: closing is not needed to keep a cache.)
    public func close() {
        // A catch-up under way finishes first; none starts after.
        external.stop()
        caches.close()
        readers?.close()
        lock.withLock { connection.close() }
        registration?.leave()
    }

    /// Rebuilds the database file (`VACUUM`). Object IDs are primary keys declared
    /// `INTEGER PRIMARY KEY`, which `VACUUM` keeps, so every ID and URI stays valid.
    public func vacuum() throws { try withConnection { try $0.execute("VACUUM") } }

    // MARK: Diagnostics

    /// The SQL this coordinator ran since it opened or since ``resetStatistics()``: per SQL text,
    /// how often it was prepared and executed and the rows it returned, by statement kind and by
    /// entity (Core Data's SQLDebug, countable). See ``StoreStatistics``.
    /// The writer connection's counters and the readers', added up.
    public var statistics: StoreStatistics {
        var counters = lock.withLock { connection.statistics }
        for reader in readers?.statistics ?? [] {
            counters.prepared.merge(reader.prepared, uniquingKeysWith: +)
            counters.executed.merge(reader.executed, uniquingKeysWith: +)
            counters.rowsRead.merge(reader.rowsRead, uniquingKeysWith: +)
        }
        return StoreStatistics(counters, tables: StoreStatistics.tables(of: model.schema))
    }
    /// Sets every counter of ``statistics`` back to zero.
    public func resetStatistics() {
        lock.withLock { connection.resetStatistics() }
        readers?.resetStatistics()
    }
    /// Called with every statement's SQL as it starts, on the writer and on every reader.
    public func setTrace(_ trace: (@Sendable (String) -> Void)?) {
        lock.withLock { connection.trace = trace }
        readers?.setTrace(trace)
    }

    /// Reads the store's metadata in one read transaction.
    public func metadata() throws -> StoreMetadata {
        try withReader { db in
            try db.transaction(.deferred) { try StoreCoordinator.readMetadata(db) }
        }
    }

    /// Runs a read on a reader connection (see ``ReaderPool``), or on the writer connection for
    /// a store without readers; SQLite errors become ``StoreError``. The read never waits for a
    /// commit in progress: it reads the last committed state.
    func withReader<T>(_ body: (Connection) throws -> T) throws -> T {
        guard let readers else { return try withConnection(body) }
        if let problem = identityProblem.withLock({ $0 }) { throw problem }
        do {
            return try readers.withReader(body)
        } catch let error as SQLiteError {
            throw StoreError(error, path: readers.path)
        } catch is ReaderPool.Closed {
            throw StoreError.closed(path: readers.path)
        }
    }

    /// Whether the writer connection is in use right now (a commit, a batch request, a key
    /// reservation): the follower then looks again later rather than read beside it.
    func writerIsBusy() -> Bool {
        guard lock.try() else { return true }
        lock.unlock()
        return false
    }

    /// Runs SQL access under the coordinator's lock, turning SQLite errors into ``StoreError/sqlite(_:)``.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        try lock.withLock {
            // A read or write after close() throws (queued work, another queue's late fetch): it
            // never reaches a closed connection.
            if connection.isClosed { throw StoreError.closed(path: connection.path) }
            if let problem = identityProblem.withLock({ $0 }) { throw problem }
            do {
                let result = try body(connection)
                // The -wal stays bounded: a commit that left it past the limit (a large import,
                // readers that kept it from restarting) checkpoints and truncates it, when no
                // reader holds an older snapshot (never waiting for one).
                if let limit = connection.configuration.journalSizeLimit { connection.truncateWAL(ifLargerThan: 2 * limit) }
                return result
            } catch let error as SQLiteError {
                throw StoreError(error, path: connection.path, busyTimeout: connection.configuration.busyTimeout)
            }
        }
    }

    // MARK: URIs

    /// The URI of an object of this store: `strata://<store-uuid>/<Entity>/<pk>`.
    public func uri(for id: ObjectID) -> URL { id.uriRepresentation(storeUUID: storeUUID) }

    /// The object ID a URI names.
    /// - Throws: ``StoreError/uriOfAnotherStore(uri:storeUUID:)``, ``StoreError/malformedURI(_:)``,
    ///   ``ObjectError/unknownEntity(_:)``.
    public func objectID(forURI uri: URL) throws -> ObjectID {
        let parts = uri.path.split(separator: "/").map(String.init)
        guard uri.scheme == "strata", let host = uri.host, let uuid = UUID(uuidString: host),
              parts.count == 2, let key = Int64(parts[1]), key > 0 else {
            throw StoreError.malformedURI(uri.absoluteString)
        }
        guard uuid == storeUUID else { throw StoreError.uriOfAnotherStore(uri: uri.absoluteString, storeUUID: storeUUID) }
        guard model.schema.infos[parts[0]] != nil else { throw ObjectError.unknownEntity(parts[0]) }
        return ObjectID(entityName: parts[0], primaryKey: key)
    }

    // MARK: Primary keys

    /// Reserves a permanent primary key for a new object of `entity`.
    ///
    /// Keys come from per-entity blocks reserved in `strata_entity.next_pk` by a small write
    /// transaction (blocks grow from 64 to 65,536 keys as an entity keeps inserting). That write
    /// changes no row a fetch can see, so it does not bump the generation. Keys of a block left
    /// unused when the process ends are skipped, never reused.
    ///
    /// Keys are taken within the key block of `next_pk` (blocks of 2^40 keys, see
    /// ``keyBlockBits``): a store synced with others starts each entity's `next_pk` in its own
    /// replica's block, and rows pulled from other replicas (keys in their blocks) never move it.
    /// A store that never syncs stays in block 0, where this is the plain `max(key) + 1`.
    func reservePrimaryKey(for info: EntityInfo) throws -> Int64 {
        let count = model.schema.infos.count
        /// The next key of the entity's block, or `nil` when the block is used up.
        func take() -> Int64? {
            reservedKeys.withLock { blocks in
                if blocks.isEmpty { blocks = Array(repeating: (0, 0, 32), count: count) }
                let range = blocks[info.ordinal]
                guard range.next < range.end else { return nil }
                blocks[info.ordinal].next += 1
                return range.next
            }
        }
        if let key = take() { return key }
        return try withConnection { db in
            // Another thread may have reserved a block while this one waited for the connection.
            if let key = take() { return key }
            let block = min(reservedKeys.withLock { $0[info.ordinal].block } * 2, 65_536)
            let entity = info.name
            // A read-only store: keys for objects that can never be saved, past every stored
            // one, reserved in memory only (an insert works; its save is refused).
            let first: Int64 = try db.transaction(isReadOnly ? .deferred : .immediate) {
                let select = try db.cachedStatement(StoreCoordinator.firstFreeKeySQL(info))
                try select.bind(entity, at: 1)
                guard try select.step() else { throw ObjectError.unknownEntity(entity) }
                let first = select.int64(at: 0)
                select.reset()
                if isReadOnly { return first }
                let update = try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE name = ?")
                try update.execute(.integer(first + block), .text(entity))
                return first
            }
            reservedKeys.withLock { $0[info.ordinal] = (first + 1, isReadOnly ? Int64.max : first + block, block) }
            return first
        }
    }
}
