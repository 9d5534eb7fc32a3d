import Foundation
import Testing
import Strata
import StrataTestSupport

/// `strata sync` and `strata sync status` against a real PostgreSQL server (PostgresServer),
/// run as a user runs them. Left out when the package is built without StrataSync
/// (`STRATA_WITHOUT_SYNC`, as Package.swift reads it): `strata` then has no `sync`.
@Suite(.serialized, .enabled(if: SyncBuild.isOn, "strata is built without sync (STRATA_WITHOUT_SYNC)"))
struct SyncCommandTests {

    let folder = TemporaryDirectory("strata-cli-sync")

    /// A new empty store of `TestModels.syncProjects()`.
    func makeStore(_ name: String) throws -> URL {
        let url = folder.file("\(name).sqlite")
        try withCoordinator(url) { _ in }
        return url
    }

    func withCoordinator<T>(_ url: URL, _ body: (StoreCoordinator) throws -> T) throws -> T {
        let coordinator = try StoreCoordinator(model: TestModels.syncProjects(), url: url)
        defer { coordinator.close() }
        return try body(coordinator)
    }

    /// Inserts one project per code (title "title of CODE"), in one save.
    func insertProjects(_ codes: [String], into url: URL) throws {
        try withCoordinator(url) { coordinator in
            let context = coordinator.newContext(name: "test")
            try context.performAndWait {
                for code in codes {
                    let project = try context.insert("Project")
                    try project.setValue(code, forKey: "code")
                    try project.setValue("title of \(code)", forKey: "title")
                }
                _ = try context.save()
            }
        }
    }

    /// Sets the title of the project with `code`.
    func retitle(_ code: String, _ title: String, in url: URL) throws {
        try withCoordinator(url) { coordinator in
            let context = coordinator.newContext(name: "test")
            try context.performAndWait {
                let projects = try context.fetch(FetchRequest<ManagedObject>(entityName: "Project", condition: Condition("code == %@", code)))
                try #require(projects.count == 1)
                try projects[0].setValue(title, forKey: "title")
                _ = try context.save()
            }
        }
    }

