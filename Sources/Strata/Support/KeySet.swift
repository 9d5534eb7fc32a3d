/// A set of primary keys: open addressing with linear probing over a power-of-two table, at
/// most half full, hashed by a multiplication (Fibonacci hashing) instead of `Hasher`'s SipHash.
///
/// A commit's dangling-key check asks "is this key there?" once per to-one of every row it
/// writes (120,000 times for 30,000 flights), and a batch insert gathers each to-one's distinct
/// destinations; as `Set<ObjectID>` and `Set<Int64>` each ask hashed the key with SipHash
/// (about 160 instructions). Only inserts and lookups: nothing is ever removed. `KeySetTests`
/// checks it against `Set<Int64>`.
struct KeySet {
    /// Marks an empty slot; the key with this value is held by `holdsMarker` instead.
    private static let marker = Int64.min
    private var slots: [Int64]
    private var shift: UInt64
    private var holdsMarker = false
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        var size = 16, bits: UInt64 = 4
        while size < minimumCapacity * 2 { size <<= 1; bits += 1 }
        slots = Array(repeating: Self.marker, count: size)
        shift = 64 - bits
    }

    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    func contains(_ key: Int64) -> Bool {
        if key == Self.marker { return holdsMarker }
        let mask = slots.count - 1
        var index = home(key)
        while true {
            let slot = slots[index]
            if slot == key { return true }
            if slot == Self.marker { return false }
            index = (index + 1) & mask
        }
    }

    mutating func insert(_ key: Int64) {
        if key == Self.marker {
            if !holdsMarker { holdsMarker = true; count += 1 }
            return
        }
        if (count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var index = home(key)
        while true {
            let slot = slots[index]
            if slot == key { return }
            if slot == Self.marker {
                slots[index] = key
                count += 1
                return
            }
            index = (index + 1) & mask
        }
    }

    /// The keys, in no particular order.
    var elements: [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(count)
        if holdsMarker { result.append(Self.marker) }
        for key in slots where key != Self.marker { result.append(key) }
        return result
    }

    var isEmpty: Bool { count == 0 }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: Self.marker, count: old.count * 2)
        shift -= 1
        let mask = slots.count - 1
        for key in old where key != Self.marker {
            var index = home(key)
            while slots[index] != Self.marker { index = (index + 1) & mask }
            slots[index] = key
        }
    }
}
