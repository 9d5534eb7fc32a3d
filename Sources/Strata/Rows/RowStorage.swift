internal import Foundation

/// The values of one row in one allocation: attributes, then to-one keys, each in a slot of
/// 8 bytes (numbers, dates, keys, a boxed value) or 16 bytes (strings, UUIDs, data), followed by each
/// slot's shape and tag.
///
/// It replaces two arrays (`[AttributeValue?]` at 24 bytes an element, `[Int64?]` at 16): a
/// flight of 16 attributes and 3 to-ones took two allocations and 496 bytes, and now takes one
/// of 216. Every `AttributeValue` still fits every slot: a value whose native form does not fit
/// (a string in a slot declared for a number, a URL, a decimal) is kept in a box,
/// so the values read back are exactly the ones written, whatever their type.
///
/// Layout of the tail words: `[values][tag: UInt8 per slot]`; a tag says what the slot holds now
/// (``RowTag``). Where each slot lives (its shape, `wordOffset << 1 | isWide`) is the same for
/// every row of an entity, so the rows of a layout share one shape table, interned for the life of
/// the process (``RowLayout``): the header points at it, and reading a row needs no schema lookup.
///
/// Not `Sendable` itself (`ManagedBuffer` forbids it); ``RowSnapshot``, which owns it, is.
@usableFromInline
final class RowStorage: ManagedBuffer<RowStorageHeader, UInt64> {
    deinit {
        withUnsafeMutablePointers { header, words in
            let base = UnsafeMutableRawPointer(words)
            RowStorage.destroyValues(base, header.pointee)
        }
    }

    /// Releases what the slots hold (strings, boxes); tags are left as they are.
    private static func destroyValues(_ base: UnsafeMutableRawPointer, _ header: RowStorageHeader) {
        guard header.slotCount > 0 else { return }
        let tags = base + header.tagOffset
        let shapes = header.shapes
        for slot in 0..<header.slotCount {
            let tag = tags.load(fromByteOffset: slot, as: UInt8.self)
            // Only strings, blobs and boxes hold references: the other tags need no release
            // and no look at the slot's shape (a batch insert resets its row once per row).
            if (RowTag.holdingReferences >> tag) & 1 != 0 { release(base + Int(shapes[slot] >> 1) &* 8, tag) }
        }
    }

    /// A row of `layout` with every slot nil.
    static func make(_ layout: RowLayout) -> RowStorage {
        let storage = unsafeDowncast(RowStorage.create(minimumCapacity: layout.wordCount) { _ in layout.header }, to: RowStorage.self)
        // Every value word zero and every tag `RowTag.null` (0).
        storage.withUnsafeMutablePointerToElements { $0.initialize(repeating: 0, count: layout.wordCount) }
        return storage
    }

    /// The shared row of no slots (a fault's values). `nonisolated(unsafe)` because: it has no
    /// slots, so nothing can change it (every setter checks the slot against the count first).
    nonisolated(unsafe) static let empty = RowStorage.make(RowLayout(attributeTypes: [], toOneCount: 0))

