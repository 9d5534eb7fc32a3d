import Foundation

// The timing loop: for one workload, each contender's iteration body runs in turn (raw, GRDB,
// Strata, the starting contender rotating every round so that none always runs first), after
// warm-up rounds that are not recorded. A body does its own setup and returns the seconds of its
// measured region only. The median of each contender's iterations is the result.

struct Options {
    var quick = false
    var filter: String?
    var iterations: Int?
    var large = false
    var help = false

    static let usage = """
        usage: StrataVersus [--quick] [--filter SUBSTRING] [--iterations N] [--large]

          --quick           fewer iterations and no 1,000,000-row sizes: a smoke run (a few minutes)
          --filter TEXT     only the workloads whose name contains TEXT (case-insensitive)
          --iterations N    measured iterations per contender for every workload (warm-up apart)
          --large           also the results controller at 10,000,000 rows, raw SQLite and Strata
                            (3 iterations, no warm-up; stores of ~1.5 GB each built first, unmeasured:
                            about 8 more minutes on 2 cores);
                            their names start with "large:" and end with "10M": --large --filter large
                            runs only them (STRATA_LARGE_ROWS=N: another size, for a quick check)

        --filter concurrent runs only the concurrent-reads rows (ConcurrentReads.swift: page reads on
        the main context during an import, two contexts fetching in parallel; 1,000,000 items,
        --quick 100,000).

        --filter history runs only the history rows (History.swift: one external change → the delegate
        of a controller over 1,000,000 items, followed vs re-run; the import with history on vs off;
        history(after:) of 10,000 transactions, unpaged, in pages of 1,000 and with the rows' values;
        the -wal's peak size with two followers during 10,000 commits, also --filter wal).

        Data: Benchmarks/data/*.csv (Benchmarks/fetch-data). Results: Benchmarks/results/<date>.md
        (a --quick run writes <date>-quick.md, a --filter run <date>-<filter>.md; an existing file
        is never replaced: -2, -3, … is added to the name).
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--quick": options.quick = true
            case "--large": options.large = true
            case "--filter":
                i += 1
                guard i < arguments.count else { throw VersusError("--filter needs a value") }
                options.filter = arguments[i]
            case "--iterations":
                i += 1
                guard i < arguments.count, let n = Int(arguments[i]), n > 0 else { throw VersusError("--iterations needs a positive number") }
                options.iterations = n
            case "-h", "--help": options.help = true
            default: throw VersusError("unknown argument \(arguments[i])\n\(usage)")
            }
            i += 1
        }
        return options
    }

    func includes(_ workload: String) -> Bool {
        guard let filter, !filter.isEmpty else { return true }
        // `a|b`: either substring.
        return filter.lowercased().split(separator: "|").contains { workload.lowercased().contains($0) }
    }
}

/// How many times to run: measured iterations and unrecorded warm-up rounds.
struct Plan {
    var iterations: Int
    var warmup: Int

    /// This plan with enough measured iterations that each contender reads at least `total`
    /// rows in all, at `rows` a round. A 10,000-row fetch takes ~15 ms: five such samples on a
    /// shared two-core VM read 1.23× raw in one run and 1.45× in the next (2026-11-27), while a
    /// median of a hundred is steady. Only more samples: the rounds stay interleaved, and every
    /// contender gets the same count.
    func covering(rows: Int, atLeast total: Int) -> Plan {
        guard rows > 0 else { return self }
        return Plan(iterations: max(iterations, (total + rows - 1) / rows), warmup: warmup)
    }
}

/// One contender's iteration: `iteration` counts from 0 over warm-up and measured rounds alike;
/// `isLast` is true on the final measured round (a body may keep what it built then).
typealias IterationBody = (_ iteration: Int, _ isLast: Bool) throws -> Double

/// Runs the bodies interleaved and returns each one's measured seconds, by key (a contender, or
/// a label when one contender is measured two ways).
func interleave<Key: Hashable>(_ plan: Plan, _ bodies: [(Key, IterationBody)]) throws -> [Key: [Double]] {
    var samples: [Key: [Double]] = [:]
    let rounds = plan.warmup + plan.iterations
    for round in 0..<rounds {
        let isLast = round == rounds - 1
        for k in 0..<bodies.count {
            let (key, body) = bodies[(k + round) % bodies.count]
            let seconds = try body(round, isLast)
            if round >= plan.warmup { samples[key, default: []].append(seconds) }
        }
    }
    return samples
}

/// The unit a result row is shown in.
enum Unit: Sendable {
    case milliseconds, microseconds, bytes, megabytes, count, nanosecondsPerRow
    /// A rate (fetches per second) and a plain ratio (the concurrent-reads rows).
    case perSecond, ratio

    /// Formats `value` (seconds for times, plain numbers otherwise).
    func format(_ value: Double) -> String {
        switch self {
        case .milliseconds: return formatNumber(value * 1e3) + " ms"
        case .microseconds: return formatNumber(value * 1e6) + " µs"
        case .bytes: return String(format: "%.2f", value) + " B"
        case .megabytes: return String(format: "%.1f", value / 1e6) + " MB"
        case .count: return String(Int(value.rounded()))
        case .nanosecondsPerRow: return formatNumber(value * 1e9) + " ns/row"
        case .perSecond: return formatCount(Int(value.rounded())) + " /s"
        case .ratio: return formatRatio(value)
        }
    }
}

func formatNumber(_ v: Double) -> String {
    if v.isNaN { return "–" }
    let a = abs(v)
    if a >= 100_000 { return formatCount(Int(v.rounded())) }
    if a >= 100 { return String(format: "%.0f", v) }
    if a >= 10 { return String(format: "%.1f", v) }
    if a >= 1 { return String(format: "%.2f", v) }
    if a == 0 { return "0" }
    return String(format: "%.3f", v)
}

/// One line of the summary.
struct ResultRow {
    var group: String
    var workload: String
    var rows: Int?
    var unit: Unit
    var values: [Contender: Double] = [:]
    var goal: String?
    var met: Bool?
    var note: String?

    func ratio(_ other: Contender) -> Double? {
        guard let s = values[.strata], let o = values[other], o > 0 else { return nil }
        return s / o
    }
}

func formatRatio(_ r: Double?) -> String {
    guard let r, r.isFinite else { return "" }
    return r >= 10 ? String(format: "%.0f×", r) : String(format: "%.2f×", r)
}
