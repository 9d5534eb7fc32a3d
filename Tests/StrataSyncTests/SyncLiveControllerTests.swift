import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Synchronization
import Testing

/// A live results controller on replica B (a container's main context, B's engine following the
/// server with LISTEN/NOTIFY) reports replica A's changes exactly: after each of A's pushes, once B
/// has pulled it, B's sectioned and flat controllers equal a fresh fetch, and every change set
/// they reported applies to the list before it and gives the list after it (the oracle of the
/// two-process external-changes test). A's changes are random saves over shared rows: inserts,
/// values, tasks moved between projects, deletes (a project's delete cascades to its tasks), and
/// project codes that collide with B's own (B also edits between A's pushes, so B's own
/// transactions are folded with A's).
@Suite(.serialized) struct SyncLiveControllerTests {
    @Test func aControllerOnReplicaBReportsReplicaAsChangesExactly() async throws {
        let server = try PostgresServer(name: "strata-sync-live")
        defer { server.remove() }
        let folder = TemporaryDirectory("strata-sync-live")
        let database = try SyncServer(url: server.url)
        let model = TestModels.syncProjects()
        let a = try StoreCoordinator(model: model, url: folder.url.appendingPathComponent("a.sqlite"))
        let syncA = try SyncEngine(coordinator: a, server: database, name: "a")
        let container = try PersistentContainer(model: model, url: folder.url.appendingPathComponent("b.sqlite"))
        let syncB = try SyncEngine(coordinator: container.coordinator, server: database, name: "b")
        try await syncA.sync()
        try await syncB.sync()

        let main = container.mainContext
        let sectionedRecorder = Recorder(), flatRecorder = Recorder()
        let sectionedRequest = AnyFetchRequest(entityName: "Task", sortKeys: [SortKey("project.code"), SortKey("points"), SortKey("title")])
        let flatRequest = AnyFetchRequest(entityName: "Task", condition: try Condition("points > %@", 5), sortKeys: [SortKey("points"), SortKey("title")])
        let (sectioned, flat) = try main.performAndWait {
            let sectioned = FetchedResultsController(fetchRequest: sectionedRequest, managedObjectContext: main, sectionNameKeyPath: "project.code")
            let flat = FetchedResultsController(fetchRequest: flatRequest, managedObjectContext: main)
            try sectioned.performFetch()
            try flat.performFetch()
            sectioned.delegate = sectionedRecorder
            flat.delegate = flatRecorder
            return (sectioned, flat)
        }
        let following = Task { try await syncB.follow(pollInterval: .milliseconds(10)) }
        defer { following.cancel() }

        var random = SplitMix64(seed: 51)
        var checked = main.performAndWait { (Recorder.materialized(sectioned.snapshot), Recorder.materialized(flat.snapshot)) }
        var mismatches: [String] = []
        var reports = 0
        var latencies: [Double] = []
        let rounds = Int(ProcessInfo.processInfo.environment["STRATA_SYNC_LIVE_ROUNDS"] ?? "") ?? 60
        for round in 0..<rounds {
            // Now and then B edits too (its own commits, pushed by its engine, folded with A's).
            if round % 5 == 4 { try edit(container.coordinator, &random, label: "b\(round)") }
            try edit(a, &random, label: "a\(round)")
            let pushedAt = ContinuousClock.now
            try await syncA.sync()
            let target = try #require(Int64(server.psql("SELECT coalesce(max(seq), 0) FROM strata_sync_txn")))
            let deadline = ContinuousClock.now + .seconds(20)
            while syncB.status.pulledThrough < target, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            guard syncB.status.pulledThrough >= target else {
                mismatches.append("round \(round): B did not pull seq \(target) in 20 s (at \(syncB.status.pulledThrough); \(String(describing: syncB.status.lastError)))")
                break
            }
            container.waitForPendingMerges()
            let expected = try freshLayouts(container.coordinator)
            var current = main.performAndWait { (Layout(sectioned.snapshot), Layout(flat.snapshot).flattened) }
            let settle = ContinuousClock.now + .seconds(5)
            while current != expected, ContinuousClock.now < settle {
                try await Task.sleep(for: .milliseconds(2))
                container.waitForPendingMerges()
                current = main.performAndWait { (Layout(sectioned.snapshot), Layout(flat.snapshot).flattened) }
            }
            if current.0 != expected.0 { mismatches.append("round \(round): sectioned shows \(current.0), a fresh fetch \(expected.0)") }
            if current.1 != expected.1 { mismatches.append("round \(round): flat shows \(current.1), a fresh fetch \(expected.1)") }
            let snapshots = main.performAndWait { (Recorder.materialized(sectioned.snapshot), Recorder.materialized(flat.snapshot)) }
            for (name, recorder, previous, now) in [("sectioned", sectionedRecorder, checked.0, snapshots.0), ("flat", flatRecorder, checked.1, snapshots.1)] {
                var layout = previous
                for event in recorder.drain() {
                    reports += 1
                    switch event.kind {
                    case let .changes(before, after, appliedMatches):
                        if !appliedMatches { mismatches.append("round \(round): a \(name) change set applied to its before is not its after") }
                        if before != layout { mismatches.append("round \(round): a \(name) change set starts from \(Layout(before)), not \(Layout(layout))") }
                        layout = after
                        latencies.append(Double((event.at - pushedAt).components.attoseconds) / 1e15 + Double((event.at - pushedAt).components.seconds) * 1000)
                    case .other(let description):
                        mismatches.append("round \(round): the \(name) controller reported \(description), not a change set")
                    }
                }
                if layout != now { mismatches.append("round \(round): the \(name) change sets end at \(Layout(layout)), it shows \(Layout(now))") }
            }
            checked = snapshots
            if mismatches.count > 10 { break }
        }
        latencies.sort()
        let p50 = latencies.isEmpty ? 0 : latencies[latencies.count / 2]
        print("sync-live: rounds=\(rounds) reports=\(reports) mismatches=\(mismatches.count) p50-ms=\(String(format: "%.1f", p50))")
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(reports > rounds / 2)
    }

