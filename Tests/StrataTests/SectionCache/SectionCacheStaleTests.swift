import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Files whose header is wrong in one field: magic, version, reserved field, CRC, and (with a
/// valid CRC) the stamp's store UUID, generations, nonces, model and the request. Each must be
/// rejected with its reason code and rebuilt; a changed global generation or nonce alone must
/// not be (by design).
///
/// The controller validates in this order: the header (magic, version, reserved field, length,
/// CRC, fields), the request, then the stamp (`SectionCacheStamp.staleness`: store UUID, model
/// hash, set of entities read, each entity's generation and nonce), and only then the body.
@Suite struct SectionCacheStaleTests {
    @Test func wrongMagicIsBadMagic() throws {
        let fixture = try CacheFixture()
        var bytes = [UInt8](fixture.original)
        bytes[7] = UInt8(ascii: "D")
        try fixture.expectRejected(Data(bytes), .badMagic, "STRATASD")
        // The magic is checked before the CRC: a right CRC does not help.
        try fixture.expectRejected(CacheBytes.withFixedCRC(Data(bytes)), .badMagic, "STRATASD, CRC fixed")
        // The store file itself in the cache's place (a mix-up a user could make).
        try fixture.expectRejected(try Data(contentsOf: fixture.url), .badMagic, "the SQLite store file")
        // Short files: 8 to 19 bytes with another magic are bad-magic, with this magic truncated.
        try fixture.expectRejected(Data("not a cache, no".utf8), .badMagic, "15 bytes of text")
        try fixture.expectRejected(Data(fixture.original.prefix(19)), .truncated, "the first 19 bytes")
        try fixture.expectRejected(Data("STRATAS".utf8), .truncated, "7 bytes of the magic")
    }

    @Test func anUnsupportedVersionIsRejectedBeforeTheCRC() throws {
        let fixture = try CacheFixture()
        for version: UInt16 in [0, 3, 0x0100, .max] {
            var bytes = [UInt8](fixture.original)
            bytes[8] = UInt8(version & 0xFF)
            bytes[9] = UInt8(version >> 8)
            #expect(rejection { try SectionCacheFile.decode(Data(bytes)) } == .unsupportedVersion)
            try fixture.expectRejected(Data(bytes), .unsupportedVersion, "version \(version), CRC of version 1")
            try fixture.expectRejected(CacheBytes.withFixedCRC(Data(bytes)), .unsupportedVersion, "version \(version), CRC fixed")
        }
        // A whole file of version 3, laid out by hand.
        let file = fixture.originalFile
        let v3 = CacheBytes.file(stamp: file.stamp, request: file.request, sectionCount: file.sections.count, objectCount: file.keys.count,
                                 body: CacheBytes.body(file.sections, file.keys), version: 3)
        try fixture.expectRejected(v3, .unsupportedVersion, "a version 3 file")
    }

    @Test func aNonZeroReservedFieldIsBadHeaderAndADamagedByteIsAChecksumMismatch() throws {
        let fixture = try CacheFixture()
        var reserved = [UInt8](fixture.original)
        reserved[10] = 1
        try fixture.expectRejected(CacheBytes.withFixedCRC(Data(reserved)), .badHeader, "reserved field 1, CRC fixed")
        // A header length that runs past the end of the file, CRC fixed: truncated.
        var long = [UInt8](fixture.original)
        long[15] = 0x7F
        try fixture.expectRejected(CacheBytes.withFixedCRC(Data(long)), .truncated, "header length past the end")
        // A header length that ends inside the header, CRC fixed: the fields don't line up.
        var short = [UInt8](fixture.original)
        #expect(short[12] > 0)
        short[12] &-= 1
        try fixture.expectRejected(CacheBytes.withFixedCRC(Data(short)), .badHeader, "header length one short")
        // One byte of the body changed, old CRC.
        var damaged = [UInt8](fixture.original)
        damaged[damaged.count - 10] ^= 0x10
        try fixture.expectRejected(Data(damaged), .checksumMismatch, "a body byte, old CRC")
        // The CRC itself changed.
        var crc = [UInt8](fixture.original)
        crc[crc.count - 1] ^= 0x80
        try fixture.expectRejected(Data(crc), .checksumMismatch, "the CRC's last byte")
        // Request JSON that is not a request (valid CRC, every length right).
        let json = fixture.originalFile.request.json
        let bogus = Data(fixture.original).replacing(Data(json.utf8), with: Data(json.replacingOccurrences(of: "\"entity\"", with: "\"entitY\"").utf8))
        #expect(bogus.count == fixture.original.count && bogus != fixture.original)
        try fixture.expectRejected(CacheBytes.withFixedCRC(bogus), .badHeader, "request JSON without an entity")
    }

    @Test func anotherStoresCacheIsOtherStore() throws {
        let fixture = try CacheFixture()
        var file = fixture.originalFile
        file.stamp.storeUUID = UUID()
        try fixture.expectRejected(file.encoded(), .otherStore, "another store UUID")
        // A real cache of another store of the same model and content (its own UUID and nonces).
        let other = try CacheFixture()
        #expect(other.originalFile.stamp.storeUUID != fixture.originalFile.stamp.storeUUID)
        try fixture.expectRejected(other.original, .otherStore, "another store's cache file")
    }

    @Test func anotherModelsCacheIsOtherModel() throws {
        let fixture = try CacheFixture()
        var file = fixture.originalFile
        file.stamp.modelHash = String(file.stamp.modelHash.reversed())
        try fixture.expectRejected(file.encoded(), .otherModel, "another model hash")
        file.stamp.modelHash = ""
        try fixture.expectRejected(file.encoded(), .otherModel, "an empty model hash")
    }

    @Test func anotherRequestsCacheIsOtherRequest() throws {
        let fixture = try CacheFixture()
        let canonical = fixture.originalFile.request
        var variants: [(String, CanonicalRequest)] = []
        var descending = canonical
        descending.sortKeys[1].ascending = false
        variants.append(("name descending", descending))
        var folded = canonical
        folded.sortKeys[1].comparison = SortKey.Comparison.caseInsensitive.rawValue
        variants.append(("name case-insensitive", folded))
        var predicate = canonical
        predicate.predicate = "number > 5"
        variants.append(("a predicate", predicate))
        var limit = canonical
        limit.fetchLimit = 10
        variants.append(("a fetch limit", limit))
        var offset = canonical
        offset.fetchOffset = 1
        variants.append(("a fetch offset", offset))
        var unsectioned = canonical
        unsectioned.sectionKeyPath = nil
        variants.append(("no section key", unsectioned))
        var entity = canonical
        entity.entity = "Category"
        variants.append(("another entity", entity))
        for (label, request) in variants {
            var file = fixture.originalFile
            file.request = request
            try fixture.expectRejected(file.encoded(), .otherRequest, Comment(rawValue: label))
        }
        // The stamp covers another set of entities than the request reads.
        var fewer = fixture.originalFile
        fewer.stamp.entities["Category"] = nil
        try fixture.expectRejected(fewer.encoded(), .otherRequest, "stamp without Category")
        var more = fixture.originalFile
        more.stamp.entities["Ghost"] = SectionCacheStamp.EntityStamp(generation: 1, nonce: Data([1]))
        try fixture.expectRejected(more.encoded(), .otherRequest, "stamp with an extra entity")

        // The batch size is not part of the request a cache answers: served.
        var batched = CacheFixture.sectionedRequest
        batched.fetchBatchSize = 25
        #expect(CanonicalRequest(batched, sectionKeyPath: "category.name") == canonical)
        try fixture.install(fixture.original)
        let served = try CacheFixture.fetch(fixture.container, batched, sectionKeyPath: "category.name", cacheName: CacheFixture.cacheName)
        #expect(served.served && served.snapshot == fixture.expected)
    }

    @Test func changedEntityStampsAreEntityChanged() throws {
        let fixture = try CacheFixture()
        let good = fixture.originalFile.stamp.entities["Good"]!
        let category = fixture.originalFile.stamp.entities["Category"]!
        #expect(good.generation == 1 && category.generation == 1 && good.nonce.count == 16 && good.nonce == category.nonce)
        let cases: [(String, String, SectionCacheStamp.EntityStamp)] = [
            ("Good generation + 1", "Good", .init(generation: good.generation + 1, nonce: good.nonce)),
            ("Good generation - 1", "Good", .init(generation: good.generation - 1, nonce: good.nonce)),
            ("Good nonce changed", "Good", .init(generation: good.generation, nonce: Data(good.nonce.reversed()))),
            ("Good nonce empty", "Good", .init(generation: good.generation, nonce: Data())),
            ("Category nonce changed", "Category", .init(generation: category.generation, nonce: Data(repeating: 7, count: 16))),
            // A lost commit's generation reused by the next one: same generation, another nonce.
            ("Category generation reused", "Category", .init(generation: category.generation, nonce: Data(count: 16))),
        ]
        for (label, entity, stamp) in cases {
            var file = fixture.originalFile
            file.stamp.entities[entity] = stamp
            try fixture.expectRejected(file.encoded(), .entityChanged, Comment(rawValue: label))
        }
    }

    /// The global generation and nonce are written to the file but not compared: every commit
    /// bumps them, including commits to entities the request does not read, which must leave the
    /// cache valid. What decides is the per-entity stamp (generation and nonce of the commit that
    /// last wrote each entity the request reads); a changed global stamp with unchanged
    /// per-entity stamps is therefore served.
    @Test func aChangedGlobalGenerationOrNonceAloneIsNotStale() throws {
        let fixture = try CacheFixture()
        for generation: Int64 in [0, fixture.originalFile.stamp.generation + 1, .max, -1] {
            var file = fixture.originalFile
            file.stamp.generation = generation
            try fixture.expectServed(file.encoded(), "global generation \(generation)")
        }
        var file = fixture.originalFile
        file.stamp.nonce = Data(repeating: 0xA5, count: 16)
        try fixture.expectServed(file.encoded(), "another global nonce")
        file.stamp.nonce = Data()
        file.stamp.generation += 7
        try fixture.expectServed(file.encoded(), "no global nonce, another generation")
    }

    @Test func theFirstFailingCheckNamesTheReason() throws {
        let fixture = try CacheFixture()
        let sound = fixture.originalFile
        // A corrupt header wins over a stale stamp.
        var staleAndDamaged = sound
        staleAndDamaged.stamp.storeUUID = UUID()
        var damaged = [UInt8](staleAndDamaged.encoded())
        damaged[30] ^= 1
        try fixture.expectRejected(Data(damaged), .checksumMismatch, "wrong UUID, broken CRC")
        // The request before the stamp.
        var requestAndStore = sound
        requestAndStore.request.fetchLimit = 3
        requestAndStore.stamp.storeUUID = UUID()
        try fixture.expectRejected(requestAndStore.encoded(), .otherRequest, "wrong request and UUID")
        // UUID, then model, then the entity set, then the entity stamps.
        var storeAndModel = sound
        storeAndModel.stamp.storeUUID = UUID()
        storeAndModel.stamp.modelHash = "x"
        try fixture.expectRejected(storeAndModel.encoded(), .otherStore, "wrong UUID and model")
        var modelAndEntities = sound
        modelAndEntities.stamp.modelHash = "x"
        modelAndEntities.stamp.entities["Category"] = nil
        try fixture.expectRejected(modelAndEntities.encoded(), .otherModel, "wrong model and entity set")
        var entitiesAndGeneration = sound
        entitiesAndGeneration.stamp.entities["Category"] = nil
        entitiesAndGeneration.stamp.entities["Good"]!.generation += 1
        try fixture.expectRejected(entitiesAndGeneration.encoded(), .otherRequest, "wrong entity set and Good generation")
        // A stale file's body is not read: a broken body behind a stale stamp reports the staleness.
        var staleWithDuplicates = sound
        staleWithDuplicates.stamp.entities["Good"]!.generation += 1
        staleWithDuplicates.keys[1] = staleWithDuplicates.keys[0]
        try fixture.expectRejected(staleWithDuplicates.encoded(), .entityChanged, "stale, duplicate IDs")
        var staleWithBrokenStream = [UInt8](staleWithDuplicates.encoded())
        let range = try SectionCacheFile.header(of: Data(staleWithBrokenStream)).compressedRange
        staleWithBrokenStream[range.upperBound - 1] ^= 0xFF
        try fixture.expectRejected(CacheBytes.withFixedCRC(Data(staleWithBrokenStream)), .entityChanged, "stale, broken zlib stream")
    }
}
