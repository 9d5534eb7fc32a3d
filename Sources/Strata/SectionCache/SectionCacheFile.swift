public import Foundation
internal import CZlib
public import StrataSQLite

/// Why a section cache file was not served. Logged (through swift-log, label `strata.cache`),
/// shown by `strata cache list`, and never thrown to a results controller's caller.
public enum SectionCacheRejection: String, Error, Sendable, CaseIterable, CustomStringConvertible {
    // The file is not there or not a file.
    case missing = "missing"
    case notAFile = "not-a-file"
    case unreadable = "unreadable"
    // Corrupt: the bytes are not a cache this Strata wrote.
    case truncated = "truncated"
    case badMagic = "bad-magic"
    case unsupportedVersion = "unsupported-version"
    case checksumMismatch = "checksum-mismatch"
    case badHeader = "bad-header"
    case inflateFailed = "inflate-failed"
    case badBody = "bad-body"
    case countMismatch = "count-mismatch"
    case duplicateIDs = "duplicate-ids"
    // Stale: a sound file that no longer describes the store.
    case otherStore = "other-store"
    case otherModel = "other-model"
    case otherRequest = "other-request"
    case entityChanged = "entity-changed"

    /// The file's bytes are broken (as opposed to stale or missing).
    public var isCorrupt: Bool {
        switch self {
        case .missing, .otherStore, .otherModel, .otherRequest, .entityChanged: false
        default: true
        }
    }

    public var description: String { rawValue }
}

/// A fetch request in the form a cache file stores and compares: everything that decides which
/// rows a results controller holds and in which order, and nothing else (not the batch size).
public struct CanonicalRequest: Codable, Sendable, Equatable {
    public struct Sort: Codable, Sendable, Equatable {
        public var key: String
        public var ascending: Bool
        public var comparison: String
    }

    public var entity: String
    /// The predicate's canonical format string (``Condition/description``), which parses back
    /// to the same condition.
    public var predicate: String?
    public var sortKeys: [Sort]
    public var sectionKeyPath: String?
    public var fetchLimit: Int?
    public var fetchOffset: Int

    public init(_ request: FetchRequest<ManagedObject>, sectionKeyPath: String?) {
        entity = request.entityName
        predicate = request.condition?.description
        sortKeys = request.sortKeys.map { Sort(key: $0.key, ascending: $0.ascending, comparison: $0.comparison.rawValue) }
        self.sectionKeyPath = sectionKeyPath
        fetchLimit = request.fetchLimit
        fetchOffset = request.fetchOffset
    }

    /// The fetch request again (predicate parsed), as `strata cache verify` runs it.
    public func fetchRequest() throws -> FetchRequest<ManagedObject> {
        FetchRequest(entityName: entity, condition: try predicate.map { try Condition($0) },
                     sortKeys: sortKeys.map { SortKey($0.key, ascending: $0.ascending, comparison: SortKey.Comparison(rawValue: $0.comparison) ?? .binary) },
                     fetchLimit: fetchLimit, fetchOffset: fetchOffset)
    }

    /// Canonical JSON: sorted keys, no whitespace.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// One line for listings: `Good where … by category.name, name sectioned by category.name`.
    public var summary: String {
        var text = entity
        if let predicate { text += " where \(predicate)" }
        if !sortKeys.isEmpty {
            text += " by " + sortKeys.map { $0.key + ($0.ascending ? "" : " desc") + ($0.comparison == "binary" ? "" : " [\($0.comparison)]") }
                .joined(separator: ", ")
        }
        if let sectionKeyPath { text += " sectioned by \(sectionKeyPath)" }
        if let fetchLimit { text += " limit \(fetchLimit)" }
        if fetchOffset > 0 { text += " offset \(fetchOffset)" }
        return text
    }
}

/// The committed store state a cache file is stamped with.
public struct SectionCacheStamp: Sendable, Equatable {
    public var storeUUID: UUID
    public var generation: Int64
    public var nonce: Data
    public var modelHash: String
    /// For each entity the request reads: the generation and nonce of the commit that last wrote it.
    public var entities: [String: EntityStamp]

    public struct EntityStamp: Sendable, Equatable {
        public var generation: Int64
        public var nonce: Data
    }

