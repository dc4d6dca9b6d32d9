/*
 * test_claimsdk.c - another program on a store's file (the SDKs' SQLite
 * statements, through the encrypting VFS when the tests run encrypted)
 * beside statefs claims: its queue clear reaches items in flight, the
 * time-to-live keeps items it pushed, and stores of schema versions 3 and
 * 4 migrate (the SDK's audit of a store's tables passes on 5). SQLite
 * only; on the engine's injectable clock, as test_claim.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sqlite/vfs_i.h"
#include "claimfx.h"

/* --- another program on the same file (the Go SDK) ----------------------- */

/* The SDK's own connection to the store (vgi/function_storage_sqlite.go),
 * through the encrypting VFS when the tests run encrypted. */
typedef struct sdk {
	sqlite3 *db;
	crypt_vfs *v;
} sdk;

static void sdk_open_file(const char *path, sdk *k)
{
	memset(k, 0, sizeof(*k));
	if (tfx_encrypted())
		OK(crypt_vfs_open(tfx_key(), &k->v));
	assert_int_equal(sqlite3_open_v2(path, &k->db, SQLITE_OPEN_READWRITE,
	                                 k->v ? crypt_vfs_name(k->v) : NULL),
	                 SQLITE_OK);
	if (k->v)
		OK(crypt_db_setup(k->db));
	sqlite3_busy_timeout(k->db, 30000);
}

static void sdk_open(tfx *t, sdk *k)
{
	sdk_open_file(t->path, k);
}

static void sdk_close(sdk *k)
{
	sqlite3_close(k->db);
	crypt_vfs_close(k->v);
}

/* Runs one of the SDK's statements with the queue id (and an item) bound;
 * returns sqlite3_changes, and the first row's blob into got ("" if
 * none). */
static int sdk_run(sdk *k, const char *sql, const char *item, char *got,
                   size_t n)
{
	sqlite3_stmt *st;
	int rc;

	assert_int_equal(sqlite3_prepare_v2(k->db, sql, -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, "jobs", 4, SQLITE_STATIC);
	if (item)
		sqlite3_bind_blob(st, 2, item, (int)strlen(item), SQLITE_STATIC);
	if (got)
		got[0] = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (got && !got[0])
			snprintf(got, n, "%.*s", sqlite3_column_bytes(st, 0),
			         (const char *)sqlite3_column_blob(st, 0));
	assert_int_equal(rc, SQLITE_DONE);
	sqlite3_finalize(st);
	return sqlite3_changes(k->db);
}

#define SDK_PUSH "INSERT INTO work_queue (execution_id, work_item) VALUES (?, ?)"
#define SDK_POP "DELETE FROM work_queue WHERE id = (SELECT id FROM work_queue" \
	" WHERE execution_id = ? ORDER BY id ASC LIMIT 1) RETURNING work_item"
#define SDK_CLEAR "DELETE FROM work_queue WHERE execution_id = ?"

static char *sdk_pop(sdk *k, char *got, size_t n)
{
	sdk_run(k, SDK_POP, NULL, got, n);
	return got;
}

static long long sdk_rows(sdk *k)
{
	sqlite3_stmt *st;
	long long n;

	assert_int_equal(sqlite3_prepare_v2(k->db, "SELECT count(*) FROM"
	                                    " work_queue", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Issue 10 item 10: the SDK's queue clear reaches items in flight. Pops
 * stay exactly once between the SDK and statefs claims: the SDK never
 * pops an item in flight, nor a marker, and gets what a nack brings back;
 * a clear, even one that finds nothing pending, means the items in flight
 * never come back (nack, expiry), while their holder may still ack. */
static void test_foreign_clear(void **state)
{
	tfx *t = *state;
	int64_t cid = 0, cid2 = 0;
	sfs_gc_stats g;
	sfs_info info;
	char got[64];
	sdk k;

	tfx_sqlite_only("the Go SDK's statements on the store's SQLite file"
	                " (docs/postgres.md: a clear by another program on"
	                " PostgreSQL; test_clear_in_flight: ours)");
	sdk_open(t, &k);
	/* Exactly once: the SDK pops around what statefs holds. */
	sdk_run(&k, SDK_PUSH, "a", NULL, 0);
	sdk_run(&k, SDK_PUSH, "b", NULL, 0);
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));          /* a */
	sdk_run(&k, SDK_PUSH, "c", NULL, 0);                /* after a claim */
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "b");
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "c");
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), ""); /* no marker */
	assert_int_equal(qlen(t->s), 0);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "a");
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "");
	assert_int_equal(sdk_rows(&k), 0);                 /* markers gone */

	/* A clear with items pending and in flight: the clear counts the
	 * pending ones; the one in flight never comes back by a nack. */
	sdk_run(&k, SDK_PUSH, "d", NULL, 0);
	sdk_run(&k, SDK_PUSH, "e", NULL, 0);
	sdk_run(&k, SDK_PUSH, "f", NULL, 0);
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));          /* d */
	assert_int_equal(sdk_run(&k, SDK_CLEAR, NULL, NULL, 0), 2);
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "");
	inflight_are(t->s, "d");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "");
	inflight_are(t->s, "");
	dead_are(t->s, "");
	assert_int_equal(sdk_rows(&k), 0);

	/* Nothing pending at all (everything claimed): the clear deletes no
	 * row of an item, and still the lease's end brings nothing back. A
	 * claim made after the clear is not cleared. */
	sdk_run(&k, SDK_PUSH, "g", NULL, 0);
	sdk_run(&k, SDK_PUSH, "h", NULL, 0);
	OK(sfs_claim(t->s, Q, 5, 1000, &cid, NULL));        /* g h */
	assert_int_equal(sdk_run(&k, SDK_CLEAR, NULL, NULL, 0), 0);
	sdk_run(&k, SDK_PUSH, "i", NULL, 0);
	OK(sfs_claim(t->s, Q, 1, 1000, &cid2, NULL));       /* i */
	tfx_now += 2 * SEC;
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.claims, 2);
	pending_are(t->s, "i");
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "i");
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "");

	/* The holder of a cleared item may still finish it; our own clear
	 * does what the SDK's does; neither export nor info shows a marker. */
	sdk_run(&k, SDK_PUSH, "j", NULL, 0);
	sdk_run(&k, SDK_PUSH, "k", NULL, 0);
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));          /* j */
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.queue_rows, 1);
	assert_int_equal(info.claimed_rows, 1);
	{
		tfx_dump d = { 0 };
		OK(sfs_export(t->s, tfx_dump_row, &d, NULL, NULL));
		assert_int_equal(d.fam_rows[SFS_FAM_QUEUE], 1);
		tfx_dump_free(&d);
	}
	assert_int_equal(sdk_run(&k, SDK_CLEAR, NULL, NULL, 0), 1);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	push(t->s, "l");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));          /* l */
	{
		uint64_t n = 1;
		OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
		assert_int_equal(n, 0);
	}
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	assert_int_equal(qlen(t->s), 0);
	assert_int_equal(sdk_rows(&k), 0);
	sdk_close(&k);
}

