internal import Foundation
internal import StrataSQLite

/// A list's data source: the results of a fetch request grouped into sections, kept up to date
/// with every change of its context, and reported as exact index-path changes.
///
/// The controller holds the ordered object IDs and the sort keys' values, not objects: objects
/// are materialised in batches of ``FetchRequest/fetchBatchSize`` when asked for, and snapshots
/// and change sets are built from IDs alone.
///
/// ```swift
/// var request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
/// request.fetchBatchSize = 50
/// let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main,
///                                           sectionNameKeyPath: "category.name")
/// try main.performAndWait {
///     try controller.performFetch()
///     controller.delegate = dataSource      // from now on every change is reported
/// }
/// ```
///
/// Use it on its context's queue only, like the context's objects.
public final class FetchedResultsController {
    /// Carries the controller to its context's queue from a stream's termination handler.
    // @unchecked because: `value` is only dereferenced inside `context.enqueue`, on the queue the
    // controller is confined to.
    private struct QueueBound: @unchecked Sendable {
        weak var value: FetchedResultsController?
    }

    public let fetchRequest: FetchRequest
    public let managedObjectContext: ManagedObjectContext
    /// The key path whose value names each object's section (through to-one relationships), or
    /// `nil` for one section. It must be the first sort key.
    public let sectionNameKeyPath: String?
    /// Reserved for the durable section cache.
    public let cacheName: String?

    /// Receives every change. Setting a delegate starts change tracking; with no delegate and no
    /// ``changes()`` stream the controller tracks nothing and costs nothing.
    public weak var delegate: (any FetchedResultsControllerDelegate)? {
        didSet { updateTracking() }
    }

    /// The index title of a section name. Default: the name's first letter, capitalised (`"#"`
    /// for the `""` section of `nil` values).
    public var sectionIndexTitle: (String) -> String? = FetchedResultsController.defaultIndexTitle

    /// One row: its key and its sort keys' values (the first is the section's when sectioned).
    struct Row {
        var key: Int64
        var values: [SQLiteValue]
    }

    var plan: FetchPlan?
    var rows: [Row] = []
    var cachedSections: [FetchedSection]?
    private var observation: ContextObservation?
    private var streams: [Int: AsyncStream<FetchedResultsEvent>.Continuation] = [:]
    private var nextStream = 0
    /// True once tracking has run and stopped: the layout may be behind the context.
    private var isStale = false

    public init(fetchRequest: FetchRequest, managedObjectContext: ManagedObjectContext,
                sectionNameKeyPath: String? = nil, cacheName: String? = nil) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    public static func defaultIndexTitle(_ name: String) -> String? {
        guard let first = name.first else { return "#" }
        return String(first).uppercased()
    }

    // MARK: Fetching

    /// Runs the request: one query for the IDs and the sort keys' values (or, when the context
    /// or an ancestor holds unsaved changes for the entities it reads, the context's fetch).
    ///
    /// - Throws: ``FetchedResultsError/missingSortKeys(entity:)``,
    ///   ``FetchedResultsError/sectionKeyNotFirstSortKey(sectionKeyPath:firstSortKey:)``, and what a
    ///   fetch throws (unknown keys name the entity and key).
    public func performFetch() throws {
        let context = managedObjectContext
        context.assertOnQueue()
        guard let first = fetchRequest.sortKeys.first else {
            throw FetchedResultsError.missingSortKeys(entity: fetchRequest.entityName)
        }
        if let sectionNameKeyPath, first.key != sectionNameKeyPath {
            throw FetchedResultsError.sectionKeyNotFirstSortKey(sectionKeyPath: sectionNameKeyPath, firstSortKey: first.key)
        }
        if let sectionNameKeyPath, first.comparison != .binary {
            throw FetchedResultsError.sectionKeyNeedsBinaryComparison(sectionKeyPath: sectionNameKeyPath)
        }
        let plan = try FetchPlan(fetchRequest, schema: context.schema)
        self.plan = plan
        rows = try fetchRows(plan)
        cachedSections = nil
        isStale = false
        updateTracking()
    }

