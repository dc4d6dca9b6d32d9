/*
 * test_kv.c - scoped key/value state and counters: the VGI SDK's
 * conformance cases, the edges its peers decide differently (empty vs
 * absent, empty bounds, start >= end, 0x00 and >= 0x80 bytes, overflow;
 * docs/engine.md says what statefs does) and the stream engine's
 * RestoreAll.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define SC S("scope")
#define NS_ S("ns")

static void put(sfs_store *s, const char *k, const char *v)
{
	OK(sfs_kv_put(s, SC, NS_, S(k), S(v)));
}

static void get_is(sfs_store *s, const char *k, const char *v)
{
	sfs_buf b;

	OK(sfs_kv_get(s, SC, NS_, S(k), &b));
	tfx_buf(&b, v);
	sfs_buf_free(&b);
}

static void test_put_get_replace(void **state)
{
	tfx *t = *state;
	sfs_buf b = { (void *)0x1, 7 };

	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("a"), &b));
	assert_ptr_equal(b.ptr, (void *)0x1); /* untouched on failure */
	put(t->s, "a", "one");
	get_is(t->s, "a", "one");
	put(t->s, "a", "two");
	get_is(t->s, "a", "two");
	/* (scope, ns) isolation both ways */
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, S("other"), S("a"), &b));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("other"), NS_, S("a"), &b));
	OK(sfs_kv_put(t->s, S("other"), NS_, S("a"), S("x")));
	get_is(t->s, "a", "two");
}

static void test_empty_vs_absent(void **state)
{
	tfx *t = *state;
	sfs_stat st = { .size = 99 };
	sfs_buf b;

	OK(sfs_kv_put(t->s, SC, NS_, S("e"), sfs_bytes("", 0)));
	OK(sfs_kv_get(t->s, SC, NS_, S("e"), &b));
	assert_non_null(b.ptr);
	assert_int_equal(b.len, 0);
	assert_int_equal(((char *)b.ptr)[0], 0);
	sfs_buf_free(&b);
	assert_null(b.ptr);
	OK(sfs_kv_stat(t->s, SC, NS_, S("e"), &st));
	assert_int_equal(st.size, 0);
	assert_true(st.mtime_ns > 0);
	IS(SFS_NOTFOUND, sfs_kv_stat(t->s, SC, NS_, S("absent"), &st));
	IS(SFS_INVALID, sfs_kv_stat(t->s, SC, NS_, S("e"), NULL));
	/* Empty scope, namespace and key are valid names. */
	OK(sfs_kv_put(t->s, S(""), S(""), S(""), S("v")));
	OK(sfs_kv_get(t->s, S(""), S(""), S(""), &b));
	tfx_buf(&b, "v");
	sfs_buf_free(&b);
}

static void test_stat_mtime(void **state)
{
	tfx *t = *state;
	sfs_stat s1, s2;

	put(t->s, "k", "12345");
	OK(sfs_kv_stat(t->s, SC, NS_, S("k"), &s1));
	assert_int_equal(s1.size, 5);
	put(t->s, "k", "123");
	OK(sfs_kv_stat(t->s, SC, NS_, S("k"), &s2));
	assert_int_equal(s2.size, 3);
	assert_true(s2.mtime_ns >= s1.mtime_ns);
}

static void test_delete(void **state)
{
	tfx *t = *state;
	sfs_buf b;

	put(t->s, "a", "1");
	OK(sfs_kv_delete(t->s, SC, NS_, S("a")));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("a"), &b));
	IS(SFS_NOTFOUND, sfs_kv_delete(t->s, SC, NS_, S("a")));
}

/* vgi conformance 16 and python's scan ordering: put b, a, c -> a, b, c. */
static void test_scan_order(void **state)
{
	tfx *t = *state;
	sfs_list l;

	put(t->s, "d", "4");
	put(t->s, "b", "2");
	put(t->s, "a", "1");
	put(t->s, "c", "3");
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	tfx_keys(&l, "a b c d");
	assert_int_equal(l.items[1].value.len, 1);
	assert_memory_equal(l.items[1].value.ptr, "2", 2); /* NUL too */
	assert_int_equal(l.items[1].st.size, 1);
	assert_true(l.items[1].st.mtime_ns > 0);
	sfs_list_free(&l);
	assert_null(l.items);
	/* Scan is not destructive, other ns is empty */
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	assert_int_equal(l.n, 4);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, SC, S("nothing"), NULL, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
}

/* memcmp order: a shorter prefix first, bytes >= 0x80 after ASCII, NUL
 * inside keys. */
static void test_scan_bytes(void **state)
{
	tfx *t = *state;
	const unsigned char k1[] = { 'a' }, k2[] = { 'a', 0 },
	                    k3[] = { 'a', 'b' }, k4[] = { 0xff }, k5[] = { 0x80 };
	sfs_list l;

	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(k4, 1), S("4")));
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(k3, 2), S("3")));
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(k2, 2), S("2")));
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(k1, 1), S("1")));
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(k5, 1), S("5")));
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	assert_int_equal(l.n, 5);
	assert_memory_equal(l.items[0].value.ptr, "1", 1);
	assert_memory_equal(l.items[1].value.ptr, "2", 1);
	assert_int_equal(l.items[1].key.len, 2);
	assert_memory_equal(l.items[1].key.ptr, k2, 2);
	assert_memory_equal(l.items[2].value.ptr, "3", 1);
	assert_memory_equal(l.items[3].value.ptr, "5", 1);
	assert_memory_equal(l.items[4].value.ptr, "4", 1);
	sfs_list_free(&l);
}

static void scan_is(sfs_store *s, sfs_slice start, sfs_slice end, int rev,
                    long limit, const char *want)
{
	sfs_scan_opts o = { .start = start, .end = end, .reverse = rev, .limit = limit, .keys_only = 0 };
	sfs_list l;

	OK(sfs_kv_scan(s, SC, NS_, &o, &l));
	tfx_keys(&l, want);
	sfs_list_free(&l);
}

