public import Foundation
internal import StrataSQLite

extension StoreCoordinator {
    // MARK: Reading the history

    /// The store's transactions after `token` (all that are kept, for `nil`), oldest first, with
    /// their changes; only those recorded by `author`, when given (Core Data's
    /// `NSPersistentHistoryChangeRequest.fetchHistory(after:)`). At most `limit` transactions
    /// (a page: ask again after the last one's token); every one read in one read transaction.
    ///
    /// A token the history no longer reaches back to throws instead of returning what is left:
    /// the transactions after it must be contiguous from `token + 1`, and a page stops before a
    /// gap (the next page's read then throws). A sync client can therefore trust that what it
    /// gets, page after page, is every commit since its token.
    ///
    /// - Throws: ``HistoryError/expired(token:oldestKept:)``, ``HistoryError/tokenAheadOfStore(token:storeGeneration:)``,
    ///   ``HistoryError/tokenOfAnotherStore(token:store:)``, ``HistoryError/undecodableRecord(token:reason:)``,
    ///   ``StoreError``.
    /// `includingRowValues`: each insert's and update's ``HistoryChange/row`` holds the row's values,
    /// read in the same read transaction (what a sync client pushes, with no second read at
    /// another snapshot).
    public func history(after token: HistoryToken? = nil, author: String? = nil, limit: Int? = nil,
                        includingRowValues: Bool = false) throws -> [HistoryTransaction] {
        precondition(limit.map { $0 > 0 } ?? true, "history(after:author:limit:): limit must be at least 1, or nil for no limit")
        let store = storeUUID
        if let token, token.store != store { throw HistoryError.tokenOfAnotherStore(token: token, store: store) }
        return try withReader { db in
            try db.transaction(.deferred) {
                let metadata = try StoreCoordinator.readMetadata(db)
                let generation = metadata.generation
                if let token, token.generation > generation {
                    throw HistoryError.tokenAheadOfStore(token: token, storeGeneration: generation)
                }
                // Another lineage: the store reached this generation by other commits (an older
                // copy restored). Checked against the record at the token, or the store's own
                // nonce when the token is its last commit.
                if let token, let lineage = token.lineage {
                    let recorded = token.generation == generation ? metadata.nonce : try HistoryLog.lineage(db, at: token.generation)
                    if let recorded, recorded != lineage {
                        throw HistoryError.expired(token: token, oldestKept: try StoreCoordinator.oldestToken(db, store: store))
                    }
                }
                guard try HistoryLog.exists(db) else {
                    if let token, token.generation < generation { throw HistoryError.expired(token: token, oldestKept: nil) }
                    return []
                }
                let transactions: [HistoryTransaction]
                if author == nil {
                    // Every transaction is read: the contiguity is checked on the way (one scan).
                    let check = ContiguousTokens(after: token?.generation, store: store)
                    transactions = try StoreCoordinator.readHistory(db, after: token?.generation ?? 0, through: nil, author: nil,
                                                                    contiguous: (check, generation), limit: limit,
                                                                    store: store, schema: model.schema)
                } else {
                    let through = try StoreCoordinator.contiguousEnd(db, after: token?.generation, store: store, storeGeneration: generation,
                                                                     limit: limit)
                    guard let through else { return [] }
                    transactions = try StoreCoordinator.readHistory(db, after: token?.generation ?? 0, through: through, author: author,
                                                                    store: store, schema: model.schema)
                }
                return includingRowValues ? try StoreCoordinator.withRowValues(transactions, db, schema: model.schema) : transactions
            }
        }
    }

