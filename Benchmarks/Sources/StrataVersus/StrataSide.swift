import Foundation
import Strata

// Strata's side: the flights model, and each workload through the public API an app uses.

enum StrataSide {
    static let model: Model = makeModel(version: "flights-1", withStatus: false)
    /// The migration's next version: `Flight.status`, required, default "scheduled".
    static let modelV2: Model = makeModel(version: "flights-2", withStatus: true)

    private static func makeModel(version: String, withStatus: Bool) -> Model {
        var flightAttributes = [
            Attribute("year", .int64, isOptional: false),
            Attribute("month", .int64, isOptional: false),
            Attribute("day", .int64, isOptional: false),
            Attribute("dep_time", .int64),
            Attribute("sched_dep_time", .int64, isOptional: false),
            Attribute("dep_delay", .double),
            Attribute("arr_time", .int64),
            Attribute("sched_arr_time", .int64, isOptional: false),
            Attribute("arr_delay", .double),
            Attribute("flight", .int64, isOptional: false),
            Attribute("tailnum", .string),
            Attribute("air_time", .double),
            Attribute("distance", .double, isOptional: false),
            Attribute("hour", .int64, isOptional: false),
            Attribute("minute", .int64, isOptional: false),
            Attribute("time_hour", .date, isOptional: false),
        ]
        if withStatus {
            flightAttributes.append(Attribute("status", .string, isOptional: false, defaultValue: .string("scheduled")))
        }
        do {
            return try Model(version: version, entities: [
                Entity("Airline", attributes: [
                    Attribute("carrier", .string, isOptional: false),
                    Attribute("name", .string, isOptional: false),
                ], relationships: [Relationship("flights", .toMany, to: "Flight", inverse: "airline")]),
                Entity("Airport", attributes: [
                    Attribute("faa", .string, isOptional: false),
                    Attribute("name", .string, isOptional: false),
                    Attribute("lat", .double, isOptional: false),
                    Attribute("lon", .double, isOptional: false),
                    Attribute("alt", .int64, isOptional: false),
                    Attribute("tz", .int64),
                    Attribute("dst", .string),
                    Attribute("tzone", .string),
                ], relationships: [
                    Relationship("departures", .toMany, to: "Flight", inverse: "origin"),
                    Relationship("arrivals", .toMany, to: "Flight", inverse: "dest"),
                ]),
                Entity("Plane", attributes: [
                    Attribute("tailnum", .string, isOptional: false),
                    Attribute("year", .int64),
                    Attribute("type", .string, isOptional: false),
                    Attribute("manufacturer", .string, isOptional: false),
                    Attribute("model", .string, isOptional: false),
                    Attribute("engines", .int64, isOptional: false),
                    Attribute("seats", .int64, isOptional: false),
                    Attribute("speed", .int64),
                    Attribute("engine", .string, isOptional: false),
                ], relationships: [Relationship("flights", .toMany, to: "Flight", inverse: "plane")]),
                Entity("Flight", attributes: flightAttributes, relationships: [
                    Relationship("airline", .toOne, to: "Airline", inverse: "flights"),
                    Relationship("origin", .toOne, to: "Airport", inverse: "departures"),
                    Relationship("dest", .toOne, to: "Airport", inverse: "arrivals"),
                    Relationship("plane", .toOne, to: "Plane", inverse: "flights"),
                ]),
            ])
        } catch {
            fatalError("flights model is invalid: \(error)")
        }
    }

    /// The results controller's request: sections by airline name, flights by scheduled
    /// departure within them, batches of 50.
    static func listRequest() -> AnyFetchRequest {
        var request = FetchRequest(entityName: "Flight", sortKeys: [.ascending("airline.name"), .ascending("sched_dep_time")])
        request.fetchBatchSize = 50
        return request
    }

    static let cacheName = "flights"

    // MARK: Import

