/*
 * kv.c - scoped key/value state (function_state) and counters
 * (function_counter) on PostgreSQL.
 *
 * Each write is one statement where it can be: the data row's upsert and
 * its time row's, as two parts of one statement (a data-modifying WITH),
 * committed by itself. The time row changes only when the stored second
 * is older than the server's current one, as in a SQLite store.
 *
 * Counters stay integers on the server, in the clear even in an
 * encrypted store, so an add is one atomic upsert that PostgreSQL
 * serialises on the row; an add whose result leaves bigint fails in the
 * server (numeric_value_out_of_range, SFS_OVERFLOW) and changes nothing.
 *
 * Values are sealed before they leave and opened when they come back
 * (seal.c), bound to (scope, namespace, key): a rename therefore
 * reads the value, opens it, seals it for its new name and writes it, in
 * one transaction, in an encrypted store.
 */
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

static pgb_ad kv_ad(sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	pgb_ad ad = { PGB_AD_KV, scope, ns, key, 0 };

	return ad;
}

/* --- rows of listings (shared by every family) ------------------------------ */

int pgb_rows(const sfs_backend *b, const PGresult *r, pgb_adfn adfn,
             void *ctx, sfs_list *out)
{
	int ncol = PQnfields(r), nrow = PQntuples(r), st = SFS_OK;
	listb lb = LISTB_INIT;
	sfs_item *it;

	for (int i = 0; i < nrow && st == SFS_OK; i++) {
		if (!(it = listb_push(&lb)))
			break;
		it->id = pgr_i64(r, i, 0);
		if (ncol > 2)
			it->st.size = (uint64_t)pgr_i64(r, i, 2);
		if (ncol > 3)
			it->st.mtime_ns = pgr_i64(r, i, 3);
		if (ncol > 4)
			it->st.counter = pgr_i64(r, i, 4);
		if (ncol > 5 && !PQgetisnull(r, i, 5)) {
			sfs_slice k = pgr_bytes(r, i, 5);

			listb_key(&lb, k.ptr, k.len);
		}
		if (ncol > 6)
			it->st.deliveries = pgr_i64(r, i, 6);
		if (ncol > 7)
			it->st.claim_id = pgr_i64(r, i, 7);
		if (ncol > 8)
			it->st.lease_until_ns = pgr_i64(r, i, 8);
		if (ncol > 9 && !PQgetisnull(r, i, 9)) {
			sfs_slice k = pgr_bytes(r, i, 9);

			listb_reason(&lb, k.ptr, k.len);
		}
		if (ncol > 1 && !PQgetisnull(r, i, 1)) {
			pgb_ad ad;

			memset(&ad, 0, sizeof(ad));
			if (adfn)
				adfn(r, i, ctx, &ad);
			st = pgb_unseal_item(b, &ad, pgr_bytes(r, i, 1), &lb);
		}
	}
	if (st != SFS_OK) {
		listb_discard(&lb);
		return st;
	}
	return listb_finish(&lb, out);
}

/* A key/value row's AD: its key is column 5, scope and ns are ctx's. */
typedef struct scope_ns {
	sfs_slice scope, ns;
} scope_ns;

static void kv_row_ad(const PGresult *r, int row, void *ctx, pgb_ad *ad)
{
	scope_ns *sn = ctx;

	*ad = kv_ad(sn->scope, sn->ns, pgr_bytes(r, row, 5));
}

/* --- writes ----------------------------------------------------------------- */

/* One value and its time (flags: PGB_COMMIT when it commits alone). */
static int put_one(pgc *c, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice value, unsigned flags)
{
	pgb_ad ad = kv_ad(scope, ns, key);
	pgp p = PGP_INIT;
	sfs_slice sealed;
	void *owned;
	int st = pgb_seal(c->b, &ad, value, &sealed, &owned);

	if (st != SFS_OK)
		return st;
	key3(&p, scope, ns, key);
	pgp_bytes(&p, sealed);
	pgp_clock(&p);
	st = pgb_exec(c, PGB_SQL_PUT, &p, flags, NULL, "writing a value");
	free(owned);
	return st;
}

/* With SFS_PUT_REPLACE, the namespace's other keys (and their times)
 * go first, in the same transaction. */
static int replace_rest(pgc *c, sfs_slice scope, sfs_slice ns,
                        const sfs_slice *keys, size_t n)
{
	pgp p = PGP_INIT;
	int st;

	pgp_bytes(&p, scope);
	pgp_bytes(&p, ns);
	st = n ? pgp_bytes_array(&p, keys, n) : SFS_OK;
	if (!n)
		pgp_null_array(&p, 1);
	if (st == SFS_OK)
		st = pgb_exec(c, "WITH d AS (DELETE FROM function_state WHERE"
		              " scope_id = $1 AND ns = $2 AND key <> ALL"
		              " (coalesce($3, '{}'::bytea[]))) DELETE FROM"
		              " statefs_kv_time WHERE scope_id = $1 AND ns = $2"
		              " AND key <> ALL (coalesce($3, '{}'::bytea[]))",
		              &p, 0, NULL, "replacing a namespace");
	pgp_free(&p);
	return st;
}

