/// An entity's attribute names → attribute indexes, for the typed reads: `object[attribute:]`
/// and the `@Entity` properties (which read through it) look a key up on every call.
///
/// A table of the names' *representations* (``SlotTable/words(of:)``): a name of up to 15 UTF-8
/// bytes is a small string, its bytes in `String`'s two words, so a key whose two words equal a
/// name's is that name. The table is placed by a multiplier chosen when the entity is described
/// so that no two names share a first position (up to about 300 attributes; past that a few
/// probe): a hit is one hash of two words, one comparison of two words and one load. A key that misses (a name of over 15 bytes, a
/// relationship's name, no such key) answers -1 and the caller takes ``SlotTable``,
/// which decides by the key's bytes: the answer never depends on the representation, only the
/// speed does.
///
/// The entries live in memory this object allocates once: a read indexes a pointer (no array
/// bounds check, no copy of a struct of arrays onto the stack, which the `SlotTable` path paid
/// on every read; callgrind).
// Every stored property is set in `init` and never changed, and the memory behind the pointer
// is written only in `init` and freed only in `deinit`: shared reads of memory nobody writes.
// @unchecked Sendable because of that.
@usableFromInline final class AttributeKeys: @unchecked Sendable {
    @usableFromInline
    struct Entry {
        @usableFromInline var words: (UInt64, UInt64)
        /// The attribute's index; -1 marks an empty entry.
        @usableFromInline var index: Int
        /// Where the attribute's value and its tag are in a row of the entity (byte offsets in
        /// the row's words, ``RowStorage``): a typed read goes straight to them, without the
        /// row's shape table and tag offset (about 5 instructions a read, callgrind).
        @usableFromInline var valueOffset: UInt32
        @usableFromInline var tagOffset: UInt32
        @usableFromInline init(words: (UInt64, UInt64), index: Int, valueOffset: UInt32 = 0, tagOffset: UInt32 = 0) {
            self.words = words
            self.index = index
            self.valueOffset = valueOffset
            self.tagOffset = tagOffset
        }
    }

    @usableFromInline let entries: UnsafeMutablePointer<Entry>
    @usableFromInline let capacity: Int
    @usableFromInline let multiplier: UInt64
    @usableFromInline let shift: UInt64

    /// `layout`: the rows' layout, whose offsets the entries carry (none: every offset 0, for
    /// tests of the lookup alone).
    init(_ names: [String], layout: RowLayout? = nil) {
        let small = SlotTable.wordsAreRepresentation ? names.indices.filter { names[$0].utf8.count <= 15 } : []
        // The first multiplier of a fixed sequence that places every small name alone, at the
        // smallest table (at most a quarter full) where one of 64 does; a table grows up to 64
        // entries a name for that (enough up to about 300 attributes: `AttributeKeysTests`),
        // then keeps the last multiplier tried, with probing (still correct, one more
        // comparison for some names: 9 of 1,000 in the test).
        var capacity = 16
        while capacity < names.count * 4 { capacity *= 2 }
        var shift = UInt64(64 - capacity.trailingZeroBitCount)
        var multiplier: UInt64 = 0
        search: while true {
            for attempt in 0..<64 {
                multiplier = 0xBF58_476D_1CE4_E5B9 &+ UInt64(attempt) &* 0x9E37_79B9_7F4A_7C16
                let positions = small.map { AttributeKeys.position(SlotTable.words(of: names[$0]), multiplier, shift) }
                if Set(positions).count == positions.count { break search }
            }
            if capacity >= names.count * 64 { break }
            capacity *= 2
            shift = UInt64(64 - capacity.trailingZeroBitCount)
        }
        entries = .allocate(capacity: capacity)
        entries.initialize(repeating: Entry(words: (0, 0), index: -1), count: capacity)
        for index in small {
            let words = SlotTable.words(of: names[index])
            var position = AttributeKeys.position(words, multiplier, shift)
            while entries[position].index >= 0 { position = (position + 1) & (capacity - 1) }
            let offsets = layout?.offsets(ofAttribute: index) ?? (value: 0, tag: 0)
            entries[position] = Entry(words: words, index: index, valueOffset: offsets.value, tagOffset: offsets.tag)
        }
        self.capacity = capacity
        self.multiplier = multiplier
        self.shift = shift
    }

    deinit {
        entries.deallocate()
    }

    @inlinable @inline(__always)
    static func position(_ words: (UInt64, UInt64), _ multiplier: UInt64, _ shift: UInt64) -> Int {
        Int(truncatingIfNeeded: ((words.0 ^ (words.1 &* 0x9E37_79B9_7F4A_7C15)) &* multiplier) &>> shift)
    }

    /// The index of the attribute whose name has `key`'s very words, or -1 (see the type).
    @inlinable @inline(__always)
    func index(_ key: String) -> Int { entry(key)?.pointee.index ?? -1 }

    /// The entry of the attribute whose name has `key`'s very words, or nil (see the type).
    /// Its address, not a copy: a read loads only the fields it uses.
    @inlinable @inline(__always)
    func entry(_ key: String) -> UnsafePointer<Entry>? {
        guard SlotTable.wordsAreRepresentation else { return nil }
        let words = SlotTable.words(of: key)
        var position = AttributeKeys.position(words, multiplier, shift)
        while true {
            let entry = entries + position
            if entry.pointee.words == words { return UnsafePointer(entry) }
            if entry.pointee.index < 0 { return nil }
            position = (position &+ 1) & (capacity &- 1)
        }
    }

    /// How many entries a lookup of `key` reads (tests: a small name is found at the first).
    func probes(_ key: String) -> Int {
        guard SlotTable.wordsAreRepresentation else { return 0 }
        let words = SlotTable.words(of: key)
        var position = AttributeKeys.position(words, multiplier, shift)
        var count = 1
        while entries[position].words != words && entries[position].index >= 0 {
            position = (position &+ 1) & (capacity &- 1)
            count += 1
        }
        return count
    }
}
