/*
 * seq.c - append-logs (function_state_log) and work queues (work_queue)
 * over SQLite: the two families whose rows carry ids. A queue's pending
 * items are read through item.c, with the other states.
 *
 * Ids come from AUTOINCREMENT, i.e. from sqlite_sequence in the store, not
 * from the process: they strictly increase across every scope and queue and
 * are never reused, not after a clear (DELETE does not lower the sequence)
 * and not after a restart. That is also why a list in the stream engine's
 * mapping extends correctly after a reopen: the next append asks the store.
 *
 * Pop is the SDK's single DELETE ... RETURNING of the head, inside a write
 * transaction: the write lock is held before the head is chosen, so two
 * processes never get one item.
 *
 * Times of entries and items come from the sparse time maps
 * (timemap.c): an append or push writes a map row at most once a
 * second, a pop writes none, and every listing derives each row's time in
 * the same query (one index seek per row, as a join would).
 */
#include <stdio.h>
#include <string.h>

#include "sqlite_i.h"
#include "util_i.h"

/* --- logs --------------------------------------------------------------- */

static int log_append_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice key, sfs_slice value, int64_t *id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_LOG_APPEND,
	        "INSERT INTO function_state_log (scope_id, ns, key, value)"
	        " VALUES (?1, ?2, ?3, ?4)", &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlb_bind(st, 4, value);
	status = sqlb_run(b, st, "appending");
	if (status != SFS_OK)
		return status;
	*id = sqlite3_last_insert_rowid(b->db);
	status = sqlb_id_check(*id, "appending to a log");
	if (status != SFS_OK)
		return status;
	return tm_note(b, TM_LOG, *id, sfs_clock_mtime_ns());
}

int sqlb_log_append(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, sfs_slice value, int64_t *id)
{
	int64_t v = 0;
	int status = sqlb_begin_stamped(b);

	if (status == SFS_OK)
		status = sqlb_end_write(b, log_append_tx(b, scope, ns, key, value,
		                                         &v));
	if (status == SFS_OK && id)
		*id = v;
	return status;
}

int sqlb_log_scan(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t after_id, long limit, int keys_only,
                  sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_LOG_SCAN + !!keys_only, keys_only ?
	        "SELECT l.id, NULL, length(l.value), " TM_LOG_AT("l.id")
	        " FROM function_state_log l"
	        " WHERE l.scope_id=?1 AND l.ns=?2 AND l.key=?3"
	        " AND l.id>?4 ORDER BY l.id LIMIT ?5" :
	        "SELECT l.id, l.value, length(l.value), " TM_LOG_AT("l.id")
	        " FROM function_state_log l"
	        " WHERE l.scope_id=?1 AND l.ns=?2 AND l.key=?3"
	        " AND l.id>?4 ORDER BY l.id LIMIT ?5", &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, after_id);
	sqlite3_bind_int64(st, 5, limit > 0 ? limit : -1);
	return sqlb_rows(b, st, out, "reading entries");
}

int sqlb_log_get(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_buf *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_LOG_GET,
	        "SELECT value FROM function_state_log"
	        " WHERE id=?4 AND " SQLB_KEYEQ, &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, id);
	return sqlb_one_blob(b, st, out, "reading a log entry");
}

int sqlb_log_stat(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t id, sfs_stat *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_LOG_STAT,
	        "SELECT length(l.value), " TM_LOG_AT("l.id")
	        " FROM function_state_log l WHERE l.id=?4"
	        " AND l.scope_id=?1 AND l.ns=?2 AND l.key=?3", &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, id);
	return sqlb_one_stat(b, st, out, "reading an entry's size");
}

/* The distinct keys, one index seek per key (a DISTINCT would visit every
 * entry of every key). */
