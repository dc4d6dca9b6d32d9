/*
 * sqlite_i.h - the SQLite backend's shared internals (private).
 *
 * The backend is split by job: conn.c (connection, statement cache,
 * transactions, status translation, the ops table), schema.c (DDL and
 * versions), kv.c (key/value and counters), value.c (parts of a value:
 * ranged reads and edits), dir.c (scopes, namespaces,
 * directories, renames), seq.c (logs, queues and pending items), item.c
 * (the item functions by state), timemap.c (the time maps of log entries
 * and queue items), claim.c (claims, in-flight items, dead letters,
 * recovery), stamp.c (the times a connection knows are already written),
 * whole.c (exec clear, checkpoint, restore, info, verify), export.c, and
 * beside them the page-encrypting VFS (vfs.c, check.c; vfs_i.h),
 * rekey.c and rofs.c (stores on read-only media). Nothing outside
 * core/sqlite/ includes this header.
 *
 * Concurrency rules every file follows (see docs/engine.md):
 *  - One connection per handle; the caller's lock serialises calls.
 *  - A write is a transaction opened with BEGIN IMMEDIATE (sqlb_begin_write),
 *    so it holds the write lock before it reads anything and can never fail
 *    with SQLITE_BUSY_SNAPSHOT; waiting for the lock is the busy timeout's
 *    job. A write of one statement may instead be its own autocommit
 *    transaction (sqlb_write1). Reads of more than one statement run in one
 *    deferred transaction (sqlb_begin_read) so they see one snapshot.
 *  - In a group commit (sqlb_group_begin .. sqlb_group_end, conn.c) the
 *    first write's transaction stays open and the next writes join it, each
 *    in a savepoint; the same functions do that, so a write function does
 *    not know whether it is grouped.
 *  - Statements are prepared once per connection (SQLITE_PREPARE_PERSISTENT)
 *    and reset after each use, also on error paths, so no read transaction
 *    outlives the call that opened it.
 */
#ifndef STATEFS_SQLITE_I_H
#define STATEFS_SQLITE_I_H

#include <sqlite3.h>

#include "backend_i.h"
#include "vfs_i.h"
#include "err_i.h"
#include "list_i.h"

/* 1: one time row per log entry and queue item. 2: sparse time maps
 * (timemap.c), whole-second mtimes. 3: claims (claim.c); the
 * time override table became statefs_queue_pending, with a delivery
 * count. 4: statefs_queue_stats, the push and take counts (stats.c);
 * claims on a namespace's entries (statefs_kv_taken); queue markers
 * (statefs_qmark), so that another program's clear reaches items in
 * flight. */
#define SQLB_SCHEMA_VERSION 5

/* SFS_DELIVERIES_MAX as SQL text: a claim counts a delivery as
 * min(count, SQLB_DELIVERIES_MAX - 1) + 1, which never leaves int64. */
#define SQLB_DELIVERIES_MAX "2147483647"
_Static_assert(SFS_DELIVERIES_MAX == INT64_C(2147483647),
               "SQLB_DELIVERIES_MAX is SFS_DELIVERIES_MAX");

/* The rows of work_queue (alias q) that are items of queue ?1: not the
 * two marker rows at its tail (statefs_qmark, claim.c). */
#define SQLB_QLIVE(q)                                                      \
	q "id<coalesce((SELECT lo FROM statefs_qmark WHERE queue=?1),"     \
	" 9223372036854775807)"
/* The same for a row of any queue (a correlated check per row). */
#define SQLB_QLIVE_ANY(q)                                                  \
	"NOT EXISTS (SELECT 1 FROM statefs_qmark m WHERE m.queue=" q          \
	"execution_id AND " q "id>=m.lo)"

/* The statement cache: one row per statement, with the number of variants
 * it has (optional bounds, direction, keys only: the file that builds it
 * says which bit is which). SQLB_SLOTS gives each row its first slot,
 * ST_<name>; variant v (v < the row's count) is slot ST_<name> + v. The
 * enum is generated from this table, so a statement is added by adding its
 * row, in the group of the file that prepares it. */
