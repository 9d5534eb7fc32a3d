import Foundation
import Strata

/// Number of objects (rows) every benchmark inserts or fetches.
let objectCount = 100_000

/// One `Item` as plain Swift values: the input of the insert benchmarks and what the raw fetch decodes into.
struct ItemRow: Sendable, Equatable {
    var pk: Int64
    var name: String
    var category: Int64
    var number: Int64
    var isEven: Bool
}

/// The benchmark model: `Item(name, category, number, isEven)` with a compound index on (category, name).
let benchmarkModel: Model = {
    do {
        return try Model(version: "bench-1", entities: [
            Entity("Item", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("category", .int64, isOptional: false),
                Attribute("number", .int64),
                Attribute("isEven", .bool),
            ], compoundIndexes: [["category", "name"]]),
        ])
    } catch {
        fatalError("benchmark model is invalid: \(error)")
    }
}()

/// SplitMix64: a small seeded generator, so every run uses the same data.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `count` deterministic rows: random 8–16 letter names, 100 categories, random numbers; keys 1…count.
func makeRows(count: Int = objectCount, seed: UInt64 = 0x5752_4154_4131) -> [ItemRow] {
    var rng = SplitMix64(seed: seed)
    let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    var rows: [ItemRow] = []
    rows.reserveCapacity(count)
    for i in 0..<count {
        let length = Int.random(in: 8...16, using: &rng)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(letters[Int.random(in: 0..<letters.count, using: &rng)]) }
        let number = Int64.random(in: 0..<1_000_000_000, using: &rng)
        rows.append(ItemRow(
            pk: Int64(i + 1),
            name: String(decoding: bytes, as: UTF8.self),
            category: Int64.random(in: 0..<100, using: &rng),
            number: number,
            isEven: number % 2 == 0
        ))
    }
    return rows
}

/// A temporary directory holding one database file; `remove()` deletes it with its WAL and SHM files.
struct TemporaryStore: Sendable {
    let directory: URL
    var url: URL { directory.appendingPathComponent("bench.sqlite") }
    var path: String { url.path }

    /// A new, empty directory with a unique name.
    init() throws {
        try self.init(directoryName: "strata-bench-\(UUID().uuidString)")
    }

    /// The directory named after `label` and this process, emptied and created anew; the same
    /// label gives the same path again (see ``named(_:)``), so a teardown hook can remove it.
    init(fresh label: String) throws {
        try self.init(directoryName: Self.named(label).directory.lastPathComponent)
    }

    private init(directoryName: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(directoryName, isDirectory: true)
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private init(existing directory: URL) { self.directory = directory }

    /// The store for `label` in this process, without touching the file system.
    static func named(_ label: String) -> TemporaryStore {
        TemporaryStore(existing: FileManager.default.temporaryDirectory.appendingPathComponent(
            "strata-bench-\(label)-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true))
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

// MARK: Strata side

/// Inserts `rows` as `Item` objects into `context` and saves once (`cascade`: with
/// `saveToStore()`, through every ancestor to SQLite).
func strataInsert(_ rows: [ItemRow], into context: ManagedObjectContext, cascade: Bool = false) throws {
    try fillContext(rows, context)
    _ = try context.performAndWait { cascade ? try context.saveToStore() : try context.save() }
}

/// Inserts `rows` as `Item` objects into `context`, unsaved.
func fillContext(_ rows: [ItemRow], _ context: ManagedObjectContext) throws {
    try context.performAndWait {
        for row in rows {
            let item = try context.insert("Item")
            try item.setValue(row.name, forKey: "name")
            try item.setValue(row.category, forKey: "category")
            try item.setValue(row.number, forKey: "number")
            try item.setValue(row.isEven, forKey: "isEven")
        }
    }
}

/// A Strata store in `store`, filled with `rows`; closed again.
func makeStrataStore(_ store: TemporaryStore, rows: [ItemRow]) throws -> TemporaryStore {
    let coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
    defer { coordinator.close() }
    try strataInsert(rows, into: coordinator.newContext())
    return store
}

let sortedRequest = FetchRequest(entityName: "Item", sortKeys: [.ascending("category"), .ascending("name")])
