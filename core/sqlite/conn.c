/*
 * conn.c - the SQLite backend's connection: open and close, the
 * statement cache, transactions, durability, the change counter, the one
 * function that turns SQLite result codes into sfs_status (sqlb_status),
 * and the backend's ops table.
 *
 * Opening follows the encryption layer's order when a key is given
 * (vfs_i.h): preflight, a VFS for the key, sqlite3_open_v2 through it,
 * crypt_db_setup before any statement. Then, for every file store, the
 * busy timeout BEFORE journal_mode=WAL: switching to WAL takes an exclusive
 * lock, and processes starting together would otherwise fail at once with
 * "database is locked" instead of waiting (the VGI SDK learned this).
 *
 * Deliberately left out: connection pools. One connection per handle keeps
 * the statement cache and the transaction state simple; the handle's lock
 * serialises threads, as the Go SDK's MaxOpenConns(1) does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "sqlite_i.h"
#include "util_i.h"

static void space_check(sfs_backend *b);

/* Why sqlite3_open_v2 failed when the store's path (db, absolute) is
 * longer than SQLite opens (its VFS's mxPathname, 512 bytes for unix): it
 * said "unable to open database file (sqlite 14)", exit 9 with no word
 * of the length. status as it is otherwise. */
static int explain_long_path(const char *db, int status)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
	size_t len = strlen(db);

	if (status != SFS_IO || !vfs || len < (size_t)vfs->mxPathname)
		return status;
	return sfs_err(SFS_IO, "the store's path is %zu bytes long, and "
	               "SQLite opens paths shorter than %d bytes: give the "
	               "store a shorter one", len, vfs->mxPathname);
}

/* sqlb_status with SQLite's message (msg) read before. */
static int status_of(int ours, int rc, const char *what, const char *msg)
{
	const char *cmsg;
	int st;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		st = SFS_BUSY;
		break;
	case SQLITE_READONLY:
		st = SFS_READONLY;
		break;
	case SQLITE_CORRUPT:
		st = SFS_CORRUPT;
		break;
	case SQLITE_IOERR:
		st = rc == SQLITE_IOERR_DATA ? SFS_CORRUPT
		     : rc == SQLITE_IOERR_NOMEM ? SFS_NOMEM : SFS_IO;
		break;
	case SQLITE_FULL:
		st = SFS_FULL;
		break;
	case SQLITE_NOMEM:
		st = SFS_NOMEM;
		break;
	case SQLITE_NOTADB:
		st = SFS_FORMAT;
		break;
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
		st = SFS_IO;
		break;
	case SQLITE_TOOBIG:
		st = SFS_TOOBIG;
		break;
	case SQLITE_INTERRUPT:
		st = SFS_CANCELLED;
		break;
	default:
		st = SFS_INTERNAL;
		break;
	}
	/* A page that failed authentication: the VFS knows which page of which
	 * file, SQLite only says "disk I/O error". */
	cmsg = ours ? crypt_last_error() : NULL;
	if (st == SFS_CORRUPT && cmsg)
		return sfs_err(st, "%s: %s", what, cmsg);
	if (st == SFS_IO && cmsg && (rc & 0xff) == SQLITE_IOERR)
		return sfs_err(st, "%s: %s (%s)", what, msg, cmsg);
	return sfs_err(st, "%s: %s (sqlite %d)", what, msg, rc);
}

