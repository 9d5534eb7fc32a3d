import ArgumentParser
import Dispatch
import Foundation
import Strata

/// `strata history STORE [--since TOKEN] [--author A] [--json]`: ``StoreCoordinator/history(after:author:limit:includingRowValues:)``.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print a store's history: its commits, with the rows each changed.",
        discussion: """
            Opens the store read-only with the model it holds and prints the transactions its \
            history keeps after --since (StoreCoordinator.history(after:author:)), oldest first: \
            one line per commit (token, date, kind, author, context, process, number of changes), \
            then one indented line per changed row (an update's new values, a delete's preserved \
            ones). --json prints one JSON object per commit per line (JSON lines). A store whose \
            history was never kept (made by Strata 0.2.0) prints nothing.

            Example:
              strata history /tmp/goods.sqlite
              strata history /tmp/goods.sqlite --since 41 --author importer
              strata history /tmp/goods.sqlite --json | jq -c '.changes[] | select(.kind == "delete")'
            """
    )

    @OptionGroup var location: StoreArgument
    @Option(help: ArgumentHelp("Only the commits after this token (a generation; default: every one kept).", valueName: "token"))
    var since: Int64?
    @Option(help: ArgumentHelp("Only the commits recorded with this transaction author.", valueName: "author"))
    var author: String?
    @Flag(help: "Print JSON lines (one object per commit) instead of text.")
    var json = false

    func validate() throws {
        if let since, since < 0 { throw ValidationError("--since must be a generation (0 or more), not \(since)") }
    }

    func run() throws {
        let reader = try HistoryReader(location, following: false)
        defer { reader.coordinator.close() }
        let coordinator = reader.coordinator
        let after = since.map { HistoryToken(store: coordinator.storeUUID, generation: $0) }
        let transactions: [HistoryTransaction]
        do {
            transactions = try coordinator.history(after: after, author: author)
        } catch HistoryError.expired(_, oldestKept: nil) {
            // Nothing of the history is kept after --since (a store that keeps none, as 0.2.0
            // made them): nothing to print. A log that was pruned past --since is an error.
            transactions = []
        }
        try reader.print(transactions, json: json)
    }
}

/// `strata watch STORE [--json]`: each commit as it lands, until interrupted.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print each commit to a store as it lands, until interrupted.",
        discussion: """
            Opens the store read-only (it never writes) and follows the commits other \
            connections make, printing each as `strata history` does (--json: JSON lines), and \
            flushing standard output after each. Prints nothing at start; SIGINT or SIGTERM ends \
            it with exit status 0.

            Example:
              strata watch /tmp/goods.sqlite
              strata watch /tmp/goods.sqlite --json | jq -c '{token, author, changes: (.changes | length)}'
            """
    )

    @OptionGroup var location: StoreArgument
    @Flag(help: "Print JSON lines (one object per commit) instead of text.")
    var json = false

    func run() throws {
        // The signals end the loop below (the store is closed, output flushed), not the process.
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        let reader = try HistoryReader(location, following: true)
        let coordinator = reader.coordinator
        defer { coordinator.close() }
        var last = try coordinator.currentHistoryToken()
        var tick = 0
        while stop.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            tick += 1
            // The follower moves the generation when another connection commits; once a second
            // the store's own is read too, in case a notice was missed.
            var seen = coordinator.externalChangeStatistics.generation
            if tick % 50 == 0 { seen = max(seen, try coordinator.currentHistoryToken().generation) }
            guard seen > last.generation else { continue }
            let transactions: [HistoryTransaction]
            do {
                transactions = try coordinator.history(after: last)
            } catch HistoryError.tokenOfAnotherStore, HistoryError.tokenAheadOfStore, HistoryError.expired {
                // The store was replaced or restored, or commits were made without history (or
                // pruned before this read them): follow from its current commit.
                last = try coordinator.currentHistoryToken()
                continue
            }
            try reader.print(transactions, json: json)
            let newest = transactions.last?.token.generation ?? last.generation
            last = HistoryToken(store: last.store, generation: max(newest, seen))
        }
    }
}

/// A read-only coordinator on STORE with the model the store holds, and the output of history.
struct HistoryReader {
    let coordinator: StoreCoordinator
    let model: Model

