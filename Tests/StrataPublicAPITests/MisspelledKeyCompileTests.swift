import Foundation
import Testing

/// A misspelled key in a typed sort, section key path or predicate does not build: the point of the
/// typed API (issue 19). Each case is a small client of Strata — `@Entity` classes, a
/// `FetchRequest<Book>` with `#Predicate` and `SortDescriptor`, a controller `sectionBy:` a key
/// path — type-checked by `swiftc` against the Strata module and macro plug-in this build just
/// made, as a package depending on Strata would be (a separate package would rebuild swift-syntax
/// for minutes per case). The correctly spelled client must type-check cleanly, so a broken
/// harness cannot pass for a refused typo.
@Suite struct MisspelledKeyCompileTests {
    /// The client; `SORT`, `SECTION` and `PREDICATE` are replaced per case.
    static let template = """
        import Foundation
        import Strata

        @Entity final class Shelf: ManagedObject {
            var name: String
            @Relationship(inverse: \\Book.shelf) var books: Set<Book> = []
        }

        @Entity final class Book: ManagedObject {
            var title: String
            var shelf: Shelf?
        }

        func shelvedBooks(_ context: ManagedObjectContext) throws -> [Book] {
            let predicate = #Predicate<Book> { PREDICATE.contains("Swift") }
            let sortBy = [SortDescriptor(\\Book.shelf?.name), SortDescriptor(SORT)]
            let request = FetchRequest<Book>(predicate: predicate, sortBy: sortBy)
            let controller = try FetchedResultsController(request, context: context, sectionBy: SECTION)
            try controller.performFetch()
            return try context.fetch(request)
        }

        """

    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let sort, section, predicate: String
        /// The line holding the misspelling, and what the compiler must say there.
        let line: Int?
        let message: String?
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "spelled right", sort: "\\Book.title", section: "\\.shelf?.name", predicate: "$0.title", line: nil, message: nil),
        Case(name: "sort key", sort: "\\Book.titel", section: "\\.shelf?.name", predicate: "$0.title",
             line: 16, message: "has no member 'titel'"),
        Case(name: "section key path", sort: "\\Book.title", section: "\\.shelf?.nam", predicate: "$0.title",
             line: 18, message: "has no member 'nam'"),
        Case(name: "predicate key", sort: "\\Book.title", section: "\\.shelf?.name", predicate: "$0.titel",
             line: 15, message: "has no member 'titel'"),
    ]

    @Test(arguments: cases) func aMisspelledKeyDoesNotBuild(_ testCase: Case) throws {
        let source = Self.template.replacingOccurrences(of: "SORT", with: testCase.sort)
            .replacingOccurrences(of: "SECTION", with: testCase.section)
            .replacingOccurrences(of: "PREDICATE", with: testCase.predicate)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-typo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Client.swift")
        try Data(source.utf8).write(to: file)

        let (status, output) = try Self.typeCheck(file)
        let errors = output.split(separator: "\n").filter { $0.hasPrefix(file.path + ":") && $0.contains(": error: ") }
        guard let line = testCase.line, let message = testCase.message else {
            #expect(status == 0 && errors.isEmpty, "the correctly spelled client must type-check:\n\(output)")
            return
        }
        #expect(status != 0, "a misspelled \(testCase.name) built:\n\(output)")
        let atLine = errors.filter { $0.hasPrefix("\(file.path):\(line):") }
        #expect(atLine.contains { $0.contains(message) }, "expected '\(message)' at line \(line):\n\(errors.joined(separator: "\n"))")
    }

    /// `swiftc -typecheck` of `file` against this build's Strata module, its C modules and the
    /// `@Entity` plug-in. Returns the exit status and everything the compiler printed.
    static func typeCheck(_ file: URL) throws -> (Int32, String) {
        let build = Bundle.main.bundleURL        // .build/<configuration>, where the test runs
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let modules = build.appendingPathComponent("Modules")
        // A build made with a prebuilt plug-in (STRATA_PREBUILT_MACROS: CI's sanitizer builds)
        // has none of its own.
        let plugin = ProcessInfo.processInfo.environment["STRATA_PREBUILT_MACROS"].map { URL(fileURLWithPath: $0) }
            ?? build.appendingPathComponent("StrataMacros-tool")
        for required in [modules.appendingPathComponent("Strata.swiftmodule"), plugin] {
            try #require(FileManager.default.fileExists(atPath: required.path),
                         "\(required.path) is missing: run this suite from `swift test` in the package (it needs the build's Strata module)")
        }
        let sources = package.appendingPathComponent("Sources")
        let arguments = [
            "swiftc", "-typecheck", "-swift-version", "6", "-I", modules.path,
            "-Xcc", "-fmodule-map-file=" + sources.appendingPathComponent("CSQLite/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + sources.appendingPathComponent("CZlib/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("CStrataVFS.build/module.modulemap").path,
            "-Xcc", "-I" + sources.appendingPathComponent("CStrataVFS/include").path,
            // Strata imports it publicly (the inlined queue check reads the thread pointer).
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("CStrataThread.build/module.modulemap").path,
            "-Xcc", "-I" + sources.appendingPathComponent("CStrataThread/include").path,
            "-load-plugin-executable", plugin.path + "#StrataMacros",
            file.path,
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
