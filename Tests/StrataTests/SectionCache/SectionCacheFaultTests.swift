import Foundation
import Testing
import StrataSQLite
import StrataTestSupport
@_spi(Testing) @testable import Strata

/// Injected I/O faults and simulated power loss during cache writes
/// (`SectionCacheStore` over `FaultInjectingFileSystem`): a failed write throws
/// `SectionCacheError.io`, leaves no temporary file, and never leaves a torn file at the final
/// path nor one that decodes to content nobody wrote. The store's saves are unaffected.
@Suite struct SectionCacheFaultTests {
    static let name = "goods"

    /// A small cache file: `keys` IDs in three sections, stamped with `generation`.
    static func sample(keys: Int, generation: Int64) -> SectionCacheFile {
        let stamp = SectionCacheStamp(storeUUID: UUID(uuidString: "6A1B7C4E-0D1F-4C9A-9E22-3F5B8D2C1A00")!, generation: generation,
                                      nonce: Data(repeating: UInt8(truncatingIfNeeded: generation), count: 16), modelHash: "model",
                                      entities: ["Good": .init(generation: generation, nonce: Data(repeating: 1, count: 16))])
        let request = CanonicalRequest(FetchRequest(entityName: "Good", sortKeys: [.ascending("number")]), sectionKeyPath: "number")
        let sections = (0..<3).map { SectionCacheSection(value: .integer(Int64($0)), name: "\($0)", indexTitle: "\($0)",
                                                          count: keys / 3 + ($0 < keys % 3 ? 1 : 0)) }
        return SectionCacheFile(stamp: stamp, request: request, sections: sections, keys: (0..<keys).map { Int64($0 * 7 + 1) })
    }

    // Computed, not stored: a `static let` lives to the exit, and LeakSanitizer (CI runs these
    // suites under AddressSanitizer) reports the `Data` inside it as leaked, since it cannot follow
    // the tagged pointers Swift stores enum cases in.
    static var old: SectionCacheFile { sample(keys: 300, generation: 4) }
    static var new: SectionCacheFile { sample(keys: 2_000, generation: 5) }

    /// A cache folder in a temporary directory, with a store (POSIX) and a fault-injecting one.
    struct Folder {
        let directory = TemporaryDirectory("strata-cache-faults")
        var folder: URL { directory.file("caches") }
        var storeURL: URL { directory.file("store.sqlite") }
        var plain: SectionCacheStore { SectionCacheStore(storeURL: storeURL, directory: folder) }
        func faulty(_ fileSystem: FaultInjectingFileSystem) -> SectionCacheStore {
            SectionCacheStore(storeURL: storeURL, directory: folder, fileSystem: fileSystem)
        }
        var temporaries: [String] { folderContents(folder).filter { $0.hasPrefix(".tmp-") } }

        /// What the final path holds: "missing", "old", "new", or a description of anything else.
        var survivor: String {
            do throws(SectionCacheRejection) {
                let file = try SectionCacheFile.decode(try plain.read(named: SectionCacheFaultTests.name))
                return file == SectionCacheFaultTests.old ? "old" : file == SectionCacheFaultTests.new ? "new" : "OTHER CONTENT"
            } catch {
                return error == .missing ? "missing" : "rejected: \(error)"
            }
        }
    }

    static let faults: [(FaultInjectingFileSystem.Fault, operation: String, code: Int32)] = [
        (.shortWrite(call: 0), "write", EIO),
        (.shortWrite(call: 1), "write", EIO),
        (.writeError(call: 0, errno: EIO), "write", EIO),
        (.writeError(call: 1, errno: EIO), "write", EIO),
        (.writeError(call: 0, errno: ENOSPC), "write", ENOSPC),
        (.writeError(call: 1, errno: ENOSPC), "write", ENOSPC),
        (.fsyncFails(errno: EIO), "fsync", EIO),
        (.renameFails(errno: EXDEV), "rename", EXDEV),
        (.renameFails(errno: EACCES), "rename", EACCES),
        (.createFails(errno: EACCES), "open", EACCES),
        (.createFails(errno: ENOSPC), "open", ENOSPC),
    ]