    /// Opens STORE read-only (a store whose history was never kept, as Strata 0.2.0 made
    /// them, opens too: its history is empty).
    init(_ location: StoreArgument, following: Bool) throws {
        let inspector = try location.inspector()
        _ = try inspector.metadata()   // rejects a format this Strata can't read
        model = try inspector.model()
        var options = StoreOptions()
        options.readOnly = true
        options.history.followsOtherConnections = following
        if following { options.history.pollInterval = .milliseconds(100) }
        coordinator = try StoreCoordinator(model: model, url: inspector.url, options: options)
    }

    /// Prints `transactions` (text or JSON lines) and flushes standard output.
    func print(_ transactions: [HistoryTransaction], json: Bool) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            for transaction in transactions {
                Swift.print(String(decoding: try encoder.encode(HistoryJSON.Transaction(transaction, model: model)), as: UTF8.self))
            }
        } else {
            for transaction in transactions {
                for line in HistoryText.lines(transaction, model: model) { Swift.print(line) }
            }
        }
        fflush(nil)   // a reader of the pipe sees each commit at once
    }
}

/// The text form of a transaction.
enum HistoryText {
    /// `142  2026-11-28T11:04:20Z  save  author=importer  context=background  process=Foo[1234]  3 changes`,
    /// then one indented line per change.
    static func lines(_ transaction: HistoryTransaction, model: Model) -> [String] {
        let head = ["\(transaction.token.generation)", HistoryValues.date(transaction.date), transaction.kind.rawValue,
                    "author=\(transaction.author ?? "-")", "context=\(transaction.contextName ?? "-")",
                    "process=\(transaction.processName)[\(transaction.processID)]",
                    Format.count(transaction.changes.count, "change")].joined(separator: "  ")
        return [head] + transaction.changes.map { "  " + line($0, model: model) }
    }

    /// `update Book/3 title="Dune" pages=256 shelf=Shelf/2 (was Shelf/1) tags+=[Tag/1] tags-=[Tag/4]`,
    /// `delete Book/9 kept isbn="978-0"`.
    static func line(_ change: HistoryChange, model: Model) -> String {
        var parts = [change.kind.rawValue, change.objectID.description]
        let entity = model.entity(named: change.objectID.entityName)
        for key in orderedKeys(change, entity: entity) {
            if let value = change.attributes[key] { parts.append("\(key)=\(HistoryValues.text(value))") }
            if let target = change.toOnes[key] {
                var part = "\(key)=\(target?.description ?? "nil")"
                if let previous = change.previousToOnes[key] { part += " (was \(previous?.description ?? "nil"))" }
                parts.append(part)
            }
            if let added = change.addedMembers[key], !added.isEmpty { parts.append("\(key)+=[\(list(added))]") }
            if let removed = change.removedMembers[key], !removed.isEmpty { parts.append("\(key)-=[\(list(removed))]") }
        }
        if !change.preservedValues.isEmpty {
            parts.append("kept")
            for key in ordered(Array(change.preservedValues.keys), entity: entity) {
                parts.append("\(key)=\(HistoryValues.text(change.preservedValues[key] ?? nil))")
            }
        }
        return parts.joined(separator: " ")
    }

    private static func list(_ ids: [ObjectID]) -> String { ids.map(\.description).joined(separator: ", ") }

    private static func orderedKeys(_ change: HistoryChange, entity: Entity?) -> [String] {
        ordered(change.changedKeys, entity: entity)
    }

    /// `keys` in the entity's order (attributes, then relationships), any others after, sorted.
    static func ordered(_ keys: [String], entity: Entity?) -> [String] {
        let order = (entity?.attributes.map(\.name) ?? []) + (entity?.relationships.map(\.name) ?? [])
        let wanted = Set(keys)
        let known = order.filter { wanted.contains($0) }
        return known + wanted.subtracting(known).sorted()
    }
}

/// Attribute values and dates, as text and as JSON.
enum HistoryValues {
    /// ISO 8601 in UTC, whole seconds: `2026-11-28T11:04:20Z`.
    static func date(_ date: Date) -> String { date.formatted(.iso8601) }

