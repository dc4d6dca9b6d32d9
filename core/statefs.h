/*
 * statefs.h - the statefs engine's one public header.
 *
 * statefs keeps the operational state of data tools in one SQLite file that
 * many processes share: scoped key/value entries, counters, append-logs, work
 * queues, and the typed families of the VGI Go SDK (worker, scan-worker,
 * aggregate, window and transaction state), whose on-disk schema it shares.
 * The file is encrypted at rest unless the caller asks for plaintext.
 *
 * This header is the contract. Everything above core/ (the FUSE view, the
 * daemon, statectl) includes only this file.
 *
 * Conventions, for every function below unless its comment says otherwise:
 *
 *  - Status. Functions return an int status: SFS_OK (0) or one of the
 *    sfs_status codes. sfs_strerror() names a code; sfs_errdetail() gives the
 *    detail of the last failure on the calling thread ("page 7 of state.db
 *    failed authentication"). Output parameters are written only on SFS_OK
 *    (SFS_NOTFOUND leaves them untouched unless stated).
 *
 *  - Byte strings. Scopes, namespaces, keys and values are byte strings
 *    passed as sfs_slice (pointer + length, borrowed for the duration of the
 *    call). A required slice with ptr == NULL is SFS_INVALID; an empty string
 *    is a slice with a non-NULL ptr and len 0 (use sfs_str("")). Optional
 *    slices (scan bounds) use SFS_NONE, ptr == NULL, for "no bound": an empty
 *    but present bound is different from no bound. Keys compare bytewise
 *    (memcmp, shorter prefix first), as SQLite compares BLOBs.
 *
 *  - Memory. Every sfs_buf and sfs_list returned belongs to the caller and is
 *    released with sfs_buf_free() / sfs_list_free(). Borrowed pointers inside
 *    a list live until that list is freed.
 *
 *  - Threads. A store handle may be used from any number of threads at once;
 *    calls on one handle are serialised inside the engine. Callbacks (export,
 *    progress) run on the calling thread while the store is busy: they must
 *    not call back into the same store. A handle must not be used in a child
 *    after fork(); open a new one there.
 *
 *  - Durability. A call that returns SFS_OK has committed: its effect survives
 *    a crash of the process. sfs_store_sync() makes everything committed
 *    before it survive a power loss too.
 *
 *  - Processes. Any number of processes may open the same file. Every
 *    read-modify-write is atomic across processes; waiting for another
 *    process's lock is bounded by the busy timeout (SFS_BUSY after it).
 */
#ifndef STATEFS_H
#define STATEFS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SFS_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------
 * Status codes
 */
typedef enum sfs_status {
	SFS_OK = 0,
	SFS_NOTFOUND,      /* no such key, entry, item or claim; an empty queue */
	SFS_INVALID,       /* bad argument: NULL where bytes are needed, bad flag */
	SFS_TOOBIG,        /* key or value larger than the store's limit */
	SFS_OVERFLOW,      /* counter arithmetic left int64; nothing changed */
	SFS_EXISTS,        /* target exists (rename without replace, init) */
	SFS_NOTEMPTY,      /* a scope or namespace still holds entries */
	SFS_BUSY,          /* another process held the lock past the timeout */
	SFS_READONLY,      /* the store was opened read-only */
	SFS_IO,            /* operating-system I/O error (detail says which) */
	SFS_FULL,          /* no space left on the device */
	SFS_CORRUPT,       /* a page failed authentication, or the file is damaged */
	SFS_WRONGKEY,      /* the key does not open this store */
	SFS_NOKEY,         /* the store is encrypted and no key was given */
	SFS_NOTENCRYPTED,  /* a key was given but the store is plaintext */
	SFS_FORMAT,        /* not a statefs store, or an unsupported format */
	SFS_KEYPERM,       /* key file readable by others or not owned by us */
	SFS_NOMEM,
	SFS_CLAIMLOST,     /* the claim expired; its items went back to the queue */
	SFS_CANCELLED,     /* a progress callback asked to stop */
	SFS_INTERNAL,      /* a bug in statefs; the detail says where */
	SFS_STATUS_MAX     /* not a status: one past the last one */
} sfs_status;

/* The name of a status as a plain sentence fragment ("no such key").
 * Static string, never NULL, also for unknown codes. */
const char *sfs_strerror(int status);

/* The detail of the last failure on this thread, or "" when there is none.
 * Never contains key material. Valid until the next sfs_* call on this
 * thread. */
const char *sfs_errdetail(void);

/* Diagnostics. The engine says nothing unless a logger is set: it is a
 * library. level is a syslog(3) priority. The logger may be called from any
 * thread; set it before opening stores. fn == NULL restores silence. */
typedef void (*sfs_log_fn)(int level, const char *msg, void *ctx);
void sfs_set_logger(sfs_log_fn fn, void *ctx);

/* ------------------------------------------------------------------------
 * Byte strings and returned memory
 */
typedef struct sfs_slice {
	const void *ptr;
	size_t len;
} sfs_slice;

#define SFS_NONE ((sfs_slice){ NULL, 0 })

static inline sfs_slice sfs_bytes(const void *ptr, size_t len)
{
	sfs_slice s = { ptr, len };
	return s;
}

/* A NUL-terminated string as a slice (without the NUL); NULL gives SFS_NONE. */
static inline sfs_slice sfs_str(const char *s)
{
	sfs_slice r = { s, s ? strlen(s) : 0 };
	return r;
}

/* A buffer owned by the caller. ptr may be non-NULL when len is 0 (an empty
 * value); the engine NUL-terminates every buffer it returns (ptr[len] == 0)
 * so text can be printed directly. */
typedef struct sfs_buf {
	void *ptr;
	size_t len;
} sfs_buf;

/* Releases b->ptr and zeroes *b. NULL and empty buffers are fine. */
void sfs_buf_free(sfs_buf *b);

/* One row of a listing. Which fields mean something depends on the call
 * that filled the list; each call's comment says. */
typedef struct sfs_item {
	sfs_buf key;       /* key, name, stream id or queue id */
	sfs_buf value;     /* value; ptr == NULL when not loaded or absent */
	uint64_t size;     /* the value's length, also when it was not loaded */
	int64_t id;        /* log/queue id, or worker/group/partition id */
	int64_t n;         /* counter value (counter scans) */
	int64_t mtime_ns;  /* last write through statefs, ns since the epoch;
	                      0 when unknown (written by another SDK). One
	                      second of resolution (whole seconds, in ns);
	                      never goes backwards (docs/engine.md) */
} sfs_item;

typedef struct sfs_list {
	sfs_item *items;
	size_t n;
} sfs_list;

/* Releases every item and the array, and zeroes *l. NULL is fine. */
void sfs_list_free(sfs_list *l);

