/*
 * statefs.h - the statefs engine's one public header.
 *
 * statefs keeps the operational state of data tools in one store that many
 * processes share: scoped key/value entries, counters, append-logs, and
 * work queues with claims. A store is a SQLite file today (the backend is
 * chosen from the store's name when it is opened); it is encrypted at rest
 * unless the caller asks for plaintext. The VGI Go SDK reads and writes the
 * same tables (see "The Go SDK's families" below).
 *
 * This header is the contract. Everything above core/ (the FUSE view, the
 * daemon, statectl) includes only this file.
 *
 * Conventions, for every function below unless its comment says otherwise:
 *
 *  - Status. Functions return an int status: SFS_OK (0) or one of the
 *    sfs_status codes. sfs_strerror() names a code; sfs_errdetail() gives
 *    the detail of the last failure on the calling thread ("page 7 of
 *    state.db failed authentication"). Output parameters are written only
 *    on SFS_OK.
 *
 *  - Errors. Each function's "Errors:" line lists the statuses it returns
 *    beyond the common ones, which any function may return where they
 *    apply: SFS_INVALID for an argument these conventions forbid (a NULL
 *    handle or required pointer, a required slice with a NULL ptr, an
 *    unknown flag or enum value), SFS_TOOBIG for a name over SFS_MAX_NAME
 *    given to a call that writes it (see SFS_MAX_NAME) or a value over the
 *    store's limit, SFS_READONLY for a write to a
 *    read-only handle, SFS_UNSUPPORTED for what the store's backend cannot
 *    do, and, from anything that reaches the store, SFS_BUSY, SFS_IO,
 *    SFS_FULL, SFS_CORRUPT, SFS_NOMEM and SFS_INTERNAL.
 *
 *  - Byte strings. Scopes, namespaces, keys and values are byte strings
 *    passed as sfs_slice (pointer + length, borrowed for the duration of the
 *    call). A required slice with ptr == NULL is SFS_INVALID; an empty string
 *    is a slice with a non-NULL ptr and len 0 (use sfs_str("")). Optional
 *    slices (scan bounds) use SFS_NONE, ptr == NULL, for "no bound": an empty
 *    but present bound is different from no bound. Keys compare bytewise
 *    (memcmp, shorter prefix first).
 *
 *  - Memory. Every sfs_buf and sfs_list returned belongs to the caller and is
 *    released with sfs_buf_free() / sfs_list_free(). Borrowed pointers inside
 *    a list live until that list is freed. Callbacks get borrowed rows that
 *    live until the callback returns.
 *
 *  - Threads. A store handle may be used from any number of threads at once;
 *    calls on one handle are serialised inside the engine. Callbacks (export,
 *    import, progress) run on the calling thread while the store is busy:
 *    they must not call back into the same store. A handle must not be used
 *    in a child after fork(); open a new one there (a call on an inherited
 *    handle fails with SFS_INVALID and does nothing). The child's first
 *    sfs_store_open lets go of what the handles it inherited hold in it
 *    (SQLite's record of its process's locks, which the child's own
 *    connection must not share), writing nothing to the store; their
 *    memory stays until sfs_store_close of them, which then frees only
 *    that (also before any open). An inherited SQLite handle that was in
 *    a call of another thread, or held writes (sfs_store_hold), at the
 *    fork cannot be let go of: the child's opens of SQLite stores fail
 *    with SFS_UNSUPPORTED, for the life of the process (not SFS_BUSY: no
 *    retry can succeed), and its sfs_store_close does nothing. So fork
 *    when no call is under way, or exec.
 *
 *  - Durability. A call that returns SFS_OK has committed: its effect survives
 *    a crash of the process (a write a thread holds, sfs_store_hold, once
 *    sfs_store_commit returns SFS_OK). sfs_store_sync() makes everything
 *    committed before it survive a power loss too.
 *
 *  - Processes. Any number of processes may open the same store. Every
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
	SFS_OVERFLOW,      /* counter arithmetic left int64, or a new id would
	                      pass SFS_ID_MAX; nothing changed */
	SFS_EXISTS,        /* target exists (rename without replace, init) */
	SFS_NOTEMPTY,      /* a scope or namespace still holds entries */
	SFS_BUSY,          /* another process held the lock past the timeout */
	SFS_READONLY,      /* the store was opened read-only */
	SFS_IO,            /* operating-system I/O error (detail says which) */
	SFS_FULL,          /* no space left on the device */
	SFS_CORRUPT,       /* a page failed authentication, or the file is damaged */
	SFS_WRONGKEY,      /* the key does not open this store */
	SFS_NOKEY,         /* the store is encrypted and no key was given */
	SFS_NOTENCRYPTED,  /* the store is plaintext: a key was given, or plaintext
	                    * mode was not asked for (the detail says which) */
	SFS_FORMAT,        /* not a statefs store, or an unsupported format */
	SFS_KEYPERM,       /* key file readable by others or not owned by us */
	SFS_NOMEM,
	SFS_CLAIMLOST,     /* the claim expired; its items went back to the queue */
	SFS_CANCELLED,     /* a progress callback asked to stop */
	SFS_UNSUPPORTED,   /* the store's backend cannot do this; the detail
	                      says what to use instead */
	SFS_INTERNAL,      /* a bug in statefs; the detail says where */
	SFS_BADKEY,        /* a key, key file or passphrase that is not a usable
	                      key: wrong size or encoding, not a regular file,
	                      empty (after SFS_INTERNAL: the values above stay) */
	SFS_STATUS_MAX     /* not a status: one past the last one */
} sfs_status;

/* The name of a status as a plain sentence fragment ("not found"). Static
 * string, never NULL, also for unknown codes. Any thread. Never fails. */
const char *sfs_strerror(int status);

/* A 128-bit BLAKE2b digest (no key) of the n bytes at p: the same bytes on
 * every host and version, for names made from data (the mount shows a name
 * too long for the kernel as a prefix and this digest, fs/name.c). Not a
 * MAC: nothing secret goes in. Any thread, before sfs_store_open too.
 * Never fails. */
#define SFS_DIGEST_BYTES 16
void sfs_digest(const void *p, size_t n, unsigned char out[SFS_DIGEST_BYTES]);

/* The detail of the last failure on this thread, or "" when there is none.
 * Never contains key material. Borrowed: valid until the next sfs_* call on
 * this thread. Never fails. */
const char *sfs_errdetail(void);

/* Diagnostics. The engine says nothing unless a logger is set: it is a
 * library. level is a syslog(3) priority; msg is borrowed for the call. The
 * logger may be called from any thread; set it before opening stores (it
 * is read without a lock). It may be called while a store's lock is held
 * (a page that fails authentication is logged where it is found), so it
 * must not call into statefs: a logger that appends to a store's log on
 * the same handle waits for ever. fn == NULL restores silence. Never
 * fails. */
typedef void (*sfs_log_fn)(int level, const char *msg, void *ctx);
void sfs_set_logger(sfs_log_fn fn, void *ctx);

/* ------------------------------------------------------------------------
 * Byte strings and returned memory
 */
typedef struct sfs_slice {
	const void *ptr;
	size_t len;
} sfs_slice;

/* (A compound literal is C's; C++ says the same with a braced value, so
 * that a C++ program builds with -pedantic-errors too.) */
#ifdef __cplusplus
#define SFS_NONE (sfs_slice{ NULL, 0 })
#else
#define SFS_NONE ((sfs_slice){ NULL, 0 })
#endif

/* A slice of len bytes at ptr, borrowed from the caller. Never fails. */
static inline sfs_slice sfs_bytes(const void *ptr, size_t len)
{
	sfs_slice s = { ptr, len };
	return s;
}

/* A NUL-terminated string as a slice (without the NUL); NULL gives
 * SFS_NONE. Borrowed from the caller. Never fails. */
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

