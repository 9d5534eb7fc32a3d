import Foundation
import Strata
import StrataTestSupport
import Testing

/// A carrier, found by its code when a flight row names it (`--map airline=carrier.carrier`).
@Entity final class ImportedCarrier: ManagedObject {
    @Attribute(.unique) var carrier: String
    var name: String = ""
    @Relationship(inverse: \ImportedFlight.carrier) var flights: Set<ImportedFlight> = []
}

/// A flight as the import files give it, matched by its code.
@Entity final class ImportedFlight: ManagedObject {
    @Attribute(.unique) var code: String
    var seats: Int64 = 0
    var price: Double = 0
    var origin: String = ""
    var departure: Date!
    var carrier: ImportedCarrier?
}

/// The resumable import with the real `strata` binary as child processes (Foundation `Process`):
///
/// - `killedImportsEndEqualToAnUninterruptedOne`: `strata import` SIGKILLed again and again at
///   random moments (while it starts, mid-batch, between batches), then run to its end, leaves the
///   store and the rejects file equal to one uninterrupted run's, with every row inserted exactly
///   once (the history) and none updated.
/// - `twoImportersWithOverlappingKeysLeaveNoDuplicate`: two imports at once, their keys
///   overlapping: no duplicate key, each row whole from one file.
/// - `aControllerWatchingAnImportInAnotherProcessSeesUpdates`: a results controller in this
///   process follows an import in another, and an upsert reaches it as updates only.
///
/// A plain `swift test` runs them at the sizes `.ci/run` checks (about 80 s on 2 cores): 100
/// kills (`STRATA_IMPORT_KILLS`) and 3 race rounds (`STRATA_IMPORT_RACE_ROUNDS`); set either
/// lower for a quick local run. The killed import's file has as many rows (2,000 to 20,000) as
/// the binary imports in about 0.7 s, measured first (100 kills take about 80 times as long as
/// one uninterrupted import, whatever the build and the machine's load); `STRATA_IMPORT_ROWS`
/// fixes it. `STRATA_IMPORT_SEED` changes the seed. Each test prints one summary line
/// (`import-kill: runs=N kills=N equal=true duplicates=0`, `import-race: rounds=N rows=9000
/// duplicates=0`, `import-live: updates=N inserts=0 deletes=0`) and a line of details.
@Suite(.serialized)
struct ImportProcessTests {
    static let environment = ProcessInfo.processInfo.environment
    static let minimumKills = environment["STRATA_IMPORT_KILLS"].flatMap { Int($0) } ?? 100
    static let raceRounds = environment["STRATA_IMPORT_RACE_ROUNDS"].flatMap { Int($0) } ?? 3
    static let seed = environment["STRATA_IMPORT_SEED"].flatMap { UInt64($0) } ?? 0x494D_504F_5254
    /// Rows in the killed import's file (a few of them bad): `STRATA_IMPORT_ROWS`, else as many
    /// (2,000 to 20,000) as the binary imports in about ``killReferenceTarget`` (measured first),
    /// so that the kills fit the run's budget whatever the build.
    static let killRows = environment["STRATA_IMPORT_ROWS"].flatMap { Int($0) }
    /// How long the uninterrupted import should take: 100 kills take about 80 times as long.
    static let killReferenceTarget: Duration = .milliseconds(700)
    static let carriers = ["AA", "AF", "AZ", "BA", "DL", "EK", "IB", "KL", "LH", "LX", "OS", "QF", "SK", "SQ", "TP", "UA"]
    /// Origins, some of which need quoting in CSV: a comma, quotes, a line break, non-ASCII.
    static let origins = ["Lisbon", "Rome, Fiumicino", "Chicago \"O'Hare\"", "Terminal 2\nGate 14", "São Paulo", "Zürich",
                          "Oslo", "Kraków", "New York JFK", "Tokyo Haneda", "Madrid", "Sydney"]

    static func model() throws -> Model { try Model(version: "1", types: [ImportedCarrier.self, ImportedFlight.self]) }

    // MARK: 1. Killed imports

