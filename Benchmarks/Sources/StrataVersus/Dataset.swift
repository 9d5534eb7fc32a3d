import Foundation

// The nycflights13 data as plain Swift values: what every contender inserts, and what the raw and
// GRDB sides decode into. Relationships are the destination's primary key; the reference tables
// get keys 1…N in file order on every side (Strata hands out keys in insertion order too).

struct Airline: Sendable, Equatable {
    var pk: Int64
    var carrier: String
    var name: String
}

struct Airport: Sendable, Equatable {
    var pk: Int64
    var faa: String
    var name: String
    var lat: Double
    var lon: Double
    var alt: Int64
    var tz: Int64?
    var dst: String?
    var tzone: String?
}

struct Plane: Sendable, Equatable {
    var pk: Int64
    var tailnum: String
    var year: Int64?
    var type: String
    var manufacturer: String
    var model: String
    var engines: Int64
    var seats: Int64
    var speed: Int64?
    var engine: String
}

struct Flight: Sendable, Equatable {
    var pk: Int64
    var year: Int64
    var month: Int64
    var day: Int64
    var depTime: Int64?
    var schedDepTime: Int64
    var depDelay: Double?
    var arrTime: Int64?
    var schedArrTime: Int64
    var arrDelay: Double?
    var flight: Int64
    var tailnum: String?
    var airTime: Double?
    var distance: Double
    var hour: Int64
    var minute: Int64
    var timeHour: Date
    /// Keys of the related rows (`airline` and `origin` always exist; `dest` is nil for the four
    /// destinations missing from airports.csv, `plane` when the tail number is not in planes.csv).
    var airline: Int64
    var origin: Int64
    var dest: Int64?
    var plane: Int64?
}

/// The four tables, loaded and linked.
struct Dataset: Sendable {
    var airlines: [Airline]
    var airports: [Airport]
    var planes: [Plane]
    var flights: [Flight]

    static let expectedCounts = (flights: 336_776, airlines: 16, airports: 1_458, planes: 3_322)

    /// `flightLimit`: only the first that many flights (the profiling modes, which run under
    /// callgrind, where parsing all 336,776 would take longer than the measured region); the
    /// reference tables are always complete.
    static func load(from directory: URL, flightLimit: Int? = nil) throws -> Dataset {
        func file(_ name: String) throws -> CSVFile {
            let url = directory.appendingPathComponent("\(name).csv")
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw VersusError("\(url.path) is missing: run Benchmarks/fetch-data (or Benchmarks/run)")
            }
            return try CSVFile(contentsOf: url)
        }

        var airlines: [Airline] = []
        let airlineFile = try file("airlines")
        let (carrier, airlineName) = (try airlineFile.column("carrier"), try airlineFile.column("name"))
        try airlineFile.forEachRecord { r in
            airlines.append(Airline(pk: Int64(airlines.count + 1), carrier: try r.required(r.string(carrier), carrier, "carrier"),
                                    name: try r.required(r.string(airlineName), airlineName, "airline name")))
        }

        var airports: [Airport] = []
        let airportFile = try file("airports")
        let ac = try ["faa", "name", "lat", "lon", "alt", "tz", "dst", "tzone"].map { try airportFile.column($0) }
        try airportFile.forEachRecord { r in
            airports.append(Airport(
                pk: Int64(airports.count + 1),
                faa: try r.required(r.string(ac[0]), ac[0], "faa"),
                name: try r.required(r.string(ac[1]), ac[1], "airport name"),
                lat: try r.required(r.double(ac[2]), ac[2], "lat"),
                lon: try r.required(r.double(ac[3]), ac[3], "lon"),
                alt: try r.required(r.int(ac[4]), ac[4], "alt"),
                tz: try r.int(ac[5]), dst: r.string(ac[6]), tzone: r.string(ac[7])))
        }