    /// Every project's code → title, read through a read-only coordinator opened for the call.
    func projects(_ url: URL) throws -> [String: String] {
        var options = StoreOptions()
        options.readOnly = true
        options.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: TestModels.syncProjects(), url: url, options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        return try context.performAndWait {
            var result: [String: String] = [:]
            for project in try context.fetch(FetchRequest<ManagedObject>(entityName: "Project")) {
                result[try #require(try project.value(forKey: "code") as? String)] = try project.value(forKey: "title") as? String
            }
            return result
        }
    }

    /// The value of `field` in text output of two columns (`field  value`).
    func field(_ name: String, in result: CLIResult) -> String? {
        for line in result.output.lines where line.hasPrefix(name + "  ") {
            return line.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A URL where no server listens: a socket folder with no socket in it.
    var nowhere: String { "postgresql://strata@localhost/strata?host=\(folder.url.path)" }

    // MARK: One round, and the bookkeeping

    @Test func aRoundCarriesRowsToTheOtherReplicaAndStatusShowsTheBookkeeping() throws {
        let server = try PostgresServer(name: "strata-cli-sync")
        defer { server.remove() }
        let a = try makeStore("a"), b = try makeStore("b")
        try insertProjects(["P1", "P2", "P3"], into: a)

        // Never synced: no replica, its transaction pending.
        let before = try CLI.run(["sync", "status", a.path])
        #expect(before.status == 0, "\(before)")
        #expect(field("replica", in: before)?.hasPrefix("not enrolled") == true, "\(before)")
        #expect(field("pending", in: before)?.hasPrefix("1 local transaction") == true, "\(before)")
        #expect(field("pushed through", in: before) == "-", "\(before)")

        // A enrols first (replica 1) and pushes its rows; B enrols and pulls them.
        let syncA = try CLI.run(["sync", a.path, "--server", server.url])
        #expect(syncA.status == 0, "\(syncA)")
        #expect(syncA.error.isEmpty, "\(syncA)")
        #expect(field("replica", in: syncA) == "1 (enrolled now)", "\(syncA)")
        #expect(field("pushed", in: syncA) == "0 transactions and the store's rows, as a seed, through generation 1", "\(syncA)")
        #expect(field("pending", in: syncA) == "0 local transactions", "\(syncA)")
        // B reads its server from the environment.
        let syncB = try CLI.run(["sync", b.path], environment: ["STRATA_SYNC_URL": server.url])
        #expect(syncB.status == 0, "\(syncB)")
        #expect(field("replica", in: syncB) == "2 (enrolled now)", "\(syncB)")
        #expect(field("pushed", in: syncB)?.hasPrefix("0 transactions, through generation ") == true, "an empty store: no seed\n\(syncB)")
        #expect(field("pulled", in: syncB) == "1 transaction, through seq 1", "\(syncB)")
        #expect(field("applied", in: syncB) == "3 inserted, 0 updated, 0 deleted, 0 merged", "\(syncB)")
        let expected = ["P1": "title of P1", "P2": "title of P2", "P3": "title of P3"]
        #expect(try projects(b) == expected)

        // --json: the round's counts and the positions after it.
        try retitle("P2", "Roof", in: b)
        let pushed = try CLI.run(["sync", b.path, "--server", server.url, "--json"])
        #expect(pushed.status == 0, "\(pushed)")
        let round = try pushed.jsonObject()
        #expect(round["replica"] as? Int == 2)
        #expect(round["enrolled"] as? Bool == false && round["seeded"] as? Bool == false)
        #expect(round["pushed"] as? Int == 1)
        #expect(round["pulled"] as? Int == 1 && round["pulledOwn"] as? Int == 1, "its own push, read back: \(round)")
        #expect(round["pulledThrough"] as? Int == 2)
        #expect(round["pending"] as? Int == 0)
        #expect(round["inserted"] as? Int == 0 && round["updated"] as? Int == 0)
        #expect((round["server"] as? String)?.hasPrefix("postgresql://strata@") == true)
        let pulled = try CLI.run(["sync", a.path, "--server", server.url, "--json"])
        #expect(try pulled.jsonObject()["updated"] as? Int == 1, "\(pulled)")
        #expect(try projects(a)["P2"] == "Roof")

        // status: the replica, where it stands, nothing pending; then one local commit pending.
        let status = try CLI.run(["sync", "status", a.path])
        #expect(status.status == 0, "\(status)")
        #expect(field("replica", in: status) == "1", "\(status)")
        #expect(field("pulled through", in: status) == "seq 2", "\(status)")
        #expect(field("pending", in: status) == "0 local transactions", "\(status)")
        try insertProjects(["P4"], into: a)
        let waiting = try CLI.run(["sync", "status", a.path, "--json"])
        #expect(waiting.status == 0, "\(waiting)")
        let json = try waiting.jsonObject()
        #expect(json["enrolled"] as? Bool == true)
        #expect(json["replica"] as? Int == 1)
        #expect(json["pending"] as? Int == 1)
        #expect(json["pulledThrough"] as? Int == 2)
        let generation = try #require(json["generation"] as? Int), pushedThrough = try #require(json["pushedThrough"] as? Int)
        #expect(pushedThrough == generation - 1, "everything but the last commit pushed: \(json)")
        // A store of another model, on this server database that syncs `syncProjects` stores.
        let goods = folder.file("goods.sqlite")
        try StoreCoordinator(model: TestModels.goods(), url: goods).close()
        let mismatch = try CLI.run(["sync", goods.path, "--server", server.url])
        #expect(mismatch.status == 65, "\(mismatch)")
        #expect(mismatch.errorLines.count == 1, "\(mismatch)")
        #expect(mismatch.error.hasPrefix("strata sync: the server's database syncs stores of model sync-projects-1"), "\(mismatch)")

        // status never contacts the server: the same answer with it stopped.
        try server.stop()
        #expect(try CLI.run(["sync", "status", a.path, "--json"]).output == waiting.output)
    }

    // MARK: --follow

    /// `strata sync B --follow` applies what A pushes as it lands and pushes B's own commits,
    /// prints one line per change, and ends with status 0 on SIGINT (and on SIGTERM).
    @Test func followKeepsAReplicaInStepUntilInterrupted() throws {
        let server = try PostgresServer(name: "strata-cli-sync")
        defer { server.remove() }
        let a = try makeStore("a"), b = try makeStore("b")
        try insertProjects(["P1"], into: a)
        #expect(try CLI.run(["sync", a.path, "--server", server.url]).status == 0)

        let follower = try FollowingChild(["sync", b.path, "--follow"], environment: ["STRATA_SYNC_URL": server.url])
        defer { follower.kill() }
        // The first round: B enrols and pulls A's seed.
        let first = try follower.waitForLines(1)
        #expect(first[0].hasSuffix("  replica 2  pushed 0  pulled 1  pending 0"), "\(first)")
        #expect(try projects(b) == ["P1": "title of P1"])

        // A changes and syncs: B applies it without a call.
        try retitle("P1", "from A", in: a)
        #expect(try CLI.run(["sync", a.path, "--server", server.url]).status == 0)
        let deadline = Date().addingTimeInterval(15)
        while try projects(b)["P1"] != "from A", Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try projects(b)["P1"] == "from A")

        // B commits locally: the follower pushes it; A pulls it.
        try insertProjects(["P2"], into: b)
        let pushedLine = try follower.waitFor { $0.contains("pushed 1") }
        #expect(pushedLine.hasSuffix("pending 0"), "\(pushedLine)")
        #expect(try CLI.run(["sync", a.path, "--server", server.url]).status == 0)
        #expect(try projects(a) == ["P1": "from A", "P2": "title of P2"])

        let ended = try follower.stop(SIGINT)
        #expect(ended.status == 0, "\(ended)")
        #expect(ended.reason == .exit)
        #expect(ended.error.isEmpty, "\(ended)")
        for line in ended.lines {
            #expect(line.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  replica 2  pushed \d+  pulled \d+  pending \d+$"#,
                               options: .regularExpression) != nil, "\(line)")
        }

        // SIGTERM ends it the same way; --json prints JSON lines.
        let second = try FollowingChild(["sync", a.path, "--follow", "--json", "--server", server.url])
        defer { second.kill() }
        let line = try second.waitForLines(1)[0]
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        #expect(object["replica"] as? Int == 1)
        #expect(object["pending"] as? Int == 0)
        #expect(object["error"] == nil)
        let terminated = try second.stop(SIGTERM)
        #expect(terminated.status == 0, "\(terminated)")
        #expect(terminated.reason == .exit)
    }