    /// Inserts every table in a new update context of `container` and saves with
    /// `saveToStore()`: update → main → writer → one transaction on disk.
    /// Returns the update context, so that the caller releases its objects after the
    /// measurement (the raw and GRDB sides keep their input structs too).
    @discardableResult
    static func importAll(_ data: Dataset, flights: [Flight], into container: PersistentContainer) throws -> ManagedObjectContext {
        let update = container.newUpdateContext()
        let started = ContinuousClock.now
        try update.performAndWait {
            var airlines: [ManagedObject] = []
            airlines.reserveCapacity(data.airlines.count)
            for a in data.airlines {
                let o = try update.insert("Airline")
                o[attribute: "carrier"] = a.carrier
                o[attribute: "name"] = a.name
                airlines.append(o)
            }
            var airports: [ManagedObject] = []
            airports.reserveCapacity(data.airports.count)
            for a in data.airports {
                let o = try update.insert("Airport")
                o[attribute: "faa"] = a.faa
                o[attribute: "name"] = a.name
                o[attribute: "lat"] = a.lat
                o[attribute: "lon"] = a.lon
                o[attribute: "alt"] = a.alt
                o[attribute: "tz"] = a.tz
                o[attribute: "dst"] = a.dst
                o[attribute: "tzone"] = a.tzone
                airports.append(o)
            }
            var planes: [ManagedObject] = []
            planes.reserveCapacity(data.planes.count)
            for p in data.planes {
                let o = try update.insert("Plane")
                o[attribute: "tailnum"] = p.tailnum
                o[attribute: "year"] = p.year
                o[attribute: "type"] = p.type
                o[attribute: "manufacturer"] = p.manufacturer
                o[attribute: "model"] = p.model
                o[attribute: "engines"] = p.engines
                o[attribute: "seats"] = p.seats
                o[attribute: "speed"] = p.speed
                o[attribute: "engine"] = p.engine
                planes.append(o)
            }
            for f in flights {
                let o = try update.insert("Flight")
                o[attribute: "year"] = f.year
                o[attribute: "month"] = f.month
                o[attribute: "day"] = f.day
                o[attribute: "dep_time"] = f.depTime
                o[attribute: "sched_dep_time"] = f.schedDepTime
                o[attribute: "dep_delay"] = f.depDelay
                o[attribute: "arr_time"] = f.arrTime
                o[attribute: "sched_arr_time"] = f.schedArrTime
                o[attribute: "arr_delay"] = f.arrDelay
                o[attribute: "flight"] = f.flight
                o[attribute: "tailnum"] = f.tailnum
                o[attribute: "air_time"] = f.airTime
                o[attribute: "distance"] = f.distance
                o[attribute: "hour"] = f.hour
                o[attribute: "minute"] = f.minute
                o[attribute: "time_hour"] = f.timeHour
                // Typed to-one access, as a subclass's properties would (no `Any` box).
                o[toOne: "airline"] = airlines[Int(f.airline) - 1]
                o[toOne: "origin"] = airports[Int(f.origin) - 1]
                o[toOne: "dest"] = f.dest.map { airports[Int($0) - 1] }
                o[toOne: "plane"] = f.plane.map { planes[Int($0) - 1] }
            }
            let phase = ContinuousClock.now
            try update.saveToStore()
            if ProcessInfo.processInfo.environment["STRATA_PHASES"] != nil {
                print("phases: objects \(phase - started), saveToStore \(ContinuousClock.now - phase)")
            }
        }
        return update
    }

    // MARK: Fetching objects

    /// Reads every attribute of a flight object once (typed access, as a subclass's properties
    /// would) and folds them into a checksum, so nothing is optimised away.
    @inline(__always)
    static func readAttributes(_ o: ManagedObject) -> Double {
        var sum = 0.0
        sum += Double((o[attribute: "year"] as Int64?) ?? 0)
        sum += Double((o[attribute: "month"] as Int64?) ?? 0)
        sum += Double((o[attribute: "day"] as Int64?) ?? 0)
        sum += Double((o[attribute: "dep_time"] as Int64?) ?? 0)
        sum += Double((o[attribute: "sched_dep_time"] as Int64?) ?? 0)
        sum += (o[attribute: "dep_delay"] as Double?) ?? 0
        sum += Double((o[attribute: "arr_time"] as Int64?) ?? 0)
        sum += Double((o[attribute: "sched_arr_time"] as Int64?) ?? 0)
        sum += (o[attribute: "arr_delay"] as Double?) ?? 0
        sum += Double((o[attribute: "flight"] as Int64?) ?? 0)
        sum += Double(((o[attribute: "tailnum"] as String?) ?? "").utf8.count)
        sum += (o[attribute: "air_time"] as Double?) ?? 0
        sum += (o[attribute: "distance"] as Double?) ?? 0
        sum += Double((o[attribute: "hour"] as Int64?) ?? 0)
        sum += Double((o[attribute: "minute"] as Int64?) ?? 0)
        sum += ((o[attribute: "time_hour"] as Date?) ?? .distantPast).timeIntervalSinceReferenceDate
        return sum
    }

