import Foundation
import Testing
import Strata

@Entity final class Reading: ManagedObject {
    var value: Int
    var label: String
    var station: Station?
}

@Entity final class Station: ManagedObject {
    var name: String
    @Relationship(inverse: \Reading.station) var readings: Set<Reading> = []
}

struct Calibration: Codable, Equatable {
    var offset: Double
    var unit: String
}

@Entity final class Sensor: ManagedObject {
    var name: String
    var calibration: Calibration?
}

/// Nothing reads as data that is not there, through the API a new user writes: `@Entity`
/// properties over pages that fail their checksum or a closed store stop the program (Core
/// Data's "could not fulfill a fault") where 0.1.0 read `""` and `0`; `load()` throws the error
/// instead. Also: `insert(_:)` with the wrong class, a `Codable` value that no longer decodes.
@Suite struct UnreadableDataTests {
    static func model() throws -> Model { try Model(version: "1", types: [Reading.self, Station.self, Sensor.self]) }

    /// A checksummed store of `count` readings, keys 1…count; then one byte flipped in each of
    /// `flips` leaf pages of the readings' table (pages near the end of the file: the table's
    /// leaves, written last). Returns the flipped pages.
    static func damagedStore(_ url: URL, count: Int = 4_000, flips: Int = 3) throws -> [Int] {
        let container = try PersistentContainer(model: try model(), url: url)
        try container.mainContext.performAndWait {
            for value in 1...count {
                let reading = try container.mainContext.insert(Reading.self)
                reading.value = value
                reading.label = "reading \(value) " + String(repeating: "x", count: 40)
            }
            try container.mainContext.saveToStore()
        }
        container.coordinator.close()
        var bytes = try Data(contentsOf: url)
        let pages = bytes.count / 4096
        let flipped = (0..<flips).map { pages - 3 - 7 * $0 }
        for page in flipped { bytes[(page - 1) * 4096 + 1_500] ^= 0x10 }
        try bytes.write(to: url)
        return flipped
    }

    /// The faults of readings 1…count in a fresh container on `url`.
    static func faults(_ container: PersistentContainer, count: Int) throws -> [Reading] {
        try (1...Int64(count)).map { key in
            try #require(try container.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: key)) as? Reading)
        }
    }

