/*
 * export.c - export every row of every family from one snapshot, and
 * import such rows back in one transaction.
 *
 * Export order is fixed (statefs.h): family (KV, counters, logs, queues,
 * directories, claims, in-flight items, dead letters, queue policies,
 * sequences), then scope, namespace, key, id, each served by the table's own index,
 * so the same store always exports the same byte sequence.
 * Import keeps what export gives: ids of log and queue rows, every mtime
 * (0 stays 0: no time row), explicit directories. Log and queue times go
 * into the sparse time maps through tm_import, which never changes the time
 * of an entry already there. Importing an export into
 * an empty store and exporting again reproduces the first export exactly;
 * importing it twice changes nothing the second time. A log or queue id
 * that already holds a different row is a conflict (SFS_EXISTS), never
 * silently overwritten; so is an item id that is already pending, in
 * flight or dead in another of those sets (an item is in one place).
 * Claims keep their ids; an in-flight row needs its claim (export order
 * gives claims first). The work queue's id sequence is raised past every
 * imported in-flight and dead id, and the claims' past every claim id, so
 * no id is ever issued twice.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"

/* --- export ------------------------------------------------------------- */

/* Every statement gives the generic columns scope, ns, key, value, mtime,
 * id, n, deliveries; wire_*() below say which sfs_row field each carries
 * in each family. */

/* The id spaces whose last issued id is above every id the export holds
 * (entries, items, claims that are gone): an import raises its sequence
 * there, so none of those ids is issued again. Queue items are pending,
 * in flight or dead (markers are not exported). */
#define SEQ_SQL                                                            \
	"SELECT n, NULL, NULL, NULL, 0, seq, 0, 0 FROM (SELECT 'claim' AS n,"   \
	" (SELECT seq FROM sqlite_sequence WHERE name='statefs_claim') AS seq," \
	" (SELECT max(claim_id) FROM statefs_claim WHERE ns IS NULL) AS m"    \
	" UNION ALL SELECT 'log', (SELECT seq FROM sqlite_sequence WHERE"     \
	" name='function_state_log'), (SELECT max(id) FROM"                   \
	" function_state_log) UNION ALL SELECT 'queue', (SELECT seq FROM"     \
	" sqlite_sequence WHERE name='work_queue'), max(coalesce((SELECT"     \
	" max(id) FROM work_queue q WHERE " SQLB_QLIVE_ANY("q.") "), 0),"     \
	" coalesce((SELECT max(id) FROM statefs_inflight), 0),"               \
	" coalesce((SELECT max(id) FROM statefs_dead), 0)))"                  \
	" WHERE seq > coalesce(m, 0) ORDER BY n"
static const char *const export_sql[] = {
	/* Entries a namespace drain holds are still the namespace's until
	 * delivered: they travel as entries. */
	"SELECT f.scope_id, f.ns, f.key, f.value, t.mtime_ns, 0, 0, 0"
	" FROM function_state f LEFT JOIN statefs_kv_time t"
	" ON t.scope=f.scope_id AND t.ns=f.ns AND t.key=f.key"
	" UNION ALL SELECT c.queue, c.ns, k.key, k.value, k.mtime_ns, 0, 0, 0"
	" FROM statefs_kv_taken k JOIN statefs_claim c"
	" ON c.claim_id=k.claim_id ORDER BY 1, 2, 3",
	"SELECT f.scope_id, f.ns, f.key, NULL, t.mtime_ns, 0, f.n, 0"
	" FROM function_counter f LEFT JOIN statefs_counter_time t"
	" ON t.scope=f.scope_id AND t.ns=f.ns AND t.key=f.key"
	" ORDER BY f.scope_id, f.ns, f.key",
	"SELECT l.scope_id, l.ns, l.key, l.value, " TM_LOG_AT("l.id") ", l.id,"
	" 0, 0 FROM function_state_log l ORDER BY l.scope_id, l.ns, l.key, l.id",
	"SELECT q.execution_id, NULL, NULL, q.work_item, " TM_QUEUE_AT("q.id")
	", q.id, 0, " TM_QUEUE_DELIVERIES("q.id") " FROM work_queue q WHERE "
	SQLB_QLIVE_ANY("q.")
	" ORDER BY q.execution_id, q.id",
	/* A directory's own family travels in row.n. */
	"SELECT scope, CASE has_ns WHEN 1 THEN ns END, NULL, NULL, 0, 0,"
	" family, 0 FROM statefs_dir ORDER BY scope, has_ns, ns, family",
	/* Claims before their items, so an import meets a claim first. */
	"SELECT queue, NULL, NULL, NULL, claimed_ns, claim_id, lease_until, 0"
	" FROM statefs_claim WHERE ns IS NULL ORDER BY queue, claim_id",
	"SELECT queue, NULL, NULL, item, enqueued_ns, id, claim_id, deliveries"
	" FROM statefs_inflight ORDER BY queue, id",
	"SELECT queue, NULL, reason, item, dead_ns, id, 0, deliveries"
	" FROM statefs_dead ORDER BY queue, id",
	"SELECT queue, NULL, NULL, NULL, 0, 0, ttl_ms, max_deliveries"
	" FROM statefs_queue_policy ORDER BY queue",
	SEQ_SQL,
};

