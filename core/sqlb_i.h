/*
 * sqlb_i.h - the SQLite backend's shared internals (private).
 *
 * The backend is split by job: sqlb_store.c (connection, statement cache,
 * transactions, status translation), sqlb_schema.c (DDL and versions),
 * sqlb_kv.c (key/value and counters), sqlb_dir.c (scopes, namespaces,
 * directories, renames), sqlb_seq.c (logs and queues), sqlb_timemap.c
 * (the time maps of log entries and queue items), sqlb_claim.c (claims,
 * in-flight items, dead letters, recovery), sqlb_stamp.c (the times a
 * connection knows are already written), sqlb_whole.c
 * (exec clear, checkpoint, restore, info, verify) and sqlb_export.c.
 *
 * Concurrency rules every file follows (see docs/engine.md):
 *  - One connection per handle; the caller's lock serialises calls.
 *  - A write is a transaction opened with BEGIN IMMEDIATE (sqlb_begin_write),
 *    so it holds the write lock before it reads anything and can never fail
 *    with SQLITE_BUSY_SNAPSHOT; waiting for the lock is the busy timeout's
 *    job. Reads of more than one statement run in one deferred transaction
 *    (sqlb_begin_read) so they see one snapshot.
 *  - Statements are prepared once per connection (SQLITE_PREPARE_PERSISTENT)
 *    and reset after each use, also on error paths, so no read transaction
 *    outlives the call that opened it.
 */
#ifndef STATEFS_SQLB_I_H
#define STATEFS_SQLB_I_H

#include <sqlite3.h>

#include "backend_i.h"
#include "crypt_i.h"
#include "err_i.h"
#include "list_i.h"

/* 1: one time row per log entry and queue item. 2: sparse time maps
 * (sqlb_timemap.c), whole-second mtimes. 3: claims (sqlb_claim.c); the
 * time override table became statefs_queue_pending, with a delivery
 * count. 4: statefs_queue_stats, the push and take counts (sqlb_stats.c);
 * claims on a namespace's entries; queue markers, so that another
 * program's clear reaches items in flight. */
#define SQLB_SCHEMA_VERSION 4

/* The rows of work_queue (alias q) that are items of queue ?1: not the
 * two marker rows at its tail (statefs_qmark, sqlb_claim.c). */
#define SQLB_QLIVE(q)                                                      \
	q "id<coalesce((SELECT lo FROM statefs_qmark WHERE queue=?1),"     \
	" 9223372036854775807)"
/* The same for a row of any queue (a correlated check per row). */
#define SQLB_QLIVE_ANY(q)                                                  \
	"NOT EXISTS (SELECT 1 FROM statefs_qmark m WHERE m.queue=" q          \
	"execution_id AND " q "id>=m.lo)"

/* Statement cache slots. Fixed statements have one slot; statements with
 * variants (optional bounds, direction) reserve a range. */