/* The 7-case table of AttachState_scan_range_reverse_limit. */
static void test_scan_table(void **state)
{
	tfx *t = *state;

	put(t->s, "a", "1");
	put(t->s, "b", "2");
	put(t->s, "c", "3");
	put(t->s, "d", "4");
	scan_is(t->s, SFS_NONE, SFS_NONE, 0, 0, "a b c d");
	scan_is(t->s, SFS_NONE, SFS_NONE, 1, 0, "d c b a");
	scan_is(t->s, S("b"), S("d"), 0, 0, "b c");
	scan_is(t->s, S("c"), SFS_NONE, 0, 0, "c d");
	scan_is(t->s, SFS_NONE, S("b"), 0, 0, "a");
	scan_is(t->s, SFS_NONE, SFS_NONE, 0, 2, "a b");
	scan_is(t->s, SFS_NONE, SFS_NONE, 1, 2, "d c");
	/* Reverse never changes which bound is which. */
	scan_is(t->s, S("b"), S("d"), 1, 0, "c b");
	scan_is(t->s, S("b"), S("d"), 1, 1, "c");
	/* Negative limit is "no limit" as in the SDK. */
	scan_is(t->s, SFS_NONE, SFS_NONE, 0, -5, "a b c d");
	/* start >= end: nothing. */
	scan_is(t->s, S("c"), S("b"), 0, 0, "");
	scan_is(t->s, S("c"), S("c"), 0, 0, "");
	/* An empty but present bound is a real bound: end "" matches nothing,
	 * start "" matches everything. */
	scan_is(t->s, SFS_NONE, S(""), 0, 0, "");
	scan_is(t->s, S(""), SFS_NONE, 0, 0, "a b c d");
}

static void test_scan_keys_only(void **state)
{
	tfx *t = *state;
	sfs_scan_opts o = { .start = SFS_NONE, .end = SFS_NONE, .reverse = 0, .limit = 0, .keys_only = 1 };
	sfs_list l;

	put(t->s, "a", "hello");
	OK(sfs_kv_scan(t->s, SC, NS_, &o, &l));
	tfx_keys(&l, "a");
	assert_null(l.items[0].value.ptr);
	assert_int_equal(l.items[0].st.size, 5);
	sfs_list_free(&l);
}

/* AttachState_delete_range: [b, d) -> 2, leaving a, d; open -> 2; -> 0. */
static void test_delete_range(void **state)
{
	tfx *t = *state;
	uint64_t n = 99;
	sfs_list l;

	put(t->s, "a", "1");
	put(t->s, "b", "2");
	put(t->s, "c", "3");
	put(t->s, "d", "4");
	OK(sfs_kv_delete_range(t->s, SC, NS_, S("b"), S("d"), &n));
	assert_int_equal(n, 2);
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	tfx_keys(&l, "a d");
	sfs_list_free(&l);
	OK(sfs_kv_delete_range(t->s, SC, NS_, SFS_NONE, SFS_NONE, &n));
	assert_int_equal(n, 2);
	OK(sfs_kv_delete_range(t->s, SC, NS_, SFS_NONE, SFS_NONE, &n));
	assert_int_equal(n, 0);
	OK(sfs_kv_delete_range(t->s, SC, NS_, SFS_NONE, SFS_NONE, NULL));
	/* start >= end deletes nothing */
	put(t->s, "x", "1");
	OK(sfs_kv_delete_range(t->s, SC, NS_, S("y"), S("x"), &n));
	assert_int_equal(n, 0);
	/* delete_ns counts too, and leaves siblings */
	OK(sfs_kv_put(t->s, SC, S("sib"), S("k"), S("v")));
	OK(sfs_kv_delete_range(t->s, SC, NS_, SFS_NONE, SFS_NONE, &n));
	assert_int_equal(n, 1);
	OK(sfs_kv_scan(t->s, SC, S("sib"), NULL, &l));
	tfx_keys(&l, "k");
	sfs_list_free(&l);
}

/* AttachState_drain: everything, ordered by key; then empty; the sibling
 * namespace survives. */
static void test_drain(void **state)
{
	tfx *t = *state;
	sfs_list l;

	put(t->s, "c", "3");
	put(t->s, "a", "1");
	put(t->s, "b", "2");
	OK(sfs_kv_put(t->s, SC, S("other"), S("z"), S("26")));
	OK(sfs_kv_drain(t->s, SC, NS_, &l));
	tfx_keys(&l, "a b c");
	assert_memory_equal(l.items[2].value.ptr, "3", 1);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_kv_drain(t->s, SC, NS_, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, SC, S("other"), NULL, &l));
	tfx_keys(&l, "z");
	sfs_list_free(&l);
}

/* The stream engine's RestoreAll replaces the namespace (Weibo's test:
 * a pre-existing key "old" disappears). */
static void test_restore_all(void **state)
{
	tfx *t = *state;
	sfs_slice keys[2] = { S("k1"), S("k2") };
	sfs_slice vals[2] = { S("v1"), S("v2") };
	sfs_list l;

	put(t->s, "old", "x");
	put(t->s, "k1", "stale");
	OK(sfs_kv_put(t->s, SC, S("sib"), S("keep"), S("y")));
	OK(sfs_kv_put_many(t->s, SC, NS_, keys, vals, 2, SFS_PUT_REPLACE));
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	tfx_keys(&l, "k1 k2");
	assert_memory_equal(l.items[0].value.ptr, "v1", 2);
	sfs_list_free(&l);
	OK(sfs_kv_put_many(t->s, SC, NS_, NULL, NULL, 0, SFS_PUT_REPLACE));
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, SC, S("sib"), NULL, &l));
	tfx_keys(&l, "keep");
	sfs_list_free(&l);
	IS(SFS_INVALID, sfs_kv_put_many(t->s, SC, NS_, NULL, vals, 1, SFS_PUT_REPLACE));
}

