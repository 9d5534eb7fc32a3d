internal import Foundation
#if canImport(Glibc)
internal import Glibc
#endif

/// The one home of Strata's direct POSIX calls (outside the SQLite module and the section
/// caches' ``CacheFileSystem``): each retries `EINTR` and returns the `errno` of a failure
/// instead of leaving it to be read later, after another call may have changed it.
enum POSIX {
    /// A failed call's `errno`.
    struct Failure: Error, Equatable {
        let code: Int32
        var message: String { String(cString: strerror(code)) }
    }

    /// Retries `call` while it fails with `EINTR`; a negative result becomes the `errno` then.
    @inline(__always)
    private static func retrying<T: BinaryInteger>(_ call: () -> T) -> Result<T, Failure> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            let code = errno
            if code != EINTR { return .failure(Failure(code: code)) }
        }
    }

    /// `stat(2)` (follows symbolic links) or `lstat(2)` (does not).
    static func status(of path: UnsafePointer<CChar>, followingLinks: Bool = true) -> Result<stat, Failure> {
        var info = stat()
        return retrying { followingLinks ? stat(path, &info) : lstat(path, &info) }.map { _ in info }
    }

    /// `fstat(2)`.
    static func status(of fd: Int32) -> Result<stat, Failure> {
        var info = stat()
        return retrying { fstat(fd, &info) }.map { _ in info }
    }

    /// `open(2)` read-only, close-on-exec.
    static func openForReading(_ path: UnsafePointer<CChar>) -> Result<Int32, Failure> {
        retrying { open(path, O_RDONLY | O_CLOEXEC) }
    }

    /// `read(2)` into `buffer`; `0` at the end of the file or, on a non-blocking descriptor,
    /// when nothing is there (`EAGAIN`).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Failure> {
        switch retrying({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .success(let count): return .success(count)
        case .failure(let failure) where failure.code == EAGAIN || failure.code == EWOULDBLOCK: return .success(0)
        case .failure(let failure): return .failure(failure)
        }
    }

    /// `poll(2)` on one descriptor for input, without a timeout; whether input is there.
    static func waitForInput(on fd: Int32) -> Result<Bool, Failure> {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        return retrying { poll(&fds, 1, -1) }.map { _ in fds[0].revents & Int16(POLLIN) != 0 }
    }

    /// Sleeps `microseconds`.
    static func pause(microseconds: UInt32) { usleep(microseconds) }

    /// `access(2)`: whether this process may read (`R_OK`), write (`W_OK`) or find (`F_OK`) the file.
    static func access(_ path: FileSystemPath, _ mode: Int32) -> Result<Void, Failure> {
        path.withCString { name in retrying { Glibc.access(name, mode) } }.map { _ in () }
    }

    /// `pread(2)` of up to `buffer.count` bytes at `offset`; the bytes read.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Failure> {
        retrying { pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `mkdir(2)`.
    static func makeDirectory(_ path: FileSystemPath, mode: mode_t) -> Result<Void, Failure> {
        path.withCString { name in retrying { mkdir(name, mode) } }.map { _ in () }
    }

    /// `close(2)` (not retried: Linux releases the descriptor even when interrupted).
    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Ends this process at once with `SIGKILL` (a kill point): no cleanup, as a crash.
    static func killSelf() -> Never {
        kill(getpid(), SIGKILL)
        _exit(137)                                        // not reached
    }
}

/// The first 100 bytes of a database file: SQLite's header. The one place Strata's Swift reads
/// it (the C VFS reads its own copy as pages pass).
struct SQLiteFileHeader {
    let bytes: [UInt8]

    /// The header of the file open at `fd`; `nil` when it has fewer than 100 bytes.
    init?(fd: Int32) {
        var bytes = [UInt8](repeating: 0, count: 100)
        guard case .success(100) = bytes.withUnsafeMutableBytes({ POSIX.read(fd, into: $0, at: 0) }) else { return nil }
        self.bytes = bytes
    }

    /// The header of the file at `path`; `nil` when it can't be opened or is shorter.
    init?(path: FileSystemPath) {
        guard case .success(let fd) = path.withCString({ POSIX.openForReading($0) }) else { return nil }
        defer { POSIX.close(fd) }
        self.init(fd: fd)
    }

    /// "SQLite format 3" and a NUL: an SQLite database.
    var isSQLite: Bool { bytes[0..<16].elementsEqual(Array("SQLite format 3".utf8) + [0]) }

    /// The file format write and read versions (bytes 18 and 19) are 2: WAL mode.
    var saysWAL: Bool { isSQLite && bytes[18] == 2 && bytes[19] == 2 }
}