    /// `transactions` with each inserted and updated row's values read through `db` (one
    /// statement per entity, in the caller's read transaction).
    static func withRowValues(_ transactions: [HistoryTransaction], _ db: Connection, schema: Schema) throws -> [HistoryTransaction] {
        var keys: [String: Set<Int64>] = [:]
        for transaction in transactions {
            for change in transaction.changes where change.kind != .delete {
                keys[change.objectID.entityName, default: []].insert(change.objectID.primaryKey)
            }
        }
        var rows: [ObjectID: HistoryRow] = [:]
        for (entity, wanted) in keys {
            guard let info = schema.infos[entity] else { continue }
            let statement = try db.cachedStatement(info.selectByKeysSQL)
            try statement.bind(StoreCoordinator.jsonKeys(Array(wanted)), at: 1)
            defer { statement.reset() }
            while try statement.step() {
                let key = statement.int64(at: 0)
                let row = RowSnapshot(statement: statement, info: info)
                var attributes: [String: AttributeValue?] = [:]
                for (index, attribute) in info.attributes.enumerated() { attributes[attribute.name] = .some(row.attributes[index]) }
                var toOnes: [String: ObjectID?] = [:]
                for (index, relationship) in info.toOnes.enumerated() {
                    toOnes[relationship.name] = .some(row.toOnes[index].map { ObjectID(entity: info.toOneDestinationNames[index], primaryKey: $0) })
                }
                rows[ObjectID(entity: info.internedName, primaryKey: key)] = HistoryRow(attributes: attributes, toOnes: toOnes)
            }
        }
        return transactions.map { transaction in
            HistoryTransaction(token: transaction.token, date: transaction.date, kind: transaction.kind, author: transaction.author,
                               contextName: transaction.contextName, processName: transaction.processName, processID: transaction.processID,
                               changes: transaction.changes.map { change in
                                   var change = change
                                   if change.kind != .delete { change.row = rows[change.objectID] }
                                   return change
                               })
        }
    }

    /// The last token of the page after `after`: the transactions must follow `after` without a
    /// gap (else ``HistoryError/expired(token:oldestKept:)``); the page ends before the first gap,
    /// after `limit` transactions, or at the store's generation. `nil`: nothing after `after`.
    static func contiguousEnd(_ db: Connection, after: Int64?, store: UUID, storeGeneration: Int64, limit: Int?) throws -> Int64? {
        var sql = "SELECT token FROM strata_history WHERE token > ? ORDER BY token"
        if let limit { sql += " LIMIT \(limit)" }
        let select = try db.prepare(sql)
        try select.bind(after ?? 0, at: 1)
        var check = ContiguousTokens(after: after, store: store)
        var last: Int64?
        while try select.step() {
            let token = select.int64(at: 0)
            guard try check.admits(token) else { break }
            last = token
        }
        try check.finish(storeGeneration: storeGeneration)
        return last
    }

    /// The rule both reads of the history keep: the tokens after `after` (a page of them) follow
    /// it without a gap. The first one missing means the log does not reach back (expiry); a gap
    /// after that ends the page before it.
    struct ContiguousTokens {
        let after: Int64?
        let store: UUID
        private var expected: Int64?
        private(set) var admitted = 0

        init(after: Int64?, store: UUID) {
            self.after = after
            self.store = store
            expected = after.map { $0 + 1 }
        }

        /// Whether `token` belongs to the page (`false`: a gap, the page ends before it).
        mutating func admits(_ token: Int64) throws -> Bool {
            if let wanted = expected, token != wanted {
                // The first transaction after the token is missing: the log does not reach back.
                guard admitted > 0 else {
                    throw HistoryError.expired(token: HistoryToken(store: store, generation: after ?? 0),
                                               oldestKept: HistoryToken(store: store, generation: token))
                }
                return false
            }
            admitted += 1
            expected = token + 1
            return true
        }

        /// After the last token read: commits after `after` and none of them in the log expire it.
        func finish(storeGeneration: Int64) throws {
            if admitted == 0, let after, after < storeGeneration {
                throw HistoryError.expired(token: HistoryToken(store: store, generation: after), oldestKept: nil)
            }
        }
    }

    /// The token of the store's last commit: the history after it is empty until the next.
    public func currentHistoryToken() throws -> HistoryToken {
        let store = storeUUID
        let metadata = try withReader { db in try StoreCoordinator.readMetadata(db) }
        return HistoryToken(store: store, generation: metadata.generation, lineage: metadata.nonce)
    }

    /// The oldest transaction the history keeps, or `nil`.
    static func oldestToken(_ db: Connection, store: UUID) throws -> HistoryToken? {
        let select = try db.cachedStatement("SELECT min(token) FROM strata_history")
        defer { select.reset() }
        guard try select.step(), !select.isNull(at: 0) else { return nil }
        let token = select.int64(at: 0)
        select.reset()
        return HistoryToken(store: store, generation: token, lineage: try HistoryLog.lineage(db, at: token))
    }

    /// Deletes the transactions before `token` (not `token`'s own): what a reader that has
    /// processed `token` no longer needs.
    public func deleteHistory(before token: HistoryToken) throws {
        try refuseWriteIfReadOnly("deleting history")
        let store = storeUUID
        if token.store != store { throw HistoryError.tokenOfAnotherStore(token: token, store: store) }
        try withConnection { db in try db.transaction(.immediate) { try HistoryLog.delete(db, through: token.generation - 1) } }
    }

