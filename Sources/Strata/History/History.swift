public import Foundation

/// A point in a store's history: the generation a commit made (every commit of a store, through
/// any connection, makes the next one), and the store it belongs to.
///
/// Keep the last token you read (it is `Codable`) and ask for what came after it with
/// ``StoreCoordinator/history(after:author:limit:includingRowValues:)``. Tokens of one store compare by generation; a token
/// of another store (or of this store before ``StoreCoordinator/replaceStore(withContentsOf:)``)
/// is refused with ``HistoryError/tokenOfAnotherStore(token:store:)``.
///
/// A token also names the store's lineage: the nonce of the commit that made its generation.
/// An older copy of the store restored under the same UUID reaches the same generations again by
/// other commits; ``StoreCoordinator/history(after:author:limit:)`` then refuses the token with
/// ``HistoryError/expired(token:oldestKept:)`` instead of reading the other lineage's commits as
/// if they followed it. Tokens compare by store and generation only (the lineage is checked
/// against the store, not between tokens); a token made with ``init(store:generation:)``, or
/// decoded from a 0.3.0 token, has none and is checked by generation alone.
public struct HistoryToken: Codable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The store's UUID (``StoreMetadata/storeUUID``).
    public let store: UUID
    /// The generation the commit made.
    public let generation: Int64
    /// The nonce of the commit that made `generation` (``StoreMetadata/nonce``), or `nil`.
    public let lineage: Data?

    public init(store: UUID, generation: Int64) {
        self.init(store: store, generation: generation, lineage: nil)
    }

    public init(store: UUID, generation: Int64, lineage: Data?) {
        self.store = store
        self.generation = generation
        self.lineage = lineage
    }

    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.generation < rhs.generation }

    public static func == (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.store == rhs.store && lhs.generation == rhs.generation }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(store)
        hasher.combine(generation)
    }

    public var description: String { "\(generation)" }
}

/// One commit as the store's history records it (Core Data's `NSPersistentHistoryTransaction`).
public struct HistoryTransaction: Sendable, Identifiable {
    /// What wrote the commit.
    public enum Kind: String, Sendable, Codable {
        /// A context's save.
        case save
        case batchInsert = "batch-insert"
        case batchUpdate = "batch-update"
        case batchDelete = "batch-delete"
        /// A migration. Its row changes are not listed: a reader whose copy is older must read
        /// the store again (the model changed too).
        case migration
    }

    public let token: HistoryToken
    public var id: HistoryToken { token }
    /// When the commit was made (the writing process's clock).
    public let date: Date
    public let kind: Kind
    /// The saving context's ``ManagedObjectContext/transactionAuthor`` (Core Data's name), or
    /// `nil`. Batch requests take the coordinator's ``StoreCoordinator/transactionAuthor``.
    public let author: String?
    /// The name of the context that committed (``ManagedObjectContext/name``), or `nil`.
    public let contextName: String?
    /// The writing process's name and ID.
    public let processName: String
    public let processID: Int32
    /// The rows the commit changed, in the order they were recorded.
    public let changes: [HistoryChange]
}

/// One row a commit inserted, updated or deleted.
public struct HistoryChange: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case insert, update, delete
    }

    public let objectID: ObjectID
    public let kind: Kind
    /// The record's values by the model's slots (`nil`: none); the dictionaries below are made
    /// from them when asked, so a history read builds none.
    let values: HistoryValues?

    init(objectID: ObjectID, kind: Kind, values: HistoryValues?) {
        self.objectID = objectID
        self.kind = kind
        self.values = values
    }

    /// An update's changed attributes, with their new values (`nil`: cleared). An insert lists
    /// none: the row holds its values, and later changes to it are later records.
    public var attributes: [String: AttributeValue?] { values?.attributes(kept: false) ?? [:] }
    /// An update's changed to-one relationships, with the object each names now (`nil`: none).
    public var toOnes: [String: ObjectID?] { values?.toOnes(previous: false) ?? [:] }
    /// What the changed to-ones named before the update.
    public var previousToOnes: [String: ObjectID?] { values?.toOnes(previous: true) ?? [:] }
    /// Members a many-to-many relationship gained and lost in this commit, by relationship.
    public var addedMembers: [String: [ObjectID]] { values?.members(added: true) ?? [:] }
    public var removedMembers: [String: [ObjectID]] { values?.members(added: false) ?? [:] }
    /// A delete's last values of the attributes marked ``Attribute/preservesValueOnDeletion``
    /// (`@Attribute(.preserveValueOnDeletion)`).
    public var preservedValues: [String: AttributeValue?] { values?.attributes(kept: true) ?? [:] }

    /// The row's values as the read that returned this change saw them (all its attributes and
    /// to-ones), for an insert or an update read with `includingRowValues`; `nil` otherwise, and
    /// for a row a later transaction deleted. Read in the same read transaction as the history,
    /// so one page gives a consistent state: each row as of the page's last transaction or later
    /// (never older than its change).
    public internal(set) var row: HistoryRow? = nil

    /// Every key the change names, sorted.
    public var changedKeys: [String] {
        Set(attributes.keys).union(toOnes.keys).union(addedMembers.keys).union(removedMembers.keys).sorted()
    }

    public static func == (a: HistoryChange, b: HistoryChange) -> Bool {
        guard a.objectID == b.objectID, a.kind == b.kind, a.row == b.row else { return false }
        // The same parts read in another order are the same change.
        return a.values == b.values || (a.attributes == b.attributes && a.toOnes == b.toOnes && a.previousToOnes == b.previousToOnes
            && a.addedMembers == b.addedMembers && a.removedMembers == b.removedMembers && a.preservedValues == b.preservedValues)
    }

    /// Two records of one object in one transaction (its values, its many-to-many members).
    func combined(with other: HistoryChange) -> HistoryChange {
        let values: HistoryValues? = switch (values, other.values) {
        case let (a?, b?): a.combined(with: b)
        case let (a, b): a ?? b
        }
        return HistoryChange(objectID: objectID, kind: kind, values: values)
    }
}

