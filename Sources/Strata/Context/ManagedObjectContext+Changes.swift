internal import StrataSQLite

/// Changing objects: attribute values, relationships with their inverses kept in step, deletion
/// with delete rules. Every change here is in memory only; `rollback()` undoes all of it.
extension ManagedObjectContext {
    @inline(__always)
    func markChanged(_ object: ManagedObject) {
        switch object.state {
        case .clean:
            markUpdated(object)
        case .updated, .inserted:
            // An inserted object changed after its insert was reported is an update for those
            // who listed it (reported as inserted only when both happen before one report).
            noteLocal(object, \.updated)
        case .deleted, .invalid:
            break
        }
    }

    /// ``markChanged(_:)`` for a clean object, out of line (the inline part is the common
    /// case: an object already inserted or updated).
    private func markUpdated(_ object: ManagedObject) {
        object.state = .updated
        updated[object.objectID] = object
        noteLocal(object, \.updated)
    }

    @inline(__always)
    func setAttribute(_ object: ManagedObject, _ index: Int, _ value: AttributeValue?) throws {
        // An inserted object is saved whole whatever changed: no comparison (two value copies).
        if object.state == .inserted {
            object.current.setAttribute(value, at: index)
            noteLocal(object, \.updated)
            return
        }
        guard object.current.attributes[index] != value else { return }
        object.current.setAttribute(value, at: index)
        markChanged(object)
    }

    /// ``setAttribute(_:_:_:)`` of an inserted object (saved whole: nothing to compare) to a
    /// value already in its slot's native form: what every typed set of an import comes to.
    @inline(__always)
    func setInsertedAttribute(_ object: ManagedObject, _ write: (inout RowSnapshot) -> Void) {
        write(&object.current)
        noteLocal(object, \.updated)
    }

    // MARK: Reading relationships

    func toOneObject(_ object: ManagedObject, _ index: Int) throws -> ManagedObject? {
        guard let key = object.current.toOnes[index] else { return nil }
        return try self.object(with: ObjectID(entity: object.info.toOneDestinationNames[index], primaryKey: key))
    }

    func toManyKeys(_ object: ManagedObject, _ index: Int) throws -> Set<Int64> {
        try loadToMany(object, index)
        var keys = object.toMany[index].value(committed: object.toMany[index].committed ?? [])
        applyLocalMembership(to: &keys, owner: object.primaryKey, info: object.info, index: index)
        return keys
    }

    /// What this context's own changes say about the members of to-many `index` of the object
    /// of `info` keyed `owner`, whatever the level above lists. Applied to every read of the
    /// relationship through this context, whether the owner is registered here or not (a child
    /// reading an owner its parent never registered goes through the parent: the parent's
    /// deletions must still count, or an object deleted here and re-pointed at that owner by a
    /// batch request stays a member until the save reaches the store;
    /// `StaleMemberTests`, model-test seed 17338306850906677774).
    func applyLocalMembership(to keys: inout Set<Int64>, owner: Int64, info: EntityInfo, index: Int) {
        let destination = info.toManys[index].destination
        // Members follow their to-one: an object changed here whose inverse to-one now names
        // another owner is no member, whatever the level above lists (its membership there can
        // move under a local change, when a merge re-points the row: soak seed 11818200442803700413).
        if case .toOne(let inverse)? = info.toManyInverseSlots[index], !updated.isEmpty {
            for changed in updated.values where changed.entityName == destination {
                guard let read = changed.committed, read.toOnes[inverse] != changed.current.toOnes[inverse] else { continue }
                let key = changed.primaryKey
                if changed.current.toOnes[inverse] == owner { keys.insert(key) } else { keys.remove(key) }
            }
        }
        // An object deleted here is nobody's member, whatever its to-one or the level above says
        // (a batch request can re-point its row at another owner after the delete: soak seed
        // 12872367117340897650, a cascade from that owner then met the deleted object).
        if !deleted.isEmpty {
            for gone in deleted.values where gone.entityName == destination { keys.remove(gone.primaryKey) }
        }
    }

    func toManyObjects(_ object: ManagedObject, _ index: Int) throws -> Set<ManagedObject> {
        let destination = object.info.toManyDestinationNames[index]
        return Set(try toManyKeys(object, index).map { try self.object(with: ObjectID(entity: destination, primaryKey: $0)) })
    }

