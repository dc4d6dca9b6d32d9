/*
 * dir.c - scopes and namespaces as directories on PostgreSQL:
 * listing them, explicit empty ones (statefs_dir), renaming them.
 *
 * A scope or namespace of a family exists while a row of the family's
 * table carries it or statefs_dir holds it (a queue also while it has
 * items in flight or dead letters), as in a SQLite store. A listing is
 * one recursive statement that walks the distinct values of each source
 * through its index, one seek per value (a loose index scan), merging the
 * sources with least(): N scopes cost N seeks however many rows each
 * holds, and LIMIT stops the walk.
 *
 * Renaming a directory in an encrypted store re-seals every value it
 * holds for its new name (their associated data binds it): the rows are
 * read under lock, opened, sealed again and written back in the rename's
 * transaction. A plaintext store's rename is a few UPDATEs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_i.h"

typedef struct fam_desc {
	const char *table;   /* the family's data table */
	const char *scol;    /* its scope column */
	const char *ttable;  /* its (scope, ns, key) time table, or NULL */
} fam_desc;

static const fam_desc fams[4] = {
	[SFS_FAM_KV - 1] = { "function_state", "scope_id", "statefs_kv_time" },
	[SFS_FAM_COUNTER - 1] = { "function_counter", "scope_id",
	                          "statefs_counter_time" },
	[SFS_FAM_LOG - 1] = { "function_state_log", "scope_id", NULL },
	[SFS_FAM_QUEUE - 1] = { "work_queue", "execution_id", NULL },
};

#define FAM(f) (&fams[(f) - 1])

/* The least value of every source greater than `gt` (an SQL
 * expression), or the least of all when gt is NULL. (PostgreSQL has no
 * min(bytea): each source is its index's first entry past gt.) */
static void next_scope_expr(char *out, size_t len, sfs_family fam,
                            const char *gt)
{
	const fam_desc *d = FAM(fam);
	char w[64] = "", wd[64] = "", wq[64] = "";

	if (gt) {
		snprintf(w, sizeof(w), " WHERE %s > %s", d->scol, gt);
		snprintf(wd, sizeof(wd), " AND scope_id > %s", gt);
		snprintf(wq, sizeof(wq), " WHERE queue > %s", gt);
	}
	if (fam == SFS_FAM_QUEUE)
		snprintf(out, len, "least((SELECT %s FROM %s%s ORDER BY 1 LIMIT 1),"
		         " (SELECT scope_id FROM statefs_dir WHERE family = %d%s"
		         " ORDER BY 1 LIMIT 1), (SELECT queue FROM statefs_inflight%s"
		         " ORDER BY 1 LIMIT 1), (SELECT queue FROM statefs_dead%s"
		         " ORDER BY 1 LIMIT 1))", d->scol, d->table, w, (int)fam, wd,
		         wq, wq);
	else
		snprintf(out, len, "least((SELECT %s FROM %s%s ORDER BY 1 LIMIT 1),"
		         " (SELECT scope_id FROM statefs_dir WHERE family = %d%s"
		         " ORDER BY 1 LIMIT 1))", d->scol, d->table, w, (int)fam, wd);
}

static void next_ns_expr(char *out, size_t len, sfs_family fam,
                         const char *gt)
{
	const fam_desc *d = FAM(fam);
	char w[64] = "";

	if (gt)
		snprintf(w, sizeof(w), " AND ns > %s", gt);
	snprintf(out, len, "least((SELECT ns FROM %s WHERE scope_id = $1%s"
	         " ORDER BY 1 LIMIT 1), (SELECT ns FROM statefs_dir WHERE"
	         " family = %d AND scope_id = $1 AND has_ns = 1%s ORDER BY 1"
	         " LIMIT 1))", d->table, w, (int)fam, w);
}

int pgb_walk(pgc *c, const char *first, const char *next, pgp *p,
                long limit, sfs_list *out)
{
	char sql[2048];
	PGresult *r;
	listb lb = LISTB_INIT;
	int st;

	snprintf(sql, sizeof(sql), "WITH RECURSIVE s(v) AS (SELECT %s UNION ALL"
	         " SELECT %s FROM s WHERE s.v IS NOT NULL) SELECT v FROM s"
	         " WHERE v IS NOT NULL LIMIT $%d", first, next, p->n + 1);
	if (limit > 0)
		pgp_i64(p, limit);
	else
		pgp_null_i64(p);
	st = pgb_exec(c, sql, p, 0, &r, "listing");
	if (st != SFS_OK)
		return st;
	for (int i = 0; i < PQntuples(r); i++) {
		sfs_slice v = pgr_bytes(r, i, 0);

		if (listb_push(&lb))
			listb_key(&lb, v.ptr, v.len);
	}
	PQclear(r);
	return listb_finish(&lb, out);
}