    /// The stamp of `metadata` for a request reading `entities`.
    public init(_ metadata: StoreMetadata, entities: Set<String>) {
        storeUUID = metadata.storeUUID
        generation = metadata.generation
        nonce = metadata.nonce
        modelHash = metadata.modelHash
        self.entities = Dictionary(uniqueKeysWithValues: entities.map {
            ($0, EntityStamp(generation: metadata.entityGenerations[$0] ?? -1, nonce: metadata.entityNonces[$0] ?? Data()))
        })
    }

    init(storeUUID: UUID, generation: Int64, nonce: Data, modelHash: String, entities: [String: EntityStamp]) {
        self.storeUUID = storeUUID
        self.generation = generation
        self.nonce = nonce
        self.modelHash = modelHash
        self.entities = entities
    }

    /// Why a cache stamped `self` does not describe a store now stamped `current`, or `nil`.
    /// The entities must match commit for commit (generation and nonce); writes to entities the
    /// request does not read leave the cache valid.
    public func staleness(against current: SectionCacheStamp) -> SectionCacheRejection? {
        if storeUUID != current.storeUUID { return .otherStore }
        if modelHash != current.modelHash { return .otherModel }
        if Set(entities.keys) != Set(current.entities.keys) { return .otherRequest }
        for (name, stamp) in entities where current.entities[name] != stamp { return .entityChanged }
        return nil
    }
}

/// One section as a cache file holds it.
public struct SectionCacheSection: Sendable, Equatable {
    /// The section key's stored value (`.null` for an unsectioned controller).
    public var value: SQLiteValue
    public var name: String
    public var indexTitle: String?
    public var count: Int
}

/// A section cache file's contents: its stamp, its request, the section table, the ordered
/// primary keys and their rows' version stamps; and the keys changed since (appended records).
/// The format is described in the "Section Cache Format" article.
public struct SectionCacheFile: Sendable, Equatable {
    public static let magic = Array("STRATASC".utf8)
    /// Version 2: the body holds the rows' version stamps, and change records may follow the
    /// body. Version 1 files (no stamps, no records) are still read.
    public static let formatVersion: UInt16 = 2
    static let recordMagic = Array("SCDR".utf8)

    /// The committed store state the file describes: the last change record's, else the body's.
    public var stamp: SectionCacheStamp
    public var request: CanonicalRequest
    public var sections: [SectionCacheSection]
    /// Primary keys, section after section, in order (``pendingKeys`` still at their old places).
    public var keys: [Int64]
    /// Each key's version stamp (a hash of its row's `_version` when the body was written), which
    /// a results controller tracking changes needs; `nil` in a version 1 file. Builds the array
    /// from the runs the body holds on every call (40 MB at 10,000,000 rows): call it once, never
    /// per key (``stampRuns`` is what the file holds).
    public func expandedStamps() -> [UInt32]? {
        stampRuns.map { runs in
            var all: [UInt32] = []
            all.reserveCapacity(runs.reduce(0) { $0 + $1.length })
            for run in runs { all.append(contentsOf: repeatElement(run.stamp, count: run.length)) }
            return all
        }
    }
    /// The stamps as the body holds them: runs of one stamp (a store whose rows were never edited
    /// has one run), which a controller installs without expanding them.
    var stampRuns: [StampRun]?
    /// Keys that commits changed after the body was written (from the appended change records):
    /// a reader takes them out and puts back those the request still selects, at the places the
    /// store gives them now (``stamp`` is the state it must read them from).
    public var pendingKeys: [Int64]
    /// The body's own stamp, when change records follow it (else ``stamp``).
    var bodyStamp: SectionCacheStamp

    public init(stamp: SectionCacheStamp, request: CanonicalRequest, sections: [SectionCacheSection], keys: [Int64],
                stamps: [UInt32]? = nil) {
        self.stamp = stamp
        self.request = request
        self.sections = sections
        self.keys = keys
        stampRuns = stamps.map(StampRun.runs(of:))
        pendingKeys = []
        bodyStamp = stamp
    }

    // MARK: Encoding

