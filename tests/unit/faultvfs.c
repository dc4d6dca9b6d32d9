/*
 * faultvfs.c - the fault-injecting VFS of the unit tests (see faultvfs.h).
 *
 * A shim in the manner of SQLite's test_demovfs.c: each file is the shim's
 * sqlite3_file followed by the wrapped VFS's, and every method but xRead,
 * xWrite and xSync is passed straight down. Those three ask fault() first.
 */
#include <string.h>

#include <sqlite3.h>

#include "faultvfs.h"

static struct {
	int ops;          /* FAULT_READ | FAULT_WRITE | FAULT_SYNC armed */
	fault_kind kind;
	long countdown;   /* the call that makes it 0 fails; < 0 disarmed */
	int fired;        /* failures since the last arm */
} F = { 0, FAULT_EIO, -1, 0 };

static sqlite3_vfs *real_vfs;   /* the default when registered */
static sqlite3_vfs fault_vfs;

/* WAL writes by size since faultvfs_count_reset: a few sizes occur
 * (header, frame header, page, frame, a torn write's half). */
#define NSIZES 16
static struct {
	int amt[NSIZES];
	long n[NSIZES];
} W;

typedef struct ffile {
	sqlite3_file base;
	sqlite3_file *real;    /* follows this struct */
	int wal;               /* opened as a WAL */
} ffile;

#define REAL(pf) (((ffile *)(pf))->real)

void faultvfs_arm(int ops, fault_kind kind, long nth)
{
	F.ops = ops;
	F.kind = kind;
	F.fired = 0;
	F.countdown = nth;
}

void faultvfs_disarm(void)
{
	F.countdown = -1;
}

int faultvfs_fired(void)
{
	return F.fired;
}

void faultvfs_count_reset(void)
{
	memset(&W, 0, sizeof(W));
}

long faultvfs_wal_writes(int amt)
{
	for (int i = 0; i < NSIZES && W.amt[i]; i++)
		if (W.amt[i] == amt)
			return W.n[i];
	return 0;
}

static void count_write(int amt)
{
	int i;

	for (i = 0; i < NSIZES && W.amt[i] && W.amt[i] != amt; i++)
		;
	if (i == NSIZES)
		return;
	W.amt[i] = amt;
	W.n[i]++;
}

/* 0: go ahead; else the SQLite error the call returns (ioerr, the
 * operation's own I/O error, unless the disk is full). */
static int fault(int op, int ioerr)
{
	if (!(F.ops & op) || F.countdown < 0)
		return 0;
	if (F.countdown > 0) {
		F.countdown--;
		if (F.countdown > 0)
			return 0;
	}
	/* countdown == 0: this call fails, and so does every later one
	 * while it stays 0 (a full disk stays full). */
	F.fired++;
	if (F.kind == FAULT_EIO || F.kind == FAULT_TORN ||
	    F.kind == FAULT_FULL_ONCE)
		F.countdown = -1;
	return (F.kind == FAULT_FULL || F.kind == FAULT_FULL_ONCE) &&
	               op == FAULT_WRITE ? SQLITE_FULL : ioerr;
}

static int f_close(sqlite3_file *pf)
{
	return REAL(pf)->pMethods->xClose(REAL(pf));
}

static int f_read(sqlite3_file *pf, void *b, int n, sqlite3_int64 o)
{
	int rc = fault(FAULT_READ, SQLITE_IOERR_READ);

	return rc ? rc : REAL(pf)->pMethods->xRead(REAL(pf), b, n, o);
}

static int f_write(sqlite3_file *pf, const void *b, int n, sqlite3_int64 o)
{
	fault_kind kind = F.kind;
	int rc = fault(FAULT_WRITE, SQLITE_IOERR_WRITE);

	if (((ffile *)pf)->wal)
		count_write(n);

	if (rc && kind == FAULT_TORN && n > 1)
		REAL(pf)->pMethods->xWrite(REAL(pf), b, n / 2, o);
	return rc ? rc : REAL(pf)->pMethods->xWrite(REAL(pf), b, n, o);
}

static int f_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
	return REAL(pf)->pMethods->xTruncate(REAL(pf), size);
}

