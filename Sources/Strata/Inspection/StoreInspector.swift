public import Foundation
internal import StrataSQLite

/// Why a store could not be inspected. Each case maps to one exit code of the `strata` command.
public enum InspectionError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchFile(path: String)
    case isADirectory(path: String)
    case unreadable(path: String, reason: String)
    case notADatabase(path: String)
    case notAStrataStore(path: String)
    case unsupportedFormat(path: String, found: Int, supported: Int)
    /// Another connection holds a lock the read needs (busy past the timeout).
    case locked(path: String)
    case unknownCache(name: String)
    /// A crash left a journal that a read-only connection may not roll back (recovered
    /// automatically by the inspector's reads; seen only if that recovery failed).
    case hotJournal(path: String)
    /// The store is intact as far as anyone can tell, but can't be read without a write this
    /// process may not make here (a read-only mount, a file or folder without write permission):
    /// a `-wal` with commits not yet in the file, a crash's journal. `reason` says what and how to
    /// read it. Not corruption.
    case readOnly(path: String, reason: String)
    /// SQLite found the store's file malformed (`SQLITE_CORRUPT`) while reading it.
    case corrupt(path: String, message: String)
    /// A page read failed its checksum (nothing of it was read).
    case corruptPage(path: String, page: Int)
    /// `purge` was asked to remove a cache whose file name holds something other than a regular
    /// file (a folder, a symbolic link, …): refused before anything was removed.
    case notACacheFile(name: String, path: String)
    /// `purge` removed `removed`, then failed to remove `failed` (`error`); `notRemoved` (which
    /// starts with `failed`) is still there.
    case purgeIncomplete(removed: [String], failed: String, notRemoved: [String], error: SectionCacheError)
    case cache(SectionCacheError)
    case sqlite(String)
    /// The store's write-ahead log, left by a process that did not close the store, is damaged:
    /// reading would run SQLite's recovery, which drops the committed transactions the damage
    /// describes. Nothing was read or changed. See ``StoreError/walDamaged(_:)``.
    case walDamaged(WALDamage)

    public var description: String {
        switch self {
        case .noSuchFile(let path): "no such file: \(path)"
        case .isADirectory(let path): "\(path) is a directory, not a store file"
        case let .unreadable(path, reason): "cannot read \(path): \(reason)"
        case .notADatabase(let path): "\(path) is not an SQLite database"
        case .notAStrataStore(let path): "\(path) is an SQLite database but not a Strata store (no strata_meta table)"
        case let .unsupportedFormat(path, found, supported): "store \(path) has format version \(found); this Strata reads up to \(supported)"
        case .locked(let path): "store \(path) is locked by another connection; try again when it is idle"
        case .unknownCache(let name): "no cache named \(name.debugDescription)"
        case .hotJournal(let path): "store \(path) has a journal left by a crash that could not be rolled back"
        case let .readOnly(path, reason): "cannot read \(path) without write access: \(reason)"
        case let .corrupt(path, message): "store is corrupt: \(path): \(message)"
        case let .corruptPage(path, page): "store is corrupt: \(path): page \(page) fails its checksum"
        case let .notACacheFile(name, path): "cache \(name.debugDescription) is not a regular file (\(path)); nothing was removed"
        case let .purgeIncomplete(removed, failed, notRemoved, error):
            "could not remove cache \(failed.debugDescription): \(error); removed \(removed.count) of \(removed.count + notRemoved.count)"
                + " (\(removed.isEmpty ? "none" : removed.joined(separator: ", "))), not removed: \(notRemoved.joined(separator: ", "))"
        case .cache(let error): error.description
        case .sqlite(let message): message
        case .walDamaged(let damage):
            "\(damage). Nothing was read or changed: restore the store from a backup, or drop those transactions "
                + "with `strata store check --accept-wal-loss` (the damaged log is kept beside the store)."
        }
    }
}

/// What `strata store info` shows.
public struct StoreInfo: Codable, Sendable, Equatable {
    public struct EntityInfo: Codable, Sendable, Equatable {
        public var name: String
        public var generation: Int64
        public var rows: Int64
    }
    public struct Files: Codable, Sendable, Equatable {
        public var database: Int64
        public var wal: Int64?
        public var shm: Int64?
    }
    public var path: String
    public var storeUUID: String
    public var formatVersion: Int
    public var generation: Int64
    public var nonce: String
    public var modelVersion: String
    public var modelHash: String
    public var journalMode: String
    public var entities: [EntityInfo]
    public var files: Files
}

