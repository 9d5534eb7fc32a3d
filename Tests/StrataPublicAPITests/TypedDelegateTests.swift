import Foundation
import Testing
import Strata

/// A typed controller calls a delegate written the natural way, with its own type
/// (`FetchedResultsController<Ware>`); an untyped delegate (`AnyFetchedResultsController`, what a
/// 0.1.0 delegate's `FetchedResultsController` becomes, see the CHANGELOG's Breaking) works for
/// every controller; and a delegate whose methods name another controller type does not build.
@Suite struct TypedDelegateTests {
    /// Written as a user upgrading a 0.1.0 delegate writes it: the typed controller in the
    /// signature, one method, the defaults for the rest.
    final class WareList: FetchedResultsControllerDelegate {
        var snapshots: [FetchedSnapshot] = []
        var names: [[String]] = []
        func controller(_ controller: FetchedResultsController<Ware>, didChangeContentWith snapshot: FetchedSnapshot) {
            snapshots.append(snapshot)
            names.append(((try? controller.fetchedObjects) ?? []).map(\.name))
        }
    }

    /// An untyped delegate (a 0.1.0 delegate with its controller type renamed), for every controller.
    final class AnyList: FetchedResultsControllerDelegate {
        var changes: [FetchedChanges] = []
        var wills = 0, dids = 0
        func controllerWillChangeContent(_ controller: AnyFetchedResultsController) { wills += 1 }
        func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
            if case .changes(let changes) = event { self.changes.append(changes) }
        }
        func controllerDidChangeContent(_ controller: AnyFetchedResultsController) { dids += 1 }
    }

    /// Per change, typed.
    final class WareRows: FetchedResultsControllerDelegate {
        var inserted: [FetchedIndexPath] = []
        var wills = 0
        func controllerWillChangeContent(_ controller: FetchedResultsController<Ware>) { wills += 1 }
        func controller(_ controller: FetchedResultsController<Ware>, didChange objectID: ObjectID, at indexPath: FetchedIndexPath?,
                        for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
            if type == .insert, let newIndexPath { inserted.append(newIndexPath) }
        }
    }

    @Test func aTypedDelegateIsCalledWithItsOwnControllerType() throws {
        let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Shop.self, Ware.self]))
        let main = container.mainContext
        let typed = WareList(), untyped = AnyList(), rows = WareRows()
        let controller = FetchedResultsController(FetchRequest<Ware>(sortBy: [SortDescriptor(\.name)]), context: main)
        let second = FetchedResultsController(FetchRequest<Ware>(sortBy: [SortDescriptor(\.name)]), context: main)
        let third = FetchedResultsController(FetchRequest<Ware>(sortBy: [SortDescriptor(\.name)]), context: main)
        try main.performAndWait {
            try controller.performFetch()
            try second.performFetch()
            try third.performFetch()
            controller.delegate = typed
            second.delegate = untyped
            third.delegate = rows
            for name in ["fig", "apple"] {
                let ware = try main.insert(Ware.self)
                ware.name = name
                main.processPendingChanges()
            }
        }
        #expect(typed.snapshots.count == 2)
        #expect(typed.names == [["fig"], ["apple", "fig"]])
        #expect(untyped.changes.count == 2 && untyped.wills == 2 && untyped.dids == 2)
        #expect(rows.wills == 2)
        #expect(rows.inserted == [FetchedIndexPath(item: 0, section: 0), FetchedIndexPath(item: 0, section: 0)])
    }

    /// The wrong controller type, caught by the precondition at the assignment (the type is a
    /// run-time fact of the delegate property): never a delegate silently not called.
    @Test func aDelegateOfAnotherControllerTypeStopsAtTheAssignment() async {
        await #expect(processExitsWith: .failure) {
            let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Shop.self, Ware.self]))
            let controller = FetchedResultsController(FetchRequest<Shop>(sortBy: [SortDescriptor(\.name)]), context: container.mainContext)
            let delegate = WareList()
            container.mainContext.performAndWait { controller.delegate = delegate }
        }
    }

    // MARK: What does not build

    static let template = """
        import Foundation
        import Strata

        @Entity final class Good: ManagedObject {
            var name: String
        }

        final class GoodsList: FetchedResultsControllerDelegate {
            METHODS
        }

        """

    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let methods: String
        let builds: Bool
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "typed, one method",
             methods: "func controller(_ c: FetchedResultsController<Good>, didChangeContentWith s: FetchedSnapshot) {}",
             builds: true),
        Case(name: "untyped, any controller",
             methods: "func controllerDidChangeContent(_ c: AnyFetchedResultsController) {}",
             builds: true),
        Case(name: "two controller types in one delegate",
             methods: """
                 func controller(_ c: FetchedResultsController<Good>, didChangeContentWith s: FetchedSnapshot) {}
                     func controllerDidChangeContent(_ c: AnyFetchedResultsController) {}
                 """,
             builds: false),
        Case(name: "typed and untyped of one method",
             methods: """
                 func controllerWillChangeContent(_ c: FetchedResultsController<Good>) {}
                     func controller(_ c: AnyFetchedResultsController, didReport e: FetchedResultsEvent) {}
                 """,
             builds: false),
    ]

    @Test(arguments: cases) func aDelegateNamingTwoControllerTypesDoesNotBuild(_ testCase: Case) throws {
        let source = Self.template.replacingOccurrences(of: "METHODS", with: testCase.methods)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-delegate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Client.swift")
        try Data(source.utf8).write(to: file)
        let (status, output) = try MisspelledKeyCompileTests.typeCheck(file)
        let errors = output.split(separator: "\n").filter { $0.hasPrefix(file.path + ":") && $0.contains(": error: ") }
        if testCase.builds {
            #expect(status == 0 && errors.isEmpty, "must type-check:\n\(output)")
        } else {
            #expect(status != 0, "\(testCase.name) built:\n\(output)")
            #expect(errors.contains { $0.contains("does not conform to protocol 'FetchedResultsControllerDelegate'") },
                    "\(errors.joined(separator: "\n"))")
        }
    }
}