/* ------------------------------------------------------------------------
 * Keys (encryption at rest)
 *
 * An sfs_key holds a 32-byte root key, or a passphrase that is stretched with
 * Argon2id when a store is opened (the salt lives in the store's header). Key
 * material lives in sodium_malloc'd, locked memory and is wiped when the key
 * is destroyed. No function here ever writes key material to a log, an error
 * detail or argv.
 *
 * What the library does: keys, derived page keys and key text read from
 * files or the environment stay in locked memory and are wiped after use;
 * an open store keeps its own copy (the caller's key may be destroyed right
 * after sfs_store_open). What it cannot do for the caller: decrypted pages
 * live in SQLite's page cache (ordinary heap) while a store is open, so a
 * tool that opens stores should disable core dumps and ptrace early in
 * main() (setrlimit(RLIMIT_CORE) to 0 and prctl(PR_SET_DUMPABLE, 0)); a
 * library must not change those process-wide settings by itself.
 */
typedef struct sfs_key sfs_key;

/* A new random 32-byte key. */
int sfs_key_generate(sfs_key **out);

/* A 32-byte key given as base64 (standard or URL-safe alphabet, padding
 * optional) or as 64 hex digits; surrounding whitespace is ignored. Anything
 * else, including a key of another length, is SFS_INVALID. */
int sfs_key_from_text(const char *text, size_t len, sfs_key **out);

/* Reads STATEFS_KEY (as sfs_key_from_text), then wipes the value in place
 * and removes it from the environment, also on error. SFS_NOTFOUND when the
 * variable is not set. Not thread-safe (it edits the environment). */
int sfs_key_from_env(sfs_key **out);

/* Reads a key file: a regular file (else SFS_INVALID, without reading or
 * waiting on it: a FIFO is refused at once) owned by the effective user (or
 * root), not readable or writable by group or others (else SFS_KEYPERM,
 * with the mode in the detail), holding 32 raw bytes, or the key as text. */
int sfs_key_from_file(const char *path, sfs_key **out);

/* A passphrase, stretched with Argon2id when a store is opened or created.
 * The passphrase is copied; the caller should wipe its own copy. A new
 * store gets libsodium's MODERATE limits (about 0.4 s and 256 MiB per
 * open); the store's header records them, so opening uses what the
 * creator chose. The salt is the store's own (each file has one). */
int sfs_key_from_passphrase(const void *pass, size_t len, sfs_key **out);

/* Writes a raw key to a new file with mode 0600, creating missing parent
 * directories with mode 0700. SFS_EXISTS if the file exists (never
 * overwrites, also when two processes race); SFS_INVALID for a passphrase
 * key. The file holds the key as base64 and a newline (printable for a
 * paper backup, usable as STATEFS_KEY); it and its directory are fsynced. */
int sfs_key_write_file(const sfs_key *key, const char *path);

/* The key as standard base64 with padding, NUL-terminated, into out
 * (outlen >= 45). Meant for `statectl keygen` printing to a pipe; the caller
 * wipes out afterwards. SFS_INVALID for a passphrase key. */
int sfs_key_to_text(const sfs_key *key, char *out, size_t outlen);

/* Wipes and frees. NULL is fine. */
void sfs_key_destroy(sfs_key *key);

/* ------------------------------------------------------------------------
 * Opening a store
 */
enum {
	SFS_OPEN_CREATE = 1u << 0,    /* create the file if it does not exist */
	SFS_OPEN_READONLY = 1u << 1,  /* no writes; SFS_READONLY on any */
	SFS_OPEN_PLAINTEXT = 1u << 2, /* no encryption (development, Go SDK stores) */
	SFS_OPEN_EXCL = 1u << 3,      /* with CREATE: SFS_EXISTS if the file exists */
	SFS_OPEN_NORECOVER = 1u << 4, /* no claim recovery at open: for a caller
	                                 that runs sfs_queue_gc and wants its
	                                 counts ("Claims") */
};

typedef struct sfs_open_opts {
	/* The store file. NULL: the default store (sfs_default_path).
	 * ":memory:": a process-local store that vanishes on close. */
	const char *path;
	unsigned flags;          /* SFS_OPEN_* */
	/* The key; borrowed for the duration of sfs_store_open only. Required
	 * unless SFS_OPEN_PLAINTEXT; must be NULL with it. A ":memory:" store
	 * needs none (it never reaches a disk); a key given for it is unused. */
	const sfs_key *key;
	int busy_timeout_ms;     /* 0: 30000 */
	uint64_t max_value;      /* largest value accepted; 0: SFS_DEFAULT_MAX_VALUE */
	int64_t lease_ms;        /* claim lease; 0: ten minutes */
} sfs_open_opts;

#define SFS_DEFAULT_MAX_VALUE (64u * 1024 * 1024)
#define SFS_MAX_NAME (64u * 1024) /* largest scope, namespace or key accepted */

typedef struct sfs_store sfs_store;

/* Opens (and with SFS_OPEN_CREATE creates) a store. Errors, each with a
 * sentence in sfs_errdetail(): SFS_NOTFOUND (no file and no CREATE),
 * SFS_WRONGKEY, SFS_NOKEY (encrypted, no key), SFS_NOTENCRYPTED (a key for a
 * plaintext store), SFS_FORMAT (not a store, or a newer format), SFS_BUSY,
 * SFS_IO. A plaintext store written by the VGI Go SDK opens with
 * SFS_OPEN_PLAINTEXT; missing statefs tables are added unless read-only.
 * A store created here is mode 0600, and missing parent directories are
 * created with mode 0700. */
int sfs_store_open(const sfs_open_opts *opts, sfs_store **out);

/* Closes and frees the handle; NULL is fine. Outstanding lists stay valid. */
void sfs_store_close(sfs_store *s);

/* Makes every commit so far survive power loss. */
int sfs_store_sync(sfs_store *s);

/* A number that changes whenever any process commits a change to the store
 * (including this handle). Cheap: no disk I/O when nothing changed. Used to
 * drop caches and to wake waiters. On a PostgreSQL store it changes with
 * this handle's commits and with any host's commit that makes queue items
 * pending (a push, a nack, a lease that ran out), through LISTEN, without
 * a statement to the server: other hosts' other writes do not move it
 * (docs/postgres.md says why). */
int sfs_store_version(sfs_store *s, uint64_t *out);

/* The path this handle opened (":memory:" for memory stores; for a
 * PostgreSQL store its connection string without any password). Borrowed;
 * valid until close. */
const char *sfs_store_path(const sfs_store *s);

/* A store may also live in PostgreSQL, shared by several hosts: every
 * function that takes a store's path (sfs_open_opts.path, sfs_config.db,
 * $STATEFS_DB) accepts a postgresql:// (or postgres://) URI or a libpq
 * key=value string instead, with schema= naming the store's schema
 * (docs/postgres.md). */

/* Whether the store db names exists, creating nothing: SFS_OK or
 * SFS_NOTFOUND (no file; no store in that schema), else why it could
 * not be told (SFS_IO: the server cannot be reached). */
int sfs_store_exists(const char *db);

/* What messages should call the store db: the path, or the connection
 * string without its password. *out is malloc'd; free() it. */
int sfs_store_name(const char *db, char **out);

/* The default store: $XDG_STATE_HOME/statefs/state.db, else
 * ~/.local/state/statefs/state.db. *out is malloc'd; free() it. */
int sfs_default_path(char **out);

/* The default key file: $XDG_CONFIG_HOME/statefs/key, else
 * ~/.config/statefs/key. *out is malloc'd; free() it. */
int sfs_default_keyfile(char **out);

