/*
 * test_value.c - parts of a value: sfs_kv_read and sfs_kv_edit. Random
 * edit lists against a model in memory (every path of the planner: in
 * place, rewrite with a kept prefix, whole replacement, sparse growth),
 * appends from two handles in two threads that all land whole, the
 * truncation that does not lose a put made meanwhile, limits and
 * arguments. Runs against a plaintext and an encrypted store.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define SC S("scope")
#define NS_ S("ns")

static unsigned char *pattern(size_t n, unsigned seed)
{
	unsigned char *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 31 + seed) ^ (i >> 8));
	return p;
}

static void value_is(sfs_store *s, const char *k, const void *want,
                     size_t n)
{
	sfs_buf b;
	sfs_stat st;

	OK(sfs_kv_get(s, SC, NS_, S(k), &b));
	assert_int_equal(b.len, n);
	if (n)
		assert_memory_equal(b.ptr, want, n);
	sfs_buf_free(&b);
	OK(sfs_kv_stat(s, SC, NS_, S(k), &st));
	assert_int_equal(st.size, n);
}

static void test_read_ranges(void **state)
{
	tfx *t = *state;
	size_t n = 300000;
	unsigned char *v = pattern(n, 1);
	sfs_buf b = { (void *)0x1, 3 };
	uint64_t size = 0;
	static const struct { uint64_t off; size_t len, got; } cases[] = {
		{ 0, 10, 10 }, { 0, 300000, 300000 }, { 0, 1u << 30, 300000 },
		{ 4093, 4099, 4099 }, { 299990, 100, 10 }, { 299999, 1, 1 },
		{ 300000, 10, 0 }, { 1u << 31, 10, 0 }, { 150000, 0, 0 },
	};

	IS(SFS_NOTFOUND, sfs_kv_read(t->s, SC, NS_, S("v"), 0, 1, &b, &size));
	assert_ptr_equal(b.ptr, (void *)0x1);
	OK(sfs_kv_put(t->s, SC, NS_, S("v"), sfs_bytes(v, n)));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		OK(sfs_kv_read(t->s, SC, NS_, S("v"), cases[i].off, cases[i].len,
		               &b, &size));
		assert_int_equal(size, n);
		assert_int_equal(b.len, cases[i].got);
		assert_non_null(b.ptr);
		assert_int_equal(((char *)b.ptr)[b.len], 0);
		if (b.len)
			assert_memory_equal(b.ptr, v + cases[i].off, b.len);
		sfs_buf_free(&b);
	}
	/* size is optional; an empty value reads as nothing */
	OK(sfs_kv_put(t->s, SC, NS_, S("e"), sfs_bytes("", 0)));
	OK(sfs_kv_read(t->s, SC, NS_, S("e"), 0, 10, &b, NULL));
	assert_int_equal(b.len, 0);
	sfs_buf_free(&b);
	free(v);
}

/* The model: what the edits do to bytes in memory, as the header says. */
typedef struct model {
	unsigned char *p;
	size_t len, cap;
} model;

static void model_size(model *m, size_t n)
{
	if (n > m->cap) {
		m->p = realloc(m->p, n);
		assert_non_null(m->p);
		m->cap = n;
	}
	if (n > m->len)
		memset(m->p + m->len, 0, n - m->len);
	m->len = n;
}

static void model_apply(model *m, const sfs_edit *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t at = e[i].op == SFS_EDIT_APPEND ? m->len : (size_t)e[i].off;

		if (e[i].op == SFS_EDIT_TRUNCATE) {
			model_size(m, at);
			continue;
		}
		if (at + e[i].bytes.len > m->len)
			model_size(m, at + e[i].bytes.len);
		memcpy(m->p + at, e[i].bytes.ptr, e[i].bytes.len);
	}
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

/* Random lists of 1 to 5 edits on one key, checked against the model
 * after each list: the planner's every branch comes up (in-place writes
 * inside the value, growth, shrinking, truncate-then-extend, whole
 * replacements, appends, writes past a later truncation). */
