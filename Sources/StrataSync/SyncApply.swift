internal import Foundation
@_spi(StrataSync) internal import Strata

/// Applies a page of the server's log to the local store, in one save of a root context (so that
/// every merging context and results controller hears it as a sibling's save, change by change),
/// by the rules of <doc:SyncingWithPostgreSQL>:
///
/// - the server's order decides; per attribute (and per to-one), the write later in that order
///   wins. This replica's own transactions are already applied; a remote write to a value that
///   one of them wrote later in the order is skipped.
/// - a delete wins over any update (updates to a row that is gone do nothing); deleting applies
///   the model's delete rules, as a local delete does.
/// - a to-one naming a row that is gone follows the delete rule of its inverse: `nullify` clears
///   it, `cascade` deletes the row that names it.
/// - a row that comes to hold a unique key another row held first (in the server's order) is
///   merged into that row: its written values go over the holder's, rows naming it are
///   re-pointed to the holder, it is gone, and later changes naming it apply to the holder (an
///   alias, kept in the sync bookkeeping).
///
/// Nothing local is waiting to be pushed when this runs: the engine pushes first and the save
/// requires the store at the generation it pushed through (``StoreMovedError`` otherwise, and the
/// engine pushes again).
struct SyncApply {
    static let author = "strata.sync"

    let context: ManagedObjectContext
    let model: Model
    /// For each (entity, key, attribute or to-one) that one of this replica's own transactions,
    /// later than the pulled position, wrote: the last server seq that wrote it.
    let ownWrites: [WriteKey: Int64]
    /// Merged-away keys → the row they became ("Entity/key" → key).
    var aliases: [String: Int64]
    var newAliases: [String: Int64] = [:]
    /// Keys this apply deleted (their objects may still be registered until the save).
    private var gone: Set<ObjectID> = []
    private(set) var counts = Counts()

    struct WriteKey: Hashable {
        var entity: String
        var key: Int64
        var name: String
    }

    struct Counts {
        var inserted = 0, updated = 0, deleted = 0, skippedValues = 0, merged = 0, danglingResolved = 0
    }

    init(context: ManagedObjectContext, model: Model, ownWrites: [WriteKey: Int64], aliases: [String: Int64]) {
        self.context = context
        self.model = model
        self.ownWrites = ownWrites
        self.aliases = aliases
    }

    static func aliasName(_ entity: String, _ key: Int64) -> String { "alias:\(entity):\(key)" }

    func resolve(_ entity: String, _ key: Int64) -> Int64 {
        var key = key
        var seen = 0
        while let next = aliases[SyncApply.aliasName(entity, key)], seen < 64 {
            key = next
            seen += 1
        }
        return key
    }

    private func entity(_ name: String) throws -> Entity {
        guard let entity = model.entities.first(where: { $0.name == name }) else {
            throw SyncError.local("the server's log names entity '\(name)', which this model lacks")
        }
        return entity
    }

    /// The object of `entity`/`key` if its row exists here (or was inserted by this apply).
    private func object(_ entity: String, _ key: Int64) throws -> ManagedObject? {
        let id = ObjectID(entityName: entity, primaryKey: key)
        if gone.contains(id) { return nil }
        do {
            let object = try context.existingObject(with: id)
            return object.isDeleted ? nil : object
        } catch ObjectError.objectNotFound {
            return nil
        }
    }

    private func isOwnLater(_ entity: String, _ key: Int64, _ name: String, than seq: Int64) -> Bool {
        (ownWrites[WriteKey(entity: entity, key: key, name: name)] ?? 0) > seq
    }

    // MARK: Applying

    mutating func apply(_ transaction: SyncTransaction) throws {
        for change in transaction.changes {
            let key = resolve(change.entity, change.key)
            switch change.kind {
            case .delete:
                if let object = try object(change.entity, key) { try delete(object) }
            case .insert, .update:
                try write(change, key: key, seq: transaction.seq)
            }
        }
    }

    private mutating func delete(_ object: ManagedObject) throws {
        try context.delete(object)
        gone.insert(object.objectID)
        counts.deleted += 1
    }

    private mutating func write(_ change: SyncChange, key: Int64, seq: Int64) throws {
        let entity = try entity(change.entity)
        var target = try object(change.entity, key)
        if target == nil, change.kind == .update { return }              // the row is gone: a delete won
        // A unique key this change makes the row hold, held by another row.
        if let holder = try uniqueHolder(entity, change, excluding: key) {
            if try holdsLater(holder, than: seq) {
                // Our own row took the key later in the server's order: it merges into this one.
                let row = try target ?? insert(entity, key)
                try assign(change, to: row, entity: entity, seq: seq)
                try merge(holder, into: row, entity: entity, seq: seq, copyingEverything: true)
            } else {
                // The holder had the key first: this row merges into it.
                try assign(change, to: holder, entity: entity, seq: seq)
                if let target { try merge(target, into: holder, entity: entity, seq: seq, copyingEverything: false) }
                newAliases[SyncApply.aliasName(change.entity, key)] = holder.objectID.primaryKey
                aliases[SyncApply.aliasName(change.entity, key)] = holder.objectID.primaryKey
                counts.merged += 1
            }
            return
        }
        if target == nil { target = try insert(entity, key) }
        try assign(change, to: target!, entity: entity, seq: seq)
    }

    private mutating func insert(_ entity: Entity, _ key: Int64) throws -> ManagedObject {
        counts.inserted += 1
        return try context.insert(entity.name, primaryKey: key)
    }

