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
        defer { try? handle.close() }
        let bytes = try handle.readToEnd() ?? Data()
        guard bytes.count > headerSize else { return nil }
        let fallbackPageSize = databasePageSize(databasePath)
        return bytes.withUnsafeBytes { raw in
            scan(raw.bindMemory(to: UInt8.self), path: walPath, databasePageSize: fallbackPageSize)
        }
    }

    /// The page size in the database file's header (bytes 16–17; 1 means 65,536).
    static func databasePageSize(_ path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 100), header.count >= 18 else { return nil }
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
        var seed = checksum(log, from: 0, count: 24, bigEndian: bigEndian, seed: (0, 0))
        let headerValid = magicValid && u32(4) == 3_007_000 && validPageSize(headerPageSize)
            && seed == (u32(24), u32(28))
        let pageSize = validPageSize(headerPageSize) ? headerPageSize : (databasePageSize ?? 4096)
        let frameSize = frameHeaderSize + pageSize
        let frames = (log.count - headerSize) / frameSize
        guard frames > 0 else { return nil }
        func frameOffset(_ index: Int) -> Int { headerSize + index * frameSize }
        // Recovery's pass: frames accepted while salts and the cumulative checksum hold.
        var kept = 0
        var broken = 0
        if headerValid {
            broken = frames
            for index in 0..<frames {
                let offset = frameOffset(index)
                let ok = u32(offset) != 0 && (u32(offset + 8), u32(offset + 12)) == salts
                let next = checksum(log, from: offset, count: 8, bigEndian: bigEndian, seed: seed)
                let sum = checksum(log, from: offset + frameHeaderSize, count: pageSize, bigEndian: bigEndian, seed: next)
                guard ok, sum == (u32(offset + 16), u32(offset + 20)) else {
                    broken = index
                    break
                }
                seed = sum
                if u32(offset + 4) != 0 { kept += 1 }
            }
            guard broken < frames else { return nil }
        }
        // Beyond the break: commit frames with the log's salts whose own checksum, started from
        // the checksums the frame before stores, holds.
        /// Frame `index`'s checksum from `seed`.
        func sum(of index: Int, from seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
            let offset = frameOffset(index)
            let next = checksum(log, from: offset, count: 8, bigEndian: bigEndian, seed: seed)
            return checksum(log, from: offset + frameHeaderSize, count: pageSize, bigEndian: bigEndian, seed: next)
        }
        func stored(_ index: Int) -> (UInt32, UInt32) {
            index < 0 ? (u32(24), u32(28)) : (u32(frameOffset(index) + 16), u32(frameOffset(index) + 20))
        }
        /// Whether frame `index`'s own checksum holds, started from the checksums the frame before
        /// stores, or from what they should be (the frame before recomputed from the one before
        /// it: damage to the stored checksums alone must not hide the frames after them).
        func holds(_ index: Int) -> Bool {
            let expected = stored(index)
            if sum(of: index, from: stored(index - 1)) == expected { return true }
            guard index >= 1 else { return false }
            return sum(of: index, from: sum(of: index - 1, from: stored(index - 2))) == expected
        }
        var lost: [Int] = []
        for index in (broken + 1)..<max(frames, broken + 1) where index < frames {
            let offset = frameOffset(index)
            guard u32(offset) != 0, u32(offset + 4) != 0, (u32(offset + 8), u32(offset + 12)) == salts else { continue }
            if holds(index) { lost.append(index + 1) }
        }
        // A damaged header: SQLite ignores the whole log. Its first frame's checksum starts from
        // the header's stored checksum, which a flip elsewhere in the header leaves intact.
        if !headerValid {
            let offset = frameOffset(0)
            if u32(offset) != 0, u32(offset + 4) != 0, (u32(offset + 8), u32(offset + 12)) == salts,
               sum(of: 0, from: stored(-1)) == stored(0) || sum(of: 0, from: checksum(log, from: 0, count: 24, bigEndian: bigEndian, seed: (0, 0))) == stored(0) {
                lost.insert(1, at: 0)
            }
            if lost.isEmpty {
                // Frames whose salts agree with one another and commit: the header's salts may be the damage.
                let firstSalts = (u32(frameOffset(0) + 8), u32(frameOffset(0) + 12))
                for index in 1..<max(frames, 1) where index < frames {
                    let offset = frameOffset(index)
                    guard u32(offset) != 0, u32(offset + 4) != 0, (u32(offset + 8), u32(offset + 12)) == firstSalts else { continue }
                    if holds(index) { lost.append(index + 1) }
                }
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

    /// Counts an opening of `path`; the first (none open in this process) runs `check` first,
    /// under the registry's lock, so that no other opening in this process starts its connections
    /// meanwhile (the check opens and closes a descriptor of the `-shm`, and closing any descriptor
    /// of a file drops the process's POSIX locks on it). A `check` that throws counts nothing.
    static func enter(_ path: String, check: () throws -> Void) throws {
        let key = key(path)
        try counts.withLock { counts in
            if counts[key, default: 0] == 0 { try check() }
            counts[key, default: 0] += 1
        }
    }

    static func leave(_ path: String) {
        let key = key(path)
        counts.withLock { counts in
            guard let count = counts[key] else { return }
            counts[key] = count > 1 ? count - 1 : nil
        }
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
    static func checkBeforeOpening(_ databasePath: String, accepts: Bool) throws {
        guard let damage = try damageBeforeRecovery(databasePath) else { return }
        guard accepts else { throw StoreError.walDamaged(damage) }
        let kept = databasePath + "-wal.damaged-\(Int(Date().timeIntervalSince1970))"
        try? FileManager.default.removeItem(atPath: kept)
        try FileManager.default.copyItem(atPath: damage.path, toPath: kept)
    }
}
