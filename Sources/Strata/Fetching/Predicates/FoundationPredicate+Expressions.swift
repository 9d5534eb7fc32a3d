internal import Foundation

// One conformance per Foundation expression type Strata translates. An expression type without
// one translates only when it is constant (Foundation evaluates it); see PredicateTranslator.term.

/// A Foundation predicate expression Strata knows how to translate.
protocol StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term
}

// MARK: Leaves

extension PredicateExpressions.Variable: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term { try translator.lookup(self) }
}

extension PredicateExpressions.Value: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term { .value(value) }
}

extension PredicateExpressions.NilLiteral: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term { .value(Wrapped?.none as Any) }
}

extension PredicateExpressions.KeyPath: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let base = try translator.term(root)
        if case .value = base { return try translator.fold(self) }
        let collection: CollectionKeyPath? = switch kind {
        case .collectionCount?: .count
        case .collectionIsEmpty?: .isEmpty
        default: nil
        }
        return try translator.keyPath(keyPath, of: base, rootType: Root.Output.self, collection: collection, in: self)
    }
}

// MARK: Comparisons

extension PredicateExpressions.Equal: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs), r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .condition(try translator.compare(l, .equal, r, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return a == b
        })
    }
}

extension PredicateExpressions.NotEqual: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs), r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .condition(try translator.compare(l, .notEqual, r, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return a != b
        })
    }
}

extension PredicateExpressions.Comparison: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs), r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        let strataOp: Strata.Comparison.Operator =
            op == .lessThan ? .less : op == .lessThanOrEqual ? .lessOrEqual : op == .greaterThan ? .greater : .greaterOrEqual
        return .condition(try translator.compare(l, strataOp, r, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            switch strataOp {
            case .less: return a < b
            case .lessOrEqual: return a <= b
            case .greater: return a > b
            default: return a >= b
            }
        })
    }
}

// MARK: Logic

extension PredicateExpressions.Conjunction: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs)
        // Foundation doesn't evaluate the right side after a false left side; neither do we.
        if case .value(let value) = l, unwrappedValue(value) as? Bool == false { return l }
        let r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .condition(translator.and(try translator.condition(l, in: lhs), try translator.condition(r, in: rhs)))
    }
}

extension PredicateExpressions.Disjunction: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs)
        if case .value(let value) = l, unwrappedValue(value) as? Bool == true { return l }
        let r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .condition(translator.or(try translator.condition(l, in: lhs), try translator.condition(r, in: rhs)))
    }
}

extension PredicateExpressions.Negation: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let inner = try translator.term(wrapped)
        if case .value = inner { return try translator.fold(self) }
        let condition = try translator.condition(inner, in: wrapped)
        if case .constant(let value) = condition { return .value(!value) }
        return .condition(.not(condition))
    }
}

extension PredicateExpressions.Conditional: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let condition = try translator.term(test)
        if case .value(let value) = condition {
            // Only the branch Foundation would evaluate.
            guard let bool = unwrappedValue(value) as? Bool else { throw translator.unsupported(self, "its test is not a Bool") }
            return try translator.term(bool ? trueBranch : falseBranch)
        }
        return .conditional(try translator.condition(condition, in: test), try translator.term(trueBranch), try translator.term(falseBranch))
    }
}

// MARK: Optionals

extension PredicateExpressions.OptionalFlatMap: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        try flatMap(try translator.term(wrapped), translator)
    }

    private func flatMap(_ base: Term, _ translator: PredicateTranslator) throws -> Term {
        switch base {
        case .value(let value):
            guard let unwrapped = value as? Wrapped else { return .value(Result?.none as Any) }
            translator.bindConstant(variable, unwrapped)
            return try translator.term(transform)
        case .path(let path):
            translator.bind(variable.key, to: base)
            let result = try translator.term(transform)
            // `good.category?.name`: a path through the optional is nil when it is.
            if case .path(let resultPath) = result, resultPath.propagatesNil, resultPath.extends(path) { return result }
            guard path.canBeNil else { return result }
            return .conditional(translator.nilTest(path), .value(Result?.none as Any), result)
        case let .conditional(test, a, b):
            return .conditional(test, try flatMap(a, translator), try flatMap(b, translator))
        case .condition, .ordering:
            throw translator.unsupported(self, "its optional is not a value or a key path")
        }
    }
}