    /// Deletes the transactions committed before `date`.
    public func deleteHistory(before date: Date) throws {
        try refuseWriteIfReadOnly("deleting history")
        try withConnection { db in
            try db.transaction(.immediate) {
                let last = try db.cachedStatement("SELECT max(token) FROM strata_history WHERE time < ?")
                try last.bind(date.timeIntervalSince1970, at: 1)
                defer { last.reset() }
                guard try last.step(), !last.isNull(at: 0) else { return }
                try HistoryLog.delete(db, through: last.int64(at: 0))
            }
        }
    }

    /// What following other connections did (see ``HistoryOptions/followsOtherConnections``).
    public var externalChangeStatistics: ExternalChangeStatistics { external.state.withLock { $0.statistics } }

    /// `contiguous` (unfiltered reads only): the tokens are checked on the way, as
    /// ``contiguousEnd(_:after:store:storeGeneration:limit:)`` checks them (one scan, not two);
    /// `limit` caps the page.
    static func readHistory(_ db: Connection, after: Int64, through: Int64?, author: String?,
                            contiguous: (check: ContiguousTokens, storeGeneration: Int64)? = nil, limit: Int? = nil,
                            store: UUID, schema: Schema) throws -> [HistoryTransaction] {
        let lineage = try HistoryLog.hasLineageColumn(db) ? "nonce" : "NULL"
        var sql = "SELECT token, time, kind, author, context, process, pid, \(lineage) FROM strata_history WHERE token > ?1"
        if through != nil { sql += " AND token <= ?2" }
        if author != nil { sql += " AND author = ?3" }
        sql += " ORDER BY token"
        if let limit { sql += " LIMIT \(limit)" }
        let select = try db.prepare(sql)
        try select.bind(after, at: 1)
        if let through { try select.bind(through, at: 2) }
        if let author { try select.bind(author, at: 3) }
        struct Head { let token: Int64, time: Double, kind: HistoryTransaction.Kind, author: String?, context: String?, process: String, pid: Int32
                      let lineage: Data? }
        var heads: [Head] = []
        if let contiguous { heads.reserveCapacity(Int(min(limit.map(Int64.init) ?? (contiguous.storeGeneration - after), 1 << 20))) }
        // Plain loops, not `forEachRow` closures: the state they change would be captured, and
        // every access to it checked for exclusivity at run time.
        let row = select
        var check = contiguous?.check
        while try row.step() {
            if check != nil, try !check!.admits(row.int64(at: 0)) { break }
            // A kind this build does not know is a record it can't read, never a save.
            let kind = try row.withBytes(at: 2, asText: true) { bytes throws -> HistoryTransaction.Kind in
                if JSONScanner.equal(bytes, "save") { return .save }
                let name = String(decoding: bytes, as: UTF8.self)
                guard let kind = HistoryTransaction.Kind(rawValue: name) else {
                    throw HistoryError.undecodableRecord(token: row.int64(at: 0), reason: "unknown transaction kind \"\(name)\"")
                }
                return kind
            }
            heads.append(Head(token: row.int64(at: 0), time: row.double(at: 1),
                              kind: kind,
                              author: row.isNull(at: 3) ? nil : row.string(at: 3), context: row.isNull(at: 4) ? nil : row.string(at: 4),
                              process: row.string(at: 5), pid: Int32(truncatingIfNeeded: row.int64(at: 6)),
                              lineage: row.isNull(at: 7) ? nil : row.data(at: 7)))
        }
        if let check, let contiguous { try check.finish(storeGeneration: contiguous.storeGeneration) }
        guard let first = heads.first, let last = heads.last else { return [] }
        // The changes of heads[i] in changes[i]: the rows come ordered by token, as the heads.
        var changes = [[HistoryChange]](repeating: [], count: heads.count)
        let filtered = author != nil
        let rows = try db.prepare("SELECT token, entity, op, keys, data FROM strata_history_change WHERE token BETWEEN ? AND ? ORDER BY token, seq")
        try rows.bind(first.token, at: 1)
        try rows.bind(last.token, at: 2)
        var index = 0
        var entity: EntityInfo?
        // Where an object's change is in changes[index]: a scan of a short list, a dictionary
        // (made once) for a long one (a batch request's rows).
        var lookup: [ObjectID: Int] = [:]
        var lookupHead = -1
        while try rows.step() {
            let row = rows
            let token = row.int64(at: 0)
            while index < heads.count, heads[index].token < token { index += 1 }
            // Not one of the heads read: another author's transaction.
            guard index < heads.count, heads[index].token == token else {
                guard filtered else {
                    throw HistoryError.undecodableRecord(token: token, reason: "a change of a transaction strata_history does not list")
                }
                continue
            }
            let entry: HistoryEntry
            do {
                entry = try HistoryEntry(row, schema: schema, last: entity)
            } catch let failure as HistoryJSON.Failure {
                throw HistoryError.undecodableRecord(token: token, reason: failure.reason)
            }
            entity = entry.info
            let op = entry.op, name = entry.info.internedName
            let values = entry.values?.listed(by: op)
            for key in entry.keys {
                let change = HistoryChange(objectID: ObjectID(entity: name, primaryKey: key), kind: op, values: values)
                // One object's records in one transaction (its values, its members) are one change.
                var at: Int?
                if op == .update {
                    if changes[index].count <= 8 {
                        at = changes[index].firstIndex { $0.objectID == change.objectID }
                    } else {
                        if lookupHead != index {
                            lookup = [:]
                            for (at, change) in changes[index].enumerated() where lookup[change.objectID] == nil { lookup[change.objectID] = at }
                            lookupHead = index
                        }
                        at = lookup[change.objectID]
                    }
                }
                if let at {
                    changes[index][at] = changes[index][at].combined(with: change)
                } else {
                    if lookupHead == index { lookup[change.objectID] = changes[index].count }
                    changes[index].append(change)
                }
            }
        }
        return heads.indices.map { i in
            let head = heads[i]
            return HistoryTransaction(token: HistoryToken(store: store, generation: head.token, lineage: head.lineage),
                                      date: Date(timeIntervalSince1970: head.time), kind: head.kind, author: head.author,
                                      contextName: head.context, processName: head.process, processID: head.pid, changes: changes[i])
        }
    }

