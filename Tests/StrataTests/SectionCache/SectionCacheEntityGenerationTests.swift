import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// A cache is stamped with the generation and nonce of the last commit to each entity its
/// request reads: writes to other entities leave it valid, writes to those make it stale, and a
/// lost commit's reused generation is told apart by its nonce.
@Suite struct SectionCacheEntityGenerationTests {
    /// Runs `body` on the writer and saves it (a commit); returns the entities it touched.
    static func write(_ container: PersistentContainer, _ body: (ManagedObjectContext) throws -> Void) throws -> Set<String> {
        let writer = container.writerContext
        let result = try writer.performAndWait {
            try body(writer)
            return try writer.save()
        }
        container.waitForPendingMerges()
        return result?.touchedEntities ?? []
    }

    static func firstGood(_ context: ManagedObjectContext) throws -> ManagedObject {
        try context.fetch(FetchRequest(entityName: "Good", sortKeys: [.ascending("name")], fetchLimit: 1))[0]
    }

    static func category(named name: String, _ context: ManagedObjectContext) throws -> ManagedObject {
        try context.fetch(FetchRequest(entityName: "Category", predicate: try Condition("name == '\(name)'")))[0]
    }

    @Test func aWriteToAnEntityTheRequestDoesNotReadLeavesTheCacheValid() throws {
        // Good by name, one section: reads Good only.
        let fixture = try CacheFixture(request: CacheFixture.byNameRequest, sectionKeyPath: nil)
        #expect(Set(fixture.originalFile.stamp.entities.keys) == ["Good"])
        let coordinator = fixture.container.coordinator
        let before = try coordinator.metadata()

        // A new category without goods.
        #expect(try Self.write(fixture.container) { writer in
            try writer.insert("Category").setValue("Empty shelf", forKey: "name")
        } == ["Category"])
        // A category with goods renamed.
        #expect(try Self.write(fixture.container) { writer in
            try Self.category(named: "Fruit", writer).setValue("Fresh fruit", forKey: "name")
        } == ["Category"])
        let after = try coordinator.metadata()
        #expect(after.generation == before.generation + 2)
        #expect(after.entityGenerations["Good"] == before.entityGenerations["Good"] && after.entityNonces["Good"] == before.entityNonces["Good"])
        #expect(after.entityGenerations["Category"] == after.generation)
        // The file's global generation is now behind the store's; it is still served.
        #expect(fixture.originalFile.stamp.generation == before.generation)
        let warm = try fixture.fetch()
        #expect(warm.served && warm.rejection == nil)
        let uncached = try fixture.fetch(cached: false)
        #expect(warm.snapshot == fixture.expected && uncached.snapshot == fixture.expected)
        #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original, "a served cache is not rewritten")

        // The reverse: any write to a Good makes it stale, even one that moves no row.
        #expect(try Self.write(fixture.container) { writer in
            try Self.firstGood(writer).setValue(Int64(-1), forKey: "number")
        } == ["Good"])
        let stale = try fixture.fetch()
        #expect(!stale.served && stale.rejection == .entityChanged && stale.snapshot == fixture.expected)
        #expect(try fixture.fetch().served)

        #expect(try Self.write(fixture.container) { writer in
            try writer.insert("Good").setValue("aaa first by name", forKey: "name")
        } == ["Good"])
        let grown = try fixture.fetch()
        #expect(!grown.served && grown.rejection == .entityChanged)
        #expect(grown.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
        let grownUncached = try fixture.fetch(cached: false)
        #expect(grown.snapshot == grownUncached.snapshot)
        let again = try fixture.fetch()
        #expect(again.served && again.snapshot == grown.snapshot)
    }

    /// Sectioned by `category.name`, the request reads Category too: a new empty category,
    /// which changes no row of the result, makes it stale.
    @Test func aSectionedRequestReadsTheSectionEntity() throws {
        let fixture = try CacheFixture()
        #expect(Set(fixture.originalFile.stamp.entities.keys) == ["Good", "Category"])
        #expect(try Self.write(fixture.container) { writer in
            try writer.insert("Category").setValue("Empty shelf", forKey: "name")
        } == ["Category"])
        let stale = try fixture.fetch()
        #expect(!stale.served && stale.rejection == .entityChanged && stale.snapshot == fixture.expected)
        #expect(try fixture.fetch().served)
    }

    /// A predicate through a relationship reads the related entity.
    @Test func aPredicateThroughARelationshipReadsTheRelatedEntity() throws {
        let request = FetchRequest(entityName: "Good", predicate: try Condition("category.name BEGINSWITH 'F'"), sortKeys: [.ascending("name")])
        let fixture = try CacheFixture(request: request, sectionKeyPath: nil)
        #expect(Set(fixture.originalFile.stamp.entities.keys) == ["Good", "Category"])
        #expect(fixture.expected.numberOfObjects > 0)
        #expect(try Self.write(fixture.container) { writer in
            try Self.category(named: "Fruit", writer).setValue("Apples and pears", forKey: "name")
        } == ["Category"])
        let stale = try fixture.fetch()
        #expect(!stale.served && stale.rejection == .entityChanged)
        let uncached = try fixture.fetch(cached: false)
        #expect(stale.snapshot == uncached.snapshot)
        #expect(stale.snapshot.numberOfObjects < fixture.expected.numberOfObjects)
    }

    /// A commit lost to a power failure, then another commit: the store's generations are the
    /// lost commit's again, but its nonces are not, so a cache written after the lost commit is
    /// stale (modelled by restoring a copy of the store file taken before the lost commit).
    @Test func aLostCommitsReusedGenerationIsToldApartByItsNonce() throws {
        let directory = TemporaryDirectory("strata-cache-lost-commit")
        let url = directory.file("goods.sqlite")
        let backup = directory.file("backup")
        try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: false)
        do {
            let container = try PersistentContainer(model: TestModels.goods(), url: url)
            try CacheFixture.seed(container)
            container.coordinator.close()
        }
        let storeFiles = ["goods.sqlite", "goods.sqlite-wal", "goods.sqlite-shm"]
        for name in storeFiles where FileManager.default.fileExists(atPath: directory.file(name).path) {
            try FileManager.default.copyItem(at: directory.file(name), to: backup.appendingPathComponent(name))
        }
        // The commit to be lost, and a cache written after it.
        let lost: SectionCacheStamp.EntityStamp
        do {
            let container = try PersistentContainer(model: TestModels.goods(), url: url)
            defer { container.coordinator.close() }
            _ = try Self.write(container) { try $0.insert("Good").setValue("lost", forKey: "name") }
            let cold = try CacheFixture.fetch(container, CacheFixture.byNameRequest, sectionKeyPath: nil, cacheName: "byName")
            #expect(cold.rejection == .missing && cold.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
            let file = try SectionCacheFile.decode(try container.coordinator.sectionCaches!.read(named: "byName"))
            lost = file.stamp.entities["Good"]!
        }
        // Power loss: the store is back as before the commit; the cache folder is not.
        for name in storeFiles {
            try? FileManager.default.removeItem(at: directory.file(name))
            if FileManager.default.fileExists(atPath: backup.appendingPathComponent(name).path) {
                try FileManager.default.copyItem(at: backup.appendingPathComponent(name), to: directory.file(name))
            }
        }
        let container = try PersistentContainer(model: TestModels.goods(), url: url)
        defer { container.coordinator.close() }
        _ = try Self.write(container) { try $0.insert("Good").setValue("kept", forKey: "name") }
        let metadata = try container.coordinator.metadata()
        #expect(metadata.entityGenerations["Good"] == lost.generation, "the generation is reused")
        #expect(metadata.entityNonces["Good"] != lost.nonce, "the nonce is not")
        let result = try CacheFixture.fetch(container, CacheFixture.byNameRequest, sectionKeyPath: nil, cacheName: "byName")
        #expect(!result.served && result.rejection == .entityChanged)
        let uncached = try CacheFixture.fetch(container, CacheFixture.byNameRequest, sectionKeyPath: nil, cacheName: nil)
        #expect(result.snapshot == uncached.snapshot && result.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
        let names = try container.mainContext.performAndWait {
            try container.mainContext.fetch(FetchRequest(entityName: "Good")).compactMap { try $0.value(forKey: "name") as? String }
        }
        #expect(names.contains("kept") && !names.contains("lost"))
    }

    /// Replacing the store's content gives it a new UUID: every cache of it is another store's.
    @Test func aReplacedStoreIsAnotherStore() throws {
        let fixture = try CacheFixture()
        let copy = fixture.directory.file("copy.sqlite")
        do {
            let other = try PersistentContainer(model: TestModels.goods(), url: copy)
            try CacheFixture.seed(other)
            other.coordinator.close()
        }
        try fixture.container.coordinator.replaceStore(withContentsOf: copy)
        fixture.container.waitForPendingMerges()
        let result = try fixture.fetch()
        #expect(!result.served && result.rejection == .otherStore)
        let uncached = try fixture.fetch(cached: false)
        #expect(result.snapshot == uncached.snapshot)
        #expect(try fixture.fetch().served)
    }
}
