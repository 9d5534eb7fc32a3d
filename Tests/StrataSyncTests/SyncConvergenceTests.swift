import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Synchronization
import Testing

/// Convergence under faults (issue 51): three replica processes (Sources/StrataSyncReplica), each
/// with its own store, make random saves and batch requests over overlapping rows (project codes
/// from a pool of eight: unique keys collide), and sync at random times, through one real
/// PostgreSQL server. They are SIGKILLed at random moments and at armed kill points inside a
/// round (mid-push, mid-pull, mid-apply, inside the store's commit of pulled rows), and restarted
/// on the same store; the server is stopped with `pg_ctl stop -m immediate` and started again
/// meanwhile. After quiescence (each replica syncs until a round moves nothing, twice around):
///
/// - every replica equals every other and the state the server's log folds to, folded here by an
///   implementation of the rules of its own (``Fold``), not by the library's;
/// - every acknowledged local commit is on the server (or everything it touched is gone), and
///   every value the server's log holds is in the final state or written over later in the
///   server's order (or its row is gone).
///
/// Gated by STRATA_SYNC_CONVERGE=1 (its own CI stage); STRATA_SYNC_KILLS sets the number of kills
/// (default 300), STRATA_SYNC_RESTARTS the server restarts (default 2). Prints one line:
/// `sync-converge: replicas=3 commits=N kills=N server-restarts=N diverged=0 lost=0`.
@Suite struct SyncConvergenceTests {
    static let enabled = ProcessInfo.processInfo.environment["STRATA_SYNC_CONVERGE"] == "1"

