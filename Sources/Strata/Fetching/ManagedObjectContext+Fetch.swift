internal import Foundation
internal import StrataSQLite

extension ManagedObjectContext {
    /// The objects `request` matches, in its order. Unsaved inserts, changes and deletions of
    /// this context count unless `includesPendingChanges` is false.
    ///
    /// - Throws: ``ObjectError/unknownEntity(_:)``, ``ObjectError/unknownKey(entity:key:)`` for a sort
    ///   key the entity lacks, ``StoreError``.
    public func fetch<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [T] {
        let objects = try fetchObjects(request.untyped)
        if T.self == ManagedObject.self { return unsafeBitCast(objects, to: [T].self) }
        // A typed request: the entity's class must be T (or a subclass), checked once.
        if let first = objects.first, !(first is T) {
            throw ObjectError.wrongType(entity: request.entityName, key: "class", expected: "\(T.self)", actual: "\(Swift.type(of: first))")
        }
        // Every object of one entity is of the entity's class (no sub-entities), so the first
        // stands for all: reinterpret the array instead of a per-object unspecialised cast
        // (about 450 instructions an object, 4% of a typed fetch of every flight; callgrind).
        return unsafeBitCast(objects, to: [T].self)
    }

    /// The untyped fetch every typed one runs.
    func fetchObjects(_ request: FetchRequest<ManagedObject>) throws -> [ManagedObject] {
        assertOnQueue()
        let plan = try FetchPlan(request, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan) }
        let sql = plan.selectSQL(plan.columnList)
        var rows = FetchRowBuffer()
        try coordinator.withReader { db in
            let statement = try db.cachedStatement(sql)
            try statement.bind(plan.arguments)
            try statement.forEachRow { rows.append($0.int64(at: 0), RowSnapshot(statement: $0, info: plan.info)) }
        }
        // Into an empty registry (a fresh context) every row is new: the objects are made, then
        // registered all at once with no lookup (`ObjectTable.insertNew`). Otherwise one growth
        // of the registry instead of a rehash at every doubling, and a lookup per row.
        let fresh = registered.isEmpty
        if !fresh { registered.reserveCapacity(registered.count + rows.count) }
        // Each row is moved out of the buffer into its object, not copied out and released with
        // the buffer: one retain and one release fewer per row.
        let count = rows.count
        // No rows: the empty array itself. `Array(unsafeUninitializedCapacity: 0)` stores its
        // count (0) into the one empty-array storage the whole process shares, a write that
        // ThreadSanitizer reports against any other thread reading an empty array (CI saw it
        // against the section cache's deflate).
        guard count > 0 else { return [] }
        let name = plan.info.internedName
        let objects = [ManagedObject](unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count {
                let (key, row) = rows.takeNext()
                let object = fresh ? makeObject(plan.info, ObjectID(entity: name, primaryKey: key), consume row) : register(plan.info, key, row)
                (buffer.baseAddress.unsafelyUnwrapped + index).initialize(to: object)
            }
            initialized = count
        }
        if fresh { objects.withUnsafeBufferPointer { registered.insertNew($0) } }
        return objects
    }

    /// Typed fetch: the objects as `T` (the class named for the entity in the model).
    public func fetch<R: ManagedObject, T: ManagedObject>(_ request: FetchRequest<R>, as type: T.Type) throws -> [T] {
        try fetchObjects(request.untyped).map {
            guard let typed = $0 as? T else {
                throw ObjectError.wrongType(entity: request.entityName, key: "class", expected: "\(T.self)", actual: "\(Swift.type(of: $0))")
            }
            return typed
        }
    }

    /// The IDs `request` matches, in order, without materialising objects when nothing is pending.
    public func fetchObjectIDs<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [ObjectID] {
        assertOnQueue()
        let plan = try FetchPlan(request.untyped, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan).map(\.objectID) }
        let sql = plan.selectSQL("t0.\(quoted(primaryKeyColumn))")
        let name = plan.info.internedName
        return try coordinator.withReader { db in
            var ids: [ObjectID] = []
            let statement = try db.cachedStatement(sql)
            try statement.bind(plan.arguments)
            try statement.forEachRow { ids.append(ObjectID(entity: name, primaryKey: $0.int64(at: 0))) }
            return ids
        }
    }

    /// How many objects `request` matches (its limit and offset applied).
    public func count<T: ManagedObject>(for request: FetchRequest<T>) throws -> Int {
        assertOnQueue()
        let plan = try FetchPlan(request.untyped, schema: schema)
        if hasPendingChanges(for: plan) { return try fetchMergingPendingChanges(plan).count }
        let total: Int = try coordinator.withReader { db in
            let statement = try db.cachedStatement("SELECT count(*) FROM \(plan.info.table) AS t0" + plan.whereSQL)
            try statement.bind(plan.arguments)
            defer { statement.reset() }
            _ = try statement.step()
            return Int(statement.int64(at: 0))
        }
        let afterOffset = max(0, total - request.fetchOffset)
        return min(afterOffset, request.fetchLimit ?? afterOffset)
    }

    /// True when SQL alone cannot answer: this context or, for a child, an ancestor holds unsaved
    /// changes to an entity the request reads.
    private func hasPendingChanges(for plan: FetchPlan) -> Bool {
        guard plan.request.includesPendingChanges else { return false }
        return chainHasPendingChanges(plan.entities)
    }

    /// Store rows overlaid with the ancestors' and this context's pending changes, filtered and
    /// sorted in memory by the same rules as SQL.
    private func fetchMergingPendingChanges(_ plan: FetchPlan) throws -> [ManagedObject] {
        let sql = plan.info.selectSQL + " ORDER BY \(quoted(primaryKeyColumn))"
        var rows: [(Int64, RowSnapshot)] = try coordinator.withReader { db in
            var rows: [(Int64, RowSnapshot)] = []
            try db.cachedStatement(sql).forEachRow { rows.append(($0.int64(at: 0), RowSnapshot(statement: $0, info: plan.info))) }
            return rows
        }
        if parent != nil {
            let overlay = ancestorOverlay(plan.info.name)
            if !overlay.rows.isEmpty || !overlay.deleted.isEmpty {
                var stored = Set<Int64>()
                rows = rows.compactMap { key, row in
                    stored.insert(key)
                    let id = ObjectID(entity: plan.info.internedName, primaryKey: key)
                    if overlay.deleted.contains(id) { return nil }
                    return (key, overlay.rows[id] ?? row)
                }
                for (id, row) in overlay.rows where !stored.contains(id.primaryKey) { rows.append((id.primaryKey, row)) }
            }
        }
        var objects = rows.map { register(plan.info, $0.0, $0.1) }.filter { $0.state != .deleted && $0.state != .invalid }
        objects += inserted.values.filter { $0.info === plan.info }
        // Changed objects whose row is gone (deleted elsewhere since they were read) are still
        // here with their changes until a save decides, as a child's fetch sees them.
        if updated.values.contains(where: { $0.info === plan.info }) {
            let listed = Set(rows.lazy.map(\.0))
            objects += updated.values.filter { $0.info === plan.info && !listed.contains($0.primaryKey) }
        }
        objects = try objects.filter { try plan.matches($0, in: self) }
        // Each object's sort values once (they may follow relationships), not per comparison.
        let keyed = try objects.map { ($0, try plan.sortValues(ObjectSubject(object: $0, context: self))) }
        objects = keyed.sorted { l, r in
            let order = plan.compareSortValues(l.1, r.1)
            return order != 0 ? order < 0 : l.0.primaryKey < r.0.primaryKey
        }.map(\.0)
        let start = min(plan.request.fetchOffset, objects.count)
        let end = plan.request.fetchLimit.map { min(start + $0, objects.count) } ?? objects.count
        return Array(objects[start..<end])
    }
}