/* 50 keys through SnapshotAll (scan) and RestoreAll round-trip. */
static void test_snapshot_restore_roundtrip(void **state)
{
	tfx *t = *state;
	sfs_slice keys[50], vals[50];
	char kb[50][8], vb[50][8];
	sfs_list snap, again;

	for (int i = 0; i < 50; i++) {
		snprintf(kb[i], 8, "k%02d", i);
		snprintf(vb[i], 8, "v%d", i);
		put(t->s, kb[i], vb[i]);
	}
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &snap));
	assert_int_equal(snap.n, 50);
	for (size_t i = 0; i < snap.n; i++) {
		keys[i] = sfs_bytes(snap.items[i].key.ptr, snap.items[i].key.len);
		vals[i] = sfs_bytes(snap.items[i].value.ptr,
		                    snap.items[i].value.len);
	}
	OK(sfs_kv_delete_range(t->s, SC, NS_, SFS_NONE, SFS_NONE, NULL));
	OK(sfs_kv_put_many(t->s, SC, NS_, keys, vals, 50, SFS_PUT_REPLACE));
	OK(sfs_kv_scan(t->s, SC, NS_, NULL, &again));
	assert_int_equal(again.n, 50);
	for (size_t i = 0; i < 50; i++) {
		assert_int_equal(again.items[i].value.len, snap.items[i].value.len);
		assert_memory_equal(again.items[i].value.ptr,
		                    snap.items[i].value.ptr, again.items[i].value.len);
	}
	sfs_list_free(&snap);
	sfs_list_free(&again);
}

static void test_rename(void **state)
{
	tfx *t = *state;
	sfs_stat s1, s2;
	sfs_buf b;

	put(t->s, "a", "1");
	OK(sfs_kv_stat(t->s, SC, NS_, S("a"), &s1));
	OK(sfs_kv_rename(t->s, SC, NS_, S("a"), S("s2"), S("n2"), S("b"), 0));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("a"), &b));
	OK(sfs_kv_get(t->s, S("s2"), S("n2"), S("b"), &b));
	tfx_buf(&b, "1");
	sfs_buf_free(&b);
	OK(sfs_kv_stat(t->s, S("s2"), S("n2"), S("b"), &s2));
	assert_int_equal(s1.mtime_ns, s2.mtime_ns); /* rename keeps the time */
	/* replace vs noreplace */
	put(t->s, "x", "X");
	put(t->s, "y", "Y");
	IS(SFS_EXISTS, sfs_kv_rename(t->s, SC, NS_, S("x"), SC, NS_, S("y"),
	                             SFS_RENAME_NOREPLACE));
	OK(sfs_kv_rename(t->s, SC, NS_, S("x"), SC, NS_, S("y"), 0));
	get_is(t->s, "y", "X");
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("x"), &b));
	/* onto itself: OK, nothing changes; absent source: NOTFOUND */
	OK(sfs_kv_rename(t->s, SC, NS_, S("y"), SC, NS_, S("y"), 0));
	get_is(t->s, "y", "X");
	IS(SFS_NOTFOUND, sfs_kv_rename(t->s, SC, NS_, S("nope"), SC, NS_,
	                               S("z"), 0));
	IS(SFS_INVALID, sfs_kv_rename(t->s, SC, NS_, S("y"), SC, NS_, S("z"),
	                              0x80));
}

static void test_large_value(void **state)
{
	tfx *t = *state;
	size_t n = 1024 * 1024;
	unsigned char *v = malloc(n);
	sfs_buf b;

	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned char)(i * 7);
	OK(sfs_kv_put(t->s, SC, NS_, S("big"), sfs_bytes(v, n)));
	OK(sfs_kv_get(t->s, SC, NS_, S("big"), &b));
	assert_int_equal(b.len, n);
	assert_memory_equal(b.ptr, v, n);
	sfs_buf_free(&b);
	free(v);
}

/* --- counters ----------------------------------------------------------- */

/* The counter holds want, or (exists 0) is absent: SFS_NOTFOUND with
 * *value untouched, and the 0 an add would start from. */
static void ctr_is(sfs_store *s, const char *k, int64_t want, int exists)
{
	int64_t v = -12345, mt = -1;

	if (!exists) {
		assert_int_equal(want, 0);
		IS(SFS_NOTFOUND, sfs_counter_get(s, SC, NS_, S(k), &v, &mt));
		assert_int_equal(v, -12345);
		assert_int_equal(mt, -1);
		return;
	}
	OK(sfs_counter_get(s, SC, NS_, S(k), &v, &mt));
	assert_int_equal(v, want);
	assert_true(mt > 0);
}

/* A counter moves as a value does: atomically, with its time, replacing
 * the target unless NOREPLACE; the value of the same name stays. */
static void test_counter_rename(void **state)
{
	tfx *t = *state;
	int64_t v, mt1, mt2, before;

	OK(sfs_counter_set(t->s, SC, NS_, S("a"), 41));
	OK(sfs_counter_get(t->s, SC, NS_, S("a"), &v, &mt1));
	put(t->s, "a", "value a");
	OK(sfs_counter_rename(t->s, SC, NS_, S("a"), S("s2"), S("n2"), S("b"),
	                      0));
	ctr_is(t->s, "a", 0, 0);
	get_is(t->s, "a", "value a"); /* the value did not move */
	OK(sfs_counter_get(t->s, S("s2"), S("n2"), S("b"), &v, &mt2));
	assert_int_equal(v, 41);
	assert_int_equal(mt1, mt2); /* the time moved with it */
	/* replace vs noreplace */
	OK(sfs_counter_set(t->s, SC, NS_, S("x"), 1));
	OK(sfs_counter_set(t->s, SC, NS_, S("y"), 2));
	IS(SFS_EXISTS, sfs_counter_rename(t->s, SC, NS_, S("x"), SC, NS_,
	                                  S("y"), SFS_RENAME_NOREPLACE));
	ctr_is(t->s, "x", 1, 1);
	ctr_is(t->s, "y", 2, 1);
	OK(sfs_counter_rename(t->s, SC, NS_, S("x"), SC, NS_, S("y"), 0));
	ctr_is(t->s, "x", 0, 0);
	ctr_is(t->s, "y", 1, 1);
	/* onto itself, even NOREPLACE: nothing changes; absent source */
	OK(sfs_counter_get(t->s, SC, NS_, S("y"), &before, &mt1));
	OK(sfs_counter_rename(t->s, SC, NS_, S("y"), SC, NS_, S("y"),
	                      SFS_RENAME_NOREPLACE));
	ctr_is(t->s, "y", before, 1);
	IS(SFS_NOTFOUND, sfs_counter_rename(t->s, SC, NS_, S("nope"), SC, NS_,
	                                    S("z"), 0));
	IS(SFS_NOTFOUND, sfs_counter_rename(t->s, SC, NS_, S("a"), SC, NS_,
	                                    S("z"), 0)); /* a value, no counter */
	IS(SFS_INVALID, sfs_counter_rename(t->s, SC, NS_, S("y"), SC, NS_,
	                                   S("z"), 0x80));
	/* a deleted target's time does not come back with the next one */
	OK(sfs_counter_delete(t->s, SC, NS_, S("y")));
	OK(sfs_counter_set(t->s, SC, NS_, S("w"), 3));
	OK(sfs_counter_rename(t->s, SC, NS_, S("w"), SC, NS_, S("y"), 0));
	ctr_is(t->s, "y", 3, 1);
}

