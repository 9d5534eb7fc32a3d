#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Strata
import StrataTestSupport
import Testing

/// The page-checksum shim reseals each WAL frame's cumulative checksum after it fills in the
/// page's checksum (see `strata_vfs.c`, "WAL frames"). A frame sealed wrongly breaks the log's
/// chain: SQLite's recovery stops there and drops every commit after it. So several writers work
/// one checksummed store at once — two writer processes committing in bursts, this process's
/// saves, transactions large enough to spill frames before their commit, ones that spill and
/// then roll back (their frames written over by the next writer), writers killed wherever they
/// are — and the log is then recovered cold: no damage (the open's scan would throw
/// `walDamaged`), every page reads under its checksum, and every acknowledged commit is there.
@Suite(.serialized) struct ChecksummedWALWritersTests {
    @Test func manyWritersLeaveALogThatRecoversWithEveryAcknowledgedCommit() throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = Int(environment["STRATA_WAL_WRITERS_ROUNDS"] ?? "") ?? 40
        var rng = SplitMix64(seed: UInt64(environment["STRATA_WAL_WRITERS_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max))
        let seed = rng.next()
        rng = SplitMix64(seed: seed)
        print("wal-writers: seed \(seed) (replay: STRATA_WAL_WRITERS_SEED=\(seed))")
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        var options = StoreOptions()
        options.cacheSizeKiB = 64     // a large transaction spills frames before its commit
        var coordinator: StoreCoordinator? = try StoreCoordinator(model: TestModels.bookshelf(), url: url, options: options)

        var lives = 0
        func spawn() throws -> ExternalChangesProcessTests.WriterChild {
            lives += 1
            return try ExternalChangesProcessTests.WriterChild(store: url, seed: rng.next(), killPoint: nil,
                                                                stderr: directory.file("writer-\(lives).stderr"))
        }
        var children = [try spawn(), try spawn()]
        var acknowledged: Int64 = 0
        var reached = (bursts: 0, childCommits: 0, saves: 0, spilled: 0, rolledBack: 0, kills: 0, conflicts: 0)
        func drain(_ child: ExternalChangesProcessTests.WriterChild, _ timeout: Duration) {
            while let line = child.nextLine(timeout: timeout) {
                let parts = line.split(separator: " ")
                if parts.first == "committed", parts.count > 1, let generation = Int64(parts[1]) {
                    acknowledged = max(acknowledged, generation)
                    reached.childCommits += 1
                }
            }
        }
        // A writer child is made for one writer beside a reader: it stops (status 1) when its
        // save meets the other child's as a merge conflict. That is not this test's concern;
        // any other end is.
        func check(_ ending: ExternalChangesProcessTests.WriterChild.Ending) {
            #expect(ending.killed || ending.status == 0 || ending.stderr.contains("merge conflict"), "a writer child \(ending)")
            if !ending.killed, ending.status != 0 { reached.conflicts += 1 }
        }
        for _ in 0..<rounds {
            for index in children.indices where !children[index].isRunning {
                drain(children[index], .milliseconds(50))
                check(children[index].reap())
                children[index] = try spawn()
            }
            for child in children {
                child.send("burst \(Int.random(in: 2...12, using: &rng))")
                reached.bursts += 1
            }
            let store = coordinator!
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                let context = store.newContext(name: "saver")
                try context.performAndWait {
                    for _ in 0..<Int.random(in: 1...20, using: &rng) {
                        let book = try context.insert("Book")
                        try book.setValue("saved \(rng.next())", forKey: "title")
                    }
                    try context.save()
                }
                acknowledged = max(acknowledged, try store.currentHistoryToken().generation)
                reached.saves += 1
            case 1:
                // About 600 KiB of rows in one transaction: frames spill long before the commit.
                let title = String(repeating: "x", count: 200)
                let result = try store.execute(BatchInsertRequest<ManagedObject>(entityName: "Book", count: 3_000) { index, row in
                    try row.set("\(title) \(index)", forKey: "title")
                })
                acknowledged = max(acknowledged, result.generation ?? 0)
                reached.spilled += 1
            case 2:
                // The same, refused at its last row: the spilled frames are rolled back, and the
                // next writer (a child, or this process) writes over them.
                let title = String(repeating: "y", count: 200)
                struct Refused: Error {}
                #expect(throws: Refused.self) {
                    try store.execute(BatchInsertRequest<ManagedObject>(entityName: "Book", count: 3_000) { index, row in
                        if index == 2_999 { throw Refused() }
                        try row.set("\(title) \(index)", forKey: "title")
                    })
                }
                reached.rolledBack += 1
            default:
                // A writer killed wherever it is (mid-commit included), another started.
                let victim = Int.random(in: 0..<children.count, using: &rng)
                usleep(UInt32.random(in: 0...20_000, using: &rng))
                children[victim].kill()
                drain(children[victim], .milliseconds(50))
                check(children[victim].reap())
                children[victim] = try spawn()
                reached.kills += 1
            }
            for child in children { drain(child, .milliseconds(5)) }
        }
        // This process lets go first (a clean close by the last connection would checkpoint the
        // log away); the children commit on and are killed mid-burst, so that the log is left for
        // a cold recovery, unchecked frames and all.
        coordinator?.close()
        coordinator = nil
        for child in children where child.isRunning { child.send("burst 12") }
        usleep(UInt32.random(in: 5_000...40_000, using: &rng))
        for child in children {
            child.kill()
            drain(child, .milliseconds(50))
            check(child.reap())
        }
        let logBytes = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? Int) ?? 0
        print("wal-writers reached: bursts=\(reached.bursts) child-commits=\(reached.childCommits) saves=\(reached.saves) spilled=\(reached.spilled) rolled-back=\(reached.rolledBack) kills=\(reached.kills) children-stopped-by-conflicts=\(reached.conflicts) log-left-bytes=\(logBytes)")
        #expect(reached.spilled > 0 && reached.rolledBack > 0 && reached.kills > 0)
        #expect(logBytes > 0, "no log was left for the recovery to read")

        // Recovered cold: the scan finds no damage (an open would throw walDamaged), every page
        // reads under its checksum, and no acknowledged commit is missing.
        let reopened = try StoreCoordinator(model: TestModels.bookshelf(), url: url)
        defer { reopened.close() }
        #expect(try reopened.currentHistoryToken().generation >= acknowledged)
        let context = reopened.newContext(name: "reader")
        let books = try context.performAndWait { try context.fetch(FetchRequest<ManagedObject>(entityName: "Book")).count }
        #expect(books > 0)
    }
}