static void test_edit_model(void **state)
{
	tfx *t = *state;
	model m = { NULL, 0, 0 };
	unsigned seed = 42;
	unsigned char *src = pattern(70000, 7);
	sfs_edit e[5];
	uint64_t size;

	for (int round = 0; round < 400; round++) {
		size_t n = 1 + rnd(&seed) % 5;
		unsigned flags = round == 0 ? SFS_EDIT_CREATE : rnd(&seed) & 1;

		for (size_t i = 0; i < n; i++) {
			unsigned kind = rnd(&seed) % 10;
			size_t len = rnd(&seed) % (kind == 9 ? 70000 : 5000);
			size_t base = m.len ? m.len : 1;

			e[i].bytes = sfs_bytes(src + rnd(&seed) % (70000 - len + 1),
			                       len);
			if (kind < 5) {          /* inside (mostly) */
				e[i].op = SFS_EDIT_WRITE;
				e[i].off = rnd(&seed) % base;
			} else if (kind < 7) {
				e[i].op = SFS_EDIT_APPEND;
				e[i].off = 0;
			} else if (kind < 9) {
				e[i].op = SFS_EDIT_TRUNCATE;
				e[i].off = rnd(&seed) % (base + 20000);
				e[i].bytes = SFS_NONE;
			} else {                 /* a whole replacement */
				e[i].op = SFS_EDIT_TRUNCATE;
				e[i].off = 0;
				e[i].bytes = SFS_NONE;
				if (i + 1 < n) {
					i++;
					e[i].op = SFS_EDIT_WRITE;
					e[i].off = 0;
					e[i].bytes = sfs_bytes(src, len);
				}
			}
		}
		OK(sfs_kv_edit(t->s, SC, NS_, S("k"), e, n, flags, &size));
		model_apply(&m, e, n);
		assert_int_equal(size, m.len);
		value_is(t->s, "k", m.p, m.len);
	}
	free(m.p);
	free(src);
}

static void test_edit_paths(void **state)
{
	tfx *t = *state;
	size_t n = 1 << 20;
	unsigned char *v = pattern(n, 3), *w = pattern(4096, 9);
	sfs_edit e[3];
	uint64_t size = 0;
	sfs_stat st;
	int64_t mt0 = 0, mt1 = 0;

	/* absent: NOTFOUND without CREATE, nothing made */
	e[0] = (sfs_edit){ SFS_EDIT_APPEND, 0, sfs_bytes("x", 1) };
	IS(SFS_NOTFOUND, sfs_kv_edit(t->s, SC, NS_, S("a"), e, 1, 0, &size));
	IS(SFS_NOTFOUND, sfs_kv_stat(t->s, SC, NS_, S("a"), &st));
	/* with CREATE and no edits: the empty value */
	OK(sfs_kv_edit(t->s, SC, NS_, S("a"), NULL, 0, SFS_EDIT_CREATE, &size));
	assert_int_equal(size, 0);
	value_is(t->s, "a", "", 0);
	/* EXCL: only an absent key (O_EXCL), and never without CREATE */
	IS(SFS_EXISTS, sfs_kv_edit(t->s, SC, NS_, S("a"), e, 1,
	                           SFS_EDIT_CREATE | SFS_EDIT_EXCL, &size));
	value_is(t->s, "a", "", 0);
	IS(SFS_INVALID, sfs_kv_edit(t->s, SC, NS_, S("x"), NULL, 0,
	                            SFS_EDIT_EXCL, &size));
	OK(sfs_kv_edit(t->s, SC, NS_, S("x"), e, 1,
	               SFS_EDIT_CREATE | SFS_EDIT_EXCL, &size));
	value_is(t->s, "x", "x", 1);
	OK(sfs_kv_delete(t->s, SC, NS_, S("x")));

	/* a 4 KiB write in the middle of 1 MiB: in place, length kept */
	tfx_now = 1000000000000ll;
	OK(sfs_kv_put(t->s, SC, NS_, S("big"), sfs_bytes(v, n)));
	OK(sfs_kv_stat(t->s, SC, NS_, S("big"), &st));
	mt0 = st.mtime_ns;
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, n / 2, sfs_bytes(w, 4096) };
	tfx_now += 5000000000ll;
	OK(sfs_kv_edit(t->s, SC, NS_, S("big"), e, 1, 0, &size));
	memcpy(v + n / 2, w, 4096);
	value_is(t->s, "big", v, n);
	OK(sfs_kv_stat(t->s, SC, NS_, S("big"), &st));
	mt1 = st.mtime_ns;
	assert_true(mt1 > mt0); /* an edit sets the time as a put does */

	/* an append of 4 KiB: a rewrite keeping the whole old value */
	e[0] = (sfs_edit){ SFS_EDIT_APPEND, 0, sfs_bytes(w, 4096) };
	OK(sfs_kv_edit(t->s, SC, NS_, S("big"), e, 1, 0, &size));
	assert_int_equal(size, n + 4096);
	v = realloc(v, n + 4096);
	assert_non_null(v);
	memcpy(v + n, w, 4096);
	value_is(t->s, "big", v, n + 4096);

	/* sparse: 1 byte at 10 MiB - 1 of a new key; zeros before it */
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, (10 << 20) - 1, sfs_bytes("z", 1) };
	OK(sfs_kv_edit(t->s, SC, NS_, S("sparse"), e, 1, SFS_EDIT_CREATE,
	               &size));
	assert_int_equal(size, 10 << 20);
	{
		sfs_buf b;
		OK(sfs_kv_read(t->s, SC, NS_, S("sparse"), (10 << 20) - 3, 10,
		               &b, &size));
		assert_int_equal(b.len, 3);
		assert_memory_equal(b.ptr, "\0\0z", 3);
		sfs_buf_free(&b);
	}

	/* a write past a later truncation is cut with it; the extension
	 * after that truncation is zeros */
	OK(sfs_kv_put(t->s, SC, NS_, S("t"), S("abcdef")));
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, 4, sfs_bytes("XYZ", 3) };
	e[1] = (sfs_edit){ SFS_EDIT_TRUNCATE, 5, SFS_NONE };
	e[2] = (sfs_edit){ SFS_EDIT_TRUNCATE, 8, SFS_NONE };
	OK(sfs_kv_edit(t->s, SC, NS_, S("t"), e, 3, 0, &size));
	value_is(t->s, "t", "abcdX\0\0\0", 8);

	/* whole replacements (a cut to 0, then the bytes) on either side of
	 * 1 MiB, where the SQLite backend stops binding the value and writes
	 * it through a blob handle, and reads it back through one */
	for (size_t len = n - 1; len <= n; len++) {
		unsigned char *r = pattern(len, (unsigned)(len % 7));

		e[0] = (sfs_edit){ SFS_EDIT_TRUNCATE, 0, SFS_NONE };
		e[1] = (sfs_edit){ SFS_EDIT_WRITE, 0, sfs_bytes(r, len) };
		OK(sfs_kv_edit(t->s, SC, NS_, S("big"), e, 2, 0, &size));
		assert_int_equal(size, len);
		value_is(t->s, "big", r, len);
		OK(sfs_kv_edit(t->s, SC, NS_, S("new"), e, 2, SFS_EDIT_CREATE,
		               &size));
		value_is(t->s, "new", r, len);
		OK(sfs_kv_delete(t->s, SC, NS_, S("new")));
		free(r);
	}
	free(v);
	free(w);
}

