/*
 * test_crypt_vfs.c - the encrypting VFS under SQLite, without the engine.
 *
 * Each test makes stores in a fresh directory through crypt_vfs_open and
 * plain SQL, then looks at the files with pread/pwrite as an attacker
 * would: tampering, swapping and transplanting pages, wrong keys, plaintext
 * stores, temp files, mmap, reserve enforcement, xRead slices, and the
 * documented negatives (what the format does NOT detect, asserted so the
 * threat model in docs/encryption.md stays honest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "sqlite/vfs_i.h"
#include "crypt/page_i.h"
#include "faultvfs.h"
#include "fixture.h"
#include "statefs.h"

#define P 4096

static char dir[64];
static sfs_key *key_a, *key_b;
static int seq;

static int setup(void **state)
{
	(void)state;
	if (tfx_mkdtemp(dir, sizeof(dir), "vfs"))
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

/* A new path in the test directory. */
static const char *newpath(char *buf, size_t n)
{
	snprintf(buf, n, "%s/s%d.db", dir, ++seq);
	return buf;
}

static sqlite3 *xopen(const char *path, const crypt_vfs *v)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	                                 SQLITE_OPEN_CREATE,
	                                 v ? crypt_vfs_name(v) : NULL),
	                 SQLITE_OK);
	sqlite3_extended_result_codes(db, 1);
	if (v)
		assert_int_equal(crypt_db_setup(db), SFS_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int xexec_rc(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static void xexec(sqlite3 *db, const char *sql)
{
	int rc = xexec_rc(db, sql);
	if (rc != SQLITE_OK)
		fail_msg("%s: %s (%s)", sql, sqlite3_errmsg(db),
		         crypt_last_error() ? crypt_last_error() : "");
}

/* Runs sql (one row, one column) and returns the text, malloc'd. NULL and
 * *rc set when it fails. */
static char *query(sqlite3 *db, const char *sql, int *rc)
{
	sqlite3_stmt *st = NULL;
	char *out = NULL;
	int r;

	r = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (r == SQLITE_OK) {
		r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			const char *t = (const char *)sqlite3_column_text(st, 0);
			out = strdup(t ? t : "");
			r = SQLITE_OK;
		}
		if (r == SQLITE_DONE)
			r = SQLITE_OK;
	}
	if (r == SQLITE_OK)
		r = sqlite3_finalize(st);
	else
		sqlite3_finalize(st);
	if (r != SQLITE_OK) {
		free(out);
		out = NULL;
	}
	if (rc)
		*rc = r;
	return out;
}

static long long query_int(sqlite3 *db, const char *sql)
{
	int rc;
	char *t = query(db, sql, &rc);
	long long v;

	if (!t)
		fail_msg("%s: %s (%s)", sql, sqlite3_errmsg(db),
		         crypt_last_error() ? crypt_last_error() : "");
	v = atoll(t);
	free(t);
	return v;
}

/* A store with n rows of 200-byte values and an index, checkpointed. */
static void make_store(const char *path, const crypt_vfs *v, int n)
{
	char sql[512];
	sqlite3 *db = xopen(path, v);

	xexec(db, "PRAGMA journal_mode=WAL");
	xexec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
	snprintf(sql, sizeof(sql),
	         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c "
	         "WHERE x<%d) INSERT INTO t SELECT x, randomblob(200) FROM c",
	         n);
	xexec(db, sql);
	xexec(db, "CREATE INDEX tv ON t(v)");
	xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static off_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void rw_at(const char *path, void *buf, size_t n, off_t off,
                  int write)
{
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	if (write)
		assert_int_equal(pwrite(fd, buf, n, off), (ssize_t)n);
	else
		assert_int_equal(pread(fd, buf, n, off), (ssize_t)n);
	close(fd);
}

static void flip(const char *path, off_t off)
{
	unsigned char b;

	rw_at(path, &b, 1, off, 0);
	b ^= 0x20;
	rw_at(path, &b, 1, off, 1);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* Opens path with v, reads every row, runs integrity_check; returns the
 * first failure's extended code (SQLITE_CORRUPT when integrity_check
 * reports a problem as text), SQLITE_OK when all is well. The VFS's
 * message is cleared first, so crypt_last_error() is about this scan. */
static int scan_rc(const char *path, const crypt_vfs *v)
{
	sqlite3 *db = NULL;
	int rc;
	char *t;

	crypt_clear_error();
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	                     crypt_vfs_name(v));
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(db, 1);
		rc = crypt_db_setup(db) ? SQLITE_ERROR : SQLITE_OK;
	}
	if (rc == SQLITE_OK) {
		t = query(db, "SELECT sum(length(v)) FROM t", &rc);
		free(t);
	}
	if (rc == SQLITE_OK) {
		t = query(db, "PRAGMA integrity_check", &rc);
		if (rc == SQLITE_OK && strcmp(t, "ok") != 0)
			rc = SQLITE_CORRUPT;
		free(t);
	}
	sqlite3_close(db);
	return rc;
}

/* The index of the first WAL frame whose page no later frame rewrites,
 * so that a reader reaches it through the wal-index. */
static int unique_frame(const char *wal, int nframes)
{
	unsigned char h[4];
	uint32_t pg[256];

	assert_true(nframes <= 256);
	for (int i = 0; i < nframes; i++) {
		rw_at(wal, h, 4, 32 + (off_t)i * (P + 24), 0);
		pg[i] = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
		        (uint32_t)h[2] << 8 | h[3];
	}
	for (int i = 0; i < nframes - 3; i++) {
		int again = 0;
		for (int j = i + 1; j < nframes; j++)
			again |= pg[j] == pg[i];
		if (!again && pg[i] > 2)
			return i + 1;
	}
	fail_msg("no frame with a page of its own");
	return 0;
}

static void test_round_trip(void **state)
{
	char path[128];
	crypt_vfs *v;
	crypt_kind kind;
	sqlite3 *db;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_OK);
	assert_int_equal(kind, CRYPT_KIND_NEW);
	make_store(path, v, 2000);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_OK);
	assert_int_equal(kind, CRYPT_KIND_ENCRYPTED);
	db = xopen(path, v);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 2000);
	assert_int_equal(query_int(db, "PRAGMA page_size"), P);
	{
		char *jm = query(db, "PRAGMA journal_mode", NULL);
		assert_string_equal(jm, "wal");
		free(jm);
	}
	sqlite3_close(db);
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	assert_int_equal(crypt_verify_file(path, v, NULL, NULL), SFS_OK);
	assert_int_equal(file_size(path) % P, 0);
	crypt_vfs_close(v);
}

