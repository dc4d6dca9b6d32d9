/*
 * seq.c - append-logs (function_state_log) and work queues
 * (work_queue) on PostgreSQL: the families whose rows carry ids.
 *
 * Ids come from the tables' identity sequences: strictly increasing
 * across every scope and queue, never reused. A sequence hands out an id
 * when it is asked, not when its transaction commits, so two appends can
 * commit out of id order; a reader that pages through a log by "after id
 * X" would then miss the entry that committed second with the smaller id.
 * Appends to one log are therefore serialised: an append takes a
 * transaction-scoped advisory lock of its (scope, ns, key) before it asks
 * for an id, and the lock goes only after the commit has made the entry
 * visible. Ids of one log become visible in id order; appends to other
 * logs do not wait. (A VGI SDK worker appending directly takes no lock:
 * its entries are ordered as the SDK orders them.)
 *
 * Pushes to one queue take the queue's lock the same way: pop and claim
 * need no such order (they take the oldest *visible* item, FIFO among
 * committed items, with FOR UPDATE SKIP LOCKED, so consumers on any host
 * never take one item twice and never wait for each other; an item
 * skipped because another transaction holds it is taken by that
 * transaction or, if it rolls back, by the next call), but a queue's
 * follower pages by id and missed items another host pushed at the same
 * time. The pushes' commits were serialised already (a push notifies, and
 * notifying commits take one lock in turn); the lock adds the insert to
 * what waits. A retry and a requeue give an item a new id at the tail,
 * and take the same lock (claim.c).
 *
 * In an encrypted store an entry's or item's id is part of what its seal
 * binds, so it is asked for first and the value sealed before the insert:
 * one more round trip than in a plaintext store, where the id is taken
 * inside the insert.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_i.h"
#include "sql_i.h"

#define KEYEQ PGB_KEYEQ

static void key3(pgp *p, sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	pgp_bytes(p, scope);
	pgp_bytes(p, ns);
	pgp_bytes(p, key);
}

/* --- logs ------------------------------------------------------------------- */

typedef struct logkey {
	sfs_slice scope, ns, key;
} logkey;

static void log_row_ad(const PGresult *r, int row, void *ctx, pgb_ad *ad)
{
	logkey *k = ctx;

	*ad = (pgb_ad){ PGB_AD_LOG, k->scope, k->ns, k->key, pgr_i64(r, row, 0) };
}

static int append_plain(pgc *c, sfs_slice scope, sfs_slice ns, sfs_slice key,
                        sfs_slice value, int64_t *id)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	key3(&p, scope, ns, key);
	pgp_bytes(&p, value);
	pgp_i64(&p, pgb_log_lock_key(c->b, scope, ns, key));
	pgp_clock(&p);
	st = pgb_exec(c, PGB_SQL_APPEND, &p, PGB_COMMIT, &r, "appending");
	if (st != SFS_OK)
		return st;
	*id = pgr_i64(r, 0, 0);
	PQclear(r);
	return SFS_OK;
}

static int append_sealed(pgc *c, sfs_slice scope, sfs_slice ns,
                         sfs_slice key, sfs_slice value, int64_t *id)
{
	PGresult *r;
	pgp p = PGP_INIT;
	pgb_ad ad = { PGB_AD_LOG, scope, ns, key, 0 };
	sfs_slice sealed;
	void *owned = NULL;
	int st = pgb_begin(c);

	pgp_i64(&p, pgb_log_lock_key(c->b, scope, ns, key));
	if (st == SFS_OK)
		st = pgb_exec(c, PGB_SQL_APPEND_ID, &p, 0, &r, "appending");
	if (st != SFS_OK)
		return st;
	ad.id = pgr_i64(r, 0, 0);
	PQclear(r);
	st = pgb_seal(c->b, &ad, value, &sealed, &owned);
	if (st != SFS_OK)
		return st;
	memset(&p, 0, sizeof(p));
	key3(&p, scope, ns, key);
	pgp_bytes(&p, sealed);
	pgp_i64(&p, ad.id);
	pgp_clock(&p);
	st = pgb_exec(c, PGB_SQL_APPEND_SEALED, &p, 0, NULL, "appending");
	free(owned);
	if (st == SFS_OK)
		st = pgb_commit(c);
	if (st == SFS_OK)
		*id = ad.id;
	return st;
}

