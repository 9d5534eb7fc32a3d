import Foundation
import PostgresNIO
import Strata
import StrataSync

// StrataSyncBench: StrataSync against a real PostgreSQL server it starts (PostgresCluster), on
// nycflights13's flights. See Benchmarks/README.md, "Sync through PostgreSQL".
//
// 1. floor: the rows written straight through postgres-nio (1,000-row INSERTs in one
//    transaction), then read back by one SELECT;
// 2. push: replica A enrols (one `sync()` on its empty store), the rows are saved in commits of
//    10,000, then one timed `sync()` pushes them;
// 3. pull: replica B, empty, on the same database: one timed `sync()` pulls everything;
// 4. one change A → B's delegate: B follows (LISTEN/NOTIFY), A changes one row and syncs.
//
// Each phase: wall time, and the CPU time of this process and of the server (CPUTime.swift), which
// a loaded machine moves far less. The tables are printed and written to
// Benchmarks/results/<date>-sync.md (<date>-sync-quick.md with --rows below the full count; an
// existing file is never replaced: -2, -3, …).

/// The Benchmarks package folder (this file is Sources/StrataSyncBench/SyncBench.swift in it).
let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

struct Options {
    var rows = Flights.fullCount
    var commitSize = 10_000
    var rounds = 200
    var warmup = 10
    /// `SyncEngine`'s timeout (one wait on the server), in seconds; nil: the engine's default.
    var timeout: Int?

