import Foundation
import StrataTestSupport
@testable import Strata

// Hand-written PersistentEntity classes for the company model (TestModels.company(): what the
// differential fixture fills), plain Swift mirrors of the same graph for Foundation's own
// `evaluate`, and `CompanyFamily`, which lets one generator build the same predicate over both.

/// The company model with `Corp` classes as the entities' classes (same storage, same hash).
enum CorpModel {
    static let model: Model = {
        let classes: [String: ManagedObject.Type] = [
            "Employee": Corp.Employee.self, "Department": Corp.Department.self, "Company": Corp.Company.self,
            "Badge": Corp.Badge.self, "Project": Corp.Project.self, "Desk": Corp.Desk.self, "Sample": Corp.Sample.self,
        ]
        let entities = TestModels.company().entities.map { entity -> Entity in
            var entity = entity
            entity.managedClass = classes[entity.name] ?? ManagedObject.self
            return entity
        }
        return try! Model(version: "1", entities: entities)
    }()

    static func entity(_ name: String) -> Entity { model.entities.first { $0.name == name }! }
}

enum Corp {
    final class Employee: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Employee")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Employee.name: "name"
            case \Employee.email: "email"
            case \Employee.age: "age"
            case \Employee.height: "height"
            case \Employee.department: "department"
            case \Employee.badge: "badge"
            case \Employee.projects: "projects"
            case \Employee.desk: "desk"
            default: nil
            }
        }
        static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
            switch name {
            case "name": \Employee.name
            case "email": \Employee.email
            case "age": \Employee.age
            case "height": \Employee.height
            case "department": \Employee.department
            case "badge": \Employee.badge
            case "projects": \Employee.projects
            case "desk": \Employee.desk
            default: nil
            }
        }

        var name: String {
            get { self[attribute: "name"] ?? "" }
            set { self[attribute: "name"] = newValue }
        }
        var email: String? {
            get { self[attribute: "email"] }
            set { self[attribute: "email"] = newValue }
        }
        var age: Int16? {
            get { self[attribute: "age"] }
            set { self[attribute: "age"] = newValue }
        }
        var height: Double? {
            get { self[attribute: "height"] }
            set { self[attribute: "height"] = newValue }
        }
        var department: Department? {
            get { self[toOne: "department"] }
            set { self[toOne: "department"] = newValue }
        }
        var badge: Badge? {
            get { self[toOne: "badge"] }
            set { self[toOne: "badge"] = newValue }
        }
        var desk: Desk? {
            get { self[toOne: "desk"] }
            set { self[toOne: "desk"] = newValue }
        }
        var projects: Set<Project> {
            get { self[toMany: "projects"] }
            set { self[toMany: "projects"] = newValue }
        }
        /// Not persistent: predicates reading it can't translate.
        var shout: String { name.uppercased() }
    }

    final class Department: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Department")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Department.name: "name"
            case \Department.company: "company"
            case \Department.employees: "employees"
            default: nil
            }
        }
        static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
            switch name {
            case "name": \Department.name
            case "company": \Department.company
            case "employees": \Department.employees
            default: nil
            }
        }

        var name: String {
            get { self[attribute: "name"] ?? "" }
            set { self[attribute: "name"] = newValue }
        }
        var company: Company? {
            get { self[toOne: "company"] }
            set { self[toOne: "company"] = newValue }
        }
        var employees: Set<Employee> {
            get { self[toMany: "employees"] }
            set { self[toMany: "employees"] = newValue }
        }
    }

    final class Company: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Company")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Company.name: "name"
            case \Company.departments: "departments"
            default: nil
            }
        }
        static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
            switch name {
            case "name": \Company.name
            case "departments": \Company.departments
            default: nil
            }
        }

        var name: String {
            get { self[attribute: "name"] ?? "" }
            set { self[attribute: "name"] = newValue }
        }
        var departments: Set<Department> {
            get { self[toMany: "departments"] }
            set { self[toMany: "departments"] = newValue }
        }
    }

    final class Badge: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Badge")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Badge.code: "code"
            case \Badge.owner: "owner"
            default: nil
            }
        }
        // No keyPath(forPropertyNamed:): a sort through a badge can't be taken apart (tested).

        var code: String {
            get { self[attribute: "code"] ?? "" }
            set { self[attribute: "code"] = newValue }
        }
        var owner: Employee? {
            get { self[toOne: "owner"] }
            set { self[toOne: "owner"] = newValue }
        }
    }

    final class Project: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Project")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Project.title: "title"
            case \Project.members: "members"
            default: nil
            }
        }

        var title: String {
            get { self[attribute: "title"] ?? "" }
            set { self[attribute: "title"] = newValue }
        }
        var members: Set<Employee> {
            get { self[toMany: "members"] }
            set { self[toMany: "members"] = newValue }
        }
    }

    final class Desk: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Desk")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Desk.number: "number"
            case \Desk.occupants: "occupants"
            default: nil
            }
        }
        static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
            switch name {
            case "number": \Desk.number
            case "occupants": \Desk.occupants
            default: nil
            }
        }

        var number: Int32 {
            get { self[attribute: "number"] ?? 0 }
            set { self[attribute: "number"] = newValue }
        }
        var occupants: Set<Employee> {
            get { self[toMany: "occupants"] }
            set { self[toMany: "occupants"] = newValue }
        }
    }

    /// Every attribute type, all optional.
    final class Sample: ManagedObject, PersistentEntity {
        static let entityDescription = CorpModel.entity("Sample")
        static func propertyName(for keyPath: AnyKeyPath) -> String? {
            switch keyPath {
            case \Sample.i16: "i16"
            case \Sample.i32: "i32"
            case \Sample.i64: "i64"
            case \Sample.dbl: "dbl"
            case \Sample.flt: "flt"
            case \Sample.flag: "flag"
            case \Sample.text: "text"
            case \Sample.when: "when"
            case \Sample.blob: "blob"
            case \Sample.uid: "uid"
            case \Sample.linkURL: "link"
            case \Sample.amount: "amount"
            default: nil
            }
        }

        var i16: Int16? { get { self[attribute: "i16"] } set { self[attribute: "i16"] = newValue } }
        var i32: Int32? { get { self[attribute: "i32"] } set { self[attribute: "i32"] = newValue } }
        var i64: Int64? { get { self[attribute: "i64"] } set { self[attribute: "i64"] = newValue } }
        var dbl: Double? { get { self[attribute: "dbl"] } set { self[attribute: "dbl"] = newValue } }
        var flt: Float? { get { self[attribute: "flt"] } set { self[attribute: "flt"] = newValue } }
        var flag: Bool? { get { self[attribute: "flag"] } set { self[attribute: "flag"] = newValue } }
        var text: String? { get { self[attribute: "text"] } set { self[attribute: "text"] = newValue } }
        var when: Date? { get { self[attribute: "when"] } set { self[attribute: "when"] = newValue } }
        var blob: Data? { get { self[attribute: "blob"] } set { self[attribute: "blob"] = newValue } }
        var uid: UUID? { get { self[attribute: "uid"] } set { self[attribute: "uid"] = newValue } }
        var linkURL: URL? { get { self[attribute: "link"] } set { self[attribute: "link"] = newValue } }
        var amount: Decimal? { get { self[attribute: "amount"] } set { self[attribute: "amount"] = newValue } }
    }
}

