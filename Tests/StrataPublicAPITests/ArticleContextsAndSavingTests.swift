import Foundation
import Strata
import Testing

/// ContextsAndSaving.md's "Counting SQL" example is a test: this is it, word for word, with the
/// model of GettingStarted.md it names. The article must show this code, so a changed example
/// fails here until the two agree again.
@Suite struct ArticleContextsAndSavingTests {
    // --- GettingStarted.md's model ---
    @Entity final class Category: ManagedObject {
        @Attribute(.indexed) var name: String
        @Relationship(inverse: \Good.category, deleteRule: .cascade) var goods: Set<Good> = []
    }

    @Entity final class Good: ManagedObject {
        @Attribute(maxLength: 80) var name: String
        @Attribute(minValue: 0) var number: Int64 = 0
        var category: Category
    }

    let model = try! Model(version: "1", types: [Category.self, Good.self])

    // --- ContextsAndSaving.md, "Counting SQL" ---
    @Test func renamingOneGoodIsOneUpdate() throws {
        let coordinator = try StoreCoordinator(inMemoryWith: model)
        let context = coordinator.newContext(name: "main")
        try context.performAndWait {
            let fruit = try context.insert(Category.self)
            fruit.name = "Fruit"
            let apple = try context.insert(Good.self)
            (apple.name, apple.category) = ("Apple", fruit)
            try context.save()
            coordinator.resetStatistics()

            apple.name = "Apricot"
            try context.save()
            let statistics = coordinator.statistics
            #expect(statistics.executions(startingWith: "BEGIN IMMEDIATE") == 1)
            #expect(statistics.executions(of: .update, entity: "Good") == 1)
            #expect(statistics.executions(of: .select) == 0)
            // BEGIN, UPDATE "Good", strata_meta, strata_entity, the history's transaction and change, COMMIT
            #expect(statistics.totalExecuted == 7)

            coordinator.resetStatistics()
            try context.save()                         // nothing pending
            #expect(coordinator.statistics.totalExecuted == 0)
        }
    }
    // --- end of the example ---

    @Test func theArticleShowsThisCode() throws {
        try DocumentedExample.expectShown(in: "Sources/Strata/Strata.docc/ContextsAndSaving.md",
                                          containing: "func renamingOneGoodIsOneUpdate", source: #filePath)
    }
}