/* How the daemon and statectl open a store, in one place so both follow the
 * same rules:
 *   store: cfg->db, else $STATEFS_DB, else the default store;
 *   key:   cfg->keyfile, else $STATEFS_KEY, else $STATEFS_KEY_FILE, else the
 *          default key file; none of them with cfg->plaintext.
 * When the store does not exist and cfg->create is set, it is created; if no
 * key was found either, a new key file is written at the default key path
 * first, and *notice (if not NULL) receives a malloc'd sentence telling the
 * user where the key is and to back it up apart from the store. *notice is
 * set to NULL when there is nothing to say. */
typedef struct sfs_config {
	const char *db;
	const char *keyfile;
	int plaintext;
	int readonly;
	int create;
	int busy_timeout_ms;
	uint64_t max_value;
	int64_t lease_ms;
	const sfs_key *key;      /* a key the caller already has (passphrase
	                            prompt); overrides keyfile and environment */
	int no_recovery;         /* SFS_OPEN_NORECOVER */
} sfs_config;

int sfs_store_open_config(const sfs_config *cfg, sfs_store **out,
                          char **notice);

/* The store path and the key sfs_store_open_config would use, by the same
 * rules, without opening or creating anything: for tools that need the key
 * itself (rekey), or the key file's place (init), or want to tell a
 * missing store from a missing key.
 *   *db       the store path (malloc'd; free());
 *   *key      the key (sfs_key_destroy), or NULL: with cfg->plaintext, with
 *             cfg->key (the caller holds that one), or when the key file
 *             the rules chose does not exist;
 *   *keyfile  (may be NULL) the key file the rules chose, existing or not
 *             (malloc'd), or NULL when the key came from elsewhere
 *             (STATEFS_KEY, cfg->key) or with cfg->plaintext.
 * STATEFS_KEY is consumed, as by sfs_store_open_config. */
int sfs_config_resolve(const sfs_config *cfg, char **db, sfs_key **key,
                       char **keyfile);

/* ------------------------------------------------------------------------
 * Scoped key/value state: function_state(scope_id, ns, key, value)
 */

/* Puts (inserts or replaces) a value. */
int sfs_kv_put(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_slice value);

/* Gets a value into *out. SFS_NOTFOUND when absent; an empty value is
 * SFS_OK with out->len == 0. */
int sfs_kv_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_buf *out);

/* Size and last write time of a value without reading it. SFS_NOTFOUND when
 * absent. mtime_ns may be NULL. */
int sfs_kv_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t *size, int64_t *mtime_ns);

/* Deletes one key. SFS_NOTFOUND when it was absent (nothing changed). */
int sfs_kv_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key);

/* Parts of a value: ranged reads and edits, for callers that read or
 * change a little of a large value (the mount's files). A value is one
 * BLOB of function_state, the table the SDKs share, so what an edit costs
 * depends on whether it changes the value's length:
 *  - edits that keep the length and every old byte (writes inside the
 *    value) are done in place: only the pages holding the changed bytes
 *    are written (SQLite's incremental BLOB I/O), though SQLite walks the
 *    value's overflow chain up to the first of them;
 *  - edits that change the length (appends, truncations, writes past the
 *    end) rewrite the value: SQLite cannot grow or shrink a BLOB in place.
 *    The old bytes that survive are read once; nothing else of the old
 *    value is, and bytes that were never written (a gap, an extension)
 *    are never held in memory.
 * Both are atomic: one transaction, a read-modify-write inside the engine,
 * so an append or a truncation never loses a put made by another process
 * meanwhile (docs/engine.md, "Parts of a value"). */
typedef enum sfs_edit_op {
	SFS_EDIT_WRITE = 1,  /* bytes at off; a gap past the end reads as zero
	                        bytes */
	SFS_EDIT_APPEND,     /* bytes after the end of the value as it is at
	                        that point of the list (off is unused) */
	SFS_EDIT_TRUNCATE,   /* the value cut to off bytes, or extended to off
	                        with zero bytes (bytes is unused) */
} sfs_edit_op;

typedef struct sfs_edit {
	sfs_edit_op op;
	uint64_t off;
	sfs_slice bytes;     /* borrowed for the call */
} sfs_edit;

enum {
	SFS_EDIT_CREATE = 1u << 0, /* an absent key starts as the empty value */
};

/* Applies n edits, in order, to the value of (scope, ns, key) in one
 * transaction, and sets its time as sfs_kv_put does; *size (may be NULL)
 * gets the value's length afterwards. n == 0 with SFS_EDIT_CREATE makes an
 * absent key the empty value and changes nothing else. Errors (nothing
 * changed): SFS_NOTFOUND (absent, without SFS_EDIT_CREATE), SFS_TOOBIG
 * (the final value, or an offset, beyond the store's max_value),
 * SFS_INVALID (edits NULL with n > 0, an unknown op or flag, NULL bytes
 * for a write or an append), SFS_READONLY, SFS_BUSY, SFS_FULL, SFS_IO,
 * SFS_CORRUPT, SFS_NOMEM. */
int sfs_kv_edit(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                const sfs_edit *edits, size_t n, unsigned flags,
                uint64_t *size);

/* Reads up to len bytes of the value at offset off into *out (the
 * caller's; NUL-terminated as every sfs_buf): fewer at the end of the
 * value, none at or past it. *size (may be NULL) gets the value's whole
 * length, from the same snapshot. Costs the pages read (and the walk of
 * the overflow chain up to off), not the value. Errors: SFS_NOTFOUND
 * (absent), SFS_BUSY, SFS_IO, SFS_CORRUPT, SFS_NOMEM. */
int sfs_kv_read(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t off, size_t len, sfs_buf *out, uint64_t *size);

typedef struct sfs_scan_opts {
	sfs_slice start;   /* inclusive lower bound; SFS_NONE: open */
	sfs_slice end;     /* exclusive upper bound; SFS_NONE: open */
	int reverse;       /* descending; never changes which bound is which */
	long limit;        /* at most this many rows; <= 0: no limit */
	int keys_only;     /* leave value.ptr NULL; size still set */
} sfs_scan_opts;

/* The entries of (scope, ns) in [start, end), ordered by key, into *out:
 * item.key, item.value (unless keys_only), item.size, item.mtime_ns.
 * opts == NULL scans everything ascending. */
int sfs_kv_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *opts, sfs_list *out);

/* Deletes every key of (scope, ns) in [start, end) (SFS_NONE: open) and
 * stores how many went in *count (may be NULL). */
int sfs_kv_delete_range(sfs_store *s, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count);

/* Deletes the whole namespace; *count (may be NULL) gets the number of keys. */
int sfs_kv_delete_ns(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     uint64_t *count);

/* Reads and removes every entry of (scope, ns) in one transaction, ordered
 * by key. An empty namespace gives an empty list. */
int sfs_kv_drain(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_list *out);

/* Replaces the namespace atomically with exactly the n given entries (the
 * stream engine's RestoreAll): keys not in the input disappear. */
int sfs_kv_restore(sfs_store *s, sfs_slice scope, sfs_slice ns,
                   const sfs_slice *keys, const sfs_slice *values, size_t n);

enum {
	SFS_RENAME_NOREPLACE = 1u << 0, /* SFS_EXISTS instead of replacing */
};

