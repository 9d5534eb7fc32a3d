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
///
/// This is the controller's whole machinery, shared by every ``FetchedResultsController``: its
/// delegate methods receive it, so one delegate serves typed and untyped controllers alike.
/// Compare it with `===` to tell controllers apart.
public class AnyFetchedResultsController {
    /// Carries the controller to its context's queue from a stream's termination handler.
    // @unchecked because: `value` is only dereferenced inside `context.enqueue`, on the queue the
    // controller is confined to.
    private struct QueueBound: @unchecked Sendable {
        weak var value: AnyFetchedResultsController?
    }

    public let fetchRequest: FetchRequest<ManagedObject>
    public let managedObjectContext: ManagedObjectContext
    /// The key path whose value names each object's section (through to-one relationships), or
    /// `nil` for one section. It must be the first sort key.
    public let sectionNameKeyPath: String?
    /// The name of the durable section cache (see <doc:SectionCacheFormat>): with a name,
    /// ``performFetch()`` serves the sections and IDs from the cache file when it matches the
    /// committed store, and otherwise fetches and writes it. `nil`: no cache.
    public let cacheName: String?
    /// What the last ``performFetch()`` did with the cache: ``SectionCacheStatus/served``,
    /// ``SectionCacheStatus/rebuilt(_:)`` with the reason the file was not served (missing,
    /// stale, corrupt…), ``SectionCacheStatus/skipped(_:)`` when the cache did not apply (unsaved
    /// changes along the context chain, an in-memory store), or ``SectionCacheStatus/none``
    /// without a cache name and before the first fetch. Read it on the context's queue.
    public internal(set) var cacheStatus: SectionCacheStatus {
        get {
            assertOnQueue()
            return storedCacheStatus
        }
        set { storedCacheStatus = newValue }
    }
    private var storedCacheStatus = SectionCacheStatus.none
    /// Why the last ``performFetch()`` did not serve the cache (`nil` when it did, when the cache
    /// was skipped, or when there is no cache name): ``cacheStatus``'s
    /// ``SectionCacheStatus/rejection``.
    @available(*, deprecated, message: "use cacheStatus")
    public var lastCacheRejection: SectionCacheRejection? { cacheStatus.rejection }
    /// Whether the last ``performFetch()`` was served from the cache: ``cacheStatus`` is
    /// ``SectionCacheStatus/served``.
    @available(*, deprecated, message: "use cacheStatus")
    public var servedFromCache: Bool { cacheStatus == .served }

    /// Receives every change. Setting a delegate starts change tracking; with no delegate and no
    /// ``changes()`` stream the controller tracks nothing and costs nothing. Set it on the
    /// context's queue.
    ///
    /// The delegate's methods receive the controller as the type they are written with
    /// (``FetchedResultsControllerDelegate/Controller``): `FetchedResultsController<Good>` for a
    /// typed controller's delegate, ``AnyFetchedResultsController`` for one that serves every
    /// controller. A delegate whose methods name another controller type is refused here with a
    /// precondition failure, never silently left uncalled.
    public weak var delegate: (any FetchedResultsControllerDelegate)? {
        willSet {
            assertOnQueue("delegate")
            if let newValue { checkDelegate(newValue) }
        }
        didSet { updateTracking() }
    }

    private func checkDelegate<Delegate: FetchedResultsControllerDelegate>(_ delegate: Delegate) {
        precondition(self is Delegate.Controller, AnyFetchedResultsController.delegateMismatch(delegate, self))
    }

    /// The index title of a section name. Default: the name's first letter, capitalised (`"#"`
    /// for the `""` section of `nil` values).
    public var sectionIndexTitle: (String) -> String? = AnyFetchedResultsController.defaultIndexTitle

    var plan: FetchPlan?
    /// What the plan's rows depend on beyond their own row (derived once per fetch).
    var dependencies: FetchedDependencies?
    /// The rows, in sections of ordered keys.
    var rows = FetchedRows()
    /// Which chunk of `rows` holds each key. A layout installed from a cache file leaves it to be
    /// built at its first use (tracking, `indexPath(for:)`, a change): a controller that only
    /// shows the list never pays for it (at 5,000,000 rows it took a warm `performFetch` from
    /// 60 ms to 201 ms: a 20 MB table written in random key order).
    var locations: KeyLocations {
        get {
            buildPendingLocations()
            return storedLocations
        }
        _modify {
            buildPendingLocations()
            yield &storedLocations
        }
        set {
            storedLocations = newValue
            locationsPending = false
        }
    }
    private var storedLocations = KeyLocations()
    private var locationsPending = false

