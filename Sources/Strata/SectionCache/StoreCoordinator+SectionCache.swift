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
        if first && !isReadOnly { sectionCaches.removeTemporaryFiles() }
        return sectionCaches
    }

    /// Builds and writes a cache file on the cache queue, after the writes scheduled before it.
    /// A write that fails or is refused (a symlinked folder, say) is logged as a warning: the
    /// next fetch rebuilds the cache. A read-only store's caches are read, never written.
    func scheduleCacheWrite(named name: String, _ build: @escaping @Sendable () -> SectionCacheFile) {
        guard let sectionCaches, !isReadOnly else { return }
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
/// how to cut sections, the stamp's entities and the request; and for an incremental refresh,
/// its SQL and the log of commits since the file was written.
struct CacheRefresher: Sendable {
    let name: String
    let sql: String
    let arguments: [SQLiteValue]
    let sectioned: Bool
    let entities: Set<String>
    let request: CanonicalRequest
    /// `nil` when every refresh re-runs the request (a window, a key path back to the root).
    let incremental: IncrementalRefreshPlan?
    /// Set while a refresh is queued and not started: further commits coalesce into it.
    let pending: Locked<Bool>
    let log = Locked(CacheRefreshLog())
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

    /// What the cache refreshes did since the coordinator opened (see
    /// ``SectionCacheRefreshStatistics``).
    public var cacheRefreshStatistics: SectionCacheRefreshStatistics {
        cacheRefreshTally.withLock { $0 }
    }

    /// Under the lock, right after a commit that took `generation`: every cache's log notes it,
    /// with the keys it wrote of the entities that cache reads (`keys` returns `nil`: unknown, as
    /// for a batch request or a commit of too many keys). Noting under the lock keeps each log
    /// in generation order.
    func noteCommit(generation: Int64, touched: Set<String>, keys: (_ of: Set<String>) -> [String: [Int64]]?) {
        let refreshers = cacheRefreshers.withLock { Array($0.values) }
        guard !refreshers.isEmpty else { return }
        let written = keys(refreshers.reduce(into: Set<String>()) { $0.formUnion($1.entities) })
        for refresher in refreshers {
            let reads = !refresher.entities.isDisjoint(with: touched)
            let relevant = written.map { $0.filter { refresher.entities.contains($0.key) } }
            refresher.log.withLock { $0.note(generation: generation, keys: reads ? relevant : [:]) }
        }
    }

    /// After a commit: every cache that reads a touched entity is brought up to date on the cache
    /// queue, from a committed snapshot (its own read-only connection: rows and metadata in one
    /// read transaction). Commits that arrive before a queued refresh starts share it.
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

    /// On the cache queue: reads the stamp, and the request's rows or only the changed ones, in
    /// one read transaction, and writes the file.
    private func refreshCache(_ refresher: CacheRefresher) {
        guard let sectionCaches, let url, !isClosed else { return }
        do {
            let file: SectionCacheFile? = try refreshConnection.withLock { connection in
                if connection == nil {
                    var configuration = Connection.Configuration()
                    configuration.readOnly = true
                    let reader = try Connection(path: url.path, configuration: configuration)
                    try StringMatching.register(on: reader)
                    connection = reader
                }
                let db = connection!
                KillPoint.hit("cache.rebuild.begin")
                let file = try db.transaction(.deferred) { () throws -> SectionCacheFile? in
                    let metadata = try StoreCoordinator.readMetadata(db)
                    let stamp = SectionCacheStamp(metadata, entities: refresher.entities)
                    var tally = SectionCacheRefreshStatistics()
                    defer { cacheRefreshTally.withLock { $0.add(tally) } }
                    switch try incrementalRefresh(refresher, sectionCaches, on: db, stamp: stamp, tally: &tally) {
                    case .current:
                        return nil
                    case .derived(let file):
                        tally.incremental += 1
                        return file
                    case .impossible:
                        let file = try SectionCacheFile.compute(refresher.sql, refresher.arguments, sectioned: refresher.sectioned,
                                                                on: db, stamp: stamp, request: refresher.request)
                        tally.full += 1
                        tally.fullRowsRead += file.keys.count
                        return file
                    }
                }
                KillPoint.hit("cache.rebuild.fetched")
                return file
            }
            guard let file else { return }
            try sectionCaches.write(file, named: refresher.name)
            refresher.log.withLock { $0.trim(through: file.stamp.generation) }
        } catch {
            SectionCacheStore.logger.warning("section cache refresh failed", metadata: ["cache": "\(refresher.name)", "error": "\(error)"])
        }
    }

    private enum IncrementalOutcome {
        /// The file on disk already describes this snapshot.
        case current
        case derived(SectionCacheFile)
        case impossible
    }

    /// The file on disk brought up to `stamp` from the commits' changed keys, when everything
    /// needed is known (see IncrementalCacheRefresh.swift); inside the caller's read transaction.
    private func incrementalRefresh(_ refresher: CacheRefresher, _ caches: SectionCacheStore, on db: Connection,
                                    stamp: SectionCacheStamp, tally: inout SectionCacheRefreshStatistics) throws -> IncrementalOutcome {
        guard let plan = refresher.incremental, incrementalCacheRefresh,
              let data = try? caches.read(named: refresher.name),
              let header = try? SectionCacheFile.header(of: data),
              header.request == refresher.request,
              header.stamp.storeUUID == stamp.storeUUID, header.stamp.modelHash == stamp.modelHash,
              Set(header.stamp.entities.keys) == refresher.entities,
              let changes = refresher.log.withLock({ $0.changes(after: header.stamp.generation, upTo: stamp.generation) })
        else { return .impossible }
        if header.stamp.generation == stamp.generation {
            return header.stamp == stamp ? .current : .impossible
        }
        // A write to an entity reached through a relationship can move rows nobody wrote.
        for (entity, keys) in changes where entity != plan.root && !keys.isEmpty {
            if plan.relatedEntities.contains(entity) { return .impossible }
        }
        KillPoint.hit("cache.refresh.incremental")
        guard let base = try? SectionCacheFile.decodeBody(data, header),
              let file = try base.applying(changes[plan.root] ?? [], plan, arguments: refresher.arguments,
                                           sectioned: refresher.sectioned, on: db, stamp: stamp, statistics: &tally)
        else { return .impossible }
        return .derived(file)
    }
}
