import ArgumentParser
import Foundation
import Strata

/// `strata store`: the store file itself.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Look at a store file without opening it for writing.",
        discussion: """
            Example:
              strata store info /tmp/goods.sqlite
              strata store check /tmp/goods.sqlite
            """,
        subcommands: [StoreInfoCommand.self, StoreCheckCommand.self]
    )
}

/// The STORE argument every command takes.
struct StoreArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The store file (the SQLite file a StoreCoordinator opened).", valueName: "store"))
    var store: String

    /// STORE's exact bytes, made absolute.
    func path() throws -> FileSystemPath { try RawArguments.path(store).absolute }

    /// The library's inspector for STORE (checks that it is a readable file; opens nothing), with
    /// `cacheDirectory` as its cache folder (`nil`: the default one).
    func inspector(cacheDirectory: FileSystemPath? = nil) throws -> StoreInspector {
        try StoreInspector(path: path(), cacheDirectory: cacheDirectory)
    }
}

/// `strata store info STORE [--json]`: ``StoreInspector/info()``.
struct StoreInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a store's identity, generations, model, journal mode and file sizes.",
        discussion: """
            Reads the store in one read-only transaction (StoreInspector.info()): path, store UUID, \
            format version, generation and nonce, every entity's generation and row count, the \
            model's version and hash, the journal mode, and the sizes of the database, -wal and \
            -shm files.

            Example:
              strata store info /tmp/goods.sqlite
              strata store info /tmp/goods.sqlite --json | jq .generation
            """
    )

    @OptionGroup var location: StoreArgument
    @Flag(help: "Print JSON (StoreInfo, sorted keys) instead of text.")
    var json = false

    func run() throws {
        let inspector = try location.inspector()
        _ = try inspector.metadata()   // rejects a format this Strata can't read; info() alone does not
        let info = try inspector.info()
        if json { return try printJSON(info) }
        var fields = Table([("", .left), ("", .left)])
        fields.append(["path", info.path])
        fields.append(["store UUID", info.storeUUID])
        fields.append(["format", "\(info.formatVersion)"])
        fields.append(["generation", "\(info.generation)"])
        fields.append(["nonce", info.nonce])
        fields.append(["model", "\(info.modelVersion), hash \(info.modelHash)"])
        fields.append(["journal mode", info.journalMode])
        fields.append(["files", "database \(Format.bytes(info.files.database)), "
                       + "-wal \(info.files.wal.map(Format.bytes) ?? "none"), -shm \(info.files.shm.map(Format.bytes) ?? "none")"])
        fields.print(header: false)
        print("")
        var entities = Table([("ENTITY", .left), ("GENERATION", .right), ("ROWS", .right)])
        for entity in info.entities { entities.append([entity.name, "\(entity.generation)", "\(entity.rows)"]) }
        entities.print()
    }
}

/// `strata store check STORE [--json]`: ``StoreInspector/check()``.
struct StoreCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify every page's checksum, SQLite's integrity check and Strata's invariants.",
        discussion: """
            Reads the whole store and writes nothing (StoreInspector.check()): every page of the \
            database file against its checksum, PRAGMA integrity_check, and Strata's invariants \
            (one meta row, entity generations not above the store's, keys below their sequence, \
            join rows naming live objects). Exit status 0 when all is clean, 65 when anything is \
            corrupt (the first bad pages are listed).

            A write-ahead log left by a process that did not close the store is read first, as \
            SQLite's recovery would read it: when committed transactions lie beyond a damaged \
            frame (recovery would drop them without a word), the store is not opened, the frames \
            are reported and the exit status is 65. --accept-wal-loss drops them as recovery \
            does, after keeping a copy of the log beside the store (<store>-wal.damaged-<time>), \
            then checks the store.

            Example:
              strata store check /tmp/goods.sqlite
              strata store check /tmp/goods.sqlite --json | jq .badPages
            """
    )

    @OptionGroup var location: StoreArgument
    @Flag(help: "Print JSON (StoreCheckReport, sorted keys) instead of text.")
    var json = false
    @Flag(help: "Drop the transactions a damaged write-ahead log holds past its damage (a copy of the log is kept), then check.")
    var acceptWALLoss = false

    func run() throws {
        let inspector = try location.inspector()
        if acceptWALLoss, let dropped = try inspector.acceptWALLoss() {
            printError("strata: dropped \(dropped.lostTransactions) committed transactions past frame \(dropped.brokenFrame) of \(dropped.path); the damaged log is kept beside the store")
        }
        let report = inspector.check()
        if json {
            try printJSON(report)
        } else {
            var fields = Table([("", .left), ("", .left)])
            fields.append(["path", report.path])
            fields.append(["page checksums", report.checksummed
                ? "\(report.pages) pages of \(Format.bytes(Int64(report.pageSize))), \(report.badPageCount) bad"
                    + (report.badPages.isEmpty ? "" : " (first: \(report.badPages.map(String.init).joined(separator: ", ")))")
                : "none (a store made without them; StoreCoordinator.addPageChecksums(toStoreAt:) adds them)"])
            if let damage = report.walDamage {
                fields.append(["write-ahead log", "DAMAGED at frame \(damage.brokenFrame) of \(damage.frames): recovery would keep "
                    + "\(damage.keptTransactions) transactions and drop \(damage.lostTransactions) (commit frames "
                    + "\(damage.lostCommitFrames.map(String.init).joined(separator: ", "))); not opened (--accept-wal-loss drops them)"])
            }
            fields.append(["integrity_check", report.integrity.isEmpty ? "ok" : report.integrity.prefix(5).joined(separator: "; ")])
            fields.append(["invariants", report.invariants.isEmpty ? "ok" : report.invariants.joined(separator: "; ")])
            fields.append(["result", report.isCorrupt ? "CORRUPT" : report.notChecked.map { "NOT CHECKED: \($0)" } ?? "clean"])
            fields.print(header: false)
        }
        if report.isCorrupt { throw ExitCode(ExitStatus.dataError.rawValue) }
        // A store that could not be read is not called corrupt: the reason's own status.
        if let error = report.notCheckedError { throw ExitCode(ExitStatus(for: error).rawValue) }
    }
}
