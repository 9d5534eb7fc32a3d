internal import StrataSQLite

/// One save's commit inside its `BEGIN IMMEDIATE` transaction, as the steps it takes, in the
/// order ``StoreCoordinator/commit(_:policy:origin:author:)`` runs them:
///
/// 1. ``deleteRows()`` — each delete applies only to the row version the context read; a row
///    changed or deleted since is a conflict, resolved by the merge policy.
/// 2. ``deleteJoinRowsOfDeleted()`` — the many-to-many rows of the deleted objects.
/// 3. ``insertRows()`` — new rows, grouped by entity (one statement lookup per run).
/// 4. ``updateRows()`` — optimistic updates, conflicts resolved as for deletes.
/// 5. ``checkReferences()`` — no to-one names a row that is gone: the new and updated rows', and
///    rows saved elsewhere that still name a row this commit deletes (``DeletedRowReferences``).
/// 6. ``writeMembership()`` — many-to-many rows added and removed.
///
/// The history is one optional participant (``HistoryRecorder``, `nil` when the store keeps
/// none): each step hands it what it wrote. Nothing here commits, bumps the generation or
/// touches anything but `db`: the caller does that once every step succeeded.
struct CommitTransaction {
    private let db: Connection
    private let schema: Schema
    private let policy: MergePolicy
    private let changes: StoreChanges
    /// What the history records, the rows as they were written; `nil` without history.
    private(set) var history: HistoryRecorder?
    private(set) var resolutions: [ObjectID: Resolution] = [:]
    /// Conflicts the policy refused, and dangling references: the commit throws them.
    private(set) var conflicts: [MergeConflict] = []
    /// Whether any row changed: a save whose every change resolved to their version writes
    /// nothing and must not bump the generation.
    private(set) var wrote = false
    /// Keys of rows, by entity, whose to-one the commit cleared because it named a row the
    /// commit deleted (``DeletedRowReferences``).
    private(set) var nullified: [String: [Int64]] = [:]
    /// One statement lookup per entity, not per row: every parameter is bound for each row, so
    /// the statement is only reset between rows.
    private var statements: [ObjectIdentifier: Statement] = [:]
    private var danglingKeys: DanglingKeyCheck

    init(_ db: Connection, schema: Schema, policy: MergePolicy, changes: StoreChanges, history: HistoryRecorder?) {
        self.db = db
        self.schema = schema
        self.policy = policy
        self.changes = changes
        self.history = history
        danglingKeys = DanglingKeyCheck(db, inserting: changes.inserted, schema: schema)
    }

    /// Runs the policy on a row whose optimistic write found another version.
    private mutating func resolve(_ info: EntityInfo, _ key: Int64, original: RowSnapshot, ours: RowSnapshot?) throws -> (RowSnapshot?, ConflictOutcome?) {
        let theirs = try StoreCoordinator.readRow(db, info, key)
        let id = ObjectID(entity: info.internedName, primaryKey: key)
        do {
            return (theirs, try policy.resolve(info, id, original: original, ours: ours, theirs: theirs, stored: { theirs }))
        } catch let error as MergeConflictError {
            conflicts += error.conflicts
            return (theirs, .adoptDeletion)
        }
    }

    private mutating func statement(_ info: EntityInfo, _ sql: String) throws -> Statement {
        let key = ObjectIdentifier(info)
        if let statement = statements[key] { return statement }
        let statement = try db.cachedStatement(sql)
        statements[key] = statement
        return statement
    }