/// Read-only access to a store on disk without the app's code: the store carries its model, each
/// cache file its request. The `strata` command is a thin shell over this.
///
/// Every call opens its own connection, reads in one transaction and closes it again; nothing is
/// written to the store, and a store that an app has open (WAL) can be inspected meanwhile. Paths
/// reach the file system byte for byte (``FileSystemPath``), including ones that are not UTF-8.
public struct StoreInspector: Sendable {
    /// The store file. Exact only for a UTF-8 path: ``path`` is what the inspector opens.
    public let url: URL
    /// The store file's exact path.
    public let path: FileSystemPath
    /// The cache folder the cache calls use when they are given no `directory` (`nil`:
    /// `<store>.caches` beside the store).
    public let cacheDirectory: FileSystemPath?

    /// Drops the transactions a damaged write-ahead log holds past its damage
    /// (``InspectionError/walDamaged(_:)``), as SQLite's recovery does, after keeping a copy of
    /// the log beside the store as `<store>-wal.damaged-<seconds since 1970>`. Returns the damage,
    /// or `nil` when the log was not damaged (nothing done). Then the store reads as recovery
    /// leaves it.
    @discardableResult
    public func acceptWALLoss() throws(InspectionError) -> WALDamage? {
        let shown = path.description
        guard !OpenStores.contains(shown) else { return nil }
        do {
            guard let damage = try WALScanner.checkBeforeOpening(shown, accepts: true) else { return nil }
            // Recovery: one connection that reads, then closes (the log is now SQLite's again).
            var configuration = Connection.Configuration()
            configuration.createIfMissing = false
            configuration.setsJournalMode = false
            let db = try Connection(pathBytes: path.bytes, displayPath: shown, configuration: configuration)
            defer { db.close() }
            try db.execute("SELECT count(*) FROM sqlite_master")
            return damage
        } catch let error as InspectionError {
            throw error
        } catch {
            throw .unreadable(path: shown, reason: "\(error)")
        }
    }

    /// Checks that `url` names a readable regular file (the store itself is checked when read).
    public init(url: URL) throws(InspectionError) {
        try self.init(path: FileSystemPath(url))
    }

