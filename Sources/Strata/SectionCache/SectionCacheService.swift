internal import Foundation
internal import StrataSQLite

/// The section caches of one store, and everything that keeps them: the folder
/// (``SectionCacheStore``), the queue cache files are written on, the controllers' refreshers and
/// what their refreshes did. Owned by the coordinator (one per store file; `store` is `nil` for an
/// in-memory store), with its state and locks beside it.
///
/// After every commit (see ``CommitEffects``) the coordinator hands it the generation and the
/// keys written (``noteCommit(generation:touched:keys:)``, under the writer's lock, in generation
/// order) and then the entities touched (``scheduleRefreshes(touching:)``, after the lock).
final class SectionCacheService: Sendable {
    /// The cache folder; `nil` for an in-memory store.
    let store: SectionCacheStore?
    /// Cache files are written here, in order, off the callers' queues.
    let queue = DispatchQueue(label: "strata.section-cache", qos: .utility)
    /// ``StoreOptions/incrementalCacheRefresh``.
    let incremental: Bool
    /// The store file's path (refreshes open their own read-only connection on it).
    private let path: String?
    /// A read-only store: caches are read, never written.
    private let readOnly: Bool
    /// Whether temporary files a crash left in the cache folder were removed (once).
    private let prepared = Locked(false)
    /// Caches to refresh after commits, by controller.
    private let refreshers = Locked<[ObjectIdentifier: CacheRefresher]>([:])
    /// The read-only connection cache refreshes read through (used on `queue` only).
    private let refreshConnection = Locked<Connection?>(nil)
    /// `queue`'s token in ``CacheQueueRegistry`` (flushed at process exit), set when the first
    /// cache work is queued; `nil` while none ever was.
    let queueToken = Locked<Int?>(nil)
    /// What cache refreshes did (``StoreCoordinator/cacheRefreshStatistics``).
    let tally = Locked(SectionCacheRefreshStatistics())
    /// Set by ``close()``: a refresh still queued reads nothing.
    private let closed = Locked(false)

    /// Change records a file may hold before the next refresh compacts them into its body.
    let changeRecordLimit: Int

    init(storeURL: URL?, directory: URL?, incremental: Bool, readOnly: Bool, changeRecordLimit: Int = 64) {
        store = storeURL.map { SectionCacheStore(storeURL: $0, directory: directory) }
        self.changeRecordLimit = changeRecordLimit
        path = storeURL?.path
        self.incremental = incremental
        self.readOnly = readOnly
    }

    deinit {
        // Cache writes queued so far are not lost with the coordinator: wait for them. When the
        // last reference goes on the cache queue itself (a refresh held it), waiting would wait
        // for itself; the work queued behind runs anyway, and the queue stays registered for the
        // exit flush until it has.
        guard let token = queueToken.withLock({ $0 }) else { return }
        if CacheQueueRegistry.isOnQueue(token) {
            queue.async { CacheQueueRegistry.unregister(token) }
        } else {
            queue.sync {}
            CacheQueueRegistry.unregister(token)
        }
    }

    /// Waits for the queued work, then closes the refreshes' connection.
    func close() {
        flush()
        closed.withLock { $0 = true }
        refreshConnection.withLock { $0?.close(); $0 = nil }
    }

    /// Waits for the cache queue's work so far, unless there never was any, or the caller runs
    /// on the cache queue (which would wait for itself).
    func flush() {
        guard let token = queueToken.withLock({ $0 }), !CacheQueueRegistry.isOnQueue(token) else { return }
        queue.sync {}
    }

    /// Registers the cache queue for the exit flush, once, before the first work is queued on it.
    private func registerQueue() {
        queueToken.withLock { token in
            if token == nil { token = CacheQueueRegistry.register(queue) }
        }
    }