    // Through the header's pointer, not `header`: a class's stored property is read with a
    // dynamic exclusivity check, which cost more than the rest of an attribute read.
    var attributeCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.attributeCount } }
    var slotCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.slotCount } }

    /// A copy holding its own references to the strings and boxes.
    func copy() -> RowStorage {
        let header = withUnsafeMutablePointerToHeader { $0.pointee }
        let copy = unsafeDowncast(RowStorage.create(minimumCapacity: header.wordCount) { _ in header }, to: RowStorage.self)
        withUnsafeMutablePointerToElements { source in
            copy.withUnsafeMutablePointerToElements { target in
                target.initialize(from: source, count: header.wordCount)
                let base = UnsafeMutableRawPointer(target), from = UnsafeMutableRawPointer(source)
                let tags = base + header.tagOffset
                let shapes = header.shapes
                for slot in 0..<header.slotCount {
                    // The words were copied bit for bit: what holds a reference takes its own.
                    let offset = Int(shapes[slot] >> 1) &* 8
                    switch tags.load(fromByteOffset: slot, as: UInt8.self) {
                    case RowTag.string:
                        (base + offset).initializeMemory(as: String.self, to: (from + offset).load(as: String.self))
                    case RowTag.binary:
                        (base + offset).initializeMemory(as: Data.self, to: (from + offset).load(as: Data.self))
                    case RowTag.boxed:
                        let bits = (base + offset).load(as: UInt.self)
                        _ = Unmanaged<AttributeBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).retain()
                    default: break
                    }
                }
            }
        }
        return copy
    }

    // MARK: Slots

    /// Calls `body` with the values' base address, the slot's value address and its tag's address.
    @inline(__always)
    private func withSlot<R>(_ slot: Int, _ body: (UnsafeMutableRawPointer, UnsafeMutablePointer<UInt8>, Bool) -> R) -> R {
        withUnsafeMutablePointers { header, words in
            let base = UnsafeMutableRawPointer(words)
            let shape = header.pointee.shapes[slot]
            let tag = (base + header.pointee.tagOffset + slot).assumingMemoryBound(to: UInt8.self)
            return body(base + Int(shape >> 1) &* 8, tag, shape & 1 == 1)
        }
    }

    /// The address of attribute `index`'s value when its tag is `tag`; nil when the tag is another
    /// or `index` is no attribute of this row. Valid while the storage is unchanged and alive:
    /// load from it at once. What the typed reads inline into their callers.
    @inlinable @inline(__always)
    func attributeValue(_ index: Int, taggedAs tag: UInt8) -> UnsafeRawPointer? {
        withUnsafeMutablePointers { header, words in
            guard index < header.pointee.attributeCount else { return nil }
            let base = UnsafeRawPointer(words)
            guard base.load(fromByteOffset: header.pointee.tagOffset &+ index, as: UInt8.self) == tag else { return nil }
            return base + Int(header.pointee.shapes[index] >> 1) &* 8
        }
    }

    /// The address of an attribute's value when its tag is `tag`, by the offsets of its
    /// ``AttributeKeys/Entry`` (which this row's layout gave); nil when the tag is another or
    /// `index` is no attribute of this row (the empty row of a fault). What the typed reads
    /// inline into their callers.
    @inlinable @inline(__always)
    func attributeValue(_ index: Int, valueOffset: UInt32, tagOffset: UInt32, taggedAs tag: UInt8) -> UnsafeRawPointer? {
        withUnsafeMutablePointers { header, words in
            guard index < header.pointee.attributeCount else { return nil }
            let base = UnsafeRawPointer(words)
            guard base.load(fromByteOffset: Int(tagOffset), as: UInt8.self) == tag else { return nil }
            return base + Int(valueOffset)
        }
    }

    /// The tag of `slot` (``RowTag``).
    @inline(__always)
    func tag(_ slot: Int) -> UInt8 {
        withUnsafeMutablePointers { header, words in
            UnsafeMutableRawPointer(words).load(fromByteOffset: header.pointee.tagOffset &+ slot, as: UInt8.self)
        }
    }

    /// The value in `slot`.
    @inline(__always)
    func value(_ slot: Int) -> AttributeValue? {
        withSlot(slot) { value, tag, _ in
            switch tag.pointee {
            case RowTag.null: return nil
            case RowTag.int64: return .int64(value.load(as: Int64.self))
            case RowTag.double: return .double(value.load(as: Double.self))
            case RowTag.string: return .string(value.load(as: String.self))
            case RowTag.date: return .date(Date(timeIntervalSinceReferenceDate: value.load(as: Double.self)))
            case RowTag.int16: return .int16(Int16(truncatingIfNeeded: value.load(as: Int64.self)))
            case RowTag.int32: return .int32(Int32(truncatingIfNeeded: value.load(as: Int64.self)))
            case RowTag.float: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: value.load(as: UInt64.self))))
            case RowTag.bool: return .bool(value.load(as: Int64.self) != 0)
            case RowTag.uuid: return .uuid(UUID(uuid: value.loadUnaligned(as: uuid_t.self)))
            case RowTag.binary: return .binary(value.load(as: Data.self))
            default:
                let bits = value.load(as: UInt.self)
                return Unmanaged<AttributeBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue().value
            }
        }
    }

    /// A to-one key (a slot that holds an `Int64` or nothing).
    @inline(__always)
    func key(_ slot: Int) -> Int64? {
        withSlot(slot) { value, tag, _ in
            switch tag.pointee {
            case RowTag.null: return nil
            case RowTag.int64: return value.load(as: Int64.self)
            default: preconditionFailure("a to-one slot holds \(tag.pointee), not a key")
            }
        }
    }

    /// Replaces the value of `slot`; the caller made the storage unique.
    func setValue(_ newValue: AttributeValue?, _ slot: Int) {
        withSlot(slot) { value, tag, wide in
            RowStorage.release(value, tag.pointee)
            RowStorage.initialize(value, tag, wide, newValue)
        }
    }

    /// Replaces the value of `slot` with a number in its slot's native form (`code` says which,
    /// ``RowTag``), or nil; the caller made the storage unique. A typed set's path: no
    /// `AttributeValue` and no switch over every case of one.
    @inline(__always)
    func setWord<Word: BitwiseCopyable>(_ newValue: Word?, _ slot: Int, tag code: UInt8) {
        withSlot(slot) { value, tag, _ in
            RowStorage.release(value, tag.pointee)
            if let newValue {
                value.storeBytes(of: newValue, as: Word.self)
                tag.pointee = code
            } else {
                tag.pointee = RowTag.null
            }
        }
    }

    /// Replaces the value of a string attribute's (wide) slot, or sets it nil; the caller made
    /// the storage unique.
    @inline(__always)
    func setString(_ newValue: String?, _ slot: Int) {
        withSlot(slot) { value, tag, wide in
            precondition(wide, "a string attribute's slot is wide")
            RowStorage.release(value, tag.pointee)
            if let newValue {
                value.initializeMemory(as: String.self, to: newValue)
                tag.pointee = RowTag.string
            } else {
                tag.pointee = RowTag.null
            }
        }
    }

    /// Replaces a to-one key; the caller made the storage unique.
    func setKey(_ key: Int64?, _ slot: Int) { setWord(key, slot, tag: RowTag.int64) }

    /// Sets a slot known to be nil (a row being filled) to a number or key: no release first.
    @inline(__always)
    func initialize<Word: BitwiseCopyable>(_ slot: Int, _ v: Word, tag code: UInt8) {
        withSlot(slot) { value, tag, _ in
            value.storeBytes(of: v, as: Word.self)
            tag.pointee = code
        }
    }

    @inline(__always)
    func initializeValue(_ slot: Int, _ newValue: AttributeValue?) {
        withSlot(slot) { value, tag, wide in RowStorage.initialize(value, tag, wide, newValue) }
    }

    /// Every slot back to nil, what it held released.
    func clear() {
        withUnsafeMutablePointers { header, words in
            let base = UnsafeMutableRawPointer(words)
            RowStorage.destroyValues(base, header.pointee)
            (base + header.pointee.tagOffset).initializeMemory(as: UInt8.self, repeating: RowTag.null, count: header.pointee.slotCount)
        }
    }

    @inline(__always)
    private static func release(_ value: UnsafeMutableRawPointer, _ tag: UInt8) {
        switch tag {
        case RowTag.string: value.assumingMemoryBound(to: String.self).deinitialize(count: 1)
        case RowTag.binary: value.assumingMemoryBound(to: Data.self).deinitialize(count: 1)
        case RowTag.boxed:
            Unmanaged<AttributeBox>.fromOpaque(UnsafeRawPointer(bitPattern: value.load(as: UInt.self))!).release()
        default: break
        }
    }

    /// Writes `newValue` into a slot that holds nothing to release.
    @inline(__always)
    private static func initialize(_ value: UnsafeMutableRawPointer, _ tag: UnsafeMutablePointer<UInt8>,
                                   _ wide: Bool, _ newValue: AttributeValue?) {
        switch newValue {
        case nil: tag.pointee = RowTag.null
        case .int64(let v)?: value.storeBytes(of: v, as: Int64.self); tag.pointee = RowTag.int64
        case .double(let v)?: value.storeBytes(of: v, as: Double.self); tag.pointee = RowTag.double
        case .date(let v)?:
            value.storeBytes(of: v.timeIntervalSinceReferenceDate, as: Double.self); tag.pointee = RowTag.date
        case .int16(let v)?: value.storeBytes(of: Int64(v), as: Int64.self); tag.pointee = RowTag.int16
        case .int32(let v)?: value.storeBytes(of: Int64(v), as: Int64.self); tag.pointee = RowTag.int32
        case .float(let v)?: value.storeBytes(of: UInt64(v.bitPattern), as: UInt64.self); tag.pointee = RowTag.float
        case .bool(let v)?: value.storeBytes(of: v ? 1 : 0, as: Int64.self); tag.pointee = RowTag.bool
        case .string(let v)? where wide: value.initializeMemory(as: String.self, to: v); tag.pointee = RowTag.string
        case .uuid(let v)? where wide: value.storeBytes(of: v.uuid, as: uuid_t.self); tag.pointee = RowTag.uuid
        case .binary(let v)? where wide && RowLayout.dataFitsAWideSlot:
            value.initializeMemory(as: Data.self, to: v); tag.pointee = RowTag.binary
        case let other?:
            let box = Unmanaged.passRetained(AttributeBox(other)).toOpaque()
            value.storeBytes(of: UInt(bitPattern: box), as: UInt.self)
            tag.pointee = RowTag.boxed
        }
    }
}