    /// Reads the members of a to-many relationship once: from the parent context for a child,
    /// from the store for a root.
    @inline(__always)
    func loadToMany(_ object: ManagedObject, _ index: Int) throws {
        if object.toMany[index].committed == nil { try loadToManyFromParent(object, index) }
    }

    private func loadToManyFromParent(_ object: ManagedObject, _ index: Int) throws {
        object.toMany[index].committed = try parentToManyKeys(object, index)
    }

    // MARK: Writing relationships

    func setToOne(_ object: ManagedObject, _ index: Int, _ destination: ManagedObject?) throws {
        let old = object.current.toOnes[index]
        let new = destination?.primaryKey
        guard old != new else { return }
        let oldObject = old == nil ? nil : try toOneObject(object, index)
        if let destination { try fulfill(destination) }
        // A destination deleted under a no-action rule leaves a dangling key: nothing to unlink.
        let oldExists = try oldObject.map(fulfillUnlessGone) ?? false
        object.current.setToOne(new, at: index)
        markChanged(object)
        guard let inverse = object.info.toOneInverseSlots[index] else { return }
        if let oldObject, oldExists { try removeInverse(of: object, from: oldObject, inverse: inverse) }
        if let destination { try addInverse(of: object, to: destination, inverse: inverse, relationship: .toOne(index)) }
    }

    func setToMany(_ object: ManagedObject, _ index: Int, _ objects: [ManagedObject]) throws {
        let currentKeys = try toManyKeys(object, index)
        let newKeys = Set(objects.map(\.primaryKey))
        let destination = object.info.toManyDestinationNames[index]
        for key in currentKeys.subtracting(newKeys).sorted() {
            try removeFromToMany(object, index, try self.object(with: ObjectID(entity: destination, primaryKey: key)))
        }
        for other in objects where !currentKeys.contains(other.primaryKey) {
            try addToToMany(object, index, other)
        }
    }

    /// Adds `member` to `object`'s to-many `index`, updating the inverse.
    func addToToMany(_ object: ManagedObject, _ index: Int, _ member: ManagedObject) throws {
        try loadToMany(object, index)
        try fulfill(member)
        object.toMany[index].add(member.primaryKey)
        markChanged(object)
        guard let inverse = object.info.toManyInverseSlots[index] else { return }
        try addInverse(of: object, to: member, inverse: inverse, relationship: .toMany(index))
    }

    func removeFromToMany(_ object: ManagedObject, _ index: Int, _ member: ManagedObject) throws {
        try loadToMany(object, index)
        try fulfill(member)
        object.toMany[index].remove(member.primaryKey)
        markChanged(object)
        guard let inverse = object.info.toManyInverseSlots[index] else { return }
        try removeInverse(of: object, from: member, inverse: inverse)
    }

    /// `target.inverse` gains `source` (whose relationship `relationship` now includes `target`).
    /// Both are slots, resolved when the schema was built: no name lookups on this path.
    private func addInverse(of source: ManagedObject, to target: ManagedObject, inverse: Slot, relationship: Slot) throws {
        try fulfill(target)
        switch inverse {
        case .toOne(let i):
            let previous = target.current.toOnes[i]
            guard previous != source.primaryKey else { return }
            if let previous {
                // `target` leaves its previous owner's relationship.
                let previousOwner = try object(with: ObjectID(entity: source.info.internedName, primaryKey: previous))
                switch try fulfillUnlessGone(previousOwner) ? relationship : nil {
                case .toOne(let j):
                    previousOwner.current.setToOne(nil, at: j)
                    markChanged(previousOwner)
                case .toMany(let j):
                    try loadToMany(previousOwner, j)
                    previousOwner.toMany[j].remove(target.primaryKey)
                    markChanged(previousOwner)
                default: break       // (also: the previous owner's row is gone)
                }
            }
            target.current.setToOne(source.primaryKey, at: i)
            markChanged(target)
        case .toMany(let i):
            try loadToMany(target, i)
            target.toMany[i].add(source.primaryKey)
            markChanged(target)
        default:
            break
        }
    }