/* RENAME_EXCHANGE: two values swap, each with its time; two counters
 * the same; both must exist; never with NOREPLACE. */
static void test_rename_exchange(void **state)
{
	tfx *t = *state;
	sfs_stat a, b;
	sfs_buf buf;
	int64_t v, mta, mtb;

	put(t->s, "a", "value a");
	put(t->s, "b", "a longer value b");
	OK(sfs_kv_set_mtime(t->s, SC, NS_, S("a"), 1000000000000000000LL));
	OK(sfs_kv_set_mtime(t->s, SC, NS_, S("b"), 1100000000000000000LL));
	OK(sfs_kv_rename(t->s, SC, NS_, S("a"), SC, NS_, S("b"),
	                 SFS_RENAME_EXCHANGE));
	get_is(t->s, "a", "a longer value b");
	get_is(t->s, "b", "value a");
	OK(sfs_kv_stat(t->s, SC, NS_, S("a"), &a));
	OK(sfs_kv_stat(t->s, SC, NS_, S("b"), &b));
	assert_int_equal(a.mtime_ns, 1100000000000000000LL);
	assert_int_equal(b.mtime_ns, 1000000000000000000LL);
	assert_int_equal(a.size, 16);
	/* across namespaces, and back */
	OK(sfs_kv_put(t->s, S("s2"), S("n2"), S("c"), S("value c")));
	OK(sfs_kv_rename(t->s, SC, NS_, S("b"), S("s2"), S("n2"), S("c"),
	                 SFS_RENAME_EXCHANGE));
	get_is(t->s, "b", "value c");
	OK(sfs_kv_get(t->s, S("s2"), S("n2"), S("c"), &buf));
	tfx_buf(&buf, "value a");
	sfs_buf_free(&buf);
	/* a target that does not exist, or a source: nothing changes */
	IS(SFS_NOTFOUND, sfs_kv_rename(t->s, SC, NS_, S("a"), SC, NS_, S("z"),
	                               SFS_RENAME_EXCHANGE));
	IS(SFS_NOTFOUND, sfs_kv_rename(t->s, SC, NS_, S("z"), SC, NS_, S("a"),
	                               SFS_RENAME_EXCHANGE));
	get_is(t->s, "a", "a longer value b");
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("z"), &buf));
	IS(SFS_INVALID, sfs_kv_rename(t->s, SC, NS_, S("a"), SC, NS_, S("b"),
	                              SFS_RENAME_EXCHANGE |
	                              SFS_RENAME_NOREPLACE));
	/* onto itself: nothing changes */
	OK(sfs_kv_rename(t->s, SC, NS_, S("a"), SC, NS_, S("a"),
	                 SFS_RENAME_EXCHANGE));
	get_is(t->s, "a", "a longer value b");
	/* an empty value swaps too */
	put(t->s, "e", "");
	OK(sfs_kv_rename(t->s, SC, NS_, S("e"), SC, NS_, S("a"),
	                 SFS_RENAME_EXCHANGE));
	get_is(t->s, "e", "a longer value b");
	get_is(t->s, "a", "");
	/* counters */
	OK(sfs_counter_set(t->s, SC, NS_, S("x"), 7));
	OK(sfs_counter_set(t->s, SC, NS_, S("y"), -3));
	OK(sfs_counter_get(t->s, SC, NS_, S("x"), &v, &mta));
	OK(sfs_counter_get(t->s, SC, NS_, S("y"), &v, &mtb));
	OK(sfs_counter_rename(t->s, SC, NS_, S("x"), SC, NS_, S("y"),
	                      SFS_RENAME_EXCHANGE));
	ctr_is(t->s, "x", -3, 1);
	ctr_is(t->s, "y", 7, 1);
	OK(sfs_counter_get(t->s, SC, NS_, S("x"), &v, &a.mtime_ns));
	OK(sfs_counter_get(t->s, SC, NS_, S("y"), &v, &b.mtime_ns));
	assert_int_equal(a.mtime_ns, mtb);
	assert_int_equal(b.mtime_ns, mta);
	IS(SFS_NOTFOUND, sfs_counter_rename(t->s, SC, NS_, S("x"), SC, NS_,
	                                    S("a"), SFS_RENAME_EXCHANGE));
	ctr_is(t->s, "x", -3, 1);
}