    /// `locations` will be built from `rows` when first used.
    func deferLocations() {
        storedLocations = KeyLocations()
        locationsPending = true
    }

    private func buildPendingLocations() {
        guard locationsPending else { return }
        locationsPending = false
        storedLocations = AnyFetchedResultsController.locations(of: rows)
    }
    /// The values the key paths read on related objects, by object: a related object's change
    /// matters only when these differ.
    var relatedValues: [ObjectID: [SQLiteValue]] = [:]
    /// Whether `relatedValues` was loaded for the current layout (when tracking starts).
    var relatedValuesLoaded = false
    /// Related values read in the same read transaction as the last rows fetched from the store,
    /// taken by the next ``loadRelatedValues(_:)``.
    var pendingRelatedValues: [ObjectID: [SQLiteValue]]?
    /// The work following changes has done so far. Read it on the context's queue.
    public internal(set) var trackingStatistics: FetchedResultsTracking {
        get {
            assertOnQueue()
            return storedTrackingStatistics
        }
        set { storedTrackingStatistics = newValue }
    }
    private var storedTrackingStatistics = FetchedResultsTracking()
    /// False while the layout came from a version 1 cache file (which stores no stamps), until
    /// tracking loads its rows' versions: a re-run then can't tell value-only changes of rows
    /// nobody named.
    var stampsKnown: Bool { servedCacheStamp == nil || servedWithStamps }
    /// The layout came from a cache file that holds its rows' version stamps (format version 2).
    var servedWithStamps = false
    /// The rows whose stamp is a content stamp (placed from a context's memory: the follow path,
    /// or a fetch over unsaved changes); the others carry version stamps read from the store.
    /// See ``contentStamp(_:)``.
    var contentStamped = Set<Int64>()
    /// Rows a re-run placed by a read of the store newer than what the context shows of them
    /// (another connection's commit, not yet merged here), which keep the stamp of what the
    /// context showed so that the merge still reports them. Their place and their stamp disagree:
    /// compared with as neighbours, their older values would misplace the row being placed, for
    /// good (stream model test, route 0 with another process's bursts). The next follow places
    /// them again by what the context shows.
    var placedByNewerRead = Set<Int64>()
    /// Sort values of listed rows as placements read them (key → the stamp the layout held for
    /// the row then, and its values): a later probe of a row the layout still lists with that
    /// stamp compares with these instead of reading it again. They are the values the layout is
    /// ordered by, which is what a binary search over it must compare with (a newer read of the
    /// row is the news of a change that will place it again). Emptied whenever a related value
    /// changes (values read through a key path would be old) and whenever the layout is built
    /// again; at most ``placementValuesLimit`` rows.
    var placementValues: [Int64: PlacedValues] = [:]
    struct PlacedValues {
        var stamp: UInt32
        var values: [SQLiteValue]
    }
    static let placementValuesLimit = 4096
    /// The stamp of the cache file the layout came from, until tracking starts (and checks that
    /// the store is still at it) or the rows' stamps are loaded.
    var servedCacheStamp: SectionCacheStamp?
    /// Set when following a change failed: the next change re-runs the request.
    var needsRerun = false
    private var observation: ContextObservation?
    private var streams: [Int: AsyncStream<FetchedResultsEvent>.Continuation] = [:]
    /// Result streams' receivers (`context.results(for:)`), called on the context's queue as a
    /// delegate is: no task between the controller and the stream's buffer.
    private var sinks: [Int: (FetchedResultsEvent) -> Void] = [:]
    private var nextStream = 0
    /// True once tracking has run and stopped: the layout may be behind the context.
    private var isStale = false

    init(untyped fetchRequest: FetchRequest<ManagedObject>, managedObjectContext: ManagedObjectContext,
         sectionNameKeyPath: String?, cacheName: String?) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    deinit {
        if cacheName != nil { managedObjectContext.coordinator.caches.unregister(for: ObjectIdentifier(self)) }
    }

    public static func defaultIndexTitle(_ name: String) -> String? {
        guard let first = name.first else { return "#" }
        return String(first).uppercased()
    }

    // MARK: Fetching

