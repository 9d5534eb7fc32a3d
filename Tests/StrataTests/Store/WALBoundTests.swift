import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Issue 46, point 8: the `-wal` is bounded. SQLite's `journal_size_limit` truncates it when the
/// log restarts, and a commit that leaves it past twice the limit checkpoints and truncates it
/// (when no reader holds an older snapshot), so a large import does not leave its peak size
/// behind for as long as the app runs, followers and all.
@Suite struct WALBoundTests {
    static func walSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? Int64) ?? 0
    }

    @Test func aLargeImportDoesNotLeaveItsPeakSizeBehind() throws {
        let directory = TemporaryDirectory("strata-wal")
        let url = directory.file("numbers.sqlite")
        var options = StoreOptions()
        options.walSizeLimit = 1 << 20                       // 1 MiB: a commit past 2 MiB truncates
        // Followers beside the writer: a container that follows, and a read-only coordinator that
        // follows as `strata watch` does (both hold readers).
        let writer = try StoreCoordinator(model: TestModels.numbers(), url: url, options: options)
        defer { writer.close() }
        let container = try PersistentContainer(model: TestModels.numbers(), url: url)
        defer { container.coordinator.close() }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let watcher = try StoreCoordinator(model: TestModels.numbers(), url: url, options: readOnly)
        defer { watcher.close() }

        // An import of 60,000 rows in one commit: its log is several MiB while it commits.
        let rows = 60_000
        try writer.execute(BatchInsertRequest<ManagedObject>(entityName: "Number", count: rows) { index, row in
            try row.set(Int64(index), forKey: "value")
            try row.set("label \(index) " + String(repeating: "x", count: 40), forKey: "label")
        })
        // Right after it, the followers are still reading the import (merging its 60,000 rows):
        // the truncation waits up to 100 ms for them, and when that is not enough the next
        // commits try again.
        let afterImport = Self.walSize(url)

        // Then a writer committing as fast as it can while both follow: the -wal never passes
        // twice the limit plus one commit's pages.
        var peak: Int64 = 0
        let context = writer.newContext()
        try context.performAndWait {
            for i in 0..<400 {
                let number = try context.insert("Number")
                try number.setValue(Int64(rows + i), forKey: "value")
                try context.save()
                peak = max(peak, Self.walSize(url))
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        let generation = try writer.currentHistoryToken().generation
        while container.coordinator.externalChangeStatistics.generation < generation, ContinuousClock.now < deadline { usleep(1000) }
        #expect(container.coordinator.externalChangeStatistics.generation == generation)
        let final = Self.walSize(url)
        // Never past what the import left, and back under twice the limit once the readers let it.
        #expect(peak <= max(afterImport, 2 << 20) + (256 << 10), "the -wal reached \(peak) bytes")
        #expect(final <= 2 << 20, "the -wal is \(final) bytes after 400 more commits")
        print("wal-bound: after-import=\(afterImport) peak-during-400-commits=\(peak) final=\(final) limit=\(1 << 20)")
    }
}
