internal import StrataSQLite

/// Following the context: re-evaluating changed rows and computing exact change sets.
extension AnyFetchedResultsController {
    /// Re-evaluates every changed row of the entity — registered in the context or not — and
    /// every row whose related objects changed a value a key path reads, and reports what moved.
    /// Cost: O(k log n) for k such rows (a key index finds each row's old place, a binary search
    /// its new one). The request re-runs instead (O(n)) for a limit or offset, a commit made
    /// elsewhere, or a change to an entity it reads through a to-many relationship.
    func contextDidChange(_ changes: ObjectChanges) {
        let plan = checkedPlan()
        let root = plan.info.name
        restamp(changes.unchangedOverNewRow, of: root)
        let dependencies = checkedDependencies()
        do {
            if needsRerun || plan.request.fetchLimit != nil || plan.request.fetchOffset > 0
                || !changes.entitiesChangedElsewhere.isDisjoint(with: plan.entities)
                || changes.all.contains(where: { dependencies.throughToMany.contains($0.entityName) }) {
                try rerun(EntityKeyChanges(changes, entity: root), plan)
                return
            }
            try loadRelatedValues(plan)
            let own = EntityKeyChanges(changes, entity: root)
            var candidates = own.all
            guard let related = try relatedCandidates(changes, plan, dependencies) else {
                try rerun(own, plan)
                return
            }
            candidates.formUnion(related)
            guard !candidates.isEmpty else { return }
            // Rows a re-run placed by a newer read than the context's (see ``placedByNewerRead``).
            candidates.formUnion(placedByNewerRead)
            try follow(candidates, own, plan, restarts: 0)
        } catch {
            needsRerun = true
            report(.failed(.trackingFailed(reason: "\(error)")))
        }
    }

    /// Rows listed by the version their unchanged values were read at take a content stamp of
    /// those values: the row in the store moved on (to an owner deleted in this context, whose
    /// rule let go of it again), and a version stamp, with the row's unsaved change, would read
    /// as changed at the next re-run.
    private func restamp(_ unchanged: [ObjectID: Int64], of root: String) {
        for (id, version) in unchanged where id.entityName == root && !contentStamped.contains(id.primaryKey) {
            guard let chunk = locations[id.primaryKey],
                  rows.stamp(of: id.primaryKey, inChunk: chunk) == AnyFetchedResultsController.versionStamp(version),
                  let object = managedObjectContext.registered[id] else { continue }
            rows.setStamp(of: id.primaryKey, inChunk: chunk, to: AnyFetchedResultsController.contentStamp(object.current))
            contentStamped.insert(id.primaryKey)
        }
    }

    /// The rows whose related objects changed a value that a key path reads; `nil` when only a
    /// re-run can tell (an intermediate object of a longer chain has unsaved changes).
    private func relatedCandidates(_ changes: ObjectChanges, _ plan: FetchPlan,
                                   _ dependencies: FetchedDependencies) throws -> Set<Int64>? {
        let context = managedObjectContext
        var affected: [String: [Int64]] = [:]
        for id in changes.all where id.entityName != plan.info.name && plan.entities.contains(id.entityName) {
            let slots = dependencies.slots(of: id.entityName)
            guard !slots.isEmpty, let info = context.schema.infos[id.entityName] else { continue }
            let now = try VisibleSubject(context: context, info: info, key: id.primaryKey)?.values(slots) ?? []
            if relatedValues[id] != now {
                relatedValues[id] = now
                placementValues = [:]               // values read through key paths may be old
                affected[id.entityName, default: []].append(id.primaryKey)
            }
        }
        guard !affected.isEmpty else { return [] }
        var candidates = Set<Int64>()
        for chain in dependencies.chains {
            for (j, hop) in chain.hops.enumerated() {
                guard let keys = affected[hop.destination.name] else { continue }
                // Unsaved changes to the objects between the root and this hop: SQL can't follow them.
                if j > 0, context.chainHasPendingChanges(Set(chain.hops[..<j].map(\.destination.name))) { return nil }
                let sql = FetchedDependencies.reachSQL(chain.hops, through: j)
                let found: [Int64] = try context.coordinator.withReader { db in
                    let statement = try db.cachedStatement(sql)
                    try statement.bind("[" + keys.map(String.init).joined(separator: ",") + "]", at: 1)
                    var found: [Int64] = []
                    try statement.forEachRow { found.append($0.int64(at: 0)) }
                    return found
                }
                candidates.formUnion(found)
            }
        }
        // Rows with unsaved changes may point elsewhere than the store says: re-evaluate them too.
        candidates.formUnion(context.chainPendingKeys(plan.info.name))
        return candidates
    }

