/*
 * rekey.c - the SQLite backend's sfs_rekey: re-encrypt a store under a new
 * key, crash-safe.
 *
 * Offline copy, not in-place rewrite. With the store locked exclusively
 * (no other process may hold it open), the WAL is checkpointed into the
 * file, then `VACUUM INTO` writes a compacted copy through a VFS holding
 * the new key into PATH.rekey beside the store; the copy is fsynced,
 * authenticated page by page and checked by SQLite, and only then renamed
 * over PATH (and the directory fsynced). Until the rename PATH is the old
 * store, untouched; after it PATH is the new one. A crash at any point
 * leaves a store that opens with the old key or with the new one, never
 * neither, and a second run finishes the job (it notices a store already
 * under the new key).
 *
 * Why not in place with a VFS that knows both keys (the other design
 * docs/encryption.md weighs): a half-rekeyed file would need both
 * keys to open until the rewrite finishes, and a file whose pages carry
 * two key check values makes "wrong key" ambiguous. The copy costs twice
 * the disk space for a moment; a store is small next to that safety.
 *
 * A NULL old key encrypts a plaintext store (one the Go SDK wrote, say);
 * a NULL new key writes a plaintext copy (what the Go SDK can read). In
 * both directions the page layout is the same: 4096-byte pages with 48
 * reserved bytes, which a plaintext SQLite file simply leaves at zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "crypt/page_i.h"
#include "sqlite_i.h"

struct rekey {
	const char *path;
	char tmp[PATH_MAX];
	sqlite3 *src;
	crypt_vfs *oldv, *newv;
	sfs_progress_fn progress;
	void *ctx;
	uint64_t total;
	int cancelled;
	int tmp_made;              /* r->tmp is ours to remove on failure */
};

/* A SQLite failure, through the backend's one translation (sqlb_status),
 * with the sentences a rekey owes: a store in use, a cancel. */
static int sql_fail(struct rekey *r, sqlite3 *db, int rc, const char *what)
{
	int st = sqlb_status(db, 1, rc, what);

	if (st == SFS_BUSY)
		return sfs_err(SFS_BUSY, "%s is open (in another process, or in "
		               "another handle of this one); close it (stop the "
		               "daemon) before rekeying", r->path);
	if (st == SFS_CANCELLED)
		return sfs_err(SFS_CANCELLED, "rekey of %s cancelled", r->path);
	return st;
}

static int open_db(struct rekey *r, const char *path, crypt_vfs *v,
                   int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc;

	crypt_clear_error();
	rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_EXRESCODE,
	                     v ? crypt_vfs_name(v) : NULL);
	if (rc != SQLITE_OK) {
		rc = sql_fail(r, db, rc, path);
		sqlite3_close(db);
		return rc;
	}
	rc = crypt_db_setup(db);
	if (rc) {
		sqlite3_close(db);
		return rc;
	}
	*out = db;
	return SFS_OK;
}

static int exec(struct rekey *r, sqlite3 *db, const char *sql,
                const char *what)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? SFS_OK : sql_fail(r, db, rc, what);
}

static int query_int(struct rekey *r, sqlite3 *db, const char *sql,
                     int64_t *out, const char *what)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? SFS_OK : sql_fail(r, db, rc, what);
}

/* Pages written so far = the copy's size; polled from SQLite's progress
 * handler while VACUUM INTO runs. Nonzero stops the statement. */
static int on_progress(void *arg)
{
	struct rekey *r = arg;
	struct stat st;
	uint64_t done;

	if (!r->progress || stat(r->tmp, &st) != 0)
		return 0;
	done = (uint64_t)st.st_size / 4096;
	if (done > r->total)
		done = r->total;
	if (r->progress(done, r->total, r->ctx)) {
		r->cancelled = 1;
		return 1;
	}
	return 0;
}

static int fsync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) |
	              O_CLOEXEC);
	int rc = 0, saverr;

	if (fd < 0)
		return -1;
	if (fsync(fd) != 0)
		rc = -1;
	saverr = errno;
	close(fd);
	errno = saverr;
	return rc;
}

