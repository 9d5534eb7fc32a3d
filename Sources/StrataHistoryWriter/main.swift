// StrataHistoryWriter: the writing child of the two-process external-changes test
// (Tests/StrataCrashTests/ExternalChangesProcessTests.swift).
//
// It opens the store (TestModels.bookshelf(): Shelf(label) ←→ Book(title, pages, shelf)) on a
// StoreCoordinator of its own and commits in lockstep with the parent: for every line "go" read
// from stdin it makes one commit — a root context's save (inserts, updates, books moved between
// shelves, shelves renamed, deletes, across both entities) or a batch insert, update or delete
// of books — and then writes
//
//     committed <generation> <operation> moves=<n>
//
// (the store's generation after the commit) in one write. For "burst N" it makes N commits back
// to back, each followed by its line, without waiting for the parent. The parent kills it with SIGKILL at a
// random moment, or arms a kill point (STRATA_KILL_POINT=name[:nth], e.g. writer.rows.written or
// batch.history.written), which ends it inside a commit. Usage:
//
//     StrataHistoryWriter --store PATH --seed N [--count N]

import Foundation
import Logging
@_spi(Testing) import Strata
import StrataTestSupport
import StrataSQLite

KillPoint.armFromEnvironment()

// Only warnings and errors, and on stderr: stdout carries the protocol.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("StrataHistoryWriter: \(message)\n".utf8))
    exit(1)
}

/// One line on stdout in one write(2): a SIGKILL right after loses nothing written, and never
/// tears a line.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var store: String?
var seed: UInt64 = 1
var count = Int.max
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
    switch argument {
    case "--store": store = value
    case "--seed": seed = UInt64(value) ?? { fail("--seed \(value)") }()
    case "--count": count = Int(value) ?? { fail("--count \(value)") }()
    default: fail("unknown argument \(argument) (usage: --store PATH --seed N [--count N])")
    }
}
guard let store else { fail("--store PATH is required") }

/// The workload: small stores (a few hundred books at most, at most a dozen shelves), every
/// commit changing something.
struct Writer {
    static let maxBooks = 240
    static let minBooks = 30
    static let maxShelves = 12
    static let labels = (0..<16).map { String(format: "S%02d", $0) }

    let coordinator: StoreCoordinator
    let context: ManagedObjectContext
    var rng: SplitMix64

    /// A title no other book has (the controllers' order is then total).
    mutating func title() -> String { "b-" + String(rng.next(), radix: 36) }
    mutating func pages() -> Int64 { Int64(rng.int(0...400)) }

    /// One commit; returns its operation's name and how many books it moved between shelves.
    mutating func step() throws -> (String, Int) {
        let books = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Book")) }
        let kind: String
        if books < Self.minBooks {
            kind = rng.weighted([(3, "save"), (2, "batch-insert")])
        } else if books > Self.maxBooks {
            kind = rng.weighted([(3, "save"), (2, "batch-delete")])
        } else {
            kind = rng.weighted([(11, "save"), (3, "batch-insert"), (3, "batch-update"), (3, "batch-delete")])
        }
        switch kind {
        case "save": return ("save", try save(books: books))
        case "batch-insert": try batchInsert()
        case "batch-update": return ("batch-update", try batchUpdate())
        default: try batchDelete()
        }
        return (kind, 0)
    }

    /// A save of 1–6 random changes; returns the number of books moved to another shelf.
    mutating func save(books bookCount: Int) throws -> Int {
        try context.performAndWait {
            defer { context.reset() }
            var shelves = try context.fetch(FetchRequest(entityName: "Shelf", sortKeys: [.ascending("label")]))
            var books = try context.fetch(FetchRequest(entityName: "Book", sortKeys: [.ascending("title")]))
            var moves = 0
            for _ in 0..<rng.int(1...6) {
                let operation = rng.weighted([
                    (bookCount > Self.maxBooks ? 1 : 4, "insert book"), (shelves.count < Self.maxShelves ? 1 : 0, "insert shelf"),
                    (3, "pages"), (1, "title"), (4, "move"), (1, "rename shelf"),
                    (bookCount < Self.minBooks ? 0 : 3, "delete book"), (shelves.count > 3 ? 1 : 0, "delete shelf"),
                ])
                switch operation {
                case "insert shelf":
                    let shelf = try context.insert("Shelf")
                    try shelf.setValue(rng.pick(Self.labels), forKey: "label")
                    shelves.append(shelf)
                case "pages" where !books.isEmpty:
                    try rng.pick(books).setValue(pages(), forKey: "pages")
                case "title" where !books.isEmpty:
                    try rng.pick(books).setValue(title(), forKey: "title")
                case "move" where !books.isEmpty && !shelves.isEmpty:
                    let book = rng.pick(books)
                    let current = try book.value(forKey: "shelf") as? ManagedObject
                    let target: ManagedObject? = rng.chance(0.1) ? nil : rng.pick(shelves)
                    try book.setValue(target, forKey: "shelf")
                    if current?.objectID != target?.objectID { moves += 1 }
                case "rename shelf" where !shelves.isEmpty:
                    try rng.pick(shelves).setValue(rng.pick(Self.labels), forKey: "label")
                case "delete book" where !books.isEmpty:
                    let index = rng.int(0...(books.count - 1))
                    try context.delete(books.remove(at: index))
                case "delete shelf" where !shelves.isEmpty:
                    let index = rng.int(0...(shelves.count - 1))
                    try context.delete(shelves.remove(at: index))
                default:
                    // "insert book", and any change that had nothing to work on.
                    let book = try context.insert("Book")
                    try book.setValue(title(), forKey: "title")
                    try book.setValue(pages(), forKey: "pages")
                    if !shelves.isEmpty, !rng.chance(0.1) { try book.setValue(rng.pick(shelves), forKey: "shelf") }
                    books.append(book)
                }
            }
            _ = try context.save()
            return moves
        }
    }

