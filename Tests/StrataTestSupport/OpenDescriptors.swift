internal import Foundation

/// The descriptors this process has open, from `/proc/self/fd` (Linux).
///
/// Counts are only meaningful where nothing else opens or closes descriptors meanwhile: the
/// descriptor tests run in an exit test's child process, not beside the parallel suite.
public enum OpenDescriptors {
    /// How many descriptors are open, not counting the one used to list them.
    public static func count() -> Int { list().count }

    /// Each open descriptor and what it refers to (`readlink` of its entry: a path, `pipe:[…]`,
    /// `socket:[…]`, `anon_inode:…`), not counting the one used to list them.
    public static func list() -> [(fd: Int32, target: String)] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var result: [(fd: Int32, target: String)] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard let fd = Int32(name), fd != own else { continue }
            var buffer = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
            let target = length > 0 ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
            result.append((fd, target))
        }
        return result.sorted { $0.fd < $1.fd }
    }

    /// The descriptors open in `after` and not in `before`, for a failure message.
    ///
    /// A descriptor is the same when its number and what it refers to are, compared without the
    /// ` (deleted)` the kernel appends once the file is unlinked: a process inherits descriptors
    /// (an exit test's child, those of the tests running beside it in the parent), and another
    /// test deleting its temporary directory in between turned such a descriptor into an
    /// "added" one in CI.
    public static func added(since before: [(fd: Int32, target: String)], now after: [(fd: Int32, target: String)]) -> [String] {
        func identity(_ entry: (fd: Int32, target: String)) -> String {
            let suffix = " (deleted)"
            let target = entry.target.hasSuffix(suffix) ? String(entry.target.dropLast(suffix.count)) : entry.target
            return "\(entry.fd) \(target)"
        }
        let old = Set(before.map(identity))
        return after.filter { !old.contains(identity($0)) }.map { "\($0.fd) \($0.target)" }
    }
}
