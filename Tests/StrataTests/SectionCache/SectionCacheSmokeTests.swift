import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The section cache end to end: written at a cold fetch, served warm, stale after a write to an
/// entity the request reads, still valid after a write to one it does not.
@Suite struct SectionCacheSmokeTests {
    static func request() -> AnyFetchRequest {
        FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
    }

    static func seed(_ container: PersistentContainer) throws {
        let update = container.newUpdateContext()
        try update.performAndWait {
            for (category, goods) in [("Fruit", ["Apple", "Banana", "Cherry"]), ("Vegetable", ["Carrot", "Leek"])] {
                let c = try update.insert("Category")
                try c.setValue(category, forKey: "name")
                for name in goods {
                    let g = try update.insert("Good")
                    try g.setValue(name, forKey: "name")
                    try g.setValue(c, forKey: "category")
                }
            }
            try update.saveToStore()
        }
    }

    /// Opens the store, fetches with the cache, returns (served from cache, rejection, snapshot).
    static func open(_ url: URL, _ model: Model = TestModels.goods()) throws -> (Bool, SectionCacheRejection?, FetchedSnapshot) {
        let container = try PersistentContainer(model: model, url: url)
        defer { container.coordinator.waitForCacheWrites(); container.coordinator.close() }
        let controller = FetchedResultsController(fetchRequest: request(), managedObjectContext: container.mainContext,
                                                  sectionNameKeyPath: "category.name", cacheName: "goods")
        return try container.mainContext.performAndWait {
            try controller.performFetch()
            return (controller.cacheStatus == .served, controller.cacheStatus.rejection, controller.snapshot)
        }
    }

    @Test func writtenColdServedWarmStaleAfterARelevantWrite() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("goods.sqlite")
        do {
            let container = try PersistentContainer(model: TestModels.goods(), url: url)
            try Self.seed(container)
            container.coordinator.close()
        }
        let (coldServed, coldReason, cold) = try Self.open(url)
        #expect(!coldServed && coldReason == .missing)
        #expect(cold.sections.map(\.name) == ["Fruit", "Vegetable"])
        #expect(FileManager.default.fileExists(atPath: url.path + ".caches/goods.stratacache"))

        let (warmServed, warmReason, warm) = try Self.open(url)
        #expect(warmServed && warmReason == nil)
        #expect(warm == cold)

        // A write to a Good makes it stale; the rebuilt cache then serves again.
        do {
            let container = try PersistentContainer(model: TestModels.goods(), url: url)
            let writer = container.writerContext
            try writer.performAndWait {
                let g = try writer.insert("Good")
                try g.setValue("Apricot", forKey: "name")
                try g.setValue(try writer.fetch(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))[0], forKey: "category")
                try writer.save()
            }
            container.coordinator.close()
        }
        let (staleServed, staleReason, rebuilt) = try Self.open(url)
        #expect(!staleServed && staleReason == .entityChanged)
        #expect(rebuilt.sections.map(\.numberOfObjects) == [4, 2])
        let (againServed, _, again) = try Self.open(url)
        #expect(againServed && again == rebuilt)
    }

    @Test func aFileThatIsNotACacheIsRejectedAndRebuilt() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("goods.sqlite")
        do {
            let container = try PersistentContainer(model: TestModels.goods(), url: url)
            try Self.seed(container)
            container.coordinator.close()
        }
        _ = try Self.open(url)
        let file = url.path + ".caches/goods.stratacache"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: file))
        let (served, reason, snapshot) = try Self.open(url)
        #expect(!served && reason == .checksumMismatch)
        #expect(snapshot.numberOfObjects == 5)
        let (servedAgain, _, _) = try Self.open(url)
        #expect(servedAgain)
    }

    @Test func aCommitRefreshesTheCacheAndAMainSaveDoesNot() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("goods.sqlite")
        let container = try PersistentContainer(model: TestModels.goods(), url: url)
        try Self.seed(container)
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: Self.request(), managedObjectContext: main,
                                                  sectionNameKeyPath: "category.name", cacheName: "goods")
        try main.performAndWait { try controller.performFetch() }
        container.coordinator.waitForCacheWrites()
        // Saved into main only: no commit, the cache keeps the committed five.
        let update = container.newUpdateContext()
        try update.performAndWait {
            let g = try update.insert("Good")
            try g.setValue("Apricot", forKey: "name")
            try g.setValue(try update.fetch(FetchRequest(entityName: "Category", sortKeys: [.ascending("name")]))[0], forKey: "category")
            try update.save()
        }
        container.coordinator.waitForCacheWrites()
        let file = try SectionCacheFile.decode(try container.coordinator.sectionCaches!.read(named: "goods"))
        #expect(file.keys.count == 5)
        // The writer's commit refreshes it from the store: six.
        _ = try main.performAndWait { try main.save() }
        _ = try container.writerContext.performAndWait { try container.writerContext.save() }
        container.coordinator.waitForCacheWrites()
        var refreshed = try SectionCacheFile.decode(try container.coordinator.sectionCaches!.read(named: "goods"))
        // The refresh appended a change record naming the new good; a reader places it from the store.
        #expect(refreshed.pendingKeys.count == 1)
        refreshed = try StoreInspector(url: url).placingPendingKeys(refreshed)
        #expect(refreshed.keys.count == 6)
        #expect(refreshed.sections.map(\.count) == [4, 2])
        container.coordinator.close()
        let (served, _, snapshot) = try Self.open(url)
        #expect(served && snapshot.numberOfObjects == 6)
    }
}
