import Foundation
import Testing
import Strata

/// The version the library reports is the newest release the CHANGELOG names.
@Suite struct ReleaseVersionTests {
    @Test func strataVersionMatchesTheNewestReleaseInTheChangelog() throws {
        let changelog = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: changelog, encoding: .utf8)
        let release = text.split(separator: "\n").first { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        let version = release.flatMap { $0.split(separator: "[").dropFirst().first?.split(separator: "]").first }.map(String.init)
        #expect(version == strataVersion, "CHANGELOG's newest release \(version ?? "none") differs from strataVersion \(strataVersion)")
    }

    /// The newest release says what 0.1.0 code must change (`### Breaking`, with before/after
    /// code), the README's dependency line asks for it, and the compare links name it.
    @Test func theReleaseIsWrittenUpWhereUsersLook() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let sections = changelog.components(separatedBy: "\n## [")
        let newest = try #require(sections.first { $0.hasPrefix("\(strataVersion)]") }, "no ## [\(strataVersion)] section")
        #expect(newest.contains("\n### Breaking\n"))
        #expect(newest.contains("// 0.1.0") && newest.contains("// \(strataVersion)"), "Breaking shows before/after code")
        #expect(readme.contains("from: \"\(strataVersion)\""), "the README's dependency line asks for \(strataVersion)")
        #expect(changelog.contains("[\(strataVersion)]: ") && changelog.contains("compare/v0.1.0...v\(strataVersion)"))
    }
}
