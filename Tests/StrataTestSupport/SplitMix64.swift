// Shared by the seeded property and fuzz tests.

/// SplitMix64: small, fast, and the same sequence everywhere for a seed. (The helpers below don't
/// use the standard library's `random(in:using:)`, whose algorithm may change between releases.)
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// An independent stream for case `index` of a run seeded with `seed`: a case reproduces from
    /// (seed, index) alone.
    public init(seed: UInt64, stream index: Int) {
        var mixer = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: index) &* 0xD1B5_4A32_D192_ED03))
        state = mixer.next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `range` (modulo bias is irrelevant here).
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }

    public mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    /// Picks by weight: `[(3, a), (1, b)]` returns `a` three times as often as `b`.
    public mutating func weighted<T>(_ items: [(Int, T)]) -> T {
        var roll = int(0...(items.reduce(0) { $0 + $1.0 } - 1))
        for (weight, item) in items {
            if roll < weight { return item }
            roll -= weight
        }
        return items[items.count - 1].1
    }

    /// `count` distinct elements of `items`, in random order.
    public mutating func sample<T>(_ items: [T], _ count: Int) -> [T] {
        var pool = items
        var result: [T] = []
        while result.count < count, !pool.isEmpty { result.append(pool.remove(at: int(0...(pool.count - 1)))) }
        return result
    }
}
