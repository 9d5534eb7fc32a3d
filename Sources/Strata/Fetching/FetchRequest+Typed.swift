public import Foundation

extension FetchRequest where Result: PersistentEntity {
    /// A typed request filtered by a Foundation predicate and sorted by Foundation sort
    /// descriptors, as SwiftData's `FetchDescriptor`:
    ///
    /// ```swift
    /// let request = FetchRequest<Good>(predicate: #Predicate { $0.category?.name == "Fruit" },
    ///                                  sortBy: [SortDescriptor(\.name)], fetchLimit: 20)
    /// let goods: [Good] = try context.fetch(request)
    /// ```
    ///
    /// The predicate becomes a ``Condition`` and each sort descriptor a ``SortKey`` right here
    /// (see the Predicates article for what translates). One that has no Strata equivalent
    /// makes every fetch of the request throw ``PredicateTranslationError`` before any SQL runs;
    /// ``init(_:predicate:sortBy:fetchLimit:fetchOffset:includesPendingChanges:)`` throws it at once.
    public init(predicate: Predicate<Result>? = nil, sortBy: [SortDescriptor<Result>] = [], fetchLimit: Int? = nil,
                fetchOffset: Int = 0, includesPendingChanges: Bool = true) {
        self.init(entity: Result.entityName, predicate: nil, sortKeys: [], fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
        do {
            self.predicate = try predicate.map { try Condition($0) }
            self.sortKeys = try SortKey.array(sortBy)
        } catch let error as PredicateTranslationError {
            translationError = error
        } catch {
            translationError = .unsupported(expression: "\(predicate.map { "\($0)" } ?? "")", reason: "\(error)")
        }
    }

    /// The same request, translated at once: throws ``PredicateTranslationError`` when the
    /// predicate or a sort descriptor has no Strata equivalent.
    public init(_ type: Result.Type, predicate: Predicate<Result>? = nil, sortBy: [SortDescriptor<Result>] = [],
                fetchLimit: Int? = nil, fetchOffset: Int = 0, includesPendingChanges: Bool = true) throws {
        self.init(predicate: predicate, sortBy: sortBy, fetchLimit: fetchLimit, fetchOffset: fetchOffset,
                  includesPendingChanges: includesPendingChanges)
        if let translationError { throw translationError }
    }
}