int sqlb_status(sqlite3 *db, int ours, int rc, const char *what)
{
	return status_of(ours, rc, what,
	                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* The schema version of the store when a newer statefs than this one
 * wrote it, else 0. Read with a statement of its own. */
static int64_t newer_schema(sfs_backend *b)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(b->db, "SELECT value FROM main.statefs_meta"
	                       " WHERE name='schema_version'", -1, &st,
	                       NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v > SQLB_SCHEMA_VERSION ? v : 0;
}

/* SQLITE_READONLY on a handle opened for writing, when the store's file
 * is writable: SQLite opened its -wal or -shm read-only, since this
 * process may not write it. A process that read the store while its file
 * was read-only (chmod 400, another user's read) made the -shm with that
 * mode, and SQLite keeps the -shm when the last connection closes; once
 * the store's mode was back, every write failed "store is read-only
 * (... attempt to write a readonly database (sqlite 8))", and nothing
 * named the file. 0 when neither file is the cause. */
static int explain_readonly(const sfs_backend *b, int rc, const char *what)
{
	static const char *const sfx[] = { "-wal", "-shm" };
	char aux[4096];

	if (rc != SQLITE_READONLY || !b || b->memory || b->readonly ||
	    !b->path || access(b->path, W_OK) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if ((size_t)snprintf(aux, sizeof(aux), "%s%s", b->path,
		                     sfx[i]) >= sizeof(aux))
			return 0;
		/* access(2), not open(2): see explain_aux, rofs.c */
		if (access(aux, W_OK) == 0 || errno == ENOENT)
			continue;
		return sfs_err(SFS_READONLY, "%s: cannot write %s: %s (a "
		               "writer of the store writes it too: give it the "
		               "store's owner and mode)", what, aux,
		               strerror(errno));
	}
	return 0;
}

int sqlb_fail(sfs_backend *b, int rc, const char *what)
{
	int st = explain_readonly(b, rc, what);

	if (st)
		return st;
	/* A reader whose -shm is read-only (a read-only bind mount, a
	 * directory it may not write) that finds the log's index in need of
	 * recovery, which needs a write of it: a writer was changing it
	 * right then, or one died without closing the store. Another try
	 * works in the first case, a read-write open in the second: busy,
	 * not "read-only" with SQLite's "attempt to write a readonly
	 * database" (a read through a read-only bind mount beside a writer,
	 * cli_admin.sh, under ASan). */
	if (rc == SQLITE_READONLY_RECOVERY)
		return sfs_err(SFS_BUSY, "%s: %s's -shm cannot be written by "
		               "this process, and it found the log's index "
		               "being changed by a writer, or left unfinished "
		               "by one that died: try again (or open it once "
		               "where it can be written)", what,
		               b && b->path ? b->path : "the store");
	/* A statement that no longer compiles ("no such column") under a
	 * handle that has been open since before a newer statefs migrated
	 * the store: say so, and what to do, not "internal error". */
	if (b && b->db && (rc & 0xff) == SQLITE_ERROR) {
		char msg[256];
		int64_t v;

		snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(b->db));
		if ((v = newer_schema(b)) != 0)
			return sfs_err(SFS_FORMAT, "%s: %s was upgraded to schema"
			               " version %lld by a newer statefs while this"
			               " process had it open (this one knows up to"
			               " %d): restart this process (%s)", what,
			               b->path ? b->path : "the store",
			               (long long)v, SQLB_SCHEMA_VERSION, msg);
		return status_of(!b->memory, rc, what, msg);
	}
	/* A file's connection, encrypted or not, goes through our VFS
	 * (crypt_vfs_open, crypt_plain_vfs), which may say more. */
	return sqlb_status(b ? b->db : NULL, b && !b->memory, rc, what);
}

sqlite3_stmt *sqlb_stmt(sfs_backend *b, int slot, const char *sql,
                        int *status)
{
	int rc;

	if (b->st[slot])
		return b->st[slot];
	rc = sqlite3_prepare_v3(b->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                        &b->st[slot], NULL);
	if (rc != SQLITE_OK) {
		b->st[slot] = NULL;
		*status = sqlb_fail(b, rc, "preparing a statement");
		return NULL;
	}
	return b->st[slot];
}

int sqlb_run(sfs_backend *b, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return sqlb_fail(b, rc, what);
	return SFS_OK;
}

int sqlb_id_check(int64_t id, const char *what)
{
	if (id <= SFS_ID_MAX)
		return SFS_OK;
	return sfs_err(SFS_OVERFLOW, "%s would need id %lld, past the largest"
	               " id a store issues (%lld); nothing changed", what,
	               (long long)id, (long long)SFS_ID_MAX);
}

int sqlb_write1(sfs_backend *b, sqlite3_stmt *st, const char *what,
                int *changed)
{
	int status;

	*changed = 0;
	if (b->readonly)
		return sfs_err(SFS_READONLY, "the store was opened read-only");
	/* Not a stamped write: what the cache knows may no longer hold. */
	stamp_forget(b);
	status = sqlb_run(b, st, what);
	if (status == SFS_OK)
		*changed = sqlite3_changes(b->db);
	if (status == SFS_OK && *changed && !b->in_write && !b->group_txn)
		b->commits++; /* it was its own transaction */
	return status;
}

int sqlb_exec(sfs_backend *b, const char *sql, const char *what)
{
	int rc = sqlite3_exec(b->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? SFS_OK : sqlb_fail(b, rc, what);
}

int sqlb_bind(sqlite3_stmt *st, int i, sfs_slice s)
{
	return sqlite3_bind_blob64(st, i, s.ptr ? s.ptr : "", s.len,
	                           SQLITE_STATIC);
}

void sqlb_bind_key(sqlite3_stmt *st, sfs_slice scope, sfs_slice ns,
                   sfs_slice key)
{
	sqlb_bind(st, 1, scope);
	sqlb_bind(st, 2, ns);
	sqlb_bind(st, 3, key);
}

const void *sqlb_col(sqlite3_stmt *st, int i, size_t *len)
{
	const void *p = sqlite3_column_blob(st, i);

	*len = (size_t)sqlite3_column_bytes(st, i);
	return p ? p : "";
}

/* A BLOB or TEXT column into the last item's buffer of that role. */
static void col_bytes(listb *lb, sqlite3_stmt *st, int i,
                      void (*put)(listb *, const void *, size_t))
{
	const void *p;
	size_t n;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return;
	p = sqlb_col(st, i, &n);
	put(lb, p, n);
}

/* SQLite's order of two values under BINARY collation (numbers before
 * text before BLOBs; text and BLOBs bytewise, a prefix first): <0, 0, >0. */
static int col_cmp(sqlite3_stmt *a, int i, sqlite3_stmt *b, int j)
{
	static const int rank[] = { [SQLITE_INTEGER] = 1, [SQLITE_FLOAT] = 1,
	                            [SQLITE_TEXT] = 2, [SQLITE_BLOB] = 3,
	                            [SQLITE_NULL] = 0 };
	int ra = rank[sqlite3_column_type(a, i)];
	int rb = rank[sqlite3_column_type(b, j)];
	const void *pa, *pb;
	size_t na, nb;
	int c;

	if (ra != rb)
		return ra - rb;
	if (ra == 1) {
		double x = sqlite3_column_double(a, i);
		double y = sqlite3_column_double(b, j);

		return x < y ? -1 : x > y;
	}
	if (ra == 0)
		return 0;
	pa = sqlb_col(a, i, &na);
	pb = sqlb_col(b, j, &nb);
	c = memcmp(pa, pb, na < nb ? na : nb);
	return c ? c : na < nb ? -1 : na > nb;
}

/* The time of st's current row from tst (see sqlb_rows_timed): advances
 * tst past the keys before st's key. *trc is tst's last step result. */
static int64_t row_time(sqlite3_stmt *st, sqlite3_stmt *tst, int desc,
                        int *trc)
{
	int c;

	while (*trc == SQLITE_ROW) {
		c = col_cmp(tst, 0, st, SQLB_COL_KEY);
		if (desc)
			c = -c;
		if (c == 0)
			return sqlite3_column_int64(tst, 1);
		if (c > 0)
			return 0;
		*trc = sqlite3_step(tst);
	}
	return 0;
}

int sqlb_rows_timed(sfs_backend *b, sqlite3_stmt *st, sqlite3_stmt *tst,
                    int desc, sfs_list *out, const char *what)
{
	int ncol = sqlite3_column_count(st);
	listb lb = LISTB_INIT;
	sfs_item *it;
	int rc, trc = SQLITE_DONE, first = 1;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!(it = listb_push(&lb)))
			break;
		it->id = sqlite3_column_int64(st, SQLB_COL_ID);
		if (ncol > SQLB_COL_VALUE)
			col_bytes(&lb, st, SQLB_COL_VALUE, listb_value);
		if (ncol > SQLB_COL_SIZE)
			it->st.size = (uint64_t)sqlite3_column_int64(st,
			                                             SQLB_COL_SIZE);
		if (ncol > SQLB_COL_MTIME)
			it->st.mtime_ns = sqlite3_column_int64(st, SQLB_COL_MTIME);
		if (tst) {
			if (first)
				trc = sqlite3_step(tst);
			first = 0;
			it->st.mtime_ns = row_time(st, tst, desc, &trc);
			if (trc != SQLITE_ROW && trc != SQLITE_DONE) {
				rc = trc;
				break;
			}
		}
		if (ncol > SQLB_COL_COUNTER)
			it->st.counter = sqlite3_column_int64(st,
			                                      SQLB_COL_COUNTER);
		if (ncol > SQLB_COL_KEY)
			col_bytes(&lb, st, SQLB_COL_KEY, listb_key);
		if (ncol > SQLB_COL_DELIVERIES)
			it->st.deliveries = sqlite3_column_int64(st,
			                                SQLB_COL_DELIVERIES);
		if (ncol > SQLB_COL_CLAIM)
			it->st.claim_id = sqlite3_column_int64(st, SQLB_COL_CLAIM);
		if (ncol > SQLB_COL_LEASE)
			it->st.lease_until_ns = sqlite3_column_int64(st,
			                                     SQLB_COL_LEASE);
		if (ncol > SQLB_COL_REASON)
			col_bytes(&lb, st, SQLB_COL_REASON, listb_reason);
	}
	sqlite3_reset(st);
	if (tst)
		sqlite3_reset(tst);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		listb_discard(&lb);
		return sqlb_fail(b, rc, what);
	}
	return listb_finish(&lb, out);
}

