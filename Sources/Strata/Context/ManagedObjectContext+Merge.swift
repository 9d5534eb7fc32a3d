/// Merging other contexts' saves, and refreshing objects from the level above.
extension ManagedObjectContext {
    /// Brings this context up to date with another context's save, without reading the store.
    ///
    /// Registered objects take the saved values: an unchanged object takes them all; one with
    /// pending changes keeps its changed properties and takes the rest (under
    /// ``MergePolicy/overwrite`` it keeps all of them). Its next save decides the conflict by
    /// ``mergePolicy`` exactly as it would have, had it met the merged save in the store first:
    /// under ``MergePolicy/error`` it throws. Objects the save deleted leave the context.
    ///
    /// The objects-did-change it posts names **every** inserted, updated and deleted ID of the save,
    /// registered here or not, so that a results controller re-evaluates rows it has never
    /// materialised (where Core Data reports registered objects only). Children that merge
    /// automatically receive the same changes.
    public func mergeChanges(from save: DidSave) {
        assertOnQueue()
        merge(save.rows, generation: save.generation)
    }

    /// Merges `rows` and hands them on to the children that merge automatically, except `origin`
    /// (the child the rows came from, which has them already).
    func merge(_ rows: RowChanges, generation: Int64?, except origin: ManagedObjectContext? = nil) {
        assertOnQueue()
        var rows = rows
        // A pending delete's rule may undo what the merge brings (a row moved to an owner deleted
        // here is let go of again): the values it had here before tell whether it changed at all.
        let rulesMayRun = !deleted.isEmpty
        var valuesBefore: [ObjectID: (values: RowSnapshot, version: Int64)] = [:]
        // Only updated rows can meet a registered object with values: a row inserted elsewhere is
        // at most a fault here (made from its ID), which reads the new row when it fires.
        for (id, row) in rows.updated {
            guard let object = registered[id], !object.isFault else { continue }
            if rulesMayRun, object.state == .clean { valuesBefore[id] = (object.current, object.current.version) }
            // Merges can arrive out of commit order (two saves' merges queued on different
            // threads, or a cascade merging its own commit ahead of a queued one): a row older
            // than the one the object holds is news already superseded.
            if let committed = object.committed, row.version < committed.version { continue }
            switch object.state {
            case .clean:
                object.current = row
                object.committed = row
            case .updated, .deleted:
                mergeUnderPendingChanges(object, row)
            case .inserted, .invalid:
                break
            }
        }
        var removed: ObjectTable = [:]
        var kept = Set<ObjectID>()
        for id in rows.deleted {
            guard let object = registered[id] ?? deleted[id] else { continue }
            if keepsChangesOverTheirDelete(object) {
                kept.insert(id)
                continue
            }
            registered[id] = nil
            updated[id] = nil
            deleted[id] = nil
            inserted[id] = nil
            object.state = .invalid
            removed[id] = object
        }
        // Kept objects are still here, for this context's lists and its children alike.
        if !kept.isEmpty { rows.deleted.subtract(kept) }
        var changedEntities: Set<String>?
        for id in rows.toManyTouched {
            guard let object = registered[id] else { continue }
            for index in object.toMany.indices where object.state != .inserted { object.toMany[index].committed = nil }
            if object.observationBox != nil {
                // Observers of the relationships whose members' entity the merge changed.
                if changedEntities == nil { changedEntities = rows.changedEntityNames }
                let names = object.info.toManys.filter { changedEntities!.contains($0.destination) }.map(\.name)
                toManyObservationQueue.append((object, names.isEmpty ? object.info.toManys.map(\.name) : names))
            }
        }
        let detached = detach(from: rows.deleted)
        let ruled = deleted.isEmpty ? ObjectChanges() : applyPendingDeleteRules(to: ownersNamed(by: rows))
        if isObserved {
            var changes = rows.objectChanges
            changes.refreshed.formUnion(detached.subtracting(changes.updated))
            changes.absorb(ruled)
            // Moved to an owner deleted here and let go of again by its rule: the same values as
            // before the merge, nothing for a list to update (controller model test, seed
            // 15776530969506254901, batches 749 and 753).
            for id in ruled.updated {
                guard let before = valuesBefore[id], registered[id]?.current == before.values else { continue }
                changes.updated.remove(id)
                changes.unchangedOverNewRow[id] = before.version
            }
            if !changes.isEmpty || !changes.unchangedOverNewRow.isEmpty { post(.objectsDidChange(changes), removed: removed) }
        }
        forward(rows, except: origin)
    }