    /// A server that is down: one round fails with the server-unavailable message and status 75;
    /// --follow says so in its line and keeps trying until interrupted (status 0).
    @Test func aServerThatIsDownIsReportedAndFollowKeepsTrying() throws {
        let a = try makeStore("a")
        let result = try CLI.run(["sync", a.path, "--server", nowhere])
        #expect(result.status == 75, "\(result)")
        #expect(result.errorLines.count == 1, "\(result)")
        #expect(result.error.hasPrefix("strata sync: the sync server is unavailable: "), "\(result)")
        #expect(result.output.isEmpty, "\(result)")

        let follower = try FollowingChild(["sync", a.path, "--follow", "--server", nowhere])
        defer { follower.kill() }
        let line = try follower.waitForLines(1)[0]
        #expect(line.contains("  replica -  pushed 0  pulled 0  pending 0  error: the sync server is unavailable: "), "\(line)")
        // The retries meet the same error: no new line.
        Thread.sleep(forTimeInterval: 0.5)
        let ended = try follower.stop(SIGINT)
        #expect(ended.status == 0, "\(ended)")
        #expect(ended.lines.count == 1, "\(ended)")
        #expect(ended.error.isEmpty, "\(ended)")
        // Nothing was enrolled.
        let status = try CLI.run(["sync", "status", a.path])
        #expect(field("replica", in: status)?.hasPrefix("not enrolled") == true, "\(status)")
    }

    // MARK: Usage