    static let executable: URL? = {
        let name = "StrataSyncReplica"
        let bundle = Bundle.main.bundleURL
        var candidates = [bundle.appendingPathComponent(name), bundle.deletingLastPathComponent().appendingPathComponent(name)]
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent(name))
            candidates.append(executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// The kill points a run may arm: the engine's own, and the store's commit of pulled rows.
    static let syncPoints = ["push.sent", "push.committed", "pull.read", "apply.built", "apply.committed", "enrol.registered"]
    static let storePoints = ["strata.sync.transaction.begun", "strata.sync.rows.written", "strata.sync.generation.bumped"]

    final class Tally: @unchecked Sendable {
        // Guarded by `lock`: the lanes run on their own threads.
        private let lock = NSLock()
        private(set) var kills = 0
        private(set) var runs = 0
        private(set) var completed = 0
        private(set) var reasons: [String: Int] = [:]
        private(set) var failures: [String] = []

        func killed(_ reason: String) { lock.withLock { kills += 1; runs += 1; reasons[reason, default: 0] += 1 } }
        func finished() { lock.withLock { runs += 1; completed += 1 } }
        func failed(_ message: String) { lock.withLock { failures.append(message) } }
        var killCount: Int { lock.withLock { kills } }
    }

    @Test(.enabled(if: enabled)) func replicasConvergeUnderKillsAndServerRestarts() async throws {
        let executable = try #require(SyncConvergenceTests.executable, "StrataSyncReplica not found beside \(Bundle.main.bundleURL.path)")
        let environment = ProcessInfo.processInfo.environment
        let targetKills = Int(environment["STRATA_SYNC_KILLS"] ?? "") ?? 300
        let targetRestarts = Int(environment["STRATA_SYNC_RESTARTS"] ?? "") ?? 2
        let server = try PostgresServer(name: "strata-sync-converge")
        defer { server.remove() }
        // STRATA_SYNC_KEEP=1: the stores, the acks and the server's log stay for a post-mortem.
        let keep = environment["STRATA_SYNC_KEEP"] == "1"
        let folder = keep ? TemporaryDirectory(existing: FileManager.default.temporaryDirectory.appendingPathComponent("strata-sync-converge-\(UUID().uuidString.prefix(8))"))
            : TemporaryDirectory("strata-sync-converge")
        if keep {
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            print("sync-converge: keeping \(folder.url.path)")
        }
        let url = server.url
        let stores = (0..<3).map { folder.url.appendingPathComponent("replica-\($0).sqlite").path }
        let acks = (0..<3).map { folder.url.appendingPathComponent("replica-\($0).acks").path }
        let stats = (0..<3).map { folder.url.appendingPathComponent("replica-\($0).stats").path }
        let tally = Tally()
        // The server's schema first (one round of an empty replica), then a trigger of the test's
        // that keeps a copy of every transaction pushed: compaction drops them from the log, and
        // the oracle folds them all.
        let first = try runChildProcess(executable, ["final", "--store", stores[0], "--server", url])
        #expect(first.status == 0, "first round: \(first)")
        _ = try server.psql("""
            CREATE TABLE test_archive AS SELECT * FROM strata_sync_txn WHERE false;
            CREATE FUNCTION test_archive_txn() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO test_archive SELECT NEW.*; RETURN NEW; END $$;
            CREATE TRIGGER test_archive AFTER INSERT ON strata_sync_txn FOR EACH ROW EXECUTE FUNCTION test_archive_txn();
            """)

        // Three lanes, one per replica: run a child, kill it (or let it finish), run the next.
        let lanes = DispatchGroup()
        for lane in 0..<3 {
            DispatchQueue.global().async(group: lanes) {
                var random = SplitMix64(seed: 0x5EED_0051, stream: lane)
                var iteration = 0
                while tally.killCount < targetKills {
                    iteration += 1
                    var childEnvironment = environment
                    childEnvironment["STRATA_SYNC_KILL_POINT"] = nil
                    childEnvironment["STRATA_KILL_POINT"] = nil
                    var armed: String?
                    switch random.int(0...9) {
                    case 0...3:
                        let point = random.pick(SyncConvergenceTests.syncPoints)
                        childEnvironment["STRATA_SYNC_KILL_POINT"] = "\(point):\(random.int(1...3))"
                        armed = "sync:" + point
                    case 4...5:
                        let point = random.pick(SyncConvergenceTests.storePoints)
                        childEnvironment["STRATA_KILL_POINT"] = "\(point):\(random.int(1...2))"
                        armed = "store:" + point
                    default: break
                    }
                    let process = Process()
                    process.executableURL = executable
                    process.arguments = ["work", "--store", stores[lane], "--server", url, "--seed", String(UInt64(lane) << 32 | UInt64(iteration)),
                                         "--steps", String(random.int(20...120)), "--acks", acks[lane], "--stats", stats[lane],
                                         "--follow", random.chance(0.35) ? "1" : "0"]
                    process.environment = childEnvironment
                    let errorPipe = Pipe()
                    process.standardError = errorPipe
                    process.standardOutput = FileHandle.nullDevice
                    do { try process.run() } catch {
                        tally.failed("lane \(lane): can't start the replica: \(error)")
                        return
                    }
                    // A random-time kill for most runs (armed or not): 20–700 ms in.
                    let timed = random.chance(0.8)
                    let delay = random.int(20...700)
                    let fired = Flag()
                    let timer = DispatchWorkItem {
                        fired.set()
                        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                    }
                    if timed { DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay), execute: timer) }
                    // A run that outlives 120 s is stuck: killed, and a failure.
                    let hung = Flag()
                    let watchdog = DispatchWorkItem {
                        hung.set()
                        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                    }
                    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(120), execute: watchdog)
                    let errors = errorPipe.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    timer.cancel()
                    watchdog.cancel()
                    if hung.value {
                        tally.failed("lane \(lane) run \(iteration) hung for 120 s (killed): \(String(decoding: errors, as: UTF8.self).suffix(2000))")
                        return
                    }
                    if process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL {
                        // Killed by the timer, or by the armed point first.
                        tally.killed(fired.value ? "random-time" : (armed ?? "random-time"))
                    } else if process.terminationStatus == 0 {
                        tally.finished()
                    } else {
                        tally.failed("lane \(lane) run \(iteration) ended with \(process.terminationReason == .uncaughtSignal ? "signal" : "status") \(process.terminationStatus): \(String(decoding: errors, as: UTF8.self).suffix(2000))")
                        return
                    }
                }
            }
        }
        // The server stopped (immediately: no shutdown checkpoint) and started again, twice, while
        // the replicas work.
        var restarts = 0, compactions = 0
        while restarts < targetRestarts {
            let due = targetKills * (restarts + 1) / (targetRestarts + 1)
            while tally.killCount < due && lanes.wait(timeout: .now() + .milliseconds(50)) == .timedOut {}
            if tally.killCount < due { break }
            try server.stop(immediate: true)
            try await Task.sleep(for: .milliseconds(400))
            try server.start()
            restarts += 1
            // Then one replica compacts the log into a snapshot: the replicas behind it start
            // from the snapshot (under kills).
            let compacted = try runChildProcess(executable, ["compact", "--store", stores[restarts % 3], "--server", url])
            if compacted.status != 0 { tally.failed("compaction: \(compacted)") }
            compactions += compacted.status == 0 ? 1 : 0
        }
        lanes.wait()
        #expect(tally.failures.isEmpty, "\(tally.failures.joined(separator: "\n"))")
        guard tally.failures.isEmpty else { return }

        // Quiescence: every replica syncs until a round moves nothing, twice around.
        for _ in 0..<2 {
            for lane in 0..<3 {
                let result = try runChildProcess(executable, ["final", "--store", stores[lane], "--server", url])
                #expect(result.status == 0, "final sync of replica \(lane): \(result)")
            }
        }
        let dumps = try (0..<3).map { lane -> Dump in
            let result = try runChildProcess(executable, ["dump", "--store", stores[lane]])
            #expect(result.status == 0, "dump of replica \(lane): \(result)")
            return try JSONDecoder().decode(Dump.self, from: Data(result.output.utf8))
        }

        // The server's log, folded by this test's own rules.
        let log = try readLog(server, table: "test_archive")
        #expect(log.map(\.seq) == Array(1...Int64(log.count)), "the server's log, kept across compactions, has gaps")
        if keep { try JSONEncoder().encode(log.map(\.seq)).write(to: folder.url.appendingPathComponent("server-seqs.json")) }
        var fold = Fold(model: TestModels.syncProjects())
        for transaction in log { fold.apply(transaction) }
        let expected = fold.dump()

        var diverged = 0
        for (lane, dump) in dumps.enumerated() where dump.rows != expected {
            diverged += 1
            let keys = Set(dump.rows.keys).union(expected.keys).sorted()
            let differing = keys.filter { dump.rows[$0] != expected[$0] }.prefix(8)
            let shown = differing.map { key -> String in
                let mine = dump.rows[key].map { "\($0)" } ?? "absent", theirs = expected[key].map { "\($0)" } ?? "absent"
                return "\(key): replica \(mine) server \(theirs)"
            }
            Issue.record("replica \(lane) differs from the server's log folded (\(differing.count)+ rows): \(shown.joined(separator: "; "))")
        }
        for lane in 1..<3 where dumps[lane].rows != dumps[0].rows { diverged += 1 }

        // Nothing acknowledged was lost.
        var lost = 0
        var commits = 0
        let replicaOf = dumps.map { Int64($0.state["sync"]?["replica"] ?? "") ?? -1 }
        let onServer = Set(log.map { "\($0.replica)/\($0.generation)" })
        for lane in 0..<3 {
            let lines = (try? String(contentsOfFile: acks[lane], encoding: .utf8)) ?? ""
            let generations = lines.split(separator: "\n").compactMap { $0.hasPrefix("ack ") ? Int64($0.dropFirst(4)) : nil }
            commits += generations.count
            let coordinator = try StoreCoordinator(model: TestModels.syncProjects(), url: URL(fileURLWithPath: stores[lane]))
            let pushed = Int64(dumps[lane].state["sync"]?["pushed-through"] ?? "") ?? 0
            for generation in generations {
                if onServer.contains("\(replicaOf[lane])/\(generation)") { continue }
                // Not on the server: only right if nothing it wrote is left (an insert whose row a
                // later commit deleted is not pushed), and it was pushed through.
                let transaction = try coordinator.history(after: HistoryToken(store: coordinator.storeUUID, generation: generation - 1), limit: 1).first
                guard let transaction, transaction.token.generation == generation, generation <= pushed else {
                    lost += 1
                    Issue.record("replica \(lane)'s acknowledged commit \(generation) is neither on the server nor in its history (pushed through \(pushed))")
                    continue
                }
                let remaining = transaction.changes.filter { expected["\($0.objectID.entityName)/\($0.objectID.primaryKey)"] != nil && $0.kind != .delete }
                if !remaining.isEmpty {
                    lost += 1
                    Issue.record("replica \(lane)'s acknowledged commit \(generation) is not on the server, and its rows \(remaining.map(\.objectID)) are still there")
                }
            }
        }
        // Every value the log holds is in the final state, or written over later, or its row is gone.
        let unexplained = fold.unexplainedValues(log)
        if !unexplained.isEmpty {
            lost += unexplained.count
            Issue.record("values in the log neither present nor written over later: \(unexplained.prefix(8))")
        }

        var rounds: [String: Int] = [:]
        for lane in 0..<3 {
            for line in ((try? String(contentsOfFile: stats[lane], encoding: .utf8)) ?? "").split(separator: "\n") {
                if line.hasPrefix("round ") || line.hasPrefix("follow-round ") {
                    rounds[line.hasPrefix("round ") ? "rounds" : "follow-updates", default: 0] += 1
                    for field in line.split(separator: " ").dropFirst() {
                        let parts = field.split(separator: "=")
                        if parts.count == 2, let value = Int(parts[1]) { rounds[String(parts[0]), default: 0] += value }
                    }
                } else if let word = line.split(separator: " ").first {
                    rounds[String(word), default: 0] += 1
                }
            }
        }
        print("sync-converge: replicas=3 commits=\(commits) kills=\(tally.kills) server-restarts=\(restarts) diverged=\(diverged) lost=\(lost)")
        print("sync-converge kills: " + tally.reasons.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            + " (runs=\(tally.runs) finished=\(tally.completed))")
        print("sync-converge outcomes: " + rounds.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            + " server-transactions=\(log.count) rows=\(expected.count) aliases=\(fold.aliasCount) compactions=\(compactions)")
        #expect(tally.kills >= targetKills)
        #expect(restarts == targetRestarts)
        #expect(diverged == 0)
        #expect(lost == 0)
        #expect(commits > 0)
    }

}

