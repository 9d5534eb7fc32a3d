import Foundation
@_spi(Testing) import Strata
import StrataTestSupport
import Testing

/// The crash suite: real `StrataCrashHarness` child processes killed with SIGKILL, at every
/// named kill point and at random times, in three store configurations; after every kill the
/// store is checked in this process (see ``StoreVerifier``).
///
/// Gated: `STRATA_CRASH_SUITE=1 swift test --filter StrataCrashTests` (`.ci/run` does). Knobs:
/// `STRATA_CRASH_ITERATIONS` (random kills, default 2000), `STRATA_CRASH_SEED`,
/// `STRATA_CRASH_MAX_DELAY_MS` (default 100), `STRATA_CRASH_HARNESS` (the binary's path).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["STRATA_CRASH_SUITE"] == "1"), .serialized)
struct CrashSuite {
    static let environment = ProcessInfo.processInfo.environment
    static let iterations = environment["STRATA_CRASH_ITERATIONS"].flatMap { Int($0) } ?? 2000
    static let baseSeed = environment["STRATA_CRASH_SEED"].flatMap { UInt64($0) } ?? 0x5354_5241_5441
    static let maxDelayMilliseconds = environment["STRATA_CRASH_MAX_DELAY_MS"].flatMap { Int($0) } ?? 100
    /// Commits a random-kill run is asked for: more than fit before the longest delay, so that
    /// kills land inside the workload.
    static let commitsPerRun = 40
    /// Stores start afresh past this many goods.
    static let maxGoods = 3000

    init() {
        _ = QuietLogs.installed
    }

