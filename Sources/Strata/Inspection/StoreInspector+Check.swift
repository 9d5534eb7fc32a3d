internal import Foundation
internal import StrataSQLite

/// What `strata store check` found: SQLite's integrity check, every page's checksum, and
/// Strata's own invariants. ``isClean`` is true when all three found nothing.
public struct StoreCheckReport: Codable, Sendable, Equatable {
    public var path: String
    /// Whether the store carries page checksums (a store made before they existed does not).
    public var checksummed: Bool
    public var pageSize: Int
    /// Pages in the database file (the WAL's are verified as SQLite reads them).
    public var pages: Int
    /// The first bad pages (1-based; at most 20), and how many there are in all.
    public var badPages: [Int]
    public var badPageCount: Int
    /// `PRAGMA integrity_check`'s findings (empty when it said `ok`).
    public var integrity: [String]
    /// Broken Strata invariants: the meta row, entity generations ≤ the store's, keys below
    /// their entity's sequence, join rows that name live objects.
    public var invariants: [String]
    /// Why SQLite's check and the invariants could not run when that is not the store's fault
    /// (a store on a read-only mount with a `-wal` left, locked, unreadable): `nil` when they ran.
    /// The page scan still ran; such a store is neither clean nor corrupt.
    public var notChecked: String? = nil
    /// The error behind ``notChecked`` (not encoded).
    public var notCheckedError: InspectionError? = nil
    /// The store's write-ahead log is damaged (``InspectionError/walDamaged(_:)``): the frame
    /// where SQLite's recovery would stop and the committed transactions it would drop. The
    /// store was not opened (opening would drop them); the page scan of the file still ran.
    public var walDamage: WALDamage? = nil

    /// No bad page, no finding, and everything was checked.
    public var isClean: Bool { !isCorrupt && notChecked == nil }
    /// A bad page or a finding: the store's bytes or rows are wrong.
    public var isCorrupt: Bool { badPageCount > 0 || !integrity.isEmpty || !invariants.isEmpty || walDamage != nil }

    enum CodingKeys: String, CodingKey {
        case path, checksummed, pageSize, pages, badPages, badPageCount, integrity, invariants, notChecked, walDamage
    }
}

extension StoreInspector {
    /// Checks the whole store: every page's checksum (read straight from the file), `PRAGMA
    /// integrity_check` (through the checksumming connection, so it also stops at a bad page
    /// in the WAL), and Strata's invariants. Writes nothing. A store that SQLite can't open at
    /// all still gets its page scan; the other findings then say why they could not run.
    public func check() -> StoreCheckReport {
        var report = StoreCheckReport(path: path.description, checksummed: false, pageSize: 0, pages: 0, badPages: [],
                                      badPageCount: 0, integrity: [], invariants: [])
        scanPages(into: &report)
        do {
            let findings = try read { db -> [String] in
                var lines: [String] = []
                try db.prepare("PRAGMA integrity_check(100)").forEachRow { lines.append($0.string(at: 0)) }
                return lines == ["ok"] ? [] : lines
            }
            report.integrity = findings
        } catch .walDamaged(let damage) {
            // Not opened: reading would have let recovery drop the damaged transactions.
            report.walDamage = damage
            return report
        } catch {
            guard !Self.isAccessProblem(error, into: &report) else { return report }
            report.integrity = ["integrity_check could not finish: \(error)"]
        }
        do {
            let model = try model()
            report.invariants = try read { try Self.invariantProblems(db: $0, schema: model.schema) }
        } catch {
            guard !Self.isAccessProblem(error, into: &report) else { return report }
            report.invariants = ["Strata's invariants could not be checked: \(error)"]
        }
        return report
    }

    /// Whether `error` says the store could not be opened or read for reasons of access (not
    /// of its bytes): then it is the report's ``StoreCheckReport/notChecked``.
    private static func isAccessProblem(_ error: InspectionError, into report: inout StoreCheckReport) -> Bool {
        switch error {
        case .readOnly, .locked, .unreadable, .hotJournal:
            report.notChecked = error.description
            report.notCheckedError = error
            return true
        default:
            return false
        }
    }

