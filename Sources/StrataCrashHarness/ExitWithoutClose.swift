import Foundation
import Strata
import StrataTestSupport

/// `--mode exit-without-close`: a short app session that never configures swift-log and never
/// closes its store (main.swift runs it before its logging bootstrap, and returns from main
/// after it).
///
/// It opens the store (created when missing) and, when it holds no goods, saves some (a commit);
/// then fetches through a results controller with the cache name ``Harness/cacheName`` and
/// prints `fetch 1 <cache status>`. With `--commits N` (N ≥ 1) the session goes on: it waits for
/// the cache write, fetches through a second controller (`fetch 2 <status>`), commits N new goods
/// (`commit <generation>`) and fetches again (`fetch 3 <status>`).
///
/// Then it returns with the cache write of the last fetch (and, after commits, a refresh) still
/// queued: no `close()`, no `waitForCacheWrites()`. The container is kept alive to the end, as an
/// app's is, so that only the coordinator's exit hook can write that cache before the process
/// ends.
func exitWithoutClose(_ options: HarnessOptions) throws {
    var storeOptions = StoreOptions()
    storeOptions.journalMode = options.journal == .delete ? .delete : .wal
    storeOptions.synchronous = options.synchronous == .full ? .full : .normal
    let coordinator = try StoreCoordinator(model: TestModels.goods(), url: URL(fileURLWithPath: options.store), options: storeOptions)
    let container = PersistentContainer(coordinator: coordinator)
    _ = Unmanaged.passRetained(container)           // never released: an app's container lives to the exit
    let main = container.mainContext

    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
    func fetch(_ label: Int) throws {
        let controller = FetchedResultsController(fetchRequest: Harness.request(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name", cacheName: Harness.cacheName)
        let (status, rows) = try main.performAndWait { () throws -> (SectionCacheStatus, Int) in
            try controller.performFetch()
            return (controller.cacheStatus, controller.numberOfObjects)
        }
        say("fetch \(label) \(status) rows=\(rows)")
    }
    func addGoods(_ names: [String], category categoryName: String) throws -> Int64? {
        let update = container.newUpdateContext()
        return try update.performAndWait {
            let categories = try update.fetch(FetchRequest(entityName: "Category", predicate: try Condition("name == %@", categoryName),
                                                           sortKeys: [.ascending("name")]))
            let category = try categories.first ?? {
                let category = try update.insert("Category")
                try category.setValue(categoryName, forKey: "name")
                return category
            }()
            for name in names {
                let good = try update.insert("Good")
                try good.setValue(name, forKey: "name")
                try good.setValue(category, forKey: "category")
            }
            return try update.saveToStore()?.generation
        }
    }

    let goods = try main.performAndWait { try main.count(for: FetchRequest(entityName: "Good")) }
    if goods == 0 {
        _ = try addGoods(["Apple", "Banana", "Cherry"], category: "Fruit")
        _ = try addGoods(["Carrot", "Leek"], category: "Vegetable")
    }
    try fetch(1)
    guard options.commits > 0 else { return }
    container.coordinator.waitForCacheWrites()
    try fetch(2)
    for commit in 0..<options.commits {
        let generation = try addGoods(["Fig \(options.seed)-\(commit)"], category: "Fruit")
        say("commit \(generation.map(String.init) ?? "none")")
    }
    try fetch(3)
}
