/*
 * test_typed.c - the VGI Go SDK's typed families, through the key/value
 * calls statefs.h maps them to, and execution clear, after the SDK's
 * conformance suite (its cases 1-14 and 21) and vgi-python's exact count
 * of 3.
 */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define EX S("exec-A")

static void test_id_codec(void **state)
{
	unsigned char k[8];
	int64_t id = 0;

	(void)state;
	sfs_id_encode(1, k);
	assert_memory_equal(k, "\0\0\0\0\0\0\0\1", 8);
	sfs_id_encode(-1, k);
	assert_memory_equal(k, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	OK(sfs_id_decode(sfs_bytes(k, 8), &id));
	assert_int_equal(id, -1);
	sfs_id_encode(INT64_MIN, k);
	OK(sfs_id_decode(sfs_bytes(k, 8), &id));
	assert_true(id == INT64_MIN);
	IS(SFS_INVALID, sfs_id_decode(sfs_bytes(k, 7), &id));
	IS(SFS_INVALID, sfs_id_decode(SFS_NONE, &id));
}

/* The SDK's families are key/value state under its namespaces, with int64
 * ids as 8-byte keys (statefs.h, "The Go SDK's families"): these helpers
 * are the mapping the header documents, one call each. */
typedef struct idkey {
	unsigned char b[8];
} idkey;

static sfs_slice key_of(int64_t id, idkey *k)
{
	sfs_id_encode(id, k->b);
	return sfs_bytes(k->b, 8);
}

static int64_t id_of(const sfs_item *it)
{
	int64_t id = 0;

	OK(sfs_id_decode(sfs_bytes(it->key.ptr, it->key.len), &id));
	return id;
}

static int put_id(sfs_store *s, sfs_slice ex, const char *ns, int64_t id,
                  sfs_slice v)
{
	idkey k;

	return sfs_kv_put(s, ex, S(ns), key_of(id, &k), v);
}

/* AggGet: the states of n groups, parallel to ids. */
static int agg_get(sfs_store *s, sfs_slice ex, const int64_t *ids, size_t n,
                   sfs_list *out)
{
	idkey k[3];
	sfs_slice keys[3];

	for (size_t i = 0; i < n; i++)
		keys[i] = key_of(ids[i], &k[i]);
	return sfs_kv_get_many(s, ex, S(SFS_NS_AGG), keys, n, out);
}

/* WorkerPut_then_WorkerScan, _replaces_existing, _isolates_by_executionID,
 * WorkerCollect_drains. Negative ids sort after positive ones (8-byte
 * big-endian two's complement, as in the SDK). */
static void test_worker(void **state)
{
	tfx *t = *state;
	sfs_list l;

	OK(put_id(t->s, EX, SFS_NS_WORKER, 2, S("w2")));
	OK(put_id(t->s, EX, SFS_NS_WORKER, 1, S("w1-old")));
	OK(put_id(t->s, EX, SFS_NS_WORKER, 1, S("w1")));
	OK(put_id(t->s, EX, SFS_NS_WORKER, -5, S("neg")));
	OK(put_id(t->s, S("exec-B"), SFS_NS_WORKER, 1, S("other")));
	OK(sfs_kv_scan(t->s, EX, S(SFS_NS_WORKER), NULL, &l));
	assert_int_equal(l.n, 3);
	assert_int_equal(id_of(&l.items[0]), 1);
	tfx_buf(&l.items[0].value, "w1");
	assert_int_equal(id_of(&l.items[1]), 2);
	assert_int_equal(id_of(&l.items[2]), -5);
	sfs_list_free(&l);
	/* WorkerCollect */
	OK(sfs_kv_drain(t->s, EX, S(SFS_NS_WORKER), &l));
	assert_int_equal(l.n, 3);
	assert_int_equal(id_of(&l.items[2]), -5);
	tfx_buf(&l.items[2].value, "neg");
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, EX, S(SFS_NS_WORKER), NULL, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, S("exec-B"), S(SFS_NS_WORKER), NULL, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "other");
	sfs_list_free(&l);
}

static void test_scan_worker(void **state)
{
	tfx *t = *state;
	sfs_slice ns = S(SFS_NS_SCAN_WORKER);
	sfs_list l;

	OK(sfs_kv_put(t->s, EX, ns, S("stream-1"), S("a")));
	OK(sfs_kv_put(t->s, EX, ns, S("stream-2"), S("b")));
	OK(sfs_kv_put(t->s, EX, ns, S("stream-1"), S("a2")));
	OK(sfs_kv_scan(t->s, EX, ns, NULL, &l));
	tfx_keys(&l, "stream-1 stream-2");
	tfx_buf(&l.items[0].value, "a2");
	sfs_list_free(&l);
}