/* Releases b->ptr and zeroes *b. NULL and empty buffers are fine. Never
 * fails. */
void sfs_buf_free(sfs_buf *b);

/* What the engine says about one value, counter, entry or item without its
 * bytes (the stat calls), and about every row of a listing (sfs_item).
 * Each field means one thing; a field that does not apply to what was
 * read is 0. */
typedef struct sfs_stat {
	uint64_t size;           /* the value's, entry's or item's length */
	int64_t mtime_ns;        /* when it was last written, ns since the
	                            epoch, in whole seconds; 0 when unknown
	                            (written by another SDK). A value or
	                            counter: its last write; a log entry: its
	                            append; a pending or in-flight item: the
	                            start of its current wait in the queue; a
	                            dead letter: its death. Along a
	                            log's or queue's ids never goes
	                            backwards (docs/engine.md). A value
	                            given the epoch itself (sfs_kv_set_mtime
	                            of a time in its first second: touch -d
	                            @0) reads SFS_MTIME_EPOCH, which 0
	                            cannot say */
	int64_t counter;         /* a counter's value */
	int64_t deliveries;      /* in-flight items and dead letters: how many
	                            times the item was claimed, this claim
	                            included; pending items: how many times
	                            before (a nack or a lease that ran out put
	                            it back), 0 for a fresh one */
	int64_t claim_id;        /* in-flight items: the claim holding it */
	int64_t lease_until_ns;  /* in-flight items: when that claim's lease
	                            ends (may have passed) */
} sfs_stat;

/* The mtime_ns of a value whose time was given as the epoch: 1 ns after
 * it, since 0 means "unknown" (a row another SDK wrote). Show it as the
 * epoch (the mount does, statectl writes 0). */
#define SFS_MTIME_EPOCH 1

/* One row of a listing: the row's names and bytes, and its sfs_stat. */
typedef struct sfs_item {
	sfs_buf key;         /* a key, or the name a directory listing gives;
	                        ptr NULL for log entries and queue items */
	sfs_buf value;       /* the value, entry or item; ptr NULL when not
	                        loaded (keys_only) */
	sfs_buf reason;      /* dead letters: why ("rejected", "delivery
	                        limit"); ptr NULL otherwise */
	int64_t id;          /* log entries and queue items: the id */
	sfs_stat st;
} sfs_item;

typedef struct sfs_list {
	sfs_item *items;
	size_t n;
} sfs_list;

/* Releases every item and the array, and zeroes *l: every borrowed pointer
 * into the list ends here. NULL is fine. Never fails. */
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
 * live in the backend's cache (ordinary heap) while a store is open, so a
 * tool that opens stores should disable core dumps and ptrace early in
 * main() (setrlimit(RLIMIT_CORE) to 0 and prctl(PR_SET_DUMPABLE, 0)); a
 * library must not change those process-wide settings by itself.
 *
 * Every key is the caller's until sfs_key_destroy; the functions that make
 * one set *out only on SFS_OK.
 */
typedef struct sfs_key sfs_key;

/* A new random 32-byte key. Errors: SFS_NOMEM. */
int sfs_key_generate(sfs_key **out);

/* A 32-byte key given as base64 (standard or URL-safe alphabet, padding
 * optional) or as 64 hex digits; surrounding whitespace is ignored.
 * Errors: SFS_BADKEY for anything else, a key of another length
 * included; SFS_INVALID for a NULL argument. */
int sfs_key_from_text(const char *text, size_t len, sfs_key **out);

/* Reads a key file: a regular file owned by the effective user (or root),
 * holding 32 raw bytes or the key as text. Errors: SFS_NOTFOUND (no such
 * file), SFS_KEYPERM (readable or writable by group or others, or owned by
 * another user; the mode is in the detail), SFS_BADKEY (not a key: empty,
 * too large, of another length or encoding, or not a regular file: a FIFO
 * is refused at once, without reading or waiting on it; or a file the
 * caller may not read), SFS_IO;
 * SFS_INVALID for a NULL argument. */
int sfs_key_from_file(const char *path, sfs_key **out);

/* A passphrase, stretched with Argon2id when a store is opened or created.
 * The passphrase is copied; the caller should wipe its own copy. A new
 * store gets libsodium's MODERATE limits (about 0.4 s and 256 MiB per
 * open); the store's header records them, so opening uses what the
 * creator chose. The salt is the store's own (each file has one).
 * Errors: SFS_BADKEY for an empty passphrase or one over 4096 bytes,
 * SFS_INVALID for a NULL argument. */
int sfs_key_from_passphrase(const void *pass, size_t len, sfs_key **out);

/* Writes a raw key to a new file with mode 0600, creating missing parent
 * directories with mode 0700. The file holds the key as base64 and a
 * newline (printable for a paper backup, usable as STATEFS_KEY); it and its
 * directory are fsynced. Errors: SFS_EXISTS if the file exists (never
 * overwrites, also when two processes race), SFS_INVALID for a passphrase
 * key, SFS_IO. */
int sfs_key_write_file(const sfs_key *key, const char *path);

/* The key as standard base64 with padding, NUL-terminated, into out
 * (outlen >= 45). Meant for `statectl keygen` printing to a pipe; the
 * caller wipes out afterwards. Errors: SFS_INVALID for a passphrase key or
 * a short buffer. */
int sfs_key_to_text(const sfs_key *key, char *out, size_t outlen);

/* Wipes and frees. NULL is fine. Never fails. */
void sfs_key_destroy(sfs_key *key);

/* ------------------------------------------------------------------------
 * Opening a store
 */
enum {
	SFS_OPEN_CREATE = 1u << 0,    /* create the store if it does not exist */
	SFS_OPEN_READONLY = 1u << 1,  /* no writes; SFS_READONLY on any */
	SFS_OPEN_PLAINTEXT = 1u << 2, /* no encryption (development, SDK stores) */
	SFS_OPEN_EXCL = 1u << 3,      /* with CREATE: SFS_EXISTS if it exists,
	                                 or another process makes it
	                                 meanwhile (of two at once, one wins) */
	SFS_OPEN_NORECOVER = 1u << 4, /* no claim recovery at open: for a caller
	                                 that runs sfs_queue_gc and wants its
	                                 counts ("Claims") */
	SFS_OPEN_ENV = 1u << 5,       /* the tools' rules (below): look in the
	                                 environment and the default files for
	                                 what cfg leaves NULL */
	SFS_OPEN_WAL_THREAD = 1u << 6, /* SQLite, read-write: the write-ahead
	                                 log is checkpointed by a thread of the
	                                 handle's, with a connection of its own,
	                                 instead of inside the commit that fills
	                                 it (copies and fsyncs: milliseconds);
	                                 for a long-lived writer such as the
	                                 daemon. Durability is unchanged. */
};

#define SFS_DEFAULT_MAX_VALUE (64u * 1024 * 1024)
/* The longest scope, namespace or key a call writes: a put, add, append,
 * push, policy, created directory, the target of a rename, an edit that
 * would make the value. Calls that read, list, edit an existing value,
 * move away or remove take a name of any length, as do export and import:
 * programs sharing the store (an SDK) may have written longer ones. */
#define SFS_MAX_NAME (64u * 1024)

/* The largest id of a log entry, a queue item (pending, in flight or dead)
 * and a claim: 4 * 10^18, a little under half of INT64_MAX. A store
 * issues ids up to here and no further: an append, a push, a claim, a
 * retry or a requeue that would need a larger one fails with SFS_OVERFLOW
 * and changes nothing, and an import refuses larger ones (SFS_INVALID).
 * The room above is the engine's own, so that nothing it computes from an
 * id can leave int64: a queue with items in flight keeps two marker rows
 * past its last item, and a push moves them further with arithmetic that
 * adds two ids (docs/claims.md, "Clears by another program"). A
 * PostgreSQL store keeps the same bound: its id sequences stop there
 * (docs/postgres.md). */
