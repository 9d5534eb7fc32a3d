/// What commits did, as everyone who must hear of them needs it: the follower's bookkeeping, the
/// section caches' logs and refreshes, and the contexts. Every producer builds one and hands it
/// to ``StoreCoordinator/afterCommit(_:)``, once: a save's commit, a batch request, and a
/// catch-up with other connections' commits.
struct CommitEffects {
    /// Who made the commits.
    enum Origin {
        /// This coordinator: a save or a batch request (the follower need not read them back).
        case ownCommit
        /// Other connections, read by a catch-up.
        case otherConnections
    }

    /// One commit.
    struct Commit {
        let generation: Int64
        let touched: Set<String>
        /// The keys the commit wrote of the given entities, or `nil` when not known (a batch
        /// request, a commit of too many keys). Called at once, never kept.
        let keys: (_ of: Set<String>) -> [String: [Int64]]?
    }

    /// What the contexts hear.
    enum ContextNews {
        /// Nothing beyond what the producer hands them itself (a save merges into its own
        /// ancestors and broadcasts to the merging roots).
        case none
        /// Rows of these entities changed without passing through the contexts: every context
        /// reads them again (``ContextRegistry/tell(changed:deleted:deletionsNamed:)``).
        case changed(Set<String>, deleted: Set<ObjectID> = [], deletionsNamed: Bool = false)
        /// Other connections' rows, merged into the roots that merge others' saves (and through
        /// them their merging children), as a sibling's save is. `batchEntities` reach the
        /// contexts outside their reach as a batch request here does; `rerun` (entities whose
        /// rows the history could not name) reaches every context.
        case merge(RowChanges, generation: Int64, batchEntities: Set<String>, rerun: Set<String>)
    }

    let origin: Origin
    /// Oldest first.
    var commits: [Commit]
    var news: ContextNews
}

extension StoreCoordinator {
    /// The one after-commit home. Called once by each producer, under the lock that orders its
    /// commits: the writer's lock for this coordinator's own (right after `COMMIT`), the
    /// follower's (`external.lock`) for a catch-up. In this order:
    ///
    /// 1. Own commits: the follower takes each generation as seen when it had seen the one
    ///    before (``noteOwnCommit(generation:touched:)``).
    /// 2. Every section cache's log notes each commit, oldest first, with the keys it wrote of
    ///    the entities that cache reads.
    /// 3. The caches that read a touched entity are queued for refresh.
    /// 4. The contexts' news is queued, each context on its own queue, a parent before its
    ///    children.
    ///
    /// Nothing here waits: steps 3 and 4 only queue work on other queues. Doing all of it under
    /// the producer's lock keeps the logs and the news in generation order.
    func afterCommit(_ effects: CommitEffects) {
        if effects.origin == .ownCommit {
            for commit in effects.commits { noteOwnCommit(generation: commit.generation, touched: commit.touched) }
        }
        for commit in effects.commits {
            caches.noteCommit(generation: commit.generation, touched: commit.touched, keys: commit.keys)
        }
        let touched = effects.commits.reduce(into: Set<String>()) { $0.formUnion($1.touched) }
        if !touched.isEmpty { caches.scheduleRefreshes(touching: touched) }
        switch effects.news {
        case .none:
            break
        case let .changed(entities, deleted, deletionsNamed):
            if !entities.isEmpty { contexts.tell(changed: entities, deleted: deleted, deletionsNamed: deletionsNamed) }
        case let .merge(rows, generation, batchEntities, rerun):
            let merging = contexts.roots().filter(\.automaticallyMergesChangesFromParent)
            if !rows.isEmpty {
                for context in merging {
                    context.enqueue { context.merge(rows, generation: generation) }
                }
            }
            if !batchEntities.isEmpty {
                for context in contexts.all() where !merging.contains(where: { $0 === context.root }) {
                    context.enqueue { context.storeChangedElsewhere(batchEntities) }
                }
            }
            if !rerun.isEmpty { contexts.tell(changed: rerun) }
        }
    }
}
