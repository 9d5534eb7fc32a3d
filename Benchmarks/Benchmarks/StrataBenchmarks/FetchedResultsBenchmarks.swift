import Benchmark
import CSQLiteRaw
import Foundation
import Strata

// The results controller on goods in categories (100 categories, random names; 100,000 and
// 1,000,000 goods), sectioned by `category.name` and sorted by (category.name, name), beside the raw
// SQLite C API doing the same work in the same run. Both sides build their store in setup, with the
// same tables and index (Strata's schema); each check compares what was read with plain Swift.
//
// - `frc performFetch N (Strata)`: a new container (outside the measurement), then
//   `performFetch()` plus the first `sections` (what a table view asks for first). The run also
//   checks, through the coordinator's trace, that Strata ran `strataGoodsSQL`.
//   Raw, three ways: `(raw SQLite)` the natural LEFT JOIN ordered by category name, name, key,
//   decoded into Swift, plus a GROUP BY count per section (Core Data's section query);
//   `(raw SQLite, sections in Swift)` the JOIN alone, sections counted from the ordered rows as
//   Strata does; `(raw SQLite, Strata's SQL)` Strata's exact statement plus the GROUP BY count.
// - `frc change N rename (Strata)`: a controller on main with a delegate over N goods; each
//   iteration renames one good in a new update context (outside the measurement) so that it moves
//   to the front or the back of its section, and measures from the start of `save()` (into main,
//   memory only) to the delegate's `controllerDidChangeContent`. Checks the change set is one move.
//   Raw: the same rename as an UPDATE (own transaction), then either `(re-query)` the whole list
//   and section counts read again (a list with no change tracking), or `(positions)` the row's
//   (section, item) asked for with two small indexed queries before and after the UPDATE (the
//   least a hand-written list can do).
// - `frc change 100k recategorise (Strata)`: the good moved to another category, saved into main
//   with `save()`: the categories change too, so the controller re-runs its request — in memory,
//   since main then holds unsaved changes. `… saveToStore (Strata)`: the same through
//   `saveToStore()` (update → main → writer → SQLite), after which main is clean and the re-run is
//   SQL; the commit is inside the measurement.

