/*
 * backend_i.h - the seam between the public API and a storage backend
 * (private to core/).
 *
 * The public functions (api_*.c, store.c) check arguments, take the handle's
 * lock and call one entry of an ops table; a backend implements the table
 * over its database and is the only code that knows that database. There
 * are two: SQLite (core/sqlite/), and PostgreSQL (core/pg/) for stores
 * shared by several hosts. A backend is chosen by the store's name when it
 * is opened: store.c asks each backend of its table, in order, whether it
 * accepts the name (PostgreSQL: a postgresql:// URI or a libpq key=value
 * string), and the SQLite backend, last, accepts every name (a file
 * path). A new backend is a folder core/<name>/ with its own
 * meson library, an ops table, and one row in that table; nothing above
 * core/ changes (docs/architecture.md).
 *
 * Contract for every entry, on top of statefs.h's conventions:
 *  - Arguments are already valid: required slices have ptr != NULL and sizes
 *    are within limits; ns == SFS_NONE only where the entry says so; scan
 *    options are never NULL; states, outcomes and families are in range.
 *  - Calls on one backend handle are serialised by the caller
 *    (sfs_store.mu); a backend needs no lock of its own for its connection.
 *  - The backend sets the error detail (sfs_err) on failure and writes
 *    outputs only on SFS_OK. What it cannot do it refuses with
 *    SFS_UNSUPPORTED and a sentence that says what to use instead.
 *  - Every write is atomic across processes: a single write statement or a
 *    transaction that takes the write lock first.
 *  - The entries mirror statefs.h one to one unless their comment says
 *    otherwise; the few that differ take what the API layer resolved
 *    (leases in ns, the default path, the "all items" form of settle).
 */
#ifndef STATEFS_BACKEND_I_H
#define STATEFS_BACKEND_I_H

#include "statefs.h"

typedef struct sfs_backend sfs_backend;   /* defined by each backend */

/* Leases (and times-to-live) longer than this are refused: now + lease
 * must fit int64 ns. A lease end given (item_heartbeat's until_ns) is
 * refused further than this from the backend's now. */
#define MAX_LEASE_MS (1000LL * 3600 * 24 * 365 * 100)

/* What a backend's open gets: the public options, checked and defaulted. */
typedef struct sfs_backend_cfg {
	const char *db;            /* never NULL: the default path is resolved */
	unsigned flags;            /* SFS_OPEN_* */
	const sfs_key *key;        /* NULL for plaintext and memory stores */
	int busy_timeout_ms;       /* > 0 */
	uint64_t max_value;        /* > 0 */
} sfs_backend_cfg;

/* What is at a store's name before anyone opens it (probe). */
typedef enum be_kind {
	BE_KIND_NEW = 1,           /* nothing yet: a create makes it */
	BE_KIND_PLAIN,             /* a plaintext store */
	BE_KIND_ENCRYPTED,         /* an encrypted store */
} be_kind;

