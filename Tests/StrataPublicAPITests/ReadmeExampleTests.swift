import Foundation
import Strata
import StrataTestSupport
import Testing

/// README.md's example, as a package that depends on Strata writes it (`import Strata`, no
/// `@testable`): it must compile and print what the README says, and the README must show this
/// code (a changed example fails here until the two agree again).
@Suite struct ReadmeExampleTests {
    // --- README example: the classes (top-level there) ---
    @Entity final class Category: ManagedObject {
        var name: String
        @Relationship(inverse: \Good.category) var goods: Set<Good> = []
    }

    @Entity final class Good: ManagedObject {
        var name: String
        var price: Double = 0
        var category: Category?
    }
    // --- end of the classes ---

    /// The README's example, word for word, with the store's URL given (its `let url =` line).
    static func readmeExample(url: URL) throws -> [String] {
        var printed: [String] = []
        func print(_ value: Any) { printed.append("\(value)") }
        // --- README example (after the classes and the URL) ---
        let container = try PersistentContainer(model: try Model(version: "1", types: [Category.self, Good.self]), url: url)
        let context = container.mainContext
        try context.performAndWait {                   // a context's objects live on its queue
            let fruit = try context.insert(Category.self)
            fruit.name = "Fruit"
            for (name, price) in [("Cherry", 4.5), ("Banana", 0.9), ("Apple", 1.2)] {
                let good = try context.insert(Good.self)
                good.name = name
                good.price = price
                good.category = fruit                  // fruit.goods now holds it too
            }
            try context.saveToStore()                  // one transaction in goods.sqlite

            let cheap = FetchRequest<Good>(predicate: #Predicate { $0.price < 2 && $0.category?.name == "Fruit" },
                                           sortBy: [SortDescriptor(\.name)])
            print(try context.fetch(cheap).map(\.name))   // ["Apple", "Banana"]
        }
        // --- end of the README example ---
        container.coordinator.close()
        return printed
    }

    @Test func theExampleRunsAndPrintsWhatTheReadmeSays() throws {
        try withTemporaryDirectory { directory in
            let url = directory.file("goods.sqlite")
            let printed = try Self.readmeExample(url: url)
            #expect(printed == [#"["Apple", "Banana"]"#])

            // The save reached the file: a new container on it reads the three goods back.
            let container = try PersistentContainer(model: try Model(version: "1", types: [Category.self, Good.self]), url: url)
            defer { container.coordinator.close() }
            let names = try container.mainContext.performAndWait {
                try container.mainContext.fetch(FetchRequest<Good>(sortBy: [SortDescriptor(\.name)])).map(\.name)
            }
            #expect(names == ["Apple", "Banana", "Cherry"])
        }
    }

    /// Every line of the README's Swift example is in this file (its imports and its `let url =`
    /// line aside).
    @Test func theReadmeShowsThisCode() throws {
        #expect(try DocumentedExample.lines(of: "README.md", containing: "PersistentContainer").count >= 20)
        try DocumentedExample.expectShown(in: "README.md", containing: "PersistentContainer",
                                          skipping: ["import ", "let url = "], source: #filePath)
    }
}
