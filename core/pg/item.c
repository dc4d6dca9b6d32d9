/*
 * item.c - a queue's items by state on PostgreSQL: the item entries of the
 * ops table (count, scan, get, stat, delete, clear), each one row per
 * state as in core/sqlite/item.c: pending items live in work_queue (the
 * table the SDKs share, seq.c), items in flight in statefs_inflight and
 * dead letters in statefs_dead (claim.c).
 */
#include "pg_i.h"

static int bad_state(sfs_item_state st)
{
	return sfs_err(SFS_INTERNAL, "item state %d", (int)st);
}

static int count_in(sfs_backend *b, const char *sql, sfs_slice queue,
                    uint64_t *n)
{
	pgp p = PGP_INIT;
	int64_t v = 0;
	int st;

	pgp_bytes(&p, queue);
	st = pgb_run_int(b, sql, &p, 0, &v, "counting items");
	if (st == SFS_OK)
		*n = (uint64_t)v;
	return st;
}

int pgb_item_count(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   uint64_t *n)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		return pgb_queue_len(b, queue, n);
	case SFS_ITEM_INFLIGHT:
		return count_in(b, "SELECT count(*) FROM statefs_inflight WHERE"
		                " queue = $1", queue, n);
	case SFS_ITEM_DEAD:
		return count_in(b, "SELECT count(*) FROM statefs_dead WHERE"
		                " queue = $1", queue, n);
	}
	return bad_state(st);
}

int pgb_item_scan(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t after_id, long limit, int keys_only,
                  sfs_list *out)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		return pgb_queue_scan(b, queue, after_id, limit, keys_only, out);
	case SFS_ITEM_INFLIGHT:
		return pgb_inflight_scan(b, queue, after_id, limit, keys_only,
		                         out);
	case SFS_ITEM_DEAD:
		return pgb_dead_scan(b, queue, after_id, limit, keys_only, out);
	}
	return bad_state(st);
}

int pgb_item_get(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                  int64_t id, sfs_buf *out)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		return pgb_queue_peek(b, queue, id, out);
	case SFS_ITEM_INFLIGHT:
		return pgb_inflight_peek(b, queue, id, out);
	case SFS_ITEM_DEAD:
		return pgb_dead_peek(b, queue, id, out);
	}
	return bad_state(st);
}

int pgb_item_stat(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                     int64_t id, sfs_stat *out)
{
	sfs_stat s = { 0 };
	int rc;

	switch (st) {
	case SFS_ITEM_PENDING:
		rc = pgb_queue_stat(b, queue, id, &s);
		break;
	case SFS_ITEM_INFLIGHT:
		rc = pgb_inflight_stat(b, queue, id, &s);
		break;
	case SFS_ITEM_DEAD:
		rc = pgb_dead_stat(b, queue, id, &s);
		break;
	default:
		return bad_state(st);
	}
	if (rc == SFS_OK)
		*out = s;
	return rc;
}

int pgb_item_delete(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                    int64_t id)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		return pgb_queue_delete(b, queue, id);
	case SFS_ITEM_INFLIGHT:
		return pgb_item_settle(b, queue, id, SFS_OUTCOME_DONE);
	case SFS_ITEM_DEAD:
		return pgb_dead_delete(b, queue, id);
	}
	return bad_state(st);
}

int pgb_item_clear(sfs_backend *b, sfs_slice queue, sfs_item_state st,
                   uint64_t *count)
{
	switch (st) {
	case SFS_ITEM_PENDING:
		return pgb_queue_clear(b, queue, count);
	case SFS_ITEM_DEAD:
		return pgb_dead_clear(b, queue, count);
	case SFS_ITEM_INFLIGHT:
		break;
	}
	return bad_state(st);
}