    /// A listed row whose values could not be read while placing another: it is gone.
    private struct VanishedRow: Error { let key: Int64 }

    /// A listed row that no longer reads as the layout placed it (another connection changed it,
    /// or its related object, in a commit not yet merged here; or an edit not yet reported): its
    /// values now would misplace the row being placed, so it is placed again too.
    private struct StaleNeighbour: Error { let key: Int64 }

    /// A row being placed reads a related object (through a sort key path) otherwise than the
    /// list knows it: the list took that object's values from a read of the store that is ahead
    /// of this context (another connection's commit not yet merged here), and placing the row by
    /// the context's older values would put it where the object's news, when it is merged, no
    /// longer moves it (two-process burst test: a book left alone under its shelf's old label).
    private struct RelatedAhead: Error {}

    /// One changed row's place: before (from the key index) and after (once re-inserted).
    struct Tracked {
        var key: Int64
        var old: FetchedRows.Location?
        var oldFlat = 0
        var new: FetchedRows.Location?
        var newFlat = 0
        /// The row's stamp before, and whether it was a content stamp.
        var oldStamp: UInt32 = 0
        var oldContent = false
    }

    /// Whether a row changed since it was stamped `old` (a content stamp when `oldContent`),
    /// judged on the row as the context shows it now. A content stamp compares exactly. A version
    /// stamp (read from the store) compares with the row's version now, which is the store's for
    /// a row the change names (merged or re-read with its new version); a row with unsaved
    /// changes along the chain has changed from any version stamp.
    static func changed(_ subject: VisibleSubject, old: UInt32, oldContent: Bool, pending: Bool) -> Bool {
        if oldContent { return contentStamp(subject.row) != old }
        if pending { return true }
        return versionStamp(subject.row.version) != old
    }