int pgb_log_append(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice value, int64_t *id)
{
	int64_t v = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = b->keys ? append_sealed(c, scope, ns, key, value, &v)
		             : append_plain(c, scope, ns, key, value, &v);
	}
	if (st == SFS_OK) {
		pgb_committed(b);
		if (id)
			*id = v;
	}
	return st;
}

int pgb_log_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice key, int64_t after_id, long limit, int keys_only,
                 sfs_list *out)
{
	logkey k = { scope, ns, key };
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, after_id);
		if (limit > 0)
			pgp_i64(&p, limit);
		else
			pgp_null_i64(&p);
		st = pgb_exec(c, keys_only ?
		        "SELECT l.id, NULL::bytea, sfs_len(l.value),"
		        " coalesce(t.mtime_ns, 0) FROM function_state_log l"
		        " LEFT JOIN statefs_log_time t ON t.id = l.id"
		        " WHERE l.scope_id = $1 AND l.ns = $2 AND l.key = $3"
		        " AND l.id > $4 ORDER BY l.id LIMIT $5" :
		        "SELECT l.id, l.value, sfs_len(l.value),"
		        " coalesce(t.mtime_ns, 0) FROM function_state_log l"
		        " LEFT JOIN statefs_log_time t ON t.id = l.id"
		        " WHERE l.scope_id = $1 AND l.ns = $2 AND l.key = $3"
		        " AND l.id > $4 ORDER BY l.id LIMIT $5", &p, 0, &r,
		        "reading entries");
		if (st == SFS_OK) {
			st = pgb_rows(b, r, log_row_ad, &k, &l);
			PQclear(r);
		}
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

int pgb_log_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                int64_t id, sfs_buf *out)
{
	pgb_ad ad = { PGB_AD_LOG, scope, ns, key, id };
	sfs_buf v = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, id);
		st = pgb_exec_value(c, "SELECT value FROM function_state_log WHERE"
		                    " id = $4 AND " KEYEQ, &p, &ad, &v,
		                    "reading a log entry");
	}
	if (st == SFS_OK)
		*out = v;
	return st;
}

#define LOG_STAT                                                           \
	"SELECT sfs_len(l.value), coalesce(t.mtime_ns, 0) FROM"             \
	" function_state_log l LEFT JOIN statefs_log_time t ON t.id = l.id"  \
	" WHERE l.id = $4 AND l.scope_id = $1 AND l.ns = $2 AND l.key = $3"

int pgb_log_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice key, int64_t id, sfs_stat *out)
{
	uint64_t sz = 0;
	int64_t mt = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, id);
		st = pgb_exec_stat(c, LOG_STAT, &p, &sz, &mt,
		                   "reading an entry's size");
	}
	if (st == SFS_OK) {
		memset(out, 0, sizeof(*out));
		out->size = sz;
		out->mtime_ns = mt;
	}
	return st;
}

int pgb_log_keys(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice after, long limit, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		pgp_bytes(&p, scope);
		pgp_bytes(&p, ns);
		if (after.ptr)
			pgp_bytes(&p, after);
		st = pgb_walk(c, after.ptr ?
		        "(SELECT key FROM function_state_log WHERE scope_id = $1"
		        " AND ns = $2 AND key > $3 ORDER BY key LIMIT 1)" :
		        "(SELECT key FROM function_state_log WHERE scope_id = $1"
		        " AND ns = $2 ORDER BY key LIMIT 1)",
		        "(SELECT key FROM function_state_log WHERE scope_id = $1"
		        " AND ns = $2 AND key > s.v ORDER BY key LIMIT 1)", &p, limit,
		        &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

int pgb_log_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, int64_t id)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	key3(&p, scope, ns, key);
	pgp_i64(&p, id);
	st = pgb_run_int(b, "WITH d AS (DELETE FROM function_state_log"
	                 " WHERE id = $4 AND " KEYEQ " RETURNING id),"
	                 " t AS (DELETE FROM statefs_log_time t USING d"
	                 " WHERE t.id = d.id) SELECT count(*) FROM d", &p,
	                 PGB_COMMIT, &n, "deleting a log entry");
	return st != SFS_OK ? st : n ? SFS_OK : SFS_NOTFOUND;
}