    /// Reads the database file page by page and verifies each checksum. A page that fails is
    /// read once more (a checkpoint may have been rewriting it) before it counts.
    private func scanPages(into report: inout StoreCheckReport) {
        guard case .success(let fd) = path.withCString({ POSIX.openForReading($0) }) else { return }
        defer { POSIX.close(fd) }
        guard let header = SQLiteFileHeader(fd: fd), header.isSQLite else { return }
        let sizeField = Int(header.bytes[16]) << 8 | Int(header.bytes[17]) << 16
        report.checksummed = PageChecksum.headerIsChecksummed(header.bytes)
        guard case .success(let info) = POSIX.status(of: fd) else { return }
        // A flipped page-size field must not hide the other pages: fall back to the size whose
        // page 1 checks out.
        var pageSize = sizeField
        if report.checksummed, !Self.pageMatches(fd: fd, page: 0, size: pageSize) {
            pageSize = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].first { Self.pageMatches(fd: fd, page: 0, size: $0) } ?? sizeField
        }
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            report.badPageCount = 1
            report.badPages = [1]
            return
        }
        report.pageSize = pageSize
        report.pages = Int(info.st_size) / pageSize
        guard report.checksummed else { return }
        // SQLite never writes the page that holds the lock bytes (at 1 GiB): it has no checksum.
        let lockBytePage = 1_073_741_824 / pageSize
        for page in 0..<report.pages where page != lockBytePage && !Self.pageMatches(fd: fd, page: page, size: pageSize) {
            guard !Self.pageMatches(fd: fd, page: page, size: pageSize) else { continue }
            report.badPageCount += 1
            if report.badPages.count < 20 { report.badPages.append(page + 1) }
        }
        if Int(info.st_size) % pageSize != 0 {
            report.badPageCount += 1
            if report.badPages.count < 20 { report.badPages.append(report.pages + 1) }
        }
    }

    private static func pageMatches(fd: Int32, page: Int, size: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: size)
        let read = buffer.withUnsafeMutableBytes { POSIX.read(fd, into: $0, at: Int64(page) * Int64(size)) }
        return (try? read.get()) == size && PageChecksum.matches(buffer)
    }

    static func invariantProblems(db: Connection, schema: Schema) throws -> [String] {
        var problems: [String] = []
        var metaRows = 0, hasRowOne = false
        var generation: Int64 = 0
        try db.prepare("SELECT id, generation FROM strata_meta").forEachRow {
            metaRows += 1
            if $0.int64(at: 0) == 1 { hasRowOne = true; generation = $0.int64(at: 1) }
        }
        if metaRows != 1 || !hasRowOne { problems.append("strata_meta has \(metaRows) rows; exactly one (id 1) expected") }
        var sequences: [String: (generation: Int64, next: Int64)] = [:]
        try db.prepare("SELECT name, generation, next_pk FROM strata_entity").forEachRow {
            sequences[$0.string(at: 0)] = ($0.int64(at: 1), $0.int64(at: 2))
        }
        for info in schema.infos.values.sorted(by: { $0.name < $1.name }) {
            guard let sequence = sequences[info.name] else {
                problems.append("strata_entity has no row for entity \(info.name)")
                continue
            }
            if sequence.generation > generation {
                problems.append("entity \(info.name) has generation \(sequence.generation), above the store's \(generation)")
            }
            var maxKey: Int64 = 0
            try db.prepare("SELECT coalesce(max(\(quoted(primaryKeyColumn))), 0) FROM \(info.table)").forEachRow { maxKey = $0.int64(at: 0) }
            if maxKey >= sequence.next {
                problems.append("entity \(info.name) has key \(maxKey), not below its sequence \(sequence.next)")
            }
        }
        for join in schema.joinTables {
            for (column, entity) in [("a", join.first.entity), ("b", join.second.entity)] {
                guard let info = schema.infos[entity] else { continue }
                var orphans: Int64 = 0
                try db.prepare("""
                    SELECT count(*) FROM \(quoted(join.name)) WHERE "\(column)" NOT IN (SELECT \(quoted(primaryKeyColumn)) FROM \(info.table))
                    """).forEachRow { orphans = $0.int64(at: 0) }
                if orphans > 0 { problems.append("join table \(join.name) has \(orphans) rows naming a deleted \(entity)") }
            }
        }
        return problems
    }
}
