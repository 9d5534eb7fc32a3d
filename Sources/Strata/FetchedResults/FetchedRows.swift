internal import Foundation
internal import StrataSQLite

/// A results controller's rows: sections of ordered primary keys, kept in chunks of at most
/// ``FetchedRows/chunkCapacity`` keys.
///
/// A value type whose copies share storage: a snapshot is a copy (O(number of chunks)), and a
/// change after it copies only the chunks it touches. Each key carries a 4-byte stamp (a version
/// stamp or a content stamp: ``FetchedResultsController/versionStamp(_:)``,
/// ``FetchedResultsController/contentStamp(_:)``) that tells whether the row's own values changed
/// since it was last reported. Nothing else is kept per row: 12 bytes, plus 4 in the controller's
/// ``KeyLocations``.
struct FetchedRows: Sendable {
    struct Section: Sendable {
        /// The section key's value (`.null` for an unsectioned controller's one section).
        var value: SQLiteValue
        var name: String
        var indexTitle: String?
        /// Chunk numbers, in order.
        var chunks: [Int32]
        /// The number of keys in each of `chunks` (the same order): an item's place is a sum over
        /// this contiguous array, not a visit to every chunk before it (at 10,000,000 rows a
        /// section spans thousands of chunks).
        var counts: [Int32] = []
        var count: Int
    }

    struct Chunk: Sendable {
        var keys: [Int64]
        var stamps: [UInt32]
        /// The section key's value of every row in the chunk.
        var sectionValue: SQLiteValue
    }

    static let chunkCapacity = 512

    var sections: [Section] = []
    /// Every chunk, by number; copied page by page (see ``ChunkTable``).
    var chunks = ChunkTable()
    var freeChunks: [Int32] = []
    var count = 0
    /// An unsectioned controller's layout: exactly one section (`""`, value `.null`), also
    /// when it holds no row, as a single-section table's data source expects.
    private(set) var keepsOneSection = false

    init() {}

    /// An empty layout; `keepsOneSection`: it starts with its one empty section and never drops it.
    init(keepsOneSection: Bool) {
        self.keepsOneSection = keepsOneSection
        if keepsOneSection { sections = [Section(value: .null, name: "", indexTitle: nil, chunks: [], counts: [], count: 0)] }
    }

    /// Where a key is: its section and its item in the section.
    struct Location: Equatable {
        var section: Int
        var item: Int
    }

    /// Bytes held: the key and stamp arrays' capacities, plus the chunk and section tables.
    var bytes: Int {
        chunks.reduce(0) { $0 + $1.keys.capacity * 8 + $1.stamps.capacity * 4 } + chunks.tableBytes
            + sections.reduce(0) { $0 + $1.chunks.capacity * 8 + $1.name.utf8.count } + sections.capacity * MemoryLayout<Section>.stride
    }

    // MARK: Building

    /// Starts the rows of section value `sectionValue` (rows arrive in order, grouped by section
    /// value): a new section, unless the last one's value is the same (byte for byte, or equal in
    /// the section `order`). The rows follow through ``appendToLastSection(key:stamp:locations:)``.
    mutating func startRun(of sectionValue: SQLiteValue, order: (SQLiteValue, SQLiteValue) -> Int,
                           makeSection: (SQLiteValue) -> (name: String, title: String?)) {
        if let last = sections.last, FetchedRows.sameBytes(last.value, sectionValue) || order(last.value, sectionValue) == 0 { return }
        let (name, title) = makeSection(sectionValue)
        sections.append(Section(value: sectionValue, name: name, indexTitle: title, chunks: [], counts: [], count: 0))
    }

    /// Appends a row to the last section (``startRun(of:order:makeSection:)`` made one). No
    /// section value per row: a row costs no reference count, which at 10,000,000 rows was
    /// tens of millions of atomic operations.
    @inline(__always)
    mutating func appendToLastSection(key: Int64, stamp: UInt32, locations: inout KeyLocations) {
        let s = sections.count - 1
        if let last = sections[s].chunks.last, sections[s].counts[sections[s].counts.count - 1] < FetchedRows.chunkCapacity {
            chunks.modify(Int(last)) { chunk in
                chunk.keys.append(key)
                chunk.stamps.append(stamp)
            }
            sections[s].counts[sections[s].counts.count - 1] += 1
            locations[key] = last
        } else {
            let chunk = newChunk(Chunk(keys: [key], stamps: [stamp], sectionValue: sections[s].value))
            sections[s].chunks.append(chunk)
            sections[s].counts.append(1)
            locations[key] = chunk
        }
        sections[s].count += 1
        count += 1
    }