    /// The file's bytes: header, zlib-compressed body, CRC32 of both; then, when keys are
    /// pending, one change record bringing the body's stamp up to ``stamp``.
    public func encoded() -> Data {
        var body = ByteWriter()
        for section in sections {
            body.value(section.value)
            body.string32(section.name)
            if let title = section.indexTitle {
                body.u8(1)
                body.string32(title)
            } else {
                body.u8(0)
            }
            body.varint(UInt64(section.count))
        }
        body.keys(keys)
        if let runs = stampRuns {
            body.u8(1)
            body.varint(UInt64(runs.count))
            for run in runs {
                body.varint(UInt64(run.length))
                body.u32(run.stamp)
            }
        } else {
            body.u8(0)
        }
        let compressed = Zlib.deflate(body.bytes)

        // With keys pending, the body keeps its own stamp and a change record carries the file's.
        let headerStamp = pendingKeys.isEmpty ? stamp : bodyStamp
        var header = ByteWriter()
        header.stamp(headerStamp, withStoreFields: true)
        header.string32(request.json)
        header.entityStamps(headerStamp)
        header.u32(UInt32(sections.count))
        header.u64(UInt64(keys.count))
        header.u32(UInt32(body.bytes.count))
        header.u32(UInt32(compressed.count))

        var file = ByteWriter()
        file.bytes.append(contentsOf: SectionCacheFile.magic)
        file.u16(SectionCacheFile.formatVersion)
        file.u16(0)
        file.u32(UInt32(header.bytes.count))
        file.bytes.append(contentsOf: header.bytes)
        file.bytes.append(contentsOf: compressed)
        file.u32(Zlib.crc32(file.bytes))
        if !pendingKeys.isEmpty {
            file.bytes.append(contentsOf: SectionCacheFile.changeRecord(stamp: stamp, keys: pendingKeys))
        }
        return Data(file.bytes)
    }

    /// A change record: the stamp of a commit (or of several) and the keys of the fetched entity
    /// it wrote. Appended after a file's last record, it brings the file up to `stamp` without
    /// re-encoding the body: `SCDR`, the payload's length, the payload, a CRC32 of all of it.
    static func changeRecord(stamp: SectionCacheStamp, keys: [Int64]) -> [UInt8] {
        var payload = ByteWriter()
        payload.stamp(stamp, withStoreFields: false)
        payload.entityStamps(stamp)
        let sorted = Array(Set(keys)).sorted()
        payload.varint(UInt64(sorted.count))
        payload.keys(sorted)
        var record = ByteWriter()
        record.bytes.append(contentsOf: recordMagic)
        record.u32(UInt32(payload.bytes.count))
        record.bytes.append(contentsOf: payload.bytes)
        record.u32(Zlib.crc32(record.bytes))
        return record.bytes
    }

    // MARK: Decoding

    /// Whether no key appears twice: a bitmap over the keys' range when it is small enough
    /// (a million dense keys: 125 KB, no hashing), a set otherwise.
    static func areUnique(_ keys: [Int64]) -> Bool {
        guard let low = keys.min(), let high = keys.max() else { return true }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, span < Int64(max(keys.count, 1)) * 64 + 65_536 else { return Set(keys).count == keys.count }
        var bits = [UInt64](repeating: 0, count: Int(span / 64) + 1)
        for key in keys {
            let offset = Int(key - low)
            let mask: UInt64 = 1 << UInt64(offset & 63)
            if bits[offset >> 6] & mask != 0 { return false }
            bits[offset >> 6] |= mask
        }
        return true
    }

    /// The header alone, checked (magic, version, CRC of the body, field structure), with the
    /// change records after the body: what validation against a store needs before inflating
    /// anything.
    public struct Header: Sendable, Equatable {
        /// The file's stamp: its last sound change record's, else the body's.
        public var stamp: SectionCacheStamp
        public var request: CanonicalRequest
        public var sectionCount: Int
        public var objectCount: Int
        /// The keys the change records name (sorted, each once).
        public var pendingKeys: [Int64]
        /// How many sound change records follow the body.
        public var changeRecords: Int
        var formatVersion: UInt16
        var bodyStamp: SectionCacheStamp
        var bodyLength: Int
        var compressedRange: Range<Int>
        /// Where the sound part of the file ends: a record torn by a crash (or damaged) starts
        /// here, and everything from it on is ignored (the file then reads as of an older commit:
        /// stale, never wrong).
        var soundLength: Int
    }

