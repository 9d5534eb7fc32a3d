public import Foundation
internal import StrataSQLite

// Foundation `Predicate<T>` → ``Condition``. The expression tree is walked once, through the
// conformances in FoundationPredicate+Expressions.swift, into the same tree the format language
// parses into, so SQL and in-memory evaluation keep their one semantics. Whatever has no
// equivalent throws ``PredicateTranslationError`` here, before any SQL runs.

/// A Foundation `Predicate` or `SortDescriptor` that has no Strata equivalent.
///
/// Thrown when the predicate or sort descriptor is translated, that is before any SQL runs.
public enum PredicateTranslationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `expression` (Foundation's description of the part that doesn't translate, shortened)
    /// has no equivalent, for `reason`.
    case unsupported(expression: String, reason: String)

    public var description: String {
        switch self {
        case let .unsupported(expression, reason): "cannot translate `\(expression)` for Strata: \(reason)"
        }
    }
}

extension Condition {
    /// The condition a Foundation predicate means, for fetching `T`.
    ///
    /// ```swift
    /// let fruit = try Condition(#Predicate<Good> { $0.category?.name == "Fruit" && $0.number > 3 })
    /// // category.name == "Fruit" AND number > 3
    /// ```
    ///
    /// Key paths become property names through ``PersistentEntity/propertyName(for:)`` (for a
    /// hop through a to-one relationship, the destination class's), captured values become
    /// constants, and constant parts (arithmetic on captured values, say) are evaluated by
    /// Foundation first. The Predicates article lists the shapes that translate.
    ///
    /// - Throws: ``PredicateTranslationError`` naming the first part of the expression with no
    ///   Strata equivalent (arithmetic on a key path, a computed property, a regex, …).
    public init<T: PersistentEntity>(_ predicate: Predicate<T>) throws {
        let translator = PredicateTranslator()
        translator.bind(predicate.variable.key, to: .path(.root))
        self = try translator.condition(predicate.expression)
    }
}

// MARK: - Terms

/// A key path in Strata's syntax, relative to the predicate's object (or, inside
/// `contains(where:)`/`allSatisfy`, to the element: see ``KeyPathTerm/member``).
struct KeyPathTerm: Equatable {
    enum Kind: Equatable {
        /// The object itself (`SELF`) or a to-one relationship: compares as an object.
        case object
        case attribute(AttributeType)
        case toMany
        /// `@count` of a to-many relationship.
        case count
    }

    var components: [String]
    var kind: Kind
    /// True when the value is nil whenever a to-one relationship on the way is: a path
    /// through to-one relationships to an attribute or an object. An optional chain over such a
    /// path needs no nil test of its own.
    var propagatesNil: Bool

    static let root = KeyPathTerm(components: [], kind: .object, propagatesNil: true)

    /// The first component of a path read from the element of a to-many relationship inside
    /// `contains(where:)` or `allSatisfy`. No property can have this name; ``PredicateTranslator/quantify``
    /// replaces it with the relationship's path and adds the quantifier.
    static let member = "\u{1}element"
    static let memberTerm = KeyPathTerm(components: [member], kind: .object, propagatesNil: true)

    var string: String { components.isEmpty ? "SELF" : components.joined(separator: ".") }
    var isMember: Bool { components.first == KeyPathTerm.member }
    /// Whether the value can be nil (SELF, a count and a to-many relationship can't).
    var canBeNil: Bool { !components.isEmpty && !isSelfOfMember && kind != .count && kind != .toMany }
    private var isSelfOfMember: Bool { components == [KeyPathTerm.member] }

    func appending(_ name: String, _ kind: Kind) -> KeyPathTerm {
        let keepsNil = switch kind {
        case .object, .attribute: propagatesNil
        case .toMany, .count: false
        }
        return KeyPathTerm(components: components + [name], kind: kind, propagatesNil: keepsNil)
    }

    func extends(_ other: KeyPathTerm) -> Bool { components.starts(with: other.components) }
}

/// What a translated sub-expression stands for.
indirect enum Term {
    /// A value known now: a captured value, a literal, or a constant part Foundation evaluated.
    /// Boxed with the expression's static type (an `Optional` stays an `Optional`).
    case value(Any)
    /// A value read from the object through a key path.
    case path(KeyPathTerm)
    /// A Boolean that depends on the object.
    case condition(Condition)
    /// `test ? whenTrue : whenFalse`: ternaries, `??` (`x == nil ? fallback : x`) and optional
    /// chains whose result isn't nil exactly when their base is (`base == nil ? nil : result`).
    /// A comparison with it is split into one comparison per branch.
    case conditional(Condition, Term, Term)
    /// The `ComparisonResult` of comparing two strings with `options` (`caseInsensitiveCompare`).
    case ordering(Term, Term, Comparison.Options)
}

