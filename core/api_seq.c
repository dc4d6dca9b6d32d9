/*
 * api_seq.c - the public append-log and work-queue functions: check the
 * arguments, take the handle's lock, call the backend once.
 */
#include "store_i.h"

int sfs_log_append(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice value, int64_t *id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_value(s, value, "value"));
	CALL(s, s->ops->log_append(s->be, scope, ns, key, value, id));
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
                 int64_t id, uint64_t *size, int64_t *mtime_ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(size, "size"));
	CALL(s, s->ops->log_stat(s->be, scope, ns, key, id, size, mtime_ns));
}

int sfs_log_keys(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice after,
                 long limit, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_opt_name(after, "after"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->log_keys(s->be, scope, ns, after, limit, out));
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

/* --- queues ------------------------------------------------------------- */

int sfs_queue_push(sfs_store *s, sfs_slice queue, const sfs_slice *items,
                   size_t n, int64_t *first_id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	if (n && !items)
		return sfs_err(SFS_INVALID, "items is NULL");
	for (size_t i = 0; i < n; i++)
		CHECK(chk_value(s, items[i], "item"));
	if (n == 0)
		return SFS_OK; /* no registration: nothing to do */
	CALL(s, s->ops->queue_push(s->be, queue, items, n, first_id));
}

int sfs_queue_pop(sfs_store *s, sfs_slice queue, sfs_buf *item, int64_t *id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(item, "item"));
	CALL(s, s->ops->queue_pop(s->be, queue, item, id));
}

int sfs_queue_drain(sfs_store *s, sfs_slice queue, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->queue_drain(s->be, queue, out));
}

int sfs_queue_scan(sfs_store *s, sfs_slice queue, int64_t after_id, long limit,
                   int keys_only, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->queue_scan(s->be, queue, after_id, limit, keys_only,
	                           out));
}

int sfs_queue_peek(sfs_store *s, sfs_slice queue, int64_t id, sfs_buf *item)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(item, "item"));
	CALL(s, s->ops->queue_peek(s->be, queue, id, item));
}

int sfs_queue_stat(sfs_store *s, sfs_slice queue, int64_t id, uint64_t *size,
                   int64_t *mtime_ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(size, "size"));
	CALL(s, s->ops->queue_stat(s->be, queue, id, size, mtime_ns));
}

int sfs_queue_delete(sfs_store *s, sfs_slice queue, int64_t id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL_DELETE(s, s->ops->queue_delete(s->be, queue, id));
}

int sfs_queue_clear(sfs_store *s, sfs_slice queue, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL_DELETE(s, s->ops->queue_clear(s->be, queue, count));
}

int sfs_queue_len(sfs_store *s, sfs_slice queue, uint64_t *len)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(len, "len"));
	CALL(s, s->ops->queue_len(s->be, queue, len));
}
