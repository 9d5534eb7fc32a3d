internal import Foundation
internal import StrataSQLite

/// One parsed row of an import, by the run's column, kept in place and reused row after row: a
/// number is parsed from the file's bytes into its slot and a string stays a span of the
/// reader's buffer, bound to the statement as it is. No allocation per row or per field (a
/// `String` and an `AttributeValue` per field, and an array per row, were most of what the
/// import spent beside SQLite's work; callgrind).
struct ImportRow {
    enum Kind: UInt8 {
        /// The row does not give this column (a JSON Lines row without the member).
        case absent
        /// No value.
        case null
        /// In ``integers``: an integer type's value, a Bool as 0 or 1, or a to-one's destination key.
        case integer
        /// In ``reals``: a double's, a float's, or a date's seconds since 2001.
        case real
        /// In ``texts``: a string's UTF-8 bytes in the reader's buffer (valid until its next read).
        case text
        /// In ``values``: any other value.
        case value
    }

    private(set) var kinds: [Kind] = []
    var integers: [Int64] = []
    var reals: [Double] = []
    var texts: [UnsafeBufferPointer<UInt8>] = []
    var values: [AttributeValue?] = []

    /// Every column absent, for a row of `count` columns.
    mutating func reset(count: Int) {
        if kinds.count != count {
            kinds = Array(repeating: .absent, count: count)
            integers = Array(repeating: 0, count: count)
            reals = Array(repeating: 0, count: count)
            texts = Array(repeating: UnsafeBufferPointer(start: nil, count: 0), count: count)
            values = Array(repeating: nil, count: count)
        } else {
            for index in 0..<count { kinds[index] = .absent }
        }
    }

    mutating func setNull(_ column: Int) { kinds[column] = .null }
    mutating func setInteger(_ value: Int64, _ column: Int) { kinds[column] = .integer; integers[column] = value }
    mutating func setReal(_ value: Double, _ column: Int) { kinds[column] = .real; reals[column] = value }
    mutating func set(text: UnsafeBufferPointer<UInt8>, _ column: Int) { kinds[column] = .text; texts[column] = text }

    /// Sets a value of attribute type `type` in its cheapest kind.
    mutating func set(_ value: AttributeValue?, _ column: Int) {
        switch value {
        case nil: kinds[column] = .null
        case .int64(let v)?: setInteger(v, column)
        case .int32(let v)?: setInteger(Int64(v), column)
        case .int16(let v)?: setInteger(Int64(v), column)
        case .bool(let v)?: setInteger(v ? 1 : 0, column)
        case .double(let v)?: setReal(v, column)
        case .float(let v)?: setReal(Double(v), column)
        case .date(let v)?: setReal(v.timeIntervalSinceReferenceDate, column)
        case let other?:
            kinds[column] = .value
            values[column] = other
        }
    }

    /// Column `column`'s value as an attribute of type `type` (nil: no value); a rule's check, a
    /// to-one's look-up and an update's row read it this way, never the common insert.
    func value(_ column: Int, as type: AttributeType) -> AttributeValue? {
        switch kinds[column] {
        case .absent, .null: return nil
        case .integer:
            let v = integers[column]
            switch type {
            case .int16: return .int16(Int16(truncatingIfNeeded: v))
            case .int32: return .int32(Int32(truncatingIfNeeded: v))
            case .bool: return .bool(v != 0)
            default: return .int64(v)
            }
        case .real:
            let v = reals[column]
            switch type {
            case .float: return .float(Float(v))
            case .date: return .date(Date(timeIntervalSinceReferenceDate: v))
            default: return .double(v)
            }
        case .text: return .string(String(decoding: texts[column], as: UTF8.self))
        case .value: return values[column]
        }
    }

    /// Binds column `column` to `statement`'s parameter `index` in its stored form.
    @inline(__always)
    func bind(_ column: Int, to statement: Statement, at index: Int32) throws {
        switch kinds[column] {
        case .absent, .null: try statement.bindNull(at: index)
        case .integer: try statement.bind(integers[column], at: index)
        case .real: try statement.bind(reals[column], at: index)
        case .text: try statement.bindBorrowed(texts[column], at: index)
        case .value: try RowSnapshot.bind(values[column], to: statement, at: index)
        }
    }

    /// Whether column `column` equals `statement`'s column `index` as stored (a row read for
    /// an upsert): the same storage class and value (a real also equals an integer of its value).
    @inline(__always)
    func equals(_ column: Int, _ statement: Statement, at index: Int32) -> Bool {
        switch kinds[column] {
        case .absent, .null: return statement.storageClass(at: index) == .null
        case .integer: return statement.storageClass(at: index) == .integer && statement.int64(at: index) == integers[column]
        case .real:
            let stored = statement.storageClass(at: index)
            return (stored == .real || stored == .integer) && statement.double(at: index) == reals[column]
        case .text: return statement.textEquals(texts[column], at: index)
        case .value: return statement.value(at: index) == (values[column]?.storageValue ?? .null)
        }
    }
}

extension ImportRow {
    /// Parses `bytes` (a CSV field; `quoted`: it was in quotes) as a value of `type` into
    /// column `column`: numbers, ISO 8601 dates and ASCII strings straight from the bytes, the
    /// rest through ``ImportJob/parse(_:as:dates:)``. False when the field is not a `type`.
    mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>, quoted: Bool, as type: AttributeType, nullText: [UInt8]?,
                        dates: DateParser, into column: Int) -> Bool {
        if bytes.isEmpty, !quoted || type != .string {
            setNull(column)
            return true
        }
        if let nullText, nullText.count == bytes.count,
           bytes.isEmpty || nullText.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            setNull(column)
            return true
        }
        switch type {
        case .string:
            // ASCII is valid UTF-8 as it is; other bytes go through `String`, which repairs
            // invalid UTF-8 as every other route into a string attribute does.
            if ImportRow.isASCII(bytes) {
                set(text: bytes, column)
                return true
            }
        case .int64, .int32, .int16:
            if let value = ImportRow.integer(bytes) {
                let fits = switch type {
                case .int32: value >= Int64(Int32.min) && value <= Int64(Int32.max)
                case .int16: value >= Int64(Int16.min) && value <= Int64(Int16.max)
                default: true
                }
                if fits {
                    setInteger(value, column)
                    return true
                }
            }
        case .date where !dates.isCustom:
            if let date = DateParser.iso8601(bytes) {
                setReal(date.timeIntervalSinceReferenceDate, column)
                return true
            }
        default:
            break
        }
        guard let value = ImportJob.parse(String(decoding: bytes, as: UTF8.self), as: type, dates: dates) else { return false }
        set(value, column)
        return true
    }

    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var any: UInt8 = 0
        for byte in bytes { any |= byte }
        return any < 0x80
    }

    /// A decimal integer as Swift's `Int64(_:)` reads one (an optional sign, then digits, no
    /// blanks), nil for anything else or past Int64's range.
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var at = 0
        var negative = false
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            negative = bytes[0] == UInt8(ascii: "-")
            at = 1
        }
        guard at < bytes.count else { return nil }
        var value: Int64 = 0
        while at < bytes.count {
            let digit = bytes[at] &- 48
            guard digit < 10 else { return nil }
            // Accumulated negative, so that Int64.min reads.
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = shifted.subtractingReportingOverflow(Int64(digit))
            guard !o1, !o2 else { return nil }
            value = next
            at += 1
        }
        if negative { return value }
        return value == .min ? nil : -value
    }
}
