import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@testable import Strata

/// Mapping migrations: filters over `$source`, values from key paths, constants, expressions and
/// Swift code, re-linked relationships, custom policies that transform, split or drop objects,
/// progress, and refusals that leave the store's bytes alone.
@Suite struct MappingMigrationTests {
    typealias HR = LightweightMigrationTests

    /// v1 with `Employee.heightInches` (Double), `Employee.displayName` (String) and a `Badge`
    /// entity (code, holder → Employee).
    static func v2m() -> Model {
        try! Model(version: "hr-2m", entities: [
            Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
            Entity("Employee", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("height", .double),
                Attribute("heightInches", .double),
                Attribute("displayName", .string, isOptional: false, defaultValue: .string("?")),
            ], relationships: [
                Relationship("department", .toOne, to: "Department", inverse: "employees"),
                Relationship("badges", .toMany, to: "Badge", inverse: "holder"),
            ]),
            Entity("Badge", attributes: [Attribute("code", .string, isOptional: false)],
                   relationships: [Relationship("holder", .toOne, to: "Employee", inverse: "badges", isOptional: false)]),
        ])
    }

    static func options(_ mapping: MappingModel, versions: [Model] = [], progress: (@Sendable (MigrationProgress) -> Void)? = nil) -> StoreOptions {
        var options = StoreOptions()
        options.migration = .mapped(versions: versions, mappings: [mapping])
        options.migrationProgress = progress
        return options
    }

    struct Row: Equatable {
        var name: String
        var height: Double?
        var department: String?
    }

    static func employees(_ coordinator: StoreCoordinator) throws -> [Row] {
        let context = coordinator.newContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])).map { e in
                Row(name: try e.value(forKey: "name") as! String, height: try e.value(forKey: "height") as? Double,
                    department: try (e.value(forKey: "department") as? ManagedObject)?.value(forKey: "name") as? String)
            }
        }
    }

    /// Issue 46: an idle connection elsewhere (here a raw SQLite connection that read once and
    /// sits idle, as `strata watch` or a second app does) keeps the store in use: the migration's
    /// own TRUNCATE checkpoint empties the -wal but does not remove it, and the old check read
    /// its size. The migration is refused, the copy removed, the store's bytes as they were; once
    /// the other connection closes, the same open migrates.
    @Test func anIdleConnectionElsewhereRefusesTheSwap() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let mapping = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee"),
        ])
        let idle = try StrataSQLite.Connection(path: url.path)
        try idle.execute("SELECT count(*) FROM strata_meta")
        let bytes = try Data(contentsOf: url)
        #expect(throws: MigrationError.storeInUse(path: url.path)) {
            _ = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping))
        }
        idle.close()
        #expect(try Data(contentsOf: url) == bytes)
        #expect(!FileManager.default.fileExists(atPath: url.path + ".migrating"))
        let coordinator = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping))
        defer { coordinator.close() }
        #expect(try coordinator.metadata().modelVersion == "hr-2m")
    }

    @Test func aMappingWhoseFilterIsSourceHeightBelow100CarriesOnlyMatchingRows() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let mapping = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", filter: "$source.height < 100"),
        ])
        let coordinator = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping))
        defer { coordinator.close() }
        // Ann 160, Bob 95, Cid 180, Dee 80, Eve 99.5: only Bob, Dee and Eve are carried, each
        // still in its department (Sales: Ann, Cid, Eve; Research: Bob, Dee).
        #expect(try Self.employees(coordinator) == [Row(name: "Bob", height: 95, department: "Research"),
                                                     Row(name: "Dee", height: 80, department: "Research"),
                                                     Row(name: "Eve", height: 99.5, department: "Sales")])
        let metadata = try coordinator.metadata()
        #expect(metadata.modelVersion == "hr-2m")
        let context = coordinator.newContext()
        try context.performAndWait {
            let departments = try context.fetch(FetchRequest(entityName: "Department", sortKeys: [.ascending("name")]))
            #expect(try departments.map { try ($0.value(forKey: "employees") as? Set<ManagedObject>)?.count } == [2, 1])
            // Unmapped values got the destination default; a new object gets a key after every kept one.
            let eve = try context.fetch(FetchRequest(entityName: "Employee", predicate: try Condition("name == 'Eve'")))[0]
            #expect(try eve.value(forKey: "displayName") as? String == "?")
            #expect(eve.objectID.primaryKey == 5)          // keys are kept
            let new = try context.insert("Employee")
            try new.setValue("Fay", forKey: "name")
            try context.save()
            #expect(new.objectID.primaryKey > 5)         // after every kept key (and the store's reserved block)
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + ".migrating"))
        // The migrated store kept its page checksums (issue 18): every page checks out.
        #expect(try Data(contentsOf: url)[20] == 8)
        let report = try StoreInspector(url: url).check()
        #expect(report.checksummed && report.isClean, "\(report)")
    }

    @Test func aCustomPolicyTransformsValues() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let mapping = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", attributes: [
                "heightInches": .expression("round($source.height / 2.54 * 10) / 10"),
                "displayName": .expression("uppercase($source.name) + ' (' + $source.department.name + ')'"),
            ], policy: { source, mapped in
                // Drop Cid; give Ann a badge (a split: two objects, the badge pointing at the first);
                // halve everyone's height (a transformed value).
                if try source.value(forKey: "name") == .string("Cid") { return [] }
                var employee = mapped
                if case .double(let height)? = try source.value(forKey: "height") { employee["height"] = .double(height / 2) }
                guard try source.value(forKey: "name") == .string("Ann") else { return [employee] }
                let badge = MappedObject(entity: "Badge", values: ["code": .string("A-1")], relationships: ["holder": .returned(0)])
                return [employee, badge]
            }),
        ])
        let coordinator = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
            #expect(try employees.map { try $0.value(forKey: "name") as? String } == ["Ann", "Bob", "Dee", "Eve"])
            #expect(try employees.map { try $0.value(forKey: "height") as? Double } == [80, 47.5, 40, 49.75])
            #expect(try employees.map { try $0.value(forKey: "heightInches") as? Double } == [63, 37.4, 31.5, 39.2])
            #expect(try employees.map { try $0.value(forKey: "displayName") as? String }
                    == ["ANN (Sales)", "BOB (Research)", "DEE (Research)", "EVE (Sales)"])
            let badges = try context.fetch(FetchRequest(entityName: "Badge"))
            #expect(badges.count == 1)
            let holder = try badges.first?.value(forKey: "holder") as? ManagedObject
            #expect(try holder?.value(forKey: "name") as? String == "Ann")
        }
    }

    @Test func progressCountsEveryCarriedObject() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let mapping = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", filter: "$source.height >= 99.5"),
        ])
        let reports = Locked<[MigrationProgress]>([])
        let coordinator = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping) { progress in
            reports.withLock { $0.append(progress) }
        })
        coordinator.close()
        let seen = reports.withLock { $0 }
        // 2 departments + Ann, Cid, Eve.
        #expect(seen.first?.objectsDone == 0 && seen.first?.objectsTotal == 5)
        #expect(seen.last == MigrationProgress(step: 1, stepCount: 1, version: "hr-2m", objectsDone: 5, objectsTotal: 5))
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.objectsDone <= $1.objectsDone })
    }

    @Test func lightweightStepsAndAMappingStepMigrateProgressively() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        // v1 → v2 (inferred: sectionName added) → v2m-with-sectionName (mapped: only short people).
        var entities = Self.v2m().entities
        entities[entities.firstIndex { $0.name == "Employee" }!].attributes.append(Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")))
        let v3 = try Model(version: "hr-3m", entities: entities)
        let mapping = try MappingModel(from: HR.v2(), to: v3, entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", filter: "$source.height < 100 AND $source.department.name == 'Research'"),
        ])
        let mode = MigrationMode.mapped(versions: [HR.v1(), HR.v2(), v3], mappings: [mapping])
        let steps = try StoreCoordinator.plannedMigration(at: url, to: v3, mode: mode)
        #expect(steps.contains(.addAttribute(entity: "Employee", attribute: "sectionName", filledWith: .string("Staff"))))
        #expect(steps.contains(.mapEntity(from: "Employee", to: "Employee", filter: mapping.entityMappings[1].filter?.description,
                                          customPolicy: false)))
        #expect(steps.last == .addEntity("Badge"))
        let reports = Locked<[MigrationProgress]>([])
        var options = StoreOptions()
        options.migration = mode
        options.migrationProgress = { progress in reports.withLock { $0.append(progress) } }
        let coordinator = try StoreCoordinator(model: v3, url: url, options: options)
        defer { coordinator.close() }
        #expect(try Self.employees(coordinator).map(\.name) == ["Bob", "Dee"])
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee"))
            #expect(try employees.allSatisfy { try $0.value(forKey: "sectionName") as? String == "Staff" })
        }
        #expect(Set(reports.withLock { $0.map(\.step) }) == [1, 2])
    }

    @Test func badMappingsAreRefusedBeforeAnyWrite() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let bytes = try Data(contentsOf: url)
        // A filter naming a key the source lacks, an expression that doesn't parse, a mapping to an unknown entity.
        #expect(throws: MigrationError.self) {
            try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [EntityMapping("Employee", to: "Employee", filter: "$source.weight < 100")])
        }
        do {
            _ = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
                EntityMapping("Employee", to: "Employee", attributes: ["heightInches": .expression("$source.height / ")]),
            ])
            Issue.record("a bad expression was accepted")
        } catch let MigrationError.invalidMapping(_, reason) {
            #expect(reason.contains("column 18"), "\(reason)")
        }
        #expect(throws: MigrationError.invalidMapping(mapping: "Employee → Person", reason: "the destination model (hr-2m) has no entity Person")) {
            try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [EntityMapping("Employee", to: "Person")])
        }
        #expect(throws: ConditionParseError.self) { try EntityMapping("Employee", to: "Employee", filter: "$source.height <") }
        // A policy that throws, and an object missing a required value: the store is left as it was.
        struct Refused: Error {}
        let throwing = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", policy: { source, mapped in
                if source.primaryKey == 4 { throw Refused() }
                return [mapped]
            }),
        ])
        #expect(throws: MigrationError.policyFailed(mapping: "Employee → Employee", sourceKey: 4, error: "Refused()")) {
            try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(throwing))
        }
        let orphan = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Employee", to: "Employee", policy: { _, mapped in
                [mapped, MappedObject(entity: "Badge", values: ["code": .string("x")])]
            }),
        ])
        #expect(throws: MigrationError.self) { try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(orphan)) }
        let unset = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Employee", to: "Employee", attributes: ["displayName": .constant(nil)]),
        ])
        #expect(throws: MigrationError.invalidObject(entity: "Employee", key: "displayName", reason: "is required and has no value (made from Employee 1)")) {
            try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(unset))
        }
        #expect(try Data(contentsOf: url) == bytes)
        #expect(!FileManager.default.fileExists(atPath: url.path + ".migrating"))
        // And the store still opens as v1 with its five employees.
        let coordinator = try StoreCoordinator(model: HR.v1(), url: url)
        defer { coordinator.close() }
        #expect(try Self.employees(coordinator).count == 5)
    }

    @Test func aSectionCacheMadeBeforeAMappingMigrationIsRejectedAfterIt() throws {
        let directory = TemporaryDirectory()
        let url = try HR.makeStore(directory)
        let request = FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")])
        do {
            let coordinator = try StoreCoordinator(model: HR.v1(), url: url)
            let context = coordinator.newContext()
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "people")
            try context.performAndWait { try controller.performFetch() }
            coordinator.waitForCacheWrites()
            coordinator.close()
        }
        let mapping = try MappingModel(from: HR.v1(), to: Self.v2m(), entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", filter: "$source.height < 100"),
        ])
        let coordinator = try StoreCoordinator(model: Self.v2m(), url: url, options: Self.options(mapping))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, cacheName: "people")
        try context.performAndWait { try controller.performFetch() }
        #expect(context.performAndWait { controller.cacheStatus } == .rebuilt(.otherModel))
        #expect(context.performAndWait { controller.numberOfObjects } == 3)
    }
}

