internal import Foundation
internal import StrataSQLite

/// A condition that can't run against an entity: a type mismatch or an unsupported shape.
public struct ConditionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var entity: String
    public var predicate: String
    public var reason: String
    public var description: String { "predicate `\(predicate)` on \(entity): \(reason)" }
}

/// What a value is, for type checking comparisons when a condition is bound to an entity.
enum ValueKind: Equatable, CustomStringConvertible {
    case null, numeric, bool, string, date, binary, uuid
    case object(String)

    init(_ type: AttributeType) {
        switch type {
        case .int16, .int32, .int64, .double, .float, .decimal: self = .numeric
        case .bool: self = .bool
        case .string, .url: self = .string
        case .date: self = .date
        case .binary: self = .binary
        case .uuid: self = .uuid
        }
    }

    init(_ value: ConditionValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .bool
        case .int, .double, .decimal: self = .numeric
        case .string: self = .string
        case .date: self = .date
        case .data: self = .binary
        case .uuid: self = .uuid
        case .objectID(let id): self = .object(id.entityName)
        }
    }

    func isCompatible(with other: ValueKind) -> Bool {
        switch (self, other) {
        case (.null, _), (_, .null): true
        case (.bool, .numeric), (.numeric, .bool): true
        default: self == other
        }
    }

    var description: String {
        switch self {
        case .null: "nil"
        case .numeric: "a number"
        case .bool: "a Bool"
        case .string: "a string"
        case .date: "a date"
        case .binary: "binary data"
        case .uuid: "a UUID"
        case .object(let entity): "a \(entity)"
        }
    }
}

/// A to-one step of a key path.
struct ToOneHop {
    let owner: EntityInfo
    let index: Int
    let destination: EntityInfo
}

/// A to-many step of a key path.
struct ToManyHop {
    let owner: EntityInfo
    let index: Int
    let destination: EntityInfo
    var storage: ToManyStorage { owner.toManyStorage[index] }
}

/// A key path through to-one relationships to one value.
struct BoundPath {
    enum Terminal {
        case attribute(EntityInfo, Int)
        /// A to-one relationship compared as an object: its foreign key.
        case foreignKey(EntityInfo, Int)
        /// `SELF`, or the end of a path at an object: the primary key.
        case primaryKey(EntityInfo)
    }
    var hops: [ToOneHop]
    var terminal: Terminal
}

/// `@count`, `@sum`, `@avg`, `@min`, `@max` over a to-many relationship.
struct BoundAggregate {
    enum Function: String { case count, sum, avg, min, max }
    var prefix: [ToOneHop]
    var many: ToManyHop
    var function: Function
    /// The summed / averaged / compared value, relative to the destination (nil for @count).
    var value: BoundPath?
}

indirect enum BoundOperand {
    case constant(SQLiteValue)
    case list([SQLiteValue])
    case path(BoundPath)
    case aggregate(BoundAggregate)
}

indirect enum BoundCondition {
    case constant(Bool)
    case not(BoundCondition)
    case and([BoundCondition])
    case or([BoundCondition])
    case compare(BoundOperand, Comparison.Operator, Comparison.Options, BoundOperand)
    /// A comparison inside a to-many relationship: evaluated for each member.
    case quantified(Comparison.Quantifier, owner: [ToOneHop], many: ToManyHop, BoundCondition)
}

/// Binds a ``Condition`` to an entity: resolves key paths, checks types, converts constants to
/// their stored form. Everything that can be wrong with a condition is found here, before any SQL.
struct ConditionBinder {
    let schema: Schema
    let root: EntityInfo
    /// The whole condition, printed only when an error names it.
    let condition: Condition
    /// Every entity the condition reads, for deciding whether pending changes matter.
    private(set) var entities: Set<String> = []
    /// The entities the condition reaches through a relationship (the root too when a key path
    /// leads back to it).
    private(set) var reached: Set<String> = []