    @Test func aFailedWriteLeavesThePreviousCacheOrNothing() throws {
        for (fault, operation, code) in Self.faults {
            for withPrevious in [true, false] {
                let label = Comment(rawValue: "\(fault), previous cache: \(withPrevious)")
                let folder = Folder()
                if withPrevious { try folder.plain.write(Self.old, named: Self.name) }
                let fileSystem = FaultInjectingFileSystem(faults: [fault])
                let store = folder.faulty(fileSystem)
                let error = cacheError { try store.write(Self.new, named: Self.name) }
                guard case .io(let io)? = error else {
                    Issue.record("expected .io, got \(String(describing: error)): \(label)")
                    continue
                }
                #expect(io.operation == operation && io.code == code, label)
                #expect(fileSystem.fired == [fault], label)
                #expect(folder.temporaries.isEmpty, label)
                #expect(folder.survivor == (withPrevious ? "old" : "missing"), label)
                if withPrevious {
                    #expect(try folder.plain.read(named: Self.name) == Self.old.encoded(), label)
                }
                // The fault fired once: the same store writes the next time.
                try store.write(Self.new, named: Self.name)
                #expect(folder.survivor == "new" && folder.temporaries.isEmpty, label)
            }
        }
    }

    /// The folder fsync comes after the rename: when it fails the write throws, but the new
    /// file (complete and fsynced) is already at the final path. The doc comment of
    /// `SectionCacheStore.write(_:named:)` says the previous cache is "left as it was" on failure,
    /// which does not hold here; what does hold is that the final path holds a whole file.
    @Test func aFailedFolderFsyncLeavesTheNewFileInPlace() throws {
        for withPrevious in [true, false] {
            let folder = Folder()
            if withPrevious { try folder.plain.write(Self.old, named: Self.name) }
            let fileSystem = FaultInjectingFileSystem(faults: [.directoryFsyncFails(errno: EIO)])
            let error = cacheError { try folder.faulty(fileSystem).write(Self.new, named: Self.name) }
            #expect(error == .io(CacheFileError(operation: "fsync", path: folder.folder.path, code: EIO)))
            #expect(folder.temporaries.isEmpty)
            #expect(folder.survivor == "new")
        }
    }

