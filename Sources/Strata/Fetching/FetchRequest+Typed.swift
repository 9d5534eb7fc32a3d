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
        self.init(entity: Result.entityName, condition: nil, sortKeys: [], fetchLimit: fetchLimit,
                  fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
        self.predicate = predicate
        self.sortBy = sortBy
    }

    /// Which objects, as a Foundation predicate (`nil`: all). Setting it translates it to
    /// ``condition`` at once; one with no Strata equivalent makes every fetch throw
    /// ``PredicateTranslationError`` until it is set again. `nil` when the request was given a
    /// ``Condition`` instead.
    public var predicate: Predicate<Result>? {
        get { typedPredicate }
        set { setTranslated(newValue) { try newValue.map { try Condition($0) } } }
    }

    /// The order, as Foundation sort descriptors. Setting them translates them to ``sortKeys``
    /// at once (an untranslatable one: as for ``predicate``). Empty when the request was given
    /// ``SortKey``s instead.
    public var sortBy: [SortDescriptor<Result>] {
        get { typedSort ?? [] }
        set { setTranslated(newValue) { try SortKey.array(newValue) } }
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
