public import Foundation
internal import StrataSQLite

/// One row of a ``BatchInsertRequest``, filled in place: every property starts at its default.
///
/// A set is bound straight to the request's `INSERT` (strings are held and bound in place when
/// the row is inserted), so a row is never copied into an intermediate form. Keys are looked up
/// once per position: a fill that sets the same keys in the same order for every row (the
/// common case) finds each key by comparing it with the one set at that position the row
/// before; any other order is looked up by name, as the first row is.
///
/// A batch row is a handle on the row being filled, not a value: a copy sets the same row (both
/// bind the same statement). Use it inside the closure only.
public struct BatchRow<Result: ManagedObject> {
    /// The row itself, in a struct that is not generic: every call into a method of the generic
    /// struct was passed `BatchRow<Result>`'s metadata, looked up by an accessor call per `set`
    /// (11.5 M of a batch insert's 1,182 M instructions; callgrind).
    @usableFromInline var base: BatchRowValues

    var info: EntityInfo { base.info }

    init(_ base: BatchRowValues) {
        self.base = base
    }

    /// Sets attribute or to-one `key` (a to-one takes an `ObjectID` or an object of its
    /// destination, or `nil`).
    ///
    /// - Throws: ``ObjectError/unknownKey(entity:key:)``, ``ObjectError/wrongType(entity:key:expected:actual:)``,
    ///   ``BatchError/toManyNotSupported(entity:key:)`` for a to-many (set its inverse to-one instead).
    public mutating func set(_ value: Any?, forKey key: String) throws {
        try base.assign(value, forKey: key)
    }

    /// Sets attribute `key` to a plain value: bound as it is when the attribute has exactly the
    /// value's type, with no `Any` box and no dynamic cast (casts from `Any` were a third of a
    /// batch insert's instructions; callgrind). Any other pairing converts as the `Any?`
    /// overload does.
    ///
    /// Inlinable, so that the caller's compiler specializes it for `Value`: unspecialized, each
    /// call looked up the metadata of `Optional<Value>` (12% of a batch insert; callgrind).
    @inlinable
    public mutating func set<Value: BatchValue>(_ value: Value?, forKey key: String) throws {
        // One branch survives the specialization: the common types reach their bind without an
        // `AttributeValue` (whose copies alone were 24 M instructions of a batch insert; callgrind).
        if Value.self == Int64.self {
            try base.setInteger(value.map { $0 as! Int64 }, type: .int64, forKey: key, original: value as Any?)
        } else if Value.self == Int.self {
            try base.setInteger(value.map { Int64($0 as! Int) }, type: .int64, forKey: key, original: value as Any?)
        } else if Value.self == Double.self {
            try base.setReal(value.map { $0 as! Double }, type: .double, forKey: key, original: value as Any?)
        } else if Value.self == String.self {
            try base.setString(value.map { $0 as! String }, forKey: key, original: value as Any?)
        } else if Value.self == Date.self {
            try base.setReal(value.map { ($0 as! Date).timeIntervalSinceReferenceDate }, type: .date, forKey: key, original: value as Any?)
        } else if Value.self == Bool.self {
            try base.setInteger(value.map { ($0 as! Bool) ? 1 : 0 }, type: .bool, forKey: key, original: value as Any?)
        } else {
            try base.setAttribute(value?.batchAttributeValue, type: Value.batchAttributeType, forKey: key, original: value as Any?)
        }
    }

    /// Points to-one `key` at the row of `id` (`nil` clears it).
    @inlinable
    public mutating func set(_ id: ObjectID?, forKey key: String) throws {
        try base.setToOne(id, forKey: key)
    }
}

extension BatchRow where Result: PersistentEntity {
    /// Sets the property `keyPath` names.
    public mutating func set<Value>(_ keyPath: KeyPath<Result, Value>, _ value: Value) throws {
        guard let key = Result.propertyName(for: keyPath) else {
            throw ObjectError.unknownKey(entity: info.name, key: "\(keyPath)")
        }
        try base.assign(value, forKey: key)
    }

    /// Points the to-one `keyPath` names at the row of `id` (no object needed).
    public mutating func set<Destination: ManagedObject>(_ keyPath: KeyPath<Result, Destination?>, _ id: ObjectID?) throws {
        guard let key = Result.propertyName(for: keyPath) else {
            throw ObjectError.unknownKey(entity: info.name, key: "\(keyPath)")
        }
        try base.assign(id, forKey: key)
    }
}

