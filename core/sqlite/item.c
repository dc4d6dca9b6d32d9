/*
 * item.c - a queue's items by state: pending (work_queue), in flight
 * (statefs_inflight, under a statefs_claim) and dead (statefs_dead).
 *
 * The three tables have the same shape (an id, a queue, the item's bytes)
 * and differ in what else they know about an item, so the statements that
 * read items are built from one row per state (states[] below) and cached
 * per state: a listing, a count, a read and a stat are written once for the
 * three. What changes an item is each state's own: a pending item leaves
 * with its times (seq.c), an in-flight one by its claim's protocol and a
 * dead letter on its own (claim.c); the last two functions here only
 * dispatch to them.
 */
#include <stdio.h>

#include "sqlite_i.h"

typedef struct state_desc {
	const char *from;   /* the table as alias i (with the claim as c) */
	const char *queue;  /* i's queue column */
	const char *item;   /* i's bytes column */
	const char *mtime;  /* the item's sfs_stat mtime */
	const char *more;   /* deliveries, claim, lease, reason columns */
	const char *stat;   /* sqlb_one_stat's columns after size, mtime */
	const char *live;   /* more conditions on i: a queue's markers are
	                       rows of work_queue but not items (claim.c) */
} state_desc;

static const state_desc states[3] = {
	[SFS_ITEM_PENDING - 1] = {
		.from = "work_queue i", .queue = "execution_id",
		.item = "work_item", .mtime = TM_QUEUE_AT("i.id"),
		/* a pending item's count of earlier deliveries (a nack or
		 * a lease that ran out put it back), as PostgreSQL says */
		.more = ", 0, NULL, " TM_QUEUE_DELIVERIES("i.id"),
		.stat = ", " TM_QUEUE_DELIVERIES("i.id"),
		.live = " AND " SQLB_QLIVE("i.") },
	[SFS_ITEM_INFLIGHT - 1] = {
		.from = "statefs_inflight i LEFT JOIN statefs_claim c"
		        " ON c.claim_id=i.claim_id",
		.queue = "queue", .item = "item", .mtime = "i.enqueued_ns",
		.more = ", 0, NULL, i.deliveries, i.claim_id,"
		        " coalesce(c.lease_until, 0)",
		.stat = ", i.deliveries, i.claim_id, coalesce(c.lease_until, 0)",
		.live = "" },
	[SFS_ITEM_DEAD - 1] = {
		.from = "statefs_dead i", .queue = "queue", .item = "item",
		.mtime = "i.dead_ns",
		.more = ", 0, NULL, i.deliveries, 0, 0, i.reason",
		.stat = ", i.deliveries", .live = "" },
};

#define DESC(st) (&states[(st) - 1])

enum { I_COUNT, I_SCAN, I_GET, I_STAT };

/* The statement that does what (I_*) for items in state st, built on
 * first use. */
static sqlite3_stmt *item_stmt(sfs_backend *b, int what, sfs_item_state st,
                               int keys_only, int *status)
{
	static const int first[] = { [I_COUNT] = ST_ITEM_COUNT,
		[I_SCAN] = ST_ITEM_SCAN, [I_GET] = ST_ITEM_GET,
		[I_STAT] = ST_ITEM_STAT };
	int slot = what == I_SCAN ? first[what] + (st - 1) * 2 + !!keys_only
	                          : first[what] + st - 1;
	const state_desc *d = DESC(st);
	char sql[1024];

	if (b->st[slot])
		return b->st[slot];
	if (what == I_COUNT)
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE"
		         " i.%s=?1%s", d->from, d->queue, d->live);
	else if (what == I_SCAN)
		snprintf(sql, sizeof(sql), "SELECT i.id, %s%s, length(i.%s),"
		         " %s%s FROM %s WHERE i.%s=?1%s AND i.id>?2 ORDER BY"
		         " i.id LIMIT ?3", keys_only ? "NULL" : "i.",
		         keys_only ? "" : d->item, d->item, d->mtime, d->more,
		         d->from, d->queue, d->live);
	else if (what == I_GET)
		snprintf(sql, sizeof(sql), "SELECT i.%s FROM %s WHERE i.id=?2"
		         " AND i.%s=?1%s", d->item, d->from, d->queue, d->live);
	else
		snprintf(sql, sizeof(sql), "SELECT length(i.%s), %s%s FROM %s"
		         " WHERE i.id=?2 AND i.%s=?1%s", d->item, d->mtime,
		         d->stat, d->from, d->queue, d->live);
	return sqlb_stmt(b, slot, sql, status);
}

int sqlb_item_count(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    uint64_t *n)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *s = item_stmt(b, I_COUNT, st, 0, &status);

	if (!s)
		return status;
	sqlb_bind(s, 1, queue);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*n = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? SFS_OK : sqlb_fail(b, rc, "counting items");
}

int sqlb_item_scan(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   int64_t after_id, long limit, int keys_only,
                   sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *s = item_stmt(b, I_SCAN, st, keys_only, &status);

	if (!s)
		return status;
	sqlb_bind(s, 1, queue);
	sqlite3_bind_int64(s, 2, after_id);
	sqlite3_bind_int64(s, 3, limit > 0 ? limit : -1);
	return sqlb_rows(b, s, out, "reading items");
}

int sqlb_item_get(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t id, sfs_buf *out)
{
	int status = SFS_OK;
	sqlite3_stmt *s = item_stmt(b, I_GET, st, 0, &status);

	if (!s)
		return status;
	sqlb_bind(s, 1, queue);
	sqlite3_bind_int64(s, 2, id);
	return sqlb_one_blob(b, s, out, "reading an item");
}

int sqlb_item_stat(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   int64_t id, sfs_stat *out)
{
	int status = SFS_OK;
	sqlite3_stmt *s = item_stmt(b, I_STAT, st, 0, &status);

	if (!s)
		return status;
	sqlb_bind(s, 1, queue);
	sqlite3_bind_int64(s, 2, id);
	return sqlb_one_stat(b, s, out, "reading an item's size");
}

int sqlb_item_delete(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                     int64_t id)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		IN_WRITE_TX(b, sqlb_pending_delete_tx(b, queue, id));
	case SFS_ITEM_INFLIGHT:
		return sqlb_item_settle(b, queue, id, SFS_OUTCOME_DONE);
	case SFS_ITEM_DEAD:
		return sqlb_dead_delete(b, queue, id);
	}
	return sfs_err(SFS_INTERNAL, "item state %d", (int)st);
}

int sqlb_item_clear(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    uint64_t *count)
{
	uint64_t c = 0;
	int64_t before;
	int status;

	if (st == SFS_ITEM_DEAD)
		return sqlb_dead_clear(b, queue, count);
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	before = sqlite3_total_changes64(b->db);
	status = sqlb_pending_clear_tx(b, queue, INT64_MAX, &c);
	/* Nothing pending may still have cancelled items in flight. */
	status = sqlb_end_write_if(b, status,
	                           sqlite3_total_changes64(b->db) != before);
	if (status == SFS_OK && count)
		*count = c;
	return status;
}
