import CSQLiteRaw
import Foundation
import Strata

// The store's history (every commit records what it changed, `StoreOptions.history`), three
// workloads, `--filter history`:
//
// 1. "history: external one-row change → delegate": a store of 1,000,000 items (a batch insert,
//    unmeasured), a `PersistentContainer` whose main context holds a flat results controller over
//    every item (sorted by number, then name) with a delegate; a second `StoreCoordinator` on the
//    same file changes one item's sort key and saves, once per iteration. Timed from that save's
//    return to the delegate's `controller(_:didReport:)` on main. Followed route: the container's
//    coordinator follows other connections (`followsOtherConnections = true`) and merges the
//    changed row; re-run route (what apps did before): not following, the app calls
//    `coordinator.processExternalChanges()` right after the save, and the controller re-runs its
//    fetch. Goal (issue): ≤ 5 ms for the followed route.
// 2. "history: import with history on vs off": the nycflights13 import (the import row's
//    Strata side: objects in an update context, saveToStore()) with the default options (history
//    written) and with `options.history = .off`, interleaved with raw SQLite's import.
//    Goal: history on ≤ 1.10× off.
// 3. "history: history(after:) of 10,000 transactions": 10,000 small saves (one update each, an
//    insert too in every 100th), then `coordinator.history(after: token)` reading them all, on a
//    new coordinator each round; raw SQLite: the same two SELECTs on the history tables, every
//    column of every row read (the SQL floor, no decoding of the change records).
// 4. "history: history(after:limit:) of 10,000 transactions, pages of 1,000": the same store read
//    page by page (`limit: 1000`, each page after the last one's token); raw SQLite: per page, in
//    one read transaction, the head SELECT (`LIMIT 1000`) and the change SELECT over its tokens,
//    the columns decoded into Swift structs (no JSON parsed).
// 5. "history: snapshot read with values of 10,000 transactions": the same store read by
//    `history(after: token, includingRowValues: true)`; raw SQLite: in one read transaction, the
//    history rows as in 4 (no limit), the changes' keys parsed, and one SELECT per entity
//    `WHERE _pk IN (SELECT value FROM json_each(?))` decoded into structs by key.
// 6. "wal: -wal peak size with followers during 10,000 commits": a 10,000-item store; a
//    `PersistentContainer` following other connections (a results controller over every item on
//    its main context, with a delegate), a read-only `StoreCoordinator` following as
//    `strata watch` does (and reading `history(after:)` every 20 ms as it does), and a writer
//    `StoreCoordinator` (not following) making 10,000 saves of a few rows; the `-wal`'s size
//    (stat) after every commit, and whether SQLite restarted the log (the -wal header's checkpoint
//    sequence number). Run with `walSizeLimit` 16 MiB (the default) and `nil`. Bytes only: there
//    is no raw SQLite side to this row. Runs with `--filter history` too.
//
// Wall-clock here; rows 3–5 have STRATA_PROFILE modes (`history-read`, `history-page`,
// `history-values` and their `raw-` twins, below) for callgrind's instruction counts.

/// Records when main's controller reported, and what (called on main's queue).
final class DeliveryRecorder: FetchedResultsControllerDelegate, @unchecked Sendable {
    // @unchecked Sendable: every field is under `lock`.
    private let lock = NSLock()
    private var reported: (nanos: UInt64, event: FetchedResultsEvent)?
    private var signal: DispatchSemaphore?

    /// Arms the recorder for one report; returns the semaphore its report signals.
    func arm() -> DispatchSemaphore {
        let semaphore = DispatchSemaphore(value: 0)
        lock.withLock {
            reported = nil
            signal = semaphore
        }
        return semaphore
    }

    var last: (nanos: UInt64, event: FetchedResultsEvent)? { lock.withLock { reported } }

    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        let now = monotonicNanos()
        let semaphore: DispatchSemaphore? = lock.withLock {
            guard reported == nil else { return nil }
            reported = (now, event)
            defer { signal = nil }
            return signal
        }
        semaphore?.signal()
    }
}

final class HistoryWorkloads {
    static let deliveryName = "history: external one-row change → delegate"
    static let importName = "history: import with history on vs off (nycflights13)"
    static let readName = "history: history(after:) of 10,000 transactions"
    static let pagedName = "history: history(after:limit:) of 10,000 transactions, pages of 1,000"
    static let valuesName = "history: snapshot read with values of 10,000 transactions"
    static let walName = "wal: -wal peak size with followers during 10,000 commits"

    let options: Options
    let data: Dataset
    let scratch: Scratch
    let importPlan: Plan
    private(set) var sections: [String] = []
    /// Moves made so far (the numbers set are unique across routes).
    private var moves = 0

    let baseRows: Int
    let followedIterations: Int
    let rerunIterations: Int
    let transactions = HistoryWorkloads.storeTransactions
    /// The history store's transactions (rows 3–5 and the profile modes).
    static let storeTransactions = 10_000
    /// Rows 4 and 5: a read is tens of milliseconds, so more rounds than row 3's seven.
    let readIterations: Int
    /// The -wal row: commits per run, and the items in the store.
    let walCommits = 10_000
    let walItems = 10_000

    init(options: Options, data: Dataset, scratch: Scratch, importPlan: Plan) {
        self.options = options
        self.data = data
        self.scratch = scratch
        self.importPlan = importPlan
        baseRows = options.quick ? 100_000 : 1_000_000
        followedIterations = options.iterations ?? (options.quick ? 20 : 50)
        rerunIterations = options.iterations.map { min($0, 10) } ?? (options.quick ? 5 : 10)
        readIterations = options.iterations ?? (options.quick ? 7 : 21)
    }

    var group: String { "history" }

    func run(start: (String, Plan?) -> Void, record: (ResultRow) -> Void) throws {
        if options.includes(Self.deliveryName) {
            start(Self.deliveryName, Plan(iterations: followedIterations, warmup: 3))
            try delivery(record: record)
        }
        if options.includes(Self.importName) {
            start(Self.importName, importPlan)
            try importOnOff(record: record)
        }
        // Rows 3–5 read one store of 10,000 transactions, built once (unmeasured).
        let reads = [Self.readName, Self.pagedName, Self.valuesName].filter(options.includes)
        if !reads.isEmpty {
            let history = try buildHistoryStore()
            defer { history.store.remove() }
            if options.includes(Self.readName) {
                start(Self.readName, Plan(iterations: options.iterations ?? 7, warmup: 1))
                try readHistory(history, record: record)
            }
            if options.includes(Self.pagedName) {
                start(Self.pagedName, Plan(iterations: readIterations, warmup: 1))
                try pagedHistory(history, record: record)
            }
            if options.includes(Self.valuesName) {
                start(Self.valuesName, Plan(iterations: readIterations, warmup: 1))
                try valuesHistory(history, record: record)
            }
        }
        // Part of this group: `--filter history` runs it as well as `--filter wal`.
        if options.includes(Self.walName) || options.includes(group) {
            start(Self.walName, nil)
            try walPeak(record: record)
        }
    }

    // MARK: 1. One external change → the delegate

    /// The controller's request: every item by number, then name (unique), IDs batched.
    static func listRequest() -> AnyFetchRequest {
        var request = FetchRequest(entityName: "Item", sortKeys: [.ascending("number"), .ascending("name")])
        request.fetchBatchSize = 50
        return request
    }

    private func buildItems(_ count: Int, label: String) throws -> StorePath {
        let store = try scratch.newStore(label)
        try Self.fillItems(count, at: store.url)
        return store
    }

    /// A new items store at `url` with `count` items (SplitMix64 rows, seed 0x4157), by batch inserts.
    static func fillItems(_ count: Int, at url: URL) throws {
        let rows = SplitMix64.rows(count, seed: 0x4157)
        var storeOptions = StoreOptions()
        storeOptions.cacheSizeKiB = 262_144
        let coordinator = try StoreCoordinator(model: ItemsSide.model, url: url, options: storeOptions)
        defer { coordinator.close() }
        let chunk = 250_000
        for first in stride(from: 0, to: rows.count, by: chunk) {
            let part = Array(rows[first..<min(first + chunk, rows.count)])
            let result = try coordinator.execute(BatchInsertRequest(entityName: "Item", count: part.count) { i, row in
                try row.set(part[i].name, forKey: "name")
                try row.set(part[i].category, forKey: "category")
                try row.set(part[i].number, forKey: "number")
            })
            guard result.count == part.count else { throw VersusError("the batch insert wrote \(result.count) items, expected \(part.count)") }
        }
    }