    private mutating func reach(_ entity: String) {
        entities.insert(entity)
        reached.insert(entity)
    }

    init(schema: Schema, root: EntityInfo, condition: Condition) {
        self.schema = schema
        self.root = root
        self.condition = condition
        entities = [root.name]
    }

    func fail(_ reason: String) -> ConditionError {
        ConditionError(entity: root.name, predicate: condition.description, reason: reason)
    }

    mutating func bind(_ condition: Condition) throws -> BoundCondition {
        try bind(condition, on: root)
    }

    private mutating func bind(_ condition: Condition, on entity: EntityInfo) throws -> BoundCondition {
        switch condition {
        case .constant(let value): return .constant(value)
        case .not(let inner):
            // Logic is two-valued, so NOT NOT x is exactly x: collapse chains of NOT.
            if case .not(let twice) = inner { return try bind(twice, on: entity) }
            return .not(try bind(inner, on: entity))
        case .and(let terms): return .and(try terms.map { try bind($0, on: entity) })
        case .or(let terms): return .or(try terms.map { try bind($0, on: entity) })
        case .comparison(let comparison): return try bind(comparison, on: entity)
        }
    }

    private mutating func bind(_ c: Comparison, on entity: EntityInfo) throws -> BoundCondition {
        if case .variable(let name) = c.lhs { throw fail("$\(name) has no value: call substituting(_:) first") }
        if case .variable(let name) = c.rhs { throw fail("$\(name) has no value: call substituting(_:) first") }
        // `%@ IN toMany` and `toMany CONTAINS %@`: membership, as ANY SELF == value.
        if c.quantifier == nil, c.op == .in, case .keyPath(let path) = c.rhs, let split = try splitToMany(path, on: entity),
           split.rest.isEmpty {
            return try quantified(.anyOf, split, Comparison(.keyPath("SELF"), .equal, c.lhs, options: c.options), on: entity)
        }
        if c.quantifier == nil, c.op == .contains, case .keyPath(let path) = c.lhs, let split = try splitToMany(path, on: entity),
           split.rest.isEmpty {
            return try quantified(.anyOf, split, Comparison(.keyPath("SELF"), .equal, c.rhs, options: c.options), on: entity)
        }
        if let quantifier = c.quantifier {
            guard case .keyPath(let path) = c.lhs, let split = try splitToMany(path, on: entity) else {
                throw fail("\(quantifier.rawValue) needs a key path through a to-many relationship on its left, found \(c.lhs)")
            }
            switch c.rhs {
            case .constant, .list: break
            default: throw fail("the right side of \(quantifier.rawValue) must be a value, found \(c.rhs)")
            }
            var inner = c
            inner.quantifier = nil
            inner.lhs = .keyPath(split.rest.isEmpty ? "SELF" : split.rest.joined(separator: "."))
            return try quantified(quantifier, split, inner, on: entity)
        }
        return try bindPlain(c, on: entity)
    }

    private mutating func quantified(_ quantifier: Comparison.Quantifier,
                                     _ split: (prefix: [ToOneHop], many: ToManyHop, rest: [String]),
                                     _ inner: Comparison, on entity: EntityInfo) throws -> BoundCondition {
        let bound = try bindPlain(inner, on: split.many.destination)
        return .quantified(quantifier, owner: split.prefix, many: split.many, bound)
    }

    /// Splits `a.b.toMany.c.d` at its to-many step. `nil` when the path has none.
    private mutating func splitToMany(_ path: String, on entity: EntityInfo) throws -> (prefix: [ToOneHop], many: ToManyHop, rest: [String])? {
        var current = entity
        var prefix: [ToOneHop] = []
        let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for (offset, segment) in segments.enumerated() {
            switch current.slot(segment) {
            case .toOne(let index)?:
                let destination = schema.infos[current.toOnes[index].destination]!
                prefix.append(ToOneHop(owner: current, index: index, destination: destination))
                reach(destination.name)
                current = destination
            case .toMany(let index)?:
                let destination = schema.infos[current.toManys[index].destination]!
                reach(destination.name)
                return (prefix, ToManyHop(owner: current, index: index, destination: destination), Array(segments[(offset + 1)...]))
            default:
                return nil
            }
        }
        return nil
    }

