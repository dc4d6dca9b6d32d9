/*
 * plainvfs.c - the files of statefs-plain, the VFS of plaintext stores
 * (crypt_plain_vfs, registered in vfs.c): SQLite's default VFS with every
 * call forwarded, and the check that refuses a connection's first lock on
 * a main file renamed over since it was opened.
 *
 * A plaintext store has no cipher to run, but the rekey that encrypts it
 * (or a restore) renames a new file over it, and a connection that opened
 * the old one before and takes its first lock after would write into the
 * file renamed away (docs/encryption.md, "Keeps everyone out"). The
 * encrypting VFS's cv_lock refuses that lock; pf_lock does the same here.
 */
#include <string.h>
#include <sys/stat.h>

#include "sqlite_i.h"
#include "vfs_i.h"

typedef struct pfile {
	sqlite3_file base;
	sqlite3_file *real;        /* right after this struct */
	const char *zname;
	int main;                  /* the main database file */
	dev_t dev;                 /* the file opened (crypt_replaced_since) */
	ino_t ino;
} pfile;

#define PREAL(pf) (((pfile *)(pf))->real)

static int pf_close(sqlite3_file *pf)
{
	return PREAL(pf)->pMethods->xClose(PREAL(pf));
}

static int pf_read(sqlite3_file *pf, void *buf, int n, sqlite3_int64 off)
{
	return PREAL(pf)->pMethods->xRead(PREAL(pf), buf, n, off);
}

static int pf_write(sqlite3_file *pf, const void *buf, int n,
                    sqlite3_int64 off)
{
	return PREAL(pf)->pMethods->xWrite(PREAL(pf), buf, n, off);
}

static int pf_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
	return PREAL(pf)->pMethods->xTruncate(PREAL(pf), size);
}

static int pf_sync(sqlite3_file *pf, int flags)
{
	return PREAL(pf)->pMethods->xSync(PREAL(pf), flags);
}

static int pf_file_size(sqlite3_file *pf, sqlite3_int64 *size)
{
	return PREAL(pf)->pMethods->xFileSize(PREAL(pf), size);
}

static int pf_lock(sqlite3_file *pf, int lock)
{
	pfile *f = (pfile *)pf;
	int rc;

	if (lock == SQLITE_LOCK_SHARED)
		crypt_clear_error();
	rc = f->real->pMethods->xLock(f->real, lock);
	if (rc == SQLITE_OK && lock == SQLITE_LOCK_SHARED && f->main &&
	    crypt_replaced_since(f->zname, f->dev, f->ino))
		return crypt_refuse_replaced(f->real, f->zname);
	return rc;
}

static int pf_unlock(sqlite3_file *pf, int lock)
{
	return PREAL(pf)->pMethods->xUnlock(PREAL(pf), lock);
}

static int pf_check_reserved(sqlite3_file *pf, int *out)
{
	return PREAL(pf)->pMethods->xCheckReservedLock(PREAL(pf), out);
}

static int pf_file_control(sqlite3_file *pf, int op, void *arg)
{
	return PREAL(pf)->pMethods->xFileControl(PREAL(pf), op, arg);
}

static int pf_sector_size(sqlite3_file *pf)
{
	return PREAL(pf)->pMethods->xSectorSize(PREAL(pf));
}

static int pf_device_characteristics(sqlite3_file *pf)
{
	return PREAL(pf)->pMethods->xDeviceCharacteristics(PREAL(pf));
}

static int pf_shm_map(sqlite3_file *pf, int region, int size, int extend,
                      void volatile **out)
{
	return PREAL(pf)->pMethods->xShmMap(PREAL(pf), region, size, extend,
	                                    out);
}

static int pf_shm_lock(sqlite3_file *pf, int off, int n, int flags)
{
	pfile *f = (pfile *)pf;
	int rc = f->main ? crypt_refuse_moved(f->zname, f->dev, f->ino, off,
	                                      n, flags)
	                 : SQLITE_OK;

	if (rc)
		return rc;
	return PREAL(pf)->pMethods->xShmLock(PREAL(pf), off, n, flags);
}

static void pf_shm_barrier(sqlite3_file *pf)
{
	PREAL(pf)->pMethods->xShmBarrier(PREAL(pf));
}

static int pf_shm_unmap(sqlite3_file *pf, int del)
{
	return PREAL(pf)->pMethods->xShmUnmap(PREAL(pf), del);
}

/* Memory-mapped reads where the default VFS has them: a fetch it cannot
 * serve gives no pointer, and SQLite reads instead. */
static int pf_fetch(sqlite3_file *pf, sqlite3_int64 off, int n, void **pp)
{
	const sqlite3_io_methods *m = PREAL(pf)->pMethods;

	if (m->iVersion < 3) {
		*pp = NULL;
		return SQLITE_OK;
	}
	return m->xFetch(PREAL(pf), off, n, pp);
}

static int pf_unfetch(sqlite3_file *pf, sqlite3_int64 off, void *p)
{
	const sqlite3_io_methods *m = PREAL(pf)->pMethods;

	return m->iVersion < 3 ? SQLITE_OK : m->xUnfetch(PREAL(pf), off, p);
}

static const sqlite3_io_methods pf_methods = {
	.iVersion = 3,
	.xClose = pf_close,
	.xRead = pf_read,
	.xWrite = pf_write,
	.xTruncate = pf_truncate,
	.xSync = pf_sync,
	.xFileSize = pf_file_size,
	.xLock = pf_lock,
	.xUnlock = pf_unlock,
	.xCheckReservedLock = pf_check_reserved,
	.xFileControl = pf_file_control,
	.xSectorSize = pf_sector_size,
	.xDeviceCharacteristics = pf_device_characteristics,
	.xShmMap = pf_shm_map,
	.xShmLock = pf_shm_lock,
	.xShmBarrier = pf_shm_barrier,
	.xShmUnmap = pf_shm_unmap,
	.xFetch = pf_fetch,
	.xUnfetch = pf_unfetch,
};

size_t crypt_plain_file_size(void)
{
	return sizeof(pfile);
}

int crypt_plain_open(sqlite3_vfs *real, const char *zname, sqlite3_file *pf,
                     int flags, int *out_flags)
{
	pfile *f = (pfile *)pf;
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->zname = zname;
	f->main = zname && (flags & SQLITE_OPEN_MAIN_DB);
	if (f->main && stat(zname, &st) == 0) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
	}
	rc = real->xOpen(real, zname, f->real, flags, out_flags);
	if (rc) {
		f->real->pMethods = NULL;
		return rc;
	}
	if (f->main && !f->ino && stat(zname, &st) == 0) {
		f->dev = st.st_dev; /* made by this open */
		f->ino = st.st_ino;
	}
	f->base.pMethods = &pf_methods;
	return SQLITE_OK;
}
