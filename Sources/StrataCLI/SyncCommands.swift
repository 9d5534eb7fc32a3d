#if canImport(StrataSync)
import ArgumentParser
import Dispatch
import Foundation
@_spi(StrataSync) import Strata
import StrataSync

/// `strata sync`: `strata sync [run] STORE …` (the default) and `strata sync status STORE`.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync a store with a PostgreSQL database (StrataSync), or show where it stands.",
        discussion: """
            strata sync STORE --server URL runs one round (push, then pull); --follow keeps \
            syncing until interrupted; strata sync status STORE reads the store's bookkeeping \
            without contacting the server. See 'strata sync run --help'.

            Example:
              strata sync /tmp/goods.sqlite --server postgresql://app@db.example/app
              strata sync /tmp/goods.sqlite --follow        (the server in $STRATA_SYNC_URL)
              strata sync status /tmp/goods.sqlite
            """,
        subcommands: [SyncRunCommand.self, SyncStatusCommand.self],
        defaultSubcommand: SyncRunCommand.self
    )
}

/// `strata sync [run] STORE [--server URL] [--follow] [--json]`: `SyncEngine.sync()`, or with
/// `--follow` `SyncEngine.follow()` until SIGINT or SIGTERM.
struct SyncRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Sync a store with a PostgreSQL database: one round, or --follow until interrupted (the default command).",
        discussion: """
            Opens STORE with the model it holds and runs one round of StrataSync's SyncEngine: \
            pushes every local commit not yet pushed, then applies what other replicas pushed, in \
            the server's order. The first sync of a store enrols it with the server's database (a \
            replica number, its own block of keys; a store that has rows pushes them once). The \
            server is --server, else $STRATA_SYNC_URL: postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, \
            or a local socket folder in the host query item (postgresql://app@localhost/app?host=/run/postgresql).

            --follow keeps the store and the server in step until SIGINT or SIGTERM (exit status \
            0): a round whenever another replica pushes (LISTEN/NOTIFY) or a local commit lands. \
            It prints one line when a round or a failure changed what it shows (transactions \
            pushed and pulled since it started, local transactions pending, the last error), and \
            nothing while nothing changes. A server that is down or goes away is retried (0.1 s, \
            doubling to 5 s); an error no retry can mend ends it.

            Exit status: 0 done, 64 a bad or missing URL, 65 a store and a server database that \
            can't sync (another model, a model sync can't carry, a store enrolled elsewhere), 66 \
            no such store, 74 the server refused a statement or the store a write, 75 the server \
            is unavailable or another sync of the store is running (try again).

            Example:
              strata sync /tmp/goods.sqlite --server postgresql://app@db.example/app
              strata sync run /tmp/goods.sqlite --json | jq .pulled
              strata sync /tmp/goods.sqlite --follow        (the server in $STRATA_SYNC_URL)
            """
    )

    @OptionGroup var location: StoreArgument
    @Option(help: ArgumentHelp("The server's database: postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE (default: $STRATA_SYNC_URL).",
                               valueName: "url"))
    var server: String?
    @Flag(help: "Keep syncing until SIGINT or SIGTERM, printing a line per change.")
    var follow = false
    @Flag(help: "Print JSON (with --follow: JSON lines, one object per change) instead of text.")
    var json = false

    func validate() throws {
        _ = try Self.syncServer(server)
    }

    func run() throws {
        let syncServer = try Self.syncServer(server)
        // Installed before anything is opened: an interrupt from now on ends --follow (exit 0).
        let interruption = follow ? Interruption() : nil
        defer { interruption?.uninstall() }
        let (inspector, coordinator) = try Self.open(location)
        defer { coordinator.close() }
        do {
            let engine = try SyncEngine(coordinator: coordinator, server: syncServer)
            if let interruption { return try following(engine, interruption: interruption) }
            // Enrolment pushes the store's rows as one seed, which the report does not count.
            let before = try coordinator.syncState()
            let hasRows = before["replica"] == nil ? try inspector.info().entities.contains { $0.rows > 0 } : false
            let report = try Blocking.run { try await engine.sync() }
            let enrolled = before["replica"] == nil && engine.status.replica != nil
            let seeded = (enrolled && hasRows) || before["seed-pending"] == "1"
            try show(report, engine.status, enrolled: enrolled, seeded: seeded, server: syncServer)
        } catch let error as SyncError {
            throw CommandFailure(ExitStatus(sync: error), error.description)
        }
    }

    /// The server of `--server`, else of `STRATA_SYNC_URL`; a missing or bad URL is a usage error.
    static func syncServer(_ option: String?) throws -> SyncServer {
        let text: String, source: String
        if let option {
            (text, source) = (option, "--server")
        } else if let variable = ProcessInfo.processInfo.environment["STRATA_SYNC_URL"], !variable.isEmpty {
            (text, source) = (variable, "STRATA_SYNC_URL")
        } else {
            throw ValidationError("no sync server: give --server postgresql://USER@HOST/DATABASE or set STRATA_SYNC_URL")
        }
        do {
            return try SyncServer(url: text)
        } catch SyncError.serverUnavailable(let reason) {
            throw ValidationError("\(source): \(reason)")
        }
    }

    /// STORE opened for writing with the model it holds (sync writes what it pulls).
    static func open(_ location: StoreArgument) throws -> (StoreInspector, StoreCoordinator) {
        let inspector = try location.inspector()
        _ = try inspector.metadata()   // rejects a format this Strata can't read
        return (inspector, try StoreCoordinator(model: try inspector.model(), url: inspector.url, options: StoreOptions()))
    }

    // MARK: One round

    private func show(_ report: SyncReport, _ status: SyncStatus, enrolled: Bool, seeded: Bool, server: SyncServer) throws {
        if json {
            return try printJSON(SyncJSON.Round(server: server.description, replica: status.replica, enrolled: enrolled,
                                                seeded: seeded, bootstrapped: report.bootstrapped, pushed: report.pushed,
                                                pulled: report.pulled, pulledOwn: report.pulledOwn, inserted: report.inserted,
                                                updated: report.updated, deleted: report.deleted, merged: report.merged,
                                                pushedThrough: status.pushedThrough,
                                                pulledThrough: status.pulledThrough, pending: status.pending))
        }
        let applied = "\(report.inserted) inserted, \(report.updated) updated, \(report.deleted) deleted, \(report.merged) merged"
        var fields = Table([("", .left), ("", .left)])
        fields.append(["server", server.description])
        fields.append(["replica", status.replica.map { "\($0)" + (enrolled ? " (enrolled now)" : "") } ?? "not enrolled"])
        fields.append(["pushed", Format.count(report.pushed, "transaction") + (seeded ? " and the store's rows, as a seed" : "")
                       + ", through generation \(status.pushedThrough)"])
        fields.append(["pulled", Format.count(report.pulled, "transaction")
                       + (report.pulledOwn > 0 ? " (\(report.pulledOwn) pushed from here)" : "") + ", through seq \(status.pulledThrough)"
                       + (report.bootstrapped ? ", starting from the server's snapshot (its log before was compacted)" : "")])
        fields.append(["applied", applied])
        fields.append(["pending", Format.count(status.pending, "local transaction")])
        fields.print(header: false)
    }

    // MARK: --follow

    private func following(_ engine: SyncEngine, interruption: Interruption) throws {
        let printer = FollowPrinter(engine: engine, json: json)
        interruption.onInterrupt { printer.stop() }   // what follow() records while it stops is not news
        let updates = engine.statusUpdates()
        let printing = Task.detached {
            for await status in updates { printer.show(status) }
        }
        defer { printing.cancel() }
        let task = Task.detached { try await engine.follow() }
        interruption.cancels(task)
        try Blocking.wait(for: task)
        printer.stop()
    }
}

