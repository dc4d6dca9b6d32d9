/*
 * test_crypt_fault.c - I/O failures under the encrypting VFS.
 *
 * A fault VFS is registered as SQLite's default before any store opens, so
 * every encrypted store's VFS wraps it: the engine sits on the encryption
 * layer, which sits on this, which sits on "unix". It makes the Nth read,
 * write or sync fail: EIO once, a full disk from then on, or a torn write
 * (half the bytes written, then an error). For each kind and several N the
 * engine must report SFS_IO or SFS_FULL (never a crash, never wrong data),
 * and once the fault is gone the store must reopen, verify (every page
 * authenticates, SQLite's integrity check) and hold every acknowledged
 * write. This is the error path of the decrypting reads and encrypting
 * writes that a crash test cannot reach.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "statefs.h"

/* ---- the fault VFS ---- */

enum { F_READ = 1, F_WRITE = 2, F_SYNC = 4 };
enum { F_EIO, F_FULL, F_TORN };

static struct {
	int ops;          /* F_* the fault applies to */
	int kind;         /* F_EIO, F_FULL, F_TORN */
	long countdown;   /* fail when it reaches 0; < 0 disarmed */
	int fired;
} F = { 0, 0, -1, 0 };

static sqlite3_vfs *unix_vfs;
static sqlite3_vfs fault_vfs;

typedef struct ffile {
	sqlite3_file base;
	sqlite3_file *real;
} ffile;

#define REAL(pf) (((ffile *)(pf))->real)

/* 0: go ahead; else the SQLite error to return. */
static int fault(int op, int ioerr)
{
	if (!(F.ops & op) || F.countdown < 0)
		return 0;
	if (F.countdown > 0) {
		F.countdown--;
		if (F.countdown > 0)
			return 0;
	}
	/* countdown == 0: this call fails; a full disk stays full. */
	F.fired++;
	if (F.kind != F_FULL)
		F.countdown = -1;
	return F.kind == F_FULL && op == F_WRITE ? SQLITE_FULL : ioerr;
}

static int f_close(sqlite3_file *pf)
{
	return REAL(pf)->pMethods->xClose(REAL(pf));
}

static int f_read(sqlite3_file *pf, void *b, int n, sqlite3_int64 o)
{
	int rc = fault(F_READ, SQLITE_IOERR_READ);
	return rc ? rc : REAL(pf)->pMethods->xRead(REAL(pf), b, n, o);
}

static int f_write(sqlite3_file *pf, const void *b, int n, sqlite3_int64 o)
{
	int kind = F.kind, rc = fault(F_WRITE, SQLITE_IOERR_WRITE);

	if (rc && kind == F_TORN && n > 1)
		REAL(pf)->pMethods->xWrite(REAL(pf), b, n / 2, o);
	return rc ? rc : REAL(pf)->pMethods->xWrite(REAL(pf), b, n, o);
}

static int f_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
	return REAL(pf)->pMethods->xTruncate(REAL(pf), size);
}

static int f_sync(sqlite3_file *pf, int flags)
{
	int rc = fault(F_SYNC, SQLITE_IOERR_FSYNC);
	return rc ? rc : REAL(pf)->pMethods->xSync(REAL(pf), flags);
}

static int f_size(sqlite3_file *pf, sqlite3_int64 *out)
{
	return REAL(pf)->pMethods->xFileSize(REAL(pf), out);
}

static int f_lock(sqlite3_file *pf, int l)
{
	return REAL(pf)->pMethods->xLock(REAL(pf), l);
}

static int f_unlock(sqlite3_file *pf, int l)
{
	return REAL(pf)->pMethods->xUnlock(REAL(pf), l);
}

static int f_reserved(sqlite3_file *pf, int *out)
{
	return REAL(pf)->pMethods->xCheckReservedLock(REAL(pf), out);
}

static int f_fcntl(sqlite3_file *pf, int op, void *arg)
{
	return REAL(pf)->pMethods->xFileControl(REAL(pf), op, arg);
}

static int f_sector(sqlite3_file *pf)
{
	return REAL(pf)->pMethods->xSectorSize(REAL(pf));
}

static int f_devchar(sqlite3_file *pf)
{
	return REAL(pf)->pMethods->xDeviceCharacteristics(REAL(pf));
}

static int f_shm_map(sqlite3_file *pf, int a, int b, int c,
                     void volatile **pp)
{
	return REAL(pf)->pMethods->xShmMap(REAL(pf), a, b, c, pp);
}

