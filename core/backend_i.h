/*
 * backend_i.h - the seam between the public API and a storage backend
 * (private).
 *
 * The public functions (api_*.c, store.c) check arguments, take the handle's
 * lock and call one entry of an ops table; a backend implements the table
 * over its database. There are two: SQLite (sqlb_*.c), and PostgreSQL
 * (core/pg/pgb_*.c) for stores shared by several hosts; store.c chooses by
 * the store's name. Nothing above core/ knows which one runs.
 *
 * Contract for every entry, on top of statefs.h's conventions:
 *  - Arguments are already valid: required slices have ptr != NULL and sizes
 *    are within limits; ns == SFS_NONE only where the entry says so; scan
 *    options are never NULL; family is never SFS_FAM_DIR.
 *  - Calls on one backend are serialised by the caller (sfs_store.mu); a
 *    backend needs no lock of its own for its connection, unless it sets
 *    `concurrent` and guards its own state.
 *  - The backend sets the error detail (sfs_err) on failure and writes
 *    outputs only on SFS_OK.
 *  - Every write is atomic across processes: a single write statement or a
 *    transaction that takes the write lock first.
 */
#ifndef STATEFS_BACKEND_I_H
#define STATEFS_BACKEND_I_H

#include "statefs.h"

typedef struct sfs_backend sfs_backend;   /* defined by each backend */
typedef struct sfs_import_be sfs_import_be; /* a backend's import state */

typedef struct sfs_backend_ops {
	const char *name;
	/* 1: the backend serialises what it must itself, and the caller
	 * takes no lock around its calls (threads of one handle run at once:
	 * PostgreSQL, one connection per call from a pool). */
	int concurrent;

	/* Lifecycle (open is the backend's own function, see store.c). */
	void (*close)(sfs_backend *b);
	int (*sync)(sfs_backend *b);
	int (*version)(sfs_backend *b, uint64_t *out);
	/* Called at the end of every call on the handle, under its lock
	 * (may be NULL): memory the call left behind for speed only may be
	 * given back here. */
	void (*settle)(sfs_backend *b);

	/* Key/value (function_state). put_many writes n >= 1 pairs in one
	 * transaction; get_many fills a list parallel to keys (item.key = the
	 * key, value.ptr == NULL when absent). */
	int (*kv_put_many)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   const sfs_slice *keys, const sfs_slice *values,
	                   size_t n);
	int (*kv_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	              sfs_slice key, sfs_buf *out);
	int (*kv_get_many)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   const sfs_slice *keys, size_t n, sfs_list *out);
	int (*kv_stat)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, uint64_t *size, int64_t *mtime_ns);
	int (*kv_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key);
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
	int (*kv_restore)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                  const sfs_slice *keys, const sfs_slice *values,
	                  size_t n);
	int (*kv_rename)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
	                 sfs_slice to_key, unsigned flags);

	/* Directories. ns == SFS_NONE means the scope itself. */
	int (*scope_list)(sfs_backend *b, sfs_family fam, sfs_slice after,
	                  long limit, sfs_list *out);
	int (*ns_list)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	               sfs_slice after, long limit, sfs_list *out);
	int (*dir_exists)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_create)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_remove)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns);
	int (*dir_rename)(sfs_backend *b, sfs_family fam, sfs_slice scope,
	                  sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
	                  unsigned flags);

	/* Counters (function_counter). */
	int (*counter_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t *value, int *exists);
	int (*counter_add)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t delta, int64_t *value);
	int (*counter_set)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                   sfs_slice key, int64_t value);
	int (*counter_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                      sfs_slice key);
	int (*counter_scan)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                    const sfs_scan_opts *o, sfs_list *out);

	/* Append-logs (function_state_log). In log_clear, ns and key may be
	 * SFS_NONE (key only when ns is). after in log_keys may be SFS_NONE. */
	int (*log_append)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                  sfs_slice key, sfs_slice value, int64_t *id);
	int (*log_scan)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_slice key, int64_t after_id, long limit,
	                int keys_only, sfs_list *out);
	int (*log_get)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	               sfs_slice key, int64_t id, sfs_buf *out);
	int (*log_stat)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_slice key, int64_t id, uint64_t *size,
	                int64_t *mtime_ns);
	int (*log_keys)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                sfs_slice after, long limit, sfs_list *out);
	int (*log_delete)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                  sfs_slice key, int64_t id);
	int (*log_clear)(sfs_backend *b, sfs_slice scope, sfs_slice ns,
	                 sfs_slice key, uint64_t *count);

	/* Work queues (work_queue). push gets n >= 1 items. */
	int (*queue_push)(sfs_backend *b, sfs_slice queue,
	                  const sfs_slice *items, size_t n, int64_t *first_id);
	int (*queue_pop)(sfs_backend *b, sfs_slice queue, sfs_buf *item,
	                 int64_t *id);
	int (*queue_drain)(sfs_backend *b, sfs_slice queue, sfs_list *out);
	int (*queue_scan)(sfs_backend *b, sfs_slice queue, int64_t after_id,
	                  long limit, int keys_only, sfs_list *out);
	int (*queue_peek)(sfs_backend *b, sfs_slice queue, int64_t id,
	                  sfs_buf *item);
	int (*queue_stat)(sfs_backend *b, sfs_slice queue, int64_t id,
	                  uint64_t *size, int64_t *mtime_ns);
	int (*queue_delete)(sfs_backend *b, sfs_slice queue, int64_t id);
	int (*queue_clear)(sfs_backend *b, sfs_slice queue, uint64_t *count);
	int (*queue_len)(sfs_backend *b, sfs_slice queue, uint64_t *len);

	/* Claims (docs/claims.md). Leases are in ns (> 0). Every entry but
	 * the scans, peeks, stats, claim_items and policy_get is a write
	 * transaction that
	 * starts with recovery of the queue concerned. claim_settle with
	 * ids == NULL settles every item of the claim with outcomes[0]
	 * (ack, nack). items in claim may be NULL. queue_gc with queue ==
	 * SFS_NONE recovers every queue; with at_open it first checks,
	 * without the write lock, whether there is anything to do. */
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
	int (*inflight_settle)(sfs_backend *b, sfs_slice queue, int64_t id,
	                       sfs_outcome outcome);
	int (*inflight_heartbeat)(sfs_backend *b, sfs_slice queue, int64_t id,
	                          int64_t lease_ns);
	int (*inflight_scan)(sfs_backend *b, sfs_slice queue, int64_t after_id,
	                     long limit, int keys_only, sfs_list *out);
	int (*inflight_peek)(sfs_backend *b, sfs_slice queue, int64_t id,
	                     sfs_buf *item);
	int (*inflight_stat)(sfs_backend *b, sfs_slice queue, int64_t id,
	                     sfs_claim_info *out);
	int (*dead_scan)(sfs_backend *b, sfs_slice queue, int64_t after_id,
	                 long limit, int keys_only, sfs_list *out);
	int (*dead_peek)(sfs_backend *b, sfs_slice queue, int64_t id,
	                 sfs_buf *item);
	int (*dead_stat)(sfs_backend *b, sfs_slice queue, int64_t id,
	                 uint64_t *size, int64_t *mtime_ns);
	int (*dead_requeue)(sfs_backend *b, sfs_slice queue, int64_t id,
	                    int64_t *new_id);
	int (*dead_delete)(sfs_backend *b, sfs_slice queue, int64_t id);
	int (*dead_clear)(sfs_backend *b, sfs_slice queue, uint64_t *count);
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

	/* Whole scopes and whole stores. */
	int (*exec_clear)(sfs_backend *b, sfs_slice scope, uint64_t *count);
	int (*checkpoint)(sfs_backend *b, const char *path,
	                  sfs_progress_fn progress, void *ctx);
	int (*restore)(sfs_backend *b, const char *path,
	               sfs_progress_fn progress, void *ctx);
	int (*info)(sfs_backend *b, sfs_info *out);
	/* Fills *out but info.path; out->queues and out->scopes are the
	 * caller's to free (sfs_stats_free) also on failure. */
	int (*stats)(sfs_backend *b, sfs_stats *out);
	int (*verify)(sfs_backend *b, sfs_progress_fn progress, void *ctx);
	int (*export_rows)(sfs_backend *b,
	                   int (*fn)(const sfs_row *row, void *ctx), void *ctx,
	                   sfs_progress_fn progress, void *pctx);
	int (*import_begin)(sfs_backend *b, sfs_import_be **out);
	int (*import_row)(sfs_import_be *imp, const sfs_row *row);
	int (*import_commit)(sfs_import_be *imp);  /* frees imp */
	void (*import_abort)(sfs_import_be *imp);  /* frees imp */
} sfs_backend_ops;