/// A flag set on one thread and read on another.
final class Flag: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var isSet = false
    func set() { lock.withLock { isSet = true } }
    var value: Bool { lock.withLock { isSet } }
}

/// Every transaction of `table` (the server's log, or the test's copy of all it ever held), in order.
func readLog(_ server: PostgresServer, table: String = "strata_sync_txn") throws -> [LoggedTransaction] {
    let text = try server.psql("SELECT coalesce(json_agg(json_build_object('seq', seq, 'replica', replica, 'generation', local_generation, 'changes', changes) ORDER BY seq), '[]') FROM \(table)")
    return try JSONDecoder().decode([LoggedTransaction].self, from: Data(text.utf8))
}

struct Dump: Decodable {
    var rows: [String: [String: String]]
    var state: [String: [String: String]]
}

struct LoggedTransaction: Codable {
    var seq: Int64
    var replica: Int64
    var generation: Int64
    var changes: [SyncChange]
}

/// The server's log folded by the rules of "Syncing with PostgreSQL", written here from the
/// article, independently of StrataSync's apply: rows by entity and key; a change is applied in
/// the log's order; a delete removes the row and applies the delete rules of its relationships
/// (`cascade` deletes the rows naming it, `nullify` clears their to-one); an update of a row that
/// is gone does nothing; a to-one naming a row that is gone follows its inverse's rule (cascade:
/// the row naming it goes; nullify: cleared); a row that comes to hold a unique key another row
/// holds is merged into that row (its written values over the holder's, rows naming it
/// re-pointed, later changes naming it apply to the holder).
struct Fold {
    let model: Model
    var rows: [String: [Int64: [String: String]]] = [:]
    var aliases: [String: [Int64: Int64]] = [:]
    /// For the lost-value check: the last seq that wrote each (entity, key, name) after aliasing.
    var lastWrite: [String: Int64] = [:]
    /// Rows merged into another (entity/key → the seq of the merge): their values that the
    /// merging change did not write are gone by the rule.
    var mergedAt: [String: Int64] = [:]