protocol OptionalValue { var wrappedValue: Any? { get } }
extension Optional: OptionalValue {
    var wrappedValue: Any? {
        guard case .some(let value) = self else { return nil }
        return (value as? any OptionalValue).map(\.wrappedValue) ?? value
    }
}

/// A value with its optionals unwrapped; nil for `Optional.none` at any depth.
func unwrappedValue(_ value: Any) -> Any? {
    if let optional = value as? any OptionalValue { return optional.wrappedValue }
    return value
}

// MARK: - Translator

/// Walks one predicate. Holds what each variable stands for: the predicate's object, an
/// optional's unwrapped value, the element of a to-many relationship or of a captured sequence.
final class PredicateTranslator {
    private var scopes: [PredicateExpressions.VariableID: Term] = [:]
    /// Variables bound to constants, for evaluating constant parts with Foundation.
    private(set) var bindings = PredicateBindings()

    func bind(_ key: PredicateExpressions.VariableID, to term: Term) { scopes[key] = term }

    func bindConstant<Value>(_ variable: PredicateExpressions.Variable<Value>, _ value: Value) {
        scopes[variable.key] = .value(value)
        bindings = bindings.binding(variable, to: value)
    }

    func lookup<Value>(_ variable: PredicateExpressions.Variable<Value>) throws -> Term {
        guard let term = scopes[variable.key] else {
            throw unsupported(variable, "the variable is not bound: it is not this predicate's input or a closure parameter inside it")
        }
        return term
    }

    func term(_ expression: any PredicateExpression) throws -> Term {
        if let node = expression as? any StrataTranslatableExpression { return try node.strataTerm(self) }
        // An expression Strata has no translation for is still fine when it's constant
        // (a subscript or a cast of a captured value): Foundation evaluates it now. If it reads
        // the object, evaluating fails on the unbound variable.
        do {
            return .value(try expression.evaluate(bindings))
        } catch let error as PredicateError where error.debugDescription == PredicateError.undefinedVariable.debugDescription {
            // (Not `error == .undefinedVariable`: Foundation's == loops forever for that case.)
            throw unsupported(expression, "Strata has no equivalent of \(Self.typeName(expression)) on a value read from the object")
        } catch {
            throw unsupported(expression, "evaluating its constant value failed: \(error)")
        }
    }

    func condition(_ expression: any PredicateExpression) throws -> Condition {
        try condition(try term(expression), in: expression)
    }

    /// Evaluates a sub-expression whose inputs are all constants.
    func fold<E: PredicateExpression>(_ expression: E) throws -> Term {
        do {
            return .value(try expression.evaluate(bindings))
        } catch {
            throw unsupported(expression, "evaluating its constant value failed: \(error)")
        }
    }

    func unsupported(_ expression: Any, _ reason: String) -> PredicateTranslationError {
        var text = String(describing: expression)
        if text.count > 300 { text = String(text.prefix(300)) + "…" }
        return .unsupported(expression: text, reason: reason)
    }

    static func typeName(_ expression: Any) -> String {
        let name = "\(type(of: expression))"
        return "PredicateExpressions." + (name.firstIndex(of: "<").map { String(name[..<$0]) } ?? name)
    }

    // MARK: Conditions and operands

    /// A Boolean term as a condition.
    func condition(_ term: Term, in node: Any) throws -> Condition {
        switch term {
        case .condition(let condition):
            return condition
        case .value(let value):
            guard let bool = unwrappedValue(value) as? Bool else { throw unsupported(node, "its value is not a Bool") }
            return .constant(bool)
        case .path(let path):
            guard case .attribute(.bool) = path.kind else { throw unsupported(node, "\(path.string) is not a Boolean attribute") }
            return .comparison(Comparison(.keyPath(path.string), .equal, .constant(.bool(true))))
        case let .conditional(test, whenTrue, whenFalse):
            return branch(test, try condition(whenTrue, in: node), try condition(whenFalse, in: node))
        case .ordering:
            throw unsupported(node, "a ComparisonResult is not a condition: compare it with ==")
        }
    }

