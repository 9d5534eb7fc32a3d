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
                              + "70 internal error, 74 I/O error, 75 store locked (try again), 77 the store can't be read or changed here "
                              + "without write access."), "\(result.output)")
    }

    /// What `.ci/run` does after the tests: the demo, then every cache command on its store.
    @Test func demoLeavesACacheThatEveryCacheCommandHandles() throws {
        let directory = TemporaryDirectory("strata-cli-smoke")
        let store = directory.file("goods.sqlite").path
        let demo = try CLI.run(["demo", "--path", store])
        #expect(demo.status == 0, "\(demo)")
        #expect(demo.output.lines.first == "store: \(store)")
        #expect(demo.output.contains("\ncache goods-by-category: Bakery 4, Dairy 6, Fruit 7, Pantry 9, Vegetables 6\n"))
        #expect(demo.output.contains("generation 1\n\nThe store and its cache stay for"))

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

/// Issue 17: SQLite's read-only open of a WAL store that nothing has open (no -wal or -shm
/// beside it) creates an empty -wal and a 32 KiB -shm that a read-only connection can't remove.
/// The inspector reads such a store through a read-write, `query_only` connection whose close
/// removes them: every command that changes nothing leaves the folder exactly as it was.
@Suite struct StoreInspectorSideEffectTests {
    @Test func inspectingAClosedWALStoreLeavesItsFolderAsItWas() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byName)
        let before = try fixture.snapshot()
        #expect(!FileManager.default.fileExists(atPath: fixture.path + "-wal"), "nothing has the store open")
        for arguments in [["store", "info", fixture.path], ["cache", "list", fixture.path], ["cache", "inspect", fixture.path, "by-name"],
                          ["cache", "verify", fixture.path], ["cache", "purge", fixture.path, "--all", "--dry-run"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 0, "\(arguments)\n\(result)")
            let after = try fixture.snapshot()
            #expect(after == before, "\(arguments): before: \(before); after: \(after)")
        }
        let info = try CLI.run(["store", "info", fixture.path, "--json"])
        let files = try #require(try info.jsonObject()["files"] as? [String: Any])
        #expect(files["wal"] == nil && files["shm"] == nil, "store info reports the files as they were: none")
    }

    /// With an app's connection open, the -wal and -shm are the app's: the inspector reads
    /// through them and leaves them.
    @Test func inspectingAStoreAnAppHasOpenLeavesItsWALFiles() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byName)
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: fixture.url, options: fixture.options)
        defer { coordinator.close() }
        #expect(FileManager.default.fileExists(atPath: fixture.path + "-wal"))
        let result = try CLI.run(["cache", "verify", fixture.path])
        #expect(result.status == 0, "\(result)")
        #expect(FileManager.default.fileExists(atPath: fixture.path + "-wal") && FileManager.default.fileExists(atPath: fixture.path + "-shm"))
        let info = try CLI.run(["store", "info", fixture.path, "--json"])
        let files = try #require(try info.jsonObject()["files"] as? [String: Any])
        #expect(files["wal"] != nil && files["shm"] != nil)
    }
}
