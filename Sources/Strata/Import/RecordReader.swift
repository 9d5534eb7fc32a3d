internal import Foundation

/// A streaming reader of a CSV file (RFC 4180: a header row, quoted fields with `""` inside,
/// line breaks inside quotes) or a JSON Lines file, record by record, with each record's line
/// number and the byte offset just past it. It holds one chunk of the file, never the whole:
/// memory stays flat in the file's size.
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

    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    /// The file offset of `buffer[0]`.
    private var bufferStart: Int64
    private(set) var line: Int
    let format: Format

    /// Reads `url` from byte `offset`, which starts line `line`.
    init(url: URL, format: Format, offset: Int64 = 0, line: Int = 1) throws {
        handle = try FileHandle(forReadingFrom: url)
        try handle.seek(toOffset: UInt64(offset))
        bufferStart = offset
        self.line = line
        self.format = format
    }

    func close() { try? handle.close() }

    /// The file offset reached.
    var offset: Int64 { bufferStart + Int64(position) }

    private mutating func fill() throws -> Bool {
        guard !atEnd else { return false }
        if position > 0 {
            buffer.removeFirst(position)
            bufferStart += Int64(position)
            position = 0
        }
        guard let data = try handle.read(upToCount: 1 << 16), !data.isEmpty else {
            atEnd = true
            return false
        }
        buffer.append(contentsOf: data)
        return true
    }

    /// Whether the file has no byte left to read.
    mutating func peekAtEnd() throws -> Bool {
        if position < buffer.count { return false }
        return !(try fill())
    }

    /// The next record, or `nil` at the end of the file. Blank lines are skipped.
    mutating func next() throws -> Record? {
        switch format {
        case .csv: try nextCSV()
        case .jsonLines: try nextLine()
        }
    }

    private mutating func nextLine() throws -> Record? {
        while true {
            var at = position
            while true {
                if at == buffer.count {
                    // `fill` may move the buffer's start (also when it finds the end): `at` follows.
                    let consumed = at - position
                    let more = try fill()
                    at = position + consumed
                    guard more else { break }
                    continue
                }
                if buffer[at] == UInt8(ascii: "\n") { break }
                at += 1
            }
            if at == position && at == buffer.count { return nil }
            var text = String(decoding: buffer[position..<at], as: UTF8.self)
            let startLine = line
            position = min(at + 1, buffer.count)
            line += 1
            if text.hasSuffix("\r") { text.removeLast() }
            if text.allSatisfy(\.isWhitespace) { continue }
            return Record(line: startLine, fields: [text], end: offset)
        }
    }

    private mutating func nextCSV() throws -> Record? {
        while true {
            if position == buffer.count, !(try fill()) { return nil }
            let startLine = line
            var fields: [String?] = []
            func value(_ field: [UInt8], _ quoted: Bool) -> String? { field.isEmpty && !quoted ? nil : String(decoding: field, as: UTF8.self) }
            var field: [UInt8] = []
            var quoted = false, inQuotes = false, ended = false
            while !ended {
                if position == buffer.count {
                    guard try fill() else {
                        // The end of the file ends the record (an open quote included).
                        fields.append(value(field, quoted))
                        break
                    }
                }
                let byte = buffer[position]
                position += 1
                if inQuotes {
                    if byte == UInt8(ascii: "\"") {
                        if position == buffer.count { _ = try fill() }
                        if position < buffer.count, buffer[position] == UInt8(ascii: "\"") {
                            field.append(byte)
                            position += 1
                        } else {
                            inQuotes = false
                        }
                    } else {
                        if byte == UInt8(ascii: "\n") { line += 1 }
                        field.append(byte)
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: ","):
                    fields.append(value(field, quoted))
                    field.removeAll(keepingCapacity: true)
                    quoted = false
                case UInt8(ascii: "\"") where field.isEmpty && !quoted:
                    inQuotes = true
                    quoted = true
                case UInt8(ascii: "\n"):
                    line += 1
                    if field.last == UInt8(ascii: "\r") { field.removeLast() }
                    fields.append(value(field, quoted))
                    ended = true
                default:
                    field.append(byte)
                }
            }
            if fields.count == 1, fields[0] == nil { if ended { continue } else { return nil } }
            return Record(line: startLine, fields: fields, end: offset)
        }
    }
}
