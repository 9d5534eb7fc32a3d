public import Foundation
public import StrataSQLite

/// The store coordinator: owns the SQLite connection of one store file and is the only part of
/// Strata that reads or writes it.
///
/// Opening checks that the file is a Strata store made by the same model (by version hash) before
/// anything writes to it; a new or empty file gets the schema and `strata_meta`. All access to the
/// connection is serialised by a lock, so contexts on different queues may share one coordinator.
///
/// ```swift
/// let coordinator = try StoreCoordinator(model: model, url: URL(filePath: "/tmp/goods.sqlite"))
/// let context = coordinator.newContext()
/// ```
// @unchecked because: `connection`, `reservedKeys` and `refreshModelJSON` are touched only
// inside `lock.withLock`; everything else is immutable after init.
public final class StoreCoordinator: @unchecked Sendable {
    /// The store format this Strata writes and reads.
    public static let formatVersion = 1

    public let model: Model
    /// The store file, or `nil` for an in-memory store.
    public let url: URL?
    /// Random at creation; a new one when the store is replaced (``replaceStore(withContentsOf:)``).
    public var storeUUID: UUID { lock.withLock { uuid } }
    private var uuid: UUID

    private let lock = NSLock()
    /// The section caches of this store: where results controllers keep them, and what
    /// `deleteCache(named:)` removes. `nil` for an in-memory store.
    public let sectionCaches: SectionCacheStore?
    /// Cache files are written here, in order, off the callers' queues.
    let cacheQueue = DispatchQueue(label: "strata.section-cache", qos: .utility)
    /// Whether temporary files a crash left in the cache folder were removed (once per coordinator).
    let cachesPrepared = Locked(false)
    /// Caches to refresh after commits, by controller.
    let cacheRefreshers = Locked<[ObjectIdentifier: CacheRefresher]>([:])
    /// The read-only connection cache refreshes read through (used on `cacheQueue` only).
    let refreshConnection = Locked<Connection?>(nil)
    private let connection: Connection
    /// Per entity (by `EntityInfo.ordinal`): the keys reserved and not yet handed out.
    private var reservedKeys: [(next: Int64, end: Int64, block: Int64)] = []
    private var refreshModelJSON: Bool