/* A version-3 store (no markers, no namespace claims) with an item in
 * flight opens migrated: the item's queue gets its markers, so an SDK
 * clear reaches it. */
/* Items another program pushes (the SDKs' INSERT, no time of ours) have
 * no known time: the time-to-live never drops them, however old the
 * statefs push before them, and listings show their time as 0. Seen
 * before: the map's run of the statefs push before them dated them, so a
 * gc dropped an SDK item pushed a moment ago. Also across a run in the
 * same second (the stamp cache) and with the queue's markers present. */
static void test_ttl_foreign(void **state)
{
	tfx *t = *state;
	sfs_queue_policy p = { 10000, 0 };
	int64_t cid = 0;
	sfs_gc_stats g;
	sfs_list l;
	sdk k;

	tfx_sqlite_only("the SDKs' statements on the store's SQLite file");
	sdk_open(t, &k);
	OK(sfs_queue_policy_set(t->s, Q, &p));
	push(t->s, "mine1");                               /* at 1000 s */
	assert_int_equal(sdk_run(&k, SDK_PUSH, "sdk1", NULL, 0), 1);
	tfx_now = 1005 * SEC;
	push(t->s, "mine2");
	assert_int_equal(sdk_run(&k, SDK_PUSH, "sdk2", NULL, 0), 1);
	tfx_now = 1020 * SEC;
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "mine1 sdk1 mine2 sdk2");
	assert_int_equal(l.items[0].st.mtime_ns, 1000 * SEC);
	assert_int_equal(l.items[1].st.mtime_ns, 0);
	assert_int_equal(l.items[2].st.mtime_ns, 1005 * SEC);
	assert_int_equal(l.items[3].st.mtime_ns, 0);
	sfs_list_free(&l);
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 2);
	pending_are(t->s, "sdk1 sdk2");
	/* a foreign push between two of ours in the same second */
	push(t->s, "mine3");
	assert_int_equal(sdk_run(&k, SDK_PUSH, "sdk3", NULL, 0), 1);
	push(t->s, "mine4");
	tfx_now = 1031 * SEC;
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 2);
	pending_are(t->s, "sdk1 sdk2 sdk3");
	/* with items in flight (the markers at the tail) */
	OK(sfs_claim(t->s, Q, 1, 60000, &cid, NULL));     /* sdk1 */
	assert_int_equal(sdk_run(&k, SDK_PUSH, "sdk4", NULL, 0), 1);
	push(t->s, "mine5");
	assert_int_equal(sdk_run(&k, SDK_PUSH, "sdk5", NULL, 0), 1);
	tfx_now = 1042 * SEC;
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 1);
	pending_are(t->s, "sdk2 sdk3 sdk4 sdk5");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	sdk_close(&k);
}

