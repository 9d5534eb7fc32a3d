internal import Foundation

extension ManagedObjectContext {
    /// Saves one level.
    ///
    /// - A **root** context validates every pending change, then commits them in one
    ///   `BEGIN IMMEDIATE … COMMIT` that writes the rows, bumps the store generation by exactly 1,
    ///   stamps the touched entities' generations and sets a fresh nonce. It returns the
    ///   ``CommitResult``.
    /// - A **child** context validates, then pushes its inserts, updates and deletes into its
    ///   parent's memory: no SQL statement, cost proportional to the changed objects. The store is
    ///   untouched until the root saves; it returns `nil`.
    ///
    /// Updates and deletes are checked against what the other side holds now (the parent's values,
    /// or the row version in the store); a conflict is resolved by ``mergePolicy``.
    ///
    /// A context without changes runs no statement and returns `nil`. Posts
    /// ``ContextEvent/willSave`` and ``ContextEvent/didSave(_:)``.
    ///
    /// - Throws: ``ValidationError`` listing every failure (object, key, rule),
    ///   ``MergeConflictError`` listing every conflict, or a ``StoreError``. When it throws, this
    ///   context, its ancestors and the store are exactly as they were.
    @discardableResult
    public func save() throws -> CommitResult? {
        try save(authoredBy: nil)
    }

    /// ``save()``, recording `inherited` (the author of the descendant whose ``saveToStore()``
    /// led here) as the history's author, else this context's own.
    func save(authoredBy inherited: String?) throws -> CommitResult? {
        assertOnQueue()
        processPendingChanges()
        leaveGoneObjectsWithNothingToSave()
        guard hasChanges else { return nil }
        // A read-only store: refused here, on every level, before anything moves.
        try coordinator.refuseWriteIfReadOnly("a save")
        KillPoint.hit("save.begin", in: name)
        post(.willSave)
        // Inserted objects whose unique key a stored row holds become that row (or the save
        // throws); put back when anything below throws.
        let adoption = try adoptUniqueKeyHolders()
        let outcome: CommitOutcome
        do {
            try validateForSave()
            KillPoint.hit("save.validated", in: name)
            if parent != nil {
                _ = try saveIntoParent(forwardNow: true)
                KillPoint.hit("save.pushed", in: name)
                return nil
            }
            var changes = try pendingStoreChanges()
            guard !changes.isEmpty else {
                acceptPendingChanges()
                return nil
            }
            changes.syncState = syncStateForNextCommit
            changes.requiredGeneration = requiredGenerationForNextCommit
            changes.clearsSyncCapture = !syncStateForNextCommit.isEmpty
            outcome = try coordinator.commit(changes, policy: policy, origin: name, author: inherited ?? author)
            syncStateForNextCommit = [:]
            requiredGenerationForNextCommit = nil
        } catch {
            undo(adoption)
            throw error
        }
        KillPoint.hit("committed", in: name)
        let (rows, removed) = finishSave(outcome.resolutions, committed: true,
                                         gather: isObserved || coordinator.contexts.hasMergingRoots(besides: self))
        let didSave = DidSave(rows, generation: outcome.result?.generation)
        post(.didSave(didSave), removed: removed)
        KillPoint.hit("merged", in: name)
        if outcome.result != nil { coordinator.contexts.broadcast(didSave, from: self) }
        KillPoint.hit("notified", in: name)
        return outcome.result
    }

    /// Saves this context and then every ancestor, each into the next, the root into the store:
    /// update → main → writer → SQLite in one call. Returns the root's ``CommitResult`` (`nil`
    /// when nothing reached the store).
    ///
    /// When no ancestor holds unsaved changes (the usual case for an update context), the chain
    /// takes a shortcut with the same result: this context's changes are committed in one
    /// transaction, without holding any ancestor's queue (main keeps serving reads while SQLite
    /// writes), then merged into each ancestor, root first (registered objects updated, every
    /// saved ID reported), so the ancestors never copy the saved objects. Otherwise each level
    /// saves into the next.
    ///
    /// All or nothing: when a level fails (validation, a conflict under ``MergePolicy/error``,
    /// SQLite), every level it already saved into is put back exactly as it was, and the error is
    /// thrown. Put-back objects are reported as refreshed.
    @discardableResult
    public func saveToStore() throws -> CommitResult? {
        try saveToStore(authoredBy: nil)
    }

