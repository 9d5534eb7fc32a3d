import Foundation
import Testing
@testable import Strata
import StrataTestSupport

/// The import's own readers against Foundation's: dates by hand, CSV records by RFC 4180.
@Suite struct ImportParsingTests {
    @Test func handReadDatesEqualFoundationsISO8601() throws {
        let formatter = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SplitMix64(seed: 48)
        for _ in 0..<2_000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -4e9...6e9, using: &generator).rounded())
            let text = formatter.string(from: date)
            #expect(DateParser.iso8601(text) == date, "\(text)")
            let withMillis = Date(timeIntervalSince1970: date.timeIntervalSince1970 + 0.25)
            #expect(DateParser.iso8601(fractional.string(from: withMillis)) == withMillis)
        }
        #expect(DateParser.iso8601("2013-01-01") == formatter.date(from: "2013-01-01T00:00:00Z"))
        #expect(DateParser.iso8601("2013-01-01T10:00:00+02:00") == formatter.date(from: "2013-01-01T08:00:00Z"))
        #expect(DateParser.iso8601("2013-01-01T10:00:00-0130") == formatter.date(from: "2013-01-01T11:30:00Z"))
        // Impossible dates are refused, never rolled over into the next month or day.
        #expect(DateParser.iso8601("2024-02-29") != nil)
        for bad in ["2013-1-01", "2013-13-01", "2013-01-01T25:00:00Z", "2013-01-01Tx", "yesterday", "2013-01-01T10:00:00Zjunk",
                    "2023-02-29", "2024-02-30T10:00:00Z", "2024-04-31", "2024-01-01T10:61:00Z", "2024-01-01T10:00:60Z",
                    "2024-01-01T10:00:00+99:99", "2024-01-01Tgarbage"] {
            #expect(DateParser.iso8601(bad) == nil, "\(bad)")
        }
    }

    @Test func csvRecordsFollowRFC4180AndEndsAreResumable() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("a.csv")
        let text = "a,b,c\r\n1,\"x, \"\"y\"\"\",\n\n2,\"multi\nline\",\"\"\n3,,z"
        try Data(text.utf8).write(to: url)
        var reader = try RecordReader(url: url, format: .csv)
        var records: [RecordReader.Record] = []
        while let record = try reader.next() { records.append(record) }
        reader.close()
        #expect(records.map(\.fields) == [["a", "b", "c"], ["1", "x, \"y\"", nil], ["2", "multi\nline", ""], ["3", nil, "z"]])
        #expect(records.map(\.line) == [1, 2, 4, 6])
        // Reading again from a record's end gives the records after it.
        var resumed = try RecordReader(url: url, format: .csv, offset: records[1].end, line: 3)
        #expect(try resumed.next()?.fields == ["2", "multi\nline", ""])
        resumed.close()
    }
}
