internal import Foundation
@_spi(StrataSync) internal import Strata
internal import PostgresNIO
internal import Logging

// Compaction: the log up to a position folded into a snapshot on the server.
extension SyncEngine {
    // MARK: Compaction

    /// Folds the server's log up to this replica's position into a snapshot on the server and
    /// drops those transactions (after a round, so that the position is the server's last
    /// transaction). A replica behind the snapshot then starts from it, and the transactions
    /// after it. Returns the snapshot's position.
    @discardableResult
    public func compact() async throws -> Int64 {
        try await onConnection(doing: "compacting") { connection in
            _ = try await self.round(connection)
            return try await self.writeSnapshot(connection)
        }
    }

    func writeSnapshot(_ connection: PostgresConnection) async throws -> Int64 {
        let (through, rows, aliases): (Int64, [(ObjectID, HistoryRow)], [(String, Int64)]) = try local {
            try coordinator.withSyncBase { base in
                let state = try coordinator.syncState()
                let aliases = state.compactMap { key, value in key.hasPrefix("alias:") ? Int64(value).map { (key, $0) } : nil }
                return (Int64(state[SyncEngine.pulledKey] ?? "") ?? 0, try base.allRows(), aliases)
            }
        }
        let encoded = try rows.map { id, row in
            (id.entityName, id.primaryKey, String(try SyncJSON.encode([SyncChange(kind: .insert, entity: id.entityName, key: id.primaryKey,
                                                                                  attributes: row.attributes, toOnes: row.toOnes.mapValues { $0?.primaryKey })]).dropFirst().dropLast()))
        }
        return try await ServerSchema.run("writing the snapshot", logger) {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                let current = try await connection.query("""
                    SELECT coalesce((SELECT value::bigint FROM strata_sync_meta WHERE key = 'snapshot-through'), 0)
                    """, logger: logger).collect().first?.decode(Int64.self) ?? 0
                guard through > current else { return current }
                try await connection.query("DELETE FROM strata_sync_snapshot", logger: logger)
                try await connection.query("DELETE FROM strata_sync_snapshot_alias", logger: logger)
                for chunk in stride(from: 0, to: encoded.count, by: 500) {
                    let rows = encoded[chunk..<min(chunk + 500, encoded.count)]
                    var bindings = PostgresBindings()
                    var values: [String] = []
                    for (index, (entity, key, json)) in rows.enumerated() {
                        bindings.append(entity)
                        bindings.append(key)
                        bindings.append(json)
                        values.append("($\(3 * index + 1), $\(3 * index + 2), $\(3 * index + 3)::json)")
                    }
                    try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO strata_sync_snapshot (entity, key, row) VALUES " + values.joined(separator: ", "),
                                                              binds: bindings), logger: logger)
                    ServerWatch.progress()
                }
                for (name, target) in aliases {
                    try await connection.query("INSERT INTO strata_sync_snapshot_alias (name, target) VALUES (\(name), \(target))", logger: logger)
                }
                try await connection.query("""
                    INSERT INTO strata_sync_meta (key, value) VALUES ('snapshot-through', \(String(through)))
                    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                    """, logger: logger)
                try await connection.query("DELETE FROM strata_sync_txn WHERE seq <= \(through)", logger: logger)
                return through
            }
        }
    }

    /// Server transactions after `after` (all replicas', or one replica's), in the server's order.
    func readTransactions(_ connection: PostgresConnection, after: Int64, limit: Int?, replica: Int64?) async throws -> [SyncTransaction] {
        try await ServerSchema.run("reading the server's log", logger) {
            let rows: PostgresRowSequence
            switch (replica, limit) {
            case let (replica?, _):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE replica = \(replica) AND seq > \(after) ORDER BY seq
                    """, logger: logger)
            case let (nil, limit?):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE seq > \(after) ORDER BY seq LIMIT \(limit)
                    """, logger: logger)
            case (nil, nil):
                rows = try await connection.query("""
                    SELECT seq, replica, local_generation, kind, changes::text FROM strata_sync_txn
                    WHERE seq > \(after) ORDER BY seq
                    """, logger: logger)
            }
            var result: [SyncTransaction] = []
            for try await (seq, replica, generation, kind, json) in rows.decode((Int64, Int64, Int64, String, String).self) {
                result.append(SyncTransaction(seq: seq, replica: replica, localGeneration: generation, kind: kind,
                                              changes: try SyncJSON.decode(json, seq: seq)))
                ServerWatch.progress()
            }
            return result
        }
    }
}
