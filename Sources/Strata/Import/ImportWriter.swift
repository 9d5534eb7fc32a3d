internal import Foundation
internal import StrataSQLite

/// One batch of an import, inside its transaction: each parsed row checked as a save checks an
/// object, then inserted, written over the stored row that holds its key, or left alone.
///
/// The common cases take one statement a row, as raw SQLite's `INSERT … ON CONFLICT` does: a
/// row no key is held by is one `INSERT … ON CONFLICT DO NOTHING` (it inserts); a row whose key
/// is held is one look-up by that key, which reads the holder and compares it with the row in
/// place (no change: nothing more). Which of the two a row tries first follows the row before:
/// an import into an empty store inserts, one over a full store finds its rows. Only a row that
/// changes a stored one makes `AttributeValue`s: the holder's row and the merged one, for the
/// update and its history record.
struct ImportWriter {
    let info: EntityInfo
    private let db: Connection
    private let insert: Statement
    /// Per unique key, the match key first: the holder's row, found by the key's values.
    private let lookups: [Statement]
    private let keys: [[String]]
    private let keySlots: [[Int]]
    /// Per slot (attributes, then to-ones): the run's column that gives it, or -1 (a JSON Lines
    /// row that brings a new member plans it again).
    var slotColumn: [Int]
    private let attributeCount: Int
    private let slotCount: Int
    /// Each attribute's default (nil: none), what a slot no column gives takes in an insert.
    private let defaults: [AttributeValue?]
    private let recordsHistory: Bool
    /// Whether the row before found its key held (this row looks up before it inserts).
    private var lookupFirst = false
    private(set) var nextKey: Int64
    private(set) var insertedKeys: [Int64] = []
    private(set) var updatedKeys: [Int64] = []
    private(set) var updateRecords: [(Int64, String)] = []
    private(set) var unchanged = 0
    /// Each to-one's destination keys written (checked to exist before the commit).
    private(set) var destinations: [KeySet]

    enum Outcome {
        case inserted, updated, unchanged
        case rejected([ValidationFailure])
    }

    /// - Parameter slotColumn: per slot, the column of the run's rows that gives it (-1: none).
    init(db: Connection, info: EntityInfo, matchKey: [String], slotColumn: [Int], firstKey: Int64, recordsHistory: Bool) throws {
        self.db = db
        self.info = info
        self.slotColumn = slotColumn
        self.recordsHistory = recordsHistory
        attributeCount = info.attributes.count
        slotCount = attributeCount + info.toOnes.count
        defaults = info.attributeDefaults
        nextKey = firstKey
        destinations = Array(repeating: KeySet(), count: info.toOnes.count)
        var keys = [matchKey]
        for key in info.uniqueKeys where !keys.contains(key) { keys.append(key) }
        self.keys = keys
        let attributeCount = info.attributes.count
        keySlots = keys.map { key in
            key.compactMap { name -> Int? in
                switch info.slot(name) {
                case .attribute(let index)?: index
                case .toOne(let index)?: attributeCount + index
                default: nil
                }
            }
        }
        insert = try db.cachedStatement(info.insertSQL + " ON CONFLICT DO NOTHING")
        lookups = try keys.map { key in
            try db.cachedStatement(info.selectSQL + " WHERE " + key.map { "\(quoted($0)) = ?" }.joined(separator: " AND "))
        }
    }

    // MARK: A row

    /// Checks `row` and writes it.
    mutating func write(_ row: ImportRow) throws -> Outcome {
        if let failures = check(row) { return .rejected(failures) }
        if !lookupFirst, try tryInsert(row) { return .inserted }
        // Its key is held (or the row before's was): find the holder.
        var holder: Int64?
        var secondHolder: Int64?
        var matchedFirst = false
        var heldKey = 0
        var merged: (old: RowSnapshot, new: RowSnapshot)?
        var differs = false
        for (k, slots) in keySlots.enumerated() {
            let lookup = lookups[k]
            guard try bindKey(slots, row, to: lookup) else { continue }
            defer { lookup.reset() }
            guard try lookup.step() else { continue }
            let found = lookup.int64(at: 0)
            if let holder {
                if found != holder, secondHolder == nil { secondHolder = found }
                continue
            }
            holder = found
            heldKey = k
            matchedFirst = k == 0
            differs = !isStored(row, in: lookup)
            if differs { merged = mergedRows(row, lookup) }
        }
        guard let holder else {
            lookupFirst = false
            // A key with a nil part is held by no row (SQLite's unique indexes take NULLs as
            // distinct), so only a unique index the model does not declare can refuse it.
            guard try tryInsert(row) else {
                throw BatchError.uniqueKeyConflict(entity: info.name, key: keys[0], values: ["a unique index the model does not declare"])
            }
            return .inserted
        }
        lookupFirst = true
        // Its keys name two rows, or the match key finds none while another key finds a row
        // (it can't become that row: it would change its match key): no row it can become.
        if secondHolder != nil || !matchedFirst {
            let id = ObjectID(entity: info.internedName, primaryKey: secondHolder ?? holder)
            let message = secondHolder.map { "its keys are held by two rows (\(holder) and \($0))" } ?? "another row holds it"
            return .rejected([ValidationFailure(objectID: id, key: keys[heldKey].joined(separator: ","), rule: .unique, message: message)])
        }
        guard differs, let (old, new) = merged, new != old else {
            unchanged += 1
            return .unchanged
        }
        _ = try StoreCoordinator.forceUpdate(db, info, holder, new)
        updatedKeys.append(holder)
        if recordsHistory, let data = HistoryLog.updateData(info, new: new, old: old) { updateRecords.append((holder, data)) }
        for t in info.toOnes.indices where new.toOnes[t] != old.toOnes[t] { if let d = new.toOnes[t] { destinations[t].insert(d) } }
        return .updated
    }

