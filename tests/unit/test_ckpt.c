/*
 * test_ckpt.c - SFS_OPEN_WAL_THREAD (core/sqlite/ckpt.c): the write-ahead
 * log checkpointed by a thread of the handle's instead of inside commits.
 *
 * What it checks holds under any schedule: a writer that goes past the
 * limit waits for the thread's round and finishes the checkpoint itself,
 * so however the threads run, the log file never grows past the limit
 * plus one commit's frames; both kinds of checkpoint are counted
 * (sfs_store_info's facts); and every value written is there after the
 * handle is closed (stopping the thread, maybe mid-round) and the store
 * reopened, and again after a reopen without the flag. A reader holding
 * an old snapshot costs at most a round per 1,000 frames, and the log
 * starts over once it lets go; a log grown past the limit by one large
 * transaction is cut back once it starts over. It runs on
 * plaintext and encrypted stores (the thread's connection goes through
 * the same encrypting VFS); PostgreSQL stores have no log of ours and
 * accept the flag as a no-op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "fixture.h"

#define VALUES 2500
#define VALUE_BYTES 6000   /* two pages and more: overflow pages */
#define LIMIT_FRAMES 4000  /* ckpt.c's CKPT_LIMIT */
#define COMMIT_FRAMES 16   /* more than one put's pages, with splits */
#define FRAME_BYTES (4096 + 24)

static void value_of(int i, char *v)
{
	memset(v, 'a' + i % 26, VALUE_BYTES);
	snprintf(v, 16, "%08d", i);
}

static uint64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Puts values from..to-1 (v: a VALUE_BYTES buffer); with max_wal, the
 * largest size the -wal file at wal had after any of them. */
static void put_values(sfs_store *s, int from, int to, char *v,
                       const char *wal, uint64_t *max_wal)
{
	char key[16];

	for (int i = from; i < to; i++) {
		snprintf(key, sizeof(key), "k%05d", i);
		value_of(i, v);
		OK(sfs_kv_put(s, S("sc"), S("ns"), S(key),
		              sfs_bytes(v, VALUE_BYTES)));
		if (max_wal) {
			uint64_t now = file_size(wal);

			*max_wal = now > *max_wal ? now : *max_wal;
		}
	}
}

/* Values 0..n-1 are all there, whole. */
static void check_values(sfs_store *s, int n, char *want)
{
	char key[16];

	for (int i = 0; i < n; i++) {
		sfs_buf got = { NULL, 0 };

		snprintf(key, sizeof(key), "k%05d", i);
		value_of(i, want);
		OK(sfs_kv_get(s, S("sc"), S("ns"), S(key), &got));
		assert_int_equal(got.len, VALUE_BYTES);
		assert_memory_equal(got.ptr, want, VALUE_BYTES);
		sfs_buf_free(&got);
	}
}

static void test_log_bounded(void **state)
{
	tfx *t = *state;
	char *v, wal[400];
	sfs_store *s;
	uint64_t max_wal = 0, rounds, writer;
	int found;

	tfx_sqlite_only("the write-ahead log is SQLite's");
	v = malloc(VALUE_BYTES);
	assert_non_null(v);
	sfs_store_close(t->s);
	t->s = NULL;
	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &s));
	snprintf(wal, sizeof(wal), "%s-wal", t->path);
	put_values(s, 0, VALUES, v, wal, &max_wal);
	/* Without checkpoints the log would hold every page written:
	 * 2,500 values of two pages and more. */
	assert_true(max_wal > 0);
	assert_true(max_wal <= 32 + (uint64_t)(LIMIT_FRAMES + COMMIT_FRAMES) *
	                            FRAME_BYTES);
	rounds = tfx_fact(s, "wal_checkpoints_thread", &found);
	assert_true(found);
	writer = tfx_fact(s, "wal_checkpoints_writer", &found);
	assert_true(found);
	/* The writer waited for a round at the limit at least, and finished
	 * after each round it saw end. */
	assert_true(rounds >= 1);
	assert_true(writer >= 1);
	assert_true(writer <= rounds);
	check_values(s, VALUES, v);
	sfs_store_close(s);

	/* Reopened with and without the thread: nothing was lost. */
	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &s));
	check_values(s, VALUES, v);
	sfs_store_close(s);
	OK(tfx_open(t->path, 0, &t->s));
	check_values(t->s, VALUES, v);
	tfx_fact(t->s, "wal_checkpoints_thread", &found);
	assert_false(found); /* no thread, no count */
	free(v);
}

/* Closing right after a burst of writes stops the thread wherever it is
 * (it may be in a round) and loses nothing; a read-only handle starts no
 * thread. */
static void test_close_at_once(void **state)
{
	tfx *t = *state;
	char *v;
	sfs_store *s;
	int found;

	tfx_sqlite_only("the write-ahead log is SQLite's");
	v = malloc(VALUE_BYTES); /* after the skip, which jumps out */
	assert_non_null(v);
	sfs_store_close(t->s);
	t->s = NULL;
	for (int round = 0; round < 3; round++) {
		OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &s));
		put_values(s, round * VALUES / 3, (round + 1) * VALUES / 3, v,
		           NULL, NULL);
		sfs_store_close(s);
	}
	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD | SFS_OPEN_READONLY, &s));
	tfx_fact(s, "wal_checkpoints_thread", &found);
	assert_false(found);
	check_values(s, VALUES / 3 * 3, v);
	sfs_store_close(s);
	OK(tfx_open(t->path, 0, &t->s));
	free(v);
}

