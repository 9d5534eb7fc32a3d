public import Foundation

// Foundation `SortDescriptor<T>` → ``SortKey``.

extension SortKey {
    /// The sort key a Foundation sort descriptor means, for fetching `T`.
    ///
    /// ```swift
    /// let byCategory = try SortKey(SortDescriptor(\Good.category?.name, order: .reverse))   // category.name DESC
    /// ```
    ///
    /// The key path is an attribute of `T`, or goes through to-one relationships to one. A key
    /// path of one component is named by ``PersistentEntity/propertyName(for:)``; a longer one is
    /// taken apart with ``PersistentEntity/keyPath(forPropertyNamed:)`` of each class on the way.
    /// The descriptor's string comparator picks the ``SortKey/Comparison``: `.localizedStandard`
    /// (and any localized or numeric comparator) sorts `.localized`, a case-insensitive one
    /// `.caseInsensitive`, `.lexical` and none `.binary`.
    ///
    /// - Throws: ``PredicateTranslationError`` for a descriptor that compares whole objects, or a
    ///   key path that isn't a persistent property (or path of them) Strata can take apart.
    public init<T: PersistentEntity>(_ descriptor: SortDescriptor<T>) throws {
        guard let keyPath = descriptor.keyPath else {
            throw PredicateTranslationError.unsupported(expression: "\(descriptor)", reason: "the sort descriptor compares whole objects, not a key path")
        }
        let names = try PersistentKeyPath.names(of: keyPath, rootedAt: T.self, describing: "SortDescriptor(\(keyPath))")
        let comparison = descriptor.stringComparator.map(Self.comparison(for:)) ?? .binary
        self.init(names.joined(separator: "."), ascending: descriptor.order == .forward, comparison: comparison)
    }

    /// The sort keys of `descriptors`, in order.
    public static func array<T: PersistentEntity>(_ descriptors: [SortDescriptor<T>]) throws -> [SortKey] {
        try descriptors.map(SortKey.init)
    }

    /// Strata's closest comparison for a Foundation string comparator: its options and whether it
    /// is localized are read from its `Codable` form (the only place they are public).
    static func comparison(for comparator: String.StandardComparator) -> Comparison {
        struct Form: Decodable { var options: UInt; var isLocalized: Bool }
        guard let data = try? JSONEncoder().encode(comparator), let form = try? JSONDecoder().decode(Form.self, from: data) else {
            return .binary
        }
        return comparison(options: String.CompareOptions(rawValue: form.options), isLocalized: form.isLocalized)
    }

    static func comparison(options: String.CompareOptions, isLocalized: Bool) -> Comparison {
        if isLocalized || options.contains(.numeric) { return .localized }
        if options.contains(.caseInsensitive) { return .caseInsensitive }
        return .binary
    }
}

/// Key paths of ``PersistentEntity`` classes as property names.
enum PersistentKeyPath {
    /// The property names `keyPath` reads from `root`: one for a key path of one component, one
    /// per step through to-one relationships for a longer one.
    static func names<T: PersistentEntity>(of keyPath: AnyKeyPath, rootedAt root: T.Type, describing expression: String) throws -> [String] {
        if let name = T.propertyName(for: keyPath) { return [name] }
        // Swift can't split a key path, and an optional chain (`\Good.category?.name`) can't be
        // rebuilt by appending. Its description can be compared, though: it is the root type's
        // name followed by each component's (a stored property's name, or the getter's address
        // and type for a computed one), which is what one-component key paths of the same
        // properties print.
        let description = keyPath.debugDescription
        let prefix = rootPrefix(T.self)
        guard description.hasPrefix(prefix) else {
            throw PredicateTranslationError.unsupported(expression: expression, reason: "\(keyPath) is not rooted at \(T.self)")
        }
        if let names = match(Substring(description.dropFirst(prefix.count)), in: T.self) { return names }
        throw PredicateTranslationError.unsupported(
            expression: expression,
            reason: "\(keyPath) is not a persistent property of \(T.self) or a path of them through to-one relationships"
                + " (\(T.self).propertyName(for:) doesn't name it, and taking a longer key path apart needs keyPath(forPropertyNamed:) of each class on the way)")
    }

    /// Property names for `rest` (the description after the root type: `.a?.b`), starting at `type`.
    private static func match<E: PersistentEntity>(_ rest: Substring, in entity: E.Type) -> [String]? {
        let prefix = rootPrefix(E.self)
        let description = E.entityDescription
        for relationship in description.relationships where !relationship.isToMany {
            guard let step = E.keyPath(forPropertyNamed: relationship.name) else { continue }
            let stepDescription = step.debugDescription
            guard stepDescription.hasPrefix(prefix) else { continue }
            let component = stepDescription.dropFirst(prefix.count)
            guard rest.hasPrefix(component) else { continue }
            var remainder = rest.dropFirst(component.count)
            if remainder.first == "?" || remainder.first == "!" { remainder = remainder.dropFirst() }
            guard remainder.first == ".",
                  let destination = unwrappedType(type(of: step).valueType) as? any PersistentEntity.Type,
                  let names = matchOne(remainder, in: destination) else { continue }
            return [relationship.name] + names
        }
        return nil
    }

    /// `rest` as the last component (an attribute of `type`) or a further to-one step.
    private static func matchOne<E: PersistentEntity>(_ rest: Substring, in entity: E.Type) -> [String]? {
        let prefix = rootPrefix(E.self)
        for attribute in E.entityDescription.attributes {
            guard let keyPath = E.keyPath(forPropertyNamed: attribute.name) else { continue }
            let description = keyPath.debugDescription
            guard description.hasPrefix(prefix) else { continue }
            // A trailing `?` wraps a non-optional attribute read through an optional chain.
            let component = description.dropFirst(prefix.count)
            if rest == component || rest == component + "?" { return [attribute.name] }
        }
        return match(rest, in: entity)
    }

    /// What the description of a key path rooted at `type` starts with (`\Good`).
    private static func rootPrefix<Root>(_ type: Root.Type) -> String {
        let description = (\Root.self as AnyKeyPath).debugDescription          // `\Good.self`
        return description.hasSuffix(".self") ? String(description.dropLast(5)) : description
    }

    private static func unwrappedType(_ type: Any.Type) -> Any.Type {
        (type as? any OptionalType.Type)?.wrappedType ?? type
    }
}

private protocol OptionalType { static var wrappedType: Any.Type { get } }
extension Optional: OptionalType { static var wrappedType: Any.Type { Wrapped.self } }
