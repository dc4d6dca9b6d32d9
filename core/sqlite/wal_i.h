/*
 * wal_i.h - SQLite's WAL checksum chain, as the encrypting VFS (vfs.c)
 * and verify (check.c) read it: wal.c. Private to core/sqlite/: the chain
 * is SQLite's format, the pages in it are core/crypt/'s (page_i.h).
 */
#ifndef STATEFS_SQLITE_WAL_I_H
#define STATEFS_SQLITE_WAL_I_H

#include <stddef.h>
#include <stdint.h>

#include "crypt/page_i.h"

/* Why SQLite's recovery ends the log at a frame whose page opens. */
enum {
	CP_WAL_OTHER = 16, /* salts of another generation (or zeroed) */
	CP_WAL_CHAIN,      /* this generation, but page number 0 or a
	                      checksum that does not continue the chain */
};

/* Adds n bytes (a multiple of 8) to SQLite's running WAL checksum s, in
 * big-endian words if big (the header's magic & 1), else little-endian. */
void cp_wal_cksum(int big, const unsigned char *p, size_t n, uint32_t s[2]);

/* 1 if whdr (the 32-byte WAL header) is one SQLite accepts for pages of P
 * bytes, with its checksum, where the frames' chain starts, in ck; else 0
 * (SQLite ignores such a log). */
int cp_wal_header(const unsigned char *whdr, uint32_t P, uint32_t ck[2]);

/* SQLite's verdict on frame k (header and page, P + 24 bytes, as on disk;
 * the page is opened in place) given the chain through the frame before it
 * (prev): CP_OK when the log goes on through it, else why it ends there,
 * CP_WAL_OTHER, CP_WAL_CHAIN or a cp_open failure of the page. Whenever
 * the page opens, next gets the checksum the frame would have on top of
 * prev, whatever its header says. */
int cp_wal_frame(const cp_filekey *fk, const unsigned char *whdr, uint32_t P,
                 uint32_t k, unsigned char *frame, const uint32_t prev[2],
                 uint32_t next[2]);

/* Reads n bytes at off of a WAL: 0, or nonzero for an error or a short
 * read. */
typedef int (*cp_wal_read_fn)(void *ctx, void *buf, size_t n, int64_t off);

/* The log ended at frame k. Returns the first later frame that proves it
 * should not have: a commit frame of this generation whose page opens and
 * whose checksum continues the chain from the frame before it (from after,
 * the chain through frame k, for frame k + 1); 0 when there is none, as
 * after a crash. buf holds P + 24 bytes. */
uint32_t cp_wal_commit_after(cp_wal_read_fn rd, void *ctx,
                             const cp_filekey *fk, const unsigned char *whdr,
                             uint32_t P, uint32_t k, const uint32_t after[2],
                             unsigned char *buf);

/* A sentence for a cp_wal_frame result. */
const char *cp_wal_reason(int r);

#endif /* STATEFS_SQLITE_WAL_I_H */
