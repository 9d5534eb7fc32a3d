import Foundation
import Synchronization
import Testing
import StrataTestSupport
@testable import Strata

/// Parsed conditions are freed when their last reference goes, after every use the library makes
/// of them: a leak per predicate would add up in a long-running process.
///
/// The counter: constants made of `Data` whose bytes are freed by a custom deallocator, which
/// counts. A `Data` constant sits at the bottom of a condition's tree (condition → comparison →
/// operand → value), so its bytes are freed only once every node above it is; a cycle, or a cache
/// that keeps conditions, anywhere on the way keeps the count above zero.
@Suite struct PredicateLifetimeTests {
    /// How many tracked buffers are alive.
    final class LiveBuffers: Sendable {
        private let live = Atomic<Int>(0)
        var count: Int { live.load(ordering: .sequentiallyConsistent) }

        /// 16 bytes (`tag`, then zeros) that decrement the count when freed.
        func data(_ tag: UInt8) -> Data {
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
            bytes.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
            bytes.storeBytes(of: tag, as: UInt8.self)
            live.add(1, ordering: .sequentiallyConsistent)
            return Data(bytesNoCopy: bytes, count: 16, deallocator: .custom { [self] pointer, _ in
                pointer.deallocate()
                live.subtract(1, ordering: .sequentiallyConsistent)
            })
        }
    }

    static let format = "blob == %@ OR (i64 > %d AND NOT blob IN %@) OR text MATCHES %@ OR blob == $B OR text BEGINSWITH[cd] 'é'"

    /// Parses `format` with three tracked buffers and substitutes a fourth for `$B`.
    static func condition(_ buffers: LiveBuffers, _ round: Int) throws -> Condition {
        let parsed = try Condition(format, buffers.data(UInt8(truncatingIfNeeded: round)), round, [buffers.data(1), buffers.data(2)], "t.*")
        return try parsed.substituting(["B": buffers.data(3)])
    }

    /// The counter sees what it should: four buffers per condition while it is alive, none once
    /// it is released. (The check that the test itself could fail.)
    @Test func bufferCounterSeesLiveConditions() throws {
        let buffers = LiveBuffers()
        var kept: [Condition] = []
        for round in 0..<10 { kept.append(try Self.condition(buffers, round)) }
        #expect(buffers.count == 40)
        kept.removeAll()
        #expect(buffers.count == 0)
    }

    /// 1,000 predicates, each fetched as SQL (a fetch and a count), evaluated in memory on
    /// objects and on stored rows, used by a results controller, printed, compared and hashed;
    /// then the 5,000-term OR chain of PredicateFuzzTests, fetched. Nothing outlives its use but
    /// the arguments a cached statement was last bound with (it keeps them, for its error
    /// messages, until it is bound again or the connection closes): at most one predicate's
    /// worth, whatever the number parsed, and none once the store is closed.
    @Test func parsedConditionsAreFreed() throws {
        let buffers = LiveBuffers()
        let store = try TestStore()
        let context = store.context
        try context.performAndWait {
            for i in 0..<6 {
                let sample = try context.insert("Sample")
                try sample.setValue(Int64(i), forKey: "i64")
                try sample.setValue("t\(i)", forKey: "text")
                try sample.setValue(Data([UInt8(i)] + Array(repeating: 0, count: 15)), forKey: "blob")
            }
            try context.save()
        }
        var mostAlive = 0
        for round in 0..<1_000 {
            do {
                let condition = try Self.condition(buffers, round)
                let request = FetchRequest(entityName: "Sample", predicate: condition, sortKeys: [.ascending("i64")])
                try context.performAndWait {
                    let objects = try context.fetch(request)
                    #expect(objects.count == 6)
                    #expect(try context.count(for: request) == objects.count)
                    #expect(try context.filter(objects, condition).count == objects.count)
                    #expect(try context.evaluate(condition, on: objects[0]))
                    let stored = try store.coordinator.evaluate(condition, onStoredObject: objects[0].objectID)
                    #expect(stored == true)
                    let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
                    try controller.performFetch()
                    let controllerObjects = try controller.fetchedObjects
                    #expect(controllerObjects?.count == objects.count)
                }
                #expect(try Condition(condition.description) == condition)
                var hasher = Hasher()
                condition.hash(into: &hasher)
                _ = hasher.finalize()
            }
            mostAlive = max(mostAlive, buffers.count)
        }
        #expect(mostAlive <= 4, "\(mostAlive) buffers alive between rounds: conditions are kept")

        do {
            let pinned = buffers.count
            let terms = (0..<5_000).map { _ in buffers.data(9) }
            let chain = try Condition(format: Array(repeating: "blob == %@", count: terms.count).joined(separator: " OR "),
                                      argumentArray: terms)
            #expect(buffers.count == 5_000 + pinned)
            let request = FetchRequest(entityName: "Sample", predicate: chain)
            #expect(try context.performAndWait { try context.count(for: request) } == 0)
        }
        store.coordinator.close()
        #expect(buffers.count == 0, "\(buffers.count) buffers still alive after the store closed: a condition was kept")
    }
}