    @Test func killedImportsEndEqualToAnUninterruptedOne() throws {
        let clock = ContinuousClock()
        let started = clock.now
        let directory = TemporaryDirectory(inMemory: "strata-import-kill")
        let template = directory.file("template.sqlite")
        try Self.makeStore(at: template)
        let rows = try Self.killRows ?? Self.calibratedRows(directory: directory, template: template)
        let file = FlightFile(keys: 0..<rows, variant: 0, seed: Self.seed, badRows: 7)
        let csv = directory.file("flights.csv")
        try Data(file.text.utf8).write(to: csv)

        // The reference: one run, not interrupted.
        let reference = directory.file("reference.sqlite")
        try Self.copyStore(template, to: reference)
        let referenceRejects = directory.file("reference-rejects.csv")
        let referenceStart = clock.now
        let referenceRun = try ImportRun(Self.importArguments(store: reference, csv: csv, batch: 500, rejects: referenceRejects, json: true),
                                         directory: directory, label: "reference").finish()
        let referenceTime = clock.now - referenceStart
        try #require(referenceRun.exitedNormally && referenceRun.status == 0, "the reference import: \(referenceRun)")
        let referenceSummary = try referenceRun.summary()
        #expect(referenceSummary.inserted == file.rows.count && referenceSummary.rejected == file.badLines.count
                    && referenceSummary.updated == 0 && referenceSummary.commits == (rows + 499) / 500,
                "\(referenceRun)")
        #expect(referenceSummary.ignoredColumns == ["remark"])
        let expected = try Self.readStore(reference)
        #expect(expected.flights == file.rows, "the reference store does not hold the file's good rows")
        let rejectsBytes = try Data(contentsOf: referenceRejects)
        let rejectLines = String(decoding: rejectsBytes, as: UTF8.self).split(separator: "\n").dropFirst()
        // (Within a batch, rows whose to-one is not found come after those that did not parse.)
        #expect(rejectLines.compactMap { Int($0.prefix { $0 != "," }) }.sorted() == file.badLines, "\(String(decoding: rejectsBytes, as: UTF8.self))")
        let referenceBatches = expected.history.batches

        // Killed again and again, on fresh stores; each store that an import finishes is checked.
        let limit = referenceTime * 1.2
        var rng = SplitMix64(seed: Self.seed)
        var runs = 0, kills = 0, finishedStores = 0, early = 0, killsOfThisStore = 0, killsAfterAKill = 0
        var quartiles = [0, 0, 0, 0]
        var store = directory.file("killed-0.sqlite")
        try Self.copyStore(template, to: store)
        let rejects = directory.file("rejects.csv")
        var problems: [String] = []
        var checking = Duration.zero
        func check(_ store: URL, _ label: String) throws {
            let checkStart = clock.now
            defer { checking += clock.now - checkStart }
            let found = try Self.readStore(store)
            if found.digest != expected.digest || found.flights != expected.flights {
                problems.append("\(label): the store (digest \(found.digest), \(found.flights.count) rows) is not the reference's (digest \(expected.digest), \(expected.flights.count) rows)")
            }
            if found.duplicates != 0 { problems.append("\(label): \(found.duplicates) duplicate codes") }
            if let problem = found.history.problem(rows: found.flights.count) { problems.append("\(label): \(problem)") }
            if found.history.batches != referenceBatches {
                problems.append("\(label): \(found.history.batches.count) import transactions, not the reference's \(referenceBatches.count) with the same rows each")
            }
            if try Data(contentsOf: rejects) != rejectsBytes { problems.append("\(label): the rejects file differs from the reference's") }
        }
        while kills < Self.minimumKills && problems.isEmpty {
            // Some kills early (while the binary starts, opens the store, reads its first batch);
            // the rest anywhere in the run and a little past its length.
            let fraction = rng.chance(0.2) ? Double(rng.int(0...1_000)) / 10_000 : Double(rng.int(0...10_000)) / 10_000
            let delay = limit * fraction
            runs += 1
            let run = try ImportRun(Self.importArguments(store: store, csv: csv, batch: 500, rejects: rejects, quiet: true, json: true),
                                    directory: directory, label: "run").finish(killingAfter: delay)
            if run.killedByUs {
                kills += 1
                if killsOfThisStore > 0 { killsAfterAKill += 1 }
                killsOfThisStore += 1
                quartiles[min(3, Int(fraction * 4))] += 1
                if fraction < 0.1 { early += 1 }
                continue
            }
            guard run.exitedNormally, run.status == 0 else {
                problems.append("run \(runs) (delay \(delay)): \(run)")
                break
            }
            // Where the last kill's committed batches ended: no row before it read again.
            guard let summary = try? run.summary() else {
                problems.append("run \(runs) printed no summary: \(run)")
                break
            }
            if summary.unchanged != 0 || summary.updated != 0 {
                problems.append("run \(runs) read rows an earlier run had committed: \(summary)")
            }
            // It finished by itself: check that store, then go on with a fresh one.
            finishedStores += 1
            killsOfThisStore = 0
            try check(store, "store \(finishedStores - 1), finished by run \(runs)")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
            store = directory.file("killed-\(finishedStores).sqlite")
            try Self.copyStore(template, to: store)
        }
        // Then to its end, not interrupted.
        runs += 1
        let last = try ImportRun(Self.importArguments(store: store, csv: csv, batch: 500, rejects: rejects, quiet: true, json: true),
                                 directory: directory, label: "last").finish()
        #expect(last.exitedNormally && last.status == 0, "the last import: \(last)")
        if let summary = try? last.summary(), summary.unchanged != 0 || summary.updated != 0 {
            problems.append("the last run read rows an earlier run had committed: \(summary)")
        }
        try check(store, "the last store")
        // Run again over the finished store: nothing to do, nothing committed.
        let generation = try Self.generation(of: store)
        let again = try ImportRun(Self.importArguments(store: store, csv: csv, batch: 500, rejects: rejects, json: true),
                                  directory: directory, label: "again").finish()
        #expect(again.exitedNormally && again.status == 0, "the import run again: \(again)")
        #expect(try again.summary().alreadyComplete, "\(again)")
        #expect(try Self.generation(of: store) == generation)

