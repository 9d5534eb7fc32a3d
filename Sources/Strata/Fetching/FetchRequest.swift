internal import Foundation

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

/// What to fetch: an entity, which objects, their order, and a window.
///
/// A typed request, as SwiftData's `FetchDescriptor` (every part can be changed after init):
///
/// ```swift
/// var request = FetchRequest<Good>(predicate: #Predicate { $0.category?.name == "Fruit" },
///                                  sortBy: [SortDescriptor(\.name)])
/// request.fetchLimit = 20
/// let goods: [Good] = try context.fetch(request)
/// request.predicate = #Predicate { $0.price < 5 }
/// ```
///
/// The string form, for models built at run time, names the entity and uses the format language:
///
/// ```swift
/// var request = FetchRequest(entityName: "Good", condition: try Condition("category.name == %@", "Fruit"),
///                            sortKeys: [.ascending("name", comparison: .caseInsensitive)])
/// ```
///
/// `Result` is the class the fetch returns: a typed class (`FetchRequest<Good>`, whose entity the
/// class describes; see ``PersistentEntity``), or ``ManagedObject`` for a request made from an
/// entity name. Both run the same code: a typed request's `predicate` and `sortBy` are translated
/// to its ``condition`` and ``sortKeys`` when they are set.
public struct FetchRequest<Result: ManagedObject>: Sendable, Hashable {
    public var entityName: String
    /// Which objects, in the format language: `nil` for all. A typed request's ``predicate``
    /// sets it; setting it directly drops that predicate.
    public var condition: Condition? {
        didSet { if !translatingPredicate { typedPredicate = nil; predicateError = nil } }
    }
    /// The order, as string key paths. A typed request's ``sortBy`` sets them; setting them
    /// directly drops those descriptors.
    public var sortKeys: [SortKey] {
        didSet { if !translatingSort { typedSort = nil; sortError = nil } }
    }
    /// At most this many results; `nil` for all.
    public var fetchLimit: Int?
    /// Skip this many results first.
    public var fetchOffset: Int
    /// Whether unsaved inserts, changes and deletions of the context count (default true, as in Core Data).
    public var includesPendingChanges: Bool
    /// How many objects a results controller materialises at once when one is asked for (0: all
    /// of them at the first access). Core Data's `fetchBatchSize`.
    public var fetchBatchSize: Int = 0

    /// The typed predicate and sort descriptors as set (`nil` when the string form was used).
    var typedPredicate: Predicate<Result>?
    var typedSort: [SortDescriptor<Result>]?
    /// Why the typed predicate or a sort descriptor has no Strata equivalent: thrown by the
    /// fetch, before any SQL runs. Each is cleared when its part is set again.
    var predicateError: PredicateTranslationError?
    var sortError: PredicateTranslationError?
    private var translatingPredicate = false
    private var translatingSort = false

    /// Why this request can't run: its typed predicate's or sort descriptors' translation error.
    var translationError: PredicateTranslationError? { predicateError ?? sortError }

    init(entity entityName: String, condition: Condition?, sortKeys: [SortKey], fetchLimit: Int?, fetchOffset: Int,
         includesPendingChanges: Bool) {
        self.entityName = entityName
        self.condition = condition
        self.sortKeys = sortKeys
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
    }

    /// Sets the condition a typed predicate translated to (or the error), keeping the predicate.
    mutating func setTranslated(_ predicate: Predicate<Result>?, _ translate: () throws -> Condition?) {
        translatingPredicate = true
        defer { translatingPredicate = false }
        typedPredicate = predicate
        do {
            condition = try translate()
            predicateError = nil
        } catch let error as PredicateTranslationError {
            condition = nil
            predicateError = error
        } catch {
            condition = nil
            predicateError = .unsupported(expression: predicate.map { "\($0)" } ?? "", reason: "\(error)")
        }
    }

    /// Sets the sort keys typed descriptors translated to (or the error), keeping the descriptors.
    mutating func setTranslated(_ descriptors: [SortDescriptor<Result>], _ translate: () throws -> [SortKey]) {
        translatingSort = true
        defer { translatingSort = false }
        typedSort = descriptors
        do {
            sortKeys = try translate()
            sortError = nil
        } catch let error as PredicateTranslationError {
            sortKeys = []
            sortError = error
        } catch {
            sortKeys = []
            sortError = .unsupported(expression: "\(descriptors)", reason: "\(error)")
        }
    }

    // Equal requests fetch the same rows in the same order: the typed parts are compared through
    // what they translated to (a `Predicate` is not Equatable).
    public static func == (lhs: FetchRequest, rhs: FetchRequest) -> Bool {
        lhs.entityName == rhs.entityName && lhs.condition == rhs.condition && lhs.sortKeys == rhs.sortKeys
            && lhs.fetchLimit == rhs.fetchLimit && lhs.fetchOffset == rhs.fetchOffset
            && lhs.includesPendingChanges == rhs.includesPendingChanges && lhs.fetchBatchSize == rhs.fetchBatchSize
            && lhs.translationError?.description == rhs.translationError?.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entityName)
        hasher.combine(condition)
        hasher.combine(sortKeys)
        hasher.combine(fetchLimit)
        hasher.combine(fetchOffset)
        hasher.combine(includesPendingChanges)
        hasher.combine(fetchBatchSize)
    }
}

extension FetchRequest where Result: PersistentEntity {
    /// A typed request written with the format language's ``Condition`` and string ``SortKey``s
    /// (the class gives the entity).
    public init(condition: Condition?, sortKeys: [SortKey] = [], fetchLimit: Int? = nil, fetchOffset: Int = 0,
                includesPendingChanges: Bool = true) {
        self.init(entity: Result.entityName, condition: condition, sortKeys: sortKeys, fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
    }
}

extension FetchRequest where Result == ManagedObject {
    /// A request by entity name (models built at run time), its condition in the format language.
    public init(entityName: String, condition: Condition? = nil, sortKeys: [SortKey] = [], fetchLimit: Int? = nil,
                fetchOffset: Int = 0, includesPendingChanges: Bool = true) {
        self.init(entity: entityName, condition: condition, sortKeys: sortKeys, fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
    }

    /// The same, with 0.1.0's label for the condition.
    public init(entityName: String, predicate: Condition?, sortKeys: [SortKey] = [], fetchLimit: Int? = nil,
                fetchOffset: Int = 0, includesPendingChanges: Bool = true) {
        self.init(entityName: entityName, condition: predicate, sortKeys: sortKeys, fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
    }

    /// 0.1.0's name for ``condition`` on a request by entity name.
    public var predicate: Condition? {
        get { condition }
        set { condition = newValue }
    }
}

/// A request whose results are plain ``ManagedObject``s: the string API's request.
public typealias AnyFetchRequest = FetchRequest<ManagedObject>

extension FetchRequest {
    /// The same request returning plain ``ManagedObject``s (what controllers and caches keep).
    public var untyped: FetchRequest<ManagedObject> {
        var request = FetchRequest<ManagedObject>(entity: entityName, condition: condition, sortKeys: sortKeys,
                                                  fetchLimit: fetchLimit, fetchOffset: fetchOffset,
                                                  includesPendingChanges: includesPendingChanges)
        request.fetchBatchSize = fetchBatchSize
        request.predicateError = predicateError
        request.sortError = sortError
        return request
    }
}