    func shelfIDs() throws -> [ObjectID] {
        try context.performAndWait { try context.fetchObjectIDs(FetchRequest(entityName: "Shelf")) }
    }

    mutating func batchInsert() throws {
        let shelves = try shelfIDs()
        var rows: [(String, Int64, ObjectID?)] = []
        for _ in 0..<rng.int(1...8) {
            rows.append((title(), pages(), shelves.isEmpty || rng.chance(0.15) ? nil : rng.pick(shelves)))
        }
        let request = BatchInsertRequest<ManagedObject>(entityName: "Book", count: rows.count) { index, row in
            try row.set(rows[index].0, forKey: "title")
            try row.set(rows[index].1, forKey: "pages")
            try row.set(rows[index].2, forKey: "shelf")
        }
        try coordinator.execute(request)
    }

    /// Sets `pages` (or, now and then, `shelf`: a batch move) of the books in a random range of
    /// pages; returns the books it moved to another shelf (at most: the rows it changed).
    mutating func batchUpdate() throws -> Int {
        let low = rng.int(0...380)
        let range = try Condition("pages >= %d AND pages <= %d", low, low + rng.int(5...40))
        let shelves = try shelfIDs()
        if rng.chance(0.25), !shelves.isEmpty {
            let shelf = rng.pick(shelves)
            let result = try coordinator.execute(BatchUpdateRequest(entityName: "Book", predicate: range, propertiesToUpdate: ["shelf": shelf]))
            return result.count
        }
        try coordinator.execute(BatchUpdateRequest(entityName: "Book", predicate: range, propertiesToUpdate: ["pages": pages()]))
        return 0
    }

    mutating func batchDelete() throws {
        if rng.chance(0.5) {
            let ids = try context.performAndWait { try context.fetchObjectIDs(FetchRequest(entityName: "Book")) }
            try coordinator.execute(BatchDeleteRequest(entityName: "Book", objectIDs: rng.sample(ids, min(ids.count, rng.int(1...6)))))
        } else {
            let low = rng.int(0...390)
            try coordinator.execute(BatchDeleteRequest(entityName: "Book", predicate: try Condition("pages >= %d AND pages <= %d", low, low + rng.int(2...12))))
        }
    }
}

do {
    let coordinator = try StoreCoordinator(model: TestModels.bookshelf(), url: URL(fileURLWithPath: store))
    var writer = Writer(coordinator: coordinator, context: coordinator.newContext(name: "writer"), rng: SplitMix64(seed: seed))
    emit("open \(try coordinator.currentHistoryToken().generation)")
    var done = 0
    while done < count, let line = readLine() {
        // "go": one commit; "burst N": N commits back to back, as fast as they go (the parent
        // does not wait for delivery between them).
        // "copy PATH": a copy of the store as it is now (SQLite's backup API, as `sqlite3 .backup`);
        // "restore PATH": that copy restored over the store (as `sqlite3 .restore`: the same UUID,
        // an older generation), after which this process's own coordinator catches up with the
        // store it now is (its commits are refused until then).
        if line.hasPrefix("copy ") || line.hasPrefix("restore ") {
            let path = String(line.drop { $0 != " " }.dropFirst())
            let copying = line.hasPrefix("copy ")
            let source = try StrataSQLite.Connection(path: copying ? store : path)
            let target = try StrataSQLite.Connection(path: copying ? path : store)
            try target.restore(from: source)
            source.close()
            target.close()
            if !copying { try coordinator.processExternalChanges() }
            emit("\(copying ? "copied" : "restored") \(try coordinator.currentHistoryToken().generation)")
            continue
        }
        let commits: Int
        if line == "go" {
            commits = 1
        } else if line.hasPrefix("burst "), let n = Int(line.dropFirst("burst ".count)), n > 0 {
            commits = n
        } else {
            fail("unexpected input \(line)")
        }
        for _ in 0..<commits {
            let (operation, moves) = try writer.step()
            emit("committed \(try coordinator.currentHistoryToken().generation) \(operation) moves=\(moves)")
        }
        done += 1
    }
    coordinator.close()
} catch {
    fail("\(error)")
}
