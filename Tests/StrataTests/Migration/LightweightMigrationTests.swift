import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Lightweight migration: inferred from the store's own model, refused before any write when it
/// can't be inferred, atomic, and rejecting every section cache made before it.
@Suite struct LightweightMigrationTests {
    static func v1() -> Model {
        try! Model(version: "hr-1", entities: [
            Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
            Entity("Employee", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("height", .double),
                Attribute("nickname", .string),
            ], relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")]),
        ])
    }

    /// v1 plus `Employee.sectionName` (String, default "Staff").
    static func v2() -> Model {
        var model = v1().entities
        model[1].attributes.append(Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")))
        return try! Model(version: "hr-2", entities: model)
    }

    /// v2 with Employee renamed Employee2 (renaming identifier), `nickname` renamed `alias`.
    static func v3() -> Model {
        try! Model(version: "hr-3", entities: [
            Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("employees", .toMany, to: "Employee2", inverse: "department")]),
            Entity("Employee2", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("height", .double),
                Attribute("alias", .string, renamingIdentifier: "nickname"),
                Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")),
            ], relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")],
                   renamingIdentifier: "Employee"),
        ])
    }

    /// A v1 store: two departments, five employees.
    static func makeStore(_ directory: TemporaryDirectory) throws -> URL {
        let url = directory.file("hr.sqlite")
        let coordinator = try StoreCoordinator(model: v1(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let departments = try ["Sales", "Research"].map { name in
                let d = try context.insert("Department")
                try d.setValue(name, forKey: "name")
                return d
            }
            for (i, (name, height)) in [("Ann", 160.0), ("Bob", 95.0), ("Cid", 180.0), ("Dee", 80.0), ("Eve", 99.5)].enumerated() {
                let e = try context.insert("Employee")
                try e.setValue(name, forKey: "name")
                try e.setValue(height, forKey: "height")
                try e.setValue("n-\(name)", forKey: "nickname")
                try e.setValue(departments[i % 2], forKey: "department")
            }
            try context.save()
        }
        return url
    }

    static func options(_ versions: [Model] = []) -> StoreOptions {
        var options = StoreOptions()
        options.migration = .lightweight(versions: versions)
        return options
    }

    static func sha(_ url: URL) throws -> Data { try Data(contentsOf: url) }

    @Test func addingARequiredAttributeWithADefaultFillsExistingRows() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        let before = try StoreCoordinator(model: Self.v1(), url: url)
        let generation = try before.metadata().generation
        before.close()
        let coordinator = try StoreCoordinator(model: Self.v2(), url: url, options: Self.options())
        defer { coordinator.close() }
        let metadata = try coordinator.metadata()
        #expect(metadata.modelVersion == "hr-2" && metadata.modelHash == Self.v2().versionHash)
        #expect(metadata.generation == generation + 1)
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
            #expect(employees.count == 5)
            #expect(try employees.map { try $0.value(forKey: "sectionName") as? String } == Array(repeating: "Staff", count: 5))
            #expect(try employees.map { try $0.value(forKey: "nickname") as? String } == ["n-Ann", "n-Bob", "n-Cid", "n-Dee", "n-Eve"])
            // New objects get fresh keys after the old ones.
            let new = try context.insert("Employee")
            try new.setValue("Fay", forKey: "name")
            #expect(new.objectID.primaryKey > employees.map(\.objectID.primaryKey).max()!)
        }
    }

    /// Issue 20: a lightweight migration runs on the connection the coordinator keeps (the store
    /// is probed read-only once and opened once, where it used to be opened five times): its
    /// ALTER TABLE and metadata update are in the coordinator's own statement counts.
    @Test func aLightweightMigrationRunsOnTheCoordinatorsOwnConnection() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        let coordinator = try StoreCoordinator(model: Self.v2(), url: url, options: Self.options())
        defer { coordinator.close() }
        let statistics = coordinator.statistics
        let alters = statistics.statements.filter { $0.sql.hasPrefix("ALTER TABLE") }
        #expect(alters.map(\.sql) == [#"ALTER TABLE "Employee" ADD COLUMN "sectionName" TEXT DEFAULT 'Staff'"#], "\(statistics.statements.map(\.sql))")
        #expect(statistics.statements.contains { $0.sql.hasPrefix("UPDATE strata_meta") })
        #expect(try coordinator.metadata().modelVersion == "hr-2")
    }

    @Test func renamingAnEntityAndAnAttributeKeepsEveryRowAndRelationship() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        let coordinator = try StoreCoordinator(model: Self.v3(), url: url, options: Self.options([Self.v1(), Self.v2(), Self.v3()]))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee2", sortKeys: [.ascending("name")]))
            #expect(try employees.map { try $0.value(forKey: "alias") as? String } == ["n-Ann", "n-Bob", "n-Cid", "n-Dee", "n-Eve"])
            #expect(try employees.map { try $0.value(forKey: "sectionName") as? String } == Array(repeating: "Staff", count: 5))
            let departments = try context.fetch(FetchRequest(entityName: "Department", sortKeys: [.ascending("name")]))
            let counts = try departments.map { try ($0.value(forKey: "employees") as? Set<ManagedObject>)?.count ?? -1 }
            #expect(counts == [2, 3])          // Research: Bob, Dee; Sales: Ann, Cid, Eve
        }
    }

    @Test func aRemovedAndAnAddedAttributeAreNotTakenForARename() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        var entities = Self.v1().entities
        entities[1].attributes.removeAll { $0.name == "nickname" }
        entities[1].attributes.append(Attribute("alias", .string))
        let model = try Model(version: "hr-1b", entities: entities)
        let steps = try StoreCoordinator.plannedMigration(at: url, to: model)
        #expect(steps.contains(.removeAttribute(entity: "Employee", attribute: "nickname")))
        #expect(steps.contains(.addAttribute(entity: "Employee", attribute: "alias", filledWith: nil)))
        let coordinator = try StoreCoordinator(model: model, url: url, options: Self.options())
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
            #expect(try employees.allSatisfy { try $0.value(forKey: "alias") == nil })
        }
    }

    @Test func refusalsHappenBeforeAnyWriteAndLeaveTheBytesAlone() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        let bytes = try Self.sha(url)
        // No migration allowed.
        #expect(throws: StoreError.self) { try StoreCoordinator(model: Self.v2(), url: url) }
        #expect(try Self.sha(url) == bytes)
        // A type change can't be inferred.
        var entities = Self.v1().entities
        entities[1].attributes[1] = Attribute("height", .string)
        let changed = try Model(version: "hr-x", entities: entities)
        #expect(throws: MigrationError.typeChange(entity: "Employee", attribute: "height", from: .double, to: .string)) {
            try StoreCoordinator(model: changed, url: url, options: Self.options())
        }
        // A new required attribute without a default.
        var required = Self.v1().entities
        required[1].attributes.append(Attribute("badge", .int64, isOptional: false))
        #expect(throws: MigrationError.requiredWithoutDefault(entity: "Employee", attribute: "badge")) {
            try StoreCoordinator(model: try Model(version: "hr-y", entities: required), url: url, options: Self.options())
        }
        #expect(try Self.sha(url) == bytes)
        // And the store still opens as v1 with all of its rows.
        let coordinator = try StoreCoordinator(model: Self.v1(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Employee")) } == 5)
    }

    @Test func aSectionCacheMadeBeforeAMigrationIsRejectedAfterIt() throws {
        let directory = TemporaryDirectory()
        let url = try Self.makeStore(directory)
        let request = FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])
        do {
            let coordinator = try StoreCoordinator(model: Self.v1(), url: url)
            let context = coordinator.newContext()
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "staff")
            try context.performAndWait { try controller.performFetch() }
            coordinator.waitForCacheWrites()
            coordinator.close()
        }
        let coordinator = try StoreCoordinator(model: Self.v2(), url: url, options: Self.options())
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "staff")
        try context.performAndWait { try controller.performFetch() }
        #expect(context.performAndWait { controller.cacheStatus } == .rebuilt(.otherModel))
        #expect(context.performAndWait { controller.numberOfObjects } == 5)
        coordinator.waitForCacheWrites()
        let again = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "staff")
        try context.performAndWait { try again.performFetch() }
        #expect(context.performAndWait { again.cacheStatus } == .served)
    }

    /// Additions only (new attributes and to-ones on kept entities) add columns in place; any
    /// rename, removal or new entity copies the tables.
    @Test func additionsOnlyAddColumnsInPlaceAndEverythingElseCopies() throws {
        let addOnly = try LightweightMigration(from: Self.v1(), to: Self.v2())
        #expect(addOnly.additionsOnly?.keys.sorted() == ["\"Employee\""])
        #expect(addOnly.additionsOnly?["\"Employee\""] == [#""sectionName" TEXT DEFAULT 'Staff'"#])
        #expect(try LightweightMigration(from: Self.v2(), to: Self.v3()).additionsOnly == nil)
        var removed = Self.v1().entities
        removed[1].attributes.removeAll { $0.name == "nickname" }
        #expect(try LightweightMigration(from: Self.v1(), to: try Model(version: "hr-1c", entities: removed)).additionsOnly == nil)
    }
}
