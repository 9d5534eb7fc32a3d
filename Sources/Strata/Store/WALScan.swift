internal import Foundation
#if canImport(Glibc)
internal import Glibc
#endif

/// What a scan of a write-ahead log that SQLite has not recovered yet found beyond the point where
/// SQLite's recovery stops: committed transactions that recovery would drop without a word.
///
/// SQLite's recovery reads the `-wal` frame by frame and stops at the first frame whose salts or
/// cumulative checksum do not match, keeping the transactions committed before it. That is how a
/// torn tail looks after a crash: the last frames of the last transaction, never committed. A
/// frame damaged on disk looks the same to SQLite, and every commit after it is dropped too. The
/// scan tells the two apart: each frame's checksum starts from the checksums stored in the frame
/// before it, so a frame after the break can be checked on its own; a committed frame beyond the
/// break, with the log's salts and a checksum that holds, is a commit that was made and is damaged,
/// not torn.
///
/// What the scan cannot see: damage to the *last* committed transaction's commit frame (the frame
/// that says "committed") looks exactly like a commit torn by a crash, and is dropped by SQLite's
/// recovery as one. See <doc:CrashGuarantees>.
public struct WALDamage: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The `-wal` file.
    public let path: String
    /// The first frame (1-based) SQLite's recovery does not accept; 0 when the log's header is
    /// itself damaged (SQLite then ignores every frame).
    public let brokenFrame: Int
    /// Frames in the file.
    public let frames: Int
    /// Transactions committed before the break, which recovery keeps.
    public let keptTransactions: Int
    /// Commit frames (1-based) beyond the break whose checksums hold: the transactions recovery
    /// would drop.
    public let lostCommitFrames: [Int]
    /// Frames recovery would drop, from the break to the last of ``lostCommitFrames``.
    public var lostFrames: Int { (lostCommitFrames.last ?? brokenFrame) - max(brokenFrame, 1) + 1 }
    /// Committed transactions recovery would drop.
    public var lostTransactions: Int { lostCommitFrames.count }

    public var description: String {
        "the write-ahead log \(path) is damaged at frame \(brokenFrame) of \(frames): SQLite's recovery would keep "
            + "\(keptTransactions) committed transaction\(keptTransactions == 1 ? "" : "s") and drop \(lostTransactions) more "
            + "(\(lostFrames) frames; commit frames \(lostCommitFrames.map(String.init).joined(separator: ", ")))"
    }
}

/// Reads a `-wal` the way SQLite's recovery does (`walIndexRecover` in `wal.c`), and beyond.
enum WALScanner {
    static let headerSize = 32
    static let frameHeaderSize = 24

    /// The damage in the `-wal` beside the database at `databasePath`, or `nil` when there is no
    /// log, it is empty, or everything committed in it is kept by recovery.
    static func scan(databasePath: String) throws -> WALDamage? {
        let walPath = databasePath + "-wal"
        guard let handle = FileHandle(forReadingAtPath: walPath) else { return nil }
        defer { try? handle.close() }   // a read-only handle: closing loses nothing
        let bytes = try handle.readToEnd() ?? Data()
        guard bytes.count > headerSize else { return nil }
        let fallbackPageSize = try databasePageSize(databasePath)
        return bytes.withUnsafeBytes { raw in
            scan(raw.bindMemory(to: UInt8.self), path: walPath, databasePageSize: fallbackPageSize)
        }
    }

