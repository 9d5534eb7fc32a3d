import Foundation
import Testing
import Strata
import StrataSQLite
import StrataTestSupport

/// A store with a malformed page: the command that reads the bad page fails with exit 65 and one
/// line, `store is corrupt: PATH: MESSAGE`, and changes nothing. With page checksums (the
/// default) the message names the page; without, it is SQLite's own (`SQLITE_CORRUPT`).
@Suite struct MalformedStoreTests {
    /// What the command says after `store is corrupt: PATH: ` about `page` (0: not known here).
    func message(checksums: Bool, page: Int64) -> String {
        checksums ? "page \(page) fails its checksum" : "database disk image is malformed"
    }

    /// Overwrites the start of the b-tree page of table `table` (its page header) with 0xFF
    /// bytes; returns the page number.
    @discardableResult
    func corruptPage(of table: String, in fixture: CLIFixture) throws -> Int64 {
        // Read-write (writing nothing): its close removes the -wal and -shm the open made.
        let db = try Connection(path: fixture.path)
        var page: Int64 = 0, size: Int64 = 0
        try db.prepare("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = '\(table)'").forEachRow { page = $0.int64(at: 0) }
        try db.prepare("PRAGMA page_size").forEachRow { size = $0.int64(at: 0) }
        db.close()
        try #require(page > 1 && size > 0)
        // Close-on-exec, as every descriptor a test opens while others spawn children.
        let fd = open(fixture.path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let bytes = [UInt8](repeating: 0xFF, count: 64)
        #expect(pwrite(fd, bytes, bytes.count, off_t((page - 1) * size)) == bytes.count)
        return page
    }

    /// Issue 17: verify used to print "valid … DIFFERS: SQLite error 11" and exit 1, blaming the
    /// cache for the store's broken page.
    @Test(arguments: [true, false]) func verifyOfAMalformedStoreExits65WithOneLine(checksums: Bool) throws {
        let fixture = try CLIFixture(pageChecksums: checksums)
        try fixture.makeCache(CLIFixture.byCategory)
        try fixture.makeCache(CLIFixture.byName)
        let page = try corruptPage(of: "Good", in: fixture)
        let before = try fixture.snapshot()
        for arguments in [["cache", "verify", fixture.path], ["cache", "verify", fixture.path, "--json"],
                          ["cache", "verify", fixture.path, "by-name"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 65, "\(arguments)\n\(result)")
            #expect(result.errorLines == ["strata cache verify: store is corrupt: \(fixture.path): \(message(checksums: checksums, page: page))"],
                    "\(arguments)\n\(result)")
            #expect(result.output.isEmpty, "\(arguments)\n\(result)")
            #expect(try fixture.snapshot() == before, "\(arguments) changed the folder")
        }
    }

    /// The metadata every command reads first is on a malformed page: every command says so the
    /// same way, and removes nothing.
    @Test(arguments: [true, false]) func everyCommandOnAStoreWithMalformedMetadataExits65WithOneLine(checksums: Bool) throws {
        let fixture = try CLIFixture(pageChecksums: checksums)
        try fixture.makeCache(CLIFixture.byName)
        let page = try corruptPage(of: "strata_meta", in: fixture)
        let before = try fixture.snapshot()
        for command in [["store", "info"], ["store", "info", "--json"], ["cache", "list"], ["cache", "list", "--json"],
                        ["cache", "inspect", "by-name"], ["cache", "verify"], ["cache", "purge", "--all"], ["cache", "purge", "--stale"]] {
            let arguments = Array(command.prefix(2)) + [fixture.path] + command.dropFirst(2)
            let result = try CLI.run(arguments)
            #expect(result.status == 65, "\(arguments)\n\(result)")
            #expect(result.errorLines == ["strata \(command.prefix(2).joined(separator: " ")): store is corrupt: \(fixture.path): "
                                          + message(checksums: checksums, page: page)], "\(arguments)\n\(result)")
            #expect(result.output.isEmpty, "\(arguments)\n\(result)")
            #expect(try fixture.snapshot() == before, "\(arguments) changed the folder")
        }
    }
}