typedef struct sfs_backend_ops {
	const char *name;          /* "sqlite": sfs_info.backend */
	/* 1: the backend serialises what it must itself, and the caller
	 * takes no lock around its calls (threads of one handle run at once:
	 * PostgreSQL, one connection per call from a pool). */
	int concurrent;

	/* The backend itself, before a handle exists. */
	/* 1 when db names a store of this backend. */
	int (*accepts)(const char *db);
	int (*open)(const sfs_backend_cfg *cfg, sfs_backend **out);
	/* What db is, without a key and without changing anything: for the
	 * open rules' sentences (config.c). SFS_NOKEY is not a failure
	 * here: an encrypted store is BE_KIND_ENCRYPTED. */
	int (*probe)(const char *db, be_kind *kind);
	/* What messages call db: the name without any secret it holds
	 * (malloc'd into *out). NULL: the name itself. */
	int (*display)(const char *db, char **out);
	/* db as a caller named it with SFS_OPEN_ENV (sfs_config.db, which
	 * tools fill from their command line): SFS_INVALID with a sentence
	 * for a name that must not be given there (one holding a password).
	 * NULL: every name may. */
	int (*given)(const char *db);
	/* sfs_rekey, on a store no process has open. */
	int (*rekey)(const char *db, const sfs_key *old_key,
	             const sfs_key *new_key, sfs_progress_fn progress,
	             void *ctx);

	/* A handle. */
	void (*close)(sfs_backend *b);
	/* In a child after fork(), before it opens a store (store.c,
	 * "Handles inherited across fork"): let go of what a handle the
	 * child inherited holds in this process, writing nothing to the
	 * store; only close() follows, and frees what is left. SFS_BUSY
	 * when the handle was in use at the fork (a call under way, a
	 * transaction open), and nothing is changed. NULL: a backend whose
	 * handles a child's own do not meet (PostgreSQL's connections are
	 * the server's). */
	int (*forsake)(sfs_backend *b);
	/* Around fork() (store.c): hold 1 before it returns with no thread
	 * of the handle's own (a checkpoint thread) inside the library, and
	 * none starts until hold 0, which comes after the fork in both
	 * processes: a child must not inherit a lock such a thread held
	 * (SQLite's, the allocator's), which nothing would ever release.
	 * NULL: no threads of its own. */
	void (*fork_hold)(sfs_backend *b, int hold);
	int (*sync)(sfs_backend *b);
	int (*version)(sfs_backend *b, uint64_t *out);
	/* Group commit (store.c). After group_begin, a write that succeeds
	 * leaves its transaction open instead of committing it, and the
	 * writes after it join that transaction, each undoing only its own
	 * changes if it fails; group_end commits them all at once (SFS_OK
	 * when none left anything to commit) and ends the group. A write
	 * whose failure took the whole transaction with it makes group_end
	 * fail. Both may be NULL: each write commits on its own. A concurrent
	 * backend has neither (store.c). */
	void (*group_begin)(sfs_backend *b);
	int (*group_end)(sfs_backend *b);
	/* The open group holds a thread's writes that nobody waits on
	 * (sfs_store_hold): a write that would commit by itself (a
	 * one-statement delete) joins the group's transaction instead, until
	 * group_end. May be NULL. */
	void (*group_hold)(sfs_backend *b);
	/* Called at the end of every call on the handle, under its lock
	 * (may be NULL): memory the call left behind for speed only may be
	 * given back here. */
	void (*settle)(sfs_backend *b);

	/* Key/value. put_many gets n >= 1, or n == 0 with SFS_PUT_REPLACE. */
	int (*kv_put_many)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   const sfs_slice *keys, const sfs_slice *values,
	                   size_t n, unsigned flags);
	int (*kv_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	              sfs_slice key, sfs_buf *out);
	int (*kv_get_many)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   const sfs_slice *keys, size_t n, sfs_list *out);
	int (*kv_stat)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, sfs_stat *out);
	int (*kv_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key);
	/* mtime_ns in whole seconds already */
	int (*kv_set_mtime)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                    sfs_slice key, int64_t mtime_ns);
	/* Ranged access: edits are checked (ops, bytes, offsets within
	 * max_value); the final length is the backend's to check against
	 * max_value. */
	int (*kv_edit)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, const sfs_edit *edits, size_t n,
	               unsigned flags, uint64_t max_value, uint64_t *size);
	int (*kv_read)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, uint64_t off, size_t len, sfs_buf *out,
	               uint64_t *size);
	int (*kv_scan)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               const sfs_scan_opts *o, sfs_list *out);
	int (*kv_delete_range)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                       sfs_slice start, sfs_slice end, uint64_t *count);
	int (*kv_drain)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_list *out);
	int (*kv_rename)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
	                 sfs_slice to_key, unsigned flags);

	/* Directories. family is SFS_FAM_KV .. SFS_FAM_QUEUE; dir_list gets
	 * ns only with a scope, and never for queues; names: item.key is all
	 * the caller reads (sfs_dir_names), st may be left zero. */
	int (*dir_list)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                sfs_slice ns, sfs_slice after, long limit, int names,
	                sfs_list *out);
	int (*dir_exists)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_create)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_remove)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_rename)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
	                  unsigned flags);

	/* Counters. counter_get's mtime_ns is never NULL. */
	int (*counter_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t *value, int64_t *mtime_ns);
	int (*counter_add)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t delta, int64_t *value);
	/* excl: only when absent, else SFS_EXISTS (sfs_counter_create) */
	int (*counter_set)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t value, int excl);
	int (*counter_rename)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                      sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
	                      sfs_slice to_key, unsigned flags);
	int (*counter_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                      sfs_slice key);
	int (*counter_scan)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                    const sfs_scan_opts *o, sfs_list *out);

	/* Append-logs. In log_clear, ns and key may be SFS_NONE (key only
	 * when ns is). */
	int (*log_append)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                  sfs_slice key, sfs_slice value, int64_t *id);
	int (*log_scan)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_slice key, int64_t after_id, long limit,
	                int keys_only, sfs_list *out);
	int (*log_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, int64_t id, sfs_buf *out);
	int (*log_stat)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_slice key, int64_t id, sfs_stat *out);
	int (*log_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                  sfs_slice key, int64_t id);
	int (*log_clear)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key, uint64_t *count);

	/* Queues and their items. push gets n >= 1 items, pop max >= 1.
	 * item_clear never gets SFS_ITEM_INFLIGHT. */
	int (*queue_push)(sfs_backend *b, sfs_slice queue,
	                  const sfs_slice *items, size_t n, int64_t *first_id);
	int (*queue_pop)(sfs_backend *b, sfs_slice queue, long max,
	                 sfs_list *out);
	int (*item_count)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                  uint64_t *n);
	int (*item_scan)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                 int64_t after_id, long limit, int keys_only,
	                 sfs_list *out);
	int (*item_get)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                int64_t id, sfs_buf *out);
	int (*item_stat)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                 int64_t id, sfs_stat *out);
	int (*item_delete)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                   int64_t id);
	int (*item_clear)(sfs_backend *b, sfs_slice queue, sfs_item_state st,
	                  uint64_t *count);

	/* Claims (docs/claims.md). Leases are in ns (> 0). Every entry but
	 * claim_items and policy_get is a write transaction that starts with
	 * recovery of the queue (or scope, for kv_claim) concerned.
	 * claim_settle with ids == NULL settles every item of the claim with
	 * outcomes[0] (sfs_claim_end). items in claim may be NULL; count in
	 * kv_claim too. queue_gc with queue == SFS_NONE recovers every
	 * queue; with at_open it first checks, without the write lock,
	 * whether there is anything to do. */
	int (*claim)(sfs_backend *b, sfs_slice queue, long max,
	             int64_t lease_ns, int64_t *claim_id, sfs_list *items);
	int (*claim_item)(sfs_backend *b, sfs_slice queue, int64_t id,
	                  int64_t lease_ns, int64_t *claim_id);
	int (*kv_claim)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                int64_t lease_ns, int64_t *claim_id, uint64_t *count);
	int (*claim_items)(sfs_backend *b, int64_t claim_id, int64_t after_id,
	                   long limit, int keys_only, sfs_list *out);
	int (*claim_heartbeat)(sfs_backend *b, int64_t claim_id,
	                       int64_t lease_ns, int64_t *lease_until_ns);
	int (*claim_settle)(sfs_backend *b, int64_t claim_id,
	                    const int64_t *ids, const sfs_outcome *outcomes,
	                    size_t n);
	int (*item_settle)(sfs_backend *b, sfs_slice queue, int64_t id,
	                   sfs_outcome outcome);
	/* until_ns > 0: the lease ends then (SFS_INVALID when that is not
	 * after the store's now), lease_ns is ignored */
	int (*item_heartbeat)(sfs_backend *b, sfs_slice queue, int64_t id,
	                      int64_t lease_ns, int64_t until_ns);
	int (*item_requeue)(sfs_backend *b, sfs_slice queue, int64_t id,
	                    int64_t *new_id);
	int (*policy_set)(sfs_backend *b, sfs_slice queue,
	                  const sfs_queue_policy *p);
	int (*policy_get)(sfs_backend *b, sfs_slice queue,
	                  sfs_queue_policy *out);
	int (*queue_gc)(sfs_backend *b, sfs_slice queue, int at_open,
	                sfs_gc_stats *out);

	/* A delete failed with SFS_FULL: give back the space the store keeps
	 * in reserve for deletes (docs/engine.md, "A full disk"). SFS_OK when
	 * something was freed (try the delete again), SFS_FULL when nothing
	 * was left to give. NULL for a backend without files. */
	int (*free_reserve)(sfs_backend *b);

	/* Whole scopes and whole stores. info gets *out zeroed and fills all
	 * but path. import_rows reads rows with next until it returns
	 * SFS_NOTFOUND (any other status but SFS_OK aborts and is
	 * returned); next has checked each row it gives as statefs.h
	 * asks. */
	int (*exec_clear)(sfs_backend *b, sfs_slice scope, uint64_t *count);
	int (*checkpoint)(sfs_backend *b, const char *path,
	                  sfs_progress_fn progress, void *ctx);
	int (*restore)(sfs_backend *b, const char *path,
	               sfs_progress_fn progress, void *ctx);
	int (*info)(sfs_backend *b, sfs_info *out);
	/* Fills *out (zeroed) but info.path and info.backend; out->queues
	 * and out->scopes are the caller's to free (sfs_stats_free) also on
	 * failure. */
	int (*stats)(sfs_backend *b, sfs_stats *out);
	/* Writes the queue counts not written yet; nothing when none. */
	int (*flush_counts)(sfs_backend *b);
	int (*verify)(sfs_backend *b, sfs_progress_fn progress, void *ctx);
	int (*export_rows)(sfs_backend *b,
	                   int (*fn)(const sfs_row *row, void *ctx), void *ctx,
	                   sfs_progress_fn progress, void *pctx);
	int (*import_rows)(sfs_backend *b, int (*next)(sfs_row *row, void *ctx),
	                   void *ctx);
} sfs_backend_ops;

/* The backend that serves db (store.c): the first of the table whose
 * accepts() says yes. Never NULL. */
const sfs_backend_ops *be_for(const char *db);

/* The backends, one ops table each. */
extern const sfs_backend_ops pgb_ops;     /* core/pg/ */
extern const sfs_backend_ops sqlb_ops;    /* core/sqlite/ */

#endif /* STATEFS_BACKEND_I_H */
