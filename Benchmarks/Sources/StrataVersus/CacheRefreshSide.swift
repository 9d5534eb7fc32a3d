import Foundation
import Strata

// Issue 20: "cache refresh after a commit costs the change, not the list". The CPU a one-flight
// commit costs the process, its section-cache refresh included (saveToStore, then
// waitForCacheWrites), with the incremental refresh (the default) and with
// `incrementalCacheRefresh = false`, which re-reads the whole request as every refresh did before.

/// The process's CPU time (all threads: the cache queue's work included), in seconds.
func processCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

enum CacheRefreshWorkload {
    static let cacheName = "refresh-benchmark"

    struct Round {
        var cpuSeconds: Double
        var statistics: SectionCacheRefreshStatistics
        /// The list's opening (a warm start from the file the previous rounds left, change
        /// records included), and how many records and keys that file held.
        var openSeconds: Double
        var recordsAtOpen: Int
        var keysAtOpen: Int
    }

    /// One round: a coordinator with the option as given, the list controller with a cache name
    /// (its file written, unmeasured), then one flight's departure time changed through an
    /// update context's `saveToStore()`, measured with the cache write it causes.
    static func round(store: StorePath, incremental: Bool, value: Int64) throws -> Round {
        var options = StoreOptions()
        options.incrementalCacheRefresh = incremental
        let container = PersistentContainer(coordinator: try StoreCoordinator(model: StrataSide.model, url: store.url, options: options))
        defer { container.coordinator.close() }
        let header = (try? SectionCacheStore(storeURL: store.url).read(named: cacheName)).flatMap { try? SectionCacheFile.header(of: $0) }
        let opening = Date()
        let list = try StrataSide.openList(container, cacheName: cacheName)
        let openSeconds = Date().timeIntervalSince(opening)
        container.coordinator.waitForCacheWrites()
        let target = container.mainContext.performAndWait {
            let sections = list.controller.sections ?? []
            let section = sections[sections.count / 2]
            return section.objectID(at: section.numberOfObjects / 2)
        }
        let before = container.coordinator.cacheRefreshStatistics
        let update = container.newUpdateContext()
        let start = processCPUSeconds()
        try update.performAndWait {
            try update.existingObject(with: target).setValue(value, forKey: "sched_dep_time")
            try update.saveToStore()
        }
        container.coordinator.waitForCacheWrites()
        let cpu = processCPUSeconds() - start
        var statistics = container.coordinator.cacheRefreshStatistics
        statistics.incremental -= before.incremental
        statistics.full -= before.full
        statistics.fullRowsRead -= before.fullRowsRead
        statistics.changedRowsRead -= before.changedRowsRead
        statistics.probes -= before.probes
        statistics.appended -= before.appended
        statistics.compactions -= before.compactions
        let expected = incremental ? (1, 0) : (0, 1)
        guard (statistics.incremental, statistics.full) == expected else {
            throw VersusError("cache refresh: expected \(expected) incremental/full refreshes, got \(statistics)")
        }
        // The file written must be the one the full request gives now.
        let fresh = try StoreInspector(url: store.url)
        var file = try SectionCacheFile.decode(try SectionCacheStore(storeURL: store.url).read(named: cacheName))
        if !file.pendingKeys.isEmpty { file = try fresh.placingPendingKeys(file) }
        let computed = try fresh.compute(file.request)
        guard file.keys == computed.keys, file.sections.map(\.count) == computed.sections.map(\.count) else {
            throw VersusError("cache refresh (\(incremental ? "incremental" : "full")): the file differs from the full request")
        }
        withExtendedLifetime(list.controller) {}
        return Round(cpuSeconds: cpu, statistics: statistics, openSeconds: list.servedFromCache ? openSeconds : .nan,
                     recordsAtOpen: header?.changeRecords ?? 0, keysAtOpen: header?.pendingKeys.count ?? 0)
    }
}