static int put_many_body(pgc *c, sfs_slice scope, sfs_slice ns,
                         const sfs_slice *keys, const sfs_slice *values,
                         size_t n, unsigned flags)
{
	int st;

	if (n == 1 && !(flags & SFS_PUT_REPLACE))
		return put_one(c, scope, ns, keys[0], values[0], PGB_COMMIT);
	st = pgb_begin(c);
	if (st == SFS_OK && (flags & SFS_PUT_REPLACE))
		st = replace_rest(c, scope, ns, keys, n);
	for (size_t i = 0; i < n && st == SFS_OK; i++)
		st = put_one(c, scope, ns, keys[i], values[i], 0);
	return st == SFS_OK ? pgb_commit(c) : st;
}

int pgb_kv_put_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, const sfs_slice *values, size_t n,
                    unsigned flags)
{
	pgc *c;
	int st;

	/* Writing the same values again is the same outcome. */
	PGB_TRY(b, c, st, PGB_IDEMPOTENT) {
		st = put_many_body(c, scope, ns, keys, values, n, flags);
	}
	if (st == SFS_OK)
		pgb_committed(b);
	return st;
}

/* --- reads ------------------------------------------------------------------ */

int pgb_kv_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_buf *out)
{
	sfs_buf v = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;
		pgb_ad ad = kv_ad(scope, ns, key);

		key3(&p, scope, ns, key);
		st = pgb_exec_value(c, PGB_SQL_GET, &p, &ad, &v, "reading a value");
	}
	if (st == SFS_OK)
		*out = v;
	return st;
}

static int get_many_body(pgc *c, sfs_slice scope, sfs_slice ns,
                         const sfs_slice *keys, size_t n, sfs_list *out)
{
	listb lb = LISTB_INIT;
	int st = pgb_begin_snapshot(c); /* one snapshot for every key */

	for (size_t i = 0; i < n && st == SFS_OK; i++) {
		PGresult *r;
		pgp p = PGP_INIT;
		pgb_ad ad = kv_ad(scope, ns, keys[i]);
		sfs_item *it = listb_push(&lb);

		if (!it)
			break;
		listb_key(&lb, keys[i].ptr, keys[i].len);
		key3(&p, scope, ns, keys[i]);
		st = pgb_exec(c, PGB_SQL_GET, &p, 0, &r, "reading values");
		if (st != SFS_OK)
			break;
		if (PQntuples(r)) {
			sfs_slice v = pgr_bytes(r, 0, 0);

			lb.items[lb.n - 1].st.size =
			        (uint64_t)pgb_plain_len(c->b, v.len);
			st = pgb_unseal_item(c->b, &ad, v, &lb);
		}
		PQclear(r);
	}
	if (st == SFS_OK)
		st = pgb_commit(c);
	if (st != SFS_OK) {
		listb_discard(&lb);
		return st;
	}
	return listb_finish(&lb, out);
}

int pgb_kv_get_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, size_t n, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = get_many_body(c, scope, ns, keys, n, &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

#define KV_STAT                                                            \
	"SELECT sfs_len(f.value), coalesce(t.mtime_ns, 0) FROM function_state" \
	" f LEFT JOIN statefs_kv_time t ON t.scope_id = f.scope_id"         \
	" AND t.ns = f.ns AND t.key = f.key WHERE f.scope_id = $1"          \
	" AND f.ns = $2 AND f.key = $3"

int pgb_kv_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_stat *out)
{
	uint64_t sz = 0;
	int64_t mt = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		st = pgb_exec_stat(c, KV_STAT, &p, &sz, &mt,
		                   "reading a value's size");
	}
	if (st == SFS_OK) {
		memset(out, 0, sizeof(*out));
		out->size = sz;
		out->mtime_ns = mt;
	}
	return st;
}

/* --- parts of a value ------------------------------------------------------ */

/* A value is sealed whole (seal.c), so a part of it cannot be read
 * or changed on the server: an edit reads the value under a row lock,
 * applies the list in memory and writes it back sealed, all in one
 * transaction, and a ranged read opens the whole value and copies the
 * range. The SQLite backend's in-place BLOB I/O has no equivalent here;
 * what is kept is what callers rely on: an edit is atomic against every
 * other writer on every host. */

#define KV_LOCK "SELECT value FROM function_state WHERE " KEYEQ " FOR UPDATE"
#define KV_CREATE                                                          \
	"INSERT INTO function_state (scope_id, ns, key, value)"            \
	" VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key) DO NOTHING"

/* Makes v (malloc'd, v->len bytes) at least len bytes long, the new
 * bytes zero. */
static int grow(sfs_buf *v, uint64_t len)
{
	unsigned char *p;

	if (len <= v->len)
		return SFS_OK;
	if (!(p = realloc(v->ptr, (size_t)len + 1)))
		return sfs_err(SFS_NOMEM, "editing a value of %llu bytes",
		               (unsigned long long)len);
	memset(p + v->len, 0, (size_t)(len - v->len) + 1);
	v->ptr = p;
	v->len = (size_t)len;
	return SFS_OK;
}

