import Benchmark
import Foundation
import Strata

// Lightweight migration on 1,000,000 goods (the `frc` store): the next model version adds a
// required `Good.sectionName` with a default. Each iteration starts from a fresh copy of the v1
// store (copied outside the measurement).
// - `migration add column 1M (Strata)`: opening a StoreCoordinator with the new model and
//   `migration = .lightweight()`: inference, then one transaction that copies every table into the
//   new schema and rewrites the metadata.
// - `migration add column 1M (raw SQLite)`: `ALTER TABLE "Good" ADD COLUMN … DEFAULT 'Staff'` and a
//   metadata update in one transaction — SQLite's O(1) column addition, the floor.

let goodsBenchmarkModelV2: Model = {
    var entities = goodsBenchmarkModel.entities
    entities[1].attributes.append(Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")))
    do {
        return try Model(version: "goods-2", entities: entities)
    } catch {
        fatalError("goods v2 benchmark model is invalid: \(error)")
    }
}()

/// A v1 store built once, and a scratch copy per iteration.
struct MigrationFixture: Sendable {
    let source: GoodsStore
    let scratch: URL

    init(label: String) throws {
        source = try GoodsStore(strata: label, count: millionRows)
        scratch = source.store.directory.appendingPathComponent("scratch.sqlite")
    }

    /// A fresh copy of the v1 store at `scratch` (WAL checkpointed into the file by closing it).
    func freshCopy() throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch.path + suffix) }
        try FileManager.default.copyItem(at: source.store.url, to: scratch)
        // Flushed before the measured region: otherwise the checkpoint's fsync inside the
        // measurement writes the whole just-copied file back to disk.
        let handle = try FileHandle(forUpdating: scratch)
        try handle.synchronize()
        try handle.close()
    }
}

func registerMigrationBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: [.wallClock], timeUnits: .milliseconds,
                                                warmupIterations: 0, maxDuration: .seconds(20), maxIterations: 3)
    Benchmark("migration add column 1M (Strata)", configuration: configuration) { benchmark, fixture in
        try fixture.freshCopy()
        var options = StoreOptions()
        options.migration = .lightweight()
        benchmark.startMeasurement()
        let coordinator = try StoreCoordinator(model: goodsBenchmarkModelV2, url: fixture.scratch, options: options)
        benchmark.stopMeasurement()
        defer { coordinator.close() }
        guard try coordinator.metadata().modelHash == goodsBenchmarkModelV2.versionHash else {
            throw BenchmarkFailure(description: "the store was not migrated")
        }
    } setup: {
        try MigrationFixture(label: "migration-strata-1m")
    } teardown: {
        TemporaryStore.named("migration-strata-1m").remove()
    }

    Benchmark("migration add column 1M (raw SQLite)", configuration: configuration) { benchmark, fixture in
        try fixture.freshCopy()
        let db = try RawDatabase(path: fixture.scratch.path)
        benchmark.startMeasurement()
        try db.execute("BEGIN IMMEDIATE")
        try db.execute(#"ALTER TABLE "Good" ADD COLUMN "sectionName" TEXT NOT NULL DEFAULT 'Staff'"#)
        try db.execute("UPDATE strata_meta SET generation = generation + 1, model_version = 'goods-2'")
        try db.execute("COMMIT")
        benchmark.stopMeasurement()
    } setup: {
        try MigrationFixture(label: "migration-raw-1m")
    } teardown: {
        TemporaryStore.named("migration-raw-1m").remove()
    }
}
