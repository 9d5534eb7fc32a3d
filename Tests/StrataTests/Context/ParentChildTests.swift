import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The parent/child chain of a ``PersistentContainer`` (update → main → writer → SQLite) on a real
/// store file: reading through pending changes, saving level by level, deletes with their rules,
/// and all-or-nothing failures.
@Suite struct ParentChildTests {
    // MARK: Fixture

    /// The company every test starts from, saved to the store file (generation 1) by a coordinator
    /// that is closed again before the container opens the file:
    /// - Acme: Sales (Ann 41, Bob 35), Tech (Cy 28)
    /// - Ann wears badge A-1; Apollo's members are Ann and Cy, Gemini's is Bob.
    struct Seed: Sendable {
        let acme, sales, tech, ann, bob, cy, badge, apollo, gemini: ObjectID
    }

    static func make(_ context: ManagedObjectContext, _ entity: String, _ values: KeyValuePairs<String, Any>) throws -> ManagedObject {
        let object = try context.insert(entity)
        for (key, value) in values { try object.setValue(value, forKey: key) }
        return object
    }

    static func seed(_ url: URL) throws -> Seed {
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "seed")
        return try context.performAndWait {
            let acme = try make(context, "Company", ["name": "Acme"])
            let sales = try make(context, "Department", ["name": "Sales", "company": acme])
            let tech = try make(context, "Department", ["name": "Tech", "company": acme])
            let ann = try make(context, "Employee", ["name": "Ann", "age": 41, "department": sales])
            let bob = try make(context, "Employee", ["name": "Bob", "age": 35, "department": sales])
            let cy = try make(context, "Employee", ["name": "Cy", "age": 28, "department": tech])
            let badge = try make(context, "Badge", ["code": "A-1", "owner": ann])
            let apollo = try make(context, "Project", ["title": "Apollo", "members": [ann, cy]])
            let gemini = try make(context, "Project", ["title": "Gemini", "members": [bob]])
            #expect(try context.save()?.generation == 1)
            return Seed(acme: acme.objectID, sales: sales.objectID, tech: tech.objectID, ann: ann.objectID, bob: bob.objectID,
                        cy: cy.objectID, badge: badge.objectID, apollo: apollo.objectID, gemini: gemini.objectID)
        }
    }

    /// A seeded store file and a container on it.
    static func container(in directory: TemporaryDirectory = TemporaryDirectory()) throws -> (TemporaryDirectory, URL, Seed, PersistentContainer) {
        let url = directory.file("company.sqlite")
        let seed = try seed(url)
        return (directory, url, seed, try PersistentContainer(model: TestModels.company(), url: url, options: .notFollowing))
    }

    /// The sorted names (or titles) of a relationship's or fetch's objects.
    static func names(_ objects: Any?) throws -> [String] {
        let set: [ManagedObject] = (objects as? Set<ManagedObject>).map(Array.init) ?? (objects as? [ManagedObject]) ?? []
        return try set.map { object in
            let key = object.entityName == "Project" ? "title" : (object.entityName == "Badge" ? "code" : "name")
            return try object.value(forKey: key) as? String ?? "?"
        }.sorted()
    }

    /// What a fresh coordinator on the file reads: every object of `entity` by name, with `detail`.
    static func stored(_ url: URL, _ entity: String, sortKey: String = "name",
                       _ detail: (ManagedObject) throws -> String = { _ in "" }) throws -> [String] {
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url, options: .notFollowing)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "reader")
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: entity, sortKeys: [.ascending(sortKey)])).map { object in
                let name = try object.value(forKey: sortKey).map { "\($0)" } ?? "nil"
                let more = try detail(object)
                return more.isEmpty ? name : "\(name) \(more)"
            }
        }
    }

    static func fileBytes(_ url: URL) -> [Data?] {
        [url.path, url.path + "-wal"].map { FileManager.default.contents(atPath: $0) }
    }

    /// Everything a context holds, compared exactly: registry membership, each object's identity,
    /// lifecycle, fault state, current and saved values (versions included) and to-many state.
    struct LevelState: Equatable, CustomStringConvertible {
        struct Object: Equatable {
            var identity: ObjectIdentifier
            var state: String
            var isFault: Bool
            var current: RowSnapshot
            var currentVersion: Int64
            var committed: RowSnapshot?
            var committedVersion: Int64?
            var toMany: [[[Int64]?]]
        }
        var hasChanges: Bool
        var insertedObjects: Set<ObjectID>
        var updatedObjects: Set<ObjectID>
        var deletedObjects: Set<ObjectID>
        var registered: [ObjectID: Object]
        var pending: [String: Set<ObjectID>]

        init(_ context: ManagedObjectContext) {
            hasChanges = context.hasChanges
            insertedObjects = Set(context.insertedObjects.map(\.objectID))
            updatedObjects = Set(context.updatedObjects.map(\.objectID))
            deletedObjects = Set(context.deletedObjects.map(\.objectID))
            pending = ["inserted": Set(context.inserted.keys), "updated": Set(context.updated.keys), "deleted": Set(context.deleted.keys)]
            registered = context.registered.mapValues { object in
                Object(identity: ObjectIdentifier(object), state: "\(object.state)", isFault: object.isFault,
                       current: object.current, currentVersion: object.current.version,
                       committed: object.committed, committedVersion: object.committed?.version,
                       toMany: object.toMany.map { [$0.committed.map { $0.sorted() }, $0.added.sorted(), $0.removed.sorted()] })
            }
        }

        var description: String {
            "hasChanges \(hasChanges), inserted \(insertedObjects.sorted()), updated \(updatedObjects.sorted()), "
                + "deleted \(deletedObjects.sorted()), registered \(registered.keys.sorted())"
        }
    }

    /// Every level of the chain at once, plus the store's generation.
    struct ChainState: Equatable {
        var levels: [LevelState]
        var generation: Int64
    }

    static func state(_ contexts: [ManagedObjectContext], _ coordinator: StoreCoordinator) throws -> ChainState {
        ChainState(levels: contexts.map { context in context.performAndWait { LevelState(context) } },
                   generation: try coordinator.metadata().generation)
    }

    // MARK: 1. Reading through the parent

    @Test func childFetchSeesTheParentsPendingInsertsUpdatesAndDeletes() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        // Pending in the writer (main saved into it): Dee joins Tech.
        let dee = try main.performAndWait {
            let dee = try Self.make(main, "Employee", ["name": "Dee", "age": 33, "department": try main.existingObject(with: seed.tech)])
            try main.save()
            return dee.objectID
        }
        // Pending in main: Bob is 50 now, Ann is deleted, Eve (19) joins Sales.
        let eve = try main.performAndWait {
            try main.existingObject(with: seed.bob).setValue(50, forKey: "age")
            try main.delete(try main.existingObject(with: seed.ann))
            return try Self.make(main, "Employee", ["name": "Eve", "age": 19, "department": try main.existingObject(with: seed.sales)]).objectID
        }
        #expect(try container.coordinator.metadata().generation == 1)
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            let all = FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])
            #expect(try update.fetch(all).map(\.objectID) == [seed.bob, seed.cy, dee, eve])
            #expect(try update.fetchObjectIDs(all) == [seed.bob, seed.cy, dee, eve])
            #expect(try update.count(for: all) == 4)

            let older = FetchRequest(entityName: "Employee", predicate: try Condition("age >= 30"), sortKeys: [.descending("age")])
            let olderObjects = try update.fetch(older)
            #expect(olderObjects.map(\.objectID) == [seed.bob, dee])
            #expect(try olderObjects.map { try $0.value(forKey: "age") as? Int16 } == [50, 33])
            #expect(try update.fetchObjectIDs(older) == [seed.bob, dee])
            #expect(try update.count(for: older) == 2)

            // A predicate and a sort key through a relationship; limit and offset after sorting.
            let tech = FetchRequest(entityName: "Employee", predicate: try Condition("department.name == 'Tech'"),
                                    sortKeys: [.descending("age")])
            #expect(try update.fetchObjectIDs(tech) == [dee, seed.cy])
            let byDepartment = FetchRequest(entityName: "Employee", sortKeys: [.ascending("department.name"), .descending("age")],
                                            fetchLimit: 2, fetchOffset: 1)
            #expect(try update.fetchObjectIDs(byDepartment) == [eve, dee])
            #expect(try update.count(for: byDepartment) == 2)

            // The object main deleted is not there, even by ID.
            #expect(throws: ObjectError.objectNotFound(seed.ann)) { try update.existingObject(with: seed.ann) }
            // Without pending changes the fetch reads the store alone.
            var storeOnly = all
            storeOnly.includesPendingChanges = false
            #expect(try update.fetchObjectIDs(storeOnly) == [seed.ann, seed.bob, seed.cy])
        }
        // The update context's own pending changes stack on top of its ancestors'.
        try update.performAndWait { () throws -> Void in
            try update.delete(try update.existingObject(with: seed.cy))
            try update.existingObject(with: dee).setValue("Deborah", forKey: "name")
            let all = FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])
            #expect(try update.fetchObjectIDs(all) == [seed.bob, dee, eve])
            #expect(try update.count(for: FetchRequest(entityName: "Employee", predicate: try Condition("name BEGINSWITH 'D'"))) == 1)
        }
        // Nothing leaked upwards.
        try main.performAndWait { () throws -> Void in
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])) == [seed.bob, seed.cy, dee, eve])
        }
    }

    @Test func childFaultsReadTheParentsPendingValues() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        let writer = container.writerContext
        // Pending in the writer: Cy is 29. Pending in main: Bob is Robert, 52; Dee is new.
        try writer.performAndWait { try writer.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        let dee = try main.performAndWait {
            let bob = try main.existingObject(with: seed.bob)
            try bob.setValue("Robert", forKey: "name")
            try bob.setValue(52, forKey: "age")
            return try Self.make(main, "Employee", ["name": "Dee", "email": "dee@acme.com"]).objectID
        }
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            let bob = try update.object(with: seed.bob)
            let cy = try update.object(with: seed.cy)
            let newcomer = try update.object(with: dee)
            #expect(bob.isFault && cy.isFault && newcomer.isFault)
            // Main holds Bob and Dee: reading them runs no SQL at all.
            container.coordinator.resetStatistics()
            #expect(try bob.value(forKey: "name") as? String == "Robert")
            #expect(try bob.value(forKey: "age") as? Int16 == 52)
            #expect(try newcomer.value(forKey: "email") as? String == "dee@acme.com")
            #expect(try newcomer.value(forKey: "age") as? Int16 == 30)
            #expect(container.coordinator.statistics.totalExecuted == 0)
            // Cy is pending two levels up.
            #expect(try cy.value(forKey: "age") as? Int16 == 29)
            #expect(try cy.value(forKey: "name") as? String == "Cy")
            // What the child read is its saved snapshot: nothing pending here.
            #expect(!bob.isFault && !bob.hasChanges && !newcomer.isInserted)
            #expect(!update.hasChanges)
            // A to-one of a fault resolves through the parent too.
            let department = try #require(try update.existingObject(with: seed.ann).value(forKey: "department") as? ManagedObject)
            #expect(department.objectID == seed.sales)
            #expect(try department.value(forKey: "name") as? String == "Sales")
        }
        #expect(try container.coordinator.metadata().generation == 1)
    }

    @Test func childToManyRelationshipsSeeTheParentsPendingMembership() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let main = container.mainContext
        let dee = try main.performAndWait {
            let bob = try main.existingObject(with: seed.bob)
            let sales = try main.existingObject(with: seed.sales)
            let tech = try main.existingObject(with: seed.tech)
            try bob.setValue(tech, forKey: "department")                                   // Bob moves to Tech
            let dee = try Self.make(main, "Employee", ["name": "Dee"])
            try sales.setValue(Set([try main.existingObject(with: seed.ann), dee]), forKey: "employees")   // Dee joins Sales
            let ann = try main.existingObject(with: seed.ann)
            try ann.setValue(Set([try main.existingObject(with: seed.apollo), try main.existingObject(with: seed.gemini)]), forKey: "projects")
            try main.existingObject(with: seed.apollo).setValue(Set([ann]), forKey: "members")    // Cy leaves Apollo
            return dee.objectID
        }
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            #expect(try Self.names(update.existingObject(with: seed.sales).value(forKey: "employees")) == ["Ann", "Dee"])
            #expect(try Self.names(update.existingObject(with: seed.tech).value(forKey: "employees")) == ["Bob", "Cy"])
            #expect((try update.existingObject(with: seed.bob).value(forKey: "department") as? ManagedObject)?.objectID == seed.tech)
            #expect((try update.existingObject(with: dee).value(forKey: "department") as? ManagedObject)?.objectID == seed.sales)
            #expect(try Self.names(update.existingObject(with: seed.ann).value(forKey: "projects")) == ["Apollo", "Gemini"])
            #expect(try Self.names(update.existingObject(with: seed.cy).value(forKey: "projects")) == [])
            #expect(try Self.names(update.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann"])
            #expect(try Self.names(update.existingObject(with: seed.gemini).value(forKey: "members")) == ["Ann", "Bob"])
            #expect(!update.hasChanges)
            // A predicate over the to-many counts the pending members too.
            let crowded = FetchRequest(entityName: "Project", predicate: try Condition("members.@count == 2"))
            #expect(try update.fetchObjectIDs(crowded) == [seed.gemini])

            // The child changes membership on top, and saves the whole chain.
            let cy = try update.existingObject(with: seed.cy)
            try cy.setValue(try update.existingObject(with: seed.sales), forKey: "department")
            try cy.setValue(Set([try update.existingObject(with: seed.gemini)]), forKey: "projects")
            #expect(try update.saveToStore()?.generation == 2)
        }
        #expect(try Self.stored(url, "Employee") { try ($0.value(forKey: "department") as? ManagedObject)?.value(forKey: "name") as? String ?? "-" }
                == ["Ann Sales", "Bob Tech", "Cy Sales", "Dee Sales"])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Ann", "Gemini Ann,Bob,Cy"])
    }
}