/* Applies the edit list to v in memory, each step's length checked
 * against max_value (as the SQLite backend checks it). */
static int apply_edits(sfs_buf *v, const sfs_edit *e, size_t n,
                       uint64_t max_value)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t at = e[i].op == SFS_EDIT_APPEND ? v->len : e[i].off;
		uint64_t end = e[i].op == SFS_EDIT_TRUNCATE
		                       ? e[i].off : at + e[i].bytes.len;
		int st;

		if (e[i].op != SFS_EDIT_TRUNCATE && end < v->len)
			end = v->len;
		if (end > max_value)
			return sfs_err(SFS_TOOBIG, "the value would be %llu bytes,"
			               " more than the store's limit of %llu",
			               (unsigned long long)end,
			               (unsigned long long)max_value);
		if (e[i].op == SFS_EDIT_TRUNCATE && end < v->len) {
			v->len = (size_t)end;
			continue;
		}
		if ((st = grow(v, end)) != SFS_OK)
			return st;
		if (e[i].op != SFS_EDIT_TRUNCATE && e[i].bytes.len)
			memcpy((unsigned char *)v->ptr + at, e[i].bytes.ptr,
			       e[i].bytes.len);
	}
	return SFS_OK;
}

static int edit_body(pgc *c, sfs_slice scope, sfs_slice ns, sfs_slice key,
                     const sfs_edit *e, size_t n, unsigned flags,
                     uint64_t max_value, uint64_t *size)
{
	pgb_ad ad = kv_ad(scope, ns, key);
	sfs_buf v = { NULL, 0 };
	pgp p = PGP_INIT;
	int st = pgb_begin(c);

	if (st == SFS_OK && (flags & SFS_EDIT_CREATE)) {
		/* An absent key gets a row first, so that the lock below holds
		 * against a concurrent creator too. */
		sfs_slice sealed;
		void *owned;

		int64_t made = 0;

		st = pgb_seal(c->b, &ad, sfs_bytes("", 0), &sealed, &owned);
		if (st == SFS_OK) {
			key3(&p, scope, ns, key);
			pgp_bytes(&p, sealed);
			st = pgb_exec_int(c, KV_CREATE " RETURNING 1", &p, 0,
			                  &made, "creating a value");
			free(owned);
		}
		if (st == SFS_OK && !made && (flags & SFS_EDIT_EXCL))
			st = sfs_err(SFS_EXISTS, "the key exists");
	}
	if (st == SFS_OK) {
		pgp q = PGP_INIT;

		key3(&q, scope, ns, key);
		st = pgb_exec_value(c, KV_LOCK, &q, &ad, &v,
		                    "reading a value to edit");
		if (st == SFS_NOTFOUND)
			st = sfs_err(SFS_NOTFOUND, "no such key");
	}
	if (st == SFS_OK)
		st = apply_edits(&v, e, n, max_value);
	if (st == SFS_OK)
		st = put_one(c, scope, ns, key, sfs_bytes(v.ptr, v.len), 0);
	if (st == SFS_OK)
		st = pgb_commit(c);
	if (st == SFS_OK)
		*size = v.len;
	sfs_buf_free(&v);
	return st;
}

int pgb_kv_edit(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                const sfs_edit *edits, size_t n, unsigned flags,
                uint64_t max_value, uint64_t *size)
{
	uint64_t sz = 0;
	pgc *c;
	int st;

	/* An append run twice is two appends: not idempotent. */
	PGB_TRY(b, c, st, 0) {
		st = edit_body(c, scope, ns, key, edits, n, flags, max_value,
		               &sz);
	}
	if (st != SFS_OK)
		return st;
	pgb_committed(b);
	if (size)
		*size = sz;
	return SFS_OK;
}

int pgb_kv_read(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t off, size_t len, sfs_buf *out, uint64_t *size)
{
	sfs_buf v = { NULL, 0 };
	size_t n = 0;
	int st = pgb_kv_get(b, scope, ns, key, &v);

	if (st != SFS_OK)
		return st;
	if (off < v.len) {
		n = v.len - off < len ? v.len - (size_t)off : len;
		memmove(v.ptr, (unsigned char *)v.ptr + off, n);
	}
	((unsigned char *)v.ptr)[n] = 0;
	if (size)
		*size = v.len;
	v.len = n;
	*out = v;
	return SFS_OK;
}

/* --- deletes ---------------------------------------------------------------- */

/* Deletes one row and its time row in one statement (sql); SFS_NOTFOUND
 * when there was no row. */
static int delete_one(sfs_backend *b, const char *sql, sfs_slice scope,
                      sfs_slice ns, sfs_slice key)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	key3(&p, scope, ns, key);
	st = pgb_run_int(b, sql, &p, PGB_COMMIT, &n, "deleting");
	return st != SFS_OK ? st : n ? SFS_OK : SFS_NOTFOUND;
}