#define SFS_ID_MAX INT64_C(4000000000000000000)

/* The largest delivery count an item carries: 2^31 - 1, more claims of
 * one item than any queue sees. An import refuses a larger count
 * (SFS_INVALID), and a claim of an item already at it leaves the count
 * there instead of adding one: no claim's count can leave an integer
 * column (SQLite would store INT64_MAX + 1 as a REAL; PostgreSQL's
 * bigint would fail the claim), on either backend. */
#define SFS_DELIVERIES_MAX INT64_C(2147483647)

/* What to open and how. Zero means the default for every number.
 *
 * Without SFS_OPEN_ENV the caller says everything: the store is db, else
 * the default store ($XDG_STATE_HOME/statefs/state.db, else
 * ~/.local/state/statefs/state.db); the key is key, else the contents of
 * keyfile; neither is SFS_INVALID unless SFS_OPEN_PLAINTEXT.
 *
 * With SFS_OPEN_ENV, the rules the daemon and statectl follow:
 *   store: db, else $STATEFS_DB, else the default store;
 *   key:   key, else keyfile, else $STATEFS_KEY, else $STATEFS_KEY_FILE,
 *          else the default key file ($XDG_CONFIG_HOME/statefs/key, else
 *          ~/.config/statefs/key); none of them with SFS_OPEN_PLAINTEXT.
 * STATEFS_KEY is wiped from the environment once seen, even when another
 * source wins: the C library's environment (environ), which children
 * inherit; a copy the host runtime keeps of its own (Python's os.environ)
 * is the host's to delete. Of opens of several threads at once, one takes
 * it and the others find it consumed, as one after another would. A plaintext store opened without
 * SFS_OPEN_PLAINTEXT is refused with a sentence saying how to open it. When the store does not
 * exist, SFS_OPEN_CREATE is set and no key was found either, a new key file
 * is written at the default key path first (the first run).
 *
 * A db of ":memory:" is a process-local store that vanishes on close; it
 * needs no key (it never reaches a disk). A db that is given and empty is
 * SFS_INVALID, with or without SFS_OPEN_ENV: it is never taken for "none"
 * (a tool's --db "$DB" with DB unset would otherwise use the default
 * store); an empty $STATEFS_DB counts as unset. */
typedef struct sfs_config {
	const char *db;          /* the store, as sfs_store_open chooses it */
	const sfs_key *key;      /* borrowed for the call only */
	const char *keyfile;     /* read when key is NULL */
	unsigned flags;          /* SFS_OPEN_* */
	int busy_timeout_ms;     /* 0: 30000 */
	uint64_t max_value;      /* largest value accepted; 0:
	                            SFS_DEFAULT_MAX_VALUE */
	int64_t lease_ms;        /* the claim lease; 0: ten minutes;
	                            over 100 years SFS_INVALID, as a
	                            claim's own */
} sfs_config;

typedef struct sfs_store sfs_store;

/* Opens (and with SFS_OPEN_CREATE creates) a store as cfg says. *notice
 * (may be NULL) gets a malloc'd sentence when the first run wrote a new key
 * file (where the key is, and to back it up apart from the store), else
 * NULL. A store created here is mode 0600, and missing parent directories
 * are created with mode 0700; so is a store made in an empty file (any
 * read-write open makes one there), before anything is written to it. A plaintext store written by the VGI Go SDK
 * opens with SFS_OPEN_PLAINTEXT; missing statefs tables are added unless
 * read-only. The handle is the caller's until sfs_store_close.
 * Errors, each with a sentence in the detail: SFS_NOTFOUND (no store and no
 * CREATE, or the key file given does not exist), SFS_EXISTS (EXCL and the
 * store exists), SFS_WRONGKEY, SFS_NOKEY (encrypted, no key), SFS_NOTENCRYPTED
 * (a key for a plaintext store, or, under SFS_OPEN_ENV, no key found for
 * one opened without SFS_OPEN_PLAINTEXT), SFS_KEYPERM, SFS_BADKEY (the key file or
 * STATEFS_KEY is not a key), SFS_FORMAT (not a store, or a newer format),
 * SFS_UNSUPPORTED (a SQLite store in a child forked while a handle was in
 * use: see Threads above). */
int sfs_store_open(const sfs_config *cfg, sfs_store **out, char **notice);

/* Closes and frees the handle; NULL is fine. Outstanding lists stay valid;
 * sfs_info strings borrowed from the handle end here. No other thread may
 * be using the handle. Never fails. */
void sfs_store_close(sfs_store *s);

/* Makes every commit so far survive power loss. Writes another thread
 * holds (sfs_store_hold) are committed first; a failure of that commit is
 * returned here too (and to the holder's sfs_store_commit). Errors: the
 * common ones. */
int sfs_store_sync(sfs_store *s);

/* A number that changes whenever any process commits a change to the store
 * (including this handle). Cheap: no disk I/O when nothing changed. Used to
 * drop caches and to wake waiters. Errors: the common ones. */
int sfs_store_version(sfs_store *s, uint64_t *out);

/* Whether calls on the handle run at once: 1 for a backend that gives
 * each call a connection of its own (PostgreSQL), 0 for one that runs
 * them one at a time on the handle's connection (SQLite), where more
 * threads calling only wait for each other. A program that calls from
 * many threads (the mount) sizes its pool by it. 0 for NULL. */
int sfs_store_concurrent(const sfs_store *s);

/* Held writes: one commit for the writes a thread makes in a row.
 *
 * Between sfs_store_hold(s, 1) and sfs_store_hold(s, 0) the calling
 * thread's writes that may share a commit with other threads' (a key/value
 * put, edit or delete, a counter's add, set or delete, a log append, a
 * queue push) are held: each makes its change in a transaction left open
 * and returns without committing it. A held write that fails undoes its
 * own change only and returns its error at once; one that returns SFS_OK
 * is not durable, and its outputs (a size, an id) are not final, until
 * sfs_store_commit says so. Held writes are committed by sfs_store_commit,
 * or before it by the first call that cannot run beside writes not yet
 * committed: any call from another thread, and from the holding thread
 * any call but a held write and the one-row reads sfs_kv_stat,
 * sfs_dir_exists and sfs_counter_get, which see the held writes. Until
 * then other processes wait to write (the store's write lock is held),
 * so hold only for as long as a few calls take.
 *
 * It is for a program that answers many clients from one thread (the
 * mount: a FLUSH is answered only after sfs_store_commit), where one
 * commit then serves the writes of many clients, each still told of its
 * write only once it is committed. A backend whose calls run at once
 * (sfs_store_concurrent) holds nothing: each write commits by itself.
 * A thread holds writes on one store at a time, and calls
 * sfs_store_commit before it ends or the store is closed; the hold ends
 * with the handle (a handle opened later is not held, whatever memory
 * it gets).
 * Errors: SFS_INVALID (NULL; on, while this thread has writes held on
 * another store not yet passed to sfs_store_commit). */
int sfs_store_hold(sfs_store *s, int on);

/* Commits what the calling thread holds on s and is not committed yet.
 * SFS_OK when every write it held since its last sfs_store_commit is
 * committed (also when it held none); else the status and sentence of the
 * first commit that failed: then some of those writes are not stored
 * (which is not said), and none may be reported as stored. Errors: the
 * common ones. */
int sfs_store_commit(sfs_store *s);

/* Whether the store db names exists, creating nothing. Errors:
 * SFS_NOTFOUND (no store there), SFS_FORMAT (something that is not a
 * store: not a regular file, say a FIFO, which is never opened to wait
 * for a writer), else why it could not be told (SFS_IO: the file cannot
 * be read, the server cannot be reached). */
int sfs_store_exists(const char *db);

/* What messages should call the store db: its name without any password
 * it holds (a PostgreSQL connection string may hold one). *out is
 * malloc'd; free() it. Errors: SFS_INVALID (NULL), SFS_NOMEM. */
