import Foundation
import Testing
import Strata
import StrataTestSupport

@Entity final class Shelf: ManagedObject {
    @Attribute(.indexed) var title: String
    @Relationship(inverse: \Volume.shelf) var volumes: Set<Volume> = []
}

@Entity final class Volume: ManagedObject {
    var title: String
    var pages: Int = 0
    var shelf: Shelf?
}

/// Stores that can only be read: on a read-only mount, or a file and folder this user may not
/// write. Opened with `StoreOptions.readOnly`, every read works and every write is refused at
/// `save()` with `StoreError.readOnly`, the context keeping its changes; opened without it, the
/// error says what is wrong and how to read the store. Root mounts a real read-only bind mount;
/// another user gets mode 444 in a folder of mode 555.
@Suite struct ReadOnlyStoreTests {
    static func model() throws -> Model { try Model(version: "1", types: [Shelf.self, Volume.self]) }

    /// A store of 3 shelves and 30 volumes, closed (no `-wal` left), in its own folder.
    static func makeStore(in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("library.sqlite")
        let container = try PersistentContainer(model: try model(), url: url)
        let main = container.mainContext
        try main.performAndWait {
            for s in 0..<3 {
                let shelf = try main.insert(Shelf.self)
                shelf.title = "Shelf \(s)"
                for v in 0..<10 {
                    let volume = try main.insert(Volume.self)
                    volume.title = "Volume \(s)-\(v)"
                    volume.pages = 100 * s + v
                    volume.shelf = shelf
                }
            }
            try main.saveToStore()
        }
        container.coordinator.close()
        return url
    }

    /// A folder holding the store that this process can't write: a read-only bind mount (root),
    /// or the same folder with modes 555/444 (another user). Returns the store's URL there.
    final class ReadOnlyPlace {
        let source = TemporaryDirectory("strata-read-only")
        private(set) var mount: ReadOnlyMount?
        let store: URL
        let how: String

        init() throws {
            let original = try ReadOnlyStoreTests.makeStore(in: source.url)
            if ReadOnlyMount.isPossible {
                let mount = try ReadOnlyMount.make(of: source.url)
                self.mount = mount
                store = mount.url.appendingPathComponent(original.lastPathComponent)
                how = "read-only bind mount"
            } else {
                #expect(chmod(original.path, 0o444) == 0)
                #expect(chmod(source.url.path, 0o555) == 0)
                store = original
                how = "mode 444 in a folder of mode 555"
            }
        }

        deinit {
            mount?.unmount()
            chmod(source.url.path, 0o755)
        }