    // MARK: Following other connections

    /// Starts following other connections' commits (at open), unless the options say not to.
    func startFollowing() {
        guard historyOptions.followsOtherConnections, let url else { return }
        let follower = ExternalChangeFollower(self)
        external.follower.withLock { $0 = follower }
        follower.start(path: url.path, pollInterval: historyOptions.pollInterval)
    }

    /// How a catch-up brings the contexts another connection's commits (an *external change*).
    enum CatchUp {
        /// The follower: the history's rows are merged, as a sibling context's save is; it
        /// stops quietly once the coordinator closed (``close()`` sets `stopped` under
        /// `external.lock`, so no catch-up reads after it) or while paused.
        case mergeRows
        /// ``processExternalChanges()``: the contexts are told which entities changed, as it
        /// always has (an object with pending changes whose row went elsewhere stays until its
        /// save finds out, where a merge takes it out).
        case tellEntities
    }

    /// Brings every context up to date with the commits other connections made since the last
    /// look: by `mode` when the history reaches back that far, else by telling the contexts
    /// which entities changed (a re-run). Returns the entities changed elsewhere.
    @discardableResult
    func catchUpWithExternalChanges(_ mode: CatchUp) throws -> Set<String> {
        try external.lock.withLock {
            if mode == .mergeRows, external.state.withLock({ $0.stopped || $0.paused }) { return [] }
            return try catchUpLocked(mode)
        }
    }

