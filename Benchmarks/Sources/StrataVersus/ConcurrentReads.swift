import CSQLiteRaw
import Foundation
import Strata
import Synchronization

// Concurrent reads (the reader pool, issue 40): what a reading context sees while something else
// writes or reads, on synthetic `Item`s (not the flights):
//
// 1. "concurrent reads: main-context page read during a background import": the main (view)
//    context reads a page of 50 items (`name >= <random>`, by name, limit 50, every name read
//    through its object) every 2 ms from a thread of its own, while a background route imports
//    100,000 new items per save: route A an update context (a child of main) with
//    `saveToStore()`, route B a sibling `newBackgroundContext()` with `save()`; and the store
//    idle. Latency of every page read, and the import's time per save with and without the
//    reads. Raw SQLite, the limit: one writer and one reader connection, the same reads and writes.
// 2. "concurrent reads: two contexts fetching in parallel": fetches per second of one context
//    alone and of two contexts each on its own thread, and raw SQLite with one and two reader
//    connections.
//
// Both on a store of 1,000,000 items (quick: 100,000) built once, unmeasured, by a batch insert
// (Strata) and by prepared INSERTs (raw), the same rows and keys; each measurement runs on a
// fresh copy of it. Latency and throughput rows: callgrind's instruction counts (the perf gate)
// do not apply to them.

// MARK: The model and its rows

enum ItemsSide {
    static let model: Model = {
        do {
            return try Model(version: "items-1", entities: [
                Entity("Item", attributes: [
                    Attribute("name", .string, isOptional: false, isIndexed: true),
                    Attribute("category", .int64, isOptional: false),
                    Attribute("number", .int64, isOptional: false),
                ]),
            ])
        } catch {
            fatalError("items model is invalid: \(error)")
        }
    }()

    /// The raw side's page query (Strata's own statement is read from its trace and shown in the note).
    static let rawPageSQL = #"SELECT "_pk", "name", "category", "number", "_version" FROM "Item" WHERE "name" >= ? ORDER BY "name" LIMIT ?"#
    static let rawInsertSQL = #"INSERT INTO "Item" ("_pk", "name", "category", "number") VALUES (?, ?, ?, ?)"#
}

struct ItemRow: Sendable {
    var name: String
    var category: Int64
    var number: Int64
}

/// A seeded generator (SplitMix64): the same rows and page starts on every run and side.
struct SplitMix64: Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 12 random lowercase letters (a small string: no allocation).
    mutating func name() -> String {
        var v = next()
        return String(unsafeUninitializedCapacity: 12) { buffer in
            for i in 0..<12 {
                buffer[i] = UInt8(ascii: "a") + UInt8(v % 26)
                v /= 26
            }
            return 12
        }
    }

    mutating func row() -> ItemRow {
        ItemRow(name: name(), category: Int64(next() % 100), number: Int64(next() % 1_000_000))
    }

    static func rows(_ count: Int, seed: UInt64) -> [ItemRow] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in rng.row() }
    }
}

// MARK: Time and threads

/// CLOCK_MONOTONIC in nanoseconds (what the reader's sleeps are scheduled against).
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// The calling thread's CPU time in nanoseconds.
@inline(__always)
func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func sleepUntil(nanos: UInt64) {
    var ts = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Starts `body` on a new thread; the semaphore is signalled when it ends.
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.name = name
    thread.stackSize = 8 << 20
    thread.start()
    return done
}

/// A value a thread fills and the starter reads after the thread's semaphore (or under the lock).
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func update(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

/// The nearest-rank percentile `p` (0...1) of `sorted`.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

// MARK: Page reads

struct PageResult {
    var count: Int
    /// Bytes of the names read (and, raw, the other columns folded in): nothing is optimised away.
    var sum: Int64
    /// Strata: when the `performAndWait` block began (monotonic ns), to tell the wait for the
    /// context's queue from the read itself; 0 for raw.
    var entered: UInt64 = 0
}

enum ItemPages {
    /// A page through Strata: a fetch of `limit` items from `start` by name, every name read
    /// through its object, checked in order.
    @inline(never)
    static func strata(_ context: ManagedObjectContext, from start: String, limit: Int) throws -> PageResult {
        let request = FetchRequest(entityName: "Item", predicate: Condition.key("name") >= start,
                                   sortKeys: [.ascending("name")], fetchLimit: limit)
        let objects = try context.fetch(request)
        var previous = start, sum: Int64 = 0
        for object in objects {
            guard let name: String = object[attribute: "name"], name >= previous else {
                throw VersusError("Strata's page from \(start) is out of order at \(object.objectID)")
            }
            previous = name
            sum &+= Int64(name.utf8.count)
        }
        return PageResult(count: objects.count, sum: sum)
    }
}

/// One raw SQLite connection (read-only, WAL, `SQLITE_OPEN_NOMUTEX`) with the page statement
/// prepared: used by one thread at a time.
final class RawPageReader: @unchecked Sendable {
    private let db: OpaquePointer
    private let statement: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(db)
            throw VersusError("SQLite \(rc): \(message)")
        }
        sqlite3_busy_timeout(db, 5000)
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v3(db, ItemsSide.rawPageSQL, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil) == SQLITE_OK, let prepared else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw VersusError("raw page statement: \(message)")
        }
        self.db = db
        statement = prepared
    }

    deinit {
        sqlite3_finalize(statement)
        sqlite3_close_v2(db)
    }

    /// `limit` rows from `start`, every column decoded (a row struct), checked in order; the
    /// statement is reset at the end, which ends its read transaction.
    @inline(never)
    func page(from start: String, limit: Int) throws -> PageResult {
        defer { sqlite3_reset(statement) }
        var start = start
        start.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { text in
                _ = sqlite3_bind_text(statement, 1, text.baseAddress, Int32(text.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            }
        }
        sqlite3_bind_int64(statement, 2, Int64(limit))
        var previous = start, count = 0, sum: Int64 = 0
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw VersusError("raw page: SQLite \(rc): \(String(cString: sqlite3_errmsg(db)))") }
            let length = Int(sqlite3_column_bytes(statement, 1))
            let name = sqlite3_column_text(statement, 1).map { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) } ?? ""
            let row = (pk: sqlite3_column_int64(statement, 0), name: name, category: sqlite3_column_int64(statement, 2),
                       number: sqlite3_column_int64(statement, 3), version: sqlite3_column_int64(statement, 4))
            guard row.name >= previous else { throw VersusError("raw page from \(start) is out of order") }
            previous = row.name
            sum &+= Int64(row.name.utf8.count) &+ row.pk &+ row.category &+ row.number &+ row.version
            count += 1
        }
        return PageResult(count: count, sum: sum)
    }

    /// The keys and names of a page (to compare with Strata's, outside any measurement).
    func pageKeys(from start: String, limit: Int) throws -> [String] {
        defer { sqlite3_reset(statement) }
        sqlite3_bind_text(statement, 1, start, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        sqlite3_bind_int64(statement, 2, Int64(limit))
        var out: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            out.append("\(sqlite3_column_int64(statement, 0)):\(String(cString: sqlite3_column_text(statement, 1)))")
        }
        return out
    }
}