    /// `context.fetch` of every flight, then every attribute of each read once. The objects are
    /// returned so that the caller releases them after the measurement.
    static func fetchAllAndRead(_ context: ManagedObjectContext) throws -> (objects: [ManagedObject], checksum: Double) {
        let slowdown = perfGateSlowdown
        return try context.performAndWait {
            let objects = try context.fetch(FetchRequest(entityName: "Flight"))
            var checksum = 0.0
            for o in objects {
                checksum += readAttributes(o)
                if slowdown > 0 { deliberateSlowdown(slowdown) }
            }
            return (objects, checksum)
        }
    }

    /// `STRATA_PERF_GATE_SLOWDOWN=N`: N extra heap allocations per object read in
    /// `fetchAllAndRead`, a deliberate regression of the benchmark side only, to show that
    /// `Benchmarks/perf-gate` fails when Strata's fetch gets slower. 0 (unset) in every real run.
    static let perfGateSlowdown = Int(ProcessInfo.processInfo.environment["STRATA_PERF_GATE_SLOWDOWN"] ?? "") ?? 0

    /// Every attribute read once through `value(forKey:)` (the untyped API) instead.
    static func readAttributesUntyped(_ o: ManagedObject) throws -> Double {
        var sum = 0.0
        for key in ["year", "month", "day", "dep_time", "sched_dep_time", "arr_time", "sched_arr_time", "flight", "hour", "minute"] {
            sum += Double((try o.value(forKey: key) as? Int64) ?? 0)
        }
        for key in ["dep_delay", "arr_delay", "air_time", "distance"] {
            sum += (try o.value(forKey: key) as? Double) ?? 0
        }
        sum += Double(((try o.value(forKey: "tailnum") as? String) ?? "").utf8.count)
        sum += ((try o.value(forKey: "time_hour") as? Date) ?? .distantPast).timeIntervalSinceReferenceDate
        return sum
    }

    static func fetchAllAndReadUntyped(_ context: ManagedObjectContext) throws -> (objects: [ManagedObject], checksum: Double) {
        try context.performAndWait {
            let objects = try context.fetch(FetchRequest(entityName: "Flight"))
            var checksum = 0.0
            for o in objects { checksum += try readAttributesUntyped(o) }
            return (objects, checksum)
        }
    }

    /// `context.fetch` of every flight, no attribute read (where fetching ends and reading starts).
    static func fetchAll(_ context: ManagedObjectContext) throws -> [ManagedObject] {
        try context.performAndWait { try context.fetch(FetchRequest(entityName: "Flight")) }
    }

    static func fetch(_ context: ManagedObjectContext, _ condition: Condition) throws -> [ManagedObject] {
        try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Flight", predicate: condition))
        }
    }

    static func jfkDelayed() throws -> Condition { try Condition("origin.faa == %@ AND dep_delay > %@", "JFK", 60) }
    static func tailnumPrefix() throws -> Condition { try Condition("tailnum BEGINSWITH[c] %@", "n1") }

    // MARK: The results controller

    /// A new controller on main: `performFetch()` and the sections (names and counts). The
    /// controller is returned so that the caller releases it after the measurement.
    static func openList(_ container: PersistentContainer, cacheName: String? = nil)
        throws -> (sections: [(name: String, count: Int)], servedFromCache: Bool, controller: FetchedResultsController<ManagedObject>) {
        let main = container.mainContext
        return try main.performAndWait {
            let controller = FetchedResultsController(fetchRequest: listRequest(), managedObjectContext: main,
                                                      sectionNameKeyPath: "airline.name", cacheName: cacheName)
            try controller.performFetch()
            let sections = (controller.sections ?? []).map { (name: $0.name, count: $0.numberOfObjects) }
            return (sections, controller.cacheStatus == .served, controller)
        }
    }

    /// The first 50 flights in the list's order (a plain fetch with a limit).
    static func first50(_ context: ManagedObjectContext) throws -> Int {
        try context.performAndWait {
            var request = listRequest()
            request.fetchLimit = 50
            return try context.fetch(request).count
        }
    }
}

