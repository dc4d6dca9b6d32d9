/*
 * vfs.c - the page-encrypting SQLite VFS shim.
 *
 * A VFS instance wraps the default VFS ("unix") and holds one key; every
 * database file, WAL and rollback journal opened through it is encrypted
 * page by page (crypt/page.c). It works with the stock libsqlite3: SQLite
 * never knows, except that it keeps 48 reserved bytes at the end of each
 * page (crypt_db_setup) which the shim fills with nonce, tag and trailer on
 * the way down and gives back as zeros on the way up.
 *
 * The rules it follows are numbered in docs/encryption.md; the ones that
 * make or break it:
 *  - SQLite reads back exactly the bytes it wrote (reserve zero), or its
 *    WAL checksums fail after a crash and acknowledged commits vanish.
 *  - WAL page writes often come without their frame header (in-place
 *    overwrite): the header is then read back from the file.
 *  - A frame header SQLite appends is held back and written with its page
 *    as one write (wal_write); any other call on the WAL, or on its main
 *    file, writes a held header first.
 *  - Only frame header bytes 0-7 are stable; salts and checksums are not
 *    bound into the page.
 *  - Temporary files are refused (temp_store=MEMORY keeps SQLite from
 *    asking); io_methods version 2 has no xFetch, so nothing is mmap'd.
 *  - No holes: a write past the end or a truncate that grows the file fills
 *    the gap with encrypted zero pages, so a zero page on disk is an error.
 *
 * What it deliberately leaves out: other page layouts than the one in
 * crypt/page_i.h, rollback-journal hardening beyond SQLite's own checksums
 * (statefs stores run in WAL mode), and any cache: each page operation is
 * one pread/pwrite plus one AEAD call.
 *
 * Threads: SQLite calls one file handle from one thread at a time (the
 * connection's mutex), and a connection's WAL and journal reach the main
 * file's keys under that same mutex. The list of open main files is shared
 * by all connections of the VFS and guarded by crypt_vfs.mu.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>
#include <sqlite3.h>

#include "crypt/page_i.h"
#include "wal_i.h"
#include "vfs_i.h"
#include "err_i.h"

#include "vfs_file_i.h"

/* ---- the message left for the SQL layer ---- */

static _Thread_local char last_error[512];

const char *crypt_last_error(void)
{
	return last_error[0] ? last_error : NULL;
}

void crypt_clear_error(void)
{
	last_error[0] = '\0';
}

int cv_fail(int sqlite_rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	sqlite3_log(sqlite_rc, "statefs-crypt: %s", last_error);
	sfs_log(LOG_ERR, "%s", last_error);
	return sqlite_rc;
}

/* ---- keys of a main file ---- */

int cf_buf(cfile *f, size_t need)
{
	if (f->bufsz >= need)
		return SQLITE_OK;
	if (f->buf) {
		sodium_memzero(f->buf, f->bufsz);
		free(f->buf);
	}
	f->buf = malloc(need);
	f->bufsz = f->buf ? need : 0;
	return f->buf ? SQLITE_OK : SQLITE_NOMEM;
}

/* Derives m->fk for salt and kdf; a key of the wrong type is "wrong key". */
static int main_derive(cfile *m, const unsigned char *salt, int kdf)
{
	int rc;

	if (!m->fk && !(m->fk = cp_filekey_new()))
		return SQLITE_NOMEM;
	rc = cp_derive(m->vfs->key, salt, kdf, m->fk);
	if (rc == SFS_WRONGKEY)
		return cv_fail(SQLITE_IOERR_DATA, "wrong key for %s (%s)", m->zname,
		            kdf == CRYPT_KDF_RAW ?
		            "it was created with a raw key, not a passphrase" :
		            "it was created with a passphrase, not a raw key");
	if (rc)
		return cv_fail(SQLITE_NOMEM, "%s", sfs_errdetail());
	return SQLITE_OK;
}

/* Reads the clear start of page 1 from disk. *have is 0 for an empty file.
 * Refuses a plaintext or foreign file with a sentence. */
static int main_read_head(cfile *m, unsigned char hdr[24], unsigned char
                          trailer[8], int *have)
{
	sqlite3_int64 size;
	uint32_t P;
	int rc;

	*have = 0;
	rc = m->real->pMethods->xFileSize(m->real, &size);
	if (rc)
		return rc;
	if (size == 0)
		return SQLITE_OK;
	rc = m->real->pMethods->xRead(m->real, hdr, 24, 0);
	if (rc == SQLITE_IOERR_SHORT_READ)
		return cv_fail(SQLITE_IOERR_DATA, "%s: page 1 is incomplete "
		            "(%lld bytes)", m->zname, (long long)size);
	if (rc)
		return rc;
	if (memcmp(hdr, "SQLite format 3", 16) == 0)
		return cv_fail(SQLITE_NOTADB, "%s is not encrypted", m->zname);
	if (!cp_is_encrypted_header(hdr))
		return cv_fail(SQLITE_NOTADB, "%s is not an encrypted statefs "
		            "file", m->zname);
	P = cp_page_size(hdr);
	if (size < P)
		return cv_fail(SQLITE_IOERR_DATA, "%s: page 1 is incomplete "
		            "(%lld bytes)", m->zname, (long long)size);
	rc = m->real->pMethods->xRead(m->real, trailer, 8, P - 8);
	if (rc)
		return rc == SQLITE_IOERR_SHORT_READ ? SQLITE_IOERR_DATA : rc;
	/* The format byte is checked when page 1 is opened, which tells
	 * another format from a damaged byte. */
	*have = 1;
	return SQLITE_OK;
}

