internal import Foundation
@_spi(StrataSync) internal import Strata

/// A row as the fold keeps it: attribute values and to-one destination keys, by name.
struct FoldRow: Equatable {
    var attributes: [String: AttributeValue?]
    var toOnes: [String: Int64?]

    init(attributes: [String: AttributeValue?], toOnes: [String: Int64?]) {
        self.attributes = attributes
        self.toOnes = toOnes
    }

    init(_ row: HistoryRow) {
        attributes = row.attributes
        toOnes = row.toOnes.mapValues { $0?.primaryKey }
    }
}

/// What a fold reads rows from: the local base (``SyncBase``), or a snapshot from the server.
protocol FoldBase {
    func row(entity: String, key: Int64) throws -> FoldRow?
    func keys(entity: String, whereAttributes values: [(String, AttributeValue)]) throws -> [Int64]
    func keys(entity: String, whereToOne relationship: String, names key: Int64) throws -> [Int64]
}

/// The local base: the store, with the rows changed since the last apply as they were.
struct LocalBase: FoldBase {
    let base: SyncBase

    func row(entity: String, key: Int64) throws -> FoldRow? { try base.row(entity: entity, key: key).map(FoldRow.init) }
    func keys(entity: String, whereAttributes values: [(String, AttributeValue)]) throws -> [Int64] {
        try base.keys(entity: entity, whereAttributes: values)
    }
    func keys(entity: String, whereToOne relationship: String, names key: Int64) throws -> [Int64] {
        try base.keys(entity: entity, whereToOne: relationship, names: key)
    }
}

/// A snapshot of the server's state read from the server (a replica behind its compacted log).
final class SnapshotBase: FoldBase {
    let rows: [ObjectID: FoldRow]
    private var byEntity: [String: [Int64]] = [:]

    init(rows: [ObjectID: FoldRow]) {
        self.rows = rows
        for id in rows.keys { byEntity[id.entityName, default: []].append(id.primaryKey) }
    }

    func row(entity: String, key: Int64) throws -> FoldRow? { rows[ObjectID(entityName: entity, primaryKey: key)] }

    func keys(entity: String, whereAttributes values: [(String, AttributeValue)]) throws -> [Int64] {
        (byEntity[entity] ?? []).filter { key in
            guard let row = rows[ObjectID(entityName: entity, primaryKey: key)] else { return false }
            return values.allSatisfy { row.attributes[$0.0] == .some($0.1) }
        }
    }

    func keys(entity: String, whereToOne relationship: String, names key: Int64) throws -> [Int64] {
        (byEntity[entity] ?? []).filter { rows[ObjectID(entityName: entity, primaryKey: $0)]?.toOnes[relationship] == .some(key) }
    }
}

/// The server's log folded onto the base (the state this replica last applied, which is the
/// server's state at its pulled position): the rules of <doc:SyncingWithPostgreSQL>, in one place.
///
/// - Changes apply in the server's order, every replica's (this one's too: its own transactions
///   are folded where the server placed them, so a later write in that order wins per attribute
///   and per to-one, whoever made it).
/// - A delete removes the row and applies the model's delete rules: the rows naming it by a to-one
///   whose inverse is `cascade` go too, `nullify` clears their to-one. An update of a row that is
///   gone does nothing: a delete wins over any update.
/// - A to-one naming a row that is gone follows the delete rule of its inverse: `cascade`
///   deletes the row that names it, `nullify` clears it.
/// - A change that makes a row hold a unique key another row holds merges it into that row (the
///   holder had it first, in the server's order): the change's values are written over the
///   holder's, the rows naming the merged row are re-pointed, the merged row is gone (no delete
///   rule runs), and later changes naming it apply to the holder (an alias, kept in the sync
///   bookkeeping).
///
/// The fold reads the base through ``SyncBase`` and keeps what it changed in `overlay`; the engine
/// then writes exactly those rows into the store (``SyncApply``).
struct SyncFold {
    let model: Model
    let base: any FoldBase
    /// Rows the fold changed: the new row, or `nil` for a row that is gone.
    private(set) var overlay: [ObjectID: FoldRow?] = [:]
    var aliases: [String: Int64]
    private(set) var newAliases: [String: Int64] = [:]
    private(set) var merged = 0

    init(model: Model, base: any FoldBase, aliases: [String: Int64]) {
        self.model = model
        self.base = base
        self.aliases = aliases
    }

    static func aliasName(_ entity: String, _ key: Int64) -> String { "alias:\(entity):\(key)" }

    func resolve(_ entity: String, _ key: Int64) -> Int64 {
        var key = key
        var steps = 0
        while let next = aliases[SyncFold.aliasName(entity, key)], steps < 1024 {
            key = next
            steps += 1
        }
        return key
    }

    private func entity(_ name: String) throws -> Entity {
        guard let entity = model.entities.first(where: { $0.name == name }) else {
            throw SyncError.local("the server's log names entity '\(name)', which this model lacks")
        }
        return entity
    }

