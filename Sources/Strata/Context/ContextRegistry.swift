/// The contexts of one coordinator, weakly held: every live one in registration order (a
/// parent before its children), and the root contexts that merge the others' saves. The
/// coordinator owns one and hands it what reaches every context: another root's save, a batch
/// request or another connection's commit, the store's replacement.
final class ContextRegistry: Sendable {
    /// Every context made on the coordinator, in registration order.
    private let contexts = Locked<[WeakContext]>([])
    /// Root contexts that asked to merge the others' saves.
    private let mergingRoots = Locked<[WeakContext]>([])

    func register(_ context: ManagedObjectContext) {
        contexts.withLock { list in
            list.removeAll { $0.context == nil }
            list.append(WeakContext(context: context))
        }
    }

    func registerMergingRoot(_ context: ManagedObjectContext) {
        mergingRoots.withLock { list in
            list.removeAll { $0.context == nil }
            if !list.contains(where: { $0.context === context }) { list.append(WeakContext(context: context)) }
        }
    }

    /// Every live context, in registration order.
    func all() -> [ManagedObjectContext] {
        contexts.withLock { $0.compactMap(\.context) }
    }

    /// Roots of the context tree: another connection's rows are merged into them, and each hands
    /// them on to its children as any merge does.
    func roots() -> [ManagedObjectContext] {
        all().filter { $0.parent == nil }
    }

    /// Whether a root context other than `context` merges the others' saves.
    func hasMergingRoots(besides context: ManagedObjectContext) -> Bool {
        mergingRoots.withLock { roots in
            roots.contains { root in root.context.map { $0 !== context && $0.automaticallyMergesChangesFromParent } ?? false }
        }
    }

    /// Hands a root context's save to every other root context that merges automatically; each
    /// merges on its own queue, in the order of the saves.
    func broadcast(_ save: DidSave, from origin: ManagedObjectContext) {
        let targets = mergingRoots.withLock { $0.compactMap(\.context) }
        for target in targets where target !== origin && target.automaticallyMergesChangesFromParent {
            target.enqueue { target.mergeChanges(from: save) }
        }
    }

    /// Tells every context that rows of `entities` changed without passing through them
    /// (another connection's commit, a batch request), in registration order, so that a parent
    /// has taken the news before its children read through it. Objects of `deleted` leave the
    /// contexts that hold them unchanged (reported as invalidated).
    ///
    /// `deletionsNamed`: `deleted` is every row the change deleted (a batch request, a commit's
    /// own side effects), so the contexts need not look for other gone rows; another
    /// connection's commit names none.
    func tell(changed entities: Set<String>, deleted: Set<ObjectID> = [], deletionsNamed: Bool = false) {
        for context in all() {
            context.enqueue { context.storeChangedElsewhere(entities, deleted: deleted, deletionsNamed: deletionsNamed) }
        }
    }
}