/// A ``BatchRow``'s state: the `INSERT` it binds, and what the row's checks and its insert need
/// that the statement's parameters cannot tell (which slots were set, strings, ruled values,
/// to-one keys).
///
/// Each set binds its value to the statement's parameter at once (a string is held instead, and
/// bound in place by ``insert(key:)``, without SQLite's copy). The row before the fill is the
/// row before's bindings: ``complete(key:into:)`` binds every property this row left unset to
/// its default (or NULL), so nothing of the row before can reach this one. Keeping the row in a
/// ``RowSnapshot`` and binding it at the end cost twice the Swift work per value (the slot write,
/// then a read and a bind; about 250 instructions a value in all; callgrind).
@usableFromInline
struct BatchRowValues {
    let info: EntityInfo
    /// The entity's `INSERT`: the primary key, the attributes, then the to-ones (parameter 2 + slot).
    private let statement: Statement
    private let attributeCount: Int
    private let slotCount: Int
    /// Each attribute's default (nil: none), what an unset attribute takes.
    private let defaults: [AttributeValue?]
    /// The string attributes, bound by ``insert(key:)``.
    private let stringSlots: [Int]
    /// Whether each attribute has a rule (its value is kept for the row's check).
    private let hasRule: [Bool]
    /// The per-slot state, written through pointers (see ``BatchRowState``).
    private let state: BatchRowState
    private var row = 1
    /// How many slots this row has set: every slot set, the defaults need no pass.
    private var setCount = 0
    /// The key set at each position of the row before, and where it goes (see ``BatchRow``).
    private var memo: [KeyMemo] = []
    private var cursor = 0

    init(info: EntityInfo, statement: Statement) {
        self.info = info
        self.statement = statement
        attributeCount = info.attributes.count
        slotCount = attributeCount + info.toOnes.count
        defaults = info.attributeDefaults
        stringSlots = info.attributeTypes.indices.filter { info.attributeTypes[$0] == .string }
        var hasRule = [Bool](repeating: false, count: attributeCount)
        for (index, _) in info.attributeRules { hasRule[index] = true }
        self.hasRule = hasRule
        state = BatchRowState(attributeCount: attributeCount, toOneCount: info.toOnes.count)
    }

    /// The next row: every slot unset, the key positions from the first again.
    mutating func nextRow() {
        row += 1
        setCount = 0
        cursor = 0
    }

    /// To-one `index`'s destination key in this row (nil: none).
    func toOneKey(_ index: Int) -> Int64? {
        state.stamps[attributeCount + index] == row ? state.toOneKeys[index] : nil
    }

    var toOneCount: Int { slotCount - attributeCount }

    /// A key and where it goes, with what its typed set checks: read at once, no table lookup.
    private struct KeyMemo {
        let key: String
        let slot: Slot
        /// The attribute's type when `slot` is an attribute without rules (a typed set binds
        /// its value at once), else nil.
        let plainType: AttributeType?
        /// The destination entity's interned address when `slot` is a to-one, else 0.
        let destination: UInt
    }

    /// The index in `memo` of `key`, set at the next position of the row (remembered there when
    /// the row before set another key there); nil for a key the entity does not have.
    /// Callers read the entry's fields in place: a copy of the entry retained and released its key.
    @inline(__always)
    private mutating func memoIndex(_ key: String) -> Int? {
        let position = cursor
        cursor = position &+ 1
        // `==` on the same literal compares two words and stops (the strings' bits are equal).
        if position < memo.count, memo[position].key == key { return position }
        return remember(key, at: position)
    }

    private mutating func remember(_ key: String, at position: Int) -> Int? {
        guard let slot = info.slot(key) else { return nil }
        let entry: KeyMemo = switch slot {
        case .attribute(let index):
            KeyMemo(key: key, slot: slot, plainType: hasRule[index] ? nil : info.attributeTypes[index], destination: 0)
        case .toOne(let index):
            KeyMemo(key: key, slot: slot, plainType: nil, destination: info.toOneDestinationNames[index].address)
        case .toMany:
            KeyMemo(key: key, slot: slot, plainType: nil, destination: 0)
        }
        guard position < memo.count else {
            // Past the end (a caller caught an unknown key's error and went on): the next free place.
            memo.append(entry)
            return memo.count - 1
        }
        memo[position] = entry
        return position
    }

    /// The slot of `key`, set at the next position of the row.
    @inline(__always)
    private mutating func slot(_ key: String) -> Slot? {
        memoIndex(key).map { memo[$0].slot }
    }

    /// The attribute slot of `key` when it has type `type` and no rule (what the typed setters
    /// bind at once), else nil and the slot for the converting set.
    @inline(__always)
    private mutating func plainAttribute(_ key: String, _ type: AttributeType) -> (Int?, Slot?) {
        guard let entry = memoIndex(key) else { return (nil, nil) }
        if memo[entry].plainType == type, case .attribute(let index) = memo[entry].slot { return (index, nil) }
        return (nil, memo[entry].slot)
    }

