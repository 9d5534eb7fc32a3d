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

    /// Waits until every cache write scheduled so far has finished (tests, and apps about to exit).
    public func waitForCacheWrites() {
        cacheQueue.sync {}
    }

    /// The cache store, with stray temporary files removed the first time it is used.
    func preparedSectionCaches() -> SectionCacheStore? {
        guard let sectionCaches else { return nil }
        let first = cachesPrepared.withLock { prepared -> Bool in
            defer { prepared = true }
            return !prepared
        }
        if first { sectionCaches.removeTemporaryFiles() }
        return sectionCaches
    }

    /// Builds and writes a cache file on the cache queue, after the writes scheduled before it.
    func scheduleCacheWrite(named name: String, _ build: @escaping @Sendable () -> SectionCacheFile) {
        guard let sectionCaches else { return }
        cacheQueue.async {
            try? sectionCaches.write(build(), named: name)
        }
    }
}
