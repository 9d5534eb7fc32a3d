import Dispatch
import Foundation
import StrataTestSupport
import Testing
@_spi(Testing) @testable import Strata

/// Reads never wait for a commit (issue 40, first part): a WAL store's reads go through a pool
/// of read-only connections, beside the one writer connection.
@Suite(.serialized) struct ReaderPoolTests {
    static func model() throws -> Model {
        try Model(version: "1", entities: [
            Entity("Item", attributes: [Attribute("name", .string, isOptional: false), Attribute("rank", .int64)]),
        ])
    }

    /// A background context's commit is held open between its statements (a test hook at its
    /// `rows.written` point: the rows are written, the transaction is not committed); meanwhile
    /// main fetches, counts, fires a fault and runs a results controller's `performFetch`, each
    /// from the last committed state, and all of them finish before the commit is let go. With one
    /// connection behind one lock, the reads would wait for the commit (and this test for its
    /// timeout).
    @Test func readsCompleteWhileACommitIsHeldOpen() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.model(), url: directory.file("store.sqlite"))
        defer { container.coordinator.close() }
        let main = container.mainContext
        let firstID = try main.performAndWait {
            for n in 0..<50 {
                let item = try main.insert("Item")
                try item.setValue("item \(n)", forKey: "name")
                try item.setValue(Int64(n), forKey: "rank")
            }
            try main.saveToStore()
            main.reset()
            return try main.fetchObjectIDs(FetchRequest(entityName: "Item", sortKeys: [.ascending("rank")]))[0]
        }
        let paused = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), saved = DispatchSemaphore(value: 0)
        KillPoint.setObserver { name in
            guard name == "hold-open.rows.written" else { return }
            paused.signal()
            release.wait()
        }
        defer { KillPoint.setObserver(nil) }
        let background = container.newBackgroundContext(name: "hold-open")
        Thread.detachNewThread {
            background.performAndWait {
                for n in 0..<10 {
                    let item = try? background.insert("Item")
                    try? item?.setValue("new \(n)", forKey: "name")
                }
                _ = try? background.save()
            }
            saved.signal()
        }
        #expect(paused.wait(timeout: .now() + 30) == .success, "the commit reached its hook")
        let results = Locked<(fetched: Int, counted: Int, name: String?, listed: Int)?>(nil)
        let read = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let found = try? main.performAndWait { () -> (Int, Int, String?, Int) in
                let fetched = try main.fetch(FetchRequest(entityName: "Item")).count
                let counted = try main.count(for: FetchRequest(entityName: "Item"))
                let fault = try main.object(with: firstID)
                let name = try fault.value(forKey: "name") as? String
                let controller = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortKeys: [.ascending("rank")]),
                                                          managedObjectContext: main)
                try controller.performFetch()
                return (fetched, counted, name, try controller.fetchedObjects?.count ?? -1)
            }
            results.withLock { $0 = found }
            read.signal()
        }
        let finished = read.wait(timeout: .now() + 10) == .success
        release.signal()
        saved.wait()
        if !finished { read.wait() }
        #expect(finished, "the reads finished while the commit was held open")
        let values = try #require(results.withLock { $0 })
        // The last committed state: the 50 saved items, not the 10 being written.
        #expect(values.fetched == 50 && values.counted == 50 && values.listed == 50)
        #expect(values.name == "item 0")
    }

    /// Read your writes: once a save that reached the store returns, every later read of the
    /// coordinator sees it, whichever reader serves it — under a concurrent writer.
    @Test func aReadAfterASaveSeesIt() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.model(), url: directory.file("store.sqlite"))
        defer { container.coordinator.close() }
        let stop = Locked(false)
        let other = DispatchSemaphore(value: 0)
        // A second writer, committing all along.
        Thread.detachNewThread {
            let background = container.newBackgroundContext(name: "busy")
            var n = 0
            while !stop.withLock({ $0 }) {
                background.performAndWait {
                    let item = try? background.insert("Item")
                    try? item?.setValue("busy \(n)", forKey: "name")
                    _ = try? background.save()
                }
                n += 1
            }
            other.signal()
        }
        let update = container.newUpdateContext()
        var misses = 0
        var failure: (any Error)?
        do {
            for round in 0..<200 {
                let name = "mine \(round)"
                try update.performAndWait {
                    let item = try update.insert("Item")
                    try item.setValue(name, forKey: "name")
                    try item.setValue(Int64(round), forKey: "rank")
                    try update.saveToStore()
                }
                // A fresh context reads through the store: it must find the row at once.
                let reader = container.coordinator.newContext(name: "reader")
                let count = try reader.performAndWait {
                    try reader.count(for: FetchRequest(entityName: "Item", predicate: try Condition("name == %@", name)))
                }
                if count != 1 { misses += 1 }
            }
        } catch {
            failure = error
        }
        stop.withLock { $0 = true }
        other.wait()
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(misses == 0, "reads that did not see a save that had returned")
    }

    /// An update context's `saveToStore()` through clean ancestors (the shortcut) holds no
    /// ancestor's queue while SQLite writes: with its commit held open at `writer.rows.written`,
    /// main's queue serves a fetch, an edit and an insert (its key from a block already
    /// reserved, without the commit's lock); after the save returns, main has the saved rows and
    /// keeps its own changes on top.
    @Test func mainServesReadsWhileAnUpdateContextsSaveCommits() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(model: try Self.model(), url: directory.file("store.sqlite"))
        defer { container.coordinator.close() }
        let main = container.mainContext
        let firstID = try main.performAndWait {
            let item = try main.insert("Item")
            try item.setValue("first", forKey: "name")
            try main.saveToStore()
            return item.objectID
        }
        let paused = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), saved = DispatchSemaphore(value: 0)
        // The observer is process-wide and every container's root is named "writer": only the
        // thread that runs this test's save stops (other suites commit meanwhile).
        KillPoint.setObserver { name in
            guard name == "writer.rows.written", Thread.current.threadDictionary["strata.hold-open"] != nil else { return }
            paused.signal()
            release.wait()
        }
        defer { KillPoint.setObserver(nil) }
        let update = container.newUpdateContext(name: "update")
        let result = Locked<Int64?>(nil)
        Thread.detachNewThread {
            update.performAndWait {
                Thread.current.threadDictionary["strata.hold-open"] = true
                defer { Thread.current.threadDictionary["strata.hold-open"] = nil }
                for n in 0..<10 {
                    let item = try? update.insert("Item")
                    try? item?.setValue("new \(n)", forKey: "name")
                }
                result.withLock { $0 = (try? update.saveToStore())??.generation }
            }
            saved.signal()
        }
        #expect(paused.wait(timeout: .now() + 30) == .success, "the commit reached its hook")
        let served = DispatchSemaphore(value: 0)
        let seen = Locked<Int?>(nil)
        Thread.detachNewThread {
            let count = try? main.performAndWait {
                try main.existingObject(with: firstID).setValue("edited on main", forKey: "name")
                // An insert takes its key from the block main's first insert reserved: no wait
                // for the commit's lock.
                try main.insert("Item").setValue("inserted on main", forKey: "name")
                return try main.count(for: FetchRequest(entityName: "Item"))
            }
            seen.withLock { $0 = count }
            served.signal()
        }
        let finished = served.wait(timeout: .now() + 10) == .success
        release.signal()
        saved.wait()
        if !finished { served.wait() }
        #expect(finished, "main's queue served a fetch, an edit and an insert while the update context's commit was held open")
        #expect(seen.withLock { $0 } == 2)
        #expect(result.withLock { $0 } == 2)
        let after = try main.performAndWait {
            (try main.count(for: FetchRequest(entityName: "Item")),
             try main.existingObject(with: firstID).value(forKey: "name") as? String, main.hasChanges)
        }
        #expect(after.0 == 12 && after.1 == "edited on main" && after.2)
    }
}
