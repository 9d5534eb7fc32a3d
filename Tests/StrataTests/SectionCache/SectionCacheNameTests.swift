import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Cache names and the cache folder: which names are refused, how the others map to file names
/// inside the folder and back, a symlinked folder, deleting caches and stray temporary files.
@Suite struct SectionCacheNameTests {
    /// Computed, not stored: see ``SectionCacheFaultTests/old``.
    static var file: SectionCacheFile { SectionCacheFaultTests.sample(keys: 10, generation: 1) }

    struct Folder {
        let directory = TemporaryDirectory("strata-cache-names")
        var folder: URL { directory.file("store.sqlite.caches") }
        var store: SectionCacheStore { SectionCacheStore(storeURL: directory.file("store.sqlite")) }
    }

    @Test func invalidNamesAreRefused() throws {
        let cases: [(String, String)] = [
            ("", "empty"),
            ("a\u{0}b", "contains NUL"),
            ("\u{0}", "contains NUL"),
            (String(repeating: "x", count: 201), "longer than 200 UTF-8 bytes"),
            (String(repeating: "é", count: 101), "longer than 200 UTF-8 bytes"),   // 202 bytes, 101 characters
        ]
        let folder = Folder()
        for (name, reason) in cases {
            #expect(cacheError { try SectionCacheStore.fileName(forCacheNamed: name) } == .invalidName(name, reason: reason))
            #expect(cacheError { try folder.store.url(forCacheNamed: name) } == .invalidName(name, reason: reason))
            #expect(cacheError { try folder.store.write(Self.file, named: name) } == .invalidName(name, reason: reason))
            #expect(cacheError { try folder.store.deleteCache(named: name) } == .invalidName(name, reason: reason))
            #expect(rejection { try folder.store.read(named: name) } == .missing)
        }
        #expect(!FileManager.default.fileExists(atPath: folder.folder.path), "nothing refused created the folder")
        // The limit is on bytes: 200 of them pass.
        #expect(try SectionCacheStore.fileName(forCacheNamed: String(repeating: "x", count: 200)) == String(repeating: "x", count: 200) + ".stratacache")
        // …and the encoded file name must fit NAME_MAX with the temporary prefix.
        if case .invalidName? = cacheError({ try SectionCacheStore.fileName(forCacheNamed: String(repeating: "é", count: 100)) }) {} else {
            Issue.record("100 × é (600 bytes encoded) should be refused")
        }
    }

    static let awkwardNames = [
        "goods", "a/b", "../escape", "../../etc/passwd", "..", ".", ".hidden", "with space", "tab\there", "new\nline",
        "back\\slash", "naïve", "日本語", "🎉 party", "%2F", "100%", "a.b.c", "-_AZaz09", "UPPER", "upper", "x.stratacache",
        ".tmp-looks-temporary", String(repeating: "y", count: 200),
    ]

    @Test func awkwardNamesRoundTripAndStayInsideTheFolder() throws {
        let folder = Folder()
        let outside = folderContents(folder.directory.url)
        var fileNames = Set<String>()
        for name in Self.awkwardNames {
            let fileName = try SectionCacheStore.fileName(forCacheNamed: name)
            #expect(fileName.hasSuffix(".stratacache") && !fileName.hasPrefix(".") && !fileName.contains("/"), "\(name.debugDescription)")
            #expect(fileName.utf8.dropLast(12).allSatisfy { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
            #expect(fileName.utf8.count <= 255, "a file name the file system takes: \(name.debugDescription)")
            #expect(SectionCacheStore.cacheName(fromFileName: fileName) == name)
            let url = try folder.store.url(forCacheNamed: name)
            #expect(url.deletingLastPathComponent().standardizedFileURL.path == folder.folder.standardizedFileURL.path)
            #expect(url.lastPathComponent == fileName)
            fileNames.insert(fileName)
            try folder.store.write(Self.file, named: name)
            #expect(try folder.store.read(named: name) == Self.file.encoded())
        }
        #expect(fileNames.count == Self.awkwardNames.count, "distinct names, distinct files")
        #expect(folderContents(folder.folder) == fileNames.sorted())
        #expect(try folder.store.cacheNames() == Self.awkwardNames.sorted())
        #expect(folderContents(folder.directory.url) == (outside + ["store.sqlite.caches"]).sorted(), "nothing written beside the folder")
    }

