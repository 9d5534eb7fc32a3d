import Foundation
import Synchronization
import Testing
import StrataSQLite
import StrataTestSupport
@testable import Strata

/// How predicates become SQL: values only ever as bound parameters, the same Unicode semantics as the
/// in-memory evaluator, sort keys that order alike on both paths, and statements prepared once per shape.
@Suite struct PredicateSQLTests {
    // MARK: Helpers

    /// Every SQL statement the coordinator runs, collected from its trace hook.
    final class SQLLog: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ sql: String) { lines.withLock { $0.append(sql) } }
        var all: [String] { lines.withLock { $0 } }
        func removeAll() { lines.withLock { $0.removeAll() } }
        /// The fetches' SELECTs with a WHERE clause: the ones a predicate shaped.
        var filteredSelects: [String] { all.filter { $0.hasPrefix("SELECT") && $0.contains(" AS t0 WHERE ") } }
    }

    /// The `name`s of the objects a fetch returns, in order (read on the context's queue).
    func fetchNames(_ store: TestStore, _ entity: String, _ condition: Condition, sortKeys: [SortKey] = []) throws -> [String] {
        try store.context.performAndWait {
            try names(store.context.fetch(FetchRequest(entityName: entity, predicate: condition, sortKeys: sortKeys)))
        }
    }

    /// The names a fetch returns, joined, or the error it threw: failures then show what went wrong.
    func outcome(_ body: () throws -> [String]) -> String {
        do { return try body().joined(separator: ", ") } catch { return "threw: \(String(describing: error).prefix(90))" }
    }

    func fetchIDs(_ store: TestStore, _ entity: String, _ condition: Condition) throws -> [ObjectID] {
        try store.context.performAndWait {
            try store.context.fetch(FetchRequest(entityName: entity, predicate: condition)).map(\.objectID)
        }
    }

    func names(_ objects: [ManagedObject]) throws -> [String] {
        try objects.map { try $0.value(forKey: "name") as? String ?? "<nil>" }
    }

    /// Strings compared scalar by scalar (Swift's `==` treats canonically equivalent strings as equal).
    func scalars(_ texts: [String]) -> [[UInt32]] { texts.map { $0.unicodeScalars.map(\.value) } }

    /// Row counts of every table in the store file, read with plain SQL.
    func tableCounts(_ store: TestStore) throws -> [String: Int64] {
        try store.coordinator.withConnection { db in
            var tables: [String] = []
            try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").forEachRow { tables.append($0.string(at: 0)) }
            var counts: [String: Int64] = [:]
            for table in tables {
                let statement = try db.prepare("SELECT count(*) FROM \"\(table)\"")
                _ = try statement.step()
                counts[table] = statement.int64(at: 0)
            }
            return counts
        }
    }

    /// `text` as a double-quoted literal of the format language.
    func doubleQuoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\0": out += "\\0"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `text` as a single-quoted literal of the format language.
    func singleQuoted(_ text: String) -> String {
        var out = "'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\0": out += "\\0"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }

    // MARK: Injection

    static let bigPayload = String(repeating: "'); DROP TABLE \"Company\"; -- \" OR 1=1 \\ ", count: 2_600)   // ~100 KB
    static let payloads = ["'); DROP TABLE \"Employee\"; --", "\" OR 1=1 --", "\0", "a\0b' OR '1'='1", bigPayload]

    @Test func injectionValuesAreBoundNeverSpliced() throws {
        #expect(Self.bigPayload.utf8.count >= 100_000)
        let store = try TestStore()
        try store.context.performAndWait {
            for name in Self.payloads + ["Acme"] {
                let company = try store.context.insert("Company")
                try company.setValue(name, forKey: "name")
                if name.count <= 40 {                    // Employee.name is at most 40 characters
                    let employee = try store.context.insert("Employee")
                    try employee.setValue(name, forKey: "name")
                }
            }
            let plain = try store.context.insert("Employee")
            try plain.setValue("Zed", forKey: "name")
            try store.context.save()
            store.context.reset()
        }
        let before = try tableCounts(store)
        #expect(before["Company"] == 6)
        #expect(before["Employee"] == 6)
        let log = SQLLog()
        store.coordinator.setTrace { log.append($0) }
        defer { store.coordinator.setTrace(nil) }

        for payload in Self.payloads {
            let label = String(payload.debugDescription.prefix(40))
            var conditions = [
                try Condition("name == %@", payload),
                try Condition("name == \(doubleQuoted(payload))"),
                try Condition("name == \(singleQuoted(payload))"),
                try Condition("name IN %@", [payload, "nothing"]),
                try Condition("name ==[c] %@", payload),
                try Condition("name BEGINSWITH %@ AND name ENDSWITH %@", payload, payload),
            ]
            conditions.append(try Condition("%K == %@", "name", payload))
            for condition in conditions {
                let companies = try fetchNames(store, "Company", condition)
                #expect(scalars(companies) == scalars([payload]), "Company \(label): \(condition.description.prefix(60))")
                let employees = try fetchNames(store, "Employee", condition)
                #expect(scalars(employees) == scalars(payload.count <= 40 ? [payload] : []), "Employee \(label)")
            }
            // The plan binds the value; its SQL holds only a placeholder.
            let plan = try FetchPlan(FetchRequest(entityName: "Company", predicate: try Condition("name == %@", payload)),
                                     schema: store.context.schema)
            #expect(plan.whereSQL == " WHERE (t0.\"name\" IS ?1)")
            #expect(plan.arguments == [.text(payload)])
        }

        let selects = log.filteredSelects
        #expect(selects.count == Self.payloads.count * 7 * 2)
        for sql in log.all {
            for payload in Self.payloads {
                #expect(!sql.contains(payload), "a value reached the SQL text: \(sql.prefix(200))")
            }
            #expect(!sql.contains("DROP") && !sql.contains("1=1") && !sql.unicodeScalars.contains("\0"), "\(sql.prefix(200))")
        }
        #expect(selects.allSatisfy { $0.contains("?") })
        // Nothing was dropped or changed.
        #expect(try tableCounts(store) == before)
    }

    @Test func keyPathArgumentsAreResolvedAgainstTheModelNotSpliced() throws {
        let store = try TestStore()
        let log = SQLLog()
        store.coordinator.setTrace { log.append($0) }
        defer { store.coordinator.setTrace(nil) }
        let before = try tableCounts(store)
        // A %K that is not names joined by '.' is refused by the parser, before any model lookup.
        for key in ["name\" IS NULL OR 1=1 --", "name; DROP TABLE \"Employee\"", "department.name\" OR \"1"] {
            let thrown = #expect(throws: ConditionParseError.self) {
                try fetchNames(store, "Employee", try Condition("%K == %@", key, "x"))
            }
            #expect(thrown?.message.contains("is not made of names joined by '.'") == true)
        }
        // A well-formed key the model lacks is an unknownKey naming the entity where it was looked up.
        for (key, entity, segment) in [("salary", "Employee", "salary"), ("department.budget", "Department", "budget")] {
            #expect(throws: ObjectError.unknownKey(entity: entity, key: segment)) {
                try fetchNames(store, "Employee", try Condition("%K == %@", key, "x"))
            }
        }
        #expect(log.filteredSelects.isEmpty, "no SQL runs for a condition the binder rejects")
        #expect(try tableCounts(store) == before)
    }

    // MARK: Unicode

    /// ÉCOLE, école (precomposed), ecole, Ecole, e + U+0301 + cole.
    static let variants = ["\u{C9}COLE", "\u{E9}cole", "ecole", "Ecole", "e\u{301}cole"]

    static let unicodeCases: [(format: String, expected: Set<Int>)] = [
        // [c] lowercases and recomposes (NFC): the decomposed spelling folds to the precomposed one.
        ("name ==[c] \"\u{E9}cole\"", [0, 1, 4]),
        ("name ==[c] 'e\u{301}cole'", [0, 1, 4]),
        ("name ==[cd] \"ecole\"", [0, 1, 2, 3, 4]),
        ("name ==[d] \"ecole\"", [1, 2, 4]),
        // No options: scalars compare, canonical equivalence does not apply.
        ("name == \"\u{E9}cole\"", [1]),
        ("name == \"e\u{301}cole\"", [4]),
        ("name != \"\u{E9}cole\"", [0, 2, 3, 4]),
        ("name BEGINSWITH[c] \"\u{C9}C\"", [0, 1, 4]),
        ("name BEGINSWITH \"\u{C9}\"", [0]),
        ("name ENDSWITH \"cole\"", [1, 2, 3, 4]),
        ("name CONTAINS[d] \"e\u{301}\"", [1, 2, 3, 4]),
        ("name LIKE[cd] \"e*e\"", [0, 1, 2, 3, 4]),
        ("name LIKE \"?cole\"", [1, 2, 3]),
        ("name MATCHES \"\u{C9}.*\"", [0]),
        ("name MATCHES[c] \"\u{E9}.*\"", [0, 1, 4]),
        ("name IN[c] {\"\u{C9}COLE\", \"x\"}", [0, 1, 4]),
        // Ordering after folding is by UTF-8 bytes: é (0xC3) sorts after f.
        ("name <[c] \"f\"", [2, 3]),
    ]

    @Test func unicodeFoldingAgreesBetweenSQLAndMemory() throws {
        let store = try TestStore()
        let ids: [ObjectID] = try store.context.performAndWait {
            var ids: [ObjectID] = []
            for name in Self.variants {
                let department = try store.context.insert("Department")
                try department.setValue(name, forKey: "name")
                ids.append(department.objectID)
            }
            try store.context.save()
            return ids
        }
        for (format, expected) in Self.unicodeCases {
            let condition = try Condition(format)
            let fetched = try fetchIDs(store, "Department", condition)
            #expect(Set(fetched.compactMap { ids.firstIndex(of: $0) }) == expected, "SQL: \(format)")
            #expect(fetched.count == Set(fetched).count)
            let evaluated: Set<Int> = try store.context.performAndWait {
                Set(try ids.indices.filter { try store.context.evaluate(condition, on: store.context.object(with: ids[$0])) })
            }
            #expect(evaluated == expected, "memory: \(format)")
        }
        // The pending-changes path (an unsaved, unrelated department) agrees too.
        try store.context.performAndWait {
            let extra = try store.context.insert("Department")
            try extra.setValue("unrelated", forKey: "name")
            for (format, expected) in Self.unicodeCases {
                let fetched = try store.context.fetch(FetchRequest(entityName: "Department", predicate: try Condition(format))).map(\.objectID)
                #expect(Set(fetched.compactMap { ids.firstIndex(of: $0) }) == expected, "pending: \(format)")
            }
            store.context.rollback()
        }
    }

    /// Strings compare by scalars, so `name == "é"` and `name == "e\u{301}"` select different rows; the
    /// two conditions must not be equal (Hashable: equal values must be interchangeable).
    @Test func conditionsThatSelectDifferentRowsAreNotEqual() throws {
        let precomposed = try Condition("name == %@", "\u{E9}cole")
        let decomposed = try Condition("name == %@", "e\u{301}cole")
        let store = try TestStore()
        try store.context.performAndWait {
            for name in Self.variants {
                try store.context.insert("Department").setValue(name, forKey: "name")
            }
            try store.context.save()
        }
        #expect(try scalars(fetchNames(store, "Department", precomposed)) == scalars(["\u{E9}cole"]))
        #expect(try scalars(fetchNames(store, "Department", decomposed)) == scalars(["e\u{301}cole"]))
        #expect(precomposed != decomposed, "Condition equality treats canonically equivalent strings as equal")
    }

    // MARK: Sort keys

    /// Employees "<department>/<n>" in departments named to tell the three comparisons apart.
    func sortStore() throws -> TestStore {
        let store = try TestStore()
        try store.context.performAndWait {
            var departments: [String: ManagedObject] = [:]
            for name in ["file10", "file2", "File3", "alpha", "Beta", "Zed", "spare"] {
                let department = try store.context.insert("Department")
                try department.setValue(name, forKey: "name")
                departments[name] = department
            }
            for (name, department) in [("Zed/1", "Zed"), ("alpha/1", "alpha"), ("file2/1", "file2"), ("none/1", nil), ("Beta/1", "Beta"),
                                       ("file10/1", "file10"), ("alpha/2", "alpha"), ("File3/1", "File3")] {
                let employee = try store.context.insert("Employee")
                try employee.setValue(name, forKey: "name")
                try employee.setValue(department.map { departments[$0]! }, forKey: "department")
            }
            try store.context.save()
        }
        return store
    }

    static let sortCases: [(SortKey, [String])] = [
        (SortKey("department.name"), ["none/1", "Beta/1", "File3/1", "Zed/1", "alpha/1", "alpha/2", "file10/1", "file2/1"]),
        (SortKey("department.name", ascending: false), ["file2/1", "file10/1", "alpha/1", "alpha/2", "Zed/1", "File3/1", "Beta/1", "none/1"]),
        (SortKey("department.name", comparison: .caseInsensitive),
         ["none/1", "alpha/1", "alpha/2", "Beta/1", "file10/1", "file2/1", "File3/1", "Zed/1"]),
        (SortKey("department.name", ascending: false, comparison: .caseInsensitive),
         ["Zed/1", "File3/1", "file2/1", "file10/1", "Beta/1", "alpha/1", "alpha/2", "none/1"]),
        // Case-insensitive, numbers by value: file2 < File3 < file10.
        (SortKey("department.name", comparison: .localized),
         ["none/1", "alpha/1", "alpha/2", "Beta/1", "file2/1", "File3/1", "file10/1", "Zed/1"]),
        (SortKey("department.name", ascending: false, comparison: .localized),
         ["Zed/1", "file10/1", "File3/1", "file2/1", "Beta/1", "alpha/1", "alpha/2", "none/1"]),
    ]

    @Test(arguments: 0..<sortCases.count) func sortKeysOrderAlikeInSQLAndMemory(_ index: Int) throws {
        let (sortKey, expected) = Self.sortCases[index]
        let store = try sortStore()
        let log = SQLLog()
        store.coordinator.setTrace { log.append($0) }
        defer { store.coordinator.setTrace(nil) }
        try store.context.performAndWait {
            let context = store.context
            let request = FetchRequest(entityName: "Employee", sortKeys: [sortKey])
            // SQL: nothing pending, the ORDER BY does the work.
            let fromSQL = try names(context.fetch(request))
            #expect(log.all.contains { $0.contains("FROM \"Employee\" AS t0") && $0.contains("ORDER BY") }, "the SQL path sorted in SQL")
            #expect(fromSQL == expected, "SQL \(sortKey)")
            // Memory: one unsaved change to a department no employee is in.
            let spare = try #require(try context.fetch(FetchRequest(entityName: "Department", predicate: try Condition("name == 'spare'"))).first)
            try spare.setValue("spare2", forKey: "name")
            log.removeAll()
            let fromMemory = try names(context.fetch(request))
            #expect(!log.all.contains { $0.contains("FROM \"Employee\" AS t0") }, "the pending-changes path sorted in memory")
            #expect(fromMemory == expected, "memory \(sortKey)")
            #expect(fromMemory == fromSQL)
            context.rollback()
        }
    }

    // MARK: Statement reuse

    @Test func sameShapeWithOtherValuesIsPreparedOnce() throws {
        let store = try TestStore()
        try store.context.performAndWait {
            for name in ["a", "b", "c"] { try store.context.insert("Employee").setValue(name, forKey: "name") }
            try store.context.save()
        }
        let log = SQLLog()
        store.coordinator.setTrace { log.append($0) }
        defer { store.coordinator.setTrace(nil) }
        store.coordinator.resetStatistics()
        for name in ["a", "b", "zzz"] {
            let found = try fetchNames(store, "Employee", try Condition("name == %@", name))
            #expect(found == (name == "zzz" ? [] : [name]))
        }
        for (name, age) in [("a", 1), ("b", 2), ("c", 3)] {
            _ = try fetchNames(store, "Employee", try Condition("name == %@ AND age > %d", name, age))
        }
        let shapes = log.filteredSelects
        #expect(shapes.count == 6)
        #expect(Set(shapes).count == 2)
        let statistics = store.coordinator.statistics
        for sql in Set(shapes) {
            #expect(statistics.prepared[sql] == 1, "\(sql)")
            #expect(statistics.executed[sql] == 3, "\(sql)")
        }
    }

    // MARK: Large and deep conditions

    func ageStore() throws -> (TestStore, [ObjectID]) {
        let store = try TestStore()
        let ids: [ObjectID] = try store.context.performAndWait {
            var ids: [ObjectID] = []
            for (name, age) in [("young", 20), ("mid", 45), ("old", 90)] {
                let employee = try store.context.insert("Employee")
                try employee.setValue(name, forKey: "name")
                try employee.setValue(age, forKey: "age")
                ids.append(employee.objectID)
            }
            try store.context.save()
            return ids
        }
        return (store, ids)
    }

    /// The parser accepts a flat OR chain of any length; the SQL back end nests one parenthesis per OR and
    /// SQLite's parser gives up at about 90 terms ("parser stack overflow"), while memory evaluation works.
    @Test func longOrChainsFetch() throws {
        let (store, _) = try ageStore()
        let chain = try Condition((100..<200).map { "age == \($0)" }.joined(separator: " OR ") + " OR age == 45")
        #expect(outcome { try fetchNames(store, "Employee", chain) } == "mid", "a 101-term OR chain must fetch")
    }

    /// NOT nesting the parser accepts (up to 99) must fetch; SQLite's parser overflows at about 49.
    @Test func deeplyNestedNegationsFetch() throws {
        let (store, _) = try ageStore()
        let negated = try Condition(String(repeating: "NOT ", count: 60) + "age == 45")
        #expect(outcome { try fetchNames(store, "Employee", negated) } == "mid", "60 NOTs must fetch")
    }

    /// `SELF IN %@` / `age IN %@` with many values: the OR chain the SQL back end builds passes SQLite's
    /// expression depth limit (1,000) and, beyond 32,766 values, its parameter limit.
    @Test(arguments: [999, 5_000, 40_000]) func largeInListsFetch(_ count: Int) throws {
        let (store, ids) = try ageStore()
        let manyIDs = (0..<count).map { ObjectID(entityName: "Employee", primaryKey: 1_000_000 + Int64($0)) } + [ids[0], ids[2]]
        let byID = try Condition("SELF IN %@", manyIDs)
        #expect(outcome { try fetchNames(store, "Employee", byID, sortKeys: [.ascending("age")]) } == "young, old",
                "SELF IN %@ with \(manyIDs.count) IDs")
        let ages = try Condition("age IN %@", Array(100..<(100 + count)) + [45])
        #expect(outcome { try fetchNames(store, "Employee", ages) } == "mid", "age IN %@ with \(count + 1) values")
    }
}