/// `TestModels.goods()` from the test support (this package can't import it).
let goodsBenchmarkModel: Model = {
    do {
        return try Model(version: "goods-1", entities: [
            Entity("Category", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category")]),
            Entity("Good", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("number", .int64, isOptional: false, defaultValue: .int64(0)),
            ], relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods")]),
        ])
    } catch {
        fatalError("goods benchmark model is invalid: \(error)")
    }
}()

/// The controller's request: sections by category name, goods by name within them.
func goodsRequest() -> AnyFetchRequest {
    var request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
    request.fetchBatchSize = 50
    return request
}

/// The SQL Strata runs for `goodsRequest()` (the to-one key path is a correlated subquery).
/// Checked against the coordinator's trace on every Strata run, so a change in Strata's SQL fails
/// the benchmark instead of silently comparing different queries.
let strataGoodsSQL = #"SELECT t0."_pk", (SELECT t1."name" FROM "Category" AS t1 WHERE t1."_pk" = t0."category"), t0."name", t0."_version" FROM "Good" AS t0 ORDER BY (SELECT t1."name" FROM "Category" AS t1 WHERE t1."_pk" = t0."category") ASC, t0."name" ASC, t0."_pk" ASC"#

/// Goods and categories as plain values: category names, and each good's name and category index.
struct GoodsData: Sendable {
    var categories: [String]
    var goods: [(name: String, category: Int)]

    /// The section names in order with their sizes, computed in plain Swift.
    var expectedSections: [(name: String, count: Int)] {
        var counts = Array(repeating: 0, count: categories.count)
        for good in goods { counts[good.category] += 1 }
        return zip(categories, counts).filter { $0.1 > 0 }.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
    }
}

/// `count` goods with random 8–16 letter names in `categoryCount` categories with distinct random
/// capitalised names (so the section order is not the key order); seeded.
func makeGoodsData(count: Int, categoryCount: Int = 100, seed: UInt64 = 0x4652_4353_3130) -> GoodsData {
    var rng = SplitMix64(seed: seed)
    let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    func word(_ length: ClosedRange<Int>) -> String {
        let n = Int.random(in: length, using: &rng)
        return String(decoding: (0..<n).map { _ in letters[Int.random(in: 0..<letters.count, using: &rng)] }, as: UTF8.self)
    }
    var names = Set<String>()
    var categories: [String] = []
    while categories.count < categoryCount {
        let name = word(5...10).capitalized
        if names.insert(name).inserted { categories.append(name) }
    }
    var goods: [(name: String, category: Int)] = []
    goods.reserveCapacity(count)
    for _ in 0..<count { goods.append((word(8...16), Int.random(in: 0..<categoryCount, using: &rng))) }
    return GoodsData(categories: categories, goods: goods)
}

// MARK: Building the stores

/// A Strata store of `data` in `store`, written by one root context in one save; closed again.
func makeGoodsStrataStore(_ store: TemporaryStore, _ data: GoodsData) throws -> TemporaryStore {
    let coordinator = try StoreCoordinator(model: goodsBenchmarkModel, url: store.url)
    defer { coordinator.close() }
    let context = coordinator.newContext()
    try context.performAndWait {
        let categories = try data.categories.map { name in
            let category = try context.insert("Category")
            try category.setValue(name, forKey: "name")
            return category
        }
        for good in data.goods {
            let object = try context.insert("Good")
            try object.setValue(good.name, forKey: "name")
            try object.setValue(categories[good.category], forKey: "category")
        }
        _ = try context.save()
    }
    return store
}

/// A raw store of `data` with the tables and index Strata creates; closed again.
func makeGoodsRawStore(_ store: TemporaryStore, _ data: GoodsData) throws -> TemporaryStore {
    let db = try RawDatabase(path: store.path)
    try db.createGoodsSchema()
    try db.insertGoods(data)
    return store
}

/// A built store and what it must show.
struct GoodsStore: Sendable {
    let store: TemporaryStore
    let sections: [(name: String, count: Int)]
    let rowCount: Int

    init(strata label: String, count: Int) throws {
        let data = makeGoodsData(count: count)
        store = try makeGoodsStrataStore(TemporaryStore(fresh: label), data)
        sections = data.expectedSections
        rowCount = count
    }

    init(raw label: String, count: Int) throws {
        let data = makeGoodsData(count: count)
        store = try makeGoodsRawStore(TemporaryStore(fresh: label), data)
        sections = data.expectedSections
        rowCount = count
    }

    func check(_ found: [(name: String, count: Int)], _ side: String) throws {
        guard found.count == sections.count, zip(found, sections).allSatisfy({ $0.name == $1.name && $0.count == $1.count }) else {
            throw BenchmarkFailure(description: "\(side) found \(found.count) sections (\(found.prefix(3))…), expected \(sections.count) (\(sections.prefix(3))…)")
        }
    }
}

/// Collects the statements a coordinator runs.
final class TraceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var statements: [String] = []
    func append(_ sql: String) { lock.withLock { statements.append(sql) } }
    var all: [String] { lock.withLock { statements } }
}

// MARK: performFetch