#define SQLB_STATEMENTS(X)                                                 \
	/* conn.c: transactions and the change counter */                  \
	X(BEGIN_WRITE, 1) X(BEGIN_READ, 1) X(COMMIT, 1) X(ROLLBACK, 1)     \
	X(DATA_VERSION, 1) X(MEMBER_BEGIN, 1) X(MEMBER_END, 1)             \
	X(MEMBER_UNDO, 1)                                                  \
	/* kv.c: values (scan: start, end, descending, keys only, start    \
	 * exclusive) */                                                   \
	X(KV_PUT, 1) X(KV_PUT_TIME, 1) X(KV_GET, 1) X(KV_STAT, 1)          \
	X(KV_DEL, 1) X(KV_UNTIME, 1) X(TIME_SWEEP_END, 4) X(TIME_SWEEP, 8) \
	X(KV_SCAN, 32) X(KV_SCAN_TIME, 32)                                 \
	X(KV_DELRANGE, 4) X(KV_DELRANGE_TIME, 4)                           \
	/* kv.c: renames ([counters]: values, counters) */                 \
	X(KV_EXISTS, 2) X(KV_DEL_TIME, 2) X(KV_MOVE, 2) X(KV_MOVE_TIME, 2) \
	/* value.c: parts of a value */                                    \
	X(KV_LOCATE, 1) X(KV_SET_ROW, 1) X(KV_INSERT_ROW, 1)               \
	/* kv.c: counters (scan: start, end, descending, -, start          \
	 * exclusive) */                                                   \
	X(CTR_ADD, 1) X(CTR_SET, 1) X(CTR_CREATE, 1) X(KV_GET_SMALL, 1) X(KV_SET_TIME, 1) X(CTR_TIME, 1) X(CTR_GET, 1)           \
	X(CTR_DEL, 1) X(CTR_UNTIME, 1) X(CTR_SCAN, 32)                     \
	X(CTR_SCAN_TIME, 32)                                               \
	/* seq.c: logs (scan: keys only; clear: scope, ns, key) */         \
	X(LOG_APPEND, 1) X(LOG_SCAN, 2) X(LOG_GET, 1) X(LOG_STAT, 1)       \
	X(LOG_KEY_FIRST, 1) X(LOG_KEY_NEXT, 1) X(LOG_DEL, 1)               \
	X(LOG_CLEAR, 3) X(LOG_CLEAR_RANGE, 3)                              \
	/* seq.c: queues and pending items */                              \
	X(Q_PUSH, 1) X(Q_POP, 1) X(Q_DEL, 1) X(Q_CLEAR_OVR, 1)             \
	X(Q_CLEAR_RANGE, 1) X(Q_CLEAR, 2)                                  \
	/* item.c: [state - 1] rows (scan: 3 states x keys only) */        \
	X(ITEM_COUNT, 3) X(ITEM_SCAN, 6) X(ITEM_GET, 3) X(ITEM_STAT, 3)    \
	/* timemap.c: [tm_which] pairs */                                  \
	X(TM_NOTE, 2) X(TM_PRUNE_BELOW, 2) X(TM_PRUNE_RANGE, 2)            \
	X(TM_OVR_SET, 1) X(TM_OVR_DEL, 1) X(TM_FOREIGN, 1) X(TM_KNOWN, 1)  \
	X(TM_KNOWN_NEW, 1)                                                 \
	/* claim.c: claiming and acting on a claim */                      \
	X(CLAIM_SEQ, 1) X(CLAIM_GET, 1) X(CLAIM_NEW, 1) X(CLAIM_HEAD, 1)   \
	X(CLAIM_ONE, 1) X(CLAIM_ANY, 1) X(CLAIM_ANY_ONE, 1)                \
	X(CLAIM_DEL_PEND, 1) X(CLAIM_DEL_Q, 1) X(CLAIM_READ, 1)            \
	X(CLAIM_BEAT, 1) X(CLAIM_OWNER, 1) X(CLAIM_HOLDS, 1)               \
	X(CLAIM_KIND, 1) X(CLAIM_HOLD_Q, 1)                                \
	/* claim.c: a claim's items (queue or namespace x keys only) */    \
	X(CLAIM_ITEMS, 4)                                                  \
	/* claim.c: claims on a namespace's entries */                     \
	X(KVC_ANY, 1) X(KVC_TAKE, 1) X(KVC_DEL, 1) X(KVC_DEL_TIME, 1)      \
	X(KVC_HOLDS, 1) X(KVC_BACK_TIME, 1) X(KVC_BACK, 1) X(KVC_DONE, 1)  \
	/* claim.c: queue markers (tidy: every queue, one queue) */        \
	X(MARK_HAS, 1) X(MARK_ROWS, 1) X(MARK_SET, 1) X(MARK_TIDY_ROWS, 2) \
	X(MARK_TIDY, 2) X(MARK_SEQ, 1) X(MARK_SEQ_SET, 1)                   \
	/* claim.c: settling items */                                      \
	X(SETTLE_DEAD_LIMIT, 1) X(SETTLE_DEAD_REJECT, 1) X(SETTLE_BACK, 1) \
	X(SETTLE_BACK_PEND, 1) X(SETTLE_RETRY, 1) X(SETTLE_RETRY_PEND, 1)  \
	X(SETTLE_DEL, 1) X(SETTLE_END, 1) X(SETTLE_UNCOUNT, 1)             \
	/* claim.c: recovery (pairs: every queue, one queue) */            \
	X(GC_POLICY, 1) X(GC_POLICIES, 1) X(GC_ANY, 1) X(GC_TTL_Z, 1)      \
	X(GC_TTL_C, 1) X(GC_TTL_MAP, 1) X(GC_TTL_OWN, 1) X(GC_TTL_PEND, 1) \
	X(GC_EXPIRED, 2) X(GC_DEAD, 2) X(GC_BACK, 2) X(GC_PEND, 2)         \
	X(GC_DEL_ITEMS, 2) X(GC_DEL_CLAIMS, 2) X(GC_KV_TIME, 2)            \
	X(GC_KV_BACK, 2) X(GC_KV_DEL, 2)                                   \
	/* claim.c: dead letters, policies */                              \
	X(DEAD_REQ, 1) X(DEAD_DEL, 1) X(DEAD_CLEAR, 1) X(POLICY_SET, 1)    \
	X(POLICY_DEL, 1)                                                   \
	/* dir.c: [family - 1] rows (next: 4 families x first, next) */    \
	X(DIR_NEXT_SCOPE, 8) X(DIR_NEXT_NS, 8) X(DIR_HAS_SCOPE, 4)         \
	X(DIR_HAS_NS, 4) X(DIR_INSERT, 1) X(DIR_DELETE, 1)                 \
	X(DIR_HAS_NS_DIRS, 1)                                              \
	/* dir.c: key names ([family - 1] x first, after) */                \
	X(DIR_KEYS, 4)                                                     \
	/* stats.c */                                                      \
	X(QSTAT_ADD, 1) X(QSTAT_PRUNE, 1) X(STATS_QUEUES, 1)               \
	X(STATS_SCOPES, 1)

