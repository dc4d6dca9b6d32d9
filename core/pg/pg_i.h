/*
 * pg_i.h - the PostgreSQL backend's shared internals (private).
 *
 * A store on PostgreSQL is a schema of its own in a database that several
 * hosts reach (docs/postgres.md). The backend is split by job:
 *   conn.c    the connection string: our keywords, the password rule,
 *             the name shown to people; one connection's setup
 *   pool.c    the pool, the prepared-statement registry, running a
 *             statement, the retry loop, and THE translation of
 *             PostgreSQL errors into sfs_status
 *   schema.c  DDL, the server-side functions, versions, the key check
 *   seal.c    sealing values on the client (XChaCha20-Poly1305)
 *   store.c   open, close, sync, the change counter (LISTEN), ops table
 *   kv.c      key/value and counters
 *   dir.c     scopes, namespaces, directories, renames
 *   seq.c     logs and queues
 *   item.c    a queue's items by state
 *   claim.c   claims, in-flight items, dead letters, recovery
 *   stats.c   the figures of sfs_store_stats
 *   whole.c   exec clear, info, verify, checkpoint, restore
 *   export.c  export and import
 *
 * Concurrency rules every file follows:
 *  - Calls are NOT serialised by the caller (ops.concurrent): each call
 *    takes a connection from the pool for its duration, so the daemon's
 *    threads run on several connections at once. Nothing else in the
 *    backend is shared between calls but the pool, the statement registry
 *    and the change counter, each with its own lock or atomics.
 *  - Every call runs inside PGB_TRY: a transient failure (serialization
 *    failure, deadlock, a connection lost before the commit point) runs
 *    the body again from the start on a sound connection. A body therefore
 *    writes its outputs only when it returns SFS_OK, and leaves nothing
 *    allocated when it fails.
 *  - A write commits in exactly one place: an autocommit statement, or
 *    COMMIT. That statement is run with PGB_COMMIT: if the connection is
 *    lost while it runs, the server is asked what became of the
 *    transaction (pool.c, commit_exec): not committed, the call runs
 *    again; committed, it succeeds with the answer it had; when the
 *    server cannot say, the call fails with SFS_IO saying the outcome is
 *    unknown (never SFS_OK), unless the operation is idempotent
 *    (PGB_IDEMPOTENT), which is then simply run again.
 *  - Reads of more than one statement run in one REPEATABLE READ READ ONLY
 *    transaction: one snapshot.
 *  - Times (mtimes, enqueue times, leases) are the server's clock, read in
 *    SQL by sfs_now()/sfs_mtime(); the only host clock ever sent is the
 *    test clock a unit test installs (sfs_clock_set), as that argument.
 */
#ifndef STATEFS_PGB_I_H
#define STATEFS_PGB_I_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend_i.h"
#include "err_i.h"
#include "list_i.h"
#include "pq_i.h"

/* The version of the statefs schema on PostgreSQL (its own numbering):
 * 2 bounds the id sequences at SFS_ID_MAX (schema.c, migrate). */
#define PGB_SCHEMA_VERSION 2

/* Bytes a sealed value has beyond its plaintext: format 1, nonce 24,
 * tag 16 (seal.c). */
#define PGB_SEAL_OVERHEAD 41

typedef struct pgc pgc;             /* one connection of the pool */
typedef struct pgb_keys pgb_keys;   /* the row key (seal.c) */
typedef struct pgb_reg pgb_reg;     /* prepared statements (pool.c) */
typedef struct pgb_listener pgb_listener; /* LISTEN thread (store.c) */
typedef struct pgb_ad pgb_ad;       /* where a sealed value lives */
typedef struct pgb_qstat pgb_qstat; /* queue counts (stats.c) */

struct sfs_backend {
	char *conninfo;          /* for libpq; may hold a password: never
	                            shown, never logged */
	char *display;           /* the same without any password: the
	                            store's name in messages */
	char *schema;            /* the store's schema */
	char *qschema;           /* it as a quoted SQL identifier */
	char *channel;           /* its notification channel */
	int readonly;
	int busy_ms;             /* lock_timeout, and how long to retry */
	char connect_timeout[16]; /* libpq's connect_timeout when neither
	                            the string, a service nor the
	                            environment sets one; "": theirs */
	pgb_keys *keys;          /* NULL for a plaintext store */
	sfs_key *key;            /* a copy of the store's key (checkpoints
	                            are SQLite stores under the same key) */

