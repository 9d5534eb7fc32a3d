internal import Foundation
internal import StrataSQLite

extension StoreCoordinator {
    struct ExistingStore {
        var uuid: UUID
        var modelJSON: String
    }

    /// Reads an existing store's identity through a read-only connection and checks it against
    /// `model`. Returns `nil` for a missing or empty file. Writes nothing.
    static func probe(path: String, model: Model) throws -> ExistingStore? {
        guard let size = FileSystemPath(path).fileSize, size > 0 else { return nil }
        do {
            return try probeReadOnly(path: path, model: model)
        } catch StoreError.sqlite(let error) where .SQLITE_READONLY ~= error.code {
            // A crash mid-commit left a hot rollback journal (or an unrecovered WAL) that a
            // read-only connection may not roll back. Let SQLite recover it as any opening
            // writer would — that restores the last commit and writes nothing else — then probe.
            try recoverHotJournal(path: path)
            return try probeReadOnly(path: path, model: model)
        }
    }

    /// Opens the existing, non-empty file at `path` once, for the coordinator to keep: read-write,
    /// but writing nothing until the file is known to be a Strata store of `model`, or one that
    /// `options.migration` may migrate. Until then the journal mode is left as the file has it,
    /// and closing the connection does not checkpoint a WAL that a crash left into the file, so a
    /// refused file keeps its bytes. (A hot rollback journal is rolled back, as by any writer.)
    ///
    /// Returns the store's identity (`nil` for a database with no tables, which gets created) and
    /// the connection; no connection when a mapping model rebuilt the file beside it.
    static func openExisting(path: String, model: Model, configuration: Connection.Configuration,
                             options: StoreOptions) throws -> (ExistingStore?, Connection?) {
        var checking = configuration
        checking.setsJournalMode = false
        checking.createIfMissing = false
        let db: Connection
        do {
            db = try Connection(path: path, configuration: checking)
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
            throw storeError(error, openingForWritesAt: path)
        }
        do {
            try db.setCheckpointOnClose(false)
            let existing: ExistingStore?
            do {
                existing = try existingStore(on: db, path: path, model: model)
            } catch StoreError.modelMismatch where options.migration.allowsMigration {
                try db.setJournalMode(configuration.journalMode)
                try db.setCheckpointOnClose(true)
                guard try migrateInPlace(db, path: path, model: model, mode: options.migration,
                                         progress: options.migrationProgress) else {
                    // A mapping model builds a new file and swaps it in, which this connection
                    // would not see: migrate by path, then read the new file's identity.
                    db.close()
                    try migrateIfNeeded(path: path, model: model, mode: options.migration, configuration: configuration,
                                        progress: options.migrationProgress)
                    return (try probe(path: path, model: model), nil)
                }
                let uuid = try db.prepare("SELECT store_uuid FROM strata_meta WHERE id = 1")
                guard try uuid.step(), let storeUUID = UUID(uuidString: uuid.string(at: 0)) else {
                    throw StoreError.notAStrataStore(path: path)
                }
                uuid.reset()
                // The migration wrote `model`'s JSON into the metadata.
                return (ExistingStore(uuid: storeUUID, modelJSON: String(decoding: model.jsonData(), as: UTF8.self)), db)
            }
            if configuration.setsJournalMode { try db.setJournalMode(configuration.journalMode) }
            try db.setCheckpointOnClose(true)
            return (existing, db)
        } catch {
            db.close()
            if let error = error as? SQLiteError {
                if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
                throw storeError(error, openingForWritesAt: path)
            }
            throw error
        }
    }

    /// Opens `path` read-write (never creating it) and reads once, so that SQLite rolls back a
    /// hot journal left by a crash.
    static func recoverHotJournal(path: String) throws {
        try recoverHotJournal(at: FileSystemPath(path))
    }

