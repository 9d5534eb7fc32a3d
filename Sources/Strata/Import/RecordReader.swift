internal import Foundation

/// A streaming reader of a CSV file (RFC 4180: a header row, quoted fields with `""` inside,
/// line breaks inside quotes) or a JSON Lines file, record by record, with each record's line
/// number and the byte offset just past it. It holds one chunk of the file, never the whole:
/// memory stays flat in the file's size.
///
/// The import reads CSV through ``nextFields()``: each field as a span of the reader's own
/// buffer, valid until the next read, so that a number is parsed and a string is bound to its
/// statement without a `String` made per field. ``next()`` makes the strings, for the header,
/// a rejected row, and the tests.
struct RecordReader {
    typealias Format = ImportOptions.Format

    struct Record {
        /// The line the record starts on (1 is the file's first line).
        var line: Int
        /// CSV: the fields (`nil`: empty and unquoted, no value; `""` quoted is an empty
        /// string). JSON Lines: the line's text as one field.
        var fields: [String?]
        /// The byte offset just past the record (where a resumed read starts).
        var end: Int64
    }

    /// The bytes read and not yet consumed, in memory this reader owns (the pointers a field
    /// span hands out stay put until the next read moves or grows it).
    private final class Buffer {
        var base: UnsafeMutablePointer<UInt8>
        var capacity: Int
        var count = 0
        init(capacity: Int) {
            base = .allocate(capacity: capacity)
            self.capacity = capacity
        }
        deinit { base.deallocate() }
    }

    /// How many bytes a read asks for (a test makes it small, so that records, quotes and
    /// line breaks meet the buffer's end often).
    private let chunk: Int
    private let handle: FileHandle
    private let buffer: Buffer
    private var position = 0
    private var atEnd = false
    /// The file offset of the buffer's first byte.
    private var bufferStart: Int64
    private(set) var line: Int
    let format: Format

    /// The last record of ``nextFields()``: each field's start in the buffer, its length, and
    /// whether it was quoted (an empty quoted field is an empty string, an empty unquoted one no value).
    private(set) var fieldStarts: [Int] = []
    private(set) var fieldCounts: [Int] = []
    private(set) var fieldQuoted: [Bool] = []
    private var fieldEscaped: [Bool] = []
    /// The line the last record of ``nextFields()`` starts on.
    private(set) var recordLine = 0

    /// Reads `url` from byte `offset`, which starts line `line`.
    init(url: URL, format: Format, offset: Int64 = 0, line: Int = 1, chunk: Int = 1 << 16) throws {
        precondition(chunk > 0, "RecordReader reads chunks of at least 1 byte")
        self.chunk = chunk
        buffer = Buffer(capacity: 2 * chunk)
        handle = try FileHandle(forReadingFrom: url)
        try handle.seek(toOffset: UInt64(offset))
        bufferStart = offset
        self.line = line
        self.format = format
    }

    func close() { try? handle.close() }

    /// The file offset reached.
    var offset: Int64 { bufferStart + Int64(position) }

