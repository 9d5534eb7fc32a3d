import Foundation
import Testing

/// The crash tests' hooks are not part of Strata's public interface: a client that imports
/// Strata can't name `KillPoint` or `FaultInjectingFileSystem` (type-checked by `swiftc` against
/// this build's module, as `MisspelledKeyCompileTests` does); only `@_spi(Testing) import Strata`
/// sees them, and that client must type-check, so a broken harness can't pass for a hidden hook.
@Suite struct TestHooksAreNotPublicTests {
    static func typeCheck(_ source: String) throws -> (status: Int32, errors: [String], output: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-spi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Client.swift")
        try Data(source.utf8).write(to: file)
        let (status, output) = try MisspelledKeyCompileTests.typeCheck(file)
        let errors = output.split(separator: "\n").map(String.init).filter { $0.contains(": error: ") }
        return (status, errors, output)
    }

    @Test func aClientCannotNameTheTestHooks() throws {
        let plain = try Self.typeCheck("""
            import Strata
            let points = KillPoint.catalogue
            let fileSystem = FaultInjectingFileSystem(faults: [])
            """)
        #expect(plain.status != 0)
        #expect(plain.errors.contains { $0.contains("cannot find 'KillPoint' in scope") }, "\(plain.output)")
        #expect(plain.errors.contains { $0.contains("cannot find 'FaultInjectingFileSystem' in scope") }, "\(plain.output)")

        let testing = try Self.typeCheck("""
            @_spi(Testing) import Strata
            let armed: String? = KillPoint.armFromEnvironment()
            let points: [String] = KillPoint.catalogue
            let fileSystem = FaultInjectingFileSystem(faults: [])
            """)
        #expect(testing.status == 0 && testing.errors.isEmpty, "\(testing.output)")
    }
}
