/*
 * export.c - export every row of a PostgreSQL store from one
 * snapshot, and import rows in one transaction.
 *
 * Export reads in one REPEATABLE READ READ ONLY transaction, so the rows
 * are one consistent state however much other hosts write meanwhile,
 * through binary cursors fetched a few hundred rows at a time (a large
 * store never sits in memory whole). The order and the row format are a
 * SQLite store's (sqlb_export.c): family, then scope, namespace, key, id.
 * Values come out opened; an export is the plaintext of the store, which
 * is what it is for (moving state, checkpoints), and what verify reads to
 * authenticate every sealed row.
 *
 * Import has a SQLite store's semantics: ids and times kept, idempotent,
 * a different row under an existing id is SFS_EXISTS, an item id lives in
 * one place. Values are sealed for their place as they come in, so
 * "the same row" is compared on the opened bytes. The id sequences are
 * raised past every imported id at the end (sfs_raise, under the lock
 * every statefs id allocation takes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_i.h"

/* --- export ----------------------------------------------------------------- */

/* Every statement gives: scope, ns, key, value, mtime, id, n, deliveries;
 * ad says how its values are sealed. */

/* The id spaces whose last issued id is above every id the export holds
 * (entries, items, claims that are gone): an import raises its sequence
 * there, so none of those ids is issued again. */
#define SEQ_LAST(seq)                                                      \
	"(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM " seq ")"
#define SEQ_SQL                                                            \
	"SELECT convert_to(n, 'UTF8'), NULL::bytea, NULL::bytea, NULL::bytea," \
	" 0::bigint, v, 0::bigint, 0::bigint FROM (SELECT 'claim' AS n, "      \
	SEQ_LAST("statefs_claim_claim_id_seq") " AS v, (SELECT max(claim_id)"  \
	" FROM statefs_claim WHERE ns IS NULL) AS m UNION ALL SELECT 'log', "  \
	SEQ_LAST("function_state_log_id_seq") ", (SELECT max(id) FROM"        \
	" function_state_log) UNION ALL SELECT 'queue', "                     \
	SEQ_LAST("work_queue_id_seq") ", greatest((SELECT max(id) FROM"       \
	" work_queue), (SELECT max(id) FROM statefs_inflight), (SELECT"       \
	" max(id) FROM statefs_dead))) s WHERE v > coalesce(m, 0) ORDER BY n"