static int f_shm_lock(sqlite3_file *pf, int a, int b, int c)
{
	return REAL(pf)->pMethods->xShmLock(REAL(pf), a, b, c);
}

static void f_shm_barrier(sqlite3_file *pf)
{
	REAL(pf)->pMethods->xShmBarrier(REAL(pf));
}

static int f_shm_unmap(sqlite3_file *pf, int d)
{
	return REAL(pf)->pMethods->xShmUnmap(REAL(pf), d);
}

static const sqlite3_io_methods f_methods = {
	.iVersion = 2,
	.xClose = f_close, .xRead = f_read, .xWrite = f_write,
	.xTruncate = f_truncate, .xSync = f_sync, .xFileSize = f_size,
	.xLock = f_lock, .xUnlock = f_unlock,
	.xCheckReservedLock = f_reserved, .xFileControl = f_fcntl,
	.xSectorSize = f_sector, .xDeviceCharacteristics = f_devchar,
	.xShmMap = f_shm_map, .xShmLock = f_shm_lock,
	.xShmBarrier = f_shm_barrier, .xShmUnmap = f_shm_unmap,
};

static int f_open(sqlite3_vfs *v, const char *name, sqlite3_file *pf,
                  int flags, int *out)
{
	ffile *f = (ffile *)pf;
	int rc;

	(void)v;
	f->real = (sqlite3_file *)(f + 1);
	rc = unix_vfs->xOpen(unix_vfs, name, f->real, flags, out);
	f->base.pMethods = rc == SQLITE_OK ? &f_methods : NULL;
	return rc;
}

static int f_delete(sqlite3_vfs *v, const char *z, int s)
{
	(void)v;
	return unix_vfs->xDelete(unix_vfs, z, s);
}

static int f_access(sqlite3_vfs *v, const char *z, int fl, int *out)
{
	(void)v;
	return unix_vfs->xAccess(unix_vfs, z, fl, out);
}

static int f_fullpath(sqlite3_vfs *v, const char *z, int n, char *out)
{
	(void)v;
	return unix_vfs->xFullPathname(unix_vfs, z, n, out);
}

static int f_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return unix_vfs->xRandomness(unix_vfs, n, out);
}

static int f_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return unix_vfs->xSleep(unix_vfs, us);
}

static int f_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return unix_vfs->xCurrentTime(unix_vfs, out);
}

static int f_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return unix_vfs->xCurrentTimeInt64(unix_vfs, out);
}

static int f_lasterr(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return unix_vfs->xGetLastError(unix_vfs, n, out);
}

/* ---- tests ---- */

static char dir[64];
static sfs_key *key;
static int seq;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sfs-fault-XXXXXX");
	if (!mkdtemp(dir) || sfs_key_generate(&key))
		return -1;
	unix_vfs = sqlite3_vfs_find("unix");
	if (!unix_vfs)
		return -1;
	fault_vfs.iVersion = 2;
	fault_vfs.szOsFile = (int)sizeof(ffile) + unix_vfs->szOsFile;
	fault_vfs.mxPathname = unix_vfs->mxPathname;
	fault_vfs.zName = "statefs-test-fault";
	fault_vfs.xOpen = f_open;
	fault_vfs.xDelete = f_delete;
	fault_vfs.xAccess = f_access;
	fault_vfs.xFullPathname = f_fullpath;
	fault_vfs.xRandomness = f_random;
	fault_vfs.xSleep = f_sleep;
	fault_vfs.xCurrentTime = f_time;
	fault_vfs.xGetLastError = f_lasterr;
	fault_vfs.xCurrentTimeInt64 = f_time64;
	/* The default from now on: the encrypting VFS wraps the default. */
	return sqlite3_vfs_register(&fault_vfs, 1) == SQLITE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	sqlite3_vfs_unregister(&fault_vfs);
	sfs_key_destroy(key);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void value_of(int i, unsigned char *v, size_t *n)
{
	*n = i % 10 == 0 ? 9000 : 300 + (size_t)i % 200;
	for (size_t j = 0; j < *n; j++)
		v[j] = (unsigned char)(i * 7 + j * 13);
}

static int put(sfs_store *s, int i)
{
	unsigned char v[9000];
	char k[16];
	size_t n;

	value_of(i, v, &n);
	snprintf(k, sizeof(k), "k%05d", i);
	return sfs_kv_put(s, sfs_str("f"), sfs_str("ns"), sfs_str(k),
	                  sfs_bytes(v, n));
}

