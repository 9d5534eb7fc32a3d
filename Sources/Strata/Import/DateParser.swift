internal import Foundation

/// Dates in an import: ISO 8601 (with or without fractional seconds; a date alone is its UTC
/// midnight), read strictly by hand (an impossible date is refused, never rolled over), or a
/// `DateFormatter` format (not lenient).
// @unchecked Sendable because the formatter is only read, by one import at a time: an ImportJob
// is not shared between threads.
struct DateParser: @unchecked Sendable {
    private let custom: DateFormatter?

    init(format: String?) {
        custom = format.map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            formatter.isLenient = false
            return formatter
        }
    }

    /// Whether dates are read by a `--date-format` (not ISO 8601).
    var isCustom: Bool { custom != nil }

    func parse(_ text: String) -> Date? {
        if let custom { return custom.date(from: text) }
        return DateParser.iso8601(text)
    }

    /// `YYYY-MM-DD`, optionally `THH:MM:SS`, `.fraction`, and `Z` or `±HH:MM`, read by hand:
    /// Foundation's formatter on Linux costs tens of microseconds a date (ICU set-up per call).
    /// `nil` for anything else (the formatters then try).
    static func iso8601(_ text: String) -> Date? {
        var text = text
        // A native string's bytes are contiguous: read them by integer index (a walk over a
        // `Substring.UTF8View` and a month table made per call were 4 µs a date).
        return text.withUTF8 { iso8601($0) }
    }

    private static let monthLengths: [Int] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    static func iso8601(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var at = 0
        let end = bytes.count
        func digits(_ count: Int) -> Int? {
            guard end - at >= count else { return nil }
            var value = 0
            for i in at..<(at + count) {
                let byte = bytes[i]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            at += count
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard at < end, bytes[at] == byte else { return false }
            at += 1
            return true
        }
        guard let year = digits(4), take(45), let month = digits(2), take(45), let day = digits(2),
              (1...12).contains(month) else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let length = month == 2 && leap ? 29 : monthLengths[month - 1]
        guard (1...length).contains(day) else { return nil }
        var seconds = 0.0
        var offset = 0
        if take(84) || take(32) {
            guard let hour = digits(2), take(58), let minute = digits(2), hour < 24, minute < 60 else { return nil }
            var second = 0.0
            if take(58) {
                guard let whole = digits(2), whole < 60 else { return nil }
                second = Double(whole)
                if take(46) {
                    var scale = 0.1
                    var any = false
                    while at < end, bytes[at] >= 48, bytes[at] <= 57 {
                        second += Double(bytes[at] - 48) * scale
                        scale /= 10
                        at += 1
                        any = true
                    }
                    guard any else { return nil }
                }
            }
            seconds = Double(hour * 3600 + minute * 60) + second
            if take(90) {
            } else if at < end, bytes[at] == 43 || bytes[at] == 45 {
                let sign = bytes[at]
                at += 1
                guard let hours = digits(2) else { return nil }
                _ = take(58)
                guard let minutes = digits(2), hours < 24, minutes < 60 else { return nil }
                offset = (hours * 3600 + minutes * 60) * (sign == 43 ? 1 : -1)
            }
        }
        guard at == end else { return nil }
        // Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Date(timeIntervalSince1970: Double(days) * 86_400 + seconds - Double(offset))
    }
}
