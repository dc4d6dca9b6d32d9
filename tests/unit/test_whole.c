/*
 * test_whole.c - whole-store operations: checkpoint and restore (Weibo's
 * semantics: restore discards later writes, appends after a restore extend
 * lists, ids never go backwards), info, verify, and export/import (round
 * trip byte for byte, idempotent, conflicts refused).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"

static void ckpt_path(tfx *t, char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", t->dir, name);
}

/* Files in the test directory other than the store's own. */
static int stray_files(tfx *t)
{
	DIR *d = opendir(t->dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, "statefs-ckpt"))
			n++;
	closedir(d);
	return n;
}

static void test_checkpoint_restore(void **state)
{
	tfx *t = *state;
	char cp[512];
	struct stat sb;
	sfs_buf b;
	int64_t v;

	ckpt_path(t, cp, sizeof(cp), "cp1.db");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("before")));
	OK(sfs_counter_set(t->s, S("s"), S("n"), S("c"), 10));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("empty"), SFS_NONE));
	OK(sfs_checkpoint(t->s, cp, NULL, NULL));
	assert_int_equal(stat(cp, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(stray_files(t), 0);
	IS(SFS_EXISTS, sfs_checkpoint(t->s, cp, NULL, NULL));
	/* writes after the checkpoint are discarded by restore */
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("after")));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("new"), S("x")));
	OK(sfs_counter_add(t->s, S("s"), S("n"), S("c"), 5, NULL));
	OK(sfs_dir_remove(t->s, SFS_FAM_KV, S("empty"), SFS_NONE));
	OK(sfs_restore(t->s, cp, NULL, NULL));
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "before");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("s"), S("n"), S("new"), &b));
	OK(sfs_counter_get(t->s, S("s"), S("n"), S("c"), &v, NULL));
	assert_int_equal(v, 10);
	OK(sfs_dir_exists(t->s, SFS_FAM_KV, S("empty"), SFS_NONE));
	/* the checkpoint itself is untouched and restorable again */
	OK(sfs_restore(t->s, cp, NULL, NULL));
	assert_int_equal(stray_files(t), 0);
}

/* Weibo 2edcfec: a post-checkpoint append is discarded by restore, a later
 * append continues the list; ids never go backwards. */
static void test_list_append_after_restore(void **state)
{
	tfx *t = *state;
	sfs_slice w = S("worker-0"), ns = S("window"), key = S("k");
	int64_t id_c, id_x, id_d;
	char cp[512];
	sfs_list l;

	ckpt_path(t, cp, sizeof(cp), "cp.db");
	OK(sfs_log_append(t->s, w, ns, key, S("a"), NULL));
	OK(sfs_log_append(t->s, w, ns, key, S("b"), NULL));
	OK(sfs_log_append(t->s, w, ns, key, S("c"), &id_c));
	OK(sfs_checkpoint(t->s, cp, NULL, NULL));
	OK(sfs_log_append(t->s, w, ns, key, S("x"), &id_x));
	OK(sfs_restore(t->s, cp, NULL, NULL));
	OK(sfs_log_append(t->s, w, ns, key, S("d"), &id_d));
	OK(sfs_log_append(t->s, w, ns, key, S("e"), NULL));
	assert_true(id_d > id_x); /* not reused: a cursor at x misses nothing */
	OK(sfs_log_scan(t->s, w, ns, key, -1, 0, 0, &l));
	assert_int_equal(l.n, 5);
	tfx_buf(&l.items[0].value, "a");
	tfx_buf(&l.items[2].value, "c");
	assert_int_equal(l.items[2].id, id_c);
	tfx_buf(&l.items[3].value, "d");
	tfx_buf(&l.items[4].value, "e");
	sfs_list_free(&l);
	/* the same for queue ids */
	{
		sfs_slice it = S("i");
		int64_t q1, q2;

		OK(sfs_queue_push(t->s, S("q"), &it, 1, &q1));
		OK(sfs_restore(t->s, cp, NULL, NULL));
		OK(sfs_queue_push(t->s, S("q"), &it, 1, &q2));
		assert_true(q2 > q1);
	}
	/* after a reopen as well */
	tfx_reopen(t);
	OK(sfs_log_append(t->s, w, ns, key, S("f"), &id_x));
	assert_true(id_x > id_d);
}

static int cancel_at_once(uint64_t done, uint64_t total, void *ctx)
{
	(void)done;
	(void)total;
	(void)ctx;
	return 1;
}

