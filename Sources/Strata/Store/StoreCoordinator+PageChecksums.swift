public import Foundation
internal import StrataSQLite

extension StoreCoordinator {
    /// Gives a store made without page checksums (before Strata 0.2, or with
    /// ``StoreOptions/pageChecksums`` off) a checksum on every page, by rewriting it: the store
    /// is copied page by page with `VACUUM INTO` to `<store>.checksumming` beside it, with 8
    /// reserved bytes per page, then swapped in with an atomic rename (the mapping migration's
    /// swap). A crash before the rename leaves the old store as it was (the half-built copy is
    /// removed by the next attempt); after it, the new store is complete. Rows, object IDs,
    /// the generation and the nonce are unchanged, so every section cache stays valid.
    ///
    /// Run it while no coordinator or other process has the store open: a WAL store that
    /// another connection keeps open is refused (its `-wal`/`-shm` outlive this function's
    /// connection) and left as it was.
    ///
    /// - Returns: `false` when the store already had checksums (nothing was written).
    /// - Throws: ``MigrationError/storeInUse(path:)`` when another connection wrote to the
    ///   store meanwhile (the copy is discarded), ``MigrationError/fileSystem(path:reason:)``,
    ///   ``StoreError``.
    @discardableResult
    public static func addPageChecksums(toStoreAt url: URL) throws -> Bool {
        let path = url.path
        let built = path + ".checksumming"
        let fileManager = FileManager.default
        /// The half-built copy and its journal files, if any.
        func removeCopy() { for suffix in ["", "-journal", "-wal", "-shm"] { try? fileManager.removeItem(atPath: built + suffix) } }
        removeCopy()
        var configuration = Connection.Configuration()
        configuration.createIfMissing = false
        configuration.uriFilenames = true
        configuration.setsJournalMode = false
        do {
            let db = try Connection(pathBytes: Array(Self.literalPath(path).utf8), displayPath: path, configuration: configuration)
            var open = true
            defer { if open { db.close() } }
            if db.pageChecksumState.checksummed { return false }
            let walMode = try db.pragma("journal_mode") == .text("wal")
            if walMode { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            let before = try readMetadata(db)
            try db.setRequestedReserveBytes(PageChecksum.reservedBytes)
            try db.prepare("VACUUM INTO ?").execute(.text(Self.fileURI(built) + "?strata_checksums=1"))
            do {
                let copy = try Connection(path: built, configuration: .init())
                defer { copy.close() }
                try copy.execute("PRAGMA application_id = \(PageChecksum.applicationID)")
                guard copy.pageChecksumState.checksummed else {
                    throw MigrationError.fileSystem(path: path, reason: "the rewritten copy has no page checksums")
                }
                if walMode { try copy.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            }
            KillPoint.hit("checksums.built")
            let after = try readMetadata(db)
            if walMode { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            db.close()
            open = false
            // The last connection to close a WAL store removes its -wal and -shm: if they are
            // still there, another connection (in this process or another) has the store open,
            // and would go on writing to the file the swap replaces.
            let inUse = StoreFileSwap.isOpenElsewhere(path)
            guard after.generation == before.generation, after.nonce == before.nonce, !inUse else {
                removeCopy()
                throw MigrationError.storeInUse(path: path)
            }
            for suffix in ["-wal", "-shm"] { try? fileManager.removeItem(atPath: built + suffix) }
            if let permissions = (try? fileManager.attributesOfItem(atPath: path))?[.posixPermissions] as? Int {
                try? fileManager.setAttributes([.posixPermissions: permissions], ofItemAtPath: built)
            }
            try StoreFileSwap.swap(built, over: path)
            KillPoint.hit("checksums.swapped")
            return true
        } catch let error as SQLiteError {
            removeCopy()
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
            throw StoreError(error, path: path)
        }
    }

    /// `path` as a file name SQLite reads literally even with URI file names on (a relative
    /// name that starts with `file:` would otherwise be parsed as a URI).
    static func literalPath(_ path: String) -> String {
        path.hasPrefix("file:") ? "./" + path : path
    }

    /// A `file:` URI for `path`, percent-encoded (SQLite decodes `%HH`).
    static func fileURI(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var uri = "file:"
        for byte in absolute.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                uri.append(Character(Unicode.Scalar(byte)))
            default:
                uri += String(format: "%%%02X", byte)
            }
        }
        return uri
    }
}