    @Test func killPointsAndRandomKills() throws {
        let catalogue = KillPoint.catalogue
        let directory = TemporaryDirectory("strata-crash")
        let stores = CrashConfiguration.all.map { CrashStore($0, in: directory.url) }
        let tally = CrashTally()
        let clock = ContinuousClock()
        let started = clock.now
        print("crash detail: seed \(Self.baseSeed), \(Self.iterations) iterations, delays 0–\(Self.maxDelayMilliseconds) ms, harness \(HarnessProcess.executable?.path ?? "not found")")

        // 1. Every kill point, in every configuration.
        var seed: UInt64 = 1_000_000
        for store in stores {
            for name in catalogue {
                for (point, commits) in Self.armings(of: name) {
                    seed += 1
                    let label = "kill point \(point) (\(store.configuration), seed \(seed))"
                    let run = try Self.arrangeAndRun(point: point, base: name, commits: commits, store: store, seed: seed, tally: tally)
                    tally.namedRuns += 1
                    tally.acks += run.acks.count
                    store.acked.formUnion(run.acks.map(\.marker))
                    switch run.ending {
                    case .killed where run.stderr.contains("kill point \(name) reached"):
                        tally.hits.insert(name)
                    case .exited(0):
                        break                             // not reached in this arrangement
                    default:
                        tally.violations += 1
                        tally.record("harness ended badly", "violation: \(label): the harness \(run.summary)")
                    }
                    tally.check(store, label: label, corruption: nil)
                }
            }
        }
        let namedDone = clock.now

        // 2. Random-time kills, round-robin over the configurations; every tenth also kills the
        //    recovery; every seventh breaks the cache file before the check.
        var landedDelays: [Int] = []
        for iteration in 0..<Self.iterations {
            let store = stores[iteration % stores.count]
            if store.goods > Self.maxGoods { store.reset() }
            var rng = SplitMix64(seed: Self.baseSeed, stream: iteration)
            let runSeed = UInt64(iteration + 1)
            let delay = rng.int(0...Self.maxDelayMilliseconds)
            var label = "iteration \(iteration) (\(store.configuration), seed \(Self.baseSeed), harness seed \(runSeed), kill after \(delay) ms"
            let run = try HarnessProcess.runAndKill(after: .milliseconds(delay), store: store.url, configuration: store.configuration,
                                                    seed: runSeed, commits: Self.commitsPerRun)
            tally.countRandomKill(run, recovery: false, label: label + ")")
            if run.ending == .killed { landedDelays.append(delay) }
            store.acked.formUnion(run.acks.map(\.marker))
            if iteration % 10 == 9 {
                let recoveryDelay = rng.int(0...Self.maxDelayMilliseconds / 2)
                label += ", recovery killed after \(recoveryDelay) ms"
                let recovery = try HarnessProcess.runAndKill(after: .milliseconds(recoveryDelay), store: store.url,
                                                             configuration: store.configuration, mode: "recover",
                                                             seed: runSeed, commits: 0)
                tally.countRandomKill(recovery, recovery: true, label: label + ")")
            }
            var corruption: String?
            if iteration % 7 == 6 {
                corruption = try StoreVerifier.corruptCache(of: store.url, using: &rng)
                if let corruption { label += ", cache \(corruption)" }
            }
            tally.check(store, label: label + ")", corruption: corruption)
        }
        let finished = clock.now

        let loop = finished - namedDone
        let perIteration = Self.iterations > 0 ? loop / Self.iterations : .zero
        print("crash detail: kill-point pass \(tally.namedRuns) armed runs in \(namedDone - started); random loop \(Self.iterations) iterations in \(loop) (\(perIteration) each); total \(finished - started)")
        print("crash detail: random kills \(tally.randomKills): \(tally.landed) landed mid-run (\(tally.landedAfterOpen) after the harness had opened the store; recovery \(tally.recoveryLanded)/\(tally.recoveryKills)); \(tally.acks) commits acknowledged; \(tally.verifications) checks; store resets \(stores.map { "\($0.configuration)=\($0.resets)" }.joined(separator: " "))")
        if !tally.kinds.isEmpty {
            print("crash detail: problems by kind: \(tally.kinds.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
        }
        for record in tally.records.prefix(20) { print("crash record: \(record)") }
        for evidence in tally.evidence { print("crash evidence: \(evidence)") }
        let missed = catalogue.filter { !tally.hits.contains($0) }
        if !missed.isEmpty { print("crash detail: kill points never hit: \(missed.joined(separator: ", "))") }
        print(tally.summary(catalogue: catalogue.count))

        #expect(tally.hits.count == catalogue.count, "kill points never hit: \(missed)")
        #expect(tally.staleServed == 0)
        #expect(tally.lostCommits == 0)
        #expect(tally.violations == 0)
        #expect(tally.corruptRejected == tally.corruptMade)
        for record in tally.records.prefix(20) { Issue.record("\(record)") }
    }

    /// How a point is armed: its first hit, and for the contexts' points also its third (by then
    /// commits were acknowledged, which must survive).
    static func armings(of name: String) -> [(point: String, commits: Int)] {
        if name.hasPrefix("update.") || name.hasPrefix("main.") || name.hasPrefix("writer.") {
            return [(name, 3), (name + ":3", 5)]
        }
        return [(name, 3)]
    }

    /// Puts the store in the state that reaches `base`, then runs the harness armed with `point`.
    static func arrangeAndRun(point: String, base: String, commits: Int, store: CrashStore, seed: UInt64,
                              tally: CrashTally) throws -> HarnessRun {
        let caches = store.url.path + ".caches"
        var commits = commits
        switch base {
        case "cache.load.validated":
            // A valid cache first (an unarmed open that writes it), then an open that serves it.
            let warm = try HarnessProcess.run(store: store.url, configuration: store.configuration, seed: seed, commits: 0)
            if warm.ending != .exited(0) {
                tally.violations += 1
                tally.record("harness ended badly", "violation: warming the cache for \(point) (\(store.configuration)): the harness \(warm.summary)")
            }
            commits = 0
        case let name where name.hasPrefix("cache.cleanup."):
            // A stray temporary file, as a crash during a cache write leaves.
            try FileManager.default.createDirectory(atPath: caches, withIntermediateDirectories: true)
            try Data("torn".utf8).write(to: URL(fileURLWithPath: caches + "/.tmp-\(String(seed, radix: 16))-goods.stratacache"))
        case let name where name.hasPrefix("cache."):
            // No valid cache: the open rebuilds it and writes it.
            try? FileManager.default.removeItem(at: StoreVerifier.cacheFile(of: store.url))
        default:
            break
        }
        return try HarnessProcess.run(store: store.url, configuration: store.configuration, seed: seed, commits: commits,
                                      killPoint: point)
    }

    /// A crash inside a commit, after the database file changed and before COMMIT (the
    /// harness's `torn-commit` mode: deterministic, where random kills land there rarely): in
    /// every configuration the store reopens through a coordinator, is intact, holds every
    /// acknowledged commit and none of the torn one, and the cached controller equals a fresh fetch.
    @Test func reopenAfterACrashInsideACommit() throws {
        for configuration in CrashConfiguration.all {
            let directory = TemporaryDirectory("strata-crash-torn")
            let store = directory.file("goods.sqlite")
            let warm = try HarnessProcess.run(store: store, configuration: configuration, seed: 1, commits: 3)
            #expect(warm.ending == .exited(0), "\(configuration): \(warm.summary)")
            let torn = try HarnessProcess.run(store: store, configuration: configuration, mode: "torn-commit", seed: 2, commits: 0)
            #expect(torn.ending == .killed, "\(configuration): \(torn.summary)")
            #expect(torn.lines.first?.hasPrefix("torn ") == true, "\(configuration): \(torn.lines)")
            if configuration.journal == .delete {
                #expect(FileManager.default.fileExists(atPath: store.path + "-journal"), "\(configuration): no hot journal was left")
            }
            let result = try StoreVerifier.verify(store: store, configuration: configuration, acked: Set(warm.acks.map(\.marker)))
            #expect(result.reopenFailure == nil, "\(configuration): reopening failed: \(result.reopenFailure ?? "")")
            #expect(result.integrity == "ok", "\(configuration)")
            #expect(result.missing.isEmpty, "\(configuration): missing \(result.missing)")
            #expect(result.matches, "\(configuration): \(result.difference ?? "")")
        }
    }

    /// Insert through update, save update, save main (the controller shows one more row), kill
    /// before the writer's save; after the restart the controller with its cache name reports
    /// exactly the store's sections and counts.
    @Test func seedScenario() throws {
        for configuration in CrashConfiguration.all {
            let directory = TemporaryDirectory("strata-crash-seed")
            let store = directory.file("goods.sqlite")
            let warm = try HarnessProcess.run(store: store, configuration: configuration, seed: 1, commits: 3)
            #expect(warm.ending == .exited(0), "\(configuration): \(warm.summary)")
            let settled = try HarnessProcess.run(store: store, configuration: configuration, seed: 2, commits: 0)
            #expect(settled.ending == .exited(0), "\(configuration): \(settled.summary)")
            let rows = try #require(settled.field("rows", onLineStartingWith: "open ").flatMap { Int($0) })

            let scenario = try HarnessProcess.run(store: store, configuration: configuration, mode: "seed-scenario", seed: 3,
                                                  commits: 0, killPoint: "writer.save.begin")
            #expect(scenario.ending == .killed, "\(configuration): \(scenario.summary)")
            #expect(scenario.field("served", onLineStartingWith: "open ") == "1", "\(configuration): the scenario's open was not served from the cache")
            #expect(scenario.lines.contains("main-rows \(rows + 1)"), "\(configuration): main did not show one more row: \(scenario.lines)")
            #expect(scenario.acks.isEmpty)

            let result = try StoreVerifier.verify(store: store, configuration: configuration, acked: Set(warm.acks.map(\.marker)))
            #expect(result.integrity == "ok")
            #expect(result.missing.isEmpty)
            #expect(result.servedFromCache, "\(configuration): rejection \(result.rejection.map { "\($0)" } ?? "none")")
            #expect(result.matches, "\(configuration): \(result.difference ?? "")")
            #expect(result.cached.numberOfObjects == rows && result.fresh.numberOfObjects == rows)
            #expect(result.cached.sections.map(\.name) == result.fresh.sections.map(\.name))
            #expect(result.cached.sections.map(\.numberOfObjects) == result.fresh.sections.map(\.numberOfObjects))
        }
    }
}