enum {
	ST_BEGIN_WRITE,
	ST_BEGIN_READ,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_DATA_VERSION,
	/* kv */
	ST_KV_PUT,
	ST_KV_PUT_TIME,
	ST_KV_GET,
	ST_KV_STAT,
	ST_KV_DEL,
	ST_KV_DEL_TIME,
	ST_KV_EXISTS,
	ST_KV_SCAN,                   /* 16 variants: start, end, rev, keys */
	ST_KV_DELRANGE = ST_KV_SCAN + 16,       /* 4: start, end */
	ST_KV_DELRANGE_TIME = ST_KV_DELRANGE + 4, /* 4 */
	ST_KV_MOVE = ST_KV_DELRANGE_TIME + 4,
	ST_KV_MOVE_TIME,
	/* counters */
	ST_CTR_ADD,
	ST_CTR_SET,
	ST_CTR_TIME,
	ST_CTR_GET,
	ST_CTR_DEL,
	ST_CTR_DEL_TIME,
	ST_CTR_SCAN,                  /* 8 variants: start, end, rev */
	/* logs */
	ST_LOG_APPEND = ST_CTR_SCAN + 8,
	ST_LOG_SCAN,                  /* 2 variants: keys_only */
	ST_LOG_GET = ST_LOG_SCAN + 2,
	ST_LOG_STAT,
	ST_LOG_KEY_FIRST,
	ST_LOG_KEY_NEXT,
	ST_LOG_DEL,
	ST_LOG_CLEAR,                 /* 3 variants: scope, ns, key */
	ST_LOG_CLEAR_RANGE = ST_LOG_CLEAR + 3,  /* 3: min and max id */
	/* queues */
	ST_Q_PUSH = ST_LOG_CLEAR_RANGE + 3,
	ST_Q_POP,
	ST_Q_SCAN,                    /* 2 variants: keys_only */
	ST_Q_PEEK = ST_Q_SCAN + 2,
	ST_Q_STAT,
	ST_Q_DEL,
	ST_Q_CLEAR_OVR,
	ST_Q_CLEAR_RANGE,
	ST_Q_CLEAR,                   /* 2 variants: clear, drain */
	ST_Q_LEN = ST_Q_CLEAR + 2,
	/* time maps: [tm_which] pairs */
	ST_TM_NOTE,                   /* 2 */
	ST_TM_PRUNE_BELOW = ST_TM_NOTE + 2,     /* 2 */
	ST_TM_PRUNE_RANGE = ST_TM_PRUNE_BELOW + 2, /* 2 */
	ST_TM_OVR_SET = ST_TM_PRUNE_RANGE + 2,
	ST_TM_OVR_DEL,
	/* claims: sqlb_claim.c numbers its own statements in this range */
	ST_CLAIM,
	ST_CLAIM_END = ST_CLAIM + 96,
	/* directories: [family] ranges are indexed by family - 1 */
	ST_DIR_NEXT_SCOPE,            /* 8: 4 families x (first, next) */
	ST_DIR_NEXT_NS = ST_DIR_NEXT_SCOPE + 8,   /* 8 */
	ST_DIR_HAS_SCOPE = ST_DIR_NEXT_NS + 8,    /* 4 */
	ST_DIR_HAS_NS = ST_DIR_HAS_SCOPE + 4,     /* 4 */
	ST_DIR_INSERT = ST_DIR_HAS_NS + 4,
	ST_DIR_DELETE,
	ST_DIR_HAS_NS_DIRS,
	/* figures (sqlb_stats.c) */
	ST_QSTAT_ADD,
	ST_QSTAT_PRUNE,
	ST_STATS_QUEUES,
	ST_STATS_SCOPES,
	ST_MAX
};

typedef struct stamp_cache stamp_cache;
typedef struct qstat qstat;

struct sfs_backend {
	sqlite3 *db;
	crypt_vfs *vfs;            /* NULL for plaintext and memory stores */
	char *path;
	int memory;
	int readonly;
	int short_of_space;        /* gave back its reserve (sqlb_store.c) */
	int in_write;              /* inside a BEGIN IMMEDIATE transaction */
	uint64_t commits;          /* write commits made on this connection */
	stamp_cache *stamps;       /* sqlb_stamp.c; NULL until first used */
	qstat *qstats;             /* sqlb_stats.c; NULL until first used */
	sqlite3_stmt *st[ST_MAX];
};

/* --- sqlb_store.c ------------------------------------------------------ */

/* THE translation of SQLite result codes into sfs_status: every failure of
 * a SQLite call in the engine goes through here. Sets the thread's detail to
 * "<what>: <sqlite message>" (or the encryption layer's message for a page
 * that failed authentication) and returns the status. */
int sqlb_fail(sfs_backend *b, int rc, const char *what);

/* The cached statement in slot, prepared from sql on first use; NULL with
 * the detail set on failure (*status gets the code). */
sqlite3_stmt *sqlb_stmt(sfs_backend *b, int slot, const char *sql,
                        int *status);

/* Steps a statement that returns no rows, resets it. SFS_OK or a status. */
int sqlb_run(sfs_backend *b, sqlite3_stmt *st, const char *what);

int sqlb_begin_write(sfs_backend *b);
/* The same for a transaction whose writes only move times forward (put,
 * counter add and set, log append, queue push and pop): it may use the
 * stamp cache (sqlb_stamp.c). */
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
/* A BLOB column as bytes; zero-length gives a non-NULL pointer. */
const void *sqlb_col(sqlite3_stmt *st, int i, size_t *len);

/* Steps a bound listing statement to its end into *out, and resets it.
 * Its columns, as far as it has them, are the sfs_item fields id, value
 * (NULL: not loaded), size, mtime_ns, n and key (NULL: none), in that
 * order. A failure is sqlb_fail(what). */
int sqlb_rows(sfs_backend *b, sqlite3_stmt *st, sfs_list *out,
              const char *what);

