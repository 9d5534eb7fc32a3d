internal import Foundation
internal import StrataSQLite

extension ManagedObjectContext {
    /// The objects `request` matches, in its order. Unsaved inserts, changes and deletions of
    /// this context count unless `includesPendingChanges` is false.
    ///
    /// - Throws: ``ObjectError/unknownEntity(_:)``, ``ObjectError/unknownKey(entity:key:)`` for a sort
    ///   key the entity lacks, ``StoreError``.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        assertOnQueue()
        let plan = try FetchPlan(request, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan) }
        let sql = plan.info.selectSQL + plan.orderAndWindowSQL
        return try coordinator.withConnection { db in
            var rows: [(Int64, RowSnapshot)] = []
            try db.cachedStatement(sql).forEachRow { rows.append(($0.int64(at: 0), RowSnapshot(statement: $0, info: plan.info))) }
            return rows
        }.map { register(plan.info, $0.0, $0.1) }
    }

    /// Typed fetch: the objects as `T` (the class named for the entity in the model).
    public func fetch<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        try fetch(request).map {
            guard let typed = $0 as? T else {
                throw ObjectError.wrongType(entity: request.entityName, key: "class", expected: "\(T.self)", actual: "\(Swift.type(of: $0))")
            }
            return typed
        }
    }

    /// The IDs `request` matches, in order, without materialising objects when nothing is pending.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        assertOnQueue()
        let plan = try FetchPlan(request, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan).map(\.objectID) }
        let sql = "SELECT \(quoted(primaryKeyColumn)) FROM \(plan.info.table)" + plan.orderAndWindowSQL
        let name = plan.info.name
        return try coordinator.withConnection { db in
            var ids: [ObjectID] = []
            try db.cachedStatement(sql).forEachRow { ids.append(ObjectID(entityName: name, primaryKey: $0.int64(at: 0))) }
            return ids
        }
    }

    /// How many objects `request` matches (its limit and offset applied).
    public func count(for request: FetchRequest) throws -> Int {
        assertOnQueue()
        let plan = try FetchPlan(request, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan).count }
        let total: Int = try coordinator.withConnection { db in
            let statement = try db.cachedStatement("SELECT count(*) FROM \(plan.info.table)")
            defer { statement.reset() }
            _ = try statement.step()
            return Int(statement.int64(at: 0))
        }
        let afterOffset = max(0, total - request.fetchOffset)
        return min(afterOffset, request.fetchLimit ?? afterOffset)
    }

    private func hasPendingChanges(for plan: FetchPlan) -> Bool {
        guard plan.request.includesPendingChanges else { return false }
        let name = plan.info.name
        return inserted.keys.contains { $0.entityName == name }
            || deleted.keys.contains { $0.entityName == name }
            || updated.keys.contains { $0.entityName == name }
    }

    /// Store rows merged with this context's pending changes, sorted in memory by the same rules as SQL.
    private func fetchMergingPendingChanges(_ plan: FetchPlan) throws -> [ManagedObject] {
        var unwindowed = plan
        unwindowed.request.fetchLimit = nil
        unwindowed.request.fetchOffset = 0
        let sql = plan.info.selectSQL + " ORDER BY \(quoted(primaryKeyColumn))"
        let rows: [(Int64, RowSnapshot)] = try coordinator.withConnection { db in
            var rows: [(Int64, RowSnapshot)] = []
            try db.cachedStatement(sql).forEachRow { rows.append(($0.int64(at: 0), RowSnapshot(statement: $0, info: plan.info))) }
            return rows
        }
        var objects = rows.map { register(plan.info, $0.0, $0.1) }.filter { $0.state != .deleted && $0.state != .invalid }
        objects += inserted.values.filter { $0.info === plan.info }
        objects.sort { plan.orderedBefore($0, $1) }
        let start = min(plan.request.fetchOffset, objects.count)
        let end = plan.request.fetchLimit.map { min(start + $0, objects.count) } ?? objects.count
        return Array(objects[start..<end])
    }
}

/// A fetch request checked against the model: entity and sort keys resolved.
struct FetchPlan {
    var request: FetchRequest
    let info: EntityInfo
    /// (attribute index, ascending) per sort key.
    let sortSlots: [(index: Int, ascending: Bool, type: AttributeType)]

    init(_ request: FetchRequest, schema: Schema) throws {
        guard let info = schema.infos[request.entityName] else { throw ObjectError.unknownEntity(request.entityName) }
        precondition(request.fetchOffset >= 0 && (request.fetchLimit ?? 0) >= 0,
                     "FetchRequest fetchLimit and fetchOffset must not be negative.")
        self.request = request
        self.info = info
        sortSlots = try request.sortKeys.map { key in
            switch info.slots[key.key] {
            case .attribute(let index): return (index, key.ascending, info.attributes[index].type)
            case .toOne, .toMany:
                throw ObjectError.invalidValue(entity: info.name, key: key.key, reason: "sorting by a relationship is not supported; sort by an attribute")
            case nil:
                throw ObjectError.unknownKey(entity: info.name, key: key.key)
            }
        }
    }

    var orderAndWindowSQL: String {
        let terms = sortSlots.map { slot -> String in
            let column = quoted(info.attributes[slot.index].name)
            let expression = slot.type == .decimal ? "CAST(\(column) AS REAL)" : column
            return "\(expression) \(slot.ascending ? "ASC" : "DESC")"
        } + ["\(quoted(primaryKeyColumn)) ASC"]
        var sql = " ORDER BY " + terms.joined(separator: ", ")
        if request.fetchLimit != nil || request.fetchOffset > 0 {
            sql += " LIMIT \(request.fetchLimit ?? -1) OFFSET \(request.fetchOffset)"
        }
        return sql
    }

    func orderedBefore(_ lhs: ManagedObject, _ rhs: ManagedObject) -> Bool {
        for slot in sortSlots {
            let order = SortOrder.compare(lhs.current.attributes[slot.index], rhs.current.attributes[slot.index])
            if order != 0 { return slot.ascending ? order < 0 : order > 0 }
        }
        return lhs.objectID.primaryKey < rhs.objectID.primaryKey
    }
}

/// SQLite's ordering of stored values, reproduced in memory.
enum SortOrder {
    /// -1, 0 or 1. `nil` sorts first; strings, URLs and decimals-as-text compare as SQLite does.
    static func compare(_ lhs: AttributeValue?, _ rhs: AttributeValue?) -> Int {
        switch (lhs, rhs) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (l?, r?): return compare(l, r)
        }
    }

    static func compare(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Int {
        switch (lhs, rhs) {
        case let (.int16(a), .int16(b)): return sign(a, b)
        case let (.int32(a), .int32(b)): return sign(a, b)
        case let (.int64(a), .int64(b)): return sign(a, b)
        case let (.bool(a), .bool(b)): return sign(a ? 1 : 0, b ? 1 : 0)
        case let (.string(a), .string(b)): return bytes(a.utf8, b.utf8)
        case let (.url(a), .url(b)): return bytes(a.absoluteString.utf8, b.absoluteString.utf8)
        case let (.binary(a), .binary(b)): return bytes(a, b)
        case let (.uuid(a), .uuid(b)):
            return bytes(withUnsafeBytes(of: a.uuid) { Array($0) }, withUnsafeBytes(of: b.uuid) { Array($0) })
        default:
            return sign(lhs.numericValue ?? 0, rhs.numericValue ?? 0)
        }
    }

    private static func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a == b ? 0 : 1) }

    /// memcmp order, then shorter first: SQLite's BINARY collation.
    private static func bytes<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Int {
        var left = a.makeIterator(), right = b.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }
}
