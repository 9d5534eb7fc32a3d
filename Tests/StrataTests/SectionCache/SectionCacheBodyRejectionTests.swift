import Foundation
import Testing
import StrataSQLite
import StrataTestSupport
@testable import Strata

/// Files with a sound header, a valid CRC and a current stamp whose body is wrong: a broken zlib
/// stream, section counts that do not sum to the ID count, duplicate IDs, sections out of order
/// or malformed. Each is rejected with its reason code and rebuilt.
@Suite struct SectionCacheBodyRejectionTests {
    /// `file`'s header with `body` (or its own body), lengths and compressed bytes as given.
    static func crafted(_ file: SectionCacheFile, body: [UInt8]? = nil, sectionCount: Int? = nil, objectCount: Int? = nil,
                        bodyLength: Int? = nil, compressed: [UInt8]? = nil) -> Data {
        CacheBytes.file(stamp: file.stamp, request: file.request, sectionCount: sectionCount ?? file.sections.count,
                        objectCount: objectCount ?? file.keys.count, body: body ?? CacheBytes.body(file.sections, file.keys, stamps: file.expandedStamps()),
                        bodyLength: bodyLength, compressed: compressed)
    }

    @Test func aValidCRCOverABrokenZlibStreamIsInflateFailed() throws {
        let fixture = try CacheFixture()
        let file = fixture.originalFile
        let body = CacheBytes.body(file.sections, file.keys)
        let stream = Zlib.deflate(body)
        #expect(Zlib.inflate(stream[...], expectedLength: body.count) == body)
        var random = SplitMix64(seed: 0x21B)

        var cases: [(String, Data)] = []
        // The real file, one byte of its compressed part changed, CRC recomputed.
        let range = try SectionCacheFile.header(of: fixture.original).compressedRange
        for (label, offset, mask) in [("zlib header", 0, UInt8(0xFF)), ("deflate data", (range.count - 4) / 2, 0x55),
                                      ("adler32", range.count - 1, 0x01)] {
            var bytes = [UInt8](fixture.original)
            bytes[range.lowerBound + offset] ^= mask
            cases.append(("real file, \(label) changed", CacheBytes.withFixedCRC(Data(bytes))))
        }
        cases.append(("random bytes", Self.crafted(file, compressed: (0..<200).map { _ in UInt8(truncatingIfNeeded: random.next()) })))
        cases.append(("the body stored raw", Self.crafted(file, compressed: body)))
        cases.append(("no compressed bytes", Self.crafted(file, compressed: [])))
        cases.append(("the stream cut short", Self.crafted(file, compressed: Array(stream.dropLast(5)))))
        cases.append(("body length + 1", Self.crafted(file, bodyLength: body.count + 1)))
        cases.append(("body length - 1", Self.crafted(file, bodyLength: body.count - 1)))
        cases.append(("body length 0", Self.crafted(file, bodyLength: 0)))
        // Lengths the header itself rules out (fewer body bytes than keys; more inflated bytes
        // than 1032 per compressed byte): refused as `bad-header` before inflating anything.
        let headerBound: Set<String> = ["no compressed bytes", "body length 0"]
        for (label, bytes) in cases {
            let expected: SectionCacheRejection = headerBound.contains(label) ? .badHeader : .inflateFailed
            if expected == .inflateFailed {
                #expect(rejection { try SectionCacheFile.header(of: bytes) } == nil, "the header and CRC are sound: \(label)")
            }
            #expect(rejection { try SectionCacheFile.decode(bytes) } == expected, Comment(rawValue: label))
            try fixture.expectRejected(bytes, expected, Comment(rawValue: label))
        }
    }

    @Test func countsThatDoNotSumAreCountMismatch() throws {
        let fixture = try CacheFixture()
        let sound = fixture.originalFile
        var cases: [(String, Data)] = []
        var oneMore = sound
        oneMore.sections[0].count += 1
        cases.append(("a section one too many", oneMore.encoded()))
        var keyDropped = sound
        keyDropped.keys.removeLast()
        cases.append(("the last ID missing", keyDropped.encoded()))
        var empty = sound
        empty.sections.insert(SectionCacheSection(value: .text("Baker"), name: "Baker", indexTitle: "B", count: 0), at: 1)
        cases.append(("an empty section", empty.encoded()))
        var huge = sound
        huge.sections[2].count = sound.keys.count + 5
        cases.append(("a section larger than the whole", huge.encoded()))
        cases.append(("header section count one short", Self.crafted(sound, sectionCount: sound.sections.count - 1)))
        cases.append(("header object count one more", Self.crafted(sound, objectCount: sound.keys.count + 1)))
        for (label, bytes) in cases {
            #expect(rejection { try SectionCacheFile.decode(bytes) } == .countMismatch, Comment(rawValue: label))
            try fixture.expectRejected(bytes, .countMismatch, Comment(rawValue: label))
        }
    }

    @Test func duplicateIDsAreDuplicateIDs() throws {
        let fixture = try CacheFixture()
        let sound = fixture.originalFile
        var adjacent = sound
        adjacent.keys[1] = adjacent.keys[0]
        var acrossSections = sound
        acrossSections.keys[acrossSections.keys.count - 1] = acrossSections.keys[0]
        var allSame = sound
        allSame.keys = Array(repeating: 42, count: sound.keys.count)
        for (label, file) in [("adjacent", adjacent), ("first and last section", acrossSections), ("all the same", allSame)] {
            let bytes = file.encoded()
            #expect(rejection { try SectionCacheFile.decode(bytes) } == .duplicateIDs, Comment(rawValue: label))
            try fixture.expectRejected(bytes, .duplicateIDs, Comment(rawValue: label))
        }
    }

