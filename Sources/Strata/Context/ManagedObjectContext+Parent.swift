internal import Foundation

/// A weak reference to a context, for parents and coordinators that must not keep theirs alive.
struct WeakContext: Sendable {
    weak var context: ManagedObjectContext?
}

/// Child contexts: reading through the parent, and saving into its memory.
///
/// Calls always go child → parent (`parent.performAndWait`), never the other way: a parent
/// reaches its children only asynchronously (merges), so the chain cannot deadlock.
extension ManagedObjectContext {
    // MARK: Reading through the parent

    /// The row of `id` as the level above sees it: the parent's current values (its pending
    /// changes included) for a child, the stored row for a root.
    func parentRow(for id: ObjectID) throws -> RowSnapshot? {
        if let parent { return try parent.performAndWait { try parent.visibleRow(id) } }
        return try coordinator.row(for: id)
    }

    /// The row of `id` as this context sees it; `nil` when deleted here or missing.
    func visibleRow(_ id: ObjectID) throws -> RowSnapshot? {
        if let object = registered[id] {
            if object.state == .deleted { return nil }
            if !object.isFault { return object.current }
        }
        return try parentRow(for: id)
    }

    /// The rows of `ids` as the level above sees them, read in one statement per entity at the
    /// root (absent: deleted or missing).
    func parentRows(for ids: [ObjectID]) throws -> [ObjectID: RowSnapshot] {
        guard !ids.isEmpty else { return [:] }
        if let parent { return try parent.performAndWait { try parent.visibleRows(ids) } }
        return try coordinator.rows(for: ids)
    }

    func visibleRows(_ ids: [ObjectID]) throws -> [ObjectID: RowSnapshot] {
        var rows: [ObjectID: RowSnapshot] = [:]
        var missing: [ObjectID] = []
        for id in ids {
            if let object = registered[id] {
                if object.state == .deleted { continue }
                if !object.isFault { rows[id] = object.current; continue }
            }
            missing.append(id)
        }
        return rows.merging(try parentRows(for: missing)) { ours, _ in ours }
    }

    /// Reads every fault among `objects` with one batched read (Core Data's batch faulting).
    func fulfill(batch objects: [ManagedObject]) throws {
        let faults = objects.filter(\.isFault)
        let rows = try parentRows(for: faults.map(\.objectID))
        for object in faults {
            guard let row = rows[object.objectID] else { continue }
            object.load(row)
        }
    }

    /// The members of `object`'s to-many `index` as the level above sees them.
    func parentToManyKeys(_ object: ManagedObject, _ index: Int) throws -> Set<Int64> {
        try parentToManyKeys(object.objectID, object.info, index)
    }

    private func parentToManyKeys(_ id: ObjectID, _ info: EntityInfo, _ index: Int) throws -> Set<Int64> {
        if let parent { return try parent.performAndWait { try parent.visibleToManyKeys(id, info, index) } }
        return try coordinator.toManyKeys(info, index, of: id.primaryKey)
    }

    func visibleToManyKeys(_ id: ObjectID, _ info: EntityInfo, _ index: Int) throws -> Set<Int64> {
        if let object = registered[id] { return try toManyKeys(object, index) }
        var keys = try parentToManyKeys(id, info, index)
        applyLocalMembership(to: &keys, owner: id.primaryKey, info: info, index: index)
        return keys
    }

    // MARK: Pending changes along the chain

    func hasOwnPendingChanges(_ entities: Set<String>) -> Bool {
        inserted.keys.contains { entities.contains($0.entityName) }
            || deleted.keys.contains { entities.contains($0.entityName) }
            || updated.keys.contains { entities.contains($0.entityName) }
    }

    /// True when this context or an ancestor holds unsaved changes to any of `entities`.
    func chainHasPendingChanges(_ entities: Set<String>) -> Bool {
        if hasOwnPendingChanges(entities) { return true }
        guard let parent else { return false }
        return parent.performAndWait { parent.chainHasPendingChanges(entities) }
    }

    /// The ancestors' pending rows of `entity` (the nearest ancestor's win): what a child sees
    /// instead of the stored rows.
    func ancestorOverlay(_ entity: String) -> Overlay {
        guard let parent else { return Overlay() }
        return parent.performAndWait { parent.overlay(entity) }
    }

    private func overlay(_ entity: String) -> Overlay {
        var overlay = ancestorOverlay(entity)
        for object in inserted.values where object.info.name == entity {
            overlay.rows[object.objectID] = object.current
            overlay.deleted.remove(object.objectID)
        }
        for object in updated.values where object.info.name == entity { overlay.rows[object.objectID] = object.current }
        for object in deleted.values where object.info.name == entity {
            overlay.rows[object.objectID] = nil
            overlay.deleted.insert(object.objectID)
        }
        return overlay
    }

