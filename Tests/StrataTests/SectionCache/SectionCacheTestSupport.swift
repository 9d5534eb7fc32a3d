import Foundation
import Testing
import StrataSQLite
import StrataTestSupport
@testable import Strata

/// What one `performFetch()` of a results controller gave.
struct CacheFetch {
    var served: Bool
    var rejection: SectionCacheRejection?
    var snapshot: FetchedSnapshot
}

/// A store of goods (306 goods: 300 in 10 categories, 6 in none) with the real section cache a
/// results controller wrote for it, and the snapshot an uncached controller gives.
final class CacheFixture {
    static let cacheName = "goods"
    static let goodsCount = 306

    /// Good by category name, then name, sectioned by category name: reads Good and Category.
    static let sectionedRequest = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
    /// Good by name, one section: reads Good only.
    static let byNameRequest = FetchRequest(entityName: "Good", sortKeys: [.ascending("name")])

    let directory: TemporaryDirectory
    let url: URL
    let container: PersistentContainer
    let request: AnyFetchRequest
    let sectionKeyPath: String?
    let cacheURL: URL
    /// The bytes of the cache file the controller wrote at its cold fetch.
    let original: Data
    /// The snapshot of a controller without a cache name.
    let expected: FetchedSnapshot

    init(request: AnyFetchRequest = CacheFixture.sectionedRequest, sectionKeyPath: String? = "category.name") throws {
        directory = TemporaryDirectory("strata-cache")
        url = directory.file("goods.sqlite")
        do {
            let seeding = try PersistentContainer(model: TestModels.goods(), url: url)
            try CacheFixture.seed(seeding)
            seeding.coordinator.close()
        }
        container = try PersistentContainer(model: TestModels.goods(), url: url)
        self.request = request
        self.sectionKeyPath = sectionKeyPath
        cacheURL = try container.coordinator.sectionCaches!.url(forCacheNamed: CacheFixture.cacheName)
        expected = try CacheFixture.fetch(container, request, sectionKeyPath: sectionKeyPath, cacheName: nil).snapshot
        let cold = try CacheFixture.fetch(container, request, sectionKeyPath: sectionKeyPath, cacheName: CacheFixture.cacheName)
        #expect(!cold.served && cold.rejection == .missing && cold.snapshot == expected)
        original = try Data(contentsOf: cacheURL)
    }

    deinit { container.coordinator.close() }

    /// The decoded original file.
    var originalFile: SectionCacheFile { try! SectionCacheFile.decode(original) }

    /// A fetch by a new controller with the cache name (`cached`) or without; waits for the
    /// cache write it scheduled.
    func fetch(cached: Bool = true) throws -> CacheFetch {
        try CacheFixture.fetch(container, request, sectionKeyPath: sectionKeyPath, cacheName: cached ? CacheFixture.cacheName : nil)
    }

    /// Puts `bytes` at the cache's final path (replacing whatever is there).
    func install(_ bytes: Data) throws {
        try? FileManager.default.removeItem(at: cacheURL)
        try bytes.write(to: cacheURL)
    }

    /// Installs `bytes`, opens a controller and checks it rejects them with `reason` (any corrupt
    /// reason when `nil`), shows what an uncached controller shows, rewrites the cache exactly as
    /// it was, and that a second controller is served from it.
    func expectRejected(_ bytes: Data, _ reason: SectionCacheRejection?, _ comment: Comment? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        try install(bytes)
        let first = try fetch()
        #expect(!first.served, comment, sourceLocation: sourceLocation)
        if let reason {
            #expect(first.rejection == reason, comment, sourceLocation: sourceLocation)
        } else {
            #expect(first.rejection?.isCorrupt == true, comment, sourceLocation: sourceLocation)
        }
        #expect(first.snapshot == expected, comment, sourceLocation: sourceLocation)
        #expect((try? Data(contentsOf: cacheURL)) == original, "the cache is rewritten as it was", sourceLocation: sourceLocation)
        let second = try fetch()
        #expect(second.served && second.rejection == nil && second.snapshot == expected, comment, sourceLocation: sourceLocation)
    }