    /// One random save of 1–4 changes on `coordinator`'s store.
    func edit(_ coordinator: StoreCoordinator, _ random: inout SplitMix64, label: String) throws {
        let context = coordinator.newContext(name: "edit")
        try context.performAndWait {
            let projects = try context.fetch(AnyFetchRequest(entityName: "Project"))
            let tasks = try context.fetch(AnyFetchRequest(entityName: "Task"))
            var gone: Set<ObjectID> = []
            for _ in 0..<random.int(1...4) {
                let live = (projects: projects.filter { !gone.contains($0.objectID) }, tasks: tasks.filter { !gone.contains($0.objectID) })
                switch random.int(0...9) {
                case 0, 1:
                    let project = try context.insert("Project")
                    try project.setValue("C\(random.int(0...4))", forKey: "code")
                case 2, 3, 4:
                    // Every task names a project (a project's delete takes its tasks).
                    guard let project = live.projects.randomElement(using: &random) else { continue }
                    let task = try context.insert("Task")
                    try task.setValue("\(label)-\(random.int(0...99))", forKey: "title")
                    try task.setValue(Int64(random.int(0...10)), forKey: "points")
                    try task.setValue(project, forKey: "project")
                case 5, 6:
                    guard let task = live.tasks.randomElement(using: &random) else { continue }
                    try task.setValue(Int64(random.int(0...10)), forKey: "points")
                case 7:
                    guard let task = live.tasks.randomElement(using: &random), let project = live.projects.randomElement(using: &random) else { continue }
                    try task.setValue(project, forKey: "project")
                case 8:
                    guard let task = live.tasks.randomElement(using: &random) else { continue }
                    gone.insert(task.objectID)
                    try context.delete(task)
                default:
                    guard random.chance(0.4), let project = live.projects.randomElement(using: &random) else { continue }
                    gone.insert(project.objectID)
                    try context.delete(project)
                }
            }
            do {
                _ = try context.save()
            } catch is UniqueKeyConflictError {
                // A new project whose code a row with unsaved changes here holds: refused, as it should be.
                context.rollback()
            }
        }
    }

    /// Both lists as a fresh fetch gives them, grouped and ordered here.
    func freshLayouts(_ coordinator: StoreCoordinator) throws -> (Layout, Layout) {
        let context = coordinator.newContext(name: "check")
        return try context.performAndWait {
            struct Row { let id: ObjectID, code: String, points: Int64, title: String }
            var rows: [Row] = []
            for task in try context.fetch(AnyFetchRequest(entityName: "Task")) {
                let project = try task.value(forKey: "project") as? ManagedObject
                rows.append(Row(id: task.objectID, code: try project?.value(forKey: "code") as? String ?? "",
                                points: try task.value(forKey: "points") as? Int64 ?? -1, title: try task.value(forKey: "title") as? String ?? ""))
            }
            var sectioned = Layout(names: [], ids: [])
            for row in rows.sorted(by: { ($0.code, $0.points, $0.title) < ($1.code, $1.points, $1.title) }) {
                if sectioned.names.last != row.code {
                    sectioned.names.append(row.code)
                    sectioned.ids.append([])
                }
                sectioned.ids[sectioned.ids.count - 1].append(row.id)
            }
            let flat = rows.filter { $0.points > 5 }.sorted { ($0.points, $0.title) < ($1.points, $1.title) }
            return (sectioned, Layout(names: [""], ids: [flat.map(\.id)]).flattened)
        }
    }

    typealias Layout = ListLayout
    typealias Recorder = ChangeSetRecorder
}
