/*
 * kv.c - scoped key/value state (function_state) and counters
 * (function_counter) over SQLite.
 *
 * Every write also maintains the row's last write time in statefs_kv_time or
 * statefs_counter_time, inside the same BEGIN IMMEDIATE transaction, so a
 * reader never sees a value without its time or the other way round. The
 * time tables share the data tables' key order, so range deletes apply the
 * same bounds to both without a join. Times have one-second resolution
 * (util_i.h), and the time upsert's conflict branch only updates when the
 * stored second is another than the current one: a key rewritten many
 * times in one second dirties its time page once, and the upsert that
 * changes nothing dirties no page at all; when the connection knows the
 * row is current (stamp.c), the upsert is not even run. A write's time is
 * its own, as a file's mtime is, also when it is earlier than the one
 * stored (a clock stepped back, a later time given by sfs_kv_set_mtime):
 * keeping the later one left the time unchanged by the write, and tools
 * that find changes by size and mtime (rsync) missed it.
 *
 * Counter overflow: SQLite turns an integer overflow into a REAL, which the
 * SDK would then store. The add statement instead carries the bounds
 * (computed in C, where they cannot overflow) between which the old value
 * may be for old + delta to fit; outside them the update does not happen,
 * RETURNING yields no row, and the transaction is rolled back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"
#include "util_i.h"

/* The WHERE and ORDER BY parts of a scan variant v (bits below), shared by
 * the data scan and the time scan beside it so the two read one range in
 * one order. */
static const char *range_lo(int v)
{
	return (v & 1) ? ((v & 16) ? " AND key>?3" : " AND key>=?3") : "";
}

static const char *range_hi(int v)
{
	return (v & 2) ? " AND key<?4" : "";
}

static const char *range_dir(int v)
{
	return (v & 4) ? " DESC" : "";
}

/* Builds the scan statement for variant v: bit 0 start bound, bit 1 end
 * bound, bit 2 descending, bit 3 keys only (counters ignore bit 3), bit 4
 * the start bound is exclusive. Its columns are sqlb_rows': id (0),
 * value, size, mtime (NULL: the time scan fills it in), counter, key. */
static sqlite3_stmt *scan_stmt(sfs_backend *b, int counters, int v,
                               int *status)
{
	int slot = (counters ? ST_CTR_SCAN : ST_KV_SCAN) + v;
	const char *table = counters ? "function_counter" : "function_state";
	const char *cols = counters ? "NULL, 0, NULL, n"
	                 : (v & 8) ? "NULL, length(value), NULL, 0"
	                           : "value, length(value), NULL, 0";
	char sql[512];

	if (b->st[slot])
		return b->st[slot];
	snprintf(sql, sizeof(sql),
	         "SELECT 0, %s, key FROM %s"
	         " WHERE scope_id=?1 AND ns=?2%s%s ORDER BY key%s LIMIT ?5",
	         cols, table,
	         range_lo(v), range_hi(v), range_dir(v));
	return sqlb_stmt(b, slot, sql, status);
}

/* The time rows of the same range in the same order (key, mtime): a
 * listing reads them beside the data rows, a merge of two ordered scans,
 * instead of seeking each key's time row (sqlb_rows_timed). */
static sqlite3_stmt *scan_time_stmt(sfs_backend *b, int counters, int v,
                                    int *status)
{
	int slot = (counters ? ST_CTR_SCAN_TIME : ST_KV_SCAN_TIME) + (v & ~8);
	char sql[512];

	if (b->st[slot])
		return b->st[slot];
	snprintf(sql, sizeof(sql),
	         "SELECT key, mtime_ns FROM %s"
	         " WHERE scope=?1 AND ns=?2%s%s ORDER BY key%s",
	         counters ? "statefs_counter_time" : "statefs_kv_time",
	         range_lo(v), range_hi(v), range_dir(v));
	return sqlb_stmt(b, slot, sql, status);
}

static void bind_range(sqlite3_stmt *st, sfs_slice start, sfs_slice end)
{
	if (start.ptr)
		sqlb_bind(st, 3, start);
	if (end.ptr)
		sqlb_bind(st, 4, end);
}

