/*
 * timemap.c - when log entries and queue items were written: sparse
 * time maps keyed by id.
 *
 * Ids of logs and of queues are global and increase with every commit, so
 * a time can be stored once for a run of ids: a map row (id, t) says "the
 * entries from this id on were written at t", up to the next row. The time
 * of entry X is the t of the greatest row with id <= X (0, unknown, when
 * there is none). An append adds a row only when the current second (the
 * clock has one-second resolution, util_i.h) is later than the latest
 * row's, so a burst of appends within one second writes one map row, not
 * one per entry: that row is the B-tree page the benchmark used to pay on
 * every commit (docs/engine.md, "Modification times").
 *
 * Invariants, and who keeps them:
 *  - Appends: times along ids never go backwards. A clock stepped back
 *    makes new entries share the latest row's time until it catches up.
 *  - Queue map: monotone (t never decreases with id), which is what lets
 *    a time-to-live find every expired item with one index seek. A pending
 *    item whose wait restarted (a claim returned at its original id) or
 *    whose imported time would break monotony has its own time in
 *    statefs_queue_pending (beside its delivery count); that wins over
 *    the map. In-flight and
 *    dead items carry their times in their own rows and need no map row.
 *  - Log map: need not be monotone (nothing searches it by time); import
 *    writes whatever rows make every entry's derived time exact.
 *  - A map row is deleted only when no entry depends on it: below the row
 *    that governs the smallest live id (checked whenever a row is added,
 *    at most once a second), and in the id range of a delete or clear. The
 *    latest row is always kept: the next append compares with it.
 *  - Log entries the SDKs append carry no time of their own: they show
 *    the time of the statefs write before them (a lower bound), or 0.
 *  - Queue items the SDKs push must not: a time-to-live would drop an
 *    item pushed a moment ago for the age of the statefs push before it.
 *    TM_QUEUE_KNOWN (a row of sqlite_sequence, the page every push writes
 *    anyway) is the last id whose time statefs knows; items above it are
 *    another program's and read as 0, and the next statefs push first
 *    dates their run 0 with a map row of its own (queue_foreign). Runs
 *    dated 0 lie between dated rows, which stay monotone; the time-to-live
 *    passes over them.
 *
 * Stores of schema version 1 kept one time row per entry; tm_convert_v1
 * turns such a table into a map (and overrides) that gives every entry
 * exactly the time it had, at open (migration) and when a version-1
 * checkpoint is restored.
 */
#include <stdio.h>
#include <string.h>

#include "sqlite_i.h"

typedef struct tm_desc {
	const char *map;   /* the sparse map */
	const char *col;   /* its time column */
	const char *data;  /* the table whose ids it maps */
	const char *old;   /* the version-1 table: one row per entry */
	int monotone;      /* queues: keep the map monotone, else override */
} tm_desc;

static const tm_desc descs[2] = {
	[TM_LOG] = { "statefs_log_timemap", "mtime_ns", "function_state_log",
	             "statefs_log_time", 0 },
	[TM_QUEUE] = { "statefs_queue_timemap", "enqueued_ns", "work_queue",
	               "statefs_queue_time", 1 },
};

#define OVERRIDE "statefs_queue_pending"
#define MAXID "9223372036854775807"

/* Expands a statement template with the descriptor's names: {map} the
 * map, {col} its time column, {data} the data table. (Not printf: the
 * templates are not literals, and names appear more than once.) */
static void expand(char *out, size_t len, const char *tmpl, const tm_desc *d)
{
	size_t o = 0;

	while (*tmpl && o + 1 < len) {
		const char *name = NULL;
		size_t skip = 0;

		if (!strncmp(tmpl, "{map}", 5)) {
			name = d->map;
			skip = 5;
		} else if (!strncmp(tmpl, "{col}", 5)) {
			name = d->col;
			skip = 5;
		} else if (!strncmp(tmpl, "{data}", 6)) {
			name = d->data;
			skip = 6;
		}
		if (!name) {
			out[o++] = *tmpl++;
			continue;
		}
		while (*name && o + 1 < len)
			out[o++] = *name++;
		tmpl += skip;
	}
	out[o] = '\0';
}

/* The cached statement for (slot base, which), from a template. */
static sqlite3_stmt *tm_stmt(sfs_backend *b, int base, tm_which w,
                             const char *fmt, int *status)
{
	const tm_desc *d = &descs[w];
	char sql[1024];

	if (b->st[base + w])
		return b->st[base + w];
	expand(sql, sizeof(sql), fmt, d);
	return sqlb_stmt(b, base + w, sql, status);
}

