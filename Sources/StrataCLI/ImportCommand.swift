import ArgumentParser
import Foundation
import Strata

/// `strata import STORE --entity NAME FILE`: ``StoreCoordinator/importFile(at:options:progress:)``.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a CSV or JSON Lines file into an entity, resumably, upserting by a unique key.",
        discussion: """
            Opens STORE with the model it holds and reads FILE (CSV with a header, or JSON Lines \
            for .jsonl/.ndjson) into ENTITY, one transaction per --batch rows. Columns map to \
            attributes by name, or as --map gives (column=attribute, or column=toOne.attribute to \
            find a to-one's row by a unique attribute of its destination). Each row is matched by \
            the entity's unique key (or --key): a stored row is updated with the file's values \
            (an equal one is left alone), any other row is inserted. The file's identity and the \
            offset reached are committed with each batch: killed, the import goes on where its \
            last batch ended when run again (--restart starts over); run again after it ended, \
            it commits nothing. Bad rows are skipped, counted and written to --rejects with their \
            line, column and reason; --strict stops at the first with its batch not committed.

            Exit status: 0 done (rejected rows included), 64 a bad option or mapping, 65 a bad \
            row under --strict or a store that isn't one, 66 no such file.

            Example:
              strata import /tmp/flights.sqlite --entity Flight flights.csv --map carrier=airline.carrier
              strata import /tmp/books.sqlite --entity Book books.jsonl --key isbn --json
            """
    )

    @OptionGroup var location: StoreArgument
    @Option(help: "The entity the rows become.") var entity: String
    @Argument(help: "The CSV or JSON Lines file.") var file: String
    @Option(parsing: .singleValue, help: ArgumentHelp("column=attribute or column=toOne.attribute (repeatable).", valueName: "col=attr"))
    var map: [String] = []
    @Option(help: ArgumentHelp("Properties rows are matched by, comma-separated (default: the entity's unique key).", valueName: "props"))
    var key: String?
    @Option(help: "Rows per transaction.") var batch = 5_000
    @Option(name: .customLong("date-format"), help: "A date format (DateFormatter, UTC) for date columns; ISO 8601 otherwise.")
    var dateFormat: String?
    @Option(help: ArgumentHelp("A field with exactly this text is no value (as an empty one is), such as NA.", valueName: "text"))
    var null: String?
    @Option(help: "Write bad rows here (CSV, or JSON Lines for .jsonl).") var rejects: String?
    @Flag(help: "Start from the file's beginning, not where a killed run stopped.") var restart = false
    @Flag(help: "Stop at the first bad row.") var strict = false
    @Flag(help: "No progress line.") var quiet = false
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() throws {
        var options = ImportOptions(entity: entity)
        for pair in map {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw CommandFailure(.usage, "--map \(pair): write column=attribute or column=toOne.attribute")
            }
            options.mapping[parts[0]] = parts[1]
        }
        options.key = key.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        guard batch >= 1 else { throw CommandFailure(.usage, "--batch must be at least 1") }
        options.batchSize = batch
        options.dateFormat = dateFormat
        options.nullText = null
        options.rejects = rejects.map { URL(fileURLWithPath: $0) }
        options.restart = restart
        options.strict = strict
        let url = URL(fileURLWithPath: file)
        guard FileManager.default.fileExists(atPath: url.path) else { throw CommandFailure(.noInput, "\(file): no such file") }

        let inspector = try location.inspector()
        _ = try inspector.metadata()
        let model = try inspector.model()
        var storeOptions = StoreOptions()
        storeOptions.history.followsOtherConnections = false
        let coordinator = try StoreCoordinator(model: model, url: inspector.url, options: storeOptions)
        defer { coordinator.close() }
        let showsProgress = !quiet && isatty(STDERR_FILENO) == 1
        let started = Date()
        let summary: ImportSummary
        do {
            summary = try coordinator.importFile(at: url, options: options) { progress in
                guard showsProgress else { return }
                let seconds = max(Date().timeIntervalSince(started), 0.001)
                let rate = Double(progress.rows) / seconds
                let remaining = progress.totalBytes > progress.bytes && progress.bytes > 0
                    ? seconds * Double(progress.totalBytes - progress.bytes) / Double(progress.bytes) : 0
                let line = "\r\(progress.rows) rows  \(Format.bytes(progress.bytes))/\(Format.bytes(progress.totalBytes))  "
                    + "\(Int(rate)) rows/s  ETA \(Int(remaining.rounded()))s   "
                FileHandle.standardError.write(Data(line.utf8))
            }
        } catch let error as ImportError {
            throw CommandFailure(.usage, error.message)
        } catch let rejection as ImportRejection {
            throw CommandFailure(.dataError, "\(file): \(rejection) (--strict: nothing of its batch was committed)")
        }
        if showsProgress { FileHandle.standardError.write(Data("\n".utf8)) }
        if json { return try printJSON(summary) }
        if summary.alreadyComplete {
            print("\(file) was imported whole into \(entity) before and has not changed since: nothing to do (--restart reads it again)")
            return
        }
        var line = "\(entity): \(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged, "
            + "\(summary.rejected) rejected (\(summary.rows) rows read, \(summary.commits) commit\(summary.commits == 1 ? "" : "s")"
        if summary.resumed { line += ", resumed at line \(summary.startLine)" }
        line += ")"
        print(line)
        if !summary.ignoredColumns.isEmpty { print("ignored columns: " + summary.ignoredColumns.joined(separator: ", ")) }
    }
}