/* AttachCounter_get_add_set_delete. */
static void test_counter_basic(void **state)
{
	tfx *t = *state;
	int64_t v;

	ctr_is(t->s, "c", 0, 0);
	OK(sfs_counter_add(t->s, SC, NS_, S("c"), 5, &v));
	assert_int_equal(v, 5);
	OK(sfs_counter_add(t->s, SC, NS_, S("c"), 3, &v));
	assert_int_equal(v, 8);
	OK(sfs_counter_add(t->s, SC, NS_, S("c"), -2, &v));
	assert_int_equal(v, 6);
	OK(sfs_counter_add(t->s, SC, NS_, S("c"), -10, NULL));
	ctr_is(t->s, "c", -4, 1);
	OK(sfs_counter_set(t->s, SC, NS_, S("c"), 100));
	ctr_is(t->s, "c", 100, 1);
	OK(sfs_counter_add(t->s, SC, NS_, S("d"), 1, &v));
	assert_int_equal(v, 1);
	ctr_is(t->s, "c", 100, 1);
	OK(sfs_counter_delete(t->s, SC, NS_, S("c")));
	ctr_is(t->s, "c", 0, 0);
	IS(SFS_NOTFOUND, sfs_counter_delete(t->s, SC, NS_, S("c")));
	/* set on absent creates; add 0 on absent creates a row */
	OK(sfs_counter_set(t->s, SC, NS_, S("new"), 42));
	ctr_is(t->s, "new", 42, 1);
	OK(sfs_counter_add(t->s, SC, NS_, S("zero"), 0, &v));
	assert_int_equal(v, 0);
	ctr_is(t->s, "zero", 0, 1);
	/* create: only when absent; an existing counter is left as it is
	 * (its time: test_times.c) */
	OK(sfs_counter_create(t->s, SC, NS_, S("made"), 7));
	ctr_is(t->s, "made", 7, 1);
	IS(SFS_EXISTS, sfs_counter_create(t->s, SC, NS_, S("new"), 1));
	ctr_is(t->s, "new", 42, 1);
	IS(SFS_EXISTS, sfs_counter_create(t->s, SC, NS_, S("made"), 0));
	ctr_is(t->s, "made", 7, 1);
	/* a key/value entry of the name does not count */
	put(t->s, "kvonly", "x");
	OK(sfs_counter_create(t->s, SC, NS_, S("kvonly"), 3));
	ctr_is(t->s, "kvonly", 3, 1);
}

/* A counter and a key/value entry with the same name are independent. */
static void test_counter_independent(void **state)
{
	tfx *t = *state;
	sfs_buf b;

	put(t->s, "same", "text");
	OK(sfs_counter_add(t->s, SC, NS_, S("same"), 7, NULL));
	get_is(t->s, "same", "text");
	ctr_is(t->s, "same", 7, 1);
	OK(sfs_kv_delete(t->s, SC, NS_, S("same")));
	ctr_is(t->s, "same", 7, 1);
	OK(sfs_counter_delete(t->s, SC, NS_, S("same")));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, SC, NS_, S("same"), &b));
}

/* int64 overflow in both directions: SFS_OVERFLOW, value unchanged. */
static void test_counter_overflow(void **state)
{
	tfx *t = *state;
	int64_t v = 77;

	OK(sfs_counter_set(t->s, SC, NS_, S("hi"), INT64_MAX - 1));
	OK(sfs_counter_add(t->s, SC, NS_, S("hi"), 1, &v));
	assert_true(v == INT64_MAX);
	v = 77;
	IS(SFS_OVERFLOW, sfs_counter_add(t->s, SC, NS_, S("hi"), 1, &v));
	assert_int_equal(v, 77);
	ctr_is(t->s, "hi", INT64_MAX, 1);
	IS(SFS_OVERFLOW, sfs_counter_add(t->s, SC, NS_, S("hi"), INT64_MAX, &v));
	OK(sfs_counter_add(t->s, SC, NS_, S("hi"), INT64_MIN, &v));
	assert_int_equal(v, -1);

	OK(sfs_counter_set(t->s, SC, NS_, S("lo"), INT64_MIN + 1));
	OK(sfs_counter_add(t->s, SC, NS_, S("lo"), -1, &v));
	assert_true(v == INT64_MIN);
	IS(SFS_OVERFLOW, sfs_counter_add(t->s, SC, NS_, S("lo"), -1, &v));
	IS(SFS_OVERFLOW, sfs_counter_add(t->s, SC, NS_, S("lo"), INT64_MIN, &v));
	ctr_is(t->s, "lo", INT64_MIN, 1);
	OK(sfs_counter_add(t->s, SC, NS_, S("lo"), INT64_MAX, &v));
	assert_int_equal(v, -1);
	/* An absent counter takes any delta, extremes included. */
	OK(sfs_counter_add(t->s, SC, NS_, S("abs"), INT64_MIN, &v));
	assert_true(v == INT64_MIN);
}

static void test_counter_scan(void **state)
{
	tfx *t = *state;
	sfs_scan_opts o = { .start = S("b"), .end = SFS_NONE, .reverse = 1 };
	sfs_list l;

	OK(sfs_counter_set(t->s, SC, NS_, S("a"), 1));
	OK(sfs_counter_set(t->s, SC, NS_, S("b"), 2));
	OK(sfs_counter_set(t->s, SC, NS_, S("c"), -3));
	OK(sfs_counter_scan(t->s, SC, NS_, NULL, &l));
	tfx_keys(&l, "a b c");
	assert_int_equal(l.items[2].st.counter, -3);
	assert_true(l.items[2].st.mtime_ns > 0);
	sfs_list_free(&l);
	OK(sfs_counter_scan(t->s, SC, NS_, &o, &l));
	tfx_keys(&l, "c b");
	sfs_list_free(&l);
}

/* --- bad arguments get codes, not crashes -------------------------------- */

static void test_bad_args(void **state)
{
	tfx *t = *state;
	unsigned char *big = calloc(1, SFS_MAX_NAME + 1);
	sfs_slice bad = { NULL, 3 };
	sfs_scan_opts o = { .start = bad, .end = SFS_NONE, .reverse = 0, .limit = 0, .keys_only = 0 };
	sfs_buf b;
	sfs_list l;
	int64_t v;

	assert_non_null(big);
	IS(SFS_INVALID, sfs_kv_put(NULL, SC, NS_, S("k"), S("v")));
	IS(SFS_INVALID, sfs_kv_put(t->s, SFS_NONE, NS_, S("k"), S("v")));
	IS(SFS_INVALID, sfs_kv_put(t->s, SC, SFS_NONE, S("k"), S("v")));
	IS(SFS_INVALID, sfs_kv_put(t->s, SC, NS_, SFS_NONE, S("v")));
	IS(SFS_INVALID, sfs_kv_put(t->s, SC, NS_, S("k"), SFS_NONE));
	IS(SFS_INVALID, sfs_kv_get(t->s, SC, NS_, S("k"), NULL));
	IS(SFS_INVALID, sfs_kv_scan(t->s, SC, NS_, &o, &l));
	IS(SFS_INVALID, sfs_kv_scan(t->s, SC, NS_, NULL, NULL));
	IS(SFS_INVALID, sfs_counter_get(t->s, SC, NS_, S("k"), NULL, NULL));
	IS(SFS_TOOBIG, sfs_kv_put(t->s, SC, NS_, sfs_bytes(big, SFS_MAX_NAME + 1),
	                          S("v")));
	/* a longer name is looked up (another program may have written it):
	 * there is none */
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, sfs_bytes(big, SFS_MAX_NAME + 1), NS_,
	                            S("k"), &b));
	IS(SFS_TOOBIG, sfs_counter_add(t->s, SC,
	                               sfs_bytes(big, SFS_MAX_NAME + 1), S("k"),
	                               1, &v));
	/* exactly the limit is fine */
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes(big, SFS_MAX_NAME), S("v")));
	IS(SFS_INVALID, sfs_kv_delete_range(t->s, SC, NS_, bad, SFS_NONE, NULL));
	free(big);
}

