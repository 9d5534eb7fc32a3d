import Foundation
@testable import StrataSQLite
import Testing

/// Small ASCII strings made from their bytes (``SmallASCII``): the check at first use finds the
/// standard library's layout on this platform (so the fast route is taken, not silently off),
/// and every string made so is the string `String(decoding:as:)` makes, word for word, at every
/// length from 1 to 15; a byte of 0x80 or more is refused.
@Suite struct SmallASCIITests {
    @Test func theLayoutIsFoundHere() {
        #expect(SmallASCII.isAvailable, "64-bit Linux: small ASCII strings are made from their bytes")
    }

    @Test func madeStringsAreTheDecodedOnes() {
        var generator = SystemRandomNumberGenerator()
        var made = 0, refused = 0
        for length in 1...15 {
            for trial in 0..<200 {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...0x7F, using: &generator) }
                // One trial in four puts a non-ASCII byte somewhere.
                if trial % 4 == 0 { bytes[Int.random(in: 0..<length, using: &generator)] = UInt8.random(in: 0x80...0xFF, using: &generator) }
                // A NUL after the bytes, as SQLite's text has; nothing past it is read.
                let words = (bytes + [0]).withUnsafeBufferPointer { SmallASCII.words($0.baseAddress!, count: length) }
                let expected = String(decoding: bytes, as: UTF8.self)
                if bytes.allSatisfy({ $0 < 0x80 }) {
                    guard let words else { Issue.record("ASCII bytes \(bytes) refused"); continue }
                    let string = unsafeBitCast(words, to: String.self)
                    #expect(string == expected && Array(string.utf8) == bytes && string.utf8.count == length)
                    #expect(words == unsafeBitCast(expected, to: (UInt64, UInt64).self), "the very words of the decoded string")
                    made += 1
                } else {
                    #expect(words == nil, "non-ASCII bytes \(bytes) refused")
                    refused += 1
                }
            }
        }
        print("small-ascii: made=\(made) refused=\(refused)")
        #expect(made > 0 && refused > 0)
    }
}
