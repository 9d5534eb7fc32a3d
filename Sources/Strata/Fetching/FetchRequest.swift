/// A sort key: an attribute, or a key path through to-one relationships to one
/// (`department.name`), a direction and a comparison. (Not `SortDescriptor`: Foundation has one.)
///
/// Ordering matches SQLite's: `nil` first when ascending, strings by their UTF-8 bytes, numbers
/// numerically; ties are broken by primary key so results are deterministic.
public struct SortKey: Sendable, Hashable, CustomStringConvertible {
    /// How strings compare.
    public enum Comparison: String, Sendable, Hashable {
        /// By Unicode scalars (SQLite's BINARY collation): `B` before `a`.
        case binary
        /// After Unicode lowercasing, as `[c]` in a condition: `a`, `B`, `é`.
        case caseInsensitive
        /// Case-insensitive with numbers compared by value ("file2" before "file10"), as Finder sorts.
        case localized
    }

    public var key: String
    public var ascending: Bool
    public var comparison: Comparison

    public init(_ key: String, ascending: Bool = true, comparison: Comparison = .binary) {
        self.key = key
        self.ascending = ascending
        self.comparison = comparison
    }

    public static func ascending(_ key: String, comparison: Comparison = .binary) -> SortKey {
        SortKey(key, ascending: true, comparison: comparison)
    }
    public static func descending(_ key: String, comparison: Comparison = .binary) -> SortKey {
        SortKey(key, ascending: false, comparison: comparison)
    }

    public var description: String {
        "\(key) \(ascending ? "ASC" : "DESC")" + (comparison == .binary ? "" : " \(comparison.rawValue)")
    }
}

/// What to fetch: an entity, its order, and a window.
///
/// ```swift
/// var request = FetchRequest(entityName: "Good", predicate: try Condition("category.name == %@", "Fruit"),
///                            sortKeys: [.ascending("name", comparison: .caseInsensitive)])
/// request.fetchLimit = 20
/// let goods = try context.fetch(request)
/// ```
///
/// `Result` is the class the fetch returns: ``ManagedObject`` for a request made from an entity
/// name (the string API, for models built at run time), or a typed class (`FetchRequest<Good>`,
/// whose entity the class describes; see ``PersistentEntity``). Both run the same code: a typed
/// request is its entity name, condition and sort keys, with the class on top.
public struct FetchRequest<Result: ManagedObject>: Sendable, Hashable {
    public var entityName: String
    /// Which objects: `nil` for all.
    public var predicate: Condition?
    public var sortKeys: [SortKey]
    /// At most this many results; `nil` for all.
    public var fetchLimit: Int?
    /// Skip this many results first.
    public var fetchOffset: Int
    /// Whether unsaved inserts, changes and deletions of the context count (default true, as in Core Data).
    public var includesPendingChanges: Bool
    /// How many objects a results controller materialises at once when one is asked for (0: all
    /// of them at the first access). Core Data's `fetchBatchSize`.
    public var fetchBatchSize: Int = 0
    /// Why a typed request's Foundation predicate or sort descriptor has no Strata equivalent:
    /// thrown by the fetch, before any SQL runs.
    var translationError: PredicateTranslationError?

    init(entity entityName: String, predicate: Condition?, sortKeys: [SortKey], fetchLimit: Int?, fetchOffset: Int,
         includesPendingChanges: Bool) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
    }
}

extension FetchRequest where Result: PersistentEntity {
    /// A typed request written with the format language's ``Condition`` and string ``SortKey``s
    /// (the class gives the entity).
    public init(condition: Condition?, sortKeys: [SortKey] = [], fetchLimit: Int? = nil, fetchOffset: Int = 0,
                includesPendingChanges: Bool = true) {
        self.init(entity: Result.entityName, predicate: condition, sortKeys: sortKeys, fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
    }
}

extension FetchRequest where Result == ManagedObject {
    public init(entityName: String, predicate: Condition? = nil, sortKeys: [SortKey] = [], fetchLimit: Int? = nil,
                fetchOffset: Int = 0, includesPendingChanges: Bool = true) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
    }
}

/// A request whose results are plain ``ManagedObject``s: the string API's request.
public typealias AnyFetchRequest = FetchRequest<ManagedObject>

extension FetchRequest {
    /// The same request returning plain ``ManagedObject``s (what controllers and caches keep).
    public var untyped: FetchRequest<ManagedObject> {
        var request = FetchRequest<ManagedObject>(entity: entityName, predicate: predicate, sortKeys: sortKeys,
                                                  fetchLimit: fetchLimit, fetchOffset: fetchOffset,
                                                  includesPendingChanges: includesPendingChanges)
        request.fetchBatchSize = fetchBatchSize
        request.translationError = translationError
        return request
    }
}