    func row(_ entity: String, _ key: Int64) throws -> FoldRow? {
        let id = ObjectID(entityName: entity, primaryKey: key)
        if let changed = overlay[id] { return changed }
        return try base.row(entity: entity, key: key)
    }

    /// The rows of `entity` (other than `key`) whose `names` hold `values` now.
    private func holders(_ entity: String, _ names: [String], _ values: [AttributeValue], excluding key: Int64) throws -> [Int64] {
        var candidates = Set(try base.keys(entity: entity, whereAttributes: Array(zip(names, values))))
        for (id, _) in overlay where id.entityName == entity { candidates.insert(id.primaryKey) }
        return try candidates.filter { candidate in
            guard candidate != key, let row = try row(entity, candidate) else { return false }
            return names.map { row.attributes[$0] ?? nil } == values.map { Optional($0) }
        }.sorted()
    }

    /// The rows naming `entity`/`key` by a to-one: (their entity, the to-one, their key).
    private func referrers(_ entity: String, _ key: Int64) throws -> [(Entity, Relationship, Int64)] {
        var result: [(Entity, Relationship, Int64)] = []
        for other in model.entities {
            for relationship in other.relationships where !relationship.isToMany && relationship.destination == entity {
                var candidates = Set(try base.keys(entity: other.name, whereToOne: relationship.name, names: key))
                for (id, _) in overlay where id.entityName == other.name { candidates.insert(id.primaryKey) }
                for candidate in candidates.sorted() where try row(other.name, candidate)?.toOnes[relationship.name] == .some(key) {
                    result.append((other, relationship, candidate))
                }
            }
        }
        return result
    }

    private func inverseRule(of relationship: Relationship) throws -> Relationship.DeleteRule {
        guard let inverse = relationship.inverse else { return .nullify }
        return try entity(relationship.destination).relationships.first { $0.name == inverse }?.deleteRule ?? .nullify
    }

    // MARK: Folding

    /// The rows the store must be given: those the fold changed, and those changed locally since
    /// the last apply (this replica's own transactions, folded where the server placed them),
    /// each as the fold has it now.
    func rowsToWrite(changedSinceApply: [ObjectID]) throws -> [ObjectID: FoldRow?] {
        var result = overlay
        for id in changedSinceApply where result[id] == nil {
            result[id] = .some(try base.row(entity: id.entityName, key: id.primaryKey))
        }
        return result
    }

    mutating func apply(_ transaction: SyncTransaction) throws {
        for change in transaction.changes {
            let key = resolve(change.entity, change.key)
            switch change.kind {
            case .delete: try delete(change.entity, key)
            case .insert, .update: try write(change, key: key)
            }
        }
    }

    private mutating func set(_ entity: String, _ key: Int64, _ row: FoldRow?) {
        overlay[ObjectID(entityName: entity, primaryKey: key)] = .some(row)
    }

    private mutating func delete(_ entityName: String, _ key: Int64) throws {
        guard let deleted = try row(entityName, key) else { return }
        set(entityName, key, nil)
        let entity = try entity(entityName)
        for (other, relationship, referrer) in try referrers(entityName, key) {
            if try inverseRule(of: relationship) == .cascade {
                try delete(other.name, referrer)
            } else if var row = try row(other.name, referrer) {
                row.toOnes[relationship.name] = .some(nil)
                set(other.name, referrer, row)
            }
        }
        // This row's own to-ones whose rule is cascade take their destination with it.
        for relationship in entity.relationships where !relationship.isToMany && relationship.deleteRule == .cascade {
            if let destination = deleted.toOnes[relationship.name] ?? nil { try delete(relationship.destination, destination) }
        }
    }

    private mutating func write(_ change: SyncChange, key: Int64) throws {
        let entity = try entity(change.entity)
        let existing = try row(change.entity, key)
        if change.kind == .update && existing == nil { return }           // a delete won
        for names in entity.uniqueKeys where names.contains(where: { change.attributes[$0] != nil }) {
            var values: [AttributeValue] = []
            for name in names {
                guard let value = change.attributes[name] ?? existing?.attributes[name] ?? nil else { break }
                values.append(value)
            }
            guard values.count == names.count, let holder = try holders(change.entity, names, values, excluding: key).first else { continue }
            // The holder had the key first: this row merges into it.
            try assign(change, entity: entity, to: holder)
            if existing != nil {
                for (other, relationship, referrer) in try referrers(change.entity, key) {
                    guard var row = try row(other.name, referrer) else { continue }
                    row.toOnes[relationship.name] = .some(holder)
                    set(other.name, referrer, row)
                }
                set(change.entity, key, nil)
            }
            aliases[SyncFold.aliasName(change.entity, key)] = holder
            newAliases[SyncFold.aliasName(change.entity, key)] = holder
            merged += 1
            return
        }
        if existing == nil {
            var attributes: [String: AttributeValue?] = [:]
            for attribute in entity.attributes { attributes[attribute.name] = .some(attribute.defaultValue) }
            var toOnes: [String: Int64?] = [:]
            for relationship in entity.relationships where !relationship.isToMany { toOnes[relationship.name] = .some(nil) }
            set(change.entity, key, FoldRow(attributes: attributes, toOnes: toOnes))
        }
        try assign(change, entity: entity, to: key)
    }

