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

/// A section cache file's contents: its stamp, its request, the section table and the ordered
/// primary keys. The format is described in the "Section Cache Format" article.
public struct SectionCacheFile: Sendable, Equatable {
    public static let magic = Array("STRATASC".utf8)
    public static let formatVersion: UInt16 = 1

    public var stamp: SectionCacheStamp
    public var request: CanonicalRequest
    public var sections: [SectionCacheSection]
    /// Primary keys, section after section, in order.
    public var keys: [Int64]

    public init(stamp: SectionCacheStamp, request: CanonicalRequest, sections: [SectionCacheSection], keys: [Int64]) {
        self.stamp = stamp
        self.request = request
        self.sections = sections
        self.keys = keys
    }

    // MARK: Encoding

    /// The file's bytes: header, zlib-compressed body, CRC32 of both.
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
        var previous: Int64 = 0
        for key in keys {
            let delta = key &- previous
            body.varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))   // zigzag
            previous = key
        }
        let compressed = Zlib.deflate(body.bytes)

        var header = ByteWriter()
        withUnsafeBytes(of: stamp.storeUUID.uuid) { header.bytes.append(contentsOf: $0) }
        header.i64(stamp.generation)
        header.bytes8(stamp.nonce)
        header.string16(stamp.modelHash)
        header.string32(request.json)
        header.u16(UInt16(stamp.entities.count))
        for name in stamp.entities.keys.sorted() {
            header.string16(name)
            header.i64(stamp.entities[name]!.generation)
            header.bytes8(stamp.entities[name]!.nonce)
        }
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
        return Data(file.bytes)
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

    /// The header alone, checked (magic, version, CRC over the whole file, field structure):
    /// what validation against a store needs before inflating anything.
    public struct Header: Sendable, Equatable {
        public var stamp: SectionCacheStamp
        public var request: CanonicalRequest
        public var sectionCount: Int
        public var objectCount: Int
        var bodyLength: Int
        var compressedRange: Range<Int>
    }

    /// Reads and checks the header and the CRC.
    public static func header(of data: Data) throws(SectionCacheRejection) -> Header {
        let size = data.count
        let prefix = [UInt8](data.prefix(16))
        guard size >= 20 else { throw size >= 8 && Array(prefix[0..<8]) != magic ? .badMagic : .truncated }
        guard Array(prefix[0..<8]) == magic else { throw .badMagic }
        var lead = ByteReader(bytes: prefix, position: 8)
        guard let version = lead.u16(), version == formatVersion else { throw .unsupportedVersion }
        guard lead.u16() == 0, let headerLength = lead.u32().map(Int.init) else { throw .badHeader }
        guard 16 + headerLength + 4 <= size else { throw .truncated }
        var trailer = ByteReader(bytes: [UInt8](data.suffix(4)), position: 0)
        guard let stored = trailer.u32(), stored == Zlib.crc32(data.prefix(size - 4)) else { throw .checksumMismatch }
        // Only the header is copied out of the file; the body is inflated from it in place.
        let bytes = [UInt8](data.prefix(16 + headerLength))
        var reader = ByteReader(bytes: bytes, position: 16)
        guard let uuidBytes = reader.take(16),
              let generation = reader.i64(), let nonce = reader.bytes8(),
              let modelHash = reader.string16(), let requestJSON = reader.string32(),
              let entityCount = reader.u16() else { throw .badHeader }
        var entities: [String: SectionCacheStamp.EntityStamp] = [:]
        for _ in 0..<entityCount {
            guard let name = reader.string16(), let generation = reader.i64(), let nonce = reader.bytes8(),
                  entities[name] == nil else { throw .badHeader }
            entities[name] = SectionCacheStamp.EntityStamp(generation: generation, nonce: Data(nonce))
        }
        guard let sectionCount = reader.u32(), let objectCount = reader.u64(), let bodyLength = reader.u32(),
              let compressedLength = reader.u32(), reader.position == 16 + headerLength,
              reader.position + Int(compressedLength) + 4 == size else { throw .badHeader }
        // Sizes that bound every allocation decoding makes: each key takes at least one body byte,
        // each section at least one key and seven body bytes (a NULL value, an empty name, no
        // index title, a one-byte count), and zlib inflates at most 1032:1.
        guard objectCount <= UInt64(bodyLength), UInt64(sectionCount) <= objectCount,
              UInt64(sectionCount) * 7 <= UInt64(bodyLength),
              UInt64(bodyLength) <= UInt64(compressedLength) * 1032 + 64 else { throw .badHeader }
        guard let request = try? JSONDecoder().decode(CanonicalRequest.self, from: Data(requestJSON.utf8)) else { throw .badHeader }
        let uuid = uuidBytes.withUnsafeBufferPointer { buffer in
            UUID(uuid: (buffer[0], buffer[1], buffer[2], buffer[3], buffer[4], buffer[5], buffer[6], buffer[7],
                        buffer[8], buffer[9], buffer[10], buffer[11], buffer[12], buffer[13], buffer[14], buffer[15]))
        }
        return Header(stamp: SectionCacheStamp(storeUUID: uuid, generation: generation, nonce: Data(nonce), modelHash: modelHash, entities: entities),
                      request: request, sectionCount: Int(sectionCount), objectCount: Int(objectCount),
                      bodyLength: Int(bodyLength), compressedRange: reader.position..<(reader.position + Int(compressedLength)))
    }

    /// Decodes and checks a whole file: the header, then the body (inflate, structure, counts
    /// summing to the ID count, IDs unique).
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
        var keys: [Int64] = []
        keys.reserveCapacity(header.objectCount)
        var previous: Int64 = 0
        for _ in 0..<header.objectCount {
            guard let zigzag = reader.varint() else { throw .badBody }
            let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            previous = previous &+ delta
            guard previous >= 1 else { throw .badBody }           // primary keys start at 1
            keys.append(previous)
        }
        guard reader.position == body.count else { throw .badBody }
        guard SectionCacheFile.areUnique(keys) else { throw .duplicateIDs }
        return SectionCacheFile(stamp: header.stamp, request: header.request, sections: sections, keys: keys)
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
