import Foundation
import Testing
import Strata
import StrataTestSupport

@Entity final class Tome: ManagedObject {
    #Unique<Tome>([\.title, \.author])
    @Attribute(.unique) var isbn: String
    var title: String
    var author: String = ""
    var price: Double = 0
    /// Never in an import file: an upsert must keep it.
    var shelfNote: String?
}

@Entity final class Loan: ManagedObject {
    var who: String = ""
    var tome: Tome?
}

/// The same entity without unique keys (the version a store was made with before them).
@Entity("Tome") final class PlainTome: ManagedObject {
    var isbn: String
    var title: String
    var author: String = ""
    var price: Double = 0
    var shelfNote: String?
}

/// Unique keys in the model, batch inserts that upsert, and the resumable import, as a user
/// writes them.
@Suite struct UniqueKeysAndUpsertTests {
    static func model() throws -> Model { try Model(version: "2", types: [Tome.self]) }
    static func loansModel() throws -> Model { try Model(version: "3", types: [Tome.self, Loan.self]) }

    /// Records a controller's object changes by kind.
    final class ChangeRecorder: FetchedResultsControllerDelegate {
        var kinds: [String] = []
        func controller(_ controller: AnyFetchedResultsController, didChange objectID: ObjectID,
                        at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
            kinds.append("\(type)")
        }
    }

