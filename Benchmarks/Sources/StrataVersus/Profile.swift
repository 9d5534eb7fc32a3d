import Foundation
import Strata

// STRATA_PROFILE=<mode> StrataVersus: one side of one workload alone, a few rounds, so that a
// profiler (perf, callgrind) sees nothing else. Each mode's measured region is one function
// below with a fixed symbol name, `strata_profile_region_<mode>` (dashes as underscores), for
// callgrind's `--toggle-collect`: only that function and what it calls are counted.
//
// Environment:
//   STRATA_PROFILE=<mode>        one of Profile.modes (README, "Profiling")
//   STRATA_PROFILE_FLIGHTS=N     the first N flights only (callgrind runs ~50× slower); only
//                                those are parsed from the CSV
//   STRATA_PROFILE_SCALE=N       N synthetic flights (the growth curve's, Dataset.scaledFlights)
//                                instead of the real ones
//   STRATA_PROFILE_ROUNDS=N      measured rounds (default 3; Benchmarks/perf-gate uses 1)
//   STRATA_PROFILE_WARMUP=N      unmeasured rounds first (default 0): the same calls, not
//                                through the region functions, so one-time costs (the Swift
//                                runtime's conformance and metadata caches, first use of a
//                                statement) stay out of callgrind's count
//   STRATA_PROFILE_STORE=path    Strata's store there (raw's at path + ".raw"), kept and reused
//                                by later runs: a fetch profile without the import before it
//                                (batch-insert always writes a store of its own)
//   STRATA_PROFILE_CACHE_KIB=N   SQLite's page cache of N KiB wherever a mode imports (the
//                                import modes' rounds, a store built first), on both sides
//                                (StoreOptions.cacheSizeKiB; raw: PRAGMA cache_size); the
//                                fetch modes' own connections keep the default
//   STRATA_PAGE_CHECKSUMS=0      Strata's store is made without page checksums (issue 18)
//   STRATA_PHASES=1              the import prints its two phases
//   STRATA_PERF_GATE_SLOWDOWN=N  N extra heap allocations per object read in Strata's fetch
//                                (StrataSide.fetchAllAndRead): a deliberate regression that
//                                Benchmarks/perf-gate must catch

enum Profile {
    /// Every mode: (name, what it runs). The raw modes use the raw store, the others Strata's.
    static let modes: [(name: String, summary: String)] = [
        ("import", "Strata: StrataSide.importAll (update context, typed subscripts, saveToStore)"),
        ("raw-import", "raw C API: RawDB.importAll (one transaction, prepared INSERTs)"),
        ("batch-insert", "Strata: every table by BatchInsertRequest (no objects), to-ones by ObjectID"),
        ("fetch", "Strata: fetch every flight, every attribute read through o[attribute:] (StrataSide.fetchAllAndRead)"),
        ("fetch-entity", "Strata: fetch every flight as TypedFlight, every attribute read through its @Entity property"),
        ("fetch-entity-observed", "Strata: fetch-entity in a context that observes objects (observesObjects, issue 49: a registrar per object, Observation's access per read)"),
        ("raw-fetch", "raw C API: every flight decoded into structs (RawDB.allFlights)"),
        ("grdb-fetch", "GRDB: every flight fetched as records (GRDBSide.allFlights) from the raw store"),
        ("predicate-typed", "Strata: FetchRequest<TypedFlight>(#Predicate { origin?.faa == \"JFK\" && (dep_delay ?? 0) > 60 }) built and fetched"),
        ("predicate-format", "Strata: Condition(\"origin.faa == %@ AND dep_delay > %@\") with \"JFK\", 60.0, parsed and fetched"),
        ("string", "Strata: fetch of tailnum BEGINSWITH[c] 'n1' (condition parsed outside)"),
        ("raw-string", "raw C API: tailnum LIKE 'n1%' decoded into structs"),
        ("frc", "Strata: results controller performFetch, sections by airline.name"),
        ("frc-change", "Strata: one flight moved within its section by an update context's save() into main, to a tracking controller's delegate (the frc change row; STRATA_PROFILE_CASCADE=1: saveToStore())"),
        ("raw-frc", "raw C API: the list's ordered IDs and GROUP BY section counts (RawDB.listIDsAndSections)"),
        ("batch-update", "Strata: BatchUpdateRequest minute = 0 where day <= 15 (on a copy of the store)"),
        ("raw-update", "raw C API: UPDATE Flight SET minute = 0, _version + 1 WHERE day <= 15 AND minute IS NOT 0 (on a copy)"),
        ("batch-delete", "Strata: BatchDeleteRequest of the flights where day > 15 (on a copy of the store)"),
        ("raw-delete", "raw C API: DELETE FROM Flight WHERE day > 15 (on a copy)"),
        ("migrate", "Strata: StoreCoordinator(model: v2, migration: .lightweight()) on a copy of the store (opening included)"),
        ("raw-migrate", "raw C API: open a copy of the store, ALTER TABLE ADD COLUMN in a transaction"),
        ("prepare", "builds the Strata and raw stores at STRATA_PROFILE_STORE (unmeasured) and exits"),
    ] + HistoryWorkloads.profileModes