    /// ``saveToStore()``; the commit records the author of the context it started from (else the
    /// nearest ancestor's that has one).
    func saveToStore(authoredBy inherited: String?) throws -> CommitResult? {
        assertOnQueue()
        let author = inherited ?? self.author
        guard let parent else { return try save(authoredBy: author) }
        processPendingChanges()
        leaveGoneObjectsWithNothingToSave()
        var own: Checkpoint?
        var pushed: (checkpoint: Checkpoint, rows: RowChanges)?
        if hasChanges { try coordinator.refuseWriteIfReadOnly("a save") }
        var adoption = UniqueKeyAdoption()
        if hasChanges {
            post(.willSave)
            adoption = try adoptUniqueKeyHolders()
            do {
                try validateForSave()
                if case .committed(let result) = try commitThroughCleanAncestors(author: author) { return result }
                own = Checkpoint(self, ids: Array(inserted.keys) + Array(updated.keys) + Array(deleted.keys))
                pushed = try saveIntoParent(forwardNow: false)
            } catch {
                undo(adoption)
                throw error
            }
        }
        do {
            return try parent.performAndWait {
                let result = try parent.saveToStore(authoredBy: author)
                // Only now that every level succeeded do the parent's other children hear of it.
                if let pushed { parent.forward(pushed.rows, except: self) }
                return result
            }
        } catch {
            if let pushed { parent.performAndWait { parent.restore(pushed.checkpoint) } }
            if let own { restore(own) }
            undo(adoption)
            throw error
        }
    }

    /// What the shortcut of ``saveToStore()`` did.
    private enum Shortcut {
        /// Not taken: an ancestor has changes of its own, or there is nothing for SQL to write.
        /// The save goes level by level.
        case notTaken
        /// Committed; the result is `nil` when every change resolved to the other side's
        /// version (nothing written, the generation unchanged).
        case committed(CommitResult?)
    }

    /// The shortcut of ``saveToStore()``: when every ancestor is clean, one commit from here.
    ///
    /// Each ancestor is found clean on its own queue, then the commit runs on this context's
    /// queue with the root's merge policy, holding no ancestor's queue: main keeps serving reads
    /// (and edits) while SQLite writes. The committed rows are then merged into each ancestor,
    /// root first, as each level's save would have left them. An ancestor that changed in
    /// between (an edit on main during the commit) merges them as it merges any other context's
    /// save: its own pending changes stay on top; what saves them next meets our rows as any
    /// later save does (row versions, its merge policy). Sequentially the result is that of the
    /// level-by-level save.
    private func commitThroughCleanAncestors(author: String?) throws -> Shortcut {
        guard parent != nil else { return .notTaken }
        let changes = try pendingStoreChanges()
        guard !changes.isEmpty else { return .notTaken }
        var ancestors: [ManagedObjectContext] = []
        var next = parent
        while let ancestor = next {
            ancestors.append(ancestor)
            next = ancestor.parent
        }
        let root = ancestors[ancestors.count - 1]
        for ancestor in ancestors {
            guard ancestor.performAndWait({ !ancestor.hasChanges }) else { return .notTaken }
        }
        let policy = root.performAndWait { root.policy }
        let author = author ?? ancestors.lazy.compactMap(\.author).first
        let predicted = predictedRows(inserting: changes.inserted, withMembers: changes.insertedWithMembers)
        // The store is the root's business: its policy decides, and its kill points carry its
        // name (`writer.transaction.begun`, …), as when each level saves.
        let outcome = try coordinator.commit(changes, policy: policy, origin: root.name, author: author)
        let rows = predicted.applying(outcome.resolutions)
        // Each ancestor forwards to its other children, not to the next one down: that one
        // merges right after, on this thread, before saveToStore returns.
        for (level, ancestor) in ancestors.enumerated().reversed() {
            let mergedNext = level == 0 ? self : ancestors[level - 1]
            ancestor.performAndWait {
                ancestor.merge(rows, generation: outcome.result?.generation, except: mergedNext)
                if ancestor === root, let result = outcome.result {
                    coordinator.contexts.broadcast(DidSave(rows, generation: result.generation), from: ancestor)
                }
            }
        }
        let (saved, removed) = finishSave(outcome.resolutions, committed: true, gather: isObserved)
        post(.didSave(DidSave(saved, generation: outcome.result?.generation)), removed: removed)
        return .committed(outcome.result)
    }