    /// The objects deleted here (not yet saved) that a merged row names through a to-one: a row
    /// that arrived after the delete, or was changed to point at the owner since.
    private func ownersNamed(by rows: RowChanges) -> [ManagedObject] {
        var owners: [ObjectID: ManagedObject] = [:]
        func look(at row: RowSnapshot, of entity: String) {
            guard let info = schema.infos[entity] else { return }
            for (i, destination) in info.toOneDestinationNames.enumerated() {
                guard let key = row.toOnes[i] else { continue }
                let id = ObjectID(entity: destination, primaryKey: key)
                if let owner = deleted[id], owner.state == .deleted { owners[id] = owner }
            }
        }
        for (id, row) in rows.inserted { look(at: row, of: id.entityName) }
        for (id, row) in rows.updated { look(at: row, of: id.entityName) }
        return Array(owners.values)
    }

    /// The objects deleted here whose entity rows of `entities` can name through a to-one (rows
    /// changed elsewhere, which ones not known).
    private func ownersReachable(from entities: Set<String>) -> [ManagedObject] {
        let destinations = Set(entities.compactMap { schema.infos[$0] }.flatMap(\.toOneDestinations))
        return deleted.values.filter { $0.state == .deleted && destinations.contains($0.entityName) }
    }

    /// A delete pending here applies its rules to rows that arrive after it (issue 46, point 9):
    /// a member that a merge, a batch request or another process's commit brings to an owner
    /// deleted here is treated as the delete treated the members it found. Nullify clears the
    /// member's to-one here, cascade deletes the member here (and its own rules run), deny leaves
    /// it for the save to refuse, naming both rows (``validateForSave()`` reads the members again).
    /// Without this the newcomer would name an object that is gone here: a child of this context
    /// reading it, or this context's save writing the delete, would meet a key to nothing.
    ///
    /// Covers the owner's to-many relationships whose inverse is a to-one (the rows that name the
    /// owner). Returns the changes made, for the merge's own event (one change set).
    private func applyPendingDeleteRules(to owners: [ManagedObject]) -> ObjectChanges {
        guard !owners.isEmpty else { return ObjectChanges() }
        // The rules' edits are reported with the merge, not as local edits of their own.
        let before = localChanges
        localChanges = ObjectChanges()
        defer { localChanges = before }
        var ruled = ObjectChanges()
        for owner in owners.sorted(by: { $0.objectID < $1.objectID }) where owner.state == .deleted {
            for (index, relationship) in owner.info.toManys.enumerated() {
                guard relationship.deleteRule == .nullify || relationship.deleteRule == .cascade,
                      case .toOne(let j)? = owner.info.toManyInverseSlots[index] else { continue }
                // The members as the level above lists them now, less those this context moved
                // away or deleted: what is left arrived after the delete.
                owner.toMany[index].committed = nil
                let destination = owner.info.toManyDestinationNames[index]
                do {
                    for key in try toManyKeys(owner, index).sorted() {
                        let member = try object(with: ObjectID(entity: destination, primaryKey: key))
                        guard member.state != .deleted, member.state != .invalid, try fulfillUnlessGone(member),
                              member.current.toOnes[j] == owner.primaryKey else { continue }
                        if relationship.deleteRule == .nullify {
                            member.current.setToOne(nil, at: j)
                            markChanged(member)
                            ruled.updated.insert(member.objectID)
                        } else {
                            try delete(member)
                            ruled.deleted.insert(member.objectID)
                        }
                    }
                } catch {
                    // The members could not be read: the save meets the newcomer (a dangling
                    // key is refused there), as before this rule existed.
                    continue
                }
            }
        }
        // Cascades reach further objects: every edit the rules made is in the one event.
        ruled.updated.formUnion(localChanges.updated)
        ruled.deleted.formUnion(localChanges.deleted)
        ruled.updated.subtract(ruled.deleted)
        return ruled
    }