/* Makes the main file's keys usable. A new (empty) file gets a provisional
 * random salt; it becomes final when page 1 is written, unless another
 * process wrote page 1 first, in which case its salt is adopted. */
int main_ready(cfile *m)
{
	unsigned char hdr[24], trailer[8], salt[CRYPT_SALT_BYTES];
	int rc, have;

	if (m->salt == SALT_KNOWN)
		return SQLITE_OK;
	rc = main_read_head(m, hdr, trailer, &have);
	if (rc)
		return rc;
	if (have) {
		/* A raw key ignores the kdf byte, so a damaged kdf byte reads
		 * as a damaged page 1, not as "wrong key". Whether the key is
		 * right shows when page 1 is opened. */
		rc = main_derive(m, hdr,
		                 crypt_key_is_passphrase(m->vfs->key) ?
		                 trailer[1] : CRYPT_KDF_RAW);
		if (rc)
			return rc;
		m->P = cp_page_size(hdr);
		m->salt = SALT_KNOWN;
		return SQLITE_OK;
	}
	if (m->salt == SALT_NONE) {
		randombytes_buf(salt, sizeof(salt));
		rc = main_derive(m, salt, crypt_key_kdf(m->vfs->key));
		sodium_memzero(salt, sizeof(salt));
		if (rc)
			return rc;
		m->salt = SALT_PROVISIONAL;
	}
	return SQLITE_OK;
}

/* ---- main database file ---- */

static int db_page_error(cfile *f, uint32_t pgno, int r)
{
	if (pgno == 1 && r == CP_OTHERKEY)
		return cv_fail(SQLITE_IOERR_DATA, "wrong key for %s (page 1 was "
		            "encrypted under a different key)", f->zname);
	if (pgno == 1 && r == CP_BADFMT)
		return cv_fail(SQLITE_IOERR_DATA, "%s uses another encryption "
		            "format than %d (a newer statefs wrote it?)",
		            f->zname, CRYPT_FORMAT);
	return cv_fail(SQLITE_IOERR_DATA, "page %u of %s %s", pgno, f->zname,
	            cp_reason(r));
}

/* SQLite's in-header size of page 1 (bytes 28-31): 0 when it is not
 * valid (the change counter at 24 differs from the version-valid-for at
 * 92). */
uint32_t crypt_p1_pages(const unsigned char *p1)
{
	return memcmp(p1 + 24, p1 + 92, 4) == 0 ? cp_get32(p1 + 28) : 0;
}

/*
 * Truncation. The pages of a database file SQLite has written are all
 * there, as far as the size page 1 of the file records: a checkpoint
 * writes page 1 and the pages it counts, or grows the file to hold them
 * (xTruncate); a commit in rollback mode writes the last page. The one
 * page SQLite never writes is one freed in the transaction that took it
 * from the end of the file (with secure_delete off), and db_run_end
 * fills those. So a page within that size that the file does not hold
 * was cut off, by someone holding the file. Before these checks it read
 * as zeros without an error whenever the WAL held the store's size (a
 * truncated file without a WAL SQLite refuses itself): the end of a
 * long value read as zeros, and the next checkpoint sealed zero pages in
 * the gap (db_fill), after which even verify passed.
 */

/* The size page 1 of the file (not of the WAL) records, into *out; 0 for
 * a file without a whole page 1. Page 1 is read and opened into a buffer
 * of its own (the caller's may be f->buf), wiped afterwards. */
static int db_header_pages(cfile *f, uint32_t *out)
{
	uint32_t P = f->P;
	unsigned char *p1;
	int rc, r;

	*out = 0;
	p1 = malloc(P);
	if (!p1)
		return SQLITE_NOMEM;
	rc = f->real->pMethods->xRead(f->real, p1, (int)P, 0);
	if (rc == SQLITE_IOERR_SHORT_READ)
		rc = SQLITE_OK; /* *out stays 0 */
	else if (rc == SQLITE_OK && (r = cp_open(f->fk, CP_DB, 1, NULL, p1,
	                                         P)) != CP_OK)
		rc = db_page_error(f, 1, r);
	else if (rc == SQLITE_OK)
		*out = crypt_p1_pages(p1);
	sodium_memzero(p1, P);
	free(p1);
	return rc;
}

/* The pages the file must hold: what page 1 recorded before the current
 * run rewrote it, else what it records. */
static int db_floor(cfile *f, uint32_t *out)
{
	if (f->p1_run) {
		*out = f->p1_floor;
		return SQLITE_OK;
	}
	return db_header_pages(f, out);
}

static int db_truncated(cfile *f, uint32_t pgno, uint32_t pages)
{
	return cv_fail(SQLITE_IOERR_DATA, "page %u of %s is missing: the file "
	            "ends before it, and its page 1 counts %u pages (the file "
	            "was truncated)", pgno, f->zname, pages);
}

/* Reads and opens page pgno into dst (P bytes). SQLITE_IOERR_SHORT_READ
 * with dst zeroed when the page lies beyond the end of the file and
 * beyond the size page 1 records: a page SQLite never wrote. Within that
 * size the file was truncated (above). */
