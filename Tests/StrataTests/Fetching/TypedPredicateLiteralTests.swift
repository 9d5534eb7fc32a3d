import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Literal `#Predicate` closures, one per supported shape, each with its format-string twin:
/// the translated condition must select what the twin selects (SQL), what in-memory evaluation
/// selects, and what Foundation's own `evaluate` selects on the same objects. Most translate to
/// exactly the twin's tree.
@Suite struct TypedPredicateLiteralTests {
    struct Case {
        var predicate: Predicate<Corp.Employee>
        var twin: String
        var arguments: [Any?]
        /// The translation is the twin's tree (not just the same rows).
        var exact: Bool
        var line: Int
    }

    /// A small company with NFC strings only, where Foundation's string semantics and Strata's agree.
    struct Data {
        var employees: [String: Corp.Employee] = [:]
        var departments: [String: Corp.Department] = [:]
        var projects: [String: Corp.Project] = [:]
        var companies: [String: Corp.Company] = [:]
    }

    static func populate(_ context: ManagedObjectContext) throws -> Data {
        var data = Data()
        for name in ["Acme", "Globex"] {
            let company = try context.insert(Corp.Company.self)
            company.name = name
            data.companies[name] = company
        }
        for (name, company) in [("Sales", "Acme"), ("Research", "Acme"), ("École", "Globex"), ("Ops", nil)] {
            let department = try context.insert(Corp.Department.self)
            department.name = name
            department.company = company.map { data.companies[$0]! }
            data.departments[name] = department
        }
        for title in ["Apollo", "Gemini", "Mercury", "Zoë"] {
            let project = try context.insert(Corp.Project.self)
            project.title = title
            data.projects[title] = project
        }
        var desks: [Int32: Corp.Desk] = [:]
        for number in [1, 7, 42] as [Int32] {
            let desk = try context.insert(Corp.Desk.self)
            desk.number = number
            desks[number] = desk
        }
        let rows: [(String, String?, Int16?, Double?, String?, [String], String?, Int32?)] = [
            ("Ann", "ann@acme.com", 30, 170, "Sales", ["Apollo", "Gemini"], "A-1", 1),
            ("ann", nil, nil, nil, "Sales", [], nil, nil),
            ("Bob", "bob@acme.com", 16, 182.75, "Research", ["Apollo"], "B-2", nil),
            ("Zoë", "zoe@globex.com", 99, -1.5, "École", ["Mercury", "Zoë", "Apollo"], nil, 7),
            ("école", "ecole@globex.com", 42, 0, "École", ["Gemini"], "É-5", 7),
            ("Eve", nil, 30, 165.5, nil, ["Apollo", "Gemini", "Mercury"], "E-6", nil),
            ("Mallory", "mallory@ops.io", 55, nil, "Ops", [], nil, 42),
            ("Trent", nil, 16, 190, "Research", ["Zoë"], "T-8", nil),
            ("Zed", "zed@acme.com", nil, 150, "Sales", ["Mercury"], nil, nil),
            ("Óscar", "oscar@globex.com", 61, 175, "École", ["Apollo", "Zoë"], "Ó-10", 1),
        ]
        for (name, email, age, height, department, projects, badge, desk) in rows {
            let employee = try context.insert(Corp.Employee.self)
            employee.name = name
            employee.email = email
            employee.age = age
            employee.height = height
            employee.department = department.map { data.departments[$0]! }
            employee.projects = Set(projects.map { data.projects[$0]! })
            if let badge {
                let b = try context.insert(Corp.Badge.self)
                b.code = badge
                employee.badge = b
            }
            employee.desk = desk.map { desks[$0]! }
            data.employees[name] = employee
        }
        try context.save()
        return data
    }

    struct Table {
        var cases: [Case] = []
        mutating func add(_ predicate: Predicate<Corp.Employee>, _ twin: String, _ arguments: Any?..., exact: Bool = true, line: Int = #line) {
            cases.append(Case(predicate: predicate, twin: twin, arguments: arguments, exact: exact, line: line))
        }
    }

    // MARK: The table

