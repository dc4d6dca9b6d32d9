/*
 * pagecount.c - a pass-through SQLite VFS that counts pages (pagecount.h).
 *
 * Each file is the real VFS's file behind a small header; every method
 * forwards. A read or write of at least PC_MIN bytes is one page (SQLite
 * moves pages whole; WAL frame headers, the database header and locks are
 * smaller).
 */
#include <string.h>

#include <sqlite3.h>

#include "pagecount.h"

#define PC_MIN 1024

enum { K_DB, K_WAL, K_OTHER };

typedef struct pc_file {
	sqlite3_file base;
	int kind;
	sqlite3_file *real;     /* right behind this struct */
} pc_file;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs pc_vfs;
static uint64_t n_read[3], n_written[3], n_syncs;

static void bump(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

#define REAL(f) (((pc_file *)(f))->real)

static int pc_close(sqlite3_file *f)
{
	int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f))
	                           : SQLITE_OK;

	f->pMethods = NULL;
	return rc;
}

static int pc_read(sqlite3_file *f, void *p, int amt, sqlite3_int64 off)
{
	if (amt >= PC_MIN)
		bump(&n_read[((pc_file *)f)->kind]);
	return REAL(f)->pMethods->xRead(REAL(f), p, amt, off);
}

static int pc_write(sqlite3_file *f, const void *p, int amt,
                    sqlite3_int64 off)
{
	if (amt >= PC_MIN)
		bump(&n_written[((pc_file *)f)->kind]);
	return REAL(f)->pMethods->xWrite(REAL(f), p, amt, off);
}

static int pc_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int pc_sync(sqlite3_file *f, int flags)
{
	bump(&n_syncs);
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int pc_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int pc_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}

static int pc_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}

static int pc_check(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int pc_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int pc_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int pc_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int pc_shm_map(sqlite3_file *f, int pg, int pgsz, int extend,
                      void volatile **pp)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, pgsz, extend, pp);
}

static int pc_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void pc_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int pc_shm_unmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

/* Version 2: no xFetch, so SQLite never maps a file we would not see. */
static const sqlite3_io_methods pc_io = {
	2, pc_close, pc_read, pc_write, pc_truncate, pc_sync, pc_size,
	pc_lock, pc_unlock, pc_check, pc_fcntl, pc_sector, pc_devchar,
	pc_shm_map, pc_shm_lock, pc_shm_barrier, pc_shm_unmap, NULL, NULL,
};

static int pc_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f,
                   int flags, int *out_flags)
{
	pc_file *p = (pc_file *)f;
	int rc;

	(void)vfs;
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)(p + 1);
	p->kind = (flags & SQLITE_OPEN_MAIN_DB) ? K_DB
	          : (flags & SQLITE_OPEN_WAL) ? K_WAL : K_OTHER;
	rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out_flags);
	if (p->real->pMethods)
		f->pMethods = &pc_io;
	return rc;
}

static int pc_delete(sqlite3_vfs *v, const char *name, int sync)
{
	(void)v;
	return real_vfs->xDelete(real_vfs, name, sync);
}

static int pc_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
	(void)v;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int pc_fullpath(sqlite3_vfs *v, const char *name, int n, char *out)
{
	(void)v;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *pc_dlopen(sqlite3_vfs *v, const char *name)
{
	(void)v;
	return real_vfs->xDlOpen(real_vfs, name);
}

static void pc_dlerror(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	real_vfs->xDlError(real_vfs, n, out);
}

static void (*pc_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
	(void)v;
	return real_vfs->xDlSym(real_vfs, h, sym);
}

static void pc_dlclose(sqlite3_vfs *v, void *h)
{
	(void)v;
	real_vfs->xDlClose(real_vfs, h);
}

static int pc_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int pc_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real_vfs->xSleep(real_vfs, us);
}

static int pc_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int pc_lasterr(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xGetLastError(real_vfs, n, out);
}

static int pc_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

int pc_install(void)
{
	if (real_vfs)
		return 0;
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs || real_vfs->iVersion < 2)
		return -1;
	pc_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(pc_file) + real_vfs->szOsFile,
		.mxPathname = real_vfs->mxPathname,
		.zName = "statefs-pagecount",
		.xOpen = pc_open, .xDelete = pc_delete, .xAccess = pc_access,
		.xFullPathname = pc_fullpath, .xDlOpen = pc_dlopen,
		.xDlError = pc_dlerror, .xDlSym = pc_dlsym,
		.xDlClose = pc_dlclose, .xRandomness = pc_random,
		.xSleep = pc_sleep, .xCurrentTime = pc_time,
		.xGetLastError = pc_lasterr, .xCurrentTimeInt64 = pc_time64,
	};
	if (sqlite3_vfs_register(&pc_vfs, 1) != SQLITE_OK) {
		real_vfs = NULL;
		return -1;
	}
	return 0;
}

static uint64_t get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void pc_get(pc_counts *out)
{
	out->db_read = get(&n_read[K_DB]);
	out->db_written = get(&n_written[K_DB]);
	out->wal_read = get(&n_read[K_WAL]);
	out->wal_written = get(&n_written[K_WAL]);
	out->syncs = get(&n_syncs);
}

pc_counts pc_diff(const pc_counts *b, const pc_counts *a)
{
	pc_counts d = {
		b->db_read - a->db_read, b->db_written - a->db_written,
		b->wal_read - a->wal_read, b->wal_written - a->wal_written,
		b->syncs - a->syncs,
	};

	return d;
}