    /// Removes every candidate, re-evaluates each and inserts it where it now belongs.
    /// `restarts`: placements already started again for stale neighbours; past
    /// ``maximumPlacementRestarts`` (the store is far ahead of the list: many rows changed by
    /// commits not yet merged), the request re-runs instead (O(n), one consistent read).
    private func follow(_ candidates: Set<Int64>, _ own: EntityKeyChanges, _ plan: FetchPlan, restarts: Int) throws {
        let context = managedObjectContext
        let order = sectionOrder
        let before = rows
        var rows = before
        var locations = self.locations
        self.locations = KeyLocations()                 // `locations` is now the only owner: no copy
        let beforeOffsets = AnyFetchedResultsController.offsets(before)
        var tracked = candidates.sorted().map { key -> Tracked in
            var entry = Tracked(key: key)
            if let chunk = locations[key] {
                let location = before.location(of: key, inChunk: chunk, order: order)
                entry.old = location
                entry.oldFlat = beforeOffsets[location.section] + location.item
                entry.oldStamp = before.stamp(of: key, inChunk: chunk)
                entry.oldContent = self.contentStamped.contains(key)
            }
            return entry
        }
        // A row the change names is reported updated when it changed since it was stamped, and
        // takes a content stamp of what the context shows now. A row placed again only because a
        // related object changed keeps its stamp: if its own values changed too (an edit not yet
        // reported), the change that names it will find the difference.
        let named = own.updated.union(own.refreshed).union(own.inserted)
        let pendingKeys = named.isEmpty ? [] : context.chainPendingKeys(plan.info.name)
        var contentStamped = self.contentStamped
        var changedRows = Set<Int64>()
        // Neighbours read and rows placed: kept in ``placementValues`` once this placement holds.
        var read: [Int64: PlacedValues] = [:]
        do {
            for entry in tracked {
                if let chunk = locations[entry.key] { rows.remove(entry.key, inChunk: chunk, locations: &locations, order: order) }
            }
            // Rows of the controller's own entity that left the context: deleted objects of other
            // entities (a category whose items were nullified) say nothing about these keys.
            let gone = own.deleted.union(own.invalidated)
            // Rows are placed by all their sort values: within a section the first (the section
            // key's) can still differ (`nil` and `""` share a section).
            let sectioned = sectionNameKeyPath != nil
            var probed: [Int64: [SQLiteValue]] = [:]
            let memo = VisibleRowMemo()
            var neighbourPending: Set<Int64>?
            let dependencies = checkedDependencies()
            /// A listed row's sort values, read only once it is known to read as the layout placed it
            /// (its stamp, and the related values its key paths read): a row another connection
            /// changed in a commit not yet merged here reads newer than the layout, and comparing
            /// with it would put the row being placed in the wrong place for good (issue 46).
            func values(of key: Int64, listedStamp: UInt32, section: SQLiteValue?) throws -> [SQLiteValue] {
                if let known = probed[key] { return known }
                if let placed = placementValues[key], placed.stamp == listedStamp,
                   section.map({ order(AnyFetchedResultsController.sectionValue(placed.values[0]), $0) == 0 }) ?? true {
                    trackingStatistics.rowsProbedFromMemory += 1
                    probed[key] = placed.values
                    return placed.values
                }
                guard let subject = try VisibleSubject(context: context, info: plan.info, key: key, memo: memo) else {
                    throw VanishedRow(key: key)
                }
                let asListed: Bool
                if contentStamped.contains(key) {
                    asListed = AnyFetchedResultsController.contentStamp(subject.row) == listedStamp
                } else {
                    if neighbourPending == nil { neighbourPending = context.chainPendingKeys(plan.info.name) }
                    asListed = !neighbourPending!.contains(key) && AnyFetchedResultsController.versionStamp(subject.row.version) == listedStamp
                }
                guard asListed, try relatedValuesAsKnown(subject, plan, dependencies) else { throw StaleNeighbour(key: key) }
                let found = try plan.sortValues(subject)
                // Listed in the section being placed into, it must still read as of that section.
                if let section, order(AnyFetchedResultsController.sectionValue(found[0]), section) != 0 { throw StaleNeighbour(key: key) }
                trackingStatistics.rowsProbed += 1
                probed[key] = found
                read[key] = PlacedValues(stamp: listedStamp, values: found)
                return found
            }
            for entry in tracked where !gone.contains(entry.key) {
                trackingStatistics.rowsEvaluated += 1
                contentStamped.remove(entry.key)
                guard let subject = try VisibleSubject(context: context, info: plan.info, key: entry.key, memo: memo),
                      try plan.condition?.evaluate(subject) ?? true else { continue }
                guard try relatedValuesAsKnown(subject, plan, dependencies) else { throw RelatedAhead() }
                let all = try plan.sortValues(subject)
                probed[entry.key] = all
                var stamp = entry.oldStamp
                if entry.old == nil || named.contains(entry.key) {
                    if entry.old != nil, AnyFetchedResultsController.changed(subject, old: entry.oldStamp, oldContent: entry.oldContent,
                                                                         pending: pendingKeys.contains(entry.key)) {
                        changedRows.insert(entry.key)
                    }
                    stamp = AnyFetchedResultsController.contentStamp(subject.row)
                    contentStamped.insert(entry.key)
                } else if entry.oldContent {
                    contentStamped.insert(entry.key)
                }
                let section = sectioned ? AnyFetchedResultsController.sectionValue(all[0]) : nil
                try rows.insert(key: entry.key, stamp: stamp, sectionValue: section ?? .null, locations: &locations,
                                order: order, makeSection: makeSection) { other, listedStamp in
                    let comparison = plan.compareSortValues(try values(of: other, listedStamp: listedStamp, section: section), all)
                    return comparison < 0 || (comparison == 0 && other < entry.key)
                }
                read[entry.key] = PlacedValues(stamp: stamp, values: all)
            }
        } catch {
            // Put the last good layout back; the next change re-runs the request.
            self.rows = before
            self.locations = AnyFetchedResultsController.locations(of: before)
            if error is RelatedAhead {
                // One consistent read instead: the rows and the related values together.
                trackingStatistics.relatedAheadReruns += 1
                return try rerun(own, plan)
            }
            if let stale = error as? StaleNeighbour {
                guard !candidates.contains(stale.key) else {
                    throw FetchedResultsError.trackingFailed(reason: "a row of \(plan.info.name) changed while being placed")
                }
                trackingStatistics.stalePlacements += 1
                guard restarts < AnyFetchedResultsController.maximumPlacementRestarts else { return try rerun(own, plan) }
                return try follow(candidates.union([stale.key]), own, plan, restarts: restarts + 1)
            }
            guard let vanished = error as? VanishedRow else { throw error }
            // A listed row another process deleted, not yet processed here (its news comes with
            // processExternalChanges): the row is gone, so it leaves the list now, as a delete.
            guard !candidates.contains(vanished.key) else {
                throw FetchedResultsError.trackingFailed(reason: "a row of \(plan.info.name) vanished while being placed")
            }
            return try follow(candidates.union([vanished.key]), own, plan, restarts: restarts)
        }
        let afterOffsets = AnyFetchedResultsController.offsets(rows)
        for index in tracked.indices {
            guard let chunk = locations[tracked[index].key] else { continue }
            let location = rows.location(of: tracked[index].key, inChunk: chunk, order: order)
            tracked[index].new = location
            tracked[index].newFlat = afterOffsets[location.section] + location.item
        }
        self.rows = rows
        self.locations = locations
        self.contentStamped = contentStamped
        placedByNewerRead.subtract(candidates)
        // A candidate not placed again (gone, or no longer selected) leaves; the others and the
        // neighbours read take the values they were placed or compared by.
        for key in candidates { placementValues[key] = nil }
        if placementValues.count + read.count > AnyFetchedResultsController.placementValuesLimit { placementValues = [:] }
        placementValues.merge(read) { _, new in new }
        let result = changeSet(before: before, after: rows, tracked: tracked, updated: changedRows)
        if !result.isEmpty { report(.changes(result)) }
    }

