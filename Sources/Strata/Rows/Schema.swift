internal import Foundation

/// Quotes an SQL identifier. Model names are validated identifiers; quoting keeps keywords safe.
/// A name without `"` (every model name) is not searched by Foundation's `replacingOccurrences`,
/// which went through `NSString` and was two thirds of building a model's schema (perf).
func quoted(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// The primary key column of every entity table. Property names cannot start with `_`.
let primaryKeyColumn = "_pk"

/// The optimistic-locking column of every entity table: 1 on insert, + 1 on every update.
let versionColumn = "_version"

/// A model resolved for storage: per entity, its slots, columns, SQL and relationship storage.
/// Immutable after creation.
final class Schema: Sendable {
    let infos: [String: EntityInfo]
    /// `infos` by interned name (an ``ObjectID``'s entity): a pointer's hash, not a string's.
    private let infosByInternedName: [ObjectIdentifier: EntityInfo]

    /// The info of `id`'s entity.
    func info(of id: ObjectID) -> EntityInfo? { infosByInternedName[ObjectIdentifier(id.entity)] }
    let joinTables: [JoinTable]
    /// The owning model's ``Model/jsonData()``, encoded once: every store opening compares it
    /// with the stored model, and `JSONEncoder` was about a third of a migrating open.
    /// Kept as `[UInt8]`, not `Data`: `Data`'s enum packs tag bits into its storage pointer, so
    /// LeakSanitizer cannot follow it from a model held in a global and reports the bytes leaked.
    let modelJSON = Locked<[UInt8]?>(nil)

    init(entities: [Entity]) {
        var joins: [String: JoinTable] = [:]
        for entity in entities {
            for r in entity.relationships where r.isToMany {
                guard let inverseName = r.inverse,
                      let inverse = entities.first(where: { $0.name == r.destination })?.relationship(named: inverseName),
                      inverse.isToMany else { continue }
                let me = "\(entity.name)_\(r.name)", other = "\(r.destination)_\(inverseName)"
                let name = "strata_join_" + min(me, other)
                if joins[name] == nil {
                    // Column a holds the key of the side that sorts first.
                    let (first, second) = me <= other ? ((entity.name, r.name), (r.destination, inverseName))
                                                      : ((r.destination, inverseName), (entity.name, r.name))
                    joins[name] = JoinTable(name: name, first: first, second: second)
                }
            }
        }
        joinTables = joins.values.sorted { $0.name < $1.name }
        var infos: [String: EntityInfo] = [:]
        for (ordinal, entity) in entities.sorted(by: { $0.name < $1.name }).enumerated() {
            infos[entity.name] = EntityInfo(entity: entity, ordinal: ordinal, entities: entities, joins: joins)
        }
        self.infos = infos
        infosByInternedName = Dictionary(uniqueKeysWithValues: infos.values.map { (ObjectIdentifier($0.internedName), $0) })
    }

    /// Every statement that creates the schema, in order.
    var creationSQL: [String] {
        var sql: [String] = []
        for info in infos.values.sorted(by: { $0.name < $1.name }) { sql += info.creationSQL }
        for join in joinTables {
            sql.append("CREATE TABLE \(quoted(join.name)) (\"a\" INTEGER NOT NULL, \"b\" INTEGER NOT NULL, PRIMARY KEY (\"a\", \"b\")) WITHOUT ROWID")
            sql.append("CREATE INDEX \(quoted(join.name + "_b")) ON \(quoted(join.name)) (\"b\", \"a\")")
        }
        return sql
    }
}

/// A many-to-many join table: column `a` holds the key of `first`'s object, `b` of `second`'s.
struct JoinTable: Sendable, Hashable {
    let name: String
    let first: (entity: String, relationship: String)
    let second: (entity: String, relationship: String)

    static func == (l: JoinTable, r: JoinTable) -> Bool { l.name == r.name }
    func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// Where a property lives in an object's storage.
enum Slot: Sendable, Equatable {
    case attribute(Int)
    case toOne(Int)
    case toMany(Int)
}

/// How a to-many relationship is stored.
enum ToManyStorage: Sendable {
    /// Derived from the destination table's to-one column.
    case inverseColumn(table: String, column: String)
    /// A join table: this side's key is in `ownColumn`.
    case joinTable(table: String, ownColumn: String, otherColumn: String)
}

/// One entity, resolved for storage.
@usableFromInline
final class EntityInfo: Sendable {
    let name: String
    /// `name`, interned: the IDs of this entity's objects point at it.
    let internedName: EntityName
    /// The entity's position in the schema (by name): an index for per-entity arrays.
    let ordinal: Int
    let entity: Entity
    let table: String
    let attributes: [Attribute]
    let toOnes: [Relationship]
    let toManys: [Relationship]
    let toManyStorage: [ToManyStorage]
    /// ``Entity/uniqueKeys``, made once (a save asks for every inserted object).
    let uniqueKeys: [[String]]
    /// The slots by name in an open-addressing table with a cheap byte hash: `value(forKey:)`
    /// and `setValue(_:forKey:)` look a key up on every call, and `String`'s SipHash costs more
    /// than the rest of such a call.
    let slotTable: SlotTable
    /// Destination entity of each to-one slot.
    let toOneDestinations: [String]
    /// `toOneDestinations`, interned (IDs of the destinations are made without a lookup).
    let toOneDestinationNames: [EntityName]
    /// Each to-many's destination, interned.
    let toManyDestinationNames: [EntityName]
    /// The inverse's slot in the destination entity, per to-one and per to-many (`nil`: no inverse).
    let toOneInverseSlots: [Slot?]
    let toManyInverseSlots: [Slot?]

    /// The inverse's slot (in the destination entity) of this entity's relationship `slot`.
    func inverseSlot(of slot: Slot) -> Slot? {
        switch slot {
        case .toOne(let i): toOneInverseSlots[i]
        case .toMany(let i): toManyInverseSlots[i]
        case .attribute: nil
        }
    }
    /// Storage columns in row order: attributes, then to-ones.
    let columns: [String]
    let insertSQL: String
    /// Updates every column and bumps the version where the row still has the version read.
    let updateSQL: String
    /// Updates every column and bumps the version whatever the stored version (a resolved conflict).
    let forceUpdateSQL: String
    /// Deletes the row where it still has the version read.
    let deleteSQL: String
    let forceDeleteSQL: String
    /// Primary key, the columns in row order, then the version.
    let selectSQL: String
    /// `selectSQL` for one row by its key (a fault, a placement's probe): built once, not per read.
    let selectByKeySQL: String
    /// `insertSQL`'s parameters read back as a row of `selectSQL`'s columns (version 1): a
    /// batch upsert binds a row as an insert would, then reads it whole.
    var echoSQL: String { "SELECT " + (1...(columns.count + 1)).map { "?\($0)" }.joined(separator: ", ") + ", 1" }
    /// `selectSQL` for the rows whose keys are bound as one JSON array (`json_each`).
    var selectByKeysSQL: String { selectSQL + " WHERE \(quoted(primaryKeyColumn)) IN (SELECT value FROM json_each(?))" }
    /// Each attribute's type, in slot order (read on every `setValue`: no `Attribute` copy).
    let attributeTypes: [AttributeType]
    /// Where a row of this entity keeps each value (see ``RowStorage``).
    let rowLayout: RowLayout
    /// A new object's row: every default, no relationships.
    /// The attributes whose default is not nil, with their default (a new object's values).
    let nonNilDefaults: [(Int, AttributeValue)]
    /// Each attribute's default by slot (nil: none): what a batch or imported row leaves unset takes.
    let attributeDefaults: [AttributeValue?]
    /// The slot named `key`.
    @inline(__always)
    func slot(_ key: String) -> Slot? { slotTable.lookup(key) }

    /// The attribute names' representations → attribute indexes: the typed reads' lookup.
    @usableFromInline let attributeKeys: AttributeKeys

    /// The attribute slot named `key`, or nil when `key` names no attribute: ``AttributeKeys``,
    /// then, for a key it does not know by its words, the byte lookup of ``SlotTable``.
    @inline(__always)
    func attributeIndex(_ key: String) -> Int? {
        let index = attributeKeys.index(key)
        if index >= 0 { return index }
        guard case .attribute(let index)? = slot(key) else { return nil }
        return index
    }

    /// Slots of the attributes that have a rule beyond optionality, with the rules.
    let attributeRules: [(index: Int, attribute: Attribute)]
    /// Slots of the non-optional attributes, to-ones and to-manys.
    let requiredAttributes: [Int]
    let requiredToOnes: [Int]
    let requiredToManys: [Int]
    /// The statements that create this entity's table and indexes. Built when asked (a new
    /// store, a migration): every model decoded from a store builds its schema, and these
    /// strings were a fifth of that.
    var creationSQL: [String] {
        let pk = quoted(primaryKeyColumn), version = quoted(versionColumn)
        var create: [String] = []
        let definitions = ["\(pk) INTEGER PRIMARY KEY"]
            + attributes.map { a in ([quoted(a.name), a.type.columnDeclaration].filter { !$0.isEmpty }).joined(separator: " ") }
            + toOnes.map { "\(quoted($0.name)) INTEGER" }
            + ["\(version) INTEGER NOT NULL DEFAULT 1"]
        create.append("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        for a in attributes where a.isIndexed {
            create.append("CREATE INDEX \(quoted("\(name)_\(a.name)")) ON \(table) (\(quoted(a.name)))")
        }
        for r in toOnes {
            create.append("CREATE INDEX \(quoted("\(name)_\(r.name)")) ON \(table) (\(quoted(r.name)))")
        }
        for keys in entity.compoundIndexes {
            create.append("CREATE INDEX \(quoted("\(name)_" + keys.joined(separator: "_"))) ON \(table) (\(keys.map(quoted).joined(separator: ", ")))")
        }
        create += uniqueIndexSQL
        return create
    }

    /// Each unique key's index (`CREATE UNIQUE INDEX "strata_unique_<entity>_<keys>"`).
    var uniqueIndexSQL: [String] {
        entity.uniqueKeys.map { keys in
            "CREATE UNIQUE INDEX \(quoted(EntityInfo.uniqueIndexName(name, keys))) ON \(table) (\(keys.map(quoted).joined(separator: ", ")))"
        }
    }

    static func uniqueIndexName(_ entity: String, _ keys: [String]) -> String {
        "strata_unique_\(entity)_" + keys.joined(separator: "_")
    }

    init(entity: Entity, ordinal: Int, entities: [Entity], joins: [String: JoinTable]) {
        name = entity.name
        internedName = EntityName.interned(entity.name)
        self.ordinal = ordinal
        self.entity = entity
        table = quoted(entity.name)
        attributes = entity.attributes
        uniqueKeys = entity.uniqueKeys
        toOnes = entity.relationships.filter { !$0.isToMany }
        toManys = entity.relationships.filter(\.isToMany)
        toOneDestinations = toOnes.map(\.destination)
        toOneDestinationNames = toOnes.map { EntityName.interned($0.destination) }
        toManyDestinationNames = toManys.map { EntityName.interned($0.destination) }
        func inverseSlot(_ relationship: Relationship) -> Slot? {
            guard let inverse = relationship.inverse,
                  let destination = entities.first(where: { $0.name == relationship.destination }) else { return nil }
            if let i = destination.relationships.filter({ !$0.isToMany }).firstIndex(where: { $0.name == inverse }) { return .toOne(i) }
            if let i = destination.relationships.filter(\.isToMany).firstIndex(where: { $0.name == inverse }) { return .toMany(i) }
            return nil
        }
        toOneInverseSlots = toOnes.map(inverseSlot)
        toManyInverseSlots = toManys.map(inverseSlot)
        var slots: [String: Slot] = [:]
        for (i, a) in attributes.enumerated() { slots[a.name] = .attribute(i) }
        for (i, r) in toOnes.enumerated() { slots[r.name] = .toOne(i) }
        for (i, r) in toManys.enumerated() { slots[r.name] = .toMany(i) }
        slotTable = SlotTable(slots.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        toManyStorage = toManys.map { r in
            let inverse = r.inverse.flatMap { name in entities.first { $0.name == r.destination }?.relationship(named: name) }
            if let inverse, !inverse.isToMany {
                return .inverseColumn(table: quoted(r.destination), column: quoted(inverse.name))
            }
            let me = "\(entity.name)_\(r.name)", other = "\(r.destination)_\(r.inverse ?? "")"
            let join = joins["strata_join_" + min(me, other)]!
            let ownIsFirst = join.first.entity == entity.name && join.first.relationship == r.name
            return .joinTable(table: quoted(join.name), ownColumn: ownIsFirst ? "\"a\"" : "\"b\"",
                              otherColumn: ownIsFirst ? "\"b\"" : "\"a\"")
        }
        attributeTypes = attributes.map(\.type)
        rowLayout = RowLayout(attributeTypes: attributeTypes, toOneCount: toOnes.count)
        attributeKeys = AttributeKeys(attributes.map(\.name), layout: rowLayout)
        nonNilDefaults = attributes.enumerated().compactMap { pair in pair.element.defaultValue.map { (pair.offset, $0) } }
        attributeDefaults = attributes.map(\.defaultValue)
        attributeRules = attributes.enumerated().filter { _, a in
            a.minValue != nil || a.maxValue != nil || a.minLength != nil || a.maxLength != nil || a.regex != nil
        }.map { (index: $0.offset, attribute: $0.element) }
        requiredAttributes = entity.attributes.enumerated().filter { !$0.element.isOptional }.map(\.offset)
        requiredToOnes = entity.relationships.filter { !$0.isToMany }.enumerated().filter { !$0.element.isOptional }.map(\.offset)
        requiredToManys = entity.relationships.filter(\.isToMany).enumerated().filter { !$0.element.isOptional }.map(\.offset)
        columns = attributes.map(\.name) + toOnes.map(\.name)
        let quotedColumns = columns.map(quoted)
        let pk = quoted(primaryKeyColumn)
        insertSQL = "INSERT INTO \(table) (\(([pk] + quotedColumns).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")))"
        let version = quoted(versionColumn)
        let assignments = (quotedColumns.map { "\($0) = ?" } + ["\(version) = \(version) + 1"]).joined(separator: ", ")
        updateSQL = "UPDATE \(table) SET \(assignments) WHERE \(pk) = ? AND \(version) = ?"
        forceUpdateSQL = "UPDATE \(table) SET \(assignments) WHERE \(pk) = ? RETURNING \(version)"
        deleteSQL = "DELETE FROM \(table) WHERE \(pk) = ? AND \(version) = ?"
        forceDeleteSQL = "DELETE FROM \(table) WHERE \(pk) = ?"
        selectSQL = "SELECT \(([pk] + quotedColumns + [version]).joined(separator: ", ")) FROM \(table)"
        selectByKeySQL = selectSQL + " WHERE \(pk) = ?"
    }

}