    /// Another connection changed rows of `entities`: unchanged objects of those entities become
    /// faults, to-many relationships that may list their rows are read again, and observers hear
    /// which entities changed. Objects with pending changes keep them (their save checks the row
    /// versions).
    func storeChangedElsewhere(_ entities: Set<String>, deleted gone: Set<ObjectID> = [], deletionsNamed: Bool = false) {
        var changes = ObjectChanges(entitiesChangedElsewhere: entities)
        var removed: ObjectTable = [:]
        for object in Array(registered.values) where object.state == .clean || object.state == .updated || object.state == .deleted {
            if object.state == .clean, gone.contains(object.objectID) {
                // Known gone (a batch delete): out now, not a fault that fails when read.
                invalidate(object, into: &changes, removed: &removed)
                continue
            }
            if object.state == .clean, !object.isFault, entities.contains(object.entityName) {
                object.turnIntoFault()
                changes.refreshed.insert(object.objectID)
            } else if object.state != .clean, !object.isFault, entities.contains(object.entityName) {
                // An object with pending changes keeps them, over the row as it is now: its
                // saved snapshot must not stay behind the store, or a rollback would bring back
                // values nobody has any more (and a list would show them). Properties it did not
                // change take the new values (unless the policy is `overwrite`), and the save
                // still meets the change as a conflict. A row gone is left to the save to find.
                let read: RowSnapshot??
                do { read = .some(try parentRow(for: object.objectID)) } catch { read = nil }
                switch read {
                case let row??:
                    // As a merge: the policy decides at the save (`mergeUnderPendingChanges`).
                    let before = object.current
                    mergeUnderPendingChanges(object, row)
                    if object.current != before { changes.refreshed.insert(object.objectID) }
                case nil?:
                    // Gone. An object whose only change is its membership in a to-many (kept in
                    // the other side's rows) has nothing left to save: it leaves the context.
                    // One with changed values is left to its save's conflict handling (and a
                    // rollback removes it).
                    guard object.current == object.committed else {
                        goneElsewhere.insert(object.objectID)
                        break
                    }
                    invalidate(object, into: &changes, removed: &removed)
                case nil:
                    break
                }
            }
            if object.info.toManys.contains(where: { entities.contains($0.destination) }) {
                for index in object.toMany.indices { object.toMany[index].committed = nil }
            }
        }
        let missing = deletionsNamed ? [] : referencesGone(in: entities)
        for id in missing {
            if let object = registered[id], object.state == .clean { invalidate(object, into: &changes, removed: &removed) }
        }
        changes.refreshed.formUnion(detach(from: gone.union(missing)))
        changes.absorb(applyPendingDeleteRules(to: ownersReachable(from: entities)))
        post(.objectsDidChange(changes), removed: removed)
    }

    /// The rows of `entities` that this context's objects point at through a to-one and that
    /// no longer exist in the store: another connection's commit, whose deleted rows are not
    /// named, may have deleted them. One read per entity, of the destinations named only. A
    /// root looks at its objects with pending changes only (the others are rows of the store,
    /// which a commit leaves without keys to gone rows); a child at every loaded object (its
    /// unchanged ones show its parent's pending changes).
    private func referencesGone(in entities: Set<String>) -> Set<ObjectID> {
        var wanted = Set<ObjectID>()
        let isChild = parent != nil
        for object in registered.values where !object.isFault && object.state != .invalid && (isChild || object.state != .clean) {
            for (i, destination) in object.info.toOneDestinations.enumerated() where entities.contains(destination) {
                guard let key = object.current.toOnes[i] else { continue }
                let id = ObjectID(entity: object.info.toOneDestinationNames[i], primaryKey: key)
                // An object new here has no row above yet.
                if registered[id]?.state == .inserted { continue }
                wanted.insert(id)
            }
        }
        // The store decides (an ancestor may not have heard of the commit yet: contexts hear of
        // it each on its own queue); a row an ancestor inserts is not in the store yet.
        // A read that fails finds nothing gone: the objects keep their to-ones, and a read of a
        // gone destination then stops (or throws from load()) rather than serve a value.
        guard !wanted.isEmpty, let found = try? coordinator.rows(for: Array(wanted)) else { return [] }
        return wanted.filter { found[$0] == nil && !ancestorInserted($0) }
    }

    /// Whether an ancestor of this context holds `id` as a new object.
    private func ancestorInserted(_ id: ObjectID) -> Bool {
        guard let parent else { return false }
        return parent.performAndWait { parent.registered[id]?.state == .inserted || parent.ancestorInserted(id) }
    }

