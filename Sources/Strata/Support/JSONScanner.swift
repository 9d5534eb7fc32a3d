internal import Foundation

/// The one JSON scanner of Strata (RFC 8259, strictly): whitespace, literals, strings and
/// numbers over UTF-8 bytes it borrows. Its two readers build their own values on it: the history's records
/// (``HistoryJSON``, which reports why a record can't be read) and the stored model
/// (``ModelJSONReader``, which gives up and lets `JSONDecoder` say why).
struct JSONScanner {
    /// Why the text is not JSON, and where.
    struct Failure: Error, Equatable {
        let reason: String
        let position: Int
    }

    /// The text. Not owned: a scanner lives inside the caller's `withUnsafeBufferPointer` (or a
    /// statement's `withBytes`) that lends it, and is never stored beyond it.
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The run of bytes from `start` to `end`, as a buffer of its own (the fast paths of
    /// `String(decoding:)` and `String(validating:)` take contiguous buffers).
    func slice(_ start: Int, _ end: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[start..<end]) }

    /// The byte at the position, `nil` at the end.
    var next: UInt8? { position < bytes.count ? bytes[position] : nil }
    var isAtEnd: Bool { position == bytes.count }

    func failure(_ reason: String) -> Failure { Failure(reason: reason, position: position) }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// Moves past `byte` when it is next; whether it was.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// An object at the position (on its `{`): `member` is called with each key, the scanner
    /// on the member's value, which it must read.
    mutating func object(_ member: (inout JSONScanner, String) throws(Failure) -> Void) throws(Failure) {
        guard consume(UInt8(ascii: "{")) else { throw failure("expected an object") }
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        while true {
            skipWhitespace()
            let key = try string()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw failure("expected :") }
            skipWhitespace()
            try member(&self, key)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            guard consume(UInt8(ascii: "}")) else { throw failure("expected , or }") }
            return
        }
    }

    /// An object whose keys the caller compares as bytes: `member` is called with each key's raw
    /// bytes (between its quotes) when it has no escape, else with its decoded UTF-8; the scanner
    /// on the member's value, which it must read. No key becomes a `String`.
    mutating func objectWithRawKeys(_ member: (inout JSONScanner, UnsafeBufferPointer<UInt8>) throws(Failure) -> Void) throws(Failure) {
        guard consume(UInt8(ascii: "{")) else { throw failure("expected an object") }
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        while true {
            skipWhitespace()
            guard next == UInt8(ascii: "\"") else { throw failure("expected a string") }
            var end = position + 1
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 { end += 1 }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\""), bytes[(position + 1)..<end].allSatisfy({ $0 < 0x80 }) {
                let key = slice(position + 1, end)
                position = end + 1
                try objectMember(key, member)
            } else {
                var key = try string()
                var failed: Failure?
                key.withUTF8 { key in
                    do throws(Failure) { try objectMember(key, member) } catch { failed = error }
                }
                if let failed { throw failed }
            }
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            guard consume(UInt8(ascii: "}")) else { throw failure("expected , or }") }
            return
        }
    }

    private mutating func objectMember(_ key: UnsafeBufferPointer<UInt8>,
                                       _ member: (inout JSONScanner, UnsafeBufferPointer<UInt8>) throws(Failure) -> Void) throws(Failure) {
        skipWhitespace()
        guard consume(UInt8(ascii: ":")) else { throw failure("expected :") }
        skipWhitespace()
        try member(&self, key)
    }

    /// Whether `bytes` are the UTF-8 of `text` (a byte compare, no `String` made).
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            utf8.count == bytes.count && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
    }

    /// An array at the position (on its `[`): `element` is called with the scanner on each
    /// element, which it must read.
    mutating func array(_ element: (inout JSONScanner) throws(Failure) -> Void) throws(Failure) {
        guard consume(UInt8(ascii: "[")) else { throw failure("expected an array") }
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            guard consume(UInt8(ascii: "]")) else { throw failure("expected , or ]") }
            return
        }
    }

    /// `true`, `false` or `null` at the position.
    mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        let matches = position + count <= bytes.count
            && word.withUTF8Buffer { expected in slice(position, position + count).elementsEqual(expected) }
        guard matches else { throw failure("unexpected text") }
        position += count
    }

    /// A string at the position (on its opening quote): the eight plain escapes and `\uXXXX`
    /// (a surrogate pair as one scalar); a control character, another escape, a lone surrogate
    /// or invalid UTF-8 is a failure.
    mutating func string() throws(Failure) -> String {
        guard consume(UInt8(ascii: "\"")) else { throw failure("expected a string") }
        var run = position
        var text: String?
        /// The bytes since `run`, validated, added to `text`.
        func flush(upTo end: Int) throws(Failure) {
            guard run < end else { return }
            let bytes = slice(run, end)
            // ASCII is valid UTF-8 as it is: the decoding initialiser's fast path, not the
            // validating one's generic path (a record's keys and most values are ASCII).
            let piece: String
            if bytes.allSatisfy({ $0 < 0x80 }) {
                piece = String(decoding: bytes, as: UTF8.self)
            } else {
                guard let valid = String(validating: bytes, as: UTF8.self) else { throw Failure(reason: "invalid UTF-8", position: run) }
                piece = valid
            }
            if text == nil { text = piece } else { text! += piece }
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try flush(upTo: position)
                position += 1
                return text ?? ""
            }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            try flush(upTo: position)
            position += 1
            guard position < bytes.count else { break }
            let escape = bytes[position]
            position += 1
            let scalar: Unicode.Scalar
            switch escape {
            case UInt8(ascii: "\""): scalar = "\""
            case UInt8(ascii: "\\"): scalar = "\\"
            case UInt8(ascii: "/"): scalar = "/"
            case UInt8(ascii: "b"): scalar = "\u{8}"
            case UInt8(ascii: "f"): scalar = "\u{c}"
            case UInt8(ascii: "n"): scalar = "\n"
            case UInt8(ascii: "r"): scalar = "\r"
            case UInt8(ascii: "t"): scalar = "\t"
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else { throw failure("a lone surrogate") }
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let value = Unicode.Scalar(code) else { throw failure("a lone surrogate") }
                scalar = value
            default:
                throw failure("an unknown escape")
            }
            if text == nil { text = "" }
            text!.unicodeScalars.append(scalar)
            run = position
        }
        throw failure("an unterminated string")
    }

    /// Four hex digits of a `\u` escape.
    private mutating func hex4() throws(Failure) -> UInt32 {
        guard position + 4 <= bytes.count else { throw failure("a short \\u escape") }
        var code: UInt32 = 0
        for byte in bytes[position..<(position + 4)] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a bad \\u escape")
            }
            code = code << 4 | UInt32(digit)
        }
        position += 4
        return code
    }

    /// An integer literal at the position that fits an `Int64`, read without making its text.
    mutating func integer() throws(Failure) -> Int64 {
        let start = position
        let negative = consume(UInt8(ascii: "-"))
        var value: Int64 = 0
        var digits = 0
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
            let digit = Int64(bytes[position] &- UInt8(ascii: "0"))
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflowA, !overflowB else { throw Failure(reason: "an integer out of range", position: start) }
            value = sum
            digits += 1
            position += 1
        }
        guard digits > 0, digits == 1 || bytes[position - digits] != UInt8(ascii: "0") else { throw Failure(reason: "not an integer", position: start) }
        if let next, next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            throw Failure(reason: "not an integer", position: start)
        }
        return value
    }

    /// A number's text, checked against JSON's grammar (`-? int frac? exp?`, no leading zero),
    /// and whether it is an integer literal (no fraction, no exponent).
    mutating func number() throws(Failure) -> (text: Substring.UTF8View, isInteger: Bool) {
        let start = position
        func digits() -> Int {
            let from = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position - from
        }
        _ = consume(UInt8(ascii: "-"))
        let intStart = position
        let intDigits = digits()
        guard intDigits > 0, intDigits == 1 || bytes[intStart] != UInt8(ascii: "0") else { throw Failure(reason: "not a number", position: start) }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard digits() > 0 else { throw Failure(reason: "not a number", position: start) }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            isInteger = false
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard digits() > 0 else { throw Failure(reason: "not a number", position: start) }
        }
        return (Substring(decoding: slice(start, position), as: UTF8.self).utf8, isInteger)
    }
}