    /// Inserts `row` unless one of its keys is held; true when it inserted.
    private mutating func tryInsert(_ row: ImportRow) throws -> Bool {
        try insert.bind(nextKey, at: 1)
        for slot in 0..<slotCount { try bind(slot, row, to: insert, at: Int32(truncatingIfNeeded: slot &+ 2)) }
        try insert.execute()
        guard db.changes > 0 else { return false }
        insertedKeys.append(nextKey)
        nextKey += 1
        for t in 0..<(slotCount - attributeCount) {
            let column = slotColumn[attributeCount + t]
            if column >= 0, row.kinds[column] == .integer { destinations[t].insert(row.integers[column]) }
        }
        return true
    }

    // MARK: Slots

    /// Whether the row gives slot `slot` (a value or none), rather than leaving it to its default.
    @inline(__always)
    private func column(_ slot: Int, _ row: ImportRow) -> Int? {
        let column = slotColumn[slot]
        return column >= 0 && row.kinds[column] != .absent ? column : nil
    }

    @inline(__always)
    private func bind(_ slot: Int, _ row: ImportRow, to statement: Statement, at index: Int32) throws {
        if let column = column(slot, row) {
            try row.bind(column, to: statement, at: index)
        } else if slot < attributeCount {
            try RowSnapshot.bind(defaults[slot], to: statement, at: index)
        } else {
            try statement.bindNull(at: index)
        }
    }

    private func isNil(_ slot: Int, _ row: ImportRow) -> Bool {
        if let column = column(slot, row) { return row.kinds[column] == .null }
        return slot >= attributeCount || defaults[slot] == nil
    }

    /// Binds a key's values to its look-up; false when a part has no value (a key with a nil
    /// part is held by no row).
    private func bindKey(_ slots: [Int], _ row: ImportRow, to lookup: Statement) throws -> Bool {
        for (position, slot) in slots.enumerated() {
            if isNil(slot, row) { return false }
            try bind(slot, row, to: lookup, at: Int32(position + 1))
        }
        return true
    }

    /// Whether every slot the row gives equals the holder's (the look-up's current row: the
    /// primary key, then the slots, from column 1).
    private func isStored(_ row: ImportRow, in lookup: Statement) -> Bool {
        for slot in 0..<slotCount {
            guard let column = column(slot, row) else { continue }
            if !row.equals(column, lookup, at: Int32(truncatingIfNeeded: slot &+ 1)) { return false }
        }
        return true
    }

    /// The holder's row, and that row with the slots the row gives set to its values.
    private func mergedRows(_ row: ImportRow, _ lookup: Statement) -> (RowSnapshot, RowSnapshot) {
        let old = RowSnapshot(statement: lookup, info: info)
        var new = old
        for slot in 0..<slotCount {
            guard let column = column(slot, row) else { continue }
            if slot < attributeCount {
                new.setAttribute(row.value(column, as: info.attributeTypes[slot]), at: slot)
            } else {
                new.setToOne(row.kinds[column] == .integer ? row.integers[column] : nil, at: slot - attributeCount)
            }
        }
        return (old, new)
    }

    /// The row's failures as a save's check of the completed row (its defaults in the slots it
    /// does not give) finds them; nil when it has none.
    private func check(_ row: ImportRow) -> [ValidationFailure]? {
        if info.attributeRules.isEmpty,
           info.requiredAttributes.allSatisfy({ !isNil($0, row) }),
           info.requiredToOnes.allSatisfy({ !isNil(attributeCount + $0, row) }) {
            return nil
        }
        let failures = ManagedObjectContext.rowFailures(
            info: info, id: ObjectID(entity: info.internedName, primaryKey: nextKey),
            hasAttribute: { !isNil($0, row) },
            ruledValue: { slot in
                if let column = column(slot, row) { return row.value(column, as: info.attributeTypes[slot]) }
                return defaults[slot]
            },
            hasToOne: { !isNil(attributeCount + $0, row) })
        return failures.isEmpty ? nil : failures
    }
}
