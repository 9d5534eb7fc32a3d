internal import Foundation
internal import StrataSQLite

// A cache refresh after a commit costs the change, not the list (issue 20): when every commit
// since the cache file was written is one of this coordinator's, with the keys it wrote, and
// none of them wrote an entity the request reaches through a relationship, the new file is the
// old one with those keys taken out and the ones the request still selects put back where the
// request's ORDER BY puts them. Everything is read from one read transaction, the same one the
// stamp comes from, so the file describes exactly the committed state it is stamped with; any
// doubt (another writer's commit, a batch request, a file that is not the expected one, a
// section key that does not lead the sort) falls back to the full re-read.

/// What a cache refresh did, counted since the coordinator opened: what tests and benchmarks
/// assert (a single-row commit's refresh reads one row and a few probes, not the list).
public struct SectionCacheRefreshStatistics: Sendable, Equatable {
    /// Refreshes that derived the new file from the previous one and the commits' changed keys:
    /// by appending a change record (``appended``) or by writing the file again (``compactions``).
    public var incremental = 0
    /// Refreshes that appended a change record to the file (the commits' keys and stamp; no row read).
    public var appended = 0
    /// Refreshes that wrote the file again from the previous one and the keys its records name.
    public var compactions = 0
    /// Refreshes that re-ran the whole request.
    public var full = 0
    /// Rows the full refreshes read.
    public var fullRowsRead = 0
    /// Changed rows the incremental refreshes read back (those the request still selects).
    public var changedRowsRead = 0
    /// Order comparisons the incremental refreshes asked SQLite for (each reads two rows by key).
    public var probes = 0
    /// Rows read back when a results controller served a file with change records (the keys
    /// they name that the request still selects), and the order comparisons placing them took.
    public var rowsPlacedOnServe = 0
    public var probesOnServe = 0

    public init() {}

    mutating func add(_ other: SectionCacheRefreshStatistics) {
        incremental += other.incremental
        appended += other.appended
        compactions += other.compactions
        full += other.full
        fullRowsRead += other.fullRowsRead
        changedRowsRead += other.changedRowsRead
        probes += other.probes
        rowsPlacedOnServe += other.rowsPlacedOnServe
        probesOnServe += other.probesOnServe
    }
}

/// The request's SQL an incremental refresh runs.
struct IncrementalRefreshPlan: Sendable {
    /// The fetched entity.
    let root: String
    /// Entities reached through relationships: a commit that wrote one forces a full refresh.
    let relatedEntities: Set<String>
    /// `keyAndSortValuesSQL` restricted to the keys in a JSON array bound after the arguments.
    let changedRowsSQL: String
    /// Which of two keys the request's ORDER BY puts first.
    let probeSQL: String

    /// `nil` when a refresh can't be incremental: a window (`fetchLimit`/`fetchOffset`: a change
    /// anywhere shifts it), or a key path that leads back to the fetched entity (a row's change
    /// can then move rows it did not write).
    init?(_ plan: FetchPlan) {
        guard plan.windowSQL.isEmpty, !plan.relatedEntities.contains(plan.info.name) else { return nil }
        root = plan.info.name
        relatedEntities = plan.relatedEntities
        changedRowsSQL = plan.keyAndSortValuesSQL(amongKeysAt: plan.arguments.count + 1, withVersion: true)
        probeSQL = plan.orderProbeSQL
    }
}

/// One cache's record of this coordinator's commits since its file was last written: the
/// generations, contiguous, and for each the keys it wrote of the entities the request reads
/// (`nil`: unknown, as for a batch request). A commit by anyone else shows as a gap in the
/// generations: the log then starts again after it.
struct CacheRefreshLog {
    static let keyLimit = 100_000
    static let entryLimit = 10_000

    /// The first generation whose changes are held.
    private(set) var from: Int64 = 1
    /// The last generation noted; every one from `from` on is held.
    private(set) var through: Int64?
    private(set) var entries: [(generation: Int64, keys: [String: [Int64]]?)] = []
    private var keyCount = 0