        var planes: [Plane] = []
        let planeFile = try file("planes")
        let pc = try ["tailnum", "year", "type", "manufacturer", "model", "engines", "seats", "speed", "engine"].map { try planeFile.column($0) }
        try planeFile.forEachRecord { r in
            planes.append(Plane(
                pk: Int64(planes.count + 1),
                tailnum: try r.required(r.string(pc[0]), pc[0], "tailnum"),
                year: try r.int(pc[1]),
                type: try r.required(r.string(pc[2]), pc[2], "type"),
                manufacturer: try r.required(r.string(pc[3]), pc[3], "manufacturer"),
                model: try r.required(r.string(pc[4]), pc[4], "model"),
                engines: try r.required(r.int(pc[5]), pc[5], "engines"),
                seats: try r.required(r.int(pc[6]), pc[6], "seats"),
                speed: try r.int(pc[7]),
                engine: try r.required(r.string(pc[8]), pc[8], "engine")))
        }

        let airlineKeys = Dictionary(uniqueKeysWithValues: airlines.map { ($0.carrier, $0.pk) })
        let airportKeys = Dictionary(uniqueKeysWithValues: airports.map { ($0.faa, $0.pk) })
        let planeKeys = Dictionary(uniqueKeysWithValues: planes.map { ($0.tailnum, $0.pk) })

        var flights: [Flight] = []
        flights.reserveCapacity(min(flightLimit ?? expectedCounts.flights, expectedCounts.flights))
        let flightFile = try file("flights")
        let fc = try ["year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time",
                      "arr_delay", "carrier", "flight", "tailnum", "origin", "dest", "air_time", "distance", "hour",
                      "minute", "time_hour"].map { try flightFile.column($0) }
        try flightFile.forEachRecord(limit: flightLimit ?? .max) { r in
            let carrierCode = try r.required(r.string(fc[9]), fc[9], "carrier")
            let originCode = try r.required(r.string(fc[12]), fc[12], "origin")
            guard let airline = airlineKeys[carrierCode] else { throw VersusError("unknown carrier \(carrierCode)") }
            guard let origin = airportKeys[originCode] else { throw VersusError("unknown origin \(originCode)") }
            let tailnum = r.string(fc[11])
            flights.append(Flight(
                pk: Int64(flights.count + 1),
                year: try r.required(r.int(fc[0]), fc[0], "year"),
                month: try r.required(r.int(fc[1]), fc[1], "month"),
                day: try r.required(r.int(fc[2]), fc[2], "day"),
                depTime: try r.int(fc[3]),
                schedDepTime: try r.required(r.int(fc[4]), fc[4], "sched_dep_time"),
                depDelay: try r.double(fc[5]),
                arrTime: try r.int(fc[6]),
                schedArrTime: try r.required(r.int(fc[7]), fc[7], "sched_arr_time"),
                arrDelay: try r.double(fc[8]),
                flight: try r.required(r.int(fc[10]), fc[10], "flight"),
                tailnum: tailnum,
                airTime: try r.double(fc[14]),
                distance: try r.required(r.double(fc[15]), fc[15], "distance"),
                hour: try r.required(r.int(fc[16]), fc[16], "hour"),
                minute: try r.required(r.int(fc[17]), fc[17], "minute"),
                timeHour: try r.required(r.date(fc[18]), fc[18], "time_hour"),
                airline: airline,
                origin: origin,
                dest: r.string(fc[13]).flatMap { airportKeys[$0] },
                plane: tailnum.flatMap { planeKeys[$0] }))
        }

