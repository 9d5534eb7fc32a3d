internal import Foundation
internal import StrataSQLite

/// What a save does with an inserted object whose unique key (``Entity/uniqueKeys``) a stored
/// row already holds.
public enum UniqueKeyConflictResolution: Sendable, Equatable {
    /// The object *becomes* that row (SwiftData's upsert): it takes the row's ``ObjectID`` and is
    /// saved as an update of it, its values merged over the row's by the context's
    /// ``ManagedObjectContext/mergePolicy`` (`.storeWinsPerProperty` and `.rollback` keep the
    /// row's values, the others write the object's). The default.
    case upsert
    /// The save throws ``UniqueKeyConflictError`` and leaves every context as it was (Core
    /// Data's default).
    case fail
}

/// A save met a unique key already held by another row: the entity, the key's properties and
/// its values (as text). Nothing was saved.
public struct UniqueKeyConflictError: Error, Sendable, Equatable, CustomStringConvertible {
    public var entity: String
    public var key: [String]
    public var values: [String]

    public init(entity: String, key: [String], values: [String]) {
        self.entity = entity
        self.key = key
        self.values = values
    }

    public var description: String {
        "\(entity)'s unique key (\(key.joined(separator: ", "))) = (\(values.joined(separator: ", "))) is already held by another row"
    }
}

/// How an adoption is taken back when the save it was made for fails.
struct UniqueKeyAdoption {
    struct Taken {
        let object: ManagedObject
        let oldKey: Int64
        let current: RowSnapshot
        let committed: RowSnapshot?
        let state: ManagedObject.LifecycleState
        /// The object this context had registered for the row, put aside.
        let displaced: ManagedObject?
    }
    var taken: [Taken] = []
    /// References rewritten: each object's to-ones and to-manys as they were.
    var references: [(ManagedObject, RowSnapshot, [ToManyState])] = []
    /// Earlier inserted objects a later one's values were merged into, with their values before.
    var mergedInto: [(ManagedObject, RowSnapshot)] = []
}

extension ManagedObjectContext {
    /// The unique-key rule of this context's saves (default ``UniqueKeyConflictResolution/upsert``).
    public var uniqueKeyConflicts: UniqueKeyConflictResolution {
        get { assertOnQueue(); return uniqueKeyResolution }
        set { assertOnQueue(); uniqueKeyResolution = newValue }
    }

    /// Before anything leaves this context: each inserted object whose unique key a stored row
    /// holds becomes that row (or the save throws, under ``UniqueKeyConflictResolution/fail``).
    /// Two objects inserted with one key in one save: the later one's values go to the earlier.
    func adoptUniqueKeyHolders() throws -> UniqueKeyAdoption {
        var adoption = UniqueKeyAdoption()
        let candidates = inserted.values.filter { !$0.info.uniqueKeys.isEmpty }.sorted { $0.primaryKey < $1.primaryKey }
        guard !candidates.isEmpty else { return adoption }
        // Keys the objects of this save hold, per entity: key values → primary key.
        var claimed: [ObjectIdentifier: [[AttributeValue]: Int64]] = [:]
        var renamed: [UInt: [Int64: Int64]] = [:]
        do {
            for object in candidates where object.state == .inserted {
                let info = object.info
                var holder: Int64?
                var conflict: (names: [String], values: [AttributeValue])?
                var keys: [[AttributeValue]] = []
                for key in info.uniqueKeys {
                    let slots = key.compactMap { info.slot($0) }
                    let values = slots.compactMap { object.current.value(of: $0) }
                    guard values.count == key.count else { continue }
                    let tagged = [.string(key.joined(separator: ","))] + values
                    keys.append(tagged)
                    if holder == nil, let mine = claimed[ObjectIdentifier(info)]?[tagged] {
                        holder = mine
                        conflict = (key, values)
                    } else if holder == nil, let stored = try storedHolder(info, key, values), stillHolds(info, stored) {
                        holder = stored
                        conflict = (key, values)
                    }
                }
                guard let holder, let conflict else {
                    for tagged in keys { claimed[ObjectIdentifier(info), default: [:]][tagged] = object.primaryKey }
                    continue
                }
                if uniqueKeyResolution == .fail {
                    throw UniqueKeyConflictError(entity: info.name, key: conflict.names, values: conflict.values.map(\.plainText))
                }
                try take(object, holder, &adoption)
                renamed[info.internedName.address, default: [:]][adoption.taken.last!.oldKey] = holder
            }
            if !renamed.isEmpty { rewriteReferences(renamed, &adoption) }
        } catch {
            undo(adoption)
            throw error
        }
        return adoption
    }

    /// Whether the stored row `key` still holds its key when this save inserts: not when this
    /// context deletes it (the commit deletes rows before it inserts).
    private func stillHolds(_ info: EntityInfo, _ key: Int64) -> Bool {
        registered[ObjectID(entity: info.internedName, primaryKey: key)]?.state != .deleted
    }

