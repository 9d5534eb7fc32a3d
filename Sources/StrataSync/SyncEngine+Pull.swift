internal import Foundation
@_spi(StrataSync) internal import Strata
internal import PostgresNIO
internal import Logging

// Pulling: the server's log folded onto the base and written into the store in one save.
extension SyncEngine {
    // MARK: Pull

    /// Applies every server transaction after the pulled position: folded onto the base (the
    /// server's state at that position, see ``SyncFold``) and the rows that changed written into
    /// the store in one save, with the new position. Returns how many it read (0: up to date),
    /// or `nil` when a local commit landed meanwhile (nothing was applied: push again first).
    func pull(_ connection: PostgresConnection, replica: Int64, generation: Int64, report: inout SyncReport) async throws -> Int? {
        let local = try self.local { try coordinator.syncState() }
        let pulled = Int64(local[SyncEngine.pulledKey] ?? "") ?? 0
        let log = try await readLog(connection, after: pulled)
        let transactions = log.transactions
        SyncKillPoint.hit("pull.read")
        guard let last = transactions.last?.seq ?? (log.snapshot != nil ? log.snapshotThrough : nil) else { return 0 }
        var aliases: [String: Int64] = [:]
        for (key, value) in local where key.hasPrefix("alias:") { aliases[key] = Int64(value) }
        let model = coordinator.model
        let folded: (overlay: [ObjectID: FoldRow?], aliases: [String: Int64], merged: Int)
        if let snapshot = log.snapshot {
            // Behind the compacted log: the snapshot is the base, every local row is compared.
            var fold = SyncFold(model: model, base: SnapshotBase(rows: snapshot.rows), aliases: snapshot.aliases)
            for transaction in transactions { try fold.apply(transaction) }
            var rows: [ObjectID: FoldRow?] = snapshot.rows.mapValues { .some($0) }
            for (id, row) in fold.overlay { rows[id] = .some(row) }
            for (id, _) in try self.local({ try coordinator.snapshotRows() }).rows where rows[id] == nil { rows[id] = .some(nil) }
            folded = (rows, snapshot.aliases.merging(fold.newAliases) { $1 }, fold.merged)
        } else {
            folded = try self.local {
                try coordinator.withSyncBase { base in
                    var fold = SyncFold(model: model, base: LocalBase(base: base), aliases: aliases)
                    for transaction in transactions { try fold.apply(transaction) }
                    return (try fold.rowsToWrite(changedSinceApply: base.changedSinceApply()), fold.newAliases, fold.merged)
                }
            }
        }
        let context = coordinator.newContext(name: "strata.sync")
        context.transactionAuthor = SyncEngine.transactionAuthor
        let outcome: (SyncApply.Counts, committed: Bool) = try context.performAndWait {
            let counts: SyncApply.Counts
            do {
                counts = try SyncApply.write(folded.overlay, into: context, model: model)
            } catch let error as SyncError {
                throw error
            } catch {
                throw SyncError.local("applying server transactions up to \(last): \(error)")
            }
            var bookkeeping = [SyncEngine.pulledKey: String(last)]
            for (key, value) in folded.aliases { bookkeeping[key] = String(value) }
            SyncKillPoint.hit("apply.built")
            context.syncStateForNextCommit = bookkeeping
            context.requiredGenerationForNextCommit = generation
            do {
                if context.hasChanges, try context.save() != nil { return (counts, true) }
                try coordinator.writeSyncState(bookkeeping, requiringGeneration: generation, clearingCapture: true)
                return (counts, true)
            } catch is StoreMovedError {
                context.rollback()
                return (counts, false)
            } catch {
                context.rollback()
                throw SyncError.local("saving server transactions up to \(last): \(error)")
            }
        }
        guard outcome.committed else { return nil }
        SyncKillPoint.hit("apply.committed")
        report.pulled += transactions.count
        report.pulledOwn += transactions.filter { $0.replica == replica }.count
        report.inserted += outcome.0.inserted
        report.updated += outcome.0.updated
        report.deleted += outcome.0.deleted
        report.merged += folded.merged
        let count = max(transactions.count, 1)
        if log.snapshot != nil { report.bootstrapped = true }
        update {
            $0.pulledThrough = last
            $0.pulledTransactions += count
            $0.serverSeq = max($0.serverSeq, last)
        }
        return count
    }

    struct Snapshot {
        var rows: [ObjectID: FoldRow]
        var aliases: [String: Int64]
    }

    /// The log after `after`, read in one repeatable-read transaction: when `after` is behind the
    /// compacted part, the snapshot and the transactions after it.
    func readLog(_ connection: PostgresConnection, after: Int64) async throws -> (transactions: [SyncTransaction], snapshot: Snapshot?, snapshotThrough: Int64) {
        try await ServerSchema.run("reading the server's log", logger) {
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                let through = try await connection.query("""
                    SELECT coalesce((SELECT value::bigint FROM strata_sync_meta WHERE key = 'snapshot-through'), 0)
                    """, logger: logger).collect().first?.decode(Int64.self) ?? 0
                var snapshot: Snapshot?
                var from = after
                if after < through {
                    var rows: [ObjectID: FoldRow] = [:]
                    for try await json in try await connection.query("SELECT row::text FROM strata_sync_snapshot", logger: logger).decode(String.self) {
                        for change in try SyncJSON.decode("[\(json)]", seq: through) {
                            rows[ObjectID(entityName: change.entity, primaryKey: change.key)] = FoldRow(attributes: change.attributes, toOnes: change.toOnes)
                        }
                    }
                    var aliases: [String: Int64] = [:]
                    for try await (name, target) in try await connection.query("SELECT name, target FROM strata_sync_snapshot_alias", logger: logger)
                        .decode((String, Int64).self) { aliases[name] = target }
                    snapshot = Snapshot(rows: rows, aliases: aliases)
                    from = through
                }
                var transactions: [SyncTransaction] = []
                while true {
                    let page = try await readTransactions(connection, after: transactions.last?.seq ?? from, limit: SyncEngine.pageSize, replica: nil)
                    transactions += page
                    if page.count < SyncEngine.pageSize { break }
                }
                try await connection.query("COMMIT", logger: logger)
                return (transactions, snapshot, through)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }
}
