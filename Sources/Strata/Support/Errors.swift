public import Foundation
public import StrataSQLite

/// A problem with a store file: opening, reading, writing.
public enum StoreError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The store was created by a different model. Nothing was written.
    case modelMismatch(path: String, storeVersion: String, storeHash: String, modelVersion: String, modelHash: String)
    /// The file is not an SQLite database.
    case notADatabase(path: String)
    /// The file is an SQLite database without Strata's metadata.
    case notAStrataStore(path: String)
    /// The store was written by a newer Strata.
    case unsupportedFormat(path: String, found: Int, supported: Int)
    /// A URI that does not name an object of this store.
    case uriOfAnotherStore(uri: String, storeUUID: UUID)
    case malformedURI(String)
    /// SQLite failed; the underlying error carries the SQL.
    case sqlite(SQLiteError)
    /// Page `page` (1-based) of the store file (or of its WAL) fails its checksum: the bytes on
    /// disk are not the bytes Strata wrote. Nothing was read from the page; nothing was written.
    /// `strata store check` lists every bad page; restore the store from a backup.
    case corruptPage(path: String, page: Int)
    /// ``StoreCoordinator/replaceStore(withContentsOf:)`` was given a store whose pages carry
    /// checksums when this one's do not, or the other way round: SQLite copies pages as they are,
    /// so the two must agree. Nothing was changed.
    case pageChecksumsDiffer(path: String, source: String, storeHasChecksums: Bool)
    /// The store's coordinator was closed (``StoreCoordinator/close()``): thrown by the APIs that
    /// read a fault's row on request (``ManagedObject/load()``, ``ManagedObjectContext/fulfill(_:)``);
    /// every other use of a closed coordinator is a precondition failure.
    case closed(path: String)
    /// Another connection replaced the store under this coordinator (another UUID) or restored
    /// an older copy of it, before this coordinator's follower noticed: the commit wrote nothing
    /// (a pending edit is never saved over a row that only shares its key). The contexts drop
    /// their objects once the coordinator catches up — its follower, or
    /// ``StoreCoordinator/processExternalChanges()`` when it does not follow
    /// (``ReloadReason/storeReplaced``); commits work again from then on.
    case storeReplacedElsewhere(path: String)
    /// The store can be read but not written: it was opened with ``StoreOptions/readOnly`` (and
    /// a save, a batch request, a migration or a replacement was asked of it), or it lies where
    /// this process may not write (a read-only mount, a file or folder without write permission)
    /// and was opened without it, or it needs a write before it can be read (a `-wal` with
    /// commits left on a read-only mount, a migration). `reason` says which, and what to do.
    /// Nothing was written; a refused save leaves the context as it was.
    case readOnly(path: String, reason: String)
    /// Another connection (another coordinator, another process) held the store's write lock for
    /// longer than ``StoreOptions/busyTimeout``: the commit was not made, and the context that
    /// saved is as it was (save again later). Reads never wait for it (WAL readers).
    case busy(path: String, timeout: Duration)
    /// The store's write-ahead log, left by a process that did not close the store (a crash, a
    /// kill), is damaged: committed transactions lie beyond a frame SQLite's recovery would stop
    /// at, and opening would drop them without a word. Nothing was opened or changed. The store
    /// opens with ``StoreOptions/acceptsWALLoss`` (dropping exactly what the damage describes,
    /// the damaged log kept beside the store for inspection); `strata store check` reports it.
    case walDamaged(WALDamage)

    /// The store error for an SQLite error on the store at `path`: a failed page checksum
    /// becomes ``corruptPage(path:page:)``, a lock held past the busy timeout ``busy(path:timeout:)``,
    /// anything else ``sqlite(_:)``.
    public init(_ error: SQLiteError, path: String, busyTimeout: Duration? = nil) {
        if let page = error.corruptPage {
            self = .corruptPage(path: path, page: page)
        } else if .SQLITE_BUSY ~= error.code, let busyTimeout {
            self = .busy(path: path, timeout: busyTimeout)
        } else {
            self = .sqlite(error)
        }
    }

    public var description: String {
        switch self {
        case let .modelMismatch(path, storeVersion, storeHash, modelVersion, modelHash):
            "store \(path) was created by model version \(storeVersion) (hash \(storeHash.prefix(12))…), "
                + "not by model version \(modelVersion) (hash \(modelHash.prefix(12))…); open it with the model that created it. The file was not touched."
        case .notADatabase(let path): "\(path) is not an SQLite database"
        case .notAStrataStore(let path): "\(path) is an SQLite database but not a Strata store (no strata_meta table)"
        case let .unsupportedFormat(path, found, supported): "store \(path) has format version \(found); this Strata reads up to \(supported)"
        case let .uriOfAnotherStore(uri, uuid): "\(uri) names an object of another store (this store is \(uuid.uuidString))"
        case .malformedURI(let uri): "\(uri) is not a strata://<store-uuid>/<Entity>/<pk> URI"
        case .sqlite(let error): error.description
        case .closed(let path): "the store \(path) was closed: open a new coordinator to read it"
        case .storeReplacedElsewhere(let path):
            "the store \(path) was replaced or restored by another connection: nothing was written; once this coordinator has caught up (its follower, or processExternalChanges()) the contexts drop their objects: fetch again"
        case let .readOnly(path, reason): "store \(path) is read-only here: \(reason). Nothing was written."
        case let .busy(path, timeout):
            "store \(path) is locked by another connection (another coordinator or process) for longer than the busy timeout "
                + "(\(timeout)); nothing was written and the context still has its changes: save again later"
                + " (or raise StoreOptions.busyTimeout)"
        case let .pageChecksumsDiffer(path, source, storeHasChecksums):
            storeHasChecksums
                ? "store \(path) has page checksums and \(source) does not: give a copy of \(source) checksums first "
                    + "(StoreCoordinator.addPageChecksums(toStoreAt:)), then replace. Nothing was changed."
                : "\(source) has page checksums and store \(path) does not: close the store, give it checksums "
                    + "(StoreCoordinator.addPageChecksums(toStoreAt:)), then replace. Nothing was changed."
        case .walDamaged(let damage):
            "\(damage). Nothing was opened or changed: restore the store from a backup, or open it with "
                + "StoreOptions.acceptsWALLoss (`strata store check --accept-wal-loss`) to drop those transactions, the damaged log kept beside it."
        case let .corruptPage(path, page):
            "page \(page) of store \(path) fails its checksum: the file was changed outside SQLite (a disk or copy error); "
                + "nothing was read from it. Run `strata store check` to list the damage and restore the store from a backup."
        }
    }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.description == rhs.description }
}