    struct Overlay {
        var rows: [ObjectID: RowSnapshot] = [:]
        var deleted: Set<ObjectID> = []
    }

    // MARK: Saving into the parent

    /// What a child hands its parent: each changed object's values as read and as saved.
    struct Push {
        var inserted: [(ObjectID, RowSnapshot, [ToManyState])] = []
        var updated: [(ObjectID, original: RowSnapshot, current: RowSnapshot, [ToManyState])] = []
        var deleted: [(ObjectID, original: RowSnapshot)] = []
        var ids: [ObjectID] { inserted.map(\.0) + updated.map(\.0) + deleted.map(\.0) }
    }

    /// The parent's side of a child's save: checks conflicts (the parent's values of an object
    /// against those the child read), then applies the child's changes in memory. Returns how
    /// conflicts ended, a checkpoint that undoes the whole push, and the rows that arrived.
    /// `forwardNow`: hand the rows to the other auto-merging children at once (a one-level save);
    /// a cascading save forwards them only once the whole cascade succeeded.
    func receive(_ push: Push, policy: MergePolicy, from child: ManagedObjectContext,
                 forwardNow: Bool) throws -> (Checkpoint, [ObjectID: Resolution], RowChanges) {
        assertOnQueue()
        var outcomes: [ObjectID: ConflictOutcome] = [:]
        var conflicts: [MergeConflict] = []
        func check(_ id: ObjectID, original: RowSnapshot, ours: RowSnapshot?) throws {
            guard let object = registered[id], !object.isFault else { return }
            let theirs: RowSnapshot? = object.state == .deleted ? nil : object.current
            do {
                let info = try info(id.entityName)
                if let outcome = try policy.resolve(info, id, original: original, ours: ours, theirs: theirs,
                                                    stored: { try self.coordinator.row(for: id) }) {
                    outcomes[id] = outcome
                }
            } catch let error as MergeConflictError {
                conflicts += error.conflicts
            }
        }
        for (id, original, current, _) in push.updated where current != original { try check(id, original: original, ours: current) }
        for (id, original) in push.deleted { try check(id, original: original, ours: nil) }
        if !conflicts.isEmpty { throw MergeConflictError(conflicts: conflicts) }

        let checkpoint = Checkpoint(self, ids: push.ids)
        var rows = RowChanges()
        var resolutions: [ObjectID: Resolution] = [:]
        for (id, row, toMany) in push.inserted {
            let info = try info(id.entityName)
            let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: nil, isNew: true))
            object.current = row
            for index in toMany.indices { object.toMany[index].added = toMany[index].added }
            registered[id] = object
            inserted[id] = object
            rows.inserted.append((id, row))
        }
        for (id, original, current, toMany) in push.updated {
            var written = current
            switch outcomes[id] {
            case nil, .delete?:
                break
            case .write(let merged)?:
                written = merged
                resolutions[id] = .written(merged)
            case .adoptTheirs(let theirs)?:
                resolutions[id] = .adoptedTheirs(theirs)
                continue
            case .adoptDeletion?:
                resolutions[id] = .deletedByThem
                continue
            }
            let object = try materialize(id, original)
            if resolutions[id] != nil {
                // A resolved conflict: the policy's row is the whole object.
                object.current.attributes = written.attributes
                object.current.toOnes = written.toOnes
            } else {
                for i in written.attributes.indices where written.attributes[i] != original.attributes[i] {
                    object.current.setAttribute(written.attributes[i], at: i)
                }
                for i in written.toOnes.indices where written.toOnes[i] != original.toOnes[i] {
                    object.current.setToOne(written.toOnes[i], at: i)
                }
            }
            for index in toMany.indices {
                for key in toMany[index].added { object.toMany[index].add(key) }
                for key in toMany[index].removed { object.toMany[index].remove(key) }
            }
            markChanged(object)
            rows.updated.append((id, object.current))
        }
        var removed: ObjectTable = [:]
        for (id, original) in push.deleted {
            switch outcomes[id] {
            case .adoptTheirs(let theirs)?:
                resolutions[id] = .adoptedTheirs(theirs)
                continue
            case .adoptDeletion?:
                resolutions[id] = .deletedByThem
                continue
            case nil, .delete?, .write?:
                break
            }
            let object = try materialize(id, original)
            rows.deleted.insert(id)
            if object.state == .inserted {
                inserted[id] = nil
                registered[id] = nil
                object.state = .invalid
                removed[id] = object
            } else {
                updated[id] = nil
                object.state = .deleted
                deleted[id] = object
            }
        }
        rows.toManyTouched = push.toManyTouched
        // Reported below as arrived from the child, not again as local edits of this context.
        for id in push.ids {
            localChanges.inserted.remove(id)
            localChanges.updated.remove(id)
            localChanges.deleted.remove(id)
        }
        if isObserved { post(.objectsDidChange(rows.objectChanges), removed: removed) }
        if forwardNow { forward(rows, except: child) }
        return (checkpoint, resolutions, rows)
    }

    /// The registered object `id`, its values taken from `row` (what the child read through
    /// this context) when it is a fault or not registered: no I/O.
    private func materialize(_ id: ObjectID, _ row: RowSnapshot) throws -> ManagedObject {
        if let object = registered[id] {
            if object.isFault {
                object.load(row)
            }
            return object
        }
        let info = try info(id.entityName)
        let object = info.entity.managedClass.init(ManagedObject.Creation(info: info, id: id, link: link, row: row, isNew: false))
        registered[id] = object
        return object
    }

    /// Hands `rows` to the children that merge automatically, except `origin`. The others hear
    /// of the deleted rows only: a row gone is gone for every context (its objects leave, the
    /// relationships naming it let go: ``detach(from:)``), merging or not.
    func forward(_ rows: RowChanges, except origin: ManagedObjectContext?) {
        guard !rows.isEmpty else { return }
        let targets = children.withLock { $0.compactMap(\.context) }
        for target in targets where target !== origin {
            if target.automaticallyMergesChangesFromParent {
                target.enqueue { target.merge(rows, generation: nil) }
            } else if !rows.deleted.isEmpty {
                var gone = RowChanges()
                gone.deleted = rows.deleted
                target.enqueue { [gone] in target.merge(gone, generation: nil) }
            }
        }
    }
}

