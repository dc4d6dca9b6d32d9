/*
 * page_i.h - one encrypted page: layout, keys, seal and open
 * (private to the encryption layer: page.c, used by sqlite/vfs.c,
 * sqlite/check.c and sqlite/rekey.c).
 *
 * Layout of every page of P bytes (docs/encryption.md has the full table):
 *
 *   [0, P-48)      ciphertext (page 1 of a database file: bytes 0-15 are
 *                  the file's random salt, 16-23 SQLite's header bytes in
 *                  the clear (page size, versions, reserve), authenticated;
 *                  ciphertext from 24)
 *   [P-48, P-24)   XChaCha20 nonce, random for every write
 *   [P-24, P-8)    Poly1305 tag
 *   P-8            format version (CRYPT_FORMAT)
 *   P-7            kdf byte (CRYPT_KDF_*)
 *   [P-6, P)       key check value: BLAKE2b(root key, "SQE1/kcv")[0..6]
 *
 * SQLite reserves these 48 bytes (SQLITE_FCNTL_RESERVE_BYTES) and always
 * sees them as zeros: the page it wrote is exactly the page it reads back,
 * so its WAL frame and journal checksums, computed over the page as it
 * holds it, stay valid across a crash.
 */
#ifndef STATEFS_CRYPT_PAGE_I_H
#define STATEFS_CRYPT_PAGE_I_H

#include <stddef.h>
#include <stdint.h>

#include "crypt_i.h"

#define CP_RESERVE 48
#define CP_KCV_BYTES 6
#define CP_MIN_PAGE 1024
#define CP_MAX_PAGE 65536
#define CP_WAL_HDR 32        /* WAL file header */
#define CP_FRAME_HDR 24      /* WAL frame header */

/* What a file holds pages for; bound into every page. */
enum { CP_DB = 1, CP_WAL = 2, CP_JOURNAL = 3 };

/* The keys of one database file (and its WAL and journal). Lives in
 * sodium_malloc'd memory: cp_filekey_new / cp_filekey_free. */
typedef struct cp_filekey {
	unsigned char salt[CRYPT_SALT_BYTES];
	unsigned char page_key[32];
	unsigned char kcv[CP_KCV_BYTES];
	int kdf;
} cp_filekey;

cp_filekey *cp_filekey_new(void);
void cp_filekey_free(cp_filekey *fk);

/* Derives fk from the key for a file with this salt and kdf byte. Returns
 * SFS_OK, SFS_WRONGKEY (the key's type does not fit kdf; no detail) or
 * SFS_NOMEM. */
int cp_derive(const sfs_key *key, const unsigned char *salt, int kdf,
              cp_filekey *fk);

/* Where a WAL page sits: its frame index (1-based) and the first 8 bytes
 * of its frame header (page number, commit size). NULL for db/journal. */
typedef struct cp_walpos {
	uint32_t frame;
	const unsigned char *hdr8;
} cp_walpos;

/* Seals the plaintext page src (P bytes, reserve all zero) into dst (may be
 * src). kind and pgno as above; page 1 of CP_DB gets the salt layout. */
void cp_seal(const cp_filekey *fk, int kind, uint32_t pgno,
             const cp_walpos *wal, const unsigned char *src,
             unsigned char *dst, uint32_t P);

/* XChaCha20-Poly1305-IETF, detached (aead.c): libsodium's
 * crypto_aead_xchacha20poly1305_ietf_{en,de}crypt_detached byte for byte,
 * computed by libcrypto where it can. m and c may be the same buffer.
 * cp_aead_open returns 0, or -1 when the tag does not match (m is then
 * all zeros, as libsodium leaves it). */
void cp_aead_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
                  size_t n, const unsigned char *ad, size_t adlen,
                  const unsigned char nonce[24], const unsigned char *key);
int cp_aead_open(unsigned char *m, const unsigned char *c, size_t n,
                 const unsigned char *tag, const unsigned char *ad,
                 size_t adlen, const unsigned char nonce[24],
                 const unsigned char *key);
/* For tests and benchmarks: on 0 every call takes libsodium's path, on 1
 * libcrypto's where it has the cipher (the default), on -1 nothing
 * changes. Returns whether libcrypto has the cipher. */
int cp_aead_libcrypto(int on);

/* Results of cp_open. */
enum {
	CP_OK = 0,
	CP_AUTH,        /* tag mismatch: tampered, torn or misplaced */
	CP_OTHERKEY,    /* key check value of another key */
	CP_BADFMT,      /* unknown format byte */
	CP_HOLE,        /* nonce and tag all zero: never written */
};

/* Authenticates and decrypts page (P bytes) in place. On CP_OK the page is
 * what SQLite wrote: reserve zero, page 1 magic restored. On failure the
 * content is unspecified (never the ciphertext passed off as data): the
 * caller zeroes it or reports. */
int cp_open(const cp_filekey *fk, int kind, uint32_t pgno,
            const cp_walpos *wal, unsigned char *page, uint32_t P);

/* A sentence for a cp_open failure, for the error detail. */
const char *cp_reason(int r);

/* Page size from SQLite header bytes 16-17 (1 means 65536); 0 if invalid. */
uint32_t cp_page_size(const unsigned char *hdr);

/* Does this 24-byte file start look like an encrypted statefs file (valid
 * page size, reserve 48, SQLite's fixed payload fractions)? */
int cp_is_encrypted_header(const unsigned char *hdr);

/* 1 when the n bytes at p are all zero. */
int cp_all_zero(const unsigned char *p, size_t n);

static inline uint32_t cp_get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void cp_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Process-wide counters behind crypt_stats_get. */
void cp_count(int what, int kind);
enum { CP_COUNT_ENC, CP_COUNT_DEC, CP_COUNT_FAIL, CP_COUNT_TEMP };

#endif /* STATEFS_CRYPT_PAGE_I_H */