    struct Delivery {
        /// Seconds from the other coordinator's save() returning to didReport on main.
        var latencies: [Double] = []
        /// Seconds of the save() calls themselves.
        var saves: [Double] = []
        /// Reports that came before save() returned (latency counted as 0).
        var early = 0
        var events: [String: Int] = [:]
        /// The container coordinator's externalChangeStatistics over the route (warm-up included).
        var merged = 0, rowsMerged = 0, reruns = 0
        var fetchSeconds = 0.0
    }

    /// One route: a container (following or not) with the controller on main, and a writer
    /// coordinator that moves one item per iteration.
    private func deliveryRoute(store: StorePath, follow: Bool, iterations: Int, warmup: Int) throws -> Delivery {
        var containerOptions = StoreOptions()
        containerOptions.history.followsOtherConnections = follow
        let container = try PersistentContainer(model: ItemsSide.model, url: store.url, options: containerOptions)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: Self.listRequest(), managedObjectContext: main)
        let recorder = DeliveryRecorder()
        var result = Delivery()
        let (target, fetchSeconds) = try main.performAndWait {
            let (_, seconds) = try timed { try controller.performFetch() }
            controller.delegate = recorder
            guard controller.numberOfObjects == baseRows else { throw VersusError("the controller holds \(controller.numberOfObjects) items, expected \(baseRows)") }
            let section = controller.sections![0]
            return (section.objectID(at: section.numberOfObjects / 2), seconds)
        }
        result.fetchSeconds = fetchSeconds
        // The other connection: history on (the default), not following anything itself.
        var writerOptions = StoreOptions()
        writerOptions.history.followsOtherConnections = false
        let other = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: writerOptions)
        defer { other.close() }
        let before = container.coordinator.externalChangeStatistics
        for round in 0..<(warmup + iterations) {
            // To the front of the list, then to its end: every change is one move (below or
            // above every number set before, in this route or an earlier one).
            moves += 1
            let number: Int64 = round % 2 == 0 ? -Int64(moves) : 2_000_000 + Int64(moves)
            let context = other.newContext()
            let semaphore = recorder.arm()
            let (saveStart, saveEnd): (UInt64, UInt64) = try context.performAndWait {
                let item = try context.existingObject(with: target)
                try item.setValue(number, forKey: "number")
                context.processPendingChanges()
                let t0 = monotonicNanos()
                _ = try context.save()
                return (t0, monotonicNanos())
            }
            if !follow { _ = try container.coordinator.processExternalChanges() }
            guard semaphore.wait(timeout: .now() + .seconds(30)) == .success, let (reportNanos, event) = recorder.last else {
                throw VersusError("\(follow ? "followed" : "re-run") route, round \(round): the delegate heard nothing within 30 s of the save "
                                  + "(statistics \(container.coordinator.externalChangeStatistics))")
            }
            let kind: String
            switch event {
            case .changes(let changes):
                guard changes.objects.count == 1, case let .move(id, _, _) = changes.objects[0], id == target else {
                    throw VersusError("round \(round): expected one move of \(target), got \(changes.objects)")
                }
                kind = "changes (one move)"
            case .reload(let snapshot):
                guard snapshot.sections.reduce(0, { $0 + $1.numberOfObjects }) == baseRows else { throw VersusError("round \(round): a reload of the wrong size") }
                kind = "reload"
            case .failed(let error):
                throw VersusError("round \(round): the controller failed: \(error)")
            }
            // The list's end must be the item moved.
            let placed = main.performAndWait { () -> ObjectID? in
                let section = controller.sections![0]
                return round % 2 == 0 ? section.objectID(at: 0) : section.objectID(at: section.numberOfObjects - 1)
            }
            guard placed == target else { throw VersusError("round \(round): the moved item is not where it belongs (\(String(describing: placed)))") }
            guard round >= warmup else { continue }
            result.events[kind, default: 0] += 1
            if reportNanos < saveEnd { result.early += 1 }
            result.latencies.append(reportNanos > saveEnd ? Double(reportNanos - saveEnd) * 1e-9 : 0)
            result.saves.append(Double(saveEnd - saveStart) * 1e-9)
        }
        let after = container.coordinator.externalChangeStatistics
        result.merged = after.transactionsMerged - before.transactionsMerged
        result.rowsMerged = after.rowsMerged - before.rowsMerged
        result.reruns = after.reruns - before.reruns
        withExtendedLifetime(recorder) {}
        return result
    }

    private func delivery(record: (ResultRow) -> Void) throws {
        say("  (building the \(formatCount(baseRows))-item store by batch inserts, unmeasured)")
        let (store, seconds) = try timed { try buildItems(baseRows, label: "history-items") }
        defer { store.remove() }
        say("  (built in \(formatNumber(seconds)) s, \(formatCount(store.fileBytes / 1_000_000)) MB)")
        let followed = try deliveryRoute(store: store, follow: true, iterations: followedIterations, warmup: 3)
        say("    followed: " + summary(followed))
        let rerun = try deliveryRoute(store: store, follow: false, iterations: rerunIterations, warmup: 1)
        say("    re-run: " + summary(rerun))

        let group = "history, \(formatCount(baseRows)) items"
        for (label, route) in [("followed (followsOtherConnections)", followed), ("re-run (processExternalChanges())", rerun)] {
            let sorted = route.latencies.sorted()
            for (name, value) in [("median", percentile(sorted, 0.5)), ("p99", percentile(sorted, 0.99)), ("max", sorted.last ?? .nan)] {
                var row = ResultRow(group: group, workload: "one external change → delegate, \(label), \(name)", rows: baseRows,
                                    unit: .milliseconds, values: [.strata: value])
                if route.latencies.count == followed.latencies.count, label.hasPrefix("followed"), name == "median" {
                    row.goal = "≤ 5 ms"
                    row.met = value <= 0.005
                }
                if name == "max" {
                    let warm = label.hasPrefix("followed") ? 3 : 1
                    let events = eventList(route)
                    let save = Unit.milliseconds.format(median(route.saves))
                    let fetch = Unit.milliseconds.format(route.fetchSeconds)
                    var note = "\(route.latencies.count) changes after \(warm) unrecorded; "
                    note += "time from the other coordinator's save() returning to controller(_:didReport:) on main; "
                    note += "events: \(events); reports before save() returned: \(route.early); the save() itself: median \(save); "
                    note += "statistics over the run (warm-up included): transactionsMerged \(route.merged), rowsMerged \(route.rowsMerged), "
                    note += "reruns \(route.reruns); the controller's performFetch: \(fetch)"
                    row.note = note
                }
                record(row)
            }
        }
        let ratio = median(rerun.latencies) / median(followed.latencies)
        var lines: [String] = []
        lines.append("External one-row change → delegate (\(formatCount(baseRows)) items, a flat controller on main sorted by number, name; "
                     + "`fetchBatchSize` 50; the other connection a second `StoreCoordinator` in this process, history on):")
        lines.append("")
        lines.append("| route | changes | median | p90 | p99 | max | save() median | events | transactionsMerged / rowsMerged / reruns |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
        for (label, route) in [("followed (`followsOtherConnections = true`)", followed), ("re-run (`processExternalChanges()` after the save)", rerun)] {
            let s = route.latencies.sorted()
            func ms(_ v: Double) -> String { Unit.milliseconds.format(v) }
            let p50 = ms(percentile(s, 0.5)), p90 = ms(percentile(s, 0.9)), p99 = ms(percentile(s, 0.99)), max = ms(s.last ?? .nan)
            let save = ms(median(route.saves))
            let events = eventList(route)
            let stats = "\(route.merged) / \(route.rowsMerged) / \(route.reruns)"
            lines.append("| \(label) | \(s.count) | \(p50) | \(p90) | \(p99) | \(max) | \(save) | \(events) | \(stats) |")
        }
        lines.append("")
        lines.append("Re-run median / followed median: \(formatRatio(ratio)). All latencies, followed (ms, in order): "
                     + followed.latencies.map { formatNumber($0 * 1e3) }.joined(separator: " "))
        lines.append("")
        lines.append("Re-run latencies (ms, in order): " + rerun.latencies.map { formatNumber($0 * 1e3) }.joined(separator: " "))
        sections.append(lines.joined(separator: "\n"))
    }

    private func summary(_ d: Delivery) -> String {
        let s = d.latencies.sorted()
        return "\(s.count) changes: median \(Unit.milliseconds.format(percentile(s, 0.5))), p99 \(Unit.milliseconds.format(percentile(s, 0.99))), "
            + "max \(Unit.milliseconds.format(s.last ?? .nan)); save() median \(Unit.milliseconds.format(median(d.saves))); early \(d.early); "
            + "merged \(d.merged) transactions / \(d.rowsMerged) rows, \(d.reruns) re-runs"
    }

    private func eventList(_ d: Delivery) -> String {
        d.events.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
    }

    // MARK: 2. The import with history on and off

    private enum ImportSide: Hashable { case raw, on, onNotFollowing, off }

    private func importOnOff(record: (ResultRow) -> Void) throws {
        let flights = data.flights
        let data = self.data
        let scratch = self.scratch
        func strata(_ history: Bool, follows: Bool = true, isLast: Bool) throws -> Double {
            let store = try scratch.newStore(history ? "history-on" : "history-off")
            defer { store.remove() }
            var storeOptions = StoreOptions()
            if !history { storeOptions.history = .off }
            if !follows { storeOptions.history.followsOtherConnections = false }
            let container = try PersistentContainer(model: StrataSide.model, url: store.url, options: storeOptions)
            let (update, seconds) = try timed { try StrataSide.importAll(data, flights: flights, into: container) }
            withExtendedLifetime(update) {}
            if isLast {
                // History on: one transaction recorded; off: none (the table may not even exist).
                let count = try container.coordinator.history(after: nil).count
                if history, count != 1 { throw VersusError("the import with history on recorded \(count) transactions, expected 1") }
                if !history, count != 0 { throw VersusError("the import with history off recorded \(count) transactions") }
            }
            container.coordinator.close()
            if isLast {
                let db = try RawDB(path: store.path)
                guard try db.count("Flight") == flights.count else { throw VersusError("Strata's import (history \(history ? "on" : "off")) lost flights") }
            }
            return seconds
        }
        let samples = try interleave(importPlan, [
            (ImportSide.raw, { _, _ in
                let store = try scratch.newStore("history-raw")
                defer { store.remove() }
                let db = try RawDB(path: store.path)
                try db.createSchema()
                return try timed { try db.importAll(data, flights: flights) }.1
            }),
            (.on, { _, isLast in try strata(true, isLast: isLast) }),
            (.onNotFollowing, { _, isLast in try strata(true, follows: false, isLast: isLast) }),
            (.off, { _, isLast in try strata(false, isLast: isLast) }),
        ] as [(ImportSide, IterationBody)])
        let raw = median(samples[.raw] ?? []), on = median(samples[.on] ?? []), off = median(samples[.off] ?? [])
        let count = data.flights.count + data.airlines.count + data.airports.count + data.planes.count
        let group = "history, nycflights13 import"
        func list(_ side: ImportSide) -> String { (samples[side] ?? []).map { Unit.milliseconds.format($0) }.joined(separator: " ") }
        var onRow = ResultRow(group: group, workload: "import, history on (default options)", rows: count, unit: .milliseconds, values: [.raw: raw, .strata: on])
        onRow.note = "the import row's Strata side (objects in an update context, typed subscripts, saveToStore()) with StoreOptions() (history written, "
            + "following other connections: the defaults); rounds: \(list(.on)); raw: \(list(.raw))"
        record(onRow)
        let onNF = median(samples[.onNotFollowing] ?? [])
        var nfRow = ResultRow(group: group, workload: "import, history on, not following (followsOtherConnections = false)", rows: count,
                              unit: .milliseconds, values: [.raw: raw, .strata: onNF])
        nfRow.note = "history written, the follower off (to tell the history's writing from the follower); rounds: \(list(.onNotFollowing)); "
            + "on, not following / off: \(formatRatio(onNF / off))"
        record(nfRow)
        var offRow = ResultRow(group: group, workload: "import, history off (options.history = .off)", rows: count, unit: .milliseconds, values: [.raw: raw, .strata: off])
        offRow.note = "the same with StoreOptions.history = .off (no history written, nothing followed); rounds: \(list(.off))"
        record(offRow)
        var ratioRow = ResultRow(group: group, workload: "import, history on / off", rows: count, unit: .ratio, values: [.strata: on / off])
        ratioRow.goal = "≤ 1.10×"
        ratioRow.met = on / off <= 1.10
        ratioRow.note = "medians of \(importPlan.iterations) interleaved rounds after \(importPlan.warmup) warm-up: "
            + String(format: "%+.1f%%", (on / off - 1) * 100) + " with history; Strata/raw: on \(formatRatio(on / raw)), off \(formatRatio(off / raw))"
        record(ratioRow)
    }

    // MARK: 3–5. Reading 10,000 transactions

    /// The store rows 3–5 read: `storeTransactions` saves after `token`.
    struct HistoryStore {
        let store: StorePath
        let token: HistoryToken
        let inserts: Int
        let commitSeconds: Double
        var changes: Int { HistoryWorkloads.storeTransactions + inserts }
    }

    /// Row 3's medians (Strata, raw), for rows 4 and 5's notes.
    private var unpaged: (strata: Double, raw: Double)?

    private func buildHistoryStore() throws -> HistoryStore {
        let store = try scratch.newStore("history-read")
        let (token, inserts, seconds) = try Self.makeHistoryStore(at: store.url)
        say("    (\(formatCount(transactions)) saves committed in \(formatNumber(seconds)) s, \(inserts) with an insert)")
        return HistoryStore(store: store, token: token, inserts: inserts, commitSeconds: seconds)
    }

    /// A 1,000-item store at `url`, then `storeTransactions` saves of one update each (an insert
    /// too in every 100th) through one coordinator. Returns the token before them, the inserts
    /// and the seconds the saves took.
    static func makeHistoryStore(at url: URL) throws -> (token: HistoryToken, inserts: Int, seconds: Double) {
        try fillItems(1_000, at: url)
        var storeOptions = StoreOptions()
        storeOptions.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: ItemsSide.model, url: url, options: storeOptions)
        defer { coordinator.close() }
        let token = try coordinator.currentHistoryToken()
        var rng = SplitMix64(seed: 0x7E57)
        var inserts = 0
        let (_, seconds) = try timed {
            for i in 0..<storeTransactions {
                let context = coordinator.newContext()
                try context.performAndWait {
                    let key = Int64(rng.next() % 1_000) + 1
                    let item = try context.existingObject(with: ObjectID(entityName: "Item", primaryKey: key))
                    try item.setValue(Int64(i), forKey: "number")
                    if i % 100 == 0 {
                        let new = try context.insert("Item")
                        try new.setValue(rng.name(), forKey: "name")
                        try new.setValue(Int64(i % 100), forKey: "category")
                        try new.setValue(Int64(i), forKey: "number")
                        inserts += 1
                    }
                    _ = try context.save()
                }
            }
        }
        return (token, inserts, seconds)
    }

    /// A coordinator that reads (opened outside every measured region), not following.
    static func openReader(_ url: URL) throws -> StoreCoordinator {
        var readOptions = StoreOptions()
        readOptions.history.followsOtherConnections = false
        return try StoreCoordinator(model: ItemsSide.model, url: url, options: readOptions)
    }

    /// Throws unless `read` is the `transactions` transactions after `token`, in order, with `changes` changes.
    static func check(_ read: [HistoryTransaction], after token: HistoryToken, transactions: Int, changes: Int, _ what: String) throws {
        let count = read.reduce(0) { $0 + $1.changes.count }
        guard read.count == transactions, count == changes, read.first?.token.generation == token.generation + 1,
              read.last?.token.generation == token.generation + Int64(transactions) else {
            throw VersusError("\(what) read \(read.count) transactions and \(count) changes, expected \(transactions) and \(changes) after token \(token)")
        }
    }

    private func rounds(_ values: [Double]?) -> String { (values ?? []).map { Unit.milliseconds.format($0) }.joined(separator: " ") }

    // 3. Unpaged.
    private func readHistory(_ history: HistoryStore, record: (ResultRow) -> Void) throws {
        let token = history.token, expectedChanges = history.changes, transactions = self.transactions
        let url = history.store.url, path = history.store.path
        let plan = Plan(iterations: options.iterations ?? 7, warmup: 1)
        let samples = try interleave(plan, [
            ("strata", { _, _ in
                let reader = try Self.openReader(url)
                defer { reader.close() }
                let (read, seconds) = try timed { try reader.history(after: token) }
                try Self.check(read, after: token, transactions: transactions, changes: expectedChanges, "history(after:)")
                return seconds
            }),
            ("raw", { _, _ in
                let db = try RawDB(path: path)
                let (floor, seconds) = try timed { try Self.rawSQLFloor(db, after: token.generation) }
                guard floor.heads == transactions, floor.bytes != 0 else { throw VersusError("raw read \(floor.heads) history rows") }
                return seconds
            }),
        ] as [(String, IterationBody)])
        let strata = median(samples["strata"] ?? []), raw = median(samples["raw"] ?? [])
        unpaged = (strata, raw)
        var row = ResultRow(group: "history, \(formatCount(transactions)) transactions", workload: "history(after:) of \(formatCount(transactions)) transactions",
                            rows: transactions, unit: .milliseconds, values: [.raw: raw, .strata: strata])
        row.goal = "≤ 2× raw"
        row.met = strata / raw <= 2
        row.note = "\(formatCount(transactions)) saves of one update each (and one insert in every 100th: \(formatCount(expectedChanges)) changes) on a 1,000-item store, "
            + "committed in \(formatNumber(history.commitSeconds)) s (\(Unit.microseconds.format(history.commitSeconds / Double(transactions))) a save); "
            + "then reader.history(after: token) on a new coordinator (opened outside the region), every transaction and change decoded: "
            + "\(Unit.microseconds.format(strata / Double(transactions))) per transaction; rounds: \(rounds(samples["strata"])). "
            + "Raw: the two SELECTs on strata_history and strata_history_change, every column read as text/number, no JSON decoded (the SQL floor): "
            + "\(Unit.microseconds.format(raw / Double(transactions))) per transaction; rounds: \(rounds(samples["raw"]))"
        record(row)
    }

    /// What row 3's raw floor read: rows, and a sum over every column (so nothing is skipped).
    struct RawFloorCounts {
        var heads = 0, changes = 0, bytes = 0
    }

    /// Row 3's raw side: the two SELECTs, every column read as a number or as text (its bytes
    /// counted), nothing kept.
    static func rawSQLFloor(_ db: RawDB, after token: Int64) throws -> RawFloorCounts {
        var counts = RawFloorCounts()
        try db.forEachRow("SELECT token, time, kind, author, context, process, pid FROM strata_history WHERE token > ? ORDER BY token",
                          bind: { sqlite3_bind_int64($0, 1, token) }) { s in
            counts.heads += 1
            counts.bytes &+= Int(sqlite3_column_int64(s, 0)) &+ Int(sqlite3_column_double(s, 1))
            for c in Int32(2)...5 where sqlite3_column_type(s, c) != SQLITE_NULL {
                counts.bytes &+= String(cString: sqlite3_column_text(s, c)).utf8.count
            }
            counts.bytes &+= Int(sqlite3_column_int64(s, 6))
        }
        try db.forEachRow("SELECT token, entity, op, keys, data FROM strata_history_change WHERE token > ? ORDER BY token, seq",
                          bind: { sqlite3_bind_int64($0, 1, token) }) { s in
            counts.changes += 1
            counts.bytes &+= Int(sqlite3_column_int64(s, 0))
            for c in Int32(1)...4 where sqlite3_column_type(s, c) != SQLITE_NULL {
                counts.bytes &+= String(cString: sqlite3_column_text(s, c)).utf8.count
            }
        }
        return counts
    }

    // 4. Paged.
    static let pageSize = 1_000

    /// `history(after:limit:)` page after page, each after the last one's token, until an empty page.
    static func readPages(_ reader: StoreCoordinator, after token: HistoryToken, limit: Int) throws -> (transactions: [HistoryTransaction], pages: Int) {
        var all: [HistoryTransaction] = []
        var after = token
        var pages = 0
        while true {
            let page = try reader.history(after: after, limit: limit)
            guard let last = page.last else { break }
            pages += 1
            all += page
            after = last.token
        }
        return (all, pages)
    }

    private func pagedHistory(_ history: HistoryStore, record: (ResultRow) -> Void) throws {
        let token = history.token, expectedChanges = history.changes, transactions = self.transactions
        let url = history.store.url, path = history.store.path
        let plan = Plan(iterations: readIterations, warmup: 1)
        var pages = (strata: 0, raw: 0)
        let samples = try interleave(plan, [
            ("strata", { _, _ in
                let reader = try Self.openReader(url)
                defer { reader.close() }
                let (read, seconds) = try timed { try Self.readPages(reader, after: token, limit: Self.pageSize) }
                try Self.check(read.transactions, after: token, transactions: transactions, changes: expectedChanges, "history(after:limit:)")
                pages.strata = read.pages
                return seconds
            }),
            ("raw", { _, _ in
                let db = try RawDB(path: path)
                let (read, seconds) = try timed { try Self.rawPagedRead(db, after: token.generation, limit: Self.pageSize) }
                try read.check(after: token.generation, transactions: transactions)
                pages.raw = read.pages
                return seconds
            }),
        ] as [(String, IterationBody)])
        guard pages.strata == pages.raw else { throw VersusError("Strata read \(pages.strata) pages, raw \(pages.raw)") }
        let strata = median(samples["strata"] ?? []), raw = median(samples["raw"] ?? [])
        var row = ResultRow(group: "history, \(formatCount(transactions)) transactions", workload: "history(after:limit:) of \(formatCount(transactions)) transactions, pages of \(formatCount(Self.pageSize))",
                            rows: transactions, unit: .milliseconds, values: [.raw: raw, .strata: strata])
        row.goal = "≤ 2× raw"
        row.met = strata / raw <= 2
        var note = "the same store; \(pages.strata) pages of at most \(formatCount(Self.pageSize)) transactions, each read by reader.history(after: last page's last token, limit: 1000) "
            + "until an empty page (\(pages.strata + 1) calls), every transaction and change decoded, on a new coordinator (opened outside the region): "
            + "\(Unit.microseconds.format(strata / Double(transactions))) per transaction; rounds: \(rounds(samples["strata"])). "
            + "Raw: per page, in one read transaction (BEGIN … COMMIT), SELECT token, time, kind, author, context, process, pid, nonce FROM strata_history "
            + "WHERE token > ? ORDER BY token LIMIT 1000, then SELECT token, entity, op, keys, data FROM strata_history_change WHERE token BETWEEN first AND last "
            + "ORDER BY token, seq, both prepared once per read, every column decoded into Swift structs (Int64, Double, String, Data; keys and data kept as "
            + "JSON text, not parsed): \(Unit.microseconds.format(raw / Double(transactions))) per transaction; rounds: \(rounds(samples["raw"]))"
        if let unpaged {
            note += ". Unpaged, row above (same run): Strata \(Unit.milliseconds.format(unpaged.strata)) vs its floor \(Unit.milliseconds.format(unpaged.raw)) "
                + "= \(formatRatio(unpaged.strata / unpaged.raw)); paged / unpaged, Strata: \(formatRatio(strata / unpaged.strata))"
        }
        row.note = note
        record(row)
    }

    // 5. With the rows' values.
    private func valuesHistory(_ history: HistoryStore, record: (ResultRow) -> Void) throws {
        let token = history.token, expectedChanges = history.changes, transactions = self.transactions
        let url = history.store.url, path = history.store.path
        let plan = Plan(iterations: readIterations, warmup: 1)
        var sums = (strata: (rows: 0, sum: Int64(0)), raw: (rows: 0, sum: Int64(0)))
        let samples = try interleave(plan, [
            ("strata", { _, isLast in
                let reader = try Self.openReader(url)
                defer { reader.close() }
                let (read, seconds) = try timed { try reader.history(after: token, includingRowValues: true) }
                try Self.check(read, after: token, transactions: transactions, changes: expectedChanges, "history(after:includingRowValues:)")
                if isLast { sums.strata = try Self.valuesChecksum(read) }
                return seconds
            }),
            ("raw", { _, isLast in
                let db = try RawDB(path: path)
                let (read, seconds) = try timed { try Self.rawReadWithValues(db, after: token.generation) }
                try read.history.check(after: token.generation, transactions: transactions)
                if isLast { sums.raw = (read.rows.count, read.rows.values.reduce(Int64(0)) { $0 &+ $1.number }) }
                return seconds
            }),
        ] as [(String, IterationBody)])
        // Both read the same rows (no commit in between): the same distinct rows, the same numbers.
        guard sums.strata == sums.raw, sums.strata.rows > 0 else {
            throw VersusError("the rows' values differ: Strata \(sums.strata.rows) rows, Σ number \(sums.strata.sum); raw \(sums.raw.rows), \(sums.raw.sum)")
        }
        let strata = median(samples["strata"] ?? []), raw = median(samples["raw"] ?? [])
        var row = ResultRow(group: "history, \(formatCount(transactions)) transactions", workload: "snapshot read with values of \(formatCount(transactions)) transactions",
                            rows: transactions, unit: .milliseconds, values: [.raw: raw, .strata: strata])
        var note = "the same store; reader.history(after: token, includingRowValues: true) on a new coordinator (opened outside the region): every insert's and "
            + "update's row (\(formatCount(sums.strata.rows)) distinct rows) read in the same read transaction and set on its change; "
            + "\(Unit.microseconds.format(strata / Double(transactions))) per transaction; rounds: \(rounds(samples["strata"])). "
            + "Raw: in one read transaction, the history rows as in the paged row's floor (no limit), the changes' keys parsed (integers and ranges) into a set per "
            + "entity, then one SELECT \"_pk\", \"name\", \"category\", \"number\", \"_version\" FROM \"Item\" WHERE \"_pk\" IN (SELECT value FROM json_each(?)) "
            + "(the keys bound as a JSON array) decoded into structs in a dictionary by key; the two sides' distinct rows and Σ number checked equal; "
            + "rounds: \(rounds(samples["raw"]))"
        if let unpaged {
            note += ". With values / without (row 3's unpaged read, same run), Strata: \(formatRatio(strata / unpaged.strata))"
        }
        row.note = note
        record(row)
    }

    /// The distinct rows `read` carries and the sum of their numbers (the last change's row wins).
    static func valuesChecksum(_ read: [HistoryTransaction]) throws -> (rows: Int, sum: Int64) {
        var numbers: [ObjectID: Int64] = [:]
        for transaction in read {
            for change in transaction.changes where change.kind != .delete {
                guard let row = change.row, case .int64(let number)?? = row.attributes["number"] else {
                    throw VersusError("history(after:includingRowValues:): \(change.objectID) (\(change.kind)) came without its row's number")
                }
                numbers[change.objectID] = number
            }
        }
        return (numbers.count, numbers.values.reduce(Int64(0)) { $0 &+ $1 })
    }

    // Raw SQLite's paged and value reads (rows 4 and 5).

    /// Row 4's raw side: page after page of at most `limit` transactions, each page in a read
    /// transaction of its own, until an empty page.
    static func rawPagedRead(_ db: RawDB, after token: Int64, limit: Int) throws -> RawHistoryRead {
        let reader = try RawHistoryReader(db)
        var read = RawHistoryRead()
        var after = token
        while true {
            try db.execute("BEGIN")
            let last = try reader.page(after: after, limit: limit, into: &read)
            try db.execute("COMMIT")
            guard let last else { break }
            after = last
        }
        return read
    }

    /// Row 5's raw side: every transaction after `token` and the current values of the rows their
    /// inserts and updates name, in one read transaction.
    static func rawReadWithValues(_ db: RawDB, after token: Int64) throws -> (history: RawHistoryRead, rows: [Int64: RawItemValues]) {
        let reader = try RawHistoryReader(db)
        var read = RawHistoryRead()
        var rows: [Int64: RawItemValues] = [:]
        try db.execute("BEGIN")
        _ = try reader.page(after: token, limit: -1, into: &read)
        var keys: [String: Set<Int64>] = [:]
        for change in read.changes where change.op != "delete" {
            try parseKeys(change.keys, into: &keys[change.entity, default: []])
        }
        for (entity, wanted) in keys {
            guard entity == "Item" else { throw VersusError("the history names entity \(entity); the raw side reads Item only") }
            let json = "[" + wanted.map(String.init).joined(separator: ",") + "]"
            try db.forEachRow(#"SELECT "_pk", "name", "category", "number", "_version" FROM "Item" WHERE "_pk" IN (SELECT value FROM json_each(?))"#,
                              bind: { sqlite3_bind_text($0, 1, json, -1, historyTransient) }) { s in
                let key = sqlite3_column_int64(s, 0)
                rows[key] = RawItemValues(key: key, name: rawText(s, 1) ?? "", category: sqlite3_column_int64(s, 2),
                                          number: sqlite3_column_int64(s, 3), version: sqlite3_column_int64(s, 4))
            }
        }
        try db.execute("COMMIT")
        return (read, rows)
    }

    /// The keys of a change record (`[3,7,[10,20]]`: keys and inclusive ranges), parsed byte by byte.
    static func parseKeys(_ text: String, into keys: inout Set<Int64>) throws {
        var depth = 0, number: Int64 = 0, negative = false, inNumber = false
        var pair: [Int64] = []
        for byte in text.utf8 {
            if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                number = number &* 10 &+ Int64(byte - UInt8(ascii: "0"))
                inNumber = true
                continue
            }
            if byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            if inNumber {
                let value = negative ? -number : number
                if depth == 1 { keys.insert(value) } else if depth == 2 { pair.append(value) } else { throw VersusError("keys \(text): a number outside the list") }
                number = 0
                negative = false
                inNumber = false
            }
            if byte == UInt8(ascii: "[") {
                depth += 1
                if depth == 2 { pair.removeAll(keepingCapacity: true) }
                guard depth <= 2 else { throw VersusError("keys \(text): nested too deep") }
            } else if byte == UInt8(ascii: "]") {
                if depth == 2 {
                    guard pair.count == 2, pair[0] <= pair[1] else { throw VersusError("keys \(text): a range is not two ascending keys") }
                    for key in pair[0]...pair[1] { keys.insert(key) }
                }
                depth -= 1
            }
        }
        guard depth == 0 else { throw VersusError("keys \(text): unbalanced") }
    }

    // MARK: 6. The -wal's size with followers

    /// One run of the -wal row.
    struct WalRun {
        var limit: Int64?
        /// The -wal's bytes after each commit, in order.
        var sizes: [Int64] = []
        /// Before the first commit (the followers open), and once every follower caught up.
        var initial: Int64 = 0, settled: Int64 = 0
        var seconds = 0.0, catchUpSeconds = 0.0
        /// After the followers caught up, until main's queue had run every merge queued for it.
        var drainSeconds = 0.0
        /// The whole run, opening and closing included.
        var totalSeconds = 0.0
        var saves: [Double] = []
        var inserts = 0
        /// Commits after which the -wal header's checkpoint sequence number had changed: SQLite
        /// started the log again from its beginning (it does not shrink the file for that).
        var restarts = 0
        var generation: Int64 = 0
        var container: ExternalChangeStatistics?
        var follower: ExternalChangeStatistics?
        var reports: [String: Int] = [:]
        var watch = WatchLoop.Counts()

        var peak: Int64 { sizes.max() ?? 0 }
        var final: Int64 { sizes.last ?? 0 }
        /// Commits after which the -wal was smaller than after the commit before (truncated).
        var shrinks: Int { zip(sizes, sizes.dropFirst()).filter { $1 < $0 }.count }
        var label: String { limit.map { "walSizeLimit \(formatMiB($0))" } ?? "walSizeLimit nil" }
    }

    /// The size of the file at `path` in bytes (stat), 0 when it is not there.
    static func fileBytes(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }

    /// The -wal header's checkpoint sequence number (bytes 12–15, big-endian), which SQLite
    /// increments each time it restarts the log from its start; `nil` without a header.
    static func walCheckpointSequence(_ path: String) -> UInt32? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        guard withUnsafeMutableBytes(of: &bytes, { pread(fd, $0.baseAddress, 4, 12) }) == 4 else { return nil }
        return UInt32(bytes.0) << 24 | UInt32(bytes.1) << 16 | UInt32(bytes.2) << 8 | UInt32(bytes.3)
    }

    private func walPeak(record: (ResultRow) -> Void) throws {
        say("  (building the \(formatCount(walItems))-item store by batch inserts, unmeasured)")
        let base = try buildItems(walItems, label: "wal-base")
        defer { base.remove() }
        let defaultLimit = StoreOptions().walSizeLimit
        let limited = try timedWalRun(base: base, limit: defaultLimit)
        say("    \(limited.label) (default): " + walSummary(limited))
        let unlimited = try timedWalRun(base: base, limit: nil)
        say("    \(unlimited.label): " + walSummary(unlimited))

        let group = "wal, \(formatCount(walCommits)) commits with two followers (bytes; no raw side)"
        let goal: Int64 = 64_000_000
        for run in [limited, unlimited] {
            let isDefault = run.limit == defaultLimit
            let label = run.label + (isDefault ? " (default)" : " (no limit, for comparison)")
            var peak = ResultRow(group: group, workload: "-wal peak, \(label)", rows: walCommits, unit: .megabytes, values: [.strata: Double(run.peak)])
            if isDefault {
                peak.goal = "< 64 MB"
                peak.met = run.peak < goal
            }
            peak.note = "\(formatCount(Int(run.peak))) bytes at its largest, sampled (stat) after each of the \(formatCount(walCommits)) commits; "
                + "\(formatCount(run.shrinks)) commits truncated it (left it smaller than after the commit before); after \(formatCount(run.restarts)) commits SQLite had "
                + "restarted the log from its start (the header's checkpoint sequence number had changed); no raw ratio: raw SQLite has no followers to compare with. "
                + walSummary(run)
            record(peak)
            var final = ResultRow(group: group, workload: "-wal final, \(label)", rows: walCommits, unit: .megabytes, values: [.strata: Double(run.final)])
            final.note = "\(formatCount(Int(run.final))) bytes after the last commit; \(formatCount(Int(run.settled))) bytes once both followers had caught up "
                + "(\(Unit.milliseconds.format(run.catchUpSeconds)) after it); \(formatCount(Int(run.initial))) bytes before the first commit"
            record(final)
        }
        sections.append(walSection(limited, unlimited))
    }

    private func walSummary(_ run: WalRun) -> String {
        let sorted = run.saves.sorted()
        let events = run.reports.sorted { $0.key < $1.key }.map { "\($0.key) ×\(formatCount($0.value))" }.joined(separator: ", ")
        let container = run.container.map { "transactionsMerged \(formatCount($0.transactionsMerged)), rowsMerged \(formatCount($0.rowsMerged)), reruns \($0.reruns)" } ?? "–"
        let follower = run.follower.map { "transactionsMerged \(formatCount($0.transactionsMerged)), reruns \($0.reruns)" } ?? "–"
        return "peak \(formatCount(Int(run.peak))) B, final \(formatCount(Int(run.final))) B, after catch-up \(formatCount(Int(run.settled))) B; "
            + "\(formatCount(run.sizes.count)) commits (\(formatCount(run.inserts)) inserts) in \(formatNumber(run.seconds)) s "
            + "(\(formatCount(Int((Double(run.sizes.count) / run.seconds).rounded()))) /s), save() median \(Unit.milliseconds.format(percentile(sorted, 0.5))), "
            + "p99 \(Unit.milliseconds.format(percentile(sorted, 0.99))), max \(Unit.milliseconds.format(sorted.last ?? .nan)); "
            + "container: \(container), delegate reports: \(events.isEmpty ? "none" : events); read-only follower: \(follower), "
            + "its watch loop \(formatCount(run.watch.reads)) history(after:) reads of \(formatCount(run.watch.transactions)) transactions, \(run.watch.resets) resets; "
            + "the followers' statistics reached the last commit \(Unit.milliseconds.format(run.catchUpSeconds)) after it, main's queue had run every merge "
            + "\(Unit.milliseconds.format(run.drainSeconds)) later; the run, opening and closing included: \(formatNumber(run.totalSeconds)) s"
    }

    private func walSection(_ limited: WalRun, _ unlimited: WalRun) -> String {
        var lines: [String] = []
        lines.append("The -wal during \(formatCount(walCommits)) commits with two followers (\(formatCount(walItems)) items; a writer `StoreCoordinator`, not following, "
                     + "saving three updates and, every fourth save, two inserts; a `PersistentContainer` following, its main context's controller over every item "
                     + "with a delegate; a read-only `StoreCoordinator` following, reading `history(after:)` as `strata watch` does). Bytes after commit N (stat):")
        lines.append("")
        lines.append("| after commit | \(limited.label) (default) | \(unlimited.label) |")
        lines.append("|---:|---:|---:|")
        let marks = [1, 10, 100] + Array(stride(from: 1_000, through: walCommits, by: 1_000))
        for mark in marks where mark <= limited.sizes.count && mark <= unlimited.sizes.count {
            lines.append("| \(formatCount(mark)) | \(formatCount(Int(limited.sizes[mark - 1]))) | \(formatCount(Int(unlimited.sizes[mark - 1]))) |")
        }
        lines.append("| peak | \(formatCount(Int(limited.peak))) | \(formatCount(Int(unlimited.peak))) |")
        lines.append("| followers caught up | \(formatCount(Int(limited.settled))) | \(formatCount(Int(unlimited.settled))) |")
        lines.append("| commits that shrank it (truncated) | \(formatCount(limited.shrinks)) | \(formatCount(unlimited.shrinks)) |")
        lines.append("| commits after which the log had restarted from its start | \(formatCount(limited.restarts)) | \(formatCount(unlimited.restarts)) |")
        lines.append("| save() median / p99 / max | \(saveFigures(limited)) | \(saveFigures(unlimited)) |")
        lines.append("| the followers' statistics at the last commit, after it | \(Unit.milliseconds.format(limited.catchUpSeconds)) | "
                     + "\(Unit.milliseconds.format(unlimited.catchUpSeconds)) |")
        lines.append("| then main's queue done with every merge | \(Unit.milliseconds.format(limited.drainSeconds)) | \(Unit.milliseconds.format(unlimited.drainSeconds)) |")
        lines.append("| commits per second | \(formatCount(Int((Double(limited.sizes.count) / limited.seconds).rounded()))) | "
                     + "\(formatCount(Int((Double(unlimited.sizes.count) / unlimited.seconds).rounded()))) |")
        return lines.joined(separator: "\n")
    }

    private func saveFigures(_ run: WalRun) -> String {
        let sorted = run.saves.sorted()
        return [percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? .nan].map { Unit.milliseconds.format($0) }.joined(separator: " / ")
    }

    /// `walRun` with its whole time (the store's copy, opening and closing included).
    private func timedWalRun(base: StorePath, limit: Int64?) throws -> WalRun {
        let began = monotonicNanos()
        var run = try walRun(base: base, limit: limit)
        run.totalSeconds = Double(monotonicNanos() - began) * 1e-9
        return run
    }

    /// One run: a copy of `base`, the two followers, and the writer's commits.
    private func walRun(base: StorePath, limit: Int64?) throws -> WalRun {
        let store = try base.copy(in: scratch, label: limit == nil ? "wal-unlimited" : "wal-limited")
        defer { store.remove() }
        let walPath = store.path + "-wal"
        var run = WalRun(limit: limit)
        // The app: a container following other connections, a controller over every item on main.
        var containerOptions = StoreOptions()
        containerOptions.walSizeLimit = limit
        let container = try PersistentContainer(model: ItemsSide.model, url: store.url, options: containerOptions)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: Self.listRequest(), managedObjectContext: main)
        let reports = ReportCounter()
        let items = walItems
        try main.performAndWait {
            try controller.performFetch()
            controller.delegate = reports
            guard controller.numberOfObjects == items else { throw VersusError("the controller holds \(controller.numberOfObjects) items, expected \(items)") }
        }
        // `strata watch`: a read-only coordinator following (its poll interval), reading the history as it does.
        var watchOptions = StoreOptions()
        watchOptions.readOnly = true
        watchOptions.walSizeLimit = limit
        watchOptions.history.followsOtherConnections = true
        watchOptions.history.pollInterval = .milliseconds(100)
        let follower = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: watchOptions)
        defer { follower.close() }
        let watch = try WatchLoop(follower)
        defer { _ = watch.stop() }
        // The writer: another connection, not following.
        var writerOptions = StoreOptions()
        writerOptions.walSizeLimit = limit
        writerOptions.history.followsOtherConnections = false
        let writer = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: writerOptions)
        defer { writer.close() }
        run.initial = Self.fileBytes(walPath)
        let context = writer.newContext()
        var rng = SplitMix64(seed: 0x3A1)
        run.sizes.reserveCapacity(walCommits)
        run.saves.reserveCapacity(walCommits)
        var sequence = Self.walCheckpointSequence(walPath)
        let began = monotonicNanos()
        for i in 0..<walCommits {
            let nanos: UInt64 = try context.performAndWait {
                for _ in 0..<3 {
                    let key = Int64(rng.next() % UInt64(items)) + 1
                    try context.existingObject(with: ObjectID(entityName: "Item", primaryKey: key)).setValue(Int64(i), forKey: "number")
                }
                if i % 4 == 0 {
                    for _ in 0..<2 {
                        let new = try context.insert("Item")
                        try new.setValue(rng.name(), forKey: "name")
                        try new.setValue(Int64(rng.next() % 100), forKey: "category")
                        try new.setValue(Int64(i), forKey: "number")
                        run.inserts += 1
                    }
                }
                let start = monotonicNanos()
                guard let result = try context.save() else { throw VersusError("commit \(i) wrote nothing") }
                run.generation = result.generation
                return monotonicNanos() - start
            }
            run.sizes.append(Self.fileBytes(walPath))
            run.saves.append(Double(nanos) * 1e-9)
            let now = Self.walCheckpointSequence(walPath)
            if now != sequence, now != nil, sequence != nil { run.restarts += 1 }
            sequence = now ?? sequence
        }
        run.seconds = Double(monotonicNanos() - began) * 1e-9
        // Both followers (and the watch loop's reads) reach the last commit; main's controller then holds every item.
        let target = run.generation
        let (_, waited) = try timed {
            let deadline = monotonicNanos() + 300_000_000_000
            while container.coordinator.externalChangeStatistics.generation < target || follower.externalChangeStatistics.generation < target
                    || watch.counts.generation < target {
                guard monotonicNanos() < deadline else {
                    throw VersusError("the followers did not reach generation \(target) within 300 s: container \(container.coordinator.externalChangeStatistics), "
                                      + "read-only \(follower.externalChangeStatistics), watch loop \(watch.counts)")
                }
                usleep(2_000)
            }
        }
        run.catchUpSeconds = waited
        run.watch = watch.stop()
        if let failure = run.watch.failure { throw VersusError("the watch loop failed: \(failure)") }
        let expected = items + run.inserts
        // Main's queue may still hold merges the follower queued: this waits for them.
        let (held, drained) = timed { main.performAndWait { controller.numberOfObjects } }
        run.drainSeconds = drained
        guard held == expected else { throw VersusError("\(run.label): main's controller holds \(held) items after the followers caught up, expected \(expected)") }
        run.settled = Self.fileBytes(walPath)
        run.container = container.coordinator.externalChangeStatistics
        run.follower = follower.externalChangeStatistics
        run.reports = reports.counts
        return run
    }

    // MARK: Profile modes (callgrind)

    /// STRATA_PROFILE modes for rows 3–5 (Profile.swift dispatches them here).
    static let profileModes: [(name: String, summary: String)] = [
        ("history-prepare", "builds the 10,000-transaction history store at STRATA_PROFILE_STORE (unmeasured) and exits"),
        ("history-read", "Strata: history(after: token) of the 10,000 transactions, unpaged"),
        ("raw-history-read", "raw C API: the two SELECTs on the history tables, every column read (the unpaged row's floor)"),
        ("history-page", "Strata: history(after:limit: 1000), page after page"),
        ("raw-history-page", "raw C API: the paged SELECTs, each page in a read transaction, decoded into structs"),
        ("history-values", "Strata: history(after: token, includingRowValues: true)"),
        ("raw-history-values", "raw C API: the history rows and the rows' values (json_each) in one read transaction"),
    ]

    /// The token and inserts of a prepared history store, beside it in `<store>.token`.
    private struct PreparedHistory: Codable {
        var token: HistoryToken
        var inserts: Int
    }

    /// Runs one profile mode on the history store at `url` (built first when it has no token file).
    static func profile(_ mode: String, store url: URL, rounds: Int, warmup: Int) throws {
        let tokenFile = URL(fileURLWithPath: url.path + ".token")
        if mode == "history-prepare" || !FileManager.default.fileExists(atPath: tokenFile.path) {
            for suffix in ["", "-wal", "-shm", ".token"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            let (token, inserts, seconds) = try makeHistoryStore(at: url)
            try JSONEncoder().encode(PreparedHistory(token: token, inserts: inserts)).write(to: tokenFile)
            say("history store: \(storeTransactions) saves in \(seconds) s, \(inserts) with an insert, at \(url.path)")
            if mode == "history-prepare" { return }
        }
        let prepared = try JSONDecoder().decode(PreparedHistory.self, from: Data(contentsOf: tokenFile))
        let token = prepared.token, changes = storeTransactions + prepared.inserts
        for round in 0..<(warmup + rounds) {
            // The warm-up rounds call the same code, not through the region functions.
            let measured = round >= warmup
            let tag = measured ? "" : "(warm-up) "
            switch mode {
            case "history-read", "history-page", "history-values":
                let reader = try openReader(url)
                defer { reader.close() }
                let (read, seconds): ([HistoryTransaction], Double) = try timed {
                    switch mode {
                    case "history-read": return measured ? try strataRegionHistoryRead(reader, token) : try reader.history(after: token)
                    case "history-page":
                        return measured ? try strataRegionHistoryPage(reader, token).transactions : try readPages(reader, after: token, limit: pageSize).transactions
                    default:
                        return measured ? try strataRegionHistoryValues(reader, token) : try reader.history(after: token, includingRowValues: true)
                    }
                }
                try check(read, after: token, transactions: storeTransactions, changes: changes, mode)
                if mode == "history-values" { _ = try valuesChecksum(read) }
                say(tag + "\(mode) \(read.count) transactions \(seconds)")
            case "raw-history-read":
                let db = try RawDB(path: url.path)
                let (counts, seconds) = try timed { measured ? try rawRegionHistoryRead(db, token.generation) : try rawSQLFloor(db, after: token.generation) }
                guard counts.heads == storeTransactions else { throw VersusError("\(mode) read \(counts.heads) history rows") }
                say(tag + "\(mode) \(counts.heads) transactions \(seconds)")
            case "raw-history-page":
                let db = try RawDB(path: url.path)
                let (read, seconds) = try timed {
                    measured ? try rawRegionHistoryPage(db, token.generation) : try rawPagedRead(db, after: token.generation, limit: pageSize)
                }
                try read.check(after: token.generation, transactions: storeTransactions)
                say(tag + "\(mode) \(read.heads.count) transactions, \(read.pages) pages \(seconds)")
            case "raw-history-values":
                let db = try RawDB(path: url.path)
                let (read, seconds) = try timed { measured ? try rawRegionHistoryValues(db, token.generation) : try rawReadWithValues(db, after: token.generation) }
                try read.history.check(after: token.generation, transactions: storeTransactions)
                say(tag + "\(mode) \(read.history.heads.count) transactions, \(read.rows.count) rows \(seconds)")
            default:
                throw VersusError("STRATA_PROFILE mode '\(mode)' has no round")
            }
        }
    }
}