enum {
#define SQLB_SLOT(name, variants)                                          \
	ST_##name, ST_##name##_LAST_ = ST_##name + (variants) - 1,
	SQLB_STATEMENTS(SQLB_SLOT)
#undef SQLB_SLOT
	ST_MAX
};

typedef struct stamp_cache stamp_cache;
struct untimed;
struct sweep;
typedef struct qstat qstat;

struct sfs_backend {
	sqlite3 *db;
	crypt_vfs *vfs;            /* NULL for plaintext and memory stores */
	char *path;
	int memory;
	int readonly;
	int short_of_space;        /* gave back its reserve (conn.c) */
	int made_schema;           /* this connection made the store in an
	                            * empty file (schema.c) */
	int in_write;              /* inside a BEGIN IMMEDIATE transaction */
	int group;                 /* group commit: a write's commit waits
	                            * for sqlb_group_end (conn.c) */
	int group_txn;             /* the group's transaction is open */
	int group_held;            /* it holds writes (sqlb_group_hold): a
	                            * delete opens it rather than commit by
	                            * itself */
	int in_member;             /* inside a write's savepoint in it */
	uint64_t commits;          /* write commits made on this connection */
	stamp_cache *stamps;       /* stamp.c; NULL until first used */
	struct untimed *untimed;   /* deleted keys whose time rows are to go
	                            * (kv.c); NULL until the first delete */
	struct sweep *sweep;       /* where the sweep of time rows goes on
	                            * (kv.c); NULL until the first pass */
	qstat *qstats;             /* stats.c; NULL until first used */
	struct sqlb_ckpt *ckpt;    /* ckpt.c; NULL without the flag */
	sqlite3_stmt *st[ST_MAX];
};

/* --- ckpt.c ------------------------------------------------------ */

typedef struct sqlb_ckpt sqlb_ckpt;

/* SFS_OPEN_WAL_THREAD: a connection of its own to b's store, opened
 * through vfs (NULL: the default), and a thread that checkpoints the log
 * on it; b's automatic checkpoint is replaced. On any failure it logs and
 * leaves b as it was. */
void sqlb_ckpt_start(sfs_backend *b, const char *vfs, int busy_ms);
/* Stops the thread and closes its connection; b checkpoints itself again.
 * Nothing without a thread. */
void sqlb_ckpt_stop(sfs_backend *b);
/* In a child after fork: closes the inherited thread's connection, which
 * has no thread here, without waiting for it (conn.c, sqlb_forsake);
 * SFS_BUSY when a round was under way at the fork. */
