/*
 * test_crypt_rekey.c - sfs_rekey (core/sqlite/rekey.c) on stores made with plain
 * SQL through the encrypting VFS: old key refused afterwards, data equal,
 * mode kept, idempotent after completion, refused while the store is open
 * elsewhere, cancellable from the progress callback, and the conversions
 * plaintext -> encrypted -> plaintext. The kill -9 test is in
 * tests/crypt/rekey_crash.c (suite crypt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sqlite/vfs_i.h"
#include "fixture.h"
#include "statefs.h"

static char dir[64];
static sfs_key *key_a, *key_b;
static int seq;

static int setup(void **state)
{
	(void)state;
	if (tfx_mkdtemp(dir, sizeof(dir), "rekey"))
		return -1;
	return sfs_key_generate(&key_a) || sfs_key_generate(&key_b) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sfs_key_destroy(key_a);
	sfs_key_destroy(key_b);
	return tfx_rmtree(dir);
}

/* Opens path with key (NULL: plaintext); the caller closes db and *v. */
static sqlite3 *xopen_flags(const char *path, const sfs_key *key,
                            crypt_vfs **v, int flags)
{
	sqlite3 *db = NULL;

	*v = NULL;
	if (key)
		assert_int_equal(crypt_vfs_open(key, v), SFS_OK);
	assert_int_equal(sqlite3_open_v2(path, &db, flags,
	                                 *v ? crypt_vfs_name(*v) : NULL),
	                 SQLITE_OK);
	assert_int_equal(crypt_db_setup(db), SFS_OK);
	return db;
}

static sqlite3 *xopen(const char *path, const sfs_key *key, crypt_vfs **v)
{
	return xopen_flags(path, key, v, SQLITE_OPEN_READWRITE |
	                   SQLITE_OPEN_CREATE);
}

static void xclose(sqlite3 *db, crypt_vfs *v)
{
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	crypt_vfs_close(v);
}

static void xexec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
}

/* A checksum of the table's content, to compare stores. Read-only, so
 * that closing does not checkpoint a WAL the test wants rekey to carry. */
static unsigned long long digest(const char *path, const sfs_key *key)
{
	crypt_vfs *v;
	sqlite3 *db = xopen_flags(path, key, &v, SQLITE_OPEN_READONLY);
	sqlite3_stmt *st;
	unsigned long long d = 0;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT k, v FROM t ORDER BY "
	                                    "k", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *b = sqlite3_column_blob(st, 1);
		int n = sqlite3_column_bytes(st, 1);
		d = d * 31 + (unsigned long long)sqlite3_column_int64(st, 0);
		for (int i = 0; i < n; i++)
			d = d * 131 + b[i];
	}
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
	                                    &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	xclose(db, v);
	return d;
}

/* A store whose last commit is only in the WAL: the writer is a child
 * that exits without closing, as a crashed process would. */
static const char *make_store(char *path, size_t n, const sfs_key *key,
                              int rows)
{
	char sql[256];
	crypt_vfs *v;
	sqlite3 *db;
	pid_t pid;
	int st;

	snprintf(path, n, "%s/r%d.db", dir, ++seq);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		db = xopen(path, key, &v);
		xexec(db, "PRAGMA journal_mode=WAL");
		xexec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT "
		      "NULL)");
		snprintf(sql, sizeof(sql), "WITH RECURSIVE c(x) AS (SELECT 1 "
		         "UNION ALL SELECT x+1 FROM c WHERE x<%d) INSERT INTO t "
		         "SELECT x, randomblob(300) FROM c", rows);
		xexec(db, sql);
		xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
		xexec(db, "PRAGMA wal_autocheckpoint=0");
		xexec(db, "INSERT INTO t VALUES(-1, x'0102')");
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	chmod(path, 0600);
	return path;
}

struct prog {
	uint64_t calls, last_done, total;
	int stop_at;
};

static int on_progress(uint64_t done, uint64_t total, void *ctx)
{
	struct prog *p = ctx;

	assert_true(done <= total);
	assert_true(done >= p->last_done);
	p->calls++;
	p->last_done = done;
	p->total = total;
	return p->stop_at && p->calls >= (uint64_t)p->stop_at;
}

static void test_rekey_basic(void **state)
{
	char path[128], tmp[140];
	struct prog pr = { 0 };
	crypt_kind kind;
	struct stat st;
	unsigned long long before;
	(void)state;

	make_store(path, sizeof(path), key_a, 3000);
	{
		char wal[140];
		struct stat ws;
		snprintf(wal, sizeof(wal), "%s-wal", path);
		assert_int_equal(stat(wal, &ws), 0);
		assert_true(ws.st_size > 0);
	}
	before = digest(path, key_a);
	assert_int_equal(sfs_rekey(path, key_a, key_b, on_progress, &pr),
	                 SFS_OK);
	assert_true(pr.calls >= 2);
	assert_true(pr.total > 100);
	assert_int_equal(pr.last_done, pr.total);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_WRONGKEY);
	assert_int_equal(crypt_preflight(path, key_b, &kind), SFS_OK);
	assert_int_equal(kind, CRYPT_KIND_ENCRYPTED);
	assert_true(digest(path, key_b) == before);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(tmp, sizeof(tmp), "%s.rekey", path);
	assert_int_equal(access(tmp, F_OK), -1);
	/* Run again (as after a crash after the rename): nothing to do. */
	assert_int_equal(sfs_rekey(path, key_a, key_b, NULL, NULL), SFS_OK);
	assert_true(digest(path, key_b) == before);
	/* A wrong old key that is not the new one either. */
	{
		sfs_key *c;
		assert_int_equal(sfs_key_generate(&c), SFS_OK);
		assert_int_equal(sfs_rekey(path, c, key_a, NULL, NULL),
		                 SFS_WRONGKEY);
		sfs_key_destroy(c);
	}
}