    /// The rule for a row gone elsewhere (deleted by another context's save, a batch request or
    /// another process), as Core Data's merge applies it: the row's object left the context
    /// (invalidated), and every relationship here that still names it lets go of it — a to-one
    /// becomes `nil`, a to-many loses the member. Pending changes are no exception: a new object
    /// pointed at the deleted one points at nothing now (a required to-one then fails
    /// validation at the next save, naming the key). Without this, a to-one would hand out a
    /// fault of a row that no longer exists, which fetches, lists and Foundation's evaluation of
    /// the same objects all read as `nil`.
    ///
    /// Objects without pending changes become faults instead: the level above decides what they
    /// read (the deleting save cleared the key, or was refused: see ``DeletedRowReferences``; a
    /// parent context let go of it in its own merge; under no action, the key stays). Returns the
    /// objects changed, which observers hear of as refreshed. Runs over the registered objects
    /// only when `gone` names an entity some relationship leads to.
    @discardableResult
    func detach(from gone: Set<ObjectID>) -> Set<ObjectID> {
        guard !gone.isEmpty else { return [] }
        let goneEntities = Set(gone.map(\.entityName))
        let reachable = schema.infos.values.contains { info in
            info.toOneDestinations.contains(where: goneEntities.contains) || info.toManys.contains { goneEntities.contains($0.destination) }
        }
        guard reachable else { return [] }
        var goneKeys: [String: Set<Int64>] = [:]
        for id in gone { goneKeys[id.entityName, default: []].insert(id.primaryKey) }
        var changed = Set<ObjectID>()
        for object in Array(registered.values) where !object.isFault && object.state != .invalid {
            let info = object.info
            for (i, destination) in info.toOneDestinations.enumerated() where goneEntities.contains(destination) {
                guard let key = object.current.toOnes[i], goneKeys[destination]?.contains(key) == true else { continue }
                if object.state == .clean {
                    // Its row above decides (cleared by the commit's rule, or by the parent's
                    // own detach; kept under no action): read again on next access.
                    object.turnIntoFault()
                    changed.insert(object.objectID)
                    break
                }
                object.current.setToOne(nil, at: i)
                changed.insert(object.objectID)
            }
            if object.isFault { continue }
            for (index, relationship) in info.toManys.enumerated() where goneEntities.contains(relationship.destination) {
                guard let keys = goneKeys[relationship.destination], object.toMany[index].forget(keys) else { continue }
                changed.insert(object.objectID)
            }
        }
        return changed
    }

    /// Takes `object`, whose row is gone, out of the context as a merged delete does: it is
    /// invalidated, and the objects here that name it let go of it (their to-ones cleared,
    /// reported refreshed), so that nothing pending names a row that is not there (controller
    /// model test, seed 15541614223810524789: an item inserted on main named a category whose
    /// deletion main had kept over its rename, and a refresh found the row gone).
    func letGo(of object: ManagedObject, into changes: inout ObjectChanges, removed: inout ObjectTable) {
        let id = object.objectID
        goneElsewhere.remove(id)
        invalidate(object, into: &changes, removed: &removed)
        changes.refreshed.formUnion(detach(from: [id]).subtracting(changes.invalidated))
    }

    /// Takes `object`, whose row is gone, out of the context (pending changes included) and
    /// records it as invalidated.
    func invalidate(_ object: ManagedObject, into changes: inout ObjectChanges, removed: inout ObjectTable) {
        let id = object.objectID
        registered[id] = nil
        updated[id] = nil
        deleted[id] = nil
        conflictBases[id] = nil
        object.state = .invalid
        removed[id] = object
        changes.refreshed.remove(id)
        changes.invalidated.insert(id)
    }

    /// A merged row meets an object with pending changes here. Its save decides the conflict by
    /// this context's ``mergePolicy`` exactly as it would have had the row reached the store
    /// before the merge reached this context (issue 46, point 5): the row the changes were made
    /// over stays the save's `original` (``conflictBases``) for the policies that do not let our
    /// side win, and `overwrite` keeps our whole object as it is.
    ///
    /// - `inMemoryWinsPerProperty`: the object shows the row under the properties changed here,
    ///   which is what that policy's save writes; nothing is left to decide.
    /// - `overwrite`: the object keeps its values (a new version only); its save writes them whole.
    /// - `error`, `storeWinsPerProperty`, `rollback`: the object shows the row under its changes,
    ///   and its save meets the row as a conflict: it throws, takes their properties, or takes
    ///   their whole object.
    /// - A pending delete: `overwrite` and `inMemoryWinsPerProperty` let it go ahead; under the
    ///   others its save throws, as against the store (a delete's rules cannot be taken back).
    func mergeUnderPendingChanges(_ object: ManagedObject, _ row: RowSnapshot) {
        guard let read = object.committed else { return }
        // An update whose row is back at the values it was read with (set and set back, or
        // saved into this context and set back by a child) changes nothing the merged row could
        // conflict with: it takes the row, with no conflict base. (It kept the base it was read
        // at, and the next save of the object was refused against its own commit: ours 1,
        // theirs 1, stored 1, read as 2359; UnsavedParentRoundTripTests.) A pending delete keeps
        // its base: its save must still meet the row as a conflict.
        let changesItsRow = object.state != .updated || object.current != read      // values, not versions
        if row != read, changesItsRow {
            switch policy {
            case .error, .storeWinsPerProperty, .rollback:
                if conflictBases[object.objectID] == nil { conflictBases[object.objectID] = read }
            case .overwrite, .inMemoryWinsPerProperty:
                break
            }
        }
        if policy == .overwrite, object.state == .updated {
            object.current.version = row.version
        } else {
            object.current = ManagedObjectContext.keepingChanges(of: object, over: row)
        }
        object.committed = row
    }

