import Benchmark
import Foundation
import Strata

// The durable section cache on 1,000,000 goods in 100 categories (the `frc …` store and request),
// all in one run beside the cold fetch:
// - `cache performFetch 1M cold (Strata)`: the cache file removed before each iteration, so
//   `performFetch()` runs the query (and schedules the cache write, which is waited for outside
//   the measurement).
// - `cache performFetch 1M warm (Strata)`: a valid cache; `performFetch()` reads, checks and
//   installs it. Each iteration checks it was served from the cache and holds every row.
// - `cache write 1M (Strata)`: `SectionCacheStore.write` of the controller's cache file: encode,
//   compress, write, fsync, rename, fsync the folder. Custom metric: the file's size in bytes per
//   1,000 IDs.

let cacheName = "goods"

/// Opens the store and runs performFetch with the cache name, timed; returns whether the cache
/// was served. Writes scheduled by the fetch finish outside the measurement.
func cachedOpen(_ benchmark: Benchmark, _ fixture: GoodsStore, expectWarm: Bool) throws {
    let container = try PersistentContainer(model: goodsBenchmarkModel, url: fixture.store.url)
    defer { container.coordinator.close() }
    if !expectWarm { try container.coordinator.deleteCache(named: cacheName) }
    let main = container.mainContext
    let (served, count) = try main.performAndWait {
        benchmark.startMeasurement()
        let controller = FetchedResultsController(fetchRequest: goodsRequest(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name", cacheName: cacheName)
        try controller.performFetch()
        benchmark.stopMeasurement()
        return (controller.cacheStatus == .served, controller.numberOfObjects)
    }
    container.coordinator.waitForCacheWrites()
    guard served == expectWarm, count == fixture.rowCount else {
        throw BenchmarkFailure(description: "served from cache: \(served) (expected \(expectWarm)), \(count) rows")
    }
}

/// A store with a valid cache written.
func warmGoodsStore(_ label: String) throws -> GoodsStore {
    let fixture = try GoodsStore(strata: label, count: millionRows)
    let container = try PersistentContainer(model: goodsBenchmarkModel, url: fixture.store.url)
    defer { container.coordinator.close() }
    let main = container.mainContext
    try main.performAndWait {
        let controller = FetchedResultsController(fetchRequest: goodsRequest(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name", cacheName: cacheName)
        try controller.performFetch()
    }
    container.coordinator.waitForCacheWrites()
    return fixture
}

/// Writes the store's cache file again through `SectionCacheStore`, timed, and reports its size.
func cacheWrite(_ benchmark: Benchmark, _ fixture: GoodsStore) throws {
    let caches = SectionCacheStore(storeURL: fixture.store.url)
    let data = try caches.read(named: cacheName)
    let file = try SectionCacheFile.decode(data)
    benchmark.startMeasurement()
    try caches.write(file, named: cacheName)
    benchmark.stopMeasurement()
    let written = try caches.read(named: cacheName)
    guard written == data else { throw BenchmarkFailure(description: "the rewritten cache differs from the original") }
    benchmark.measurement(.custom("cache bytes per 1000 IDs"), written.count * 1000 / max(file.keys.count, 1))
}

func registerSectionCacheBenchmarks() {
    let large = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds,
                                        warmupIterations: 1, maxDuration: .seconds(15), maxIterations: 3)
    Benchmark("cache performFetch 1M cold (Strata)", configuration: large) { benchmark, fixture in
        try cachedOpen(benchmark, fixture, expectWarm: false)
    } setup: {
        try GoodsStore(strata: "cache-cold-1m", count: millionRows)
    } teardown: {
        TemporaryStore.named("cache-cold-1m").remove()
    }

    let warm = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds,
                                       warmupIterations: 1, maxDuration: .seconds(15), maxIterations: 10)
    Benchmark("cache performFetch 1M warm (Strata)", configuration: warm) { benchmark, fixture in
        try cachedOpen(benchmark, fixture, expectWarm: true)
    } setup: {
        try warmGoodsStore("cache-warm-1m")
    } teardown: {
        TemporaryStore.named("cache-warm-1m").remove()
    }

    let write = Benchmark.Configuration(metrics: [.wallClock, .custom("cache bytes per 1000 IDs")], timeUnits: .milliseconds,
                                        warmupIterations: 1, maxDuration: .seconds(15), maxIterations: 10)
    Benchmark("cache write 1M (Strata)", configuration: write) { benchmark, fixture in
        try cacheWrite(benchmark, fixture)
    } setup: {
        try warmGoodsStore("cache-write-1m")
    } teardown: {
        TemporaryStore.named("cache-write-1m").remove()
    }
}
