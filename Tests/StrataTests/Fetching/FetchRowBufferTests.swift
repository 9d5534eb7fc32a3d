import Foundation
@testable import Strata
import Testing

/// The buffer a fetch reads its rows into (``FetchRowBuffer``): rows come out in the order they
/// went in, across many growths, and rows never taken (a fetch that throws while stepping) are
/// released with the buffer, not leaked.
@Suite struct FetchRowBufferTests {
    @Test(arguments: [0, 1, 64, 65, 5_000])
    func rowsComeOutInOrderAndTheRestAreReleased(count: Int) {
        weak var untaken: RowStorage?
        weak var taken: RowStorage?
        do {
            var buffer = FetchRowBuffer()
            for key in 0..<count {
                let row = RowSnapshot(attributes: [.int64(Int64(key)), .string("row \(key)")], toOnes: [])
                if key == count - 1 { untaken = row.storage }
                if key == 0 { taken = row.storage }
                buffer.append(Int64(key), row)
            }
            #expect(buffer.count == count)
            // The first half (at least the first row) comes out, in order, with its values.
            for key in 0..<((count + 1) / 2) where count > 1 {
                let (pk, row) = buffer.takeNext()
                #expect(pk == Int64(key))
                #expect(row.attribute(0) == .int64(Int64(key)) && row.attribute(1) == .string("row \(key)"))
            }
            if count > 1 { #expect(untaken != nil, "an untaken row is alive while the buffer is") }
        }
        // The buffer is gone: taken rows were released by their takers, the rest by the buffer.
        #expect(taken == nil && untaken == nil)
    }
}
