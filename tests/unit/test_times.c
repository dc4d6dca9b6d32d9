/*
 * test_times.c - modification times: one-second resolution, a time row
 * written once per key and second, the sparse time maps of logs and queues
 * (one row per second of appends, pruned as entries go), imports that
 * interleave with existing ids without changing their times, and stores of
 * schema version 1 (per-entry time rows) migrated, read and restored with
 * every time kept. The clock is the engine's injectable one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "fixture.h"

#define SEC 1000000000LL
#define SC S("exec")
#define LOG S("log")

/* Rows of a table, read with sqlite3 directly (plaintext stores only). */
static long rows_of(const char *path, const char *table)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char sql[128];
	long n = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/* The sparse maps are a SQLite store's, read with sqlite3 directly. */
static int sqlite_plain(void)
{
	return !tfx_encrypted() && !tfx_postgres();
}

static int64_t kv_mtime(sfs_store *s, const char *key)
{
	sfs_stat st = { .mtime_ns = -1 };

	OK(sfs_kv_stat(s, SC, S("ns"), S(key), &st));
	return st.mtime_ns;
}

/* A time given (touch -d, cp -a): kept in whole seconds, earlier or
 * later than the value's; the next write's time replaces it, also an
 * earlier one (a later time given stayed through every write, and rsync
 * missed them); an absent key is NOTFOUND. */
static void test_kv_set_mtime(void **state)
{
	tfx *t = *state;

	tfx_now = 5000 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("v")));
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), 1234 * SEC + 999));
	assert_int_equal(kv_mtime(t->s, "k"), 1234 * SEC);
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("w")));
	assert_int_equal(kv_mtime(t->s, "k"), 5000 * SEC);
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), 9000 * SEC));
	assert_int_equal(kv_mtime(t->s, "k"), 9000 * SEC);
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("x")));
	assert_int_equal(kv_mtime(t->s, "k"), 5000 * SEC);
	/* the same in one second: the put's own, and so its edit's */
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), 9000 * SEC));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("y")));
	assert_int_equal(kv_mtime(t->s, "k"), 5000 * SEC);
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), 9000 * SEC));
	OK(sfs_kv_edit(t->s, SC, S("ns"), S("k"), NULL, 0, 0, NULL));
	assert_int_equal(kv_mtime(t->s, "k"), 5000 * SEC);
	/* before 1970: whole seconds down */
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), -SEC / 2));
	assert_int_equal(kv_mtime(t->s, "k"), -SEC);
	/* the epoch, and a time in its second: the epoch, not "unknown" */
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), 0));
	assert_int_equal(kv_mtime(t->s, "k"), SFS_MTIME_EPOCH);
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), SEC - 1));
	assert_int_equal(kv_mtime(t->s, "k"), SFS_MTIME_EPOCH);
	/* the earliest time: the earliest whole second int64 ns holds (the
	 * second down from it left int64 and made it a time in 2262) */
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), INT64_MIN));
	assert_int_equal(kv_mtime(t->s, "k"), INT64_MIN / SEC * SEC);
	OK(sfs_kv_set_mtime(t->s, SC, S("ns"), S("k"), INT64_MAX));
	assert_int_equal(kv_mtime(t->s, "k"), INT64_MAX / SEC * SEC);
	IS(SFS_NOTFOUND, sfs_kv_set_mtime(t->s, SC, S("ns"), S("absent"), 0));
	{
		sfs_stat st;

		IS(SFS_NOTFOUND, sfs_kv_stat(t->s, SC, S("ns"), S("absent"),
		                             &st));
	}
}

static void test_kv_seconds(void **state)
{
	tfx *t = *state;
	sfs_list l;

	tfx_now = 1000 * SEC + 300000000;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("1")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	tfx_now = 1000 * SEC + 900000000; /* same second: no change */
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("2")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	tfx_now = 1001 * SEC + 1;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("3")));
	assert_int_equal(kv_mtime(t->s, "k"), 1001 * SEC);
	/* A write after the clock was stepped back has its own time, as a
	 * file's: the later one stayed, and the write changed no time. */
	tfx_now = 990 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("4")));
	assert_int_equal(kv_mtime(t->s, "k"), 990 * SEC);
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("5")));
	assert_int_equal(kv_mtime(t->s, "k"), 990 * SEC);
	/* Counters the same way. */
	tfx_now = 2000 * SEC + 5;
	OK(sfs_counter_add(t->s, SC, S("c"), S("n"), 1, NULL));
	tfx_now = 2000 * SEC + 999999999;
	OK(sfs_counter_add(t->s, SC, S("c"), S("n"), 1, NULL));
	OK(sfs_counter_scan(t->s, SC, S("c"), NULL, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].st.counter, 2);
	assert_int_equal(l.items[0].st.mtime_ns, 2000 * SEC);
	sfs_list_free(&l);
	tfx_now = 2003 * SEC;
	OK(sfs_counter_set(t->s, SC, S("c"), S("n"), 7));
	OK(sfs_counter_scan(t->s, SC, S("c"), NULL, &l));
	assert_int_equal(l.items[0].st.mtime_ns, 2003 * SEC);
	sfs_list_free(&l);
	tfx_now = 1995 * SEC; /* stepped back */
	OK(sfs_counter_add(t->s, SC, S("c"), S("n"), 0, NULL));
	OK(sfs_counter_scan(t->s, SC, S("c"), NULL, &l));
	assert_int_equal(l.items[0].st.mtime_ns, 1995 * SEC);
	sfs_list_free(&l);
	tfx_now = 2003 * SEC;
	OK(sfs_counter_set(t->s, SC, S("c"), S("n"), 7));
	/* a create stamps a new counter, and leaves an existing one's time */
	tfx_now = 2010 * SEC;
	IS(SFS_EXISTS, sfs_counter_create(t->s, SC, S("c"), S("n"), 1));
	OK(sfs_counter_create(t->s, SC, S("c"), S("o"), 1));
	OK(sfs_counter_scan(t->s, SC, S("c"), NULL, &l));
	assert_int_equal(l.n, 2);
	assert_int_equal(l.items[0].st.counter, 7);
	assert_int_equal(l.items[0].st.mtime_ns, 2003 * SEC);
	assert_int_equal(l.items[1].st.mtime_ns, 2010 * SEC);
	sfs_list_free(&l);
}

