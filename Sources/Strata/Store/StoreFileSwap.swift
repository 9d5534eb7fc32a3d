internal import Foundation

/// Puts a store file built beside the old one in its place, crash-safely: the new file is
/// flushed, renamed over the old one (`rename(2)` is atomic), and the folder is flushed so the
/// rename survives a power loss. A crash before the rename leaves the old store whole; after
/// it, the new one. Used by the mapping migration and by ``StoreCoordinator/addPageChecksums(toStoreAt:)``.
///
/// Before the rename, it refuses a store that another connection still has open
/// (``MigrationError/storeInUse(path:)``): the caller has closed its own connection, and SQLite's
/// last connection to close a WAL store removes its `-wal` and `-shm`, so either file still there
/// means a connection elsewhere — an idle one included (`strata watch`, a second app), in this
/// process or another — which would go on reading and writing the file the rename replaces. (A
/// `TRUNCATE` checkpoint leaves an empty `-wal` behind while another connection is open: its size
/// says nothing, its existence does.)
enum StoreFileSwap {
    /// Whether a connection other than the caller's (closed) ones has the store at `path` open.
    static func isOpenElsewhere(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path + "-wal") || FileManager.default.fileExists(atPath: path + "-shm")
    }

    static func swap(_ built: String, over path: String) throws(MigrationError) {
        guard !isOpenElsewhere(path) else { throw MigrationError.storeInUse(path: path) }
        let files = POSIXCacheFileSystem()
        do {
            let descriptor: Int32
            switch POSIX.openForReading(built) {
            case .success(let fd): descriptor = fd
            case .failure(let failure): throw CacheFileError(operation: "open", path: built, code: failure.code)
            }
            defer { files.close(descriptor) }
            try files.fsync(descriptor)
            try files.rename(built, path)
            let folder = (path as NSString).deletingLastPathComponent
            try files.fsyncDirectory(folder.isEmpty ? "." : folder)
        } catch let error as CacheFileError {
            throw MigrationError.fileSystem(path: path, reason: error.description)
        } catch {
            throw MigrationError.fileSystem(path: path, reason: "\(error)")
        }
    }
}