int sqlb_rows(sfs_backend *b, sqlite3_stmt *st, sfs_list *out,
              const char *what)
{
	return sqlb_rows_timed(b, st, NULL, 0, out, what);
}

int sqlb_one_blob(sfs_backend *b, sqlite3_stmt *st, sfs_buf *out,
                  const char *what)
{
	const void *p;
	size_t n;
	int rc = sqlite3_step(st), status;

	if (rc == SQLITE_ROW) {
		p = sqlb_col(st, 0, &n);
		status = buf_copy(out, p, n);
	} else if (rc == SQLITE_DONE) {
		status = SFS_NOTFOUND;
	} else {
		status = sqlb_fail(b, rc, what);
	}
	sqlite3_reset(st);
	return status;
}

int sqlb_one_stat(sfs_backend *b, sqlite3_stmt *st, sfs_stat *out,
                  const char *what)
{
	int ncol = sqlite3_column_count(st);
	int rc = sqlite3_step(st), status = SFS_OK;

	if (rc == SQLITE_ROW) {
		memset(out, 0, sizeof(*out));
		out->size = (uint64_t)sqlite3_column_int64(st, 0);
		out->mtime_ns = sqlite3_column_int64(st, 1);
		if (ncol > 2)
			out->deliveries = sqlite3_column_int64(st, 2);
		if (ncol > 3)
			out->claim_id = sqlite3_column_int64(st, 3);
		if (ncol > 4)
			out->lease_until_ns = sqlite3_column_int64(st, 4);
	} else if (rc == SQLITE_DONE) {
		status = SFS_NOTFOUND;
	} else {
		status = sqlb_fail(b, rc, what);
	}
	sqlite3_reset(st);
	return status;
}

/* In a group (sqlb_group_begin), a write after the first joins the open
 * transaction as a savepoint of its own, so that its failure undoes only
 * its own changes. */
static int join_group(sfs_backend *b, int stamped)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_MEMBER_BEGIN,
	                             "SAVEPOINT statefs_member", &status);

	if (st)
		status = sqlb_run(b, st, "joining a shared transaction");
	if (status != SFS_OK)
		return status;
	b->in_write = b->in_member = 1;
	stamp_begin(b, stamped);
	return SFS_OK;
}

static int begin_write(sfs_backend *b, int stamped)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_BEGIN_WRITE, "BEGIN IMMEDIATE",
	                             &status);

	if (!st)
		return status;
	if (b->readonly)
		return sfs_err(SFS_READONLY, "the store was opened read-only");
	if (!stamped)
		stamp_forget(b); /* it may change what the cache knows */
	if (b->group_txn)
		return join_group(b, stamped);
	status = sqlb_run(b, st, "beginning a write transaction");
	if (status == SFS_OK) {
		b->in_write = 1;
		b->group_txn = b->group;
		stamp_begin(b, stamped);
	}
	return status;
}

int sqlb_begin_write(sfs_backend *b)
{
	return begin_write(b, 0);
}

int sqlb_begin_stamped(sfs_backend *b)
{
	return begin_write(b, 1);
}

int sqlb_begin_read(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_BEGIN_READ, "BEGIN", &status);

	return st ? sqlb_run(b, st, "beginning a read transaction") : status;
}

/* The end of a write in a group: its savepoint released (a later write
 * joins, sqlb_group_end commits them all), or nothing to do for the write
 * that opened the transaction. */
static int leave_group(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *st;

	b->in_write = 0;
	if (!b->in_member)
		return SFS_OK;
	st = sqlb_stmt(b, ST_MEMBER_END, "RELEASE statefs_member", &status);
	if (st)
		status = sqlb_run(b, st, "leaving a shared transaction");
	if (status != SFS_OK) {
		b->in_write = 1;
		sqlb_rollback(b);
		return status;
	}
	b->in_member = 0;
	qstat_member_end(b, 1);
	return SFS_OK;
}

int sqlb_commit(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *st;

	if (b->in_write && b->group_txn)
		return leave_group(b);
	st = sqlb_stmt(b, ST_COMMIT, "COMMIT", &status);
	if (st && b->in_write)
		status = qstat_flush(b);
	if (st && status == SFS_OK)
		status = sqlb_run(b, st, "committing");
	if (status != SFS_OK) {
		sqlb_rollback(b);
		return status;
	}
	if (b->in_write) {
		b->commits++;
		stamp_end(b, 1);
		qstat_end(b, 1);
	}
	b->in_write = 0;
	if (b->short_of_space)
		space_check(b);
	return SFS_OK;
}

/* Undoes a write in a group: its own savepoint only. */
static void rollback_member(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_MEMBER_UNDO, "ROLLBACK TO"
	                             " statefs_member", &status);

	b->in_write = b->in_member = 0;
	stamp_forget(b);
	qstat_member_end(b, 0);
	if (st && !sqlite3_get_autocommit(b->db)) {
		sqlite3_step(st);
		sqlite3_reset(st);
		st = sqlb_stmt(b, ST_MEMBER_END, "RELEASE statefs_member",
		               &status);
		if (st) {
			sqlite3_step(st);
			sqlite3_reset(st);
		}
	}
}

void sqlb_rollback(sfs_backend *b)
{
	int status = SFS_OK;
	sqlite3_stmt *st;

	if (b->in_member) {
		rollback_member(b);
		return;
	}
	b->in_write = 0;
	b->group_txn = 0;
	stamp_end(b, 0);
	qstat_end(b, 0);
	if (sqlite3_get_autocommit(b->db))
		return;
	st = sqlb_stmt(b, ST_ROLLBACK, "ROLLBACK", &status);
	if (st) {
		sqlite3_step(st);
		sqlite3_reset(st);
	}
}

