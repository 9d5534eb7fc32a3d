// Strata's page-checksum VFS shim.
//
// Every page of a checksummed store ends in 8 reserved bytes (SQLite header byte 20 = 8) that
// hold a checksum of the rest of the page. The shim writes it when SQLite writes a page (to the
// database file or to the WAL) and verifies it when SQLite reads a whole page; a mismatch is
// SQLITE_IOERR_DATA, the buffer is zeroed, and the page number is kept for the caller
// (STRATA_FCNTL_PAGE_STATE). SQLite never sees the bad bytes.
//
// The WAL needs care: SQLite computes a WAL frame's own checksum over the page *before* it
// writes the frame, so filling in our checksum while the page is written would make every frame
// fail SQLite's check during crash recovery (and recovery would drop committed transactions).
// The shim therefore holds back each 24-byte frame header, and when the page that follows it is
// written, fills in the page checksum and recomputes the frame's cumulative checksum from the
// previous frame's (read back from the file), exactly as SQLite's WAL format defines it.
//
// Design notes and what is and is not detected: Strata.docc/CrashGuarantees.md.

#include "strata_vfs.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct StrataFile StrataFile;

struct StrataFile {
    sqlite3_file base;
    sqlite3_file *real;          // the wrapped file: memory right after this struct
    const char *name;
    int isWAL;
    int checksummed;             // main: learned from the header; WAL: read from the partner
    int forced;                  // main: opened with the URI parameter strata_checksums=1
    int pageSize;                // main: learned from the header
    int inCheckpoint;
    StrataFile *partner;         // main <-> WAL of the same connection
    int64_t faults;
    int64_t lastFaultPage;
    int lastFaultInWAL;
    // WAL only: a frame header held back until its page is written.
    int hasPendingHeader;
    sqlite3_int64 pendingOffset;
    unsigned char pendingHeader[24];
};

static sqlite3_vfs strataVFS;
static sqlite3_io_methods strataMethods;

#define REAL_VFS(vfs) ((sqlite3_vfs *)((vfs)->pAppData))

// MARK: - Byte order helpers (host-independent)

static uint32_t readLE32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint32_t readBE32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void writeLE32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

static void writeBE32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static int isPageSize(int n) { return n >= 512 && n <= 65536 && (n & (n - 1)) == 0; }

// MARK: - The page checksum

// A Fletcher-style pair of 32-bit sums over the page's little-endian 32-bit words. `a` alone
// changes whenever any one word changes (by d != 0 mod 2^32), so every single-byte change is
// detected; `b` weighs each word by its position, so swapped words are detected too. Both start
// from non-zero seeds, so a page of zeros (a zeroed disk block) does not carry a valid checksum.
// The words from `p` to `end` one at a time, then the two sums written out (both versions'
// tail: a page's size less 8 is not a multiple of 16 bytes).
static void finishChecksum(const unsigned char *p, const unsigned char *end, uint32_t a, uint32_t b, unsigned char out[8]) {
    while (p < end) {
        a += readLE32(p);
        b += a;
        p += 4;
    }
    writeLE32(out, a);
    writeLE32(out + 4, b);
}

void strata_page_checksum_reference(const unsigned char *page, int size, unsigned char out[8]) {
    uint32_t a = 0x53545241u, b = 0x54414b31u;
    const unsigned char *p = page, *end = page + size - 8;
    while (p + 16 <= end) {
        uint32_t w0 = readLE32(p), w1 = readLE32(p + 4), w2 = readLE32(p + 8), w3 = readLE32(p + 12);
        b += 4u * a + 4u * w0 + 3u * w1 + 2u * w2 + w3;
        a += w0 + w1 + w2 + w3;
        p += 16;
    }
    finishChecksum(p, end, a, b, out);
}

#if defined(__SSE2__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <emmintrin.h>