    @Test func aBadOrMissingURLIsAUsageError() throws {
        let a = try makeStore("a")
        let bad = try CLI.run(["sync", a.path, "--server", "http://db.example/app"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.errorLines == ["strata sync: --server: 'http://db.example/app' is not a postgresql:// URL (see 'strata sync --help')"], "\(bad)")
        let noUser = try CLI.run(["sync", a.path, "--server", "postgresql://db.example/app"])
        #expect(noUser.status == 64, "\(noUser)")
        #expect(noUser.error.contains("names no user"), "\(noUser)")
        let fromEnvironment = try CLI.run(["sync", a.path], environment: ["STRATA_SYNC_URL": "db.example"])
        #expect(fromEnvironment.status == 64, "\(fromEnvironment)")
        #expect(fromEnvironment.error.hasPrefix("strata sync: STRATA_SYNC_URL: 'db.example' is not a postgresql:// URL"), "\(fromEnvironment)")
        let missing = try CLI.run(["sync", a.path], environment: ["STRATA_SYNC_URL": ""])
        #expect(missing.status == 64, "\(missing)")
        #expect(missing.error.hasPrefix("strata sync: no sync server: give --server"), "\(missing)")
        // --server wins over the environment.
        let chosen = try CLI.run(["sync", a.path, "--server", "mysql://x@y/z"], environment: ["STRATA_SYNC_URL": nowhere])
        #expect(chosen.status == 64, "\(chosen)")
        // Nothing was written to the store.
        #expect(try CLI.run(["sync", "status", a.path, "--json"]).jsonObject()["enrolled"] as? Bool == false)
    }

    @Test(arguments: [["sync"], ["sync", "run"], ["sync", "status"]])
    func everySyncCommandHasHelpWithAnExample(_ command: [String]) throws {
        let result = try CLI.run(command + ["--help"])
        #expect(result.status == 0, "\(result)")
        #expect(result.output.contains("USAGE: strata \(command.joined(separator: " "))"), "\(result)")
        let examples = result.output.components(separatedBy: "Example:\n").dropFirst().first ?? ""
        #expect(examples.hasPrefix("  strata "), "an example under 'Example:'\n\(result.output)")
        #expect(try CLI.run(["help"] + command).output == result.output)
    }

    @Test func aMissingStoreIsNoInput() throws {
        let missing = folder.file("missing.sqlite").path
        let sync = try CLI.run(["sync", missing, "--server", nowhere])
        #expect(sync.status == 66, "\(sync)")
        let status = try CLI.run(["sync", "status", missing])
        #expect(status.status == 66, "\(status)")
        #expect(status.error.hasPrefix("strata sync status: "), "\(status)")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}

/// Whether `strata` has `sync`: the package leaves StrataSync out when `STRATA_WITHOUT_SYNC` is
/// set, and `swift test` reads the manifest with the same environment.
private enum SyncBuild {
    static var isOn: Bool { (ProcessInfo.processInfo.environment["STRATA_WITHOUT_SYNC"] ?? "").isEmpty }
}

/// `strata` running as a child process, its standard output read as it comes.
private final class FollowingChild: @unchecked Sendable {
    struct Ending: CustomStringConvertible {
        var status: Int32
        var reason: Process.TerminationReason
        var lines: [String]
        var error: String
        var description: String { "exit \(status)\nstdout:\n\(lines.joined(separator: "\n"))\nstderr:\n\(error)" }
    }

    private let process = Process()
    private let errors = Pipe()
    private let output = Pipe()
    // Guarded by `lock` (the pipe's reader thread appends).
    private let lock = NSLock()
    private var received = Data()

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = CLI.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = errors
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.withLock { self.received.append(data) }
        }
        try process.run()
    }

    var lines: [String] { String(decoding: lock.withLock { received }, as: UTF8.self).lines }

    /// The first `count` lines, once printed (within 15 s).
    func waitForLines(_ count: Int) throws -> [String] {
        let deadline = Date().addingTimeInterval(15)
        while lines.count < count, process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let printed = lines
        try #require(printed.count >= count, "\(count) lines within 15 s; got \(printed), running: \(process.isRunning)")
        return Array(printed.prefix(count))
    }

    /// The first line that satisfies `predicate`, once printed (within 15 s).
    func waitFor(_ predicate: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(15)
        while !lines.contains(where: predicate), process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let printed = lines
        let found = printed.first(where: predicate)
        return try #require(found, "no such line within 15 s; got \(printed)")
    }

    /// Sends `signal` and waits (10 s at most) for the process to end.
    func stop(_ signal: Int32) throws -> Ending {
        Glibc.kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        try #require(!process.isRunning, "strata ends within 10 s of signal \(signal)")
        output.fileHandleForReading.readabilityHandler = nil
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        lock.withLock { received.append(rest) }
        let error = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return Ending(status: process.terminationStatus, reason: process.terminationReason, lines: lines, error: error)
    }

    /// SIGKILL if it still runs (a test that failed before stopping it).
    func kill() {
        output.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
