import Foundation
import Testing
import Strata
import StrataTestSupport

/// `strata cache list` and `strata cache inspect` against caches results controllers wrote.
@Suite struct CacheListInspectTests {
    @Test func listJSONReportsEveryCacheFieldByField() throws {
        let fixture = try CLIFixture.withFourCaches()
        let result = try CLI.run(["cache", "list", fixture.path, "--json"])
        #expect(result.status == 0, "\(result)")
        let reports = try result.jsonArray()
        #expect(reports.map { $0["name"] as? String } == ["broken", "by-category", "by-name", "categories"])
        for report in reports {
            let name = try #require(report["name"] as? String)
            #expect(report["path"] as? String == (try fixture.cacheURL(name)).path)
            #expect(report["bytes"] as? Int64 == (try fixture.fileSize(try fixture.cacheURL(name))))
            #expect(report["storeGeneration"] as? Int == 2)
        }
        let broken = reports[0], byCategory = reports[1], byName = reports[2], categories = reports[3]
        #expect(Set(broken.keys) == ["name", "path", "bytes", "status", "reason", "storeGeneration"])
        #expect(broken["status"] as? String == "corrupt")
        #expect(broken["reason"] as? String == "checksum-mismatch")

        #expect(byCategory["status"] as? String == "stale")
        #expect(byCategory["reason"] as? String == "entity-changed", "it reads Category, which changed")
        #expect(byCategory["entity"] as? String == "Good")
        #expect(byCategory["request"] as? String == "Good by category.name, name sectioned by category.name")
        #expect(byCategory["sections"] as? Int == 3)
        #expect(byCategory["objects"] as? Int == 9)
        #expect(byCategory["generation"] as? Int == 1)

        #expect(Set(byName.keys) == ["name", "path", "bytes", "status", "entity", "request", "sections", "objects",
                                     "generation", "storeGeneration"])
        #expect(byName["status"] as? String == "valid", "Good did not change")
        #expect(byName["reason"] == nil)
        #expect(byName["request"] as? String == "Good by name")
        #expect(byName["sections"] as? Int == 1)
        #expect(byName["objects"] as? Int == 9)

        #expect(categories["status"] as? String == "stale")
        #expect(categories["reason"] as? String == "entity-changed")
        #expect(categories["entity"] as? String == "Category")
        #expect(categories["objects"] as? Int == 3)
    }

    @Test func listTextIsAlignedWithSizesAndStatuses() throws {
        let fixture = try CLIFixture.withFourCaches()
        let result = try CLI.run(["cache", "list", fixture.path])
        #expect(result.status == 0, "\(result)")
        let lines = result.output.lines
        let header = try #require(lines.first)
        #expect(header.hasPrefix("NAME         ENTITY    SECTIONS  OBJECTS"), "\(header)")
        for title in ["SIZE", "CACHE GEN", "STORE GEN", "STATUS", "REQUEST"] { #expect(header.contains(title)) }
        let rows = Array(lines[1...4])
        // Left-aligned columns start where their title starts; right-aligned ones end where it ends.
        func start(_ title: String) throws -> Int { try #require(header.range(of: title)).lowerBound.utf16Offset(in: header) }
        func end(_ title: String) throws -> Int { try #require(header.range(of: title)).upperBound.utf16Offset(in: header) }
        func cell(_ row: String, from: Int, to: Int? = nil) -> String {
            let units = Array(row.utf16)
            let slice = units[min(from, units.count)..<min(to ?? units.count, units.count)]
            return String(decoding: slice, as: UTF16.self).trimmingCharacters(in: .whitespaces)
        }
        let status = try start("STATUS"), request = try start("REQUEST"), sizeEnd = try end("SIZE"), objectsEnd = try end("OBJECTS")
        let table = rows.map { row in
            (name: cell(row, from: 0, to: 11), status: cell(row, from: status, to: request), request: cell(row, from: request),
             size: cell(row, from: objectsEnd, to: sizeEnd))
        }
        #expect(table.map(\.name) == ["broken", "by-category", "by-name", "categories"])
        #expect(table.map(\.status) == ["corrupt (checksum-mismatch)", "stale (entity-changed)", "valid", "stale (entity-changed)"])
        #expect(table.map(\.request) == ["-", "Good by category.name, name sectioned by category.name", "Good by name", "Category by name"])
        for row in rows { #expect(!row.hasSuffix(" "), "no trailing spaces") }
        let bytes = try fixture.fileSize(try fixture.cacheURL("by-category"))
        #expect(table[1].size == "\(bytes) B", "sizes under 1 KB in bytes")
        #expect(result.output.hasSuffix("\n4 caches in \(fixture.cacheFolder.path): 1 valid, 2 stale, 1 corrupt\n"))
    }

    @Test func listOfAStoreWithoutCachesAndWithACacheDirectory() throws {
        let folder = TemporaryDirectory("strata-cli-caches")
        let fixture = try CLIFixture(cacheDirectory: folder.url)
        try fixture.makeCache(CLIFixture.byName)
        let beside = try CLI.run(["cache", "list", fixture.path])
        #expect(beside.status == 0)
        #expect(beside.output == "no caches in \(fixture.path).caches\n")
        let empty = try CLI.run(["cache", "list", fixture.path, "--json"])
        #expect(try empty.jsonArray().isEmpty)
        let there = try CLI.run(["cache", "list", fixture.path, "--cache-dir", folder.url.path, "--json"])
        #expect(there.status == 0, "\(there)")
        let reports = try there.jsonArray()
        #expect(reports.map { $0["name"] as? String } == ["by-name"])
        #expect(reports.first?["status"] as? String == "valid")
        #expect(reports.first?["path"] as? String == folder.url.appendingPathComponent("by-name.stratacache").path)
    }

    @Test func inspectJSONHasEveryHeaderFieldTheRequestSectionsAndFirstIDs() throws {
        let fixture = try CLIFixture()
        let snapshot = try fixture.makeCache(CLIFixture.byCategory)
        let metadata = try fixture.metadata()
        let bytes = try Data(contentsOf: try fixture.cacheURL("by-category"))
        let result = try CLI.run(["cache", "inspect", fixture.path, "by-category", "--json", "--limit", "4"])
        #expect(result.status == 0, "\(result)")
        let inspection = try result.jsonObject()
        #expect(Set(inspection.keys) == ["name", "path", "bytes", "status", "storeGeneration", "header", "request", "summary",
                                         "sections", "entity", "ids", "limit"])
        #expect(inspection["name"] as? String == "by-category")
        #expect(inspection["path"] as? String == (try fixture.cacheURL("by-category")).path)
        #expect(inspection["bytes"] as? Int == bytes.count)
        #expect(inspection["status"] as? String == "valid")
        #expect(inspection["storeGeneration"] as? Int == 1)
        #expect(inspection["entity"] as? String == "Good")
        #expect(inspection["summary"] as? String == "Good by category.name, name sectioned by category.name")
        #expect(inspection["limit"] as? Int == 4)

        let header = try #require(inspection["header"] as? [String: Any])
        let hex = { (data: Data) in data.map { String(format: "%02x", $0) }.joined() }
        #expect(header["storeUUID"] as? String == metadata.storeUUID.uuidString)
        #expect(header["generation"] as? Int == 1)
        #expect(header["nonce"] as? String == hex(metadata.nonce))
        #expect(header["modelHash"] as? String == metadata.modelHash)
        #expect(header["sectionCount"] as? Int == 3)
        #expect(header["objectCount"] as? Int == 9)
        let entities = try #require(header["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Category", "Good"])
        #expect(entities.map { $0["generation"] as? Int } == [1, 1])
        #expect(entities.map { $0["nonce"] as? String } == [hex(metadata.entityNonces["Category"]!), hex(metadata.entityNonces["Good"]!)])
        let layout = try #require(header["layout"] as? [String: Any])
        let headerLength = Int(bytes[12]) | Int(bytes[13]) << 8 | Int(bytes[14]) << 16 | Int(bytes[15]) << 24
        #expect(layout["magic"] as? String == "STRATASC")
        #expect(layout["formatVersion"] as? Int == 2)
        #expect(layout["changeRecordBytes"] as? Int == 0)
        #expect(layout["reserved"] as? Int == 0)
        #expect(layout["headerLength"] as? Int == headerLength)
        #expect(layout["compressedLength"] as? Int == bytes.count - 16 - headerLength - 4)
        #expect((layout["bodyLength"] as? Int ?? 0) > 0)
        #expect(layout["checksum"] as? String == String(format: "%08x", crc32(bytes.dropLast(4))))

        let request = try #require(inspection["request"] as? [String: Any])
        #expect(request["entity"] as? String == "Good")
        #expect(request["sectionKeyPath"] as? String == "category.name")
        #expect(request["fetchOffset"] as? Int == 0)
        #expect(request["predicate"] == nil && request["fetchLimit"] == nil)
        let sortKeys = try #require(request["sortKeys"] as? [[String: Any]])
        #expect(sortKeys.map { $0["key"] as? String } == ["category.name", "name"])
        #expect(sortKeys.map { $0["ascending"] as? Bool } == [true, true])
        #expect(sortKeys.map { $0["comparison"] as? String } == ["binary", "binary"])

        let sections = try #require(inspection["sections"] as? [[String: Any]])
        #expect(sections.map { $0["index"] as? Int } == [0, 1, 2])
        #expect(sections.map { $0["name"] as? String } == ["Bakery", "Dairy", "Fruit"])
        #expect(sections.map { $0["indexTitle"] as? String } == ["B", "D", "F"])
        #expect(sections.map { $0["count"] as? Int } == [2, 3, 4])
        #expect(sections.map { $0["value"] as? String } == ["'Bakery'", "'Dairy'", "'Fruit'"])
        #expect(snapshot.sections.map(\.name) == ["Bakery", "Dairy", "Fruit"])
        // The first 4 IDs, in the controller's order.
        #expect(inspection["ids"] as? [Int64] == snapshot.objectIDs.prefix(4).map(\.primaryKey))
    }

    @Test func inspectTextShowsHeaderRequestSectionBarsAndIDs() throws {
        let fixture = try CLIFixture()
        let snapshot = try fixture.makeCache(CLIFixture.byCategory)
        let result = try CLI.run(["cache", "inspect", fixture.path, "by-category"])
        #expect(result.status == 0, "\(result)")
        let lines = result.output.lines
        #expect(lines.contains("cache       by-category"))
        #expect(lines.contains("status      valid"))
        #expect(lines.contains("format      STRATASC version 2, reserved 0"))
        #expect(lines.contains("generation  1 (the store is at 1)"))
        #expect(lines.contains("sections    3"))
        #expect(lines.contains("objects     9"))
        #expect(lines.contains("request     Good by category.name, name sectioned by category.name"))
        #expect(lines.contains { $0.hasPrefix("            {\"entity\":\"Good\"") })
        #expect(lines.contains { $0.hasPrefix("entities    Category generation 1 nonce ") })
        #expect(lines.contains { $0.hasPrefix("            Good generation 1 nonce ") })
        #expect(lines.contains("#  SECTION  INDEX  COUNT"))
        // The largest section gets the full 40-cell bar; the others in proportion (eighths).
        #expect(lines.contains("0  Bakery   B          2  ████████████████████"))
        #expect(lines.contains("1  Dairy    D          3  ██████████████████████████████"))
        #expect(lines.contains("2  Fruit    F          4  ████████████████████████████████████████"))
        #expect(lines.contains("all 9 IDs:"))
        #expect(lines.contains("  " + snapshot.objectIDs.map(\.description).joined(separator: "  ")))

        let limited = try CLI.run(["cache", "inspect", fixture.path, "by-category", "--limit", "2"])
        #expect(limited.output.hasSuffix("first 2 of 9 IDs:\n  \(snapshot.objectIDs[0])  \(snapshot.objectIDs[1])\n"))
        let none = try CLI.run(["cache", "inspect", fixture.path, "by-category", "--limit", "0"])
        #expect(!none.output.contains("IDs:"))
    }

    @Test func inspectOfACorruptCacheShowsItsReasonOnly() throws {
        let fixture = try CLIFixture.withFourCaches()
        let result = try CLI.run(["cache", "inspect", fixture.path, "broken", "--json"])
        #expect(result.status == 0, "\(result)")
        let inspection = try result.jsonObject()
        #expect(Set(inspection.keys) == ["name", "path", "bytes", "status", "reason", "storeGeneration"])
        #expect(inspection["status"] as? String == "corrupt")
        #expect(inspection["reason"] as? String == "checksum-mismatch")
        let text = try CLI.run(["cache", "inspect", fixture.path, "broken"])
        #expect(text.output.lines == ["cache   broken", "file    \(try fixture.cacheURL("broken").path) (\(inspection["bytes"]!) B)",
                                      "status  corrupt (checksum-mismatch)"])
        #expect(!text.output.contains("SECTION"))
        // A stale cache still shows its header, with the store's generation beside it.
        let stale = try CLI.run(["cache", "inspect", fixture.path, "categories"])
        #expect(stale.output.lines.contains("status      stale (entity-changed)"))
        #expect(stale.output.lines.contains("generation  1 (the store is at 2)"))
    }
}