static const struct {
	sfs_family fam;
	int ad;
	const char *sql;
} families[] = {
	/* Entries a namespace drain holds are still the namespace's until
	 * delivered: they travel as entries (sealed for the same place). */
	{ SFS_FAM_KV, PGB_AD_KV,
	  "SELECT f.scope_id, f.ns, f.key, f.value, coalesce(t.mtime_ns, 0),"
	  " 0::bigint, 0::bigint, 0::bigint FROM function_state f LEFT JOIN"
	  " statefs_kv_time t ON t.scope_id = f.scope_id AND t.ns = f.ns"
	  " AND t.key = f.key UNION ALL SELECT c.queue, c.ns, k.key, k.value,"
	  " k.mtime_ns, 0, 0, 0 FROM statefs_kv_taken k JOIN statefs_claim c"
	  " ON c.claim_id = k.claim_id ORDER BY 1, 2, 3" },
	{ SFS_FAM_COUNTER, 0,
	  "SELECT f.scope_id, f.ns, f.key, NULL::bytea, coalesce(t.mtime_ns, 0),"
	  " 0::bigint, f.n, 0::bigint FROM function_counter f LEFT JOIN"
	  " statefs_counter_time t ON t.scope_id = f.scope_id AND t.ns = f.ns"
	  " AND t.key = f.key ORDER BY f.scope_id, f.ns, f.key" },
	{ SFS_FAM_LOG, PGB_AD_LOG,
	  "SELECT l.scope_id, l.ns, l.key, l.value, coalesce(t.mtime_ns, 0),"
	  " l.id, 0::bigint, 0::bigint FROM function_state_log l LEFT JOIN"
	  " statefs_log_time t ON t.id = l.id"
	  " ORDER BY l.scope_id, l.ns, l.key, l.id" },
	{ SFS_FAM_QUEUE, PGB_AD_QUEUE,
	  "SELECT q.execution_id, NULL::bytea, NULL::bytea, q.work_item,"
	  " coalesce(t.enqueued_ns, 0), q.id, 0::bigint,"
	  " coalesce(t.deliveries, 0) FROM work_queue q LEFT JOIN"
	  " statefs_queue_item t ON t.id = q.id ORDER BY q.execution_id, q.id" },
	/* A directory's own family travels in row.n. */
	{ SFS_FAM_DIR, 0,
	  "SELECT scope_id, CASE has_ns WHEN 1 THEN ns END, NULL::bytea,"
	  " NULL::bytea, 0::bigint, 0::bigint, family::bigint, 0::bigint"
	  " FROM statefs_dir ORDER BY scope_id, has_ns, ns, family" },
	/* Claims before their items, so an import meets a claim first. */
	{ SFS_FAM_CLAIM, 0,
	  "SELECT queue, NULL::bytea, NULL::bytea, NULL::bytea, claimed_ns,"
	  " claim_id, lease_until, 0::bigint FROM statefs_claim"
	  " WHERE ns IS NULL ORDER BY queue, claim_id" },
	{ SFS_FAM_INFLIGHT, PGB_AD_QUEUE,
	  "SELECT queue, NULL::bytea, NULL::bytea, item, enqueued_ns, id,"
	  " claim_id, deliveries FROM statefs_inflight ORDER BY queue, id" },
	{ SFS_FAM_DEAD, PGB_AD_QUEUE,
	  "SELECT queue, NULL::bytea, convert_to(reason, 'UTF8'), item,"
	  " dead_ns, id, 0::bigint, deliveries FROM statefs_dead"
	  " ORDER BY queue, id" },
	{ SFS_FAM_POLICY, 0,
	  "SELECT queue, NULL::bytea, NULL::bytea, NULL::bytea, 0::bigint,"
	  " 0::bigint, ttl_ms, max_deliveries FROM statefs_queue_policy"
	  " ORDER BY queue" },
	{ SFS_FAM_SEQ, 0, SEQ_SQL },
};

#define N_FAM (sizeof(families) / sizeof(families[0]))
#define BATCH 256

typedef struct export_ctx {
	int (*fn)(const sfs_row *row, void *ctx);
	void *ctx;
	sfs_progress_fn progress;
	void *pctx;
	uint64_t done, total;
	int delivered;           /* fn saw a row: no retry any more */
} export_ctx;

static int count_all(pgc *c, uint64_t *total)
{
	PGresult *r;
	int st = pgb_exec(c, "SELECT (SELECT count(*) FROM function_state)"
	        " + (SELECT count(*) FROM statefs_kv_taken)"
	        " + (SELECT count(*) FROM function_counter)"
	        " + (SELECT count(*) FROM function_state_log)"
	        " + (SELECT count(*) FROM work_queue)"
	        " + (SELECT count(*) FROM statefs_dir)"
	        " + (SELECT count(*) FROM statefs_claim WHERE ns IS NULL)"
	        " + (SELECT count(*) FROM statefs_inflight)"
	        " + (SELECT count(*) FROM statefs_dead)"
	        " + (SELECT count(*) FROM statefs_queue_policy)"
	        " + (SELECT count(*) FROM (" SEQ_SQL ") q)", NULL, 0, &r,
	        "counting rows");

	if (st != SFS_OK)
		return st;
	*total = (uint64_t)pgr_i64(r, 0, 0);
	PQclear(r);
	return SFS_OK;
}

static sfs_slice col(const PGresult *r, int i, int k)
{
	return pgr_bytes(r, i, k);
}