extension PredicateExpressions.NilCoalesce: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(lhs), r = try translator.term(rhs)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return translator.coalesce(l, r)
    }
}

extension PredicateExpressions.ForcedUnwrap: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let inner = try translator.term(self.inner)
        if case .value = inner { return try translator.fold(self) }
        return try translator.forceUnwrap(inner, in: self)
    }
}

// MARK: Sequences and strings

extension PredicateExpressions.SequenceContains: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let s = try translator.term(sequence), e = try translator.term(element)
        if case .value = s, case .value = e { return try translator.fold(self) }
        guard case .value(let value) = s, let items = value as? LHS.Output else {
            throw translator.unsupported(self, "contains(_:) translates on a captured sequence (IN); test a to-many relationship with contains(where:)")
        }
        return .condition(try translator.membership(e, items.map { $0 as Any }, in: self) { candidate in
            guard let candidate = candidate as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return items.contains(candidate)
        })
    }
}

extension PredicateExpressions.SequenceContainsWhere: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        try translator.quantified(
            any: true, over: try translator.term(sequence), in: self,
            elements: { ($0 as? LHS.Output).map { $0.map { $0 as Any } } },
            bindElement: { translator.bindConstant(variable, $0 as! Element) },
            bindMember: { translator.bind(variable.key, to: $0) },
            test: { try translator.term(test) })
    }
}

extension PredicateExpressions.SequenceAllSatisfy: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        try translator.quantified(
            any: false, over: try translator.term(sequence), in: self,
            elements: { ($0 as? LHS.Output).map { $0.map { $0 as Any } } },
            bindElement: { translator.bindConstant(variable, $0 as! Element) },
            bindMember: { translator.bind(variable.key, to: $0) },
            test: { try translator.term(test) })
    }
}

/// Whether a type is a string (the string operators translate for strings only).
private func isString(_ type: Any.Type) -> Bool { type == String.self || type == Substring.self }

/// `base.contains(other)` with the overload Foundation's evaluate uses (the collection search).
private func collectionContains<Base: Collection, Other: Collection>(_ base: Base, _ other: Other) -> Bool
where Base.Element == Other.Element, Base.Element: Equatable {
    base.contains(other)
}

extension PredicateExpressions.SequenceStartsWith: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let b = try translator.term(base), p = try translator.term(prefix)
        if case .value = b, case .value = p { return try translator.fold(self) }
        guard isString(Base.Output.self), isString(Prefix.Output.self) else {
            throw translator.unsupported(self, "starts(with:) translates for strings only (BEGINSWITH)")
        }
        return .condition(try translator.compare(b, .beginsWith, p, in: self) { a, b in
            guard let a = a as? Base.Output, let b = b as? Prefix.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return a.starts(with: b)
        })
    }
}

extension PredicateExpressions.CollectionContainsCollection: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let b = try translator.term(base), o = try translator.term(other)
        if case .value = b, case .value = o { return try translator.fold(self) }
        guard isString(Base.Output.self), isString(Other.Output.self) else {
            throw translator.unsupported(self, "contains(_:) of a collection translates for strings only (CONTAINS)")
        }
        return .condition(try translator.compare(b, .contains, o, in: self) { a, b in
            guard let a = a as? Base.Output, let b = b as? Other.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return collectionContains(a, b)
        })
    }
}

// MARK: Ranges

/// A range expression whose bounds may read the object.
protocol RangeBoundsExpression {
    var lowerBound: any PredicateExpression { get }
    var upperBound: any PredicateExpression { get }
    var isClosed: Bool { get }
}

extension PredicateExpressions.Range: RangeBoundsExpression {
    var lowerBound: any PredicateExpression { lower }
    var upperBound: any PredicateExpression { upper }
    var isClosed: Bool { false }
}

extension PredicateExpressions.ClosedRange: RangeBoundsExpression {
    var lowerBound: any PredicateExpression { lower }
    var upperBound: any PredicateExpression { upper }
    var isClosed: Bool { true }
}

