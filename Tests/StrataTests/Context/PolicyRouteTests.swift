import Foundation
import Testing
import StrataTestSupport
import Strata

/// Issue 46, point 5, second half: a merge policy decides a conflict the same way whether the
/// other side's commit reached the saving context first (a merge: a sibling's save, another
/// process's commit brought by the follower, the same commit through a container's writer) or
/// the save met it in the store first. Every policy × conflict × route; the save-first route's
/// outcome is also spelled out, as the table in "History and other processes" gives it.
@Suite struct PolicyRouteTests {
    /// What the other side does to number 2 (value 2, no label) while the saving side has a
    /// pending change to it.
    enum Conflict: String, CaseIterable, CustomTestStringConvertible {
        /// Ours: label "mine". Theirs: label "theirs" and value 20.
        case updateVersusUpdate
        /// Ours: label "mine". Theirs: a delete.
        case updateVersusDelete
        /// Ours: a delete. Theirs: value 20.
        case deleteVersusUpdate
        var testDescription: String { rawValue }
    }

    /// How the other side's commit reaches the saving context.
    enum Route: String, CaseIterable, CustomTestStringConvertible {
        /// A root context that does not merge: its save meets the commit in the store.
        case saveMeetsTheStore
        /// A merging root context hears a sibling context's save before it saves.
        case siblingSaveMergedFirst
        /// A merging root context hears another coordinator's commit through the follower first.
        case otherProcessFollowedFirst
        /// A container's main context hears another coordinator's commit through its writer first,
        /// then saves to the store through the writer.
        case containerMainFollowedFirst
        var testDescription: String { rawValue }
    }

    /// What came of the save: whether it threw, number 2 in the store afterwards, and what the
    /// saving context shows for it.
    struct Outcome: Equatable, CustomStringConvertible {
        var threw: Bool
        var stored: Values?
        var shown: Values?
        var description: String { "threw=\(threw) stored=\(stored.map(\.description) ?? "gone") shown=\(shown.map(\.description) ?? "gone")" }
    }

    struct Values: Equatable, CustomStringConvertible {
        var value: Int64
        var label: String?
        var description: String { "(\(value), \(label ?? "nil"))" }
    }

    func run(_ conflict: Conflict, _ policy: MergePolicy, _ route: Route) throws -> Outcome {
        let directory = TemporaryDirectory("strata-policy-route")
        let url = directory.file("numbers.sqlite")
        let options: StoreOptions = route == .otherProcessFollowedFirst || route == .containerMainFollowedFirst ? StoreOptions() : .notFollowing
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url, options: options)
        defer { coordinator.close() }
        let ids = try TestModels.saveNumbers([1, 2, 3], in: coordinator)
        let id = ids[1]

        // The saving side: a root context, or a container's main (with its writer on the same policy).
        let container = route == .containerMainFollowedFirst ? PersistentContainer(coordinator: coordinator) : nil
        let target: ManagedObjectContext
        if let container {
            target = container.mainContext
            container.writerContext.performAndWait { container.writerContext.mergePolicy = policy }
        } else {
            target = coordinator.newContext(name: "target")
            target.automaticallyMergesChangesFromParent = route != .saveMeetsTheStore
        }
        let held = try target.performAndWait {
            target.mergePolicy = policy
            let held = try target.existingObject(with: id)
            switch conflict {
            case .updateVersusUpdate, .updateVersusDelete: try held.setValue("mine", forKey: "label")
            case .deleteVersusUpdate: try target.delete(held)
            }
            return held
        }