/// `strata sync status STORE [--json]`: the store's sync bookkeeping, without the server.
struct SyncStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a store's sync bookkeeping (replica, last pushed and pulled, pending) without contacting the server.",
        discussion: """
            Opens STORE read-only and reads what the sync engine noted in it: the replica number \
            the server gave it (or that it never synced), the last local generation pushed, the \
            last server transaction (seq) applied, and the local transactions not pushed yet \
            (counted in the store's history, leaving out the ones that applied pulled changes).

            Example:
              strata sync status /tmp/goods.sqlite
              strata sync status /tmp/goods.sqlite --json | jq .pending
            """
    )

    @OptionGroup var location: StoreArgument
    @Flag(help: "Print JSON (sorted keys) instead of text.")
    var json = false

    func run() throws {
        let reader = try HistoryReader(location, following: false)
        let coordinator = reader.coordinator
        defer { coordinator.close() }
        let state = try coordinator.syncState()
        let replica = state["replica"].flatMap { Int64($0) }
        let pushedThrough = state[StoreCoordinator.pushedThroughKey].flatMap { Int64($0) }
        let pulledThrough = state["pulled-through"].flatMap { Int64($0) }
        // Noted at enrolment until the store's rows are on the server (a run stopped between).
        let seedPending = state["seed-pending"] == "1"
        let generation = try coordinator.currentGeneration()
        // SyncEngine counts them as a round does; the server is never contacted here.
        let pending: Result<Int, SyncError>
        do {
            let engine = try SyncEngine(coordinator: coordinator, server: SyncServer(username: "-", database: "-"))
            pending = .success(try engine.pendingTransactions())
        } catch let error as SyncError {
            pending = .failure(error)
        }
        if json {
            let status = SyncJSON.Status(path: try location.path().description, enrolled: replica != nil, replica: replica,
                                         generation: generation, pushedThrough: pushedThrough, pulledThrough: pulledThrough,
                                         pending: try? pending.get(), pendingError: pending.failure?.description,
                                         seedPending: seedPending)
            return try printJSON(status)
        }
        var fields = Table([("", .left), ("", .left)])
        fields.append(["path", try location.path().description])
        fields.append(["replica", replica.map { "\($0)" } ?? "not enrolled (the first sync enrols it)"])
        fields.append(["pushed through", pushedThrough.map { "generation \($0) (the store is at \(generation))" } ?? "-"])
        fields.append(["pulled through", pulledThrough.map { "seq \($0)" } ?? "-"])
        switch pending {
        case .success(let count):
            fields.append(["pending", Format.count(count, "local transaction")
                           + (replica == nil && count > 0 ? " (the first sync pushes the store's rows as they are then)" : "")])
        case .failure(let error):
            fields.append(["pending", "unknown: \(error.description)"])
        }
        if seedPending { fields.append(["seed", "the store's rows are not on the server yet (the next sync pushes them)"]) }
        fields.print(header: false)
    }
}

