internal import Foundation
internal import StrataSQLite

/// One run of ``StoreCoordinator/importFile(at:options:progress:)``: the file read batch by
/// batch, each batch an upsert whose transaction also holds the import's checkpoint.
struct ImportJob {
    /// Where a column's value goes.
    enum Target {
        case attribute(index: Int)
        /// A to-one, found by `attribute` of its destination.
        case toOne(index: Int, destination: EntityInfo, attribute: Int)
    }

    struct Column {
        let name: String
        let target: Target
        /// The property's name (what a validation failure names).
        let property: String
        /// The type its values are parsed as (a to-one's: its destination attribute's).
        let type: AttributeType
    }

    let coordinator: StoreCoordinator
    let url: URL
    let options: ImportOptions
    let info: EntityInfo
    let format: ImportOptions.Format
    let key: [String]
    let identity: String
    let path: String
    private let dates: DateParser
    /// `--null`'s bytes (a CSV field equal to them is no value).
    private let nullBytes: [UInt8]?
    /// JSON Lines: the line just read (a rejected row's text).
    private var lastJSONLine: String?
    /// Each to-one's destinations by value, read once each.
    private var destinations: [Int: [AttributeValue: Int64]] = [:]

    init(coordinator: StoreCoordinator, url: URL, options: ImportOptions) throws {
        guard let info = coordinator.model.schema.infos[options.entity] else {
            throw ImportError(message: "the store's model has no entity \(options.entity) (it has \(coordinator.model.entities.map(\.name).sorted().joined(separator: ", ")))")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw ImportError(message: "\(url.path): no such file")
        }
        guard options.batchSize >= 1 else { throw ImportError(message: "the batch size must be at least 1 (it is \(options.batchSize))") }
        let key = options.key ?? info.entity.uniqueKeys.first
        guard let key, !key.isEmpty else {
            throw ImportError(message: "\(info.name) has no unique key to match rows by: declare one (@Attribute(.unique), #Unique) or name one (--key)")
        }
        for name in key where info.slot(name) == nil || { if case .toMany? = info.slot(name) { true } else { false } }() {
            throw ImportError(message: "key \(name) is not an attribute or to-one of \(info.name)")
        }
        self.coordinator = coordinator
        self.url = url
        self.options = options
        self.info = info
        self.key = key
        format = options.format ?? (["jsonl", "ndjson"].contains(url.pathExtension.lowercased()) ? .jsonLines : .csv)
        path = url.standardizedFileURL.path
        identity = try ImportJob.identity(of: url)
        dates = DateParser(format: options.dateFormat)
        nullBytes = options.nullText.map { Array($0.utf8) }
    }

    /// Size, modification time and a digest of the first 64 KiB: a file changed since the last
    /// run (the library grew, was edited) is read again from its start.
    static func identity(of url: URL) throws -> String {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let head = try handle.read(upToCount: 1 << 16) ?? Data()
        return "\(size)-\(modified)-" + SHA256.hex(Array(head)).prefix(32)
    }

    // MARK: The run

    struct Checkpoint {
        var identity: String
        var offset: Int64
        var line: Int
        var rejectsOffset: Int64
        var complete: Bool
    }

    mutating func run(progress: ((ImportProgress) -> Void)?) throws -> ImportSummary {
        var summary = ImportSummary()
        let total = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        let stored = try readCheckpoint().flatMap { $0.identity == identity && !options.restart ? $0 : nil }
        if let stored, stored.complete {
            summary.alreadyComplete = true
            return summary
        }
        // The header first (CSV), then on from the checkpoint, or from the first record.
        var position = Checkpoint(identity: identity, offset: 0, line: 1, rejectsOffset: 0, complete: false)
        var rows = RowPlan()
        if format == .csv {
            var reader = try RecordReader(url: url, format: .csv)
            defer { reader.close() }
            guard let first = try reader.next() else { return summary }
            for column in try plan(first.fields.map { $0 ?? "" }, ignored: &summary.ignoredColumns) {
                rows.fieldColumn.append(column.map { _ in rows.active.count })
                if let column { rows.active.append(column) }
            }
            position.offset = first.end
            position.line = reader.line
        }
        if let stored {
            position = stored
            summary.resumed = true
        }
        summary.startLine = position.line
        var rejects = try RejectsFile(url: options.rejects, keepingBytes: summary.resumed ? position.rejectsOffset : 0)
        var reader = try RecordReader(url: url, format: format, offset: position.offset, line: position.line)
        defer { reader.close() }
        while true {
            let batch = try runBatch(&reader, &rows, &rejects, &summary)
            if batch.read == 0 { break }
            summary.rows += batch.read
            position = batch.next
            progress?(ImportProgress(rows: summary.rows, bytes: position.offset, totalBytes: total))
        }
        return summary
    }

