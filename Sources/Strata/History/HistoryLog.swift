internal import Foundation
internal import StrataSQLite

/// The history's storage (see <doc:StoreLayout>): one `strata_history` row per commit, keyed by
/// the generation the commit made, and its `strata_history_change` rows. Written inside the
/// commit's transaction, so the log lists exactly the commits that happened.
enum HistoryLog {
    static let creationSQL = [
        """
        CREATE TABLE IF NOT EXISTS strata_history (
            token INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            kind TEXT NOT NULL,
            author TEXT,
            context TEXT,
            process TEXT NOT NULL,
            pid INTEGER NOT NULL,
            writer BLOB NOT NULL,
            nonce BLOB)
        """,
        """
        CREATE TABLE IF NOT EXISTS strata_history_change (
            token INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            entity TEXT NOT NULL,
            op TEXT NOT NULL,
            keys TEXT NOT NULL,
            data TEXT,
            PRIMARY KEY (token, seq)) WITHOUT ROWID
        """,
    ]

    /// Creates the tables where they are missing (a store made before 0.3.0); one look at the
    /// schema when they are there.
    static func createTables(_ db: Connection) throws {
        guard try !exists(db) else {
            // A 0.3.0 store's log has no lineage column: added, empty for its old records.
            if try !hasLineageColumn(db) { try db.execute("ALTER TABLE strata_history ADD COLUMN nonce BLOB") }
            return
        }
        for sql in creationSQL { try db.execute(sql) }
    }

    /// Whether the log has the lineage column (a 0.3.0 store opened read-only has not).
    static func hasLineageColumn(_ db: Connection) throws -> Bool {
        var found = false
        try db.prepare("PRAGMA table_info(strata_history)").forEachRow { if $0.string(at: 1) == "nonce" { found = true } }
        return found
    }

    /// The lineage (the commit's nonce) the history records at `token`; `nil` when no record is
    /// there (pruned, history off) or it predates the column.
    static func lineage(_ db: Connection, at token: Int64) throws -> Data? {
        let select: Statement
        do {
            select = try db.cachedStatement("SELECT nonce FROM strata_history WHERE token = ?")
        } catch let error as SQLiteError where error.message.contains("no such column") {
            // A read-only opening of a 0.3.0 store: the column is not there (it is added at a
            // writable opening), so no record names a lineage. Any other failure is thrown.
            return nil
        }
        try select.bind(token, at: 1)
        defer { select.reset() }
        guard try select.step(), !select.isNull(at: 0) else { return nil }
        return select.data(at: 0)
    }

