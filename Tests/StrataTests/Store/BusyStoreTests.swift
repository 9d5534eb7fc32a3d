import Foundation
import StrataSQLite
import StrataTestSupport
import Testing
@testable import Strata

/// Contention with another connection (another coordinator, another process): a save that finds
/// the write lock held past `busyTimeout` throws `StoreError.busy` naming the store, and every
/// context is as it was; reads never wait for that lock.
@Suite struct BusyStoreTests {
    @Test func aSaveBlockedPastTheBusyTimeoutIsATypedErrorAndLosesNothing() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        var options = StoreOptions()
        options.busyTimeout = .milliseconds(200)
        let container = try PersistentContainer(model: try ReaderPoolTests.model(), url: url, options: options)
        defer { container.coordinator.close() }
        let main = container.mainContext
        let (first, second) = try main.performAndWait {
            let first = try main.insert("Item"), second = try main.insert("Item")
            try first.setValue("first", forKey: "name")
            try second.setValue("second", forKey: "name")
            try main.saveToStore()
            // Unsaved changes on main, made before the other connection takes the lock.
            let third = try main.insert("Item")
            try third.setValue("third", forKey: "name")
            try first.setValue("first, renamed", forKey: "name")
            return (first, second)
        }

        // Another connection to the same file takes the write lock and keeps it.
        let other = try Connection(path: url.path)
        try other.execute("BEGIN IMMEDIATE")
        try other.execute("UPDATE Item SET name = 'held' WHERE 0")

        try main.performAndWait {
            let began = ContinuousClock.now
            do {
                try main.saveToStore()
                Issue.record("a save under another connection's write lock returned")
            } catch let StoreError.busy(path, timeout) {
                #expect(path == url.path)
                #expect(timeout == .milliseconds(200))
                #expect(ContinuousClock.now - began >= .milliseconds(150), "it waited for the busy timeout")
                #expect("\(StoreError.busy(path: path, timeout: timeout))".contains("save again later"))
            }
            // As it was: main still has its changes, the writer none of them.
            #expect(main.hasChanges)
            #expect(main.insertedObjects.count == 1 && main.updatedObjects.count == 1)
            #expect(try first.value(forKey: "name") as? String == "first, renamed")
            // Reads never wait for the lock: a fetch and a count from the last committed state.
            let began2 = ContinuousClock.now
            let names = try main.fetch(FetchRequest(entityName: "Item", sortKeys: [.ascending("name")]))
                .map { try $0.value(forKey: "name") as? String }
            #expect(names.count == 3)   // two saved, one pending insert overlaid
            #expect(try container.writerContext.performAndWait { try container.writerContext.count(for: FetchRequest(entityName: "Item")) } == 2)
            #expect(ContinuousClock.now - began2 < .milliseconds(150), "a read did not wait for the write lock")
        }
        #expect(container.writerContext.performAndWait { !container.writerContext.hasChanges })

        // The lock goes; the same save succeeds and writes what it held.
        try other.execute("ROLLBACK")
        other.close()
        try main.performAndWait {
            try main.saveToStore()
            #expect(!main.hasChanges)
            _ = second
        }
        let check = try Connection(path: url.path)
        defer { check.close() }
        var stored: [String] = []
        try check.prepare("SELECT name FROM Item ORDER BY name").forEachRow { stored.append($0.string(at: 0)) }
        #expect(stored == ["first, renamed", "second", "third"])
    }
}
