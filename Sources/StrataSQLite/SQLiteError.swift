/// An error reported by SQLite, with the statement that caused it.
///
/// Statement arguments may hold user data (names, tokens, passwords): they are kept in
/// ``arguments`` for programmatic use but left out of ``description`` unless the connection
/// was opened with ``Connection/Configuration/publicStatementArguments`` set.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code.
    public var code: ResultCode
    /// SQLite's message (`sqlite3_errmsg`), or a description of the code.
    public var message: String
    /// The SQL that failed, when a statement was involved.
    public var sql: String?
    /// The bound arguments, when a statement was involved.
    public var arguments: [SQLiteValue]
    /// Whether ``description`` may print ``arguments``.
    public var argumentsArePublic: Bool
    /// The page (1-based) whose checksum failed, when ``code`` is `SQLITE_IOERR_DATA` from
    /// Strata's checksum VFS: the bytes were never handed to SQLite.
    public var corruptPage: Int?

    public init(
        code: ResultCode, message: String, sql: String? = nil,
        arguments: [SQLiteValue] = [], argumentsArePublic: Bool = false
    ) {
        self.code = code
        self.message = message
        self.sql = sql
        self.arguments = arguments
        self.argumentsArePublic = argumentsArePublic
    }

    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " — while executing `\(sql)`" }
        if !arguments.isEmpty {
            text += argumentsArePublic
                ? " with arguments \(arguments)"
                : " with \(arguments.count) argument(s) (redacted; set publicStatementArguments to show them)"
        }
        return text
    }
}
