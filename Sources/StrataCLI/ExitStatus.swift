import ArgumentParser
import Foundation
import Strata

/// The exit statuses of `strata` (the values of BSD's `sysexits.h`). The "Command-line tool"
/// article documents them; every error reaches one of them through ``ExitStatus/init(for:)``.
enum ExitStatus: Int32 {
    /// Success (for `verify`: every cache checked matches the store).
    case ok = 0
    /// `strata cache verify` found a cache that is stale, corrupt, or differs from the store.
    case invalidCache = 1
    /// EX_USAGE: a bad command line (unknown option, missing argument, contradictory flags,
    /// nothing selected, an impossible cache name).
    case usage = 64
    /// EX_DATAERR: the input is there but is not what it must be (not SQLite, not a Strata store,
    /// a newer format, a store SQLite can't read, a store SQLite finds malformed).
    case dataError = 65
    /// EX_NOINPUT: no such file, a directory instead of a store file, an unknown cache name, a
    /// cache folder that is missing or not a folder, something other than a regular file under a
    /// cache's file name (purge).
    case noInput = 66
    /// EX_SOFTWARE: an error nobody expected (a bug; please report it).
    case software = 70
    /// EX_IOERR: a file that can't be read, a journal a crash left that can't be rolled back, or
    /// a cache that can't be removed (purge then says which caches it removed and which not).
    case ioError = 74
    /// EX_TEMPFAIL: the store is locked by another connection; try again later.
    case temporaryFailure = 75
    /// EX_NOPERM: the store is intact but can't be read or changed here without write access
    /// (a read-only mount, a file or folder without write permission); the message says why.
    case noPermission = 77
}

/// A failure a command reports itself: one line on standard error and an exit status.
struct CommandFailure: Error, CustomStringConvertible {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }
}

extension ExitStatus {
    /// The one mapping from errors to exit statuses.
    init(for error: any Error) {
        switch error {
        case let failure as CommandFailure:
            self = failure.status
        case let error as InspectionError:
            switch error {
            case .noSuchFile, .isADirectory, .unknownCache, .notACacheFile: self = .noInput
            case .unreadable, .hotJournal: self = .ioError
            case .purgeIncomplete(_, _, _, let cacheError): self = ExitStatus(for: cacheError) == .noPermission ? .noPermission : .ioError
            case .notADatabase, .notAStrataStore, .unsupportedFormat, .corrupt, .corruptPage, .sqlite, .walDamaged: self = .dataError
            case .locked: self = .temporaryFailure
            case .readOnly: self = .noPermission
            case .cache(let cacheError): self = ExitStatus(for: cacheError)
            }
        case let error as SectionCacheError:
            switch error {
            case .invalidName: self = .usage
            case .noSuchCache, .notADirectory, .directoryIsSymlink, .notAFile: self = .noInput
            // No write access (a read-only mount, a folder of another user): its own status.
            case .io(let error): self = [EROFS, EACCES, EPERM].contains(error.code) ? .noPermission : .ioError
            }
        case let error as StoreError:
            switch error {
            case .notADatabase, .notAStrataStore, .unsupportedFormat, .modelMismatch, .corruptPage, .walDamaged: self = .dataError
            case .uriOfAnotherStore, .malformedURI, .pageChecksumsDiffer: self = .usage
            case .sqlite: self = .ioError
            case .closed: self = .software
            case .readOnly: self = .noPermission
            case .busy, .storeReplacedElsewhere: self = .temporaryFailure
            }
        case let error as HistoryError:
            switch error {
            case .tokenOfAnotherStore, .tokenAheadOfStore, .expired: self = .dataError
            case .historyNotKept: self = .noInput
            case .undecodableRecord: self = .dataError
            }
        default:
            self = .software
        }
    }
}

/// Prints `line` (made one line) to standard error.
func printError(_ line: String) {
    let single = line.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }.joined(separator: " ")
    FileHandle.standardError.write(Data((single + "\n").utf8))
}