/// `20 MiB` for a whole number of MiB, else the bytes.
func formatMiB(_ bytes: Int64) -> String {
    bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(formatCount(Int(bytes))) B"
}

// MARK: Raw SQLite's history reads

/// `SQLITE_TRANSIENT`: SQLite copies bound text before the call returns.
private let historyTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Column `column` as a String (its bytes, no strlen), `nil` for NULL.
@inline(__always)
private func rawText(_ statement: OpaquePointer, _ column: Int32) -> String? {
    guard let text = sqlite3_column_text(statement, column) else { return nil }
    return String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
}

/// Column `column` as Data, `nil` for NULL.
@inline(__always)
private func rawBlob(_ statement: OpaquePointer, _ column: Int32) -> Data? {
    guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
    let bytes = sqlite3_column_blob(statement, column)
    let count = Int(sqlite3_column_bytes(statement, column))
    guard let bytes, count > 0 else { return Data() }
    return Data(bytes: bytes, count: count)
}

/// A `strata_history` row, decoded.
struct RawHistoryHead {
    var token: Int64
    var time: Double
    var kind: String
    var author: String?
    var context: String?
    var process: String
    var pid: Int64
    var nonce: Data?
}

/// A `strata_history_change` row, decoded (its keys and data left as the JSON text they are).
struct RawHistoryChange {
    var token: Int64
    var entity: String
    var op: String
    var keys: String
    var data: String?
}

