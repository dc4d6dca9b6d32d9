/*
 * whole.c - operations on a whole scope or a whole PostgreSQL store:
 * execution clear, info, verify, checkpoint and restore.
 *
 * Checkpoint and restore work through export and import, and a
 * checkpoint of a PostgreSQL store is a SQLite store: sfs_checkpoint
 * exports the live store from one snapshot (REPEATABLE READ) into a new
 * SQLite file beside the target, under the same key (or in plaintext for
 * a plaintext store), fsyncs it and links it into place, as a SQLite
 * store's checkpoint is made; sfs_restore opens such a file (a checkpoint
 * of either backend), authenticates every page of it, and replaces every
 * row of the live store with its rows in ONE transaction, which every
 * other host sees as one commit; any failure rolls back to the untouched
 * live store. The id sequences only move forward (sfs_raise): an id
 * handed out after the checkpoint is never handed out again. So a
 * checkpoint is portable: it can be restored into a SQLite store too, or
 * opened and read as one.
 *
 * Verify reads every row from one snapshot and authenticates every
 * sealed value (what a server operator could have changed), then checks
 * what ties rows together: an item in one place only, every in-flight
 * item under a claim. SFS_CORRUPT names the first problem.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg_i.h"
#include "util_i.h"

int pgb_exec_clear(sfs_backend *b, sfs_slice scope, uint64_t *count)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	pgp_bytes(&p, scope);
	/* One statement: one commit, one exact count of the SDK's rows; the
	 * side tables go with them. */
	st = pgb_run_int(b, "WITH a AS (DELETE FROM function_state WHERE"
	        " scope_id = $1 RETURNING 1),"
	        " l AS (DELETE FROM function_state_log WHERE scope_id = $1"
	        " RETURNING id),"
	        " n AS (DELETE FROM function_counter WHERE scope_id = $1"
	        " RETURNING 1),"
	        " t1 AS (DELETE FROM statefs_kv_time WHERE scope_id = $1),"
	        " t2 AS (DELETE FROM statefs_counter_time WHERE scope_id = $1),"
	        " t3 AS (DELETE FROM statefs_log_time t USING l WHERE t.id = l.id),"
	        " d AS (DELETE FROM statefs_dir WHERE scope_id = $1"
	        " AND family IN (1, 2, 3))"
	        " SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM l)"
	        " + (SELECT count(*) FROM n)", &p, PGB_COMMIT, &n,
	        "clearing a scope");
	if (st == SFS_OK && count)
		*count = (uint64_t)n;
	return st;
}

/* --- info and verify ---------------------------------------------------------- */

int pgb_info_tx(pgc *c, sfs_info *out)
{
	sfs_backend *b = c->b;
	PGresult *r;
	sfs_info i;
	pgp p = PGP_INIT;
	int st;

	memset(&i, 0, sizeof(i));
	pgp_text(&p, b->schema);
	/* kv: with the entries a drain holds, as export shows them */
	st = pgb_exec(c, "SELECT (SELECT count(*) FROM function_state)"
	        " + (SELECT count(*) FROM statefs_kv_taken),"
	        " (SELECT count(*) FROM function_counter),"
	        " (SELECT count(*) FROM function_state_log),"
	        " (SELECT count(*) FROM work_queue),"
	        " (SELECT count(*) FROM statefs_inflight),"
	        " (SELECT count(*) FROM statefs_dead),"
	        " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)"
	        " ::bigint FROM pg_class c JOIN pg_namespace n"
	        " ON n.oid = c.relnamespace WHERE n.nspname = $1"
	        " AND c.relkind = 'r'),"
	        " current_setting('block_size')::bigint", &p, 0, &r,
	        "reading the store's size");
	if (st != SFS_OK)
		return st;
	i.kv_rows = (uint64_t)pgr_i64(r, 0, 0);
	i.counter_rows = (uint64_t)pgr_i64(r, 0, 1);
	i.log_rows = (uint64_t)pgr_i64(r, 0, 2);
	i.queue_rows = (uint64_t)pgr_i64(r, 0, 3);
	i.claimed_rows = (uint64_t)pgr_i64(r, 0, 4);
	i.dead_rows = (uint64_t)pgr_i64(r, 0, 5);
	i.size = (uint64_t)pgr_i64(r, 0, 6);
	/* PostgreSQL's own facts, by name, in their order */
	i.facts[0] = (sfs_info_fact){ "page_size",
	                              (uint64_t)pgr_i64(r, 0, 7) };
	i.facts[1] = (sfs_info_fact){ "relation_bytes", i.size };
	i.nfacts = 2;
	PQclear(r);
	i.schema_version = PGB_SCHEMA_VERSION;
	i.encrypted = b->keys != NULL;
	i.cipher = b->keys ? "xchacha20poly1305" : "none";
	i.crypt_format = b->keys ? 1 : 0;
	i.kdf = b->keys ? pgb_keys_kdf(b->keys) : "none";
	*out = i;
	return SFS_OK;
}