    init(model: Model) { self.model = model }

    var aliasCount: Int { aliases.values.map(\.count).reduce(0, +) }

    func entity(_ name: String) -> Entity { model.entities.first { $0.name == name }! }

    func resolve(_ entity: String, _ key: Int64) -> Int64 {
        var key = key
        while let next = aliases[entity]?[key] { key = next }
        return key
    }

    static func text(_ value: AttributeValue??) -> String {
        switch value {
        case .some(.some(let value)): "\(value)"
        default: "nil"
        }
    }

    mutating func apply(_ transaction: LoggedTransaction) {
        for change in transaction.changes {
            let key = resolve(change.entity, change.key)
            switch change.kind {
            case .delete:
                delete(change.entity, key)
            case .insert, .update:
                write(change, key: key, seq: transaction.seq)
            }
        }
    }

    mutating func delete(_ entityName: String, _ key: Int64) {
        guard rows[entityName]?.removeValue(forKey: key) != nil else { return }
        for other in model.entities {
            for relationship in other.relationships where !relationship.isToMany && relationship.destination == entityName {
                let rule = entity(entityName).relationships.first { $0.name == relationship.inverse }?.deleteRule ?? .nullify
                for (referrer, values) in rows[other.name] ?? [:] where values[relationship.name] == "\(key)" {
                    if rule == .cascade { delete(other.name, referrer) } else { rows[other.name]?[referrer]?[relationship.name] = "nil" }
                }
            }
        }
    }