	/* The pool: connections are made on demand, up to max. */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pgc **idle;              /* guarded by mu */
	size_t nidle;            /* guarded by mu */
	size_t nopen;            /* connections in existence; guarded by mu */
	size_t max;              /* immutable after open */
	pgb_reg *reg;
	atomic_int unreachable;  /* 1 once a call waited out its busy timeout
	                            without a connection; 0 again at the next
	                            connection made (pool.c) */

	/* The change counter (sfs_store_version): commits of this handle,
	 * plus notifications of new pending items from any host. */
	atomic_uint_fast64_t commits;
	atomic_uint_fast64_t notes;
	pgb_listener *listener;  /* started by the first version call */
	pthread_mutex_t listen_mu;
	pgb_qstat *qstat;        /* pushed and taken counts, not yet written */

	/* The sweep of orphaned time rows (claim.c): where the next stretch
	 * of each time table starts, after (scope_id, ns, key) of the
	 * value and counter tables (empty: from the first) and after the
	 * ids of the log and queue tables. Guarded by sweep_mu. */
	pthread_mutex_t sweep_mu;
	sfs_buf sweep_after[2][3];
	int64_t sweep_after_id[2];
};

/* --- conn.c ------------------------------------------------------------ */

/* What a db string says beyond libpq's keywords. */
typedef struct pgb_target {
	char *conninfo;          /* the string for libpq (ours removed) */
	char *display;           /* the string without a password */
	char *schema;            /* "statefs" unless schema= */
	long pool;               /* 0: unless pool= */
	int has_password;        /* the string itself holds a password */
	int has_timeout;         /* it sets connect_timeout or names a
	                          * service (whose file may set it) */
} pgb_target;

/* Parses db (a postgresql:// URI or a key=value string) into *t: our own
 * keywords schema= and pool= are taken out, the rest must be libpq's.
 * SFS_INVALID with a sentence for anything else. */
int pgb_target_parse(const char *db, pgb_target *t);
void pgb_target_free(pgb_target *t);

/* A new connection to b's server, set up for the store (search path,
 * lock timeout, read-only, application name). NULL with the detail set
 * (and *status) on failure. */
PGconn *pgb_connect(sfs_backend *b, const char *schema_or_null,
                    int *status);
/* A connection to b's server started (PQconnectStartParams), the
 * engine's logger taking its notices, and nothing set up: its caller
 * drives PQconnectPoll and bounds the wait (the listener, store.c). NULL
 * when out of memory. */
PGconn *pgb_connect_start(sfs_backend *b);

/* Whether a store name is a PostgreSQL connection string (a postgresql://
 * or postgres:// URI, or key=value starting with a libpq keyword);
 * anything else is a SQLite path. */
int pgb_is_db(const char *db);
/* The string without any password (malloc'd into *out). */
int pgb_name(const char *db, char **out);
/* Whether the string itself holds a password. */
int pgb_db_has_password(const char *db, int *has);

/* --- store.c ----------------------------------------------------------- */

int pgb_open(const sfs_backend_cfg *cfg, sfs_backend **out);
/* SFS_OK when the store exists (*encrypted says how), SFS_NOTFOUND when
 * not. */
int pgb_probe(const char *db, int *encrypted);

/* --- pool.c ------------------------------------------------------------ */

struct pgc {
	PGconn *conn;
	sfs_backend *b;
	unsigned char *prepared; /* [registry id] 1 when prepared here */
	size_t nprepared;
	int in_tx;               /* inside BEGIN ... */
	int transient;           /* the last failure may pass if run again */
	int unknown;             /* lost while committing: outcome unknown */
	int broken;              /* reconnect before the next use */
	int ending;              /* the server said it ends it (a notice) */
	PQnoticeReceiver rcv;    /* libpq's notice receiver */
	int run_known;           /* run is set */
	int64_t run[2];          /* the server's run (pool.c, RUN_SQL) */
};

int pgb_pool_init(sfs_backend *b, size_t max);
void pgb_pool_destroy(sfs_backend *b);

