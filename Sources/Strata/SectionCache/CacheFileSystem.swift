public import Foundation

/// The file operations a section cache uses: POSIX calls behind a protocol, so that tests can
/// inject faults (`FaultInjectingFileSystem`, test API) into exactly these.
public protocol CacheFileSystem: Sendable {
    /// Creates and opens a new file for writing (fails if it exists), with `mode` permissions.
    func create(_ path: String, mode: mode_t) throws -> Int32
    /// Writes all of `bytes`, or throws.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws
    func fsync(_ fd: Int32) throws
    func close(_ fd: Int32)
    func rename(_ from: String, _ to: String) throws
    /// Flushes a directory's entries (after a rename in it).
    func fsyncDirectory(_ path: String) throws
    func remove(_ path: String) throws
    func read(_ path: String) throws -> Data

    // The same calls with the path's exact bytes (a Linux file name need not be UTF-8).
    // ``SectionCacheStore`` calls only these. Default: the `String` call, when the path is UTF-8;
    // otherwise `EILSEQ`, never another file.
    func create(at path: FileSystemPath, mode: mode_t) throws -> Int32
    func rename(at from: FileSystemPath, to: FileSystemPath) throws
    func fsyncDirectory(at path: FileSystemPath) throws
    func remove(at path: FileSystemPath) throws
    func read(at path: FileSystemPath) throws -> Data
}

extension CacheFileSystem {
    private func string(_ path: FileSystemPath, _ operation: String) throws -> String {
        guard let string = path.string else { throw CacheFileError(operation: operation, path: path.description, code: EILSEQ) }
        return string
    }

    public func create(at path: FileSystemPath, mode: mode_t) throws -> Int32 { try create(string(path, "open"), mode: mode) }
    public func rename(at from: FileSystemPath, to: FileSystemPath) throws { try rename(string(from, "rename"), string(to, "rename")) }
    public func fsyncDirectory(at path: FileSystemPath) throws { try fsyncDirectory(string(path, "open")) }
    public func remove(at path: FileSystemPath) throws { try remove(string(path, "unlink")) }
    public func read(at path: FileSystemPath) throws -> Data { try read(string(path, "open")) }
}

/// A file operation that failed: the call, the path and `errno`.
public struct CacheFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var code: Int32
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))" }
}

/// The real file system: each path reaches the C call byte for byte.
public struct POSIXCacheFileSystem: CacheFileSystem {
    public init() {}

    private func fail(_ operation: String, _ path: FileSystemPath) -> CacheFileError {
        let code = errno
        return CacheFileError(operation: operation, path: path.description, code: code)
    }

    public func create(_ path: String, mode: mode_t) throws -> Int32 { try create(at: FileSystemPath(path), mode: mode) }
    public func rename(_ from: String, _ to: String) throws { try rename(at: FileSystemPath(from), to: FileSystemPath(to)) }
    public func fsyncDirectory(_ path: String) throws { try fsyncDirectory(at: FileSystemPath(path)) }
    public func remove(_ path: String) throws { try remove(at: FileSystemPath(path)) }
    public func read(_ path: String) throws -> Data { try read(at: FileSystemPath(path)) }

    public func create(at path: FileSystemPath, mode: mode_t) throws -> Int32 {
        let fd = path.withCString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) }
        guard fd >= 0 else { throw fail("open", path) }
        return fd
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheFileError(operation: "write", path: "fd \(fd)", code: errno)
            }
            offset += n
        }
    }

    public func fsync(_ fd: Int32) throws {
        guard Foundation.fsync(fd) == 0 else { throw CacheFileError(operation: "fsync", path: "fd \(fd)", code: errno) }
    }

    public func close(_ fd: Int32) { _ = Foundation.close(fd) }

    public func rename(at from: FileSystemPath, to: FileSystemPath) throws {
        guard from.withCString({ from in to.withCString { Foundation.rename(from, $0) } }) == 0 else {
            let code = errno
            throw CacheFileError(operation: "rename", path: "\(from) → \(to)", code: code)
        }
    }

    public func fsyncDirectory(at path: FileSystemPath) throws {
        let fd = path.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw fail("open", path) }
        defer { _ = Foundation.close(fd) }
        guard Foundation.fsync(fd) == 0 else { throw fail("fsync", path) }
    }

    public func remove(at path: FileSystemPath) throws {
        guard path.withCString({ unlink($0) }) == 0 || errno == ENOENT else { throw fail("unlink", path) }
    }

    /// Reads the whole file under a shared `flock`: never half of a change record being
    /// appended (``SectionCacheStore/appendRecord(named:_:)`` holds the exclusive one).
    public func read(at path: FileSystemPath) throws -> Data {
        let fd = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw fail("open", path) }
        defer { _ = Foundation.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fail("fstat", path) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw CacheFileError(operation: "read", path: path.description, code: EISDIR) }
        while flock(fd, LOCK_SH) != 0 {
            guard errno == EINTR else { throw fail("flock", path) }
        }
        return try POSIXCacheFileSystem.readAll(fd, path: path)
    }

    /// Everything from the start of open file `fd`.
    static func readAll(_ fd: Int32, path: FileSystemPath) throws -> Data {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw CacheFileError(operation: "lseek", path: path.description, code: errno) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheFileError(operation: "read", path: path.description, code: errno)
            }
            if n == 0 { return data }
            data.append(contentsOf: buffer[..<n])
        }
    }
}

