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
    case cache(SectionCacheError)
    case sqlite(String)

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
        case .cache(let error): error.description
        case .sqlite(let message): message
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
/// Every call opens its own read-only connection and closes it again; nothing is written to the
/// store, and a store that an app has open (WAL) can be inspected meanwhile.
public struct StoreInspector: Sendable {
    public let url: URL

    /// Checks that `url` names a readable regular file (the store itself is checked when read).
    public init(url: URL) throws(InspectionError) {
        let path = url.path
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw .noSuchFile(path: path) }
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw .isADirectory(path: path) }
        guard access(path, R_OK) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        self.url = url
    }

    /// Runs `body` in one read transaction on a new read-only connection. A hot journal left by
    /// a crash is first rolled back, as any SQLite writer opening the file would (that restores
    /// the last commit and changes nothing else).
    func read<T>(_ body: (Connection) throws -> T) throws(InspectionError) -> T {
        do {
            return try readOnce(body)
        } catch .hotJournal {
            do { try StoreCoordinator.recoverHotJournal(path: url.path) } catch { throw .sqlite("\(error)") }
            return try readOnce(body)
        }
    }

    private func readOnce<T>(_ body: (Connection) throws -> T) throws(InspectionError) -> T {
        let path = url.path
        do {
            var configuration = Connection.Configuration()
            configuration.readOnly = true
            configuration.busyTimeout = .milliseconds(500)
            let db = try Connection(path: path, configuration: configuration)
            defer { db.close() }
            try StringMatching.register(on: db)
            var tables = Set<String>()
            try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").forEachRow { tables.insert($0.string(at: 0)) }
            guard tables.contains("strata_meta"), tables.contains("strata_entity") else { throw InspectionError.notAStrataStore(path: path) }
            return try db.transaction(.deferred) { try body(db) }
        } catch let error as InspectionError {
            throw error
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw .notADatabase(path: path) }
            if .SQLITE_BUSY ~= error.code || .SQLITE_LOCKED ~= error.code { throw .locked(path: path) }
            if .SQLITE_READONLY ~= error.code { throw .hotJournal(path: path) }
            if .SQLITE_CANTOPEN ~= error.code { throw .unreadable(path: path, reason: error.description) }
            throw .sqlite(error.description)
        } catch let error as StoreError {
            throw .sqlite(error.description)
        } catch {
            throw .sqlite("\(error)")
        }
    }

    /// The store's metadata (one read transaction).
    public func metadata() throws(InspectionError) -> StoreMetadata {
        let metadata = try read { try StoreCoordinator.readMetadata($0) }
        guard metadata.formatVersion <= StoreCoordinator.formatVersion else {
            throw .unsupportedFormat(path: url.path, found: metadata.formatVersion, supported: StoreCoordinator.formatVersion)
        }
        return metadata
    }

    /// The model that made the store, from `strata_meta.model_json`.
    public func model() throws(InspectionError) -> Model {
        let json = try read { db -> String in
            let statement = try db.prepare("SELECT model_json FROM strata_meta WHERE id = 1")
            guard try statement.step() else { throw InspectionError.notAStrataStore(path: url.path) }
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
        let path = url.path
        func size(_ file: String) -> Int64? {
            (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value
        }
        // Sizes first: a read-only open of a WAL store nobody has open creates its -wal and -shm.
        let files = StoreInfo.Files(database: size(path) ?? 0, wal: size(path + "-wal"), shm: size(path + "-shm"))
        let (metadata, journal, rows): (StoreMetadata, String, [String: Int64]) = try read { db in
            let metadata = try StoreCoordinator.readMetadata(db)
            var journal = "unknown"
            try db.prepare("PRAGMA journal_mode").forEachRow { journal = $0.string(at: 0) }
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

    /// The store's caches (default folder unless `directory`).
    public func caches(directory: URL? = nil) -> SectionCacheStore {
        SectionCacheStore(storeURL: url, directory: directory)
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
    static func compute(_ sql: String, _ arguments: [SQLiteValue], sectioned: Bool, on db: Connection,
                        stamp: SectionCacheStamp, request: CanonicalRequest) throws -> SectionCacheFile {
        var sections: [SectionCacheSection] = []
        var keys: [Int64] = []
        let statement = try db.cachedStatement(sql)
        try statement.bind(arguments)
        try statement.forEachRow { row in
            let value: SQLiteValue = sectioned ? FetchedResultsController.sectionValue(row.value(at: 1)) : .null
            if let last = sections.last, ScalarOrder.compare(last.value, value) == 0 {
                sections[sections.count - 1].count += 1
            } else {
                let name = sectioned ? FetchedResultsController.sectionName(value) : ""
                let title = sectioned ? FetchedResultsController.defaultIndexTitle(name) : nil
                sections.append(SectionCacheSection(value: value, name: name, indexTitle: title, count: 1))
            }
            keys.append(row.int64(at: 0))
        }
        return SectionCacheFile(stamp: stamp, request: request, sections: sections, keys: keys)
    }
}