    /// Two constants, at least one a string, compared with Strata's semantics (Unicode scalars,
    /// `[c]`/`[d]` folding, nil false except for `==`/`!=`); nil when Strata would refuse the
    /// comparison (mixed types) or the operator is one this doesn't evaluate.
    func constantStringComparison(_ a: Any, _ op: Comparison.Operator, _ b: Any, _ options: Comparison.Options) -> Bool? {
        let x = unwrappedValue(a).map { ($0 as? Substring).map(String.init) ?? $0 }, y = unwrappedValue(b).map { ($0 as? Substring).map(String.init) ?? $0 }
        switch (x, y) {
        case (nil, nil): return op == .equal ? true : op == .notEqual ? false : nil
        case (nil, _), (_, nil):
            switch op {
            case .equal: return false
            case .notEqual: return true
            case .less, .lessOrEqual, .greater, .greaterOrEqual, .contains, .beginsWith, .endsWith, .like: return false
            default: return nil
            }
        default: break
        }
        guard let l = x as? String, let r = y as? String else { return nil }
        let lhs = StringMatching.fold(l, options), rhs = StringMatching.fold(r, options)
        switch op {
        case .equal: return lhs.utf8.elementsEqual(rhs.utf8)
        case .notEqual: return !lhs.utf8.elementsEqual(rhs.utf8)
        case .less: return lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
        case .lessOrEqual: return !rhs.utf8.lexicographicallyPrecedes(lhs.utf8)
        case .greater: return rhs.utf8.lexicographicallyPrecedes(lhs.utf8)
        case .greaterOrEqual: return !lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
        case .contains, .beginsWith, .endsWith, .like: return StringMatching.evaluate(op, options, .text(lhs), .text(rhs))
        default: return nil
        }
    }

    private func isString(_ value: Any) -> Bool {
        let value = unwrappedValue(value)
        return value is String || value is Substring
    }

    func operand(_ term: Term, in node: Any) throws -> Operand {
        switch term {
        case .value(let value):
            return .constant(try conditionValue(value, in: node))
        case .path(let path):
            if path.kind == .toMany {
                throw unsupported(node, "\(visiblePath(path)) is a to-many relationship: use contains(where:), allSatisfy or .count")
            }
            return .keyPath(path.string)
        case .condition, .conditional, .ordering:
            throw unsupported(node, "this value can't be an operand of a Strata comparison")
        }
    }

    func conditionValue(_ value: Any, in node: Any) throws -> ConditionValue {
        guard let value = unwrappedValue(value) else { return .null }
        if let converted = ConditionValue(argument: value) {
            if case .double(let number) = converted, number.isNaN { throw unsupported(node, "NaN is not a value a condition can hold") }
            return converted
        }
        throw unsupported(node, "a \(type(of: value)) is not a value Strata conditions hold (numbers, Bool, String, Date, Data, UUID, URL, Decimal, ObjectID)")
    }

    private func visiblePath(_ path: KeyPathTerm) -> String {
        path.isMember ? "the element's " + path.components.dropFirst().joined(separator: ".") : path.string
    }

    // MARK: Comparisons

    /// `l op r`. A conditional side is split into its branches; two constants are compared by
    /// `fold` (Swift's own comparison of the two values).
    func compare(_ l: Term, _ op: Comparison.Operator, _ r: Term, options: Comparison.Options = [], in node: Any,
                 fold: (Any, Any) throws -> Bool) throws -> Condition {
        switch (l, r) {
        case let (.conditional(test, a, b), _):
            return branch(test, try compare(a, op, r, options: options, in: node, fold: fold),
                          try compare(b, op, r, options: options, in: node, fold: fold))
        case let (_, .conditional(test, a, b)):
            return branch(test, try compare(l, op, a, options: options, in: node, fold: fold),
                          try compare(l, op, b, options: options, in: node, fold: fold))
        case let (.value(a), .value(b)):
            // Strings keep Strata's semantics (scalars) next to the key paths they came with
            // (`(name ?? "é") == "e\u{301}"`); other constants compare the same either way.
            if isString(a) || isString(b) {
                if let result = constantStringComparison(a, op, b, options) { return .constant(result) }
                return .comparison(Comparison(.constant(try conditionValue(a, in: node)), op, .constant(try conditionValue(b, in: node)), options: options))
            }
            return .constant(try fold(a, b))
        case (.condition, _), (_, .condition):
            guard op == .equal || op == .notEqual else { throw unsupported(node, "Booleans have no order") }
            let equal = try booleanEquality(l, r, in: node)
            return op == .equal ? equal : negated(equal)
        case let (.ordering(a, b, orderingOptions), .value(result)), let (.value(result), .ordering(a, b, orderingOptions)):
            guard op == .equal || op == .notEqual, let result = unwrappedValue(result) as? ComparisonResult else {
                throw unsupported(node, "a ComparisonResult translates only compared with == or != to .orderedSame, .orderedAscending or .orderedDescending")
            }
            let stringOp: Comparison.Operator = switch result {
            case .orderedSame: .equal
            case .orderedAscending: .less
            case .orderedDescending: .greater
            }
            let compared = try compare(a, stringOp, b, options: orderingOptions, in: node) { _, _ in
                throw unsupported(node, "comparing two constants this way needs Foundation's own string comparison")
            }
            return op == .equal ? compared : negated(compared)
        default:
            return .comparison(Comparison(try operand(l, in: node), op, try operand(r, in: node), options: options))
        }
    }

