/*
 * test_fault.c - the engine's error paths under injected I/O failures.
 *
 * The fault VFS (faultvfs.h), registered as SQLite's default before any
 * store is opened, passes every call to the real VFS but, once armed, fails
 * every write and sync: a full disk or an I/O error. The encryption layer
 * wraps the default VFS, so in encrypted mode the shim sits under it and the
 * same failures reach the engine through the crypt layer.
 * Each test checks the status, that nothing of the failed call is visible
 * (value and time row go together), and that the store works once the
 * fault is gone.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultvfs.h"
#include "fixture.h"
#include "sqlite/sqlite_i.h"
#include "store_i.h"

/* Every write and sync fails from now on, as kind says, until
 * faultvfs_disarm(). */
static void fail_from_now(fault_kind kind)
{
	faultvfs_arm(FAULT_WRITE | FAULT_SYNC, kind, 1);
}

static int shim_setup(void **state)
{
	(void)state;
	return faultvfs_register();
}

static int shim_teardown(void **state)
{
	(void)state;
	faultvfs_unregister();
	return 0;
}

static void no_trace(tfx *t, const char *key)
{
	sfs_stat st;
	sfs_buf b;
	sfs_list l;

	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("s"), S("n"), S(key), &b));
	IS(SFS_NOTFOUND, sfs_kv_stat(t->s, S("s"), S("n"), S(key), &st));
	OK(sfs_kv_scan(t->s, S("s"), S("n"), NULL, &l));
	for (size_t i = 0; i < l.n; i++)
		assert_false(l.items[i].key.len == strlen(key) &&
		             !memcmp(l.items[i].key.ptr, key, strlen(key)));
	sfs_list_free(&l);
}

/* A write that fails leaves nothing: the value and its time row commit
 * together or not at all. */
static void test_full_disk(void **state)
{
	tfx *t = *state;
	sfs_slice items[2] = { S("a"), S("b") };
	int64_t v = 0;
	uint64_t len = 9;
	sfs_buf b;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("kept"), S("v")));
	OK(sfs_counter_set(t->s, S("s"), S("n"), S("c"), 5));
	fail_from_now(FAULT_FULL);
	IS(SFS_FULL, sfs_kv_put(t->s, S("s"), S("n"), S("lost"), S("v")));
	IS(SFS_FULL, sfs_counter_add(t->s, S("s"), S("n"), S("c"), 1, &v));
	IS(SFS_FULL, sfs_queue_push(t->s, S("q"), items, 2, NULL));
	IS(SFS_FULL, sfs_log_append(t->s, S("s"), S("n"), S("k"), S("v"), NULL));
	assert_true(strlen(sfs_errdetail()) > 0);
	faultvfs_disarm();
	no_trace(t, "lost");
	OK(sfs_counter_get(t->s, S("s"), S("n"), S("c"), &v, NULL));
	assert_int_equal(v, 5);
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 0);
	/* the store works once there is room again, also after a reopen */
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("after"), S("v")));
	tfx_reopen(t);
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("kept"), &b));
	tfx_buf(&b, "v");
	sfs_buf_free(&b);
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("after"), &b));
	sfs_buf_free(&b);
	no_trace(t, "lost");
	OK(sfs_store_verify(t->s, NULL, NULL));
}

/* A pop, a drain and a settle that acks only (every outcome done) free
 * rows, as a delete does: on a full disk each gives back the reserve and
 * runs again, so that consumers can empty a queue to make room (before,
 * they failed with SFS_FULL where sfs_item_delete of the same item went
 * through). FAULT_FULL_ONCE: the retry finds the room the reserve gave
 * back. */
static void test_full_disk_takes(void **state)
{
	tfx *t = *state;
	sfs_slice items[3] = { S("a"), S("b"), S("c") };
	sfs_outcome done[1] = { SFS_OUTCOME_DONE };
	char reserve[400];
	int64_t cid, claimed;
	uint64_t len = 9;
	sfs_list l;

	snprintf(reserve, sizeof(reserve), "%s-reserve", t->path);
	OK(sfs_queue_push(t->s, S("q"), items, 3, NULL));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_claim(t->s, S("q"), 1, 60000, &cid, &l));
	assert_int_equal(l.n, 1);
	claimed = l.items[0].id;
	sfs_list_free(&l);
	assert_int_equal(access(reserve, F_OK), 0);

	faultvfs_arm(FAULT_WRITE, FAULT_FULL_ONCE, 1);
	OK(sfs_queue_pop(t->s, S("q"), 1, &l));
	assert_int_equal(faultvfs_fired(), 1);
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "b");
	sfs_list_free(&l);

	faultvfs_arm(FAULT_WRITE, FAULT_FULL_ONCE, 1);
	OK(sfs_kv_drain(t->s, S("s"), S("n"), &l));
	assert_int_equal(faultvfs_fired(), 1);
	tfx_keys(&l, "k");
	sfs_list_free(&l);

	faultvfs_arm(FAULT_WRITE, FAULT_FULL_ONCE, 1);
	OK(sfs_claim_settle(t->s, cid, &claimed, done, 1));
	assert_int_equal(faultvfs_fired(), 1);
	faultvfs_disarm();
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &len));
	assert_int_equal(len, 1);
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_INFLIGHT, &len));
	assert_int_equal(len, 0);
	OK(sfs_store_verify(t->s, NULL, NULL));
}