/* One fetched batch to the callback. */
static int export_rows(pgc *c, size_t f, const PGresult *r, export_ctx *x)
{
	int st = SFS_OK;

	for (int i = 0; i < PQntuples(r) && st == SFS_OK; i++) {
		sfs_buf plain = { NULL, 0 };
		sfs_row row;
		int64_t n;

		memset(&row, 0, sizeof(row));
		row.family = families[f].fam;
		row.scope = col(r, i, 0);
		row.ns = col(r, i, 1);
		row.key = col(r, i, 2);
		row.value = col(r, i, 3);
		row.mtime_ns = pgr_i64(r, i, 4);
		row.id = pgr_i64(r, i, 5);
		n = pgr_i64(r, i, 6);
		row.deliveries = pgr_i64(r, i, 7);
		if (row.value.ptr && families[f].ad) {
			pgb_ad ad = { families[f].ad, row.scope, SFS_NONE, SFS_NONE,
			              row.id };

			if (families[f].ad != PGB_AD_QUEUE) {
				ad.ns = row.ns;
				ad.key = row.key;
			}
			if (families[f].ad == PGB_AD_KV)
				ad.id = 0;
			st = pgb_unseal_buf(c->b, &ad, row.value, &plain);
			if (st != SFS_OK)
				break;
			row.value = sfs_bytes(plain.ptr, plain.len);
		}
		switch (row.family) {
		case SFS_FAM_COUNTER:
			row.counter = n;
			break;
		case SFS_FAM_DIR:
			row.dir_family = (sfs_family)n;
			break;
		case SFS_FAM_CLAIM:
			row.lease_until_ns = n;
			break;
		case SFS_FAM_INFLIGHT:
			row.claim_id = n;
			break;
		case SFS_FAM_DEAD:
			row.reason = row.key;
			row.key = SFS_NONE;
			break;
		case SFS_FAM_POLICY:
			row.ttl_ms = n;
			row.max_deliveries = row.deliveries;
			row.deliveries = 0;
			break;
		default:
			break;
		}
		x->delivered = 1;
		st = x->fn(&row, x->ctx);
		sfs_buf_free(&plain);
		if (st != 0)
			break;
		x->done++;
		if (x->progress && x->done % 256 == 0 &&
		    x->progress(x->done, x->total, x->pctx))
			st = sfs_err(SFS_CANCELLED, "cancelled by the caller");
	}
	return st;
}

/* One FETCH of up to BATCH rows, each row to the callback as it arrives
 * (libpq's single-row mode): a batch of values of many megabytes each
 * (up to the store's max_value) is never held at once, so an export,
 * a verify or a checkpoint needs memory for one row, as on SQLite. Every
 * result is read, even after a failure, so the connection stays usable
 * (or is found broken). *n: the rows the server sent. */
static int fetch_batch(pgc *c, size_t f, export_ctx *x, int *n)
{
	PGresult *r;
	int st = SFS_OK;

	*n = 0;
	if (!PQsendQuery(c->conn, "FETCH FORWARD " "256" " FROM sfs_export"))
		return pgb_fail(c, NULL, 0, "exporting");
	if (!PQsetSingleRowMode(c->conn))
		st = sfs_err(SFS_INTERNAL, "exporting: libpq refused single-row"
		             " mode");
	while ((r = PQgetResult(c->conn))) {
		ExecStatusType rs = PQresultStatus(r);

		if (rs == PGRES_SINGLE_TUPLE) {
			++*n;
			if (st == SFS_OK)
				st = export_rows(c, f, r, x);
		} else if (rs != PGRES_TUPLES_OK && st == SFS_OK) {
			st = pgb_fail(c, r, 0, "exporting");
		}
		PQclear(r);
	}
	return st;
}

