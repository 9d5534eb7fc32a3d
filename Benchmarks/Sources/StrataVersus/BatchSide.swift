import Foundation
import Strata
import CSQLiteRaw

// Strata's batch insert (issue 20): the same import as StrataSide.importAll, every table written
// by a BatchInsertRequest (no objects), compared with the raw side's import.
extension StrataSide {
    /// Inserts every table with batch inserts; to-ones by the IDs the earlier batches returned.
    static func batchImportAll(_ data: Dataset, flights: [Flight], into coordinator: StoreCoordinator) throws -> Int {
        let keys = try batchInsertReferenceTables(data, into: coordinator)
        return try batchInsertFlights(flights, keys: keys, into: coordinator)
    }

    /// The airlines', airports' and planes' IDs, in file order (the flights' keys are 1-based
    /// indexes into them).
    struct ReferenceKeys {
        var airlines: [ObjectID]
        var airports: [ObjectID]
        var planes: [ObjectID]
    }

    /// The airlines, airports and planes, one batch insert each.
    static func batchInsertReferenceTables(_ data: Dataset, into coordinator: StoreCoordinator) throws -> ReferenceKeys {
        let airlines = try coordinator.execute(BatchInsertRequest(entityName: "Airline", count: data.airlines.count) { i, row in
            let a = data.airlines[i]
            try row.set(a.carrier, forKey: "carrier")
            try row.set(a.name, forKey: "name")
        }).objectIDs
        let airports = try coordinator.execute(BatchInsertRequest(entityName: "Airport", count: data.airports.count) { i, row in
            let a = data.airports[i]
            try row.set(a.faa, forKey: "faa")
            try row.set(a.name, forKey: "name")
            try row.set(a.lat, forKey: "lat")
            try row.set(a.lon, forKey: "lon")
            try row.set(a.alt, forKey: "alt")
            try row.set(a.tz, forKey: "tz")
            try row.set(a.dst, forKey: "dst")
            try row.set(a.tzone, forKey: "tzone")
        }).objectIDs
        let planes = try coordinator.execute(BatchInsertRequest(entityName: "Plane", count: data.planes.count) { i, row in
            let p = data.planes[i]
            try row.set(p.tailnum, forKey: "tailnum")
            try row.set(p.year, forKey: "year")
            try row.set(p.type, forKey: "type")
            try row.set(p.manufacturer, forKey: "manufacturer")
            try row.set(p.model, forKey: "model")
            try row.set(p.engines, forKey: "engines")
            try row.set(p.seats, forKey: "seats")
            try row.set(p.speed, forKey: "speed")
            try row.set(p.engine, forKey: "engine")
        }).objectIDs
        return ReferenceKeys(airlines: airlines, airports: airports, planes: planes)
    }

    /// `flights` by one batch insert, their to-ones set by `keys`; the number inserted.
    static func batchInsertFlights(_ flights: [Flight], keys: ReferenceKeys, into coordinator: StoreCoordinator) throws -> Int {
        let (airlines, airports, planes) = (keys.airlines, keys.airports, keys.planes)
        let result = try coordinator.execute(BatchInsertRequest(entityName: "Flight", count: flights.count) { i, row in
            let f = flights[i]
            try row.set(f.year, forKey: "year")
            try row.set(f.month, forKey: "month")
            try row.set(f.day, forKey: "day")
            try row.set(f.depTime, forKey: "dep_time")
            try row.set(f.schedDepTime, forKey: "sched_dep_time")
            try row.set(f.depDelay, forKey: "dep_delay")
            try row.set(f.arrTime, forKey: "arr_time")
            try row.set(f.schedArrTime, forKey: "sched_arr_time")
            try row.set(f.arrDelay, forKey: "arr_delay")
            try row.set(f.flight, forKey: "flight")
            try row.set(f.tailnum, forKey: "tailnum")
            try row.set(f.airTime, forKey: "air_time")
            try row.set(f.distance, forKey: "distance")
            try row.set(f.hour, forKey: "hour")
            try row.set(f.minute, forKey: "minute")
            try row.set(f.timeHour, forKey: "time_hour")
            try row.set(airlines[Int(f.airline) - 1], forKey: "airline")
            try row.set(airports[Int(f.origin) - 1], forKey: "origin")
            try row.set(f.dest.map { airports[Int($0) - 1] }, forKey: "dest")
            try row.set(f.plane.map { planes[Int($0) - 1] }, forKey: "plane")
        })
        return result.count
    }
}

@inline(never) @_optimize(none) @_silgen_name("strata_profile_region_batch_insert")
func strataRegionBatchInsert(_ data: Dataset, _ flights: [Flight], _ coordinator: StoreCoordinator) throws -> Int {
    try StrataSide.batchImportAll(data, flights: flights, into: coordinator)
}

extension StrataSide {
    /// `minute = 0` on every flight of the first half of each month, by one batch update
    /// (rows already at 0 are left alone); the number of rows changed.
    static func batchUpdateMinutes(_ coordinator: StoreCoordinator) throws -> Int {
        let request = BatchUpdateRequest(FetchRequest(entityName: "Flight", predicate: try Condition("day <= 15")),
                                         propertiesToUpdate: ["minute": Int64(0)])
        return try coordinator.execute(request).count
    }

    /// Every flight of the second half of each month deleted by one batch delete.
    static func batchDeleteLateDays(_ coordinator: StoreCoordinator) throws -> Int {
        try coordinator.execute(BatchDeleteRequest(FetchRequest(entityName: "Flight", predicate: try Condition("day > 15")))).count
    }
}

extension RawDB {
    /// The raw twin of `StrataSide.batchUpdateMinutes`: one UPDATE in one transaction, the
    /// version bumped as Strata bumps it, rows already at 0 left alone.
    func updateMinutes() throws -> Int {
        try execute("BEGIN IMMEDIATE")
        try execute(#"UPDATE "Flight" SET "minute" = 0, "_version" = "_version" + 1 WHERE "day" <= 15 AND "minute" IS NOT 0"#)
        let count = Int(sqlite3_changes(handle))
        try execute("COMMIT")
        return count
    }

    /// The raw twin of `StrataSide.batchDeleteLateDays`.
    func deleteLateDays() throws -> Int {
        try execute("BEGIN IMMEDIATE")
        try execute(#"DELETE FROM "Flight" WHERE "day" > 15"#)
        let count = Int(sqlite3_changes(handle))
        try execute("COMMIT")
        return count
    }
}

extension Array where Element == Flight {
    /// The flights `StrataSide.batchUpdateMinutes` and `RawDB.updateMinutes` change.
    var batchUpdateCount: Int { lazy.filter { $0.day <= 15 && $0.minute != 0 }.count }
    /// The flights `StrataSide.batchDeleteLateDays` and `RawDB.deleteLateDays` delete.
    var batchDeleteCount: Int { lazy.filter { $0.day > 15 }.count }
}

extension RawDB {
    /// The Flight table in a few numbers (rows, and the sums of `_pk`, `minute`, `_version`),
    /// to check that two stores went through the same change, whoever wrote them.
    func flightsFingerprint() throws -> [Double] {
        var values: [Double] = []
        try forEachRow(#"SELECT count(*), total("_pk"), total("minute"), total("_version") FROM "Flight""#) { s in
            values = (0..<4).map { sqlite3_column_double(s, Int32($0)) }
        }
        return values
    }
}
