// Public: the binds of numbers are inlinable (a batch insert binds a value per set, and the call
// into this module cost a sixth of each set; callgrind), and so are the column reads a fetch
// makes for every value of every row.
public import CSQLite
public import Foundation

// SQLITE_TRANSIENT is a macro Swift cannot import: SQLite copies the bound bytes.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement: bind arguments, step through rows, read typed columns, reset.
///
/// Indexes for `bind` are 1-based (SQLite's); column indexes are 0-based (SQLite's).
public final class Statement {
    /// The SQL text the statement was prepared from.
    public let sql: String
    unowned let connection: Connection
    @usableFromInline let handle: OpaquePointer
    /// ``SmallASCII/isAvailable``, read once here: a column read loads a field instead of
    /// calling the global's accessor (about 9 instructions a string, callgrind).
    @usableFromInline let makesSmallASCII = SmallASCII.isAvailable
    private let counter: StatementCounter
    private var isRunning = false
    private var recordedArguments: [SQLiteValue] = []

    init(connection: Connection, handle: OpaquePointer, sql: String, counter: StatementCounter) {
        self.connection = connection
        self.handle = handle
        self.sql = sql
        self.counter = counter
    }

    deinit { sqlite3_finalize(handle) }

    /// Number of `?` parameters.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(handle) }
    /// Number of result columns.
    public var columnCount: Int32 { sqlite3_column_count(handle) }
    /// The name of result column `index`.
    public func columnName(at index: Int32) -> String { String(cString: sqlite3_column_name(handle, index)) }

    // MARK: Binding

    /// Binds every argument in order, from parameter 1, after clearing previous bindings.
    public func bind(_ arguments: [SQLiteValue]) throws {
        precondition(arguments.count == Int(parameterCount),
                     "Statement `\(sql)` takes \(parameterCount) arguments, \(arguments.count) given: pass one value per `?`.")
        recordedArguments = arguments
        for (offset, argument) in arguments.enumerated() {
            try bind(argument, at: Int32(offset + 1))
        }
    }

