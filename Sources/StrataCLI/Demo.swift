import ArgumentParser
import Foundation
import Strata

/// `strata demo`: the classic Core Data tutorial, end to end on a real store.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Create a store, insert goods in categories, read them back grouped, leave a section cache.",
        discussion: """
            Example:
              strata demo                       # a fresh temporary folder, printed
              strata demo --path /tmp/goods.sqlite
              strata cache list /tmp/goods.sqlite   # the cache the demo's list left
            """
    )

    @Option(name: .long, help: "The store file to create or reuse (default: a new temporary folder).")
    var path: String?

    func run() throws {
        let url: URL
        if let path {
            url = URL(fileURLWithPath: path)
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            url = folder.appendingPathComponent("goods.sqlite")
        }
        print("store: \(url.path)")
        let coordinator = try StoreCoordinator(model: DemoModel.model, url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "demo")
        try context.performAndWait {
            let before = try coordinator.metadata().generation
            var categories: [String: Category] = [:]
            for (index, item) in DemoModel.goods.enumerated() {
                let category = try categories[item.category] ?? {
                    let category = try context.insert(Category.self)
                    category.name = item.category
                    categories[item.category] = category
                    return category
                }()
                let good = try context.insert(Good.self)
                good.name = item.name
                good.number = Int64(index + 1)
                good.category = category
            }
            let result = try context.save()
            print("saved \(DemoModel.goods.count) goods in \(categories.count) categories; generation \(before) → \(result?.generation ?? before)")

            let request = FetchRequest(entityName: "Category", sortKeys: [.ascending("name")])
            for category in try context.fetch(request, as: Category.self) {
                let goods = category.goods.sorted { $0.name < $1.name }
                print("\n\(category.name) (\(goods.count))")
                for good in goods { print("  #\(good.number)  \(good.name)") }
            }
        }
        try writeCache(coordinator)
        let metadata = try coordinator.metadata()
        print("\nstore \(metadata.storeUUID.uuidString) generation \(metadata.generation)")
    }

    /// Leaves a section cache on the store, as an app's list would: goods by category, then name,
    /// sectioned by category (`strata cache list` shows it).
    private func writeCache(_ coordinator: StoreCoordinator) throws {
        let context = coordinator.newContext(name: "demo-list")
        let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                  sectionNameKeyPath: "category.name", cacheName: DemoModel.cacheName)
        let sections = try context.performAndWait {
            try controller.performFetch()
            return controller.sections ?? []
        }
        coordinator.waitForCacheWrites()
        print("\ncache \(DemoModel.cacheName): "
              + sections.map { "\($0.name) \($0.numberOfObjects)" }.joined(separator: ", "))
    }
}

final class Category: ManagedObject {
    var name: String {
        get { self[attribute: "name"] ?? "" }
        set { self[attribute: "name"] = newValue }
    }
    var goods: Set<Good> { self[toMany: "goods"] }
}

final class Good: ManagedObject {
    var name: String {
        get { self[attribute: "name"] ?? "" }
        set { self[attribute: "name"] = newValue }
    }
    var number: Int64 {
        get { self[attribute: "number"] ?? 0 }
        set { self[attribute: "number"] = newValue }
    }
    var category: Category? {
        get { self[toOne: "category"] }
        set { self[toOne: "category"] = newValue }
    }
}

enum DemoModel {
    /// The section cache the demo leaves on its store.
    static let cacheName = "goods-by-category"

    static let model = try! Model(version: "demo-1", entities: [
        Entity("Category", class: Category.self,
               attributes: [Attribute("name", .string, isOptional: false, isIndexed: true)],
               relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category", deleteRule: .cascade)]),
        Entity("Good", class: Good.self,
               attributes: [
                   Attribute("name", .string, isOptional: false, maxLength: 80),
                   Attribute("number", .int64, isOptional: false, defaultValue: .int64(0), minValue: 0),
               ],
               relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods", isOptional: false)]),
    ])

    static let goods: [(name: String, category: String)] = [
        ("Apple", "Fruit"), ("Banana", "Fruit"), ("Cherry", "Fruit"), ("Date", "Fruit"), ("Elderberry", "Fruit"),
        ("Fig", "Fruit"), ("Grape", "Fruit"), ("Carrot", "Vegetables"), ("Leek", "Vegetables"), ("Onion", "Vegetables"),
        ("Potato", "Vegetables"), ("Spinach", "Vegetables"), ("Tomato", "Vegetables"), ("Baguette", "Bakery"),
        ("Croissant", "Bakery"), ("Pretzel", "Bakery"), ("Rye bread", "Bakery"), ("Brie", "Dairy"), ("Butter", "Dairy"),
        ("Gouda", "Dairy"), ("Milk", "Dairy"), ("Yoghurt", "Dairy"), ("Coffee", "Pantry"), ("Flour", "Pantry"),
        ("Honey", "Pantry"), ("Olive oil", "Pantry"), ("Rice", "Pantry"), ("Salt", "Pantry"), ("Sugar", "Pantry"),
        ("Tea", "Pantry"), ("Crème fraîche", "Dairy"), ("Żurek", "Pantry"),
    ]
}