/* Moves a key to another (scope, ns, key) atomically, replacing the target
 * unless SFS_RENAME_NOREPLACE. SFS_NOTFOUND if the source is absent. Renaming
 * a key onto itself is SFS_OK and changes nothing. */
int sfs_kv_rename(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  sfs_slice to_scope, sfs_slice to_ns, sfs_slice to_key,
                  unsigned flags);

/* ------------------------------------------------------------------------
 * Directories: scopes and namespaces as listable, creatable things.
 *
 * A family is one of the state kinds that has scopes and namespaces. A scope
 * or namespace exists while it holds an entry of that family or was created
 * explicitly (and not yet removed): explicit ones persist when empty.
 */
typedef enum sfs_family {
	SFS_FAM_KV = 1,     /* function_state */
	SFS_FAM_COUNTER,    /* function_counter */
	SFS_FAM_LOG,        /* function_state_log */
	SFS_FAM_QUEUE,      /* work_queue; scope = queue id, no namespaces */
	SFS_FAM_DIR,        /* an explicit empty directory (export rows only) */
	/* Claims (export rows only; see "Claims" and sfs_row): */
	SFS_FAM_CLAIM,      /* a claim: id, n = lease end (ns), mtime = claimed */
	SFS_FAM_INFLIGHT,   /* a claimed item: id, value, n = claim id,
	                       mtime = enqueued, deliveries */
	SFS_FAM_DEAD,       /* a dead letter: id, value, key = reason,
	                       mtime = when it died, deliveries */
	SFS_FAM_POLICY,     /* a queue's policy: n = ttl_ms,
	                       deliveries = max_deliveries */
} sfs_family;

/* Scopes of a family, ascending, strictly after `after` (SFS_NONE: from the
 * start), at most limit (<= 0: all), as item.key. Explicit empty scopes
 * included. For SFS_FAM_QUEUE these are the queue ids holding items. */
int sfs_scope_list(sfs_store *s, sfs_family fam, sfs_slice after, long limit,
                   sfs_list *out);

/* Namespaces of a scope in a family, as item.key; as sfs_scope_list. */
int sfs_ns_list(sfs_store *s, sfs_family fam, sfs_slice scope,
                sfs_slice after, long limit, sfs_list *out);

/* Whether a scope (ns == SFS_NONE) or namespace exists in a family:
 * SFS_OK or SFS_NOTFOUND. */
int sfs_dir_exists(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Creates an explicit (persisting) empty scope (ns == SFS_NONE) or
 * namespace. SFS_EXISTS if it exists. */
int sfs_dir_create(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Removes an empty scope or namespace: SFS_NOTEMPTY if it holds entries
 * (or, for a scope, namespaces), SFS_NOTFOUND if it does not exist. */
int sfs_dir_remove(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Renames a scope (ns == SFS_NONE, to_ns ignored) or a namespace, with
 * everything in it, atomically. An existing target is replaced only if it is
 * empty (SFS_NOTEMPTY otherwise, SFS_EXISTS with SFS_RENAME_NOREPLACE). */
int sfs_dir_rename(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                   unsigned flags);

/* ------------------------------------------------------------------------
 * Counters: function_counter(scope_id, ns, key, n). Independent of a
 * key/value entry with the same name.
 */

/* The counter's value, 0 when absent; *exists (may be NULL) says which. */
int sfs_counter_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t *value, int *exists);

/* Adds delta atomically (an absent counter starts at 0) and stores the new
 * value in *value (may be NULL). SFS_OVERFLOW if the result leaves int64;
 * then nothing changed. */
int sfs_counter_add(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t delta, int64_t *value);

/* Sets the counter, creating it if absent. */
int sfs_counter_set(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t value);

/* Deletes the counter. SFS_NOTFOUND when it was absent (nothing changed). */
int sfs_counter_delete(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key);

/* The counters of (scope, ns), as sfs_kv_scan: item.key, item.n, item.mtime_ns. */
int sfs_counter_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *opts, sfs_list *out);

/* ------------------------------------------------------------------------
 * Append-logs: function_state_log(id, scope_id, ns, key, value). Ids are
 * global to the store, strictly increasing and never reused (not after a
 * clear, not after a restart). The Go SDK's log uses ns "log".
 */

/* Appends one entry; *id (may be NULL) gets its id. */
int sfs_log_append(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice value, int64_t *id);

/* Entries of (scope, ns, key) with id > after_id (-1: from the start),
 * ascending by id, at most limit (<= 0: all): item.id, item.value (unless
 * keys_only), item.size, item.mtime_ns. */
int sfs_log_scan(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t after_id, long limit, int keys_only, sfs_list *out);

/* One entry by id: SFS_NOTFOUND unless it exists under (scope, ns, key). */
int sfs_log_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                int64_t id, sfs_buf *out);

/* Size and time of one entry, as sfs_kv_stat. */
int sfs_log_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, uint64_t *size, int64_t *mtime_ns);

/* The distinct keys of (scope, ns) holding entries, ascending, strictly
 * after `after`, at most limit, as item.key. */
int sfs_log_keys(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice after,
                 long limit, sfs_list *out);

/* Deletes one entry. SFS_NOTFOUND when it was absent. */
int sfs_log_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   int64_t id);

/* Deletes the entries of a scope: of one namespace (ns given), of one key
 * (ns and key given), or all of the scope (both SFS_NONE). *count may be
 * NULL. The Go SDK's StateLogClear is ns = "log", key = SFS_NONE. */
int sfs_log_clear(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  uint64_t *count);

/* ------------------------------------------------------------------------
 * Work queues: work_queue(id, execution_id, work_item). FIFO per queue id;
 * ids are global, strictly increasing and never reused. A queue exists while
 * it holds items; there is no registration.
 */

/* Appends n items in one transaction; *first_id (may be NULL) gets the id of
 * the first (the rest follow in order). n == 0 touches nothing. */
int sfs_queue_push(sfs_store *s, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id);

/* Removes and returns the oldest item atomically: two callers, in any
 * processes, never get the same item. SFS_NOTFOUND when the queue is empty
 * or was never used. *id may be NULL. */
int sfs_queue_pop(sfs_store *s, sfs_slice queue, sfs_buf *item, int64_t *id);

/* Removes and returns every item in one transaction, in FIFO order:
 * item.id, item.value, item.size, item.mtime_ns. */
int sfs_queue_drain(sfs_store *s, sfs_slice queue, sfs_list *out);

/* Pending items with id > after_id (-1: from the head), FIFO order, at most
 * limit (<= 0: all), without removing them: as sfs_queue_drain, value NULL
 * when keys_only. */
int sfs_queue_scan(sfs_store *s, sfs_slice queue, int64_t after_id, long limit,
                   int keys_only, sfs_list *out);

/* One pending item by id, without removing it. */
int sfs_queue_peek(sfs_store *s, sfs_slice queue, int64_t id, sfs_buf *item);

/* Size and enqueue time of one pending item. */
int sfs_queue_stat(sfs_store *s, sfs_slice queue, int64_t id, uint64_t *size,
                   int64_t *mtime_ns);