static void times_are(const sfs_list *l, const int64_t *want, size_t n)
{
	assert_int_equal(l->n, n);
	for (size_t i = 0; i < n; i++)
		if (l->items[i].st.mtime_ns != want[i])
			fail_msg("entry %zu (id %lld): time %lld, want %lld", i,
			         (long long)l->items[i].id,
			         (long long)l->items[i].st.mtime_ns,
			         (long long)want[i]);
}

static void log_times(sfs_store *s, const char *key, const int64_t *want,
                      size_t n)
{
	sfs_list l;

	OK(sfs_log_scan(s, SC, LOG, S(key), -1, 0, 1, &l));
	times_are(&l, want, n);
	sfs_list_free(&l);
}

static void queue_times(sfs_store *s, const char *q, const int64_t *want,
                        size_t n)
{
	sfs_list l;

	OK(sfs_item_scan(s, S(q), SFS_ITEM_PENDING, -1, 0, 1, &l));
	times_are(&l, want, n);
	sfs_list_free(&l);
}

static void test_log_map(void **state)
{
	tfx *t = *state;
	static const int64_t at[] = { 100 * SEC + 100000000,
		100 * SEC + 700000000, 101 * SEC, 101 * SEC + 500000000,
		99 * SEC, 103 * SEC };
	const int64_t want[] = { 100 * SEC, 100 * SEC, 101 * SEC, 101 * SEC,
		101 * SEC, 103 * SEC };
	int64_t id, first = 0;
	sfs_stat st;

	for (size_t i = 0; i < 6; i++) {
		tfx_now = at[i];
		OK(sfs_log_append(t->s, SC, LOG, S("k"), S("v"), &id));
		if (i == 0)
			first = id;
	}
	log_times(t->s, "k", want, 6);
	OK(sfs_log_stat(t->s, SC, LOG, S("k"), first + 4, &st));
	assert_int_equal(st.mtime_ns, 101 * SEC);
	/* a burst of appends in one second writes one map row */
	tfx_now = 200 * SEC;
	for (int i = 0; i < 100; i++)
		OK(sfs_log_append(t->s, SC, LOG, S("burst"), S("v"), NULL));
	if (sqlite_plain())
		assert_int_equal(rows_of(t->path, "statefs_log_timemap"), 4);
	/* deleting entries drops the rows no entry depends on; the others
	 * keep their times */
	OK(sfs_log_clear(t->s, SC, LOG, S("burst"), NULL));
	OK(sfs_log_delete(t->s, SC, LOG, S("k"), first + 2));
	OK(sfs_log_delete(t->s, SC, LOG, S("k"), first + 3));
	OK(sfs_log_delete(t->s, SC, LOG, S("k"), first + 4));
	{
		const int64_t w2[] = { 100 * SEC, 100 * SEC, 103 * SEC };

		log_times(t->s, "k", w2, 3);
	}
	if (sqlite_plain())
		/* 100 and 103 remain; the latest row (200) is always kept */
		assert_int_equal(rows_of(t->path, "statefs_log_timemap"), 3);
	/* appends after that still get the current second */
	tfx_now = 200 * SEC + 5;
	OK(sfs_log_append(t->s, SC, LOG, S("k"), S("v"), NULL));
	tfx_now = 201 * SEC;
	OK(sfs_log_append(t->s, SC, LOG, S("k"), S("v"), NULL));
	{
		const int64_t w3[] = { 100 * SEC, 100 * SEC, 103 * SEC,
			200 * SEC, 201 * SEC };

		log_times(t->s, "k", w3, 5);
	}
	/* exec clear of another scope leaves these alone */
	tfx_now = 300 * SEC;
	OK(sfs_log_append(t->s, S("other"), LOG, S("k"), S("v"), NULL));
	OK(sfs_exec_clear(t->s, S("other"), NULL));
	{
		const int64_t w4[] = { 100 * SEC, 100 * SEC, 103 * SEC,
			200 * SEC, 201 * SEC };

		log_times(t->s, "k", w4, 5);
	}
}