static const sfs_family export_fam[] = {
	SFS_FAM_KV, SFS_FAM_COUNTER, SFS_FAM_LOG, SFS_FAM_QUEUE, SFS_FAM_DIR,
	SFS_FAM_CLAIM, SFS_FAM_INFLIGHT, SFS_FAM_DEAD, SFS_FAM_POLICY,
	SFS_FAM_SEQ,
};

#define N_FAM (sizeof(export_fam) / sizeof(export_fam[0]))

/* n: a counter's value, a directory's family, a claim's lease end, an
 * in-flight item's claim, a policy's time-to-live. */
static int64_t wire_n(const sfs_row *r)
{
	switch (r->family) {
	case SFS_FAM_COUNTER: return r->counter;
	case SFS_FAM_DIR: return (int64_t)r->dir_family;
	case SFS_FAM_CLAIM: return r->lease_until_ns;
	case SFS_FAM_INFLIGHT: return r->claim_id;
	case SFS_FAM_POLICY: return r->ttl_ms;
	default: return 0;
	}
}

/* key: a dead letter's reason; deliveries: a policy's limit. */
static sfs_slice wire_key(const sfs_row *r)
{
	return r->family == SFS_FAM_DEAD ? r->reason : r->key;
}

static int64_t wire_deliveries(const sfs_row *r)
{
	return r->family == SFS_FAM_POLICY ? r->max_deliveries
	                                   : r->deliveries;
}

static void wire_set(sfs_row *r, sfs_slice key, int64_t n,
                     int64_t deliveries)
{
	switch (r->family) {
	case SFS_FAM_COUNTER: r->counter = n; break;
	case SFS_FAM_DIR: r->dir_family = (sfs_family)n; break;
	case SFS_FAM_CLAIM: r->lease_until_ns = n; break;
	case SFS_FAM_INFLIGHT: r->claim_id = n; break;
	case SFS_FAM_POLICY: r->ttl_ms = n; break;
	default: break;
	}
	if (r->family == SFS_FAM_DEAD)
		r->reason = key;
	else
		r->key = key;
	if (r->family == SFS_FAM_POLICY)
		r->max_deliveries = deliveries;
	else
		r->deliveries = deliveries;
}

static sfs_slice col_opt(sqlite3_stmt *st, int i)
{
	size_t n;
	const void *p;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return SFS_NONE;
	p = sqlb_col(st, i, &n);
	return sfs_bytes(p, n);
}

static int count_all(sfs_backend *b, uint64_t *total)
{
	static const char sql[] =
		"SELECT (SELECT count(*) FROM function_state)"
		" + (SELECT count(*) FROM statefs_kv_taken)"
		" + (SELECT count(*) FROM function_counter)"
		" + (SELECT count(*) FROM function_state_log)"
		" + (SELECT count(*) FROM work_queue)"
		" - 2 * (SELECT count(*) FROM statefs_qmark)"
		" + (SELECT count(*) FROM statefs_dir)"
		" + (SELECT count(*) FROM statefs_claim WHERE ns IS NULL)"
		" + (SELECT count(*) FROM statefs_inflight)"
		" + (SELECT count(*) FROM statefs_dead)"
		" + (SELECT count(*) FROM statefs_queue_policy)"
		" + (SELECT count(*) FROM (" SEQ_SQL "))";
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "counting rows");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*total = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? SFS_OK : sqlb_fail(b, rc, "counting rows");
}