/// Collects the statements a coordinator runs (its trace is called on whatever thread runs SQL).
// @unchecked because: `statements` is only touched under `lock`.
final class TraceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var statements: [String] = []
    func append(_ sql: String) { lock.withLock { statements.append(sql) } }
    func reset() { lock.withLock { statements.removeAll() } }
    var all: [String] { lock.withLock { statements } }
    /// Statements that read flight rows.
    var flightSelects: Int { all.filter { $0.uppercased().hasPrefix("SELECT") && $0.contains("\"Flight\"") }.count }
}

/// Records the last change set and calls `onDidChange` in `controllerDidChangeContent`.
final class ChangeRecorder: FetchedResultsControllerDelegate {
    var last: FetchedChanges?
    var onDidChange: (() -> Void)?

    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
        if case .changes(let changes) = event { last = changes }
    }

    func controllerDidChangeContent(_ controller: AnyFetchedResultsController) {
        onDidChange?()
        onDidChange = nil
    }
}

/// A tracking controller on main over a store, and the flight the iterations move: the middle
/// flight of the middle section, its scheduled departure set alternately early and late, so
/// each change is one move within the section.
final class ChangeFixture {
    let container: PersistentContainer
    let controller: FetchedResultsController<ManagedObject>
    let recorder = ChangeRecorder()
    let target: ObjectID
    let rowCount: Int
    private var round = 0
    /// The first change's time: no probe values remembered from an earlier placement yet.
    private(set) var firstChange: Double?

    init(url: URL) throws {
        container = try PersistentContainer(model: StrataSide.model, url: url)
        let main = container.mainContext
        let controller = FetchedResultsController(fetchRequest: StrataSide.listRequest(), managedObjectContext: main,
                                                  sectionNameKeyPath: "airline.name")
        self.controller = controller
        let recorder = self.recorder
        (target, rowCount) = try main.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            let sections = controller.sections ?? []
            let section = sections[sections.count / 2]
            return (section.objectID(at: section.numberOfObjects / 2), controller.numberOfObjects)
        }
    }

    func close() { container.coordinator.close() }

    /// Moves the target in a new update context, and times from the start of `save()` (into
    /// main; `cascade`: `saveToStore()`, through to SQLite) to the delegate's
    /// `controllerDidChangeContent`. Checks the change set is one move within the section.
    /// `region` runs the save (Profile's frc-change mode passes callgrind's region function).
    func moveTarget(cascade: Bool, region: (() throws -> Void) throws -> Void = { try $0() }) throws -> Double {
        round += 1
        let time: Int64 = round % 2 == 0 ? 1 : 2359
        recorder.last = nil
        var start = clock.now
        var elapsed: Double?
        recorder.onDidChange = { elapsed = (clock.now - start).seconds }
        let update = container.newUpdateContext()
        let target = self.target
        try update.performAndWait {
            let flight = try update.existingObject(with: target)
            try flight.setValue(time, forKey: "sched_dep_time")
            update.processPendingChanges()
            start = clock.now
            do {
                try region { if cascade { try update.saveToStore() } else { try update.save() } }
            } catch {
                throw VersusError("round \(round) (\(cascade ? "saveToStore" : "save"), value \(time)): \(error)")
            }
        }
        let changes = container.mainContext.performAndWait { recorder.last }
        if !cascade {
            // Unmeasured: main drops the change, so that every round starts from a main without
            // pending changes, as a save to the store leaves it (the controller reports the move back).
            container.mainContext.performAndWait { container.mainContext.rollback() }
        }
        guard let elapsed, let changes else { throw VersusError("the delegate heard of no change") }
        if firstChange == nil { firstChange = elapsed }
        guard changes.sections.isEmpty, changes.objects.count == 1, case let .move(id, from, to) = changes.objects[0],
              id == target, from.section == to.section else {
            throw VersusError("expected one move within a section, got \(changes.sections) \(changes.objects)")
        }
        return elapsed
    }
}

/// The deliberate slowdown's allocations: each replaces the last in a global, so the optimiser
/// can't drop them (an allocation and a release per call).
final class SlowdownBox {}
nonisolated(unsafe) private var slowdownSink: SlowdownBox?

@inline(never)
func deliberateSlowdown(_ allocations: Int) {
    for _ in 0..<allocations { slowdownSink = SlowdownBox() }
}
