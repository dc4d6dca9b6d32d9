/*
 * test_seq.c - append-logs and work queues: ids that strictly increase and
 * are never reused (after a clear, after a reopen), scans with cursors and
 * limits, FIFO pops, "nothing" for empty and unknown queues, clear counts,
 * and the stream engine's ListState mapped onto the log (appends after a
 * reopen extend the list: the Weibo bug).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define SC S("exec")
#define LOG S(SFS_NS_LOG)

static int64_t append(sfs_store *s, const char *key, const char *v)
{
	int64_t id = -1;

	OK(sfs_log_append(s, SC, LOG, S(key), S(v), &id));
	assert_true(id > 0);
	return id;
}

static void values_are(const sfs_list *l, const char *words)
{
	char *copy = strdup(words), *save = NULL, *w;
	size_t i = 0;

	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		assert_true(i < l->n);
		assert_int_equal(l->items[i].value.len, strlen(w));
		assert_memory_equal(l->items[i].value.ptr, w, strlen(w));
		i++;
	}
	free(copy);
	assert_int_equal(i, l->n);
}

static void log_is(sfs_store *s, const char *key, int64_t after, long limit,
                   const char *want)
{
	sfs_list l;

	OK(sfs_log_scan(s, SC, LOG, S(key), after, limit, 0, &l));
	values_are(&l, want);
	for (size_t i = 1; i < l.n; i++)
		assert_true(l.items[i].id > l.items[i - 1].id);
	sfs_list_free(&l);
}

/* StateLog_append_scan_clear. */
static void test_log_basic(void **state)
{
	tfx *t = *state;
	int64_t a = append(t->s, "k", "a");
	int64_t b = append(t->s, "k", "b");
	int64_t c = append(t->s, "k", "c");
	uint64_t n = 0;
	sfs_list l;

	assert_true(a < b && b < c);
	log_is(t->s, "k", -1, 0, "a b c");
	log_is(t->s, "k", a, 0, "b c");
	log_is(t->s, "k", -1, 2, "a b");
	log_is(t->s, "k", c, 0, "");      /* cursor at the last id: empty */
	log_is(t->s, "other", -1, 0, ""); /* keys isolated */
	OK(sfs_log_scan(t->s, SC, LOG, S("k"), -1, 0, 0, &l));
	assert_int_equal(l.items[0].id, a);
	assert_int_equal(l.items[2].id, c);
	assert_int_equal(l.items[0].st.size, 1);
	assert_true(l.items[0].st.mtime_ns > 0);
	sfs_list_free(&l);
	/* keys_only */
	OK(sfs_log_scan(t->s, SC, LOG, S("k"), -1, 0, 1, &l));
	assert_int_equal(l.n, 3);
	assert_null(l.items[0].value.ptr);
	assert_int_equal(l.items[0].st.size, 1);
	sfs_list_free(&l);
	/* the Go SDK's StateLogClear: ns log, every key */
	append(t->s, "k2", "x");
	OK(sfs_log_clear(t->s, SC, LOG, SFS_NONE, &n));
	assert_int_equal(n, 4);
	log_is(t->s, "k", -1, 0, "");
	OK(sfs_log_clear(t->s, SC, LOG, SFS_NONE, &n));
	assert_int_equal(n, 0);
}

/* Paging with limit and the last id as cursor terminates (python's
 * test_state_log_scan_limit_caps_rows). */
static void test_log_paging(void **state)
{
	tfx *t = *state;
	int64_t cursor = -1;
	int pages = 0, rows = 0;
	char v[8];
	sfs_list l;

	for (int i = 0; i < 7; i++) {
		snprintf(v, sizeof(v), "%d", i);
		append(t->s, "p", v);
	}
	for (;;) {
		OK(sfs_log_scan(t->s, SC, LOG, S("p"), cursor, 2, 0, &l));
		if (l.n == 0) {
			sfs_list_free(&l);
			break;
		}
		assert_true(l.n <= 2);
		rows += (int)l.n;
		cursor = l.items[l.n - 1].id;
		sfs_list_free(&l);
		pages++;
		assert_true(pages < 10);
	}
	assert_int_equal(rows, 7);
	assert_int_equal(pages, 4);
}

/* Ids never reused: not after a clear, not after a reopen. Ids are global
 * across scopes and keys. */
