import Foundation
import Testing
import StrataTestSupport
@_spi(Testing) @testable import Strata

/// Where a watched controller lives.
enum ModelContextKind: String, Sendable { case main, writer, observer }

/// A controller the model test watches: its request, context and cache name.
struct ModelControllerSpec: Sendable {
    let name: String
    let context: ModelContextKind
    let request: AnyFetchRequest
    let sectionKeyPath: String?
    let cacheName: String?

    var entity: String { request.entityName }

    /// Several controllers at once, on three contexts: flat, sectioned by an attribute, by a
    /// to-one key path, predicates through relationships (to-one paths and `ANY` over a
    /// to-many), a window (`fetchLimit` + `fetchOffset`), with and without a cache.
    static func all() throws -> [ModelControllerSpec] {
        var window = FetchRequest(entityName: "Item", predicate: try Condition("owner != nil OR flag == YES"),
                                  sortKeys: [.init("score", ascending: false), .init("name")])
        window.fetchLimit = 5
        window.fetchOffset = 2
        var offsetOnly = FetchRequest(entityName: "Category", sortKeys: [.init("rank", ascending: false), .init("name")])
        offsetOnly.fetchOffset = 1
        offsetOnly.fetchLimit = 4
        return [
            // Finding 1's controller: flat, every item, by name.
            ModelControllerSpec(name: "flat", context: .main, request: FetchRequest(entityName: "Item", sortKeys: [.init("name")]),
                                sectionKeyPath: nil, cacheName: nil),
            // Sectioned by a to-one key path, cached.
            ModelControllerSpec(name: "byCategory", context: .main,
                                request: FetchRequest(entityName: "Item", predicate: try Condition("flag == NO"),
                                                      sortKeys: [.init("category.name"), .init("name")]),
                                sectionKeyPath: "category.name", cacheName: "by-category"),
            // Sectioned by an attribute, descending; the predicate reads through two to-ones.
            ModelControllerSpec(name: "byGroup", context: .main,
                                request: FetchRequest(entityName: "Item",
                                                      predicate: try Condition("category.rank < 3 OR shelf.name BEGINSWITH 'S'"),
                                                      sortKeys: [.init("group", ascending: false), .init("score"), .init("name")]),
                                sectionKeyPath: "group", cacheName: nil),
            ModelControllerSpec(name: "window", context: .main, request: window, sectionKeyPath: nil, cacheName: nil),
            // ANY over a to-many: categories with a flagged item.
            ModelControllerSpec(name: "categoriesAny", context: .main,
                                request: FetchRequest(entityName: "Category", predicate: try Condition("ANY items.flag == YES"),
                                                      sortKeys: [.init("name"), .init("rank")]),
                                sectionKeyPath: nil, cacheName: nil),
            // On the writer: sectioned through the no-action relationship, cached.
            ModelControllerSpec(name: "writerByBin", context: .writer,
                                request: FetchRequest(entityName: "Item", sortKeys: [.init("bin.name"), .init("score"), .init("name")]),
                                sectionKeyPath: "bin.name", cacheName: "writer-bin"),
            // On a sibling root context that merges every save: sectioned through the cascading relationship, cached.
            ModelControllerSpec(name: "observerByShelf", context: .observer,
                                request: FetchRequest(entityName: "Item", predicate: try Condition("score >= 2"),
                                                      sortKeys: [.init("shelf.name", ascending: false), .init("name")]),
                                sectionKeyPath: "shelf.name", cacheName: "observer-shelf"),
            ModelControllerSpec(name: "observerCategories", context: .observer, request: offsetOnly, sectionKeyPath: nil, cacheName: nil),
        ]
    }
}

/// Records a controller's events.
final class ModelRecorder: FetchedResultsControllerDelegate {
    var events: [FetchedResultsEvent] = []
    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) { events.append(event) }
}

/// What the model test counts: how often each route, operation and outcome was reached.
struct ModelTally: Sendable {
    var routes: [String: Int] = [:]
    var operations: [String: Int] = [:]
    var outcomes: [String: Int] = [:]
    var controllers: [String: Int] = [:]

    mutating func add(_ other: ModelTally) {
        routes.merge(other.routes, uniquingKeysWith: +)
        operations.merge(other.operations, uniquingKeysWith: +)
        outcomes.merge(other.outcomes, uniquingKeysWith: +)
        controllers.merge(other.controllers, uniquingKeysWith: +)
    }
}

