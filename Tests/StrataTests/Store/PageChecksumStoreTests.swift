import Foundation
import StrataSQLite
import StrataTestSupport
import Testing
@testable import Strata

/// Page checksums through the library: the typed error, the default, and the rewrite that adds
/// checksums to an old store.
@Suite struct PageChecksumStoreTests {
    func makeStore(_ url: URL, checksums: Bool = true, values: ClosedRange<Int64> = 1...3_000) throws -> StoreMetadata {
        var options = StoreOptions()
        options.pageChecksums = checksums
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url, options: options)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try context.performAndWait {
            for value in values {
                let number = try context.insert("Number")
                try number.setValue(value, forKey: "value")
                try number.setValue("label \(value)", forKey: "label")
            }
            try context.save()
        }
        return try coordinator.metadata()
    }

    func values(_ url: URL) throws -> [Int64] {
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Number", sortKeys: [.ascending("value")])).map { try $0.value(forKey: "value") as? Int64 ?? -1 }
        }
    }

    func header(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url).prefix(100)) }

    @Test func aNewStoreHasChecksumsAndAFlippedPageIsCorruptPageNamingIt() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        _ = try makeStore(url)
        #expect(try header(url)[20] == 8)
        var bytes = try Data(contentsOf: url)
        let pages = bytes.count / 4096
        let page = pages - 2                      // a leaf of the Number table, read by the fetch
        bytes[(page - 1) * 4096 + 2_000] ^= 0x04
        try bytes.write(to: url)
        #expect(throws: StoreError.corruptPage(path: url.path, page: page)) { _ = try values(url) }
        // The inspector's check lists the page and says corrupt.
        let report = try StoreInspector(url: url).check()
        #expect(report.checksummed && !report.isClean)
        #expect(report.badPages == [page] && report.badPageCount == 1)
    }

    @Test func aStoreMadeWithoutChecksumsKeepsWorkingAndTheRewriteAddsThem() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let before = try makeStore(url, checksums: false)
        #expect(try header(url)[20] == 0)
        #expect(try values(url) == Array(1...3_000))
        #expect(try !StoreInspector(url: url).check().checksummed)

        #expect(try StoreCoordinator.addPageChecksums(toStoreAt: url))
        #expect(try header(url)[20] == 8)
        #expect(!FileManager.default.fileExists(atPath: url.path + ".checksumming"))
        let report = try StoreInspector(url: url).check()
        #expect(report.checksummed && report.isClean && report.pages > 10)
        #expect(try values(url) == Array(1...3_000))
        // Same identity, generation and nonce: caches and object URIs stay valid.
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
        let after = try coordinator.metadata()
        coordinator.close()
        #expect(after.storeUUID == before.storeUUID && after.generation == before.generation && after.nonce == before.nonce)
        // A second call has nothing to do.
        #expect(try !StoreCoordinator.addPageChecksums(toStoreAt: url))
    }

    @Test func aCopyLeftByACrashIsDiscardedAndTheRewriteRunsAgain() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        _ = try makeStore(url, checksums: false, values: 1...100)
        try Data("half-built".utf8).write(to: URL(fileURLWithPath: url.path + ".checksumming"))
        #expect(try values(url) == Array(1...100))                 // the old store is untouched by the leftover
        #expect(try StoreCoordinator.addPageChecksums(toStoreAt: url))
        #expect(try values(url) == Array(1...100))
        #expect(try StoreInspector(url: url).check().isClean)
    }

    @Test func aStoreOpenElsewhereIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        _ = try makeStore(url, checksums: false, values: 1...100)
        let open = try StoreCoordinator(model: TestModels.numbers(), url: url)
        #expect(throws: MigrationError.storeInUse(path: url.path)) { try StoreCoordinator.addPageChecksums(toStoreAt: url) }
        open.close()
        #expect(try header(url)[20] == 0)
        #expect(!FileManager.default.fileExists(atPath: url.path + ".checksumming"))
        #expect(try values(url) == Array(1...100))
    }

    /// A transaction large enough to spill pages before its commit and then change them again
    /// has SQLite rewrite its frames' checksums at the commit, each header written alone. The
    /// shim held such a header back until its connection next used the log, so the commit's last
    /// frame was not in the file when the commit returned: a crash then (here: the files copied
    /// as they are) recovered the store without it. Fails without the flush at the wal-index's
    /// barrier (generation one short).
    @Test func aCommitWhoseChecksumsSQLiteRewroteIsInTheFileWhenItReturns() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("store.sqlite")
        var options = StoreOptions()
        options.cacheSizeKiB = 64
        let coordinator = try StoreCoordinator(model: TestModels.bookshelf(), url: url, options: options)
        defer { coordinator.close() }
        let title = String(repeating: "t", count: 200)
        for round in 0..<3 {
            let result = try coordinator.execute(BatchInsertRequest<ManagedObject>(entityName: "Book", count: 3_000) { index, row in
                try row.set("\(title) \(round) \(index)", forKey: "title")
            })
            // A crash now: the store's files as they are, without the process that holds them.
            let crashed = folder.file("crash-\(round)")
            try FileManager.default.createDirectory(at: crashed, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(atPath: url.path + suffix, toPath: crashed.appendingPathComponent("store.sqlite" + suffix).path)
            }
            let recovered = try StoreCoordinator(model: TestModels.bookshelf(), url: crashed.appendingPathComponent("store.sqlite"))
            defer { recovered.close() }
            #expect(try recovered.metadata().generation == result.generation, "round \(round)")
        }
    }

    @Test func optingOutMakesAStoreWithoutChecksums() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        _ = try makeStore(url, checksums: false, values: 1...10)
        #expect(try header(url)[20] == 0)
        #expect(StoreOptions().pageChecksums)
    }
}

/// `replaceStore(withContentsOf:)` copies pages as they are (SQLite's backup API): a backup with
/// another page-checksum setting than the live store is refused before anything changes.
@Suite struct PageChecksumReplaceTests {
    @Test(arguments: [(live: true, backup: false), (live: false, backup: true)])
    func aBackupWithTheOtherChecksumSettingIsRefusedUntouched(live: Bool, backup: Bool) throws {
        let directory = TemporaryDirectory()
        let support = PageChecksumStoreTests()
        _ = try support.makeStore(directory.file("backup.sqlite"), checksums: backup, values: 1...20_000)
        _ = try support.makeStore(directory.file("live.sqlite"), checksums: live, values: 1...10)
        var options = StoreOptions()
        options.cacheSizeKiB = 64
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("live.sqlite"), options: options)
        #expect(throws: StoreError.self) { try coordinator.replaceStore(withContentsOf: directory.file("backup.sqlite")) }
        coordinator.close()
        #expect(try support.values(directory.file("live.sqlite")) == Array(1...10))
        #expect(try StoreInspector(url: directory.file("live.sqlite")).check().isClean)
    }

    @Test func aBackupWithTheSameSettingReplacesAndChecksClean() throws {
        let directory = TemporaryDirectory()
        let support = PageChecksumStoreTests()
        _ = try support.makeStore(directory.file("backup.sqlite"), values: 1...20_000)
        _ = try support.makeStore(directory.file("live.sqlite"), values: 1...10)
        var options = StoreOptions()
        options.cacheSizeKiB = 64
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: directory.file("live.sqlite"), options: options)
        try coordinator.replaceStore(withContentsOf: directory.file("backup.sqlite"))
        coordinator.close()
        #expect(try support.values(directory.file("live.sqlite")) == Array(1...20_000))
        #expect(try StoreInspector(url: directory.file("live.sqlite")).check().isClean)
    }
}