    /// Reads and checks the header, the body's CRC and the change records.
    public static func header(of data: Data) throws(SectionCacheRejection) -> Header {
        let size = data.count
        let prefix = [UInt8](data.prefix(16))
        guard size >= 20 else { throw size >= 8 && Array(prefix[0..<8]) != magic ? .badMagic : .truncated }
        guard Array(prefix[0..<8]) == magic else { throw .badMagic }
        var lead = ByteReader(bytes: prefix, position: 8)
        guard let version = lead.u16(), version == 1 || version == formatVersion else { throw .unsupportedVersion }
        guard lead.u16() == 0, let headerLength = lead.u32().map(Int.init) else { throw .badHeader }
        guard 16 + headerLength + 4 <= size else { throw .truncated }
        // Only the header is copied out of the file; the body is inflated from it in place.
        let bytes = [UInt8](data.prefix(16 + headerLength))
        var reader = ByteReader(bytes: bytes, position: 16)
        // The body's end, from the header's last field (checked again below with the rest).
        let declared = bytes.count >= 20 ? Int(bytes[(bytes.count - 4)...].reversed().reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }) : 0
        let bodyEnd = 16 + headerLength + declared + 4
        if version == 1 || bodyEnd > size {
            // Version 1: nothing follows the body. A body longer than the file: the CRC decides
            // between a file cut short and a damaged length.
            var trailer = ByteReader(bytes: [UInt8](data.suffix(4)), position: 0)
            guard let stored = trailer.u32(), stored == Zlib.crc32(data.prefix(size - 4)) else { throw .checksumMismatch }
        } else {
            var trailer = ByteReader(bytes: [UInt8](data[(data.startIndex + bodyEnd - 4)..<(data.startIndex + bodyEnd)]), position: 0)
            guard let stored = trailer.u32(), stored == Zlib.crc32(data.prefix(bodyEnd - 4)) else { throw .checksumMismatch }
        }
        guard let (storeUUID, generation, nonce, modelHash) = reader.stampFields(),
              let requestJSON = reader.string32(), let entities = reader.entityStamps() else { throw .badHeader }
        guard let sectionCount = reader.u32(), let objectCount = reader.u64(), let bodyLength = reader.u32(),
              let compressedLength = reader.u32(), reader.position == 16 + headerLength,
              version == 1 ? reader.position + Int(compressedLength) + 4 == size : reader.position + Int(compressedLength) + 4 <= size
        else { throw .badHeader }
        // Sizes that bound every allocation decoding makes: each key takes at least one body byte,
        // each section at least one key and seven body bytes (a NULL value, an empty name, no
        // index title, a one-byte count), and zlib inflates at most 1032:1.
        guard objectCount <= UInt64(bodyLength), UInt64(sectionCount) <= objectCount,
              UInt64(sectionCount) * 7 <= UInt64(bodyLength),
              UInt64(bodyLength) <= UInt64(compressedLength) * 1032 + 64 else { throw .badHeader }
        guard let request = try? JSONDecoder().decode(CanonicalRequest.self, from: Data(requestJSON.utf8)) else { throw .badHeader }
        let bodyStamp = SectionCacheStamp(storeUUID: storeUUID, generation: generation, nonce: nonce, modelHash: modelHash, entities: entities)
        var header = Header(stamp: bodyStamp, request: request, sectionCount: Int(sectionCount), objectCount: Int(objectCount),
                            pendingKeys: [], changeRecords: 0, formatVersion: version, bodyStamp: bodyStamp, bodyLength: Int(bodyLength),
                            compressedRange: reader.position..<(reader.position + Int(compressedLength)), soundLength: size)
        if version >= 2 { readChangeRecords(data, from: reader.position + Int(compressedLength) + 4, into: &header) }
        return header
    }

    /// The change records from `offset` on, up to the first that is torn or damaged.
    private static func readChangeRecords(_ data: Data, from offset: Int, into header: inout Header) {
        var pending = Set<Int64>()
        var position = offset
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let bytes = raw.bindMemory(to: UInt8.self)
            while position + 12 <= bytes.count {
                guard Array(bytes[position..<(position + 4)]) == recordMagic else { break }
                let length = Int(bytes[(position + 4)..<(position + 8)].reversed().reduce(UInt32(0)) { ($0 << 8) | UInt32($1) })
                let end = position + 8 + length + 4
                guard length <= bytes.count, end <= bytes.count else { break }
                let stored = bytes[(end - 4)..<end].reversed().reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
                guard stored == UInt32(CZlib.crc32(0, bytes.baseAddress! + position, uInt(end - 4 - position))) else { break }
                var reader = ByteReader(bytes: Array(bytes[(position + 8)..<(end - 4)]), position: 0)
                guard let generation = reader.i64(), let nonce = reader.bytes8(), let entities = reader.entityStamps(),
                      let count = reader.varint(), count <= UInt64(length), let keys = reader.keys(count: Int(count)),
                      reader.position == reader.bytes.count else { break }
                header.stamp = SectionCacheStamp(storeUUID: header.bodyStamp.storeUUID, generation: generation, nonce: Data(nonce),
                                                 modelHash: header.bodyStamp.modelHash, entities: entities)
                pending.formUnion(keys)
                header.changeRecords += 1
                position = end
            }
        }
        header.pendingKeys = pending.sorted()
        header.soundLength = position
    }

    /// Decodes and checks a whole file: the header, then the body (inflate, structure, counts
    /// summing to the ID count, IDs unique, stamps), and the change records' keys.
    public static func decode(_ data: Data) throws(SectionCacheRejection) -> SectionCacheFile {
        let header = try header(of: data)
        return try decodeBody(data, header)
    }

    static func decodeBody(_ data: Data, _ header: Header) throws(SectionCacheRejection) -> SectionCacheFile {
        let start = data.startIndex
        let compressed = data[(start + header.compressedRange.lowerBound)..<(start + header.compressedRange.upperBound)]
        guard let body = Zlib.inflate(compressed, expectedLength: header.bodyLength) else { throw .inflateFailed }
        var reader = ByteReader(bytes: body, position: 0)
        var sections: [SectionCacheSection] = []
        sections.reserveCapacity(header.sectionCount)
        var total = 0
        for _ in 0..<header.sectionCount {
            guard let value = reader.value(), let name = reader.string32(), let hasTitle = reader.u8(), hasTitle <= 1 else { throw .badBody }
            var title: String?
            if hasTitle == 1 {
                guard let text = reader.string32() else { throw .badBody }
                title = text
            }
            guard let count = reader.varint(), count > 0, count <= UInt64(header.objectCount) else { throw .countMismatch }
            total += Int(count)
            sections.append(SectionCacheSection(value: value, name: name, indexTitle: title, count: Int(count)))
        }
        guard total == header.objectCount else { throw .countMismatch }
        guard let keys = reader.keys(count: header.objectCount) else { throw .badBody }
        var stampRuns: [StampRun]?
        if header.formatVersion >= 2 {
            guard let present = reader.u8(), present <= 1 else { throw .badBody }
            if present == 1 {
                guard let runCount = reader.varint(), runCount <= UInt64(header.objectCount) else { throw .badBody }
                var runs: [StampRun] = []
                var total = 0
                for _ in 0..<runCount {
                    guard let length = reader.varint(), length > 0, length <= UInt64(header.objectCount - total),
                          let stamp = reader.u32() else { throw .badBody }
                    total += Int(length)
                    if let last = runs.last, last.stamp == stamp { runs[runs.count - 1].length += Int(length) } else { runs.append(StampRun(length: Int(length), stamp: stamp)) }
                }
                guard total == header.objectCount else { throw .badBody }
                stampRuns = runs
            }
        }
        guard reader.position == body.count else { throw .badBody }
        guard SectionCacheFile.areUnique(keys) else { throw .duplicateIDs }
        var file = SectionCacheFile(stamp: header.stamp, request: header.request, sections: sections, keys: keys)
        file.stampRuns = stampRuns
        file.bodyStamp = header.bodyStamp
        file.pendingKeys = header.pendingKeys
        return file
    }
}

