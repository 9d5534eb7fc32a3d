internal import Foundation
internal import Logging
internal import StrataSQLite

/// The durable section cache: served when it matches the committed store, rebuilt otherwise.
extension AnyFetchedResultsController {
    /// With a cache name and nothing unsaved along the chain for the entities the request reads:
    /// installs the cache when it validates, else fetches from one committed snapshot (rows and
    /// stamp read in the same read transaction), installs that, and schedules the cache's write.
    /// Returns `false` when the cache does not apply (unsaved changes, an in-memory store).
    /// Sets ``cacheStatus`` to what it did.
    func fetchThroughCache(_ plan: FetchPlan) throws -> Bool {
        cacheStatus = .none
        let context = managedObjectContext
        guard let cacheName else { return false }
        guard let caches = context.coordinator.caches.preparedStore() else {
            cacheStatus = .skipped(.inMemoryStore)
            SectionCacheStore.logger.debug("section cache skipped", metadata: ["cache": "\(cacheName)", "reason": "\(SectionCacheSkipReason.inMemoryStore)"])
            return false
        }
        // A cache holds committed rows only: with unsaved changes beneath it is neither read nor written.
        guard !context.chainHasPendingChanges(plan.entities) else {
            cacheStatus = .skipped(.unsavedChanges)
            SectionCacheStore.logger.debug("section cache skipped", metadata: ["cache": "\(cacheName)", "reason": "\(SectionCacheSkipReason.unsavedChanges)"])
            return false
        }
        let request = CanonicalRequest(plan.request, sectionKeyPath: sectionNameKeyPath)
        do {
            let file = try validatedCache(cacheName, caches, plan, request)
            installFromCache(file)
            cacheStatus = .served
            KillPoint.hit("cache.load.validated")
            SectionCacheStore.logger.debug("section cache served", metadata: ["cache": "\(cacheName)", "objects": "\(file.keys.count)"])
            return true
        } catch let reason {
            cacheStatus = .rebuilt(reason)
            let metadata: Logger.Metadata = ["cache": "\(cacheName)", "reason": "\(reason.rawValue)"]
            if reason.isCorrupt {
                // An anomaly: something broke a file Strata wrote (or wrote it elsewhere).
                SectionCacheStore.logger.warning("section cache rejected and rebuilt", metadata: metadata)
            } else {
                // Expected: a first launch (missing), or a commit since the file was written (stale).
                SectionCacheStore.logger.debug("section cache not served, rebuilding", metadata: metadata)
            }
        }
        KillPoint.hit("cache.rebuild.begin")
        let (fetched, storeMetadata) = try context.coordinator.withReader { db in
            try db.transaction(.deferred) { (try fetchRows(plan, on: db), try StoreCoordinator.readMetadata(db)) }
        }
        KillPoint.hit("cache.rebuild.fetched")
        install(fetched)
        let stamp = SectionCacheStamp(storeMetadata, entities: plan.entities)
        let rows = self.rows
        context.coordinator.caches.scheduleWrite(named: cacheName) {
            AnyFetchedResultsController.cacheFile(rows, stamp: stamp, request: request)
        }
        return true
    }

    /// Registers this controller's cache for refreshes after commits (see
    /// ``StoreCoordinator``'s cache refreshes): brought up to date in the background from each
    /// commit's changed keys, or re-read from a committed snapshot when that can't be done.
    func registerCacheRefresher(_ plan: FetchPlan) {
        guard let cacheName else { return }
        let refresher = CacheRefresher(
            name: cacheName, sql: plan.keyAndSortValuesSQL(withVersion: true), versionColumn: Int32(1 + plan.sortValueSQL.count),
            arguments: plan.arguments,
            sectioned: sectionNameKeyPath != nil, entities: plan.entities,
            request: CanonicalRequest(plan.request, sectionKeyPath: sectionNameKeyPath),
            incremental: IncrementalRefreshPlan(plan), pending: Locked(false))
        managedObjectContext.coordinator.caches.register(refresher, for: ObjectIdentifier(self))
    }

    /// The cache file of a layout.
    static func cacheFile(_ rows: FetchedRows, stamp: SectionCacheStamp, request: CanonicalRequest) -> SectionCacheFile {
        var keys: [Int64] = []
        var stamps: [UInt32] = []
        keys.reserveCapacity(rows.count)
        stamps.reserveCapacity(rows.count)
        for section in rows.sections {
            for chunk in section.chunks {
                keys.append(contentsOf: rows.chunks[Int(chunk)].keys)
                stamps.append(contentsOf: rows.chunks[Int(chunk)].stamps)
            }
        }
        // An unsectioned layout's kept empty section is not written: a file's sections hold rows.
        let sections = rows.sections.filter { $0.count > 0 }.map {
            SectionCacheSection(value: $0.value, name: $0.name, indexTitle: $0.indexTitle, count: $0.count)
        }
        return SectionCacheFile(stamp: stamp, request: request, sections: sections, keys: keys, stamps: stamps)
    }