/* The thread that called the whole-store operation: its callbacks run
 * there (statefs.h). Before 2026-12-03 a PostgreSQL store's checkpoint
 * called progress from the thread of its export. */
static pthread_t caller;
static int elsewhere;

static int count_calls(uint64_t done, uint64_t total, void *ctx)
{
	if (!pthread_equal(pthread_self(), caller))
		elsewhere++; /* (an assertion fails only on cmocka's thread) */
	assert_true(done <= total);
	++*(int *)ctx;
	return 0;
}

/* Failures leave the live store as it was. */
static void test_restore_failures(void **state)
{
	tfx *t = *state;
	char cp[512], bad[512];
	int calls = 0;
	sfs_buf b;
	FILE *f;

	ckpt_path(t, cp, sizeof(cp), "cp.db");
	ckpt_path(t, bad, sizeof(bad), "bad.db");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("old")));
	IS(SFS_CANCELLED, sfs_checkpoint(t->s, cp, cancel_at_once, NULL));
	assert_int_equal(access(cp, F_OK), -1);
	assert_int_equal(stray_files(t), 0);
	caller = pthread_self();
	elsewhere = 0;
	OK(sfs_checkpoint(t->s, cp, count_calls, &calls));
	assert_true(calls >= 2);
	assert_int_equal(elsewhere, 0);
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("live")));
	IS(SFS_NOTFOUND, sfs_restore(t->s, bad, NULL, NULL));
	f = fopen(bad, "w");
	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fputs("garbage garbage garbage garbage\n", f);
	fclose(f);
	assert_true(sfs_restore(t->s, bad, NULL, NULL) != SFS_OK);
	IS(SFS_CANCELLED, sfs_restore(t->s, cp, cancel_at_once, NULL));
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "live");
	sfs_buf_free(&b);
	/* the good checkpoint still restores after the failed attempts */
	calls = 0;
	OK(sfs_restore(t->s, cp, count_calls, &calls));
	assert_true(calls >= 2);
	assert_int_equal(elsewhere, 0);
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "old");
	sfs_buf_free(&b);
	IS(SFS_INVALID, sfs_restore(t->s, NULL, NULL, NULL));
	IS(SFS_INVALID, sfs_checkpoint(t->s, "", NULL, NULL));
}

/* A checkpoint of an encrypted store needs the same key. */
static void test_checkpoint_key(void **state)
{
	tfx *t = *state;
	char cp[512], other[512];
	sfs_config o;
	sfs_store *s;
	sfs_key *k;

	if (!tfx_encrypted())
		skip();
	ckpt_path(t, cp, sizeof(cp), "cp.db");
	ckpt_path(t, other, sizeof(other), "other.db");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_checkpoint(t->s, cp, NULL, NULL));
	OK(sfs_key_generate(&k));
	memset(&o, 0, sizeof(o));
	o.db = other;
	o.flags = SFS_OPEN_CREATE;
	o.key = k;
	OK(sfs_store_open(&o, &s, NULL));
	assert_true(sfs_restore(s, cp, NULL, NULL) != SFS_OK);
	sfs_store_close(s);
	sfs_key_destroy(k);
	/* the checkpoint opens as a (SQLite) store with our key */
	OK(tfx_open_file(cp, SFS_OPEN_READONLY, &s));
	sfs_store_close(s);
}

static void test_info_verify(void **state)
{
	tfx *t = *state;
	sfs_slice it = S("i");
	sfs_info info;
	int calls = 0;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_counter_set(t->s, S("s"), S("n"), S("k"), 1));
	OK(sfs_log_append(t->s, S("s"), S("n"), S("k"), S("v"), NULL));
	OK(sfs_log_append(t->s, S("s"), S("n"), S("k"), S("v"), NULL));
	OK(sfs_queue_push(t->s, S("q"), &it, 1, NULL));
	OK(sfs_store_info(t->s, &info));
	if (!tfx_postgres())
		assert_string_equal(info.path, t->path);
	assert_int_equal(info.schema_version, tfx_postgres() ? 2 : 5);
	assert_int_equal(info.encrypted, tfx_encrypted());
	assert_string_equal(info.cipher, tfx_encrypted() ? "xchacha20poly1305"
	                                                 : "none");
	assert_true(info.size > 0);
	if (tfx_postgres()) {
		assert_string_equal(info.backend, "postgresql");
		assert_null(info.file);
	} else {
		assert_string_equal(info.backend, "sqlite");
		assert_string_equal(info.file, t->path);
		/* SQLite's own facts, by name, in their order */
		assert_int_equal(info.nfacts, 4);
		assert_string_equal(info.facts[0].name, "page_size");
		assert_int_equal(info.facts[0].value, 4096);
		assert_string_equal(info.facts[1].name, "page_count");
		assert_true(info.facts[1].value > 0);
		assert_string_equal(info.facts[2].name, "file_size");
		assert_true(info.facts[2].value > 0);
		assert_string_equal(info.facts[3].name, "wal_size");
		assert_int_equal(info.size, info.facts[2].value + info.facts[3].value);
	}
	assert_int_equal(info.kv_rows, 1);
	assert_int_equal(info.counter_rows, 1);
	assert_int_equal(info.log_rows, 2);
	assert_int_equal(info.queue_rows, 1);
	OK(sfs_store_verify(t->s, count_calls, &calls));
	assert_true(calls >= 2);
	IS(SFS_CANCELLED, sfs_store_verify(t->s, cancel_at_once, NULL));
	IS(SFS_INVALID, sfs_store_info(t->s, NULL));
}