static void test_queue_map(void **state)
{
	tfx *t = *state;
	sfs_slice items[3] = { S("a"), S("b"), S("c") };
	sfs_list popped;
	int64_t first;
	uint64_t n;
	sfs_stat st;

	tfx_now = 10 * SEC + 1;
	OK(sfs_queue_push(t->s, S("q"), items, 3, &first));
	tfx_now = 10 * SEC + 2;
	OK(sfs_queue_push(t->s, S("q"), items, 1, NULL));
	tfx_now = 12 * SEC;
	OK(sfs_queue_push(t->s, S("p"), items, 2, NULL));
	tfx_now = 13 * SEC;
	OK(sfs_queue_push(t->s, S("q"), items, 1, NULL));
	{
		const int64_t w[] = { 10 * SEC, 10 * SEC, 10 * SEC, 10 * SEC,
			13 * SEC };

		queue_times(t->s, "q", w, 5);
	}
	OK(sfs_item_stat(t->s, S("p"), SFS_ITEM_PENDING, first + 4, &st));
	assert_int_equal(st.mtime_ns, 12 * SEC);
	if (sqlite_plain())
		assert_int_equal(rows_of(t->path, "statefs_queue_timemap"), 3);
	/* pops write no time; the rows below the head go with the next
	 * row written */
	for (int i = 0; i < 4; i++) {
		OK(sfs_queue_pop(t->s, S("q"), 1, &popped));
		sfs_list_free(&popped);
	}
	OK(sfs_item_clear(t->s, S("p"), SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 2);
	tfx_now = 20 * SEC;
	OK(sfs_queue_push(t->s, S("q"), items, 1, NULL));
	{
		const int64_t w[] = { 13 * SEC, 20 * SEC };

		queue_times(t->s, "q", w, 2);
	}
	if (sqlite_plain())
		assert_int_equal(rows_of(t->path, "statefs_queue_timemap"), 2);
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 2);
}

/* sfs_row for a log or queue entry. */
static sfs_row id_row(sfs_family fam, const char *scope, int64_t id,
                      int64_t mt)
{
	sfs_row r;

	memset(&r, 0, sizeof(r));
	r.family = fam;
	r.scope = S(scope);
	if (fam == SFS_FAM_LOG) {
		r.ns = LOG;
		r.key = S("k");
	}
	r.value = S("v");
	r.id = id;
	r.mtime_ns = mt;
	return r;
}

static void import_ids(sfs_store *s, sfs_family fam, const int64_t *ids,
                       const int64_t *times, size_t n)
{
	tfx_rows rows = { 0 };

	for (size_t i = 0; i < n; i++) {
		sfs_row r = id_row(fam, "exec", ids[i], times[i]);

		tfx_rows_add(&r, &rows);
	}
	OK(sfs_import(s, tfx_rows_next, &rows));
	tfx_rows_free(&rows);
}

/* Existing ids 2, 4, 6; imported 1, 3, 5, 7 and 8 between and after them,
 * with times that would break the queue map's order: every entry keeps
 * or gets exactly its time. */
static void check_interleave(sfs_store *s, sfs_family fam)
{
	const int64_t old_ids[] = { 2, 4, 6 };
	const int64_t old_t[] = { 200, 200, 600 }; /* 2 and 4 share a row */
	const int64_t new_ids[] = { 5, 1, 3, 8, 7 };
	const int64_t new_t[] = { 450, 50, 0, 900, 500 };
	const int64_t want[] = { 50, 200, 0, 200, 450, 600, 500, 900 };
	sfs_list l;

	import_ids(s, fam, old_ids, old_t, 3);
	import_ids(s, fam, new_ids, new_t, 5);
	if (fam == SFS_FAM_LOG)
		OK(sfs_log_scan(s, SC, LOG, S("k"), -1, 0, 1, &l));
	else
		OK(sfs_item_scan(s, SC, SFS_ITEM_PENDING, -1, 0, 1, &l));
	times_are(&l, want, 8);
	sfs_list_free(&l);
	/* importing again changes nothing; a changed time is taken */
	import_ids(s, fam, new_ids, new_t, 5);
	{
		const int64_t id4[] = { 4 }, t4[] = { 444 };
		const int64_t want2[] = { 50, 200, 0, 444, 450, 600, 500, 900 };

		import_ids(s, fam, id4, t4, 1);
		if (fam == SFS_FAM_LOG)
			OK(sfs_log_scan(s, SC, LOG, S("k"), -1, 0, 1, &l));
		else
			OK(sfs_item_scan(s, SC, SFS_ITEM_PENDING, -1, 0, 1, &l));
		times_are(&l, want2, 8);
		sfs_list_free(&l);
	}
}

static void test_import_interleaved_log(void **state)
{
	check_interleave(((tfx *)*state)->s, SFS_FAM_LOG);
}

static void test_import_interleaved_queue(void **state)
{
	tfx *t = *state;
	sfs_slice items[2] = { S("v"), S("v") };

	check_interleave(t->s, SFS_FAM_QUEUE);
	/* a push after the import comes after id 8, at the current second */
	tfx_now = 5000 * SEC;
	OK(sfs_queue_push(t->s, SC, items, 2, NULL));
	{
		const int64_t w[] = { 50, 200, 0, 444, 450, 600, 500, 900,
			5000 * SEC, 5000 * SEC };

		queue_times(t->s, "exec", w, 10);
	}
	/* an earlier time for 9, which shares its map row with 10 */
	{
		const int64_t id9[] = { 9 }, t9[] = { 4000 * SEC };
		const int64_t w[] = { 50, 200, 0, 444, 450, 600, 500, 900,
			4000 * SEC, 5000 * SEC };

		import_ids(t->s, SFS_FAM_QUEUE, id9, t9, 1);
		queue_times(t->s, "exec", w, 10);
	}
}

/* --- schema version 1 ----------------------------------------------------- */