        let final = try Self.readStore(store)
        let equal = try final.digest == expected.digest && final.flights == expected.flights
            && Data(contentsOf: rejects) == rejectsBytes && final.history.batches == referenceBatches
        print("import-kill: runs=\(runs) kills=\(kills) equal=\(equal) duplicates=\(final.duplicates)")
        print("import-kill spread: q1=\(quartiles[0]) q2=\(quartiles[1]) q3=\(quartiles[2]) q4=\(quartiles[3]) early=\(early) after-a-kill=\(killsAfterAKill) "
              + "finished-stores=\(finishedStores) checking-ms=\(Self.milliseconds(checking)) reference-ms=\(Self.milliseconds(referenceTime)) limit-ms=\(Self.milliseconds(limit)) "
              + "rows=\(rows) rejected=\(file.badLines.count) seconds=\(String(format: "%.1f", Double(Self.milliseconds(clock.now - started)) / 1000)) seed=\(Self.seed)")
        for problem in problems.prefix(10) { print("import-kill problem: \(problem)") }
        #expect(problems.isEmpty, "\(problems.prefix(5).joined(separator: "\n"))")
        #expect(equal && final.duplicates == 0 && kills >= Self.minimumKills)
    }

    // MARK: 2. Two importers at once

    @Test func twoImportersWithOverlappingKeysLeaveNoDuplicate() throws {
        let directory = TemporaryDirectory(inMemory: "strata-import-race")
        // Each file long enough, and its batches small enough, that the two importers run at the
        // same time for many commits each (with one statement a row, 6,000 rows in batches of
        // 250 took tens of milliseconds: one importer could finish before the other started).
        let (perFile, overlap) = (12_000, 6_000)
        let total = 2 * perFile - overlap
        let a = FlightFile(keys: 0..<perFile, variant: 0, seed: Self.seed, badRows: 0)
        // B runs from its last key down, so that the two meet inside the overlap: each file's
        // rows are written there first by one importer, then written over by the other.
        let b = FlightFile(keys: (perFile - overlap)..<total, variant: 1, seed: Self.seed, badRows: 0, descending: true)
        let aURL = directory.file("a.csv"), bURL = directory.file("b.csv")
        try Data(a.text.utf8).write(to: aURL)
        try Data(b.text.utf8).write(to: bURL)
        let aRows = Dictionary(uniqueKeysWithValues: a.rows.map { ($0.code, $0) })
        let bRows = Dictionary(uniqueKeysWithValues: b.rows.map { ($0.code, $0) })
        var rows = 0, duplicates = 0, fromA = 0, fromB = 0, racedRounds = 0
        for round in 0..<Self.raceRounds {
            let store = directory.file("race-\(round).sqlite")
            try Self.makeStore(at: store)
            // Started together; batches of different sizes so that their commits interleave.
            let first = try ImportRun(Self.importArguments(store: store, csv: aURL, batch: 60, json: true), directory: directory, label: "a-\(round)")
            let second = try ImportRun(Self.importArguments(store: store, csv: bURL, batch: 97, json: true), directory: directory, label: "b-\(round)")
            let (endA, endB) = (first.finish(), second.finish())
            try #require(endA.exitedNormally && endA.status == 0, "round \(round), import A: \(endA)")
            try #require(endB.exitedNormally && endB.status == 0, "round \(round), import B: \(endB)")
            let (summaryA, summaryB) = (try endA.summary(), try endB.summary())
            #expect(summaryA.inserted + summaryB.inserted == total && summaryA.rejected + summaryB.rejected == 0,
                    "round \(round): A \(summaryA), B \(summaryB)")
            #expect(summaryA.inserted + summaryA.updated + summaryA.unchanged == perFile && summaryB.inserted + summaryB.updated + summaryB.unchanged == perFile)

            let found = try Self.readStore(store)
            rows = found.flights.count
            duplicates += found.duplicates
            #expect(found.flights.count == total && found.duplicates == 0, "round \(round): \(found.flights.count) rows, \(found.duplicates) duplicates")
            var wrong: [String] = []
            var (roundA, roundB) = (0, 0)
            for flight in found.flights {
                switch (aRows[flight.code], bRows[flight.code]) {
                case let (fileA?, fileB?):
                    if flight == fileA { roundA += 1 } else if flight == fileB { roundB += 1 } else { wrong.append("\(flight) is neither \(fileA) nor \(fileB)") }
                case let (only?, nil), let (nil, only?):
                    if flight != only { wrong.append("\(flight) is not its file's \(only)") }
                case (nil, nil):
                    wrong.append("\(flight) is in neither file")
                }
            }
            #expect(wrong.isEmpty, "round \(round): \(wrong.count) wrong rows: \(wrong.prefix(3).joined(separator: "; "))")
            #expect(found.history.deletes == 0 && found.history.inserts.values.allSatisfy { $0 == 1 } && found.history.inserts.count == total,
                    "round \(round): \(found.history.problem(rows: total) ?? "")")
            fromA += roundA
            fromB += roundB
            if roundA > 0 && roundB > 0 { racedRounds += 1 }
        }
        print("import-race: rounds=\(Self.raceRounds) rows=\(rows) duplicates=\(duplicates)")
        // How often the two met inside the overlap (each file's values kept on one side of the
        // meeting point): printed, not asserted. Since the importer parses inside its batches'
        // transactions, one importer's commits follow each other with almost no gap, and the
        // other, waiting in SQLite's busy handler, rarely gets the lock until the first is done
        // (0 rounds in most runs): the invariants above hold either way.
        print("import-race overlap: from-a=\(fromA) from-b=\(fromB) rounds-where-both-won-rows=\(racedRounds) seed=\(Self.seed)")
    }

    // MARK: 3. A results controller following an import

    @Test func aControllerWatchingAnImportInAnotherProcessSeesUpdates() throws {
        let clock = ContinuousClock()
        let directory = TemporaryDirectory(inMemory: "strata-import-live")
        let url = directory.file("flights.sqlite")
        let container = try PersistentContainer(model: Self.model(), url: url)
        defer { container.coordinator.close() }
        try Self.addCarriers(container.coordinator)
        let count = 4_000
        let a = FlightFile(keys: 0..<count, variant: 0, seed: Self.seed, badRows: 0)
        // A': the same keys, some prices changed.
        var rng = SplitMix64(seed: Self.seed ^ 0x4C49_5645)
        let changedKeys = Set((0..<count).filter { _ in rng.chance(0.12) })
        let changed = FlightFile(keys: 0..<count, variant: 0, seed: Self.seed, badRows: 0, repricing: changedKeys)
        let aURL = directory.file("a.csv"), changedURL = directory.file("a-changed.csv")
        try Data(a.text.utf8).write(to: aURL)
        try Data(changed.text.utf8).write(to: changedURL)

        let main = container.mainContext
        let recorder = ChangeRecorder()
        let controller = try main.performAndWait {
            let controller = FetchedResultsController(FetchRequest<ImportedFlight>(sortBy: [SortDescriptor(\.code)]), context: main)
            try controller.performFetch()
            controller.delegate = recorder
            return controller
        }
        /// The controller's rows as its objects give them (code and price), on main's queue.
        func shown() throws -> [String] {
            try main.performAndWait { try (controller.fetchedObjects ?? []).map { "\($0.code) \($0.price)" } }
        }
        /// Waits (up to 60 s) until the controller shows what a fresh fetch of the store gives.
        func waitForController(_ label: String) throws -> Bool {
            let fresh = try Self.readStore(url).flights.map { "\($0.code) \($0.price)" }
            let deadline = clock.now + .seconds(60)
            var current = try shown()
            while current != fresh, clock.now < deadline {
                usleep(20_000)
                current = try shown()
            }
            // Every commit merged and every report delivered before the recorder is read.
            let generation = try container.coordinator.currentHistoryToken().generation
            while container.coordinator.externalChangeStatistics.generation < generation, clock.now < deadline { usleep(1_000) }
            container.waitForPendingMerges()
            main.performAndWait {}
            #expect(current == fresh, "\(label): the controller shows \(current.count) rows, a fresh fetch \(fresh.count); first difference: \(zip(current, fresh).first { $0 != $1 }.map { "\($0)" } ?? "in the count")")
            return current == fresh
        }

        let insert = try ImportRun(Self.importArguments(store: url, csv: aURL, batch: 1_000, json: true), directory: directory, label: "insert").finish()
        try #require(insert.exitedNormally && insert.status == 0, "the first import: \(insert)")
        try #require(try insert.summary().inserted == count, "\(insert)")
        try #require(try waitForController("after the first import"))
        let first = recorder.drain()
        #expect(first.inserts == count && first.updates == 0 && first.deletes == 0 && first.moves == 0 && first.others.isEmpty,
                "the first import reached the controller as \(first)")

        let upsert = try ImportRun(Self.importArguments(store: url, csv: changedURL, batch: 200, json: true), directory: directory, label: "upsert").finish()
        try #require(upsert.exitedNormally && upsert.status == 0, "the second import: \(upsert)")
        let summary = try upsert.summary()
        #expect(summary.updated == changedKeys.count && summary.inserted == 0 && summary.unchanged == count - changedKeys.count, "\(upsert)")
        try #require(try waitForController("after the second import"))
        let second = recorder.drain()
        let changedIDs = try Set(Self.readStore(url).flights.filter { changedKeys.contains(Int($0.code.dropFirst())!) }.map(\.objectID))
        #expect(second.inserts == 0 && second.deletes == 0 && second.moves == 0 && second.others.isEmpty, "the second import reached the controller as \(second)")
        #expect(second.updates == changedKeys.count && second.updatedIDs == changedIDs,
                "\(second.updates) updates of \(second.updatedIDs.count) objects, \(changedKeys.count) rows changed")
        print("import-live: updates=\(second.updates) inserts=\(second.inserts) deletes=\(second.deletes)")
        print("import-live details: rows=\(count) changed=\(changedKeys.count) change-sets=\(first.changeSets)+\(second.changeSets) moves=\(second.moves) seed=\(Self.seed)")
    }
}

