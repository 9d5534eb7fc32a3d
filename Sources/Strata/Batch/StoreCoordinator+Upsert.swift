internal import Foundation
internal import StrataSQLite

// A batch insert of an entity with unique keys (an upsert): row by row, each read back whole from
// an echo of its bindings, then inserted, written over the stored row that holds its key, or left
// alone. One transaction; no commit when no row changed. (A library import has its own writer,
// `ImportWriter`, which binds from the file's bytes.)
extension StoreCoordinator {
    func upsert<Result>(_ request: BatchInsertRequest<Result>, info: EntityInfo) throws -> BatchResult {
        let count = Int64(request.count)
        let touched: Set<String> = [info.name]
        let uniqueSlots: [(names: [String], slots: [Slot])] = info.uniqueKeys.map { key in
            (key, key.compactMap { info.slot($0) })
        }
        let outcome: (BatchResult, committed: Bool) = try withConnection { db in
            let outcome: (BatchResult, Bool) = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: StoreCoordinator.batchOrigin)
                let first = try firstFreeKey(db, info)
                let insert = try db.cachedStatement(info.insertSQL)
                // Each key's look-up reads the holder's row whole (one statement, not a key then a row).
                let lookups = try uniqueSlots.map { key in
                    try db.cachedStatement(info.selectSQL + " WHERE " + key.names.map { "\(quoted($0)) = ?" }.joined(separator: " AND "))
                }
                var row = BatchRow<Result>(BatchRowValues(info: info, statement: try db.cachedStatement(info.echoSQL)))
                var failures: [ValidationFailure] = []
                var result = BatchResult(entityName: info.name, objectIDs: [], generation: nil, touchedEntities: touched)
                var insertedKeys: [Int64] = [], updatedKeys: [Int64] = []
                var updateRecords: [(Int64, String)] = []
                var destinations = Array(repeating: KeySet(), count: info.toOnes.count)
                let slotCount = info.attributes.count + info.toOnes.count
                var isSet = [Bool](repeating: false, count: slotCount)
                for index in 0..<request.count {
                    if index > 0 { row.base.nextRow() }
                    try request.fill(index, &row)
                    let key = first + Int64(index)
                    // What the fill set, before `complete` gives the rest their defaults.
                    for slot in 0..<slotCount { isSet[slot] = row.base.isSet(slot) }
                    var rowFailures: [ValidationFailure] = []
                    try row.base.complete(key: key, into: &rowFailures)
                    if !rowFailures.isEmpty {
                        failures += rowFailures
                        continue
                    }
                    guard failures.isEmpty else { continue }
                    let new = try row.base.echo(key: key)
                    // The stored rows that hold one of its keys (a key with a nil part holds none).
                    var holders: [Int64] = []
                    var holderRow: RowSnapshot?
                    // The first key found held, and its values: made text only for an error or a
                    // reject (each row of an import over a full store has one; their text was
                    // 6% of that import's time).
                    var conflict: (key: Int, values: [AttributeValue?])?
                    for (k, key) in uniqueSlots.enumerated() {
                        let values = key.slots.map { new.value(of: $0) }
                        guard values.allSatisfy({ $0 != nil }) else { continue }
                        let lookup = lookups[k]
                        for (position, value) in values.enumerated() { try RowSnapshot.bind(value, to: lookup, at: Int32(position + 1)) }
                        defer { lookup.reset() }
                        if try lookup.step() {
                            let holder = lookup.int64(at: 0)
                            if holderRow == nil, request.onConflict == .update { holderRow = RowSnapshot(statement: lookup, info: info) }
                            if !holders.contains(holder) { holders.append(holder) }
                            if conflict == nil { conflict = (k, values) }
                        }
                    }
                    guard let holder = holders.first else {
                        try insert.bind(key, at: 1)
                        try new.execute(insert, from: 2)
                        insertedKeys.append(key)
                        for t in info.toOnes.indices { if let d = new.toOnes[t] { destinations[t].insert(d) } }
                        continue
                    }
                    guard holders.count == 1, request.onConflict != .fail, conflict != nil else {
                        let shown = conflict ?? (0, [])
                        throw BatchError.uniqueKeyConflict(entity: info.name, key: uniqueSlots[shown.key].names,
                                                           values: shown.values.map { $0.map(\.plainText) ?? "nil" })
                    }
                    guard request.onConflict == .update else {
                        result.unchanged += 1
                        continue
                    }
                    guard let old = holderRow else { preconditionFailure("an update's look-up read the holder's row") }
                    var merged = old
                    for slot in 0..<slotCount where isSet[slot] {
                        if slot < info.attributes.count {
                            merged.setAttribute(new.attribute(slot), at: slot)
                        } else {
                            merged.setToOne(new.toOnes[slot - info.attributes.count], at: slot - info.attributes.count)
                        }
                    }
                    guard merged != old else {
                        result.unchanged += 1
                        continue
                    }
                    _ = try StoreCoordinator.forceUpdate(db, info, holder, merged)
                    updatedKeys.append(holder)
                    if historyOptions.isEnabled, let data = HistoryLog.updateData(info, new: merged, old: old) {
                        updateRecords.append((holder, data))
                    }
                    for t in info.toOnes.indices where merged.toOnes[t] != old.toOnes[t] { if let d = merged.toOnes[t] { destinations[t].insert(d) } }
                }
                if !failures.isEmpty {
                    failures.sort { ($0.objectID, $0.key) < ($1.objectID, $1.key) }
                    throw ValidationError(failures: failures)
                }
                // No dangling key: each distinct destination looked up once.
                for (index, relationship) in info.toOnes.enumerated() where !destinations[index].isEmpty {
                    let missing = try missingDestinations(db, info, index, destinations[index])
                    if missing > 0 { throw BatchError.missingDestinations(entity: info.name, key: relationship.name, count: missing) }
                }
                result.inserted = insertedKeys.count
                result.updated = updatedKeys.count
                result.objectIDs = (insertedKeys + updatedKeys).sorted().map { ObjectID(entity: info.internedName, primaryKey: $0) }
                // Nothing changed: nothing written, no commit stamped (the checkpoint waits for a batch that writes).
                guard !insertedKeys.isEmpty || !updatedKeys.isEmpty else { return (result, false) }
                if !insertedKeys.isEmpty {
                    try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE name = ?").execute(.integer(first + count), .text(info.name))
                }
                KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                // The inserts first: a row inserted by this request and then written over by a
                // later row of it reads, in the history, as inserted, then updated.
                var history = HistoryLog.Record(kind: .batchInsert, author: transactionAuthor, context: nil)
                if historyOptions.isEnabled {
                    history.add(info.name, .insert, insertedKeys)
                    for (key, data) in updateRecords { history.add(info.name, .update, [key], data) }
                }
                let (generation, _) = try stampCommit(db, touching: touched, origin: StoreCoordinator.batchOrigin, history: history)
                result.generation = generation
                return (result, true)
            }
            if outcome.1, let generation = outcome.0.generation { finishBatch(touched: touched, deleted: [], generation: generation) }
            return outcome
        }
        return outcome.0
    }
}

extension RowSnapshot {
    /// A unique key part's value: an attribute's, or a to-one's destination key as an integer.
    func value(of slot: Slot) -> AttributeValue? {
        switch slot {
        case .attribute(let index): attribute(index)
        case .toOne(let index): toOnes[index].map { .int64($0) }
        case .toMany: nil
        }
    }
}

extension AttributeValue {
    /// The value as a person reads it in an error: a string without quotes.
    var plainText: String {
        if case .string(let text) = self { return text }
        return "\(self)"
    }
}
