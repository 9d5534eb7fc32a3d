import SwiftDiagnostics
import SwiftSyntax

// What one stored property of an `@Entity` class becomes, read from its syntax alone. The
// `@Entity` member macro reports the diagnostics; the other expansions only use the result.

/// An attribute type the macro recognises by name.
enum KnownType: String, CaseIterable {
    case string = "String", int = "Int", int64 = "Int64", int16 = "Int16", int32 = "Int32"
    case double = "Double", float = "Float", bool = "Bool", date = "Date", data = "Data"
    case uuid = "UUID", url = "URL", decimal = "Decimal"

    /// The `AttributeType` case.
    var attributeType: String {
        switch self {
        case .string: ".string"
        case .int, .int64: ".int64"
        case .int16: ".int16"
        case .int32: ".int32"
        case .double: ".double"
        case .float: ".float"
        case .bool: ".bool"
        case .date: ".date"
        case .data: ".binary"
        case .uuid: ".uuid"
        case .url: ".url"
        case .decimal: ".decimal"
        }
    }

    /// What a required property without an initial value reads while it holds nothing; nil for
    /// the types without a zero, which must have an initial value (or be `T?` / `T!`).
    var zero: ExprSyntax? {
        switch self {
        case .string: "\"\""
        case .int, .int64, .int16, .int32, .double, .float, .decimal: "0"
        case .bool: "false"
        case .data: "Data()"
        case .date, .uuid, .url: nil
        }
    }

    /// The `AttributeValue` for an initial value: `.string("")`, `.int64(0)`.
    func attributeValue(_ value: ExprSyntax) -> ExprSyntax {
        let isIntegerLiteral = value.is(IntegerLiteralExprSyntax.self)
            || (value.as(PrefixOperatorExprSyntax.self).map { $0.expression.is(IntegerLiteralExprSyntax.self) } ?? false)
        if self == .int && !isIntegerLiteral { return ".int64(Int64(\(value)))" }
        return "\(raw: attributeType)(\(value))"
    }

    init?(_ type: TypeSyntax) {
        let name: String
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.genericArgumentClause == nil {
            name = identifier.name.text
        } else if let member = type.as(MemberTypeSyntax.self), member.genericArgumentClause == nil,
                  ["Swift", "Foundation"].contains(member.baseType.trimmedDescription) {
            name = member.name.text
        } else {
            return nil
        }
        self.init(rawValue: name)
    }
}

enum Optionality: Equatable {
    /// `T?`: `isOptional: true`.
    case optional
    /// `T`: `isOptional: false`, read as a value.
    case required
    /// `T!`: `isOptional: false`, read as an optional.
    case implicitlyUnwrapped

    var isOptional: Bool { self == .optional }
}

enum Storage {
    /// An attribute of a type the macro knows.
    case attribute(KnownType)
    /// `@Attribute` on another type: a `Codable` value.
    case codable
    /// Another type without `@Attribute` or `@Relationship`: the type checker picks a to-one
    /// (a `PersistentEntity`) or a `Codable` value.
    case inferred
    /// `@Relationship` on a type that isn't a `Set`.
    case toOne
    /// `Set<Destination>`; `type` is the destination.
    case toMany
}

struct AttributeOptions {
    var isIndexed = false
    var isUnique = false
    var preservesValueOnDeletion = false
    /// Labelled arguments passed on as they are: `minValue`, `maxValue`, `minLength`, `maxLength`,
    /// `regex`, `renamingIdentifier` (in `Attribute.init`'s order).
    var arguments: [String: ExprSyntax] = [:]
}

struct RelationshipOptions {
    var inverse: String?
    var deleteRule: ExprSyntax?
    var renamingIdentifier: ExprSyntax?
}

struct PersistentProperty {
    var name: String
    /// The declared type without its optionality; for a to-many, the destination.
    var type: TypeSyntax
    var optionality: Optionality
    var storage: Storage
    /// The initial value (not `nil`): the default.
    var initialValue: ExprSyntax?
    var attribute: AttributeOptions?
    var relationship: RelationshipOptions?
}

enum PropertyShape {
    case persistent(PersistentProperty)
    /// `@Transient`, computed, static, `lazy`: not the entity's.
    case ignored
    /// Reported (by the `@Entity` expansion).
    case invalid
}

