import Foundation
import Strata
import StrataTestSupport
import Testing

/// Harness launches leave the test process with the descriptors it had, however they end: run to
/// the end, killed, killed at the deadline, or never started. (Each launch used to leave its two
/// pipes' read ends open, and a long soak of the crash suite ran out of descriptors.)
///
/// Counted in an exit test's child process, where nothing else opens or closes descriptors
/// meanwhile. Not gated like ``CrashSuite``: 33 short launches.
@Suite struct HarnessDescriptorTests {
    @Test func harnessLaunchesLeaveNoDescriptorOpen() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let line = HarnessDescriptorTests.launch(rounds: 8)
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let line = try #require(output.split(separator: "\n").last(where: { $0.hasPrefix("harness-descriptors: ") }))
        print(line)
        #expect(line.contains(" problems=0 "), "\(line)")
        #expect(line.contains(" added=none"), "\(line)")
    }

    /// A descriptor whose file is unlinked between the two lists is the same descriptor (the
    /// kernel then names it `… (deleted)`); one opened in between is added.
    ///
    /// Runs beside the parallel suite, whose tests open and close descriptors meanwhile, so it
    /// looks only at the two descriptors it holds (it once expected the whole difference to be
    /// empty, and CI caught other tests' descriptors in it).
    @Test func anUnlinkedFileStaysTheSameDescriptor() throws {
        let directory = TemporaryDirectory("strata-fd-unlinked")
        let path = directory.file("kept").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let before = OpenDescriptors.list()
        unlink(path)
        #expect(OpenDescriptors.list().contains { $0.fd == fd && $0.target.hasSuffix(" (deleted)") })
        #expect(!OpenDescriptors.added(since: before, now: OpenDescriptors.list()).contains { $0.hasPrefix("\(fd) ") })
        let other = open(directory.file("other-\(UUID())").path, O_RDWR | O_CREAT, 0o600)
        #expect(other >= 0)
        defer { close(other) }
        #expect(OpenDescriptors.added(since: before, now: OpenDescriptors.list()).contains { $0.hasPrefix("\(other) ") })
    }

    /// `rounds` times: a run to the end, a run killed at once, a run killed at its deadline and a
    /// launch of a file that is not executable. One summary line:
    /// `harness-descriptors: launches=N before=B after=A problems=P added=…`.
    static func launch(rounds: Int) -> String {
        let directory = TemporaryDirectory("strata-harness-fd")
        let store = directory.file("goods.sqlite")
        let configuration = CrashConfiguration.all[0]
        let notExecutable = directory.file("not-executable")
        _ = FileManager.default.createFile(atPath: notExecutable.path, contents: Data("#!/bin/sh\n".utf8))
        var problems: [String] = []
        var launches = 0
        // One launch first: Foundation's Process opens, once per process and per launching thread,
        // the run loops it waits on (an epoll, an eventfd and a timerfd each). Those stay; the
        // count that matters is of what each further launch leaves.
        do {
            let warm = try HarnessProcess.run(store: store, configuration: configuration, seed: 1, commits: 0)
            if warm.ending != .exited(0) { problems.append("warm-up: \(warm.summary)") }
        } catch {
            problems.append("warm-up: \(error)")
        }
        let before = OpenDescriptors.list()
        for round in 0..<rounds {
            do {
                let arguments = HarnessProcess.arguments(store: store, configuration: configuration, mode: "run",
                                                         seed: UInt64(round + 1), commits: 2)
                let full = try HarnessProcess.Launched(arguments: arguments, killPoint: nil).wait()
                launches += 1
                if full.ending != .exited(0) { problems.append("round \(round), run: \(full.summary)") }

                let killed = try HarnessProcess.runAndKill(after: .zero, store: store, configuration: configuration,
                                                           seed: UInt64(round + 100), commits: 2)
                launches += 1
                if killed.ending != .killed && killed.ending != .exited(0) { problems.append("round \(round), kill: \(killed.summary)") }

                // A zero deadline: killed as hung.
                let hung = try HarnessProcess.Launched(arguments: arguments, killPoint: nil).wait(deadline: .zero)
                launches += 1
                if hung.ending != .hung { problems.append("round \(round), deadline: \(hung.summary)") }
            } catch {
                problems.append("round \(round): \(error)")
            }
            do {
                _ = try HarnessProcess.Launched(arguments: [], killPoint: nil, executable: notExecutable)
                problems.append("round \(round): a file that is not executable was launched")
            } catch {
                launches += 1                   // refused, as it should be
            }
        }
        // Foundation closes a launch's monitoring socket on its manager thread, just after the
        // termination handler runs: give the last launch's a moment (under ThreadSanitizer it was
        // still open when counted). A leak stays; this waits at most 10 s for what is closing.
        var after = OpenDescriptors.list()
        var added = OpenDescriptors.added(since: before, now: after)
        let deadline = ContinuousClock.now + .seconds(10)
        while !added.isEmpty && ContinuousClock.now < deadline {
            usleep(50_000)
            after = OpenDescriptors.list()
            added = OpenDescriptors.added(since: before, now: after)
        }
        return "harness-descriptors: launches=\(launches) before=\(before.count) after=\(after.count) problems=\(problems.count) "
            + "added=\(added.isEmpty ? "none" : added.prefix(10).joined(separator: ", "))"
            + (problems.isEmpty ? "" : " first problems: \(problems.prefix(5).joined(separator: "; "))")
    }
}
