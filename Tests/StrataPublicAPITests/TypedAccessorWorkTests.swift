import Foundation
import Testing
import Strata
import StrataTestSupport

@Entity final class Pen: ManagedObject {
    var name: String
    var ink: Int64 = 0
    var holder: Holder?
}

@Entity final class Holder: ManagedObject {
    var label: String
    @Relationship(inverse: \Pen.holder) var pens: Set<Pen> = []
}

/// What a generated accessor costs, in work: reading `@Entity` properties does exactly the work
/// of reading the same values with `value(forKey:)` — one statement and one row per fault fired,
/// nothing once the row is there. (Mutations this fails: a getter that re-reads its row, or that
/// fires a fault per property — statements rise above one per object.)
@Suite struct TypedAccessorWorkTests {
    @Test func typedReadsDoTheWorkOfTheStringAPI() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("pens.sqlite")
        let model = try Model(version: "1", types: [Pen.self, Holder.self])
        let (penIDs, holderIDs): ([ObjectID], [ObjectID]) = try {
            let container = try PersistentContainer(model: model, url: url)
            defer { container.coordinator.close() }
            let main = container.mainContext
            return try main.performAndWait {
                let holders = try (0..<5).map { n in
                    let holder = try main.insert(Holder.self)
                    holder.label = "holder \(n)"
                    return holder
                }
                let pens = try (0..<200).map { n in
                    let pen = try main.insert(Pen.self)
                    pen.name = "pen \(n)"
                    pen.ink = Int64(n)
                    pen.holder = holders[n % 5]
                    return pen
                }
                try main.saveToStore()
                return (pens.map(\.objectID), holders.map(\.objectID))
            }
        }()

        let container = try PersistentContainer(model: model, url: url)
        defer { container.coordinator.close() }
        let coordinator = container.coordinator

        // The typed path: faults, read through the generated accessors.
        let typed = container.newBackgroundContext(name: "typed")
        coordinator.resetStatistics()
        let typedValues = try typed.performAndWait {
            try penIDs.map { id -> String in
                let pen = try typed.object(with: id) as! Pen
                return "\(pen.name)|\(pen.ink)|\(pen.holder?.label ?? "-")"
            }
        }
        let typedWork = coordinator.statistics

        // The string path on another context: the same objects, the same values.
        let strings = container.newBackgroundContext(name: "strings")
        coordinator.resetStatistics()
        let stringValues = try strings.performAndWait {
            try penIDs.map { id -> String in
                let pen = try strings.object(with: id)
                let holder = try pen.value(forKey: "holder") as? ManagedObject
                return "\(try pen.value(forKey: "name") as! String)|\(try pen.value(forKey: "ink") as! Int64)|"
                    + "\(try holder?.value(forKey: "label") as? String ?? "-")"
            }
        }
        let stringWork = coordinator.statistics

        #expect(typedValues == stringValues)
        #expect(typedValues[7] == "pen 7|7|holder 2")
        // One statement and one row per fault: 200 pens and 5 holders.
        let faults = penIDs.count + holderIDs.count
        #expect(typedWork.totalExecuted == stringWork.totalExecuted)
        #expect(typedWork.totalRowsRead == stringWork.totalRowsRead)
        #expect(typedWork.totalExecuted <= faults, "\(typedWork.totalExecuted) statements for \(faults) faults")
        #expect(typedWork.totalRowsRead == faults)

        // Once the rows are there, reads do no work at all.
        coordinator.resetStatistics()
        let again = typed.performAndWait {
            penIDs.map { id -> String in
                let pen = try! typed.object(with: id) as! Pen
                return "\(pen.name)|\(pen.ink)|\(pen.holder?.label ?? "-")"
            }
        }
        #expect(again == typedValues)
        #expect(coordinator.statistics.totalExecuted == 0 && coordinator.statistics.totalRowsRead == 0)
        print("typed-accessor-work: objects=\(faults) typed-statements=\(typedWork.totalExecuted) string-statements=\(stringWork.totalExecuted) rows=\(typedWork.totalRowsRead)")
    }
}
