import Foundation
import Strata
import StrataTestSupport
import Synchronization
import Testing

/// Result streams (`context.results(for:)`, issue 49) against a fresh fetch, over random
/// batches on every route a change can take: main's edits saved to the store, a background
/// save, an update context, batch requests, and another process (`StrataHistoryWriter`)
/// committing one commit or a burst of them, with no call from the app.
///
/// Two streams on main (sectioned by shelf, and flat over `pages > 100`). Checked: the first
/// element is the fetch; every element's change set starts from the element before it (no
/// element lost or out of order: the chain); after each batch the last element equals a fresh
/// fetch on a read-only coordinator. Prints
/// `result-stream: batches=N elements=E mismatches=M chain-breaks=B` and how often each route ran.
///
/// `STRATA_STREAM_BATCHES` (default 300), `STRATA_STREAM_SEED` (default random, printed),
/// `STRATA_STREAM_ROUTES` (a comma-separated subset of the routes 0-5, default all),
/// `STRATA_STREAM_DEBUG=KEY,KEY…` (each batch's route and those books' values; on a mismatch, the
/// change sets that named the books out of place).
///
/// Route 0 — main fetches every book, edits, saves to the store — between another process's
/// bursts found two bugs of the controller's following (`STRATA_STREAM_ROUTES=0,5`, seeds
/// 4334172153501642229 and 4983482858186723586, which failed before the fixes): a row a re-run
/// placed by the store's newer values kept the context's older stamp and misled the placing of
/// its neighbours; and a listed row whose shelf another process deleted (not yet merged) read as
/// unchanged, so a row was placed by it in another section's order.
///
/// Gated (`STRATA_STREAM_MODEL=1 swift test --filter ResultStreamModelTests`, a stage of its own in
/// CI): its consumers are tasks, which need a free thread of the cooperative pool (as many as
/// cores), and the rest of the suite, run beside it, holds those threads with blocking work for
/// seconds at a time.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["STRATA_STREAM_MODEL"] == "1"), .serialized)
struct ResultStreamModelTests {
    /// What a stream delivered, in order.
    final class Collected: Sendable {
        private let elements = Mutex<[(FetchedSnapshot, FetchedChanges?)]>([])
        private let ended = Mutex<String?>(nil)
        var count: Int { elements.withLock { $0.count } }
        var last: FetchedSnapshot? { elements.withLock { $0.last?.0 } }
        var all: [(FetchedSnapshot, FetchedChanges?)] { elements.withLock { $0 } }
        var end: String? { ended.withLock { $0 } }
        func add(_ results: FetchedResults<ManagedObject>) { elements.withLock { $0.append((results.snapshot, results.changes)) } }
        func finish(_ reason: String) { ended.withLock { $0 = reason } }
    }

    static func consume(_ stream: AsyncThrowingStream<FetchedResults<ManagedObject>, any Error>, into collected: Collected) -> Task<Void, Never> {
        Task {
            do {
                for try await results in stream { collected.add(results) }
                collected.finish("finished")
            } catch {
                collected.finish("failed: \(error)")
            }
        }
    }