int sfs_store_name(const char *db, char **out);

/* The store, key and key file sfs_store_open would use for cfg, by the same
 * rules, without opening or creating anything: for tools that need the key
 * itself (rekey), or the key file's place (init), or want to tell a
 * missing store from a missing key.
 *   *db       the store (malloc'd; free()); the default store when cfg
 *             names none;
 *   *key      the key (sfs_key_destroy), or NULL: with SFS_OPEN_PLAINTEXT,
 *             with cfg->key (the caller holds that one), or when the key
 *             file the rules chose does not exist;
 *   *keyfile  (may be NULL) the key file the rules chose, existing or not
 *             (malloc'd), or NULL when the key came from elsewhere
 *             (STATEFS_KEY, cfg->key) or with SFS_OPEN_PLAINTEXT.
 * STATEFS_KEY is consumed, as by sfs_store_open. Errors: SFS_NOTFOUND (no
 * home directory for a default path), SFS_KEYPERM, SFS_BADKEY (a key file
 * or STATEFS_KEY that is not a key), SFS_INVALID (a NULL argument, a db
 * given empty, what sfs_store_open refuses in cfg: unknown or
 * contradictory flags, a negative or too long time). */
int sfs_config_resolve(const sfs_config *cfg, char **db, sfs_key **key,
                       char **keyfile);

/* ------------------------------------------------------------------------
 * Scoped key/value state: function_state(scope_id, ns, key, value)
 */

/* Puts (inserts or replaces) a value. Errors: the common ones. */
int sfs_kv_put(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_slice value);

enum {
	SFS_PUT_REPLACE = 1u << 0, /* the namespace holds exactly these entries
	                              afterwards: keys not given disappear */
};

/* Puts n pairs in one transaction (n == 0 changes nothing, unless
 * SFS_PUT_REPLACE, which then empties the namespace). keys and values may
 * be NULL only when n is 0. Errors: the common ones. */
int sfs_kv_put_many(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, const sfs_slice *values, size_t n,
                    unsigned flags);

/* Gets a value into *out; an empty value is a buffer with len 0.
 * Errors: SFS_NOTFOUND when absent. */
int sfs_kv_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_buf *out);

/* Gets n values from one snapshot into a list parallel to keys: item.key
 * is the key, item.value the value, value.ptr NULL when absent. n == 0
 * gives an empty list. Errors: the common ones. */
int sfs_kv_get_many(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, size_t n, sfs_list *out);

/* The size and time of a value without reading it. Errors: SFS_NOTFOUND
 * when absent. */
int sfs_kv_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_stat *out);

/* Deletes one key. Errors: SFS_NOTFOUND when it was absent (nothing
 * changed). */
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
	SFS_EDIT_EXCL = 1u << 1,   /* with SFS_EDIT_CREATE: the key must be
	                              absent (SFS_EXISTS otherwise), the one
	                              check and change of every client of the
	                              store (O_EXCL) */
};

/* Applies n edits, in order, to the value of (scope, ns, key) in one
 * transaction, and sets its time as sfs_kv_put does; *size (may be NULL)
 * gets the value's length afterwards. n == 0 with SFS_EDIT_CREATE makes an
 * absent key the empty value and changes nothing else. Errors (nothing
 * changed): SFS_NOTFOUND (absent, without SFS_EDIT_CREATE), SFS_EXISTS
 * (present, with SFS_EDIT_EXCL), SFS_TOOBIG
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
	sfs_slice start;   /* lower bound; SFS_NONE: open */
	sfs_slice end;     /* exclusive upper bound; SFS_NONE: open */
	int start_after;   /* start is exclusive: strictly after it (where a
	                      listing continues) */
	int reverse;       /* descending; never changes which bound is which */
	long limit;        /* at most this many rows; <= 0: no limit */
	int keys_only;     /* leave value.ptr NULL; size still set */
} sfs_scan_opts;

/* The entries of (scope, ns) between the bounds, ordered by key, into
 * *out: item.key, item.value (unless keys_only), st.size, st.mtime_ns.
 * opts == NULL scans everything ascending. Errors: the common ones. */
int sfs_kv_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *opts, sfs_list *out);

/* Deletes every key of (scope, ns) in [start, end) (SFS_NONE: open; both:
 * the whole namespace) in one transaction, and stores how many went in
 * *count (may be NULL). Errors: the common ones. */
int sfs_kv_delete_range(sfs_store *s, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count);

/* Reads and removes every entry of (scope, ns) in one transaction, ordered
 * by key, as sfs_kv_scan lists them. An empty namespace gives an empty
 * list. Errors: the common ones. */
int sfs_kv_drain(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_list *out);

enum {
	SFS_RENAME_NOREPLACE = 1u << 0, /* SFS_EXISTS instead of replacing */
	SFS_RENAME_EXCHANGE = 1u << 1,  /* swap with the target (keys and
	                                   counters only) */
};

/* Moves a key to another (scope, ns, key) atomically, with its value's
 * time, replacing the target unless SFS_RENAME_NOREPLACE. With
 * SFS_RENAME_EXCHANGE both must exist and they swap, each with its time,
 * atomically (renameat2's RENAME_EXCHANGE). Renaming a key onto itself
 * changes nothing. Errors: SFS_NOTFOUND (no source; with EXCHANGE, or no
 * target), SFS_EXISTS (NOREPLACE and the target exists), SFS_INVALID
 * (NOREPLACE and EXCHANGE together). */
int sfs_kv_rename(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  sfs_slice to_scope, sfs_slice to_ns, sfs_slice to_key,
                  unsigned flags);

/* ------------------------------------------------------------------------
 * Directories: scopes, namespaces and keys as listable, creatable things.
 *
 * A family is one of the state kinds that has scopes and namespaces. A scope
 * or namespace exists while it holds an entry of that family or was created
 * explicitly (and not yet removed): explicit ones persist when empty.
 * Everywhere below, ns == SFS_NONE means the scope itself.
 */
typedef enum sfs_family {
	SFS_FAM_KV = 1,     /* function_state */
	SFS_FAM_COUNTER,    /* function_counter */
	SFS_FAM_LOG,        /* function_state_log */
	SFS_FAM_QUEUE,      /* work_queue; scope = queue id, no namespaces */
	/* Export rows only (sfs_row): */
	SFS_FAM_DIR,        /* an explicit empty directory */
	SFS_FAM_CLAIM,      /* a claim */
	SFS_FAM_INFLIGHT,   /* a claimed item */
	SFS_FAM_DEAD,       /* a dead letter */
	SFS_FAM_POLICY,     /* a queue's policy */
	SFS_FAM_SEQ,        /* the last id an id space issued ("log",
	                       "queue", "claim"), when above every id the
	                       export holds: ids of entries, items and
	                       claims that are gone are never issued again */
} sfs_family;

/* The names in a directory of a family, ascending, strictly after `after`
 * (SFS_NONE: from the start), at most limit (<= 0: all), as item.key:
 *   scope == SFS_NONE   the scopes (SFS_FAM_QUEUE: the queues that hold
 *                       items, pending, in flight or dead, or were created),
 *                       explicit empty ones included;
 *   ns == SFS_NONE      the namespaces of the scope;
 *   both given          the keys of the namespace: a log's keys that hold
 *                       entries, or the keys of values and counters (with
 *                       st.size and st.mtime_ns; st.counter for counters).
 * Errors: SFS_INVALID for a namespace of SFS_FAM_QUEUE. */
int sfs_dir_list(sfs_store *s, sfs_family fam, sfs_slice scope, sfs_slice ns,
                 sfs_slice after, long limit, sfs_list *out);

/* sfs_dir_list for a caller that needs the names only (a directory
 * listing without attributes): item.key as sfs_dir_list gives it, st may
 * be left zero. For the keys of a value or counter namespace it reads the
 * key index alone (no value sizes, no times): the cheaper call when only
 * names are shown. Errors: as sfs_dir_list. */
