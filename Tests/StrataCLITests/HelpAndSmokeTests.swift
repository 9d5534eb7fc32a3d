import Foundation
import Testing
import Strata
import StrataTestSupport

/// `--help` for every command, the demo's cache, and the `.ci/run` smoke sequence.
@Suite struct HelpAndSmokeTests {
    static let commands: [[String]] = [
        [], ["demo"], ["store"], ["store", "info"], ["cache"], ["cache", "list"], ["cache", "inspect"], ["cache", "verify"],
        ["cache", "purge"],
    ]

    @Test(arguments: HelpAndSmokeTests.commands)
    func everyCommandHasHelpWithAnExample(_ command: [String]) throws {
        let result = try CLI.run(command + ["--help"])
        #expect(result.status == 0, "\(result)")
        #expect(result.error.isEmpty)
        #expect(result.output.contains("USAGE: strata \(command.joined(separator: " "))".trimmingCharacters(in: .whitespaces)))
        let examples = result.output.components(separatedBy: "Example:\n").dropFirst().first ?? ""
        #expect(examples.hasPrefix("  strata "), "an example under 'Example:'\n\(result.output)")
        // `strata help <command>` prints the same.
        let help = try CLI.run(["help"] + command)
        #expect(help.status == 0 && help.output == result.output)
    }

    @Test func helpDocumentsTheExitStatuses() throws {
        let result = try CLI.run(["--help"])
        let text = result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("Exit statuses: 0 ok, 1 verify found an invalid cache, 64 usage, 65 data error, 66 no input, "
                              + "70 internal error, 74 I/O error, 75 store locked (try again)."), "\(result.output)")
    }

    /// What `.ci/run` does after the tests: the demo, then every cache command on its store.
    @Test func demoLeavesACacheThatEveryCacheCommandHandles() throws {
        let directory = TemporaryDirectory("strata-cli-smoke")
        let store = directory.file("goods.sqlite").path
        let demo = try CLI.run(["demo", "--path", store])
        #expect(demo.status == 0, "\(demo)")
        #expect(demo.output.lines.first == "store: \(store)")
        #expect(demo.output.contains("\ncache goods-by-category: Bakery 4, Dairy 6, Fruit 7, Pantry 9, Vegetables 6\n"))
        #expect(demo.output.hasSuffix("generation 1\n"))

        let list = try CLI.run(["cache", "list", store])
        #expect(list.status == 0, "\(list)")
        let row = try #require(list.output.lines.dropFirst().first)
        #expect(row.hasPrefix("goods-by-category  Good           5       32  "), "\(row)")
        #expect(row.hasSuffix("  1          1  valid   Good by category.name, name sectioned by category.name"), "\(row)")

        let inspect = try CLI.run(["cache", "inspect", store, "goods-by-category", "--limit", "5"])
        #expect(inspect.status == 0, "\(inspect)")
        #expect(inspect.output.contains("3  Pantry      P          9  ████████████████████████████████████████\n"))
        #expect(inspect.output.contains("first 5 of 32 IDs:\n"))

        let verify = try CLI.run(["cache", "verify", store])
        #expect(verify.status == 0, "\(verify)")
        #expect(verify.output.contains("goods-by-category  valid   matches  5 sections, 32 objects\n"))

        let purge = try CLI.run(["cache", "purge", store, "--all"])
        #expect(purge.status == 0, "\(purge)")
        #expect(purge.output.hasPrefix("removed goods-by-category\n"))
        #expect(try CLI.run(["cache", "list", store]).output == "no caches in \(store).caches\n")

        // A second demo on the same store: a new commit, the cache written again.
        let again = try CLI.run(["demo", "--path", store])
        #expect(again.output.contains("generation 1 → 2"))
        #expect(try CLI.run(["cache", "verify", store]).status == 0)
    }
}

/// Known library issue: inspection opens the store with SQLITE_OPEN_READONLY; on a WAL store
/// no app has open (no -wal or -shm beside it) SQLite creates an empty -wal and a 32 KiB -shm,
/// and a read-only connection can't remove them when it closes. Harmless (the next app open
/// uses and removes them), but "read-only" inspection then changes the folder, and `store info`
/// reports the files its own read made. The bad-input tests are unaffected: the CLI checks
/// cache names before it opens the store, and the other bad inputs fail before SQLite opens a
/// WAL database.
@Suite struct StoreInspectorSideEffectTests {
    @Test func inspectingAClosedWALStoreLeavesItsFolderAsItWas() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byName)
        let before = try fixture.snapshot()
        #expect(try CLI.run(["cache", "list", fixture.path]).status == 0)
        let after = try fixture.snapshot()
        withKnownIssue("StoreInspector.read leaves -wal and -shm beside a closed WAL store") {
            #expect(after == before, "before: \(before); after: \(after)")
        }
    }
}