/// One run: a store file in WAL mode with the three-tier stack, a sibling root that merges
/// every save, a second coordinator on the same file, and the watched controllers. Batches are
/// applied one by one and every controller is checked after each (see ``check(_:)``).
final class ControllerModelRun {
    struct Watched {
        let spec: ModelControllerSpec
        var controller: FetchedResultsController<ManagedObject>
        var recorder: ModelRecorder
        /// The layout at the last check.
        var layout: ControllerLayout
        /// The controller's probes answered from earlier placements' values, at the last check.
        var probesFromMemory = 0
    }

    /// What a row's own values and the related values it reads were, in a context's view.
    struct Signature: Equatable {
        var own: String
        var related: String
    }

    let directory: TemporaryDirectory
    let container: PersistentContainer
    let observer: ManagedObjectContext
    let external: StoreCoordinator
    var watched: [Watched] = []
    var tally = ModelTally()
    /// Signatures by context, entity and key, at the last check.
    var signatures: [ModelContextKind: [String: [Int64: Signature]]] = [:]
    var batchNumber = 0
    /// Updates reported for unchanged rows, and objects named twice (finding 3's kind).
    var duplicateUpdates = 0
    /// Set by a batch whose refused save on main was rolled back: main showed the edits, then
    /// showed them undone (two changes of what main shows, each reported).
    var mainReverted = false
    /// Set when another coordinator changed a row between main's save and the writer's: the
    /// writer's commit merges their values into ours, a second real change in one batch.
    var mergedElsewhere = false
    /// The item main edited under the strict policy before the update context saved. When that
    /// save does not conflict (the update context changed nothing of the item itself, only
    /// what a key path reads through it, such as its category's name), the item changes twice in
    /// the batch: main's edit, reported when it ends, and the save's.
    var editedOnMainBeforeSave: Set<ObjectID> = []
    /// How many change sets one object may rightly appear in during this batch: one per commit
    /// (the batch-request route commits once per request, after an optional edit on main).
    var changeSetsAllowed = 1

    var main: ManagedObjectContext { container.mainContext }

    /// Whether to print each operation and change set: `STRATA_FRC_DEBUG=1` for every batch,
    /// `STRATA_FRC_DEBUG=N` from batch N on (a long seed's failing batch, without its history).
    var debugging: Bool {
        guard let value = ProcessInfo.processInfo.environment["STRATA_FRC_DEBUG"] else { return false }
        return batchNumber >= (Int(value) ?? 0)
    }
    var writer: ManagedObjectContext { container.writerContext }

    func context(_ kind: ModelContextKind) -> ManagedObjectContext {
        switch kind {
        case .main: main
        case .writer: writer
        case .observer: observer
        }
    }

    init() throws {
        directory = TemporaryDirectory("strata-frc-model")
        let url = directory.file("model.sqlite")
        var following = StoreOptions()
        following.history.followsOtherConnections = true
        container = try PersistentContainer(model: ControllerModel.model(), url: url, options: following)
        observer = container.coordinator.newContext(name: "observer")
        observer.automaticallyMergesChangesFromParent = true
        // The other process follows nothing; the container follows only on the followed route
        // (elsewhere, the routes choose when main hears of the other coordinator).
        var quiet = StoreOptions()
        quiet.history.followsOtherConnections = false
        external = try StoreCoordinator(model: ControllerModel.model(), url: url, options: quiet)
        container.coordinator.setFollowingPaused(true)
        for context in [container.writerContext, container.mainContext, observer] {
            context.performAndWait { context.mergePolicy = .inMemoryWinsPerProperty }
        }
        // A small seed so that every controller has rows from the first batch on.
        let seed = container.newUpdateContext(name: "seed")
        try seed.performAndWait {
            var generator = ModelGenerator(seed: 0x5EED)
            for p in ModelParent.allCases {
                for name in 0..<3 { _ = try ModelOperation.insertParent(p, name: name).apply(in: seed) }
            }
            for _ in 0..<24 {
                if case let .insertItem(name, group, score, flag, parents) = generator.operation(itemCount: 0) {
                    _ = try ModelOperation.insertItem(name: name, group: group, score: score, flag: flag, parents: parents).apply(in: seed)
                }
            }
            try seed.saveToStore()
        }
        for spec in try ModelControllerSpec.all() {
            watched.append(try makeWatched(spec))
        }
        for kind in [ModelContextKind.main, .writer, .observer] { signatures[kind] = try readSignatures(kind) }
    }