/* Every key below n (except those in gaps[]) reads exactly; returns how
 * many reads failed with rc_allowed (0: none allowed). */
static int check_all(sfs_store *s, int n, int rc_allowed)
{
	unsigned char v[9000];
	int failed = 0;

	for (int i = 0; i < n; i++) {
		sfs_buf b = { 0 };
		char k[16];
		size_t len;
		int rc;

		snprintf(k, sizeof(k), "k%05d", i);
		rc = sfs_kv_get(s, sfs_str("f"), sfs_str("ns"), sfs_str(k), &b);
		if (rc && rc == rc_allowed) {
			failed++;
			continue;
		}
		if (rc)
			fail_msg("get %s: %s: %s", k, sfs_strerror(rc),
			         sfs_errdetail());
		value_of(i, v, &len);
		assert_int_equal(b.len, len);
		assert_memory_equal(b.ptr, v, len);
		sfs_buf_free(&b);
	}
	return failed;
}

static sfs_store *open_store(const char *path)
{
	sfs_open_opts o = { 0 };
	sfs_store *s = NULL;
	int rc;

	o.path = path;
	o.key = key;
	o.flags = SFS_OPEN_CREATE;
	rc = sfs_store_open(&o, &s);
	if (rc)
		fail_msg("open %s: %s", sfs_strerror(rc), sfs_errdetail());
	return s;
}

static void write_fault(int kind, long after)
{
	char path[128];
	sfs_store *s;
	int acked = 0, rc = SFS_OK, i;

	snprintf(path, sizeof(path), "%s/w%d.db", dir, ++seq);
	s = open_store(path);
	for (i = 0; i < 100; i++)
		assert_int_equal(put(s, i), SFS_OK);
	acked = i;
	F.ops = F_WRITE;
	F.kind = kind;
	F.fired = 0;
	F.countdown = after;
	for (; i < 3000; i++) {
		rc = put(s, i);
		if (rc)
			break;
		acked = i + 1;
	}
	F.countdown = -1;
	assert_true(F.fired > 0);
	if (kind == F_FULL)
		assert_int_equal(rc, SFS_FULL);
	else
		assert_int_equal(rc, SFS_IO);
	assert_true(sfs_errdetail()[0] != '\0');
	/* The same handle works again once the disk does. */
	rc = put(s, acked);
	if (rc == SFS_OK)
		acked++;
	sfs_store_close(s);

	s = open_store(path);
	if (sfs_store_verify(s, NULL, NULL) != SFS_OK)
		fail_msg("kind %d after %ld: verify: %s", kind, after,
		         sfs_errdetail());
	assert_int_equal(check_all(s, acked, 0), 0);
	sfs_store_close(s);
}

static void test_write_eio(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(F_EIO, n);
}

static void test_write_full(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(F_FULL, n);
}

static void test_write_torn(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(F_TORN, n);
}

/* A failing read is an I/O error, not "corrupt", never other bytes; the
 * next read works. */
static void test_read_eio(void **state)
{
	char path[128];
	sfs_store *s;
	(void)state;

	snprintf(path, sizeof(path), "%s/r.db", dir);
	s = open_store(path);
	for (int i = 0; i < 300; i++)
		assert_int_equal(put(s, i), SFS_OK);
	sfs_store_close(s);
	for (long n = 1; n <= 200; n = n * 2 + 1) {
		int failed;
		s = open_store(path);
		F.ops = F_READ;
		F.kind = F_EIO;
		F.fired = 0;
		F.countdown = n;
		failed = check_all(s, 300, SFS_IO);
		F.countdown = -1;
		if (F.fired)
			assert_true(failed <= 1);
		assert_int_equal(check_all(s, 300, 0), 0);
		sfs_store_close(s);
	}
}

static void test_sync_eio(void **state)
{
	char path[128];
	sfs_store *s;
	(void)state;

	snprintf(path, sizeof(path), "%s/y.db", dir);
	s = open_store(path);
	assert_int_equal(put(s, 0), SFS_OK);
	F.ops = F_SYNC;
	F.kind = F_EIO;
	F.countdown = 1;
	assert_int_equal(sfs_store_sync(s), SFS_IO);
	F.countdown = -1;
	assert_int_equal(sfs_store_sync(s), SFS_OK);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_eio),
		cmocka_unit_test(test_write_full),
		cmocka_unit_test(test_write_torn),
		cmocka_unit_test(test_read_eio),
		cmocka_unit_test(test_sync_eio),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
