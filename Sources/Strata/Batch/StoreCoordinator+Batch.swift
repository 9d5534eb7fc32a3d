internal import Foundation
internal import StrataSQLite

// Batch requests: one transaction each, no objects, the same stamps as a save's commit, then the
// news to every context (see BatchRequests.swift).
extension StoreCoordinator {
    /// Kill points inside a batch's transaction are named `batch.<point>`.
    static let batchOrigin = "batch"

    /// Inserts the request's rows in one transaction and merges them into every context (a
    /// results controller whose request they match reports them as inserts).
    ///
    /// - Throws: ``ValidationError`` (the rows' IDs are the keys they would have had),
    ///   ``ObjectError`` for a wrong key or value, ``BatchError/missingDestinations(entity:key:count:)``.
    ///   Nothing is written when it throws.
    @discardableResult
    public func execute<Result>(_ request: BatchInsertRequest<Result>) throws -> BatchResult {
        try refuseWriteIfReadOnly("a batch request")
        guard let info = model.schema.infos[request.entityName] else { throw ObjectError.unknownEntity(request.entityName) }
        let count = Int64(request.count)
        guard count > 0 else { return BatchResult(entityName: info.name, objectIDs: [], generation: nil, touchedEntities: []) }
        // Unique keys, or an import's rejects and checkpoint: row by row (StoreCoordinator+Upsert.swift).
        if !info.uniqueKeys.isEmpty {
            return try upsert(request, info: info)
        }
        let touched: Set<String> = [info.name]
        let (first, generation): (Int64, Int64) = try withConnection { db in
            let committed: (Int64, Int64) = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: StoreCoordinator.batchOrigin)
                // The keys: a block past every key handed out or stored, as reservePrimaryKey takes one.
                let first = try firstFreeKey(db, info)
                try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE name = ?").execute(.integer(first + count), .text(info.name))
                let insert = try db.cachedStatement(info.insertSQL)
                var failures: [ValidationFailure] = []
                // The distinct keys each to-one points at, checked once each below.
                var destinations = Array(repeating: KeySet(), count: info.toOnes.count)
                // The key each to-one last added: rows in a batch often repeat their neighbour's
                // destination, and a repeat needs no hash.
                var lastDestinations = [Int64?](repeating: nil, count: info.toOnes.count)
                // One row, bound as it is filled (see `BatchRowValues`).
                var row = BatchRow<Result>(BatchRowValues(info: info, statement: insert))
                for index in 0..<request.count {
                    if index > 0 { row.base.nextRow() }
                    try request.fill(index, &row)
                    let key = first + Int64(index)
                    try row.base.complete(key: key, into: &failures)
                    guard failures.isEmpty else { continue }
                    try row.base.insert(key: key)
                    for t in 0..<row.base.toOneCount {
                        if let destination = row.base.toOneKey(t), destination != lastDestinations[t] {
                            destinations[t].insert(destination)
                            lastDestinations[t] = destination
                        }
                    }
                }
                if !failures.isEmpty {
                    // In a save's order: by object ID, then key.
                    failures.sort { ($0.objectID, $0.key) < ($1.objectID, $1.key) }
                    throw ValidationError(failures: failures)
                }
                // No dangling key: each distinct key looked up once (an anti-join over the new rows
                // looked up every row's: a third of SQLite's work in a batch insert of flights);
                // when one is missing, the anti-join counts the rows that name it, for the error.
                for (index, relationship) in info.toOnes.enumerated() where !destinations[index].isEmpty {
                    guard let destination = model.schema.infos[relationship.destination],
                          try missingDestinations(db, info, index, destinations[index]) > 0 else { continue }
                    let column = quoted(info.toOnes[index].name)
                    let dangling = try db.cachedStatement("""
                        SELECT count(*) FROM \(info.table) WHERE \(quoted(primaryKeyColumn)) BETWEEN ? AND ? AND \(column) IS NOT NULL \
                        AND NOT EXISTS (SELECT 1 FROM \(destination.table) AS d WHERE d.\(quoted(primaryKeyColumn)) = \(column))
                        """)
                    try dangling.bind(first, at: 1)
                    try dangling.bind(first + count - 1, at: 2)
                    _ = try dangling.step()
                    let missing = dangling.int64(at: 0)
                    dangling.reset()
                    if missing > 0 { throw BatchError.missingDestinations(entity: info.name, key: relationship.name, count: Int(missing)) }
                }
                KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                var history = HistoryLog.Record(kind: .batchInsert, author: transactionAuthor, context: nil)
                if historyOptions.isEnabled { history.add(info.name, .insert, Array(first..<(first + count))) }
                let (generation, _) = try stampCommit(db, touching: touched, origin: StoreCoordinator.batchOrigin, history: history)
                return (first, generation)
            }
            finishBatch(touched: touched, deleted: [], generation: committed.1)
            return committed
        }
        let ids = (first..<(first + count)).map { ObjectID(entity: info.internedName, primaryKey: $0) }
        return BatchResult(entityName: info.name, objectIDs: ids, generation: generation, touchedEntities: touched)
    }

    /// Sets the request's properties in every row it selects that does not already hold them, in
    /// one `UPDATE` (each changed row's version bumped), and merges the new values into every
    /// context. The result lists the rows that changed.
    ///
    /// - Throws: ``ValidationError`` (a value breaking a rule, reported against the first
    ///   selected row), ``ObjectError``, ``PredicateTranslationError``, ``BatchError``. Nothing
    ///   is written when it throws.
    @discardableResult
    public func execute<Result>(_ request: BatchUpdateRequest<Result>) throws -> BatchResult {
        try refuseWriteIfReadOnly("a batch request")
        let plan = try FetchPlan(request.fetchRequest.untyped, schema: model.schema)
        let info = plan.info
        var template = RowSnapshot(defaultsOf: info)
        var attributeIndexes: [Int] = []
        var toOneIndexes: [Int] = []
        for (key, value) in request.propertiesToUpdate.sorted(by: { $0.key < $1.key }) {
            try template.assign(value, forKey: key, info: info)
            switch info.slot(key) {
            case .attribute(let index)?: attributeIndexes.append(index)
            case .toOne(let index)?: toOneIndexes.append(index)
            default: break
            }
        }
        guard !attributeIndexes.isEmpty || !toOneIndexes.isEmpty else {
            return BatchResult(entityName: info.name, objectIDs: [], generation: nil, touchedEntities: [])
        }
        // The rules the new values must keep (a required property cleared, a bound broken).
        let probe = ObjectID(entity: info.internedName, primaryKey: 0)
        let failures = ManagedObjectContext.rowFailures(template, info: info, id: probe).filter { failure in
            attributeIndexes.contains { info.attributes[$0].name == failure.key } || toOneIndexes.contains { info.toOnes[$0].name == failure.key }
        }
        let touched: Set<String> = [info.name]
        let result: ([Int64], Int64?) = try withConnection { db in
            let committed: ([Int64], Int64?) = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: StoreCoordinator.batchOrigin)
                // The selected rows' keys are read first only where they are needed: for a
                // window (limit, offset), or to name a row in an error. Otherwise the UPDATE
                // selects the rows itself (one statement, no list of keys through JSON).
                let windowed = plan.request.fetchLimit != nil || plan.request.fetchOffset > 0
                var selected: [Int64]?
                func keys() throws -> [Int64] {
                    if let selected { return selected }
                    let keys = try selectedKeys(db, plan)
                    selected = keys
                    return keys
                }
                if windowed, try keys().isEmpty { return ([], nil) }
                if !failures.isEmpty {
                    guard let first = try keys().first else { return ([], nil) }
                    throw ValidationError(failures: failures.map {
                        ValidationFailure(objectID: ObjectID(entity: info.internedName, primaryKey: first), key: $0.key, rule: $0.rule, message: $0.message)
                    })
                }
                for index in toOneIndexes {
                    guard let destinationKey = template.toOnes[index], let destination = model.schema.infos[info.toOnes[index].destination] else { continue }
                    let exists = try db.cachedStatement("SELECT 1 FROM \(destination.table) WHERE \(quoted(primaryKeyColumn)) = ?")
                    try exists.bind(destinationKey, at: 1)
                    let present = try exists.step()
                    exists.reset()
                    if !present {
                        let count = try keys().count
                        guard count > 0 else { return ([], nil) }
                        throw BatchError.missingDestinations(entity: info.name, key: info.toOnes[index].name, count: count)
                    }
                }
                var arguments: [SQLiteValue] = windowed ? [.text(StoreCoordinator.jsonKeys(try keys()))] : plan.arguments
                var assignments: [String] = []
                var differences: [String] = []
                func assign(_ column: String, _ value: SQLiteValue) {
                    arguments.append(value)
                    assignments.append("\(quoted(column)) = ?\(arguments.count)")
                    differences.append("\(quoted(column)) IS NOT ?\(arguments.count)")
                }
                for index in attributeIndexes { assign(info.attributes[index].name, template.attributes[index]?.storageValue ?? .null) }
                for index in toOneIndexes { assign(info.toOnes[index].name, template.toOnes[index].map(SQLiteValue.integer) ?? .null) }
                assignments.append("\(quoted(versionColumn)) = \(quoted(versionColumn)) + 1")
                // Only rows that change: a row that already holds the values keeps its version
                // and is no news (no context refreshes it, no list reports it as updated).
                let changes = "(\(differences.joined(separator: " OR ")))"
                let filter = windowed
                    ? " WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?1)) AND " + changes
                    : plan.whereSQL(and: changes)
                // The changed rows' keys come from SQLite's update hook as it writes them: an
                // UPDATE … RETURNING costs a second pass over an ephemeral table (2.4× a plain
                // UPDATE's instructions), a SELECT of the same rows first a second scan (1.5×).
                let update = try db.prepare("UPDATE \(info.table) AS t0 SET \(assignments.joined(separator: ", "))" + filter)
                try update.bind(arguments)
                let (_, changed) = try db.rowIDs(changedIn: info.name, by: .update) { try update.execute() }
                guard !changed.isEmpty else { return ([], nil) }
                KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                let keys = changed.sorted()
                var history = HistoryLog.Record(kind: .batchUpdate, author: transactionAuthor, context: nil)
                if historyOptions.isEnabled {
                    // One record for every row: they all took the same values. (What their to-ones
                    // named before is not read: a follower reads those entities again.)
                    var set = attributeIndexes.map { HistoryLog.quote(info.attributes[$0].name) + ":" + HistoryLog.encode(template.attributes[$0]) }
                    set += toOneIndexes.map { HistoryLog.quote(info.toOnes[$0].name) + ":" + (template.toOnes[$0].map { String($0) } ?? "null") }
                    history.add(info.name, .update, keys, "{\"set\":{" + set.joined(separator: ",") + "}}")
                }
                let (generation, _) = try stampCommit(db, touching: touched, origin: StoreCoordinator.batchOrigin, history: history)
                return (keys, generation)
            }
            if let generation = committed.1 { finishBatch(touched: touched, deleted: [], generation: generation) }
            return committed
        }
        guard let generation = result.1 else {
            return BatchResult(entityName: info.name, objectIDs: [], generation: nil, touchedEntities: [])
        }
        return BatchResult(entityName: info.name, objectIDs: result.0.map { ObjectID(entity: info.internedName, primaryKey: $0) },
                           generation: generation, touchedEntities: touched)
    }

    /// Deletes the rows the request selects, applying the delete rules that need no objects (see
    /// ``BatchDeleteRequest``), and takes their objects out of every context.
    ///
    /// - Throws: ``BatchError`` for a rule that needs objects or refuses, ``PredicateTranslationError``,
    ///   ``ObjectError``. Nothing is written when it throws.
    @discardableResult
    public func execute<Result>(_ request: BatchDeleteRequest<Result>) throws -> BatchResult {
        try refuseWriteIfReadOnly("a batch request")
        guard let info = model.schema.infos[request.entityName] else { throw ObjectError.unknownEntity(request.entityName) }
        let plan: FetchPlan?
        switch request.selection {
        case .request(let fetch): plan = try FetchPlan(fetch.untyped, schema: model.schema)
        case .ids(_, let ids):
            plan = nil
            if let stranger = ids.first(where: { $0.entityName != info.name }) {
                throw ObjectError.wrongType(entity: info.name, key: "objectIDs", expected: "IDs of \(info.name)", actual: "an ID of \(stranger.entityName)")
            }
        }
        // Whether a delete rule or a join table needs the keys before the rows go (to refuse, to
        // nullify the other side, to remove join rows).
        let needsKeysFirst = try info.entity.relationships.contains { relationship in
            guard let related = try relatedSQL(info, relationship) else { return false }
            switch relationship.deleteRule {
            case .noAction: return false
            case .deny, .cascade: return true
            case .nullify: return related.nullify != nil || related.inverseIsRequired
            }
        } || info.toManyStorage.contains { if case .joinTable = $0 { true } else { false } }
        // Attributes kept in the history's record of a delete are read before the rows go.
        let keepsValues = historyOptions.isEnabled && HistoryLog.keepsValues(info)
        let result: ([Int64], Int64?, Set<String>) = try withConnection { db in
            let committed: ([Int64], Int64?, Set<String>) = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: StoreCoordinator.batchOrigin)
                var history = HistoryLog.Record(kind: .batchDelete, author: transactionAuthor, context: nil)
                if let plan, plan.windowSQL.isEmpty, !needsKeysFirst, !keepsValues {
                    // Nothing to check or write beside the rows: one DELETE by the request's own
                    // condition, as a plain DELETE is, with the keys from SQLite's update hook.
                    let keys = try deleteSelected(db, plan)
                    guard !keys.isEmpty else { return ([], nil, []) }
                    KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                    if historyOptions.isEnabled { history.add(info.name, .delete, keys) }
                    let (generation, _) = try stampCommit(db, touching: [info.name], origin: StoreCoordinator.batchOrigin, history: history)
                    return (keys, generation, [info.name])
                }
                let keys: [Int64]
                if let plan {
                    keys = try selectedKeys(db, plan)
                } else if case .ids(_, let ids) = request.selection {
                    // Only the rows still there.
                    let statement = try db.cachedStatement("SELECT \(quoted(primaryKeyColumn)) FROM \(info.table) "
                        + "WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?)) ORDER BY 1")
                    try statement.bind(StoreCoordinator.jsonKeys(ids.map(\.primaryKey)), at: 1)
                    var found: [Int64] = []
                    try statement.forEachRow { found.append($0.int64(at: 0)) }
                    keys = found
                } else {
                    keys = []
                }
                guard !keys.isEmpty else { return ([], nil, []) }
                // The keys as a JSON array, built only when a statement needs it.
                var jsonKeys: SQLiteValue?
                func json() -> SQLiteValue {
                    if let jsonKeys { return jsonKeys }
                    let value = SQLiteValue.text(StoreCoordinator.jsonKeys(keys))
                    jsonKeys = value
                    return value
                }
                var touched: Set<String> = [info.name]
                /// The rows `select` lists for the deleted keys.
                func count(_ select: String) throws -> Int {
                    let counter = try db.prepare("SELECT count(*) FROM (\(select))")
                    try counter.bind([json()])
                    _ = try counter.step()
                    defer { counter.reset() }
                    return Int(counter.int64(at: 0))
                }
                // Refusals first, so that nothing is changed when one applies.
                var nullifications: [(sql: String, destination: String, inverse: String?)] = []
                for relationship in info.entity.relationships {
                    guard let related = try relatedSQL(info, relationship) else { continue }
                    switch relationship.deleteRule {
                    case .noAction:
                        continue
                    case .deny, .cascade:
                        let n = try count(related.select)
                        guard n > 0 else { continue }
                        if relationship.deleteRule == .deny {
                            throw BatchError.denied(entity: info.name, relationship: relationship.name, related: n)
                        }
                        throw BatchError.cascadeNeedsObjects(entity: info.name, relationship: relationship.name, related: n)
                    case .nullify:
                        guard let nullify = related.nullify else { continue }
                        if related.inverseIsRequired {
                            let n = try count(related.select)
                            if n > 0 { throw BatchError.requiredInverse(entity: info.name, relationship: relationship.name, related: n) }
                        }
                        nullifications.append((nullify, relationship.destination, relationship.inverse))
                    }
                }
                // Whether anything but the rows themselves was written before their DELETE.
                var wroteOthers = false
                for (sql, destination, inverse) in nullifications {
                    // A join table's rows go (a DELETE: no update reported); a column is cleared (an
                    // UPDATE: its rows' keys, for the history).
                    let (changed, cleared) = try db.rowIDs(changedIn: destination, by: .update) { () throws -> Int in
                        try db.prepare(sql).execute(json())
                        return db.changes
                    }
                    if changed > 0 { touched.insert(destination); wroteOthers = true }
                    if historyOptions.isEnabled, let inverse, !cleared.isEmpty {
                        history.add(destination, .update, cleared.sorted(), "{\"set\":{" + HistoryLog.quote(inverse) + ":null}}")
                    }
                }
                if keepsValues {
                    // The kept attributes' last values, one record per row.
                    var rows: [(Int64, RowSnapshot)] = []
                    let select = try db.prepare(info.selectByKeysSQL + " ORDER BY 1")
                    try select.bind([json()])
                    try select.forEachRow { rows.append(($0.int64(at: 0), RowSnapshot(statement: $0, info: info))) }
                    for (key, row) in rows { history.add(info.name, .delete, [key], HistoryLog.deleteData(info, old: row)) }
                } else if historyOptions.isEnabled {
                    history.add(info.name, .delete, keys)
                }
                // Join rows go with their rows, whatever the rule (they are storage, not objects).
                for (index, relationship) in info.toManys.enumerated() {
                    guard case let .joinTable(table, own, _) = info.toManyStorage[index] else { continue }
                    try db.prepare("DELETE FROM \(table) WHERE \(own) IN (SELECT value FROM json_each(?))").execute(json())
                    if db.changes > 0 { touched.insert(relationship.destination); wroteOthers = true }
                }
                if let plan, plan.windowSQL.isEmpty, !wroteOthers {
                    // Nothing changed since the keys were selected, in this transaction: the
                    // request's own condition deletes exactly them, as a plain DELETE does (no
                    // JSON list to build, parse and look up: 1.42× → see the perf gate).
                    let deleted = try deleteSelected(db, plan)
                    guard deleted.count == keys.count else {
                        throw SQLiteError(code: .SQLITE_INTERNAL, message: "batch delete: \(deleted.count) rows deleted, \(keys.count) selected")
                    }
                } else {
                    try db.prepare("DELETE FROM \(info.table) WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?))").execute(json())
                }
                KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                let (generation, _) = try stampCommit(db, touching: touched, origin: StoreCoordinator.batchOrigin, history: history)
                return (keys, generation, touched)
            }
            if let generation = committed.1 {
                finishBatch(touched: committed.2, deleted: Set(committed.0.map { ObjectID(entity: info.internedName, primaryKey: $0) }), generation: generation)
            }
            return committed
        }
        guard let generation = result.1 else {
            return BatchResult(entityName: info.name, objectIDs: [], generation: nil, touchedEntities: [])
        }
        let ids = result.0.map { ObjectID(entity: info.internedName, primaryKey: $0) }
        return BatchResult(entityName: info.name, objectIDs: ids, generation: generation, touchedEntities: result.2)
    }

    /// Deletes the rows `plan` selects (no window) with its own condition, and returns their keys
    /// as SQLite's update hook reports them, in key order. (`WHERE 1` for every row: without a
    /// WHERE, SQLite truncates the table without reporting the rows to the hook.)
    private func deleteSelected(_ db: Connection, _ plan: FetchPlan) throws -> [Int64] {
        let delete = try db.prepare("DELETE FROM \(plan.info.table) AS t0" + (plan.whereSQL.isEmpty ? " WHERE 1" : plan.whereSQL))
        try delete.bind(plan.arguments)
        return try db.rowIDs(changedIn: plan.info.name, by: .delete) { try delete.execute() }.1.sorted()
    }

    /// The primary keys `plan` selects, in key order.
    private func selectedKeys(_ db: Connection, _ plan: FetchPlan) throws -> [Int64] {
        let statement = try db.prepare("SELECT k FROM (" + plan.selectSQL("t0.\(quoted(primaryKeyColumn)) AS k") + ") ORDER BY k")
        try statement.bind(plan.arguments)
        var keys: [Int64] = []
        try statement.forEachRow { keys.append($0.int64(at: 0)) }
        return keys
    }

    /// For a relationship of `info`'s rows whose keys are the JSON array `?1`: a SELECT of the
    /// related rows, the statement that nullifies their side (`nil`: nothing on their side to
    /// clear), and whether that side is a required to-one. `nil` when nothing can be related.
    private func relatedSQL(_ info: EntityInfo, _ relationship: Relationship) throws
        -> (select: String, nullify: String?, inverseIsRequired: Bool)? {
        guard let destination = model.schema.infos[relationship.destination] else { return nil }
        let pk = quoted(primaryKeyColumn)
        let keys = "(SELECT value FROM json_each(?1))"
        let inverse = relationship.inverse.flatMap { destination.entity.relationship(named: $0) }
        let version = quoted(versionColumn)
        if !relationship.isToMany {
            // Our column names the destination.
            let select = "SELECT \(quoted(relationship.name)) AS k FROM \(info.table) WHERE \(pk) IN \(keys) AND \(quoted(relationship.name)) IS NOT NULL"
            guard let inverse else { return (select, nil, false) }
            // A to-one's inverse to-many is derived from our column, which goes with the row.
            if inverse.isToMany { return (select, nil, false) }
            // One-to-one: their column names us.
            let nullify = "UPDATE \(destination.table) SET \(quoted(inverse.name)) = NULL, \(version) = \(version) + 1 WHERE \(quoted(inverse.name)) IN \(keys)"
            let theirs = "SELECT \(pk) FROM \(destination.table) WHERE \(quoted(inverse.name)) IN \(keys)"
            return (theirs, nullify, !inverse.isOptional)
        }
        guard let index = info.toManys.firstIndex(where: { $0.name == relationship.name }) else { return nil }
        switch info.toManyStorage[index] {
        case let .inverseColumn(table, column):
            let select = "SELECT \(pk) FROM \(table) WHERE \(column) IN \(keys)"
            let nullify = "UPDATE \(table) SET \(column) = NULL, \(version) = \(version) + 1 WHERE \(column) IN \(keys)"
            return (select, nullify, inverse.map { !$0.isOptional } ?? false)
        case let .joinTable(table, own, other):
            let select = "SELECT \(other) FROM \(table) WHERE \(own) IN \(keys)"
            return (select, "DELETE FROM \(table) WHERE \(own) IN \(keys)", false)
        }
    }

    /// After a batch commit (under the lock, COMMIT done): the section caches' logs note it with
    /// keys unknown (their next refresh re-runs the request), and every context reads the
    /// touched entities again.
    /// The first key past every key handed out (`strata_entity.next_pk`) or stored.
    func firstFreeKey(_ db: Connection, _ info: EntityInfo) throws -> Int64 {
        let select = try db.cachedStatement(StoreCoordinator.firstFreeKeySQL(info))
        try select.bind(info.name, at: 1)
        defer { select.reset() }
        guard try select.step() else { throw ObjectError.unknownEntity(info.name) }
        return select.int64(at: 0)
    }

    /// How many of `keys` (to-one `index`'s destinations) name no row.
    func missingDestinations(_ db: Connection, _ info: EntityInfo, _ index: Int, _ keys: KeySet) throws -> Int {
        guard let destination = model.schema.infos[info.toOnes[index].destination] else { return 0 }
        let present = try db.cachedStatement(
            "SELECT count(*) FROM \(destination.table) WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?))")
        try present.bind(StoreCoordinator.jsonKeys(keys.elements), at: 1)
        defer { present.reset() }
        _ = try present.step()
        return keys.count - Int(present.int64(at: 0))
    }

    func finishBatch(touched: Set<String>, deleted: Set<ObjectID>, generation: Int64) {
        afterCommit(CommitEffects(origin: .ownCommit, commits: [CommitEffects.Commit(generation: generation, touched: touched) { _ in nil }],
                                  news: .changed(touched, deleted: deleted, deletionsNamed: true)))
    }

    static func jsonKeys(_ keys: [Int64]) -> String {
        "[" + keys.map(String.init).joined(separator: ",") + "]"
    }
}

extension ManagedObjectContext {
    /// Runs a batch insert on this context's store (the coordinator's `execute(_:)`):
    /// the rows reach this context, and every other, as changes made elsewhere.
    @discardableResult
    public func execute<Result>(_ request: BatchInsertRequest<Result>) throws -> BatchResult {
        try coordinator.execute(request)
    }

    /// Runs a batch update on this context's store.
    @discardableResult
    public func execute<Result>(_ request: BatchUpdateRequest<Result>) throws -> BatchResult {
        try coordinator.execute(request)
    }

    /// Runs a batch delete on this context's store.
    @discardableResult
    public func execute<Result>(_ request: BatchDeleteRequest<Result>) throws -> BatchResult {
        try coordinator.execute(request)
    }
}