    /// The rows the request matches now, in order.
    func fetchRows(_ plan: FetchPlan) throws -> [Row] {
        let context = managedObjectContext
        if plan.request.includesPendingChanges, context.chainHasPendingChanges(plan.entities) {
            return try context.fetch(plan.request).map { object in
                Row(key: object.objectID.primaryKey, values: try plan.sortValues(ObjectSubject(object: object, context: context)))
            }
        }
        let columns = (["t0.\(quoted(primaryKeyColumn))"] + plan.sortValueSQL).joined(separator: ", ")
        let sql = plan.selectSQL(columns)
        let count = Int32(plan.sortValueSQL.count)
        return try context.coordinator.withConnection { db in
            var rows: [Row] = []
            let statement = try db.cachedStatement(sql)
            try statement.bind(plan.arguments)
            try statement.forEachRow { row in
                rows.append(Row(key: row.int64(at: 0), values: (1...count).map { row.value(at: $0) }))
            }
            return rows
        }
    }

    func checkedPlan() -> FetchPlan {
        guard let plan else { preconditionFailure("FetchedResultsController used before performFetch(): call performFetch() first.") }
        return plan
    }

    // MARK: Sections and objects

    /// The sections, in order; `nil` before ``performFetch()``.
    public var sections: [FetchedSection]? {
        managedObjectContext.assertOnQueue()
        guard plan != nil else { return nil }
        if let cachedSections { return cachedSections }
        let built = buildSections(rows)
        cachedSections = built
        return built
    }

    /// The sections and their IDs: no object is materialised.
    public var snapshot: FetchedSnapshot { FetchedSnapshot(sections: sections ?? []) }

    /// The index titles of the sections, without repeats, in order.
    public var sectionIndexTitles: [String] {
        var seen = Set<String>()
        return (sections ?? []).compactMap(\.indexTitle).filter { seen.insert($0).inserted }
    }

    /// The section that the index title `title` at position `index` of ``sectionIndexTitles``
    /// stands for: the first section with that title, or else section `index` (the last one
    /// when there are fewer).
    public func section(forSectionIndexTitle title: String, at index: Int) -> Int {
        let sections = self.sections ?? []
        if let found = sections.firstIndex(where: { $0.indexTitle == title }) { return found }
        return min(index, max(0, sections.count - 1))
    }

    func buildSections(_ rows: [Row]) -> [FetchedSection] {
        let plan = checkedPlan()
        let entity = plan.info.name
        guard sectionNameKeyPath != nil else {
            return [FetchedSection(name: "", indexTitle: nil, objectIDs: rows.map { ObjectID(entityName: entity, primaryKey: $0.key) })]
        }
        var sections: [FetchedSection] = []
        for row in rows {
            let name = FetchedResultsController.sectionName(row.values[0])
            if sections.last?.name != name {
                sections.append(FetchedSection(name: name, indexTitle: sectionIndexTitle(name), objectIDs: []))
            }
            sections[sections.count - 1].objectIDs.append(ObjectID(entityName: entity, primaryKey: row.key))
        }
        return sections
    }

    /// A section value as text: `""` for `nil`.
    static func sectionName(_ value: SQLiteValue) -> String {
        switch value {
        case .null: ""
        case .integer(let v): String(v)
        case .real(let v): String(v)
        case .text(let v): v
        case .blob(let v): v.base64EncodedString()
        }
    }

    /// Every fetched object, in order, materialised in batches.
    public var fetchedObjects: [ManagedObject]? {
        get throws {
            guard plan != nil else { return nil }
            return try objects(for: snapshot.objectIDs)
        }
    }

    /// The object at `indexPath`; a fault is read together with the rest of its batch (one
    /// statement for up to ``FetchRequest/fetchBatchSize`` rows).
    public func object(at indexPath: FetchedIndexPath) throws -> ManagedObject {
        let sections = self.sections ?? []
        precondition(indexPath.section < sections.count && indexPath.item < sections[indexPath.section].objectIDs.count,
                     "FetchedResultsController.object(at:) was given \(indexPath), outside the controller's sections: check sections first.")
        let flat = sections[..<indexPath.section].reduce(0) { $0 + $1.numberOfObjects } + indexPath.item
        let context = managedObjectContext
        let object = try context.object(with: sections[indexPath.section].objectIDs[indexPath.item])
        if object.isFault {
            let batch = fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : rows.count
            let start = (flat / max(batch, 1)) * max(batch, 1)
            let ids = rows[start..<min(rows.count, start + batch)].map { ObjectID(entityName: object.entityName, primaryKey: $0.key) }
            try context.fulfill(batch: try ids.map { try context.object(with: $0) })
        }
        return object
    }