    /// Byte-identical values (the common case: a row in the same section as the previous one),
    /// found without the section order's comparison.
    @inline(__always)
    static func sameBytes(_ a: SQLiteValue, _ b: SQLiteValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.integer(x), .integer(y)): x == y
        case let (.real(x), .real(y)): x.bitPattern == y.bitPattern
        case (.text(var x), .text(var y)):
            // Rows of one section share one `String`: same storage, no byte compare at all.
            x.withUTF8 { a in y.withUTF8 { b in sameBytes(a, b) } }
        default: false
        }
    }

    /// Byte equality by `memcmp` (the generic `elementsEqual` is a loop of optional bytes), and
    /// without reading when both are the same bytes.
    @inline(__always)
    static func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let x = a.baseAddress, let y = b.baseAddress else { return true }
        return x == y || memcmp(x, y, a.count) == 0
    }

    /// Appends a whole section after the last one, its keys in order, chunk by chunk, with
    /// their stamps (unknown, 0, when not given). For installing a cache file.
    /// The keys' locations are not recorded: the caller rebuilds them (`locations(of:)`).
    mutating func appendSection(value: SQLiteValue, name: String, indexTitle: String?, keys: ArraySlice<Int64>,
                                stamps: ((Range<Int>) -> [UInt32])? = nil) {
        var section = Section(value: value, name: name, indexTitle: indexTitle, chunks: [], counts: [], count: keys.count)
        if keepsOneSection, let only = sections.last, only.count == 0 {
            // The one section of an unsectioned layout, still empty: the keys go there.
            sections.removeLast()
            section.name = only.name
            section.indexTitle = only.indexTitle
        }
        section.chunks.reserveCapacity(keys.count / FetchedRows.chunkCapacity + 1)
        section.counts.reserveCapacity(keys.count / FetchedRows.chunkCapacity + 1)
        var start = keys.startIndex
        while start < keys.endIndex {
            let end = min(start + FetchedRows.chunkCapacity, keys.endIndex)
            let stampsOfChunk = stamps?(start..<end)
            let chunk = newChunk(Chunk(keys: Array(keys[start..<end]), stamps: stampsOfChunk ?? Array(repeating: 0, count: end - start),
                                       sectionValue: value))
            section.chunks.append(chunk)
            section.counts.append(Int32(end - start))
            start = end
        }
        sections.append(section)
        count += keys.count
    }

    private mutating func newChunk(_ chunk: Chunk) -> Int32 {
        var chunk = chunk
        // A full chunk's arrays keep their storage (a shared stamps array stays shared until written).
        if chunk.keys.capacity < FetchedRows.chunkCapacity { chunk.keys.reserveCapacity(FetchedRows.chunkCapacity) }
        if chunk.stamps.capacity < FetchedRows.chunkCapacity { chunk.stamps.reserveCapacity(FetchedRows.chunkCapacity) }
        if let free = freeChunks.popLast() {
            chunks.modify(Int(free)) { $0 = chunk }
            return free
        }
        chunks.append(chunk)
        return Int32(chunks.count - 1)
    }

    // MARK: Reading

    /// The section holding chunk `chunk`: a binary search by section value.
    func sectionIndex(ofChunk chunk: Int32, order: (SQLiteValue, SQLiteValue) -> Int) -> Int {
        let value = chunks[Int(chunk)].sectionValue
        var low = 0, high = sections.count
        while low < high {
            let mid = (low + high) / 2
            if order(sections[mid].value, value) < 0 { low = mid + 1 } else { high = mid }
        }
        precondition(low < sections.count && order(sections[low].value, value) == 0, "results layout: chunk without its section")
        return low
    }

    /// The section and item of `key`, held in chunk `chunk`.
    func location(of key: Int64, inChunk chunk: Int32, order: (SQLiteValue, SQLiteValue) -> Int) -> Location {
        let s = sectionIndex(ofChunk: chunk, order: order)
        var item = 0
        sections[s].chunks.withUnsafeBufferPointer { list in
            sections[s].counts.withUnsafeBufferPointer { counts in
                for i in list.indices {
                    if list[i] == chunk { break }
                    item += Int(counts[i])
                }
            }
        }
        guard let offset = chunks[Int(chunk)].keys.firstIndex(of: key) else { preconditionFailure("results layout: key not in its chunk") }
        return Location(section: s, item: item + offset)
    }

    /// The position of section `section`'s first row among all rows.
    func offset(ofSection section: Int) -> Int {
        sections[..<section].reduce(0) { $0 + $1.count }
    }

    /// The chunk and offset in it of item `item` of section `section`.
    func chunkPosition(section: Int, item: Int) -> (chunk: Int32, offset: Int) {
        var remaining = item
        for (i, c) in sections[section].chunks.enumerated() {
            let n = Int(sections[section].counts[i])
            if remaining < n { return (c, remaining) }
            remaining -= n
        }
        preconditionFailure("results layout: item \(item) past the end of section \(section)")
    }

    func key(section: Int, item: Int) -> Int64 {
        let (chunk, offset) = chunkPosition(section: section, item: item)
        return chunks[Int(chunk)].keys[offset]
    }

    /// Every key of section `section`, in order.
    func keys(section: Int) -> [Int64] {
        var keys: [Int64] = []
        keys.reserveCapacity(sections[section].count)
        for c in sections[section].chunks { keys.append(contentsOf: chunks[Int(c)].keys) }
        return keys
    }

    /// `count` keys from flat position `start` on (fewer at the end).
    func keys(from start: Int, count: Int) -> [Int64] {
        var result: [Int64] = []
        var skip = start
        for section in sections {
            for c in section.chunks {
                let keys = chunks[Int(c)].keys
                if skip >= keys.count {
                    skip -= keys.count
                    continue
                }
                result.append(contentsOf: keys[skip..<min(keys.count, skip + count - result.count)])
                skip = 0
                if result.count == count { return result }
            }
        }
        return result
    }

    /// Every row's key and stamp, in order: for a full comparison after a re-run.
    func flattened() -> [(key: Int64, stamp: UInt32)] {
        var rows: [(key: Int64, stamp: UInt32)] = []
        rows.reserveCapacity(count)
        for section in sections {
            for c in section.chunks {
                let chunk = chunks[Int(c)]
                for i in chunk.keys.indices { rows.append((chunk.keys[i], chunk.stamps[i])) }
            }
        }
        return rows
    }

    /// The stamp of `key` (held in chunk `chunk`).
    func stamp(of key: Int64, inChunk chunk: Int32) -> UInt32 {
        guard let offset = chunks[Int(chunk)].keys.firstIndex(of: key) else { preconditionFailure("results layout: key not in its chunk") }
        return chunks[Int(chunk)].stamps[offset]
    }

    /// Sets the stamp of `key` (held in chunk `chunk`).
    mutating func setStamp(of key: Int64, inChunk chunk: Int32, to stamp: UInt32) {
        guard let offset = chunks[Int(chunk)].keys.firstIndex(of: key) else { preconditionFailure("results layout: key not in its chunk") }
        chunks.modify(Int(chunk)) { $0.stamps[offset] = stamp }
    }

    // MARK: Changing

    /// Removes `key` (held in chunk `chunk`); drops a chunk or section it empties.
    mutating func remove(_ key: Int64, inChunk chunk: Int32, locations: inout KeyLocations,
                         order: (SQLiteValue, SQLiteValue) -> Int) {
        let s = sectionIndex(ofChunk: chunk, order: order)
        let c = Int(chunk)
        guard let offset = chunks[c].keys.firstIndex(of: key) else { preconditionFailure("results layout: key not in its chunk") }
        chunks.modify(c) { chunk in
            chunk.keys.remove(at: offset)
            chunk.stamps.remove(at: offset)
        }
        locations[key] = nil
        sections[s].count -= 1
        count -= 1
        guard let index = sections[s].chunks.firstIndex(of: chunk) else { preconditionFailure("results layout: chunk not in its section") }
        sections[s].counts[index] -= 1
        if sections[s].counts[index] == 0 {
            sections[s].chunks.remove(at: index)
            sections[s].counts.remove(at: index)
            chunks.modify(c) { $0 = Chunk(keys: [], stamps: [], sectionValue: .null) }
            freeChunks.append(chunk)
        }
        if sections[s].count == 0, !keepsOneSection { sections.remove(at: s) }
    }

    /// Inserts a row into the section of `sectionValue` (created when missing) where `precedes`
    /// says: `precedes(k, s)` is true for the keys that sort before the new row (`s`: the stamp
    /// the layout holds for `k`, so that a neighbour is judged as the layout knows it).
    mutating func insert(key: Int64, stamp: UInt32, sectionValue: SQLiteValue, locations: inout KeyLocations,
                         order: (SQLiteValue, SQLiteValue) -> Int,
                         makeSection: (SQLiteValue) -> (name: String, title: String?),
                         precedes: (Int64, UInt32) throws -> Bool) rethrows {
        // The section: a binary search by value.
        var low = 0, high = sections.count
        while low < high {
            let mid = (low + high) / 2
            if order(sections[mid].value, sectionValue) < 0 { low = mid + 1 } else { high = mid }
        }
        let s = low
        count += 1
        if s == sections.count || order(sections[s].value, sectionValue) != 0 {
            let (name, title) = makeSection(sectionValue)
            let chunk = newChunk(Chunk(keys: [key], stamps: [stamp], sectionValue: sectionValue))
            sections.insert(Section(value: sectionValue, name: name, indexTitle: title, chunks: [chunk], counts: [1], count: 1), at: s)
            locations[key] = chunk
            return
        }
        // The chunk: the last whose first key precedes the new row (else the first).
        let list = sections[s].chunks
        if list.isEmpty {
            // The kept empty section of an unsectioned layout.
            let chunk = newChunk(Chunk(keys: [key], stamps: [stamp], sectionValue: sectionValue))
            sections[s].chunks = [chunk]
            sections[s].counts = [1]
            sections[s].count = 1
            locations[key] = chunk
            return
        }
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if try precedes(chunks[Int(list[mid])].keys[0], chunks[Int(list[mid])].stamps[0]) { lo = mid + 1 } else { hi = mid }
        }
        let position = max(lo - 1, 0)
        let chunk = list[position]
        let c = Int(chunk)
        // The place in the chunk.
        var a = 0, b = chunks[c].keys.count
        while a < b {
            let mid = (a + b) / 2
            if try precedes(chunks[c].keys[mid], chunks[c].stamps[mid]) { a = mid + 1 } else { b = mid }
        }
        chunks.modify(c) { chunk in
            chunk.keys.insert(key, at: a)
            chunk.stamps.insert(stamp, at: a)
        }
        locations[key] = chunk
        sections[s].count += 1
        sections[s].counts[position] += 1
        if chunks[c].keys.count > FetchedRows.chunkCapacity {
            // Split: the upper half goes to a new chunk after this one.
            let half = chunks[c].keys.count / 2
            let upper = Chunk(keys: Array(chunks[c].keys[half...]), stamps: Array(chunks[c].stamps[half...]),
                              sectionValue: sectionValue)
            chunks.modify(c) { chunk in
                chunk.keys.removeSubrange(half...)
                chunk.stamps.removeSubrange(half...)
            }
            let added = newChunk(upper)
            for moved in chunks[Int(added)].keys { locations[moved] = added }
            sections[s].chunks.insert(added, at: position + 1)
            sections[s].counts[position] = Int32(half)
            sections[s].counts.insert(Int32(upper.keys.count), at: position + 1)
        }
    }
}