    /// How many times one change's placement starts again for stale neighbours before the request
    /// re-runs instead.
    static let maximumPlacementRestarts = 8

    /// Whether the related objects `subject`'s sort key paths pass through read as the
    /// controller last knew them (``relatedValues``); an object it holds no values for is taken
    /// as known (a related entity too large to load: see ``relatedPrefillLimit``).
    private func relatedValuesAsKnown(_ subject: VisibleSubject, _ plan: FetchPlan, _ dependencies: FetchedDependencies) throws -> Bool {
        guard !relatedValues.isEmpty else { return true }
        for sort in plan.sortPaths where !sort.path.hops.isEmpty {
            var current = subject
            for hop in sort.path.hops {
                guard let key = current.row.toOnes[hop.index] else { break }
                let destination = managedObjectContext.schema.infos[current.info.toOnes[hop.index].destination]!
                let id = ObjectID(entity: destination.internedName, primaryKey: key)
                guard let next = try VisibleSubject(context: managedObjectContext, info: destination, key: key, memo: subject.memo) else {
                    // Gone as the context shows it (another connection deleted it, and the news
                    // has not come), while the list placed rows by its values: not as known.
                    if let known = relatedValues[id], !known.isEmpty { return false }
                    break
                }
                if let known = relatedValues[id], known != next.values(dependencies.slots(of: next.info.name)) { return false }
                current = next
            }
        }
        return true
    }

