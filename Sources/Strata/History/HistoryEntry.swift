internal import StrataSQLite

/// A change's values as its record holds them: by the model's slot, not by name, in one array,
/// so that a history read builds no dictionary per change (``HistoryChange``'s dictionaries are
/// made when asked). One per record, shared by the changes of its keys (a batch request's rows).
struct HistoryValues: Sendable, Equatable {
    /// One name of a record's data, by its index in the entity's attributes, to-ones or to-manys.
    enum Part: Sendable, Equatable {
        /// `set`: an attribute's new value (`nil`: cleared).
        case value(Int, AttributeValue?)
        /// `set`: a to-one's destination key now (`nil`: none).
        case toOne(Int, Int64?)
        /// `was`: what a changed to-one named before.
        case was(Int, Int64?)
        /// `add` / `remove`: a many-to-many's members.
        case added(Int, [Int64])
        case removed(Int, [Int64])
        /// `kept`: a value preserved on deletion.
        case kept(Int, AttributeValue?)
    }

    let info: EntityInfo
    /// In the record's order; where a name comes twice, the dictionaries keep the last (members
    /// add up).
    let parts: [Part]

    static func == (a: HistoryValues, b: HistoryValues) -> Bool { a.info === b.info && a.parts == b.parts }

    /// The parts a change of `kind` lists: an update's values and to-ones, a delete's kept
    /// values, anyone's members; `nil` when none is left.
    func listed(by kind: HistoryChange.Kind) -> HistoryValues? {
        func listed(_ part: Part) -> Bool {
            switch part {
            case .value, .toOne, .was: kind == .update
            case .kept: kind == .delete
            case .added, .removed: true
            }
        }
        if parts.allSatisfy(listed) { return self }
        let kept = parts.filter(listed)
        return kept.isEmpty ? nil : HistoryValues(info: info, parts: kept)
    }

    /// Two records of one object in one transaction (its values, its members): the later's
    /// values and to-ones win, the earlier's "was" stays, members add up.
    func combined(with other: HistoryValues) -> HistoryValues {
        let was = Set(parts.compactMap { if case .was(let index, _) = $0 { index } else { nil } })
        return HistoryValues(info: info, parts: parts + other.parts.filter { if case .was(let index, _) = $0 { !was.contains(index) } else { true } })
    }

    // The dictionaries ``HistoryChange`` shows.

    func attributes(kept: Bool) -> [String: AttributeValue?] {
        var result: [String: AttributeValue?] = [:]
        for part in parts {
            switch part {
            case .value(let index, let value) where !kept, .kept(let index, let value) where kept:
                result[info.attributes[index].name] = .some(value)
            default: break
            }
        }
        return result
    }

    func toOnes(previous: Bool) -> [String: ObjectID?] {
        var result: [String: ObjectID?] = [:]
        for part in parts {
            switch part {
            case .toOne(let index, let key) where !previous, .was(let index, let key) where previous:
                result[info.toOnes[index].name] = .some(key.map { ObjectID(entity: info.toOneDestinationNames[index], primaryKey: $0) })
            default: break
            }
        }
        return result
    }

    func members(added: Bool) -> [String: [ObjectID]] {
        var result: [String: [ObjectID]] = [:]
        for part in parts {
            switch part {
            case .added(let index, let keys) where added, .removed(let index, let keys) where !added:
                let destination = info.toManyDestinationNames[index]
                result[info.toManys[index].name, default: []] += keys.map { ObjectID(entity: destination, primaryKey: $0) }
            default: break
            }
        }
        return result
    }
}

/// A record's keys: one, without an array (a save's row), or many.
enum RecordKeys: Sequence {
    case one(Int64)
    case many([Int64])

    struct Iterator: IteratorProtocol {
        let keys: RecordKeys
        var at = 0
        mutating func next() -> Int64? {
            defer { at += 1 }
            switch keys {
            case .one(let key): return at == 0 ? key : nil
            case .many(let keys): return at < keys.count ? keys[at] : nil
            }
        }
    }

    func makeIterator() -> Iterator { Iterator(keys: self) }

    var array: [Int64] {
        switch self {
        case .one(let key): [key]
        case .many(let keys): keys
        }
    }

    /// The `keys` column's bytes: `[42]` read on the spot, anything else by the history's reader.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws -> RecordKeys {
        let count = bytes.count
        if count >= 3, count <= 20, bytes[0] == UInt8(ascii: "["), bytes[count - 1] == UInt8(ascii: "]") {
            var key: Int64 = 0
            var at = 1
            let negative = bytes[1] == UInt8(ascii: "-")
            if negative { at = 2 }
            var digits = 0
            while at < count - 1, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") {
                key = key * 10 + Int64(bytes[at] - UInt8(ascii: "0"))
                at += 1
                digits += 1
            }
            // 18 digits at most: no overflow to think of.
            if at == count - 1, digits > 0, digits <= 18 { return .one(negative ? -key : key) }
        }
        return .many(try HistoryLog.decodeKeys(bytes))
    }
}

/// One `strata_history_change` row, decoded straight from the bytes the statement lends (no
/// JSON tree, no column text copied): its entity, operation and keys, and its data's parts by the
/// model, `set` (new values), `was` (what the changed to-ones named before), `add`/`remove`
/// (many-to-many members) and `kept` (values preserved on deletion). A part or a name this model
/// does not have is skipped; a value that is not of its attribute's type throws (a record is read
/// whole or not at all).
struct HistoryEntry {
    let info: EntityInfo
    let op: HistoryChange.Kind
    let keys: RecordKeys
    /// The data's parts, or `nil` when the record has none.
    let values: HistoryValues?

