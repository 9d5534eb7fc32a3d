import Foundation
import Testing
import Strata
import StrataSQLite
import StrataTestSupport

/// `strata history` and `strata watch` on a real store file, run as a user runs them.
@Suite struct HistoryCommandTests {
    /// A numbers store (`Number(value, isEven, label)`) with four commits: three by author
    /// "importer" in context "background" (three inserts; an update of one; a delete of
    /// another), then one insert with no author in context "ui".
    final class NumbersStore {
        let directory = TemporaryDirectory("strata-cli-history")
        let url: URL
        /// The numbers inserted first, by value (1, 2, 3), and the one inserted last (4).
        var ids: [Int64: ObjectID] = [:]
        /// The generation each commit made, in order.
        var tokens: [Int64] = []

        var path: String { url.path }

        init(commits: Bool = true) throws {
            url = directory.file("numbers.sqlite")
            try withCoordinator { _ in }
            if commits { try commitAll() }
        }

        func withCoordinator<T>(_ body: (StoreCoordinator) throws -> T) throws -> T {
            let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
            defer { coordinator.close() }
            return try body(coordinator)
        }

        private func commitAll() throws {
            try withCoordinator { coordinator in
                let context = coordinator.newContext(name: "background")
                try context.performAndWait {
                    context.transactionAuthor = "importer"
                    var objects: [Int64: ManagedObject] = [:]
                    for value: Int64 in 1...3 {
                        let number = try context.insert("Number")
                        try number.setValue(value, forKey: "value")
                        try number.setValue(value % 2 == 0, forKey: "isEven")
                        objects[value] = number
                    }
                    tokens.append(try #require(try context.save()).generation)
                    for (value, object) in objects { ids[value] = object.objectID }
                    try objects[2]!.setValue("two \"quoted\"", forKey: "label")
                    tokens.append(try #require(try context.save()).generation)
                    try context.delete(objects[3]!)
                    tokens.append(try #require(try context.save()).generation)
                }
                let ui = coordinator.newContext(name: "ui")
                try ui.performAndWait {
                    let number = try ui.insert("Number")
                    try number.setValue(Int64(4), forKey: "value")
                    tokens.append(try #require(try ui.save()).generation)
                    ids[4] = number.objectID
                }
            }
        }

        /// Runs raw SQL on the store (to make it look like one an earlier Strata wrote).
        func execute(_ sql: String) throws {
            let db = try Connection(path: path)
            defer { db.close() }
            try db.execute(sql)
        }
    }

    /// Each line of `result`'s output parsed as one JSON object.
    func jsonLines(_ result: CLIResult) throws -> [[String: Any]] {
        try result.output.lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    @Test func textShowsEveryCommitAndItsChanges() throws {
        let store = try NumbersStore()
        let result = try CLI.run(["history", store.path])
        #expect(result.status == 0, "\(result)")
        #expect(result.error.isEmpty, "\(result)")
        let heads = result.output.lines.filter { !$0.hasPrefix(" ") }
        try #require(heads.count == 4, "\(result)")
        let pid = ProcessInfo.processInfo.processIdentifier
        let pattern = #"^\d+  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  save  author=\S+  context=\S+  process=.+\[\d+\]  \d+ changes?$"#
        for (head, token) in zip(heads, store.tokens) {
            #expect(head.range(of: pattern, options: .regularExpression) != nil, "\(head)")
            #expect(head.hasPrefix("\(token)  "), "\(head)")
            #expect(head.contains("[\(pid)]"), "\(head)")
        }
        #expect(heads[0].contains("author=importer  context=background") && heads[0].hasSuffix("  3 changes"), "\(heads[0])")
        #expect(heads[1].hasSuffix("  1 change"), "\(heads[1])")
        #expect(heads[3].contains("author=-  context=ui"), "\(heads[3])")
        let lines = result.output.lines
        for value: Int64 in 1...3 { #expect(lines.contains("  insert \(store.ids[value]!)"), "\(result)") }
        #expect(lines.contains(#"  update \#(store.ids[2]!) label="two \"quoted\"""#), "\(result)")
        #expect(lines.contains("  delete \(store.ids[3]!)"), "\(result)")
        #expect(lines.contains("  insert \(store.ids[4]!)"), "\(result)")
        #expect(lines.count == 4 + 6, "\(result)")
    }

    @Test func jsonLinesHoldTokensKindsKeysAndNewValues() throws {
        let store = try NumbersStore()
        let result = try CLI.run(["history", store.path, "--json"])
        #expect(result.status == 0, "\(result)")
        let transactions = try jsonLines(result)
        try #require(transactions.count == 4, "\(result)")
        #expect(transactions.compactMap { ($0["token"] as? NSNumber)?.int64Value } == store.tokens)
        for transaction in transactions {
            #expect(transaction["kind"] as? String == "save")
            #expect(transaction["pid"] as? Int == Int(ProcessInfo.processInfo.processIdentifier))
            #expect(transaction["process"] is String)
            let date = try #require(transaction["date"] as? String)
            let parsed = try #require(ISO8601DateFormatter().date(from: date), "\(date)")
            #expect(abs(parsed.timeIntervalSinceNow) < 600)
        }
        #expect(transactions[0]["author"] as? String == "importer")
        #expect(transactions[0]["context"] as? String == "background")
        #expect(transactions[3]["author"] is NSNull, "no author: null")
        #expect(transactions[3]["context"] as? String == "ui")

        func changes(_ index: Int) throws -> [[String: Any]] { try #require(transactions[index]["changes"] as? [[String: Any]]) }
        let inserts = try changes(0)
        #expect(inserts.map { $0["kind"] as? String } == ["insert", "insert", "insert"])
        #expect(Set(inserts.compactMap { ($0["key"] as? NSNumber)?.int64Value }) == Set((1...3).map { store.ids[Int64($0)]!.primaryKey }))
        for change in inserts {
            #expect(change["entity"] as? String == "Number")
            for field in ["attributes", "toOnes", "previousToOnes", "preserved", "added", "removed"] {
                #expect((change[field] as? [String: Any])?.isEmpty == true, "\(field) in \(change)")
            }
        }
        let update = try #require(try changes(1).first)
        #expect(update["kind"] as? String == "update")
        #expect((update["key"] as? NSNumber)?.int64Value == store.ids[2]!.primaryKey)
        #expect((update["attributes"] as? [String: Any])?["label"] as? String == "two \"quoted\"")
        let delete = try #require(try changes(2).first)
        #expect(delete["kind"] as? String == "delete")
        #expect((delete["key"] as? NSNumber)?.int64Value == store.ids[3]!.primaryKey)
    }

    @Test func authorChoosesTheCommitsOfOneAuthor() throws {
        let store = try NumbersStore()
        let importer = try CLI.run(["history", store.path, "--author", "importer", "--json"])
        #expect(importer.status == 0, "\(importer)")
        let transactions = try jsonLines(importer)
        #expect(transactions.compactMap { ($0["token"] as? NSNumber)?.int64Value } == Array(store.tokens.prefix(3)))
        #expect(transactions.allSatisfy { $0["author"] as? String == "importer" })
        let text = try CLI.run(["history", store.path, "--author", "importer"])
        #expect(text.output.lines.filter { !$0.hasPrefix(" ") }.count == 3, "\(text)")

        for arguments in [["--author", "nobody"], ["--author", "nobody", "--json"]] {
            let nobody = try CLI.run(["history", store.path] + arguments)
            #expect(nobody.status == 0, "\(nobody)")
            #expect(nobody.output.isEmpty && nobody.error.isEmpty, "\(nobody)")
        }
    }

    @Test func sinceStartsAfterAToken() throws {
        let store = try NumbersStore()
        let after = try CLI.run(["history", store.path, "--since", "\(store.tokens[1])", "--json"])
        #expect(after.status == 0, "\(after)")
        #expect(try jsonLines(after).compactMap { ($0["token"] as? NSNumber)?.int64Value } == Array(store.tokens.suffix(2)))
        let zero = try CLI.run(["history", store.path, "--since", "0", "--json"])
        #expect(try jsonLines(zero).count == 4, "\(zero)")
        let last = try CLI.run(["history", store.path, "--since", "\(store.tokens[3])"])
        #expect(last.status == 0 && last.output.isEmpty && last.error.isEmpty, "\(last)")
        let bad = try CLI.run(["history", store.path, "--since", "-1"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.output.isEmpty && bad.error.lines.count == 1, "\(bad)")
    }

    /// The store file's bytes stay as they were (a read-only WAL reader may leave an empty
    /// `-wal` and the `-shm` index beside it, as any SQLite reader does).
    @Test func historyChangesNothingInTheStore() throws {
        let store = try NumbersStore()
        let before = try Data(contentsOf: store.url)
        _ = try CLI.run(["history", store.path])
        _ = try CLI.run(["history", store.path, "--json"])
        #expect(try Data(contentsOf: store.url) == before)
        let wal = URL(fileURLWithPath: store.path + "-wal")
        if FileManager.default.fileExists(atPath: wal.path) { #expect(try Data(contentsOf: wal).isEmpty) }
    }

    /// A store whose history was never kept (as Strata 0.2.0 made them): nothing, exit 0.
    @Test func aStoreWithoutHistoryPrintsNothing() throws {
        let store = try NumbersStore()
        try store.execute("DROP TABLE strata_history_change; DROP TABLE strata_history")
        for arguments in [[String](), ["--json"], ["--since", "1"]] {
            let result = try CLI.run(["history", store.path] + arguments)
            #expect(result.status == 0, "\(result)")
            #expect(result.output.isEmpty && result.error.isEmpty, "\(result)")
        }
    }

    @Test func aMissingStoreIsNoInput() throws {
        let directory = TemporaryDirectory("strata-cli-history")
        let result = try CLI.run(["history", directory.file("missing.sqlite").path])
        #expect(result.status == 66, "\(result)")
        let watch = try CLI.run(["watch", directory.file("missing.sqlite").path])
        #expect(watch.status == 66, "\(watch)")
    }

    /// `strata watch --json` prints each commit another process makes as it lands, one JSON
    /// line each, flushed at once, and ends with status 0 on SIGINT (and on SIGTERM).
    @Test(arguments: [SIGINT, SIGTERM])
    func watchPrintsCommitsAsTheyLand(signal: Int32) throws {
        let store = try NumbersStore(commits: false)
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["watch", store.path, "--json"]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let received = HistoryTestBox(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.withLock { $0.append(data) }
        }
        try process.run()
        defer {
            output.fileHandleForReading.readabilityHandler = nil
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(process.isRunning)

        var keys: [Int64] = []
        var tokens: [Int64] = []
        try store.withCoordinator { coordinator in
            let context = coordinator.newContext(name: "writer")
            try context.performAndWait {
                context.transactionAuthor = "importer"
                for value: Int64 in [10, 11] {
                    let number = try context.insert("Number")
                    try number.setValue(value, forKey: "value")
                    tokens.append(try #require(try context.save()).generation)
                    keys.append(number.objectID.primaryKey)
                }
            }
        }

        func lines() -> [String] { String(decoding: received.withLock { $0 }, as: UTF8.self).lines }
        let deadline = Date().addingTimeInterval(10)
        while lines().count < 2, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let printed = lines()
        try #require(printed.count == 2, "two commits within 10 s; got \(printed)")
        let transactions = try printed.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(transactions.compactMap { ($0["token"] as? NSNumber)?.int64Value } == tokens)
        #expect(transactions.allSatisfy { $0["author"] as? String == "importer" && $0["context"] as? String == "writer" })
        let changes = transactions.compactMap { ($0["changes"] as? [[String: Any]])?.first }
        #expect(changes.compactMap { ($0["key"] as? NSNumber)?.int64Value } == keys)
        #expect(changes.allSatisfy { $0["kind"] as? String == "insert" && $0["entity"] as? String == "Number" })

        kill(process.processIdentifier, signal)
        let stopped = Date().addingTimeInterval(10)
        while process.isRunning, Date() < stopped { Thread.sleep(forTimeInterval: 0.02) }
        try #require(!process.isRunning, "watch ends on signal \(signal)")
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.isEmpty, "\(stderr)")
        #expect(lines().count == 2, "nothing but the commits")
    }

    /// `strata watch` in text form: the same lines `strata history` prints for the commit.
    @Test func watchTextMatchesHistory() throws {
        let store = try NumbersStore(commits: false)
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["watch", store.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let received = HistoryTestBox(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.withLock { $0.append(data) }
        }
        try process.run()
        defer {
            output.fileHandleForReading.readabilityHandler = nil
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        Thread.sleep(forTimeInterval: 0.3)
        try store.withCoordinator { coordinator in
            let context = coordinator.newContext(name: "writer")
            try context.performAndWait {
                let number = try context.insert("Number")
                try number.setValue(Int64(7), forKey: "value")
                _ = try context.save()
                try number.setValue("seven", forKey: "label")
                _ = try context.save()
            }
        }
        let expected = try CLI.run(["history", store.path]).output
        let deadline = Date().addingTimeInterval(10)
        while String(decoding: received.withLock { $0 }, as: UTF8.self).lines.count < expected.lines.count, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: received.withLock { $0 }, as: UTF8.self) == expected)
    }
}

/// A value behind a lock, for the pipe reader's thread.
private final class HistoryTestBox<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