int pgb_scope_list(sfs_backend *b, sfs_family fam, sfs_slice after,
                   long limit, sfs_list *out)
{
	char first[512], next[512];
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	next_scope_expr(first, sizeof(first), fam, after.ptr ? "$1" : NULL);
	next_scope_expr(next, sizeof(next), fam, "s.v");
	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		if (after.ptr)
			pgp_bytes(&p, after);
		st = pgb_walk(c, first, next, &p, limit, &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

int pgb_ns_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                sfs_slice after, long limit, sfs_list *out)
{
	char first[512], next[512];
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	if (fam == SFS_FAM_QUEUE) { /* queues have no namespaces */
		out->items = NULL;
		out->n = 0;
		return SFS_OK;
	}
	next_ns_expr(first, sizeof(first), fam, after.ptr ? "$2" : NULL);
	next_ns_expr(next, sizeof(next), fam, "s.v");
	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		pgp_bytes(&p, scope);
		if (after.ptr)
			pgp_bytes(&p, after);
		st = pgb_walk(c, first, next, &p, limit, &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

/* SQL: whether scope $1 (and ns $2) has rows of the family; for a scope
 * of a queue also in flight or dead. */
static void rows_expr(char *out, size_t len, sfs_family fam, int has_ns)
{
	const fam_desc *d = FAM(fam);

	if (has_ns)
		snprintf(out, len, "EXISTS (SELECT 1 FROM %s WHERE scope_id = $1"
		         " AND ns = $2)", d->table);
	else
		snprintf(out, len, "(EXISTS (SELECT 1 FROM %s WHERE %s = $1)%s)",
		         d->table, d->scol, fam == SFS_FAM_QUEUE ?
		         " OR EXISTS (SELECT 1 FROM statefs_inflight WHERE"
		         " queue = $1) OR EXISTS (SELECT 1 FROM statefs_dead WHERE"
		         " queue = $1)" : "");
}

/* SQL: whether the directory exists (rows, or a statefs_dir row). */
static void exists_expr(char *out, size_t len, sfs_family fam, int has_ns)
{
	char rows[512];

	rows_expr(rows, sizeof(rows), fam, has_ns);
	snprintf(out, len, "(%s OR EXISTS (SELECT 1 FROM statefs_dir WHERE"
	         " family = %d AND scope_id = $1%s))", rows, (int)fam,
	         has_ns ? " AND has_ns = 1 AND ns = $2" : "");
}

/* SQL: whether it holds anything (rows, or for a scope, namespaces). */
static void nonempty_expr(char *out, size_t len, sfs_family fam, int has_ns)
{
	char rows[512];

	rows_expr(rows, sizeof(rows), fam, has_ns);
	if (has_ns)
		snprintf(out, len, "%s", rows);
	else
		snprintf(out, len, "(%s OR EXISTS (SELECT 1 FROM statefs_dir WHERE"
		         " family = %d AND scope_id = $1 AND has_ns = 1))", rows,
		         (int)fam);
}

static void dir_params(pgp *p, sfs_slice scope, sfs_slice ns)
{
	pgp_bytes(p, scope);
	if (ns.ptr)
		pgp_bytes(p, ns);
}

/* 1, 0 or -status: whether the directory exists / is not empty. */
static int dir_test(pgc *c, int nonempty, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	char e[1024], sql[1100];
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	if (nonempty)
		nonempty_expr(e, sizeof(e), fam, ns.ptr != NULL);
	else
		exists_expr(e, sizeof(e), fam, ns.ptr != NULL);
	snprintf(sql, sizeof(sql), "SELECT %s", e);
	dir_params(&p, scope, ns);
	st = pgb_exec(c, sql, &p, 0, &r, "looking up a directory");
	if (st != SFS_OK)
		return -st;
	st = pgr_i64(r, 0, 0) != 0;
	PQclear(r);
	return st;
}

int pgb_dir_exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	pgc *c;
	int st, e = 0;

	PGB_TRY(b, c, st, 0) {
		e = dir_test(c, 0, fam, scope, ns);
		st = e < 0 ? -e : SFS_OK;
	}
	if (st != SFS_OK)
		return st;
	return e ? SFS_OK : SFS_NOTFOUND;
}

/* A statefs_dir row's key: $3 family... written into statements below as
 * (family, $1, has_ns, coalesce($2, '')). */
int pgb_dir_create(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	char e[1024], sql[1400];
	pgc *c;
	int st, made = 0;

	exists_expr(e, sizeof(e), fam, ns.ptr != NULL);
	/* One statement: two creators at once, one wins, the other sees a
	 * conflict and says "exists". */
	snprintf(sql, sizeof(sql), "INSERT INTO statefs_dir (family, scope_id,"
	         " has_ns, ns) SELECT %d, $1, %d, %s WHERE NOT %s"
	         " ON CONFLICT DO NOTHING RETURNING 1", (int)fam,
	         ns.ptr != NULL, ns.ptr ? "$2" : "''::bytea", e);
	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		dir_params(&p, scope, ns);
		st = pgb_exec(c, sql, &p, PGB_COMMIT, &r, "creating a directory");
		if (st == SFS_OK) {
			made = PQntuples(r) > 0;
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	if (!made)
		return sfs_err(SFS_EXISTS, "the %s exists",
		               ns.ptr ? "namespace" : "scope");
	pgb_committed(b);
	return SFS_OK;
}

int pgb_dir_remove(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	char e[1024], ne[1024], sql[2600];
	int64_t ex = 0, full = 0;
	pgc *c;
	int st;

	exists_expr(e, sizeof(e), fam, ns.ptr != NULL);
	nonempty_expr(ne, sizeof(ne), fam, ns.ptr != NULL);
	snprintf(sql, sizeof(sql), "WITH e AS (SELECT %s AS ex, %s AS ne),"
	         " d AS (DELETE FROM statefs_dir WHERE family = %d AND"
	         " scope_id = $1 AND has_ns = %d AND ns = %s AND"
	         " (SELECT ex AND NOT ne FROM e)) SELECT ex, ne FROM e",
	         e, ne, (int)fam, ns.ptr != NULL, ns.ptr ? "$2" : "''::bytea");
	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		dir_params(&p, scope, ns);
		st = pgb_exec(c, sql, &p, PGB_COMMIT, &r, "removing a directory");
		if (st == SFS_OK) {
			ex = pgr_i64(r, 0, 0);
			full = pgr_i64(r, 0, 1);
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	if (!ex)
		return sfs_err(SFS_NOTFOUND, "no such %s",
		               ns.ptr ? "namespace" : "scope");
	if (full)
		return sfs_err(SFS_NOTEMPTY, "the %s is not empty",
		               ns.ptr ? "namespace" : "scope");
	pgb_committed(b);
	return SFS_OK;
}

/* --- rename ----------------------------------------------------------------- */

static int same(sfs_slice a, sfs_slice b)
{
	return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* UPDATE table SET scope (and ns) from ($1, $2) to ($3, $4). */
static int move(pgc *c, const char *table, const char *scol,
                const char *extra, sfs_slice scope, sfs_slice ns,
                sfs_slice to_scope, sfs_slice to_ns)
{
	char sql[384];
	pgp p = PGP_INIT;

	if (ns.ptr)
		snprintf(sql, sizeof(sql), "UPDATE %s SET %s = $3, ns = $4 WHERE"
		         " %s = $1 AND ns = $2%s", table, scol, scol, extra);
	else
		snprintf(sql, sizeof(sql), "UPDATE %s SET %s = $2 WHERE %s = $1%s",
		         table, scol, scol, extra);
	pgp_bytes(&p, scope);
	if (ns.ptr)
		pgp_bytes(&p, ns);
	pgp_bytes(&p, to_scope);
	if (ns.ptr)
		pgp_bytes(&p, to_ns);
	return pgb_exec(c, sql, &p, 0, NULL, "renaming");
}

/* Encrypted stores: the values of the moved rows sealed again for their
 * new place and written back in one statement, before the rows move.
 * select gives (ns, key, id, value) of the rows under lock; update takes
 * $1 namespaces, $2 keys, $3 ids and $4 values as arrays, then the
 * scope. */
typedef struct reseal {
	const char *select;
	const char *update;
	int fam;             /* PGB_AD_* */
} reseal;

static int reseal_rows(pgc *c, const reseal *rs, sfs_slice scope,
                       sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns)
{
	PGresult *r;
	pgp p = PGP_INIT;
	sfs_slice *nss = NULL, *keys = NULL, *vals = NULL;
	int64_t *ids = NULL;
	void **owned = NULL;
	int st, n;

	dir_params(&p, scope, ns);
	st = pgb_exec(c, rs->select, &p, 0, &r, "renaming");
	if (st != SFS_OK)
		return st;
	n = PQntuples(r);
	if (n == 0) {
		PQclear(r);
		return SFS_OK;
	}
	nss = calloc((size_t)n, sizeof(*nss));
	keys = calloc((size_t)n, sizeof(*keys));
	vals = calloc((size_t)n, sizeof(*vals));
	ids = calloc((size_t)n, sizeof(*ids));
	owned = calloc((size_t)n, sizeof(*owned));
	if (!nss || !keys || !vals || !ids || !owned)
		st = sfs_err(SFS_NOMEM, "renaming");
	for (int i = 0; i < n && st == SFS_OK; i++) {
		sfs_buf plain = { NULL, 0 };
		pgb_ad from, to;

		nss[i] = pgr_bytes(r, i, 0);
		keys[i] = pgr_bytes(r, i, 1);
		ids[i] = pgr_i64(r, i, 2);
		from = (pgb_ad){ rs->fam, scope, nss[i], keys[i],
		                 rs->fam == PGB_AD_KV ? 0 : ids[i] };
		to = from;
		to.scope = to_scope;
		if (ns.ptr)
			to.ns = to_ns;
		st = pgb_unseal_buf(c->b, &from, pgr_bytes(r, i, 3), &plain);
		if (st == SFS_OK)
			st = pgb_seal(c->b, &to, sfs_bytes(plain.ptr, plain.len),
			              &vals[i], &owned[i]);
		sfs_buf_free(&plain);
	}
	memset(&p, 0, sizeof(p));
	if (st == SFS_OK)
		st = pgp_bytes_array(&p, nss, (size_t)n);
	if (st == SFS_OK)
		st = pgp_bytes_array(&p, keys, (size_t)n);
	if (st == SFS_OK)
		st = pgp_i64_array(&p, ids, NULL, (size_t)n);
	if (st == SFS_OK)
		st = pgp_bytes_array(&p, vals, (size_t)n);
	if (st == SFS_OK) {
		pgp_bytes(&p, scope);
		st = pgb_exec(c, rs->update, &p, 0, NULL, "renaming");
	}
	pgp_free(&p);
	for (int i = 0; owned && i < n; i++)
		free(owned[i]);
	free(owned);
	free(nss);
	free(keys);
	free(vals);
	free(ids);
	PQclear(r);
	return st;
}

static int reseal_family(pgc *c, sfs_family fam, sfs_slice scope,
                         sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns)
{
	/* [0] a whole scope, [1] one namespace ($2) */
	static const reseal kv[2] = {
		{ "SELECT ns, key, 0, value FROM function_state WHERE scope_id = $1"
		  " FOR UPDATE", NULL, PGB_AD_KV },
		{ "SELECT ns, key, 0, value FROM function_state WHERE scope_id = $1"
		  " AND ns = $2 FOR UPDATE", NULL, PGB_AD_KV },
	};
	static const reseal log[2] = {
		{ "SELECT ns, key, id, value FROM function_state_log WHERE"
		  " scope_id = $1 FOR UPDATE", NULL, PGB_AD_LOG },
		{ "SELECT ns, key, id, value FROM function_state_log WHERE"
		  " scope_id = $1 AND ns = $2 FOR UPDATE", NULL, PGB_AD_LOG },
	};
	static const reseal queue[3] = {
		{ "SELECT NULL::bytea, NULL::bytea, id, work_item FROM work_queue"
		  " WHERE execution_id = $1 FOR UPDATE",
		  "UPDATE work_queue w SET work_item = u.v FROM unnest($3::bigint[],"
		  " $4::bytea[]) u(i, v) WHERE w.id = u.i AND w.execution_id = $5"
		  " AND $1::bytea[] IS NOT NULL AND $2::bytea[] IS NOT NULL",
		  PGB_AD_QUEUE },
		{ "SELECT NULL::bytea, NULL::bytea, id, item FROM statefs_inflight"
		  " WHERE queue = $1 FOR UPDATE",
		  "UPDATE statefs_inflight w SET item = u.v FROM unnest($3::bigint[],"
		  " $4::bytea[]) u(i, v) WHERE w.id = u.i AND w.queue = $5"
		  " AND $1::bytea[] IS NOT NULL AND $2::bytea[] IS NOT NULL",
		  PGB_AD_QUEUE },
		{ "SELECT NULL::bytea, NULL::bytea, id, item FROM statefs_dead"
		  " WHERE queue = $1 FOR UPDATE",
		  "UPDATE statefs_dead w SET item = u.v FROM unnest($3::bigint[],"
		  " $4::bytea[]) u(i, v) WHERE w.id = u.i AND w.queue = $5"
		  " AND $1::bytea[] IS NOT NULL AND $2::bytea[] IS NOT NULL",
		  PGB_AD_QUEUE },
	};
	/* the entries drains hold (their claim's scope and ns are theirs) */
	static const reseal taken[2] = {
		{ "SELECT c.ns, t.key, t.id, t.value FROM statefs_kv_taken t JOIN"
		  " statefs_claim c ON c.claim_id = t.claim_id WHERE c.queue = $1"
		  " AND c.ns IS NOT NULL FOR UPDATE OF t", NULL, PGB_AD_KV },
		{ "SELECT c.ns, t.key, t.id, t.value FROM statefs_kv_taken t JOIN"
		  " statefs_claim c ON c.claim_id = t.claim_id WHERE c.queue = $1"
		  " AND c.ns = $2 FOR UPDATE OF t", NULL, PGB_AD_KV },
	};
	static const char taken_update[] =
		"UPDATE statefs_kv_taken t SET value = u.v FROM statefs_claim c,"
		" unnest($1::bytea[], $2::bytea[], $3::bigint[], $4::bytea[])"
		" u(n, k, i, v) WHERE c.claim_id = t.claim_id AND c.queue = $5"
		" AND c.ns = u.n AND t.key = u.k AND t.id = u.i";
	static const char kv_update[] =
		"UPDATE function_state f SET value = u.v FROM unnest($1::bytea[],"
		" $2::bytea[], $4::bytea[]) u(n, k, v) WHERE f.scope_id = $5"
		" AND f.ns = u.n AND f.key = u.k AND $3::bigint[] IS NOT NULL";
	static const char log_update[] =
		"UPDATE function_state_log l SET value = u.v FROM"
		" unnest($3::bigint[], $4::bytea[]) u(i, v) WHERE l.id = u.i"
		" AND l.scope_id = $5 AND $1::bytea[] IS NOT NULL"
		" AND $2::bytea[] IS NOT NULL";
	reseal rs;
	int st = SFS_OK;

	switch (fam) {
	case SFS_FAM_KV:
		rs = kv[ns.ptr != NULL];
		rs.update = kv_update;
		st = reseal_rows(c, &rs, scope, ns, to_scope, to_ns);
		rs = taken[ns.ptr != NULL];
		rs.update = taken_update;
		return st == SFS_OK ? reseal_rows(c, &rs, scope, ns, to_scope,
		                                  to_ns) : st;
	case SFS_FAM_LOG:
		rs = log[ns.ptr != NULL];
		rs.update = log_update;
		return reseal_rows(c, &rs, scope, ns, to_scope, to_ns);
	case SFS_FAM_QUEUE:
		for (int i = 0; i < 3 && st == SFS_OK; i++)
			st = reseal_rows(c, &queue[i], scope, SFS_NONE, to_scope,
			                 SFS_NONE);
		return st;
	default:
		return SFS_OK; /* counters are not sealed */
	}
}

static int rename_body(pgc *c, sfs_family fam, sfs_slice scope, sfs_slice ns,
                       sfs_slice to_scope, sfs_slice to_ns, unsigned flags)
{
	static const char *const rest[] = { "statefs_inflight", "statefs_dead",
		"statefs_queue_policy" };
	const fam_desc *d = FAM(fam);
	const char *what = ns.ptr ? "namespace" : "scope";
	char extra[64];
	int e, st = pgb_begin(c);

	if (st != SFS_OK)
		return st;
	e = dir_test(c, 0, fam, scope, ns);
	if (e <= 0)
		return e < 0 ? -e : sfs_err(SFS_NOTFOUND, "no such %s", what);
	if (same(scope, to_scope) && (!ns.ptr || same(ns, to_ns)))
		return pgb_commit(c);
	e = dir_test(c, 0, fam, to_scope, to_ns);
	if (e < 0)
		return -e;
	if (e) {
		pgp p = PGP_INIT;

		if (flags & SFS_RENAME_NOREPLACE)
			return sfs_err(SFS_EXISTS, "the target %s exists", what);
		e = dir_test(c, 1, fam, to_scope, to_ns);
		if (e < 0)
			return -e;
		if (e)
			return sfs_err(SFS_NOTEMPTY, "the target %s is not empty",
			               what);
		/* the target's own row goes (an empty namespace's, or an empty
		 * scope's), the source's rows take its place */
		pgp_i64(&p, fam);
		pgp_bytes(&p, to_scope);
		pgp_bytes(&p, ns.ptr ? to_ns : sfs_bytes("", 0));
		pgp_i64(&p, ns.ptr != NULL);
		st = pgb_exec(c, "DELETE FROM statefs_dir WHERE family = $1 AND"
		              " scope_id = $2 AND ns = $3 AND has_ns = $4", &p, 0,
		              NULL, "renaming");
		if (st != SFS_OK)
			return st;
	}
	if (c->b->keys)
		st = reseal_family(c, fam, scope, ns, to_scope, to_ns);
	if (st == SFS_OK)
		st = move(c, d->table, d->scol, "", scope, ns, to_scope, to_ns);
	if (st == SFS_OK && d->ttable)
		st = move(c, d->ttable, "scope_id", "", scope, ns, to_scope, to_ns);
	if (st == SFS_OK && fam == SFS_FAM_QUEUE) {
		/* Its claims, in-flight items, dead letters and policy follow;
		 * the (empty) target's policy gives way. */
		pgp p = PGP_INIT;

		pgp_bytes(&p, to_scope);
		st = pgb_exec(c, "DELETE FROM statefs_queue_policy WHERE queue = $1",
		              &p, 0, NULL, "renaming");
		for (size_t i = 0; i < 3 && st == SFS_OK; i++)
			st = move(c, rest[i], "queue", "", scope, SFS_NONE, to_scope,
			          SFS_NONE);
		if (st == SFS_OK)
			st = move(c, "statefs_claim", "queue", " AND ns IS NULL",
			          scope, SFS_NONE, to_scope, SFS_NONE);
	}
	/* Drains in progress put back what they do not deliver where the
	 * namespace is now (their entries were sealed again above). */
	if (st == SFS_OK && fam == SFS_FAM_KV)
		st = move(c, "statefs_claim", "queue", " AND ns IS NOT NULL", scope,
		          ns, to_scope, to_ns);
	/* The directory rows: a scope's own and its namespaces', or the
	 * namespace's own. */
	snprintf(extra, sizeof(extra), " AND family = %d%s", (int)fam,
	         ns.ptr ? " AND has_ns = 1" : "");
	if (st == SFS_OK)
		st = move(c, "statefs_dir", "scope_id", extra, scope, ns, to_scope,
		          to_ns);
	return st == SFS_OK ? pgb_commit(c) : st;
}

int pgb_dir_rename(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                   unsigned flags)
{
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = rename_body(c, fam, scope, ns, to_scope, to_ns, flags);
	}
	if (st == SFS_OK)
		pgb_committed(b);
	return st;
}

/* The names under a directory: the scopes of a family, a scope's
 * namespaces, or the keys of a namespace (a log's keys; a namespace of
 * values or counters lists its keys), as core/sqlite/dir.c lists them. */
/* names (sfs_dir_names) changes nothing here: the server's round trip,
 * not the sizes and times it joins in, is what a listing costs. */
int pgb_dir_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                 sfs_slice ns, sfs_slice after, long limit, int names,
                 sfs_list *out)
{
	sfs_scan_opts o = { .start = after, .end = SFS_NONE,
	                    .start_after = 1, .limit = limit, .keys_only = 1 };

	(void)names;
	if (!scope.ptr)
		return pgb_scope_list(b, fam, after, limit, out);
	if (!ns.ptr)
		return pgb_ns_list(b, fam, scope, after, limit, out);
	if (fam == SFS_FAM_LOG)
		return pgb_log_keys(b, scope, ns, after, limit, out);
	return fam == SFS_FAM_KV ? pgb_kv_scan(b, scope, ns, &o, out)
	                         : pgb_counter_scan(b, scope, ns, &o, out);
}
