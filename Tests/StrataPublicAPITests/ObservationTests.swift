import Foundation
import Observation
import Testing
import Strata
import StrataTestSupport

@Entity final class Paperback: ManagedObject {
    @Attribute(.unique) var isbn: String = ""
    var title: String = ""
    var price: Double = 0
    var rack: Rack?
}

@Entity final class Rack: ManagedObject {
    var label: String = ""
    @Relationship(inverse: \Paperback.rack) var paperbacks: Set<Paperback>
}

/// `@Entity` objects with the `Observation` module, as a view model reads them: each route a
/// change can take fires the observers of the property read, and nothing else fires.
@Suite struct ObservationTests {
    static func model() throws -> Model { try Model(version: "1", types: [Paperback.self, Rack.self]) }

    /// `withObservationTracking` around `read`, run on the context's queue (where objects live).
    static func track(_ context: ManagedObjectContext, _ read: @escaping () -> Void) -> HitCounter {
        let fired = HitCounter()
        context.performAndWait {
            withObservationTracking { read() } onChange: { fired.hit() }
        }
        return fired
    }

    /// A store with two paperbacks on main, saved.
    static func stocked() throws -> (TemporaryDirectory, PersistentContainer, Paperback, Paperback) {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(model: try model(), url: folder.file("shop.sqlite"))
        let main = container.mainContext
        let (dune, emma) = try main.performAndWait {
            let rack = try main.insert(Rack.self)
            rack.label = "A"
            let dune = try main.insert(Paperback.self)
            dune.isbn = "1"
            dune.title = "Dune"
            dune.price = 9
            dune.rack = rack
            let emma = try main.insert(Paperback.self)
            emma.isbn = "2"
            emma.title = "Emma"
            emma.price = 7
            try main.saveToStore()
            return (dune, emma)
        }
        return (folder, container, dune, emma)
    }

    @Test func aSetterFiresItsPropertyOnly() throws {
        let (_, container, dune, emma) = try Self.stocked()
        let main = container.mainContext
        let title = Self.track(main) { _ = dune.title }
        let price = Self.track(main) { _ = dune.price }
        let other = Self.track(main) { _ = emma.title }
        main.performAndWait { dune.title = "Dune Messiah" }
        #expect(title.value == 1)
        #expect(price.value == 0, "another property of the same object")
        #expect(other.value == 0, "the same property of another object")
    }

