import Foundation
import GRDB

// GRDB 7.10 on its fastest path: hand-written `FetchableRecord` / `PersistableRecord`
// conformances (not Codable) decoding by column index, a `DatabaseQueue` in WAL mode with
// synchronous=NORMAL (Strata's settings), the same tables and indexes (created by a
// `DatabaseMigrator` migration so that the migration workload can add the next one), the same SQL
// as the raw side for queries.

let grdbVersion = "7.10.0"

/// GRDB's queue type under a name the runner can use without importing GRDB (whose
/// `FetchRequest` would clash with Strata's there).
typealias DatabaseQueueHandle = DatabaseQueue

extension Airline: PersistableRecord {
    static let databaseTableName = "Airline"
    func encode(to container: inout PersistenceContainer) {
        container["_pk"] = pk
        container["carrier"] = carrier
        container["name"] = name
    }
}

extension Airport: PersistableRecord {
    static let databaseTableName = "Airport"
    func encode(to container: inout PersistenceContainer) {
        container["_pk"] = pk
        container["faa"] = faa
        container["name"] = name
        container["lat"] = lat
        container["lon"] = lon
        container["alt"] = alt
        container["tz"] = tz
        container["dst"] = dst
        container["tzone"] = tzone
    }
}

extension Plane: PersistableRecord {
    static let databaseTableName = "Plane"
    func encode(to container: inout PersistenceContainer) {
        container["_pk"] = pk
        container["tailnum"] = tailnum
        container["year"] = year
        container["type"] = type
        container["manufacturer"] = manufacturer
        container["model"] = model
        container["engines"] = engines
        container["seats"] = seats
        container["speed"] = speed
        container["engine"] = engine
    }
}

extension Flight: FetchableRecord, PersistableRecord {
    static let databaseTableName = "Flight"

    /// Decodes `FlightsSQL.flightColumns` by index.
    init(row: Row) {
        self.init(pk: row[0], year: row[1], month: row[2], day: row[3], depTime: row[4], schedDepTime: row[5],
                  depDelay: row[6], arrTime: row[7], schedArrTime: row[8], arrDelay: row[9], flight: row[10],
                  tailnum: row[11], airTime: row[12], distance: row[13], hour: row[14], minute: row[15],
                  timeHour: Date(timeIntervalSinceReferenceDate: row[16]),
                  airline: row[17], origin: row[18], dest: row[19], plane: row[20])
    }

    func encode(to container: inout PersistenceContainer) {
        container["_pk"] = pk
        container["year"] = year
        container["month"] = month
        container["day"] = day
        container["dep_time"] = depTime
        container["sched_dep_time"] = schedDepTime
        container["dep_delay"] = depDelay
        container["arr_time"] = arrTime
        container["sched_arr_time"] = schedArrTime
        container["arr_delay"] = arrDelay
        container["flight"] = flight
        container["tailnum"] = tailnum
        container["air_time"] = airTime
        container["distance"] = distance
        container["hour"] = hour
        container["minute"] = minute
        // Stored as Strata stores dates: REAL seconds since 2001 (GRDB's default is text).
        container["time_hour"] = timeHour.timeIntervalSinceReferenceDate
        container["airline"] = airline
        container["origin"] = origin
        container["dest"] = dest
        container["plane"] = plane
    }
}

enum GRDBSide {
    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        return configuration
    }

    static func open(_ store: StorePath) throws -> DatabaseQueue {
        try openPath(store.path)
    }

    static func openPath(_ path: String) throws -> DatabaseQueue {
        try DatabaseQueue(path: path, configuration: configuration())
    }

    /// v1: the flights schema (the same SQL as the raw side); v2: the migration workload's column.
    static func migrator(includingV2: Bool) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            for statement in FlightsSQL.schema { try db.execute(sql: statement) }
        }
        if includingV2 {
            migrator.registerMigration("v2") { db in
                try db.alter(table: "Flight") { t in t.add(column: "status", .text).defaults(to: "scheduled") }
            }
        }
        return migrator
    }

    /// A new store with the v1 schema, through the migrator.
    static func create(_ store: StorePath) throws -> DatabaseQueue {
        let queue = try open(store)
        try migrator(includingV2: false).migrate(queue)
        return queue
    }

    /// Every table in one write transaction, a record `insert` per row.
    static func importAll(_ data: Dataset, flights: [Flight], into queue: DatabaseQueue) throws {
        try queue.write { db in
            for airline in data.airlines { try airline.insert(db) }
            for airport in data.airports { try airport.insert(db) }
            for plane in data.planes { try plane.insert(db) }
            for flight in flights { try flight.insert(db) }
        }
    }

    static func allFlights(_ queue: DatabaseQueue) throws -> [Flight] {
        try queue.read { try Flight.fetchAll($0, sql: FlightsSQL.allFlights) }
    }

    static func jfkDelayed(_ queue: DatabaseQueue) throws -> [Flight] {
        try queue.read { try Flight.fetchAll($0, sql: FlightsSQL.jfkDelayed, arguments: ["JFK", 60]) }
    }

    static func tailnumPrefix(_ queue: DatabaseQueue) throws -> [Flight] {
        try queue.read { try Flight.fetchAll($0, sql: FlightsSQL.tailnumPrefix, arguments: ["n1%"]) }
    }

    static func listIDsAndSections(_ queue: DatabaseQueue) throws -> (ids: [Int64], sections: [(name: String, count: Int)]) {
        try queue.read { db in
            let ids = try Int64.fetchAll(db, sql: FlightsSQL.orderedIDs)
            let sections = try Row.fetchAll(db, sql: FlightsSQL.sectionCounts).map { row -> (name: String, count: Int) in
                ((row[0] as String?) ?? "", row[1])
            }
            return (ids, sections)
        }
    }

    static func orderedIDs(_ queue: DatabaseQueue) throws -> [Int64] {
        try queue.read { try Int64.fetchAll($0, sql: FlightsSQL.orderedIDs) }
    }

    static func first50(_ queue: DatabaseQueue) throws -> [Flight] {
        try queue.read { try Flight.fetchAll($0, sql: FlightsSQL.first50) }
    }

    /// Opens the store and runs the migrator with v2 registered (v1 is already applied).
    static func migrate(_ store: StorePath) throws -> DatabaseQueue {
        let queue = try open(store)
        try migrator(includingV2: true).migrate(queue)
        return queue
    }

    static func appliedMigrations(_ queue: DatabaseQueue) throws -> [String] {
        try queue.read { try migrator(includingV2: true).appliedMigrations($0) }
    }
}
