import Foundation
import PostgresNIO

// The floor: the same rows written straight through postgres-nio into a plain table of the same
// server, and read back, with nothing of Strata or StrataSync in between. What sync costs beyond
// moving the rows themselves is the distance from here.

enum Floor {
    /// Rows per INSERT statement (10 bind parameters a row: 10,000 of PostgreSQL's 65,535).
    static let rowsPerStatement = 1_000

    static func connect(_ cluster: PostgresCluster, logger: Logger) async throws -> PostgresConnection {
        let configuration = PostgresConnection.Configuration(unixSocketPath: "\(cluster.socketDirectory)/.s.PGSQL.\(cluster.port)",
                                                             username: cluster.username, password: nil, database: cluster.database)
        return try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    }

    static func createTable(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("""
            CREATE TABLE flights_floor (
                id bigint PRIMARY KEY, year bigint NOT NULL, month bigint NOT NULL, day bigint NOT NULL,
                dep_delay double precision, carrier text NOT NULL, tailnum text, origin text NOT NULL, dest text NOT NULL,
                distance double precision NOT NULL)
            """, logger: logger)
    }

    /// Inserts `rows` (keys 1…n) in one transaction, `rowsPerStatement` rows per INSERT with bind
    /// parameters (binary format). The measured region: building the binds included.
    static func write(_ rows: [FlightRow], _ connection: PostgresConnection, logger: Logger) async throws {
        func sql(rows count: Int) -> String {
            var sql = "INSERT INTO flights_floor (id, year, month, day, dep_delay, carrier, tailnum, origin, dest, distance) VALUES "
            for row in 0..<count {
                let p = row * 10
                sql += (row == 0 ? "" : ",")
                    + "($\(p + 1)::int8,$\(p + 2)::int8,$\(p + 3)::int8,$\(p + 4)::int8,$\(p + 5)::float8,"
                    + "$\(p + 6)::text,$\(p + 7)::text,$\(p + 8)::text,$\(p + 9)::text,$\(p + 10)::float8)"
            }
            return sql
        }
        let fullSQL = sql(rows: rowsPerStatement)
        try await connection.withTransaction(logger: logger) { connection in
            for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
                let end = min(start + rowsPerStatement, rows.count)
                var binds = PostgresBindings(capacity: (end - start) * 10)
                for index in start..<end {
                    let f = rows[index]
                    binds.append(Int64(index + 1))
                    binds.append(f.year)
                    binds.append(f.month)
                    binds.append(f.day)
                    binds.append(f.depDelay)
                    binds.append(f.carrier)
                    binds.append(f.tailnum)
                    binds.append(f.origin)
                    binds.append(f.dest)
                    binds.append(f.distance)
                }
                let text = end - start == rowsPerStatement ? fullSQL : sql(rows: end - start)
                try await connection.query(PostgresQuery(unsafeSQL: text, binds: binds), logger: logger)
            }
        }
    }

    /// Every row, by one SELECT, decoded into `FlightRow`s; returns how many.
    static func read(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
        let sequence = try await connection.query("""
            SELECT id, year, month, day, dep_delay, carrier, tailnum, origin, dest, distance FROM flights_floor
            """, logger: logger)
        var rows: [FlightRow] = []
        for try await (_, year, month, day, depDelay, carrier, tailnum, origin, dest, distance)
            in sequence.decode((Int64, Int64, Int64, Int64, Double?, String, String?, String, String, Double).self) {
            rows.append(FlightRow(year: year, month: month, day: day, depDelay: depDelay, carrier: carrier, tailnum: tailnum,
                                  origin: origin, dest: dest, distance: distance))
        }
        return rows.count
    }

    /// One number from a query (`count(*)`, `pg_total_relation_size(…)`).
    static func scalar(_ sql: String, _ connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Int64.self) {
            return value
        }
        throw BenchError("\(sql) returned no row")
    }
}