/* AggregateState_put_get_clear and _get_with_missing_groups. */
static void test_agg(void **state)
{
	tfx *t = *state;
	int64_t ids[3] = { 10, 20, 30 };
	sfs_slice vals[2] = { S("s10"), S("s20") };
	idkey k[2];
	sfs_slice keys[2] = { key_of(10, &k[0]), key_of(20, &k[1]) };
	sfs_list l;

	OK(sfs_kv_put_many(t->s, EX, S(SFS_NS_AGG), keys, vals, 2, 0));
	OK(agg_get(t->s, EX, ids, 3, &l));
	assert_int_equal(l.n, 3);
	assert_int_equal(id_of(&l.items[0]), 10);
	tfx_buf(&l.items[0].value, "s10");
	assert_int_equal(id_of(&l.items[1]), 20);
	tfx_buf(&l.items[1].value, "s20");
	/* the SDK's zero entry: the group asked for, and no state */
	assert_int_equal(id_of(&l.items[2]), 30);
	assert_null(l.items[2].value.ptr);
	sfs_list_free(&l);
	/* order follows the input, duplicates included */
	ids[0] = 20;
	ids[1] = 10;
	ids[2] = 20;
	OK(agg_get(t->s, EX, ids, 3, &l));
	tfx_buf(&l.items[0].value, "s20");
	tfx_buf(&l.items[1].value, "s10");
	tfx_buf(&l.items[2].value, "s20");
	sfs_list_free(&l);
	OK(agg_get(t->s, S("unknown"), ids, 3, &l));
	assert_int_equal(l.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(id_of(&l.items[i]), ids[i]);
		assert_null(l.items[i].value.ptr);
	}
	sfs_list_free(&l);
	/* AggClear */
	OK(sfs_kv_delete_range(t->s, EX, S(SFS_NS_AGG), SFS_NONE, SFS_NONE,
	                       NULL));
	OK(agg_get(t->s, EX, ids, 1, &l));
	assert_null(l.items[0].value.ptr);
	sfs_list_free(&l);
	/* empty inputs */
	OK(sfs_kv_get_many(t->s, EX, S(SFS_NS_AGG), NULL, 0, &l));
	assert_int_equal(l.n, 0);
	OK(sfs_kv_put_many(t->s, EX, S(SFS_NS_AGG), NULL, NULL, 0, 0));
	IS(SFS_INVALID, sfs_kv_get_many(t->s, EX, S(SFS_NS_AGG), NULL, 2, &l));
	IS(SFS_INVALID, sfs_kv_put_many(t->s, EX, S(SFS_NS_AGG), NULL, vals, 2,
	                                0));
}

static void test_agg_const(void **state)
{
	tfx *t = *state;
	sfs_slice ns = S(SFS_NS_AGG_CONST);
	sfs_buf b;

	OK(sfs_kv_put(t->s, EX, ns, S("my_sum"), S("args")));
	OK(sfs_kv_get(t->s, EX, ns, S("my_sum"), &b));
	tfx_buf(&b, "args");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, EX, ns, S("other"), &b));
}

/* AggregateWindowPartition_put_get_delete_clear. */
static void test_win(void **state)
{
	tfx *t = *state;
	sfs_slice ns = S(SFS_NS_WIN);
	idkey k0, k1;
	sfs_buf b;

	OK(put_id(t->s, EX, SFS_NS_WIN, 0, S("p0")));
	OK(put_id(t->s, EX, SFS_NS_WIN, 1, S("p1")));
	OK(sfs_kv_get(t->s, EX, ns, key_of(0, &k0), &b));
	tfx_buf(&b, "p0");
	sfs_buf_free(&b);
	OK(sfs_kv_delete(t->s, EX, ns, key_of(0, &k0)));
	IS(SFS_NOTFOUND, sfs_kv_delete(t->s, EX, ns, key_of(0, &k0)));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, EX, ns, key_of(0, &k0), &b));
	OK(sfs_kv_get(t->s, EX, ns, key_of(1, &k1), &b));
	tfx_buf(&b, "p1");
	sfs_buf_free(&b);
	OK(sfs_kv_delete_range(t->s, EX, ns, SFS_NONE, SFS_NONE, NULL));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, EX, ns, key_of(1, &k1), &b));
}

