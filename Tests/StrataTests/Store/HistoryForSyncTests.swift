import Foundation
import Testing
import StrataTestSupport
import StrataSQLite
@testable import Strata

/// Issue 46, point 7: `history(after:)` as a sync client stands on it. A token the log no longer
/// reaches back to throws (pruned, deleted, a writer with history off, a token of another
/// lineage or ahead of the store) instead of returning what is left; pages are contiguous; a
/// page can carry the rows' values read in the same read transaction; age pruning is measured
/// from the newest record.
@Suite struct HistoryForSyncTests {
    static func numbers(_ url: URL, options: StoreOptions = .notFollowing) throws -> StoreCoordinator {
        try StoreCoordinator(model: TestModels.numbers(), url: url, options: options)
    }

    /// `count` commits of one new number each (values from `start`); the token before them.
    @discardableResult
    static func commit(_ coordinator: StoreCoordinator, _ count: Int, from start: Int64 = 0) throws -> HistoryToken {
        let before = try coordinator.currentHistoryToken()
        let context = coordinator.newContext()
        try context.performAndWait {
            for i in 0..<Int64(count) {
                try context.insert("Number").setValue(start + i, forKey: "value")
                try context.save()
            }
        }
        return before
    }

    static func isExpired(_ error: any Error) -> Bool {
        if case .expired = error as? HistoryError { return true }
        return false
    }

    @Test func pagesAreContiguousAndCoverEveryCommit() throws {
        let directory = TemporaryDirectory()
        let coordinator = try Self.numbers(directory.file("s.sqlite"))
        defer { coordinator.close() }
        let start = try Self.commit(coordinator, 25)
        var token = start
        var pages: [Int] = []
        var seen: [Int64] = []
        while true {
            let page = try coordinator.history(after: token, limit: 10)
            guard let last = page.last else { break }
            pages.append(page.count)
            seen += page.map(\.token.generation)
            token = last.token
        }
        #expect(pages == [10, 10, 5])
        #expect(seen == Array((start.generation + 1)...(start.generation + 25)))
        #expect(token == (try coordinator.currentHistoryToken()))
        // Tokens carry the store's lineage.
        #expect(token.lineage == (try coordinator.metadata()).nonce)
    }

    @Test func aPrunedOrDeletedLogThrowsExpiredNamingTheOldestKept() throws {
        let directory = TemporaryDirectory()
        let coordinator = try Self.numbers(directory.file("s.sqlite"))
        defer { coordinator.close() }
        let start = try Self.commit(coordinator, 10)
        let middle = HistoryToken(store: coordinator.storeUUID, generation: start.generation + 5)
        try coordinator.deleteHistory(before: middle)
        #expect(throws: Never.self) { try coordinator.history(after: HistoryToken(store: coordinator.storeUUID, generation: middle.generation - 1)) }
        do {
            _ = try coordinator.history(after: start)
            Issue.record("a token older than the log read without an error")
        } catch HistoryError.expired(let token, let oldest) {
            #expect(token.generation == start.generation)
            #expect(oldest?.generation == middle.generation)
        }
    }

    @Test func aWriterWithHistoryOffLeavesAGapThatThrows() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("s.sqlite")
        let coordinator = try Self.numbers(url)
        defer { coordinator.close() }
        let start = try Self.commit(coordinator, 3)
        var off = StoreOptions.notFollowing
        off.history = .off
        let silent = try Self.numbers(url, options: off)
        try Self.commit(silent, 2, from: 100)
        silent.close()
        try Self.commit(coordinator, 2, from: 200)
        // The page stops before the gap; the next read, after it, throws.
        let page = try coordinator.history(after: start)
        #expect(page.map(\.token.generation) == [start.generation + 1, start.generation + 2, start.generation + 3])
        #expect(throws: (any Error).self) { try coordinator.history(after: page.last!.token) }
        #expect { _ = try coordinator.history(after: page.last!.token) } throws: { Self.isExpired($0) }
    }

    @Test func aTokenAheadOfTheStoreThrows() throws {
        let directory = TemporaryDirectory()
        let coordinator = try Self.numbers(directory.file("s.sqlite"))
        defer { coordinator.close() }
        try Self.commit(coordinator, 2)
        let ahead = HistoryToken(store: coordinator.storeUUID, generation: try coordinator.currentHistoryToken().generation + 5)
        #expect(throws: HistoryError.tokenAheadOfStore(token: ahead, storeGeneration: ahead.generation - 5)) {
            try coordinator.history(after: ahead)
        }
    }

    @Test func aPageCarriesTheRowsValuesReadWithIt() throws {
        let directory = TemporaryDirectory()
        let coordinator = try Self.numbers(directory.file("s.sqlite"))
        defer { coordinator.close() }
        let start = try coordinator.currentHistoryToken()
        let context = coordinator.newContext()
        let id = try context.performAndWait {
            let number = try context.insert("Number")
            try number.setValue(Int64(7), forKey: "value")
            try number.setValue("seven", forKey: "label")
            try context.save()
            try number.setValue(Int64(8), forKey: "value")
            try context.save()
            return number.objectID
        }
        let plain = try coordinator.history(after: start)
        #expect(plain.flatMap(\.changes).allSatisfy { $0.row == nil })
        let page = try coordinator.history(after: start, includingRowValues: true)
        let changes = page.flatMap(\.changes)
        #expect(changes.map(\.kind) == [.insert, .update])
        for change in changes {
            #expect(change.objectID == id)
            #expect(change.row?.attributes["value"] == .some(.int64(8)))
            #expect(change.row?.attributes["label"] == .some(.string("seven")))
        }
    }

    /// A clock that goes back (a board that boots at 2000) writes records no older than the
    /// newest; once it is right again, the age pruning measured from the newest record keeps
    /// them (by their raw clock they would be 26 years old and all go).
    @Test func aClockThatWentBackDoesNotAgeTheRecordsItWrote() throws {
        let directory = TemporaryDirectory()
        var options = StoreOptions.notFollowing
        options.history.maximumAge = .seconds(3600)
        let coordinator = try Self.numbers(directory.file("s.sqlite"), options: options)
        defer { coordinator.close() }
        let start = try Self.commit(coordinator, 5)
        coordinator.historyClock.withLock { $0 = 946_684_800 }          // 2000-01-01
        try Self.commit(coordinator, 5, from: 10)
        coordinator.historyClock.withLock { $0 = nil }
        try Self.commit(coordinator, 64, from: 100)                    // pruning runs in these
        let kept = try coordinator.history()
        #expect(kept.first?.token.generation == start.generation + 1)
        #expect(kept.allSatisfy { $0.date.timeIntervalSince1970 > 1_700_000_000 })
        // An hour of age by the newest record, measured: records really older than it go.
        let raw = try Connection(path: directory.file("s.sqlite").path)
        try raw.execute("UPDATE strata_history SET time = time - 7200 WHERE token <= \(start.generation + 5)")
        raw.close()
        try Self.commit(coordinator, 64, from: 1000)
        #expect(try coordinator.history().first?.token.generation == start.generation + 6)
    }
}