int sqlb_ckpt_forsake(sfs_backend *b);
/* Around fork (backend_i.h, fork_hold): 1 waits for a round under way to
 * end and keeps the next from starting; 0 lets them go again. */
void sqlb_ckpt_fork_hold(sfs_backend *b, int hold);
/* Waits for a round under way to end and drops one asked for (before the
 * disk's last room is given to deletes). Nothing without a thread. */
void sqlb_ckpt_quiet(sfs_backend *b);
/* The thread's rounds and the writer's own checkpoints so far (b has a
 * thread). */
void sqlb_ckpt_counts(sfs_backend *b, uint64_t *rounds, uint64_t *writer);

/* --- rofs.c: stores on read-only media ----------------------------- */

/* 1 when the file system holding path is a local one (no overlay, no
 * network or FUSE file system) whose superblock is read-only
 * (/proc/self/mountinfo's superblock options, not the mount's: a
 * read-only bind mount of a file system written elsewhere is 0), so that
 * nothing can change a file there; 0 otherwise and when it cannot tell. */
int sqlb_rofs_super(const char *path);
/* 1 when db's -wal holds frames (is longer than its header) or it has a
 * rollback journal with content, or either cannot be looked at; 0 when
 * it has nothing to replay. */
int sqlb_rofs_unclean(const char *db);
/* db as a URI that opens it immutable (its caller frees it); NULL when
 * out of memory. */
char *sqlb_rofs_uri(const char *db);

/* Why an open of the store db failed, when the cause is its -wal or -shm
 * (not made or opened beside the file SQLite opens), said in a sentence;
 * status as it is otherwise. unclean_rofs: a read-only open of a store on
 * a read-only medium whose -wal holds frames; readonly: the open was
 * read-only. (rofs.c) */
int sqlb_explain_open(const char *db, int status, int unclean_rofs,
                      int readonly);

/* --- conn.c ------------------------------------------------------ */

/* THE translation of SQLite result codes into sfs_status: every failure of
 * a SQLite call in the engine goes through here. Sets the thread's detail to
 * "<what>: <sqlite message>" (or, with ours set, the message of our VFS,
 * crypt_vfs_open's or crypt_plain_vfs's: a page that failed
 * authentication, a store replaced since the connection opened it) and
 * returns the status. db may be NULL (before a connection exists). */
int sqlb_status(sqlite3 *db, int ours, int rc, const char *what);
/* sqlb_status for the backend's own connection. */
int sqlb_fail(sfs_backend *b, int rc, const char *what);

/* The cached statement in slot, prepared from sql on first use; NULL with
 * the detail set on failure (*status gets the code). */
sqlite3_stmt *sqlb_stmt(sfs_backend *b, int slot, const char *sql,
                        int *status);

/* Steps a statement that returns no rows, resets it. SFS_OK or a status. */
int sqlb_run(sfs_backend *b, sqlite3_stmt *st, const char *what);
/* sqlb_run for a write that is one statement: outside a write transaction
 * it is its own (SQLite's autocommit takes the write lock as the statement
 * starts, waiting through the busy timeout, and commits as it ends), inside
 * one it is part of it. *changed: the rows it changed (not its triggers'). */
int sqlb_write1(sfs_backend *b, sqlite3_stmt *st, const char *what,
                int *changed);
/* The id an insert was just given (AUTOINCREMENT) for what: SFS_OVERFLOW
 * with a sentence when it is past SFS_ID_MAX, so that the caller's
 * transaction is rolled back. The store's ids stop there, well before
 * SQLite's own end of them (a full sequence fails an insert with
 * SQLITE_FULL, "no space left"): a queue's marker rows past its last item
 * and the push trigger's NEW.id+1+id (schema.c) always fit in int64. */
int sqlb_id_check(int64_t id, const char *what);

int sqlb_begin_write(sfs_backend *b);
/* The same for a transaction whose writes only move times forward (put,
 * counter add and set, log append, queue push and pop): it may use the
 * stamp cache (stamp.c). */
int sqlb_begin_stamped(sfs_backend *b);
int sqlb_begin_read(sfs_backend *b);
int sqlb_commit(sfs_backend *b);
void sqlb_rollback(sfs_backend *b);

/* Ends the write transaction sqlb_begin_write opened, after its body
 * returned status: commits on SFS_OK, else rolls back. Returns status, or
 * the commit's failure. A write function reads
 *     status = sqlb_begin_write(b);
 *     if (status == SFS_OK)
 *             status = sqlb_end_write(b, body_tx(b, ..., &v));
 *     if (status == SFS_OK && out)
 *             *out = v;
 * so its outputs are set only once the commit succeeded. */
