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
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url)
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
    static func container() throws -> (TemporaryDirectory, URL, Seed, PersistentContainer) {
        let directory = TemporaryDirectory()
        let url = directory.file("company.sqlite")
        let seed = try seed(url)
        return (directory, url, seed, try PersistentContainer(model: TestModels.company(), url: url))
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
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url)
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

    // MARK: 2. Saving level by level

    @Test func updateSaveReachesMainOnlyThenWriterThenTheStore() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "age": 22, "department": try update.existingObject(with: seed.tech)])
            try update.existingObject(with: seed.bob).setValue(36, forKey: "age")
            return eve.objectID
        }
        let bytesBefore = Self.fileBytes(url)
        #expect(bytesBefore[0] != nil)

        // update → main: no statement, store untouched.
        coordinator.resetStatistics()
        try update.performAndWait { () throws -> Void in #expect(try update.save() == nil) }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(Self.fileBytes(url) == bytesBefore)
        #expect(try coordinator.metadata().generation == 1)
        try update.performAndWait { () throws -> Void in
            #expect(!update.hasChanges)
            #expect(try update.existingObject(with: eve).isInserted == false)
        }
        try main.performAndWait { () throws -> Void in
            #expect(main.hasChanges)
            #expect(Set(main.insertedObjects.map(\.objectID)) == [eve])
            #expect(Set(main.updatedObjects.map(\.objectID)) == [seed.bob, seed.tech])
            let object = try main.existingObject(with: eve)
            #expect(object.isInserted)
            #expect(try object.value(forKey: "name") as? String == "Eve")
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 36)
            #expect(try Self.names(main.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy", "Eve"])
        }
        writer.performAndWait { #expect(!writer.hasChanges) }

        // main → writer: no statement, store untouched.
        coordinator.resetStatistics()
        try main.performAndWait { () throws -> Void in #expect(try main.save() == nil) }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(Self.fileBytes(url) == bytesBefore)
        #expect(try coordinator.metadata().generation == 1)
        main.performAndWait { #expect(!main.hasChanges) }
        try writer.performAndWait { () throws -> Void in
            #expect(writer.hasChanges)
            #expect(Set(writer.insertedObjects.map(\.objectID)) == [eve])
            #expect(Set(writer.updatedObjects.map(\.objectID)) == [seed.bob, seed.tech])
            #expect(try writer.existingObject(with: eve).value(forKey: "age") as? Int16 == 22)
            #expect(try writer.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 36)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 35", "Cy 28"])

        // writer → SQLite: one commit, generation + 1.
        let result = try writer.performAndWait { try writer.save() }
        #expect(result?.generation == 2)
        #expect(try coordinator.metadata().generation == 2)
        writer.performAndWait { #expect(!writer.hasChanges) }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 36", "Cy 28", "Eve 22"])
        // The store row has the ID the object had since its insert in the update context.
        #expect(try Self.stored(url, "Employee") { "\($0.objectID)" } == ["Ann \(seed.ann)", "Bob \(seed.bob)", "Cy \(seed.cy)", "Eve \(eve)"])
        #expect(try Self.stored(url, "Department") { try Self.names($0.value(forKey: "employees")).joined(separator: ",") }
                == ["Sales Ann,Bob", "Tech Cy,Eve"])

        // The same ID at every level: nothing was remapped.
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(context.registered[eve]?.objectID == eve)
                #expect(try context.existingObject(with: eve).value(forKey: "name") as? String == "Eve")
            }
        }
    }

    @Test func saveToStoreSavesEveryLevelInOneCommit() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // Main and the writer have changes of their own; saveToStore takes them along.
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        let update = container.newUpdateContext()
        let (eve, result) = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.sales)])
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            coordinator.resetStatistics()
            let result = try update.saveToStore()
            #expect(coordinator.statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
            #expect(coordinator.statistics.executions(startingWith: "UPDATE strata_meta SET generation") == 1)
            #expect(coordinator.statistics.executions(startingWith: "COMMIT") == 1)
            return (eve.objectID, result)
        }
        #expect(result?.generation == 2)
        #expect(result?.touchedEntities == ["Employee", "Department", "Project"])
        #expect(try coordinator.metadata().generation == 2)
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(!context.hasChanges)
                #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty && context.deletedObjects.isEmpty)
                let object = try context.existingObject(with: eve)
                #expect(object.objectID == eve)
                #expect(!object.hasChanges)
                #expect(try object.value(forKey: "name") as? String == "Eve")
            }
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Annie 41", "Bob 35", "Cy 29", "Eve 30"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
        // Nothing left to save anywhere: no statement, no new generation.
        coordinator.resetStatistics()
        #expect(try update.performAndWait { try update.saveToStore() } == nil)
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(try coordinator.metadata().generation == 2)
    }

    @Test func saveToStoreThroughCleanAncestorsCommitsOnceAndBringsEveryLevelUpToDate() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // Main and the writer hold clean objects the update changes; neither has changes of its own.
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
            #expect(try Self.names(main.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy"])
        }
        try writer.performAndWait { () throws -> Void in
            #expect(try writer.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
        }
        let update = container.newUpdateContext()
        let (eve, result) = try update.performAndWait {
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)])
            try update.existingObject(with: seed.bob).setValue(36, forKey: "age")
            coordinator.resetStatistics()
            let result = try update.saveToStore()
            #expect(coordinator.statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
            #expect(coordinator.statistics.executions(startingWith: "UPDATE strata_meta SET generation") == 1)
            return (eve.objectID, result)
        }
        #expect(result?.generation == 2)
        #expect(try coordinator.metadata().generation == 2)
        for context in [update, main, writer] {
            try context.performAndWait { () throws -> Void in
                #expect(!context.hasChanges)
                #expect(context.insertedObjects.isEmpty && context.updatedObjects.isEmpty && context.deletedObjects.isEmpty)
                let bob = try context.existingObject(with: seed.bob)
                #expect(!bob.hasChanges)
                #expect(try bob.value(forKey: "age") as? Int16 == 36)
                let object = try context.existingObject(with: eve)
                #expect(object.objectID == eve && !object.isInserted)
                #expect(try object.value(forKey: "name") as? String == "Eve")
                #expect(try Self.names(context.existingObject(with: seed.tech).value(forKey: "employees")) == ["Cy", "Eve"])
            }
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 36", "Cy 28", "Eve 30"])
        // A later change of main's Bob saves without a conflict: main's snapshot is the saved row.
        try main.performAndWait { () throws -> Void in
            try main.existingObject(with: seed.bob).setValue(37, forKey: "age")
            #expect(try main.saveToStore()?.generation == 3)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 37", "Cy 28", "Eve 30"])
    }

    // MARK: 3. Deletes through the chain

    @Test func cascadeDeletePushedThroughTheChainArrivesInTheStore() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            try update.delete(try update.existingObject(with: seed.sales))        // cascade: Ann (and her badge), Bob
            #expect(Set(update.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
            #expect(Set(update.updatedObjects.map(\.objectID)) == [seed.acme, seed.apollo, seed.gemini])
            try update.save()
        }
        try main.performAndWait { () throws -> Void in
            #expect(Set(main.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
            #expect(Set(main.updatedObjects.map(\.objectID)) == [seed.acme, seed.apollo, seed.gemini])
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Employee")) == [seed.cy])
            #expect(try main.fetchObjectIDs(FetchRequest(entityName: "Badge")) == [])
            #expect(try Self.names(main.existingObject(with: seed.acme).value(forKey: "departments")) == ["Tech"])
            #expect(try Self.names(main.existingObject(with: seed.apollo).value(forKey: "members")) == ["Cy"])
            #expect(throws: ObjectError.objectNotFound(seed.ann)) { try main.existingObject(with: seed.ann) }
        }
        #expect(try coordinator.metadata().generation == 1)
        // Update has nothing left; saveToStore carries main's and then the writer's changes.
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        writer.performAndWait { #expect(!writer.hasChanges && writer.registered[seed.ann] == nil) }
        #expect(try Self.stored(url, "Employee") == ["Cy"])
        #expect(try Self.stored(url, "Department") == ["Tech"])
        #expect(try Self.stored(url, "Badge", sortKey: "code") == [])
        #expect(try Self.stored(url, "Company") { try Self.names($0.value(forKey: "departments")).joined(separator: ",") } == ["Acme Tech"])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Cy", "Gemini"])
    }

    /// Deleting an object applies its delete rules to destinations the context has not read yet
    /// (faults made from the relationship's keys); that must work at every level. Run in child
    /// processes: this used to stop the process (index out of range on the fault's empty row).
    @Test func deletingAnObjectWhoseRelatedObjectsAreFaultsDoesNotCrash() async {
        // A root context: deleting Sales (cascade to its employees, whose inverse is to-one).
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            let seed = try ParentChildTests.seed(directory.file("c.sqlite"))
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: directory.file("c.sqlite"))
            let context = coordinator.newContext()
            try context.performAndWait {
                try context.delete(try context.object(with: seed.sales))
                precondition(Set(context.deletedObjects.map(\.objectID)) == [seed.sales, seed.ann, seed.bob, seed.badge])
                try context.save()
            }
        }
        // A root context: deleting Cy, whose department and projects (to-many inverses) are faults
        // that the nullify rule marks changed.
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            let seed = try ParentChildTests.seed(directory.file("c.sqlite"))
            let coordinator = try StoreCoordinator(model: TestModels.company(), url: directory.file("c.sqlite"))
            let context = coordinator.newContext()
            try context.performAndWait {
                try context.delete(try context.object(with: seed.cy))
                precondition(Set(context.updatedObjects.map(\.objectID)) == [seed.tech, seed.apollo])
                try context.save()
                let apollo = try context.existingObject(with: seed.apollo).value(forKey: "members") as? Set<ManagedObject>
                precondition(apollo?.map(\.objectID) == [seed.ann])
            }
        }
        // An update context of the stack: deleting Ann's badge (nullify; the inverse is Ann's to-one).
        await #expect(processExitsWith: .success) {
            let (directory, _, seed, container) = try ParentChildTests.container()
            defer { withExtendedLifetime(directory) {} }
            let update = container.newUpdateContext()
            try update.performAndWait {
                try update.delete(try update.object(with: seed.badge))
                precondition(Set(update.deletedObjects.map(\.objectID)) == [seed.badge])
                precondition(Set(update.updatedObjects.map(\.objectID)) == [seed.ann])
                try update.saveToStore()
            }
        }
    }

    @Test func insertingThenDeletingInAChildLeavesNoTrace() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // In one child, before any save.
        let update = container.newUpdateContext()
        let ghost = try update.performAndWait {
            let ghost = try Self.make(update, "Employee", ["name": "Ghost", "department": try update.existingObject(with: seed.sales)])
            try ghost.setValue(Set([try update.existingObject(with: seed.apollo)]), forKey: "projects")
            try update.delete(ghost)
            #expect(ghost.managedObjectContext == nil)
            #expect(!update.hasChanges)
            #expect(try Self.names(update.existingObject(with: seed.sales).value(forKey: "employees")) == ["Ann", "Bob"])
            #expect(try Self.names(update.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann", "Cy"])
            #expect(try update.saveToStore() == nil)
            return ghost.objectID
        }
        // Inserted in one child and saved into main, deleted by another child: gone before the store.
        let first = container.newUpdateContext()
        let (temp, tmp) = try first.performAndWait {
            let temp = try Self.make(first, "Department", ["name": "Temp", "company": try first.existingObject(with: seed.acme)])
            let tmp = try Self.make(first, "Employee", ["name": "Tmp", "department": temp])
            try tmp.setValue(Set([try first.existingObject(with: seed.apollo)]), forKey: "projects")
            try first.save()
            return (temp.objectID, tmp.objectID)
        }
        main.performAndWait { #expect(Set(main.insertedObjects.map(\.objectID)) == [temp, tmp]) }
        let second = container.newUpdateContext()
        try second.performAndWait { () throws -> Void in
            try second.delete(try second.existingObject(with: temp))         // cascade: Tmp
            #expect(Set(second.deletedObjects.map(\.objectID)) == [temp, tmp])
            try second.save()
        }
        try main.performAndWait { () throws -> Void in
            #expect(!main.hasChanges)
            #expect(main.insertedObjects.isEmpty && main.deletedObjects.isEmpty && main.updatedObjects.isEmpty)
            #expect(main.registered[temp] == nil && main.registered[tmp] == nil && main.registered[ghost] == nil)
            #expect(try Self.names(main.existingObject(with: seed.acme).value(forKey: "departments")) == ["Sales", "Tech"])
            #expect(try Self.names(main.existingObject(with: seed.apollo).value(forKey: "members")) == ["Ann", "Cy"])
        }
        coordinator.resetStatistics()
        #expect(try second.performAndWait { try second.saveToStore() } == nil)
        #expect(coordinator.statistics.totalExecuted == 0)
        writer.performAndWait { #expect(!writer.hasChanges && writer.registered.isEmpty) }
        #expect(try coordinator.metadata().generation == 1)
        #expect(try Self.stored(url, "Employee") == ["Ann", "Bob", "Cy"])
        #expect(try Self.stored(url, "Department") == ["Sales", "Tech"])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Ann,Cy", "Gemini Bob"])
    }

    // MARK: 5. A failed save changes nothing anywhere

    @Test func aFailedUpdateSaveLeavesEveryLevelAsItWas() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve", "age": 12, "department": try update.existingObject(with: seed.tech)]).objectID
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].insertedObjects == [eve])
        #expect(before.levels[0].updatedObjects == [seed.ann, seed.tech])
        #expect(before.levels[1].updatedObjects == [seed.cy])
        #expect(before.levels[2].updatedObjects == [seed.gemini])

        // Validation: Eve is 12 (minimum 16).
        update.performAndWait {
            #expect(throws: ValidationError.self) { try update.save() }
            #expect(throws: ValidationError.self) { try update.saveToStore() }
        }
        #expect(try Self.state(levels, coordinator) == before)

        // A conflict with main: main changed Ann's name too since the child read it.
        try main.performAndWait { try main.existingObject(with: seed.ann).setValue("Anna", forKey: "name") }
        let beforeConflict = try Self.state(levels, coordinator)
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: eve).setValue(20, forKey: "age")
            let afterFix = LevelState(update)
            do {
                try update.save()
                Issue.record("the save should have met main's change to Ann's name")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) \($0.ours) \($0.theirs) \($0.original)" } == ["\(seed.ann) name \"Annie\" \"Anna\" \"Ann\""])
            }
            #expect(LevelState(update) == afterFix)
        }
        var expected = beforeConflict
        expected.levels[0] = update.performAndWait { LevelState(update) }
        #expect(try Self.state(levels, coordinator) == expected)
        try update.performAndWait { () throws -> Void in
            #expect(try update.existingObject(with: seed.ann).value(forKey: "name") as? String == "Annie")
            #expect(try update.existingObject(with: eve).value(forKey: "age") as? Int16 == 20)
        }

        // The child takes main's name; the whole chain saves.
        try update.performAndWait { () throws -> Void in
            update.mergePolicy = .rollback
            #expect(try update.saveToStore()?.generation == 2)
            #expect(try update.existingObject(with: seed.ann).value(forKey: "name") as? String == "Anna")
        }
        for context in levels { context.performAndWait { #expect(!context.hasChanges) } }
    }

    @Test func aFailedMainSaveLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        // The invalid value arises in main itself: Cy is 120 (maximum 99).
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(120, forKey: "age") }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            let eve = try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)])
            try update.save()                                             // valid: it reaches main
            return eve.objectID
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].hasChanges == false)
        #expect(before.levels[1].insertedObjects == [eve])
        #expect(before.levels[1].updatedObjects == [seed.bob, seed.cy, seed.tech])
        #expect(before.levels[2].updatedObjects == [seed.gemini])

        coordinator.resetStatistics()
        main.performAndWait {
            do {
                try main.save()
                Issue.record("main's save should have failed validation")
            } catch let error as ValidationError {
                #expect(error.failures.map { "\($0.objectID) \($0.key) \($0.rule)" } == ["\(seed.cy) age maxValue"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(coordinator.statistics.totalExecuted == 0)
        #expect(try Self.state(levels, coordinator) == before)

        // saveToStore from the update context fails at main the same way, and changes nothing.
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: seed.ann).setValue(42, forKey: "age")
        }
        let beforeCascade = try Self.state(levels, coordinator)
        update.performAndWait { () -> Void in
            #expect(throws: ValidationError.self) { try update.saveToStore() }
        }
        #expect(try Self.state(levels, coordinator) == beforeCascade)
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "name") as? String == "Robert")
            #expect(try main.existingObject(with: seed.ann).value(forKey: "age") as? Int16 == 41)
            #expect(try main.existingObject(with: seed.cy).value(forKey: "age") as? Int16 == 120)
        }

        // Fixed in main, the same saveToStore goes through.
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" }
                == ["Ann 42", "Cy 29", "Eve 30", "Robert 35"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
    }

    @Test func aConflictAtTheWriterFailsSaveToStoreAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.gemini).setValue("Gemini II", forKey: "title") }
        try main.performAndWait { try main.existingObject(with: seed.cy).setValue(29, forKey: "age") }
        // The update context reads Bob (through main and the writer, neither of which registers him).
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve", "department": try update.existingObject(with: seed.tech)]).objectID
        }
        // A sibling background context changes Bob's age and commits (generation 2).
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: seed.bob).setValue(60, forKey: "age")
            #expect(try background.save()?.generation == 2)
        }
        container.waitForPendingMerges()
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.generation == 2)
        #expect(before.levels[1].registered[seed.bob] == nil && before.levels[2].registered[seed.bob] == nil)

        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the writer's commit should have met the background save")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) ours \($0.ours) theirs \($0.theirs) stored \($0.stored)" }
                        == ["\(seed.bob) name ours \"Robert\" theirs \"Bob\" stored \"Bob\"", "\(seed.bob) age ours 35 theirs 60 stored 60"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(try Self.state(levels, coordinator) == before)
        try update.performAndWait { () throws -> Void in
            #expect(try update.existingObject(with: seed.bob).value(forKey: "name") as? String == "Robert")
            #expect(try update.existingObject(with: eve).isInserted)
        }
        try writer.performAndWait { () throws -> Void in
            #expect(try writer.existingObject(with: seed.gemini).value(forKey: "title") as? String == "Gemini II")
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Bob 60", "Cy 28"])

        // The child re-reads Bob keeping its change; the same saveToStore succeeds.
        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            try update.refresh(bob, mergeChanges: true)
            #expect(try bob.value(forKey: "age") as? Int16 == 60)
            #expect(try update.saveToStore()?.generation == 3)
        }
        #expect(try coordinator.metadata().generation == 3)
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" }
                == ["Ann 41", "Cy 29", "Eve 30", "Robert 60"])
        #expect(try Self.stored(url, "Project", sortKey: "title") == ["Apollo", "Gemini II"])
    }

    @Test func aConflictInTheStoreFailsSaveToStoreThroughCleanAncestorsAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 35)
        }
        let update = container.newUpdateContext()
        let eve = try update.performAndWait {
            try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name")
            return try Self.make(update, "Employee", ["name": "Eve"]).objectID
        }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            try background.existingObject(with: seed.bob).setValue(60, forKey: "age")
            #expect(try background.save()?.generation == 2)
        }
        container.waitForPendingMerges()
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "age") as? Int16 == 60)
            #expect(!main.hasChanges)
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the commit should have met the background save")
            } catch let error as MergeConflictError {
                #expect(error.conflicts.map { "\($0.objectID) \($0.key) ours \($0.ours) theirs \($0.theirs)" }
                        == ["\(seed.bob) name ours \"Robert\" theirs \"Bob\"", "\(seed.bob) age ours 35 theirs 60"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(try Self.state(levels, coordinator) == before)
        #expect(try Self.stored(url, "Employee") == ["Ann", "Bob", "Cy"])

        try update.performAndWait { () throws -> Void in
            let bob = try update.existingObject(with: seed.bob)
            try update.refresh(bob, mergeChanges: true)
            #expect(try update.saveToStore()?.generation == 3)
            #expect(try update.existingObject(with: eve).isInserted == false)
        }
        try main.performAndWait { () throws -> Void in
            let bob = try main.existingObject(with: seed.bob)
            #expect(try bob.value(forKey: "name") as? String == "Robert")
            #expect(try bob.value(forKey: "age") as? Int16 == 60)
        }
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Ann 41", "Cy 28", "Eve 30", "Robert 60"])
    }

    @Test func aValidationFailureAtTheWriterFailsSaveToStoreAndLeavesEveryLevelAsItWas() throws {
        let (directory, url, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        // The writer's own pending change is invalid: a 25-character department name (maximum 20).
        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales and Marketing Team", forKey: "name") }
        try main.performAndWait { () throws -> Void in
            try main.existingObject(with: seed.cy).setValue(29, forKey: "age")
            try main.delete(try main.existingObject(with: seed.gemini))
        }
        let update = container.newUpdateContext()
        try update.performAndWait { () throws -> Void in
            try update.existingObject(with: seed.ann).setValue("Annie", forKey: "name")
            try update.delete(try update.existingObject(with: seed.badge))
            _ = try Self.make(update, "Project", ["title": "Vostok", "members": [try update.existingObject(with: seed.bob)]])
        }
        let levels = [update, main, writer]
        let before = try Self.state(levels, coordinator)
        #expect(before.levels[0].deletedObjects == [seed.badge])
        #expect(before.levels[1].deletedObjects == [seed.gemini])

        coordinator.resetStatistics()
        update.performAndWait {
            do {
                try update.saveToStore()
                Issue.record("the writer's save should have failed validation")
            } catch let error as ValidationError {
                #expect(error.failures.map { "\($0.objectID) \($0.key) \($0.rule)" } == ["\(seed.sales) name maxLength"])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(coordinator.statistics.executions(startingWith: "BEGIN") == 0)
        #expect(try Self.state(levels, coordinator) == before)

        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales & Marketing", forKey: "name") }
        #expect(try update.performAndWait { try update.saveToStore() }?.generation == 2)
        #expect(try Self.stored(url, "Department") == ["Sales & Marketing", "Tech"])
        #expect(try Self.stored(url, "Badge", sortKey: "code") == [])
        #expect(try Self.stored(url, "Project", sortKey: "title") { try Self.names($0.value(forKey: "members")).joined(separator: ",") }
                == ["Apollo Annie,Cy", "Vostok Bob"])
        #expect(try Self.stored(url, "Employee") { "\(try $0.value(forKey: "age") as? Int16 ?? 0)" } == ["Annie 41", "Bob 35", "Cy 29"])
    }

    @Test func aFailedSaveToStoreLeavesAnAutomaticallyMergingSiblingAsItWas() throws {
        let (directory, _, seed, container) = try Self.container()
        defer { withExtendedLifetime(directory) {} }
        let (main, writer, coordinator) = (container.mainContext, container.writerContext, container.coordinator)
        try writer.performAndWait { try writer.existingObject(with: seed.sales).setValue("Sales and Marketing Team", forKey: "name") }
        // A sibling of the update context that merges what main receives.
        let watcher = container.newUpdateContext(name: "watcher")
        watcher.automaticallyMergesChangesFromParent = true
        try watcher.performAndWait { () throws -> Void in
            #expect(try watcher.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
        let update = container.newUpdateContext()
        try update.performAndWait { try update.existingObject(with: seed.bob).setValue("Robert", forKey: "name") }
        let levels = [update, watcher, main, writer]
        let before = try Self.state(levels, coordinator)
        update.performAndWait { () -> Void in #expect(throws: ValidationError.self) { try update.saveToStore() } }
        watcher.performAndWait {}                       // any merge handed to the watcher has run
        #expect(try Self.state(levels, coordinator) == before)
        try watcher.performAndWait { () throws -> Void in
            #expect(try watcher.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
        try main.performAndWait { () throws -> Void in
            #expect(try main.existingObject(with: seed.bob).value(forKey: "name") as? String == "Bob")
        }
    }
}
