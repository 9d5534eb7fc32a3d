import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Damage to a real cache file (306 goods in 11 sections, written by a results controller):
/// every truncation and seeded bit flips. Each must be rejected with the reason the format
/// gives for it, never decode to other content and never crash; a sample is also checked end to
/// end (rejected, rebuilt, served again).
///
/// Reproduce a run with `STRATA_CACHE_FUZZ_SEED=<seed>` (the flips' positions and bits; the
/// file's own bytes differ per run by the store's UUID and nonces).
@Suite struct SectionCacheCorruptionTests {
    static let flips = 10_000
    static let seed: UInt64 = ProcessInfo.processInfo.environment["STRATA_CACHE_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0xCAC4_E5EED
    /// Every this many truncation lengths and flips is also checked through a results controller.
    static let truncationStride = 97
    static let flipStride = 500

    @Test func theFixtureFileIsSoundAndLaidOutAsTheFormatSays() throws {
        let fixture = try CacheFixture()
        let file = try SectionCacheFile.decode(fixture.original)
        #expect(file.keys.count == CacheFixture.goodsCount)
        #expect(Set(file.keys).count == CacheFixture.goodsCount)
        #expect(file.sections.count == 11)
        #expect(file.sections.map(\.count).reduce(0, +) == CacheFixture.goodsCount)
        #expect(file.sections.first?.value == .null && file.sections.first?.name == "")
        #expect(file.sections.dropFirst().map(\.name) == CacheFixture.categoryNames)
        #expect(file.keys != file.keys.sorted(), "keys are not sorted within sections: negative deltas are exercised")
        #expect(Set(file.stamp.entities.keys) == ["Good", "Category"])
        #expect(file.request == CanonicalRequest(CacheFixture.sectionedRequest, sectionKeyPath: "category.name"))
        let metadata = try fixture.container.coordinator.metadata()
        #expect(file.stamp == SectionCacheStamp(metadata, entities: ["Good", "Category"]))
        // The hand layout used by the other tests is the library's layout, byte for byte.
        #expect(CacheBytes.file(file) == fixture.original)
        #expect(file.encoded() == fixture.original)
        // A warm open is served and shows what an uncached controller shows.
        let warm = try fixture.fetch()
        #expect(warm.served && warm.rejection == nil && warm.snapshot == fixture.expected)
    }

    @Test func everyTruncationIsRejectedWithItsReason() throws {
        let fixture = try CacheFixture()
        let bytes = [UInt8](fixture.original)
        var wrong: [String] = []
        var reasons: [SectionCacheRejection: Int] = [:]
        for length in 0..<bytes.count {
            let expected = CacheBytes.truncationReason(bytes, length: length)
            let got = rejection { try SectionCacheFile.decode(Data(bytes[..<length])) }
            reasons[got ?? .missing, default: 0] += 1
            if got != expected, wrong.count < 10 { wrong.append("length \(length): \(got.map(\.rawValue) ?? "decoded"), expected \(expected)") }
        }
        #expect(wrong.isEmpty, "\(wrong)")
        #expect(reasons.values.reduce(0, +) == bytes.count)
        #expect(reasons[.truncated, default: 0] > 0 && reasons[.checksumMismatch, default: 0] > 0)
        #expect(reasons.keys.allSatisfy { $0.isCorrupt }, "no truncation decodes")
        print("SectionCacheCorruption: \(bytes.count) truncations (0..<\(bytes.count)) rejected: \(Self.tally(reasons))")

        // End to end, a sample: rejected with the same reason, rebuilt as it was, served again.
        var checked = 0
        for length in stride(from: 0, to: bytes.count, by: Self.truncationStride) {
            try fixture.expectRejected(Data(bytes[..<length]), CacheBytes.truncationReason(bytes, length: length), "truncated to \(length) bytes")
            checked += 1
        }
        #expect(checked == (bytes.count + Self.truncationStride - 1) / Self.truncationStride)
    }

    @Test func seededBitFlipsAreRejectedWithTheirReason() throws {
        let fixture = try CacheFixture()
        let bytes = [UInt8](fixture.original)
        let seed = Self.seed
        print("SectionCacheCorruption: seed \(seed) (STRATA_CACHE_FUZZ_SEED=\(seed) reproduces the flips), \(Self.flips) single-bit flips over \(bytes.count) bytes")
        var wrong: [String] = []
        var reasons: [SectionCacheRejection: Int] = [:]
        var positions = Set<Int>()
        var sample: [(Data, SectionCacheRejection, Int)] = []
        for index in 0..<Self.flips {
            var random = SplitMix64(seed: seed, stream: index)
            let position = random.int(0...(bytes.count - 1))
            var flipped = bytes
            flipped[position] ^= 1 << UInt8(random.int(0...7))
            positions.insert(position)
            let expected = CacheBytes.flipReason(flipped, index: position)
            let got = rejection { try SectionCacheFile.decode(Data(flipped)) }
            reasons[got ?? .missing, default: 0] += 1
            if got != expected, wrong.count < 10 { wrong.append("seed \(seed) case \(index) byte \(position): \(got.map(\.rawValue) ?? "decoded"), expected \(expected)") }
            if index % Self.flipStride == 0 { sample.append((Data(flipped), expected, index)) }
        }
        #expect(wrong.isEmpty, "\(wrong)")
        #expect(reasons.values.reduce(0, +) == Self.flips)
        #expect(reasons.keys.allSatisfy { $0.isCorrupt }, "no flip decodes")
        #expect(positions.count > bytes.count * 9 / 10, "the flips cover the file")
        print("SectionCacheCorruption: flips rejected: \(Self.tally(reasons)), \(positions.count) distinct bytes")

        #expect(sample.count == Self.flips / Self.flipStride)
        for (flipped, reason, index) in sample {
            try fixture.expectRejected(flipped, reason, "seed \(seed) flip case \(index)")
        }
    }

    /// Several bits at once, anywhere: unless the flips cancel out, rejected as corrupt (a CRC32
    /// misses such damage with a probability of 2⁻³², and the header checks come first).
    @Test func seededMultiBitDamageNeverDecodes() throws {
        let fixture = try CacheFixture()
        let bytes = [UInt8](fixture.original)
        let file = fixture.originalFile
        let seed = Self.seed ^ 0x3B17
        var rejected = 0, cancelledOut = 0
        for index in 0..<2_000 {
            var random = SplitMix64(seed: seed, stream: index)
            var damaged = bytes
            for _ in 0..<random.int(2...16) {
                damaged[random.int(0...(bytes.count - 1))] ^= 1 << UInt8(random.int(0...7))
            }
            if damaged == bytes {
                // The flips cancelled out: the file is the original and decodes as such.
                #expect(try SectionCacheFile.decode(Data(damaged)) == file)
                cancelledOut += 1
                continue
            }
            do throws(SectionCacheRejection) {
                let decoded = try SectionCacheFile.decode(Data(damaged))
                Issue.record("seed \(seed) case \(index) decoded to \(decoded == file ? "the same" : "other") content")
            } catch {
                #expect(error.isCorrupt, "seed \(seed) case \(index): \(error)")
                rejected += 1
            }
        }
        #expect(rejected + cancelledOut == 2_000)
    }

    static func tally(_ reasons: [SectionCacheRejection: Int]) -> String {
        reasons.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
}
