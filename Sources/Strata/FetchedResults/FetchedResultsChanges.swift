/// Where an object is in a results controller: its section and its row in that section. (Not
/// Foundation's `IndexPath`, whose `section` and `item` exist only with UIKit or AppKit.)
public struct FetchedIndexPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var section: Int
    public var item: Int

    public init(item: Int, section: Int) {
        self.section = section
        self.item = item
    }

    public static func < (lhs: FetchedIndexPath, rhs: FetchedIndexPath) -> Bool { (lhs.section, lhs.item) < (rhs.section, rhs.item) }
    public var description: String { "[\(section), \(item)]" }
}

/// One section of a results controller.
///
/// A section read from a controller shares the controller's storage: its name, title and count
/// cost nothing, and ``objectIDs`` builds the list of IDs when asked for.
public struct FetchedSection: Sendable, Equatable {
    enum IDs: Sendable {
        case shared(FetchedRows, section: Int, entity: String)
        case explicit([ObjectID])
    }

    /// The section key's value as text; `""` for objects whose section value is `nil`.
    public var name: String
    /// The title in the section index (default: the name's first letter, capitalised).
    public var indexTitle: String?
    var ids: IDs

    public init(name: String, indexTitle: String?, objectIDs: [ObjectID]) {
        self.name = name
        self.indexTitle = indexTitle
        ids = .explicit(objectIDs)
    }

    init(rows: FetchedRows, section: Int, entity: String) {
        name = rows.sections[section].name
        indexTitle = rows.sections[section].indexTitle
        ids = .shared(rows, section: section, entity: entity)
    }

    /// The section's objects, in order, as IDs: materialise them with the controller.
    public var objectIDs: [ObjectID] {
        get {
            switch ids {
            case let .shared(rows, section, entity):
                let name = EntityName.interned(entity)
                return rows.keys(section: section).map { ObjectID(entity: name, primaryKey: $0) }
            case .explicit(let ids): return ids
            }
        }
        set { ids = .explicit(newValue) }
    }

    public var numberOfObjects: Int {
        switch ids {
        case .shared(let rows, let section, entity: _): rows.sections[section].count
        case .explicit(let ids): ids.count
        }
    }

    /// The ID at `item`, without building the list.
    public func objectID(at item: Int) -> ObjectID {
        switch ids {
        case let .shared(rows, section, entity): ObjectID(entityName: entity, primaryKey: rows.key(section: section, item: item))
        case .explicit(let ids): ids[item]
        }
    }

    public static func == (lhs: FetchedSection, rhs: FetchedSection) -> Bool {
        lhs.name == rhs.name && lhs.indexTitle == rhs.indexTitle && lhs.numberOfObjects == rhs.numberOfObjects
            && lhs.objectIDs == rhs.objectIDs
    }
}

/// The sections and their ordered object IDs: what a list shows.
///
/// A controller's snapshot shares the controller's storage (taking one costs O(number of
/// chunks of 512 rows), not O(rows)); IDs are built only when read.
public struct FetchedSnapshot: Sendable, Equatable {
    public var sections: [FetchedSection]

    public init(sections: [FetchedSection]) {
        self.sections = sections
    }

    init(rows: FetchedRows, entity: String) {
        sections = rows.sections.indices.map { FetchedSection(rows: rows, section: $0, entity: entity) }
    }

    /// Every ID, section by section.
    public var objectIDs: [ObjectID] { sections.flatMap(\.objectIDs) }

    public var numberOfObjects: Int { sections.reduce(0) { $0 + $1.numberOfObjects } }

    public func objectID(at path: FetchedIndexPath) -> ObjectID { sections[path.section].objectID(at: path.item) }
}

/// What one change of a results controller did, in the order a table view applies it.
///
/// The rules (UIKit's batch-update rules): section deletes and object deletes name **old** index
/// paths; section inserts and object inserts name **new** ones; a move goes from its old path to
/// its new path and is never also reported as an update; an update names both paths (the object
/// stayed in place relative to its neighbours: reload it). Objects that only shift because others
/// came or went are not reported. Applying deletes (descending), then inserts (ascending), then
/// moves to the old layout yields exactly the new one.
public struct FetchedChanges: Sendable, Equatable {
    public enum ObjectChange: Sendable, Equatable {
        case insert(ObjectID, at: FetchedIndexPath)
        case delete(ObjectID, at: FetchedIndexPath)
        case move(ObjectID, from: FetchedIndexPath, to: FetchedIndexPath)
        case update(ObjectID, from: FetchedIndexPath, to: FetchedIndexPath)
    }
    public enum SectionChange: Sendable, Equatable {
        case insert(FetchedSection, at: Int)
        case delete(FetchedSection, at: Int)
    }

