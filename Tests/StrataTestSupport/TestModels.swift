public import Foundation
public import Strata

/// Models the tests share.
public enum TestModels {
    /// Every attribute type, all optional: `Sample`.
    public static let allTypes: [Attribute] = [
        Attribute("i16", .int16), Attribute("i32", .int32), Attribute("i64", .int64),
        Attribute("dbl", .double), Attribute("flt", .float), Attribute("flag", .bool),
        Attribute("text", .string), Attribute("when", .date), Attribute("blob", .binary),
        Attribute("uid", .uuid), Attribute("link", .url), Attribute("amount", .decimal),
    ]

    /// A company model exercising every relationship kind and delete rule:
    /// - Company.departments ↔︎ Department.company: one-to-many, **deny** (a company with departments can't be deleted)
    /// - Department.employees ↔︎ Employee.department: one-to-many, **cascade**
    /// - Employee.badge ↔︎ Badge.owner: one-to-one, cascade from the employee, nullify from the badge
    /// - Employee.projects ↔︎ Project.members: many-to-many, nullify both ways
    /// - Desk.occupants ↔︎ Employee.desk: one-to-many, **noAction** from the desk
    public static func company(version: String = "1") -> Model {
        try! Model(version: version, entities: [
            Entity("Sample", attributes: allTypes),
            Entity("Company",
                   attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("departments", .toMany, to: "Department", inverse: "company", deleteRule: .deny)]),
            Entity("Department",
                   attributes: [Attribute("name", .string, isOptional: false, maxLength: 20)],
                   relationships: [
                       Relationship("company", .toOne, to: "Company", inverse: "departments"),
                       Relationship("employees", .toMany, to: "Employee", inverse: "department", deleteRule: .cascade),
                   ]),
            Entity("Employee",
                   attributes: [
                       Attribute("name", .string, isOptional: false, minLength: 1, maxLength: 40),
                       Attribute("email", .string, regex: "[a-z.]+@[a-z]+\\.[a-z]+"),
                       Attribute("age", .int16, defaultValue: .int16(30), minValue: 16, maxValue: 99),
                       Attribute("height", .double, defaultValue: .double(170)),
                   ],
                   relationships: [
                       Relationship("department", .toOne, to: "Department", inverse: "employees"),
                       Relationship("badge", .toOne, to: "Badge", inverse: "owner", deleteRule: .cascade),
                       Relationship("projects", .toMany, to: "Project", inverse: "members"),
                       Relationship("desk", .toOne, to: "Desk", inverse: "occupants"),
                   ]),
            Entity("Badge",
                   attributes: [Attribute("code", .string, isOptional: false)],
                   relationships: [Relationship("owner", .toOne, to: "Employee", inverse: "badge")]),
            Entity("Project",
                   attributes: [Attribute("title", .string, isOptional: false)],
                   relationships: [Relationship("members", .toMany, to: "Employee", inverse: "projects")]),
            Entity("Desk",
                   attributes: [Attribute("number", .int32, isOptional: false)],
                   relationships: [Relationship("occupants", .toMany, to: "Employee", inverse: "desk", deleteRule: .noAction)]),
            Entity("Item",
                   attributes: [
                       Attribute("name", .string, isOptional: false),
                       Attribute("category", .int64, isOptional: false),
                       Attribute("score", .double),
                   ],
                   compoundIndexes: [["category", "name"]]),
        ])
    }
}

/// A store in a temporary folder with one root context.
public final class TestStore: Sendable {
    public let directory: TemporaryDirectory
    public let url: URL
    public let coordinator: StoreCoordinator
    public let context: ManagedObjectContext

    public init(model: Model = TestModels.company(), directory: TemporaryDirectory = TemporaryDirectory()) throws {
        self.directory = directory
        url = directory.file("store.sqlite")
        coordinator = try StoreCoordinator(model: model, url: url)
        context = coordinator.newContext(name: "test")
    }

    /// Closes this store's connection and opens the file again with `model`.
    public func reopened(model: Model = TestModels.company()) throws -> TestStore {
        coordinator.close()
        return try TestStore(model: model, directory: directory)
    }

    public var generation: Int64 { try! coordinator.metadata().generation }
}

extension TestModels {
    /// One entity, `Number` (value, isEven, label): the sibling-merge seed scenario and the stress test.
    public static func numbers() -> Model {
        try! Model(version: "numbers-1", entities: [
            Entity("Number", attributes: [
                Attribute("value", .int64, isOptional: false, isIndexed: true),
                Attribute("isEven", .bool, isOptional: false, defaultValue: .bool(false)),
                Attribute("label", .string),
            ]),
        ])
    }
}

extension TestModels {
    /// Goods in categories (Core Data's classic tutorial): `Category(name)`, `Good(name, number, category)`.
    public static func goods() -> Model {
        try! Model(version: "goods-1", entities: [
            Entity("Category", attributes: [Attribute("name", .string, isOptional: false)],
                   relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category")]),
            Entity("Good", attributes: [
                Attribute("name", .string, isOptional: false),
                Attribute("number", .int64, isOptional: false, defaultValue: .int64(0)),
            ], relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods")]),
        ])
    }

    /// `goods()` plus `Good.sectionName` (String, required, default "Staff"): a lightweight migration away.
    public static func goodsWithSectionName() -> Model {
        var entities = goods().entities
        entities[1].attributes.append(Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff")))
        return try! Model(version: "goods-2", entities: entities)
    }

    /// `goods()` → `goodsWithSectionName()` as a mapping migration (every object carried,
    /// `sectionName` set by the mapping): the build-beside-and-swap path.
    public static func goodsSectionMapping() -> MappingModel {
        try! MappingModel(from: goods(), to: goodsWithSectionName(), entityMappings: [
            EntityMapping("Category", to: "Category"),
            EntityMapping("Good", to: "Good", attributes: ["sectionName": .expression("'Sta' + lowercase('FF')")]),
        ])
    }
}

extension TestModels {
    /// Saves one `Number` per value through a new root context of `coordinator` (the
    /// ``numbers()`` model); their IDs, in order.
    public static func saveNumbers(_ values: [Int64], in coordinator: StoreCoordinator) throws -> [ObjectID] {
        let context = coordinator.newContext()
        return try context.performAndWait {
            let ids = try values.map { value -> ObjectID in
                let number = try context.insert("Number")
                try number.setValue(value, forKey: "value")
                return number.objectID
            }
            try context.save()
            return ids
        }
    }
}