    private mutating func bindPlain(_ c: Comparison, on entity: EntityInfo) throws -> BoundCondition {
        let (boundLHS, lhsKind) = try operand(c.lhs, on: entity)
        let (boundRHS, rhsKind) = try operand(c.rhs, on: entity)
        var lhs = boundLHS, rhs = boundRHS
        let stringOptions = c.options
        switch c.op {
        case .in:
            guard case .list = rhs else { throw fail("IN needs a list on its right ({a, b} or an array argument), found \(c.rhs)") }
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else { throw fail("BETWEEN needs exactly two bounds {low, high}") }
        default:
            if case .list = rhs { throw fail("\(c.op.rawValue) cannot compare with a list; use IN") }
            if case .list = lhs { throw fail("a list can only be on the right of IN or BETWEEN") }
        }
        if c.op.isStringOperator {
            for (kind, side) in [(lhsKind, c.lhs), (rhsKind, c.rhs)] where kind != .string && kind != .null {
                throw fail("\(c.op.rawValue) compares strings, but \(side) is \(kind)")
            }
            if c.op == .matches {
                guard case .constant(.text(let pattern)) = rhs else { throw fail("MATCHES needs a constant regular expression on its right") }
                guard RegexCache.isValid(pattern, options: c.options) else { throw fail("MATCHES pattern /\(pattern)/ is not a valid regular expression") }
            }
        } else {
            guard lhsKind.isCompatible(with: rhsKind) else {
                throw fail("cannot compare \(c.lhs) (\(lhsKind)) with \(c.rhs) (\(rhsKind))")
            }
            if case .object = lhsKind, ![.equal, .notEqual, .in].contains(c.op) {
                throw fail("objects can only be compared with ==, != or IN")
            }
            if !stringOptions.isEmpty && lhsKind != .string && rhsKind != .string {
                throw fail("[c] and [d] apply to strings only")
            }
        }
        // Fold constants once here; columns are folded by the same function in SQL and in memory.
        // A MATCHES pattern is never folded (`\D` must not become `\d`): [c] is a regex option there.
        if !stringOptions.isEmpty {
            lhs = foldConstant(lhs, stringOptions)
            if c.op != .matches { rhs = foldConstant(rhs, stringOptions) }
        }
        return .compare(lhs, c.op, stringOptions, rhs)
    }

    private func foldConstant(_ operand: BoundOperand, _ options: Comparison.Options) -> BoundOperand {
        switch operand {
        case .constant(let value): .constant(StringMatching.fold(value, options))
        case .list(let values): .list(values.map { StringMatching.fold($0, options) })
        default: operand
        }
    }

    /// Resolves an operand; returns it with the kind of value it produces.
    private mutating func operand(_ operand: Operand, on entity: EntityInfo) throws -> (BoundOperand, ValueKind) {
        switch operand {
        case .constant(let value):
            return (.constant(try storage(value)), ValueKind(value))
        case .list(let items):
            var values: [SQLiteValue] = []
            var kind = ValueKind.null
            for item in items {
                guard case .constant(let value) = item else { throw fail("lists may hold only values, found \(item)") }
                let itemKind = ValueKind(value)
                guard kind.isCompatible(with: itemKind) else { throw fail("list mixes \(kind) and \(itemKind)") }
                if itemKind != .null { kind = itemKind }
                values.append(try storage(value))
            }
            return (.list(values), kind)
        case .variable(let name):
            throw fail("$\(name) has no value: call substituting(_:) first")
        case .keyPath(let path):
            return try keyPath(path, on: entity)
        }
    }

