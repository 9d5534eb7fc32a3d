import ArgumentParser
import Foundation
import Strata

/// `strata cache purge STORE (NAME… | --all | --stale) [--dry-run]`:
/// ``StoreInspector/purgeCaches(_:directory:dryRun:)``.
struct CachePurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove caches: the ones named, every one (--all), or every one not valid (--stale).",
        discussion: """
            Each cache is removed with one unlink, so a reader sees the whole file or none: safe \
            while an app has the store open (its results controllers rebuild the cache at their \
            next fetch). --stale removes every cache that is not valid: stale or corrupt, as \
            `strata cache list` shows them. Every target is checked first: an unknown name, or \
            anything but a regular file under a cache's file name (a folder, a symbolic link), \
            removes nothing. If a removal still fails, the output says which caches were removed \
            and which were not (exit 74). With --dry-run nothing is removed; the output says what \
            would be.

            Example:
              strata cache purge /tmp/goods.sqlite --stale
              strata cache purge /tmp/goods.sqlite goods-by-category --dry-run
              strata cache purge /tmp/goods.sqlite --all
            """
    )

    @OptionGroup var location: CacheLocation
    @Argument(help: ArgumentHelp("The caches to remove.", valueName: "name"))
    var names: [String] = []
    @Flag(help: "Remove every cache of the store.")
    var all = false
    @Flag(help: "Remove every cache that is not valid (stale or corrupt).")
    var stale = false
    @Flag(help: "Remove nothing; print what would be removed.")
    var dryRun = false
    @Flag(help: "Print JSON (dryRun, directory, removed; notRemoved and error when a removal failed) instead of text.")
    var json = false

    /// What `purge --json` prints. `notRemoved` and `error` are there only when a removal failed
    /// after the checks (exit 74).
    struct Output: Codable, Equatable {
        var dryRun: Bool
        var directory: String
        var removed: [String]
        var notRemoved: [String]?
        var error: String?
    }

    func validate() throws {
        if !names.isEmpty, all { throw ValidationError("cache names and --all contradict each other; give one") }
        if !names.isEmpty, stale { throw ValidationError("cache names and --stale contradict each other; give one") }
        if all, stale { throw ValidationError("--all and --stale contradict each other; give one") }
        if names.isEmpty, !all, !stale { throw ValidationError("nothing selected: name the caches to remove, or give --all or --stale") }
    }

    func run() throws {
        var seen = Set<String>()
        let requested = names.filter { seen.insert($0).inserted }
        let inspector = try location.inspector(requiring: requested)
        let selection: CachePurgeSelection = all ? .all : stale ? .notValid : .named(requested)
        let folder = location.folder(inspector)
        let removed: [String]
        do {
            removed = try inspector.purgeCaches(selection, dryRun: dryRun)
        } catch {
            // Part done: say exactly what is gone and what is still there, then fail (one line
            // on standard error, exit 74).
            guard case let .purgeIncomplete(removed, failed, notRemoved, cause) = error else { throw error }
            if json {
                try printJSON(Output(dryRun: false, directory: folder, removed: removed, notRemoved: notRemoved, error: "\(cause)"))
            } else {
                for name in removed { print("removed \(name)") }
                for name in notRemoved { print("not removed \(name)") }
                print("\n\(removed.count) of \(Format.count(removed.count + notRemoved.count, "cache")) removed from \(folder); "
                      + "failed at \(failed): \(cause)")
            }
            throw error
        }
        if json { return try printJSON(Output(dryRun: dryRun, directory: folder, removed: removed)) }
        guard !removed.isEmpty else {
            print("no caches to remove in \(folder)")
            return
        }
        for name in removed { print("\(dryRun ? "would remove" : "removed") \(name)") }
        if dryRun {
            print("\ndry run: \(Format.count(removed.count, "cache")) would be removed from \(folder); nothing changed")
        } else {
            print("\n\(Format.count(removed.count, "cache")) removed from \(folder)")
        }
    }
}