        /// The folder's names and bytes, to show that nothing was created or changed.
        func snapshot() throws -> [String: Data] {
            let folder = store.deletingLastPathComponent()
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                let url = folder.appendingPathComponent(name)
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
                files[name] = isDirectory.boolValue ? Data() : try Data(contentsOf: url)
            }
            return files
        }
    }

    static var readOnly: StoreOptions {
        var options = StoreOptions()
        options.readOnly = true
        return options
    }

    @Test func aStoreThatCannotBeWrittenIsReadWithReadOnly() throws {
        let place = try ReadOnlyPlace()
        let before = try place.snapshot()
        let container = try PersistentContainer(model: try Self.model(), url: place.store, options: Self.readOnly)
        #expect(container.coordinator.isReadOnly, "\(place.how)")
        let main = container.mainContext
        try main.performAndWait {
            // Fetches, counts, faults, relationships and a sectioned controller, as on any store.
            let thick = FetchRequest<Volume>(predicate: #Predicate { $0.pages >= 200 }, sortBy: [SortDescriptor(\.title)])
            let volumes = try main.fetch(thick)
            #expect(volumes.map(\.title) == (0..<10).map { "Volume 2-\($0)" })
            #expect(volumes.first?.shelf?.title == "Shelf 2")
            #expect(try main.count(for: FetchRequest<Volume>()) == 30)
            let shelves = try main.fetch(FetchRequest<Shelf>(sortBy: [SortDescriptor(\.title)]))
            #expect(shelves.map { $0.volumes.count } == [10, 10, 10])
            let controller = try FetchedResultsController(FetchRequest<Volume>(sortBy: [SortDescriptor(\.shelf?.title), SortDescriptor(\.title)]),
                                                          context: main, sectionBy: \.shelf?.title, cacheName: "by-shelf")
            try controller.performFetch()
            #expect(controller.sections?.map(\.numberOfObjects) == [10, 10, 10])
            // Its section cache can't be written here: the controller works without it.
            container.coordinator.waitForCacheWrites()

            // A change is made in memory; the save is refused at save(), and nothing is lost.
            let extra = try main.insert(Volume.self)
            extra.title = "Not saved"
            volumes[0].pages = 1
            #expect(throws: StoreError.self) { try main.save() }
            do {
                try main.saveToStore()
                Issue.record("saveToStore() on a read-only store returned")
            } catch let StoreError.readOnly(path, reason) {
                #expect(path == place.store.path)
                #expect(reason.contains("StoreOptions.readOnly"), "\(reason)")
            }
            #expect(main.hasChanges && extra.isInserted && volumes[0].pages == 1)
            main.rollback()
            #expect(!main.hasChanges && volumes[0].pages == 200)
        }
        // Batch requests are writes too; an update context's saveToStore the same.
        #expect(throws: StoreError.self) {
            try container.coordinator.execute(BatchDeleteRequest(Volume.self, predicate: #Predicate { $0.pages < 5 }))
        }
        let update = container.newUpdateContext()
        try update.performAndWait {
            let shelf = try update.insert(Shelf.self)
            shelf.title = "New"
            #expect(throws: StoreError.self) { try update.saveToStore() }
            #expect(update.hasChanges)
        }
        container.coordinator.close()
        #expect(try place.snapshot() == before, "the folder is exactly as it was (\(place.how))")
    }

    @Test func withoutReadOnlyTheErrorSaysWhatToDo() throws {
        let place = try ReadOnlyPlace()
        let before = try place.snapshot()
        do {
            _ = try PersistentContainer(model: try Self.model(), url: place.store)
            Issue.record("a store that can't be written opened for writing (\(place.how))")
        } catch let StoreError.readOnly(path, reason) {
            #expect(path == place.store.path)
            #expect(reason.contains("StoreOptions.readOnly = true"), "\(reason)")
            #expect(reason.contains(ReadOnlyMount.isPossible ? "read-only file system" : "may not write"), "\(reason)")
        }
        #expect(try place.snapshot() == before)
    }

    @Test func readOnlyNeverCreatesAStore() throws {
        let folder = TemporaryDirectory("strata-read-only-missing")
        let url = folder.url.appendingPathComponent("none.sqlite")
        #expect(throws: StoreError.self) { _ = try StoreCoordinator(model: try Self.model(), url: url, options: Self.readOnly) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    /// Where the store can be written, read-only is an ordinary reader: it shares the WAL index,
    /// so another coordinator's commits reach it, by themselves; and it writes nothing itself.
    @Test func aReadOnlyCoordinatorBesideAWriterSeesItsCommits() throws {
        let folder = TemporaryDirectory("strata-read-only-live")
        let url = try Self.makeStore(in: folder.url)
        let writer = try PersistentContainer(model: try Self.model(), url: url)
        var following = Self.readOnly
        following.history.followsOtherConnections = true
        let reader = try PersistentContainer(model: try Self.model(), url: url, options: following)
        let count = { try reader.mainContext.performAndWait { try reader.mainContext.count(for: FetchRequest<Volume>()) } }
        #expect(try count() == 30)
        try writer.mainContext.performAndWait {
            let volume = try writer.mainContext.insert(Volume.self)
            volume.title = "Fresh"
            try writer.mainContext.saveToStore()
        }
        // It follows the file by itself (no processExternalChanges() call), from the history.
        let deadline = Date().addingTimeInterval(10)
        while reader.coordinator.externalChangeStatistics.transactionsMerged < 1, Date() < deadline { usleep(1000) }
        #expect(reader.coordinator.externalChangeStatistics.transactionsMerged == 1)
        #expect(try reader.coordinator.processExternalChanges().isEmpty)
        reader.waitForPendingMerges()
        #expect(try count() == 31)
        reader.coordinator.close()
        writer.coordinator.close()
    }

    /// A `-wal` with commits on a read-only mount can't be read without writing its index: a
    /// typed error that says so, never the file without those commits.
    @Test(.enabled(if: ReadOnlyMount.isPossible, "needs root to mount; the CLI tests cover an unprivileged user"))
    func aLeftWalOnAReadOnlyMountIsATypedErrorNeverOldData() throws {
        let live = TemporaryDirectory("strata-read-only-wal-live")
        let url = try Self.makeStore(in: live.url)
        let writer = try PersistentContainer(model: try Self.model(), url: url)
        try writer.mainContext.performAndWait {
            let volume = try writer.mainContext.insert(Volume.self)
            volume.title = "Only in the log"
            try writer.mainContext.saveToStore()
        }
        // The files as a crash would leave them: the database file and a -wal with the commit.
        let copy = TemporaryDirectory("strata-read-only-wal")
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.url.appendingPathComponent("library.sqlite").path + suffix)
        }
        writer.coordinator.close()
        #expect((try FileManager.default.attributesOfItem(atPath: copy.url.path + "/library.sqlite-wal")[.size] as? Int ?? 0) > 0)
        let mount = try ReadOnlyMount.make(of: copy.url)
        defer { mount.unmount() }
        do {
            let reader = try PersistentContainer(model: try Self.model(), url: mount.url.appendingPathComponent("library.sqlite"),
                                                 options: Self.readOnly)
            // Had it opened, it must have the commit.
            let count = try reader.mainContext.performAndWait { try reader.mainContext.count(for: FetchRequest<Volume>()) }
            #expect(count == 31)
            reader.coordinator.close()
        } catch let StoreError.readOnly(_, reason) {
            #expect(reason.contains("-wal"), "\(reason)")
        }
    }
}