/* The DDL of a version-1 store, as the first release wrote it. */
static const char v1_ddl[] =
	"CREATE TABLE work_queue (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" execution_id BLOB NOT NULL, work_item BLOB NOT NULL);"
	"CREATE INDEX idx_work_queue_execution ON work_queue(execution_id, id);"
	"CREATE TABLE function_state (scope_id BLOB NOT NULL, ns BLOB NOT NULL,"
	" key BLOB NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));"
	"CREATE TABLE function_state_log (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL,"
	" value BLOB NOT NULL);"
	"CREATE INDEX idx_function_state_log_lookup"
	" ON function_state_log(scope_id, ns, key, id);"
	"CREATE TABLE function_counter (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));"
	"CREATE TABLE statefs_meta (name TEXT NOT NULL PRIMARY KEY, value ANY)"
	" WITHOUT ROWID;"
	"CREATE TABLE statefs_kv_time (scope_id BLOB NOT NULL, ns BLOB NOT NULL,"
	" key BLOB NOT NULL, mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key)) WITHOUT ROWID;"
	"CREATE TABLE statefs_counter_time (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key)) WITHOUT ROWID;"
	"CREATE TABLE statefs_log_time (id INTEGER PRIMARY KEY,"
	" mtime_ns INTEGER NOT NULL);"
	"CREATE TABLE statefs_queue_time (id INTEGER PRIMARY KEY,"
	" enqueued_ns INTEGER NOT NULL);"
	"CREATE TABLE statefs_dir (family INTEGER NOT NULL,"
	" scope_id BLOB NOT NULL, has_ns INTEGER NOT NULL, ns BLOB NOT NULL,"
	" PRIMARY KEY (family, scope_id, has_ns, ns)) WITHOUT ROWID;"
	"INSERT INTO statefs_meta VALUES ('schema_version', 1);"
	/* entry 2 and item 2 were written by the Go SDK: no time */
	"INSERT INTO function_state_log (id, scope_id, ns, key, value) VALUES"
	" (1, x'65786563', x'6c6f67', x'6b', x'31'),"
	" (2, x'65786563', x'6c6f67', x'6b', x'32'),"
	" (3, x'65786563', x'6c6f67', x'6b', x'33'),"
	" (4, x'65786563', x'6c6f67', x'6b', x'34'),"
	" (5, x'65786563', x'6c6f67', x'6b', x'35');"
	"INSERT INTO statefs_log_time VALUES (1, 1000500000001),"
	" (3, 999000000000), (4, 2000000000007), (5, 2000000000007);"
	"INSERT INTO work_queue (id, execution_id, work_item) VALUES"
	" (1, x'65786563', x'61'), (2, x'65786563', x'62'),"
	" (3, x'65786563', x'63'), (4, x'65786563', x'64'),"
	" (5, x'65786563', x'65');"
	"INSERT INTO statefs_queue_time VALUES (1, 500), (3, 400), (4, 600),"
	" (5, 600);"
	"INSERT INTO function_state VALUES (x'65786563', x'6e73', x'6b',"
	" x'76');"
	"INSERT INTO statefs_kv_time VALUES (x'65786563', x'6e73', x'6b',"
	" 1234567890123);";

static const int64_t v1_log[] = { 1000500000001, 0, 999000000000,
	2000000000007, 2000000000007 };
static const int64_t v1_queue[] = { 500, 0, 400, 600, 600 };

static void make_v1(const char *path)
{
	sqlite3 *db;
	char *err = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, v1_ddl, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("v1 store: %s", err);
	sqlite3_close(db);
}

static void v1_times_are(sfs_store *s)
{
	log_times(s, "k", v1_log, 5);
	queue_times(s, "exec", v1_queue, 5);
	assert_int_equal(kv_mtime(s, "k"), 1234567890123);
}

static void test_v1_migrates(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_store *s;
	sfs_info info;
	sfs_slice one = S("f");

	if (tfx_encrypted())
		skip(); /* the old store is written with plain sqlite3 */
	tfx_sqlite_only("migrating SQLite stores of schema versions 1 and 2");
	snprintf(path, sizeof(path), "%s/v1.db", t->dir);
	make_v1(path);
	/* read-only: the old tables are read as they are */
	OK(tfx_open(path, SFS_OPEN_READONLY, &s));
	v1_times_are(s);
	OK(sfs_store_info(s, &info));
	assert_int_equal(info.schema_version, 1);
	sfs_store_close(s);
	assert_int_equal(rows_of(path, "statefs_log_time"), 4);
	/* read-write: migrated once, every time kept */
	OK(tfx_open(path, 0, &s));
	v1_times_are(s);
	OK(sfs_store_info(s, &info));
	assert_int_equal(info.schema_version, 5);
	sfs_store_close(s);
	assert_int_equal(rows_of(path, "statefs_log_time"), -1);
	assert_int_equal(rows_of(path, "statefs_queue_time"), -1);
	OK(tfx_open(path, 0, &s));
	v1_times_are(s);
	/* and it goes on from there */
	tfx_now = 3000 * SEC + 7;
	OK(sfs_log_append(s, SC, LOG, S("k"), S("6"), NULL));
	OK(sfs_queue_push(s, SC, &one, 1, NULL));
	{
		const int64_t wl[] = { 1000500000001, 0, 999000000000,
			2000000000007, 2000000000007, 3000 * SEC };
		const int64_t wq[] = { 500, 0, 400, 600, 600, 3000 * SEC };

		log_times(s, "k", wl, 6);
		queue_times(s, "exec", wq, 6);
	}
	sfs_store_close(s);
}

/* A version-2 store: time maps, and a time override for item 2 (which
 * re-entered the queue); version 3 keeps it as the pending item's row. */