    /// `last`: the entity of the row before, compared by its name's bytes before any lookup.
    init(_ row: Statement, schema: Schema, last: EntityInfo? = nil) throws {
        let info = try row.withBytes(at: 1, asText: true) { bytes throws -> EntityInfo in
            if let last, JSONScanner.equal(bytes, last.name) { return last }
            let name = String(decoding: bytes, as: UTF8.self)
            guard let info = schema.infos[name] else { throw HistoryJSON.Failure(reason: "entity \(name) is not in the model") }
            return info
        }
        self.info = info
        op = try row.withBytes(at: 2, asText: true) { bytes throws -> HistoryChange.Kind in
            // "insert", "update", "delete": six bytes, told apart by the first.
            if bytes.count == 6 {
                switch bytes[0] {
                case UInt8(ascii: "u") where JSONScanner.equal(bytes, "update"): return .update
                case UInt8(ascii: "i") where JSONScanner.equal(bytes, "insert"): return .insert
                case UInt8(ascii: "d") where JSONScanner.equal(bytes, "delete"): return .delete
                default: break
                }
            }
            throw HistoryJSON.Failure(reason: "operation \(String(decoding: bytes, as: UTF8.self))")
        }
        keys = try row.withBytes(at: 3, asText: true) { try RecordKeys.decode($0) }
        if row.isNull(at: 4) {
            values = nil
        } else {
            values = try row.withBytes(at: 4, asText: true) { try HistoryEntry.decodeData($0, info) }
        }
    }

    private enum Part { case set, was, add, remove, kept, other }

    /// The data's parts; names compared as bytes with the model's, found by their index.
    private static func decodeData(_ bytes: UnsafeBufferPointer<UInt8>, _ info: EntityInfo) throws -> HistoryValues? {
        var parts: [HistoryValues.Part] = []
        var scanner = JSONScanner(bytes)
        do throws(JSONScanner.Failure) {
            scanner.skipWhitespace()
            guard scanner.next == UInt8(ascii: "{") else { throw scanner.failure("the data is not an object") }
            try scanner.objectWithRawKeys { scanner, name throws(JSONScanner.Failure) in
                let part: Part = if JSONScanner.equal(name, "set") { .set } else if JSONScanner.equal(name, "was") { .was }
                    else if JSONScanner.equal(name, "add") { .add } else if JSONScanner.equal(name, "remove") { .remove }
                    else if JSONScanner.equal(name, "kept") { .kept } else { .other }
                guard part != .other, scanner.next == UInt8(ascii: "{") else {
                    _ = try HistoryJSON.read(&scanner, depth: 1)
                    return
                }
                try scanner.objectWithRawKeys { scanner, key throws(JSONScanner.Failure) in
                    switch part {
                    case .set, .kept:
                        let value = try HistoryJSON.read(&scanner, depth: 2)
                        if let index = info.attributes.indices.first(where: { JSONScanner.equal(key, info.attributes[$0].name) }) {
                            let decoded: AttributeValue?
                            do { decoded = try HistoryLog.decode(value, as: info.attributeTypes[index]) } catch { throw scanner.failure("\(error)") }
                            parts.append(part == .set ? .value(index, decoded) : .kept(index, decoded))
                        } else if part == .set, let index = info.toOnes.indices.first(where: { JSONScanner.equal(key, info.toOnes[$0].name) }) {
                            parts.append(.toOne(index, HistoryEntry.destination(value)))
                        }
                    case .was:
                        let value = try HistoryJSON.read(&scanner, depth: 2)
                        if let index = info.toOnes.indices.first(where: { JSONScanner.equal(key, info.toOnes[$0].name) }) {
                            parts.append(.was(index, HistoryEntry.destination(value)))
                        }
                    case .add, .remove:
                        let keys = try HistoryLog.readKeys(&scanner)
                        guard let index = info.toManys.indices.first(where: { JSONScanner.equal(key, info.toManys[$0].name) }) else { return }
                        parts.append(part == .add ? .added(index, keys) : .removed(index, keys))
                    case .other:
                        break
                    }
                }
            }
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { throw scanner.failure("text after the data") }
        } catch {
            throw HistoryJSON.Failure(reason: "\(error.reason) at \(error.position)")
        }
        return parts.isEmpty ? nil : HistoryValues(info: info, parts: parts)
    }

    /// A to-one's destination key in a record, or none.
    private static func destination(_ value: HistoryJSON) -> Int64? {
        guard case .integer(let key) = value else { return nil }
        return key
    }

    // What the follower reads of an entry.

    /// The objects the changed to-ones named before the update.
    var previousDestinations: [ObjectID] {
        (values?.parts ?? []).compactMap { part in
            guard case .was(let index, let key?) = part else { return nil }
            return ObjectID(entity: info.toOneDestinationNames[index], primaryKey: key)
        }
    }

    /// The to-ones the entry sets without saying what they named before (a batch update), by index.
    var toOnesWithoutPrevious: [Int] {
        let parts = values?.parts ?? []
        let was = Set(parts.compactMap { if case .was(let index, _) = $0 { index } else { nil } })
        return parts.compactMap { if case .toOne(let index, _) = $0, !was.contains(index) { index } else { nil } }
    }

    /// The members of every many-to-many the entry adds to or removes from (`nil`: none).
    var touchedMembers: [ObjectID]? {
        var members: [ObjectID]?
        for part in values?.parts ?? [] {
            switch part {
            case .added(let index, let keys), .removed(let index, let keys):
                members = (members ?? []) + keys.map { ObjectID(entity: info.toManyDestinationNames[index], primaryKey: $0) }
            default: break
            }
        }
        return members
    }
}