    /// Whether the store has the tables (a store made before 0.3.0 gets them at its first
    /// writable opening).
    static func exists(_ db: Connection) throws -> Bool {
        // Both: a crash between the two CREATEs of an opening leaves one (made again next time).
        let statement = try db.cachedStatement(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('strata_history', 'strata_history_change')")
        defer { statement.reset() }
        return try statement.step() && statement.int64(at: 0) == 2
    }

    static let processName = ProcessInfo.processInfo.processName
    static let processID = ProcessInfo.processInfo.processIdentifier

    /// What one commit records, gathered while its rows are written.
    struct Record {
        var kind: HistoryTransaction.Kind
        var author: String?
        var context: String?
        var changes: [Entry] = []

        init(kind: HistoryTransaction.Kind, author: String?, context: String?) {
            self.kind = kind
            self.author = author
            self.context = context
        }

        struct Entry {
            var entity: String
            var op: HistoryChange.Kind
            var keys: [Int64]
            var data: String?
        }

        mutating func add(_ entity: String, _ op: HistoryChange.Kind, _ keys: [Int64], _ data: String? = nil) {
            guard !keys.isEmpty else { return }
            changes.append(Entry(entity: entity, op: op, keys: keys, data: data))
        }

    }

    /// Writes `record` as transaction `token`, inside the caller's transaction.
    /// A record's time is the clock's, but never before the newest record's: a clock that goes
    /// back (a board that boots at 1970, a wrong date set by hand) writes records no older than
    /// those before them, so that once it is right again, age pruning does not take the records
    /// it wrote meanwhile for decades old. `now`: the clock (a test's, else the system's).
    static func write(_ db: Connection, token: Int64, nonce: Data, record: Record, writer: Data, origin: String?,
                      now: Double = Date().timeIntervalSince1970) throws {
        try db.cachedStatement(
            "INSERT INTO strata_history (token, time, kind, author, context, process, pid, writer, nonce) "
                + "VALUES (?1, max(?2, coalesce((SELECT time FROM strata_history ORDER BY token DESC LIMIT 1), ?2)), ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
            .execute(.integer(token), .real(now), .text(record.kind.rawValue),
                     record.author.map(SQLiteValue.text) ?? .null, record.context.map(SQLiteValue.text) ?? .null,
                     .text(processName), .integer(Int64(processID)), .blob(writer), .blob(nonce))
        KillPoint.hit("history.transaction.written", in: origin)
        let insert = try db.cachedStatement("INSERT INTO strata_history_change (token, seq, entity, op, keys, data) VALUES (?, ?, ?, ?, ?, ?)")
        for (seq, entry) in record.changes.enumerated() {
            try insert.execute(.integer(token), .integer(Int64(seq)), .text(entry.entity), .text(entry.op.rawValue),
                               .text(encodeKeys(entry.keys)), entry.data.map(SQLiteValue.text) ?? .null)
            if seq == 0 { KillPoint.hit("history.change.written", in: origin) }
        }
        KillPoint.hit("history.written", in: origin)
    }

    /// Prunes what `options` does not keep, as of transaction `token` (run every 64th commit).
    static func prune(_ db: Connection, token: Int64, options: HistoryOptions) throws {
        var cutoff: Int64 = 0
        if let maximum = options.maximumTransactions { cutoff = max(cutoff, token - Int64(maximum)) }
        if let age = options.maximumAge {
            // Age is measured from the newest transaction's time, not the wall clock alone: a
            // clock that jumps (a board that boots at 1970, then sets the time) never makes the
            // whole log look old at once.
            let newest = try db.cachedStatement("SELECT time FROM strata_history ORDER BY token DESC LIMIT 1")
            let reference = try newest.step() ? newest.double(at: 0) : Date().timeIntervalSince1970
            newest.reset()
            let oldest = reference - Double(age.components.seconds) - Double(age.components.attoseconds) / 1e18
            // Oldest first: stops at the first transaction young enough (one row when nothing is due).
            let young = try db.cachedStatement("SELECT token FROM strata_history WHERE time >= ? ORDER BY token LIMIT 1")
            try young.bind(oldest, at: 1)
            let first = try young.step() ? young.int64(at: 0) : token + 1
            young.reset()
            cutoff = max(cutoff, first - 1)
        }
        guard cutoff > 0 else { return }
        try delete(db, through: cutoff)
    }

    /// Deletes transactions `...token`.
    /// Nothing a sync engine has not pushed yet goes (``StoreCoordinator/syncPushFloor(_:)``):
    /// local history is never pruned before it is pushed.
    static func delete(_ db: Connection, through token: Int64) throws {
        var token = token
        if let floor = try StoreCoordinator.syncPushFloor(db) { token = min(token, floor) }
        guard token > 0 else { return }
        try db.cachedStatement("DELETE FROM strata_history_change WHERE token <= ?").execute(.integer(token))
        try db.cachedStatement("DELETE FROM strata_history WHERE token <= ?").execute(.integer(token))
    }

    // MARK: Keys

    /// Keys as a JSON array, runs of consecutive keys as `[first, last]`: `[3,[10,14],20]` is
    /// 3, 10…14 and 20 (a batch insert of a million rows is one pair).
    static func encodeKeys(_ keys: [Int64]) -> String {
        let sorted = keys.count > 1 && !isAscending(keys) ? keys.sorted() : keys
        var text = "["
        text.reserveCapacity(8 * min(sorted.count, 4096))
        var index = 0
        var first = true
        // (String.count is O(n): a flag, not the text's length, says whether a comma is due.)
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count, sorted[end + 1] == sorted[end] + 1 { end += 1 }
            if !first { text += "," }
            first = false
            if end - index >= 2 {
                text += "["
                text += String(sorted[index])
                text += ","
                text += String(sorted[end])
                text += "]"
            } else {
                for i in index...end {
                    if i > index { text += "," }
                    text += String(sorted[i])
                }
            }
            index = end + 1
        }
        return text + "]"
    }

    private static func isAscending(_ keys: [Int64]) -> Bool {
        for i in 1..<keys.count where keys[i] <= keys[i - 1] { return false }
        return true
    }

    static func decodeKeys(_ text: String) throws -> [Int64] {
        var text = text
        return try text.withUTF8 { try decodeKeys($0) }
    }

    /// The keys of a record (its `keys` column's bytes, as the statement lends them).
    static func decodeKeys(_ bytes: UnsafeBufferPointer<UInt8>) throws -> [Int64] {
        var scanner = JSONScanner(bytes)
        do throws(JSONScanner.Failure) {
            scanner.skipWhitespace()
            let keys = try readKeys(&scanner)
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { throw scanner.failure("text after the keys") }
            return keys
        } catch {
            throw HistoryJSON.Failure(reason: "\(error.reason) at \(error.position)")
        }
    }

    /// A key list at the scanner's position: integers and `[first, last]` ranges.
    static func readKeys(_ scanner: inout JSONScanner) throws(JSONScanner.Failure) -> [Int64] {
        guard scanner.next == UInt8(ascii: "[") else { throw scanner.failure("keys are not an array") }
        var keys: [Int64] = []
        try scanner.array { scanner throws(JSONScanner.Failure) in
            if scanner.next == UInt8(ascii: "[") {
                var pair: [Int64] = []
                try scanner.array { scanner throws(JSONScanner.Failure) in
                    guard pair.count < 2 else { throw scanner.failure("a key range is not two ascending integers") }
                    pair.append(try scanner.integer())
                }
                guard pair.count == 2, pair[0] <= pair[1] else { throw scanner.failure("a key range is not two ascending integers") }
                keys.append(contentsOf: pair[0]...pair[1])
            } else {
                guard let next = scanner.next, next == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) else {
                    throw scanner.failure("a key is neither an integer nor a range")
                }
                keys.append(try scanner.integer())
            }
        }
        return keys
    }