/* TransactionState_put_get_clear: [k1, k2, missing] -> [v1, v2, nil]. */
static void test_txn(void **state)
{
	tfx *t = *state;
	sfs_slice keys[3] = { S("k1"), S("k2"), S("missing") };
	sfs_slice vals[2] = { S("v1"), S("v2") };
	sfs_slice ns = S(SFS_NS_TXN);
	sfs_list l;

	OK(sfs_kv_put_many(t->s, S("txn-1"), ns, keys, vals, 2, 0));
	OK(sfs_kv_put_many(t->s, S("txn-2"), ns, keys, vals + 1, 1, 0));
	OK(sfs_kv_get_many(t->s, S("txn-1"), ns, keys, 3, &l));
	tfx_keys(&l, "k1 k2 missing");
	tfx_buf(&l.items[0].value, "v1");
	tfx_buf(&l.items[1].value, "v2");
	assert_null(l.items[2].value.ptr);
	sfs_list_free(&l);
	OK(sfs_kv_delete_range(t->s, S("txn-1"), ns, SFS_NONE, SFS_NONE, NULL));
	OK(sfs_kv_get_many(t->s, S("txn-1"), ns, keys, 1, &l));
	assert_null(l.items[0].value.ptr);
	sfs_list_free(&l);
	OK(sfs_kv_get_many(t->s, S("txn-2"), ns, keys, 1, &l));
	tfx_buf(&l.items[0].value, "v2"); /* other transactions survive */
	sfs_list_free(&l);
	OK(sfs_kv_get_many(t->s, S("txn-2"), ns, NULL, 0, &l));
	assert_int_equal(l.n, 0);
	OK(sfs_kv_put_many(t->s, S("txn-2"), ns, NULL, NULL, 0, 0));
}

/* vgi-python: 1 KV + 1 log row + 1 counter = 3; the queue survives; other
 * scopes survive; the second call gives 0; a never-used scope gives 0. */
static void test_exec_clear(void **state)
{
	tfx *t = *state;
	sfs_slice item = S("q");
	uint64_t n = 99;
	int64_t v;
	sfs_buf b;
	sfs_list l;

	OK(sfs_kv_put(t->s, EX, S("attach"), S("k"), S("v")));
	OK(sfs_log_append(t->s, EX, S(SFS_NS_LOG), S("k"), S("e"), NULL));
	OK(sfs_counter_add(t->s, EX, S("c"), S("k"), 1, NULL));
	OK(sfs_queue_push(t->s, EX, &item, 1, NULL));
	OK(sfs_kv_put(t->s, S("exec-B"), S("attach"), S("k"), S("keep")));
	OK(sfs_exec_clear(t->s, EX, &n));
	assert_int_equal(n, 3);
	OK(sfs_exec_clear(t->s, EX, &n));
	assert_int_equal(n, 0);
	OK(sfs_exec_clear(t->s, S("never-used"), &n));
	assert_int_equal(n, 0);
	OK(sfs_queue_pop(t->s, EX, 1, &l));
	tfx_buf(&l.items[0].value, "q");
	sfs_list_free(&l);
	OK(sfs_kv_get(t->s, S("exec-B"), S("attach"), S("k"), &b));
	tfx_buf(&b, "keep");
	sfs_buf_free(&b);
	v = -1;
	IS(SFS_NOTFOUND, sfs_counter_get(t->s, EX, S("c"), S("k"), &v, NULL));
	assert_int_equal(v, -1);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "exec-B");
	sfs_list_free(&l);
}

/* The SDK's ExecutionClear_wipes_scope_keeps_queue with every family. */
static void test_exec_clear_all_families(void **state)
{
	tfx *t = *state;
	sfs_slice v = S("x");
	uint64_t n = 0;

	OK(put_id(t->s, EX, SFS_NS_WORKER, 1, v));
	OK(sfs_kv_put(t->s, EX, S(SFS_NS_SCAN_WORKER), S("s"), v));
	OK(put_id(t->s, EX, SFS_NS_AGG, 7, v));
	OK(sfs_kv_put(t->s, EX, S(SFS_NS_AGG_CONST), S("f"), v));
	OK(put_id(t->s, EX, SFS_NS_WIN, 3, v));
	OK(sfs_kv_put_many(t->s, EX, S(SFS_NS_TXN), &v, &v, 1, 0));
	OK(sfs_log_append(t->s, EX, S(SFS_NS_LOG), S("k"), v, NULL));
	OK(sfs_log_append(t->s, EX, S(SFS_NS_LOG), S("k"), v, NULL));
	OK(sfs_counter_set(t->s, EX, S("n"), S("k"), 5));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, EX, S("empty-dir")));
	OK(sfs_exec_clear(t->s, EX, &n));
	assert_int_equal(n, 9);
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, EX, SFS_NONE));
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_LOG, EX, SFS_NONE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		cmocka_unit_test(test_id_codec),
		T(test_worker),
		T(test_scan_worker),
		T(test_agg),
		T(test_agg_const),
		T(test_win),
		T(test_txn),
		T(test_exec_clear),
		T(test_exec_clear_all_families),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