static const char v2_ddl[] =
	"CREATE TABLE work_queue (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" execution_id BLOB NOT NULL, work_item BLOB NOT NULL);"
	"CREATE INDEX idx_work_queue_execution ON work_queue(execution_id, id);"
	"CREATE TABLE function_state (scope_id BLOB NOT NULL, ns BLOB NOT NULL,"
	" key BLOB NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));"
	"CREATE TABLE function_state_log (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL,"
	" value BLOB NOT NULL);"
	"CREATE TABLE function_counter (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));"
	"CREATE TABLE statefs_meta (name TEXT NOT NULL PRIMARY KEY, value ANY)"
	" WITHOUT ROWID;"
	"CREATE TABLE statefs_kv_time (scope_id BLOB NOT NULL, ns BLOB NOT NULL,"
	" key BLOB NOT NULL, mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key)) WITHOUT ROWID;"
	"CREATE TABLE statefs_counter_time (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key)) WITHOUT ROWID;"
	"CREATE TABLE statefs_log_timemap (id INTEGER PRIMARY KEY,"
	" mtime_ns INTEGER NOT NULL);"
	"CREATE TABLE statefs_queue_timemap (id INTEGER PRIMARY KEY,"
	" enqueued_ns INTEGER NOT NULL);"
	"CREATE TABLE statefs_queue_timeoverride (id INTEGER PRIMARY KEY,"
	" enqueued_ns INTEGER NOT NULL);"
	"CREATE TABLE statefs_dir (family INTEGER NOT NULL,"
	" scope_id BLOB NOT NULL, has_ns INTEGER NOT NULL, ns BLOB NOT NULL,"
	" PRIMARY KEY (family, scope_id, has_ns, ns)) WITHOUT ROWID;"
	"INSERT INTO statefs_meta VALUES ('schema_version', 2);"
	"INSERT INTO work_queue (id, execution_id, work_item) VALUES"
	" (1, x'65786563', x'61'), (2, x'65786563', x'62'),"
	" (3, x'65786563', x'63');"
	"INSERT INTO statefs_queue_timemap VALUES (1, 500), (3, 700);"
	"INSERT INTO statefs_queue_timeoverride VALUES (2, 900);";

static void test_v2_migrates(void **state)
{
	tfx *t = *state;
	const int64_t want[] = { 500, 900, 700 };
	char path[400];
	sqlite3 *db;
	sfs_store *s;
	sfs_info info;
	char *err = NULL;

	if (tfx_encrypted())
		skip();
	tfx_sqlite_only("migrating SQLite stores of schema versions 1 and 2");
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/v2%s.db", t->dir,
		         i ? "" : "-ckpt");
		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		if (sqlite3_exec(db, v2_ddl, NULL, NULL, &err) != SQLITE_OK)
			fail_msg("v2 store: %s", err);
		sqlite3_close(db);
	}
	OK(tfx_open(path, SFS_OPEN_READONLY, &s));
	queue_times(s, "exec", want, 3);
	{
		/* the claim tables it lacks read as empty */
		sfs_list l;

		OK(sfs_item_scan(s, SC, SFS_ITEM_INFLIGHT, -1, 0, 0, &l));
		assert_int_equal(l.n, 0);
		sfs_list_free(&l);
		OK(sfs_item_scan(s, SC, SFS_ITEM_DEAD, -1, 0, 0, &l));
		assert_int_equal(l.n, 0);
		sfs_list_free(&l);
		OK(sfs_store_info(s, &info));
		assert_int_equal(info.claimed_rows, 0);
		IS(SFS_READONLY, sfs_claim(s, SC, 1, 0, &(int64_t){ 0 }, NULL));
	}
	sfs_store_close(s);
	OK(tfx_open(path, 0, &s));
	queue_times(s, "exec", want, 3);
	OK(sfs_store_info(s, &info));
	assert_int_equal(info.schema_version, 5);
	sfs_store_close(s);
	assert_int_equal(rows_of(path, "statefs_queue_timeoverride"), -1);
	assert_int_equal(rows_of(path, "statefs_queue_pending"), 1);
	/* restoring a version-2 checkpoint keeps the override too */
	snprintf(path, sizeof(path), "%s/v2-ckpt.db", t->dir);
	OK(sfs_restore(t->s, path, NULL, NULL));
	queue_times(t->s, "exec", want, 3);
}

static void test_v1_checkpoint_restores(void **state)
{
	tfx *t = *state;
	char path[400];

	if (tfx_encrypted())
		skip();
	snprintf(path, sizeof(path), "%s/v1.ckpt", t->dir);
	make_v1(path);
	tfx_now = 9 * SEC;
	OK(sfs_log_append(t->s, SC, LOG, S("gone"), S("x"), NULL));
	OK(sfs_restore(t->s, path, NULL, NULL));
	v1_times_are(t->s);
	log_times(t->s, "gone", NULL, 0);
}

/* An append or a push in this second on s, its id in *id. */
static void add_entry(sfs_store *s, sfs_family fam, int64_t *id)
{
	sfs_slice v = S("v");

	if (fam == SFS_FAM_LOG)
		OK(sfs_log_append(s, SC, LOG, S("k"), v, id));
	else
		OK(sfs_queue_push(s, SC, &v, 1, id));
}

/* An import (on b, then on s) makes an older second the time map's latest
 * row; the next append or push on s must add its own row. */
static void map_stamps(sfs_store *s, sfs_store *b, sfs_family fam)
{
	const int64_t id1[] = { 100 }, id2[] = { 200 }, old[] = { 500 };
	const int64_t want[] = { 1000 * SEC, 500, 1000 * SEC, 500, 1000 * SEC };
	int64_t id;

	add_entry(s, fam, &id);
	import_ids(b, fam, id1, old, 1);
	add_entry(s, fam, &id);
	import_ids(s, fam, id2, old, 1);
	add_entry(s, fam, &id);
	if (fam == SFS_FAM_LOG)
		log_times(s, "k", want, 5);
	else
		queue_times(s, "exec", want, 5);
}

