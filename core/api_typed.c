/*
 * api_typed.c - the VGI Go SDK's typed families (worker, scan-worker,
 * aggregate, aggregate const args, window partitions, transaction state)
 * and execution clear.
 *
 * They are key/value state under reserved namespaces with the SDK's key
 * encodings, so this file only encodes keys and shapes results; it calls
 * sfs_kv_* or the same backend entries. A backend gets them for free.
 */
#include <stdint.h>
#include <stdlib.h>

#include "store_i.h"

#define NS(x) sfs_bytes(x, sizeof(x) - 1)

void sfs_id_encode(int64_t id, unsigned char out[8])
{
	uint64_t u = (uint64_t)id;

	for (int i = 7; i >= 0; i--) {
		out[i] = (unsigned char)(u & 0xff);
		u >>= 8;
	}
}

int sfs_id_decode(sfs_slice key, int64_t *id)
{
	const unsigned char *p = key.ptr;
	uint64_t u = 0;

	sfs_err_clear();
	if (!p || key.len != 8)
		return sfs_err(SFS_INVALID, "an id key is 8 bytes, not %zu",
		               key.len);
	CHECK(chk_out(id, "id"));
	for (int i = 0; i < 8; i++)
		u = (u << 8) | p[i];
	*id = (int64_t)u;
	return SFS_OK;
}

/* The SDK's int64FromKey: 0 for a key that is not 8 bytes. */
static int64_t id_of(sfs_slice key)
{
	int64_t id = 0;

	if (key.ptr && key.len == 8)
		sfs_id_decode(key, &id);
	return id;
}

static void fill_ids(sfs_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		l->items[i].id = id_of(sfs_bytes(l->items[i].key.ptr,
		                                 l->items[i].key.len));
}

/* Every id of a list from its 8-byte key (the SDK's int64FromKey). */
static int scan_ids(sfs_store *s, sfs_slice scope, sfs_slice ns, int drain,
                    sfs_list *out)
{
	int r = drain ? sfs_kv_drain(s, scope, ns, out)
	              : sfs_kv_scan(s, scope, ns, NULL, out);

	if (r == SFS_OK)
		fill_ids(out);
	return r;
}

/* --- worker and scan-worker state --------------------------------------- */

int sfs_worker_put(sfs_store *s, sfs_slice exec, int64_t worker_id,
                   sfs_slice value)
{
	unsigned char k[8];

	sfs_id_encode(worker_id, k);
	return sfs_kv_put(s, exec, NS(SFS_NS_WORKER), sfs_bytes(k, 8), value);
}

int sfs_worker_scan(sfs_store *s, sfs_slice exec, sfs_list *out)
{
	return scan_ids(s, exec, NS(SFS_NS_WORKER), 0, out);
}

int sfs_worker_collect(sfs_store *s, sfs_slice exec, sfs_list *out)
{
	return scan_ids(s, exec, NS(SFS_NS_WORKER), 1, out);
}

int sfs_scan_worker_put(sfs_store *s, sfs_slice exec, sfs_slice stream_id,
                        sfs_slice value)
{
	return sfs_kv_put(s, exec, NS(SFS_NS_SCAN_WORKER), stream_id, value);
}

/* Stream ids are bytes, not numbers: a key/value scan leaves item.id 0. */
int sfs_scan_worker_scan(sfs_store *s, sfs_slice exec, sfs_list *out)
{
	return sfs_kv_scan(s, exec, NS(SFS_NS_SCAN_WORKER), NULL, out);
}

/* --- aggregate state ---------------------------------------------------- */

/* The 8-byte keys of n >= 1 group ids, in one malloc'd block: *keys holds
 * n slices, then the bytes they point into. */
static int id_keys(const int64_t *ids, size_t n, sfs_slice **keys)
{
	const size_t each = sizeof(**keys) + 8;
	sfs_slice *k;
	unsigned char *kb;

	k = n <= SIZE_MAX / each ? malloc(n * each) : NULL;
	if (!k)
		return sfs_err(SFS_NOMEM, "allocating %zu keys", n);
	kb = (unsigned char *)(k + n);
	for (size_t i = 0; i < n; i++) {
		sfs_id_encode(ids[i], kb + 8 * i);
		k[i] = sfs_bytes(kb + 8 * i, 8);
	}
	*keys = k;
	return SFS_OK;
}