static void test_rekey_busy_and_cancel(void **state)
{
	char path[128], tmp[140];
	struct prog pr = { .stop_at = 2 };
	crypt_kind kind;
	crypt_vfs *v;
	sqlite3 *db;
	unsigned long long before;
	(void)state;

	make_store(path, sizeof(path), key_a, 20000);
	before = digest(path, key_a);
	/* Another connection has it open (and has read it). */
	db = xopen(path, key_a, &v);
	xexec(db, "SELECT count(*) FROM t");
	assert_int_equal(sfs_rekey(path, key_a, key_b, NULL, NULL), SFS_BUSY);
	/* the handle is this process's own: the sentence does not say
	 * another process holds it */
	assert_non_null(strstr(sfs_errdetail(), "another handle of this one"));
	xclose(db, v);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_OK);

	assert_int_equal(sfs_rekey(path, key_a, key_b, on_progress, &pr),
	                 SFS_CANCELLED);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_OK);
	assert_true(digest(path, key_a) == before);
	snprintf(tmp, sizeof(tmp), "%s.rekey", path);
	assert_int_equal(access(tmp, F_OK), -1);
}

/* A connection opened before the rekey that had not read yet holds no
 * lock, so the rekey goes ahead; its first statement after it must fail
 * (its file was renamed away) rather than write into the old file, or
 * through the WAL SQLite opens by name into the new store. */
static void test_rekey_opened_before(void **state)
{
	char path[128];
	crypt_vfs *v;
	sqlite3 *db;
	unsigned long long before;
	(void)state;

	make_store(path, sizeof(path), key_a, 500);
	before = digest(path, key_a);
	db = xopen(path, key_a, &v);
	assert_int_equal(sfs_rekey(path, key_a, key_b, NULL, NULL), SFS_OK);
	assert_int_not_equal(sqlite3_exec(db, "INSERT INTO t VALUES(-2, "
	                                  "x'03')", NULL, NULL, NULL),
	                     SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "was replaced"));
	xclose(db, v);
	assert_true(digest(path, key_b) == before);
}

/* The same through the plaintext VFS the engine opens plaintext stores
 * with (crypt_plain_vfs), when a rekey encrypts the store: before it, the
 * insert succeeded into the file renamed away, and was lost. */
static void test_rekey_plaintext_opened_before(void **state)
{
	char path[128];
	const char *plain;
	sqlite3 *db = NULL;
	unsigned long long before;
	(void)state;

	make_store(path, sizeof(path), NULL, 500);
	before = digest(path, NULL);
	assert_int_equal(crypt_plain_vfs(&plain), SFS_OK);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	                                 plain), SQLITE_OK);
	assert_int_equal(sfs_rekey(path, NULL, key_a, NULL, NULL), SFS_OK);
	assert_int_not_equal(sqlite3_exec(db, "INSERT INTO t VALUES(-2, "
	                                  "x'03')", NULL, NULL, NULL),
	                     SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "was replaced"));
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_true(digest(path, key_a) == before);
}

static void test_rekey_plaintext_both_ways(void **state)
{
	char path[128];
	crypt_kind kind;
	unsigned long long before;
	sfs_key *pass;
	(void)state;

	make_store(path, sizeof(path), NULL, 500);
	before = digest(path, NULL);
	assert_int_equal(sfs_rekey(path, NULL, key_a, NULL, NULL), SFS_OK);
	assert_int_equal(crypt_preflight(path, NULL, &kind), SFS_NOKEY);
	assert_true(digest(path, key_a) == before);

	/* Key to passphrase, passphrase to plaintext. */
	assert_int_equal(sfs_key_from_passphrase("long enough", 11, &pass),
	                 SFS_OK);
	assert_int_equal(sfs_rekey(path, key_a, pass, NULL, NULL), SFS_OK);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_WRONGKEY);
	assert_true(digest(path, pass) == before);
	assert_int_equal(sfs_rekey(path, pass, NULL, NULL, NULL), SFS_OK);
	assert_int_equal(crypt_preflight(path, NULL, &kind), SFS_OK);
	assert_int_equal(kind, CRYPT_KIND_PLAIN);
	assert_true(digest(path, NULL) == before);
	/* Done already: plaintext and no new key. */
	assert_int_equal(sfs_rekey(path, pass, NULL, NULL, NULL), SFS_OK);
	sfs_key_destroy(pass);

	assert_int_equal(sfs_rekey(path, NULL, NULL, NULL, NULL), SFS_INVALID);
	{
		char missing[140];
		snprintf(missing, sizeof(missing), "%s/none.db", dir);
		assert_int_equal(sfs_rekey(missing, key_a, key_b, NULL, NULL),
		                 SFS_NOTFOUND);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rekey_basic),
		cmocka_unit_test(test_rekey_busy_and_cancel),
		cmocka_unit_test(test_rekey_opened_before),
		cmocka_unit_test(test_rekey_plaintext_opened_before),
		cmocka_unit_test(test_rekey_plaintext_both_ways),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