int sqlb_end_write(sfs_backend *b, int status)
{
	if (status != SFS_OK) {
		sqlb_rollback(b);
		return status;
	}
	return sqlb_commit(b);
}

int sqlb_end_write_if(sfs_backend *b, int status, int changed)
{
	if (status == SFS_OK && !changed) {
		sqlb_rollback(b); /* nothing to commit, nor to count */
		return SFS_OK;
	}
	return sqlb_end_write(b, status);
}

/* Group commit (backend_i.h): the store's lock is held from
 * sqlb_group_begin to sqlb_group_end except while a writer of the group
 * waits for it to end; nothing but writes of the group runs in between. */
static void sqlb_group_begin(sfs_backend *b)
{
	b->group = 1;
}

static void sqlb_group_hold(sfs_backend *b)
{
	b->group_held = 1;
}

static int sqlb_group_end(sfs_backend *b)
{
	int open = b->group_txn;

	b->group = b->group_txn = b->group_held = 0;
	if (!open)
		return SFS_OK;
	if (sqlite3_get_autocommit(b->db)) {
		/* A write's failure rolled back the whole transaction
		 * (SQLite does that for I/O errors, a full disk, no memory). */
		stamp_end(b, 0);
		qstat_end(b, 0);
		return sfs_err(SFS_IO, "not written: the transaction this write"
		               " shared with others was rolled back by a failed"
		               " write");
	}
	b->in_write = 1; /* the group's transaction, committed as a write */
	return sqlb_commit(b);
}

/* What is at path before SQLite touches it: 0 new or empty, 1 a plaintext
 * SQLite database, 2 something else (encrypted, or not a database). */
static int peek_kind(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char hdr[16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, hdr, sizeof(hdr));
	close(fd);
	if (n <= 0)
		return 0;
	return n == (ssize_t)sizeof(hdr) && !memcmp(hdr, magic, sizeof(hdr))
	       ? 1 : 2;
}

/* An empty file that a read-write open is about to make a store in (every
 * such open makes one, not only SFS_OPEN_CREATE): the store is private, as
 * a new file is, and its -wal and -shm, which SQLite creates with the
 * file's mode, follow. Done on a descriptor, so that the file checked is
 * the file changed; one that is no longer empty was made a store by
 * another process meanwhile, which did this itself. O_NONBLOCK: what is
 * at the name may have become a FIFO since the stat. */
static int make_private(const char *path)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int saverr;

	if (fd < 0)
		return sfs_err(SFS_IO, "cannot open %s: %s", path,
		               strerror(errno));
	if (fstat(fd, &sb) != 0) {
		saverr = errno;
		close(fd);
		return sfs_err(SFS_IO, "cannot stat %s: %s", path,
		               strerror(saverr));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return sfs_err(SFS_FORMAT, "%s is not a regular file", path);
	}
	if (sb.st_size == 0 && (sb.st_mode & 077) &&
	    fchmod(fd, sb.st_mode & 0700) != 0) {
		saverr = errno;
		close(fd);
		return sfs_err(SFS_IO, "cannot make %s private (mode 0600) "
		               "before making a store in it: %s", path,
		               strerror(saverr));
	}
	close(fd);
	return SFS_OK;
}

/* Checks or creates the file before SQLite opens it: SQLite would create a
 * missing file with mode 0644, and state is private, so a new store is
 * created here with 0600 (its -wal and -shm files inherit that mode).
 * An empty file is a store not made yet (a first run that died, `touch`)
 * unless its write-ahead log holds something: SQLite writes page 1 before
 * the first frame, so that log belongs to a store whose file was cut, and
 * making a new store would overwrite it. */
static int prepare_file(const sfs_backend_cfg *cfg, int *created,
                        size_t *made)
{
	char wal[4096];
	struct stat sb, wb;
	int fd, rc;

	*created = 0;
	*made = 0;
	if (stat(cfg->db, &sb) == 0) {
		if (!S_ISREG(sb.st_mode))
			return sfs_err(SFS_FORMAT, "%s is not a regular file",
			               cfg->db);
		if (sb.st_size == 0 &&
		    (size_t)snprintf(wal, sizeof(wal), "%s-wal", cfg->db) <
		    sizeof(wal) && stat(wal, &wb) == 0 && wb.st_size > 0)
			return sfs_err(SFS_FORMAT, "%s is empty but its "
			               "write-ahead log %s is not: the store was "
			               "cut short; refusing to make a new store "
			               "over what is left", cfg->db, wal);
		/* SFS_OPEN_EXCL: nothing to overwrite in an empty file, which
		 * every other call takes for no store. */
		if ((cfg->flags & SFS_OPEN_CREATE) &&
		    (cfg->flags & SFS_OPEN_EXCL) && sb.st_size > 0)
			return sfs_err(SFS_EXISTS, "%s exists", cfg->db);
		if (sb.st_size == 0 && !(cfg->flags & SFS_OPEN_READONLY))
			return make_private(cfg->db);
		return SFS_OK;
	}
	if (errno != ENOENT)
		return sfs_err(SFS_IO, "stat %s: %s", cfg->db, strerror(errno));
	if (!(cfg->flags & SFS_OPEN_CREATE))
		return sfs_err(SFS_NOTFOUND, "%s does not exist", cfg->db);
	rc = util_mkparents(cfg->db, 0700, made);
	if (rc != SFS_OK)
		return rc;
	fd = open(cfg->db, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int saverr = errno;

		util_rmparents(cfg->db, *made);
		*made = 0;
		/* Another process created it between our stat and open. */
		if (saverr == EEXIST && !(cfg->flags & SFS_OPEN_EXCL))
			return SFS_OK;
		return sfs_err(saverr == EEXIST ? SFS_EXISTS : SFS_IO,
		               "create %s: %s", cfg->db, strerror(saverr));
	}
	close(fd);
	*created = 1;
	return SFS_OK;
}

/* Classifies a file opened without a key: SQLite would call an encrypted
 * store "not a database"; the encryption layer can say "needs a key". */
static int check_plain(const char *path)
{
	crypt_kind kind;
	int rc;

	if (peek_kind(path) != 2)
		return SFS_OK;
	rc = crypt_preflight(path, NULL, &kind);
	if (rc == SFS_NOKEY || rc == SFS_FORMAT || rc == SFS_CORRUPT)
		return rc;
	return sfs_err(SFS_FORMAT, "%s is not a SQLite database", path);
}