static int export_family(sfs_backend *b, size_t i,
                         int (*fn)(const sfs_row *row, void *ctx), void *ctx,
                         sfs_progress_fn progress, void *pctx,
                         uint64_t *done, uint64_t total)
{
	sqlite3_stmt *st;
	sfs_row row;
	int rc, r = SFS_OK;

	rc = sqlite3_prepare_v2(b->db, export_sql[i], -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "exporting");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		row.family = export_fam[i];
		row.scope = col_opt(st, 0);
		row.ns = col_opt(st, 1);
		row.value = col_opt(st, 3);
		row.mtime_ns = sqlite3_column_int64(st, 4);
		row.id = sqlite3_column_int64(st, 5);
		wire_set(&row, col_opt(st, 2), sqlite3_column_int64(st, 6),
		         sqlite3_column_int64(st, 7));
		r = fn(&row, ctx);
		if (r != 0)
			break;
		++*done;
		if (progress && (*done % 256 == 0) &&
		    progress(*done, total, pctx)) {
			r = sfs_err(SFS_CANCELLED, "cancelled by the caller");
			break;
		}
	}
	sqlite3_finalize(st);
	if (r != 0)
		return r;
	return rc == SQLITE_DONE ? SFS_OK : sqlb_fail(b, rc, "exporting");
}

int sqlb_export(sfs_backend *b, int (*fn)(const sfs_row *row, void *ctx),
                void *ctx, sfs_progress_fn progress, void *pctx)
{
	uint64_t total = 0, done = 0;
	int r = sqlb_begin_read(b);

	if (r != SFS_OK)
		return r;
	r = count_all(b, &total);
	for (size_t i = 0; i < N_FAM && r == SFS_OK; i++)
		r = export_family(b, i, fn, ctx, progress, pctx, &done, total);
	sqlb_rollback(b); /* a read transaction: nothing to commit */
	if (r == SFS_OK && progress && progress(done, total, pctx))
		r = sfs_err(SFS_CANCELLED, "cancelled by the caller");
	return r;
}

/* --- import ------------------------------------------------------------- */

enum {
	IM_KV, IM_KV_TIME, IM_KV_UNTIME,
	IM_CTR, IM_CTR_TIME, IM_CTR_UNTIME,
	IM_LOG, IM_LOG_SAME,
	IM_Q, IM_Q_SAME, IM_Q_DELIV, IM_Q_UNDELIV,
	IM_DIR,
	IM_CLAIM, IM_CLAIM_SAME, IM_INF, IM_INF_SAME, IM_INF_CLAIM,
	IM_DEAD, IM_DEAD_SAME, IM_POLICY, IM_PLACES, IM_SEQ_UP, IM_SEQ_INS,
	IM_MAX
};