static void test_edit_limits(void **state)
{
	tfx *t = *state;
	sfs_config o;
	sfs_store *s;
	sfs_edit e[2];
	uint64_t size = 0;
	char *db = tfx_db(t->path);

	sfs_store_close(t->s);
	t->s = NULL;
	memset(&o, 0, sizeof(o));
	o.db = db;
	o.key = tfx_key();
	o.flags = o.key ? 0 : SFS_OPEN_PLAINTEXT;
	o.max_value = 100;
	OK(sfs_store_open(&o, &s, NULL));
	OK(sfs_kv_put(s, SC, NS_, S("k"), S("0123456789")));
	/* the final value over the limit: nothing changes */
	e[0] = (sfs_edit){ SFS_EDIT_APPEND, 0, sfs_bytes(pattern(95, 1), 95) };
	IS(SFS_TOOBIG, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, &size));
	free((void *)e[0].bytes.ptr);
	value_is(s, "k", "0123456789", 10);
	/* offsets beyond the limit, checked before anything is read */
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, 100, sfs_bytes("x", 1) };
	IS(SFS_TOOBIG, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, UINT64_MAX, sfs_bytes("x", 1) };
	IS(SFS_TOOBIG, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	e[0] = (sfs_edit){ SFS_EDIT_TRUNCATE, 101, SFS_NONE };
	IS(SFS_TOOBIG, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	/* every step counts: the limit, then one byte more */
	e[0] = (sfs_edit){ SFS_EDIT_TRUNCATE, 100, SFS_NONE };
	e[1] = (sfs_edit){ SFS_EDIT_APPEND, 0, sfs_bytes("x", 1) };
	IS(SFS_TOOBIG, sfs_kv_edit(s, SC, NS_, S("k"), e, 2, 0, NULL));
	/* bad arguments */
	IS(SFS_INVALID, sfs_kv_edit(s, SC, NS_, S("k"), NULL, 1, 0, NULL));
	e[0] = (sfs_edit){ (sfs_edit_op)9, 0, SFS_NONE };
	IS(SFS_INVALID, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	e[0] = (sfs_edit){ SFS_EDIT_WRITE, 0, SFS_NONE };
	IS(SFS_INVALID, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	IS(SFS_INVALID, sfs_kv_edit(s, SC, NS_, S("k"), NULL, 0, 0x80, NULL));
	IS(SFS_INVALID, sfs_kv_edit(s, SC, NS_, SFS_NONE, NULL, 0, 0, NULL));
	IS(SFS_INVALID, sfs_kv_read(s, SC, NS_, S("k"), 0, 1, NULL, NULL));
	value_is(s, "k", "0123456789", 10);
	sfs_store_close(s);
	free(db);
	/* read-only handles read but do not edit */
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &s));
	e[0] = (sfs_edit){ SFS_EDIT_APPEND, 0, sfs_bytes("x", 1) };
	IS(SFS_READONLY, sfs_kv_edit(s, SC, NS_, S("k"), e, 1, 0, NULL));
	{
		sfs_buf b;
		OK(sfs_kv_read(s, SC, NS_, S("k"), 8, 8, &b, NULL));
		assert_int_equal(b.len, 2);
		sfs_buf_free(&b);
	}
	sfs_store_close(s);
	tfx_reopen(t);
}

#define APPENDS 150

typedef struct appender {
	sfs_store *s;
	pthread_barrier_t *go;
	char tag;
	int failures;
} appender;

static void *append_loop(void *arg)
{
	appender *a = arg;
	char rec[64];
	sfs_edit e = { SFS_EDIT_APPEND, 0, SFS_NONE };

	pthread_barrier_wait(a->go);
	for (int i = 0; i < APPENDS; i++) {
		int n = snprintf(rec, sizeof(rec), "%c%05d%.*s\n", a->tag, i,
		                 i % 20, "....................");
		e.bytes = sfs_bytes(rec, (size_t)n);
		if (sfs_kv_edit(a->s, SC, NS_, S("log"), &e, 1, SFS_EDIT_CREATE,
		                NULL) != SFS_OK)
			a->failures++;
	}
	return NULL;
}

/* Two handles (two connections, as two processes have) append to one
 * value at once: every record lands, whole, each writer's in its order. */
static void test_append_two_handles(void **state)
{
	tfx *t = *state;
	pthread_barrier_t go;
	pthread_t th[2];
	appender a[2];
	sfs_store *s2;
	sfs_buf b;
	int next[2] = { 0, 0 };
	char *line, *save = NULL;

	OK(tfx_open(t->path, 0, &s2));
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < 2; i++) {
		a[i] = (appender){ i ? s2 : t->s, &go, i ? 'B' : 'A', 0 };
		assert_int_equal(pthread_create(&th[i], NULL, append_loop, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	assert_int_equal(a[0].failures + a[1].failures, 0);
	OK(sfs_kv_get(t->s, SC, NS_, S("log"), &b));
	for (line = strtok_r(b.ptr, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int w = line[0] == 'B', i = atoi(line + 1);
		assert_true(line[0] == 'A' || line[0] == 'B');
		assert_int_equal(i, next[w]);
		assert_int_equal(strlen(line), 6 + (size_t)(i % 20));
		next[w]++;
	}
	assert_int_equal(next[0], APPENDS);
	assert_int_equal(next[1], APPENDS);
	sfs_buf_free(&b);
	sfs_store_close(s2);
}

typedef struct putter {
	sfs_store *s;
	pthread_barrier_t *go;
	int lost;
	int failures;
} putter;

static void *put_loop(void *arg)
{
	putter *p = arg;
	char v[48];
	sfs_buf b;

	pthread_barrier_wait(p->go);
	for (int i = 0; i < 300; i++) {
		snprintf(v, sizeof(v), "%07d-------------------------------", i);
		if (sfs_kv_put(p->s, SC, NS_, S("t"), S(v)) != SFS_OK) {
			p->failures++;
			continue;
		}
		if (sfs_kv_get(p->s, SC, NS_, S("t"), &b) != SFS_OK) {
			p->failures++;
			continue;
		}
		/* a truncation may have cut it since, never undone it */
		if (b.len < 7 || memcmp(b.ptr, v, 7) != 0)
			p->lost++;
		sfs_buf_free(&b);
	}
	return NULL;
}

/* A truncation racing puts from another handle never brings back a value
 * that a put replaced (the mount used to get and put in two
 * transactions). */
static void test_truncate_keeps_puts(void **state)
{
	tfx *t = *state;
	pthread_barrier_t go;
	pthread_t th;
	putter p;
	sfs_store *s2;
	sfs_edit e = { SFS_EDIT_TRUNCATE, 0, SFS_NONE };

	OK(sfs_kv_put(t->s, SC, NS_, S("t"), S("0000000")));
	OK(tfx_open(t->path, 0, &s2));
	pthread_barrier_init(&go, NULL, 2);
	p = (putter){ s2, &go, 0, 0 };
	assert_int_equal(pthread_create(&th, NULL, put_loop, &p), 0);
	pthread_barrier_wait(&go);
	for (int i = 0; i < 600; i++) {
		e.off = i % 2 ? 10 : 40;
		OK(sfs_kv_edit(t->s, SC, NS_, S("t"), &e, 1, 0, NULL));
	}
	pthread_join(th, NULL);
	pthread_barrier_destroy(&go);
	assert_int_equal(p.failures, 0);
	assert_int_equal(p.lost, 0);
	sfs_store_close(s2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_read_ranges),
		T(test_edit_model),
		cmocka_unit_test_setup_teardown(test_edit_paths, tfx_setup_clock,
		                                tfx_teardown_clock),
		T(test_edit_limits),
		T(test_append_two_handles),
		T(test_truncate_keeps_puts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