    /// `l == r` for Booleans.
    private func booleanEquality(_ l: Term, _ r: Term, in node: Any) throws -> Condition {
        for (constant, other) in [(l, r), (r, l)] {
            guard case .value(let value) = constant else { continue }
            guard let bool = unwrappedValue(value) as? Bool else { return .constant(false) }     // nil: a Bool never equals it
            let condition = try condition(other, in: node)
            return bool ? condition : negated(condition)
        }
        let a = try condition(l, in: node), b = try condition(r, in: node)
        return .or([.and([a, b]), .and([negated(a), negated(b)])])
    }

    /// `element IN items`, for `items.contains(element)` on a captured sequence.
    func membership(_ element: Term, _ items: [Any], in node: Any, fold: (Any) throws -> Bool) throws -> Condition {
        switch element {
        case let .conditional(test, a, b):
            return branch(test, try membership(a, items, in: node, fold: fold), try membership(b, items, in: node, fold: fold))
        case .value(let value) where !isString(value):
            return .constant(try fold(value))
        case .value(let value) where items.allSatisfy { isString($0) || unwrappedValue($0) == nil }:
            return .constant(items.contains { constantStringComparison(value, .equal, $0, []) == true })
        case .condition(let condition):
            let bools = items.compactMap { unwrappedValue($0) as? Bool }
            switch (bools.contains(true), bools.contains(false)) {
            case (true, true): return .constant(true)
            case (true, false): return condition
            case (false, true): return negated(condition)
            case (false, false): return .constant(false)
            }
        case .value, .path, .ordering:
            let list = try items.map { Operand.constant(try conditionValue($0, in: node)) }
            return .comparison(Comparison(try operand(element, in: node), .in, .list(list)))
        }
    }

    /// `low <= element <= high` for a closed range of constants.
    func between(_ element: Term, _ low: Any, _ high: Any, in node: Any, fold: (Any) throws -> Bool) throws -> Condition {
        switch element {
        case let .conditional(test, a, b):
            return branch(test, try between(a, low, high, in: node, fold: fold), try between(b, low, high, in: node, fold: fold))
        case .value(let value) where !isString(value):
            return .constant(try fold(value))
        default:
            let bounds = Operand.list([.constant(try conditionValue(low, in: node)), .constant(try conditionValue(high, in: node))])
            return .comparison(Comparison(try operand(element, in: node), .between, bounds))
        }
    }

    /// `x ?? fallback`.
    func coalesce(_ term: Term, _ fallback: Term) -> Term {
        switch term {
        case .value(let value):
            return unwrappedValue(value) == nil ? fallback : term
        case .path(let path):
            return path.canBeNil ? .conditional(nilTest(path), fallback, term) : term
        case let .conditional(test, a, b):
            return .conditional(test, coalesce(a, fallback), coalesce(b, fallback))
        case .condition, .ordering:
            return term
        }
    }

    /// `x!`: Foundation's evaluate throws on nil; Strata compares the nil (see the Predicates article).
    func forceUnwrap(_ term: Term, in node: Any) throws -> Term {
        switch term {
        case .value(let value):
            guard unwrappedValue(value) != nil else { throw unsupported(node, "it force-unwraps nil") }
            return term
        case let .conditional(test, a, b):
            if case .value(let value) = a, unwrappedValue(value) == nil { return try forceUnwrap(b, in: node) }
            if case .value(let value) = b, unwrappedValue(value) == nil { return try forceUnwrap(a, in: node) }
            return .conditional(test, try forceUnwrap(a, in: node), try forceUnwrap(b, in: node))
        case .path, .condition, .ordering:
            return term
        }
    }

    func nilTest(_ path: KeyPathTerm) -> Condition {
        .comparison(Comparison(.keyPath(path.string), .equal, .constant(.null)))
    }

    // MARK: Building conditions