int sfs_agg_get(sfs_store *s, sfs_slice exec, const int64_t *ids, size_t n,
                sfs_list *out)
{
	sfs_slice *keys = NULL;
	sfs_list l = { NULL, 0 };
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(exec, "exec"));
	CHECK(chk_out(out, "out"));
	if (n && !ids)
		return sfs_err(SFS_INVALID, "ids is NULL");
	if (n == 0) {
		out->items = NULL;
		out->n = 0;
		return SFS_OK;
	}
	CHECK(id_keys(ids, n, &keys));
	store_lock(s);
	r = s->ops->kv_get_many(s->be, exec, NS(SFS_NS_AGG), keys, n, &l);
	store_unlock(s);
	free(keys);
	if (r != SFS_OK)
		return r;
	/* The SDK's zero entry for a group without state: id 0, no value. */
	for (size_t i = 0; i < l.n; i++)
		l.items[i].id = l.items[i].value.ptr ? ids[i] : 0;
	*out = l;
	return SFS_OK;
}

int sfs_agg_put(sfs_store *s, sfs_slice exec, const int64_t *ids,
                const sfs_slice *values, size_t n)
{
	sfs_slice *keys = NULL;
	int r;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(exec, "exec"));
	if (n && (!ids || !values))
		return sfs_err(SFS_INVALID, "ids or values is NULL");
	for (size_t i = 0; i < n; i++)
		CHECK(chk_value(s, values[i], "value"));
	if (n == 0)
		return SFS_OK;
	CHECK(id_keys(ids, n, &keys));
	store_lock(s);
	r = s->ops->kv_put_many(s->be, exec, NS(SFS_NS_AGG), keys, values, n);
	store_unlock(s);
	free(keys);
	return r;
}

int sfs_agg_clear(sfs_store *s, sfs_slice exec)
{
	return sfs_kv_delete_ns(s, exec, NS(SFS_NS_AGG), NULL);
}

int sfs_agg_const_put(sfs_store *s, sfs_slice exec, sfs_slice function,
                      sfs_slice args)
{
	return sfs_kv_put(s, exec, NS(SFS_NS_AGG_CONST), function, args);
}

int sfs_agg_const_get(sfs_store *s, sfs_slice exec, sfs_slice function,
                      sfs_buf *out)
{
	return sfs_kv_get(s, exec, NS(SFS_NS_AGG_CONST), function, out);
}

/* --- window partitions -------------------------------------------------- */

int sfs_win_put(sfs_store *s, sfs_slice exec, int64_t partition,
                sfs_slice value)
{
	unsigned char k[8];

	sfs_id_encode(partition, k);
	return sfs_kv_put(s, exec, NS(SFS_NS_WIN), sfs_bytes(k, 8), value);
}

int sfs_win_get(sfs_store *s, sfs_slice exec, int64_t partition, sfs_buf *out)
{
	unsigned char k[8];

	sfs_id_encode(partition, k);
	return sfs_kv_get(s, exec, NS(SFS_NS_WIN), sfs_bytes(k, 8), out);
}

int sfs_win_delete(sfs_store *s, sfs_slice exec, int64_t partition)
{
	unsigned char k[8];

	sfs_id_encode(partition, k);
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(exec, "exec"));
	CALL(s, s->ops->kv_delete(s->be, exec, NS(SFS_NS_WIN), sfs_bytes(k, 8)));
}

int sfs_win_clear(sfs_store *s, sfs_slice exec)
{
	return sfs_kv_delete_ns(s, exec, NS(SFS_NS_WIN), NULL);
}

/* --- transaction state -------------------------------------------------- */

int sfs_txn_get(sfs_store *s, sfs_slice txn, const sfs_slice *keys, size_t n,
                sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(txn, "txn"));
	CHECK(chk_out(out, "out"));
	if (n && !keys)
		return sfs_err(SFS_INVALID, "keys is NULL");
	for (size_t i = 0; i < n; i++)
		CHECK(chk_name(keys[i], "key"));
	if (n == 0) {
		out->items = NULL;
		out->n = 0;
		return SFS_OK;
	}
	CALL(s, s->ops->kv_get_many(s->be, txn, NS(SFS_NS_TXN), keys, n, out));
}

int sfs_txn_put(sfs_store *s, sfs_slice txn, const sfs_slice *keys,
                const sfs_slice *values, size_t n)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(txn, "txn"));
	CHECK(chk_pairs(s, keys, values, n));
	if (n == 0)
		return SFS_OK;
	CALL(s, s->ops->kv_put_many(s->be, txn, NS(SFS_NS_TXN), keys, values,
	                            n));
}

int sfs_txn_clear(sfs_store *s, sfs_slice txn)
{
	return sfs_kv_delete_ns(s, txn, NS(SFS_NS_TXN), NULL);
}

/* --- execution clear ---------------------------------------------------- */

int sfs_exec_clear(sfs_store *s, sfs_slice scope, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CALL_DELETE(s, s->ops->exec_clear(s->be, scope, count));
}
