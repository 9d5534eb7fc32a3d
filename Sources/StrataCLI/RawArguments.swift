import Foundation
import Strata

/// The command line as the bytes the process was given.
///
/// `CommandLine.arguments` decodes each argument as UTF-8 and repairs bytes that are not
/// (`$'\xff'` becomes U+FFFD), so a file name that is not UTF-8 would name another file. The
/// parser gets each argument in its display form (``FileSystemPath/description``: UTF-8 as is,
/// other bytes as `\xFF`), and ``path(_:)`` maps a parsed path value back to the exact bytes of
/// the argument it came from.
enum RawArguments {
    /// `argv[1...]`, byte for byte.
    static let bytes: [[UInt8]] = (1..<Int(CommandLine.argc)).map { index in
        guard let argument = CommandLine.unsafeArgv[index] else { return [] }
        return Array(UnsafeRawBufferPointer(start: argument, count: strlen(argument)))
    }

    /// What the parser sees: each argument's display form (the argument itself when it is UTF-8).
    static let strings: [String] = bytes.map(display)

    /// The exact path that the parsed value `value` came from: the bytes of the argument (or of
    /// the part after `=` in `--option=value`) whose display form is `value`.
    static func path(_ value: String) throws -> FileSystemPath {
        var candidates = Set<[UInt8]>()
        for argument in bytes {
            if display(argument) == value { candidates.insert(argument) }
            if argument.starts(with: Array("--".utf8)), let equals = argument.firstIndex(of: UInt8(ascii: "=")) {
                let rest = Array(argument[(equals + 1)...])
                if display(rest) == value { candidates.insert(rest) }
            }
        }
        guard candidates.count <= 1 else {
            throw CommandFailure(.usage, "the path \(value) is ambiguous: two arguments that differ in their bytes are shown as it")
        }
        return candidates.first.flatMap { FileSystemPath(bytes: $0) } ?? FileSystemPath(value)
    }

    private static func display(_ bytes: [UInt8]) -> String {
        FileSystemPath(bytes: bytes)?.description ?? String(decoding: bytes, as: UTF8.self)
    }
}