    @Test func aPowerLossLeavesTheOldFileOrTheNewOneNeverAnotherOne() throws {
        // 1. Writes that succeed are durable: a crash after each keeps it.
        do {
            let folder = Folder()
            let fileSystem = FaultInjectingFileSystem(dropUnsynced: true)
            let store = folder.faulty(fileSystem)
            try store.write(Self.old, named: Self.name)
            fileSystem.simulateCrash()
            #expect(folder.survivor == "old")
            try store.write(Self.new, named: Self.name)
            fileSystem.simulateCrash()
            #expect(folder.survivor == "new" && folder.temporaries.isEmpty)
        }
        // 2. The folder fsync fails: before the crash the new file is in place; the crash undoes
        //    the rename, bringing back the old file (or none), and leaves the new one under its
        //    temporary name, which the next cleanup removes.
        for withPrevious in [true, false] {
            let folder = Folder()
            if withPrevious { try folder.plain.write(Self.old, named: Self.name) }
            let fileSystem = FaultInjectingFileSystem(faults: [.directoryFsyncFails(errno: EIO)], dropUnsynced: true)
            let store = folder.faulty(fileSystem)
            #expect(cacheError { try store.write(Self.new, named: Self.name) } != nil)
            #expect(folder.survivor == "new")
            fileSystem.simulateCrash()
            #expect(folder.survivor == (withPrevious ? "old" : "missing"), "previous: \(withPrevious)")
            let leftovers = folder.temporaries
            #expect(leftovers.count == 1)
            if let leftover = leftovers.first {
                let bytes = try Data(contentsOf: folder.folder.appendingPathComponent(leftover))
                #expect(try SectionCacheFile.decode(bytes) == Self.new, "the leftover is whole (it was fsynced)")
            }
            #expect(store.removeTemporaryFiles() == 1)
            #expect(folder.temporaries.isEmpty)
            #expect(folder.survivor == (withPrevious ? "old" : "missing"))
        }
        // 3. A write that fails before its rename, then a crash: the previous durable file.
        for fault in Self.faults.map(\.0) {
            let folder = Folder()
            // The faulty file system writes the previous file itself (two write calls, indices 0
            // and 1), so the fault's write index is moved past them.
            let shifted: FaultInjectingFileSystem.Fault = switch fault {
            case .shortWrite(let call): .shortWrite(call: call + 2)
            case .writeError(let call, let code): .writeError(call: call + 2, errno: code)
            default: fault
            }
            let fileSystem = FaultInjectingFileSystem(faults: [shifted], dropUnsynced: true)
            let store = folder.faulty(fileSystem)
            let firstWrite = cacheError { try store.write(Self.old, named: Self.name) }
            if case .shortWrite = fault { #expect(firstWrite == nil) }
            if case .writeError = fault { #expect(firstWrite == nil) }
            if firstWrite != nil {
                // fsync, rename and create faults fire at the first write: write the old file again.
                #expect(folder.survivor == "missing")
                try store.write(Self.old, named: Self.name)
            }
            #expect(folder.survivor == "old")
            let secondWrite = cacheError { try store.write(Self.new, named: Self.name) }
            #expect((secondWrite != nil) == (firstWrite == nil), "\(fault)")
            fileSystem.simulateCrash()
            #expect(folder.survivor == (secondWrite == nil ? "new" : "old"), "\(fault): \(folder.survivor)")
            #expect(folder.temporaries.isEmpty, "\(fault)")
            #expect(fileSystem.fired == [shifted])
        }
    }

    /// Whatever the fault, with a crash after it or not, the final path never holds anything but
    /// the old or the new file.
    @Test func noFaultAndCrashCombinationLeavesOtherContent() throws {
        let faults = Self.faults.map(\.0) + [.directoryFsyncFails(errno: EIO), .directoryFsyncFails(errno: ENOSPC)]
        var outcomes: [String: Int] = [:]
        for fault in faults {
            for crash in [false, true] {
                let folder = Folder()
                try folder.plain.write(Self.old, named: Self.name)
                let fileSystem = FaultInjectingFileSystem(faults: [fault], dropUnsynced: true)
                let store = folder.faulty(fileSystem)
                _ = cacheError { try store.write(Self.new, named: Self.name) }
                if crash { fileSystem.simulateCrash() }
                store.removeTemporaryFiles()
                outcomes[folder.survivor, default: 0] += 1
                #expect(["old", "new"].contains(folder.survivor), "\(fault), crash \(crash)")
                #expect(folder.temporaries.isEmpty)
            }
        }
        // Only the failed folder fsync without a crash leaves the new file.
        #expect(outcomes == ["old": faults.count * 2 - 2, "new": 2])
    }

    /// A cache write failing beside an open store changes nothing for the store: a save after
    /// it commits, a fresh fetch sees it, and the untouched old cache is then stale.
    @Test func aFailedCacheWriteDoesNotAffectTheStoresSaves() throws {
        let fixture = try CacheFixture()
        let folder = fixture.cacheURL.deletingLastPathComponent()
        let fileSystem = FaultInjectingFileSystem(faults: [.writeError(call: 1, errno: ENOSPC)])
        let store = SectionCacheStore(storeURL: fixture.url, directory: folder, fileSystem: fileSystem)
        var other = fixture.originalFile
        other.keys.reverse()
        #expect(cacheError { try store.write(other, named: CacheFixture.cacheName) } != nil)
        #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original)
        #expect(folderContents(folder) == ["goods.stratacache"])

        try Self.insertGood(named: "zzz after the failed write", into: fixture.container)
        let after = try fixture.fetch()
        #expect(!after.served && after.rejection == .entityChanged)
        #expect(after.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
        let uncached = try fixture.fetch(cached: false)
        #expect(after.snapshot == uncached.snapshot)
        #expect(try Self.storedGoodNames(fixture.url).contains("zzz after the failed write"))
    }

    /// The same with the controller's own write failing (a directory in the cache's place makes
    /// its rename fail).
    @Test func aControllersFailedCacheWriteDoesNotAffectTheStoresSaves() throws {
        let fixture = try CacheFixture()
        try FileManager.default.removeItem(at: fixture.cacheURL)
        try FileManager.default.createDirectory(at: fixture.cacheURL, withIntermediateDirectories: false)
        #expect(try fixture.fetch().rejection == .notAFile)
        try Self.insertGood(named: "zzz after the controller's failed write", into: fixture.container)
        let after = try fixture.fetch()
        #expect(!after.served && after.rejection == .notAFile)
        #expect(after.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
        #expect(try Self.storedGoodNames(fixture.url).contains("zzz after the controller's failed write"))
        try FileManager.default.removeItem(at: fixture.cacheURL)
        #expect(try fixture.fetch().rejection == .missing)
        let served = try fixture.fetch()
        #expect(served.served && served.snapshot.numberOfObjects == CacheFixture.goodsCount + 1)
    }

    static func insertGood(named name: String, into container: PersistentContainer) throws {
        let update = container.newUpdateContext()
        let result = try update.performAndWait {
            let good = try update.insert("Good")
            try good.setValue(name, forKey: "name")
            return try update.saveToStore()
        }
        #expect(result?.touchedEntities == ["Good"])
        container.waitForPendingMerges()
    }

    /// The names of every Good, read by a coordinator of its own.
    static func storedGoodNames(_ url: URL) throws -> Set<String> {
        let fresh = try PersistentContainer(model: TestModels.goods(), url: url)
        defer { fresh.coordinator.close() }
        let context = fresh.newBackgroundContext()
        return try context.performAndWait {
            Set(try context.fetch(FetchRequest(entityName: "Good")).map { try $0.value(forKey: "name") as? String ?? "" })
        }
    }
}
