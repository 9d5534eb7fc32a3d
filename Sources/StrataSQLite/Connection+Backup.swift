internal import CSQLite

extension Connection {
    /// Replaces this database's whole content with `source`'s, page by page, in one step
    /// (SQLite's online backup API with every page copied at once). Readers of this database see
    /// either the old content or the new, never a mix; the page sizes must match in WAL mode.
    public func restore(from source: Connection) throws {
        guard let backup = sqlite3_backup_init(liveHandle, "main", source.liveHandle, "main") else {
            throw error(code: sqlite3_errcode(liveHandle), sql: "backup from \(source.path)")
        }
        let step = sqlite3_backup_step(backup, -1)
        let finish = sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE, finish == SQLITE_OK else {
            throw error(code: step == SQLITE_DONE ? finish : step, sql: "backup from \(source.path)")
        }
    }
}
