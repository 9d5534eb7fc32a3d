#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Strata
import StrataTestSupport
import Testing

/// Issue 50: a damaged write-ahead log never silently drops acknowledged commits.
///
/// The logs are real: a `StrataHistoryWriter` child process commits a burst to a store and is
/// SIGKILLed, leaving a `-wal` no connection holds (the next open runs SQLite's recovery). Each
/// flip changes one byte of a copy of that log — in a frame header, a page body or the log's
/// header — and the copy is opened as an app would (`StoreCoordinator(model:url:)`):
///
/// - `refused`: the open threw ``StoreError/walDamaged(_:)``, the files untouched;
/// - `intact`: it opened with every acknowledged commit (a flip in bytes recovery never reads:
///   frames past the last commit, left by the kill);
/// - `last-commit-undetectable`: it opened without the last transaction, the flip inside that
///   transaction's commit frame — damage there looks exactly like a commit torn by a crash
///   (<doc:CrashGuarantees>), so it is counted apart, and its count is the design's limit;
/// - `silent-loss`: it opened without a commit the scan could have seen. Must be 0.
///
/// The controls: writers killed at random moments in a burst (real torn tails; how many died
/// with frames of an unfinished commit in the log is printed — few, as that window is short), and
/// the intact log cut at every boundary a kill inside SQLite's write of its last commit can leave
/// (a frame's header written, then its page). Every one must open, with every commit the writer
/// acknowledged (the cut ones: every commit before the last). Prints
/// `wal-flips: flips=N refused=N silent-loss=0 torn-tails-recovered=N …`.
/// `STRATA_WAL_FLIPS` (default 600), `STRATA_WAL_SEED` (default random, printed).
@Suite(.serialized)
struct WALDamageTests {
    typealias WriterChild = ExternalChangesProcessTests.WriterChild

    /// A store with a cold `-wal` holding several committed transactions, and the generation of
    /// the last commit the writer acknowledged.
    struct ColdLog {
        let directory: TemporaryDirectory
        let store: URL
        let acknowledged: Int64
    }

    static func makeStore(_ url: URL) throws {
        let container = try PersistentContainer(model: TestModels.bookshelf(), url: url)
        defer { container.coordinator.close() }
        let main = container.mainContext
        try main.performAndWait {
            for index in 0..<4 {
                let shelf = try main.insert("Shelf")
                try shelf.setValue("shelf \(index)", forKey: "label")
                for book in 0..<3 {
                    let object = try main.insert("Book")
                    try object.setValue("book \(index)-\(book)", forKey: "title")
                    try object.setValue(Int64(10 * book + index), forKey: "pages")
                    try object.setValue(shelf, forKey: "shelf")
                }
            }
            try main.saveToStore()
        }
    }

    /// Runs a writer on `store`, asks for `burst` commits, and SIGKILLs it after `killAfter`
    /// (`nil`: once every commit is acknowledged). Returns the last acknowledged generation.
    static func writeAndKill(_ store: URL, seed: UInt64, burst: Int, killAfter: Duration?, stderr: URL) throws -> Int64 {
        let writer = try WriterChild(store: store, seed: seed, killPoint: nil, stderr: stderr)
        guard let open = writer.nextLine(timeout: .seconds(60)), open.hasPrefix("open "),
              var acknowledged = Int64(open.split(separator: " ")[1]) else {
            throw Failure("the writer did not open the store: \(writer.reap())")
        }
        writer.send("burst \(burst)")
        if let killAfter {
            Thread.sleep(forTimeInterval: Double(killAfter.components.attoseconds) / 1e18 + Double(killAfter.components.seconds))
            writer.kill()
        } else {
            for _ in 0..<burst {
                guard let line = writer.nextLine(timeout: .seconds(30)), line.hasPrefix("committed ") else { break }
                acknowledged = Int64(line.split(separator: " ")[1]) ?? acknowledged
            }
            writer.kill()
        }
        // Every line the writer wrote before it died: each is a commit it acknowledged.
        while let line = writer.nextLine(timeout: .milliseconds(300)) {
            if line.hasPrefix("committed "), let generation = Int64(line.split(separator: " ")[1]) { acknowledged = max(acknowledged, generation) }
        }
        _ = writer.reap()
        return acknowledged
    }