/* Runs a statement with up to two int64 parameters. */
static int run2(sfs_backend *b, sqlite3_stmt *st, int n, int64_t a,
                int64_t c, const char *what)
{
	if (n >= 1)
		sqlite3_bind_int64(st, 1, a);
	if (n >= 2)
		sqlite3_bind_int64(st, 2, c);
	return sqlb_run(b, st, what);
}

/* Drops the rows below the one that governs the smallest live id: no
 * entry can depend on them. Cheap (three index seeks and a range delete)
 * and run only when a row was added, so at most once a second. */
static int prune_below(sfs_backend *b, tm_which w)
{
	int status = SFS_OK;
	sqlite3_stmt *st = tm_stmt(b, ST_TM_PRUNE_BELOW, w,
	        "DELETE FROM {map} WHERE id < (SELECT max(id) FROM {map}"
	        " WHERE id <= (SELECT min(id) FROM {data}))", &status);

	return st ? sqlb_run(b, st, "pruning a time map") : status;
}

/* Items of other programs: TM_QUEUE_KNOWN moves up to the queue's
 * sequence (made there when missing: an older statefs's store, whose
 * items all keep the map's times). */
static int queue_known(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *up = sqlb_stmt(b, ST_TM_KNOWN, "UPDATE sqlite_sequence"
	        " SET seq=max(seq, coalesce((SELECT seq FROM sqlite_sequence"
	        " WHERE name='work_queue'), 0)) WHERE name='"
	        TM_QUEUE_KNOWN_NAME "'", &status);
	sqlite3_stmt *in = up ? sqlb_stmt(b, ST_TM_KNOWN_NEW, "INSERT INTO"
	        " sqlite_sequence (name, seq) SELECT '" TM_QUEUE_KNOWN_NAME "',"
	        " coalesce((SELECT seq FROM sqlite_sequence WHERE"
	        " name='work_queue'), 0)", &status) : NULL;

	if (!in)
		return status;
	status = sqlb_run(b, up, "noting the queue's known items");
	if (status != SFS_OK || sqlite3_changes(b->db) > 0)
		return status;
	return sqlb_run(b, in, "noting the queue's known items");
}

/* Before rows statefs inserts from first_id on: items other programs
 * pushed after TM_QUEUE_KNOWN and before first_id get a map row dated 0
 * (unknown: no time-to-live drops them), unless the run before them is
 * already dated 0. The map stays monotone over its dated rows. */
static int queue_foreign(sfs_backend *b, int64_t first_id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_TM_FOREIGN, "INSERT INTO"
	        " statefs_queue_timemap (id, enqueued_ns) SELECT k.seq+1, 0"
	        " FROM sqlite_sequence k WHERE k.name='" TM_QUEUE_KNOWN_NAME "'"
	        " AND coalesce((SELECT enqueued_ns FROM statefs_queue_timemap"
	        " ORDER BY id DESC LIMIT 1), 0)>0 AND coalesce((SELECT max(id)"
	        " FROM statefs_queue_timemap), 0)<=k.seq AND EXISTS (SELECT 1"
	        " FROM work_queue q WHERE q.id>k.seq AND q.id<?1 AND "
	        SQLB_QLIVE_ANY("q.") ")", &status);

	if (!st)
		return status;
	status = run2(b, st, 1, first_id, 0, "dating other programs' items");
	if (status == SFS_OK && sqlite3_changes(b->db) > 0)
		stamp_forget(b);
	return status;
}

int tm_queue_ours(sfs_backend *b, int64_t first_id)
{
	int status = queue_foreign(b, first_id);

	return status == SFS_OK ? queue_known(b) : status;
}

int tm_note(sfs_backend *b, tm_which w, int64_t id, int64_t now)
{
	int status = SFS_OK;
	/* The queue map's dated rows never go back in time, also after a
	 * run dated 0: a clock stepped back gives the latest dated time. */
	sqlite3_stmt *st = tm_stmt(b, ST_TM_NOTE, w, w == TM_QUEUE ?
	        "INSERT INTO {map} (id, {col}) SELECT ?1, max(?2,"
	        " coalesce((SELECT max({col}) FROM {map}), 0)) WHERE ?2 >"
	        " coalesce((SELECT {col} FROM {map} ORDER BY id DESC LIMIT 1),"
	        " -1)" :
	        "INSERT INTO {map} (id, {col}) SELECT ?1, ?2 WHERE ?2 >"
	        " coalesce((SELECT {col} FROM {map} ORDER BY id DESC LIMIT 1),"
	        " -1)", &status);

	if (!st)
		return status;
	/* Stamped: nobody else committed since this connection's last push,
	 * so no other program's items lie between. */
	if (stamp_map(b, w, now))
		return w == TM_QUEUE ? queue_known(b) : SFS_OK;
	if (w == TM_QUEUE)
		status = queue_foreign(b, id);
	if (status == SFS_OK)
		status = run2(b, st, 2, id, now, "writing a time");
	if (status == SFS_OK && sqlite3_changes(b->db) > 0)
		status = prune_below(b, w);
	return status == SFS_OK && w == TM_QUEUE ? queue_known(b) : status;
}