    // swiftlint:disable:next function_body_length
    static func table(_ data: Data) -> [Case] {
        var t = Table()
        let apollo = data.projects["Apollo"]!.objectID, gemini = data.projects["Gemini"]!.objectID
        let sales = data.departments["Sales"]!.objectID, ecole = data.departments["École"]!.objectID
        let acme = data.companies["Acme"]!.objectID
        let ann = data.employees["Ann"]!.objectID, bob = data.employees["Bob"]!.objectID
        let names = ["Ann", "Bob", "Nobody"], noNames: [String] = []
        let emails: [String?] = ["ann@acme.com", nil], ages: [Int16?] = [16, 99, nil]
        let ids = [ann, bob], departments: [ObjectID?] = [sales, nil]
        let limit: Int16 = 40, threshold = 2, text = "Ann", prefix = "Z"
        let missing: Int16? = nil, negative = -1.5, salesOps: [String?] = ["Sales", "Ops"]
        let big = Int16.max, zero = 0

        // Equality and order on attributes.
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" }, "name == 'Ann'")
        t.add(#Predicate<Corp.Employee> { $0.name != "Ann" }, "name != 'Ann'")
        t.add(#Predicate<Corp.Employee> { "Ann" == $0.name }, "'Ann' == name")
        t.add(#Predicate<Corp.Employee> { $0.name < "M" }, "name < 'M'")
        t.add(#Predicate<Corp.Employee> { $0.name <= "Eve" }, "name <= 'Eve'")
        t.add(#Predicate<Corp.Employee> { $0.name > "Zed" }, "name > 'Zed'")
        t.add(#Predicate<Corp.Employee> { $0.name >= "Zed" }, "name >= 'Zed'")
        t.add(#Predicate<Corp.Employee> { "M" > $0.name }, "'M' > name")
        t.add(#Predicate<Corp.Employee> { $0.name == text }, "name == %@", text)
        t.add(#Predicate<Corp.Employee> { $0.email == "ann@acme.com" }, "email == 'ann@acme.com'")
        t.add(#Predicate<Corp.Employee> { $0.email != "ann@acme.com" }, "email != 'ann@acme.com'")
        t.add(#Predicate<Corp.Employee> { $0.email == nil }, "email == nil")
        t.add(#Predicate<Corp.Employee> { $0.email != nil }, "email != nil")
        t.add(#Predicate<Corp.Employee> { nil == $0.email }, "nil == email")
        t.add(#Predicate<Corp.Employee> { $0.age == 30 }, "age == 30")
        t.add(#Predicate<Corp.Employee> { $0.age != 30 }, "age != 30")
        t.add(#Predicate<Corp.Employee> { $0.age == nil }, "age == nil")
        t.add(#Predicate<Corp.Employee> { $0.age == missing }, "age == nil")
        t.add(#Predicate<Corp.Employee> { $0.age != missing }, "age != nil")
        t.add(#Predicate<Corp.Employee> { $0.height == 170 }, "height == 170.0")
        t.add(#Predicate<Corp.Employee> { $0.height == negative }, "height == -1.5")
        t.add(#Predicate<Corp.Employee> { $0.height != nil }, "height != nil")
        t.add(#Predicate<Corp.Employee> { $0.age! > 40 }, "age > 40")
        t.add(#Predicate<Corp.Employee> { $0.age! <= 30 }, "age <= 30")
        t.add(#Predicate<Corp.Employee> { $0.height! < 100 }, "height < 100.0")
        t.add(#Predicate<Corp.Employee> { $0.email! == "zed@acme.com" }, "email == 'zed@acme.com'")

        // Nil coalescing.
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 0) > 40 }, "age > 40")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 50) > 40 }, "age == nil OR age > 40")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 0) < 40 }, "age == nil OR age < 40")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 50) < 40 }, "age < 40")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 30) == 30 }, "age == nil OR age == 30")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 0) == 30 }, "age == 30")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 0) != 30 }, "age != 30")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 30) != 30 }, "age != nil AND age != 30")
        t.add(#Predicate<Corp.Employee> { ($0.height ?? 0) >= 170 }, "height >= 170.0")
        t.add(#Predicate<Corp.Employee> { ($0.height ?? 170) >= 170 }, "height == nil OR height >= 170.0")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "") == "" }, "email == nil OR email == ''")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "") < "b" }, "email == nil OR email < 'b'")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "zzz") < "b" }, "email < 'b'")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "x") != "x" }, "email != nil AND email != 'x'")
        t.add(#Predicate<Corp.Employee> { ($0.department?.name ?? "") == "Sales" }, "department.name == 'Sales'")
        t.add(#Predicate<Corp.Employee> { ($0.department?.name ?? "Ops") == "Ops" }, "department.name == nil OR department.name == 'Ops'")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? $0.name) == "Eve" }, "(email == nil AND name == 'Eve') OR (email != nil AND email == 'Eve')", exact: false)
        t.add(#Predicate<Corp.Employee> { ($0.age ?? limit) >= limit }, "age == nil OR age >= %@", limit)

        // Through to-one relationships (optional chaining).
        t.add(#Predicate<Corp.Employee> { $0.department?.name == "Sales" }, "department.name == 'Sales'")
        t.add(#Predicate<Corp.Employee> { $0.department?.name != "Sales" }, "department.name != 'Sales'")
        t.add(#Predicate<Corp.Employee> { $0.department?.name == nil }, "department.name == nil")
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.name == "Acme" }, "department.company.name == 'Acme'")
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.name != "Acme" }, "department.company.name != 'Acme'")
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.name == nil }, "department.company.name == nil")
        t.add(#Predicate<Corp.Employee> { $0.badge?.code == "A-1" }, "badge.code == 'A-1'")
        t.add(#Predicate<Corp.Employee> { $0.badge?.owner?.name == "Bob" }, "badge.owner.name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { $0.badge?.owner?.age == 16 }, "badge.owner.age == 16")
        t.add(#Predicate<Corp.Employee> { $0.desk?.number == 7 }, "desk.number == 7")
        t.add(#Predicate<Corp.Employee> { $0.desk?.number != 7 }, "desk.number != 7")
        t.add(#Predicate<Corp.Employee> { ($0.desk?.number ?? 0) > 5 }, "desk.number > 5")
        t.add(#Predicate<Corp.Employee> { ($0.desk?.number ?? 99) > 5 }, "desk.number == nil OR desk.number > 5")
        t.add(#Predicate<Corp.Employee> { $0.department!.name == "Sales" }, "department.name == 'Sales'")
        t.add(#Predicate<Corp.Employee> { $0.department == nil }, "department == nil")
        t.add(#Predicate<Corp.Employee> { $0.department != nil }, "department != nil")
        t.add(#Predicate<Corp.Employee> { $0.badge == nil }, "badge == nil")
        t.add(#Predicate<Corp.Employee> { $0.desk != nil }, "desk != nil")
        t.add(#Predicate<Corp.Employee> { $0.department?.company == nil }, "department.company == nil")
        t.add(#Predicate<Corp.Employee> { $0.department?.company != nil }, "department.company != nil")
        t.add(#Predicate<Corp.Employee> { $0.badge?.owner != nil }, "badge.owner != nil")

        // Objects by ID.
        t.add(#Predicate<Corp.Employee> { $0.objectID == ann }, "SELF == %@", ann)
        t.add(#Predicate<Corp.Employee> { $0.objectID != ann }, "SELF != %@", ann)
        t.add(#Predicate<Corp.Employee> { $0.department?.objectID == sales }, "department == %@", sales)
        t.add(#Predicate<Corp.Employee> { $0.department?.objectID != sales }, "department != %@", sales)
        t.add(#Predicate<Corp.Employee> { $0.department?.objectID == ecole || $0.department == nil }, "department == %@ OR department == nil", ecole)
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.objectID == acme }, "department.company == %@", acme)
        t.add(#Predicate<Corp.Employee> { $0.badge?.owner?.objectID == bob }, "badge.owner == %@", bob)
        t.add(#Predicate<Corp.Employee> { $0.department?.objectID == $0.badge?.owner?.department?.objectID }, "department == badge.owner.department")
        t.add(#Predicate<Corp.Employee> { $0.email == $0.department?.name }, "email == department.name")
        t.add(#Predicate<Corp.Employee> { $0.email != $0.department?.name }, "email != department.name")

        // Strings: contains and starts(with:).
        t.add(#Predicate<Corp.Employee> { $0.name.contains("n") }, "name CONTAINS 'n'")
        t.add(#Predicate<Corp.Employee> { $0.name.contains("") }, "name CONTAINS ''")
        t.add(#Predicate<Corp.Employee> { $0.name.contains(text) }, "name CONTAINS %@", text)
        t.add(#Predicate<Corp.Employee> { $0.name.starts(with: "Z") }, "name BEGINSWITH 'Z'")
        t.add(#Predicate<Corp.Employee> { $0.name.starts(with: prefix) }, "name BEGINSWITH %@", prefix)
        t.add(#Predicate<Corp.Employee> { !$0.name.starts(with: "Z") }, "NOT (name BEGINSWITH 'Z')")
        t.add(#Predicate<Corp.Employee> { "Annabel".contains($0.name) }, "'Annabel' CONTAINS name")
        t.add(#Predicate<Corp.Employee> { "Bobby".starts(with: $0.name) }, "'Bobby' BEGINSWITH name")
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") == true }, "email CONTAINS 'acme'")
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") ?? false }, "email CONTAINS 'acme'")
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") ?? true }, "email == nil OR email CONTAINS 'acme'")
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") == false }, "email != nil AND NOT (email CONTAINS 'acme')")
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") != true }, "NOT (email CONTAINS 'acme')", exact: false)
        t.add(#Predicate<Corp.Employee> { $0.email?.contains("acme") == nil }, "email == nil")
        t.add(#Predicate<Corp.Employee> { $0.email?.starts(with: "z") ?? false }, "email BEGINSWITH 'z'")
        t.add(#Predicate<Corp.Employee> { $0.department?.name.starts(with: "R") == true }, "department.name BEGINSWITH 'R'")
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.name.contains("c") ?? false }, "department.company.name CONTAINS 'c'")
        t.add(#Predicate<Corp.Employee> { $0.badge?.code.contains("-") ?? false }, "badge.code CONTAINS '-'")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "").contains("globex") }, "email CONTAINS 'globex'")
        t.add(#Predicate<Corp.Employee> { ($0.email ?? "none").starts(with: "n") }, "email == nil OR email BEGINSWITH 'n'")
        t.add(#Predicate<Corp.Employee> { $0.name.isEmpty }, "name == ''")
        t.add(#Predicate<Corp.Employee> { !$0.name.isEmpty }, "NOT (name == '')")
        t.add(#Predicate<Corp.Employee> { $0.email?.isEmpty ?? true }, "email == nil OR email == ''")
        t.add(#Predicate<Corp.Employee> { $0.email?.isEmpty == false }, "email != nil AND NOT (email == '')", exact: false)

        // Captured collections: IN.
        t.add(#Predicate<Corp.Employee> { names.contains($0.name) }, "name IN %@", names)
        t.add(#Predicate<Corp.Employee> { !names.contains($0.name) }, "NOT (name IN %@)", names)
        t.add(#Predicate<Corp.Employee> { noNames.contains($0.name) }, "name IN {}")
        t.add(#Predicate<Corp.Employee> { emails.contains($0.email) }, "email IN %@", emails)
        t.add(#Predicate<Corp.Employee> { ages.contains($0.age) }, "age IN %@", ages)
        t.add(#Predicate<Corp.Employee> { ids.contains($0.objectID) }, "SELF IN %@", ids)
        t.add(#Predicate<Corp.Employee> { departments.contains($0.department.flatMap { d in d.objectID }) }, "department IN %@", departments)
        t.add(#Predicate<Corp.Employee> { salesOps.contains($0.department.flatMap { d in d.name }) }, "department.name IN {'Sales', 'Ops'}")
        t.add(#Predicate<Corp.Employee> { [16, 30].contains($0.age ?? 30) }, "age == nil OR age IN {16, 30}")
        t.add(#Predicate<Corp.Employee> { _ in names.contains { n in n == "Ann" } }, "TRUEPREDICATE")
        t.add(#Predicate<Corp.Employee> { e in names.contains { n in n == e.name } }, "'Ann' == name OR 'Bob' == name OR 'Nobody' == name")
        t.add(#Predicate<Corp.Employee> { e in names.contains { n in e.name.starts(with: n) } }, "name BEGINSWITH 'Ann' OR name BEGINSWITH 'Bob' OR name BEGINSWITH 'Nobody'")
        t.add(#Predicate<Corp.Employee> { e in noNames.contains { n in n == e.name } }, "FALSEPREDICATE")
        t.add(#Predicate<Corp.Employee> { e in noNames.allSatisfy { n in n == e.name } }, "TRUEPREDICATE")
        t.add(#Predicate<Corp.Employee> { e in ages.allSatisfy { a in a != e.age } }, "16 != age AND 99 != age AND nil != age")

        // Ranges.
        t.add(#Predicate<Corp.Employee> { (20...50).contains($0.age ?? 0) }, "age BETWEEN {20, 50}")
        t.add(#Predicate<Corp.Employee> { (0...50).contains($0.age ?? 0) }, "age == nil OR age BETWEEN {0, 50}")
        t.add(#Predicate<Corp.Employee> { (16..<31).contains($0.age ?? 0) }, "age >= 16 AND age < 31")
        t.add(#Predicate<Corp.Employee> { (160.0...180.0).contains($0.height ?? 0) }, "height BETWEEN {160.0, 180.0}")
        t.add(#Predicate<Corp.Employee> { (1...2).contains($0.projects.count) }, "projects.@count BETWEEN {1, 2}")
        t.add(#Predicate<Corp.Employee> { (limit...99).contains($0.age ?? 0) }, "age BETWEEN %@", [limit, 99])

        // To-many relationships: count and isEmpty.
        t.add(#Predicate<Corp.Employee> { $0.projects.count == 0 }, "projects.@count == 0")
        t.add(#Predicate<Corp.Employee> { $0.projects.count > 2 }, "projects.@count > 2")
        t.add(#Predicate<Corp.Employee> { $0.projects.count >= threshold }, "projects.@count >= %@", threshold)
        t.add(#Predicate<Corp.Employee> { $0.projects.count < 2 }, "projects.@count < 2")
        t.add(#Predicate<Corp.Employee> { $0.projects.isEmpty }, "projects.@count == 0")
        t.add(#Predicate<Corp.Employee> { !$0.projects.isEmpty }, "NOT (projects.@count == 0)")
        t.add(#Predicate<Corp.Employee> { $0.department?.employees.count == 3 }, "department != nil AND department.employees.@count == 3")
        t.add(#Predicate<Corp.Employee> { $0.department?.employees.count != 3 }, "department == nil OR department.employees.@count != 3")
        t.add(#Predicate<Corp.Employee> { ($0.department?.employees.count ?? 0) > 2 }, "department != nil AND department.employees.@count > 2")
        t.add(#Predicate<Corp.Employee> { ($0.department?.employees.count ?? 9) > 2 }, "department == nil OR department.employees.@count > 2")
        t.add(#Predicate<Corp.Employee> { $0.department?.employees.isEmpty ?? true }, "department == nil OR department.employees.@count == 0")
        t.add(#Predicate<Corp.Employee> { $0.department?.company?.departments.count == 2 }, "department.company != nil AND department.company.departments.@count == 2")
        t.add(#Predicate<Corp.Employee> { $0.desk?.occupants.count == 2 }, "desk != nil AND desk.occupants.@count == 2")

        // To-many relationships: contains(where:) and allSatisfy.
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == "Apollo" } }, "ANY projects.title == 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title != "Apollo" } }, "ANY projects.title != 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title < "H" } }, "ANY projects.title < 'H'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in "H" > p.title } }, "ANY projects.title < 'H'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title.starts(with: "M") } }, "ANY projects.title BEGINSWITH 'M'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title.contains("e") } }, "ANY projects.title CONTAINS 'e'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.objectID == apollo } }, "ANY projects == %@", apollo)
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.objectID == apollo || p.objectID == gemini } }, "ANY projects == %@ OR ANY projects == %@", apollo, gemini)
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in [apollo, gemini].contains(p.objectID) } }, "ANY projects IN %@", [apollo, gemini])
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.members.count > 3 } }, "ANY projects.members.@count > 3")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == "Apollo" || p.title == "Zoë" } }, "ANY projects.title == 'Apollo' OR ANY projects.title == 'Zoë'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in !(p.title == "Apollo") } }, "NOT (ALL projects.title == 'Apollo')")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in p.title == "Apollo" && e.age == 30 } }, "ANY projects.title == 'Apollo' AND age == 30")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { p in e.age == 30 && p.title == "Apollo" } }, "age == 30 AND ANY projects.title == 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { _ in true } }, "projects.@count > 0")
        t.add(#Predicate<Corp.Employee> { e in e.projects.contains { _ in e.age == 30 } }, "age == 30 AND projects.@count > 0")
        t.add(#Predicate<Corp.Employee> { e in !e.projects.contains { p in p.title == "Apollo" } }, "NOT (ANY projects.title == 'Apollo')")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title == "Apollo" } }, "ALL projects.title == 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title != "Apollo" } }, "ALL projects.title != 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title >= "G" } }, "ALL projects.title >= 'G'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in !(p.title == "Apollo") } }, "NONE projects.title == 'Apollo'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title != "Apollo" && p.title != "Zoë" } }, "ALL projects.title != 'Apollo' AND ALL projects.title != 'Zoë'")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.title == "Apollo" || e.age == 30 } }, "ALL projects.title == 'Apollo' OR age == 30")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { p in p.members.count >= 2 } }, "ALL projects.members.@count >= 2")
        t.add(#Predicate<Corp.Employee> { e in e.projects.allSatisfy { _ in false } }, "projects.@count == 0")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in m.name == "Bob" } ?? false }, "ANY department.employees.name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in m.name == "Bob" } == true }, "ANY department.employees.name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in m.name == "Bob" } ?? true }, "department == nil OR ANY department.employees.name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.allSatisfy { m in m.age != nil } ?? true }, "ALL department.employees.age != nil")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.allSatisfy { m in m.age != nil } == true }, "department != nil AND ALL department.employees.age != nil")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in (m.age ?? 0) > 50 } ?? false }, "ANY department.employees.age > 50")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in (m.age ?? 99) > 50 } ?? false }, "ANY department.employees.age == nil OR ANY department.employees.age > 50")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.allSatisfy { m in (m.age ?? 99) > 20 } ?? true }, "NONE department.employees.age <= 20")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.allSatisfy { m in (m.age ?? 0) > 20 } ?? true }, "ALL department.employees.age > 20")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.allSatisfy { m in m.age == nil || m.age == 30 } ?? true }, "ALL department.employees.age IN {nil, 30}")
        t.add(#Predicate<Corp.Employee> { e in e.department?.employees.contains { m in m.department?.name == "Sales" } ?? false }, "ANY department.employees.department.name == 'Sales'")
        t.add(#Predicate<Corp.Employee> { e in e.department?.company?.departments.contains { d in d.name == "École" } ?? false }, "ANY department.company.departments.name == 'École'")
        t.add(#Predicate<Corp.Employee> { e in e.desk?.occupants.contains { o in o.name == "Zoë" } ?? false }, "ANY desk.occupants.name == 'Zoë'")
        t.add(#Predicate<Corp.Employee> { e in e.badge?.owner?.projects.contains { p in p.title == "Gemini" } ?? false }, "ANY badge.owner.projects.title == 'Gemini'")

        // Logic.
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" && $0.age == 30 }, "name == 'Ann' AND age == 30")
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" || $0.name == "Bob" }, "name == 'Ann' OR name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" || $0.name == "Bob" || $0.name == "Eve" }, "name == 'Ann' OR name == 'Bob' OR name == 'Eve'")
        t.add(#Predicate<Corp.Employee> { $0.age == 30 && $0.height == 170 && $0.email != nil }, "age == 30 AND height == 170.0 AND email != nil")
        t.add(#Predicate<Corp.Employee> { !($0.name == "Ann") }, "NOT (name == 'Ann')")
        t.add(#Predicate<Corp.Employee> { !($0.age! > 30) }, "NOT (age > 30)")
        t.add(#Predicate<Corp.Employee> { !(!($0.name == "Ann")) }, "NOT (NOT (name == 'Ann'))")
        t.add(#Predicate<Corp.Employee> { ($0.age == 30 || $0.age == 16) && $0.department?.name == "Research" }, "(age == 30 OR age == 16) AND department.name == 'Research'")
        t.add(#Predicate<Corp.Employee> { $0.age == 30 || ($0.age == 16 && $0.department?.name == "Research") }, "age == 30 OR (age == 16 AND department.name == 'Research')")
        t.add(#Predicate<Corp.Employee> { !($0.email == nil || $0.age == nil) }, "NOT (email == nil OR age == nil)")
        t.add(#Predicate<Corp.Employee> { ($0.email == nil) == ($0.age == nil) }, "(email == nil AND age == nil) OR (email != nil AND age != nil)", exact: false)
        t.add(#Predicate<Corp.Employee> { ($0.email == nil) != ($0.age == nil) }, "(email == nil AND age != nil) OR (email != nil AND age == nil)", exact: false)
        t.add(#Predicate<Corp.Employee> { ($0.email == nil) == true }, "email == nil")
        t.add(#Predicate<Corp.Employee> { ($0.email == nil) == false }, "email != nil", exact: false)
        t.add(#Predicate<Corp.Employee> { _ in true }, "TRUEPREDICATE")
        t.add(#Predicate<Corp.Employee> { _ in false }, "FALSEPREDICATE")
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" && true }, "name == 'Ann'")
        t.add(#Predicate<Corp.Employee> { $0.name == "Ann" || false }, "name == 'Ann'")
        t.add(#Predicate<Corp.Employee> { false && $0.name == "Ann" }, "FALSEPREDICATE")
        t.add(#Predicate<Corp.Employee> { true || $0.name == "Ann" }, "TRUEPREDICATE")

        // Ternaries.
        t.add(#Predicate<Corp.Employee> { $0.age == nil ? $0.name == "Zed" : $0.age! > 40 }, "(age == nil AND name == 'Zed') OR age > 40")
        t.add(#Predicate<Corp.Employee> { ($0.email == nil ? "none" : "some") == "none" }, "email == nil")
        t.add(#Predicate<Corp.Employee> { ($0.age == nil ? 0 : 1) > 0 }, "age != nil")
        t.add(#Predicate<Corp.Employee> { (threshold > 1 ? $0.name : "x") == "Ann" }, "name == 'Ann'")
        t.add(#Predicate<Corp.Employee> { $0.projects.count > (threshold > 5 ? 0 : 1) }, "projects.@count > 1")

        // Constant folding.
        t.add(#Predicate<Corp.Employee> { $0.projects.count > threshold + 1 }, "projects.@count > 3")
        t.add(#Predicate<Corp.Employee> { $0.projects.count > threshold * 2 - 3 }, "projects.@count > 1")
        t.add(#Predicate<Corp.Employee> { $0.projects.count > threshold / 2 }, "projects.@count > 1")
        t.add(#Predicate<Corp.Employee> { $0.projects.count > threshold % 2 }, "projects.@count > 0")
        t.add(#Predicate<Corp.Employee> { ($0.height ?? 0) > -(threshold > 0 ? 1.0 : 2.0) }, "height == nil OR height > -1.0")
        t.add(#Predicate<Corp.Employee> { ($0.height ?? 0) > 340.0 / 2 }, "height > 170.0")
        t.add(#Predicate<Corp.Employee> { ($0.age ?? 0) >= limit - 10 }, "age >= 30")
        t.add(#Predicate<Corp.Employee> { _ in threshold > 1 }, "TRUEPREDICATE")
        t.add(#Predicate<Corp.Employee> { threshold > 1 && $0.age == 30 }, "age == 30")
        t.add(#Predicate<Corp.Employee> { _ in names.count == 3 }, "TRUEPREDICATE")
        t.add(#Predicate<Corp.Employee> { $0.name == names[1] }, "name == 'Bob'")
        t.add(#Predicate<Corp.Employee> { $0.name == (names.first ?? "") }, "name == 'Ann'")
        _ = (big, zero)
        return t.cases
    }

    // MARK: Tests

    @Test func literalPredicatesSelectWhatTheirTwinsAndFoundationSelect() throws {
        let store = try TestStore(model: CorpModel.model)
        let context = store.context
        try context.performAndWait {
            let data = try Self.populate(context)
            let employees = try context.fetch(try FetchRequest(Corp.Employee.self), as: Corp.Employee.self)
            #expect(employees.count == 10)
            let cases = Self.table(data)
            #expect(cases.count >= 200, "\(cases.count) literal cases")
            var exact = 0, forcedNil = 0
            for c in cases {
                let location = SourceLocation(fileID: #fileID, filePath: #filePath, line: c.line, column: 1)
                let condition: Condition
                do {
                    condition = try Condition(c.predicate)
                } catch {
                    Issue.record("line \(c.line): \(error)", sourceLocation: location)
                    continue
                }
                let twin = try Condition(format: c.twin, argumentArray: c.arguments)
                if condition == twin { exact += 1 } else if c.exact {
                    Issue.record("line \(c.line): translated to `\(condition)`, twin is `\(twin)`", sourceLocation: location)
                }
                let sql = Set(try context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: condition)))
                let twinSQL = Set(try context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: twin)))
                let memory = Set(try employees.filter { try context.evaluate(condition, on: $0) }.map(\.objectID))
                // Foundation's evaluate throws where a force unwrap meets nil; Strata compares the nil.
                var foundation = Set<ObjectID>(), compared = Set<ObjectID>()
                for employee in employees {
                    guard let result = try? c.predicate.evaluate(employee) else { forcedNil += 1; continue }
                    compared.insert(employee.objectID)
                    if result { foundation.insert(employee.objectID) }
                }
                #expect(sql == twinSQL, "line \(c.line): `\(condition)` vs twin `\(twin)`", sourceLocation: location)
                #expect(sql == memory, "line \(c.line): SQL and memory disagree on `\(condition)`", sourceLocation: location)
                #expect(sql.intersection(compared) == foundation, "line \(c.line): Foundation disagrees on `\(condition)`", sourceLocation: location)
            }
            print("TypedPredicateLiteral: \(cases.count) literal predicates, \(exact) translate to their twin's tree, \(forcedNil) force-unwrapped nils skipped")
        }
    }
}

/// Captured values of every attribute type become the constants the format language takes.
@Suite struct TypedPredicateValueTests {
    @Test func everyAttributeTypeTranslatesAndSelectsWhatFoundationSelects() throws {
        let store = try TestStore(model: CorpModel.model)
        let context = store.context
        try context.performAndWait {
            let when = Date(timeIntervalSinceReferenceDate: 757_382_400), later = when.addingTimeInterval(86_400)
            let blob = Data([0, 1, 2]), uid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            let link = URL(string: "https://example.com/a")!, amount = Decimal(string: "12.5")!
            let first = try context.insert(Corp.Sample.self)
            (first.i16, first.i32, first.i64, first.dbl, first.flt, first.flag) = (1, 2, 3, 1.5, 2.5, true)
            (first.text, first.when, first.blob, first.uid, first.linkURL, first.amount) = ("a", when, blob, uid, link, amount)
            let second = try context.insert(Corp.Sample.self)
            (second.i16, second.i32, second.i64, second.dbl, second.flt, second.flag) = (-1, 20, 3_000_000_000, -0.5, 0.25, false)
            (second.text, second.when, second.blob) = ("b", later, Data())
            _ = try context.insert(Corp.Sample.self)                          // all nil
            try context.save()
            let samples = try context.fetch(try FetchRequest(Corp.Sample.self), as: Corp.Sample.self)
            let big: Int64 = 3_000_000_000, half: Float = 2.5

            let cases: [(Predicate<Corp.Sample>, String, [Any?], Int)] = [
                (#Predicate { $0.i16 == 1 }, "i16 == 1", [], #line),
                (#Predicate { ($0.i16 ?? 0) < 0 }, "i16 < 0", [], #line),
                (#Predicate { $0.i32 == 20 }, "i32 == 20", [], #line),
                (#Predicate { $0.i64 == big }, "i64 == %@", [big], #line),
                (#Predicate { ($0.i64 ?? 0) > 3 }, "i64 > 3", [], #line),
                (#Predicate { $0.dbl == 1.5 }, "dbl == 1.5", [], #line),
                (#Predicate { ($0.dbl ?? 1) < 0 }, "dbl < 0.0", [], #line),
                (#Predicate { $0.flt == half }, "flt == 2.5", [], #line),
                (#Predicate { $0.flag == true }, "flag == YES", [], #line),
                (#Predicate { $0.flag == false }, "flag == NO", [], #line),
                (#Predicate { $0.flag != true }, "flag != YES", [], #line),
                (#Predicate { $0.flag ?? false }, "flag == YES", [], #line),
                (#Predicate { $0.flag ?? true }, "flag == nil OR flag == YES", [], #line),
                (#Predicate { $0.flag == nil }, "flag == nil", [], #line),
                (#Predicate { $0.text == "a" }, "text == 'a'", [], #line),
                (#Predicate { $0.when == when }, "when == %@", [when], #line),
                (#Predicate { ($0.when ?? later) < later }, "when < %@", [later], #line),
                (#Predicate { $0.blob == blob }, "blob == %@", [blob], #line),
                (#Predicate { $0.blob != nil }, "blob != nil", [], #line),
                (#Predicate { $0.uid == uid }, "uid == %@", [uid], #line),
                (#Predicate { $0.linkURL == link }, "link == %@", [link], #line),
                (#Predicate { $0.amount == amount }, "amount == %@", [amount], #line),
                (#Predicate { ($0.amount ?? 0) > 10 }, "amount > %@", [Decimal(10)], #line),
            ]
            for (predicate, twin, arguments, line) in cases {
                let location = SourceLocation(fileID: #fileID, filePath: #filePath, line: line, column: 1)
                let condition = try Condition(predicate), twinCondition = try Condition(format: twin, argumentArray: arguments)
                #expect(condition == twinCondition, "line \(line): `\(condition)` vs `\(twinCondition)`", sourceLocation: location)
                let sql = try context.fetchObjectIDs(FetchRequest(entityName: "Sample", predicate: condition))
                let foundation = try samples.filter { try predicate.evaluate($0) }.map(\.objectID)
                #expect(Set(sql) == Set(foundation), "line \(line): `\(condition)`", sourceLocation: location)
                #expect(Set(sql) == Set(try context.fetchObjectIDs(FetchRequest(entityName: "Sample", predicate: twinCondition))), sourceLocation: location)
            }
        }
    }
}
