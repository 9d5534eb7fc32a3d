import ArgumentParser
import Foundation
import Strata

/// `strata cache`: a store's durable section caches.
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List, inspect, verify and purge a store's section caches.",
        discussion: """
            A store's caches live in <store>.caches beside it unless --cache-dir names another \
            folder (StoreOptions.sectionCacheDirectory). Nothing here writes to the store.

            Example:
              strata cache list /tmp/goods.sqlite
              strata cache verify /tmp/goods.sqlite
              strata cache purge /tmp/goods.sqlite --stale
            """,
        subcommands: [CacheListCommand.self, CacheInspectCommand.self, CacheVerifyCommand.self, CachePurgeCommand.self]
    )
}

/// STORE and `--cache-dir`, shared by the cache commands.
struct CacheLocation: ParsableArguments {
    @OptionGroup var store: StoreArgument

    @Option(name: .customLong("cache-dir"),
            help: ArgumentHelp("The folder of the store's caches (default: <store>.caches beside the store).", valueName: "dir"))
    var cacheDirectory: String?

    /// `--cache-dir`'s exact bytes, made absolute; `nil` for the default folder.
    func directory() throws -> FileSystemPath? { try cacheDirectory.map { try RawArguments.path($0).absolute } }

    /// The inspector for STORE and its cache folder, after checking that STORE is a readable
    /// Strata store (one read transaction) and that an explicit `--cache-dir` exists.
    func inspector() throws -> StoreInspector {
        let inspector = try store.inspector(cacheDirectory: directory())
        try checkCacheDirectory()
        _ = try inspector.metadata()
        return inspector
    }

    /// The inspector for STORE after checking that every name in `names` is one of its caches:
    /// an unknown name fails before the store is opened, so it changes nothing on disk.
    func inspector(requiring names: [String]) throws -> StoreInspector {
        let inspector = try store.inspector(cacheDirectory: directory())
        try checkCacheDirectory()
        let existing = try inspector.caches().cacheNames()
        for name in names where !existing.contains(name) {
            _ = try SectionCacheStore.fileName(forCacheNamed: name)   // an impossible name is a usage error
            throw InspectionError.unknownCache(name: name)
        }
        _ = try inspector.metadata()
        return inspector
    }

    /// The cache folder's path, for messages.
    func folder(_ inspector: StoreInspector) -> String { inspector.caches().directoryPath.description }

    private func checkCacheDirectory() throws {
        guard let directory = try directory() else { return }
        var info = stat()
        guard directory.withCString({ stat($0, &info) }) == 0 else {
            throw CommandFailure(.noInput, "no such cache folder: \(directory)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw SectionCacheError.notADirectory(path: directory.description) }
    }
}

/// `strata cache list STORE [--json]`: ``StoreInspector/cacheReports(directory:)``.
struct CacheListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List a store's caches with their request, size and status.",
        discussion: """
            One line per cache (StoreInspector.cacheReports()): name, entity, sections, objects, \
            bytes on disk, the store generation the cache was written at and the store's now, its \
            status, and a one-line summary of its request. The status is `valid`, `stale (reason)` \
            or `corrupt (reason)`, with the reason codes a results controller logs \
            (SectionCacheRejection): a stale cache is sound but no longer describes the store; a \
            corrupt one is not a file this Strata wrote.

            Example:
              strata cache list /tmp/goods.sqlite
              strata cache list /tmp/goods.sqlite --json | jq '.[] | select(.status != "valid") | .name'
            """
    )

    @OptionGroup var location: CacheLocation
    @Flag(help: "Print JSON (an array of CacheReport, sorted keys) instead of text.")
    var json = false

    func run() throws {
        let inspector = try location.inspector()
        let reports = try inspector.cacheReports()
        if json { return try printJSON(reports) }
        guard !reports.isEmpty else {
            print("no caches in \(location.folder(inspector))")
            return
        }
        var table = Table([("NAME", .left), ("ENTITY", .left), ("SECTIONS", .right), ("OBJECTS", .right), ("SIZE", .right),
                           ("CACHE GEN", .right), ("STORE GEN", .right), ("STATUS", .left), ("REQUEST", .left)])
        for report in reports {
            table.append([report.name, report.entity ?? "-", report.sections.map(String.init) ?? "-", report.objects.map(String.init) ?? "-",
                          Format.bytes(report.bytes), report.generation.map(String.init) ?? "-", "\(report.storeGeneration)",
                          Format.status(report), report.request ?? "-"])
        }
        table.print()
        let counts = [CacheReport.Status.valid, .stale, .corrupt].compactMap { status -> String? in
            let number = reports.filter { $0.status == status }.count
            return number > 0 ? "\(number) \(status.rawValue)" : nil
        }
        print("\n\(Format.count(reports.count, "cache")) in \(location.folder(inspector)): \(counts.joined(separator: ", "))")
    }
}