/// Opens the list through Strata: `performFetch()` and the first `sections`, timed; checks the
/// sections and, on the first run of a process, that Strata ran `strataGoodsSQL`.
func strataOpenList(_ benchmark: Benchmark, _ fixture: GoodsStore) throws {
    let container = try PersistentContainer(model: goodsBenchmarkModel, url: fixture.store.url)
    defer { container.coordinator.close() }
    let trace = TraceLog()
    container.coordinator.setTrace { trace.append($0) }
    let main = container.mainContext
    let sections: [(name: String, count: Int)] = try main.performAndWait {
        benchmark.startMeasurement()
        let controller = FetchedResultsController(fetchRequest: goodsRequest(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name")
        try controller.performFetch()
        let sections = controller.sections ?? []
        benchmark.stopMeasurement()
        return sections.map { ($0.name, $0.numberOfObjects) }
    }
    container.coordinator.setTrace(nil)
    guard trace.all.contains(strataGoodsSQL) else {
        throw BenchmarkFailure(description: "Strata no longer runs strataGoodsSQL; it ran: \(trace.all)")
    }
    try fixture.check(sections, "Strata")
}

/// Opens the list on raw SQLite with `sql`: rows plus section counts, timed; checks both.
/// `countInSwift`: the section counts come from the ordered rows (runs of equal category names,
/// as Strata builds its sections) instead of a second, GROUP BY query.
func rawOpenList(_ benchmark: Benchmark, _ fixture: GoodsStore, _ sql: String, countInSwift: Bool = false) throws {
    let db = try RawDatabase(path: fixture.store.path)
    benchmark.startMeasurement()
    let rows: [RawGoodRow], sections: [(name: String, count: Int)]
    if countInSwift {
        rows = try db.goodRows(sql)
        var runs: [(name: String, count: Int)] = []
        for row in rows {
            if runs.last?.name == row.section { runs[runs.count - 1].count += 1 } else { runs.append((row.section, 1)) }
        }
        sections = runs
    } else {
        (rows, sections) = try db.listAndSections(sql)
    }
    benchmark.stopMeasurement()
    guard rows.count == fixture.rowCount else {
        throw BenchmarkFailure(description: "raw SQLite read \(rows.count) rows, expected \(fixture.rowCount)")
    }
    try fixture.check(sections, "raw SQLite")
}

// MARK: One change delivered

/// Records the last change set and stops the measurement in `controllerDidChangeContent`.
final class ChangeRecorder: FetchedResultsControllerDelegate {
    var last: FetchedChanges?
    var onDidChange: (() -> Void)?

    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        if case .changes(let changes) = event { last = changes }
    }
    func controllerDidChangeContent(_ controller: AnyFetchedResultsController) {
        onDidChange?()
        onDidChange = nil
    }
}

/// A tracking controller on main over a built Strata store, and the good the iterations change.
/// Used only on main's queue (the controller) or the benchmark's thread (the rest).
final class ChangeFixture: @unchecked Sendable {
    let store: TemporaryStore
    let container: PersistentContainer
    let controller: FetchedResultsController<ManagedObject>
    let recorder = ChangeRecorder()
    let target: ObjectID
    let categoryIDs: [ObjectID]
    var round = 0

    init(label: String, count: Int) throws {
        let data = makeGoodsData(count: count)
        store = try makeGoodsStrataStore(TemporaryStore(fresh: label), data)
        container = try PersistentContainer(model: goodsBenchmarkModel, url: store.url)
        let main = container.mainContext
        controller = FetchedResultsController(fetchRequest: goodsRequest(), managedObjectContext: main,
                                              sectionNameKeyPath: "category.name")
        let (controller, recorder) = (controller, recorder)
        (target, categoryIDs) = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            let sections = controller.sections ?? []
            // A good in the middle of a middle section.
            let section = sections[sections.count / 2]
            let categories = try main.fetchObjectIDs(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))
            return (section.objectIDs[section.numberOfObjects / 2], categories)
        }
    }

    deinit { container.coordinator.close(); store.remove() }

    /// Changes the target in a new update context with `edit`, and times `save()` into main up to
    /// the delegate's `controllerDidChangeContent`. Returns the change set the delegate received.
    /// `cascade`: `saveToStore()` (update → main → writer → SQLite) instead of `save()`.
    func deliver(_ benchmark: Benchmark, cascade: Bool = false,
                 _ edit: (ManagedObject, ManagedObjectContext) throws -> Void) throws -> FetchedChanges {
        round += 1
        recorder.last = nil
        var stopped = false
        recorder.onDidChange = {
            benchmark.stopMeasurement()
            stopped = true
        }
        let update = container.newUpdateContext()
        let target = self.target
        try update.performAndWait {
            try edit(try update.existingObject(with: target), update)
            update.processPendingChanges()
            benchmark.startMeasurement()
            _ = cascade ? try update.saveToStore() : try update.save()
        }
        // The delegate runs on main's queue, within the save; this only makes sure of it.
        let changes = container.mainContext.performAndWait { recorder.last }
        guard stopped, let changes else {
            throw BenchmarkFailure(description: "the delegate heard of no change")
        }
        return changes
    }

    /// Renames the target alternately to the front and the back of its section: a move each time.
    func renameTarget(_ benchmark: Benchmark) throws {
        let name = round % 2 == 0 ? "aaaaaaa" : "zzzzzzzzzzzzzzzzz"
        let changes = try deliver(benchmark) { good, _ in try good.setValue(name, forKey: "name") }
        guard changes.sections.isEmpty, changes.objects.count == 1, case let .move(id, from, to) = changes.objects[0],
              id == target, from.section == to.section, from.item != to.item else {
            throw BenchmarkFailure(description: "expected one move within a section, got \(changes.sections) \(changes.objects)")
        }
    }

    /// Moves the target to another category (the next one each time): a move across sections.
    func recategoriseTarget(_ benchmark: Benchmark, cascade: Bool = false) throws {
        let category = categoryIDs[round % categoryIDs.count]
        let changes = try deliver(benchmark, cascade: cascade) { good, update in
            try good.setValue(try update.existingObject(with: category), forKey: "category")
        }
        guard changes.objects.count == 1, case let .move(id, from, to) = changes.objects[0], id == target, from.section != to.section else {
            throw BenchmarkFailure(description: "expected one move across sections, got \(changes.sections) \(changes.objects)")
        }
    }
}