static void test_log_ids_not_reused(void **state)
{
	tfx *t = *state;
	int64_t a = append(t->s, "k", "a");
	int64_t b, c, d;

	OK(sfs_log_clear(t->s, SC, SFS_NONE, SFS_NONE, NULL));
	b = append(t->s, "k", "b");
	assert_true(b > a);
	OK(sfs_log_append(t->s, S("other-scope"), S("ns"), S("z"), S("z"), &c));
	assert_true(c > b);
	OK(sfs_log_delete(t->s, S("other-scope"), S("ns"), S("z"), c));
	tfx_reopen(t);
	d = append(t->s, "k", "d");
	assert_true(d > c);
	log_is(t->s, "k", -1, 0, "b d");
}

static void test_log_get_stat_delete_keys(void **state)
{
	tfx *t = *state;
	int64_t a = append(t->s, "k1", "alpha");
	sfs_stat st;
	uint64_t n;
	sfs_buf b;
	sfs_list l;

	append(t->s, "k3", "x");
	append(t->s, "k2", "y");
	append(t->s, "k2", "z");
	OK(sfs_log_get(t->s, SC, LOG, S("k1"), a, &b));
	tfx_buf(&b, "alpha");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_log_get(t->s, SC, LOG, S("k2"), a, &b));
	OK(sfs_log_stat(t->s, SC, LOG, S("k1"), a, &st));
	assert_int_equal(st.size, 5);
	assert_true(st.mtime_ns > 0);
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SC, LOG, SFS_NONE, 0, &l));
	tfx_keys(&l, "k1 k2 k3");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SC, LOG, S("k1"), 1, &l));
	tfx_keys(&l, "k2");
	sfs_list_free(&l);
	OK(sfs_log_delete(t->s, SC, LOG, S("k1"), a));
	IS(SFS_NOTFOUND, sfs_log_delete(t->s, SC, LOG, S("k1"), a));
	IS(SFS_NOTFOUND, sfs_log_stat(t->s, SC, LOG, S("k1"), a, &st));
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SC, LOG, SFS_NONE, 0, &l));
	tfx_keys(&l, "k2 k3");
	sfs_list_free(&l);
	/* clear of one key */
	OK(sfs_log_clear(t->s, SC, LOG, S("k2"), &n));
	assert_int_equal(n, 2);
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, SC, LOG, SFS_NONE, 0, &l));
	tfx_keys(&l, "k3");
	sfs_list_free(&l);
	IS(SFS_INVALID, sfs_log_clear(t->s, SC, SFS_NONE, S("k3"), &n));
}

/* A caller retry duplicates rows: exactly-once is the caller's job. */
static void test_log_retry_duplicates(void **state)
{
	tfx *t = *state;

	append(t->s, "r", "same");
	append(t->s, "r", "same");
	log_is(t->s, "r", -1, 0, "same same");
}

static void test_log_big_value(void **state)
{
	tfx *t = *state;
	size_t n = 1024 * 1024;
	unsigned char *v = malloc(n);
	int64_t id;
	sfs_buf b;

	assert_non_null(v);
	memset(v, 0xab, n);
	OK(sfs_log_append(t->s, SC, LOG, S("big"), sfs_bytes(v, n), &id));
	OK(sfs_log_get(t->s, SC, LOG, S("big"), id, &b));
	assert_int_equal(b.len, n);
	assert_memory_equal(b.ptr, v, n);
	sfs_buf_free(&b);
	free(v);
}

/* The stream engine's ListState on the log (Weibo state/pebble_listseq):
 * w1 a,b,c -> reopen -> append d,e -> a,b,c,d,e; w2 x,y; fresh w3. */
