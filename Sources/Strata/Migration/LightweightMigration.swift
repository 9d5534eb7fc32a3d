internal import Foundation
internal import StrataSQLite

/// A model change that lightweight migration can't infer. Found before anything is written.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An attribute kept (same name or renaming identifier) whose type changed.
    case typeChange(entity: String, attribute: String, from: AttributeType, to: AttributeType)
    /// A new or formerly optional attribute that is required and has no default to fill existing rows with.
    case requiredWithoutDefault(entity: String, attribute: String)
    /// A relationship kept whose kind (to-one, to-many) or destination changed.
    case relationshipChange(entity: String, relationship: String)
    /// A renaming identifier that names nothing in the source model.
    case unknownRenamingIdentifier(entity: String, property: String?, identifier: String)
    /// The store holds a model version that the given versions don't list.
    case unknownStoreVersion(storeVersion: String, storeHash: String)
    /// A mapping names an entity or key neither model has, or its filter or an expression doesn't
    /// bind. Found before anything is written.
    case invalidMapping(mapping: String, reason: String)
    /// An object a mapping made breaks the destination model (a required value missing, a value
    /// of the wrong type). The migration is abandoned and the store left as it was.
    case invalidObject(entity: String, key: String, reason: String)
    /// A custom policy threw; the migration is abandoned and the store left as it was.
    case policyFailed(mapping: String, sourceKey: Int64, error: String)
    /// The store's file is open elsewhere (its write-ahead log is not empty), so it can't be
    /// replaced by the migrated store.
    case storeInUse(path: String)
    /// Writing, syncing or swapping in the migrated store failed; the old store is left as it was.
    case fileSystem(path: String, reason: String)
    /// A unique key the destination model adds is held twice by existing rows: `values` are up
    /// to three colliding keys (each key's values, as text), `count` how many keys collide. The
    /// store is left as it was.
    case uniqueKeyCollision(entity: String, key: [String], values: [[String]], count: Int)

    public var description: String {
        switch self {
        case let .typeChange(entity, attribute, from, to):
            "\(entity).\(attribute) changes type from \(from) to \(to): lightweight migration can't infer that; use a mapping migration"
        case let .requiredWithoutDefault(entity, attribute):
            "\(entity).\(attribute) is required and has no default value for the existing rows; give it a default or make it optional"
        case let .relationshipChange(entity, relationship):
            "\(entity).\(relationship) changes its kind or destination: lightweight migration can't infer that"
        case let .unknownRenamingIdentifier(entity, property, identifier):
            "\(entity)\(property.map { ".\($0)" } ?? "") has renaming identifier \(identifier.debugDescription), which names nothing in the store's model"
        case let .unknownStoreVersion(version, hash):
            "the store holds model version \(version) (hash \(hash.prefix(12))…), which is not among the model versions given"
        case let .invalidMapping(mapping, reason):
            "mapping \(mapping): \(reason)"
        case let .invalidObject(entity, key, reason):
            "a migrated \(entity) is invalid: \(key) \(reason)"
        case let .policyFailed(mapping, key, error):
            "the custom policy of mapping \(mapping) failed on source object \(key): \(error)"
        case let .fileSystem(path, reason): "\(path): \(reason)"
        case let .uniqueKeyCollision(entity, key, values, count):
            "\(entity)'s new unique key (\(key.joined(separator: ", "))) is held by more than one existing row for \(count) key\(count == 1 ? "" : "s"), such as "
                + values.map { "(" + $0.joined(separator: ", ") + ")" }.joined(separator: ", ") + ": remove the duplicates first, or keep the key out of the model"
        case .storeInUse(let path):
            "\(path) is open in another connection (its write-ahead log is not empty): close it before migrating"
        }
    }
}

