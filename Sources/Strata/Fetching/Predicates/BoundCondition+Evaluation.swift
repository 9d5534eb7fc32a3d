internal import StrataSQLite

/// Something a condition can be evaluated on in memory: a managed object (with its unsaved
/// changes) or a row snapshot with a way to follow relationships.
protocol ConditionSubject {
    var primaryKey: Int64 { get }
    /// The attribute's value as SQLite stores it.
    func storedValue(attribute index: Int) throws -> SQLiteValue
    func foreignKey(toOne index: Int) throws -> Int64?
    /// The destination of a to-one, or `nil` (none, or its row no longer exists — as SQL's subquery).
    func follow(toOne index: Int) throws -> Self?
    /// The members of a to-many relationship.
    func members(toMany index: Int) throws -> [Self]
}

extension BoundCondition {
    /// Evaluates with the same two-valued semantics as the SQL back end.
    func evaluate<Subject: ConditionSubject>(_ subject: Subject) throws -> Bool {
        switch self {
        case .constant(let value): return value
        case .not(let inner): return try !inner.evaluate(subject)
        case .and(let terms): return try terms.allSatisfy { try $0.evaluate(subject) }
        case .or(let terms): return try terms.contains { try $0.evaluate(subject) }
        case let .compare(lhs, op, options, rhs):
            let l = try lhs.value(subject, options)
            switch op {
            case .equal: return ScalarOrder.isEqual(l, try rhs.value(subject, options))
            case .notEqual: return !ScalarOrder.isEqual(l, try rhs.value(subject, options))
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                let r = try rhs.value(subject, options)
                if l.isNull || r.isNull { return false }
                let order = ScalarOrder.compare(l, r)
                switch op {
                case .less: return order < 0
                case .lessOrEqual: return order <= 0
                case .greater: return order > 0
                default: return order >= 0
                }
            case .between:
                guard case .list(let bounds) = rhs, !l.isNull, !bounds[0].isNull, !bounds[1].isNull else { return false }
                return ScalarOrder.compare(l, bounds[0]) >= 0 && ScalarOrder.compare(l, bounds[1]) <= 0
            case .in:
                guard case .list(let items) = rhs else { return false }
                return items.contains { ScalarOrder.isEqual(l, $0) }
            case .contains, .beginsWith, .endsWith, .like, .matches:
                return StringMatching.evaluate(op, options, l, try rhs.value(subject, options))
            }
        case let .quantified(quantifier, owner, many, inner):
            guard let ownerSubject = try BoundOperand.walk(owner, from: subject) else {
                return quantifier != .anyOf
            }
            let members = try ownerSubject.members(toMany: many.index)
            switch quantifier {
            case .anyOf: return try members.contains { try inner.evaluate($0) }
            case .allOf: return try members.allSatisfy { try inner.evaluate($0) }
            case .noneOf: return try !members.contains { try inner.evaluate($0) }
            }
        }
    }
}

extension BoundOperand {
    static func walk<Subject: ConditionSubject>(_ hops: [ToOneHop], from subject: Subject) throws -> Subject? {
        var current = subject
        for hop in hops {
            guard let next = try current.follow(toOne: hop.index) else { return nil }
            current = next
        }
        return current
    }

    func value<Subject: ConditionSubject>(_ subject: Subject, _ options: Comparison.Options) throws -> SQLiteValue {
        switch self {
        case .constant(let value): return value
        case .list: return .null
        case .path(let path): return StringMatching.fold(try path.value(subject), options)
        case .aggregate(let aggregate):
            guard let owner = try BoundOperand.walk(aggregate.prefix, from: subject) else {
                return StringMatching.fold(aggregate.function == .count ? .integer(0) : (aggregate.function == .sum ? .real(0) : .null), options)
            }
            let members = try owner.members(toMany: aggregate.many.index).sorted { $0.primaryKey < $1.primaryKey }
            if aggregate.function == .count { return .integer(Int64(members.count)) }
            let values = try members.compactMap { member -> SQLiteValue? in
                let value = try aggregate.value!.value(member)
                return value.isNull ? nil : value
            }
            switch aggregate.function {
            case .count: return .integer(Int64(members.count))
            case .sum, .avg:
                // SQLite's total() and avg(): a double sum in row order.
                var sum = 0.0
                for value in values {
                    switch value {
                    case .integer(let v): sum += Double(v)
                    case .real(let v): sum += v
                    default: break
                    }
                }
                if aggregate.function == .sum { return .real(sum) }
                return values.isEmpty ? .null : .real(sum / Double(values.count))
            case .min:
                return StringMatching.fold(values.min { ScalarOrder.compare($0, $1) < 0 } ?? .null, options)
            case .max:
                return StringMatching.fold(values.max { ScalarOrder.compare($0, $1) < 0 } ?? .null, options)
            }
        }
    }
}

extension BoundPath {
    func value<Subject: ConditionSubject>(_ subject: Subject) throws -> SQLiteValue {
        guard let end = try BoundOperand.walk(hops, from: subject) else { return .null }
        switch terminal {
        case .attribute(let info, let index):
            let value = try end.storedValue(attribute: index)
            if info.attributes[index].type == .decimal, case .text(let text) = value {
                // CAST(text AS REAL), as the SQL back end does.
                return .real(Double(text) ?? 0)
            }
            return value
        case .foreignKey(_, let index): return try end.foreignKey(toOne: index).map(SQLiteValue.integer) ?? .null
        case .primaryKey: return .integer(end.primaryKey)
        }
    }
}
