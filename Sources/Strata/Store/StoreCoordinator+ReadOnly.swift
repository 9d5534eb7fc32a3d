internal import Foundation
internal import StrataSQLite

// Read-only stores (StoreOptions.readOnly): no writer connection, every connection read-only;
// see the ReadOnlyStores article.
extension StoreCoordinator {
    /// Opens an existing store for reading only: its connection (the one metadata reads and
    /// `processExternalChanges()` use; the readers are made like it) and its UUID. Writes nothing.
    static func openReadOnly(path: String, model: Model, options: StoreOptions,
                             configuration: Connection.Configuration) throws -> (Connection, UUID) {
        guard let size = FileSystemPath(path).fileSize, size > 0 else {
            throw StoreError.readOnly(path: path, reason: FileSystemPath(path).fileSize == nil
                ? "there is no store at this path, and a store opened read-only is never created"
                : "the file is empty: a store opened read-only is never created")
        }
        let db: Connection
        do {
            db = try Connection.openReadOnly(pathBytes: Array(path.utf8), displayPath: path, configuration: configuration)
        } catch let error as ReadOnlyAccessError {
            throw StoreError.readOnly(path: path, reason: error.reason)
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
            throw StoreError(error, path: path)
        }
        do {
            let existing: ExistingStore?
            do {
                existing = try existingStore(on: db, path: path, model: model)
            } catch let StoreError.modelMismatch(_, storeVersion, _, modelVersion, _) where options.migration.allowsMigration {
                throw StoreError.readOnly(path: path, reason: "the store was made by model version \(storeVersion) and needs a "
                    + "migration to \(modelVersion), which writes; migrate it where it can be written, then open it read-only")
            }
            guard let existing else { throw StoreError.notAStrataStore(path: path) }
            var columns = Set<String>()
            try db.prepare("PRAGMA table_info(strata_entity)").forEachRow { columns.insert($0.string(at: 1)) }
            guard columns.contains("nonce") else {
                throw StoreError.readOnly(path: path, reason: "the store was written by an earlier Strata and needs a one-column "
                    + "upgrade of strata_entity, which writes; open it once with write access")
            }
            db.endReads()
            return (db, existing.uuid)
        } catch {
            db.close()
            if let error = error as? SQLiteError { throw StoreError(error, path: path) }
            throw error
        }
    }

    /// The error for a failed open for writing: when SQLite could not open the file or write
    /// beside it and this process may not write the file or its folder, ``StoreError/readOnly(path:reason:)``
    /// saying so and pointing at ``StoreOptions/readOnly``; else the SQLite error.
    static func storeError(_ error: SQLiteError, openingForWritesAt path: String) -> StoreError {
        guard .SQLITE_CANTOPEN ~= error.code || .SQLITE_READONLY ~= error.code else { return StoreError(error, path: path) }
        let file = FileSystemPath(path)
        for (what, target) in [("the store file", file), ("its folder", file.absolute.parent)] {
            guard case .failure(let failure) = POSIX.access(target, W_OK) else { continue }
            let code = failure.code
            guard code == EROFS || code == EACCES || code == EPERM else { continue }
            let why = code == EROFS ? "it is on a read-only file system" : "this process may not write \(what)"
            return .readOnly(path: path, reason: "\(why); open it with StoreOptions.readOnly = true to read it")
        }
        return StoreError(error, path: path)
    }

    /// Refuses a write on a coordinator opened with ``StoreOptions/readOnly``.
    func refuseWriteIfReadOnly(_ what: String) throws {
        guard isReadOnly else { return }
        throw StoreError.readOnly(path: url?.path ?? ":memory:", reason: "it was opened with StoreOptions.readOnly, so \(what) can't be made")
    }
}