    static func run(_ mode: String, data: Dataset) throws {
        guard modes.contains(where: { $0.name == mode }) else {
            throw VersusError("unknown STRATA_PROFILE mode '\(mode)'; modes:\n"
                + modes.map { "  \($0.name): \($0.summary)" }.joined(separator: "\n"))
        }
        let environment = ProcessInfo.processInfo.environment
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-profile-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let kept = environment["STRATA_PROFILE_STORE"].map { URL(fileURLWithPath: $0) }
        let strataURL = kept ?? folder.appendingPathComponent("flights.sqlite")
        let rawPath = strataURL.path + ".raw"
        // batch-insert writes a store of its own, always in this process's folder: the kept store
        // is the prepared one other modes (run at the same time by Benchmarks/perf-gate) read.
        let batchInsertURL = folder.appendingPathComponent("batch-insert.sqlite")
        // The growth curve's synthetic flights instead of the real ones (a 1,000,000-row import).
        let flights = environment["STRATA_PROFILE_SCALE"].flatMap(Int.init).map(data.scaledFlights) ?? data.flights
        let rounds = environment["STRATA_PROFILE_ROUNDS"].flatMap(Int.init) ?? 3
        let warmup = environment["STRATA_PROFILE_WARMUP"].flatMap(Int.init) ?? 0
        let isRaw = mode.hasPrefix("raw-")
        let cacheKiB = environment["STRATA_PROFILE_CACHE_KIB"].flatMap(Int.init)
        // The history modes read a store of their own (History.swift), not the flights:
        // STRATA_PROFILE_STORE names it (history-prepare builds it), else one is built here first.
        if HistoryWorkloads.profileModes.contains(where: { $0.name == mode }) {
            try HistoryWorkloads.profile(mode, store: kept ?? folder.appendingPathComponent("history.sqlite"), rounds: rounds, warmup: warmup)
            say(peakLinePrefix + (peakResidentBytes().map(String.init) ?? "unknown"))
            return
        }
        // Touched before any region, so that its one-time initialisation is not counted.
        _ = StrataSide.perfGateSlowdown

        func strataStore(fresh: Bool, measured: Bool = false) throws {
            if !fresh, FileManager.default.fileExists(atPath: strataURL.path) { return }
            removeStore(strataURL.path)
            var options = StoreOptions()
            options.pageChecksums = environment["STRATA_PAGE_CHECKSUMS"] != "0"
            options.cacheSizeKiB = cacheKiB
            let container = try PersistentContainer(model: StrataSide.model, url: strataURL, options: options)
            let (update, seconds) = try timed {
                measured ? try strataRegionImport(data, flights, container) : try StrataSide.importAll(data, flights: flights, into: container)
            }
            withExtendedLifetime(update) {}
            container.coordinator.close()
            say("import \(flights.count) flights \(seconds)")
        }
        func rawStore(fresh: Bool, measured: Bool = false) throws {
            if !fresh, FileManager.default.fileExists(atPath: rawPath) { return }
            removeStore(rawPath)
            let db = try RawDB(path: rawPath)
            if let cacheKiB { try db.execute("PRAGMA cache_size=-\(cacheKiB)") }
            try db.createSchema()
            let (_, seconds) = try timed { measured ? try rawRegionImport(db, data, flights) : try db.importAll(data, flights: flights) }
            say("raw import \(flights.count) flights \(seconds)")
        }

        if mode == "prepare" {
            guard kept != nil else { throw VersusError("STRATA_PROFILE=prepare needs STRATA_PROFILE_STORE") }
            try strataStore(fresh: true)
            try rawStore(fresh: true)
            return
        }
        // A temporary store is built in the first round (a kept one only when missing).
        if mode != "import", mode != "raw-import", mode != "batch-insert" {
            if isRaw { try rawStore(fresh: kept == nil) } else { try strataStore(fresh: kept == nil) }
        }
        let checksum = flightsChecksum(flights)
        let jfk = data.airports.first { $0.faa == "JFK" }!.pk
        let jfkCount = flights.filter { $0.origin == jfk && ($0.depDelay ?? -.infinity) > 60 }.count
        let tailnumCount = flights.filter { $0.tailnum?.lowercased().hasPrefix("n1") ?? false }.count
        let tailnumPrefix = try StrataSide.tailnumPrefix()
        let updateCount = flights.batchUpdateCount
        let deleteCount = flights.batchDeleteCount
        /// A copy of the prepared store (Strata's or raw's), which a mutating mode may change.
        func copyOfStore(raw: Bool) throws -> String {
            let source = raw ? rawPath : strataURL.path
            let copy = folder.appendingPathComponent(raw ? "mutated.raw" : "mutated.sqlite").path
            removeStore(copy)
            // Other processes may have the source open (Benchmarks/perf-gate runs two modes at
            // once). The last of them to close checkpoints the WAL into the database file and
            // deletes it; a copy taken meanwhile would hold the file without the WAL's pages.
            // A read transaction held here for the copy keeps this process a reader, so nobody
            // else is the last to close. The copy's flights are counted too: CI twice ran
            // batch-update on a store with no flights, because batch-insert, run at the same
            // time, was rebuilding the prepared store in place (it now writes its own).
            let holder = try RawDB(path: source)
            try holder.execute("BEGIN")
            let flightRows = try holder.count("Flight")
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
                // Read and written whole (4.5 MB at the gate's size), then compared by size: no
                // reliance on how FileManager's copy behaves on this file system.
                let bytes = try Data(contentsOf: URL(fileURLWithPath: source + suffix))
                try bytes.write(to: URL(fileURLWithPath: copy + suffix))
                let written = (try FileManager.default.attributesOfItem(atPath: copy + suffix)[.size] as? NSNumber)?.intValue
                try expect(written == bytes.count, "copying \(source + suffix) wrote \(written ?? -1) of its \(bytes.count) bytes")
            }
            try holder.execute("COMMIT")
            try expect(flightRows == flights.count, "the store to copy, \(source), holds \(flightRows) flights, expected \(flights.count)")
            return copy
        }

