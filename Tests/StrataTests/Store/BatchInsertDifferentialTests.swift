import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A batch insert must store what inserting the same values through a context and saving
/// stores, or refuse alike with nothing written. The batch binds every row to one statement
/// (a property left unset is bound to its default), so a value left over from the row before
/// would show here as a
/// difference. The generator draws every way to set a property (typed with the attribute's
/// own type, typed with another, `Any`, nil, `NSNull`, a to-one by ID or as `Any`, unset, set
/// twice) and prints how often each was drawn. A row sets its keys in a drawn order one time in
/// three (the row remembers the key at each position of the row before, so a changed order is
/// its slow path), and two attributes have rules (`score` a minimum, `code` a length and a
/// pattern) that a refused batch may break.
@Suite struct BatchInsertDifferentialTests {
    /// `Row`: every attribute type (optional), a required name, defaults (one on a required
    /// attribute), two attributes with rules, and two to-ones to `Owner`, one required.
    static let model = try! Model(version: "batch-binding-1", entities: [
        Entity("Owner", attributes: [Attribute("name", .string, isOptional: false)],
               relationships: [Relationship("rows", .toMany, to: "Row", inverse: "owner"),
                               Relationship("homes", .toMany, to: "Row", inverse: "home")]),
        Entity("Row",
               attributes: TestModels.allTypes + [
                   Attribute("name", .string, isOptional: false),
                   Attribute("rank", .int64, isOptional: false, defaultValue: .int64(7)),
                   Attribute("label", .string, defaultValue: .string("none")),
                   Attribute("ratio", .double, defaultValue: .double(0.5)),
                   Attribute("score", .int64, defaultValue: .int64(0), minValue: -50),
                   Attribute("code", .string, maxLength: 3, regex: "^[sé][0-9]*$"),
               ],
               relationships: [Relationship("owner", .toOne, to: "Owner", inverse: "rows"),
                               Relationship("home", .toOne, to: "Owner", inverse: "homes", isOptional: false)]),
    ])

    /// One way to set one property; what the generator draws from.
    enum Route: String, CaseIterable {
        case typedExact      // set<BatchValue>(_:forKey:) with the attribute's own type
        case typedConverted  // set<BatchValue>(_:forKey:) with another type (Int into int16, Double into float, …)
        case typedNil        // set<BatchValue>(nil as T?, forKey:)
        case any             // set(_ value: Any?, forKey:)
        case anyNil          // set(nil, forKey:) / NSNull
        case toOneID         // set(ObjectID?, forKey:)
        case toOneAny        // set(ObjectID as Any, forKey:)
        case unset           // left at its default
        case twice           // set, then set again to something else (the last one counts)
    }

    /// A store with two owners.
    static func store(_ name: String, in directory: TemporaryDirectory) throws -> (StoreCoordinator, [ObjectID]) {
        let coordinator = try StoreCoordinator(model: model, url: directory.url.appendingPathComponent(name + ".sqlite"))
        let owners = try coordinator.execute(BatchInsertRequest(entityName: "Owner", objects: [["name": "A"], ["name": "B"]])).objectIDs
        return (coordinator, owners)
    }

