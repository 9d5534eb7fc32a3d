import Foundation
import Strata

// StrataVersus (issue 9): Strata beside the raw SQLite C API and GRDB 7.10 on the nycflights13
// data, every workload interleaved in one run. `Benchmarks/run` fetches the data and runs this in
// release mode; see Benchmarks/README.md, "Real data: Strata vs raw SQLite vs GRDB".

/// The Benchmarks package folder (this file is Sources/StrataVersus/main.swift in it).
let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

func main() throws {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    if options.help {
        say(Options.usage)
        return
    }
    #if DEBUG
    say("warning: a debug build; measure with `swift run -c release StrataVersus` (Benchmarks/run does)")
    #endif
    let began = clock.now
    let machine = Machine.current()
    say("Machine: \(machine.line)")

    let dataDirectory = packageDirectory.appendingPathComponent("data")
    let (data, loadSeconds) = try timed { try Dataset.load(from: dataDirectory) }
    say("Data: \(formatCount(data.flights.count)) flights, \(data.airlines.count) airlines, \(formatCount(data.airports.count)) airports, "
        + "\(formatCount(data.planes.count)) planes from \(dataDirectory.path) (CSV parsed in \(Unit.milliseconds.format(loadSeconds)))")

    // Profiling aid: `STRATA_PROFILE=import|fetch|frc StrataVersus` runs only Strata's side of that
    // workload (three times), so a profiler sees nothing else; `raw-import|raw-fetch` the raw side.
    if let profile = ProcessInfo.processInfo.environment["STRATA_PROFILE"] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-profile-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // STRATA_PROFILE_STORE=path: keep the imported store there and reuse it on later runs
        // (profile a fetch without the import before it).
        let kept = ProcessInfo.processInfo.environment["STRATA_PROFILE_STORE"].map { URL(fileURLWithPath: $0) }
        let url = kept ?? folder.appendingPathComponent("flights.sqlite")
        let reuse = kept.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
        // STRATA_PROFILE_FLIGHTS=N: the first N flights only (callgrind runs ~50× slower).
        let flights = ProcessInfo.processInfo.environment["STRATA_PROFILE_FLIGHTS"].flatMap(Int.init)
            .map { Array(data.flights.prefix($0)) } ?? data.flights
        for round in 0..<3 {
            // raw-import / raw-fetch: the raw C API side of the same workloads, so that counted
            // instructions (callgrind) compare Strata with the practical limit repeatably.
            if profile == "raw-import" || (profile == "raw-fetch" && round == 0 && !reuse) {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
                let db = try RawDB(path: url.path)
                try db.createSchema()
                let (_, seconds) = try timed { try db.importAll(data, flights: flights) }
                say("raw import \(seconds)")
            }
            if profile == "raw-fetch" {
                let db = try RawDB(path: url.path)
                let (rows, seconds) = try timed { try db.allFlights() }
                say("raw fetch \(rows.count) \(seconds)")
            }
            if profile.hasPrefix("raw-") { continue }
            if profile == "import" || (round == 0 && !reuse) {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
                // STRATA_PAGE_CHECKSUMS=0: the store is made without page checksums (issue 18's
                // overhead, counted by callgrind on both settings).
                var storeOptions = StoreOptions()
                storeOptions.pageChecksums = ProcessInfo.processInfo.environment["STRATA_PAGE_CHECKSUMS"] != "0"
                let container = try PersistentContainer(model: StrataSide.model, url: url, options: storeOptions)
                let (_, seconds) = try timed { try StrataSide.importAll(data, flights: flights, into: container) }
                container.coordinator.close()
                say("import \(seconds)")
            }
            if profile == "frc" {
                let container = try PersistentContainer(model: StrataSide.model, url: url)
                let (list, seconds) = try timed { try StrataSide.openList(container) }
                container.coordinator.close()
                say("frc \(list.sections.count) sections \(seconds)")
            }
            if profile == "fetch" {
                let coordinator = try StoreCoordinator(model: StrataSide.model, url: url)
                let (result, seconds) = try timed { try StrataSide.fetchAllAndRead(coordinator.newContext()) }
                coordinator.close()
                say("fetch \(result.objects.count) \(seconds)")
            }
        }
        return
    }
    let scratch = try Scratch()
    defer { scratch.removeAll() }
    let runner = Runner(options: options, data: data, scratch: scratch)
    try runner.run()

    let elapsed = (clock.now - began).seconds
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "yyyy-MM-dd"
    let date = formatter.string(from: Date())
    var kind = options.quick ? "quick" : "full"
    if let filter = options.filter { kind = (options.quick ? "quick, " : "") + "only the workloads matching '\(filter)'" }
    let description = "Run: \(kind); \(runner.plan.iterations) measured iterations per contender after \(runner.plan.warmup) warm-up, "
        + "the contenders interleaved round by round"
        + (options.quick ? " (imports: \(runner.importPlan.iterations) iterations, no warm-up)"
                         : " (1,000,000-row sizes: \(runner.millionPlan.iterations) iterations, no warm-up)")
        + "; growth sizes \(runner.sizes.map(formatCount).joined(separator: " / ")); \(Int(elapsed / 60)) min \(Int(elapsed) % 60) s in all."
    let report = Report(date: date, machine: machine, runDescription: description, rows: runner.rows, sizes: runner.sizes)
    let text = report.markdown()
    say("")
    say(text)

    let results = packageDirectory.appendingPathComponent("results")
    try FileManager.default.createDirectory(at: results, withIntermediateDirectories: true)
    let suffix = options.filter != nil ? "-partial" : options.quick ? "-quick" : ""
    let file = results.appendingPathComponent("\(date)\(suffix).md")
    let temporary = results.appendingPathComponent("\(date)\(suffix).md.tmp")
    try Data((text + "\n").utf8).write(to: temporary)
    _ = try? FileManager.default.removeItem(at: file)
    try FileManager.default.moveItem(at: temporary, to: file)
    say("Written to \(file.path)")
}

do {
    try main()
} catch {
    FileHandle.standardError.write(Data("StrataVersus: \(error)\n".utf8))
    exit(1)
}