    /// The columns a run's rows give values for, in one array (a row's values are by index).
    /// CSV: the header's, fixed; JSON Lines: each member as first met.
    struct RowPlan {
        var active: [Column] = []
        /// CSV: each field's column in `active` (nil: ignored).
        var fieldColumn: [Int?] = []
        /// JSON Lines: each member's column.
        var jsonColumns: [String: Int] = [:]
        var row = ImportRow()
    }

    /// What one batch did.
    private struct Batch {
        var read = 0
        var next: Checkpoint
    }

    /// Reads up to a batch of rows and writes them in one transaction, with the checkpoint
    /// (where the batch ended) and the batch's rejects; a batch that changes nothing commits
    /// nothing (its rejects are still written).
    private mutating func runBatch(_ reader: inout RecordReader, _ plan: inout RowPlan, _ rejects: inout RejectsFile,
                                   _ summary: inout ImportSummary) throws -> Batch {
        let info = self.info
        let coordinator = self.coordinator
        var pending: [(ImportRejection, [String?])] = []
        var batch = Batch(next: Checkpoint(identity: identity, offset: reader.offset, line: reader.line, rejectsOffset: 0, complete: false))
        var outcome: (inserted: Int, updated: Int, unchanged: Int, generation: Int64?) = (0, 0, 0, nil)
        try coordinator.withConnection { db in
            outcome = try db.transaction(.immediate) {
                KillPoint.hit("transaction.begun", in: StoreCoordinator.batchOrigin)
                var writer: ImportWriter?
                var writerColumns = -1
                while batch.read < options.batchSize {
                    guard let line = try read(&reader, &plan, db: db, rejected: &pending, summary: &summary) else { break }
                    batch.read += 1
                    guard line >= 0 else { continue }
                    // A JSON Lines row may bring a new column: the slots' columns are planned again.
                    if writerColumns != plan.active.count {
                        var slotColumn = [Int](repeating: -1, count: info.attributes.count + info.toOnes.count)
                        for (index, column) in plan.active.enumerated() {
                            switch column.target {
                            case .attribute(let slot): slotColumn[slot] = index
                            case .toOne(let slot, _, _): slotColumn[info.attributes.count + slot] = index
                            }
                        }
                        if writer == nil {
                            writer = try ImportWriter(db: db, info: info, matchKey: key, slotColumn: slotColumn,
                                                      firstKey: try coordinator.firstFreeKey(db, info),
                                                      recordsHistory: coordinator.historyOptions.isEnabled)
                        } else {
                            writer!.slotColumn = slotColumn
                        }
                        writerColumns = plan.active.count
                    }
                    if case .rejected(let failures) = try writer!.write(plan.row) {
                        let rejection = self.rejection(failures[0], line: line, plan.active)
                        if options.strict { throw rejection }
                        pending.append((rejection, rawFields(reader)))
                    }
                }
                batch.next = Checkpoint(identity: identity, offset: reader.offset, line: reader.line, rejectsOffset: 0, complete: try reader.peekAtEnd())
                guard let writer, !writer.insertedKeys.isEmpty || !writer.updatedKeys.isEmpty else {
                    return (0, 0, writer?.unchanged ?? 0, nil)
                }
                // No dangling key: each distinct destination looked up once.
                for (index, relationship) in info.toOnes.enumerated() where !writer.destinations[index].isEmpty {
                    let missing = try coordinator.missingDestinations(db, info, index, writer.destinations[index])
                    if missing > 0 { throw BatchError.missingDestinations(entity: info.name, key: relationship.name, count: missing) }
                }
                if !writer.insertedKeys.isEmpty {
                    try db.cachedStatement("UPDATE strata_entity SET next_pk = ? WHERE name = ?").execute(.integer(writer.nextKey), .text(info.name))
                }
                // The batch's rejects are written with its checkpoint, inside its transaction (a
                // kill before the commit leaves them to be cut off and written again by the next run).
                batch.next.rejectsOffset = try rejects.write(pending)
                try writeCheckpoint(db, batch.next)
                KillPoint.hit("import.checkpoint.written")
                KillPoint.hit("rows.written", in: StoreCoordinator.batchOrigin)
                // The inserts first: a row inserted by this batch and then written over by a
                // later row of it reads, in the history, as inserted, then updated.
                var history = HistoryLog.Record(kind: .batchInsert, author: coordinator.transactionAuthor, context: nil)
                if coordinator.historyOptions.isEnabled {
                    history.add(info.name, .insert, writer.insertedKeys)
                    for (key, data) in writer.updateRecords { history.add(info.name, .update, [key], data) }
                }
                let (generation, _) = try coordinator.stampCommit(db, touching: [info.name], origin: StoreCoordinator.batchOrigin, history: history)
                return (writer.insertedKeys.count, writer.updatedKeys.count, writer.unchanged, generation)
            }
            if let generation = outcome.generation {
                coordinator.finishBatch(touched: [info.name], deleted: [], generation: generation)
            }
        }
        if outcome.generation == nil {
            _ = try rejects.write(pending)
        } else {
            summary.commits += 1
        }
        summary.inserted += outcome.inserted
        summary.updated += outcome.updated
        summary.unchanged += outcome.unchanged
        summary.rejected += pending.count
        return batch
    }