    /// A name of up to 200 UTF-8 bytes is valid, but percent-encoding triples every byte that is
    /// not a letter, digit, `-` or `_`, and the write first creates `.tmp-XXXXXXXX-<file name>`:
    /// with NAME_MAX = 255 the encoded name can have at most 255 − 14 − 12 = 229 bytes, so 77 such
    /// bytes (231) already fail with ENAMETOOLONG, and 100 × "é" (600) is far past it.
    @Test func everyValidNameCanBeWritten() throws {
        let folder = Folder()
        #expect(try SectionCacheStore.fileName(forCacheNamed: String(repeating: "/", count: 76)).utf8.count == 240)
        try folder.store.write(Self.file, named: String(repeating: "/", count: 76))
        #expect(try folder.store.read(named: String(repeating: "/", count: 76)) == Self.file.encoded())
        // Names whose file name (with the temporary prefix) would pass NAME_MAX are refused up front.
        for name in [String(repeating: "/", count: 77), String(repeating: "日", count: 30), String(repeating: "é", count: 100)] {
            guard case .invalidName? = cacheError({ try SectionCacheStore.fileName(forCacheNamed: name) }) else {
                Issue.record("\(name.prefix(8))… should be refused as too long once encoded")
                continue
            }
        }
    }

    @Test func fileNamesThatAreNotCachesAreIgnored() throws {
        for fileName in ["goods.txt", "goods", ".stratacache", ".tmp-0A1B2C3D-goods.stratacache", ".hidden.stratacache",
                         "%zz.stratacache", "%4.stratacache", "abc%.stratacache", "%C3.stratacache", "%FF%FE.stratacache"] {
            #expect(SectionCacheStore.cacheName(fromFileName: fileName) == nil, "\(fileName)")
        }
        #expect(SectionCacheStore.cacheName(fromFileName: "%C3%A9.stratacache") == "é")
    }

    /// Spellings `fileName(forCacheNamed:)` never makes (lower-case hex, raw bytes that should be
    /// encoded) are not caches: not listed, not removed.
    @Test func aForeignSpellingIsNotACache() throws {
        let folder = Folder()
        try FileManager.default.createDirectory(at: folder.folder, withIntermediateDirectories: false)
        try Data().write(to: folder.folder.appendingPathComponent("a%2fb.stratacache"))
        try Data().write(to: folder.folder.appendingPathComponent("c d.stratacache"))
        #expect(try folder.store.cacheNames() == [])
        #expect(try folder.store.deleteAllCaches() == [])
        #expect(folderContents(folder.folder) == ["a%2fb.stratacache", "c d.stratacache"])
    }