/// A fetch request checked against the model: entity, predicate and sort keys resolved, SQL built.
struct FetchPlan {
    var request: FetchRequest<ManagedObject>
    let info: EntityInfo
    let condition: BoundCondition?
    let sortPaths: [(path: BoundPath, key: SortKey)]
    /// Every entity the request reads: pending changes to any of them mean SQL alone can't answer.
    let entities: Set<String>
    /// The entities the request reaches through a relationship (the root too when a key path
    /// leads back to it): a change to one of their rows can move rows of the root it did not
    /// write, so an incremental cache refresh is impossible across it.
    let relatedEntities: Set<String>
    /// ` WHERE …` (or empty), with its arguments, then ` ORDER BY …`.
    let whereSQL: String
    /// ` LEFT JOIN …` for sort keys through to-ones (or empty); part of every SELECT with `orderSQL`.
    let joinSQL: String
    let orderSQL: String
    let arguments: [SQLiteValue]
    /// Each sort key's value as an SQL expression on `t0` (before folding or collation): what a
    /// results controller reads beside each ID.
    let sortValueSQL: [String]

    init(_ request: FetchRequest<ManagedObject>, schema: Schema) throws {
        if let error = request.translationError { throw error }
        guard let info = schema.infos[request.entityName] else { throw ObjectError.unknownEntity(request.entityName) }
        precondition(request.fetchOffset >= 0 && (request.fetchLimit ?? 0) >= 0,
                     "FetchRequest fetchLimit and fetchOffset must not be negative.")
        self.request = request
        self.info = info
        var related: Set<String> = []
        if let predicate = request.condition {
            var binder = ConditionBinder(schema: schema, root: info, condition: predicate)
            condition = try binder.bind(predicate)
            related.formUnion(binder.reached)
        } else {
            condition = nil
        }
        sortPaths = try request.sortKeys.map { key in
            let (path, reached) = try FetchPlan.sortPath(key.key, schema: schema, root: info)
            related.formUnion(reached)
            return (path, key)
        }
        relatedEntities = related
        entities = related.union([info.name])
        var sql = ConditionSQL()
        whereSQL = condition.map { " WHERE " + sql.condition($0, alias: "t0") } ?? ""
        var values: [String] = []
        // A sort key through to-ones reads its value through LEFT JOINs on the primary key (one
        // lookup per row, shared by every key through the same hops) rather than a correlated
        // subquery, which SQLite runs twice per row: once for the ORDER BY term and once for the
        // selected value. At most one row matches, so the rows are the same.
        var joins = ""
        var joinAliases: [String: String] = [:]
        let terms = sortPaths.map { sort -> String in
            var alias = "t0"
            for hop in sort.path.hops {
                let foreignKey = "\(alias).\(quoted(hop.owner.toOnes[hop.index].name))"
                if let existing = joinAliases[foreignKey] {
                    alias = existing
                } else {
                    let next = "s\(joinAliases.count + 1)"
                    joins += " LEFT JOIN \(hop.destination.table) AS \(next) ON \(next).\(quoted(primaryKeyColumn)) = \(foreignKey)"
                    joinAliases[foreignKey] = next
                    alias = next
                }
            }
            var expression = sql.path(BoundPath(hops: [], terminal: sort.path.terminal), alias: alias)
            values.append(expression)
            switch sort.key.comparison {
            case .binary: break
            case .caseInsensitive: expression = "strata_fold(\(expression), \(Comparison.Options.caseInsensitive.rawValue))"
            case .localized: expression += " COLLATE strata_localized"
            }
            return "\(expression) \(sort.key.ascending ? "ASC" : "DESC")"
        } + ["t0.\(quoted(primaryKeyColumn)) ASC"]
        orderSQL = " ORDER BY " + terms.joined(separator: ", ")
        joinSQL = joins
        sortValueSQL = values
        arguments = sql.arguments
    }