    /// Checks that `path` names a readable regular file (the store itself is checked when read).
    /// `cacheDirectory` is the store's cache folder when it is not the default one.
    public init(path: FileSystemPath, cacheDirectory: FileSystemPath? = nil) throws(InspectionError) {
        let shown = path.description
        let info: stat
        switch path.withCString({ POSIX.status(of: $0) }) {
        case .success(let found): info = found
        case .failure(let failure):
            if failure.code == ENOENT || failure.code == ENOTDIR { throw .noSuchFile(path: shown) }
            throw .unreadable(path: shown, reason: failure.message)
        }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw .isADirectory(path: shown) }
        if case .failure(let failure) = POSIX.access(path, R_OK) { throw .unreadable(path: shown, reason: failure.message) }
        self.path = path
        self.url = path.url
        self.cacheDirectory = cacheDirectory
    }

    /// Runs `body` in one read transaction on a new read-only connection. A hot journal left by
    /// a crash is first rolled back, as any SQLite writer opening the file would (that restores
    /// the last commit and changes nothing else).
    func read<T>(_ body: (Connection) throws -> T) throws(InspectionError) -> T {
        // A log no connection holds is recovered by the first read: a damaged one is refused
        // first (a coordinator of this process holding the store has recovered it already).
        if !OpenStores.contains(path.description) {
            let damage: WALDamage?
            do { damage = try WALScanner.damageBeforeRecovery(path.description) } catch { throw .unreadable(path: path.description + "-wal", reason: "\(error)") }
            if let damage { throw .walDamaged(damage) }
        }
        do {
            return try readOnce(body)
        } catch .hotJournal {
            do { try StoreCoordinator.recoverHotJournal(at: path) } catch { throw .sqlite("\(error)") }
            return try readOnce(body)
        }
    }

    private func readOnce<T>(_ body: (Connection) throws -> T) throws(InspectionError) -> T {
        let path = path.description
        do {
            let db: Connection
            if let cleaning = try openToCleanUp() {
                db = cleaning
            } else {
                var configuration = Connection.Configuration()
                configuration.busyTimeout = .milliseconds(500)
                do {
                    db = try Connection.openReadOnly(pathBytes: self.path.bytes, displayPath: path, configuration: configuration)
                } catch let error as ReadOnlyAccessError {
                    // Where the file and its folder can be written, a crash's journal is rolled
                    // back (`read`); elsewhere nothing can be, and that is said as it is.
                    if case .success = POSIX.access(self.path, W_OK), case .success = POSIX.access(self.path.absolute.parent, W_OK) {
                        throw InspectionError.hotJournal(path: path)
                    }
                    throw InspectionError.readOnly(path: path, reason: error.reason)
                }
            }
            defer { db.close() }
            try StringMatching.register(on: db)
            var tables = Set<String>()
            try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").forEachRow { tables.insert($0.string(at: 0)) }
            guard tables.contains("strata_meta"), tables.contains("strata_entity") else { throw InspectionError.notAStrataStore(path: path) }
            return try db.transaction(.deferred) { try body(db) }
        } catch let error as InspectionError {
            throw error
        } catch let error as SQLiteError {
            throw inspectionError(error, path: path)
        } catch let error as StoreError {
            if case .sqlite(let underlying) = error { throw inspectionError(underlying, path: path) }
            if case .corruptPage(_, let page) = error { throw .corruptPage(path: path, page: page) }
            throw .sqlite(error.description)
        } catch {
            throw .sqlite("\(error)")
        }
    }

    private func inspectionError(_ error: SQLiteError, path: String) -> InspectionError {
        if let page = error.corruptPage { return .corruptPage(path: path, page: page) }
        if .SQLITE_NOTADB ~= error.code { return .notADatabase(path: path) }
        if .SQLITE_CORRUPT ~= error.code { return .corrupt(path: path, message: error.message) }
        if .SQLITE_BUSY ~= error.code || .SQLITE_LOCKED ~= error.code { return .locked(path: path) }
        if .SQLITE_READONLY ~= error.code { return .hotJournal(path: path) }
        if .SQLITE_CANTOPEN ~= error.code { return .unreadable(path: path, reason: error.description) }
        return .sqlite(error.description)
    }

    /// Whether the file's header says WAL (file format write and read versions 2, at bytes 18 and 19).
    static func headerSaysWAL(_ path: FileSystemPath) -> Bool {
        SQLiteFileHeader(path: path)?.saysWAL ?? false
    }

    /// A read-write connection (that writes nothing) when the store is in WAL mode and nothing has
    /// it open, else `nil` (the caller opens read-only).
    ///
    /// Why: SQLite's read-only open of a WAL store that no connection has open (no `-wal`, no
    /// `-shm` beside it) creates an empty `-wal` and a 32 KB `-shm`, and a read-only connection
    /// may not remove them when it closes. A read-write connection does what every app's last
    /// connection does: at close it checkpoints (an empty WAL: nothing reaches the database
    /// file) and removes both, so the folder is left as it was. It is opened without creating the
    /// file, without setting the journal mode, and with `PRAGMA query_only`, so no statement of
    /// ours can write. It still takes SQLite's ordinary locks: if an app opens the store
    /// meanwhile, the two coordinate as any two connections do (the last one to close cleans up).
    /// Not `immutable=1` or `nolock=1`: those read without locks and could see a half-written
    /// commit of a writer that starts while we read.
    ///
    /// When `-wal` or `-shm` exists (an app has the store open, or left them), when the header
    /// says rollback journal, or when we may not write the file or its folder, the read-only
    /// connection is used: it creates nothing in the first two cases, and can't in the last.
    private func openToCleanUp() throws -> Connection? {
        guard SQLiteFileHeader(path: path)?.saysWAL == true else { return nil }
        for suffix in ["-wal", "-shm"] {
            guard case .failure(let failure) = path.appending(suffix: suffix).withCString({ POSIX.status(of: $0, followingLinks: false) }),
                  failure.code == ENOENT else { return nil }
        }
        guard case .success = POSIX.access(path, W_OK), case .success = POSIX.access(path.absolute.parent, W_OK) else { return nil }
        var configuration = Connection.Configuration()
        configuration.createIfMissing = false
        configuration.setsJournalMode = false
        configuration.busyTimeout = .milliseconds(500)
        let db: Connection
        do {
            db = try Connection(pathBytes: path.bytes, displayPath: path.description, configuration: configuration)
        } catch {
            return nil   // the read-only connection reports what is wrong
        }
        do {
            try db.execute("PRAGMA query_only = ON")
        } catch {
            db.close()
            throw error
        }
        return db
    }

    /// The store's metadata (one read transaction).
    public func metadata() throws(InspectionError) -> StoreMetadata {
        let metadata = try read { try StoreCoordinator.readMetadata($0) }
        guard metadata.formatVersion <= StoreCoordinator.formatVersion else {
            throw .unsupportedFormat(path: path.description, found: metadata.formatVersion, supported: StoreCoordinator.formatVersion)
        }
        return metadata
    }

    /// The model that made the store, from `strata_meta.model_json`.
    public func model() throws(InspectionError) -> Model {
        let json = try read { db -> String in
            let statement = try db.prepare("SELECT model_json FROM strata_meta WHERE id = 1")
            guard try statement.step() else { throw InspectionError.notAStrataStore(path: path.description) }
            return statement.string(at: 0)
        }
        do {
            return try Model(json: Data(json.utf8))
        } catch {
            throw .sqlite("the store's model JSON can't be read: \(error)")
        }
    }

    /// What `strata store info` prints.
    public func info() throws(InspectionError) -> StoreInfo {
        func size(_ file: FileSystemPath) -> Int64? { file.fileSize }
        // Sizes first: the read below may create a -wal and -shm for its own use (and remove them again).
        let files = StoreInfo.Files(database: size(self.path) ?? 0, wal: size(self.path.appending(suffix: "-wal")),
                                    shm: size(self.path.appending(suffix: "-shm")))
        let path = self.path.description
        let (metadata, journal, rows): (StoreMetadata, String, [String: Int64]) = try read { db in
            let metadata = try StoreCoordinator.readMetadata(db)
            var journal = "unknown"
            try db.prepare("PRAGMA journal_mode").forEachRow { journal = $0.string(at: 0) }
            // An immutable connection (a WAL store read where nothing can be written) reports
            // "delete", not the file's mode: the header's read and write versions say (2: WAL).
            if db.configuration.immutable {
                journal = Self.headerSaysWAL(self.path) ? "wal" : journal
            }
            var rows: [String: Int64] = [:]
            for name in metadata.entityGenerations.keys {
                try db.prepare("SELECT count(*) FROM \(quoted(name))").forEachRow { rows[name] = $0.int64(at: 0) }
            }
            return (metadata, journal, rows)
        }
        guard metadata.formatVersion <= StoreCoordinator.formatVersion else {
            throw .unsupportedFormat(path: path, found: metadata.formatVersion, supported: StoreCoordinator.formatVersion)
        }
        return StoreInfo(
            path: path, storeUUID: metadata.storeUUID.uuidString, formatVersion: metadata.formatVersion,
            generation: metadata.generation, nonce: metadata.nonce.map { String(format: "%02x", $0) }.joined(),
            modelVersion: metadata.modelVersion, modelHash: metadata.modelHash, journalMode: journal.lowercased(),
            entities: metadata.entityGenerations.keys.sorted().map {
                StoreInfo.EntityInfo(name: $0, generation: metadata.entityGenerations[$0] ?? 0, rows: rows[$0] ?? 0)
            },
            files: files)
    }

    /// The store's caches: in `directory` when given, else in ``cacheDirectory``, else in the
    /// default folder beside the store.
    public func caches(directory: URL? = nil) -> SectionCacheStore {
        SectionCacheStore(storePath: path, directory: directory.map(FileSystemPath.init) ?? cacheDirectory)
    }

    /// Runs a cache's request against the store as it is now, from one read transaction: the
    /// file a fresh cache would hold (its request and model from the store and the file, not the app).
    public func compute(_ request: CanonicalRequest) throws(InspectionError) -> SectionCacheFile {
        let model = try model()
        return try read { db in
            let fetch = try request.fetchRequest()
            let plan = try FetchPlan(fetch, schema: model.schema)
            let metadata = try StoreCoordinator.readMetadata(db)
            return try SectionCacheFile.compute(plan.keyAndSortValuesSQL(), plan.arguments, sectioned: request.sectionKeyPath != nil,
                                                on: db, stamp: SectionCacheStamp(metadata, entities: plan.entities), request: request)
        }
    }
}