/* Removes one pending item by id. SFS_NOTFOUND when it is not pending. */
int sfs_queue_delete(sfs_store *s, sfs_slice queue, int64_t id);

/* Removes every pending item; *count (may be NULL) gets how many. Items in
 * flight stay with their claims, dead letters stay (sfs_dead_clear). */
int sfs_queue_clear(sfs_store *s, sfs_slice queue, uint64_t *count);

/* The number of pending items (not those in flight under a claim, nor dead
 * letters). */
int sfs_queue_len(sfs_store *s, sfs_slice queue, uint64_t *len);

/* ------------------------------------------------------------------------
 * Claims: at-least-once work on a queue (docs/claims.md).
 *
 * A claim moves items out of the pending queue into an in-flight set under
 * a lease. Until the lease ends the claim is held: its owner heartbeats
 * (extends the lease) and settles the items (ack: done; nack: back to their
 * original place; or per-item outcomes). The instant the lease ends the
 * claim is lost, whether or not recovery has already run: every call on a
 * claim checks the lease in the transaction that acts on it (a lease ending
 * at t is expired at t: held means now < lease end) and fails with
 * SFS_CLAIMLOST when it ran out, so the owner learns that its items may be
 * (or have been) delivered again. Nothing a held claim settles is ever
 * redelivered; nothing claimed is ever lost.
 *
 * Recovery (sfs_queue_gc) runs when a store is opened read-write, at the
 * start of every claim call on the queue it concerns, and whenever a
 * caller runs it (the daemon does, periodically). One pass is one
 * transaction: first the queue's time-to-live drops pending items that
 * waited longer than it, then expired claims return their items to the
 * queue at their original ids (their wait restarts, their delivery count
 * is kept), or to the dead letters once they reached the queue's delivery
 * limit. sfs_queue_pop and sfs_queue_drain do not run recovery.
 *
 * Leases are in milliseconds; 0 means the store's default (sfs_open_opts
 * lease_ms, ten minutes unless set). Times are CLOCK_REALTIME in ns, the
 * clock every process on a host shares. Claim ids come from the store and
 * are never reused (not after a restore either); an id that was never
 * issued is SFS_NOTFOUND, one that was issued and is no longer held
 * (expired, or already settled) is SFS_CLAIMLOST.
 */

typedef enum sfs_outcome {
	SFS_OUTCOME_DONE = 1, /* processed: the item is deleted */
	SFS_OUTCOME_RETRY,    /* pushed again at the tail, under a new id */
	SFS_OUTCOME_REJECT,   /* moved to the dead letters ("rejected") */
	SFS_OUTCOME_NACK,     /* back at its original id (its FIFO place) */
} sfs_outcome;

/* Claims up to max (>= 1) pending items from the head of the queue under a
 * new claim with a lease of lease_ms, in one transaction: *claim_id gets the
 * claim and *items the items in FIFO order: item.id, item.value,
 * item.size, item.n = the item's delivery count (1 the first time),
 * item.mtime_ns = when the lease ends. An empty queue creates no claim and
 * gives SFS_NOTFOUND. Two callers, in any processes, never claim one item.
 * items may be NULL (the caller learns the ids from sfs_inflight_scan). */
int sfs_claim(sfs_store *s, sfs_slice queue, long max, int64_t lease_ms,
              int64_t *claim_id, sfs_list *items);

/* Claims one pending item by id (the file view's `mv item inflight/`):
 * SFS_NOTFOUND when it is not pending in that queue (another claimer won,
 * or it never was). *claim_id (may be NULL) gets the new claim. */
int sfs_claim_item(sfs_store *s, sfs_slice queue, int64_t id,
                   int64_t lease_ms, int64_t *claim_id);

/* A drain that gives back what it does not deliver: takes every entry of
 * (scope, ns) under a new claim with a lease of lease_ms, in one
 * transaction. From that commit the namespace is empty for every reader
 * and writer; its entries are the claim's items, numbered in key order
 * (ids of the claim, read with sfs_claim_items). *count (may be NULL)
 * gets how many. An empty namespace creates no claim: SFS_NOTFOUND. The
 * claim is settled as a queue's: DONE (sfs_claim_settle, sfs_claim_ack)
 * removes entries for good; NACK (sfs_claim_nack), and a lease that runs
 * out, puts them back in the namespace, except where a key was written
 * again meanwhile, which keeps its new value. RETRY and REJECT are
 * SFS_INVALID for entries. docs/claims.md, "Namespace drains". */
int sfs_kv_claim(sfs_store *s, sfs_slice scope, sfs_slice ns,
                 int64_t lease_ms, int64_t *claim_id, uint64_t *count);

/* The items of a held claim (of a queue or a namespace) with id >
 * after_id (-1: all), by id, at most limit (<= 0: all): item.id,
 * item.value (unless keys_only), item.size, item.mtime_ns; queue items
 * also item.n = their delivery count and mtime_ns = when their wait
 * began; a namespace's entries item.key and mtime_ns = when they were
 * written. A read: SFS_CLAIMLOST once the lease ran out (also before
 * recovery moved the items), SFS_NOTFOUND for an id never issued. */
int sfs_claim_items(sfs_store *s, int64_t claim_id, int64_t after_id,
                    long limit, int keys_only, sfs_list *out);

/* Extends a held claim: its lease ends lease_ms from now (also when that is
 * sooner than before). *lease_until_ns (may be NULL) gets the new end.
 * SFS_CLAIMLOST when the lease had run out: the claim's items went (or go
 * now) back to the queue. */
int sfs_claim_heartbeat(sfs_store *s, int64_t claim_id, int64_t lease_ms,
                        int64_t *lease_until_ns);

/* The claim's items are done: deleted, and the claim ends. SFS_CLAIMLOST
 * when it is not held; then nothing is deleted, not even items that were
 * returned and claimed again (they belong to the new claim). */
int sfs_claim_ack(sfs_store *s, int64_t claim_id);

/* The claim's items go back to the queue at their original ids (their
 * place in FIFO order), their wait restarted; items that reached the
 * queue's delivery limit go to the dead letters instead. SFS_CLAIMLOST
 * when not held. */
int sfs_claim_nack(sfs_store *s, int64_t claim_id);

/* Settles items of a held claim with one outcome each, all or nothing:
 * every id must be an item of the claim, named once, and every outcome
 * valid, or nothing changes (SFS_INVALID for a bad outcome or a repeated
 * id, SFS_NOTFOUND for an id the claim does not hold). RETRY and NACK
 * respect the delivery limit as nack does. Items not named stay in flight;
 * the claim ends with its last item. */
int sfs_claim_settle(sfs_store *s, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n);

/* The in-flight items of a queue with id > after_id (-1: all), by id, at
 * most limit (<= 0: all): item.id, item.value (unless keys_only),
 * item.size, item.n = the claim holding it, item.mtime_ns = when its lease
 * ends (what `ls -l inflight/` shows). */
int sfs_inflight_scan(sfs_store *s, sfs_slice queue, int64_t after_id,
                      long limit, int keys_only, sfs_list *out);

/* One in-flight item's bytes, without settling it. SFS_NOTFOUND when the
 * item is not in flight in that queue. */
int sfs_inflight_peek(sfs_store *s, sfs_slice queue, int64_t id,
                      sfs_buf *item);

