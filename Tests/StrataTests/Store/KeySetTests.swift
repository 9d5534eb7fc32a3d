@testable import Strata
import StrataTestSupport
import Testing

/// `KeySet`, the commit's dangling-key check's set of keys, against `Set<Int64>`: random inserts
/// and lookups over dense, strided, negative and extreme keys (`Int64.min` is its empty-slot
/// marker, held apart), through many growths.
@Suite struct KeySetTests {
    @Test(arguments: [0, 1, 2, 3])
    func behavesAsTheSet(shape: Int) {
        var generator = SplitMix64(seed: UInt64(shape) &* 0x9E37_79B9_7F4A_7C15 &+ 17)
        var keys = KeySet(minimumCapacity: shape == 0 ? 0 : 100)
        var reference = Set<Int64>()
        var reached = (inserts: 0, repeats: 0, hits: 0, misses: 0, extremes: 0)
        func key() -> Int64 {
            let r = generator.next()
            switch shape {
            case 0: return Int64(r % 3_000)                                   // dense, positive
            case 1: return Int64(r % 2_000) * 1_024                            // one home bucket apart
            case 2: return Int64(bitPattern: r % 4_000) - 2_000                // around zero
            default:                                                           // the extremes too
                switch r % 6 {
                case 0: reached.extremes += 1; return .min
                case 1: reached.extremes += 1; return .max
                case 2: reached.extremes += 1; return .min + 1
                default: return Int64(bitPattern: generator.next())
                }
            }
        }
        for _ in 0..<20_000 {
            let k = key()
            if generator.next() % 2 == 0 {
                if reference.insert(k).inserted { reached.inserts += 1 } else { reached.repeats += 1 }
                keys.insert(k)
            } else {
                let expected = reference.contains(k)
                if expected { reached.hits += 1 } else { reached.misses += 1 }
                #expect(keys.contains(k) == expected, "key \(k)")
            }
            #expect(keys.count == reference.count)
        }
        for k in reference { #expect(keys.contains(k)) }
        print("key-set shape=\(shape): inserts=\(reached.inserts) repeats=\(reached.repeats) hits=\(reached.hits) misses=\(reached.misses) extremes=\(reached.extremes)")
        #expect(reached.inserts > 100 && reached.hits > 100 && reached.misses > 100)
        if shape == 3 { #expect(reached.extremes > 100) }
    }
}
