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
    let dataDirectory = packageDirectory.appendingPathComponent("data")
    if ProcessInfo.processInfo.environment["STRATA_IMPORT_BENCH"] != nil {
        return try ImportBench.run(dataDirectory: dataDirectory)
    }
    // Profiling aid: `STRATA_PROFILE=<mode> StrataVersus` runs one side of one workload alone
    // (Profile.swift; README, "Profiling"). STRATA_PROFILE_FLIGHTS=N parses the first N flights only.
    let profile = ProcessInfo.processInfo.environment["STRATA_PROFILE"]
    let flightLimit = profile == nil ? nil : ProcessInfo.processInfo.environment["STRATA_PROFILE_FLIGHTS"].flatMap(Int.init)
    let (data, loadSeconds) = try timed { try Dataset.load(from: dataDirectory, flightLimit: flightLimit) }
    say("Data: \(formatCount(data.flights.count)) flights, \(data.airlines.count) airlines, \(formatCount(data.airports.count)) airports, "
        + "\(formatCount(data.planes.count)) planes from \(dataDirectory.path) (CSV parsed in \(Unit.milliseconds.format(loadSeconds)))")
    // The @Entity model must be StrataSide's (same hash, same columns), or the typed rows would
    // compare different stores: checked before anything is measured.
    TypedSide.checkModel()

    if let profile {
        try Profile.run(profile, data: data)
        return
    }
    // (After the profiling modes: this runs `swift --version`.)
    let machine = Machine.current()
    say("Machine: \(machine.line)")
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
                         : " (1,000,000-row sizes: \(runner.millionPlan.iterations) iterations, no warm-up"
                            + (options.iterations == nil ? "; smaller growth sizes' fetches and performFetch: enough iterations to read \(formatCount(Runner.growthRowsRead)) rows each, e.g. \(Runner.growthRowsRead / 10_000) at 10,000)" : ")"))
        + "; growth sizes \(runner.sizes.map(formatCount).joined(separator: " / "))"
        + (options.large ? "; --large: the results controller at \(formatCount(runner.largeSize)) rows, \(runner.largePlan.iterations) iterations, no warm-up" : "")
        + "; \(Int(elapsed / 60)) min \(Int(elapsed) % 60) s in all."
    let report = Report(date: date, machine: machine, runDescription: description, rows: runner.rows, sizes: runner.sizes,
                        sections: runner.sections)
    let text = report.markdown()
    say("")
    say(text)

    let results = packageDirectory.appendingPathComponent("results")
    try FileManager.default.createDirectory(at: results, withIntermediateDirectories: true)
    // A filtered run is named after its filter (`--filter concurrent`: <date>-concurrent.md), and
    // no earlier results file is replaced: the first free name of <name>.md, <name>-2.md, ….
    let slug = options.filter.map { filter in
        String(filter.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }).split(separator: "-").joined(separator: "-")
    }
    let base = "\(date)" + (options.quick ? "-quick" : "") + (slug.map { $0.isEmpty ? "-partial" : "-\($0)" } ?? "")
    var file = results.appendingPathComponent("\(base).md")
    var copy = 1
    while FileManager.default.fileExists(atPath: file.path) {
        copy += 1
        file = results.appendingPathComponent("\(base)-\(copy).md")
    }
    let temporary = results.appendingPathComponent(file.lastPathComponent + ".tmp")
    try Data((text + "\n").utf8).write(to: temporary)
    try FileManager.default.moveItem(at: temporary, to: file)
    say("Written to \(file.path)")
}

do {
    try main()
} catch {
    FileHandle.standardError.write(Data("StrataVersus: \(error)\n".utf8))
    exit(1)
}