/// A results layout's chunks, by number, in pages of ``pageSize``: a copy of the layout (a
/// snapshot, or the layout before a change) shares every page, and a change after it copies the
/// one page it touches. A flat array of chunks was copied whole by the first change after each
/// snapshot: at 10,000,000 rows, 19,500 chunks and 39,000 reference counts per change.
struct ChunkTable: Sendable, Sequence {
    static let pageSize = 256

    /// One page of chunks. Changed only through ``ChunkTable/modify(_:_:)``, which copies it first
    /// unless the table's reference is the only one.
    // A page is mutated only while uniquely referenced (checked with isKnownUniquelyReferenced
    // by the one ChunkTable value that holds it, on that value's owner's queue); a page
    // reachable from any other value or thread is never written again: @unchecked because of that.
    final class Page: @unchecked Sendable {
        var chunks: [FetchedRows.Chunk]
        init(_ chunks: [FetchedRows.Chunk]) {
            self.chunks = chunks
            self.chunks.reserveCapacity(ChunkTable.pageSize)
        }
    }

    private var pages: [Page] = []
    private(set) var count = 0

    var indices: Range<Int> { 0..<count }

    subscript(index: Int) -> FetchedRows.Chunk {
        pages[index / ChunkTable.pageSize].chunks[index % ChunkTable.pageSize]
    }