/* Parameters of one statement, all sent in binary. At most PGP_MAX. */
#define PGP_MAX 12
typedef struct pgp {
	int n;
	Oid types[PGP_MAX];
	const char *vals[PGP_MAX];
	int lens[PGP_MAX];
	int fmts[PGP_MAX];
	char ints[PGP_MAX][8];
	void *owned[PGP_MAX];    /* arrays built here; pgp_free */
} pgp;

#define PGP_INIT { 0 }
/* A byte string (bytea); SFS_NONE is SQL NULL. */
void pgp_bytes(pgp *p, sfs_slice s);
void pgp_i64(pgp *p, int64_t v);
/* An int8 that is NULL (the test clock when none is set, a missing id). */
void pgp_null_i64(pgp *p);
/* The test clock (sfs_clock_set) as an int8, or NULL: the server's. */
void pgp_clock(pgp *p);
void pgp_text(pgp *p, const char *s);
/* Arrays: int8[] (NULL entries where isnull[i], isnull may be NULL) and
 * bytea[] (NULL entries for SFS_NONE). SFS_NOMEM on failure. */
int pgp_i64_array(pgp *p, const int64_t *v, const char *isnull, size_t n);
int pgp_bytes_array(pgp *p, const sfs_slice *v, size_t n);
/* A NULL array: of int8 (bytes 0) or of bytea (bytes 1). */
void pgp_null_array(pgp *p, int bytes);
void pgp_free(pgp *p);

enum {
	PGB_COMMIT = 1u << 0,     /* this statement is the commit point */
};

/* Runs sql (prepared on this connection on first use) with p (may be
 * NULL). *res (may be NULL) gets a result with rows, which the caller
 * PQclear()s. A failure is pgb_fail's, with what naming the work. */
int pgb_exec(pgc *c, const char *sql, pgp *p, unsigned flags,
             PGresult **res, const char *what);
/* pgb_exec for statements with one answer. _int: the first column of
 * the first row into *v (0 when there is no row); _stat: a (size, mtime)
 * row, SFS_NOTFOUND when none; _value: a sealed value in column 0, opened
 * for ad into *out, SFS_NOTFOUND when none. */
int pgb_exec_int(pgc *c, const char *sql, pgp *p, unsigned flags,
                 int64_t *v, const char *what);
int pgb_exec_stat(pgc *c, const char *sql, pgp *p, uint64_t *size,
                  int64_t *mtime, const char *what);
int pgb_exec_value(pgc *c, const char *sql, pgp *p, const pgb_ad *ad,
                   sfs_buf *out, const char *what);
/* One statement with one integer answer (*v), run with retries: a read
 * (flags 0), or a write that commits alone (PGB_COMMIT) and answers with
 * the rows it changed: a nonzero answer moves the change counter. p is
 * not consumed (the caller pgp_free()s arrays in it). */
int pgb_run_int(sfs_backend *b, const char *sql, pgp *p, unsigned flags,
                int64_t *v, const char *what);
/* Runs SQL text without parameters or preparing (DDL, SET, BEGIN). */
int pgb_exec_text(pgc *c, const char *sql, unsigned flags,
                  const char *what);

/* BEGIN (isolation READ COMMITTED), BEGIN for one snapshot, and
 * COMMIT (with PGB_COMMIT). A failed body needs no rollback call:
 * PGB_TRY rolls back whatever it leaves open. */
int pgb_begin(pgc *c);
int pgb_begin_snapshot(pgc *c);
int pgb_commit(pgc *c);
/* After a successful write commit: moves sfs_store_version. */
void pgb_committed(sfs_backend *b);

/* THE translation of a PostgreSQL failure into sfs_status, with the
 * detail "<what>: <server message>". res may be NULL (connection
 * failures). Also classifies the failure on c (transient, unknown). */
int pgb_fail(pgc *c, const PGresult *res, unsigned flags, const char *what);

/* Reading binary results. Integers of any width; NULL reads 0. */
int64_t pgr_i64(const PGresult *r, int row, int col);
/* A bytea or text column: SFS_NONE when NULL, else a non-NULL pointer
 * (also for an empty value) into r. */
sfs_slice pgr_bytes(const PGresult *r, int row, int col);

