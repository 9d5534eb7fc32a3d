import Foundation
import Strata
import StrataTestSupport
import Testing

/// Real processes that end normally without `close()` (`StrataCrashHarness --mode
/// exit-without-close`): the cache write their last fetch scheduled reaches the disk through the
/// coordinator's exit hook, and a normal session writes nothing on stderr when the app never
/// configured swift-log. Not gated like ``CrashSuite``: each test runs one or two short processes.
@Suite(.serialized) struct CacheExitFlushTests {
    /// Runs the harness in `exit-without-close` mode on `store`.
    static func session(_ store: URL, commits: Int, seed: UInt64 = 1) throws -> HarnessRun {
        let configuration = CrashConfiguration.all[0]
        let arguments = HarnessProcess.arguments(store: store, configuration: configuration, mode: "exit-without-close",
                                                 seed: seed, commits: commits)
        return try HarnessProcess.Launched(arguments: arguments, killPoint: nil).wait()
    }

    /// What a controller with the harness's cache name finds in `store`, opened in this process;
    /// also the snapshot a controller without the cache shows.
    static func reopen(_ store: URL) throws -> (status: SectionCacheStatus, cached: FetchedSnapshot, fresh: FetchedSnapshot) {
        let container = try PersistentContainer(model: TestModels.goods(), url: store, options: CrashConfiguration.all[0].storeOptions)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
        let cached = FetchedResultsController(fetchRequest: request, managedObjectContext: main, sectionNameKeyPath: "category.name",
                                              cacheName: "goods")
        let fresh = FetchedResultsController(fetchRequest: request, managedObjectContext: main, sectionNameKeyPath: "category.name")
        return try main.performAndWait {
            try cached.performFetch()
            try fresh.performFetch()
            return (cached.cacheStatus, cached.snapshot, fresh.snapshot)
        }
    }

    static func cacheFile(of store: URL) -> URL {
        URL(fileURLWithPath: store.path + ".caches/goods.stratacache")
    }

    /// performFetch, then return from main: the scheduled write is flushed at exit. (Before the
    /// exit hook, no launch ever got a cache file.)
    @Test func aCacheWriteScheduledBeforeANormalExitReachesTheDisk() throws {
        let directory = TemporaryDirectory("strata-exit-flush")
        let store = directory.file("goods.sqlite")
        let first = try Self.session(store, commits: 0)
        #expect(first.ending == .exited(0), "\(first.summary)")
        #expect(first.lines == ["fetch 1 rebuilt (missing) rows=5"], "\(first.stdout)")
        #expect(FileManager.default.fileExists(atPath: Self.cacheFile(of: store).path), "no cache file after a normal exit")

        let reopened = try Self.reopen(store)
        #expect(reopened.status == .served)
        #expect(reopened.cached == reopened.fresh)

        // The next launch is served from it.
        let second = try Self.session(store, commits: 0)
        #expect(second.ending == .exited(0), "\(second.summary)")
        #expect(second.lines == ["fetch 1 served rows=5"], "\(second.stdout)")
    }

    /// After a commit the last fetch's write and the commit's refresh are both pending at exit:
    /// the file on disk describes the store as committed.
    @Test func theCacheOnDiskDescribesTheLastCommitAfterANormalExit() throws {
        let directory = TemporaryDirectory("strata-exit-flush")
        let store = directory.file("goods.sqlite")
        let run = try Self.session(store, commits: 2)
        #expect(run.ending == .exited(0), "\(run.summary)")
        let lines = run.lines
        #expect(lines.count == 5, "\(run.stdout)")
        #expect(lines.first == "fetch 1 rebuilt (missing) rows=5")
        #expect(lines.dropFirst().first == "fetch 2 served rows=5")
        #expect(lines.filter { $0.hasPrefix("commit ") }.count == 2)
        // A refresh after the commits may already have written the file the last fetch reads.
        #expect(["fetch 3 rebuilt (entity-changed) rows=7", "fetch 3 served rows=7"].contains(lines.last ?? ""), "\(run.stdout)")

        let reopened = try Self.reopen(store)
        #expect(reopened.status == .served)
        #expect(reopened.cached == reopened.fresh)
        #expect(reopened.cached.numberOfObjects == 7)
    }

    /// An app that never bootstraps swift-log gets its default handler (info and above, on
    /// stderr): a normal session — create the store, save, fetch through a cached controller
    /// twice, commit, fetch again, and a second launch — writes nothing there. A corrupt cache
    /// file, an anomaly, does show.
    @Test func aNormalSessionWritesNothingOnStderr() throws {
        let directory = TemporaryDirectory("strata-exit-flush")
        let store = directory.file("goods.sqlite")
        for launch in 1...2 {
            let run = try Self.session(store, commits: 1, seed: UInt64(launch))
            #expect(run.ending == .exited(0), "launch \(launch): \(run.summary)")
            #expect(run.stderr.isEmpty, "launch \(launch) wrote on stderr:\n\(run.stderr)")
            #expect(run.lines.count == 4, "launch \(launch): \(run.stdout)")
        }
        #expect(try Self.reopen(store).status == .served)

        try Data("not a section cache, but long enough to have a header".utf8).write(to: Self.cacheFile(of: store))
        let corrupt = try Self.session(store, commits: 0)
        #expect(corrupt.ending == .exited(0), "\(corrupt.summary)")
        #expect(corrupt.lines == ["fetch 1 rebuilt (bad-magic) rows=7"], "\(corrupt.stdout)")
        #expect(corrupt.stderr.contains("warning") && corrupt.stderr.contains("section cache rejected and rebuilt"),
                "a corrupt cache is logged as a warning: \(corrupt.stderr)")
        #expect(try Self.reopen(store).status == .served)
    }
}