static const char *const import_sql[IM_MAX] = {
	[IM_KV] = "INSERT INTO function_state (scope_id, ns, key, value)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET value=excluded.value"
	        " WHERE value IS NOT excluded.value",
	[IM_KV_TIME] = "INSERT INTO statefs_kv_time (scope, ns, key,"
	        " mtime_ns) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope, ns,"
	        " key) DO UPDATE SET mtime_ns=excluded.mtime_ns"
	        " WHERE mtime_ns IS NOT excluded.mtime_ns",
	[IM_KV_UNTIME] = "DELETE FROM statefs_kv_time WHERE scope=?1"
	        " AND ns=?2 AND key=?3",
	[IM_CTR] = "INSERT INTO function_counter (scope_id, ns, key, n)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET n=excluded.n WHERE n IS NOT excluded.n",
	[IM_CTR_TIME] = "INSERT INTO statefs_counter_time (scope, ns, key,"
	        " mtime_ns) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope, ns,"
	        " key) DO UPDATE SET mtime_ns=excluded.mtime_ns"
	        " WHERE mtime_ns IS NOT excluded.mtime_ns",
	[IM_CTR_UNTIME] = "DELETE FROM statefs_counter_time WHERE scope=?1"
	        " AND ns=?2 AND key=?3",
	[IM_LOG] = "INSERT INTO function_state_log (id, scope_id, ns, key,"
	        " value) VALUES (?5, ?1, ?2, ?3, ?4) ON CONFLICT (id) DO NOTHING",
	[IM_LOG_SAME] = "SELECT scope_id=?1 AND ns=?2 AND key=?3 AND value=?4"
	        " FROM function_state_log WHERE id=?5",
	[IM_Q] = "INSERT INTO work_queue (id, execution_id, work_item)"
	        " VALUES (?5, ?1, ?4) ON CONFLICT (id) DO NOTHING",
	[IM_Q_SAME] = "SELECT execution_id=?1 AND work_item=?4 AND ?2 IS ?2"
	        " AND ?3 IS ?3 FROM work_queue WHERE id=?5",
	[IM_Q_DELIV] = "INSERT INTO statefs_queue_pending (id, enqueued_ns,"
	        " deliveries) VALUES (?5, ?7, ?8) ON CONFLICT (id) DO UPDATE SET"
	        " deliveries=excluded.deliveries",
	[IM_Q_UNDELIV] = "UPDATE statefs_queue_pending SET deliveries=0"
	        " WHERE id=?5",
	[IM_DIR] = "INSERT OR IGNORE INTO statefs_dir (family, scope,"
	        " has_ns, ns) VALUES (?1, ?2, ?3, ?4)",
	/* ?6 n, ?7 mtime_ns, ?8 deliveries (bind_row) */
	[IM_CLAIM] = "INSERT INTO statefs_claim (claim_id, queue, lease_until,"
	        " claimed_ns) VALUES (?5, ?1, ?6, ?7) ON CONFLICT (claim_id)"
	        " DO NOTHING",
	[IM_CLAIM_SAME] = "SELECT queue=?1 AND lease_until=?6 AND claimed_ns=?7"
	        " FROM statefs_claim WHERE claim_id=?5",
	[IM_INF] = "INSERT INTO statefs_inflight (id, claim_id, queue, item,"
	        " enqueued_ns, deliveries) VALUES (?5, ?6, ?1, ?4, ?7, ?8)"
	        " ON CONFLICT (id) DO NOTHING",
	[IM_INF_SAME] = "SELECT claim_id=?6 AND queue=?1 AND item=?4 AND"
	        " enqueued_ns=?7 AND deliveries=?8 FROM statefs_inflight"
	        " WHERE id=?5",
	[IM_INF_CLAIM] = "SELECT queue=?1 FROM statefs_claim WHERE claim_id=?6",
	/* reasons are text (the engine writes them as such) */
	[IM_DEAD] = "INSERT INTO statefs_dead (id, queue, item, reason,"
	        " deliveries, dead_ns) VALUES (?5, ?1, ?4, CAST(?3 AS TEXT), ?8,"
	        " ?7) ON CONFLICT (id) DO NOTHING",
	[IM_DEAD_SAME] = "SELECT queue=?1 AND item=?4 AND"
	        " reason=CAST(?3 AS TEXT) AND deliveries=?8 AND dead_ns=?7"
	        " FROM statefs_dead WHERE id=?5",
	[IM_POLICY] = "INSERT INTO statefs_queue_policy (queue, ttl_ms,"
	        " max_deliveries) VALUES (?1, ?6, ?8) ON CONFLICT (queue) DO"
	        " UPDATE SET ttl_ms=excluded.ttl_ms,"
	        " max_deliveries=excluded.max_deliveries",
	/* where an item id is: pending, in flight, dead (one place only) */
	[IM_PLACES] = "SELECT EXISTS (SELECT 1 FROM work_queue WHERE id=?1),"
	        " EXISTS (SELECT 1 FROM statefs_inflight WHERE id=?1),"
	        " EXISTS (SELECT 1 FROM statefs_dead WHERE id=?1)",
	[IM_SEQ_UP] = "UPDATE sqlite_sequence SET seq=max(seq, ?1)"
	        " WHERE name=?2",
	[IM_SEQ_INS] = "INSERT INTO sqlite_sequence (name, seq) SELECT ?2, ?1"
	        " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name=?2)",
};

/* An import in progress: its statements, prepared for its length. */
typedef struct import {
	sfs_backend *b;
	sqlite3_stmt *st[IM_MAX];
} import;

/* Binds ?1 scope, ?2 ns, ?3 key, ?4 value (counters: n), ?5 id, ?6 n,
 * ?7 mtime_ns, ?8 deliveries as far as present, in the generic columns'
 * sense (wire_*). */