    /// Installs `bytes` and checks a controller is served from them, leaving them in place.
    func expectServed(_ bytes: Data, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try install(bytes)
        let result = try fetch()
        #expect(result.served && result.rejection == nil, comment, sourceLocation: sourceLocation)
        #expect(result.snapshot == expected, comment, sourceLocation: sourceLocation)
        #expect((try? Data(contentsOf: cacheURL)) == bytes, "a served cache is not rewritten", sourceLocation: sourceLocation)
    }

    static func fetch(_ container: PersistentContainer, _ request: AnyFetchRequest, sectionKeyPath: String?,
                      cacheName: String?) throws -> CacheFetch {
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: container.mainContext,
                                                  sectionNameKeyPath: sectionKeyPath, cacheName: cacheName)
        let result = try container.mainContext.performAndWait {
            try controller.performFetch()
            return CacheFetch(served: controller.cacheStatus == .served, rejection: controller.cacheStatus.rejection, snapshot: controller.snapshot)
        }
        container.coordinator.waitForCacheWrites()
        return result
    }

    static let categoryNames = ["Bakery", "Dairy", "Fish", "Fruit", "Grains", "Meat", "Pantry", "Spices", "Sweets", "Vegetables"]

    /// 10 categories, 300 goods spread over them at random (fixed seed), 6 goods without one;
    /// goods are inserted in an order unrelated to their sections, so keys are not sorted
    /// within a section.
    static func seed(_ container: PersistentContainer) throws {
        var random = SplitMix64(seed: 0x5EC7_10CA)
        let update = container.newUpdateContext()
        try update.performAndWait {
            var categories: [ManagedObject] = []
            for name in random.sample(categoryNames, categoryNames.count) {
                let category = try update.insert("Category")
                try category.setValue(name, forKey: "name")
                categories.append(category)
            }
            for index in 0..<goodsCount {
                let good = try update.insert("Good")
                try good.setValue("good \(random.int(0...99_999))", forKey: "name")
                try good.setValue(Int64(index), forKey: "number")
                if index % 51 != 50 { try good.setValue(random.pick(categories), forKey: "category") }
            }
            _ = try update.saveToStore()
        }
    }
}