static void test_v3_migrates(void **state)
{
	tfx *t = *state;
	int64_t cid = 0;
	sfs_info info;
	char got[64];
	sdk k;

	tfx_sqlite_only("SQLite schema version 3");
	push(t->s, "a b");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
	sdk_open(t, &k);
	assert_int_equal(sqlite3_exec(k.db, TFX_SQL_TO_V3, NULL, NULL, NULL),
	                 SQLITE_OK);
	tfx_reopen(t);
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.schema_version, 5);
	assert_int_equal(sdk_run(&k, SDK_CLEAR, NULL, NULL, 0), 1);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	assert_string_equal(sdk_pop(&k, got, sizeof(got)), "");
	assert_int_equal(sdk_rows(&k), 0);
	sdk_close(&k);
}

/* The tables with a scope_id column, as the Python SDK's audit
 * (test_execution_clear_covers_all_scope_keyed_tables) finds them: its
 * own three, or it fails on the store. */
static void scope_id_tables_are(sqlite3 *db, const char *want)
{
	sqlite3_stmt *st;
	char got[256] = "";

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT group_concat(m.name, ' ')"
	        " FROM (SELECT name FROM sqlite_master WHERE type='table'"
	        " ORDER BY name) m WHERE EXISTS (SELECT 1 FROM"
	        " pragma_table_info(m.name) WHERE name='scope_id')", -1, &st,
	        NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	if (sqlite3_column_text(st, 0))
		snprintf(got, sizeof(got), "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	assert_string_equal(got, want);
}

/* What a version-4 store holds in the tables whose scope column was
 * named scope_id: a value's and a counter's times, an explicit
 * directory; read through a read-only open, then migrated by a
 * read-write one, and from a version-4 checkpoint by restore. */
static void v4_is_whole(sfs_store *s)
{
	sfs_stat st;
	int64_t n, mt;
	OK(sfs_kv_stat(s, S("sc"), S("ns"), S("k"), &st));
	assert_int_equal(st.mtime_ns, 1000 * SEC);
	OK(sfs_counter_get(s, S("sc"), S("ns"), S("c"), &n, &mt));
	assert_int_equal(n, 3);
	assert_int_equal(mt, 1000 * SEC);
	OK(sfs_dir_exists(s, SFS_FAM_KV, S("sc"), S("empty")));
}

static void test_v4_migrates(void **state)
{
	tfx *t = *state;
	char ck[4200];
	sfs_store *ro;
	sfs_info info;
	sdk k;

	tfx_sqlite_only("SQLite schema version 4");
	tfx_now = 1000 * SEC;
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k"), S("v")));
	OK(sfs_counter_set(t->s, S("sc"), S("ns"), S("c"), 3));
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("sc"), S("empty")));
	snprintf(ck, sizeof(ck), "%s.ck", t->path);
	OK(sfs_checkpoint(t->s, ck, NULL, NULL));
	sdk_open(t, &k);
	scope_id_tables_are(k.db, "function_counter function_state"
	                    " function_state_log");
	assert_int_equal(sqlite3_exec(k.db, TFX_SQL_TO_V4, NULL, NULL, NULL),
	                 SQLITE_OK);
	sfs_store_close(t->s);
	t->s = NULL;
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &ro));
	v4_is_whole(ro);
	sfs_store_close(ro);
	tfx_reopen(t);
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.schema_version, 5);
	v4_is_whole(t->s);
	scope_id_tables_are(k.db, "function_counter function_state"
	                    " function_state_log");
	sdk_close(&k);
	/* a version-4 checkpoint */
	sdk_open_file(ck, &k);
	assert_int_equal(sqlite3_exec(k.db, TFX_SQL_TO_V4, NULL, NULL, NULL),
	                 SQLITE_OK);
	sdk_close(&k);
	OK(sfs_kv_delete(t->s, S("sc"), S("ns"), S("k")));
	OK(sfs_restore(t->s, ck, NULL, NULL));
	v4_is_whole(t->s);
}