    /// The stored row that holds `values` as `key`, read through the coordinator (committed rows).
    private func storedHolder(_ info: EntityInfo, _ key: [String], _ values: [AttributeValue]) throws -> Int64? {
        try coordinator.withReader { db in
            let select = try db.cachedStatement("SELECT \(quoted(primaryKeyColumn)) FROM \(info.table) WHERE "
                + key.map { "\(quoted($0)) = ?" }.joined(separator: " AND ") + " LIMIT 1")
            for (position, value) in values.enumerated() { try RowSnapshot.bind(value, to: select, at: Int32(position + 1)) }
            defer { select.reset() }
            return try select.step() ? select.int64(at: 0) : nil
        }
    }

    /// `object` (inserted) becomes the row `holder`: an update of it, values merged by policy.
    private func take(_ object: ManagedObject, _ holder: Int64, _ adoption: inout UniqueKeyAdoption) throws {
        let info = object.info
        let oldID = object.objectID
        let newID = ObjectID(entity: info.internedName, primaryKey: holder)
        let displaced = registered[newID]
        if let displaced, displaced !== object, displaced.state == .inserted {
            // Two objects inserted with one key in this save: the later one's values go to the
            // earlier (which stays inserted), the later leaves the context.
            let mine = object.current
            adoption.taken.append(.init(object: object, oldKey: object.primaryKey, current: object.current, committed: object.committed,
                                        state: object.state, displaced: nil))
            if !keepsStoredValues {
                adoption.mergedInto.append((displaced, displaced.current))
                displaced.current = merge(mine, over: displaced.current, info)
            }
            _ = inserted.removeValue(forKey: oldID)
            _ = registered.removeValue(forKey: oldID)
            object.state = .invalid
            return
        }
        if let displaced, displaced.state != .clean {
            throw UniqueKeyConflictError(entity: info.name, key: info.entity.uniqueKeys.first ?? [],
                                         values: ["the row \(holder) has unsaved changes in this context"])
        }
        // The row as the parent (or the store) holds it: what the update is checked against.
        guard let row = try parentRow(for: newID) else {
            throw UniqueKeyConflictError(entity: info.name, key: info.entity.uniqueKeys.first ?? [], values: ["the row \(holder) is gone"])
        }
        adoption.taken.append(.init(object: object, oldKey: object.primaryKey, current: object.current, committed: object.committed,
                                    state: object.state, displaced: displaced))
        _ = inserted.removeValue(forKey: oldID)
        _ = registered.removeValue(forKey: oldID)
        if let displaced { _ = registered.removeValue(forKey: newID); displaced.state = .invalid }
        object.primaryKey = holder
        object.current = keepsStoredValues ? row : merge(object.current, over: row, info)
        object.current.version = row.version
        object.committed = row
        object.state = .updated
        registered[newID] = object
        updated[newID] = object
    }

    /// Under `.storeWinsPerProperty` and `.rollback` the stored row's values stay.
    private var keepsStoredValues: Bool { policy == .storeWinsPerProperty || policy == .rollback }

    /// `mine`'s attributes and to-ones over `row` (its version kept).
    private func merge(_ mine: RowSnapshot, over row: RowSnapshot, _ info: EntityInfo) -> RowSnapshot {
        var merged = row
        for index in info.attributes.indices { merged.setAttribute(mine.attribute(index), at: index) }
        for index in info.toOnes.indices { merged.setToOne(mine.toOnes[index], at: index) }
        return merged
    }

    /// Every reference this context's objects hold to a renamed object now names its row.
    private func rewriteReferences(_ renamed: [UInt: [Int64: Int64]], _ adoption: inout UniqueKeyAdoption) {
        for object in registered.values where !object.isFault {
            let info = object.info
            var current = object.current
            var toMany = object.toMany
            var changed = false
            for (index, destination) in info.toOneDestinationNames.enumerated() {
                guard let map = renamed[destination.address], let key = current.toOnes[index], let new = map[key] else { continue }
                current.setToOne(new, at: index)
                changed = true
            }
            for (index, destination) in info.toManyDestinationNames.enumerated() {
                guard let map = renamed[destination.address] else { continue }
                let added = toMany[index].added
                guard added.contains(where: { map[$0] != nil }) else { continue }
                toMany[index].added = Set(added.map { map[$0] ?? $0 })
                changed = true
            }
            guard changed else { continue }
            adoption.references.append((object, object.current, object.toMany))
            object.current = current
            object.toMany = toMany
        }
    }

    /// Puts back what an adoption changed (its save failed).
    func undo(_ adoption: UniqueKeyAdoption) {
        for (object, current) in adoption.mergedInto.reversed() { object.current = current }
        for (object, current, toMany) in adoption.references.reversed() {
            object.current = current
            object.toMany = toMany
        }
        for taken in adoption.taken.reversed() {
            let object = taken.object
            let now = object.objectID
            if object.state != .invalid {
                _ = updated.removeValue(forKey: now)
                _ = registered.removeValue(forKey: now)
            }
            object.primaryKey = taken.oldKey
            object.current = taken.current
            object.committed = taken.committed
            object.state = taken.state
            registered[object.objectID] = object
            inserted[object.objectID] = object
            if let displaced = taken.displaced {
                displaced.state = .clean
                registered[displaced.objectID] = displaced
            }
        }
    }
}
