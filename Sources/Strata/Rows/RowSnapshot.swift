internal import Foundation
internal import StrataSQLite

/// One row's values: attributes in model order, then to-one destination keys, plus the row
/// version they were read at.
///
/// Equality compares the values only: the version is optimistic-locking bookkeeping, and two
/// snapshots with the same values are the same row state whatever version each was read at.
// Its RowStorage is shared only by copies of a snapshot and is changed only through one holding
// the single reference (`isKnownUniquelyReferenced`, a copy otherwise: the copy-on-write of
// `Array`'s buffer); all it holds (strings, data, boxed `AttributeValue`s) is `Sendable`.
// @unchecked Sendable because of that: no two threads ever change one storage.
@usableFromInline
struct RowSnapshot: @unchecked Sendable, Equatable {
    /// Attributes then to-one keys, in one allocation (see ``RowStorage``).
    @usableFromInline var storage: RowStorage
    /// The stored row's `_version` these values were read at (0: never stored).
    var version: Int64 = 0

    /// The attribute values in model order.
    var attributes: AttributeValues {
        get { AttributeValues(storage: storage) }
        // The view takes the one reference while it is changed, so that a change in place does
        // not copy the storage.
        _modify {
            var view = AttributeValues(storage: storage)
            storage = RowStorage.empty
            defer { storage = view.storage }
            yield &view
        }
        set {
            precondition(newValue.count == storage.attributeCount, "a row's attributes are replaced by as many")
            makeUnique()
            for index in 0..<newValue.count { storage.setValue(newValue[index], index) }
        }
    }

    /// The to-one destination keys in model order.
    var toOnes: ToOneKeys {
        get { ToOneKeys(storage: storage) }
        _modify {
            var view = ToOneKeys(storage: storage)
            storage = RowStorage.empty
            defer { storage = view.storage }
            yield &view
        }
        set {
            precondition(newValue.count == storage.slotCount - storage.attributeCount, "a row's to-ones are replaced by as many")
            makeUnique()
            let first = storage.attributeCount
            for index in 0..<newValue.count { storage.setKey(newValue[index], first + index) }
        }
    }

    // Changes through these rather than `attributes[i] = v`: the view's `_modify` moves the
    // storage out and back, two more retains and releases per change.

    /// Attribute `index` (what `attributes[index]` gives, without making the view).
    @inline(__always)
    func attribute(_ index: Int) -> AttributeValue? {
        precondition(index >= 0 && index < storage.attributeCount, "attribute index out of range")
        return storage.value(index)
    }

    /// The address of attribute `index`'s value when its slot holds `tag` (``RowStorage``), else
    /// nil: a typed read loads its value from there, with no `AttributeValue` in between. Valid
    /// while this row's storage is neither changed nor released: read it at once.
    @inlinable @inline(__always)
    func attributeValue(_ index: Int, taggedAs tag: UInt8) -> UnsafeRawPointer? {
        storage.attributeValue(index, taggedAs: tag)
    }

    /// The same, by the offsets an ``AttributeKeys/Entry`` of this row's entity carries.
    @inlinable @inline(__always)
    func attributeValue(_ entry: UnsafePointer<AttributeKeys.Entry>, taggedAs tag: UInt8) -> UnsafeRawPointer? {
        storage.attributeValue(entry.pointee.index, valueOffset: entry.pointee.valueOffset, tagOffset: entry.pointee.tagOffset, taggedAs: tag)
    }

    /// Sets attribute `index`.
    @inline(__always)
    mutating func setAttribute(_ value: AttributeValue?, at index: Int) {
        precondition(index >= 0 && index < storage.attributeCount, "attribute index out of range")
        makeUnique()
        storage.setValue(value, index)
    }

    /// Sets attribute `index` to a number in its slot's native form (``RowStorage/setWord(_:_:tag:)``).
    @inline(__always)
    mutating func setAttributeWord<Word: BitwiseCopyable>(_ value: Word?, tag: UInt8, at index: Int) {
        precondition(index >= 0 && index < storage.attributeCount, "attribute index out of range")
        makeUnique()
        storage.setWord(value, index, tag: tag)
    }