/* Runs sql with ?1 = a, ?2 = b and ?3 = the long_n bytes at long_p, all
 * bound as blobs, as the SDK binds names. */
static void sdk_exec_blobs(sdk *k, const char *sql, const void *long_p,
                           size_t long_n, const char *a, const char *b)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_prepare_v2(k->db, sql, -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, a, (int)strlen(a), SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, b, (int)strlen(b), SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, long_p, (int)long_n, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

/* Names longer than SFS_MAX_NAME that an SDK wrote (its statements take
 * any length) are read, listed, moved away, removed, exported and
 * imported as any other; statefs writes none. A key of 65 KiB was listed
 * and then refused by every call (SFS_TOOBIG: `cat` EFBIG, `statectl get`
 * exit 8, an export that could not be imported). */
static void test_long_names_foreign(void **state)
{
	tfx *t = *state;
	size_t n = SFS_MAX_NAME + 1000;
	char *key;
	sfs_slice K;
	tfx_rows rows = { 0 };
	sfs_buf b;
	sfs_stat st;
	sfs_list l;
	int64_t c;
	sdk k;

	tfx_sqlite_only("the SDKs' statements on the store's SQLite file");
	key = malloc(n);
	assert_non_null(key);
	memset(key, 'k', n);
	key[n - 1] = 'Z';
	K = sfs_bytes(key, n);
	sdk_open(t, &k);
	sdk_exec_blobs(&k, "INSERT INTO function_state (scope_id, ns, key,"
	               " value) VALUES (?1, ?2, ?3, x'7631')", key, n, "sc",
	               "ns");
	sdk_exec_blobs(&k, "INSERT INTO function_counter (scope_id, ns, key,"
	               " n) VALUES (?1, ?2, ?3, 5)", key, n, "sc", "ns");
	sdk_close(&k);

	OK(sfs_kv_get(t->s, S("sc"), S("ns"), K, &b));
	tfx_buf(&b, "v1");
	sfs_buf_free(&b);
	OK(sfs_kv_stat(t->s, S("sc"), S("ns"), K, &st));
	assert_int_equal(st.size, 2);
	OK(sfs_kv_scan(t->s, S("sc"), S("ns"), NULL, &l));
	assert_int_equal(l.n, 1);
	assert_true(l.items[0].key.len == n);
	sfs_list_free(&l);
	OK(sfs_counter_get(t->s, S("sc"), S("ns"), K, &c, NULL));
	assert_int_equal(c, 5);
	/* an existing value is edited, as `echo >>` through the mount does */
	{
		sfs_edit e = { SFS_EDIT_APPEND, 0, S("+") };
		uint64_t size;

		OK(sfs_kv_edit(t->s, S("sc"), S("ns"), K, &e, 1,
		               SFS_EDIT_CREATE, &size));
		assert_int_equal(size, 3);
		K.ptr = "kZ"; /* no such key: an edit does not make one */
		K.len = 2;
		OK(sfs_kv_edit(t->s, S("sc"), S("ns"), K, &e, 1,
		               SFS_EDIT_CREATE, &size));
		OK(sfs_kv_delete(t->s, S("sc"), S("ns"), K));
		K = sfs_bytes(key, n);
		key[0] = 'j';
		IS(SFS_TOOBIG, sfs_kv_edit(t->s, S("sc"), S("ns"), K, &e, 1,
		                           SFS_EDIT_CREATE, &size));
		IS(SFS_NOTFOUND, sfs_kv_edit(t->s, S("sc"), S("ns"), K, &e, 1,
		                             0, &size));
		IS(SFS_TOOBIG, sfs_kv_edit(t->s, S("sc"), S("ns"), K, &e, 1,
		                           SFS_EDIT_CREATE | SFS_EDIT_EXCL,
		                           &size));
		key[0] = 'k';
		OK(sfs_kv_get(t->s, S("sc"), S("ns"), K, &b));
		tfx_buf(&b, "v1+");
		sfs_buf_free(&b);
	}
	/* statefs makes no such name */
	IS(SFS_TOOBIG, sfs_kv_put(t->s, S("sc"), S("ns"), K, S("v2")));
	IS(SFS_TOOBIG, sfs_counter_add(t->s, S("sc"), S("ns"), K, 1, &c));
	IS(SFS_TOOBIG, sfs_log_append(t->s, S("sc"), S("ns"), K, S("e"), NULL));
	IS(SFS_TOOBIG, sfs_queue_push(t->s, K, &K, 1, NULL));
	IS(SFS_TOOBIG, sfs_dir_create(t->s, SFS_FAM_KV, K, SFS_NONE));
	/* an export of it imports back */
	OK(sfs_export(t->s, tfx_rows_add, &rows, NULL, NULL));
	OK(sfs_counter_delete(t->s, S("sc"), S("ns"), K));
	OK(sfs_kv_delete(t->s, S("sc"), S("ns"), K));
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("sc"), S("ns"), K, &b));
	OK(sfs_import(t->s, tfx_rows_next, &rows));
	tfx_rows_free(&rows);
	OK(sfs_counter_get(t->s, S("sc"), S("ns"), K, &c, NULL));
	assert_int_equal(c, 5);
	/* moved away under a short name, not back */
	OK(sfs_kv_rename(t->s, S("sc"), S("ns"), K, S("sc"), S("ns"), S("short"),
	                 0));
	OK(sfs_kv_get(t->s, S("sc"), S("ns"), S("short"), &b));
	tfx_buf(&b, "v1+");
	sfs_buf_free(&b);
	IS(SFS_TOOBIG, sfs_kv_rename(t->s, S("sc"), S("ns"), S("short"), S("sc"),
	                             S("ns"), K, 0));
	free(key);
}