int sqlb_end_write(sfs_backend *b, int status);
/* The same for a body that may have changed nothing (a clear, a drain, a
 * recovery pass): a successful one that did not (changed == 0) is rolled
 * back, so it counts no commit and sfs_store_version stays. */
int sqlb_end_write_if(sfs_backend *b, int status, int changed);

/* The body of a write function without outputs: returns expr's status
 * inside BEGIN IMMEDIATE ... COMMIT, rolled back on any status but
 * SFS_OK. */
#define IN_WRITE_TX(b, expr)                                               \
	do {                                                               \
		int st_ = sqlb_begin_write(b);                             \
		return st_ != SFS_OK ? st_ : sqlb_end_write(b, (expr));    \
	} while (0)
/* The same in a stamped transaction. */
/* Values at least this long are written (a whole replacement) and read
 * (sfs_kv_get) through blob handles, not bound or read as a column:
 * SQLite copies a bound value into the record it builds, and a column's
 * value into memory of its own, a second copy in the heap beside the
 * caller's (a 100 MB `cp` into the mount, then a `cmp`, peaked the daemon
 * at 285 MB). Below it one statement is cheaper than a blob handle. */
#define SQLB_BIG_VALUE 1048576 /* 1 MiB; a number: it is SQL text too */

#define IN_STAMPED_TX(b, expr)                                             \
	do {                                                               \
		int st_ = sqlb_begin_stamped(b);                           \
		return st_ != SFS_OK ? st_ : sqlb_end_write(b, (expr));    \
	} while (0)

/* Runs one SQL text that needs no caching (DDL, PRAGMAs). */
int sqlb_exec(sfs_backend *b, const char *sql, const char *what);

/* Binds a byte string (never NULL: an empty slice binds x''). */
int sqlb_bind(sqlite3_stmt *st, int i, sfs_slice s);
/* Binds a key's three names to ?1, ?2, ?3, as SQLB_KEYEQ names them. */
void sqlb_bind_key(sqlite3_stmt *st, sfs_slice scope, sfs_slice ns,
                   sfs_slice key);
#define SQLB_KEYEQ "scope_id=?1 AND ns=?2 AND key=?3"
/* The same for our tables keyed like them (statefs_kv_time,
 * statefs_counter_time), whose scope column is "scope": the SDKs' audit
 * of a store takes every table with a scope_id column for one of theirs
 * (schema.c, version 5). */
#define SQLB_OWN_KEYEQ "scope=?1 AND ns=?2 AND key=?3"
/* A BLOB column as bytes; zero-length gives a non-NULL pointer. */
const void *sqlb_col(sqlite3_stmt *st, int i, size_t *len);

/* Steps a bound listing statement to its end into *out, and resets it.
 * Its columns, as far as it has them, are the sfs_item fields in the order
 * below (a NULL value, key or reason: none). A failure is
 * sqlb_fail(what). */
enum {
	SQLB_COL_ID, SQLB_COL_VALUE, SQLB_COL_SIZE, SQLB_COL_MTIME,
	SQLB_COL_COUNTER, SQLB_COL_KEY, SQLB_COL_DELIVERIES, SQLB_COL_CLAIM,
	SQLB_COL_LEASE, SQLB_COL_REASON,
};
int sqlb_rows(sfs_backend *b, sqlite3_stmt *st, sfs_list *out,
              const char *what);
/* sqlb_rows for a listing by key whose times are in another table of the
 * same key order: tst, bound to the same range and direction (desc), yields
 * (key, mtime_ns) and is read beside st, each row's mtime taken from the
 * time row of an equal key (0 without one). One pass over each table, no
 * seek per row; both statements are reset. */
int sqlb_rows_timed(sfs_backend *b, sqlite3_stmt *st, sqlite3_stmt *tst,
                    int desc, sfs_list *out, const char *what);

/* Step a bound statement that returns at most one row, and reset it. No
 * row is SFS_NOTFOUND (without a detail); a failure is sqlb_fail(what).
 * sqlb_one_blob copies the row's first column into *out (malloc'd);
 * sqlb_one_stat reads the columns size, mtime and, as far as it has them,
 * deliveries, claim_id and lease_until into *out. */
int sqlb_one_blob(sfs_backend *b, sqlite3_stmt *st, sfs_buf *out,
                  const char *what);
int sqlb_one_stat(sfs_backend *b, sqlite3_stmt *st, sfs_stat *out,
                  const char *what);

