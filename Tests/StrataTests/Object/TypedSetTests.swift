import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The typed setters (`object[attribute: key] = value` for `Int64`, `Int`, `Double`, `String`,
/// `Bool`, `Date`) write an inserted object's slot straight, with no `AttributeValue`, when the
/// value has the attribute's own type; every other case takes the general path. Held here to
/// `setValue(_:forKey:)` on a twin object, value for value, through the save and a reopened
/// store: inserted and saved objects, exact and converted types, nil, and a value replacing
/// another (strings long enough to live on the heap, so a missed release or a double one shows).
@Suite struct TypedSetTests {
    /// One typed set: the key, and the set done through the typed subscript and through
    /// `setValue` (the reference).
    struct Step: CustomStringConvertible {
        let key: String
        let value: Any?
        /// The value's type is the attribute's own: on an inserted object, the direct write.
        let exact: Bool
        let typed: (ManagedObject) -> Void
        var description: String { "\(key) = \(value.map { "\($0) (\(type(of: $0)))" } ?? "nil")" }
    }

    static func step<Value>(_ key: String, _ value: Value?, _ set: @escaping (ManagedObject, Value?) -> Void) -> Step {
        let own: [ObjectIdentifier: AttributeType] = [
            ObjectIdentifier(Int64.self): .int64, ObjectIdentifier(Int.self): .int64, ObjectIdentifier(Double.self): .double,
            ObjectIdentifier(String.self): .string, ObjectIdentifier(Bool.self): .bool, ObjectIdentifier(Date.self): .date,
        ]
        let type = TestModels.allTypes.first { $0.name == key }?.type
        return Step(key: key, value: value, exact: type != nil && own[ObjectIdentifier(Value.self)] == type, typed: { set($0, value) })
    }

    static let long1 = String(repeating: "first value on the heap ", count: 3)
    static let long2 = String(repeating: "second, ÉCOLE 日本語 ", count: 4)

    /// Exact types (the direct path on an inserted object), converted ones (the general path),
    /// nil, and replacements.
    /// Computed: a `Step` holds closures and `Any`, so a stored list would not be `Sendable`.
    static var steps: [Step] { [
        step("i64", Int64.min) { $0[attribute: "i64"] = $1 },
        step("i64", Int64(42)) { $0[attribute: "i64"] = $1 },
        step("i64", Int(-7)) { $0[attribute: "i64"] = $1 },
        step("i16", Int64(-300)) { $0[attribute: "i16"] = $1 },
        step("i32", Int(70_000)) { $0[attribute: "i32"] = $1 },
        step("dbl", -0.0) { $0[attribute: "dbl"] = $1 },
        step("dbl", Double.infinity) { $0[attribute: "dbl"] = $1 },
        step("flt", 1.5) { $0[attribute: "flt"] = $1 },
        step("flag", true) { $0[attribute: "flag"] = $1 },
        step("flag", false) { $0[attribute: "flag"] = $1 },
        step("when", Date(timeIntervalSince1970: 1_732_000_000.123_456)) { $0[attribute: "when"] = $1 },
        step("text", long1) { $0[attribute: "text"] = $1 },
        step("text", long2) { $0[attribute: "text"] = $1 },
        step("text", "short") { $0[attribute: "text"] = $1 },
        step("text", String?.none) { $0[attribute: "text"] = $1 },
        step("text", long1) { $0[attribute: "text"] = $1 },
        step("i64", Int64?.none) { $0[attribute: "i64"] = $1 },
        step("dbl", Double?.none) { $0[attribute: "dbl"] = $1 },
        step("flag", Bool?.none) { $0[attribute: "flag"] = $1 },
        step("when", Date?.none) { $0[attribute: "when"] = $1 },
        step("i64", Int?.none) { $0[attribute: "i64"] = $1 },
        step("when", Date.distantPast) { $0[attribute: "when"] = $1 },
        step("i64", Int.max) { $0[attribute: "i64"] = $1 },
    ] }

    /// Every prefix of the steps, on an inserted object and on a saved one, twin against twin.
    @Test(arguments: [false, true])
    func typedSetsMatchSetValueThroughTheStore(saveFirst: Bool) throws {
        let store = try TestStore(model: TestModels.company())
        var checked = 0
        // How often each route was taken: the direct write (inserted object, exact type), the
        // general path for a converted type and for a saved object, nil, and a value replacing one.
        var routes: [String: Int] = ["direct": 0, "converted": 0, "saved": 0, "nil": 0, "replaced": 0]
        let ids: [(typed: ObjectID, reference: ObjectID)] = try store.context.performAndWait {
            var ids: [(ObjectID, ObjectID)] = []
            let steps = Self.steps
            for length in 1...steps.count {
                let typed = try store.context.insert("Sample"), reference = try store.context.insert("Sample")
                if saveFirst { try store.context.save() }
                var setKeys = Set<String>()
                for step in steps.prefix(length) {
                    routes[saveFirst ? "saved" : step.exact ? "direct" : "converted", default: 0] += 1
                    if step.value == nil { routes["nil", default: 0] += 1 }
                    if !setKeys.insert(step.key).inserted { routes["replaced", default: 0] += 1 }
                    step.typed(typed)
                    try reference.setValue(step.value, forKey: step.key)
                    for attribute in TestModels.allTypes {
                        try AttributeRoundTripTests.expectIdentical(try typed.value(forKey: attribute.name),
                                                                    try reference.value(forKey: attribute.name),
                                                                    key: "\(attribute.name) after \(step)")
                        checked += 1
                    }
                }
                #expect(typed.hasChanges == reference.hasChanges)
                #expect(store.context.insertedObjects.contains(typed) == !saveFirst)
                #expect(store.context.updatedObjects.contains(typed) == saveFirst)
                ids.append((typed.objectID, reference.objectID))
            }
            try store.context.save()
            return ids
        }
        let reopened = try store.reopened()
        try reopened.context.performAndWait {
            for (typedID, referenceID) in ids {
                let typed = try reopened.context.existingObject(with: typedID)
                let reference = try reopened.context.existingObject(with: referenceID)
                for attribute in TestModels.allTypes {
                    try AttributeRoundTripTests.expectIdentical(try typed.value(forKey: attribute.name),
                                                                try reference.value(forKey: attribute.name),
                                                                key: "\(attribute.name) of \(typedID) after reopening")
                }
            }
        }
        let reached = routes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        print("typed-set: saveFirst=\(saveFirst) objects=\(ids.count) steps=\(Self.steps.count) compared=\(checked) routes: \(reached)")
        #expect(checked > 0)
        for route in saveFirst ? ["saved", "nil", "replaced"] : ["direct", "converted", "nil", "replaced"] {
            #expect(routes[route, default: 0] > 0, "route \(route) never reached")
        }
    }
}