static int scan(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *o, sfs_list *out)
{
	int v = (o->start.ptr ? 1 : 0) | (o->end.ptr ? 2 : 0) |
	        (o->reverse ? 4 : 0) | (!counters && o->keys_only ? 8 : 0) |
	        (o->start.ptr && o->start_after ? 16 : 0);
	int status = SFS_OK;
	sqlite3_stmt *st = scan_stmt(b, counters, v, &status);
	sqlite3_stmt *tst = st ? scan_time_stmt(b, counters, v, &status) : NULL;

	if (!tst)
		return status;
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *s = i ? tst : st;

		sqlb_bind(s, 1, scope);
		sqlb_bind(s, 2, ns);
		bind_range(s, o->start, o->end);
	}
	sqlite3_bind_int64(st, 5, o->limit > 0 ? o->limit : -1);
	return sqlb_rows_timed(b, st, tst, o->reverse, out, "scanning");
}

int sqlb_kv_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 const sfs_scan_opts *o, sfs_list *out)
{
	return scan(b, 0, scope, ns, o, out);
}

int sqlb_counter_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      const sfs_scan_opts *o, sfs_list *out)
{
	return scan(b, 1, scope, ns, o, out);
}

#define KV_TIME_SQL                                                        \
	"INSERT INTO statefs_kv_time (scope, ns, key, mtime_ns)"            \
	" VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope, ns, key)"              \
	" DO UPDATE SET mtime_ns=excluded.mtime_ns"                          \
	" WHERE mtime_ns<>excluded.mtime_ns"

int sqlb_kv_time(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 sfs_slice key, int64_t now)
{
	int status = SFS_OK;
	sqlite3_stmt *tput = sqlb_stmt(b, ST_KV_PUT_TIME, KV_TIME_SQL, &status);

	if (!tput || stamp_key(b, 0, scope, ns, key, now))
		return status;
	sqlb_bind_key(tput, scope, ns, key);
	sqlite3_bind_int64(tput, 4, now);
	return sqlb_run(b, tput, "writing a value's time");
}

/* An explicit time: not a stamped write (it may move a time back), so
 * the stamp cache is emptied by its commit (stamp.c). */
static int kv_exists(sfs_backend *b, int counters, sfs_slice scope,
                     sfs_slice ns, sfs_slice key);

static int set_mtime_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key, int64_t mtime_ns)
{
	int status = kv_exists(b, 0, scope, ns, key);
	sqlite3_stmt *st = status == SFS_OK ? sqlb_stmt(b, ST_KV_SET_TIME,
	        "INSERT INTO statefs_kv_time (scope, ns, key, mtime_ns)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope, ns, key) DO"
	        " UPDATE SET mtime_ns=excluded.mtime_ns", &status) : NULL;

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, mtime_ns);
	return sqlb_run(b, st, "setting a value's time");
}

int sqlb_kv_set_mtime(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      sfs_slice key, int64_t mtime_ns)
{
	IN_WRITE_TX(b, set_mtime_tx(b, scope, ns, key, mtime_ns));
}

/* Writes one value and its time; inside a write transaction. */
static int put_one(sfs_backend *b, sqlite3_stmt *put, sfs_slice scope,
                   sfs_slice ns, sfs_slice key, sfs_slice value, int64_t now)
{
	int status;

	sqlb_bind_key(put, scope, ns, key);
	sqlb_bind(put, 4, value);
	status = sqlb_run(b, put, "writing a value");
	return status == SFS_OK ? sqlb_kv_time(b, scope, ns, key, now) : status;
}

static sqlite3_stmt *put_stmt(sfs_backend *b, int *status)
{
	/* An upsert updates the row in place; INSERT OR REPLACE (the SDK's
	 * statement, same result) deletes and re-inserts it under a new rowid,
	 * touching more pages. */
	return sqlb_stmt(b, ST_KV_PUT,
	        "INSERT INTO function_state (scope_id, ns, key, value)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET value=excluded.value", status);
}

static int put_many_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       const sfs_slice *keys, const sfs_slice *values,
                       size_t n)
{
	int64_t now = sfs_clock_mtime_ns();
	int status = SFS_OK;
	sqlite3_stmt *put = put_stmt(b, &status);

	for (size_t i = 0; put && i < n && status == SFS_OK; i++)
		status = put_one(b, put, scope, ns, keys[i], values[i], now);
	return status;
}

