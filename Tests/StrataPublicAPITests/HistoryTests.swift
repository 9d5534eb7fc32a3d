import Foundation
import Testing
import Strata

@Entity final class BookShelf: ManagedObject {
    var label: String
    @Relationship(inverse: \ShelvedBook.shelf) var books: Set<ShelvedBook> = []
}

@Entity final class ShelvedBook: ManagedObject {
    @Attribute(.preserveValueOnDeletion) var isbn: String
    var title: String
    var pages: Int = 0
    var shelf: BookShelf?
}

/// The store's history and live changes from another connection, written as an app would: a
/// container whose main context holds a results controller, and a second coordinator on the same
/// file (as a second process would be) that saves and runs batch requests; nobody calls
/// `processExternalChanges()`.
@Suite struct HistoryTests {
    static func model() throws -> Model { try Model(version: "1", types: [BookShelf.self, ShelvedBook.self]) }

    /// The app's options: it follows other connections.
    static var following: StoreOptions {
        var options = StoreOptions()
        options.history.followsOtherConnections = true
        return options
    }

    final class Recorder: FetchedResultsControllerDelegate {
        let lock = NSLock()
        var changes: [FetchedChanges] = []
        func controller(_ controller: FetchedResultsController<ShelvedBook>, didReport event: FetchedResultsEvent) {
            guard case .changes(let change) = event else { return }
            lock.withLock { changes.append(change) }
        }
        var count: Int { lock.withLock { changes.count } }
    }