int pgb_kv_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key)
{
	return delete_one(b, "WITH d AS (DELETE FROM function_state WHERE "
	                  KEYEQ " RETURNING 1), t AS (DELETE FROM statefs_kv_time"
	                  " WHERE " KEYEQ ") SELECT count(*) FROM d", scope, ns,
	                  key);
}

int pgb_kv_set_mtime(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t mtime_ns)
{
	pgc *c;
	int64_t n = 0;
	int st;

	PGB_TRY(b, c, st, PGB_IDEMPOTENT) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, mtime_ns);
		st = pgb_exec_int(c, "WITH k AS (SELECT 1 FROM function_state"
		        " WHERE " KEYEQ " FOR KEY SHARE), t AS (INSERT INTO"
		        " statefs_kv_time (scope_id, ns, key, mtime_ns) SELECT $1,"
		        " $2, $3, $4 FROM k ON CONFLICT (scope_id, ns, key) DO"
		        " UPDATE SET mtime_ns = excluded.mtime_ns) SELECT count(*)"
		        " FROM k", &p, PGB_COMMIT, &n, "setting a value's time");
	}
	if (st != SFS_OK)
		return st;
	if (!n)
		return sfs_err(SFS_NOTFOUND, "no such key");
	pgb_committed(b);
	return SFS_OK;
}

/* The bounds of a range as SQL text, parameters $first and on; after:
 * the start is exclusive. */
static void range_sql(char *out, size_t len, const char *col,
                      sfs_slice start, int after, sfs_slice end, int first)
{
	int n = first, o = 0;

	out[0] = '\0';
	if (start.ptr)
		o = snprintf(out, len, " AND %s %s $%d", col, after ? ">" : ">=",
		             n++);
	if (end.ptr && o >= 0 && (size_t)o < len)
		snprintf(out + o, len - (size_t)o, " AND %s < $%d", col, n);
}

int pgb_kv_delete_range(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count)
{
	char where[128], sql[512];
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	range_sql(where, sizeof(where), "key", start, 0, end, 3);
	snprintf(sql, sizeof(sql), "WITH d AS (DELETE FROM function_state"
	         " WHERE scope_id = $1 AND ns = $2%s RETURNING 1),"
	         " t AS (DELETE FROM statefs_kv_time WHERE scope_id = $1"
	         " AND ns = $2%s) SELECT count(*) FROM d", where, where);
	pgp_bytes(&p, scope);
	pgp_bytes(&p, ns);
	if (start.ptr)
		pgp_bytes(&p, start);
	if (end.ptr)
		pgp_bytes(&p, end);
	st = pgb_run_int(b, sql, &p, PGB_COMMIT, &n, "deleting a range");
	if (st == SFS_OK && count)
		*count = (uint64_t)n;
	return st;
}

/* --- scans ------------------------------------------------------------------ */

/* Variant bits: start bound, end bound, descending, keys only. Columns
 * as pgb_rows reads them: id, value, size, mtime, counter, key. */
static int scan_body(pgc *c, int counters, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *o, sfs_list *out)
{
	const char *table = counters ? "function_counter" : "function_state";
	const char *ttable = counters ? "statefs_counter_time"
	                              : "statefs_kv_time";
	char where[128], sql[768];
	scope_ns sn = { scope, ns };
	PGresult *r;
	pgp p = PGP_INIT;
	int st, n;

	range_sql(where, sizeof(where), "f.key", o->start, o->start_after,
	          o->end, 3);
	n = 3 + !!o->start.ptr + !!o->end.ptr;
	if (counters) /* id, value, size, mtime, n, key */
		snprintf(sql, sizeof(sql), "SELECT 0::bigint, NULL::bytea,"
		         " 0::bigint, coalesce(t.mtime_ns, 0), f.n, f.key FROM %s f"
		         " LEFT JOIN %s t ON t.scope_id = f.scope_id AND t.ns = f.ns"
		         " AND t.key = f.key WHERE f.scope_id = $1 AND f.ns = $2%s"
		         " ORDER BY f.key%s LIMIT $%d", table, ttable, where,
		         o->reverse ? " DESC" : "", n);
	else
		snprintf(sql, sizeof(sql), "SELECT 0::bigint, %s, coalesce("
		         "t.mtime_ns, 0), 0::bigint, f.key FROM %s f LEFT JOIN %s t"
		         " ON t.scope_id = f.scope_id AND t.ns = f.ns"
		         " AND t.key = f.key WHERE f.scope_id = $1 AND f.ns = $2%s"
		         " ORDER BY f.key%s LIMIT $%d",
		         o->keys_only ? "NULL::bytea, sfs_len(f.value)"
		                      : "f.value, sfs_len(f.value)",
		         table, ttable, where, o->reverse ? " DESC" : "", n);
	pgp_bytes(&p, scope);
	pgp_bytes(&p, ns);
	if (o->start.ptr)
		pgp_bytes(&p, o->start);
	if (o->end.ptr)
		pgp_bytes(&p, o->end);
	if (o->limit > 0)
		pgp_i64(&p, o->limit);
	else
		pgp_null_i64(&p); /* LIMIT NULL: all */
	st = pgb_exec(c, sql, &p, 0, &r, "reading entries");
	if (st != SFS_OK)
		return st;
	st = pgb_rows(c->b, r, kv_row_ad, &sn, out);
	PQclear(r);
	return st;
}