/* max_value: the store's own limit on values. */
static void test_max_value(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_config o;
	sfs_store *s;
	int64_t id;

	snprintf(path, sizeof(path), "%s/small.db", t->dir);
	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = SFS_OPEN_CREATE;
	o.key = tfx_key();
	if (!o.key)
		o.flags |= SFS_OPEN_PLAINTEXT;
	o.max_value = 4;
	OK(sfs_store_open(&o, &s, NULL));
	OK(sfs_kv_put(s, SC, NS_, S("k"), S("1234")));
	IS(SFS_TOOBIG, sfs_kv_put(s, SC, NS_, S("k"), S("12345")));
	IS(SFS_TOOBIG, sfs_log_append(s, SC, NS_, S("k"), S("12345"), &id));
	sfs_store_close(s);
}

/* --- directories -------------------------------------------------------- */

static void test_scope_ns_list(void **state)
{
	tfx *t = *state;
	sfs_list l;

	OK(sfs_kv_put(t->s, S("s2"), S("b"), S("k"), S("v")));
	OK(sfs_kv_put(t->s, S("s1"), S("a"), S("k"), S("v")));
	OK(sfs_kv_put(t->s, S("s1"), S("a"), S("k2"), S("v")));
	OK(sfs_kv_put(t->s, S("s1"), S("c"), S("k"), S("v")));
	OK(sfs_kv_put(t->s, S("s3"), S("a"), S("k"), S("v")));
	OK(sfs_counter_set(t->s, S("c1"), S("n"), S("k"), 1));
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "s1 s2 s3");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SFS_NONE, SFS_NONE, S("s1"), 1, &l));
	tfx_keys(&l, "s2");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_COUNTER, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "c1");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, S("s1"), SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "a c");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, S("s1"), SFS_NONE, S("a"), 0, &l));
	tfx_keys(&l, "c");
	sfs_list_free(&l);
	IS(SFS_INVALID, sfs_dir_list(t->s, SFS_FAM_DIR, SFS_NONE, SFS_NONE,
	                             SFS_NONE, 0, &l));
	IS(SFS_INVALID, sfs_dir_list(t->s, (sfs_family)99, SFS_NONE, SFS_NONE,
	                             SFS_NONE, 0, &l));
}

static void test_dirs(void **state)
{
	tfx *t = *state;
	sfs_list l;

	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	OK(sfs_dir_exists(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	IS(SFS_EXISTS, sfs_dir_create(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	/* Families are separate. */
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_LOG, S("e"), SFS_NONE));
	/* A scope-only dir is not the namespace named "". */
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("e"), S("")));
	OK(sfs_dir_list(t->s, SFS_FAM_KV, S("e"), SFS_NONE, SFS_NONE, 0, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("e"), S("")));
	OK(sfs_dir_list(t->s, SFS_FAM_KV, S("e"), SFS_NONE, SFS_NONE, 0, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].key.len, 0);
	sfs_list_free(&l);
	/* Explicit dirs persist across reopen and show in listings. */
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("e"), S("n1")));
	tfx_reopen(t);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "e");
	sfs_list_free(&l);
	/* Removing: a scope holding namespaces is not empty. */
	IS(SFS_NOTEMPTY, sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	OK(sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), S("")));
	/* A namespace with entries is not empty; once empty it is removable
	 * only while explicit. */
	OK(sfs_kv_put(t->s, S("e"), S("n1"), S("k"), S("v")));
	IS(SFS_NOTEMPTY, sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), S("n1")));
	OK(sfs_kv_delete(t->s, S("e"), S("n1"), S("k")));
	OK(sfs_dir_exists(t->s, SFS_FAM_KV, S("e"), S("n1")));
	OK(sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), S("n1")));
	IS(SFS_NOTFOUND, sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), S("n1")));
	OK(sfs_dir_remove(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("e"), SFS_NONE));
	/* A namespace that exists only through entries vanishes with them. */
	OK(sfs_kv_put(t->s, S("i"), S("n"), S("k"), S("v")));
	OK(sfs_dir_exists(t->s, SFS_FAM_KV, S("i"), S("n")));
	IS(SFS_EXISTS, sfs_dir_create(t->s, SFS_FAM_KV, S("i"), S("n")));
	OK(sfs_kv_delete(t->s, S("i"), S("n"), S("k")));
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("i"), SFS_NONE));
	/* Queues: scope dirs only. */
	OK(sfs_dir_create(t->s, SFS_FAM_QUEUE, S("q"), SFS_NONE));
	IS(SFS_INVALID, sfs_dir_create(t->s, SFS_FAM_QUEUE, S("q"), S("n")));
	OK(sfs_dir_list(t->s, SFS_FAM_QUEUE, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "q");
	sfs_list_free(&l);
}