static int export_family(pgc *c, size_t f, export_ctx *x)
{
	char sql[1024];
	int st, n;

	snprintf(sql, sizeof(sql), "DECLARE sfs_export BINARY NO SCROLL CURSOR"
	         " FOR %s", families[f].sql);
	st = pgb_exec_text(c, sql, 0, "exporting");
	while (st == SFS_OK) {
		st = fetch_batch(c, f, x, &n);
		if (n < BATCH)
			break;
	}
	if (st == SFS_OK)
		st = pgb_exec_text(c, "CLOSE sfs_export", 0, "exporting");
	return st;
}

static int export_body(pgc *c, export_ctx *x)
{
	int st = pgb_begin_snapshot(c);

	if (st == SFS_OK)
		st = count_all(c, &x->total);
	if (st == SFS_OK && x->progress && x->progress(0, x->total, x->pctx))
		st = sfs_err(SFS_CANCELLED, "cancelled by the caller");
	for (size_t f = 0; f < N_FAM && st == SFS_OK; f++)
		st = export_family(c, f, x);
	/* Rows already given to the caller must not be given again. */
	if (x->delivered)
		c->transient = 0;
	if (st == SFS_OK) {
		st = pgb_exec_text(c, "ROLLBACK", 0, "ending an export");
		c->in_tx = 0;
	}
	return st; /* on failure PGB_TRY rolls back */
}

int pgb_export(sfs_backend *b, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx)
{
	export_ctx x = { fn, ctx, progress, pctx, 0, 0, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		x.done = 0;
		st = export_body(c, &x);
	}
	if (st == SFS_OK && progress && progress(x.done, x.total, pctx))
		st = sfs_err(SFS_CANCELLED, "cancelled by the caller");
	return st;
}

/* --- import ----------------------------------------------------------------- */

static int same_bytes(sfs_slice a, sfs_slice b)
{
	return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* Runs sql with p; *rows (may be NULL) gets the rows it returned. */
static int run(pgc *c, const char *sql, pgp *p, int *rows)
{
	PGresult *r;
	int st = pgb_exec(c, sql, p, 0, &r, "importing a row");

	pgp_free(p);
	if (st != SFS_OK)
		return st;
	if (rows)
		*rows = PQntuples(r);
	PQclear(r);
	return SFS_OK;
}

/* The time row of a keyed row: set to mtime, or gone when 0. */
static int keyed_time(pgc *c, const char *table, const sfs_row *r)
{
	char sql[384];
	pgp p = PGP_INIT;

	pgp_bytes(&p, r->scope);
	pgp_bytes(&p, r->ns);
	pgp_bytes(&p, r->key);
	if (r->mtime_ns) {
		pgp_i64(&p, r->mtime_ns);
		snprintf(sql, sizeof(sql), "INSERT INTO %s (scope_id, ns, key,"
		         " mtime_ns) VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id,"
		         " ns, key) DO UPDATE SET mtime_ns = excluded.mtime_ns",
		         table);
	} else {
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE scope_id = $1"
		         " AND ns = $2 AND key = $3", table);
	}
	return run(c, sql, &p, NULL);
}

/* Where an item id is: pending (0), in flight (1) or dead (2); an id
 * already somewhere other than `mine` is a conflict. */
static int check_places(pgc *c, int64_t id, int mine)
{
	static const char *const what[3] = { "pending", "in flight", "dead" };
	PGresult *r;
	pgp p = PGP_INIT;
	int st, where = -1;

	pgp_i64(&p, id);
	st = pgb_exec(c, "SELECT EXISTS (SELECT 1 FROM work_queue WHERE id = $1),"
	              " EXISTS (SELECT 1 FROM statefs_inflight WHERE id = $1),"
	              " EXISTS (SELECT 1 FROM statefs_dead WHERE id = $1)", &p, 0,
	              &r, "importing a row");
	if (st != SFS_OK)
		return st;
	for (int i = 0; i < 3; i++)
		if (i != mine && pgr_i64(r, 0, i))
			where = i;
	PQclear(r);
	if (where >= 0)
		return sfs_err(SFS_EXISTS, "item %lld is %s in this store",
		               (long long)id, what[where]);
	return SFS_OK;
}