static int set_pragmas(sfs_backend *b, int busy_ms)
{
	int rc;

	sqlite3_extended_result_codes(b->db, 1);
	rc = sqlite3_busy_timeout(b->db, busy_ms);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "setting the busy timeout");
	/* NORMAL: a commit is durable against a process crash at once, against
	 * power loss after the next checkpoint or sfs_store_sync.
	 * journal_size_limit: when a checkpoint has let the log start over,
	 * the -wal file is cut back to 16,480,032 bytes, the most it reaches
	 * under steady writes (ckpt.c's limit: 4,000 frames of a 4 KiB page
	 * and its 24-byte header, and the log's own 32), so steady writes
	 * never cut and regrow it, but one transaction larger than that (a
	 * value of 64 MiB) no longer leaves its size on disk for as long as
	 * the store stays open. */
	return sqlb_exec(b,
	                 "PRAGMA synchronous=NORMAL;"
	                 "PRAGMA temp_store=MEMORY;"
	                 "PRAGMA cache_size=-65536;"
	                 "PRAGMA journal_size_limit=16480032;",
	                 "setting connection pragmas");
}

/* WAL mode, after the schema: a new store gets its tables in one
 * rollback-journal transaction first, so that no other process ever finds
 * a file with content and no tables, which is what a store that lost its
 * tables looks like (sqlb_schema_init refuses those). The busy timeout is
 * set before: the switch takes an exclusive lock. */
static int set_wal(sfs_backend *b, int busy_ms)
{
	sqlite3_stmt *st = NULL;
	struct timespec t0, t;
	int rc, nap = 1;

	if (b->memory || b->readonly)
		return SFS_OK;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = sqlite3_prepare_v2(b->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
	/* The switch upgrades the statement's read lock to an exclusive
	 * one; SQLite answers SQLITE_BUSY at once, without its busy handler,
	 * when another connection holds the write lock and waits for this
	 * read lock to go (a process making the schema of a new store that
	 * this one is opening too): the statement gives its lock back and
	 * runs again, within the busy timeout, as the handler would have. */
	while (rc == SQLITE_OK &&
	       ((rc = sqlite3_step(st)) & 0xff) == SQLITE_BUSY) {
		sqlite3_reset(st);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 >= busy_ms)
			break;
		sqlite3_sleep(nap);
		nap = nap < 50 ? nap * 2 : 50;
		rc = SQLITE_OK;
	}
	if (rc == SQLITE_ROW &&
	    sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "wal")) {
		sqlite3_finalize(st);
		return sfs_err(SFS_IO, "%s: cannot switch to WAL mode", b->path);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "switching to WAL");
	return SFS_OK;
}

/* ---- a full disk ---------------------------------------------------------
 *
 * Even a delete needs disk space in WAL mode: its pages are appended to
 * the log before anything is freed. So a store keeps a reserve, a file of
 * RESERVE_BYTES beside it (PATH-reserve, made at a read-write open when the
 * disk can spare twice that), and a delete that fails on a full disk gives
 * it back and runs again (CALL_DELETE in store_i.h). From then on, until
 * the disk has room for the reserve again, the connection is "short of
 * space": deletes do not zero the pages they free (secure_delete=FAST:
 * zeroing a 1 MiB value writes 1 MiB more of log) and no automatic
 * checkpoint runs (a checkpoint that must grow the store file would eat
 * the space the reserve gave back, and fail halfway). Pages a delete frees
 * go to SQLite's free list, not to the disk: later writes reuse them, so
 * what a user deletes makes room for what comes next. After every commit
 * while short, the disk is looked at again; with room for the reserve
 * twice over the reserve is taken back and both settings restored. */

#define RESERVE_BYTES (1 << 20)

static int reserve_path(const sfs_backend *b, char *out, size_t n)
{
	return (size_t)snprintf(out, n, "%s-reserve", b->path) < n ? 0 : -1;
}

/* Makes the reserve if it is missing and the disk can spare room for it
 * and as much again: 1 when there is a reserve afterwards. */
