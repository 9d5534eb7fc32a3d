public import Foundation

extension FetchRequest {
    /// A request for objects of a ``PersistentEntity`` class, filtered by a Foundation predicate
    /// and sorted by Foundation sort descriptors.
    ///
    /// ```swift
    /// let request = try FetchRequest(Good.self, predicate: #Predicate { $0.category?.name == "Fruit" },
    ///                                sortBy: [SortDescriptor(\.name)], fetchLimit: 20)
    /// let goods = try context.fetch(request) as! [Good]
    /// ```
    ///
    /// The predicate becomes a ``Condition`` and each sort descriptor a ``SortKey`` right here
    /// (see the Predicates article for what translates).
    ///
    /// - Throws: ``PredicateTranslationError`` when the predicate or a sort descriptor has no
    ///   Strata equivalent; nothing has run yet.
    public init<T: PersistentEntity>(_ type: T.Type, predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = [],
                                     fetchLimit: Int? = nil, fetchOffset: Int = 0, includesPendingChanges: Bool = true) throws {
        self.init(entityName: T.entityName, predicate: try predicate.map { try Condition($0) }, sortKeys: try SortKey.array(sortBy),
                  fetchLimit: fetchLimit, fetchOffset: fetchOffset, includesPendingChanges: includesPendingChanges)
    }
}