static void test_wrong_key_and_kinds(void **state)
{
	char path[128], plain[128];
	crypt_vfs *va, *vb;
	crypt_kind kind;
	sqlite3 *db;
	int rc;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &va), SFS_OK);
	assert_int_equal(crypt_vfs_open(key_b, &vb), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, va, 100);

	assert_int_equal(crypt_preflight(path, key_b, &kind), SFS_WRONGKEY);
	assert_non_null(strstr(sfs_errdetail(), "wrong key"));
	assert_int_equal(crypt_preflight(path, NULL, &kind), SFS_NOKEY);
	assert_non_null(strstr(sfs_errdetail(), "encrypted"));
	assert_non_null(strstr(sfs_errdetail(), "plaintext mode"));

	/* Without the preflight, the VFS says the same inside SQLite (at
	 * open, which reads the header, or at the first statement). */
	db = NULL;
	crypt_clear_error();
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	                     crypt_vfs_name(vb));
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(db, 1);
		crypt_db_setup(db);
		free(query(db, "SELECT count(*) FROM t", &rc));
		assert_int_equal(rc, SQLITE_IOERR_DATA);
	}
	assert_non_null(crypt_last_error());
	assert_non_null(strstr(crypt_last_error(), "wrong key"));
	sqlite3_close(db);

	/* A plaintext store. */
	newpath(plain, sizeof(plain));
	make_store(plain, NULL, 100);
	assert_int_equal(crypt_preflight(plain, NULL, &kind), SFS_OK);
	assert_int_equal(kind, CRYPT_KIND_PLAIN);
	assert_int_equal(crypt_preflight(plain, key_a, &kind),
	                 SFS_NOTENCRYPTED);
	assert_non_null(strstr(sfs_errdetail(), "not encrypted"));
	/* And through the VFS anyway: refused, not read as ciphertext. */
	assert_int_not_equal(scan_rc(plain, va), SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "not encrypted"));

	/* Not a database at all. */
	{
		char junk[128];
		unsigned char zeros[4096] = { 0 };
		newpath(junk, sizeof(junk));
		memset(zeros, 'x', sizeof(zeros));
		int fd = open(junk, O_CREAT | O_WRONLY, 0600);
		assert_int_equal(write(fd, zeros, sizeof(zeros)), 4096);
		close(fd);
		assert_int_equal(crypt_preflight(junk, key_a, &kind),
		                 SFS_FORMAT);
	}
	crypt_vfs_close(va);
	crypt_vfs_close(vb);
}

static void test_passphrase(void **state)
{
	char path[128];
	sfs_key *pa, *pb;
	crypt_vfs *v;
	crypt_kind kind;
	(void)state;

	assert_int_equal(sfs_key_from_passphrase("tr0ub4dor", 9, &pa), SFS_OK);
	assert_int_equal(sfs_key_from_passphrase("tr0ub4dor&3", 11, &pb),
	                 SFS_OK);
	assert_int_equal(crypt_vfs_open(pa, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 50);
	crypt_vfs_close(v);
	assert_int_equal(crypt_preflight(path, pa, &kind), SFS_OK);
	assert_int_equal(crypt_preflight(path, pb, &kind), SFS_WRONGKEY);
	assert_int_equal(crypt_preflight(path, key_a, &kind), SFS_WRONGKEY);
	assert_non_null(strstr(sfs_errdetail(), "passphrase"));
	assert_int_equal(crypt_vfs_open(pa, &v), SFS_OK);
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	crypt_vfs_close(v);
	/* Page 1's kdf byte changed (to the raw key's, to INTERACTIVE's):
	 * a damaged page, not a wrong passphrase; the wrong one is still
	 * told as such. */
	{
		char copy[128];
		unsigned char b;

		newpath(copy, sizeof(copy));
		for (int to = CRYPT_KDF_RAW; to <= CRYPT_KDF_INTERACTIVE; to++) {
			copy_file(path, copy);
			b = (unsigned char)to;
			rw_at(copy, &b, 1, P - 7, 1);
			assert_int_equal(crypt_preflight(copy, pa, &kind),
			                 SFS_CORRUPT);
			assert_non_null(strstr(sfs_errdetail(), "page 1 of"));
			assert_int_equal(crypt_preflight(copy, pb, &kind),
			                 SFS_WRONGKEY);
		}
	}
	/* A raw-key store refuses a passphrase. */
	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 10);
	crypt_vfs_close(v);
	assert_int_equal(crypt_preflight(path, pa, &kind), SFS_WRONGKEY);
	sfs_key_destroy(pa);
	sfs_key_destroy(pb);
}

/* One flipped byte anywhere in any page: an error naming the page, never
 * data. Offsets: ciphertext, nonce, tag, format, kdf, key check value. */
static void test_tamper_every_page(void **state)
{
	static const int where[] = { 100, 2000, P - 48, P - 30, P - 20,
	                             P - 8, P - 7, P - 3 };
	char path[128], copy[128], want[64];
	crypt_vfs *v;
	long pages;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 150);
	pages = (long)(file_size(path) / P);
	assert_true(pages > 10);
	newpath(copy, sizeof(copy));
	for (long pg = 1; pg <= pages; pg++) {
		for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
			int rc;
			copy_file(path, copy);
			flip(copy, (pg - 1) * P + where[w]);
			rc = scan_rc(copy, v);
			if (rc == SQLITE_OK || !crypt_last_error())
				fail_msg("page %ld offset %d: rc %d", pg,
				         where[w], rc);
			snprintf(want, sizeof(want), "page %ld of", pg);
			if (!strstr(crypt_last_error(), want) &&
			    !(pg == 1 && strstr(crypt_last_error(), "page 1")))
				fail_msg("page %ld offset %d: %s", pg, where[w],
				         crypt_last_error());
			/* The verifier finds it too, without SQLite. */
			assert_int_not_equal(crypt_verify_file(copy, v, NULL,
			                                       NULL), SFS_OK);
		}
	}
	/* Page 1's clear bytes: the salt and header bytes 16-23. The file
	 * is still our store (its page 1 ends in our trailer), so the
	 * preflight and the verifier call it damaged, as for any other byte
	 * of page 1, never "not a store" (which a changed page size, reserve
	 * or payload fraction used to give). Also where the changed page
	 * size is a valid one (16 = 0x20: 8192). */
	for (int off = 0; off < 25; off++) {
		crypt_kind kind;

		copy_file(path, copy);
		if (off < 24)
			flip(copy, off);
		else
			rw_at(copy, (unsigned char[]){ 0x20 }, 1, 16, 1);
		assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
		if (crypt_preflight(copy, key_a, &kind) != SFS_CORRUPT ||
		    !strstr(sfs_errdetail(), "page 1 of") ||
		    !strstr(sfs_errdetail(), "failed authentication"))
			fail_msg("clear byte %d: preflight %s", off,
			         sfs_errdetail());
		assert_int_equal(crypt_verify_file(copy, v, NULL, NULL),
		                 SFS_CORRUPT);
		assert_non_null(strstr(sfs_errdetail(), "failed authentication"));
	}
	crypt_vfs_close(v);
}

