import Foundation
import Logging
import PostgresNIO
import Strata
import StrataSync
import StrataTestSupport
import Testing

/// Two replicas of one store, each with its own file, through a real PostgreSQL server started
/// for the suite (PostgresServer): the rules of the "Syncing with PostgreSQL" article, each shown
/// once by the order of pushes that decides it.
@Suite(.serialized) struct SyncBasicsTests {
    let server: PostgresServer
    let folder = TemporaryDirectory("strata-sync-basics")

    init() throws {
        server = try PostgresServer(name: "strata-sync-basics")
    }

    /// A fresh database on the suite's server, so that each test starts with an empty log.
    func freshDatabase() throws -> SyncServer {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        _ = try server.psql("CREATE DATABASE \(name)")
        return SyncServer(socketDirectory: server.socketDirectory, username: server.username, database: String(name))
    }

    func replica(_ name: String, _ database: SyncServer) throws -> (StoreCoordinator, SyncEngine) {
        let coordinator = try StoreCoordinator(model: TestModels.syncProjects(), url: folder.url.appendingPathComponent("\(name)-\(database.database).sqlite"))
        return (coordinator, try SyncEngine(coordinator: coordinator, server: database, name: name))
    }

    func rows(_ coordinator: StoreCoordinator, _ entity: String) throws -> [Int64: [String: String]] {
        let context = coordinator.newContext()
        return try context.performAndWait {
            var result: [Int64: [String: String]] = [:]
            for object in try context.fetch(FetchRequest<ManagedObject>(entityName: entity)) {
                var values: [String: String] = [:]
                for name in ["code", "title", "budget", "points", "done", "text"] {
                    guard object.entity.attribute(named: name) != nil else { continue }
                    let value: Any? = try object.value(forKey: name)
                    values[name] = value.map { "\($0)" } ?? "nil"
                }
                for name in ["project", "task"] {
                    guard object.entity.relationships.contains(where: { $0.name == name }) else { continue }
                    values[name] = (try object.value(forKey: name) as? ManagedObject).map { "\($0.objectID.primaryKey)" } ?? "nil"
                }
                result[object.objectID.primaryKey] = values
            }
            return result
        }
    }

    @discardableResult
    func save(_ coordinator: StoreCoordinator, _ body: (ManagedObjectContext) throws -> Void) throws -> CommitResult? {
        let context = coordinator.newContext()
        return try context.performAndWait {
            try body(context)
            return try context.save()
        }
    }

    @Test func insertsUpdatesAndDeletesReachTheOtherReplicaUnderTheSameIDs() async throws {
        let database = try freshDatabase()
        let (a, syncA) = try replica("a", database)
        let (b, syncB) = try replica("b", database)
        try await syncA.sync()
        try await syncB.sync()
        let replicaA = try #require(syncA.status.replica), replicaB = try #require(syncB.status.replica)
        #expect(replicaA != replicaB)
        var projectKey: Int64 = 0
        try save(a) { context in
            let project = try context.insert("Project")
            try project.setValue("P1", forKey: "code")
            try project.setValue("Roof", forKey: "title")
            for index in 0..<3 {
                let task = try context.insert("Task")
                try task.setValue("task \(index)", forKey: "title")
                try task.setValue(project, forKey: "project")
            }
            projectKey = project.objectID.primaryKey
        }
        // A's keys are in its block.
        #expect(projectKey >> 40 == replicaA)
        let pushed = try await syncA.sync()
        #expect(pushed.pushed == 1)
        let pulled = try await syncB.sync()
        #expect(pulled.pulled == 1 && pulled.inserted == 4)
        #expect(try rows(a, "Project") == rows(b, "Project"))
        #expect(try rows(a, "Task") == rows(b, "Task"))
        // B edits and deletes; A hears it.
        try save(b) { context in
            let project = try context.existingObject(with: ObjectID(entityName: "Project", primaryKey: projectKey))
            try project.setValue(Int64(500), forKey: "budget")
            let tasks = try context.fetch(FetchRequest<ManagedObject>(entityName: "Task", condition: Condition("title == %@", "task 0")))
            try context.delete(tasks[0])
        }
        try await syncB.sync()
        try await syncA.sync()
        #expect(try rows(a, "Project")[projectKey]?["budget"] == "500")
        #expect(try rows(a, "Task").count == 2)
        #expect(try rows(a, "Task") == rows(b, "Task"))
        // Nothing pulled is pushed back: a round with nothing new pushes nothing.
        #expect(try await syncA.sync().pushed == 0)
        #expect(try await syncB.sync().pushed == 0)
        #expect(try syncA.pendingTransactions() == 0)
    }