/* The retry loop around a call:
 *     pgc *c;
 *     int st;
 *     PGB_TRY(b, c, st, 0) {
 *             st = body(c, ...);
 *     }
 *     return st;
 * takes a connection, runs the body, rolls back what it left open, and
 * runs it again while the failure is transient (and, with
 * PGB_IDEMPOTENT, also when a commit's outcome is unknown), for up to
 * the busy timeout. The body must not `return` or `break`. */
enum {
	PGB_IDEMPOTENT = 1u << 0, /* also retry a commit whose outcome is unknown */
	PGB_FAILFAST = 1u << 1,   /* no retry when no connection can be made */
};
typedef struct pgb_try {
	sfs_backend *b;
	pgc *c;
	unsigned flags;
	int attempt;
	int64_t deadline_ns;
} pgb_try;
int pgb_try_next(pgb_try *t, pgc **c, int *st);
#define PGB_TRY(b, c, st, flags)                                           \
	for (pgb_try pgb_t_ = { (b), NULL, (flags), 0, 0 };                 \
	     pgb_try_next(&pgb_t_, &(c), &(st));)

/* --- seal.c ------------------------------------------------------------ */

/* Where a sealed value lives, bound into its associated data. */
enum { PGB_AD_KV = 1, PGB_AD_LOG = 2, PGB_AD_QUEUE = 3 };
struct pgb_ad {
	int fam;
	sfs_slice scope;         /* the queue for PGB_AD_QUEUE */
	sfs_slice ns, key;       /* SFS_NONE for queue items */
	int64_t id;              /* 0 for key/value entries */
};

/* Derives the row key from key for a store with this meta row (salt,
 * kdf, key check; schema.c), or makes a new meta row (*meta malloc'd)
 * when meta is SFS_NONE. SFS_WRONGKEY with today's sentences, naming
 * `name`. */
int pgb_keys_open(const sfs_key *key, sfs_slice meta, const char *name,
                  pgb_keys **out, sfs_buf *newmeta);
void pgb_keys_free(pgb_keys *k);
const char *pgb_keys_kdf(const pgb_keys *k);

/* Seals plain for ad. For a plaintext store *out is plain itself and
 * *owned NULL; else *owned is the malloc'd sealed bytes (free it). */
int pgb_seal(const sfs_backend *b, const pgb_ad *ad, sfs_slice plain,
             sfs_slice *out, void **owned);
/* Opens sealed for ad into dst (sealed.len - overhead bytes; the plain
 * length for a plaintext store, when it copies). SFS_CORRUPT naming the
 * row when it fails authentication. */
int pgb_unseal(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
               unsigned char *dst);
/* The plaintext length of a stored value (< 0: too short to be sealed). */
int64_t pgb_plain_len(const sfs_backend *b, size_t stored);
/* Convenience: unseal into a new sfs_buf / the last item of a list. */
int pgb_unseal_buf(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
                   sfs_buf *out);
int pgb_unseal_item(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
                    listb *lb);

/* An advisory-lock key for the log (scope, ns, key) of this store. */
int64_t pgb_log_lock_key(const sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice key);
/* The key of a queue's lock, which every new item id of the queue is
 * taken under (a push, a retry, a requeue: see PGB_SQL_PUSH). */
int64_t pgb_queue_lock_key(const sfs_backend *b, sfs_slice queue);

/* --- schema.c ---------------------------------------------------------- */

/* Creates (CREATE flag) or checks the store's schema on a fresh
 * connection, and opens its keys. */
int pgb_schema_init(sfs_backend *b, pgc *c, const sfs_backend_cfg *cfg);

/* Whether the store exists (SFS_OK / SFS_NOTFOUND), and whether it is
 * encrypted, for sfs_store_exists and the config rules. */
int pgb_schema_probe(sfs_backend *b, pgc *c, int *encrypted);

/* --- stats.c ----------------------------------------------------------- */

/* Counts of items pushed to and taken from a queue (popped, drained,
 * claimed), noted after the call that moved them committed; written at
 * most once a second (by the noting thread, after its call released its
 * connection), by a recovery pass (pgb_qstat_due, when a second has
 * passed) and at close. A count that cannot be kept or written never
 * fails the call that made it (a warning is logged). */
int pgb_qstat_init(sfs_backend *b);
void pgb_qstat_note(sfs_backend *b, sfs_slice queue, uint64_t pushed,
                    uint64_t taken);