static int db_read_page(cfile *f, uint32_t pgno, unsigned char *dst)
{
	uint32_t P = f->P, floor;
	int rc, r;

	rc = f->real->pMethods->xRead(f->real, dst, (int)P,
	                              (sqlite3_int64)(pgno - 1) * P);
	if (rc == SQLITE_IOERR_SHORT_READ) {
		if (cp_all_zero(dst, P)) {
			if (pgno == 1)
				return rc;
			r = db_floor(f, &floor);
			if (r)
				return r;
			return pgno <= floor ? db_truncated(f, pgno, floor) : rc;
		}
		memset(dst, 0, P);
		return cv_fail(SQLITE_IOERR_DATA, "page %u of %s is incomplete "
		            "(the file ends inside it)", pgno, f->zname);
	}
	if (rc)
		return rc;
	r = cp_open(f->fk, CP_DB, pgno, NULL, dst, P);
	if (r) {
		memset(dst, 0, P);
		return db_page_error(f, pgno, r);
	}
	return SQLITE_OK;
}

static int db_read_at(cfile *f, void *out, int amt, sqlite3_int64 off)
{
	unsigned char *o = out;
	uint32_t P;
	int rc;

	rc = main_ready(f);
	if (rc)
		return rc;
	if (f->salt != SALT_KNOWN) {
		/* Empty file: nothing to decrypt, SQLite expects zeros. */
		memset(out, 0, (size_t)amt);
		return SQLITE_IOERR_SHORT_READ;
	}
	P = f->P;
	if ((uint32_t)amt == P && off % P == 0)
		return db_read_page(f, (uint32_t)(off / P) + 1, o);

	/* A slice (the 100-byte header, the 16 bytes at 24, or an overflow
	 * read in SQLite builds with DIRECT_OVERFLOW_READ): whole pages
	 * through the work buffer. */
	rc = cf_buf(f, P);
	if (rc)
		return rc;
	while (amt > 0) {
		uint32_t pgno = (uint32_t)(off / P) + 1;
		size_t in = (size_t)(off % P);
		size_t n = P - in < (size_t)amt ? P - in : (size_t)amt;

		rc = db_read_page(f, pgno, f->buf);
		if (rc) {
			memset(o, 0, (size_t)amt);
			return rc;
		}
		memcpy(o, f->buf + in, n);
		o += n;
		off += (sqlite3_int64)n;
		amt -= (int)n;
	}
	return SQLITE_OK;
}

/* SQLite reads the first 100 bytes of a database as it opens it, before
 * any statement and so before anyone could check the key (the engine's
 * preflight runs earlier, the extension's just after: ext.c). When
 * page 1 cannot be opened there (wrong key, not encrypted, another format,
 * damage), that one read answers as for an empty file (zeros, short read),
 * so that the open completes and the check can say why in a sentence; the
 * VFS's message stays in crypt_last_error. Every later read of page 1
 * fails as before: nothing is read or written past it. */
#define DB_HEADER_BYTES 100

static int db_read(cfile *f, void *out, int amt, sqlite3_int64 off)
{
	int rc = db_read_at(f, out, amt, off);

	if (off == 0 && amt <= DB_HEADER_BYTES &&
	    (rc == SQLITE_IOERR_DATA || rc == SQLITE_NOTADB)) {
		memset(out, 0, (size_t)amt);
		return SQLITE_IOERR_SHORT_READ;
	}
	return rc;
}

/* Writes encrypted zero pages over [from, to) (page-aligned offsets):
 * pages SQLite never wrote. Refused when the first lies within the pages
 * the file must hold (db_floor): they were there and were cut off. */
static int db_fill(cfile *f, sqlite3_int64 from, sqlite3_int64 to)
{
	uint32_t P = f->P, floor;
	int rc;

	rc = db_floor(f, &floor);
	if (rc)
		return rc;
	if ((uint32_t)(from / P) + 1 <= floor)
		return db_truncated(f, (uint32_t)(from / P) + 1, floor);
	rc = cf_buf(f, P);
	if (rc)
		return rc;
	for (sqlite3_int64 o = from; o < to; o += P) {
		memset(f->buf, 0, P);
		cp_seal(f->fk, CP_DB, (uint32_t)(o / P) + 1, NULL, f->buf,
		        f->buf, P);
		rc = f->real->pMethods->xWrite(f->real, f->buf, (int)P, o);
		if (rc)
			return rc;
	}
	return SQLITE_OK;
}