static int scan(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *o, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = scan_body(c, counters, scope, ns, o, &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

int pgb_kv_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *o, sfs_list *out)
{
	return scan(b, 0, scope, ns, o, out);
}

int pgb_counter_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *o, sfs_list *out)
{
	return scan(b, 1, scope, ns, o, out);
}

/* --- drain and restore ------------------------------------------------------ */

/* Drain: one statement reads and removes the namespace, so nothing is
 * returned twice or lost to a concurrent writer (a key written after the
 * statement began stays, as written after the drain). Should a value not
 * open, every row goes back in a second statement and the drain fails:
 * a damaged store is reported, never emptied. */
static int drain_body(pgc *c, sfs_slice scope, sfs_slice ns, sfs_list *out)
{
	scope_ns sn = { scope, ns };
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	pgp_bytes(&p, scope);
	pgp_bytes(&p, ns);
	st = pgb_exec(c, "WITH d AS (DELETE FROM function_state WHERE"
	        " scope_id = $1 AND ns = $2 RETURNING key, value),"
	        " t AS (DELETE FROM statefs_kv_time WHERE scope_id = $1"
	        " AND ns = $2 RETURNING key, mtime_ns)"
	        " SELECT 0::bigint, d.value, sfs_len(d.value),"
	        " coalesce(t.mtime_ns, 0), 0::bigint, d.key"
	        " FROM d LEFT JOIN t ON t.key = d.key ORDER BY d.key", &p,
	        PGB_COMMIT, &r, "draining");
	if (st != SFS_OK)
		return st;
	st = pgb_rows(c->b, r, kv_row_ad, &sn, out);
	if (st == SFS_CORRUPT) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
		for (int i = 0; i < PQntuples(r); i++) {
			pgp q = PGP_INIT;

			key3(&q, scope, ns, pgr_bytes(r, i, 5));
			pgp_bytes(&q, pgr_bytes(r, i, 1));
			pgp_i64(&q, pgr_i64(r, i, 3));
			pgb_exec(c, "WITH t AS (INSERT INTO statefs_kv_time (scope_id,"
			         " ns, key, mtime_ns) SELECT $1, $2, $3, $5 WHERE $5 <> 0"
			         " ON CONFLICT DO NOTHING) INSERT INTO function_state"
			         " (scope_id, ns, key, value) VALUES ($1, $2, $3, $4)"
			         " ON CONFLICT DO NOTHING", &q, 0, NULL,
			         "putting drained values back");
		}
		st = sfs_err(SFS_CORRUPT, "%s; nothing was drained", detail);
	}
	PQclear(r);
	return st;
}

int pgb_kv_drain(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = drain_body(c, scope, ns, &l);
	}
	if (st == SFS_OK) {
		if (l.n)
			pgb_committed(b);
		*out = l;
	}
	return st;
}

/* --- rename ----------------------------------------------------------------- */

static int same(sfs_slice a, sfs_slice b)
{
	return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* Whether (scope, ns, key) holds a value: 1, 0, or -status. With lock,
 * its row is locked for this transaction and its sealed value put in
 * *r (the caller PQclears it). */
static int kv_row(pgc *c, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  int lock, PGresult **res)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	key3(&p, scope, ns, key);
	st = pgb_exec(c, lock ? "SELECT value FROM function_state WHERE " KEYEQ
	              " FOR UPDATE" : "SELECT 1 FROM function_state WHERE " KEYEQ,
	              &p, 0, &r, "looking up a key");
	if (st != SFS_OK)
		return -st;
	st = PQntuples(r) > 0;
	if (res && st)
		*res = r;
	else
		PQclear(r);
	return st;
}

