/*
 * dir.c - scopes and namespaces as directories: listing them, explicit
 * empty ones (statefs_dir), and renaming a whole scope or namespace.
 *
 * A scope or namespace of a family exists while a row of that family's
 * table carries it, or while statefs_dir holds it. Listings walk the data
 * table's index one distinct value at a time (seek past the last one)
 * merged with statefs_dir, so listing N scopes costs N index seeks however
 * many rows each holds. A scope-only row (has_ns 0) and the namespace named
 * "" (has_ns 1, ns x'') are different rows: a scope can be explicit without
 * holding any namespace.
 *
 * A queue exists while it holds pending items, in-flight items (under a
 * claim) or dead letters (claim.c), or is explicit; renaming it moves
 * all of them, its claims and its policy along.
 */
#include <stdio.h>
#include <string.h>

#include "sqlite_i.h"

typedef struct fam_desc {
	const char *table;   /* the family's data table */
	const char *scol;    /* its scope column */
	const char *ttable;  /* its (scope, ns, key) time table, or NULL */
	int has_ns;
} fam_desc;

static const fam_desc fams[4] = {
	{ "function_state", "scope_id", "statefs_kv_time", 1 },
	{ "function_counter", "scope_id", "statefs_counter_time", 1 },
	{ "function_state_log", "scope_id", NULL, 1 },
	{ "work_queue", "execution_id", NULL, 0 },
};

#define FAM(f) (&fams[(f) - 1])

/* The next scope after ?1 (variant 1) or the first (variant 0). */
static sqlite3_stmt *next_scope_stmt(sfs_backend *b, sfs_family fam, int nx,
                                     int *status)
{
	int slot = ST_DIR_NEXT_SCOPE + (fam - 1) * 2 + nx;
	const fam_desc *d = FAM(fam);
	char sql[1024], claimed[256] = "";

	if (b->st[slot])
		return b->st[slot];
	if (fam == SFS_FAM_QUEUE)
		snprintf(claimed, sizeof(claimed), " UNION ALL SELECT (SELECT"
		         " queue FROM statefs_inflight%s ORDER BY queue LIMIT 1)"
		         " UNION ALL SELECT (SELECT queue FROM statefs_dead%s"
		         " ORDER BY queue LIMIT 1)", nx ? " WHERE queue>?1" : "",
		         nx ? " WHERE queue>?1" : "");
	snprintf(sql, sizeof(sql),
	         "SELECT min(s) FROM (SELECT (SELECT %s FROM %s%s ORDER BY %s"
	         " LIMIT 1) AS s UNION ALL SELECT (SELECT scope FROM"
	         " statefs_dir WHERE family=%d%s ORDER BY scope LIMIT 1)%s)",
	         d->scol, d->table, nx ? (fam == SFS_FAM_QUEUE
	                                  ? " WHERE execution_id>?1"
	                                  : " WHERE scope_id>?1") : "",
	         d->scol, (int)fam, nx ? " AND scope>?1" : "", claimed);
	return sqlb_stmt(b, slot, sql, status);
}

static sqlite3_stmt *next_ns_stmt(sfs_backend *b, sfs_family fam, int nx,
                                  int *status)
{
	int slot = ST_DIR_NEXT_NS + (fam - 1) * 2 + nx;
	const fam_desc *d = FAM(fam);
	char sql[512];

	if (b->st[slot])
		return b->st[slot];
	snprintf(sql, sizeof(sql),
	         "SELECT min(s) FROM (SELECT (SELECT ns FROM %s WHERE"
	         " scope_id=?1%s ORDER BY ns LIMIT 1) AS s UNION ALL SELECT"
	         " (SELECT ns FROM statefs_dir WHERE family=%d AND scope=?1"
	         " AND has_ns=1%s ORDER BY ns LIMIT 1))",
	         d->table, nx ? " AND ns>?2" : "", (int)fam,
	         nx ? " AND ns>?2" : "");
	return sqlb_stmt(b, slot, sql, status);
}

/* Walks distinct values: first/next statements, scope bound as ?1 when
 * listing namespaces (then the cursor is ?2). */
