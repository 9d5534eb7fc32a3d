import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A model-based property test of the results controller: seeded random batches of inserts,
/// deletes and updates (sort key, section key, a related object's key, predicate membership, plain
/// values) reach main through an update context's `save()`, through `saveToStore()` and through a
/// sibling background context. After every batch the controller must agree with a fresh fetch and
/// with an independent model of what main sees, and the change sets it reported must turn the
/// previous layout into the new one by table-view rules (applied here by an applier of our own).
///
/// `STRATA_FRC_SEED=<n>` replays a run; `STRATA_FRC_PROPERTY_BATCHES=<n>` changes its length. The
/// wider model-based test of every route is `ControllerModelTests`; this one keeps its independent
/// model of what main shows.
///
/// The time limit is a hang guard, not a speed check: the test takes about 4 s alone, and up to
/// 7.5 min beside the whole suite on two cores (a 5-minute limit failed there).
@Suite struct FetchedResultsPropertyTests {
    @Test(.timeLimit(.minutes(30))) func randomBatchesMatchAFreshFetchAndApplyExactly() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["STRATA_FRC_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        let batches = environment["STRATA_FRC_PROPERTY_BATCHES"].flatMap { Int($0) } ?? 1_000
        var run = try PropertyRun(seed: seed)
        var mismatches = 0
        var completed = 0
        for batch in 1...batches {
            completed = batch
            let problems: [String]
            do {
                problems = try run.batch(batch)
            } catch {
                // The contexts and the model no longer agree on what was saved: stop here.
                mismatches += 1
                Issue.record("""
                    frc-property: batch \(batch) threw \(error) (replay: STRATA_FRC_SEED=\(seed))
                    route \(run.lastMode.rawValue), operations: \(run.lastOperations.joined(separator: "; "))
                    """)
                break
            }
            guard !problems.isEmpty else { continue }
            mismatches += 1
            if mismatches <= 3 {
                Issue.record("""
                    frc-property mismatch at batch \(batch) (replay: STRATA_FRC_SEED=\(seed)):
                    \(problems.joined(separator: "\n"))
                    """)
            }
            try run.resynchronise()
        }
        print("frc-property: batches=\(completed) mismatches=\(mismatches) seed=\(seed)")
        print("frc-property reached: \(run.tally)")
        #expect(mismatches == 0, "frc-property: \(mismatches) of \(completed) batches mismatched; replay with STRATA_FRC_SEED=\(seed)")
        // Every kind of change was exercised (in a run of normal length): the property is not vacuous.
        let tally = run.tally
        if completed >= 1_000 {
            #expect(tally.sectionInserts > 0 && tally.sectionDeletes > 0, "section inserts/deletes not exercised: \(tally)")
            #expect(tally.inserts > 0 && tally.deletes > 0 && tally.updates > 0, "object inserts/deletes/updates not exercised: \(tally)")
            #expect(tally.movesWithinSection > 0 && tally.movesAcrossSections > 0, "moves not exercised: \(tally)")
            #expect(tally.pendingMainBackgroundBatches > 0, "background batches over unsaved changes of main not exercised: \(tally)")
        }
    }
}

// MARK: - The model

/// A good as the model sees it.
private struct GoodValues: Equatable {
    var name: String
    var number: Int64
    var category: Int64
}

/// What one context sees: goods and categories by primary key.
private struct World: Equatable {
    var goods: [Int64: GoodValues] = [:]
    var categories: [Int64: String] = [:]

    /// The controller's request run on this world: `number < 80`, sectioned by `category.name`,
    /// sorted by category name then name (strings by UTF-8 bytes), ties by primary key.
    func expectedLayout() -> ControllerLayout {
        let visible = goods.filter { $0.value.number < 80 }.map { (key: $0.key, good: $0.value, section: categories[$0.value.category]!) }
        let ordered = visible.sorted { a, b in
            if a.section != b.section { return a.section.utf8.lexicographicallyPrecedes(b.section.utf8) }
            if a.good.name != b.good.name { return a.good.name.utf8.lexicographicallyPrecedes(b.good.name.utf8) }
            return a.key < b.key
        }
        var sections: [ControllerLayout.Section] = []
        for row in ordered {
            if sections.last?.name != row.section { sections.append(ControllerLayout.Section(name: row.section, ids: [])) }
            sections[sections.count - 1].ids.append(ObjectID(entityName: "Good", primaryKey: row.key))
        }
        return ControllerLayout(sections: sections)
    }

