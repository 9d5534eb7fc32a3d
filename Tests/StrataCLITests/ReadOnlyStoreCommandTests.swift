import Foundation
import Testing
import Strata
import StrataTestSupport

/// Every `strata` command on an intact store this process may not write: on a read-only bind
/// mount (root), and as a user without write access (mode 444 in a folder of mode 555, run as
/// uid 65534 through `setpriv` when the tests run as root). The reading commands give exactly
/// the answers and statuses they give on a writable copy; the removing ones exit 77 (EX_NOPERM)
/// saying why and remove nothing; no store is ever called corrupt because it could not be opened.
@Suite struct ReadOnlyStoreCommandTests {
    /// The commands that only read, with `STORE` where the store's path goes.
    static let reading: [[String]] = [
        ["store", "info", "STORE"], ["store", "info", "STORE", "--json"], ["store", "check", "STORE"], ["store", "check", "STORE", "--json"],
        ["cache", "list", "STORE"], ["cache", "list", "STORE", "--json"], ["cache", "inspect", "STORE", "by-name"],
        ["cache", "inspect", "STORE", "by-category", "--json"], ["cache", "verify", "STORE"], ["cache", "verify", "STORE", "--json"],
    ]
    /// The commands that remove cache files (the fixture has stale and broken caches, so each has work).
    static let removing: [[String]] = [
        ["cache", "purge", "STORE", "--all"], ["cache", "purge", "STORE", "--stale"], ["cache", "purge", "STORE", "by-name"],
    ]

    static func arguments(_ command: [String], store: String) -> [String] { command.map { $0 == "STORE" ? store : $0 } }

    /// Runs every command on `readOnlyStore` (with `asNobody`) and on the writable `fixture`,
    /// and compares.
    func expectEveryCommandWorks(on readOnlyStore: String, fixture: CLIFixture, asNobody: Bool, denial: String) throws {
        let readOnlyFolder = (readOnlyStore as NSString).deletingLastPathComponent
        let before = try DirectorySnapshot(fixture.directory.url)
        for command in Self.reading {
            let expected = try CLI.run(Self.arguments(command, store: fixture.path))
            let result = try CLI.run(Self.arguments(command, store: readOnlyStore), asNobody: asNobody)
            let shown = command.joined(separator: " ")
            #expect(result.status == expected.status, "\(shown)\n\(result)\nwritable: \(expected)")
            #expect(result.output.replacingOccurrences(of: readOnlyFolder, with: fixture.directory.url.path) == expected.output,
                    "\(shown): the same answer as on a writable copy\n\(result)\nwritable: \(expected)")
            #expect(result.error.isEmpty == expected.error.isEmpty, "\(shown)\n\(result)")
            #expect(!result.output.contains("CORRUPT") && !result.error.contains("corrupt"), "\(shown)\n\(result)")
        }
        for command in Self.removing {
            let result = try CLI.run(Self.arguments(command, store: readOnlyStore), asNobody: asNobody)
            let shown = command.joined(separator: " ")
            #expect(result.status == 77, "\(shown)\n\(result)")
            #expect(result.error.contains(denial), "\(shown)\n\(result)")
        }
        #expect(try DirectorySnapshot(fixture.directory.url).hash == before.hash, "nothing was created, changed or removed")
    }

    @Test(.enabled(if: ReadOnlyMount.isPossible, "mounting needs root; the next test covers an unprivileged user"))
    func everyCommandOnAReadOnlyMount() throws {
        let fixture = try CLIFixture.withFourCaches()
        let mount = try ReadOnlyMount.make(of: fixture.directory.url)
        defer { mount.unmount() }
        let store = mount.url.appendingPathComponent(fixture.url.lastPathComponent).path
        try expectEveryCommandWorks(on: store, fixture: fixture, asNobody: false, denial: "Read-only file system")
    }

    @Test(.enabled(if: !CLI.isRoot || CLI.canDropPrivileges, "as root, needs setpriv and CAP_SETUID to drop privileges"))
    func everyCommandAsAUserWithoutWriteAccess() throws {
        let fixture = try CLIFixture.withFourCaches()
        let folder = fixture.directory.url.path
        var modes: [(String, mode_t)] = [(fixture.path, 0o444), (fixture.cacheFolder.path, 0o555), (folder, 0o555)]
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.cacheFolder.path) {
            modes.insert((fixture.cacheFolder.appendingPathComponent(name).path, 0o444), at: 0)
        }
        for (path, mode) in modes { #expect(chmod(path, mode) == 0, "chmod \(path)") }
        defer {
            for (path, _) in modes.reversed() { chmod(path, 0o755) }
            chmod(fixture.path, 0o644)
        }
        // The reference runs (root, or this user) read the same files; the folder can't change.
        try expectEveryCommandWorks(on: fixture.path, fixture: fixture, asNobody: CLI.isRoot, denial: "Permission denied")
    }

    /// A `-wal` with commits left on a read-only mount: reading it needs a write, so the store
    /// can't be read here. Its own status (77) and a reason naming the `-wal`; `store check` says
    /// NOT CHECKED, never CORRUPT; never the file's older rows.
    @Test(.enabled(if: ReadOnlyMount.isPossible, "mounting needs root"))
    func aLeftWalOnAReadOnlyMountExits77NotCorrupt() throws {
        let fixture = try CLIFixture.withFourCaches()
        let copy = TemporaryDirectory("strata-cli-wal-left")
        let copied = copy.url.appendingPathComponent(fixture.url.lastPathComponent).path
        try fixture.withCoordinator { coordinator in
            let context = coordinator.newContext(name: "late")
            try context.performAndWait {
                let category = try context.insert("Category")
                try category.setValue("Late", forKey: "name")
                _ = try context.save()
            }
            for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: copied + suffix) }
        }
        let mount = try ReadOnlyMount.make(of: copy.url)
        defer { mount.unmount() }
        let store = mount.url.appendingPathComponent(fixture.url.lastPathComponent).path
        for command in [["store", "info", store], ["cache", "list", store], ["cache", "verify", store]] {
            let result = try CLI.run(command)
            #expect(result.status == 77, "\(command)\n\(result)")
            #expect(result.error.contains("-wal") && result.error.contains("without write access"), "\(command)\n\(result)")
            #expect(result.output.isEmpty)
        }
        let check = try CLI.run(["store", "check", store])
        #expect(check.status == 77, "\(check)")
        #expect(check.output.contains("NOT CHECKED") && !check.output.contains("CORRUPT"), "\(check)")
    }
}
