internal import Foundation
internal import StrataSQLite

// The server state a sync engine last applied (its "base"), without a copy of the store: every
// commit after an apply records, by SQLite triggers in its own transaction, each row's state
// before its first change (`strata_sync_before_<entity>`; a row that did not exist is marked
// absent). The base of a row is that state when recorded, else the row itself. The apply clears
// the records in the transaction that writes its rows. Triggers catch every route that writes a
// row: saves, batch requests, imports, another process, another build.
extension StoreCoordinator {
    static func beforeTable(_ info: EntityInfo) -> String { quoted("strata_sync_before_\(info.name)") }

    /// Creates the before-image tables and triggers (once; idempotent).
    @_spi(StrataSync)
    public func installSyncCapture() throws {
        try refuseWriteIfReadOnly("installing sync capture")
        try withConnection { db in
            try db.transaction(.immediate) {
                for info in model.schema.infos.values.sorted(by: { $0.name < $1.name }) {
                    let shadow = StoreCoordinator.beforeTable(info)
                    let pk = quoted(primaryKeyColumn), version = quoted(versionColumn)
                    let columns = info.columns.map(quoted)
                    try db.execute("CREATE TABLE IF NOT EXISTS \(shadow) (\(pk) INTEGER PRIMARY KEY, "
                        + (columns + [version]).joined(separator: ", ") + ", _absent INTEGER NOT NULL)")
                    let all = ([pk] + columns + [version]).joined(separator: ", ")
                    let old = ([pk] + columns + [version]).map { "OLD.\($0)" }.joined(separator: ", ")
                    let base = "strata_sync_capture_\(info.name)"
                    try db.execute("CREATE TRIGGER IF NOT EXISTS \(quoted(base + "_insert")) AFTER INSERT ON \(info.table) BEGIN "
                        + "INSERT OR IGNORE INTO \(shadow) (\(pk), _absent) VALUES (NEW.\(pk), 1); END")
                    try db.execute("CREATE TRIGGER IF NOT EXISTS \(quoted(base + "_update")) AFTER UPDATE ON \(info.table) BEGIN "
                        + "INSERT OR IGNORE INTO \(shadow) (\(all), _absent) VALUES (\(old), 0); END")
                    try db.execute("CREATE TRIGGER IF NOT EXISTS \(quoted(base + "_delete")) AFTER DELETE ON \(info.table) BEGIN "
                        + "INSERT OR IGNORE INTO \(shadow) (\(all), _absent) VALUES (\(old), 0); END")
                }
            }
        }
    }

    static func clearSyncCapture(_ db: Connection, schema: Schema) throws {
        let exists = try db.cachedStatement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name LIKE 'strata_sync_before_%' LIMIT 1")
        let any = try exists.step()
        exists.reset()
        guard any else { return }
        for info in schema.infos.values { try db.execute("DELETE FROM \(beforeTable(info))") }
    }

    /// Reads the base (see above) in one read transaction.
    @_spi(StrataSync)
    public func withSyncBase<T>(_ body: (SyncBase) throws -> T) throws -> T {
        try withReader { db in try db.transaction(.deferred) { try body(SyncBase(db: db, schema: model.schema)) } }
    }
}

/// The rows as a sync engine last applied them (see ``StoreCoordinator/withSyncBase(_:)``): valid
/// inside that call only (it reads through its read transaction).
@_spi(StrataSync)
public struct SyncBase {
    let db: Connection
    let schema: Schema

    private func info(_ entity: String) throws -> EntityInfo {
        guard let info = schema.infos[entity] else { throw ObjectError.unknownEntity(entity) }
        return info
    }

    /// The base row of `entity`/`key` (`nil`: none).
    public func row(entity: String, key: Int64) throws -> HistoryRow? {
        let info = try info(entity)
        let shadow = StoreCoordinator.beforeTable(info)
        let recorded = try db.cachedStatement("SELECT _absent FROM \(shadow) WHERE \(quoted(primaryKeyColumn)) = ?")
        try recorded.bind(key, at: 1)
        var absent: Bool?
        if try recorded.step() { absent = recorded.int64(at: 0) != 0 }
        recorded.reset()
        if absent == true { return nil }
        let sql = absent == false ? info.selectSQL.replacingOccurrences(of: " FROM \(info.table)", with: " FROM \(shadow)") + " WHERE \(quoted(primaryKeyColumn)) = ?"
            : info.selectByKeySQL
        let select = try db.cachedStatement(sql)
        try select.bind(key, at: 1)
        defer { select.reset() }
        guard try select.step() else { return nil }
        return StoreCoordinator.historyRow(RowSnapshot(statement: select, info: info), info)
    }

