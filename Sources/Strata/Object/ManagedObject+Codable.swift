internal import Foundation

extension ManagedObject {
    /// A `Codable` value kept in one `binary` attribute, as JSON: what an `@Entity` property of
    /// a `Codable` struct or enum type reads and writes (SwiftData's `.codable` storage).
    ///
    /// The value is encoded with `JSONEncoder` and `.sortedKeys`, so equal values are equal
    /// bytes, and the context sees a change only when the encoding changes. The attribute is
    /// opaque to the store: a predicate or sort key can't look inside it (compare whole values
    /// with the `binary` attribute only), and a migration copies the bytes as they are.
    ///
    /// A value that no longer decodes (the type changed shape since it was written, or another
    /// program wrote the bytes) is a precondition failure that names the entity, the key and the
    /// fix, for an optional property too: reading it as `nil` would make the next write of the
    /// object silently drop the stored value. Stored bytes come from outside the program, so
    /// ``decodedValue(forKey:as:)`` reads the same value and throws
    /// ``ObjectError/undecodableValue(entity:key:type:reason:)`` instead: call it where the data
    /// may be foreign. Keep the type able to read what it wrote (optional new fields, a custom
    /// `init(from:)`), or move the data with a mapping migration. A value that cannot be encoded
    /// (a `Double.nan` inside, a throwing `encode(to:)`) stops the same way when set.
    public subscript<Value: Codable>(codable key: String) -> Value? {
        get {
            do {
                return try decodedValue(forKey: key, as: Value.self)
            } catch {
                preconditionFailure("\(error): keep \(Value.self) able to decode what it wrote (new fields optional, or a custom init(from:)), or migrate the attribute; read it with try decodedValue(forKey:as:) to handle the error.")
            }
        }
        set {
            self[attribute: key] = newValue.map { ManagedObject.encodedCodable($0, for: "\(info.name).\(key)") }
        }
    }

    /// The `Codable` value stored as JSON in attribute `key` (what a `Codable` `@Entity`
    /// property reads), or `nil` when the attribute holds none.
    ///
    /// - Throws: ``ObjectError/undecodableValue(entity:key:type:reason:)`` when the stored bytes
    ///   don't decode as `Value`; ``ObjectError/unknownKey(entity:key:)`` and
    ///   ``ObjectError/wrongType(entity:key:expected:actual:)`` for a key that is not a `binary`
    ///   attribute; the fault's error (see ``load()``) when its row cannot be read.
    public func decodedValue<Value: Decodable>(forKey key: String, as type: Value.Type = Value.self) throws -> Value? {
        guard let value = try self.value(forKey: key) else { return nil }
        guard let data = value as? Data else {
            throw ObjectError.wrongType(entity: info.name, key: key, expected: "a binary attribute holding JSON", actual: "\(Swift.type(of: value))")
        }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw ObjectError.undecodableValue(entity: info.name, key: key, type: "\(Value.self)",
                                               reason: "\(data.count) bytes that don't decode (\(error))")
        }
    }

    /// A required to-one relationship: the destination object, which must be set before it is
    /// read. What an `@Entity` property `var category: Category` (non-optional) reads.
    ///
    /// Reading it while it holds no object (a new object before the assignment, or an object whose
    /// destination was removed) is a precondition failure that names the entity and key; declare
    /// the property `Category?` (optional) or `Category!` (required, reads `nil` until set) when
    /// the code must read it before it is set.
    public subscript<Destination: ManagedObject>(requiredToOne key: String) -> Destination {
        get {
            guard let destination: Destination = self[toOne: key] else {
                preconditionFailure("\(info.name).\(key) is a required relationship that holds no \(Destination.self): set it before reading it, or declare the property \(Destination.self)? or \(Destination.self)! to read nil until it is set.")
            }
            return destination
        }
        set { self[toOne: key] = newValue }
    }

    /// JSON with sorted keys: the bytes a `Codable` attribute stores (`codable:` and defaults).
    static func encodedCodable<Value: Encodable>(_ value: Value, for property: @autoclosure () -> String) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return try encoder.encode(value)
        } catch {
            preconditionFailure("\(property()): \(Value.self) value cannot be encoded as JSON (\(error)): store only values that encode (no NaN or infinity in a Double field).")
        }
    }
}