    mutating func note(generation: Int64, keys: [String: [Int64]]?) {
        if let through, generation == through + 1 {
            self.through = generation
        } else {
            from = generation
            through = generation
            entries = []
            keyCount = 0
        }
        entries.append((generation, keys))
        keyCount += keys?.values.reduce(0) { $0 + $1.count } ?? 0
        // Too much to apply cheaply: forget it; a file written at `through` still needs nothing.
        if keyCount > Self.keyLimit || entries.count > Self.entryLimit {
            from = generation + 1
            entries = []
            keyCount = 0
        }
    }

    /// After a file stamped `generation` was written: what it already reflects is dropped.
    mutating func trim(through generation: Int64) {
        entries.removeAll { $0.generation <= generation }
        from = max(from, generation + 1)
        keyCount = entries.reduce(0) { $0 + ($1.keys?.values.reduce(0) { $0 + $1.count } ?? 0) }
    }

    /// The keys the commits after generation `base` up to `current` wrote, by entity; `nil` when
    /// one of those commits is unknown (not this coordinator's, or its keys were not noted).
    func changes(after base: Int64, upTo current: Int64) -> [String: Set<Int64>]? {
        guard base <= current else { return nil }
        if base == current { return [:] }
        guard let through, from <= base + 1, through >= current else { return nil }
        var changes: [String: Set<Int64>] = [:]
        for entry in entries where entry.generation > base && entry.generation <= current {
            guard let keys = entry.keys else { return nil }
            for (entity, written) in keys { changes[entity, default: []].formUnion(written) }
        }
        return changes
    }
}

extension StoreChanges {
    /// The keys this save writes of `entities`, by entity: inserted, updated and deleted rows,
    /// and both members of every join row it adds or removes. Conflicting rows are included
    /// whatever their resolution: a superset only costs a row read back. `nil` past `limit` keys
    /// (a refresh re-runs the request then: an import is not listed key by key).
    func writtenKeys(of entities: Set<String>, limit: Int) -> [String: [Int64]]? {
        var keys: [String: [Int64]] = [:]
        var count = 0
        func add(_ entity: String, _ key: Int64) -> Bool {
            guard entities.contains(entity) else { return true }
            count += 1
            keys[entity, default: []].append(key)
            return count <= limit
        }
        for (id, _) in inserted { guard add(id.entityName, id.primaryKey) else { return nil } }
        for (info, key, _, _) in updated { guard add(info.name, key) else { return nil } }
        for (info, key, _) in deleted { guard add(info.name, key) else { return nil } }
        for (owner, other, _, _, _) in joinInserts + joinDeletes {
            guard add(owner.entityName, owner.primaryKey), add(other.entityName, other.primaryKey) else { return nil }
        }
        for (owner, _, _, _) in joinRowsOfDeleted { guard add(owner.entityName, owner.primaryKey) else { return nil } }
        return keys
    }
}

