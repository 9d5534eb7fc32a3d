internal import StrataSQLite

/// What a results controller's rows depend on beyond their own row: the to-one chains its sort
/// keys and predicate follow, and the entities it reaches through to-many relationships.
struct FetchedDependencies {
    /// Each to-one chain from the root, with what it reads at its end.
    struct Chain {
        var hops: [ToOneHop]
        var terminal: BoundPath.Terminal
    }

    var chains: [Chain] = []
    /// Entities read through a to-many relationship (a quantifier or an aggregate): a change to
    /// one of them re-runs the request.
    var throughToMany: Set<String> = []

    init(_ plan: FetchPlan) {
        for sort in plan.sortPaths { add(sort.path) }
        if let condition = plan.condition { collect(condition) }
    }

    private mutating func add(_ path: BoundPath) {
        guard !path.hops.isEmpty else { return }
        chains.append(Chain(hops: path.hops, terminal: path.terminal))
    }

    private mutating func collect(_ condition: BoundCondition) {
        switch condition {
        case .constant: break
        case .not(let inner): collect(inner)
        case .and(let terms), .or(let terms): terms.forEach { collect($0) }
        case let .compare(lhs, _, _, rhs):
            collect(lhs)
            collect(rhs)
        case let .quantified(_, owner, many, inner):
            if let last = owner.last { chains.append(Chain(hops: owner, terminal: .primaryKey(last.destination))) }
            throughToMany.insert(many.destination.name)
            throughToMany.formUnion(FetchedDependencies.entities(inner))
        }
    }

    private mutating func collect(_ operand: BoundOperand) {
        switch operand {
        case .constant, .list: break
        case .path(let path): add(path)
        case .aggregate(let aggregate):
            if let last = aggregate.prefix.last { chains.append(Chain(hops: aggregate.prefix, terminal: .primaryKey(last.destination))) }
            throughToMany.insert(aggregate.many.destination.name)
            for hop in aggregate.value?.hops ?? [] { throughToMany.insert(hop.destination.name) }
        }
    }

    /// Every entity a condition reaches (relative to whatever it is evaluated on).
    private static func entities(_ condition: BoundCondition) -> Set<String> {
        var found: Set<String> = []
        func operand(_ o: BoundOperand) {
            switch o {
            case .constant, .list: break
            case .path(let p): p.hops.forEach { found.insert($0.destination.name) }
            case .aggregate(let a):
                a.prefix.forEach { found.insert($0.destination.name) }
                found.insert(a.many.destination.name)
                a.value?.hops.forEach { found.insert($0.destination.name) }
            }
        }
        func walk(_ c: BoundCondition) {
            switch c {
            case .constant: break
            case .not(let inner): walk(inner)
            case .and(let terms), .or(let terms): terms.forEach(walk)
            case let .compare(l, _, _, r):
                operand(l)
                operand(r)
            case let .quantified(_, owner, many, inner):
                owner.forEach { found.insert($0.destination.name) }
                found.insert(many.destination.name)
                walk(inner)
            }
        }
        walk(condition)
        return found
    }

    /// The slots read on objects of `entity`, over every chain that passes through it.
    func slots(of entity: String) -> [Slot] {
        var slots: [Slot] = []
        for chain in chains {
            for (j, hop) in chain.hops.enumerated() where hop.destination.name == entity {
                let slot: Slot?
                if j < chain.hops.count - 1 {
                    slot = .toOne(chain.hops[j + 1].index)
                } else {
                    switch chain.terminal {
                    case .attribute(_, let index): slot = .attribute(index)
                    case .foreignKey(_, let index): slot = .toOne(index)
                    case .primaryKey: slot = nil
                    }
                }
                if let slot, !slots.contains(slot) { slots.append(slot) }
            }
        }
        return slots
    }

    /// The related entities whose objects' values the chains read.
    var relatedEntities: Set<String> {
        Set(chains.flatMap { $0.hops.map(\.destination.name) })
    }

