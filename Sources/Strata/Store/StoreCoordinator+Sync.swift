internal import Foundation
internal import StrataSQLite

// What StrataSync needs of the core, as SPI (`@_spi(StrataSync) import Strata`): keys in a
// replica's own block, an insert under a key chosen elsewhere, and the sync engine's bookkeeping
// written in the same transaction as the rows it pulled. Nothing here changes a store that never
// syncs: its keys stay in block 0 and it has no `strata_sync_state` table.
extension StoreCoordinator {
    /// Keys come in blocks of 2^40 per entity (``reservePrimaryKey(for:)``): block 0 for a store
    /// that never syncs, block *n* for sync replica *n*.
    static let keyBlockBits: Int64 = 40

    /// The first key free in the block of the entity's `next_pk`: `max(next_pk, max(key in
    /// that block) + 1)`, one range read of the primary key.
    static func firstFreeKeySQL(_ info: EntityInfo) -> String {
        let pk = quoted(primaryKeyColumn)
        let bits = keyBlockBits
        // `ORDER BY … DESC LIMIT 1`: one seek to the block's last key, as `max(key)` of a whole table is.
        return "SELECT max(next_pk, coalesce((SELECT \(pk) FROM \(info.table) WHERE \(pk) >= ((next_pk >> \(bits)) << \(bits)) "
            + "AND \(pk) < (((next_pk >> \(bits)) + 1) << \(bits)) ORDER BY \(pk) DESC LIMIT 1), 0) + 1) FROM strata_entity WHERE name = ?"
    }

    /// Moves every entity's next key into block `block` (a replica's number): keys reserved from
    /// now on are `block << 40` and up. Keys already reserved in memory by another coordinator on
    /// the file (up to a block of 65,536 per entity) are still used by it; open the store
    /// elsewhere after this, or reopen.
    @_spi(StrataSync)
    public func moveKeys(toBlock block: Int64) throws {
        precondition(block >= 0 && block < (1 << (63 - StoreCoordinator.keyBlockBits)), "moveKeys(toBlock:): block \(block) is out of range")
        try refuseWriteIfReadOnly("moving keys")
        let base = block << StoreCoordinator.keyBlockBits
        try withConnection { db in
            try db.transaction(.immediate) {
                try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE next_pk >> ? <> ?")
                    .execute(.integer(base + 1), .integer(StoreCoordinator.keyBlockBits), .integer(block))
            }
            reservedKeys.withLock { $0 = [] }
        }
    }

    /// Whether this coordinator's commits record history (sync reads what to push from it).
    @_spi(StrataSync)
    public var keepsHistory: Bool { historyOptions.isEnabled }

    /// The sync engine's bookkeeping, as it was last committed (empty before any).
    @_spi(StrataSync)
    public func syncState() throws -> [String: String] {
        try withReader { db in try StoreCoordinator.readSyncState(db) }
    }

    /// Writes `values` into the sync bookkeeping in a transaction of its own (no row changes, no
    /// generation bump). A context's save writes them with its rows instead
    /// (``ManagedObjectContext/syncStateForNextCommit``).
    /// `requiringGeneration`: written only if the store is still at that generation, else
    /// ``StoreMovedError``.
    @_spi(StrataSync)
    /// `clearingCapture`: the before-images go too (an apply that changed no row).
    public func writeSyncState(_ values: [String: String], requiringGeneration required: Int64? = nil, clearingCapture: Bool = false) throws {
        try refuseWriteIfReadOnly("writing sync state")
        try withConnection { db in
            try db.transaction(.immediate) {
                if let required { try StoreCoordinator.requireGeneration(db, required) }
                try StoreCoordinator.writeSyncState(db, values)
                if clearingCapture { try StoreCoordinator.clearSyncCapture(db, schema: model.schema) }
            }
        }
    }

    /// The store's generation now, read in a transaction of its own.
    @_spi(StrataSync)
    public func currentGeneration() throws -> Int64 {
        try withReader { db in try db.transaction(.deferred) { try StoreCoordinator.readMetadata(db).generation } }
    }

