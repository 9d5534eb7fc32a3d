internal import Foundation

extension StoreCoordinator {
    /// Removes the cache `name` of this store (Core Data's `deleteCache(withName:)`); returns
    /// whether there was one. Controllers that use it rebuild it at their next fetch.
    @discardableResult
    public func deleteCache(named name: String) throws -> Bool {
        guard let sectionCaches else { return false }
        return try sectionCaches.deleteCache(named: name)
    }

    /// Removes every section cache of this store; returns the names removed.
    @discardableResult
    public func deleteAllCaches() throws -> [String] {
        try sectionCaches?.deleteAllCaches() ?? []
    }

    /// Waits until every cache write scheduled so far has finished. Tests use it; an app need
    /// not: ``close()``, the coordinator's release and a normal process exit (`exit`, or returning
    /// from `main`) wait for them too. Called from the cache queue itself, it returns at once.
    public func waitForCacheWrites() {
        caches.flush()
    }

    /// What the cache refreshes did since the coordinator opened (see
    /// ``SectionCacheRefreshStatistics``).
    public var cacheRefreshStatistics: SectionCacheRefreshStatistics {
        caches.tally.withLock { $0 }
    }
}