// The same sums, four words at a time. Over the N words w[0] ..< w[N] of the blocks,
//   a = a0 + S,   b = b0 + N * a0 + sum over n of (N - n) * w[n]     (mod 2^32),
// and with n = 4i + l (block i, lane l, M blocks), N - n = 4 (M - 1 - i) + (4 - l), so
//   sum of (N - n) w[n] = 4 * sum over l of t[l] + sum over l of (4 - l) s[l],
// where lane l keeps s[l] = sum over i of w[4i + l] and t[l] = sum over i of (M - 1 - i) w[4i + l]
// (t adds s before each block adds its word). Three vector operations per 16 bytes where the
// reference takes about fourteen scalar ones; the tail goes on as the reference does.
// PageChecksumTests compares the two on random and extreme pages of every page size.
void strata_page_checksum(const unsigned char *page, int size, unsigned char out[8]) {
    const uint32_t a0 = 0x53545241u, b0 = 0x54414b31u;
    const unsigned char *p = page, *end = page + size - 8;
    __m128i s = _mm_setzero_si128(), t = _mm_setzero_si128();
    uint32_t blocks = 0;
    while (p + 16 <= end) {
        t = _mm_add_epi32(t, s);
        s = _mm_add_epi32(s, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        blocks += 1;
    }
    uint32_t sl[4], tl[4];
    _mm_storeu_si128((__m128i *)sl, s);
    _mm_storeu_si128((__m128i *)tl, t);
    uint32_t words = 4u * blocks;
    uint32_t a = a0 + sl[0] + sl[1] + sl[2] + sl[3];
    uint32_t b = b0 + words * a0 + 4u * (tl[0] + tl[1] + tl[2] + tl[3])
        + 4u * sl[0] + 3u * sl[1] + 2u * sl[2] + sl[3];
    finishChecksum(p, end, a, b, out);
}
#else
void strata_page_checksum(const unsigned char *page, int size, unsigned char out[8]) {
    strata_page_checksum_reference(page, size, out);
}
#endif

int strata_page_checksum_matches(const unsigned char *page, int size) {
    unsigned char sum[8];
    strata_page_checksum(page, size, sum);
    return memcmp(sum, page + size - 8, 8) == 0;
}

// MARK: - Header

int strata_header_is_checksummed(const unsigned char header[100]) {
    return header[20] == STRATA_CHECKSUM_RESERVE || readBE32(header + 68) == (uint32_t)STRATA_CHECKSUM_APPLICATION_ID;
}

// Learns the checksum flag and page size from a buffer that starts at offset 0 of the database.
static void learnHeader(StrataFile *file, const unsigned char *header, int amount) {
    if (amount < 100 || memcmp(header, "SQLite format 3", 16) != 0) return;
    int pageSize = (header[16] << 8) | (header[17] << 16);
    if (isPageSize(pageSize)) file->pageSize = pageSize;
    file->checksummed = file->forced || strata_header_is_checksummed(header);
}

static int checksummed(StrataFile *file) {
    if (file->isWAL) return file->partner != NULL && file->partner->checksummed;
    return file->checksummed;
}

static void recordFault(StrataFile *file, int64_t page) {
    StrataFile *main = file->isWAL ? file->partner : file;
    if (main == NULL) main = file;
    main->faults += 1;
    main->lastFaultPage = page;
    main->lastFaultInWAL = file->isWAL;
    sqlite3_log(SQLITE_IOERR_DATA, "strata: page %lld of %s fails its checksum", (long long)page,
                file->name ? file->name : "?");
}

// MARK: - WAL frames

// SQLite's WAL checksum (file format, section 4.3): pairs of 32-bit words, in the byte order the
// WAL header's magic number names.
static void walChecksum(int bigEndian, const unsigned char *data, int size, uint32_t sum[2]) {
    uint32_t s1 = sum[0], s2 = sum[1];
    for (int i = 0; i + 8 <= size; i += 8) {
        uint32_t w0 = bigEndian ? readBE32(data + i) : readLE32(data + i);
        uint32_t w1 = bigEndian ? readBE32(data + i + 4) : readLE32(data + i + 4);
        s1 += w0 + s2;
        s2 += w1 + s1;
    }
    sum[0] = s1;
    sum[1] = s2;
}

static int flushPendingHeader(StrataFile *file) {
    if (!file->hasPendingHeader) return SQLITE_OK;
    int rc = file->real->pMethods->xWrite(file->real, file->pendingHeader, 24, file->pendingOffset);
    // Kept on a failure: the next flush writes it again.
    if (rc == SQLITE_OK) file->hasPendingHeader = 0;
    return rc;
}

// Recomputes the held-back frame header's checksum over the page as it will be written.
static int resealFrameHeader(StrataFile *file, const unsigned char *page, int pageSize) {
    unsigned char *header = file->pendingHeader;
    static const unsigned char zeros[16] = {0};
    // SQLite writes salt and checksum as zeros when it will rewrite the checksums of this
    // transaction's frames itself (from the file, after this write): leave those alone.
    if (memcmp(header + 8, zeros, 16) == 0) return SQLITE_OK;
    unsigned char walHeader[32];
    int rc = file->real->pMethods->xRead(file->real, walHeader, 32, 0);
    if (rc != SQLITE_OK) return rc;
    int bigEndian = (int)(readBE32(walHeader) & 1);
    sqlite3_int64 frameSize = (sqlite3_int64)pageSize + 24;
    sqlite3_int64 index = (file->pendingOffset - 32) / frameSize;
    uint32_t sum[2];
    if (index == 0) {
        sum[0] = readBE32(walHeader + 24);
        sum[1] = readBE32(walHeader + 28);
    } else {
        unsigned char previous[8];
        rc = file->real->pMethods->xRead(file->real, previous, 8, file->pendingOffset - frameSize + 16);
        if (rc != SQLITE_OK) return rc;
        sum[0] = readBE32(previous);
        sum[1] = readBE32(previous + 4);
    }
    walChecksum(bigEndian, header, 8, sum);
    walChecksum(bigEndian, page, pageSize, sum);
    writeBE32(header + 16, sum[0]);
    writeBE32(header + 20, sum[1]);
    return SQLITE_OK;
}

// MARK: - I/O methods

static int strataClose(sqlite3_file *handle) {
    StrataFile *file = (StrataFile *)handle;
    int flushed = flushPendingHeader(file);
    if (file->partner != NULL) {
        file->partner->partner = NULL;
        file->partner = NULL;
    }
    int rc = file->real->pMethods->xClose(file->real);
    return rc != SQLITE_OK ? rc : flushed;
}

static int strataRead(sqlite3_file *handle, void *buffer, int amount, sqlite3_int64 offset) {
    StrataFile *file = (StrataFile *)handle;
    int rc = flushPendingHeader(file);
    if (rc != SQLITE_OK) return rc;
    rc = file->real->pMethods->xRead(file->real, buffer, amount, offset);
    if (rc != SQLITE_OK) return rc;
    unsigned char *bytes = buffer;
    if (!file->isWAL) {
        if (offset == 0) learnHeader(file, bytes, amount);
        if (file->checksummed && isPageSize(amount) && offset % amount == 0
            && !strata_page_checksum_matches(bytes, amount)) {
            recordFault(file, offset / amount + 1);
            memset(buffer, 0, (size_t)amount);
            return SQLITE_IOERR_DATA;
        }
        return SQLITE_OK;
    }
    // A page read from a WAL frame (not the whole-frame reads of recovery, whose torn tail is
    // SQLite's to judge by its frame checksums). Page 1 carries the header: a new store's first
    // pages may exist only in the WAL.
    if (isPageSize(amount) && file->partner != NULL && memcmp(bytes, "SQLite format 3", 16) == 0) {
        learnHeader(file->partner, bytes, amount);
    }
    if (checksummed(file) && isPageSize(amount) && offset >= 56 && (offset - 56) % (amount + 24) == 0
        && !strata_page_checksum_matches(bytes, amount)) {
        unsigned char frame[4];
        int64_t page = 0;
        if (file->real->pMethods->xRead(file->real, frame, 4, offset - 24) == SQLITE_OK) page = readBE32(frame);
        recordFault(file, page);
        memset(buffer, 0, (size_t)amount);
        return SQLITE_IOERR_DATA;
    }
    return SQLITE_OK;
}

static int strataWrite(sqlite3_file *handle, const void *buffer, int amount, sqlite3_int64 offset) {
    StrataFile *file = (StrataFile *)handle;
    // SQLite passes the page cache's own buffer; the reserved bytes at its end are the shim's
    // (header byte 20 told SQLite to leave them alone), so the checksum is written in place.
    unsigned char *bytes = (unsigned char *)buffer;
    if (!file->isWAL) {
        if (offset == 0) learnHeader(file, bytes, amount);
        // A checkpoint copies pages the WAL read already verified: their checksums stand.
        if (file->checksummed && !file->inCheckpoint && isPageSize(amount) && offset % amount == 0) {
            strata_page_checksum(bytes, amount, bytes + amount - 8);
        }
        return file->real->pMethods->xWrite(file->real, buffer, amount, offset);
    }
    if (amount == 24 && offset >= 32) {
        int rc = flushPendingHeader(file);
        if (rc != SQLITE_OK) return rc;
        memcpy(file->pendingHeader, bytes, 24);
        file->pendingOffset = offset;
        file->hasPendingHeader = 1;
        return SQLITE_OK;
    }
    if (isPageSize(amount)) {
        // Page 1 carries the header: a new store's first pages may reach the WAL before the
        // database file has one.
        if (file->partner != NULL && memcmp(bytes, "SQLite format 3", 16) == 0) learnHeader(file->partner, bytes, amount);
        if (checksummed(file)) {
            strata_page_checksum(bytes, amount, bytes + amount - 8);
            if (file->hasPendingHeader && file->pendingOffset + 24 == offset) {
                int rc = resealFrameHeader(file, bytes, amount);
                if (rc != SQLITE_OK) { file->hasPendingHeader = 0; return rc; }
            }
        }
    }
    int rc = flushPendingHeader(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xWrite(file->real, buffer, amount, offset);
}

static int strataTruncate(sqlite3_file *handle, sqlite3_int64 size) {
    StrataFile *file = (StrataFile *)handle;
    int rc = flushPendingHeader(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int strataSync(sqlite3_file *handle, int flags) {
    StrataFile *file = (StrataFile *)handle;
    int rc = flushPendingHeader(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xSync(file->real, flags);
}

static int strataFileSize(sqlite3_file *handle, sqlite3_int64 *size) {
    StrataFile *file = (StrataFile *)handle;
    int rc = flushPendingHeader(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int strataLock(sqlite3_file *handle, int level) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xLock(file->real, level);
}

static int strataUnlock(sqlite3_file *handle, int level) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xUnlock(file->real, level);
}

static int strataCheckReservedLock(sqlite3_file *handle, int *result) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xCheckReservedLock(file->real, result);
}

static int strataFileControl(sqlite3_file *handle, int op, void *argument) {
    StrataFile *file = (StrataFile *)handle;
    switch (op) {
    case STRATA_FCNTL_PAGE_STATE: {
        StrataPageState *state = argument;
        memset(state, 0, sizeof(*state));
        state->checksummed = checksummed(file);
        state->pageSize = file->pageSize;
        state->faults = file->faults;
        state->lastFaultPage = file->lastFaultPage;
        state->lastFaultInWAL = file->lastFaultInWAL;
        return SQLITE_OK;
    }
    case SQLITE_FCNTL_CKPT_START:
    case SQLITE_FCNTL_CKPT_DONE:
        file->inCheckpoint = op == SQLITE_FCNTL_CKPT_START;
        if (file->partner != NULL) file->partner->inCheckpoint = file->inCheckpoint;
        break;
    case SQLITE_FCNTL_PRAGMA: {
        // A checksummed store keeps its page size: the reserve is per page.
        char **arguments = argument;
        if (file->checksummed && arguments[1] != NULL && arguments[2] != NULL
            && sqlite3_stricmp(arguments[1], "page_size") == 0) {
            return SQLITE_OK;
        }
        break;
    }
    default:
        break;
    }
    int rc = file->real->pMethods->xFileControl(file->real, op, argument);
    if (rc == SQLITE_OK && op == SQLITE_FCNTL_VFSNAME) {
        *(char **)argument = sqlite3_mprintf("%s/%z", STRATA_VFS_NAME, *(char **)argument);
    }
    return rc;
}

static int strataSectorSize(sqlite3_file *handle) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xSectorSize(file->real);
}

static int strataDeviceCharacteristics(sqlite3_file *handle) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xDeviceCharacteristics(file->real);
}

static int strataShmMap(sqlite3_file *handle, int region, int size, int extend, void volatile **pointer) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xShmMap(file->real, region, size, extend, pointer);
}

// A frame header held back by the WAL (see strataWrite) must be in the file before the
// wal-index says its frame is committed and before another connection may write the log: a
// header SQLite writes alone (rewriting a transaction's checksums at its commit) has no page
// after it to flush it, and held until this connection's next use of the log it was both
// missing from the file (a crash dropped the commit on recovery) and written late over whatever
// another writer had put there since (a break in the middle of the log). SQLite writes the
// wal-index header between two barriers at every commit, and takes or gives back a lock on it
// around every transaction: both flush.
static int flushPartnerHeader(StrataFile *file) {
    if (file->isWAL || file->partner == NULL) return SQLITE_OK;
    return flushPendingHeader(file->partner);
}

static int strataShmLock(sqlite3_file *handle, int offset, int count, int flags) {
    StrataFile *file = (StrataFile *)handle;
    int rc = flushPartnerHeader(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xShmLock(file->real, offset, count, flags);
}

static void strataShmBarrier(sqlite3_file *handle) {
    StrataFile *file = (StrataFile *)handle;
    // No way to report a failed write from here: the header stays pending, and the lock
    // release that ends the transaction (or the next use of the log) writes it again (and
    // reports the failure).
    (void)flushPartnerHeader(file);
    file->real->pMethods->xShmBarrier(file->real);
}

static int strataShmUnmap(sqlite3_file *handle, int deleteFlag) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xShmUnmap(file->real, deleteFlag);
}

static int strataFetch(sqlite3_file *handle, sqlite3_int64 offset, int amount, void **pointer) {
    StrataFile *file = (StrataFile *)handle;
    // A memory-mapped page would bypass verification: make SQLite read it instead.
    if (checksummed(file)) { *pointer = NULL; return SQLITE_OK; }
    return file->real->pMethods->xFetch(file->real, offset, amount, pointer);
}

static int strataUnfetch(sqlite3_file *handle, sqlite3_int64 offset, void *pointer) {
    StrataFile *file = (StrataFile *)handle;
    return file->real->pMethods->xUnfetch(file->real, offset, pointer);
}

// MARK: - VFS methods

static int strataOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *handle, int flags, int *outFlags) {
    sqlite3_vfs *real = REAL_VFS(vfs);
    if ((flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) == 0) {
        return real->xOpen(real, name, handle, flags, outFlags);
    }
    StrataFile *file = (StrataFile *)handle;
    memset(file, 0, sizeof(*file));
    file->real = (sqlite3_file *)(file + 1);
    file->name = name;
    int rc = real->xOpen(real, name, file->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        handle->pMethods = NULL;
        return rc;
    }
    handle->pMethods = &strataMethods;
    if (flags & SQLITE_OPEN_WAL) {
        file->isWAL = 1;
        StrataFile *main = (StrataFile *)sqlite3_database_file_object(name);
        if (main != NULL && main->base.pMethods == &strataMethods) {
            file->partner = main;
            main->partner = file;
        }
    } else {
        // `VACUUM INTO 'file:...?strata_checksums=1'` (the rewrite that adds checksums): every
        // page of the new file is checksummed, even one SQLite spills before page 1.
        file->forced = sqlite3_uri_boolean(name, "strata_checksums", 0);
        file->checksummed = file->forced;
        unsigned char header[100];
        sqlite3_int64 size = 0;
        if (file->real->pMethods->xFileSize(file->real, &size) == SQLITE_OK && size >= 100
            && file->real->pMethods->xRead(file->real, header, 100, 0) == SQLITE_OK) {
            learnHeader(file, header, 100);
        }
    }
    return SQLITE_OK;
}