    @Test func aSaveInAnotherContextMergedIntoMainFires() throws {
        let (_, container, dune, emma) = try Self.stocked()
        let main = container.mainContext
        let title = Self.track(main) { _ = dune.title }
        let price = Self.track(main) { _ = dune.price }
        let other = Self.track(main) { _ = emma.title }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            let object = try background.existingObject(with: dune.objectID, as: Paperback.self)
            object.title = "Children of Dune"
            try background.save()
        }
        container.waitForPendingMerges()
        #expect(main.performAndWait { dune.title } == "Children of Dune")
        #expect(title.value == 1)
        #expect(price.value == 0)
        #expect(other.value == 0)
    }

    @Test func aChildUpdateContextSaveFires() throws {
        let (_, container, dune, _) = try Self.stocked()
        let main = container.mainContext
        let price = Self.track(main) { _ = dune.price }
        let update = container.newUpdateContext()
        try update.performAndWait {
            let object = try update.existingObject(with: dune.objectID, as: Paperback.self)
            object.price = 11
            try update.save()
        }
        container.waitForPendingMerges()
        #expect(main.performAndWait { dune.price } == 11)
        #expect(price.value == 1)
    }

    @Test func aBatchUpdateFires() throws {
        let (_, container, dune, emma) = try Self.stocked()
        let main = container.mainContext
        let price = Self.track(main) { _ = dune.price }
        let title = Self.track(main) { _ = dune.title }
        let otherPrice = Self.track(main) { _ = emma.price }
        try container.coordinator.execute(BatchUpdateRequest(entityName: "Paperback", predicate: try Condition("isbn == %@", "1"),
                                                             propertiesToUpdate: ["price": 20.0]))
        container.waitForPendingMerges()
        #expect(main.performAndWait { dune.price } == 20)
        #expect(price.value == 1)
        #expect(title.value == 0)
        #expect(otherPrice.value == 0, "a row the batch did not change")
    }

    @Test func aRefreshFiresForWhatChanged() throws {
        let (_, container, dune, _) = try Self.stocked()
        // A root context that does not merge: it hears of the background save only when it
        // refreshes.
        let reader = container.coordinator.newContext()
        let object = try reader.performAndWait {
            reader.observesObjects = true                   // a context of our own: observing is opt-in
            return try reader.existingObject(with: dune.objectID, as: Paperback.self)
        }
        let title = Self.track(reader) { _ = object.title }
        let price = Self.track(reader) { _ = object.price }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            let edited = try background.existingObject(with: dune.objectID, as: Paperback.self)
            edited.title = "Dune (new edition)"
            try background.save()
        }
        #expect(title.value == 0)
        try reader.performAndWait { try reader.refresh(object, mergeChanges: false) }
        #expect(reader.performAndWait { object.title } == "Dune (new edition)")
        #expect(title.value == 1)
        #expect(price.value == 0)
    }

    /// The dynamic API, no setter of the class: heard when the context processes its changes.
    @Test func setValueForKeyFiresWhenTheContextProcessesItsChanges() throws {
        let (_, container, dune, _) = try Self.stocked()
        let main = container.mainContext
        let title = Self.track(main) { _ = dune.title }
        let price = Self.track(main) { _ = dune.price }
        try main.performAndWait {
            try dune.setValue("Dune (annotated)", forKey: "title")
            main.processPendingChanges()
        }
        #expect(title.value == 1)
        #expect(price.value == 0)
    }

    @Test func aRollbackFires() throws {
        let (_, container, dune, _) = try Self.stocked()
        let main = container.mainContext
        main.performAndWait { dune.title = "Draft" }
        let title = Self.track(main) { _ = dune.title }
        let price = Self.track(main) { _ = dune.price }
        main.performAndWait { main.rollback() }
        #expect(main.performAndWait { dune.title } == "Dune")
        #expect(title.value == 1)
        #expect(price.value == 0)
    }

    @Test func aToOneChangedElsewhereFiresTheToOne() throws {
        let (_, container, dune, _) = try Self.stocked()
        let main = container.mainContext
        let rack = Self.track(main) { _ = dune.rack }
        let title = Self.track(main) { _ = dune.title }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            let object = try background.existingObject(with: dune.objectID, as: Paperback.self)
            object.rack = nil
            try background.save()
        }
        container.waitForPendingMerges()
        #expect(main.performAndWait { dune.rack } == nil)
        #expect(rack.value == 1)
        #expect(title.value == 0)
    }

    @Test func aMemberJoiningElsewhereFiresTheToMany() throws {
        let (_, container, dune, emma) = try Self.stocked()
        let main = container.mainContext
        let rack = try main.performAndWait { try #require(dune.rack) }
        let members = Self.track(main) { _ = rack.paperbacks }
        let label = Self.track(main) { _ = rack.label }
        let background = container.newBackgroundContext()
        try background.performAndWait {
            let object = try background.existingObject(with: emma.objectID, as: Paperback.self)
            object.rack = try background.existingObject(with: rack.objectID, as: Rack.self)
            try background.save()
        }
        container.waitForPendingMerges()
        #expect(main.performAndWait { rack.paperbacks.map(\.title).sorted() } == ["Dune", "Emma"])
        #expect(members.value == 1, "a member joined through a merge")
        #expect(label.value == 0)
        // And leaving, through another process's route (a batch request: no objects, no setter).
        let again = Self.track(main) { _ = rack.paperbacks }
        try container.coordinator.execute(BatchUpdateRequest(entityName: "Paperback", predicate: try Condition("isbn == %@", "2"),
                                                              propertiesToUpdate: ["rack": nil]))
        container.waitForPendingMerges()
        #expect(main.performAndWait { rack.paperbacks.map(\.title) } == ["Dune"])
        #expect(again.value == 1, "a member left through a batch request")
    }

    @Test func aContextThatDoesNotObserveGivesNoRegistrar() throws {
        let (_, container, dune, _) = try Self.stocked()
        let reader = container.coordinator.newContext()
        let object = try reader.performAndWait {
            #expect(reader.observesObjects == false, "only the container's main context observes by default")
            #expect(container.mainContext.performAndWait { container.mainContext.observesObjects })
            return try reader.existingObject(with: dune.objectID, as: Paperback.self)
        }
        let title = Self.track(reader) { _ = object.title }
        reader.performAndWait { object.title = "Unwatched" }
        #expect(title.value == 0, "not observed: the read registered nothing")
    }
}

/// `context.results(for:)` as a user writes it: `for try await` over a typed request.
@Suite struct ResultStreamTests {
    @Test func theFirstElementIsTheFetchAndEachSaveBringsOne() async throws {
        let (_, container, _, _) = try ObservationTests.stocked()
        let main = container.mainContext
        let request = FetchRequest<Paperback>(sortBy: [SortDescriptor(\.title)])
        var iterator = main.results(for: request).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.changes == nil)
        #expect(try await main.perform { try first.objects().map(\.title) } == ["Dune", "Emma"])

        let background = container.newBackgroundContext()
        try await background.perform {
            let book = try background.insert(Paperback.self)
            book.isbn = "3"
            book.title = "Beloved"
            try background.save()
        }
        let second = try #require(try await iterator.next())
        #expect(try await main.perform { try second.objects().map(\.title) } == ["Beloved", "Dune", "Emma"])
        let changes = try #require(second.changes)
        #expect(changes.before == first.snapshot)
        #expect(changes.objects.count == 1)
        #expect(try await main.perform { try second.changedObjects().map(\.title) } == ["Beloved"])

        // A change that does not touch the list's request brings nothing: the next element is
        // the next change that does.
        try await background.perform {
            let rack = try background.insert(Rack.self)
            rack.label = "B"
            try background.save()
        }
        try await background.perform {
            let emma = try background.fetch(FetchRequest<Paperback>(predicate: #Predicate { $0.isbn == "2" })).first!
            emma.title = "Aemma"
            try background.save()
        }
        let third = try #require(try await iterator.next())
        #expect(try await main.perform { try third.objects().map(\.title) } == ["Aemma", "Beloved", "Dune"])
    }
}