/* A reader on an old snapshot (another connection's open transaction)
 * keeps the log from being copied and started over: the writer goes on,
 * asking for a round every 1,000 frames or so, not at every commit (it
 * would wait for each past the limit); once the reader lets go, the log
 * starts over and nothing was lost. Plaintext: the reader is a bare
 * SQLite connection. */
static void test_pinned_reader(void **state)
{
	tfx *t = *state;
	char *v, wal[400];
	sqlite3 *r = NULL;
	sqlite3_stmt *st;
	sfs_store *s;
	uint64_t rounds, frames, in_use;
	int found;

	tfx_sqlite_only("the write-ahead log is SQLite's");
	if (tfx_encrypted())
		skip(); /* the bare reader cannot open an encrypted store */
	v = malloc(VALUE_BYTES);
	assert_non_null(v);
	sfs_store_close(t->s);
	t->s = NULL;
	snprintf(wal, sizeof(wal), "%s-wal", t->path);
	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &s));
	OK(sfs_kv_put(s, S("sc"), S("ns"), S("first"), S("v")));
	assert_int_equal(sqlite3_open_v2(t->path, &r, SQLITE_OPEN_READONLY,
	                                 NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(r, "BEGIN; SELECT count(*) FROM "
	                              "function_state;", NULL, NULL, NULL),
	                 SQLITE_OK);
	put_values(s, 0, VALUES / 2, v, NULL, NULL);
	frames = file_size(wal) / FRAME_BYTES;
	rounds = tfx_fact(s, "wal_checkpoints_thread", &found);
	assert_true(found);
	/* The reader held the log: it grew past the limit. */
	assert_true(frames > LIMIT_FRAMES + COMMIT_FRAMES);
	assert_true(rounds >= 1);
	assert_true(rounds <= frames / 1000 + 2);

	assert_int_equal(sqlite3_exec(r, "COMMIT;", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(r);
	put_values(s, VALUES / 2, VALUES, v, NULL, NULL);
	/* Let go of, the log was copied and started over: its frames in
	 * use (what a checkpoint reports as the log) are fewer than the file
	 * holds, and the file grew by at most a round's worth and the limit. */
	assert_int_equal(sqlite3_open_v2(t->path, &r, SQLITE_OPEN_READWRITE,
	                                 NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(r, "PRAGMA wal_checkpoint(PASSIVE)",
	                                    -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	in_use = (uint64_t)sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(r);
	assert_true(in_use + COMMIT_FRAMES < file_size(wal) / FRAME_BYTES);
	assert_true(file_size(wal) / FRAME_BYTES <=
	            frames + LIMIT_FRAMES + COMMIT_FRAMES);
	check_values(s, VALUES, v);
	sfs_store_close(s);
	OK(tfx_open(t->path, 0, &t->s));
	free(v);
}

/* One transaction larger than the log ever grows under steady writes (a
 * 24 MiB value: 6,000 frames and more) grows the -wal file past it; once a
 * checkpoint has let the log start over, the file is cut back to 4,000
 * frames (conn.c, journal_size_limit), with the thread and without. It
 * stayed at its largest for as long as the store was open: a mount that
 * once wrote a large value kept a -wal file of that size. */
static void test_log_cut_back(void **state)
{
	tfx *t = *state;
	const size_t big = 24u << 20;
	char *v, wal[400];
	sfs_store *s;

	tfx_sqlite_only("the write-ahead log is SQLite's");
	v = malloc(big); /* after the skip, which jumps out */
	assert_non_null(v);
	memset(v, 'b', big);
	sfs_store_close(t->s);
	t->s = NULL;
	snprintf(wal, sizeof(wal), "%s-wal", t->path);
	for (int thread = 0; thread < 2; thread++) {
		OK(tfx_open(t->path, thread ? SFS_OPEN_WAL_THREAD : 0, &s));
		/* (a new key: a same-length rewrite writes only what changed) */
		OK(sfs_kv_put(s, S("sc"), S("ns"), S(thread ? "big1" : "big0"),
		              sfs_bytes(v, big)));
		assert_true(file_size(wal) > big);
		/* a checkpoint (the thread's round and the writer's finish),
		 * then a commit that starts the log over */
		for (int i = 0; i < 5; i++) {
			char small[16]; /* (a put of the same value writes nothing) */

			snprintf(small, sizeof(small), "v%d.%d", thread, i);
			OK(sfs_kv_put(s, S("sc"), S("ns"), S("small"), S(small)));
		}
		assert_true(file_size(wal) <= 32 + (uint64_t)LIMIT_FRAMES *
		                                   FRAME_BYTES);
		sfs_store_close(s);
	}
	OK(tfx_open(t->path, 0, &t->s));
	free(v);
}

/* The flag on a PostgreSQL store: accepted, nothing changes. */
static void test_flag_accepted(void **state)
{
	tfx *t = *state;
	sfs_store *s;
	sfs_buf got = { NULL, 0 };

	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &s));
	OK(sfs_kv_put(s, S("sc"), S("ns"), S("k"), S("v")));
	OK(sfs_kv_get(s, S("sc"), S("ns"), S("k"), &got));
	tfx_buf(&got, "v");
	sfs_buf_free(&got);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_log_bounded, tfx_setup,
		                                tfx_teardown),
		cmocka_unit_test_setup_teardown(test_close_at_once, tfx_setup,
		                                tfx_teardown),
		cmocka_unit_test_setup_teardown(test_pinned_reader, tfx_setup,
		                                tfx_teardown),
		cmocka_unit_test_setup_teardown(test_log_cut_back, tfx_setup,
		                                tfx_teardown),
		cmocka_unit_test_setup_teardown(test_flag_accepted, tfx_setup,
		                                tfx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
