public import Foundation
internal import Logging

/// A section cache operation refused or failed (never raised by a results controller: a cache
/// that can't be read or written only costs a fetch).
public enum SectionCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A cache name must be 1–200 UTF-8 bytes without NUL; it is a name, not a path.
    case invalidName(String, reason: String)
    /// The cache folder is a symbolic link: refused, so that no cache is written elsewhere.
    case directoryIsSymlink(path: String)
    /// The cache folder exists but is not a folder.
    case notADirectory(path: String)
    case noSuchCache(name: String)
    /// A cache's file name holds something other than a regular file (a folder, a symbolic link,
    /// …): refused, so that nothing but a cache file is removed.
    case notAFile(name: String, path: String)
    case io(CacheFileError)

    public var description: String {
        switch self {
        case let .invalidName(name, reason): "invalid cache name \(name.debugDescription): \(reason)"
        case .directoryIsSymlink(let path): "the cache folder \(path) is a symbolic link; refusing to follow it"
        case .notADirectory(let path): "the cache folder \(path) is not a folder"
        case .noSuchCache(let name): "no cache named \(name.debugDescription)"
        case let .notAFile(name, path): "cache \(name.debugDescription) is not a regular file: \(path)"
        case .io(let error): "\(error)"
        }
    }
}

/// The section caches of one store: where they live, their names, atomic writes, reads, and
/// deletion. Results controllers, apps and the `strata cache` command share this one
/// implementation.
///
/// Files are `<folder>/<encoded name>.stratacache`; the folder defaults to `<store file>.caches`
/// beside the store. A write goes to `<folder>/.tmp-<random>-<file>`, is fsynced, renamed over
/// the final name, and the folder is fsynced: a crash leaves the old file or the new one, never a
/// torn one. Temporary files left by a crash are removed by ``removeTemporaryFiles()`` (a
/// controller calls it before its first write).
public struct SectionCacheStore: Sendable {
    public static let fileExtension = "stratacache"
    static let temporaryPrefix = ".tmp-"
    static let logger = Logger(label: "strata.cache")

    /// The store file (see ``storePath`` for a path that is not UTF-8).
    public let storeURL: URL
    /// The cache folder (see ``directoryPath`` for a path that is not UTF-8).
    public let directory: URL
    /// The store file's exact path: every file call of this type uses these bytes.
    public let storePath: FileSystemPath
    /// The cache folder's exact path.
    public let directoryPath: FileSystemPath
    let fileSystem: any CacheFileSystem

    public init(storeURL: URL, directory: URL? = nil, fileSystem: any CacheFileSystem = POSIXCacheFileSystem()) {
        self.init(storePath: FileSystemPath(storeURL), directory: directory.map(FileSystemPath.init), fileSystem: fileSystem)
    }

    /// The caches of the store at `storePath`, in `directory` (default: `<store>.caches` beside
    /// it); both paths reach the file system byte for byte.
    public init(storePath: FileSystemPath, directory: FileSystemPath? = nil, fileSystem: any CacheFileSystem = POSIXCacheFileSystem()) {
        self.storePath = storePath
        directoryPath = directory ?? storePath.appending(suffix: ".caches")
        storeURL = storePath.url
        self.directory = URL(fileURLWithPath: String(decoding: directoryPath.bytes, as: UTF8.self), isDirectory: true)
        self.fileSystem = fileSystem
    }

    // MARK: Names