    /// `!condition`, simplified for the conditions this translator builds.
    func negated(_ condition: Condition) -> Condition {
        switch condition {
        case .constant(let value): return .constant(!value)
        case .not(let inner): return inner
        case .comparison(var comparison) where comparison.quantifier == nil && (comparison.op == .equal || comparison.op == .notEqual):
            // Two-valued and null-safe: NOT (a == b) is a != b.
            comparison.op = comparison.op == .equal ? .notEqual : .equal
            return .comparison(comparison)
        default: return .not(condition)
        }
    }

    /// `test ? whenTrue : whenFalse` as a condition, in its smallest form.
    func branch(_ test: Condition, _ whenTrue: Condition, _ whenFalse: Condition) -> Condition {
        if case .constant(let value) = test { return value ? whenTrue : whenFalse }
        if whenTrue == whenFalse { return whenTrue }
        switch (whenTrue, whenFalse) {
        case (.constant(true), .constant(false)): return test
        case (.constant(false), .constant(true)): return negated(test)
        case (.constant(false), _): return conjoin(negated(test), whenFalse)
        case (_, .constant(false)): return conjoin(test, whenTrue)
        case (.constant(true), _): return disjoin(test, whenFalse)
        case (_, .constant(true)): return disjoin(negated(test), whenTrue)
        default: return .or([conjoin(test, whenTrue), conjoin(negated(test), whenFalse)])
        }
    }

    /// `guard AND condition`; drops a `path != nil` guard that the condition implies.
    func conjoin(_ guard_: Condition, _ condition: Condition) -> Condition {
        if let path = nilTested(guard_, op: .notEqual), rejectsNil(condition, path) { return condition }
        if case .and(let terms) = condition { return .and([guard_] + terms) }
        return .and([guard_, condition])
    }

    /// `guard OR condition`; drops a `path == nil` guard that the condition implies.
    func disjoin(_ guard_: Condition, _ condition: Condition) -> Condition {
        if let path = nilTested(guard_, op: .equal), acceptsNil(condition, path) { return condition }
        if case .or(let terms) = condition { return .or([guard_] + terms) }
        return .or([guard_, condition])
    }

    /// The path `condition` compares with nil using `op` (`path == nil` / `path != nil`).
    private func nilTested(_ condition: Condition, op: Comparison.Operator) -> String? {
        guard case .comparison(let c) = condition, c.quantifier == nil, c.op == op, c.options.isEmpty else { return nil }
        switch (c.lhs, c.rhs) {
        case (.keyPath(let path), .constant(.null)), (.constant(.null), .keyPath(let path)): return path
        default: return nil
        }
    }

    /// Whether `operand` is `path` or a path through it that is nil when it is (no aggregate).
    private func reads(_ operand: Operand, _ path: String) -> Bool {
        guard case .keyPath(let other) = operand else { return false }
        return other == path || (other.hasPrefix(path + ".") && !other.contains("@"))
    }

    private func extendsPath(_ operand: Operand, _ path: String) -> Bool {
        guard case .keyPath(let other) = operand else { return false }
        return other == path || other.hasPrefix(path + ".")
    }

    /// Whether `condition` is false whenever `path` is nil.
    func rejectsNil(_ condition: Condition, _ path: String) -> Bool {
        switch condition {
        case .comparison(let c):
            if let quantifier = c.quantifier {
                // No members when the path on the way is nil: ANY is false.
                return quantifier == .anyOf && extendsPath(c.lhs, path)
            }
            let left = reads(c.lhs, path), right = reads(c.rhs, path)
            guard left || right else { return false }
            switch c.op {
            case .less, .lessOrEqual, .greater, .greaterOrEqual, .between, .contains, .beginsWith, .endsWith, .like, .matches:
                return true
            case .equal:
                let other = left ? c.rhs : c.lhs
                if case .constant(let value) = other { return value != .null }
                return false
            case .in:
                guard left, case .list(let items) = c.rhs else { return false }
                return !items.contains(.constant(.null))
            case .notEqual:
                return false
            }
        case .and(let terms): return terms.contains { rejectsNil($0, path) }
        case .or(let terms): return !terms.isEmpty && terms.allSatisfy { rejectsNil($0, path) }
        case .constant(let value): return !value
        case .not: return false
        }
    }

