import Foundation
import Strata
import StrataTestSupport
import Testing

/// Migrations.md: its mapping example compiles and does what the page says, and a dry run
/// (`plannedMigration`) describes what actually runs.
@Suite struct MigrationDocumentationTests {
    /// Departments and employees (name, height, nickname, department).
    static let v1 = try! Model(version: "doc-1", entities: [
        Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
               relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
        Entity("Employee", attributes: [
            Attribute("name", .string, isOptional: false),
            Attribute("height", .double),
            Attribute("nickname", .string),
        ], relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")]),
    ])

    /// The page's v2: heights in inches, a display name and an initial; no nickname.
    static func v2Entities() -> [Entity] {
        [
            Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
            Entity("Employee", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("height", .double),
                Attribute("heightInches", .double),
                Attribute("displayName", .string, isOptional: false, defaultValue: .string("?")),
                Attribute("initial", .string),
            ], relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")]),
        ]
    }
    static let v2 = try! Model(version: "doc-2", entities: v2Entities())

    /// v2 plus an optional `Employee.badge`: the v2 → v3 step is inferred.
    static let v3: Model = {
        var entities = v2Entities()
        entities[1].attributes.append(Attribute("badge", .string))
        return try! Model(version: "doc-3", entities: entities)
    }()

    /// A v1 store: Sales (Ann 160, Cid 180, Eve 99.5) and Research (Bob 95, Dee 80).
    static func makeStore(_ url: URL, model: Model = v1) throws {
        let coordinator = try StoreCoordinator(model: model, url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let departments = try ["Sales", "Research"].map { name in
                let department = try context.insert("Department")
                try department.setValue(name, forKey: "name")
                return department
            }
            for (index, (name, height)) in [("Ann", 160.0), ("Bob", 95.0), ("Cid", 180.0), ("Dee", 80.0), ("Eve", 99.5)].enumerated() {
                let employee = try context.insert("Employee")
                try employee.setValue(name, forKey: "name")
                try employee.setValue(height, forKey: "height")
                try employee.setValue(departments[index % 2], forKey: "department")
            }
            try context.save()
        }
    }

    /// The page's "Mapping migrations" example, word for word (`v1`, `v2`, `v3` as above).
    static func documentedOptions() throws -> StoreOptions {
        let (v1, v2, v3) = (Self.v1, Self.v2, Self.v3)
        @Sendable func print(_ line: String) {}         // the example's progress lines: not in the test log
        // --- Migrations.md example ---
        let mapping = try MappingModel(from: v1, to: v2, entityMappings: [
            EntityMapping("Department", to: "Department"),
            EntityMapping("Employee", to: "Employee", filter: "$source.height < 100", attributes: [
                "heightInches": .expression("round($source.height / 2.54)"),
                "displayName": .expression("uppercase($source.name) + ' (' + $source.department.name + ')'"),
                "initial": .computed { source in
                    try source.value(forKey: "name")?.stringValue.map { .string(String($0.prefix(1))) }
                },
            ]),
        ])
        var options = StoreOptions()
        options.migration = .mapped(versions: [v1, v2, v3], mappings: [mapping])   // v2 → v3 inferred
        options.migrationProgress = { progress in print("\(progress.objectsDone)/\(progress.objectsTotal)") }
        // --- end of the example ---
        return options
    }

    @Test func thePagesMappingExampleMigratesAsDescribed() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("hr.sqlite")
        try Self.makeStore(url)
        let coordinator = try StoreCoordinator(model: Self.v3, url: url, options: try Self.documentedOptions())
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            let employees = try context.fetch(FetchRequest(entityName: "Employee", sortKeys: [.ascending("name")]))
            let rows = try employees.map { employee in
                [try employee.value(forKey: "initial") as? String, try employee.value(forKey: "displayName") as? String,
                 (try employee.value(forKey: "heightInches") as? Double).map { String($0) }]
            }
            #expect(rows == [["B", "BOB (Research)", "37.0"], ["D", "DEE (Research)", "31.0"], ["E", "EVE (Sales)", "39.0"]])
        }
        #expect(try coordinator.metadata().modelVersion == "doc-3")
    }

    @Test func thePageShowsThisExample() throws {
        try DocumentedExample.expectShown(in: "Sources/Strata/Strata.docc/Migrations.md", containing: "MappingModel(from: v1",
                                          source: #filePath)
    }

    /// A migration that only adds an attribute adds the column in place: the dry run says so and
    /// no longer speaks of copying rows.
    @Test func aDryRunOfAnAdditionSaysTheColumnIsAddedInPlace() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("hr.sqlite")
        try Self.makeStore(url)
        var entities = Self.v1.entities
        entities[1].attributes.append(Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")))
        let added = try Model(version: "doc-1a", entities: entities)
        let steps = try StoreCoordinator.plannedMigration(at: url, to: added)
        #expect(steps.map(\.description) == [
            #"add Employee.sectionName, existing rows get "Staff""#,
            #"add the columns of Employee in place, rows not copied: ALTER TABLE "Employee" ADD COLUMN "sectionName" TEXT DEFAULT 'Staff'"#,
        ])
        #expect(!steps.map(\.description).contains { $0.contains("copy") })

        // What the dry run announced is what opening does: the column is there, filled.
        var options = StoreOptions()
        options.migration = .lightweight()
        let coordinator = try StoreCoordinator(model: added, url: url, options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let sections = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Employee")).map { try $0.value(forKey: "sectionName") as? String }
        }
        #expect(sections == Array(repeating: "Staff", count: 5))
    }

    /// Any other change copies the tables, and the dry run says that.
    @Test func aDryRunOfARemovalSaysTheRowsAreCopied() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("hr.sqlite")
        try Self.makeStore(url)
        var entities = Self.v1.entities
        entities[1].attributes.removeAll { $0.name == "nickname" }
        let steps = try StoreCoordinator.plannedMigration(at: url, to: try Model(version: "doc-1b", entities: entities))
        #expect(steps.map(\.description) == [
            "copy the rows of Department into Department",
            "remove Employee.nickname and its values",
            "copy the rows of Employee into Employee",
        ])
    }
}