    /// The rows a root commit of the pending changes writes, with their new versions.
    ///
    /// `inserted` is the commit's own list (``StoreChanges/inserted``, each row at version 1),
    /// shared rather than copied: an import of a million objects would otherwise hold a second
    /// million-entry list while SQLite writes.
    private func predictedRows(inserting inserted: [(ObjectID, RowSnapshot)], withMembers: Set<ObjectID>) -> RowChanges {
        var rows = RowChanges()
        rows.inserted = inserted
        rows.toManyTouched = withMembers
        for object in updated.values {
            let membership = object.toMany.contains(where: \.hasChanges)
            if membership { rows.toManyTouched.insert(object.objectID) }
            guard let before = object.committed else { continue }
            var row = object.current
            if object.current != before {
                row.version = before.version + 1
            } else if !membership {
                continue
            }
            // An object whose only change is membership is reported updated too, as Core Data does.
            rows.updated.append((object.objectID, row))
        }
        rows.deleted = Set(deleted.keys)
        return rows
    }

    /// Discards the pending changes of this context and of every ancestor, so that every level
    /// shows the store again: after the ancestors roll back, the unchanged objects this context
    /// read through them (values the ancestors no longer hold) become faults, read again on next
    /// access.
    public func rollbackToStore() {
        assertOnQueue()
        _ = rollbackChain()
    }

    /// Rolls back the ancestors, then this level; returns the IDs of objects inserted at this
    /// level or above that no longer exist anywhere.
    private func rollbackChain() -> Set<ObjectID> {
        var vanished = parent.map { parent in parent.performAndWait { parent.rollbackChain() } } ?? []
        vanished.formUnion(inserted.keys)
        rollback()
        guard parent != nil else { return vanished }
        var changes = ObjectChanges()
        var removed: ObjectTable = [:]
        for object in Array(registered.values) {
            let id = object.objectID
            if vanished.contains(id) {
                registered[id] = nil
                object.state = .invalid
                removed[id] = object
                changes.invalidated.insert(id)
            } else if !object.isFault {
                object.turnIntoFault()
                changes.refreshed.insert(id)
            }
        }
        if !changes.isEmpty { post(.objectsDidChange(changes), removed: removed) }
        return vanished
    }

    /// Pushes the validated changes into the parent; returns the checkpoint that undoes the push
    /// and the rows that arrived there.
    private func saveIntoParent(forwardNow: Bool) throws -> (checkpoint: Checkpoint, rows: RowChanges) {
        guard let parent else { preconditionFailure("saveIntoParent on a root context") }
        var push = Push()
        for object in inserted.values { push.inserted.append((object.objectID, object.current, object.toMany)) }
        for object in updated.values where hasPendingDifference(object) {
            push.updated.append((object.objectID, original(of: object) ?? object.current, object.current, object.toMany))
        }
        for object in deleted.values { push.deleted.append((object.objectID, original(of: object) ?? object.current)) }
        let policy = self.policy
        let (checkpoint, resolutions, arrived) = try parent.performAndWait {
            try parent.receive(push, policy: policy, from: self, forwardNow: forwardNow)
        }
        let (rows, removed) = finishSave(resolutions, committed: false, gather: isObserved)
        post(.didSave(DidSave(rows, generation: nil)), removed: removed)
        return (checkpoint, arrived)
    }