/// One step of a migration, as a dry run lists it.
public enum MigrationStep: Sendable, Equatable, CustomStringConvertible {
    case addEntity(String)
    case removeEntity(String)
    case renameEntity(from: String, to: String)
    case addAttribute(entity: String, attribute: String, filledWith: AttributeValue?)
    case removeAttribute(entity: String, attribute: String)
    case renameAttribute(entity: String, from: String, to: String)
    /// An optional attribute becomes required: existing `nil`s get the default.
    case fillDefault(entity: String, attribute: String, value: AttributeValue)
    case addRelationship(entity: String, relationship: String)
    case removeRelationship(entity: String, relationship: String)
    case renameRelationship(entity: String, from: String, to: String)
    /// The rows of `from` are copied into `entity`'s new table (a migration that does more than
    /// add columns copies every table).
    case copyRows(entity: String, from: String)
    /// A migration that only adds attributes and to-one relationships keeps each table and adds
    /// the columns in place with these statements (`ALTER TABLE … ADD COLUMN … DEFAULT <fill>`,
    /// which SQLite runs without rewriting the table): no row is copied.
    case addColumns(entity: String, sql: [String])
    /// A mapping migration's entity mapping: which objects it carries and whether custom code runs.
    case mapEntity(from: String, to: String, filter: String?, customPolicy: Bool)

    public var description: String {
        switch self {
        case .addEntity(let e): "add entity \(e)"
        case .removeEntity(let e): "remove entity \(e) and its rows"
        case let .renameEntity(from, to): "rename entity \(from) to \(to), rows kept"
        case let .addAttribute(e, a, value): "add \(e).\(a)" + (value.map { ", existing rows get \($0)" } ?? ", existing rows get nil")
        case let .removeAttribute(e, a): "remove \(e).\(a) and its values"
        case let .renameAttribute(e, from, to): "rename \(e).\(from) to \(to), values kept"
        case let .fillDefault(e, a, value): "\(e).\(a) becomes required: nil values become \(value)"
        case let .addRelationship(e, r): "add relationship \(e).\(r) (empty)"
        case let .removeRelationship(e, r): "remove relationship \(e).\(r)"
        case let .renameRelationship(e, from, to): "rename relationship \(e).\(from) to \(to)"
        case let .copyRows(e, from): "copy the rows of \(from) into \(e)"
        case let .addColumns(e, sql): "add the columns of \(e) in place, rows not copied: " + sql.joined(separator: "; ")
        case let .mapEntity(from, to, filter, custom):
            "map \(from) to \(to)" + (filter.map { " where \($0)" } ?? "") + (custom ? " through a custom policy" : "")
        }
    }
}

/// A migration inferred from two models: entities, attributes and relationships matched by name
/// or by the destination's renaming identifier (never by guessing: an attribute removed and
/// another added is a removal and an addition).
public struct LightweightMigration: Sendable {
    public let source: Model
    public let destination: Model
    /// What it will do, in order.
    public let steps: [MigrationStep]
    /// Destination entity → source entity.
    let entityMap: [String: String]
    /// Destination entity → (destination column → SQL expression over the old table's columns).
    let columnExpressions: [String: [String: String]]
    /// Destination join table → source join table, with whether the columns swap.
    let joinMap: [String: (source: String, swapped: Bool)]
    /// When every change only adds attributes or to-one relationships to entities kept under
    /// their names: the columns to add per table (`ALTER TABLE … ADD COLUMN`, O(1) in SQLite),
    /// instead of copying every table.
    let additionsOnly: [String: [String]]?