    /// The fields of the record just read, as the rejects file writes them.
    private func rawFields(_ reader: RecordReader) -> [String?] {
        format == .csv ? reader.fieldTexts : lastJSONLine.map { [$0] } ?? []
    }

    private func rejection(_ failure: ValidationFailure, line: Int, _ active: [Column]) -> ImportRejection {
        let column = active.first { $0.property == failure.key }?.name ?? failure.key
        return ImportRejection(line: line, column: column, reason: "\(failure.rule.rawValue): \(failure.message)")
    }

    /// Reads the next record into `plan.row`: its line, -1 when it was rejected (appended to
    /// `rejected`; thrown under strict), nil at the end of the file.
    private mutating func read(_ reader: inout RecordReader, _ plan: inout RowPlan, db: Connection,
                               rejected: inout [(ImportRejection, [String?])], summary: inout ImportSummary) throws -> Int? {
        let line: Int
        do {
            if format == .csv {
                guard try reader.nextFields() else { return nil }
                line = reader.recordLine
                try parseCSV(reader, &plan)
            } else {
                guard let record = try reader.next() else { return nil }
                line = record.line
                lastJSONLine = record.fields[0]
                try parseJSON(record, &plan, ignored: &summary.ignoredColumns)
            }
            try resolveDestinations(&plan, line: line, db: db)
        } catch let rejection as ImportRejection {
            if options.strict { throw rejection }
            rejected.append((rejection, rawFields(reader)))
            return -1
        }
        return line
    }

    // MARK: Columns and values

    /// The header's columns: mapped, or named after a property; the others ignored.
    private func plan(_ header: [String], ignored: inout [String]) throws -> [Column?] {
        for (column, _) in options.mapping where !header.contains(column) && format == .csv {
            throw ImportError(message: "--map names column \(column), which the header does not have (it has \(header.joined(separator: ", ")))")
        }
        return try header.map { name in
            guard let column = try column(for: name) else {
                ignored.append(name)
                return nil
            }
            return column
        }
    }

