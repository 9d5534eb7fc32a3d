import Foundation
@testable import StrataSQLite
import Testing

/// Strata's checksum VFS at the SQLite level: real files, real WAL, real byte flips.
@Suite struct PageChecksumTests {
    /// Fills `path` with enough rows for a few dozen pages (a table and an index).
    static func populate(_ db: Connection, rows: Int = 2_000) throws {
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL)")
        try db.execute("CREATE INDEX t_name ON t(name)")
        try db.transaction(.immediate) {
            let insert = try db.cachedStatement("INSERT INTO t(name, score) VALUES (?, ?)")
            for index in 0..<rows { try insert.execute(.text("name \(index * 7919 % rows)"), .real(Double(index) / 3)) }
        }
    }

    static func sum(_ db: Connection) throws -> (count: Int64, total: Double, names: Int64) {
        var result: (Int64, Double, Int64) = (0, 0, 0)
        try db.prepare("SELECT count(*), total(score) FROM t").forEachRow { result = ($0.int64(at: 0), $0.double(at: 1), 0) }
        try db.prepare("SELECT count(*) FROM t INDEXED BY t_name WHERE name >= ''").forEachRow { result.2 = $0.int64(at: 0) }
        return result
    }

    static func header(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)).prefix(100))
    }

    /// The VFS's checksum (four words at a time) is its word-at-a-time definition, on every page
    /// size and on pages of zeros, of all ones, of random bytes and of words near the wrap of 2^32.
    @Test func theFastChecksumIsTheReferenceOne() {
        var rng = SystemRandomNumberGenerator()
        var compared = 0
        for size in [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536] {
            var pages: [[UInt8]] = [[UInt8](repeating: 0, count: size), [UInt8](repeating: 0xFF, count: size)]
            for _ in 0..<12 { pages.append((0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
            // Words of 0xFFFFFFFE / 0x00000001 alternating: every sum wraps many times.
            pages.append((0..<size).map { $0 % 8 < 4 ? ($0 % 4 == 0 ? 0xFE : 0xFF) : ($0 % 4 == 0 ? 0x01 : 0x00) })
            for page in pages {
                let (fast, reference) = PageChecksum.sums(of: page)
                #expect(fast == reference, "page size \(size)")
                compared += 1
            }
        }
        print("page-checksum: compared=\(compared) fast == reference")
    }

    @Test func aNewDatabaseReservesEightBytesAndMarksItsApplicationID() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        do {
            let db = try Connection(path: path)
            try Self.populate(db, rows: 10)
            #expect(db.pageChecksumState.checksummed)
            #expect(try db.pragma("application_id") == .integer(0x5354_5243))
        }
        let header = try Self.header(path)
        #expect(header[20] == 8)
    }

    @Test func aDatabaseCreatedWithoutChecksumsStaysWithout() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        do {
            let db = try Connection(path: path, configuration: .with { $0.pageChecksums = false })
            try Self.populate(db, rows: 10)
            #expect(!db.pageChecksumState.checksummed)
        }
        #expect(try Self.header(path)[20] == 0)
        let reopened = try Connection(path: path)
        #expect(!reopened.pageChecksumState.checksummed)
        #expect(try Self.sum(reopened).count == 10)
    }

    @Test func everyPageOnDiskCarriesItsChecksum() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        do {
            let db = try Connection(path: path)
            try Self.populate(db)
            try db.execute("UPDATE t SET score = score + 1 WHERE id % 3 = 0")
            try db.execute("DELETE FROM t WHERE id % 5 = 0")
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17]) << 16
        #expect(bytes.count % pageSize == 0 && bytes.count / pageSize > 20)
        for page in 0..<(bytes.count / pageSize) {
            let slice = Array(bytes[(page * pageSize)..<((page + 1) * pageSize)])
            #expect(PageChecksum.matches(slice), "page \(page + 1)")
        }
    }

    @Test func aFlippedByteIsAnErrorNamingThePageNeverData() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        do {
            let db = try Connection(path: path)
            try Self.populate(db)
        }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17]) << 16
        // A byte in the middle of page 3 (a b-tree page of the table or the index).
        let offset = 2 * pageSize + pageSize / 2
        bytes[offset] ^= 0x10
        try bytes.write(to: URL(fileURLWithPath: path))
        let db = try Connection(path: path)
        #expect {
            _ = try Self.sum(db)
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.corruptPage == 3 && error.message.contains("page 3")
        }
        #expect(db.pageChecksumState.faults >= 1)
    }

    /// SQLite checksums each WAL frame over the page before the VFS sees it; the shim reseals the
    /// frame after filling in the page checksum. Recovery of a WAL copied from a live connection
    /// (as after a crash) must keep every committed transaction.
    @Test func walRecoveryKeepsEveryCommittedFrame() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        let copy = directory.path("copy.sqlite")
        let db = try Connection(path: path)
        try db.execute("PRAGMA wal_autocheckpoint=0")
        try Self.populate(db)
        for round in 0..<20 {
            try db.execute("UPDATE t SET score = score + \(round) WHERE id % 7 = \(round % 7)")
            try db.execute("INSERT INTO t(name, score) VALUES ('round \(round)', \(round))")
        }
        // A page written twice in one transaction: SQLite overwrites its frame in place and
        // rewrites the transaction's frame checksums itself.
        try db.transaction(.immediate) {
            for round in 0..<50 { try db.execute("UPDATE t SET score = score + 1 WHERE id = \(round + 1)") }
            try db.execute("PRAGMA cache_size=2")
            for round in 0..<200 { try db.execute("UPDATE t SET name = name || 'x' WHERE id = \(round * 9 + 1)") }
        }
        let expected = try Self.sum(db)
        let wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        #expect(wal.count > 100_000)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try wal.write(to: URL(fileURLWithPath: copy + "-wal"))
        let recovered = try Connection(path: copy)
        let got = try Self.sum(recovered)
        #expect(got.count == expected.count && got.total == expected.total && got.names == expected.names)
        var check = ""
        try recovered.prepare("PRAGMA integrity_check").forEachRow { check = $0.string(at: 0) }
        #expect(check == "ok")
        db.close()
    }

    @Test func aFlippedByteInTheWALIsAnErrorToo() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let path = directory.path()
        let db = try Connection(path: path)
        try db.execute("PRAGMA wal_autocheckpoint=0")
        try Self.populate(db, rows: 300)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try db.execute("UPDATE t SET score = -1")
        // Flip a byte inside the last frame's page (not its header) while the file is open: the
        // reader's page cache is cold after the write below.
        // (Close-on-exec: other tests spawn children meanwhile.)
        let fd = open(path + "-wal", O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        var byte: [UInt8] = [0]
        #expect(pread(fd, &byte, 1, info.st_size - 1_000) == 1)
        byte[0] ^= 0x01
        #expect(pwrite(fd, byte, 1, info.st_size - 1_000) == 1)
        close(fd)
        let reader = try Connection(path: path)
        #expect(throws: SQLiteError.self) { _ = try Self.sum(reader) }
        #expect(reader.pageChecksumState.faults >= 1)
        db.close()
    }
}