/* Every family keeps its own directories, scope-only and namespaced. */
static void test_dirs_every_family(void **state)
{
	static const sfs_family fams[] = { SFS_FAM_KV, SFS_FAM_COUNTER,
	                                   SFS_FAM_LOG, SFS_FAM_QUEUE };
	tfx *t = *state;
	sfs_list l;

	for (size_t i = 0; i < 4; i++) {
		sfs_family f = fams[i];
		int has_ns = f != SFS_FAM_QUEUE;

		OK(sfs_dir_create(t->s, f, S("d"), SFS_NONE));
		IS(SFS_EXISTS, sfs_dir_create(t->s, f, S("d"), SFS_NONE));
		if (has_ns) {
			OK(sfs_dir_create(t->s, f, S("d"), S("n")));
			IS(SFS_EXISTS, sfs_dir_create(t->s, f, S("d"), S("n")));
			OK(sfs_dir_exists(t->s, f, S("d"), S("n")));
			OK(sfs_dir_list(t->s, f, S("d"), SFS_NONE, SFS_NONE, 0, &l));
			tfx_keys(&l, "n");
			sfs_list_free(&l);
			IS(SFS_NOTEMPTY, sfs_dir_remove(t->s, f, S("d"), SFS_NONE));
			OK(sfs_dir_remove(t->s, f, S("d"), S("n")));
		}
		OK(sfs_dir_list(t->s, f, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
		tfx_keys(&l, "d");
		sfs_list_free(&l);
		OK(sfs_dir_remove(t->s, f, S("d"), SFS_NONE));
		IS(SFS_NOTFOUND, sfs_dir_exists(t->s, f, S("d"), SFS_NONE));
	}
	/* data rows make scopes of their own family only */
	OK(sfs_log_append(t->s, S("L"), S("n"), S("k"), S("v"), NULL));
	OK(sfs_counter_add(t->s, S("C"), S("n"), S("k"), 1, NULL));
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "L");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_COUNTER, S("C"), SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "n");
	sfs_list_free(&l);
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("L"), SFS_NONE));
}

static void test_dir_rename(void **state)
{
	tfx *t = *state;
	sfs_list l;
	int64_t v;

	OK(sfs_kv_put(t->s, S("a"), S("n"), S("k"), S("v")));
	OK(sfs_kv_put(t->s, S("a"), S("m"), S("k"), S("w")));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("a"), S("empty")));
	/* scope rename moves everything, namespaces' dirs too */
	OK(sfs_dir_rename(t->s, SFS_FAM_KV, S("a"), SFS_NONE, S("b"), SFS_NONE,
	                  0));
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_KV, S("a"), SFS_NONE));
	OK(sfs_dir_list(t->s, SFS_FAM_KV, S("b"), SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "empty m n");
	sfs_list_free(&l);
	/* namespace rename across scopes */
	OK(sfs_dir_rename(t->s, SFS_FAM_KV, S("b"), S("n"), S("c"), S("n2"), 0));
	OK(sfs_kv_scan(t->s, S("c"), S("n2"), NULL, &l));
	tfx_keys(&l, "k");
	sfs_list_free(&l);
	/* a non-empty target refuses, an explicit empty one is replaced */
	IS(SFS_NOTEMPTY, sfs_dir_rename(t->s, SFS_FAM_KV, S("b"), S("m"), S("c"),
	                                S("n2"), 0));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("c"), S("e")));
	IS(SFS_EXISTS, sfs_dir_rename(t->s, SFS_FAM_KV, S("b"), S("m"), S("c"),
	                              S("e"), SFS_RENAME_NOREPLACE));
	OK(sfs_dir_rename(t->s, SFS_FAM_KV, S("b"), S("m"), S("c"), S("e"), 0));
	OK(sfs_kv_scan(t->s, S("c"), S("e"), NULL, &l));
	tfx_keys(&l, "k");
	sfs_list_free(&l);
	IS(SFS_NOTFOUND, sfs_dir_rename(t->s, SFS_FAM_KV, S("zz"), SFS_NONE,
	                                S("yy"), SFS_NONE, 0));
	/* counters and queues rename too */
	OK(sfs_counter_add(t->s, S("cs"), S("n"), S("k"), 4, NULL));
	OK(sfs_dir_rename(t->s, SFS_FAM_COUNTER, S("cs"), SFS_NONE, S("cs2"),
	                  SFS_NONE, 0));
	OK(sfs_counter_get(t->s, S("cs2"), S("n"), S("k"), &v, NULL));
	assert_int_equal(v, 4);
	{
		sfs_slice it = S("job");
		sfs_list got;

		OK(sfs_queue_push(t->s, S("q1"), &it, 1, NULL));
		OK(sfs_dir_rename(t->s, SFS_FAM_QUEUE, S("q1"), SFS_NONE, S("q2"),
		                  SFS_NONE, 0));
		OK(sfs_queue_pop(t->s, S("q2"), 1, &got));
		tfx_buf(&got.items[0].value, "job");
		sfs_list_free(&got);
	}
}

/* A directory's keys: the names sfs_dir_list gives for a namespace, of
 * values (with sizes and times), counters (with their values) and logs,
 * strictly after a cursor; and a scan continuing strictly after a key. */
static void test_dir_keys(void **state)
{
	tfx *t = *state;
	sfs_scan_opts after = { .start = S("b"), .start_after = 1 };
	sfs_list l;

	put(t->s, "a", "1");
	put(t->s, "b", "22");
	/* the successor of "b", listed right after it */
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes("b\0", 2), S("333")));
	put(t->s, "c", "4444");
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SC, NS_, SFS_NONE, 0, &l));
	assert_int_equal(l.n, 4);
	assert_int_equal(l.items[1].st.size, 2);
	assert_true(l.items[1].st.mtime_ns > 0);
	assert_null(l.items[1].value.ptr);
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_KV, SC, NS_, S("b"), 2, &l));
	assert_int_equal(l.n, 2);
	assert_int_equal(l.items[0].key.len, 2); /* "b\0" */
	tfx_buf(&l.items[1].key, "c");
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, SC, NS_, &after, &l));
	assert_int_equal(l.n, 2);
	assert_int_equal(l.items[0].key.len, 2);
	tfx_buf(&l.items[1].value, "4444");
	sfs_list_free(&l);
	after.reverse = 1; /* the bound stays the lower one */
	OK(sfs_kv_scan(t->s, SC, NS_, &after, &l));
	tfx_buf(&l.items[0].key, "c");
	sfs_list_free(&l);
	/* counters: their values in the listing */
	OK(sfs_counter_set(t->s, SC, S("c"), S("x"), 5));
	OK(sfs_counter_set(t->s, SC, S("c"), S("y"), -6));
	OK(sfs_dir_list(t->s, SFS_FAM_COUNTER, SC, S("c"), S("x"), 0, &l));
	tfx_keys(&l, "y");
	assert_int_equal(l.items[0].st.counter, -6);
	sfs_list_free(&l);
	/* queues have no namespaces; a namespace needs its scope */
	IS(SFS_INVALID, sfs_dir_list(t->s, SFS_FAM_QUEUE, S("q"), SFS_NONE,
	                             SFS_NONE, 0, &l));
	IS(SFS_INVALID, sfs_dir_list(t->s, SFS_FAM_KV, SFS_NONE, NS_,
	                             SFS_NONE, 0, &l));
}