    /// The objects of `ids`, faults read in batches of ``FetchRequest/fetchBatchSize``.
    func objects(for ids: [ObjectID]) throws -> [ManagedObject] {
        let context = managedObjectContext
        let objects = try ids.map { try context.object(with: $0) }
        let batch = fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : max(objects.count, 1)
        for start in stride(from: 0, to: objects.count, by: batch) {
            try context.fulfill(batch: Array(objects[start..<min(objects.count, start + batch)]))
        }
        return objects
    }

    /// Where `object` is, or `nil` when the controller does not hold it.
    public func indexPath(for object: ManagedObject) -> FetchedIndexPath? { indexPath(forObjectID: object.objectID) }

    public func indexPath(forObjectID id: ObjectID) -> FetchedIndexPath? {
        for (s, section) in (sections ?? []).enumerated() {
            if let item = section.objectIDs.firstIndex(of: id) { return FetchedIndexPath(item: item, section: s) }
        }
        return nil
    }

    // MARK: Tracking

    /// Every event from now on, as an async sequence (starts change tracking).
    /// The stream ends its tracking when its consumer goes away (the stream is cancelled or
    /// released).
    public func changes() -> AsyncStream<FetchedResultsEvent> {
        let (stream, continuation) = AsyncStream<FetchedResultsEvent>.makeStream()
        nextStream += 1
        let token = nextStream
        streams[token] = continuation
        let context = managedObjectContext
        let controller = QueueBound(value: self)
        continuation.onTermination = { _ in
            context.enqueue { controller.value?.removeStream(token) }
        }
        updateTracking()
        return stream
    }

    private func removeStream(_ token: Int) {
        streams[token] = nil
        updateTracking()
    }

    private var isTracking: Bool { delegate != nil || !streams.isEmpty }

    private func updateTracking() {
        guard let plan, isTracking else {
            observation?.cancel()
            observation = nil
            return
        }
        guard observation == nil else { return }
        if isStale {
            // Tracking was off: catch up with what happened meanwhile before following changes.
            if let fresh = try? fetchRows(plan) { rows = fresh }
            cachedSections = nil
        }
        isStale = true           // from the next stop of tracking on
        observation = managedObjectContext.addObserver { [weak self] notification in
            self?.handle(notification.event)
        }
    }

    private func handle(_ event: ContextEvent) {
        // A delegate released without being set to nil: stop as if it had been.
        guard isTracking else {
            updateTracking()
            return
        }
        switch event {
        case .objectsDidChange(let changes):
            contextDidChange(changes)
        case .reload:
            do {
                rows = try fetchRows(checkedPlan())
            } catch {
                rows = []
            }
            cachedSections = nil
            report(.reload(snapshot))
        case .willSave, .didSave:
            break
        }
    }

    func report(_ event: FetchedResultsEvent) {
        if let delegate {
            if case .changes(let changes) = event {
                delegate.controllerWillChangeContent(self)
                for change in changes.sections {
                    switch change {
                    case let .delete(section, index): delegate.controller(self, didChange: section, atSectionIndex: index, for: .delete)
                    case let .insert(section, index): delegate.controller(self, didChange: section, atSectionIndex: index, for: .insert)
                    }
                }
                for change in changes.objects {
                    switch change {
                    case let .delete(id, path): delegate.controller(self, didChange: id, at: path, for: .delete, newIndexPath: nil)
                    case let .insert(id, path): delegate.controller(self, didChange: id, at: nil, for: .insert, newIndexPath: path)
                    case let .move(id, from, to): delegate.controller(self, didChange: id, at: from, for: .move, newIndexPath: to)
                    case let .update(id, from, to): delegate.controller(self, didChange: id, at: from, for: .update, newIndexPath: to)
                    }
                }
                delegate.controllerDidChangeContent(self)
            }
            delegate.controller(self, didChangeContentWith: snapshot)
            delegate.controller(self, didReport: event)
        }
        for continuation in streams.values { continuation.yield(event) }
    }
}