    /// A sort key path: to-one hops ending at an attribute.
    static func sortPath(_ key: String, schema: Schema, root: EntityInfo) throws -> (BoundPath, Set<String>) {
        var current = root
        var hops: [ToOneHop] = []
        var reached: Set<String> = []
        let segments = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for (offset, segment) in segments.enumerated() {
            switch current.slot(segment) {
            case .attribute(let index)? where offset == segments.count - 1:
                return (BoundPath(hops: hops, terminal: .attribute(current, index)), reached)
            case .toOne(let index)? where offset < segments.count - 1:
                let destination = schema.infos[current.toOnes[index].destination]!
                hops.append(ToOneHop(owner: current, index: index, destination: destination))
                reached.insert(destination.name)
                current = destination
            case nil:
                throw ObjectError.unknownKey(entity: current.name, key: segment)
            default:
                throw ObjectError.invalidValue(entity: current.name, key: segment,
                    reason: "a sort key must be an attribute or a key path through to-one relationships to one (\(key))")
            }
        }
        throw ObjectError.unknownKey(entity: root.name, key: key)
    }

    /// The whole SELECT of the primary key and each sort key's value (and `_version` when
    /// `withVersion`), in the request's order: what results controllers, their caches and
    /// `strata cache verify` read.
    func keyAndSortValuesSQL(withVersion: Bool = false) -> String {
        let version = withVersion ? ["t0.\(quoted(versionColumn))"] : []
        return selectSQL((["t0.\(quoted(primaryKeyColumn))"] + sortValueSQL + version).joined(separator: ", "))
    }