static void test_swap_and_transplant(void **state)
{
	char path[128], other[128], copy[128];
	unsigned char a[P], b[P];
	crypt_vfs *v;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	newpath(other, sizeof(other));
	newpath(copy, sizeof(copy));
	make_store(path, v, 150);
	make_store(other, v, 150);

	/* Two pages swapped. */
	copy_file(path, copy);
	rw_at(copy, a, P, 2 * P, 0);
	rw_at(copy, b, P, 5 * P, 0);
	rw_at(copy, a, P, 5 * P, 1);
	rw_at(copy, b, P, 2 * P, 1);
	assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "failed authentication"));

	/* The same page from another file under the same key. */
	copy_file(path, copy);
	rw_at(other, a, P, 3 * P, 0);
	rw_at(copy, a, P, 3 * P, 1);
	assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "page 4 of"));

	/* Page 1 from another file: its salt is not ours. */
	copy_file(path, copy);
	rw_at(other, a, P, 0, 0);
	rw_at(copy, a, P, 0, 1);
	assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);

	/* A page of a store under another key. */
	{
		crypt_vfs *vb;
		assert_int_equal(crypt_vfs_open(key_b, &vb), SFS_OK);
		newpath(other, sizeof(other));
		make_store(other, vb, 150);
		crypt_vfs_close(vb);
		copy_file(path, copy);
		rw_at(other, a, P, 3 * P, 0);
		rw_at(copy, a, P, 3 * P, 1);
		assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
		assert_non_null(strstr(crypt_last_error(), "different key"));
	}
	/* A hole of zeros. */
	copy_file(path, copy);
	memset(a, 0, P);
	rw_at(copy, a, P, 2 * P, 1);
	assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "all zeros"));
	crypt_vfs_close(v);
}

/* A file cut short by whole pages while the WAL holds page 1 (and so the
 * store's size, which SQLite then takes from the WAL): the cut page, the
 * end of a long value, is an error naming it, never zeros; a checkpoint
 * does not seal zero pages in its place (after which the zeros would
 * authenticate and verify pass); and the checkpoint that follows a
 * legitimate truncate-and-grow still works. */
static void test_truncated(void **state)
{
	char path[128];
	crypt_vfs *v;
	sqlite3 *db;
	char *want, *got;
	off_t size;
	int rc;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	db = xopen(path, v);
	xexec(db, "PRAGMA journal_mode=WAL");
	xexec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
	xexec(db, "INSERT INTO t VALUES(1, randomblob(20000))");
	xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	want = query(db, "SELECT hex(v) FROM t", &rc);
	assert_non_null(want);
	size = file_size(path);
	/* A commit that grows the store puts page 1 in the WAL. */
	xexec(db, "PRAGMA wal_autocheckpoint=0");
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	xexec(db, "CREATE TABLE g(x)");
	xexec(db, "INSERT INTO g VALUES(randomblob(100))");
	sqlite3_close(db);
	assert_true(file_size(path) == size);
	assert_int_equal(truncate(path, size - P), 0);

	for (int round = 0; round < 2; round++) {
		db = xopen(path, v);
		crypt_clear_error();
		got = query(db, "SELECT hex(v) FROM t", &rc);
		if (got)
			assert_string_equal(got, want); /* zeros are wrong */
		assert_null(got);
		assert_int_equal(rc, SQLITE_IOERR_DATA);
		assert_non_null(strstr(crypt_last_error(), "was truncated"));
		/* The checkpoint must not fill the gap with zero pages. */
		assert_int_not_equal(xexec_rc(db, "PRAGMA wal_checkpoint("
		                                  "TRUNCATE)"), SQLITE_OK);
		sqlite3_close(db);
		assert_true(file_size(path) < size);
	}
	assert_int_not_equal(scan_rc(path, v), SQLITE_OK);
	free(want);

	/* A checkpoint that failed right after it wrote page 1 (as a kill
	 * would stop it) leaves page 1 counting pages the file does not
	 * hold yet: they are in the WAL, and the next checkpoint writes
	 * them; nothing there is "truncated". */
	{
		crypt_vfs *fv;

		assert_int_equal(faultvfs_register(), 0);
		assert_int_equal(crypt_vfs_open(key_a, &fv), SFS_OK);
		faultvfs_unregister(); /* fv keeps wrapping it */
		newpath(path, sizeof(path));
		make_store(path, fv, 20);
		size = file_size(path);
		db = xopen(path, fv);
		xexec(db, "PRAGMA wal_autocheckpoint=0");
		xexec(db, "INSERT INTO t VALUES(1000, randomblob(30000))");
		want = query(db, "SELECT hex(v) FROM t WHERE k = 1000", &rc);
		assert_non_null(want);
		faultvfs_arm(FAULT_WRITE, FAULT_EIO_ALWAYS, 2);
		assert_int_not_equal(xexec_rc(db, "PRAGMA wal_checkpoint("
		                                  "TRUNCATE)"), SQLITE_OK);
		assert_true(faultvfs_fired() >= 1);
		faultvfs_disarm();
		xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
		sqlite3_close(db);
		assert_int_equal(scan_rc(path, fv), SQLITE_OK);
		db = xopen(path, fv);
		got = query(db, "SELECT hex(v) FROM t WHERE k = 1000", &rc);
		assert_non_null(got);
		assert_string_equal(got, want);
		free(got);
		free(want);
		sqlite3_close(db);
		crypt_vfs_close(fv);
	}

	/* Legitimate growth over pages never written: a store whose pages
	 * are freed (secure_delete off) and the file grown by checkpoints
	 * opens, checks and checkpoints. */
	newpath(path, sizeof(path));
	db = xopen(path, v);
	xexec(db, "PRAGMA journal_mode=WAL");
	xexec(db, "PRAGMA secure_delete=OFF");
	xexec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
	for (int i = 0; i < 20; i++) {
		char sql[160];
		snprintf(sql, sizeof(sql), "BEGIN; INSERT INTO t VALUES(%d, "
		         "randomblob(30000)); DELETE FROM t WHERE k = %d; "
		         "INSERT INTO t VALUES(%d, randomblob(5000)); COMMIT",
		         1000 + i, 1000 + i, i);
		xexec(db, sql);
		if (i % 5 == 4)
			xexec(db, "PRAGMA wal_checkpoint(PASSIVE)");
	}
	xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	crypt_vfs_close(v);
}