    /// A merged delete meets `object`'s pending update. Under the policies whose save refuses an
    /// update of a row deleted elsewhere (`error`, `overwrite`, `inMemoryWinsPerProperty`) the
    /// object stays, with its changes, until its save throws that conflict, as it would have
    /// against the store (a rollback or a refresh then takes it out). Under `storeWinsPerProperty`
    /// and `rollback` their delete wins now, as it would at the save. Returns whether it stays.
    private func keepsChangesOverTheirDelete(_ object: ManagedObject) -> Bool {
        // An object whose only change is its membership in a to-many (kept in the other side's
        // rows) has nothing of its own row to save: it leaves, as with every policy.
        guard object.state == .updated, let read = object.committed,
              object.current != read || conflictBases[object.objectID] != nil else { return false }
        switch policy {
        case .storeWinsPerProperty, .rollback:
            return false
        case .error, .overwrite, .inMemoryWinsPerProperty:
            let id = object.objectID
            if conflictBases[id] == nil { conflictBases[id] = read }
            goneElsewhere.insert(id)
            return true
        }
    }

    /// `row`, with the properties `object` changed since it was read kept as they are now.
    static func keepingChanges(of object: ManagedObject, over row: RowSnapshot) -> RowSnapshot {
        guard let before = object.committed else { return object.current }
        var merged = row
        for i in merged.attributes.indices where object.current.attributes[i] != before.attributes[i] {
            merged.setAttribute(object.current.attributes[i], at: i)
        }
        for i in merged.toOnes.indices where object.current.toOnes[i] != before.toOnes[i] {
            merged.setToOne(object.current.toOnes[i], at: i)
        }
        merged.version = row.version
        return merged
    }

