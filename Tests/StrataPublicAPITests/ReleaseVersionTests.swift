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
}