// MARK: - Files, stores, runs

extension ImportProcessTests {
    /// A flight as the store holds it, or as a file row gives it.
    struct Flight: Equatable, CustomStringConvertible {
        var objectID: ObjectID?
        var code: String
        var carrier: String?
        var seats: Int64
        var price: Double
        var origin: String
        var departure: Date?

        /// Equal values (the object ID is not a value).
        static func == (a: Flight, b: Flight) -> Bool {
            (a.code, a.carrier, a.seats, a.price.bitPattern, a.origin, a.departure) == (b.code, b.carrier, b.seats, b.price.bitPattern, b.origin, b.departure)
        }

        var line: String {
            "\(code)\t\(carrier ?? "-")\t\(seats)\t\(price.bitPattern)\t\(origin)\t\(departure.map { "\($0.timeIntervalSince1970)" } ?? "-")\n"
        }

        var description: String { line.dropLast().replacingOccurrences(of: "\n", with: "\\n") }
    }

    /// A generated CSV file: `keys`' rows in order (code `F` + the key in 6 digits), `badRows` of
    /// them broken in different ways, and the rows a store must hold after importing it.
    struct FlightFile {
        var text = "code,airline,seats,price,origin,departure,remark\n"
        var rows: [Flight] = []
        /// The lines of the bad rows (the header is line 1), ascending.
        var badLines: [Int] = []