    @Test func theLaterWriteInTheServersOrderWinsPerAttribute() async throws {
        let database = try freshDatabase()
        let (a, syncA) = try replica("a", database)
        let (b, syncB) = try replica("b", database)
        var key: Int64 = 0
        try save(a) { context in
            let project = try context.insert("Project")
            try project.setValue("P1", forKey: "code")
            key = project.objectID.primaryKey
        }
        try await syncA.sync()
        try await syncB.sync()
        // Offline, both edit the title; A also the budget.
        try save(a) { context in
            let project = try context.existingObject(with: ObjectID(entityName: "Project", primaryKey: key))
            try project.setValue("from A", forKey: "title")
            try project.setValue(Int64(7), forKey: "budget")
        }
        try save(b) { context in
            let project = try context.existingObject(with: ObjectID(entityName: "Project", primaryKey: key))
            try project.setValue("from B", forKey: "title")
        }
        try await syncA.sync()                      // A's edit first in the server's order
        let report = try await syncB.sync()          // B's after: B keeps its title, takes A's budget
        #expect(report.pulled == 2 && report.pulledOwn == 1)
        try await syncA.sync()
        for coordinator in [a, b] {
            let project = try rows(coordinator, "Project")[key]
            #expect(project?["title"] == "from B")
            #expect(project?["budget"] == "7")
        }
    }

    @Test func aDeleteWinsOverAConcurrentUpdateAndCascades() async throws {
        let database = try freshDatabase()
        let (a, syncA) = try replica("a", database)
        let (b, syncB) = try replica("b", database)
        var key: Int64 = 0
        try save(a) { context in
            let project = try context.insert("Project")
            try project.setValue("P1", forKey: "code")
            let task = try context.insert("Task")
            try task.setValue(project, forKey: "project")
            key = project.objectID.primaryKey
        }
        try await syncA.sync()
        try await syncB.sync()
        // B deletes the project (its task goes with it); A, offline, renames it and adds a task.
        try save(b) { context in try context.delete(context.existingObject(with: ObjectID(entityName: "Project", primaryKey: key))) }
        try save(a) { context in
            let project = try context.existingObject(with: ObjectID(entityName: "Project", primaryKey: key))
            try project.setValue("renamed", forKey: "title")
            let task = try context.insert("Task")
            try task.setValue(project, forKey: "project")
        }
        try await syncB.sync()
        try await syncA.sync()
        try await syncB.sync()
        for coordinator in [a, b] {
            #expect(try rows(coordinator, "Project").isEmpty)
            #expect(try rows(coordinator, "Task").isEmpty)     // the new task named a deleted project: cascade
        }
    }