    /// The file name of cache `name`: letters, digits, `-` and `_` kept, every other byte
    /// percent-encoded (so `/`, `..` and leading dots can't reach outside the folder).
    public static func fileName(forCacheNamed name: String) throws(SectionCacheError) -> String {
        let utf8 = Array(name.utf8)
        guard !utf8.isEmpty else { throw .invalidName(name, reason: "empty") }
        guard utf8.count <= 200 else { throw .invalidName(name, reason: "longer than 200 UTF-8 bytes") }
        guard !utf8.contains(0) else { throw .invalidName(name, reason: "contains NUL") }
        var encoded = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                encoded.append(Character(UnicodeScalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        // 255 bytes is the usual file name limit; the temporary name adds `.tmp-XXXXXXXX-`.
        guard encoded.utf8.count + fileExtension.utf8.count + 1 + 14 <= 255 else {
            throw .invalidName(name, reason: "too long once encoded for a file name (\(encoded.utf8.count) bytes; bytes other than letters, digits, - and _ take 3)")
        }
        return encoded + "." + fileExtension
    }

    /// The cache name a file name stands for, or `nil` when it is not a cache file.
    public static func cacheName(fromFileName file: String) -> String? {
        guard file.hasSuffix("." + fileExtension), !file.hasPrefix(".") else { return nil }
        let stem = Array(file.utf8.dropLast(fileExtension.utf8.count + 1))
        var bytes: [UInt8] = []
        var i = 0
        while i < stem.count {
            if stem[i] == UInt8(ascii: "%") {
                guard i + 2 < stem.count, let byte = UInt8(String(decoding: stem[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(byte)
                i += 3
            } else {
                bytes.append(stem[i])
                i += 1
            }
        }
        // Only the spelling Strata writes: a name whose encoding is this very file name.
        guard let name = String(validating: bytes, as: UTF8.self), (try? fileName(forCacheNamed: name)) == file else { return nil }
        return name
    }

    public func url(forCacheNamed name: String) throws(SectionCacheError) -> URL {
        directory.appendingPathComponent(try SectionCacheStore.fileName(forCacheNamed: name), isDirectory: false)
    }

    /// The exact path of cache `name`'s file.
    public func path(forCacheNamed name: String) throws(SectionCacheError) -> FileSystemPath {
        directoryPath.appending(component: try SectionCacheStore.fileName(forCacheNamed: name))
    }

    // MARK: The folder

    /// The folder's path, checked: not a symlink, a folder; created when `create`, with the
    /// permissions of the folder that holds the store.
    func checkedDirectory(create: Bool) throws(SectionCacheError) -> FileSystemPath? {
        let path = directoryPath
        let info: stat
        switch path.withCString({ POSIX.status(of: $0, followingLinks: false) }) {
        case .success(let found):
            info = found
        case .failure(let failure):
            guard failure.code == ENOENT else { throw .io(CacheFileError(operation: "lstat", path: path.description, code: failure.code)) }
            guard create else { return nil }
            let parent = try? storePath.parent.withCString({ POSIX.status(of: $0) }).get()
            let mode: mode_t = parent.map { $0.st_mode & 0o777 } ?? 0o755
            if case .failure(let failure) = POSIX.makeDirectory(path, mode: mode), failure.code != EEXIST {
                throw .io(CacheFileError(operation: "mkdir", path: path.description, code: failure.code))
            }
            return path
        }
        if (info.st_mode & S_IFMT) == S_IFLNK { throw .directoryIsSymlink(path: path.description) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .notADirectory(path: path.description) }
        return path
    }

    /// The names of every cache in the folder, sorted.
    public func cacheNames() throws(SectionCacheError) -> [String] {
        guard let path = try checkedDirectory(create: false) else { return [] }
        return (SectionCacheStore.fileNames(in: path) ?? []).compactMap(SectionCacheStore.cacheName(fromFileName:)).sorted()
    }

    /// The names in folder `path` that are valid UTF-8 (every name Strata writes is ASCII), listed
    /// with `opendir`/`readdir` on the path's bytes (FileManager on Linux takes a `String` path and
    /// repairs names that are not UTF-8). `nil` when the folder can't be read.
    static func fileNames(in path: FileSystemPath) -> [String]? {
        guard let folder = path.withCString({ opendir($0) }) else { return nil }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(validating: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let name, name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    // MARK: Reading

    /// The bytes of cache `name`; `.missing`, `.notAFile` or `.unreadable` when there are none to read.
    public func read(named name: String) throws(SectionCacheRejection) -> Data {
        guard let path = try? path(forCacheNamed: name) else { throw .missing }
        // The same folder checks as writing: a symlinked folder is not followed.
        let folder: FileSystemPath?
        do { folder = try checkedDirectory(create: false) } catch { throw .unreadable }
        guard folder != nil else { throw .missing }
        let info: stat
        switch path.withCString({ POSIX.status(of: $0, followingLinks: false) }) {
        case .success(let found): info = found
        case .failure(let failure): throw failure.code == ENOENT ? .missing : .unreadable
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notAFile }
        do {
            return try fileSystem.read(at: path)
        } catch {
            throw .unreadable
        }
    }

    // MARK: Writing

    /// Writes `file` as cache `name` atomically: temporary file, fsync, rename, fsync of the
    /// folder. When a step before the rename fails, the temporary file is removed and the
    /// previous cache (if any) is left as it was; when the folder's fsync fails, the new file is
    /// already in place, complete, and the error is still thrown (its rename may not survive a
    /// power loss).
    public func write(_ file: SectionCacheFile, named name: String) throws(SectionCacheError) {
        let data = file.encoded()
        KillPoint.hit("cache.encoded")
        try write(data, named: name)
    }

    /// Writes already encoded bytes as cache `name`, atomically.
    public func write(_ data: Data, named name: String) throws(SectionCacheError) {
        let finalName = try SectionCacheStore.fileName(forCacheNamed: name)
        guard let folder = try checkedDirectory(create: true) else { return }
        let final = folder.appending(component: finalName)
        let temporary = folder.appending(component: SectionCacheStore.temporaryPrefix + UUID().uuidString.prefix(8) + "-" + finalName)
        do {
            let fd = try fileSystem.create(at: temporary, mode: storeFileMode)
            KillPoint.hit("cache.tmp.created")
            do {
                try data.withUnsafeBytes { bytes in
                    let half = bytes.count / 2
                    try fileSystem.write(fd, UnsafeRawBufferPointer(rebasing: bytes[..<half]))
                    KillPoint.hit("cache.tmp.half-written")
                    try fileSystem.write(fd, UnsafeRawBufferPointer(rebasing: bytes[half...]))
                }
                KillPoint.hit("cache.tmp.written")
                try fileSystem.fsync(fd)
                KillPoint.hit("cache.tmp.fsynced")
                fileSystem.close(fd)
            } catch {
                fileSystem.close(fd)
                throw error
            }
            try fileSystem.rename(at: temporary, to: final)
            KillPoint.hit("cache.renamed")
            try fileSystem.fsyncDirectory(at: folder)
            KillPoint.hit("cache.dir.fsynced")
        } catch let error as CacheFileError {
            // Not logged here: the caller gets the error (a coordinator's scheduled writes log it).
            try? fileSystem.remove(at: temporary)
            throw .io(error)
        } catch {
            try? fileSystem.remove(at: temporary)
            throw .io(CacheFileError(operation: "write", path: temporary.description, code: EIO))
        }
    }

    /// Appends a change record to cache `name` in place, under an exclusive lock on the file
    /// (`flock`; readers take a shared one): `decide` gets the file's bytes, read under the lock,
    /// and returns the offset to write at (the end of the file's sound part: a torn record a
    /// crash left is cut off) and the record, or `nil` to write nothing. The record is written
    /// and fsynced before the lock is released. Returns whether a record was written; `false`
    /// too when there is no such file.
    ///
    /// A crash before the fsync can leave the record torn: its CRC fails, the file reads as of the
    /// record before (stale against the store, so rebuilt), never as of a commit it does not hold.
    @discardableResult
    func appendRecord(named name: String, _ decide: (Data) throws -> (offset: Int, record: [UInt8])?) throws -> Bool {
        let path = try path(forCacheNamed: name)
        guard try checkedDirectory(create: false) != nil else { return false }
        let fd = path.withCString { open($0, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            if errno == ENOENT { return false }
            throw SectionCacheError.io(CacheFileError(operation: "open", path: path.description, code: errno))
        }
        defer { _ = Foundation.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw SectionCacheError.notAFile(name: name, path: path.description) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw SectionCacheError.io(CacheFileError(operation: "flock", path: path.description, code: errno)) }
        }
        let data = try POSIXCacheFileSystem.readAll(fd, path: path)
        guard let (offset, record) = try decide(data) else { return false }
        precondition(offset <= data.count, "a change record goes inside the file or at its end")
        do {
            if offset < data.count, ftruncate(fd, off_t(offset)) != 0 {
                throw CacheFileError(operation: "ftruncate", path: path.description, code: errno)
            }
            guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
                throw CacheFileError(operation: "lseek", path: path.description, code: errno)
            }
            try record.withUnsafeBytes { try fileSystem.write(fd, $0) }
            KillPoint.hit("cache.append.written")
            try fileSystem.fsync(fd)
            KillPoint.hit("cache.append.fsynced")
        } catch let error as CacheFileError {
            throw SectionCacheError.io(error)
        }
        return true
    }

    /// The store file's permission bits (0o644 when it can't be read), for cache files.
    private var storeFileMode: mode_t {
        guard case .success(let info) = storePath.withCString({ POSIX.status(of: $0) }) else { return 0o644 }
        return info.st_mode & 0o777
    }

    // MARK: Deleting

    /// Removes cache `name`; returns whether there was one. Safe while an app has the store open:
    /// its controllers rebuild the cache at their next fetch.
    @discardableResult
    public func deleteCache(named name: String) throws(SectionCacheError) -> Bool {
        let path = try path(forCacheNamed: name)
        guard try checkedDirectory(create: false) != nil else { return false }
        guard case .success = path.withCString({ POSIX.status(of: $0, followingLinks: false) }) else { return false }
        do {
            try fileSystem.remove(at: path)
        } catch let error as CacheFileError {
            throw .io(error)
        } catch {
            throw .io(CacheFileError(operation: "unlink", path: path.description, code: EIO))
        }
        return true
    }

    /// Removes every cache of the store (and stray temporary files); returns the names removed.
    @discardableResult
    public func deleteAllCaches() throws(SectionCacheError) -> [String] {
        let names = try cacheNames()
        for name in names { try deleteCache(named: name) }
        removeTemporaryFiles()
        return names
    }

    /// Removes temporary files a crash left in the folder; returns how many.
    @discardableResult
    public func removeTemporaryFiles() -> Int {
        guard let folder = try? checkedDirectory(create: false), let files = SectionCacheStore.fileNames(in: folder) else { return 0 }
        KillPoint.hit("cache.cleanup.begin")
        var removed = 0
        for file in files where file.hasPrefix(SectionCacheStore.temporaryPrefix) {
            if (try? fileSystem.remove(at: folder.appending(component: file))) != nil {
                removed += 1
                KillPoint.hit("cache.cleanup.removed")
            }
        }
        return removed
    }
}