static void parent_dir(const char *path, char *out, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, n, ".");
	else if (slash == path)
		snprintf(out, n, "/");
	else
		snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* "file:" URI for VACUUM INTO: % ? # must be escaped; then the single
 * quotes of the SQL string literal are doubled by %Q. The vfs is always
 * named: without it the copy would go through the source's VFS, i.e.
 * under the old key. */
static char *file_uri(const char *path, const char *vfs)
{
	size_t n = strlen(path);
	char *esc = malloc(3 * n + 1), *p = esc, *uri, *inner;

	if (!esc)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c == '%' || c == '?' || c == '#') {
			p += sprintf(p, "%%%02X", c);
		} else {
			*p++ = (char)c;
		}
	}
	*p = '\0';
	inner = sqlite3_mprintf("file:%s?vfs=%s", esc, vfs);
	free(esc);
	if (!inner)
		return NULL;
	uri = sqlite3_mprintf("VACUUM INTO %Q", inner);
	sqlite3_free(inner);
	return uri;
}

/* Creates the empty copy with the store's mode and owner (SQLite would
 * make it 0644). */
static int make_tmp(struct rekey *r)
{
	struct stat st;
	int fd, saverr;

	if (stat(r->path, &st) != 0) {
		saverr = errno;
		return sfs_err(saverr == ENOENT ? SFS_NOTFOUND : SFS_IO,
		               "%s: %s", r->path, strerror(saverr));
	}
	unlink(r->tmp);
	{
		char j[PATH_MAX + 16];
		snprintf(j, sizeof(j), "%s-journal", r->tmp);
		unlink(j);
	}
	fd = open(r->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "cannot create %s: %s", r->tmp,
		               strerror(saverr));
	}
	if (fchmod(fd, st.st_mode & 0777) != 0 ||
	    (geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid) != 0)) {
		saverr = errno;
		close(fd);
		return sfs_err(SFS_IO, "cannot set the mode of %s: %s", r->tmp,
		               strerror(saverr));
	}
	close(fd);
	r->tmp_made = 1;
	return SFS_OK;
}

/* The copy before it replaces the store: every page authenticates and
 * SQLite finds its b-trees sound. */
static int check_tmp(struct rekey *r)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc;

	if (r->newv) {
		rc = crypt_verify_file(r->tmp, r->newv, NULL, NULL);
		if (rc)
			return rc;
	}
	rc = open_db(r, r->tmp, r->newv, SQLITE_OPEN_READONLY, &db);
	if (rc)
		return rc;
	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0)
		rc = SFS_OK;
	else if (rc == SQLITE_ROW)
		rc = sfs_err(SFS_CORRUPT, "the re-encrypted copy %s fails "
		             "SQLite's check: %s", r->tmp,
		             sqlite3_column_text(st, 0));
	else
		rc = sql_fail(r, db, rc, "checking the re-encrypted copy");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* Is the store already under the new key (a rekey that was interrupted
 * after its rename)? */
static int already_done(const char *path, const sfs_key *old_key,
                        const sfs_key *new_key, int old_rc)
{
	crypt_kind kind;

	if (old_rc != SFS_WRONGKEY && old_rc != SFS_NOTENCRYPTED &&
	    old_rc != SFS_NOKEY)
		return 0;
	if (crypt_preflight(path, new_key, &kind) != SFS_OK)
		return 0;
	if (!new_key)
		return kind == CRYPT_KIND_PLAIN && old_key;
	return kind == CRYPT_KIND_ENCRYPTED;
}