static int reserve_take(sfs_backend *b)
{
	char path[4096];
	struct statvfs sv;
	int fd, ok;

	if (reserve_path(b, path, sizeof(path)))
		return 0;
	if (access(path, F_OK) == 0)
		return 1;
	if (statvfs(path, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < 2ull * RESERVE_BYTES)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST; /* another process made it */
	ok = posix_fallocate(fd, 0, RESERVE_BYTES) == 0;
	if (!ok)
		unlink(path);
	close(fd);
	return ok;
}

/* In or out of being short of space (see above). */
static void set_short(sfs_backend *b, int on)
{
	b->short_of_space = on;
	sqlite3_exec(b->db, on ? "PRAGMA secure_delete=FAST" :
	             "PRAGMA secure_delete=ON", NULL, NULL, NULL);
	if (!b->ckpt) /* else its hook looks at short_of_space */
		sqlite3_wal_autocheckpoint(b->db, on ? 0 : 1000);
}

static int sqlb_free_reserve(sfs_backend *b)
{
	char path[4096];

	if (b->memory || b->readonly || reserve_path(b, path, sizeof(path)))
		return SFS_FULL;
	/* A checkpoint round under way could grow the store file into the
	 * room the reserve gives back: it ends first, and none starts while
	 * short (the hook looks at short_of_space). */
	sqlb_ckpt_quiet(b);
	if (unlink(path) != 0)
		return SFS_FULL; /* none, or given back already */
	sfs_log(LOG_WARNING, "%s: the disk is full; the store gave back its "
	        "reserve so that deletes go through", b->path);
	set_short(b, 1);
	return SFS_OK;
}

/* After a commit while short of space: has the disk room again? */
static void space_check(sfs_backend *b)
{
	if (reserve_take(b)) {
		sfs_log(LOG_NOTICE, "%s: the disk has room again; the store "
		        "keeps its reserve", b->path);
		set_short(b, 0);
	}
}

void sqlb_close(sfs_backend *b)
{
	if (!b)
		return;
	sqlb_ckpt_stop(b);
	if (b->db) {
		sqlb_untime_close(b);
		qstat_close(b);
	}
	for (int i = 0; i < ST_MAX; i++)
		sqlite3_finalize(b->st[i]);
	if (b->db)
		sqlite3_close(b->db);
	if (b->vfs)
		crypt_vfs_close(b->vfs);
	stamp_free(b);
	sqlb_sweep_free(b);
	free(b->path);
	free(b);
}

/* In a child after fork (store.c, "Handles inherited across fork"): SQLite
 * keeps what it knows of the locks its process holds on a file in memory,
 * one record per file shared by every connection of the process, and the
 * child inherits that record but not the locks (POSIX record locks belong
 * to a process). A connection the child opens to the store joins the
 * record and takes no lock of its own while the inherited connections
 * seem to hold them; so another process's last close (the parent's
 * sfs_store_close, statectl's) got the store's exclusive lock, deleted
 * the write-ahead log under the child, and the child's commits after it,
 * each SFS_OK, were lost. Closing the inherited connections first ends
 * the record, and the child's own connections lock for real. A
 * connection is closed here only when it was idle at the fork (store.c
 * knows no call was under way; no transaction is open, no statement
 * running): then its close writes nothing, with no checkpoint at close
 * (the parent's connection still works on the log), and unlocks only
 * this process's locks, which are none. */
static int sqlb_forsake(sfs_backend *b)
{
	sqlite3_stmt *st;
	int status;

	if (!b->db)
		return SFS_OK;
	if (!sqlite3_get_autocommit(b->db))
		return SFS_BUSY;
	for (st = sqlite3_next_stmt(b->db, NULL); st;
	     st = sqlite3_next_stmt(b->db, st))
		if (sqlite3_stmt_busy(st))
			return SFS_BUSY;
	status = sqlb_ckpt_forsake(b);
	if (status != SFS_OK)
		return status;
	/* What the parent would have written at its close is its own. */
	b->untimed = NULL;
	b->qstats = NULL;
	for (int i = 0; i < ST_MAX; i++) {
		sqlite3_finalize(b->st[i]);
		b->st[i] = NULL;
	}
	while ((st = sqlite3_next_stmt(b->db, NULL)))
		sqlite3_finalize(st);
	sqlite3_db_config(b->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
	                  (int *)NULL);
	sqlite3_close(b->db);
	b->db = NULL;
	return SFS_OK;
}

/* Whether the disk under the store has less than RESERVE_BYTES free. */
static int disk_below_reserve(const sfs_backend *b)
{
	struct statvfs sv;

	return statvfs(b->path, &sv) == 0 &&
	       (uint64_t)sv.f_bavail * sv.f_frsize < RESERVE_BYTES;
}

/* Whether an open failed for want of disk space: a full disk (SQLITE_FULL),
 * or the shared-memory file (PATH-shm) that a WAL store's first opener
 * sizes to 32 KiB and could not (SQLITE_IOERR_SHMSIZE, ENOSPC). */
static int open_short_of_space(const sfs_backend *b, int status)
{
	int x;

	if (status == SFS_FULL)
		return 1;
	if (!b->db)
		return 0;
	x = sqlite3_extended_errcode(b->db);
	return x == SQLITE_FULL || x == SQLITE_IOERR_SHMSIZE ||
	       sqlite3_system_errno(b->db) == ENOSPC;
}

/* An open that failed for want of space gives back the reserve before it
 * runs once more: else a store on a full disk that no process holds open
 * could not be opened at all (its -shm file needs room), and nothing
 * could delete to make room: not statectl, not a new mount. 1 when the
 * reserve was given back. */
static int open_free_reserve(sfs_backend *b)
{
	char path[4096];

	if (b->memory || reserve_path(b, path, sizeof(path)) ||
	    unlink(path) != 0)
		return 0;
	sfs_log(LOG_WARNING, "%s: the disk is full; the store gave back its "
	        "reserve so that it can be opened", b->path);
	return 1;
}

/* A rekey killed before its rename leaves its copy, PATH.rekey (and its
 * -journal): written under the new key, or in plaintext by a rekey to a
 * plaintext store, which would then lie on disk beside the encrypted
 * store until the next rekey. An open connection in WAL mode holds a
 * shared lock on the store for as long as it is open, and a rekey runs
 * only while it holds the store alone (exclusive, SFS_BUSY otherwise), so
 * once a read-write open has got here no rekey of this store is running
 * and the copy is a leftover: it goes. */
static void rekey_leftover(const sfs_backend *b)
{
	char tmp[PATH_MAX + 16];
	int gone = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.rekey", b->path) >=
	    sizeof(tmp))
		return;
	if (unlink(tmp) == 0)
		gone = 1;
	strcat(tmp, "-journal");
	if (unlink(tmp) == 0)
		gone = 1;
	if (gone)
		sfs_log(LOG_NOTICE, "%s: removed %s.rekey, the copy of a rekey "
		        "that did not finish", b->path, b->path);
}