/* --- schema.c ----------------------------------------------------- */
/* Creates missing tables (or, read-only, shadows our missing tables with
 * empty temporary ones) and checks the schema version. */
int sqlb_schema_init(sfs_backend *b);
/* The tables restore acts on: the SDK's four, then ours (statefs_*
 * except statefs_meta, and statefs_queue_stats: the live store's counts
 * only grow), read from sqlite_schema of schema `db` ("main").
 * *names is malloc'd, NULL-terminated, entries malloc'd. */
int sqlb_schema_tables(sfs_backend *b, const char *db, char ***names);
void sqlb_schema_tables_free(char **names);

/* --- timemap.c ---------------------------------------------------- */
/* Sparse time maps of log entries and queue items (see the file). Every
 * call runs inside the caller's write transaction. */
typedef enum tm_which { TM_LOG = 0, TM_QUEUE = 1 } tm_which;

/* The time of a log entry / a pending queue item whose id is the SQL
 * expression e (a column like "l.id"), as a SQL expression; 0 when
 * unknown. */
#define TM_LOG_AT(e)                                                       \
	"coalesce((SELECT mtime_ns FROM statefs_log_timemap WHERE id<=" e  \
	" ORDER BY id DESC LIMIT 1), 0)"
#define TM_QUEUE_AT(e)                                                     \
	"coalesce((SELECT enqueued_ns FROM statefs_queue_pending"          \
	" WHERE id=" e "), CASE WHEN " e ">" TM_QUEUE_KNOWN " THEN 0 END," \
	" (SELECT enqueued_ns FROM statefs_queue_timemap"                  \
	" WHERE id<=" e " ORDER BY id DESC LIMIT 1), 0)"
/* How many times the pending item whose id is e was delivered before (a
 * nack or a lease that ran out put it back), as a SQL expression. */
#define TM_QUEUE_DELIVERIES(e)                                             \
	"coalesce((SELECT deliveries FROM statefs_queue_pending p"         \
	" WHERE p.id=" e "), 0)"
/* The last work_queue id whose time statefs knows: every item above it
 * was pushed by another program (the SDKs' INSERT), and so is every item
 * in a run the queue map dates 0. Kept as a row of sqlite_sequence, the
 * page every push writes anyway; NULL (a store of an older statefs):
 * every item's time is the map's. See timemap.c. */
#define TM_QUEUE_KNOWN_NAME "statefs_queue_known"
#define TM_QUEUE_KNOWN                                                     \
	"(SELECT seq FROM sqlite_sequence WHERE name='" TM_QUEUE_KNOWN_NAME "')"

/* After entry id (the first of a batch) was inserted at now (whole
 * seconds): adds a map row if now is later than the latest row's time.
 * On the queue map, first a row dated 0 for the items other programs
 * pushed since statefs last did, and after, TM_QUEUE_KNOWN moves up to
 * the batch's last id. */
int tm_note(sfs_backend *b, tm_which w, int64_t id, int64_t now);
/* The same for rows statefs inserts into work_queue without a time of the
 * map (queue markers from first_id on; an import, INT64_MAX before its
 * rows, 0 after): the items of other programs above TM_QUEUE_KNOWN and
 * below first_id are dated 0, and TM_QUEUE_KNOWN moves up to the queue's
 * sequence. */
int tm_queue_ours(sfs_backend *b, int64_t first_id);
/* After entries with ids in [lo, hi] were deleted: drops the map rows
 * that no longer govern any entry. */
int tm_prune(sfs_backend *b, tm_which w, int64_t lo, int64_t hi);
/* Import: entry id, already in its table, gets time t; no other entry's
 * time changes. */
int tm_import(sfs_backend *b, tm_which w, int64_t id, int64_t t);
/* A pending queue item's own time (its wait restarted), and its removal
 * (a no-op when it has none) when the item leaves the queue. */
int tm_override_set(sfs_backend *b, int64_t id, int64_t t);
int tm_override_del(sfs_backend *b, int64_t id);
/* Fills the maps of main from the version-1 per-entry tables in schema
 * ("main" when migrating, "ckpt" when restoring an old checkpoint), after
 * main's log and queue tables hold their final rows. */
int tm_convert_v1(sfs_backend *b, const char *schema);

/* --- kv.c --------------------------------------------------------- */
/* At close: removes the time rows of the keys deleted since the last batch
 * (kv.c explains) and frees the list. */
void sqlb_untime_close(sfs_backend *b);
/* In a write transaction: one bounded step of the sweep of time rows
 * whose data row another program deleted (kv.c explains); *swept is
 * increased by the rows deleted. */
