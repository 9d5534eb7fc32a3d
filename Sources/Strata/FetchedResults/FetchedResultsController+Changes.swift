internal import StrataSQLite

/// Following the context: re-evaluating changed rows and computing exact change sets.
extension FetchedResultsController {
    /// Re-evaluates every changed row of the entity — registered in the context or not — and
    /// reports what moved. A change to a related entity that a key path reads (or a request with
    /// a limit or offset) re-runs the request instead and compares the two layouts.
    func contextDidChange(_ changes: ObjectChanges) {
        let plan = checkedPlan()
        let root = plan.info.name
        let touched = changes.all
        let related = plan.entities.subtracting([root])
        let old = rows
        var candidates = Set<Int64>()
        for id in touched where id.entityName == root { candidates.insert(id.primaryKey) }
        let new: [Row]
        if touched.contains(where: { related.contains($0.entityName) })
            || !changes.entitiesChangedElsewhere.isDisjoint(with: plan.entities)
            || plan.request.fetchLimit != nil || plan.request.fetchOffset > 0 {
            guard let refetched = try? fetchRows(plan) else { return }
            new = refetched
            // Every row whose values changed is a candidate too (a related object renamed).
            let before = Dictionary(old.map { ($0.key, $0.values) }, uniquingKeysWith: { a, _ in a })
            for row in new where before[row.key].map({ $0 != row.values }) ?? false {
                candidates.insert(row.key)
            }
        } else {
            guard !candidates.isEmpty else { return }
            var kept = old.filter { !candidates.contains($0.key) }
            let gone = changes.deleted.union(changes.invalidated)
            for key in candidates.sorted() {
                let id = ObjectID(entityName: root, primaryKey: key)
                guard !gone.contains(id), let row = evaluate(id, plan) else { continue }
                kept.insert(row, at: insertionIndex(of: row, in: kept, plan))
            }
            new = kept
        }
        let reported = changes.updated.union(changes.refreshed).union(changes.inserted)
        let updated = Set(reported.filter { $0.entityName == root }.map(\.primaryKey)).union(candidates)
        let result = diff(old: old, new: new, changed: candidates, updated: updated)
        rows = new
        cachedSections = result.after.sections
        if !result.isEmpty { report(.changes(result)) }
    }


    /// The row of `id` when it matches the request now, else `nil`.
    private func evaluate(_ id: ObjectID, _ plan: FetchPlan) -> Row? {
        let context = managedObjectContext
        guard let object = try? context.object(with: id), object.state != .deleted, object.state != .invalid else { return nil }
        do {
            guard try plan.matches(object, in: context) else { return nil }
            return Row(key: id.primaryKey, values: try plan.sortValues(ObjectSubject(object: object, context: context)))
        } catch {
            return nil          // the row no longer exists
        }
    }