extension PredicateExpressions.RangeExpressionContains: StrataTranslatableExpression {
    typealias Bound = Element.Output

    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let e = try translator.term(element)
        if let bounds = range as? any RangeBoundsExpression {
            let low = try translator.term(bounds.lowerBound), high = try translator.term(bounds.upperBound)
            if case .value = low, case .value = high, case .value = e { return try translator.fold(self) }
            if case .value(let l) = low, case .value(let h) = high, bounds.isClosed {
                guard let l = l as? Bound, let h = h as? Bound, l <= h else {
                    throw translator.unsupported(self, "its range has a lower bound above its upper bound")
                }
                return .condition(try translator.between(e, l, h, in: self) { try ordered(l, $0, h, closed: true) })
            }
            return .condition(try bounded(e, low, high, closed: bounds.isClosed, translator))
        }
        let r = try translator.term(range)
        guard case .value(let value) = r else { throw translator.unsupported(self, "its range is not a constant or a range expression") }
        if case .value = e { return try translator.fold(self) }
        switch value {
        case let range as Swift.ClosedRange<Bound>:
            return .condition(try translator.between(e, range.lowerBound, range.upperBound, in: self) {
                try ordered(range.lowerBound, $0, range.upperBound, closed: true)
            })
        case let range as Swift.Range<Bound>:
            return .condition(try bounded(e, .value(range.lowerBound), .value(range.upperBound), closed: false, translator))
        case let range as PartialRangeFrom<Bound>:
            return .condition(try compare(e, .greaterOrEqual, .value(range.lowerBound), translator))
        case let range as PartialRangeThrough<Bound>:
            return .condition(try compare(e, .lessOrEqual, .value(range.upperBound), translator))
        case let range as PartialRangeUpTo<Bound>:
            return .condition(try compare(e, .less, .value(range.upperBound), translator))
        default:
            throw translator.unsupported(self, "ranges of type \(type(of: value)) don't translate")
        }
    }

    private func ordered(_ low: Bound, _ value: Any, _ high: Bound, closed: Bool) throws -> Bool {
        guard let value = value as? Bound else { throw PredicateTranslationError.unsupported(expression: "\(self)", reason: "a constant has an unexpected type") }
        return low <= value && (closed ? value <= high : value < high)
    }

    private func bounded(_ e: Term, _ low: Term, _ high: Term, closed: Bool, _ translator: PredicateTranslator) throws -> Condition {
        // The branches of `(x ?? fallback)` as a whole, so `x == nil` is tested once.
        if case let .conditional(test, a, b) = e {
            return translator.branch(test, try bounded(a, low, high, closed: closed, translator), try bounded(b, low, high, closed: closed, translator))
        }
        return translator.and(try compare(e, .greaterOrEqual, low, translator), try compare(e, closed ? .lessOrEqual : .less, high, translator))
    }

    private func compare(_ l: Term, _ op: Strata.Comparison.Operator, _ r: Term, _ translator: PredicateTranslator) throws -> Condition {
        try translator.compare(l, op, r, in: self) { a, b in
            guard let a = a as? Bound, let b = b as? Bound else { throw translator.unsupported(self, "a constant has an unexpected type") }
            switch op {
            case .less: return a < b
            case .lessOrEqual: return a <= b
            case .greaterOrEqual: return a >= b
            default: return a > b
            }
        }
    }
}

// MARK: Arithmetic (constants only)

private enum IntegerOperation { case add, subtract, multiply, divide, remainder }

/// `a op b` when both are integers of one type: `.some(nil)` when it overflows or divides by
/// zero (Foundation's evaluate would trap), `nil` when they aren't integers.
private func checkedIntegerArithmetic(_ a: Any, _ b: Any, _ op: IntegerOperation) -> Any?? {
    guard let a = a as? any FixedWidthInteger else { return .none }
    func run<I: FixedWidthInteger>(_ a: I) -> Any? {
        guard let b = b as? I else { return nil }
        let (result, overflow) = switch op {
        case .add: a.addingReportingOverflow(b)
        case .subtract: a.subtractingReportingOverflow(b)
        case .multiply: a.multipliedReportingOverflow(by: b)
        case .divide: a.dividedReportingOverflow(by: b)
        case .remainder: a.remainderReportingOverflow(dividingBy: b)
        }
        return overflow ? nil : result
    }
    return .some(run(a))
}