static int rekey_run(struct rekey *r, const sfs_key *old_key,
                     const sfs_key *new_key)
{
	char dir[PATH_MAX], *sql = NULL;
	int64_t pages = 0;
	int rc, saverr;

	if (old_key && (rc = crypt_vfs_open(old_key, &r->oldv)))
		return rc;
	if (new_key && (rc = crypt_vfs_open(new_key, &r->newv)))
		return rc;
	rc = open_db(r, r->path, r->oldv, SQLITE_OPEN_READWRITE, &r->src);
	if (rc)
		return rc;
	/* Exclusive locking mode in WAL takes an EXCLUSIVE lock on the file
	 * at the first read; any other connection keeps a SHARED one while
	 * open, so this fails at once (no busy timeout) if the store is in
	 * use, and keeps everyone out until we are done. Then out of WAL
	 * mode (the engine's open turns it back on, should the old file
	 * stay): closed after the rename, a connection in WAL mode deletes
	 * its WAL by name, which is then the new store's. */
	rc = exec(r, r->src, "PRAGMA locking_mode=EXCLUSIVE; "
	          "PRAGMA wal_checkpoint(TRUNCATE); "
	          "PRAGMA journal_mode=DELETE;", "locking the store");
	if (rc)
		return rc;
	rc = query_int(r, r->src, "PRAGMA page_count", &pages,
	               "reading the store");
	if (rc)
		return rc;
	r->total = (uint64_t)pages;
	rc = make_tmp(r);
	if (rc)
		return rc;
	if (!old_key && new_key) {
		/* A plaintext store gets the reserve in the copy. */
		int n = CP_RESERVE;
		sqlite3_file_control(r->src, "main", SQLITE_FCNTL_RESERVE_BYTES,
		                     &n);
	}
	if (r->progress && r->progress(0, r->total, r->ctx))
		return sfs_err(SFS_CANCELLED, "rekey of %s cancelled", r->path);
	sql = file_uri(r->tmp, r->newv ? crypt_vfs_name(r->newv) :
	                       sqlite3_vfs_find(NULL)->zName);
	if (!sql)
		return sfs_err(SFS_NOMEM, "out of memory");
	sqlite3_progress_handler(r->src, 20000, on_progress, r);
	crypt_clear_error();
	rc = exec(r, r->src, sql, "writing the re-encrypted copy");
	sqlite3_progress_handler(r->src, 0, NULL, NULL);
	sqlite3_free(sql);
	if (rc)
		return r->cancelled ? sfs_err(SFS_CANCELLED, "rekey of %s "
		                              "cancelled", r->path) : rc;
	if (fsync_path(r->tmp, 0) != 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "fsync %s: %s", r->tmp, strerror(saverr));
	}
	rc = check_tmp(r);
	if (rc)
		return rc;
	/* The switch. Before it the old store is whole; after it the new. */
	if (rename(r->tmp, r->path) != 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "cannot rename %s over %s: %s", r->tmp,
		               r->path, strerror(saverr));
	}
	parent_dir(r->path, dir, sizeof(dir));
	if (fsync_path(dir, 1) != 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "fsync %s: %s", dir, strerror(saverr));
	}
	if (r->progress)
		r->progress(r->total, r->total, r->ctx);
	return SFS_OK;
}

int sqlb_rekey(const char *path, const sfs_key *old_key,
               const sfs_key *new_key, sfs_progress_fn progress, void *ctx)
{
	struct rekey r = { 0 };
	crypt_kind kind;
	int rc;

	r.path = path;
	r.progress = progress;
	r.ctx = ctx;
	if ((size_t)snprintf(r.tmp, sizeof(r.tmp), "%s.rekey", path) >=
	    sizeof(r.tmp))
		return sfs_err(SFS_INVALID, "path too long");
	rc = crypt_preflight(path, old_key, &kind);
	if (rc == SFS_OK && kind == CRYPT_KIND_NEW)
		return sfs_err(SFS_NOTFOUND, "the store %s does not exist",
		               path);
	if (rc == SFS_OK && !old_key && kind != CRYPT_KIND_PLAIN)
		rc = sfs_err(SFS_NOKEY, "%s is encrypted: give its key", path);
	if (rc) {
		char detail[512];
		snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
		if (already_done(path, old_key, new_key, rc)) {
			/* Interrupted after the rename: only leftovers. */
			unlink(r.tmp);
			sfs_err_clear();
			return SFS_OK;
		}
		return sfs_err(rc, "%s", detail);
	}
	rc = rekey_run(&r, old_key, new_key);
	if (r.src)
		sqlite3_close(r.src);
	if (rc && r.tmp_made) {
		char j[PATH_MAX + 16];
		unlink(r.tmp);
		snprintf(j, sizeof(j), "%s-journal", r.tmp);
		unlink(j);
	}
	crypt_vfs_close(r.oldv);
	crypt_vfs_close(r.newv);
	return rc;
}