    /// Runs the request again and compares the whole layout (O(n)): rows whose stamp changed,
    /// that came or went, or that changed order are reported.
    private func rerun(_ own: EntityKeyChanges, _ plan: FetchPlan) throws {
        trackingStatistics.reruns += 1
        let fetched = try fetchRows(plan)
        let before = rows
        let old = before.flattened()
        let comparable = stampsKnown
        let oldContent = contentStamped
        install(fetched)
        try loadRelatedValues(plan)
        let after = rows
        var oldIndex: [Int64: Int] = [:]
        oldIndex.reserveCapacity(old.count)
        for (i, row) in old.enumerated() { oldIndex[row.key] = i }
        var changed = own.all
        // Updated: a row the change names (or any row, when rows changed through another
        // connection and nobody could name them) whose stamp says it changed. Stamps of one kind
        // compare directly; a content stamp from before meets a version stamp from the store by
        // taking the row's content stamp now.
        let named = own.inserted.union(own.updated).union(own.refreshed)
        var updated = Set<Int64>()
        var kept: [(key: Int64, oldIndex: Int)] = []
        var keepStamps: [(key: Int64, stamp: UInt32, content: Bool)] = []
        var newerRead: [Int64] = []
        // Rows with unsaved changes along the chain (only needed when the fetch came from memory).
        let pendingKeys = fetched.content && fetched.count > 0 ? managedObjectContext.chainPendingKeys(plan.info.name) : []
        for row in fetched.rows {
            guard let i = oldIndex[row.key] else { changed.insert(row.key); continue }
            let differs: Bool
            if !comparable {
                // A layout from a cache file has no stamps: only what the change names is known.
                differs = own.all.contains(row.key)
            } else if oldContent.contains(row.key) == row.content {
                differs = old[i].stamp != row.stamp
            } else if let subject = try VisibleSubject(context: managedObjectContext, info: plan.info, key: row.key) {
                differs = AnyFetchedResultsController.changed(subject, old: old[i].stamp, oldContent: oldContent.contains(row.key),
                                                           pending: pendingKeys.contains(row.key))
                // Unchanged as the context shows it: the row keeps the stamp that was compared.
                // The fetched stamp may describe a newer row (a version stamp read from a store
                // that another connection changed, before the context heard of it): adopting it
                // would make that change look already seen (found by the model test's seed
                // 11595247941790151521: a windowed list never reported a note set elsewhere).
                if !differs {
                    keepStamps.append((row.key, old[i].stamp, oldContent.contains(row.key)))
                    // Placed by the store's version while the context shows an older one.
                    if !row.content, AnyFetchedResultsController.versionStamp(subject.row.version) != row.stamp { newerRead.append(row.key) }
                }
            } else {
                differs = true
            }
            if differs {
                changed.insert(row.key)
                if own.changedElsewhere || named.contains(row.key) {
                    updated.insert(row.key)
                } else {
                    // Changed, but not named (an edit in a `perform` block not yet reported):
                    // it keeps its old stamp, so that the change that names it finds the difference.
                    keepStamps.append((row.key, old[i].stamp, oldContent.contains(row.key)))
                    newerRead.append(row.key)
                }
            } else if !changed.contains(row.key) {
                kept.append((row.key, i))
            }
        }
        for (key, stamp, content) in keepStamps {
            if let chunk = locations[key] { rows.setStamp(of: key, inChunk: chunk, to: stamp) }
            if content { contentStamped.insert(key) } else { contentStamped.remove(key) }
        }
        placedByNewerRead.formUnion(newerRead)
        let newKeys = Set(fetched.keys)
        for row in old where !newKeys.contains(row.key) { changed.insert(row.key) }
        // Stamps say nothing of related rows: a row whose section changed (its category was
        // renamed) is changed too, though its own values are not.
        if sectionNameKeyPath != nil {
            func sectionNames(_ layout: FetchedRows) -> [Int64: String] {
                var names: [Int64: String] = [:]
                for section in layout.sections {
                    for c in section.chunks { for key in layout.chunks[Int(c)].keys { names[key] = section.name } }
                }
                return names
            }
            let oldNames = sectionNames(before), newNames = sectionNames(after)
            kept.removeAll { entry in
                guard oldNames[entry.key] != newNames[entry.key] else { return false }
                changed.insert(entry.key)
                return true
            }
        }
        // Unchanged rows keep their relative order unless a stamp collided: any that did not are changed too.
        let staying = Set(AnyFetchedResultsController.longestIncreasingRun(kept.map(\.oldIndex)).map { kept[$0].key })
        for row in kept where !staying.contains(row.key) { changed.insert(row.key) }

        let beforeOffsets = AnyFetchedResultsController.offsets(before), afterOffsets = AnyFetchedResultsController.offsets(after)
        // Positions of the changed rows: one pass over each layout.
        func positions(_ layout: FetchedRows) -> [Int64: FetchedRows.Location] {
            var found: [Int64: FetchedRows.Location] = [:]
            for (s, section) in layout.sections.enumerated() {
                var item = 0
                for c in section.chunks {
                    for key in layout.chunks[Int(c)].keys {
                        if changed.contains(key) { found[key] = FetchedRows.Location(section: s, item: item) }
                        item += 1
                    }
                }
            }
            return found
        }
        let oldPositions = positions(before), newPositions = positions(after)
        let tracked = changed.sorted().map { key -> Tracked in
            var entry = Tracked(key: key)
            if let location = oldPositions[key] {
                entry.old = location
                entry.oldFlat = beforeOffsets[location.section] + location.item
            }
            if let location = newPositions[key] {
                entry.new = location
                entry.newFlat = afterOffsets[location.section] + location.item
            }
            return entry
        }
        let result = changeSet(before: before, after: after, tracked: tracked, updated: updated)
        if !result.isEmpty { report(.changes(result)) }
    }

    /// The keys of the controller's entity that a change names, by kind: the only form in which
    /// the controller reads an ``ObjectChanges``, so that no key is compared without its entity
    /// (`Category/1` is not `Item/1`).
    struct EntityKeyChanges {
        var inserted: Set<Int64> = []
        var updated: Set<Int64> = []
        var deleted: Set<Int64> = []
        var refreshed: Set<Int64> = []
        var invalidated: Set<Int64> = []
        /// Another connection changed rows of the entity (which ones is not known).
        var changedElsewhere = false