    private func catchUpLocked(_ mode: CatchUp) throws -> Set<String> {
        let fromHistory = mode == .mergeRows
        let known = external.state.withLock { ($0.generation, $0.entityGenerations, $0.nonce) }
        let schema = model.schema
        let writer = writerID
        let identity = (uuid: storeUUID, modelHash: model.versionHash)
        let found: ExternalCommits? = try withFollowReader { db in
            // Most notices are this coordinator's own commits, already seen: one row read.
            let generation = try db.cachedStatement("SELECT generation, nonce, store_uuid FROM strata_meta WHERE id = 1")
            let current = try generation.step() ? (generation.int64(at: 0), generation.data(at: 1), generation.string(at: 2)) : nil
            generation.reset()
            if let current, current.0 == known.0, current.1 == known.2, current.2 == identity.uuid.uuidString { return nil }
            return try db.transaction(.deferred) {
                let metadata = try StoreCoordinator.readMetadata(db)
                var commits = ExternalCommits(generation: metadata.generation, entityGenerations: metadata.entityGenerations)
                commits.nonce = metadata.nonce
                // Is it still the store this coordinator follows? Another UUID (replaced), another
                // model (migrated elsewhere), a lower generation, or the same one with another
                // nonce or another history record at it (an older copy restored and committed to).
                if metadata.modelHash != identity.modelHash {
                    commits.identity = .modelChanged(metadata)
                    return commits
                }
                var replaced = metadata.storeUUID != identity.uuid || metadata.generation < known.0
                    || (metadata.generation == known.0 && metadata.nonce != known.2)
                if !replaced, metadata.generation > known.0, try HistoryLog.exists(db) {
                    replaced = try HistoryLog.lineage(db, at: known.0).map { $0 != known.2 } ?? false
                }
                if replaced {
                    commits.identity = .replaced(metadata)
                    return commits
                }
                guard metadata.generation != known.0 else { return nil }
                guard fromHistory, metadata.generation > known.0, try HistoryLog.exists(db) else { return commits }
                do {
                    try commits.read(db, after: known.0, writer: writer, schema: schema)
                } catch let error as HistoryError {
                    // A record this build can't read: the contexts hear which entities changed
                    // (a re-run), and the next catch-up starts after this generation, so one
                    // record never stops following.
                    commits = ExternalCommits(generation: metadata.generation, entityGenerations: metadata.entityGenerations)
                    commits.nonce = metadata.nonce
                    commits.undecodable = error.description
                }
                return commits
            }
        }
        guard let found else { return [] }
        switch found.identity {
        case .same: break
        case .replaced(let metadata):
            storeWasReplacedElsewhere(metadata)
            return Set(metadata.entityGenerations.keys)
        case .modelChanged(let metadata):
            modelChangedElsewhere(metadata)
            return []
        }
        let changed = Set(found.entityGenerations.filter { known.1[$0.key] != $0.value }.keys)
        external.state.withLock { state in
            if found.generation >= state.generation { state.nonce = found.nonce }
            state.generation = max(state.generation, found.generation)
            state.entityGenerations = found.entityGenerations
        }
        // The statistics move once the contexts have their news queued, and the caches their
        // refreshes: a caller that sees them and then waits for those queues sees the work done.
        defer {
            external.state.withLock { state in
                state.statistics.generation = max(state.statistics.generation, found.generation)
                if let reason = found.undecodable {
                    state.statistics.undecodableCatchUps += 1
                    state.statistics.lastUndecodableRecord = reason
                }
                if found.complete {
                    state.statistics.transactionsMerged += found.transactions.count
                    state.statistics.rowsMerged += found.rows.inserted.count + found.rows.updated.count + found.rows.deleted.count
                } else if fromHistory {
                    state.statistics.reruns += 1
                }
            }
        }
        // Who hears: exactly who hears the same commit made in this process. A save reaches the
        // roots that merge others' saves (automaticallyMergesChangesFromParent) and, through
        // them, their merging children; a batch request reaches every context. So the rows go to
        // the merging roots, and the contexts outside their reach hear of the batch requests
        // only, as of a batch request here (see "Who hears a commit" in HistoryAndOtherProcesses).
        // When the history can't name the rows, every context hears which entities changed.
        let effects: CommitEffects
        if found.complete {
            guard !found.transactions.isEmpty else { return [] }
            let commits = found.transactions.map { token, touched, keys in
                CommitEffects.Commit(generation: token, touched: touched) { entities in keys.filter { entities.contains($0.key) } }
            }
            effects = CommitEffects(origin: .otherConnections, commits: commits,
                                    news: .merge(found.rows, generation: found.generation, batchEntities: found.batchEntities, rerun: found.rerun))
        } else {
            effects = CommitEffects(origin: .otherConnections, commits: [], news: .changed(changed))
        }
        afterCommit(effects)
        return found.complete ? found.transactions.reduce(into: Set<String>()) { $0.formUnion($1.1) } : changed
    }