static int walk(sfs_backend *b, sqlite3_stmt *first, sqlite3_stmt *next,
                const sfs_slice *scope, sfs_slice after, long limit,
                sfs_list *out)
{
	int cur_i = scope ? 2 : 1;
	listb lb = LISTB_INIT;
	sfs_slice cur = after;
	int rc = SQLITE_DONE, status;

	status = sqlb_begin_read(b);
	if (status != SFS_OK)
		return status;
	for (long i = 0; limit <= 0 || i < limit; i++) {
		sqlite3_stmt *st = cur.ptr ? next : first;
		const void *p;
		size_t n;

		if (scope)
			sqlb_bind(st, 1, *scope);
		if (cur.ptr)
			sqlb_bind(st, cur_i, cur);
		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL) {
			sqlite3_reset(st);
			if (rc == SQLITE_ROW)
				rc = SQLITE_DONE;
			break;
		}
		p = sqlb_col(st, 0, &n);
		if (listb_push(&lb))
			listb_key(&lb, p, n);
		sqlite3_reset(st);
		if (lb.nomem)
			break;
		cur.ptr = lb.bytes + ((uintptr_t)lb.items[lb.n - 1].key.ptr - 1);
		cur.len = n;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		status = sqlb_fail(b, rc, "listing");
		sqlb_rollback(b);
		listb_discard(&lb);
		return status;
	}
	sqlb_commit(b);
	return listb_finish(&lb, out);
}

static int scope_list(sfs_backend *b, sfs_family fam, sfs_slice after,
                      long limit, sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *first = next_scope_stmt(b, fam, 0, &status);
	sqlite3_stmt *next = first ? next_scope_stmt(b, fam, 1, &status) : NULL;

	if (!next)
		return status;
	return walk(b, first, next, NULL, after, limit, out);
}

static int ns_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                   sfs_slice after, long limit, sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *first = next_ns_stmt(b, fam, 0, &status);
	sqlite3_stmt *next = first ? next_ns_stmt(b, fam, 1, &status) : NULL;

	if (!next)
		return status;
	return walk(b, first, next, &scope, after, limit, out);
}

/* The keys of a value or counter namespace, names only (sfs_dir_names):
 * one statement reading the primary key's index alone, which holds the
 * keys in order, so neither the rows (for the value's size) nor the time
 * table are visited. */
static int key_names(sfs_backend *b, sfs_family fam, sfs_slice scope,
                     sfs_slice ns, sfs_slice after, long limit, sfs_list *out)
{
	int nx = after.ptr != NULL;
	int slot = ST_DIR_KEYS + (fam - 1) * 2 + nx;
	sqlite3_stmt *st = b->st[slot];
	listb lb = LISTB_INIT;
	int status = SFS_OK, rc;
	char sql[256];

	if (!st) {
		snprintf(sql, sizeof(sql), "SELECT key FROM %s WHERE scope_id=?1"
		         " AND ns=?2%s ORDER BY key LIMIT ?4", FAM(fam)->table,
		         nx ? " AND key>?3" : "");
		if (!(st = sqlb_stmt(b, slot, sql, &status)))
			return status;
	}
	sqlb_bind(st, 1, scope);
	sqlb_bind(st, 2, ns);
	if (nx)
		sqlb_bind(st, 3, after);
	sqlite3_bind_int64(st, 4, limit > 0 ? limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *p;
		size_t n;

		if (!listb_push(&lb))
			break;
		p = sqlb_col(st, 0, &n);
		listb_key(&lb, p, n);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		listb_discard(&lb);
		return sqlb_fail(b, rc, "listing");
	}
	return listb_finish(&lb, out);
}

/* The keys of a namespace: a log's distinct keys, or the values' and
 * counters' keys (with their sizes and times) from their scans. */
static int key_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns, sfs_slice after, long limit, sfs_list *out)
{
	sfs_scan_opts o = { .start = after, .end = SFS_NONE,
	                    .start_after = 1, .limit = limit, .keys_only = 1 };

	if (fam == SFS_FAM_LOG)
		return sqlb_log_keys(b, scope, ns, after, limit, out);
	return fam == SFS_FAM_KV ? sqlb_kv_scan(b, scope, ns, &o, out)
	                         : sqlb_counter_scan(b, scope, ns, &o, out);
}

