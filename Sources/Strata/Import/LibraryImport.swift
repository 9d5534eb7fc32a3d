public import Foundation
internal import StrataSQLite

/// How ``StoreCoordinator/importFile(at:options:progress:)`` reads a file into an entity.
public struct ImportOptions: Sendable {
    /// CSV (a header row) or JSON Lines (one object per line).
    public enum Format: String, Sendable, Codable { case csv, jsonLines = "jsonl" }

    /// The entity the rows become.
    public var entity: String
    /// The file's format; `nil` tells it by the extension (`.jsonl`, `.ndjson`: JSON Lines, else CSV).
    public var format: Format?
    /// Column (or JSON member) → property. A column maps to the attribute of its own name unless
    /// mapped here; `"airline": "airline.carrier"` maps a column to a to-one, found by an
    /// attribute of its destination (here the `Airline` whose `carrier` is the column's value;
    /// the first such row: make the attribute unique so that there is one).
    public var mapping: [String: String] = [:]
    /// The key rows are matched by: the entity's first unique key when `nil`.
    public var key: [String]?
    /// Rows per transaction (each a commit other processes see land).
    public var batchSize = 5_000
    /// A field with exactly this text is no value (`"NA"`, `"\\N"`), as an empty field is.
    public var nullText: String?
    /// A `DateFormatter` format for date columns (UTC, `en_US_POSIX`); ISO 8601 when `nil`.
    public var dateFormat: String?
    /// Start from the file's beginning even when an earlier run of this file stopped halfway.
    public var restart = false
    /// Stop at the first bad row (its batch not committed) instead of skipping it.
    public var strict = false
    /// Where bad rows are written (CSV, or JSON Lines when the path ends in `.jsonl`), each with
    /// its line, column and reason, as DuckDB's rejects table.
    public var rejects: URL?

    public init(entity: String) {
        self.entity = entity
    }
}

/// What an import did, this run.
public struct ImportSummary: Sendable, Codable, Equatable {
    public var inserted = 0, updated = 0, unchanged = 0, rejected = 0
    /// Rows read this run (inserted + updated + unchanged + rejected).
    public var rows = 0
    /// Commits made (a batch that changed nothing commits nothing).
    public var commits = 0
    /// The line this run started reading rows at: the first after a CSV's header (2) or a JSON
    /// Lines file's first (1), or where an earlier run's last committed batch ended.
    public var startLine = 1
    /// Whether this run went on from an earlier run's checkpoint.
    public var resumed = false
    /// Whether the file had been imported whole before, unchanged since (nothing was read).
    public var alreadyComplete = false
    /// Columns no property takes (ignored).
    public var ignoredColumns: [String] = []
}

/// Where an import is, reported after each batch.
public struct ImportProgress: Sendable {
    public var rows: Int
    public var bytes: Int64
    public var totalBytes: Int64
}

/// A row an import could not take.
public struct ImportRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    /// The column (or JSON member), `nil` for the row as a whole.
    public var column: String?
    public var reason: String
    public var description: String { "line \(line)" + (column.map { ", column \($0)" } ?? "") + ": \(reason)" }
}

/// An import that can't start (a bad option, a header that names no property, a file that is gone).
public struct ImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

extension StoreCoordinator {
    /// Imports a CSV or JSON Lines file into `options.entity`, one transaction per
    /// `options.batchSize` rows, each row upserted by the entity's unique key: a row whose key is
    /// stored updates that row (the properties the file gives; an equal row writes nothing), any
    /// other is inserted. The file's identity and the byte offset reached are committed in the
    /// same transaction as each batch, so a run that is killed continues, when run again, where
    /// its last committed batch ended, and no row is applied twice. Run again over an unchanged
    /// store, it commits nothing. See <doc:ImportingALibrary>.
    ///
    /// - Throws: ``ImportError`` before anything is read; ``ImportRejection`` for the first bad
    ///   row under `strict` (its batch not committed); a store error.
    public func importFile(at url: URL, options: ImportOptions,
                           progress: ((ImportProgress) -> Void)? = nil) throws -> ImportSummary {
        try refuseWriteIfReadOnly("an import")
        var job = try ImportJob(coordinator: self, url: url, options: options)
        return try job.run(progress: progress)
    }
}