/* What a backend's open gets: the public options, checked and defaulted. */
typedef struct sfs_backend_cfg {
	const char *path;          /* never NULL: the default path is resolved */
	unsigned flags;            /* SFS_OPEN_* */
	const sfs_key *key;        /* NULL for plaintext and memory stores */
	int busy_timeout_ms;       /* > 0 */
	uint64_t max_value;        /* > 0 */
} sfs_backend_cfg;

/* The SQLite backend (sqlb_store.c). */
extern const sfs_backend_ops sqlb_ops;
int sqlb_open(const sfs_backend_cfg *cfg, sfs_backend **out);

/* The PostgreSQL backend (core/pg/, docs/postgres.md). pgb_is_db: whether
 * a store name is a PostgreSQL connection string (a postgresql:// or
 * postgres:// URI, or key=value starting with a libpq keyword); anything
 * else is a SQLite path. pgb_display: the store's name without any
 * password. pgb_probe: SFS_OK when the store exists (*encrypted says
 * how), SFS_NOTFOUND when not. pgb_db_has_password: whether the string
 * itself holds a password. pgb_name: the string without any password
 * (malloc'd), as pgb_display gives it for an open store. */
extern const sfs_backend_ops pgb_ops;
int pgb_open(const sfs_backend_cfg *cfg, sfs_backend **out);
int pgb_is_db(const char *db);
const char *pgb_display(const sfs_backend *b);
int pgb_probe(const char *db, int *encrypted);
int pgb_db_has_password(const char *db, int *has);
int pgb_name(const char *db, char **out);

#endif /* STATEFS_BACKEND_I_H */