    /// Opens the store at `url`, creating it when the file does not exist or is empty.
    ///
    /// - Throws: ``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)`` when the
    ///   store was made by another model (the file is not touched), ``StoreError/notADatabase(path:)``,
    ///   ``StoreError/notAStrataStore(path:)``, ``StoreError/unsupportedFormat(path:found:supported:)``.
    public init(model: Model, url: URL, options: StoreOptions = StoreOptions()) throws {
        self.model = model
        self.url = url
        sectionCaches = SectionCacheStore(storeURL: url, directory: options.sectionCacheDirectory)
        let path = url.path
        var configuration = Connection.Configuration()
        configuration.synchronous = options.synchronous
        configuration.journalMode = options.journalMode
        configuration.busyTimeout = options.busyTimeout
        configuration.cacheSizeKiB = options.cacheSizeKiB
        configuration.publicStatementArguments = options.publicStatementArguments
        let existing: ExistingStore?
        do {
            existing = try StoreCoordinator.probe(path: path, model: model)
        } catch StoreError.modelMismatch(let storePath, let storeVersion, let storeHash, let modelVersion, let modelHash) {
            guard options.migration.allowsMigration else {
                throw StoreError.modelMismatch(path: storePath, storeVersion: storeVersion, storeHash: storeHash,
                                               modelVersion: modelVersion, modelHash: modelHash)
            }
            try StoreCoordinator.migrateIfNeeded(path: path, model: model, mode: options.migration, configuration: configuration,
                                                 progress: options.migrationProgress)
            existing = try StoreCoordinator.probe(path: path, model: model)
        }
        do {
            connection = try Connection(path: path, configuration: configuration)
            try StringMatching.register(on: connection)
            if let existing {
                uuid = existing.uuid
                refreshModelJSON = existing.modelJSON != String(decoding: model.jsonData(), as: UTF8.self)
                try StoreCoordinator.upgradeEntityTable(connection)
            } else {
                uuid = UUID()
                refreshModelJSON = false
                try StoreCoordinator.create(connection, model: model, uuid: uuid)
            }
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error)
        }
        try noteStoreState()
    }

    /// Opens a private in-memory store (for tests and scratch work).
    public init(inMemoryWith model: Model, options: StoreOptions = StoreOptions()) throws {
        self.model = model
        url = nil
        sectionCaches = nil
        uuid = UUID()
        refreshModelJSON = false
        var configuration = Connection.Configuration()
        configuration.publicStatementArguments = options.publicStatementArguments
        do {
            connection = try Connection.inMemory(configuration: configuration)
            try StringMatching.register(on: connection)
            try StoreCoordinator.create(connection, model: model, uuid: uuid)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error)
        }
    }

    /// What this coordinator last saw of the file: SQLite's `data_version` (changed by other
    /// connections' commits only) and the per-entity generations.
    private var knownDataVersion: SQLiteValue = .null
    private var knownEntityGenerations: [String: Int64] = [:]

    /// Finds commits made through other connections since the last look (another process,
    /// another coordinator on the same file), and tells every context of this coordinator which
    /// entities they touched: unchanged objects of those entities become faults (read again on
    /// next access) and each context posts an objects-did-change with
    /// ``ObjectChanges/entitiesChangedElsewhere``, on its own queue. A results controller re-runs
    /// its request on it and reports the exact change set.
    ///
    /// SQLite does not push such news: call this when the app may have missed some (on
    /// activation, on a timer, after a helper process ran). It costs one `PRAGMA data_version`
    /// when nothing happened. Returns the entities changed elsewhere.
    @discardableResult
    public func processExternalChanges() throws -> Set<String> {
        let touched: Set<String> = try withConnection { db in
            let version = try db.pragma("data_version")
            guard version != knownDataVersion else { return [] }
            knownDataVersion = version
            let generations = try db.transaction(.deferred) { try StoreCoordinator.readMetadata(db) }.entityGenerations
            defer { knownEntityGenerations = generations }
            return Set(generations.filter { knownEntityGenerations[$0.key] != $0.value }.keys)
        }
        guard !touched.isEmpty else { return [] }
        for context in contexts.withLock({ $0.compactMap(\.context) }) {
            context.enqueue { context.storeChangedElsewhere(touched) }
        }
        return touched
    }

    /// Starts the bookkeeping of ``processExternalChanges()`` (at open).
    private func noteStoreState() throws {
        try withConnection { db in
            knownDataVersion = try db.pragma("data_version")
            knownEntityGenerations = try StoreCoordinator.readMetadata(db).entityGenerations
        }
    }

    /// Every context made on this coordinator, to tell them when the store is replaced.
    private let contexts = Locked<[WeakContext]>([])

    func register(_ context: ManagedObjectContext) {
        contexts.withLock { list in
            list.removeAll { $0.context == nil }
            list.append(WeakContext(context: context))
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
    ///   ``StoreError/notAStrataStore(path:)``, ``StoreError/notADatabase(path:)``, ``StoreError/sqlite(_:)``.
    ///   When it throws, this store is unchanged.
    public func replaceStore(withContentsOf source: URL) throws {
        guard try StoreCoordinator.probe(path: source.path, model: model) != nil else {
            throw StoreError.notAStrataStore(path: source.path)
        }
        if let url, url.standardizedFileURL.resolvingSymlinksInPath() == source.standardizedFileURL.resolvingSymlinksInPath() {
            preconditionFailure("replaceStore(withContentsOf:) was given the store's own file: pass a copy.")
        }
        var configuration = Connection.Configuration()
        configuration.readOnly = true
        let newUUID = UUID()
        try withConnection { db in
            let reader = try Connection(path: source.path, configuration: configuration)
            defer { reader.close() }
            try db.restore(from: reader)
            try StoreCoordinator.upgradeEntityTable(db)
            try db.cachedStatement("UPDATE strata_meta SET store_uuid = ?, nonce = ? WHERE id = 1")
                .execute(.text(newUUID.uuidString), .blob(StoreCoordinator.randomNonce()))
            reservedKeys = []
            uuid = newUUID
            knownEntityGenerations = try StoreCoordinator.readMetadata(db).entityGenerations
        }
        for context in contexts.withLock({ $0.compactMap(\.context) }) {
            context.enqueue { context.storeWasReplaced() }
        }
    }

    /// A new root context that saves straight to this store.
    public func newContext(name: String? = nil) -> ManagedObjectContext {
        ManagedObjectContext(coordinator: self, parent: nil, name: name)
    }

    /// Root contexts that asked to merge the others' saves.
    private let mergingRoots = Locked<[WeakContext]>([])

    func registerMergingRoot(_ context: ManagedObjectContext) {
        mergingRoots.withLock { list in
            list.removeAll { $0.context == nil }
            if !list.contains(where: { $0.context === context }) { list.append(WeakContext(context: context)) }
        }
    }

    /// Whether a root context other than `context` merges the others' saves.
    func hasMergingRoots(besides context: ManagedObjectContext) -> Bool {
        mergingRoots.withLock { roots in
            roots.contains { root in root.context.map { $0 !== context && $0.automaticallyMergesChangesFromParent } ?? false }
        }
    }

    /// Hands a root context's save to every other root context that merges automatically; each
    /// merges on its own queue, in the order of the saves.
    func broadcast(_ save: DidSave, from origin: ManagedObjectContext) {
        let targets = mergingRoots.withLock { $0.compactMap(\.context) }
        for target in targets where target !== origin && target.automaticallyMergesChangesFromParent {
            target.enqueue { target.mergeChanges(from: save) }
        }
    }

    /// Closes the connection. Using the coordinator afterwards is a programmer error.
    /// Whether ``close()`` was called.
    public var isClosed: Bool { lock.withLock { connection.isClosed } }

    public func close() {
        cacheQueue.sync {}
        refreshConnection.withLock { $0?.close(); $0 = nil }
        lock.withLock { connection.close() }
    }

    /// Rebuilds the database file (`VACUUM`). Object IDs are primary keys declared
    /// `INTEGER PRIMARY KEY`, which `VACUUM` keeps, so every ID and URI stays valid.
    public func vacuum() throws { try withConnection { try $0.execute("VACUUM") } }

    // MARK: Diagnostics

    /// How many times each SQL text was prepared and executed (Core Data's SQLDebug, countable).
    public var statistics: StatementStatistics { lock.withLock { connection.statistics } }
    public func resetStatistics() { lock.withLock { connection.resetStatistics() } }
    /// Called with every statement's SQL as it starts.
    public func setTrace(_ trace: (@Sendable (String) -> Void)?) { lock.withLock { connection.trace = trace } }

    /// Reads the store's metadata in one read transaction.
    public func metadata() throws -> StoreMetadata {
        try withConnection { db in
            try db.transaction(.deferred) { try StoreCoordinator.readMetadata(db) }
        }
    }

    /// Runs SQL access under the coordinator's lock, turning SQLite errors into ``StoreError/sqlite(_:)``.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        try lock.withLock {
            precondition(!connection.isClosed, "StoreCoordinator used after close(): open a new coordinator.")
            do { return try body(connection) } catch let error as SQLiteError { throw StoreError.sqlite(error) }
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
    func reservePrimaryKey(for info: EntityInfo) throws -> Int64 {
        try withConnection { db in
            if reservedKeys.isEmpty { reservedKeys = Array(repeating: (0, 0, 32), count: model.schema.infos.count) }
            let range = reservedKeys[info.ordinal]
            if range.next < range.end {
                reservedKeys[info.ordinal].next += 1
                return range.next
            }
            let block = min(range.block * 2, 65_536)
            let entity = info.name
            let first: Int64 = try db.transaction(.immediate) {
                let select = try db.cachedStatement(
                    "SELECT max(next_pk, coalesce((SELECT max(\(quoted(primaryKeyColumn))) FROM \(info.table)), 0) + 1) FROM strata_entity WHERE name = ?")
                try select.bind(entity, at: 1)
                guard try select.step() else { throw ObjectError.unknownEntity(entity) }
                let first = select.int64(at: 0)
                select.reset()
                let update = try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE name = ?")
                try update.execute(.integer(first + block), .text(entity))
                return first
            }
            reservedKeys[info.ordinal] = (first + 1, first + block, block)
            return first
        }
    }

    // MARK: Commit

    /// Writes `changes` in one `BEGIN IMMEDIATE … COMMIT`: rows, join rows, the generation bump
    /// with a fresh nonce, and the generations of the touched entities. Nothing is written when
    /// any statement fails or a conflict is refused.
    ///
    /// Updates and deletes are optimistic: each applies only where the row still has the version
    /// the context read. A row changed or deleted since is a conflict, resolved by `policy`
    /// inside the same transaction (see ``MergePolicy``).
    func commit(_ changes: StoreChanges, policy: MergePolicy, origin: String? = nil) throws -> CommitOutcome {
        precondition(!changes.isEmpty, "commit called with nothing to write")
        let outcome: CommitOutcome = try withConnection { db in
            let outcome = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: origin)
                var resolutions: [ObjectID: Resolution] = [:]
                var conflicts: [MergeConflict] = []
                // Whether any row changed: a save whose every change resolved to their version
                // writes nothing and must not bump the generation.
                var wrote = false
                /// Runs the policy on a row whose optimistic write found another version.
                func resolve(_ info: EntityInfo, _ key: Int64, original: RowSnapshot, ours: RowSnapshot?) throws -> (RowSnapshot?, ConflictOutcome?) {
                    let theirs = try StoreCoordinator.readRow(db, info, key)
                    let id = ObjectID(entityName: info.name, primaryKey: key)
                    do {
                        return (theirs, try policy.resolve(info, id, original: original, ours: ours, theirs: theirs, stored: { theirs }))
                    } catch let error as MergeConflictError {
                        conflicts += error.conflicts
                        return (theirs, .adoptDeletion)
                    }
                }
                for (info, key, original) in changes.deleted {
                    try db.cachedStatement(info.deleteSQL).execute(.integer(key), .integer(original.version))
                    guard db.changes == 0 else {
                        wrote = true
                        continue
                    }
                    let id = ObjectID(entityName: info.name, primaryKey: key)
                    switch try resolve(info, key, original: original, ours: nil) {
                    case (_, nil), (_, .delete?):
                        try db.cachedStatement(info.forceDeleteSQL).execute(.integer(key))
                        wrote = wrote || db.changes > 0
                    case (_, .adoptTheirs(let theirs)?):
                        resolutions[id] = .adoptedTheirs(theirs)
                    case (_, .adoptDeletion?), (_, .write?):
                        resolutions[id] = .deletedByThem
                    }
                }
                for (owner, table, column, key) in changes.joinRowsOfDeleted where resolutions[owner] == nil {
                    try db.cachedStatement("DELETE FROM \(table) WHERE \(column) = ?").execute(.integer(key))
                    wrote = wrote || db.changes > 0
                }
                // One statement lookup per entity, not per row: every parameter is bound for each
                // row, so the statement is only reset between rows.
                var statements: [ObjectIdentifier: Statement] = [:]
                func statement(_ info: EntityInfo, _ sql: String) throws -> Statement {
                    let key = ObjectIdentifier(info)
                    if let statement = statements[key] { return statement }
                    let statement = try db.cachedStatement(sql)
                    statements[key] = statement
                    return statement
                }
                for (info, key, row) in changes.inserted {
                    let insert = try statement(info, info.insertSQL)
                    try insert.bind(key, at: 1)
                    try row.bind(to: insert, from: 2)
                    try insert.execute()
                    wrote = true
                }
                statements.removeAll(keepingCapacity: true)
                for (info, key, row, original) in changes.updated {
                    let update = try statement(info, info.updateSQL)
                    try row.bind(to: update, from: 1)
                    try update.bind(key, at: Int32(info.columns.count + 1))
                    try update.bind(original.version, at: Int32(info.columns.count + 2))
                    try update.execute()
                    guard db.changes == 0 else {
                        wrote = true
                        continue
                    }
                    let id = ObjectID(entityName: info.name, primaryKey: key)
                    switch try resolve(info, key, original: original, ours: row) {
                    case (_, nil):
                        resolutions[id] = .written(try StoreCoordinator.forceUpdate(db, info, key, row))
                        wrote = true
                    case (_, .write(let merged)?):
                        resolutions[id] = .written(try StoreCoordinator.forceUpdate(db, info, key, merged))
                        wrote = true
                    case (_, .adoptTheirs(let theirs)?):
                        resolutions[id] = .adoptedTheirs(theirs)
                    case (_, .adoptDeletion?), (_, .delete?):
                        resolutions[id] = .deletedByThem
                    }
                }
                if !conflicts.isEmpty { throw MergeConflictError(conflicts: conflicts) }
                // Membership is not part of a row, so a row conflict does not drop it, unless one
                // side's row was deleted by someone else.
                func gone(_ id: ObjectID) -> Bool { resolutions[id] == .deletedByThem }
                for (owner, other, table, a, b) in changes.joinDeletes where !gone(owner) && !gone(other) {
                    try db.cachedStatement("DELETE FROM \(table) WHERE \"a\" = ? AND \"b\" = ?").execute(.integer(a), .integer(b))
                    wrote = wrote || db.changes > 0
                }
                for (owner, other, table, a, b) in changes.joinInserts where !gone(owner) && !gone(other) {
                    try db.cachedStatement("INSERT OR IGNORE INTO \(table) (\"a\", \"b\") VALUES (?, ?)").execute(.integer(a), .integer(b))
                    wrote = wrote || db.changes > 0
                }
                guard wrote else { return CommitOutcome(result: nil, resolutions: resolutions) }
                KillPoint.hit("rows.written", in: origin)
                let nonce = StoreCoordinator.randomNonce()
                let bump = try db.cachedStatement(
                    "UPDATE strata_meta SET generation = generation + 1, nonce = ? WHERE id = 1 RETURNING generation")
                try bump.bind(nonce, at: 1)
                guard try bump.step() else { throw StoreError.notAStrataStore(path: db.path) }
                let generation = bump.int64(at: 0)
                while try bump.step() {}
                KillPoint.hit("generation.bumped", in: origin)
                for entity in changes.touchedEntities.sorted() {
                    try db.cachedStatement("UPDATE strata_entity SET generation = ?, nonce = ? WHERE name = ?")
                        .execute(.integer(generation), .blob(nonce), .text(entity))
                }
                KillPoint.hit("entities.stamped", in: origin)
                // Our own commit is no news for processExternalChanges (data_version ignores it too).
                for entity in changes.touchedEntities { knownEntityGenerations[entity] = generation }
                if refreshModelJSON {
                    // Same hash, newer defaults or validation rules: keep the stored model current.
                    try db.cachedStatement("UPDATE strata_meta SET model_version = ?, model_json = ? WHERE id = 1")
                        .execute(.text(model.versionIdentifier), .text(String(decoding: model.jsonData(), as: UTF8.self)))
                }
                return CommitOutcome(
                    result: CommitResult(generation: generation, nonce: nonce, touchedEntities: changes.touchedEntities),
                    resolutions: resolutions)
            }
            if outcome.result != nil { refreshModelJSON = false }   // under the lock, once COMMIT succeeded
            return outcome
        }
        if let result = outcome.result { scheduleCacheRefreshes(touching: result.touchedEntities) }
        return outcome
    }

    /// The stored row `key` of `info`, or `nil`.
    static func readRow(_ db: Connection, _ info: EntityInfo, _ key: Int64) throws -> RowSnapshot? {
        let statement = try db.cachedStatement(info.selectSQL + " WHERE \(quoted(primaryKeyColumn)) = ?")
        try statement.bind(key, at: 1)
        defer { statement.reset() }
        return try statement.step() ? RowSnapshot(statement: statement, info: info) : nil
    }

    /// Writes `row` whatever the stored version; returns it with the new version.
    private static func forceUpdate(_ db: Connection, _ info: EntityInfo, _ key: Int64, _ row: RowSnapshot) throws -> RowSnapshot {
        let update = try db.cachedStatement(info.forceUpdateSQL)
        try row.bind(to: update, from: 1)
        try update.bind(key, at: Int32(info.columns.count + 1))
        defer { update.reset() }
        var written = row
        if try update.step() { written.version = update.int64(at: 0) }
        while try update.step() {}
        return written
    }

    /// The stored row of `id` (for a fault, or a child context's read through its ancestors).
    func row(for id: ObjectID) throws -> RowSnapshot? {
        guard let info = model.schema.infos[id.entityName] else { throw ObjectError.unknownEntity(id.entityName) }
        return try withConnection { try StoreCoordinator.readRow($0, info, id.primaryKey) }
    }

    /// The stored rows of `ids`, one statement per entity (`… WHERE "_pk" IN json_each(?)`).
    func rows(for ids: [ObjectID]) throws -> [ObjectID: RowSnapshot] {
        let byEntity = Dictionary(grouping: ids, by: \.entityName)
        return try withConnection { db in
            var rows: [ObjectID: RowSnapshot] = [:]
            for (entity, ids) in byEntity {
                guard let info = model.schema.infos[entity] else { throw ObjectError.unknownEntity(entity) }
                let statement = try db.cachedStatement(
                    info.selectSQL + " WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?))")
                try statement.bind("[" + ids.map { String($0.primaryKey) }.joined(separator: ",") + "]", at: 1)
                try statement.forEachRow {
                    rows[ObjectID(entityName: entity, primaryKey: $0.int64(at: 0))] = RowSnapshot(statement: $0, info: info)
                }
            }
            return rows
        }
    }

    /// The stored members of to-many `index` of object `key` of `info`.
    func toManyKeys(_ info: EntityInfo, _ index: Int, of key: Int64) throws -> Set<Int64> {
        let sql: String
        switch info.toManyStorage[index] {
        case let .inverseColumn(table, column):
            sql = "SELECT \(quoted(primaryKeyColumn)) FROM \(table) WHERE \(column) = ?"
        case let .joinTable(table, own, other):
            sql = "SELECT \(other) FROM \(table) WHERE \(own) = ?"
        }
        return try withConnection { db in
            let statement = try db.cachedStatement(sql)
            try statement.bind(key, at: 1)
            var keys = Set<Int64>()
            try statement.forEachRow { keys.insert($0.int64(at: 0)) }
            return keys
        }
    }

    static func randomNonce() -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

