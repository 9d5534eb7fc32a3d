internal import StrataSQLite

/// Turns a bound condition into an SQL expression that is always 0 or 1 (never NULL), with every
/// value a numbered `?N` parameter. Key paths become correlated subqueries on aliases `t0`, `t1`, ….
struct ConditionSQL {
    private(set) var arguments: [SQLiteValue] = []
    private var aliasCount = 0

    private mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// A numbered parameter (`?N`): an operand's SQL may appear twice (`x >= ?1 AND x <= ?2` with a
    /// constant x, `x IN (…) OR x IS NULL`) or not at all (`x IN {}`), and each `?N` still binds
    /// the one value it names.
    private mutating func parameter(_ value: SQLiteValue) -> String {
        arguments.append(value)
        return "?\(arguments.count)"
    }

    /// - Parameter positive: true where the result only filters rows (a WHERE clause, under AND/OR
    ///   but no NOT): there NULL already means "not selected", so comparisons may stay bare and
    ///   indexes stay usable. Under NOT every comparison is forced to 0/1.
    mutating func condition(_ condition: BoundCondition, alias: String, positive: Bool = true) -> String {
        switch condition {
        case .constant(let value): return value ? "1" : "0"
        case .not(let inner): return "(NOT \(self.condition(inner, alias: alias, positive: false)))"
        case .and(let terms):
            return balanced(terms.map { self.condition($0, alias: alias, positive: positive) }, "AND", empty: "1")
        case .or(let terms):
            return balanced(terms.map { self.condition($0, alias: alias, positive: positive) }, "OR", empty: "0")
        case let .compare(lhs, op, options, rhs): return compare(lhs, op, options, rhs, alias: alias, positive: positive)
        case let .quantified(quantifier, owner, many, inner):
            let ownerKey = path(BoundPath(hops: owner, terminal: .primaryKey(many.owner)), alias: alias)
            let member = newAlias()
            let membership = link(many, member: member, ownerKey: ownerKey)
            let from = "SELECT 1 FROM \(many.destination.table) AS \(member) WHERE \(membership)"
            switch quantifier {
            case .anyOf: return "EXISTS (\(from) AND \(self.condition(inner, alias: member)))"
            case .allOf: return "(NOT EXISTS (\(from) AND NOT \(self.condition(inner, alias: member, positive: false))))"
            case .noneOf: return "(NOT EXISTS (\(from) AND \(self.condition(inner, alias: member))))"
            }
        }
    }

    private mutating func compare(_ lhs: BoundOperand, _ op: Comparison.Operator, _ options: Comparison.Options,
                                  _ rhs: BoundOperand, alias: String, positive: Bool) -> String {
        // Decided before the left side adds a parameter that would then go unreferenced.
        if op == .in, case .list(let items) = rhs, items.isEmpty { return "0" }
        // A string operator folds its left side itself (one function call per row, not two).
        var foldInMatch = false
        if [.contains, .beginsWith, .endsWith, .like, .matches].contains(op), !options.isEmpty {
            switch lhs {
            case .path, .aggregate: foldInMatch = true
            case .constant, .list: break
            }
        }
        let l = operand(lhs, foldInMatch ? [] : options, alias: alias)
        func zeroIfNull(_ sql: String) -> String { positive ? "(\(sql))" : "coalesce(\(sql), 0)" }
        switch op {
        case .equal: return "(\(l) IS \(operand(rhs, options, alias: alias)))"
        case .notEqual: return "(\(l) IS NOT \(operand(rhs, options, alias: alias)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return zeroIfNull("\(l) \(op.rawValue) \(operand(rhs, options, alias: alias))")
        case .between:
            guard case .list(let bounds) = rhs else { return "0" }
            return zeroIfNull("\(l) >= \(parameter(bounds[0])) AND \(l) <= \(parameter(bounds[1]))")
        case .in:
            guard case .list(let items) = rhs, !items.isEmpty else { return "0" }
            return membership(l, items, positive: positive)
        case .contains, .beginsWith, .endsWith, .like, .matches:
            let code = StringMatching.operatorCodes[op]!
            let flags = options.rawValue | (foldInMatch ? StringFunctionFastPath.foldLeftOperand : 0)
            let r = operand(rhs, options, alias: alias)
            let match = "strata_match(\(code), \(flags), \(l), \(r))"
            // A case-sensitive BEGINSWITH on a string attribute of the row: also a range of the
            // column, which an index on it serves (and which skips the call for the rows outside).
            if op == .beginsWith, options.isEmpty, case .path(let path) = lhs, path.hops.isEmpty,
               case .attribute(let info, let index) = path.terminal, info.attributes[index].type == .string,
               case .constant(.text(let prefix)) = rhs, !prefix.isEmpty {
                guard let above = ConditionSQL.successor(ofPrefix: prefix) else { return "(\(l) >= \(r) AND \(match))" }
                return "(\(l) >= \(r) AND \(l) < \(parameter(.text(above))) AND \(match))"
            }
            return match
        }
    }