    /// Moves the unread bytes to the buffer's start (`position` becomes 0) and reads up to a
    /// chunk after them; false at the end of the file.
    private mutating func fill() throws -> Bool {
        guard !atEnd else { return false }
        let kept = buffer.count - position
        if position > 0 {
            memmove(buffer.base, buffer.base + position, kept)
            bufferStart += Int64(position)
            position = 0
            buffer.count = kept
        }
        if buffer.capacity - buffer.count < chunk {
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: buffer.capacity * 2)
            grown.update(from: buffer.base, count: buffer.count)
            buffer.base.deallocate()
            buffer.base = grown
            buffer.capacity *= 2
        }
        let descriptor = handle.fileDescriptor
        while true {
            let got = read(descriptor, buffer.base + buffer.count, chunk)
            if got < 0 {
                if errno == EINTR { continue }
                throw ImportError(message: "cannot read the file: \(String(cString: strerror(errno)))")
            }
            guard got > 0 else {
                atEnd = true
                return false
            }
            buffer.count += got
            return true
        }
    }

    /// Whether the file has no byte left to read.
    mutating func peekAtEnd() throws -> Bool {
        if position < buffer.count { return false }
        return !(try fill())
    }

    /// Field `index` of the last record of ``nextFields()``: its bytes, valid until the next read.
    func field(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: buffer.base + fieldStarts[index], count: fieldCounts[index])
    }

    /// Field `index` as ``Record/fields`` has it (`nil`: empty and unquoted).
    func fieldText(_ index: Int) -> String? {
        fieldCounts[index] == 0 && !fieldQuoted[index] ? nil : String(decoding: field(index), as: UTF8.self)
    }

    /// The fields of the last record of ``nextFields()`` as strings (a rejected row's).
    var fieldTexts: [String?] { fieldStarts.indices.map(fieldText) }

    /// The next record, or `nil` at the end of the file. Blank lines are skipped.
    mutating func next() throws -> Record? {
        switch format {
        case .csv:
            guard try nextFields() else { return nil }
            return Record(line: recordLine, fields: fieldTexts, end: offset)
        case .jsonLines:
            return try nextLine()
        }
    }

    private mutating func nextLine() throws -> Record? {
        while true {
            var at = position
            while true {
                if at == buffer.count {
                    // `fill` moves the buffer's start to `position` (also when it finds the end).
                    let consumed = at - position
                    let more = try fill()
                    at = position + consumed
                    guard more else { break }
                    continue
                }
                if buffer.base[at] == UInt8(ascii: "\n") { break }
                at += 1
            }
            if at == position && at == buffer.count { return nil }
            var text = String(decoding: UnsafeBufferPointer(start: buffer.base + position, count: at - position), as: UTF8.self)
            let startLine = line
            position = min(at + 1, buffer.count)
            line += 1
            if text.hasSuffix("\r") { text.removeLast() }
            if text.allSatisfy(\.isWhitespace) { continue }
            return Record(line: startLine, fields: [text], end: offset)
        }
    }

    /// Reads the next CSV record into the field spans; false at the end of the file. Blank lines
    /// are skipped. A quote opens a quoted field only at the field's start; after its closing
    /// quote, the field's other bytes are kept as they are (a quote among them included).
    mutating func nextFields() throws -> Bool {
        while true {
            if position == buffer.count, !(try fill()) { return false }
            // A record the buffer ends inside is scanned again from its start once more is read
            // (fill moves the record's start, `position`, to the buffer's front).
            var scanned = scanRecord()
            while scanned == nil {
                _ = try fill()
                scanned = scanRecord()
            }
            guard let (end, lines, ended) = scanned else { continue }
            // The record is whole: its quoted fields' quotes come out now (never before a
            // rescan, which must read the bytes as they were).
            for index in fieldStarts.indices where fieldQuoted[index] { unquote(index) }
            let last = fieldStarts.count - 1
            if fieldCounts[last] > 0, buffer.base[fieldStarts[last] + fieldCounts[last] - 1] == UInt8(ascii: "\r") {
                fieldCounts[last] -= 1
            }
            recordLine = line
            line += lines
            position = end
            if fieldStarts.count == 1, fieldCounts[0] == 0, !fieldQuoted[0] {
                if ended { continue }
                return false
            }
            return true
        }
    }

    /// Scans one record from `position` into the raw field spans: where it ends, the line
    /// breaks in it, and whether a line break ended it (not the end of the file); nil when the
    /// buffer ends first and the file has more.
    private mutating func scanRecord() -> (end: Int, lines: Int, ended: Bool)? {
        fieldStarts.removeAll(keepingCapacity: true)
        fieldCounts.removeAll(keepingCapacity: true)
        fieldQuoted.removeAll(keepingCapacity: true)
        fieldEscaped.removeAll(keepingCapacity: true)
        let base = buffer.base, count = buffer.count
        var lines = 0
        var at = position
        var fieldStart = at
        var quoted = false, inQuotes = false, escaped = false
        while true {
            guard at < count else {
                guard atEnd else { return nil }
                // The end of the file ends the record (an open quote included).
                endField(fieldStart, at, quoted, escaped)
                return (at, lines, false)
            }
            let byte = base[at]
            if inQuotes {
                if byte == UInt8(ascii: "\"") {
                    // The byte after decides whether it is `""` or the closing quote (at the
                    // buffer's end the scan stops at the next byte and the record is read again).
                    if at + 1 < count, base[at + 1] == UInt8(ascii: "\"") {
                        escaped = true
                        at += 2
                        continue
                    }
                    inQuotes = false
                } else if byte == UInt8(ascii: "\n") {
                    lines += 1
                }
                at += 1
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                endField(fieldStart, at, quoted, escaped)
                at += 1
                fieldStart = at
                quoted = false
                escaped = false
            case UInt8(ascii: "\"") where at == fieldStart:
                inQuotes = true
                quoted = true
                at += 1
            case UInt8(ascii: "\n"):
                endField(fieldStart, at, quoted, escaped)
                return (at + 1, lines + 1, true)
            default:
                at += 1
            }
        }
    }

    /// Records the field of raw bytes `start..<end` (a quoted one's quotes still in).
    private mutating func endField(_ start: Int, _ end: Int, _ quoted: Bool, _ escaped: Bool) {
        fieldStarts.append(start)
        fieldCounts.append(end - start)
        fieldQuoted.append(quoted)
        fieldEscaped.append(escaped)
    }

    /// Takes quoted field `index`'s quotes out, in place in the bytes it was read from: inside
    /// the quotes a `""` is one `"` and a lone `"` closes them; after that every byte is kept.
    private mutating func unquote(_ index: Int) {
        let base = buffer.base
        let start = fieldStarts[index], end = start + fieldCounts[index]
        var read = start + 1, write = start + 1
        if !fieldEscaped[index] {
            // The common case: no `""`, so the content is one run and the rest follows the close.
            var close = read
            while close < end, base[close] != UInt8(ascii: "\"") { close += 1 }
            let tail = close < end ? end - close - 1 : 0
            if tail > 0 { memmove(base + close, base + close + 1, tail) }
            fieldStarts[index] = start + 1
            fieldCounts[index] = close - start - 1 + tail
            return
        }
        var inside = true
        while read < end {
            let byte = base[read]
            if inside, byte == UInt8(ascii: "\"") {
                if read + 1 < end, base[read + 1] == UInt8(ascii: "\"") {
                    base[write] = byte
                    write += 1
                    read += 2
                } else {
                    inside = false
                    read += 1
                }
                continue
            }
            base[write] = byte
            write += 1
            read += 1
        }
        fieldStarts[index] = start + 1
        fieldCounts[index] = write - start - 1
    }
}