typedef struct sfs_claim_info {
	int64_t claim_id;
	int64_t lease_until_ns; /* when the lease ends (may have passed) */
	int64_t enqueued_ns;    /* when the item's last wait began */
	int64_t deliveries;     /* times claimed, this claim included */
	uint64_t size;
} sfs_claim_info;

/* What holds an in-flight item. SFS_NOTFOUND when it is not in flight. */
int sfs_inflight_stat(sfs_store *s, sfs_slice queue, int64_t id,
                      sfs_claim_info *out);

/* Settles one in-flight item of a queue, whatever claim holds it (the file
 * view's `rm inflight/item` = DONE, `mv inflight/item ..` = NACK), as
 * sfs_claim_settle. SFS_NOTFOUND when it is not in flight, SFS_CLAIMLOST
 * when its lease has run out. */
int sfs_inflight_settle(sfs_store *s, sfs_slice queue, int64_t id,
                        sfs_outcome outcome);

/* Heartbeats the claim that holds an in-flight item (`touch
 * inflight/item`), as sfs_claim_heartbeat. SFS_NOTFOUND, SFS_CLAIMLOST as
 * sfs_inflight_settle. */
int sfs_inflight_heartbeat(sfs_store *s, sfs_slice queue, int64_t id,
                           int64_t lease_ms);

/* Dead letters of a queue with id > after_id (-1: all), by id, at most
 * limit: item.id (the item's last id), item.value (unless keys_only),
 * item.size, item.key = the reason ("rejected", "delivery limit"),
 * item.n = its delivery count, item.mtime_ns = when it died. */
int sfs_dead_scan(sfs_store *s, sfs_slice queue, int64_t after_id,
                  long limit, int keys_only, sfs_list *out);
int sfs_dead_peek(sfs_store *s, sfs_slice queue, int64_t id, sfs_buf *item);
int sfs_dead_stat(sfs_store *s, sfs_slice queue, int64_t id, uint64_t *size,
                  int64_t *mtime_ns);

/* Moves a dead letter back to the tail of its queue under a new id (*new_id,
 * may be NULL) with a fresh delivery count. SFS_NOTFOUND when absent. */
int sfs_dead_requeue(sfs_store *s, sfs_slice queue, int64_t id,
                     int64_t *new_id);
/* Deletes one dead letter (SFS_NOTFOUND when absent), or all of a queue's
 * (*count may be NULL). */
int sfs_dead_delete(sfs_store *s, sfs_slice queue, int64_t id);
int sfs_dead_clear(sfs_store *s, sfs_slice queue, uint64_t *count);

/* A queue's recovery policy, stored in the store so that every process and
 * the daemon apply the same one. All zero: none (the default). */
typedef struct sfs_queue_policy {
	int64_t ttl_ms;         /* drop pending items that waited longer;
	                           0: never. Items whose enqueue time is
	                           unknown (pushed by the Go SDK) are kept */
	int64_t max_deliveries; /* an item claimed this many times goes to the
	                           dead letters instead of back to the queue
	                           (expiry, nack, retry); 0: no limit */
} sfs_queue_policy;

/* Sets (or with all fields 0 removes) the policy; negative fields are
 * SFS_INVALID. _get gives all zero when the queue has none. */
int sfs_queue_policy_set(sfs_store *s, sfs_slice queue,
                         const sfs_queue_policy *p);
int sfs_queue_policy_get(sfs_store *s, sfs_slice queue,
                         sfs_queue_policy *out);

typedef struct sfs_gc_stats {
	uint64_t expired;   /* pending items dropped by the time-to-live */
	uint64_t returned;  /* in-flight items back in the queue */
	uint64_t dead;      /* in-flight items moved to the dead letters */
	uint64_t claims;    /* expired claims ended */
} sfs_gc_stats;

/* A lease or time-to-live as a person writes it (statectl, mount
 * options): a whole number with an optional unit ms, s, m, h or d, no unit
 * meaning seconds ("90", "30s", "1500ms", "10m"), into *ms. SFS_INVALID for
 * anything else, a negative number, or more than 100 years. */
int sfs_duration_parse(const char *text, int64_t *ms);

/* Recovery of one queue, or of every queue (queue = SFS_NONE), in one
 * transaction: time-to-live first, then expired claims (see above for why
 * in that order). *stats may be NULL. Commits nothing when there is
 * nothing to do. */
int sfs_queue_gc(sfs_store *s, sfs_slice queue, sfs_gc_stats *stats);

/* ------------------------------------------------------------------------
 * The VGI Go SDK's typed families, stored in function_state under reserved
 * namespaces with the SDK's key encodings, so either side reads the other's
 * state. int64 ids are keys of 8 bytes, big-endian two's complement (so
 * negative ids sort after positive ones, as in the SDK).
 */
#define SFS_NS_WORKER "worker"
#define SFS_NS_SCAN_WORKER "scan_worker"
#define SFS_NS_AGG "agg"
#define SFS_NS_AGG_CONST "agg_const"
#define SFS_NS_WIN "win"
#define SFS_NS_TXN "txn"
#define SFS_NS_LOG "log"

/* Encodes an id as its 8-byte key (out must hold 8 bytes). */
void sfs_id_encode(int64_t id, unsigned char out[8]);
/* Decodes an 8-byte key; SFS_INVALID when the key is not 8 bytes long. */
int sfs_id_decode(sfs_slice key, int64_t *id);

/* Worker state: one value per worker id (the Go SDK uses the PID). */
int sfs_worker_put(sfs_store *s, sfs_slice exec, int64_t worker_id,
                   sfs_slice value);
/* All worker values, ordered by key bytes, without removing them:
 * item.id, item.value. */
int sfs_worker_scan(sfs_store *s, sfs_slice exec, sfs_list *out);
/* All worker values, removed in the same transaction (WorkerCollect). */
int sfs_worker_collect(sfs_store *s, sfs_slice exec, sfs_list *out);

/* Scan-worker state: one value per stream id. */
int sfs_scan_worker_put(sfs_store *s, sfs_slice exec, sfs_slice stream_id,
                        sfs_slice value);
/* item.key = stream id, item.value; ordered by stream id. */
int sfs_scan_worker_scan(sfs_store *s, sfs_slice exec, sfs_list *out);

/* Aggregate state. _get fills a list parallel to ids: item.id = the group
 * id and item.value = its state, or, for a group with no state, item.id = 0
 * and item.value.ptr = NULL (the SDK's zero entry). */
int sfs_agg_get(sfs_store *s, sfs_slice exec, const int64_t *ids, size_t n,
                sfs_list *out);
/* Puts n states in one transaction; n == 0 touches nothing. */
int sfs_agg_put(sfs_store *s, sfs_slice exec, const int64_t *ids,
                const sfs_slice *values, size_t n);
int sfs_agg_clear(sfs_store *s, sfs_slice exec);

/* Aggregate constant arguments, per function name. _get: SFS_NOTFOUND if
 * none were stashed. */
int sfs_agg_const_put(sfs_store *s, sfs_slice exec, sfs_slice function,
                      sfs_slice args);
int sfs_agg_const_get(sfs_store *s, sfs_slice exec, sfs_slice function,
                      sfs_buf *out);