/// A run of one version stamp over consecutive keys of a cache file.
struct StampRun: Sendable, Equatable {
    var length: Int
    var stamp: UInt32

    static func runs(of stamps: [UInt32]) -> [StampRun] {
        var runs: [StampRun] = []
        for stamp in stamps {
            if let last = runs.last, last.stamp == stamp { runs[runs.count - 1].length += 1 } else { runs.append(StampRun(length: 1, stamp: stamp)) }
        }
        return runs
    }
}

/// Hands out the stamps of consecutive ranges of a file's keys from its runs. A chunk-sized
/// range inside one run shares one array per stamp (copied only when a change writes to it):
/// at 10,000,000 rows of one run, installing the stamps allocates nothing per chunk.
struct StampRunReader {
    private let runs: [StampRun]
    private var run = 0
    private var runStart = 0
    private var shared: [UInt32: [UInt32]] = [:]

    init(_ runs: [StampRun]) { self.runs = runs }

    /// The stamps of keys `range` (ranges must come in increasing order).
    mutating func stamps(_ range: Range<Int>) -> [UInt32] {
        while run < runs.count, runStart + runs[run].length <= range.lowerBound {
            runStart += runs[run].length
            run += 1
        }
        if run < runs.count, range.upperBound <= runStart + runs[run].length, range.count == FetchedRows.chunkCapacity {
            let stamp = runs[run].stamp
            if let array = shared[stamp] { return array }
            let array = [UInt32](repeating: stamp, count: range.count)
            shared[stamp] = array
            return array
        }
        var result: [UInt32] = []
        result.reserveCapacity(range.count)
        var index = run, start = runStart, position = range.lowerBound
        while position < range.upperBound, index < runs.count {
            let end = min(start + runs[index].length, range.upperBound)
            if end > position {
                result.append(contentsOf: repeatElement(runs[index].stamp, count: end - position))
                position = end
            }
            if position >= start + runs[index].length {
                start += runs[index].length
                index += 1
            }
        }
        return result
    }
}

