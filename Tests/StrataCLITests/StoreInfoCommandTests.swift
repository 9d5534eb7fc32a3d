import Foundation
import Testing
import Strata
import StrataTestSupport

/// `strata store info` against a real store made by the library.
@Suite struct StoreInfoCommandTests {
    @Test func jsonHasEveryFieldOfTheStore() throws {
        let fixture = try CLIFixture()
        try fixture.addCategory("Empty")   // Category at generation 2, Good still at 1
        let metadata = try fixture.metadata()
        let result = try CLI.run(["store", "info", fixture.path, "--json"])
        #expect(result.status == 0, "\(result)")
        #expect(result.error.isEmpty)
        let info = try result.jsonObject()
        #expect(Set(info.keys) == ["path", "storeUUID", "formatVersion", "generation", "nonce", "modelVersion", "modelHash",
                                   "journalMode", "entities", "files"])
        #expect(info["path"] as? String == fixture.path)
        #expect(info["storeUUID"] as? String == metadata.storeUUID.uuidString)
        #expect(info["formatVersion"] as? Int == StoreCoordinator.formatVersion)
        #expect(info["generation"] as? Int == 2)
        #expect(info["nonce"] as? String == metadata.nonce.map { String(format: "%02x", $0) }.joined())
        #expect(info["modelVersion"] as? String == "goods-1")
        #expect(info["modelHash"] as? String == metadata.modelHash)
        #expect(info["journalMode"] as? String == "wal")
        let entities = try #require(info["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Category", "Good"])
        #expect(entities.map { $0["generation"] as? Int } == [2, 1])
        #expect(entities.map { $0["rows"] as? Int } == [4, 9])
        let files = try #require(info["files"] as? [String: Any])
        #expect(files["database"] as? Int64 == (try fixture.fileSize(fixture.url)))
        // Nothing has the store open: no -wal or -shm, before the read or after it (see
        // StoreInspectorSideEffectTests).
        for key in ["wal", "shm"] {
            #expect(files[key] == nil, "\(key)")
            #expect(!FileManager.default.fileExists(atPath: fixture.path + "-" + key), "\(key)")
        }
        // Stable: pretty printed with sorted keys.
        #expect(result.output.hasPrefix("{\n"))
        let keys = result.output.lines.filter { $0.hasPrefix("  \"") }.map { $0.split(separator: "\"")[1] }
        #expect(keys == keys.sorted())
    }

    @Test func textIsAlignedAndShowsSizesInKilobytes() throws {
        let fixture = try CLIFixture()
        let metadata = try fixture.metadata()
        let result = try CLI.run(["store", "info", fixture.path])
        #expect(result.status == 0, "\(result)")
        let lines = result.output.lines
        #expect(lines.contains("path          \(fixture.path)"))
        #expect(lines.contains("store UUID    \(metadata.storeUUID.uuidString)"))
        #expect(lines.contains("format        1"))
        #expect(lines.contains("generation    1"))
        #expect(lines.contains("model         goods-1, hash \(metadata.modelHash)"))
        #expect(lines.contains("journal mode  wal"))
        let files = try #require(lines.first { $0.hasPrefix("files ") })
        let kilobytes = String(format: "%.1f KB", Double(try fixture.fileSize(fixture.url)) / 1024)
        #expect(files.contains("database \(kilobytes)"), "\(files)")
        #expect(lines.contains("ENTITY    GENERATION  ROWS"))
        #expect(lines.contains("Category           1     3"))
        #expect(lines.contains("Good               1     9"))
    }

    @Test func rollbackJournalStoreShowsItsJournalModeAndNoWAL() throws {
        let fixture = try CLIFixture(journalMode: .delete)
        let before = try fixture.snapshot()
        let result = try CLI.run(["store", "info", fixture.path, "--json"])
        #expect(result.status == 0, "\(result)")
        let info = try result.jsonObject()
        #expect(info["journalMode"] as? String == "delete")
        let files = try #require(info["files"] as? [String: Any])
        #expect(files["wal"] == nil && files["shm"] == nil, "absent, not null, when there is no such file")
        #expect(try fixture.snapshot() == before, "reading a rollback-journal store changes nothing")
    }
}