    /// Runs the request: one query for the IDs and the sort keys' values (or, when the context
    /// or an ancestor holds unsaved changes for the entities it reads, the context's fetch).
    ///
    /// - Throws: ``FetchedResultsError/invalidCacheName(name:reason:)`` (before anything is
    ///   fetched: the controller stays unfetched), ``FetchedResultsError/missingSortKeys(entity:)``,
    ///   ``FetchedResultsError/sectionKeyNotFirstSortKey(sectionKeyPath:firstSortKey:)``, and what a
    ///   fetch throws (unknown keys name the entity and key).
    public func performFetch() throws {
        let context = managedObjectContext
        assertOnQueue()
        if let cacheName {
            // A name no file can carry would miss the cache forever, silently: refuse it.
            do throws(SectionCacheError) {
                _ = try SectionCacheStore.fileName(forCacheNamed: cacheName)
            } catch {
                guard case .invalidName(_, let reason) = error else { throw error }
                throw FetchedResultsError.invalidCacheName(name: cacheName, reason: reason)
            }
        }
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
        dependencies = FetchedDependencies(plan)
        let cached = cacheName != nil ? try fetchThroughCache(plan) : false
        registerCacheRefresher(plan)
        if !cached {
            install(try fetchRows(plan))
        }
        if isTracking {
            try loadStampsOfCachedLayout(plan)
            try loadRelatedValues(plan)
        }
        isStale = false
        updateTracking()
    }

    /// A row's version stamp, read with the row from the store: a hash of its `_version`, which
    /// the store bumps on every committed change of the row. Rows whose stamp differs after a
    /// re-run changed. The stamp says nothing of related rows: a category's rename changes the
    /// place of its goods, not the goods.
    static func versionStamp(_ version: Int64) -> UInt32 {
        StampHasher(version: version).value
    }

    /// A row's content stamp: FNV-1a over every attribute and to-one of the row as a context
    /// shows it. A version stamp needs the row's version in the store, which a context's copy of
    /// a row it saved itself can lag (and a row with unsaved changes has none); a content stamp
    /// changes exactly when what the context shows of the row changes, so rows placed from memory
    /// carry one.
    static func contentStamp(_ row: RowSnapshot) -> UInt32 {
        var stamp = StampHasher(version: 0x5354_5241_5441_4331)
        func feed(_ value: SQLiteValue) {
            switch value {
            case .null: stamp.null()
            case .integer(let v): stamp.integer(v)
            case .real(let v): stamp.real(v)
            case .text(let v):
                var text = v
                text.withUTF8 { stamp.bytes($0, tag: 3) }
            case .blob(let v): v.withUnsafeBytes { stamp.bytes($0.bindMemory(to: UInt8.self), tag: 4) }
            }
        }
        for attribute in row.attributes { feed(attribute?.storageValue ?? .null) }
        for toOne in row.toOnes { feed(toOne.map { .integer($0) } ?? .null) }
        return stamp.value
    }

    /// The order of two section values (the first sort key's direction).
    var sectionOrder: (SQLiteValue, SQLiteValue) -> Int {
        let ascending = fetchRequest.sortKeys.first?.ascending ?? true
        guard sectionNameKeyPath != nil else { return { _, _ in 0 } }
        return { a, b in ascending ? ScalarOrder.compare(a, b) : -ScalarOrder.compare(a, b) }
    }

    func makeSection(_ value: SQLiteValue) -> (name: String, title: String?) {
        guard sectionNameKeyPath != nil else { return ("", nil) }
        let name = AnyFetchedResultsController.sectionName(value)
        return (name, sectionIndexTitle(name))
    }

    func checkedDependencies() -> FetchedDependencies {
        guard let dependencies else { preconditionFailure("FetchedResultsController used before performFetch(): call performFetch() first.") }
        return dependencies
    }

    func checkedPlan() -> FetchPlan {
        guard let plan else { preconditionFailure("FetchedResultsController used before performFetch(): call performFetch() first.") }
        return plan
    }

    // MARK: Sections and objects

    /// Stops with a message that names the fix when called off the context's queue: the
    /// controller, like the context's objects, is used inside `perform`/`performAndWait` only.
    /// Every public accessor calls it.
    func assertOnQueue(_ function: StaticString = #function) {
        precondition(managedObjectContext.isOnQueue,
                     "FetchedResultsController.\(function) called off its context's queue: wrap the call in context.performAndWait { … } or await context.perform { … }.")
    }

    /// The sections, in order; `nil` before ``performFetch()``. Cheap: each section's IDs are
    /// built only when read. Read it on the context's queue.
    public var sections: [FetchedSection]? {
        assertOnQueue()
        guard let plan else { return nil }
        return FetchedSnapshot(rows: rows, entity: plan.info.name).sections
    }

    /// The sections and their IDs: no object is materialised, and the IDs are shared with the
    /// controller until read. Take it on the context's queue; the snapshot itself is `Sendable`.
    public var snapshot: FetchedSnapshot {
        assertOnQueue()
        return FetchedSnapshot(rows: rows, entity: plan?.info.name ?? fetchRequest.entityName)
    }