/* Rename keeps the value's time, as rename(2) keeps a file's mtime. */
static int rename_body(pgc *c, sfs_slice scope, sfs_slice ns, sfs_slice key,
                       sfs_slice to_scope, sfs_slice to_ns, sfs_slice to_key,
                       unsigned flags)
{
	pgb_ad from = kv_ad(scope, ns, key), to = kv_ad(to_scope, to_ns, to_key);
	PGresult *r = NULL;
	sfs_buf plain = { NULL, 0 };
	sfs_slice sealed = SFS_NONE;
	void *owned = NULL;
	pgp p = PGP_INIT;
	int st = pgb_begin(c), e;

	if (st != SFS_OK)
		return st;
	e = kv_row(c, scope, ns, key, 1, &r);
	if (e <= 0)
		return e < 0 ? -e : SFS_NOTFOUND;
	if (same(scope, to_scope) && same(ns, to_ns) && same(key, to_key)) {
		PQclear(r);
		return pgb_commit(c);
	}
	if (c->b->keys) {
		st = pgb_unseal_buf(c->b, &from, pgr_bytes(r, 0, 0), &plain);
		if (st == SFS_OK)
			st = pgb_seal(c->b, &to, sfs_bytes(plain.ptr, plain.len),
			              &sealed, &owned);
		sfs_buf_free(&plain);
	}
	PQclear(r);
	if (st == SFS_OK && (flags & SFS_RENAME_NOREPLACE)) {
		e = kv_row(c, to_scope, to_ns, to_key, 0, NULL);
		if (e < 0)
			st = -e;
		else if (e)
			st = sfs_err(SFS_EXISTS, "the target key exists");
	}
	key3(&p, to_scope, to_ns, to_key);
	if (st == SFS_OK)
		st = pgb_exec(c, "WITH d AS (DELETE FROM function_state WHERE "
		              KEYEQ ") DELETE FROM statefs_kv_time WHERE " KEYEQ,
		              &p, 0, NULL, "renaming");
	pgp_free(&p);
	memset(&p, 0, sizeof(p));
	key3(&p, scope, ns, key);
	key3(&p, to_scope, to_ns, to_key);
	pgp_bytes(&p, sealed); /* NULL in a plaintext store: value stays */
	if (st == SFS_OK)
		st = pgb_exec(c, "WITH t AS (UPDATE statefs_kv_time SET scope_id = $4,"
		              " ns = $5, key = $6 WHERE " KEYEQ ") UPDATE"
		              " function_state SET scope_id = $4, ns = $5, key = $6,"
		              " value = coalesce($7, value) WHERE " KEYEQ, &p, 0, NULL,
		              "renaming");
	free(owned);
	return st == SFS_OK ? pgb_commit(c) : st;
}

/* --- counters --------------------------------------------------------------- */

int pgb_counter_get(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t *value, int64_t *mtime_ns)
{
	int64_t v = 0, mt = 0;
	int found = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		st = pgb_exec(c, "SELECT f.n, coalesce(t.mtime_ns, 0) FROM"
		              " function_counter f LEFT JOIN statefs_counter_time t"
		              " ON t.scope_id = f.scope_id AND t.ns = f.ns AND"
		              " t.key = f.key WHERE f.scope_id = $1 AND f.ns = $2"
		              " AND f.key = $3", &p, 0, &r, "reading a counter");
		if (st == SFS_OK) {
			found = PQntuples(r) > 0;
			v = found ? pgr_i64(r, 0, 0) : 0;
			mt = found ? pgr_i64(r, 0, 1) : 0;
			PQclear(r);
		}
	}
	if (st == SFS_OK && !found)
		return SFS_NOTFOUND;
	if (st == SFS_OK) {
		*value = v;
		*mtime_ns = mt;
	}
	return st;
}

int pgb_counter_add(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t delta, int64_t *value)
{
	int64_t v = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, delta);
		pgp_clock(&p);
		st = pgb_exec_int(c, PGB_SQL_CTR_ADD, &p, PGB_COMMIT, &v,
		                  "adding to a counter");
	}
	if (st == SFS_OVERFLOW)
		return sfs_err(SFS_OVERFLOW, "adding %lld leaves int64",
		               (long long)delta);
	if (st == SFS_OK) {
		pgb_committed(b);
		if (value)
			*value = v;
	}
	return st;
}

int pgb_counter_set(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t value, int excl)
{
	int64_t made = 1;
	pgc *c;
	int st;

	/* A create whose outcome is unknown is not run again: the second
	 * run would find its own counter and say it exists. */
	PGB_TRY(b, c, st, excl ? 0 : PGB_IDEMPOTENT) {
		pgp p = PGP_INIT;

		key3(&p, scope, ns, key);
		pgp_i64(&p, value);
		pgp_clock(&p);
		if (excl)
			st = pgb_exec_int(c, "WITH c AS (INSERT INTO"
			        " function_counter (scope_id, ns, key, n) VALUES"
			        " ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key)"
			        " DO NOTHING RETURNING 1), t AS (INSERT INTO"
			        " statefs_counter_time (scope_id, ns, key, mtime_ns)"
			        " SELECT $1, $2, $3, sfs_mtime($5) FROM c ON CONFLICT"
			        " (scope_id, ns, key) DO UPDATE SET mtime_ns ="
			        " excluded.mtime_ns) SELECT count(*) FROM c", &p,
			        PGB_COMMIT, &made, "creating a counter");
		else
			st = pgb_exec(c, PGB_SQL_CTR_TIME "INSERT INTO"
			        " function_counter (scope_id, ns, key, n) VALUES"
			        " ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key)"
			        " DO UPDATE SET n = excluded.n", &p, PGB_COMMIT, NULL,
			        "setting a counter");
	}
	if (st != SFS_OK)
		return st;
	if (!made)
		return sfs_err(SFS_EXISTS, "the counter exists");
	pgb_committed(b);
	return SFS_OK;
}

