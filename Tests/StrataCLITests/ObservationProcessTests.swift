import Foundation
import Observation
import Testing
import Strata
import StrataTestSupport

@Entity final class Novel: ManagedObject {
    @Attribute(.unique) var isbn: String = ""
    var title: String = ""
    var pages: Int64 = 0
}

/// Observation of an `@Entity` object on main while another process (`strata import`) commits
/// to the store: the app makes no call; the follower merges the commit and the observers of the
/// changed property, only those, fire.
@Suite struct ObservationProcessTests {
    @Test func anotherProcessesCommitFiresTheChangedPropertyOnly() throws {
        let folder = TemporaryDirectory()
        let store = folder.file("novels.sqlite")
        let container = try PersistentContainer(model: try Model(version: "1", types: [Novel.self]), url: store)
        let main = container.mainContext
        let (emma, dune) = try main.performAndWait {
            let emma = try main.insert(Novel.self)
            emma.isbn = "1"
            emma.title = "Emma"
            emma.pages = 400
            let dune = try main.insert(Novel.self)
            dune.isbn = "2"
            dune.title = "Dune"
            dune.pages = 600
            try main.saveToStore()
            return (emma, dune)
        }
        let title = HitCounter(), pages = HitCounter(), other = HitCounter()
        main.performAndWait {
            withObservationTracking { _ = emma.title } onChange: { title.hit() }
            withObservationTracking { _ = emma.pages } onChange: { pages.hit() }
            withObservationTracking { _ = dune.title } onChange: { other.hit() }
        }
        let csv = folder.file("novels.csv")
        try "isbn,title,pages\n1,Emma (annotated),400\n2,Dune,600\n".write(to: csv, atomically: true, encoding: .utf8)
        let result = try CLI.run(["import", store.path, "--entity", "Novel", csv.path, "--quiet"])
        #expect(result.status == 0, "\(result)")
        // No call: the follower brings the commit to main.
        let deadline = Date().addingTimeInterval(20)
        while main.performAndWait({ emma.title }) != "Emma (annotated)", Date() < deadline { usleep(2_000) }
        #expect(main.performAndWait { emma.title } == "Emma (annotated)")
        #expect(title.value == 1)
        #expect(pages.value == 0, "a property the commit left as it was")
        #expect(other.value == 0, "a row the commit left as it was")
        container.coordinator.close()
    }
}