/* The stamp cache (core/sqlite/stamp.c) skips a time write this handle knows
 * is already done. Whatever else changes the store in between, another
 * handle (another connection, as another process would be) or this
 * handle's own delete, rename, restore or import, the next write in the
 * same second must write its time again. */
static void test_stamps_follow_changes(void **state)
{
	tfx *t = *state;
	sfs_slice keys[] = { S("x") }, vals[] = { S("x") };
	sfs_store *b;
	sfs_list l;

	OK(tfx_open(t->path, 0, &b));
	tfx_now = 1000 * SEC;
	/* a key: put here, deleted there, put here again */
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("1")));
	OK(sfs_kv_delete(b, SC, S("ns"), S("k")));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("2")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	/* this handle's own delete, rename and restore */
	OK(sfs_kv_delete(t->s, SC, S("ns"), S("k")));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("3")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	OK(sfs_kv_rename(t->s, SC, S("ns"), S("k"), SC, S("ns"), S("m"), 0));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("4")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	assert_int_equal(kv_mtime(t->s, "m"), 1000 * SEC);
	OK(sfs_kv_put_many(t->s, SC, S("ns"), keys, vals, 1, SFS_PUT_REPLACE));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("5")));
	assert_int_equal(kv_mtime(t->s, "k"), 1000 * SEC);
	/* a counter: set here, deleted there, added to here */
	OK(sfs_counter_set(t->s, SC, S("c"), S("n"), 1));
	OK(sfs_counter_delete(b, SC, S("c"), S("n")));
	OK(sfs_counter_add(t->s, SC, S("c"), S("n"), 1, NULL));
	OK(sfs_counter_scan(t->s, SC, S("c"), NULL, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].st.mtime_ns, 1000 * SEC);
	sfs_list_free(&l);
	map_stamps(t->s, b, SFS_FAM_LOG);
	map_stamps(t->s, b, SFS_FAM_QUEUE);
	sfs_store_close(b);
}

/* Runs SQL on the file with sqlite3 directly (plaintext stores only). */
static void raw_sql(const char *path, const char *sql)
{
	sqlite3 *db;
	char *err = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	                                 NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
	sqlite3_close(db);
}

/* One scan's keys and times against the expected "key:second" list. */
static void scan_is(sfs_store *s, int counters, const sfs_scan_opts *o,
                    const char *const *want, size_t n)
{
	sfs_list l;
	char got[64];

	if (counters)
		OK(sfs_counter_scan(s, SC, S("c"), o, &l));
	else
		OK(sfs_kv_scan(s, SC, S("ns"), o, &l));
	assert_int_equal(l.n, n);
	for (size_t i = 0; i < n; i++) {
		snprintf(got, sizeof(got), "%.*s:%lld",
		         (int)l.items[i].key.len, (const char *)l.items[i].key.ptr,
		         (long long)(l.items[i].st.mtime_ns / SEC));
		assert_string_equal(got, want[i]);
	}
	sfs_list_free(&l);
}

/* A listing reads the time rows beside the data rows (one ordered pass
 * over each table): keys without a time row (the SDK wrote them) read 0,
 * time rows without a key (the SDK deleted it) are skipped, in both
 * directions, with bounds and limits, keys only or not; a delete takes its
 * key's time row along. */