/// An `Item` row's values.
struct RawItemValues {
    var key: Int64
    var name: String
    var category: Int64
    var number: Int64
    var version: Int64
}

/// What the raw side read: every head and change, and in how many pages.
struct RawHistoryRead {
    var heads: [RawHistoryHead] = []
    var changes: [RawHistoryChange] = []
    var pages = 0

    /// Throws unless the heads are the `transactions` tokens after `token`, in order, each with a change.
    func check(after token: Int64, transactions: Int) throws {
        var expected = token + 1
        for head in heads {
            guard head.token == expected else { throw VersusError("raw read token \(head.token), expected \(expected)") }
            expected += 1
        }
        guard heads.count == transactions, changes.count >= transactions, !heads.contains(where: { $0.kind.isEmpty || $0.process.isEmpty }) else {
            throw VersusError("raw read \(heads.count) transactions and \(changes.count) change rows, expected \(transactions) transactions")
        }
    }
}

/// The raw side's two history statements, prepared once per read and reused for every page.
final class RawHistoryReader {
    private let db: RawDB
    private let heads: OpaquePointer
    private let changes: OpaquePointer

    init(_ db: RawDB) throws {
        self.db = db
        heads = try db.prepare("SELECT token, time, kind, author, context, process, pid, nonce FROM strata_history WHERE token > ?1 ORDER BY token LIMIT ?2")
        do {
            changes = try db.prepare("SELECT token, entity, op, keys, data FROM strata_history_change WHERE token BETWEEN ?1 AND ?2 ORDER BY token, seq")
        } catch {
            sqlite3_finalize(heads)
            throw error
        }
    }