extension SectionCacheFile {
    /// The file brought up to the snapshot `db` reads (inside a read transaction), given the
    /// root keys written since it was stamped and that no entity reached through a relationship
    /// was written: `changed` leave, and those the request still selects come back at the place
    /// SQLite's ORDER BY gives them. `nil` when the result would not be what the full query cuts
    /// (a section that the order does not keep together): the caller then re-runs the request.
    func applying(_ changed: Set<Int64>, _ plan: IncrementalRefreshPlan, arguments: [SQLiteValue], sectioned: Bool,
                  on db: Connection, stamp: SectionCacheStamp,
                  statistics: inout SectionCacheRefreshStatistics) throws -> SectionCacheFile? {
        // 1. The file without the changed keys (and their stamps, when the file holds them).
        let stamps = expandedStamps()
        var kept: [Int64] = []
        kept.reserveCapacity(keys.count + changed.count)
        var keptStamps: [UInt32] = []
        if stamps != nil { keptStamps.reserveCapacity(keys.count + changed.count) }
        var keptSections: [SectionCacheSection] = []
        let low = changed.min() ?? 0, high = changed.max() ?? -1
        var offset = 0
        for section in sections {
            let before = kept.count
            for index in offset..<(offset + section.count) {
                let key = keys[index]
                guard key < low || key > high || !changed.contains(key) else { continue }
                kept.append(key)
                if let stamps { keptStamps.append(stamps[index]) }
            }
            if kept.count > before {
                var section = section
                section.count = kept.count - before
                keptSections.append(section)
            }
            offset += section.count
        }

        // 2. The changed rows the request still selects, in its order.
        var rows: [(key: Int64, value: SQLiteValue, stamp: UInt32)] = []
        let select = try db.cachedStatement(plan.changedRowsSQL)
        try select.bind(arguments + [.text(StoreCoordinator.jsonKeys(changed.sorted()))])
        try select.forEachRow { row in
            rows.append((row.int64(at: 0), sectioned ? AnyFetchedResultsController.sectionValue(row.value(at: 1)) : .null,
                         AnyFetchedResultsController.versionStamp(row.int64(at: row.columnCount - 1))))
        }
        statistics.changedRowsRead += rows.count

        // 3. Where each goes: the first kept key it precedes (binary search; the rows come in
        //    order, so each search starts where the previous one ended).
        let probe = try db.cachedStatement(plan.probeSQL)
        func precedes(_ a: Int64, _ b: Int64) throws -> Bool? {
            statistics.probes += 1
            var first: Int64?
            try probe.bind([.integer(a), .integer(b)])
            try probe.forEachRow { first = $0.int64(at: 0) }
            return first.map { $0 == a }
        }
        var positions: [Int] = []
        positions.reserveCapacity(rows.count)
        var lower = 0
        for row in rows {
            var low = lower, high = kept.count
            while low < high {
                let middle = (low + high) / 2
                guard let before = try precedes(row.key, kept[middle]) else { return nil }
                if before { high = middle } else { low = middle + 1 }
            }
            positions.append(low)
            lower = low
        }

        // 4. Merge, cutting sections as the full query does (a run of equal section values). A
        //    kept section split in two, or a section value met twice, means the order does not
        //    keep sections together: the full query decides.
        var merged: [Int64] = []
        merged.reserveCapacity(kept.count + rows.count)
        var mergedStamps: [UInt32] = []
        if stamps != nil { mergedStamps.reserveCapacity(kept.count + rows.count) }
        var mergedSections: [SectionCacheSection] = []
        var created: [SQLiteValue] = []
        func add(_ value: SQLiteValue, count: Int, like section: SectionCacheSection?) -> Bool {
            if let last = mergedSections.last, ScalarOrder.compare(last.value, value) == 0 {
                mergedSections[mergedSections.count - 1].count += count
                return true
            }
            if let section {
                var copy = section
                copy.count = count
                mergedSections.append(copy)
            } else {
                let name = sectioned ? AnyFetchedResultsController.sectionName(value) : ""
                let title = sectioned ? AnyFetchedResultsController.defaultIndexTitle(name) : nil
                mergedSections.append(SectionCacheSection(value: value, name: name, indexTitle: title, count: count))
                created.append(value)
            }
            return false
        }
        var next = 0
        offset = 0
        for section in keptSections {
            let end = offset + section.count
            var cursor = offset
            var runs = 0
            func chunk(upTo stop: Int) {
                guard stop > cursor else { return }
                merged.append(contentsOf: kept[cursor..<stop])
                if stamps != nil { mergedStamps.append(contentsOf: keptStamps[cursor..<stop]) }
                if !add(section.value, count: stop - cursor, like: section) { runs += 1 }
                cursor = stop
            }
            while next < rows.count, positions[next] < end {
                chunk(upTo: positions[next])
                merged.append(rows[next].key)
                mergedStamps.append(rows[next].stamp)
                _ = add(rows[next].value, count: 1, like: nil)
                next += 1
            }
            chunk(upTo: end)
            guard runs <= 1 else { return nil }
            offset = end
        }
        while next < rows.count {
            merged.append(rows[next].key)
            mergedStamps.append(rows[next].stamp)
            _ = add(rows[next].value, count: 1, like: nil)
            next += 1
        }
        for value in created where mergedSections.filter({ ScalarOrder.compare($0.value, value) == 0 }).count > 1 { return nil }
        if !sectioned, mergedSections.count > 1 { return nil }
        return SectionCacheFile(stamp: stamp, request: request, sections: mergedSections, keys: merged,
                                stamps: stamps == nil ? nil : mergedStamps)
    }
}