static int strataDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    return REAL_VFS(vfs)->xDelete(REAL_VFS(vfs), name, syncDirectory);
}

static int strataAccess(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    return REAL_VFS(vfs)->xAccess(REAL_VFS(vfs), name, flags, result);
}

static int strataFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    return REAL_VFS(vfs)->xFullPathname(REAL_VFS(vfs), name, size, out);
}

static void *strataDlOpen(sqlite3_vfs *vfs, const char *path) { return REAL_VFS(vfs)->xDlOpen(REAL_VFS(vfs), path); }

static void strataDlError(sqlite3_vfs *vfs, int size, char *message) { REAL_VFS(vfs)->xDlError(REAL_VFS(vfs), size, message); }

static void (*strataDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    return REAL_VFS(vfs)->xDlSym(REAL_VFS(vfs), library, symbol);
}

static void strataDlClose(sqlite3_vfs *vfs, void *library) { REAL_VFS(vfs)->xDlClose(REAL_VFS(vfs), library); }

static int strataRandomness(sqlite3_vfs *vfs, int size, char *out) { return REAL_VFS(vfs)->xRandomness(REAL_VFS(vfs), size, out); }

static int strataSleep(sqlite3_vfs *vfs, int microseconds) { return REAL_VFS(vfs)->xSleep(REAL_VFS(vfs), microseconds); }

