import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A cache write scheduled by `performFetch()` is not lost when the app does not wait for it:
/// `close()` and the coordinator's release wait for it, and waiting from the cache queue itself
/// (a release, a flush) never waits for itself. (A normal process exit: CacheExitFlushTests,
/// with real processes.)
@Suite struct FetchedResultsCacheFlushTests {
    static let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("name")])

    /// Saves three goods through a root context and fetches through a controller with cache
    /// `goods`, without waiting for the write it schedules.
    static func fetchWithoutWaiting(_ coordinator: StoreCoordinator) throws {
        let context = coordinator.newContext()
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "goods")
        try context.performAndWait {
            for name in ["Apple", "Pear", "Plum"] {
                let good = try context.insert("Good")
                try good.setValue(name, forKey: "name")
            }
            try context.save()
            try controller.performFetch()
            #expect(controller.cacheStatus == .rebuilt(.missing))
        }
    }

    /// What a controller with cache `goods` finds in the store at `url`.
    static func statusOnReopen(_ url: URL) throws -> SectionCacheStatus {
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "goods")
        return try context.performAndWait {
            try controller.performFetch()
            return controller.cacheStatus
        }
    }

    static func cacheFile(_ url: URL) -> String { url.path + ".caches/goods.stratacache" }

    @Test func releasingTheCoordinatorWritesTheScheduledCache() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("goods.sqlite")
        weak var released: StoreCoordinator?
        do {
            let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
            released = coordinator
            try Self.fetchWithoutWaiting(coordinator)
        }
        #expect(released == nil, "nothing else holds the coordinator")
        #expect(FileManager.default.fileExists(atPath: Self.cacheFile(url)), "the release waited for the write")
        #expect(try Self.statusOnReopen(url) == .served)
    }

    @Test func closeWritesTheScheduledCache() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("goods.sqlite")
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
        try Self.fetchWithoutWaiting(coordinator)
        coordinator.close()
        #expect(FileManager.default.fileExists(atPath: Self.cacheFile(url)))
        #expect(try Self.statusOnReopen(url) == .served)
    }

    /// Waiting from the cache queue returns at once instead of waiting for itself (which
    /// libdispatch traps as a deadlock); so does the exit hook.
    @Test func flushingFromTheCacheQueueDoesNotWaitForItself() throws {
        let directory = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: directory.file("goods.sqlite"), options: .notFollowing)
        defer { coordinator.close() }
        try Self.fetchWithoutWaiting(coordinator)
        coordinator.caches.queue.sync {
            coordinator.waitForCacheWrites()
            CacheQueueRegistry.flushAtExit()
        }
        coordinator.waitForCacheWrites()
        #expect(FileManager.default.fileExists(atPath: Self.cacheFile(directory.file("goods.sqlite"))))
    }

    /// Holds the only reference to a coordinator, so that a test can drop it on another queue.
    // @unchecked because: `coordinator` is set once on the test's thread and cleared inside one
    // `cacheQueue.sync` block, which the test's thread waits for; never touched concurrently.
    final class Holder: @unchecked Sendable {
        var coordinator: StoreCoordinator?
    }

    /// The last reference released on the cache queue (as when a refresh held it): the release
    /// does not wait for the queue it runs on, the writes queued behind still run, and the queue
    /// stays registered for the exit flush until they have.
    @Test func aReleaseOnTheCacheQueueDoesNotWaitForItself() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("goods.sqlite")
        let holder = Holder()
        holder.coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
        let coordinator = try #require(holder.coordinator)
        try Self.fetchWithoutWaiting(coordinator)
        let queue = coordinator.caches.queue
        let token = try #require(coordinator.caches.queueToken.withLock { $0 })
        #expect(CacheQueueRegistry.isRegistered(token))
        weak let released = holder.coordinator
        _ = consume coordinator
        queue.sync { holder.coordinator = nil }          // deinit runs here, on the cache queue
        #expect(released == nil)
        queue.sync {}
        #expect(!CacheQueueRegistry.isRegistered(token), "unregistered once the work behind the release ran")
        #expect(FileManager.default.fileExists(atPath: Self.cacheFile(url)))
        #expect(try Self.statusOnReopen(url) == .served)
    }
}