    /// ``recoverHotJournal(path:)`` for a path given as its exact bytes.
    static func recoverHotJournal(at path: FileSystemPath) throws {
        var configuration = Connection.Configuration()
        configuration.createIfMissing = false
        // Keep the store's journal mode: a hot rollback journal means a rollback-journal store.
        configuration.journalMode = (try? POSIX.access(path.appending(suffix: "-journal"), F_OK).get()) != nil ? .delete : .wal
        do {
            let db = try Connection(pathBytes: path.bytes, displayPath: path.description, configuration: configuration)
            defer { db.close() }
            try db.prepare("SELECT count(*) FROM sqlite_master").forEachRow { _ in }
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path.description) }
            throw StoreError(error, path: path.description)
        }
    }

    private static func probeReadOnly(path: String, model: Model) throws -> ExistingStore? {
        var configuration = Connection.Configuration()
        configuration.readOnly = true
        do {
            let probe = try Connection(path: path, configuration: configuration)
            defer { probe.close() }
            return try existingStore(on: probe, path: path, model: model)
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
            throw StoreError(error, path: path)
        }
    }

    /// What the store open on `db` is: `nil` when it has no tables; its identity when it is a
    /// Strata store of `model`; else the error that refuses it.
    static func existingStore(on db: Connection, path: String, model: Model) throws -> ExistingStore? {
        let tables = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        var names = Set<String>()
        try tables.forEachRow { names.insert($0.string(at: 0)) }
        if names.isEmpty { return nil }
        guard names.contains("strata_meta"), names.contains("strata_entity") else {
            throw StoreError.notAStrataStore(path: path)
        }
        let meta = try db.prepare("SELECT store_uuid, format_version, model_version, model_hash, model_json FROM strata_meta WHERE id = 1")
        defer { meta.reset() }
        guard try meta.step(), let uuid = UUID(uuidString: meta.string(at: 0)) else {
            throw StoreError.notAStrataStore(path: path)
        }
        let format = Int(meta.int64(at: 1))
        guard format <= formatVersion else {
            throw StoreError.unsupportedFormat(path: path, found: format, supported: formatVersion)
        }
        let storeHash = meta.string(at: 3)
        guard storeHash == model.versionHash else {
            throw StoreError.modelMismatch(path: path, storeVersion: meta.string(at: 2), storeHash: storeHash,
                                           modelVersion: model.versionIdentifier, modelHash: model.versionHash)
        }
        return ExistingStore(uuid: uuid, modelJSON: meta.string(at: 4))
    }

    /// Adds `strata_entity.nonce` to a store written before it existed (the nonce of the commit
    /// that last wrote each entity; empty until the entity's next write).
    static func upgradeEntityTable(_ db: Connection) throws {
        var columns = Set<String>()
        try db.prepare("PRAGMA table_info(strata_entity)").forEachRow { columns.insert($0.string(at: 1)) }
        guard !columns.contains("nonce") else { return }
        try db.execute("ALTER TABLE strata_entity ADD COLUMN nonce BLOB NOT NULL DEFAULT x''")
    }

    /// Creates the schema and metadata of a new store in one transaction.
    static func create(_ db: Connection, model: Model, uuid: UUID) throws {
        try db.transaction(.immediate) {
            try db.execute("""
                CREATE TABLE strata_meta (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    store_uuid TEXT NOT NULL,
                    format_version INTEGER NOT NULL,
                    generation INTEGER NOT NULL,
                    nonce BLOB NOT NULL,
                    model_version TEXT NOT NULL,
                    model_hash TEXT NOT NULL,
                    model_json TEXT NOT NULL,
                    created_at REAL NOT NULL)
                """)
            try db.execute("""
                CREATE TABLE strata_entity (
                    name TEXT PRIMARY KEY,
                    generation INTEGER NOT NULL,
                    next_pk INTEGER NOT NULL,
                    version_hash TEXT NOT NULL,
                    nonce BLOB NOT NULL DEFAULT x'') WITHOUT ROWID
                """)
            for sql in model.schema.creationSQL { try db.execute(sql) }
            try HistoryLog.createTables(db)
            try db.prepare("INSERT INTO strata_meta VALUES (1, ?, ?, 0, ?, ?, ?, ?, ?)").execute(
                .text(uuid.uuidString), .integer(Int64(formatVersion)), .blob(randomNonce()),
                .text(model.versionIdentifier), .text(model.versionHash),
                .text(String(decoding: model.jsonData(), as: UTF8.self)), .real(Date().timeIntervalSince1970))
            let insert = try db.prepare("INSERT INTO strata_entity (name, generation, next_pk, version_hash) VALUES (?, 0, 1, ?)")
            for entity in model.entities {
                try insert.execute(.text(entity.name), .text(model.entityVersionHashes[entity.name] ?? ""))
            }
        }
    }

    static func readMetadata(_ db: Connection) throws -> StoreMetadata {
        let meta = try db.prepare("SELECT store_uuid, format_version, generation, nonce, model_version, model_hash FROM strata_meta WHERE id = 1")
        guard try meta.step() else { throw StoreError.notAStrataStore(path: db.path) }
        var result = StoreMetadata(
            storeUUID: UUID(uuidString: meta.string(at: 0)) ?? UUID(), formatVersion: Int(meta.int64(at: 1)),
            generation: meta.int64(at: 2), nonce: meta.data(at: 3), entityGenerations: [:],
            modelVersion: meta.string(at: 4), modelHash: meta.string(at: 5))
        meta.reset()
        try db.prepare("SELECT name, generation, nonce FROM strata_entity").forEachRow {
            result.entityGenerations[$0.string(at: 0)] = $0.int64(at: 1)
            result.entityNonces[$0.string(at: 0)] = $0.data(at: 2)
        }
        return result
    }
}