        /// `variant` 1 gives every row other values than variant 0 in every column; `repricing`:
        /// the keys whose price differs from the variant's; `descending`: the rows from the last
        /// key to the first (`rows` in the file's order).
        init(keys: Range<Int>, variant: Int, seed: UInt64, badRows: Int, repricing: Set<Int> = [], descending: Bool = false) {
            let dates = ISO8601DateFormatter()
            var picker = SplitMix64(seed: seed &+ UInt64(keys.lowerBound) &* 31 &+ UInt64(keys.count))
            let bad = Set(picker.sample(Array(keys.dropFirst(10)), badRows))
            var badKind = 0
            var line = 2
            for key in descending ? Array(keys.reversed()) : Array(keys) {
                var rng = SplitMix64(seed: seed, stream: key)
                let carrierIndex = rng.int(0...(ImportProcessTests.carriers.count - 1))
                let originIndex = rng.int(0...(ImportProcessTests.origins.count - 1))
                var flight = Flight(code: String(format: "F%06ld", key),
                                    carrier: ImportProcessTests.carriers[(carrierIndex + variant) % ImportProcessTests.carriers.count],
                                    seats: Int64(rng.int(50...400) + variant * 7),
                                    price: Double(rng.int(2_000...90_000) + variant * 1_234) / 100,
                                    origin: ImportProcessTests.origins[(originIndex + variant) % ImportProcessTests.origins.count],
                                    departure: Date(timeIntervalSince1970: Double(1_700_000_000 + rng.int(0...30_000_000) + variant * 3_600)))
                if repricing.contains(key) { flight.price += Double(rng.int(1...5_000)) / 100 }
                var fields = [flight.code, flight.carrier!, "\(flight.seats)", "\(flight.price)", flight.origin,
                              dates.string(from: flight.departure!), "r\(key % 97)"]
                if bad.contains(key) {
                    switch badKind % 5 {
                    case 0: fields[3] = "n/a"                         // not a double
                    case 1: fields[2] = "12.5"                        // not an integer
                    case 2: fields[5] = "2024-13-45T08:00:00Z"        // not a date
                    case 3: fields[1] = "ZZ"                          // no such carrier
                    default: fields.removeLast(3)                     // too few fields
                    }
                    badKind += 1
                    badLines.append(line)
                } else {
                    rows.append(flight)
                }
                let record = fields.map(Self.csvField).joined(separator: ",")
                text += record + "\n"
                line += 1 + record.filter { $0 == "\n" }.count
            }
        }