/* The same names from sfs_dir_names as from sfs_dir_list, item by item
 * (bytes, order, cursor, limit); the two lists' keys compared. */
static void same_names(sfs_store *s, sfs_family fam, sfs_slice scope,
                       sfs_slice ns, sfs_slice after, long limit, size_t n)
{
	sfs_list a, b;

	OK(sfs_dir_list(s, fam, scope, ns, after, limit, &a));
	OK(sfs_dir_names(s, fam, scope, ns, after, limit, &b));
	assert_int_equal(a.n, n);
	assert_int_equal(b.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(a.items[i].key.len, b.items[i].key.len);
		assert_memory_equal(a.items[i].key.ptr, b.items[i].key.ptr,
		                    a.items[i].key.len + 1);
	}
	sfs_list_free(&a);
	sfs_list_free(&b);
}

/* sfs_dir_names: what sfs_dir_list names, at every level of every
 * family, the successor of a key ("b\0") and the empty key included,
 * strictly after a cursor and up to a limit; the same errors. */
static void test_dir_names(void **state)
{
	tfx *t = *state;
	sfs_list l;

	put(t->s, "a", "1");
	put(t->s, "b", "22");
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes("b\0", 2), S("333")));
	OK(sfs_kv_put(t->s, SC, NS_, sfs_bytes("", 0), S("e")));
	put(t->s, "c", "4444");
	OK(sfs_kv_put(t->s, SC, S("other"), S("z"), S("x")));
	OK(sfs_counter_set(t->s, SC, S("c"), S("x"), 5));
	OK(sfs_counter_set(t->s, SC, S("c"), S("y"), -6));
	OK(sfs_log_append(t->s, SC, S("l"), S("k1"), S("v"), NULL));
	OK(sfs_log_append(t->s, SC, S("l"), S("k2"), S("v"), NULL));
	same_names(t->s, SFS_FAM_KV, SC, NS_, SFS_NONE, 0, 5);
	same_names(t->s, SFS_FAM_KV, SC, NS_, S("b"), 0, 2);
	same_names(t->s, SFS_FAM_KV, SC, NS_, S("b"), 1, 1);
	same_names(t->s, SFS_FAM_KV, SC, NS_, sfs_bytes("", 0), 0, 4);
	same_names(t->s, SFS_FAM_KV, SC, NS_, S("c"), 0, 0);
	same_names(t->s, SFS_FAM_KV, SC, S("none"), SFS_NONE, 0, 0);
	same_names(t->s, SFS_FAM_COUNTER, SC, S("c"), SFS_NONE, 0, 2);
	same_names(t->s, SFS_FAM_COUNTER, SC, S("c"), S("x"), 5, 1);
	same_names(t->s, SFS_FAM_LOG, SC, S("l"), SFS_NONE, 0, 2);
	same_names(t->s, SFS_FAM_LOG, SC, S("l"), S("k1"), 0, 1);
	same_names(t->s, SFS_FAM_KV, SC, SFS_NONE, SFS_NONE, 0, 2);
	same_names(t->s, SFS_FAM_KV, SFS_NONE, SFS_NONE, SFS_NONE, 0, 1);
	OK(sfs_dir_names(t->s, SFS_FAM_KV, SC, NS_, S("a"), 2, &l));
	assert_int_equal(l.items[0].key.len, 1);
	tfx_buf(&l.items[0].key, "b");
	assert_int_equal(l.items[1].key.len, 2); /* "b\0" */
	sfs_list_free(&l);
	IS(SFS_INVALID, sfs_dir_names(t->s, SFS_FAM_QUEUE, S("q"), SFS_NONE,
	                              SFS_NONE, 0, &l));
	IS(SFS_INVALID, sfs_dir_names(t->s, SFS_FAM_KV, SFS_NONE, NS_,
	                              SFS_NONE, 0, &l));
}

/* A counter's time comes with its value (the primitive the mount's
 * counter files need): its last write, in whole seconds. */
static void test_counter_time(void **state)
{
	tfx *t = *state;
	int64_t v = 0, mt = 0, mt2 = 0;

	OK(sfs_counter_add(t->s, SC, NS_, S("k"), 3, NULL));
	OK(sfs_counter_get(t->s, SC, NS_, S("k"), &v, &mt));
	assert_int_equal(v, 3);
	assert_true(mt > 0);
	assert_int_equal(mt % 1000000000, 0);
	OK(sfs_counter_get(t->s, SC, NS_, S("k"), &v, NULL));
	OK(sfs_counter_set(t->s, SC, NS_, S("k"), 9));
	OK(sfs_counter_get(t->s, SC, NS_, S("k"), &v, &mt2));
	assert_int_equal(v, 9);
	assert_true(mt2 >= mt);
	IS(SFS_INVALID, sfs_counter_get(t->s, SC, NS_, S("k"), NULL, &mt));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_put_get_replace),
		T(test_empty_vs_absent),
		T(test_stat_mtime),
		T(test_delete),
		T(test_scan_order),
		T(test_scan_bytes),
		T(test_scan_table),
		T(test_scan_keys_only),
		T(test_delete_range),
		T(test_drain),
		T(test_restore_all),
		T(test_snapshot_restore_roundtrip),
		T(test_rename),
		T(test_counter_rename),
		T(test_rename_exchange),
		T(test_large_value),
		T(test_counter_basic),
		T(test_counter_independent),
		T(test_counter_overflow),
		T(test_counter_scan),
		T(test_bad_args),
		T(test_max_value),
		T(test_scope_ns_list),
		T(test_dirs),
		T(test_dirs_every_family),
		T(test_dir_rename),
		T(test_dir_keys),
		T(test_dir_names),
		T(test_counter_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