/// A raw store and the key of the good the iterations rename.
final class RawChangeFixture: @unchecked Sendable {
    let store: TemporaryStore
    let db: RawDatabase
    let target: Int64
    let rowCount: Int
    var round = 0

    init(label: String, count: Int) throws {
        let data = makeGoodsData(count: count)
        store = try makeGoodsRawStore(TemporaryStore(fresh: label), data)
        db = try RawDatabase(path: store.path)
        rowCount = count
        // The same good as the Strata side: the middle good of the middle section.
        let rows = try db.goodRows(rawGoodsJoinSQL)
        let sections = try db.sectionCounts()
        let section = sections.count / 2
        let start = sections[..<section].reduce(0) { $0 + $1.count }
        target = rows[start + sections[section].count / 2].pk
    }

    deinit { store.remove() }

    var nextName: String {
        defer { round += 1 }
        return round % 2 == 0 ? "aaaaaaa" : "zzzzzzzzzzzzzzzzz"
    }

    /// UPDATE, then the whole list and its section counts read again; the row found in it.
    func renameAndRequery(_ benchmark: Benchmark) throws {
        let name = nextName
        benchmark.startMeasurement()
        try db.renameGood(target, to: name)
        let (rows, sections) = try db.listAndSections(rawGoodsJoinSQL)
        let index = rows.firstIndex { $0.pk == target }
        benchmark.stopMeasurement()
        guard rows.count == rowCount, !sections.isEmpty, let index, rows[index].name == name else {
            throw BenchmarkFailure(description: "raw re-query did not find the renamed good")
        }
    }

    /// The row's position, UPDATE, its position again: the move's two paths.
    func renameAndLocate(_ benchmark: Benchmark) throws {
        let name = nextName
        benchmark.startMeasurement()
        let from = try db.position(ofGood: target)
        try db.renameGood(target, to: name)
        let to = try db.position(ofGood: target)
        benchmark.stopMeasurement()
        guard from.section == to.section, from.item != to.item else {
            throw BenchmarkFailure(description: "raw positions \(from) → \(to): expected a move within the section")
        }
    }
}

// MARK: Memory

/// glibc's `malloc_trim`: returns freed heap pages to the system (not in Swift's Glibc module).
@_silgen_name("malloc_trim") func glibcMallocTrim(_ pad: Int) -> Int32