        static func csvField(_ text: String) -> String {
            guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
            return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
    }

    /// The rows the kill test's file gets: a 1-row and a 2,000-row import timed (the binary's
    /// start and a row's cost), scaled to ``killReferenceTarget`` (a multiple of 500, from 2,000
    /// to 20,000).
    static func calibratedRows(directory: TemporaryDirectory, template: URL) throws -> Int {
        func time(_ rows: Int) throws -> Duration {
            let store = directory.file("calibration-\(rows).sqlite"), csv = directory.file("calibration-\(rows).csv")
            try copyStore(template, to: store)
            try Data(FlightFile(keys: 0..<rows, variant: 0, seed: seed, badRows: 0).text.utf8).write(to: csv)
            let started = ContinuousClock.now
            let run = try ImportRun(importArguments(store: store, csv: csv, batch: 500, quiet: true), directory: directory, label: "calibration").finish()
            let elapsed = ContinuousClock.now - started
            try #require(run.exitedNormally && run.status == 0, "the calibration import: \(run)")
            return elapsed
        }
        let start = try time(1)
        let perRow = max(try time(2_000) - start, .milliseconds(20)) / 2_000
        let rows = Int(max(killReferenceTarget - start, .zero) / perRow) / 500 * 500
        return min(20_000, max(2_000, rows))
    }