static int strataCurrentTime(sqlite3_vfs *vfs, double *out) { return REAL_VFS(vfs)->xCurrentTime(REAL_VFS(vfs), out); }

static int strataGetLastError(sqlite3_vfs *vfs, int size, char *out) { return REAL_VFS(vfs)->xGetLastError(REAL_VFS(vfs), size, out); }

static int strataCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    return REAL_VFS(vfs)->xCurrentTimeInt64(REAL_VFS(vfs), out);
}

static int strataSetSystemCall(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr call) {
    return REAL_VFS(vfs)->xSetSystemCall(REAL_VFS(vfs), name, call);
}

static sqlite3_syscall_ptr strataGetSystemCall(sqlite3_vfs *vfs, const char *name) {
    return REAL_VFS(vfs)->xGetSystemCall(REAL_VFS(vfs), name);
}

static const char *strataNextSystemCall(sqlite3_vfs *vfs, const char *name) {
    return REAL_VFS(vfs)->xNextSystemCall(REAL_VFS(vfs), name);
}

// MARK: - Registration

static int registration = SQLITE_OK;
static pthread_once_t registrationOnce = PTHREAD_ONCE_INIT;

static void registerOnce(void) {
    registration = sqlite3_initialize();
    if (registration != SQLITE_OK) return;
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (real == NULL) { registration = SQLITE_ERROR; return; }
    strataMethods = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = strataClose, .xRead = strataRead, .xWrite = strataWrite, .xTruncate = strataTruncate,
        .xSync = strataSync, .xFileSize = strataFileSize, .xLock = strataLock, .xUnlock = strataUnlock,
        .xCheckReservedLock = strataCheckReservedLock, .xFileControl = strataFileControl,
        .xSectorSize = strataSectorSize, .xDeviceCharacteristics = strataDeviceCharacteristics,
        .xShmMap = strataShmMap, .xShmLock = strataShmLock, .xShmBarrier = strataShmBarrier,
        .xShmUnmap = strataShmUnmap, .xFetch = strataFetch, .xUnfetch = strataUnfetch,
    };
    strataVFS = (sqlite3_vfs){
        .iVersion = real->iVersion < 3 ? real->iVersion : 3,
        .szOsFile = (int)sizeof(StrataFile) + real->szOsFile,
        .mxPathname = real->mxPathname,
        .zName = STRATA_VFS_NAME,
        .pAppData = real,
        .xOpen = strataOpen, .xDelete = strataDelete, .xAccess = strataAccess,
        .xFullPathname = strataFullPathname, .xDlOpen = strataDlOpen, .xDlError = strataDlError,
        .xDlSym = strataDlSym, .xDlClose = strataDlClose, .xRandomness = strataRandomness,
        .xSleep = strataSleep, .xCurrentTime = strataCurrentTime, .xGetLastError = strataGetLastError,
        .xCurrentTimeInt64 = strataCurrentTimeInt64, .xSetSystemCall = strataSetSystemCall,
        .xGetSystemCall = strataGetSystemCall, .xNextSystemCall = strataNextSystemCall,
    };
    registration = sqlite3_vfs_register(&strataVFS, 0);
}

int strata_vfs_register(void) {
    pthread_once(&registrationOnce, registerOnce);
    return registration;
}

int strata_set_checkpoint_on_close(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, (int *)0);
}