    /// Binary search: where `row` goes among `rows` (sorted by the request's order).
    private func insertionIndex(of row: Row, in rows: [Row], _ plan: FetchPlan) -> Int {
        var low = 0, high = rows.count
        while low < high {
            let mid = (low + high) / 2
            let order = plan.compareSortValues(rows[mid].values, row.values)
            if order < 0 || (order == 0 && rows[mid].key < row.key) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The change set from `old` to `new`. Rows not in `changed` keep their relative order and
    /// are never reported (they only shift). A changed row present in both is an update where it
    /// can stay in place relative to the unchanged rows around it (a longest increasing run
    /// among the changed rows of each gap), a move otherwise, and always a move when its section
    /// changed.
    func diff(old: [Row], new: [Row], changed: Set<Int64>, updated: Set<Int64>) -> FetchedChanges {
        let before = buildSections(old), after = buildSections(new)
        func paths(_ sections: [FetchedSection]) -> [Int64: FetchedIndexPath] {
            var paths: [Int64: FetchedIndexPath] = [:]
            for (s, section) in sections.enumerated() {
                for (i, id) in section.objectIDs.enumerated() { paths[id.primaryKey] = FetchedIndexPath(item: i, section: s) }
            }
            return paths
        }
        let oldPaths = paths(before), newPaths = paths(after)
        var newIndex: [Int64: Int] = [:]
        for (i, row) in new.enumerated() { newIndex[row.key] = i }
        let entity = checkedPlan().info.name
        func id(_ key: Int64) -> ObjectID { ObjectID(entityName: entity, primaryKey: key) }

        var result = FetchedChanges(before: FetchedSnapshot(sections: before), after: FetchedSnapshot(sections: after))
        let oldNames = Set(before.map(\.name)), newNames = Set(after.map(\.name))
        for (index, section) in before.enumerated() where !newNames.contains(section.name) {
            result.sections.append(.delete(section, at: index))
        }
        for (index, section) in after.enumerated() where !oldNames.contains(section.name) {
            result.sections.append(.insert(section, at: index))
        }

        // Moves: walk the old order; unchanged rows anchor; each gap's changed rows stay when
        // they fit between the anchors in increasing order.
        var moved = Set<Int64>()
        var gap: [(key: Int64, index: Int)] = []
        var lastAnchor = -1
        func closeGap(nextAnchor: Int) {
            let eligible = gap.filter { $0.index > lastAnchor && $0.index < nextAnchor }
            let staying = Set(FetchedResultsController.longestIncreasingRun(eligible.map(\.index)).map { eligible[$0].key })
            for entry in gap where !staying.contains(entry.key) { moved.insert(entry.key) }
            gap = []
        }
        for row in old {
            guard let index = newIndex[row.key] else { continue }
            if changed.contains(row.key) {
                if before[oldPaths[row.key]!.section].name != after[newPaths[row.key]!.section].name {
                    moved.insert(row.key)
                } else {
                    gap.append((row.key, index))
                }
            } else {
                closeGap(nextAnchor: index)
                lastAnchor = index
            }
        }
        closeGap(nextAnchor: new.count)

        for row in old where newIndex[row.key] == nil {
            result.objects.append(.delete(id(row.key), at: oldPaths[row.key]!))
        }
        let oldKeys = Set(old.map(\.key))
        for row in new where !oldKeys.contains(row.key) {
            result.objects.append(.insert(id(row.key), at: newPaths[row.key]!))
        }
        for row in old where moved.contains(row.key) {
            result.objects.append(.move(id(row.key), from: oldPaths[row.key]!, to: newPaths[row.key]!))
        }
        for row in old where newIndex[row.key] != nil && !moved.contains(row.key) && updated.contains(row.key) {
            result.objects.append(.update(id(row.key), from: oldPaths[row.key]!, to: newPaths[row.key]!))
        }
        return result
    }

    /// Positions (into `values`) of one longest strictly increasing subsequence.
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []            // positions of the smallest tail of each length
        var previous = Array(repeating: -1, count: values.count)
        for (i, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var run: [Int] = []
        var cursor = tails.last!
        while cursor >= 0 {
            run.append(cursor)
            cursor = previous[cursor]
        }
        return run.reversed()
    }
}

extension FetchedChanges {
    /// `before` with this change set applied by a table view's batch-update rules: object deletes
    /// (old paths) and moves out, section deletes, section inserts, then object inserts and moves
    /// in (new paths, ascending). Equal to `after` for every change set a controller reports.
    public func applied() -> FetchedSnapshot {
        var sections = before.sections
        var removals: [FetchedIndexPath] = []
        var placements: [(FetchedIndexPath, ObjectID)] = []
        for change in objects {
            switch change {
            case let .delete(_, path): removals.append(path)
            case let .insert(id, path): placements.append((path, id))
            case let .move(id, from, to):
                removals.append(from)
                placements.append((to, id))
            case .update: break
            }
        }
        for path in removals.sorted(by: >) { sections[path.section].objectIDs.remove(at: path.item) }
        let deletedSections = self.sections.compactMap { if case .delete(_, let index) = $0 { index } else { nil } }
        for index in deletedSections.sorted(by: >) { sections.remove(at: index) }
        let insertedSections = self.sections.compactMap { if case let .insert(section, index) = $0 { (index, section) } else { nil } }
        for (index, section) in insertedSections.sorted(by: { $0.0 < $1.0 }) {
            sections.insert(FetchedSection(name: section.name, indexTitle: section.indexTitle, objectIDs: []), at: index)
        }
        for (path, id) in placements.sorted(by: { $0.0 < $1.0 }) { sections[path.section].objectIDs.insert(id, at: path.item) }
        return FetchedSnapshot(sections: sections)
    }
}