static void bind_row(sqlite3_stmt *st, const sfs_row *r)
{
	int n = sqlite3_bind_parameter_count(st);
	sfs_slice key = wire_key(r);

	if (n >= 1)
		sqlb_bind(st, 1, r->scope);
	if (n >= 2)
		sqlb_bind(st, 2, r->ns.ptr ? r->ns : sfs_bytes("", 0));
	if (n >= 3)
		sqlb_bind(st, 3, key.ptr ? key : sfs_bytes("", 0));
	if (n >= 4) {
		if (r->family == SFS_FAM_COUNTER)
			sqlite3_bind_int64(st, 4, r->counter);
		else
			sqlb_bind(st, 4, r->value);
	}
	if (n >= 5)
		sqlite3_bind_int64(st, 5, r->id);
	if (n >= 6)
		sqlite3_bind_int64(st, 6, wire_n(r));
	if (n >= 7)
		sqlite3_bind_int64(st, 7, r->mtime_ns);
	if (n >= 8)
		sqlite3_bind_int64(st, 8, wire_deliveries(r));
}

static int step(sfs_backend *b, sqlite3_stmt *st)
{
	return sqlb_run(b, st, "importing a row");
}

/* Writes or removes the time row of a keyed row (kv, counter). */
static int keyed_time(import *imp, int put, int del,
                      const sfs_row *r)
{
	sqlite3_stmt *st = imp->st[r->mtime_ns ? put : del];

	sqlb_bind_key(st, r->scope, r->ns, r->key);
	if (r->mtime_ns)
		sqlite3_bind_int64(st, 4, r->mtime_ns);
	return step(imp->b, st);
}

/* Item ids live in one place: pending (0), in flight (1) or dead (2). An
 * id already in a place other than `mine` is a conflict. */
static int check_places(import *imp, const sfs_row *r, int mine)
{
	sqlite3_stmt *st = imp->st[IM_PLACES];
	static const char *const what[3] = { "pending", "in flight", "dead" };
	int rc, where = -1;

	sqlite3_bind_int64(st, 1, r->id);
	rc = sqlite3_step(st);
	for (int i = 0; i < 3 && rc == SQLITE_ROW; i++)
		if (i != mine && sqlite3_column_int(st, i))
			where = i;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return sqlb_fail(imp->b, rc, "importing a row");
	if (where >= 0)
		return sfs_err(SFS_EXISTS, "item %lld is %s in this store",
		               (long long)r->id, what[where]);
	return SFS_OK;
}

/* Raises table's AUTOINCREMENT sequence to at least id. */
static int raise_seq(import *imp, const char *table, int64_t id)
{
	int status = SFS_OK;

	for (int i = IM_SEQ_UP; i <= IM_SEQ_INS && status == SFS_OK; i++) {
		sqlite3_stmt *st = imp->st[i];

		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, table, -1, SQLITE_STATIC);
		status = step(imp->b, st);
	}
	return status;
}

/* Inserts a row with an id (> 0: chk_row); an existing id must hold the
 * same row. */
static int insert_same(import *imp, int ins, int same,
                       const sfs_row *r)
{
	sfs_backend *b = imp->b;
	sqlite3_stmt *st = imp->st[ins];
	int status, rc, eq;

	bind_row(st, r);
	status = step(b, st);
	if (status != SFS_OK || sqlite3_changes(b->db) != 0)
		return status;
	st = imp->st[same];
	bind_row(st, r);
	rc = sqlite3_step(st);
	eq = rc == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return sqlb_fail(b, rc, "importing a row");
	if (!eq)
		return sfs_err(SFS_EXISTS, "id %lld holds a different row",
		               (long long)r->id);
	return SFS_OK;
}

static int id_row(import *imp, int ins, int same, tm_which w,
                  const sfs_row *r)
{
	int status = insert_same(imp, ins, same, r);

	return status == SFS_OK ? tm_import(imp->b, w, r->id, r->mtime_ns)
	                        : status;
}

/* A pending item: its time as logs', and its delivery count (a row of
 * statefs_queue_pending, which the time may already have made). */
static int queue_row(import *imp, const sfs_row *r)
{
	int status = check_places(imp, r, 0);
	sqlite3_stmt *st;

	if (status == SFS_OK)
		status = id_row(imp, IM_Q, IM_Q_SAME, TM_QUEUE, r);
	if (status != SFS_OK)
		return status;
	st = imp->st[r->deliveries ? IM_Q_DELIV : IM_Q_UNDELIV];
	bind_row(st, r);
	return step(imp->b, st);
}