    /// SwiftData's rule: an object inserted with a key a stored row holds becomes that row.
    @Test func anInsertedObjectWithAStoredKeyBecomesThatRowWhenSaved() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.loansModel(), url: folder.file("books.sqlite"))
        let main = container.mainContext
        let storedID = try main.performAndWait {
            let tome = try main.insert(Tome.self)
            tome.isbn = "111"
            tome.title = "Dune"
            tome.author = "Herbert"
            tome.price = 9
            tome.shelfNote = "kept"
            try main.saveToStore()
            return tome.objectID
        }
        let recorder = ChangeRecorder()
        let controller = try main.performAndWait {
            let controller = FetchedResultsController(FetchRequest<Tome>(sortBy: [SortDescriptor(\.isbn)]), context: main)
            controller.delegate = recorder
            try controller.performFetch()
            return controller
        }
        let update = container.newUpdateContext()
        let before = try container.coordinator.currentHistoryToken()
        let (newObjectID, loanTome) = try update.performAndWait {
            let again = try update.insert(Tome.self)
            again.isbn = "111"
            again.title = "Dune"
            again.author = "Herbert"
            again.price = 12
            let loan = try update.insert(Loan.self)
            loan.who = "Ada"
            loan.tome = again
            try update.saveToStore()
            return (again.objectID, loan.tome?.objectID)
        }
        #expect(newObjectID == storedID)
        #expect(loanTome == storedID)
        try main.performAndWait {
            let all = try main.fetch(FetchRequest<Tome>())
            #expect(all.count == 1)
            #expect(all.first?.price == 12)
            // The inserted object is the row's new state, whole (a batch upsert writes only what
            // its fill set; see the article).
            #expect(all.first?.shelfNote == nil)
            let loans = try main.fetch(FetchRequest<Loan>())
            #expect(loans.first?.tome?.objectID == storedID)
            #expect(try controller.fetchedObjects?.count == 1)
        }
        #expect(!recorder.kinds.contains("insert") && !recorder.kinds.contains("delete"), "\(recorder.kinds)")
        #expect(recorder.kinds.contains("update"), "\(recorder.kinds)")
        let transactions = try container.coordinator.history(after: before)
        let tomeChanges = transactions.flatMap(\.changes).filter { $0.objectID.entityName == "Tome" }
        #expect(tomeChanges.map(\.kind) == [.update])

        // Two objects inserted with one new key in one save become one row.
        try update.performAndWait {
            for price in [1.0, 2.0] {
                let tome = try update.insert(Tome.self)
                tome.isbn = "222"
                tome.title = "Emma"
                tome.price = price
            }
            try update.saveToStore()
        }
        try main.performAndWait {
            let emmas = try main.fetch(FetchRequest<Tome>(predicate: #Predicate { $0.isbn == "222" }))
            #expect(emmas.map(\.price) == [2.0])
        }
    }

    @Test func theStrictRuleThrowsAndLeavesTheContextAsItWas() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.model(), url: folder.file("books.sqlite"))
        let main = container.mainContext
        try main.performAndWait {
            let tome = try main.insert(Tome.self)
            tome.isbn = "111"
            tome.title = "Dune"
            try main.saveToStore()
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            update.uniqueKeyConflicts = .fail
            let again = try update.insert(Tome.self)
            again.isbn = "111"
            again.title = "Other"
            let id = again.objectID
            #expect(throws: UniqueKeyConflictError(entity: "Tome", key: ["isbn"], values: ["111"])) { try update.saveToStore() }
            #expect(again.objectID == id)
            #expect(again.isInserted)
            #expect(update.hasChanges)
            // The default rule, and a store-wins policy: the object takes the stored values.
            update.uniqueKeyConflicts = .upsert
            update.mergePolicy = .storeWinsPerProperty
            try update.saveToStore()
            #expect(again.title == "Dune")
        }
        try main.performAndWait {
            let titles = try main.fetch(FetchRequest<Tome>()).map(\.title)
            #expect(titles == ["Dune"])
        }
    }


    @Test func uniqueKeysComeFromTheAttributeOptionAndUniqueMacro() throws {
        let entity = try #require(try Self.model().entity(named: "Tome"))
        #expect(entity.uniqueKeys == [["isbn"], ["title", "author"]])
        #expect(entity.attribute(named: "isbn")?.isUnique == true)
        #expect(entity.uniquenessConstraints == [["title", "author"]])
        // Part of the version hash; a model without unique keys hashes as before.
        let plain = try Model(version: "1", types: [PlainTome.self])
        #expect(plain.versionHash != (try Self.model()).versionHash)
        // The string model says the same, and survives the store's JSON.
        let written = Entity("Tome", attributes: [Attribute("isbn", .string, isOptional: false, isUnique: true),
                                                     Attribute("title", .string, isOptional: false),
                                                     Attribute("author", .string, isOptional: false, defaultValue: .string("")),
                                                     Attribute("price", .double, isOptional: false, defaultValue: .double(0)),
                                                     Attribute("shelfNote", .string)],
                             uniquenessConstraints: [["title", "author"]])
        let stringModel = try Model(version: "2", entities: [written])
        #expect(stringModel.versionHash == (try Self.model()).versionHash)
        let decoded = try JSONDecoder().decode(Model.self, from: stringModel.jsonData())
        #expect(decoded.entity(named: "Tome")?.uniqueKeys == [["isbn"], ["title", "author"]])
        #expect(throws: ModelError.self) {
            try Model(version: "x", entities: [Entity("Tome", attributes: [Attribute("isbn", .string)], uniquenessConstraints: [["nope"]])])
        }
    }

    @Test func batchInsertUpsertsByTheUniqueKey() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.model(), url: folder.file("books.sqlite"))
        let coordinator = container.coordinator
        let books = [("111", "Dune", "Herbert", 9.5), ("222", "Emma", "Austen", 4.0), ("333", "Ulysses", "Joyce", 12.0)]
        func request(_ rows: [(String, String, String, Double)], _ conflict: BatchConflictResolution) -> BatchInsertRequest<Tome> {
            BatchInsertRequest(Tome.self, count: rows.count, onConflict: conflict) { index, row in
                try row.set(\.isbn, rows[index].0)
                try row.set(\.title, rows[index].1)
                try row.set(\.author, rows[index].2)
                try row.set(\.price, rows[index].3)
            }
        }
        let first = try coordinator.execute(request(books, .update))
        #expect((first.inserted, first.updated, first.unchanged) == (3, 0, 0))
        let generation = try coordinator.currentHistoryToken().generation

        // The same rows again: nothing changes, nothing is committed.
        let again = try coordinator.execute(request(books, .update))
        #expect((again.inserted, again.updated, again.unchanged) == (0, 0, 3))
        #expect(again.generation == nil)
        #expect(try coordinator.currentHistoryToken().generation == generation)

        // A note set by the app survives an upsert that does not name it.
        let main = container.mainContext
        let emmaID = try main.performAndWait {
            let emma = try #require(try main.fetch(FetchRequest<Tome>(predicate: #Predicate { $0.isbn == "222" })).first)
            emma.shelfNote = "signed"
            try main.saveToStore()
            return emma.objectID
        }
        let changed = try coordinator.execute(request([("222", "Emma", "Austen", 5.0), ("444", "Kim", "Kipling", 3.0)], .update))
        #expect((changed.inserted, changed.updated, changed.unchanged) == (1, 1, 0))
        #expect(changed.objectIDs.contains(emmaID))
        try main.performAndWait {
            let all = try main.fetch(FetchRequest<Tome>(sortBy: [SortDescriptor(\.isbn)]))
            #expect(all.map(\.isbn) == ["111", "222", "333", "444"])
            let emma = try #require(all.first { $0.isbn == "222" })
            #expect(emma.objectID == emmaID)
            #expect(emma.price == 5.0)
            #expect(emma.shelfNote == "signed")
        }
        // The history says update for the upserted row, insert for the new one.
        let last = try #require(try coordinator.history(after: HistoryToken(store: coordinator.storeUUID, generation: generation + 1)).last)
        #expect(Set(last.changes.map { "\($0.kind)" }) == ["insert", "update"])
        let update = try #require(last.changes.first { $0.kind == .update })
        #expect(update.objectID == emmaID)
        #expect(update.attributes["price"] == .some(.double(5.0)))

        // The compound key decides too: same title and author, another ISBN.
        #expect(throws: BatchError.uniqueKeyConflict(entity: "Tome", key: ["title", "author"], values: ["Dune", "Herbert"])) {
            try coordinator.execute(request([("999", "Dune", "Herbert", 1.0)], .fail))
        }
        let ignored = try coordinator.execute(request([("111", "Dune", "Herbert", 1.0)], .ignore))
        #expect((ignored.inserted, ignored.updated, ignored.unchanged) == (0, 0, 1))
        // A row whose two keys name two different rows can't be one of them.
        #expect(throws: BatchError.self) { try coordinator.execute(request([("111", "Emma", "Austen", 1.0)], .update)) }
    }

    @Test func aMigrationAddingAUniqueKeyNamesTheCollidingRows() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("books.sqlite")
        do {
            let old = try StoreCoordinator(model: try Model(version: "1", types: [PlainTome.self]), url: url)
            try old.execute(BatchInsertRequest(PlainTome.self, count: 3) { index, row in
                try row.set(\.isbn, ["111", "111", "222"][index])
                try row.set(\.title, ["A", "B", "C"][index])
            })
            old.close()
        }
        let before = try Data(contentsOf: url)
        var options = StoreOptions()
        options.migration = .lightweight()
        #expect(throws: MigrationError.uniqueKeyCollision(entity: "Tome", key: ["isbn"], values: [["111"]], count: 1)) {
            _ = try StoreCoordinator(model: try Self.model(), url: url, options: options)
        }
        #expect(try Data(contentsOf: url) == before)
        // Duplicates gone, the migration goes through and the key holds.
        do {
            let old = try StoreCoordinator(model: try Model(version: "1", types: [PlainTome.self]), url: url)
            try old.execute(BatchDeleteRequest(PlainTome.self, predicate: #Predicate { $0.title == "B" }))
            old.close()
        }
        let migrated = try StoreCoordinator(model: try Self.model(), url: url, options: options)
        defer { migrated.close() }
        #expect(throws: BatchError.self) {
            try migrated.execute(BatchInsertRequest(Tome.self, count: 1) { _, row in
                try row.set(\.isbn, "111")
                try row.set(\.title, "Z")
            })
        }
    }

    @Test func anImportRowWhoseKeysNameTwoRowsIsARejectNotAStop() throws {
        let folder = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: try Self.model(), url: folder.file("books.sqlite"))
        defer { coordinator.close() }
        let csv = folder.file("books.csv")
        // Row 4: a new ISBN, but (Dune, Herbert) is row 2's; row 5: a required title missing.
        try Data("isbn,title,author,price\n1,Dune,Herbert,1\n2,Emma,Austen,2\n3,Dune,Herbert,3\n4,,Nobody,4\n5,Kim,Kipling,5\n".utf8).write(to: csv)
        var options = ImportOptions(entity: "Tome")
        options.rejects = folder.file("rejects.jsonl")
        let summary = try coordinator.importFile(at: csv, options: options)
        #expect((summary.inserted, summary.updated, summary.rejected) == (3, 0, 2))
        let lines = try String(contentsOf: folder.file("rejects.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains("\"line\":4") && lines[0].contains("unique"))
        #expect(lines[1].contains("\"line\":5") && lines[1].contains("required"))
        // Under strict, the first bad row stops the import with its batch not committed.
        let strictStore = try StoreCoordinator(model: try Self.model(), url: folder.file("strict.sqlite"))
        defer { strictStore.close() }
        options.strict = true
        options.rejects = nil
        #expect(throws: ImportRejection.self) { try strictStore.importFile(at: csv, options: options) }
        #expect(try strictStore.currentHistoryToken().generation == 0)
    }

    @Test func aJSONLinesImportUpsertsAndRejectsWhatIsNotAnObject() throws {
        let folder = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: try Self.model(), url: folder.file("books.sqlite"))
        defer { coordinator.close() }
        let file = folder.file("books.jsonl")
        try Data(#"""
            {"isbn": "1", "title": "Dune", "author": "Herbert", "price": 9.5}
            {"isbn": "2", "title": "Emma", "price": 4, "extra": true}
            [1, 2]
            {"isbn": "1", "title": "Dune", "author": "Herbert", "price": 10}
            {broken
            """#.utf8).write(to: file)
        var options = ImportOptions(entity: "Tome")
        options.batchSize = 2     // the fourth line's update in a batch of its own
        let summary = try coordinator.importFile(at: file, options: options)
        #expect((summary.inserted, summary.updated, summary.rejected) == (2, 1, 2))
        #expect(summary.ignoredColumns == ["extra"])
        // The fourth line updated the first row: the history says so, with its new price.
        let update = try coordinator.history(after: nil).flatMap(\.changes).first { $0.kind == .update }
        #expect(update?.attributes["price"] == .some(.double(10)))
    }

    @Test func anImportRunTwiceChangesNothingTheSecondTime() throws {
        let folder = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: try Self.model(), url: folder.file("books.sqlite"))
        defer { coordinator.close() }
        let csv = folder.file("books.csv")
        var text = "isbn,title,writer,price,unused\n"
        for i in 0..<1_234 { text += "\(10_000 + i),\"Title, \(i)\",Author \(i % 97),\(Double(i) / 4),x\n" }
        text += "bad,Broken,Nobody,not-a-number,x\n"
        try Data(text.utf8).write(to: csv)
        var options = ImportOptions(entity: "Tome")
        options.mapping = ["writer": "author"]
        options.batchSize = 100
        options.rejects = folder.file("rejects.csv")
        let first = try coordinator.importFile(at: csv, options: options)
        #expect((first.inserted, first.updated, first.unchanged, first.rejected) == (1_234, 0, 0, 1))
        #expect(first.ignoredColumns == ["unused"])
        let rejects = try String(contentsOf: folder.file("rejects.csv"), encoding: .utf8)
        #expect(rejects.contains("1236,price,"))
        let generation = try coordinator.currentHistoryToken().generation
        let second = try coordinator.importFile(at: csv, options: options)
        #expect(second.alreadyComplete)
        // Read again in full (--restart): every row unchanged, still no commit.
        options.restart = true
        let third = try coordinator.importFile(at: csv, options: options)
        #expect((third.inserted, third.updated, third.unchanged, third.commits) == (0, 0, 1_234, 0))
        #expect(try coordinator.currentHistoryToken().generation == generation)
        // The library changed: one price edited, one row added.
        text = text.replacingOccurrences(of: "10007,\"Title, 7\",Author 7,1.75,x", with: "10007,\"Title, 7\",Author 7,2.0,x")
        text += "99999,New,Someone,1.0,x\n"
        try Data(text.utf8).write(to: csv)
        options.restart = false
        let fourth = try coordinator.importFile(at: csv, options: options)
        #expect((fourth.inserted, fourth.updated, fourth.unchanged) == (1, 1, 1_233))
    }
}