/// Raw SQLite's writer: one connection (WAL, synchronous=NORMAL, NOMUTEX, as RawDB), the
/// INSERT prepared; a save is `BEGIN IMMEDIATE`, one INSERT per row (explicit key), `COMMIT`.
final class RawItemWriter {
    let db: RawDB
    private let insert: OpaquePointer

    init(path: String) throws {
        db = try RawDB(path: path)
        insert = try db.prepare(ItemsSide.rawInsertSQL)
    }

    deinit { sqlite3_finalize(insert) }

    func save(_ rows: [ItemRow], firstKey: Int64) throws {
        try db.execute("BEGIN IMMEDIATE")
        var key = firstKey
        for row in rows {
            sqlite3_bind_int64(insert, 1, key)
            var name = row.name
            try name.withUTF8 { utf8 in
                try utf8.withMemoryRebound(to: CChar.self) { text in
                    sqlite3_bind_text(insert, 2, text.baseAddress, Int32(text.count), nil)  // SQLITE_STATIC
                    sqlite3_bind_int64(insert, 3, row.category)
                    sqlite3_bind_int64(insert, 4, row.number)
                    let rc = sqlite3_step(insert)
                    guard rc == SQLITE_DONE else { try db.check(rc); throw VersusError("insert returned \(rc)") }
                    sqlite3_reset(insert)
                }
            }
            key += 1
        }
        try db.execute("COMMIT")
    }
}

// MARK: The reading thread

/// Reads a page every `period` on a thread of its own and records each read's latency: from
/// the call (for Strata: `performAndWait` on the reading context's queue, which waits for the
/// queue) to its return. A read that overruns its tick starts the next at once; the ticks it
/// overran are counted (`missedTicks`), and the latency from each missed tick to the end of the
/// read that blocked it is kept apart (`overrun`), for the latency a reader scheduled every
/// `period` would have seen (coordinated omission).
final class PagingThread: @unchecked Sendable {
    /// A read over 1 ms: when it started and ended (monotonic ns), its number among all reads
    /// of its thread (warm-up included), how long it waited for the context's queue, and the
    /// CPU time its thread spent in it (`CLOCK_THREAD_CPUTIME_ID`: user and system).
    struct SlowRead {
        var start: UInt64
        var end: UInt64
        var index: Int
        var queueWait: UInt64
        var cpu: UInt64
    }

    struct Outcome {
        var latencies: [Double] = []
        var overrun: [Double] = []
        var missedTicks = 0
        var shortPages = 0
        /// Reads over 1 ms: when they started and ended (monotonic ns) and their number among
        /// all reads of this thread, warm-up included (the context's registry grows by a page a read).
        var slow: [SlowRead] = []
        var error: (any Error)?
    }

    private let stop = Atomic<Bool>(false)
    private let warmed = DispatchSemaphore(value: 0)
    private var done: DispatchSemaphore?
    private let outcome = Shared(Outcome())