/* Zero temp files for the statements that would spill; refusal, not a
 * plaintext file, when someone asks for temp_store=FILE. */
static void test_temp_files(void **state)
{
	char path[128];
	crypt_stats st;
	crypt_vfs *v;
	sqlite3 *db;
	int rc;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 20000);
	db = xopen(path, v);
	xexec(db, "PRAGMA cache_size=10");
	crypt_stats_reset();
	xexec(db, "CREATE INDEX t2 ON t(substr(v, 3, 40))");
	free(query(db, "SELECT v FROM t ORDER BY substr(v, 5, 30) LIMIT 1",
	           &rc));
	assert_int_equal(rc, SQLITE_OK);
	xexec(db, "UPDATE t SET v = randomblob(210) WHERE k % 2 = 0");
	xexec(db, "VACUUM");
	crypt_stats_get(&st);
	assert_int_equal(st.temp_refused, 0);
	assert_true(st.encrypted[CRYPT_FILE_WAL] > 0);

	xexec(db, "PRAGMA temp_store=FILE");
	rc = xexec_rc(db, "SELECT v FROM t ORDER BY substr(v, 7, 30)");
	assert_int_not_equal(rc, SQLITE_OK);
	crypt_stats_get(&st);
	assert_true(st.temp_refused > 0);
	assert_non_null(strstr(crypt_last_error(), "temp_store=MEMORY"));
	sqlite3_close(db);
	crypt_vfs_close(v);
}

static void test_no_mmap(void **state)
{
	char path[128];
	crypt_vfs *v;
	sqlite3 *db;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 500);
	db = xopen(path, v);
	assert_int_equal(query_int(db, "PRAGMA mmap_size=268435456"), 0);
	assert_int_equal(query_int(db, "PRAGMA mmap_size"), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 500);
	xexec(db, "UPDATE t SET v = zeroblob(200) WHERE k < 100");
	assert_int_equal(query_int(db, "SELECT count(*) FROM t WHERE v = "
	                            "zeroblob(200)"), 99);
	sqlite3_close(db);
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	crypt_vfs_close(v);
}

/* Without the reserve (crypt_db_setup not called) nothing is written; a
 * plaintext database cannot be copied in with the backup API. */
static void test_reserve_enforced(void **state)
{
	char path[128], plain[128];
	sqlite3 *db = NULL, *src;
	sqlite3_backup *bk;
	crypt_vfs *v;
	int rc;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	                                 SQLITE_OPEN_CREATE, crypt_vfs_name(v)),
	                 SQLITE_OK);
	xexec(db, "PRAGMA temp_store=MEMORY");
	rc = xexec_rc(db, "CREATE TABLE x(a)");
	assert_int_not_equal(rc, SQLITE_OK);
	assert_non_null(strstr(crypt_last_error(), "reserve"));
	sqlite3_close(db);
	assert_int_equal(file_size(path), 0);

	newpath(plain, sizeof(plain));
	make_store(plain, NULL, 100);
	src = xopen(plain, NULL);
	newpath(path, sizeof(path));
	db = xopen(path, v);
	bk = sqlite3_backup_init(db, "main", src, "main");
	assert_non_null(bk);
	rc = sqlite3_backup_step(bk, -1);
	sqlite3_backup_finish(bk);
	assert_int_not_equal(rc, SQLITE_DONE);
	sqlite3_close(db);
	sqlite3_close(src);
	crypt_vfs_close(v);
}

/* Reads SQLite 3.40 never issues but newer builds may (overflow pages
 * read directly with DIRECT_OVERFLOW_READ): slices of pages through the
 * shim's xRead equal the same bytes of a full-page read. */
static void test_read_slices(void **state)
{
	static const struct { int amt; long long off; } cut[] = {
		{ 100, 0 }, { 16, 24 }, { 4 + 300, 2 * P }, { 10, P - 60 },
		{ 48, P - 48 }, { 200, P - 100 }, { 3 * P, P + 17 },
	};
	unsigned char full[5 * P], part[3 * P];
	sqlite3_file *f = NULL;
	char path[128];
	crypt_vfs *v;
	sqlite3 *db;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	make_store(path, v, 300);
	db = xopen(path, v);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 300);
	assert_int_equal(sqlite3_file_control(db, "main",
	                                      SQLITE_FCNTL_FILE_POINTER, &f),
	                 SQLITE_OK);
	for (int pg = 0; pg < 5; pg++)
		assert_int_equal(f->pMethods->xRead(f, full + pg * P, P,
		                                    (sqlite3_int64)pg * P),
		                 SQLITE_OK);
	assert_memory_equal(full, "SQLite format 3", 16);
	assert_true(full[P - 1] == 0 && full[P - 48] == 0); /* reserve */
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		memset(part, 0xee, sizeof(part));
		assert_int_equal(f->pMethods->xRead(f, part, cut[i].amt,
		                                    cut[i].off), SQLITE_OK);
		assert_memory_equal(part, full + cut[i].off, cut[i].amt);
	}
	/* Beyond the end: a short read of zeros. */
	{
		sqlite3_int64 sz;
		f->pMethods->xFileSize(f, &sz);
		memset(part, 0xee, P);
		assert_int_equal(f->pMethods->xRead(f, part, P, sz),
		                 SQLITE_IOERR_SHORT_READ);
		assert_true(part[0] == 0 && part[P - 1] == 0);
	}
	sqlite3_close(db);
	crypt_vfs_close(v);
}

/* WAL frames: a flipped byte in a committed frame while the wal-index is
 * live is an error naming the page and frame; at rest (recovery) a damaged
 * frame followed by a committed one refuses to open instead of silently
 * dropping commits; a torn last frame drops only the last commit. */