/* Step a bound statement that returns at most one row, and reset it. No
 * row is SFS_NOTFOUND (without a detail); a failure is sqlb_fail(what).
 * sqlb_one_blob copies the row's first column into *out (malloc'd);
 * sqlb_one_stat reads (size, mtime) columns, mtime_ns may be NULL. */
int sqlb_one_blob(sfs_backend *b, sqlite3_stmt *st, sfs_buf *out,
                  const char *what);
int sqlb_one_stat(sfs_backend *b, sqlite3_stmt *st, uint64_t *size,
                  int64_t *mtime_ns, const char *what);

/* --- sqlb_schema.c ----------------------------------------------------- */
/* Creates missing tables (or, read-only, shadows our missing tables with
 * empty temporary ones) and checks the schema version. */
int sqlb_schema_init(sfs_backend *b);
/* The tables restore acts on: the SDK's four, then ours (statefs_*
 * except statefs_meta, and statefs_queue_stats: the live store's counts
 * only grow), read from sqlite_schema of schema `db` ("main").
 * *names is malloc'd, NULL-terminated, entries malloc'd. */
int sqlb_schema_tables(sfs_backend *b, const char *db, char ***names);
void sqlb_schema_tables_free(char **names);

/* --- sqlb_timemap.c ---------------------------------------------------- */
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
	" WHERE id=" e "), (SELECT enqueued_ns FROM statefs_queue_timemap"  \
	" WHERE id<=" e " ORDER BY id DESC LIMIT 1), 0)"

/* After entry id (the first of a batch) was inserted at now (whole
 * seconds): adds a map row if now is later than the latest row's time. */
int tm_note(sfs_backend *b, tm_which w, int64_t id, int64_t now);
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

/* --- the ops, by file ---------------------------------------------------- */
int sqlb_kv_put_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, const sfs_slice *values,
                     size_t n);
int sqlb_kv_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_buf *out);
int sqlb_kv_get_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, size_t n, sfs_list *out);
int sqlb_kv_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 uint64_t *size, int64_t *mtime_ns);
int sqlb_kv_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key);
int sqlb_kv_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 const sfs_scan_opts *o, sfs_list *out);
int sqlb_kv_delete_range(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice start, sfs_slice end, uint64_t *count);
int sqlb_kv_drain(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_list *out);
int sqlb_kv_restore(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, const sfs_slice *values, size_t n);
int sqlb_kv_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                   sfs_slice to_key, unsigned flags);
int sqlb_counter_get(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t *value, int *exists);
int sqlb_counter_add(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t delta, int64_t *value);
int sqlb_counter_set(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t value);
int sqlb_counter_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key);
int sqlb_counter_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      const sfs_scan_opts *o, sfs_list *out);

int sqlb_scope_list(sfs_backend *b, sfs_family fam, sfs_slice after,
                    long limit, sfs_list *out);
int sqlb_ns_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                 sfs_slice after, long limit, sfs_list *out);
int sqlb_dir_exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_create(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_remove(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns);
int sqlb_dir_rename(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                    unsigned flags);

int sqlb_log_append(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, sfs_slice value, int64_t *id);
int sqlb_log_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t after_id, long limit, int keys_only,
                  sfs_list *out);
int sqlb_log_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_buf *out);
int sqlb_log_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t id, uint64_t *size,
                  int64_t *mtime_ns);
int sqlb_log_keys(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice after, long limit, sfs_list *out);
int sqlb_log_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t id);
int sqlb_log_clear(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, uint64_t *count);
int sqlb_queue_push(sfs_backend *b, sfs_slice queue, const sfs_slice *items,
                    size_t n, int64_t *first_id);
int sqlb_queue_pop(sfs_backend *b, sfs_slice queue, sfs_buf *item,
                   int64_t *id);
int sqlb_queue_drain(sfs_backend *b, sfs_slice queue, sfs_list *out);
int sqlb_queue_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                    long limit, int keys_only, sfs_list *out);
int sqlb_queue_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                    sfs_buf *item);
int sqlb_queue_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                    uint64_t *size, int64_t *mtime_ns);
int sqlb_queue_delete(sfs_backend *b, sfs_slice queue, int64_t id);
int sqlb_queue_clear(sfs_backend *b, sfs_slice queue, uint64_t *count);
int sqlb_queue_len(sfs_backend *b, sfs_slice queue, uint64_t *len);

int sqlb_claim(sfs_backend *b, sfs_slice queue, long max, int64_t lease_ns,
               int64_t *claim_id, sfs_list *items);