static void test_list_append_after_reopen(void **state)
{
	tfx *t = *state;
	sfs_slice w1 = S("worker-1"), w2 = S("worker-2"), w3 = S("worker-3");
	sfs_slice ns = S("window"), key = S("win-0");
	const char *v1[] = { "a", "b", "c" };
	sfs_list l;

	for (int i = 0; i < 3; i++)
		OK(sfs_log_append(t->s, w1, ns, key, S(v1[i]), NULL));
	OK(sfs_log_append(t->s, w2, ns, key, S("x"), NULL));
	tfx_reopen(t);
	OK(sfs_log_append(t->s, w1, ns, key, S("d"), NULL));
	OK(sfs_log_append(t->s, w1, ns, key, S("e"), NULL));
	OK(sfs_log_append(t->s, w2, ns, key, S("y"), NULL));
	OK(sfs_log_append(t->s, w3, ns, key, S("fresh"), NULL));
	OK(sfs_log_scan(t->s, w1, ns, key, -1, 0, 0, &l));
	values_are(&l, "a b c d e");
	sfs_list_free(&l);
	OK(sfs_log_scan(t->s, w2, ns, key, -1, 0, 0, &l));
	values_are(&l, "x y");
	sfs_list_free(&l);
	OK(sfs_log_scan(t->s, w3, ns, key, -1, 0, 0, &l));
	values_are(&l, "fresh");
	sfs_list_free(&l);
	/* Clear, append, reopen, append: d2, e2 (no resurrection). */
	OK(sfs_log_clear(t->s, w1, ns, key, NULL));
	OK(sfs_log_append(t->s, w1, ns, key, S("d2"), NULL));
	tfx_reopen(t);
	OK(sfs_log_append(t->s, w1, ns, key, S("e2"), NULL));
	OK(sfs_log_scan(t->s, w1, ns, key, -1, 0, 0, &l));
	values_are(&l, "d2 e2");
	sfs_list_free(&l);
	/* Keys "a" and "ab" are separate lists; Keys() lists both. */
	OK(sfs_log_append(t->s, w1, ns, S("a"), S("1"), NULL));
	OK(sfs_log_append(t->s, w1, ns, S("ab"), S("2"), NULL));
	OK(sfs_log_scan(t->s, w1, ns, S("a"), -1, 0, 0, &l));
	values_are(&l, "1");
	sfs_list_free(&l);
	OK(sfs_dir_list(t->s, SFS_FAM_LOG, w1, ns, SFS_NONE, 0, &l));
	tfx_keys(&l, "a ab win-0");
	sfs_list_free(&l);
}

/* --- queues ------------------------------------------------------------- */

#define Q S("q")

static void pop_is(sfs_store *s, sfs_slice q, const char *want)
{
	sfs_list l;

	OK(sfs_queue_pop(s, q, 1, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, want);
	assert_true(l.items[0].id > 0);
	assert_int_equal(l.items[0].st.size, strlen(want));
	assert_int_equal(l.items[0].st.mtime_ns, 0); /* a pop of one */
	sfs_list_free(&l);
}

/* QueuePush_then_QueuePop_FIFO, QueuePop_empty_or_unknown, push empty. */
static void test_queue_fifo(void **state)
{
	tfx *t = *state;
	sfs_slice items[3] = { S("a"), S("b"), S("c") };
	sfs_list l = { (void *)0x1, 3 };
	int64_t first = 0;
	uint64_t len = 9;

	OK(sfs_queue_push(t->s, Q, items, 3, &first));
	assert_true(first > 0);
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 3);
	pop_is(t->s, Q, "a");
	pop_is(t->s, Q, "b");
	pop_is(t->s, Q, "c");
	IS(SFS_NOTFOUND, sfs_queue_pop(t->s, Q, 1, &l));
	assert_ptr_equal(l.items, (void *)0x1);
	IS(SFS_NOTFOUND, sfs_queue_pop(t->s, S("never-pushed"), 1, &l));
	OK(sfs_queue_push(t->s, S("empty-push"), NULL, 0, NULL));
	IS(SFS_NOTFOUND, sfs_queue_pop(t->s, S("empty-push"), 1, &l));
	OK(sfs_item_count(t->s, S("never-pushed"), SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 0);
	/* an empty item is an item */
	items[0] = sfs_bytes("", 0);
	OK(sfs_queue_push(t->s, Q, items, 1, NULL));
	OK(sfs_queue_pop(t->s, Q, 1, &l));
	assert_non_null(l.items[0].value.ptr);
	assert_int_equal(l.items[0].value.len, 0);
	sfs_list_free(&l);
}

static void test_queue_ids_and_clear(void **state)
{
	tfx *t = *state;
	sfs_slice items[2] = { S("x"), S("y") };
	int64_t f1, f2, f3;
	uint64_t n = 9;

	OK(sfs_queue_push(t->s, Q, items, 2, &f1));
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 2);
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 0);
	OK(sfs_queue_push(t->s, Q, items, 2, &f2));
	assert_true(f2 > f1 + 1);
	tfx_reopen(t);
	{
		sfs_list l;

		OK(sfs_queue_pop(t->s, Q, LONG_MAX, &l));
		values_are(&l, "x y");
		assert_int_equal(l.items[0].id, f2);
		assert_int_equal(l.items[0].st.size, 1);
		assert_true(l.items[0].st.mtime_ns > 0);
		assert_true(l.items[1].st.mtime_ns >= l.items[0].st.mtime_ns);
		sfs_list_free(&l);
	}
	OK(sfs_queue_push(t->s, Q, items, 1, &f3));
	assert_true(f3 > f2 + 1);
	/* queues are separate */
	OK(sfs_queue_push(t->s, S("other"), items + 1, 1, NULL));
	pop_is(t->s, Q, "x");
	pop_is(t->s, S("other"), "y");
}

