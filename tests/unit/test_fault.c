/*
 * test_fault.c - the engine's error paths under injected I/O failures.
 *
 * A VFS shim, registered as SQLite's default before any store is opened,
 * passes every call to the real VFS but fails writes once armed: with
 * SQLITE_FULL (a full disk) or SQLITE_IOERR_WRITE (an I/O error). The
 * encryption layer wraps the default VFS, so in encrypted mode the shim sits
 * under it and the same failures reach the engine through the crypt layer.
 * Each test checks the status, that nothing of the failed call is visible
 * (value and time row go together), and that the store works once the
 * fault is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fixture.h"

static sqlite3_vfs *real;
static sqlite3_vfs shim;
static int fail_rc;        /* 0: pass writes through */

typedef struct shim_file {
	sqlite3_file base;
	sqlite3_file *real;    /* follows this struct */
} shim_file;

static int s_close(sqlite3_file *f)
{
	shim_file *p = (shim_file *)f;
	int rc = p->real->pMethods->xClose(p->real);

	return rc;
}

static int s_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xRead(p->real, b, n, o);
}

static int s_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	shim_file *p = (shim_file *)f;

	if (fail_rc)
		return fail_rc;
	return p->real->pMethods->xWrite(p->real, b, n, o);
}

static int s_truncate(sqlite3_file *f, sqlite3_int64 n)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xTruncate(p->real, n);
}

static int s_sync(sqlite3_file *f, int flags)
{
	shim_file *p = (shim_file *)f;

	if (fail_rc)
		return SQLITE_IOERR_FSYNC;
	return p->real->pMethods->xSync(p->real, flags);
}

static int s_size(sqlite3_file *f, sqlite3_int64 *n)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xFileSize(p->real, n);
}

static int s_lock(sqlite3_file *f, int l)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xLock(p->real, l);
}

static int s_unlock(sqlite3_file *f, int l)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xUnlock(p->real, l);
}

static int s_reserved(sqlite3_file *f, int *r)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xCheckReservedLock(p->real, r);
}

static int s_fcntl(sqlite3_file *f, int op, void *arg)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xFileControl(p->real, op, arg);
}

static int s_sector(sqlite3_file *f)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xSectorSize(p->real);
}

static int s_devchar(sqlite3_file *f)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xDeviceCharacteristics(p->real);
}

static int s_shmmap(sqlite3_file *f, int pg, int sz, int ext,
                    void volatile **pp)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xShmMap(p->real, pg, sz, ext, pp);
}

static int s_shmlock(sqlite3_file *f, int off, int n, int flags)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xShmLock(p->real, off, n, flags);
}

static void s_shmbarrier(sqlite3_file *f)
{
	shim_file *p = (shim_file *)f;

	p->real->pMethods->xShmBarrier(p->real);
}

static int s_shmunmap(sqlite3_file *f, int del)
{
	shim_file *p = (shim_file *)f;

	return p->real->pMethods->xShmUnmap(p->real, del);
}

/* Version 2: no xFetch, so every page goes through xRead/xWrite. */
static const sqlite3_io_methods shim_io = {
	2, s_close, s_read, s_write, s_truncate, s_sync, s_size, s_lock,
	s_unlock, s_reserved, s_fcntl, s_sector, s_devchar, s_shmmap,
	s_shmlock, s_shmbarrier, s_shmunmap, NULL, NULL,
};

static int s_open(sqlite3_vfs *v, const char *name, sqlite3_file *f,
                  int flags, int *out)
{
	shim_file *p = (shim_file *)f;
	int rc;

	(void)v;
	p->real = (sqlite3_file *)(p + 1);
	rc = real->xOpen(real, name, p->real, flags, out);
	p->base.pMethods = rc == SQLITE_OK && p->real->pMethods ? &shim_io
	                                                        : NULL;
	return rc;
}

static int s_delete(sqlite3_vfs *v, const char *n, int sync)
{
	(void)v;
	return real->xDelete(real, n, sync);
}

static int s_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
	(void)v;
	return real->xAccess(real, n, flags, out);
}