/* The SDKs' counter add (vgi/function_storage_sqlite.go, the Python
 * SDK's the same) is `n = n + excluded.n`, which SQLite turns into a REAL
 * when the sum leaves int64. Such a counter reads INT64_MAX, and takes
 * the adds that int64 value takes, exactly: before, every add was
 * SFS_OVERFLOW, a negative one too (the REAL is outside the bounds). A
 * REAL in range past 2^53 (the SDK's add back from there) is added to
 * exactly, not rounded. */
#define SDK_CADD "INSERT INTO function_counter (scope_id, ns, key, n)" \
	" VALUES (?, ?, ?, ?) ON CONFLICT(scope_id, ns, key)" \
	" DO UPDATE SET n = n + excluded.n RETURNING n"

static void sdk_counter_add(sdk *k, const char *key, int64_t delta)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_prepare_v2(k->db, SDK_CADD, -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, "sc", 2, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, "ns", 2, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, key, (int)strlen(key), SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, delta);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

static void test_counter_sdk_real(void **state)
{
	tfx *t = *state;
	int64_t v;
	sdk k;

	tfx_sqlite_only("the SDKs' counter add on the store's SQLite file");
	OK(sfs_counter_set(t->s, S("sc"), S("ns"), S("c"), INT64_MAX));
	sdk_open(t, &k);
	sdk_counter_add(&k, "c", 1); /* a REAL, 2^63 */
	OK(sfs_counter_get(t->s, S("sc"), S("ns"), S("c"), &v, NULL));
	assert_true(v == INT64_MAX);
	IS(SFS_OVERFLOW, sfs_counter_add(t->s, S("sc"), S("ns"), S("c"), 1,
	                                 &v));
	OK(sfs_counter_add(t->s, S("sc"), S("ns"), S("c"), -1, &v));
	assert_true(v == INT64_MAX - 1);
	OK(sfs_counter_get(t->s, S("sc"), S("ns"), S("c"), &v, NULL));
	assert_true(v == INT64_MAX - 1);
	/* underflow: a REAL at -2^63 - 1 (rounded to -2^63) */
	OK(sfs_counter_set(t->s, S("sc"), S("ns"), S("d"), INT64_MIN));
	sdk_counter_add(&k, "d", -1);
	OK(sfs_counter_add(t->s, S("sc"), S("ns"), S("d"), 1, &v));
	assert_true(v == INT64_MIN + 1);
	/* a REAL in range, past 2^53: 1 is not rounded away */
	OK(sfs_counter_set(t->s, S("sc"), S("ns"), S("e"), INT64_MAX));
	sdk_counter_add(&k, "e", 1);
	sdk_counter_add(&k, "e", -1000000000000000000);
	OK(sfs_counter_add(t->s, S("sc"), S("ns"), S("e"), 1, &v));
	assert_true(v == INT64_C(8223372036854775809));
	OK(sfs_counter_add(t->s, S("sc"), S("ns"), S("e"), 1, &v));
	assert_true(v == INT64_C(8223372036854775810));
	sdk_close(&k);
}

#define T(f) \
	cmocka_unit_test_setup_teardown(f, tfx_setup_clock, tfx_teardown_clock)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_foreign_clear),
		T(test_ttl_foreign),
		T(test_v3_migrates),
		T(test_v4_migrates),
		T(test_long_names_foreign),
		T(test_counter_sdk_real),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