static int db_write(cfile *f, const void *in, int amt, sqlite3_int64 off)
{
	const unsigned char *src = in;
	sqlite3_int64 size;
	uint32_t P = (uint32_t)amt, pgno;
	int rc;

	if (amt < CP_MIN_PAGE || amt > CP_MAX_PAGE || (amt & (amt - 1)) ||
	    off % amt)
		return cv_fail(SQLITE_IOERR_WRITE, "%s: refusing a write of %d "
		            "bytes at %lld (only whole pages are encrypted)",
		            f->zname, amt, (long long)off);
	pgno = (uint32_t)(off / P) + 1;
	if (pgno == 1) {
		if (memcmp(src, "SQLite format 3", 16) != 0 ||
		    cp_page_size(src) != P || src[20] != CP_RESERVE)
			return cv_fail(SQLITE_IOERR_WRITE, "%s: page 1 does not "
			            "reserve %d bytes per page (the connection "
			            "was not set up for encryption, or a plaintext "
			            "database is being copied in)", f->zname,
			            CP_RESERVE);
	}
	if (!cp_all_zero(src + P - CP_RESERVE, CP_RESERVE))
		return cv_fail(SQLITE_IOERR_WRITE, "%s: page %u has data in its "
		            "reserved bytes (a plaintext database copied in?)",
		            f->zname, pgno);
	rc = main_ready(f);
	if (rc)
		return rc;
	if (f->salt == SALT_PROVISIONAL) {
		/* The first write to an empty file (under SQLite's write
		 * lock): our salt becomes the file's. It need not be page 1:
		 * a cache spill (VACUUM INTO) writes pages in any order,
		 * and page 1 follows before the commit. */
		f->salt = SALT_KNOWN;
		f->P = P;
	}
	if (P != f->P)
		return cv_fail(SQLITE_IOERR_WRITE, "%s: page size %u, the file's "
		            "is %u", f->zname, P, f->P);
	rc = f->real->pMethods->xFileSize(f->real, &size);
	if (rc)
		return rc;
	if (pgno == 1) {
		/* The first rewrite of page 1 in a run: holes below what it
		 * counts now are cut off pages until the run ends (db_floor).
		 * The file may hold fewer now, and that is no error: a
		 * checkpoint or a commit killed after it wrote page 1 left
		 * its other pages in the WAL or the journal, and this run
		 * writes them (or rolls page 1 back). */
		if (!f->p1_run) {
			rc = db_header_pages(f, &f->p1_floor);
			if (rc)
				return rc;
			f->p1_run = 1;
		}
		f->p1_size = crypt_p1_pages(src);
		/* A checkpoint grows the file to what page 1 will count
		 * before it writes page 1: one that fails later (a full disk)
		 * or is killed has no rollback, and its page 1 must not count
		 * pages the file lacks, or the pages SQLite never wrote
		 * (below) would read as cut off. The pages it copies next
		 * overwrite these zeros: growth costs two writes a page in a
		 * checkpoint (off the commit path), none in a commit. */
		if (f->in_ckpt &&
		    (sqlite3_int64)f->p1_size * P > size && size >= P) {
			rc = db_fill(f, size / P * P,
			             (sqlite3_int64)f->p1_size * P);
			if (rc)
				return rc;
		}
	}
	if (off > size) {
		rc = db_fill(f, size / P * P, off);
		if (rc)
			return rc;
	}
	rc = cf_buf(f, P);
	if (rc)
		return rc;
	cp_seal(f->fk, CP_DB, pgno, NULL, src, f->buf, P);
	return f->real->pMethods->xWrite(f->real, f->buf, amt, off);
}

static int db_truncate(cfile *f, sqlite3_int64 size)
{
	sqlite3_int64 cur;
	int rc;

	rc = f->real->pMethods->xFileSize(f->real, &cur);
	if (rc)
		return rc;
	if (size <= cur || f->salt != SALT_KNOWN) {
		/* SQLite's own truncate: the pages past it are gone. */
		if (f->P && f->p1_run && (sqlite3_int64)f->p1_floor * f->P > size)
			f->p1_floor = (uint32_t)(size / f->P);
		return f->real->pMethods->xTruncate(f->real, size);
	}
	/* A checkpoint may "truncate" the file to a larger size when its
	 * last pages were never written: fill them instead of leaving a
	 * hole of zeros. */
	if (size % f->P)
		return cv_fail(SQLITE_IOERR_TRUNCATE, "%s: growing to %lld bytes, "
		            "not a whole number of pages", f->zname,
		            (long long)size);
	return db_fill(f, cur / f->P * f->P, size);
}

/* The end of a run of writes (a checkpoint's copy, a sync, an unlock):
 * pages page 1 now counts that the file does not hold were never written
 * (freed in the transaction that took them from the end of the file);
 * they are filled, so that the file holds every page page 1 counts. */
static int db_run_end(cfile *f)
{
	sqlite3_int64 size, want;
	int rc;

	if (f->type != CF_DB || !f->p1_run)
		return SQLITE_OK;
	want = (sqlite3_int64)f->p1_size * f->P;
	rc = f->real->pMethods->xFileSize(f->real, &size);
	if (rc == SQLITE_OK && size < want)
		rc = db_fill(f, size / f->P * f->P, want);
	f->p1_run = 0;
	return rc;
}

/* ---- io methods ---- */

static int cv_close(sqlite3_file *pf)
{
	cfile *f = (cfile *)pf;
	int rc = f->real->pMethods ? cf_flush(f) : SQLITE_OK;
	int rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) :
	          SQLITE_OK;

	if (!rc)
		rc = rc2;
	if (f->type == CF_WAL && f->main && f->main->wal == f)
		f->main->wal = NULL;
	if (f->type == CF_DB) {
		pthread_mutex_lock(&f->vfs->mu);
		for (cfile **pp = &f->vfs->mains; *pp; pp = &(*pp)->next) {
			if (*pp == f) {
				*pp = f->next;
				break;
			}
		}
		pthread_mutex_unlock(&f->vfs->mu);
		cp_filekey_free(f->fk);
		f->fk = NULL;
	}
	if (f->buf) {
		sodium_memzero(f->buf, f->bufsz);
		free(f->buf);
		f->buf = NULL;
	}
	return rc;
}