int pgb_log_clear(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, uint64_t *count)
{
	static const char *const where[3] = {
		"scope_id = $1", "scope_id = $1 AND ns = $2",
		"scope_id = $1 AND ns = $2 AND key = $3",
	};
	int v = !ns.ptr ? 0 : !key.ptr ? 1 : 2;
	char sql[256];
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	snprintf(sql, sizeof(sql), "WITH d AS (DELETE FROM function_state_log"
	         " WHERE %s RETURNING id), t AS (DELETE FROM statefs_log_time t"
	         " USING d WHERE t.id = d.id) SELECT count(*) FROM d", where[v]);
	pgp_bytes(&p, scope);
	if (v >= 1)
		pgp_bytes(&p, ns);
	if (v == 2)
		pgp_bytes(&p, key);
	st = pgb_run_int(b, sql, &p, PGB_COMMIT, &n, "clearing a log");
	if (st == SFS_OK && count)
		*count = (uint64_t)n;
	return st;
}

/* --- queues ----------------------------------------------------------------- */

int pgb_item_ids(pgc *c, size_t n, const int64_t *lock, int64_t *first)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	pgp_i64(&p, (int64_t)n);
	if (lock)
		pgp_i64(&p, *lock);
	st = pgb_exec(c, lock ? PGB_SQL_PUSH_IDS : PGB_SQL_ITEM_IDS, &p, 0, &r,
	              "taking item ids");
	if (st != SFS_OK)
		return st;
	*first = pgr_i64(r, 0, 0);
	PQclear(r);
	return SFS_OK;
}

static int push_body(pgc *c, sfs_slice queue, const sfs_slice *items,
                     size_t n, int64_t *first)
{
	sfs_slice *sealed = NULL;
	void **owned = NULL;
	int64_t *ids = NULL, f = 0;
	int64_t lock = pgb_queue_lock_key(c->b, queue);
	PGresult *r;
	pgp p = PGP_INIT;
	int st = SFS_OK;

	pgp_bytes(&p, queue);
	if (c->b->keys) {
		/* The ids first, under the queue's lock, in the push's
		 * transaction: each seal binds its item's id. */
		sealed = calloc(n, sizeof(*sealed));
		owned = calloc(n, sizeof(*owned));
		ids = calloc(n, sizeof(*ids));
		st = sealed && owned && ids ? pgb_begin(c)
		     : sfs_err(SFS_NOMEM, "pushing");
		if (st == SFS_OK)
			st = pgb_item_ids(c, n, &lock, &f);
		for (size_t i = 0; i < n && st == SFS_OK; i++) {
			pgb_ad ad = { PGB_AD_QUEUE, queue, SFS_NONE, SFS_NONE,
			              f + (int64_t)i };

			ids[i] = ad.id;
			st = pgb_seal(c->b, &ad, items[i], &sealed[i], &owned[i]);
		}
		if (st == SFS_OK)
			st = pgp_i64_array(&p, ids, NULL, n);
		if (st == SFS_OK)
			st = pgp_bytes_array(&p, sealed, n);
	} else {
		st = pgp_i64_array(&p, NULL, NULL, 0); /* none: taken inside */
		if (st == SFS_OK)
			st = pgp_bytes_array(&p, items, n);
	}
	pgp_clock(&p);
	pgp_i64(&p, lock);
	if (st == SFS_OK)
		st = pgb_exec(c, PGB_SQL_PUSH, &p, c->b->keys ? 0 : PGB_COMMIT,
		              &r, "pushing");
	if (st == SFS_OK) {
		*first = pgr_i64(r, 0, 0);
		PQclear(r);
	}
	if (st == SFS_OK && c->b->keys)
		st = pgb_commit(c);
	pgp_free(&p);
	for (size_t i = 0; owned && i < n; i++)
		free(owned[i]);
	free(owned);
	free(sealed);
	free(ids);
	return st;
}

