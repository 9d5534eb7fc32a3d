import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Issue 20: a cache refresh after a commit costs the change, not the list. Every file a refresh
/// writes must equal what the full request gives at the generation it is stamped with, on every
/// route a commit can take (update contexts, main, the writer, batch requests, another
/// coordinator), for requests that can and cannot be refreshed incrementally.
@Suite struct IncrementalCacheRefreshTests {
    static func model() -> Model {
        try! Model(version: "incremental-1", entities: [
            Entity("Tag", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("items", .toMany, to: "Item", inverse: "tag")]),
            Entity("Item", attributes: [
                Attribute("section", .string),
                Attribute("title", .string),
                Attribute("rank", .int64),
                Attribute("flag", .bool, isOptional: false, defaultValue: .bool(false)),
            ], relationships: [
                Relationship("tag", .toOne, to: "Tag", inverse: "items"),
                Relationship("parent", .toOne, to: "Item", inverse: "children"),
                Relationship("children", .toMany, to: "Item", inverse: "parent"),
            ]),
        ])
    }

    /// A new store of the test's model in a temporary folder, with its container.
    static func store(_ options: StoreOptions = StoreOptions()) throws -> (TemporaryDirectory, URL, PersistentContainer) {
        let directory = TemporaryDirectory("strata-incremental")
        let url = directory.file("store.sqlite")
        return (directory, url, PersistentContainer(coordinator: try StoreCoordinator(model: model(), url: url, options: options)))
    }

    /// One cached controller of the test: its request and whether refreshes may be incremental.
    struct Cached {
        let name: String
        let request: AnyFetchRequest
        let sectionKeyPath: String?
        let incremental: Bool
    }

    static func controllers() throws -> [Cached] {
        [
            Cached(name: "by-section", request: FetchRequest(entityName: "Item", predicate: try Condition("flag == YES OR rank > 5"),
                                                             sortKeys: [.ascending("section"), .descending("rank"), .ascending("title", comparison: .caseInsensitive)]),
                   sectionKeyPath: "section", incremental: true),
            Cached(name: "by-title", request: FetchRequest(entityName: "Item", sortKeys: [.ascending("title", comparison: .caseInsensitive)]),
                   sectionKeyPath: nil, incremental: true),
            Cached(name: "by-rank-desc", request: FetchRequest(entityName: "Item", predicate: try Condition("title CONTAINS[c] 'a'"),
                                                               sortKeys: [.descending("rank"), .ascending("section")]),
                   sectionKeyPath: "rank", incremental: true),
            Cached(name: "by-tag", request: FetchRequest(entityName: "Item", sortKeys: [.ascending("tag.name"), .ascending("rank")]),
                   sectionKeyPath: "tag.name", incremental: true),
            Cached(name: "window", request: FetchRequest(entityName: "Item", sortKeys: [.ascending("rank")], fetchLimit: 7),
                   sectionKeyPath: nil, incremental: false),
            Cached(name: "by-parent", request: FetchRequest(entityName: "Item", predicate: try Condition("parent.rank > 3"),
                                                            sortKeys: [.ascending("rank")]),
                   sectionKeyPath: nil, incremental: false),
        ]
    }

    /// The cache file `name` against the full request at the store's current generation: equal
    /// when its stamp is current; `false` when it is stale (not served, so not checked).
    static func check(_ cached: Cached, _ coordinator: StoreCoordinator, _ inspector: StoreInspector) throws -> Bool {
        let data = try coordinator.sectionCaches!.read(named: cached.name)
        var file: SectionCacheFile
        do { file = try SectionCacheFile.decode(data) } catch {
            Issue.record("cache \(cached.name): \(error) (\(data.count) bytes)")
            throw error
        }
        let current = SectionCacheStamp(try coordinator.metadata(), entities: Set(file.stamp.entities.keys))
        guard file.stamp.staleness(against: current) == nil else { return false }
        // Keys its change records name are placed again from the store, as a controller serving it does.
        if !file.pendingKeys.isEmpty { file = try inspector.placingPendingKeys(file) }
        let fresh = try inspector.compute(file.request)
        #expect(file.keys == fresh.keys, "cache \(cached.name): keys differ from the full request")
        #expect(file.sections.map { [$0.value.description, $0.name, String($0.count)] } == fresh.sections.map { [$0.value.description, $0.name, String($0.count)] },
                "cache \(cached.name): sections differ from the full request")
        return true
    }

    @Test func everyRefreshEqualsTheFullRequest() throws {
        let (directory, url, container) = try Self.store()
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let coordinator = container.coordinator
        let main = container.mainContext
        let batches = Int(ProcessInfo.processInfo.environment["STRATA_INCREMENTAL_BATCHES"] ?? "") ?? 300
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_INCREMENTAL_SEED"] ?? "") ?? 20_261_124)
        let sections: [String?] = [nil, "", "a", "A", "b", "c", "ä", "z"]
        let titles: [String?] = [nil, "", "apple", "Apple", "banana", "cherry", "Çava", "date", "a"]

        func randomize(_ item: ManagedObject, _ tags: [ManagedObject], _ items: [ManagedObject]) throws {
            try item.setValue(rng.pick(sections), forKey: "section")
            try item.setValue(rng.pick(titles), forKey: "title")
            try item.setValue(rng.chance(0.1) ? nil : Int64(rng.int(0...9)), forKey: "rank")
            try item.setValue(rng.chance(0.5), forKey: "flag")
            try item.setValue(tags.isEmpty || rng.chance(0.2) ? nil : rng.pick(tags), forKey: "tag")
            if !items.isEmpty, rng.chance(0.3) { try item.setValue(rng.pick(items), forKey: "parent") }
        }
        var operations: [String: Int] = [:]
        /// Random work in `context`: inserts, edits (one attribute or all), deletes, tag renames.
        func work(_ context: ManagedObjectContext, rows: Int) throws {
            let tags = try context.fetch(FetchRequest(entityName: "Tag"))
            let items = try context.fetch(FetchRequest(entityName: "Item"))
            for _ in 0..<rows {
                switch rng.int(0...9) {
                case 0...2:
                    try randomize(try context.insert("Item"), tags, items)
                    operations["insert item", default: 0] += 1
                case 3...6 where !items.isEmpty:
                    let item = rng.pick(items)
                    guard !item.isDeleted else { continue }
                    let edit = rng.int(0...4)
                    switch edit {
                    case 0: try item.setValue(rng.pick(sections), forKey: "section")
                    case 1: try item.setValue(rng.pick(titles), forKey: "title")
                    case 2: try item.setValue(Int64(rng.int(0...9)), forKey: "rank")
                    case 3: try item.setValue(!((try item.value(forKey: "flag")) as? Bool ?? false), forKey: "flag")
                    default: try randomize(item, tags, items)
                    }
                    operations[["set section", "set title", "set rank", "toggle flag", "set everything"][edit], default: 0] += 1
                case 7 where !items.isEmpty:
                    let item = rng.pick(items)
                    if !item.isDeleted {
                        try context.delete(item)
                        operations["delete item", default: 0] += 1
                    }
                case 8 where !tags.isEmpty && rng.chance(0.3):
                    try rng.pick(tags).setValue("tag-\(rng.int(0...20))", forKey: "name")
                    operations["rename tag", default: 0] += 1
                case 8 where tags.count < 12:
                    operations["insert tag", default: 0] += 1
                    try context.insert("Tag").setValue("tag-\(rng.int(0...20))", forKey: "name")
                default:
                    break
                }
            }
        }

        // A store with rows, then every controller's cold fetch (each writes its file).
        try main.performAndWait {
            for _ in 0..<3 { try main.insert("Tag").setValue("tag-\(rng.int(0...20))", forKey: "name") }
            try work(main, rows: 0)
            let tags = try main.fetch(FetchRequest(entityName: "Tag"))
            for _ in 0..<60 { try randomize(try main.insert("Item"), tags, []) }
            try main.saveToStore()
        }
        let cached = try Self.controllers()
        let controllers = try main.performAndWait {
            try cached.map { c in
                let controller = FetchedResultsController(fetchRequest: c.request, managedObjectContext: main,
                                                          sectionNameKeyPath: c.sectionKeyPath, cacheName: c.name)
                try controller.performFetch()
                return controller
            }
        }
        coordinator.waitForCacheWrites()
        let inspector = try StoreInspector(url: url)
        var routes: [String: Int] = [:]
        var checked: [String: Int] = [:]
        for _ in 0..<batches {
            let route: String
            switch rng.int(0...9) {
            case 0...3:
                route = "update.saveToStore()"
                let update = container.newUpdateContext()
                try update.performAndWait {
                    try work(update, rows: rng.chance(0.6) ? 1 : rng.int(2...12))
                    try update.saveToStore()
                }
            case 4...5:
                route = "main.save()+writer.save()"
                try main.performAndWait {
                    try work(main, rows: rng.int(1...4))
                    _ = try main.save()
                }
                _ = try container.writerContext.performAndWait { try container.writerContext.save() }
            case 6:
                route = "background.save()"
                let background = container.newBackgroundContext()
                try background.performAndWait {
                    try work(background, rows: rng.int(1...3))
                    _ = try background.save()
                }
            case 7 where rng.chance(0.5):
                route = "batch update"
                _ = try coordinator.execute(BatchUpdateRequest(entityName: "Item", predicate: try Condition("rank == %@", Int64(rng.int(0...9))),
                                                               propertiesToUpdate: ["flag": rng.chance(0.5), "section": rng.pick(sections)]))
            case 7:
                route = "batch delete"
                _ = try coordinator.execute(BatchDeleteRequest(FetchRequest(entityName: "Item", predicate: try Condition("rank == %@", Int64(rng.int(0...9))))))
            case 8:
                route = "other coordinator, then update.saveToStore()"
                let other = try PersistentContainer(model: Self.model(), url: url)
                try other.mainContext.performAndWait {
                    try work(other.mainContext, rows: rng.int(1...3))
                    try other.mainContext.saveToStore()
                }
                other.coordinator.close()
                let update = container.newUpdateContext()
                try update.performAndWait {
                    try work(update, rows: 1)
                    try update.saveToStore()
                }
            default:
                route = "one row, update.saveToStore()"
                let update = container.newUpdateContext()
                try update.performAndWait {
                    try work(update, rows: 1)
                    try update.saveToStore()
                }
            }
            routes[route, default: 0] += 1
            coordinator.waitForCacheWrites()
            for c in cached where try Self.check(c, coordinator, inspector) { checked[c.name, default: 0] += 1 }
        }
        withExtendedLifetime(controllers) {}
        let statistics = coordinator.cacheRefreshStatistics
        print("incremental-cache: batches=\(batches) incremental=\(statistics.incremental) appended=\(statistics.appended) "
              + "compactions=\(statistics.compactions) full=\(statistics.full) "
              + "changed-rows-read=\(statistics.changedRowsRead) probes=\(statistics.probes) full-rows-read=\(statistics.fullRowsRead)")
        print("incremental-cache routes: " + routes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        print("incremental-cache operations: " + operations.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        print("incremental-cache files checked current: " + checked.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        #expect(statistics.incremental > batches, "most refreshes of the four eligible caches should be incremental")
        #expect(statistics.full > batches / 2, "windows, key paths back to Item, batches and other coordinators need full refreshes")
        for c in cached { #expect(checked[c.name, default: 0] > batches / 2, "cache \(c.name) was current at too few checks") }
        // Every route and operation is reached (the counts above say how often).
        #expect(routes.count == 7 && routes.values.allSatisfy { $0 >= batches / 100 }, "\(routes)")
        #expect(operations.count == 9 && operations.values.allSatisfy { $0 >= batches / 100 }, "\(operations)")
    }

    /// Work done: a one-row commit on a 20,000-row list reads that row back and about two
    /// probes per halving, not the list.
    @Test func aOneRowCommitReadsOneRowAndAFewProbes() throws {
        let (directory, url, container) = try Self.store()
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let main = container.mainContext
        try main.performAndWait {
            for index in 0..<20_000 {
                let item = try main.insert("Item")
                try item.setValue(["a", "b", "c", "d"][index % 4], forKey: "section")
                try item.setValue(Int64(index % 97), forKey: "rank")
                try item.setValue(true, forKey: "flag")
            }
            try main.saveToStore()
        }
        let cached = try Self.controllers()[0]
        let controller = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                                  sectionNameKeyPath: cached.sectionKeyPath, cacheName: cached.name)
        try main.performAndWait { try controller.performFetch() }
        container.coordinator.waitForCacheWrites()
        let before = container.coordinator.cacheRefreshStatistics
        let update = container.newUpdateContext()
        try update.performAndWait {
            let item = try #require(update.fetch(FetchRequest(entityName: "Item", predicate: try Condition("rank == 5"), fetchLimit: 1)).first)
            try item.setValue("b", forKey: "section")
            try item.setValue(Int64(50), forKey: "rank")
            try update.saveToStore()
        }
        container.coordinator.waitForCacheWrites()
        let after = container.coordinator.cacheRefreshStatistics
        // The refresh appends a change record: no row read, no probe, the body not re-encoded.
        #expect(after.incremental - before.incremental == 1)
        #expect(after.appended - before.appended == 1)
        #expect(after.full == before.full)
        #expect(after.changedRowsRead == before.changedRowsRead && after.probes == before.probes)
        #expect(try Self.check(cached, container.coordinator, StoreInspector(url: url)))
        // Serving the file places the one changed row: one row read, log2(20,000) < 15 probes.
        let served = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                              sectionNameKeyPath: cached.sectionKeyPath, cacheName: cached.name)
        try main.performAndWait { try served.performFetch() }
        let serving = container.coordinator.cacheRefreshStatistics
        #expect(main.performAndWait { served.cacheStatus } == .served)
        #expect(serving.rowsPlacedOnServe - after.rowsPlacedOnServe == 1)
        #expect(serving.probesOnServe - after.probesOnServe <= 15)
        let fresh = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                             sectionNameKeyPath: cached.sectionKeyPath, cacheName: nil)
        try main.performAndWait { try fresh.performFetch() }
        #expect(main.performAndWait { served.snapshot == fresh.snapshot })
        withExtendedLifetime(controller) {}
    }

    /// Another coordinator's one-row commit (another process, as far as this one knows): the
    /// follower reads its keys from the history, and the cache is refreshed from them as after
    /// this coordinator's own commit — one row read, not the list.
    @Test func anotherConnectionsOneRowCommitIsRefreshedFromTheHistorysKeys() throws {
        let (directory, url, container) = try Self.store()
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let main = container.mainContext
        try main.performAndWait {
            for index in 0..<2_000 {
                let item = try main.insert("Item")
                try item.setValue(["a", "b", "c", "d"][index % 4], forKey: "section")
                try item.setValue(Int64(index % 97), forKey: "rank")
                try item.setValue(true, forKey: "flag")
            }
            try main.saveToStore()
        }
        let cached = try Self.controllers()[0]
        let controller = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                                  sectionNameKeyPath: cached.sectionKeyPath, cacheName: cached.name)
        try main.performAndWait { try controller.performFetch() }
        container.coordinator.waitForCacheWrites()
        let before = container.coordinator.cacheRefreshStatistics
        let merged = container.coordinator.externalChangeStatistics.transactionsMerged
        let other = try StoreCoordinator(model: Self.model(), url: url, options: .notFollowing)
        let elsewhere = other.newContext(name: "elsewhere")
        try elsewhere.performAndWait {
            let item = try #require(elsewhere.fetch(FetchRequest(entityName: "Item", predicate: try Condition("rank == 5"), fetchLimit: 1)).first)
            try item.setValue("b", forKey: "section")
            try item.setValue(Int64(50), forKey: "rank")
            try elsewhere.save()
        }
        other.close()
        let deadline = Date().addingTimeInterval(10)
        while container.coordinator.externalChangeStatistics.transactionsMerged == merged, Date() < deadline { usleep(1000) }
        #expect(container.coordinator.externalChangeStatistics.transactionsMerged == merged + 1)
        container.coordinator.waitForCacheWrites()
        let after = container.coordinator.cacheRefreshStatistics
        #expect(after.incremental - before.incremental == 1)
        #expect(after.appended - before.appended == 1)
        #expect(after.full == before.full)
        #expect(after.changedRowsRead == before.changedRowsRead)
        #expect(try Self.check(cached, container.coordinator, StoreInspector(url: url)))
        withExtendedLifetime(controller) {}
    }

    /// With the option off every refresh re-runs the request (what the benchmarks compare with).
    @Test func theOptionOffRereadsTheList() throws {
        var options = StoreOptions()
        options.incrementalCacheRefresh = false
        let (directory, url, container) = try Self.store(options)
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let main = container.mainContext
        try main.performAndWait {
            for index in 0..<100 { try main.insert("Item").setValue(Int64(index), forKey: "rank") }
            try main.saveToStore()
        }
        let cached = try Self.controllers()[1]
        let controller = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                                  sectionNameKeyPath: cached.sectionKeyPath, cacheName: cached.name)
        try main.performAndWait { try controller.performFetch() }
        let update = container.newUpdateContext()
        try update.performAndWait {
            try update.insert("Item").setValue("new", forKey: "title")
            try update.saveToStore()
        }
        container.coordinator.waitForCacheWrites()
        let statistics = container.coordinator.cacheRefreshStatistics
        #expect(statistics.incremental == 0 && statistics.full == 1 && statistics.fullRowsRead == 101)
        #expect(try Self.check(cached, container.coordinator, StoreInspector(url: url)))
        withExtendedLifetime(controller) {}
    }

    /// Found by the test above: a file of one section whose value is NULL, named "", holding one
    /// key has a 7-byte body; decoding required 10 bytes per section and refused it as bad-header,
    /// so such a cache was rebuilt at every launch instead of served.
    @Test func aCacheOfOneObjectIsServed() throws {
        let (directory, _, container) = try Self.store()
        defer {
            container.coordinator.close()
            withExtendedLifetime(directory) {}
        }
        let main = container.mainContext
        try main.performAndWait {
            try main.insert("Item").setValue(Int64(1), forKey: "rank")
            try main.saveToStore()
        }
        let cached = try Self.controllers()[1]
        for expected in [false, true] {
            let controller = FetchedResultsController(fetchRequest: cached.request, managedObjectContext: main,
                                                      sectionNameKeyPath: cached.sectionKeyPath, cacheName: cached.name)
            let status = try main.performAndWait {
                try controller.performFetch()
                return controller.cacheStatus
            }
            container.coordinator.waitForCacheWrites()
            #expect((status == .served) == expected, "\(status)")
        }
    }
}