    /// Reads `object` if it is a fault; false when its row no longer exists (a destination
    /// deleted under a no-action delete rule, still named by a dangling key).
    func fulfillUnlessGone(_ object: ManagedObject) throws -> Bool {
        do {
            try fulfill(object)
            return true
        } catch ObjectError.objectNotFound {
            return false
        }
    }

    /// `target.inverse` loses `source`.
    private func removeInverse(of source: ManagedObject, from target: ManagedObject, inverse: Slot) throws {
        // A fault must be read before it is marked changed: its row is what the save writes. A
        // target whose row is gone (deleted under a no-action rule) has no inverse to update.
        guard try fulfillUnlessGone(target) else { return }
        switch inverse {
        case .toOne(let i):
            guard target.current.toOnes[i] == source.primaryKey else { return }
            target.current.setToOne(nil, at: i)
            markChanged(target)
        case .toMany(let i):
            try loadToMany(target, i)
            target.toMany[i].remove(source.primaryKey)
            markChanged(target)
        default:
            break
        }
    }

    // MARK: Deleting

    /// Marks `object` deleted and applies its relationships' delete rules: nullify removes it from
    /// its destinations' inverses, cascade deletes the destinations, deny is checked when saving
    /// (for an object inserted in this context and not yet saved: now, throwing
    /// ``ValidationError``; its no-action relationships let go of it, as it never had a row),
    /// no action leaves the destinations alone. Undone by `rollback()`.
    public func delete(_ object: ManagedObject) throws {
        assertOnQueue()
        precondition(object.context === self, "delete(_:) was given an object of another context: delete context.object(with: object.objectID) instead.")
        guard object.state != .deleted, object.state != .invalid else { return }
        try fulfill(object)
        if object.state == .inserted {
            // A new object leaves no trace for a save to check its deny rules against: they are
            // checked now, before anything changes (a refused delete leaves the context as it was).
            var failures: [ValidationFailure] = []
            for relationship in object.info.entity.relationships where relationship.deleteRule == .deny {
                let remaining = try relatedObjects(object, relationship.name).filter { $0.state != .deleted && $0.state != .invalid }
                if !remaining.isEmpty {
                    failures.append(ValidationFailure(
                        objectID: object.objectID, key: relationship.name, rule: .deny,
                        message: "cannot delete while \(relationship.name) holds \(remaining.map(\.objectID.description).joined(separator: ", "))"))
                }
            }
            if !failures.isEmpty { throw ValidationError(failures: failures) }
        }
        if object.state == .inserted {
            inserted[object.objectID] = nil
        } else {
            updated[object.objectID] = nil
        }
        let wasInserted = object.state == .inserted
        object.state = .deleted
        deleted[object.objectID] = object
        noteLocal(object, \.deleted)
        for relationship in object.info.entity.relationships {
            let members = try relatedObjects(object, relationship.name)
            let inverse = object.info.slot(relationship.name).flatMap(object.info.inverseSlot(of:))
            switch relationship.deleteRule {
            case .deny, .noAction:
                // No action keeps keys to a row that stays gone; a new object never had a row,
                // and no key may name it once it leaves (a deny with members was refused above).
                if wasInserted, let inverse {
                    for member in members { try removeInverse(of: object, from: member, inverse: inverse) }
                }
            case .nullify:
                if let inverse {
                    for member in members { try removeInverse(of: object, from: member, inverse: inverse) }
                }
            case .cascade:
                if let inverse {
                    for member in members { try removeInverse(of: object, from: member, inverse: inverse) }
                }
                // A member whose row is gone everywhere is already deleted: nothing to cascade to.
                for member in members where try fulfillUnlessGone(member) { try delete(member) }
            }
        }
        if wasInserted {
            // A new object deleted before any save leaves no trace: nothing to write for it.
            deleted[object.objectID] = nil
            registered[object.objectID] = nil
            object.state = .invalid
        }
    }

    func relatedObjects(_ object: ManagedObject, _ key: String) throws -> [ManagedObject] {
        switch object.info.slot(key) {
        case .toOne(let i): return try toOneObject(object, i).map { [$0] } ?? []
        case .toMany(let i): return try toManyObjects(object, i).sorted { $0.objectID < $1.objectID }
        default: return []
        }
    }
}