    public init(from source: Model, to destination: Model) throws(MigrationError) {
        self.source = source
        self.destination = destination
        var steps: [MigrationStep] = []
        var entityMap: [String: String] = [:]
        var columns: [String: [String: String]] = [:]
        let sourceEntities = Dictionary(uniqueKeysWithValues: source.entities.map { ($0.name, $0) })
        for entity in destination.entities {
            let match: Entity?
            if let old = sourceEntities[entity.name] {
                match = old
            } else if let identifier = entity.renamingIdentifier {
                guard let old = sourceEntities[identifier] else {
                    throw .unknownRenamingIdentifier(entity: entity.name, property: nil, identifier: identifier)
                }
                match = old
                steps.append(.renameEntity(from: identifier, to: entity.name))
            } else {
                match = nil
            }
            guard let old = match else {
                steps.append(.addEntity(entity.name))
                continue
            }
            entityMap[entity.name] = old.name
            var expressions: [String: String] = [:]
            let oldAttributes = Dictionary(uniqueKeysWithValues: old.attributes.map { ($0.name, $0) })
            var used = Set<String>()
            for attribute in entity.attributes {
                let (previous, renamedFrom) = try LightweightMigration.match(attribute.name, attribute.renamingIdentifier,
                                                                             in: oldAttributes, entity: entity.name)
                if let renamedFrom { steps.append(.renameAttribute(entity: entity.name, from: renamedFrom, to: attribute.name)) }
                let fill = attribute.defaultValue.map { SQLLiteral.literal($0.storageValue) }
                if let previous {
                    used.insert(previous.name)
                    guard previous.type == attribute.type else {
                        throw .typeChange(entity: entity.name, attribute: attribute.name, from: previous.type, to: attribute.type)
                    }
                    if previous.isOptional && !attribute.isOptional {
                        guard let value = attribute.defaultValue, let fill else {
                            throw .requiredWithoutDefault(entity: entity.name, attribute: attribute.name)
                        }
                        steps.append(.fillDefault(entity: entity.name, attribute: attribute.name, value: value))
                        expressions[attribute.name] = "coalesce(\(quoted(previous.name)), \(fill))"
                    } else {
                        expressions[attribute.name] = quoted(previous.name)
                    }
                } else {
                    if !attribute.isOptional && attribute.defaultValue == nil {
                        throw .requiredWithoutDefault(entity: entity.name, attribute: attribute.name)
                    }
                    steps.append(.addAttribute(entity: entity.name, attribute: attribute.name, filledWith: attribute.defaultValue))
                    expressions[attribute.name] = fill ?? "NULL"
                }
            }
            for attribute in old.attributes where !used.contains(attribute.name) {
                steps.append(.removeAttribute(entity: entity.name, attribute: attribute.name))
            }
            let oldRelationships = Dictionary(uniqueKeysWithValues: old.relationships.map { ($0.name, $0) })
            var usedRelationships = Set<String>()
            for relationship in entity.relationships {
                let (previous, renamedFrom) = try LightweightMigration.match(relationship.name, relationship.renamingIdentifier,
                                                                             in: oldRelationships, entity: entity.name)
                if let renamedFrom { steps.append(.renameRelationship(entity: entity.name, from: renamedFrom, to: relationship.name)) }
                guard let previous else {
                    steps.append(.addRelationship(entity: entity.name, relationship: relationship.name))
                    if !relationship.isToMany { expressions[relationship.name] = "NULL" }
                    continue
                }
                usedRelationships.insert(previous.name)
                let destinationMatches = previous.destination == relationship.destination
                    || destination.entity(named: relationship.destination)?.renamingIdentifier == previous.destination
                guard previous.kind == relationship.kind, destinationMatches else {
                    throw .relationshipChange(entity: entity.name, relationship: relationship.name)
                }
                if !relationship.isToMany { expressions[relationship.name] = quoted(previous.name) }
            }
            for relationship in old.relationships where !usedRelationships.contains(relationship.name) {
                steps.append(.removeRelationship(entity: entity.name, relationship: relationship.name))
            }
            columns[entity.name] = expressions
            steps.append(.copyRows(entity: entity.name, from: old.name))
        }
        for entity in source.entities where !entityMap.values.contains(entity.name) {
            steps.append(.removeEntity(entity.name))
        }
        // Join tables (many-to-many): kept when both sides map to a join of the source.
        var joins: [String: (source: String, swapped: Bool)] = [:]
        let oldJoins = source.schema.joinTables
        for join in destination.schema.joinTables {
            func sourceSide(_ side: (entity: String, relationship: String)) -> (String, String)? {
                guard let oldEntity = entityMap[side.entity],
                      let relationship = destination.entity(named: side.entity)?.relationship(named: side.relationship) else { return nil }
                return (oldEntity, relationship.renamingIdentifier.flatMap { id in
                    source.entity(named: oldEntity)?.relationship(named: side.relationship) == nil ? id : nil
                } ?? side.relationship)
            }
            guard let first = sourceSide(join.first), let second = sourceSide(join.second) else { continue }
            for old in oldJoins {
                if old.first.entity == first.0 && old.first.relationship == first.1 && old.second.entity == second.0 && old.second.relationship == second.1 {
                    joins[join.name] = (old.name, false)
                } else if old.first.entity == second.0 && old.first.relationship == second.1 && old.second.entity == first.0 && old.second.relationship == first.1 {
                    joins[join.name] = (old.name, true)
                }
            }
        }
        let additions = LightweightMigration.additions(steps: steps, destination: destination, columns: columns,
                                                       joins: joins, sourceJoinCount: oldJoins.count)
        if let additions {
            // Nothing is copied: say what runs instead, and leave out the tables nothing is added to.
            steps = steps.compactMap { step in
                guard case let .copyRows(entity, from) = step, entity == from else { return step }
                guard let table = destination.schema.infos[entity]?.table, let clauses = additions[table] else { return nil }
                return .addColumns(entity: entity, sql: clauses.map { "ALTER TABLE \(table) ADD COLUMN \($0)" })
            }
        }
        self.steps = steps
        self.entityMap = entityMap
        columnExpressions = columns
        joinMap = joins
        additionsOnly = additions
    }