/* Window partitions, per partition id. _get: SFS_NOTFOUND when absent;
 * _delete: SFS_NOTFOUND when absent. */
int sfs_win_put(sfs_store *s, sfs_slice exec, int64_t partition,
                sfs_slice value);
int sfs_win_get(sfs_store *s, sfs_slice exec, int64_t partition, sfs_buf *out);
int sfs_win_delete(sfs_store *s, sfs_slice exec, int64_t partition);
int sfs_win_clear(sfs_store *s, sfs_slice exec);

/* Transaction state: the scope is the transaction's opaque data. _get fills
 * a list parallel to keys: item.key = the key, item.value.ptr = NULL when
 * absent. _put writes n pairs in one transaction. */
int sfs_txn_get(sfs_store *s, sfs_slice txn, const sfs_slice *keys, size_t n,
                sfs_list *out);
int sfs_txn_put(sfs_store *s, sfs_slice txn, const sfs_slice *keys,
                const sfs_slice *values, size_t n);
int sfs_txn_clear(sfs_store *s, sfs_slice txn);

/* Deletes every key/value, log and counter row of a scope, all namespaces,
 * in one transaction, and stores the exact number of rows in *count (may be
 * NULL). Work queues are untouched. A second call gives 0. */
int sfs_exec_clear(sfs_store *s, sfs_slice scope, uint64_t *count);

/*
 * The stream engine's keyed state maps onto the same tables, with the owner
 * ("op-0", "worker-3") as the scope and the state's name as the namespace:
 *   ValueState Get/Set/Clear  -> sfs_kv_get / sfs_kv_put / sfs_kv_delete
 *   ValueState Keys           -> sfs_kv_scan with keys_only
 *   ValueState SnapshotAll    -> sfs_kv_scan
 *   ValueState RestoreAll     -> sfs_kv_restore
 *   ListState Append/GetAll   -> sfs_log_append / sfs_log_scan
 *   ListState Clear           -> sfs_log_clear with the key
 *   ListState Keys            -> sfs_log_keys
 * Appends after a reopen or a restore extend a list, because log ids come
 * from the store, not from the process.
 */

/* ------------------------------------------------------------------------
 * Names: byte strings as file names (the codec the mount and statectl share)
 *
 * Scopes, namespaces and keys are byte strings; file names are not. One
 * codec turns each into a name and back, so a path seen under the mount can
 * be pasted into a command. Per kind it is a bijection: every byte string
 * has exactly one name, and a name decodes to at most one byte string (any
 * other spelling is SFS_INVALID, never an alias).
 *
 *   text      printable UTF-8 stays as it is ("user 42", "café"); other
 *             bytes (C0/C1 controls, DEL, invalid UTF-8) and '/' '%' become
 *             %XX with upper-case hex: "a/b" -> "a%2Fb", "x\n" -> "x%0A".
 *   hex       when that would be longer than hex, "%x" and lower-case hex:
 *             16 random bytes -> "%x9f03..."; the empty string is "%x".
 *   reserved  ".", "..", the special files (.drain .pop .wait .claim) and,
 *             for SFS_NAME_SCOPE, the root's directories (exec queue
 *             counter) get their first byte escaped: ".pop" -> "%2Epop",
 *             scope "exec" -> "%65xec".
 *   id        SFS_NAME_ID (keys of the Go SDK's typed namespaces worker,
 *             agg, win) and SFS_NAME_ID_LE (the Python SDK's namespaces of
 *             packed ids: _vgi/aggregate_state, _vgi/aggregate_window_
 *             partition, _vgi/buffering_init, _vgi/streaming_session,
 *             _vgi/tio_state): an 8-byte key is the decimal int64 it
 *             encodes, big- or little-endian ("42", "-1"); another key
 *             whose text looks like a decimal number gets its first byte
 *             escaped ("123" as 3 bytes -> "%3123"). Listings stay in key
 *             (byte) order, which is numeric order for big-endian ids >= 0
 *             but not for little-endian ones.
 *   long      an encoding over SFS_NAME_MAX bytes is cut (never inside an
 *             escape or a character) and ends in "%~" plus 32 hex digits of
 *             a BLAKE2b-128 hash of the whole string. Such a name is found,
 *             not decoded: sfs_name_decode gives the byte prefix and sets
 *             *hashed; the string it names is the one starting with that
 *             prefix whose sfs_name_encode is the name.
 * Thread-safe; no store needed.
 */
#define SFS_NAME_MAX 255 /* longest name the codec produces (NAME_MAX) */

typedef enum sfs_name_kind {
	SFS_NAME_KEY = 0, /* a key or a namespace */
	SFS_NAME_SCOPE,   /* a scope or a queue id (also escapes exec, queue, counter) */
	SFS_NAME_ID,      /* a key of a typed namespace: 8-byte ids in decimal */
	SFS_NAME_ID_LE,   /* the same for 8-byte little-endian ids */
} sfs_name_kind;

/* SFS_NAME_ID for the keys of ns "worker", "agg" and "win", SFS_NAME_ID_LE
 * for those of the Python SDK's id namespaces (above), else
 * SFS_NAME_KEY. */
sfs_name_kind sfs_name_key_kind(sfs_slice ns);

/* Writes the name of bytes into out, NUL-terminated; *len (may be NULL)
 * gets its length (1..SFS_NAME_MAX). SFS_INVALID for a NULL slice or an
 * unknown kind; SFS_NOMEM. */
int sfs_name_encode(sfs_slice bytes, sfs_name_kind kind,
                    char out[SFS_NAME_MAX + 1], size_t *len);

/* Decodes the name (len bytes, no NUL needed) into *out, a buffer the
 * caller frees with sfs_buf_free. *hashed (may be NULL) is set to 1 for a
 * long name, whose *out is only the byte prefix (see above), else 0.
 * SFS_INVALID when the name is not the codec's name of any byte string
 * (wrong escapes, lower-case %xx, a non-canonical spelling, '/', empty). */
int sfs_name_decode(const char *name, size_t len, sfs_name_kind kind,
                    sfs_buf *out, int *hashed);

/* ------------------------------------------------------------------------
 * Whole-store operations
 */

/* Called with work done and total work (same unit, total may grow); a
 * nonzero return cancels the operation with SFS_CANCELLED. */
typedef int (*sfs_progress_fn)(uint64_t done, uint64_t total, void *ctx);

/* Writes a consistent copy of the live store to path while other processes
 * keep writing. The copy is written beside path and renamed into place after
 * an fsync, so a crash never leaves a half-written file under path. The copy
 * is encrypted with the store's key (plaintext for a plaintext store).
 * SFS_EXISTS if path exists. progress may be NULL. */
int sfs_checkpoint(sfs_store *s, const char *path, sfs_progress_fn progress,
                   void *ctx);

/* Brings the live store back to exactly the state of a checkpoint made by
 * sfs_checkpoint (same key), in one transaction that other processes see as
 * any other commit. The checkpoint is verified first; on any failure the
 * live store is unchanged. */
int sfs_restore(sfs_store *s, const char *path, sfs_progress_fn progress,
                void *ctx);