static sqlite3_stmt *get_stmt(sfs_backend *b, int *status)
{
	return sqlb_stmt(b, ST_KV_GET,
	        "SELECT value FROM function_state WHERE " SQLB_KEYEQ, status);
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* A value below SQLB_BIG_VALUE in one statement; a longer one (the
 * statement says NULL) through a blob handle, in one snapshot of its own. */
int sqlb_kv_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_buf *out)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *st = sqlb_stmt(b, ST_KV_GET_SMALL,
	        "SELECT CASE WHEN length(value) < " STR(SQLB_BIG_VALUE)
	        " THEN value END FROM function_state WHERE " SQLB_KEYEQ,
	        &status);
	const void *p;
	size_t n;

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		p = sqlb_col(st, 0, &n);
		status = buf_copy(out, p, n);
	} else if (rc == SQLITE_ROW) {
		status = SFS_TOOBIG; /* read below */
	} else {
		status = rc == SQLITE_DONE ? SFS_NOTFOUND
		                           : sqlb_fail(b, rc, "reading a value");
	}
	sqlite3_reset(st);
	if (status == SFS_TOOBIG)
		status = sqlb_kv_read(b, scope, ns, key, 0, SIZE_MAX, out, NULL);
	return status;
}

int sqlb_kv_get_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, size_t n, sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = get_stmt(b, &status);
	listb lb = LISTB_INIT;
	const void *p;
	size_t len;
	int rc = SQLITE_DONE;

	if (!st)
		return status;
	status = sqlb_begin_read(b); /* one snapshot for all keys */
	if (status != SFS_OK)
		return status;
	for (size_t i = 0; i < n; i++) {
		if (!listb_push(&lb))
			break;
		listb_key(&lb, keys[i].ptr, keys[i].len);
		sqlb_bind_key(st, scope, ns, keys[i]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			p = sqlb_col(st, 0, &len);
			listb_value(&lb, p, len);
			lb.items[lb.n - 1].st.size = len;
			rc = SQLITE_DONE;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			break;
	}
	if (rc != SQLITE_DONE) {
		status = sqlb_fail(b, rc, "reading values");
		sqlb_rollback(b);
		listb_discard(&lb);
		return status;
	}
	status = sqlb_commit(b);
	if (status != SFS_OK) {
		listb_discard(&lb);
		return status;
	}
	return listb_finish(&lb, out);
}

int sqlb_kv_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 sfs_stat *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_KV_STAT,
	        "SELECT length(f.value), t.mtime_ns FROM function_state f"
	        " LEFT JOIN statefs_kv_time t ON t.scope=f.scope_id"
	        " AND t.ns=f.ns AND t.key=f.key"
	        " WHERE f.scope_id=?1 AND f.ns=?2 AND f.key=?3", &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	return sqlb_one_stat(b, st, out, "reading a value's size");
}

/* --- deletes and their time rows ---------------------------------------
 *
 * A delete of one key removes the data row only: one statement over one
 * table and its index. The key's time row stays behind, invisible (every
 * read is driven by the data rows), and is simply updated if the key is
 * written again. The connection remembers the keys it deleted, and the
 * delete that brings them to UNTIME_BATCH removes their time rows in its
 * own transaction (as does closing the store): one time-table page per
 * batch of deletes instead of one per delete. That removal is guarded by
 * the data row's absence, so a key written again meanwhile, by anyone,
 * keeps its time; a crash leaves at most a batch of time rows behind, as
 * invisible as those of keys an SDK deleted, which the sweep (below)
 * removes. A rename deletes its target's
 * time row at once: the moved time row takes its place. */
#define UNTIME_BATCH 64

struct untimed {
	size_t n;
	unsigned char *key[UNTIME_BATCH]; /* counters flag, then three
	                                   * names, each after its length
	                                   * (a size_t) */
};

static sfs_slice part(const unsigned char **p)
{
	sfs_slice s;

	memcpy(&s.len, *p, sizeof(s.len));
	s.ptr = *p + sizeof(s.len);
	*p += sizeof(s.len) + s.len;
	return s;
}

/* Removes the remembered keys' time rows whose data row is still gone; in
 * an open write transaction. The list is empty afterwards either way. */
static int untime_flush(sfs_backend *b)
{
	static const char *const sql[2] = {
		"DELETE FROM statefs_kv_time WHERE " SQLB_OWN_KEYEQ " AND NOT"
		" EXISTS (SELECT 1 FROM function_state WHERE " SQLB_KEYEQ ")",
		"DELETE FROM statefs_counter_time WHERE " SQLB_OWN_KEYEQ " AND NOT"
		" EXISTS (SELECT 1 FROM function_counter WHERE " SQLB_KEYEQ ")",
	};
	struct untimed *u = b->untimed;
	int status = SFS_OK;

	for (size_t i = 0; u && i < u->n; i++) {
		const unsigned char *p = u->key[i] + 1;
		int counters = u->key[i][0];
		sfs_slice scope = part(&p), ns = part(&p), key = part(&p);
		sqlite3_stmt *st = status == SFS_OK ? sqlb_stmt(b, counters ?
		        ST_CTR_UNTIME : ST_KV_UNTIME, sql[counters], &status)
		        : NULL;

		if (st) {
			sqlb_bind_key(st, scope, ns, key);
			status = sqlb_run(b, st, "deleting times");
		}
		free(u->key[i]);
	}
	if (u)
		u->n = 0;
	return status;
}