int sfs_dir_names(sfs_store *s, sfs_family fam, sfs_slice scope, sfs_slice ns,
                  sfs_slice after, long limit, sfs_list *out);

/* Whether a scope or namespace exists in a family. Errors: SFS_NOTFOUND
 * when it does not. */
int sfs_dir_exists(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Creates an explicit (persisting) empty scope or namespace. Errors:
 * SFS_EXISTS if it exists. */
int sfs_dir_create(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Removes an empty scope or namespace. Errors: SFS_NOTEMPTY if it holds
 * entries (or, for a scope, namespaces), SFS_NOTFOUND if it does not
 * exist. */
int sfs_dir_remove(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);

/* Renames a scope (to_ns ignored) or a namespace, with everything in it,
 * atomically; a queue with its in-flight items, dead letters, claims and
 * policy. Errors: SFS_NOTFOUND (no source), SFS_NOTEMPTY (the target exists
 * and is not empty: only an empty one is replaced), SFS_EXISTS (it exists
 * and SFS_RENAME_NOREPLACE). */
int sfs_dir_rename(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                   unsigned flags);

/* ------------------------------------------------------------------------
 * Counters: function_counter(scope_id, ns, key, n). Independent of a
 * key/value entry with the same name.
 */

/* The counter's value into *value and the time of its last write into
 * *mtime_ns (may be NULL). Errors: SFS_NOTFOUND when absent (an add starts
 * an absent counter at 0). */
int sfs_counter_get(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t *value, int64_t *mtime_ns);

/* Adds delta atomically (an absent counter starts at 0) and stores the new
 * value in *value (may be NULL). Errors: SFS_OVERFLOW if the result leaves
 * int64; then nothing changed. */
int sfs_counter_add(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t delta, int64_t *value);

/* Sets the value's write time to mtime_ns, earlier or later than it was
 * (what `touch -d`, `cp -a`, `tar x` and `rsync -a` ask of a file); the
 * store keeps whole seconds, so the part below one is dropped (a time
 * before the earliest whole second int64 ns holds, -9223372036 s, is that
 * second). The next write sets its own time again, also when that is
 * earlier than this one (as a file's mtime: a value's time is its last
 * write's). Errors: SFS_NOTFOUND when the key is absent (nothing
 * changed). */
int sfs_kv_set_mtime(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t mtime_ns);

/* Sets the counter, creating it if absent. Errors: the common ones. */
int sfs_counter_set(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t value);

/* Creates the counter at value, only when it is absent: the check and the
 * insert are one transaction, so of several clients creating one counter
 * (the mount's O_EXCL creates, on any host) exactly one succeeds.
 * Errors: SFS_EXISTS when it exists (nothing changed). */
int sfs_counter_create(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, int64_t value);

/* Deletes the counter. Errors: SFS_NOTFOUND when it was absent (nothing
 * changed). */
int sfs_counter_delete(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key);

/* Moves a counter to another (scope, ns, key) atomically, with its time,
 * as sfs_kv_rename moves a value (the mount's `mv`, and the rename that
 * `sed -i` and editors save by). Errors: as sfs_kv_rename. */
int sfs_counter_rename(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                       sfs_slice to_key, unsigned flags);

/* The counters of (scope, ns), as sfs_kv_scan: item.key, st.counter,
 * st.mtime_ns (keys_only is ignored). Errors: the common ones. */
int sfs_counter_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *opts, sfs_list *out);

/* ------------------------------------------------------------------------
 * Append-logs: function_state_log(id, scope_id, ns, key, value). Ids are
 * global to the store, strictly increasing and never reused (not after a
 * clear, not after a restart). The Go SDK's log uses ns "log". A log's keys
 * are listed by sfs_dir_list.
 */

/* Appends one entry; *id (may be NULL) gets its id. Errors: the common
 * ones. */
int sfs_log_append(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice value, int64_t *id);

/* Entries of (scope, ns, key) with id > after_id (-1: from the start),
 * ascending by id, at most limit (<= 0: all): item.id, item.value (unless
 * keys_only), st.size, st.mtime_ns. Errors: the common ones. */
int sfs_log_scan(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t after_id, long limit, int keys_only, sfs_list *out);

/* One entry's bytes by id. Errors: SFS_NOTFOUND unless it exists under
 * (scope, ns, key). */
int sfs_log_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                int64_t id, sfs_buf *out);

/* One entry's size and time. Errors: SFS_NOTFOUND as sfs_log_get. */
int sfs_log_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_stat *out);

/* Deletes one entry. Errors: SFS_NOTFOUND when it was absent. */
int sfs_log_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   int64_t id);

/* Deletes the entries of a scope: of one namespace (ns given), of one key
 * (ns and key given), or all of the scope (both SFS_NONE). *count may be
 * NULL. The Go SDK's StateLogClear is ns = "log", key = SFS_NONE.
 * Errors: SFS_INVALID for a key without a namespace. */
int sfs_log_clear(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  uint64_t *count);

/* ------------------------------------------------------------------------
 * Work queues: work_queue(id, execution_id, work_item). FIFO per queue id;
 * ids are global, strictly increasing and never reused. A queue exists while
 * it holds items; there is no registration.
 *
 * An item is in one of three states, and the item functions below take the
 * state they act on: pending (in the queue, in FIFO order), in flight
 * (taken under a claim, see "Claims"), or dead (a dead letter). It keeps
 * its id in every state it moves to, except a retry or a requeue, which
 * push it again under a new id.
 */
typedef enum sfs_item_state {
	SFS_ITEM_PENDING = 1,
	SFS_ITEM_INFLIGHT,
	SFS_ITEM_DEAD,
} sfs_item_state;

/* Appends n items in one transaction; *first_id (may be NULL) gets the id of
 * the first (the rest follow in order). n == 0 touches nothing. Errors: the
 * common ones. */
int sfs_queue_push(sfs_store *s, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id);

/* Removes up to max (>= 1; LONG_MAX: all) items from the head in one
 * transaction and returns them in FIFO order: item.id, item.value,
 * st.size, and with max > 1 st.mtime_ns (when the item was pushed; a pop
 * of one, the hot path, reads no time and leaves it 0). Two callers, in
 * any processes, never get the same item. A pop does not run claim
 * recovery. Errors: SFS_NOTFOUND when the queue has no pending item. */
int sfs_queue_pop(sfs_store *s, sfs_slice queue, long max, sfs_list *out);

/* How many items of the queue are in the state. Errors: the common ones. */
int sfs_item_count(sfs_store *s, sfs_slice queue, sfs_item_state state,
                   uint64_t *n);

/* The items of the queue in the state with id > after_id (-1: all), by
 * id, at most limit (<= 0: all), without changing them: item.id,
 * item.value (unless keys_only), the sfs_stat fields of the state, and
 * item.reason for dead letters. Errors: the common ones. */
int sfs_item_scan(sfs_store *s, sfs_slice queue, sfs_item_state state,
                  int64_t after_id, long limit, int keys_only,
                  sfs_list *out);

/* One item's bytes, without changing it. Errors: SFS_NOTFOUND when the
 * item is not in that state in that queue. */
int sfs_item_get(sfs_store *s, sfs_slice queue, sfs_item_state state,
                 int64_t id, sfs_buf *out);

/* One item's sfs_stat, as sfs_item_scan gives it. Errors: SFS_NOTFOUND as
 * sfs_item_get. */
int sfs_item_stat(sfs_store *s, sfs_slice queue, sfs_item_state state,
                  int64_t id, sfs_stat *out);

/* Removes one item: a pending item or a dead letter is deleted; an item in
 * flight is settled as done (SFS_OUTCOME_DONE, whatever claim holds it).
 * Errors: SFS_NOTFOUND when the item is not in that state, SFS_CLAIMLOST
 * for an in-flight item whose lease has run out. */