    /// Sets string attribute `index`, or nil (``RowStorage/setString(_:_:)``).
    @inline(__always)
    mutating func setAttributeString(_ value: String?, at index: Int) {
        precondition(index >= 0 && index < storage.attributeCount, "attribute index out of range")
        makeUnique()
        storage.setString(value, index)
    }

    /// Sets to-one `index`'s destination key.
    @inline(__always)
    mutating func setToOne(_ key: Int64?, at index: Int) {
        let first = storage.attributeCount
        precondition(index >= 0 && index < storage.slotCount - first, "to-one index out of range")
        makeUnique()
        storage.setKey(key, first + index)
    }

    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }

    /// A row of these values, laid out for them (wide slots for strings and UUIDs).
    init(attributes: [AttributeValue?], toOnes: [Int64?], version: Int64 = 0) {
        let layout = RowLayout(attributeTypes: attributes.map { $0?.type ?? .int64 }, toOneCount: toOnes.count)
        storage = RowStorage.make(layout)
        for (index, value) in attributes.enumerated() { storage.initializeValue(index, value) }
        for (index, key) in toOnes.enumerated() { storage.setKey(key, attributes.count + index) }
        self.version = version
    }

    /// A fault's values: no slots.
    static var empty: RowSnapshot { RowSnapshot(storage: RowStorage.empty) }

    private init(storage: RowStorage) { self.storage = storage }

    @usableFromInline static func == (lhs: RowSnapshot, rhs: RowSnapshot) -> Bool {
        lhs.attributes == rhs.attributes && lhs.toOnes == rhs.toOnes
    }

    /// A row of `layout` with every value nil.
    init(layout: RowLayout) { storage = RowStorage.make(layout) }

    /// A new object's values: every default, no relationships.
    init(defaultsOf info: EntityInfo) {
        storage = RowStorage.make(info.rowLayout)
        for (index, value) in info.nonNilDefaults { storage.initializeValue(index, value) }
    }

    /// Every value nil but `defaults`, in place when the storage is not shared.
    mutating func resetToDefaults(_ defaults: [(Int, AttributeValue)], layout: RowLayout) {
        if isKnownUniquelyReferenced(&storage) {
            storage.clear()
        } else {
            storage = RowStorage.make(layout)
        }
        for (index, value) in defaults { storage.initializeValue(index, value) }
        version = 0
    }

    /// Reads the row the statement is positioned on (columns as in `EntityInfo.selectSQL`):
    /// column 0 is the primary key, the version follows the to-ones.
    // `borrowing`: an initialiser takes its arguments owned by default, which made every caller
    // retain and release the statement and the entity description around each row.
    init(statement: borrowing Statement, info: borrowing EntityInfo, firstColumn: Int32 = 1) {
        // Straight from SQLite into the row's slots: no `AttributeValue` in between for the
        // common types. One step per slot from the layout's interned decode table (a trivial
        // buffer: nothing retained per row), each with its value's byte offset: about 30
        // instructions a column became about 20 (callgrind, a fetch of every flight).
        let storage = RowStorage.make(info.rowLayout)
        let steps = info.rowLayout.decodeSteps
        storage.withUnsafeMutablePointers { header, words in
            let base = UnsafeMutableRawPointer(words)
            let tags = (base + header.pointee.tagOffset).assumingMemoryBound(to: UInt8.self)
            var column = firstColumn
            for slot in 0..<steps.count {
                let step = steps[slot]
                let value = base + Int(step.byteOffset)
                // Every slot of a new row holds nothing: values are written, never replaced.
                switch step.kind {
                case RowLayout.DecodeStep.int64:
                    if let v = statement.optionalInt64(at: column) { value.storeBytes(of: v, as: Int64.self); tags[slot] = RowTag.int64 }
                case RowLayout.DecodeStep.double:
                    if let v = statement.optionalDouble(at: column) { value.storeBytes(of: v, as: Double.self); tags[slot] = RowTag.double }
                case RowLayout.DecodeStep.date:
                    if let v = statement.optionalDouble(at: column) { value.storeBytes(of: v, as: Double.self); tags[slot] = RowTag.date }
                case RowLayout.DecodeStep.string:
                    if statement.initializeString(at: column, into: value) { tags[slot] = RowTag.string }
                default:
                    storage.initializeValue(slot, RowSnapshot.read(statement, column, as: step.attributeType))
                }
                column += 1
            }
        }
        self.storage = storage
        version = statement.int64(at: firstColumn + Int32(steps.count))
    }

    static func read(_ statement: Statement, _ column: Int32, as type: AttributeType) -> AttributeValue? {
        // Numbers and text: one call into SQLite per column (the optional readers ask for the
        // column's type only when the value reads as NULL would), not a type check and a read.
        switch type {
        case .int16: return statement.optionalInt64(at: column).map { .int16(Int16(truncatingIfNeeded: $0)) }
        case .int32: return statement.optionalInt64(at: column).map { .int32(Int32(truncatingIfNeeded: $0)) }
        case .int64: return statement.optionalInt64(at: column).map(AttributeValue.int64)
        case .double: return statement.optionalDouble(at: column).map(AttributeValue.double)
        case .float: return statement.optionalDouble(at: column).map { .float(Float($0)) }
        case .bool: return statement.optionalInt64(at: column).map { .bool($0 != 0) }
        case .string: return statement.optionalString(at: column).map(AttributeValue.string)
        case .date: return statement.optionalDouble(at: column).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .binary:
            return statement.isNull(at: column) ? nil : .binary(statement.data(at: column))
        case .uuid:
            guard !statement.isNull(at: column) else { return nil }
            let bytes = statement.data(at: column)
            guard bytes.count == 16 else { return nil }
            return .uuid(bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
        case .url: return statement.optionalString(at: column).flatMap(URL.init(string:)).map(AttributeValue.url)
        case .decimal:
            return statement.optionalString(at: column).flatMap { Decimal(string: $0, locale: posixLocale) }.map(AttributeValue.decimal)
        }
    }

    /// Binds every column from parameter `first` on.
    func bind(to statement: Statement, from first: Int32) throws {
        var index = first
        for value in attributes {
            try RowSnapshot.bind(value, to: statement, at: index)
            index += 1
        }
        for key in toOnes {
            if let key { try statement.bind(key, at: index) } else { try statement.bindNull(at: index) }
            index += 1
        }
    }

    /// Binds the row from parameter `first` on (as ``bind(to:from:)``) and runs `statement` once,
    /// its text bound in place (``Statement/withText(_:boundAt:_:)``): no copy of a string.
    func execute(_ statement: Statement, from first: Int32) throws {
        try execute(statement, attribute: 0, at: first)
    }

    private func execute(_ statement: Statement, attribute start: Int, at first: Int32) throws {
        var index = first
        var attribute = start
        let attributes = self.attributes
        while attribute < attributes.count {
            // One switch, one copy of the value (a test for `.string` and then a bind copied it
            // twice: 2% of a batch insert; callgrind).
            switch attributes[attribute] {
            case .string(let text)?:
                let next = attribute + 1, nextIndex = index + 1
                try statement.withText(text, boundAt: index) { try execute(statement, attribute: next, at: nextIndex) }
                return
            case nil: try statement.bindNull(at: index)
            case .int64(let v)?: try statement.bind(v, at: index)
            case .double(let v)?: try statement.bind(v, at: index)
            case .date(let v)?: try statement.bind(v.timeIntervalSinceReferenceDate, at: index)
            case let other?: try statement.bind(other.storageValue, at: index)
            }
            attribute += 1
            index += 1
        }
        for key in toOnes {
            if let key { try statement.bind(key, at: index) } else { try statement.bindNull(at: index) }
            index += 1
        }
        try statement.execute()
    }

    /// Binds a value in its stored form (``AttributeValue/storageValue``, shared with the
    /// condition back ends).
    static func bind(_ value: AttributeValue?, to statement: Statement, at index: Int32) throws {
        // The common types straight to their SQLite call, without the `SQLiteValue` in between.
        switch value {
        case nil: try statement.bindNull(at: index)
        case .int64(let v)?: try statement.bind(v, at: index)
        case .double(let v)?: try statement.bind(v, at: index)
        case .string(let v)?: try statement.bind(v, at: index)
        case .date(let v)?: try statement.bind(v.timeIntervalSinceReferenceDate, at: index)
        case let other?: try statement.bind(other.storageValue, at: index)
        }
    }
}

let posixLocale = Locale(identifier: "en_US_POSIX")