int pgb_queue_push(sfs_backend *b, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id)
{
	int64_t f = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = push_body(c, queue, items, n, &f);
	}
	if (st == SFS_OK) {
		pgb_committed(b);
		pgb_qstat_note(b, queue, n, 0);
		if (first_id)
			*first_id = f;
	}
	return st;
}

static void queue_row_ad(const PGresult *r, int row, void *ctx, pgb_ad *ad)
{
	*ad = (pgb_ad){ PGB_AD_QUEUE, *(sfs_slice *)ctx, SFS_NONE, SFS_NONE,
	                pgr_i64(r, row, 0) };
}

/* Puts taken items back as they were (their enqueue time and delivery
 * count in columns 3 and 6 of r) after one of them did not open: a
 * damaged item is reported, never dropped. */
static void put_back(pgc *c, sfs_slice queue, const PGresult *r)
{
	char detail[512];

	snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
	for (int i = 0; i < PQntuples(r); i++) {
		pgp p = PGP_INIT;

		pgp_i64(&p, pgr_i64(r, i, 0));
		pgp_bytes(&p, queue);
		pgp_bytes(&p, pgr_bytes(r, i, 1));
		pgp_i64(&p, pgr_i64(r, i, 3));
		pgp_i64(&p, pgr_i64(r, i, 6));
		pgb_exec(c, "WITH t AS (INSERT INTO statefs_queue_item (id,"
		         " enqueued_ns, deliveries) VALUES ($1, $4, $5)"
		         " ON CONFLICT DO NOTHING) INSERT INTO work_queue (id,"
		         " execution_id, work_item) VALUES ($1, $2, $3)"
		         " ON CONFLICT DO NOTHING", &p, 0, NULL,
		         "putting items back");
	}
	sfs_err(SFS_CORRUPT, "%s; it stays in the queue", detail);
}

/* Takes up to max items from the head (all of them with LONG_MAX) in one
 * statement: the items another transaction holds are skipped by a pop of
 * some, waited for by a pop of all. */
static int pop_body(pgc *c, sfs_slice queue, long max, sfs_list *out)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	pgp_bytes(&p, queue);
	if (max == LONG_MAX) {
		st = pgb_exec(c, "WITH d AS (DELETE FROM work_queue WHERE"
		              " execution_id = $1 RETURNING id, work_item),"
		              PGB_SQL_TAKE_ITEMS PGB_SQL_TAKEN_COLS " ORDER BY d.id",
		              &p, PGB_COMMIT, &r, "draining");
	} else {
		pgp_i64(&p, max);
		st = pgb_exec(c, PGB_SQL_POP, &p, PGB_COMMIT, &r, "popping");
	}
	if (st != SFS_OK)
		return st;
	st = pgb_rows(c->b, r, queue_row_ad, &queue, out);
	if (st == SFS_CORRUPT)
		put_back(c, queue, r);
	PQclear(r);
	return st;
}

int pgb_queue_pop(sfs_backend *b, sfs_slice queue, long max, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = pop_body(c, queue, max, &l);
	}
	if (st != SFS_OK)
		return st;
	if (l.n == 0) {
		sfs_list_free(&l);
		return SFS_NOTFOUND;
	}
	/* Taken items show no delivery count, as in a SQLite store, and a
	 * pop of one no time (sfs_queue_pop). */
	for (size_t i = 0; i < l.n; i++) {
		l.items[i].st.deliveries = 0;
		if (max == 1)
			l.items[i].st.mtime_ns = 0;
	}
	pgb_committed(b);
	pgb_qstat_note(b, queue, 0, l.n);
	*out = l;
	return SFS_OK;
}

int pgb_sql_item_scan(sfs_backend *b, const char *sql, sfs_slice queue,
                  int64_t after_id, long limit, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		pgp_i64(&p, after_id);
		if (limit > 0)
			pgp_i64(&p, limit);
		else
			pgp_null_i64(&p);
		st = pgb_exec(c, sql, &p, 0, &r, "reading items");
		if (st == SFS_OK) {
			st = pgb_rows(b, r, queue_row_ad, &queue, &l);
			PQclear(r);
		}
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

#define QUEUE_SCAN(value)                                                  \
	"SELECT q.id, " value ", sfs_len(q.work_item),"                    \
	" coalesce(t.enqueued_ns, 0), 0::bigint, NULL::bytea,"              \
	" coalesce(t.deliveries, 0) FROM work_queue q LEFT JOIN"            \
	" statefs_queue_item t ON t.id = q.id WHERE q.execution_id = $1"   \
	" AND q.id > $2 ORDER BY q.id LIMIT $3"

int pgb_queue_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                   long limit, int keys_only, sfs_list *out)
{
	return pgb_sql_item_scan(b, keys_only ? QUEUE_SCAN("NULL::bytea")
	                                  : QUEUE_SCAN("q.work_item"),
	                     queue, after_id, limit, out);
}