    /// The source property a destination property continues: the one of the same name, else the
    /// one its renaming identifier names (returned as `renamedFrom`); `nil` for a new property.
    static func match<Property>(_ name: String, _ renamingIdentifier: String?, in old: [String: Property],
                                        entity: String) throws(MigrationError) -> (Property?, renamedFrom: String?) {
        if let same = old[name] { return (same, nil) }
        guard let identifier = renamingIdentifier else { return (nil, nil) }
        guard let renamed = old[identifier] else {
            throw .unknownRenamingIdentifier(entity: entity, property: name, identifier: identifier)
        }
        return (renamed, identifier)
    }

    /// The `ADD COLUMN` clauses per table when the migration only adds attributes (with their
    /// fill as the column default) and to-one relationships; `nil` otherwise.
    private static func additions(steps: [MigrationStep], destination: Model, columns: [String: [String: String]],
                                  joins: [String: (source: String, swapped: Bool)], sourceJoinCount: Int) -> [String: [String]]? {
        var added: [String: [String]] = [:]
        for step in steps {
            switch step {
            case .copyRows(let entity, let from) where entity == from: continue
            case let .addAttribute(entity, attribute, _):
                guard let info = destination.schema.infos[entity], case .attribute(let index)? = info.slot(attribute) else { return nil }
                let declaration = info.attributes[index].type.columnDeclaration
                let fill = columns[entity]?[attribute] ?? "NULL"
                added[info.table, default: []].append(([quoted(attribute), declaration].filter { !$0.isEmpty }.joined(separator: " ")) + " DEFAULT \(fill)")
            case let .addRelationship(entity, relationship):
                guard let info = destination.schema.infos[entity] else { return nil }
                switch info.slot(relationship) {
                case .toOne?: added[info.table, default: []].append("\(quoted(relationship)) INTEGER")
                case .toMany?:
                    // Derived from an inverse column (added on the other side), or a new join table: not additions only.
                    if case .joinTable = info.toManyStorage[info.toManys.firstIndex { $0.name == relationship }!] { return nil }
                default: return nil
                }
            default: return nil
            }
        }
        guard joins.count == destination.schema.joinTables.count, joins.count == sourceJoinCount,
              joins.allSatisfy({ $0.key == $0.value.source && !$0.value.swapped }) else { return nil }
        return added
    }

