internal import Foundation

/// Puts a store file built beside the old one in its place, crash-safely: the new file is
/// flushed, renamed over the old one (`rename(2)` is atomic), and the folder is flushed so the
/// rename survives a power loss. A crash before the rename leaves the old store whole; after
/// it, the new one. Used by the mapping migration and by ``StoreCoordinator/addPageChecksums(toStoreAt:)``.
enum StoreFileSwap {
    static func swap(_ built: String, over path: String) throws(MigrationError) {
        let files = POSIXCacheFileSystem()
        do {
            let descriptor = open(built, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw CacheFileError(operation: "open", path: built, code: errno) }
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