/// Names → slots: open addressing over a power-of-two table at most half full, a hash of the
/// key's length and end bytes, the name compared only on a hash hit.
///
/// In front of it, a table of the names' *representations*: a name of up to 15 UTF-8 bytes is a
/// small string on 64-bit platforms, its bytes, count and flags in the string's two words, so a
/// key whose two words equal a name's two words is that name. Property names are small and
/// usually literals on both sides, so a lookup is a hash of two words and one comparison. A key
/// that misses there (a long name, a string built another way) takes the byte path: the answer
/// never depends on the representation, only the speed does.
@usableFromInline
struct SlotTable: Sendable {
    private struct Small: Sendable {
        var words: (UInt64, UInt64)
        var slot: Slot
    }
    /// Power-of-two sized, at most a quarter full; `nil` is empty.
    private let small: [Small?]
    private let smallShift: UInt64

    private struct Entry: Sendable {
        var start: Int32
        var count: Int32
        var hash: UInt32
        var slot: Slot
    }
    /// Every name's UTF-8, back to back: a hit is confirmed by comparing bytes, not `String`s.
    private let bytes: [UInt8]
    private let entries: [Entry]
    /// Index into `entries` + 1; 0 is empty.
    private let table: [Int32]
    private let mask: Int

    init(_ names: [(String, Slot)]) {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        for (name, slot) in names {
            let utf8 = Array(name.utf8)
            let hash = utf8.withUnsafeBufferPointer(SlotTable.hash)
            entries.append(Entry(start: Int32(bytes.count), count: Int32(utf8.count), hash: hash, slot: slot))
            bytes += utf8
        }
        var capacity = 8
        while capacity < entries.count * 2 { capacity *= 2 }
        mask = capacity - 1
        var table = [Int32](repeating: 0, count: capacity)
        for (index, entry) in entries.enumerated() {
            var position = Int(entry.hash ^ (entry.hash >> 15)) & mask
            while table[position] != 0 { position = (position + 1) & mask }
            table[position] = Int32(index + 1)
        }
        self.bytes = bytes
        self.entries = entries
        self.table = table

        var smallCapacity = 16
        while smallCapacity < names.count * 4 { smallCapacity *= 2 }
        var small = [Small?](repeating: nil, count: smallCapacity)
        let shift = UInt64(64 - smallCapacity.trailingZeroBitCount)
        if SlotTable.wordsAreRepresentation {
            for (name, slot) in names where name.utf8.count <= 15 {
                let words = SlotTable.words(of: name)
                var position = SlotTable.position(words, shift: shift)
                while small[position] != nil { position = (position + 1) & (smallCapacity - 1) }
                small[position] = Small(words: words, slot: slot)
            }
        }
        self.small = small
        smallShift = shift
    }

