import Foundation
import Strata
import Testing

/// FetchedResults.md's examples, run: the overview's controller, the table-view delegate, the
/// change it reports and the section index titles, word for word, print what the article's
/// comments say. Each block must be in this file as the article shows it, so a changed example
/// fails here until the two agree again.
@Suite struct ArticleFetchedResultsTests {
    static let article = "Sources/Strata/Strata.docc/FetchedResults.md"

    // --- the overview's classes (top-level in the article) ---
    @Entity final class Category: ManagedObject {
        var name: String
        @Relationship(inverse: \Good.category) var goods: Set<Good> = []
    }

    @Entity final class Good: ManagedObject {
        var name: String
        var category: Category?
    }
    // --- "A table view's data source": the delegate ---
    /// One table-view operation, in batch-update terms.
    enum TableUpdate: Sendable {
        case deleteSection(Int), insertSection(Int)
        case deleteRow(FetchedIndexPath), insertRow(FetchedIndexPath)
        case moveRow(FetchedIndexPath, to: FetchedIndexPath), reloadRow(FetchedIndexPath)
    }

    /// On main's queue: gathers one change set, then hands it on with the new layout.
    final class GoodsTableDelegate: FetchedResultsControllerDelegate {
        private var updates: [TableUpdate] = []
        private let apply: ([TableUpdate], FetchedSnapshot) -> Void
        private let reload: (FetchedSnapshot) -> Void

        init(apply: @escaping ([TableUpdate], FetchedSnapshot) -> Void, reload: @escaping (FetchedSnapshot) -> Void) {
            (self.apply, self.reload) = (apply, reload)
        }

        func controllerWillChangeContent(_ controller: AnyFetchedResultsController) {
            updates = []
        }

        func controller(_ controller: AnyFetchedResultsController, didChange section: FetchedSection,
                        atSectionIndex index: Int, for type: FetchedResultsChangeType) {
            // Sections are only ever inserted or deleted.
            updates.append(type == .delete ? .deleteSection(index) : .insertSection(index))
        }

        func controller(_ controller: AnyFetchedResultsController, didChange objectID: ObjectID,
                        at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType,
                        newIndexPath: FetchedIndexPath?) {
            switch type {
            case .delete: updates.append(.deleteRow(indexPath!))                  // old path
            case .insert: updates.append(.insertRow(newIndexPath!))               // new path
            case .move:   updates.append(.moveRow(indexPath!, to: newIndexPath!)) // old → new
            case .update: updates.append(.reloadRow(indexPath!))                  // old path
            }
        }

        func controllerDidChangeContent(_ controller: AnyFetchedResultsController) {
            apply(updates, controller.snapshot)
        }

        func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) {
            guard case .reload(let layout) = event else { return }   // changes: handled above
            reload(layout)
        }
    }
    // --- end of the article's types ---

    /// The overview, the delegate's use and the index titles, in the article's order.
    static func examples() throws -> [String] {
        var printed: [String] = []
        func print(_ items: Any..., separator: String = " ") {
            printed.append(items.map { "\($0)" }.joined(separator: separator))
        }
        let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Category.self, Good.self]))
        let main = container.mainContext
        try main.performAndWait {                          // a few goods, one without a category
            let (dairy, fruit, vegetable) = (try main.insert(Category.self), try main.insert(Category.self),
                                             try main.insert(Category.self))
            (dairy.name, fruit.name, vegetable.name) = ("Dairy", "Fruit", "Vegetable")
            let goods: [(String, Category?)] = [("Milk", dairy), ("Apple", fruit), ("Pear", fruit), ("Leek", vegetable),
                                                ("Salt", nil)]
            for (name, category) in goods {
                let good = try main.insert(Good.self)
                good.name = name
                good.category = category
            }
            try main.saveToStore()
        }

        var request = FetchRequest<Good>(sortBy: [SortDescriptor(\.category?.name), SortDescriptor(\.name)])
        request.fetchBatchSize = 50
        let controller = try FetchedResultsController(request, context: main, sectionBy: \.category?.name)
        try main.performAndWait {
            try controller.performFetch()
            for section in controller.sections ?? [] {
                print(section.name.debugDescription, section.numberOfObjects, section.indexTitle ?? "-")
            }
            // "" 1 #                  Salt, without a category
            // "Dairy" 1 D
            // "Fruit" 2 F
            // "Vegetable" 1 V
            let first: Good = try controller.object(at: FetchedIndexPath(item: 0, section: 2))
            print(first.name)                              // Apple
        }
        // The delivery saved elsewhere, and the delegate's report of it.
        let table = GoodsTableDelegate(
            apply: { updates, layout in
                for update in updates { print(update) }
                print(layout.sections.map { "\($0.name): \($0.numberOfObjects)" })
            },
            reload: { layout in print("reload", layout.numberOfObjects) })
        main.performAndWait { controller.delegate = table }   // from now on every change is reported

        let update = container.newUpdateContext()
        try update.performAndWait {
            let bakery = try update.insert(Category.self)
            bakery.name = "Bakery"
            let bread = try update.insert(Good.self)
            (bread.name, bread.category) = ("Bread", bakery)
            try update.fetch(FetchRequest<Good>(predicate: #Predicate { $0.name == "Pear" }))[0].name = "Apricot"
            try update.delete(try update.fetch(FetchRequest<Good>(predicate: #Predicate { $0.name == "Leek" }))[0])
            try update.saveToStore()
        }
        // deleteSection(3)
        // insertSection(1)
        // deleteRow([3, 0])
        // insertRow([1, 0])
        // reloadRow([2, 1])
        // [": 1", "Bakery: 1", "Dairy: 1", "Fruit: 2"]
        // "Sections": the index titles.
        try main.performAndWait {
            // Two-letter titles; the section of goods without a category shows "–".
            controller.sectionIndexTitle = { name in name.isEmpty ? "–" : String(name.prefix(2)).uppercased() }
            try controller.performFetch()
            print(controller.sectionIndexTitles)   // ["–", "BA", "DA", "FR"]: "", Bakery, Dairy, Fruit
        }
        main.performAndWait { controller.delegate = nil }
        return printed
    }

    @Test func theExamplesPrintWhatTheArticleSays() throws {
        #expect(try Self.examples() == [
            "\"\" 1 #",
            #""Dairy" 1 D"#,
            #""Fruit" 2 F"#,
            #""Vegetable" 1 V"#,
            "Apple",
            "deleteSection(3)",
            "insertSection(1)",
            "deleteRow([3, 0])",
            "insertRow([1, 0])",
            "reloadRow([2, 1])",
            #"[": 1", "Bakery: 1", "Dairy: 1", "Fruit: 2"]"#,
            #"["–", "BA", "DA", "FR"]"#,
        ])
    }

    /// Every block run here is in this file, line for line (imports aside).
    @Test(arguments: [
        "sectionBy: \\.category?.name)",          // the overview
        "final class GoodsTableDelegate",         // the delegate
        "let table = GoodsTableDelegate(",        // its use
        "controller.sectionIndexTitle = ",        // index titles
    ])
    func theArticleShowsThisCode(_ marker: String) throws {
        try DocumentedExample.expectShown(in: Self.article, containing: marker, skipping: ["import "], source: #filePath)
    }
}