static int inflight_row(import *imp, const sfs_row *r)
{
	sqlite3_stmt *st = imp->st[IM_INF_CLAIM];
	int status = check_places(imp, r, 1), rc, ok;

	if (status != SFS_OK)
		return status;
	bind_row(st, r);
	rc = sqlite3_step(st);
	ok = rc == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(imp->b, rc, "importing a row");
	if (!ok)
		return sfs_err(SFS_INVALID, "in-flight item %lld belongs to claim"
		               " %lld, which is not in this store (or is of"
		               " another queue)", (long long)r->id,
		               (long long)r->claim_id);
	status = insert_same(imp, IM_INF, IM_INF_SAME, r);
	return status == SFS_OK ? raise_seq(imp, "work_queue", r->id) : status;
}

static int import_row(import *imp, const sfs_row *r)
{
	sfs_backend *b = imp->b;
	sqlite3_stmt *st;
	int status;

	switch (r->family) {
	case SFS_FAM_KV:
		bind_row(imp->st[IM_KV], r);
		status = step(b, imp->st[IM_KV]);
		return status ? status
		              : keyed_time(imp, IM_KV_TIME, IM_KV_UNTIME, r);
	case SFS_FAM_COUNTER:
		bind_row(imp->st[IM_CTR], r);
		status = step(b, imp->st[IM_CTR]);
		return status ? status
		              : keyed_time(imp, IM_CTR_TIME, IM_CTR_UNTIME, r);
	case SFS_FAM_LOG:
		return id_row(imp, IM_LOG, IM_LOG_SAME, TM_LOG, r);
	case SFS_FAM_QUEUE:
		return queue_row(imp, r);
	case SFS_FAM_DIR:
		st = imp->st[IM_DIR];
		sqlite3_bind_int64(st, 1, (int64_t)r->dir_family);
		sqlb_bind(st, 2, r->scope);
		sqlite3_bind_int(st, 3, r->ns.ptr != NULL);
		sqlb_bind(st, 4, r->ns.ptr ? r->ns : sfs_bytes("", 0));
		return step(b, st);
	case SFS_FAM_CLAIM:
		status = insert_same(imp, IM_CLAIM, IM_CLAIM_SAME, r);
		return status == SFS_OK ? raise_seq(imp, "statefs_claim", r->id)
		                        : status;
	case SFS_FAM_INFLIGHT:
		return inflight_row(imp, r);
	case SFS_FAM_DEAD:
		status = check_places(imp, r, 2);
		if (status == SFS_OK)
			status = insert_same(imp, IM_DEAD, IM_DEAD_SAME, r);
		return status == SFS_OK ? raise_seq(imp, "work_queue", r->id)
		                        : status;
	case SFS_FAM_POLICY:
		st = imp->st[IM_POLICY];
		bind_row(st, r);
		return step(b, st);
	case SFS_FAM_SEQ: /* chk_row: one of the three */
		return raise_seq(imp, *(const char *)r->scope.ptr == 'l'
		                 ? "function_state_log"
		                 : *(const char *)r->scope.ptr == 'q'
		                 ? "work_queue" : "statefs_claim", r->id);
	}
	return sfs_err(SFS_INVALID, "unknown family %d", (int)r->family);
}

int sqlb_import(sfs_backend *b, int (*next)(sfs_row *row, void *ctx),
                void *ctx)
{
	import imp = { b, { NULL } };
	sfs_row row;
	int rc, got, status = SFS_OK;

	for (int i = 0; i < IM_MAX && status == SFS_OK; i++) {
		rc = sqlite3_prepare_v2(b->db, import_sql[i], -1, &imp.st[i],
		                        NULL);
		if (rc != SQLITE_OK)
			status = sqlb_fail(b, rc, "preparing an import");
	}
	if (status == SFS_OK)
		status = sqlb_begin_write(b);
	/* Items other programs pushed before the import keep no time; the
	 * imported ones have theirs (timemap.c). */
	if (status == SFS_OK)
		status = tm_queue_ours(b, INT64_MAX);
	if (status == SFS_OK) {
		while ((got = next(&row, ctx)) == SFS_OK &&
		       (status = import_row(&imp, &row)) == SFS_OK)
			;
		/* SFS_NOTFOUND from next is the end of the rows */
		if (status == SFS_OK && got != SFS_NOTFOUND)
			status = got;
		/* Imported items in flight need their queue's markers. */
		if (status == SFS_OK)
			status = sqlb_marks_ensure(b);
		if (status == SFS_OK)
			status = tm_queue_ours(b, 0);
		status = sqlb_end_write(b, status);
	}
	for (int i = 0; i < IM_MAX; i++)
		sqlite3_finalize(imp.st[i]);
	return status;
}
