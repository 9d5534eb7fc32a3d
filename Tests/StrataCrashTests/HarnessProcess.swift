import Foundation
import Strata

/// One of the three store configurations the crash suite runs in.
struct CrashConfiguration: Sendable, CustomStringConvertible {
    var name: String
    var journal: StrataSQLiteJournalMode
    var synchronous: StrataSQLiteSynchronous

    static let all = [
        CrashConfiguration(name: "wal-full", journal: .wal, synchronous: .full),
        CrashConfiguration(name: "wal-normal", journal: .wal, synchronous: .normal),
        CrashConfiguration(name: "rollback-full", journal: .delete, synchronous: .full),
    ]

    var description: String { name }

    var storeOptions: StoreOptions {
        var options = StoreOptions()
        options.journalMode = journal
        options.synchronous = synchronous
        return options
    }

    var harnessArguments: [String] {
        ["--journal", journal == .delete ? "delete" : "wal", "--synchronous", synchronous == .full ? "full" : "normal"]
    }
}

/// A commit the harness acknowledged: `ack <generation> <marker> <section counts>`.
struct Ack: Sendable, Equatable {
    var generation: Int64
    var marker: String
    var sectionCounts: String
}

/// How a harness process ended, and what it wrote.
struct HarnessRun: Sendable {
    enum Ending: Sendable, Equatable, CustomStringConvertible {
        /// Ended by SIGKILL: an armed kill point, or the suite's kill.
        case killed
        case exited(Int32)
        case signal(Int32)
        /// Still running at the deadline (then killed).
        case hung

        var description: String {
            switch self {
            case .killed: "killed by SIGKILL"
            case .exited(let status): "exited with status \(status)"
            case .signal(let signal): "ended by signal \(signal)"
            case .hung: "hung (killed at the deadline)"
            }
        }
    }

    var ending: Ending
    var stdout: String
    var stderr: String
    var duration: Duration

    /// Complete lines of stdout (a line is written with one write(2), so a kill never tears one).
    var lines: [String] {
        var lines = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()            // after the last newline: empty, or a line never finished
        return lines
    }

    var acks: [Ack] {
        lines.compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 3, fields[0] == "ack", let generation = Int64(fields[1]) else { return nil }
            return Ack(generation: generation, marker: fields[2], sectionCounts: fields.count > 3 ? fields[3] : "")
        }
    }

    /// Whether the harness had opened the store and fetched (its `open` line).
    var opened: Bool { lines.contains { $0.hasPrefix("open ") } }

    /// The value of `key=value` on the first line starting with `prefix`.
    func field(_ key: String, onLineStartingWith prefix: String) -> String? {
        guard let line = lines.first(where: { $0.hasPrefix(prefix) }) else { return nil }
        for token in line.split(separator: " ") where token.hasPrefix(key + "=") { return String(token.dropFirst(key.count + 1)) }
        return nil
    }

    /// A short account for failure records.
    var summary: String {
        let tail = stderr.split(separator: "\n").suffix(4).joined(separator: " | ")
        return "\(ending) after \(duration), \(acks.count) acks" + (tail.isEmpty ? "" : "; stderr: \(tail)")
    }
}

/// Finds, starts, kills and waits for `StrataCrashHarness` child processes (Foundation's
/// `Process`: posix_spawn, never fork in the test runner).
enum HarnessProcess {
    static let executableName = "StrataCrashHarness"