    /// A fresh folder for a test's store (the test removes it).
    static func folder() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Waits (at most 10 s) until `condition` holds, checking every millisecond.
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if try condition() { return true }
            usleep(1000)
        }
        return try condition()
    }

    @Test func aSaveRecordsItsChangesWithNewValuesAndAuthor() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let container = try PersistentContainer(model: Self.model(), url: directory.appendingPathComponent("books.sqlite"))
        let start = try container.coordinator.currentHistoryToken()
        // Set from the test's thread, as an app sets its view context's author after making it.
        container.mainContext.transactionAuthor = "app"
        let context = container.newBackgroundContext()
        let (shelfID, bookID) = try context.performAndWait {
            context.transactionAuthor = "importer"
            let shelf = try context.insert(BookShelf.self)
            shelf.label = "A"
            let book = try context.insert(ShelvedBook.self)
            book.isbn = "978-0"
            book.title = "Dune"
            book.shelf = shelf
            try context.save()
            book.title = "Dune Messiah"
            book.pages = 256
            try context.save()
            try context.delete(book)
            try context.save()
            return (shelf.objectID, book.objectID)
        }
        let transactions = try container.coordinator.history(after: start)
        #expect(transactions.map(\.kind) == [.save, .save, .save])
        #expect(transactions.allSatisfy { $0.author == "importer" && $0.contextName == "background" })
        #expect(transactions.map(\.token) == transactions.map(\.token).sorted())
        let inserted = Set(transactions[0].changes.filter { $0.kind == .insert }.map(\.objectID))
        #expect(inserted == [shelfID, bookID])
        let update = try #require(transactions[1].changes.first)
        #expect(update.objectID == bookID && update.kind == .update)
        #expect(update.attributes == ["title": .string("Dune Messiah"), "pages": .int64(256)])
        #expect(update.toOnes.isEmpty)
        let delete = try #require(transactions[2].changes.first { $0.objectID == bookID })
        #expect(delete.kind == .delete)
        #expect(delete.preservedValues == ["isbn": .string("978-0")])
        // Filtered by author; a token round-trips through JSON.
        #expect(try container.coordinator.history(after: start, author: "someone else").isEmpty)
        try container.mainContext.performAndWait {
            let shelf = try container.mainContext.insert(BookShelf.self)
            shelf.label = "B"
            try container.mainContext.saveToStore()
        }
        let byApp = try container.coordinator.history(after: start, author: "app")
        #expect(byApp.count == 1 && byApp[0].changes.map(\.kind) == [.insert])
        // An update context under main: its saveToStore() records its own author, else main's.
        let editor = container.newUpdateContext()
        try editor.performAndWait {
            let shelf = try editor.insert(BookShelf.self)
            shelf.label = "C"
            try editor.saveToStore()
            editor.transactionAuthor = "editor"
            shelf.label = "D"
            try editor.saveToStore()
        }
        let authors = try container.coordinator.history(after: byApp[0].token).map(\.author)
        #expect(authors == ["app", "editor"])
        let data = try JSONEncoder().encode(transactions[0].token)
        let decoded = try JSONDecoder().decode(HistoryToken.self, from: data)
        #expect(try container.coordinator.history(after: decoded).count == 5)
        // Deleting history before a token keeps that one and the later ones.
        try container.coordinator.deleteHistory(before: transactions[2].token)
        #expect(try container.coordinator.history().map(\.token).first == transactions[2].token)
    }

    @Test func anotherConnectionsCommitsReachTheControllerWithoutACall() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        let container = try PersistentContainer(model: Self.model(), url: url, options: Self.following)
        let main = container.mainContext
        let recorder = Recorder()
        let controller = try main.performAndWait {
            let shelf = try main.insert(BookShelf.self)
            shelf.label = "A"
            for i in 0..<5 {
                let book = try main.insert(ShelvedBook.self)
                book.isbn = "isbn-\(i)"
                book.title = "t\(i)"
                book.pages = i * 100
                book.shelf = shelf
            }
            try main.saveToStore()
            let controller = try FetchedResultsController(
                FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.shelf?.label), SortDescriptor(\ShelvedBook.pages)]),
                context: main, sectionBy: \.shelf?.label)
            try controller.performFetch()
            controller.delegate = recorder
            return controller
        }
        let before = container.coordinator.externalChangeStatistics

        let other = try StoreCoordinator(model: Self.model(), url: url)
        defer { other.close() }
        let elsewhere = other.newContext(name: "elsewhere")
        try elsewhere.performAndWait {
            let books = try elsewhere.fetch(FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.pages)]))
            books[0].pages = 450          // moves from first to between 400 and …
            let shelf = try elsewhere.insert(BookShelf.self)
            shelf.label = "B"
            let book = try elsewhere.insert(ShelvedBook.self)
            book.isbn = "new"
            book.title = "new"
            book.pages = 50
            book.shelf = shelf
            try elsewhere.delete(books[2])
            try elsewhere.save()
        }
        // The statistics move once the merges are queued; then main's queue has run them.
        #expect(Self.eventually { container.coordinator.externalChangeStatistics.transactionsMerged > before.transactionsMerged })
        container.waitForPendingMerges()
        #expect(recorder.count >= 1)
        try main.performAndWait {
            let fresh = try main.fetch(FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.pages)]))
            #expect(Set(controller.snapshot.objectIDs) == Set(fresh.map(\.objectID)))
            let changes = try #require(recorder.changes.last)
            #expect(changes.applied() == changes.after)
            // main's objects hold the new values (merged, not re-read).
            #expect(fresh.map(\.pages).sorted() == [50, 100, 300, 400, 450])
        }
        let after = container.coordinator.externalChangeStatistics
        #expect(after.transactionsMerged == before.transactionsMerged + 1)
        #expect(after.reruns == before.reruns)

        // A batch update and a batch delete from the other side reach it too.
        var shorten = BatchUpdateRequest(ShelvedBook.self, predicate: #Predicate { $0.pages < 200 })
        try shorten.set(\.title, to: "short")
        _ = try other.execute(shorten)
        _ = try other.execute(BatchDeleteRequest(ShelvedBook.self, predicate: #Predicate { $0.pages > 440 }))
        #expect(Self.eventually { container.coordinator.externalChangeStatistics.transactionsMerged >= after.transactionsMerged + 2 })
        container.waitForPendingMerges()
        try main.performAndWait {
            let fresh = try main.fetch(FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.shelf?.label), SortDescriptor(\ShelvedBook.pages)]))
            #expect(controller.snapshot.objectIDs == fresh.map(\.objectID))
            #expect(fresh.filter { $0.pages < 200 }.allSatisfy { $0.title == "short" })
        }
        #expect(container.coordinator.externalChangeStatistics.reruns == before.reruns)
    }

    /// Work done, not time: another process's one-row change to a list of 3,000 rows reaches the
    /// controller as that row, read once; the list is not fetched again (a re-run reads 3,000).
    @Test func aOneRowChangeElsewhereReadsThatRowNotTheList() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        let container = try PersistentContainer(model: Self.model(), url: url)
        let main = container.mainContext
        let recorder = Recorder()
        let controller = try main.performAndWait {
            for i in 0..<3_000 {
                let book = try main.insert(ShelvedBook.self)
                book.isbn = "isbn-\(i)"
                book.title = "t\(i)"
                book.pages = i
            }
            try main.saveToStore()
            let controller = FetchedResultsController(FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.pages)]), context: main)
            try controller.performFetch()
            controller.delegate = recorder
            return controller
        }
        let before = container.coordinator.externalChangeStatistics
        container.coordinator.resetStatistics()
        let other = try StoreCoordinator(model: Self.model(), url: url)
        defer { other.close() }
        let elsewhere = other.newContext()
        let moved = try elsewhere.performAndWait {
            let book = try #require(try elsewhere.fetch(FetchRequest<ShelvedBook>(predicate: #Predicate { $0.pages == 10 })).first)
            book.pages = 5_000                                  // from 11th to last
            try elsewhere.save()
            return book.objectID
        }
        #expect(Self.eventually { container.coordinator.externalChangeStatistics.transactionsMerged > before.transactionsMerged })
        container.waitForPendingMerges()
        let changes = try #require(recorder.changes.last)
        #expect(changes.applied() == changes.after)
        #expect(main.performAndWait { controller.snapshot.objectIDs.last } == moved)
        // The follower reads on a reader of its own; the app's connections read the moved row.
        let statistics = container.coordinator.statistics
        #expect(statistics.rowsRead(of: .select) <= 10, "\(statistics.rowsRead(of: .select)) rows read")
        #expect(container.coordinator.externalChangeStatistics.reruns == before.reruns)
    }

    @Test func aCoordinatorWithoutHistoryMakesFollowersReRun() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        let container = try PersistentContainer(model: Self.model(), url: url, options: Self.following)
        let main = container.mainContext
        let recorder = Recorder()
        let controller = try main.performAndWait {
            let controller = FetchedResultsController(FetchRequest<ShelvedBook>(sortBy: [SortDescriptor(\ShelvedBook.pages)]), context: main)
            try controller.performFetch()
            controller.delegate = recorder
            return controller
        }
        var options = StoreOptions()
        options.history = .off
        let other = try StoreCoordinator(model: Self.model(), url: url, options: options)
        defer { other.close() }
        let elsewhere = other.newContext()
        try elsewhere.performAndWait {
            let book = try elsewhere.insert(ShelvedBook.self)
            book.isbn = "x"
            book.title = "x"
            try elsewhere.save()
        }
        #expect(Self.eventually { container.coordinator.externalChangeStatistics.reruns >= 1 })
        container.waitForPendingMerges()
        #expect(main.performAndWait { controller.snapshot.objectIDs.count } == 1)
        #expect(recorder.count == 1)
        #expect(try main.performAndWait { try main.fetch(FetchRequest<ShelvedBook>()).count } == 1)
        #expect(try other.history().isEmpty || other.history().allSatisfy { $0.kind != .save })
    }
}