    /// `warmup` unrecorded reads first; then reads until `stopAndJoin()`, or until `target`
    /// reads are recorded.
    init(name: String, period: Double, warmup: Int, target: Int?, seed: UInt64, read: @escaping @Sendable (String) throws -> PageResult) {
        let periodNanos = UInt64(period * 1e9)
        done = startThread(name) { [self] in
            var rng = SplitMix64(seed: seed)
            var local = Outcome()
            local.latencies.reserveCapacity(8192)
            var next = monotonicNanos()
            var reads = 0
            defer {
                if reads < warmup { warmed.signal() }
                outcome.value = local
            }
            do {
                while !stop.load(ordering: .acquiring) {
                    sleepUntil(nanos: next)
                    let start = rng.name()
                    let c0 = threadCPUNanos()
                    let t0 = monotonicNanos()
                    let page = try read(start)
                    let t1 = monotonicNanos()
                    let c1 = threadCPUNanos()
                    reads += 1
                    if reads == warmup { warmed.signal() }
                    next += periodNanos
                    guard reads > warmup else {
                        if next < t1 { next = t1 }
                        continue
                    }
                    local.latencies.append(Double(t1 - t0) * 1e-9)
                    if t1 - t0 > 1_000_000 {
                        local.slow.append(SlowRead(start: t0, end: t1, index: reads, queueWait: page.entered > t0 ? page.entered - t0 : 0, cpu: c1 - c0))
                    }
                    if page.count < 50 { local.shortPages += 1 }
                    // Ticks that passed while this read ran: a reader due then would have waited
                    // until now.
                    while next < t1 {
                        local.missedTicks += 1
                        local.overrun.append(Double(t1 - next) * 1e-9)
                        next += periodNanos
                    }
                    if let target, local.latencies.count >= target { break }
                }
            } catch {
                local.error = error
            }
        }
    }

    func waitUntilWarm() { warmed.wait() }

    /// Waits for the thread to end by itself (a target was given).
    func join() throws -> Outcome {
        done?.wait()
        done = nil
        let result = outcome.value
        if let error = result.error { throw error }
        return result
    }

    func stopAndJoin() throws -> Outcome {
        stop.store(true, ordering: .releasing)
        return try join()
    }
}

// MARK: The workloads

final class ConcurrentReads {
    static let pageName = "concurrent reads: main-context page read during a background import"
    static let parallelName = "concurrent reads: two contexts fetching in parallel"

    struct Sizes {
        var baseRows: Int
        var importRows: Int
        var saves: Int
        var rounds: Int
        var idleReads: Int
        var warmupReads: Int
        var parallelPages: Int
        var parallelLarge: Int
        var parallelRounds: Int
    }

    let options: Options
    let scratch: Scratch
    private(set) var sizes: Sizes
    let period = 0.002
    let pageSize = 50
    let largePage = 1000
    /// Extra markdown for the results file (the full latency table).
    private(set) var sections: [String] = []
    private var stores: (strata: StorePath, raw: StorePath)?

    init(options: Options, scratch: Scratch) {
        self.options = options
        self.scratch = scratch
        let rounds = options.iterations
        sizes = options.quick
            ? Sizes(baseRows: 100_000, importRows: 20_000, saves: 2, rounds: rounds ?? 1, idleReads: 300, warmupReads: 50,
                    parallelPages: 2_000, parallelLarge: 50, parallelRounds: rounds ?? 1)
            : Sizes(baseRows: 1_000_000, importRows: 100_000, saves: 5, rounds: rounds ?? 3, idleReads: 1_500, warmupReads: 100,
                    parallelPages: 20_000, parallelLarge: 400, parallelRounds: rounds ?? 3)
        // STRATA_CONCURRENT_IDLE_READS=N: a longer (or shorter) idle row, to watch the reading
        // context's registry grow (every page's objects stay registered).
        if let reads = ProcessInfo.processInfo.environment["STRATA_CONCURRENT_IDLE_READS"].flatMap(Int.init), reads > 0 {
            sizes.idleReads = reads
        }
    }

    var group: String { "concurrent reads, \(formatCount(sizes.baseRows)) items" }

    func run(start: (String, Plan?) -> Void, record: (ResultRow) -> Void) throws {
        let runPages = options.includes(Self.pageName), runParallel = options.includes(Self.parallelName)
        guard runPages || runParallel else { return }
        defer { stores?.strata.remove(); stores?.raw.remove() }
        try buildStores()
        if runPages {
            start(Self.pageName, Plan(iterations: sizes.rounds, warmup: 0))
            try pageReadsDuringImport(record: record)
        }
        if runParallel {
            start(Self.parallelName, Plan(iterations: sizes.parallelRounds, warmup: 0))
            try parallelFetches(record: record)
        }
        sections.append("Concurrent-reads rows: wall-clock latencies and throughput, so callgrind (valgrind is installed on this VM) "
                        + "and the perf gate's instruction counts are not used for them; `perf` was not running during the measured run.")
    }

    // MARK: Stores