/// Many-to-many links follow both ends to what their objects became; links to objects a filter
/// dropped go with them.
@Suite struct MappingMigrationManyToManyTests {
    static func model(_ version: String, extra: Bool) -> Model {
        var person = [Attribute("name", .string, isOptional: false), Attribute("age", .int64)]
        if extra { person.append(Attribute("initial", .string)) }
        return try! Model(version: version, entities: [
            Entity("Person", attributes: person, relationships: [Relationship("projects", .toMany, to: "Project", inverse: "members")]),
            Entity("Project", attributes: [Attribute("title", .string, isOptional: false)],
                   relationships: [Relationship("members", .toMany, to: "Person", inverse: "projects")]),
        ])
    }

    @Test func manyToManyLinksAreCarriedForCarriedObjects() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("projects.sqlite")
        do {
            let coordinator = try StoreCoordinator(model: Self.model("p-1", extra: false), url: url)
            let context = coordinator.newContext()
            try context.performAndWait {
                let projects = try ["Apollo", "Gemini"].map { title in
                    let p = try context.insert("Project")
                    try p.setValue(title, forKey: "title")
                    return p
                }
                for (name, age) in [("Ada", 36), ("Bo", 17), ("Cy", 52)] {
                    let person = try context.insert("Person")
                    try person.setValue(name, forKey: "name")
                    try person.setValue(Int64(age), forKey: "age")
                    try person.setValue(Set(name == "Bo" ? [projects[0]] : projects), forKey: "projects")
                }
                try context.save()
            }
            coordinator.close()
        }
        let target = Self.model("p-2", extra: true)
        let mapping = try MappingModel(from: Self.model("p-1", extra: false), to: target, entityMappings: [
            EntityMapping("Project", to: "Project"),
            EntityMapping("Person", to: "Person", filter: "$source.age >= 18", attributes: ["initial": .computed { source in
                guard case .string(let name)? = try source.value(forKey: "name") else { return nil }
                return .string(String(name.prefix(1)))
            }]),
        ])
        var options = StoreOptions()
        options.migration = .mapped(mappings: [mapping])
        let coordinator = try StoreCoordinator(model: target, url: url, options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let projects = try context.fetch(FetchRequest(entityName: "Project", sortKeys: [.ascending("title")]))
            let members = try projects.map { project in
                try ((project.value(forKey: "members") as? Set<ManagedObject>) ?? []).map { try $0.value(forKey: "initial") as! String }.sorted()
            }
            #expect(members == [["A", "C"], ["A", "C"]])
        }
    }
}