    @Test func twoReplicasInsertingTheSameUniqueKeyEndWithOneRow() async throws {
        let database = try freshDatabase()
        let (a, syncA) = try replica("a", database)
        let (b, syncB) = try replica("b", database)
        try await syncA.sync()
        try await syncB.sync()
        var keyA: Int64 = 0, keyB: Int64 = 0
        try save(a) { context in
            let project = try context.insert("Project")
            try project.setValue("SAME", forKey: "code")
            try project.setValue("A's", forKey: "title")
            keyA = project.objectID.primaryKey
        }
        try save(b) { context in
            let project = try context.insert("Project")
            try project.setValue("SAME", forKey: "code")
            try project.setValue("B's", forKey: "title")
            try project.setValue(Int64(9), forKey: "budget")
            let task = try context.insert("Task")
            try task.setValue(project, forKey: "project")
            keyB = project.objectID.primaryKey
        }
        try await syncA.sync()                      // A's insert first: A's row keeps the key
        try await syncB.sync()
        try await syncA.sync()
        for coordinator in [a, b] {
            let projects = try rows(coordinator, "Project")
            #expect(projects.keys.sorted() == [keyA])
            // B's insert came later: its values are written over A's row; its task re-pointed.
            #expect(projects[keyA]?["title"] == "B's")
            #expect(projects[keyA]?["budget"] == "9")
            #expect(try rows(coordinator, "Task").values.map { $0["project"] } == ["\(keyA)"])
        }
        #expect(keyA != keyB)
    }

    @Test func aStoreWithRowsBeforeSyncPushesThemOnceAsASeed() async throws {
        let database = try freshDatabase()
        let (a, _) = try replica("seeded", database)
        try save(a) { context in
            for index in 0..<5 {
                let project = try context.insert("Project")
                try project.setValue("S\(index)", forKey: "code")
            }
        }
        let syncA = try SyncEngine(coordinator: a, server: database)
        let report = try await syncA.sync()
        #expect(report.pushed == 0)                  // the seed is not a local transaction
        let (b, syncB) = try replica("b", database)
        try await syncB.sync()
        #expect(try rows(b, "Project") == rows(a, "Project"))
        #expect(try rows(b, "Project").count == 5)
        // A second store with rows of its own can't seed the same database.
        let (c, _) = try replica("c", database)
        try save(c) { context in try context.insert("Project").setValue("C", forKey: "code") }
        await #expect(throws: SyncError.seedConflict) { try await SyncEngine(coordinator: c, server: database).sync() }
    }

    @Test func aServerThatStopsAnsweringFailsTheRoundAtItsTimeoutAndTheNextRoundGoesOn() async throws {
        let database = try freshDatabase()
        let coordinator = try StoreCoordinator(model: TestModels.syncProjects(), url: folder.url.appendingPathComponent("slow.sqlite"))
        let engine = try SyncEngine(coordinator: coordinator, server: database, name: "slow", timeout: .seconds(1))
        try await engine.sync()
        try save(coordinator) { context in try context.insert("Project").setValue("S", forKey: "code") }
        // Another session holds the log locked until the test lets go: the push waits on the
        // server. A postgres-nio session of the test's own, so the lock is held (LOCK TABLE has
        // returned) before the round starts, and for as long as the test wants; no fixed sleep.
        let locker = try await PostgresConnection.connect(
            configuration: .init(unixSocketPath: server.socketPath, username: server.username, password: nil, database: database.database),
            id: 1, logger: Logger(label: "strata.test.locker"))
        try await locker.query("BEGIN", logger: Logger(label: "strata.test.locker"))
        try await locker.query("LOCK TABLE strata_sync_txn IN ACCESS EXCLUSIVE MODE", logger: Logger(label: "strata.test.locker"))
        var failure: SyncError?
        do {
            try await engine.sync()
        } catch let error as SyncError {
            failure = error
        } catch {
            Issue.record("expected a SyncError, got \(error)")
        }
        // The round gave up at its deadline while the lock was still held (it would have waited
        // for ever otherwise).
        try await locker.query("ROLLBACK", logger: Logger(label: "strata.test.locker"))
        try await locker.close()
        guard case .serverUnavailable(let reason) = failure else {
            Issue.record("a round against a locked log did not fail with serverUnavailable: \(String(describing: failure))")
            return
        }
        #expect(reason.contains("no answer"))
        #expect(engine.status.lastError != nil)
        // The lock is gone: the next round pushes what the failed one could not.
        #expect(try await engine.sync().pushed == 1)
        #expect(engine.status.lastError == nil)
    }

