public import Foundation

/// A file-system path as the bytes the kernel sees.
///
/// On Linux a file name is any bytes but `/` and NUL. A Swift `String` holds only valid UTF-8, and
/// Foundation's `URL` repairs other bytes to U+FFFD, so a name that is not UTF-8 (`$'\xff\xfe'.sqlite`)
/// can't be reached through either: it would name another file. ``StoreInspector`` and
/// ``SectionCacheStore`` take a `FileSystemPath` and hand its bytes unchanged to `stat`, `open`,
/// `unlink`, `opendir` and `sqlite3_open_v2`.
///
/// ```swift
/// let path = FileSystemPath(bytes: Array("/tmp/".utf8) + [0xFF, 0xFE] + Array(".sqlite".utf8))!
/// print(path)                         // /tmp/\xFF\xFE.sqlite
/// let inspector = try StoreInspector(path: path)
/// ```
public struct FileSystemPath: Sendable, Hashable, CustomStringConvertible {
    /// The path's bytes, without a terminating NUL (and never containing one).
    public let bytes: [UInt8]

    /// The path with these bytes; `nil` when they contain NUL (no file has such a path).
    public init?(bytes: some Sequence<UInt8>) {
        let bytes = Array(bytes)
        guard !bytes.contains(0) else { return nil }
        self.bytes = bytes
    }

    /// The path spelled by `string`, in UTF-8. A NUL and everything after it is dropped (the C
    /// calls would stop there too).
    public init(_ string: String) {
        bytes = Array(string.utf8.prefix { $0 != 0 })
    }

    /// A file URL's path (`url.path`).
    public init(_ url: URL) {
        self.init(url.path)
    }

    /// The file's size from `stat`, `nil` when there is no file. (Not `FileManager`'s
    /// `attributesOfItem`, which also looks the owner and group up in `/etc/passwd` and
    /// `/etc/group`: a tenth of opening a store; perf.)
    var fileSize: Int64? {
        guard case .success(let info) = withCString({ POSIX.status(of: $0) }) else { return nil }
        return Int64(info.st_size)
    }

    /// The path as a string when its bytes are valid UTF-8, else `nil`.
    public var string: String? { String(validating: bytes, as: UTF8.self) }

    /// A file URL for the path. Exact only when ``string`` is not `nil`: otherwise the bytes that
    /// are not UTF-8 are repaired, and the URL names another file.
    public var url: URL { URL(fileURLWithPath: String(decoding: bytes, as: UTF8.self)) }

    /// The path for messages and JSON: its UTF-8 unchanged, each byte that is not part of valid
    /// UTF-8 written as `\xFF` (so `$'\xff\xfe'.sqlite` shows as `\xFF\xFE.sqlite`).
    public var description: String {
        if let string { return string }
        var text = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        loop: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                text.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<(offset + length)] { text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2) }
                offset += length
            case .emptyInput:
                break loop
            }
        }
        return text
    }

    /// This path made absolute against the current directory when it is relative; `.` components,
    /// repeated slashes and a trailing slash are dropped (as `URL(fileURLWithPath:)` does).
    public var absolute: FileSystemPath {
        var all = bytes
        if all.first != UInt8(ascii: "/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if getcwd(&buffer, buffer.count) != nil {
                all = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) } + [UInt8(ascii: "/")] + all
            }
        }
        let components = all.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).filter { !$0.elementsEqual([UInt8(ascii: ".")]) }
        return FileSystemPath(checked: [UInt8(ascii: "/")] + Array(components.joined(separator: [UInt8(ascii: "/")])))
    }

    /// This path with `suffix` appended to its last component (`store.sqlite` + `-wal`).
    public func appending(suffix: String) -> FileSystemPath {
        FileSystemPath(checked: bytes + Array(FileSystemPath(suffix).bytes))
    }

    /// This path with the component `name` added (`folder` + `a.stratacache`).
    public func appending(component name: String) -> FileSystemPath {
        FileSystemPath(checked: (bytes.last == UInt8(ascii: "/") ? bytes : bytes + [UInt8(ascii: "/")]) + Array(FileSystemPath(name).bytes))
    }

    /// The folder that holds this path (`.` for a bare name, `/` for a top-level one).
    public var parent: FileSystemPath {
        var trimmed = bytes[...]
        while trimmed.count > 1, trimmed.last == UInt8(ascii: "/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: UInt8(ascii: "/")) else { return FileSystemPath(".") }
        return slash == trimmed.startIndex ? FileSystemPath("/") : FileSystemPath(checked: Array(trimmed[..<slash]))
    }

    /// Calls `body` with the path as a NUL-terminated C string, for the C calls that take a path.
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    /// For bytes already known to be NUL-free.
    private init(checked bytes: [UInt8]) {
        precondition(!bytes.contains(0), "FileSystemPath(checked:) given a NUL byte")
        self.bytes = bytes
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
