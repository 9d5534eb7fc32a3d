internal import Foundation
@_spi(StrataSync) internal import Strata
internal import PostgresNIO
internal import Logging

// Enrolling a store with the server, and pushing its local commits.
extension SyncEngine {
    // MARK: Enrolling

    /// The replica's number: registered with the server on the first round (the store's keys
    /// move to its block, and a store that had rows pushes them once, as a `seed` transaction).
    func enrol(_ connection: PostgresConnection) async throws -> Int64 {
        var local = try self.local { try coordinator.syncState() }
        let uuid = coordinator.storeUUID.uuidString
        if let known = local[SyncEngine.replicaKey].flatMap(Int64.init) {
            let rows = try await ServerSchema.run("looking up this replica", logger) {
                try await connection.query("SELECT replica, pushed_through FROM strata_sync_replica WHERE replica = \(known) AND store_uuid = \(uuid)", logger: logger)
                    .collect()
            }
            guard let row = rows.first else { throw SyncError.replicaUnknown(replica: known, store: coordinator.storeUUID) }
            // A push the server committed before this process could note it (killed between).
            let serverPushed = try row.decode((Int64, Int64).self).1
            let pushed = Int64(local[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
            if serverPushed > pushed { try self.local { try coordinator.writeSyncState([StoreCoordinator.pushedThroughKey: String(serverPushed)]) } }
            if local[SyncEngine.seedKey] == "1" { try await pushSeed(connection, replica: known) }
            update { $0.replica = known; $0.pushedThrough = max(serverPushed, pushed) }
            return known
        }
        // Register (or find this store's registration from a run killed before it noted it).
        let replica: Int64 = try await ServerSchema.run("registering this replica", logger) {
            let rows = try await connection.query("""
                INSERT INTO strata_sync_replica (store_uuid, name) VALUES (\(uuid), \(name ?? ProcessInfo.processInfo.hostName))
                ON CONFLICT (store_uuid) DO UPDATE SET name = EXCLUDED.name RETURNING replica
                """, logger: logger).collect()
            return try rows[0].decode(Int64.self)
        }
        SyncKillPoint.hit("enrol.registered")
        try self.local {
            try coordinator.installSyncCapture()
            try coordinator.moveKeys(toBlock: replica)
        }
        let snapshot = try self.local { try coordinator.snapshotRows() }
        local = [SyncEngine.replicaKey: String(replica), StoreCoordinator.pushedThroughKey: String(snapshot.generation),
                 SyncEngine.pulledKey: "0", SyncEngine.seedKey: snapshot.rows.isEmpty ? "0" : "1"]
        try self.local { try coordinator.writeSyncState(local) }
        if !snapshot.rows.isEmpty { try await pushSeed(connection, replica: replica) }
        update { $0.replica = replica; $0.pushedThrough = snapshot.generation }
        return replica
    }

    /// The rows the store had when sync was switched on, as one transaction (local generation 0).
    func pushSeed(_ connection: PostgresConnection, replica: Int64) async throws {
        let snapshot = try local { try coordinator.snapshotRows() }
        let changes = snapshot.rows.map { id, row in
            SyncChange(kind: .insert, entity: id.entityName, key: id.primaryKey, attributes: row.attributes, toOnes: row.toOnes.mapValues { $0?.primaryKey })
        }
        let json = try SyncJSON.encode(changes)
        try await ServerSchema.run("pushing this store's rows", logger) {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                let seeded = try await connection.query("SELECT count(*) FROM strata_sync_replica WHERE seeded AND replica <> \(replica)", logger: logger)
                    .collect()[0].decode(Int64.self)
                if seeded > 0 { throw SyncError.seedConflict }
                try await connection.query("""
                    INSERT INTO strata_sync_txn (seq, replica, local_generation, kind, changes)
                    VALUES ((SELECT \(unescaped: ServerSchema.nextSeq)), \(replica), 0, 'seed', \(json)::json)
                    ON CONFLICT (replica, local_generation) DO NOTHING
                    """, logger: logger)
                try await connection.query("UPDATE strata_sync_replica SET seeded = true WHERE replica = \(replica)", logger: logger)
                try await connection.query("SELECT pg_notify(\(ServerSchema.channel), (SELECT max(seq)::text FROM strata_sync_txn))", logger: logger)
            }
        }
        try local { try coordinator.writeSyncState([SyncEngine.seedKey: "0"]) }
    }

    // MARK: Push

    /// Pushes local transactions after the last pushed, a page per server transaction; returns
    /// how many were pushed. Idempotent: a page the server committed before a kill is not added
    /// again (`(replica, local_generation)` is unique).
    func push(_ connection: PostgresConnection, replica: Int64) async throws -> Int {
        var pushedCount = 0
        var pushed = Int64(try local { try coordinator.syncState() }[StoreCoordinator.pushedThroughKey] ?? "") ?? 0
        while true {
            let page = try history(after: pushed, limit: SyncEngine.pageSize)
            guard let last = page.last?.token.generation else { break }
            let outgoing: [(Int64, String, String)] = try page.compactMap { transaction in
                guard transaction.author != SyncEngine.transactionAuthor, transaction.kind != .migration else { return nil }
                let changes = transaction.changes.compactMap(SyncChange.init)
                guard !changes.isEmpty else { return nil }
                return (transaction.token.generation, transaction.kind.rawValue, try SyncJSON.encode(changes))
            }
            if !outgoing.isEmpty {
                try await ServerSchema.run("pushing local transactions", logger) {
                    try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query("SELECT pg_advisory_xact_lock(\(ServerSchema.lockKey))", logger: logger)
                        // Already on the server (a push killed after its commit): kept out even
                        // when its transaction was compacted away.
                        let known = try await connection.query("SELECT pushed_through FROM strata_sync_replica WHERE replica = \(replica)", logger: logger)
                            .collect().first?.decode(Int64.self) ?? 0
                        for (generation, kind, json) in outgoing where generation > known {
                            try await connection.query("""
                                INSERT INTO strata_sync_txn (seq, replica, local_generation, kind, changes)
                                VALUES ((SELECT \(unescaped: ServerSchema.nextSeq)), \(replica), \(generation), \(kind), \(json)::json)
                                ON CONFLICT (replica, local_generation) DO NOTHING
                                """, logger: logger)
                            ServerWatch.progress()
                        }
                        try await connection.query("""
                            UPDATE strata_sync_replica SET pushed_through = greatest(pushed_through, \(last)) WHERE replica = \(replica)
                            """, logger: logger)
                        try await connection.query("SELECT pg_notify(\(ServerSchema.channel), (SELECT max(seq)::text FROM strata_sync_txn))", logger: logger)
                        SyncKillPoint.hit("push.sent")
                    }
                }
                SyncKillPoint.hit("push.committed")
                pushedCount += outgoing.count
            }
            try local { try coordinator.writeSyncState([StoreCoordinator.pushedThroughKey: String(last)]) }
            pushed = last
            let count = outgoing.count
            update { $0.pushedThrough = last; $0.pushedTransactions += count }
        }
        return pushedCount
    }
}