/// What a ``RowStorage`` knows about itself (all trivial: no reference counting to read it).
@usableFromInline
struct RowStorageHeader: Sendable {
    // An address rather than a pointer, so that the header is plainly `Sendable`: the table is
    // immutable and never freed (see `RowLayout.internedShapes`), so any thread may read it.
    @usableFromInline let shapeTable: UInt
    // 16-bit counts, to keep the header at 16 bytes (``RowLayout`` refuses a row of more words).
    @usableFromInline let counts: (attributes: UInt16, slots: UInt16, valueWords: UInt16, words: UInt16)

    init(shapes: UnsafePointer<UInt16>, attributeCount: Int, slotCount: Int, valueWordCount: Int, wordCount: Int) {
        shapeTable = UInt(bitPattern: shapes)
        counts = (UInt16(attributeCount), UInt16(slotCount), UInt16(valueWordCount), UInt16(wordCount))
    }

    /// Each slot's `wordOffset << 1 | isWide`, shared by every row of the layout.
    @inlinable var shapes: UnsafePointer<UInt16> { UnsafePointer(bitPattern: shapeTable).unsafelyUnwrapped }
    @inlinable var attributeCount: Int { Int(counts.attributes) }
    var slotCount: Int { Int(counts.slots) }
    var wordCount: Int { Int(counts.words) }
    /// Byte offset of the tags in the tail words: right after the values.
    @inlinable var tagOffset: Int { Int(counts.valueWords) &* 8 }
}

