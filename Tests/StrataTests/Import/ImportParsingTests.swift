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

/// The CSV reader against a reference reading of the whole text in memory, over random files
/// read in chunks of 1 to 64 bytes, so that the buffer's end meets every place a record can
/// have: inside quotes, on a quote (a `""` split in two), on a `\r\n`, inside a field longer
/// than the buffer.
@Suite struct CSVReaderGeneratorTests {
    /// What the reader must give: RFC 4180 as ``RecordReader`` documents it.
    static func reference(_ bytes: [UInt8]) -> [[String?]] {
        var records: [[String?]] = []
        var at = 0
        while at < bytes.count {
            var fields: [String?] = []
            var field: [UInt8] = []
            var quoted = false, inQuotes = false, closed = false, ended = false
            while at < bytes.count {
                let byte = bytes[at]
                at += 1
                if inQuotes {
                    if byte == 34 {
                        if at < bytes.count, bytes[at] == 34 { field.append(34); at += 1 } else { inQuotes = false; closed = true }
                    } else { field.append(byte) }
                    continue
                }
                if byte == 44 {
                    fields.append(field.isEmpty && !quoted ? nil : String(decoding: field, as: UTF8.self))
                    field = []; quoted = false; closed = false
                } else if byte == 34, field.isEmpty, !quoted, !closed {
                    inQuotes = true; quoted = true
                } else if byte == 10 {
                    ended = true
                    break
                } else {
                    field.append(byte)
                }
            }
            if field.last == 13 { field.removeLast() }
            fields.append(field.isEmpty && !quoted ? nil : String(decoding: field, as: UTF8.self))
            if fields.count == 1, fields[0] == nil { if ended { continue } else { break } }
            records.append(fields)
        }
        return records
    }

    static func randomCSV(_ generator: inout SplitMix64) -> [UInt8] {
        var text: [UInt8] = []
        let alphabet = Array("ab, \"\n\r€x".utf8)
        for _ in 0..<Int.random(in: 1...40, using: &generator) {
            let fields = Int.random(in: 1...5, using: &generator)
            for f in 0..<fields {
                if f > 0 { text.append(44) }
                let length = Int.random(in: 0...(Int.random(in: 0...9, using: &generator) == 0 ? 300 : 6), using: &generator)
                var content: [UInt8] = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
                switch Int.random(in: 0...3, using: &generator) {
                case 0, 1:
                    // Quoted: every quote inside doubled; sometimes bytes after the close.
                    content = content.flatMap { $0 == 34 ? [34, 34] : [$0] }
                    text += [34] + content + [34]
                    if Int.random(in: 0...5, using: &generator) == 0 { text += Array("t\"".utf8) }
                default:
                    // Unquoted: no delimiter, quote at the start or line break inside.
                    content.removeAll { $0 == 44 || $0 == 10 || $0 == 13 }
                    if content.first == 34 { content.removeFirst() }
                    text += content
                }
            }
            switch Int.random(in: 0...5, using: &generator) {
            case 0: text += [13, 10]
            case 1: text += [10, 10]
            default: text += [10]
            }
        }
        if Int.random(in: 0...3, using: &generator) == 0, text.last == 10 { text.removeLast() }
        return text
    }

    @Test func recordsEqualTheReferenceReadAtAnyChunkSize() throws {
        let folder = TemporaryDirectory()
        var generator = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_CSV_SEED"] ?? "") ?? 4_818)
        let files = Int(ProcessInfo.processInfo.environment["STRATA_CSV_FILES"] ?? "") ?? 300
        var records = 0, resumed = 0, longFields = 0, splitEscapes = 0
        for round in 0..<files {
            let bytes = CSVReaderGeneratorTests.randomCSV(&generator)
            let url = folder.file("r\(round).csv")
            try Data(bytes).write(to: url)
            let chunk = [1, 2, 3, 7, 64, 1 << 16][round % 6]
            var reader = try RecordReader(url: url, format: .csv, chunk: chunk)
            var got: [RecordReader.Record] = []
            while let record = try reader.next() { got.append(record) }
            reader.close()
            let expected = CSVReaderGeneratorTests.reference(bytes)
            #expect(got.map(\.fields) == expected, "file \(round), chunk \(chunk): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            records += got.count
            longFields += got.flatMap(\.fields).filter { ($0?.utf8.count ?? 0) > chunk }.count
            for index in 0..<(bytes.count - 1) where bytes[index] == 34 && bytes[index + 1] == 34 && (index + 1) % chunk == 0 { splitEscapes += 1 }
            // Reading on from any record's end (its line as the reader counted it) gives the rest.
            if let middle = got.indices.randomElement(using: &generator), middle + 1 < got.count {
                var rest = try RecordReader(url: url, format: .csv, offset: got[middle].end, line: got[middle + 1].line, chunk: chunk)
                var after: [[String?]] = []
                while let record = try rest.next() { after.append(record.fields) }
                rest.close()
                #expect(after == got[(middle + 1)...].map(\.fields))
                resumed += 1
            }
        }
        print("csv-reader: files=\(files) records=\(records) resumed=\(resumed) fields-longer-than-chunk=\(longFields) escapes-split-by-chunk=\(splitEscapes)")
        #expect(longFields > 0 && splitEscapes > 0)
    }
}