    /// Main after merging a background save that turned the store from `before` into `after`:
    /// a property main changed and has not saved (its value differs from the stored one) keeps
    /// main's value; every other property takes the saved one; deleted goods leave, inserted ones
    /// arrive.
    func merging(storeBefore before: World, storeAfter after: World) -> World {
        var merged = self
        for (key, name) in after.categories {
            if let old = before.categories[key] {
                if merged.categories[key] == old { merged.categories[key] = name }
            } else {
                merged.categories[key] = name
            }
        }
        // Deleted by them: gone from main too, unless main has a pending change to the good's
        // values. Under main's `inMemoryWinsPerProperty` that save would refuse the delete, so
        // the merge keeps the good, with main's values, until main's save throws (issue 46,
        // point 5): `keptOverTheirDelete`.
        for key in before.goods.keys where after.goods[key] == nil && merged.goods[key] == before.goods[key] { merged.goods[key] = nil }
        for (key, new) in after.goods {
            guard let old = before.goods[key] else {
                merged.goods[key] = new
                continue
            }
            guard var mine = merged.goods[key] else { continue }      // deleted by main, unsaved
            if mine.name == old.name { mine.name = new.name }
            if mine.number == old.number { mine.number = new.number }
            if mine.category == old.category { mine.category = new.category }
            merged.goods[key] = mine
        }
        return merged
    }
}

/// Sections (names) and their ordered object IDs: what the test compares.
struct ControllerLayout: Equatable {
    struct Section: Equatable {
        var name: String
        var ids: [ObjectID]
    }
    var sections: [Section]

    init(sections: [Section]) { self.sections = sections }
    init(_ snapshot: FetchedSnapshot) { sections = snapshot.sections.map { Section(name: $0.name, ids: $0.objectIDs) } }

    subscript(path: FetchedIndexPath) -> ObjectID? {
        guard sections.indices.contains(path.section), sections[path.section].ids.indices.contains(path.item) else { return nil }
        return sections[path.section].ids[path.item]
    }

    func render(_ names: [Int64: String]) -> String {
        sections.map { section in
            "\(section.name)[" + section.ids.map { "\($0.primaryKey) \(names[$0.primaryKey] ?? "?")" }.joined(separator: ", ") + "]"
        }.joined(separator: " ")
    }
}

// MARK: - The run

private struct Tally: CustomStringConvertible {
    var sectionInserts = 0, sectionDeletes = 0, inserts = 0, deletes = 0, updates = 0
    var movesWithinSection = 0, movesAcrossSections = 0
    var batchesWithSeveralChangeSets = 0, pendingMainBackgroundBatches = 0
    /// Saves through main refused because main kept goods a background save deleted.
    var refusedOverKeptGoods = 0

    var description: String {
        "section inserts \(sectionInserts), section deletes \(sectionDeletes), inserts \(inserts), deletes \(deletes), updates \(updates), "
            + "moves within \(movesWithinSection), moves across \(movesAcrossSections), batches with several change sets \(batchesWithSeveralChangeSets), "
            + "background batches over unsaved main changes \(pendingMainBackgroundBatches), saves refused over kept goods \(refusedOverKeptGoods)"
    }
}

private enum Route: String, CaseIterable {
    case saveIntoMain = "update.save()"
    case saveToStore = "update.saveToStore()"
    case background = "background.save()"
}

private struct PropertyRun {
    static let categoryNames = ["Bakery", "Dairy", "Fruit", "Grains", "Meat", "Pantry", "Seafood", "Vegetables",
                                "Beverages", "Candy", "Frozen", "Herbs", "Snacks", "Zest", "apples", "Ümlaut"]
    static let goodNames = ["Apple", "Banana", "Cherry", "Date", "Elderberry", "Fig", "Grape", "Honeydew", "Kiwi", "Lemon",
                            "Mango", "Nectarine", "Olive", "Peach", "Quince", "Raspberry", "Strawberry", "Tomato",
                            "Ugli", "Vanilla", "Walnut", "Yam", "Zucchini", "apricot", "bread", "Éclair"]