    /// The copies of a damaged log kept beside `store`.
    static func keptLogs(beside store: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.deletingLastPathComponent().path)
            .filter { $0.hasPrefix(store.lastPathComponent + "-wal.damaged-") }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A cold log with at least `transactions` commits (the writer's commits may checkpoint and
    /// restart the log: it is made again until it holds enough).
    static func coldLog(seed: UInt64, transactions: Int) throws -> ColdLog {
        for attempt in 0..<10 {
            let directory = TemporaryDirectory("strata-wal")
            let store = directory.file("books.sqlite")
            try makeStore(store)
            let acknowledged = try writeAndKill(store, seed: seed &+ UInt64(attempt), burst: 8, killAfter: nil,
                                                stderr: directory.file("writer.stderr"))
            let log = try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))
            if commitFrames(log).count >= transactions { return ColdLog(directory: directory, store: store, acknowledged: acknowledged) }
        }
        throw Failure("no cold log with \(transactions) committed transactions in 10 tries")
    }

    /// The frames (0-based) with the log header's salts, from the start: how many were
    /// written, and which are commit frames. An oracle of its own (not the scanner under test).
    static func frames(_ log: Data) -> (written: Int, commits: [Int]) {
        guard log.count > 32 else { return (0, []) }
        let frameSize = 24 + pageSize(log)
        var written = 0
        var commits: [Int] = []
        let salts = log[16..<24]
        for index in 0..<((log.count - 32) / frameSize) {
            let offset = 32 + index * frameSize
            guard log[(offset + 8)..<(offset + 16)] == salts else { break }
            written = index + 1
            if log[(offset + 4)..<(offset + 8)].contains(where: { $0 != 0 }) { commits.append(index) }
        }
        return (written, commits)
    }

    /// The commit frames (0-based) recovery keeps in an intact log.
    static func commitFrames(_ log: Data) -> [Int] { frames(log).commits }

    enum Opened {
        case success(Int64)
        case failure(WALDamage)
    }

    static func open(_ store: URL) throws -> Opened {
        do {
            let coordinator = try StoreCoordinator(model: TestModels.bookshelf(), url: store)
            defer { coordinator.close() }
            return .success(try coordinator.metadata().generation)
        } catch StoreError.walDamaged(let damage) {
            return .failure(damage)
        }
    }

    /// The page size in a log's header.
    static func pageSize(_ log: Data) -> Int {
        var size = 0
        for index in 8..<12 { size = size << 8 | Int(log[log.startIndex + index]) }
        return size
    }

    @Test(.timeLimit(.minutes(10))) func flipsInAColdLogAreRefusedNeverSilent() throws {
        let environment = ProcessInfo.processInfo.environment
        let flips = environment["STRATA_WAL_FLIPS"].flatMap(Int.init) ?? 600
        let seed = environment["STRATA_WAL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("wal-flips: seed \(seed) (replay: STRATA_WAL_SEED=\(seed) STRATA_WAL_FLIPS=\(flips))")
        var rng = SplitMix64(seed: seed)
        let cold = try Self.coldLog(seed: rng.next(), transactions: 4)
        let template = try Data(contentsOf: URL(fileURLWithPath: cold.store.path + "-wal"))
        let database = try Data(contentsOf: cold.store)
        let commits = Self.commitFrames(template)
        let frameSize = 24 + Self.pageSize(template)
        let frames = (template.count - 32) / frameSize
        // The unflipped log, recovered: every acknowledged commit is there.
        let expected: Int64
        do {
            let scratch = TemporaryDirectory("strata-wal-copy")
            let store = scratch.file("books.sqlite")
            try database.write(to: store)
            try template.write(to: URL(fileURLWithPath: store.path + "-wal"))
            guard case .success(let generation) = try Self.open(store) else { throw Failure("the intact log was refused") }
            expected = generation
        }
        #expect(expected >= cold.acknowledged, "the intact log recovers every acknowledged commit")
        let lastCommit = commits.last!
        let lastCommitRange = (32 + lastCommit * frameSize)..<(32 + (lastCommit + 1) * frameSize)

        var refused = 0, intact = 0, undetectable = 0, silent: [String] = []
        var places: [String: Int] = [:]
        for flip in 0..<flips {
            // Where: a frame header, the log's header, or anywhere (page bodies, mostly).
            let offset: Int
            switch rng.int(0...9) {
            case 0...2:
                let frame = rng.int(0...(frames - 1))
                offset = 32 + frame * frameSize + rng.int(0...23)
                places["frame header", default: 0] += 1
            case 3:
                offset = rng.int(0...31)
                places["log header", default: 0] += 1
            default:
                offset = rng.int(32...(template.count - 1))
                places["anywhere", default: 0] += 1
            }
            var log = template
            log[offset] ^= UInt8(rng.int(1...255))
            let scratch = TemporaryDirectory("strata-wal-flip")
            let store = scratch.file("books.sqlite")
            try database.write(to: store)
            try log.write(to: URL(fileURLWithPath: store.path + "-wal"))
            switch try Self.open(store) {
            case .failure:
                refused += 1
                // Refused untouched: the log is as it was.
                #expect(try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal")) == log, "flip \(flip): the refused log is untouched")
            case .success(let generation) where generation >= expected:
                intact += 1
            case .success(let generation):
                if lastCommitRange.contains(offset) {
                    undetectable += 1
                } else {
                    silent.append("flip \(flip) at byte \(offset) (frame \((offset - 32) / frameSize + 1)): opened at generation \(generation), expected \(expected)")
                }
            }
        }

        // Torn tails as a SIGKILL inside SQLite's write of a commit leaves them (its writes are
        // sequential: a frame's header, then its page): the intact log cut at each such boundary
        // within its last transaction. Each must open, with every commit before that one.
        var cut = 0
        var tornFailures: [String] = []
        let lastStart = (commits.count >= 2 ? commits[commits.count - 2] + 1 : 0)
        for frame in lastStart...lastCommit {
            for boundary in [32 + frame * frameSize + 24, 32 + (frame + 1) * frameSize - (frame == lastCommit ? 1 : 0)] {
                let scratch = TemporaryDirectory("strata-wal-cut")
                let store = scratch.file("books.sqlite")
                try database.write(to: store)
                try template.prefix(boundary).write(to: URL(fileURLWithPath: store.path + "-wal"))
                switch try Self.open(store) {
                case .success(let generation) where generation == expected - 1: cut += 1
                case .success(let generation): tornFailures.append("a log cut at byte \(boundary) opened at generation \(generation), expected \(expected - 1)")
                case .failure(let damage): tornFailures.append("a log cut at byte \(boundary) was refused: \(damage)")
                }
            }
        }

        // The control: real torn tails, writers killed at random moments in a burst.
        var recovered = 0, killedMidCommit = 0
        let tails = environment["STRATA_WAL_TORN_TAILS"].flatMap(Int.init) ?? 20
        for tail in 0..<tails {
            let directory = TemporaryDirectory("strata-wal-torn")
            let store = directory.file("books.sqlite")
            try Self.makeStore(store)
            let acknowledged = try Self.writeAndKill(store, seed: rng.next(), burst: 40, killAfter: .milliseconds(rng.int(2...80)),
                                                     stderr: directory.file("writer.stderr"))
            // Killed inside a commit: frames with the log's salts after its last commit frame.
            let log = FileManager.default.contents(atPath: store.path + "-wal") ?? Data()
            let (written, commits) = Self.frames(log)
            if written > (commits.last ?? -1) + 1 { killedMidCommit += 1 }
            switch try Self.open(store) {
            case .success(let generation) where generation >= acknowledged: recovered += 1
            case .success(let generation): tornFailures.append("tail \(tail): generation \(generation) below the acknowledged \(acknowledged)")
            case .failure(let damage): tornFailures.append("tail \(tail): refused a torn tail: \(damage)")
            }
        }
        print("wal-flips places: " + places.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
              + " frames=\(frames) commits=\(commits.count) torn-tails-killed-mid-commit=\(killedMidCommit) cut-tails-recovered=\(cut)")
        print("wal-flips: flips=\(flips) refused=\(refused) silent-loss=\(silent.count) torn-tails-recovered=\(recovered) "
              + "intact=\(intact) last-commit-undetectable=\(undetectable)")
        #expect(silent.isEmpty, "\(silent.prefix(5))")
        #expect(tornFailures.isEmpty, "\(tornFailures.prefix(5))")
        #expect(recovered == tails)
        #expect(refused > flips / 2, "most flips land in committed frames and are refused")
    }

    /// A cold log of at least 3 commits with one byte of its first frame's page flipped (`mask`):
    /// recovery would stop at frame 1 and drop every commit. The store, and the damaged log.
    static func damagedColdLog(seed: UInt64, flipping mask: UInt8) throws -> (ColdLog, Data) {
        let cold = try coldLog(seed: seed, transactions: 3)
        let url = URL(fileURLWithPath: cold.store.path + "-wal")
        var log = try Data(contentsOf: url)
        log[32 + 24 + pageSize(log) / 2] ^= mask
        try log.write(to: url)
        return (cold, log)
    }

    /// `strata store check` on a damaged log: exit 65, the frames named, nothing changed; with
    /// `--accept-wal-loss`, the transactions dropped, a copy of the log kept, the store clean.
    /// Every single-bit flip of the log's 32-byte header, one at a time: refused, or opened with
    /// every acknowledged commit. (The random flips found that the magic's low bit, which names
    /// the checksums' byte order, leaves a valid magic when flipped: recovery then ignores the
    /// whole log, and the scan, reading the frames in the wrong order, saw nothing to lose.)
    @Test func everyBitOfTheLogHeaderFlippedIsRefusedOrLosesNothing() throws {
        let cold = try Self.coldLog(seed: 50, transactions: 3)
        let template = try Data(contentsOf: URL(fileURLWithPath: cold.store.path + "-wal"))
        let database = try Data(contentsOf: cold.store)
        var refused = 0, intact = 0
        var silent: [String] = []
        for byte in 0..<32 {
            for bit in 0..<8 {
                var log = template
                log[byte] ^= UInt8(1 << bit)
                let scratch = TemporaryDirectory("strata-wal-header")
                let store = scratch.file("books.sqlite")
                try database.write(to: store)
                try log.write(to: URL(fileURLWithPath: store.path + "-wal"))
                switch try Self.open(store) {
                case .failure: refused += 1
                case .success(let generation) where generation >= cold.acknowledged: intact += 1
                case .success(let generation): silent.append("byte \(byte) bit \(bit): generation \(generation), acknowledged \(cold.acknowledged)")
                }
            }
        }
        print("wal-header-flips: flips=256 refused=\(refused) intact=\(intact) silent-loss=\(silent.count)")
        #expect(silent.isEmpty, "\(silent)")
    }

    @Test func storeCheckReportsADamagedLog() throws {
        let (cold, log) = try Self.damagedColdLog(seed: 7, flipping: 0x5A)
        guard let strata = WriterChild.executable?.deletingLastPathComponent().appendingPathComponent("strata") else {
            throw Failure("strata not found")
        }
        func run(_ arguments: [String]) throws -> ChildProcessResult { try runChildProcess(strata, arguments) }
        let check = try run(["store", "check", cold.store.path])
        #expect(check.status == 65, "\(check)")
        #expect(check.output.contains("DAMAGED at frame 1 of"), "\(check.output)")
        #expect(check.output.contains("commit frames"), "\(check.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cold.store.path + "-wal")) == log, "check changed nothing")
        // The app's open is refused the same way, the files untouched.
        #expect(throws: StoreError.self) { try StoreCoordinator(model: TestModels.bookshelf(), url: cold.store) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: cold.store.path + "-wal")) == log)

        let accepted = try run(["store", "check", cold.store.path, "--accept-wal-loss"])
        #expect(accepted.status == 0, "\(accepted)")
        #expect(accepted.error.contains("dropped"), "\(accepted.error)")
        let kept = try Self.keptLogs(beside: cold.store)
        #expect(kept.count == 1, "a copy of the damaged log is kept: \(kept)")
        if let name = kept.first { #expect(try Data(contentsOf: cold.directory.file(name)) == log) }
        // Now it opens (as recovery left it).
        let coordinator = try StoreCoordinator(model: TestModels.bookshelf(), url: cold.store)
        coordinator.close()
    }

    /// `StoreOptions.acceptsWALLoss`: the app chooses to open anyway; the log is kept first.
    @Test func acceptsWALLossOpensAndKeepsTheLog() throws {
        let (cold, _) = try Self.damagedColdLog(seed: 11, flipping: 0x11)
        var damage: WALDamage?
        do {
            _ = try StoreCoordinator(model: TestModels.bookshelf(), url: cold.store)
        } catch StoreError.walDamaged(let found) {
            damage = found
        }
        let found = try #require(damage)
        #expect(found.brokenFrame == 1 && found.keptTransactions == 0 && found.lostTransactions >= 3, "\(found)")
        var options = StoreOptions()
        options.acceptsWALLoss = true
        let coordinator = try StoreCoordinator(model: TestModels.bookshelf(), url: cold.store, options: options)
        coordinator.close()
        #expect(try Self.keptLogs(beside: cold.store).count == 1)
    }
}
