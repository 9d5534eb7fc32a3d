import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// An object reaches its context through a shared ``ContextLink`` (no weak reference): these pin
/// what that must keep. Objects do not keep their context alive; reading one whose context was
/// released, or reading it off its context's queue, stops with a message that names the fix.
@Suite struct ObjectConfinementTests {
    /// A good inserted and saved in a context that is then released; the object is returned.
    static func orphanedGood(_ url: URL) throws -> ManagedObject {
        let coordinator = try StoreCoordinator(model: ModelTests.goods(), url: url)
        var context: ManagedObjectContext? = coordinator.newContext()
        let good = try context!.performAndWait {
            let good = try context!.insert("Good")
            try good.setValue("Apple", forKey: "name")
            try context!.save()
            return good
        }
        context = nil
        return good
    }

    @Test func objectsDoNotKeepTheirContextAlive() throws {
        let directory = TemporaryDirectory()
        let good = try Self.orphanedGood(directory.file("g.sqlite"))
        #expect(good.managedObjectContext == nil)
    }

    @Test func objectsAnswerOnTheirContextsQueueAndKnowTheirContext() throws {
        let directory = TemporaryDirectory()
        let coordinator = try StoreCoordinator(model: ModelTests.goods(), url: directory.file("g.sqlite"))
        let context = coordinator.newContext()
        try context.performAndWait {
            let good = try context.insert("Good")
            good[attribute: "name"] = "Pear"
            #expect(good.managedObjectContext === context)
            #expect(good[attribute: "name"] as String? == "Pear")
            #expect(try good.value(forKey: "name") as? String == "Pear")
            let child = context.newChildContext()
            try context.save()
            try child.performAndWait {
                let mine = try child.existingObject(with: good.objectID)
                #expect(mine.managedObjectContext === child)
                #expect(mine[attribute: "name"] as String? == "Pear")
            }
        }
    }

    // The exit tests' stores live in folders this process makes and removes: a child stopped by a
    // precondition runs no deinitializer, so a folder it made itself would stay behind.

    @Test func readingAnObjectWhoseContextWasReleasedStops() async {
        let directory = TemporaryDirectory()
        await #expect(processExitsWith: .failure) { [folder = directory.url as URL] in
            let good = try ObjectConfinementTests.orphanedGood(folder.appendingPathComponent("g1.sqlite"))
            _ = good[attribute: "name"] as String?
        }
        await #expect(processExitsWith: .failure) { [folder = directory.url as URL] in
            let good = try ObjectConfinementTests.orphanedGood(folder.appendingPathComponent("g2.sqlite"))
            _ = try good.value(forKey: "name")
        }
    }

    /// The typed reads' inlined fast path checks only that the link's owner is the calling
    /// thread: a released context's link must have no owner, so that such a read, even inside a
    /// block of another context (the thread on *a* queue), takes the general path and stops.
    @Test func aReleasedContextsLinkIsOnNoQueue() throws {
        let directory = TemporaryDirectory()
        let good = try Self.orphanedGood(directory.file("g.sqlite"))
        #expect(!good.link.isAlive)
        #expect(good.link.owner.load(ordering: .acquiring) == 0)
        #expect(!good.link.isOnQueue)
    }

    @Test func readingAnObjectWhoseContextWasReleasedStopsInsideAnotherContextsBlock() async {
        let directory = TemporaryDirectory()
        await #expect(processExitsWith: .failure) { [folder = directory.url as URL] in
            let good = try ObjectConfinementTests.orphanedGood(folder.appendingPathComponent("g1.sqlite"))
            let other = try StoreCoordinator(model: ModelTests.goods(), url: folder.appendingPathComponent("g2.sqlite")).newContext()
            other.performAndWait { _ = good[attribute: "name"] as String? }
        }
    }

    /// The queue check's thread identity (`strata_current_thread`, the thread pointer on Linux):
    /// never 0 (a link's "no owner"), the same on every call from one thread, another on another
    /// thread alive at the same time.
    @Test func theThreadIdentityIsStableAndDistinct() {
        let mine = ContextLink.currentThread()
        #expect(mine != 0)
        #expect(ContextLink.currentThread() == mine)
        #if os(Linux) && arch(x86_64)
        #expect(mine == UInt(pthread_self()), "on x86-64 Linux the thread pointer is pthread_self()")
        #endif
        let theirs = Locked<UInt>(0)
        let started = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0)
        let thread = Thread {
            theirs.withLock { $0 = ContextLink.currentThread() }
            started.signal()
            finish.wait() // alive while this thread compares
        }
        thread.start()
        started.wait()
        let other = theirs.withLock { $0 }
        finish.signal()
        #expect(other != 0)
        #expect(other != mine)
    }

    @Test func readingAnObjectOffItsContextsQueueStops() async {
        let directory = TemporaryDirectory()
        await #expect(processExitsWith: .failure) { [folder = directory.url as URL] in
            let coordinator = try StoreCoordinator(model: ModelTests.goods(), url: folder.appendingPathComponent("g1.sqlite"))
            let context = coordinator.newContext()
            let good = try context.performAndWait { try context.insert("Good") }
            _ = good[attribute: "name"] as String?
        }
        // The control: the same read inside performAndWait exits normally.
        await #expect(processExitsWith: .success) { [folder = directory.url as URL] in
            let coordinator = try StoreCoordinator(model: ModelTests.goods(), url: folder.appendingPathComponent("g2.sqlite"))
            let context = coordinator.newContext()
            let good = try context.performAndWait { try context.insert("Good") }
            context.performAndWait { precondition(good[attribute: "name"] as String? == "x") }
        }
    }
}
