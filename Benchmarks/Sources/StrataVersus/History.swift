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
//
// Wall-clock only: callgrind was not run on these rows (see the results file).

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
    let transactions = 10_000

    init(options: Options, data: Dataset, scratch: Scratch, importPlan: Plan) {
        self.options = options
        self.data = data
        self.scratch = scratch
        self.importPlan = importPlan
        baseRows = options.quick ? 100_000 : 1_000_000
        followedIterations = options.iterations ?? (options.quick ? 20 : 50)
        rerunIterations = options.iterations.map { min($0, 10) } ?? (options.quick ? 5 : 10)
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
        if options.includes(Self.readName) {
            start(Self.readName, Plan(iterations: options.iterations ?? 7, warmup: 1))
            try readHistory(record: record)
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
        let rows = SplitMix64.rows(count, seed: 0x4157)
        var storeOptions = StoreOptions()
        storeOptions.cacheSizeKiB = 262_144
        let coordinator = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: storeOptions)
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
        return store
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

    // MARK: 3. Reading 10,000 transactions

    private func readHistory(record: (ResultRow) -> Void) throws {
        let store = try buildItems(1_000, label: "history-read")
        defer { store.remove() }
        var storeOptions = StoreOptions()
        storeOptions.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: storeOptions)
        let token = try coordinator.currentHistoryToken()
        var rng = SplitMix64(seed: 0x7E57)
        var inserts = 0
        let (_, commitSeconds) = try timed {
            for i in 0..<transactions {
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
        coordinator.close()
        let expectedChanges = transactions + inserts
        say("    (\(formatCount(transactions)) saves committed in \(formatNumber(commitSeconds)) s, \(inserts) with an insert)")
        let plan = Plan(iterations: options.iterations ?? 7, warmup: 1)
        let path = store.path
        let samples = try interleave(plan, [
            ("strata", { _, _ in
                var readOptions = StoreOptions()
                readOptions.history.followsOtherConnections = false
                let reader = try StoreCoordinator(model: ItemsSide.model, url: store.url, options: readOptions)
                defer { reader.close() }
                let (transactions, seconds) = try timed { try reader.history(after: token) }
                let changes = transactions.reduce(0) { $0 + $1.changes.count }
                guard transactions.count == self.transactions, changes == expectedChanges else {
                    throw VersusError("history(after:) read \(transactions.count) transactions and \(changes) changes, expected \(self.transactions) and \(expectedChanges)")
                }
                return seconds
            }),
            ("raw", { _, _ in
                let db = try RawDB(path: path)
                return try timed { () -> Int in
                    var heads = 0, changes = 0, bytes = 0
                    try db.forEachRow("SELECT token, time, kind, author, context, process, pid FROM strata_history WHERE token > ? ORDER BY token",
                                      bind: { sqlite3_bind_int64($0, 1, token.generation) }) { s in
                        heads += 1
                        bytes &+= Int(sqlite3_column_int64(s, 0)) &+ Int(sqlite3_column_double(s, 1))
                        for c in Int32(2)...5 where sqlite3_column_type(s, c) != SQLITE_NULL {
                            bytes &+= String(cString: sqlite3_column_text(s, c)).utf8.count
                        }
                        bytes &+= Int(sqlite3_column_int64(s, 6))
                    }
                    try db.forEachRow("SELECT token, entity, op, keys, data FROM strata_history_change WHERE token > ? ORDER BY token, seq",
                                      bind: { sqlite3_bind_int64($0, 1, token.generation) }) { s in
                        changes += 1
                        bytes &+= Int(sqlite3_column_int64(s, 0))
                        for c in Int32(1)...4 where sqlite3_column_type(s, c) != SQLITE_NULL {
                            bytes &+= String(cString: sqlite3_column_text(s, c)).utf8.count
                        }
                    }
                    guard heads == self.transactions, bytes != 0 else { throw VersusError("raw read \(heads) history rows") }
                    return changes
                }.1
            }),
        ] as [(String, IterationBody)])
        let strata = median(samples["strata"] ?? []), raw = median(samples["raw"] ?? [])
        var row = ResultRow(group: "history, \(formatCount(transactions)) transactions", workload: "history(after:) of \(formatCount(transactions)) transactions",
                            rows: transactions, unit: .milliseconds, values: [.raw: raw, .strata: strata])
        row.note = "\(formatCount(transactions)) saves of one update each (and one insert in every 100th: \(formatCount(expectedChanges)) changes) on a 1,000-item store, "
            + "committed in \(formatNumber(commitSeconds)) s (\(Unit.microseconds.format(commitSeconds / Double(transactions))) a save); "
            + "then reader.history(after: token) on a new coordinator (opened outside the region), every transaction and change decoded: "
            + "\(Unit.microseconds.format(strata / Double(transactions))) per transaction; rounds: \((samples["strata"] ?? []).map { Unit.milliseconds.format($0) }.joined(separator: " ")). "
            + "Raw: the two SELECTs on strata_history and strata_history_change, every column read as text/number, no JSON decoded (the SQL floor): "
            + "\(Unit.microseconds.format(raw / Double(transactions))) per transaction"
        record(row)
    }
}