    /// A "sync now" beside a follower: the user's round waits for the follower's round in
    /// progress (the lock is held per round, not for the follower's life), and the follower
    /// does not run a second round for the commit its own round applied.
    @Test func syncNowBesideAFollowerWaitsItsTurnAndTheFollowerWastesNoRounds() async throws {
        let database = try freshDatabase()
        let (a, syncA) = try replica("a", database)
        let (b, syncB) = try replica("b", database)
        try await syncA.sync()
        try await syncB.sync()
        let follower = Task { try await syncB.follow() }
        defer { follower.cancel() }
        func waitUntil(_ what: String, _ condition: () throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while try !condition() {
                try #require(ContinuousClock.now < deadline, "never: \(what)")
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await waitUntil("the follower's first round") { syncB.status.rounds >= 2 }
        try await Task.sleep(for: .seconds(1))
        // A's pushes: one round on B for each (the notification), none for the commit that round
        // applied (the next would come 5 s after it, for a silent connection).
        for push in 0..<3 {
            let rounds = syncB.status.rounds
            let started = ContinuousClock.now
            try save(a) { context in try context.insert("Project").setValue("A\(push)", forKey: "code") }
            try await syncA.sync()
            try await waitUntil("B has A's project \(push)") { try rows(b, "Project").count == push + 1 && syncB.status.rounds > rounds }
            let took = ContinuousClock.now - started
            try await Task.sleep(for: .seconds(1))
            if took < .seconds(3) {
                #expect(syncB.status.rounds == rounds + 1, "the follower ran \(syncB.status.rounds - rounds) rounds for one push")
            } else {
                // A machine so loaded that the follower's 5 s round may have pulled A's push
                // before the notification's round: one more round is then no waste of ours.
                #expect(syncB.status.rounds <= rounds + 2, "the follower ran \(syncB.status.rounds - rounds) rounds for one push")
            }
        }
        // "Sync now" on B itself, beside its follower, each time with a commit of its own: the
        // follower may have pushed it already; either way nothing fails and A gets it.
        for commit in 0..<3 {
            try save(b) { context in try context.insert("Project").setValue("B\(commit)", forKey: "code") }
            let report = try await syncB.sync()
            #expect(report.pushed <= 1)
            try await syncA.sync()
            #expect(try rows(a, "Project") == rows(b, "Project"))
            #expect(try rows(a, "Project").count == 4 + commit)
        }
        #expect(syncB.status.lastError == nil)
    }

    @Test func errorsAreTyped() async throws {
        let database = try freshDatabase()
        let (_, syncA) = try replica("a", database)
        try await syncA.sync()
        // Another model on the same database.
        let other = try StoreCoordinator(model: TestModels.goods(), url: folder.url.appendingPathComponent("goods.sqlite"))
        await #expect(throws: SyncError.self) { try await SyncEngine(coordinator: other, server: database).sync() }
        do {
            try await SyncEngine(coordinator: other, server: database).sync()
        } catch let error as SyncError {
            guard case .modelMismatch = error else { Issue.record("expected modelMismatch, got \(error)"); return }
        }
        // No server there.
        let nowhere = SyncServer(socketDirectory: folder.url.path, username: "strata", database: "strata")
        let (_, lost) = try replica("lost", nowhere)
        do {
            try await lost.sync()
            Issue.record("a sync with no server succeeded")
        } catch let error as SyncError {
            guard case .serverUnavailable = error else { Issue.record("expected serverUnavailable, got \(error)"); return }
            #expect(lost.status.lastError == error)
        }
        // Many-to-many relationships are refused up front.
        let tagged = try Model(version: "tags-1", entities: [
            Entity("Post", attributes: [Attribute("title", .string)], relationships: [Relationship("tags", .toMany, to: "Tag", inverse: "posts")]),
            Entity("Tag", attributes: [Attribute("name", .string)], relationships: [Relationship("posts", .toMany, to: "Post", inverse: "tags")]),
        ])
        #expect(throws: SyncError.self) {
            _ = try SyncEngine(coordinator: StoreCoordinator(model: tagged, url: folder.url.appendingPathComponent("m.sqlite")), server: database)
        }
    }
}
