import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Issue 47: the file change watch (inotify) ended its thread silently when `poll` failed, and
/// followers then heard of other connections' commits only by their slow poll (1 s), without
/// anyone knowing. A dead watch is now logged, remembered, counted by each follower
/// (`ExternalChangeStatistics.changeWatchFailures`), and the followers poll at their full rate.
@Suite struct ChangeWatchTests {
    @Test func aDeadWatchIsCountedAndFollowingGoesOnByPolling() throws {
        let directory = TemporaryDirectory("strata-change-watch")
        let url = directory.file("store.sqlite")
        let model = FetchedResultsRegressionTests.model()
        let coordinator = try StoreCoordinator(model: model, url: url, options: .notFollowing)
        defer { coordinator.close() }
        // A watch of the test's own (the process's is shared by every other test running).
        let watch = try #require(ChangeWatch())
        let follower = ExternalChangeFollower(coordinator)
        coordinator.external.follower.withLock { $0 = follower }
        follower.start(path: url.path, pollInterval: .milliseconds(20), watch: watch)

        let writer = try StoreCoordinator(model: model, url: url, options: .notFollowing)
        defer { writer.close() }
        func commit(_ name: String) throws -> Int64 {
            let context = writer.newContext()
            try context.performAndWait {
                let category = try context.insert("Category")
                try category.setValue(name, forKey: "name")
                try context.save()
            }
            return try writer.currentHistoryToken().generation
        }
        func followed(_ generation: Int64) -> Bool { coordinator.waitUntilFollowed(generation) }

        #expect(followed(try commit("a")))
        #expect(coordinator.externalChangeStatistics.changeWatchFailures == 0)

        watch.die("poll: Input/output error")
        #expect(watch.failure == "poll: Input/output error")
        #expect(coordinator.externalChangeStatistics.changeWatchFailures == 1)
        // A dead watch takes no new registration: a follower started now polls from the start.
        #expect(watch.watch(file: url.path, notice: {}, died: {}).map { _ in true } == nil)

        // Commits still arrive, by the poll.
        #expect(followed(try commit("b")))
        #expect(followed(try commit("c")))
        // A watch dies once: nothing more is counted.
        watch.die("read: Bad file descriptor")
        #expect(watch.failure == "poll: Input/output error")
        #expect(coordinator.externalChangeStatistics.changeWatchFailures == 1)
    }
}