int sqlb_time_sweep(sfs_backend *b, uint64_t *swept);
/* Frees the sweep's place (at close, also after a fork). */
void sqlb_sweep_free(sfs_backend *b);

/* --- the ops, by file (backend_i.h says what each does) ---------------- */
/* conn.c */
void sqlb_close(sfs_backend *b);
/* kv.c */
int sqlb_kv_put_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, const sfs_slice *values,
                     size_t n, unsigned flags);
int sqlb_kv_set_mtime(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      sfs_slice key, int64_t mtime_ns);
int sqlb_kv_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_buf *out);
int sqlb_kv_get_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, size_t n, sfs_list *out);
int sqlb_kv_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 sfs_stat *out);
int sqlb_kv_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key);
/* Writes a value's time row (now) in an open stamped write transaction. */
int sqlb_kv_time(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice key, int64_t now);
int sqlb_kv_edit(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 const sfs_edit *edits, size_t n, unsigned flags,
                 uint64_t max_value, uint64_t *size);
int sqlb_kv_read(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 uint64_t off, size_t len, sfs_buf *out, uint64_t *size);
int sqlb_kv_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 const sfs_scan_opts *o, sfs_list *out);
int sqlb_kv_delete_range(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice start, sfs_slice end, uint64_t *count);
int sqlb_kv_drain(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_list *out);
int sqlb_counter_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                        sfs_slice to_key, unsigned flags);
int sqlb_kv_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                   sfs_slice to_key, unsigned flags);
int sqlb_counter_get(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t *value, int64_t *mtime_ns);
int sqlb_counter_add(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t delta, int64_t *value);
int sqlb_counter_set(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t value, int excl);
int sqlb_counter_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key);
int sqlb_counter_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      const sfs_scan_opts *o, sfs_list *out);
/* dir.c */
int sqlb_dir_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                  sfs_slice ns, sfs_slice after, long limit, int names,
                  sfs_list *out);
int sqlb_dir_exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_create(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_remove(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_rename(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                    unsigned flags);
/* seq.c */
int sqlb_log_append(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, sfs_slice value, int64_t *id);
int sqlb_log_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t after_id, long limit, int keys_only,
                  sfs_list *out);
int sqlb_log_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_buf *out);
int sqlb_log_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t id, sfs_stat *out);
/* The keys of a log namespace holding entries (sfs_dir_list). */
int sqlb_log_keys(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice after, long limit, sfs_list *out);
int sqlb_log_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t id);
int sqlb_log_clear(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, uint64_t *count);
int sqlb_queue_push(sfs_backend *b, sfs_slice queue, const sfs_slice *items,
                    size_t n, int64_t *first_id);
int sqlb_queue_pop(sfs_backend *b, sfs_slice queue, long max, sfs_list *out);
/* Pending items leaving the queue: one by id, or all; inside a write
 * transaction (with their times and time-map rows). */
int sqlb_pending_delete_tx(sfs_backend *b, sfs_slice queue, int64_t id);
int sqlb_pending_clear_tx(sfs_backend *b, sfs_slice queue, int64_t upto,
                          uint64_t *count);
/* item.c */
int sqlb_item_count(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    uint64_t *n);
int sqlb_item_scan(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   int64_t after_id, long limit, int keys_only,
                   sfs_list *out);
int sqlb_item_get(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t id, sfs_buf *out);
int sqlb_item_stat(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   int64_t id, sfs_stat *out);
int sqlb_item_delete(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                     int64_t id);
int sqlb_item_clear(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    uint64_t *count);
/* claim.c */
int sqlb_claim(sfs_backend *b, sfs_slice queue, long max, int64_t lease_ns,
               int64_t *claim_id, sfs_list *items);
int sqlb_kv_claim(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  int64_t lease_ns, int64_t *claim_id, uint64_t *count);
int sqlb_claim_items(sfs_backend *b, int64_t claim_id, int64_t after_id,
                     long limit, int keys_only, sfs_list *out);
/* Markers for every queue with items in flight that has none (after a
 * migration, a restore or an import: claim.c). Inside a write
 * transaction. */
int sqlb_marks_ensure(sfs_backend *b);
int sqlb_claim_item(sfs_backend *b, sfs_slice queue, int64_t id,
                    int64_t lease_ns, int64_t *claim_id);
int sqlb_claim_heartbeat(sfs_backend *b, int64_t claim_id, int64_t lease_ns,
                         int64_t *lease_until_ns);