    @Test(.timeLimit(.minutes(20))) func streamsEqualAFreshFetchOnEveryRoute() async throws {
        let environment = ProcessInfo.processInfo.environment
        let batches = environment["STRATA_STREAM_BATCHES"].flatMap(Int.init) ?? 300
        let seed = environment["STRATA_STREAM_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("result-stream: seed \(seed) (replay: STRATA_STREAM_SEED=\(seed) STRATA_STREAM_BATCHES=\(batches))")
        var rng = SplitMix64(seed: seed)
        let directory = TemporaryDirectory("strata-stream")
        let url = directory.file("books.sqlite")
        let container = try PersistentContainer(model: TestModels.bookshelf(), url: url)
        defer { container.coordinator.close() }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let main = container.mainContext
        try main.performAndWait {
            for index in 0..<6 {
                let shelf = try main.insert("Shelf")
                try shelf.setValue("shelf \(index)", forKey: "label")
                for book in 0..<4 {
                    let object = try main.insert("Book")
                    try object.setValue("book \(index)-\(book)", forKey: "title")
                    try object.setValue(Int64(50 * book + index), forKey: "pages")
                    try object.setValue(shelf, forKey: "shelf")
                }
            }
            try main.saveToStore()
        }
        let checker = try StoreCoordinator(model: TestModels.bookshelf(), url: url, options: readOnly)
        defer { checker.close() }

        let sectioned = Collected(), flat = Collected()
        let sectionedTask = Self.consume(main.results(for: ExternalChangesProcessTests.sectionedRequest(), sectionNameKeyPath: "shelf.label"), into: sectioned)
        let flatTask = Self.consume(main.results(for: try ExternalChangesProcessTests.flatRequest()), into: flat)
        defer {
            sectionedTask.cancel()
            flatTask.cancel()
        }
        let writer = try ExternalChangesProcessTests.WriterChild(store: url, seed: rng.next(), killPoint: nil,
                                                                 stderr: directory.file("writer.stderr"))
        defer { writer.kill() }
        guard let open = writer.nextLine(timeout: .seconds(60)), open.hasPrefix("open ") else {
            Issue.record("the writer process did not open the store: \(writer.reap())")
            return
        }

        var routes: [String: Int] = [:]
        var mismatches: [String] = []
        let clock = ContinuousClock()

        /// Waits (up to 10 s) for both streams' last elements to equal a fresh fetch.
        func check(_ label: String) {
            let deadline = clock.now + .seconds(10)
            var expected = (try? ExternalChangesProcessTests.freshLayouts(checker))
            func current() -> (ExternalChangesProcessTests.Layout?, ExternalChangesProcessTests.Layout?) {
                (sectioned.last.map { ExternalChangesProcessTests.Layout($0) }, flat.last.map { ExternalChangesProcessTests.Layout($0).flattened })
            }
            while clock.now < deadline {
                if let expected, current().0 == expected.0, current().1 == expected.1 { return }
                usleep(2_000)
                expected = try? ExternalChangesProcessTests.freshLayouts(checker)
            }
            let now = current()
            if environment["STRATA_STREAM_DEBUG"] != nil, let shown = now.0, let expected {
                // The IDs out of place, and every change set of the sectioned stream that names one.
                let a = shown.ids.flatMap { $0 }, b = expected.0.ids.flatMap { $0 }
                let off = Set(zip(a, b).filter { $0.0 != $0.1 }.flatMap { [$0.0, $0.1] })
                print("result-stream debug \(label): out of place \(off.map(\.primaryKey).sorted())")
                for (n, element) in sectioned.all.enumerated() {
                    guard let changes = element.1 else { continue }
                    let named = changes.objects.filter { change in
                        switch change {
                        case .insert(let id, _), .delete(let id, _), .move(let id, _, _), .update(let id, _, _): off.contains(id)
                        }
                    }
                    if !named.isEmpty || n >= sectioned.count - 8 {
                        print("  element \(n): \(changes.objects.map { "\($0)".replacingOccurrences(of: "Strata.FetchedChanges.ObjectChange.", with: "") }) sections \(changes.sections.map { "\($0)".prefix(60) })")
                        print("    after: \(ExternalChangesProcessTests.Layout(changes.after))")
                    }
                }
                let context = checker.newContext()
                context.performAndWait {
                    for id in off {
                        let object = try? context.existingObject(with: id)
                        let shelf = try? object?.value(forKey: "shelf") as? ManagedObject
                        print("  \(id): pages \((try? object?.value(forKey: "pages")).flatMap { $0 } ?? "?") title \((try? object?.value(forKey: "title")).flatMap { $0 } ?? "?") shelf \((try? shelf?.value(forKey: "label")).flatMap { $0 } ?? "-")")
                    }
                }
            }
            mismatches.append("\(label): streams \(now.0?.description ?? "none") / \(now.1?.description ?? "none"), fresh fetch \(expected.map { "\($0.0) / \($0.1)" } ?? "failed")")
        }

        check("the first element")
        for index in 0..<batches {
            // STRATA_STREAM_ROUTES: only these routes (0 main, 1 background, 2 update, 3 batch
            // update, 4 batch delete + insert, 5 another process), to narrow a failure down.
            let allowed = environment["STRATA_STREAM_ROUTES"].map { $0.split(separator: ",").compactMap { Int($0) } } ?? Array(0...5)
            let route = allowed[rng.int(0...(allowed.count - 1))]
            let book = rng.int(0...40), shelf = rng.int(0...8), pages = Int64(rng.int(0...300))
            let before = routes
            defer {
                if let watched = environment["STRATA_STREAM_DEBUG"] {
                    var values = ""
                    let context = checker.newContext()
                    context.performAndWait {
                        for key in watched.split(separator: ",").compactMap({ Int64($0) }) {
                            let object = try? context.existingObject(with: ObjectID(entityName: "Book", primaryKey: key))
                            let shelf = try? object?.value(forKey: "shelf") as? ManagedObject
                            values += " \(key)=\((try? object?.value(forKey: "pages")).flatMap { $0 } ?? "-")/\((try? shelf?.value(forKey: "label")).flatMap { $0 } ?? "-")"
                        }
                    }
                    print("result-stream batch \(index + 1): \(routes.filter { before[$0.key] != $0.value }.keys.sorted()) elements=\(sectioned.count)\(values)")
                }
            }
            do {
                switch route {
                case 0:
                    routes["main edits + saveToStore", default: 0] += 1
                    try main.performAndWait {
                        try Self.edit(main, book: book, shelf: shelf, pages: pages, kind: rng.int(0...3))
                        try main.saveToStore()
                    }
                case 1:
                    routes["background save", default: 0] += 1
                    let background = container.newBackgroundContext()
                    try background.performAndWait {
                        try Self.edit(background, book: book, shelf: shelf, pages: pages, kind: rng.int(0...3))
                        try background.save()
                    }
                case 2:
                    routes["update context save + main.saveToStore", default: 0] += 1
                    let update = container.newUpdateContext()
                    try update.performAndWait {
                        try Self.edit(update, book: book, shelf: shelf, pages: pages, kind: rng.int(0...3))
                        try update.save()
                    }
                    try main.performAndWait { try main.saveToStore() }
                case 3:
                    routes["batch update", default: 0] += 1
                    try container.coordinator.execute(BatchUpdateRequest(entityName: "Book", predicate: try Condition("pages < %@", pages),
                                                                         propertiesToUpdate: ["pages": pages + 1]))
                case 4:
                    routes["batch delete + insert", default: 0] += 1
                    try container.coordinator.execute(BatchDeleteRequest(entityName: "Book", predicate: try Condition("pages == %@", pages)))
                    try container.coordinator.execute(BatchInsertRequest(entityName: "Book", objects: [["title": "batch \(index)", "pages": pages]]))
                default:
                    let burst = rng.chance(0.5) ? 1 : rng.int(2...12)
                    routes[burst == 1 ? "another process, one commit" : "another process, a burst", default: 0] += 1
                    writer.send(burst == 1 ? "go" : "burst \(burst)")
                    for _ in 0..<burst {
                        let line = writer.nextLine(timeout: .seconds(20))
                        guard let line, line.hasPrefix("committed ") else {
                            mismatches.append("batch \(index + 1): the writer process wrote \(line ?? "nothing") (\(writer.reap()))")
                            break
                        }
                    }
                }
            } catch let error as ValidationError {
                routes["refused by validation", default: 0] += 1
                _ = error
                main.performAndWait { main.rollback() }
            } catch let error as MergeConflictError {
                routes["refused by a conflict", default: 0] += 1
                _ = error
                main.performAndWait { main.rollback() }
            }
            container.waitForPendingMerges()
            check("batch \(index + 1)")
            if mismatches.count >= 5 { break }
        }

        // The chain: each change set starts where the element before ended.
        var chainBreaks: [String] = []
        for (name, collected) in [("sectioned", sectioned), ("flat", flat)] {
            let elements = collected.all
            for index in elements.indices.dropFirst() {
                guard let changes = elements[index].1 else { continue }
                if changes.before != elements[index - 1].0 {
                    chainBreaks.append("\(name) element \(index): its change set starts from another layout than element \(index - 1)")
                }
            }
            if let end = collected.end { mismatches.append("the \(name) stream ended: \(end)") }
        }
        for (route, count) in routes.sorted(by: { $0.key < $1.key }) { print("result-stream route: \(route) = \(count)") }
        print("result-stream: batches=\(batches) elements=\(sectioned.count + flat.count) mismatches=\(mismatches.count) chain-breaks=\(chainBreaks.count)")
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(chainBreaks.isEmpty, "\(chainBreaks.prefix(5))")
        #expect(sectioned.count > 1 && flat.count > 1, "the streams delivered changes")
    }

    /// One edit: a new book, a renamed or re-paged one, a move to another shelf, or a delete.
    static func edit(_ context: ManagedObjectContext, book: Int, shelf: Int, pages: Int64, kind: Int) throws {
        let books = try context.fetch(FetchRequest(entityName: "Book", sortKeys: [.ascending("title")]))
        let shelves = try context.fetch(FetchRequest(entityName: "Shelf", sortKeys: [.ascending("label")]))
        switch kind {
        case 0:
            let object = try context.insert("Book")
            try object.setValue("new \(book)-\(pages)", forKey: "title")
            try object.setValue(pages, forKey: "pages")
            if !shelves.isEmpty { try object.setValue(shelves[shelf % shelves.count], forKey: "shelf") }
        case 1 where !books.isEmpty:
            try books[book % books.count].setValue(pages, forKey: "pages")
        case 2 where !books.isEmpty && !shelves.isEmpty:
            try books[book % books.count].setValue(shelves[shelf % shelves.count], forKey: "shelf")
        case 3 where !books.isEmpty:
            try context.delete(books[book % books.count])
        default:
            break
        }
    }
}