extension ManagedObjectContext.Push {
    /// Objects whose to-many relationships the push changes, through either side.
    var toManyTouched: Set<ObjectID> {
        var touched = Set<ObjectID>()
        for (id, _, toMany) in inserted where toMany.contains(where: \.hasChanges) { touched.insert(id) }
        for (id, _, _, toMany) in updated where toMany.contains(where: \.hasChanges) { touched.insert(id) }
        return touched
    }
}

/// What a cascading save needs to put a context back: each touched object's state and its
/// place in the registry. Cost proportional to the objects touched.
struct Checkpoint {
    struct Entry {
        let id: ObjectID
        let object: ManagedObject?
        let membership: (registered: Bool, inserted: Bool, updated: Bool, deleted: Bool)
        let current: RowSnapshot?
        let committed: RowSnapshot?
        let toMany: [ToManyState]
        let isFault: Bool
        let state: ManagedObject.LifecycleState
    }
    let entries: [Entry]

    init(_ context: ManagedObjectContext, ids: some Sequence<ObjectID>) {
        entries = ids.map { id in
            let object = context.registered[id] ?? context.inserted[id] ?? context.deleted[id]
            return Entry(
                id: id, object: object,
                membership: (context.registered[id] != nil, context.inserted[id] != nil, context.updated[id] != nil, context.deleted[id] != nil),
                current: object?.current, committed: object?.committed, toMany: object?.toMany ?? [],
                isFault: object?.isFault ?? true, state: object?.state ?? .invalid)
        }
    }
}

extension ManagedObjectContext {
    /// Puts back every object a checkpoint recorded, and reports them refreshed.
    func restore(_ checkpoint: Checkpoint) {
        assertOnQueue()
        var changes = ObjectChanges()
        for entry in checkpoint.entries {
            let id = entry.id
            let now = registered[id] ?? inserted[id] ?? deleted[id]
            if let object = entry.object {
                object.current = entry.current ?? object.current
                object.committed = entry.committed
                object.toMany = entry.toMany
                object.isFault = entry.isFault
                object.state = entry.state
            }
            // An object the failed save created leaves; one it removed comes back.
            if let now, now !== entry.object { now.state = .invalid }
            registered[id] = entry.membership.registered ? entry.object : nil
            inserted[id] = entry.membership.inserted ? entry.object : nil
            updated[id] = entry.membership.updated ? entry.object : nil
            deleted[id] = entry.membership.deleted ? entry.object : nil
            changes.refreshed.insert(id)
        }
        if !changes.isEmpty { post(.objectsDidChange(changes)) }
    }
}