// MARK: - Plain mirrors

/// The same graph as plain Swift objects: what Foundation's `Predicate.evaluate` reads in the
/// differential test, independent of Strata.
enum Plain {
    class Node: Hashable {
        let objectID: ObjectID
        init(_ id: ObjectID) { objectID = id }
        static func == (a: Node, b: Node) -> Bool { a === b }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    }
    final class Employee: Node {
        var name = "", email: String?, age: Int16?, height: Double?
        var department: Department?, badge: Badge?, desk: Desk?
        var projects: Set<Project> = []
    }
    final class Department: Node {
        var name = ""
        var company: Company?
        var employees: Set<Employee> = []
    }
    final class Company: Node {
        var name = ""
        var departments: Set<Department> = []
    }
    final class Badge: Node {
        var code = ""
        var owner: Employee?
    }
    final class Project: Node {
        var title = ""
        var members: Set<Employee> = []
    }
    final class Desk: Node {
        var number: Int32 = 0
        var occupants: Set<Employee> = []
    }

    /// A copy of every object of the store's company graph, strings passed through `encode`.
    final class World {
        var employees: [Employee] = []
        private var departments: [Department] = [], companies: [Company] = [], badges: [Badge] = [], projects: [Project] = [], desks: [Desk] = []

        init(context: ManagedObjectContext, encode: (String) -> String) throws {
            var byID: [ObjectID: Node] = [:]
            func all<T: ManagedObject>(_ type: T.Type, _ entity: String) throws -> [T] {
                try context.fetch(FetchRequest(entityName: entity), as: type)
            }
            func copy<C: ManagedObject, P: Node>(_ objects: [C], _ make: (ObjectID) -> P) -> [P] {
                objects.map { object in
                    let plain = make(object.objectID)
                    byID[object.objectID] = plain
                    return plain
                }
            }
            func mirror<P: Node>(_ object: ManagedObject?) -> P? { object.map { byID[$0.objectID] as! P } }

            let cEmployees = try all(Corp.Employee.self, "Employee"), cDepartments = try all(Corp.Department.self, "Department")
            let cCompanies = try all(Corp.Company.self, "Company"), cBadges = try all(Corp.Badge.self, "Badge")
            let cProjects = try all(Corp.Project.self, "Project"), cDesks = try all(Corp.Desk.self, "Desk")
            employees = copy(cEmployees, Employee.init)
            departments = copy(cDepartments, Department.init)
            companies = copy(cCompanies, Company.init)
            badges = copy(cBadges, Badge.init)
            projects = copy(cProjects, Project.init)
            desks = copy(cDesks, Desk.init)
            for (c, p) in zip(cEmployees, employees) {
                p.name = encode(c.name)
                p.email = c.email.map(encode)
                p.age = c.age
                p.height = c.height
                p.department = mirror(c.department)
                p.badge = mirror(c.badge)
                p.desk = mirror(c.desk)
                p.projects = Set(c.projects.map { mirror($0)! })
            }
            for (c, p) in zip(cDepartments, departments) {
                p.name = encode(c.name)
                p.company = mirror(c.company)
                p.employees = Set(c.employees.map { mirror($0)! })
            }
            for (c, p) in zip(cCompanies, companies) {
                p.name = encode(c.name)
                p.departments = Set(c.departments.map { mirror($0)! })
            }
            for (c, p) in zip(cBadges, badges) {
                p.code = encode(c.code)
                p.owner = mirror(c.owner)
            }
            for (c, p) in zip(cProjects, projects) {
                p.title = encode(c.title)
                p.members = Set(c.members.map { mirror($0)! })
            }
            for (c, p) in zip(cDesks, desks) {
                p.number = c.number
                p.occupants = Set(c.occupants.map { mirror($0)! })
            }
        }