    /// Re-reads `object` from the level above (the parent context, or the store).
    ///
    /// - `mergeChanges: false`: pending changes to the object are discarded and it becomes a
    ///   fault, read again on next access.
    /// - `mergeChanges: true`: the object takes the current values and keeps the properties it
    ///   changed; its saved snapshot becomes the values read.
    ///
    /// An object whose row is gone leaves the context (reported as invalidated). A newly
    /// inserted object has nothing to re-read and is left alone.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) throws {
        assertOnQueue()
        precondition(object.context === self, "refresh(_:mergeChanges:) was given an object of another context: refresh context.object(with: object.objectID) instead.")
        // Observers hear of the edits made so far first: the refresh's event follows them.
        processPendingChanges()
        var changes = ObjectChanges()
        var removed: ObjectTable = [:]
        try refresh(object, mergeChanges: mergeChanges, into: &changes, removed: &removed)
        if !changes.isEmpty { post(.objectsDidChange(changes), removed: removed) }
    }

    /// Refreshes every registered object: unchanged ones become faults (no I/O), changed ones are
    /// re-read and keep their changes, as ``refresh(_:mergeChanges:)`` with `true`.
    public func refreshAllObjects() throws {
        assertOnQueue()
        processPendingChanges()
        var changes = ObjectChanges()
        var removed: ObjectTable = [:]
        for object in Array(registered.values) {
            if object.state == .clean {
                try refresh(object, mergeChanges: false, into: &changes, removed: &removed)
            } else {
                try refresh(object, mergeChanges: true, into: &changes, removed: &removed)
            }
        }
        if !changes.isEmpty { post(.objectsDidChange(changes), removed: removed) }
    }

    private func refresh(_ object: ManagedObject, mergeChanges: Bool, into changes: inout ObjectChanges,
                         removed: inout ObjectTable) throws {
        let id = object.objectID
        guard object.state != .inserted, object.state != .invalid else { return }
        // A refresh is the app taking the level above's row on purpose: the conflict a merge
        // left to the save (see `mergeUnderPendingChanges`) is settled by it.
        conflictBases[id] = nil
        // Known gone (its row deleted elsewhere while it had changes here, which kept it): the
        // refresh takes the level above's answer, which is that it is gone.
        if goneElsewhere.contains(id) {
            letGo(of: object, into: &changes, removed: &removed)
            return
        }
        if !mergeChanges {
            // The destinations of the to-ones it had and has: their one-to-many members counted
            // its pending change, which is about to be discarded.
            // A clean object has neither (an object whose members changed is changed itself):
            // refreshAllObjects() stays in the time of the registered objects.
            let wasChanged = object.state != .clean
            let destinations = object.isFault || !wasChanged ? [] : oneToManyDestinations(of: object)
            updated[id] = nil
            deleted[id] = nil
            object.state = .clean
            object.turnIntoFault()
            changes.refreshed.insert(id)
            // Its own one-to-many members follow the to-ones of the objects still changed here,
            // and so do the destinations': a list never disagrees with the keys it is made of.
            if wasChanged { try rederivePendingMembers(of: object) }
            // A destination new in this context too: its members are all pending, and the
            // discarded move must leave them (found by the 200,000-batch soak, seed
            // 9248279437356116656: a category new on main kept an item refreshed away from it).
            for (destination, index) in destinations {
                guard let other = registered[destination], other.state != .invalid else { continue }
                other.toMany[index] = ToManyState()
                try rederivePendingMembers(of: other, index)
                changes.refreshed.insert(destination)
            }
            return
        }
        guard let row = try parentRow(for: id) else {
            letGo(of: object, into: &changes, removed: &removed)
            return
        }
        if object.isFault || object.state == .clean {
            object.current = row
        } else {
            object.current = ManagedObjectContext.keepingChanges(of: object, over: row)
        }
        object.committed = row
        object.isFault = false
        for index in object.toMany.indices { object.toMany[index].committed = nil }
        changes.refreshed.insert(id)
    }

    /// The registered objects whose one-to-many relationship `index` lists `object` through one
    /// of its to-ones, as saved or as changed.
    private func oneToManyDestinations(of object: ManagedObject) -> [(ObjectID, Int)] {
        var result: [(ObjectID, Int)] = []
        for (j, inverse) in object.info.toOneInverseSlots.enumerated() {
            guard case .toMany(let index)? = inverse else { continue }
            var keys = Set([object.current.toOnes[j]].compactMap { $0 })
            if let before = object.committed?.toOnes[j] { keys.insert(before) }
            for key in keys { result.append((ObjectID(entity: object.info.toOneDestinationNames[j], primaryKey: key), index)) }
        }
        return result
    }

    /// Rebuilds the pending members of `object`'s one-to-many relationships (those whose inverse
    /// is a to-one) from the objects changed in this context: a new object pointing at it joins, a
    /// changed one that left or arrived leaves or joins, a deleted one whose rule nullifies (or
    /// cascades) leaves. Its saved members are read from the level above on next use. True when
    /// a pending difference remains: the object is then changed, as any object whose members are.
    @discardableResult
    func rederivePendingMembers(of object: ManagedObject, _ only: Int? = nil) throws -> Bool {
        var pending = false
        let key = object.primaryKey
        for (index, inverse) in object.info.toManyInverseSlots.enumerated() where only == nil || only == index {
            guard case .toOne(let j)? = inverse else { continue }
            let destination = object.info.toManys[index].destination
            var state = ToManyState()
            for other in inserted.values where other.info.name == destination && other.current.toOnes[j] == key {
                state.add(other.primaryKey)
            }
            for other in updated.values where other.info.name == destination {
                guard let saved = other.committed else { continue }   // a fault changed nothing
                let before = saved.toOnes[j], now = other.current.toOnes[j]
                guard before != now else { continue }
                if now == key { state.add(other.primaryKey) }
                if before == key { state.remove(other.primaryKey) }
            }
            for other in deleted.values where other.info.name == destination {
                let rule = other.info.toOnes[j].deleteRule
                guard rule == .nullify || rule == .cascade, (other.committed ?? other.current).toOnes[j] == key else { continue }
                state.remove(other.primaryKey)
            }
            object.toMany[index] = state
            pending = pending || state.hasChanges
        }
        if pending, object.state == .clean, try fulfillUnlessGone(object) { markChanged(object) }
        return pending
    }
}