    /// After a successful save: applies conflict resolutions, gives written rows their new
    /// version (`committed`: the rows reached the store), gathers what was saved and makes the
    /// current values the committed ones.
    private func finishSave(_ resolutions: [ObjectID: Resolution], committed: Bool, gather: Bool) -> (RowChanges, ObjectTable) {
        var removed: ObjectTable = [:]
        var rows = RowChanges()
        // What a resolution made of values a child pushed here: the children still hold what
        // they pushed (a row the store dropped, values the policy replaced), so the ones that
        // merge automatically are told, as of any save they did not make.
        var news = RowChanges()
        // What a conflict's resolution changed in this context's own objects: news for its
        // observers (a list showing the object), posted before the save's did-save.
        var resolved = ObjectChanges()
        var moves = MemberMoves()
        for (id, resolution) in resolutions {
            guard let object = inserted[id] ?? updated[id] ?? deleted[id] else { continue }
            switch resolution {
            case .written(let row), .adoptedTheirs(let row):
                if object.state == .deleted || row != object.current { resolved.updated.insert(id) }
            case .deletedByThem:
                resolved.invalidated.insert(id)
            }
            inserted[id] = nil
            updated[id] = nil
            deleted[id] = nil
            // Our to-one changes may have lost: the inverses kept in memory are read again.
            if case .written(let row) = resolution {
                resetInverses(of: object, ours: object.current, final: row)
                moves.note(object, final: row)
            }
            if case .adoptedTheirs(let row) = resolution {
                resetInverses(of: object, ours: object.current, final: row)
                moves.note(object, final: row)
            }
            switch resolution {
            case .written(let row), .adoptedTheirs(let row):
                if row.attributes != object.current.attributes || row.toOnes != object.current.toOnes {
                    var merged = row
                    if !committed { merged.version = object.current.version }
                    news.updated.append((id, merged))
                }
            case .deletedByThem:
                news.deleted.insert(id)
            }
            switch resolution {
            case .written(var row):
                if !committed { row.version = object.current.version }
                object.current = row
                object.committed = row
                object.acceptToManyChanges()
                object.state = .clean
                rows.updated.append((id, row))
            case .adoptedTheirs(let row):
                object.current = row
                object.committed = row
                object.resetToMany()
                object.state = .clean
                registered[id] = object
                rows.toManyTouched.insert(id)
            case .deletedByThem:
                object.state = .invalid
                registered[id] = nil
                removed[id] = object
            }
        }
        for object in updated.values { moves.note(object, final: object.current) }
        realignMembers(moves)
        // One pass per set: new versions, what was saved (only when someone will read it), and
        // the current values becoming the committed ones.
        for object in inserted.values {
            if committed { object.current.version = 1 }
            if gather {
                rows.inserted.append((object.objectID, object.current))
                if object.toMany.contains(where: \.hasChanges) { rows.toManyTouched.insert(object.objectID) }
            }
            object.committed = object.current
            object.acceptToManyChanges()
            object.state = .clean
        }
        for object in updated.values {
            let membership = object.toMany.contains(where: \.hasChanges)
            if let before = object.committed {
                let rowChanged = object.current != before
                if rowChanged, committed { object.current.version = before.version + 1 }
                if gather, rowChanged || membership { rows.updated.append((object.objectID, object.current)) }
            }
            if gather, membership { rows.toManyTouched.insert(object.objectID) }
            object.committed = object.current
            object.acceptToManyChanges()
            object.state = .clean
        }
        for object in deleted.values {
            if gather { rows.deleted.insert(object.objectID) }
            removed[object.objectID] = object
            object.state = .invalid
            registered[object.objectID] = nil
        }
        forgetDeletedMembers(deleted.values)
        inserted = [:]
        updated = [:]
        deleted = [:]
        goneElsewhere = []
        conflictBases = [:]
        if !resolved.isEmpty, isObserved { post(.objectsDidChange(resolved), removed: removed) }
        forward(news, except: nil)
        return (rows, removed)
    }

    /// Forgets the to-many members of the registered destinations of `object`'s to-ones whose
    /// value a conflict resolution changed from ours.
    private func resetInverses(of object: ManagedObject, ours: RowSnapshot, final: RowSnapshot) {
        for i in object.info.toOnes.indices where ours.toOnes[i] != final.toOnes[i] {
            for key in [ours.toOnes[i], final.toOnes[i]].compactMap({ $0 }) {
                registered[ObjectID(entity: object.info.toOneDestinationNames[i], primaryKey: key)]?.resetToMany()
            }
        }
    }

