import Foundation
import Strata

// Strata's typed API (issue 19): the flights model of StrataSide written as `@Entity` classes,
// read through the properties the macro generates and fetched with Foundation `#Predicate`.
// Property names are the attribute names (`dep_time`, not `depTime`) and every property has the
// type and optionality of StrataSide's attribute, so the schema and the version hash are the
// same: one store file opens with either model (`TypedSide.checkModel()` says so at startup).

@Entity("Airline") final class TypedAirline: ManagedObject {
    var carrier: String
    var name: String
    @Relationship(inverse: \TypedFlight.airline) var flights: Set<TypedFlight> = []
}

@Entity("Airport") final class TypedAirport: ManagedObject {
    var faa: String
    var name: String
    var lat: Double
    var lon: Double
    var alt: Int64
    var tz: Int64?
    var dst: String?
    var tzone: String?
    @Relationship(inverse: \TypedFlight.origin) var departures: Set<TypedFlight> = []
    @Relationship(inverse: \TypedFlight.dest) var arrivals: Set<TypedFlight> = []
}

@Entity("Plane") final class TypedPlane: ManagedObject {
    var tailnum: String
    var year: Int64?
    var type: String
    var manufacturer: String
    var model: String
    var engines: Int64
    var seats: Int64
    var speed: Int64?
    var engine: String
    @Relationship(inverse: \TypedFlight.plane) var flights: Set<TypedFlight> = []
}

@Entity("Flight") final class TypedFlight: ManagedObject {
    var year: Int64
    var month: Int64
    var day: Int64
    var dep_time: Int64?
    var sched_dep_time: Int64
    var dep_delay: Double?
    var arr_time: Int64?
    var sched_arr_time: Int64
    var arr_delay: Double?
    var flight: Int64
    var tailnum: String?
    var air_time: Double?
    var distance: Double
    var hour: Int64
    var minute: Int64
    /// Required, no zero and no sensible default: `Date!` reads nil until set (as the macro's
    /// documentation says), and is `isOptional: false` like StrataSide's attribute.
    var time_hour: Date!
    var airline: TypedAirline?
    var origin: TypedAirport?
    var dest: TypedAirport?
    var plane: TypedPlane?
}

enum TypedSide {
    static let model: Model = {
        do {
            return try Model(version: "flights-1", types: [TypedAirline.self, TypedAirport.self, TypedPlane.self, TypedFlight.self])
        } catch {
            fatalError("typed flights model is invalid: \(error)")
        }
    }()

    /// The typed model must be StrataSide's model to the byte (same hash, same entities apart
    /// from the classes), or the rows below would compare different stores. Fails loudly.
    static func checkModel() {
        let typed = model, untyped = StrataSide.model
        guard typed.versionHash == untyped.versionHash else {
            var lines = ["the @Entity flights model's versionHash \(typed.versionHash) differs from StrataSide.model's \(untyped.versionHash):"]
            for entity in untyped.entities where typed.entityVersionHashes[entity.name] != untyped.entityVersionHashes[entity.name] {
                lines.append("  entity \(entity.name): typed \(typed.entity(named: entity.name).map { "\($0.attributes.map(\.name)) \($0.relationships.map { "\($0.name)→\($0.destination) inverse \($0.inverse ?? "-") optional \($0.isOptional)" })" } ?? "missing")")
                lines.append("  untyped: \(entity.attributes.map(\.name)) \(entity.relationships.map { "\($0.name)→\($0.destination) inverse \($0.inverse ?? "-") optional \($0.isOptional)" })")
            }
            FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            fatalError("TypedSide.model.versionHash != StrataSide.model.versionHash")
        }
        // Same columns in the same order too (the hash sorts properties by name).
        for entity in untyped.entities {
            guard let other = typed.entity(named: entity.name), other.attributes.map(\.name) == entity.attributes.map(\.name),
                  other.relationships.map(\.name) == entity.relationships.map(\.name) else {
                fatalError("the @Entity model declares \(entity.name)'s properties in another order than StrataSide.model")
            }
        }
    }

    // MARK: Fetching objects

    /// Every attribute of a flight read once through the `@Entity` properties (the macro's
    /// getters over `self[attribute:]`), folded into StrataSide.readAttributes's checksum.
    @inline(__always)
    static func readAttributes(_ f: TypedFlight) -> Double {
        var sum = 0.0
        sum += Double(f.year)
        sum += Double(f.month)
        sum += Double(f.day)
        sum += Double(f.dep_time ?? 0)
        sum += Double(f.sched_dep_time)
        sum += f.dep_delay ?? 0
        sum += Double(f.arr_time ?? 0)
        sum += Double(f.sched_arr_time)
        sum += f.arr_delay ?? 0
        sum += Double(f.flight)
        sum += Double((f.tailnum ?? "").utf8.count)
        sum += f.air_time ?? 0
        sum += f.distance
        sum += Double(f.hour)
        sum += Double(f.minute)
        sum += (f.time_hour ?? .distantPast).timeIntervalSinceReferenceDate
        return sum
    }

    /// `context.fetch(FetchRequest<TypedFlight>())` of every flight, then every attribute of
    /// each read once through its property. The objects are returned so that the caller
    /// releases them after the measurement. (`@inline(never)`: a symbol for callgrind's
    /// `--toggle-collect`, STRATA_PROFILE=fetch-entity.)
    @inline(never)
    static func fetchAllAndRead(_ context: ManagedObjectContext) throws -> (objects: [TypedFlight], checksum: Double) {
        try context.performAndWait {
            let objects: [TypedFlight] = try context.fetch(FetchRequest<TypedFlight>())
            var checksum = 0.0
            for f in objects { checksum += readAttributes(f) }
            return (objects, checksum)
        }
    }

    // MARK: #Predicate

    /// The typed twin of `StrataSide.jfkDelayed()`: `origin.faa == 'JFK' AND dep_delay > 60`.
    static func jfkDelayedRequest() -> FetchRequest<TypedFlight> {
        FetchRequest<TypedFlight>(predicate: #Predicate<TypedFlight> { $0.origin?.faa == "JFK" && ($0.dep_delay ?? 0) > 60 })
    }

    /// The `#Predicate` built, translated (in the request's initialiser) and fetched: what an
    /// app writing `#Predicate` pays per fetch. (STRATA_PROFILE=predicate-typed)
    @inline(never)
    static func fetchJFKDelayed(_ context: ManagedObjectContext) throws -> [TypedFlight] {
        try context.performAndWait { try context.fetch(jfkDelayedRequest()) }
    }

    /// The `#Predicate`'s format-string twin. `60.0`, not `60`: in the `#Predicate`, 60 is a
    /// Double (`dep_delay` is one), and a Double is what its translation binds; the format
    /// string with `60` binds an Int64, which SQLite then compares with each row's REAL
    /// (`StrataSide.jfkDelayed()`, the predicate row's condition, does). With `60.0` both sides
    /// run the same statement with the same arguments, so the row compares the two APIs only.
    static func jfkDelayedFormat() throws -> Condition { try Condition("origin.faa == %@ AND dep_delay > %@", "JFK", 60.0) }

    /// The format-string twin, parsed and fetched the same way (the condition made inside the
    /// region, as the typed side's translation is). (STRATA_PROFILE=predicate-format)
    @inline(never)
    static func fetchJFKDelayedFormat(_ context: ManagedObjectContext) throws -> [ManagedObject] {
        try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Flight", predicate: try jfkDelayedFormat()))
        }
    }
}