void pgb_qstat_due(sfs_backend *b);
void pgb_qstat_close(sfs_backend *b);

/* --- the ops, by file ------------------------------------------------------ */

int pgb_kv_put_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, const sfs_slice *values, size_t n,
                    unsigned flags);
int pgb_kv_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_buf *out);
int pgb_kv_get_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, size_t n, sfs_list *out);
int pgb_kv_edit(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                const sfs_edit *edits, size_t n, unsigned flags,
                uint64_t max_value, uint64_t *size);
int pgb_kv_read(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t off, size_t len, sfs_buf *out, uint64_t *size);
int pgb_kv_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_stat *out);
int pgb_kv_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key);
int pgb_kv_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *o, sfs_list *out);
int pgb_kv_delete_range(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count);
int pgb_kv_drain(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_list *out);
int pgb_kv_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                  sfs_slice to_key, unsigned flags);
int pgb_counter_get(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t *value, int64_t *mtime_ns);
int pgb_counter_add(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t delta, int64_t *value);
int pgb_kv_set_mtime(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t mtime_ns);
int pgb_counter_set(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t value, int excl);
int pgb_counter_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                       sfs_slice to_key, unsigned flags);
int pgb_counter_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       sfs_slice key);
int pgb_counter_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *o, sfs_list *out);

int pgb_dir_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                 sfs_slice ns, sfs_slice after, long limit, int names,
                 sfs_list *out);
int pgb_scope_list(sfs_backend *b, sfs_family fam, sfs_slice after,
                   long limit, sfs_list *out);
int pgb_ns_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                sfs_slice after, long limit, sfs_list *out);
int pgb_dir_exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);
int pgb_dir_create(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);
int pgb_dir_remove(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns);
int pgb_dir_rename(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                   unsigned flags);

int pgb_log_append(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice value, int64_t *id);
int pgb_log_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice key, int64_t after_id, long limit, int keys_only,
                 sfs_list *out);
int pgb_log_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                int64_t id, sfs_buf *out);
int pgb_log_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_stat *out);
int pgb_log_keys(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice after, long limit, sfs_list *out);
int pgb_log_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, int64_t id);
int pgb_log_clear(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, uint64_t *count);
int pgb_queue_push(sfs_backend *b, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id);
int pgb_queue_pop(sfs_backend *b, sfs_slice queue, long max,
                  sfs_list *out);
int pgb_queue_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                   long limit, int keys_only, sfs_list *out);
int pgb_queue_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                   sfs_buf *item);
int pgb_queue_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                   sfs_stat *out);
int pgb_queue_delete(sfs_backend *b, sfs_slice queue, int64_t id);
int pgb_queue_clear(sfs_backend *b, sfs_slice queue, uint64_t *count);
int pgb_queue_len(sfs_backend *b, sfs_slice queue, uint64_t *len);
/* n new consecutive item ids into *first (seq.c; claims' retries and
 * requeues use it too), under the advisory lock *lock when not NULL (a
 * push's: its queue's, see PGB_SQL_PUSH). */
int pgb_item_ids(pgc *c, size_t n, const int64_t *lock, int64_t *first);
/* Items of a queue (pending, in flight or dead), for the three: the
 * listing sql gives with $1 queue, $2 after id, $3 limit (pgb_rows'
 * columns); one item sql gives ($1 queue, $2 id; column 0), opened.
 * SFS_NOTFOUND when the statement gives no row. */
int pgb_sql_item_scan(sfs_backend *b, const char *sql, sfs_slice queue,
                  int64_t after_id, long limit, sfs_list *out);
int pgb_sql_item_get(sfs_backend *b, const char *sql, sfs_slice queue, int64_t id,
                 sfs_buf *out);
/* item.c: the item entries, one row per state. */
int pgb_item_count(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   uint64_t *n);
int pgb_item_scan(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t after_id, long limit, int keys_only,
                  sfs_list *out);
int pgb_item_get(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                 int64_t id, sfs_buf *out);
int pgb_item_stat(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t id, sfs_stat *out);
int pgb_item_delete(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    int64_t id);
int pgb_item_clear(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   uint64_t *count);

int pgb_claim(sfs_backend *b, sfs_slice queue, long max, int64_t lease_ns,
              int64_t *claim_id, sfs_list *items);
