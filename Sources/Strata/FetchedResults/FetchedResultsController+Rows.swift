internal import Foundation
internal import StrataSQLite

/// Reading a request's rows for the layout: from the store in one statement, or from a context's
/// memory when changes are pending, into columns; then installing them as the layout.
extension AnyFetchedResultsController {
    /// The rows a request matches, in order, as columns: each row's key and stamp, and the
    /// section values as runs (a value and the index of its first row). Rows arrive grouped by
    /// section value, so a list of 10,000,000 rows in 16 sections holds 16 values: 12 bytes a
    /// row and no reference to count, where a row of its own with its section value took 40
    /// bytes and several retains and releases of the value's string on its way to the layout.
    struct FetchedRowList {
        var keys: [Int64] = []
        var stamps: [UInt32] = []
        /// One per run of byte-identical section values (`.null` for an unsectioned request).
        var runs: [(start: Int, value: SQLiteValue)] = []
        /// Content stamps (read from a context's memory), not version stamps (from the store).
        var content = false
        /// Read from the store by ``fetchRows(_:)``, with the related values beside it.
        var fromStore = false

        var count: Int { keys.count }

        /// Each row's key and stamp, and the list's kind of stamp.
        var rows: LazyMapSequence<Zip2Sequence<[Int64], [UInt32]>, (key: Int64, stamp: UInt32, content: Bool)> {
            let content = self.content
            return zip(keys, stamps).lazy.map { (key: $0, stamp: $1, content: content) }
        }

        /// Appends a row whose section value is the last run's.
        @inline(__always)
        mutating func append(key: Int64, stamp: UInt32) {
            keys.append(key)
            stamps.append(stamp)
        }

        /// Starts a run of `value` at the next row, unless the last run's value is byte-identical.
        mutating func startRun(_ value: SQLiteValue) {
            if let last = runs.last, FetchedRows.sameBytes(last.value, value) { return }
            runs.append((keys.count, value))
        }
    }

    /// The rows the request matches now, in order: one statement when nothing is pending along
    /// the chain for the entities it reads, else the context's fetch.
    func fetchRows(_ plan: FetchPlan) throws -> FetchedRowList {
        let context = managedObjectContext
        let sectioned = sectionNameKeyPath != nil
        if plan.request.includesPendingChanges, context.chainHasPendingChanges(plan.entities) {
            var list = FetchedRowList(content: true)
            if !sectioned { list.startRun(.null) }
            for object in try context.fetch(plan.request) {
                if sectioned {
                    let values = try plan.sortValues(ObjectSubject(object: object, context: context))
                    list.startRun(AnyFetchedResultsController.sectionValue(values[0]))
                }
                list.append(key: object.primaryKey, stamp: AnyFetchedResultsController.contentStamp(object.current))
            }
            return list
        }
        // The rows and the related values their key paths read, from one snapshot (see
        // ``storedRelatedValues(_:on:)``); ``loadRelatedValues(_:)`` takes the values after install.
        // Only a controller that follows changes needs them (a fetch alone is one SELECT).
        guard isTracking, !checkedDependencies().relatedEntities.isEmpty else {
            var rows = try context.coordinator.withReader { try fetchRows(plan, on: $0) }
            rows.fromStore = true
            pendingRelatedValues = nil
            return rows
        }
        var (rows, related) = try context.coordinator.withReader { db in
            try db.transaction(.deferred) { (try fetchRows(plan, on: db), try storedRelatedValues(plan, on: db)) }
        }
        rows.fromStore = true
        pendingRelatedValues = related
        return rows
    }

    /// The request's rows from the store, through `db` (one statement).
    func fetchRows(_ plan: FetchPlan, on db: Connection) throws -> FetchedRowList {
        let sectioned = sectionNameKeyPath != nil
        let count = Int32(plan.sortValueSQL.count)
        var list = FetchedRowList()
        if !sectioned { list.startRun(.null) }
        let statement = try db.cachedStatement(plan.keyAndSortValuesSQL(withVersion: true))
        try statement.bind(plan.arguments)
        // A row's stamp is its version's hash; a section value becomes a value (a `String` for
        // text) only when it differs from the previous row's (rows arrive grouped by section): no
        // per-row values array, string or reference count. The previous row's value is kept as
        // its storage class and bits or bytes, compared without touching a `String` (a copy of
        // one is an atomic retain and release).
        var previousClass: Statement.StorageClass?
        var previousBits: UInt64 = 0
        var previousBytes: [UInt8] = []
        try statement.forEachRow { row in
            let stamp = AnyFetchedResultsController.versionStamp(row.int64(at: count + 1))
            if sectioned {
                var next: SQLiteValue = .null
                var same = false
                let storage = row.storageClass(at: 1)
                switch storage {
                case .integer:
                    let v = row.int64(at: 1)
                    same = previousClass == .integer && previousBits == UInt64(bitPattern: v)
                    if !same { next = .integer(v); previousBits = UInt64(bitPattern: v) }
                case .real:
                    let v = row.double(at: 1)
                    same = previousClass == .real && previousBits == v.bitPattern
                    if !same { next = .real(v); previousBits = v.bitPattern }
                case .text, .blob:
                    let isText = storage == .text
                    row.withBytes(at: 1, asText: isText) { bytes in
                        same = previousClass == storage && previousBytes.withUnsafeBufferPointer { FetchedRows.sameBytes($0, bytes) }
                        if !same {
                            previousBytes = Array(bytes)
                            next = isText ? .text(String(decoding: bytes, as: UTF8.self)) : .blob(Data(bytes))
                        }
                    }
                case .null:
                    same = previousClass == .null
                }
                if !same {
                    previousClass = storage
                    list.startRun(AnyFetchedResultsController.sectionValue(next))
                }
            }
            list.append(key: row.int64(at: 0), stamp: stamp)
        }
        return list
    }

    /// Replaces the layout with `fetched` (in order).
    func install(_ fetched: FetchedRowList) {
        var range: ClosedRange<Int64>?
        if let first = fetched.keys.first {
            var low = first, high = first
            for key in fetched.keys {
                low = min(low, key)
                high = max(high, key)
            }
            range = low...high
        }
        var locations = KeyLocations(expecting: range, count: fetched.count)
        var rows = FetchedRows(keepsOneSection: sectionNameKeyPath == nil)
        let order = sectionOrder
        fetched.keys.withUnsafeBufferPointer { keys in
            fetched.stamps.withUnsafeBufferPointer { stamps in
                for (index, run) in fetched.runs.enumerated() {
                    let end = index + 1 < fetched.runs.count ? fetched.runs[index + 1].start : keys.count
                    guard run.start < end else { continue }
                    rows.startRun(of: run.value, order: order, makeSection: makeSection)
                    for row in run.start..<end {
                        rows.appendToLastSection(key: keys[row], stamp: stamps[row], locations: &locations)
                    }
                }
            }
        }
        self.rows = rows
        self.locations = locations
        placementValues = [:]
        relatedValues = [:]
        relatedValuesLoaded = false
        if !fetched.fromStore { pendingRelatedValues = nil }
        needsRerun = false
        servedCacheStamp = nil
        contentStamped = []
        placedByNewerRead = []
        if fetched.content { for key in fetched.keys { contentStamped.insert(key) } }
    }
}