/* Remembers a deleted key (the caller flushes a full batch). On no
 * memory the key is forgotten: its time row stays, invisible. */
static void untime_note(sfs_backend *b, int counters, sfs_slice scope,
                        sfs_slice ns, sfs_slice key)
{
	struct untimed *u = b->untimed;
	const sfs_slice parts[3] = { scope, ns, key };
	unsigned char *e, *p;

	if (!u && !(u = b->untimed = calloc(1, sizeof(*u))))
		return;
	if (!(e = p = malloc(1 + 3 * sizeof(size_t) + scope.len + ns.len +
	                     key.len)))
		return;
	*p++ = (unsigned char)counters;
	for (int i = 0; i < 3; i++) {
		memcpy(p, &parts[i].len, sizeof(parts[i].len));
		p += sizeof(parts[i].len);
		memcpy(p, parts[i].ptr, parts[i].len);
		p += parts[i].len;
	}
	u->key[u->n++] = e;
}

/*
 * The sweep. A time row whose data row another program deleted (an SDK's
 * own DELETE: its execution clear of a scope) is invisible, and nothing
 * of ours deletes it unless statefs deletes or clears that key or scope
 * later, which for a finished execution's scope never comes; neither does
 * anything for the batch a crash left. With executions coming and going,
 * those rows would pile up without bound under a constant live set. So
 * each recovery pass of every queue (sfs_queue_gc with no queue: the
 * daemon's, each interval) also looks at the next SWEEP_ROWS rows of
 * each time table, in key order from where the last pass of this
 * connection stopped, round and round, and deletes those whose data row
 * is gone: bounded work under the write lock the pass holds anyway, one
 * index range and a primary-key probe per row. The place is kept as the
 * last row's values (sqlite3_value_dup), whatever their types (an SDK's
 * TEXT key sorts before every BLOB). A key written again since keeps its
 * row, as at a batch of deletes.
 */
#define SWEEP_ROWS 1024

struct sweep {
	sqlite3_value *at[2][3]; /* per table: the last row swept; NULL
	                            at the start of the table */
};

static const char *const sweep_tables[2][2] = {
	{ "statefs_kv_time", "function_state" },
	{ "statefs_counter_time", "function_counter" },
};

static void sweep_forget(sqlite3_value **at)
{
	for (int i = 0; i < 3; i++) {
		sqlite3_value_free(at[i]);
		at[i] = NULL;
	}
}

/* One step over table t (0: values, 1: counters): *n gets the rows
 * deleted. In an open write transaction. */
static int sweep_step(sfs_backend *b, struct sweep *w, int t, uint64_t *n)
{
	sqlite3_value **at = w->at[t], *to[3] = { NULL, NULL, NULL };
	int from = at[0] != NULL, last, rc, status = SFS_OK;
	const char *tab = sweep_tables[t][0], *data = sweep_tables[t][1];
	sqlite3_stmt *st;
	char sql[512];

	/* where this step ends: its SWEEP_ROWS-th row, or the table's end */
	snprintf(sql, sizeof(sql), "SELECT scope, ns, key FROM %s%s ORDER BY"
	         " scope, ns, key LIMIT 1 OFFSET %d", tab, from ? " WHERE"
	         " (scope, ns, key)>(?1, ?2, ?3)" : "", SWEEP_ROWS - 1);
	st = sqlb_stmt(b, ST_TIME_SWEEP_END + 2 * t + from, sql, &status);
	if (!st)
		return status;
	for (int i = 0; from && i < 3; i++)
		sqlite3_bind_value(st, i + 1, at[i]);
	rc = sqlite3_step(st);
	last = rc != SQLITE_ROW;
	for (int i = 0; !last && i < 3; i++)
		if (!(to[i] = sqlite3_value_dup(sqlite3_column_value(st, i))))
			status = sfs_err(SFS_NOMEM, "sweeping times");
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		status = sqlb_fail(b, rc, "sweeping times");
	if (status == SFS_OK) {
		snprintf(sql, sizeof(sql), "DELETE FROM %s AS t WHERE%s%s NOT"
		         " EXISTS (SELECT 1 FROM %s AS f WHERE f.scope_id="
		         "t.scope AND f.ns=t.ns AND f.key=t.key)", tab,
		         from ? " (scope, ns, key)>(?1, ?2, ?3) AND" : "",
		         last ? "" : " (scope, ns, key)<=(?4, ?5, ?6) AND", data);
		st = sqlb_stmt(b, ST_TIME_SWEEP + 4 * t + 2 * last + from, sql,
		               &status);
	}
	if (status == SFS_OK && st) {
		for (int i = 0; i < 3; i++) {
			if (from)
				sqlite3_bind_value(st, i + 1, at[i]);
			if (!last)
				sqlite3_bind_value(st, i + 4, to[i]);
		}
		status = sqlb_run(b, st, "sweeping times");
		if (status == SFS_OK)
			*n += (uint64_t)sqlite3_changes64(b->db);
	}
	if (status != SFS_OK) {
		sweep_forget(to);
		return status;
	}
	sweep_forget(at);
	memcpy(at, to, sizeof(to)); /* last: NULL, from the start again */
	return SFS_OK;
}

