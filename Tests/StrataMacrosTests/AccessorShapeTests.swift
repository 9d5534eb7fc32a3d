import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import Testing

/// The shape of a generated accessor: it is the hand-written accessor's code, told to the
/// `Observation` module. (What it costs, in statements and rows read, is measured against the
/// string API by `TypedAccessorWorkTests`.) Each getter and setter is exactly one subscript call
/// on `self`; those of the demo's attributes and to-many contain the demo's hand-written bodies
/// character for character (before the port to `@Entity`), so they make the same calls. The required to-one goes through
/// `self[_persistedRequired:]`, an `@inlinable` forward to `self[requiredToOne:]` (the hand-written
/// `self[toOne:]` plus the nil check a non-optional property needs).
@Suite struct AccessorShapeTests {
    static let demo = """
        @Entity final class Category: ManagedObject {
            @Attribute(.indexed) var name: String
            @Relationship(inverse: \\Good.category, deleteRule: .cascade) var goods: Set<Good> = []
        }
        @Entity final class Good: ManagedObject {
            @Attribute(maxLength: 80) var name: String
            @Attribute(minValue: 0) var number: Int64 = 0
            var category: Category
        }
        """

    /// The bodies of the demo's hand-written accessors (Demo.swift before `@Entity`), by
    /// "Class.property get|set".
    static let handWritten: [String: String] = [
        "Category.name get": #"self[attribute: "name"] ?? """#,
        "Category.name set": #"self[attribute: "name"] = newValue"#,
        "Category.goods get": #"self[toMany: "goods"]"#,
        "Good.name get": #"self[attribute: "name"] ?? """#,
        "Good.name set": #"self[attribute: "name"] = newValue"#,
        "Good.number get": #"self[attribute: "number"] ?? 0"#,
        "Good.number set": #"self[attribute: "number"] = newValue"#,
    ]

    /// Every generated accessor body, by "Class.property get|set".
    static func generatedAccessors() -> [String: String] {
        let expanded = Parser.parse(source: demo).expand(
            macroSpecs: strataMacros, contextGenerator: { _ in BasicMacroExpansionContext() })
        var bodies: [String: String] = [:]
        for statement in expanded.as(SourceFileSyntax.self)!.statements {
            guard let type = statement.item.as(ClassDeclSyntax.self) else { continue }
            for member in type.memberBlock.members {
                guard let variable = member.decl.as(VariableDeclSyntax.self), !variable.isStatic,
                      let binding = variable.bindings.first,
                      case .accessors(let accessors)? = binding.accessorBlock?.accessors else { continue }
                let name = binding.pattern.trimmedDescription
                for accessor in accessors {
                    bodies["\(type.name.text).\(name) \(accessor.accessorSpecifier.text)"] =
                        accessor.body?.statements.trimmedDescription
                }
            }
        }
        return bodies
    }

    @Test func generatedAccessorsAreOneSubscriptCallLikeTheHandWrittenOnes() {
        let generated = Self.generatedAccessors()
        #expect(generated.count == 10, "get and set for each of the five properties: \(generated.keys.sorted())")
        for (accessor, body) in generated {
            let calls = body.components(separatedBy: "self[").count - 1
            #expect(calls == 1, "\(accessor): \(body)")
        }
        // The hand-written body, told to the `Observation` module around it (issue 49): a getter
        // registers its read, a setter writes between willSet and didSet.
        for (accessor, body) in Self.handWritten {
            let property = accessor.split(separator: " ")[0].split(separator: ".")[1]
            let observation = accessor.hasSuffix(" get") ? "Strata._observationAccess(self, \\.\(property))"
                : "Strata._observationMutation(self, \\.\(property))"
            #expect(generated[accessor]?.contains(body) == true, "\(accessor): \(generated[accessor] ?? "none")")
            #expect(generated[accessor]?.hasPrefix(observation) == true, "\(accessor): \(generated[accessor] ?? "none")")
        }
        #expect(generated["Good.category get"]?.hasSuffix(#"return self[_persistedRequired: "category"]"#) == true)
        #expect(generated["Good.category set"]?.contains(#"self[_persisted: "category"] = newValue"#) == true)
        print("accessor-shape: generated=\(generated.count) subscript-calls=\(generated.count) identical-to-hand-written=\(Self.handWritten.count)")
    }
}

extension VariableDeclSyntax {
    fileprivate var isStatic: Bool { modifiers.contains { $0.name.text == "static" } }
}