    /// The base stores, unmeasured: Strata's by batch inserts (a 256 MiB page cache on that
    /// coordinator only), raw's with the table and index read from Strata's store and the same
    /// rows and keys by prepared INSERTs; then the two compared page by page.
    private func buildStores() throws {
        let rows = SplitMix64.rows(sizes.baseRows, seed: 0x1_7E35)
        say("  (building the \(formatCount(sizes.baseRows))-item stores, unmeasured)")
        let strata = try scratch.newStore("items-strata")
        let raw = try scratch.newStore("items-raw")
        let (_, seconds) = try timed {
            var storeOptions = StoreOptions()
            storeOptions.cacheSizeKiB = 262_144
            let coordinator = try StoreCoordinator(model: ItemsSide.model, url: strata.url, options: storeOptions)
            let chunk = 250_000
            for first in stride(from: 0, to: rows.count, by: chunk) {
                let part = Array(rows[first..<min(first + chunk, rows.count)])
                let result = try coordinator.execute(BatchInsertRequest(entityName: "Item", count: part.count) { i, row in
                    try row.set(part[i].name, forKey: "name")
                    try row.set(part[i].category, forKey: "category")
                    try row.set(part[i].number, forKey: "number")
                })
                guard result.count == part.count, result.objectIDs.first?.primaryKey == Int64(first + 1) else {
                    throw VersusError("the batch insert wrote \(result.count) items from key \(result.objectIDs.first?.primaryKey ?? -1)")
                }
            }
            coordinator.close()
            let schema = try RawDB(path: strata.path).schemaSQL()
            guard schema.contains(where: { $0.contains("CREATE INDEX") && $0.contains("\"name\"") }) else {
                throw VersusError("Strata's item store has no index on name: \(schema)")
            }
            let db = try RawDB(path: raw.path)
            for statement in schema { try db.execute(statement) }
            let writer = try RawItemWriter(path: raw.path)
            try writer.db.execute("PRAGMA cache_size=-262144")
            try writer.save(rows, firstKey: 1)
        }
        stores = (strata, raw)
        // The same rows, page for page, and the plan both use.
        let container = try PersistentContainer(model: ItemsSide.model, url: strata.url)
        defer { container.coordinator.close() }
        let reader = try RawPageReader(path: raw.path)
        var rng = SplitMix64(seed: 99)
        for _ in 0..<20 {
            let start = rng.name()
            let ours = try container.mainContext.performAndWait {
                try container.mainContext.fetch(FetchRequest(entityName: "Item", predicate: Condition.key("name") >= start,
                                                             sortKeys: [.ascending("name")], fetchLimit: 50))
                    .map { "\($0.objectID.primaryKey):\(($0[attribute: "name"] as String?) ?? "")" }
            }
            let theirs = try reader.pageKeys(from: start, limit: 50)
            guard ours == theirs, !ours.isEmpty else { throw VersusError("Strata's page from \(start) differs from raw's: \(ours.prefix(3)) vs \(theirs.prefix(3))") }
        }
        say("  (built in \(formatNumber(seconds)) s: Strata \(formatCount(strata.fileBytes / 1_000_000)) MB, raw \(formatCount(raw.fileBytes / 1_000_000)) MB; pages agree)")
    }