    /// `keyAndSortValuesSQL()` restricted to the root rows whose keys are in the JSON array bound
    /// to the last parameter (after ``arguments``): the rows of a commit's changed keys that the
    /// request selects, in the request's order.
    func keyAndSortValuesSQL(amongKeysAt parameter: Int, withVersion: Bool = false) -> String {
        "SELECT " + (["t0.\(quoted(primaryKeyColumn))"] + sortValueSQL + (withVersion ? ["t0.\(quoted(versionColumn))"] : [])).joined(separator: ", ")
            + " FROM \(info.table) AS t0" + joinSQL
            + whereSQL(and: "t0.\(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?\(parameter)))") + orderSQL
    }

    /// ` WHERE (condition) AND extra`, or ` WHERE extra` without a condition.
    func whereSQL(and extra: String) -> String {
        whereSQL.isEmpty ? " WHERE " + extra : " WHERE (" + whereSQL.dropFirst(" WHERE ".count) + ") AND " + extra
    }

    /// Of the two root rows whose keys are bound to `?1` and `?2`, the key of the one the
    /// request's `ORDER BY` puts first: a comparison made by SQLite itself, so it agrees with the
    /// full query by construction (collations, folding, `NULL`s, the key as the last tie-break).
    var orderProbeSQL: String {
        "SELECT t0.\(quoted(primaryKeyColumn)) FROM \(info.table) AS t0" + joinSQL
            + " WHERE t0.\(quoted(primaryKeyColumn)) IN (?1, ?2)" + orderSQL + " LIMIT 1"
    }

    var windowSQL: String {
        guard request.fetchLimit != nil || request.fetchOffset > 0 else { return "" }
        return " LIMIT \(request.fetchLimit ?? -1) OFFSET \(request.fetchOffset)"
    }

    /// The whole SELECT for `columns` (already qualified with t0).
    func selectSQL(_ columns: String) -> String {
        "SELECT \(columns) FROM \(info.table) AS t0" + scanHint + joinSQL + whereSQL + orderSQL + windowSQL
    }

    /// ` NOT INDEXED` when the request reads every root row and its first sort key is reached
    /// through a to-one (so no index of the root can give the order); otherwise empty.
    ///
    /// Without statistics, SQLite's planner walks such a query through the to-one's index (the
    /// `LEFT JOIN`'s column) and looks every row up by key from there. Each table page is then
    /// read once for every section value it holds (11 reads a page for the flights sorted by
    /// `airline.name`, measured: `EXPLAIN QUERY PLAN` says `SCAN t0 USING INDEX Flight_airline`),
    /// and the page cache cannot hold a large table. One pass over the table, then the sort the
    /// query needs anyway, reads each page once. The rowid stays usable under `NOT INDEXED`.
    var scanHint: String {
        guard condition == nil, let first = sortPaths.first, !first.path.hops.isEmpty else { return "" }
        return " NOT INDEXED"
    }