    /// The least string above every string that begins with `prefix` in SQLite's BINARY order
    /// (UTF-8 bytes, which order as scalars do): `prefix` with its last scalar incremented, after
    /// dropping trailing U+10FFFF; `nil` when nothing is left (no upper bound).
    static func successor(ofPrefix prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.last {
            scalars.removeLast()
            guard last.value < 0x10FFFF else { continue }
            let next = last.value + 1
            scalars.append(Unicode.Scalar(next >= 0xD800 && next <= 0xDFFF ? 0xE000 : next)!)
            var result = String.UnicodeScalarView()
            result.append(contentsOf: scalars)
            return String(result)
        }
        return nil
    }

    /// Joins terms as a balanced tree: a chain of thousands stays within SQLite's parser stack
    /// and expression depth limits (each level adds one).
    private func balanced(_ terms: [String], _ op: String, empty: String) -> String {
        switch terms.count {
        case 0: return empty
        case 1: return terms[0]
        case 2, 3, 4: return "(" + terms.joined(separator: " \(op) ") + ")"
        default:
            let middle = terms.count / 2
            return "(\(balanced(Array(terms[..<middle]), op, empty: empty)) \(op) \(balanced(Array(terms[middle...]), op, empty: empty)))"
        }
    }

    /// `l IN list` with null-safe equality (`nil IN {nil}` is true). Lists of up to 500 values are
    /// `IN (?, …)`; longer lists of integers or strings are one JSON parameter read by `json_each`
    /// (SQLite allows 32,766 parameters per statement); other long lists are IN groups of 500.
    private mutating func membership(_ l: String, _ items: [SQLiteValue], positive: Bool) -> String {
        let values = items.filter { !$0.isNull }
        var terms: [String] = []
        if !values.isEmpty {
            let json = values.count > 500 ? ConditionSQL.jsonArray(values) : nil
            if let json {
                terms.append("\(l) IN (SELECT value FROM json_each(\(parameter(.text(json)))))")
            } else {
                for start in stride(from: 0, to: values.count, by: 500) {
                    let group = values[start..<min(start + 500, values.count)].map { parameter($0) }
                    terms.append("\(l) IN (\(group.joined(separator: ", ")))")
                }
            }
        }
        if values.count < items.count { terms.append("\(l) IS NULL") }
        let sql = balanced(terms, "OR", empty: "0")
        return positive ? sql : "coalesce(\(sql), 0)"
    }

    /// A JSON array of integers or strings (exact in JSON), or `nil` for other values and for
    /// strings holding NUL.
    static func jsonArray(_ values: [SQLiteValue]) -> String? {
        var parts: [String] = []
        parts.reserveCapacity(values.count)
        for value in values {
            switch value {
            case .integer(let v): parts.append(String(v))
            case .text(let v):
                // SQLite's JSON text cannot carry an embedded NUL intact: such lists use IN groups.
                if v.utf8.contains(0) { return nil }
                parts.append(jsonString(v))
            default: return nil
            }
        }
        return "[" + parts.joined(separator: ",") + "]"
    }

    private static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    private mutating func operand(_ operand: BoundOperand, _ options: Comparison.Options, alias: String) -> String {
        switch operand {
        case .constant(let value): return parameter(value)
        case .list: return "NULL"
        case .path(let path):
            let sql = self.path(path, alias: alias)
            return options.isEmpty ? sql : "strata_fold(\(sql), \(options.rawValue))"
        case .aggregate(let aggregate):
            let ownerKey = path(BoundPath(hops: aggregate.prefix, terminal: .primaryKey(aggregate.many.owner)), alias: alias)
            let member = newAlias()
            let membership = link(aggregate.many, member: member, ownerKey: ownerKey)
            let value = aggregate.value.map { path($0, alias: member) } ?? "*"
            let function = switch aggregate.function {
            case .count: "count"
            case .sum: "total"
            case .avg: "avg"
            case .min: "min"
            case .max: "max"
            }
            let sql = "(SELECT \(function)(\(value)) FROM \(aggregate.many.destination.table) AS \(member) WHERE \(membership))"
            return options.isEmpty ? sql : "strata_fold(\(sql), \(options.rawValue))"
        }
    }

    /// The value at the end of a to-one path, as a scalar SQL expression.
    mutating func path(_ path: BoundPath, alias: String) -> String {
        guard let hop = path.hops.first else {
            switch path.terminal {
            case .attribute(let info, let index):
                let column = "\(alias).\(quoted(info.attributes[index].name))"
                return info.attributes[index].type == .decimal ? "CAST(\(column) AS REAL)" : column
            case .foreignKey(let info, let index): return "\(alias).\(quoted(info.toOnes[index].name))"
            case .primaryKey: return "\(alias).\(quoted(primaryKeyColumn))"
            }
        }
        let next = newAlias()
        let rest = BoundPath(hops: Array(path.hops.dropFirst()), terminal: path.terminal)
        let value = self.path(rest, alias: next)
        return "(SELECT \(value) FROM \(hop.destination.table) AS \(next) WHERE \(next).\(quoted(primaryKeyColumn)) = \(alias).\(quoted(hop.owner.toOnes[hop.index].name)))"
    }

    private func link(_ many: ToManyHop, member: String, ownerKey: String) -> String {
        switch many.storage {
        case let .inverseColumn(_, column):
            return "\(member).\(column) = \(ownerKey)"
        case let .joinTable(table, own, other):
            return "\(member).\(quoted(primaryKeyColumn)) IN (SELECT \(other) FROM \(table) WHERE \(own) = \(ownerKey))"
        }
    }
}