int sqlb_time_sweep(sfs_backend *b, uint64_t *swept)
{
	int status = SFS_OK;

	if (!b->sweep && !(b->sweep = calloc(1, sizeof(*b->sweep))))
		return sfs_err(SFS_NOMEM, "sweeping times");
	for (int t = 0; t < 2 && status == SFS_OK; t++)
		status = sweep_step(b, b->sweep, t, swept);
	return status;
}

void sqlb_sweep_free(sfs_backend *b)
{
	if (!b->sweep)
		return;
	sweep_forget(b->sweep->at[0]);
	sweep_forget(b->sweep->at[1]);
	free(b->sweep);
	b->sweep = NULL;
}

void sqlb_untime_close(sfs_backend *b)
{
	if (b->untimed && b->untimed->n && !b->readonly &&
	    sqlb_begin_write(b) == SFS_OK)
		sqlb_end_write(b, untime_flush(b));
	else
		untime_flush(b); /* frees */
	free(b->untimed);
	b->untimed = NULL;
}

/* Deletes one data row: SFS_NOTFOUND when there was none. */
static int delete_row(sfs_backend *b, int counters, sfs_slice scope,
                      sfs_slice ns, sfs_slice key)
{
	int status = SFS_OK, changed = 0;
	sqlite3_stmt *st = sqlb_stmt(b, counters ? ST_CTR_DEL : ST_KV_DEL,
	        counters ? "DELETE FROM function_counter WHERE " SQLB_KEYEQ
	                 : "DELETE FROM function_state WHERE " SQLB_KEYEQ,
	        &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	status = sqlb_write1(b, st, "deleting", &changed);
	return status == SFS_OK && !changed ? SFS_NOTFOUND : status;
}

static int delete_full_tx(sfs_backend *b, int counters, sfs_slice scope,
                          sfs_slice ns, sfs_slice key)
{
	int status = delete_row(b, counters, scope, ns, key);

	if (status == SFS_OK)
		untime_note(b, counters, scope, ns, key);
	return status == SFS_OK ? untime_flush(b) : status;
}

/* sqlb_kv_delete and sqlb_counter_delete: one statement, its own
 * transaction (or part of the open one); every UNTIME_BATCH-th also
 * removes the batch's time rows, in one transaction with it. */
static int delete_one(sfs_backend *b, int counters, sfs_slice scope,
                      sfs_slice ns, sfs_slice key)
{
	int status;

	/* The first of a group's held writes (sqlb_group_hold): it opens the
	 * group's transaction, with its time row, rather than commit. */
	if ((b->untimed && b->untimed->n + 1 >= UNTIME_BATCH) ||
	    (b->group_held && !b->group_txn))
		IN_WRITE_TX(b, delete_full_tx(b, counters, scope, ns, key));
	status = delete_row(b, counters, scope, ns, key);
	if (status == SFS_OK)
		untime_note(b, counters, scope, ns, key);
	return status;
}

/* A rename's target (a value's or a counter's): the data row and the
 * time row at once. */
static int kv_delete_tx(sfs_backend *b, int counters, sfs_slice scope,
                        sfs_slice ns, sfs_slice key)
{
	int status = SFS_OK;
	sqlite3_stmt *tst = sqlb_stmt(b, ST_KV_DEL_TIME + counters, counters
	        ? "DELETE FROM statefs_counter_time WHERE " SQLB_OWN_KEYEQ
	        : "DELETE FROM statefs_kv_time WHERE " SQLB_OWN_KEYEQ, &status);

	if (!tst)
		return status;
	sqlb_bind_key(tst, scope, ns, key);
	status = sqlb_run(b, tst, "deleting a time");
	return status == SFS_OK ? delete_row(b, counters, scope, ns, key)
	                        : status;
}

int sqlb_kv_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key)
{
	return delete_one(b, 0, scope, ns, key);
}

