internal import CSQLite
internal import Foundation

/// A file this process may read but SQLite may not open for reading the ordinary way: a WAL
/// database whose `-wal` holds commits not yet in the file, on a read-only mount or in a folder
/// this process may not write (reading the log needs its `-shm` index, which must be writable).
public struct ReadOnlyAccessError: Error, Sendable, CustomStringConvertible {
    public var path: String
    /// Why, in words (what is missing and what would let it be read).
    public var reason: String
    /// SQLite's own error from the ordinary read-only open.
    public var underlying: SQLiteError

    public var description: String { "cannot read \(path) without write access: \(reason)" }
}

extension Connection {
    /// Opens `pathBytes` for reading only, where SQLite allows it on a file this process may not
    /// write.
    ///
    /// First the ordinary read-only open, which shares the WAL index with every other connection
    /// (it sees their commits, takes their locks). SQLite refuses it for a WAL database when the
    /// `-wal`/`-shm` neither exist nor can be created (a read-only mount, a folder the process may
    /// not write; sqlite.org/wal.html, "Read-Only Databases"). Then, when no `-wal` with content
    /// is left, the database file alone holds every commit, and it is opened `immutable=1`: no
    /// locks, no `-shm`. When a `-wal` with content is left, its commits can't be read without
    /// writing the index: ``ReadOnlyAccessError``, never the file without them.
    ///
    /// The returned connection has read the schema (so the open was real) and holds no snapshot.
    public static func openReadOnly(pathBytes: [UInt8], displayPath: String? = nil, configuration: Configuration) throws -> Connection {
        var configuration = configuration
        configuration.readOnly = true
        configuration.createIfMissing = false
        configuration.setsJournalMode = false
        let path = displayPath ?? String(decoding: pathBytes, as: UTF8.self)
        func probe(_ configuration: Configuration) throws -> Connection {
            let db = try Connection(pathBytes: pathBytes, displayPath: path, configuration: configuration)
            do {
                _ = try db.pragma("schema_version")
                db.endReads()
                return db
            } catch {
                db.close()
                throw error
            }
        }
        do {
            return try probe(configuration)
        } catch let error as SQLiteError where .SQLITE_CANTOPEN ~= error.code || .SQLITE_READONLY ~= error.code {
            // Only the refusal for want of write access falls back; a missing file stays an error.
            var info = stat()
            guard (pathBytes + [0]).withUnsafeBufferPointer({ $0.withMemoryRebound(to: CChar.self) { stat($0.baseAddress!, &info) } }) == 0 else {
                throw error
            }
            func size(_ suffix: String) -> Int64 {
                var info = stat()
                return (pathBytes + Array(suffix.utf8) + [0]).withUnsafeBufferPointer { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { stat($0.baseAddress!, &info) == 0 ? Int64(info.st_size) : 0 }
                }
            }
            let walSize = size("-wal"), journalSize = size("-journal")
            guard walSize == 0 else {
                throw ReadOnlyAccessError(
                    path: path,
                    reason: "its -wal holds \(walSize) bytes of commits not yet in the database file, and SQLite must write the "
                        + "-shm index beside it to read them; open the store once where it can be written (the last connection to "
                        + "close moves the log into the file), or copy the store with its -wal somewhere writable",
                    underlying: error)
            }
            // A rollback journal a crash left holds the pages the file had before a commit that
            // did not finish: the file alone is half a commit until SQLite rolls it back, a write.
            guard journalSize == 0 else {
                throw ReadOnlyAccessError(
                    path: path,
                    reason: "a crash left a \(journalSize)-byte -journal that must be rolled back before the file can be read, "
                        + "which writes; open the store once where it can be written",
                    underlying: error)
            }
            configuration.immutable = true
            return try probe(configuration)
        }
    }

    /// `file:` URI of `pathBytes` with `immutable=1` (every byte but unreserved ones and `/`
    /// percent-encoded, so that `?`, `#` and `%` in a name stay in the name).
    static func immutableURI(_ pathBytes: [UInt8]) -> [UInt8] {
        var uri = Array("file:".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in pathBytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                uri.append(byte)
            default:
                uri += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return uri + Array("?immutable=1".utf8)
    }
}