/* A counter's rename keeps its time, as a value's does. */
static int counter_rename_body(pgc *c, sfs_slice scope, sfs_slice ns,
                               sfs_slice key, sfs_slice to_scope,
                               sfs_slice to_ns, sfs_slice to_key,
                               unsigned flags)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st = pgb_begin(c), found;

	if (st != SFS_OK)
		return st;
	key3(&p, scope, ns, key);
	key3(&p, to_scope, to_ns, to_key);
	/* the source (locked) and whether the target exists */
	st = pgb_exec(c, "SELECT (SELECT 1 FROM function_counter WHERE " KEYEQ
	              " FOR UPDATE), (SELECT count(*) FROM function_counter"
	              " WHERE scope_id = $4 AND ns = $5 AND key = $6)", &p, 0,
	              &r, "looking up a counter");
	if (st == SFS_OK) {
		found = !PQgetisnull(r, 0, 0);
		if (!found)
			st = SFS_NOTFOUND;
		else if ((flags & SFS_RENAME_NOREPLACE) &&
		         pgr_i64(r, 0, 1) > 0 &&
		         !(same(scope, to_scope) && same(ns, to_ns) &&
		           same(key, to_key)))
			st = sfs_err(SFS_EXISTS, "the target counter exists");
		PQclear(r);
	}
	pgp_free(&p);
	if (st != SFS_OK || (same(scope, to_scope) && same(ns, to_ns) &&
	                     same(key, to_key)))
		return st == SFS_OK ? pgb_commit(c) : st;
	/* the target goes first: the moved rows take its keys */
	memset(&p, 0, sizeof(p));
	key3(&p, to_scope, to_ns, to_key);
	st = pgb_exec(c, "WITH d AS (DELETE FROM function_counter WHERE " KEYEQ
	              ") DELETE FROM statefs_counter_time WHERE " KEYEQ, &p, 0,
	              NULL, "renaming");
	pgp_free(&p);
	memset(&p, 0, sizeof(p));
	key3(&p, scope, ns, key);
	key3(&p, to_scope, to_ns, to_key);
	if (st == SFS_OK)
		st = pgb_exec(c, "WITH t AS (UPDATE statefs_counter_time SET"
		              " scope_id = $4, ns = $5, key = $6 WHERE " KEYEQ ")"
		              " UPDATE function_counter SET scope_id = $4, ns = $5,"
		              " key = $6 WHERE " KEYEQ, &p, 0, NULL, "renaming");
	pgp_free(&p);
	return st == SFS_OK ? pgb_commit(c) : st;
}

/* RENAME_EXCHANGE of two values (counters 0) or two counters: both rows
 * locked, their contents and times swapped in one transaction; an
 * encrypted value is sealed again for its new name (a value's seal is
 * bound to its name). */