// MARK: - Bytes

struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }
    mutating func bytes8(_ data: Data) {
        u8(UInt8(min(data.count, 255)))
        bytes.append(contentsOf: data.prefix(255))
    }
    mutating func string16(_ s: String) {
        let utf8 = Array(s.utf8.prefix(Int(UInt16.max)))
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
    mutating func string32(_ s: String) {
        u32(UInt32(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }
    /// Keys in order, each as the zigzag varint of its difference from the previous one.
    mutating func keys(_ keys: [Int64]) {
        var previous: Int64 = 0
        for key in keys {
            let delta = key &- previous
            varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))   // zigzag
            previous = key
        }
    }
    /// A stamp's generation and nonce, after its store UUID and before its model hash when
    /// `withStoreFields` (a file's header); alone in a change record.
    mutating func stamp(_ stamp: SectionCacheStamp, withStoreFields: Bool) {
        if withStoreFields { withUnsafeBytes(of: stamp.storeUUID.uuid) { bytes.append(contentsOf: $0) } }
        i64(stamp.generation)
        bytes8(stamp.nonce)
        if withStoreFields { string16(stamp.modelHash) }
    }
    /// A stamp's entities, by name.
    mutating func entityStamps(_ stamp: SectionCacheStamp) {
        u16(UInt16(stamp.entities.count))
        for name in stamp.entities.keys.sorted() {
            string16(name)
            i64(stamp.entities[name]!.generation)
            bytes8(stamp.entities[name]!.nonce)
        }
    }
    mutating func value(_ v: SQLiteValue) {
        switch v {
        case .null: u8(0)
        case .integer(let i): u8(1); i64(i)
        case .real(let d): u8(2); u64(d.bitPattern)
        case .text(let s): u8(3); string32(s)
        case .blob(let d): u8(4); u32(UInt32(d.count)); bytes.append(contentsOf: d)
        }
    }
}

struct ByteReader {
    let bytes: [UInt8]
    var position: Int

