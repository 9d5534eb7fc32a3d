import Foundation

// A real PostgreSQL server for the benchmark: a new cluster in a temporary folder, trust
// authentication, a Unix socket only (`listen_addresses = ''`). Trimmed from the test helper
// Tests/StrataTestSupport/PostgresServer.swift (this package can't depend on a test target):
// same binaries lookup, same way of running `initdb` and `pg_ctl` as the user `postgres` when
// this process is root (both refuse to run as root), same bash wrapper closing inherited
// descriptors (without it `Process.waitUntilExit()` never returns: see `closingDescriptors`).

struct PostgresClusterError: Error, CustomStringConvertible {
    var description: String
}

/// `@unchecked Sendable`: the stored properties are `let`s but `version` (written in `init`) and
/// `running`, read and written with `lock` held (``remove()`` may run from a signal handler's queue).
final class PostgresCluster: @unchecked Sendable {
    let directory: URL
    let dataDirectory: URL
    let socketDirectory: String
    let port = 5432
    let username = "strata"
    let database = "strata"
    let serverLog: URL
    /// The server's version (`postgres --version`), for the report.
    private(set) var version = "?"
    /// The postmaster's process (from `postmaster.pid`), 0 if unknown.
    private(set) var postmasterPID: pid_t = 0

    private let binDirectory: URL
    private let serverUser: (name: String, uid: uid_t, gid: gid_t)?
    private var running = false
    private let lock = NSLock()

    /// Settings appended to postgresql.conf (printed with the results).
    static let settings = ["listen_addresses = ''", "fsync = on", "synchronous_commit = on", "shared_buffers = 128MB",
                           "max_connections = 20"]

