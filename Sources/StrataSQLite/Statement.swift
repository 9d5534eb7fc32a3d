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
    @inlinable @inline(__always)
    static func string(_ text: UnsafePointer<UInt8>, count: Int) -> String {
        if count > 0 && count <= 15 {
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