static void test_scan_merges_times(void **state)
{
	tfx *t = *state;
	static const char *const all[] = { "t:0", "a:0", "b:1000", "c:1005",
		"cc:0", "d:1000", "e:1005", "f:1000", "g:0" };
	static const char *const rev[] = { "g:0", "f:1000", "e:1005", "d:1000",
		"cc:0", "c:1005", "b:1000", "a:0", "t:0" };
	static const char *const page[] = { "cc:0", "d:1000", "e:1005" };
	static const char *const down[] = { "d:1000", "cc:0", "c:1005" };
	static const char *const ctr[] = { "x:1000", "y:0", "z:1005" };
	sfs_scan_opts o = { .start = S("c"), .start_after = 1, .limit = 3,
	                    .keys_only = 1 };
	int plain = !tfx_encrypted() && !tfx_postgres(); /* a raw SQLite file */

	tfx_now = 1000 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("b"), S("1")));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("d"), S("1")));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("f"), S("1")));
	OK(sfs_counter_add(t->s, SC, S("c"), S("x"), 1, NULL));
	tfx_now = 1005 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("c"), S("1")));
	OK(sfs_kv_put(t->s, SC, S("ns"), S("e"), S("1")));
	OK(sfs_counter_add(t->s, SC, S("c"), S("z"), 1, NULL));
	if (plain) {
		/* As an SDK would: rows without times (one with a TEXT key,
		 * which sorts before every BLOB), times without rows. */
		raw_sql(t->path,
		        "INSERT INTO function_state VALUES (x'65786563',"
		        " x'6e73', x'61', x'31'), (x'65786563', x'6e73',"
		        " x'6363', x'31'), (x'65786563', x'6e73', x'67', x'31'),"
		        " (x'65786563', x'6e73', 't', x'31');"
		        "INSERT INTO statefs_kv_time VALUES (x'65786563',"
		        " x'6e73', x'6262', 7000000000000), (x'65786563', x'6e73',"
		        " x'7a', 7000000000000), (x'65786563', x'6e73', x'', 1);"
		        "INSERT INTO function_counter VALUES (x'65786563', x'63',"
		        " x'79', 5);");
		scan_is(t->s, 0, NULL, all, 9);
		scan_is(t->s, 0, &(sfs_scan_opts){ .reverse = 1 }, rev, 9);
		scan_is(t->s, 0, &o, page, 3);
		o.keys_only = 0;
		scan_is(t->s, 0, &o, page, 3);
		scan_is(t->s, 0, &(sfs_scan_opts){ .start = S("c"),
		        .end = S("e"), .reverse = 1 }, down, 3);
		scan_is(t->s, 1, NULL, ctr, 3);
	} else {
		static const char *const few[] = { "b:1000", "c:1005", "d:1000",
			"e:1005", "f:1000" };
		static const char *const c2[] = { "x:1000", "z:1005" };

		scan_is(t->s, 0, NULL, few, 5);
		scan_is(t->s, 0, &(sfs_scan_opts){ .start = S("c"),
		        .start_after = 1, .limit = 2, .reverse = 1,
		        .keys_only = 1 },
		        (const char *const[]){ "f:1000", "e:1005" }, 2);
		scan_is(t->s, 0, &(sfs_scan_opts){ .end = S("e"),
		        .reverse = 1, .limit = 2 },
		        (const char *const[]){ "d:1000", "c:1005" }, 2);
		scan_is(t->s, 1, NULL, c2, 2);
	}
	OK(sfs_kv_delete(t->s, SC, S("ns"), S("d")));
	OK(sfs_counter_delete(t->s, SC, S("c"), S("x")));
	OK(sfs_kv_delete(t->s, SC, S("ns"), S("f")));
	/* put again in a later second: the new time, not the old one */
	tfx_now = 1010 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("d"), S("2")));
	assert_int_equal(kv_mtime(t->s, "d"), 1010 * SEC);
	if (plain) /* the deletes' time rows wait for their batch */
		assert_int_equal(rows_of(t->path, "statefs_kv_time"), 8);
	tfx_reopen(t); /* closing removes them, but d's: d is back */
	if (plain) {
		/* 5 puts and 3 raw time rows, less f's */
		assert_int_equal(rows_of(t->path, "statefs_kv_time"), 7);
		assert_int_equal(rows_of(t->path, "statefs_counter_time"), 1);
	}
	assert_int_equal(kv_mtime(t->s, "d"), 1010 * SEC);
}

/* A delete leaves its time row for a batch (core/sqlite/kv.c): a batch of
 * deletes removes them in one go; a key deleted, then renamed onto, or a
 * namespace emptied, then renamed onto, takes the moved time, not the
 * left one. */
static void test_delete_batches_times(void **state)
{
	tfx *t = *state;
	char k[16];
	int plain = !tfx_encrypted() && !tfx_postgres(); /* a raw SQLite file */

	tfx_now = 1000 * SEC;
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		OK(sfs_kv_put(t->s, SC, S("ns"), S(k), S("v")));
	}
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		OK(sfs_kv_delete(t->s, SC, S("ns"), S(k)));
	}
	if (plain) /* one batch of 64 went with the 64th delete */
		assert_int_equal(rows_of(t->path, "statefs_kv_time"), 36);
	/* rename onto a deleted key: the source's time */
	tfx_now = 2000 * SEC;
	OK(sfs_kv_put(t->s, SC, S("ns"), S("src"), S("v")));
	OK(sfs_kv_rename(t->s, SC, S("ns"), S("src"), SC, S("ns"), S("k099"),
	                 0));
	assert_int_equal(kv_mtime(t->s, "k099"), 2000 * SEC);
	/* a namespace emptied by deletes, then a rename onto it */
	OK(sfs_kv_put(t->s, SC, S("other"), S("k098"), S("v")));
	OK(sfs_kv_delete(t->s, SC, S("ns"), S("k099")));
	OK(sfs_dir_rename(t->s, SFS_FAM_KV, SC, S("other"), SC, S("ns"), 0));
	assert_int_equal(kv_mtime(t->s, "k098"), 2000 * SEC);
	/* a key of the longest name: its length was noted in two bytes,
	 * 65,536 as 0, and its time row stayed */
	{
		char *big = malloc(SFS_MAX_NAME);
		sfs_slice K = { big, SFS_MAX_NAME };

		assert_non_null(big);
		memset(big, 'A', SFS_MAX_NAME);
		OK(sfs_kv_put(t->s, SC, S("ns"), K, S("v")));
		OK(sfs_kv_delete(t->s, SC, S("ns"), K));
		free(big);
	}
	tfx_reopen(t);
	if (plain)
		assert_int_equal(rows_of(t->path, "statefs_kv_time"), 1);
}


/* Time rows another program orphaned do not pile up: an SDK's execution
 * clear deletes a scope's data rows with its own SQL, which leaves our
 * time rows behind; recovery passes of every queue (the daemon's, each
 * interval) sweep them (core/sqlite/kv.c, "The sweep"; on PostgreSQL
 * also the log's and the queue's, core/pg/claim.c), so after many
 * executions the time tables hold what they held after one: nothing but
 * the live keys' rows. They grew by an execution's keys each, forever
 * (on PostgreSQL until 2026-12-04). */
/* Runs the SDK's SQL on a plaintext store, SQLite or PostgreSQL. */
static void sdk_sql(const char *path, const char *sql)
{
	PGconn *c;

	if (!tfx_postgres()) {
		raw_sql(path, sql);
		return;
	}
	c = tfx_pg_conn(path);
	tfx_pg_do(c, sql);
	PQfinish(c);
}