        // Theirs.
        func change(_ context: ManagedObjectContext) throws {
            try context.performAndWait {
                let number = try context.existingObject(with: id)
                switch conflict {
                case .updateVersusUpdate:
                    try number.setValue("theirs", forKey: "label")
                    try number.setValue(Int64(20), forKey: "value")
                case .updateVersusDelete: try context.delete(number)
                case .deleteVersusUpdate: try number.setValue(Int64(20), forKey: "value")
                }
                try context.save()
            }
        }
        switch route {
        case .saveMeetsTheStore, .siblingSaveMergedFirst:
            try change(coordinator.newContext(name: "sibling"))
        case .otherProcessFollowedFirst, .containerMainFollowedFirst:
            let another = try StoreCoordinator(model: TestModels.numbers(), url: url, options: .notFollowing)
            defer { another.close() }
            try change(another.newContext(name: "elsewhere"))
            coordinator.waitUntilFollowed(try another.currentHistoryToken().generation)
        }
        container?.waitForPendingMerges()
        target.performAndWait {}

        // The save.
        let threw = target.performAndWait {
            do {
                if container != nil { try target.saveToStore() } else { try target.save() }
                return false
            } catch is MergeConflictError {
                return true
            } catch {
                Issue.record("unexpected \(error)")
                return true
            }
        }
        // What the context shows after a save that went through (a refused one leaves the
        // context as it was, which differs by route: a merge brought their values, or not).
        let shown: Values? = threw ? nil : target.performAndWait {
            guard target.registeredObjects.contains(held), !held.isDeleted else { return nil }
            return Values(value: (try? held.value(forKey: "value")) as? Int64 ?? -1, label: (try? held.value(forKey: "label")) as? String)
        }
        let reader = coordinator.newContext()
        let stored: Values? = try reader.performAndWait {
            var request = FetchRequest(entityName: "Number")
            request.predicate = try Condition("value == 2 OR value == 20")
            guard let number = try reader.fetch(request).first else { return nil }
            return Values(value: try number.value(forKey: "value") as? Int64 ?? -1, label: try number.value(forKey: "label") as? String)
        }
        return Outcome(threw: threw, stored: stored, shown: shown)
    }

    /// The save-first outcomes, as the documented table says.
    func expected(_ conflict: Conflict, _ policy: MergePolicy) -> (threw: Bool, stored: Values?) {
        let original = Values(value: 2, label: nil)
        switch (conflict, policy) {
        case (.updateVersusUpdate, .error): return (true, Values(value: 20, label: "theirs"))
        case (.updateVersusUpdate, .inMemoryWinsPerProperty): return (false, Values(value: 20, label: "mine"))
        case (.updateVersusUpdate, .storeWinsPerProperty): return (false, Values(value: 20, label: "theirs"))
        case (.updateVersusUpdate, .overwrite): return (false, Values(value: 2, label: "mine"))
        case (.updateVersusUpdate, .rollback): return (false, Values(value: 20, label: "theirs"))
        case (.updateVersusDelete, .error), (.updateVersusDelete, .overwrite), (.updateVersusDelete, .inMemoryWinsPerProperty):
            return (true, nil)
        case (.updateVersusDelete, .storeWinsPerProperty), (.updateVersusDelete, .rollback): return (false, nil)
        case (.deleteVersusUpdate, .error), (.deleteVersusUpdate, .storeWinsPerProperty), (.deleteVersusUpdate, .rollback):
            return (true, Values(value: 20, label: original.label))
        case (.deleteVersusUpdate, .overwrite), (.deleteVersusUpdate, .inMemoryWinsPerProperty): return (false, nil)
        }
    }

    @Test(arguments: Conflict.allCases, MergePolicy.allCases)
    func everyRouteDecidesAsTheStoreFirstRoute(conflict: Conflict, policy: MergePolicy) throws {
        let first = try run(conflict, policy, .saveMeetsTheStore)
        let table = expected(conflict, policy)
        #expect(first.threw == table.threw, "\(conflict) under \(policy), save first: \(first)")
        #expect(first.stored == table.stored, "\(conflict) under \(policy), save first: \(first)")
        for route in Route.allCases where route != .saveMeetsTheStore {
            let outcome = try run(conflict, policy, route)
            #expect(outcome == first, "\(conflict) under \(policy): \(route) gave \(outcome), the store-first route \(first)")
        }
    }
}
