/// Change sets: what a placement reported, from the layouts before and after it.
extension AnyFetchedResultsController {
    /// The change set from `before` to `after`, given every changed row's places. Rows not
    /// tracked keep their relative order and are never reported (they only shift). A tracked row
    /// present in both is an update where it can stay in place relative to the untracked rows
    /// around it (a longest increasing run among the tracked rows of each gap between them), a
    /// move otherwise, and always a move when its section changed. Updates are reported only for
    /// rows in `updated` (their own object changed).
    func changeSet(before: FetchedRows, after: FetchedRows, tracked: [Tracked], updated: Set<Int64>) -> FetchedChanges {
        let entity = checkedPlan().info.name, interned = checkedPlan().info.internedName
        func id(_ key: Int64) -> ObjectID { ObjectID(entity: interned, primaryKey: key) }
        func path(_ location: FetchedRows.Location) -> FetchedIndexPath { FetchedIndexPath(item: location.item, section: location.section) }
        var result = FetchedChanges(before: FetchedSnapshot(rows: before, entity: entity), after: FetchedSnapshot(rows: after, entity: entity))
        let oldNames = Set(before.sections.map(\.name)), newNames = Set(after.sections.map(\.name))
        for (index, section) in before.sections.enumerated() where !newNames.contains(section.name) {
            result.sections.append(.delete(FetchedSection(rows: before, section: index, entity: entity), at: index))
        }
        for (index, section) in after.sections.enumerated() where !oldNames.contains(section.name) {
            result.sections.append(.insert(FetchedSection(rows: after, section: index, entity: entity), at: index))
        }

        // Gap of a tracked row: how many untracked rows precede it (the same before and after
        // when it did not move past any of them).
        let present = tracked.filter { $0.old != nil }.map(\.oldFlat).sorted()
        let placed = tracked.filter { $0.new != nil }.map(\.newFlat).sorted()
        func rank(_ value: Int, in sorted: [Int]) -> Int {
            var low = 0, high = sorted.count
            while low < high {
                let mid = (low + high) / 2
                if sorted[mid] < value { low = mid + 1 } else { high = mid }
            }
            return low
        }
        var moved = Set<Int64>()
        var gaps: [Int: [Tracked]] = [:]
        for entry in tracked {
            guard let old = entry.old, let new = entry.new else { continue }
            let oldGap = entry.oldFlat - rank(entry.oldFlat, in: present)
            let newGap = entry.newFlat - rank(entry.newFlat, in: placed)
            if before.sections[old.section].name != after.sections[new.section].name || oldGap != newGap {
                moved.insert(entry.key)
            } else {
                gaps[oldGap, default: []].append(entry)
            }
        }
        for (_, group) in gaps where group.count > 1 {
            let ordered = group.sorted { $0.oldFlat < $1.oldFlat }
            let staying = Set(AnyFetchedResultsController.longestIncreasingRun(ordered.map(\.newFlat)).map { ordered[$0].key })
            for entry in ordered where !staying.contains(entry.key) { moved.insert(entry.key) }
        }

        let byOld = tracked.filter { $0.old != nil }.sorted { $0.oldFlat < $1.oldFlat }
        for entry in byOld where entry.new == nil { result.objects.append(.delete(id(entry.key), at: path(entry.old!))) }
        for entry in tracked.filter({ $0.new != nil && $0.old == nil }).sorted(by: { $0.newFlat < $1.newFlat }) {
            result.objects.append(.insert(id(entry.key), at: path(entry.new!)))
        }
        for entry in byOld where entry.new != nil && moved.contains(entry.key) {
            result.objects.append(.move(id(entry.key), from: path(entry.old!), to: path(entry.new!)))
        }
        for entry in byOld where entry.new != nil && !moved.contains(entry.key) && updated.contains(entry.key) {
            result.objects.append(.update(id(entry.key), from: path(entry.old!), to: path(entry.new!)))
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