static int cv_read(sqlite3_file *pf, void *out, int amt, sqlite3_int64 off)
{
	cfile *f = (cfile *)pf;
	int rc;

	switch (f->type) {
	case CF_DB:
		rc = cf_flush(f);
		return rc ? rc : db_read(f, out, amt, off);
	case CF_WAL:
		return wal_read(f, out, amt, off);
	case CF_JOURNAL:
		return journal_read(f, out, amt, off);
	default:
		return f->real->pMethods->xRead(f->real, out, amt, off);
	}
}

static int cv_write(sqlite3_file *pf, const void *in, int amt,
                    sqlite3_int64 off)
{
	cfile *f = (cfile *)pf;
	int rc;

	switch (f->type) {
	case CF_DB:
		rc = cf_flush(f);
		return rc ? rc : db_write(f, in, amt, off);
	case CF_WAL:
		return wal_write(f, in, amt, off);
	case CF_JOURNAL:
		return journal_write(f, in, amt, off);
	default:
		return f->real->pMethods->xWrite(f->real, in, amt, off);
	}
}

static int cv_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);

	if (rc)
		return rc;
	if (f->type == CF_DB)
		return db_truncate(f, size);
	if (f->type == CF_WAL && size == 0)
		f->walhdr_ok = 0;
	f->rec_next = 0;
	f->fhdr_off = -1;
	f->frame_rd = -1;
	f->jpg_off = -1;
	return f->real->pMethods->xTruncate(f->real, size);
}

static int cv_sync(sqlite3_file *pf, int flags)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);

	if (!rc)
		rc = db_run_end(f);
	return rc ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int cv_file_size(sqlite3_file *pf, sqlite3_int64 *size)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);
	return rc ? rc : f->real->pMethods->xFileSize(f->real, size);
}

int crypt_replaced_since(const char *zname, dev_t dev, ino_t ino)
{
	struct stat st;

	return stat(zname, &st) != 0 || st.st_dev != dev || st.st_ino != ino;
}

int crypt_refuse_replaced(sqlite3_file *real, const char *zname)
{
	real->pMethods->xUnlock(real, SQLITE_LOCK_NONE);
	return cv_fail(SQLITE_IOERR_LOCK, "%s was replaced (by a rekey or a "
	            "restore) after this connection opened it: open it again",
	            zname);
}

/*
 * A store removed, renamed, or replaced (`mv other.db state.db`, a
 * checkpoint put back by hand) under a process that has it open (the
 * daemon): the process goes on with the file it opened, as any process
 * would, and SQLite with the -wal it opened by name. So every commit from
 * then on was acknowledged and then lost: with the file once the process
 * closed the store, or left in a -wal that is no longer beside it
 * (through a mount, `echo v > k` succeeded and the value was gone after
 * the unmount, with nothing logged). A write now fails before it takes
 * the write lock, saying why: one stat(2) per write transaction.
 */
int crypt_refuse_moved(const char *zname, dev_t dev, ino_t ino, int offset,
                       int n, int flags)
{
	if (!ino || offset != 0 || n != 1 ||
	    flags != (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE) ||
	    !crypt_replaced_since(zname, dev, ino))
		return SQLITE_OK;
	return cv_fail(SQLITE_IOERR_LOCK, "%s is no longer the file this "
	            "process opened (removed, renamed or replaced): writes "
	            "would be lost; close the store (unmount) and open it "
	            "again", zname);
}

static int cv_lock(sqlite3_file *pf, int lock)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);

	if (rc)
		return rc;
	/* Rollback-journal mode's start of a transaction (see cv_shm_lock). */
	if (lock == SQLITE_LOCK_SHARED)
		crypt_clear_error();
	rc = f->real->pMethods->xLock(f->real, lock);
	/* A connection's first lock on its store (in WAL mode it keeps it):
	 * one that waited for a rekey's or restore's exclusive lock now
	 * holds the file that was renamed away, and what it wrote would be
	 * lost, or, through the WAL that SQLite opens by name, land in the
	 * new store. Refused before SQLite reads anything. */
	if (rc == SQLITE_OK && lock == SQLITE_LOCK_SHARED && f->type == CF_DB &&
	    crypt_replaced_since(f->zname, f->dev, f->ino))
		return crypt_refuse_replaced(f->real, f->zname);
	return rc;
}

/* Releases (an unlock, an unmap, like a close) happen even when a held
 * header fails to go down first; the first failure is returned. */
static int cv_unlock(sqlite3_file *pf, int lock)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);
	int rc2;

	if (!rc)
		rc = db_run_end(f);
	rc2 = f->real->pMethods->xUnlock(f->real, lock);

	return rc ? rc : rc2;
}

