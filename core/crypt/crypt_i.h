/*
 * crypt_i.h - keys and page sealing as a backend sees them (private to
 * core/: the encryption layer, core/crypt/, and the backends that encrypt).
 *
 * core/crypt/ holds what does not depend on a database: the sfs_key
 * functions of statefs.h and the key internals below (key.c), and the
 * sealing of one page (page.c, page_i.h). A backend that encrypts builds
 * on these: the SQLite backend's VFS (core/sqlite/vfs_i.h) seals every page
 * of its files with them. Nothing here includes a database's header.
 *
 * Failures return sfs_status codes and set the thread's error detail
 * (sfs_errdetail).
 */
#ifndef STATEFS_CRYPT_I_H
#define STATEFS_CRYPT_I_H

#include "statefs.h"

/* ---- Keys (key.c) */

#define CRYPT_SALT_BYTES 16
#define CRYPT_FORMAT 1          /* the on-disk format this code writes */

/* The kdf byte of every page trailer: how the root key comes from the key. */
enum {
	CRYPT_KDF_RAW = 0,          /* the 32-byte key is the root key */
	CRYPT_KDF_INTERACTIVE = 1,  /* Argon2id, libsodium's INTERACTIVE limits */
	CRYPT_KDF_MODERATE = 2,     /* Argon2id, MODERATE (what new files get) */
	CRYPT_KDF_SENSITIVE = 3,    /* Argon2id, SENSITIVE */
};

/* Reads STATEFS_KEY (as sfs_key_from_text), then wipes the value in place
 * and removes it from the environment, also on error: the open rules'
 * reader of it (config.c). SFS_NOTFOUND when the variable is not set,
 * SFS_BADKEY when it is not a key. Opens of several threads call it at
 * once: one takes the key, the others find it consumed. */
int crypt_key_from_env(sfs_key **out);
/* getenv(name), with the lock crypt_key_from_env edits the environment
 * under: a read beside that unsetenv could miss another variable
 * (glibc moves the entries after the one removed). The open rules read
 * the environment only through it. */
const char *crypt_getenv(const char *name);

/* The kdf byte a file created with key gets. */
int crypt_key_kdf(const sfs_key *key);
int crypt_key_is_passphrase(const sfs_key *key);
/* A copy in new locked memory (with the derivation cache). */
int crypt_key_dup(const sfs_key *key, sfs_key **out);
/* The root key of a file with this salt and kdf byte into root[32] (the
 * caller wipes it). SFS_WRONGKEY when the key's type does not fit the kdf
 * byte (a raw key for a passphrase store or the reverse), without a detail;
 * SFS_NOMEM when Argon2id cannot get its memory. Thread-safe. */
int crypt_key_root(const sfs_key *key, const unsigned char *salt, int kdf,
                   unsigned char root[32]);

/* ---- Page counters (page.c) */

/* Counters of page sealing, process-wide, for tests and the benchmark.
 * Pages are counted per file kind (db, wal, journal). */
enum { CRYPT_FILE_DB, CRYPT_FILE_WAL, CRYPT_FILE_JOURNAL, CRYPT_FILE_KINDS };
typedef struct crypt_stats {
	uint64_t encrypted[CRYPT_FILE_KINDS];  /* pages encrypted (written) */
	uint64_t decrypted[CRYPT_FILE_KINDS];  /* pages authenticated (read) */
	uint64_t auth_failed;                  /* pages that failed */
	uint64_t temp_refused;                 /* temp file opens refused */
} crypt_stats;
void crypt_stats_get(crypt_stats *out);
void crypt_stats_reset(void);

#endif /* STATEFS_CRYPT_I_H */
