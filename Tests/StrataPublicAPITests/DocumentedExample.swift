import Foundation
import Testing

/// Checks that a documentation page shows the code a test runs: every line of the page's first
/// Swift block containing `marker` must be a line of the test's source file (indentation aside).
/// A changed example then fails the test until the page and the test agree again.
enum DocumentedExample {
    /// The package's root folder (this file is `Tests/StrataPublicAPITests/DocumentedExample.swift`).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The lines of the first ```` ```swift ```` block of `page` (a path from the package root)
    /// that contains `marker`, trimmed, blank lines and those starting with one of `skipping` left out.
    static func lines(of page: String, containing marker: String, skipping: [String] = []) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        let blocks = text.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let block = try #require(blocks.first { $0.contains(marker) }, "\(page) has no Swift block containing \(marker)")
        return block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { line in !line.isEmpty && !skipping.contains { line.hasPrefix($0) } }
    }

    /// Expects every line of that block in the test source file `source` (pass `#filePath`).
    static func expectShown(in page: String, containing marker: String, skipping: [String] = [], source: String,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let lines = try lines(of: page, containing: marker, skipping: skipping)
        let sourceText = try String(contentsOf: URL(fileURLWithPath: source), encoding: .utf8)
        let sourceLines = Set(sourceText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(!lines.isEmpty, sourceLocation: sourceLocation)
        for line in lines where !sourceLines.contains(line) {
            Issue.record("\(page): this line of the example is not in the test that runs it: \(line)", sourceLocation: sourceLocation)
        }
    }
}
