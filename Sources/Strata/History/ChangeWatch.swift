internal import Foundation
internal import Logging
#if canImport(Glibc)
internal import Glibc
#endif

/// Tells followers when a store file or its `-wal` changes on disk: one inotify descriptor and
/// one thread for the whole process, a watch per folder (a folder watch sees the `-wal` made
/// again after the last connection removed it, and a file renamed over the store). `nil` where
/// inotify is missing: followers then poll.
///
/// A watch that fails (`poll` or `read` on the descriptor fails with anything but `EINTR`) is
/// dead: it logs why, remembers it (``failure``), and tells every registration (`died`), whose
/// follower counts it (``ExternalChangeStatistics/changeWatchFailures``) and polls at its full
/// rate from then on. Nothing is lost but the quick notice.
// The thread lives as long as the process (one per process, however many stores are followed),
// or until the watch dies.
// @unchecked Sendable because `fd` is set once in init and `state` is behind its own lock.
final class ChangeWatch: @unchecked Sendable {
    static let shared: ChangeWatch? = ChangeWatch()

    private let fd: Int32
    private struct Registration {
        let names: Set<String>
        let notice: @Sendable () -> Void
        let died: @Sendable () -> Void
    }
    private struct State {
        var folders: [Int32: [Int: Registration]] = [:]
        var watchOfFolder: [String: Int32] = [:]
        var nextToken = 0
        var failure: String?
    }
    private let state = Locked(State())
    private static let logger = Logger(label: "strata.change-watch")

    /// Why the watch stopped; `nil` while it runs.
    var failure: String? { state.withLock { $0.failure } }

    /// A watch of its own (the process's is ``shared``): tests use one to fail it on purpose.
    init?() {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        let thread = Thread { [self] in run() }
        thread.name = "strata.change-watch"
        thread.qualityOfService = .userInitiated
        thread.start()
        #else
        return nil
        #endif
    }

    /// Calls `notice` (on the watch thread: it must only schedule work) whenever `file` or
    /// `file-wal` changes, and `died` once if the watch fails. Returns the token that
    /// ``stop(_:)`` takes, or `nil` when the folder can't be watched (or the watch is dead).
    func watch(file path: String, notice: @escaping @Sendable () -> Void,
               died: @escaping @Sendable () -> Void) -> (folder: String, token: Int)? {
        #if os(Linux)
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let name = url.lastPathComponent
        return state.withLock { state -> (String, Int)? in
            guard state.failure == nil else { return nil }
            let wd: Int32
            if let existing = state.watchOfFolder[folder] {
                wd = existing
            } else {
                wd = inotify_add_watch(fd, folder, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE))
                guard wd >= 0 else { return nil }
                state.watchOfFolder[folder] = wd
            }
            let token = state.nextToken
            state.nextToken += 1
            state.folders[wd, default: [:]][token] = Registration(names: [name, name + "-wal"], notice: notice, died: died)
            return (folder, token)
        }
        #else
        return nil
        #endif
    }

    func stop(_ registration: (folder: String, token: Int)) {
        #if os(Linux)
        state.withLock { state in
            guard let wd = state.watchOfFolder[registration.folder] else { return }
            state.folders[wd]?[registration.token] = nil
            if state.folders[wd]?.isEmpty ?? true {
                state.folders[wd] = nil
                state.watchOfFolder[registration.folder] = nil
                inotify_rm_watch(fd, wd)
            }
        }
        #endif
    }

    /// The watch failed: it stops for good, and every registration hears it.
    func die(_ reason: String) {
        let registrations = state.withLock { state -> [Registration]? in
            guard state.failure == nil else { return nil }
            state.failure = reason
            defer {
                state.folders = [:]
                state.watchOfFolder = [:]
            }
            return state.folders.values.flatMap(\.values)
        }
        guard let registrations else { return }
        ChangeWatch.logger.warning("file change watch stopped; followers poll instead", metadata: ["reason": "\(reason)"])
        for registration in registrations { registration.died() }
    }

    #if os(Linux)
    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while failure == nil {
            switch POSIX.waitForInput(on: fd) {
            case .failure(let failure):
                return die("poll: \(failure.message)")
            case .success(false):
                continue
            case .success(true):
                break
            }
            while true {
                let read = buffer.withUnsafeMutableBytes { POSIX.read(fd, into: $0) }
                guard case .success(let count) = read else {
                    if case .failure(let failure) = read { die("read: \(failure.message)") }
                    return
                }
                guard count > 0 else { break }
                var due: [@Sendable () -> Void] = []
                var noticed = Set<Int>()
                state.withLock { state in
                    var offset = 0
                    while offset + 16 <= count {
                        let wd = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
                        let length = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                        let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                        offset += 16 + length
                        guard let registrations = state.folders[wd], !nameBytes.isEmpty else { continue }
                        let name = String(decoding: nameBytes, as: UTF8.self)
                        for (token, registration) in registrations where registration.names.contains(name) && !noticed.contains(token) {
                            noticed.insert(token)
                            due.append(registration.notice)
                        }
                    }
                }
                for notice in due { notice() }
            }
            // At most one wake-up a millisecond: a write-heavy minute (an import writes the WAL
            // thousands of times) queues identical events meanwhile, which the kernel folds into one.
            POSIX.pause(microseconds: 1000)
        }
    }
    #endif
}