        var changeFixture: ChangeFixture?
        defer { changeFixture?.close() }
        for round in 0..<(warmup + rounds) {
            // The warm-up rounds call the same code, not through the region functions.
            let measured = round >= warmup
            let tag = measured ? "" : "(warm-up) "
            switch mode {
            case "import":
                try strataStore(fresh: true, measured: measured)
            case "raw-import":
                try rawStore(fresh: true, measured: measured)
            case "batch-insert":
                removeStore(batchInsertURL.path)
                var options = StoreOptions()
                options.pageChecksums = environment["STRATA_PAGE_CHECKSUMS"] != "0"
                let coordinator = try StoreCoordinator(model: StrataSide.model, url: batchInsertURL, options: options)
                let (count, seconds) = try timed {
                    measured ? try strataRegionBatchInsert(data, flights, coordinator) : try StrataSide.batchImportAll(data, flights: flights, into: coordinator)
                }
                coordinator.close()
                try expect(count == flights.count, "batch insert wrote \(count) flights, expected \(flights.count)")
                say(tag + "batch-insert \(count) flights \(seconds)")
            case "fetch":
                let coordinator = try StoreCoordinator(model: StrataSide.model, url: strataURL)
                let (result, seconds) = try timed {
                    measured ? try strataRegionFetch(coordinator.newContext()) : try StrataSide.fetchAllAndRead(coordinator.newContext())
                }
                coordinator.close()
                try expect(result.objects.count == flights.count && checksumMatches(result.checksum, checksum),
                           "fetch read \(result.objects.count) flights, checksum \(result.checksum), expected \(flights.count), \(checksum)")
                say(tag + "fetch \(result.objects.count) \(seconds)")
            case "fetch-entity":
                let coordinator = try StoreCoordinator(model: TypedSide.model, url: strataURL)
                let (result, seconds) = try timed {
                    measured ? try strataRegionFetchEntity(coordinator.newContext()) : try TypedSide.fetchAllAndRead(coordinator.newContext())
                }
                coordinator.close()
                try expect(result.objects.count == flights.count && checksumMatches(result.checksum, checksum),
                           "fetch-entity read \(result.objects.count) flights, checksum \(result.checksum), expected \(flights.count), \(checksum)")
                say(tag + "fetch-entity \(result.objects.count) \(seconds)")
            case "fetch-entity-observed":
                let coordinator = try StoreCoordinator(model: TypedSide.model, url: strataURL)
                func observing() -> ManagedObjectContext {
                    let context = coordinator.newContext()
                    context.performAndWait { context.observesObjects = true }
                    return context
                }
                let (result, seconds) = try timed {
                    measured ? try strataRegionFetchEntityObserved(observing()) : try TypedSide.fetchAllAndRead(observing())
                }
                coordinator.close()
                try expect(result.objects.count == flights.count && checksumMatches(result.checksum, checksum),
                           "fetch-entity-observed read \(result.objects.count) flights, checksum \(result.checksum), expected \(flights.count), \(checksum)")
                say(tag + "fetch-entity-observed \(result.objects.count) \(seconds)")
            case "raw-fetch":
                let db = try RawDB(path: rawPath)
                let (rows, seconds) = try timed { measured ? try rawRegionFetch(db) : try db.allFlights() }
                try expect(rows == flights, "raw fetch read \(rows.count) flights that differ from the CSV's")
                say(tag + "raw fetch \(rows.count) \(seconds)")
            case "predicate-typed":
                let coordinator = try StoreCoordinator(model: TypedSide.model, url: strataURL)
                // A warm-up round shows the statement the predicate became.
                let trace = TraceLog()
                if !measured { coordinator.setTrace { trace.append($0) } }
                defer { for sql in trace.all where sql.hasPrefix("SELECT") && sql.contains("\"Flight\"") { say("(warm-up) SQL: \(sql)") } }
                let (objects, seconds) = try timed {
                    measured ? try strataRegionPredicateTyped(coordinator.newContext()) : try TypedSide.fetchJFKDelayed(coordinator.newContext())
                }
                coordinator.close()
                try expect(objects.count == jfkCount, "#Predicate found \(objects.count), expected \(jfkCount)")
                say(tag + "predicate-typed \(objects.count) \(seconds)")
            case "predicate-format":
                let coordinator = try StoreCoordinator(model: TypedSide.model, url: strataURL)
                // A warm-up round shows the statement the predicate became.
                let trace = TraceLog()
                if !measured { coordinator.setTrace { trace.append($0) } }
                defer { for sql in trace.all where sql.hasPrefix("SELECT") && sql.contains("\"Flight\"") { say("(warm-up) SQL: \(sql)") } }
                let (objects, seconds) = try timed {
                    measured ? try strataRegionPredicateFormat(coordinator.newContext()) : try TypedSide.fetchJFKDelayedFormat(coordinator.newContext())
                }
                coordinator.close()
                try expect(objects.count == jfkCount, "format predicate found \(objects.count), expected \(jfkCount)")
                say(tag + "predicate-format \(objects.count) \(seconds)")
            case "string":
                let coordinator = try StoreCoordinator(model: StrataSide.model, url: strataURL)
                let (objects, seconds) = try timed {
                    measured ? try strataRegionString(coordinator.newContext(), tailnumPrefix) : try StrataSide.fetch(coordinator.newContext(), tailnumPrefix)
                }
                coordinator.close()
                try expect(objects.count == tailnumCount, "string fetch found \(objects.count), expected \(tailnumCount)")
                say(tag + "string \(objects.count) \(seconds)")
            case "grdb-fetch":
                let queue = try GRDBSide.openPath(rawPath)
                let (rows, seconds) = try timed { measured ? try grdbRegionFetch(queue) : try GRDBSide.allFlights(queue) }
                try expect(rows == flights, "GRDB fetch read \(rows.count) flights that differ from the CSV's")
                say(tag + "grdb-fetch \(rows.count) \(seconds)")
            case "raw-string":
                let db = try RawDB(path: rawPath)
                let (rows, seconds) = try timed { measured ? try rawRegionString(db) : try db.tailnumPrefix() }
                try expect(rows.count == tailnumCount, "raw string fetch found \(rows.count), expected \(tailnumCount)")
                say(tag + "raw-string \(rows.count) \(seconds)")
            case "frc":
                let container = try PersistentContainer(model: StrataSide.model, url: strataURL)
                let (list, seconds) = try timed { measured ? try strataRegionFRC(container) : try StrataSide.openList(container) }
                container.coordinator.close()
                say(tag + "frc \(list.sections.count) sections \(seconds)")
            case "frc-change":
                // One fixture (a tracking controller over the whole list) for every round.
                if changeFixture == nil { changeFixture = try ChangeFixture(url: strataURL) }
                let cascade = environment["STRATA_PROFILE_CASCADE"] == "1"
                let seconds = try changeFixture!.moveTarget(cascade: cascade) { save in
                    measured ? try strataRegionFRCChange(save) : try save()
                }
                say(tag + "frc-change \(changeFixture!.rowCount) rows \(seconds * 1e6) µs")
            case "raw-frc":
                let db = try RawDB(path: rawPath)
                let (list, seconds) = try timed { measured ? try rawRegionFRC(db) : try db.listIDsAndSections() }
                say(tag + "raw-frc \(list.sections.count) sections \(seconds)")
            case "batch-update", "batch-delete":
                let coordinator = try StoreCoordinator(model: StrataSide.model, url: URL(fileURLWithPath: try copyOfStore(raw: false)))
                let (count, seconds) = try timed {
                    mode == "batch-update"
                        ? (measured ? try strataRegionBatchUpdate(coordinator) : try StrataSide.batchUpdateMinutes(coordinator))
                        : (measured ? try strataRegionBatchDelete(coordinator) : try StrataSide.batchDeleteLateDays(coordinator))
                }
                coordinator.close()
                let expected = mode == "batch-update" ? updateCount : deleteCount
                try expect(count == expected, "\(mode) changed \(count) flights, expected \(expected)")
                say(tag + "\(mode) \(count) \(seconds)")
            case "raw-update", "raw-delete":
                let db = try RawDB(path: try copyOfStore(raw: true))
                let (count, seconds) = try timed {
                    mode == "raw-update"
                        ? (measured ? try rawRegionUpdate(db) : try db.updateMinutes())
                        : (measured ? try rawRegionDelete(db) : try db.deleteLateDays())
                }
                let expected = mode == "raw-update" ? updateCount : deleteCount
                try expect(count == expected, "\(mode) changed \(count) flights, expected \(expected)")
                say(tag + "\(mode) \(count) \(seconds)")
            case "migrate":
                let url = URL(fileURLWithPath: try copyOfStore(raw: false))
                let (coordinator, seconds) = try timed {
                    measured ? try strataRegionMigrate(url) : try StrataSide.migrateToV2(url)
                }
                defer { coordinator.close() }
                try expect(try coordinator.metadata().modelHash == StrataSide.modelV2.versionHash, "the store was not migrated")
                say(tag + "migrate \(seconds)")
            case "raw-migrate":
                let path = try copyOfStore(raw: true)
                let (db, seconds) = try timed { measured ? try rawRegionMigrate(path) : try RawDB.migrateToV2(path) }
                withExtendedLifetime(db) {}
                say(tag + "raw-migrate \(seconds)")
            default:
                throw VersusError("STRATA_PROFILE mode '\(mode)' has no round")
            }
        }
        // The process's peak resident memory, read before the check below opens anything:
        // the line `Runner`'s peak-RSS rows parse (`childPeakResidentBytes(mode:)`).
        let peak = peakResidentBytes()
        if ["import", "raw-import", "batch-insert"].contains(mode) {
            let written = switch mode {
            case "raw-import": rawPath
            case "batch-insert": batchInsertURL.path
            default: strataURL.path
            }
            let db = try RawDB(path: written)
            let counts = try ["Flight", "Airline", "Airport", "Plane"].map { try db.count($0) }
            let expected = [flights.count, data.airlines.count, data.airports.count, data.planes.count]
            try expect(counts == expected, "\(mode) wrote \(counts) rows (flights, airlines, airports, planes), expected \(expected)")
        }
        say(peakLinePrefix + (peak.map(String.init) ?? "unknown"))
    }

    /// The start of the line every mode prints last: its peak resident bytes (`VmHWM`).
    static let peakLinePrefix = "strata-profile peak resident bytes (VmHWM): "

    /// Runs this executable again with `STRATA_PROFILE=mode` (one round, all the flights, a
    /// temporary store) and returns the child's peak resident bytes, which include parsing the
    /// CSV as every mode does. The child checks what it wrote (row counts) and fails otherwise.
    static func childPeakResidentBytes(mode: String) throws -> Int {
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("STRATA_PROFILE") || key == "STRATA_PAGE_CHECKSUMS" || key == "STRATA_PHASES" {
            environment[key] = nil
        }
        environment["STRATA_PROFILE"] = mode
        environment["STRATA_PROFILE_ROUNDS"] = "1"
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw VersusError("STRATA_PROFILE=\(mode) (child process) exited with \(process.terminationStatus):\n\(output)")
        }
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix(peakLinePrefix) }),
              let bytes = Int(line.dropFirst(peakLinePrefix.count)) else {
            throw VersusError("STRATA_PROFILE=\(mode) (child process) printed no peak resident bytes:\n\(output)")
        }
        return bytes
    }

    private static func removeStore(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    private static func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw VersusError(message()) }
    }
}