/* Deletes [start, end) of (scope, ns) with its times; count may be NULL. */
static int delete_range_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                           sfs_slice start, sfs_slice end, uint64_t *count)
{
	int v = (start.ptr ? 1 : 0) | (end.ptr ? 2 : 0);
	const char *lo = (v & 1) ? " AND key>=?3" : "";
	const char *hi = (v & 2) ? " AND key<?4" : "";
	int status = SFS_OK;
	sqlite3_stmt *st, *tst;
	char sql[256];

	if (!(tst = b->st[ST_KV_DELRANGE_TIME + v])) {
		snprintf(sql, sizeof(sql), "DELETE FROM statefs_kv_time"
		         " WHERE scope=?1 AND ns=?2%s%s", lo, hi);
		if (!(tst = sqlb_stmt(b, ST_KV_DELRANGE_TIME + v, sql, &status)))
			return status;
	}
	if (!(st = b->st[ST_KV_DELRANGE + v])) {
		snprintf(sql, sizeof(sql), "DELETE FROM function_state"
		         " WHERE scope_id=?1 AND ns=?2%s%s", lo, hi);
		if (!(st = sqlb_stmt(b, ST_KV_DELRANGE + v, sql, &status)))
			return status;
	}
	sqlb_bind(tst, 1, scope);
	sqlb_bind(tst, 2, ns);
	bind_range(tst, start, end);
	status = sqlb_run(b, tst, "deleting times");
	if (status != SFS_OK)
		return status;
	sqlb_bind(st, 1, scope);
	sqlb_bind(st, 2, ns);
	bind_range(st, start, end);
	status = sqlb_run(b, st, "deleting a range");
	if (status == SFS_OK && count)
		*count = (uint64_t)sqlite3_changes64(b->db);
	return status;
}

int sqlb_kv_delete_range(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice start, sfs_slice end, uint64_t *count)
{
	uint64_t c = 0;
	int status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = delete_range_tx(b, scope, ns, start, end, &c);
	status = sqlb_end_write_if(b, status, c > 0);
	if (status == SFS_OK && count)
		*count = c;
	return status;
}

/* SFS_PUT_REPLACE (the stream engine's RestoreAll): the namespace empties
 * first, in the same transaction. A replace deletes time rows, so it is not
 * a stamped transaction. */
static int replace_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                      const sfs_slice *keys, const sfs_slice *values,
                      size_t n)
{
	int status = delete_range_tx(b, scope, ns, SFS_NONE, SFS_NONE, NULL);

	return status == SFS_OK ? put_many_tx(b, scope, ns, keys, values, n)
	                        : status;
}

int sqlb_kv_put_many(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     const sfs_slice *keys, const sfs_slice *values, size_t n,
                     unsigned flags)
{
	if (flags & SFS_PUT_REPLACE)
		IN_WRITE_TX(b, replace_tx(b, scope, ns, keys, values, n));
	IN_STAMPED_TX(b, put_many_tx(b, scope, ns, keys, values, n));
}

/* Drain: the read and the delete share one write transaction, which holds
 * the write lock from its first statement, so no other process can add or
 * remove a key in between and nothing is lost or returned twice. */
int sqlb_kv_drain(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_list *out)
{
	sfs_scan_opts all = { .start = SFS_NONE, .end = SFS_NONE };
	sfs_list l = { NULL, 0 };
	int status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = scan(b, 0, scope, ns, &all, &l);
	if (status == SFS_OK && l.n)
		status = delete_range_tx(b, scope, ns, SFS_NONE, SFS_NONE, NULL);
	status = sqlb_end_write_if(b, status, l.n > 0);
	if (status != SFS_OK) {
		sfs_list_free(&l);
		return status;
	}
	*out = l;
	return SFS_OK;
}

static int kv_exists(sfs_backend *b, int counters, sfs_slice scope,
                     sfs_slice ns, sfs_slice key)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_KV_EXISTS + counters, counters
	        ? "SELECT 1 FROM function_counter WHERE " SQLB_KEYEQ
	        : "SELECT 1 FROM function_state WHERE " SQLB_KEYEQ, &status);
	int rc;

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return SFS_OK;
	return rc == SQLITE_DONE ? SFS_NOTFOUND : sqlb_fail(b, rc, "looking up");
}

