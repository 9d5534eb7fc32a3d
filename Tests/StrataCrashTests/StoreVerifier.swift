import Foundation
import Strata
import StrataSQLite
import StrataTestSupport

/// What the suite checks after every kill, in this process (a crash on reopening would end the
/// test run, so "reopening never crashes" holds when the suite finishes).
struct Verification {
    /// Why opening the store with a ``StoreCoordinator`` failed (`nil`: it opened).
    var reopenFailure: String?
    /// `PRAGMA integrity_check`'s first row ("ok").
    var integrity: String
    /// Acknowledged markers not in the store.
    var missing: [String]
    var servedFromCache: Bool
    var rejection: SectionCacheRejection?
    /// The cached controller's snapshot equals the fresh uncached fetch's.
    var matches: Bool
    /// What differed, when something did.
    var difference: String?
    /// Goods in the store (stores are started afresh when they grow too big).
    var goods: Int
    var cached: FetchedSnapshot
    var fresh: FetchedSnapshot
    /// The same checks for the harness's second cache (`goods-by-name`, refreshed incrementally).
    var byNameServed: Bool
    var byNameMatches: Bool
    var byNameDifference: String?
    /// What the history says that the store does not (a change listed that never committed, a
    /// commit or a row missing from it); `nil` when they agree.
    var historyProblem: String?
}

enum StoreVerifier {
    static let cacheName = "goods"
    static let byNameCacheName = "goods-by-name"
    static func byNameRequest() -> AnyFetchRequest {
        FetchRequest(entityName: "Good", sortKeys: [.descending("number"), .ascending("name")])
    }

    /// The request of the harness's controllers (identical, or the cache is never served).
    static func request() -> AnyFetchRequest {
        FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
    }

    static func cacheFile(of store: URL) -> URL {
        URL(fileURLWithPath: store.path + ".caches/" + cacheName + ".stratacache")
    }

    /// Reopens the store as an app does (a ``StoreCoordinator``), runs `PRAGMA integrity_check`
    /// through a raw read-only connection, and checks the stack: every acked marker present, and
    /// the controller with the cache name equal to a fresh uncached fetch.
    ///
    /// When the coordinator can't open the store, that is recorded (``Verification/reopenFailure``),
    /// the store is opened once read-write with raw SQLite (which rolls a hot journal back, as any
    /// writer would) and the checks go on, so that one failure does not hide the others.
    static func verify(store: URL, configuration: CrashConfiguration, acked: Set<String>) throws -> Verification {
        var reopenFailure: String?
        let coordinator: StoreCoordinator
        do {
            coordinator = try StoreCoordinator(model: TestModels.goodsModel, url: store, options: configuration.storeOptions)
        } catch {
            reopenFailure = "\(error)"
            _ = try integrityCheck(store, configuration, readOnly: false)
            coordinator = try StoreCoordinator(model: TestModels.goodsModel, url: store, options: configuration.storeOptions)
        }
        defer {
            coordinator.waitForCacheWrites()
            coordinator.close()
        }
        let integrity = try integrityCheck(store, configuration, readOnly: true)
        let container = PersistentContainer(coordinator: coordinator)
        let main = container.mainContext
        let cached = FetchedResultsController(fetchRequest: request(), managedObjectContext: main,
                                              sectionNameKeyPath: "category.name", cacheName: cacheName)
        let fresh = FetchedResultsController(fetchRequest: request(), managedObjectContext: main, sectionNameKeyPath: "category.name")
        let byNameCached = FetchedResultsController(fetchRequest: byNameRequest(), managedObjectContext: main,
                                                    sectionNameKeyPath: "number", cacheName: byNameCacheName)
        let byNameFresh = FetchedResultsController(fetchRequest: byNameRequest(), managedObjectContext: main, sectionNameKeyPath: "number")
        return try main.performAndWait {
            try cached.performFetch()
            try fresh.performFetch()
            try byNameCached.performFetch()
            try byNameFresh.performFetch()
            let c = byNameCached.snapshot, f = byNameFresh.snapshot
            let markers = try main.fetch(FetchRequest(entityName: "Good", predicate: try Condition("name BEGINSWITH %@", "ack-")))
            let present = Set(try markers.map { try $0.value(forKey: "name") as? String ?? "" })
            let goods = try main.count(for: FetchRequest(entityName: "Good"))
            let a = cached.snapshot, b = fresh.snapshot
            let historyProblem = try historyDisagreement(coordinator, goods: Set(try main.fetchObjectIDs(FetchRequest(entityName: "Good"))))
            return Verification(reopenFailure: reopenFailure, integrity: integrity, missing: acked.subtracting(present).sorted(),
                                servedFromCache: cached.cacheStatus == .served, rejection: cached.cacheStatus.rejection,
                                matches: a == b, difference: a == b ? nil : describe(cached: a, fresh: b), goods: goods,
                                cached: a, fresh: b, byNameServed: byNameCached.cacheStatus == .served, byNameMatches: c == f,
                                byNameDifference: c == f ? nil : describe(cached: c, fresh: f), historyProblem: historyProblem)
        }
    }