    /// Strata's page statement (from its trace) and SQLite's plan for it.
    private func strataStatementAndPlan() throws -> (sql: String, plan: String) {
        let copy = try stores!.strata.copy(in: scratch, label: "items-trace")
        defer { copy.remove() }
        let container = try PersistentContainer(model: ItemsSide.model, url: copy.url)
        let trace = TraceLog()
        container.coordinator.setTrace { trace.append($0) }
        _ = try container.mainContext.performAndWait { try ItemPages.strata(container.mainContext, from: "m", limit: pageSize) }
        container.coordinator.setTrace(nil)
        container.coordinator.close()
        guard let sql = trace.all.last(where: { $0.hasPrefix("SELECT") && $0.contains("\"Item\"") }) else {
            throw VersusError("no page statement in Strata's trace: \(trace.all)")
        }
        var plan: [String] = []
        let db = try RawDB(path: stores!.raw.path)
        try db.forEachRow("EXPLAIN QUERY PLAN " + sql, bind: { _ = sqlite3_bind_text($0, 1, "m", -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }) {
            plan.append(sqlite3_column_text($0, 3).map { String(cString: $0) } ?? "")
        }
        return (sql, plan.joined(separator: "; "))
    }

    // MARK: 1. Page reads during an import

    enum Route: String, CaseIterable {
        case update = "A: update context saveToStore()"
        case background = "B: newBackgroundContext() save()"
    }

    /// What one measurement of one side gave.
    struct PageRun {
        var reads: PagingThread.Outcome?
        var saves: [Double] = []
        /// Strata: the `saveToStore()` / `save()` call alone, per save.
        var saveCalls: [Double] = []
        /// The import's phases (monotonic ns), to tell which one slow reads started in.
        var phases: [(phase: Phase, from: UInt64, to: UInt64)] = []
    }

    enum Phase: String, CaseIterable {
        case inserting = "inserting objects (raw: the whole transaction)"
        case saveCall = "in the save call"
        case afterSave = "after the save call (context released, merges)"
        case outside = "before or after the import"
    }

    /// Reads over 1 ms by the import phase they started in: count and worst.
    static func slowReadsByPhase(_ runs: [PageRun]) -> [(Phase, Int, Double)] {
        var byPhase: [Phase: (Int, Double)] = [:]
        for run in runs {
            for read in run.reads?.slow ?? [] {
                let phase = run.phases.first { read.start >= $0.from && read.start < $0.to }?.phase ?? .outside
                let latency = Double(read.end - read.start) * 1e-9
                let old = byPhase[phase] ?? (0, 0)
                byPhase[phase] = (old.0 + 1, max(old.1, latency))
            }
        }
        return Phase.allCases.compactMap { phase in byPhase[phase].map { (phase, $0.0, $0.1) } }
    }

    private func importRows(round: Int, save: Int) -> [ItemRow] {
        SplitMix64.rows(sizes.importRows, seed: 0xA11CE + UInt64(round) * 1000 + UInt64(save))
    }

    private func strataRun(route: Route?, reads: Bool, round: Int) throws -> PageRun {
        let copy = try stores!.strata.copy(in: scratch, label: "items-strata-run")
        defer { copy.remove() }
        let container = try PersistentContainer(model: ItemsSide.model, url: copy.url)
        defer { container.coordinator.close() }
        let main = container.mainContext
        var run = PageRun()
        let limit = pageSize
        let reader = reads ? PagingThread(name: "strata-main-reader", period: period, warmup: sizes.warmupReads,
                                          target: route == nil ? sizes.idleReads : nil, seed: 7 + UInt64(round)) { start in
            try main.performAndWait {
                let entered = monotonicNanos()
                var page = try ItemPages.strata(main, from: start, limit: limit)
                page.entered = entered
                return page
            }
        } : nil
        reader?.waitUntilWarm()
        if let route {
            for save in 0..<sizes.saves {
                let rows = importRows(round: round, save: save)
                let context = route == .update ? container.newUpdateContext() : container.newBackgroundContext()
                var call = 0.0
                var marks: [UInt64] = [monotonicNanos()]
                let (_, seconds) = try timed {
                    try context.performAndWait {
                        for row in rows {
                            let o = try context.insert("Item")
                            o[attribute: "name"] = row.name
                            o[attribute: "category"] = row.category
                            o[attribute: "number"] = row.number
                        }
                        let began = clock.now
                        marks.append(monotonicNanos())
                        if route == .update { try context.saveToStore() } else { try context.save() }
                        marks.append(monotonicNanos())
                        call = (clock.now - began).seconds
                    }
                }
                withExtendedLifetime(context) {}
                run.saves.append(seconds)
                run.saveCalls.append(call)
                run.phases += [(.inserting, marks[0], marks[1]), (.saveCall, marks[1], marks[2]), (.afterSave, marks[2], UInt64.max)]
                if run.phases.count > 3 { run.phases[run.phases.count - 4].to = marks[0] }
            }
            run.phases[run.phases.count - 1].to = monotonicNanos()
            run.reads = try reader?.stopAndJoin()
        } else {
            run.reads = try reader?.join()
        }
        container.waitForPendingMerges()
        let count = try main.performAndWait { try main.count(for: FetchRequest(entityName: "Item")) }
        let expected = sizes.baseRows + (route == nil ? 0 : sizes.saves * sizes.importRows)
        guard count == expected else { throw VersusError("Strata's store holds \(count) items, expected \(expected)") }
        return run
    }

    private func rawRun(imports: Bool, reads: Bool, round: Int) throws -> PageRun {
        let copy = try stores!.raw.copy(in: scratch, label: "items-raw-run")
        defer { copy.remove() }
        var run = PageRun()
        let writer = try RawItemWriter(path: copy.path)
        let pageReader = reads ? try RawPageReader(path: copy.path) : nil
        let limit = pageSize
        let reader = pageReader.map { pages in
            PagingThread(name: "raw-reader", period: period, warmup: sizes.warmupReads, target: imports ? nil : sizes.idleReads,
                         seed: 7 + UInt64(round)) { start in try pages.page(from: start, limit: limit) }
        }
        reader?.waitUntilWarm()
        if imports {
            for save in 0..<sizes.saves {
                let rows = importRows(round: round, save: save)
                let first = Int64(sizes.baseRows + save * sizes.importRows + 1)
                let from = monotonicNanos()
                run.saves.append(try timed { try writer.save(rows, firstKey: first) }.1)
                run.phases.append((.inserting, from, monotonicNanos()))
            }
            run.reads = try reader?.stopAndJoin()
        } else {
            run.reads = try reader?.join()
        }
        let count = try writer.db.count("Item")
        let expected = sizes.baseRows + (imports ? sizes.saves * sizes.importRows : 0)
        guard count == expected else { throw VersusError("raw store holds \(count) items, expected \(expected)") }
        return run
    }

    private func pageReadsDuringImport(record: (ResultRow) -> Void) throws {
        let (sql, plan) = try strataStatementAndPlan()
        let loadBefore = loadAverage()
        // Keys: "strata idle", "strata A reads", "strata A alone", …, "raw idle", "raw reads", "raw alone".
        var runs: [String: [PageRun]] = [:]
        var bodies: [(String, IterationBody)] = []
        func add(_ key: String, _ body: @escaping (Int) throws -> PageRun) {
            bodies.append((key, { round, _ in
                let run = try body(round)
                runs[key, default: []].append(run)
                say("    \(key): " + Self.summary(run))
                return 0
            }))
        }
        add("strata idle") { try self.strataRun(route: nil, reads: true, round: $0) }
        for route in Route.allCases {
            add("strata \(route.rawValue) reads") { try self.strataRun(route: route, reads: true, round: $0) }
            add("strata \(route.rawValue) alone") { try self.strataRun(route: route, reads: false, round: $0) }
        }
        add("raw idle") { try self.rawRun(imports: false, reads: true, round: $0) }
        add("raw reads") { try self.rawRun(imports: true, reads: true, round: $0) }
        add("raw alone") { try self.rawRun(imports: true, reads: false, round: $0) }
        _ = try interleave(Plan(iterations: sizes.rounds, warmup: 0), bodies)

        struct Stats {
            var reads = 0, missed = 0, short = 0
            var p50 = Double.nan, p90 = Double.nan, p99 = Double.nan, p999 = Double.nan, max = Double.nan
            var correctedP99 = Double.nan, correctedMax = Double.nan
            var importPerSave = Double.nan, savePerSave = Double.nan
        }
        func stats(_ key: String) -> Stats {
            let list = runs[key] ?? []
            var s = Stats()
            let latencies = list.flatMap { $0.reads?.latencies ?? [] }.sorted()
            let corrected = (latencies + list.flatMap { $0.reads?.overrun ?? [] }).sorted()
            s.reads = latencies.count
            s.missed = list.reduce(0) { $0 + ($1.reads?.missedTicks ?? 0) }
            s.short = list.reduce(0) { $0 + ($1.reads?.shortPages ?? 0) }
            if !latencies.isEmpty {
                s.p50 = percentile(latencies, 0.5); s.p90 = percentile(latencies, 0.9)
                s.p99 = percentile(latencies, 0.99); s.p999 = percentile(latencies, 0.999); s.max = latencies.last!
                s.correctedP99 = percentile(corrected, 0.99); s.correctedMax = corrected.last!
            }
            let saves = list.flatMap(\.saves)
            if !saves.isEmpty { s.importPerSave = median(saves) }
            let calls = list.flatMap(\.saveCalls)
            if !calls.isEmpty { s.savePerSave = median(calls) }
            return s
        }
        let strataIdle = stats("strata idle"), rawIdle = stats("raw idle"), rawReads = stats("raw reads"), rawAlone = stats("raw alone")
        let routeStats = Route.allCases.map { ($0, stats("strata \($0.rawValue) reads"), stats("strata \($0.rawValue) alone")) }
        let saveLabel = "\(formatCount(sizes.importRows)) items per save, \(sizes.saves) saves"

        // The summary table: p50 / p99 / max per route, raw beside each.
        func latencyRows(_ label: String, _ strata: Stats, _ raw: Stats, goals: Bool, note: String?) {
            for (name, s, r, goal) in [("p50", strata.p50, raw.p50, nil as Double?), ("p99", strata.p99, raw.p99, goals ? 0.001 : nil),
                                       ("max", strata.max, raw.max, goals ? 0.008 : nil)] {
                var row = ResultRow(group: group, workload: "page read \(name), \(label)", rows: pageSize, unit: .milliseconds,
                                    values: [.raw: r, .strata: s])
                if let goal {
                    row.goal = "≤ \(formatNumber(goal * 1e3)) ms"
                    row.met = s <= goal
                }
                if name == "max" { row.note = note }
                record(row)
            }
        }
        latencyRows("store idle", strataIdle, rawIdle, goals: false,
                    note: "the main context of a PersistentContainer reads a page every \(formatNumber(period * 1e3)) ms from a thread of its own "
                        + "(main.performAndWait { fetch(name >= random, by name, limit \(pageSize)); every name read through o[attribute:] }), "
                        + "latency from the performAndWait call to its return, \(strataIdle.reads) reads (\(sizes.rounds) rounds × \(sizes.idleReads), "
                        + "after \(sizes.warmupReads) unrecorded); raw: one read-only connection, `\(ItemsSide.rawPageSQL)` prepared once, every column decoded, "
                        + "\(rawIdle.reads) reads. Strata's statement: `\(sql)`; SQLite's plan for it: \(plan)")
        for (route, during, alone) in routeStats {
            let label = "during import, route \(route == .update ? "A (update context saveToStore())" : "B (newBackgroundContext() save())")"
            latencyRows(label, during, rawReads, goals: true,
                        note: "\(during.reads) reads during the import (\(saveLabel), \(sizes.rounds) rounds), \(during.missed) ticks overrun; "
                            + "counting the overrun ticks (a reader due every \(formatNumber(period * 1e3)) ms): p99 \(Unit.milliseconds.format(during.correctedP99)), "
                            + "max \(Unit.milliseconds.format(during.correctedMax)). Raw during its import: \(rawReads.reads) reads, p99 \(Unit.milliseconds.format(rawReads.p99)), "
                            + "max \(Unit.milliseconds.format(rawReads.max)), \(rawReads.missed) ticks overrun")
            var importRow = ResultRow(group: group, workload: "import per save during reads, route \(route == .update ? "A" : "B")",
                                      rows: sizes.importRows, unit: .milliseconds, values: [.raw: rawReads.importPerSave, .strata: during.importPerSave])
            let ratio = during.importPerSave / alone.importPerSave, rawRatio = rawReads.importPerSave / rawAlone.importPerSave
            importRow.note = "median per save (insert \(formatCount(sizes.importRows)) objects, set 3 attributes, "
                + (route == .update ? "saveToStore()" : "save()") + "; raw: BEGIN IMMEDIATE, \(formatCount(sizes.importRows)) prepared INSERTs, COMMIT); "
                + "alone (no reader): Strata \(Unit.milliseconds.format(alone.importPerSave)), raw \(Unit.milliseconds.format(rawAlone.importPerSave)); "
                + "during reads / alone: Strata \(formatRatio(ratio)), raw \(formatRatio(rawRatio)); the save call alone: \(Unit.milliseconds.format(during.savePerSave)) "
                + "during reads, \(Unit.milliseconds.format(alone.savePerSave)) alone"
            record(importRow)
        }

        // The full table for the results file.
        var lines: [String] = []
        lines.append("Concurrent reads, page read during an import (\(formatCount(sizes.baseRows)) items, \(saveLabel), a read every \(formatNumber(period * 1e3)) ms; "
                     + "\(sizes.rounds) rounds pooled; load average before: \(loadBefore), after: \(loadAverage())):")
        lines.append("")
        lines.append("| side, route | reads | p50 | p90 | p99 | p99.9 | max | ticks overrun | p99 / max counting overrun ticks | import per save during reads | alone | during / alone | p99 ≤ 1 ms | max ≤ 8 ms |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        func ms(_ v: Double) -> String { v.isNaN ? "" : Unit.milliseconds.format(v) }
        func line(_ label: String, _ s: Stats, alone: Stats?, goals: Bool) {
            let ratio = alone.map { formatRatio(s.importPerSave / $0.importPerSave) } ?? ""
            let p99Met = goals ? (s.p99 <= 0.001 ? "yes" : "**no**") : ""
            let maxMet = goals ? (s.max <= 0.008 ? "yes" : "**no**") : ""
            lines.append("| \(label) | \(s.reads) | \(ms(s.p50)) | \(ms(s.p90)) | \(ms(s.p99)) | \(ms(s.p999)) | \(ms(s.max)) | \(s.missed) | "
                         + "\(ms(s.correctedP99)) / \(ms(s.correctedMax)) | \(ms(s.importPerSave)) | \(alone.map { ms($0.importPerSave) } ?? "") | \(ratio) | \(p99Met) | \(maxMet) |")
        }
        line("Strata, store idle", strataIdle, alone: nil, goals: false)
        for (route, during, alone) in routeStats { line("Strata, route \(route.rawValue)", during, alone: alone, goals: true) }
        line("raw SQLite, store idle", rawIdle, alone: nil, goals: false)
        line("raw SQLite, during its import", rawReads, alone: rawAlone, goals: true)
        lines.append("")
        lines.append("Reads over 1 ms, by what the import was doing when they started (all rounds):")
        lines.append("")
        lines.append("| side, route | phase | reads over 1 ms | worst |")
        lines.append("|---|---|---:|---:|")
        var slowKeys = [("Strata, store idle", "strata idle")]
        for route in Route.allCases { slowKeys.append(("Strata, route \(route.rawValue)", "strata \(route.rawValue) reads")) }
        slowKeys += [("raw SQLite, store idle", "raw idle"), ("raw SQLite, during its import", "raw reads")]
        for (label, key) in slowKeys {
            let slow = Self.slowReadsByPhase(runs[key] ?? [])
            if slow.isEmpty { lines.append("| \(label) | | 0 | |") }
            for (phase, count, worst) in slow { lines.append("| \(label) | \(phase.rawValue) | \(count) | \(ms(worst)) |") }
        }
        lines.append("")
        lines.append("Each read over 1 ms: its number in its round (warm-up included; the reading context keeps every object it fetched, "
                     + "about 50 more a read), its latency, the wait for main's queue (Strata), and its thread's CPU time in it:")
        lines.append("")
        for (label, key) in slowKeys {
            var items: [String] = []
            for run in runs[key] ?? [] {
                for read in run.reads?.slow ?? [] {
                    let phase = run.phases.first { read.start >= $0.from && read.start < $0.to }?.phase ?? .outside
                    items.append("#\(read.index) \(ms(Double(read.end - read.start) * 1e-9)) (queue \(ms(Double(read.queueWait) * 1e-9)), "
                                 + "CPU \(ms(Double(read.cpu) * 1e-9)), \(phase == .outside ? "no import" : phase.rawValue))")
                }
            }
            if !items.isEmpty { lines.append("- \(label): " + items.joined(separator: "; ")) }
        }
        lines.append("")
        sections.append(lines.joined(separator: "\n"))
    }

    static func summary(_ run: PageRun) -> String {
        var parts: [String] = []
        if let reads = run.reads {
            let sorted = reads.latencies.sorted()
            parts.append("\(sorted.count) reads p50 \(Unit.milliseconds.format(percentile(sorted, 0.5))) p99 \(Unit.milliseconds.format(percentile(sorted, 0.99))) "
                         + "max \(Unit.milliseconds.format(sorted.last ?? .nan)), \(reads.missedTicks) ticks overrun")
        }
        if !run.saves.isEmpty {
            parts.append("saves " + run.saves.map { Unit.milliseconds.format($0) }.joined(separator: " "))
        }
        if !run.saveCalls.isEmpty {
            parts.append("(save calls " + run.saveCalls.map { Unit.milliseconds.format($0) }.joined(separator: " ") + ")")
        }
        let slow = slowReadsByPhase([run])
        if !slow.isEmpty {
            parts.append("reads > 1 ms: " + slow.map { "\($0.1) \($0.0.rawValue) (worst \(Unit.milliseconds.format($0.2)))" }.joined(separator: ", "))
        }
        return parts.joined(separator: "; ")
    }

    // MARK: 2. Two contexts fetching in parallel

    /// Runs `perThread` fetch loops, one thread each, from a common start: every thread warms
    /// up (20 fetches, so each has its reader connection and statement), waits, then all start
    /// together. Returns the fetches per second of all threads together, start to last end.
    private func parallel(_ threads: Int, fetches: Int, seed: UInt64,
                          _ makeFetch: (Int) throws -> @Sendable (String) throws -> PageResult) throws -> Double {
        let ready = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        let failure = Shared<(any Error)?>(nil)
        var dones: [DispatchSemaphore] = []
        for t in 0..<threads {
            let fetch = try makeFetch(t)
            var rng = SplitMix64(seed: seed &+ UInt64(t) &* 7919)
            let warm = (0..<20).map { _ in rng.name() }
            let starts = (0..<fetches).map { _ in rng.name() }
            dones.append(startThread("parallel-\(t)") {
                do {
                    for start in warm { _ = try fetch(start) }
                } catch {
                    failure.value = error
                }
                ready.signal()
                go.wait()
                do {
                    var rows = 0
                    for start in starts { rows += try fetch(start).count }
                    guard rows > 0 else { throw VersusError("the parallel fetches read no rows") }
                } catch {
                    failure.value = error
                }
            })
        }
        for _ in 0..<threads { ready.wait() }
        let began = monotonicNanos()
        for _ in 0..<threads { go.signal() }
        for done in dones { done.wait() }
        let seconds = Double(monotonicNanos() - began) * 1e-9
        if let error = failure.value { throw error }
        return Double(threads * fetches) / seconds
    }

    private func parallelFetches(record: (ResultRow) -> Void) throws {
        let strataCopy = try stores!.strata.copy(in: scratch, label: "items-parallel")
        defer { strataCopy.remove() }
        let rawPath = stores!.raw.path
        let loadBefore = loadAverage()
        var results: [String: [String: [Double]]] = [:]
        for (label, limit, fetches) in [("page of \(pageSize)", pageSize, sizes.parallelPages), ("page of \(formatCount(largePage))", largePage, sizes.parallelLarge)] {
            /// A context's fetch: `performAndWait { fetch; read every name; reset() }` (the
            /// reset keeps the context's registry from growing by every page, and releases the
            /// page's objects inside the region, as dropping them does in an app).
            func strataFetch(_ context: ManagedObjectContext) -> @Sendable (String) throws -> PageResult {
                { start in
                    try context.performAndWait {
                        let page = try ItemPages.strata(context, from: start, limit: limit)
                        context.reset()
                        return page
                    }
                }
            }
            func strata(_ kind: String) throws -> Double {
                let container = try PersistentContainer(model: ItemsSide.model, url: strataCopy.url)
                defer { container.coordinator.close() }
                let contexts: [ManagedObjectContext]
                switch kind {
                case "one": contexts = [container.newBackgroundContext()]
                case "two": contexts = [container.newBackgroundContext(), container.newBackgroundContext()]
                default: contexts = [container.mainContext, container.newBackgroundContext()]
                }
                return try parallel(contexts.count, fetches: fetches, seed: 31) { strataFetch(contexts[$0]) }
            }
            func raw(_ threads: Int) throws -> Double {
                let readers = try (0..<threads).map { _ in try RawPageReader(path: rawPath) }
                return try parallel(threads, fetches: fetches, seed: 31) { t in
                    let reader = readers[t]
                    return { start in try reader.page(from: start, limit: limit) }
                }
            }
            let samples = try interleave(Plan(iterations: sizes.parallelRounds, warmup: 0), [
                ("strata one", { _, _ in try strata("one") }),
                ("strata two", { _, _ in try strata("two") }),
                ("strata main+background", { _, _ in try strata("main+background") }),
                ("raw one", { _, _ in try raw(1) }),
                ("raw two", { _, _ in try raw(2) }),
            ] as [(String, IterationBody)])
            results[label] = samples
            say("    \(label): " + samples.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.map { formatCount(Int($0)) }.joined(separator: "/")) /s" }.joined(separator: "; "))

            let one = median(samples["strata one"] ?? []), two = median(samples["strata two"] ?? [])
            let mixed = median(samples["strata main+background"] ?? [])
            let rawOne = median(samples["raw one"] ?? []), rawTwo = median(samples["raw two"] ?? [])
            let what = "\(formatCount(fetches)) fetches per context of a \(label) (name >= random, by name, every name read)"
            var oneRow = ResultRow(group: group, workload: "fetches per second, one context, \(label)", rows: limit, unit: .perSecond,
                                   values: [.raw: rawOne, .strata: one])
            oneRow.note = "\(what): a background context on one thread, performAndWait { fetch; read; reset() } per fetch; raw: one read-only connection on one thread; "
                + "Strata/raw here is a throughput ratio (below 1: slower)"
            record(oneRow)
            var twoRow = ResultRow(group: group, workload: "fetches per second, two contexts at once, \(label)", rows: limit, unit: .perSecond,
                                   values: [.raw: rawTwo, .strata: two])
            twoRow.note = "the same on two background contexts of one container (one coordinator, its reader pool), each on its own thread, started together; "
                + "throughput = all fetches / wall time until the last ends; raw: two read-only connections, one per thread. "
                + "Main + a background context instead: \(formatCount(Int(mixed))) /s (\(formatRatio(mixed / one)) one context)"
            record(twoRow)
            var ratioRow = ResultRow(group: group, workload: "two contexts / one context, \(label)", rows: limit, unit: .ratio,
                                     values: [.raw: rawTwo / rawOne, .strata: two / one])
            ratioRow.goal = "≥ 1.7× (2 cores)"
            ratioRow.met = two / one >= 1.7
            ratioRow.note = "medians of \(sizes.parallelRounds) rounds; raw two / one connection \(formatRatio(rawTwo / rawOne)); load average before: \(loadBefore), after: \(loadAverage())"
            record(ratioRow)
        }
    }
}

/// `/proc/loadavg`'s three averages.
func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
}
