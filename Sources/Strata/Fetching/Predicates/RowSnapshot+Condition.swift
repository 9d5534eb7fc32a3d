internal import StrataSQLite

/// A committed row as a condition subject: values from a ``RowSnapshot``, relationships followed
/// through the store. The results controller evaluates membership on these without
/// materialising managed objects.
struct RowSubject: ConditionSubject {
    let info: EntityInfo
    let primaryKey: Int64
    let row: RowSnapshot
    let coordinator: StoreCoordinator

    func storedValue(attribute index: Int) throws -> SQLiteValue {
        row.attributes[index]?.storageValue ?? .null
    }

    func foreignKey(toOne index: Int) throws -> Int64? { row.toOnes[index] }

    func follow(toOne index: Int) throws -> RowSubject? {
        guard let key = row.toOnes[index] else { return nil }
        let destination = coordinator.model.schema.infos[info.toOnes[index].destination]!
        return try coordinator.rows(destination, where: "\(quoted(primaryKeyColumn)) = ?", [.integer(key)]).first
    }

    func members(toMany index: Int) throws -> [RowSubject] {
        let destination = coordinator.model.schema.infos[info.toManys[index].destination]!
        switch info.toManyStorage[index] {
        case let .inverseColumn(_, column):
            return try coordinator.rows(destination, where: "\(column) = ?", [.integer(primaryKey)])
        case let .joinTable(table, own, other):
            return try coordinator.rows(destination, where: "\(quoted(primaryKeyColumn)) IN (SELECT \(other) FROM \(table) WHERE \(own) = ?)",
                                        [.integer(primaryKey)])
        }
    }
}

extension StoreCoordinator {
    /// Committed rows of `info` matching an SQL condition on its own columns.
    func rows(_ info: EntityInfo, where condition: String, _ arguments: [SQLiteValue]) throws -> [RowSubject] {
        let rows: [(Int64, RowSnapshot)] = try withReader { db in
            let statement = try db.cachedStatement(info.selectSQL + " WHERE " + condition)
            try statement.bind(arguments)
            var rows: [(Int64, RowSnapshot)] = []
            try statement.forEachRow { rows.append(($0.int64(at: 0), RowSnapshot(statement: $0, info: info))) }
            return rows
        }
        return rows.map { RowSubject(info: info, primaryKey: $0.0, row: $0.1, coordinator: self) }
    }

    /// Evaluates `condition` in memory on the committed row of `id` (`nil` when there is no such row).
    /// The same answer a fetch gives; used where no managed object should be materialised.
    public func evaluate(_ condition: Condition, onStoredObject id: ObjectID) throws -> Bool? {
        guard let info = model.schema.infos[id.entityName] else { throw ObjectError.unknownEntity(id.entityName) }
        var binder = ConditionBinder(schema: model.schema, root: info, condition: condition)
        let bound = try binder.bind(condition)
        guard let subject = try rows(info, where: "\(quoted(primaryKeyColumn)) = ?", [.integer(id.primaryKey)]).first else { return nil }
        return try bound.evaluate(subject)
    }
}
