public import Foundation

/// A Swift type that can be an attribute's value: the typed accessors of ``ManagedObject`` use it.
public protocol AttributeConvertible {
    init?(attributeValue: AttributeValue)
}

extension Int16: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .int16(let x) = v else { return nil }; self = x } }
extension Int32: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .int32(let x) = v else { return nil }; self = x } }
extension Int64: AttributeConvertible {
    public init?(attributeValue v: AttributeValue) {
        switch v {
        case .int16(let x): self = Int64(x)
        case .int32(let x): self = Int64(x)
        case .int64(let x): self = x
        default: return nil
        }
    }
}
extension Int: AttributeConvertible {
    public init?(attributeValue v: AttributeValue) {
        guard let x = Int64(attributeValue: v) else { return nil }
        self = Int(x)
    }
}
extension Double: AttributeConvertible {
    public init?(attributeValue v: AttributeValue) {
        switch v {
        case .double(let x): self = x
        case .float(let x): self = Double(x)
        default: return nil
        }
    }
}
extension Float: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .float(let x) = v else { return nil }; self = x } }
extension Bool: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .bool(let x) = v else { return nil }; self = x } }
extension String: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .string(let x) = v else { return nil }; self = x } }
extension Date: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .date(let x) = v else { return nil }; self = x } }
extension Data: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .binary(let x) = v else { return nil }; self = x } }
extension UUID: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .uuid(let x) = v else { return nil }; self = x } }
extension URL: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .url(let x) = v else { return nil }; self = x } }
extension Decimal: AttributeConvertible { public init?(attributeValue v: AttributeValue) { guard case .decimal(let x) = v else { return nil }; self = x } }

extension ManagedObject {
    /// Typed attribute access for subclasses' properties. A key that is not an attribute, or a
    /// value of the wrong type, is a bug in the subclass and stops with a precondition failure;
    /// use ``value(forKey:)`` / ``setValue(_:forKey:)`` for keys that come from data.
    ///
    /// A fault whose row cannot be read (a page that fails its checksum, an I/O error, a closed
    /// store, a row deleted elsewhere) never reads as a value: the read stops with a precondition
    /// failure that carries the error, as Core Data's "could not fulfill a fault". Call
    /// ``load()`` first to handle that error instead.
    public subscript<Value: AttributeConvertible>(attribute key: String) -> Value? {
        get {
            guard case .attribute(let index)? = info.slot(key) else { misuse(key, "an attribute") }
            checkAccess()
            if isFault { fulfillForTypedRead(key) }
            guard let value = current.attribute(index) else { return nil }
            guard let typed = Value(attributeValue: value) else {
                preconditionFailure("\(info.name).\(key) holds \(value.type), not \(Value.self): declare the property as the attribute's type.")
            }
            return typed
        }
        set {
            do { try setValue(newValue, forKey: key) } catch {
                preconditionFailure("\(error): declare the property with the attribute's type, or use setValue(_:forKey:) to handle the error.")
            }
        }
    }

    /// Typed to-one access for subclasses' properties.
    public subscript<Destination: ManagedObject>(toOne key: String) -> Destination? {
        get {
            guard case .toOne? = info.slot(key) else { misuse(key, "a to-one relationship") }
            let value: Any?
            do { value = try self.value(forKey: key) } catch { unreadable(key, error) }
            guard let object = value else { return nil }
            guard let typed = object as? Destination else {
                preconditionFailure("\(info.name).\(key) holds \(type(of: object)), not \(Destination.self): name the class in the model's Entity(class:).")
            }
            return typed
        }
        set {
            // Straight to the context: no `Any` box and no dynamic cast (`setValue(_:forKey:)`'s
            // cost), the same checks.
            guard case .toOne(let index)? = info.slot(key) else { misuse(key, "a to-one relationship") }
            checkAccess()
            do {
                if let newValue { _ = try destinationObject(newValue, key: key, entity: info.toOneDestinations[index]) }
                try link.withContext { context in
                    try context.fulfill(self)
                    try context.setToOne(self, index, newValue)
                }
            } catch {
                preconditionFailure("\(error): pass an object of the destination entity from the same context.")
            }
        }
    }

    /// Typed to-many access for subclasses' properties.
    public subscript<Destination: ManagedObject>(toMany key: String) -> Set<Destination> {
        get {
            guard case .toMany? = info.slot(key) else { misuse(key, "a to-many relationship") }
            let value: Any?
            do { value = try self.value(forKey: key) } catch { unreadable(key, error) }
            guard let objects = value as? Set<ManagedObject> else { return [] }
            return Set(objects.compactMap { $0 as? Destination })
        }
        set {
            do { try setValue(Set<ManagedObject>(newValue.map { $0 as ManagedObject }), forKey: key) } catch {
                preconditionFailure("\(error): pass objects of the destination entity from the same context.")
            }
        }
    }