static void test_wal_tamper(void **state)
{
	char path[128], wal[140], copy[128], cwal[140];
	sqlite3 *w, *r;
	crypt_vfs *v;
	off_t wsz;
	const off_t fsz = P + 24;
	int rc, nframes, victim;
	char want[64];
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	snprintf(wal, sizeof(wal), "%s-wal", path);
	newpath(copy, sizeof(copy));
	snprintf(cwal, sizeof(cwal), "%s-wal", copy);
	make_store(path, v, 50);

	w = xopen(path, v);
	xexec(w, "PRAGMA wal_autocheckpoint=0");
	for (int i = 0; i < 20; i++)
		xexec(w, "INSERT INTO t VALUES(NULL, randomblob(3000))");
	wsz = file_size(wal);
	assert_true(wsz > 20 * fsz);

	nframes = (int)((wsz - 32) / fsz);
	victim = unique_frame(wal, nframes);

	/* Live: a reader connection with the wal-index up. */
	flip(wal, 32 + (victim - 1) * fsz + 24 + 1000);
	r = xopen(path, v);
	crypt_clear_error();
	/* instr() reads whole values: length() alone would not read the
	 * overflow pages. */
	free(query(r, "SELECT (SELECT sum(instr(v, x'0102')) FROM t NOT "
	           "INDEXED) + (SELECT sum(instr(v, x'0102')) FROM t INDEXED "
	           "BY tv WHERE v > x'00')", &rc));
	assert_int_equal(rc, SQLITE_IOERR_DATA);
	snprintf(want, sizeof(want), "WAL frame %d of", victim);
	assert_non_null(strstr(crypt_last_error(), want));
	flip(wal, 32 + (victim - 1) * fsz + 24 + 1000); /* undo */
	assert_int_equal(query_int(r, "SELECT count(*) FROM t"), 70);
	sqlite3_close(r);

	/* At rest: copy db + wal while the writer still holds them, so that
	 * opening the copy runs WAL recovery. */
	copy_file(path, copy);
	copy_file(wal, cwal);
	flip(cwal, 32 + (victim - 1) * fsz + 24 + 500);
	assert_int_equal(scan_rc(copy, v), SQLITE_IOERR_DATA);
	assert_non_null(strstr(crypt_last_error(), "committed frame"));
	assert_non_null(strstr(crypt_last_error(), want));
	assert_int_equal(crypt_verify_file(copy, v, NULL, NULL), SFS_CORRUPT);

	/* The last frame torn (a crash while writing it): the last commit
	 * is lost, the rest is there. Cut short, or with a damaged page. */
	for (int variant = 0; variant < 2; variant++) {
		sqlite3 *c;
		char *ok;
		unlink(cwal);
		copy_file(path, copy);
		copy_file(wal, cwal);
		if (variant == 0)
			assert_int_equal(truncate(cwal, wsz - 1000), 0);
		else
			flip(cwal, wsz - 2000);
		assert_int_equal(crypt_verify_file(copy, v, NULL, NULL),
		                 SFS_OK);
		c = xopen(copy, v);
		assert_int_equal(query_int(c, "SELECT count(*) FROM t"), 69);
		ok = query(c, "PRAGMA integrity_check", NULL);
		assert_string_equal(ok, "ok");
		free(ok);
		sqlite3_close(c);
	}
	assert_int_equal(crypt_verify_file(path, v, NULL, NULL), SFS_OK);

	/* A WAL frame's page bytes put into the database file at the same
	 * page number: the file kind is bound, so it fails there too. */
	{
		long dbpages = (long)(file_size(path) / P);
		int done = 0;
		for (int fr = 1; fr <= nframes && !done; fr++) {
			unsigned char h[4], pg[P];
			uint32_t pgno;
			rw_at(wal, h, 4, 32 + (fr - 1) * fsz, 0);
			pgno = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
			       (uint32_t)h[2] << 8 | h[3];
			if (pgno < 2 || pgno > (uint32_t)dbpages)
				continue;
			unlink(cwal);
			copy_file(path, copy);
			rw_at(wal, pg, P, 32 + (fr - 1) * fsz + 24, 0);
			rw_at(copy, pg, P, (off_t)(pgno - 1) * P, 1);
			assert_int_not_equal(scan_rc(copy, v), SQLITE_OK);
			snprintf(want, sizeof(want), "page %u of", pgno);
			assert_non_null(strstr(crypt_last_error(), want));
			done = 1;
		}
		assert_true(done);
	}
	sqlite3_close(w);
	crypt_vfs_close(v);
}

/* The number of frames in a WAL whose salts are all zero. */
static int zeroed_frames(const char *wal)
{
	const off_t fsz = P + 24;
	int n = (int)((file_size(wal) - 32) / fsz), z = 0;
	unsigned char h[24];

	for (int i = 0; i < n; i++) {
		rw_at(wal, h, 24, 32 + i * fsz, 0);
		z += !memcmp(h + 8, "\0\0\0\0\0\0\0\0", 8);
	}
	return z;
}

/* Copies a store and its WAL (the writer still holds them) to copy, so
 * that opening the copy runs recovery; returns how many rows t has there,
 * after checking it opens clean and verifies. */
static long long recovered_rows(const char *path, const char *copy,
                                const crypt_vfs *v, off_t flip_at)
{
	char wal[150], cwal[150];
	sqlite3 *c;
	long long n;
	char *ok;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(cwal, sizeof(cwal), "%s-wal", copy);
	unlink(cwal);
	copy_file(path, copy);
	copy_file(wal, cwal);
	if (flip_at)
		flip(cwal, flip_at);
	assert_int_equal(crypt_verify_file(copy, v, NULL, NULL), SFS_OK);
	c = xopen(copy, v);
	n = query_int(c, "SELECT count(*) FROM t");
	ok = query(c, "PRAGMA integrity_check", NULL);
	assert_string_equal(ok, "ok");
	free(ok);
	sqlite3_close(c);
	return n;
}

/* What SQLite legitimately leaves in a WAL must keep opening now that a
 * log cut short by a damaged frame header refuses to (crypt_wal.c): frames
 * with zeroed salts and checksums (a big transaction rewrote spilled pages
 * in place and had not committed), and frames of an older generation after
 * the log restarted, damaged headers there included. */