    static let usage = """
        usage: StrataSyncBench [--rows N] [--commit N] [--rounds N] [--warmup N] [--timeout S]
          --rows N     the first N flights (default 336776, all of them)
          --commit N   rows per local commit before the push (default 10000)
          --rounds N   measured rounds of the one-change latency (default 200), after --warmup N (default 10)
          --timeout S  the engines' timeout, SyncEngine(timeout:) (default: the engine's own)
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            func number(minimum: Int = 1) throws -> Int {
                guard let text = rest.popFirst(), let value = Int(text), value >= minimum else {
                    throw BenchError("\(argument) needs a number of at least \(minimum)\n\(usage)")
                }
                return value
            }
            switch argument {
            case "--rows": options.rows = min(try number(), Flights.fullCount)
            case "--commit": options.commitSize = try number()
            case "--rounds": options.rounds = try number()
            case "--warmup": options.warmup = try number(minimum: 0)
            case "--timeout": options.timeout = try number()
            case "-h", "--help": print(usage); exit(0)
            default: throw BenchError("unknown argument \(argument)\n\(usage)")
            }
        }
        return options
    }
}

@main
enum SyncBench {
    static func main() async {
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("StrataSyncBench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
        #if DEBUG
        say("warning: a debug build; measure with `swift build -c release --product StrataSyncBench`")
        #endif
        let began = clock.now
        let loadBefore = loadAverage()
        let csv = packageDirectory.appendingPathComponent("data/flights.csv")
        if !FileManager.default.fileExists(atPath: csv.path) { try fetchData() }
        let (rows, loadSeconds) = try timed { try Flights.load(csv, limit: options.rows) }
        say("Data: \(formatCount(rows.count)) flights from \(csv.path) (parsed in \(format(seconds: loadSeconds)))")

        var logger = Logger(label: "strata.syncbench")
        logger.logLevel = .warning
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("strata-syncbench-stores-\(UUID().uuidString.prefix(8))")
        Interruption.removeOnSignal(cluster, alsoRemoving: scratch)
        say("PostgreSQL: \(cluster.version), socket \(cluster.socketDirectory), \(PostgresCluster.settings.joined(separator: ", "))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let server = SyncServer(port: cluster.port, socketDirectory: cluster.socketDirectory, username: cluster.username, database: cluster.database)
        // One connection for the floor and the counts (closed at the end; on a failure the
        // server's stop ends it).
        let connection = try await Floor.connect(cluster, logger: logger)

        let postmaster = cluster.postmasterPID
        func engine(_ coordinator: StoreCoordinator, _ name: String) throws -> SyncEngine {
            guard let timeout = options.timeout else { return try SyncEngine(coordinator: coordinator, server: server, name: name, logger: logger) }
            return try SyncEngine(coordinator: coordinator, server: server, name: name, timeout: .seconds(timeout), logger: logger)
        }
        /// `body`'s wall time, and the CPU time to a moment later: a backend whose connection
        /// just closed reads 0 in /proc while it is a zombie, and counts again once the postmaster
        /// has reaped it (in its children's times).
        func measured<T>(_ body: () async throws -> T) async throws -> (T, Phase) {
            let (start, cpu) = (clock.now, CPUTime.now(postmaster: postmaster))
            let result = try await body()
            let seconds = (clock.now - start).seconds
            try await Task.sleep(for: .milliseconds(300))
            return (result, Phase(seconds: seconds, cpu: CPUTime.now(postmaster: postmaster) - cpu))
        }

        // (c) The floor.
        try await Floor.createTable(connection, logger: logger)
        let floorWrite = try await measured { try await Floor.write(rows, connection, logger: logger) }.1
        let (floorRead, floorReading) = try await measured { try await Floor.read(connection, logger: logger) }
        guard floorRead == rows.count else { throw BenchError("the floor read \(floorRead) rows of \(rows.count)") }
        say("floor: write \(floorWrite), read \(floorReading)")

        // (a) Push: A enrols on its empty store, then the rows land in commits, then one sync pushes them.
        let a = try StoreCoordinator(model: Flights.model, url: scratch.appendingPathComponent("a.sqlite"))
        let syncA = try engine(a, "A")
        try await syncA.sync()
        let (commits, insertSeconds) = try timed { try Flights.insert(rows, into: a, commitSize: options.commitSize) }
        let pending = try syncA.pendingTransactions()
        let pushedBefore = syncA.status.pushedTransactions
        let pushWatch = watch(syncA, postmaster: postmaster) { $0.pushedTransactions >= pushedBefore + pending }
        let (pushStart, pushStartCPU) = (clock.now, CPUTime.now(postmaster: postmaster))
        let (pushReport, push) = try await measured { try await syncA.sync() }
        let pushPart = await pushWatch.finish(syncA.status.pushedTransactions >= pushedBefore + pending)
            .map { Phase(seconds: ($0.0 - pushStart).seconds, cpu: $0.1 - pushStartCPU) }
        guard pushReport.pushed == commits else { throw BenchError("A pushed \(pushReport.pushed) transactions, expected \(commits)") }
        say("push: \(commits) commits saved in \(format(seconds: insertSeconds)), sync() \(push) \(pushReport)")

        // (b) Pull: B, empty, pulls everything in its first sync (enrolment included).
        let logTransactions = try await Floor.scalar("SELECT count(*) FROM strata_sync_txn", connection, logger: logger)
        let b = try StoreCoordinator(model: Flights.model, url: scratch.appendingPathComponent("b.sqlite"))
        let syncB = try engine(b, "B")
        let pullWatch = watch(syncB, postmaster: postmaster) { $0.pulledTransactions >= Int(logTransactions) }
        let (pullStart, pullStartCPU) = (clock.now, CPUTime.now(postmaster: postmaster))
        let (pullReport, pull) = try await measured { try await syncB.sync() }
        let apply = await pullWatch.finish(syncB.status.pulledTransactions >= Int(logTransactions))
            .map { Phase(seconds: ($0.0 - pullStart).seconds, cpu: $0.1 - pullStartCPU) }
        let pulledRows = try Flights.count(in: b)
        guard pulledRows == rows.count else { throw BenchError("B holds \(pulledRows) flights after the pull, expected \(rows.count)") }
        say("pull: sync() \(pull) \(pullReport)")

        // Machine-independent counts.
        let logBytes = try await Floor.scalar("SELECT pg_total_relation_size('strata_sync_txn')", connection, logger: logger)
        let jsonBytes = try await Floor.scalar("SELECT coalesce(sum(octet_length(changes::text)), 0)::int8 FROM strata_sync_txn", connection, logger: logger)
        let floorBytes = try await Floor.scalar("SELECT pg_total_relation_size('flights_floor')", connection, logger: logger)

        // (d) One change A → B's delegate.
        let pick = a.newContext(name: "pick")
        let rowKey = try pick.performAndWait { () throws -> ObjectID in
            guard let id = try pick.fetchObjectIDs(FetchRequest<ManagedObject>(entityName: "Flight", fetchLimit: 1)).first else {
                throw BenchError("A holds no flight")
            }
            return id
        }
        say("latency: \(options.warmup) warm-up and \(options.rounds) measured rounds…")
        let latency = try await Latency.run(a: a, syncA: syncA, b: b, syncB: syncB, rowKey: rowKey, warmup: options.warmup, rounds: options.rounds)
        let serverTransactions = try await Floor.scalar("SELECT count(*) FROM strata_sync_txn", connection, logger: logger)
        // What a connection costs (every `sync()` opens one).
        var connects: [Double] = []
        for round in 0..<(options.warmup + options.rounds) {
            let start = clock.now
            let fresh = try await Floor.connect(cluster, logger: logger)
            _ = try await Floor.scalar("SELECT 1::int8", fresh, logger: logger)
            try await fresh.close()
            if round >= options.warmup { connects.append((clock.now - start).milliseconds) }
        }
        try? await connection.close()

        // The report.
        let elapsed = (clock.now - began).seconds
        let n = Double(rows.count)
        func rate(_ seconds: Double) -> String { formatCount(Int((n / seconds).rounded())) }
        func ratio(_ seconds: Double, _ floor: Double) -> String { String(format: "%.1f×", seconds / floor) }
        /// One row of the first table: time, rows/s, the ratio to `floor`'s time, CPU seconds and
        /// the ratio of their sum to `floor`'s.
        func row(_ label: String, _ phase: Phase, _ floor: Phase?) -> String {
            "| \(label) | \(format(seconds: phase.seconds)) | \(rate(phase.seconds)) | \(floor.map { ratio(phase.seconds, $0.seconds) } ?? "") | "
                + String(format: "%.2f s | %.2f s | ", phase.cpu.client, phase.cpu.server)
                + (floor.map { ratio(phase.cpu.client + phase.cpu.server, $0.cpu.client + $0.cpu.server) } ?? "") + " |"
        }
        var lines: [String] = []
        lines.append("# StrataSync: push, pull and one change, against PostgreSQL (\(date()))")
        lines.append("")
        lines.append("Machine: \(ProcessInfo.processInfo.processorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, "
            + "\(ProcessInfo.processInfo.operatingSystemVersionString); \(cluster.version) on a Unix socket (\(PostgresCluster.settings.joined(separator: ", "))). "
            + "\(formatCount(rows.count)) flights (9 columns), \(plural(commits, "local commit")) of up to \(formatCount(options.commitSize)) rows; "
            + "the engines' timeout \(syncA.timeout)\(options.timeout == nil ? " (the default)" : ""); "
            + "\(Int(elapsed / 60)) min \(Int(elapsed) % 60) s in all; load average \(loadBefore) at the start, \(loadAverage()) at the end "
            + "(other work on the machine moves every figure here).")
        lines.append("")
        lines.append("| measure | time | rows/s | Strata / floor (time) | CPU, this process | CPU, PostgreSQL | Strata / floor (CPU, both) |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        lines.append(row("floor write: postgres-nio, \(formatCount(Floor.rowsPerStatement))-row INSERTs with binds, one transaction", floorWrite, nil))
        lines.append(row("floor read: one SELECT, decoded", floorReading, nil))
        lines.append(row("**push**: A's `sync()` of \(plural(commits, "local commit"))", push, floorWrite))
        if let pushPart {
            lines.append(row("… of which until the last push committed (then A reads its own transactions back)", pushPart, floorWrite))
        }
        lines.append(row("**pull**: B's first `sync()` (enrolment included), into an empty store", pull, floorReading))
        if let apply {
            lines.append(row("… of which until the apply committed", apply, floorReading))
        }
        lines.append("| (not in the push: A's \(plural(commits, "save")) of the rows, local) | \(format(seconds: insertSeconds)) | \(rate(insertSeconds)) | | | | |")
        lines.append("")
        let delegate = latency.toDelegate, aSync = latency.aSync
        lines.append("| one change A → B's delegate (\(latency.toDelegate.count) rounds after \(options.warmup) warm-up) | p50 | p99 | max |")
        lines.append("| --- | ---: | ---: | ---: |")
        lines.append("| A's save start → B's `controllerDidChangeContent` (B follows: LISTEN/NOTIFY) | \(ms(percentile(delegate, 0.5))) | \(ms(percentile(delegate, 0.99))) | \(ms(delegate.max() ?? .nan)) |")
        lines.append("| A's save start → A's `sync()` returned | \(ms(percentile(aSync, 0.5))) | \(ms(percentile(aSync, 0.99))) | \(ms(aSync.max() ?? .nan)) |")
        let idle = latency.idleSync
        lines.append("| A's `sync()` with nothing to push or pull (as many rounds) | \(ms(percentile(idle, 0.5))) | \(ms(percentile(idle, 0.99))) | \(ms(idle.max() ?? .nan)) |")
        lines.append("| floor: postgres-nio connect, `SELECT 1`, close (as many rounds) | \(ms(percentile(connects, 0.5))) | \(ms(percentile(connects, 0.99))) | \(ms(connects.max() ?? .nan)) |")
        lines.append("")
        lines.append("B's controller: \(formatCount(latency.rowsInController)) rows on B's main context (sorted by month, day); "
            + "delegate calls beyond one per round: \(latency.extraCalls).")
        lines.append("")
        lines.append("| count | value |")
        lines.append("| --- | ---: |")
        lines.append("| rows | \(formatCount(rows.count)) |")
        lines.append("| server transactions after the push (`strata_sync_txn`) | \(formatCount(Int(logTransactions))) |")
        lines.append("| … after the latency rounds | \(formatCount(Int(serverTransactions))) |")
        lines.append("| `pg_total_relation_size('strata_sync_txn')` after the push | \(formatCount(Int(logBytes))) bytes (\(formatCount(Int(logBytes) / max(rows.count, 1))) a row) |")
        lines.append("| the log's JSON text (`sum(octet_length(changes::text))`) | \(formatCount(Int(jsonBytes))) bytes (\(formatCount(Int(jsonBytes) / max(rows.count, 1))) a row) |")
        lines.append("| `pg_total_relation_size('flights_floor')` | \(formatCount(Int(floorBytes))) bytes (\(formatCount(Int(floorBytes) / max(rows.count, 1))) a row) |")
        lines.append("| A's push: transactions pushed / pulled back (its own) | \(pushReport.pushed) / \(pushReport.pulledOwn) |")
        lines.append("| B's pull: transactions pulled / rows inserted | \(pullReport.pulled) / \(formatCount(pullReport.inserted)) |")
        let text = lines.joined(separator: "\n")
        say("")
        say(text)

        let results = packageDirectory.appendingPathComponent("results")
        try FileManager.default.createDirectory(at: results, withIntermediateDirectories: true)
        let base = "\(date())-sync" + (rows.count < Flights.fullCount ? "-quick" : "")
        var file = results.appendingPathComponent("\(base).md")
        var copy = 1
        while FileManager.default.fileExists(atPath: file.path) {
            copy += 1
            file = results.appendingPathComponent("\(base)-\(copy).md")
        }
        try Data((text + "\n").utf8).write(to: file)
        say("Written to \(file.path)")
    }

    /// Runs Benchmarks/fetch-data (the CSVs are missing).
    static func fetchData() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [packageDirectory.appendingPathComponent("fetch-data").path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("Benchmarks/fetch-data failed (status \(process.terminationStatus))") }
    }
}

// MARK: Interruption

/// ^C or `kill` stops and removes the server. The handler only writes the signal's number into a
/// pipe (what a signal handler may do); a thread of its own reads it, starts the server's removal
/// in a child process and exits at once. (libdispatch's signal sources did not fire here on Linux.)
enum Interruption {
    nonisolated(unsafe) static var pipeWrite: Int32 = -1

    static func removeOnSignal(_ cluster: PostgresCluster, alsoRemoving scratch: URL) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        pipeWrite = ends[1]
        let readEnd = ends[0]
        Thread {
            var number: UInt8 = 0
            guard read(readEnd, &number, 1) == 1 else { return }
            cluster.removeDetached(alsoRemoving: [scratch.path])
            FileHandle.standardError.write(Data("StrataSyncBench: signal \(number): stopping and removing the server\n".utf8))
            _exit(128 + Int32(number))
        }.start()
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(Interruption.pipeWrite, &byte, 1)
            }
        }
    }
}

// MARK: Watching the engine's status

/// The first moment an engine's status met a condition, from ``SyncEngine/statusUpdates()``
/// (stamped when the watching task sees the update: a little late, never early), with the CPU
/// time then.
struct StatusWatch {
    let task: Task<(ContinuousClock.Instant, CPUTime)?, Never>

    /// The moment, once the engine's round returned; `met`: whether the status meets the
    /// condition now (else the watch is given up).
    func finish(_ met: Bool) async -> (ContinuousClock.Instant, CPUTime)? {
        if !met { task.cancel() }
        return await task.value
    }
}

func watch(_ engine: SyncEngine, postmaster: pid_t, until condition: @escaping @Sendable (SyncStatus) -> Bool) -> StatusWatch {
    let updates = engine.statusUpdates()
    return StatusWatch(task: Task {
        for await status in updates where condition(status) { return (clock.now, CPUTime.now(postmaster: postmaster)) }
        return nil
    })
}

/// A measured stretch: wall time and CPU time.
struct Phase: CustomStringConvertible {
    var seconds: Double
    var cpu: CPUTime

    var description: String {
        format(seconds: seconds) + String(format: " (CPU %.2f s here, %.2f s PostgreSQL)", cpu.client, cpu.server)
    }
}

// MARK: Helpers

func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = clock.now
    let result = try body()
    return (result, (clock.now - start).seconds)
}

/// The nearest-rank percentile `p` (0…1) of `values`.
func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[max(0, min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
}

func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }

func format(seconds: Double) -> String {
    seconds < 1 ? String(format: "%.0f ms", seconds * 1000) : String(format: "%.2f s", seconds)
}

func formatCount(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = n < 0 ? "-" : ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return out
}

func date() -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "yyyy-MM-dd"
    return formatter.string(from: Date())
}

/// "1 save", "34 saves".
func plural(_ count: Int, _ noun: String) -> String { "\(formatCount(count)) \(noun)\(count == 1 ? "" : "s")" }

/// The 1-minute load average (/proc/loadavg), or "?".
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
}

/// Prints at once (stdout may be a pipe: no line buffering otherwise).
func say(_ text: String) {
    print(text)
    fflush(nil)
}