    init() throws {
        guard let binaries = PostgresCluster.binaries else {
            throw PostgresClusterError(description: "no pg_ctl and initdb in $STRATA_PG_BIN, /usr/lib/postgresql/*/bin or PATH (install the postgresql package)")
        }
        binDirectory = binaries
        if geteuid() == 0 {
            guard let entry = getpwnam("postgres") else {
                throw PostgresClusterError(description: "running as root (initdb refuses to) and there is no user postgres to run the server as")
            }
            serverUser = ("postgres", entry.pointee.pw_uid, entry.pointee.pw_gid)
        } else {
            serverUser = nil
        }
        let id = UUID().uuidString.prefix(8)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-syncbench-pg-\(id)", isDirectory: true)
        dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
        serverLog = directory.appendingPathComponent("server.log")
        // A socket address holds about 100 bytes: the socket folder in /tmp, short.
        socketDirectory = "/tmp/strata-syncbench-\(id)"
        do {
            try makeCluster()
            try run(binary("pg_ctl"), ["-D", dataDirectory.path, "-l", serverLog.path, "-w", "-t", "60", "start"], asServerUser: true)
            running = true
            if let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8),
               let line = text.split(separator: "\n").first {
                postmasterPID = pid_t(line.trimmingCharacters(in: .whitespaces)) ?? 0
            }
            try run(binary("psql"), ["-h", socketDirectory, "-p", String(port), "-U", username, "-d", "postgres", "-X", "-q",
                                     "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE \(database)"], asServerUser: false)
            let versionFile = directory.appendingPathComponent("version.txt")
            try run(binary("postgres"), ["--version"], asServerUser: false, output: versionFile)
            version = String(decoding: (try? Data(contentsOf: versionFile)) ?? Data(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Stops the server (fast shutdown; SIGKILL to the postmaster if that fails) and deletes its
    /// folders. A second call does nothing.
    func remove() {
        lock.lock()
        defer { lock.unlock() }
        if running {
            running = false
            if (try? run(binary("pg_ctl"), ["-D", dataDirectory.path, "-m", "fast", "-w", "stop"], asServerUser: true)) == nil {
                if let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8),
                   let line = text.split(separator: "\n").first, let pid = pid_t(line.trimmingCharacters(in: .whitespaces)), pid > 0 {
                    kill(pid, SIGKILL)
                }
            }
        }
        try? FileManager.default.removeItem(at: directory)
        try? FileManager.default.removeItem(atPath: socketDirectory)
    }

    /// Stops and removes the server from a child process left running (on a signal: this process
    /// goes at once, before the server closes its connections, which postgres-nio 1.33.2 can
    /// meet with a precondition failure in the middle of a read).
    /// `alsoRemoving`: other folders the child deletes after the stop.
    func removeDetached(alsoRemoving others: [String] = []) {
        lock.lock()
        defer { lock.unlock() }
        guard running else { return }
        running = false
        var stop = [binary("pg_ctl"), "-D", dataDirectory.path, "-m", "fast", "-w", "stop"]
        if let user = serverUser { stop = ["/usr/sbin/runuser", "-u", user.name, "--"] + stop }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        let folders = [directory.path, socketDirectory] + others
        process.arguments = ["-c", #"n=$1; shift; folders=("${@:1:n}"); shift "$n"; "$@" >/dev/null 2>&1; rm -rf -- "${folders[@]}""#,
                             "strata-pg", String(folders.count)] + folders + stop
        process.standardInput = FileHandle.nullDevice
        try? process.run()
    }

    private func makeCluster() throws {
        let files = FileManager.default
        try files.createDirectory(at: directory, withIntermediateDirectories: true)
        try files.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try files.setAttributes([.posixPermissions: 0o777], ofItemAtPath: socketDirectory)
        if let user = serverUser {
            for path in [directory.path, socketDirectory] {
                try files.setAttributes([.ownerAccountID: NSNumber(value: user.uid), .groupOwnerAccountID: NSNumber(value: user.gid)],
                                        ofItemAtPath: path)
            }
        }
        try run(binary("initdb"), ["-D", dataDirectory.path, "-U", username, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
                asServerUser: true)
        let settings = "\n# StrataSyncBench\nunix_socket_directories = '\(socketDirectory)'\nport = \(port)\n"
            + PostgresCluster.settings.joined(separator: "\n") + "\n"
        let handle = try FileHandle(forWritingTo: dataDirectory.appendingPathComponent("postgresql.conf"))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
    }

    private func binary(_ name: String) -> String { binDirectory.appendingPathComponent(name).path }

    /// Runs a command to its end, as `postgres` when `asServerUser` (and this process is root),
    /// its output appended to `commands.log` (or written to `output`). Throws with the log's tail.
    private func run(_ executable: String, _ arguments: [String], asServerUser: Bool, output: URL? = nil) throws {
        // bash closes every inherited descriptor but 0, 1 and 2, then execs the command: on Linux,
        // Foundation's Process learns that a child ended when the child's copy of a socket closes,
        // and the postmaster `pg_ctl start` leaves running would keep that copy open forever.
        let script = #"for fd in /dev/fd/*; do n=${fd##*/}; case $n in 0|1|2) ;; *) eval "exec $n>&-" ;; esac; done; exec "$@""#
        var launcher = "/bin/bash"
        var launchArguments = ["-c", script, "strata-pg", executable] + arguments
        if asServerUser, let user = serverUser {
            launchArguments = ["-u", user.name, "--", launcher] + launchArguments
            launcher = "/usr/sbin/runuser"
        }
        let log = directory.appendingPathComponent("commands.log")
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let logHandle = try FileHandle(forWritingTo: log)
        defer { try? logHandle.close() }
        try logHandle.seekToEnd()
        try logHandle.write(contentsOf: Data("$ \(([executable] + arguments).joined(separator: " "))\n".utf8))
        var outputHandle: FileHandle?
        if let output {
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            outputHandle = try FileHandle(forWritingTo: output)
        }
        defer { try? outputHandle?.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher)
        process.arguments = launchArguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputHandle ?? logHandle
        process.standardError = logHandle
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason != .exit || process.terminationStatus != 0 else { return }
        let text = String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self)
        let server = String(decoding: (try? Data(contentsOf: serverLog)) ?? Data(), as: UTF8.self)
        throw PostgresClusterError(description: "`\(executable) \(arguments.joined(separator: " "))` failed (status \(process.terminationStatus)):\n"
            + text.split(separator: "\n").suffix(20).joined(separator: "\n")
            + (server.isEmpty ? "" : "\n-- server log:\n" + server.split(separator: "\n").suffix(20).joined(separator: "\n")))
    }

    /// `$STRATA_PG_BIN`, else the highest /usr/lib/postgresql/*/bin, else the folder of PATH's pg_ctl.
    private static let binaries: URL? = {
        let files = FileManager.default
        func complete(_ folder: String) -> Bool {
            files.isExecutableFile(atPath: folder + "/pg_ctl") && files.isExecutableFile(atPath: folder + "/initdb")
        }
        if let chosen = ProcessInfo.processInfo.environment["STRATA_PG_BIN"], !chosen.isEmpty {
            return complete(chosen) ? URL(fileURLWithPath: chosen, isDirectory: true) : nil
        }
        let installed = "/usr/lib/postgresql"
        let versions = ((try? files.contentsOfDirectory(atPath: installed)) ?? []).compactMap { name in Double(name).map { ($0, name) } }
            .sorted { $0.0 > $1.0 }
        for (_, name) in versions where complete("\(installed)/\(name)/bin") {
            return URL(fileURLWithPath: "\(installed)/\(name)/bin", isDirectory: true)
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("pg_ctl")
            guard files.isExecutableFile(atPath: candidate.path) else { continue }
            let real = candidate.resolvingSymlinksInPath().deletingLastPathComponent()
            if complete(real.path) { return real }
        }
        return nil
    }()
}