    /// Binds one value at the 1-based `index`.
    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        switch value {
        case .null: try check(sqlite3_bind_null(handle, index))
        case .integer(let value): try bind(value, at: index)
        case .real(let value): try bind(value, at: index)
        case .text(let value): try bind(value, at: index)
        case .blob(let value): try bind(value, at: index)
        }
    }

    @inlinable
    public func bind(_ value: Int64, at index: Int32) throws {
        let code = sqlite3_bind_int64(handle, index, value)
        if code != SQLITE_OK { try fail(code) }
    }

    @inlinable
    public func bind(_ value: Double, at index: Int32) throws {
        let code = sqlite3_bind_double(handle, index, value)
        if code != SQLITE_OK { try fail(code) }
    }

    public func bind(_ value: String, at index: Int32) throws {
        var value = value
        let code = value.withUTF8 { bytes -> Int32 in
            // A nil pointer would bind NULL: an empty string must stay an empty string.
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, transient)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), transient, UInt8(SQLITE_UTF8))
            }
        }
        try check(code)
    }

    /// Binds `text` at `index` in place, without SQLite's copy, for the duration of `body` only
    /// (SQLITE_STATIC: SQLite reads the caller's bytes, which live only inside `withUTF8`);
    /// afterwards the parameter is NULL again, so no later step can read freed bytes. Saves a
    /// malloc, a copy and a free per text value of a statement run once per row.
    public func withText<R>(_ text: String, boundAt index: Int32, _ body: () throws -> R) throws -> R {
        var text = text
        return try text.withUTF8 { bytes in
            let code: Int32
            if let base = bytes.baseAddress, bytes.count > 0 {
                code = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), nil, UInt8(SQLITE_UTF8))   // nil: SQLITE_STATIC
                }
            } else {
                code = sqlite3_bind_text(handle, index, "", 0, transient)
            }
            try check(code)
            defer { sqlite3_bind_null(handle, index) }
            return try body()
        }
    }

    /// Binds UTF-8 `bytes` at `index` without SQLite's copy (SQLITE_STATIC). The caller keeps
    /// the bytes alive and unchanged until the statement's next step is done, and binds the
    /// parameter again before any later step (an import binds every parameter of its
    /// statements for every row, so no step reads bytes of a row before).
    @inlinable
    public func bindBorrowed(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) throws {
        let code: Int32
        if let base = bytes.baseAddress, bytes.count > 0 {
            code = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), nil)   // nil: SQLITE_STATIC
            }
        } else {
            // A nil pointer would bind NULL: an empty string stays an empty string.
            code = sqlite3_bind_text(handle, index, "", 0, nil)
        }
        if code != SQLITE_OK { try fail(code) }
    }

    /// Whether column `index` of the current row is text equal to `bytes`.
    @inlinable
    public func textEquals(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Bool {
        guard sqlite3_column_type(handle, index) == SQLITE_TEXT else { return false }
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count == bytes.count else { return false }
        guard count > 0, let stored = sqlite3_column_text(handle, index), let base = bytes.baseAddress else { return true }
        return memcmp(stored, base, count) == 0
    }

    public func bind(_ value: Data, at index: Int32) throws {
        // A nil pointer would bind NULL: empty data is a zero-length blob.
        guard !value.isEmpty else { return try check(sqlite3_bind_zeroblob(handle, index, 0)) }
        let code = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob64(handle, index, bytes.baseAddress, sqlite3_uint64(bytes.count), transient)
        }
        try check(code)
    }

    @inlinable
    public func bindNull(at index: Int32) throws {
        let code = sqlite3_bind_null(handle, index)
        if code != SQLITE_OK { try fail(code) }
    }

    /// Clears every binding to NULL.
    public func clearBindings() {
        sqlite3_clear_bindings(handle)
        recordedArguments = []
    }

    // MARK: Stepping

    /// Advances to the next row. Returns `true` when a row is available, `false` when done.
    @discardableResult
    public func step() throws -> Bool {
        if !isRunning {
            isRunning = true
            counter.executed &+= 1
            if let trace = connection.trace { trace(sql) }
        }
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW:
            counter.rows &+= 1
            return true
        case SQLITE_DONE:
            isRunning = false
            return false
        default:
            isRunning = false
            let error = connection.error(code: code, sql: sql, arguments: recordedArguments)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Binds `arguments` (when given), steps to completion and resets.
    public func execute(_ arguments: SQLiteValue...) throws {
        if !arguments.isEmpty { try bind(arguments) }
        defer { reset() }
        while try step() {}
    }

    /// Steps through every row, calling `body` with the statement positioned on it; resets after.
    public func forEachRow(_ body: (Statement) throws -> Void) throws {
        defer { reset() }
        while try step() { try body(self) }
    }

    /// Resets the statement so it can run again; bindings are kept.
    public func reset() {
        sqlite3_reset(handle)
        isRunning = false
    }

    // MARK: Columns

    /// SQLite's storage class of column `index` in the current row.
    public func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }
    @inlinable public func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    public func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` as an integer, `nil` when NULL. One call into SQLite unless the value reads
    /// as 0 (what NULL reads as): only then is the column's type asked.
    @inlinable @inline(__always)
    public func optionalInt64(at index: Int32) -> Int64? {
        let value = sqlite3_column_int64(handle, index)
        if value == 0, sqlite3_column_type(handle, index) == SQLITE_NULL { return nil }
        return value
    }

    /// Column `index` as a double, `nil` when NULL (the type is asked only for 0.0, as above).
    @inlinable @inline(__always)
    public func optionalDouble(at index: Int32) -> Double? {
        let value = sqlite3_column_double(handle, index)
        if value == 0, sqlite3_column_type(handle, index) == SQLITE_NULL { return nil }
        return value
    }

    /// Column `index` as text, `nil` when NULL (SQLite gives no text pointer only for NULL, or
    /// when out of memory converting a blob or number, where the type is asked to tell them apart).
    @inlinable @inline(__always)
    public func optionalString(at index: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, index) else {
            return sqlite3_column_type(handle, index) == SQLITE_NULL ? nil : ""
        }
        return Statement.string(text, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// Column `index` as text, written as a `String` into the 16 uninitialised bytes at `slot`;
    /// false (nothing written) when NULL. What ``optionalString(at:)`` reads, but a small ASCII
    /// string's two words are stored as they are made (``SmallASCII``): no `String` value is
    /// passed on, so none is retained and released on the way.
    @inlinable @inline(__always)
    public func initializeString(at index: Int32, into slot: UnsafeMutableRawPointer) -> Bool {
        guard let text = sqlite3_column_text(handle, index) else {
            guard sqlite3_column_type(handle, index) != SQLITE_NULL else { return false }
            slot.initializeMemory(as: String.self, to: "")
            return true
        }
        let count = Int(sqlite3_column_bytes(handle, index))
        if count > 0 && count <= 15 && makesSmallASCII, let words = SmallASCII.words(text, count: count) {
            slot.storeBytes(of: words.0, as: UInt64.self)
            slot.storeBytes(of: words.1, toByteOffset: 8, as: UInt64.self)
            return true
        }
        slot.initializeMemory(as: String.self, to: Statement.string(text, count: count))
        return true
    }

    public func string(at index: Int32) -> String {
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        return Statement.string(text, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// A column's text as a `String`, invalid UTF-8 repaired as `String(decoding:as:)` does.
    ///
    /// Text of up to 15 bytes — most names, codes and keys — goes through
    /// `String(unsafeUninitializedCapacity:initializingUTF8With:)`, which makes a small string in
    /// place and, when its bytes are ASCII, skips UTF-8 validation; other small text is repaired
    /// by the same call exactly as `String(decoding:as:)` repairs it. `String(decoding:as:)` on
    /// short text validated first (about 175 instructions for a 6-byte tail number, callgrind).
    ///
    /// ASCII text of up to 15 bytes is made faster still, as the small string it becomes: its
    /// bytes loaded in at most four reads into the string's two words (see
    /// ``SmallASCII``), no call and no closure (about 25 instructions instead of about 100 for
    /// a tail number, callgrind).
    @inlinable @inline(__always)
    static func string(_ text: UnsafePointer<UInt8>, count: Int) -> String {
        if count > 0 && count <= 15 {
            if SmallASCII.isAvailable, let small = SmallASCII.string(text, count: count) { return small }
            return String(unsafeUninitializedCapacity: count) { buffer in
                buffer.baseAddress.unsafelyUnwrapped.update(from: text, count: count)
                return count
            }
        }
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// A column's storage class in the current row.
    public enum StorageClass: Sendable { case integer, real, text, blob, null }

    /// SQLite's storage class of column `index` in the current row.
    public func storageClass(at index: Int32) -> StorageClass {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }

    /// Column `index`'s bytes as text (UTF-8) or blob, without copying them; valid only inside `body`.
    public func withBytes<R>(at index: Int32, asText: Bool, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let pointer: UnsafePointer<UInt8>? = asText
            ? sqlite3_column_text(handle, index)
            : sqlite3_column_blob(handle, index).map { $0.assumingMemoryBound(to: UInt8.self) }
        let count = Int(sqlite3_column_bytes(handle, index))
        return try body(UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }

    public func data(at index: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// Column `index` in its own storage class.
    public func value(at index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: .integer(int64(at: index))
        case SQLITE_FLOAT: .real(double(at: index))
        case SQLITE_TEXT: .text(string(at: index))
        case SQLITE_BLOB: .blob(data(at: index))
        default: .null
        }
    }

    /// Throws the error of a failed call's `code` (the inlinable binds' slow path).
    @usableFromInline
    func fail(_ code: Int32) throws {
        try check(code)
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw connection.error(code: code, sql: sql, arguments: recordedArguments) }
    }
}

/// Small ASCII strings made from their bytes: on the 64-bit platforms Strata runs on, a `String`
/// of up to 15 ASCII bytes is two words, the bytes in order and, in the top byte of the second,
/// `0xE0 | count` (immortal, ASCII, small). That is the standard library's layout, not its API,
/// so it is used only when a check at first use finds it: strings of 1, 4, 7, 8, 9 and 15
/// bytes made this way must have the very words of the same literals, and compare equal to
/// them (``isAvailable``); otherwise every string takes the standard library's initialiser.
/// Non-ASCII text always does (it is validated and repaired there).
@usableFromInline
enum SmallASCII {
    @usableFromInline static let isAvailable: Bool = {
        guard MemoryLayout<String>.size == 16, MemoryLayout<UInt>.size == 8, UInt(littleEndian: 1) == 1 else { return false }
        for literal in ["a", "abcd", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmno"] {
            var bytes = Array(literal.utf8)
            bytes.append(0)
            let made = bytes.withUnsafeBufferPointer { words($0.baseAddress!, count: literal.utf8.count) }
            guard let made, made == unsafeBitCast(literal, to: (UInt64, UInt64).self),
                  unsafeBitCast(made, to: String.self) == literal else { return false }
        }
        return true
    }()

    /// The string of `count` (1...15) bytes at `text` when they are ASCII; nil otherwise.
    @inlinable @inline(__always)
    static func string(_ text: UnsafePointer<UInt8>, count: Int) -> String? {
        guard let made = words(text, count: count) else { return nil }
        return unsafeBitCast(made, to: String.self)
    }

    /// The two words of the small ASCII string of `count` (1...15) bytes at `text`, or nil
    /// when a byte is not ASCII. Reads only the `count` bytes (overlapping reads of 4 or 8,
    /// never past the end).
    @inlinable @inline(__always)
    static func words(_ text: UnsafePointer<UInt8>, count: Int) -> (UInt64, UInt64)? {
        let raw = UnsafeRawPointer(text)
        var low: UInt64 = 0, high: UInt64 = 0
        if count >= 8 {
            low = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))
            if count > 8 {
                // The last 8 bytes, shifted so that byte 8 comes first.
                high = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)) &>> UInt64((16 &- count) &* 8)
            }
        } else if count >= 4 {
            let first = UInt64(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
            let last = UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)))
            low = first | last &<< UInt64((count &- 4) &* 8)
        } else {
            for index in 0..<count { low |= UInt64(text[index]) &<< UInt64(index &* 8) }
        }
        guard (low | high) & 0x8080_8080_8080_8080 == 0 else { return nil }
        return (low, high | (0xE0 | UInt64(count)) &<< 56)
    }
}