    private mutating func assign(_ change: SyncChange, entity: Entity, to key: Int64) throws {
        guard var row = try row(change.entity, key) else { return }
        for (name, value) in change.attributes {
            guard entity.attribute(named: name) != nil else {
                throw SyncError.local("the server's log names attribute '\(name)' of \(entity.name), which this model lacks")
            }
            row.attributes[name] = .some(value)
        }
        for (name, destination) in change.toOnes.sorted(by: { $0.key < $1.key }) {
            guard let relationship = entity.relationships.first(where: { $0.name == name && !$0.isToMany }) else {
                throw SyncError.local("the server's log names to-one '\(name)' of \(entity.name), which this model lacks")
            }
            guard let destination else { row.toOnes[name] = .some(nil); continue }
            let resolved = resolve(relationship.destination, destination)
            if try self.row(relationship.destination, resolved) != nil {
                row.toOnes[name] = .some(resolved)
            } else if try inverseRule(of: relationship) == .cascade {
                // It names a row that is gone: as if that row's delete came after.
                set(change.entity, key, row)
                try delete(change.entity, key)
                return
            } else {
                row.toOnes[name] = .some(nil)
            }
        }
        set(change.entity, key, row)
    }
}

/// Writes the rows a fold changed into the store, through one root context (so that merging
/// contexts and results controllers hear a sibling's save: exact change sets), changing only
/// what differs: inserts under the rows' keys, values set, then deletes (whose local delete rules
/// reach exactly the rows the fold changed the same way).
enum SyncApply {
    static let author = "strata.sync"

    struct Counts: Equatable {
        var inserted = 0, updated = 0, deleted = 0
    }

    static func write(_ overlay: [ObjectID: FoldRow?], into context: ManagedObjectContext, model: Model) throws -> Counts {
        var counts = Counts()
        func existing(_ id: ObjectID) throws -> ManagedObject? {
            do {
                let object = try context.existingObject(with: id)
                return object.isDeleted ? nil : object
            } catch ObjectError.objectNotFound {
                return nil
            }
        }
        let ordered = overlay.sorted { ($0.key.entityName, $0.key.primaryKey) < ($1.key.entityName, $1.key.primaryKey) }
        var objects: [ObjectID: (ManagedObject, FoldRow, isNew: Bool)] = [:]
        for (id, row) in ordered {
            guard let row else { continue }
            if let object = try existing(id) {
                objects[id] = (object, row, false)
            } else {
                objects[id] = (try context.insert(id.entityName, primaryKey: id.primaryKey), row, true)
                counts.inserted += 1
            }
        }
        for (id, _) in ordered {
            guard let (object, row, isNew) = objects[id] else { continue }
            guard let entity = model.entities.first(where: { $0.name == id.entityName }) else { continue }
            var changed = false
            for attribute in entity.attributes {
                let wanted = row.attributes[attribute.name] ?? nil
                let current = try object.value(forKey: attribute.name)
                let currentValue = current.flatMap { AttributeValue.from($0, as: attribute.type) }
                if isNew || currentValue != wanted {
                    try object.setValue(wanted?.swiftValue, forKey: attribute.name)
                    changed = true
                }
            }
            for relationship in entity.relationships where !relationship.isToMany {
                let wanted = row.toOnes[relationship.name] ?? nil
                let current = (try object.value(forKey: relationship.name) as? ManagedObject)?.objectID.primaryKey
                guard isNew || current != wanted else { continue }
                if let wanted {
                    let destination = ObjectID(entityName: relationship.destination, primaryKey: wanted)
                    guard let target = try objects[destination]?.0 ?? existing(destination) else {
                        throw SyncError.local("\(id) names \(destination), which this store lacks")
                    }
                    try object.setValue(target, forKey: relationship.name)
                } else {
                    try object.setValue(nil, forKey: relationship.name)
                }
                changed = true
            }
            if changed && !isNew { counts.updated += 1 }
        }
        for (id, row) in ordered where row == nil {
            if let object = try existing(id) {
                try context.delete(object)
                counts.deleted += 1
            }
        }
        return counts
    }
}

extension AttributeValue {
    /// The value of `type` a Swift value read from an object is (`nil`: none).
    static func from(_ value: Any, as type: AttributeType) -> AttributeValue? {
        switch (type, value) {
        case (.int16, let v as Int16): .int16(v)
        case (.int32, let v as Int32): .int32(v)
        case (.int64, let v as Int64): .int64(v)
        case (.int64, let v as Int): .int64(Int64(v))
        case (.double, let v as Double): .double(v)
        case (.float, let v as Float): .float(v)
        case (.bool, let v as Bool): .bool(v)
        case (.string, let v as String): .string(v)
        case (.date, let v as Date): .date(v)
        case (.binary, let v as Data): .binary(v)
        case (.uuid, let v as UUID): .uuid(v)
        case (.url, let v as URL): .url(v)
        case (.decimal, let v as Decimal): .decimal(v)
        default: nil
        }
    }
}