static int f_sync(sqlite3_file *pf, int flags)
{
	int rc = fault(FAULT_SYNC, SQLITE_IOERR_FSYNC);

	return rc ? rc : REAL(pf)->pMethods->xSync(REAL(pf), flags);
}

static int f_size(sqlite3_file *pf, sqlite3_int64 *out)
{
	return REAL(pf)->pMethods->xFileSize(REAL(pf), out);
}

static void (*busy_fn)(void *);
static void *busy_ctx;

void faultvfs_on_busy(void (*fn)(void *), void *ctx)
{
	busy_fn = fn;
	busy_ctx = ctx;
}

static int f_lock(sqlite3_file *pf, int l)
{
	int rc = REAL(pf)->pMethods->xLock(REAL(pf), l);
	void (*fn)(void *) = busy_fn;

	if (rc == SQLITE_BUSY && fn) {
		busy_fn = NULL; /* once */
		fn(busy_ctx);
	}
	return rc;
}

static void (*unlock_fn)(void *);
static void *unlock_ctx;

void faultvfs_on_unlock(void (*fn)(void *), void *ctx)
{
	unlock_fn = fn;
	unlock_ctx = ctx;
}

static int f_unlock(sqlite3_file *pf, int l)
{
	int rc = REAL(pf)->pMethods->xUnlock(REAL(pf), l);
	void (*fn)(void *) = unlock_fn;
	sqlite3_int64 size = 0;

	if (rc == SQLITE_OK && l == SQLITE_LOCK_NONE && fn &&
	    REAL(pf)->pMethods->xFileSize(REAL(pf), &size) == SQLITE_OK &&
	    size > 0) {
		unlock_fn = NULL; /* once */
		fn(unlock_ctx);
	}
	return rc;
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

static int f_shm_map(sqlite3_file *pf, int pg, int sz, int ext,
                     void volatile **pp)
{
	return REAL(pf)->pMethods->xShmMap(REAL(pf), pg, sz, ext, pp);
}

static int f_shm_lock(sqlite3_file *pf, int off, int n, int flags)
{
	return REAL(pf)->pMethods->xShmLock(REAL(pf), off, n, flags);
}

static void f_shm_barrier(sqlite3_file *pf)
{
	REAL(pf)->pMethods->xShmBarrier(REAL(pf));
}

static int f_shm_unmap(sqlite3_file *pf, int del)
{
	return REAL(pf)->pMethods->xShmUnmap(REAL(pf), del);
}

/* Version 2: no xFetch, so every page goes through xRead/xWrite. */
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
	f->wal = !!(flags & SQLITE_OPEN_WAL);
	rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out);
	f->base.pMethods = rc == SQLITE_OK && f->real->pMethods ? &f_methods
	                                                        : NULL;
	return rc;
}

static int f_delete(sqlite3_vfs *v, const char *z, int sync)
{
	(void)v;
	return real_vfs->xDelete(real_vfs, z, sync);
}

static int f_access(sqlite3_vfs *v, const char *z, int flags, int *out)
{
	(void)v;
	return real_vfs->xAccess(real_vfs, z, flags, out);
}

static int f_fullpath(sqlite3_vfs *v, const char *z, int n, char *out)
{
	(void)v;
	return real_vfs->xFullPathname(real_vfs, z, n, out);
}

static int f_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int f_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real_vfs->xSleep(real_vfs, us);
}

static int f_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int f_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static int f_lasterr(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n,
	                                                         out)
	                               : 0;
}

int faultvfs_register(void)
{
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs)
		return -1;
	memset(&fault_vfs, 0, sizeof(fault_vfs));
	fault_vfs.iVersion = 2;
	fault_vfs.szOsFile = (int)sizeof(ffile) + real_vfs->szOsFile;
	fault_vfs.mxPathname = real_vfs->mxPathname;
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
	faultvfs_disarm();
	return sqlite3_vfs_register(&fault_vfs, 1) == SQLITE_OK ? 0 : -1;
}

void faultvfs_unregister(void)
{
	sqlite3_vfs_unregister(&fault_vfs);
}