    /// The cache store, with stray temporary files removed the first time it is used.
    func preparedStore() -> SectionCacheStore? {
        guard let store else { return nil }
        let first = prepared.withLock { prepared -> Bool in
            defer { prepared = true }
            return !prepared
        }
        if first && !readOnly { store.removeTemporaryFiles() }
        return store
    }

    /// Builds and writes a cache file on the cache queue, after the writes scheduled before it.
    /// A write that fails or is refused (a symlinked folder, say) is logged as a warning: the
    /// next fetch rebuilds the cache. A read-only store's caches are read, never written.
    func scheduleWrite(named name: String, _ build: @escaping @Sendable () -> SectionCacheFile) {
        guard let store, !readOnly else { return }
        registerQueue()
        queue.async {
            do {
                try store.write(build(), named: name)
            } catch {
                SectionCacheStore.logger.warning("section cache write failed", metadata: ["cache": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// Keeps cache `refresher.name` current after commits, for the controller `owner`.
    func register(_ refresher: CacheRefresher, for owner: ObjectIdentifier) {
        guard store != nil else { return }
        refreshers.withLock { $0[owner] = refresher }
    }

    func unregister(for owner: ObjectIdentifier) {
        _ = refreshers.withLock { $0.removeValue(forKey: owner) }
    }

    /// Under the writer's lock, right after a commit that took `generation`: every cache's log
    /// notes it, with the keys it wrote of the entities that cache reads (`keys` returns `nil`:
    /// unknown, as for a batch request or a commit of too many keys). Noting under the lock keeps
    /// each log in generation order.
    func noteCommit(generation: Int64, touched: Set<String>, keys: (_ of: Set<String>) -> [String: [Int64]]?) {
        let refreshers = refreshers.withLock { Array($0.values) }
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
    func scheduleRefreshes(touching touched: Set<String>) {
        let due = refreshers.withLock { $0.values.filter { !$0.entities.isDisjoint(with: touched) } }
        for refresher in due {
            let queued = refresher.pending.withLock { pending -> Bool in
                defer { pending = true }
                return !pending
            }
            guard queued else { continue }
            registerQueue()
            queue.async { [self] in
                refresher.pending.withLock { $0 = false }
                refreshCache(refresher)
            }
        }
    }

    /// On the cache queue: reads the stamp, and the request's rows or only the changed ones, in
    /// one read transaction, and brings the file up to it: a change record appended (the common
    /// case: a commit of a few rows), the file derived from the old one and written again
    /// (compaction, when the records name too many keys), or the request re-run.
    private func refreshCache(_ refresher: CacheRefresher) {
        guard let store, let path, !closed.withLock({ $0 }) else { return }
        do {
            let (file, appended): (SectionCacheFile?, Int64?) = try refreshConnection.withLock { connection in
                if connection == nil {
                    var configuration = Connection.Configuration()
                    configuration.readOnly = true
                    let reader = try Connection(path: path, configuration: configuration)
                    try StringMatching.register(on: reader)
                    connection = reader
                }
                let db = connection!
                KillPoint.hit("cache.rebuild.begin")
                let result = try db.transaction(.deferred) { () throws -> (SectionCacheFile?, Int64?) in
                    let metadata = try StoreCoordinator.readMetadata(db)
                    let stamp = SectionCacheStamp(metadata, entities: refresher.entities)
                    var tally = SectionCacheRefreshStatistics()
                    defer { self.tally.withLock { $0.add(tally) } }
                    switch try incrementalRefresh(refresher, store, on: db, stamp: stamp, tally: &tally) {
                    case .current:
                        return (nil, nil)
                    case .appended:
                        tally.incremental += 1
                        tally.appended += 1
                        return (nil, stamp.generation)
                    case .derived(let file):
                        tally.incremental += 1
                        tally.compactions += 1
                        return (file, nil)
                    case .impossible:
                        let file = try SectionCacheFile.compute(refresher.sql, refresher.arguments, sectioned: refresher.sectioned,
                                                                versionAt: refresher.versionColumn, on: db, stamp: stamp,
                                                                request: refresher.request)
                        tally.full += 1
                        tally.fullRowsRead += file.keys.count
                        return (file, nil)
                    }
                }
                KillPoint.hit("cache.rebuild.fetched")
                return result
            }
            if let appended {
                refresher.log.withLock { $0.trim(through: appended) }
                return
            }
            guard let file else { return }
            try store.write(file, named: refresher.name)
            refresher.log.withLock { $0.trim(through: file.stamp.generation) }
        } catch {
            SectionCacheStore.logger.warning("section cache refresh failed", metadata: ["cache": "\(refresher.name)", "error": "\(error)"])
        }
    }

    private enum IncrementalOutcome {
        /// The file on disk already describes this snapshot.
        case current
        /// A change record was appended to the file on disk.
        case appended
        case derived(SectionCacheFile)
        case impossible
    }

    /// Keys a file's change records may name before the next refresh compacts them into the body:
    /// each costs a reader about log₂(n) order probes when it serves the file.
    static let pendingKeyLimit = 256

    /// The file on disk brought up to `stamp` from the commits' changed keys, when everything
    /// needed is known (see IncrementalCacheRefresh.swift); inside the caller's read transaction.
    /// Appends a change record under the file's lock while the records stay small; otherwise
    /// derives the whole file (the old one's keys, minus the changed, plus those placed again).
    private func incrementalRefresh(_ refresher: CacheRefresher, _ caches: SectionCacheStore, on db: Connection,
                                    stamp: SectionCacheStamp, tally: inout SectionCacheRefreshStatistics) throws -> IncrementalOutcome {
        guard let plan = refresher.incremental, incremental else { return .impossible }
        var outcome = IncrementalOutcome.impossible
        var compaction: (Data, SectionCacheFile.Header, Set<Int64>)?
        try caches.appendRecord(named: refresher.name) { data in
            guard let header = try? SectionCacheFile.header(of: data),
                  header.request == refresher.request,
                  header.stamp.storeUUID == stamp.storeUUID, header.stamp.modelHash == stamp.modelHash,
                  Set(header.stamp.entities.keys) == refresher.entities,
                  let changes = refresher.log.withLock({ $0.changes(after: header.stamp.generation, upTo: stamp.generation) })
            else { return nil }
            if header.stamp.generation == stamp.generation {
                if header.stamp == stamp { outcome = .current }
                return nil
            }
            // A write to an entity reached through a relationship can move rows nobody wrote.
            for (entity, keys) in changes where entity != plan.root && !keys.isEmpty {
                if plan.relatedEntities.contains(entity) { return nil }
            }
            let written = changes[plan.root] ?? []
            let pending = written.union(header.pendingKeys)
            guard header.formatVersion == SectionCacheFile.formatVersion, pending.count <= Self.pendingKeyLimit,
                  header.changeRecords < changeRecordLimit else {
                compaction = (data, header, pending)
                return nil
            }
            KillPoint.hit("cache.refresh.append")
            outcome = .appended
            return (header.soundLength, SectionCacheFile.changeRecord(stamp: stamp, keys: Array(written)))
        }
        guard let (data, header, pending) = compaction else { return outcome }
        KillPoint.hit("cache.refresh.incremental")
        guard var base = try? SectionCacheFile.decodeBody(data, header) else { return .impossible }
        base.pendingKeys = []
        guard let file = try base.applying(pending, plan, arguments: refresher.arguments, sectioned: refresher.sectioned,
                                           on: db, stamp: stamp, statistics: &tally)
        else { return .impossible }
        return .derived(file)
    }
}

/// What refreshing one controller's cache after a commit needs, all of it Sendable: the query,
/// how to cut sections, the stamp's entities and the request; and for an incremental refresh,
/// its SQL and the log of commits since the file was written.
struct CacheRefresher: Sendable {
    let name: String
    /// The request's SQL, each row's `_version` in column `versionColumn`.
    let sql: String
    let versionColumn: Int32
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

