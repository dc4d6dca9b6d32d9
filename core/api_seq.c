/*
 * api_seq.c - the public append-log, queue and item functions: check the
 * arguments, take the handle's lock, call the backend once.
 */
#include "store_i.h"

int sfs_log_append(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice value, int64_t *id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_key3(scope, ns, key));
	CHECK(chk_value(s, value, "value"));
	GROUP_CALL_OUT(s, int64_t, id,
	               s->ops->log_append(s->be, scope, ns, key, value, &v_));
}

int sfs_log_scan(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t after_id, long limit, int keys_only, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->log_scan(s->be, scope, ns, key, after_id, limit,
	                         keys_only, out));
}

int sfs_log_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                int64_t id, sfs_buf *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->log_get(s->be, scope, ns, key, id, out));
}

int sfs_log_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 int64_t id, sfs_stat *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->log_stat(s->be, scope, ns, key, id, out));
}

int sfs_log_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   int64_t id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CALL_DELETE(s, s->ops->log_delete(s->be, scope, ns, key, id));
}

int sfs_log_clear(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_opt_name(ns, "namespace"));
	CHECK(chk_opt_name(key, "key"));
	if (key.ptr && !ns.ptr)
		return sfs_err(SFS_INVALID, "a key without a namespace");
	CALL_DELETE(s, s->ops->log_clear(s->be, scope, ns, key, count));
}

/* --- queues and their items ---------------------------------------------- */

int sfs_queue_push(sfs_store *s, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_name(queue, "queue"));
	if (n && !items)
		return sfs_err(SFS_INVALID, "items is NULL");
	for (size_t i = 0; i < n; i++)
		CHECK(chk_value(s, items[i], "item"));
	if (n == 0)
		return SFS_OK; /* no registration: nothing to do */
	GROUP_CALL_OUT(s, int64_t, first_id,
	               s->ops->queue_push(s->be, queue, items, n, &v_));
}

int sfs_queue_pop(sfs_store *s, sfs_slice queue, long max, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	if (max < 1)
		return sfs_err(SFS_INVALID, "max must be at least 1");
	CALL_DELETE(s, s->ops->queue_pop(s->be, queue, max, out));
}

/* The queue and state every item function takes. */
static int chk_item(const sfs_store *s, sfs_slice queue, sfs_item_state st)
{
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	return chk_state(st);
}

int sfs_item_count(sfs_store *s, sfs_slice queue, sfs_item_state state,
                   uint64_t *n)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_out(n, "n"));
	CALL(s, s->ops->item_count(s->be, queue, state, n));
}

int sfs_item_scan(sfs_store *s, sfs_slice queue, sfs_item_state state,
                  int64_t after_id, long limit, int keys_only,
                  sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->item_scan(s->be, queue, state, after_id, limit,
	                          keys_only, out));
}

int sfs_item_get(sfs_store *s, sfs_slice queue, sfs_item_state state,
                 int64_t id, sfs_buf *out)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->item_get(s->be, queue, state, id, out));
}

int sfs_item_stat(sfs_store *s, sfs_slice queue, sfs_item_state state,
                  int64_t id, sfs_stat *out)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->item_stat(s->be, queue, state, id, out));
}

int sfs_item_delete(sfs_store *s, sfs_slice queue, sfs_item_state state,
                    int64_t id)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_writable(s));
	CALL_DELETE(s, s->ops->item_delete(s->be, queue, state, id));
}

int sfs_item_clear(sfs_store *s, sfs_slice queue, sfs_item_state state,
                   uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_item(s, queue, state));
	CHECK(chk_writable(s));
	if (state == SFS_ITEM_INFLIGHT)
		return sfs_err(SFS_INVALID, "in-flight items leave through their"
		               " claims (ack, nack, or their lease's end)");
	CALL_DELETE(s, s->ops->item_clear(s->be, queue, state, count));
}