int pgb_info(sfs_backend *b, sfs_info *out)
{
	sfs_info i;
	pgc *c;
	int st;

	/* one statement: one snapshot */
	PGB_TRY(b, c, st, 0) {
		st = pgb_info_tx(c, &i);
	}
	if (st == SFS_OK)
		*out = i;
	return st;
}

static int no_row(const sfs_row *row, void *ctx)
{
	(void)row;
	(void)ctx;
	return 0;
}

int pgb_verify(sfs_backend *b, sfs_progress_fn progress, void *ctx)
{
	char problem[256] = "";
	pgc *c;
	int st = pgb_export(b, no_row, NULL, progress, ctx);

	if (st != SFS_OK)
		return st;
	PGB_TRY(b, c, st, 0) {
		PGresult *r;

		st = pgb_exec(c, "(SELECT 'item ' || id || ' is in more than one"
		        " of pending, in flight and dead' FROM (SELECT id FROM"
		        " work_queue UNION ALL SELECT id FROM statefs_inflight"
		        " UNION ALL SELECT id FROM statefs_dead) x GROUP BY id"
		        " HAVING count(*) > 1 LIMIT 1) UNION ALL (SELECT 'in-flight"
		        " item ' || i.id || ' has no claim' FROM statefs_inflight i"
		        " WHERE NOT EXISTS (SELECT 1 FROM statefs_claim c WHERE"
		        " c.claim_id = i.claim_id) LIMIT 1)", NULL, 0, &r,
		        "checking the store");
		if (st == SFS_OK) {
			if (PQntuples(r)) {
				sfs_slice m = pgr_bytes(r, 0, 0);

				snprintf(problem, sizeof(problem), "%.*s", (int)m.len,
				         (const char *)m.ptr);
			}
			PQclear(r);
		}
	}
	if (st == SFS_OK && *problem)
		return sfs_err(SFS_CORRUPT, "%s: %s", b->display, problem);
	return st;
}

/* --- checkpoint --------------------------------------------------------------- */

/* Opens a SQLite store with the PostgreSQL store's key (or in plaintext). */
static int open_sqlite(sfs_backend *b, const char *path, unsigned flags,
                       sfs_store **out)
{
	sfs_config o;

	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = flags | SFS_OPEN_NORECOVER | (b->key ? 0 : SFS_OPEN_PLAINTEXT);
	o.key = b->key;
	o.busy_timeout_ms = b->busy_ms;
	/* A value of any size the live store holds fits. */
	o.max_value = UINT64_MAX >> 1;
	return sfs_store_open(&o, out, NULL);
}

/* The checkpoint is the export of this store imported into a new SQLite
 * store: sfs_export gives rows to a callback, sfs_import asks for them.
 * The export runs in a thread of its own and hands each row over while
 * its callback waits, so a row's bytes stay valid until the import has
 * taken them; either side's failure stops the other. The caller's
 * progress callback is handed over the same way and runs on the calling
 * thread (statefs.h: callbacks run on the calling thread), inside the
 * import's wait for the next row; the export waits for its answer. */
typedef struct handoff {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	sfs_backend *b;
	sfs_progress_fn progress;
	void *pctx;
	const sfs_row *row;      /* offered, not yet taken */
	int taken;               /* the import has copied *row */
	int holding;             /* the import has a row it has not finished */
	int done;                /* the export returned */
	int stop;                /* the import gave up */
	int status;              /* the export's */
	int asked;               /* the export asks for a progress call */
	uint64_t p_done, p_total; /* its arguments */
	int cancel;              /* the caller's answer: cancel */
	char detail[512];
} handoff;

