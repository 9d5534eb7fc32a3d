import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Merge policies against real conflicts: between root contexts on one store (one coordinator, or
/// two coordinators on the same file), and between a child context and its parent. Every policy
/// is checked against the table in ``MergePolicy``'s documentation, with exact values for the row
/// in the store, the saving context's object, its `hasChanges` and the store generation.
///
/// The scenarios use `Employee` of ``TestModels/company(version:)``; X is seeded as
/// Ann, age 30, height 170 (the model's defaults for age and height).
@Suite struct MergePolicyTests {
    // MARK: Helpers

    /// The attributes of an employee the scenarios change.
    struct Person: Equatable, CustomStringConvertible {
        var name: String
        var age: Int16
        var height: Double

        static let ann = Person(name: "Ann", age: 30, height: 170)

        init(name: String, age: Int16, height: Double) {
            self.name = name
            self.age = age
            self.height = height
        }

        /// Reads the object's values (call on its context's queue).
        init(_ object: ManagedObject) throws {
            name = try object.value(forKey: "name") as? String ?? "<none>"
            age = try object.value(forKey: "age") as? Int16 ?? -1
            height = try object.value(forKey: "height") as? Double ?? -1
        }

        func with(name: String? = nil, age: Int16? = nil, height: Double? = nil) -> Person {
            Person(name: name ?? self.name, age: age ?? self.age, height: height ?? self.height)
        }

        var description: String { "\(name)/\(age)/\(height)" }
    }

    /// Where the two root contexts of a store-level scenario live.
    enum Layout: String, CaseIterable, Sendable {
        /// A and B from one coordinator (`coordinator.newContext()` twice).
        case oneCoordinator
        /// A and B from two coordinators opened on the same file.
        case twoCoordinators
    }

    /// Two root contexts, A and B, on one store file.
    final class StoreFixture {
        let directory = TemporaryDirectory("strata-merge-policy")
        let url: URL
        let first: StoreCoordinator
        let second: StoreCoordinator
        let a: ManagedObjectContext
        let b: ManagedObjectContext

        init(_ layout: Layout) throws {
            url = directory.file("store.sqlite")
            first = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            second = layout == .oneCoordinator ? first : try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            a = first.newContext(name: "A")
            b = second.newContext(name: "B")
        }

        func generation() throws -> Int64 { try first.metadata().generation }

        /// The employee `id` as the store file holds it now, read by a fresh coordinator; `nil`
        /// when the row is gone.
        func stored(_ id: ObjectID) throws -> Person? {
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            defer { coordinator.close() }
            return try MergePolicyTests.stored(id, in: coordinator)
        }

        /// Every property of `id` as the store file holds it now (see ``MergePolicyTests/snapshot(_:)``).
        func storedSnapshot(_ id: ObjectID) throws -> [String: String]? {
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
            defer { coordinator.close() }
            let context = coordinator.newContext(name: "reader")
            return try context.performAndWait {
                do { return try MergePolicyTests.snapshot(try context.existingObject(with: id)) } catch ObjectError.objectNotFound(_) { return nil }
            }
        }

        /// Inserts and saves Ann (30, 170) in A; the store is then at generation 1.
        func seedAnn() throws -> ObjectID {
            try a.performAndWait { try MergePolicyTests.insertEmployee(a, .ann).objectID }
        }
    }

    /// The employee `id` in a fresh root context on `coordinator`; `nil` when the row is gone.
    static func stored(_ id: ObjectID, in coordinator: StoreCoordinator) throws -> Person? {
        let context = coordinator.newContext(name: "reader")
        return try context.performAndWait {
            do { return try Person(try context.existingObject(with: id)) } catch ObjectError.objectNotFound(_) { return nil }
        }
    }

    /// Inserts an employee and saves the context (call on its queue).
    @discardableResult
    static func insertEmployee(_ context: ManagedObjectContext, _ person: Person, save: Bool = true) throws -> ManagedObject {
        let object = try context.insert("Employee")
        try object.setValue(person.name, forKey: "name")
        try object.setValue(person.age, forKey: "age")
        try object.setValue(person.height, forKey: "height")
        if save { try context.save() }
        return object
    }

    /// Every property of an object as text: attributes, to-one destinations and sorted to-many
    /// members, by key. Call on the object's context's queue.
    static func snapshot(_ object: ManagedObject) throws -> [String: String] {
        var values: [String: String] = [:]
        for attribute in object.entity.attributes {
            values[attribute.name] = try object.value(forKey: attribute.name).map { "\($0)" } ?? "nil"
        }
        for relationship in object.entity.relationships {
            let value = try object.value(forKey: relationship.name)
            if relationship.isToMany {
                values[relationship.name] = ((value as? Set<ManagedObject>) ?? []).map(\.objectID).sorted().description
            } else {
                values[relationship.name] = (value as? ManagedObject)?.objectID.description ?? "nil"
            }
        }
        return values
    }

    /// What a context holds: its pending sets and the values of every materialised object.
    struct ContextState: Equatable {
        var hasChanges: Bool
        var inserted: Set<ObjectID>
        var updated: Set<ObjectID>
        var deleted: Set<ObjectID>
        var registered: Set<ObjectID>
        var values: [ObjectID: [String: String]]
    }

    /// Call on the context's queue.
    static func state(of context: ManagedObjectContext) throws -> ContextState {
        var values: [ObjectID: [String: String]] = [:]
        for object in context.registeredObjects where !object.isFault { values[object.objectID] = try snapshot(object) }
        return ContextState(
            hasChanges: context.hasChanges,
            inserted: Set(context.insertedObjects.map(\.objectID)),
            updated: Set(context.updatedObjects.map(\.objectID)),
            deleted: Set(context.deletedObjects.map(\.objectID)),
            registered: Set(context.registeredObjects.map(\.objectID)),
            values: values)
    }

    /// Runs a save, keeping its result or error.
    static func attempt(_ save: () throws -> CommitResult?) -> Result<CommitResult?, any Error> {
        Result { try save() }
    }

    static func threw(_ result: Result<CommitResult?, any Error>) -> Bool {
        if case .failure = result { return true }
        return false
    }

    static func conflicts(_ result: Result<CommitResult?, any Error>) -> [MergeConflict]? {
        if case .failure(let error as MergeConflictError) = result { return error.conflicts }
        return nil
    }

    /// The conflicts of each object, in the order the error lists them (objects may come in any order).
    static func byObject(_ conflicts: [MergeConflict]) -> [ObjectID: [MergeConflict]] {
        Dictionary(grouping: conflicts, by: \.objectID)
    }

    /// Every key of an `Employee` when one side deleted it: `ours`, `original`, `theirs` and
    /// `stored` each either the person's values (no relationships) or `.deleted`.
    static func employeeConflicts(_ id: ObjectID, ours: Person?, original: Person, theirs: Person?, stored: Person?) -> [MergeConflict] {
        func value(_ person: Person?, _ key: String) -> MergeConflict.Value {
            guard let person else { return .deleted }
            switch key {
            case "name": return .attribute(.string(person.name))
            case "email": return .attribute(nil)
            case "age": return .attribute(.int16(person.age))
            case "height": return .attribute(.double(person.height))
            default: return .object(nil)
            }
        }
        return ["name", "email", "age", "height", "department", "badge", "desk"].map { key in
            MergeConflict(objectID: id, key: key, ours: value(ours, key), original: value(original, key),
                          theirs: value(theirs, key), stored: value(stored, key))
        }
    }

    /// What a store-level scenario ends with.
    struct StoreOutcome: Equatable, CustomStringConvertible {
        var threw: Bool
        /// The row in the store file (`nil`: gone).
        var stored: Person?
        /// B's object (`nil`: it left B).
        var ours: Person?
        var hasChanges: Bool
        var generation: Int64

        var description: String {
            "threw \(threw), stored \(stored.map(\.description) ?? "nil"), B \(ours.map(\.description) ?? "gone"), hasChanges \(hasChanges), generation \(generation)"
        }
    }

    /// B's object `x` after its save: its values, or `nil` when it left B (checked thoroughly).
    static func ours(_ x: ManagedObject, in b: ManagedObjectContext) throws -> Person? {
        guard x.managedObjectContext != nil else {
            #expect(!b.registeredObjects.contains(x))
            #expect(!b.updatedObjects.contains(x) && !b.deletedObjects.contains(x))
            return nil
        }
        #expect(b.registeredObjects.contains(x))
        return try Person(x)
    }

    // MARK: 1. Store level, update against update

    /// A changes age to 40 and saves; B, which read X before, changes height to 180 and saves.
    static func expectedOtherKey(_ policy: MergePolicy) -> StoreOutcome {
        let theirs = Person.ann.with(age: 40), ours = Person.ann.with(height: 180), merged = Person.ann.with(age: 40, height: 180)
        switch policy {
        case .error: return StoreOutcome(threw: true, stored: theirs, ours: ours, hasChanges: true, generation: 2)
        case .inMemoryWinsPerProperty, .storeWinsPerProperty:
            return StoreOutcome(threw: false, stored: merged, ours: merged, hasChanges: false, generation: 3)
        case .overwrite: return StoreOutcome(threw: false, stored: ours, ours: ours, hasChanges: false, generation: 3)
        // Nothing is written: the generation changes if and only if data changed.
        case .rollback: return StoreOutcome(threw: false, stored: theirs, ours: theirs, hasChanges: false, generation: 2)
        }
    }

    /// A changes age to 40 and saves; B, which read X before, changes age to 50 and saves.
    static func expectedSameKey(_ policy: MergePolicy) -> StoreOutcome {
        let theirs = Person.ann.with(age: 40), ours = Person.ann.with(age: 50)
        switch policy {
        case .error: return StoreOutcome(threw: true, stored: theirs, ours: ours, hasChanges: true, generation: 2)
        case .inMemoryWinsPerProperty, .overwrite:
            return StoreOutcome(threw: false, stored: ours, ours: ours, hasChanges: false, generation: 3)
        // Their value wins every key B changed: the row keeps its values, so no data changes.
        case .storeWinsPerProperty, .rollback:
            return StoreOutcome(threw: false, stored: theirs, ours: theirs, hasChanges: false, generation: 2)
        }
    }

    /// Runs the update-against-update scenario: A sets `age` 40 and saves, then B sets `key` to
    /// `value` and saves under `policy`.
    static func runUpdateAgainstUpdate(_ policy: MergePolicy, _ layout: Layout, key: String, value: Any) throws
        -> (StoreOutcome, Result<CommitResult?, any Error>, ObjectID) {
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.existingObject(with: id).setValue(Int16(40), forKey: "age")
            try f.a.save()
        }
        #expect(try f.generation() == 2)
        let (result, ours, hasChanges) = try f.b.performAndWait {
            try x.setValue(value, forKey: key)
            f.b.mergePolicy = policy
            let result = attempt { try f.b.save() }
            return (result, try MergePolicyTests.ours(x, in: f.b), f.b.hasChanges)
        }
        let outcome = StoreOutcome(threw: threw(result), stored: try f.stored(id), ours: ours,
                                   hasChanges: hasChanges, generation: try f.generation())
        if case .success(let commit) = result {
            // A save that wrote nothing (every change resolved to their values) returns nil.
            #expect(commit?.generation == (outcome.generation == 2 ? nil : outcome.generation))
        }
        return (outcome, result, id)
    }

    @Test(arguments: MergePolicy.allCases, Layout.allCases)
    func theirUpdateOfAnotherKey(policy: MergePolicy, layout: Layout) throws {
        let (outcome, result, id) = try Self.runUpdateAgainstUpdate(policy, layout, key: "height", value: 180.0)
        let expected = Self.expectedOtherKey(policy)
        #expect(outcome.threw == expected.threw)
        #expect(outcome.stored == expected.stored)
        #expect(outcome.ours == expected.ours)
        #expect(outcome.hasChanges == expected.hasChanges)
        #expect(outcome.generation == expected.generation)
        if policy == .error {
            #expect(Self.conflicts(result) == [
                MergeConflict(objectID: id, key: "age", ours: .attribute(.int16(30)), original: .attribute(.int16(30)),
                              theirs: .attribute(.int16(40)), stored: .attribute(.int16(40))),
                MergeConflict(objectID: id, key: "height", ours: .attribute(.double(180)), original: .attribute(.double(170)),
                              theirs: .attribute(.double(170)), stored: .attribute(.double(170))),
            ])
        }
    }

    @Test(arguments: MergePolicy.allCases, Layout.allCases)
    func theirUpdateOfTheSameKey(policy: MergePolicy, layout: Layout) throws {
        let (outcome, result, id) = try Self.runUpdateAgainstUpdate(policy, layout, key: "age", value: Int16(50))
        let expected = Self.expectedSameKey(policy)
        #expect(outcome.threw == expected.threw)
        #expect(outcome.stored == expected.stored)
        #expect(outcome.ours == expected.ours)
        #expect(outcome.hasChanges == expected.hasChanges)
        #expect(outcome.generation == expected.generation)
        if policy == .error {
            #expect(Self.conflicts(result) == [
                MergeConflict(objectID: id, key: "age", ours: .attribute(.int16(50)), original: .attribute(.int16(30)),
                              theirs: .attribute(.int16(40)), stored: .attribute(.int16(40))),
            ])
        }
    }

    // MARK: 2. .error reports every conflict and changes nothing

    @Test(arguments: Layout.allCases)
    func errorListsEveryConflictOfEveryObjectAndWritesNothing(layout: Layout) throws {
        let f = try StoreFixture(layout)
        // Seed: departments Sales (D1) and Tech (D2); X Ann, Y Bob, V Cid, Z Dee.
        let (d1, d2, x, y, v, z) = try f.a.performAndWait {
            let sales = try f.a.insert("Department")
            try sales.setValue("Sales", forKey: "name")
            let tech = try f.a.insert("Department")
            try tech.setValue("Tech", forKey: "name")
            let ids = try ["Ann", "Bob", "Cid", "Dee"].map {
                try Self.insertEmployee(f.a, Person.ann.with(name: $0), save: false).objectID
            }
            try f.a.save()
            return (sales.objectID, tech.objectID, ids[0], ids[1], ids[2], ids[3])
        }
        #expect(try f.generation() == 1)
        // B reads X, Y, V and Tech.
        try f.b.performAndWait {
            for id in [x, y, v, d2] { _ = try f.b.existingObject(with: id) }
        }
        // A: X age 40 and department Sales; deletes Y; Z height 190. Saves.
        try f.a.performAndWait {
            let ann = try f.a.existingObject(with: x)
            try ann.setValue(Int16(40), forKey: "age")
            try ann.setValue(try f.a.existingObject(with: d1), forKey: "department")
            try f.a.delete(try f.a.existingObject(with: y))
            try f.a.existingObject(with: z).setValue(190.0, forKey: "height")
            try f.a.save()
        }
        #expect(try f.generation() == 2)
        // B: X age 50, height 180, department Tech; Y renamed; V height 165 (no conflict); inserts W.
        let (result, before, after, w) = try f.b.performAndWait {
            let ann = try f.b.existingObject(with: x)
            try ann.setValue(Int16(50), forKey: "age")
            try ann.setValue(180.0, forKey: "height")
            try ann.setValue(try f.b.existingObject(with: d2), forKey: "department")
            try f.b.existingObject(with: y).setValue("Bobby", forKey: "name")
            try f.b.existingObject(with: v).setValue(165.0, forKey: "height")
            let eve = try Self.insertEmployee(f.b, Person(name: "Eve", age: 25, height: 160), save: false)
            f.b.mergePolicy = .error
            let before = try Self.state(of: f.b)
            let result = Self.attempt { try f.b.save() }
            return (result, before, try Self.state(of: f.b), eve.objectID)
        }
        let conflicts = try #require(Self.conflicts(result))
        #expect(conflicts.count == 3 + 7)
        let byObject = Self.byObject(conflicts)
        #expect(Set(byObject.keys) == [x, y])
        #expect(byObject[x] == [
            MergeConflict(objectID: x, key: "age", ours: .attribute(.int16(50)), original: .attribute(.int16(30)),
                          theirs: .attribute(.int16(40)), stored: .attribute(.int16(40))),
            MergeConflict(objectID: x, key: "height", ours: .attribute(.double(180)), original: .attribute(.double(170)),
                          theirs: .attribute(.double(170)), stored: .attribute(.double(170))),
            MergeConflict(objectID: x, key: "department", ours: .object(d2), original: .object(nil),
                          theirs: .object(d1), stored: .object(d1)),
        ])
        #expect(byObject[y] == Self.employeeConflicts(y, ours: Person.ann.with(name: "Bobby"), original: Person.ann.with(name: "Bob"),
                                                      theirs: nil, stored: nil))
        // Nothing written, B exactly as before.
        #expect(try f.generation() == 2)
        #expect(after == before)
        #expect(before.hasChanges)
        #expect(before.inserted == [w])
        #expect(before.updated == [x, y, v, d2])      // Tech gained Ann through the inverse
        #expect(before.deleted.isEmpty)
        #expect(before.values[x]?["age"] == "50" && before.values[x]?["department"] == d2.description)
        #expect(try f.stored(x) == Person.ann.with(age: 40))
        #expect(try f.storedSnapshot(x)?["department"] == d1.description)
        #expect(try f.stored(y) == nil)
        #expect(try f.stored(v) == Person.ann.with(name: "Cid"))
        #expect(try f.stored(w) == nil)
        #expect(try f.stored(z) == Person.ann.with(name: "Dee", height: 190))
        #expect(try f.storedSnapshot(d2)?["employees"] == "[]")
        // The same save under .storeWinsPerProperty goes through: Y's deletion and A's keys win.
        try f.b.performAndWait {
            f.b.mergePolicy = .storeWinsPerProperty
            try f.b.save()
            #expect(!f.b.hasChanges)
            #expect(f.b.registeredObjects.map(\.objectID).contains(y) == false)
            let ann = try f.b.existingObject(with: x)
            #expect(try Person(ann) == Person.ann.with(age: 40, height: 180))
            #expect(try Self.snapshot(ann)["department"] == d1.description)
            // Tech gained Ann in B through the inverse of B's department change, which lost.
            #expect(try Self.snapshot(try f.b.existingObject(with: d2))["employees"] == "[]")
            #expect(try Self.snapshot(try f.b.existingObject(with: d1))["employees"] == [x].description)
        }
        #expect(try f.generation() == 3)
        #expect(try f.stored(x) == Person.ann.with(age: 40, height: 180))
        #expect(try f.storedSnapshot(x)?["department"] == d1.description)
        #expect(try f.stored(y) == nil)
        #expect(try f.stored(w) == Person(name: "Eve", age: 25, height: 160))
        #expect(try f.stored(v) == Person.ann.with(name: "Cid", height: 165))
    }

    @Test(arguments: Layout.allCases)
    func errorLeavesAFailedSaveRepeatable(layout: Layout) throws {
        // Saving again under .error after a refused save is refused again, with the same conflicts.
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.existingObject(with: id).setValue(Int16(40), forKey: "age")
            try f.a.save()
        }
        try f.b.performAndWait {
            try x.setValue(Int16(50), forKey: "age")
            let first = Self.attempt { try f.b.save() }
            let second = Self.attempt { try f.b.save() }
            #expect(Self.conflicts(first) != nil)
            #expect(Self.conflicts(first) == Self.conflicts(second))
            #expect(try Person(x) == Person.ann.with(age: 50))
            #expect(f.b.updatedObjects == [x])
        }
        #expect(try f.generation() == 2)
    }

    // MARK: 3. Store level, update against delete

    /// A deletes X and saves; B, which read X before, changes its height and saves.
    @Test(arguments: MergePolicy.allCases, Layout.allCases)
    func ourUpdateAgainstTheirDelete(policy: MergePolicy, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.delete(try f.a.existingObject(with: id))
            try f.a.save()
        }
        #expect(try f.generation() == 2)
        let deletionWins = policy == .rollback || policy == .storeWinsPerProperty
        try f.b.performAndWait {
            try x.setValue(180.0, forKey: "height")
            f.b.mergePolicy = policy
            let result = Self.attempt { try f.b.save() }
            #expect(Self.threw(result) == !deletionWins)
            if deletionWins {
                // Nothing was written: the save returns no commit.
                #expect(try result.get() == nil)
                #expect(try Self.ours(x, in: f.b) == nil)
                #expect(!f.b.hasChanges)
                #expect(throws: ObjectError.objectNotFound(id)) { try f.b.existingObject(with: id) }
            } else {
                #expect(Self.conflicts(result) == Self.employeeConflicts(id, ours: Person.ann.with(height: 180), original: .ann,
                                                                        theirs: nil, stored: nil))
                #expect(try Self.ours(x, in: f.b) == Person.ann.with(height: 180))
                #expect(f.b.hasChanges)
                #expect(f.b.updatedObjects == [x])
            }
        }
        #expect(try f.stored(id) == nil)
        #expect(try f.generation() == 2)
    }

    /// A changes X's age to 40 and saves; B, which read X before, deletes it and saves. Our delete
    /// cannot be taken back (its delete rules already ran), so every policy that would keep their
    /// row throws like `.error`: nothing written, B exactly as before.
    @Test(arguments: MergePolicy.allCases, Layout.allCases)
    func ourDeleteAgainstTheirUpdate(policy: MergePolicy, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.existingObject(with: id).setValue(Int16(40), forKey: "age")
            try f.a.save()
        }
        let theirs = Person.ann.with(age: 40)
        let deleteWins = policy == .overwrite || policy == .inMemoryWinsPerProperty
        try f.b.performAndWait {
            try f.b.delete(x)
            f.b.mergePolicy = policy
            let before = try Self.state(of: f.b)
            let result = Self.attempt { try f.b.save() }
            if deleteWins {
                #expect(!Self.threw(result))
                #expect(try result.get()?.generation == 3)
                #expect(try Self.ours(x, in: f.b) == nil)
                #expect(!f.b.hasChanges)
            } else {
                #expect(Self.conflicts(result) == Self.employeeConflicts(id, ours: nil, original: .ann, theirs: theirs, stored: theirs))
                #expect(try Self.state(of: f.b) == before)
                #expect(x.isDeleted)
                #expect(x.managedObjectContext === f.b)
                #expect(f.b.deletedObjects == [x])
                #expect(f.b.hasChanges)
            }
        }
        #expect(try f.stored(id) == (deleteWins ? nil : theirs))
        #expect(try f.generation() == (deleteWins ? 3 : 2))
    }
}
