import Foundation
import Testing
import Strata
import StrataSQLite
import StrataTestSupport

/// Every bad input gives one line on standard error naming the problem, its documented exit
/// status, nothing on standard output, and leaves the folder exactly as it was (every file's
/// path and bytes hashed before and after).
@Suite struct BadInputTests {
    /// The commands that take a store and nothing else that could fail first.
    static let storeCommands: [[String]] = [
        ["store", "info"], ["store", "info", "--json"], ["cache", "list"], ["cache", "list", "--json"],
        ["cache", "verify"], ["cache", "purge", "--all"], ["cache", "purge", "--stale"],
    ]

    /// Runs `strata arguments` and checks the status, the one stderr line (containing each of
    /// `words`), the empty stdout, and the unchanged `folder`.
    func expectRejected(_ arguments: [String], status: Int32, mentioning words: [String], folder: URL, asNobody: Bool = false,
                        openFiles: [String: FileHandle] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = try DirectorySnapshot(folder, openFiles: openFiles)
        let result = try CLI.run(arguments, asNobody: asNobody)
        let command = arguments.joined(separator: " ")
        #expect(result.status == status, "\(command)\n\(result)", sourceLocation: sourceLocation)
        #expect(result.errorLines.count == 1, "one line on stderr: \(command)\n\(result)", sourceLocation: sourceLocation)
        for word in words {
            #expect(result.error.contains(word), "\(command): \(result.error)", sourceLocation: sourceLocation)
        }
        #expect(result.output.isEmpty, "\(command)\n\(result)", sourceLocation: sourceLocation)
        let after = try DirectorySnapshot(folder, openFiles: openFiles)
        #expect(after.hash == before.hash, "\(command) changed the folder: before \(before); after \(after)",
                sourceLocation: sourceLocation)
    }

    /// Each store command on `path`: `status`, mentioning `words`.
    func expectEveryCommandRejects(_ path: String, status: Int32, mentioning words: [String], folder: URL, asNobody: Bool = false,
                                   openFiles: [String: FileHandle] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for command in BadInputTests.storeCommands {
            try expectRejected(Array(command.prefix(2)) + [path] + command.dropFirst(2), status: status, mentioning: words,
                               folder: folder, asNobody: asNobody, openFiles: openFiles, sourceLocation: sourceLocation)
        }
    }

    @Test func noSuchFileExits66() throws {
        let fixture = try CLIFixture.withFourCaches()
        let missing = fixture.directory.file("missing.sqlite").path
        try expectEveryCommandRejects(missing, status: 66, mentioning: ["no such file: \(missing)"], folder: fixture.directory.url)
        try expectRejected(["cache", "inspect", missing, "by-name"], status: 66, mentioning: ["no such file"], folder: fixture.directory.url)
    }

    @Test func aDirectoryExits66() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.directory.url.path
        try expectEveryCommandRejects(folder, status: 66, mentioning: ["\(folder) is a directory"], folder: fixture.directory.url)
        try expectRejected(["cache", "list", fixture.cacheFolder.path], status: 66, mentioning: ["is a directory"],
                           folder: fixture.directory.url)
    }

    /// chmod 000 stops reads only for a user without root's override: as root the command runs
    /// as uid 65534 through `setpriv`.
    @Test(.enabled(if: !CLI.isRoot || CLI.canDropPrivileges, "as root, needs setpriv and CAP_SETUID to drop privileges"))
    func anUnreadableFileExits74() throws {
        let fixture = try CLIFixture.withFourCaches()
        #expect(chmod(fixture.path, 0o000) == 0)
        defer { chmod(fixture.path, 0o644) }
        try expectEveryCommandRejects(fixture.path, status: 74, mentioning: ["cannot read \(fixture.path)", "Permission denied"],
                                      folder: fixture.directory.url, asNobody: CLI.isRoot)
        chmod(fixture.path, 0o644)

        // A store inside a folder the user may not search: unreadable too.
        let locked = fixture.directory.file("private")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
        let inside = locked.appendingPathComponent("goods.sqlite")
        try FileManager.default.copyItem(at: fixture.url, to: inside)
        #expect(chmod(locked.path, 0o600) == 0)
        defer { chmod(locked.path, 0o755) }
        try expectRejected(["store", "info", inside.path], status: 74, mentioning: ["cannot read \(inside.path)"],
                           folder: fixture.directory.url, asNobody: CLI.isRoot)
    }

    @Test func aFileThatIsNotSQLiteExits65() throws {
        let directory = TemporaryDirectory("strata-cli-bad")
        let path = directory.file("goods.sqlite")
        try Data("this is a shopping list, not a database\n".utf8).write(to: path)
        try expectEveryCommandRejects(path.path, status: 65, mentioning: ["\(path.path) is not an SQLite database"], folder: directory.url)
        let empty = directory.file("empty.sqlite")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        try expectRejected(["store", "info", empty.path], status: 65, mentioning: ["not a Strata store"], folder: directory.url)
    }

    @Test func anSQLiteFileThatIsNotAStrataStoreExits65() throws {
        let directory = TemporaryDirectory("strata-cli-bad")
        let path = directory.file("other.sqlite").path
        do {
            var configuration = Connection.Configuration()
            configuration.journalMode = .delete
            let db = try Connection(path: path, configuration: configuration)
            try db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('hello')")
            db.close()
        }
        try expectEveryCommandRejects(path, status: 65, mentioning: ["\(path) is an SQLite database but not a Strata store"],
                                      folder: directory.url)
    }

    @Test func aStoreOfANewerFormatExits65() throws {
        let fixture = try CLIFixture(journalMode: .delete)
        try fixture.makeCache(CLIFixture.byName)
        do {
            var configuration = Connection.Configuration()
            configuration.journalMode = .delete
            let db = try Connection(path: fixture.path, configuration: configuration)
            try db.execute("UPDATE strata_meta SET format_version = 99")
            db.close()
        }
        try expectEveryCommandRejects(fixture.path, status: 65, mentioning: ["format version 99"], folder: fixture.directory.url)
    }

    @Test func anUnknownCacheNameExits66AndRemovesNothing() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.directory.url
        for arguments in [["cache", "inspect", fixture.path, "nope"], ["cache", "inspect", fixture.path, "nope", "--json"],
                          ["cache", "verify", fixture.path, "nope"], ["cache", "verify", fixture.path, "by-name", "nope"],
                          ["cache", "purge", fixture.path, "by-name", "nope"],
                          ["cache", "purge", fixture.path, "by-name", "nope", "--dry-run"]] {
            try expectRejected(arguments, status: 66, mentioning: ["no cache named \"nope\""], folder: folder)
        }
        try expectRejected(["cache", "list", fixture.path, "--cache-dir", fixture.directory.file("nowhere").path], status: 66,
                           mentioning: ["no such cache folder"], folder: folder)
        // A name no cache can have (empty) is a usage error.
        try expectRejected(["cache", "inspect", fixture.path, ""], status: 64, mentioning: ["invalid cache name"], folder: folder)
    }

    /// Another connection holds an exclusive lock (rollback journal): the inspector's read-only
    /// connection gives up after its short busy timeout.
    @Test func aLockedStoreExits75() throws {
        let fixture = try CLIFixture(journalMode: .delete)
        try fixture.makeCache(CLIFixture.byName)
        var configuration = Connection.Configuration()
        configuration.journalMode = .delete
        let holder = try Connection(path: fixture.path, configuration: configuration)
        defer { holder.close() }
        // The snapshots read the store through this descriptor: closing another one would drop the lock.
        let store = try FileHandle(forReadingFrom: fixture.url)
        defer { try? store.close() }
        try holder.execute("BEGIN EXCLUSIVE")
        let started = Date()
        try expectEveryCommandRejects(fixture.path, status: 75, mentioning: ["store \(fixture.path) is locked"], folder: fixture.directory.url,
                                      openFiles: [fixture.url.standardizedFileURL.path: store])
        #expect(Date().timeIntervalSince(started) < 30, "each run gives up after the short busy timeout")
        try holder.execute("ROLLBACK")
        #expect(try CLI.run(["store", "info", fixture.path]).status == 0, "free again")
    }

    @Test func contradictoryFlagsAndBadUsageExit64() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.directory.url
        let path = fixture.path
        for (arguments, words) in [
            (["cache", "purge", path, "by-name", "--all"], ["cache names and --all contradict each other"]),
            (["cache", "purge", path, "by-name", "--stale"], ["cache names and --stale contradict each other"]),
            (["cache", "purge", path, "--all", "--stale"], ["--all and --stale contradict each other"]),
            (["cache", "purge", path, "--all", "--stale", "--dry-run"], ["--all and --stale contradict each other"]),
            (["cache", "purge", path], ["nothing selected"]),
            (["cache", "purge", path, "--dry-run"], ["nothing selected"]),
            (["cache", "inspect", path, "by-name", "--limit=-1"], ["--limit must be 0 or more"]),
            (["cache", "verify", path, "--limit=0"], ["--limit must be 1 or more"]),
            (["cache", "inspect", path], ["Missing expected argument '<name>'"]),
            (["cache", "list"], ["Missing expected argument '<store>'"]),
            (["store", "info", path, "--bogus"], ["Unknown option '--bogus'"]),
            (["cache", "list", path, "extra"], ["Unexpected argument 'extra'"]),
            (["nonsense"], ["Unexpected argument 'nonsense'"]),
        ] {
            try expectRejected(arguments, status: 64, mentioning: words + ["--help"], folder: folder)
        }
    }
}
