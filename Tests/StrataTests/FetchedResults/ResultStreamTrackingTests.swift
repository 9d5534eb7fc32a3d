import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A result stream's tracking lives as long as its consumer: once the stream is released (its
/// consumer's task cancelled, or the loop left), the controller behind it stops listening to the
/// context. Consumed in the test's own task: no other task has to find a free thread.
@Suite struct ResultStreamTrackingTests {
    @Test func releasingTheStreamStopsTracking() async throws {
        let container = try PersistentContainer(inMemoryWith: TestModels.bookshelf())
        let main = container.mainContext
        try main.performAndWait {
            let book = try main.insert("Book")
            try book.setValue("Dune", forKey: "title")
            try main.saveToStore()
        }
        #expect(!main.performAndWait { main.isObserved }, "nothing listens before the stream")
        do {
            var iterator = main.results(for: FetchRequest(entityName: "Book", sortKeys: [.ascending("title")])).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.count == 1)
            #expect(main.performAndWait { main.isObserved }, "the stream's controller tracks")
            let background = container.newBackgroundContext()
            try background.performAndWait {
                let book = try background.insert("Book")
                try book.setValue("Emma", forKey: "title")
                try background.save()
            }
            let second = try #require(try await iterator.next())
            #expect(second.count == 2)
            #expect(second.changes?.objects.count == 1)
        }
        // The stream and its iterator are gone: the controller stops on the context's queue.
        let deadline = ContinuousClock.now + .seconds(30)
        while main.performAndWait({ main.isObserved }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(!main.performAndWait { main.isObserved }, "tracking stopped with the stream")
    }
}