    /// The number of rows held. Read it on the context's queue.
    public var numberOfObjects: Int {
        assertOnQueue()
        return rows.count
    }

    /// Bytes the controller's layout holds: keys (8 a row), stamps (4), the key index (4 a row
    /// when keys are dense) and the chunk and section tables. Measured by the benchmarks. Read it
    /// on the context's queue.
    public var layoutBytes: Int {
        assertOnQueue()
        return rows.bytes + locations.bytes
    }

    /// The index titles of the sections, without repeats, in order. Read it on the context's queue.
    public var sectionIndexTitles: [String] {
        assertOnQueue()
        var seen = Set<String>()
        return rows.sections.compactMap(\.indexTitle).filter { seen.insert($0).inserted }
    }

    /// The section that the index title `title` at position `index` of ``sectionIndexTitles``
    /// stands for: the first section with that title, or else section `index` (the last one
    /// when there are fewer). Call it on the context's queue.
    public func section(forSectionIndexTitle title: String, at index: Int) -> Int {
        assertOnQueue()
        if let found = rows.sections.firstIndex(where: { $0.indexTitle == title }) { return found }
        return min(index, max(0, rows.sections.count - 1))
    }

    /// The value that identifies a row's section: its section key's value, except that an empty
    /// string is `nil`'s section. Both are named `""`, and they sort next to each other (`nil`
    /// before `""` ascending, after it descending), so they make one section, not two sections
    /// with the same name. Rows in it keep the sort keys' order (`nil` ones first, ascending).
    @inline(__always)
    static func sectionValue(_ value: SQLiteValue) -> SQLiteValue {
        if case .text(let text) = value, text.isEmpty { return .null }
        return value
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

    /// Every fetched object, in order, materialised in batches. Read it on the context's queue.
    public var fetchedManagedObjects: [ManagedObject]? {
        get throws {
            assertOnQueue()
            guard plan != nil else { return nil }
            return try objects(for: snapshot.objectIDs)
        }
    }

    /// The object at `indexPath`; a fault is read together with the rest of its batch (one
    /// statement for up to ``FetchRequest/fetchBatchSize`` rows).
    public func managedObject(at indexPath: FetchedIndexPath) throws -> ManagedObject {
        assertOnQueue()
        precondition(indexPath.section >= 0 && indexPath.section < rows.sections.count && indexPath.item >= 0
                        && indexPath.item < rows.sections[indexPath.section].count,
                     "FetchedResultsController.object(at:) was given \(indexPath), outside the controller's sections: check sections first.")
        let entity = checkedPlan().info.name
        let context = managedObjectContext
        let object = try context.object(with: ObjectID(entityName: entity, primaryKey: rows.key(section: indexPath.section, item: indexPath.item)))
        if object.isFault {
            let flat = rows.offset(ofSection: indexPath.section) + indexPath.item
            let batch = max(fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : rows.count, 1)
            let keys = rows.keys(from: (flat / batch) * batch, count: batch)
            try context.fulfill(batch: try keys.map { try context.object(with: ObjectID(entityName: entity, primaryKey: $0)) })
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

    /// Where `object` is, or `nil` when the controller does not hold it. Call it on the
    /// context's queue.
    public func indexPath(for object: ManagedObject) -> FetchedIndexPath? {
        assertOnQueue()
        return indexPath(forObjectID: object.objectID)
    }

    /// Where the object of `id` is, found through the key index (no scan). Call it on the
    /// context's queue.
    public func indexPath(forObjectID id: ObjectID) -> FetchedIndexPath? {
        assertOnQueue()
        guard let plan, id.entityName == plan.info.name, let chunk = locations[id.primaryKey] else { return nil }
        let location = rows.location(of: id.primaryKey, inChunk: chunk, order: sectionOrder)
        return FetchedIndexPath(item: location.item, section: location.section)
    }

    // MARK: Tracking

    /// Every event from now on, as an async sequence (starts change tracking).
    /// The stream ends its tracking when its consumer goes away (the stream is cancelled or
    /// released). Call it on the context's queue; the stream can be consumed anywhere.
    public func changes() -> AsyncStream<FetchedResultsEvent> {
        assertOnQueue()
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

    var isTracking: Bool { delegate != nil || !streams.isEmpty || !sinks.isEmpty }

    /// Calls `body` with every event from now on, on the context's queue (starts tracking), until
    /// ``removeSink(_:)``.
    func addSink(_ body: @escaping (FetchedResultsEvent) -> Void) -> Int {
        assertOnQueue()
        nextStream += 1
        sinks[nextStream] = body
        updateTracking()
        return nextStream
    }

    func removeSink(_ token: Int) {
        sinks[token] = nil
        updateTracking()
    }

    private func updateTracking() {
        guard let plan, isTracking else {
            observation?.cancel()
            observation = nil
            return
        }
        guard observation == nil else { return }
        if isStale {
            // Tracking was off: catch up with what happened meanwhile before following changes.
            if let fresh = try? fetchRows(plan) {
                install(fresh)
            } else {
                needsRerun = true
            }
        }
        isStale = true           // from the next stop of tracking on
        if (try? loadStampsOfCachedLayout(plan)) == nil { needsRerun = true }
        try? loadRelatedValues(plan)  // failing here only makes the first related change cost more
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
        // The coordinator closed with news still queued (another process kept writing while the
        // app shut down): nothing is read after close, and nothing is reported.
        guard !managedObjectContext.coordinator.isClosed else { return }
        switch event {
        case .objectsDidChange(let changes):
            contextDidChange(changes)
        case .reload:
            do {
                install(try fetchRows(checkedPlan()))
                try loadRelatedValues(checkedPlan())
            } catch {
                install(FetchedRowList())
                needsRerun = true
                report(.failed(.trackingFailed(reason: "\(error)")))
            }
            report(.reload(snapshot))
        case .willSave, .didSave:
            break
        }
    }

    func report(_ event: FetchedResultsEvent) {
        // Core Data's window: the sections already show a save that has not reached the store.
        KillPoint.hit("frc.updated", in: managedObjectContext.name)
        if let delegate { tell(delegate, event) }
        for continuation in streams.values { continuation.yield(event) }
        for sink in sinks.values { sink(event) }
    }

    /// Calls `delegate`'s methods for `event`, with this controller as the delegate's own
    /// controller type (checked when the delegate was set).
    private func tell<Delegate: FetchedResultsControllerDelegate>(_ delegate: Delegate, _ event: FetchedResultsEvent) {
        guard let controller = self as? Delegate.Controller else {
            preconditionFailure(AnyFetchedResultsController.delegateMismatch(delegate, self))
        }
        if case .failed(let error) = event {
            delegate.controller(controller, didFailWith: error)
            delegate.controller(controller, didReport: event)
            return
        }
        if case .changes(let changes) = event {
            delegate.controllerWillChangeContent(controller)
            for change in changes.sections {
                switch change {
                case let .delete(section, index): delegate.controller(controller, didChange: section, atSectionIndex: index, for: .delete)
                case let .insert(section, index): delegate.controller(controller, didChange: section, atSectionIndex: index, for: .insert)
                }
            }
            for change in changes.objects {
                switch change {
                case let .delete(id, path): delegate.controller(controller, didChange: id, at: path, for: .delete, newIndexPath: nil)
                case let .insert(id, path): delegate.controller(controller, didChange: id, at: nil, for: .insert, newIndexPath: path)
                case let .move(id, from, to): delegate.controller(controller, didChange: id, at: from, for: .move, newIndexPath: to)
                case let .update(id, from, to): delegate.controller(controller, didChange: id, at: from, for: .update, newIndexPath: to)
                }
            }
            delegate.controllerDidChangeContent(controller)
        }
        delegate.controller(controller, didChangeContentWith: snapshot)
        delegate.controller(controller, didReport: event)
    }

    static func delegateMismatch<Delegate: FetchedResultsControllerDelegate>(_ delegate: Delegate, _ controller: AnyFetchedResultsController) -> String {
        "\(Delegate.self) is a delegate of \(Delegate.Controller.self) and was set on a \(type(of: controller)): "
            + "write its methods with this controller's type (or AnyFetchedResultsController for every controller)."
    }
}

/// FNV-1a, fed a seed (a row's version, or a content stamp's tag) and then value by value: the
/// hash behind a row's version and content stamps.
struct StampHasher {
    private(set) var value: UInt32 = 2_166_136_261

    init(version: Int64) { word(UInt64(bitPattern: version)) }

    @inline(__always) private mutating func byte(_ byte: UInt8) { value = (value ^ UInt32(byte)) &* 16_777_619 }
    @inline(__always) private mutating func word(_ word: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { byte(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }
    mutating func null() { byte(0) }
    mutating func integer(_ v: Int64) { byte(1); word(UInt64(bitPattern: v)) }
    mutating func real(_ v: Double) { byte(2); word(v.bitPattern) }
    mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>, tag: UInt8) {
        byte(tag)
        for b in bytes { byte(b) }
    }
}
