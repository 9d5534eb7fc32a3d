import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The results controller's model-based test: seeded random batches over every route a user has
/// (update, main, writer and sibling saves, a second coordinator, rollback, refresh, reset) and
/// every operation (inserts, deletes under each delete rule, re-parenting, sort, section and
/// predicate inputs through relationships), watched by eight controllers on three contexts;
/// after every batch the oracle of `ControllerModel+Oracle.swift` checks each of them.
///
/// Prints `frc-model: batches=N seeds=S controllers=C mismatches=M duplicate-updates=D` and how
/// often each route, operation and outcome was reached. A failure prints its seed and the
/// failing sequence shrunk to a ready-to-paste Swift test.
///
/// - `STRATA_FRC_BATCHES` (default 20,000): batches in all, split over the seeds.
/// - `STRATA_FRC_SEEDS` (default: 5 random seeds): comma-separated seeds to replay.
@Suite struct ControllerModelTests {
    struct SeedResult: Sendable {
        var seed: UInt64
        var batches = 0
        var tally = ModelTally()
        var duplicateUpdates = 0
        /// Batches with a problem (the run goes on after each, from a fresh fetch).
        var mismatches = 0
        /// The first failure, with the batches up to it (for shrinking).
        var failure: (index: Int, problems: [String], batches: [ModelBatch])?
    }

    @Test(.timeLimit(.minutes(300))) func controllersStayExactOnEveryRoute() throws {
        let environment = ProcessInfo.processInfo.environment
        let total = environment["STRATA_FRC_BATCHES"].flatMap { Int($0) } ?? 20_000
        let seeds = environment["STRATA_FRC_SEEDS"].map { $0.split(separator: ",").compactMap { UInt64($0) } }
            ?? (0..<5).map { _ in UInt64.random(in: 0...UInt64.max) }
        let perSeed = max(1, total / max(seeds.count, 1))
        let results = Locked<[SeedResult]>([])
        DispatchQueue.concurrentPerform(iterations: seeds.count) { index in
            let result = Self.run(seed: seeds[index], batches: perSeed)
            results.withLock { $0.append(result) }
        }
        let all = results.withLock { $0 }.sorted { $0.seed < $1.seed }
        var tally = ModelTally()
        for result in all { tally.add(result.tally) }
        let batches = all.reduce(0) { $0 + $1.batches }
        let mismatches = all.reduce(0) { $0 + $1.mismatches }
        let duplicates = all.reduce(0) { $0 + $1.duplicateUpdates }
        let controllers = try ModelControllerSpec.all().count
        for (title, counts) in [("route", tally.routes), ("operation", tally.operations), ("outcome", tally.outcomes),
                                ("controller with changes", tally.controllers)] {
            for (name, count) in counts.sorted(by: { $0.key < $1.key }) { print("frc-model \(title): \(name) = \(count)") }
        }
        for result in all {
            guard let failure = result.failure else { continue }
            // Said before shrinking, so that a shrinker that stops still leaves the seed.
            print("frc-model: seed \(result.seed) failed at batch \(failure.index + 1) (replay: STRATA_FRC_SEEDS=\(result.seed) STRATA_FRC_BATCHES=\(perSeed)): \(failure.problems.prefix(3).joined(separator: " | "))")
            let shrunk = Self.shrink(failure.batches, seconds: environment["STRATA_FRC_SHRINK_SECONDS"].flatMap { Double($0) } ?? 30)
            let message = """
                frc-model: seed \(result.seed) failed at batch \(failure.index + 1) (replay: STRATA_FRC_SEEDS=\(result.seed) STRATA_FRC_BATCHES=\(perSeed)):
                \(failure.problems.joined(separator: "\n"))
                shrunk to \(shrunk.batches.count) batches, which fail with:
                \(shrunk.problems.joined(separator: "\n"))
                Paste as a test:

                @Test func controllerModelSeed\(result.seed)() throws {
                    let problems = try ControllerModelRun.replay([
                \(shrunk.batches.map { "        \($0)," }.joined(separator: "\n"))
                    ])
                    #expect(problems.isEmpty, "\\(problems)")
                }
                """
            print(message)
            Issue.record(Comment(rawValue: message))
        }
        print("frc-model: batches=\(batches) seeds=\(seeds.count) controllers=\(controllers) mismatches=\(mismatches) duplicate-updates=\(duplicates)")
        #expect(mismatches == 0 && duplicates == 0)
        // A property is only as good as its generator: at the CI size, every route and every
        // operation ran at least 100 times.
        if batches >= 20_000 {
            for route in ModelRoute.allCases {
                #expect((tally.routes[route.rawValue] ?? 0) >= 100, "route \(route.rawValue) reached \(tally.routes[route.rawValue] ?? 0) times")
            }
            let operations = ["insert item", "delete item", "delete category (nullify)", "delete shelf (cascade)", "delete owner (deny)",
                              "delete bin (no action)", "set name (sort key)", "set group (section key)", "set score (sort key, predicate)",
                              "set flag (predicate, ANY)", "set note (unread value)", "re-parent category", "re-parent shelf",
                              "rename category (key path)", "rename shelf (key path)", "set category rank (predicate key path)",
                              "refresh merging", "refresh discarding", "refreshAllObjects"]
            for operation in operations {
                #expect((tally.operations[operation] ?? 0) >= 100, "operation \(operation) reached \(tally.operations[operation] ?? 0) times")
            }
            for outcome in ["save refused by a deny rule", "save refused by a conflict", "reload after reset", "section insert", "section delete",
                            "move within a section", "move across sections", "update", "saveToStore through clean ancestors (shortcut)",
                            "saveToStore level by level", "background.save() over unsaved changes on main",
                            "another coordinator between main.save() and writer.save()",
                            "placement compared with remembered values"] {
                #expect((tally.outcomes[outcome] ?? 0) >= 100, "outcome \(outcome) reached \(tally.outcomes[outcome] ?? 0) times")
            }
        }
    }

