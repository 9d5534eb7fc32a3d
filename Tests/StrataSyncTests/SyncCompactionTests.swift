import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Testing

/// The server's log compacted into a snapshot (``SyncEngine/compact()``): a new replica, and one
/// that was behind with local edits of its own, start from the snapshot and the transactions after
/// it, and end equal to the others; a push retried after its transaction was compacted away adds
/// nothing.
@Suite(.serialized) struct SyncCompactionTests {
    @Test func replicasBehindTheCompactedLogStartFromTheSnapshot() async throws {
        let server = try PostgresServer(name: "strata-sync-compact")
        defer { server.remove() }
        let folder = TemporaryDirectory("strata-sync-compact")
        let database = try SyncServer(url: server.url)
        let model = TestModels.syncProjects()
        func replica(_ name: String) throws -> (StoreCoordinator, SyncEngine) {
            let coordinator = try StoreCoordinator(model: model, url: folder.url.appendingPathComponent("\(name).sqlite"))
            return (coordinator, try SyncEngine(coordinator: coordinator, server: database, name: name))
        }
        func edit(_ coordinator: StoreCoordinator, _ body: (ManagedObjectContext) throws -> Void) throws {
            let context = coordinator.newContext()
            try context.performAndWait {
                try body(context)
                _ = try context.save()
            }
        }
        func dump(_ coordinator: StoreCoordinator) throws -> [String: String] {
            let context = coordinator.newContext()
            return try context.performAndWait {
                var result: [String: String] = [:]
                for entity in ["Project", "Task"] {
                    for object in try context.fetch(AnyFetchRequest(entityName: entity)) {
                        var fields: [String] = []
                        for name in ["code", "title", "budget", "points"] where object.entity.attribute(named: name) != nil {
                            fields.append("\(name)=\(try object.value(forKey: name).map { "\($0)" } ?? "nil")")
                        }
                        if entity == "Task" { fields.append("project=\((try object.value(forKey: "project") as? ManagedObject)?.objectID.primaryKey ?? 0)") }
                        result["\(object.objectID)"] = fields.joined(separator: " ")
                    }
                }
                return result
            }
        }
        let (a, syncA) = try replica("a")
        let (b, syncB) = try replica("b")
        try await syncA.sync()
        try await syncB.sync()
        // A and B edit; B also inserts A's code (a merge, whose alias the snapshot must keep).
        try edit(a) { context in
            for index in 0..<4 {
                let project = try context.insert("Project")
                try project.setValue("P\(index)", forKey: "code")
                let task = try context.insert("Task")
                try task.setValue(project, forKey: "project")
                try task.setValue(Int64(index), forKey: "points")
            }
        }
        var bKey: Int64 = 0
        try edit(b) { context in
            let project = try context.insert("Project")
            try project.setValue("P0", forKey: "code")
            try project.setValue("B's", forKey: "title")
            bKey = project.objectID.primaryKey
        }
        try await syncA.sync()
        try await syncB.sync()
        // A goes offline with an edit naming B's merged project by its old key.
        try edit(a) { context in
            let task = try context.insert("Task")
            try task.setValue(Int64(99), forKey: "points")
            try task.setValue(try context.fetch(AnyFetchRequest(entityName: "Project", condition: Condition("code == %@", "P1"))).first, forKey: "project")
        }
        // B edits more, then compacts everything it has.
        try edit(b) { context in
            for task in try context.fetch(AnyFetchRequest(entityName: "Task", condition: Condition("points < 2"))) { try context.delete(task) }
        }
        let through = try await syncB.compact()
        #expect(through > 0)
        #expect(try server.psql("SELECT count(*) FROM strata_sync_txn WHERE seq <= \(through)") == "0")
        #expect(try Int(server.psql("SELECT count(*) FROM strata_sync_snapshot")) ?? 0 > 0)
        // A new replica starts from the snapshot.
        let (c, syncC) = try replica("c")
        let started = try await syncC.sync()
        #expect(started.bootstrapped)
        #expect(try dump(c) == dump(b))
        // A, behind the snapshot with an edit of its own, pushes it, then starts from the snapshot.
        let resumed = try await syncA.sync()
        #expect(resumed.bootstrapped && resumed.pushed == 1)
        try await syncB.sync()
        try await syncC.sync()
        #expect(try dump(a) == dump(b))
        #expect(try dump(c) == dump(b))
        // B's merged project's key still names A's row everywhere (the alias survived compaction).
        #expect(try dump(a)["Project/\(bKey)"] == nil)
        // A push retried after its transaction was compacted away adds nothing: a fresh compaction
        // drops A's last push; an engine that forgot it had pushed (its bookkeeping rolled back)
        // would push it again, and the server keeps it out.
        let all = try await syncA.compact()
        let count = try server.psql("SELECT count(*) FROM strata_sync_txn")
        try await syncA.sync()
        #expect(try server.psql("SELECT count(*) FROM strata_sync_txn") == count)
        // With the whole log compacted, the next transaction still comes after the snapshot.
        try edit(c) { context in try context.insert("Project").setValue("after", forKey: "code") }
        try await syncC.sync()
        #expect(try Int64(server.psql("SELECT min(seq) FROM strata_sync_txn")) ?? 0 > all)
        try await syncA.sync()
        #expect(try dump(a) == dump(c))
    }
}
