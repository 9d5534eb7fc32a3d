internal import Foundation
internal import StrataSQLite

/// An ``EntityMapping`` checked against both models: every name resolved, the filter bound to the
/// source schema, every expression parsed.
struct ResolvedEntityMapping {
    enum Value {
        case sourceAttribute(Int)
        case keyPath(String)
        case constant(AttributeValue?)
        case expression(MappingExpression)
        case computed(@Sendable (MigrationSource) throws -> AttributeValue?)
    }

    let mapping: EntityMapping
    let source: EntityInfo
    let destination: EntityInfo
    /// The filter with `$source.` removed, bound to the source schema.
    let filter: BoundCondition?
    /// Per destination attribute index: its value, or `nil` for the default.
    let values: [Value?]
    /// Per destination to-one index: the source to-one index it is re-linked from.
    let toOnes: [Int?]
    var name: String { "\(mapping.sourceEntity) → \(mapping.destinationEntity)" }

    init(_ mapping: EntityMapping, source model: Model, destination target: Model) throws(MigrationError) {
        self.mapping = mapping
        let name = "\(mapping.sourceEntity) → \(mapping.destinationEntity)"
        func fail(_ reason: String) -> MigrationError { .invalidMapping(mapping: name, reason: reason) }
        guard let source = model.schema.infos[mapping.sourceEntity] else {
            throw fail("the source model (\(model.versionIdentifier)) has no entity \(mapping.sourceEntity)")
        }
        guard let destination = target.schema.infos[mapping.destinationEntity] else {
            throw fail("the destination model (\(target.versionIdentifier)) has no entity \(mapping.destinationEntity)")
        }
        self.source = source
        self.destination = destination
        if let filter = mapping.filter {
            let stripped = filter.mapOperands { operand in
                switch operand {
                case .variable("source"): return .keyPath("SELF")
                case .keyPath(let path) where path == "$source": return .keyPath("SELF")
                case .keyPath(let path) where path.hasPrefix("$source."): return .keyPath(String(path.dropFirst("$source.".count)))
                default: return operand
                }
            }
            var binder = ConditionBinder(schema: model.schema, root: source, condition: stripped)
            do {
                self.filter = try binder.bind(stripped)
            } catch {
                throw fail("filter \(filter): \(error)")
            }
        } else {
            filter = nil
        }
        for key in mapping.attributes.keys where destination.attributes.firstIndex(where: { $0.name == key }) == nil {
            throw fail("\(destination.name) has no attribute \(key.debugDescription)")
        }
        func checkPath(_ path: String) throws(MigrationError) {
            var info = source
            let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            for (position, key) in segments.enumerated() {
                switch info.slot(key) {
                case .attribute? where position == segments.count - 1: return
                case .toOne(let index)? where position < segments.count - 1:
                    info = model.schema.infos[info.toOneDestinations[index]]!
                default:
                    throw fail("\(info.name) has no attribute path \(key.debugDescription) (in \(path.debugDescription))")
                }
            }
        }
        let oldAttributes = Dictionary(uniqueKeysWithValues: source.attributes.enumerated().map { ($1.name, $0) })
        var values: [Value?] = []
        for attribute in destination.attributes {
            switch mapping.attributes[attribute.name] {
            case .source(let path)?:
                try checkPath(path)
                values.append(.keyPath(path))
            case .constant(let value)?: values.append(.constant(value))
            case .computed(let body)?: values.append(.computed(body))
            case .expression(let text)?:
                let expression: MappingExpression
                do { expression = try MappingExpression(parsing: text) } catch { throw fail("\(attribute.name): \(error)") }
                for path in expression.keyPaths { try checkPath(path) }
                values.append(.expression(expression))
            case nil:
                let (previous, _) = try LightweightMigration.match(attribute.name, attribute.renamingIdentifier, in: oldAttributes,
                                                                   entity: destination.name)
                values.append(previous.map { .sourceAttribute($0) })
            }
        }
        self.values = values
        let oldToOnes = Dictionary(uniqueKeysWithValues: source.toOnes.enumerated().map { ($1.name, $0) })
        var toOnes: [Int?] = []
        for relationship in destination.toOnes {
            if let named = mapping.relationships[relationship.name] {
                guard let index = oldToOnes[named] else { throw fail("\(source.name) has no to-one relationship \(named.debugDescription)") }
                toOnes.append(index)
            } else {
                toOnes.append(oldToOnes[relationship.name] ?? relationship.renamingIdentifier.flatMap { oldToOnes[$0] })
            }
        }
        // Other named relationships must be many-to-many on both sides (their links are carried).
        for (key, sourceName) in mapping.relationships where !destination.toOnes.contains(where: { $0.name == key }) {
            guard let index = destination.toManys.firstIndex(where: { $0.name == key }),
                  case .joinTable = destination.toManyStorage[index],
                  source.toManys.contains(where: { $0.name == sourceName }) else {
                throw fail("\(destination.name) has no to-one (or many-to-many) relationship \(key.debugDescription)")
            }
        }
        self.toOnes = toOnes
    }

