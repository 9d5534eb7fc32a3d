import Foundation
import Testing
import StrataTestSupport
@_spi(Testing) @testable import Strata

/// Issue 49: a cache refresh after a small commit appends a change record (the commit's stamp
/// and the keys it wrote) instead of re-encoding the file; a reader places those keys again from
/// the store. A torn or damaged record makes the file read as of the record before it — stale
/// against the store, so rebuilt — and never as of a commit it does not hold.
@Suite struct SectionCacheChangeRecordTests {
    /// A store of goods by name (Good only, so every one-row commit appends) with a tracking
    /// controller whose cache is written, and `commits` one-row commits after it.
    static func storeWithRecords(commits: Int, options: StoreOptions = StoreOptions()) throws
        -> (TemporaryDirectory, URL, PersistentContainer, FetchedResultsController<ManagedObject>) {
        let directory = TemporaryDirectory("strata-records")
        let url = directory.file("goods.sqlite")
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url, options: options)
        let container = PersistentContainer(coordinator: coordinator)
        try CacheFixture.seed(container)
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: CacheFixture.byNameRequest, managedObjectContext: main,
                                                  sectionNameKeyPath: nil, cacheName: "names")
        try main.performAndWait { try controller.performFetch() }
        container.coordinator.waitForCacheWrites()
        var rng = SplitMix64(seed: 49)
        for commit in 0..<commits {
            try main.performAndWait {
                let goods = try main.fetch(FetchRequest(entityName: "Good", sortKeys: [.ascending("name")]))
                switch commit % 3 {
                case 0:
                    let good = try main.insert("Good")
                    try good.setValue("new-\(commit)", forKey: "name")
                case 1:
                    try rng.pick(goods).setValue("renamed-\(commit)-\(rng.int(0...999))", forKey: "name")
                default:
                    try main.delete(rng.pick(goods))
                }
                try main.saveToStore()
            }
            container.coordinator.waitForCacheWrites()
        }
        return (directory, url, container, controller)
    }

    @Test func oneRowCommitsAppendRecordsAndAWarmControllerEqualsAFreshFetch() throws {
        let (directory, url, container, controller) = try Self.storeWithRecords(commits: 12)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let statistics = container.coordinator.cacheRefreshStatistics
        #expect(statistics.appended == 12 && statistics.compactions == 0 && statistics.full == 0)
        let data = try container.coordinator.sectionCaches!.read(named: "names")
        let header = try SectionCacheFile.header(of: data)
        #expect(header.changeRecords == 12)
        #expect(header.stamp.generation == (try container.coordinator.metadata()).generation)
        #expect(header.pendingKeys.count <= 12 && !header.pendingKeys.isEmpty)
        // A new coordinator (a restart) serves it: the same list as a fetch, tracking from it.
        container.coordinator.close()
        let reopened = try PersistentContainer(model: TestModels.goods(), url: url)
        defer { reopened.coordinator.close() }
        let main = reopened.mainContext
        let warm = FetchedResultsController(fetchRequest: CacheFixture.byNameRequest, managedObjectContext: main,
                                            sectionNameKeyPath: nil, cacheName: "names")
        let fresh = FetchedResultsController(fetchRequest: CacheFixture.byNameRequest, managedObjectContext: main,
                                             sectionNameKeyPath: nil, cacheName: nil)
        try main.performAndWait {
            try warm.performFetch()
            try fresh.performFetch()
        }
        #expect(main.performAndWait { warm.cacheStatus } == .served)
        #expect(main.performAndWait { warm.snapshot == fresh.snapshot })
        #expect(reopened.coordinator.cacheRefreshStatistics.rowsPlacedOnServe == header.pendingKeys.count
                - 4)   // the four deleted goods are not read back
        withExtendedLifetime(controller) {}
    }

    /// Every cut of the records region: the file reads as of the last whole record, with the
    /// keys of the records before the cut; a cut inside the body is a corrupt file.
    @Test func aTornRecordReadsAsTheRecordBeforeIt() throws {
        let (directory, _, container, controller) = try Self.storeWithRecords(commits: 4)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let data = try container.coordinator.sectionCaches!.read(named: "names")
        let full = try SectionCacheFile.header(of: data)
        #expect(full.changeRecords == 4)
        let bodyEnd = full.compressedRange.upperBound + 4
        var boundaries = [bodyEnd]
        var stamps = [full.bodyStamp]
        var position = bodyEnd
        while position < data.count {
            let length = data[(position + 4)..<(position + 8)].reversed().reduce(0) { ($0 << 8) | Int($1) }
            position += 12 + length
            boundaries.append(position)
            stamps.append(try SectionCacheFile.header(of: data.prefix(position)).stamp)
        }
        #expect(boundaries.count == 5 && position == data.count)
        var cuts = 0
        for length in bodyEnd...data.count {
            let header = try SectionCacheFile.header(of: data.prefix(length))
            let whole = boundaries.lastIndex { $0 <= length }!
            #expect(header.changeRecords == whole, "cut at \(length)")
            #expect(header.stamp == stamps[whole], "cut at \(length)")
            #expect(header.soundLength == boundaries[whole], "cut at \(length)")
            cuts += 1
        }
        // One bit flipped anywhere in a record: that record and every one after it are ignored.
        var flips = 0
        for index in stride(from: bodyEnd, to: data.count, by: 3) {
            var bytes = [UInt8](data)
            bytes[index] ^= 0x10
            let header = try SectionCacheFile.header(of: Data(bytes))
            let damaged = boundaries.lastIndex { $0 <= index }!
            #expect(header.changeRecords == damaged && header.stamp == stamps[damaged], "flip at \(index)")
            flips += 1
        }
        print("cache-records: cuts=\(cuts) flips=\(flips) records=\(full.changeRecords)")
        withExtendedLifetime(controller) {}
    }

    /// A file whose last record a crash tore is served as stale (never as the commit it lost),
    /// and the next refresh cuts the torn bytes off before appending.
    @Test func aTornRecordIsStaleAndTheNextRefreshCutsItOff() throws {
        let (directory, url, container, controller) = try Self.storeWithRecords(commits: 3)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let cacheURL = try container.coordinator.sectionCaches!.url(forCacheNamed: "names")
        let data = try Data(contentsOf: cacheURL)
        try data.dropLast(5).write(to: cacheURL)
        let main = container.mainContext
        let reader = FetchedResultsController(fetchRequest: CacheFixture.byNameRequest, managedObjectContext: main,
                                              sectionNameKeyPath: nil, cacheName: "names")
        try main.performAndWait { try reader.performFetch() }
        #expect(main.performAndWait { reader.cacheStatus } == .rebuilt(.entityChanged))
        container.coordinator.waitForCacheWrites()
        // The rebuild wrote a whole file; tear a record of the next commit's refresh by hand.
        try main.performAndWait {
            let good = try main.insert("Good")
            try good.setValue("after-rebuild", forKey: "name")
            try main.saveToStore()
        }
        container.coordinator.waitForCacheWrites()
        let appended = try Data(contentsOf: cacheURL)
        #expect(try SectionCacheFile.header(of: appended).changeRecords == 1)
        try (appended + Data([0x53, 0x43, 0x44, 0x52, 0xFF])).write(to: cacheURL)   // a torn record's first bytes
        try main.performAndWait {
            let good = try main.insert("Good")
            try good.setValue("after-tear", forKey: "name")
            try main.saveToStore()
        }
        container.coordinator.waitForCacheWrites()
        let repaired = try Data(contentsOf: cacheURL)
        let header = try SectionCacheFile.header(of: repaired)
        #expect(header.changeRecords == 2 && header.soundLength == repaired.count)
        #expect(header.stamp.generation == (try container.coordinator.metadata()).generation)
        let check = try StoreInspector(url: url).verifyCache(named: "names")
        #expect(check.matches, "\(check.differences)")
        withExtendedLifetime((controller, reader)) {}
    }

    /// Past the record limit the next refresh compacts: the body is written again and holds every key.
    @Test func theRecordLimitCompacts() throws {
        var options = StoreOptions()
        options.cacheChangeRecordLimit = 3
        let (directory, url, container, controller) = try Self.storeWithRecords(commits: 7, options: options)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let statistics = container.coordinator.cacheRefreshStatistics
        // Records 1–3 appended, the 4th compacts, 5–7 appended again.
        #expect(statistics.appended == 6 && statistics.compactions == 1)
        let header = try SectionCacheFile.header(of: try container.coordinator.sectionCaches!.read(named: "names"))
        #expect(header.changeRecords == 3)
        #expect(try StoreInspector(url: url).verifyCache(named: "names").matches)
        withExtendedLifetime(controller) {}
    }

    /// Tracking starts on a served version 2 file without reading the rows: one read of the
    /// store's stamp, no stamp load; and it then reports a value-only change of a row exactly.
    @Test func trackingAWarmLayoutReadsNoRowAndReportsAnUpdate() throws {
        let (directory, url, container, controller) = try Self.storeWithRecords(commits: 2)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        container.coordinator.close()
        let reopened = try PersistentContainer(model: TestModels.goods(), url: url)
        defer { reopened.coordinator.close() }
        let main = reopened.mainContext
        let warm = FetchedResultsController(fetchRequest: CacheFixture.byNameRequest, managedObjectContext: main,
                                            sectionNameKeyPath: nil, cacheName: "names")
        try main.performAndWait { try warm.performFetch() }
        #expect(main.performAndWait { warm.cacheStatus } == .served)
        let trace = Locked<[String]>([])
        reopened.coordinator.setTrace { sql in trace.withLock { $0.append(sql) } }
        let recorder = ChangesRecorder()
        main.performAndWait { warm.delegate = recorder }
        reopened.coordinator.setTrace(nil)
        let goodReads = trace.withLock { $0 }.filter { $0.contains("\"Good\"") }
        #expect(goodReads.isEmpty, "tracking read rows: \(goodReads)")
        #expect(main.performAndWait { warm.trackingStatistics.stampChecks == 1 && warm.trackingStatistics.stampLoads == 0 })
        // Another coordinator changes a value the list does not sort by: reported as an update.
        let other = try StoreCoordinator(model: TestModels.goods(), url: url, options: .notFollowing)
        let elsewhere = other.newContext(name: "elsewhere")
        let id = main.performAndWait { warm.snapshot.objectIDs[7] }
        try elsewhere.performAndWait {
            try elsewhere.object(with: id).setValue(Int64(4242), forKey: "number")
            try elsewhere.save()
        }
        other.close()
        let deadline = Date().addingTimeInterval(10)
        while main.performAndWait({ recorder.changes.isEmpty }), Date() < deadline { usleep(2_000) }
        let changes = try #require(main.performAndWait { recorder.changes.first })
        #expect(changes.objects == [.update(id, from: FetchedIndexPath(item: 7, section: 0), to: FetchedIndexPath(item: 7, section: 0))])
        withExtendedLifetime(controller) {}
    }
}

/// The change sets a controller reported (read it on the context's queue).
final class ChangesRecorder: FetchedResultsControllerDelegate {
    var changes: [FetchedChanges] = []
    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        if case .changes(let set) = event { changes.append(set) }
    }
}