    /// The harness binary: `STRATA_CRASH_HARNESS`, else beside the test bundle (where `swift
    /// test` builds every executable of the package), else one folder up.
    static let executable: URL? = {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["STRATA_CRASH_HARNESS"] { candidates.append(URL(fileURLWithPath: path)) }
        let bundle = Bundle.main.bundleURL
        candidates.append(bundle.appendingPathComponent(executableName))
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent(executableName))
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent(executableName))
            candidates.append(executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(executableName))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    struct NotFound: Error, CustomStringConvertible {
        var description: String {
            "\(HarnessProcess.executableName) not found beside \(Bundle.main.bundleURL.path) (build it: swift build --product \(HarnessProcess.executableName))"
        }
    }

    /// A started harness.
    ///
    /// Every descriptor it opens is closed on every path: the two pipes' read ends after the
    /// output is read (``wait(deadline:)``, also after a kill or at the deadline), all four ends when
    /// the launch fails, and in `deinit` when nobody waited. The write ends are closed in this
    /// process by `Process.run()` once the child has them; closing them again does nothing.
    /// (Before, nothing closed the read ends: Foundation's `Process` keeps itself, and with it its
    /// pipes, alive until `waitUntilExit()`, which the suite never called, so every launch left
    /// two descriptors open until a long soak reached the descriptor limit, where `Pipe()` hands
    /// out descriptor -1 and every later launch failed with `EBADF`.)
    final class Launched {
        let process = Process()
        private let out = Pipe()
        private let err = Pipe()
        private let exited = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        /// Set by ``wait(deadline:)``: the process was reaped and the pipes closed.
        private var collected = false

        /// Starts `executable` (the harness unless a test names another) with `arguments`.
        init(arguments: [String], killPoint: String?, executable: URL? = HarnessProcess.executable,
             environment extra: [String: String] = [:]) throws {
            do {
                guard let executable else { throw NotFound() }
                process.executableURL = executable
                process.arguments = arguments
                var environment = ProcessInfo.processInfo.environment
                environment.removeValue(forKey: "STRATA_KILL_POINT")
                if let killPoint { environment["STRATA_KILL_POINT"] = killPoint }
                environment.merge(extra) { _, new in new }
                process.environment = environment
                process.standardOutput = out
                process.standardError = err
                process.standardInput = FileHandle.nullDevice
                let exited = exited
                process.terminationHandler = { _ in exited.signal() }
                try process.run()
            } catch {
                collected = true            // nothing to wait for
                closePipes()
                throw error
            }
        }

        deinit {
            // Launched and dropped without a wait (a test that threw in between): no child
            // outlives it and no descriptor stays open.
            if !collected {
                kill()
                exited.wait()
                process.waitUntilExit()
            }
            closePipes()
        }

        var pid: Int32 { process.processIdentifier }

        /// SIGKILL now; nothing when it already ended (its pid is never signalled after it was
        /// reaped, so no other process can be hit).
        func kill() {
            guard process.isRunning else { return }
            _ = Foundation.kill(pid, SIGKILL)
        }

        /// Closes both ends of both pipes (an end already closed is left alone).
        private func closePipes() {
            for handle in [out.fileHandleForReading, out.fileHandleForWriting, err.fileHandleForReading, err.fileHandleForWriting] {
                try? handle.close()
            }
        }

        /// Waits for the end (killing it at `deadline`), collects its output and closes the pipes.
        func wait(deadline: Duration = .seconds(60)) -> HarnessRun {
            var hung = false
            if exited.wait(timeout: .now() + .milliseconds(Int(deadline.components.seconds * 1000))) == .timedOut {
                hung = true
                kill()
                exited.wait()
            }
            let duration = ContinuousClock.now - started
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            closePipes()
            // The child has been reaped (the termination handler ran), so this returns at once;
            // it drops the run-loop source through which the Process retains itself.
            process.waitUntilExit()
            collected = true
            let ending: HarnessRun.Ending
            if hung {
                ending = .hung
            } else if process.terminationReason == .uncaughtSignal {
                ending = process.terminationStatus == SIGKILL ? .killed : .signal(process.terminationStatus)
            } else {
                ending = .exited(process.terminationStatus)
            }
            return HarnessRun(ending: ending, stdout: stdout, stderr: stderr, duration: duration)
        }
    }

    /// The arguments of a harness run on `store`.
    static func arguments(store: URL, configuration: CrashConfiguration, mode: String, seed: UInt64, commits: Int) -> [String] {
        ["--store", store.path, "--seed", String(seed), "--commits", String(commits), "--mode", mode] + configuration.harnessArguments
    }

    /// Runs the harness to its end (armed with `killPoint` when given).
    static func run(store: URL, configuration: CrashConfiguration, mode: String = "run", seed: UInt64, commits: Int,
                    killPoint: String? = nil) throws -> HarnessRun {
        try Launched(arguments: arguments(store: store, configuration: configuration, mode: mode, seed: seed, commits: commits),
                     killPoint: killPoint).wait()
    }

    /// Runs the harness and sends SIGKILL after `delay` (unless it ended before).
    static func runAndKill(after delay: Duration, store: URL, configuration: CrashConfiguration, mode: String = "run",
                           seed: UInt64, commits: Int) throws -> HarnessRun {
        let launched = try Launched(arguments: arguments(store: store, configuration: configuration, mode: mode, seed: seed,
                                                         commits: commits), killPoint: nil)
        let wake = launched.started + delay
        let now = ContinuousClock.now
        if wake > now {
            let gap = wake - now
            usleep(UInt32(gap.components.seconds * 1_000_000 + gap.components.attoseconds / 1_000_000_000_000))
        }
        launched.kill()
        return launched.wait()
    }
}