    /// Every base row (a snapshot of the server's state at the position last applied).
    public func allRows() throws -> [(ObjectID, HistoryRow)] {
        var result: [(ObjectID, HistoryRow)] = []
        let pk = quoted(primaryKeyColumn)
        for info in schema.infos.values.sorted(by: { $0.name < $1.name }) {
            let shadow = StoreCoordinator.beforeTable(info)
            let fromShadow = info.selectSQL.replacingOccurrences(of: " FROM \(info.table)", with: " FROM \(shadow)") + " WHERE _absent = 0"
            for sql in [info.selectSQL + " WHERE \(pk) NOT IN (SELECT \(pk) FROM \(shadow))", fromShadow] {
                let select = try db.prepare(sql)
                while try select.step() {
                    result.append((ObjectID(entity: info.internedName, primaryKey: select.int64(at: 0)),
                                   StoreCoordinator.historyRow(RowSnapshot(statement: select, info: info), info)))
                }
            }
        }
        return result
    }

    /// The rows changed since the last apply (their base is their recorded state, not the row).
    public func changedSinceApply() throws -> [ObjectID] {
        var result: [ObjectID] = []
        for info in schema.infos.values.sorted(by: { $0.name < $1.name }) {
            let select = try db.cachedStatement("SELECT \(quoted(primaryKeyColumn)) FROM \(StoreCoordinator.beforeTable(info))")
            defer { select.reset() }
            while try select.step() { result.append(ObjectID(entity: info.internedName, primaryKey: select.int64(at: 0))) }
        }
        return result
    }

    /// Keys of the base rows of `entity` whose attributes equal `values` (a unique key's holders).
    public func keys(entity: String, whereAttributes values: [(String, AttributeValue)]) throws -> [Int64] {
        let info = try info(entity)
        return try keys(info, values.map { quoted($0.0) }, values.map(\.1))
    }

    /// Keys of the base rows of `entity` whose to-one `relationship` names `key`.
    public func keys(entity: String, whereToOne relationship: String, names key: Int64) throws -> [Int64] {
        let info = try info(entity)
        return try keys(info, [quoted(relationship)], [.int64(key)])
    }

    private func keys(_ info: EntityInfo, _ columns: [String], _ values: [AttributeValue]) throws -> [Int64] {
        let pk = quoted(primaryKeyColumn), shadow = StoreCoordinator.beforeTable(info)
        let condition = columns.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: " AND ")
        let select = try db.cachedStatement("SELECT \(pk) FROM \(info.table) WHERE \(condition) AND \(pk) NOT IN (SELECT \(pk) FROM \(shadow)) "
            + "UNION SELECT \(pk) FROM \(shadow) WHERE _absent = 0 AND \(condition)")
        for (index, value) in values.enumerated() { try RowSnapshot.bind(value, to: select, at: Int32(index + 1)) }
        defer { select.reset() }
        var result: [Int64] = []
        while try select.step() { result.append(select.int64(at: 0)) }
        return result
    }
}

extension StoreCoordinator {
    static func historyRow(_ row: RowSnapshot, _ info: EntityInfo) -> HistoryRow {
        var attributes: [String: AttributeValue?] = [:]
        for (index, attribute) in info.attributes.enumerated() { attributes[attribute.name] = .some(row.attributes[index]) }
        var toOnes: [String: ObjectID?] = [:]
        for (index, relationship) in info.toOnes.enumerated() {
            toOnes[relationship.name] = .some(row.toOnes[index].map { ObjectID(entity: info.toOneDestinationNames[index], primaryKey: $0) })
        }
        return HistoryRow(attributes: attributes, toOnes: toOnes)
    }
}