int sqlb_dir_list(sfs_backend *b, sfs_family fam, sfs_slice scope,
                  sfs_slice ns, sfs_slice after, long limit, int names,
                  sfs_list *out)
{
	if (!scope.ptr)
		return scope_list(b, fam, after, limit, out);
	if (!ns.ptr)
		return ns_list(b, fam, scope, after, limit, out);
	if (names && (fam == SFS_FAM_KV || fam == SFS_FAM_COUNTER))
		return key_names(b, fam, scope, ns, after, limit, out);
	return key_list(b, fam, scope, ns, after, limit, out);
}

/* Whether the scope (ns.ptr == NULL) or namespace exists: data rows or an
 * explicit directory. 1, 0, or a negative status. */
static int exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                  sfs_slice ns)
{
	int slot = (ns.ptr ? ST_DIR_HAS_NS : ST_DIR_HAS_SCOPE) + fam - 1;
	const fam_desc *d = FAM(fam);
	sqlite3_stmt *st = b->st[slot];
	int status = SFS_OK, rc;
	char sql[512];

	if (!st) {
		if (ns.ptr)
			snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s"
			         " WHERE scope_id=?1 AND ns=?2) OR EXISTS (SELECT 1"
			         " FROM statefs_dir WHERE family=%d AND scope=?1"
			         " AND has_ns=1 AND ns=?2)", d->table, (int)fam);
		else
			snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s"
			         " WHERE %s=?1) OR EXISTS (SELECT 1 FROM statefs_dir"
			         " WHERE family=%d AND scope=?1)%s", d->table,
			         d->scol, (int)fam, fam == SFS_FAM_QUEUE ?
			         " OR EXISTS (SELECT 1 FROM statefs_inflight WHERE"
			         " queue=?1) OR EXISTS (SELECT 1 FROM statefs_dead"
			         " WHERE queue=?1)" : "");
		if (!(st = sqlb_stmt(b, slot, sql, &status)))
			return -status;
	}
	sqlb_bind(st, 1, scope);
	if (ns.ptr)
		sqlb_bind(st, 2, ns);
	rc = sqlite3_step(st);
	status = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 : 0;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return -sqlb_fail(b, rc, "looking up a directory");
	return status;
}

int sqlb_dir_exists(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	int e = exists(b, fam, scope, ns);

	return e < 0 ? -e : e ? SFS_OK : SFS_NOTFOUND;
}

/* A statement on statefs_dir with ?1 family, ?2 scope, ?3 has_ns, ?4 ns. */
static int dir_row(sfs_backend *b, int slot, const char *sql, sfs_family fam,
                   sfs_slice scope, sfs_slice ns, int *row)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *st = sqlb_stmt(b, slot, sql, &status);

	if (!st)
		return status;
	sqlite3_bind_int(st, 1, (int)fam);
	sqlb_bind(st, 2, scope);
	sqlite3_bind_int(st, 3, ns.ptr != NULL);
	sqlb_bind(st, 4, ns.ptr ? ns : sfs_bytes("", 0));
	rc = sqlite3_step(st);
	if (row)
		*row = rc == SQLITE_ROW;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "updating directories");
	return SFS_OK;
}

#define DIR_INSERT_SQL "INSERT OR IGNORE INTO statefs_dir" \
	" (family, scope, has_ns, ns) VALUES (?1, ?2, ?3, ?4)"
#define DIR_DELETE_SQL "DELETE FROM statefs_dir WHERE family=?1" \
	" AND scope=?2 AND has_ns=?3 AND ns=?4"

static int dir_create_tx(sfs_backend *b, sfs_family fam, sfs_slice scope,
                         sfs_slice ns)
{
	int e = exists(b, fam, scope, ns);

	if (e < 0)
		return -e;
	if (e)
		return sfs_err(SFS_EXISTS, "the %s exists",
		               ns.ptr ? "namespace" : "scope");
	return dir_row(b, ST_DIR_INSERT, DIR_INSERT_SQL, fam, scope, ns, NULL);
}