/// A wrong key, a wrong value or a missing object: what comes from a caller's data, not a bug.
public enum ObjectError: Error, Sendable, CustomStringConvertible, Equatable {
    case unknownEntity(String)
    case unknownKey(entity: String, key: String)
    /// `expected` is the attribute type or destination entity; `actual` describes the value given.
    case wrongType(entity: String, key: String, expected: String, actual: String)
    case invalidValue(entity: String, key: String, reason: String)
    /// The object does not exist in the store (or was deleted).
    case objectNotFound(ObjectID)
    /// A relationship was given an object that lives in another context.
    case objectInAnotherContext(entity: String, key: String)
    /// A `Codable` attribute's stored bytes don't decode as `type` (``ManagedObject/decodedValue(forKey:as:)``).
    case undecodableValue(entity: String, key: String, type: String, reason: String)

    public var description: String {
        switch self {
        case .unknownEntity(let name): "the model has no entity named '\(name)'"
        case let .unknownKey(entity, key): "entity \(entity) has no property '\(key)'"
        case let .wrongType(entity, key, expected, actual): "\(entity).\(key) takes \(expected), not \(actual)"
        case let .invalidValue(entity, key, reason): "\(entity).\(key): \(reason)"
        case .objectNotFound(let id): "object \(id) does not exist in the store"
        case let .objectInAnotherContext(entity, key):
            "\(entity).\(key) was given an object from another context; use context.object(with: object.objectID)"
        case let .undecodableValue(entity, key, type, reason): "\(entity).\(key) holds \(reason) as \(type)"
        }
    }
}

/// One broken rule found by validation.
public struct ValidationFailure: Sendable, Equatable, CustomStringConvertible {
    public enum Rule: String, Sendable {
        case required, minValue, maxValue, minLength, maxLength, regex, deny
        /// A unique key another row holds (a library import's row whose second key is taken).
        case unique
    }
    public var objectID: ObjectID
    public var key: String
    public var rule: Rule
    public var message: String

    public var description: String { "\(objectID) \(key): \(rule.rawValue) — \(message)" }
}

/// A save refused before anything was written. Every context and the store are as they were.
public struct ValidationError: Error, Sendable, CustomStringConvertible, Equatable {
    public var failures: [ValidationFailure]
    public var description: String {
        "save refused, \(failures.count) validation failure(s):\n" + failures.map { "  " + $0.description }.joined(separator: "\n")
    }
}
