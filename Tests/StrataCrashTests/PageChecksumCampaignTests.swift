import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Synchronization
import Testing

/// The page-checksum flip campaign: random single-byte changes at random offsets of a populated
/// store (pages of tables, indexes, the meta tables, free pages), each on a fresh copy, then open
/// + read everything + `store check`, in `StrataCrashHarness --mode flips` child processes so a
/// crash is counted, not fatal. Every flip must be detected (a typed error on the read, or the
/// check), none may be read as a wrong value, and no child may crash.
///
/// `STRATA_FLIPS` (default 2,000) sets the number of flips; `STRATA_FLIP_SEED` replays a run.
@Suite struct PageChecksumCampaignTests {
    struct Outcome {
        var index: Int
        var page: Int
        var read: String
        var check: String
    }

    @Test(.timeLimit(.minutes(60))) func everyFlipIsDetectedAndNoneIsRead() throws {
        let environment = ProcessInfo.processInfo.environment
        let flips = environment["STRATA_FLIPS"].flatMap { Int($0) } ?? 2_000
        let seed = environment["STRATA_FLIP_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        let directory = TemporaryDirectory()
        let pristine = directory.file("pristine.sqlite")
        try FlipCampaign.populate(at: pristine)
        let size = try Data(contentsOf: pristine).count
        let kinds = try Self.pageKinds(of: pristine)

        // Chunks of at most 250 flips (a child's output stays far below a pipe's 64 KiB, which the
        // harness runner reads after the exit), two children at a time (two cores).
        let chunk = 250
        let starts = Array(stride(from: 0, to: flips, by: chunk))
        let results = Mutex<(outcomes: [Outcome], crashes: [String], stderr: [String])>(([], [], []))
        DispatchQueue.concurrentPerform(iterations: starts.count) { position in
            var next = starts[position]
            let end = min(next + chunk, flips)
            while next < end {
                let run: HarnessRun
                do {
                    run = try HarnessProcess.Launched(arguments: ["--store", pristine.path, "--mode", "flips", "--seed", String(seed),
                                                                  "--first", String(next), "--commits", String(end - next)],
                                                      killPoint: nil).wait(deadline: .seconds(1_800))
                } catch {
                    results.withLock { $0.crashes.append("flip \(next): could not launch the harness: \(error)") }
                    return
                }
                var outcomes: [Outcome] = []
                for line in run.lines where line.hasPrefix("flip ") {
                    var fields: [String: String] = [:]
                    let tokens = line.split(separator: " ")
                    for token in tokens.dropFirst(2) {
                        let pair = token.split(separator: "=", maxSplits: 1)
                        if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
                    }
                    guard let index = Int(tokens[1]) else { continue }
                    outcomes.append(Outcome(index: index, page: Int(fields["page"] ?? "") ?? 0, read: fields["read"] ?? "?", check: fields["check"] ?? "?"))
                }
                let done = outcomes.map(\.index).max().map { $0 + 1 } ?? next
                results.withLock {
                    $0.outcomes += outcomes
                    if !run.stderr.isEmpty { $0.stderr.append(run.stderr) }
                }
                if run.ending == .exited(0), done == end { break }
                // The child died during flip `done`: a crash (or a hang). Go on after it.
                results.withLock { $0.crashes.append("flip \(done) (seed \(seed)): \(run.summary)") }
                next = done + 1
            }
        }
        let (outcomes, crashes, stderr) = results.withLock { $0 }
        var detected = 0, silent = 0
        var reached: [String: Int] = [:]
        var undetected: [String] = []
        for outcome in outcomes {
            let readDetected = outcome.read == "corrupt-page" || outcome.read.hasPrefix("error:")
            if readDetected || outcome.check == "corrupt" { detected += 1 } else {
                undetected.append("flip \(outcome.index) (page \(outcome.page))")
            }
            if outcome.read == "different" { silent += 1 }
            reached["page: " + (kinds[outcome.page] ?? "free or unused"), default: 0] += 1
            reached["read: " + outcome.read, default: 0] += 1
            reached["check: " + outcome.check, default: 0] += 1
        }
        for (name, count) in reached.sorted(by: { $0.key < $1.key }) { print("page-checksum reached \(name) = \(count)") }
        print("page-checksum: store=\(size) bytes, \(size / 4096) pages, seed=\(seed)")
        print("page-checksum: flips=\(outcomes.count) detected=\(detected) silent=\(silent) crashes=\(crashes.count)")
        #expect(outcomes.count + crashes.count == flips)
        #expect(detected == outcomes.count, "not detected: \(undetected.prefix(10))")
        #expect(silent == 0, "wrong values read: \(outcomes.filter { $0.read == "different" }.prefix(10).map { "flip \($0.index) page \($0.page)" })")
        #expect(crashes.isEmpty, "\(crashes.prefix(5))")
        #expect(stderr.isEmpty, "the harness wrote to stderr: \(stderr.prefix(3))")
        // Every kind of page was hit at this size (tables, indexes, the meta table, free pages).
        if flips >= 2_000 {
            for kind in ["page: strata_meta", "page: Employee", "page: strata_join_Employee_projects", "page: free or unused"] {
                #expect((reached[kind] ?? 0) >= 1, "\(kind) was never flipped")
            }
        }
    }

    /// Page number → the table or index it belongs to (`dbstat`), or "free or unused".
    static func pageKinds(of url: URL) throws -> [Int: String] {
        let db = try Connection(path: url.path, configuration: .init())
        defer { db.close() }
        var kinds: [Int: String] = [1: "header (page 1)"]
        do {
            try db.prepare("SELECT name, pageno FROM dbstat").forEachRow { row in
                let page = Int(row.int64(at: 1))
                if page != 1 { kinds[page] = row.string(at: 0) }
            }
        } catch {
            // Without SQLITE_ENABLE_DBSTAT_VTAB every page counts as "unknown": the campaign still
            // runs, the coverage line says less.
            return [:]
        }
        return kinds
    }
}