/* Whether the row stored under an existing id (same_sql gives its
 * columns: scope, ns, key, value, then int8s) is r. */
static int same_row(pgc *c, const char *same_sql, const sfs_row *r, int ad,
                    const int64_t *ints, int nints)
{
	PGresult *res;
	pgp p = PGP_INIT;
	sfs_buf plain = { NULL, 0 };
	int st, eq;

	pgp_i64(&p, r->id);
	st = pgb_exec(c, same_sql, &p, 0, &res, "importing a row");
	if (st != SFS_OK)
		return st;
	eq = PQntuples(res) > 0;
	if (eq) {
		sfs_slice v = pgr_bytes(res, 0, 3);
		pgb_ad a = { ad, pgr_bytes(res, 0, 0), pgr_bytes(res, 0, 1),
		             pgr_bytes(res, 0, 2), r->id };

		eq = same_bytes(pgr_bytes(res, 0, 0), r->scope) &&
		     (ad != PGB_AD_LOG || (same_bytes(a.ns, r->ns) &&
		                           same_bytes(a.key, r->key))) &&
		     (r->family != SFS_FAM_DEAD || same_bytes(a.key, r->key));
		for (int i = 0; eq && i < nints; i++)
			eq = pgr_i64(res, 0, 4 + i) == ints[i];
		if (eq && v.ptr) {
			if (ad == PGB_AD_QUEUE)
				a.ns = a.key = SFS_NONE;
			st = pgb_unseal_buf(c->b, &a, v, &plain);
			eq = st == SFS_OK && same_bytes(sfs_bytes(plain.ptr, plain.len),
			                                r->value);
		}
	}
	sfs_buf_free(&plain);
	PQclear(res);
	if (st != SFS_OK)
		return st;
	return eq ? SFS_OK : sfs_err(SFS_EXISTS, "id %lld holds a different row",
	                             (long long)r->id);
}

/* Inserts a row that has an id (DO NOTHING on that id), then checks an
 * existing one is the same row. The value ($4) is sealed for ad. */
static int insert_same(pgc *c, const char *ins, const char *same,
                       const sfs_row *r, int ad, const int64_t *ints,
                       int nints)
{
	pgb_ad a = { ad, r->scope, ad == PGB_AD_QUEUE ? SFS_NONE : r->ns,
	             ad == PGB_AD_QUEUE ? SFS_NONE : r->key, r->id };
	sfs_slice sealed = SFS_NONE;
	void *owned = NULL;
	pgp p = PGP_INIT;
	int st = SFS_OK, rows = 0;

	if (r->id <= 0)
		return sfs_err(SFS_INVALID, "a row of family %d needs an id > 0",
		               (int)r->family);
	if (r->value.ptr)
		st = pgb_seal(c->b, &a, r->value, &sealed, &owned);
	if (st != SFS_OK)
		return st;
	pgp_bytes(&p, r->scope);
	pgp_bytes(&p, r->ns.ptr ? r->ns : sfs_bytes("", 0));
	pgp_bytes(&p, r->key.ptr ? r->key : sfs_bytes("", 0));
	pgp_bytes(&p, sealed);
	pgp_i64(&p, r->id);
	for (int i = 0; i < nints; i++)
		pgp_i64(&p, ints[i]);
	st = run(c, ins, &p, &rows);
	free(owned);
	if (st != SFS_OK || rows)
		return st;
	return same_row(c, same, r, ad, ints, nints);
}

static void raise_max(int64_t *max, int64_t id)
{
	if (id > *max)
		*max = id;
}

/* The one number a row carries beside its id, mtime and deliveries, by
 * family, as the statements bind it. */
static int64_t row_n(const sfs_row *r)
{
	switch (r->family) {
	case SFS_FAM_COUNTER:
		return r->counter;
	case SFS_FAM_DIR:
		return (int64_t)r->dir_family;
	case SFS_FAM_CLAIM:
		return r->lease_until_ns;
	case SFS_FAM_INFLIGHT:
		return r->claim_id;
	case SFS_FAM_POLICY:
		return r->ttl_ms;
	default:
		return 0;
	}
}

