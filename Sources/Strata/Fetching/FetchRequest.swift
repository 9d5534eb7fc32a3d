/// A sort key: an attribute and a direction. (Not `SortDescriptor`: Foundation has one.)
///
/// Ordering matches SQLite's: `nil` first when ascending, strings by their UTF-8 bytes, numbers
/// numerically; ties are broken by primary key so results are deterministic.
public struct SortKey: Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var ascending: Bool

    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    public static func ascending(_ key: String) -> SortKey { SortKey(key, ascending: true) }
    public static func descending(_ key: String) -> SortKey { SortKey(key, ascending: false) }

    public var description: String { "\(key) \(ascending ? "ASC" : "DESC")" }
}

/// What to fetch: an entity, its order, and a window.
///
/// ```swift
/// var request = FetchRequest(entityName: "Good", sortKeys: [.ascending("name"), .descending("number")])
/// request.fetchLimit = 20
/// let goods = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable, Hashable {
    public var entityName: String
    public var sortKeys: [SortKey]
    /// At most this many results; `nil` for all.
    public var fetchLimit: Int?
    /// Skip this many results first.
    public var fetchOffset: Int
    /// Whether unsaved inserts, changes and deletions of the context count (default true, as in Core Data).
    public var includesPendingChanges: Bool

    public init(entityName: String, sortKeys: [SortKey] = [], fetchLimit: Int? = nil, fetchOffset: Int = 0,
                includesPendingChanges: Bool = true) {
        self.entityName = entityName
        self.sortKeys = sortKeys
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
    }
}