    @Test func loadThrowsCorruptPageAndEveryOtherReadingReadsItsValues() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-unreadable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let flipped = try Self.damagedStore(url)
        let container = try PersistentContainer(model: try Self.model(), url: url)
        defer { container.coordinator.close() }
        var failed = 0, read = 0
        try container.mainContext.performAndWait {
            for reading in try Self.faults(container, count: 4_000) {
                do {
                    try reading.load()
                } catch StoreError.corruptPage(let path, let page) {
                    #expect(path == url.path && flipped.contains(page), "page \(page)")
                    failed += 1
                    continue
                }
                // A reading that loads reads its own values, never a zero.
                #expect(reading.label.hasPrefix("reading \(reading.value) "))
                read += 1
            }
        }
        #expect(failed > 0, "the flipped pages hold readings")
        #expect(failed + read == 4_000)
    }

    @Test func aTypedReadOfAFaultOnACorruptPageStops() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-unreadable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        _ = try Self.damagedStore(url)
        // A reading on a flipped page, found with the handling API.
        let container = try PersistentContainer(model: try Self.model(), url: url)
        let key: Int64 = try container.mainContext.performAndWait {
            for reading in try Self.faults(container, count: 4_000) {
                do { try reading.load() } catch { return reading.objectID.primaryKey }
            }
            return -1
        }
        container.coordinator.close()
        try #require(key > 0)
        // Through a String property (0.1.0 read "") and an Int one (0.1.0 read 0).
        await #expect(processExitsWith: .failure) { [path = url.path as String, key = key as Int64] in
            let container = try PersistentContainer(model: try UnreadableDataTests.model(), url: URL(fileURLWithPath: path))
            container.mainContext.performAndWait {
                let reading = try! container.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: key)) as! Reading
                _ = reading.label
            }
        }
        await #expect(processExitsWith: .failure) { [path = url.path as String, key = key as Int64] in
            let container = try PersistentContainer(model: try UnreadableDataTests.model(), url: URL(fileURLWithPath: path))
            container.mainContext.performAndWait {
                let reading = try! container.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: key)) as! Reading
                _ = reading.value
            }
        }
    }

    @Test func aFaultOfAClosedStoreThrowsFromLoadAndStopsATypedRead() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-unreadable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        let container = try PersistentContainer(model: try Self.model(), url: url)
        try container.mainContext.performAndWait {
            let reading = try container.mainContext.insert(Reading.self)
            reading.value = 7
            reading.label = "seven"
            let station = try container.mainContext.insert(Station.self)
            station.name = "north"
            reading.station = station
            try container.mainContext.saveToStore()
        }
        container.coordinator.close()
        // The handling API throws a typed error for a closed store; a typed read stops.
        let reopened = try PersistentContainer(model: try Self.model(), url: url)
        let fault: Reading = try reopened.mainContext.performAndWait {
            try #require(try reopened.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: 1)) as? Reading)
        }
        reopened.coordinator.close()
        reopened.mainContext.performAndWait {
            #expect(fault.isFault)
            #expect(throws: StoreError.closed(path: url.path)) { try fault.load() }
            #expect(throws: StoreError.closed(path: url.path)) { try reopened.mainContext.fulfill([fault]) }
        }
        await #expect(processExitsWith: .failure) { [path = url.path as String] in
            let container = try PersistentContainer(model: try UnreadableDataTests.model(), url: URL(fileURLWithPath: path))
            container.coordinator.close()
            container.mainContext.performAndWait {
                let reading = try! container.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: 1)) as! Reading
                _ = reading.label
            }
        }
        // A to-one and a to-many read the same way.
        await #expect(processExitsWith: .failure) { [path = url.path as String] in
            let container = try PersistentContainer(model: try UnreadableDataTests.model(), url: URL(fileURLWithPath: path))
            container.coordinator.close()
            container.mainContext.performAndWait {
                let reading = try! container.mainContext.object(with: ObjectID(entityName: "Reading", primaryKey: 1)) as! Reading
                _ = reading.station
            }
        }
        await #expect(processExitsWith: .failure) { [path = url.path as String] in
            let container = try PersistentContainer(model: try UnreadableDataTests.model(), url: URL(fileURLWithPath: path))
            container.coordinator.close()
            container.mainContext.performAndWait {
                let station = try! container.mainContext.object(with: ObjectID(entityName: "Station", primaryKey: 1)) as! Station
                _ = station.readings
            }
        }
    }

    /// A row deleted elsewhere, read through a fault before the news arrived: `load()` says the
    /// object is gone; a typed read stops rather than read a "ghost" with empty values.
    @Test func aFaultWhoseRowIsGoneThrowsObjectNotFound() async throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        try main.performAndWait {
            let station = try main.insert(Station.self)
            station.name = "north"
            try main.saveToStore()
            let id = station.objectID
            main.reset()
            let other = container.newBackgroundContext()
            try other.performAndWait {
                try other.delete(try other.existingObject(with: id))
                try other.save()
            }
            let fault = try #require(try main.object(with: id) as? Station)
            #expect(throws: ObjectError.objectNotFound(id)) { try fault.load() }
        }
    }

    // MARK: insert(_:entity:) with the wrong class

    @Test func insertWithTheWrongClassThrowsAndRegistersNothing() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        try main.performAndWait {
            #expect(throws: ObjectError.self) { _ = try main.insert(Station.self, entity: "Reading") }
            #expect(main.insertedObjects.isEmpty, "a refused insert leaves nothing to save")
            #expect(!main.hasChanges)
            let result = try main.saveToStore()
            #expect(result == nil)
            let count = try main.count(for: FetchRequest<Reading>())
            #expect(count == 0)
        }
    }

    // MARK: A Codable value that no longer decodes

    @Test func anUndecodableCodableValueIsATypedErrorFromDecodedValue() throws {
        let container = try PersistentContainer(inMemoryWith: try Self.model())
        let main = container.mainContext
        try main.performAndWait {
            let sensor = try main.insert(Sensor.self)
            sensor.name = "t1"
            sensor.calibration = Calibration(offset: 0.5, unit: "K")
            #expect(try sensor.decodedValue(forKey: "calibration", as: Calibration.self) == Calibration(offset: 0.5, unit: "K"))
            // Bytes from outside the program: another version of the app, another tool.
            try sensor.setValue(Data(#"{"offset":"half"}"#.utf8), forKey: "calibration")
            #expect {
                _ = try sensor.decodedValue(forKey: "calibration", as: Calibration.self)
            } throws: { error in
                guard case ObjectError.undecodableValue(let entity, let key, let type, _)? = error as? ObjectError else { return false }
                return entity == "Sensor" && key == "calibration" && type == "Calibration"
            }
            #expect(throws: ObjectError.unknownKey(entity: "Sensor", key: "calibraton")) {
                _ = try sensor.decodedValue(forKey: "calibraton", as: Calibration.self)
            }
            try sensor.setValue(nil, forKey: "calibration")
            #expect(try sensor.decodedValue(forKey: "calibration", as: Calibration.self) == nil)
        }
    }
}