    mutating func deleteRows() throws {
        for (info, key, original) in changes.deleted {
            try db.cachedStatement(info.deleteSQL).execute(.integer(key), .integer(original.version))
            guard db.changes == 0 else {
                wrote = true
                history?.delete(info, key, original)
                continue
            }
            let id = ObjectID(entity: info.internedName, primaryKey: key)
            switch try resolve(info, key, original: original, ours: nil) {
            case (let theirs, nil), (let theirs, .delete?):
                try db.cachedStatement(info.forceDeleteSQL).execute(.integer(key))
                if db.changes > 0 {
                    wrote = true
                    history?.delete(info, key, theirs ?? original)
                }
            case (_, .adoptTheirs(let theirs)?):
                resolutions[id] = .adoptedTheirs(theirs)
            case (_, .adoptDeletion?), (_, .write?):
                resolutions[id] = .deletedByThem
            }
        }
    }

    mutating func deleteJoinRowsOfDeleted() throws {
        for (owner, table, column, key) in changes.joinRowsOfDeleted where resolutions[owner] == nil {
            try db.cachedStatement("DELETE FROM \(table) WHERE \(column) = ?").execute(.integer(key))
            wrote = wrote || db.changes > 0
        }
    }

    mutating func insertRows() throws {
        // Rows come grouped by entity: one lookup of the entity and its statement per run
        // (not per row: each took references to count).
        var entity: EntityInfo?
        var insert: Statement?
        for (id, row) in changes.inserted {
            if entity?.internedName !== id.entity {
                guard let info = schema.info(of: id) else { throw ObjectError.unknownEntity(id.entityName) }
                entity = info
                insert = try statement(info, info.insertSQL)
            }
            guard let insert, let entity else { preconditionFailure("a run of rows starts with its entity's INSERT") }
            try insert.bind(id.primaryKey, at: 1)
            do {
                try row.execute(insert, from: 2)
            } catch let error as SQLiteError {
                throw UniqueKeyConflictError(error, entity, row) ?? error
            }
            try danglingKeys.check(entity, id.primaryKey, row, original: nil)
            wrote = true
        }
        history?.inserted(changes.inserted)
        statements.removeAll(keepingCapacity: true)
    }

    mutating func updateRows() throws {
        for (info, key, row, original) in changes.updated {
            let update = try statement(info, info.updateSQL)
            try row.bind(to: update, from: 1)
            try update.bind(key, at: Int32(info.columns.count + 1))
            try update.bind(original.version, at: Int32(info.columns.count + 2))
            do {
                try update.execute()
            } catch let error as SQLiteError {
                throw UniqueKeyConflictError(error, info, row) ?? error
            }
            guard db.changes == 0 else {
                wrote = true
                history?.updated(info, key, new: row, old: original)
                continue
            }
            let id = ObjectID(entity: info.internedName, primaryKey: key)
            switch try resolve(info, key, original: original, ours: row) {
            case (let theirs, nil):
                resolutions[id] = .written(try StoreCoordinator.forceUpdate(db, info, key, row))
                wrote = true
                history?.updated(info, key, new: row, old: theirs ?? original)
            case (let theirs, .write(let merged)?):
                resolutions[id] = .written(try StoreCoordinator.forceUpdate(db, info, key, merged))
                wrote = true
                history?.updated(info, key, new: merged, old: theirs ?? original)
            case (_, .adoptTheirs(let theirs)?):
                resolutions[id] = .adoptedTheirs(theirs)
            case (_, .adoptDeletion?), (_, .delete?):
                resolutions[id] = .deletedByThem
            }
        }
    }

    mutating func checkReferences() throws {
        try danglingKeys.checkUpdated(changes.updated, resolutions)
        conflicts += danglingKeys.conflicts
        // The other direction: rows saved elsewhere since this context deleted their
        // destination still name it. Its delete rule reaches them here, in SQL.
        let ourDeletes = changes.deleted.filter { resolutions[ObjectID(entity: $0.0.internedName, primaryKey: $0.1)] == nil }
        let references = try DeletedRowReferences.resolve(db, schema: schema, deleted: ourDeletes.map { ($0.0, $0.1) })
        conflicts += references.conflicts
        nullified = references.nullified
        if !nullified.isEmpty { wrote = true }
    }