    /// What a save would write, gathered without touching any object. Rows are written in
    /// primary-key order: keys are reserved in ascending blocks, so new rows append at the end of
    /// the table's B-tree instead of landing at random pages (dictionary order), which costs SQLite
    /// page splits and reads (insert 100k: 2x faster).
    func pendingStoreChanges() throws -> StoreChanges {
        var changes = StoreChanges()
        var last: EntityInfo?
        changes.inserted.reserveCapacity(inserted.count)
        for object in inserted.values {
            // At the version the INSERT gives it (the column's default, 1; no version is bound).
            var row = object.current
            row.version = 1
            changes.inserted.append((object.objectID, row))
            if !object.toMany.isEmpty, object.toMany.contains(where: \.hasChanges) { changes.insertedWithMembers.insert(object.objectID) }
            // Objects come grouped by entity more often than not: one name hash per run.
            if object.info !== last {
                changes.touchedEntities.insert(object.info.name)
                last = object.info
            }
            if !object.info.toManyStorage.isEmpty { collectJoinChanges(object, into: &changes) }
        }
        for object in updated.values where hasPendingDifference(object) {
            if let original = original(of: object), object.current != original {
                changes.updated.append((object.info, object.primaryKey, object.current, original))
            }
            changes.touchedEntities.insert(object.info.name)
            collectJoinChanges(object, into: &changes)
        }
        // By entity name, then key (IDs of one entity compare by key alone; names are compared
        // only between entities).
        Self.sortByEntityNameAndKey(&changes.inserted)
        changes.updated.sort { ($0.0.ordinal, $0.1) < ($1.0.ordinal, $1.1) }
        for object in deleted.values {
            changes.deleted.append((object.info, object.primaryKey, original(of: object) ?? object.current))
            changes.touchedEntities.insert(object.info.name)
            for storage in object.info.toManyStorage {
                if case let .joinTable(table, own, _) = storage {
                    changes.joinRowsOfDeleted.append((object.objectID, table, own, object.primaryKey))
                }
            }
        }
        return changes
    }

    /// Join-table rows come from the side whose key is column `a`, so each pair is written once.
    private func collectJoinChanges(_ object: ManagedObject, into changes: inout StoreChanges) {
        for (index, storage) in object.info.toManyStorage.enumerated() {
            guard case let .joinTable(table, own, _) = storage, own == "\"a\"" else { continue }
            let key = object.primaryKey
            let destination = object.info.toManyDestinationNames[index]
            for other in object.toMany[index].added {
                changes.joinInserts.append((object.objectID, ObjectID(entity: destination, primaryKey: other), table, key, other))
            }
            for other in object.toMany[index].removed {
                changes.joinDeletes.append((object.objectID, ObjectID(entity: destination, primaryKey: other), table, key, other))
            }
        }
    }

    /// After a successful save: the current values become the committed ones.
    func acceptPendingChanges() {
        var moves = MemberMoves()
        for object in updated.values { moves.note(object, final: object.current) }
        realignMembers(moves)
        for object in Array(inserted.values) + Array(updated.values) {
            object.committed = object.current
            object.acceptToManyChanges()
            object.state = .clean
        }
        for object in deleted.values {
            object.state = .invalid
            registered[object.objectID] = nil
        }
        forgetDeletedMembers(deleted.values)
        inserted = [:]
        updated = [:]
        deleted = [:]
    }

    // MARK: Validation

    /// Checks required values, ranges, lengths, regular expressions and deny rules. Reads related
    /// rows where a rule needs them; changes nothing.
    func validateForSave() throws {
        var failures: [ValidationFailure] = []
        // Appended only when there are some: `+=` of the empty list most objects give costs a
        // call and a uniqueness check each (5 M instructions of a 35,000-object import).
        for object in inserted.values { let found = try validate(object); if !found.isEmpty { failures += found } }
        for object in updated.values { let found = try validate(object); if !found.isEmpty { failures += found } }
        // Report in object-ID order (then key), deny failures last; sorting the few failures is
        // cheaper than sorting every object of a large save.
        failures.sort { ($0.objectID, $0.key) < ($1.objectID, $1.key) }
        for object in deleted.values.sorted(by: { $0.objectID < $1.objectID }) {
            for relationship in object.info.entity.relationships where relationship.deleteRule == .deny {
                let remaining = try relatedObjects(object, relationship.name).filter { $0.state != .deleted }
                if !remaining.isEmpty {
                    failures.append(ValidationFailure(
                        objectID: object.objectID, key: relationship.name, rule: .deny,
                        message: "cannot delete while \(relationship.name) holds \(remaining.map(\.objectID.description).joined(separator: ", "))"))
                }
            }
        }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
    }

