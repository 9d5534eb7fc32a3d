/// A results controller whose objects are `Result`: ``ManagedObject`` for a request made from an
/// entity name, or a typed class (`FetchedResultsController<Good>`).
///
/// ```swift
/// let request = FetchRequest<Good>(sortBy: [SortDescriptor(\.category?.name), SortDescriptor(\.name)])
/// let controller = try FetchedResultsController(request, context: main, sectionBy: \.category?.name,
///                                               cacheName: "goods")
/// try main.performAndWait {
///     try controller.performFetch()
///     let first: Good = try controller.object(at: FetchedIndexPath(item: 0, section: 0))
/// }
/// ```
///
/// Everything but the typed objects lives in ``AnyFetchedResultsController``, which its delegate
/// receives: a typed controller and an untyped one are the same machine.
public final class FetchedResultsController<Result: ManagedObject>: AnyFetchedResultsController {
    /// A controller of `fetchRequest` on `managedObjectContext`, sectioned by the key path
    /// `sectionNameKeyPath` (a string, as in Core Data), its sections cached under `cacheName`.
    public init(fetchRequest: FetchRequest<Result>, managedObjectContext: ManagedObjectContext,
                sectionNameKeyPath: String? = nil, cacheName: String? = nil) {
        super.init(untyped: fetchRequest.untyped, managedObjectContext: managedObjectContext,
                   sectionNameKeyPath: sectionNameKeyPath, cacheName: cacheName)
    }

    /// Every fetched object, in order, materialised in batches. Read it on the context's queue.
    public var fetchedObjects: [Result]? {
        get throws {
            assertOnQueue()
            guard let objects = try fetchedManagedObjects else { return nil }
            if Result.self == ManagedObject.self { return unsafeBitCast(objects, to: [Result].self) }
            return objects.map { Self.typed($0) }
        }
    }

    /// The object at `indexPath`; a fault is read together with the rest of its batch (one
    /// statement for up to ``FetchRequest/fetchBatchSize`` rows).
    public func object(at indexPath: FetchedIndexPath) throws -> Result {
        assertOnQueue()
        return Self.typed(try managedObject(at: indexPath))
    }

    private static func typed(_ object: ManagedObject) -> Result {
        guard let typed = object as? Result else {
            preconditionFailure("FetchedResultsController<\(Result.self)> holds \(type(of: object)) objects of \(object.entityName): name \(Result.self) as the entity's class (Entity(class:) or @Entity).")
        }
        return typed
    }
}

extension FetchedResultsController where Result: PersistentEntity {
    /// A typed controller sectioned by a key path of the class (`\.category?.name`), as
    /// SwiftData's `@Query(sectionBy:)`; the request's first sort key must read the same path.
    ///
    /// - Throws: ``PredicateTranslationError`` when `sectionBy` is not a persistent property of
    ///   `Result` or a path of them through to-one relationships.
    public convenience init<Value>(_ request: FetchRequest<Result>, context: ManagedObjectContext,
                                   sectionBy: KeyPath<Result, Value>, cacheName: String? = nil) throws {
        let names = try PersistentKeyPath.names(of: sectionBy, rootedAt: Result.self, describing: "sectionBy: \(sectionBy)")
        self.init(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: names.joined(separator: "."),
                  cacheName: cacheName)
    }

    /// A typed controller with one section.
    public convenience init(_ request: FetchRequest<Result>, context: ManagedObjectContext, cacheName: String? = nil) {
        self.init(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: cacheName)
    }
}