    private func column(for name: String) throws -> Column? {
        let target = options.mapping[name] ?? name
        let parts = target.split(separator: ".", maxSplits: 1).map(String.init)
        switch info.slot(parts[0]) {
        case .attribute(let index)? where parts.count == 1:
            return Column(name: name, target: .attribute(index: index), property: parts[0], type: info.attributeTypes[index])
        case .toOne(let index)?:
            guard let destination = coordinator.model.schema.infos[info.toOnes[index].destination] else { return nil }
            let attributeName = parts.count == 2 ? parts[1] : destination.entity.uniqueKeys.first(where: { $0.count == 1 })?.first
            guard let attributeName, case .attribute(let attribute)? = destination.slot(attributeName) else {
                throw ImportError(message: "column \(name) maps to to-one \(info.name).\(parts[0]): name the \(destination.name) attribute that finds its row (--map \(name)=\(parts[0]).ATTRIBUTE)")
            }
            return Column(name: name, target: .toOne(index: index, destination: destination, attribute: attribute), property: parts[0],
                          type: destination.attributeTypes[attribute])
        default:
            if options.mapping[name] != nil {
                throw ImportError(message: "--map \(name)=\(target): \(info.name) has no attribute or to-one \(target)")
            }
            return nil
        }
    }

    /// The record's fields parsed by their columns' types into `plan.row`, from the reader's bytes.
    private func parseCSV(_ reader: RecordReader, _ plan: inout RowPlan) throws {
        let count = reader.fieldStarts.count
        guard count == plan.fieldColumn.count else {
            throw ImportRejection(line: reader.recordLine, column: nil, reason: "\(count) fields, the header has \(plan.fieldColumn.count)")
        }
        plan.row.reset(count: plan.active.count)
        for field in 0..<count {
            guard let position = plan.fieldColumn[field] else { continue }
            let bytes = reader.field(field)
            let type = plan.active[position].type
            if !plan.row.parse(bytes, quoted: reader.fieldQuoted[field], as: type, nullText: nullBytes, dates: dates, into: position) {
                throw ImportRejection(line: reader.recordLine, column: plan.active[position].name,
                                      reason: "\(String(decoding: bytes, as: UTF8.self).debugDescription) is not a \(type.rawValue)")
            }
        }
    }