    /// Whether `condition` is true whenever `path` is nil.
    func acceptsNil(_ condition: Condition, _ path: String) -> Bool {
        switch condition {
        case .comparison(let c):
            if let quantifier = c.quantifier {
                // No members: ALL and NONE are true.
                return quantifier != .anyOf && extendsPath(c.lhs, path)
            }
            let left = reads(c.lhs, path), right = reads(c.rhs, path)
            guard left || right else { return false }
            let other = left ? c.rhs : c.lhs
            switch c.op {
            case .notEqual:
                if case .constant(let value) = other { return value != .null }
                return false
            case .equal:
                return other == .constant(.null)
            case .in:
                guard left, case .list(let items) = c.rhs else { return false }
                return items.contains(.constant(.null))
            default:
                return false
            }
        case .and(let terms): return !terms.isEmpty && terms.allSatisfy { acceptsNil($0, path) }
        case .or(let terms): return terms.contains { acceptsNil($0, path) }
        case .constant(let value): return value
        case .not: return false
        }
    }

    /// `lhs && rhs` the way the format language builds it: a left-nested chain is one flat AND.
    func and(_ lhs: Condition, _ rhs: Condition) -> Condition {
        switch (lhs, rhs) {
        case (.constant(false), _), (_, .constant(false)): return .constant(false)
        case (.constant(true), _): return rhs
        case (_, .constant(true)): return lhs
        case (.and(let terms), _): return .and(terms + [rhs])
        default: return .and([lhs, rhs])
        }
    }

    func or(_ lhs: Condition, _ rhs: Condition) -> Condition {
        switch (lhs, rhs) {
        case (.constant(true), _), (_, .constant(true)): return .constant(true)
        case (.constant(false), _): return rhs
        case (_, .constant(false)): return lhs
        case (.or(let terms), _): return .or(terms + [rhs])
        default: return .or([lhs, rhs])
        }
    }

    // MARK: Key paths

    /// One key path step from `base`, whose type is `rootType`.
    func keyPath(_ keyPath: AnyKeyPath, of base: Term, rootType: Any.Type, collection: CollectionKeyPath?, in node: Any) throws -> Term {
        switch base {
        case .path(let path):
            switch path.kind {
            case .object:
                guard let entity = rootType as? any PersistentEntity.Type else {
                    throw unsupported(node, "\(rootType) is not a PersistentEntity class")
                }
                return try step(entity, keyPath, from: path, in: node)
            case .toMany:
                switch collection {
                case .count?: return .path(path.appending("@count", .count))
                case .isEmpty?:
                    return .condition(.comparison(Comparison(.keyPath(path.appending("@count", .count).string), .equal, .constant(.int(0)))))
                default:
                    throw unsupported(node, "of a to-many relationship only .count and .isEmpty translate (and contains(where:) and allSatisfy over its members)")
                }
            case .attribute(let type):
                if collection == .isEmpty, type == .string {
                    return .condition(.comparison(Comparison(.keyPath(path.string), .equal, .constant(.string("")))))
                }
                if collection == .count {
                    throw unsupported(node, "Strata conditions have no string length")
                }
                throw unsupported(node, "Strata conditions can't read a property of an attribute's value")
            case .count:
                throw unsupported(node, "Strata conditions can't read a property of a count")
            }
        case let .conditional(test, a, b):
            return .conditional(test, try self.keyPath(keyPath, of: a, rootType: rootType, collection: collection, in: node),
                                try self.keyPath(keyPath, of: b, rootType: rootType, collection: collection, in: node))
        case .value(let value):
            return .value(value[keyPath: keyPath] as Any)
        case .condition, .ordering:
            throw unsupported(node, "a key path on this value has no Strata equivalent")
        }
    }

    private func step<E: PersistentEntity>(_ entity: E.Type, _ keyPath: AnyKeyPath, from path: KeyPathTerm, in node: Any) throws -> Term {
        if keyPath == \E.objectID as AnyKeyPath { return .path(path) }          // the object itself
        guard let name = E.propertyName(for: keyPath) else {
            throw unsupported(node, "\(keyPath) is not a persistent property of \(E.self) (\(E.self).propertyName(for:) returns nil)")
        }
        let description = E.entityDescription
        if let attribute = description.attribute(named: name) { return .path(path.appending(name, .attribute(attribute.type))) }
        if let relationship = description.relationship(named: name) {
            return .path(path.appending(name, relationship.isToMany ? .toMany : .object))
        }
        throw unsupported(node, "\(E.self).propertyName(for:) names '\(name)', which entity \(description.name) doesn't have")
    }

    // MARK: Quantifiers

