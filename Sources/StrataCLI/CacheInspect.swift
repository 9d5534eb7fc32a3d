import ArgumentParser
import Foundation
import Strata

/// `strata cache inspect STORE NAME [--json] [--limit N]`: ``StoreInspector/cacheReport(named:directory:)``
/// and ``StoreInspector/cacheFile(named:directory:)``.
struct CacheInspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show one cache: every header field, its request, its sections and its first IDs.",
        discussion: """
            Shows the cache's status (as `list` does), every field of its header (format, store \
            UUID, generation and nonce it was written at, model hash, each entity's generation and \
            nonce, section and object counts, header and body lengths, CRC-32), the canonical \
            request it stores, the section table (name, index title, count, with a bar of each \
            section's size) and the first --limit object IDs in order. A corrupt cache shows its \
            status and reason only.

            Example:
              strata cache inspect /tmp/goods.sqlite goods-by-category
              strata cache inspect /tmp/goods.sqlite goods-by-category --json --limit 100
            """
    )

    @OptionGroup var location: CacheLocation
    @Argument(help: ArgumentHelp("The cache's name (as the results controller's cacheName).", valueName: "name"))
    var name: String
    @Flag(help: "Print JSON (documented in the \"Command-line tool\" article) instead of text.")
    var json = false
    @Option(help: "How many object IDs to show (0: none).")
    var limit = 20

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must be 0 or more, not \(limit)") }
    }

    func run() throws {
        let inspector = try location.inspector(requiring: [name])
        let report = try inspector.cacheReport(named: name)
        var inspection = CacheInspection(report: report)
        if case .success(let file) = try inspector.cacheFile(named: name) {
            let bytes = try? inspector.caches().read(named: name)
            inspection.add(file, layout: bytes.flatMap(CacheInspection.Layout.init),
                           changeRecordCount: bytes.flatMap { try? SectionCacheFile.header(of: $0) }?.changeRecords, limit: limit)
        }
        if json { return try printJSON(inspection) }
        inspection.print()
    }
}

/// What `strata cache inspect --json` prints. Field names are stable; the "Command-line tool"
/// article documents each. Optional fields are left out when absent (a corrupt file has no
/// header, request, sections or IDs).
struct CacheInspection: Codable, Equatable {
    /// The fixed-layout fields around the header (see the "Section Cache Format" article).
    struct Layout: Codable, Equatable {
        var magic: String
        var formatVersion: Int
        var reserved: Int
        var headerLength: Int
        var bodyLength: Int
        var compressedLength: Int
        /// The body's CRC-32.
        var checksum: String
        /// Bytes of change records after the body (format version 2).
        var changeRecordBytes: Int?
    }
    struct Entity: Codable, Equatable {
        var name: String
        var generation: Int64
        var nonce: String
    }
    struct Header: Codable, Equatable {
        var storeUUID: String
        var generation: Int64
        var nonce: String
        var modelHash: String
        var entities: [Entity]
        var sectionCount: Int
        var objectCount: Int
        var layout: Layout?
    }
    struct Section: Codable, Equatable {
        var index: Int
        var name: String
        var indexTitle: String?
        var count: Int
        /// The section key's stored value as an SQL literal (`'Fruit'`, `42`, `NULL`).
        var value: String
    }

    var name: String
    var path: String
    var bytes: Int64
    var status: CacheReport.Status
    var reason: String?
    var storeGeneration: Int64
    var header: Header?
    var request: CanonicalRequest?
    var summary: String?
    var sections: [Section]?
    var entity: String?
    /// The first `limit` primary keys, in the controller's order (as the body holds them).
    var ids: [Int64]?
    /// Change records after the body, and the IDs they name: a reader places those again from the store.
    var changeRecords: Int?
    var pendingIDs: [Int64]?
    var limit: Int?

    init(report: CacheReport) {
        name = report.name
        path = report.path
        bytes = report.bytes
        status = report.status
        reason = report.reason
        storeGeneration = report.storeGeneration
    }

