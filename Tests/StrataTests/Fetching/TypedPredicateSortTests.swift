import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Foundation `SortDescriptor` → ``SortKey``, and the typed `FetchRequest` initialiser.
@Suite struct TypedPredicateSortTests {
    @Test func attributesAndDirections() throws {
        #expect(try SortKey(SortDescriptor(\Corp.Employee.name)) == .ascending("name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.name, order: .reverse)) == .descending("name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.age)) == .ascending("age"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.height, order: .reverse)) == .descending("height"))
        #expect(try SortKey(SortDescriptor(\Corp.Project.title)) == .ascending("title"))
        #expect(try SortKey(SortDescriptor(\Corp.Sample.when)) == .ascending("when"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.name, comparator: .lexical)) == .ascending("name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.email, comparator: .lexical, order: .reverse)) == .descending("email"))
        #expect(try SortKey.array([SortDescriptor(\Corp.Employee.age, order: .reverse), SortDescriptor(\Corp.Employee.name)])
                == [.descending("age"), .ascending("name")])
    }

    @Test func keyPathsThroughToOneRelationships() throws {
        #expect(try SortKey(SortDescriptor(\Corp.Employee.department?.name)) == .ascending("department.name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.department?.name, order: .reverse)) == .descending("department.name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.department?.company?.name)) == .ascending("department.company.name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.department!.name)) == .ascending("department.name"))
        #expect(try SortKey(SortDescriptor(\Corp.Employee.desk?.number, order: .reverse)) == .descending("desk.number"))
        #expect(try SortKey(SortDescriptor(\Corp.Department.company?.name)) == .ascending("company.name"))
    }

    @Test func untranslatableSortDescriptorsThrow() throws {
        // Not a persistent property.
        #expect(throws: PredicateTranslationError.self) { try SortKey(SortDescriptor(\Corp.Employee.shout)) }
        // Through a to-many relationship.
        #expect(throws: PredicateTranslationError.self) { try SortKey(SortDescriptor(\Corp.Employee.projects.count)) }
        // Badge has no keyPath(forPropertyNamed:), so a key path through it can't be taken apart.
        let error = #expect(throws: PredicateTranslationError.self) { try SortKey(SortDescriptor(\Corp.Employee.badge?.code)) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("keyPath(forPropertyNamed:)"))
        // A computed property after a relationship.
        #expect(throws: PredicateTranslationError.self) { try SortKey(SortDescriptor(\Corp.Employee.department?.name.count)) }
    }

    /// What Foundation's string comparators become (on Linux only `.lexical` can be built, so
    /// the mapping is checked on the comparators' options).
    @Test func stringComparators() {
        #expect(SortKey.comparison(for: .lexical) == .binary)
        // .localizedStandard: numeric, case- and width-insensitive, forced ordering, localized.
        #expect(SortKey.comparison(options: [.numeric, .caseInsensitive, .widthInsensitive, .forcedOrdering], isLocalized: true) == .localized)
        #expect(SortKey.comparison(options: [], isLocalized: true) == .localized)                   // .localized
        #expect(SortKey.comparison(options: [.caseInsensitive], isLocalized: false) == .caseInsensitive)
        #expect(SortKey.comparison(options: [.caseInsensitive, .diacriticInsensitive], isLocalized: false) == .caseInsensitive)
        #expect(SortKey.comparison(options: [.numeric], isLocalized: false) == .localized)
        #expect(SortKey.comparison(options: [], isLocalized: false) == .binary)
    }

    /// A typed request fetches what the string request does, in Foundation's order.
    @Test func typedFetchRequestSortsLikeFoundation() throws {
        let store = try TestStore(model: CorpModel.model)
        let context = store.context
        try context.performAndWait {
            _ = try TypedPredicateLiteralTests.populate(context)
            let descriptors = [SortDescriptor(\Corp.Employee.department?.name, order: .reverse), SortDescriptor(\Corp.Employee.name)]
            let typed = try FetchRequest(Corp.Employee.self, predicate: #Predicate { $0.name != "Zed" }, sortBy: descriptors)
            let strings = FetchRequest(entityName: "Employee", predicate: try Condition("name != 'Zed'"),
                                       sortKeys: [.descending("department.name"), .ascending("name")])
            #expect(typed.untyped == strings)
            let fetched = try context.fetch(typed, as: Corp.Employee.self)
            #expect(fetched.map(\.objectID) == (try context.fetch(strings).map(\.objectID)))
            // Foundation's own order of the same objects (nil department names last when reversed).
            let sorted = fetched.sorted(using: descriptors)
            #expect(fetched.map(\.name) == sorted.map(\.name))
            #expect(fetched.first?.department?.name == "École" && fetched.last?.department == nil)

            let window = try FetchRequest(Corp.Employee.self, sortBy: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)],
                                          fetchLimit: 3, fetchOffset: 1, includesPendingChanges: false)
            #expect(window.fetchLimit == 3 && window.fetchOffset == 1 && !window.includesPendingChanges)
            #expect(try context.fetch(window, as: Corp.Employee.self).map(\.name) == ["Óscar", "Mallory", "école"])
        }
    }

    @Test func fetchRequestWithoutPredicateOrSort() throws {
        let request = try FetchRequest(Corp.Department.self)
        #expect(request.untyped == FetchRequest(entityName: "Department"))
    }
}
