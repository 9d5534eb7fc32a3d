import Foundation
import Testing
import Strata
import StrataTestSupport

/// `strata cache verify` and `strata cache purge` against caches results controllers wrote.
@Suite struct CacheVerifyPurgeTests {
    @Test func verifyOfCachesThatMatchTheStoreExitsZero() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byCategory)
        try fixture.makeCache(CLIFixture.byName)
        let result = try CLI.run(["cache", "verify", fixture.path])
        #expect(result.status == 0, "\(result)")
        #expect(result.output.lines == [
            "NAME         STATUS  RESULT",
            "by-category  valid   matches  3 sections, 9 objects",
            "by-name      valid   matches  1 section, 9 objects",
            "",
            "2 caches verified: 2 valid, 0 invalid",
        ])
        let json = try CLI.run(["cache", "verify", fixture.path, "--json"])
        #expect(json.status == 0, "\(json)")
        let verifications = try json.jsonArray()
        #expect(verifications.map { $0["name"] as? String } == ["by-category", "by-name"])
        for verification in verifications {
            #expect(Set(verification.keys) == ["name", "report", "matches", "differences"])
            #expect(verification["matches"] as? Bool == true)
            #expect((verification["differences"] as? [String])?.isEmpty == true)
            let report = try #require(verification["report"] as? [String: Any])
            #expect(report["name"] as? String == verification["name"] as? String)
            #expect(report["status"] as? String == "valid")
            #expect(report["objects"] as? Int == 9)
        }
    }

    /// The IDs of a cache swapped behind its back and the file re-encoded, so that its CRC is
    /// right again: the header still describes the store (`list` says valid), only running the
    /// request again shows the difference.
    @Test func verifyCatchesACacheWhoseIDsWereAlteredBehindItsBack() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byCategory)
        let snapshot = try fixture.makeCache(CLIFixture.byName)
        let url = try fixture.cacheURL("by-name")
        var file = try SectionCacheFile.decode(try Data(contentsOf: url))
        file.keys.swapAt(0, 1)
        let altered = file.encoded()   // a fresh CRC-32 over the altered bytes
        _ = try SectionCacheFile.decode(altered)
        try altered.write(to: url)

        let list = try CLI.run(["cache", "list", fixture.path, "--json"])
        #expect(try list.jsonArray().map { $0["status"] as? String } == ["valid", "valid"], "the header check can't see it")

        let keys = snapshot.objectIDs.map(\.primaryKey)
        let result = try CLI.run(["cache", "verify", fixture.path])
        #expect(result.status == 1, "\(result)")
        #expect(result.output.lines == [
            "NAME         STATUS  RESULT",
            "by-category  valid   matches  3 sections, 9 objects",
            "by-name      valid   DIFFERS  2 differences",
            "    - object 0: key \(keys[1]) in the cache, \(keys[0]) in the store",
            "    - object 1: key \(keys[0]) in the cache, \(keys[1]) in the store",
            "",
            "2 caches verified: 1 valid, 1 invalid",
        ])
        #expect(result.error.isEmpty)

        let json = try CLI.run(["cache", "verify", fixture.path, "by-name", "--json"])
        #expect(json.status == 1)
        let verification = try #require(try json.jsonArray().first)
        #expect(verification["name"] as? String == "by-name")
        #expect(verification["matches"] as? Bool == false)
        #expect(verification["differences"] as? [String] == ["object 0: key \(keys[1]) in the cache, \(keys[0]) in the store",
                                                              "object 1: key \(keys[0]) in the cache, \(keys[1]) in the store"])
        #expect((verification["report"] as? [String: Any])?["status"] as? String == "valid")

        // Only the caches named are verified: the untouched one alone exits 0.
        #expect(try CLI.run(["cache", "verify", fixture.path, "by-category"]).status == 0)
        // --limit caps the differences shown.
        let limited = try CLI.run(["cache", "verify", fixture.path, "by-name", "--limit", "1"])
        #expect(limited.status == 1)
        #expect(limited.output.contains("DIFFERS  more than 1 difference\n    - object 0:"))
        let limitedJSON = try CLI.run(["cache", "verify", fixture.path, "by-name", "--limit", "1", "--json"])
        #expect(try limitedJSON.jsonArray().first?["differences"] as? [String] == ["object 0: key \(keys[1]) in the cache, \(keys[0]) in the store"])
        let exact = try CLI.run(["cache", "verify", fixture.path, "by-name", "--limit", "2"])
        #expect(exact.output.contains("DIFFERS  2 differences\n"))
    }

    @Test func verifyCatchesSectionCountsAlteredBehindTheCachesBack() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byCategory)
        let url = try fixture.cacheURL("by-category")
        var file = try SectionCacheFile.decode(try Data(contentsOf: url))
        #expect(file.sections.map(\.count) == [2, 3, 4])
        file.sections[0].count = 3
        file.sections[1].count = 2
        try file.encoded().write(to: url)
        let result = try CLI.run(["cache", "verify", fixture.path, "--json"])
        #expect(result.status == 1, "\(result)")
        let differences = try #require(try result.jsonArray().first?["differences"] as? [String])
        #expect(differences == ["section 0: \"Bakery\" with 3 in the cache, \"Bakery\" with 2 in the store",
                                "section 1: \"Dairy\" with 2 in the cache, \"Dairy\" with 3 in the store"])
    }

    /// A file whose stored request names a key the store's model lacks (its CRC right): that
    /// cache is invalid, and the others are still verified.
    @Test func verifyOfACacheWhoseRequestCantRunExitsOne() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byName)
        var file = try SectionCacheFile.decode(try Data(contentsOf: try fixture.cacheURL("by-name")))
        file.request.sortKeys[0].key = "weight"
        try file.encoded().write(to: try fixture.cacheURL("by-weight"))
        let result = try CLI.run(["cache", "verify", fixture.path])
        #expect(result.status == 1, "\(result)")
        let lines = result.output.lines
        #expect(lines[1] == "by-name    valid   matches  1 section, 9 objects")
        #expect(lines[2] == "by-weight  valid   DIFFERS  1 difference")
        #expect(lines[3].hasPrefix("    - the cached request can't run against the store: "), "\(lines[3])")
        #expect(lines[3].contains("weight"), "\(lines[3])")
        let json = try CLI.run(["cache", "verify", fixture.path, "by-weight", "--json"])
        #expect(json.status == 1)
        let verification = try #require(try json.jsonArray().first)
        #expect(Set(verification.keys) == ["name", "report", "matches", "differences"])
        #expect(verification["matches"] as? Bool == false)
        #expect((verification["report"] as? [String: Any])?["request"] as? String == "Good by weight")
    }

    @Test func verifyOfStaleAndCorruptCachesExitsOne() throws {
        let fixture = try CLIFixture.withFourCaches()
        let result = try CLI.run(["cache", "verify", fixture.path])
        #expect(result.status == 1, "\(result)")
        let lines = result.output.lines
        #expect(lines.contains("broken       corrupt (checksum-mismatch)  DIFFERS  1 difference"))
        #expect(lines.contains("    - the file is corrupt: checksum-mismatch"))
        #expect(lines.contains("    - the file is stale: entity-changed"))
        #expect(lines.contains("by-name      valid                        matches  1 section, 9 objects"))
        #expect(lines.last == "4 caches verified: 1 valid, 3 invalid")
    }

    @Test func purgeStaleRemovesOnlyCachesThatAreNotValid() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.cacheFolder.path
        let keep = try Data(contentsOf: try fixture.cacheURL("by-name"))
        let before = try DirectorySnapshot(fixture.cacheFolder)

        let dryRun = try CLI.run(["cache", "purge", fixture.path, "--stale", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun)")
        #expect(dryRun.output == """
            would remove broken
            would remove by-category
            would remove categories

            dry run: 3 caches would be removed from \(folder); nothing changed

            """)
        #expect(try DirectorySnapshot(fixture.cacheFolder) == before, "a dry run changes nothing")

        let result = try CLI.run(["cache", "purge", fixture.path, "--stale"])
        #expect(result.status == 0, "\(result)")
        #expect(result.output == "removed broken\nremoved by-category\nremoved categories\n\n3 caches removed from \(folder)\n")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(files == ["by-name.stratacache"])
        #expect(try Data(contentsOf: try fixture.cacheURL("by-name")) == keep, "the valid cache is untouched")
        let list = try CLI.run(["cache", "list", fixture.path, "--json"])
        #expect(try list.jsonArray().map { "\($0["name"]!) \($0["status"]!)" } == ["by-name valid"])

        let again = try CLI.run(["cache", "purge", fixture.path, "--stale"])
        #expect(again.status == 0)
        #expect(again.output == "no caches to remove in \(folder)\n")
    }

    @Test func purgeNamedAndAllWithJSON() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.cacheFolder.path
        let named = try CLI.run(["cache", "purge", fixture.path, "by-name", "categories", "by-name", "--json"])
        #expect(named.status == 0, "\(named)")
        let output = try named.jsonObject()
        #expect(Set(output.keys) == ["dryRun", "directory", "removed"])
        #expect(output["dryRun"] as? Bool == false)
        #expect(output["directory"] as? String == folder)
        #expect(output["removed"] as? [String] == ["by-name", "categories"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["broken.stratacache", "by-category.stratacache"])

        let all = try CLI.run(["cache", "purge", fixture.path, "--all", "--dry-run", "--json"])
        #expect(try all.jsonObject()["dryRun"] as? Bool == true)
        #expect(try all.jsonObject()["removed"] as? [String] == ["broken", "by-category"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 2)
        let removed = try CLI.run(["cache", "purge", fixture.path, "--all"])
        #expect(removed.status == 0)
        #expect(removed.output == "removed broken\nremoved by-category\n\n2 caches removed from \(folder)\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    /// Issue 17: `a.stratacache` a file, `m.stratacache` a folder, `z.stratacache` a file. Every
    /// target is checked before anything is removed: each selection that includes `m` is
    /// refused with one line naming it (exit 66), and the folder is exactly as it was.
    @Test func purgeRefusesATargetThatIsNotARegularFileBeforeRemovingAny() throws {
        let fixture = try CLIFixture()
        try fixture.makeCache(CLIFixture.byName)
        try Data("not a cache\n".utf8).write(to: try fixture.cacheURL("a"))
        try FileManager.default.createDirectory(at: try fixture.cacheURL("m"), withIntermediateDirectories: false)
        try Data("not a cache\n".utf8).write(to: try fixture.cacheURL("z"))
        let list = try CLI.run(["cache", "list", fixture.path, "--json"])
        #expect(try list.jsonArray().map { "\($0["name"]!) \($0["status"]!)" } == ["a corrupt", "by-name valid", "m corrupt", "z corrupt"])
        let before = try fixture.snapshot()
        let path = try fixture.cacheURL("m").path
        for selection in [["--stale"], ["--all"], ["a", "m", "z"], ["--stale", "--dry-run"], ["--all", "--json"]] {
            let result = try CLI.run(["cache", "purge", fixture.path] + selection)
            #expect(result.status == 66, "\(selection)\n\(result)")
            #expect(result.errorLines == ["strata cache purge: cache \"m\" is not a regular file (\(path)); nothing was removed"], "\(selection)\n\(result)")
            #expect(result.output.isEmpty, "\(selection)\n\(result)")
            #expect(try fixture.snapshot() == before, "\(selection) changed the folder")
        }
        // Without the folder in the selection, the files go.
        let named = try CLI.run(["cache", "purge", fixture.path, "a", "z"])
        #expect(named.status == 0, "\(named)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.cacheFolder.path).sorted() == ["by-name.stratacache", "m.stratacache"])
    }

    /// Issue 17: an `unlink` that fails after every target passed its check (here: a sticky
    /// folder, and `m` belongs to root while the command runs as uid 65534). The output says
    /// exactly which caches were removed and which were not, as text and as JSON, with one line on
    /// standard error and exit 77 (EX_NOPERM: the removal was refused for want of permission).
    @Test(.enabled(if: CLI.isRoot && CLI.canDropPrivileges, "needs root (chown) and setpriv with CAP_SETUID"))
    func purgeThatFailsMidwaySaysWhatWasRemovedAndWhatWasNot() throws {
        // A rollback-journal store: uid 65534 may not write the store's folder, and a read-only
        // open of a WAL store with no -shm needs to create one there.
        let fixture = try CLIFixture(journalMode: .delete)
        try fixture.makeCache(CLIFixture.byName)
        let folder = fixture.cacheFolder.path
        #expect(chmod(folder, 0o1777) == 0)
        defer { chmod(folder, 0o755) }
        func junk(_ name: String, owner: uid_t) throws {
            try Data("not a cache\n".utf8).write(to: try fixture.cacheURL(name))
            #expect(chown(try fixture.cacheURL(name).path, owner, owner) == 0)
        }
        try junk("a", owner: 65534)
        try junk("m", owner: 0)
        try junk("z", owner: 65534)
        let reason = "unlink \(folder)/m.stratacache: Operation not permitted (errno 1)"
        let line = "strata cache purge: could not remove cache \"m\": \(reason); removed 1 of 3 (a), not removed: m, z"

        let text = try CLI.run(["cache", "purge", fixture.path, "--stale"], asNobody: true)
        #expect(text.status == 77, "EX_NOPERM: the removal was refused (EPERM)\n\(text)")
        #expect(text.output.lines == ["removed a", "not removed m", "not removed z", "",
                                      "1 of 3 caches removed from \(folder); failed at m: \(reason)"])
        #expect(text.errorLines == [line])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["by-name.stratacache", "m.stratacache", "z.stratacache"])

        try junk("a", owner: 65534)
        let json = try CLI.run(["cache", "purge", fixture.path, "--stale", "--json"], asNobody: true)
        #expect(json.status == 77, "\(json)")
        let output = try json.jsonObject()
        #expect(Set(output.keys) == ["dryRun", "directory", "removed", "notRemoved", "error"])
        #expect(output["dryRun"] as? Bool == false)
        #expect(output["directory"] as? String == folder)
        #expect(output["removed"] as? [String] == ["a"])
        #expect(output["notRemoved"] as? [String] == ["m", "z"])
        #expect(output["error"] as? String == reason)
        #expect(json.errorLines == [line])
    }

    /// An app with the store open and a controller on the cache: the purge removes the file, the
    /// app's next fetch rebuilds it, and nothing the app shows changes.
    @Test func purgeIsSafeWhileAnAppHasTheStoreOpen() throws {
        let fixture = try CLIFixture()
        let expected = try fixture.makeCache(CLIFixture.byCategory)
        let coordinator = try StoreCoordinator(model: TestModels.goods(), url: fixture.url, options: fixture.options)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "app")
        func fetch() throws -> (served: Bool, rejection: SectionCacheRejection?, snapshot: FetchedSnapshot) {
            let spec = CLIFixture.byCategory
            let controller = FetchedResultsController(fetchRequest: spec.request, managedObjectContext: context,
                                                      sectionNameKeyPath: spec.section, cacheName: spec.name)
            let result = try context.performAndWait {
                try controller.performFetch()
                return (controller.cacheStatus == .served, controller.cacheStatus.rejection, controller.snapshot)
            }
            coordinator.waitForCacheWrites()
            return result
        }
        #expect(try fetch().served)
        let result = try CLI.run(["cache", "purge", fixture.path, "by-category"])
        #expect(result.status == 0, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: try fixture.cacheURL("by-category").path))
        let rebuilt = try fetch()
        #expect(!rebuilt.served && rebuilt.rejection == .missing && rebuilt.snapshot == expected)
        #expect(try fetch().served, "the cache was written again")
        #expect(try CLI.run(["cache", "verify", fixture.path]).status == 0)
    }
}
