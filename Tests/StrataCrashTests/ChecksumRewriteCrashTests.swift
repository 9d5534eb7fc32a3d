import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// `StoreCoordinator.addPageChecksums(toStoreAt:)` killed with SIGKILL at each of its points, in
/// both journal modes: afterwards the store opens with every row, is clean by `store check`
/// (with or without checksums, never half), and the rewrite can run again to the end.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["STRATA_CRASH_SUITE"] == "1"))
struct ChecksumRewriteCrashTests {
    static let points = ["checksums.built", "checksums.swapped"]

    static func values(_ url: URL) throws -> [Int64] {
        let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Number", sortKeys: [.ascending("value")])).map { try $0.value(forKey: "value") as? Int64 ?? -1 }
        }
    }

    @Test func everyKillPointLeavesTheOldStoreOrTheNewOne() throws {
        var hit = 0, old = 0, new = 0
        var problems: [String] = []
        let journals: [StrataSQLiteJournalMode] = [.wal, .delete]
        for journal in journals {
            for point in Self.points {
                let directory = TemporaryDirectory("strata-crash-checksums")
                let url = directory.file("numbers.sqlite")
                var options = StoreOptions()
                options.pageChecksums = false
                options.journalMode = journal
                do {
                    let coordinator = try StoreCoordinator(model: TestModels.numbers(), url: url, options: options)
                    let context = coordinator.newContext()
                    try context.performAndWait {
                        for value in 1...2_000 { try context.insert("Number").setValue(Int64(value), forKey: "value") }
                        try context.save()
                    }
                    coordinator.close()
                }
                let label = "\(journal) \(point)"
                let killed = try HarnessProcess.Launched(arguments: ["--store", url.path, "--mode", "add-checksums"], killPoint: point).wait()
                if killed.ending == .killed { hit += 1 } else { problems.append("\(label): not hit, \(killed.summary)") }
                let header = try Data(contentsOf: url)[20]
                if header == 8 { new += 1 } else if header == 0 { old += 1 } else { problems.append("\(label): reserve byte \(header)") }
                let report = try StoreInspector(url: url).check()
                if !report.isClean { problems.append("\(label): not clean after the kill: \(report)") }
                if try Self.values(url) != Array(1...2_000) { problems.append("\(label): rows changed after the kill") }
                // And the rewrite runs (again) to the end.
                _ = try StoreCoordinator.addPageChecksums(toStoreAt: url)
                let after = try StoreInspector(url: url).check()
                if !(after.isClean && after.checksummed) { problems.append("\(label): not clean or not checksummed after the rerun: \(after)") }
                if try Self.values(url) != Array(1...2_000) { problems.append("\(label): rows changed after the rerun") }
                if FileManager.default.fileExists(atPath: url.path + ".checksumming") { problems.append("\(label): the half-built copy is still there") }
            }
        }
        print("checksum-rewrite-crash: kill-points-hit=\(hit)/\(Self.points.count * journals.count) old=\(old) new=\(new) problems=\(problems.count)")
        #expect(hit == Self.points.count * journals.count)
        #expect(problems.isEmpty, "\(problems)")
        // The swap is the last point: killed there, the store already has its checksums.
        #expect(new == journals.count && old == journals.count)
    }
}
