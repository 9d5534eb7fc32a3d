import Foundation
import Strata
import StrataTestSupport
import Testing

/// GettingStarted.md's tutorial, run: its blocks, word for word, on a new store in a temporary
/// folder, print what the article's comments say they print. Each block must be in this file
/// as the article shows it, so a changed tutorial fails here until the two agree again.
@Suite struct ArticleGettingStartedTests {
    static let article = "Sources/Strata/Strata.docc/GettingStarted.md"

    // --- "Define the model" (top-level in the article) ---
    @Entity final class Category: ManagedObject {
        @Attribute(.indexed) var name: String
        @Relationship(inverse: \Good.category, deleteRule: .cascade) var goods: Set<Good> = []
    }

    @Entity final class Good: ManagedObject {
        @Attribute(maxLength: 80) var name: String
        @Attribute(minValue: 0) var number: Int64 = 0
        var category: Category
    }
    // --- end of the classes ---

    /// The tutorial's blocks in order ("Open a store" with the test's file for its `let url =`
    /// line), returning what they print.
    static func tutorial(url: URL) throws -> [String] {
        var printed: [String] = []
        func print(_ items: Any..., separator: String = " ") {
            printed.append(items.map { "\($0)" }.joined(separator: separator))
        }
        let model = try Model(version: "1", types: [Category.self, Good.self])
        let container = try PersistentContainer(model: model, url: url)
        defer { container.coordinator.close() }
        let context = container.mainContext
        try context.performAndWait {
            let fruit = try context.insert(Category.self)
            fruit.name = "Fruit"
            for (index, name) in ["Apple", "Banana", "Cherry"].enumerated() {
                let good = try context.insert(Good.self)
                good.name = name
                good.number = Int64(index + 1)
                good.category = fruit                     // fruit.goods now holds good too
            }
            print(fruit.objectID)                         // Category/1 in a new store: permanent already

            if let result = try context.saveToStore() {   // main → writer → one BEGIN IMMEDIATE … COMMIT
                print("generation \(result.generation), wrote \(result.touchedEntities.sorted())")
                // generation 1, wrote ["Category", "Good"]
            }
        }
        try context.performAndWait {
            let request = FetchRequest<Good>(sortBy: [SortDescriptor(\.number, order: .reverse), SortDescriptor(\.name)])
            for good in try context.fetch(request) {
                print(good.number, good.name, good.category.name)
            }
            // 3 Cherry Fruit
            // 2 Banana Fruit
            // 1 Apple Fruit
            print("categories:", try context.count(for: FetchRequest<Category>()))   // categories: 1
        }
        try context.performAndWait {
            var request = FetchRequest<Good>(predicate: #Predicate { $0.category.name == "Fruit" && $0.name.starts(with: "B") },
                                             sortBy: [SortDescriptor(\.name)])
            print(try context.fetch(request).map(\.name))     // ["Banana"]

            request.predicate = #Predicate { $0.number >= 2 }
            print(try context.fetch(request).map(\.name))     // ["Banana", "Cherry"]
        }
        let metadata = try container.coordinator.metadata()
        print(metadata.generation)                        // 1
        print(metadata.entityGenerations["Good"] ?? 0)    // 1: the generation of the last commit that touched Good
        try context.performAndWait {
            let good = try context.insert(Good.self)
            good.name = String(repeating: "x", count: 81)   // maxLength is 80; no category set
            do {
                try context.saveToStore()
            } catch let error as ValidationError {
                for failure in error.failures { print(failure) }
                // Good/4 category: required — a Category is required
                // Good/4 name: maxLength — length 81 is greater than 80
                context.rollback()                          // or fix the values and save again
            }
        }
        try context.performAndWait {
            let good = try context.insert(Good.self)
            try good.setValue("Apple", forKey: "name")
            do {
                try good.setValue("ten", forKey: "number")
            } catch {
                print(error)                                       // Good.number takes int64, not String
            }
            print(try good.value(forKey: "name") as? String ?? "")   // Apple
            context.rollback()
        }
        return printed
    }

    @Test func theTutorialPrintsWhatTheArticleSays() throws {
        try withTemporaryDirectory { directory in
            let printed = try Self.tutorial(url: directory.file("goods.sqlite"))
            #expect(printed == [
                "Category/1",
                #"generation 1, wrote ["Category", "Good"]"#,
                "3 Cherry Fruit",
                "2 Banana Fruit",
                "1 Apple Fruit",
                "categories: 1",
                #"["Banana"]"#,
                #"["Banana", "Cherry"]"#,
                "1",
                "1",
                "Good/4 category: required — a Category is required",
                "Good/4 name: maxLength — length 81 is greater than 80",
                "Good.number takes int64, not String",
                "Apple",
            ])
        }
    }

    /// Every block the tutorial runs is in this file, line for line (the model's classes and
    /// imports included; the store's URL aside).
    @Test(arguments: [
        "types: [Category.self, Good.self]",      // "Define the model"
        "PersistentContainer(model: model",       // "Open a store"
        "print(fruit.objectID)",                  // "Insert and save"
        "SortDescriptor(\\.number, order: .reverse)", // "Fetch, sorted"
        "$0.name.starts(with:",                   // "Fetch with a predicate"
        "coordinator.metadata()",                 // "Read the generation"
        "catch let error as ValidationError",     // "Handle a validation error"
        #"forKey: "number")"#,                    // "Keys that come from data"
    ])
    func theArticleShowsThisCode(_ marker: String) throws {
        try DocumentedExample.expectShown(in: Self.article, containing: marker,
                                          skipping: ["import ", "let url = "], source: #filePath)
    }
}