    /// A new store with the carriers, closed.
    static func makeStore(at url: URL) throws {
        let coordinator = try StoreCoordinator(model: model(), url: url)
        defer { coordinator.close() }
        try addCarriers(coordinator)
    }

    static func addCarriers(_ coordinator: StoreCoordinator) throws {
        let names = carriers
        try coordinator.execute(BatchInsertRequest(ImportedCarrier.self, count: names.count) { index, row in
            try row.set(\.carrier, names[index])
            try row.set(\.name, "Carrier \(names[index])")
        })
    }

    /// Copies a closed store (and its `-wal`, should one be left).
    static func copyStore(_ source: URL, to destination: URL) throws {
        for suffix in ["", "-wal"] {
            let from = URL(fileURLWithPath: source.path + suffix), to = URL(fileURLWithPath: destination.path + suffix)
            if FileManager.default.fileExists(atPath: from.path) { try FileManager.default.copyItem(at: from, to: to) }
        }
    }

    static func importArguments(store: URL, csv: URL, batch: Int, rejects: URL? = nil, quiet: Bool = false, json: Bool = false) -> [String] {
        ["import", store.path, "--entity", "ImportedFlight", csv.path, "--map", "airline=carrier.carrier", "--batch", String(batch)]
            + (rejects.map { ["--rejects", $0.path] } ?? []) + (quiet ? ["--quiet"] : []) + (json ? ["--json"] : [])
    }