static int cv_check_reserved(sqlite3_file *pf, int *out)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);
	return rc ? rc : f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int cv_file_control(sqlite3_file *pf, int op, void *arg)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);

	if (rc)
		return rc;
	switch (op) {
	case SQLITE_FCNTL_MMAP_SIZE:
		/* Never map: the file holds ciphertext. */
		*(sqlite3_int64 *)arg = 0;
		return SQLITE_OK;
	case SQLITE_FCNTL_CHUNK_SIZE:
	case SQLITE_FCNTL_SIZE_HINT:
		/* Both would grow the file with unencrypted zeros. */
		return SQLITE_OK;
	case SQLITE_FCNTL_CKPT_START:
	case SQLITE_FCNTL_CKPT_DONE:
		/* A checkpoint's copy begins or ends: a run (db_floor). */
		if (f->type == CF_DB)
			f->in_ckpt = op == SQLITE_FCNTL_CKPT_START;
		rc = db_run_end(f);
		if (rc)
			return rc;
		return f->real->pMethods->xFileControl(f->real, op, arg);
	default:
		return f->real->pMethods->xFileControl(f->real, op, arg);
	}
}

static int cv_sector_size(sqlite3_file *pf)
{
	cfile *f = (cfile *)pf;
	return f->real->pMethods->xSectorSize(f->real);
}

static int cv_device_characteristics(sqlite3_file *pf)
{
	cfile *f = (cfile *)pf;

	/* Without POWERSAFE_OVERWRITE SQLite pads WAL commits to a sector
	 * and may write one page in two pieces. */
	return f->real->pMethods->xDeviceCharacteristics(f->real) |
	       SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

static int cv_shm_map(sqlite3_file *pf, int pg, int pgsz, int extend,
                      void volatile **pp)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);
	return rc ? rc : f->real->pMethods->xShmMap(f->real, pg, pgsz, extend,
	                                           pp);
}

static int cv_shm_lock(sqlite3_file *pf, int offset, int n, int flags)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);

	if (rc)
		return rc;

	/* A shared lock on the wal-index starts a read transaction: a new
	 * operation, so a message left by an earlier failure on this thread
	 * is stale. A failure inside the transaction (or in the recovery
	 * before this lock) sets it after this point. */
	if ((flags & SQLITE_SHM_LOCK) && (flags & SQLITE_SHM_SHARED))
		last_error[0] = '\0';
	rc = crypt_refuse_moved(f->zname, f->dev, f->ino, offset, n, flags);
	if (rc)
		return rc;
	return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void cv_shm_barrier(sqlite3_file *pf)
{
	cfile *f = (cfile *)pf;

	/* No failure to return here: the header stays held and the next
	 * call tries again and returns it. */
	(void)cf_flush(f);
	f->real->pMethods->xShmBarrier(f->real);
}

static int cv_shm_unmap(sqlite3_file *pf, int del)
{
	cfile *f = (cfile *)pf;
	int rc = cf_flush(f);
	int rc2 = f->real->pMethods->xShmUnmap(f->real, del);

	return rc ? rc : rc2;
}

/* Version 2: shared memory for the WAL index (page numbers and checksums,
 * no page content), but no xFetch/xUnfetch, so SQLite never maps pages. */
static const sqlite3_io_methods cv_methods = {
	.iVersion = 2,
	.xClose = cv_close,
	.xRead = cv_read,
	.xWrite = cv_write,
	.xTruncate = cv_truncate,
	.xSync = cv_sync,
	.xFileSize = cv_file_size,
	.xLock = cv_lock,
	.xUnlock = cv_unlock,
	.xCheckReservedLock = cv_check_reserved,
	.xFileControl = cv_file_control,
	.xSectorSize = cv_sector_size,
	.xDeviceCharacteristics = cv_device_characteristics,
	.xShmMap = cv_shm_map,
	.xShmLock = cv_shm_lock,
	.xShmBarrier = cv_shm_barrier,
	.xShmUnmap = cv_shm_unmap,
};

/* ---- the VFS ---- */

static cfile *find_main(struct crypt_vfs *v, const char *zname)
{
	const char *db = sqlite3_filename_database(zname);
	cfile *m, *found = NULL;

	pthread_mutex_lock(&v->mu);
	/* SQLite hands the WAL and journal the main file's own buffer, so
	 * the pointer identifies the connection; the name is a fallback. */
	for (m = v->mains; m && !found; m = m->next)
		if (m->zname == db)
			found = m;
	for (m = v->mains; m && !found; m = m->next)
		if (db && strcmp(m->zname, db) == 0)
			found = m;
	pthread_mutex_unlock(&v->mu);
	return found;
}

static int cv_open(sqlite3_vfs *pv, const char *zname,
                   sqlite3_file *pf, int flags, int *out_flags)
{
	struct crypt_vfs *v = (struct crypt_vfs *)pv;
	cfile *f = (cfile *)pf;
	const int temp = SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TRANSIENT_DB |
	                 SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL;
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!zname || (flags & temp) || (flags & SQLITE_OPEN_DELETEONCLOSE)) {
		cp_count(CP_COUNT_TEMP, CP_DB);
		return cv_fail(SQLITE_CANTOPEN, "refusing a temporary file: it "
		            "would hold plaintext (use PRAGMA "
		            "temp_store=MEMORY)");
	}
	f->vfs = v;
	f->real = (sqlite3_file *)(f + 1);
	f->zname = zname;
	f->fhdr_off = -1;
	f->frame_rd = -1;
	f->jpg_off = -1;
	if (flags & SQLITE_OPEN_MAIN_DB) {
		f->type = CF_DB;
	} else if (flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) {
		f->type = flags & SQLITE_OPEN_WAL ? CF_WAL : CF_JOURNAL;
		f->main = find_main(v, zname);
		if (!f->main)
			return cv_fail(SQLITE_CANTOPEN, "%s: no open database "
			            "file for it", zname);
	} else {
		/* The super-journal holds file names only. */
		f->type = CF_PASS;
	}
	if (f->type == CF_DB && stat(zname, &st) == 0) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
	}
	rc = v->real->xOpen(v->real, zname, f->real, flags, out_flags);
	if (rc) {
		f->real->pMethods = NULL;
		return rc;
	}
	if (f->type == CF_DB && !f->ino && stat(zname, &st) == 0) {
		f->dev = st.st_dev; /* made by this open */
		f->ino = st.st_ino;
	}
	if (f->type == CF_DB) {
		pthread_mutex_lock(&v->mu);
		f->next = v->mains;
		v->mains = f;
		pthread_mutex_unlock(&v->mu);
	}
	/* The main file flushes a held frame header (wal_flush) of its own
	 * connection's WAL only: one found by name may be another
	 * connection's, used from another thread. */
	if (f->type == CF_WAL && f->main->zname ==
	    sqlite3_filename_database(zname))
		f->main->wal = f;
	f->base.pMethods = &cv_methods;
	return SQLITE_OK;
}