    mutating func add(_ file: SectionCacheFile, layout: Layout?, changeRecordCount: Int?, limit: Int) {
        header = Header(storeUUID: file.stamp.storeUUID.uuidString, generation: file.stamp.generation,
                        nonce: Format.hex(file.stamp.nonce), modelHash: file.stamp.modelHash,
                        entities: file.stamp.entities.keys.sorted().map {
                            Entity(name: $0, generation: file.stamp.entities[$0]!.generation, nonce: Format.hex(file.stamp.entities[$0]!.nonce))
                        },
                        sectionCount: file.sections.count, objectCount: file.keys.count, layout: layout)
        request = file.request
        summary = file.request.summary
        entity = file.request.entity
        sections = file.sections.enumerated().map {
            Section(index: $0.offset, name: $0.element.name, indexTitle: $0.element.indexTitle, count: $0.element.count,
                    value: $0.element.value.description)
        }
        ids = Array(file.keys.prefix(limit))
        self.limit = limit
        changeRecords = (changeRecordCount ?? 0) > 0 ? changeRecordCount : nil
        pendingIDs = file.pendingKeys.isEmpty ? nil : Array(file.pendingKeys.prefix(max(limit, 1)))
    }

    func print() {
        var fields = Table([("", .left), ("", .left)])
        fields.append(["cache", name])
        fields.append(["file", "\(path) (\(Format.bytes(bytes)))"])
        fields.append(["status", status == .valid ? status.rawValue : "\(status.rawValue) (\(reason ?? "unknown"))"])
        if let header {
            if let layout = header.layout {
                fields.append(["format", "\(layout.magic) version \(layout.formatVersion), reserved \(layout.reserved)"])
                fields.append(["lengths", "header \(layout.headerLength) B, body \(layout.bodyLength) B inflated, "
                               + "\(layout.compressedLength) B compressed"])
                fields.append(["CRC-32", layout.checksum])
            }
            fields.append(["store UUID", header.storeUUID])
            fields.append(["generation", "\(header.generation) (the store is at \(storeGeneration))"])
            fields.append(["nonce", header.nonce])
            fields.append(["model hash", header.modelHash])
            for (index, entity) in header.entities.enumerated() {
                fields.append([index == 0 ? "entities" : "", "\(entity.name) generation \(entity.generation) nonce \(entity.nonce)"])
            }
            fields.append(["sections", "\(header.sectionCount)"])
            fields.append(["objects", "\(header.objectCount)"])
            if let bytes = header.layout?.changeRecordBytes, bytes > 0 {
                fields.append(["change records", "\(changeRecords ?? 0) (\(Format.bytes(Int64(bytes)))) after the body; "
                               + "\(pendingIDs?.count ?? 0) ID(s) to place again from the store"
                               + (pendingIDs.map { ": " + $0.prefix(10).map { "\(entity ?? "")/\($0)" }.joined(separator: ", ") } ?? "")])
            }
        }
        if let request, let summary {
            fields.append(["request", summary])
            fields.append(["", request.json])
        }
        fields.print(header: false)
        guard let sections, let ids else { return }
        Swift.print("")
        let largest = sections.map(\.count).max() ?? 0
        var table = Table([("#", .right), ("SECTION", .left), ("INDEX", .left), ("COUNT", .right), ("", .left)])
        for section in sections {
            table.append(["\(section.index)", section.name.isEmpty ? "\"\"" : section.name, section.indexTitle ?? "-",
                          "\(section.count)", Format.bar(section.count, of: largest)])
        }
        table.print()
        let total = header?.objectCount ?? ids.count
        guard !ids.isEmpty else { return }
        Swift.print("\n" + (ids.count < total ? "first \(ids.count) of \(total) IDs:" : "all \(total) IDs:"))
        for line in Format.wrapped(ids.map { "\(entity ?? "")/\($0)" }) { Swift.print(line) }
    }
}

extension CacheInspection.Layout {
    /// The layout fields of a file the library decoded (so the offsets are known to be sound):
    /// magic, version and reserved word, the header length, the body lengths that close the
    /// header, and the trailing CRC-32. `nil` if the bytes are too short to hold them.
    init?(_ data: Data) {
        let bytes = [UInt8](data)
        func integer(at offset: Int, _ size: Int) -> Int? {
            guard offset >= 0, offset + size <= bytes.count else { return nil }
            return bytes[offset..<(offset + size)].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        guard bytes.count >= 20, let version = integer(at: 8, 2), let reserved = integer(at: 10, 2),
              let headerLength = integer(at: 12, 4), let body = integer(at: 16 + headerLength - 8, 4),
              let compressed = integer(at: 16 + headerLength - 4, 4), let crc = integer(at: 16 + headerLength + compressed, 4) else { return nil }
        self.init(magic: String(decoding: bytes[0..<8], as: UTF8.self), formatVersion: version, reserved: reserved,
                  headerLength: headerLength, bodyLength: body, compressedLength: compressed,
                  checksum: String(format: "%08x", crc),
                  changeRecordBytes: version >= 2 ? bytes.count - (16 + headerLength + compressed + 4) : nil)
    }
}
