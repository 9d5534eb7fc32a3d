/// What a results controller's last ``FetchedResultsController/performFetch()`` did with its
/// durable section cache (see <doc:SectionCacheFormat>): read it as
/// ``FetchedResultsController/cacheStatus``.
///
/// ```swift
/// try controller.performFetch()
/// switch controller.cacheStatus {
/// case .served: break                                  // no query ran
/// case .rebuilt(let reason): print("cache \(reason)")  // fetched; a new file is being written
/// case .skipped(let reason): print("no cache: \(reason)")
/// case .none: break                                    // no cache name
/// }
/// ```
public enum SectionCacheStatus: Sendable, Equatable, CustomStringConvertible {
    /// The controller has no cache name (or has not fetched yet).
    case none
    /// The cache file matched the committed store: its sections and IDs were installed and no
    /// query ran.
    case served
    /// The cache file was not served, for the reason given (``SectionCacheRejection/missing`` on
    /// a first launch, ``SectionCacheRejection/entityChanged`` after a commit, a corrupt file…):
    /// the controller fetched from the store and scheduled a new file's write.
    case rebuilt(SectionCacheRejection)
    /// The cache did not apply to this fetch: it was neither read nor written.
    case skipped(SectionCacheSkipReason)

    /// The reason of ``rebuilt(_:)``; `nil` for every other status.
    public var rejection: SectionCacheRejection? {
        if case .rebuilt(let reason) = self { reason } else { nil }
    }

    /// `none`, `served`, `rebuilt (<reason code>)` or `skipped (<reason code>)`.
    public var description: String {
        switch self {
        case .none: "none"
        case .served: "served"
        case .rebuilt(let reason): "rebuilt (\(reason.rawValue))"
        case .skipped(let reason): "skipped (\(reason.rawValue))"
        }
    }
}

/// Why a results controller with a cache name did not use the cache at a fetch.
public enum SectionCacheSkipReason: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// The context or one of its ancestors holds unsaved changes to an entity the request reads:
    /// the fetch shows them, and a cache holds committed rows only, so it is neither served nor
    /// written. Save (or fetch before editing) to use the cache.
    case unsavedChanges = "unsaved-changes"
    /// The store is in memory: it has no folder to keep caches in.
    case inMemoryStore = "in-memory-store"

    /// The reason code (`unsaved-changes`, `in-memory-store`).
    public var description: String { rawValue }
}