int sqlb_claim_settle(sfs_backend *b, int64_t claim_id, const int64_t *ids,
                      const sfs_outcome *outcomes, size_t n);
int sqlb_item_settle(sfs_backend *b, sfs_slice queue, int64_t id,
                     sfs_outcome outcome);
int sqlb_item_heartbeat(sfs_backend *b, sfs_slice queue, int64_t id,
                        int64_t lease_ns, int64_t until_ns);
int sqlb_item_requeue(sfs_backend *b, sfs_slice queue, int64_t id,
                      int64_t *new_id);
/* Dead letters leaving: one by id, or all of a queue (*count). */
int sqlb_dead_delete(sfs_backend *b, sfs_slice queue, int64_t id);
int sqlb_dead_clear(sfs_backend *b, sfs_slice queue, uint64_t *count);
int sqlb_policy_set(sfs_backend *b, sfs_slice queue,
                    const sfs_queue_policy *p);
int sqlb_policy_get(sfs_backend *b, sfs_slice queue, sfs_queue_policy *out);
int sqlb_queue_gc(sfs_backend *b, sfs_slice queue, int at_open,
                  sfs_gc_stats *out);
/* whole.c */
int sqlb_exec_clear(sfs_backend *b, sfs_slice scope, uint64_t *count);
int sqlb_checkpoint(sfs_backend *b, const char *path,
                    sfs_progress_fn progress, void *ctx);
int sqlb_restore(sfs_backend *b, const char *path, sfs_progress_fn progress,
                 void *ctx);
int sqlb_info(sfs_backend *b, sfs_info *out);
/* sqlb_info's figures, inside the caller's read transaction. */
int sqlb_info_tx(sfs_backend *b, sfs_info *out);
int sqlb_stats(sfs_backend *b, sfs_stats *out);
int sqlb_flush_counts(sfs_backend *b);
int sqlb_verify(sfs_backend *b, sfs_progress_fn progress, void *ctx);
/* export.c */
int sqlb_export(sfs_backend *b, int (*fn)(const sfs_row *row, void *ctx),
                void *ctx, sfs_progress_fn progress, void *pctx);
int sqlb_import(sfs_backend *b, int (*next)(sfs_row *row, void *ctx),
                void *ctx);
/* rekey.c */
int sqlb_rekey(const char *db, const sfs_key *old_key, const sfs_key *new_key,
               sfs_progress_fn progress, void *ctx);

/* --- stats.c --------------------------------------------------------- */
/* Counts items pushed to (or taken from: popped, drained, claimed) a
 * queue by the current write transaction. A count that cannot be kept
 * (out of memory) is lost, never the operation. */
void qstat_note(sfs_backend *b, sfs_slice queue, uint64_t pushed,
                uint64_t taken);
/* Inside a write transaction, before COMMIT (sqlb_commit): writes the
 * counts not yet written when the last write is a second old. */
int qstat_flush(sfs_backend *b);
/* Whether qstat_flush would write (a recovery pass that changed nothing
 * still commits then: the daemon's counts reach the store). */
int qstat_due(sfs_backend *b);
/* At the transaction's end: its counts join the ones to write, or are
 * dropped with a rollback; written ones are forgotten. */
void qstat_end(sfs_backend *b, int committed);
/* At the end of a write's savepoint in a group commit (conn.c): its
 * counts join the transaction's (kept) or are dropped. */
void qstat_member_end(sfs_backend *b, int kept);
/* At close: writes what is left in a transaction of its own. */
void qstat_close(sfs_backend *b);

/* --- stamp.c ------------------------------------------------------ */
/* Called by the transaction functions of conn.c: after BEGIN
 * IMMEDIATE (stamped: the transaction may use the cache), and at its end
 * (committed or rolled back). */
void stamp_begin(sfs_backend *b, int stamped);
void stamp_end(sfs_backend *b, int committed);
/* Forgets everything now: a write that is not stamped (a delete) ran or
 * is about to run, inside or outside a transaction. */
void stamp_forget(sfs_backend *b);
void stamp_free(sfs_backend *b);
/* Inside a stamped transaction, before writing a key's time row
 * (counters: of function_counter) or a time map's note at now: 1 when the
 * row is known to hold now already (a map's: now or later; skip the
 * statement); else 0,
 * and the cache takes the statement the caller now runs as done (if it
 * fails, the transaction rolls back, and that forgets). Always 0 outside a
 * stamped transaction. */
int stamp_key(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
              sfs_slice key, int64_t now);
int stamp_map(sfs_backend *b, tm_which w, int64_t now);

#endif /* STATEFS_SQLITE_I_H */