    /// Changes chunk `index` in place, copying its page first when another table shares it.
    @inline(__always)
    mutating func modify<Result>(_ index: Int, _ body: (inout FetchedRows.Chunk) throws -> Result) rethrows -> Result {
        let page = index / ChunkTable.pageSize
        if !isKnownUniquelyReferenced(&pages[page]) { pages[page] = Page(pages[page].chunks) }
        return try body(&pages[page].chunks[index % ChunkTable.pageSize])
    }

    mutating func append(_ chunk: FetchedRows.Chunk) {
        if count % ChunkTable.pageSize == 0 {
            pages.append(Page([chunk]))
        } else {
            modify(count - count % ChunkTable.pageSize) { _ in }          // the last page, made unique
            pages[pages.count - 1].chunks.append(chunk)
        }
        count += 1
    }

    /// Bytes of the table itself (pages and their chunk records), not of the keys.
    var tableBytes: Int { pages.capacity * 8 + pages.count * (ChunkTable.pageSize * MemoryLayout<FetchedRows.Chunk>.stride + 32) }

    func makeIterator() -> AnyIterator<FetchedRows.Chunk> {
        var index = 0
        let table = self
        return AnyIterator {
            guard index < table.count else { return nil }
            defer { index += 1 }
            return table[index]
        }
    }
}

