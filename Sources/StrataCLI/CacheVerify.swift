import ArgumentParser
import Foundation
import Strata

/// `strata cache verify STORE [NAME…]`: ``StoreInspector/verifyCache(named:directory:limit:)``.
struct CacheVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Run each cache's request against the store and compare sections, counts and IDs.",
        discussion: """
            For each cache named (every cache of the store when none is), runs the request the \
            file stores against the store as it is now, with the model the store carries (no app \
            code needed; StoreInspector.verifyCache()), and compares the sections (name, count, \
            key value) and the ordered object IDs with the file's. Prints the first differences.

            Exit status: 0 when every cache is valid and matches, 1 when one is stale, corrupt \
            or differs, 64 and up for errors (see `strata --help`).

            Example:
              strata cache verify /tmp/goods.sqlite
              strata cache verify /tmp/goods.sqlite goods-by-category --limit 3
            """
    )

    @OptionGroup var location: CacheLocation
    @Argument(help: ArgumentHelp("The caches to verify (default: every cache of the store).", valueName: "name"))
    var names: [String] = []
    @Flag(help: "Print JSON (an array of CacheVerification, sorted keys) instead of text.")
    var json = false
    @Option(help: "How many differences to show per cache.")
    var limit = 10

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be 1 or more, not \(limit)") }
    }

    func run() throws {
        let inspector = try location.inspector(requiring: names)
        let selected = names.isEmpty ? try inspector.caches().cacheNames() : unique(names)
        var outcomes: [Outcome] = []
        for name in selected {
            do {
                // One difference more than shown, to tell "exactly --limit" from "more".
                var result = try inspector.verifyCache(named: name, limit: min(limit, Int.max - 1) + 1)
                let truncated = result.differences.count > limit
                result.differences = Array(result.differences.prefix(limit))
                outcomes.append(.verified(result, truncated: truncated))
            } catch {
                // The file's request can't be run against the store (an entity or key its model
                // lacks): this cache is invalid; the others are still verified. A store SQLite
                // finds malformed (`.corrupt`) is no cache's fault: it fails the command (65).
                guard case .sqlite(let message) = error else { throw error }
                let report = try inspector.cacheReport(named: name)
                outcomes.append(.failed(name: name, report: report, difference: "the request can't be run against the store: \(message)"))
            }
        }
        if json {
            try printJSON(outcomes)
        } else {
            printText(outcomes, inspector: inspector)
        }
        if outcomes.contains(where: { !$0.matches }) { throw ExitCode(ExitStatus.invalidCache.rawValue) }
    }

    /// One cache's result: the library's ``CacheVerification``, or (same JSON fields) a cache
    /// whose request could not be run.
    enum Outcome: Encodable {
        case verified(CacheVerification, truncated: Bool)
        case failed(name: String, report: CacheReport, difference: String)

        private struct Failed: Encodable {
            var name: String
            var report: CacheReport
            var matches = false
            var differences: [String]
        }

        var name: String {
            switch self {
            case .verified(let result, _): result.name
            case .failed(let name, _, _): name
            }
        }
        var report: CacheReport {
            switch self {
            case .verified(let result, _): result.report
            case .failed(_, let report, _): report
            }
        }
        var matches: Bool { if case .verified(let result, _) = self { result.matches } else { false } }
        var differences: [String] {
            switch self {
            case .verified(let result, _): result.differences
            case .failed(_, _, let difference): [difference]
            }
        }
        var truncated: Bool { if case .verified(_, let truncated) = self { truncated } else { false } }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .verified(let result, _): try result.encode(to: encoder)
            case .failed(let name, let report, let difference): try Failed(name: name, report: report, differences: [difference]).encode(to: encoder)
            }
        }
    }

    private func printText(_ outcomes: [Outcome], inspector: StoreInspector) {
        guard !outcomes.isEmpty else {
            print("no caches in \(location.folder(inspector))")
            return
        }
        var table = Table([("NAME", .left), ("STATUS", .left), ("RESULT", .left), ("", .left)])
        for outcome in outcomes {
            let report = outcome.report
            let sizes = report.sections.map { "\(Format.count($0, "section")), \(Format.count(report.objects ?? 0, "object"))" } ?? ""
            table.append([outcome.name, Format.status(report), outcome.matches ? "matches" : "DIFFERS",
                          outcome.matches ? sizes : (outcome.truncated ? "more than " : "")
                              + Format.count(outcome.differences.count, "difference")])
        }
        let lines = table.lines()
        print(lines[0])
        for (index, outcome) in outcomes.enumerated() {
            print(lines[index + 1])
            for difference in outcome.differences { print("    - \(difference)") }
        }
        let failing = outcomes.filter { !$0.matches }.count
        print("\n\(Format.count(outcomes.count, "cache")) verified: \(outcomes.count - failing) valid, \(failing) invalid")
    }

    private func unique(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }
}
