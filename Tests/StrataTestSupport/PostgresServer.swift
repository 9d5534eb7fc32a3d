public import Foundation

/// A PostgreSQL command that failed: what ran, how it ended, and the end of what it (and, for a
/// start, the server) wrote.
public struct PostgresServerError: Error, CustomStringConvertible {
    /// The command line, or what was being attempted when no command ran.
    public var command: String
    /// The exit status (-1 when no command ran, the signal number when one ended it).
    public var status: Int32
    /// The last lines of the command's output (and of the server log, for a start or stop).
    public var outputTail: String

    public init(command: String, status: Int32, outputTail: String) {
        self.command = command
        self.status = status
        self.outputTail = outputTail
    }

    public var description: String {
        "PostgreSQL: `\(command)` failed (status \(status))" + (outputTail.isEmpty ? "" : ":\n\(outputTail)")
    }
}

/// A real PostgreSQL server for tests, made from the installed binaries in a fresh temporary
/// folder (a new cluster, trust authentication, listening on a Unix socket only) and removed
/// with ``remove()`` or when released.
///
/// The binaries come from `STRATA_PG_BIN` when set, else the highest `/usr/lib/postgresql/*/bin`,
/// else the folder of `pg_ctl` on `PATH`. `initdb` and `postgres` refuse to run as root: as root,
/// they run as the user `postgres` (through `runuser`, or `su`), which then owns the folder.
///
/// ```swift
/// let server = try PostgresServer()
/// defer { server.remove() }
/// try server.psql("CREATE TABLE t (x int)")
/// try server.restart()                      // an immediate stop (a crash, to the server), then a start
/// #expect(try server.psql("SELECT count(*) FROM t") == "0")
/// ```
///
/// `@unchecked Sendable`: the stored properties are `let`s except `running`, `removed` and
/// `databaseCreated`, which are read and written only with `lock` held; every command runs with
/// `lock` held too, so calls from several threads take turns. They must: with two `psql`s running
/// at once, Foundation's `Process` here saw the second one end only when the first did (a `psql`
/// holding a lock for 60 s kept another's three-row answer waiting as long). A test that needs a
/// session held open beside others opens its own connection (postgres-nio), as
/// `SyncBasicsTests` does.
public final class PostgresServer: @unchecked Sendable {
    /// The label given to ``init(name:)``, the server's `cluster_name` (shown in its process titles).
    public let name: String
    /// The temporary folder holding everything (the data folder, logs, usually the socket folder).
    public let directory: URL
    /// The cluster's data folder (`initdb -D`).
    public let dataDirectory: URL
    /// The folder of the server's Unix socket.
    public let socketDirectory: String
    /// The port, part of the socket's file name (no TCP: `listen_addresses = ''`).
    public let port = 5432
    /// The superuser, made by `initdb`.
    public let username = "strata"
    /// The database made on the first start.
    public let database = "strata"
    /// The server's own log (`pg_ctl -l`).
    public let serverLog: URL
    /// The commands run and everything they wrote.
    public let commandLog: URL

    private let binDirectory: URL
    /// Whom `initdb` and `pg_ctl` run as: `nil` for this process's user, else `postgres` (as root).
    private let serverUser: ServerUser?
    /// Whether the socket folder lies outside ``directory`` (a path too long for a socket address).
    private let separateSocketDirectory: Bool

    private let lock = NSLock()
    private var running = false
    private var removed = false
    private var databaseCreated = false

    /// Whether the PostgreSQL binaries were found (see the type's description for where).
    public static var isAvailable: Bool { binaries != nil }