    /// `set` of an integer-stored value (`Int64`, `Int`, `Bool` as 0 or 1) into an attribute of
    /// type `type`; anything else converts `original` as the `Any?` overload does.
    // `setReal` is its twin for `Double`: one generic body taking the bind as a closure was
    // measured at 24 M more instructions (2.3%) of a batch insert (callgrind).
    @usableFromInline
    mutating func setInteger(_ value: Int64?, type: AttributeType, forKey key: String, original: @autoclosure () -> Any?) throws {
        let (index, slot) = plainAttribute(key, type)
        guard let index else { return try assign(original(), to: slot, forKey: key) }
        let parameter = Int32(truncatingIfNeeded: index &+ 2)
        if let value { try statement.bind(value, at: parameter) } else { try statement.bindNull(at: parameter) }
        mark(index, isNil: value == nil)
    }

    /// `set` of a real-stored value (`Double`; `Date` as its seconds since 2001).
    @usableFromInline
    mutating func setReal(_ value: Double?, type: AttributeType, forKey key: String, original: @autoclosure () -> Any?) throws {
        let (index, slot) = plainAttribute(key, type)
        guard let index else { return try assign(original(), to: slot, forKey: key) }
        let parameter = Int32(truncatingIfNeeded: index &+ 2)
        if let value { try statement.bind(value, at: parameter) } else { try statement.bindNull(at: parameter) }
        mark(index, isNil: value == nil)
    }

    /// `set` of a string: held until the row's insert binds it in place.
    @usableFromInline
    mutating func setString(_ value: String?, forKey key: String, original: @autoclosure () -> Any?) throws {
        let (index, slot) = plainAttribute(key, .string)
        guard let index else { return try assign(original(), to: slot, forKey: key) }
        if let value {
            state.strings[index] = value
        } else {
            try statement.bindNull(at: Int32(truncatingIfNeeded: index &+ 2))
        }
        mark(index, isNil: value == nil)
    }

    /// The non-generic rest of the generic `set(_:forKey:)` for the other types: `original` is
    /// only read (boxed) when the attribute's type differs and the value must be converted.
    @usableFromInline
    mutating func setAttribute(_ value: AttributeValue?, type: AttributeType, forKey key: String,
                               original: @autoclosure () -> Any?) throws {
        let slot = slot(key)
        if case .attribute(let index)? = slot, info.attributeTypes[index] == type {
            return try storeAttribute(index, value)
        }
        try assign(original(), to: slot, forKey: key)
    }

    @usableFromInline
    mutating func setToOne(_ id: ObjectID?, forKey key: String) throws {
        let entry = memoIndex(key)
        if let entry, case .toOne(let index) = memo[entry].slot, id == nil || id!.entityAddress == memo[entry].destination {
            return try storeToOne(index, id?.primaryKey)
        }
        try assign(id, to: entry.map { memo[$0].slot }, forKey: key)
    }

    /// Sets `key` from a caller's value, converted as `setValue(_:forKey:)` converts it.
    mutating func assign(_ value: Any?, forKey key: String) throws {
        try assign(value, to: slot(key), forKey: key)
    }

    private mutating func assign(_ value: Any?, to slot: Slot?, forKey key: String) throws {
        switch try info.assignment(of: value, to: slot, key: key) {
        case .attribute(let index, let value): try storeAttribute(index, value)
        case .toOne(let index, let key): try storeToOne(index, key)
        }
    }

    private mutating func storeAttribute(_ index: Int, _ value: AttributeValue?) throws {
        let parameter = Int32(truncatingIfNeeded: index &+ 2)
        switch value {
        case nil: try statement.bindNull(at: parameter)
        // Held only for a string attribute (``insert(key:)`` binds those); a `.string` from a
        // `BatchValue` conformance that names another type is bound as it stores.
        case .string(let v)? where info.attributeTypes[index] == .string: state.strings[index] = v
        case let other?: try statement.bind(other.storageValue, at: parameter)
        }
        mark(index, isNil: value == nil)
        if hasRule[index] { state.ruledValues[index] = value }
    }

    @inline(__always)
    private mutating func storeToOne(_ index: Int, _ key: Int64?) throws {
        let parameter = Int32(truncatingIfNeeded: attributeCount &+ index &+ 2)
        if let key {
            try statement.bind(key, at: parameter)
            state.toOneKeys[index] = key
        } else {
            try statement.bindNull(at: parameter)
        }
        mark(attributeCount &+ index, isNil: key == nil)
    }