    @Test func aSymlinkedCacheFolderIsRefused() throws {
        let folder = Folder()
        let real = folder.directory.file("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(at: folder.folder, withDestinationURL: real)
        let path = folder.folder.path
        #expect(cacheError { try folder.store.write(Self.file, named: "goods") } == .directoryIsSymlink(path: path))
        #expect(cacheError { try folder.store.write(Self.file.encoded(), named: "goods") } == .directoryIsSymlink(path: path))
        #expect(cacheError { try folder.store.cacheNames() } == .directoryIsSymlink(path: path))
        #expect(cacheError { try folder.store.deleteCache(named: "goods") } == .directoryIsSymlink(path: path))
        #expect(cacheError { try folder.store.deleteAllCaches() } == .directoryIsSymlink(path: path))
        #expect(folderContents(real).isEmpty, "nothing written through the link")
        try Data().write(to: real.appendingPathComponent(".tmp-1234-goods.stratacache"))
        #expect(folder.store.removeTemporaryFiles() == 0)
        #expect(folderContents(real) == [".tmp-1234-goods.stratacache"])
        // Reading does not follow the link either.
        try Self.file.encoded().write(to: real.appendingPathComponent("goods.stratacache"))
        #expect(rejection { try folder.store.read(named: "goods") } == .unreadable)
        // A folder that is a file is refused as such.
        let file = Folder()
        try Data().write(to: file.folder)
        #expect(cacheError { try file.store.write(Self.file, named: "goods") } == .notADirectory(path: file.folder.path))
    }

    /// The cache folder is created with the permissions of the folder holding the store (less
    /// the umask); cache files get the store file's bits.
    @Test func theCacheFolderTakesTheStoreFoldersPermissions() throws {
        let folder = Folder()
        #expect(chmod(folder.directory.url.path, 0o711) == 0)
        try folder.store.write(Self.file, named: "goods")
        let mode = (try FileManager.default.attributesOfItem(atPath: folder.folder.path)[.posixPermissions] as? Int) ?? -1
        #expect(mode == 0o711)
    }

    @Test func deletingRemovesWhatItSaysAndReportsIt() throws {
        let folder = Folder()
        // No folder: nothing to delete, and nothing is created.
        #expect(try folder.store.deleteCache(named: "goods") == false)
        #expect(try folder.store.deleteAllCaches() == [])
        #expect(try folder.store.cacheNames() == [])
        #expect(folder.store.removeTemporaryFiles() == 0)
        #expect(!FileManager.default.fileExists(atPath: folder.folder.path))

        for name in ["b", "a", "c/d", "é"] { try folder.store.write(Self.file, named: name) }
        try Data("x".utf8).write(to: folder.folder.appendingPathComponent("notes.txt"))
        try Data("x".utf8).write(to: folder.folder.appendingPathComponent(".tmp-0000-a.stratacache"))
        try FileManager.default.createDirectory(at: folder.folder.appendingPathComponent("sub"), withIntermediateDirectories: false)
        #expect(try folder.store.cacheNames() == ["a", "b", "c/d", "é"])

        #expect(try folder.store.deleteCache(named: "a") == true)
        #expect(try folder.store.deleteCache(named: "a") == false)
        #expect(try folder.store.deleteCache(named: "never") == false)
        #expect(rejection { try folder.store.read(named: "a") } == .missing)
        #expect(try folder.store.read(named: "b") == Self.file.encoded())
        #expect(folderContents(folder.folder) == [".tmp-0000-a.stratacache", "b.stratacache", "c%2Fd.stratacache", "notes.txt", "sub", "%C3%A9.stratacache"].sorted())

        #expect(try folder.store.deleteAllCaches() == ["b", "c/d", "é"])
        #expect(folderContents(folder.folder) == ["notes.txt", "sub"], "the caches and the temporary file went, nothing else")
        #expect(try folder.store.deleteAllCaches() == [])
    }

    @Test func strayTemporaryFilesAreRemoved() throws {
        let folder = Folder()
        try folder.store.write(Self.file, named: "goods")
        let stray = [".tmp-0A1B2C3D-goods.stratacache", ".tmp-", ".tmp-whatever"]
        for name in stray { try Data("torn".utf8).write(to: folder.folder.appendingPathComponent(name)) }
        try Data("keep".utf8).write(to: folder.folder.appendingPathComponent("tmp-no-dot.stratacache"))
        try Data("keep".utf8).write(to: folder.folder.appendingPathComponent(".tmpfile"))
        #expect(folder.store.removeTemporaryFiles() == 3)
        #expect(folderContents(folder.folder) == [".tmpfile", "goods.stratacache", "tmp-no-dot.stratacache"])
        #expect(folder.store.removeTemporaryFiles() == 0)
    }

    /// A coordinator (here a second one on the fixture's store) removes stray temporary files the
    /// first time a controller uses the caches; deleting through the coordinator makes the next
    /// open rebuild.
    @Test func theCoordinatorCleansUpAndDeletes() throws {
        let fixture = try CacheFixture()
        let folder = fixture.cacheURL.deletingLastPathComponent()
        try Data("torn".utf8).write(to: folder.appendingPathComponent(".tmp-DEADBEEF-goods.stratacache"))
        let container = try PersistentContainer(model: TestModels.goods(), url: fixture.url)
        defer { container.coordinator.close() }
        #expect(folderContents(folder).count == 2, "nothing removed before a controller uses the caches")
        let warm = try CacheFixture.fetch(container, fixture.request, sectionKeyPath: fixture.sectionKeyPath, cacheName: CacheFixture.cacheName)
        #expect(warm.served)
        #expect(folderContents(folder) == ["goods.stratacache"])

        #expect(try container.coordinator.deleteCache(named: CacheFixture.cacheName) == true)
        #expect(try container.coordinator.deleteCache(named: CacheFixture.cacheName) == false)
        let cold = try CacheFixture.fetch(container, fixture.request, sectionKeyPath: fixture.sectionKeyPath, cacheName: CacheFixture.cacheName)
        #expect(!cold.served && cold.rejection == .missing && cold.snapshot == fixture.expected)
        #expect(try container.coordinator.deleteAllCaches() == [CacheFixture.cacheName])
        #expect(folderContents(folder).isEmpty)
        #expect(try container.coordinator.deleteAllCaches() == [])
    }
}