        /// Breaks the reference cycles.
        func tearDown() {
            for e in employees { e.department = nil; e.badge = nil; e.desk = nil; e.projects = [] }
            for d in departments { d.company = nil; d.employees = [] }
            for c in companies { c.departments = [] }
            for b in badges { b.owner = nil }
            for p in projects { p.members = [] }
            for d in desks { d.occupants = [] }
        }
    }
}

/// Strings as Foundation would compare them if it worked on Unicode scalars, as Strata does:
/// each scalar becomes `(XXXXXX)` (six hex digits), so each is one Character, `<` is scalar
/// order, and a substring match can only start at a scalar.
enum ScalarCodec {
    static func encode(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            out += "(" + String(repeating: "0", count: 6 - hex.count) + hex + ")"
        }
        return out
    }
}

// MARK: - Families

/// The company graph's classes and key paths, so one generator builds the same predicate for
/// `Corp` (Strata's classes) and `Plain` (the mirrors).
protocol CompanyFamily {
    associatedtype Employee: AnyObject & Hashable
    associatedtype Department: AnyObject & Hashable
    associatedtype Company: AnyObject & Hashable
    associatedtype Badge: AnyObject & Hashable
    associatedtype Project: AnyObject & Hashable
    associatedtype Desk: AnyObject & Hashable

    static var employeeID: any KeyPath<Employee, ObjectID> & Sendable { get }
    static var employeeName: any KeyPath<Employee, String> & Sendable { get }
    static var employeeEmail: any KeyPath<Employee, String?> & Sendable { get }
    static var employeeAge: any KeyPath<Employee, Int16?> & Sendable { get }
    static var employeeHeight: any KeyPath<Employee, Double?> & Sendable { get }
    static var employeeDepartment: any KeyPath<Employee, Department?> & Sendable { get }
    static var employeeBadge: any KeyPath<Employee, Badge?> & Sendable { get }
    static var employeeDesk: any KeyPath<Employee, Desk?> & Sendable { get }
    static var employeeProjects: any KeyPath<Employee, Set<Project>> & Sendable { get }

    static var departmentID: any KeyPath<Department, ObjectID> & Sendable { get }
    static var departmentName: any KeyPath<Department, String> & Sendable { get }
    static var departmentCompany: any KeyPath<Department, Company?> & Sendable { get }
    static var departmentEmployees: any KeyPath<Department, Set<Employee>> & Sendable { get }

    static var companyID: any KeyPath<Company, ObjectID> & Sendable { get }
    static var companyName: any KeyPath<Company, String> & Sendable { get }
    static var companyDepartments: any KeyPath<Company, Set<Department>> & Sendable { get }

    static var badgeCode: any KeyPath<Badge, String> & Sendable { get }
    static var badgeOwner: any KeyPath<Badge, Employee?> & Sendable { get }

    static var projectID: any KeyPath<Project, ObjectID> & Sendable { get }
    static var projectTitle: any KeyPath<Project, String> & Sendable { get }
    static var projectMembers: any KeyPath<Project, Set<Employee>> & Sendable { get }