    /// Reads and checks cache `name`: structure, request, stamp against the store now, body;
    /// and places the keys its change records name again, reading them in the same read
    /// transaction as the stamp it is checked against.
    private func validatedCache(_ name: String, _ caches: SectionCacheStore, _ plan: FetchPlan,
                                _ request: CanonicalRequest) throws(SectionCacheRejection) -> SectionCacheFile {
        let data = try caches.read(named: name)
        let header = try SectionCacheFile.header(of: data)
        guard header.request == request else { throw .otherRequest }
        var file: SectionCacheFile
        if header.pendingKeys.isEmpty {
            guard let metadata = try? managedObjectContext.coordinator.metadata() else { throw .unreadable }
            if let stale = header.stamp.staleness(against: SectionCacheStamp(metadata, entities: plan.entities)) { throw stale }
            file = try SectionCacheFile.decodeBody(data, header)
        } else {
            // Records name keys changed since the body: the body is inflated first (a corrupt one
            // is rejected as such), then checked and brought up to date in one read transaction.
            file = try SectionCacheFile.decodeBody(data, header)
            let sectioned = sectionNameKeyPath != nil
            let outcome: Result<SectionCacheFile, SectionCacheRejection>
            do {
                outcome = try managedObjectContext.coordinator.withReader { db in
                    try db.transaction(.deferred) { () throws -> Result<SectionCacheFile, SectionCacheRejection> in
                        let metadata = try StoreCoordinator.readMetadata(db)
                        if let stale = header.stamp.staleness(against: SectionCacheStamp(metadata, entities: plan.entities)) {
                            return .failure(stale)
                        }
                        // Only an incremental plan's refreshes append records: anything else is a file to rebuild.
                        guard let incremental = IncrementalRefreshPlan(plan) else { return .failure(.entityChanged) }
                        var statistics = SectionCacheRefreshStatistics()
                        var base = file
                        base.pendingKeys = []
                        let placed = try base.applying(Set(header.pendingKeys), incremental, arguments: plan.arguments,
                                                       sectioned: sectioned, on: db, stamp: header.stamp, statistics: &statistics)
                        self.managedObjectContext.coordinator.caches.tally.withLock {
                            $0.rowsPlacedOnServe += statistics.changedRowsRead
                            $0.probesOnServe += statistics.probes
                        }
                        guard let placed else { return .failure(.entityChanged) }
                        return .success(placed)
                    }
                }
            } catch {
                throw .unreadable
            }
            file = try outcome.get()
        }
        // Sections must be in the order the first sort key gives (one `.null` section when unsectioned).
        let order = sectionOrder
        if sectionNameKeyPath == nil {
            guard file.sections.count <= 1, file.sections.allSatisfy({ $0.value == .null }) else { throw .badBody }
        }
        for (a, b) in zip(file.sections, file.sections.dropFirst()) where order(a.value, b.value) >= 0 { throw .badBody }
        // `""` shares `nil`'s section (a file written before that rule is rebuilt).
        if file.sections.contains(where: { AnyFetchedResultsController.sectionValue($0.value) != $0.value }) { throw .badBody }
        return file
    }

    /// Installs a validated cache file. A version 2 file holds the rows' version stamps, so
    /// that tracking can start without reading the rows again; a version 1 file's stamps read
    /// as unknown until tracking loads them (``loadStampsOfCachedLayout(_:)``).
    private func installFromCache(_ file: SectionCacheFile) {
        var rows = FetchedRows(keepsOneSection: sectionNameKeyPath == nil)
        var offset = 0
        var stamps = file.stampRuns.map(StampRunReader.init)
        for section in file.sections {
            let (name, title) = makeSection(section.value)
            rows.appendSection(value: section.value, name: name, indexTitle: title,
                               keys: file.keys[offset..<(offset + section.count)],
                               stamps: stamps == nil ? nil : { stamps!.stamps($0) })
            offset += section.count
        }
        self.rows = rows
        placementValues = [:]
        deferLocations()
        relatedValues = [:]
        relatedValuesLoaded = false
        needsRerun = false
        servedCacheStamp = file.stamp
        servedWithStamps = file.stampRuns != nil
        contentStamped = []
        placedByNewerRead = []
    }
}
