import Foundation
@_spi(Testing) import Strata
import StrataTestSupport

/// One harness process: a three-tier stack on the store, a tracking results controller with a
/// cache name on main, and the mode's work.
final class Harness {
    /// The cache name and the request the crash suite checks (the suite builds the same request:
    /// the cache is served only to an identical canonical request).
    static let cacheName = "goods"
    static func request() -> AnyFetchRequest {
        FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
    }
    /// A second cache whose request reads Good only: a commit that writes only goods refreshes it
    /// incrementally (the `cache.refresh.incremental` kill point), where `goods` may need the full
    /// request (it reads Category through a relationship).
    static let byNameCacheName = "goods-by-name"
    static func byNameRequest() -> AnyFetchRequest {
        FetchRequest(entityName: "Good", sortKeys: [.descending("number"), .ascending("name")])
    }

    /// Counts the controller's reports (setting it as the delegate makes the controller track, so
    /// the `main.frc.updated` kill point is reached when main shows a save).
    final class Tracker: FetchedResultsControllerDelegate {
        var reports = 0
        func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) { reports += 1 }
    }

    struct HarnessError: Error, CustomStringConvertible {
        var description: String
    }

    let options: HarnessOptions
    let container: PersistentContainer
    let controller: FetchedResultsController<ManagedObject>
    let byName: FetchedResultsController<ManagedObject>
    let tracker = Tracker()
    var rng: SplitMix64

    var main: ManagedObjectContext { container.mainContext }
    var writer: ManagedObjectContext { container.writerContext }

    init(_ options: HarnessOptions) throws {
        self.options = options
        var storeOptions = StoreOptions()
        storeOptions.journalMode = options.journal == .delete ? .delete : .wal
        storeOptions.synchronous = options.synchronous == .full ? .full : .normal
        // Odd seeds compact a cache's change records at the second commit (the
        // `cache.refresh.incremental` kill point); even seeds append records as an app does.
        if options.seed % 2 == 1 { storeOptions.cacheChangeRecordLimit = 1 }
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: URL(fileURLWithPath: options.store),
                                               options: storeOptions)
        container = PersistentContainer(coordinator: coordinator)
        controller = FetchedResultsController(fetchRequest: Harness.request(), managedObjectContext: container.mainContext,
                                              sectionNameKeyPath: "category.name", cacheName: Harness.cacheName)
        byName = FetchedResultsController(fetchRequest: Harness.byNameRequest(), managedObjectContext: container.mainContext,
                                          sectionNameKeyPath: "number", cacheName: Harness.byNameCacheName)
        rng = SplitMix64(seed: options.seed)
    }

    /// Writes one line to stdout at once (no buffering: a SIGKILL right after loses nothing written).
    func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func run() throws {
        let (served, rows) = try main.performAndWait { () throws -> (Bool, Int) in
            try controller.performFetch()
            try byName.performFetch()
            controller.delegate = tracker
            return (controller.cacheStatus == .served, controller.numberOfObjects)
        }
        emit("open \(try container.coordinator.metadata().generation) served=\(served ? 1 : 0) rows=\(rows)")
        switch options.mode {
        case .run:
            for commit in 0..<options.commits {
                try self.commit(commit)
                if (commit + 1) % 5 == 0 { try refetchWithCache() }
            }
            container.coordinator.waitForCacheWrites()
            emit("done \(options.commits)")
        case .recover:
            container.coordinator.waitForCacheWrites()
            emit("recovered rows=\(rows)")
        case .seedScenario:
            try seedScenario()
        case .tornCommit, .migrate, .migrateMapping, .exitWithoutClose, .flips, .addChecksums:
            break                   // handled before the stack is opened (main.swift)
        }
        container.coordinator.close()
    }

    // MARK: The workload

    /// One acknowledged commit: an update context inserts the marker `ack-<seed>-<commit>` and
    /// does some seeded random work; update, main and writer save in turn; the ack is printed only
    /// after the writer's COMMIT returned.
    func commit(_ commit: Int) throws {
        let seed = options.seed
        let marker = "ack-\(seed)-\(commit)"
        let update = container.newUpdateContext()
        try update.performAndWait {
            var categories = try update.fetch(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))
            if categories.isEmpty || rng.chance(0.15) {
                let category = try update.insert("Category")
                try category.setValue("cat-\(seed)-\(commit)", forKey: "name")
                categories.append(category)
            }
            try insertGood(marker, number: commit, category: rng.pick(categories), in: update)
            for index in 0..<rng.int(0...3) {
                try insertGood("g-\(seed)-\(commit)-\(index)", number: rng.int(0...999), category: rng.pick(categories), in: update)
            }
            // STRATA_HARNESS_OWN_GOODS=1 (several harnesses at once on one store): only this
            // seed's goods are edited, so that no save meets another process's edit as a conflict.
            let prefix = ProcessInfo.processInfo.environment["STRATA_HARNESS_OWN_GOODS"] == "1" ? "g-\(seed)-" : "g-"
            let others = try update.fetchObjectIDs(FetchRequest(entityName: "Good", predicate: try Condition("name BEGINSWITH %@", prefix),
                                                                sortKeys: [.ascending("name")]))
            for (index, id) in rng.sample(others, rng.int(0...min(3, others.count))).enumerated() {
                let good = try update.object(with: id)
                switch rng.int(0...2) {
                case 0: try good.setValue("g-\(seed)-\(commit)-r\(index)", forKey: "name")
                case 1: try good.setValue(rng.pick(categories), forKey: "category")
                default: try update.delete(good)
                }
            }
            try update.save()
        }
        try main.performAndWait { _ = try main.save() }
        guard let result = try writer.performAndWait({ try writer.save() }) else {
            throw HarnessError(description: "commit \(commit): the writer's save reached no store")
        }
        let counts = main.performAndWait { controller.snapshot.sections.map { String($0.numberOfObjects) } }
        emit("ack \(result.generation) \(marker) \(counts.joined(separator: ","))")
    }

    func insertGood(_ name: String, number: Int, category: ManagedObject, in context: ManagedObjectContext) throws {
        let good = try context.insert("Good")
        try good.setValue(name, forKey: "name")
        try good.setValue(Int64(number), forKey: "number")
        try good.setValue(category, forKey: "category")
    }

    /// A new controller with the same cache name: the cache is stale after the commits, so it
    /// rebuilds and schedules a cache write (cache kill points are reached mid-run).
    func refetchWithCache() throws {
        let fresh = FetchedResultsController(fetchRequest: Harness.request(), managedObjectContext: main,
                                             sectionNameKeyPath: "category.name", cacheName: Harness.cacheName)
        try main.performAndWait { try fresh.performFetch() }
    }

    // MARK: The seed scenario

    /// Insert through update, save update, save main (the controller shows one more row), then
    /// the writer's save: the suite arms `writer.save.begin`, so the process ends there.
    func seedScenario() throws {
        let update = container.newUpdateContext()
        try update.performAndWait {
            let categories = try update.fetch(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))
            let category: ManagedObject
            if let first = categories.first {
                category = first
            } else {
                category = try update.insert("Category")
                try category.setValue("cat-seed-\(options.seed)", forKey: "name")
            }
            try insertGood("seed-\(options.seed)", number: 0, category: category, in: update)
            try update.save()
        }
        try main.performAndWait { _ = try main.save() }
        let rows = main.performAndWait { controller.numberOfObjects }
        emit("main-rows \(rows)")
        guard let result = try writer.performAndWait({ try writer.save() }) else {
            throw HarnessError(description: "seed scenario: the writer's save reached no store")
        }
        emit("ack \(result.generation) seed-\(options.seed)")
    }
}