int sfs_item_delete(sfs_store *s, sfs_slice queue, sfs_item_state state,
                    int64_t id);

/* Removes every pending item or every dead letter of the queue in one
 * transaction; *count (may be NULL) gets how many. Items in the other
 * states stay. Errors: SFS_INVALID for SFS_ITEM_INFLIGHT (in-flight items
 * leave through their claims). */
int sfs_item_clear(sfs_store *s, sfs_slice queue, sfs_item_state state,
                   uint64_t *count);

/* ------------------------------------------------------------------------
 * Claims: at-least-once work on a queue (docs/claims.md).
 *
 * A claim moves items out of the pending queue into flight under a lease.
 * Until the lease ends the claim is held: its owner heartbeats (extends the
 * lease) and settles the items (done, back to their place, retry, or dead;
 * see sfs_outcome). The instant the lease ends the claim is lost, whether
 * or not recovery has already run: every call on a claim checks the lease
 * in the transaction that acts on it (a lease ending at t is expired at t:
 * held means now < lease end) and fails with SFS_CLAIMLOST when it ran
 * out, so the owner learns that its items may be (or have been) delivered
 * again. Nothing a held claim settles is ever redelivered; nothing claimed
 * is ever lost.
 *
 * Recovery (sfs_queue_gc) runs when a store is opened read-write, at the
 * start of every claim call on the queue it concerns, and whenever a
 * caller runs it (the daemon does, periodically). One pass is one
 * transaction: first the queue's time-to-live drops pending items that
 * waited longer than it, then expired claims return their items to the
 * queue at their original ids (their wait restarts, their delivery count
 * is kept), or to the dead letters once they reached the queue's delivery
 * limit. sfs_queue_pop does not run recovery.
 *
 * Leases are in milliseconds; 0 means the store's default (sfs_config
 * lease_ms, ten minutes unless set). Times are CLOCK_REALTIME in ns, the
 * clock every process on a host shares. Claim ids come from the store and
 * are never reused (not after a restore either); an id that was never
 * issued is SFS_NOTFOUND, one that was issued and is no longer held
 * (expired, or already settled) is SFS_CLAIMLOST. A lease over 100 years
 * is SFS_INVALID.
 */

typedef enum sfs_outcome {
	SFS_OUTCOME_DONE = 1, /* processed: the item is deleted */
	SFS_OUTCOME_RETRY,    /* pushed again at the tail, under a new id */
	SFS_OUTCOME_REJECT,   /* moved to the dead letters ("rejected") */
	SFS_OUTCOME_NACK,     /* back at its original id (its FIFO place) */
	SFS_OUTCOME_RELEASE,  /* never delivered: a nack that first takes
	                         back the delivery the claim counted, so a
	                         reader that got nothing (interrupted, a
	                         failed write, a drain's rest) uses up no
	                         delivery and sends nothing to the dead
	                         letters that was not there before it;
	                         for a namespace's entries, a nack */
} sfs_outcome;

/* Claims up to max (>= 1) pending items from the head of the queue under a
 * new claim with a lease of lease_ms, in one transaction: *claim_id gets
 * the claim and *items (may be NULL: sfs_item_scan lists them) the items
 * in FIFO order, each with item.value and its in-flight sfs_stat. Two
 * callers, in any processes, never claim one item. Errors: SFS_NOTFOUND
 * when the queue has no pending item (no claim is made). */
int sfs_claim(sfs_store *s, sfs_slice queue, long max, int64_t lease_ms,
              int64_t *claim_id, sfs_list *items);

/* Claims one pending item by id (the file view's `mv item inflight/`);
 * *claim_id (may be NULL) gets the new claim. Errors: SFS_NOTFOUND when
 * it is not pending in that queue (another claimer won, or it never
 * was). */
int sfs_claim_item(sfs_store *s, sfs_slice queue, int64_t id,
                   int64_t lease_ms, int64_t *claim_id);

/* A drain that gives back what it does not deliver: takes every entry of
 * (scope, ns) under a new claim with a lease of lease_ms, in one
 * transaction. From that commit the namespace is empty for every reader
 * and writer; its entries are the claim's items, numbered in key order
 * (read them with sfs_claim_items). *count (may be NULL) gets how many.
 * The claim is settled as a queue's: DONE (sfs_claim_end, sfs_claim_settle)
 * removes entries for good; NACK, and a lease that runs out, put them
 * back in the namespace, except where a key was written again meanwhile,
 * which keeps its new value. docs/claims.md, "Namespace drains". Errors:
 * SFS_NOTFOUND for an empty namespace (no claim is made); RETRY and
 * REJECT settle entries with SFS_INVALID. */
int sfs_kv_claim(sfs_store *s, sfs_slice scope, sfs_slice ns,
                 int64_t lease_ms, int64_t *claim_id, uint64_t *count);

/* The items of a held claim, of a queue or of a namespace, with id >
 * after_id (-1: all), by id, at most limit (<= 0: all), without changing
 * them: item.id, item.value (unless keys_only), and st.size, st.mtime_ns,
 * st.claim_id and st.lease_until_ns; a queue's items also st.deliveries
 * (and st.mtime_ns is when their wait began), a namespace's entries
 * item.key (and st.mtime_ns is when they were written). A read, so a
 * claim can be read a page at a time. Errors: SFS_CLAIMLOST once the
 * lease ran out (also before recovery moved the items), SFS_NOTFOUND for
 * a claim never issued. */
int sfs_claim_items(sfs_store *s, int64_t claim_id, int64_t after_id,
                    long limit, int keys_only, sfs_list *out);

/* Extends a held claim: its lease ends lease_ms from now (also when that is
 * sooner than before). *lease_until_ns (may be NULL) gets the new end.
 * Errors: SFS_CLAIMLOST when the lease had run out (the claim's items went,
 * or go now, back to the queue), SFS_NOTFOUND for a claim never issued. */
int sfs_claim_heartbeat(sfs_store *s, int64_t claim_id, int64_t lease_ms,
                        int64_t *lease_until_ns);

/* Settles every item of a held claim with one outcome, and the claim ends:
 * DONE is an ack (the items are deleted), NACK puts them back at their
 * original ids with their wait restarted; NACK and RETRY send an item that
 * reached the queue's delivery limit to the dead letters instead. Errors:
 * SFS_CLAIMLOST when the claim is not held (then nothing changes, not even
 * items that were returned and claimed again: they belong to the new
 * claim), SFS_NOTFOUND for a claim never issued. */
int sfs_claim_end(sfs_store *s, int64_t claim_id, sfs_outcome outcome);

/* Settles items of a held claim with one outcome each, all or nothing:
 * every id must be an item of the claim, named once, and every outcome
 * valid, or nothing changes. Items not named stay in flight; the claim
 * ends with its last item. Errors: SFS_INVALID (a repeated id, n == 0),
 * SFS_NOTFOUND (an id the claim does not hold, or a claim never issued),
 * SFS_CLAIMLOST as sfs_claim_end. */
int sfs_claim_settle(sfs_store *s, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n);

/* Settles one in-flight item of a queue, whatever claim holds it (the file
 * view's `mv inflight/item ..` is NACK, `mv inflight/item dead/` REJECT),
 * as sfs_claim_settle. Errors: SFS_NOTFOUND when it is not in flight,
 * SFS_CLAIMLOST when its lease has run out. */
int sfs_item_settle(sfs_store *s, sfs_slice queue, int64_t id,
                    sfs_outcome outcome);

/* Heartbeats the claim that holds an in-flight item (`touch inflight/item`),
 * as sfs_claim_heartbeat. Errors: SFS_NOTFOUND, SFS_CLAIMLOST as
 * sfs_item_settle. */
