import Foundation
import Testing
import StrataTestSupport

/// Runs the real `strata` executable (built beside the test bundle) as a child process.
@Suite struct DemoCommandTests {
    static var executable: URL {
        // On Linux the test runner lives in the build folder, next to every executable product.
        Bundle.main.bundleURL.appendingPathComponent("strata")
    }

    func run(_ arguments: [String]) throws -> ChildProcessResult {
        try runChildProcess(Self.executable, arguments)
    }

    @Test func demoCreatesAStoreAndPrintsGoodsGroupedByCategory() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("demo.sqlite").path
        let result = try run(["demo", "--path", path])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("store: \(path)"))
        #expect(result.output.contains("saved 32 goods in 5 categories; generation 0 → 1"))
        #expect(result.output.contains("\nFruit (7)\n  #1  Apple\n  #2  Banana\n"))
        #expect(result.output.contains("\nDairy (6)\n"))
        #expect(result.output.contains("#31  Crème fraîche"))
        #expect(result.output.contains("generation 1\n\n"))
        #expect(FileManager.default.fileExists(atPath: path))
        // A second run on the same store adds another commit: generation 2.
        let again = try run(["demo", "--path", path])
        #expect(again.status == 0)
        #expect(again.output.contains("generation 1 → 2"))
    }

    /// Issue 17: without --path the demo makes a folder in the temporary directory; it says
    /// where, and the command it prints removes everything it made.
    @Test func demoSaysWhereItsStoreIsAndHowToRemoveIt() throws {
        let temporary = TemporaryDirectory("strata-cli-demo-tmp")
        let result = try CLI.run(["demo"], environment: ["TMPDIR": temporary.url.path])
        #expect(result.status == 0, "\(result)")
        #expect(result.error.isEmpty)
        let made = try FileManager.default.contentsOfDirectory(atPath: temporary.url.path)
        try #require(made.count == 1 && made[0].hasPrefix("strata-demo-"), "\(made)")
        let folder = temporary.url.path + "/" + made[0]
        let lines = result.output.lines
        #expect(lines.first == "store: \(folder)/goods.sqlite")
        #expect(Array(lines.suffix(2)) == ["The store and its cache stay for `strata cache list '\(folder)/goods.sqlite'`; remove them with:",
                                           "  rm -r '\(folder)'"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["goods.sqlite", "goods.sqlite.caches"])
        let removal = try #require(lines.last).trimmingCharacters(in: .whitespaces)
        #expect(try shell(removal) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.url.path).isEmpty, "the printed command removes it all")
    }

    /// With --path the store goes where it is told, and the printed command removes the store and
    /// its cache folder (and nothing else in that folder).
    @Test func demoWithAPathSaysHowToRemoveTheStoreAndItsCaches() throws {
        let directory = TemporaryDirectory()
        try Data("mine\n".utf8).write(to: directory.file("keep.txt"))
        let path = directory.file("it's mine.sqlite").path
        let result = try run(["demo", "--path", path])
        #expect(result.status == 0, "\(result.error)")
        let quoted = "'" + path.replacingOccurrences(of: "'", with: "'\\''")
        #expect(result.output.hasSuffix("\n  rm -f \(quoted)' \(quoted)-wal' \(quoted)-shm' && rm -rf \(quoted).caches'\n"), "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
                == ["it's mine.sqlite", "it's mine.sqlite.caches", "keep.txt"])
        let removal = try #require(result.output.lines.last).trimmingCharacters(in: .whitespaces)
        #expect(try shell(removal) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["keep.txt"])
    }

    /// The demo opens its store through StoreCoordinator(url:), which can't name a file whose
    /// path is not UTF-8: such a --path is refused (exit 64), and nothing is created anywhere.
    @Test func demoRefusesAStorePathThatIsNotUTF8() throws {
        let directory = TemporaryDirectory()
        let path = RawFiles.path(directory.url, [0xFF] + Array(".sqlite".utf8))
        let result = try CLI.run(bytes: [Array("demo".utf8), Array("--path".utf8), path])
        #expect(result.status == 64, "\(result)")
        #expect(result.errorLines == ["strata demo: --path \(directory.url.path)/\\xFF.sqlite: the demo's store path must be UTF-8 "
                                      + "(the cache commands take any bytes)"])
        #expect(result.output.isEmpty)
        #expect(RawFiles.names(Array(directory.url.path.utf8)).isEmpty)
    }

    /// Runs `command` with /bin/sh; returns its exit status.
    func shell(_ command: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test func demoOnAFileThatIsNotADatabaseFailsCleanly() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("junk.sqlite")
        try Data("not a database at all, just text".utf8).write(to: path)
        let result = try run(["demo", "--path", path.path])
        #expect(result.status != 0)
        #expect(result.error.contains("is not an SQLite database"))
        #expect(try Data(contentsOf: path) == Data("not a database at all, just text".utf8))
    }

    /// A program linking Strata ignores `STRATA_KILL_POINT` unless it opts in
    /// (`KillPoint.armFromEnvironment()`, test API): the demo passes the commit and cache-write
    /// points the crash suite arms and finishes normally.
    @Test func aProgramThatDoesNotOptInIgnoresKillPoints() throws {
        for point in ["writer.committed", "transaction.begun", "cache.encoded", "cache.renamed"] {
            let directory = TemporaryDirectory()
            let path = directory.file("demo.sqlite").path
            let result = try CLI.run(["demo", "--path", path], environment: ["STRATA_KILL_POINT": point])
            #expect(result.status == 0, "STRATA_KILL_POINT=\(point)\n\(result)")
            #expect(!result.error.contains("kill point"), "\(result)")
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }
}
