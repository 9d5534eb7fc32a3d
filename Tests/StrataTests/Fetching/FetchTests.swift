import Foundation
import Testing
import StrataTestSupport
@testable import Strata

@Suite struct FetchTests {
    /// Items (name, category, score) saved to the store.
    func seeded() throws -> TestStore {
        let store = try TestStore()
        try store.context.performAndWait {
            let rows: [(String, Int, Double?)] = [("pear", 2, 1.5), ("apple", 1, nil), ("Zucchini", 3, -2), ("banana", 1, 0.5),
                                                  ("école", 2, 3), ("Apple", 1, 0.5), ("cherry", 3, 2)]
            for (name, category, score) in rows {
                let item = try store.context.insert("Item")
                try item.setValue(name, forKey: "name")
                try item.setValue(category, forKey: "category")
                try item.setValue(score, forKey: "score")
            }
            try store.context.save()
        }
        return store
    }

    func names(_ objects: [ManagedObject]) throws -> [String] { try objects.map { try $0.value(forKey: "name") as! String } }

    @Test func sortsLikeSQLiteWithLimitAndOffset() throws {
        let store = try seeded()
        try store.context.performAndWait { () throws -> Void in
            let byName = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
            // BINARY collation: uppercase before lowercase, UTF-8 bytes (é after z).
            #expect(try names(store.context.fetch(byName)) == ["Apple", "Zucchini", "apple", "banana", "cherry", "pear", "école"])
            let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("category"), .descending("name")], fetchLimit: 3, fetchOffset: 1)
            #expect(try names(store.context.fetch(request)) == ["apple", "Apple", "école"])
            #expect(try store.context.count(for: request) == 3)
            #expect(try store.context.count(for: FetchRequest(entityName: "Item", fetchOffset: 5)) == 2)
            let byScore = FetchRequest(entityName: "Item", sortKeys: [.ascending("score"), .ascending("name")])
            #expect(try names(store.context.fetch(byScore)) == ["apple", "Zucchini", "Apple", "banana", "pear", "cherry", "école"])
            #expect(try store.context.fetchObjectIDs(byScore).count == 7)
        }
    }

    @Test func pendingChangesAreIncludedAndSortedTheSameWay() throws {
        let store = try seeded()
        try store.context.performAndWait {
            let context = store.context
            let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("score"), .ascending("name")])
            let stored = try names(context.fetch(request))
            let all = try context.fetch(request)
            try context.delete(all[0])                                  // "apple" (nil score) goes
            try all[6].setValue(-10.0, forKey: "score")                 // "école" moves to the front
            let fig = try context.insert("Item")
            try fig.setValue("fig", forKey: "name")
            try fig.setValue(9, forKey: "category")
            try fig.setValue(0.5, forKey: "score")
            let expected = ["école", "Zucchini", "Apple", "banana", "fig", "pear", "cherry"]
            #expect(try names(context.fetch(request)) == expected)
            #expect(try context.fetchObjectIDs(request).map(\.primaryKey) == context.fetch(request).map(\.objectID.primaryKey))
            #expect(try context.count(for: request) == 7)
            var window = request
            window.fetchOffset = 2
            window.fetchLimit = 2
            #expect(try names(context.fetch(window)) == ["Apple", "banana"])
            var storeOnly = request
            storeOnly.includesPendingChanges = false
            #expect(try context.fetch(storeOnly).count == 7)
            // After saving, SQL ordering gives the same list as the in-memory merge did.
            try context.save()
            context.reset()
            #expect(try names(context.fetch(request)) == expected)
            #expect(stored != expected)
        }
    }

    @Test func rollbackRestoresEveryObject() throws {
        let store = try seeded()
        try store.context.performAndWait {
            let context = store.context
            let request = FetchRequest(entityName: "Item", sortKeys: [.ascending("name")])
            let before = try names(context.fetch(request))
            let items = try context.fetch(request)
            try items[0].setValue("Changed", forKey: "name")
            try context.delete(items[1])
            let extra = try context.insert("Item")
            try extra.setValue("extra", forKey: "name")
            #expect(context.hasChanges)
            context.rollback()
            #expect(context.hasChanges == false)
            #expect(try names(context.fetch(request)) == before)
            #expect(extra.managedObjectContext == nil)
            #expect(items[1].isDeleted == false)
        }
    }

    @Test func typedSubclassesGetRealProperties() throws {
        final class Item: ManagedObject {
            var name: String {
                get { self[attribute: "name"] ?? "" }
                set { self[attribute: "name"] = newValue }
            }
            var category: Int64 {
                get { self[attribute: "category"] ?? 0 }
                set { self[attribute: "category"] = newValue }
            }
        }
        let model = try TestModels.company().withClasses(["Item": Item.self])
        let store = try TestStore(model: model)
        try store.context.performAndWait {
            let item = try store.context.insert(Item.self)
            item.name = "typed"
            item.category = 4
            try store.context.save()
            store.context.reset()
            let fetched = try store.context.fetch(FetchRequest(entityName: "Item"), as: Item.self)
            #expect(fetched.map(\.name) == ["typed"])
            #expect(fetched.map(\.category) == [4])
        }
    }
}
