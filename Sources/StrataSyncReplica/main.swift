// StrataSyncReplica: one replica of the sync convergence test (Tests/StrataSyncTests/SyncConvergenceTests.swift).
//
// It opens its own store (TestModels.syncProjects(): Project(code unique, title, budget) ←cascade→
// Task(title, points, done, project) ←nullify→ Note(text, task)) and, in `work` mode, takes
// `--steps` random steps: a root context's save (inserts, updates, re-pointed to-ones, deletes,
// project codes from a pool of eight so that replicas insert the same unique key), a batch update
// or a batch delete, a sync round, or a short pause. After each commit it appends
//
//     ack <generation>
//
// to the `--acks` file in one write (a SIGKILL right after loses nothing written), and after each
// sync round a `round …` line with the round's counts to `--stats`. A sync round that fails (the
// server is stopped, the connection breaks) is written as a `sync-error` line to stats, and the
// replica goes on working offline. The parent kills it with SIGKILL at random moments, or arms a
// kill point (STRATA_SYNC_KILL_POINT for the sync engine's, STRATA_KILL_POINT for the store's
// commit, e.g. strata.sync.rows.written) so that kills mid-push, mid-pull and mid-apply are common.
//
// `final` mode syncs until a round pushes and pulls nothing; `compact` mode compacts the server's
// log into a snapshot (replicas behind it then start from it); `dump` mode prints every row as one
// JSON object (entity/key → values) for the parent to compare.
//
//     StrataSyncReplica work --store PATH --server URL --seed N --steps N --acks PATH --stats PATH
//     StrataSyncReplica final --store PATH --server URL
//     StrataSyncReplica compact --store PATH --server URL
//     StrataSyncReplica dump --store PATH

import Foundation
import Logging
@_spi(Testing) @_spi(StrataSync) import Strata
import StrataSync
import StrataTestSupport

