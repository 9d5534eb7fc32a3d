import Foundation
import Testing
import Strata
import StrataTestSupport

/// A Linux file name is bytes: every path argument must reach the file system as given, even
/// when it is not UTF-8 (which `CommandLine.arguments`, `String`, `URL` and `FileManager` repair).
@Suite struct NonUTF8PathTests {
    /// A store named `$'\xff\xfe'.sqlite` with its caches in `$'\xff\xfe'.sqlite.caches`, and beside
    /// it a decoy, another store, where the repaired name leads (`��.sqlite`): every command
    /// reads the store named, its caches, and a `--cache-dir` that is not UTF-8 either.
    @Test func storeAndCacheFolderWithNonUTF8NamesAreReachedByteForByte() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byCategory)
        try fixture.makeCache(CLIFixture.byName)
        let metadata = try fixture.metadata()
        let folder = fixture.directory.url
        defer { RawFiles.removeTree(Array(folder.path.utf8)) }   // FileManager can't remove names that are not UTF-8
        let name: [UInt8] = [0xFF, 0xFE] + Array(".sqlite".utf8)
        let store = RawFiles.path(folder, name)
        try RawFiles.rename(Array(fixture.path.utf8), store)
        try RawFiles.rename(Array(fixture.cacheFolder.path.utf8), store + Array(".caches".utf8))
        let decoy = try CLIFixture()
        try FileManager.default.copyItem(at: decoy.url, to: folder.appendingPathComponent("\u{FFFD}\u{FFFD}.sqlite"))
        let decoyBytes = try RawFiles.contents(Array(folder.appendingPathComponent("\u{FFFD}\u{FFFD}.sqlite").path.utf8))
        let shown = folder.path + "/\\xFF\\xFE.sqlite"
        let before = RawFiles.names(Array(folder.path.utf8))

        let info = try CLI.run(bytes: [Array("store".utf8), Array("info".utf8), store, Array("--json".utf8)])
        #expect(info.status == 0, "\(info)")
        #expect(info.error.isEmpty)
        let fields = try info.jsonObject()
        #expect(fields["path"] as? String == shown)
        #expect(fields["storeUUID"] as? String == metadata.storeUUID.uuidString, "the store named, not the decoy")
        let text = try CLI.run(bytes: [Array("store".utf8), Array("info".utf8), store])
        #expect(text.output.lines.first == "path          \(shown)", "\(text)")

        let list = try CLI.run(bytes: [Array("cache".utf8), Array("list".utf8), store, Array("--json".utf8)])
        #expect(list.status == 0, "\(list)")
        let reports = try list.jsonArray()
        #expect(reports.map { $0["name"] as? String } == ["by-category", "by-name"])
        #expect(reports.map { $0["status"] as? String } == ["valid", "valid"])
        #expect(reports.map { $0["path"] as? String } == ["\(shown).caches/by-category.stratacache", "\(shown).caches/by-name.stratacache"])

        let inspect = try CLI.run(bytes: [Array("cache".utf8), Array("inspect".utf8), store, Array("by-name".utf8), Array("--json".utf8)])
        #expect(inspect.status == 0, "\(inspect)")
        #expect(try inspect.jsonObject()["ids"] as? [Int] != nil)

        let verify = try CLI.run(bytes: [Array("cache".utf8), Array("verify".utf8), store])
        #expect(verify.status == 0, "\(verify)")
        #expect(verify.output.lines.last == "2 caches verified: 2 valid, 0 invalid")

        let purge = try CLI.run(bytes: [Array("cache".utf8), Array("purge".utf8), store, Array("by-name".utf8)])
        #expect(purge.status == 0, "\(purge)")
        #expect(purge.output == "removed by-name\n\n1 cache removed from \(shown).caches\n")
        #expect(RawFiles.names(store + Array(".caches".utf8)) == [Array("by-category.stratacache".utf8)])

        // A cache folder of its own whose name is not UTF-8 either, as `--cache-dir DIR` and `--cache-dir=DIR`.
        let caches = RawFiles.path(folder, Array("caches-".utf8) + [0xFE])
        try RawFiles.rename(store + Array(".caches".utf8), caches)
        let elsewhere = try CLI.run(bytes: [Array("cache".utf8), Array("list".utf8), store, Array("--cache-dir".utf8), caches])
        #expect(elsewhere.status == 0, "\(elsewhere)")
        #expect(elsewhere.output.lines.last == "1 cache in \(folder.path)/caches-\\xFE: 1 valid")
        let all = try CLI.run(bytes: [Array("cache".utf8), Array("purge".utf8), store, Array("--all".utf8), Array("--cache-dir=".utf8) + caches])
        #expect(all.status == 0, "\(all)")
        #expect(all.output == "removed by-category\n\n1 cache removed from \(folder.path)/caches-\\xFE\n")
        #expect(RawFiles.names(caches).isEmpty)

        // Nothing else in the folder changed: no -wal or -shm left, the decoy untouched.
        var after = before
        after.removeAll { $0 == name + Array(".caches".utf8) }
        after.append(Array("caches-".utf8) + [0xFE])
        #expect(RawFiles.names(Array(folder.path.utf8)) == after.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(try RawFiles.contents(Array(folder.appendingPathComponent("\u{FFFD}\u{FFFD}.sqlite").path.utf8)) == decoyBytes)
    }

    /// A store path that is not UTF-8 and names nothing: the error shows its bytes (`\xFF`), not
    /// the U+FFFD a repair would put there.
    @Test func aMissingStoreWhoseNameIsNotUTF8IsNamedInTheError() throws {
        let directory = TemporaryDirectory("strata-cli-bytes")
        let missing = RawFiles.path(directory.url, [0xFF])
        let result = try CLI.run(bytes: [Array("store".utf8), Array("info".utf8), missing])
        #expect(result.status == 66, "\(result)")
        #expect(result.errorLines == ["strata store info: no such file: \(directory.url.path)/\\xFF"])
        #expect(result.output.isEmpty)
    }
}