static void test_io_error(void **state)
{
	tfx *t = *state;
	char cp[400];
	sfs_list l;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("a"), S("1")));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("b"), S("2")));
	fail_from_now(FAULT_EIO_ALWAYS);
	IS(SFS_IO, sfs_kv_drain(t->s, S("s"), S("n"), &l));
	IS(SFS_IO, sfs_kv_put(t->s, S("s"), S("n"), S("lost"), S("v")));
	IS(SFS_IO, sfs_store_sync(t->s));
	snprintf(cp, sizeof(cp), "%s/cp.db", t->dir);
	assert_true(sfs_checkpoint(t->s, cp, NULL, NULL) != SFS_OK);
	faultvfs_disarm();
	/* the failed drain removed nothing */
	OK(sfs_kv_scan(t->s, S("s"), S("n"), NULL, &l));
	tfx_keys(&l, "a b");
	sfs_list_free(&l);
	no_trace(t, "lost");
	/* a failed checkpoint leaves no file under its name */
	assert_int_equal(access(cp, F_OK), -1);
	OK(sfs_checkpoint(t->s, cp, NULL, NULL));
	/* a failed restore leaves the live store as it was */
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("c"), S("3")));
	fail_from_now(FAULT_FULL);
	assert_true(sfs_restore(t->s, cp, NULL, NULL) != SFS_OK);
	faultvfs_disarm();
	OK(sfs_kv_scan(t->s, S("s"), S("n"), NULL, &l));
	tfx_keys(&l, "a b c");
	sfs_list_free(&l);
	OK(sfs_restore(t->s, cp, NULL, NULL));
	OK(sfs_kv_scan(t->s, S("s"), S("n"), NULL, &l));
	tfx_keys(&l, "a b");
	sfs_list_free(&l);
}

/* A store that cannot be created leaves no file behind. */
static void test_create_fails(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_store *s;

	snprintf(path, sizeof(path), "%s/new.db", t->dir);
	fail_from_now(FAULT_EIO_ALWAYS);
	IS(SFS_IO, tfx_open(path, SFS_OPEN_CREATE, &s));
	faultvfs_disarm();
	assert_int_equal(access(path, F_OK), -1);
	OK(tfx_open(path, SFS_OPEN_CREATE | SFS_OPEN_EXCL, &s));
	sfs_store_close(s);
}

static void *sync_store(void *arg)
{
	return (void *)(intptr_t)sfs_store_sync(arg);
}

/* Writes one thread holds, committed by another thread's sync on a full
 * disk: the sync fails (what it had to make durable is not stored), and
 * so does the holder's sfs_store_commit; neither write is stored. */
static void test_sync_of_held_writes(void **state)
{
	tfx *t = *state;
	pthread_t th;
	void *r;

	OK(sfs_store_hold(t->s, 1));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("h1"), S("v")));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("h2"), S("v")));
	fail_from_now(FAULT_FULL);
	assert_int_equal(pthread_create(&th, NULL, sync_store, t->s), 0);
	pthread_join(th, &r);
	faultvfs_disarm();
	assert_int_equal((intptr_t)r, SFS_FULL);
	OK(sfs_store_hold(t->s, 0));
	IS(SFS_FULL, sfs_store_commit(t->s));
	OK(sfs_store_commit(t->s)); /* told once */
	OK(sfs_store_sync(t->s));   /* nothing held: nothing to tell */
	no_trace(t, "h1");
	no_trace(t, "h2");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("after"), S("v")));
	OK(sfs_store_verify(t->s, NULL, NULL));
}

/* WAL frames written since faultvfs_count_reset: a plaintext store's
 * WAL gets each page apart from its 24-byte header, the encrypting VFS
 * writes whole frames. */
static long frames_written(sfs_store *s)
{
	int found;
	long p = (long)tfx_fact(s, "page_size", &found);

	assert_true(found && p > 0);
	return faultvfs_wal_writes((int)p) + faultvfs_wal_writes((int)p + 24);
}

/* A whole rewrite of a value that keeps its length (cp over the file, an
 * editor's save, rsync) writes the pages whose bytes change, on either side
 * of the 1 MiB from which the SQLite backend writes values through a blob
 * handle: that path gave the row a new (zeroed) value and wrote every byte
 * of it, 514 frames (519 encrypted) for 2 MiB of which one byte changed. */