    // MARK: Values

    /// An attribute value in the history's JSON (the column's form: dates in seconds since
    /// 2001-01-01, data in base64, UUIDs, URLs and decimals as text).
    static func encode(_ value: AttributeValue?) -> String {
        guard let value else { return "null" }
        switch value {
        case .int16(let v): return String(v)
        case .int32(let v): return String(v)
        case .int64(let v): return String(v)
        case .double(let v): return number(v)
        case .float(let v): return number(Double(v))
        case .bool(let v): return v ? "true" : "false"
        case .string(let v): return quote(v)
        case .date(let v): return number(v.timeIntervalSinceReferenceDate)
        case .binary(let v): return quote(v.base64EncodedString())
        case .uuid(let v): return quote(v.uuidString)
        case .url(let v): return quote(v.absoluteString)
        case .decimal(let v): return quote(NSDecimalNumber(decimal: v).description(withLocale: Locale(identifier: "en_US_POSIX")))
        }
    }

    private static func number(_ value: Double) -> String {
        if value.isNaN { return "\"nan\"" }
        if value.isInfinite { return value > 0 ? "\"inf\"" : "\"-inf\"" }
        return "\(value)"
    }

    static func quote(_ text: String) -> String {
        quotedString(text, escapingDelete: false) { String(format: "\\u%04x", $0) }
    }