    let container: PersistentContainer
    let request: AnyFetchRequest
    var controller: FetchedResultsController<ManagedObject>
    let recorder = PropertyRecorder()
    var rng: SplitMix64
    /// What main sees, and what the store (and a fresh background context) sees.
    var main = World()
    var store = World()
    /// The last name of every good that ever existed, for messages.
    var names: [Int64: String] = [:]
    var layout: ControllerLayout
    var tally = Tally()
    var lastMode: Route = .saveToStore
    /// Goods main changed that a background save then deleted: main keeps them until a save
    /// through it is refused (see `World.merging`).
    var keptGoods: Set<Int64> = []
    var lastOperations: [String] = []

    var context: ManagedObjectContext { container.mainContext }

    init(seed: UInt64) throws {
        rng = SplitMix64(seed: seed)
        container = try PersistentContainer(inMemoryWith: TestModels.goods())
        request = FetchRequest(entityName: "Good", predicate: try Condition("number < 80"),
                               sortKeys: [.ascending("category.name"), .ascending("name")])
        var world = World()
        var names: [Int64: String] = [:]
        var rng = self.rng
        let update = container.newUpdateContext(name: "seed")
        try update.performAndWait {
            for categoryName in PropertyRun.categoryNames.prefix(8) {
                let category = try update.insert("Category")
                try category.setValue(categoryName, forKey: "name")
                world.categories[category.objectID.primaryKey] = categoryName
                for _ in 0..<8 {
                    let values = GoodValues(name: rng.pick(PropertyRun.goodNames), number: Int64(rng.int(0...159)),
                                            category: category.objectID.primaryKey)
                    let good = try update.insert("Good")
                    try good.setValue(values.name, forKey: "name")
                    try good.setValue(values.number, forKey: "number")
                    try good.setValue(category, forKey: "category")
                    world.goods[good.objectID.primaryKey] = values
                    names[good.objectID.primaryKey] = values.name
                }
            }
            try update.saveToStore()
        }
        self.rng = rng
        self.names = names
        main = world
        store = world
        // The model (`World.merging`) keeps main's unsaved changes over what background saves
        // bring, per property, at main's save too: `inMemoryWinsPerProperty` on main and the
        // writer. (Under `.error` such a save throws: a merge leaves the conflict to the save.)
        for context in [container.mainContext, container.writerContext] {
            context.performAndWait { context.mergePolicy = .inMemoryWinsPerProperty }
        }
        controller = FetchedResultsController(fetchRequest: request, managedObjectContext: container.mainContext,
                                              sectionNameKeyPath: "category.name")
        let (controller, recorder, context) = (self.controller, self.recorder, container.mainContext)
        layout = try context.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            return ControllerLayout(controller.snapshot)
        }
        if layout != world.expectedLayout() {
            Issue.record("the first fetch differs from the model:\n  fetched \(layout.render(names))\n  model   \(world.expectedLayout().render(names))")
        }
    }

    /// Goods `world` (main's) holds that the store no longer has: changed on main, then deleted
    /// by a background save.
    func keptOverTheirDelete(_ world: World) -> Set<Int64> {
        keptGoods.filter { world.goods[$0] != nil }
    }

    /// After a mismatch: fetch again, so that the following batches are checked on their own.
    mutating func resynchronise() throws {
        let (controller, recorder) = (self.controller, self.recorder)
        layout = try context.performAndWait {
            try controller.performFetch()
            recorder.events = []
            recorder.calls = []
            return ControllerLayout(controller.snapshot)
        }
        container.waitForPendingMerges()
    }

    // MARK: One batch

    /// Runs one random batch and returns what went wrong (nothing: empty).
    mutating func batch(_ number: Int) throws -> [String] {
        let route = rng.pick(Route.allCases)
        lastMode = route
        lastOperations = []
        let mainHadUnsavedChanges = main != store
        let mainBefore = main
        if route == .background, mainHadUnsavedChanges { tally.pendingMainBackgroundBatches += 1 }
        let operationCount = rng.weighted([(5, 1), (3, 2), (2, 3), (1, 4), (1, 8)])
        var world = route == .background ? store : main
        let target = route == .background ? container.newBackgroundContext(name: "background") : container.newUpdateContext(name: "update")
        var rng = self.rng
        var log: [String] = []
        var names = self.names
        defer {
            self.rng = rng
            self.names = names
            lastOperations = log
        }
        do {
            try target.performAndWait {
                for _ in 0..<operationCount {
                    try PropertyRun.randomOperation(in: target, world: &world, rng: &rng, log: &log, names: &names)
                }
                switch route {
                case .saveIntoMain, .background: try target.save()
                case .saveToStore: try target.saveToStore()
                }
            }
        } catch let error as MergeConflictError where route == .saveToStore && !keptOverTheirDelete(world).isEmpty {
            // The cascade met main's kept goods (changed on main, deleted by a background
            // save): refused whole, every context as it was. The app rolls main back, which
            // takes the kept goods out; the update context is dropped.
            let kept = keptOverTheirDelete(world)
            guard Set(error.conflicts.map(\.objectID.primaryKey)).isSubset(of: kept) else { throw error }
            tally.refusedOverKeptGoods += 1
            context.performAndWait { context.rollback() }
            container.waitForPendingMerges()
            main = store
            keptGoods = []
            return check(number, route: route, operations: log + ["(refused: kept goods \(kept.sorted()); main rolled back)"], names: names,
                         mainBefore: mainBefore, mainHadUnsavedChanges: mainHadUnsavedChanges)
        }
        container.waitForPendingMerges()
        switch route {
        case .saveIntoMain:
            main = world
        case .saveToStore:
            main = world
            store = world
            keptGoods = []
        case .background:
            for (key, stored) in store.goods where world.goods[key] == nil {
                if let mine = main.goods[key], mine != stored { keptGoods.insert(key) }
            }
            main = main.merging(storeBefore: store, storeAfter: world)
            store = world
        }
        return check(number, route: route, operations: log, names: names, mainBefore: mainBefore, mainHadUnsavedChanges: mainHadUnsavedChanges)
    }

    // MARK: Operations

    static func randomOperation(in context: ManagedObjectContext, world: inout World, rng: inout SplitMix64,
                                log: inout [String], names: inout [Int64: String]) throws {
        enum Kind { case insert, delete, rename, renameNeighbours, move, moveToNewCategory, renameCategory, crossThreshold, plainNumber }
        let count = world.goods.count
        var kind = rng.weighted([
            (count < 40 ? 8 : count > 90 ? 1 : 4, Kind.insert),
            (count < 40 ? 1 : count > 90 ? 8 : 4, Kind.delete),
            (5, Kind.rename),
            (2, Kind.renameNeighbours),
            (4, Kind.move),
            (1, Kind.moveToNewCategory),
            (2, Kind.renameCategory),
            (4, Kind.crossThreshold),
            (4, Kind.plainNumber),
        ])
        func category(_ key: Int64) throws -> ManagedObject {
            try context.existingObject(with: ObjectID(entityName: "Category", primaryKey: key))
        }
        func good(_ key: Int64) throws -> ManagedObject {
            try context.existingObject(with: ObjectID(entityName: "Good", primaryKey: key))
        }
        func newCategory() throws -> Int64 {
            let name = rng.pick(categoryNames)
            let object = try context.insert("Category")
            try object.setValue(name, forKey: "name")
            world.categories[object.objectID.primaryKey] = name
            log.append("new category \(object.objectID.primaryKey) \(name)")
            return object.objectID.primaryKey
        }
        let goodKeys = world.goods.keys.sorted()
        let categoryKeys = world.categories.keys.sorted()
        if goodKeys.isEmpty { kind = .insert }
        switch kind {
        case .insert:
            let categoryKey = rng.chance(0.1) && categoryKeys.count < 24 ? try newCategory() : rng.pick(categoryKeys)
            let values = GoodValues(name: rng.pick(goodNames), number: Int64(rng.int(0...159)), category: categoryKey)
            let object = try context.insert("Good")
            try object.setValue(values.name, forKey: "name")
            try object.setValue(values.number, forKey: "number")
            try object.setValue(try category(categoryKey), forKey: "category")
            let key = object.objectID.primaryKey
            world.goods[key] = values
            names[key] = values.name
            log.append("insert good \(key) \(values.name) #\(values.number) in \(categoryKey) \(world.categories[categoryKey]!)")
        case .delete:
            let key = rng.pick(goodKeys)
            try context.delete(try good(key))
            world.goods[key] = nil
            log.append("delete good \(key)")
        case .rename:
            let key = rng.pick(goodKeys)
            let name = rng.pick(goodNames)
            try good(key).setValue(name, forKey: "name")
            log.append("rename good \(key) \(world.goods[key]!.name) -> \(name)")
            world.goods[key]!.name = name
            names[key] = name
        case .renameNeighbours:
            // Two to four neighbours of the layout renamed at once (often their names reversed):
            // changed rows that trade places inside one gap between unchanged rows.
            let flat = world.expectedLayout().sections.flatMap(\.ids).map(\.primaryKey)
            guard flat.count >= 2 else { break }
            let start = rng.int(0...(flat.count - 2))
            let run = Array(flat[start..<min(flat.count, start + rng.int(2...4))])
            let reversed = rng.chance(0.5)
            let newNames = reversed ? run.reversed().map { world.goods[$0]!.name } : run.map { _ in rng.pick(goodNames) }
            for (key, name) in zip(run, newNames) {
                try good(key).setValue(name, forKey: "name")
                world.goods[key]!.name = name
                names[key] = name
            }
            log.append("rename neighbours \(run) -> \(newNames)")
        case .move, .moveToNewCategory:
            let key = rng.pick(goodKeys)
            let categoryKey = kind == .moveToNewCategory && categoryKeys.count < 24 ? try newCategory() : rng.pick(categoryKeys)
            try good(key).setValue(try category(categoryKey), forKey: "category")
            log.append("move good \(key) from \(world.goods[key]!.category) to \(categoryKey) \(world.categories[categoryKey]!)")
            world.goods[key]!.category = categoryKey
        case .renameCategory:
            let key = rng.pick(categoryKeys)
            let name = rng.pick(categoryNames)
            try category(key).setValue(name, forKey: "name")
            log.append("rename category \(key) \(world.categories[key]!) -> \(name)")
            world.categories[key] = name
        case .crossThreshold, .plainNumber:
            let key = rng.pick(goodKeys)
            let old = world.goods[key]!.number
            let new: Int64 = kind == .crossThreshold
                ? (old < 80 ? Int64(rng.int(80...159)) : Int64(rng.int(0...79)))
                : (old < 80 ? Int64(rng.int(0...79)) : Int64(rng.int(80...159)))
            try good(key).setValue(new, forKey: "number")
            log.append("number of good \(key) \(old) -> \(new)")
            world.goods[key]!.number = new
        }
    }

    // MARK: Checking

    mutating func check(_ number: Int, route: Route, operations: [String], names: [Int64: String], mainBefore: World,
                        mainHadUnsavedChanges: Bool) -> [String] {
        let (controller, recorder, request) = (self.controller, self.recorder, self.request)
        let previous = layout
        let expected = main.expectedLayout()
        let observed = context.performAndWait { () -> (ControllerLayout, Result<ControllerLayout, any Error>, [FetchedResultsEvent], [PropertyRecorder.Call]) in
            let actual = ControllerLayout(controller.snapshot)
            let fresh = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "category.name")
            let freshLayout = Result { () throws -> ControllerLayout in
                try fresh.performFetch()
                return ControllerLayout(fresh.snapshot)
            }
            defer {
                recorder.events = []
                recorder.calls = []
            }
            return (actual, freshLayout, recorder.events, recorder.calls)
        }
        let (actual, freshResult, events, calls) = observed
        layout = actual
        var problems: [String] = []
        switch freshResult {
        case .success(let fresh) where fresh != actual:
            problems.append("(a) the controller differs from a fresh fetch:\n    controller \(actual.render(names))\n    fresh      \(fresh.render(names))")
        case .failure(let error):
            problems.append("(a) the fresh fetch threw \(error)")
        default:
            break
        }
        if actual != expected {
            problems.append("(model) the controller differs from the model of main:\n    controller \(actual.render(names))\n    model      \(expected.render(names))")
        }
        var current = previous
        var expectedCalls: [PropertyRecorder.Call] = []
        var changeSets = 0
        for (index, event) in events.enumerated() {
            switch event {
            case .reload(let snapshot):
                problems.append("event \(index): a reload, where no reset or store replacement happened")
                expectedCalls.append(.snapshot(snapshot))
                current = ControllerLayout(snapshot)
            case .failed(let error):
                problems.append("event \(index): the controller failed to follow a change: \(error)")
            case .changes(let changes):
                changeSets += 1
                expectedCalls += PropertyRecorder.expectedCalls(changes)
                problems += checkChangeSet(changes, index: index, previous: &current, names: names)
            }
        }
        if changeSets > 1 { tally.batchesWithSeveralChangeSets += 1 }
        // A listed object whose values changed and that stays listed is reloaded: reported as an
        // update (or a move, or a delete and insert across change sets).
        var reported = Set<Int64>()
        for case .changes(let changes) in events {
            for change in changes.objects {
                switch change {
                case let .update(id, _, _), let .move(id, _, _), let .insert(id, _): reported.insert(id.primaryKey)
                case .delete: break
                }
            }
        }
        let stayed = Set(previous.sections.flatMap(\.ids).map(\.primaryKey)).intersection(actual.sections.flatMap(\.ids).map(\.primaryKey))
        let unreported = stayed.filter { mainBefore.goods[$0] != main.goods[$0] && !reported.contains($0) }.sorted()
        if !unreported.isEmpty {
            problems.append("(updates) objects whose values changed and that stay listed were not reported: \(unreported)")
        }
        if calls != expectedCalls {
            problems.append("the delegate callbacks do not spell out the change sets:\n    got      \(calls)\n    expected \(expectedCalls)")
        }
        if current != actual {
            problems.append("(b) the reported change sets (\(changeSets)) applied to the previous layout give\n    \(current.render(names))\n    but the controller shows\n    \(actual.render(names))")
        }
        guard !problems.isEmpty else { return [] }
        return ["batch \(number), route \(route.rawValue), main held unsaved changes before: \(mainHadUnsavedChanges)",
                "operations: \(operations.joined(separator: "; "))",
                "previous layout: \(previous.render(names))",
                "change sets: " + events.map { event -> String in
                    if case .changes(let changes) = event { return "{" + render(changes) + "}" }
                    return "{reload}"
                }.joined(separator: " ")] + problems
    }

    mutating func checkChangeSet(_ changes: FetchedChanges, index: Int, previous current: inout ControllerLayout, names: [Int64: String]) -> [String] {
        var problems: [String] = []
        let label = "change set \(index) {\(render(changes))}"
        if changes.isEmpty { problems.append("\(label): an empty change set was reported") }
        if ControllerLayout(changes.before) != current {
            problems.append("(b) \(label): before is\n    \(ControllerLayout(changes.before).render(names))\n    but the previous layout is\n    \(current.render(names))")
        }
        // (c) no object twice, (d) a move is never also an update.
        var seen: [ObjectID: Int] = [:]
        var moved = Set<ObjectID>(), updated = Set<ObjectID>()
        for change in changes.objects {
            let id: ObjectID
            switch change {
            case let .delete(object, _), let .insert(object, _): id = object
            case let .move(object, from, to):
                id = object
                moved.insert(object)
                if from.section == to.section { tally.movesWithinSection += 1 } else { tally.movesAcrossSections += 1 }
            case let .update(object, _, _):
                id = object
                updated.insert(object)
            }
            seen[id, default: 0] += 1
        }
        let twice = seen.filter { $0.value > 1 }.keys.map(\.primaryKey).sorted()
        if !twice.isEmpty { problems.append("(c) \(label): objects reported more than once: \(twice)") }
        let both = moved.intersection(updated).map(\.primaryKey).sorted()
        if !both.isEmpty { problems.append("(d) \(label): objects reported both moved and updated: \(both)") }
        for change in changes.sections {
            if case .insert = change { tally.sectionInserts += 1 } else { tally.sectionDeletes += 1 }
        }
        for change in changes.objects {
            switch change {
            case .insert: tally.inserts += 1
            case .delete: tally.deletes += 1
            case .update: tally.updates += 1
            case .move: break
            }
        }
        do {
            let applied = try applyByTableViewRules(changes, to: current)
            if applied != ControllerLayout(changes.after) {
                problems.append("(b) \(label): applied by table-view rules it gives\n    \(applied.render(names))\n    but its after is\n    \(ControllerLayout(changes.after).render(names))")
            }
            if ControllerLayout(changes.before) == current, ControllerLayout(changes.applied()) != ControllerLayout(changes.after) {
                problems.append("(b) \(label): FetchedChanges.applied() gives\n    \(ControllerLayout(changes.applied()).render(names))\n    but its after is\n    \(ControllerLayout(changes.after).render(names))")
            }
            current = applied
        } catch {
            problems.append("(b) \(label): cannot be applied to the previous layout: \(error)")
            current = ControllerLayout(changes.after)
        }
        return problems
    }
}
