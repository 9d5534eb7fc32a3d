import Foundation
import StrataSQLite
import StrataTestSupport
import Testing
import Strata

/// `strata store check`: exit 0 when clean, 65 with the bad pages listed when not.
@Suite struct StoreCheckCommandTests {
    @Test func aCleanStoreExitsZeroAndSaysClean() throws {
        let fixture = try CLIFixture()
        let result = try CLI.run(["store", "check", fixture.path])
        #expect(result.status == 0, "\(result)")
        #expect(result.error.isEmpty)
        #expect(result.output.lines.contains("result           clean"), "\(result.output)")
        #expect(result.output.lines.contains("integrity_check  ok"))
        #expect(result.output.lines.contains("invariants       ok"))
        let json = try CLI.run(["store", "check", fixture.path, "--json"]).jsonObject()
        #expect(json["checksummed"] as? Bool == true)
        #expect(json["badPageCount"] as? Int == 0)
        #expect((json["pages"] as? Int ?? 0) >= 3)
    }

    @Test func aFlippedByteExits65AndListsThePage() throws {
        let fixture = try CLIFixture()
        var bytes = try Data(contentsOf: fixture.url)
        let page = bytes.count / 4096                     // the last page
        bytes[(page - 1) * 4096 + 100] ^= 0x01
        try bytes.write(to: fixture.url)
        let result = try CLI.run(["store", "check", fixture.path, "--json"])
        #expect(result.status == 65, "\(result)")
        let json = try result.jsonObject()
        #expect(json["badPages"] as? [Int] == [page])
        #expect(json["badPageCount"] as? Int == 1)
        let text = try CLI.run(["store", "check", fixture.path])
        #expect(text.status == 65)
        #expect(text.output.contains("1 bad (first: \(page))"), "\(text.output)")
        #expect(text.output.lines.contains("result           CORRUPT"))
    }

    @Test func aBrokenInvariantIsCorruptToo() throws {
        let fixture = try CLIFixture()
        // A join-free model: raise an entity's generation above the store's, by hand.
        let db = try Connection(path: fixture.path, configuration: .init())
        try db.execute("UPDATE strata_entity SET generation = 1000 WHERE name = 'Good'")
        db.close()
        let result = try CLI.run(["store", "check", fixture.path, "--json"])
        #expect(result.status == 65, "\(result)")
        let invariants = try #require(try result.jsonObject()["invariants"] as? [String])
        #expect(invariants.contains { $0.contains("entity Good has generation 1000, above the store's") }, "\(invariants)")
    }
}