/// Everything one save writes. Updates and deletes carry the row as read (`original`), whose
/// version the optimistic write checks.
struct StoreChanges {
    var inserted: [(EntityInfo, Int64, RowSnapshot)] = []
    var updated: [(EntityInfo, Int64, RowSnapshot, original: RowSnapshot)] = []
    var deleted: [(EntityInfo, Int64, original: RowSnapshot)] = []
    /// (deleted object, join table, column, key): every join row of a deleted object.
    var joinRowsOfDeleted: [(ObjectID, String, String, Int64)] = []
    /// (owner, other member, join table, a, b).
    var joinInserts: [(ObjectID, ObjectID, String, Int64, Int64)] = []
    var joinDeletes: [(ObjectID, ObjectID, String, Int64, Int64)] = []
    var touchedEntities: Set<String> = []

    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty
    }
}

/// How a conflicting object ended in a commit.
enum Resolution: Equatable {
    /// The row was written with these values (merged by the policy) at this version.
    case written(RowSnapshot)
    /// Nothing was written; the object takes the stored row.
    case adoptedTheirs(RowSnapshot)
    /// The row was deleted by someone else; the object leaves the context.
    case deletedByThem
}

/// A commit's public result plus how its conflicts were resolved. `result` is `nil` when every
/// change resolved to the other side's version: nothing was written, the generation is unchanged.
struct CommitOutcome {
    var result: CommitResult?
    var resolutions: [ObjectID: Resolution]
}