/// Cache file bytes built by hand, the way `SectionCacheFile.encoded()` lays them out, so that
/// one field at a time can be wrong while the CRC is right.
enum CacheBytes {
    /// `bytes` with the trailing CRC32 recomputed over everything before it.
    static func withFixedCRC(_ data: Data) -> Data {
        var bytes = [UInt8](data)
        let crc = Zlib.crc32(bytes[..<(bytes.count - 4)])
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((bytes.count - 4)..., with: $0) }
        return Data(bytes)
    }

    /// The uncompressed body of `sections` and `keys` (zigzag deltas).
    /// A body laid out by hand: sections, keys, then (format version 2) the stamps' flag and
    /// runs (`stamps`, or the flag 0 for none; `version` 1: nothing after the keys).
    static func body(_ sections: [SectionCacheSection], _ keys: [Int64], stamps: [UInt32]? = nil,
                     version: UInt16 = SectionCacheFile.formatVersion) -> [UInt8] {
        var body = ByteWriter()
        for section in sections {
            body.value(section.value)
            body.string32(section.name)
            if let title = section.indexTitle {
                body.u8(1)
                body.string32(title)
            } else {
                body.u8(0)
            }
            body.varint(UInt64(section.count))
        }
        var previous: Int64 = 0
        for key in keys {
            let delta = key &- previous
            body.varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            previous = key
        }
        guard version >= 2 else { return body.bytes }
        guard let stamps else {
            body.u8(0)
            return body.bytes
        }
        body.u8(1)
        var runs: [(Int, UInt32)] = []
        for stamp in stamps {
            if let last = runs.last, last.1 == stamp { runs[runs.count - 1].0 += 1 } else { runs.append((1, stamp)) }
        }
        body.varint(UInt64(runs.count))
        for (length, stamp) in runs {
            body.varint(UInt64(length))
            body.u32(stamp)
        }
        return body.bytes
    }

    /// A whole file: the header fields as given (lengths default to the true ones), `compressed`
    /// (default: `body` deflated), a correct CRC.
    static func file(stamp: SectionCacheStamp, request: CanonicalRequest, sectionCount: Int, objectCount: Int,
                     body: [UInt8], bodyLength: Int? = nil, compressed: [UInt8]? = nil, version: UInt16 = SectionCacheFile.formatVersion) -> Data {
        let compressed = compressed ?? Zlib.deflate(body)
        var header = ByteWriter()
        withUnsafeBytes(of: stamp.storeUUID.uuid) { header.bytes.append(contentsOf: $0) }
        header.i64(stamp.generation)
        header.bytes8(stamp.nonce)
        header.string16(stamp.modelHash)
        header.string32(request.json)
        header.u16(UInt16(stamp.entities.count))
        for name in stamp.entities.keys.sorted() {
            header.string16(name)
            header.i64(stamp.entities[name]!.generation)
            header.bytes8(stamp.entities[name]!.nonce)
        }
        header.u32(UInt32(sectionCount))
        header.u64(UInt64(objectCount))
        header.u32(UInt32(bodyLength ?? body.count))
        header.u32(UInt32(compressed.count))
        var file = ByteWriter()
        file.bytes.append(contentsOf: SectionCacheFile.magic)
        file.u16(version)
        file.u16(0)
        file.u32(UInt32(header.bytes.count))
        file.bytes.append(contentsOf: header.bytes)
        file.bytes.append(contentsOf: compressed)
        file.u32(Zlib.crc32(file.bytes))
        return Data(file.bytes)
    }

    /// `file` laid out by hand from its parts.
    static func file(_ file: SectionCacheFile) -> Data {
        CacheBytes.file(stamp: file.stamp, request: file.request, sectionCount: file.sections.count, objectCount: file.keys.count,
                        body: body(file.sections, file.keys, stamps: file.expandedStamps()))
    }

    /// The header length field of a file (bytes 12..<16).
    static func headerLength(_ bytes: [UInt8]) -> Int {
        bytes[12..<16].reversed().reduce(0) { ($0 << 8) | Int($1) }
    }

    /// The reason `SectionCacheFile.decode` must give for the first `length` bytes of a sound file.
    static func truncationReason(_ original: [UInt8], length: Int) -> SectionCacheRejection {
        guard length >= 20 else { return .truncated }
        return 16 + headerLength(original) + 4 > length ? .truncated : .checksumMismatch
    }

    /// The reason `SectionCacheFile.decode` must give for a sound file with one bit flipped at `index`.
    static func flipReason(_ flipped: [UInt8], index: Int) -> SectionCacheRejection {
        switch index {
        case 0..<8: .badMagic
        case 8..<10: .unsupportedVersion
        case 10..<12: .badHeader
        case 12..<16: 16 + headerLength(flipped) + 4 > flipped.count ? .truncated : .checksumMismatch
        default: .checksumMismatch
        }
    }
}

/// The rejection `body` throws, or `nil` when it returns (any other error is an issue).
func rejection<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> SectionCacheRejection? {
    do {
        _ = try body()
        return nil
    } catch let error as SectionCacheRejection {
        return error
    } catch {
        Issue.record("not a SectionCacheRejection: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The `SectionCacheError` `body` throws, or `nil` when it returns (any other error is an issue).
func cacheError<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> SectionCacheError? {
    do {
        _ = try body()
        return nil
    } catch let error as SectionCacheError {
        return error
    } catch {
        Issue.record("not a SectionCacheError: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The names in `folder` (none when it does not exist), sorted.
func folderContents(_ folder: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
}