    deinit {
        sqlite3_finalize(heads)
        sqlite3_finalize(changes)
    }

    /// One page after `after` (the caller holds the read transaction): at most `limit` heads
    /// (-1: all), then their changes. Returns the page's last token, or `nil` when it is empty.
    func page(after: Int64, limit: Int, into read: inout RawHistoryRead) throws -> Int64? {
        sqlite3_bind_int64(heads, 1, after)
        sqlite3_bind_int64(heads, 2, Int64(limit))
        defer { sqlite3_reset(heads) }
        var first: Int64?, last: Int64?
        while true {
            let rc = sqlite3_step(heads)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try db.check(rc); break }
            let token = sqlite3_column_int64(heads, 0)
            read.heads.append(RawHistoryHead(token: token, time: sqlite3_column_double(heads, 1), kind: rawText(heads, 2) ?? "",
                                             author: rawText(heads, 3), context: rawText(heads, 4), process: rawText(heads, 5) ?? "",
                                             pid: sqlite3_column_int64(heads, 6), nonce: rawBlob(heads, 7)))
            if first == nil { first = token }
            last = token
        }
        guard let first, let last else { return nil }
        sqlite3_bind_int64(changes, 1, first)
        sqlite3_bind_int64(changes, 2, last)
        defer { sqlite3_reset(changes) }
        while true {
            let rc = sqlite3_step(changes)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try db.check(rc); break }
            read.changes.append(RawHistoryChange(token: sqlite3_column_int64(changes, 0), entity: rawText(changes, 1) ?? "", op: rawText(changes, 2) ?? "",
                                                 keys: rawText(changes, 3) ?? "", data: rawText(changes, 4)))
        }
        read.pages += 1
        return last
    }
}