static void test_queue_scan_peek_stat_delete(void **state)
{
	tfx *t = *state;
	sfs_slice items[3] = { S("one"), S("two"), S("three") };
	int64_t first;
	uint64_t len;
	sfs_stat st;
	sfs_buf b;
	sfs_list l;

	OK(sfs_queue_push(t->s, Q, items, 3, &first));
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "one two three");
	assert_int_equal(l.items[0].id, first);
	assert_int_equal(l.items[1].id, first + 1);
	assert_int_equal(l.items[2].st.size, 5);
	assert_true(l.items[2].st.mtime_ns > 0);
	sfs_list_free(&l);
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, first, 1, 1, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].id, first + 1);
	assert_null(l.items[0].value.ptr);
	sfs_list_free(&l);
	OK(sfs_item_get(t->s, Q, SFS_ITEM_PENDING, first + 1, &b));
	tfx_buf(&b, "two");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_item_get(t->s, S("other"), SFS_ITEM_PENDING,
	                              first + 1, &b));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_PENDING, first + 2, &st));
	assert_int_equal(st.size, 5);
	assert_true(st.mtime_ns > 0);
	IS(SFS_NOTFOUND, sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, first + 2,
	                               &st));
	OK(sfs_item_delete(t->s, Q, SFS_ITEM_PENDING, first + 1));
	IS(SFS_NOTFOUND, sfs_item_delete(t->s, Q, SFS_ITEM_PENDING, first + 1));
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 2);
	pop_is(t->s, Q, "one");
	pop_is(t->s, Q, "three");
}

static void test_queue_drain(void **state)
{
	tfx *t = *state;
	sfs_slice items[3] = { S("a"), S("b"), S("c") };
	uint64_t len;
	sfs_list l;

	OK(sfs_queue_push(t->s, Q, items, 3, NULL));
	OK(sfs_queue_push(t->s, S("sib"), items, 1, NULL));
	OK(sfs_queue_pop(t->s, Q, LONG_MAX, &l));
	values_are(&l, "a b c");
	assert_true(l.items[0].id < l.items[1].id);
	assert_true(l.items[2].st.mtime_ns > 0);
	sfs_list_free(&l);
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 0);
	IS(SFS_NOTFOUND, sfs_queue_pop(t->s, Q, LONG_MAX, &l));
	/* a pop of several takes them from the head, no more */
	OK(sfs_queue_push(t->s, Q, items, 3, NULL));
	OK(sfs_queue_pop(t->s, Q, 2, &l));
	values_are(&l, "a b");
	sfs_list_free(&l);
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 1);
	pop_is(t->s, Q, "c");
	OK(sfs_item_count(t->s, S("sib"), SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 1);
}

static void test_seq_bad_args(void **state)
{
	tfx *t = *state;
	sfs_slice items[1] = { SFS_NONE };
	sfs_list l;

	IS(SFS_INVALID, sfs_queue_push(t->s, Q, items, 1, NULL));
	IS(SFS_INVALID, sfs_queue_push(t->s, Q, NULL, 2, NULL));
	IS(SFS_INVALID, sfs_queue_push(t->s, SFS_NONE, NULL, 0, NULL));
	IS(SFS_INVALID, sfs_queue_pop(t->s, Q, 1, NULL));
	IS(SFS_INVALID, sfs_queue_pop(t->s, Q, 0, &l));
	IS(SFS_INVALID, sfs_queue_pop(NULL, Q, 1, &l));
	IS(SFS_INVALID, sfs_log_append(t->s, SC, SFS_NONE, S("k"), S("v"), NULL));
	IS(SFS_INVALID, sfs_log_scan(t->s, SC, LOG, S("k"), -1, 0, 0, NULL));
	IS(SFS_INVALID, sfs_dir_list(t->s, SFS_FAM_LOG, SC, LOG,
	                             (sfs_slice){ NULL, 1 }, 0, &l));
	IS(SFS_INVALID, sfs_item_count(t->s, Q, SFS_ITEM_PENDING, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_log_basic),
		T(test_log_paging),
		T(test_log_ids_not_reused),
		T(test_log_get_stat_delete_keys),
		T(test_log_retry_duplicates),
		T(test_log_big_value),
		T(test_list_append_after_reopen),
		T(test_queue_fifo),
		T(test_queue_ids_and_clear),
		T(test_queue_scan_peek_stat_delete),
		T(test_queue_drain),
		T(test_seq_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