static void test_wal_legit_ends(void **state)
{
	char path[128], wal[140], copy[128];
	const off_t fsz = P + 24;
	sqlite3 *w;
	crypt_vfs *v;
	int frames;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	newpath(copy, sizeof(copy));
	snprintf(wal, sizeof(wal), "%s-wal", path);
	make_store(path, v, 50);

	/* A transaction that spills (a tiny cache) and then changes pages
	 * it spilled: SQLite writes later frames with zeroed salts. */
	w = xopen(path, v);
	xexec(w, "PRAGMA wal_autocheckpoint=0; PRAGMA cache_size=5");
	xexec(w, "BEGIN");
	xexec(w, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c"
	      " WHERE x<300) INSERT INTO t SELECT 1000+x, randomblob(600)"
	      " FROM c");
	xexec(w, "UPDATE t SET v = randomblob(610) WHERE k > 1000");
	xexec(w, "UPDATE t SET v = randomblob(620) WHERE k > 1000");
	assert_true(zeroed_frames(wal) > 0);
	/* Not committed: the copy has the 50 rows before it. */
	assert_int_equal(recovered_rows(path, copy, v, 0), 50);
	xexec(w, "COMMIT");
	assert_int_equal(zeroed_frames(wal), 0);
	assert_int_equal(recovered_rows(path, copy, v, 0), 350);

	/* Restart the log (everything checkpointed, no reader), then write
	 * less than it held: an older generation follows the current one.
	 * A damaged header in it changes nothing. */
	frames = (int)((file_size(wal) - 32) / fsz);
	xexec(w, "PRAGMA wal_checkpoint");
	xexec(w, "INSERT INTO t VALUES(5000, randomblob(100))");
	xexec(w, "INSERT INTO t VALUES(5001, randomblob(100))");
	assert_true((file_size(wal) - 32) / fsz == frames);
	assert_int_equal(recovered_rows(path, copy, v, 0), 352);
	assert_int_equal(recovered_rows(path, copy, v, 32 + (frames - 3) * fsz
	                                + 18), 352);
	assert_int_equal(recovered_rows(path, copy, v, 32 + (frames - 3) * fsz
	                                + 10), 352);
	sqlite3_close(w);
	crypt_vfs_close(v);
}

/* The spilling transaction of test_wal_legit_ends on w: SQLite writes
 * pages in place and then rewrites the checksums of the frames after them
 * at COMMIT, header by header, no page following. */
static void rewrite_txn(sqlite3 *w, int base)
{
	char sql[256];

	xexec(w, "PRAGMA cache_size=5");
	xexec(w, "BEGIN");
	snprintf(sql, sizeof(sql), "WITH RECURSIVE c(x) AS (SELECT 1 UNION "
	         "ALL SELECT x+1 FROM c WHERE x<300) INSERT INTO t SELECT "
	         "%d+x, randomblob(600) FROM c", base);
	xexec(w, sql);
	snprintf(sql, sizeof(sql), "UPDATE t SET v = randomblob(610) WHERE "
	         "k > %d", base);
	xexec(w, sql);
	xexec(w, "COMMIT");
	xexec(w, "PRAGMA cache_size=-2000");
}

/* A frame SQLite appends (a 24-byte header, then its page) reaches the
 * file as one write of P + 24 bytes (vfs.c wal_write), counted below the
 * encrypting VFS; and every acknowledged commit is on disk when SQLite
 * returns: a copy of the files taken right after the commit recovers it.
 * That includes a commit whose last write is a rewritten header, in an
 * exclusive-locking connection without syncs at commit, where no shared
 * memory call and no sync follows it: only writing such headers at once,
 * or the main file's COMMIT_PHASETWO file control flushing a held one,
 * puts it down (each alone passes; without both, the commit is lost). */
static void test_wal_frames_whole(void **state)
{
	char path[128], wal[140], copy[128], sql[128];
	const off_t fsz = P + 24;
	crypt_vfs *v;
	sqlite3 *w;
	long frames;
	(void)state;

	assert_int_equal(faultvfs_register(), 0);
	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	faultvfs_unregister(); /* v keeps wrapping it */
	newpath(path, sizeof(path));
	newpath(copy, sizeof(copy));
	snprintf(wal, sizeof(wal), "%s-wal", path);
	make_store(path, v, 50); /* closed: no WAL left */

	/* Twenty commits of one row: each frame one write. */
	w = xopen(path, v);
	xexec(w, "PRAGMA wal_autocheckpoint=0; PRAGMA synchronous=NORMAL");
	faultvfs_count_reset();
	for (int i = 0; i < 20; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO t VALUES(%d, "
		         "randomblob(100))", 100 + i);
		xexec(w, sql);
	}
	frames = (long)((file_size(wal) - 32) / fsz);
	assert_true(frames >= 20);
	assert_int_equal(faultvfs_wal_writes(32), 1);
	assert_int_equal(faultvfs_wal_writes(P + 24), frames);
	assert_int_equal(faultvfs_wal_writes(24), 0);
	assert_int_equal(faultvfs_wal_writes(P), 0);
	assert_int_equal(recovered_rows(path, copy, v, 0), 70);

	/* In-place page writes and rewritten headers still go down alone. */
	faultvfs_count_reset();
	rewrite_txn(w, 1000);
	assert_true(faultvfs_wal_writes(P) > 0);
	assert_true(faultvfs_wal_writes(24) > 0);
	assert_true(faultvfs_wal_writes(P + 24) > 0);
	assert_int_equal(zeroed_frames(wal), 0);
	assert_int_equal(recovered_rows(path, copy, v, 0), 370);
	sqlite3_close(w);

	/* Exclusive locking mode from the start: the wal-index lives in
	 * heap memory, no barrier or shared-memory lock follows a commit. */
	w = xopen(path, v);
	xexec(w, "PRAGMA locking_mode=EXCLUSIVE");
	xexec(w, "PRAGMA wal_autocheckpoint=0; PRAGMA synchronous=NORMAL");
	xexec(w, "INSERT INTO t VALUES(2000, randomblob(100))");
	assert_int_equal(recovered_rows(path, copy, v, 0), 371);
	rewrite_txn(w, 3000);
	assert_int_equal(recovered_rows(path, copy, v, 0), 671);
	xexec(w, "INSERT INTO t VALUES(4000, randomblob(100))");
	assert_int_equal(recovered_rows(path, copy, v, 0), 672);
	sqlite3_close(w);
	crypt_vfs_close(v);
}