    /// The page size in the database file's header (bytes 16–17; 1 means 65,536).
    /// `nil` when the file is shorter than a header; an error when it cannot be read.
    static func databasePageSize(_ path: String) throws -> Int? {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }   // a read-only handle: closing loses nothing
        guard let header = try handle.read(upToCount: 100), header.count >= 18 else { return nil }
        let value = Int(header[header.startIndex + 16]) << 8 | Int(header[header.startIndex + 17])
        return value == 1 ? 65_536 : value
    }

    static func validPageSize(_ size: Int) -> Bool {
        size >= 512 && size <= 65_536 && size & (size - 1) == 0
    }

    static func scan(_ log: UnsafeBufferPointer<UInt8>, path: String, databasePageSize: Int?) -> WALDamage? {
        func u32(_ offset: Int) -> UInt32 {
            UInt32(log[offset]) << 24 | UInt32(log[offset + 1]) << 16 | UInt32(log[offset + 2]) << 8 | UInt32(log[offset + 3])
        }
        let magic = u32(0)
        let magicValid = magic & 0xFFFF_FFFE == 0x377F_0682
        // The checksums' byte order: big-endian words when the magic's low bit is set.
        let bigEndian = magicValid ? magic & 1 == 1 : false
        let headerPageSize = Int(u32(8))
        let salts = (u32(16), u32(20))
        let headerValid = magicValid && u32(4) == 3_007_000 && validPageSize(headerPageSize)
            && checksum(log, from: 0, count: 24, bigEndian: bigEndian, seed: (0, 0)) == (u32(24), u32(28))
        // A damaged header's page size may be the damage (a flip can make another valid size):
        // the database file's then, which is the log's.
        let pageSize = headerValid ? headerPageSize
            : databasePageSize.flatMap { validPageSize($0) ? $0 : nil } ?? (validPageSize(headerPageSize) ? headerPageSize : 4096)
        let frameSize = frameHeaderSize + pageSize
        let frames = (log.count - headerSize) / frameSize
        guard frames > 0 else { return nil }
        func frameOffset(_ index: Int) -> Int { headerSize + index * frameSize }
        func saltsOf(_ index: Int) -> (UInt32, UInt32) { (u32(frameOffset(index) + 8), u32(frameOffset(index) + 12)) }
        /// Frame `index`'s checksum from `seed`, its words read in `order` (big-endian when true).
        func sum(of index: Int, from seed: (UInt32, UInt32), _ order: Bool) -> (UInt32, UInt32) {
            let offset = frameOffset(index)
            let next = checksum(log, from: offset, count: 8, bigEndian: order, seed: seed)
            return checksum(log, from: offset + frameHeaderSize, count: pageSize, bigEndian: order, seed: next)
        }
        /// The checksums frame `index` stores (-1: the log header's).
        func stored(_ index: Int) -> (UInt32, UInt32) {
            index < 0 ? (u32(24), u32(28)) : (u32(frameOffset(index) + 16), u32(frameOffset(index) + 20))
        }
        // Recovery's pass: frames accepted while salts and the cumulative checksum hold. A
        // damaged header: SQLite ignores the whole log.
        var kept = 0
        var broken = 0
        if headerValid {
            var seed = stored(-1)
            broken = frames
            for index in 0..<frames {
                let next = sum(of: index, from: seed, bigEndian)
                guard u32(frameOffset(index)) != 0, saltsOf(index) == salts, next == stored(index) else {
                    broken = index
                    break
                }
                seed = next
                if u32(frameOffset(index) + 4) != 0 { kept += 1 }
            }
            guard broken < frames else { return nil }
        }
        /// Whether frame `index`'s own checksum holds, started from the checksums the frame before
        /// stores, or from what they should be (the frame before recomputed from the one before
        /// it: damage to the stored checksums alone must not hide the frames after them).
        func holds(_ index: Int, _ order: Bool) -> Bool {
            let expected = stored(index)
            if sum(of: index, from: stored(index - 1), order) == expected { return true }
            let shouldBe = index == 0 ? checksum(log, from: 0, count: 24, bigEndian: order, seed: (0, 0))
                : sum(of: index - 1, from: stored(index - 2), order)
            return sum(of: index, from: shouldBe, order) == expected
        }
        // Beyond the break: commit frames with the log's salts (the first frame's, when the
        // header's may be the damage) whose own checksum holds. Frame 1 counts only after a
        // damaged header (with a valid one, recovery accepted it or it is the break).
        // A damaged header's magic may be the damage, and its low bit names the checksums' byte
        // order (a flip of that bit leaves a valid magic): both orders are tried then.
        let logSalts = headerValid || saltsOf(0) == salts ? salts : saltsOf(0)
        var lost: [Int] = []
        for order in headerValid ? [bigEndian] : [bigEndian, !bigEndian] where lost.isEmpty {
            for index in (headerValid ? broken + 1 : 0)..<frames {
                guard u32(frameOffset(index)) != 0, u32(frameOffset(index) + 4) != 0, saltsOf(index) == logSalts else { continue }
                if holds(index, order) { lost.append(index + 1) }
            }
        }
        guard !lost.isEmpty else { return nil }
        return WALDamage(path: path, brokenFrame: headerValid ? broken + 1 : 0, frames: frames, keptTransactions: kept,
                         lostCommitFrames: lost)
    }

    /// SQLite's WAL checksum (`walChecksumBytes`): over 32-bit words, two running sums.
    static func checksum(_ log: UnsafeBufferPointer<UInt8>, from offset: Int, count: Int, bigEndian: Bool,
                         seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
        var s0 = seed.0, s1 = seed.1
        var i = offset
        let end = offset + count
        while i + 8 <= end {
            let a: UInt32, b: UInt32
            if bigEndian {
                a = UInt32(log[i]) << 24 | UInt32(log[i + 1]) << 16 | UInt32(log[i + 2]) << 8 | UInt32(log[i + 3])
                b = UInt32(log[i + 4]) << 24 | UInt32(log[i + 5]) << 16 | UInt32(log[i + 6]) << 8 | UInt32(log[i + 7])
            } else {
                a = UInt32(log[i + 3]) << 24 | UInt32(log[i + 2]) << 16 | UInt32(log[i + 1]) << 8 | UInt32(log[i])
                b = UInt32(log[i + 7]) << 24 | UInt32(log[i + 6]) << 16 | UInt32(log[i + 5]) << 8 | UInt32(log[i + 4])
            }
            s0 = s0 &+ a &+ s1
            s1 = s1 &+ b &+ s0
            i += 8
        }
        return (s0, s1)
    }
}