        let data = Dataset(airlines: airlines, airports: airports, planes: planes, flights: flights)
        let counts = (data.flights.count, data.airlines.count, data.airports.count, data.planes.count)
        let expected = expectedCounts
        guard counts == (flightLimit.map { min($0, expected.flights) } ?? expected.flights, expected.airlines, expected.airports, expected.planes) else {
            throw VersusError("row counts \(counts) differ from nycflights13's \(expected) (flights, airlines, airports, planes): run Benchmarks/fetch-data again")
        }
        return data
    }

    /// `count` flights made from the real ones for the growth curve: row `i` is real flight
    /// `(i × 7919) mod n` (a fixed permutation, so every size mixes all carriers and months),
    /// and each pass over the real data after the first shifts the day, the scheduled times,
    /// the delays and the flight number, so rows stay distinct but plausible. Keys 1…count.
    func scaledFlights(_ count: Int) -> [Flight] { scaledFlights(0..<count) }

    /// Rows `range` of the synthetic flights (row `i` does not depend on the total count): the
    /// --large stores are built a chunk at a time.
    func scaledFlights(_ range: Range<Int>) -> [Flight] {
        let n = flights.count
        var result: [Flight] = []
        result.reserveCapacity(range.count)
        for i in range {
            var f = flights[(i &* 7919) % n]
            let pass = Int64(i / n)
            f.pk = Int64(i + 1)
            if pass > 0 {
                f.day = (f.day - 1 + pass) % 28 + 1
                f.schedDepTime = shiftedClock(f.schedDepTime, by: pass * 7)
                f.schedArrTime = shiftedClock(f.schedArrTime, by: pass * 7)
                f.depTime = f.depTime.map { shiftedClock($0, by: pass * 7) }
                f.arrTime = f.arrTime.map { shiftedClock($0, by: pass * 7) }
                f.depDelay = f.depDelay.map { $0 + Double(pass % 5) }
                f.arrDelay = f.arrDelay.map { $0 + Double(pass % 5) }
                f.flight += pass * 10_000
                f.timeHour = f.timeHour.addingTimeInterval(Double(pass) * 86_400)
                f.hour = f.schedDepTime / 100
                f.minute = f.schedDepTime % 100
            }
            result.append(f)
        }
        return result
    }

    /// The airline sections a results controller shows for `flights`: names in byte order with
    /// their counts.
    func expectedSections(_ flights: [Flight]) -> [(name: String, count: Int)] {
        var counts = Array(repeating: 0, count: airlines.count + 1)
        for f in flights { counts[Int(f.airline)] += 1 }
        return sections(counts)
    }

    /// The sections of `scaledFlights(count)`, without making the flights (a synthetic flight
    /// keeps its real flight's airline).
    func expectedSections(scaledTo count: Int) -> [(name: String, count: Int)] {
        let n = flights.count
        var counts = Array(repeating: 0, count: airlines.count + 1)
        for i in 0..<count { counts[Int(flights[(i &* 7919) % n].airline)] += 1 }
        return sections(counts)
    }

    /// Airline names in byte order with their counts (by key), empty ones left out.
    private func sections(_ counts: [Int]) -> [(name: String, count: Int)] {
        airlines.map { ($0.name, counts[Int($0.pk)]) }.filter { $0.1 > 0 }
            .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
    }
}

/// An `HHMM` clock time moved by `minutes`, wrapping within the day.
private func shiftedClock(_ hhmm: Int64, by minutes: Int64) -> Int64 {
    let total = ((hhmm / 100) * 60 + hhmm % 100 + minutes) % 1440
    return (total / 60) * 100 + total % 60
}

/// The checksum StrataSide.readAttributes / TypedSide.readAttributes fold every attribute of
/// every flight into, computed from the CSV's values (what a correct fetch must reproduce).
func flightsChecksum(_ flights: [Flight]) -> Double {
    var sum = 0.0
    for f in flights {
        var s = 0.0
        s += Double(f.year); s += Double(f.month); s += Double(f.day); s += Double(f.depTime ?? 0)
        s += Double(f.schedDepTime); s += f.depDelay ?? 0; s += Double(f.arrTime ?? 0); s += Double(f.schedArrTime)
        s += f.arrDelay ?? 0; s += Double(f.flight); s += Double((f.tailnum ?? "").utf8.count); s += f.airTime ?? 0
        s += f.distance; s += Double(f.hour); s += Double(f.minute); s += f.timeHour.timeIntervalSinceReferenceDate
        sum += s
    }
    return sum
}

/// Whether `checksum` is `expected` up to the rounding of summing in another order.
func checksumMatches(_ checksum: Double, _ expected: Double) -> Bool {
    abs(checksum - expected) <= abs(expected) * 1e-12
}