/* Whether s is text PostgreSQL keeps in a UTF-8 database: valid UTF-8
 * (no overlong forms, no surrogates, at most U+10FFFF) without NUL. */
static int pg_text(sfs_slice s)
{
	const unsigned char *p = s.ptr, *end = p + s.len;

	while (p < end) {
		unsigned c = *p++, n, min, cp;

		if (c == 0)
			return 0;
		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, min = 0x80, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, min = 0x800, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, min = 0x10000, cp = c & 0x07;
		else
			return 0;
		if ((size_t)(end - p) < n)
			return 0;
		for (unsigned i = 0; i < n; i++, p++) {
			if ((*p & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (*p & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
	}
	return 1;
}

int pgb_import_one(pgb_imp *imp, const sfs_row *row)
{
	/* The columns as this file's statements bind them: n, a dead
	 * letter's reason in key, a policy's limit in deliveries. */
	sfs_row r0 = *row;
	const sfs_row *r = &r0;
	int64_t rn = row_n(row);
	pgc *c = imp->c;
	pgp p = PGP_INIT;
	sfs_slice sealed;
	void *owned = NULL;
	int st, ok;

	if (row->family == SFS_FAM_DEAD)
		r0.key = row->reason;
	else if (row->family == SFS_FAM_POLICY)
		r0.deliveries = row->max_deliveries;
	switch (r->family) {
	case SFS_FAM_KV: {
		pgb_ad a = { PGB_AD_KV, r->scope, r->ns, r->key, 0 };

		st = pgb_seal(c->b, &a, r->value, &sealed, &owned);
		if (st != SFS_OK)
			return st;
		pgp_bytes(&p, r->scope);
		pgp_bytes(&p, r->ns);
		pgp_bytes(&p, r->key);
		pgp_bytes(&p, sealed);
		st = run(c, "INSERT INTO function_state (scope_id, ns, key, value)"
		         " VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key)"
		         " DO UPDATE SET value = excluded.value", &p, NULL);
		free(owned);
		return st == SFS_OK ? keyed_time(c, "statefs_kv_time", r) : st;
	}
	case SFS_FAM_COUNTER:
		pgp_bytes(&p, r->scope);
		pgp_bytes(&p, r->ns);
		pgp_bytes(&p, r->key);
		pgp_i64(&p, rn);
		st = run(c, "INSERT INTO function_counter (scope_id, ns, key, n)"
		         " VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key)"
		         " DO UPDATE SET n = excluded.n", &p, NULL);
		return st == SFS_OK ? keyed_time(c, "statefs_counter_time", r) : st;
	case SFS_FAM_LOG:
		st = insert_same(c, "INSERT INTO function_state_log (id, scope_id,"
		        " ns, key, value) VALUES ($5, $1, $2, $3, $4)"
		        " ON CONFLICT (id) DO NOTHING RETURNING 1",
		        "SELECT scope_id, ns, key, value FROM function_state_log"
		        " WHERE id = $1", r, PGB_AD_LOG, NULL, 0);
		if (st != SFS_OK)
			return st;
		raise_max(&imp->max_log, r->id);
		pgp_i64(&p, r->id);
		pgp_i64(&p, r->mtime_ns);
		return run(c, r->mtime_ns ? "INSERT INTO statefs_log_time (id,"
		           " mtime_ns) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE"
		           " SET mtime_ns = excluded.mtime_ns" :
		           "DELETE FROM statefs_log_time WHERE id = $1 AND $2 = 0",
		           &p, NULL);
	case SFS_FAM_QUEUE:
		st = check_places(c, r->id, 0);
		if (st == SFS_OK)
			st = insert_same(c, "INSERT INTO work_queue (id, execution_id,"
			        " work_item) SELECT $5, $1, $4 WHERE $2::bytea IS NOT"
			        " NULL AND $3::bytea IS NOT NULL ON CONFLICT (id) DO"
			        " NOTHING RETURNING 1",
			        "SELECT execution_id, NULL::bytea, NULL::bytea,"
			        " work_item FROM work_queue WHERE id = $1", r,
			        PGB_AD_QUEUE, NULL, 0);
		if (st != SFS_OK)
			return st;
		raise_max(&imp->max_item, r->id);
		pgp_i64(&p, r->id);
		pgp_i64(&p, r->mtime_ns);
		pgp_i64(&p, r->deliveries);
		return run(c, r->mtime_ns || r->deliveries ?
		           "INSERT INTO statefs_queue_item (id, enqueued_ns,"
		           " deliveries) VALUES ($1, $2, $3) ON CONFLICT (id) DO"
		           " UPDATE SET enqueued_ns = excluded.enqueued_ns,"
		           " deliveries = excluded.deliveries" :
		           "DELETE FROM statefs_queue_item WHERE id = $1 AND $2 = 0"
		           " AND $3 = 0", &p, NULL);
	case SFS_FAM_DIR:
		pgp_i64(&p, rn);
		pgp_bytes(&p, r->scope);
		pgp_i64(&p, r->ns.ptr != NULL);
		pgp_bytes(&p, r->ns.ptr ? r->ns : sfs_bytes("", 0));
		return run(c, "INSERT INTO statefs_dir (family, scope_id, has_ns,"
		           " ns) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", &p,
		           NULL);
	case SFS_FAM_CLAIM: {
		int64_t ints[2] = { rn, r->mtime_ns };

		st = insert_same(c, "INSERT INTO statefs_claim (claim_id, queue,"
		        " lease_until, claimed_ns) SELECT $5, $1, $6, $7 WHERE"
		        " $2::bytea IS NOT NULL AND $3::bytea IS NOT NULL AND"
		        " $4::bytea IS NULL ON CONFLICT (claim_id) DO NOTHING"
		        " RETURNING 1",
		        "SELECT queue, NULL::bytea, NULL::bytea, NULL::bytea,"
		        " lease_until, claimed_ns FROM statefs_claim"
		        " WHERE claim_id = $1", r, 0, ints, 2);
		if (st == SFS_OK)
			raise_max(&imp->max_claim, r->id);
		return st;
	}
	case SFS_FAM_INFLIGHT: {
		int64_t ints[3] = { rn, r->mtime_ns, r->deliveries };
		PGresult *res;

		st = check_places(c, r->id, 1);
		if (st != SFS_OK)
			return st;
		pgp_i64(&p, rn);
		pgp_bytes(&p, r->scope);
		st = pgb_exec(c, "SELECT queue = $2 AND ns IS NULL FROM"
		              " statefs_claim WHERE claim_id = $1", &p, 0, &res,
		              "importing a row");
		if (st != SFS_OK)
			return st;
		ok = PQntuples(res) && pgr_i64(res, 0, 0);
		PQclear(res);
		if (!ok)
			return sfs_err(SFS_INVALID, "in-flight item %lld belongs to"
			               " claim %lld, which is not in this store (or is"
			               " of another queue)", (long long)r->id,
			               (long long)rn);
		st = insert_same(c, "INSERT INTO statefs_inflight (id, claim_id,"
		        " queue, item, enqueued_ns, deliveries) SELECT $5, $6, $1,"
		        " $4, $7, $8 WHERE $2::bytea IS NOT NULL AND $3::bytea IS"
		        " NOT NULL ON CONFLICT (id) DO NOTHING RETURNING 1",
		        "SELECT queue, NULL::bytea, NULL::bytea, item, claim_id,"
		        " enqueued_ns, deliveries FROM statefs_inflight WHERE id = $1",
		        r, PGB_AD_QUEUE, ints, 3);
		if (st == SFS_OK)
			raise_max(&imp->max_item, r->id);
		return st;
	}
	case SFS_FAM_DEAD: {
		int64_t ints[2] = { r->deliveries, r->mtime_ns };

		/* The reason is a text column here (a SQLite store keeps
		 * bytes): refused with a sentence, not the server's
		 * "invalid byte sequence" as an internal error. */
		if (!pg_text(r->key))
			return sfs_err(SFS_INVALID, "dead letter %lld: its reason"
			               " is not UTF-8 text without NUL bytes, as a"
			               " PostgreSQL store keeps reasons",
			               (long long)r->id);
		st = check_places(c, r->id, 2);
		if (st == SFS_OK)
			st = insert_same(c, "INSERT INTO statefs_dead (id, queue, item,"
			        " reason, deliveries, dead_ns) SELECT $5, $1, $4,"
			        " convert_from($3, 'UTF8'), $6, $7 WHERE $2::bytea IS"
			        " NOT NULL ON CONFLICT (id) DO NOTHING RETURNING 1",
			        "SELECT queue, NULL::bytea, convert_to(reason, 'UTF8'),"
			        " item, deliveries, dead_ns FROM statefs_dead"
			        " WHERE id = $1", r, PGB_AD_QUEUE, ints, 2);
		if (st == SFS_OK)
			raise_max(&imp->max_item, r->id);
		return st;
	}
	case SFS_FAM_SEQ: /* chk_row: one of the three */
		raise_max(*(const char *)r->scope.ptr == 'l' ? &imp->max_log
		          : *(const char *)r->scope.ptr == 'q' ? &imp->max_item
		          : &imp->max_claim, r->id);
		return SFS_OK;
	case SFS_FAM_POLICY:
		pgp_bytes(&p, r->scope);
		pgp_i64(&p, rn);
		pgp_i64(&p, r->deliveries);
		return run(c, "INSERT INTO statefs_queue_policy (queue, ttl_ms,"
		           " max_deliveries) VALUES ($1, $2, $3) ON CONFLICT (queue)"
		           " DO UPDATE SET ttl_ms = excluded.ttl_ms,"
		           " max_deliveries = excluded.max_deliveries", &p, NULL);
	}
	return sfs_err(SFS_INVALID, "unknown family %d", (int)r->family);
}

int pgb_import_finish(pgb_imp *imp)
{
	static const char *const seqs[3] = { "function_state_log_id_seq",
		"work_queue_id_seq", "statefs_claim_claim_id_seq" };
	int64_t max[3] = { imp->max_log, imp->max_item, imp->max_claim };
	int st = SFS_OK;

	for (int i = 0; i < 3 && st == SFS_OK; i++) {
		pgp p = PGP_INIT;

		if (!max[i])
			continue;
		pgp_text(&p, seqs[i]);
		pgp_i64(&p, max[i]);
		st = run(imp->c, "SELECT sfs_raise($1::text::regclass, $2)", &p,
		         NULL);
	}
	return st;
}

/* One transaction on one connection: every row, the sequences raised,
 * then the commit; any failure rolls it all back. */
int pgb_import_rows(sfs_backend *b, int (*next)(sfs_row *row, void *ctx),
                    void *ctx)
{
	pgb_imp imp;
	sfs_row row;
	int st;

	memset(&imp, 0, sizeof(imp));
	st = pgb_acquire(b, &imp.c);
	if (st != SFS_OK)
		return st;
	st = pgb_begin(imp.c);
	while (st == SFS_OK) {
		memset(&row, 0, sizeof(row));
		st = next(&row, ctx);
		if (st == SFS_NOTFOUND) {
			st = SFS_OK;
			break;
		}
		if (st == SFS_OK)
			st = pgb_import_one(&imp, &row);
	}
	if (st == SFS_OK)
		st = pgb_import_finish(&imp);
	if (st == SFS_OK)
		st = pgb_commit(imp.c);
	if (st == SFS_OK)
		pgb_committed(b);
	pgb_release(b, imp.c);
	return st;
}