/// What a row's slot holds now. Constants as inlinable computed properties, so that the typed
/// reads inlined into other modules (``ManagedObject/subscript(attribute:)``) compare with a
/// literal instead of calling a global's accessor.
@usableFromInline
enum RowTag {
    @inlinable static var null: UInt8 { 0 }
    @inlinable static var int64: UInt8 { 1 }
    @inlinable static var double: UInt8 { 2 }
    @inlinable static var string: UInt8 { 3 }
    @inlinable static var date: UInt8 { 4 }
    @inlinable static var int16: UInt8 { 5 }
    @inlinable static var int32: UInt8 { 6 }
    @inlinable static var float: UInt8 { 7 }
    @inlinable static var bool: UInt8 { 8 }
    @inlinable static var uuid: UInt8 { 9 }
    /// A retained ``AttributeBox``: URLs, decimals, and any value whose native form does not fit
    /// its slot.
    @inlinable static var boxed: UInt8 { 10 }
    /// `Data`, in a wide slot (where `Data` is 16 bytes or less, as on 64-bit Linux): no box for
    /// the blob-valued attributes many models have.
    @inlinable static var binary: UInt8 { 11 }
    /// No slot's tag: a typed read with no fast path asks for it.
    @inlinable static var none: UInt8 { 0xFF }
    /// Bit `tag` set for the tags whose value holds a reference: `string`, `boxed`, `binary`.
    @inlinable static var holdingReferences: UInt16 { 1 << 3 | 1 << 10 | 1 << 11 }
}