/* What the format does not detect, by design (docs/encryption.md). */
static void test_documented_negatives(void **state)
{
	char path[128], old[128];
	unsigned char pg[P];
	crypt_vfs *v;
	sqlite3 *db;
	(void)state;

	assert_int_equal(crypt_vfs_open(key_a, &v), SFS_OK);
	newpath(path, sizeof(path));
	newpath(old, sizeof(old));
	make_store(path, v, 100);
	db = xopen(path, v);
	xexec(db, "CREATE TABLE u(k INTEGER PRIMARY KEY, x)");
	xexec(db, "INSERT INTO u VALUES(1, 'old'), (2, 'old')");
	xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);
	copy_file(path, old);
	db = xopen(path, v);
	xexec(db, "UPDATE u SET x = 'new' WHERE k = 1");
	xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);

	/* Replay of an older copy of one page: passes. */
	for (long p = 1; p < file_size(path) / P; p++) {
		unsigned char cur[P];
		rw_at(path, cur, P, p * P, 0);
		rw_at(old, pg, P, p * P, 0);
		if (memcmp(cur, pg, P) != 0) {
			rw_at(path, pg, P, p * P, 1);
			break;
		}
	}
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	db = xopen(path, v);
	assert_int_equal(query_int(db, "SELECT count(*) FROM u WHERE x = "
	                            "'old'"), 2);
	sqlite3_close(db);
	/* Whole-file rollback: passes, of course. */
	copy_file(old, path);
	assert_int_equal(scan_rc(path, v), SQLITE_OK);
	db = xopen(path, v);
	assert_int_equal(query_int(db, "SELECT count(*) FROM u WHERE x = "
	                            "'old'"), 2);
	sqlite3_close(db);

	/* The WAL alone rolled back: an older copy of the log replayed over
	 * a store checkpointed since brings its pages back (a replay of
	 * pages: every frame authenticates). */
	{
		char wal[160], shm[160], oldwal[160], other[128];

		snprintf(wal, sizeof(wal), "%s-wal", path);
		snprintf(shm, sizeof(shm), "%s-shm", path);
		snprintf(oldwal, sizeof(oldwal), "%s.oldwal", path);
		db = xopen(path, v);
		xexec(db, "PRAGMA wal_autocheckpoint=0");
		sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		xexec(db, "UPDATE u SET x = 'wal1' WHERE k = 2");
		sqlite3_close(db);
		copy_file(wal, oldwal);
		db = xopen(path, v);
		xexec(db, "UPDATE u SET x = 'wal2' WHERE k = 2");
		xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
		sqlite3_close(db);
		copy_file(oldwal, wal);
		unlink(shm);
		db = xopen(path, v);
		assert_int_equal(query_int(db, "SELECT count(*) FROM u WHERE "
		                            "x = 'wal1'"), 1);
		xexec(db, "UPDATE u SET x = 'wal2' WHERE k = 2");
		xexec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
		sqlite3_close(db);

		/* Another store's WAL, under the same key: none of its frames
		 * authenticates here, so the log ends before its first
		 * frame, as if it had been deleted; the store opens as of
		 * its last checkpoint. */
		newpath(other, sizeof(other));
		make_store(other, v, 10);
		db = xopen(other, v);
		xexec(db, "PRAGMA wal_autocheckpoint=0");
		sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		xexec(db, "CREATE TABLE u(k INTEGER PRIMARY KEY, x)");
		xexec(db, "INSERT INTO u VALUES(2, 'foreign')");
		sqlite3_close(db);
		snprintf(oldwal, sizeof(oldwal), "%s-wal", other);
		assert_true(file_size(oldwal) > 0);
		copy_file(oldwal, wal);
		unlink(shm);
		assert_int_equal(scan_rc(path, v), SQLITE_OK);
		db = xopen(path, v);
		assert_int_equal(query_int(db, "SELECT count(*) FROM u WHERE "
		                            "x = 'wal2'"), 1);
		sqlite3_close(db);
	}
	crypt_vfs_close(v);
}


/* What a page is bound to, one field at a time: kind, page number, salt,
 * WAL frame index, WAL commit-size field, trailer, page 1's clear header.
 * Any change and the page does not open. */
static void test_page_binding(void **state)
{
	unsigned char plain[P], page[P], hdr8[8] = { 0, 0, 0, 9, 0, 0, 0, 0 };
	unsigned char hdr8b[8] = { 0, 0, 0, 9, 0, 0, 0, 12 };
	cp_walpos pos = { 5, hdr8 }, other = { 6, hdr8 }, commit = { 5, hdr8b };
	cp_filekey *fk = cp_filekey_new(), *fk2 = cp_filekey_new();
	unsigned char salt2[16] = { 1 };
	(void)state;

	assert_non_null(fk);
	assert_non_null(fk2);
	assert_int_equal(cp_derive(key_a, (const unsigned char *)"0123456789abcdef",
	                           CRYPT_KDF_RAW, fk), SFS_OK);
	assert_int_equal(cp_derive(key_a, salt2, CRYPT_KDF_RAW, fk2), SFS_OK);
	for (int i = 0; i < P - CP_RESERVE; i++)
		plain[i] = (unsigned char)(i * 7);
	memset(plain + P - CP_RESERVE, 0, CP_RESERVE);

#define SEAL_OPEN(kind_s, pg_s, wal_s, fk_o, kind_o, pg_o, wal_o)             \
	(cp_seal(fk, kind_s, pg_s, wal_s, plain, page, P),                     \
	 cp_open(fk_o, kind_o, pg_o, wal_o, page, P))

	assert_int_equal(SEAL_OPEN(CP_DB, 9, NULL, fk, CP_DB, 9, NULL), CP_OK);
	assert_memory_equal(page, plain, P);
	assert_int_equal(SEAL_OPEN(CP_DB, 9, NULL, fk, CP_DB, 10, NULL), CP_AUTH);
	assert_int_equal(SEAL_OPEN(CP_DB, 9, NULL, fk, CP_JOURNAL, 9, NULL),
	                 CP_AUTH);
	assert_int_equal(SEAL_OPEN(CP_WAL, 9, &pos, fk, CP_DB, 9, NULL), CP_AUTH);
	assert_int_equal(SEAL_OPEN(CP_DB, 9, NULL, fk, CP_WAL, 9, &pos), CP_AUTH);
	/* Another file under the same key: same key check, other salt. */
	assert_int_equal(SEAL_OPEN(CP_DB, 9, NULL, fk2, CP_DB, 9, NULL), CP_AUTH);
	assert_int_equal(SEAL_OPEN(CP_WAL, 9, &pos, fk, CP_WAL, 9, &pos), CP_OK);
	assert_int_equal(SEAL_OPEN(CP_WAL, 9, &pos, fk, CP_WAL, 9, &other),
	                 CP_AUTH);
	assert_int_equal(SEAL_OPEN(CP_WAL, 9, &pos, fk, CP_WAL, 9, &commit),
	                 CP_AUTH);
	/* Two seals of one page differ (fresh nonce), both open. */
	{
		unsigned char a[P];
		cp_seal(fk, CP_DB, 3, NULL, plain, a, P);
		cp_seal(fk, CP_DB, 3, NULL, plain, page, P);
		assert_memory_not_equal(a, page, P);
		assert_int_equal(cp_open(fk, CP_DB, 3, NULL, a, P), CP_OK);
		assert_int_equal(cp_open(fk, CP_DB, 3, NULL, page, P), CP_OK);
	}
	/* Page 1's clear header bytes 16-23 are authenticated. */
	memcpy(plain, "SQLite format 3", 16);
	plain[16] = 0x10;
	plain[20] = 48;
	cp_seal(fk, CP_DB, 1, NULL, plain, page, P);
	assert_memory_equal(page, "0123456789abcdef", 16);
	assert_int_equal(page[16], 0x10);
	page[18] ^= 1;
	assert_int_equal(cp_open(fk, CP_DB, 1, NULL, page, P), CP_AUTH);
#undef SEAL_OPEN
	cp_filekey_free(fk);
	cp_filekey_free(fk2);
}