int sqlb_log_keys(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice after, long limit, sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *first = sqlb_stmt(b, ST_LOG_KEY_FIRST,
	        "SELECT key FROM function_state_log WHERE scope_id=?1 AND ns=?2"
	        " ORDER BY key LIMIT 1", &status);
	sqlite3_stmt *next = first ? sqlb_stmt(b, ST_LOG_KEY_NEXT,
	        "SELECT key FROM function_state_log WHERE scope_id=?1 AND ns=?2"
	        " AND key>?3 ORDER BY key LIMIT 1", &status) : NULL;
	listb lb = LISTB_INIT;
	sfs_slice cur = after;
	int rc = SQLITE_DONE;

	if (!next)
		return status;
	status = sqlb_begin_read(b);
	if (status != SFS_OK)
		return status;
	for (long i = 0; limit <= 0 || i < limit; i++) {
		sqlite3_stmt *st = cur.ptr ? next : first;
		const void *p;
		size_t n;

		sqlb_bind(st, 1, scope);
		sqlb_bind(st, 2, ns);
		if (cur.ptr)
			sqlb_bind(st, 3, cur);
		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW) {
			sqlite3_reset(st);
			break;
		}
		p = sqlb_col(st, 0, &n);
		if (!listb_push(&lb)) {
			sqlite3_reset(st);
			rc = SQLITE_DONE;
			break;
		}
		listb_key(&lb, p, n);
		sqlite3_reset(st);
		if (lb.nomem)
			break;
		/* The key just copied is the next lower bound. */
		cur.ptr = (const unsigned char *)lb.bytes +
		          ((uintptr_t)lb.items[lb.n - 1].key.ptr - 1);
		cur.len = n;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		status = sqlb_fail(b, rc, "listing log keys");
		sqlb_rollback(b);
		listb_discard(&lb);
		return status;
	}
	sqlb_commit(b);
	return listb_finish(&lb, out);
}

static int log_delete_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice key, int64_t id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_LOG_DEL,
	        "DELETE FROM function_state_log WHERE id=?4 AND " SQLB_KEYEQ,
	        &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	sqlite3_bind_int64(st, 4, id);
	status = sqlb_run(b, st, "deleting a log entry");
	if (status == SFS_OK && sqlite3_changes(b->db) == 0)
		return SFS_NOTFOUND;
	return status == SFS_OK ? tm_prune(b, TM_LOG, id, id) : status;
}

int sqlb_log_delete(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t id)
{
	IN_WRITE_TX(b, log_delete_tx(b, scope, ns, key, id));
}

/* Variant 0: whole scope, 1: one namespace, 2: one key. The id range of
 * what goes is read first, for the time map's pruning. */
int sqlb_log_clear(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, uint64_t *count)
{
	static const char *const where[3] = {
		"scope_id=?1", "scope_id=?1 AND ns=?2",
		"scope_id=?1 AND ns=?2 AND key=?3",
	};
	int v = !ns.ptr ? 0 : !key.ptr ? 1 : 2;
	int status = SFS_OK, rc;
	sqlite3_stmt *st = b->st[ST_LOG_CLEAR + v];
	sqlite3_stmt *rst = b->st[ST_LOG_CLEAR_RANGE + v];
	int64_t lo = 0, hi = -1;
	char sql[256];
	uint64_t c = 0;

	if (!rst) {
		snprintf(sql, sizeof(sql), "SELECT min(id), max(id) FROM"
		         " function_state_log WHERE %s", where[v]);
		if (!(rst = sqlb_stmt(b, ST_LOG_CLEAR_RANGE + v, sql, &status)))
			return status;
	}
	if (!st) {
		snprintf(sql, sizeof(sql),
		         "DELETE FROM function_state_log WHERE %s", where[v]);
		if (!(st = sqlb_stmt(b, ST_LOG_CLEAR + v, sql, &status)))
			return status;
	}
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	for (int i = 0; i < 2 && status == SFS_OK; i++) {
		sqlite3_stmt *s = i ? st : rst;

		sqlb_bind(s, 1, scope);
		if (v >= 1)
			sqlb_bind(s, 2, ns);
		if (v == 2)
			sqlb_bind(s, 3, key);
		if (i == 0) {
			rc = sqlite3_step(s);
			if (rc == SQLITE_ROW &&
			    sqlite3_column_type(s, 0) != SQLITE_NULL) {
				lo = sqlite3_column_int64(s, 0);
				hi = sqlite3_column_int64(s, 1);
			}
			sqlite3_reset(s);
			if (rc != SQLITE_ROW)
				status = sqlb_fail(b, rc, "clearing a log");
			continue;
		}
		status = sqlb_run(b, s, "clearing a log");
		c = (uint64_t)sqlite3_changes64(b->db);
	}
	if (status == SFS_OK && c)
		status = tm_prune(b, TM_LOG, lo, hi);
	status = sqlb_end_write_if(b, status, c > 0);
	if (status == SFS_OK && count)
		*count = c;
	return status;
}