    @inline(__always)
    private mutating func mark(_ slot: Int, isNil: Bool) {
        precondition(slot >= 0 && slot < slotCount)
        let stamp = state.stamps[slot]
        if stamp != row && stamp != -row { setCount &+= 1 }
        state.stamps[slot] = isNil ? -row : row
    }

    /// Ends the fill of the row that will have primary key `key`: every property it left unset
    /// takes its default (or NULL), then the row is checked as a save checks an object, its
    /// failures appended to `failures`.
    mutating func complete(key: Int64, into failures: inout [ValidationFailure]) throws {
        let stamps = state.stamps
        if setCount < slotCount {
            for slot in 0..<slotCount where stamps[slot] != row && stamps[slot] != -row {
                if slot < attributeCount {
                    try storeAttribute(slot, defaults[slot])
                } else {
                    try storeToOne(slot - attributeCount, nil)
                }
            }
        }
        let (row, firstToOne) = (self.row, attributeCount)
        if info.attributeRules.isEmpty, info.requiredAttributes.allSatisfy({ stamps[$0] == row }),
           info.requiredToOnes.allSatisfy({ stamps[firstToOne &+ $0] == row }) {
            return
        }
        let ruled = state.ruledValues
        failures += ManagedObjectContext.rowFailures(
            info: info, id: ObjectID(entity: info.internedName, primaryKey: key),
            hasAttribute: { stamps[$0] == row }, ruledValue: { stamps[$0] == row ? ruled[$0] : nil },
            hasToOne: { stamps[firstToOne + $0] == row })
    }

    /// Inserts the completed row with primary key `key`: its strings bound in place, one step.
    func insert(key: Int64) throws {
        try statement.bind(key, at: 1)
        try bindStrings(from: 0, read: nil)
    }

    /// The completed row with primary key `key`, read back from the statement it is bound to
    /// when that is an echo (`SELECT ?1, ?2, …, 1`, ``EntityInfo/echoSQL``): an upsert's row.
    func echo(key: Int64) throws -> RowSnapshot {
        try statement.bind(key, at: 1)
        var echoed: RowSnapshot?
        try bindStrings(from: 0) { statement in echoed = RowSnapshot(statement: statement, info: info) }
        guard let echoed else { preconditionFailure("an echo statement returns its row") }
        return echoed
    }

    /// Whether this row set `slot` (attributes, then to-ones), rather than leaving it to its default.
    func isSet(_ slot: Int) -> Bool {
        let stamp = state.stamps[slot]
        return stamp == row || stamp == -row
    }

    private func bindStrings(from first: Int, read: ((Statement) -> Void)?) throws {
        var position = first
        while position < stringSlots.count {
            let slot = stringSlots[position]
            if state.stamps[slot] == row {
                let next = position + 1
                return try statement.withText(state.strings[slot], boundAt: Int32(truncatingIfNeeded: slot &+ 2)) { try bindStrings(from: next, read: read) }
            }
            position += 1
        }
        guard let read else { return try statement.execute() }
        defer { statement.reset() }
        guard try statement.step() else { return }
        read(statement)
    }
}

/// A ``BatchRowValues``' per-slot state, in buffers written through pointers: an array in the
/// struct checked its uniqueness on every write (a call per set).
///
/// A copy of a ``BatchRow`` shares it, as it shares the statement its sets are bound to: a batch
/// row is a handle on the one row being filled, not a value.
final class BatchRowState {
    /// Per slot (attributes, then to-ones): the row it was last set in, negated when set to nil.
    /// A slot is unset in the current row when its stamp is neither the row nor its negation.
    let stamps: UnsafeMutableBufferPointer<Int>
    /// The string attributes' values, by attribute slot (read when the stamp says set).
    let strings: UnsafeMutableBufferPointer<String>
    /// The values of the attributes that have rules, by attribute slot.
    let ruledValues: UnsafeMutableBufferPointer<AttributeValue?>
    /// Each to-one's destination key (read when the stamp says set, not nil).
    let toOneKeys: UnsafeMutableBufferPointer<Int64>

    init(attributeCount: Int, toOneCount: Int) {
        stamps = .allocate(capacity: attributeCount + toOneCount)
        stamps.initialize(repeating: 0)
        strings = .allocate(capacity: attributeCount)
        strings.initialize(repeating: "")
        ruledValues = .allocate(capacity: attributeCount)
        ruledValues.initialize(repeating: nil)
        toOneKeys = .allocate(capacity: toOneCount)
        toOneKeys.initialize(repeating: 0)
    }

    deinit {
        stamps.deallocate()
        _ = strings.deinitialize()
        strings.deallocate()
        _ = ruledValues.deinitialize()
        ruledValues.deallocate()
        toOneKeys.deallocate()
    }
}
