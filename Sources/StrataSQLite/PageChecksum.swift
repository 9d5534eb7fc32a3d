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
