import Foundation
@_spi(Testing) import Strata
import StrataTestSupport
import Testing

/// `saveToStore()`'s shortcut (an update context committing straight through a clean main and
/// writer) reaches the commit's kill points under the name of the root context that commits, as
/// ``KillPoint`` promises: `writer.transaction.begun`, not `context.transaction.begun`. Real
/// processes (`StrataCrashHarness --mode exit-without-close`, whose commits are update-context
/// `saveToStore()` calls with main and writer clean). Not gated: two short processes.
@Suite(.serialized) struct SaveToStoreKillPointTests {
    static func launch(_ store: URL, killPoint: String?) throws -> HarnessRun {
        let arguments = HarnessProcess.arguments(store: store, configuration: CrashConfiguration.all[0],
                                                 mode: "exit-without-close", seed: 1, commits: 1)
        return try HarnessProcess.Launched(arguments: arguments, killPoint: killPoint).wait()
    }

    @Test(arguments: ["writer.transaction.begun", "writer.rows.written", "writer.generation.bumped", "writer.entities.stamped"])
    func theShortcutsCommitIsNamedAfterTheWriter(point: String) throws {
        let directory = TemporaryDirectory("strata-test-kill-names")
        let store = directory.file("goods.sqlite")
        // The store's first session seeds it with two shortcut commits: the first reaches the point.
        let run = try Self.launch(store, killPoint: point)
        #expect(run.ending == .killed, "\(run.summary)")
        #expect(run.stderr.contains("kill point \(point) reached"), "\(run.stderr)")
        #expect(!run.lines.contains { $0.hasPrefix("fetch ") }, "the process went on past the first commit: \(run.stdout)")
    }

    /// The control: the same session with no kill point armed ends normally, and the unnamed
    /// form the shortcut used to reach is reached by nothing.
    @Test func theUnnamedPointIsNeverReached() throws {
        let directory = TemporaryDirectory("strata-test-kill-names")
        let run = try Self.launch(directory.file("goods.sqlite"), killPoint: "context.transaction.begun")
        #expect(run.ending == .exited(0), "\(run.summary)")
        #expect(run.lines.first == "fetch 1 rebuilt (missing) rows=5", "\(run.stdout)")
    }
}