// MARK: The -wal row's followers

/// `strata watch`'s loop (StrataCLI's `WatchCommand`) on a thread of its own: every 20 ms, when
/// the read-only coordinator's follower has seen a newer generation (or, once a second, the
/// store's own generation is newer), `history(after:)` from the last token. Nothing printed.
final class WatchLoop: @unchecked Sendable {
    // @unchecked Sendable: `current` and `stopped` are under `lock`; the coordinator is Sendable;
    // `done` is set once, in init.
    struct Counts: CustomStringConvertible {
        var reads = 0, transactions = 0, resets = 0
        var generation: Int64 = 0
        var failure: String?
        var description: String { "\(reads) reads, \(transactions) transactions, \(resets) resets, generation \(generation)" + (failure.map { ", failed: \($0)" } ?? "") }
    }

    private let coordinator: StoreCoordinator
    private let stopSignal = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var current = Counts()
    private var stopped = false
    private var done: DispatchSemaphore?

    init(_ coordinator: StoreCoordinator) throws {
        self.coordinator = coordinator
        let start = try coordinator.currentHistoryToken()
        current.generation = start.generation
        done = startThread("strata-watch") { [self] in loop(from: start) }
    }

    var counts: Counts { lock.withLock { current } }

    /// Ends the loop (once) and returns its counts.
    func stop() -> Counts {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if first {
            stopSignal.signal()
            done?.wait()
        }
        return counts
    }

