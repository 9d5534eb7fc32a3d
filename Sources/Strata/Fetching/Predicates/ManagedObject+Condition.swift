internal import Foundation
internal import StrataSQLite

/// A managed object as a condition subject: its current values, unsaved changes included.
struct ObjectSubject: ConditionSubject {
    let object: ManagedObject
    let context: ManagedObjectContext

    var primaryKey: Int64 { object.primaryKey }

    func storedValue(attribute index: Int) throws -> SQLiteValue {
        try context.fulfill(object)
        return object.current.attribute(index)?.storageValue ?? .null
    }

    func foreignKey(toOne index: Int) throws -> Int64? {
        try context.fulfill(object)
        return object.current.toOnes[index]
    }

    func follow(toOne index: Int) throws -> ObjectSubject? {
        try context.fulfill(object)
        guard let destination = try context.toOneObject(object, index), destination.state != .deleted else { return nil }
        do {
            try context.fulfill(destination)
        } catch ObjectError.objectNotFound {
            return nil                     // a dangling key: SQL's subquery finds no row either
        }
        return ObjectSubject(object: destination, context: context)
    }

    func members(toMany index: Int) throws -> [ObjectSubject] {
        try context.fulfill(object)
        // A member whose row is gone (deleted elsewhere, not yet known here) is no member: SQL's
        // join finds no row either.
        return try context.toManyObjects(object, index)
            .filter { try $0.state != .deleted && context.fulfillUnlessGone($0) }
            .map { ObjectSubject(object: $0, context: context) }
    }
}

extension AttributeValue {
    /// The value as SQLite stores it (what bound conditions compare).
    var storageValue: SQLiteValue {
        switch self {
        case .int16(let v): .integer(Int64(v))
        case .int32(let v): .integer(Int64(v))
        case .int64(let v): .integer(v)
        case .double(let v): .real(v)
        case .float(let v): .real(Double(v))
        case .bool(let v): .integer(v ? 1 : 0)
        case .string(let v): .text(v)
        case .date(let v): .real(v.timeIntervalSinceReferenceDate)
        case .binary(let v): .blob(v)
        case .uuid(let v): .blob(withUnsafeBytes(of: v.uuid) { Data($0) })
        case .url(let v): .text(v.absoluteString)
        case .decimal(let v): .text(NSDecimalNumber(decimal: v).description(withLocale: posixLocale))
        }
    }
}

extension ManagedObjectContext {
    /// Evaluates `condition` on `object` in memory, with its unsaved changes — the same answer a
    /// fetch gives once the changes are saved.
    ///
    /// - Throws: ``ConditionError`` or ``ObjectError`` when the condition doesn't fit the entity.
    public func evaluate(_ condition: Condition, on object: ManagedObject) throws -> Bool {
        assertOnQueue()
        var binder = ConditionBinder(schema: schema, root: object.info, condition: condition)
        return try binder.bind(condition).evaluate(ObjectSubject(object: object, context: self))
    }

    /// The objects of `objects` that satisfy `condition`, in order. Binds the condition once per
    /// entity, so filtering many objects costs one evaluation each.
    public func filter(_ objects: [ManagedObject], _ condition: Condition) throws -> [ManagedObject] {
        assertOnQueue()
        var bound: [ObjectIdentifier: BoundCondition] = [:]
        return try objects.filter { object in
            let key = ObjectIdentifier(object.info)
            let condition = try bound[key] ?? {
                var binder = ConditionBinder(schema: schema, root: object.info, condition: condition)
                let result = try binder.bind(condition)
                bound[key] = result
                return result
            }()
            return try condition.evaluate(ObjectSubject(object: object, context: self))
        }
    }
}