#define REAL(pv) (((struct crypt_vfs *)(pv))->real)

static int cv_delete(sqlite3_vfs *pv, const char *z, int sync_dir)
{
	return REAL(pv)->xDelete(REAL(pv), z, sync_dir);
}

static int cv_access(sqlite3_vfs *pv, const char *z, int flags, int *out)
{
	return REAL(pv)->xAccess(REAL(pv), z, flags, out);
}

static int cv_full_pathname(sqlite3_vfs *pv, const char *z, int n,
                            char *out)
{
	return REAL(pv)->xFullPathname(REAL(pv), z, n, out);
}

static void *cv_dlopen(sqlite3_vfs *pv, const char *z)
{
	return REAL(pv)->xDlOpen(REAL(pv), z);
}

static void cv_dlerror(sqlite3_vfs *pv, int n, char *out)
{
	REAL(pv)->xDlError(REAL(pv), n, out);
}

static void (*cv_dlsym(sqlite3_vfs *pv, void *h, const char *z))(void)
{
	return REAL(pv)->xDlSym(REAL(pv), h, z);
}

static void cv_dlclose(sqlite3_vfs *pv, void *h)
{
	REAL(pv)->xDlClose(REAL(pv), h);
}

static int cv_randomness(sqlite3_vfs *pv, int n, char *out)
{
	return REAL(pv)->xRandomness(REAL(pv), n, out);
}

static int cv_sleep(sqlite3_vfs *pv, int us)
{
	return REAL(pv)->xSleep(REAL(pv), us);
}

static int cv_current_time(sqlite3_vfs *pv, double *out)
{
	return REAL(pv)->xCurrentTime(REAL(pv), out);
}

static int cv_get_last_error(sqlite3_vfs *pv, int n, char *out)
{
	return REAL(pv)->xGetLastError(REAL(pv), n, out);
}

static int cv_current_time64(sqlite3_vfs *pv, sqlite3_int64 *out)
{
	return REAL(pv)->xCurrentTimeInt64(REAL(pv), out);
}

static int cv_set_syscall(sqlite3_vfs *pv, const char *z,
                          sqlite3_syscall_ptr p)
{
	return REAL(pv)->xSetSystemCall(REAL(pv), z, p);
}

static sqlite3_syscall_ptr cv_get_syscall(sqlite3_vfs *pv, const char *z)
{
	return REAL(pv)->xGetSystemCall(REAL(pv), z);
}

static const char *cv_next_syscall(sqlite3_vfs *pv, const char *z)
{
	return REAL(pv)->xNextSystemCall(REAL(pv), z);
}

/* SQLite's default VFS, the one ours wrap: what the extension (ext.c)
 * wraps if it made an encrypting VFS the default (never encrypt twice).
 * NULL when there is none usable. */
static sqlite3_vfs *default_real(void)
{
	sqlite3_vfs *real;

	if (sqlite3_initialize() != SQLITE_OK ||
	    !(real = sqlite3_vfs_find(NULL)) || real->iVersion < 2)
		return NULL;
	return crypt_vfs_is(real) ? ((struct crypt_vfs *)real)->real : real;
}

/* Makes v a VFS over real named v->name, whose files are file_size bytes
 * before real's and opened by xopen; every other call is forwarded. */
static void vfs_wrap(struct crypt_vfs *v, sqlite3_vfs *real, int file_size,
                     int (*xopen)(sqlite3_vfs *, const char *,
                                  sqlite3_file *, int, int *))
{
	v->real = real;
	/* The default VFS's version, at most 3 (what we know to forward). */
	v->base.iVersion = real->iVersion < 3 ? real->iVersion : 3;
	v->base.szOsFile = file_size + real->szOsFile;
	v->base.mxPathname = real->mxPathname;
	v->base.zName = v->name;
	v->base.pAppData = v;
	v->base.xOpen = xopen;
	v->base.xDelete = cv_delete;
	v->base.xAccess = cv_access;
	v->base.xFullPathname = cv_full_pathname;
	v->base.xDlOpen = cv_dlopen;
	v->base.xDlError = cv_dlerror;
	v->base.xDlSym = cv_dlsym;
	v->base.xDlClose = cv_dlclose;
	v->base.xRandomness = cv_randomness;
	v->base.xSleep = cv_sleep;
	v->base.xCurrentTime = cv_current_time;
	v->base.xGetLastError = cv_get_last_error;
	v->base.xCurrentTimeInt64 = cv_current_time64;
	if (v->base.iVersion >= 3) {
		v->base.xSetSystemCall = cv_set_syscall;
		v->base.xGetSystemCall = cv_get_syscall;
		v->base.xNextSystemCall = cv_next_syscall;
	}
}