int sqlb_kv_claim(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  int64_t lease_ns, int64_t *claim_id, uint64_t *count);
int sqlb_claim_items(sfs_backend *b, int64_t claim_id, int64_t after_id,
                     long limit, int keys_only, sfs_list *out);
/* Markers for every queue with items in flight that has none (after a
 * migration, a restore or an import: sqlb_claim.c). Inside a write
 * transaction. */
int sqlb_marks_ensure(sfs_backend *b);
int sqlb_claim_item(sfs_backend *b, sfs_slice queue, int64_t id,
                    int64_t lease_ns, int64_t *claim_id);
int sqlb_claim_heartbeat(sfs_backend *b, int64_t claim_id, int64_t lease_ns,
                         int64_t *lease_until_ns);
int sqlb_claim_settle(sfs_backend *b, int64_t claim_id, const int64_t *ids,
                      const sfs_outcome *outcomes, size_t n);
int sqlb_inflight_settle(sfs_backend *b, sfs_slice queue, int64_t id,
                         sfs_outcome outcome);
int sqlb_inflight_heartbeat(sfs_backend *b, sfs_slice queue, int64_t id,
                            int64_t lease_ns);
int sqlb_inflight_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                       long limit, int keys_only, sfs_list *out);
int sqlb_inflight_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                       sfs_buf *item);
int sqlb_inflight_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                       sfs_claim_info *out);
int sqlb_dead_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                   long limit, int keys_only, sfs_list *out);
int sqlb_dead_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                   sfs_buf *item);
int sqlb_dead_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                   uint64_t *size, int64_t *mtime_ns);
int sqlb_dead_requeue(sfs_backend *b, sfs_slice queue, int64_t id,
                      int64_t *new_id);
int sqlb_dead_delete(sfs_backend *b, sfs_slice queue, int64_t id);
int sqlb_dead_clear(sfs_backend *b, sfs_slice queue, uint64_t *count);
int sqlb_policy_set(sfs_backend *b, sfs_slice queue,
                    const sfs_queue_policy *p);
int sqlb_policy_get(sfs_backend *b, sfs_slice queue, sfs_queue_policy *out);
int sqlb_queue_gc(sfs_backend *b, sfs_slice queue, int at_open,
                  sfs_gc_stats *out);

int sqlb_exec_clear(sfs_backend *b, sfs_slice scope, uint64_t *count);
int sqlb_checkpoint(sfs_backend *b, const char *path,
                    sfs_progress_fn progress, void *ctx);
int sqlb_restore(sfs_backend *b, const char *path, sfs_progress_fn progress,
                 void *ctx);
int sqlb_info(sfs_backend *b, sfs_info *out);
/* sqlb_info's figures, inside the caller's read transaction. */
int sqlb_info_tx(sfs_backend *b, sfs_info *out);
int sqlb_stats(sfs_backend *b, sfs_stats *out);
int sqlb_verify(sfs_backend *b, sfs_progress_fn progress, void *ctx);
int sqlb_export(sfs_backend *b, int (*fn)(const sfs_row *row, void *ctx),
                void *ctx, sfs_progress_fn progress, void *pctx);
int sqlb_import_begin(sfs_backend *b, sfs_import_be **out);
int sqlb_import_row(sfs_import_be *imp, const sfs_row *row);
int sqlb_import_commit(sfs_import_be *imp);
void sqlb_import_abort(sfs_import_be *imp);

/* --- sqlb_stats.c ------------------------------------------------------ */
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
/* At close: writes what is left in a transaction of its own. */
void qstat_close(sfs_backend *b);

/* --- sqlb_stamp.c ------------------------------------------------------ */
/* Called by the transaction functions of sqlb_store.c: after BEGIN
 * IMMEDIATE (stamped: the transaction may use the cache), and at its end
 * (committed or rolled back). */
void stamp_begin(sfs_backend *b, int stamped);
void stamp_end(sfs_backend *b, int committed);
void stamp_free(sfs_backend *b);
/* Inside a stamped transaction, before writing a key's time row
 * (counters: of function_counter) or a time map's note at now: 1 when the
 * row is known to hold now or later already (skip the statement); else 0,
 * and the cache takes the statement the caller now runs as done (if it
 * fails, the transaction rolls back, and that forgets). Always 0 outside a
 * stamped transaction. */
int stamp_key(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
              sfs_slice key, int64_t now);
int stamp_map(sfs_backend *b, tm_which w, int64_t now);

#endif /* STATEFS_SQLB_I_H */