    /// SQL selecting the root keys whose chain reaches, at hop `j`, one of the keys bound as a
    /// JSON array to its one parameter.
    static func reachSQL(_ hops: [ToOneHop], through j: Int) -> String {
        var inner = "SELECT value FROM json_each(?)"
        for i in stride(from: j, through: 0, by: -1) {
            let owner = hops[i].owner
            let column = owner.columns[owner.attributes.count + hops[i].index]
            inner = "SELECT \(quoted(primaryKeyColumn)) FROM \(owner.table) WHERE \(quoted(column)) IN (\(inner))"
        }
        return inner
    }
}

/// A row as a context sees it (its pending changes and its ancestors' included), as a
/// condition subject: what a results controller evaluates changed rows on, without
/// materialising or registering objects.
struct VisibleSubject: ConditionSubject {
    let context: ManagedObjectContext
    let info: EntityInfo
    let primaryKey: Int64
    let row: RowSnapshot
    /// Rows already read in this one placement (the related rows every probe walks through).
    let memo: VisibleRowMemo?

    init?(context: ManagedObjectContext, info: EntityInfo, key: Int64, memo: VisibleRowMemo? = nil) throws {
        let id = ObjectID(entity: info.internedName, primaryKey: key)
        let found = if let memo { try memo.row(id, in: context) } else { try context.visibleRow(id) }
        guard let row = found else { return nil }
        self.context = context
        self.info = info
        primaryKey = key
        self.row = row
        self.memo = memo
    }

    func storedValue(attribute index: Int) throws -> SQLiteValue {
        row.attributes[index]?.storageValue ?? .null
    }

    func foreignKey(toOne index: Int) throws -> Int64? { row.toOnes[index] }

    func follow(toOne index: Int) throws -> VisibleSubject? {
        guard let key = row.toOnes[index] else { return nil }
        let destination = context.schema.infos[info.toOnes[index].destination]!
        return try VisibleSubject(context: context, info: destination, key: key, memo: memo)
    }

    func members(toMany index: Int) throws -> [VisibleSubject] {
        let destination = context.schema.infos[info.toManys[index].destination]!
        let keys = try context.visibleToManyKeys(ObjectID(entity: info.internedName, primaryKey: primaryKey), info, index)
        let rows = try context.visibleRows(keys.sorted().map { ObjectID(entity: destination.internedName, primaryKey: $0) })
        return rows.map { VisibleSubject(context: context, info: destination, primaryKey: $0.key.primaryKey, row: $0.value, memo: memo) }
    }

    private init(context: ManagedObjectContext, info: EntityInfo, primaryKey: Int64, row: RowSnapshot, memo: VisibleRowMemo?) {
        self.context = context
        self.info = info
        self.primaryKey = primaryKey
        self.row = row
        self.memo = memo
    }

    /// The values of `slots` (as the related-values cache keeps them).
    func values(_ slots: [Slot]) -> [SQLiteValue] {
        slots.map { slot in
            switch slot {
            case .attribute(let index): row.attributes[index]?.storageValue ?? .null
            case .toOne(let index): row.toOnes[index].map { .integer($0) } ?? .null
            case .toMany: .null
            }
        }
    }
}

/// The rows of one placement's related objects, each read once: placing a row probes about
/// twenty neighbours, and each probe walked its sort key path (`airline.name`) and checked the
/// related values, reading the same airline row through the parent context and the store every
/// time (two fifths of a one-change placement's instructions at 1,000,000 rows). Made for one
/// `follow` call on the context's queue and dropped after it: the context does not change while
/// it runs, and one row read once is also one consistent view of it.
final class VisibleRowMemo {
    private var rows: [ObjectID: RowSnapshot?] = [:]

    func row(_ id: ObjectID, in context: ManagedObjectContext) throws -> RowSnapshot? {
        if let known = rows[id] { return known }
        let row = try context.visibleRow(id)
        rows[id] = .some(row)
        return row
    }
}