    /// A `String` is two 64-bit words on the platforms Strata runs on; elsewhere only the byte
    /// path is used.
    @inlinable static var wordsAreRepresentation: Bool { MemoryLayout<String>.size == 16 && MemoryLayout<UInt>.size == 8 }

    /// The key's two words, as they are in memory: equal words are the same string (the same
    /// small-string bytes, or the same storage); different words may still be equal strings.
    @inlinable @inline(__always)
    static func words(of key: String) -> (UInt64, UInt64) { unsafeBitCast(key, to: (UInt64, UInt64).self) }

    @inline(__always)
    private static func position(_ words: (UInt64, UInt64), shift: UInt64) -> Int {
        Int(truncatingIfNeeded: ((words.0 ^ (words.1 &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9) >> shift)
    }

    /// Length, first and last bytes: enough to spread a model's property names, and a few
    /// instructions instead of a multiply per byte (the bytes are compared on a hit anyway).
    @inline(__always)
    static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt32 {
        let count = UInt32(truncatingIfNeeded: key.count)
        guard count > 0 else { return 0 }
        let first = UInt32(key[0]), last = UInt32(key[key.count - 1])
        return (count &* 0x9E37_79B1) ^ (first &* 0x85EB_CA77) ^ (last &* 0xC2B2_AE3D) ^ (last >> 3)
    }

    /// The slot named `key`. Reads the key's UTF-8 in place (a property name is a small string:
    /// its bytes are copied to the stack, no allocation), where `String.UTF8View` indexing costs
    /// more than the whole lookup.
    @inline(__always)
    func lookup(_ key: String) -> Slot? {
        if SlotTable.wordsAreRepresentation {
            let words = SlotTable.words(of: key)
            let mask = small.count - 1
            var position = SlotTable.position(words, shift: smallShift)
            while let entry = small[position] {
                if entry.words == words { return entry.slot }
                position = (position + 1) & mask
            }
        }
        if let found = key.utf8.withContiguousStorageIfAvailable({ lookup(utf8: $0) }) { return found }
        return lookup(utf8: Array(key.utf8))
    }

    private func lookup(utf8 key: [UInt8]) -> Slot? { key.withUnsafeBufferPointer { lookup(utf8: $0) } }

    @inline(__always)
    private func lookup(utf8 key: UnsafeBufferPointer<UInt8>) -> Slot? {
        let hash = SlotTable.hash(key)
        var position = Int(hash ^ (hash >> 15)) & mask
        return bytes.withUnsafeBufferPointer { bytes in
            while true {
                let index = Int(table[position])
                if index == 0 { return nil }
                let entry = entries[index - 1]
                if entry.hash == hash, Int(entry.count) == key.count {
                    var same = true
                    var offset = Int(entry.start)
                    for byte in key {
                        if bytes[offset] != byte {
                            same = false
                            break
                        }
                        offset += 1
                    }
                    if same { return entry.slot }
                }
                position = (position + 1) & mask
            }
        }
    }
}