    /// `file` with sections `order` (indices into its sections), each keeping its own IDs.
    static func reordered(_ file: SectionCacheFile, _ order: [Int]) -> SectionCacheFile {
        var starts: [Int] = []
        var offset = 0
        for section in file.sections {
            starts.append(offset)
            offset += section.count
        }
        var result = file
        result.sections = order.map { file.sections[$0] }
        result.keys = order.flatMap { file.keys[starts[$0]..<(starts[$0] + file.sections[$0].count)] }
        return result
    }

    /// Decoding accepts any section order (it does not know the request's order); the
    /// controller requires the order of the first sort key, strictly increasing.
    @Test func sectionsOutOfOrderAreBadBody() throws {
        let fixture = try CacheFixture()
        let sound = fixture.originalFile
        let all = Array(sound.sections.indices)
        #expect(Self.reordered(sound, all) == sound)
        var split = sound
        split.sections[3].count -= 1
        split.sections.insert(SectionCacheSection(value: sound.sections[3].value, name: sound.sections[3].name,
                                                  indexTitle: sound.sections[3].indexTitle, count: 1), at: 4)
        let cases: [(String, SectionCacheFile)] = [
            ("two neighbours swapped", Self.reordered(sound, [0, 2, 1] + all.dropFirst(3))),
            ("reversed", Self.reordered(sound, all.reversed())),
            ("the nil section last", Self.reordered(sound, Array(all.dropFirst()) + [0])),
            ("one value in two sections", split),
        ]
        for (label, file) in cases {
            let bytes = file.encoded()
            #expect(try SectionCacheFile.decode(bytes) == file, "decodes: \(label)")
            try fixture.expectRejected(bytes, .badBody, Comment(rawValue: label))
        }
    }

    @Test func malformedBodiesAreBadBody() throws {
        let fixture = try CacheFixture()
        let sound = fixture.originalFile
        let body = CacheBytes.body(sound.sections, sound.keys)
        // The first section is the nil one: tag 0, empty name, title flag 1, title "#".
        #expect(Array(body.prefix(11)) == [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, UInt8(ascii: "#")])
        var cases: [(String, [UInt8], Int?)] = []
        cases.append(("a byte after the last ID", body + [0], nil))
        var tag = body
        tag[0] = 9
        cases.append(("an unknown value tag", tag, nil))
        var flag = body
        flag[5] = 2
        cases.append(("a title flag of 2", flag, nil))
        var title = body
        title[10] = 0xFF
        cases.append(("a title that is not UTF-8", title, nil))
        var length = body
        length[4] = 0x7F
        cases.append(("a name longer than the body", length, nil))
        // Sections that sum to one more ID than the body holds.
        var short = sound
        short.sections[0].count += 1
        cases.append(("IDs run out", CacheBytes.body(short.sections, sound.keys), sound.keys.count + 1))
        // A varint longer than 64 bits where the last ID should be.
        let unterminated = CacheBytes.body(sound.sections, Array(sound.keys.dropLast())) + Array(repeating: 0xFF, count: 10) + [0x01]
        cases.append(("an over-long varint", unterminated, nil))
        for (label, bytes, objectCount) in cases {
            let data = Self.crafted(sound, body: bytes, objectCount: objectCount)
            #expect(rejection { try SectionCacheFile.decode(data) } == .badBody, Comment(rawValue: label))
            try fixture.expectRejected(data, .badBody, Comment(rawValue: label))
        }
    }

    /// An unsectioned controller's file holds one section, of value nil.
    @Test func anUnsectionedCacheWithSectionsIsBadBody() throws {
        let fixture = try CacheFixture(request: CacheFixture.byNameRequest, sectionKeyPath: nil)
        let sound = fixture.originalFile
        #expect(sound.sections == [SectionCacheSection(value: .null, name: "", indexTitle: nil, count: CacheFixture.goodsCount)])
        var two = sound
        two.sections = [SectionCacheSection(value: .null, name: "", indexTitle: nil, count: 100),
                        SectionCacheSection(value: .null, name: "", indexTitle: nil, count: CacheFixture.goodsCount - 100)]
        try fixture.expectRejected(two.encoded(), .badBody, "two nil sections")
        var valued = sound
        valued.sections[0].value = .text("")
        try fixture.expectRejected(valued.encoded(), .badBody, "one section with a value")
        var none = sound
        none.sections = []
        try fixture.expectRejected(none.encoded(), .countMismatch, "no section, all the IDs")
    }

    /// A request that matches nothing: a file of no section and no ID (an empty zlib body),
    /// served as such.
    @Test func anEmptyResultIsCachedAndServed() throws {
        let request = FetchRequest(entityName: "Good", predicate: try Condition("number < 0"),
                                   sortKeys: [.ascending("category.name"), .ascending("name")])
        let fixture = try CacheFixture(request: request, sectionKeyPath: "category.name")
        #expect(fixture.expected.sections.isEmpty)
        #expect(fixture.originalFile.sections.isEmpty && fixture.originalFile.keys.isEmpty)
        try fixture.expectServed(fixture.original, "empty")
        var phantom = fixture.originalFile
        phantom.keys = [1]
        try fixture.expectRejected(phantom.encoded(), .countMismatch, "an ID without a section")
    }
}