    /// Another connection replaced the store under this coordinator (another UUID, an older
    /// copy restored): this coordinator takes the store as it is now, and every context drops its
    /// objects, pending changes included (none is saved over an unrelated row that has its key
    /// now), and posts ``ContextEvent/reload(_:)`` with ``ReloadReason/storeReplaced``, as
    /// ``replaceStore(withContentsOf:)`` through this coordinator does. Under `external.lock`.
    private func storeWasReplacedElsewhere(_ metadata: StoreMetadata) {
        adoptIdentity(of: metadata)
        external.state.withLock { state in
            state.generation = metadata.generation
            state.entityGenerations = metadata.entityGenerations
            state.nonce = metadata.nonce
        }
        caches.scheduleRefreshes(touching: Set(metadata.entityGenerations.keys))
        for context in contexts.all() {
            context.enqueue { context.storeWasReplaced() }
        }
        // Counted once the contexts have it queued: a caller that sees it and waits for their
        // queues sees them reloaded.
        external.state.withLock { state in
            state.statistics.generation = metadata.generation
            state.statistics.replacements += 1
        }
    }

    /// Another process migrated the store to another model: nothing more is read with this
    /// one. Following stops; every read and write throws ``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)``.
    private func modelChangedElsewhere(_ metadata: StoreMetadata) {
        let error = StoreError.modelMismatch(path: url?.path ?? ":memory:", storeVersion: metadata.modelVersion, storeHash: metadata.modelHash,
                                             modelVersion: model.versionIdentifier, modelHash: model.versionHash)
        identityProblem.withLock { $0 = error }
        external.state.withLock { $0.stopped = true }
        external.follower.withLock { $0 }?.stop()
        for context in contexts.all() {
            context.enqueue { context.storeWasReplaced() }
        }
        external.state.withLock { $0.statistics.modelChangedElsewhere = true }
    }

    /// Runs `body` on the follower's own reader (under `external.lock`): its reads stay out of the
    /// pool and out of ``statistics``. A store without readers reads on the writer.
    private func withFollowReader<T>(_ body: (Connection) throws -> T) throws -> T {
        guard let readers else { return try withConnection(body) }
        do {
            let reader = try external.reader ?? readers.openDetached()
            external.reader = reader
            defer { reader.endReads() }
            return try body(reader)
        } catch let error as SQLiteError {
            throw StoreError(error, path: readers.path)
        }
    }

    /// Pauses following other connections (a test that must choose when news arrives, as the
    /// controllers' model test does for its other routes); resuming catches up at once.
    @_spi(Testing) public func setFollowingPaused(_ paused: Bool) {
        external.state.withLock { $0.paused = paused }
        if !paused { external.follower.withLock { $0 }?.notice() }
    }

    /// After this coordinator's own commit made `generation` (the lock held, COMMIT done): when
    /// the follower had seen everything before it, it needn't read this one back.
    func noteOwnCommit(generation: Int64, touched: Set<String>) {
        external.state.withLock { state in
            let nonce = state.ownNonces[generation]
            state.ownNonces = state.ownNonces.filter { $0.key > generation }
            guard let nonce else { return }
            guard state.generation == generation - 1 else { return }
            state.generation = generation
            state.nonce = nonce
            state.statistics.generation = generation
            for entity in touched { state.entityGenerations[entity] = generation }
        }
    }
}

/// Other connections' commits since a generation, as the follower reads them: rows to merge,
/// and what the section caches' logs note.
struct ExternalCommits {
    let generation: Int64
    let entityGenerations: [String: Int64]
    /// Whether the history lists every commit since the last look (else: a re-run).
    var complete = false
    /// Why the history since the last look could not be read (a record this build can't decode).
    var undecodable: String?
    /// Whether the store is still the one followed.
    enum Identity { case same, replaced(StoreMetadata), modelChanged(StoreMetadata) }
    var identity = Identity.same
    /// The store's nonce (see ``FollowState``).
    var nonce = Data()
    /// Per other connection's transaction: token, entities, keys by entity.
    var transactions: [(Int64, Set<String>, [String: [Int64]])] = []
    var rows = RowChanges()
    /// Entities other connections' batch requests changed (contexts that hear no merge are told
    /// of these, as of a batch request made here).
    var batchEntities: Set<String> = []
    /// Entities whose to-many members can't be told from the history (a batch update of a
    /// to-one): contexts read them again.
    var rerun: Set<String> = []

    init(generation: Int64, entityGenerations: [String: Int64]) {
        self.generation = generation
        self.entityGenerations = entityGenerations
    }

