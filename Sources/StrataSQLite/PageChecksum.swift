internal import CStrataVFS

/// What Strata's checksum VFS knows about a connection's main database file.
public struct PageChecksumState: Sendable, Equatable {
    /// Whether the file carries page checksums.
    public var checksummed: Bool
    /// The page size read from the file's header (0 before it was read).
    public var pageSize: Int
    /// Checksum mismatches reported since the file was opened.
    public var faults: Int
    /// The last page whose checksum failed.
    public var lastFaultPage: Int?
}

/// The checksum Strata's VFS keeps in the last 8 bytes of every page of a checksummed store.
///
/// Two 32-bit sums over the page's little-endian 32-bit words (Fletcher's construction, seeded
/// so that a zeroed page fails): any single changed byte changes the first sum. The VFS writes it
/// with the page and checks it on every whole-page read; `strata store check` checks every page.
public enum PageChecksum {
    /// Bytes reserved at the end of each page (SQLite header byte 20).
    public static let reservedBytes = Int(STRATA_CHECKSUM_RESERVE)
    /// The `application_id` of a checksummed store.
    public static let applicationID = Int64(STRATA_CHECKSUM_APPLICATION_ID)

    /// Whether a database header (at least its first 100 bytes) marks a checksummed store: the
    /// rule Strata's VFS applies (reserve byte 20 is 8, or the application id is ``applicationID``).
    public static func headerIsChecksummed(_ header: [UInt8]) -> Bool {
        guard header.count >= 100 else { return false }
        return header.withUnsafeBufferPointer { strata_header_is_checksummed($0.baseAddress!) != 0 }
    }

    /// Whether the last 8 bytes of `page` are the checksum of the rest. `page.count` is a page
    /// size (a power of two from 512 to 65,536); anything else is `false`.
    public static func matches(_ page: UnsafeRawBufferPointer) -> Bool {
        let size = page.count
        guard size >= 512, size <= 65_536, size & (size - 1) == 0, let base = page.baseAddress else { return false }
        return strata_page_checksum_matches(base.assumingMemoryBound(to: UInt8.self), Int32(size)) != 0
    }

    /// Whether the last 8 bytes of `page` are the checksum of the rest.
    public static func matches(_ page: [UInt8]) -> Bool { page.withUnsafeBytes { matches($0) } }

    /// The checksum of `page[0 ..< page.count - 8]` as the VFS computes it (four words at a time
    /// where the CPU has SSE2), and as its word-at-a-time definition computes it: the two must
    /// always agree (`PageChecksumTests`, through `@testable import`). `page.count` is a page size.
    static func sums(of page: [UInt8]) -> (fast: [UInt8], reference: [UInt8]) {
        precondition(page.count >= 512 && page.count <= 65_536 && page.count & (page.count - 1) == 0,
                     "PageChecksum.sums(of:) takes a page: a power of two from 512 to 65,536 bytes")
        var fast = [UInt8](repeating: 0, count: 8), reference = fast
        page.withUnsafeBufferPointer { bytes in
            strata_page_checksum(bytes.baseAddress!, Int32(page.count), &fast)
            strata_page_checksum_reference(bytes.baseAddress!, Int32(page.count), &reference)
        }
        return (fast, reference)
    }
}

/// The checksum VFS's WAL frame seals: a frame's cumulative checksum starts from the frame
/// before's, which the VFS keeps from sealing that frame (instead of reading it back) while it
/// may. Counts and a check for tests; nothing to set in normal use.
public enum WALSeals {
    public struct Counts: Sendable, Equatable {
        /// Frames sealed from the frame before's seal kept in memory.
        public var kept: Int
        /// Frames sealed from the frame before's checksum read back from the log.
        public var readBack: Int
        /// Kept seals that differed from the log (under ``Verification/count`` or ``Verification/abort``).
        public var mismatches: Int
    }

    public enum Verification: Int32, Sendable {
        /// Kept seals are trusted.
        case off = 0
        /// Each kept seal is compared with the log; a difference is counted and the log's used.
        case count = 1
        /// A difference ends the process (`STRATA_VFS_VERIFY_SEALS=abort` in a child's environment).
        case abort = 2
    }

    /// This process's counts since it started.
    public static var counts: Counts {
        var kept: Int64 = 0, readBack: Int64 = 0, mismatches: Int64 = 0
        strata_wal_seal_counts(&kept, &readBack, &mismatches)
        return Counts(kept: Int(kept), readBack: Int(readBack), mismatches: Int(mismatches))
    }

    /// Sets this process's verification of kept seals.
    public static func setVerification(_ verification: Verification) {
        strata_wal_seal_verification(verification.rawValue)
    }
}