/* --- queues ------------------------------------------------------------- */

static int queue_push_tx(sfs_backend *b, sfs_slice queue,
                         const sfs_slice *items, size_t n, int64_t *first_id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_Q_PUSH,
	        "INSERT INTO work_queue (execution_id, work_item) VALUES (?1, ?2)",
	        &status);

	if (!st)
		return status;
	for (size_t i = 0; i < n; i++) {
		sqlb_bind(st, 1, queue);
		sqlb_bind(st, 2, items[i]);
		status = sqlb_run(b, st, "pushing");
		if (status == SFS_OK)
			status = sqlb_id_check(sqlite3_last_insert_rowid(b->db),
			                       "pushing to a queue");
		if (status != SFS_OK)
			return status;
		if (i == 0)
			*first_id = sqlite3_last_insert_rowid(b->db);
	}
	qstat_note(b, queue, n, 0);
	/* One time for the batch: the map row (if any) at its first id. */
	return tm_note(b, TM_QUEUE, *first_id, sfs_clock_mtime_ns());
}

int sqlb_queue_push(sfs_backend *b, sfs_slice queue, const sfs_slice *items,
                    size_t n, int64_t *first_id)
{
	int64_t id = 0;
	int status = sqlb_begin_stamped(b);

	if (status == SFS_OK)
		status = sqlb_end_write(b, queue_push_tx(b, queue, items, n, &id));
	if (status == SFS_OK && first_id)
		*first_id = id;
	return status;
}

/* Takes the head: one statement, the SDK's DELETE ... RETURNING, into a
 * list of one item with its size; not its time, which would cost two more
 * lookups on the hot path (statefs.h, sfs_queue_pop). */
static int pop_one_tx(sfs_backend *b, sfs_slice queue, sfs_list *out)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *st = sqlb_stmt(b, ST_Q_POP,
	        "DELETE FROM work_queue WHERE id = (SELECT id FROM work_queue"
	        " WHERE execution_id=?1 AND " SQLB_QLIVE("") " ORDER BY id ASC"
	        " LIMIT 1) RETURNING id, work_item", &status);
	const void *p;
	size_t n;

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		p = sqlb_col(st, 1, &n);
		status = list_one(out, sqlite3_column_int64(st, 0), p, n);
		if (status == SFS_OK)
			rc = sqlite3_step(st);
	}
	sqlite3_reset(st);
	if (status == SFS_OK && rc != SQLITE_DONE)
		status = sqlb_fail(b, rc, "popping");
	if (status != SFS_OK || out->n == 0) {
		sfs_list_free(out);
		return status == SFS_OK ? SFS_NOTFOUND : status;
	}
	qstat_note(b, queue, 0, 1);
	return tm_override_del(b, out->items[0].id);
}

/* Takes up to max items from the head: they are the first max pending
 * ones, read, then deleted up to the last one's id, under the write lock
 * that the transaction took before it read. */
static int pop_many_tx(sfs_backend *b, sfs_slice queue, long max,
                       sfs_list *out)
{
	uint64_t c = 0;
	int status = sqlb_item_scan(b, queue, SFS_ITEM_PENDING, -1, max, 0,
	                            out);

	if (status == SFS_OK && out->n == 0)
		return SFS_NOTFOUND;
	if (status == SFS_OK)
		status = sqlb_pending_clear_tx(b, queue,
		                               out->items[out->n - 1].id, &c);
	if (status == SFS_OK)
		qstat_note(b, queue, 0, out->n);
	return status;
}

