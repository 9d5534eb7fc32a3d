import Foundation

/// The harness's command line (plain parsing: `--name value` pairs).
struct HarnessOptions {
    enum Mode: String {
        case run, recover, seedScenario = "seed-scenario", tornCommit = "torn-commit", migrate, migrateMapping = "migrate-mapping"
        /// A session that returns from main without close() (ExitWithoutClose.swift).
        case exitWithoutClose = "exit-without-close"
        /// The page-checksum flip campaign (FlipCampaignMode.swift): `--commits` flips from `--first`.
        case flips
        /// StoreCoordinator.addPageChecksums(toStoreAt:) on the store (kill points checksums.*).
        case addChecksums = "add-checksums"
    }
    enum Journal: String { case wal, delete }
    enum Synchronous: String { case full, normal }

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static let usage = """
        usage: StrataCrashHarness --store PATH [--seed N] [--commits N] [--journal wal|delete]
                                    [--synchronous full|normal]
                                    [--mode run|recover|seed-scenario|torn-commit|migrate|migrate-mapping|exit-without-close|flips|add-checksums]
                                    [--first N]
        """

    var store: String
    var seed: UInt64 = 1
    /// Commits of a `run`; 0: open, fetch, wait for the cache write, exit.
    var commits = 20
    var journal = Journal.wal
    var synchronous = Synchronous.full
    var mode = Mode.run
    /// `flips`: the index of the first flip.
    var first = 0

    static func parse(_ arguments: [String]) throws -> HarnessOptions {
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--"), index + 1 < arguments.count else {
                throw UsageError(description: "expected --name value, got \(name.debugDescription)")
            }
            values[String(name.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard let store = values.removeValue(forKey: "store") else { throw UsageError(description: "--store is required") }
        var options = HarnessOptions(store: store)
        if let text = values.removeValue(forKey: "seed") {
            guard let seed = UInt64(text) else { throw UsageError(description: "--seed must be a number, got \(text)") }
            options.seed = seed
        }
        if let text = values.removeValue(forKey: "commits") {
            guard let commits = Int(text), commits >= 0 else { throw UsageError(description: "--commits must be ≥ 0, got \(text)") }
            options.commits = commits
        }
        if let text = values.removeValue(forKey: "first") {
            guard let first = Int(text), first >= 0 else { throw UsageError(description: "--first must be ≥ 0, got \(text)") }
            options.first = first
        }
        if let text = values.removeValue(forKey: "journal") {
            guard let journal = Journal(rawValue: text) else { throw UsageError(description: "--journal must be wal or delete, got \(text)") }
            options.journal = journal
        }
        if let text = values.removeValue(forKey: "synchronous") {
            guard let synchronous = Synchronous(rawValue: text) else {
                throw UsageError(description: "--synchronous must be full or normal, got \(text)")
            }
            options.synchronous = synchronous
        }
        if let text = values.removeValue(forKey: "mode") {
            guard let mode = Mode(rawValue: text) else {
                throw UsageError(description: "--mode must be run, recover, seed-scenario, torn-commit, migrate, migrate-mapping or exit-without-close, got \(text)")
            }
            options.mode = mode
        }
        if let unknown = values.keys.sorted().first { throw UsageError(description: "unknown option --\(unknown)") }
        return options
    }
}
