import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Something other than a readable regular file at a cache's path: a directory, a symbolic link,
/// a FIFO, a file without permissions, a cache folder that is a file. The controller reports
/// the reason, shows what an uncached controller shows, and never hangs or crashes.
@Suite struct SectionCacheFileKindTests {
    /// The `.tmp-` files in the cache folder.
    static func temporaries(_ fixture: CacheFixture) -> [String] {
        folderContents(fixture.cacheURL.deletingLastPathComponent()).filter { $0.hasPrefix(".tmp-") }
    }

    /// A directory can't be replaced by a rename: the controller keeps working without a cache,
    /// reporting `.notAFile` at every open, until the directory goes.
    @Test func aDirectoryInPlaceIsNotAFile() throws {
        let fixture = try CacheFixture()
        try FileManager.default.removeItem(at: fixture.cacheURL)
        try FileManager.default.createDirectory(at: fixture.cacheURL, withIntermediateDirectories: false)
        try Data("keep".utf8).write(to: fixture.cacheURL.appendingPathComponent("inside"))
        for _ in 0..<2 {
            let result = try fixture.fetch()
            #expect(!result.served && result.rejection == .notAFile)
            #expect(result.snapshot == fixture.expected)
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: fixture.cacheURL.path, isDirectory: &isDirectory) && isDirectory.boolValue)
            #expect(folderContents(fixture.cacheURL) == ["inside"])
            #expect(Self.temporaries(fixture).isEmpty, "the failed write removed its temporary file")
        }
        #expect(rejection { try fixture.container.coordinator.sectionCaches!.read(named: CacheFixture.cacheName) } == .notAFile)
        try FileManager.default.removeItem(at: fixture.cacheURL)
        let rebuilt = try fixture.fetch()
        #expect(!rebuilt.served && rebuilt.rejection == .missing && rebuilt.snapshot == fixture.expected)
        #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original)
        #expect(try fixture.fetch().served)
    }

    /// A link is not followed (even to a sound cache of this store); the rebuild replaces the link
    /// itself and leaves its target alone.
    @Test func aSymlinkInPlaceIsNotAFileAndIsReplaced() throws {
        let fixture = try CacheFixture()
        let target = fixture.directory.file("elsewhere.stratacache")
        try fixture.original.write(to: target)
        for (label, destination) in [("to a sound cache", target.path), ("dangling", fixture.directory.file("nothing").path)] {
            try FileManager.default.removeItem(at: fixture.cacheURL)
            try FileManager.default.createSymbolicLink(atPath: fixture.cacheURL.path, withDestinationPath: destination)
            let result = try fixture.fetch()
            #expect(!result.served && result.rejection == .notAFile, Comment(rawValue: label))
            #expect(result.snapshot == fixture.expected)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: fixture.cacheURL.path)) == nil, "no longer a link: \(label)")
            #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original)
            #expect(try fixture.fetch().served)
        }
        #expect(try Data(contentsOf: target) == fixture.original)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.file("nothing").path))
    }

    /// Reading a FIFO would block: it is refused by its type, without opening it.
    @Test func aFIFOInPlaceIsNotAFileAndDoesNotBlock() throws {
        let fixture = try CacheFixture()
        try FileManager.default.removeItem(at: fixture.cacheURL)
        #expect(mkfifo(fixture.cacheURL.path, 0o644) == 0)
        let result = try fixture.fetch()
        #expect(!result.served && result.rejection == .notAFile && result.snapshot == fixture.expected)
        var info = stat()
        #expect(lstat(fixture.cacheURL.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "the rebuild replaced the FIFO")
        if (info.st_mode & S_IFMT) == S_IFREG {   // (reading a FIFO would block the test)
            #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original)
            #expect(try fixture.fetch().served)
        }
    }

    /// `chmod 000` makes the file unreadable, except to a process that may read anything (root,
    /// CAP_DAC_OVERRIDE): the test checks which holds by opening the file, and asserts what
    /// happens in that case. (`.unreadable` is covered regardless by the two tests below.)
    @Test func aFileWithoutPermissionsIsUnreadableAndReplaced() throws {
        let fixture = try CacheFixture()
        #expect(chmod(fixture.cacheURL.path, 0) == 0)
        let fd = open(fixture.cacheURL.path, O_RDONLY)
        let permissionsApply = fd < 0
        if fd >= 0 { close(fd) }
        let result = try fixture.fetch()
        #expect(result.snapshot == fixture.expected)
        if permissionsApply {
            #expect(!result.served && result.rejection == .unreadable)
            // The rename replaces the unreadable file: the rebuilt cache has the store's mode.
            #expect(try Data(contentsOf: fixture.cacheURL) == fixture.original)
            let mode = (try FileManager.default.attributesOfItem(atPath: fixture.cacheURL.path)[.posixPermissions] as? Int) ?? -1
            let storeMode = (try FileManager.default.attributesOfItem(atPath: fixture.url.path)[.posixPermissions] as? Int) ?? -2
            #expect(mode == storeMode)
            #expect(try fixture.fetch().served)
        } else {
            // Permissions don't stop this process: the file is sound, so it is served.
            print("SectionCacheFileKind: this process may read a mode-000 file (root?); such a cache is served")
            #expect(result.served && result.rejection == nil)
        }
    }

    /// A file system whose reads fail (EACCES, EIO): `read(named:)` reports `.unreadable`.
    @Test func aFailingReadIsUnreadable() throws {
        let fixture = try CacheFixture()
        for code in [EACCES, EIO] {
            let store = SectionCacheStore(storeURL: fixture.url, directory: fixture.cacheURL.deletingLastPathComponent(),
                                          fileSystem: FailingReads(code: code))
            #expect(rejection { try store.read(named: CacheFixture.cacheName) } == .unreadable)
            #expect(rejection { try store.read(named: "absent") } == .missing)
        }
        #expect(try fixture.container.coordinator.sectionCaches!.read(named: CacheFixture.cacheName) == fixture.original)
    }

    /// A cache folder that is a regular file: no cache can be read (`lstat` fails with ENOTDIR,
    /// reported as `.unreadable`) nor written (`.notADirectory`); the controller fetches every
    /// time, and the file is left alone.
    @Test func aCacheFolderThatIsAFileLeavesTheControllerUncached() throws {
        let fixture = try CacheFixture()
        let folder = fixture.cacheURL.deletingLastPathComponent()
        try FileManager.default.removeItem(at: folder)
        try Data("not a folder".utf8).write(to: folder)
        for _ in 0..<2 {
            let result = try fixture.fetch()
            #expect(!result.served && result.rejection == .unreadable && result.snapshot == fixture.expected)
            #expect(try Data(contentsOf: folder) == Data("not a folder".utf8))
        }
        let store = fixture.container.coordinator.sectionCaches!
        #expect(cacheError { try store.write(fixture.originalFile, named: CacheFixture.cacheName) } == .notADirectory(path: folder.path))
        #expect(cacheError { try store.cacheNames() } == .notADirectory(path: folder.path))
        try FileManager.default.removeItem(at: folder)
        let rebuilt = try fixture.fetch()
        #expect(!rebuilt.served && rebuilt.rejection == .missing)
        #expect(try fixture.fetch().served)
    }
}

/// The real file system, except that every read fails with `code`.
struct FailingReads: CacheFileSystem {
    let code: Int32
    let real = POSIXCacheFileSystem()

    func create(_ path: String, mode: mode_t) throws -> Int32 { try real.create(path, mode: mode) }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws { try real.write(fd, bytes) }
    func fsync(_ fd: Int32) throws { try real.fsync(fd) }
    func close(_ fd: Int32) { real.close(fd) }
    func rename(_ from: String, _ to: String) throws { try real.rename(from, to) }
    func fsyncDirectory(_ path: String) throws { try real.fsyncDirectory(path) }
    func remove(_ path: String) throws { try real.remove(path) }
    func read(_ path: String) throws -> Data { throw CacheFileError(operation: "open", path: path, code: code) }
}
