public import SwiftSyntax
public import SwiftSyntaxMacros
import SwiftDiagnostics
import SwiftSyntaxBuilder

/// `@Entity`: the `PersistentEntity` members, an accessor macro on each persistent property and
/// the conformance. See the macro's declaration in Strata for what it accepts.
public struct EntityMacro {}

extension EntityMacro {
    /// The class `@Entity` is attached to, or nil (and a diagnostic) for anything else.
    static func entityClass(_ declaration: some DeclGroupSyntax, _ node: AttributeSyntax,
                            diagnostics: inout [Diagnostic]) -> ClassDeclSyntax? {
        guard let type = declaration.as(ClassDeclSyntax.self) else {
            let kind: String
            let name: String
            if let s = declaration.as(StructDeclSyntax.self) { kind = "a struct"; name = s.name.text }
            else if let e = declaration.as(EnumDeclSyntax.self) { kind = "an enum"; name = e.name.text }
            else if let a = declaration.as(ActorDeclSyntax.self) { kind = "an actor"; name = a.name.text }
            else if declaration.is(ExtensionDeclSyntax.self) { kind = "an extension"; name = "Name" }
            else if let p = declaration.as(ProtocolDeclSyntax.self) { kind = "a protocol"; name = p.name.text }
            else { kind = "this declaration"; name = "Name" }
            diagnostics.append(Diagnostic(node: node, message: EntityDiagnostic.error(
                "@Entity applies to a class, not \(kind): write 'final class \(name): ManagedObject'")))
            return nil
        }
        var valid = true
        let name = type.name.text
        if !type.modifiers.contains(where: { $0.name.text == "final" }) {
            let fixed = type.with(\.modifiers, type.modifiers + [DeclModifierSyntax(name: .keyword(.final), trailingTrivia: .space)])
            diagnostics.append(Diagnostic(
                node: type.classKeyword,
                message: EntityDiagnostic.error("@Entity class '\(name)' must be final: write 'final class \(name)'"),
                fixIt: FixIt(message: EntityFixIt("add 'final'"),
                             changes: [.replace(oldNode: Syntax(type.modifiers), newNode: Syntax(fixed.modifiers))])))
            valid = false
        }
        let inherited = type.inheritanceClause?.inheritedTypes.map { $0.type.trimmedDescription } ?? []
        if !inherited.contains(where: { $0 == "ManagedObject" || $0 == "Strata.ManagedObject" }) {
            diagnostics.append(Diagnostic(node: type.name, message: EntityDiagnostic.error(
                "@Entity class '\(name)' must inherit from ManagedObject: write 'final class \(name): ManagedObject'")))
            valid = false
        }
        if type.genericParameterClause != nil {
            diagnostics.append(Diagnostic(node: type.name, message: EntityDiagnostic.error(
                "@Entity class '\(name)' can't be generic: one class is one entity")))
            valid = false
        }
        return valid ? type : nil
    }

    /// The entity name: `@Entity("Name")`'s argument, else the class name.
    static func entityName(_ node: AttributeSyntax, _ type: ClassDeclSyntax) -> ExprSyntax {
        if case .argumentList(let arguments)? = node.arguments, let first = arguments.first,
           !first.expression.is(NilLiteralExprSyntax.self) {
            return first.expression.trimmed
        }
        return "\(literal: type.name.text)"
    }

    /// `public ` when the class is public (the conformance's witnesses must be as visible).
    static func access(_ type: ClassDeclSyntax) -> String {
        for modifier in type.modifiers {
            switch modifier.name.text {
            case "public", "open": return "public "
            case "package": return "package "
            default: continue
            }
        }
        return ""
    }