static int sqlb_open_once(const sfs_backend_cfg *given, sfs_backend **out)
{
	sfs_backend *b = calloc(1, sizeof(*b));
	sfs_backend_cfg abs = *given;
	const sfs_backend_cfg *cfg = &abs;
	const char *vfsname = NULL;
	crypt_kind kind;
	int flags, rc, status, created = 0, freed = 0, rofs = 0;
	size_t made = 0; /* the directories prepare_file made (util_i.h) */
	char *uri = NULL;
	int excl = (given->flags & SFS_OPEN_CREATE) &&
	           (given->flags & SFS_OPEN_EXCL);
	struct stat sb;

	if (!b)
		return sfs_err(SFS_NOMEM, "allocating a store");
	b->memory = strcmp(given->db, ":memory:") == 0;
	b->readonly = !!(given->flags & SFS_OPEN_READONLY);
	/* The store's file is named by an absolute path from here on
	 * (b->path, and cfg below): the reserve, the checkpoint thread's
	 * connection, the directory fsynced, info's sizes and verify all
	 * build on it, and a process may change its working directory while
	 * the store is open (the daemon, detached, goes to "/"). */
	status = b->memory ? ((b->path = strdup(given->db)) ? SFS_OK :
	                      sfs_err(SFS_NOMEM, "allocating a store"))
	                   : util_abspath(given->db, &b->path);
	if (status != SFS_OK) {
		free(b);
		return status;
	}
	abs.db = b->path;
	if (!b->memory) {
		status = prepare_file(cfg, &created, &made);
		if (status != SFS_OK)
			goto fail;
		if (cfg->key) {
			status = crypt_preflight(cfg->db, cfg->key, &kind);
			if (status != SFS_OK)
				goto fail;
			status = crypt_vfs_open(cfg->key, &b->vfs);
			if (status != SFS_OK)
				goto fail;
			vfsname = crypt_vfs_name(b->vfs);
		} else {
			status = check_plain(cfg->db);
			if (status == SFS_OK)
				status = crypt_plain_vfs(&vfsname);
			if (status != SFS_OK)
				goto fail;
		}
	}
	flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
	        (b->readonly ? SQLITE_OPEN_READONLY
	                     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	/* A store on a read-only medium (rofs.c): immutable when its log has
	 * nothing to replay, else as any store (its -shm is needed). */
	if (b->readonly && !b->memory && sqlb_rofs_super(cfg->db)) {
		rofs = 1 + sqlb_rofs_unclean(cfg->db);
		if (rofs == 1 && !(uri = sqlb_rofs_uri(cfg->db))) {
			status = sfs_err(SFS_NOMEM, "allocating a store");
			goto fail;
		}
	}
again:
	rc = sqlite3_open_v2(uri ? uri : cfg->db, &b->db,
	                     uri ? flags | SQLITE_OPEN_URI : flags, vfsname);
	if (rc != SQLITE_OK) {
		status = sqlb_fail(b, rc, cfg->db);
		if (!b->memory)
			status = explain_long_path(cfg->db, status);
		goto fail;
	}
	if (b->vfs) {
		status = crypt_db_setup(b->db);
		if (status != SFS_OK)
			goto fail;
	}
	status = set_pragmas(b, cfg->busy_timeout_ms);
	if (status == SFS_OK)
		status = sqlb_schema_init(b);
	/* SFS_OPEN_EXCL took the empty file for no store; another process
	 * made one in it since (two `statectl init` at once) */
	if (status == SFS_OK && excl && !b->made_schema)
		status = sfs_err(SFS_EXISTS, "%s was made a store by another "
		                 "process meanwhile", cfg->db);
	if (status == SFS_OK)
		status = set_wal(b, cfg->busy_timeout_ms);
	if (status != SFS_OK && !created && !freed &&
	    open_short_of_space(b, status) && open_free_reserve(b)) {
		/* once more, from a connection that holds nothing */
		sqlite3_db_config(b->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
		                  (int *)NULL);
		sqlite3_close(b->db);
		b->db = NULL;
		freed = 1;
		sfs_err_clear();
		goto again;
	}
	if (status != SFS_OK && !b->memory)
		status = sqlb_explain_open(cfg->db, status, rofs == 2,
		                           b->readonly);
	if (status != SFS_OK && !b->memory)
		status = crypt_explain_short(cfg->db, cfg->key, status);
	if (status != SFS_OK)
		goto fail;
	/* This open gave the reserve back, or another process did and the
	 * disk has not even its size free: short of space from the start,
	 * so that deletes do not zero what they free, until the disk has
	 * room for the reserve again. */
	if (!b->memory && !b->readonly &&
	    (freed || (!reserve_take(b) && disk_below_reserve(b))))
		set_short(b, 1);
	if (!b->memory && !b->readonly && (cfg->flags & SFS_OPEN_WAL_THREAD))
		sqlb_ckpt_start(b, vfsname, cfg->busy_timeout_ms);
	if (!b->memory && !b->readonly)
		rekey_leftover(b);
	free(uri);
	*out = b;
	return SFS_OK;
fail:
	free(uri);
	/* What could not be opened is left exactly as it was: no checkpoint
	 * at close, which would also delete the write-ahead log. */
	if (b->db)
		sqlite3_db_config(b->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
		                  (int *)NULL);
	/* A file that was empty and is not now, though this call did not
	 * make a store in it, holds another process's store, made meanwhile
	 * (its key is not ours: the failure is a wrong key). It stays, and
	 * with SFS_OPEN_EXCL it exists. (Not a directory, whose size is
	 * not 0 either: that is no store, as the open said.) */
	if (!b->memory && !b->made_schema && stat(cfg->db, &sb) == 0 &&
	    S_ISREG(sb.st_mode) && sb.st_size > 0) {
		created = 0;
		if (excl && status != SFS_EXISTS)
			status = sfs_err(SFS_EXISTS, "%s was made a store by "
			                 "another process meanwhile", cfg->db);
	}
	/* A file this call created and could not make a store of goes, and
	 * so do the directories made for it, deepest first, each while it
	 * is empty: the file system is left as it was found. One it made a
	 * store of (its tables committed) stays, although a later step
	 * failed (the switch to WAL past the busy timeout): other processes
	 * may have opened it since, and the next open finishes the job. */
	if (created && !b->made_schema) {
		char aux[4096];

		unlink(cfg->db);
		snprintf(aux, sizeof(aux), "%s-wal", cfg->db);
		unlink(aux);
		snprintf(aux, sizeof(aux), "%s-shm", cfg->db);
		unlink(aux);
		snprintf(aux, sizeof(aux), "%s-journal", cfg->db);
		unlink(aux);
		util_rmparents(cfg->db, made);
	}
	sqlb_close(b); /* frees b->path, which cfg->db is */
	return status;
}

/* A rekey or a restore renames a new file over the store: an open that
 * read the old file and then found it replaced (the VFS refuses a lock on
 * a file that is no longer at its name, "open it again") opens again, the
 * new file, a few times at most: what it did was read. */
static int sqlb_open(const sfs_backend_cfg *given, sfs_backend **out)
{
	struct stat before, after;
	int status;

	for (int i = 0;; i++) {
		int known = stat(given->db, &before) == 0;

		status = sqlb_open_once(given, out);
		if (status == SFS_OK || status == SFS_NOMEM || i == 10 ||
		    !known || stat(given->db, &after) != 0 ||
		    (before.st_dev == after.st_dev &&
		     before.st_ino == after.st_ino))
			return status;
	}
}

/* sfs_store_sync: in WAL mode with synchronous=NORMAL a commit is appended
 * to the -wal file without fsync. One fsync of the -wal file makes every
 * commit in it durable; frames already checkpointed were fsynced in the main
 * file by the checkpoint. The main file and its directory are synced too,
 * for a store that was just created. */
static int sqlb_sync(sfs_backend *b)
{
	sqlite3_file *f = NULL;
	int rc;

	if (b->memory)
		return SFS_OK;
	rc = sqlite3_file_control(b->db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
	                          &f);
	if (rc == SQLITE_OK && f && f->pMethods) {
		rc = f->pMethods->xSync(f, SQLITE_SYNC_NORMAL);
		if (rc != SQLITE_OK)
			return sqlb_fail(b, rc, "syncing the write-ahead log");
	}
	f = NULL;
	rc = sqlite3_file_control(b->db, "main", SQLITE_FCNTL_FILE_POINTER, &f);
	if (rc == SQLITE_OK && f && f->pMethods) {
		rc = f->pMethods->xSync(f, SQLITE_SYNC_NORMAL);
		if (rc != SQLITE_OK)
			return sqlb_fail(b, rc, "syncing the store");
	}
	return util_fsync_parent(b->path);
}

/* PRAGMA data_version changes when another connection commits and stays put
 * for our own commits, which b->commits counts: the sum changes on every
 * commit by anyone and never goes back. */
static int sqlb_version(sfs_backend *b, uint64_t *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_DATA_VERSION, "PRAGMA data_version",
	                             &status);
	int rc;
	uint64_t dv;

	if (!st)
		return status;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return sqlb_fail(b, rc, "reading the data version");
	}
	dv = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	*out = dv + b->commits;
	return SFS_OK;
}