    /// `contains(where:)` (`any`) or `allSatisfy` over `sequence`: a to-many relationship becomes
    /// ANY/ALL/NONE comparisons, a captured sequence one test per element.
    func quantified(any: Bool, over sequence: Term, in node: Any,
                    elements: (Any) -> [Any]?, bindElement: (Any) -> Void, bindMember: (Term) -> Void,
                    test: () throws -> Term) throws -> Term {
        switch sequence {
        case .value(let value):
            guard let items = elements(value) else { throw unsupported(node, "its sequence is not a sequence") }
            var terms: [Condition] = []
            for item in items {
                bindElement(item)
                let condition = try condition(try test(), in: node)
                if case .constant(let result) = condition {
                    if result == any { return .value(any) }     // decided, as Foundation stops here
                    continue
                }
                terms.append(condition)
            }
            if terms.isEmpty { return .value(!any) }
            return .condition(terms.count == 1 ? terms[0] : (any ? .or(terms) : .and(terms)))
        case .path(let path):
            guard path.kind == .toMany else {
                throw unsupported(node, "contains(where:) and allSatisfy translate over to-many relationships and captured sequences")
            }
            guard !path.isMember else {
                throw unsupported(node, "it nests contains(where:) or allSatisfy: a Strata key path takes one to-many step")
            }
            bindMember(.path(.memberTerm))
            let condition = try condition(try test(), in: node)
            return .condition(try quantify(condition, any: any, over: path, in: node))
        case let .conditional(test_, a, b):
            return .conditional(test_, try quantified(any: any, over: a, in: node, elements: elements, bindElement: bindElement, bindMember: bindMember, test: test),
                                try quantified(any: any, over: b, in: node, elements: elements, bindElement: bindElement, bindMember: bindMember, test: test))
        case .condition, .ordering:
            throw unsupported(node, "its sequence is not a to-many relationship or a captured sequence")
        }
    }

    /// ANY (`any`) or ALL members of `relationship` satisfy `condition`, whose comparisons on the
    /// element read paths starting with ``KeyPathTerm/member``.
    func quantify(_ condition: Condition, any: Bool, over relationship: KeyPathTerm, in node: Any) throws -> Condition {
        guard mentionsMember(condition) else {
            // Doesn't read the element: holds for ANY member if it holds and there is one.
            let count = Operand.keyPath(relationship.appending("@count", .count).string)
            switch (condition, any) {
            case (.constant(true), true): return .comparison(Comparison(count, .greater, .constant(.int(0))))
            case (.constant(false), false): return .comparison(Comparison(count, .equal, .constant(.int(0))))
            case (.constant(let value), _): return .constant(value)
            case (_, true): return .and([condition, .comparison(Comparison(count, .greater, .constant(.int(0))))])
            case (_, false): return .or([condition, .comparison(Comparison(count, .equal, .constant(.int(0))))])
            }
        }
        switch condition {
        case .constant:
            return condition                                    // unreachable: constants don't read the element
        case .comparison(let comparison):
            return .comparison(try quantified(comparison, any ? .anyOf : .allOf, over: relationship, in: node))
        case .not(let inner):
            // ANY (NOT x) = NOT ALL x; ALL (NOT x) = NOT ANY x = NONE x.
            let quantified = try quantify(inner, any: !any, over: relationship, in: node)
            if !any, case .comparison(var comparison) = quantified, comparison.quantifier == .anyOf {
                comparison.quantifier = .noneOf
                return .comparison(comparison)
            }
            return .not(quantified)
        case .and(let terms):
            if !any { return .and(try terms.map { try quantify($0, any: false, over: relationship, in: node) }) }
            let reading = terms.filter(mentionsMember)
            guard reading.count == 1 else {
                throw unsupported(node, "contains(where:) with && of several tests of the element: Strata's ANY applies to one comparison (there is no SUBQUERY)")
            }
            return .and(try terms.map { mentionsMember($0) ? try quantify($0, any: true, over: relationship, in: node) : $0 })
        case .or(let terms):
            if any { return .or(try terms.map { try quantify($0, any: true, over: relationship, in: node) }) }
            let reading = terms.filter(mentionsMember)
            if reading.count > 1, let fused = fusedAlternatives(reading) {
                let others = terms.filter { !mentionsMember($0) }
                let quantified = try fused(relationship, node)
                return others.isEmpty ? quantified : .or(others + [quantified])
            }
            guard reading.count == 1 else {
                throw unsupported(node, "allSatisfy with || of several tests of the element: Strata's ALL applies to one comparison (there is no SUBQUERY)")
            }
            return .or(try terms.map { mentionsMember($0) ? try quantify($0, any: false, over: relationship, in: node) : $0 })
        }
    }