    /// ISO 8601 in UTC, with milliseconds when the date has a fraction of a second.
    static func valueDate(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        if seconds == seconds.rounded(.down) { return date.formatted(.iso8601) }
        return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `"Dune"` (quoted, escaped), `256`, `true`, `2026-11-28T11:04:20Z`, `<12 bytes>`, `nil`.
    static func text(_ value: AttributeValue?) -> String {
        guard let value else { return "nil" }
        switch value {
        case .int16(let v): return "\(v)"
        case .int32(let v): return "\(v)"
        case .int64(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .float(let v): return "\(v)"
        case .bool(let v): return "\(v)"
        case .string(let v): return quoted(v)
        case .date(let v): return valueDate(v)
        case .binary(let v): return "<\(Format.count(v.count, "byte"))>"
        case .uuid(let v): return v.uuidString
        case .url(let v): return "<\(v.absoluteString)>"
        case .decimal(let v): return "\(v)"
        }
    }

    /// `s` in double quotes, with `\`, `"` and control characters escaped as in JSON.
    static func quoted(_ s: String) -> String {
        var result = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// The JSON form of a transaction (one line of `--json`).
enum HistoryJSON {
    struct Transaction: Encodable {
        var token: Int64
        var date: String
        var kind: String
        var author: String?
        var context: String?
        var process: String
        var pid: Int32
        var changes: [Change]

        init(_ transaction: HistoryTransaction, model: Model) {
            token = transaction.token.generation
            date = HistoryValues.date(transaction.date)
            kind = transaction.kind.rawValue
            author = transaction.author
            context = transaction.contextName
            process = transaction.processName
            pid = transaction.processID
            changes = transaction.changes.map(Change.init)
        }

        func encode(to encoder: any Encoder) throws {
            // author and context are null when unset, not left out.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(token, forKey: .token)
            try container.encode(date, forKey: .date)
            try container.encode(kind, forKey: .kind)
            try container.encode(author, forKey: .author)
            try container.encode(context, forKey: .context)
            try container.encode(process, forKey: .process)
            try container.encode(pid, forKey: .pid)
            try container.encode(changes, forKey: .changes)
        }

        enum CodingKeys: String, CodingKey { case token, date, kind, author, context, process, pid, changes }
    }

    struct Change: Encodable {
        var entity: String
        var key: Int64
        var kind: String
        var attributes: [String: Value]
        var toOnes: [String: Value]
        var previousToOnes: [String: Value]
        var preserved: [String: Value]
        var added: [String: [String]]
        var removed: [String: [String]]

        init(_ change: HistoryChange) {
            entity = change.objectID.entityName
            key = change.objectID.primaryKey
            kind = change.kind.rawValue
            attributes = change.attributes.mapValues(Value.init)
            toOnes = change.toOnes.mapValues { Value(object: $0) }
            previousToOnes = change.previousToOnes.mapValues { Value(object: $0) }
            preserved = change.preservedValues.mapValues(Value.init)
            added = change.addedMembers.mapValues { $0.map(\.description) }
            removed = change.removedMembers.mapValues { $0.map(\.description) }
        }
    }

    /// An attribute value as JSON: numbers and booleans as such, strings, dates (ISO 8601),
    /// UUIDs and URLs as strings, binary data as base64, `null` for none; an object as `"Entity/key"`.
    enum Value: Encodable {
        case null, int(Int64), double(Double), float(Float), bool(Bool), string(String), decimal(Decimal)

        init(_ value: AttributeValue?) {
            switch value {
            case nil: self = .null
            case .int16(let v): self = .int(Int64(v))
            case .int32(let v): self = .int(Int64(v))
            case .int64(let v): self = .int(v)
            case .double(let v): self = .double(v)
            case .float(let v): self = .float(v)
            case .bool(let v): self = .bool(v)
            case .string(let v): self = .string(v)
            case .date(let v): self = .string(HistoryValues.valueDate(v))
            case .binary(let v): self = .string(v.base64EncodedString())
            case .uuid(let v): self = .string(v.uuidString)
            case .url(let v): self = .string(v.absoluteString)
            case .decimal(let v): self = .decimal(v)
            }
        }

        init(object: ObjectID?) { self = object.map { .string($0.description) } ?? .null }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .int(let v): try container.encode(v)
            case .double(let v): try container.encode(v)
            case .float(let v): try container.encode(v)
            case .bool(let v): try container.encode(v)
            case .string(let v): try container.encode(v)
            case .decimal(let v): try container.encode(v)
            }
        }
    }
}