        init(_ changes: ObjectChanges, entity: String) {
            func keys(_ ids: Set<ObjectID>) -> Set<Int64> {
                var keys = Set<Int64>()
                for id in ids where id.entityName == entity { keys.insert(id.primaryKey) }
                return keys
            }
            inserted = keys(changes.inserted)
            updated = keys(changes.updated)
            deleted = keys(changes.deleted)
            refreshed = keys(changes.refreshed)
            invalidated = keys(changes.invalidated)
            changedElsewhere = changes.entitiesChangedElsewhere.contains(entity)
        }

        var all: Set<Int64> { inserted.union(updated).union(deleted).union(refreshed).union(invalidated) }
    }

    /// When tracking starts on a layout served from a cache file: a version 2 file held the rows'
    /// version stamps, so only the store's stamp is read (one small read): while the store is
    /// still the one the cache showed, the layout is as a fetch would leave it; otherwise it is
    /// fetched again. A version 1 file held no stamps: the rows' versions are read (one
    /// statement, no sort unless the request has a window) in the same read transaction as the
    /// store's stamp. Without stamps, a row that another connection changes without moving it
    /// could not be told from one it did not touch (see ``StoreCoordinator/processExternalChanges()``).
    func loadStampsOfCachedLayout(_ plan: FetchPlan) throws {
        guard let served = servedCacheStamp else { return }
        let context = managedObjectContext
        if servedWithStamps {
            let metadata = try context.coordinator.withReader { try StoreCoordinator.readMetadata($0) }
            trackingStatistics.stampChecks += 1
            guard served.staleness(against: SectionCacheStamp(metadata, entities: plan.entities)) == nil,
                  !context.chainHasPendingChanges(plan.entities) else {
                install(try fetchRows(plan))
                return
            }
            servedCacheStamp = nil
            servedWithStamps = false
            return
        }
        let windowed = plan.request.fetchLimit != nil || plan.request.fetchOffset > 0
        let columns = "t0.\(quoted(primaryKeyColumn)), t0.\(quoted(versionColumn))"
        let sql = windowed ? plan.selectSQL(columns) : "SELECT \(columns) FROM \(plan.info.table) AS t0" + plan.joinSQL + plan.whereSQL
        let (versions, metadata) = try context.coordinator.withReader { db in
            try db.transaction(.deferred) { () -> ([Int64: Int64], StoreMetadata) in
                let statement = try db.cachedStatement(sql)
                try statement.bind(plan.arguments)
                var versions: [Int64: Int64] = [:]
                versions.reserveCapacity(rows.count)
                try statement.forEachRow { versions[$0.int64(at: 0)] = $0.int64(at: 1) }
                return (versions, try StoreCoordinator.readMetadata(db))
            }
        }
        trackingStatistics.stampLoads += 1
        let fresh = served.staleness(against: SectionCacheStamp(metadata, entities: plan.entities)) == nil
        guard fresh, versions.count == rows.count, !context.chainHasPendingChanges(plan.entities) else {
            install(try fetchRows(plan))
            return
        }
        for c in rows.chunks.indices {
            for (i, key) in rows.chunks[c].keys.enumerated() {
                guard let version = versions[key] else {
                    install(try fetchRows(plan))
                    return
                }
                rows.chunks.modify(c) { $0.stamps[i] = AnyFetchedResultsController.versionStamp(version) }
            }
        }
        servedCacheStamp = nil
    }

    /// Each section's first flat position.
    static func offsets(_ rows: FetchedRows) -> [Int] {
        var offsets: [Int] = []
        offsets.reserveCapacity(rows.sections.count)
        var total = 0
        for section in rows.sections {
            offsets.append(total)
            total += section.count
        }
        return offsets
    }

    /// The key index of `rows`, rebuilt.
    static func locations(of rows: FetchedRows) -> KeyLocations {
        var low = Int64.max, high = Int64.min, count = 0
        for chunk in rows.chunks {
            for key in chunk.keys {
                low = min(low, key)
                high = max(high, key)
            }
            count += chunk.keys.count
        }
        var locations = KeyLocations(expecting: count == 0 ? nil : low...high, count: count)
        for (c, chunk) in rows.chunks.enumerated() {
            for key in chunk.keys { locations[key] = Int32(c) }
        }
        return locations
    }
}
