// The SQL the raw and GRDB sides run, written once for both. The tables and indexes are the ones
// Strata creates for `flightsModel` (see Strata's Schema.swift: `"_pk" INTEGER PRIMARY KEY`,
// attributes in declaration order, then to-one columns named after the relationship, then
// `"_version"`; doubles untyped, dates REAL seconds since 2001; an index per to-one). The runner
// checks this text against a fresh Strata store's `sqlite_master` before measuring anything.

enum FlightsSQL {
    /// Every CREATE statement, in `sqlite_master` name order.
    static let schema: [String] = [
        #"CREATE TABLE "Airline" ("_pk" INTEGER PRIMARY KEY, "carrier" TEXT, "name" TEXT, "_version" INTEGER NOT NULL DEFAULT 1)"#,
        #"CREATE TABLE "Airport" ("_pk" INTEGER PRIMARY KEY, "faa" TEXT, "name" TEXT, "lat", "lon", "alt" INTEGER, "tz" INTEGER, "dst" TEXT, "tzone" TEXT, "_version" INTEGER NOT NULL DEFAULT 1)"#,
        #"CREATE TABLE "Flight" ("_pk" INTEGER PRIMARY KEY, "year" INTEGER, "month" INTEGER, "day" INTEGER, "dep_time" INTEGER, "sched_dep_time" INTEGER, "dep_delay", "arr_time" INTEGER, "sched_arr_time" INTEGER, "arr_delay", "flight" INTEGER, "tailnum" TEXT, "air_time", "distance", "hour" INTEGER, "minute" INTEGER, "time_hour" REAL, "airline" INTEGER, "origin" INTEGER, "dest" INTEGER, "plane" INTEGER, "_version" INTEGER NOT NULL DEFAULT 1)"#,
        #"CREATE INDEX "Flight_airline" ON "Flight" ("airline")"#,
        #"CREATE INDEX "Flight_dest" ON "Flight" ("dest")"#,
        #"CREATE INDEX "Flight_origin" ON "Flight" ("origin")"#,
        #"CREATE INDEX "Flight_plane" ON "Flight" ("plane")"#,
        #"CREATE TABLE "Plane" ("_pk" INTEGER PRIMARY KEY, "tailnum" TEXT, "year" INTEGER, "type" TEXT, "manufacturer" TEXT, "model" TEXT, "engines" INTEGER, "seats" INTEGER, "speed" INTEGER, "engine" TEXT, "_version" INTEGER NOT NULL DEFAULT 1)"#,
    ]

    static let insertAirline = #"INSERT INTO "Airline" ("_pk", "carrier", "name") VALUES (?, ?, ?)"#
    static let insertAirport = #"INSERT INTO "Airport" ("_pk", "faa", "name", "lat", "lon", "alt", "tz", "dst", "tzone") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"#
    static let insertPlane = #"INSERT INTO "Plane" ("_pk", "tailnum", "year", "type", "manufacturer", "model", "engines", "seats", "speed", "engine") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"#
    static let insertFlight = #"INSERT INTO "Flight" ("_pk", "year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time", "arr_delay", "flight", "tailnum", "air_time", "distance", "hour", "minute", "time_hour", "airline", "origin", "dest", "plane") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"#

    /// The flight columns in `Flight`'s field order (what both sides decode by index).
    static let flightColumns = #"f."_pk", f."year", f."month", f."day", f."dep_time", f."sched_dep_time", f."dep_delay", f."arr_time", f."sched_arr_time", f."arr_delay", f."flight", f."tailnum", f."air_time", f."distance", f."hour", f."minute", f."time_hour", f."airline", f."origin", f."dest", f."plane""#

    /// Every flight, in key order (Strata's fetch without sort keys orders by key too).
    static let allFlights = #"SELECT "# + flightColumns + #" FROM "Flight" AS f ORDER BY f."_pk""#

    /// `origin.faa == 'JFK' AND dep_delay > 60`, as one would write it by hand: a join.
    static let jfkDelayed = #"SELECT "# + flightColumns + #" FROM "Flight" AS f JOIN "Airport" AS a ON a."_pk" = f."origin" WHERE a."faa" = ? AND f."dep_delay" > ? ORDER BY f."_pk""#

    /// `tailnum BEGINSWITH[c] 'n1'`, as one would write it by hand: SQLite's LIKE is ASCII
    /// case-insensitive.
    static let tailnumPrefix = #"SELECT "# + flightColumns + #" FROM "Flight" AS f WHERE f."tailnum" LIKE ? ORDER BY f."_pk""#

    /// The results controller's order as a hand-written list asks for it: the ordered IDs…
    /// `NOT INDEXED`, as Strata's own statement has it (FetchPlan.scanHint): without it SQLite
    /// walks `Flight_airline` and looks each row up, reading every table page once per airline
    /// (10,000,000 rows: raw 16.0 s before, 13.5 s with it). The raw side gets the better plan too.
    static let orderedIDs = #"SELECT f."_pk" FROM "Flight" AS f NOT INDEXED LEFT JOIN "Airline" AS a ON a."_pk" = f."airline" ORDER BY a."name" ASC, f."sched_dep_time" ASC, f."_pk" ASC"#
    /// …and the section counts (Core Data's section query).
    static let sectionCounts = #"SELECT a."name", count(*) FROM "Flight" AS f LEFT JOIN "Airline" AS a ON a."_pk" = f."airline" GROUP BY a."name" ORDER BY a."name" ASC"#

    /// The first screen of the list after opening: 50 flights in the controller's order.
    static let first50 = #"SELECT "# + flightColumns + #" FROM "Flight" AS f NOT INDEXED LEFT JOIN "Airline" AS a ON a."_pk" = f."airline" ORDER BY a."name" ASC, f."sched_dep_time" ASC, f."_pk" ASC LIMIT 50"#

    /// The migration's one change: what Strata's add-column fast path also runs.
    static let addColumn = #"ALTER TABLE "Flight" ADD COLUMN "status" TEXT DEFAULT 'scheduled'"#
}