/* The page cipher (crypt/aead.c) is libsodium's XChaCha20-Poly1305-IETF
 * byte for byte, whether libcrypto or libsodium computes it: stores written
 * before libcrypto did the work, or by a build whose libcrypto lacks the
 * cipher, open; and a failed open hands out zeros, not unauthenticated
 * plaintext (libcrypto decrypts before it checks the tag). */
#define SAME(a, b, n) do { if (n) assert_memory_equal(a, b, n); } while (0)

static void aead_case(size_t n, size_t adlen, int seal_lc, int open_lc)
{
	static unsigned char m[65536], c1[65536], c2[65536], ad[64],
		zeros[65536];
	unsigned char key[32], nonce[24], t1[16], t2[16];

	randombytes_buf(key, sizeof(key));
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(ad, adlen);
	randombytes_buf(m, n);
	crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
		c1, t1, NULL, m, n, ad, adlen, NULL, nonce, key);

	cp_aead_libcrypto(seal_lc);
	cp_aead_seal(c2, t2, m, n, ad, adlen, nonce, key);
	SAME(c1, c2, n);
	assert_memory_equal(t1, t2, 16);
	memcpy(c2, m, n);                        /* in place */
	cp_aead_seal(c2, t2, c2, n, ad, adlen, nonce, key);
	SAME(c1, c2, n);
	assert_memory_equal(t1, t2, 16);

	cp_aead_libcrypto(open_lc);
	assert_int_equal(cp_aead_open(c2, c2, n, t2, ad, adlen, nonce, key), 0);
	SAME(c2, m, n);
	/* one flipped bit anywhere authenticated: refused, zeros out */
	for (int what = 0; what < 3; what++) {
		unsigned char *b = what == 0 ? c1 : what == 1 ? t1 : ad;
		size_t len = what == 0 ? n : what == 1 ? 16 : adlen;
		size_t at;

		if (!len)
			continue;
		at = randombytes_uniform((uint32_t)len);
		b[at] ^= 0x10;
		memcpy(c2, c1, n);
		assert_int_equal(cp_aead_open(c2, c2, n, t1, ad, adlen, nonce,
		                              key), -1);
		SAME(c2, zeros, n);
		b[at] ^= 0x10;
	}
	cp_aead_libcrypto(1);
}
#undef SAME

static void test_aead_same_bytes(void **state)
{
	static const size_t ns[] = { 0, 1, 63, 64, 65, 1000, 1024 - 48,
	                             4096 - 48 - 24, 4096 - 48, 65536 - 48 };
	static const size_t ads[] = { 0, 13, 64 };

	(void)state;
	/* Debian's OpenSSL has the cipher: the fast path is the one taken */
	assert_int_equal(cp_aead_libcrypto(-1), 1);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (size_t j = 0; j < sizeof(ads) / sizeof(ads[0]); j++)
			for (int mode = 0; mode < 4; mode++)
				aead_case(ns[i], ads[j], mode & 1, mode >> 1);
}

/* Nonces come from a pool per thread (crypt/page.c): every seal has its
 * own, across pool refills, threads, and a fork (a child that inherited a
 * pool half used must not seal with the nonces its parent seals with
 * next). */
#define NONCES 600   /* more than four pools' worth */

static void seal_nonces(unsigned char (*out)[24], int n)
{
	static unsigned char plain[P];
	unsigned char page[P];
	cp_filekey *fk = cp_filekey_new();

	assert_non_null(fk);
	assert_int_equal(cp_derive(key_a, (const unsigned char *)"0123456789abcdef",
	                           CRYPT_KDF_RAW, fk), SFS_OK);
	for (int i = 0; i < n; i++) {
		cp_seal(fk, CP_DB, 2, NULL, plain, page, P);
		memcpy(out[i], page + P - CP_RESERVE, 24);
	}
	cp_filekey_free(fk);
}

static void *seal_thread(void *arg)
{
	seal_nonces(arg, NONCES);
	return NULL;
}

static int cmp24(const void *a, const void *b)
{
	return memcmp(a, b, 24);
}

static void test_nonces_unique(void **state)
{
	/* [0] this thread, [1] another, [2] a forked child, [3] this thread
	 * after the fork */
	unsigned char (*n)[24] = calloc(4 * NONCES, 24);
	pthread_t th;
	int fds[2], status;
	pid_t pid;
	(void)state;

	assert_non_null(n);
	seal_nonces(n, NONCES / 2 + 7); /* a pool left half used */
	assert_int_equal(pthread_create(&th, NULL, seal_thread, n + NONCES),
	                 0);
	pthread_join(th, NULL);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		seal_nonces(n + 2 * NONCES, NONCES);
		_exit(write(fds[1], n + 2 * NONCES, NONCES * 24) ==
		      NONCES * 24 ? 0 : 1);
	}
	close(fds[1]);
	seal_nonces(n + 3 * NONCES, NONCES);
	for (size_t got = 0; got < NONCES * 24;) {
		ssize_t r = read(fds[0], (unsigned char *)(n + 2 * NONCES) + got,
		                 NONCES * 24 - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the first call sealed NONCES / 2 + 7; the rest of [0] is zeros */
	memmove(n + NONCES / 2 + 7, n + NONCES, 3 * NONCES * 24);
	{
		size_t total = NONCES / 2 + 7 + 3 * NONCES;

		qsort(n, total, 24, cmp24);
		for (size_t i = 1; i < total; i++)
			assert_memory_not_equal(n[i - 1], n[i], 24);
	}
	free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_binding),
		cmocka_unit_test(test_aead_same_bytes),
		cmocka_unit_test(test_nonces_unique),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wrong_key_and_kinds),
		cmocka_unit_test(test_passphrase),
		cmocka_unit_test(test_tamper_every_page),
		cmocka_unit_test(test_swap_and_transplant),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_temp_files),
		cmocka_unit_test(test_no_mmap),
		cmocka_unit_test(test_reserve_enforced),
		cmocka_unit_test(test_read_slices),
		cmocka_unit_test(test_wal_tamper),
		cmocka_unit_test(test_wal_legit_ends),
		cmocka_unit_test(test_wal_frames_whole),
		cmocka_unit_test(test_documented_negatives),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