/* The export's progress, relayed to the calling thread (take_row). */
static int relay_progress(uint64_t done, uint64_t total, void *ctx)
{
	handoff *h = ctx;
	int cancel;

	pthread_mutex_lock(&h->mu);
	h->asked = !h->stop;
	h->p_done = done;
	h->p_total = total;
	pthread_cond_broadcast(&h->cond);
	while (h->asked && !h->stop)
		pthread_cond_wait(&h->cond, &h->mu);
	cancel = h->asked || h->stop || h->cancel;
	h->asked = 0;
	pthread_mutex_unlock(&h->mu);
	return cancel;
}

static int offer_row(const sfs_row *row, void *ctx)
{
	handoff *h = ctx;
	int st;

	pthread_mutex_lock(&h->mu);
	h->row = row;
	h->taken = 0;
	pthread_cond_broadcast(&h->cond);
	while (!h->taken && !h->stop)
		pthread_cond_wait(&h->cond, &h->mu);
	st = h->stop ? SFS_CANCELLED : SFS_OK;
	h->row = NULL;
	pthread_mutex_unlock(&h->mu);
	return st;
}

static void *export_thread(void *arg)
{
	handoff *h = arg;
	int st = pgb_export(h->b, offer_row, h,
	                    h->progress ? relay_progress : NULL, h);

	pthread_mutex_lock(&h->mu);
	h->status = st;
	if (st != SFS_OK)
		snprintf(h->detail, sizeof(h->detail), "%s", sfs_errdetail());
	h->done = 1;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* sfs_import's source: the row the export offers (the previous one is
 * released first), SFS_NOTFOUND once the export is done. */
static int take_row(sfs_row *row, void *ctx)
{
	handoff *h = ctx;
	int st;

	pthread_mutex_lock(&h->mu);
	/* The row this side took last time is imported now. Not "the row on
	 * offer": on the first call, the export may already have offered its
	 * first row, which is not imported yet. */
	if (h->holding) {
		h->holding = 0;
		h->taken = 1;
		pthread_cond_broadcast(&h->cond);
	}
	for (;;) {
		if (h->asked) { /* the export's progress: the caller's thread */
			uint64_t done = h->p_done, total = h->p_total;
			int cancel;

			pthread_mutex_unlock(&h->mu);
			cancel = h->progress(done, total, h->pctx) != 0;
			pthread_mutex_lock(&h->mu);
			h->cancel = cancel;
			h->asked = 0;
			pthread_cond_broadcast(&h->cond);
			continue;
		}
		if ((h->row && !h->taken) || h->done)
			break;
		pthread_cond_wait(&h->cond, &h->mu);
	}
	if (h->row && !h->taken) {
		*row = *h->row;
		h->holding = 1;
		st = SFS_OK;
	} else {
		st = h->status == SFS_OK ? SFS_NOTFOUND
		     : sfs_err(h->status, "%s", h->detail);
	}
	pthread_mutex_unlock(&h->mu);
	return st;
}

static int export_into(sfs_backend *b, sfs_store *ck,
                       sfs_progress_fn progress, void *pctx)
{
	handoff h;
	pthread_t t;
	int st;

	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.mu, NULL);
	pthread_cond_init(&h.cond, NULL);
	h.b = b;
	h.progress = progress;
	h.pctx = pctx;
	if (pthread_create(&t, NULL, export_thread, &h) != 0) {
		st = sfs_err(SFS_NOMEM, "starting the export");
	} else {
		st = sfs_import(ck, take_row, &h);
		pthread_mutex_lock(&h.mu);
		h.stop = 1; /* an import that failed ends the export */
		pthread_cond_broadcast(&h.cond);
		pthread_mutex_unlock(&h.mu);
		pthread_join(t, NULL);
		if (st == SFS_OK && h.status != SFS_OK)
			st = sfs_err(h.status, "%s", h.detail);
	}
	pthread_cond_destroy(&h.cond);
	pthread_mutex_destroy(&h.mu);
	return st;
}