    private func parseJSON(_ record: RecordReader.Record, _ plan: inout RowPlan, ignored: inout [String]) throws {
        let text = record.fields[0] ?? ""
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            throw ImportRejection(line: record.line, column: nil, reason: "not JSON: \(error.localizedDescription)")
        }
        guard let object = parsed as? [String: Any] else {
            throw ImportRejection(line: record.line, column: nil, reason: "not a JSON object")
        }
        var found: [(Int, Any)] = []
        for (name, member) in object.sorted(by: { $0.key < $1.key }) {
            if plan.jsonColumns[name] == nil {
                guard let column = try column(for: name) else {
                    if !ignored.contains(name) { ignored.append(name) }
                    continue
                }
                plan.jsonColumns[name] = plan.active.count
                plan.active.append(column)
            }
            guard let position = plan.jsonColumns[name] else { continue }
            found.append((position, member))
        }
        plan.row.reset(count: plan.active.count)
        for (position, member) in found {
            let field: String? = switch member {
            case is NSNull: nil
            case let text as String: text
            case let number as NSNumber: number.stringValue
            default: "\(member)"
            }
            plan.row.set(try value(field, plan.active[position], line: record.line), position)
        }
    }

    private func value(_ field: String?, _ column: Column, line: Int) throws -> AttributeValue? {
        guard let field, field != options.nullText else { return nil }
        if field.isEmpty, column.type != .string { return nil }
        guard let value = ImportJob.parse(field, as: column.type, dates: dates) else {
            throw ImportRejection(line: line, column: column.name, reason: "\(field.debugDescription) is not a \(column.type.rawValue)")
        }
        return value
    }

    static func parse(_ text: String, as type: AttributeType, dates: DateParser) -> AttributeValue? {
        // As it is first; trimmed only when that fails and it has a blank at either end
        // (Foundation's trim is slow on Linux, and a check of both ends before every value was
        // 2.6% of an import's instructions: `utf8.last` is an unspecialised generic call).
        if let value = parseUntrimmed(text, as: type, dates: dates) { return value }
        guard type != .string, let first = text.utf8.first, let last = text.utf8.last,
              first == 32 || first == 9 || last == 32 || last == 9 else { return nil }
        return parseUntrimmed(text.trimmingCharacters(in: .whitespaces), as: type, dates: dates)
    }

    private static func parseUntrimmed(_ text: String, as type: AttributeType, dates: DateParser) -> AttributeValue? {
        switch type {
        case .string: return .string(text)
        case .int16: return Int16(text).map(AttributeValue.int16)
        case .int32: return Int32(text).map(AttributeValue.int32)
        case .int64: return Int64(text).map(AttributeValue.int64)
        case .double: return Double(text).flatMap { $0.isNaN ? nil : .double($0) }
        case .float: return Float(text).flatMap { $0.isNaN ? nil : .float($0) }
        case .bool:
            switch text.lowercased() {
            case "true", "1", "yes", "y", "t": return .bool(true)
            case "false", "0", "no", "n", "f": return .bool(false)
            default: return nil
            }
        case .date: return dates.parse(text).map(AttributeValue.date)
        case .binary: return Data(base64Encoded: text).map(AttributeValue.binary)
        case .uuid: return UUID(uuidString: text).map(AttributeValue.uuid)
        case .url: return URL(string: text).map(AttributeValue.url)
        case .decimal: return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map(AttributeValue.decimal)
        }
    }

    /// The row's to-one values turned into their destinations' keys (read once per value, by
    /// the batch's own connection); a value no row has rejects the row.
    private mutating func resolveDestinations(_ plan: inout RowPlan, line: Int, db: Connection) throws {
        for (position, column) in plan.active.enumerated() {
            guard case .toOne(let index, let destination, let attribute) = column.target,
                  let value = plan.row.value(position, as: column.type) else { continue }
            if let found = destinations[index]?[value] {
                plan.row.setInteger(found, position)
                continue
            }
            let select = try db.cachedStatement("SELECT \(quoted(primaryKeyColumn)) FROM \(destination.table) WHERE \(quoted(destination.attributes[attribute].name)) = ? LIMIT 1")
            try RowSnapshot.bind(value, to: select, at: 1)
            defer { select.reset() }
            guard try select.step() else {
                throw ImportRejection(line: line, column: column.name,
                                      reason: "no \(destination.name) has \(destination.attributes[attribute].name) = \(value.plainText)")
            }
            let found = select.int64(at: 0)
            destinations[index, default: [:]][value] = found
            plan.row.setInteger(found, position)
        }
    }

    // MARK: The checkpoint

    private func readCheckpoint() throws -> Checkpoint? {
        try coordinator.withReader { db in
            let exists = try db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'strata_import'")
            guard try exists.step() else { return nil }
            let select = try db.prepare("SELECT identity, offset, line, rejects_offset, complete FROM strata_import WHERE entity = ? AND path = ?")
            try select.bind(info.name, at: 1)
            try select.bind(path, at: 2)
            guard try select.step() else { return nil }
            return Checkpoint(identity: select.string(at: 0), offset: select.int64(at: 1), line: Int(select.int64(at: 2)),
                              rejectsOffset: select.int64(at: 3), complete: select.int64(at: 4) != 0)
        }
    }

    func writeCheckpoint(_ db: Connection, _ checkpoint: Checkpoint) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS strata_import (entity TEXT NOT NULL, path TEXT NOT NULL, identity TEXT NOT NULL, \
            offset INTEGER NOT NULL, line INTEGER NOT NULL, rejects_offset INTEGER NOT NULL, complete INTEGER NOT NULL, \
            PRIMARY KEY (entity, path))
            """)
        try db.cachedStatement("INSERT OR REPLACE INTO strata_import (entity, path, identity, offset, line, rejects_offset, complete) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(.text(info.name), .text(path), .text(checkpoint.identity), .integer(checkpoint.offset), .integer(Int64(checkpoint.line)),
                     .integer(checkpoint.rejectsOffset), .integer(checkpoint.complete ? 1 : 0))
    }
}