static void test_rewrite_pages(void **state)
{
	tfx *t = *state;
	sfs_edit e[2];
	uint64_t size;
	sfs_buf b;

	for (size_t n = 512 * 1024; n <= 2 * 1024 * 1024; n *= 4) {
		unsigned char *v = malloc(n);
		long frames;

		assert_non_null(v);
		for (size_t i = 0; i < n; i++)
			v[i] = (unsigned char)(i * 7 + i / 4099);
		OK(sfs_kv_put(t->s, S("s"), S("n"), S("big"), sfs_bytes(v, n)));
		v[n / 2] ^= 0x5a;
		e[0] = (sfs_edit){ SFS_EDIT_TRUNCATE, 0, SFS_NONE };
		e[1] = (sfs_edit){ SFS_EDIT_WRITE, 0, sfs_bytes(v, n) };
		faultvfs_count_reset();
		OK(sfs_kv_edit(t->s, S("s"), S("n"), S("big"), e, 2, 0, &size));
		frames = frames_written(t->s);
		assert_int_equal(size, n);
		/* the changed page, the time row's, the b-tree's: not n / 4 KiB */
		if (frames > 16)
			fail_msg("%zu bytes, one changed: %ld WAL frames", n, frames);
		OK(sfs_kv_get(t->s, S("s"), S("n"), S("big"), &b));
		assert_true(b.len == n && !memcmp(b.ptr, v, n));
		sfs_buf_free(&b);
		free(v);
	}
}

/* The busy hook of test_open_waits_to_switch: the handle's connection
 * lets go of its write lock. */
static int rolled_back;

static void roll_back(void *db)
{
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL),
	                 SQLITE_OK);
	rolled_back = 1;
}

/* An open that finds the store in rollback-journal mode switches it to
 * WAL, which needs the write lock; when another connection holds that
 * lock while this one reads (processes opening a new store together: one
 * makes its schema while the others look at it), SQLite says busy at
 * once, without the busy handler, and the open failed with SFS_BUSY (or,
 * in the process that had just made the store, unlinked it under the
 * others, which then failed with SFS_IO: 8 processes opening a new store
 * at once lost all 8 opens about one time in 40). Now the switch waits
 * within the busy timeout, as for any lock. Here the test handle's
 * connection holds the write lock of a store put back in rollback mode,
 * and lets it go at the moment the opening connection is refused it. */
static void test_open_waits_to_switch(void **state)
{
	tfx *t = *state;
	sqlite3 *db = t->s->be->db;
	sfs_store *o;
	sfs_buf b;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=DELETE;"
	                              "BEGIN IMMEDIATE", NULL, NULL, NULL),
	                 SQLITE_OK);
	rolled_back = 0;
	faultvfs_on_busy(roll_back, db);
	OK(tfx_open(t->path, 0, &o));
	faultvfs_on_busy(NULL, NULL);
	assert_true(rolled_back);
	OK(sfs_kv_get(o, S("s"), S("n"), S("k"), &b));
	sfs_buf_free(&b);
	OK(sfs_kv_put(o, S("s"), S("n"), S("k2"), S("v")));
	sfs_store_close(o);
}

/* The unlock hook of test_made_store_stays: another connection takes
 * the new store's write lock as soon as its tables are committed. */
static sqlite3 *other;
static const char *other_path;

static void take_write_lock(void *ctx)
{
	(void)ctx;
	assert_int_equal(sqlite3_open_v2(other_path, &other,
	                                 SQLITE_OPEN_READWRITE, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL,
	                              NULL), SQLITE_OK);
}

/* An open that made a new store (its tables committed) and then failed
 * (here its switch to WAL, past the busy timeout: another connection
 * took the write lock at once) leaves the store: other processes may
 * have opened it by then. It unlinked it, as it does a file it could
 * not make a store of, under the other connection, whose commits then
 * went nowhere. */
static void test_made_store_stays(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_config c = { .flags = SFS_OPEN_CREATE | SFS_OPEN_PLAINTEXT,
	                 .busy_timeout_ms = 50 };
	sfs_store *s = NULL;
	sfs_buf b;

	snprintf(path, sizeof(path), "%s/made.db", t->dir);
	c.db = path;
	other_path = path;
	faultvfs_on_unlock(take_write_lock, NULL);
	IS(SFS_BUSY, sfs_store_open(&c, &s, NULL));
	faultvfs_on_unlock(NULL, NULL);
	assert_non_null(other);
	assert_int_equal(sqlite3_exec(other, "INSERT INTO function_state"
	                              " VALUES (x'73', x'6e', x'6b', x'76');"
	                              "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	other = NULL;
	assert_int_equal(access(path, F_OK), 0);
	c.flags = SFS_OPEN_PLAINTEXT;
	OK(sfs_store_open(&c, &s, NULL));
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &b));
	assert_memory_equal(b.ptr, "v", 1);
	sfs_buf_free(&b);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_full_disk),
		T(test_full_disk_takes),
		T(test_io_error),
		T(test_create_fails),
		T(test_sync_of_held_writes),
		T(test_rewrite_pages),
		T(test_open_waits_to_switch),
		T(test_made_store_stays),
	};

	return cmocka_run_group_tests(tests, shim_setup, shim_teardown);
}