int sfs_item_heartbeat(sfs_store *s, sfs_slice queue, int64_t id,
                       int64_t lease_ms);

/* Makes the lease of the claim that holds an in-flight item end at
 * until_ns, on the store's clock (on PostgreSQL, the server's), as
 * `touch -d TIME inflight/item` does: its mtime then reads until_ns
 * whatever the caller's clock says. Errors: SFS_INVALID when until_ns is
 * not after the store's now (a lease cannot end in the past) or is more
 * than 100 years after it (the longest lease), and nothing changes;
 * SFS_NOTFOUND, SFS_CLAIMLOST as sfs_item_heartbeat. */
int sfs_item_heartbeat_until(sfs_store *s, sfs_slice queue, int64_t id,
                             int64_t until_ns);

/* Moves a dead letter back to the tail of its queue under a new id
 * (*new_id, may be NULL) with a fresh delivery count. Errors: SFS_NOTFOUND
 * when it is not a dead letter of that queue. */
int sfs_item_requeue(sfs_store *s, sfs_slice queue, int64_t id,
                     int64_t *new_id);

/* A queue's recovery policy, stored in the store so that every process and
 * the daemon apply the same one. All zero: none (the default). */
typedef struct sfs_queue_policy {
	int64_t ttl_ms;         /* drop pending items that waited longer;
	                           0: never. Items whose enqueue time is
	                           unknown (pushed by another program, an
	                           SDK) are kept */
	int64_t max_deliveries; /* an item claimed this many times goes to the
	                           dead letters instead of back to the queue
	                           (expiry, nack, retry); 0: no limit */
} sfs_queue_policy;

/* Sets (or with all fields 0 removes) the policy. Errors: SFS_INVALID for
 * a negative field, a time-to-live over 100 years or a delivery limit
 * over SFS_DELIVERIES_MAX. */
int sfs_queue_policy_set(sfs_store *s, sfs_slice queue,
                         const sfs_queue_policy *p);

/* The queue's policy; all zero when it has none. Errors: the common ones. */
int sfs_queue_policy_get(sfs_store *s, sfs_slice queue,
                         sfs_queue_policy *out);

typedef struct sfs_gc_stats {
	uint64_t expired;   /* pending items dropped by the time-to-live */
	uint64_t returned;  /* in-flight items back in the queue */
	uint64_t dead;      /* in-flight items moved to the dead letters */
	uint64_t claims;    /* expired claims ended */
} sfs_gc_stats;

/* Recovery of one queue, or of every queue (queue = SFS_NONE), in one
 * transaction: time-to-live first, then expired claims (see above for why
 * in that order). Of every queue it also deletes the time rows of values
 * and counters (on PostgreSQL also of log entries and queue items) whose
 * data rows another program deleted, a bounded stretch of the time
 * tables a call (docs/engine.md, docs/postgres.md). *stats may be NULL.
 * Commits nothing when there is nothing to do. Errors: the common ones. */
int sfs_queue_gc(sfs_store *s, sfs_slice queue, sfs_gc_stats *stats);

/* ------------------------------------------------------------------------
 * The Go SDK's families
 *
 * The VGI Go SDK keeps typed state (worker, scan-worker, aggregate, window
 * and transaction state) in function_state under reserved namespaces,
 * with int64 ids as 8-byte keys, big-endian two's complement (so negative
 * ids sort after positive ones, as in the SDK). Either side reads the
 * other's state through the key/value functions:
 *   WorkerPut / WorkerScan / WorkerCollect   sfs_kv_put / sfs_kv_scan /
 *                                            sfs_kv_drain, ns "worker",
 *                                            key sfs_id_encode(pid)
 *   ScanWorkerPut / ScanWorkerScan           sfs_kv_put / sfs_kv_scan,
 *                                            ns "scan_worker", key the
 *                                            stream id
 *   AggGet / AggPut / AggClear               sfs_kv_get_many /
 *                                            sfs_kv_put_many /
 *                                            sfs_kv_delete_range, ns "agg",
 *                                            keys the group ids (AggGet's
 *                                            zero entry is value.ptr NULL)
 *   AggConstPut / AggConstGet                sfs_kv_put / sfs_kv_get,
 *                                            ns "agg_const", key the
 *                                            function name
 *   WinPut / WinGet / WinDelete / WinClear   sfs_kv_put / sfs_kv_get /
 *                                            sfs_kv_delete /
 *                                            sfs_kv_delete_range, ns "win"
 *   TxnGet / TxnPut / TxnClear               sfs_kv_get_many /
 *                                            sfs_kv_put_many /
 *                                            sfs_kv_delete_range, the
 *                                            transaction as the scope,
 *                                            ns "txn"
 *   StateLogAppend / StateLogClear           sfs_log_append / sfs_log_clear,
 *                                            ns "log"
 *   ExecClear                                sfs_exec_clear
 * The stream engine's keyed state maps onto the same tables, with the owner
 * ("op-0", "worker-3") as the scope and the state's name as the namespace:
 *   ValueState Get/Set/Clear    sfs_kv_get / sfs_kv_put / sfs_kv_delete
 *   ValueState Keys/SnapshotAll sfs_kv_scan (keys_only for Keys)
 *   ValueState RestoreAll       sfs_kv_put_many with SFS_PUT_REPLACE
 *   ListState Append/GetAll     sfs_log_append / sfs_log_scan
 *   ListState Clear             sfs_log_clear with the key
 *   ListState Keys              sfs_dir_list of the namespace
 * Appends after a reopen or a restore extend a list, because log ids come
 * from the store, not from the process.
 */
#define SFS_NS_WORKER "worker"
#define SFS_NS_SCAN_WORKER "scan_worker"
#define SFS_NS_AGG "agg"
#define SFS_NS_AGG_CONST "agg_const"
#define SFS_NS_WIN "win"
#define SFS_NS_TXN "txn"
#define SFS_NS_LOG "log"

/* Encodes an id as its 8-byte key (out must hold 8 bytes). Any thread.
 * Never fails. */
void sfs_id_encode(int64_t id, unsigned char out[8]);

/* Decodes an 8-byte key. Errors: SFS_INVALID when the key is not 8 bytes
 * long. */
int sfs_id_decode(sfs_slice key, int64_t *id);

/* Deletes every key/value, log and counter row of a scope, all namespaces,
 * in one transaction, and stores the exact number of rows in *count (may be
 * NULL). Work queues are untouched. A second call gives 0. Errors: the
 * common ones. */
int sfs_exec_clear(sfs_store *s, sfs_slice scope, uint64_t *count);

/* ------------------------------------------------------------------------
 * Whole-store operations. A backend that cannot do one of them returns
 * SFS_UNSUPPORTED with a sentence saying what to use instead.
 */

/* Called with work done and total work (same unit, total may grow); a
 * nonzero return cancels the operation with SFS_CANCELLED. */
typedef int (*sfs_progress_fn)(uint64_t done, uint64_t total, void *ctx);

/* Writes a consistent copy of the live store to path while other processes
 * keep writing. The copy is written beside path and renamed into place after
 * an fsync, so a crash never leaves a half-written file under path. The copy
 * is encrypted with the store's key (plaintext for a plaintext store).
 * progress may be NULL. Errors: SFS_EXISTS if path exists, SFS_CANCELLED. */
int sfs_checkpoint(sfs_store *s, const char *path, sfs_progress_fn progress,
                   void *ctx);

/* Brings the live store back to exactly the state of a checkpoint made by
 * sfs_checkpoint (same key), in one transaction that other processes see as
 * any other commit. The checkpoint is verified first; on any failure the
 * live store is unchanged. Errors: SFS_NOTFOUND (no checkpoint at path),
 * SFS_FORMAT (not a checkpoint, or of a newer schema), SFS_CORRUPT (it
 * fails verification), SFS_WRONGKEY (a checkpoint under another key),
 * SFS_NOKEY or SFS_NOTENCRYPTED (an encrypted checkpoint for a plaintext
 * store, or the other way), SFS_CANCELLED. */