    private func loop(from start: HistoryToken) {
        var last = start
        var tick = 0
        do {
            while stopSignal.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
                tick += 1
                var seen = coordinator.externalChangeStatistics.generation
                if tick % 50 == 0 { seen = max(seen, try coordinator.currentHistoryToken().generation) }
                guard seen > last.generation else { continue }
                let transactions: [HistoryTransaction]
                do {
                    transactions = try coordinator.history(after: last)
                } catch HistoryError.tokenOfAnotherStore, HistoryError.tokenAheadOfStore, HistoryError.expired {
                    last = try coordinator.currentHistoryToken()
                    let generation = last.generation
                    lock.withLock {
                        current.resets += 1
                        current.generation = generation
                    }
                    continue
                }
                let newest = transactions.last?.token.generation ?? last.generation
                last = HistoryToken(store: last.store, generation: max(newest, seen))
                let generation = last.generation
                lock.withLock {
                    current.reads += 1
                    current.transactions += transactions.count
                    current.generation = generation
                }
            }
        } catch {
            lock.withLock { current.failure = "\(error)" }
        }
    }
}

/// Counts what main's controller reported, by kind, and the object changes in them (called on main's queue).
final class ReportCounter: FetchedResultsControllerDelegate, @unchecked Sendable {
    // @unchecked Sendable: `reports` is under `lock`.
    private let lock = NSLock()
    private var reports: [String: Int] = [:]