    private func storage(_ value: ConditionValue) throws -> SQLiteValue {
        switch value {
        case .null: return .null
        case .bool(let v): return .integer(v ? 1 : 0)
        case .int(let v): return .integer(v)
        case .double(let v):
            guard !v.isNaN else { throw fail("NaN cannot be compared") }
            return .real(v)
        case .string(let v): return .text(v)
        case .date(let v): return .real(v.timeIntervalSinceReferenceDate)
        case .data(let v): return .blob(v)
        case .uuid(let v): return .blob(withUnsafeBytes(of: v.uuid) { Data($0) })
        case .decimal(let v): return .real(Double(NSDecimalNumber(decimal: v).description(withLocale: posixLocale)) ?? .nan)
        case .objectID(let id):
            guard schema.infos[id.entityName] != nil else { throw fail("object ID \(id) names an unknown entity") }
            return .integer(id.primaryKey)
        }
    }

    private mutating func keyPath(_ path: String, on entity: EntityInfo) throws -> (BoundOperand, ValueKind) {
        let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = entity
        var hops: [ToOneHop] = []
        for (offset, segment) in segments.enumerated() {
            let isLast = offset == segments.count - 1
            if segment == "SELF" && offset == 0 {
                if isLast { return (.path(BoundPath(hops: [], terminal: .primaryKey(current))), .object(current.name)) }
                continue
            }
            if segment.hasPrefix("@") { throw fail("\(segment) must follow a to-many relationship, in \(path)") }
            switch current.slot(segment) {
            case nil:
                throw ObjectError.unknownKey(entity: current.name, key: segment)
            case .attribute(let index)?:
                guard isLast else { throw fail("\(current.name).\(segment) is an attribute; nothing can follow it in \(path)") }
                return (.path(BoundPath(hops: hops, terminal: .attribute(current, index))), ValueKind(current.attributes[index].type))
            case .toOne(let index)?:
                let destination = schema.infos[current.toOnes[index].destination]!
                reach(destination.name)
                if isLast {
                    return (.path(BoundPath(hops: hops, terminal: .foreignKey(current, index))), .object(destination.name))
                }
                hops.append(ToOneHop(owner: current, index: index, destination: destination))
                current = destination
            case .toMany(let index)?:
                let destination = schema.infos[current.toManys[index].destination]!
                reach(destination.name)
                let many = ToManyHop(owner: current, index: index, destination: destination)
                guard !isLast, segments[offset + 1].hasPrefix("@") else {
                    throw fail("\(current.name).\(segment) is to-many: use ANY/ALL/NONE \(path), \(segment).@count, or %@ IN \(segment)")
                }
                guard let function = BoundAggregate.Function(rawValue: String(segments[offset + 1].dropFirst())) else {
                    throw fail("unknown aggregate \(segments[offset + 1])")
                }
                let rest = Array(segments[(offset + 2)...])
                if function == .count {
                    guard rest.isEmpty else { throw fail("@count takes no key after it, in \(path)") }
                    return (.aggregate(BoundAggregate(prefix: hops, many: many, function: .count, value: nil)), .numeric)
                }
                guard !rest.isEmpty else { throw fail("@\(function.rawValue) needs a key after it, e.g. \(segment).@\(function.rawValue).amount") }
                let (inner, kind) = try keyPath(rest.joined(separator: "."), on: destination)
                guard case .path(let value) = inner else { throw fail("@\(function.rawValue) needs a plain key path after it") }
                if function == .sum || function == .avg, kind != .numeric {
                    throw fail("@\(function.rawValue) needs a number, but \(rest.joined(separator: ".")) is \(kind)")
                }
                let resultKind: ValueKind = (function == .sum || function == .avg) ? .numeric : kind
                return (.aggregate(BoundAggregate(prefix: hops, many: many, function: function, value: value)), resultKind)
            }
        }
        return (.path(BoundPath(hops: hops, terminal: .primaryKey(current))), .object(current.name))
    }
}