int sqlb_queue_pop(sfs_backend *b, sfs_slice queue, long max, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	int status = max == 1 ? sqlb_begin_stamped(b) : sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = max == 1 ? pop_one_tx(b, queue, &l)
	                  : pop_many_tx(b, queue, max, &l);
	status = sqlb_end_write_if(b, status, l.n > 0);
	if (status == SFS_OK && l.n == 0)
		status = SFS_NOTFOUND;
	if (status != SFS_OK) {
		sfs_list_free(&l);
		return status;
	}
	*out = l;
	return SFS_OK;
}

/* Deletes the pending items of a queue with ids up to upto, with their
 * times; inside a write transaction. upto == INT64_MAX is a clear, which
 * also deletes the queue's markers: that is how every clear, ours or
 * another program's, reaches its items in flight (the trigger
 * statefs_queue_clear cancels them and keeps the markers, claim.c). A pop
 * up to an id takes items only and leaves the markers. */
int sqlb_pending_clear_tx(sfs_backend *b, sfs_slice queue, int64_t upto,
                          uint64_t *count)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *rst = sqlb_stmt(b, ST_Q_CLEAR_RANGE,
	        "SELECT min(id), max(id) FROM work_queue WHERE execution_id=?1"
	        " AND id<=?2 AND " SQLB_QLIVE(""), &status);
	sqlite3_stmt *ost = rst ? sqlb_stmt(b, ST_Q_CLEAR_OVR,
	        "DELETE FROM statefs_queue_pending WHERE id IN"
	        " (SELECT id FROM work_queue WHERE execution_id=?1 AND id<=?2)",
	        &status) : NULL;
	sqlite3_stmt *st = !ost ? NULL : upto == INT64_MAX ? sqlb_stmt(b,
	        ST_Q_CLEAR, "DELETE FROM work_queue WHERE execution_id=?1"
	        " AND id<=?2", &status)
	        : sqlb_stmt(b, ST_Q_CLEAR + 1, "DELETE FROM work_queue WHERE"
	        " execution_id=?1 AND id<=?2 AND " SQLB_QLIVE(""), &status);
	int64_t lo = 0, hi = -1;
	uint64_t c;

	if (!st)
		return status;
	sqlb_bind(rst, 1, queue);
	sqlite3_bind_int64(rst, 2, upto);
	rc = sqlite3_step(rst);
	if (rc == SQLITE_ROW && sqlite3_column_type(rst, 0) != SQLITE_NULL) {
		lo = sqlite3_column_int64(rst, 0);
		hi = sqlite3_column_int64(rst, 1);
	}
	sqlite3_reset(rst);
	if (rc != SQLITE_ROW)
		return sqlb_fail(b, rc, "clearing a queue");
	sqlb_bind(ost, 1, queue);
	sqlite3_bind_int64(ost, 2, upto);
	status = sqlb_run(b, ost, "clearing a queue");
	if (status != SFS_OK)
		return status;
	sqlb_bind(st, 1, queue);
	sqlite3_bind_int64(st, 2, upto);
	status = sqlb_run(b, st, "clearing a queue");
	if (status != SFS_OK)
		return status;
	c = (uint64_t)sqlite3_changes64(b->db);
	if (c)
		status = tm_prune(b, TM_QUEUE, lo, hi);
	if (status == SFS_OK)
		*count = c;
	return status;
}

/* Deletes one pending item with its time rows; inside a write
 * transaction. */
int sqlb_pending_delete_tx(sfs_backend *b, sfs_slice queue, int64_t id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_Q_DEL,
	        "DELETE FROM work_queue WHERE id=?2 AND execution_id=?1 AND "
	        SQLB_QLIVE(""), &status);

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	sqlite3_bind_int64(st, 2, id);
	status = sqlb_run(b, st, "deleting a queue item");
	if (status == SFS_OK && sqlite3_changes(b->db) == 0)
		return SFS_NOTFOUND;
	if (status == SFS_OK)
		status = tm_override_del(b, id);
	return status == SFS_OK ? tm_prune(b, TM_QUEUE, id, id) : status;
}