int pgb_kv_claim(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 int64_t lease_ns, int64_t *claim_id, uint64_t *count);
int pgb_claim_items(sfs_backend *b, int64_t claim_id, int64_t after_id,
                    long limit, int keys_only, sfs_list *out);
int pgb_claim_item(sfs_backend *b, sfs_slice queue, int64_t id,
                   int64_t lease_ns, int64_t *claim_id);
int pgb_claim_heartbeat(sfs_backend *b, int64_t claim_id, int64_t lease_ns,
                        int64_t *lease_until_ns);
int pgb_claim_settle(sfs_backend *b, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n);
int pgb_item_settle(sfs_backend *b, sfs_slice queue, int64_t id,
                        sfs_outcome outcome);
int pgb_item_heartbeat(sfs_backend *b, sfs_slice queue, int64_t id,
                       int64_t lease_ns, int64_t until_ns);
int pgb_inflight_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                      long limit, int keys_only, sfs_list *out);
int pgb_inflight_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                      sfs_buf *item);
int pgb_inflight_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                      sfs_stat *out);
int pgb_dead_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                  long limit, int keys_only, sfs_list *out);
int pgb_dead_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                  sfs_buf *item);
int pgb_dead_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                  sfs_stat *out);
int pgb_item_requeue(sfs_backend *b, sfs_slice queue, int64_t id,
                     int64_t *new_id);
int pgb_dead_delete(sfs_backend *b, sfs_slice queue, int64_t id);
int pgb_dead_clear(sfs_backend *b, sfs_slice queue, uint64_t *count);
int pgb_policy_set(sfs_backend *b, sfs_slice queue,
                   const sfs_queue_policy *p);
int pgb_policy_get(sfs_backend *b, sfs_slice queue, sfs_queue_policy *out);
int pgb_queue_gc(sfs_backend *b, sfs_slice queue, int at_open,
                 sfs_gc_stats *out);

int pgb_exec_clear(sfs_backend *b, sfs_slice scope, uint64_t *count);
int pgb_checkpoint(sfs_backend *b, const char *path, sfs_progress_fn progress,
                   void *ctx);
int pgb_restore(sfs_backend *b, const char *path, sfs_progress_fn progress,
                void *ctx);
int pgb_info(sfs_backend *b, sfs_info *out);
/* pgb_info's figures, inside the caller's transaction. */
int pgb_info_tx(pgc *c, sfs_info *out);
int pgb_stats(sfs_backend *b, sfs_stats *out);
int pgb_flush_counts(sfs_backend *b);
int pgb_verify(sfs_backend *b, sfs_progress_fn progress, void *ctx);
int pgb_export(sfs_backend *b, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx);
int pgb_import_rows(sfs_backend *b, int (*next)(sfs_row *row, void *ctx),
                    void *ctx);
/* Import on a connection of the caller's, inside its transaction (restore
 * uses it): rows one by one, then pgb_import_finish before the commit
 * (it moves the id sequences past what came in). */
typedef struct pgb_imp {
	pgc *c;
	int64_t max_log, max_item, max_claim;
} pgb_imp;
int pgb_import_one(pgb_imp *imp, const sfs_row *row);
int pgb_import_finish(pgb_imp *imp);

/* A connection held across calls (imports): taken from the pool, given
 * back with whatever transaction it has open rolled back. */
int pgb_acquire(sfs_backend *b, pgc **c);
void pgb_release(sfs_backend *b, pgc *c);

/* A loose index scan (dir.c): the distinct values that the SQL
 * expressions first (the least value) and next (the least above s.v)
 * give, in order, at most limit (<= 0: all), as item.key. p holds the
 * expressions' parameters; the limit is added as the next one. */
int pgb_walk(pgc *c, const char *first, const char *next, pgp *p,
             long limit, sfs_list *out);

/* Scan results: rows of (id, value, stored length, mtime, n, key) into a
 * list as sqlb_rows does, unsealing values for the ad that adfn gives
 * each row (NULL: no values). */
typedef void (*pgb_adfn)(const PGresult *r, int row, void *ctx, pgb_ad *ad);
int pgb_rows(const sfs_backend *b, const PGresult *r, pgb_adfn adfn,
             void *ctx, sfs_list *out);

#endif /* STATEFS_PGB_I_H */
