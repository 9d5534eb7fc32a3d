internal import Foundation
internal import StrataSQLite

// Commits and row reads: everything that writes the store's rows, and the reads that contexts
// make through the coordinator. Split from StoreCoordinator.swift; all of it runs under the
// coordinator's lock (`withConnection`).
extension StoreCoordinator {
    // MARK: Commit

    /// Writes `changes` in one `BEGIN IMMEDIATE … COMMIT`: rows, join rows, the generation bump
    /// with a fresh nonce, and the generations of the touched entities. Nothing is written when
    /// any statement fails or a conflict is refused.
    ///
    /// Updates and deletes are optimistic: each applies only where the row still has the version
    /// the context read. A row changed or deleted since is a conflict, resolved by `policy`
    /// inside the same transaction (see ``MergePolicy``).
    ///
    /// `origin` is the name of the root context that commits: the kill points inside the
    /// transaction are named after it (`writer.transaction.begun`).
    func commit(_ changes: StoreChanges, policy: MergePolicy, origin: String?, author: String? = nil) throws -> CommitOutcome {
        precondition(!changes.isEmpty, "commit called with nothing to write")
        try refuseWriteIfReadOnly("a save")
        let outcome: CommitOutcome = try withConnection { db in
            let outcome = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: origin)
                if let required = changes.requiredGeneration { try StoreCoordinator.requireGeneration(db, required) }
                var transaction = CommitTransaction(db, schema: model.schema, policy: policy, changes: changes,
                                                    history: historyOptions.isEnabled ? HistoryRecorder(author: author, context: origin) : nil)
                try transaction.deleteRows()
                try transaction.deleteJoinRowsOfDeleted()
                try transaction.insertRows()
                try transaction.updateRows()
                try transaction.checkReferences()
                if !transaction.conflicts.isEmpty {
                    // Conflicts on rows of a store replaced or restored under this coordinator are
                    // no conflicts: the store is another one (one row read, on this path only).
                    try checkLineage(db)
                    throw MergeConflictError(conflicts: transaction.conflicts)
                }
                try transaction.writeMembership()
                try StoreCoordinator.writeSyncState(db, changes.syncState)
                if changes.clearsSyncCapture { try StoreCoordinator.clearSyncCapture(db, schema: model.schema) }
                guard transaction.wrote else { return CommitOutcome(result: nil, resolutions: transaction.resolutions) }
                KillPoint.hit("rows.written", in: origin)
                let touched = changes.touchedEntities.union(transaction.nullified.keys)
                let history = transaction.history?.record() ?? HistoryLog.Record(kind: .save, author: author, context: origin)
                let (generation, nonce) = try stampCommit(db, touching: touched, origin: origin, history: history)
                if refreshModelJSON {
                    // Same hash, newer defaults or validation rules: keep the stored model current.
                    try db.cachedStatement("UPDATE strata_meta SET model_version = ?, model_json = ? WHERE id = 1")
                        .execute(.text(model.versionIdentifier), .text(String(decoding: model.jsonData(), as: UTF8.self)))
                }
                return CommitOutcome(
                    result: CommitResult(generation: generation, nonce: nonce, touchedEntities: touched),
                    resolutions: transaction.resolutions, nullified: transaction.nullified)
            }
            if let result = outcome.result {
                refreshModelJSON = false                    // under the lock, once COMMIT succeeded
                // Our own commit is no news for the follower, unless another connection
                // committed since it last looked: then it reads both, and skips ours (found by a
                // model test: an edit from another process went unreported after our next save).
                // Rows no context of this save knew changed (their to-one named a row it
                // deleted): every context hears of them as of a change made elsewhere.
                let commit = CommitEffects.Commit(generation: result.generation, touched: result.touchedEntities) { entities in
                    guard var keys = changes.writtenKeys(of: entities, limit: CacheRefreshLog.keyLimit) else { return nil }
                    for (entity, nullified) in outcome.nullified where entities.contains(entity) { keys[entity, default: []] += nullified }
                    return keys
                }
                afterCommit(CommitEffects(origin: .ownCommit, commits: [commit],
                                          news: outcome.nullified.isEmpty ? .none : .changed(Set(outcome.nullified.keys), deletionsNamed: true)))
            }
            return outcome
        }
        return outcome
    }

    /// Throws ``StoreError/storeReplacedElsewhere(path:)`` when the store under the writer is no
    /// longer the lineage this coordinator last saw (see ``stampCommit(_:touching:origin:history:)``).
    /// One row read, and a second (the history's record at the known generation) only when other
    /// connections committed since.
    func checkLineage(_ db: Connection) throws {
        let known = external.state.withLock { ($0.generation, $0.nonce) }
        let meta = try db.cachedStatement("SELECT generation, nonce, store_uuid FROM strata_meta WHERE id = 1")
        guard try meta.step() else { throw StoreError.notAStrataStore(path: db.path) }
        let (generation, nonce, store) = (meta.int64(at: 0), meta.data(at: 1), meta.string(at: 2))
        meta.reset()
        var replaced = store != uuid.uuidString || generation < known.0
        if !replaced, !known.1.isEmpty {
            if generation == known.0 {
                replaced = nonce != known.1
            } else if let recorded = try HistoryLog.lineage(db, at: known.0) {
                replaced = recorded != known.1
            }
        }
        if replaced { throw StoreError.storeReplacedElsewhere(path: db.path) }
    }

    /// The end of every commit's transaction (a save's or a batch request's): bumps the store's
    /// generation with a fresh nonce and stamps the touched entities with both, so that no
    /// section cache written before it can pass for current. Call under the lock, inside the
    /// transaction, after the rows are written.
    func stampCommit(_ db: Connection, touching touched: Set<String>, origin: String?, history: HistoryLog.Record) throws -> (Int64, Data) {
        // Still the store this coordinator knows? Another process may have replaced it (another
        // UUID) or restored an older copy (a lower generation, or the generation this coordinator
        // knows reached by other commits: another nonce there) before the follower noticed: then
        // nothing is written over a row that only shares a key.
        // The bump only applies to the lineage this coordinator knows: the same UUID, and either
        // the generation it knows with its nonce, or a later one whose history still records that
        // nonce at the known generation (or records nothing there: pruned, history off). No
        // statement beyond the bump; a bump that matches no row is diagnosed.
        let known = external.state.withLock { ($0.generation, $0.nonce) }
        let nonce = StoreCoordinator.randomNonce()
        let bump = try db.cachedStatement(
            "UPDATE strata_meta SET generation = generation + 1, nonce = ?1 WHERE id = 1 AND store_uuid = ?2 AND "
                + "(generation = ?3 AND nonce = ?4 OR generation > ?3 AND coalesce((SELECT nonce FROM strata_history WHERE token = ?3), ?4) = ?4) "
                + "RETURNING generation")
        try bump.bind(nonce, at: 1)
        try bump.bind(uuid.uuidString, at: 2)
        try bump.bind(known.1.isEmpty ? -1 : known.0, at: 3)
        try bump.bind(known.1, at: 4)
        guard try bump.step() else {
            bump.reset()
            try checkLineage(db)
            throw StoreError.notAStrataStore(path: db.path)
        }
        let generation = bump.int64(at: 0)
        while try bump.step() {}
        external.state.withLock { $0.ownNonces[generation] = nonce }
        KillPoint.hit("generation.bumped", in: origin)
        for entity in touched.sorted() {
            try db.cachedStatement("UPDATE strata_entity SET generation = ?, nonce = ? WHERE name = ?")
                .execute(.integer(generation), .blob(nonce), .text(entity))
        }
        KillPoint.hit("entities.stamped", in: origin)
        // The history, in the same transaction: it lists a commit exactly when the commit happened.
        if historyOptions.isEnabled {
            try HistoryLog.write(db, token: generation, nonce: nonce, record: history, writer: writerID, origin: origin,
                                 now: historyClock.withLock { $0 } ?? Date().timeIntervalSince1970)
            commitsSincePrune += 1
            if commitsSincePrune >= 64 {
                commitsSincePrune = 0
                try HistoryLog.prune(db, token: generation, options: historyOptions)
            }
        }
        return (generation, nonce)
    }

    /// The stored row `key` of `info`, or `nil`.
    static func readRow(_ db: Connection, _ info: EntityInfo, _ key: Int64) throws -> RowSnapshot? {
        let statement = try db.cachedStatement(info.selectByKeySQL)
        try statement.bind(key, at: 1)
        defer { statement.reset() }
        return try statement.step() ? RowSnapshot(statement: statement, info: info) : nil
    }

    /// Writes `row` whatever the stored version; returns it with the new version.
    static func forceUpdate(_ db: Connection, _ info: EntityInfo, _ key: Int64, _ row: RowSnapshot) throws -> RowSnapshot {
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
        return try withReader { try StoreCoordinator.readRow($0, info, id.primaryKey) }
    }

    /// The stored rows of `ids`, one statement per entity (`… WHERE "_pk" IN json_each(?)`).
    func rows(for ids: [ObjectID]) throws -> [ObjectID: RowSnapshot] {
        let byEntity = Dictionary(grouping: ids, by: \.entityName)
        return try withReader { db in
            var rows: [ObjectID: RowSnapshot] = [:]
            for (entity, ids) in byEntity {
                guard let info = model.schema.infos[entity] else { throw ObjectError.unknownEntity(entity) }
                let statement = try db.cachedStatement(
                    info.selectByKeysSQL)
                try statement.bind("[" + ids.map { String($0.primaryKey) }.joined(separator: ",") + "]", at: 1)
                try statement.forEachRow {
                    rows[ObjectID(entity: info.internedName, primaryKey: $0.int64(at: 0))] = RowSnapshot(statement: $0, info: info)
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
        return try withReader { db in
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
    /// New rows, by entity then key, each at version 1: the very list a save through clean
    /// ancestors hands them to merge (``RowChanges/inserted``), so an import holds it once.
    var inserted: [(ObjectID, RowSnapshot)] = []
    /// The new objects whose to-many relationships gained members (gathered with `inserted`).
    var insertedWithMembers: Set<ObjectID> = []
    var updated: [(EntityInfo, Int64, RowSnapshot, original: RowSnapshot)] = []
    var deleted: [(EntityInfo, Int64, original: RowSnapshot)] = []
    /// (deleted object, join table, column, key): every join row of a deleted object.
    var joinRowsOfDeleted: [(ObjectID, String, String, Int64)] = []
    /// (owner, other member, join table, a, b).
    var joinInserts: [(ObjectID, ObjectID, String, Int64, Int64)] = []
    var joinDeletes: [(ObjectID, ObjectID, String, Int64, Int64)] = []
    var touchedEntities: Set<String> = []
    /// Sync bookkeeping written in the commit's transaction (``ManagedObjectContext/syncStateForNextCommit``).
    var syncState: [String: String] = [:]
    /// The generation the store must be at for the commit to go ahead (``StoreMovedError``).
    var requiredGeneration: Int64?
    /// Whether the commit clears the sync engine's before-images (``StoreCoordinator/installSyncCapture()``).
    var clearsSyncCapture = false

    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty
    }
}

/// A commit's many-to-many membership changes, by owner, for the history: `{"add":{"tags":[3]},"remove":{…}}`.
struct HistoryLinks {
    private var changes: [ObjectID: (add: [String: [Int64]], remove: [String: [Int64]])] = [:]
    private var order: [ObjectID] = []

    mutating func note(_ owner: ObjectID, _ other: ObjectID, _ table: String, added: Bool, schema: Schema) {
        guard let info = schema.info(of: owner) else { return }
        var relationship: String?
        for (index, storage) in info.toManyStorage.enumerated() {
            if case .joinTable(let t, _, _) = storage, t == table, info.toManys[index].destination == other.entityName {
                relationship = info.toManys[index].name
                break
            }
        }
        guard let relationship else { return }
        if changes[owner] == nil { order.append(owner) }
        if added {
            changes[owner, default: ([:], [:])].add[relationship, default: []].append(other.primaryKey)
        } else {
            changes[owner, default: ([:], [:])].remove[relationship, default: []].append(other.primaryKey)
        }
    }

    func record(into history: inout HistoryLog.Record) {
        func part(_ name: String, _ members: [String: [Int64]]) -> String? {
            guard !members.isEmpty else { return nil }
            let fields = members.sorted { $0.key < $1.key }.map { HistoryLog.quote($0.key) + ":" + HistoryLog.encodeKeys($0.value) }
            return HistoryLog.quote(name) + ":{" + fields.joined(separator: ",") + "}"
        }
        for owner in order {
            guard let change = changes[owner] else { continue }
            let fields = [part("add", change.add), part("remove", change.remove)].compactMap { $0 }
            history.add(owner.entityName, .update, [owner.primaryKey], "{" + fields.joined(separator: ",") + "}")
        }
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
    /// Keys of rows, by entity, whose to-one the commit cleared in SQL because it named a row
    /// the commit deleted (``DeletedRowReferences``).
    var nullified: [String: [Int64]] = [:]
}

/// The rows that still name a row a commit deletes, saved elsewhere after the deleting context
/// applied the delete rules to the objects it knew (a batch insert, a sibling's or another
/// process's save): the context's rules could not reach them, and a commit never leaves a key to
/// a row that is gone, so the commit checks rather than trusts. Under every rule but no action
/// (nullify, cascade, deny, and a to-one with no inverse) the save is refused with a
/// ``MergeConflict`` that names the deleted object and, as
/// ``MergeConflict/Value/referenced(by:)``, each row naming it: once the context has merged the
/// other save, deleting again applies the rule to those rows too. No action leaves the keys, as
/// documented for that rule.
///
/// A commit without deletes runs nothing here; one with deletes runs one `SELECT` per to-one
/// that can name a deleted row's entity. (Clearing the keys in SQL instead was tried: the rows it
/// changed reached the lists as a second change set of the same commit.)
enum DeletedRowReferences {
    static func resolve(_ db: Connection, schema: Schema, deleted: [(EntityInfo, Int64)])
        throws -> (conflicts: [MergeConflict], nullified: [String: [Int64]]) {
        guard !deleted.isEmpty else { return ([], [:]) }
        var keysByEntity: [String: [Int64]] = [:]
        var infos: [String: EntityInfo] = [:]
        for (info, key) in deleted {
            keysByEntity[info.name, default: []].append(key)
            infos[info.name] = info
        }
        var conflicts: [MergeConflict] = []
        let nullified: [String: [Int64]] = [:]
        let pk = quoted(primaryKeyColumn)
        for (name, keys) in keysByEntity.sorted(by: { $0.key < $1.key }) {
            guard let target = infos[name] else { continue }
            let json = SQLiteValue.text(StoreCoordinator.jsonKeys(keys))
            for source in schema.infos.values.sorted(by: { $0.name < $1.name }) {
                for toOne in source.toOnes where toOne.destination == name {
                    let column = quoted(toOne.name)
                    let select = try db.prepare("SELECT \(pk), \(column) FROM \(source.table) WHERE \(column) IN (SELECT value FROM json_each(?)) ORDER BY 1")
                    try select.bind([json])
                    var found: [(Int64, Int64)] = []
                    try select.forEachRow { found.append(($0.int64(at: 0), $0.int64(at: 1))) }
                    guard !found.isEmpty else { continue }
                    let inverse = toOne.inverse.flatMap { target.entity.relationship(named: $0) }
                    let rule = inverse?.deleteRule ?? .nullify
                    if rule == .noAction { continue }
                    for (key, destination) in found {
                        let referrer = ObjectID(entity: source.internedName, primaryKey: key)
                        let deletedID = ObjectID(entity: target.internedName, primaryKey: destination)
                        conflicts.append(MergeConflict(objectID: deletedID, key: inverse?.name ?? "\(source.name).\(toOne.name)",
                                                       ours: .deleted, original: .referenced(by: referrer),
                                                       theirs: .referenced(by: referrer), stored: .referenced(by: referrer)))
                    }
                }
            }
        }
        return (conflicts, nullified)
    }
}

/// The to-ones a commit writes that name a row the store no longer has: another save deleted the
/// destination after the saving context read it. Writing them would leave a dangling key (a list
/// showing a section for an object that is gone, a fetch through the relationship finding
/// nothing), and no policy can write them back into existence, so each is a conflict under every
/// policy.
///
/// Run in the commit's transaction: each inserted row right after its `INSERT` (its values are
/// still in cache there; a second pass over an import's rows read each from memory again), each
/// updated row after the updates. The result is the one a check after every write would give:
/// the commit's deletes run before its inserts, so a row it deletes is not found, and the
/// destinations it inserts are known from its list of inserted IDs before any is written.
///
/// Each destination is looked up once per commit, and not at all when the commit inserts it (an
/// import naming a few hundred existing carriers from a million rows makes a few hundred
/// primary-key lookups).
struct DanglingKeyCheck {
    private let db: Connection
    private let schema: Schema
    private let inserted: [(ObjectID, RowSnapshot)]
    /// Per destination entity (a commit reaches few), the keys known to exist: the rows this
    /// commit inserts (gathered when the entity is first reached) and those found in the store.
    private var knownEntities: [UInt] = []
    private var known: [KeySet] = []
    private var gone = Set<ObjectID>()
    private(set) var conflicts: [MergeConflict] = []

    init(_ db: Connection, inserting inserted: [(ObjectID, RowSnapshot)], schema: Schema) {
        self.db = db
        self.schema = schema
        self.inserted = inserted
    }

    private mutating func knownIndex(_ address: UInt) -> Int {
        if let index = knownEntities.firstIndex(of: address) { return index }
        var keys = KeySet()
        for (id, _) in inserted where id.entityAddress == address { keys.insert(id.primaryKey) }
        knownEntities.append(address)
        known.append(keys)
        return known.count - 1
    }

    /// Checks the to-ones `row` (of `info`, key `key`) writes: those that differ from `original`'s
    /// (every one, for an inserted row).
    mutating func check(_ info: EntityInfo, _ key: Int64, _ row: RowSnapshot, original: RowSnapshot?) throws {
        // One view of the row's keys and one of the names for the row, and a name's address
        // read in place: the common case (a destination known to exist) takes no reference.
        let toOnes = row.toOnes, names = info.toOneDestinationNames
        for i in toOnes.indices {
            guard let destinationKey = toOnes[i], destinationKey != original?.toOnes[i] else { continue }
            let index = knownIndex(names[i].address)
            if known[index].contains(destinationKey) { continue }
            let entity = names[i]
            let destination = ObjectID(entity: entity, primaryKey: destinationKey)
            if !gone.contains(destination) {
                guard let target = schema.infos[entity.name] else { continue }
                let exists = try db.cachedStatement("SELECT 1 FROM \(target.table) WHERE \(quoted(primaryKeyColumn)) = ?")
                try exists.bind(destinationKey, at: 1)
                let present = try exists.step()
                exists.reset()
                if present {
                    known[index].insert(destinationKey)
                    continue
                }
                gone.insert(destination)
            }
            let before: MergeConflict.Value = .object(original?.toOnes[i].map { ObjectID(entity: entity, primaryKey: $0) })
            conflicts.append(MergeConflict(objectID: ObjectID(entity: info.internedName, primaryKey: key), key: info.toOnes[i].name,
                                           ours: .object(destination), original: before,
                                           theirs: .missing(destination), stored: .missing(destination)))
        }
    }

    /// Checks the updated rows, each as written (ours, or the policy's merge); rows that
    /// resolved to their version or their deletion write no to-one.
    mutating func checkUpdated(_ updated: [(EntityInfo, Int64, RowSnapshot, original: RowSnapshot)],
                               _ resolutions: [ObjectID: Resolution]) throws {
        for (info, key, row, original) in updated {
            switch resolutions[ObjectID(entity: info.internedName, primaryKey: key)] {
            case nil: try check(info, key, row, original: original)
            case .written(let merged)?: try check(info, key, merged, original: original)
            case .adoptedTheirs?, .deletedByThem?: continue
            }
        }
    }
}