/* Every name is a file path (or ":memory:"): SQLite is the backend of
 * last resort, asked after every other. */
static int sqlb_accepts(const char *db)
{
	(void)db;
	return 1;
}

static int sqlb_probe(const char *db, be_kind *kind)
{
	crypt_kind k;
	int rc;

	if (strcmp(db, ":memory:") == 0) {
		*kind = BE_KIND_NEW;
		return SFS_OK;
	}
	rc = crypt_preflight(db, NULL, &k);
	if (rc == SFS_NOKEY) {
		sfs_err_clear();
		*kind = BE_KIND_ENCRYPTED;
		return SFS_OK;
	}
	if (rc == SFS_OK)
		*kind = k == CRYPT_KIND_NEW ? BE_KIND_NEW : k == CRYPT_KIND_PLAIN
		        ? BE_KIND_PLAIN : BE_KIND_ENCRYPTED;
	return rc;
}

/* The page cache (cache_size, 64 MiB at most) is for the pages calls
 * come back to: indexes, small rows, a listing's pages. A call that moved
 * more pages than SQLB_BULK_PAGES through it (a large value written, read
 * or deleted, an export, a verify) filled it with pages nobody needs
 * again and leaves it empty, so a long-lived process (the daemon) does
 * not keep 64 MiB of a value it wrote once. Listings go a page of names
 * per call and keep their pages. The freed pages are small blocks spread
 * over the allocator's arenas, which glibc keeps as free space unless
 * asked (a daemon that wrote and deleted a hundred 16 MiB values stayed
 * at 94 MiB without malloc_trim, 8 with it): after such a call the free
 * pages go back to the system too. */
#define SQLB_BULK_PAGES 256

static void sqlb_settle(sfs_backend *b)
{
	int miss = 0, written = 0, high;

	/* Nothing while a group's transaction is open: its dirty pages
	 * cannot be given back yet, and the counters, left unread, add up
	 * until the call that ends it reads them all. */
	if (!b || !b->db || b->group_txn)
		return;
	sqlite3_db_status(b->db, SQLITE_DBSTATUS_CACHE_MISS, &miss, &high, 1);
	sqlite3_db_status(b->db, SQLITE_DBSTATUS_CACHE_WRITE, &written, &high,
	                  1);
	if (miss + written <= SQLB_BULK_PAGES)
		return;
	sqlite3_db_release_memory(b->db);
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

const sfs_backend_ops sqlb_ops = {
	.name = "sqlite",
	.accepts = sqlb_accepts,
	.open = sqlb_open,
	.probe = sqlb_probe,
	.rekey = sqlb_rekey,
	.close = sqlb_close,
	.forsake = sqlb_forsake,
	.fork_hold = sqlb_ckpt_fork_hold,
	.sync = sqlb_sync,
	.version = sqlb_version,
	.group_begin = sqlb_group_begin,
	.group_end = sqlb_group_end,
	.group_hold = sqlb_group_hold,
	.settle = sqlb_settle,
	.kv_put_many = sqlb_kv_put_many,
	.kv_get = sqlb_kv_get,
	.kv_get_many = sqlb_kv_get_many,
	.kv_stat = sqlb_kv_stat,
	.kv_delete = sqlb_kv_delete,
	.kv_set_mtime = sqlb_kv_set_mtime,
	.kv_edit = sqlb_kv_edit,
	.kv_read = sqlb_kv_read,
	.kv_scan = sqlb_kv_scan,
	.kv_delete_range = sqlb_kv_delete_range,
	.kv_drain = sqlb_kv_drain,
	.kv_rename = sqlb_kv_rename,
	.dir_list = sqlb_dir_list,
	.dir_exists = sqlb_dir_exists,
	.dir_create = sqlb_dir_create,
	.dir_remove = sqlb_dir_remove,
	.dir_rename = sqlb_dir_rename,
	.counter_get = sqlb_counter_get,
	.counter_add = sqlb_counter_add,
	.counter_set = sqlb_counter_set,
	.counter_delete = sqlb_counter_delete,
	.counter_rename = sqlb_counter_rename,
	.counter_scan = sqlb_counter_scan,
	.log_append = sqlb_log_append,
	.log_scan = sqlb_log_scan,
	.log_get = sqlb_log_get,
	.log_stat = sqlb_log_stat,
	.log_delete = sqlb_log_delete,
	.log_clear = sqlb_log_clear,
	.queue_push = sqlb_queue_push,
	.queue_pop = sqlb_queue_pop,
	.item_count = sqlb_item_count,
	.item_scan = sqlb_item_scan,
	.item_get = sqlb_item_get,
	.item_stat = sqlb_item_stat,
	.item_delete = sqlb_item_delete,
	.item_clear = sqlb_item_clear,
	.claim = sqlb_claim,
	.claim_item = sqlb_claim_item,
	.kv_claim = sqlb_kv_claim,
	.claim_items = sqlb_claim_items,
	.claim_heartbeat = sqlb_claim_heartbeat,
	.claim_settle = sqlb_claim_settle,
	.item_settle = sqlb_item_settle,
	.item_heartbeat = sqlb_item_heartbeat,
	.item_requeue = sqlb_item_requeue,
	.policy_set = sqlb_policy_set,
	.policy_get = sqlb_policy_get,
	.queue_gc = sqlb_queue_gc,
	.exec_clear = sqlb_exec_clear,
	.checkpoint = sqlb_checkpoint,
	.restore = sqlb_restore,
	.info = sqlb_info,
	.stats = sqlb_stats,
	.flush_counts = sqlb_flush_counts,
	.verify = sqlb_verify,
	.free_reserve = sqlb_free_reserve,
	.export_rows = sqlb_export,
	.import_rows = sqlb_import,
};
