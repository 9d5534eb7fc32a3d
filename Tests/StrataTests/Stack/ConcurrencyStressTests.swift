import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The stack under concurrent load: update contexts cascading into one file store, main readers
/// and a background context beside them, and the queue-confinement rules (re-entrancy, child →
/// parent calls) under contention.
///
/// CI also runs this suite under ThreadSanitizer:
/// `swift test --sanitize=thread --filter ConcurrencyStressTests` must report no data race.
/// Every test runs under a deadline, so a deadlock fails the test instead of hanging the run.
/// No `#expect` runs on a context's queue: closures return what they saw and the test checks it
/// on its own task.
@Suite(.serialized) struct ConcurrencyStressTests {
    // MARK: 8 × 1,000 cascading saves

    @Test func eightUpdateContextsCascadeThousandSavesEach() async throws {
        let directory = TemporaryDirectory()
        let url = directory.file("stress.sqlite")
        let container = try PersistentContainer(model: TestModels.numbers(), url: url)
        // Counts generation bumps (one per COMMIT that wrote rows): a witness independent of the
        // results saveToStore returns.
        let bumps = Counter()
        container.coordinator.setTrace { sql in
            if sql.hasPrefix("UPDATE strata_meta SET generation") { bumps.increment() }
        }
        // STRATA_STRESS_SAVES: saves per context (a multiple of 50; 1,000 by default). CI's
        // ThreadSanitizer stage runs 250: the same interleavings, at a quarter of the work.
        let saves = max(50, (ProcessInfo.processInfo.environment["STRATA_STRESS_SAVES"].flatMap { Int($0) } ?? 1_000) / 50 * 50)
        let total = 8 * saves
        let scripts = (0..<8).map { WriterScript(task: $0, saves: saves) }

        let clock = ContinuousClock()
        let start = clock.now
        // Every context exists before the first task starts (see `Locked`).
        let contexts = scripts.map { container.newUpdateContext(name: "update-\($0.task)") }
        let outcomes = try await withDeadline(seconds: 900, "8 update contexts × \(saves) saveToStore") {
            try await withThrowingTaskGroup(of: WriterOutcome.self) { group in
                for (script, context) in zip(scripts, contexts) {
                    group.addTask { try await script.run(on: context, coordinator: container.coordinator) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        let elapsed = clock.now - start
        container.coordinator.setTrace(nil)

        // Every saveToStore returned only once its own insert, mark and delete were in the store,
        // whichever cascade committed them.
        #expect(outcomes.flatMap(\.problems) == [])

        // Commits. An update context's saveToStore finds main and writer without changes of their
        // own (nothing else writes into them here), so it takes the shortcut: one commit while it
        // holds main's and writer's queues, merged into them on the way back. So each of the
        // 8,000 saves commits exactly once: 8,000 generations. (Were main holding another
        // context's unsaved push, the chain would save level by level and that cascade's commit
        // would carry both pushes; the other save would then return nil, "bundled", and only
        // commits + bundled == 8,000 would hold. The mixed test below exercises that path.)
        let generations = outcomes.flatMap(\.generations)
        let bundled = outcomes.map(\.bundled).reduce(0, +)
        #expect(bundled == 0)
        #expect(generations.count == total)
        #expect(generations.count + bundled == total)
        #expect(generations.sorted() == Array(1...Int64(generations.count)))
        #expect(bumps.value == generations.count)
        for outcome in outcomes { #expect(outcome.generations == outcome.generations.sorted()) }

        // Nothing is left pending anywhere in the chain.
        #expect(container.mainContext.performAndWait { !container.mainContext.hasChanges })
        #expect(container.writerContext.performAndWait { !container.writerContext.hasChanges })

        // The file, through a connection of its own.
        let fresh = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let metadata = try fresh.metadata()
        #expect(metadata.generation == Int64(generations.count))
        #expect(metadata.entityGenerations["Number"] == Int64(generations.count))
        let reader = fresh.newContext(name: "verify")
        let stored = try reader.performAndWait { try StoredNumber.all(in: reader) }
        let expected = scripts.flatMap(\.expectedRows).sorted { $0.value < $1.value }
        #expect(stored.count == 8 * (saves - saves / 50))   // 7,840: 8 × (1,000 inserted − 20 deleted)
        #expect(expected.count == 8 * (saves - saves / 50))
        #expect(stored.map(\.row) == expected)
        #expect(Set(stored.map(\.value)) == Set(expected.map(\.value)))
        #expect(stored.filter(\.isEven).count == 8 * (saves / 10 - saves / 50))   // 100 marked per task, 20 of them deleted
        let deletedValues = Set(scripts.flatMap(\.deletedValues))
        #expect(deletedValues.count == 8 * saves / 50)
        #expect(stored.allSatisfy { !deletedValues.contains($0.value) })
        let deletedIDs = outcomes.flatMap(\.deleted)
        let gone = try deletedIDs.filter { try fresh.row(for: $0) == nil }
        #expect(gone.count == 8 * saves / 50)
        #expect(Set(stored.map(\.id)) == Set(outcomes.flatMap(\.inserted)).subtracting(deletedIDs))

        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("""
            ConcurrencyStressTests.eightUpdateContextsCascadeThousandSavesEach: \(total) saveToStore in \
            \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", Double(total) / seconds)) saves/s); \
            \(generations.count) commits, \(bundled) saves bundled into a concurrent cascade; \
            \(stored.count) rows, generation \(metadata.generation)
            """)
    }

    // MARK: Readers, update saves and a background context at once

    @Test func mainReadersUpdateSavesAndBackgroundSavesAgree() async throws {
        let directory = TemporaryDirectory()
        let url = directory.file("mixed.sqlite")
        let container = try PersistentContainer(model: TestModels.numbers(), url: url)
        let main = container.mainContext
        let seen = ChangeLog()
        let observation = main.addObserver { notification in
            if case .objectsDidChange(let changes) = notification.event { seen.record(changes) }
        }
        defer { observation.cancel() }

        // Three update contexts saveToStore every save; the fourth saves into main only and has
        // main save to the store every 5th save, so main holds pending changes in between: the
        // readers then fetch through main's overlay, and the other contexts' saveToStore go level
        // by level (their cascade may commit the fourth's changes too: "bundled").
        let updateScripts = (0..<4).map { WriterScript(task: $0, saves: 250, mainSaveEvery: $0 == 3 ? 5 : nil) }
        let backgroundScript = WriterScript(task: 9, saves: 250, label: "bg")
        let running = Counter(updateScripts.count + 1)
        let evenCondition = try Condition("isEven == YES AND value >= %@", Int64(0))
        let backgroundCondition = try Condition("label == %@", "bg")

        let clock = ContinuousClock()
        let start = clock.now
        // Every context exists before the first task starts (see `Locked`).
        let contexts = updateScripts.map { container.newUpdateContext(name: "update-\($0.task)") }
        let background = container.newBackgroundContext()
        let results = try await withDeadline(seconds: 600, "readers, update saves and background saves") {
            try await withThrowingTaskGroup(of: MixedOutcome.self) { group in
                for (script, context) in zip(updateScripts, contexts) {
                    group.addTask {
                        defer { running.decrement() }
                        return .writer(try await script.run(on: context, coordinator: container.coordinator))
                    }
                }
                group.addTask {
                    defer { running.decrement() }
                    // A root context: saveToStore() is save(), one commit straight to the store that
                    // writer (and through it main) merge asynchronously.
                    return .background(try await backgroundScript.run(on: background, coordinator: container.coordinator))
                }
                for _ in 0..<2 {
                    group.addTask {
                        var outcome = ReaderOutcome()
                        while running.value > 0 {
                            let pass = try await main.perform { () throws -> ReaderPass in
                                var pass = ReaderPass(pending: main.hasChanges)
                                let even = try StoredNumber.all(in: main, where: evenCondition)
                                pass.matched = even.count
                                for number in even where !number.isEven || number.value < 0 {
                                    pass.violations.append("isEven == YES fetched \(number)")
                                }
                                for number in try StoredNumber.all(in: main, where: backgroundCondition) where number.label != "bg" {
                                    pass.violations.append("label == bg fetched \(number)")
                                }
                                if Set(even.map(\.id)).count != even.count { pass.violations.append("duplicate objects in a fetch") }
                                return pass
                            }
                            outcome.add(pass)
                            try await Task.sleep(for: .milliseconds(1))
                        }
                        return .reader(outcome)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        let elapsed = clock.now - start
        container.waitForPendingMerges()

        var writers: [WriterOutcome] = []
        var backgroundOutcome = WriterOutcome()
        var readers: [ReaderOutcome] = []
        for result in results {
            switch result {
            case .writer(let outcome): writers.append(outcome)
            case .background(let outcome): backgroundOutcome = outcome
            case .reader(let outcome): readers.append(outcome)
            }
        }
        #expect((writers + [backgroundOutcome]).flatMap(\.problems) == [])
        #expect(readers.flatMap(\.violations) == [])
        #expect(readers.allSatisfy { $0.fetches > 0 })
        #expect(writers.map { $0.generations.count + $0.bundled }.sorted() == [50, 250, 250, 250])

        // Main merged every save it did not make itself, and reported every change.
        let all = writers + [backgroundOutcome]
        let changes = seen.changes
        #expect(Set(all.flatMap(\.inserted)).subtracting(changes.inserted).isEmpty)
        #expect(Set(all.flatMap(\.marked)).subtracting(changes.updated).isEmpty)
        #expect(Set(all.flatMap(\.deleted)).subtracting(changes.deleted).isEmpty)

        let fresh = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let reader = fresh.newContext(name: "verify")

        // Before main fetches again (a fetch refreshes unchanged objects from the rows it reads):
        // every object main holds has the stored values, and none of them was deleted.
        let stale = try main.performAndWait { () throws -> [String] in
            var stale: [String] = []
            if main.hasChanges { stale.append("main has pending changes") }
            for object in main.registeredObjects where !object.isFault {
                let row = try fresh.row(for: object.objectID)
                if row != object.current { stale.append("\(object.objectID): main \(object.current.attributes), store \(String(describing: row?.attributes))") }
            }
            return stale
        }
        #expect(stale == [])

        for condition in [nil, evenCondition, backgroundCondition] {
            let inMain = try main.performAndWait { try StoredNumber.all(in: main, where: condition) }
            let inStore = try reader.performAndWait { try StoredNumber.all(in: reader, where: condition) }
            #expect(inMain == inStore, "fetch \(condition.map { "\($0)" } ?? "all")")
        }
        let stored = try reader.performAndWait { try StoredNumber.all(in: reader) }
        let expected = (updateScripts + [backgroundScript]).flatMap(\.expectedRows).sorted { $0.value < $1.value }
        #expect(stored.map(\.row) == expected)
        #expect(stored.count == 5 * 245)
        let metadata = try fresh.metadata()
        let commits = all.flatMap(\.generations).count
        #expect(metadata.generation == Int64(commits))
        #expect(backgroundOutcome.generations.count == backgroundScript.saves)   // a root context's save always commits

        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("""
            ConcurrencyStressTests.mainReadersUpdateSavesAndBackgroundSavesAgree: \
            \(String(format: "%.2f", seconds)) s; \(commits) commits (\(all.map(\.bundled).reduce(0, +)) bundled saves); \
            \(writers.map(\.intoMainOnly).reduce(0, +)) saves into main only; \(readers.map(\.fetches).reduce(0, +)) reader passes, \(readers.map(\.withPending).reduce(0, +)) with main pending; \
            \(changes.events) objects-did-change on main; \(stored.count) rows
            """)
    }

    // MARK: Re-entrancy and child → parent calls

    @Test func reentrancyAndChildToParentCallsDoNotDeadlock() async throws {
        let directory = TemporaryDirectory()
        let url = directory.file("reentrancy.sqlite")
        let container = try PersistentContainer(model: TestModels.numbers(), url: url)
        let writer = container.writerContext
        let main = container.mainContext
        let update = container.newUpdateContext(name: "update")
        let grandchild = update.newChildContext(name: "grandchild")

        try await withDeadline(seconds: 60, "re-entrancy on one thread") {
            // performAndWait inside performAndWait runs at once, three deep, and a cascade started
            // from the innermost block takes the locks of main and writer from there.
            let nested = try update.performAndWait {
                try update.performAndWait {
                    try update.performAndWait { () throws -> Bool in
                        let number = try update.insert("Number")
                        try number.setValue(Int64(-1), forKey: "value")
                        return try update.saveToStore() != nil && update.isOnQueue
                    }
                }
            }
            #expect(nested)

            // performAndWait inside perform, and a cascade from there.
            let inPerform = try await grandchild.perform { () throws -> Bool in
                try grandchild.performAndWait {
                    let number = try grandchild.insert("Number")
                    try number.setValue(Int64(-2), forKey: "value")
                    return try grandchild.saveToStore() != nil && grandchild.isOnQueue
                }
            }
            #expect(inPerform)

            // child → parent → grandparent → root, synchronously: each level is on its queue.
            let chain = grandchild.performAndWait {
                grandchild.isOnQueue && update.performAndWait {
                    update.isOnQueue && main.performAndWait {
                        main.isOnQueue && writer.performAndWait { writer.isOnQueue }
                    }
                }
            }
            #expect(chain)
            // A child's block alone does not own its ancestors' queues.
            #expect(update.performAndWait { update.isOnQueue && !main.isOnQueue && !writer.isOnQueue })

            // A child's performAndWait inside the parent's perform, calling back into the parent.
            // This is parent → child, which Strata itself never does synchronously: it works
            // uncontended (queue.sync runs the child's block on the parent's thread, which still
            // owns the parent, so the inner call is re-entrant), but a child calling into the
            // parent at the same moment would deadlock against it. The concurrent part below only
            // goes child → parent.
            let roundTrip = try await main.perform {
                update.performAndWait { main.performAndWait { main.isOnQueue && update.isOnQueue } }
            }
            #expect(roundTrip)
        }

        // The allowed direction under contention: 12 threads and 8 tasks nest child → parent calls
        // (up to grandchild → update → main → writer), cascade saves from every level, fetch through
        // the chain, while a background context's commits flow down asynchronously (writer → main →
        // the update contexts that merge automatically → a grandchild).
        container.waitForPendingMerges()   // no merge in flight while the contexts are created (see `Locked`)
        let updates = (0..<4).map { container.newUpdateContext(name: "update-\($0)") }
        let grandchildren = updates.enumerated().map { $1.newChildContext(name: "grandchild-\($0)") }
        updates[0].automaticallyMergesChangesFromParent = true
        updates[1].automaticallyMergesChangesFromParent = true
        grandchildren[0].automaticallyMergesChangesFromParent = true
        let background = container.newBackgroundContext()
        let inserted = Collector<Int64>()
        let failures = Collector<String>()
        let stack = NestingStack(writer: writer, main: main, updates: updates, grandchildren: grandchildren, background: background)

        let clock = ContinuousClock()
        let start = clock.now
        let threadCount = 12, threadIterations = 150, taskCount = 8, taskIterations = 60
        let threads = startThreads(threadCount) { thread in
            for iteration in 0..<threadIterations {
                do {
                    if let value = try stack.step(worker: thread, iteration: iteration) { inserted.append(value) }
                } catch {
                    failures.append("thread \(thread) iteration \(iteration): \(error)")
                }
            }
        }
        try await withDeadline(seconds: 300, "child → parent calls under contention") {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<taskCount {
                    group.addTask {
                        for iteration in 0..<taskIterations {
                            // perform on the grandchild the step uses, then performAndWait (re-entrant) and
                            // the chain above it. (Never a sibling: two siblings calling each other
                            // synchronously would deadlock, and Strata never does that.)
                            let worker = 100 + task
                            let context = stack.grandchildren[(worker + iteration) % stack.grandchildren.count]
                            let value = try await context.perform { () throws -> Int64? in
                                try context.performAndWait { try stack.step(worker: worker, iteration: iteration) }
                            }
                            if let value { inserted.append(value) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let threadsFinished = threads.wait(timeout: .now() + 300) == .success
        #expect(threadsFinished, "threads still blocked after 300 s: deadlock")
        guard threadsFinished else { return }
        let elapsed = clock.now - start
        container.waitForPendingMerges()
        for context in grandchildren + updates { context.performAndWait {} }
        #expect(failures.items == [])

        let values = inserted.items
        let fresh = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let reader = fresh.newContext(name: "verify")
        let stored = try reader.performAndWait { try StoredNumber.all(in: reader) }
        #expect(stored.map(\.value).sorted() == ([-2, -1] + values).sorted())
        #expect(main.performAndWait { !main.hasChanges })
        #expect(writer.performAndWait { !writer.hasChanges })
        let merged = try main.performAndWait { try main.count(for: FetchRequest(entityName: "Number")) }
        #expect(merged == stored.count)

        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("""
            ConcurrencyStressTests.reentrancyAndChildToParentCallsDoNotDeadlock: \
            \(threadCount * threadIterations + taskCount * taskIterations) nested operations in \
            \(String(format: "%.2f", seconds)) s, \(values.count) inserts
            """)
    }
}

// MARK: - Scripts

/// One writer's work: save `i` inserts the value `task × 1,000,000 + i` labelled `label`; every
/// 10th save also marks (isEven = true; the value is even) the object of save `i − 5`, and every
/// 50th deletes the object of save `i − 45`, which an earlier save marked. Every save goes through
/// `saveToStore()`, or with `mainSaveEvery: n` through `save()` into the parent, the parent then
/// saving to the store every n-th save and at the last.
private struct WriterScript: Sendable {
    let task: Int
    let saves: Int
    let label: String
    let mainSaveEvery: Int?

    init(task: Int, saves: Int, label: String? = nil, mainSaveEvery: Int? = nil) {
        self.task = task
        self.saves = saves
        self.label = label ?? "t\(task)"
        self.mainSaveEvery = mainSaveEvery
    }

    func value(_ index: Int) -> Int64 { Int64(task) * 1_000_000 + Int64(index) }
    func marked(at index: Int) -> Int? { index % 10 == 9 ? index - 5 : nil }
    func deleted(at index: Int) -> Int? { index % 50 == 49 ? index - 45 : nil }

    var deletedValues: [Int64] { (0..<saves).compactMap(deleted(at:)).map(value) }

    /// The rows the store holds afterwards.
    var expectedRows: [NumberRow] {
        let gone = Set((0..<saves).compactMap(deleted(at:)))
        let marked = Set((0..<saves).compactMap(marked(at:)))
        return (0..<saves).filter { !gone.contains($0) }.map { NumberRow(value: value($0), isEven: marked.contains($0), label: label) }
    }

    /// Runs the script on `context`, one `perform` block per save.
    func run(on context: ManagedObjectContext, coordinator: StoreCoordinator) async throws -> WriterOutcome {
        var outcome = WriterOutcome()
        for index in 0..<saves {
            let value = self.value(index)
            let label = self.label
            let markID = marked(at: index).map { outcome.inserted[$0] }
            let deleteID = deleted(at: index).map { outcome.inserted[$0] }
            let parentSaves = mainSaveEvery.map { index % $0 == $0 - 1 || index == saves - 1 }
            let save = try await context.perform { () throws -> SaveRecord in
                let number = try context.insert("Number")
                try number.setValue(value, forKey: "value")
                try number.setValue(label, forKey: "label")
                if let markID { try context.existingObject(with: markID).setValue(true, forKey: "isEven") }
                if let deleteID { try context.delete(context.existingObject(with: deleteID)) }
                let generation: Int64?
                switch parentSaves {
                case nil:
                    generation = try context.saveToStore()?.generation
                case false?:
                    try context.save()
                    return SaveRecord(id: number.objectID, reachedStore: false, generation: nil, problems: [])
                case true?:
                    try context.save()
                    let parent = context.parent!
                    generation = try parent.performAndWait { try parent.saveToStore() }?.generation
                }
                // Committed by this cascade or by a concurrent one, the save is in the store now.
                var problems: [String] = []
                let row = try coordinator.row(for: number.objectID)
                if row?.attributes[0]?.swiftValue as? Int64 != value { problems.append("\(label) save \(index): insert not stored") }
                if let markID, try coordinator.row(for: markID)?.attributes[1]?.swiftValue as? Bool != true {
                    problems.append("\(label) save \(index): mark not stored")
                }
                if let deleteID, try coordinator.row(for: deleteID) != nil { problems.append("\(label) save \(index): delete not stored") }
                return SaveRecord(id: number.objectID, reachedStore: true, generation: generation, problems: problems)
            }
            outcome.inserted.append(save.id)
            if let markID { outcome.marked.append(markID) }
            if let deleteID { outcome.deleted.append(deleteID) }
            if !save.reachedStore {
                outcome.intoMainOnly += 1
            } else if let generation = save.generation {
                outcome.generations.append(generation)
            } else {
                outcome.bundled += 1
            }
            outcome.problems += save.problems
        }
        return outcome
    }
}

private struct SaveRecord: Sendable {
    var id: ObjectID
    /// False for a save into the parent only.
    var reachedStore: Bool
    var generation: Int64?
    var problems: [String]
}

private struct WriterOutcome: Sendable {
    var inserted: [ObjectID] = []
    var marked: [ObjectID] = []
    var deleted: [ObjectID] = []
    /// The generations of the saves whose own cascade committed.
    var generations: [Int64] = []
    /// Store-bound saves that returned nil: a concurrent cascade committed their changes.
    var bundled = 0
    /// Saves into the parent only (`mainSaveEvery`).
    var intoMainOnly = 0
    var problems: [String] = []
}

private struct ReaderPass: Sendable {
    var pending: Bool
    var matched = 0
    var violations: [String] = []
}

private struct ReaderOutcome: Sendable {
    var fetches = 0
    var withPending = 0
    var violations: [String] = []

    mutating func add(_ pass: ReaderPass) {
        fetches += 1
        if pass.pending { withPending += 1 }
        violations += pass.violations
    }
}

private enum MixedOutcome: Sendable {
    case writer(WriterOutcome)
    case background(WriterOutcome)
    case reader(ReaderOutcome)
}

/// A Number's values, as a test expects them.
private struct NumberRow: Hashable, Sendable {
    var value: Int64
    var isEven: Bool
    var label: String?
}

/// A fetched Number: its ID and values.
private struct StoredNumber: Hashable, Sendable, CustomStringConvertible {
    var id: ObjectID
    var row: NumberRow

    var value: Int64 { row.value }
    var isEven: Bool { row.isEven }
    var label: String? { row.label }
    var description: String { "\(id) value=\(value) isEven=\(isEven) label=\(label ?? "nil")" }

    /// Every Number `predicate` matches in `context`, by value. Call on the context's queue.
    static func all(in context: ManagedObjectContext, where predicate: Condition? = nil) throws -> [StoredNumber] {
        try context.fetch(FetchRequest(entityName: "Number", predicate: predicate, sortKeys: [.ascending("value")])).map { object in
            StoredNumber(id: object.objectID, row: NumberRow(
                value: try object.value(forKey: "value") as? Int64 ?? .min,
                isEven: try object.value(forKey: "isEven") as? Bool ?? false,
                label: try object.value(forKey: "label") as? String))
        }
    }
}