extension ManagedObjectContext {
    /// The IDs of `entity` with unsaved changes in this context or an ancestor.
    func chainPendingKeys(_ entity: String) -> Set<Int64> {
        var keys: Set<Int64> = []
        for id in inserted.keys where id.entityName == entity { keys.insert(id.primaryKey) }
        // An object edited back to its saved values is, as far as its row goes, unchanged.
        for (id, object) in updated where id.entityName == entity && object.current != object.committed { keys.insert(id.primaryKey) }
        for id in deleted.keys where id.entityName == entity { keys.insert(id.primaryKey) }
        guard let parent else { return keys }
        return keys.union(parent.performAndWait { parent.chainPendingKeys(entity) })
    }
}

extension AnyFetchedResultsController {
    /// The values the key paths read on every object of each related entity small enough, as the
    /// store holds them, read through `db` (the caller's read transaction, so that they describe
    /// the same snapshot as the rows read beside them: values read later could be newer than the
    /// list, and the change that brings them would then find nothing changed).
    func storedRelatedValues(_ plan: FetchPlan, on db: Connection) throws -> [ObjectID: [SQLiteValue]] {
        let context = managedObjectContext
        let dependencies = checkedDependencies()
        var result: [ObjectID: [SQLiteValue]] = [:]
        for entity in dependencies.relatedEntities.sorted() {
            guard let info = context.schema.infos[entity] else { continue }
            let slots = dependencies.slots(of: entity)
            guard !slots.isEmpty else { continue }
            let columns = slots.map { slot -> String in
                switch slot {
                case .attribute(let index): quoted(info.columns[index])
                case .toOne(let index): quoted(info.columns[info.attributes.count + index])
                case .toMany: "NULL"
                }
            }
            let size = try db.cachedStatement("SELECT max(\(quoted(primaryKeyColumn))) FROM \(info.table)")
            var largest: Int64 = 0
            try size.forEachRow { largest = $0.int64(at: 0) }
            guard largest <= AnyFetchedResultsController.relatedPrefillLimit else { continue }
            let statement = try db.cachedStatement(
                "SELECT \(quoted(primaryKeyColumn)), \(columns.joined(separator: ", ")) FROM \(info.table)")
            try statement.forEachRow { row in
                // Stored values are what `AttributeValue.storageValue` gives for these slots.
                result[ObjectID(entityName: entity, primaryKey: row.int64(at: 0))] = (1...Int32(columns.count)).map { row.value(at: $0) }
            }
        }
        return result
    }

    /// Related entities up to this many rows have their read values loaded at fetch time, so
    /// that the first change to one of their objects is judged by its values, not assumed.
    static let relatedPrefillLimit: Int64 = 100_000

    /// Loads, for each related entity small enough, the values the key paths read on each of
    /// its objects (one statement per entity; objects with unsaved changes along the chain read
    /// as the context sees them).
    func loadRelatedValues(_ plan: FetchPlan) throws {
        guard !relatedValuesLoaded else { return }
        relatedValuesLoaded = true
        placementValues = [:]
        let context = managedObjectContext
        let dependencies = checkedDependencies()
        let stored = try pendingRelatedValues ?? context.coordinator.withReader { db in try storedRelatedValues(plan, on: db) }
        pendingRelatedValues = nil
        for (id, values) in stored { relatedValues[id] = values }
        for entity in dependencies.relatedEntities.sorted() {
            guard let info = context.schema.infos[entity], !dependencies.slots(of: entity).isEmpty else { continue }
            let slots = dependencies.slots(of: entity)
            for key in context.chainPendingKeys(entity) {
                let id = ObjectID(entityName: entity, primaryKey: key)
                relatedValues[id] = try VisibleSubject(context: context, info: info, key: key)?.values(slots) ?? []
            }
        }
    }
}