    static func properties(_ type: ClassDeclSyntax, diagnostics: inout [Diagnostic]) -> [PersistentProperty] {
        var result: [PersistentProperty] = []
        for member in type.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if case .persistent(let property) = PropertyAnalysis.analyze(variable, diagnostics: &diagnostics) {
                result.append(property)
            }
        }
        return result
    }

    /// The entity-description element of `property`.
    static func description(of property: PersistentProperty) -> ExprSyntax {
        let name = "\(literal: property.name)" as ExprSyntax
        let isOptional = property.optionality.isOptional
        let type = property.type
        switch property.storage {
        case .attribute(let known):
            var arguments = "\(name), \(known.attributeType)"
            if !isOptional { arguments += ", isOptional: false" }
            if let value = property.initialValue { arguments += ", defaultValue: \(known.attributeValue(value))" }
            arguments += optionArguments(property.attribute)
            return ".attribute(Strata.Attribute(\(raw: arguments)))"
        case .codable:
            var arguments = "\(name), .binary"
            if !isOptional { arguments += ", isOptional: false" }
            arguments += optionArguments(property.attribute)
            var call = "Strata.Attribute(\(arguments)), \(type.trimmedDescription).self"
            if let value = property.initialValue { call += ", defaultValue: \(value.trimmedDescription)" }
            return "Strata._EntityMacroSupport.codable(\(raw: call))"
        case .inferred:
            var call = "\(name), \(type.trimmedDescription).self, isOptional: \(isOptional)"
            if let value = property.initialValue { call += ", defaultValue: \(value.trimmedDescription)" }
            return "Strata._EntityMacroSupport.inferred(\(raw: call))"
        case .toOne:
            var call = "\(name), \(type.trimmedDescription).self, isOptional: \(isOptional)"
            call += relationshipArguments(property.relationship)
            return "Strata._EntityMacroSupport.toOne(\(raw: call))"
        case .toMany:
            let call = "\(name), \(type.trimmedDescription).self" + relationshipArguments(property.relationship)
            return "Strata._EntityMacroSupport.toMany(\(raw: call))"
        }
    }

    static func optionArguments(_ options: AttributeOptions?) -> String {
        guard let options else { return "" }
        var text = ""
        for label in ["minValue", "maxValue", "minLength", "maxLength", "regex"] {
            if let value = options.arguments[label] { text += ", \(label): \(value.trimmedDescription)" }
        }
        if options.isIndexed { text += ", isIndexed: true" }
        if options.isUnique { text += ", isUnique: true" }
        if let value = options.arguments["renamingIdentifier"] { text += ", renamingIdentifier: \(value.trimmedDescription)" }
        if options.preservesValueOnDeletion { text += ", preservesValueOnDeletion: true" }
        return text
    }

    static func relationshipArguments(_ options: RelationshipOptions?) -> String {
        guard let options else { return "" }
        var text = ""
        if let inverse = options.inverse { text += ", inverse: \"\(inverse)\"" }
        if let rule = options.deleteRule { text += ", deleteRule: \(rule.trimmedDescription)" }
        if let renaming = options.renamingIdentifier { text += ", renamingIdentifier: \(renaming.trimmedDescription)" }
        return text
    }
}