int sfs_restore(sfs_store *s, const char *path, sfs_progress_fn progress,
                void *ctx);

/* A fact about a store that only its backend has (SQLite: page_size,
 * page_count, file_size, wal_size). */
typedef struct sfs_info_fact {
	const char *name;        /* static string */
	uint64_t value;
} sfs_info_fact;

#define SFS_INFO_FACTS 8

typedef struct sfs_info {
	const char *path;        /* the store as opened; borrowed from the
	                            handle */
	const char *backend;     /* "sqlite"; static */
	const char *file;        /* the local file holding the store, an
	                            absolute path (borrowed), or NULL when
	                            there is none (":memory:", a server) */
	int schema_version;      /* statefs schema version */
	int encrypted;
	const char *cipher;      /* "xchacha20poly1305", or "none"; static */
	int crypt_format;        /* on-disk encryption format, 0 for plaintext */
	const char *kdf;         /* "raw", "argon2id", or "none"; static */
	uint64_t size;           /* bytes of storage the store takes (SQLite:
	                            the file and its WAL); 0 when unknown */
	uint64_t kv_rows;        /* entries, with those a drain holds (the
	                            namespace's until delivered) */
	uint64_t counter_rows;
	uint64_t log_rows;
	uint64_t queue_rows;     /* pending items */
	uint64_t claimed_rows;   /* items in flight */
	uint64_t dead_rows;      /* dead letters */
	sfs_info_fact facts[SFS_INFO_FACTS]; /* the backend's own, in a fixed
	                            order */
	size_t nfacts;
} sfs_info;

/* What the store is and holds. Errors: the common ones. */
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
 * or closes (sfs_queue_gc and sfs_store_flush_counts write them too; the
 * daemon runs the latter every second). Items an
 * SDK pushes or pops with its own SQL are not counted: they show in the
 * pending count only. */
typedef struct sfs_queue_stats {
	sfs_buf queue;             /* the queue id */
	uint64_t pending;          /* waiting items (SFS_ITEM_PENDING) */
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

/* One snapshot of the figures into *out, the caller's until
 * sfs_stats_free (its info strings are borrowed from the handle, valid
 * until close). The sums over queues and scopes are info's row counts.
 * Errors: the common ones; SFS_UNSUPPORTED from a backend without them. */
int sfs_store_stats(sfs_store *s, sfs_stats **out);
/* Frees what sfs_store_stats returned. NULL is fine. Never fails. */
void sfs_stats_free(sfs_stats *st);

/* Writes the queue counts (sfs_queue_stats.pushed and .taken) this handle
 * holds and has not written yet, whatever the second: what a writer that
 * went idle holds back. Nothing (no transaction, no round trip) when it
 * holds none, so a timer may call it often: the daemon does every second.
 * A read-only handle holds none. Errors: the common ones. */
int sfs_store_flush_counts(sfs_store *s);

/* Reads every page (authenticating each one in an encrypted store) and runs
 * the backend's integrity check; progress counts pages (on PostgreSQL:
 * rows, each sealed one authenticated). Errors: SFS_CORRUPT with the first
 * problem in the detail, SFS_CANCELLED. */
int sfs_store_verify(sfs_store *s, sfs_progress_fn progress, void *ctx);

/* Re-encrypts the store db (as sfs_config.db names it) from old_key to
 * new_key; old_key == NULL encrypts a plaintext store, new_key == NULL
 * writes a plaintext one. No other process may have the store open.
 * Crash-safe: an interruption at any point leaves a store that opens with
 * the old key or with the new one, and running it again finishes the job (a
 * store already under new_key is SFS_OK). The SQLite backend copies
 * (compacts) the store into db.rekey beside it, verifies the copy and
 * renames it over db: it needs free space for one more copy. progress
 * counts pages. Afterwards old_key gets SFS_WRONGKEY. Errors: SFS_INVALID
 * (both keys NULL, ":memory:"), SFS_NOTFOUND (no store), SFS_BUSY (open
 * elsewhere), SFS_WRONGKEY, SFS_NOKEY (an encrypted store and no old key),
 * SFS_NOTENCRYPTED, SFS_CANCELLED (the store unchanged). */
int sfs_rekey(const char *db, const sfs_key *old_key, const sfs_key *new_key,
              sfs_progress_fn progress, void *ctx);

/* ------------------------------------------------------------------------
 * Export and import: every row of every family, for moving state between
 * machines. Rows carry bytes; the caller chooses the text encoding. Each
 * field means one thing; a field the family does not have is 0 or
 * SFS_NONE.
 */
typedef struct sfs_row {
	sfs_family family;
	sfs_slice scope;          /* the queue id for queue, claim, in-flight,
	                             dead and policy rows */
	sfs_slice ns;             /* SFS_NONE for queues and scope-only dirs */
	sfs_slice key;            /* kv, counter and log rows */
	sfs_slice value;          /* value, entry or item bytes */
	sfs_slice reason;         /* dead letters */
	int64_t id;               /* log entries and items (queue, in-flight,
	                             dead rows); claim rows: the claim's id;
	                             seq rows: the last id issued in the id
	                             space named by scope ("log", "queue" or
	                             "claim") */
	int64_t mtime_ns;         /* kv, counter, log rows: the time of the
	                             write; queue and in-flight rows: when the
	                             item's wait began; dead rows: its death;
	                             claim rows: when it was claimed */
	int64_t counter;          /* counter rows: the value */
	sfs_family dir_family;    /* dir rows: the family of the directory
	                             (SFS_FAM_KV .. SFS_FAM_QUEUE) */
	int64_t claim_id;         /* in-flight rows: the claim holding it */
	int64_t lease_until_ns;   /* claim rows: when the lease ends */
	int64_t deliveries;       /* queue, in-flight, dead rows: times the
	                             item was claimed, 0 to
	                             SFS_DELIVERIES_MAX */
	int64_t ttl_ms;           /* policy rows */
	int64_t max_deliveries;   /* policy rows */
} sfs_row;

/* Calls fn for every row, from one consistent snapshot, in a fixed order
 * (family, then scope, ns, key, id; claims before their in-flight items;
 * last, SFS_FAM_SEQ rows for the id spaces that issued ids above every id
 * exported). The row and its slices are borrowed for the duration of the call.
 * progress (may be NULL) counts rows. Errors: whatever nonzero value fn
 * returned, which stops the export; SFS_CANCELLED. */
int sfs_export(sfs_store *s, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx);

/* Imports rows in one transaction. next fills *row (zeroed before each
 * call) and returns SFS_OK, or returns SFS_NOTFOUND at the end of the
 * input; the row's slices stay the caller's and must live until next is
 * called again. Any other return value from next aborts the import, which
 * then returns it. Rows that already exist
 * identically change nothing (an import is idempotent); log and queue rows
 * keep their ids, and an id that holds a different row is a conflict:
 * nothing is overwritten. Key/value entries and counters are replaced, as a
 * put or set would; so are queue policies. mtime_ns is kept as given.
 * Claims keep their ids; an in-flight row needs its claim imported first
 * (export order does that). The log, claim and item id sequences move past
 * every imported id and to the id of every SFS_FAM_SEQ row, so no id the
 * exported store issued is issued again. Other threads' calls on the handle wait for the import.
 * On any failure nothing is imported. Errors: SFS_INVALID (a row that is
 * not valid: an id <= 0 or past SFS_ID_MAX where one is needed, an
 * in-flight row before its claim, a negative count, a delivery count past
 * SFS_DELIVERIES_MAX), SFS_EXISTS (a log or queue id that holds
 * another row, an item id in another state), what next returned. */
int sfs_import(sfs_store *s, int (*next)(sfs_row *row, void *ctx),
               void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* STATEFS_H */