int crypt_vfs_open(const sfs_key *key, crypt_vfs **out)
{
	return crypt_vfs_register(key, NULL, 0, out);
}

int crypt_vfs_register(const sfs_key *key, const char *name,
                       int make_default, crypt_vfs **out)
{
	struct crypt_vfs *v;
	sqlite3_vfs *real;
	unsigned char r[8];
	char hex[17];
	int rc;

	if (!key || !out)
		return sfs_err(SFS_INVALID, "crypt_vfs_register: NULL argument");
	if (name && strlen(name) >= sizeof(v->name))
		return sfs_err(SFS_INVALID, "VFS name '%s' is too long", name);
	if (!(real = default_real()))
		return sfs_err(SFS_INTERNAL, "no usable default SQLite VFS");
	v = calloc(1, sizeof(*v));
	if (!v)
		return sfs_err(SFS_NOMEM, "out of memory");
	rc = crypt_key_dup(key, &v->key);
	if (rc) {
		free(v);
		return rc;
	}
	if (name) {
		snprintf(v->name, sizeof(v->name), "%s", name);
	} else {
		randombytes_buf(r, sizeof(r));
		sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
		snprintf(v->name, sizeof(v->name), "statefs-crypt-%s", hex);
	}
	pthread_mutex_init(&v->mu, NULL);
	vfs_wrap(v, real, (int)sizeof(cfile), cv_open);
	if (sqlite3_vfs_register(&v->base, make_default) != SQLITE_OK) {
		sfs_key_destroy(v->key);
		pthread_mutex_destroy(&v->mu);
		free(v);
		return sfs_err(SFS_INTERNAL, "cannot register the encrypting "
		               "VFS");
	}
	*out = v;
	return SFS_OK;
}

const char *crypt_vfs_name(const crypt_vfs *v)
{
	return v ? v->name : NULL;
}

void crypt_vfs_close(crypt_vfs *v)
{
	if (!v)
		return;
	sqlite3_vfs_unregister(&v->base);
	sfs_key_destroy(v->key);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

int crypt_vfs_is(sqlite3_vfs *pv)
{
	return pv && pv->xOpen == cv_open;
}

const sfs_key *crypt_vfs_key(const crypt_vfs *v)
{
	return v->key;
}

void crypt_vfs_describe(const crypt_vfs *v, const char **cipher,
                        int *format, const char **kdf)
{
	if (!v) {
		*cipher = "none";
		*format = 0;
		*kdf = "none";
		return;
	}
	*cipher = "xchacha20poly1305";
	*format = CRYPT_FORMAT;
	*kdf = crypt_key_is_passphrase(v->key) ? "argon2id" : "raw";
}

int crypt_db_setup(sqlite3 *db)
{
	sqlite3_vfs *pv = NULL;
	int n = CP_RESERVE;
	char *msg = NULL;

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &pv) !=
	    SQLITE_OK || !crypt_vfs_is(pv))
		return SFS_OK; /* a plaintext connection: nothing to set */
	/* Before anything reads or writes: the reserve only takes on a file
	 * whose page size is not yet fixed (a new one). */
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n) !=
	    SQLITE_OK)
		return sfs_err(SFS_INTERNAL, "cannot reserve %d bytes per "
		               "page", CP_RESERVE);
	if (sqlite3_exec(db, "PRAGMA page_size=4096; "
	                 "PRAGMA temp_store=MEMORY;", NULL, NULL, &msg) !=
	    SQLITE_OK) {
		int rc = sfs_err(SFS_IO, "setting up the encrypted connection: "
		                 "%s", crypt_last_error() ? crypt_last_error() :
		                 msg ? msg : "unknown error");
		sqlite3_free(msg);
		return rc;
	}
	return SFS_OK;
}

/* ---- plaintext stores (plainvfs.c): the replaced check, nothing else ---- */

static int pv_open(sqlite3_vfs *pv, const char *zname, sqlite3_file *pf,
                   int flags, int *out_flags)
{
	return crypt_plain_open(REAL(pv), zname, pf, flags, out_flags);
}

static struct crypt_vfs plain_vfs;
static pthread_once_t plain_once = PTHREAD_ONCE_INIT;
static int plain_ok;

static void plain_register(void)
{
	struct crypt_vfs *v = &plain_vfs;
	sqlite3_vfs *real = default_real();

	if (!real)
		return;
	snprintf(v->name, sizeof(v->name), "statefs-plain");
	vfs_wrap(v, real, (int)crypt_plain_file_size(), pv_open);
	plain_ok = sqlite3_vfs_register(&v->base, 0) == SQLITE_OK;
}

int crypt_plain_vfs(const char **name)
{
	pthread_once(&plain_once, plain_register);
	if (!plain_ok)
		return sfs_err(SFS_INTERNAL, "cannot register the plaintext "
		               "VFS");
	*name = plain_vfs.name;
	return SFS_OK;
}