/// Applies `operation` to constants, through the branches of a conditional; nil when a side
/// reads the object.
private func mapConstants(_ l: Term, _ r: Term, _ operation: (Any, Any) throws -> Any) rethrows -> Term? {
    switch (l, r) {
    case let (.value(a), .value(b)):
        return .value(try operation(a, b))
    case let (.conditional(test, a, b), _):
        guard let x = try mapConstants(a, r, operation), let y = try mapConstants(b, r, operation) else { return nil }
        return .conditional(test, x, y)
    case let (_, .conditional(test, a, b)):
        guard let x = try mapConstants(l, a, operation), let y = try mapConstants(l, b, operation) else { return nil }
        return .conditional(test, x, y)
    default:
        return nil
    }
}

private let noArithmetic = "arithmetic on a value read from the object: Strata conditions compare values, they don't compute them (move the arithmetic to the constant side)"

extension PredicateTranslator {
    /// Constant integer arithmetic, checked; other numbers go through `fallback`.
    fileprivate func arithmetic(_ l: Term, _ r: Term, _ op: IntegerOperation, in node: Any,
                                fallback: (Any, Any) throws -> Any) throws -> Term {
        let result = try mapConstants(l, r) { a, b in
            guard let checked = checkedIntegerArithmetic(a, b, op) else { return try fallback(a, b) }
            guard let value = checked else { throw unsupported(node, "it overflows or divides by zero") }
            return value
        }
        guard let result else { throw unsupported(node, noArithmetic) }
        return result
    }
}

extension PredicateExpressions.Arithmetic: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let op: IntegerOperation = self.op == .add ? .add : self.op == .subtract ? .subtract : .multiply
        return try translator.arithmetic(try translator.term(lhs), try translator.term(rhs), op, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            switch op {
            case .add: return a + b
            case .subtract: return a - b
            default: return a * b
            }
        }
    }
}

extension PredicateExpressions.IntDivision: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        try translator.arithmetic(try translator.term(lhs), try translator.term(rhs), .divide, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output, b != 0 else { throw translator.unsupported(self, "it divides by zero") }
            return a / b
        }
    }
}

extension PredicateExpressions.IntRemainder: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        try translator.arithmetic(try translator.term(lhs), try translator.term(rhs), .remainder, in: self) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output, b != 0 else { throw translator.unsupported(self, "it divides by zero") }
            return a % b
        }
    }
}

extension PredicateExpressions.FloatDivision: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let result = try mapConstants(try translator.term(lhs), try translator.term(rhs)) { a, b in
            guard let a = a as? LHS.Output, let b = b as? RHS.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return a / b
        }
        guard let result else { throw translator.unsupported(self, noArithmetic) }
        return result
    }
}

extension PredicateExpressions.UnaryMinus: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        func negate(_ term: Term) throws -> Term? {
            switch term {
            case .value(let value):
                // Checked for integers: negating Int.min traps in Foundation's evaluate.
                if let integer = value as? any FixedWidthInteger {
                    func negative<I: FixedWidthInteger>(_ a: I) -> I? {
                        let (result, overflow) = I.zero.subtractingReportingOverflow(a)
                        return overflow ? nil : result
                    }
                    guard let result = negative(integer) else { throw translator.unsupported(self, "it overflows") }
                    return .value(result)
                }
                guard let number = value as? Wrapped.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
                return .value(-number)
            case let .conditional(test, a, b):
                guard let x = try negate(a), let y = try negate(b) else { return nil }
                return .conditional(test, x, y)
            default:
                return nil
            }
        }
        guard let result = try negate(try translator.term(wrapped)) else { throw translator.unsupported(self, noArithmetic) }
        return result
    }
}

// MARK: Darwin-only expressions

#if canImport(Darwin)
// Foundation on Apple platforms has these (swift-foundation builds them only in the framework).

extension PredicateExpressions.StringCaseInsensitiveCompare: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(root), r = try translator.term(other)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .ordering(l, r, [.caseInsensitive])
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: StrataTranslatableExpression {
    func strataTerm(_ translator: PredicateTranslator) throws -> Term {
        let l = try translator.term(root), r = try translator.term(other)
        if case .value = l, case .value = r { return try translator.fold(self) }
        return .condition(try translator.compare(l, .contains, r, options: [.caseInsensitive, .diacriticInsensitive], in: self) { a, b in
            guard let a = a as? Root.Output, let b = b as? Other.Output else { throw translator.unsupported(self, "a constant has an unexpected type") }
            return a.localizedStandardContains(b)
        })
    }
}
#endif