    mutating func writeMembership() throws {
        // Membership is not part of a row, so a row conflict does not drop it, unless one
        // side's row was deleted by someone else.
        func gone(_ id: ObjectID) -> Bool { resolutions[id] == .deletedByThem }
        for (owner, other, table, a, b) in changes.joinDeletes where !gone(owner) && !gone(other) {
            try db.cachedStatement("DELETE FROM \(table) WHERE \"a\" = ? AND \"b\" = ?").execute(.integer(a), .integer(b))
            wrote = wrote || db.changes > 0
            if db.changes > 0 { history?.link(owner, other, table, added: false, schema: schema) }
        }
        for (owner, other, table, a, b) in changes.joinInserts where !gone(owner) && !gone(other) {
            try db.cachedStatement("INSERT OR IGNORE INTO \(table) (\"a\", \"b\") VALUES (?, ?)").execute(.integer(a), .integer(b))
            wrote = wrote || db.changes > 0
            if db.changes > 0 { history?.link(owner, other, table, added: true, schema: schema) }
        }
    }
}

/// What one save's commit tells the history, gathered as the steps write: its record's
/// changes, deletes of entities that keep no values as one change per entity, and many-to-many
/// membership by owner. ``record()`` is the record `stampCommit` writes.
struct HistoryRecorder {
    private var history: HistoryLog.Record
    private var deletedKeys: [String: [Int64]] = [:]
    private var links = HistoryLinks()

    init(author: String?, context: String?) {
        history = HistoryLog.Record(kind: .save, author: author, context: context)
    }

    mutating func delete(_ info: EntityInfo, _ key: Int64, _ original: RowSnapshot) {
        if HistoryLog.keepsValues(info) {
            history.add(info.name, .delete, [key], HistoryLog.deleteData(info, old: original))
        } else {
            deletedKeys[info.name, default: []].append(key)
        }
    }

    /// Runs of one entity: one change each (their keys are mostly one range).
    mutating func inserted(_ rows: [(ObjectID, RowSnapshot)]) {
        var start = 0
        while start < rows.count {
            let entity = rows[start].0.entity
            var end = start
            while end < rows.count, rows[end].0.entity === entity { end += 1 }
            history.add(rows[start].0.entityName, .insert, rows[start..<end].map(\.0.primaryKey))
            start = end
        }
    }

    mutating func updated(_ info: EntityInfo, _ key: Int64, new: RowSnapshot, old: RowSnapshot) {
        if let data = HistoryLog.updateData(info, new: new, old: old) { history.add(info.name, .update, [key], data) }
    }

    mutating func link(_ owner: ObjectID, _ other: ObjectID, _ table: String, added: Bool, schema: Schema) {
        links.note(owner, other, table, added: added, schema: schema)
    }

    /// The record, with the deletes and links gathered so far.
    func record() -> HistoryLog.Record {
        var record = history
        for (entity, keys) in deletedKeys.sorted(by: { $0.key < $1.key }) { record.add(entity, .delete, keys) }
        links.record(into: &record)
        return record
    }
}

extension UniqueKeyConflictError {
    /// SQLite's `UNIQUE constraint failed: Entity.a, Entity.b` for a row of `info`, typed; `nil`
    /// for any other error.
    init?(_ error: SQLiteError, _ info: EntityInfo, _ row: RowSnapshot) {
        guard error.code.rawValue == 2067, let colon = error.message.range(of: "failed: ") else { return nil }
        let names = error.message[colon.upperBound...].split(separator: ",").map { part in
            String(part.trimmingCharacters(in: .whitespaces).split(separator: ".").last ?? "")
        }
        guard names.allSatisfy({ info.slot($0) != nil }) else { return nil }
        self.init(entity: info.name, key: names, values: names.map { name in
            info.slot(name).flatMap { row.value(of: $0) }.map(\.plainText) ?? "nil"
        })
    }
}