/// A value kept out of line in a row.
final class AttributeBox: Sendable {
    let value: AttributeValue
    init(_ value: AttributeValue) { self.value = value }
}

/// The shape of one entity's rows: where each slot lives.
final class RowLayout: Sendable {
    let header: RowStorageHeader
    var wordCount: Int { header.wordCount }
    /// Where attribute `index`'s value and tag are: byte offsets in a row's words.
    func offsets(ofAttribute index: Int) -> (value: UInt32, tag: UInt32) {
        (UInt32(header.shapes[index] >> 1) * 8, UInt32(header.tagOffset + index))
    }

    /// How a row read from SQLite fills each slot (attributes, then to-one keys): one
    /// ``DecodeStep`` per slot, interned like the shape tables, so that the read walks a
    /// table of trivial words (no array retained and released per row) and finds each value's
    /// byte offset in its step rather than through the shape and the slot's type.
    private let decodeTable: UInt
    var decodeSteps: UnsafeBufferPointer<DecodeStep> {
        UnsafeBufferPointer(start: UnsafePointer(bitPattern: decodeTable), count: header.slotCount)
    }

    /// One slot's step: what to read (``kind``) and where its value goes (``byteOffset`` in the
    /// row's words).
    struct DecodeStep: Hashable, Sendable {
        let kind: UInt8
        let attributeType: AttributeType
        let byteOffset: UInt32

        /// A number read as an `Int64` (`int64` attributes and to-one keys): tag `RowTag.int64`.
        static var int64: UInt8 { 0 }
        /// `double` attributes: tag `RowTag.double`.
        static var double: UInt8 { 1 }
        /// `date` attributes (seconds since 2001 as a double): tag `RowTag.date`.
        static var date: UInt8 { 2 }
        /// `string` attributes, in their wide slot: tag `RowTag.string`.
        static var string: UInt8 { 3 }
        /// Every other type: read as an ``AttributeValue`` of `attributeType`.
        static var other: UInt8 { 4 }
    }

    /// `Data` is 16 bytes on the 64-bit platforms Strata runs on; elsewhere binary values are boxed.
    static let dataFitsAWideSlot = MemoryLayout<Data>.size <= 16 && MemoryLayout<Data>.alignment <= 8

    /// One shape table per distinct list of shapes, for the life of the process: rows point at
    /// theirs without holding a reference (no retain and release per row), and the tables are
    /// as many as the distinct row shapes of the models a process opens, a few bytes each.
    /// Addresses are kept as `UInt` (the tables are immutable once made).
    private static let internedShapes = Locked<[[UInt16]: UInt]>([:])

    /// The decode tables, as the shape tables: one per distinct list, never freed.
    private static let internedSteps = Locked<[[DecodeStep]: UInt]>([:])

    private static func interned(_ steps: [DecodeStep]) -> UInt {
        internedSteps.withLock { tables in
            if let address = tables[steps] { return address }
            let table = UnsafeMutablePointer<DecodeStep>.allocate(capacity: max(1, steps.count))
            for (index, step) in steps.enumerated() { (table + index).initialize(to: step) }
            let address = UInt(bitPattern: table)
            tables[steps] = address
            return address
        }
    }

