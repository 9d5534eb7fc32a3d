#ifndef STRATA_VFS_H
#define STRATA_VFS_H

#include <sqlite3.h>
#include <stdint.h>

/// The name of Strata's checksumming VFS shim ("strata-checksum"). It wraps SQLite's default
/// VFS and is never made the default: only connections that name it use it.
#define STRATA_VFS_NAME "strata-checksum"

/// Bytes reserved at the end of every page of a checksummed store (SQLite header byte 20).
#define STRATA_CHECKSUM_RESERVE 8

/// `PRAGMA application_id` of a checksummed store ("STRC"). A second mark beside header byte 20:
/// a single flipped byte can't make a checksummed file look unchecksummed.
#define STRATA_CHECKSUM_APPLICATION_ID 0x53545243

/// `sqlite3_file_control(db, "main", STRATA_FCNTL_PAGE_STATE, &state)` fills a
/// `StrataPageState` for the main database file of a connection opened through the shim.
#define STRATA_FCNTL_PAGE_STATE 0x53540001

typedef struct StrataPageState {
    /// 1 when the file carries page checksums (header byte 20 is 8 or the application id says so).
    int32_t checksummed;
    /// The page size the shim last read from the header (0 before the header was read).
    int32_t pageSize;
    /// Checksum mismatches this file (and its WAL) reported since it was opened.
    int64_t faults;
    /// The page number of the last mismatch (1-based), 0 when none.
    int64_t lastFaultPage;
    /// 1 when the last mismatch was in a WAL frame, 0 when in the database file.
    int32_t lastFaultInWAL;
    int32_t reserved;
} StrataPageState;

/// Registers the shim (once; thread-safe). Returns SQLITE_OK or SQLite's error code.
int strata_vfs_register(void);

/// Writes the 8-byte checksum of `page[0 ..< size - 8]` to `out`. `size` is a page size
/// (a power of two from 512 to 65536).
void strata_page_checksum(const unsigned char *page, int size, unsigned char out[8]);

/// The same checksum computed one word at a time: the definition `strata_page_checksum` (four
/// words at a time where SSE2 is there) is tested against.
void strata_page_checksum_reference(const unsigned char *page, int size, unsigned char out[8]);

/// 1 when a database header (its first 100 bytes) marks a checksummed store: reserve byte 20 is
/// 8 or the application id is STRATA_CHECKSUM_APPLICATION_ID. The shim and `store check` share it.
int strata_header_is_checksummed(const unsigned char header[100]);

/// 1 when the last 8 bytes of the page are its checksum, 0 otherwise.
int strata_page_checksum_matches(const unsigned char *page, int size);

/// Whether closing the last connection to a WAL database checkpoints it
/// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`, which Swift cannot call: `sqlite3_db_config` is variadic).
int strata_set_checkpoint_on_close(sqlite3 *db, int enabled);

#endif