/* --- export / import ---------------------------------------------------- */

static void fill(sfs_store *s)
{
	sfs_slice items[2] = { S("job1"), S("job2") };
	unsigned char odd[3] = { 0, 0xff, 'x' };

	OK(sfs_kv_put(s, S("s1"), S("n"), S("b"), S("2")));
	OK(sfs_kv_put(s, S("s1"), S("n"), S("a"), sfs_bytes("", 0)));
	OK(sfs_kv_put(s, sfs_bytes(odd, 3), S(""), sfs_bytes(odd, 2), S("odd")));
	OK(sfs_counter_set(s, S("s1"), S("c"), S("k"), -7));
	OK(sfs_log_append(s, S("s1"), S("log"), S("k"), S("e1"), NULL));
	OK(sfs_log_append(s, S("s1"), S("log"), S("k"), S("e2"), NULL));
	OK(sfs_log_append(s, S("s0"), S("log"), S("k"), S("e3"), NULL));
	OK(sfs_queue_push(s, S("q"), items, 2, NULL));
	OK(sfs_dir_create(s, SFS_FAM_KV, S("empty-scope"), SFS_NONE));
	OK(sfs_dir_create(s, SFS_FAM_LOG, S("s1"), S("empty-ns")));
	OK(sfs_dir_create(s, SFS_FAM_QUEUE, S("empty-q"), SFS_NONE));
}

static void test_export_order(void **state)
{
	tfx *t = *state;
	tfx_rows rs = { 0 };

	fill(t->s);
	OK(sfs_export(t->s, tfx_rows_add, &rs, NULL, NULL));
	assert_int_equal(rs.n, 12);
	/* family order, then scope/ns/key/id */
	assert_int_equal(rs.r[0].family, SFS_FAM_KV);
	assert_int_equal(rs.r[0].scope.len, 3); /* "\0\xffx" < "s1" */
	assert_int_equal(rs.r[1].family, SFS_FAM_KV);
	assert_int_equal(rs.r[1].key.len, 1);
	assert_memory_equal(rs.r[1].key.ptr, "a", 1);
	assert_int_equal(rs.r[1].value.len, 0);
	assert_non_null(rs.r[1].value.ptr);
	assert_true(rs.r[1].mtime_ns > 0);
	assert_int_equal(rs.r[3].family, SFS_FAM_COUNTER);
	assert_int_equal(rs.r[3].counter, -7);
	assert_null(rs.r[3].value.ptr);
	assert_int_equal(rs.r[4].family, SFS_FAM_LOG);
	assert_memory_equal(rs.r[4].scope.ptr, "s0", 2);
	assert_true(rs.r[5].id < rs.r[6].id);
	assert_int_equal(rs.r[7].family, SFS_FAM_QUEUE);
	assert_null(rs.r[7].ns.ptr);
	assert_null(rs.r[7].key.ptr);
	assert_int_equal(rs.r[9].family, SFS_FAM_DIR);
	assert_memory_equal(rs.r[9].scope.ptr, "empty-q", 7);
	assert_int_equal(rs.r[9].dir_family, SFS_FAM_QUEUE);
	assert_null(rs.r[9].ns.ptr);
	assert_memory_equal(rs.r[10].scope.ptr, "empty-scope", 11);
	assert_int_equal(rs.r[10].dir_family, SFS_FAM_KV);
	assert_memory_equal(rs.r[11].ns.ptr, "empty-ns", 8);
	assert_int_equal(rs.r[11].dir_family, SFS_FAM_LOG);
	tfx_rows_free(&rs);
}