    private static func interned(_ shapes: [UInt16]) -> UnsafePointer<UInt16> {
        let address = internedShapes.withLock { tables in
            if let address = tables[shapes] { return address }
            let table = UnsafeMutablePointer<UInt16>.allocate(capacity: max(1, shapes.count))
            table.initialize(repeating: 0, count: max(1, shapes.count))
            for (slot, shape) in shapes.enumerated() { table[slot] = shape }
            let address = UInt(bitPattern: table)
            tables[shapes] = address
            return address
        }
        return UnsafePointer(bitPattern: address).unsafelyUnwrapped
    }

    /// Strings, UUIDs and binary data get wide slots; every other attribute type and each to-one
    /// key a word.
    init(attributeTypes: [AttributeType], toOneCount: Int) {
        var shapes: [UInt16] = []
        var words = 0
        for type in attributeTypes {
            let wide = type == .string || type == .uuid || (type == .binary && RowLayout.dataFitsAWideSlot)
            shapes.append(UInt16(words << 1 | (wide ? 1 : 0)))
            words += wide ? 2 : 1
        }
        for _ in 0..<toOneCount {
            shapes.append(UInt16(words << 1))
            words += 1
        }
        precondition(words < Int(UInt16.max >> 1), "an entity with this many attributes cannot be stored")
        let slotCount = shapes.count
        let wordCount = max(1, words + (slotCount + 7) / 8)
        header = RowStorageHeader(shapes: RowLayout.interned(shapes), attributeCount: attributeTypes.count,
                                  slotCount: slotCount, valueWordCount: words, wordCount: wordCount)
        var steps: [DecodeStep] = []
        for (slot, shape) in shapes.enumerated() {
            let type = slot < attributeTypes.count ? attributeTypes[slot] : .int64
            let kind = switch type {
            case .int64: DecodeStep.int64
            case .double: DecodeStep.double
            case .date: DecodeStep.date
            case .string: DecodeStep.string
            default: DecodeStep.other
            }
            steps.append(DecodeStep(kind: kind, attributeType: type, byteOffset: UInt32(shape >> 1) * 8))
        }
        decodeTable = RowLayout.interned(steps)
    }
}

// MARK: Views

/// A row's attribute values, in model order: a collection over the row's storage.
struct AttributeValues: RandomAccessCollection, MutableCollection, Equatable, CustomStringConvertible {
    var storage: RowStorage

    var startIndex: Int { 0 }
    var endIndex: Int { storage.attributeCount }

    subscript(position: Int) -> AttributeValue? {
        get {
            precondition(position >= 0 && position < endIndex, "attribute index out of range")
            return storage.value(position)
        }
        set {
            precondition(position >= 0 && position < endIndex, "attribute index out of range")
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            storage.setValue(newValue, position)
        }
    }

    static func == (lhs: AttributeValues, rhs: AttributeValues) -> Bool {
        lhs.storage === rhs.storage || lhs.elementsEqual(rhs)
    }

    var description: String { Array(self).description }
}

/// A row's to-one destination keys, in model order.
struct ToOneKeys: RandomAccessCollection, MutableCollection, Equatable, CustomStringConvertible {
    var storage: RowStorage

    var startIndex: Int { 0 }
    var endIndex: Int { storage.slotCount - storage.attributeCount }

    subscript(position: Int) -> Int64? {
        get {
            precondition(position >= 0 && position < endIndex, "to-one index out of range")
            return storage.key(storage.attributeCount + position)
        }
        set {
            precondition(position >= 0 && position < endIndex, "to-one index out of range")
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            storage.setKey(newValue, storage.attributeCount + position)
        }
    }

    static func == (lhs: ToOneKeys, rhs: ToOneKeys) -> Bool {
        lhs.storage === rhs.storage || lhs.elementsEqual(rhs)
    }

    var description: String { Array(self).description }
}
