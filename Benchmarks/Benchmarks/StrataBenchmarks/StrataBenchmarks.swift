import Benchmark
import Strata

// Each workload is measured twice in the same run: through Strata and through the raw SQLite C API
// doing the same work. Compare the two within one run (Strata / raw); absolute times depend on the machine.
//
// Every iteration opens its database outside the measured region (benchmark.startMeasurement() /
// stopMeasurement()), so only the insert+save or the fetch itself is measured.

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 10
    )

    // MARK: insert 100k

    Benchmark("insert 100k (Strata)") { benchmark, rows in
        let store = try TemporaryStore()
        defer { store.remove() }
        let coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        benchmark.startMeasurement()
        try strataInsert(rows, into: context)
        benchmark.stopMeasurement()
    } setup: {
        makeRows()
    }

    Benchmark("insert 100k (raw SQLite)") { benchmark, rows in
        let store = try TemporaryStore()
        defer { store.remove() }
        let db = try RawDatabase(path: store.path)
        try db.createItemSchema()
        benchmark.startMeasurement()
        try db.insert(rows)
        benchmark.stopMeasurement()
    } setup: {
        makeRows()
    }

    // MARK: insert 100k through the three-tier stack

    // Inserted in an update context and cascaded with saveToStore(): update → main → writer →
    // SQLite. Compare with "insert 100k (raw SQLite)" above (issue 4 goal: ≤ 1.5× raw).
    Benchmark("insert 100k cascade update→main→writer (Strata)") { benchmark, rows in
        let store = try TemporaryStore()
        defer { store.remove() }
        let container = try PersistentContainer(model: benchmarkModel, url: store.url)
        defer { container.coordinator.close() }
        let update = container.newUpdateContext()
        benchmark.startMeasurement()
        try strataInsert(rows, into: update, cascade: true)
        benchmark.stopMeasurement()
    } setup: {
        makeRows()
    }

    // MARK: insert 100k, the two phases apart

    // Where the insert's time goes: creating the objects and setting their values, then the
    // save (validation, the one transaction, accepting the changes).
    Benchmark("insert 100k phase 1: insert and set values (Strata)") { benchmark, rows in
        let store = try TemporaryStore()
        defer { store.remove() }
        let coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        benchmark.startMeasurement()
        try fillContext(rows, context)
        benchmark.stopMeasurement()
    } setup: {
        makeRows()
    }

    Benchmark("insert 100k phase 2: save (Strata)") { benchmark, rows in
        let store = try TemporaryStore()
        defer { store.remove() }
        let coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try fillContext(rows, context)
        benchmark.startMeasurement()
        _ = try context.performAndWait { try context.save() }
        benchmark.stopMeasurement()
    } setup: {
        makeRows()
    }

    // MARK: fetch 100k sorted

    Benchmark("fetch 100k sorted (Strata)") { benchmark, store in
        let coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            benchmark.startMeasurement()
            let items = try context.fetch(sortedRequest)
            benchmark.stopMeasurement()
            guard items.count == objectCount, try items[0].value(forKey: "name") is String else {
                throw BenchmarkFailure(description: "Strata fetched \(items.count) items, expected \(objectCount)")
            }
        }
    } setup: {
        try makeStrataStore(TemporaryStore(fresh: "fetch-strata"), rows: makeRows())
    } teardown: {
        TemporaryStore.named("fetch-strata").remove()
    }

    Benchmark("fetch 100k sorted (raw SQLite)") { benchmark, store in
        let db = try RawDatabase(path: store.path)
        benchmark.startMeasurement()
        let rows = try db.fetchSorted()
        benchmark.stopMeasurement()
        guard rows.count == objectCount else {
            throw BenchmarkFailure(description: "raw SQLite fetched \(rows.count) rows, expected \(objectCount)")
        }
    } setup: {
        try makeRawStore(TemporaryStore(fresh: "fetch-raw"), rows: makeRows())
    } teardown: {
        TemporaryStore.named("fetch-raw").remove()
    }

    // MARK: predicate 100k (PredicateBenchmarks.swift)

    registerPredicateBenchmarks()
    registerFetchedResultsBenchmarks()
    registerSectionCacheBenchmarks()
    registerMigrationBenchmarks()
}