    /// The history against the store: transactions numbered 1… up to the store's generation, one
    /// per commit, none past it (a listed commit that never happened) and none missing; every row
    /// of the store inserted by a listed transaction and not deleted by one; every row a
    /// transaction deleted gone.
    static func historyDisagreement(_ coordinator: StoreCoordinator, goods: Set<ObjectID>) throws -> String? {
        let transactions = try coordinator.history()
        let generation = try coordinator.currentHistoryToken().generation
        let tokens = transactions.map(\.token.generation)
        if let last = tokens.last, last > generation { return "the history lists transaction \(last), past the store's generation \(generation)" }
        if tokens != Array(1...max(generation, 1)).prefix(tokens.count).map({ $0 }) || Int64(tokens.count) != generation {
            let missing = Set(1...max(generation, 1)).subtracting(tokens).sorted()
            return "the history lists \(tokens.count) transactions for generation \(generation) (missing \(missing.prefix(5)))"
        }
        var inserted = Set<ObjectID>(), deleted = Set<ObjectID>()
        for change in transactions.flatMap(\.changes) where change.objectID.entityName == "Good" {
            switch change.kind {
            case .insert: inserted.insert(change.objectID)
            case .delete: deleted.insert(change.objectID)
            case .update: break
            }
        }
        if let unlisted = goods.subtracting(inserted).first { return "\(unlisted) is in the store, and no transaction of the history inserted it" }
        if let listed = goods.intersection(deleted).first { return "\(listed) is in the store, and the history lists its delete" }
        return nil
    }

    /// `PRAGMA integrity_check`'s first row, through a raw connection of the store's journal mode.
    static func integrityCheck(_ store: URL, _ configuration: CrashConfiguration, readOnly: Bool) throws -> String {
        var sqlite = Connection.Configuration()
        sqlite.readOnly = readOnly
        sqlite.createIfMissing = false
        sqlite.journalMode = configuration.journal
        sqlite.synchronous = configuration.synchronous
        let db = try Connection(path: store.path, configuration: sqlite)
        defer { db.close() }
        let value = try db.pragma("integrity_check")
        if case .text(let text) = value { return text }
        return "\(value)"
    }

    /// Sections and counts of both, and the first ID that differs.
    static func describe(cached: FetchedSnapshot, fresh: FetchedSnapshot) -> String {
        func layout(_ snapshot: FetchedSnapshot) -> String {
            snapshot.sections.map { "\($0.name):\($0.numberOfObjects)" }.joined(separator: ",")
        }
        var text = "cached [\(layout(cached))] fresh [\(layout(fresh))]"
        let a = cached.objectIDs, b = fresh.objectIDs
        if let index = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            text += "; first differing ID at \(index): \(a[index]) vs \(b[index])"
        } else if a.count != b.count {
            text += "; \(a.count) vs \(b.count) IDs"
        }
        return text
    }

    /// Breaks the cache file (truncated at a random offset, or one byte changed); returns what was
    /// done, or `nil` when there is no file to break.
    /// Ends the description of damage that fell in a cache file's change records.
    static let recordsMarker = ", in the change records"

    static func corruptCache(of store: URL, using rng: inout SplitMix64) throws -> String? {
        let url = cacheFile(of: store)
        guard var bytes = try? Data(contentsOf: url), !bytes.isEmpty else { return nil }
        // Damage past the body lands in the change records: the file then reads as of the
        // record before the damage, stale against the store (``recordsMarker``), never served.
        // The body ends after the header (length at bytes 12..<16, its last field the compressed
        // length) and the compressed body and its CRC (see the Section Cache Format article).
        func integer(_ range: Range<Int>) -> Int { bytes[range].reversed().reduce(0) { ($0 << 8) | Int($1) } }
        var bodyEnd = bytes.count
        if bytes.count >= 20 {
            let headerLength = integer(12..<16)
            if headerLength >= 4, 16 + headerLength <= bytes.count { bodyEnd = 16 + headerLength + integer((12 + headerLength)..<(16 + headerLength)) + 4 }
        }
        if rng.chance(0.5) {
            let offset = rng.int(0...(bytes.count - 1))
            try bytes.prefix(offset).write(to: url)
            return "truncated \(bytes.count) bytes to \(offset)" + (offset >= bodyEnd ? recordsMarker : "")
        }
        let offset = rng.int(0...(bytes.count - 1))
        let mask = UInt8(rng.int(1...255))
        bytes[offset] ^= mask
        try bytes.write(to: url)
        return "byte \(offset) of \(bytes.count) xor 0x\(String(mask, radix: 16))" + (offset >= bodyEnd ? recordsMarker : "")
    }

    /// Removes the store, its journal files and its cache folder.
    static func removeStore(_ store: URL) {
        for suffix in ["", "-wal", "-shm", "-journal", ".caches"] {
            try? FileManager.default.removeItem(atPath: store.path + suffix)
        }
    }
}

extension TestModels {
    /// One model for every in-process open (a model is immutable; building it once saves time).
    static let goodsModel = TestModels.goods()
}