    /// A connection URL for libpq-style clients, through the socket folder.
    public var url: String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        let host = socketDirectory.addingPercentEncoding(withAllowedCharacters: unreserved) ?? socketDirectory
        return "postgresql://\(username)@localhost:\(port)/\(database)?host=\(host)"
    }

    /// The server's socket file.
    public var socketPath: String { "\(socketDirectory)/.s.PGSQL.\(port)" }

    /// Whether the server was started and not stopped since (by this value).
    public var isRunning: Bool { lock.withLock { running } }

    /// Makes a new cluster in a fresh temporary folder and starts it (the database `strata`
    /// included). Throws when the binaries are missing or a command fails; the folder is then
    /// removed.
    public init(name: String = "strata-test") throws {
        let label = String(name.unicodeScalars.filter { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)) })
        self.name = label.isEmpty ? "strata-test" : label
        guard let binaries = Self.binaries else {
            throw PostgresServerError(command: "find the PostgreSQL binaries", status: -1,
                                      outputTail: "no pg_ctl and initdb in $STRATA_PG_BIN, /usr/lib/postgresql/*/bin or PATH (install the postgresql package)")
        }
        binDirectory = binaries
        serverUser = geteuid() == 0 ? try ServerUser.postgres() : nil
        let id = UUID().uuidString
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-\(id)", isDirectory: true)
        dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
        serverLog = directory.appendingPathComponent("server.log")
        commandLog = directory.appendingPathComponent("commands.log")
        // A socket address holds about 100 bytes (104 on macOS, 108 on Linux, the final NUL included).
        let inside = directory.appendingPathComponent("socket", isDirectory: true).path
        separateSocketDirectory = "\(inside)/.s.PGSQL.\(port)".utf8.count > 100
        socketDirectory = separateSocketDirectory ? "/tmp/strata-pg-\(id.prefix(8))" : inside
        do {
            try lock.withLock {
                try makeCluster()
                try startLocked()
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Starts the server (`pg_ctl start -w`: returns once it accepts connections) and, the first
    /// time, creates the database `strata`. Does nothing when it is running.
    public func start() throws {
        try lock.withLock { try startLocked() }
    }

    /// Stops the server: a fast shutdown (clients disconnected, a checkpoint), or with `immediate`
    /// an immediate one (no checkpoint: the next start recovers from the WAL, as after a crash).
    /// Does nothing when it is not running.
    public func stop(immediate: Bool = false) throws {
        try lock.withLock { try stopLocked(immediate: immediate) }
    }

    /// An immediate stop, then a start (crash recovery included).
    public func restart() throws {
        try lock.withLock {
            try stopLocked(immediate: true)
            try startLocked()
        }
    }

    /// Runs `sql` with `psql` in the database `strata` (unaligned, tuples only, stopping at the first
    /// error) and returns what it printed, trimmed. Throws with its error output when it fails.
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try psql(sql, database: database)
    }

    /// ``psql(_:)`` in another database of the server.
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        try lock.withLock {
            guard !removed else { throw PostgresServerError(command: "psql", status: -1, outputTail: "the server was removed") }
            return try psqlLocked(sql, database: database)
        }
    }

    /// Stops the server (immediately, errors ignored) and deletes its folder. A second call does
    /// nothing; the value is unusable after the first.
    public func remove() {
        lock.withLock {
            guard !removed else { return }
            removed = true
            if running {
                if (try? stopLocked(immediate: true)) == nil { killPostmaster() }
                running = false
            }
            try? FileManager.default.removeItem(at: directory)
            if separateSocketDirectory { try? FileManager.default.removeItem(atPath: socketDirectory) }
        }
    }

    // MARK: - Lifecycle, with the lock held

    /// The folders (owned by the server's user), `initdb`, and the settings.
    private func makeCluster() throws {
        let files = FileManager.default
        try files.createDirectory(at: directory, withIntermediateDirectories: true)
        try files.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        // Any OS user may connect (trust authentication over the socket).
        try files.setAttributes([.posixPermissions: 0o777], ofItemAtPath: socketDirectory)
        if let user = serverUser {
            for path in [directory.path, socketDirectory] {
                try files.setAttributes([.ownerAccountID: NSNumber(value: user.uid), .groupOwnerAccountID: NSNumber(value: user.gid)],
                                        ofItemAtPath: path)
            }
        }
        try run(binary("initdb"), ["-D", dataDirectory.path, "-U", username, "--auth=trust", "--no-sync",
                                   "-E", "UTF8", "--locale=C"], asServerUser: true)
        func quoted(_ value: String) -> String { "'" + value.replacingOccurrences(of: "'", with: "''") + "'" }
        let settings = """

            # strata-test (PostgresServer)
            cluster_name = \(quoted(name))
            listen_addresses = ''
            unix_socket_directories = \(quoted(socketDirectory))
            port = \(port)
            fsync = on
            max_connections = 100
            shared_buffers = 32MB

            """
        let configuration = dataDirectory.appendingPathComponent("postgresql.conf")
        let handle = try FileHandle(forWritingTo: configuration)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
    }

    private func startLocked() throws {
        guard !removed else { throw PostgresServerError(command: "pg_ctl start", status: -1, outputTail: "the server was removed") }
        guard !running else { return }
        try run(binary("pg_ctl"), ["-D", dataDirectory.path, "-l", serverLog.path, "-w", "-t", "60", "start"],
                asServerUser: true, withServerLog: true)
        running = true
        if !databaseCreated {
            _ = try psqlLocked("CREATE DATABASE \(database)", database: "postgres")
            databaseCreated = true
        }
    }

    private func stopLocked(immediate: Bool) throws {
        guard running else { return }
        do {
            try run(binary("pg_ctl"), ["-D", dataDirectory.path, "-m", immediate ? "immediate" : "fast", "-w", "stop"],
                    asServerUser: true, withServerLog: true)
        } catch {
            // No postmaster.pid: the server is gone all the same (it crashed, or was killed).
            if !FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("postmaster.pid").path) { running = false }
            throw error
        }
        running = false
    }

    private func psqlLocked(_ sql: String, database: String) throws -> String {
        let output = directory.appendingPathComponent("psql-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        try run(psqlPath, ["-h", socketDirectory, "-p", String(port), "-U", username, "-d", database,
                           "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], asServerUser: false, standardOutput: output)
        return String(decoding: try Data(contentsOf: output), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The last resort when a stop failed: SIGKILL to the postmaster named in `postmaster.pid`.
    private func killPostmaster() {
        let pidFile = dataDirectory.appendingPathComponent("postmaster.pid")
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8),
              let line = text.split(separator: "\n").first, let pid = pid_t(line.trimmingCharacters(in: .whitespaces)), pid > 0
        else { return }
        kill(pid, SIGKILL)
    }

    // MARK: - Commands

    private func binary(_ name: String) -> String { binDirectory.appendingPathComponent(name).path }

    /// The bin folder's `psql` (the server's version), else `/usr/bin/psql`.
    private var psqlPath: String {
        let own = binary("psql")
        return FileManager.default.isExecutableFile(atPath: own) ? own : "/usr/bin/psql"
    }

    /// Runs `executable` to its end (Foundation's `Process`), as the server's user when
    /// `asServerUser`, from ``directory``, with standard input from /dev/null and standard error
    /// (and standard output, unless `standardOutput` names a file) appended to ``commandLog``.
    /// Throws with the output's tail (and the server log's, `withServerLog`) when it fails.
    private func run(_ executable: String, _ arguments: [String], asServerUser: Bool,
                     standardOutput: URL? = nil, withServerLog: Bool = false) throws {
        let (closing, closingArguments) = Self.closingDescriptors(executable, arguments)
        let (launcher, launchArguments) = asServerUser ? try wrapped(closing, closingArguments) : (closing, closingArguments)
        let commandLine = ([executable] + arguments).map(Self.shellQuoted).joined(separator: " ")
        let files = FileManager.default
        if !files.fileExists(atPath: commandLog.path) { _ = files.createFile(atPath: commandLog.path, contents: nil) }
        let log = try FileHandle(forWritingTo: commandLog)
        defer { try? log.close() }
        try log.seekToEnd()
        try log.write(contentsOf: Data("$ \(commandLine)\n".utf8))
        let start = try log.offset()
        var outputHandle: FileHandle?
        if let standardOutput {
            _ = files.createFile(atPath: standardOutput.path, contents: nil)
            outputHandle = try FileHandle(forWritingTo: standardOutput)
        }
        defer { try? outputHandle?.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher)
        process.arguments = launchArguments
        process.currentDirectoryURL = directory
        // No PGHOST, PGDATABASE, PGOPTIONS, … from the caller's environment.
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputHandle ?? log
        process.standardError = log
        do {
            try process.run()
        } catch {
            throw PostgresServerError(command: commandLine, status: -1, outputTail: "could not launch \(launcher): \(error)")
        }
        process.waitUntilExit()
        guard process.terminationReason != .exit || process.terminationStatus != 0 else { return }

        var tail = Self.tail(of: (try? Self.contents(of: commandLog, from: start)) ?? "")
        if withServerLog, let server = try? Self.contents(of: serverLog, from: 0) {
            tail += "\n-- server log (\(serverLog.path)):\n" + Self.tail(of: server)
        }
        let status = process.terminationStatus
        throw PostgresServerError(command: commandLine + (process.terminationReason == .uncaughtSignal ? " (signal \(status))" : ""),
                                  status: status, outputTail: tail)
    }

    /// `executable arguments…` through bash, which first closes every descriptor but 0, 1 and 2.
    ///
    /// On Linux, Foundation's `Process` learns that a child ended when the child's copy of a socket
    /// closes, and every descendant inherits that copy: the postmaster that `pg_ctl start` leaves
    /// running would keep it open, and `waitUntilExit()` would wait for the server to stop. bash,
    /// since dash cannot redirect descriptors above 9. Without bash, the command runs as it is.
    private static func closingDescriptors(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        guard let bash = ["/bin/bash", "/usr/bin/bash"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return (executable, arguments)
        }
        let script = #"for fd in /dev/fd/*; do n=${fd##*/}; case $n in 0|1|2) ;; *) eval "exec $n>&-" ;; esac; done; exec "$@""#
        return (bash, ["-c", script, "strata-pg", executable] + arguments)
    }

    /// `executable arguments…` as the server's user: through `runuser`, else `su`.
    private func wrapped(_ executable: String, _ arguments: [String]) throws -> (String, [String]) {
        guard let user = serverUser else { return (executable, arguments) }
        for runuser in ["/usr/sbin/runuser", "/sbin/runuser"] where FileManager.default.isExecutableFile(atPath: runuser) {
            return (runuser, ["-u", user.name, "--", executable] + arguments)
        }
        for su in ["/bin/su", "/usr/bin/su"] where FileManager.default.isExecutableFile(atPath: su) {
            let command = ([executable] + arguments).map(Self.shellQuoted).joined(separator: " ")
            return (su, [user.name, "-s", "/bin/sh", "-c", command])
        }
        throw PostgresServerError(command: executable, status: -1,
                                  outputTail: "running as root, and neither runuser nor su was found to run it as \(user.name)")
    }

    // MARK: - Helpers

    /// The user `postgres`, whom the server runs as when this process is root.
    private struct ServerUser {
        var name: String
        var uid: uid_t
        var gid: gid_t

        static func postgres() throws -> ServerUser {
            guard let entry = getpwnam("postgres") else {
                throw PostgresServerError(command: "getpwnam(\"postgres\")", status: -1,
                                          outputTail: "running as root (initdb and postgres refuse to), and there is no user postgres to run them as")
            }
            return ServerUser(name: "postgres", uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        }
    }

    /// The folder holding `pg_ctl` and `initdb`, found once.
    private static let binaries: URL? = {
        let files = FileManager.default
        func complete(_ folder: String) -> Bool {
            files.isExecutableFile(atPath: folder + "/pg_ctl") && files.isExecutableFile(atPath: folder + "/initdb")
        }
        if let chosen = ProcessInfo.processInfo.environment["STRATA_PG_BIN"], !chosen.isEmpty {
            return complete(chosen) ? URL(fileURLWithPath: chosen, isDirectory: true) : nil
        }
        let installed = "/usr/lib/postgresql"
        let versions = ((try? files.contentsOfDirectory(atPath: installed)) ?? [])
            .compactMap { version in Double(version).map { (number: $0, name: version) } }
            .sorted { $0.number > $1.number }
        for version in versions where complete("\(installed)/\(version.name)/bin") {
            return URL(fileURLWithPath: "\(installed)/\(version.name)/bin", isDirectory: true)
        }
        // PATH's pg_ctl, through its symbolic links (Homebrew's, /usr/local/bin's) to the real folder.
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("pg_ctl")
            guard files.isExecutableFile(atPath: candidate.path) else { continue }
            let real = candidate.resolvingSymlinksInPath().deletingLastPathComponent()
            if complete(real.path) { return real }
        }
        return nil
    }()

    private static func shellQuoted(_ argument: String) -> String {
        let plain = argument.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "-_./=:@%+,".unicodeScalars.contains($0) }
        return plain && !argument.isEmpty ? argument : "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static func contents(of file: URL, from offset: UInt64) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
    }

    /// The last 40 lines (at most 4,000 characters) of `text`.
    private static func tail(of text: String) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(40).joined(separator: "\n")
        return String(lines.suffix(4000)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