extension EntityMacro {
    /// The keys of the class's `#Unique<Class>([\\.a], [\\.b, \\.c])` declarations, by property
    /// name. The compiler has checked each key path against the class (`#Unique`'s parameters are
    /// `[PartialKeyPath<T>]`); this checks that each names an attribute or a to-one.
    static func uniquenessConstraints(_ type: ClassDeclSyntax, _ properties: [PersistentProperty],
                                      diagnostics: inout [Diagnostic]) -> [[String]] {
        var keys: [[String]] = []
        for member in type.memberBlock.members {
            guard let expansion = member.decl.as(MacroExpansionDeclSyntax.self), expansion.macroName.text == "Unique" else { continue }
            if let generic = expansion.genericArgumentClause?.arguments.first?.argument.trimmedDescription,
               generic != type.name.text, generic != "Self" {
                diagnostics.append(Diagnostic(node: expansion, message: EntityDiagnostic.error(
                    "#Unique<\(generic)> in class '\(type.name.text)': write #Unique<\(type.name.text)>")))
                continue
            }
            for argument in expansion.arguments {
                guard let array = argument.expression.as(ArrayExprSyntax.self) else {
                    diagnostics.append(Diagnostic(node: argument.expression, message: EntityDiagnostic.error(
                        "#Unique takes arrays of key paths: write #Unique<\(type.name.text)>([\\.a], [\\.b, \\.c])")))
                    continue
                }
                var key: [String] = []
                for element in array.elements {
                    guard let path = element.expression.as(KeyPathExprSyntax.self), path.components.count == 1,
                          let component = path.components.first?.component.as(KeyPathPropertyComponentSyntax.self) else {
                        diagnostics.append(Diagnostic(node: element.expression, message: EntityDiagnostic.error(
                            "#Unique takes key paths to the class's own properties, as \\.name")))
                        continue
                    }
                    let name = component.declName.baseName.text
                    guard let property = properties.first(where: { $0.name == name }) else {
                        diagnostics.append(Diagnostic(node: element.expression, message: EntityDiagnostic.error(
                            "#Unique names '\(name)', which is not a persistent property of '\(type.name.text)'")))
                        continue
                    }
                    if case .toMany = property.storage {
                        diagnostics.append(Diagnostic(node: element.expression, message: EntityDiagnostic.error(
                            "#Unique names to-many '\(name)': a unique key is made of attributes and to-ones")))
                        continue
                    }
                    key.append(name)
                }
                if !key.isEmpty { keys.append(key) }
            }
        }
        return keys
    }
}

/// `#Unique`: read by `@Entity`; expands to nothing (its arguments' types were checked).
public struct UniqueMacro: DeclarationMacro {
    public static func expansion(of node: some FreestandingMacroExpansionSyntax,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        []
    }
}

extension EntityMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        var diagnostics: [Diagnostic] = []
        defer { diagnostics.forEach(context.diagnose) }
        guard let type = entityClass(declaration, node, diagnostics: &diagnostics) else { return [] }
        let properties = properties(type, diagnostics: &diagnostics)
        let unique = uniquenessConstraints(type, properties, diagnostics: &diagnostics)
        guard diagnostics.isEmpty else { return [] }
        let className = type.name.text
        let access = access(type)
        let elements = properties.map { "    \(description(of: $0)),\n" }.joined()
        let list = properties.isEmpty ? "[]" : "[\n\(elements)]"
        let cases = properties.map { "    case \\\(className).\($0.name): \"\($0.name)\"\n" }.joined()
        let names = properties.map { "    case \"\($0.name)\": \\\(className).\($0.name)\n" }.joined()
        let notifications = properties.map { "    case \"\($0.name)\": Strata._observationNotify(self, \\\(className).\($0.name), willSet: willSet)\n" }.joined()
        return [
            """
            \(raw: access)static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity(\(entityName(node, type)), class: \(raw: className).self, \(raw: list)\(raw: unique.isEmpty ? "" : ", unique: \(unique)"))
            """,
            """
            \(raw: access)static var entityName: String { \(entityName(node, type)) }
            """,
            """
            \(raw: access)static func propertyName(for keyPath: AnyKeyPath) -> String? {
                switch keyPath {
            \(raw: cases)    default: nil
                }
            }
            """,
            """
            \(raw: access)static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                switch name {
            \(raw: names)    default: nil
                }
            }
            """,
            """
            \(raw: access)override func _notifyObservers(of name: String, willSet: Bool) {
                switch name {
            \(raw: notifications)    default: super._notifyObservers(of: name, willSet: willSet)
                }
            }
            """,
        ]
    }
}