typedef struct sfs_info {
	const char *path;        /* borrowed from the store */
	int schema_version;      /* statefs schema version */
	int encrypted;
	const char *cipher;      /* "xchacha20poly1305", or "none" */
	int crypt_format;        /* on-disk encryption format, 0 for plaintext */
	const char *kdf;         /* "raw", "argon2id", or "none" */
	uint64_t page_size;
	uint64_t page_count;
	uint64_t file_size;      /* main file, bytes */
	uint64_t wal_size;       /* -wal file, bytes */
	uint64_t kv_rows;
	uint64_t counter_rows;
	uint64_t log_rows;
	uint64_t queue_rows;     /* pending items */
	uint64_t claimed_rows;   /* items under a claim */
	uint64_t dead_rows;      /* dead letters */
} sfs_info;

int sfs_store_info(sfs_store *s, sfs_info *out);

/* Figures for watching a store (statectl top and metrics): what
 * sfs_store_info says, and per queue and per scope, from one read
 * transaction, so they are consistent with each other. It takes no write
 * lock and writes nothing (a read-only handle is enough); its cost is a
 * pass over the queue and scope indexes.
 *
 * pushed and taken count, per queue, the items pushed (sfs_queue_push,
 * also through the mount and statectl) and the items handed to consumers
 * (pop, drain, claim) through statefs since the store began counting
 * (schema 4). They only grow, except that a queue's counts are forgotten
 * after it has been empty and unused for a day (a counter reset). Each
 * writer keeps its counts in memory and writes them at most once a
 * second, inside a write transaction it makes anyway, and when it closes
 * the store: so a count lags by up to a second under steady work, and a
 * writer that goes idle holds back its last second until it writes again
 * or closes (sfs_queue_gc writes them too, and the daemon runs it
 * periodically). Items an
 * SDK pushes or pops with its own SQL are not counted: they show in the
 * pending count only. */
typedef struct sfs_queue_stats {
	sfs_buf queue;             /* the queue id */
	uint64_t pending;          /* waiting items (sfs_queue_len) */
	uint64_t inflight;         /* items under a claim */
	uint64_t dead;             /* dead letters */
	uint64_t claims;           /* claims holding items */
	uint64_t expired;          /* of which the lease ran out (not yet
	                              recovered) */
	int64_t oldest_claim_ns;   /* when the oldest claim was made; 0: none */
	int64_t head_ns;           /* when the head item's wait began; 0: no
	                              pending item, or its time is unknown */
	uint64_t pushed;           /* items pushed, see above */
	uint64_t taken;            /* items popped, drained or claimed */
} sfs_queue_stats;

typedef struct sfs_scope_stats {
	sfs_buf scope;
	uint64_t kv;               /* key/value entries, all namespaces */
	uint64_t log;              /* log entries */
	uint64_t counter;          /* counters */
} sfs_scope_stats;

typedef struct sfs_stats {
	int64_t now_ns;            /* CLOCK_REALTIME when it was read */
	sfs_info info;             /* as sfs_store_info; path borrowed from
	                              the store */
	sfs_queue_stats *queues;   /* every queue with items, claims, dead
	                              letters or counts, by queue bytes */
	size_t nqueues;
	sfs_scope_stats *scopes;   /* every scope with entries of the kv, log
	                              or counter families, by scope bytes */
	size_t nscopes;
} sfs_stats;

/* One snapshot of the figures into *out, freed with sfs_stats_free. The
 * sums over queues and scopes are info's row counts. */
int sfs_store_stats(sfs_store *s, sfs_stats **out);
/* Frees what sfs_store_stats returned. NULL is fine. */
void sfs_stats_free(sfs_stats *st);

/* Reads every page (authenticating each one in an encrypted store) and runs
 * SQLite's integrity check. SFS_CORRUPT with the first problem in the
 * detail. progress counts pages. */
int sfs_store_verify(sfs_store *s, sfs_progress_fn progress, void *ctx);

/* Re-encrypts the store at path from old_key to new_key. No other process may
 * have the store open (SFS_BUSY otherwise). Crash-safe: an interruption at
 * any point leaves a store that opens with the old key or with the new one.
 * progress counts pages; a nonzero return cancels (SFS_CANCELLED, the store
 * unchanged). The store is copied (compacted) into path.rekey beside it,
 * which is verified and renamed over path: it needs free space for one
 * more copy. Running it again after an interruption finishes the job (a
 * store already under new_key is SFS_OK). old_key == NULL encrypts a
 * plaintext store; new_key == NULL writes a plaintext one (both NULL is
 * SFS_INVALID). Afterwards old_key gets SFS_WRONGKEY. */
int sfs_rekey(const char *path, const sfs_key *old_key,
              const sfs_key *new_key, sfs_progress_fn progress, void *ctx);

/* ------------------------------------------------------------------------
 * Export and import: every row of every family, for moving state between
 * machines. Rows carry bytes; the caller chooses the text encoding.
 */
typedef struct sfs_row {
	sfs_family family;
	sfs_slice scope;     /* queue id for SFS_FAM_QUEUE */
	sfs_slice ns;        /* SFS_NONE for queues and scope-only dirs */
	sfs_slice key;       /* SFS_NONE for queues and dirs */
	sfs_slice value;     /* value, entry or item; SFS_NONE for counters, dirs */
	int64_t id;          /* log and queue rows; claim, in-flight and dead
	                        rows (the claim id, or the item id) */
	int64_t n;           /* counter rows; for SFS_FAM_DIR rows, the family
	                        of the directory (SFS_FAM_KV .. SFS_FAM_QUEUE);
	                        claim and in-flight rows as sfs_family says */
	int64_t mtime_ns;
	int64_t deliveries;  /* queue, in-flight and dead rows: times the item
	                        was claimed; policy rows: max_deliveries */
} sfs_row;

/* Calls fn for every row, from one consistent snapshot, in a fixed order
 * (family, then scope, ns, key, id). The row's slices are borrowed for the
 * duration of the call. A nonzero return from fn stops the export and is
 * returned. progress (may be NULL) counts rows. */
int sfs_export(sfs_store *s, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx);

/* Import in one transaction: begin, any number of rows, then commit or
 * abort. Rows that already exist identically change nothing (an import is
 * idempotent); log and queue rows keep their ids (id > 0, else
 * SFS_INVALID), and an id that holds a different row is SFS_EXISTS:
 * nothing is overwritten. Key/value entries and counters are replaced, as
 * a put or set would; so are queue policies. mtime_ns is kept as given.
 * Claims keep their ids; an in-flight row needs its claim imported first
 * (export order does that; else SFS_INVALID); an item id that is pending,
 * in flight or dead as another of those is SFS_EXISTS. The claim and item
 * id sequences move past every imported id. The store is locked for
 * writing between begin and commit/abort: use the import from one thread
 * and do not call other functions of the store meanwhile. */
typedef struct sfs_import sfs_import;
int sfs_import_begin(sfs_store *s, sfs_import **out);
int sfs_import_row(sfs_import *imp, const sfs_row *row);
int sfs_import_commit(sfs_import *imp); /* frees imp, also on failure */
void sfs_import_abort(sfs_import *imp); /* frees imp; NULL is fine */

#ifdef __cplusplus
}
#endif

#endif /* STATEFS_H */