    mutating func write(_ change: SyncChange, key: Int64, seq: Int64) {
        let entity = entity(change.entity)
        let exists = rows[change.entity]?[key] != nil
        if change.kind == .update && !exists { return }
        // The unique key this change gives the row, held by another row first: merge into it.
        for names in entity.uniqueKeys where names.contains(where: { change.attributes[$0] != nil }) {
            let values = names.map { name in change.attributes[name].map { Fold.text($0) } ?? rows[change.entity]?[key]?[name] ?? "nil" }
            guard !values.contains("nil") else { continue }
            guard let holder = rows[change.entity]?.first(where: { entry in entry.key != key && names.map { entry.value[$0] ?? "nil" } == values })?.key else { continue }
            assign(change, entity: entity, to: holder, seq: seq)
            if exists {
                for other in model.entities {
                    for relationship in other.relationships where !relationship.isToMany && relationship.destination == change.entity {
                        for (referrer, values) in rows[other.name] ?? [:] where values[relationship.name] == "\(key)" {
                            rows[other.name]?[referrer]?[relationship.name] = "\(holder)"
                        }
                    }
                }
                rows[change.entity]?[key] = nil
                mergedAt["\(change.entity)/\(key)"] = seq
            }
            aliases[change.entity, default: [:]][key] = holder
            return
        }
        if !exists {
            var row: [String: String] = [:]
            for attribute in entity.attributes { row[attribute.name] = Fold.text(.some(attribute.defaultValue)) }
            for relationship in entity.relationships where !relationship.isToMany { row[relationship.name] = "nil" }
            rows[change.entity, default: [:]][key] = row
        }
        assign(change, entity: entity, to: key, seq: seq)
    }

    mutating func assign(_ change: SyncChange, entity: Entity, to key: Int64, seq: Int64) {
        for (name, value) in change.attributes {
            rows[change.entity]?[key]?[name] = Fold.text(.some(value))
            lastWrite["\(change.entity)/\(key)/\(name)"] = seq
        }
        for (name, destination) in change.toOnes {
            lastWrite["\(change.entity)/\(key)/\(name)"] = seq
            guard let destination else { rows[change.entity]?[key]?[name] = "nil"; continue }
            let relationship = entity.relationships.first { $0.name == name }!
            let resolved = resolve(relationship.destination, destination)
            if rows[relationship.destination]?[resolved] != nil {
                rows[change.entity]?[key]?[name] = "\(resolved)"
            } else {
                let rule = self.entity(relationship.destination).relationships.first { $0.name == relationship.inverse }?.deleteRule ?? .nullify
                if rule == .cascade {
                    delete(change.entity, key)
                    return
                }
                rows[change.entity]?[key]?[name] = "nil"
            }
        }
    }

    /// Entity/key → values, as the replicas dump them.
    func dump() -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for (entity, byKey) in rows { for (key, values) in byKey { result["\(entity)/\(key)"] = values } }
        return result
    }

    /// Values of the log's changes that are neither in the final state nor written over by a
    /// later change (to the same row after aliasing), on rows that still exist, whose to-one
    /// destination (for a to-one) still exists.
    func unexplainedValues(_ log: [LoggedTransaction]) -> [String] {
        var result: [String] = []
        for transaction in log {
            for change in transaction.changes where change.kind != .delete {
                if (mergedAt["\(change.entity)/\(change.key)"] ?? 0) > transaction.seq { continue }
                let key = resolve(change.entity, change.key)
                guard let row = rows[change.entity]?[key] else { continue }
                for (name, value) in change.attributes where row[name] != Fold.text(.some(value)) {
                    if (lastWrite["\(change.entity)/\(key)/\(name)"] ?? 0) > transaction.seq { continue }
                    result.append("\(transaction.seq) \(change.entity)/\(key).\(name)=\(Fold.text(.some(value))) now \(row[name] ?? "-")")
                }
                for (name, destination) in change.toOnes {
                    let relationship = entity(change.entity).relationships.first { $0.name == name }!
                    let resolved = destination.map { resolve(relationship.destination, $0) }
                    if row[name] == resolved.map({ "\($0)" }) ?? "nil" { continue }
                    if (lastWrite["\(change.entity)/\(key)/\(name)"] ?? 0) > transaction.seq { continue }
                    if let resolved, rows[relationship.destination]?[resolved] == nil { continue }     // its destination is gone
                    result.append("\(transaction.seq) \(change.entity)/\(key).\(name)=\(resolved.map { "\($0)" } ?? "nil") now \(row[name] ?? "-")")
                }
            }
        }
        return result
    }
}