    /// Every row of every entity with its values, and the generation they are as of, read in
    /// one read transaction (a store's rows pushed once when sync is switched on).
    @_spi(StrataSync)
    public func snapshotRows() throws -> (generation: Int64, rows: [(ObjectID, HistoryRow)]) {
        try withReader { db in
            try db.transaction(.deferred) {
                let generation = try StoreCoordinator.readMetadata(db).generation
                var result: [(ObjectID, HistoryRow)] = []
                for entity in model.entities {
                    guard let info = model.schema.infos[entity.name] else { continue }
                    let statement = try db.prepare(info.selectSQL + " ORDER BY \(quoted(primaryKeyColumn))")
                    while try statement.step() {
                        let row = RowSnapshot(statement: statement, info: info)
                        var attributes: [String: AttributeValue?] = [:]
                        for (index, attribute) in info.attributes.enumerated() { attributes[attribute.name] = .some(row.attributes[index]) }
                        var toOnes: [String: ObjectID?] = [:]
                        for (index, relationship) in info.toOnes.enumerated() {
                            toOnes[relationship.name] = .some(row.toOnes[index].map { ObjectID(entity: info.toOneDestinationNames[index], primaryKey: $0) })
                        }
                        result.append((ObjectID(entity: info.internedName, primaryKey: statement.int64(at: 0)), HistoryRow(attributes: attributes, toOnes: toOnes)))
                    }
                }
                return (generation, result)
            }
        }
    }

    static func requireGeneration(_ db: Connection, _ required: Int64) throws {
        let select = try db.cachedStatement("SELECT generation FROM strata_meta WHERE id = 1")
        defer { select.reset() }
        guard try select.step() else { throw StoreError.notAStrataStore(path: db.path) }
        let generation = select.int64(at: 0)
        if generation != required { throw StoreMovedError(required: required, found: generation) }
    }

    static func readSyncState(_ db: Connection) throws -> [String: String] {
        guard try syncStateExists(db) else { return [:] }
        let select = try db.cachedStatement("SELECT key, value FROM strata_sync_state")
        defer { select.reset() }
        var result: [String: String] = [:]
        while try select.step() { result[select.string(at: 0)] = select.string(at: 1) }
        return result
    }

    static func writeSyncState(_ db: Connection, _ values: [String: String]) throws {
        guard !values.isEmpty else { return }
        try db.execute("CREATE TABLE IF NOT EXISTS strata_sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        let upsert = try db.cachedStatement("INSERT OR REPLACE INTO strata_sync_state (key, value) VALUES (?, ?)")
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try upsert.execute(.text(key), .text(value)) }
    }

    static func syncStateExists(_ db: Connection) throws -> Bool {
        let exists = try db.cachedStatement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'strata_sync_state'")
        defer { exists.reset() }
        return try exists.step()
    }

    /// The key of the sync bookkeeping that holds the last local generation pushed.
    @_spi(StrataSync)
    public static let pushedThroughKey = "pushed-through"

    /// The newest history token that may be pruned: the last one a sync engine pushed (`nil`:
    /// the store does not sync, prune as the options say).
    static func syncPushFloor(_ db: Connection) throws -> Int64? {
        guard try syncStateExists(db) else { return nil }
        let select = try db.cachedStatement("SELECT value FROM strata_sync_state WHERE key = ?")
        try select.bind(pushedThroughKey, at: 1)
        defer { select.reset() }
        guard try select.step() else { return 0 }
        return Int64(select.string(at: 0)) ?? 0
    }
}

/// A commit that required the store at one generation found it at another
/// (``ManagedObjectContext/requiredGenerationForNextCommit``): nothing was written.
@_spi(StrataSync)
public struct StoreMovedError: Error, CustomStringConvertible {
    public let required: Int64
    public let found: Int64
    public var description: String { "the store moved from generation \(required) to \(found) since it was read: nothing was written" }
}

extension ManagedObjectContext {
    /// Inserts a new object of `entityName` under `primaryKey`, a key chosen elsewhere (a row
    /// another replica inserted). The key must be free: the save fails on a key a row holds.
    @_spi(StrataSync)
    @discardableResult
    public func insert(_ entityName: String, primaryKey: Int64) throws -> ManagedObject {
        assertOnQueue()
        let info = try info(entityName)
        let id = ObjectID(entity: info.internedName, primaryKey: primaryKey)
        precondition(registered[id] == nil, "insert(_:primaryKey:): \(id) is already registered in this context")
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: nil, isNew: true))
        registered[id] = object
        inserted[id] = object
        noteLocal(id, \.inserted)
        return object
    }
}
