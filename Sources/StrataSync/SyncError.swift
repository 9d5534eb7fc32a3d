public import Foundation

/// What went wrong while syncing. Every failure of ``SyncEngine`` is one of these, with what it
/// was doing; none is swallowed (``SyncEngine/follow(options:)`` records the ones it retries in
/// ``SyncStatus/lastError`` and goes on).
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server could not be reached, or the connection broke: retry later (nothing was lost).
    case serverUnavailable(String)
    /// The server answered with an error while the engine was `doing` something.
    case server(doing: String, message: String)
    /// The server's database holds replicas of a store of another model.
    case modelMismatch(server: String, local: String)
    /// The server's sync schema is newer than this build understands.
    case serverSchemaTooNew(found: Int, supported: Int)
    /// This model can't be synced yet (many-to-many relationships, `deny` or `noAction` delete rules).
    case unsupportedModel(String)
    /// The store keeps no history: sync reads what to push from it.
    case historyNotKept
    /// The store's history no longer reaches back to the last transaction pushed (it was pruned
    /// by a build without sync, or the store was replaced): what was not pushed can't be told.
    case historyExpired(pushedThrough: Int64)
    /// The store was enrolled with another server database (its replica is unknown there).
    case replicaUnknown(replica: Int64, store: UUID)
    /// The store had rows when sync was switched on, and another replica seeded the database
    /// with its rows first: their keys could collide. Start this replica from an empty store.
    case seedConflict
    /// Another round (of this engine's follower, another engine, another process) has held the
    /// store's sync lock, the file at `path`, for over 60 s. Try again later.
    case alreadySyncing(path: String)
    /// A server transaction this build can't read.
    case undecodableTransaction(seq: Int64, reason: String)
    /// A local error (the store refused a read or a write).
    case local(String)

    public var description: String {
        switch self {
        case .serverUnavailable(let reason): "the sync server is unavailable: \(reason)"
        case let .server(doing, message): "the sync server refused \(doing): \(message)"
        case let .modelMismatch(server, local):
            "the server's database syncs stores of model \(server), this store's model is \(local): use another database or migrate every replica"
        case let .serverSchemaTooNew(found, supported): "the server's sync schema is version \(found); this build reads up to \(supported)"
        case .unsupportedModel(let reason): "this model can't be synced: \(reason)"
        case .historyNotKept: "the store keeps no history (StoreOptions.history.isEnabled = false): sync reads what to push from it"
        case .historyExpired(let through):
            "the store's history no longer reaches back to generation \(through), the last one pushed: what was not pushed can't be told"
        case let .replicaUnknown(replica, store):
            "the server's database does not know replica \(replica) (store \(store.uuidString)): the store was enrolled with another database"
        case .seedConflict:
            "another replica seeded the server's database with its rows first: start this replica from an empty store"
        case .alreadySyncing(let path): "another sync round has held \(path) for over 60 s"
        case let .undecodableTransaction(seq, reason): "server transaction \(seq) can't be read by this build: \(reason)"
        case .local(let message): "the local store refused: \(message)"
        }
    }
}
