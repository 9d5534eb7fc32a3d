import ArgumentParser
import Foundation
import Strata

/// `strata demo`: the classic Core Data tutorial, end to end on a real store.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Create a store, insert goods in categories, read them back grouped, leave a section cache.",
        discussion: """
            The store and its section cache stay on disk for the cache commands to look at: the \
            first line says where the store is, the last how to remove it. Without --path the \
            demo makes a new folder in the temporary directory ($TMPDIR, else /tmp) for them.

            Example:
              strata demo                       # a fresh temporary folder, printed
              strata demo --path /tmp/goods.sqlite
              strata cache list /tmp/goods.sqlite   # the cache the demo's list left
            """
    )

    @Option(name: .long, help: "The store file to create or reuse (default: goods.sqlite in a new temporary folder).")
    var path: String?

    func run() throws {
        let url: URL
        // What to remove afterwards: the folder the demo made, or the store, its cache folder
        // and (if an app left them) its -wal and -shm.
        let removal: String
        var madeFolder: URL?
        if let path {
            // The demo opens its store through StoreCoordinator(url:), and a URL holds only
            // UTF-8: a path of other bytes would name another file, so it is refused.
            let exact = try RawArguments.path(path).absolute
            guard let string = exact.string else {
                throw CommandFailure(.usage, "--path \(exact): the demo's store path must be UTF-8 (the cache commands take any bytes)")
            }
            url = URL(fileURLWithPath: string)
            removal = "rm -f \(Demo.quoted(string)) \(Demo.quoted(string + "-wal")) \(Demo.quoted(string + "-shm")) && rm -rf \(Demo.quoted(string + ".caches"))"
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            url = folder.appendingPathComponent("goods.sqlite")
            removal = "rm -r \(Demo.quoted(folder.path))"
            madeFolder = folder
        }
        print("store: \(url.path)")
        do {
            try demonstrate(url)
        } catch {
            // A folder the demo made and could not finish is of no use to anyone: it goes.
            if let madeFolder { try? FileManager.default.removeItem(at: madeFolder) }
            throw error
        }
        print("\nThe store and its cache stay for `strata cache list \(Demo.quoted(url.path))`; remove them with:\n  \(removal)")
    }

    /// `text` quoted for a POSIX shell: in single quotes, each `'` written as `'\''`.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private func demonstrate(_ url: URL) throws {
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

@Entity final class Category: ManagedObject {
    @Attribute(.indexed) var name: String
    @Relationship(inverse: \Good.category, deleteRule: .cascade) var goods: Set<Good> = []
}

@Entity final class Good: ManagedObject {
    @Attribute(maxLength: 80) var name: String
    @Attribute(minValue: 0) var number: Int64 = 0
    var category: Category
}

enum DemoModel {
    /// The section cache the demo leaves on its store.
    static let cacheName = "goods-by-category"

    /// The same model, and version hash, as the `Entity` values it replaced: stores made by
    /// earlier demos still open.
    static let model = try! Model(version: "demo-1", types: [Category.self, Good.self])

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