extension SectionCacheFile {
    /// Runs `sql` (primary key, then the section key's value when sectioned, then anything) and
    /// cuts sections from the ordered rows: what the request holds. Default index titles.
    /// With `versionAt`, the column of each row's `_version`: the file holds their stamps.
    static func compute(_ sql: String, _ arguments: [SQLiteValue], sectioned: Bool, versionAt: Int32? = nil, on db: Connection,
                        stamp: SectionCacheStamp, request: CanonicalRequest) throws -> SectionCacheFile {
        var sections: [SectionCacheSection] = []
        var keys: [Int64] = []
        var stamps: [UInt32] = []
        let statement = try db.cachedStatement(sql)
        try statement.bind(arguments)
        try statement.forEachRow { row in
            if let versionAt { stamps.append(AnyFetchedResultsController.versionStamp(row.int64(at: versionAt))) }
            let value: SQLiteValue = sectioned ? AnyFetchedResultsController.sectionValue(row.value(at: 1)) : .null
            if let last = sections.last, ScalarOrder.compare(last.value, value) == 0 {
                sections[sections.count - 1].count += 1
            } else {
                let name = sectioned ? AnyFetchedResultsController.sectionName(value) : ""
                let title = sectioned ? AnyFetchedResultsController.defaultIndexTitle(name) : nil
                sections.append(SectionCacheSection(value: value, name: name, indexTitle: title, count: 1))
            }
            keys.append(row.int64(at: 0))
        }
        return SectionCacheFile(stamp: stamp, request: request, sections: sections, keys: keys, stamps: versionAt == nil ? nil : stamps)
    }
}