/// The stores this process has open, by path: a `-wal` is scanned only before the first of
/// them opens a store, when SQLite's recovery may run (no connection, here or in another
/// process, holds the log).
enum OpenStores {
    private static let counts = Locked<[String: Int]>([:])

    static func key(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// One opening of a store counted by ``enter(_:check:)``, until ``leave()`` or its release
    /// (a coordinator whose init threw, or that was released without `close()`).
    final class Registration: Sendable {
        let path: String
        private let left = Locked(false)

        fileprivate init(path: String) { self.path = path }

        func leave() {
            guard left.withLock({ left in defer { left = true }; return !left }) else { return }
            counts.withLock { counts in
                guard let count = counts[path] else { return }
                counts[path] = count > 1 ? count - 1 : nil
            }
        }

        deinit { leave() }
    }

    /// Counts an opening of `path`; the first (none open in this process) runs `check` first,
    /// under the registry's lock, so that no other opening in this process starts its connections
    /// meanwhile (the check opens and closes a descriptor of the `-shm`, and closing any descriptor
    /// of a file drops the process's POSIX locks on it). A `check` that throws counts nothing.
    static func enter(_ path: String, check: () throws -> Void) throws -> Registration {
        let key = key(path)
        try counts.withLock { counts in
            if counts[key, default: 0] == 0 { try check() }
            counts[key, default: 0] += 1
        }
        return Registration(path: key)
    }

    /// Whether this process has `path` open through a coordinator.
    static func contains(_ path: String) -> Bool {
        let key = key(path)
        return counts.withLock { $0[key] != nil }
    }
}

extension WALScanner {
    /// Whether a connection of another process holds the store's write-ahead log: every
    /// connection holds a shared lock on the `-shm`'s dead-man-switch byte (offset 128 in SQLite's
    /// unix VFS) while it has the log open; recovery runs only when none does.
    static func logHeldElsewhere(_ databasePath: String) -> Bool {
        let descriptor = open(databasePath + "-shm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 128
        probe.l_len = 1
        guard fcntl(descriptor, F_GETLK, &probe) == 0 else { return true }
        return probe.l_type != Int16(F_UNLCK)
    }

    /// The damage of a log SQLite's recovery is about to read, or `nil` (no log, a log another
    /// process holds, an intact one). Called with no connection of this process open on the store.
    static func damageBeforeRecovery(_ databasePath: String) throws -> WALDamage? {
        guard FileManager.default.fileExists(atPath: databasePath + "-wal"), !logHeldElsewhere(databasePath) else { return nil }
        return try scan(databasePath: databasePath)
    }

    /// Before a coordinator's first opening of `databasePath` in this process: refuses a damaged
    /// log (``StoreError/walDamaged(_:)``), or, when `accepts`, keeps a copy of it beside the store
    /// and lets recovery drop what the damage describes.
    @discardableResult
    static func checkBeforeOpening(_ databasePath: String, accepts: Bool) throws -> WALDamage? {
        guard let damage = try damageBeforeRecovery(databasePath) else { return nil }
        guard accepts else { throw StoreError.walDamaged(damage) }
        let kept = databasePath + "-wal.damaged-\(Int(Date().timeIntervalSince1970))"
        // A copy kept in the same second by an earlier opening: replaced (copyItem refuses to).
        if FileManager.default.fileExists(atPath: kept) { try FileManager.default.removeItem(atPath: kept) }
        try FileManager.default.copyItem(atPath: damage.path, toPath: kept)
        return damage
    }
}
