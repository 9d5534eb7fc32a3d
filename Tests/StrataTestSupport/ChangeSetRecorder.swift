internal import Foundation
public import Strata

/// Section names and the IDs in each, compared as a list shows them; a flat list compares its
/// IDs only (one section or none).
public struct ListLayout: Equatable, CustomStringConvertible, Sendable {
    public var names: [String]
    public var ids: [[ObjectID]]

    public init(names: [String], ids: [[ObjectID]]) {
        self.names = names
        self.ids = ids
    }

    public init(_ snapshot: FetchedSnapshot) {
        names = snapshot.sections.map(\.name)
        ids = snapshot.sections.map(\.objectIDs)
    }

    /// The IDs in one section: a flat list compares its IDs only.
    public var flattened: ListLayout { ListLayout(names: ["flat"], ids: [ids.flatMap { $0 }]) }

    public var description: String {
        zip(names, ids).map { "\($0.0)(\($0.1.count)): \($0.1.map { String($0.primaryKey) }.joined(separator: ","))" }.joined(separator: " | ")
    }
}

/// Records a controller's reports, each with its layouts copied out of the controller's storage
/// and whether `applied()` gives `after`, and when it came.
public final class ChangeSetRecorder: FetchedResultsControllerDelegate, @unchecked Sendable {
    // @unchecked Sendable: `events` is read and written only under `lock` (the controller calls on
    // main's queue, the test drains on its own thread).
    public struct Event: Sendable {
        public enum Kind: Sendable {
            case changes(before: FetchedSnapshot, after: FetchedSnapshot, appliedMatches: Bool)
            case other(String)
        }
        public var kind: Kind
        public var at: ContinuousClock.Instant
    }

    private let lock = NSLock()
    private var events: [Event] = []

    public init() {}

    public func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        let kind: Event.Kind
        switch event {
        case .changes(let changes):
            kind = .changes(before: Self.materialized(changes.before), after: Self.materialized(changes.after),
                            appliedMatches: changes.applied() == changes.after)
        case .reload(let snapshot): kind = .other("a reload to \(ListLayout(snapshot))")
        case .failed(let error): kind = .other("a failure: \(error)")
        }
        let now = ContinuousClock.now
        lock.withLock { events.append(Event(kind: kind, at: now)) }
    }

    /// The reports since the last call.
    public func drain() -> [Event] {
        lock.withLock {
            defer { events.removeAll() }
            return events
        }
    }

    /// The snapshot with its IDs copied out (no storage shared with the controller).
    public static func materialized(_ snapshot: FetchedSnapshot) -> FetchedSnapshot {
        FetchedSnapshot(sections: snapshot.sections.map { FetchedSection(name: $0.name, indexTitle: $0.indexTitle, objectIDs: $0.objectIDs) })
    }
}

