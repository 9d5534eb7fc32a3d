import Foundation
import Testing
import StrataTestSupport

/// Runs the real `strata` executable (built beside the test bundle) as a child process.
@Suite struct DemoCommandTests {
    static var executable: URL {
        // On Linux the test runner lives in the build folder, next to every executable product.
        Bundle.main.bundleURL.appendingPathComponent("strata")
    }

    func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
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
        #expect(result.output.hasSuffix("generation 1\n"))
        #expect(FileManager.default.fileExists(atPath: path))
        // A second run on the same store adds another commit: generation 2.
        let again = try run(["demo", "--path", path])
        #expect(again.status == 0)
        #expect(again.output.contains("generation 1 → 2"))
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
}
