import ArgumentParser
import Foundation
import Strata

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Strata: a Core Data–style persistence engine on SQLite.",
        discussion: """
            Every command is a thin shell over a library call an app can make too (StoreInspector). \
            Exit statuses: 0 ok, 1 verify found an invalid cache, 64 usage, 65 data error, \
            66 no input, 70 internal error, 74 I/O error, 75 store locked (try again), \
            77 the store can't be read or changed here without write access.

            Example:
              strata demo --path /tmp/goods.sqlite
              strata cache list /tmp/goods.sqlite
            """,
        subcommands: [Demo.self, StoreCommand.self, CacheCommand.self, HistoryCommand.self, WatchCommand.self, ImportCommand.self]
            + syncSubcommands
    )

    /// `strata sync`, built with StrataSync (absent when the package is built with STRATA_WITHOUT_SYNC).
    private static var syncSubcommands: [any ParsableCommand.Type] {
        #if canImport(StrataSync)
        return [SyncCommand.self]
        #else
        return []
        #endif
    }

    /// Parses, runs, and turns every error into one line on standard error and its exit status
    /// (see ``ExitStatus``). `--help` prints to standard output and exits 0. The arguments are
    /// read as bytes (``RawArguments``): a path that is not UTF-8 reaches the file system as given.
    static func main() {
        let arguments = RawArguments.strings
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            fail(error, arguments: arguments)
        }
        Foundation.exit(ExitStatus.ok.rawValue)
    }

    private static func fail(_ error: any Error, arguments: [String]) -> Never {
        let path = commandPath(arguments).joined(separator: " ")
        switch error {
        case let code as ExitCode:
            // Thrown after the command printed its own result (verify: 1).
            Foundation.exit(code.rawValue)
        case is CommandFailure, is InspectionError, is SectionCacheError, is StoreError:
            printError("\(path): \(error)")
            Foundation.exit(ExitStatus(for: error).rawValue)
        default:
            let code = exitCode(for: error)
            if code.isSuccess { exit(withError: error) }   // help: ArgumentParser prints it
            if code == .validationFailure {
                // ArgumentParser's usage errors and ValidationErrors: one line, a pointer to the help.
                printError("\(path): \(message(for: error)) (see '\(path) --help')")
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            printError("\(path): \(message(for: error))")
            Foundation.exit(ExitStatus.software.rawValue)
        }
    }

    /// The command names at the start of `arguments` (`strata cache purge`), for messages.
    static func commandPath(_ arguments: [String]) -> [String] {
        var path = ["strata"]
        var type: any ParsableCommand.Type = StrataCommand.self
        for argument in arguments {
            guard let next = type.configuration.subcommands.first(where: { name(of: $0) == argument }) else { break }
            path.append(argument)
            type = next
        }
        return path
    }

    private static func name(of type: any ParsableCommand.Type) -> String {
        type.configuration.commandName ?? String(describing: type).lowercased()
    }
}