    var counts: [String: Int] { lock.withLock { reports } }

    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        lock.withLock {
            switch event {
            case .changes(let changes):
                reports["changes", default: 0] += 1
                reports["object changes", default: 0] += changes.objects.count
            case .reload: reports["reload", default: 0] += 1
            case .failed: reports["failed", default: 0] += 1
            }
        }
    }
}

// MARK: Measured regions (rows 3–5; see Profile.swift)

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_history_read")
func strataRegionHistoryRead(_ reader: StoreCoordinator, _ token: HistoryToken) throws -> [HistoryTransaction] {
    try reader.history(after: token)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_history_read")
func rawRegionHistoryRead(_ db: RawDB, _ after: Int64) throws -> HistoryWorkloads.RawFloorCounts {
    try HistoryWorkloads.rawSQLFloor(db, after: after)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_history_page")
func strataRegionHistoryPage(_ reader: StoreCoordinator, _ token: HistoryToken) throws -> (transactions: [HistoryTransaction], pages: Int) {
    try HistoryWorkloads.readPages(reader, after: token, limit: HistoryWorkloads.pageSize)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_history_page")
func rawRegionHistoryPage(_ db: RawDB, _ after: Int64) throws -> RawHistoryRead {
    try HistoryWorkloads.rawPagedRead(db, after: after, limit: HistoryWorkloads.pageSize)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_history_values")
func strataRegionHistoryValues(_ reader: StoreCoordinator, _ token: HistoryToken) throws -> [HistoryTransaction] {
    try reader.history(after: token, includingRowValues: true)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_history_values")
func rawRegionHistoryValues(_ db: RawDB, _ after: Int64) throws -> (history: RawHistoryRead, rows: [Int64: RawItemValues]) {
    try HistoryWorkloads.rawReadWithValues(db, after: after)
}