    /// Runs the migration on `db`, inside the caller's transaction: old tables renamed aside, the
    /// destination schema created, rows copied with their keys and versions, old tables dropped,
    /// `strata_entity` rewritten (key sequences kept, every entity stamped with `generation` and
    /// `nonce`). Kill points `migration.*` mark each stage.
    func run(on db: Connection, generation: Int64, nonce: Data, report: ((Int, Int) -> Void)? = nil) throws {
        // Objects to carry, per source entity: counted only when someone asks for progress.
        var counts: [String: Int] = [:]
        if report != nil {
            for old in Set(entityMap.values) {
                guard let info = source.schema.infos[old] else { continue }
                let count = try db.prepare("SELECT count(*) FROM \(info.table)")
                _ = try count.step()
                counts[old] = Int(count.int64(at: 0))
            }
        }
        let total = counts.values.reduce(0, +)
        report?(0, total)
        if let additionsOnly {
            // Additions only: SQLite adds a column without rewriting the table (existing rows read
            // the default); the stages keep their kill points.
            KillPoint.hit("migration.tables.renamed")
            for (table, clauses) in additionsOnly.sorted(by: { $0.key < $1.key }) {
                for clause in clauses { try db.execute("ALTER TABLE \(table) ADD COLUMN \(clause)") }
            }
            for sql in destination.schema.creationSQL where sql.hasPrefix("CREATE INDEX ") {
                try db.execute("CREATE INDEX IF NOT EXISTS " + sql.dropFirst("CREATE INDEX ".count))
            }
            try LightweightMigration.syncUniqueIndexes(on: db, schema: destination.schema)
            KillPoint.hit("migration.schema.created")
            KillPoint.hit("migration.rows.copied")
            KillPoint.hit("migration.old.dropped")
            try rewriteMetadata(on: db, generation: generation, nonce: nonce)
            report?(total, total)
            return
        }
        var oldTables: [String] = []
        try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('strata_meta', 'strata_entity', 'strata_history', 'strata_history_change', 'strata_import')")
            .forEachRow { oldTables.append($0.string(at: 0)) }
        var indexes: [String] = []
        try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").forEachRow { indexes.append($0.string(at: 0)) }
        for index in indexes { try db.execute("DROP INDEX \(quoted(index))") }
        for table in oldTables { try db.execute("ALTER TABLE \(quoted(table)) RENAME TO \(quoted("strata_old_" + table))") }
        KillPoint.hit("migration.tables.renamed")
        // Unique indexes after the rows are in: a collision then names its keys.
        for sql in destination.schema.creationSQL where !sql.hasPrefix("CREATE UNIQUE INDEX ") { try db.execute(sql) }
        KillPoint.hit("migration.schema.created")
        var done = 0
        for info in destination.schema.infos.values.sorted(by: { $0.name < $1.name }) {
            guard let old = entityMap[info.name], let expressions = columnExpressions[info.name] else { continue }
            let targets = [quoted(primaryKeyColumn)] + info.columns.map(quoted) + [quoted(versionColumn)]
            let values = [quoted(primaryKeyColumn)] + info.columns.map { expressions[$0] ?? "NULL" } + [quoted(versionColumn)]
            try db.execute("INSERT INTO \(info.table) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(quoted("strata_old_" + old))")
            done += counts[old] ?? 0
            if done < total { report?(done, total) }
        }
        for (join, old) in joinMap {
            let columns = old.swapped ? "\"b\", \"a\"" : "\"a\", \"b\""
            try db.execute("INSERT INTO \(quoted(join)) (\"a\", \"b\") SELECT \(columns) FROM \(quoted("strata_old_" + old.source))")
        }
        try LightweightMigration.syncUniqueIndexes(on: db, schema: destination.schema)
        KillPoint.hit("migration.rows.copied")
        for table in oldTables { try db.execute("DROP TABLE \(quoted("strata_old_" + table))") }
        KillPoint.hit("migration.old.dropped")
        try rewriteMetadata(on: db, generation: generation, nonce: nonce)
        report?(total, total)
    }

