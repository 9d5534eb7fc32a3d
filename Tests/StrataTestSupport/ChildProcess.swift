public import Foundation

/// What a child process printed and how it ended.
public struct ChildProcessResult: CustomStringConvertible, Sendable {
    public var status: Int32
    public var output: String
    public var error: String

    public var description: String { "exit \(status), stdout \(output.debugDescription), stderr \(error.debugDescription)" }
}

/// Runs `executable` with `arguments` to its end (Foundation's `Process`, never `fork()`), and
/// returns its exit status, standard output and standard error.
public func runChildProcess(_ executable: URL, _ arguments: [String]) throws -> ChildProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe(), error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ChildProcessResult(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                              error: String(decoding: err, as: UTF8.self))
}
