public import Foundation

/// The three-tier stack: a store, a *writer* context that alone commits to SQLite, a *main*
/// context (the view context) that is the writer's child, and short-lived *update* contexts that
/// are children of main.
///
/// ```
/// update ──save()──▶ main ──save()──▶ writer ──save()──▶ SQLite
///        ╰──────────────── saveToStore() ───────────────╯
/// ```
///
/// Beside the chain, ``newBackgroundContext(name:)`` gives the sibling layout Core Data's
/// `NSPersistentContainer` uses: a root context that commits straight to the store; the writer
/// and main merge its saves automatically, on their own queues (never the main queue).
///
/// ```swift
/// let container = try PersistentContainer(model: model, url: storeURL)
/// let update = container.newUpdateContext()
/// try update.performAndWait {
///     let good = try update.insert("Good")
///     try good.setValue("Apple", forKey: "name")
///     try update.saveToStore()      // update → main → writer → one COMMIT
/// }
/// ```
public final class PersistentContainer: Sendable {
    public let coordinator: StoreCoordinator
    /// The root of the chain: the only context of the stack that writes to SQLite. It merges the
    /// saves of background contexts automatically.
    public let writerContext: ManagedObjectContext
    /// The view context (Core Data's `viewContext`): the writer's child, where results
    /// controllers live. It merges everything the writer merges.
    public let mainContext: ManagedObjectContext

    /// Opens (or creates) the store at `url` and builds writer and main.
    public convenience init(model: Model, url: URL, options: StoreOptions = StoreOptions()) throws {
        self.init(coordinator: try StoreCoordinator(model: model, url: url, options: options))
    }

    /// Builds the stack on a private in-memory store.
    public convenience init(inMemoryWith model: Model) throws {
        self.init(coordinator: try StoreCoordinator(inMemoryWith: model))
    }

    /// Builds writer and main on an open coordinator.
    public init(coordinator: StoreCoordinator) {
        self.coordinator = coordinator
        writerContext = coordinator.newContext(name: "writer")
        writerContext.automaticallyMergesChangesFromParent = true
        mainContext = writerContext.newChildContext(name: "main")
        mainContext.automaticallyMergesChangesFromParent = true
        // The context a UI reads: its `@Entity` objects are observable (see `observesObjects`).
        mainContext.link.observesObjects = true
    }

    /// A new child of main for a unit of work: save it with ``ManagedObjectContext/save()`` (into
    /// main) or ``ManagedObjectContext/saveToStore()`` (through to SQLite).
    public func newUpdateContext(name: String? = nil) -> ManagedObjectContext {
        mainContext.newChildContext(name: name ?? "update")
    }

    /// A new root context on the coordinator (the sibling layout): its `save()` commits straight
    /// to the store, and writer and main merge the save automatically.
    public func newBackgroundContext(name: String? = nil) -> ManagedObjectContext {
        coordinator.newContext(name: name ?? "background")
    }

    /// Waits until the merges already handed to writer and main have run. Merges are
    /// asynchronous; a test or a command-line tool that needs main up to date after a background
    /// save calls this (an app simply observes main's events).
    public func waitForPendingMerges() {
        writerContext.performAndWait {}
        mainContext.performAndWait {}
    }
}