    mutating func read(_ db: Connection, after last: Int64, writer: Data, schema: Schema) throws {
        let heads = try db.cachedStatement("SELECT token, writer, kind FROM strata_history WHERE token > ? AND token <= ? ORDER BY token")
        try heads.bind(last, at: 1)
        try heads.bind(generation, at: 2)
        var expected = last + 1
        var theirs = Set<Int64>()
        var batchTokens = Set<Int64>()
        var ordered: [Int64] = []
        var contiguous = true
        defer { heads.reset() }
        while try heads.step() {
            let token = heads.int64(at: 0)
            guard let kind = HistoryTransaction.Kind(rawValue: heads.string(at: 2)) else {
                throw HistoryError.undecodableRecord(token: token, reason: "unknown transaction kind \"\(heads.string(at: 2))\"")
            }
            if token != expected || kind == .migration { contiguous = false }
            expected = token + 1
            if heads.data(at: 1) != writer {
                theirs.insert(token)
                ordered.append(token)
                if kind != .save { batchTokens.insert(token) }
            }
        }
        guard contiguous, expected == generation + 1 else { return }
        complete = true
        guard !theirs.isEmpty else { return }
        // Every change of their transactions, in order; then each named row as it is now.
        var inserted = Set<ObjectID>(), updated = Set<ObjectID>(), deleted = Set<ObjectID>()
        var touchedMembers = Set<ObjectID>()
        var perTransaction: [Int64: (Set<String>, [String: [Int64]])] = [:]
        let select = try db.cachedStatement("SELECT token, entity, op, keys, data FROM strata_history_change WHERE token > ? AND token <= ? ORDER BY token, seq")
        try select.bind(last, at: 1)
        try select.bind(generation, at: 2)
        defer { select.reset() }
        while try select.step() {
            let token = select.int64(at: 0)
            guard theirs.contains(token) else { continue }
            let entry: HistoryEntry
            do {
                entry = try HistoryEntry(select, schema: schema)
            } catch let failure as HistoryJSON.Failure {
                throw HistoryError.undecodableRecord(token: token, reason: failure.reason)
            }
            perTransaction[token, default: ([], [:])].0.insert(entry.info.name)
            if batchTokens.contains(token) { batchEntities.insert(entry.info.name) }
            perTransaction[token, default: ([], [:])].1[entry.info.name, default: []] += entry.keys.array
            let ids = entry.keys.map { ObjectID(entity: entry.info.internedName, primaryKey: $0) }
            switch entry.op {
            case .insert: inserted.formUnion(ids)
            case .update: updated.formUnion(ids)
            case .delete: deleted.formUnion(ids)
            }
            touchedMembers.formUnion(entry.previousDestinations)
            for index in entry.toOnesWithoutPrevious { rerun.insert(entry.info.toOnes[index].destination) }
            if let members = entry.touchedMembers {
                touchedMembers.formUnion(members)
                touchedMembers.formUnion(ids)
            }
        }
        transactions = ordered.map { ($0, perTransaction[$0]?.0 ?? [], perTransaction[$0]?.1 ?? [:]) }
        // Rows as they are now (this read transaction): a row named and gone was deleted by a
        // later transaction of the same batch, which names it too.
        var byEntity: [String: [Int64]] = [:]
        for id in inserted.union(updated).subtracting(deleted) { byEntity[id.entityName, default: []].append(id.primaryKey) }
        for (entity, keys) in byEntity.sorted(by: { $0.key < $1.key }) {
            guard let info = schema.infos[entity] else { continue }
            let statement = try db.cachedStatement(info.selectByKeysSQL)
            try statement.bind(StoreCoordinator.jsonKeys(keys), at: 1)
            defer { statement.reset() }
            var found = Set<Int64>()
            while try statement.step() {
                let key = statement.int64(at: 0)
                let row = RowSnapshot(statement: statement, info: info)
                let id = ObjectID(entity: info.internedName, primaryKey: key)
                found.insert(key)
                if inserted.contains(id) { rows.inserted.append((id, row)) } else { rows.updated.append((id, row)) }
                // The to-many members its to-ones are part of.
                for (i, inverse) in info.toOneInverseSlots.enumerated() {
                    guard case .toMany? = inverse, let destination = row.toOnes[i] else { continue }
                    touchedMembers.insert(ObjectID(entity: info.toOneDestinationNames[i], primaryKey: destination))
                }
            }
            for key in keys where !found.contains(key) { deleted.insert(ObjectID(entity: info.internedName, primaryKey: key)) }
        }
        rows.deleted = deleted
        rows.toManyTouched = touchedMembers.subtracting(deleted)
    }
}