/// Which chunk holds each key: a dense array over the keys' range when the keys are dense (4
/// bytes a key), a dictionary otherwise.
struct KeyLocations {
    private var base: Int64 = 0
    /// chunk + 1 for each key from `base`; 0: absent.
    private var dense: [UInt32] = []
    private var sparse: [Int64: Int32]?
    private(set) var count = 0

    init() {}

    /// Prepared for keys in `range`.
    init(expecting range: ClosedRange<Int64>?, count: Int) {
        guard let range else { return }
        if KeyLocations.isDenseEnough(span: KeyLocations.span(range.lowerBound, range.upperBound), count: count) {
            base = range.lowerBound
            dense = Array(repeating: 0, count: Int(range.upperBound - range.lowerBound + 1))
        } else {
            sparse = [:]
            sparse?.reserveCapacity(count)
        }
    }

    private static func isDenseEnough(span: Int64, count: Int) -> Bool {
        span >= 0 && span <= 4 * Int64(count) + 65_536
    }

    /// `high - low`, or -1 when it overflows (then never dense).
    private static func span(_ low: Int64, _ high: Int64) -> Int64 {
        let (span, overflow) = high.subtractingReportingOverflow(low)
        return overflow ? -1 : span
    }

    subscript(key: Int64) -> Int32? {
        get {
            if let sparse { return sparse[key] }
            let offset = key &- base
            guard offset >= 0, offset < dense.count else { return nil }
            let stored = dense[Int(offset)]
            return stored == 0 ? nil : Int32(stored - 1)
        }
        set {
            if sparse != nil {
                let had = sparse![key] != nil
                sparse![key] = newValue
                count += (newValue != nil ? 1 : 0) - (had ? 1 : 0)
                return
            }
            var offset = key &- base
            if offset < 0 || offset >= dense.count {
                guard newValue != nil else { return }
                regrow(toHold: key)
                if sparse != nil {
                    self[key] = newValue
                    return
                }
                offset = key - base
            }
            let had = dense[Int(offset)] != 0
            dense[Int(offset)] = newValue.map { UInt32($0) + 1 } ?? 0
            count += (newValue != nil ? 1 : 0) - (had ? 1 : 0)
        }
    }

    /// Widens the dense range to `key` (with room to grow upwards), or turns sparse.
    private mutating func regrow(toHold key: Int64) {
        if dense.isEmpty, count == 0 {
            base = key
            dense = Array(repeating: 0, count: 1024)
            return
        }
        let low = min(base, key), high = max(base + Int64(dense.count) - 1, key)
        if KeyLocations.isDenseEnough(span: KeyLocations.span(low, high), count: count + 1) {
            if low < base {
                dense.insert(contentsOf: repeatElement(0, count: Int(base - low)), at: 0)
                base = low
            }
            let needed = Int(high - base + 1)
            if needed > dense.count { dense.append(contentsOf: repeatElement(0, count: max(needed - dense.count, dense.count / 2))) }
        } else {
            var map: [Int64: Int32] = [:]
            map.reserveCapacity(count + 1)
            for (offset, stored) in dense.enumerated() where stored != 0 { map[base + Int64(offset)] = Int32(stored - 1) }
            sparse = map
            dense = []
        }
    }

    /// Bytes held, for the memory figure.
    var bytes: Int { sparse.map { $0.capacity * 13 } ?? dense.capacity * 4 }
}