int tm_prune(sfs_backend *b, tm_which w, int64_t lo, int64_t hi)
{
	int status = SFS_OK;
	/* A row may go when no entry lies in [its id, the next row's id),
	 * except the latest row. Rows are judged against the map as it was
	 * before this statement: a run of empty rows goes at once. */
	sqlite3_stmt *st = tm_stmt(b, ST_TM_PRUNE_RANGE, w,
	        "DELETE FROM {map} WHERE id >= coalesce((SELECT max(id) FROM {map}"
	        " WHERE id <= ?1), ?1) AND id <= ?2"
	        " AND id < (SELECT max(id) FROM {map})"
	        " AND NOT EXISTS (SELECT 1 FROM {data} d WHERE d.id >= {map}.id"
	        " AND d.id < coalesce((SELECT min(m2.id) FROM {map} m2"
	        " WHERE m2.id > {map}.id), " MAXID "))", &status);

	if (lo > hi)
		return SFS_OK;
	return st ? run2(b, st, 2, lo, hi, "pruning a time map") : status;
}

int tm_override_set(sfs_backend *b, int64_t id, int64_t t)
{
	int status = SFS_OK;
	/* An item's delivery count, if it has one, stays. */
	sqlite3_stmt *st = sqlb_stmt(b, ST_TM_OVR_SET,
	        "INSERT INTO " OVERRIDE " (id, enqueued_ns) VALUES (?1, ?2)"
	        " ON CONFLICT (id) DO UPDATE SET enqueued_ns=excluded.enqueued_ns",
	        &status);

	return st ? run2(b, st, 2, id, t, "writing a time") : status;
}

int tm_override_del(sfs_backend *b, int64_t id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_TM_OVR_DEL,
	        "DELETE FROM " OVERRIDE " WHERE id=?1", &status);

	return st ? run2(b, st, 1, id, 0, "deleting a time") : status;
}

/* --- import ------------------------------------------------------------- */

/* One int64 (or NULL: *isnull) from a statement with up to two int64
 * parameters. Import only: prepared each time. */
static int one_int(sfs_backend *b, const char *fmt, tm_which w, int64_t a,
                   int64_t c, int64_t *v, int *isnull)
{
	const tm_desc *d = &descs[w];
	char sql[512];
	sqlite3_stmt *st;
	int rc;

	expand(sql, sizeof(sql), fmt, d);
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading a time map");
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int64(st, 1, a);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, c);
	rc = sqlite3_step(st);
	*isnull = rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
	*v = *isnull ? 0 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "reading a time map");
	return SFS_OK;
}

static int exec_fmt(sfs_backend *b, const char *fmt, tm_which w, int64_t a,
                    int64_t c)
{
	const tm_desc *d = &descs[w];
	char sql[512];
	sqlite3_stmt *st;
	int rc;

	expand(sql, sizeof(sql), fmt, d);
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "writing a time map");
	sqlite3_bind_int64(st, 1, a);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, c);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SFS_OK : sqlb_fail(b, rc, "writing a time map");
}

/* Gives entry x (already in its data table) the time t without changing
 * the derived time of any other entry. The map row at x is set; if that
 * changes the time of entries after x up to the next row, a row at the
 * first of them keeps their old time. On a queue, where the map must stay
 * monotone, a row that would break that becomes an override instead. */