    func validate(_ object: ManagedObject) throws -> [ValidationFailure] {
        let info = object.info
        var failures = ManagedObjectContext.rowHasOnlyRequiredChecks(object.current, info: info)
            ? [] : ManagedObjectContext.rowFailures(object.current, info: info, id: object.objectID)
        for index in info.requiredToManys where try toManyKeys(object, index).isEmpty {
            failures.append(ValidationFailure(objectID: object.objectID, key: info.toManys[index].name, rule: .required,
                                              message: "at least one \(info.toManys[index].destination) is required"))
        }
        return failures
    }

    /// The rules a row breaks on its own (attributes and to-ones; a to-many's members live in
    /// other rows): what a save checks per object and a batch request per row.
    /// True when `row` passes ``rowFailures(_:info:id:)`` on its required checks alone and the
    /// entity has no other rule: the common case of a save's object, checked without building a
    /// failure list (about 950 instructions a flight; callgrind). A batch row makes the same
    /// check on its stamps (`BatchRowValues.complete(key:into:)`).
    @inline(__always)
    static func rowHasOnlyRequiredChecks(_ row: RowSnapshot, info: EntityInfo) -> Bool {
        guard info.attributeRules.isEmpty else { return false }
        for index in info.requiredAttributes { if case nil = row.attributes[index] { return false } }
        for index in info.requiredToOnes where row.toOnes[index] == nil { return false }
        return true
    }

    static func rowFailures(_ row: RowSnapshot, info: EntityInfo, id: ObjectID) -> [ValidationFailure] {
        rowFailures(info: info, id: id, hasAttribute: { row.attribute($0) != nil }, ruledValue: { row.attribute($0) },
                    hasToOne: { row.toOnes[$0] != nil })
    }

    /// The checks of ``rowFailures(_:info:id:)`` on a row told by closures: whether attribute
    /// (or to-one) `index` holds a value, and the value of an attribute that has rules. A batch
    /// insert binds its values as they are set and keeps only these.
    static func rowFailures(info: EntityInfo, id: ObjectID, hasAttribute: (Int) -> Bool,
                            ruledValue: (Int) -> AttributeValue?, hasToOne: (Int) -> Bool) -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        func fail(_ key: String, _ rule: ValidationFailure.Rule, _ message: String) {
            failures.append(ValidationFailure(objectID: id, key: key, rule: rule, message: message))
        }
        for index in info.requiredAttributes where !hasAttribute(index) {
            fail(info.attributes[index].name, .required, "a value is required")
        }
        // Only the attributes that have rules: no copy of the others' descriptions per object.
        for (index, attribute) in info.attributeRules {
            guard let value = ruledValue(index) else { continue }
            if let number = value.numericValue {
                if let min = attribute.minValue, number < min { fail(attribute.name, .minValue, "\(value) is less than \(min)") }
                if let max = attribute.maxValue, number > max { fail(attribute.name, .maxValue, "\(value) is greater than \(max)") }
            }
            let length: Int? = switch value {
            case .string(let text): text.count
            case .binary(let data): data.count
            default: nil
            }
            if let length {
                if let min = attribute.minLength, length < min { fail(attribute.name, .minLength, "length \(length) is less than \(min)") }
                if let max = attribute.maxLength, length > max { fail(attribute.name, .maxLength, "length \(length) is greater than \(max)") }
            }
            if let pattern = attribute.regex, case .string(let text) = value, !RegexCache.matches(pattern, text) {
                fail(attribute.name, .regex, "\"\(text)\" does not match /\(pattern)/")
            }
        }
        for index in info.requiredToOnes where !hasToOne(index) {
            fail(info.toOnes[index].name, .required, "a \(info.toOnes[index].destination) is required")
        }
        return failures
    }
}

extension ManagedObjectContext {
    /// Objects whose row another connection deleted while they had changes here, and whose
    /// changes have since been undone (a value set back to what was read): nothing is left to
    /// save, and the row is gone, so they leave the context before a save (reported as
    /// invalidated), as they would have when the deletion was merged. Saved as they are, they
    /// would stay registered as clean objects that no fetch finds any more.
    func leaveGoneObjectsWithNothingToSave() {
        guard !goneElsewhere.isEmpty else { return }
        var changes = ObjectChanges()
        var removed: ObjectTable = [:]
        for id in goneElsewhere {
            guard let object = updated[id], object.current == object.committed else { continue }
            letGo(of: object, into: &changes, removed: &removed)
        }
        if !changes.isEmpty { post(.objectsDidChange(changes), removed: removed) }
    }
}