#define KEYEQ_B "scope_id = $4 AND ns = $5 AND key = $6"
static int exchange_body(pgc *c, int counters, sfs_slice scope, sfs_slice ns,
                         sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                         sfs_slice to_key)
{
	pgb_ad ad[2] = { kv_ad(scope, ns, key), kv_ad(to_scope, to_ns, to_key) };
	sfs_slice v[2] = { SFS_NONE, SFS_NONE }, out[2] = { SFS_NONE, SFS_NONE };
	void *owned[2] = { NULL, NULL };
	int64_t n[2] = { 0, 0 }, t[2] = { 0, 0 };
	int have[2] = { 0, 0 };
	PGresult *r = NULL;
	pgp p = PGP_INIT;
	int st = pgb_begin(c);

	if (st != SFS_OK)
		return st;
	key3(&p, scope, ns, key);
	key3(&p, to_scope, to_ns, to_key);
	st = pgb_exec(c, counters
	        ? "SELECT f.scope_id = $1 AND f.ns = $2 AND f.key = $3, f.n,"
	          " coalesce(t.mtime_ns, 0) FROM function_counter f LEFT JOIN"
	          " statefs_counter_time t ON t.scope_id = f.scope_id AND"
	          " t.ns = f.ns AND t.key = f.key WHERE (f.scope_id = $1 AND"
	          " f.ns = $2 AND f.key = $3) OR"
	          " (f.scope_id = $4 AND f.ns = $5 AND f.key = $6) FOR UPDATE OF f"
	        : "SELECT f.scope_id = $1 AND f.ns = $2 AND f.key = $3, f.value,"
	          " coalesce(t.mtime_ns, 0) FROM function_state f LEFT JOIN"
	          " statefs_kv_time t ON t.scope_id = f.scope_id AND"
	          " t.ns = f.ns AND t.key = f.key WHERE (f.scope_id = $1 AND"
	          " f.ns = $2 AND f.key = $3) OR"
	          " (f.scope_id = $4 AND f.ns = $5 AND f.key = $6) FOR UPDATE OF f",
	        &p, 0, &r, counters ? "looking up counters" : "looking up keys");
	pgp_free(&p);
	if (st != SFS_OK)
		return st;
	for (int i = 0; i < PQntuples(r); i++) {
		int which = pgr_i64(r, i, 0) ? 0 : 1;

		have[which] = 1;
		if (counters)
			n[which] = pgr_i64(r, i, 1);
		else
			v[which] = pgr_bytes(r, i, 1);
		t[which] = pgr_i64(r, i, 2);
	}
	if (!have[0])
		st = SFS_NOTFOUND;
	else if (!have[1])
		st = sfs_err(SFS_NOTFOUND, counters ? "the counter to exchange "
		             "with does not exist" : "the key to exchange with "
		             "does not exist");
	/* each name's new content: the other's, sealed for it */
	for (int i = 0; i < 2 && st == SFS_OK && !counters; i++) {
		sfs_buf plain = { NULL, 0 };

		if (!c->b->keys) {
			out[i] = v[1 - i];
			continue;
		}
		st = pgb_unseal_buf(c->b, &ad[1 - i], v[1 - i], &plain);
		if (st == SFS_OK)
			st = pgb_seal(c->b, &ad[i], sfs_bytes(plain.ptr, plain.len),
			              &out[i], &owned[i]);
		sfs_buf_free(&plain);
	}
	if (st == SFS_OK) {
		memset(&p, 0, sizeof(p));
		key3(&p, scope, ns, key);
		key3(&p, to_scope, to_ns, to_key);
		if (counters) {
			pgp_i64(&p, n[1]);
			pgp_i64(&p, n[0]);
		} else {
			pgp_bytes(&p, out[0]);
			pgp_bytes(&p, out[1]);
		}
		st = pgb_exec(c, counters
		        ? "UPDATE function_counter SET n = CASE WHEN " KEYEQ
		          " THEN $7 ELSE $8 END WHERE (" KEYEQ ") OR (" KEYEQ_B ")"
		        : "UPDATE function_state SET value = CASE WHEN " KEYEQ
		          " THEN $7 ELSE $8 END WHERE (" KEYEQ ") OR (" KEYEQ_B ")",
		        &p, 0, NULL, "exchanging");
		pgp_free(&p);
	}
	if (st == SFS_OK) {
		/* a time row absent reads as 0: it may be made so */
		memset(&p, 0, sizeof(p));
		key3(&p, scope, ns, key);
		key3(&p, to_scope, to_ns, to_key);
		pgp_i64(&p, t[1]);
		pgp_i64(&p, t[0]);
		st = pgb_exec(c, counters
		        ? "INSERT INTO statefs_counter_time (scope_id, ns, key,"
		          " mtime_ns) VALUES ($1, $2, $3, $7), ($4, $5, $6, $8)"
		          " ON CONFLICT (scope_id, ns, key) DO UPDATE SET mtime_ns ="
		          " excluded.mtime_ns"
		        : "INSERT INTO statefs_kv_time (scope_id, ns, key,"
		          " mtime_ns) VALUES ($1, $2, $3, $7), ($4, $5, $6, $8)"
		          " ON CONFLICT (scope_id, ns, key) DO UPDATE SET mtime_ns ="
		          " excluded.mtime_ns",
		        &p, 0, NULL, "exchanging");
		pgp_free(&p);
	}
	PQclear(r);
	free(owned[0]);
	free(owned[1]);
	return st == SFS_OK ? pgb_commit(c) : st;
}
#undef KEYEQ_B

/* A value's rename (counters 0) or a counter's, with retries. */
static int rename_any(sfs_backend *b, int counters, sfs_slice scope,
                      sfs_slice ns, sfs_slice key, sfs_slice to_scope,
                      sfs_slice to_ns, sfs_slice to_key, unsigned flags)
{
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		if ((flags & SFS_RENAME_EXCHANGE) &&
		    !(same(scope, to_scope) && same(ns, to_ns) && same(key, to_key)))
			st = exchange_body(c, counters, scope, ns, key, to_scope,
			                   to_ns, to_key);
		else
			st = (counters ? counter_rename_body : rename_body)(c, scope,
			        ns, key, to_scope, to_ns, to_key,
			        flags & ~(unsigned)SFS_RENAME_EXCHANGE);
	}
	if (st == SFS_OK)
		pgb_committed(b);
	return st;
}

int pgb_kv_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                  sfs_slice to_key, unsigned flags)
{
	return rename_any(b, 0, scope, ns, key, to_scope, to_ns, to_key, flags);
}

int pgb_counter_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                       sfs_slice to_key, unsigned flags)
{
	return rename_any(b, 1, scope, ns, key, to_scope, to_ns, to_key, flags);
}

int pgb_counter_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       sfs_slice key)
{
	return delete_one(b, "WITH d AS (DELETE FROM function_counter WHERE "
	                  KEYEQ " RETURNING 1), t AS (DELETE FROM"
	                  " statefs_counter_time WHERE " KEYEQ ") SELECT count(*)"
	                  " FROM d", scope, ns, key);
}