// MARK: - Errors

extension ExitStatus {
    /// A ``SyncError``'s status: 75 for what a later try may mend (the server unreachable, a
    /// sync running), 65 for a store and a server database that can't sync as they are, 74 for
    /// a statement the server refused or a write the store refused.
    init(sync error: SyncError) {
        switch error {
        case .serverUnavailable, .alreadySyncing: self = .temporaryFailure
        case .modelMismatch, .serverSchemaTooNew, .unsupportedModel, .historyNotKept, .historyExpired, .replicaUnknown,
             .seedConflict, .undecodableTransaction: self = .dataError
        case .server, .local: self = .ioError
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

// MARK: - Output

/// The JSON forms of `strata sync`.
enum SyncJSON {
    /// `strata sync --json`: what the round did, and where the replica stands after it.
    struct Round: Encodable {
        var server: String
        var replica: Int64?
        /// Whether this round enrolled the store, pushed its rows as a seed, and started from the
        /// server's snapshot (the replica was behind its compacted log).
        var enrolled, seeded, bootstrapped: Bool
        var pushed, pulled, pulledOwn, inserted, updated, deleted, merged: Int
        var pushedThrough, pulledThrough: Int64
        var pending: Int
    }

    /// `strata sync status --json`.
    struct Status: Encodable {
        var path: String
        var enrolled: Bool
        var replica: Int64?
        var generation: Int64
        var pushedThrough, pulledThrough: Int64?
        var pending: Int?
        var pendingError: String?
        var seedPending: Bool
    }

    /// One line of `strata sync --follow --json`.
    struct Progress: Encodable {
        var replica: Int64?
        var pushed, pulled: Int
        var pending: Int
        var pushedThrough, pulledThrough: Int64
        var error: String?
    }
}

/// Prints `--follow`'s lines: one when a round ended or the last error changed, and what the
/// line shows (replica, pushed, pulled, pending, error) differs from the line before.
// @unchecked Sendable because its mutable state is read and written only under `lock`.
final class FollowPrinter: @unchecked Sendable {
    private let engine: SyncEngine
    private let json: Bool
    // Guarded by `lock` (the status stream's task and the signal handler call in).
    private let lock = NSLock()
    private var stopped = false
    private var rounds = 0
    private var lastError: SyncError?
    private var shown: Shown?

    /// What a line shows that is news (the positions move with the engine's own commits too).
    private struct Shown: Equatable {
        var replica: Int64?
        var pushed, pulled, pending: Int
        var error: String?
    }

    init(engine: SyncEngine, json: Bool) {
        self.engine = engine
        self.json = json
    }

    /// Prints nothing from now on.
    func stop() { lock.withLock { stopped = true } }

    func show(_ status: SyncStatus) {
        lock.withLock {
            guard !stopped else { return }
            let news = status.rounds != rounds || status.lastError != lastError
            rounds = status.rounds
            lastError = status.lastError
            guard news, status.rounds > 0 || status.lastError != nil else { return }
            // Pending as of now (the status holds it as of the last round that ended).
            let pending = (try? engine.pendingTransactions()) ?? status.pending
            let progress = SyncJSON.Progress(replica: status.replica, pushed: status.pushedTransactions, pulled: status.pulledTransactions,
                                             pending: pending, pushedThrough: status.pushedThrough, pulledThrough: status.pulledThrough,
                                             error: status.lastError?.description)
            let visible = Shown(replica: progress.replica, pushed: progress.pushed, pulled: progress.pulled, pending: progress.pending,
                                error: progress.error)
            guard visible != shown else { return }
            shown = visible
            print(line(progress))
            fflush(nil)   // a reader of the pipe sees each line at once
        }
    }

    private func line(_ progress: SyncJSON.Progress) -> String {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(progress)) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
        var parts = [HistoryValues.date(Date()), "replica \(progress.replica.map { "\($0)" } ?? "-")",
                     "pushed \(progress.pushed)", "pulled \(progress.pulled)", "pending \(progress.pending)"]
        if let error = progress.error { parts.append("error: " + error.split(whereSeparator: \.isNewline).joined(separator: " ")) }
        return parts.joined(separator: "  ")
    }
}

// MARK: - Signals and waiting

/// SIGINT and SIGTERM, caught from creation on: each cancels the task given to ``cancels(_:)``
/// (at once if one came before it was given) after running the ``onInterrupt(_:)`` actions.
// @unchecked Sendable because `interrupted` and the actions are read and written only under `lock`.
final class Interruption: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var interrupted = false
    private var task: Task<Void, any Error>?
    private var actions: [@Sendable () -> Void] = []
    private var sources: [any DispatchSourceSignal] = []

    init() {
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.interrupt() }
            source.resume()
            return source
        }
        lock.withLock { self.sources = sources }
    }

    func onInterrupt(_ action: @escaping @Sendable () -> Void) {
        let now = lock.withLock {
            actions.append(action)
            return interrupted
        }
        if now { action() }
    }

    func cancels(_ task: Task<Void, any Error>) {
        let now = lock.withLock {
            self.task = task
            return interrupted
        }
        if now { task.cancel() }
    }

    private func interrupt() {
        let (task, actions) = lock.withLock {
            interrupted = true
            return (self.task, self.actions)
        }
        for action in actions { action() }
        task?.cancel()
    }

    func uninstall() {
        let sources = lock.withLock { self.sources }
        for source in sources { source.cancel() }
    }
}

/// The commands' `run()` is synchronous: the sync engine's async calls run on the concurrency
/// pool while the calling thread waits.
enum Blocking {
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        try wait(for: Task.detached(operation: operation))
    }

    static func wait<T: Sendable>(for task: Task<T, any Error>) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        Task.detached {
            box.set(await task.result)
            done.signal()
        }
        done.wait()
        return try box.get()
    }

    // @unchecked Sendable because `result` is read and written only under `lock`.
    private final class ResultBox<T: Sendable>: @unchecked Sendable {
        // Guarded by `lock`.
        private let lock = NSLock()
        private var result: Result<T, any Error>?

        func set(_ result: Result<T, any Error>) { lock.withLock { self.result = result } }
        func get() throws -> T { try lock.withLock { result! }.get() }
    }
}
#endif