int tm_import(sfs_backend *b, tm_which w, int64_t x, int64_t t)
{
	int64_t cur, at_x, prev, next_id = 0, next_t = 0, y, old;
	int no_cur, no_at, no_prev, no_next, no_y, status;

	if (w == TM_QUEUE) {
		status = one_int(b, "SELECT enqueued_ns FROM " OVERRIDE
		                 " WHERE id=?1", w, x, 0, &cur, &no_cur);
		if (status != SFS_OK)
			return status;
		if (!no_cur)
			return cur == t ? SFS_OK : tm_override_set(b, x, t);
	}
	status = one_int(b, "SELECT {col} FROM {map} WHERE id<=?1 ORDER BY id"
	                 " DESC LIMIT 1", w, x, 0, &cur, &no_cur);
	if (status != SFS_OK || cur == t)
		return status; /* also 0 == 0 (unknown): no row needed */
	status = one_int(b, "SELECT {col} FROM {map} WHERE id=?1", w, x, 0,
	                 &at_x, &no_at);
	if (status == SFS_OK)
		status = one_int(b, "SELECT {col} FROM {map} WHERE id<?1 ORDER BY"
		                 " id DESC LIMIT 1", w, x, 0, &prev, &no_prev);
	if (status == SFS_OK)
		status = one_int(b, "SELECT id FROM {map} WHERE id>?1 ORDER BY id"
		                 " LIMIT 1", w, x, 0, &next_id, &no_next);
	if (status == SFS_OK && !no_next)
		status = one_int(b, "SELECT {col} FROM {map} WHERE id=?1", w,
		                 next_id, 0, &next_t, &no_y);
	/* The first entry after x that a row at x governs, if any. */
	if (status == SFS_OK)
		status = one_int(b, "SELECT min(id) FROM {data} WHERE id>?1 AND"
		                 " id<?2", w, x, no_next ? INT64_MAX : next_id,
		                 &y, &no_y);
	if (status != SFS_OK)
		return status;
	/* Their time now: the row at x's, else the one before x's, else 0. */
	old = !no_at ? at_x : !no_prev ? prev : 0;
	/* On the queue, the dated rows around x (runs of other programs'
	 * items, dated 0, lie between them). */
	if (status == SFS_OK && w == TM_QUEUE)
		status = one_int(b, "SELECT {col} FROM {map} WHERE id<?1 AND"
		                 " {col}>0 ORDER BY id DESC LIMIT 1", w, x, 0,
		                 &prev, &no_prev);
	if (status == SFS_OK && w == TM_QUEUE)
		status = one_int(b, "SELECT {col} FROM {map} WHERE id>?1 AND"
		                 " {col}>0 ORDER BY id LIMIT 1", w, x, 0,
		                 &next_t, &no_next);
	if (status != SFS_OK)
		return status;
	if (w == TM_QUEUE && ((!no_prev && t < prev) ||
	                      (!no_next && t > next_t) || (!no_y && t > old)))
		return tm_override_set(b, x, t);
	status = exec_fmt(b, "INSERT INTO {map} (id, {col}) VALUES (?1, ?2)"
	                  " ON CONFLICT (id) DO UPDATE SET {col}=excluded.{col}",
	                  w, x, t);
	if (status == SFS_OK && !no_y && old != t)
		status = exec_fmt(b, "INSERT INTO {map} (id, {col}) VALUES"
		                  " (?1, ?2)", w, y, old);
	return status;
}

/* --- version 1 ---------------------------------------------------------- */

int tm_convert_v1(sfs_backend *b, const char *schema)
{
	char sql[1024];
	int status;

	/* Logs: a row wherever an entry's time differs from the entry
	 * before it (the first entry: from 0, unknown). */
	snprintf(sql, sizeof(sql),
	         "DELETE FROM main.statefs_log_timemap;"
	         "INSERT INTO main.statefs_log_timemap (id, mtime_ns)"
	         " SELECT id, t FROM (SELECT l.id AS id,"
	         " coalesce(o.mtime_ns, 0) AS t, lag(coalesce(o.mtime_ns, 0),"
	         " 1, 0) OVER (ORDER BY l.id) AS p FROM main.function_state_log l"
	         " LEFT JOIN \"%s\".statefs_log_time o ON o.id=l.id) WHERE t<>p",
	         schema);
	status = sqlb_exec(b, sql, "converting log times");
	if (status != SFS_OK)
		return status;
	/* Queues: a map row where an item's time exceeds every time before
	 * it (the running maximum is what the map gives), an override where
	 * it is below. */
	snprintf(sql, sizeof(sql),
	         "DELETE FROM main.statefs_queue_timemap;"
	         "DELETE FROM main." OVERRIDE ";"
	         "CREATE TEMP TABLE statefs_conv AS SELECT id, t, pm FROM"
	         " (SELECT q.id AS id, coalesce(o.enqueued_ns, 0) AS t,"
	         " max(coalesce(o.enqueued_ns, 0)) OVER (ORDER BY q.id ROWS"
	         " BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pm"
	         " FROM main.work_queue q LEFT JOIN \"%s\".statefs_queue_time o"
	         " ON o.id=q.id);"
	         "INSERT INTO main.statefs_queue_timemap (id, enqueued_ns)"
	         " SELECT id, t FROM temp.statefs_conv WHERE t > coalesce(pm, 0);"
	         "INSERT INTO main." OVERRIDE " (id, enqueued_ns)"
	         " SELECT id, t FROM temp.statefs_conv WHERE t < pm;"
	         "DROP TABLE temp.statefs_conv;", schema);
	return sqlb_exec(b, sql, "converting queue times");
}
