import Foundation
import StrataSQLite

/// `--mode torn-commit`: the process dies inside a write transaction that has already changed
/// the database file, as a crash during a commit does (deterministically, unlike a random kill).
///
/// Raw SQLite, a one-page page cache and an UPDATE of every good's name by 3 KB: the changed pages
/// spill before COMMIT, so in rollback-journal mode the file is left modified beside a hot
/// journal, and in WAL mode the log holds uncommitted frames. Then SIGKILL. A reopen must roll
/// the transaction back and open the store as it was at the last commit.
func tornCommit(_ options: HarnessOptions) throws -> Never {
    var configuration = Connection.Configuration()
    configuration.createIfMissing = false
    configuration.journalMode = options.journal == .delete ? .delete : .wal
    configuration.synchronous = options.synchronous == .full ? .full : .normal
    let db = try Connection(path: options.store, configuration: configuration)
    try db.execute("PRAGMA cache_size=1")
    try db.execute("BEGIN IMMEDIATE")
    try db.prepare("UPDATE \"Good\" SET \"name\" = \"name\" || ?").execute(.text(String(repeating: "x", count: 3000)))
    FileHandle.standardOutput.write(Data("torn \(db.changes) rows\n".utf8))
    kill(getpid(), SIGKILL)
    _exit(137)
}
