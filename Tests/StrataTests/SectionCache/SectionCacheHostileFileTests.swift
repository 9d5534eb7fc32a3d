import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Files with a right CRC and a current stamp but hostile field values no Strata writes: they
/// must be rejected without crashing and without allocating for the claimed sizes. (Both crashed
/// the test process before the decoder checked keys and bounded sizes by the body's length.)
@Suite struct SectionCacheHostileFileTests {
    /// Keys below 1 can't be primary keys: `bad-body` (and no overflow computing their span).
    @Test func keysSpanningTheInt64RangeDoNotCrash() throws {
        let fixture = try CacheFixture(request: CacheFixture.byNameRequest, sectionKeyPath: nil)
        var file = fixture.originalFile
        file.keys[0] = .min
        file.keys[1] = .max
        #expect(rejection { try SectionCacheFile.decode(file.encoded()) } == .badBody)
        try fixture.install(file.encoded())
        let result = try fixture.fetch()
        // Keys that can't be primary keys: rejecting the file is the safe outcome.
        #expect(!result.served && result.rejection?.isCorrupt == true)
        #expect(result.snapshot == fixture.expected)
    }

    /// 2³² − 1 sections over a small body: `bad-header`, before any allocation for them.
    @Test func aHugeSectionCountIsRejectedWithoutAllocatingForIt() throws {
        let fixture = try CacheFixture()
        let file = fixture.originalFile
        let data = CacheBytes.file(stamp: file.stamp, request: file.request, sectionCount: Int(UInt32.max), objectCount: file.keys.count,
                                   body: CacheBytes.body(file.sections, file.keys))
        #expect(rejection { try SectionCacheFile.decode(data) }?.isCorrupt == true)
        try fixture.expectRejected(data, nil, "4294967295 sections in the header")
    }
}