/* An import source that fails at once. */
static int fail_source(sfs_row *r, void *ctx)
{
	(void)r, (void)ctx;
	return -3;
}

static int stop_at_3(const sfs_row *r, void *ctx)
{
	(void)r;
	return ++*(int *)ctx == 3 ? 42 : 0;
}

static void test_export_import_roundtrip(void **state)
{
	tfx *t = *state;
	tfx_dump first = { 0 }, second = { 0 }, third = { 0 };
	tfx_rows rs = { 0 }, one = { 0 };
	char path[512];
	sfs_store *s2;
	int n = 0, calls = 0;

	fill(t->s);
	OK(sfs_export(t->s, tfx_dump_row, &first, count_calls, &calls));
	assert_true(calls >= 1);
	assert_int_equal(sfs_export(t->s, stop_at_3, &n, NULL, NULL), 42);
	OK(sfs_export(t->s, tfx_rows_add, &rs, NULL, NULL));

	snprintf(path, sizeof(path), "%s/copy.db", t->dir);
	OK(tfx_open(path, SFS_OPEN_CREATE, &s2));
	OK(sfs_import(s2, tfx_rows_next, &rs));
	OK(sfs_export(s2, tfx_dump_row, &second, NULL, NULL));
	assert_int_equal(first.rows, second.rows);
	assert_int_equal(first.len, second.len);
	assert_memory_equal(first.p, second.p, first.len);
	/* idempotent: importing again changes nothing */
	OK(sfs_import(s2, tfx_rows_next, &rs));
	OK(sfs_export(s2, tfx_dump_row, &third, NULL, NULL));
	assert_int_equal(first.len, third.len);
	assert_memory_equal(first.p, third.p, first.len);
	/* ids continue after the imported ones */
	{
		int64_t id;

		OK(sfs_log_append(s2, S("s1"), S("log"), S("k"), S("e4"), &id));
		assert_true(id > rs.r[6].id);
	}
	/* a log id holding a different row is a conflict, and the rows
	 * before it in the same import are not kept either */
	{
		sfs_buf b;

		OK(sfs_kv_put(t->s, S("new"), S("n"), S("k"), S("v")));
		OK(sfs_export(t->s, tfx_rows_add, &one, NULL, NULL));
		for (size_t i = 0; i < one.n; i++) {
			if (one.r[i].family != SFS_FAM_LOG ||
			    one.r[i].id != rs.r[4].id)
				continue;
			free((void *)one.r[i].value.ptr);
			one.r[i].value = sfs_str(strdup("changed"));
		}
		IS(SFS_EXISTS, sfs_import(s2, tfx_rows_next, &one));
		IS(SFS_NOTFOUND, sfs_kv_get(s2, S("new"), S("n"), S("k"), &b));
		OK(sfs_log_get(s2, rs.r[4].scope, rs.r[4].ns, rs.r[4].key,
		               rs.r[4].id, &b));
		assert_int_equal(b.len, rs.r[4].value.len);
		assert_memory_equal(b.ptr, rs.r[4].value.ptr, b.len);
		sfs_buf_free(&b);
		tfx_rows_free(&one);
	}
	/* a row with a bad family or a missing scope is refused */
	{
		sfs_row bad = rs.r[0];

		bad.family = (sfs_family)77;
		tfx_rows_add(&bad, &one);
		IS(SFS_INVALID, sfs_import(s2, tfx_rows_next, &one));
		tfx_rows_free(&one);
		bad = rs.r[0];
		bad.scope = SFS_NONE;
		tfx_rows_add(&bad, &one);
		IS(SFS_INVALID, sfs_import(s2, tfx_rows_next, &one));
		tfx_rows_free(&one);
		bad = rs.r[9];
		bad.dir_family = SFS_FAM_DIR;
		tfx_rows_add(&bad, &one);
		IS(SFS_INVALID, sfs_import(s2, tfx_rows_next, &one));
		/* the sentence is about the row, not about scopes */
		assert_non_null(strstr(sfs_errdetail(),
		                       "a directory row's family is 5"));
		tfx_rows_free(&one);
	}
	/* the source's error stops the import, and is what it returns */
	IS(-3, sfs_import(s2, fail_source, NULL));
	sfs_store_close(s2);
	tfx_rows_free(&rs);
	tfx_dump_free(&first);
	tfx_dump_free(&second);
	tfx_dump_free(&third);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_checkpoint_restore),
		T(test_list_append_after_restore),
		T(test_restore_failures),
		T(test_checkpoint_key),
		T(test_info_verify),
		T(test_export_order),
		T(test_export_import_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