    /// Every row of `Row`, every column, as text: the two stores must agree byte for byte.
    static func dump(_ coordinator: StoreCoordinator) throws -> [String] {
        let context = coordinator.newContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Row", sortKeys: [SortKey("name")])).map { row in
                var fields: [String] = []
                for attribute in row.entity.attributes { fields.append("\(attribute.name)=\(String(describing: try row.value(forKey: attribute.name)))") }
                for key in ["owner", "home"] {
                    fields.append("\(key)=\(String(describing: (try row.value(forKey: key) as? ManagedObject)?.objectID))")
                }
                return fields.joined(separator: " ")
            }
        }
    }

    /// One property set, as a user writes it: through the typed `BatchValue` overload, as `Any?`,
    /// or a to-one by `ObjectID`.
    enum Value {
        case int(Int), int64(Int64), double(Double), bool(Bool), string(String), date(Date)
        case typedNil(AttributeType)
        case any(Any?)
        case toOne(ObjectID?)
    }

    /// The sets of attribute `name` by `route`, values drawn from `rng`.
    static func operations(_ name: String, _ type: AttributeType, _ route: Route, _ rng: inout SplitMix64) -> [(String, Value)] {
        switch route {
        case .unset, .toOneID, .toOneAny: return []
        case .typedNil: return [(name, .typedNil(type))]
        case .anyNil: return [(name, .any(rng.next() % 2 == 0 ? nil : NSNull()))]
        case .typedExact, .typedConverted, .any, .twice:
            let n = Int64(rng.next() % 200) - 100
            // Set twice: a first value, then the drawn one (the last set counts).
            let first: [(String, Value)] = route == .twice ? [(name, .typedNil(type))] : []
            let exact = route == .typedExact || route == .twice
            let value: Value = switch type {
            case .int16: exact ? .int(Int(n)) : .any(Int16(n))
            case .int32: exact ? .int64(n) : .any(Int32(n))
            case .int64: exact ? .int64(n) : route == .any ? .any(n) : .int(Int(n))
            case .double: exact ? .double(Double(n) / 4) : .any(Float(n))
            case .float: exact ? .double(Double(n) / 2) : .any(Float(n) / 2)
            case .bool: exact ? .bool(n % 2 == 0) : .any(n % 2 == 0)
            case .string: exact ? .string("s\(n)") : .any("é\(n)")
            case .date: exact ? .date(Date(timeIntervalSinceReferenceDate: Double(n) * 1000.25)) : .any(Date(timeIntervalSinceReferenceDate: Double(n)))
            case .binary: .any(Data([UInt8(truncatingIfNeeded: n), 0, 255]))
            case .uuid: .any(UUID(uuid: (UInt8(truncatingIfNeeded: n), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))
            case .url: .any(URL(string: "https://example.com/\(n)")!)
            case .decimal: .any(Decimal(n) / 8)
            }
            return first + [(name, value)]
        }
    }

    /// Whether `value` keeps the rules of attribute `name` (only `score` and `code` have any).
    static func keepsRules(_ name: String, _ value: Value) -> Bool {
        func text(_ v: Any?) -> String? { v as? String }
        switch (name, value) {
        case ("score", .int(let n)): return n >= -50
        case ("score", .int64(let n)): return n >= -50
        case ("score", .any(let n as Int64)): return n >= -50
        case ("score", .any(let n as Int)): return n >= -50
        case ("code", .string(let t)), ("code", .any(let t as String)):
            return t.count <= 3 && (t.first == "s" || t.first == "é") && t.dropFirst().allSatisfy(\.isNumber)
        default: return true
        }
    }

    /// `operations` in a drawn order of their keys (a key set twice keeps its two sets in order).
    static func shuffledKeys(_ operations: [(String, Value)], _ rng: inout SplitMix64) -> [(String, Value)] {
        var rank: [String: UInt64] = [:]
        for (key, _) in operations where rank[key] == nil { rank[key] = rng.next() }
        return operations.enumerated().sorted { (rank[$0.element.0]!, $0.offset) < (rank[$1.element.0]!, $1.offset) }.map(\.element)
    }

    /// The set on a batch row.
    static func apply(_ key: String, _ value: Value, to row: inout BatchRow<ManagedObject>) throws {
        switch value {
        case .int(let v): try row.set(v, forKey: key)
        case .int64(let v): try row.set(v, forKey: key)
        case .double(let v): try row.set(v, forKey: key)
        case .bool(let v): try row.set(v, forKey: key)
        case .string(let v): try row.set(v, forKey: key)
        case .date(let v): try row.set(v, forKey: key)
        case .typedNil(let type):
            switch type {
            case .string: try row.set(nil as String?, forKey: key)
            case .double, .float: try row.set(nil as Double?, forKey: key)
            case .date: try row.set(nil as Date?, forKey: key)
            default: try row.set(nil as Int64?, forKey: key)
            }
        case .any(let v): try row.set(v, forKey: key)
        case .toOne(let id): try row.set(id, forKey: key)
        }
    }

    /// The same set on an inserted object (a to-one's ID becomes its object in `context`).
    static func apply(_ key: String, _ value: Value, to object: ManagedObject, in context: ManagedObjectContext) throws {
        switch value {
        case .int(let v): try object.setValue(v, forKey: key)
        case .int64(let v): try object.setValue(v, forKey: key)
        case .double(let v): try object.setValue(v, forKey: key)
        case .bool(let v): try object.setValue(v, forKey: key)
        case .string(let v): try object.setValue(v, forKey: key)
        case .date(let v): try object.setValue(v, forKey: key)
        case .typedNil: try object.setValue(nil, forKey: key)
        case .any(let v as ObjectID): try object.setValue(try context.object(with: v), forKey: key)
        case .any(let v): try object.setValue(v, forKey: key)
        case .toOne(let id): try object.setValue(try id.map { try context.object(with: $0) }, forKey: key)
        }
    }

    @Test func aBatchInsertStoresWhatAContextSaveStores() throws {
        let directory = TemporaryDirectory()
        let (batchStore, owners) = try Self.store("batch", in: directory)
        let (saved, savedOwners) = try Self.store("saved", in: directory)
        #expect(owners == savedOwners)
        let attributes = Self.model.entity(named: "Row")!.attributes
        var reached: [Route: Int] = [:]
        var refusals = 0, accepted = 0, shuffled = 0, brokenRules = 0
        var seed = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_BATCH_INSERT_SEED"] ?? "") ?? .random(in: 0...UInt64.max))
        let firstSeed = seed.state
        let update = saved.newContext()
        for batch in 0..<100 {
            // Each batch: every row's sets drawn up front, so both stores get the same values.
            let count = 1 + Int(seed.next() % 12)
            var plans: [[Route]] = []  // per row: a route per attribute, then owner's and home's
            for _ in 0..<count {
                plans.append((0..<(attributes.count + 2)).map { _ in Route.allCases[Int(seed.next() % UInt64(Route.allCases.count))] })
            }
            // One batch in six may leave required values nil (name, rank, home): it is refused;
            // the others set them.
            let mayRefuse = seed.next() % 6 == 0
            let missingName = mayRefuse && seed.next() % 2 == 0
            if !mayRefuse {
                for r in plans.indices {
                    for (a, attribute) in attributes.enumerated() where attribute.name == "rank" && [.typedNil, .anyNil].contains(plans[r][a]) {
                        plans[r][a] = .typedExact
                    }
                    if [.typedNil, .anyNil, .unset].contains(plans[r][attributes.count + 1]) { plans[r][attributes.count + 1] = .toOneID }
                }
            }
            var rows: [[(String, Value)]] = []
            for (index, plan) in plans.enumerated() {
                var operations: [(String, Value)] = []
                for (a, attribute) in attributes.enumerated() where attribute.name != "name" {
                    operations += Self.operations(attribute.name, attribute.type, plan[a], &seed)
                }
                if !mayRefuse { operations.removeAll { !Self.keepsRules($0.0, $0.1) } }
                brokenRules += operations.filter { !Self.keepsRules($0.0, $0.1) }.count
                if !(missingName && index == count - 1) { operations.append(("name", .string("b\(batch)-r\(index)"))) }
                for (t, key) in ["owner", "home"].enumerated() {
                    let owner = owners[index % 2]
                    switch plan[attributes.count + t] {
                    case .toOneAny: operations.append((key, .any(owner)))
                    case .anyNil, .typedNil: operations.append((key, .toOne(nil)))
                    case .unset: break
                    default: operations.append((key, .toOne(owner)))
                    }
                }
                if seed.next() % 3 == 0 {
                    operations = Self.shuffledKeys(operations, &seed)
                    shuffled += 1
                }
                rows.append(operations)
            }
            for plan in plans { for route in plan { reached[route, default: 0] += 1 } }
            let first = Result {
                try batchStore.execute(BatchInsertRequest(entityName: "Row", count: count) { index, row in
                    for (key, value) in rows[index] { try Self.apply(key, value, to: &row) }
                })
            }
            let second = Result {
                try update.performAndWait {
                    do {
                        for operations in rows {
                            let object = try update.insert("Row")
                            for (key, value) in operations { try Self.apply(key, value, to: object, in: update) }
                        }
                        try update.saveToStore()
                    } catch {
                        update.rollback()
                        throw error
                    }
                }
            }
            switch (first, second) {
            case (.success(let result), .success):
                #expect(result.count == count, "seed \(firstSeed) batch \(batch)")
                accepted += 1
            case (.failure(let a as ValidationError), .failure(let b as ValidationError)):
                // The same keys, rules and messages, row by row (the IDs differ: a refused batch
                // names the keys its rows would have had).
                #expect(a.failures.map { "\($0.key) \($0.rule) \($0.message)" } == b.failures.map { "\($0.key) \($0.rule) \($0.message)" },
                        "seed \(firstSeed) batch \(batch)")
                refusals += 1
            default:
                Issue.record("seed \(firstSeed) batch \(batch): batch \(first), context \(second)")
            }
        }
        #expect(try Self.dump(batchStore) == Self.dump(saved), "seed \(firstSeed)")
        let rows = try Self.dump(batchStore).count
        print("batch-insert-differential: seed=\(firstSeed) accepted=\(accepted) refused=\(refusals) rows=\(rows) shuffled-rows=\(shuffled) broken-rules=\(brokenRules) routes: "
              + Route.allCases.map { "\($0.rawValue)=\(reached[$0] ?? 0)" }.joined(separator: " "))
        for route in Route.allCases { #expect((reached[route] ?? 0) > 0, "route \(route) never drawn") }
        #expect(accepted > 0 && refusals > 0, "both outcomes must be reached")
        #expect(shuffled > 0 && brokenRules > 0, "a changed key order and a broken rule must be reached")
    }
}