/// Resident bytes of this process (`/proc/self/statm`), after returning freed memory to the system.
func residentBytes() -> Int {
    _ = glibcMallocTrim(0)
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
          let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// A tracking controller over N goods: its layout's bytes per row (`layoutBytes`) and the growth
/// of the process's resident memory per row while it is alive (measured around `performFetch`,
/// with freed memory returned first), as custom metrics. Raw: the least a list can hold, the
/// ordered keys as `[Int64]` (8 bytes a row), measured the same way.
func memoryPerRow(_ benchmark: Benchmark, _ fixture: GoodsStore, raw: Bool) throws {
    if raw {
        let db = try RawDatabase(path: fixture.store.path)
        let before = residentBytes()
        let keys = try db.goodRows(rawGoodsJoinSQL).map(\.pk)
        let grown = residentBytes() - before
        benchmark.measurement(.custom("resident bytes per row"), grown / max(keys.count, 1))
        benchmark.measurement(.custom("layout bytes per row"), keys.capacity * 8 / max(keys.count, 1))
        return
    }
    let container = try PersistentContainer(model: goodsBenchmarkModel, url: fixture.store.url)
    defer { container.coordinator.close() }
    let main = container.mainContext
    let recorder = ChangeRecorder()
    let (layout, grown, count): (Int, Int, Int) = try main.performAndWait {
        let before = residentBytes()
        let controller = FetchedResultsController(fetchRequest: goodsRequest(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name")
        try controller.performFetch()
        controller.delegate = recorder
        let grown = residentBytes() - before
        return (controller.layoutBytes, grown, controller.numberOfObjects)
    }
    guard count == fixture.rowCount else { throw BenchmarkFailure(description: "controller holds \(count) rows, expected \(fixture.rowCount)") }
    benchmark.measurement(.custom("resident bytes per row"), grown / count)
    benchmark.measurement(.custom("layout bytes per row"), layout / count)
}

// MARK: Registration

/// 1,000,000 rows: performFetch and the rename, each beside raw SQLite, three iterations each
/// after one warm-up. With the stores built in setup, the five 1M benchmarks took 1 min 41 s in all
/// on 2 cores (`--filter "frc .*1M.*"`).
let millionRows = 1_000_000

func registerFetchedResultsBenchmarks() {
    let small = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds,
                                        warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 10)
    let large = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds,
                                        warmupIterations: 1, maxDuration: .seconds(15), maxIterations: 3)
    // One change: microseconds, ten iterations.
    let change = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                         warmupIterations: 1, maxDuration: .seconds(15), maxIterations: 10)

    // MARK: frc performFetch 100k

    Benchmark("frc performFetch 100k (Strata)", configuration: small) { benchmark, fixture in
        try strataOpenList(benchmark, fixture)
    } setup: {
        try GoodsStore(strata: "frc-fetch-strata", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-fetch-strata").remove()
    }

    Benchmark("frc performFetch 100k (raw SQLite)", configuration: small) { benchmark, fixture in
        try rawOpenList(benchmark, fixture, rawGoodsJoinSQL)
    } setup: {
        try GoodsStore(raw: "frc-fetch-raw", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-fetch-raw").remove()
    }

    Benchmark("frc performFetch 100k (raw SQLite, sections in Swift)", configuration: small) { benchmark, fixture in
        try rawOpenList(benchmark, fixture, rawGoodsJoinSQL, countInSwift: true)
    } setup: {
        try GoodsStore(raw: "frc-fetch-raw-swift", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-fetch-raw-swift").remove()
    }

    Benchmark("frc performFetch 100k (raw SQLite, Strata's SQL)", configuration: small) { benchmark, fixture in
        try rawOpenList(benchmark, fixture, strataGoodsSQL)
    } setup: {
        try GoodsStore(raw: "frc-fetch-raw-same", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-fetch-raw-same").remove()
    }

    // MARK: frc performFetch 1M

    Benchmark("frc performFetch 1M (Strata)", configuration: large) { benchmark, fixture in
        try strataOpenList(benchmark, fixture)
    } setup: {
        try GoodsStore(strata: "frc-fetch-strata-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-fetch-strata-1m").remove()
    }

    Benchmark("frc performFetch 1M (raw SQLite)", configuration: large) { benchmark, fixture in
        try rawOpenList(benchmark, fixture, rawGoodsJoinSQL)
    } setup: {
        try GoodsStore(raw: "frc-fetch-raw-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-fetch-raw-1m").remove()
    }

    Benchmark("frc performFetch 1M (raw SQLite, Strata's SQL)", configuration: large) { benchmark, fixture in
        try rawOpenList(benchmark, fixture, strataGoodsSQL)
    } setup: {
        try GoodsStore(raw: "frc-fetch-raw-same-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-fetch-raw-same-1m").remove()
    }

    // MARK: frc change 100k

    Benchmark("frc change 100k rename (Strata)", configuration: change) { benchmark, fixture in
        try fixture.renameTarget(benchmark)
    } setup: {
        try ChangeFixture(label: "frc-change-strata", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-change-strata").remove()
    }

    Benchmark("frc change 100k recategorise (Strata)", configuration: change) { benchmark, fixture in
        try fixture.recategoriseTarget(benchmark)
    } setup: {
        try ChangeFixture(label: "frc-recategorise-strata", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-recategorise-strata").remove()
    }

    Benchmark("frc change 100k recategorise saveToStore (Strata)", configuration: change) { benchmark, fixture in
        try fixture.recategoriseTarget(benchmark, cascade: true)
    } setup: {
        try ChangeFixture(label: "frc-recategorise-cascade-strata", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-recategorise-cascade-strata").remove()
    }

    Benchmark("frc change 100k rename (raw SQLite, re-query)", configuration: small) { benchmark, fixture in
        try fixture.renameAndRequery(benchmark)
    } setup: {
        try RawChangeFixture(label: "frc-change-raw", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-change-raw").remove()
    }

    Benchmark("frc change 100k rename (raw SQLite, positions)", configuration: change) { benchmark, fixture in
        try fixture.renameAndLocate(benchmark)
    } setup: {
        try RawChangeFixture(label: "frc-change-raw-positions", count: objectCount)
    } teardown: {
        TemporaryStore.named("frc-change-raw-positions").remove()
    }

    // MARK: frc memory 1M

    let memory = Benchmark.Configuration(metrics: [.custom("resident bytes per row"), .custom("layout bytes per row")],
                                         warmupIterations: 0, maxDuration: .seconds(15), maxIterations: 1)
    Benchmark("frc memory 1M (Strata)", configuration: memory) { benchmark, fixture in
        try memoryPerRow(benchmark, fixture, raw: false)
    } setup: {
        try GoodsStore(strata: "frc-memory-strata-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-memory-strata-1m").remove()
    }

    Benchmark("frc memory 1M (raw SQLite, keys array)", configuration: memory) { benchmark, fixture in
        try memoryPerRow(benchmark, fixture, raw: true)
    } setup: {
        try GoodsStore(raw: "frc-memory-raw-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-memory-raw-1m").remove()
    }

    // MARK: frc change 1M

    // No "raw SQLite, re-query" at 1M: it is the UPDATE plus "frc performFetch 1M (raw SQLite)"
    // (about 4 s an iteration), and would take the 1M set past two minutes of setup and runtime.

    Benchmark("frc change 1M rename (Strata)", configuration: change) { benchmark, fixture in
        try fixture.renameTarget(benchmark)
    } setup: {
        try ChangeFixture(label: "frc-change-strata-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-change-strata-1m").remove()
    }

    Benchmark("frc change 1M rename (raw SQLite, positions)", configuration: change) { benchmark, fixture in
        try fixture.renameAndLocate(benchmark)
    } setup: {
        try RawChangeFixture(label: "frc-change-raw-positions-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("frc-change-raw-positions-1m").remove()
    }
}