    private func quantified(_ comparison: Comparison, _ quantifier: Comparison.Quantifier, over relationship: KeyPathTerm,
                            in node: Any) throws -> Comparison {
        var c = comparison
        guard c.quantifier == nil else {
            throw unsupported(node, "it nests contains(where:) or allSatisfy: a Strata key path takes one to-many step")
        }
        let left = memberSuffix(c.lhs), right = memberSuffix(c.rhs)
        if left != nil && right != nil {
            throw unsupported(node, "it compares two values of the element: Strata's ANY/ALL compare the element's value with a constant")
        }
        if right != nil {
            let mirrored: Comparison.Operator? = switch c.op {
            case .equal: .equal
            case .notEqual: .notEqual
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            default: nil
            }
            guard let mirrored else {
                throw unsupported(node, "Strata's ANY/ALL need the element's value on the left of \(c.op.rawValue)")
            }
            (c.lhs, c.rhs, c.op) = (c.rhs, c.lhs, mirrored)
        }
        guard let suffix = memberSuffix(c.lhs) else { return c }
        if case .keyPath = c.rhs {
            throw unsupported(node, "it compares the element with a value of the outer object: Strata's ANY/ALL compare with a constant")
        }
        c.lhs = .keyPath(relationship.string + suffix)
        c.quantifier = quantifier
        return c
    }

    /// ALL members satisfy one of `alternatives` (comparisons of one value of the element), as one
    /// quantified comparison, for the shapes `??` produces: `(x ?? 0) > 5` is `x == nil OR x > 5`,
    /// which holds for every member when none has `x <= 5` (NONE x <= 5); `x == nil OR x == 3` is
    /// `x IN {nil, 3}`. Nil when the alternatives have another shape.
    private func fusedAlternatives(_ alternatives: [Condition]) -> ((KeyPathTerm, Any) throws -> Condition)? {
        var comparisons: [Comparison] = []
        for alternative in alternatives {
            guard case .comparison(let c) = alternative, c.quantifier == nil, c.options.isEmpty,
                  memberSuffix(c.lhs) != nil, case .constant = c.rhs else { return nil }
            comparisons.append(c)
        }
        guard let path = comparisons.first?.lhs, comparisons.allSatisfy({ $0.lhs == path }) else { return nil }
        if comparisons.allSatisfy({ $0.op == .equal }) {
            let list = Comparison(path, .in, .list(comparisons.map(\.rhs)))
            return { relationship, node in .comparison(try self.quantified(list, .allOf, over: relationship, in: node)) }
        }
        guard comparisons.count == 2, let nilTest = comparisons.firstIndex(where: { $0.op == .equal && $0.rhs == .constant(.null) }) else {
            return nil
        }
        var ordering = comparisons[1 - nilTest]
        let complement: Comparison.Operator? = switch ordering.op {
        case .less: .greaterOrEqual
        case .lessOrEqual: .greater
        case .greater: .lessOrEqual
        case .greaterOrEqual: .less
        default: nil
        }
        guard let complement, ordering.rhs != .constant(.null) else { return nil }
        // A member fails `x == nil OR x > c` exactly when x is not nil and not > c: x <= c.
        ordering.op = complement
        return { relationship, node in .comparison(try self.quantified(ordering, .noneOf, over: relationship, in: node)) }
    }

    /// For a path read from the element: what follows the member marker (`""` or `.title`).
    private func memberSuffix(_ operand: Operand) -> String? {
        guard case .keyPath(let path) = operand, path.hasPrefix(KeyPathTerm.member) else { return nil }
        return String(path.dropFirst(KeyPathTerm.member.count))
    }

    private func mentionsMember(_ condition: Condition) -> Bool {
        switch condition {
        case .constant: false
        case .not(let inner): mentionsMember(inner)
        case .and(let terms), .or(let terms): terms.contains(where: mentionsMember)
        case .comparison(let c): memberSuffix(c.lhs) != nil || memberSuffix(c.rhs) != nil
        }
    }
}

/// What Foundation's `PredicateExpressions.KeyPath.kind` says about a collection key path.
enum CollectionKeyPath { case count, isEmpty }

// MARK: - ObjectID in predicates

/// An ``ObjectID`` is `Codable` so that a Foundation predicate can capture one
/// (`#Predicate<Good> { $0.category?.objectID == fruitID }`): Foundation's predicates hold only
/// `Codable` values. It encodes as its entity name and primary key.
extension ObjectID: Codable {
    private enum CodingKeys: String, CodingKey { case entityName, primaryKey }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(entityName: try container.decode(String.self, forKey: .entityName),
                  primaryKey: try container.decode(Int64.self, forKey: .primaryKey))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entityName, forKey: .entityName)
        try container.encode(primaryKey, forKey: .primaryKey)
    }
}