    public var sections: [SectionChange] = []
    public var objects: [ObjectChange] = []
    /// The layout before and after.
    public var before: FetchedSnapshot
    public var after: FetchedSnapshot

    public var isEmpty: Bool { sections.isEmpty && objects.isEmpty }
}

/// What a results controller reports: a change set, or a reload (after `reset()`, a store
/// replacement, or a change the controller cannot follow row by row) with the new layout.
public enum FetchedResultsEvent: Sendable {
    case changes(FetchedChanges)
    case reload(FetchedSnapshot)
    /// A change could not be followed; the layout is the last good one (see
    /// ``FetchedResultsError/trackingFailed(reason:)``).
    case failed(FetchedResultsError)
}

/// A results controller's delegate, called on the context's queue. Every method has a default
/// that does nothing: implement the granularity you need — per change (will/did change, section
/// and object callbacks), a snapshot, or the whole change set.
///
/// The methods receive the controller as the type they are written with, its ``Controller``:
/// a typed controller's delegate names `FetchedResultsController<Good>` and gets it, typed
/// objects and all; a delegate for any controller names ``AnyFetchedResultsController``
/// (the default). The type is inferred from the methods, so a delegate whose methods name two
/// different controller types does not compile, and a delegate set on a controller of another
/// type stops at the assignment with a precondition failure that says so — a method is never
/// silently left uncalled because of its controller type.
///
/// ```swift
/// final class GoodsList: FetchedResultsControllerDelegate {
///     func controller(_ controller: FetchedResultsController<Good>, didChangeContentWith snapshot: FetchedSnapshot) {
///         // apply `snapshot`; `try controller.object(at:)` is a `Good`
///     }
/// }
/// ```
public protocol FetchedResultsControllerDelegate: AnyObject {
    /// The controller type the methods take: inferred from the methods written.
    associatedtype Controller: AnyFetchedResultsController = AnyFetchedResultsController
    func controllerWillChangeContent(_ controller: Controller)
    func controller(_ controller: Controller, didChange section: FetchedSection, atSectionIndex index: Int,
                    for type: FetchedResultsChangeType)
    func controller(_ controller: Controller, didChange objectID: ObjectID, at indexPath: FetchedIndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?)
    func controllerDidChangeContent(_ controller: Controller)
    /// The new layout after every change (and after a reload): section names and object IDs.
    func controller(_ controller: Controller, didChangeContentWith snapshot: FetchedSnapshot)
    /// The whole change set, or a reload.
    func controller(_ controller: Controller, didReport event: FetchedResultsEvent)
    /// A change could not be followed (the store could not be read); the layout is unchanged.
    func controller(_ controller: Controller, didFailWith error: FetchedResultsError)
}

public enum FetchedResultsChangeType: Sendable, Equatable {
    case insert, delete, move, update
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: Controller) {}
    public func controller(_ controller: Controller, didChange section: FetchedSection, atSectionIndex index: Int,
                           for type: FetchedResultsChangeType) {}
    public func controller(_ controller: Controller, didChange objectID: ObjectID, at indexPath: FetchedIndexPath?,
                           for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {}
    public func controllerDidChangeContent(_ controller: Controller) {}
    public func controller(_ controller: Controller, didChangeContentWith snapshot: FetchedSnapshot) {}
    public func controller(_ controller: Controller, didReport event: FetchedResultsEvent) {}
    public func controller(_ controller: Controller, didFailWith error: FetchedResultsError) {}
}