    /// One seed's run: batches until the first that fails.
    static func run(seed: UInt64, batches: Int) -> SeedResult {
        var result = SeedResult(seed: seed)
        var generator = ModelGenerator(seed: seed)
        var history: [ModelBatch] = []
        do {
            let run = try ControllerModelRun()
            for index in 0..<batches {
                let batch = generator.batch(itemCount: run.itemCount)
                if result.failure == nil { history.append(batch) }
                let problems = run.run(batch)
                result.batches = index + 1
                if !problems.isEmpty {
                    result.mismatches += 1
                    if result.failure == nil { result.failure = (index, problems, history) }
                    // Go on from a fresh fetch, so the batches that follow are checked on their own.
                    try run.resynchronise()
                }
            }
            result.tally = run.tally
            result.duplicateUpdates = run.duplicateUpdates
        } catch {
            result.failure = (history.count, ["the run threw \(error)"], history)
        }
        return result
    }

    /// Shrinks a failing sequence: drops batches (halves, quarters, … single ones), then single
    /// operations, keeping each cut that still fails; at most `seconds` of replays
    /// (`STRATA_FRC_SHRINK_SECONDS`, default 30).
    static func shrink(_ batches: [ModelBatch], seconds: Double) -> (batches: [ModelBatch], problems: [String]) {
        let deadline = Date().addingTimeInterval(seconds)
        var current = batches
        var problems = ControllerModelRun.failure(of: current) ?? ["(the full sequence no longer fails when replayed alone)"]
        // A cut must keep the failure's kind (controller and rule), not drift to another bug.
        let kind = Self.kind(of: problems)
        func attempt(_ candidate: [ModelBatch]) -> Bool {
            guard Date() < deadline, let found = ControllerModelRun.failure(of: candidate), Self.kind(of: found) == kind else { return false }
            current = candidate
            problems = found
            return true
        }
        var chunk = max(current.count / 2, 1)
        while chunk >= 1, Date() < deadline {
            var start = 0
            while start < current.count, Date() < deadline {
                var candidate = current
                candidate.removeSubrange(start..<min(start + chunk, current.count))
                if candidate.isEmpty || !attempt(candidate) { start += chunk }
            }
            if chunk == 1 { break }
            chunk /= 2
        }
        for b in current.indices.reversed() where b < current.count {
            var o = current[b].operations.count - 1
            while o >= 0, Date() < deadline {
                var candidate = current
                candidate[b].operations.remove(at: o)
                _ = attempt(candidate)
                o -= 1
            }
            for flag in [\ModelBatch.strictPolicy, \ModelBatch.refetch] where current[b][keyPath: flag] {
                var candidate = current
                candidate[b][keyPath: flag] = false
                _ = attempt(candidate)
            }
        }
        return (current, problems)
    }

    /// A failure's kind: the controller and the rule of its first problem (`[flat on main] (c)`).
    static func kind(of problems: [String]) -> String {
        guard let first = problems.first else { return "" }
        if let close = first.firstIndex(of: ")") { return String(first[...close]) }
        return String(first.prefix(30))
    }
}

extension ControllerModelRun {
    /// Runs `batches` on a new run; every problem found (for tests pasted from a shrunk failure).
    static func replay(_ batches: [ModelBatch]) throws -> [String] {
        let run = try ControllerModelRun()
        var problems: [String] = []
        for (index, batch) in batches.enumerated() {
            problems += run.run(batch).map { "batch \(index + 1): \($0)" }
        }
        return problems
    }

    /// The problems of the first failing batch of `batches` replayed on a new run, or `nil`.
    static func failure(of batches: [ModelBatch]) -> [String]? {
        guard let run = try? ControllerModelRun() else { return nil }
        for batch in batches {
            let problems = run.run(batch)
            if !problems.isEmpty { return problems }
        }
        return nil
    }
}