/* Whether the family's table holds rows of scope (and ns): 1, 0, -status.
 * Rare (rmdir, rename): prepared each time. */
static int has_rows(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	const fam_desc *d = FAM(fam);
	sqlite3_stmt *st;
	char sql[256];
	int rc, r;

	if (fam == SFS_FAM_QUEUE) /* pending, in flight or dead */
		snprintf(sql, sizeof(sql), "SELECT 1 WHERE EXISTS (SELECT 1 FROM"
		         " work_queue WHERE execution_id=?1) OR EXISTS (SELECT 1"
		         " FROM statefs_inflight WHERE queue=?1) OR EXISTS (SELECT"
		         " 1 FROM statefs_dead WHERE queue=?1)");
	else
		snprintf(sql, sizeof(sql), "SELECT 1 FROM %s WHERE %s=?1%s"
		         " LIMIT 1", d->table, d->scol, ns.ptr ? " AND ns=?2" : "");
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return -sqlb_fail(b, rc, "looking up rows");
	sqlb_bind(st, 1, scope);
	if (ns.ptr)
		sqlb_bind(st, 2, ns);
	rc = sqlite3_step(st);
	r = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -sqlb_fail(b, rc, "looking up rows");
	return r;
}

/* Empty: no rows, and for a scope no namespace directories. 1, 0, -status. */
static int is_empty(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	int r = has_rows(b, fam, scope, ns), row = 0, status;

	if (r != 0)
		return r < 0 ? r : 0;
	if (ns.ptr)
		return 1;
	status = dir_row(b, ST_DIR_HAS_NS_DIRS, "SELECT 1 FROM statefs_dir"
	                 " WHERE family=?1 AND scope=?2 AND has_ns=1"
	                 " AND ?3=?3 AND ?4=?4 LIMIT 1", fam, scope, SFS_NONE,
	                 &row);
	if (status != SFS_OK)
		return -status;
	return !row;
}

static int dir_remove_tx(sfs_backend *b, sfs_family fam, sfs_slice scope,
                         sfs_slice ns)
{
	int e = exists(b, fam, scope, ns);

	if (e < 0)
		return -e;
	if (!e)
		return sfs_err(SFS_NOTFOUND, "no such %s",
		               ns.ptr ? "namespace" : "scope");
	e = is_empty(b, fam, scope, ns);
	if (e < 0)
		return -e;
	if (!e)
		return sfs_err(SFS_NOTEMPTY, "the %s is not empty",
		               ns.ptr ? "namespace" : "scope");
	return dir_row(b, ST_DIR_DELETE, DIR_DELETE_SQL, fam, scope, ns, NULL);
}

int sqlb_dir_create(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	IN_WRITE_TX(b, dir_create_tx(b, fam, scope, ns));
}

int sqlb_dir_remove(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns)
{
	IN_WRITE_TX(b, dir_remove_tx(b, fam, scope, ns));
}

/* UPDATE table SET scope (and ns) from (?1, ?2) to (?3, ?4). */
static int move(sfs_backend *b, const char *table, const char *scol,
                const char *extra, sfs_slice scope, sfs_slice ns,
                sfs_slice to_scope, sfs_slice to_ns)
{
	sqlite3_stmt *st;
	char sql[256];
	int rc;

	if (ns.ptr)
		snprintf(sql, sizeof(sql), "UPDATE %s SET %s=?3, ns=?4 WHERE"
		         " %s=?1 AND ns=?2%s", table, scol, scol, extra);
	else
		snprintf(sql, sizeof(sql), "UPDATE %s SET %s=?3 WHERE %s=?1"
		         " AND ?2=?2 AND ?4=?4%s", table, scol, scol, extra);
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "renaming");
	sqlb_bind(st, 1, scope);
	sqlb_bind(st, 2, ns.ptr ? ns : sfs_bytes("", 0));
	sqlb_bind(st, 3, to_scope);
	sqlb_bind(st, 4, to_ns.ptr ? to_ns : sfs_bytes("", 0));
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SFS_OK : sqlb_fail(b, rc, "renaming");
}

/* The time rows left in an empty target (of keys deleted there, kv.c):
 * the moved ones take their place. */
