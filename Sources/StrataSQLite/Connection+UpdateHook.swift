internal import CSQLite

/// The rowids a statement changed, gathered by `sqlite3_update_hook` while it runs.
private final class ChangedRows {
    let table: [UInt8]
    let operation: Int32
    var rowIDs: [Int64] = []
    init(table: String, operation: Int32) {
        self.table = Array(table.utf8)
        self.operation = operation
    }
}

extension Connection {
    /// What ``rowIDs(changedIn:by:_:)`` collects.
    public enum RowChange: Sendable {
        case update, delete, insert

        var code: Int32 {
            switch self {
            case .update: SQLITE_UPDATE
            case .delete: SQLITE_DELETE
            case .insert: SQLITE_INSERT
            }
        }
    }

    /// Runs `body` and returns, with its result, the rowid of every row of `table` that `body`'s
    /// statements changed as `change` says, in the order SQLite changed them. SQLite reports
    /// each row as it writes it (`sqlite3_update_hook`), so no statement reads the rows again:
    /// an `UPDATE … WHERE` that also needs its rows' keys costs one pass, not a `SELECT` first
    /// or a `RETURNING` (which SQLite runs as a second pass over an ephemeral table). Only for
    /// tables with a rowid (SQLite does not report a `WITHOUT ROWID` table's rows).
    public func rowIDs<T>(changedIn table: String, by change: RowChange, _ body: () throws -> T) rethrows -> (T, [Int64]) {
        guard let handle else { preconditionFailure("Connection used after close(): open a new connection.") }
        let collector = ChangedRows(table: table, operation: change.code)
        let context = Unmanaged.passUnretained(collector).toOpaque()
        sqlite3_update_hook(handle, { context, operation, _, table, rowID in
            guard let context, let table else { return }
            let collector = Unmanaged<ChangedRows>.fromOpaque(context).takeUnretainedValue()
            guard operation == collector.operation else { return }
            // The table name, compared as bytes (no String made per row).
            var index = 0
            while table[index] != 0 {
                guard index < collector.table.count, UInt8(bitPattern: table[index]) == collector.table[index] else { return }
                index += 1
            }
            guard index == collector.table.count else { return }
            collector.rowIDs.append(rowID)
        }, context)
        defer { sqlite3_update_hook(handle, nil, nil) }
        let result = try withExtendedLifetime(collector) { try body() }
        return (result, collector.rowIDs)
    }
}