    /// What a store holds: its flights by code, the duplicates among them, and the history.
    struct StoreContents {
        var flights: [Flight]
        var duplicates: Int
        var history: ImportHistory
        /// FNV-1a over every flight's values, by code.
        var digest: String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for flight in flights { for byte in flight.line.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 } }
            return String(hash, radix: 16)
        }
    }

    /// The flights' changes in a store's history.
    struct ImportHistory {
        /// How many inserts each flight has across all transactions.
        var inserts: [ObjectID: Int] = [:]
        var updates = 0
        var deletes = 0
        /// Each transaction that touched flights: the codes it inserted, in order.
        var batches: [[String]] = []
        var stored: Set<ObjectID> = []

        /// What is wrong, or `nil`: every stored flight inserted exactly once, none updated or deleted.
        func problem(rows: Int) -> String? {
            let twice = inserts.filter { $0.value != 1 }
            if !twice.isEmpty { return "\(twice.count) flights inserted more than once, e.g. \(twice.first!.key)" }
            if updates != 0 || deletes != 0 { return "\(updates) updates, \(deletes) deletes of flights in the history" }
            if Set(inserts.keys) != stored || stored.count != rows { return "the history inserted \(inserts.count) flights, the store holds \(stored.count)" }
            return nil
        }
    }

    /// Reads a store through a read-only coordinator: every flight sorted by code, and its history.
    static func readStore(_ url: URL) throws -> StoreContents {
        var options = StoreOptions()
        options.readOnly = true
        options.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: model(), url: url, options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "check")
        let flights = try context.performAndWait {
            try context.fetch(FetchRequest<ImportedFlight>(sortBy: [SortDescriptor(\.code)])).map { flight in
                Flight(objectID: flight.objectID, code: flight.code, carrier: flight.carrier?.carrier, seats: flight.seats, price: flight.price,
                       origin: flight.origin, departure: flight.departure)
            }
        }
        var perCode: [String: Int] = [:]
        for flight in flights { perCode[flight.code, default: 0] += 1 }
        let codes = Dictionary(flights.map { ($0.objectID!, $0.code) }) { first, _ in first }
        var history = ImportHistory()
        history.stored = Set(codes.keys)
        for transaction in try coordinator.history(after: nil) {
            var inserted: [String] = []
            var touched = false
            for change in transaction.changes where change.objectID.entityName == "ImportedFlight" {
                touched = true
                switch change.kind {
                case .insert:
                    history.inserts[change.objectID, default: 0] += 1
                    inserted.append(codes[change.objectID] ?? "gone \(change.objectID)")
                case .update: history.updates += 1
                case .delete: history.deletes += 1
                }
            }
            if touched { history.batches.append(inserted.sorted()) }
        }
        return StoreContents(flights: flights, duplicates: perCode.values.reduce(0) { $0 + max(0, $1 - 1) }, history: history)
    }

    static func generation(of url: URL) throws -> Int64 {
        var options = StoreOptions()
        options.readOnly = true
        options.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: model(), url: url, options: options)
        defer { coordinator.close() }
        return try coordinator.currentHistoryToken().generation
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// One `strata` child: started at init, its stdout and stderr in files.
    final class ImportRun {
        struct Ending: CustomStringConvertible {
            var killedByUs: Bool
            var exitedNormally: Bool
            var status: Int32
            var output: String
            var errors: String

            func summary() throws -> ImportSummary { try JSONDecoder().decode(ImportSummary.self, from: Data(output.utf8)) }

            var description: String {
                (killedByUs ? "killed" : exitedNormally ? "exit \(status)" : "signal \(status)")
                    + "\nstdout: \(output.suffix(1_500))\nstderr: \(errors.suffix(1_500))"
            }
        }

        private let process = Process()
        private let outputURL: URL, errorURL: URL
        private var started = ContinuousClock.now

        init(_ arguments: [String], directory: TemporaryDirectory, label: String) throws {
            outputURL = directory.file("\(label).out")
            errorURL = directory.file("\(label).err")
            // Close-on-exec, as CLI.run opens them: another test's child must not inherit them.
            func create(_ url: URL) throws -> FileHandle {
                let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
                return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            }
            let output = try create(outputURL), errors = try create(errorURL)
            defer {
                try? output.close()
                try? errors.close()
            }
            process.executableURL = CLI.executable
            process.arguments = arguments
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            started = ContinuousClock.now
            try process.run()
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        /// Waits for the end; SIGKILLs it once `delay` has passed since it started (`nil`: after
        /// two minutes, a hung run).
        func finish(killingAfter delay: Duration? = nil) -> Ending {
            let deadline = started + (delay ?? .seconds(120))
            while process.isRunning, ContinuousClock.now < deadline { usleep(500) }
            var sent = false
            if process.isRunning {
                sent = kill(process.processIdentifier, SIGKILL) == 0
            }
            process.waitUntilExit()
            let signaled = process.terminationReason == .uncaughtSignal
            return Ending(killedByUs: sent && delay != nil && signaled && process.terminationStatus == SIGKILL,
                          exitedNormally: !signaled, status: process.terminationStatus,
                          output: (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "",
                          errors: (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "")
        }
    }

    /// Counts what a results controller reported, per kind of change.
    final class ChangeRecorder: FetchedResultsControllerDelegate, @unchecked Sendable {
        // @unchecked Sendable: `tally` is read and written only under `lock` (the controller calls
        // on main's queue, the test drains on its own thread).
        struct Tally: CustomStringConvertible {
            var inserts = 0, deletes = 0, moves = 0, updates = 0, changeSets = 0
            var updatedIDs: Set<ObjectID> = []
            var others: [String] = []
            var description: String {
                "\(changeSets) change sets: \(inserts) inserts, \(deletes) deletes, \(moves) moves, \(updates) updates"
                    + (others.isEmpty ? "" : ", and \(others.joined(separator: "; "))")
            }
        }

        private let lock = NSLock()
        private var tally = Tally()

        func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
            lock.withLock {
                switch event {
                case .changes(let changes):
                    tally.changeSets += 1
                    if !changes.sections.isEmpty { tally.others.append("\(changes.sections.count) section changes") }
                    for change in changes.objects {
                        switch change {
                        case .insert: tally.inserts += 1
                        case .delete: tally.deletes += 1
                        case .move: tally.moves += 1
                        case .update(let id, _, _):
                            tally.updates += 1
                            tally.updatedIDs.insert(id)
                        }
                    }
                case .reload(let snapshot): tally.others.append("a reload to \(snapshot.numberOfObjects) rows")
                case .failed(let error): tally.others.append("a failure: \(error)")
                }
            }
        }

        func drain() -> Tally {
            lock.withLock {
                defer { tally = Tally() }
                return tally
            }
        }
    }
}