extension EntityMacro: MemberAttributeMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self), let variable = member.as(VariableDeclSyntax.self) else { return [] }
        var ignored: [Diagnostic] = []
        guard case .persistent = PropertyAnalysis.analyze(variable, diagnostics: &ignored) else { return [] }
        return ["@_PersistedProperty"]
    }
}

extension EntityMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self), !protocols.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): Strata.PersistentEntity {}")]
    }
}

/// `@_PersistedProperty`: a persistent property's getter and setter, over the typed subscripts.
public struct PersistedPropertyMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self) else { return [] }
        var ignored: [Diagnostic] = []
        guard case .persistent(let property) = PropertyAnalysis.analyze(variable, diagnostics: &ignored) else { return [] }
        let key = "\(literal: property.name)" as ExprSyntax
        let label: String
        var getter: String? = nil
        switch property.storage {
        case .attribute(let known):
            label = "attribute"
            if property.optionality == .required, let fallback = property.initialValue ?? known.zero {
                getter = "self[attribute: \(key)] ?? \(fallback.trimmedDescription)"
            }
        case .codable:
            label = "codable"
            if property.optionality == .required, let fallback = property.initialValue {
                getter = "self[codable: \(key)] ?? \(fallback.trimmedDescription)"
            }
        case .inferred:
            label = "_persisted"
            if property.optionality == .required {
                getter = property.initialValue.map { "self[_persisted: \(key)] ?? \($0.trimmedDescription)" }
                    ?? "self[_persistedRequired: \(key)]"
            }
        case .toOne:
            label = "toOne"
            if property.optionality == .required { getter = "self[requiredToOne: \(key)]" }
        case .toMany:
            label = "toMany"
        }
        // The read and the write tell the `Observation` module (issue 49): `\.name` takes its
        // root from `self`, so no type name is needed here.
        let path = "\\.\(property.name)"
        return [
            "get {\nStrata._observationAccess(self, \(raw: path))\nreturn \(raw: getter ?? "self[\(label): \(key)]")\n}",
            "set { Strata._observationMutation(self, \(raw: path)) { self[\(raw: label): \(key)] = newValue } }",
        ]
    }
}

/// `@Attribute`: read by `@Entity`; on its own it only checks where it is written.
public struct AttributeMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        storedPropertyCheck("@Attribute", node, declaration, context)
        return []
    }
}

/// `@Relationship`: read by `@Entity`; on its own it only checks where it is written.
public struct RelationshipMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        storedPropertyCheck("@Relationship", node, declaration, context)
        return []
    }
}

/// `@Transient`: `@Entity` leaves the property alone; it must have an initial value.
public struct TransientMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard storedPropertyCheck("@Transient", node, declaration, context),
              let variable = declaration.as(VariableDeclSyntax.self), !variable.isStatic else { return [] }
        for binding in variable.bindings where binding.initializer == nil {
            let name = binding.pattern.trimmedDescription
            context.diagnose(Diagnostic(node: binding.pattern, message: EntityDiagnostic.error(
                "@Transient property '\(name)' needs an initial value: the context creates objects, so no initialiser sets it; write '= value' (or 'nil' for an optional)")))
        }
        return []
    }
}

/// Whether `declaration` is a stored property; a diagnostic when it is not.
@discardableResult
func storedPropertyCheck(_ macro: String, _ node: AttributeSyntax, _ declaration: some DeclSyntaxProtocol,
                         _ context: some MacroExpansionContext) -> Bool {
    guard let variable = declaration.as(VariableDeclSyntax.self) else {
        context.diagnose(Diagnostic(node: node, message: EntityDiagnostic.error(
            "\(macro) applies to a stored property of an @Entity class: remove it here")))
        return false
    }
    if variable.isComputed {
        let name = variable.propertyName ?? "this property"
        context.diagnose(Diagnostic(node: node, message: EntityDiagnostic.error(
            "\(macro) applies to a stored property, and '\(name)' is computed: remove \(macro), or make '\(name)' a stored 'var'")))
        return false
    }
    return true
}