    static var deskNumber: any KeyPath<Desk, Int32> & Sendable { get }
}

enum CorpFamily: CompanyFamily {
    static var employeeID: any KeyPath<Corp.Employee, ObjectID> & Sendable { \.objectID }
    static var employeeName: any KeyPath<Corp.Employee, String> & Sendable { \.name }
    static var employeeEmail: any KeyPath<Corp.Employee, String?> & Sendable { \.email }
    static var employeeAge: any KeyPath<Corp.Employee, Int16?> & Sendable { \.age }
    static var employeeHeight: any KeyPath<Corp.Employee, Double?> & Sendable { \.height }
    static var employeeDepartment: any KeyPath<Corp.Employee, Corp.Department?> & Sendable { \.department }
    static var employeeBadge: any KeyPath<Corp.Employee, Corp.Badge?> & Sendable { \.badge }
    static var employeeDesk: any KeyPath<Corp.Employee, Corp.Desk?> & Sendable { \.desk }
    static var employeeProjects: any KeyPath<Corp.Employee, Set<Corp.Project>> & Sendable { \.projects }
    static var departmentID: any KeyPath<Corp.Department, ObjectID> & Sendable { \.objectID }
    static var departmentName: any KeyPath<Corp.Department, String> & Sendable { \.name }
    static var departmentCompany: any KeyPath<Corp.Department, Corp.Company?> & Sendable { \.company }
    static var departmentEmployees: any KeyPath<Corp.Department, Set<Corp.Employee>> & Sendable { \.employees }
    static var companyID: any KeyPath<Corp.Company, ObjectID> & Sendable { \.objectID }
    static var companyName: any KeyPath<Corp.Company, String> & Sendable { \.name }
    static var companyDepartments: any KeyPath<Corp.Company, Set<Corp.Department>> & Sendable { \.departments }
    static var badgeCode: any KeyPath<Corp.Badge, String> & Sendable { \.code }
    static var badgeOwner: any KeyPath<Corp.Badge, Corp.Employee?> & Sendable { \.owner }
    static var projectID: any KeyPath<Corp.Project, ObjectID> & Sendable { \.objectID }
    static var projectTitle: any KeyPath<Corp.Project, String> & Sendable { \.title }
    static var projectMembers: any KeyPath<Corp.Project, Set<Corp.Employee>> & Sendable { \.members }
    static var deskNumber: any KeyPath<Corp.Desk, Int32> & Sendable { \.number }
}

enum PlainFamily: CompanyFamily {
    static var employeeID: any KeyPath<Plain.Employee, ObjectID> & Sendable { \.objectID }
    static var employeeName: any KeyPath<Plain.Employee, String> & Sendable { \.name }
    static var employeeEmail: any KeyPath<Plain.Employee, String?> & Sendable { \.email }
    static var employeeAge: any KeyPath<Plain.Employee, Int16?> & Sendable { \.age }
    static var employeeHeight: any KeyPath<Plain.Employee, Double?> & Sendable { \.height }
    static var employeeDepartment: any KeyPath<Plain.Employee, Plain.Department?> & Sendable { \.department }
    static var employeeBadge: any KeyPath<Plain.Employee, Plain.Badge?> & Sendable { \.badge }
    static var employeeDesk: any KeyPath<Plain.Employee, Plain.Desk?> & Sendable { \.desk }
    static var employeeProjects: any KeyPath<Plain.Employee, Set<Plain.Project>> & Sendable { \.projects }
    static var departmentID: any KeyPath<Plain.Department, ObjectID> & Sendable { \.objectID }
    static var departmentName: any KeyPath<Plain.Department, String> & Sendable { \.name }
    static var departmentCompany: any KeyPath<Plain.Department, Plain.Company?> & Sendable { \.company }
    static var departmentEmployees: any KeyPath<Plain.Department, Set<Plain.Employee>> & Sendable { \.employees }
    static var companyID: any KeyPath<Plain.Company, ObjectID> & Sendable { \.objectID }
    static var companyName: any KeyPath<Plain.Company, String> & Sendable { \.name }
    static var companyDepartments: any KeyPath<Plain.Company, Set<Plain.Department>> & Sendable { \.departments }
    static var badgeCode: any KeyPath<Plain.Badge, String> & Sendable { \.code }
    static var badgeOwner: any KeyPath<Plain.Badge, Plain.Employee?> & Sendable { \.owner }
    static var projectID: any KeyPath<Plain.Project, ObjectID> & Sendable { \.objectID }
    static var projectTitle: any KeyPath<Plain.Project, String> & Sendable { \.title }
    static var projectMembers: any KeyPath<Plain.Project, Set<Plain.Employee>> & Sendable { \.members }
    static var deskNumber: any KeyPath<Plain.Desk, Int32> & Sendable { \.number }
}