static int same(sfs_slice a, sfs_slice b)
{
	return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* Moves the row of (scope, ns, key) and its time row to (to_scope, to_ns,
 * to_key), where nothing is. */
static int move_tx(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                   sfs_slice to_key)
{
	int status = SFS_OK;
	sqlite3_stmt *mv = sqlb_stmt(b, ST_KV_MOVE + counters, counters
	        ? "UPDATE function_counter SET scope_id=?4, ns=?5, key=?6"
	          " WHERE " SQLB_KEYEQ
	        : "UPDATE function_state SET scope_id=?4, ns=?5, key=?6"
	          " WHERE " SQLB_KEYEQ, &status);
	sqlite3_stmt *tmv = mv ? sqlb_stmt(b, ST_KV_MOVE_TIME + counters, counters
	        ? "UPDATE statefs_counter_time SET scope=?4, ns=?5, key=?6"
	          " WHERE " SQLB_OWN_KEYEQ
	        : "UPDATE statefs_kv_time SET scope=?4, ns=?5, key=?6"
	          " WHERE " SQLB_OWN_KEYEQ, &status) : NULL;

	if (!tmv)
		return status;
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *st = i ? tmv : mv;

		sqlb_bind_key(st, scope, ns, key);
		sqlb_bind(st, 4, to_scope);
		sqlb_bind(st, 5, to_ns);
		sqlb_bind(st, 6, to_key);
		status = sqlb_run(b, st, "renaming");
		if (status != SFS_OK)
			return status;
	}
	return SFS_OK;
}

/* RENAME_EXCHANGE: the target must exist too; the source goes to a name
 * nothing has (in the transaction, so nobody sees it), the target to the
 * source's, the source to the target's. */
static int exchange_tx(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                       sfs_slice to_key)
{
	char tmp[48];
	sfs_slice t = SFS_NONE;
	int status = kv_exists(b, counters, to_scope, to_ns, to_key);

	if (status == SFS_NOTFOUND)
		return sfs_err(SFS_NOTFOUND, counters ? "the counter to exchange "
		               "with does not exist" : "the key to exchange with "
		               "does not exist");
	for (unsigned i = 0; status == SFS_OK; i++) {
		int n = snprintf(tmp, sizeof(tmp), "%cstatefs-exchange-%u", 0, i);

		t = sfs_bytes(tmp, (size_t)n);
		status = kv_exists(b, counters, scope, ns, t);
		if (status == SFS_NOTFOUND)
			break;
	}
	if (status != SFS_NOTFOUND)
		return status;
	status = move_tx(b, counters, scope, ns, key, scope, ns, t);
	if (status == SFS_OK)
		status = move_tx(b, counters, to_scope, to_ns, to_key, scope, ns,
		                 key);
	if (status == SFS_OK)
		status = move_tx(b, counters, scope, ns, t, to_scope, to_ns,
		                 to_key);
	return status;
}

/* Rename (of a value, or of a counter) keeps the time, as rename(2)
 * keeps a file's mtime. */
static int kv_rename_tx(sfs_backend *b, int counters, sfs_slice scope,
                        sfs_slice ns, sfs_slice key, sfs_slice to_scope,
                        sfs_slice to_ns, sfs_slice to_key, unsigned flags)
{
	int status = kv_exists(b, counters, scope, ns, key);

	if (status != SFS_OK)
		return status;
	if (same(scope, to_scope) && same(ns, to_ns) && same(key, to_key))
		return SFS_OK;
	if (flags & SFS_RENAME_EXCHANGE)
		return exchange_tx(b, counters, scope, ns, key, to_scope, to_ns,
		                   to_key);
	if (flags & SFS_RENAME_NOREPLACE) {
		status = kv_exists(b, counters, to_scope, to_ns, to_key);
		if (status == SFS_OK)
			return sfs_err(SFS_EXISTS, counters ? "the target counter"
			               " exists" : "the target key exists");
		if (status != SFS_NOTFOUND)
			return status;
	}
	status = kv_delete_tx(b, counters, to_scope, to_ns, to_key);
	if (status != SFS_OK && status != SFS_NOTFOUND)
		return status;
	return move_tx(b, counters, scope, ns, key, to_scope, to_ns, to_key);
}

int sqlb_kv_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                   sfs_slice to_key, unsigned flags)
{
	IN_WRITE_TX(b, kv_rename_tx(b, 0, scope, ns, key, to_scope, to_ns,
	                            to_key, flags));
}

int sqlb_counter_rename(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                        sfs_slice to_key, unsigned flags)
{
	IN_WRITE_TX(b, kv_rename_tx(b, 1, scope, ns, key, to_scope, to_ns,
	                            to_key, flags));
}