    /// Writes the change's values the rules let through onto `object`.
    private mutating func assign(_ change: SyncChange, to object: ManagedObject, entity: Entity, seq: Int64) throws {
        let key = object.objectID.primaryKey
        var wrote = false
        for (name, value) in change.attributes.sorted(by: { $0.key < $1.key }) {
            guard entity.attribute(named: name) != nil else {
                throw SyncError.local("the server's log names attribute '\(name)' of \(entity.name), which this model lacks")
            }
            if isOwnLater(entity.name, key, name, than: seq) { counts.skippedValues += 1; continue }
            try object.setValue(value?.swiftValue, forKey: name)
            wrote = true
        }
        for (name, destinationKey) in change.toOnes.sorted(by: { $0.key < $1.key }) {
            guard let relationship = entity.relationships.first(where: { $0.name == name && !$0.isToMany }) else {
                throw SyncError.local("the server's log names to-one '\(name)' of \(entity.name), which this model lacks")
            }
            if isOwnLater(entity.name, key, name, than: seq) { counts.skippedValues += 1; continue }
            guard let destinationKey else {
                try object.setValue(nil, forKey: name)
                wrote = true
                continue
            }
            let resolved = resolve(relationship.destination, destinationKey)
            if let destination = try self.object(relationship.destination, resolved) {
                try object.setValue(destination, forKey: name)
                wrote = true
            } else {
                // The row it names is gone: the inverse's delete rule decides, as if the delete came after.
                counts.danglingResolved += 1
                if try inverseRule(of: relationship) == .cascade {
                    try delete(object)
                    return
                }
                try object.setValue(nil, forKey: name)
                wrote = true
            }
        }
        if wrote, change.kind == .update { counts.updated += 1 }
    }

    /// The rule that applies to a to-one whose destination is gone: its inverse's delete rule
    /// (`nullify` when it has no inverse).
    private func inverseRule(of relationship: Relationship) throws -> Relationship.DeleteRule {
        guard let inverse = relationship.inverse else { return .nullify }
        return try entity(relationship.destination).relationships.first { $0.name == inverse }?.deleteRule ?? .nullify
    }

    // MARK: Unique keys

    /// The row other than `key` that holds one of the unique keys `change` gives its row.
    private func uniqueHolder(_ entity: Entity, _ change: SyncChange, excluding key: Int64) throws -> ManagedObject? {
        for names in entity.uniqueKeys where names.contains(where: { change.attributes[$0] != nil }) {
            // The key's values after the change: written ones, else the row's own (a key with a
            // part unset holds nothing).
            var values: [Any?] = []
            let current = try object(entity.name, key)
            for name in names {
                if let written = change.attributes[name] {
                    guard let written else { break }
                    values.append(written.swiftValue)
                } else if let current, let value = try current.value(forKey: name) {
                    values.append(value)
                } else {
                    break
                }
            }
            guard values.count == names.count else { continue }
            let format = names.map { "\($0) == %@" }.joined(separator: " AND ")
            let request = FetchRequest<ManagedObject>(entityName: entity.name, condition: try Condition(format: format, argumentArray: values))
            for holder in try context.fetch(request) where holder.objectID.primaryKey != key && !gone.contains(holder.objectID) && !holder.isDeleted {
                return holder
            }
        }
        return nil
    }

    /// Whether `holder` came to hold its unique key later in the server's order than `seq`: one of
    /// this replica's own transactions after `seq` wrote one of its unique attributes.
    private func holdsLater(_ holder: ManagedObject, than seq: Int64) throws -> Bool {
        let entity = try entity(holder.objectID.entityName)
        return entity.uniqueKeys.joined().contains { isOwnLater(entity.name, holder.objectID.primaryKey, $0, than: seq) }
    }

    /// Merges `loser` into `winner`: its values over the winner's (all of them when it took its
    /// key later in the server's order; else only those one of our own later transactions wrote),
    /// rows naming it re-pointed, then it is deleted and its key becomes an alias of the winner's.
    private mutating func merge(_ loser: ManagedObject, into winner: ManagedObject, entity: Entity, seq: Int64, copyingEverything: Bool) throws {
        let loserKey = loser.objectID.primaryKey
        for attribute in entity.attributes where copyingEverything || isOwnLater(entity.name, loserKey, attribute.name, than: seq) {
            try winner.setValue(try loser.value(forKey: attribute.name), forKey: attribute.name)
        }
        for relationship in entity.relationships where !relationship.isToMany
            && (copyingEverything || isOwnLater(entity.name, loserKey, relationship.name, than: seq)) {
            try winner.setValue(try loser.value(forKey: relationship.name), forKey: relationship.name)
        }
        // Rows naming the loser name the winner.
        for other in model.entities {
            for relationship in other.relationships where !relationship.isToMany && relationship.destination == entity.name {
                let request = FetchRequest<ManagedObject>(entityName: other.name, condition: try Condition(format: "\(relationship.name) == %@", argumentArray: [loser]))
                for referrer in try context.fetch(request) where !gone.contains(referrer.objectID) && !referrer.isDeleted {
                    try referrer.setValue(winner, forKey: relationship.name)
                }
            }
        }
        try delete(loser)
        counts.deleted -= 1
        newAliases[SyncApply.aliasName(entity.name, loserKey)] = winner.objectID.primaryKey
        aliases[SyncApply.aliasName(entity.name, loserKey)] = winner.objectID.primaryKey
        counts.merged += 1
    }
}