extension VariableDeclSyntax {
    func attribute(named name: String) -> AttributeSyntax? {
        for element in attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let written = attribute.attributeName.trimmedDescription
            if written == name || written == "Strata.\(name)" { return attribute }
        }
        return nil
    }

    var isStatic: Bool { modifiers.contains { ["static", "class"].contains($0.name.text) } }
    var isLazy: Bool { modifiers.contains { $0.name.text == "lazy" } }

    /// True when the (single) binding has a getter: a computed property.
    var isComputed: Bool {
        guard let block = bindings.first?.accessorBlock else { return false }
        switch block.accessors {
        case .getter: return true
        case .accessors(let accessors):
            return accessors.contains { !["willSet", "didSet"].contains($0.accessorSpecifier.text) }
        }
    }

    var hasObservers: Bool { bindings.first?.accessorBlock != nil && !isComputed }

    var propertyName: String? { bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.text }
}

enum PropertyAnalysis {
    /// What `variable` becomes; problems go to `diagnostics`.
    static func analyze(_ variable: VariableDeclSyntax, diagnostics: inout [Diagnostic]) -> PropertyShape {
        if variable.isStatic || variable.isLazy { return .ignored }
        let transient = variable.attribute(named: "Transient")
        let attribute = variable.attribute(named: "Attribute")
        let relationship = variable.attribute(named: "Relationship")
        if transient != nil {
            if let other = attribute ?? relationship {
                diagnostics.append(Diagnostic(node: other, message: EntityDiagnostic.error(
                    "a @Transient property is not stored: remove @\(other.attributeName.trimmedDescription) or @Transient")))
                return .invalid
            }
            return .ignored
        }
        if variable.isComputed { return .ignored } // @Attribute / @Relationship on it: their own expansions say so.
        guard variable.bindings.count == 1, let binding = variable.bindings.first else {
            diagnostics.append(Diagnostic(node: variable, message: EntityDiagnostic.error(
                "declare one persistent property per 'var': write each on its own line")))
            return .invalid
        }
        guard let name = variable.propertyName else {
            diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.error(
                "a persistent property needs a plain name: write 'var name: Type'")))
            return .invalid
        }
        if variable.hasObservers {
            diagnostics.append(Diagnostic(node: Syntax(binding.accessorBlock) ?? Syntax(binding), message: EntityDiagnostic.error(
                "'\(name)': willSet and didSet are not supported on a persistent property: do the work where it is set, or mark it @Transient")))
            return .invalid
        }
        if variable.bindingSpecifier.tokenKind == .keyword(.let) {
            let fixed = variable.bindingSpecifier.with(\.tokenKind, .keyword(.var))
            diagnostics.append(Diagnostic(
                node: variable.bindingSpecifier,
                message: EntityDiagnostic.error("persistent property '\(name)' must be 'var' (the context sets it): write 'var \(name)', or mark it @Transient"),
                fixIt: FixIt(message: EntityFixIt("replace 'let' with 'var'"),
                             changes: [.replace(oldNode: Syntax(variable.bindingSpecifier), newNode: Syntax(fixed))])))
            return .invalid
        }
        if attribute != nil, let relationship {
            diagnostics.append(Diagnostic(node: relationship, message: EntityDiagnostic.error(
                "'\(name)' can't be both an attribute and a relationship: remove @Attribute or @Relationship")))
            return .invalid
        }

        var initialValue = binding.initializer?.value
        if let value = initialValue, value.is(NilLiteralExprSyntax.self) { initialValue = nil }

        // An accessor macro can't add a type, and a computed property must have one.
        guard let declared = binding.typeAnnotation?.type else {
            diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.error(
                "persistent property '\(name)' needs a type annotation: write 'var \(name): Type'")))
            return .invalid
        }

        // Optionality.
        var type = declared.trimmed
        var optionality = Optionality.required
        if let optional = type.as(OptionalTypeSyntax.self) {
            type = optional.wrappedType
            optionality = .optional
        } else if let iuo = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            type = iuo.wrappedType
            optionality = .implicitlyUnwrapped
        } else if let wrapped = genericArgument(of: type, named: "Optional") {
            type = wrapped
            optionality = .optional
        }
        if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            diagnostics.append(Diagnostic(node: declared, message: EntityDiagnostic.error(
                "'\(name)': a doubly optional type can't be stored: declare it 'T?'")))
            return .invalid
        }
        if let unsupported = unsupportedKind(type) {
            diagnostics.append(Diagnostic(node: declared, message: EntityDiagnostic.error(
                "'\(name)': \(unsupported) can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient")))
            return .invalid
        }

        // What it is.
        var property = PersistentProperty(name: name, type: type, optionality: optionality, storage: .inferred,
                                          initialValue: initialValue)
        let setElement = genericArgument(of: type, named: "Set")
        let arrayElement = type.as(ArrayTypeSyntax.self)?.element ?? genericArgument(of: type, named: "Array")
        if let attribute {
            guard let options = attributeOptions(attribute, diagnostics: &diagnostics) else { return .invalid }
            property.attribute = options
            property.storage = KnownType(type).map(Storage.attribute) ?? .codable
        } else if let relationship {
            if KnownType(type) != nil {
                diagnostics.append(Diagnostic(node: relationship, message: EntityDiagnostic.error(
                    "'\(name)' is a \(type.trimmedDescription) attribute, not a relationship: remove @Relationship, or use @Attribute for options")))
                return .invalid
            }
            if let arrayElement {
                diagnostics.append(Diagnostic(node: declared, message: EntityDiagnostic.error(
                    "ordered to-many relationships are not supported; use Set<\(arrayElement.trimmedDescription)>")))
                return .invalid
            }
            guard let options = relationshipOptions(relationship, name: name, destination: setElement ?? type,
                                                    diagnostics: &diagnostics) else { return .invalid }
            property.relationship = options
            property.storage = setElement == nil ? .toOne : .toMany
        } else if let known = KnownType(type) {
            property.storage = .attribute(known)
        } else if let setElement, KnownType(setElement) == nil {
            property.storage = .toMany
        }

        // Checks by kind.
        switch property.storage {
        case .toMany:
            let element = setElement ?? type
            property.type = element
            if optionality != .required {
                diagnostics.append(Diagnostic(node: declared, message: EntityDiagnostic.error(
                    "to-many relationship '\(name)' is never nil (it may be empty): declare it 'Set<\(element.trimmedDescription)>'")))
                return .invalid
            }
            if property.relationship?.inverse == nil {
                diagnostics.append(Diagnostic(node: relationship.map(Syntax.init) ?? Syntax(binding), message: EntityDiagnostic.error(
                    "to-many relationship '\(name)' needs its inverse: write @Relationship(inverse: \\\(element.trimmedDescription).property) naming the to-one on \(element.trimmedDescription) (one class's macro can't see the other class)")))
                return .invalid
            }
            if let value = initialValue {
                guard let array = value.as(ArrayExprSyntax.self), array.elements.isEmpty else {
                    diagnostics.append(Diagnostic(node: value, message: EntityDiagnostic.error(
                        "to-many relationship '\(name)' starts empty: write '= []' or no initial value")))
                    return .invalid
                }
                property.initialValue = nil
            }
        case .toOne:
            if let value = initialValue {
                diagnostics.append(Diagnostic(node: value, message: EntityDiagnostic.error(
                    "relationship '\(name)' has no initial value: remove '= \(value.trimmedDescription)'")))
                return .invalid
            }
        case .attribute(let known):
            if let value = initialValue, let reason = evaluatedOnce(value) {
                diagnostics.append(Diagnostic(node: value, message: EntityDiagnostic.error(
                    "'\(name)': the initial value is the model's default, computed once and shared by every new object, so \(reason): set '\(name)' after insert instead")))
                return .invalid
            }
            if optionality == .required && initialValue == nil && known.zero == nil {
                diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.error(
                    "required \(known.rawValue) property '\(name)' has no zero to read before it is set: give it an initial value (its default), or declare it '\(known.rawValue)?' (optional) or '\(known.rawValue)!' (required, nil until set)")))
                return .invalid
            }
        case .codable:
            if optionality == .required && initialValue == nil {
                diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.error(
                    "required Codable property '\(name)' needs an initial value (its default): write '= value', or declare it '\(type.trimmedDescription)?' (optional) or '\(type.trimmedDescription)!' (required, nil until set)")))
                return .invalid
            }
        case .inferred:
            break // The overloads decide: see `_EntityMacroSupport`.
        }
        return .persistent(property)
    }

    /// `T` of `Name<T>` (or `Swift.Name<T>`).
    static func genericArgument(of type: TypeSyntax, named name: String) -> TypeSyntax? {
        let clause: GenericArgumentClauseSyntax?
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == name {
            clause = identifier.genericArgumentClause
        } else if let member = type.as(MemberTypeSyntax.self), member.name.text == name, member.baseType.trimmedDescription == "Swift" {
            clause = member.genericArgumentClause
        } else {
            return nil
        }
        guard let arguments = clause?.arguments, arguments.count == 1, case .type(let argument) = arguments.first!.argument else {
            return nil
        }
        return argument.trimmed
    }

    /// Why `type` can't be stored, or nil.
    static func unsupportedKind(_ type: TypeSyntax) -> String? {
        if let tuple = type.as(TupleTypeSyntax.self) {
            if tuple.elements.count == 1, let only = tuple.elements.first, only.firstName == nil {
                return unsupportedKind(only.type)
            }
            return "a tuple"
        }
        if type.is(FunctionTypeSyntax.self) { return "a function" }
        if let attributed = type.as(AttributedTypeSyntax.self) {
            return attributed.baseType.is(FunctionTypeSyntax.self) ? "a function" : "an attributed type"
        }
        if type.is(SomeOrAnyTypeSyntax.self) { return "an existential or opaque type" }
        if type.is(CompositionTypeSyntax.self) { return "a protocol composition" }
        if type.is(MetatypeTypeSyntax.self) { return "a metatype" }
        if let array = type.as(ArrayTypeSyntax.self) { return unsupportedKind(array.element) }
        if let dictionary = type.as(DictionaryTypeSyntax.self) {
            return unsupportedKind(dictionary.key) ?? unsupportedKind(dictionary.value)
        }
        return nil
    }

    /// Why an initial value would surprise as a default computed once (`Date()`, `UUID()`), or nil.
    static func evaluatedOnce(_ value: ExprSyntax) -> String? {
        var text = value.trimmedDescription
        if text.hasPrefix("Foundation.") { text.removeFirst("Foundation.".count) }
        switch text {
        case "Date()", "Date.now", ".now", "Date.init()", ".init()": return "'\(value.trimmedDescription)' would be the time the model was built"
        case "UUID()", "UUID.init()": return "'\(value.trimmedDescription)' would be one UUID for all objects"
        default: return nil
        }
    }

    static func attributeOptions(_ node: AttributeSyntax, diagnostics: inout [Diagnostic]) -> AttributeOptions? {
        var options = AttributeOptions()
        guard case .argumentList(let arguments)? = node.arguments else { return options }
        for argument in arguments {
            guard let label = argument.label?.text else {
                let member = argument.expression.as(MemberAccessExprSyntax.self)?.declName.baseName.text
                if member == "indexed" {
                    options.isIndexed = true
                } else if member == "preserveValueOnDeletion" {
                    options.preservesValueOnDeletion = true
                } else if member == "unique" {
                    options.isUnique = true
                } else {
                    diagnostics.append(Diagnostic(node: argument.expression, message: EntityDiagnostic.error(
                        "'\(argument.expression.trimmedDescription)' is not an @Attribute option: the options are .indexed, .unique and .preserveValueOnDeletion")))
                    return nil
                }
                continue
            }
            options.arguments[label] = argument.expression.trimmed
        }
        return options
    }

    static func relationshipOptions(_ node: AttributeSyntax, name: String, destination: TypeSyntax,
                                    diagnostics: inout [Diagnostic]) -> RelationshipOptions? {
        var options = RelationshipOptions()
        guard case .argumentList(let arguments)? = node.arguments else { return options }
        for argument in arguments {
            switch argument.label?.text {
            case "inverse":
                if argument.expression.is(NilLiteralExprSyntax.self) { continue }
                guard let keyPath = argument.expression.as(KeyPathExprSyntax.self),
                      let last = keyPath.components.last?.component.as(KeyPathPropertyComponentSyntax.self),
                      keyPath.components.count == 1 else {
                    diagnostics.append(Diagnostic(node: argument.expression, message: EntityDiagnostic.error(
                        "the inverse of '\(name)' is a key path to one property of \(destination.trimmedDescription): write \\\(destination.trimmedDescription).property")))
                    return nil
                }
                guard let root = keyPath.root, root.trimmedDescription == destination.trimmedDescription else {
                    diagnostics.append(Diagnostic(node: argument.expression, message: EntityDiagnostic.error(
                        "the inverse of '\(name)' is a property of \(destination.trimmedDescription): write \\\(destination.trimmedDescription).\(last.declName.baseName.text)")))
                    return nil
                }
                options.inverse = last.declName.baseName.text
            case "deleteRule": options.deleteRule = argument.expression.trimmed
            case "renamingIdentifier": options.renamingIdentifier = argument.expression.trimmed
            default: break // The macro's signature admits no other label.
            }
        }
        return options
    }
}

struct EntityDiagnostic: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    static func error(_ message: String, id: String = "entity") -> EntityDiagnostic {
        EntityDiagnostic(message: message, diagnosticID: MessageID(domain: "StrataMacros", id: id), severity: .error)
    }
}

struct EntityFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "StrataMacros", id: message) }
    init(_ message: String) { self.message = message }
}
