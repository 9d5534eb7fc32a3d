internal import Foundation
internal import StrataSQLite

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
        flushCacheWork()
    }

    /// Waits for the cache queue's work so far, unless there never was any, or the caller runs
    /// on the cache queue (which would wait for itself).
    func flushCacheWork() {
        guard let token = cacheQueueToken.withLock({ $0 }), !CacheQueueRegistry.isOnQueue(token) else { return }
        cacheQueue.sync {}
    }

    /// Registers the cache queue for the exit flush, once, before the first work is queued on it.
    private func registerCacheQueue() {
        cacheQueueToken.withLock { token in
            if token == nil { token = CacheQueueRegistry.register(cacheQueue) }
        }
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
    /// A write that fails or is refused (a symlinked folder, say) is logged as a warning: the
    /// next fetch rebuilds the cache.
    func scheduleCacheWrite(named name: String, _ build: @escaping @Sendable () -> SectionCacheFile) {
        guard let sectionCaches else { return }
        registerCacheQueue()
        cacheQueue.async {
            do {
                try sectionCaches.write(build(), named: name)
            } catch {
                SectionCacheStore.logger.warning("section cache write failed", metadata: ["cache": "\(name)", "error": "\(error)"])
            }
        }
    }
}

/// What refreshing one controller's cache after a commit needs, all of it Sendable: the query,
/// how to cut sections, the stamp's entities and the request.
struct CacheRefresher: Sendable {
    let name: String
    let sql: String
    let arguments: [SQLiteValue]
    let sectioned: Bool
    let entities: Set<String>
    let request: CanonicalRequest
    /// Set while a refresh is queued and not started: further commits coalesce into it.
    let pending: Locked<Bool>
}

extension StoreCoordinator {
    /// Keeps cache `refresher.name` current after commits, for the controller `owner`.
    func registerCacheRefresher(_ refresher: CacheRefresher, for owner: ObjectIdentifier) {
        guard sectionCaches != nil else { return }
        cacheRefreshers.withLock { $0[owner] = refresher }
    }

    func unregisterCacheRefresher(for owner: ObjectIdentifier) {
        _ = cacheRefreshers.withLock { $0.removeValue(forKey: owner) }
    }

    /// After a commit: every cache that reads a touched entity is rebuilt on the cache queue from
    /// a committed snapshot (its own read-only connection: rows and metadata in one read
    /// transaction). Commits that arrive before a queued refresh starts share it.
    func scheduleCacheRefreshes(touching touched: Set<String>) {
        let due = cacheRefreshers.withLock { $0.values.filter { !$0.entities.isDisjoint(with: touched) } }
        for refresher in due {
            let queued = refresher.pending.withLock { pending -> Bool in
                defer { pending = true }
                return !pending
            }
            guard queued else { continue }
            registerCacheQueue()
            cacheQueue.async { [self] in
                refresher.pending.withLock { $0 = false }
                refreshCache(refresher)
            }
        }
    }

    /// On the cache queue: reads the request and the stamp in one read transaction and writes the file.
    private func refreshCache(_ refresher: CacheRefresher) {
        guard let sectionCaches, let url, !isClosed else { return }
        do {
            let file: SectionCacheFile = try refreshConnection.withLock { connection in
                if connection == nil {
                    var configuration = Connection.Configuration()
                    configuration.readOnly = true
                    let reader = try Connection(path: url.path, configuration: configuration)
                    try StringMatching.register(on: reader)
                    connection = reader
                }
                let db = connection!
                KillPoint.hit("cache.rebuild.begin")
                let file = try db.transaction(.deferred) {
                    let metadata = try StoreCoordinator.readMetadata(db)
                    return try SectionCacheFile.compute(refresher.sql, refresher.arguments, sectioned: refresher.sectioned, on: db,
                                                        stamp: SectionCacheStamp(metadata, entities: refresher.entities),
                                                        request: refresher.request)
                }
                KillPoint.hit("cache.rebuild.fetched")
                return file
            }
            try sectionCaches.write(file, named: refresher.name)
        } catch {
            SectionCacheStore.logger.warning("section cache refresh failed", metadata: ["cache": "\(refresher.name)", "error": "\(error)"])
        }
    }
}