// MARK: Measured regions
//
// One function per mode, each calling exactly what the mode measures. `@_silgen_name` fixes the
// symbol (callgrind's `--toggle-collect=strata_profile_region_fetch`, no mangled name to look
// up), `@inline(never)` keeps the call, and `@_optimize(none)` keeps the optimiser from
// replacing the function by a specialised clone under another name (it did that to
// `RawDB.importAll`). The wrappers are one call each: what they call is optimised as usual.
// The regions return what they built, so that releasing it is not counted.

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_import")
func strataRegionImport(_ data: Dataset, _ flights: [Flight], _ container: PersistentContainer) throws -> ManagedObjectContext {
    try StrataSide.importAll(data, flights: flights, into: container)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_import")
func rawRegionImport(_ db: RawDB, _ data: Dataset, _ flights: [Flight]) throws {
    try db.importAll(data, flights: flights)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_fetch")
func strataRegionFetch(_ context: ManagedObjectContext) throws -> (objects: [ManagedObject], checksum: Double) {
    try StrataSide.fetchAllAndRead(context)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_fetch_entity")
func strataRegionFetchEntity(_ context: ManagedObjectContext) throws -> (objects: [TypedFlight], checksum: Double) {
    try TypedSide.fetchAllAndRead(context)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_fetch_entity_observed")
func strataRegionFetchEntityObserved(_ context: ManagedObjectContext) throws -> (objects: [TypedFlight], checksum: Double) {
    // Its own body (not folded into fetch-entity's by the linker: callgrind needs its symbol).
    precondition(context.performAndWait { context.observesObjects }, "fetch-entity-observed needs an observing context")
    return try TypedSide.fetchAllAndRead(context)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_fetch")
func rawRegionFetch(_ db: RawDB) throws -> [Flight] {
    try db.allFlights()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_grdb_fetch")
func grdbRegionFetch(_ queue: DatabaseQueueHandle) throws -> [Flight] {
    try GRDBSide.allFlights(queue)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_predicate_typed")
func strataRegionPredicateTyped(_ context: ManagedObjectContext) throws -> [TypedFlight] {
    try TypedSide.fetchJFKDelayed(context)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_predicate_format")
func strataRegionPredicateFormat(_ context: ManagedObjectContext) throws -> [ManagedObject] {
    try TypedSide.fetchJFKDelayedFormat(context)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_string")
func strataRegionString(_ context: ManagedObjectContext, _ condition: Condition) throws -> [ManagedObject] {
    try StrataSide.fetch(context, condition)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_string")
func rawRegionString(_ db: RawDB) throws -> [Flight] {
    try db.tailnumPrefix()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_frc")
func strataRegionFRC(_ container: PersistentContainer) throws
    -> (sections: [(name: String, count: Int)], servedFromCache: Bool, controller: FetchedResultsController<ManagedObject>) {
    try StrataSide.openList(container)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_frc_change")
func strataRegionFRCChange(_ save: () throws -> Void) throws {
    try save()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_frc")
func rawRegionFRC(_ db: RawDB) throws -> (ids: [Int64], sections: [(name: String, count: Int)]) {
    try db.listIDsAndSections()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_batch_update")
func strataRegionBatchUpdate(_ coordinator: StoreCoordinator) throws -> Int {
    try StrataSide.batchUpdateMinutes(coordinator)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_update")
func rawRegionUpdate(_ db: RawDB) throws -> Int {
    try db.updateMinutes()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_batch_delete")
func strataRegionBatchDelete(_ coordinator: StoreCoordinator) throws -> Int {
    try StrataSide.batchDeleteLateDays(coordinator)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_delete")
func rawRegionDelete(_ db: RawDB) throws -> Int {
    try db.deleteLateDays()
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_migrate")
func strataRegionMigrate(_ url: URL) throws -> StoreCoordinator {
    try StrataSide.migrateToV2(url)
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_raw_migrate")
func rawRegionMigrate(_ path: String) throws -> RawDB {
    try RawDB.migrateToV2(path)
}

extension StrataSide {
    /// The lightweight migration the benchmark measures: the v1 store opened with the v2 model.
    static func migrateToV2(_ url: URL) throws -> StoreCoordinator {
        var options = StoreOptions()
        options.migration = .lightweight()
        return try StoreCoordinator(model: StrataSide.modelV2, url: url, options: options)
    }
}

extension RawDB {
    /// The raw twin of `StrataSide.migrateToV2`: open, then add the column in a transaction.
    static func migrateToV2(_ path: String) throws -> RawDB {
        let db = try RawDB(path: path)
        try db.addStatusColumn()
        return db
    }
}
