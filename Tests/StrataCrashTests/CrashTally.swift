import Foundation
import Logging
import Strata
import StrataTestSupport

/// A store the suite keeps running the workload on, in one configuration, and the markers the
/// harness acknowledged on it so far (every one must survive every later crash).
final class CrashStore {
    let configuration: CrashConfiguration
    let url: URL
    var acked: Set<String> = []
    var goods = 0
    var resets = 0

    init(_ configuration: CrashConfiguration, in directory: URL) {
        self.configuration = configuration
        url = directory.appendingPathComponent("\(configuration.name).sqlite")
    }

    /// Starts afresh (the store grew past the suite's size limit).
    func reset() {
        StoreVerifier.removeStore(url)
        acked = []
        goods = 0
        resets += 1
    }
}

/// The suite's figures, and the record of everything that went wrong.
final class CrashTally {
    var hits: Set<String> = []
    var namedRuns = 0
    var randomKills = 0
    /// Random kills that found the harness still running (it had not exited on its own).
    var landed = 0
    /// … of which after it had opened the store and fetched (inside the workload).
    var landedAfterOpen = 0
    var recoveryKills = 0
    var recoveryLanded = 0
    var acks = 0
    var verifications = 0
    var staleServed = 0
    var lostCommits = 0
    var violations = 0
    var corruptMade = 0
    var corruptRejected = 0
    /// One line per problem (stale serve, lost commit, violation), with what reproduces it.
    var records: [String] = []
    /// Copies of stores a problem was found in (the first few).
    var evidence: [String] = []

    /// Problems by kind (`reopen failed`, `stale served`, …), for the detail line.
    var kinds: [String: Int] = [:]

    func record(_ kind: String, _ text: String) {
        kinds[kind, default: 0] += 1
        records.append(text)
    }

    /// Accounts for a random kill of `run`.
    func countRandomKill(_ run: HarnessRun, recovery: Bool, label: String) {
        randomKills += 1
        if recovery { recoveryKills += 1 }
        acks += run.acks.count
        switch run.ending {
        case .killed:
            landed += 1
            if recovery { recoveryLanded += 1 }
            if run.opened { landedAfterOpen += 1 }
        case .exited(0):
            break
        default:
            violations += 1
            record("harness ended badly", "violation: \(label): the harness \(run.summary)")
        }
    }

    /// Checks the store after a kill; `corruption` says how the cache file was broken before.
    func check(_ store: CrashStore, label: String, corruption: String?) {
        verifications += 1
        let before = records.count
        do {
            let result = try StoreVerifier.verify(store: store.url, configuration: store.configuration, acked: store.acked)
            store.goods = result.goods
            if let failure = result.reopenFailure {
                violations += 1
                record("reopen failed", "violation: \(label): reopening the store failed: \(failure) (it opened after a read-write SQLite open rolled its journal back)")
            }
            if result.integrity != "ok" {
                violations += 1
                record("integrity", "violation: \(label): integrity_check says \(result.integrity)")
            }
            if !result.missing.isEmpty {
                lostCommits += result.missing.count        // each lost commit counted once:
                store.acked.subtract(result.missing)       // later checks look for the others
                record("lost commits", "lost commits: \(label): \(result.missing.count) acknowledged markers missing: \(result.missing.prefix(5).joined(separator: ", "))")
            }
            func check(_ cache: String, matches: Bool, served: Bool, difference: String?, rejection: SectionCacheRejection?) {
                guard !matches else { return }
                if served {
                    staleServed += 1
                    record("stale served", "stale served: \(label): cache \(cache): \(difference ?? "?")")
                } else {
                    violations += 1
                    record("differs from a fresh fetch", "violation: \(label): the controller with cache name \(cache) differs from a fresh fetch (not served from the cache, rejection \(rejection.map { "\($0)" } ?? "none")): \(difference ?? "?")")
                }
            }
            if let problem = result.historyProblem {
                violations += 1
                record("history disagrees", "violation: \(label): \(problem)")
            }
            check("goods", matches: result.matches, served: result.servedFromCache, difference: result.difference, rejection: result.rejection)
            check("goods-by-name", matches: result.byNameMatches, served: result.byNameServed, difference: result.byNameDifference, rejection: nil)
            if let corruption {
                corruptMade += 1
                if !result.servedFromCache, let rejection = result.rejection, rejection.isCorrupt {
                    corruptRejected += 1
                } else if corruption.hasSuffix(StoreVerifier.recordsMarker), !result.servedFromCache, result.rejection != nil {
                    // A torn or damaged change record: the file reads as of the record before it,
                    // which the store has moved past: rejected as stale, as a crash's torn append is.
                    corruptRejected += 1
                } else {
                    violations += 1
                    record("broken cache not rejected", "violation: \(label): cache file broken (\(corruption)) not rejected as corrupt: served \(result.servedFromCache), rejection \(result.rejection.map { "\($0)" } ?? "none")")
                }
            } else if let rejection = result.rejection, rejection.isCorrupt {
                violations += 1
                record("crash left a corrupt cache", "violation: \(label): the crash left a corrupt cache file (\(rejection))")
            }
        } catch {
            violations += 1
            record("check failed", "violation: \(label): reopening failed: \(error)")
        }
        if records.count > before, evidence.count < 3 { keepEvidence(store, label: label) }
    }

    /// Copies the store's files to a folder that outlives the test, for a post-mortem.
    private func keepEvidence(_ store: CrashStore, label: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-crash-evidence-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm", "-journal", ".caches"] {
            let source = store.url.path + suffix
            guard FileManager.default.fileExists(atPath: source) else { continue }
            try? FileManager.default.copyItem(atPath: source, toPath: folder.appendingPathComponent(store.url.lastPathComponent + suffix).path)
        }
        evidence.append("\(folder.path) (\(label))")
    }

    func summary(catalogue: Int) -> String {
        "crash-suite: kill-points-hit=\(hits.count)/\(catalogue) random-kills=\(randomKills) stale-served=\(staleServed) "
            + "lost-commits=\(lostCommits) violations=\(violations) corrupt-rejected=\(corruptRejected)/\(corruptMade)"
    }
}

/// Library logs at error level only: thousands of reopenings would otherwise log a rebuild each.
enum QuietLogs {
    static let installed: Bool = {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        return true
    }()
}