    // MARK: Concrete typed access
    //
    // The generic subscript above runs unspecialised from an app's module (a witness-table call
    // per value); these overloads for the common types are what `self[attribute: "name"] as
    // String?` picks, and skip the `Any` box on the way in.

    public subscript(attribute key: String) -> Int64? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.int64) { return value.load(as: Int64.self) }
            return readInt64(key)
        }
        set {
            guard !writeInserted(key, .int64, { $0.setAttributeWord(newValue, tag: RowTag.int64, at: $1) }) else { return }
            typedWrite(key, newValue.map(AttributeValue.int64), newValue)
        }
    }
    public subscript(attribute key: String) -> Int? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.int64) { return Int(truncatingIfNeeded: value.load(as: Int64.self)) }
            return readInt(key)
        }
        set {
            guard !writeInserted(key, .int64, { $0.setAttributeWord(newValue.map(Int64.init), tag: RowTag.int64, at: $1) }) else { return }
            typedWrite(key, newValue.map { .int64(Int64($0)) }, newValue)
        }
    }
    public subscript(attribute key: String) -> Double? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.double) { return value.load(as: Double.self) }
            return readDouble(key)
        }
        set {
            // NaN takes the general path, which refuses it.
            guard newValue?.isNaN == true
                    || !writeInserted(key, .double, { $0.setAttributeWord(newValue, tag: RowTag.double, at: $1) }) else { return }
            typedWrite(key, newValue.map(AttributeValue.double), newValue)
        }
    }
    public subscript(attribute key: String) -> String? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.string) { return value.load(as: String.self) }
            return readString(key)
        }
        set {
            guard !writeInserted(key, .string, { $0.setAttributeString(newValue, at: $1) }) else { return }
            typedWrite(key, newValue.map(AttributeValue.string), newValue)
        }
    }
    public subscript(attribute key: String) -> Bool? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.bool) { return value.load(as: Int64.self) != 0 }
            return readBool(key)
        }
        set {
            guard !writeInserted(key, .bool, { $0.setAttributeWord(newValue.map { Int64($0 ? 1 : 0) }, tag: RowTag.bool, at: $1) }) else { return }
            typedWrite(key, newValue.map(AttributeValue.bool), newValue)
        }
    }
    public subscript(attribute key: String) -> Date? {
        @inlinable @inline(__always) get {
            if let value = fastAttributeValue(key, taggedAs: RowTag.date) { return Date(timeIntervalSinceReferenceDate: value.load(as: Double.self)) }
            return readDate(key)
        }
        set {
            guard !writeInserted(key, .date, { $0.setAttributeWord(newValue?.timeIntervalSinceReferenceDate, tag: RowTag.date, at: $1) }) else { return }
            typedWrite(key, newValue.map(AttributeValue.date), newValue)
        }
    }

    /// The common case of an import, in place of ``typedWrite(_:_:_:)``: an object inserted in
    /// this context (saved whole, so its value before needs no comparison) and a value of the
    /// attribute's own type, written by `write` straight into the row's slot with no
    /// `AttributeValue` between. False, having done nothing, when that is not the case.
    @inline(__always)
    private func writeInserted(_ key: String, _ type: AttributeType, _ write: (inout RowSnapshot, Int) -> Void) -> Bool {
        guard case .attribute(let index)? = info.slot(key), info.attributeTypes[index] == type else { return false }
        checkAccess()
        guard state == .inserted else { return false }
        link.withContext { $0.setInsertedAttribute(self) { write(&$0, index) } }
        return true
    }

    // Each common type's read takes the value straight from the row's slot when the slot holds
    // the type's own tag (a flight's sixteen reads were a fifth of its fetch's instructions,
    // an `AttributeValue` made and switched over in each); any other tag takes the general
    // conversion, which accepts what it always did (an `Int64` read of an `int16` attribute).
    //
    // The getters are inlinable: the common case (a small literal key, a saved or inserted
    // object that is no fault, on its queue, the slot holding the type's own tag) runs in the
    // caller's code with no call at all (the queue check reads the thread pointer), and the key's hash folds
    // to a constant there. Everything else (a long or unknown key, a fault to fulfil, nil, a
    // converted type, misuse, which stops with its message) is the `readX` beside it, not inlined.

    /// The address of attribute `key`'s value when the inlined fast path can read it: `key` known
    /// by its words (``AttributeKeys``), the object no fault, valid and on its context's queue,
    /// and its slot holding `tag`. Nil sends the read to its general path, which decides (and
    /// stops with the misuse's message where there is one).
    @inlinable @inline(__always)
    func fastAttributeValue(_ key: String, taggedAs tag: UInt8) -> UnsafeRawPointer? {
        // The queue first: the object's own state is read only on its queue. On the queue means
        // alive (a gone context's link has no owner): one check for both.
        guard let entry = info.attributeKeys.entry(key), link.isOnQueue, state != .invalid, !isFault else { return nil }
        return current.attributeValue(entry, taggedAs: tag)
    }

    @usableFromInline @inline(never)
    func readInt64(_ key: String) -> Int64? {
        typedRead(key, fastTag: RowTag.int64) { $0.load(as: Int64.self) }
    }
    @usableFromInline @inline(never)
    func readInt(_ key: String) -> Int? {
        typedRead(key, fastTag: RowTag.int64) { Int(truncatingIfNeeded: $0.load(as: Int64.self)) }
    }
    @usableFromInline @inline(never)
    func readDouble(_ key: String) -> Double? {
        typedRead(key, fastTag: RowTag.double) { $0.load(as: Double.self) }
    }
    @usableFromInline @inline(never)
    func readString(_ key: String) -> String? {
        typedRead(key, fastTag: RowTag.string) { $0.load(as: String.self) }
    }
    @usableFromInline @inline(never)
    func readBool(_ key: String) -> Bool? {
        typedRead(key, fastTag: RowTag.bool) { $0.load(as: Int64.self) != 0 }
    }
    @usableFromInline @inline(never)
    func readDate(_ key: String) -> Date? {
        typedRead(key, fastTag: RowTag.date) { Date(timeIntervalSinceReferenceDate: $0.load(as: Double.self)) }
    }

    @inline(__always)
    private func typedRead<Value: AttributeConvertible>(_ key: String, fastTag: UInt8 = RowTag.none,
                                                        _ load: (UnsafeRawPointer) -> Value = { _ in preconditionFailure("no fast tag") }) -> Value? {
        guard let index = info.attributeIndex(key) else { misuse(key, "an attribute") }
        checkAccess()
        if isFault { fulfillForTypedRead(key) }
        if let value = current.attributeValue(index, taggedAs: fastTag) { return load(value) }
        return converted(index, key)
    }

    /// Attribute `index`'s value as `Value` by the general conversion (``AttributeConvertible``).
    @inline(never)
    private func converted<Value: AttributeConvertible>(_ index: Int, _ key: String) -> Value? {
        guard let value = current.attribute(index) else { return nil }
        guard let typed = Value(attributeValue: value) else {
            preconditionFailure("\(info.name).\(key) holds \(value.type), not \(Value.self): declare the property as the attribute's type.")
        }
        return typed
    }

    /// Sets `value` directly when it already has the attribute's type; otherwise (an `Int64` for an
    /// `int16` attribute, a wrong type) goes through ``setValue(_:forKey:)`` with `original`, which
    /// converts or explains.
    @inline(__always)
    private func typedWrite<Original>(_ key: String, _ value: AttributeValue?, _ original: Original?) {
        guard case .attribute(let index)? = info.slot(key) else { misuse(key, "an attribute") }
        let exact: Bool
        switch value {
        case nil: exact = true
        case .double(let v)?: exact = !v.isNaN && info.attributeTypes[index] == .double
        case let v?: exact = v.type == info.attributeTypes[index]
        }
        do {
            if exact {
                checkAccess()
                try link.withContext { context in
                    try context.fulfill(self)
                    try context.setAttribute(self, index, value)
                }
            } else {
                try setValue(original, forKey: key)
            }
        } catch {
            preconditionFailure("\(error): declare the property with the attribute's type, or use setValue(_:forKey:) to handle the error.")
        }
    }

    /// Reads the fault's row for a typed read, which has no way to throw: a row that cannot be
    /// read stops the program with the error rather than read as a value that is not there.
    @inline(never)
    func fulfillForTypedRead(_ key: String) {
        do { try load() } catch { unreadable(key, error) }
    }

    @inline(never)
    func unreadable(_ key: String, _ error: any Error) -> Never {
        preconditionFailure("could not fulfill a fault: \(info.name).\(key) of \(objectID) cannot be read (\(error)); "
            + "call try object.load() (or context.fulfill(_:)) before reading the properties to handle the error.")
    }

    @inline(never)
    private func misuse(_ key: String, _ kind: String) -> Never {
        preconditionFailure("\(info.name) has no \(kind) named '\(key)': fix the key in the subclass or the model.")
    }
}