static void unlink_store(const char *path)
{
	char aux[4200];

	unlink(path);
	snprintf(aux, sizeof(aux), "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof(aux), "%s-shm", path);
	unlink(aux);
	snprintf(aux, sizeof(aux), "%s-reserve", path); /* sqlb_store.c */
	unlink(aux);
}

int pgb_checkpoint(sfs_backend *b, const char *path, sfs_progress_fn progress,
                   void *ctx)
{
	sfs_store *ck = NULL;
	struct stat sb;
	char *tmp;
	int st;

	if (stat(path, &sb) == 0)
		return sfs_err(SFS_EXISTS, "%s exists", path);
	if (errno != ENOENT)
		return sfs_err(SFS_IO, "stat %s: %s", path, strerror(errno));
	tmp = util_tmp_beside(path, ".statefs-ckpt-");
	if (!tmp)
		return sfs_err(SFS_NOMEM, "naming a temporary file");
	st = open_sqlite(b, tmp, SFS_OPEN_CREATE | SFS_OPEN_EXCL, &ck);
	if (st == SFS_OK)
		st = export_into(b, ck, progress, ctx);
	sfs_store_close(ck); /* the WAL goes into the file */
	if (st == SFS_OK)
		st = util_fsync_file(tmp);
	/* link() fails if path appeared meanwhile: never replace a file. */
	if (st == SFS_OK && link(tmp, path) != 0)
		st = errno == EEXIST ? sfs_err(SFS_EXISTS, "%s exists", path)
		   : sfs_err(errno == ENOSPC ? SFS_FULL : SFS_IO, "link %s: %s",
		             path, strerror(errno));
	if (st == SFS_OK)
		st = util_fsync_parent(path);
	unlink_store(tmp);
	free(tmp);
	return st;
}

/* --- restore ------------------------------------------------------------------ */

typedef struct restore_ctx {
	pgb_imp imp;
} restore_ctx;

static int from_checkpoint(const sfs_row *row, void *ctx)
{
	restore_ctx *x = ctx;

	return pgb_import_one(&x->imp, row);
}

static int restore_body(pgc *c, sfs_store *ck, sfs_progress_fn progress,
                        void *pctx)
{
	restore_ctx x;
	int st = pgb_begin(c);

	memset(&x, 0, sizeof(x));
	x.imp.c = c;
	/* Every row goes; the checkpoint's rows come. statefs_meta stays
	 * (the live store's version and key check). */
	if (st == SFS_OK)
		st = pgb_exec_text(c, "DELETE FROM function_state;"
		        " DELETE FROM function_counter; DELETE FROM function_state_log;"
		        " DELETE FROM work_queue; DELETE FROM statefs_kv_time;"
		        " DELETE FROM statefs_counter_time; DELETE FROM"
		        " statefs_log_time; DELETE FROM statefs_queue_item;"
		        " DELETE FROM statefs_claim; DELETE FROM statefs_kv_taken;"
		        " DELETE FROM statefs_inflight;"
		        " DELETE FROM statefs_dead; DELETE FROM statefs_queue_policy;"
		        " DELETE FROM statefs_dir", 0, "restoring");
	if (st == SFS_OK)
		st = sfs_export(ck, from_checkpoint, &x, progress, pctx);
	if (st == SFS_OK)
		st = pgb_import_finish(&x.imp);
	/* Rows may have gone to a callback: a failure is final. */
	c->transient = 0;
	return st == SFS_OK ? pgb_commit(c) : st;
}

int pgb_restore(sfs_backend *b, const char *path, sfs_progress_fn progress,
                void *ctx)
{
	sfs_store *ck = NULL;
	struct stat sb;
	pgc *c;
	int st;

	if (stat(path, &sb) != 0)
		return sfs_err(errno == ENOENT ? SFS_NOTFOUND : SFS_IO, "%s: %s",
		               path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return sfs_err(SFS_FORMAT, "%s is not a regular file", path);
	if (progress && progress(0, 1, ctx))
		return sfs_err(SFS_CANCELLED, "cancelled by the caller");
	/* A wrong key, a damaged page or a file that is not a store fails
	 * here, before anything changes. */
	st = open_sqlite(b, path, SFS_OPEN_READONLY, &ck);
	if (st == SFS_FORMAT || st == SFS_NOTFOUND)
		st = sfs_err(SFS_FORMAT, "%s is not a statefs checkpoint: %s",
		             path, sfs_errdetail());
	if (st == SFS_OK)
		st = sfs_store_verify(ck, NULL, NULL);
	if (st == SFS_OK) {
		PGB_TRY(b, c, st, 0) {
			st = restore_body(c, ck, progress, ctx);
		}
	}
	sfs_store_close(ck);
	if (st == SFS_OK)
		pgb_committed(b);
	return st;
}