    mutating func take(_ n: Int) -> [UInt8]? {
        guard n >= 0, position + n <= bytes.count else { return nil }
        defer { position += n }
        return Array(bytes[position..<(position + n)])
    }
    private mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard let raw = take(MemoryLayout<T>.size) else { return nil }
        return raw.reversed().reduce(T(0)) { ($0 << 8) | T($1) }
    }
    mutating func u8() -> UInt8? { take(1)?.first }
    mutating func u16() -> UInt16? { fixed(UInt16.self) }
    mutating func u32() -> UInt32? { fixed(UInt32.self) }
    mutating func u64() -> UInt64? { fixed(UInt64.self) }
    mutating func i64() -> Int64? { u64().map { Int64(bitPattern: $0) } }
    mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while shift < 64 {
            guard position < bytes.count else { return nil }
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }
    mutating func bytes8() -> [UInt8]? {
        guard let n = u8() else { return nil }
        return take(Int(n))
    }
    mutating func string16() -> String? {
        guard let n = u16(), let raw = take(Int(n)) else { return nil }
        return String(validating: raw, as: UTF8.self)
    }
    mutating func string32() -> String? {
        guard let n = u32(), Int(n) <= bytes.count - position, let raw = take(Int(n)) else { return nil }
        return String(validating: raw, as: UTF8.self)
    }
    /// `count` keys written by ``ByteWriter/keys(_:)`` (each at least 1: primary keys start there).
    mutating func keys(count: Int) -> [Int64]? {
        guard count >= 0, count <= bytes.count - position else { return nil }
        var keys: [Int64] = []
        keys.reserveCapacity(count)
        var previous: Int64 = 0
        for _ in 0..<count {
            guard let zigzag = varint() else { return nil }
            let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            previous = previous &+ delta
            guard previous >= 1 else { return nil }
            keys.append(previous)
        }
        return keys
    }
    /// A header's store UUID, generation, nonce and model hash.
    mutating func stampFields() -> (UUID, Int64, Data, String)? {
        guard let uuidBytes = take(16), let generation = i64(), let nonce = bytes8(), let modelHash = string16() else { return nil }
        let uuid = uuidBytes.withUnsafeBufferPointer { buffer in
            UUID(uuid: (buffer[0], buffer[1], buffer[2], buffer[3], buffer[4], buffer[5], buffer[6], buffer[7],
                        buffer[8], buffer[9], buffer[10], buffer[11], buffer[12], buffer[13], buffer[14], buffer[15]))
        }
        return (uuid, generation, Data(nonce), modelHash)
    }
    /// Entity stamps written by ``ByteWriter/entityStamps(_:)``; `nil` for a name met twice.
    mutating func entityStamps() -> [String: SectionCacheStamp.EntityStamp]? {
        guard let count = u16() else { return nil }
        var entities: [String: SectionCacheStamp.EntityStamp] = [:]
        for _ in 0..<count {
            guard let name = string16(), let generation = i64(), let nonce = bytes8(), entities[name] == nil else { return nil }
            entities[name] = SectionCacheStamp.EntityStamp(generation: generation, nonce: Data(nonce))
        }
        return entities
    }
    mutating func value() -> SQLiteValue? {
        switch u8() {
        case 0: return .null
        case 1: return i64().map { .integer($0) }
        case 2: return u64().map { .real(Double(bitPattern: $0)) }
        case 3: return string32().map { .text($0) }
        case 4:
            guard let n = u32(), let raw = take(Int(n)) else { return nil }
            return .blob(Data(raw))
        default: return nil
        }
    }
}

/// zlib: deflate, inflate, CRC32.
enum Zlib {
    static func deflate(_ bytes: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(bytes.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = output.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBufferPointer { input in
                compress2(out.baseAddress, &length, input.baseAddress, uLong(bytes.count), 6)
            }
        }
        precondition(status == Z_OK, "zlib compress2 failed with \(status)")
        return Array(output.prefix(Int(length)))
    }

    /// The inflated bytes, or `nil` unless the stream is sound and inflates to exactly `expectedLength`.
    static func inflate<Bytes: DataProtocol & ContiguousBytes>(_ input: Bytes, expectedLength: Int) -> [UInt8]? {
        guard expectedLength >= 0 else { return nil }
        var length = uLong(expectedLength)
        var output = [UInt8](repeating: 0, count: max(expectedLength, 1))
        var consumed = uLong(input.count)
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBytes { source in
                uncompress2(out.baseAddress, &length, source.bindMemory(to: UInt8.self).baseAddress, &consumed)
            }
        }
        // The stream must fill the body exactly and be the whole compressed part (no trailing bytes).
        guard status == Z_OK, Int(length) == expectedLength, Int(consumed) == input.count else { return nil }
        return Array(output.prefix(expectedLength))
    }

    static func crc32<Bytes: ContiguousBytes>(_ bytes: Bytes) -> UInt32 {
        bytes.withUnsafeBytes { UInt32(CZlib.crc32(0, $0.bindMemory(to: UInt8.self).baseAddress, uInt($0.count))) }
    }
}