KillPoint.armFromEnvironment()
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .error
    return handler
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("StrataSyncReplica: \(message)\n".utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard !arguments.isEmpty else { fail("usage: work|final|dump --store PATH …") }
let mode = arguments.removeFirst()
let options: [String: String] = {
    var options: [String: String] = [:]
    while !arguments.isEmpty {
        let name = arguments.removeFirst()
        guard !arguments.isEmpty else { fail("\(name) needs a value") }
        options[name] = arguments.removeFirst()
    }
    return options
}()
guard let storePath = options["--store"] else { fail("--store PATH is required") }

let model = TestModels.syncProjects()
let coordinator: StoreCoordinator
do {
    coordinator = try StoreCoordinator(model: model, url: URL(fileURLWithPath: storePath))
} catch {
    fail("can't open \(storePath): \(error)")
}

func append(_ path: String?, _ line: String) {
    guard let path else { return }
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    guard descriptor >= 0 else { fail("can't open \(path)") }
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

func engine() -> SyncEngine {
    guard let url = options["--server"] else { fail("--server URL is required") }
    do {
        return try SyncEngine(coordinator: coordinator, server: try SyncServer(url: url), name: URL(fileURLWithPath: storePath).lastPathComponent)
    } catch {
        fail("can't make the sync engine: \(error)")
    }
}

func describe(_ report: SyncReport) -> String {
    "round pushed=\(report.pushed) pulled=\(report.pulled) own=\(report.pulledOwn) inserted=\(report.inserted) updated=\(report.updated) "
        + "deleted=\(report.deleted) merged=\(report.merged) moved=\(report.storeMovedRetries) bootstrapped=\(report.bootstrapped ? 1 : 0)"
}

// MARK: The workload

/// One random save: 1–4 changes over the rows this replica has (its own and pulled ones).
func randomSave(_ random: inout SplitMix64) throws -> Int64? {
    let context = coordinator.newContext(name: "work")
    return try context.performAndWait {
        let projects = try context.fetch(FetchRequest<ManagedObject>(entityName: "Project"))
        let tasks = try context.fetch(FetchRequest<ManagedObject>(entityName: "Task"))
        let notes = try context.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
        var deleted: Set<ObjectID> = []
        func live(_ objects: [ManagedObject]) -> [ManagedObject] { objects.filter { !deleted.contains($0.objectID) } }
        for _ in 0..<random.int(1...4) {
            let choice = random.int(0...99)
            switch choice {
            case 0..<12:
                let project = try context.insert("Project")
                try project.setValue("C\(random.int(0...7))", forKey: "code")
                try project.setValue("p\(random.int(0...999))", forKey: "title")
                try project.setValue(Int64(random.int(0...50)), forKey: "budget")
            case 12..<30:
                let task = try context.insert("Task")
                try task.setValue("t\(random.int(0...999))", forKey: "title")
                try task.setValue(Int64(random.int(0...20)), forKey: "points")
                if let project = live(projects).randomElement(using: &random) { try task.setValue(project, forKey: "project") }
            case 30..<40:
                let note = try context.insert("Note")
                try note.setValue("n\(random.int(0...999))", forKey: "text")
                if let task = live(tasks).randomElement(using: &random) { try note.setValue(task, forKey: "task") }
            case 40..<50:
                guard let project = live(projects).randomElement(using: &random) else { continue }
                if random.chance(0.5) { try project.setValue("p\(random.int(0...999))", forKey: "title") }
                else { try project.setValue(Int64(random.int(0...50)), forKey: "budget") }
            case 50..<53:
                // Rarely, a project takes another code (maybe one another replica holds).
                guard let project = live(projects).randomElement(using: &random) else { continue }
                try project.setValue("C\(random.int(0...9))", forKey: "code")
            case 53..<70:
                guard let task = live(tasks).randomElement(using: &random) else { continue }
                switch random.int(0...3) {
                case 0: try task.setValue("t\(random.int(0...999))", forKey: "title")
                case 1: try task.setValue(Int64(random.int(0...20)), forKey: "points")
                case 2: try task.setValue(random.chance(0.5), forKey: "done")
                default: try task.setValue(live(projects).randomElement(using: &random), forKey: "project")
                }
            case 70..<78:
                guard let note = live(notes).randomElement(using: &random) else { continue }
                if random.chance(0.5) { try note.setValue("n\(random.int(0...999))", forKey: "text") }
                else { try note.setValue(live(tasks).randomElement(using: &random), forKey: "task") }
            case 78..<84:
                guard let project = live(projects).randomElement(using: &random) else { continue }
                deleted.insert(project.objectID)
                try context.delete(project)
            case 84..<94:
                guard let task = live(tasks).randomElement(using: &random) else { continue }
                deleted.insert(task.objectID)
                try context.delete(task)
            default:
                guard let note = live(notes).randomElement(using: &random) else { continue }
                deleted.insert(note.objectID)
                try context.delete(note)
            }
        }
        return try context.save()?.generation
    }
}

/// One batch request: points raised on some tasks, or some notes deleted.
func randomBatch(_ random: inout SplitMix64) throws -> Int64? {
    if random.chance(0.6) {
        let limit = random.int(0...20)
        let request = BatchUpdateRequest<ManagedObject>(entityName: "Task", predicate: try Condition("points < %@", limit),
                                                        propertiesToUpdate: ["points": Int64(random.int(0...20))])
        return try coordinator.execute(request).generation
    }
    let request = BatchDeleteRequest<ManagedObject>(entityName: "Note", predicate: try Condition("text BEGINSWITH %@", "n\(random.int(0...9))"))
    return try coordinator.execute(request).generation
}

switch mode {
case "work":
    guard let seed = options["--seed"].flatMap(UInt64.init), let steps = options["--steps"].flatMap(Int.init) else {
        fail("work needs --seed N --steps N")
    }
    let acks = options["--acks"], stats = options["--stats"]
    let sync = engine()
    var random = SplitMix64(seed: seed)
    // `--follow 1`: the engine follows in the background (LISTEN/NOTIFY, and this process's own
    // commits) while the loop below saves: rounds race the saves.
    let follows = options["--follow"] == "1"
    var following: Task<Void, Never>?
    if follows {
        following = Task {
            do { try await sync.follow(pollInterval: .milliseconds(10)) } catch { append(stats, "follow-error \(error)") }
        }
        Task {
            var last = SyncStatus()
            for await status in sync.statusUpdates() {
                if status.rounds > last.rounds { append(stats, "follow-round rounds=\(status.rounds - last.rounds) moved=\(status.storeMovedRetries - last.storeMovedRetries)") }
                if let error = status.lastError, error != last.lastError { append(stats, "sync-error \(String(describing: error).prefix(160))") }
                last = status
            }
        }
    }
    for _ in 0..<steps {
        switch random.int(0...99) {
        case 0..<50:
            do {
                if let generation = try randomSave(&random) { append(acks, "ack \(generation)") }
            } catch {
                append(stats, "save-refused \(String(describing: error).prefix(120).replacingOccurrences(of: "\n", with: " "))")
            }
        case 50..<58:
            do {
                if let generation = try randomBatch(&random) { append(acks, "ack \(generation)") }
            } catch {
                append(stats, "batch-refused \(String(describing: error).prefix(120).replacingOccurrences(of: "\n", with: " "))")
            }
        case 58..<92 where follows:
            try? await Task.sleep(for: .milliseconds(random.int(1...10)))
        case 58..<92:
            do {
                append(stats, describe(try await sync.sync()))
            } catch let error as SyncError {
                append(stats, "sync-error \(String(describing: error).prefix(160))")
            }
        default:
            usleep(UInt32(random.int(1...15)) * 1000)
        }
    }
    following?.cancel()
    print("done")
case "final":
    let sync = engine()
    var quiet = false
    for _ in 0..<30 {
        do {
            let report = try await sync.sync()
            print(describe(report))
            if report.pushed == 0 && report.pulled == 0 { quiet = true; break }
        } catch {
            print("sync-error \(error)")
            usleep(200_000)
        }
    }
    guard quiet else { fail("no quiet round after 30") }
    print("quiet")
case "compact":
    let sync = engine()
    for attempt in 0..<30 {
        do {
            print("compacted through \(try await sync.compact())")
            break
        } catch {
            if attempt == 29 { fail("compact: \(error)") }
            usleep(200_000)
        }
    }
case "dump":
    do {
        let (_, rows) = try coordinator.snapshotRows()
        var dump: [String: [String: String]] = [:]
        for (id, row) in rows {
            var values: [String: String] = [:]
            for (name, value) in row.attributes { values[name] = value.map { "\($0)" } ?? "nil" }
            for (name, value) in row.toOnes { values[name] = value.map { "\($0.primaryKey)" } ?? "nil" }
            dump["\(id.entityName)/\(id.primaryKey)"] = values
        }
        let state = try coordinator.syncState()
        let output: [String: [String: [String: String]]] = ["rows": dump, "state": ["sync": state]]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(output), as: UTF8.self))
    } catch {
        fail("dump: \(error)")
    }
default:
    fail("unknown mode \(mode) (work, final or dump)")
}
