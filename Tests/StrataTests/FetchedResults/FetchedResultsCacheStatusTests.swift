import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The deprecated cache accessors, reached through a protocol so that this file compiles without
/// deprecation warnings (CI builds with -warnings-as-errors).
protocol LegacyCacheAccessors {
    var servedFromCache: Bool { get }
    var lastCacheRejection: SectionCacheRejection? { get }
}

extension FetchedResultsController<ManagedObject>: LegacyCacheAccessors {}

/// ``FetchedResultsController/cacheStatus``: every status a fetch can end in, the deprecated
/// accessors derived from it, and cache names that can't name a file, refused before anything is
/// fetched.
@Suite struct FetchedResultsCacheStatusTests {
    static let cacheName = "goods"
    static let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])

    /// A store file with five goods in two categories.
    static func seededContainer(_ directory: TemporaryDirectory) throws -> PersistentContainer {
        let container = try PersistentContainer(model: TestModels.goods(), url: directory.file("goods.sqlite"))
        try addGoods(container, ["Apple", "Banana", "Cherry"], category: "Fruit")
        try addGoods(container, ["Carrot", "Leek"], category: "Vegetable")
        return container
    }

    /// Commits `names` in a new category `category` through an update context.
    static func addGoods(_ container: PersistentContainer, _ names: [String], category categoryName: String) throws {
        let update = container.newUpdateContext()
        try update.performAndWait {
            let category = try update.insert("Category")
            try category.setValue(categoryName, forKey: "name")
            for name in names {
                let good = try update.insert("Good")
                try good.setValue(name, forKey: "name")
                try good.setValue(category, forKey: "category")
            }
            try update.saveToStore()
        }
    }

    /// What a new controller on `context` reports after `performFetch()`: its status, what the
    /// deprecated accessors say, its rows. The controller is released on return (so it
    /// registers no cache refresh for later commits); its cache write is waited for.
    static func fetch(_ context: ManagedObjectContext, _ container: PersistentContainer, cacheName: String? = cacheName,
                      sectionKeyPath: String? = "category.name")
        throws -> (status: SectionCacheStatus, served: Bool, rejection: SectionCacheRejection?, rows: Int) {
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                  sectionNameKeyPath: sectionKeyPath, cacheName: cacheName)
        let result = try context.performAndWait {
            try controller.performFetch()
            let legacy: any LegacyCacheAccessors = controller
            return (controller.cacheStatus, legacy.servedFromCache, legacy.lastCacheRejection, controller.numberOfObjects)
        }
        container.coordinator.waitForCacheWrites()
        return result
    }

    static func cacheURL(_ container: PersistentContainer) throws -> URL {
        try #require(container.coordinator.sectionCaches).url(forCacheNamed: cacheName)
    }

    @Test func withoutACacheNameTheStatusIsNone() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        let controller = FetchedResultsController(fetchRequest: Self.request, managedObjectContext: container.mainContext,
                                                  sectionNameKeyPath: "category.name", cacheName: Self.cacheName)
        #expect(container.mainContext.performAndWait { controller.cacheStatus } == .none, "before the first fetch")
        let result = try Self.fetch(container.mainContext, container, cacheName: nil)
        #expect(result.status == .none && !result.served && result.rejection == nil && result.rows == 5)
        #expect(SectionCacheStatus.none.description == "none")
    }

    @Test func aFirstLaunchRebuildsAMissingCacheThenItIsServed() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        let cold = try Self.fetch(container.mainContext, container)
        #expect(cold.status == .rebuilt(.missing))
        #expect(cold.status.rejection == .missing && cold.status.description == "rebuilt (missing)")
        #expect(!cold.served && cold.rejection == .missing && cold.rows == 5)
        #expect(FileManager.default.fileExists(atPath: try Self.cacheURL(container).path))

        let warm = try Self.fetch(container.mainContext, container)
        #expect(warm.status == .served && warm.status.rejection == nil && warm.status.description == "served")
        #expect(warm.served && warm.rejection == nil && warm.rows == 5)
    }

    @Test func aCommitMakesTheCacheStaleAndItIsRebuilt() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        _ = try Self.fetch(container.mainContext, container)
        #expect(try Self.fetch(container.mainContext, container).status == .served)
        // No controller is alive to refresh the cache after this commit: the file is stale.
        try Self.addGoods(container, ["Rye"], category: "Grain")
        let stale = try Self.fetch(container.mainContext, container)
        #expect(stale.status == .rebuilt(.entityChanged) && stale.rejection == .entityChanged && !stale.served)
        #expect(stale.rows == 6)
        #expect(try Self.fetch(container.mainContext, container).status == .served)
    }

    @Test func aCorruptCacheIsRebuiltWithItsReason() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        _ = try Self.fetch(container.mainContext, container)
        try Data(repeating: 0x41, count: 64).write(to: try Self.cacheURL(container))
        let corrupt = try Self.fetch(container.mainContext, container)
        #expect(corrupt.status == .rebuilt(.badMagic) && corrupt.status.rejection?.isCorrupt == true)
        #expect(try Self.fetch(container.mainContext, container).status == .served)
    }

    @Test func pendingChangesAlongTheChainSkipTheCache() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        let main = container.mainContext
        _ = try Self.fetch(main, container)
        let written = try Data(contentsOf: try Self.cacheURL(container))

        // A pending insert in main: main's own controller, and one on a child of main, skip it.
        try main.performAndWait {
            let good = try main.insert("Good")
            try good.setValue("Damson", forKey: "name")
        }
        let onMain = try Self.fetch(main, container)
        #expect(onMain.status == .skipped(.unsavedChanges) && onMain.status.description == "skipped (unsaved-changes)")
        #expect(!onMain.served && onMain.rejection == nil)
        #expect(onMain.rows == 6, "the fetch shows the pending good")
        let child = main.newChildContext(name: "child")
        let onChild = try Self.fetch(child, container)
        #expect(onChild.status == .skipped(.unsavedChanges) && onChild.rows == 6)
        #expect(try Data(contentsOf: try Self.cacheURL(container)) == written, "a skipped cache is not written")

        // Pending changes only to an entity the request does not read leave the cache in use.
        main.performAndWait { main.rollback() }
        let byName = FetchRequest(entityName: "Good", sortKeys: [.ascending("name")])
        let byNameController = { FetchedResultsController(fetchRequest: byName, managedObjectContext: main, cacheName: "by-name") }
        try main.performAndWait { try byNameController().performFetch() }
        container.coordinator.waitForCacheWrites()
        try main.performAndWait {
            let category = try main.insert("Category")
            try category.setValue("Nuts", forKey: "name")
            let controller = byNameController()
            try controller.performFetch()
            #expect(controller.cacheStatus == .served)
        }
    }

    @Test func anInMemoryStoreSkipsTheCache() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        try Self.addGoods(container, ["Apple"], category: "Fruit")
        let result = try Self.fetch(container.mainContext, container)
        #expect(result.status == .skipped(.inMemoryStore) && result.status.description == "skipped (in-memory-store)")
        #expect(!result.served && result.rejection == nil && result.rows == 1)
    }

    // MARK: Invalid names

    /// Every rule of a cache name, and the reason the error gives for it.
    static let invalidNames: [(name: String, reason: String)] = [
        ("", "empty"),
        (String(repeating: "x", count: 201), "longer than 200 UTF-8 bytes"),
        (String(repeating: "é", count: 101), "longer than 200 UTF-8 bytes"),
        ("a\u{0}b", "contains NUL"),
        (String(repeating: "/", count: 77), "too long once encoded for a file name"),
        (String(repeating: "日", count: 30), "too long once encoded for a file name"),
    ]

    @Test func anInvalidCacheNameIsThrownBeforeAnythingIsFetched() throws {
        let directory = TemporaryDirectory()
        let container = try Self.seededContainer(directory)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let caches = try #require(container.coordinator.sectionCaches)
        for (name, rule) in Self.invalidNames {
            let controller = FetchedResultsController(fetchRequest: Self.request, managedObjectContext: main,
                                                      sectionNameKeyPath: "category.name", cacheName: name)
            container.coordinator.resetStatistics()
            let error = main.performAndWait { () -> (any Error)? in
                do {
                    try controller.performFetch()
                    return nil
                } catch {
                    return error
                }
            }
            guard case .invalidCacheName(let thrownName, let reason)? = error as? FetchedResultsError else {
                Issue.record("\(name.prefix(8).debugDescription)…: expected invalidCacheName, got \(error.map { "\($0)" } ?? "no error")")
                continue
            }
            #expect(thrownName == name)
            #expect(reason.hasPrefix(rule), "\(reason)")
            let description = "\(error!)"
            #expect(description.hasPrefix("invalid cache name \(name.debugDescription) (\(rule)"), "\(description)")
            #expect(description.contains("pass nil for no cache"))
            #expect(container.coordinator.statistics.totalExecuted == 0, "nothing was fetched")
            main.performAndWait {
                #expect(controller.sections == nil, "the controller stays unfetched")
                #expect(controller.numberOfObjects == 0 && controller.cacheStatus == .none)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: caches.directory.path), "no cache folder made")
        // The limits themselves are names: 200 ASCII bytes, 76 bytes that encode as %XX.
        for name in [String(repeating: "x", count: 200), String(repeating: "/", count: 76)] {
            #expect(try Self.fetch(main, container, cacheName: name).status == .rebuilt(.missing))
        }
    }

    @Test func anInvalidCacheNameIsThrownForAnInMemoryStoreToo() throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.goods())
        let controller = FetchedResultsController(fetchRequest: Self.request, managedObjectContext: container.mainContext,
                                                  sectionNameKeyPath: "category.name", cacheName: "")
        container.mainContext.performAndWait {
            #expect(throws: FetchedResultsError.invalidCacheName(name: "", reason: "empty")) { try controller.performFetch() }
            #expect(controller.sections == nil)
        }
    }
}
