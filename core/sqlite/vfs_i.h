/*
 * vfs_i.h - the encryption layer as the SQLite backend sees it (private to
 * core/sqlite/).
 *
 * The page-encrypting VFS (vfs.c) is a SQLite VFS shim that encrypts every
 * page of the main database file, the WAL and the rollback journal with the
 * page format of core/crypt/ (page_i.h), and refuses temporary files. It
 * knows nothing of statefs tables. The connection (conn.c) calls it in
 * this order:
 *
 *   crypt_preflight(path, key)       before sqlite3_open_v2: clear errors
 *   crypt_vfs_open(key, &v)          one VFS instance per key and store
 *   sqlite3_open_v2(path, ..., crypt_vfs_name(v))
 *   crypt_db_setup(db)               before the first statement
 *   ... use the connection ...
 *   sqlite3_close(db)
 *   crypt_vfs_close(v)
 *
 * Failures return sfs_status codes and set the thread's error detail
 * (sfs_errdetail). Inside SQLite, an authentication failure surfaces as
 * SQLITE_IOERR_DATA (or SQLITE_CORRUPT); the backend's one translation
 * (sqlb_status, conn.c) maps it to SFS_CORRUPT and keeps the detail the VFS
 * left in crypt_last_error().
 */
#ifndef STATEFS_SQLITE_VFS_I_H
#define STATEFS_SQLITE_VFS_I_H

#include <sys/types.h>

#include <sqlite3.h>

#include "crypt/crypt_i.h"

typedef struct crypt_vfs crypt_vfs;

/* What a store file is, from its first page, before SQLite reads it. */
typedef enum crypt_kind {
	CRYPT_KIND_NEW = 1,     /* missing or empty: will be created */
	CRYPT_KIND_PLAIN,       /* a plaintext SQLite database */
	CRYPT_KIND_ENCRYPTED,   /* a statefs encrypted store */
} crypt_kind;

/* Reads page 1 of path and classifies it (check.c). With key != NULL also
 * checks the key: SFS_WRONGKEY ("wrong key"), SFS_NOTENCRYPTED (plaintext
 * store and a key), SFS_CORRUPT (page 1 fails authentication), SFS_FORMAT
 * (unknown format version, or not a database at all). With key == NULL:
 * SFS_NOKEY for an encrypted store. *kind is set on SFS_OK. */
int crypt_preflight(const char *path, const sfs_key *key, crypt_kind *kind);

/* Registers a new, uniquely named VFS that encrypts with key (derived per
 * file from the file's salt). Key material is copied into locked memory. */
int crypt_vfs_open(const sfs_key *key, crypt_vfs **out);
/* The same under a fixed name (NULL: a unique one, as crypt_vfs_open),
 * and with make_default as the process's default VFS: the loadable
 * extension (ext.c) registers "statefs" this way. */
int crypt_vfs_register(const sfs_key *key, const char *name,
                       int make_default, crypt_vfs **out);
const char *crypt_vfs_name(const crypt_vfs *v);
/* Unregisters and wipes. Every connection using it must be closed. */
void crypt_vfs_close(crypt_vfs *v);

/* Connection settings that must precede every statement: the per-page
 * reserve, temp_store=MEMORY. Returns an sfs_status. */
int crypt_db_setup(sqlite3 *db);

/* For sfs_store_info. Static strings. */
void crypt_vfs_describe(const crypt_vfs *v, const char **cipher,
                        int *format, const char **kdf);

/* The message the VFS left for the last failure on this thread (page and
 * file named), or NULL. It is forgotten when this thread starts the next
 * read transaction through the VFS, so a message is never older than the
 * operation that failed. Note that sqlite3_open_v2 itself reads page 1 and
 * can fail with SQLITE_IOERR_DATA and a message ("wrong key") when the
 * preflight was skipped. */
const char *crypt_last_error(void);

/* The VFS for plaintext stores ("statefs-plain", registered once): the
 * default VFS, and the check that refuses a connection's first lock on a
 * file renamed over since it was opened (a rekey that encrypts the store,
 * a restore), with the same crypt_last_error. SFS_INTERNAL when SQLite has
 * no usable default VFS. */
int crypt_plain_vfs(const char **name);

/* Shared by the two VFSs (vfs.c, plainvfs.c). */
/* Whether zname no longer names the main file opened as dev/ino: a rekey
 * or a restore renamed a new store over it. */
int crypt_replaced_since(const char *zname, dev_t dev, ino_t ino);
/* Refuses a connection's first lock on such a file: unlocks real, leaves
 * the message in crypt_last_error, returns SQLITE_IOERR_LOCK. */
int crypt_refuse_replaced(sqlite3_file *real, const char *zname);
/* At a write transaction's lock (the WAL's write lock, offset, n and
 * flags of xShmLock): SQLITE_IOERR_LOCK, with the message in
 * crypt_last_error, when zname no longer names the main file opened as
 * dev/ino (ino 0: not known), else SQLITE_OK. */
int crypt_refuse_moved(const char *zname, dev_t dev, ino_t ino, int offset,
                       int n, int flags);
/* statefs-plain's files (plainvfs.c): their size before the default
 * VFS's, and their xOpen over real. */
size_t crypt_plain_file_size(void);
int crypt_plain_open(sqlite3_vfs *real, const char *zname, sqlite3_file *pf,
                     int flags, int *out_flags);

/* Forgets the message above (call at the start of an operation, so that a
 * later failure never shows an older message). */
void crypt_clear_error(void);

/* SQLite's in-header size of page 1 (bytes 28-31), read in the clear:
 * 0 when it is not valid (the change counter at 24 differs from the
 * version-valid-for at 92). */
uint32_t crypt_p1_pages(const unsigned char *p1);
/* Why SQLite found the store at path malformed at its open (status
 * SFS_CORRUPT, "database disk image is malformed"), when the cause is a
 * file shorter than its page 1 counts (without a WAL that holds the
 * rest, SQLite refuses it before any page is read): an SFS_CORRUPT that
 * says so. Otherwise status, the detail as it was. */
int crypt_explain_short(const char *path, const sfs_key *key, int status);

/* Authenticates every page of the main file and every frame of the WAL of
 * the store at path, without SQLite (check.c). SFS_CORRUPT names the first
 * bad page. progress counts pages. */
int crypt_verify_file(const char *path, const crypt_vfs *v,
                      sfs_progress_fn progress, void *ctx);

/* Is pv a VFS made by crypt_vfs_open? */
int crypt_vfs_is(sqlite3_vfs *pv);
/* The VFS's copy of its key; borrowed until crypt_vfs_close. */
const sfs_key *crypt_vfs_key(const crypt_vfs *v);

#endif /* STATEFS_SQLITE_VFS_I_H */