/// A row's values, read with its history (``HistoryChange/row``).
public struct HistoryRow: Sendable, Equatable {
    /// Every attribute, by name (`nil`: no value).
    public let attributes: [String: AttributeValue?]
    /// Every to-one relationship, by name: the object it names, or `nil`.
    public let toOnes: [String: ObjectID?]
}

/// Errors of the history API.
public enum HistoryError: Error, Equatable, CustomStringConvertible {
    /// The token names another store (or this one before it was replaced).
    case tokenOfAnotherStore(token: HistoryToken, store: UUID)
    /// The store's history was not kept (``HistoryOptions/isEnabled`` off when it was created and
    /// ever since), so there is nothing to read.
    case historyNotKept(path: String)
    /// The history does not reach back to `token`: transactions after it were pruned (by age,
    /// by count, ``StoreCoordinator/deleteHistory(before:)``), written by a coordinator with
    /// history off, or lost to a migration that rebuilt the store. What came after `token` can't
    /// be told: read the store again, then follow from `oldestKept` (the oldest transaction still
    /// kept, `nil` when none is) or from ``StoreCoordinator/currentHistoryToken()``. Core Data's
    /// expired-token error (`NSPersistentHistoryTokenExpiredError`).
    case expired(token: HistoryToken, oldestKept: HistoryToken?)
    /// The token is past the store's last commit: it was read from another copy of the store
    /// (a newer one, or this one before an older copy was restored).
    case tokenAheadOfStore(token: HistoryToken, storeGeneration: Int64)
    /// A history record this build can't read (written by a newer Strata, or damaged): its
    /// transaction's token and what was wrong. Nothing was read as something else.
    case undecodableRecord(token: Int64, reason: String)

    public var description: String {
        switch self {
        case let .expired(token, oldest):
            "the history no longer reaches back to token \(token.generation) (the oldest transaction kept is "
                + (oldest.map { "\($0.generation)" } ?? "none") + "): read the store again, then follow from the current token"
        case let .tokenAheadOfStore(token, generation):
            "history token \(token.generation) is past the store's last commit (\(generation)): it was read from another copy of the store"
        case let .undecodableRecord(token, reason):
            "history transaction \(token) can't be read by this build: \(reason)"
        case let .tokenOfAnotherStore(token, store):
            "history token \(token.generation) is of store \(token.store.uuidString), not of this store (\(store.uuidString)): read the history from nil"
        case .historyNotKept(let path): "\(path) keeps no history (opened with StoreOptions.history.isEnabled = false)"
        }
    }
}

/// Whether a store's coordinator records history, and how long it is kept.
///
/// The default keeps history and follows other connections, and prunes the history at commits: transactions older than 7 days, and all
/// but the last 100,000, go (whichever keeps less). A reader whose token the pruning passed gets
/// ``HistoryError/expired(token:oldestKept:)`` from ``StoreCoordinator/history(after:author:limit:includingRowValues:)``;
/// a coordinator following other processes reads the store again once (see <doc:HistoryAndOtherProcesses>).
public struct HistoryOptions: Sendable, Equatable {
    /// Off: this coordinator's commits write no history (a bit faster; other processes following
    /// the store then read it again after each of them).
    public var isEnabled = true
    /// Transactions older than this are pruned; `nil` keeps them however old.
    public var maximumAge: Duration? = .seconds(7 * 24 * 3600)
    /// At most this many transactions are kept; `nil`: no limit.
    public var maximumTransactions: Int? = 100_000
    /// Whether this coordinator follows commits made through other connections (another process,
    /// another coordinator) as they land: it merges their rows into its contexts, without
    /// ``StoreCoordinator/processExternalChanges()``. Linux: inotify on the store's folder,
    /// else a poll of the store's generation every ``pollInterval``.
    ///
    /// On by default (Core Data makes its remote-change notification opt-in and leaves the merge
    /// to the app; Strata merges). A context with unsaved edits then hears of another process's
    /// delete as it lands, as of a sibling context's save: the deleted object leaves it, and
    /// relationships that named it let go. Turn it off to choose the moment with
    /// ``StoreCoordinator/processExternalChanges()``.
    public var followsOtherConnections = true
    /// How often the generation is read where inotify is missing (and, as a safety net, after
    /// a change notice found nothing new yet).
    public var pollInterval: Duration = .milliseconds(250)

    public init() {}

    /// No history written, no other connection followed.
    public static var off: HistoryOptions {
        var options = HistoryOptions()
        options.isEnabled = false
        options.followsOtherConnections = false
        return options
    }
}
