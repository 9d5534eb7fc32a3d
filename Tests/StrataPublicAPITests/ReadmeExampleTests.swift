import Foundation
import Strata
import StrataTestSupport
import Testing

/// README.md's example, as a package that depends on Strata writes it (`import Strata`, no
/// `@testable`): it must compile and print what the README says, and the README must show this
/// code (a changed example fails here until the two agree again).
@Suite struct ReadmeExampleTests {
    /// The README's example, word for word, with its first line (the store's URL) given.
    static func readmeExample(url: URL) throws -> [String] {
        var printed: [String] = []
        func print(_ value: Any) { printed.append("\(value)") }
        // --- README example (after its first line) ---
        let model = try Model(version: "1", entities: [
            Entity("Note", attributes: [Attribute("text", .string, isOptional: false), Attribute("created", .date)]),
        ])
        let coordinator = try StoreCoordinator(model: model, url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext(name: "main")
        try context.performAndWait {
            let note = try context.insert("Note")
            try note.setValue("Buy milk", forKey: "text")
            try note.setValue(Date(), forKey: "created")
            try context.save()
            let notes = try context.fetch(FetchRequest(entityName: "Note", sortKeys: [.ascending("text")]))
            print(try notes.map { try $0.value(forKey: "text") as? String ?? "" })   // ["Buy milk"]
        }
        // --- end of the README example ---
        return printed
    }

    @Test func theExampleRunsAndPrintsWhatTheReadmeSays() throws {
        try withTemporaryDirectory { directory in
            let printed = try Self.readmeExample(url: directory.file("notes.sqlite"))
            #expect(printed == [#"["Buy milk"]"#])
        }
    }

    /// Every line of the README's Swift example is in ``readmeExample(url:)`` (its first line,
    /// the URL, aside).
    @Test func theReadmeShowsThisCode() throws {
        #expect(try DocumentedExample.lines(of: "README.md", containing: "StoreCoordinator").count >= 10)
        try DocumentedExample.expectShown(in: "README.md", containing: "StoreCoordinator",
                                          skipping: ["import ", "let url = "], source: #filePath)
    }
}