    /// Makes the store's unique indexes the schema's: drops those the model no longer has, and
    /// creates the new ones after checking that no two rows hold one key (else
    /// ``MigrationError/uniqueKeyCollision(entity:key:values:count:)``, naming them).
    static func syncUniqueIndexes(on db: Connection, schema: Schema) throws {
        var existing = Set<String>()
        try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'strata\\_unique\\_%' ESCAPE '\\'")
            .forEachRow { existing.insert($0.string(at: 0)) }
        var wanted = Set<String>()
        for info in schema.infos.values.sorted(by: { $0.name < $1.name }) {
            for key in info.entity.uniqueKeys {
                let name = EntityInfo.uniqueIndexName(info.name, key)
                wanted.insert(name)
                guard !existing.contains(name) else { continue }
                let columns = key.map(quoted).joined(separator: ", ")
                let notNull = key.map { "\(quoted($0)) IS NOT NULL" }.joined(separator: " AND ")
                let duplicates = try db.prepare("SELECT \(columns), count(*) OVER () FROM \(info.table) WHERE \(notNull) GROUP BY \(columns) HAVING count(*) > 1 LIMIT 3")
                var values: [[String]] = []
                var count = 0
                while try duplicates.step() {
                    values.append(key.indices.map { index in
                        if case .text(let text) = duplicates.value(at: Int32(index)) { return text }
                        return duplicates.value(at: Int32(index)).description
                    })
                    count = Int(duplicates.int64(at: Int32(key.count)))
                }
                if !values.isEmpty { throw MigrationError.uniqueKeyCollision(entity: info.name, key: key, values: values, count: count) }
                try db.execute("CREATE UNIQUE INDEX \(quoted(name)) ON \(info.table) (\(columns))")
            }
        }
        for name in existing.subtracting(wanted).sorted() { try db.execute("DROP INDEX \(quoted(name))") }
    }

    /// `strata_entity` rewritten for the destination (key sequences kept, every entity stamped),
    /// and `strata_meta` given the destination model, `generation` and `nonce`.
    private func rewriteMetadata(on db: Connection, generation: Int64, nonce: Data) throws {
        var sequences: [String: Int64] = [:]
        try db.prepare("SELECT name, next_pk FROM strata_entity").forEachRow { sequences[$0.string(at: 0)] = $0.int64(at: 1) }
        try db.execute("DELETE FROM strata_entity")
        let insert = try db.prepare("INSERT INTO strata_entity (name, generation, next_pk, version_hash, nonce) VALUES (?, ?, ?, ?, ?)")
        for entity in destination.entities {
            let next = entityMap[entity.name].flatMap { sequences[$0] } ?? 1
            try insert.execute(.text(entity.name), .integer(generation), .integer(next),
                               .text(destination.entityVersionHashes[entity.name] ?? ""), .blob(nonce))
        }
        try db.prepare("UPDATE strata_meta SET generation = ?, nonce = ?, model_version = ?, model_hash = ?, model_json = ? WHERE id = 1")
            .execute(.integer(generation), .blob(nonce), .text(destination.versionIdentifier), .text(destination.versionHash),
                     .text(String(decoding: destination.jsonData(), as: UTF8.self)))
        // The history says a migration happened here (its rows are not listed: a follower whose
        // copy is older reads the store again).
        try HistoryLog.createTables(db)
        // Consecutive steps share one transaction and generation: one record for all of them.
        try db.prepare("DELETE FROM strata_history WHERE token = ?").execute(.integer(generation))
        try HistoryLog.write(db, token: generation, nonce: nonce, record: HistoryLog.Record(kind: .migration, author: nil, context: nil),
                             writer: StoreCoordinator.randomNonce(), origin: nil)
        KillPoint.hit("migration.meta.updated")
    }
}

/// SQL literals for constant fills.
enum SQLLiteral {
    static func literal(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let v): String(v)
        case .real(let v): v.isFinite ? "\(v)" : (v > 0 ? "9e999" : (v < 0 ? "-9e999" : "NULL"))
        case .text(let v):
            // Most defaults hold no quote: no search through `NSString` then (perf).
            v.utf8.contains(UInt8(ascii: "'")) ? "'" + v.replacingOccurrences(of: "'", with: "''") + "'" : "'" + v + "'"
        case .blob(let v): "x'" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
