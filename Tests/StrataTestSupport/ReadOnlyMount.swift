public import Foundation

/// A read-only view of a folder: a bind mount of it, remounted read-only (`mount --bind`, then
/// `mount -o remount,bind,ro`), at a fresh folder. What a store on read-only media looks like to
/// SQLite: every write, `-wal` and `-shm` included, fails with EROFS, even for root.
///
/// Needs root (CAP_SYS_ADMIN); ``make(of:)`` throws, saying why, where it can't mount.
/// Unmounted by ``unmount()`` or when released.
public final class ReadOnlyMount: Sendable {
    /// The read-only view (the same files as the source folder).
    public let url: URL
    private let holder: TemporaryDirectory

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether this process may mount (root); without it, tests use file modes and an unprivileged user.
    public static var isPossible: Bool { getuid() == 0 }

    private init(url: URL, holder: TemporaryDirectory) {
        self.url = url
        self.holder = holder
    }

    /// Mounts `source` read-only at a new folder.
    public static func make(of source: URL) throws -> ReadOnlyMount {
        let holder = TemporaryDirectory("strata-ro-mount")
        let target = holder.url.appendingPathComponent("ro", isDirectory: true)
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
        try run(["--bind", source.path, target.path])
        do {
            try run(["-o", "remount,bind,ro", target.path])
        } catch {
            _ = try? run(["-l", target.path], tool: "umount")
            throw error
        }
        return ReadOnlyMount(url: target, holder: holder)
    }

    /// Unmounts (lazily: a connection still open keeps its files until it closes).
    public func unmount() {
        _ = try? Self.run(["-l", url.path], tool: "umount")
    }

    deinit { unmount() }

    @discardableResult
    private static func run(_ arguments: [String], tool: String = "mount") throws -> String {
        guard let executable = ["/usr/bin/\(tool)", "/bin/\(tool)", "/usr/sbin/\(tool)", "/sbin/\(tool)"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Unavailable(description: "no \(tool) executable")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Unavailable(description: "\(tool) \(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(output)")
        }
        return output
    }
}