    var columnList: String {
        ([primaryKeyColumn] + info.columns + [versionColumn]).map { "t0.\(quoted($0))" }.joined(separator: ", ")
    }

    func matches(_ object: ManagedObject, in context: ManagedObjectContext) throws -> Bool {
        try condition?.evaluate(ObjectSubject(object: object, context: context)) ?? true
    }

    /// The sort keys' values of `subject`, unfolded.
    func sortValues<Subject: ConditionSubject>(_ subject: Subject) throws -> [SQLiteValue] {
        try sortPaths.map { try $0.path.value(subject) }
    }

    /// The order of two rows by their sort keys' values, as `ORDER BY` orders them (ties: 0; the
    /// caller breaks them by primary key).
    func compareSortValues(_ lhs: [SQLiteValue], _ rhs: [SQLiteValue]) -> Int {
        for (index, sort) in sortPaths.enumerated() {
            var l = lhs[index], r = rhs[index]
            let order: Int
            switch sort.key.comparison {
            case .binary:
                order = ScalarOrder.compare(l, r)
            case .caseInsensitive:
                l = StringMatching.fold(l, .caseInsensitive)
                r = StringMatching.fold(r, .caseInsensitive)
                order = ScalarOrder.compare(l, r)
            case .localized:
                if case .text(let a) = l, case .text(let b) = r { order = StringMatching.localizedCompare(a, b) }
                else { order = ScalarOrder.compare(l, r) }
            }
            if order != 0 { return sort.key.ascending ? order : -order }
        }
        return 0
    }}

/// The rows a fetch read, keyed by primary key, before their objects are made: appended while
/// the statement steps, then moved out in order. A buffer of its own rather than an array: no
/// uniqueness check per append and per removal, and growth by `realloc`, which moves a large
/// buffer's pages instead of copying its rows (about 60 instructions a row of a fetch of
/// every flight, callgrind).
struct FetchRowBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<(Int64, RowSnapshot)>
    private var capacity = 64
    /// Rows appended.
    private(set) var count = 0
    /// Rows moved out (the first `taken`).
    private var taken = 0

    init() {
        base = FetchRowBuffer.reallocate(nil, capacity: 64)
    }

    deinit {
        // Rows not moved out (a fetch that threw while stepping) are released here.
        (base + taken).deinitialize(count: count - taken)
        free(base)
    }

    /// The same memory, resized for `capacity` rows, or new memory. Rows are moved bit for bit
    /// (a row's storage reference may be).
    private static func reallocate(_ pointer: UnsafeMutablePointer<(Int64, RowSnapshot)>?, capacity: Int) -> UnsafeMutablePointer<(Int64, RowSnapshot)> {
        let bytes = capacity * MemoryLayout<(Int64, RowSnapshot)>.stride
        guard let memory = realloc(pointer, bytes) else { preconditionFailure("out of memory for \(capacity) rows of a fetch") }
        return memory.bindMemory(to: (Int64, RowSnapshot).self, capacity: capacity)
    }

    @inline(__always)
    mutating func append(_ key: Int64, _ row: consuming RowSnapshot) {
        if count == capacity { grow() }
        (base + count).initialize(to: (key, row))
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        capacity *= 2
        base = FetchRowBuffer.reallocate(base, capacity: capacity)
    }

    /// Moves the next row out, in the order they were appended.
    @inline(__always)
    mutating func takeNext() -> (Int64, RowSnapshot) {
        precondition(taken < count, "no row left to take")
        defer { taken += 1 }
        return (base + taken).move()
    }
}