    deinit {
        // Close both before the folder goes (the coordinator waits for its cache writes).
        external.close()
        container.coordinator.close()
    }

    func makeWatched(_ spec: ModelControllerSpec) throws -> Watched {
        let context = context(spec.context)
        let controller = FetchedResultsController(fetchRequest: spec.request, managedObjectContext: context,
                                                  sectionNameKeyPath: spec.sectionKeyPath, cacheName: spec.cacheName)
        let recorder = ModelRecorder()
        let layout = try context.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            return ControllerLayout(controller.snapshot)
        }
        return Watched(spec: spec, controller: controller, recorder: recorder, layout: layout)
    }

    /// After a mismatch: every controller fetched again (new controllers, same requests) and the
    /// signatures read again, so the following batches are checked on their own.
    func resynchronise() throws {
        drain()
        for index in watched.indices { watched[index] = try makeWatched(watched[index].spec) }
        for kind in [ModelContextKind.main, .writer, .observer] { signatures[kind] = try readSignatures(kind) }
    }

    var itemCount: Int {
        main.performAndWait { (try? main.fetchObjectIDs(FetchRequest(entityName: "Item")).count) ?? 0 }
    }

    var mainIsDirty: Bool { main.performAndWait { main.hasChanges } }

    /// Lets every merge already handed to writer, main and the observer run.
    func drain() {
        for _ in 0..<2 {
            writer.performAndWait {}
            main.performAndWait {}
            observer.performAndWait {}
        }
    }

    // MARK: Running a batch

    /// Runs `batch`, then checks every controller; returns the problems found.
    func run(_ batch: ModelBatch) -> [String] {
        batchNumber += 1
        tally.routes[batch.route.rawValue, default: 0] += 1
        if mainIsDirty, batch.route == .background || batch.route == .externalCoordinator || batch.route == .externalFollowed
            || batch.route == .updateSaveToStore {
            tally.outcomes["\(batch.route.rawValue) over unsaved changes on main", default: 0] += 1
        }
        var problems: [String] = []
        mainReverted = false
        mergedElsewhere = false
        editedOnMainBeforeSave = []
        changeSetsAllowed = 1
        do {
            try execute(batch)
        } catch {
            problems.append("the batch threw \(error)")
        }
        drain()
        problems += check(batch)
        // After the check: a rebuilt controller starts the next batch from its fetched layout.
        if batch.refetch { problems += refetchCached() }
        return problems
    }

    /// For debugging output: the object an operation names, as ` → Entity/key`.
    static func target(of operation: ModelOperation, in context: ManagedObjectContext) -> String {
        func key(_ entity: String, _ index: Int) -> String {
            guard let keys = try? ModelOperation.keys(entity, in: context), !keys.isEmpty else { return "" }
            return " → \(keys[index % keys.count])"
        }
        switch operation {
        case let .deleteParent(p, i), let .renameParent(p, i, _): return key(p.entity, i)
        case let .setRank(i, _): return key("Category", i)
        case let .refresh(target, i, _) where target != .all: return key(target == .item ? "Item" : "Category", i)
        default: return operation.itemReference.map { key("Item", $0) } ?? ""
        }
    }

    /// Applies the operations in `context`, counting what ran.
    private func apply(_ operations: [ModelOperation], in context: ManagedObjectContext) throws {
        for operation in operations {
            if debugging { print("apply \(operation) in \(context.name ?? "?")\(Self.target(of: operation, in: context))") }
            if try operation.apply(in: context) { tally.operations[operation.kind, default: 0] += 1 }
        }
    }

    /// A save that may be refused (a deny rule, a conflict under `.error`): counted, and true
    /// when it went through.
    private func attempt(_ body: () throws -> Void) throws -> Bool {
        do {
            try body()
            return true
        } catch let error as ValidationError {
            if debugging { print("save refused: \(error)") }
            // A refused cascading save puts back what it had pushed (reported as refreshed):
            // lists show the edit and then its undoing.
            mainReverted = true
            let deny = error.failures.contains { $0.rule == .deny }
            tally.outcomes[deny ? "save refused by a deny rule" : "save refused by validation", default: 0] += 1
            return false
        } catch let error as MergeConflictError {
            if debugging { print("save refused by a conflict: \(error)") }
            mainReverted = true
            tally.outcomes["save refused by a conflict", default: 0] += 1
            return false
        }
    }

    private func execute(_ batch: ModelBatch) throws {
        if debugging { print("batch \(batchNumber): \(batch)") }
        let policy: MergePolicy = batch.strictPolicy ? .error : .inMemoryWinsPerProperty
        let operations = batch.operations
        switch batch.route {
        case .updateSaveToStore, .updateSaveThenMainSaveToStore, .updateSaveOnly:
            let update = container.newUpdateContext(name: "update")
            let ancestorsClean = !mainIsDirty && !writer.performAndWait { writer.hasChanges }
            try update.performAndWait {
                update.mergePolicy = policy
                try apply(operations, in: update)
            }
            // Under the strict policy, main changes an item the update context has read before
            // it saves: the save meets a conflict and must change nothing.
            if batch.strictPolicy, let item = operations.lazy.compactMap(\.itemReference).first {
                try main.performAndWait {
                    if try ModelOperation.setNote(item, 9).apply(in: main) {
                        tally.outcomes["conflicting edit on main", default: 0] += 1
                        // The item edited, whether or not main had unsaved edits of it already
                        // (it was once "main's updated objects, less those before the edit",
                        // which missed an item main had already changed: seed
                        // 3959384710299349932, batch 3138, reported it twice, rightly).
                        let keys = try ModelOperation.keys("Item", in: main)
                        editedOnMainBeforeSave = [keys[item % keys.count]]
                    }
                }
            }
            let saved = try update.performAndWait {
                try attempt {
                    if batch.route == .updateSaveToStore { try update.saveToStore() } else { try update.save() }
                }
            }
            // A refused save through main (main's own unsaved edits broke a rule): the app rolls
            // main back, as it would after showing the error.
            if !saved, batch.route == .updateSaveToStore, !ancestorsClean { main.performAndWait { revertMain() } }
            if saved, !editedOnMainBeforeSave.isEmpty { tally.outcomes["conflicting edit on main, save went through", default: 0] += 1 }
            if batch.route == .updateSaveToStore, saved, !operations.isEmpty {
                tally.outcomes[ancestorsClean ? "saveToStore through clean ancestors (shortcut)" : "saveToStore level by level", default: 0] += 1
            }
            if batch.route == .updateSaveThenMainSaveToStore, saved {
                try main.performAndWait {
                    if !(try attempt { try main.saveToStore() }) { revertMain() }
                }
            }
        case .mainEdits:
            try main.performAndWait { try apply(operations, in: main) }
        case .mainEditsSaveToStore, .mainSaveThenWriterSave:
            var editedElsewhere = false
            defer {
                // The app hears of the other process afterwards, as on the external route.
                if editedElsewhere { _ = try? container.coordinator.processExternalChanges() }
            }
            try main.performAndWait {
                let old = main.mergePolicy
                main.mergePolicy = policy
                defer { main.mergePolicy = old }
                try apply(operations, in: main)
                if batch.route == .mainEditsSaveToStore {
                    if !(try attempt { try main.saveToStore() }) { revertMain() }
                } else if try attempt({ try main.save() }) {
                    // Under the strict flag, another coordinator changes or deletes the item main
                    // just saved into the writer, before the writer saves: the writer's commit
                    // meets it in the store (merged, or refused and rolled back).
                    if batch.strictPolicy, let item = operations.lazy.compactMap(\.itemReference).first {
                        let other = external.newContext(name: "elsewhere")
                        let edit: ModelOperation = item.isMultiple(of: 2) ? .deleteItem(item) : .setNote(item, 7)
                        try other.performAndWait {
                            if try edit.apply(in: other), try attempt({ try other.save() }) {
                                tally.outcomes["another coordinator between main.save() and writer.save()", default: 0] += 1
                                editedElsewhere = true
                                mergedElsewhere = true
                            }
                        }
                    }
                    try writer.performAndWait {
                        if !(try attempt { try writer.save() }) {
                            tally.outcomes["writer save refused after main.save()", default: 0] += 1
                            writer.rollback()
                        }
                    }
                } else {
                    revertMain()
                }
            }
        case .background:
            let background = container.newBackgroundContext(name: "background")
            try background.performAndWait {
                background.mergePolicy = policy
                try apply(operations, in: background)
                _ = try attempt { try background.save() }
            }
        case .externalCoordinator:
            let other = external.newContext(name: "elsewhere")
            try other.performAndWait {
                other.mergePolicy = policy
                try apply(operations, in: other)
                _ = try attempt { try other.save() }
            }
            let touched = try container.coordinator.processExternalChanges()
            if !touched.isEmpty { tally.outcomes["processExternalChanges found changes", default: 0] += 1 }
        case .externalFollowed:
            container.coordinator.setFollowingPaused(false)
            defer { container.coordinator.setFollowingPaused(true) }
            let other = external.newContext(name: "elsewhere")
            try other.performAndWait {
                other.mergePolicy = policy
                try apply(operations, in: other)
                _ = try attempt { try other.save() }
            }
            // No call: the follower reads the history and merges; bounded wait for it.
            let target = try external.currentHistoryToken().generation
            let deadline = Date().addingTimeInterval(10)
            while container.coordinator.externalChangeStatistics.generation < target, Date() < deadline { usleep(200) }
            guard container.coordinator.externalChangeStatistics.generation >= target else {
                throw ModelFailure("the follower did not reach generation \(target) within 10 s: \(container.coordinator.externalChangeStatistics)")
            }
            tally.outcomes["followed: merged from the history", default: 0] += 1
        case .rollback:
            try main.performAndWait {
                try apply(operations, in: main)
                main.rollback()
            }
        case .refresh:
            try main.performAndWait {
                for operation in operations {
                    // A plain edit first (left unsaved), then the refreshes.
                    if debugging { print("apply \(operation) in main\(Self.target(of: operation, in: main))") }
                    if try operation.apply(in: main) { tally.operations[operation.kind, default: 0] += 1 }
                }
            }
        case .reset:
            main.performAndWait { main.reset() }
        case .batchRequests:
            // Under the strict flag, over an unsaved edit on main: it stays, rebased on the new rows.
            if batch.strictPolicy, let first = operations.first {
                try main.performAndWait { if try first.apply(in: main) { tally.outcomes["unsaved edit on main under a batch", default: 0] += 1 } }
            }
            changeSetsAllowed = operations.count + 1
            for operation in operations {
                if debugging { print("batch request \(operation)") }
                do {
                    if try operation.applyAsBatch(on: container.coordinator, wide: batch.wide) {
                        tally.operations["batch " + operation.kind, default: 0] += 1
                        if batch.wide, let index = operation.wideIndex {
                            let format = ModelOperation.wideFormats[index % ModelOperation.wideFormats.count]
                            tally.outcomes["batch request over a predicate (wide): \(format)", default: 0] += 1
                        }
                    }
                } catch let error as BatchError {
                    let reason = switch error {
                    case .denied: "deny"
                    case .cascadeNeedsObjects: "cascade"
                    case .missingDestinations: "missing destination"
                    default: "other"
                    }
                    tally.outcomes["batch refused: \(reason)", default: 0] += 1
                }
            }
            container.waitForPendingMerges()
        case .racePendingToOne, .raceDeleteThenSaved:
            try race(batch, policy: policy)
        }
    }

    /// The race routes (issue 39): a delete on one side while the other side points a new item
    /// at the deleted parent.
    private func race(_ batch: ModelBatch, policy: MergePolicy) throws {
        var operations = batch.operations
        // The shrinker drops operations; a race cut below its two is no race.
        guard operations.count >= 2,
              case let .insertItem(name, group, score, flag, parents) = operations.removeLast(),
              case let .deleteParent(kind, index) = operations.removeLast() else { return }
        changeSetsAllowed = 3
        let way = ModelRaceWay.name(batch.route, batch.way)
        // An optional plain edit on main first; then the saved parent the race is about: one
        // whose row the store holds (main may still hold a pending edit of a row another
        // coordinator deleted, which it has not been told of: no side could name that one).
        let probe = container.coordinator.newContext(name: "probe")
        let stored = Set(try probe.performAndWait { try ModelOperation.keys(kind.entity, in: probe) })
        let parentID: ObjectID? = try main.performAndWait {
            try apply(operations, in: main)
            for id in try ModelOperation.keys(kind.entity, in: main).rotated(by: index) where stored.contains(id) {
                let parent = try main.existingObject(with: id)
                if !parent.isInserted && !parent.isDeleted { return id }
            }
            return nil
        }
        guard let parentID else { return }
        /// The item, filled as `insertItem` fills it, its `kind` parent set to `parent`.
        func fill(_ item: ManagedObject, parent: ManagedObject, in context: ManagedObjectContext) throws {
            try item.setValue(ControllerModel.itemNames[name % ControllerModel.itemNames.count], forKey: "name")
            try item.setValue(ControllerModel.groups[group % ControllerModel.groups.count], forKey: "group")
            try item.setValue(Int64(score), forKey: "score")
            try item.setValue(flag, forKey: "flag")
            for (p, ref) in zip(ModelParent.allCases, parents) where p != kind {
                guard let ref else { continue }
                let keys = try ModelOperation.keys(p.entity, in: context)
                if !keys.isEmpty { try item.setValue(try context.existingObject(with: keys[ref % keys.count]), forKey: p.key) }
            }
            try item.setValue(parent, forKey: kind.key)
        }
        if batch.route == .racePendingToOne {
            try main.performAndWait {
                try fill(try main.insert("Item"), parent: try main.existingObject(with: parentID), in: main)
                main.processPendingChanges()
            }
            var deleted = false
            switch batch.way % 4 {
            case 0, 3:
                do {
                    try container.coordinator.execute(BatchDeleteRequest(entityName: kind.entity, objectIDs: [parentID]))
                    deleted = true
                } catch is BatchError {
                    tally.outcomes["race: the batch delete was refused", default: 0] += 1
                }
                container.waitForPendingMerges()
            case 1:
                let background = container.newBackgroundContext(name: "background")
                try background.performAndWait {
                    background.mergePolicy = policy
                    try background.delete(try background.existingObject(with: parentID))
                    deleted = try attempt { try background.save() }
                }
            default:
                let other = external.newContext(name: "elsewhere")
                try other.performAndWait {
                    other.mergePolicy = policy
                    try other.delete(try other.existingObject(with: parentID))
                    deleted = try attempt { try other.save() }
                }
                try container.coordinator.processExternalChanges()
            }
            drain()
            if deleted {
                tally.outcomes["race: new item on main names a \(kind.entity.lowercased()) deleted by \(way)", default: 0] += 1
            }
            return
        }
        // Main deletes the parent; the item naming it is saved elsewhere, before main hears of
        // it (in main's block: the commit must find it) or after.
        let told = batch.way % 4 >= 2
        func saveElsewhere() throws {
            if batch.way % 2 == 0 {
                let background = container.newBackgroundContext(name: "background")
                try background.performAndWait {
                    try fill(try background.insert("Item"), parent: try background.existingObject(with: parentID), in: background)
                    _ = try attempt { try background.save() }
                }
            } else {
                let reader = container.coordinator.newContext(name: "batch-reader")
                var row: [String: Any] = ["name": ControllerModel.itemNames[name % ControllerModel.itemNames.count],
                                          "score": Int64(score), "flag": flag, kind.key: parentID]
                if let value = ControllerModel.groups[group % ControllerModel.groups.count] { row["group"] = value }
                try reader.performAndWait {
                    for (p, ref) in zip(ModelParent.allCases, parents) where p != kind {
                        guard let ref else { continue }
                        let keys = try ModelOperation.keys(p.entity, in: reader)
                        if !keys.isEmpty { row[p.key] = keys[ref % keys.count] }
                    }
                }
                try container.coordinator.execute(BatchInsertRequest(entityName: "Item", objects: [row]))
            }
        }
        try main.performAndWait {
            try main.delete(try main.existingObject(with: parentID))
            if !told { try saveElsewhere() }
        }
        if told {
            try saveElsewhere()
            container.waitForPendingMerges()
            drain()
        }
        let went = try main.performAndWait {
            let old = main.mergePolicy
            main.mergePolicy = policy
            defer { main.mergePolicy = old }
            let went = try attempt { try main.saveToStore() }
            if !went { revertMain() }
            return went
        }
        tally.outcomes["race: main deleted a \(kind.entity.lowercased()), \(way): " + (went ? "saved" : "refused"), default: 0] += 1
    }

    /// After a refused save on main (on main's queue): its edits are rolled back.
    private func revertMain() {
        main.rollback()
        mainReverted = true
    }

    /// Rebuilds the cached controllers through their caches and checks the fetch.
    private func refetchCached() -> [String] {
        var problems: [String] = []
        for index in watched.indices where watched[index].spec.cacheName != nil {
            do {
                let replacement = try makeWatched(watched[index].spec)
                let context = context(replacement.spec.context)
                let status = context.performAndWait { ModelCacheStatus.describe(replacement.controller) }
                tally.outcomes["refetch through the cache: \(status)", default: 0] += 1
                let fresh = try freshLayout(replacement.spec, on: context)
                if replacement.layout != fresh {
                    problems.append("(a) \(replacement.spec.name) refetched through its cache (\(status)) differs from a fresh fetch:\n"
                                    + "    cached \(replacement.layout.render([:]))\n    fresh  \(fresh.render([:]))")
                }
                watched[index] = replacement
            } catch {
                problems.append("refetching \(watched[index].spec.name) threw \(error)")
            }
        }
        return problems
    }

    /// The request run by a new controller on a new child of `context` (it sees what `context` sees).
    func freshLayout(_ spec: ModelControllerSpec, on context: ManagedObjectContext) throws -> ControllerLayout {
        let child = context.performAndWait { context.newChildContext(name: "fresh") }
        return try child.performAndWait {
            let fresh = FetchedResultsController(fetchRequest: spec.request, managedObjectContext: child, sectionNameKeyPath: spec.sectionKeyPath)
            try fresh.performFetch()
            return ControllerLayout(fresh.snapshot)
        }
    }

    /// The request run by a new controller on a new root context: what the store holds.
    func storeLayout(_ spec: ModelControllerSpec) throws -> ControllerLayout {
        let root = container.coordinator.newContext(name: "store")
        return try root.performAndWait {
            let fresh = FetchedResultsController(fetchRequest: spec.request, managedObjectContext: root, sectionNameKeyPath: spec.sectionKeyPath)
            try fresh.performFetch()
            return ControllerLayout(fresh.snapshot)
        }
    }

    // MARK: Signatures

    /// Every item's and category's own values and the related values key paths read, as
    /// `context` sees them (read through a new child, with the public API).
    func readSignatures(_ kind: ModelContextKind) throws -> [String: [Int64: Signature]] {
        let context = context(kind)
        let child = context.performAndWait { context.newChildContext(name: "signatures") }
        return try child.performAndWait {
            func text(_ value: Any?) -> String { value.map { "\($0)" } ?? "nil" }
            var items: [Int64: Signature] = [:]
            var flagsByCategory: [Int64: [String]] = [:]
            for item in try child.fetch(FetchRequest(entityName: "Item")) {
                var own = try ["name", "group", "score", "flag", "note"].map { text(try item.value(forKey: $0)) }
                var related: [String] = []
                for p in ModelParent.allCases {
                    let parent = try item.value(forKey: p.key) as? ManagedObject
                    own.append(parent.map { "\($0.objectID.primaryKey)" } ?? "nil")
                    // A deleted destination (no action) reads as gone.
                    let name = parent.flatMap { try? $0.value(forKey: "name") }
                    related.append(text(name))
                    if p == .category { related.append(text(parent.flatMap { try? $0.value(forKey: "rank") })) }
                }
                if let category = try item.value(forKey: "category") as? ManagedObject {
                    flagsByCategory[category.objectID.primaryKey, default: []]
                        .append("\(item.objectID.primaryKey):\(text(try item.value(forKey: "flag")))")
                }
                items[item.objectID.primaryKey] = Signature(own: own.joined(separator: "|"), related: related.joined(separator: "|"))
            }
            var categories: [Int64: Signature] = [:]
            for category in try child.fetch(FetchRequest(entityName: "Category")) {
                let key = category.objectID.primaryKey
                categories[key] = Signature(own: "\(text(try category.value(forKey: "name")))|\(text(try category.value(forKey: "rank")))",
                                            related: (flagsByCategory[key] ?? []).sorted().joined(separator: ","))
            }
            return ["Item": items, "Category": categories]
        }
    }
}

/// The cache status of a controller's last fetch, as text for the tallies.
enum ModelCacheStatus {
    static func describe(_ controller: AnyFetchedResultsController) -> String {
        "\(controller.cacheStatus)"
    }
}

extension Array {
    /// The elements from `index` (modulo the count) on, then the ones before it.
    func rotated(by index: Int) -> [Element] {
        guard !isEmpty else { return [] }
        let start = index % count
        return Array(self[start...] + self[..<start])
    }
}

/// A batch the harness could not finish as the route requires (not a library error).
struct ModelFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