    /// The source many-to-many relationship that destination many-to-many `relationship` continues.
    func sourceManyToMany(_ relationship: Relationship) -> Relationship? {
        let name = mapping.relationships[relationship.name] ?? relationship.name
        return source.toManys.first { $0.name == name }
            ?? relationship.renamingIdentifier.flatMap { id in source.toManys.first { $0.name == id } }
    }
}

/// Reads source objects by key for key paths through to-ones, with a bounded cache.
final class SourceReader {
    let db: Connection
    let schema: Schema
    private var statements: [String: Statement] = [:]
    private var cache: [String: [Int64: RowSnapshot]] = [:]
    private var cached = 0

    init(db: Connection, schema: Schema) {
        self.db = db
        self.schema = schema
    }

    func object(entity: String, key: Int64) throws -> MigrationSource? {
        guard let info = schema.infos[entity] else { return nil }
        if let row = cache[entity]?[key] { return MigrationSource(entity: entity, primaryKey: key, info: info, row: row, reader: self) }
        let statement: Statement
        if let existing = statements[entity] {
            statement = existing
        } else {
            statement = try db.prepare(info.selectByKeySQL)
            statements[entity] = statement
        }
        defer { statement.reset() }
        try statement.bind(.integer(key), at: 1)
        guard try statement.step() else { return nil }
        let row = RowSnapshot(statement: statement, info: info)
        if cached >= 200_000 { cache.removeAll(); cached = 0 }
        cache[entity, default: [:]][key] = row
        cached += 1
        return MigrationSource(entity: entity, primaryKey: key, info: info, row: row, reader: self)
    }
}

/// Runs a ``MappingModel`` by building the migrated store beside the old one (attached as
/// `strata_dest`, in one transaction) and swapping it in with `rename(2)`: a crash before the
/// rename leaves the old store untouched (the half-built file is discarded on the next attempt),
/// after it the new store is complete.
struct MappingMigration {
    let model: MappingModel
    let mappings: [ResolvedEntityMapping]

    init(_ model: MappingModel) throws(MigrationError) {
        self.model = model
        var mappings: [ResolvedEntityMapping] = []
        for mapping in model.entityMappings {
            mappings.append(try ResolvedEntityMapping(mapping, source: model.source, destination: model.destination))
        }
        self.mappings = mappings
    }

    static let schemaName = "strata_dest"

    private struct AssociationKey: Hashable {
        var source: Int
        var key: Int64
        var destination: Int
    }

    private struct Pending {
        var info: EntityInfo
        var key: Int64
        var toOne: Int
        var target: AssociationKey
    }