/// A controller refused a request.
public enum FetchedResultsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A results controller needs sort keys: the order of its rows.
    case missingSortKeys(entity: String)
    /// The first sort key must be the section key path: it orders the sections. Core Data
    /// silently mis-groups rows here (goods sorted by name but sectioned by category).
    case sectionKeyNotFirstSortKey(sectionKeyPath: String, firstSortKey: String)
    /// Sections are runs of equal stored values, so the section key must sort with the binary
    /// comparison: case-insensitively, "Fruit" and "fruit" would interleave into several sections
    /// of the same name.
    case sectionKeyNeedsBinaryComparison(sectionKeyPath: String)
    /// `performFetch()` has not run yet.
    case notFetched
    /// Following a change failed (the store could not be read): the controller kept its last
    /// layout, reported this, and re-runs its request on the next change.
    case trackingFailed(reason: String)
    /// The controller's cache name can't name a cache file, so the cache would miss at every
    /// fetch: a name is 1–200 UTF-8 bytes without NUL, and its encoded file name (every byte
    /// other than an ASCII letter, digit, `-` or `_` takes 3) must fit the 255-byte limit with the
    /// temporary prefix. `reason` names the rule broken (`empty`, `longer than 200 UTF-8 bytes`,
    /// `contains NUL`, `too long once encoded…`, as ``SectionCacheError/invalidName(_:reason:)``
    /// gives it). Thrown by ``FetchedResultsController/performFetch()`` before anything is
    /// fetched.
    case invalidCacheName(name: String, reason: String)

    public var description: String {
        switch self {
        case .missingSortKeys(let entity): "a results controller on \(entity) needs at least one sort key"
        case let .sectionKeyNotFirstSortKey(section, first):
            "the first sort key (\(first)) must be the section key path (\(section)): it decides the order of the sections; "
                + "sort by \(section) first, then by \(first)"
        case .sectionKeyNeedsBinaryComparison(let section):
            "the section key \(section) must be sorted with the binary comparison: sections are runs of equal values; "
                + "store a normalised copy of the value to section case-insensitively"
        case .notFetched: "call performFetch() first"
        case .trackingFailed(let reason): "the results controller could not follow a change (\(reason)); it keeps its last layout and re-runs its request on the next change"
        case let .invalidCacheName(name, reason):
            "invalid cache name \(name.debugDescription) (\(reason)): a cache name is 1–200 UTF-8 bytes without NUL whose "
                + "file name, with every byte other than a letter, digit, - or _ taking 3, fits 229 bytes; pick a shorter ASCII name, "
                + "or pass nil for no cache"
        }
    }
}

/// What following changes has cost a results controller so far: the work a change did, for
/// tests and diagnostics (no clock involved).
public struct FetchedResultsTracking: Sendable, Equatable {
    /// Times the request re-ran (a limit or offset, a commit elsewhere, a to-many dependency, or
    /// a failure to follow a change).
    public var reruns = 0
    /// Changed rows re-evaluated (membership and sort values).
    public var rowsEvaluated = 0
    /// Unchanged rows whose sort values were read to place a changed row (a binary search).
    public var rowsProbed = 0
    /// Probes answered by the sort values an earlier placement read of the same row, as the
    /// layout still lists it (same stamp, no related value changed since): no row read. The
    /// upper steps of a section's binary search visit the same rows for every change in it.
    public var rowsProbedFromMemory = 0
    /// Times the rows' versions were read for a layout served from a version 1 cache file
    /// (once, when tracking starts on it: such a file holds no stamps).
    public var stampLoads = 0
    /// Times tracking started on a layout served from a cache file that held its rows' stamps:
    /// only the store's stamp was read, to check that it had not moved on.
    public var stampChecks = 0
    /// Placements started again because a listed row read otherwise than the layout placed it
    /// (changed by a commit not yet merged, or by an edit not yet reported): that row was placed
    /// again with the changed ones.
    public var stalePlacements = 0
    /// Re-runs because a changed row read a related object (through a sort key path) otherwise
    /// than the list knew it: the list had that object's values from a read of the store ahead
    /// of the context (another connection's commit not yet merged). Counted in ``reruns`` too.
    public var relatedAheadReruns = 0
    public init(reruns: Int = 0, rowsEvaluated: Int = 0, rowsProbed: Int = 0) {
        self.reruns = reruns
        self.rowsEvaluated = rowsEvaluated
        self.rowsProbed = rowsProbed
    }
}