    static func decode(_ json: HistoryJSON, as type: AttributeType) throws -> AttributeValue? {
        func fail() -> HistoryJSON.Failure { HistoryJSON.Failure(reason: "\(json) is not a \(type.rawValue) value") }
        func double() throws -> Double {
            switch json {
            case .integer(let v): return Double(v)
            case .double(let v): return v
            case .string("nan"): return .nan
            case .string("inf"): return .infinity
            case .string("-inf"): return -.infinity
            default: throw fail()
            }
        }
        func string() throws -> String { if case .string(let v) = json { return v }; throw fail() }
        func integer() throws -> Int64 { if case .integer(let v) = json { return v }; throw fail() }
        if case .null = json { return nil }
        switch type {
        case .int16: return .int16(Int16(truncatingIfNeeded: try integer()))
        case .int32: return .int32(Int32(truncatingIfNeeded: try integer()))
        case .int64: return .int64(try integer())
        case .double: return .double(try double())
        case .float: return .float(Float(try double()))
        case .bool:
            if case .bool(let v) = json { return .bool(v) }
            throw fail()
        case .string: return .string(try string())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try double()))
        case .binary:
            guard let data = Data(base64Encoded: try string()) else { throw fail() }
            return .binary(data)
        case .uuid:
            guard let uuid = UUID(uuidString: try string()) else { throw fail() }
            return .uuid(uuid)
        case .url:
            guard let url = URL(string: try string()) else { throw fail() }
            return .url(url)
        case .decimal:
            guard let decimal = Decimal(string: try string(), locale: Locale(identifier: "en_US_POSIX")) else { throw fail() }
            return .decimal(decimal)
        }
    }

    /// An update's data: `{"set":{…},"was":{…}}` (new values of what changed; what the changed
    /// to-ones named before). `nil` when nothing but the version changed.
    static func updateData(_ info: EntityInfo, new: RowSnapshot, old: RowSnapshot) -> String? {
        var set: [String] = []
        var was: [String] = []
        for i in info.attributes.indices where new.attributes[i] != old.attributes[i] {
            set.append(quote(info.attributes[i].name) + ":" + encode(new.attributes[i]))
        }
        for i in info.toOnes.indices where new.toOnes[i] != old.toOnes[i] {
            let name = quote(info.toOnes[i].name)
            set.append(name + ":" + (new.toOnes[i].map { String($0) } ?? "null"))
            was.append(name + ":" + (old.toOnes[i].map { String($0) } ?? "null"))
        }
        guard !set.isEmpty else { return nil }
        var text = "{\"set\":{" + set.joined(separator: ",") + "}"
        if !was.isEmpty { text += ",\"was\":{" + was.joined(separator: ",") + "}" }
        return text + "}"
    }

    /// A delete's data: `{"kept":{…}}`, the attributes marked to be kept; `nil` when none is.
    static func deleteData(_ info: EntityInfo, old: RowSnapshot) -> String? {
        var kept: [String] = []
        for (i, attribute) in info.attributes.enumerated() where attribute.preservesValueOnDeletion {
            kept.append(quote(attribute.name) + ":" + encode(old.attributes[i]))
        }
        return kept.isEmpty ? nil : "{\"kept\":{" + kept.joined(separator: ",") + "}}"
    }

    /// Whether a delete of `info` records per-row data.
    static func keepsValues(_ info: EntityInfo) -> Bool { info.attributes.contains(where: \.preservesValueOnDeletion) }
}

/// A small JSON reader for the history's own text (no Foundation round trip per change).
enum HistoryJSON: Equatable, CustomStringConvertible {
    case null, bool(Bool), integer(Int64), double(Double), string(String)
    case array([HistoryJSON]), object([String: HistoryJSON])

    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { "unreadable history record: \(reason)" }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let v): "\(v)"
        case .integer(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): HistoryLog.quote(v)
        case .array(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
        case .object(let fields): "{" + fields.sorted { $0.key < $1.key }.map { HistoryLog.quote($0.key) + ":" + $0.value.description }.joined(separator: ",") + "}"
        }
    }

    static func parse(_ text: String) throws -> HistoryJSON {
        var text = text
        return try text.withUTF8 { bytes in
            var scanner = JSONScanner(bytes)
            return try parse(&scanner)
        }
    }

    static func parse(_ scanner: inout JSONScanner) throws -> HistoryJSON {
        do throws(JSONScanner.Failure) {
            let value = try read(&scanner, depth: 0)
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { throw scanner.failure("text after the value") }
            return value
        } catch {
            throw Failure(reason: "\(error.reason) at \(error.position)")
        }
    }

    /// One value on the shared scanner (``JSONScanner``); a record nests three levels at most.
    static func read(_ scanner: inout JSONScanner, depth: Int) throws(JSONScanner.Failure) -> HistoryJSON {
        scanner.skipWhitespace()
        guard depth <= 32 else { throw scanner.failure("nested too deep") }
        switch scanner.next {
        case UInt8(ascii: "[")?:
            var items: [HistoryJSON] = []
            try scanner.array { scanner throws(JSONScanner.Failure) in items.append(try read(&scanner, depth: depth + 1)) }
            return .array(items)
        case UInt8(ascii: "{")?:
            var fields: [String: HistoryJSON] = [:]
            try scanner.object { scanner, key throws(JSONScanner.Failure) in fields[key] = try read(&scanner, depth: depth + 1) }
            return .object(fields)
        case UInt8(ascii: "\"")?:
            return .string(try scanner.string())
        case UInt8(ascii: "t")?: try scanner.literal("true"); return .bool(true)
        case UInt8(ascii: "f")?: try scanner.literal("false"); return .bool(false)
        case UInt8(ascii: "n")?: try scanner.literal("null"); return .null
        case nil:
            throw scanner.failure("unexpected end")
        default:
            let start = scanner.position
            let (text, isInteger) = try scanner.number()
            let string = String(decoding: text, as: UTF8.self)
            if isInteger, let value = Int64(string) { return .integer(value) }
            guard let value = Double(string) else { throw JSONScanner.Failure(reason: "not a number", position: start) }
            return .double(value)
        }
    }
}