    /// Migrates the store at `path`, calling `report(done, total)` as source objects are processed.
    func run(path: String, configuration: Connection.Configuration, report: ((Int, Int) -> Void)?) throws {
        let built = path + ".migrating"
        let fileManager = FileManager.default
        for suffix in ["", "-journal", "-wal", "-shm"] { try? fileManager.removeItem(atPath: built + suffix) }
        var uriConfiguration = configuration
        uriConfiguration.uriFilenames = true
        let db = try Connection(pathBytes: Array(StoreCoordinator.literalPath(path).utf8), displayPath: path, configuration: uriConfiguration)
        var connected = true
        defer { if connected { db.close() } }
        try StringMatching.register(on: db)
        // The migrated store keeps page checksums when the old one had them: every page of the new
        // file is checksummed from the first write (the URI parameter tells Strata's VFS, even for
        // a page SQLite spills before page 1), and its reserve and application id are set before
        // that first write.
        let checksummed = db.pageChecksumState.checksummed
        try db.prepare("ATTACH DATABASE ? AS \(Self.schemaName)")
            .execute(.text(StoreCoordinator.fileURI(built) + (checksummed ? "?strata_checksums=1" : "")))
        if checksummed {
            try db.setRequestedReserveBytes(PageChecksum.reservedBytes, schema: Self.schemaName)
            try db.execute("PRAGMA \(Self.schemaName).application_id = \(PageChecksum.applicationID)")
        }
        try db.execute("PRAGMA \(Self.schemaName).journal_mode = DELETE")
        try db.execute("PRAGMA \(Self.schemaName).synchronous = FULL")
        do {
            try db.transaction(.immediate) {
                try build(db, report: report)
            }
        } catch {
            // Nothing of the old store changed; the half-built one goes.
            try? db.execute("DETACH DATABASE \(Self.schemaName)")
            for suffix in ["", "-journal"] { try? fileManager.removeItem(atPath: built + suffix) }
            throw error
        }
        KillPoint.hit("migration.mapping.built")
        try db.execute("DETACH DATABASE \(Self.schemaName)")
        if configuration.journalMode == .wal { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        db.close()
        connected = false
        // Another connection still open (an idle one too: its -wal and -shm stay): refused, the
        // copy removed, the store as it was.
        if StoreFileSwap.isOpenElsewhere(path) {
            try? fileManager.removeItem(atPath: built)
            throw MigrationError.storeInUse(path: path)
        }
        // The new file takes the old one's permissions, is flushed, then renamed over it; the
        // folder is flushed so the rename survives a power loss (the section cache's own calls).
        if let permissions = (try? fileManager.attributesOfItem(atPath: path))?[.posixPermissions] as? Int {
            try? fileManager.setAttributes([.posixPermissions: permissions], ofItemAtPath: built)
        }
        try StoreFileSwap.swap(built, over: path)
        KillPoint.hit("migration.mapping.swapped")
    }

    /// Creates the destination schema and metadata in `strata_dest` and fills it, inside the caller's transaction.
    private func build(_ db: Connection, report: ((Int, Int) -> Void)?) throws {
        let dest = Self.schemaName
        let metadata = try StoreCoordinator.readMetadata(db)
        try db.prepare("SELECT sql FROM main.sqlite_master WHERE name IN ('strata_meta', 'strata_entity') ORDER BY name DESC").forEachRow { row in
            let sql = row.string(at: 0)
            guard let range = sql.range(of: "CREATE TABLE ") else { return }
            try db.execute(sql.replacingCharacters(in: range, with: "CREATE TABLE \(dest)."))
        }
        for sql in model.destination.schema.creationSQL {
            if sql.hasPrefix("CREATE TABLE ") { try db.execute("CREATE TABLE \(dest)." + sql.dropFirst("CREATE TABLE ".count)) }
            else if sql.hasPrefix("CREATE INDEX ") { try db.execute("CREATE INDEX \(dest)." + sql.dropFirst("CREATE INDEX ".count)) }
            else if sql.hasPrefix("CREATE UNIQUE INDEX ") { try db.execute("CREATE UNIQUE INDEX \(dest)." + sql.dropFirst("CREATE UNIQUE INDEX ".count)) }
        }
        KillPoint.hit("migration.mapping.schema")
        var sequences: [String: Int64] = [:]
        try db.prepare("SELECT name, next_pk FROM main.strata_entity").forEachRow { sequences[$0.string(at: 0)] = $0.int64(at: 1) }

        // Fresh keys start above every key a mapping may keep, so kept and fresh never collide.
        var nextFresh: [Int: Int64] = [:]
        for mapping in mappings {
            nextFresh[mapping.destination.ordinal] = max(nextFresh[mapping.destination.ordinal] ?? 1, sequences[mapping.source.name] ?? 1)
        }
        var taken: [Int: Set<Int64>] = [:]
        var association: [AssociationKey: Int64] = [:]
        var pending: [Pending] = []
        var inserts: [String: Statement] = [:]
        let reader = SourceReader(db: db, schema: model.source.schema)

        var total = 0
        var selects: [(Statement, ResolvedEntityMapping)] = []
        for mapping in mappings {
            var sql = ConditionSQL()
            let whereSQL = mapping.filter.map { " WHERE " + sql.condition($0, alias: "t0") } ?? ""
            let count = try db.prepare("SELECT count(*) FROM main.\(mapping.source.table) AS t0" + whereSQL)
            try count.bind(sql.arguments)
            _ = try count.step()
            total += Int(count.int64(at: 0))
            let columns = ([primaryKeyColumn] + mapping.source.columns + [versionColumn]).map { "t0." + quoted($0) }
            let select = try db.prepare("SELECT \(columns.joined(separator: ", ")) FROM main.\(mapping.source.table) AS t0\(whereSQL) ORDER BY t0.\(quoted(primaryKeyColumn))")
            try select.bind(sql.arguments)
            selects.append((select, mapping))
        }
        report?(0, total)
        var done = 0
        for (select, mapping) in selects {
            while try select.step() {
                let key = select.int64(at: 0)
                let source = MigrationSource(entity: mapping.source.name, primaryKey: key, info: mapping.source,
                                             row: RowSnapshot(statement: select, info: mapping.source), reader: reader)
                var objects = [try mapped(source, by: mapping)]
                if let policy = mapping.mapping.policy {
                    do {
                        objects = try policy(source, objects[0])
                    } catch let error as MigrationError {
                        throw error
                    } catch {
                        throw MigrationError.policyFailed(mapping: mapping.name, sourceKey: key, error: "\(error)")
                    }
                }
                // Keys first (objects may point at each other), then the rows.
                var keys: [Int64] = []
                var infos: [EntityInfo] = []
                var kept = false
                for object in objects {
                    guard let info = model.destination.schema.infos[object.entity] else {
                        throw MigrationError.invalidMapping(mapping: mapping.name, reason: "the policy returned an object of unknown entity \(object.entity)")
                    }
                    var newKey: Int64
                    if !kept && info.ordinal == mapping.destination.ordinal && taken[info.ordinal, default: []].insert(key).inserted {
                        newKey = key
                    } else {
                        newKey = nextFresh[info.ordinal] ?? 1
                        while !taken[info.ordinal, default: []].insert(newKey).inserted { newKey += 1 }
                        nextFresh[info.ordinal] = newKey + 1
                    }
                    if !kept && info.ordinal == mapping.destination.ordinal {
                        kept = true
                        association[AssociationKey(source: mapping.source.ordinal, key: key, destination: info.ordinal)] = newKey
                    }
                    keys.append(newKey)
                    infos.append(info)
                }
                for (index, object) in objects.enumerated() {
                    let info = infos[index]
                    var toOnes = [Int64?](repeating: nil, count: info.toOnes.count)
                    for (name, reference) in object.relationships {
                        guard let slot = info.toOnes.firstIndex(where: { $0.name == name }) else {
                            throw MigrationError.invalidObject(entity: info.name, key: name, reason: "is not a to-one relationship of \(info.name)")
                        }
                        switch reference {
                        case .returned(let other):
                            guard keys.indices.contains(other), infos[other].name == info.toOneDestinations[slot] else {
                                throw MigrationError.invalidObject(entity: info.name, key: name, reason: "points at returned object \(other), which is not a \(info.toOneDestinations[slot])")
                            }
                            toOnes[slot] = keys[other]
                        case let .migrated(from, sourceKey):
                            guard let sourceInfo = model.source.schema.infos[from],
                                  let destinationInfo = model.destination.schema.infos[info.toOneDestinations[slot]] else {
                                throw MigrationError.invalidObject(entity: info.name, key: name, reason: "points at an object of unknown source entity \(from)")
                            }
                            let target = AssociationKey(source: sourceInfo.ordinal, key: sourceKey, destination: destinationInfo.ordinal)
                            if let resolved = association[target] {
                                toOnes[slot] = resolved
                            } else {
                                pending.append(Pending(info: info, key: keys[index], toOne: slot, target: target))
                            }
                        }
                    }
                    let statement: Statement
                    if let existing = inserts[info.name] {
                        statement = existing
                    } else {
                        let columns = ([primaryKeyColumn] + info.columns + [versionColumn]).map(quoted)
                        statement = try db.prepare("INSERT INTO \(dest).\(info.table) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
                        inserts[info.name] = statement
                    }
                    var arguments: [SQLiteValue] = [.integer(keys[index])]
                    arguments.reserveCapacity(info.columns.count + 2)
                    for attribute in info.attributes {
                        arguments.append(try Self.value(object, attribute, info: info, source: source)?.storageValue ?? .null)
                    }
                    for key in toOnes { arguments.append(key.map { .integer($0) } ?? .null) }
                    arguments.append(.integer(1))
                    try statement.bind(arguments)
                    _ = try statement.step()
                    statement.reset()
                }
                done += 1
                if done % 4096 == 0 { report?(done, total) }
            }
            select.reset()
        }
        // Links to objects migrated later; a link to an object no mapping carried stays nil.
        for link in pending {
            guard let resolved = association[link.target] else { continue }
            try db.cachedStatement("UPDATE \(dest).\(link.info.table) SET \(quoted(link.info.toOnes[link.toOne].name)) = ? WHERE \(quoted(primaryKeyColumn)) = ?")
                .execute(.integer(resolved), .integer(link.key))
        }
        try copyManyToMany(db, association: association)
        for info in model.destination.schema.infos.values.sorted(by: { $0.name < $1.name }) {
            for index in info.requiredToOnes {
                let missing = try db.prepare("SELECT \(quoted(primaryKeyColumn)) FROM \(dest).\(info.table) WHERE \(quoted(info.toOnes[index].name)) IS NULL LIMIT 1")
                if try missing.step() {
                    throw MigrationError.invalidObject(entity: info.name, key: info.toOnes[index].name,
                                                       reason: "is required, but object \(missing.int64(at: 0))'s related object was not carried by any mapping")
                }
            }
        }
        report?(done, total)
        KillPoint.hit("migration.mapping.rows")

        let generation = metadata.generation + 1
        let nonce = StoreCoordinator.randomNonce()
        try db.execute("INSERT INTO \(dest).strata_meta SELECT * FROM main.strata_meta")
        try db.prepare("UPDATE \(dest).strata_meta SET generation = ?, nonce = ?, model_version = ?, model_hash = ?, model_json = ? WHERE id = 1")
            .execute(.integer(generation), .blob(nonce), .text(model.destination.versionIdentifier), .text(model.destination.versionHash),
                     .text(String(decoding: model.destination.jsonData(), as: UTF8.self)))
        let insert = try db.prepare("INSERT INTO \(dest).strata_entity (name, generation, next_pk, version_hash, nonce) VALUES (?, ?, ?, ?, ?)")
        for entity in model.destination.entities {
            let info = model.destination.schema.infos[entity.name]!
            let maximum = try db.prepare("SELECT coalesce(max(\(quoted(primaryKeyColumn))), 0) + 1 FROM \(dest).\(info.table)")
            _ = try maximum.step()
            let next = max(maximum.int64(at: 0), nextFresh[info.ordinal] ?? 1)
            try insert.execute(.text(entity.name), .integer(generation), .integer(next),
                               .text(model.destination.entityVersionHashes[entity.name] ?? ""), .blob(nonce))
        }
    }

    /// The attribute value an object gets: what it set, else the destination default; converted
    /// to the attribute's type and checked for optionality.
    private static func value(_ object: MappedObject, _ attribute: Attribute, info: EntityInfo, source: MigrationSource) throws -> AttributeValue? {
        let value: AttributeValue?
        if let set = object.values[attribute.name] { value = set } else { value = attribute.defaultValue }
        guard let value else {
            guard attribute.isOptional else {
                throw MigrationError.invalidObject(entity: info.name, key: attribute.name,
                                                   reason: "is required and has no value (made from \(source.entity) \(source.primaryKey))")
            }
            return nil
        }
        if value.type == attribute.type { return value }
        guard let converted = AttributeValue.convert(value.swiftValue, to: attribute.type) else {
            throw MigrationError.invalidObject(entity: info.name, key: attribute.name,
                                               reason: "is a \(attribute.type), and \(value) (made from \(source.entity) \(source.primaryKey)) can't become one")
        }
        return converted
    }

    /// The object a mapping makes from `source` before any policy: mapped and inferred values,
    /// to-ones re-linked.
    private func mapped(_ source: MigrationSource, by mapping: ResolvedEntityMapping) throws -> MappedObject {
        var object = MappedObject(entity: mapping.destination.name)
        for (index, attribute) in mapping.destination.attributes.enumerated() {
            switch mapping.values[index] {
            case nil: continue
            case .sourceAttribute(let slot)?: object[attribute.name] = source.row.attributes[slot]
            case .keyPath(let path)?: object[attribute.name] = try source.value(forKey: path)
            case .constant(let value)?: object[attribute.name] = value
            case .expression(let expression)?:
                do {
                    object[attribute.name] = try expression.evaluate(source)
                } catch MigrationError.invalidMapping(_, let reason) {
                    throw MigrationError.invalidObject(entity: mapping.destination.name, key: attribute.name,
                                                       reason: "can't be computed for \(source.entity) \(source.primaryKey): \(reason)")
                }
            case .computed(let body)?:
                do {
                    object[attribute.name] = try body(source)
                } catch let error as MigrationError {
                    throw error
                } catch {
                    throw MigrationError.policyFailed(mapping: mapping.name, sourceKey: source.primaryKey, error: "\(error)")
                }
            }
        }
        for (index, sourceSlot) in mapping.toOnes.enumerated() {
            guard let sourceSlot, let key = source.row.toOnes[sourceSlot] else { continue }
            object.relationships[mapping.destination.toOnes[index].name] = .migrated(from: mapping.source.toOneDestinations[sourceSlot], key: key)
        }
        return object
    }

    /// Many-to-many links: a destination join table is filled from the source join table of the
    /// relationship a mapping continues, both ends mapped to what their objects became.
    private func copyManyToMany(_ db: Connection, association: [AssociationKey: Int64]) throws {
        for join in model.destination.schema.joinTables {
            guard let firstInfo = model.destination.schema.infos[join.first.entity],
                  let secondInfo = model.destination.schema.infos[join.second.entity],
                  let relationship = firstInfo.toManys.first(where: { $0.name == join.first.relationship }) else { continue }
            let insert = try db.prepare("INSERT OR IGNORE INTO \(Self.schemaName).\(quoted(join.name)) (\"a\", \"b\") VALUES (?, ?)")
            for mapping in mappings where mapping.destination.name == join.first.entity {
                guard let sourceRelationship = mapping.sourceManyToMany(relationship),
                      let sourceJoin = model.source.schema.joinTables.first(where: {
                          ($0.first.entity == mapping.source.name && $0.first.relationship == sourceRelationship.name)
                              || ($0.second.entity == mapping.source.name && $0.second.relationship == sourceRelationship.name)
                      }),
                      let otherSource = model.source.schema.infos[sourceRelationship.destination] else { continue }
                let ownColumn = sourceJoin.first.entity == mapping.source.name && sourceJoin.first.relationship == sourceRelationship.name ? "a" : "b"
                let otherColumn = ownColumn == "a" ? "b" : "a"
                try db.prepare("SELECT \"\(ownColumn)\", \"\(otherColumn)\" FROM main.\(quoted(sourceJoin.name))").forEachRow { row in
                    guard let own = association[AssociationKey(source: mapping.source.ordinal, key: row.int64(at: 0), destination: firstInfo.ordinal)],
                          let other = association[AssociationKey(source: otherSource.ordinal, key: row.int64(at: 1), destination: secondInfo.ordinal)] else { return }
                    try insert.execute(.integer(own), .integer(other))
                }
            }
        }
    }
}