int pgb_sql_item_get(sfs_backend *b, const char *sql, sfs_slice queue, int64_t id,
                 sfs_buf *out)
{
	pgb_ad ad = { PGB_AD_QUEUE, queue, SFS_NONE, SFS_NONE, id };
	sfs_buf v = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		pgp_i64(&p, id);
		st = pgb_exec_value(c, sql, &p, &ad, &v, "reading an item");
	}
	if (st == SFS_OK)
		*out = v;
	return st;
}

int pgb_queue_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                   sfs_buf *item)
{
	return pgb_sql_item_get(b, "SELECT work_item FROM work_queue WHERE id = $2"
	                    " AND execution_id = $1", queue, id, item);
}

/* A pending item's size, time and count of earlier deliveries. */
int pgb_queue_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                   sfs_stat *out)
{
	sfs_list l = { NULL, 0 };
	int st = pgb_sql_item_scan(b, "SELECT q.id, NULL::bytea,"
	        " sfs_len(q.work_item), coalesce(t.enqueued_ns, 0), 0::bigint,"
	        " NULL::bytea, coalesce(t.deliveries, 0) FROM work_queue q"
	        " LEFT JOIN statefs_queue_item t ON t.id = q.id WHERE"
	        " q.execution_id = $1 AND q.id = $2 + 0 * $3", queue, id, 1,
	        &l);

	if (st == SFS_OK && l.n == 0)
		st = SFS_NOTFOUND;
	if (st == SFS_OK)
		*out = l.items[0].st;
	sfs_list_free(&l);
	return st;
}

int pgb_queue_delete(sfs_backend *b, sfs_slice queue, int64_t id)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	pgp_bytes(&p, queue);
	pgp_i64(&p, id);
	st = pgb_run_int(b, "WITH d AS (DELETE FROM work_queue WHERE id = $2"
	                 " AND execution_id = $1 RETURNING id), t AS (DELETE"
	                 " FROM statefs_queue_item s USING d WHERE s.id = d.id)"
	                 " SELECT count(*) FROM d", &p, PGB_COMMIT, &n,
	                 "deleting an item");
	return st != SFS_OK ? st : n ? SFS_OK : SFS_NOTFOUND;
}

int pgb_queue_clear(sfs_backend *b, sfs_slice queue, uint64_t *count)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	/* Its items in flight are cleared too: whatever their claims do,
	 * they do not come back (docs/postgres.md, "Drains, clears"). */
	pgp_bytes(&p, queue);
	st = pgb_run_int(b, "WITH d AS (DELETE FROM work_queue WHERE"
	                 " execution_id = $1 RETURNING id), t AS (DELETE FROM"
	                 " statefs_queue_item s USING d WHERE s.id = d.id),"
	                 " f AS (UPDATE statefs_inflight SET cleared = true"
	                 " WHERE queue = $1 AND NOT cleared)"
	                 " SELECT count(*) FROM d", &p, PGB_COMMIT, &n,
	                 "clearing a queue");
	if (st == SFS_OK)
		pgb_committed(b); /* also when only items in flight changed */
	if (st == SFS_OK && count)
		*count = (uint64_t)n;
	return st;
}

int pgb_queue_len(sfs_backend *b, sfs_slice queue, uint64_t *len)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	pgp_bytes(&p, queue);
	st = pgb_run_int(b, "SELECT count(*) FROM work_queue WHERE"
	                 " execution_id = $1", &p, 0, &n, "counting a queue");
	if (st == SFS_OK)
		*len = (uint64_t)n;
	return st;
}