static int s_full(sqlite3_vfs *v, const char *n, int len, char *out)
{
	(void)v;
	return real->xFullPathname(real, n, len, out);
}

static int s_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real->xRandomness(real, n, out);
}

static int s_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real->xSleep(real, us);
}

static int s_time(sqlite3_vfs *v, double *t)
{
	(void)v;
	return real->xCurrentTime(real, t);
}

static int s_lasterr(sqlite3_vfs *v, int n, char *buf)
{
	(void)v;
	return real->xGetLastError ? real->xGetLastError(real, n, buf) : 0;
}

static int s_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
	(void)v;
	return real->xCurrentTimeInt64(real, t);
}

static int shim_setup(void **state)
{
	(void)state;
	real = sqlite3_vfs_find(NULL);
	memset(&shim, 0, sizeof(shim));
	shim.iVersion = 2;
	shim.szOsFile = (int)sizeof(shim_file) + real->szOsFile;
	shim.mxPathname = real->mxPathname;
	shim.zName = "statefs-test-fault";
	shim.xOpen = s_open;
	shim.xDelete = s_delete;
	shim.xAccess = s_access;
	shim.xFullPathname = s_full;
	shim.xRandomness = s_random;
	shim.xSleep = s_sleep;
	shim.xCurrentTime = s_time;
	shim.xGetLastError = s_lasterr;
	shim.xCurrentTimeInt64 = s_time64;
	return sqlite3_vfs_register(&shim, 1) == SQLITE_OK ? 0 : -1;
}

static int shim_teardown(void **state)
{
	(void)state;
	sqlite3_vfs_unregister(&shim);
	return 0;
}

static void no_trace(tfx *t, const char *key)
{
	uint64_t size;
	sfs_buf b;
	sfs_list l;

	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("s"), S("n"), S(key), &b));
	IS(SFS_NOTFOUND, sfs_kv_stat(t->s, S("s"), S("n"), S(key), &size, NULL));
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
	fail_rc = SQLITE_FULL;
	IS(SFS_FULL, sfs_kv_put(t->s, S("s"), S("n"), S("lost"), S("v")));
	IS(SFS_FULL, sfs_counter_add(t->s, S("s"), S("n"), S("c"), 1, &v));
	IS(SFS_FULL, sfs_queue_push(t->s, S("q"), items, 2, NULL));
	IS(SFS_FULL, sfs_log_append(t->s, S("s"), S("n"), S("k"), S("v"), NULL));
	assert_true(strlen(sfs_errdetail()) > 0);
	fail_rc = 0;
	no_trace(t, "lost");
	OK(sfs_counter_get(t->s, S("s"), S("n"), S("c"), &v, NULL));
	assert_int_equal(v, 5);
	OK(sfs_queue_len(t->s, S("q"), &len));
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

static void test_io_error(void **state)
{
	tfx *t = *state;
	char cp[400];
	sfs_list l;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("a"), S("1")));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("b"), S("2")));
	fail_rc = SQLITE_IOERR_WRITE;
	IS(SFS_IO, sfs_kv_drain(t->s, S("s"), S("n"), &l));
	IS(SFS_IO, sfs_kv_put(t->s, S("s"), S("n"), S("lost"), S("v")));
	IS(SFS_IO, sfs_store_sync(t->s));
	snprintf(cp, sizeof(cp), "%s/cp.db", t->dir);
	assert_true(sfs_checkpoint(t->s, cp, NULL, NULL) != SFS_OK);
	fail_rc = 0;
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
	fail_rc = SQLITE_FULL;
	assert_true(sfs_restore(t->s, cp, NULL, NULL) != SFS_OK);
	fail_rc = 0;
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
	fail_rc = SQLITE_IOERR_WRITE;
	IS(SFS_IO, tfx_open(path, SFS_OPEN_CREATE, &s));
	fail_rc = 0;
	assert_int_equal(access(path, F_OK), -1);
	OK(tfx_open(path, SFS_OPEN_CREATE | SFS_OPEN_EXCL, &s));
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_full_disk),
		T(test_io_error),
		T(test_create_fails),
	};

	return cmocka_run_group_tests(tests, shim_setup, shim_teardown);
}