/* Rows of a time table of a plaintext store, SQLite or PostgreSQL. */
static long time_rows(const char *path, const char *table)
{
	PGconn *c;
	char sql[128];
	long n;

	if (!tfx_postgres())
		return rows_of(path, table);
	c = tfx_pg_conn(path);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	n = (long)tfx_pg_int(c, sql);
	PQfinish(c);
	return n;
}

static void test_gc_sweeps_orphaned_times(void **state)
{
	/* SQLite keeps log and queue times in sparse maps, PostgreSQL a row
	 * per entry and item (statefs_log_time, statefs_queue_item) */
	static const char *const pg_rows[] = {
		"statefs_kv_time", "statefs_counter_time", "statefs_log_time",
		"statefs_queue_item"
	};
	tfx *t = *state;
	sfs_slice v = S("v");
	char sc[16], k[16], lit[40], sql[400];
	size_t tables = tfx_postgres() ? 4 : 2;
	long after_one = -1, rows = 0;

	if (tfx_encrypted())
		skip(); /* the SDK's clear is written on plaintext rows */
	tfx_now = 1000 * SEC;
	OK(sfs_kv_put(t->s, S("live"), S("ns"), S("k"), S("v")));
	OK(sfs_counter_add(t->s, S("live"), S("c"), S("k"), 1, NULL));
	OK(sfs_log_append(t->s, S("live"), S("log"), S("k"), S("v"), NULL));
	OK(sfs_queue_push(t->s, S("live"), &v, 1, NULL));
	for (int e = 1; e <= 30; e++) {
		snprintf(sc, sizeof(sc), "exec%02d", e);
		for (int i = 0; i < 50; i++) {
			snprintf(k, sizeof(k), "k%02d", i);
			OK(sfs_kv_put(t->s, S(sc), S("ns"), S(k), S("v")));
			OK(sfs_counter_add(t->s, S(sc), S("c"), S(k), 1, NULL));
			OK(sfs_log_append(t->s, S(sc), S("log"), S(k), S("v"),
			                  NULL));
			OK(sfs_queue_push(t->s, S(sc), &v, 1, NULL));
		}
		/* the SDK's execution clear, by scope_id */
		snprintf(lit, sizeof(lit), tfx_postgres() ? "'%s'::bytea"
		         : "CAST('%s' AS BLOB)", sc);
		snprintf(sql, sizeof(sql),
		         "DELETE FROM function_state WHERE scope_id=%s;"
		         " DELETE FROM function_counter WHERE scope_id=%s;"
		         " DELETE FROM function_state_log WHERE scope_id=%s;"
		         " DELETE FROM work_queue WHERE execution_id=%s;",
		         lit, lit, lit, lit);
		sdk_sql(t->path, sql);
		OK(sfs_queue_gc(t->s, SFS_NONE, NULL));
		OK(sfs_queue_gc(t->s, SFS_NONE, NULL));
		if (e == 1) {
			after_one = 0;
			for (size_t i = 0; i < tables; i++)
				after_one += time_rows(t->path, pg_rows[i]);
		}
	}
	for (size_t i = 0; i < tables; i++) {
		assert_int_equal(time_rows(t->path, pg_rows[i]), 1);
		rows++;
	}
	assert_int_equal(after_one, rows);
	/* the live key keeps its time */
	{
		sfs_stat st = { .mtime_ns = -1 };

		OK(sfs_kv_stat(t->s, S("live"), S("ns"), S("k"), &st));
		assert_int_equal(st.mtime_ns, 1000 * SEC);
	}
}


/* A handle open while a newer statefs migrates the store (a newer
 * worker or daemon started beside this one: the SQL it compiled no longer
 * fits) says what happened and what to do, not "internal error" (before:
 * SFS_INTERNAL, "table statefs_kv_time has no column named scope"). The migration is played by raw SQL: a
 * column renamed and the schema version raised. */
static void test_newer_statefs_migrated(void **state)
{
	tfx *t = *state;

	if (!sqlite_plain())
		skip(); /* the migration is written with plain sqlite3 */
	OK(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("v1")));
	raw_sql(t->path, "ALTER TABLE statefs_kv_time RENAME COLUMN scope"
	        " TO scope_v99; UPDATE statefs_meta SET value = 99"
	        " WHERE name = 'schema_version'");
	assert_int_equal(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("v2")),
	                 SFS_FORMAT);
	assert_non_null(strstr(sfs_errdetail(), "upgraded to schema version"
	                       " 99 by a newer statefs"));
	assert_non_null(strstr(sfs_errdetail(), "restart this process"));
	/* an error the migration did not cause says what it said before */
	raw_sql(t->path, "UPDATE statefs_meta SET value = 1"
	        " WHERE name = 'schema_version'");
	assert_int_equal(sfs_kv_put(t->s, SC, S("ns"), S("k"), S("v3")),
	                 SFS_INTERNAL);
	assert_non_null(strstr(sfs_errdetail(), "has no column named scope"));
}

#define T(f) \
	cmocka_unit_test_setup_teardown(f, tfx_setup_clock, tfx_teardown_clock)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_kv_seconds),
		T(test_kv_set_mtime),
		T(test_log_map),
		T(test_queue_map),
		T(test_import_interleaved_log),
		T(test_import_interleaved_queue),
		T(test_stamps_follow_changes),
		T(test_scan_merges_times),
		T(test_delete_batches_times),
		T(test_gc_sweeps_orphaned_times),
		T(test_v1_migrates),
		T(test_v1_checkpoint_restores),
		T(test_v2_migrates),
		T(test_newer_statefs_migrated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
