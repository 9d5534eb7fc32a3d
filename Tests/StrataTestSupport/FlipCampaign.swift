public import Foundation
internal import Strata

/// The page-checksum flip campaign's two halves, shared by the test that builds the store
/// (StrataCrashTests/PageChecksumCampaignTests) and the harness that flips and reads it
/// (`StrataCrashHarness --mode flips`).
public enum FlipCampaign {
    /// A populated store of the company model: every attribute type, to-ones, to-manys, a
    /// many-to-many join table, a compound index, and free pages (a fifth of the items deleted).
    public static func populate(at url: URL, seed: UInt64 = 1) throws {
        let coordinator = try StoreCoordinator(model: TestModels.company(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "populate")
        var rng = SplitMix64(seed: seed)
        try context.performAndWait {
            var employees: [ManagedObject] = []
            var projects: [ManagedObject] = []
            for p in 0..<12 {
                let project = try context.insert("Project")
                try project.setValue("project \(p)", forKey: "title")
                projects.append(project)
            }
            var desks: [ManagedObject] = []
            for d in 0..<20 {
                let desk = try context.insert("Desk")
                try desk.setValue(Int32(100 + d), forKey: "number")
                desks.append(desk)
            }
            for c in 0..<4 {
                let company = try context.insert("Company")
                try company.setValue("company \(c)", forKey: "name")
                for d in 0..<5 {
                    let department = try context.insert("Department")
                    try department.setValue("dept \(c).\(d)", forKey: "name")
                    try department.setValue(company, forKey: "company")
                    for e in 0..<8 {
                        let employee = try context.insert("Employee")
                        try employee.setValue("employee \(c).\(d).\(e) \(String(repeating: "x", count: Int(rng.next() % 20)))", forKey: "name")
                        try employee.setValue("e\(c)d\(d)n\(e)@example.com".filter { $0.isLetter || $0 == "@" || $0 == "." }, forKey: "email")
                        try employee.setValue(Int16(20 + Int(rng.next() % 60)), forKey: "age")
                        try employee.setValue(150 + Double(rng.next() % 5000) / 100, forKey: "height")
                        try employee.setValue(department, forKey: "department")
                        try employee.setValue(desks[Int(rng.next() % UInt64(desks.count))], forKey: "desk")
                        let badge = try context.insert("Badge")
                        try badge.setValue("B-\(c)\(d)\(e)-\(rng.next() % 10_000)", forKey: "code")
                        try employee.setValue(badge, forKey: "badge")
                        let chosen = Set((0..<3).map { _ in projects[Int(rng.next() % UInt64(projects.count))] })
                        try employee.setValue(chosen, forKey: "projects")
                        employees.append(employee)
                    }
                }
            }
            for s in 0..<150 {
                let sample = try context.insert("Sample")
                try sample.setValue(Int16(truncatingIfNeeded: rng.next()), forKey: "i16")
                try sample.setValue(Int32(truncatingIfNeeded: rng.next()), forKey: "i32")
                try sample.setValue(Int64(bitPattern: rng.next()), forKey: "i64")
                try sample.setValue(Double(rng.next() % 1_000_000) / 7, forKey: "dbl")
                try sample.setValue(Float(rng.next() % 1000) / 3, forKey: "flt")
                try sample.setValue(rng.next() % 2 == 0, forKey: "flag")
                try sample.setValue("sample \(s) " + String(repeating: "é", count: Int(rng.next() % 30)), forKey: "text")
                try sample.setValue(Date(timeIntervalSince1970: Double(rng.next() % 2_000_000_000)), forKey: "when")
                try sample.setValue(Data((0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }), forKey: "blob")
                try sample.setValue(UUID(), forKey: "uid")
                try sample.setValue(URL(string: "https://example.com/\(s)")!, forKey: "link")
                try sample.setValue(Decimal(Int(rng.next() % 100_000)) / 100, forKey: "amount")
            }
            var items: [ManagedObject] = []
            for i in 0..<1_500 {
                let item = try context.insert("Item")
                try item.setValue("item \(String(format: "%05d", Int(rng.next() % 100_000))) \(i)", forKey: "name")
                try item.setValue(Int64(rng.next() % 12), forKey: "category")
                try item.setValue(Double(rng.next() % 10_000) / 10, forKey: "score")
                items.append(item)
            }
            try context.save()
            // Free pages: a run of 400 consecutive items (whole leaf pages of the table and many
            // of its index) and a tenth of the rest go.
            for (index, item) in items.enumerated() where (600..<1_000).contains(index) || rng.next() % 10 == 0 {
                try context.delete(item)
            }
            try context.save()
        }
    }

    /// Everything a user can read from the store at `url`, as text: every object of every
    /// entity with every attribute and relationship, and a controller's sections over the
    /// items sorted through their compound index.
    public static func dump(storeAt url: URL) throws -> String {
        let model = TestModels.company()
        let coordinator = try StoreCoordinator(model: model, url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "dump")
        return try context.performAndWait {
            var text = ""
            for entity in model.entities.sorted(by: { $0.name < $1.name }) {
                let objects = try context.fetch(FetchRequest(entityName: entity.name)).sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
                text += "\(entity.name) \(objects.count)\n"
                for object in objects {
                    var fields = ["\(object.objectID.primaryKey)"]
                    for attribute in entity.attributes { fields.append("\(attribute.name)=\(String(describing: try object.value(forKey: attribute.name)))") }
                    for relationship in entity.relationships {
                        let value = try object.value(forKey: relationship.name)
                        if relationship.isToMany {
                            let keys = ((value as? Set<ManagedObject>) ?? []).map(\.objectID.primaryKey).sorted()
                            fields.append("\(relationship.name)=\(keys)")
                        } else {
                            fields.append("\(relationship.name)=\((value as? ManagedObject)?.objectID.primaryKey ?? 0)")
                        }
                    }
                    text += fields.joined(separator: " ") + "\n"
                }
            }
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Item", sortKeys: [.ascending("category"), .ascending("name")]),
                managedObjectContext: context, sectionNameKeyPath: "category", cacheName: nil)
            try controller.performFetch()
            for section in controller.sections ?? [] { text += "section \(section.name) \(section.numberOfObjects)\n" }
            text += "order \((try controller.fetchedObjects ?? []).map(\.objectID.primaryKey))\n"
            return text
        }
    }

    /// Flip `index` of a campaign seeded with `seed` on a file of `size` bytes: the offset and
    /// the non-zero value XORed into the byte there (reproducible from seed and index alone).
    public static func flip(seed: UInt64, index: Int, size: Int) -> (offset: Int, xor: UInt8) {
        var rng = SplitMix64(seed: seed, stream: index)
        let offset = Int(rng.next() % UInt64(size))
        let xor = UInt8(1 + rng.next() % 255)
        return (offset, xor)
    }
}