/* --- counters ----------------------------------------------------------- */

int sqlb_counter_get(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t *value, int64_t *mtime_ns)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CTR_GET,
	        "SELECT f.n, t.mtime_ns FROM function_counter f"
	        " LEFT JOIN statefs_counter_time t ON t.scope=f.scope_id"
	        " AND t.ns=f.ns AND t.key=f.key"
	        " WHERE f.scope_id=?1 AND f.ns=?2 AND f.key=?3", &status);
	int rc;

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*value = sqlite3_column_int64(st, 0);
		*mtime_ns = sqlite3_column_int64(st, 1);
		status = SFS_OK;
	} else if (rc == SQLITE_DONE) {
		status = SFS_NOTFOUND;
	} else {
		status = sqlb_fail(b, rc, "reading a counter");
	}
	sqlite3_reset(st);
	return status;
}

static int counter_time(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key)
{
	int status = SFS_OK;
	int64_t now = sfs_clock_mtime_ns();
	sqlite3_stmt *st = sqlb_stmt(b, ST_CTR_TIME,
	        "INSERT INTO statefs_counter_time (scope, ns, key, mtime_ns)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope, ns, key)"
	        " DO UPDATE SET mtime_ns=excluded.mtime_ns"
	        " WHERE mtime_ns<>excluded.mtime_ns", &status);

	if (!st || stamp_key(b, 1, scope, ns, key, now))
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, now);
	return sqlb_run(b, st, "writing a counter's time");
}

/* The add works on the value sqlb_counter_get reads: the integer the row
 * holds, or for a REAL (the SDKs' own `n = n + ?` past int64 makes one)
 * the integer SQLite's CAST gives, bounded to int64 as
 * sqlite3_column_int64 bounds it. So a counter that reads INT64_MAX takes
 * a negative add, and the sum is exact, an integer again: REAL arithmetic
 * would refuse every add (the REAL is outside the bounds) or, in range
 * but past 2^53, round small adds away. */
static int counter_add_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                          sfs_slice key, int64_t delta, int64_t *value)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CTR_ADD,
	        "INSERT INTO function_counter (scope_id, ns, key, n)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET n=CAST(n AS INTEGER)+excluded.n"
	        " WHERE CAST(n AS INTEGER) BETWEEN ?5 AND ?6"
	        " RETURNING n", &status);
	int64_t lo = delta < 0 ? INT64_MIN - delta : INT64_MIN;
	int64_t hi = delta > 0 ? INT64_MAX - delta : INT64_MAX;
	int rc;

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, delta);
	sqlite3_bind_int64(st, 5, lo);
	sqlite3_bind_int64(st, 6, hi);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*value = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	} else if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return sfs_err(SFS_OVERFLOW, "adding %lld leaves int64",
		               (long long)delta);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "adding to a counter");
	return counter_time(b, scope, ns, key);
}

int sqlb_counter_add(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t delta, int64_t *value)
{
	int64_t v = 0;
	int status = sqlb_begin_stamped(b);

	if (status == SFS_OK)
		status = sqlb_end_write(b, counter_add_tx(b, scope, ns, key,
		                                          delta, &v));
	if (status == SFS_OK && value)
		*value = v;
	return status;
}

static int counter_set_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                          sfs_slice key, int64_t value, int excl)
{
	int status = SFS_OK;
	sqlite3_stmt *st = excl
	        ? sqlb_stmt(b, ST_CTR_CREATE, "INSERT INTO function_counter"
	                    " (scope_id, ns, key, n) VALUES (?1, ?2, ?3, ?4)"
	                    " ON CONFLICT (scope_id, ns, key) DO NOTHING",
	                    &status)
	        : sqlb_stmt(b, ST_CTR_SET, "INSERT INTO function_counter"
	                    " (scope_id, ns, key, n) VALUES (?1, ?2, ?3, ?4)"
	                    " ON CONFLICT (scope_id, ns, key)"
	                    " DO UPDATE SET n=excluded.n", &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, value);
	status = sqlb_run(b, st, "setting a counter");
	if (status == SFS_OK && excl && sqlite3_changes(b->db) == 0)
		return sfs_err(SFS_EXISTS, "the counter exists");
	return status == SFS_OK ? counter_time(b, scope, ns, key) : status;
}

int sqlb_counter_set(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t value, int excl)
{
	IN_STAMPED_TX(b, counter_set_tx(b, scope, ns, key, value, excl));
}

int sqlb_counter_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                        sfs_slice key)
{
	return delete_one(b, 1, scope, ns, key);
}