/// A file system that fails on purpose, for tests: each fault fires once, at the first call it
/// matches, then the file system behaves normally.
///
/// `dropUnsynced` models a power loss: when ``simulateCrash()`` is called, every file loses what
/// was written to it after its last successful `fsync`, and a rename not followed by a directory
/// `fsync` is undone.
// @unchecked because: every mutable field is inside `state`, a `Locked` (NSLock) box.
@_spi(Testing) public final class FaultInjectingFileSystem: CacheFileSystem, @unchecked Sendable {
    public enum Fault: Sendable, Equatable {
        /// The write at this 0-based index (counting every `write` call) writes only half its bytes, then fails with EIO.
        case shortWrite(call: Int)
        case writeError(call: Int, errno: Int32)      // EIO, ENOSPC, …
        case fsyncFails(errno: Int32)
        case renameFails(errno: Int32)
        case directoryFsyncFails(errno: Int32)
        case createFails(errno: Int32)
    }

    private struct State {
        var faults: [Fault]
        var writes = 0
        var synced: [String: Int] = [:]              // path → length at last fsync
        var paths: [Int32: String] = [:]
        var pendingRenames: [(from: String, to: String, previous: Data?)] = []
        var fired: [Fault] = []
    }

    private let real = POSIXCacheFileSystem()
    private let state: Locked<State>
    public let dropUnsynced: Bool

    public init(faults: [Fault] = [], dropUnsynced: Bool = false) {
        state = Locked(State(faults: faults))
        self.dropUnsynced = dropUnsynced
    }

    /// The faults that fired, in order.
    public var fired: [Fault] { state.withLock { $0.fired } }

    private func take(_ match: (Fault) -> Bool) -> Fault? {
        state.withLock { s in
            guard let index = s.faults.firstIndex(where: match) else { return nil }
            let fault = s.faults.remove(at: index)
            s.fired.append(fault)
            return fault
        }
    }

    public func create(_ path: String, mode: mode_t) throws -> Int32 {
        if case .createFails(let code)? = take({ if case .createFails = $0 { true } else { false } }) {
            throw CacheFileError(operation: "open", path: path, code: code)
        }
        let fd = try real.create(path, mode: mode)
        state.withLock {
            $0.paths[fd] = path
            $0.synced[path] = 0
        }
        return fd
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        let call = state.withLock { s -> Int in
            defer { s.writes += 1 }
            return s.writes
        }
        if take({ if case .shortWrite(let c) = $0 { c == call } else { false } }) != nil {
            try real.write(fd, UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]))
            throw CacheFileError(operation: "write", path: "fd \(fd)", code: EIO)
        }
        if case .writeError(_, let code)? = take({ if case .writeError(let c, _) = $0 { c == call } else { false } }) {
            throw CacheFileError(operation: "write", path: "fd \(fd)", code: code)
        }
        try real.write(fd, bytes)
    }

    public func fsync(_ fd: Int32) throws {
        if case .fsyncFails(let code)? = take({ if case .fsyncFails = $0 { true } else { false } }) {
            throw CacheFileError(operation: "fsync", path: "fd \(fd)", code: code)
        }
        try real.fsync(fd)
        if let path = state.withLock({ $0.paths[fd] }) {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            state.withLock { $0.synced[path] = size }
        }
    }

    public func close(_ fd: Int32) { real.close(fd) }

    public func rename(_ from: String, _ to: String) throws {
        if case .renameFails(let code)? = take({ if case .renameFails = $0 { true } else { false } }) {
            throw CacheFileError(operation: "rename", path: "\(from) → \(to)", code: code)
        }
        let previous = try? real.read(to)
        try real.rename(from, to)
        state.withLock { s in
            s.pendingRenames.append((from, to, previous))
            if let synced = s.synced.removeValue(forKey: from) { s.synced[to] = synced }
        }
    }

    public func fsyncDirectory(_ path: String) throws {
        if case .directoryFsyncFails(let code)? = take({ if case .directoryFsyncFails = $0 { true } else { false } }) {
            throw CacheFileError(operation: "fsync", path: path, code: code)
        }
        try real.fsyncDirectory(path)
        state.withLock { $0.pendingRenames.removeAll() }
    }

    public func remove(_ path: String) throws { try real.remove(path) }
    public func read(_ path: String) throws -> Data { try real.read(path) }

    /// A power loss: with `dropUnsynced`, unsynced bytes are cut off every file this file system
    /// wrote, and renames not made durable by a directory fsync are undone.
    public func simulateCrash() {
        guard dropUnsynced else { return }
        state.withLock { s in
            for (from, to, previous) in s.pendingRenames.reversed() {
                if let data = try? real.read(to) {
                    _ = FileManager.default.createFile(atPath: from, contents: data)
                }
                if let previous { _ = FileManager.default.createFile(atPath: to, contents: previous) } else { try? real.remove(to) }
                if let synced = s.synced.removeValue(forKey: to) { s.synced[from] = synced }
            }
            s.pendingRenames.removeAll()
            for (path, length) in s.synced where FileManager.default.fileExists(atPath: path) {
                truncate(path, off_t(length))
            }
        }
    }
}