static int drop_times(sfs_backend *b, const char *ttable, sfs_slice scope,
                      sfs_slice ns)
{
	sqlite3_stmt *st;
	char sql[256];
	int rc;

	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE scope=?1%s", ttable,
	         ns.ptr ? " AND ns=?2" : "");
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "renaming");
	sqlb_bind(st, 1, scope);
	if (ns.ptr)
		sqlb_bind(st, 2, ns);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SFS_OK : sqlb_fail(b, rc, "renaming");
}

static int same(sfs_slice a, sfs_slice b)
{
	return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* A queue's claims, in-flight items, markers, dead letters and policy
 * follow it; the (empty) target's policy gives way. */
static int move_queue_rest(sfs_backend *b, sfs_slice from, sfs_slice to)
{
	static const char *const tables[] = { "statefs_inflight",
		"statefs_qmark", "statefs_dead", "statefs_queue_policy" };
	sqlite3_stmt *st;
	int rc, status;

	rc = sqlite3_prepare_v2(b->db, "DELETE FROM statefs_queue_policy"
	                        " WHERE queue=?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "renaming");
	sqlb_bind(st, 1, to);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "renaming");
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		status = move(b, tables[i], "queue", "", from, SFS_NONE, to,
		              SFS_NONE);
		if (status != SFS_OK)
			return status;
	}
	return move(b, "statefs_claim", "queue", " AND ns IS NULL", from,
	            SFS_NONE, to, SFS_NONE);
}

static int dir_rename_tx(sfs_backend *b, sfs_family fam, sfs_slice scope,
                         sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                         unsigned flags)
{
	const fam_desc *d = FAM(fam);
	const char *what = ns.ptr ? "namespace" : "scope";
	char extra[64];
	int e, status;

	e = exists(b, fam, scope, ns);
	if (e <= 0)
		return e < 0 ? -e : sfs_err(SFS_NOTFOUND, "no such %s", what);
	if (same(scope, to_scope) && (!ns.ptr || same(ns, to_ns)))
		return SFS_OK;
	e = exists(b, fam, to_scope, to_ns);
	if (e < 0)
		return -e;
	if (e) {
		if (flags & SFS_RENAME_NOREPLACE)
			return sfs_err(SFS_EXISTS, "the target %s exists", what);
		e = is_empty(b, fam, to_scope, to_ns);
		if (e < 0)
			return -e;
		if (!e)
			return sfs_err(SFS_NOTEMPTY, "the target %s is not empty",
			               what);
		status = dir_row(b, ST_DIR_DELETE, DIR_DELETE_SQL, fam, to_scope,
		                 to_ns, NULL);
		if (status != SFS_OK)
			return status;
	}
	status = move(b, d->table, d->scol, "", scope, ns, to_scope, to_ns);
	if (status == SFS_OK && d->ttable)
		status = drop_times(b, d->ttable, to_scope, to_ns);
	if (status == SFS_OK && d->ttable)
		status = move(b, d->ttable, "scope", "", scope, ns, to_scope,
		              to_ns);
	if (status == SFS_OK && fam == SFS_FAM_QUEUE)
		status = move_queue_rest(b, scope, to_scope);
	/* Drains in progress put back what they do not deliver where the
	 * namespace is now. */
	if (status == SFS_OK && fam == SFS_FAM_KV)
		status = move(b, "statefs_claim", "queue", " AND ns IS NOT NULL",
		              scope, ns, to_scope, to_ns);
	if (status != SFS_OK)
		return status;
	/* The directory rows: the scope's own and its namespaces' for a scope
	 * rename, the namespace's own for a namespace rename. */
	snprintf(extra, sizeof(extra), " AND family=%d%s", (int)fam,
	         ns.ptr ? " AND has_ns=1" : "");
	return move(b, "statefs_dir", "scope", extra, scope, ns, to_scope,
	            to_ns);
}

int sqlb_dir_rename(sfs_backend *b, sfs_family fam, sfs_slice scope,
                    sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                    unsigned flags)
{
	IN_WRITE_TX(b, dir_rename_tx(b, fam, scope, ns, to_scope, to_ns,
	                             flags));
}
