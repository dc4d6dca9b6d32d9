/*
 * value.c - parts of a value (function_state.value) over SQLite:
 * ranged reads and edit lists, with SQLite's incremental BLOB I/O.
 *
 * A value is one BLOB column of a table the SDKs share, so its layout is
 * fixed: SQLite stores a large BLOB as a chain of overflow pages and can
 * change bytes in place (sqlite3_blob_write) but cannot change a BLOB's
 * length without writing the whole record again. An edit list is therefore
 * planned first, against the value's current length (length() of a BLOB
 * reads no overflow page):
 *   keep   the prefix of the old bytes that survives every truncation;
 *   final  the length afterwards;
 *   writes the bytes written, each clipped to what later truncations
 *          leave, at absolute offsets (appends become writes at the end).
 * When final equals the old length and keep is all of it, the writes go in
 * place through a BLOB handle: the pages whose bytes they change are
 * written (each write is compared with the bytes it replaces, in 4 KiB
 * pieces), and SQLite reads the overflow pages before the first of them
 * only for their next-page pointers. Otherwise the row gets a new BLOB of
 * the final length (bound as a zeroblob, which SQLite writes without
 * building it in memory), the kept prefix (read beforehand, the only old
 * bytes read) and the writes go into it in place, and the pages are
 * written once at commit since they are dirty in the same transaction.
 * The common whole replacement (keep 0, one write covering everything)
 * binds its bytes directly, as a put does, below SQLB_BIG_VALUE (SQLite
 * then compares a record of the same length with the old one and writes
 * the pages that differ); from SQLB_BIG_VALUE on it goes in place when the
 * length stays (cp over a file, an editor's save: only what changed is
 * written) and into a zeroblob otherwise, so that SQLite builds no copy of
 * it in memory.
 *
 * Everything runs in one BEGIN IMMEDIATE transaction, so an edit is atomic
 * against other processes. BLOB handles are closed before the commit (an
 * open one would keep a statement running). Offsets given to SQLite's BLOB
 * functions are ints: values are at most SQLite's SQLITE_MAX_LENGTH (10^9)
 * and max_value cannot be set above it (SFS_TOOBIG beyond INT_MAX here).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"
#include "util_i.h"

/* A write of the plan: bytes at an absolute offset, inside [0, final). */
typedef struct pwrite_ {
	uint64_t off;
	const unsigned char *p;
	size_t n;
} pwrite_;

typedef struct plan {
	uint64_t keep, final;
	pwrite_ *w;       /* malloc'd, in the order of the list */
	size_t nw;
} plan;

static void plan_free(plan *p)
{
	free(p->w);
	p->w = NULL;
}

/* Plans edits against a value of length len (see the file's comment). */
static int plan_make(const sfs_edit *e, size_t n, uint64_t len,
                     uint64_t max_value, plan *out)
{
	uint64_t cur = len, keep = len, lim = UINT64_MAX, *at;
	plan p = { 0, 0, NULL, 0 };

	at = n ? malloc(n * sizeof(*at)) : NULL;
	p.w = n ? malloc(n * sizeof(*p.w)) : NULL;
	if (n && (!at || !p.w)) {
		free(at);
		free(p.w);
		return sfs_err(SFS_NOMEM, "planning an edit");
	}
	/* Forward: where each write lands, the surviving old prefix, the
	 * length after each step (checked against the limit as it goes, so
	 * cur never overflows: every step adds at most max_value). */
	for (size_t i = 0; i < n; i++) {
		switch (e[i].op) {
		case SFS_EDIT_TRUNCATE:
			keep = e[i].off < keep ? e[i].off : keep;
			cur = e[i].off;
			at[i] = 0;
			break;
		case SFS_EDIT_WRITE:
			at[i] = e[i].off;
			if (e[i].off + e[i].bytes.len > cur)
				cur = e[i].off + e[i].bytes.len;
			break;
		default: /* SFS_EDIT_APPEND */
			at[i] = cur;
			cur += e[i].bytes.len;
			break;
		}
		if (cur > max_value) {
			free(at);
			plan_free(&p);
			return sfs_err(SFS_TOOBIG, "the value would be %llu bytes,"
			               " more than the store's limit of %llu",
			               (unsigned long long)cur,
			               (unsigned long long)max_value);
		}
	}
	/* Backward: each write keeps what the truncations after it leave. */
	for (size_t i = n; i-- > 0;) {
		uint64_t end;

		if (e[i].op == SFS_EDIT_TRUNCATE) {
			lim = e[i].off < lim ? e[i].off : lim;
			continue;
		}
		end = at[i] + e[i].bytes.len;
		if (end > lim)
			end = lim;
		if (end > at[i])
			p.w[p.nw++] = (pwrite_){ at[i], e[i].bytes.ptr,
			                         (size_t)(end - at[i]) };
	}
	free(at);
	/* Collected backwards: restore the list's order (later writes win). */
	for (size_t i = 0; i < p.nw / 2; i++) {
		pwrite_ t = p.w[i];
		p.w[i] = p.w[p.nw - 1 - i];
		p.w[p.nw - 1 - i] = t;
	}
	if (cur > INT_MAX) {
		plan_free(&p);
		return sfs_err(SFS_TOOBIG, "a value of %llu bytes is beyond"
		               " SQLite's BLOB offsets", (unsigned long long)cur);
	}
	p.keep = keep;
	p.final = cur;
	*out = p;
	return SFS_OK;
}

/* The row of a value and its length. SFS_NOTFOUND when absent. */
static int locate(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  sfs_slice key, int64_t *rowid, uint64_t *len)
{
	int status = SFS_OK, rc;
	sqlite3_stmt *st = sqlb_stmt(b, ST_KV_LOCATE,
	        "SELECT rowid, length(value) FROM function_state WHERE "
	        SQLB_KEYEQ, &status);

	if (!st)
		return status;
	sqlb_bind_key(st, scope, ns, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*rowid = sqlite3_column_int64(st, 0);
		*len = (uint64_t)sqlite3_column_int64(st, 1);
		status = SFS_OK;
	} else {
		status = rc == SQLITE_DONE ? SFS_NOTFOUND
		                           : sqlb_fail(b, rc, "finding a value");
	}
	sqlite3_reset(st);
	return status;
}

static int blob_open(sfs_backend *b, int64_t rowid, int writing,
                     sqlite3_blob **out)
{
	int rc = sqlite3_blob_open(b->db, "main", "function_state", "value",
	                           rowid, writing, out);

	if (rc != SQLITE_OK) {
		sqlite3_blob_close(*out);
		*out = NULL;
		return sqlb_fail(b, rc, "opening a value");
	}
	return SFS_OK;
}

/* Writes n bytes at off over the old bytes of a BLOB, 4 KiB at a time,
 * leaving alone the pieces that are equal: a page is written only when
 * a byte of it changes. */
static int blob_overwrite(sqlite3_blob *bl, const unsigned char *p,
                          size_t n, uint64_t off)
{
	unsigned char old[4096];
	int rc = SQLITE_OK;

	while (n && rc == SQLITE_OK) {
		size_t k = n < sizeof(old) ? n : sizeof(old);

		rc = sqlite3_blob_read(bl, old, (int)k, (int)off);
		if (rc == SQLITE_OK && memcmp(old, p, k))
			rc = sqlite3_blob_write(bl, p, (int)k, (int)off);
		p += k;
		off += k;
		n -= k;
	}
	return rc;
}

/* Writes the plan's writes into the row's BLOB (already final length):
 * after the first keep bytes of prefix into a new BLOB when prefix is not
 * NULL, else over the old bytes (blob_overwrite). */
static int blob_fill(sfs_backend *b, int64_t rowid, const plan *p,
                     const unsigned char *prefix)
{
	sqlite3_blob *bl = NULL;
	int status = blob_open(b, rowid, 1, &bl), rc = SQLITE_OK;

	if (status != SFS_OK)
		return status;
	if (prefix && p->keep)
		rc = sqlite3_blob_write(bl, prefix, (int)p->keep, 0);
	for (size_t i = 0; i < p->nw && rc == SQLITE_OK; i++)
		rc = prefix ? sqlite3_blob_write(bl, p->w[i].p, (int)p->w[i].n,
		                                 (int)p->w[i].off)
		            : blob_overwrite(bl, p->w[i].p, p->w[i].n,
		                             p->w[i].off);
	if (rc != SQLITE_OK)
		status = sqlb_fail(b, rc, "writing a value");
	sqlite3_blob_close(bl);
	return status;
}

/* Reads n bytes at off of the row's BLOB into dst. */
static int blob_get(sfs_backend *b, int64_t rowid, uint64_t off, size_t n,
                    void *dst)
{
	sqlite3_blob *bl = NULL;
	int status, rc;

	if (n == 0)
		return SFS_OK;
	status = blob_open(b, rowid, 0, &bl);
	if (status != SFS_OK)
		return status;
	rc = sqlite3_blob_read(bl, dst, (int)n, (int)off);
	if (rc != SQLITE_OK)
		status = sqlb_fail(b, rc, "reading a value");
	sqlite3_blob_close(bl);
	return status;
}

/* Gives the row (existing: rowid; else a new one, *rowid set) a new BLOB:
 * the bytes of v, or final zero bytes when v.ptr is NULL. */
static int set_row(sfs_backend *b, int exists, int64_t *rowid,
                   sfs_slice scope, sfs_slice ns, sfs_slice key,
                   sfs_slice v, uint64_t final)
{
	int status = SFS_OK, col = exists ? 2 : 4;
	sqlite3_stmt *st = exists
	        ? sqlb_stmt(b, ST_KV_SET_ROW,
	                    "UPDATE function_state SET value=?2 WHERE rowid=?1",
	                    &status)
	        : sqlb_stmt(b, ST_KV_INSERT_ROW,
	                    "INSERT INTO function_state (scope_id, ns, key,"
	                    " value) VALUES (?1, ?2, ?3, ?4)", &status);

	if (!st)
		return status;
	if (exists)
		sqlite3_bind_int64(st, 1, *rowid);
	else
		sqlb_bind_key(st, scope, ns, key);
	if (v.ptr)
		sqlb_bind(st, col, v);
	else
		sqlite3_bind_zeroblob64(st, col, final);
	status = sqlb_run(b, st, "writing a value");
	sqlite3_clear_bindings(st); /* v is the caller's */
	if (status == SFS_OK && !exists)
		*rowid = sqlite3_last_insert_rowid(b->db);
	return status;
}

static int edit_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, const sfs_edit *e, size_t n,
                   unsigned flags, uint64_t max_value, uint64_t *size)
{
	int64_t rowid = 0;
	uint64_t len = 0;
	unsigned char *prefix = NULL;
	plan p = { 0, 0, NULL, 0 };
	int exists, whole, status = locate(b, scope, ns, key, &rowid, &len);

	if (status != SFS_OK && status != SFS_NOTFOUND)
		return status;
	exists = status == SFS_OK;
	if (!exists && !(flags & SFS_EDIT_CREATE))
		return sfs_err(SFS_NOTFOUND, "no such key");
	if (exists && (flags & SFS_EDIT_EXCL))
		return sfs_err(SFS_EXISTS, "the key exists");
	status = plan_make(e, n, len, max_value, &p);
	if (status != SFS_OK)
		return status;
	whole = p.keep == 0 && p.nw == 1 && p.w[0].off == 0 &&
	        p.w[0].n == p.final;
	if (exists && p.final == len &&
	    (p.keep == len || (whole && p.final >= SQLB_BIG_VALUE))) {
		/* In place: the length stays, every old byte is kept or
		 * written over. */
		status = p.nw ? blob_fill(b, rowid, &p, NULL) : SFS_OK;
	} else if (whole && p.final < SQLB_BIG_VALUE) {
		/* A whole replacement: its bytes as they are. */
		status = set_row(b, exists, &rowid, scope, ns, key,
		                 sfs_bytes(p.w[0].p, p.w[0].n), p.final);
	} else {
		if (p.keep && !(prefix = malloc(p.keep)))
			status = sfs_err(SFS_NOMEM, "reading a value's prefix");
		else
			status = blob_get(b, rowid, 0, p.keep, prefix);
		if (status == SFS_OK)
			status = set_row(b, exists, &rowid, scope, ns, key,
			                 SFS_NONE, p.final);
		if (status == SFS_OK && (p.keep || p.nw))
			status = blob_fill(b, rowid, &p, prefix);
		free(prefix);
	}
	if (status == SFS_OK)
		status = sqlb_kv_time(b, scope, ns, key, sfs_clock_mtime_ns());
	if (status == SFS_OK)
		*size = p.final;
	plan_free(&p);
	return status;
}

int sqlb_kv_edit(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 const sfs_edit *edits, size_t n, unsigned flags,
                 uint64_t max_value, uint64_t *size)
{
	uint64_t v = 0;
	int status = sqlb_begin_stamped(b);

	if (status == SFS_OK)
		status = sqlb_end_write(b, edit_tx(b, scope, ns, key, edits, n,
		                                   flags, max_value, &v));
	if (status == SFS_OK && size)
		*size = v;
	return status;
}

static int read_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                   sfs_slice key, uint64_t off, size_t want, sfs_buf *out,
                   uint64_t *size)
{
	int64_t rowid;
	uint64_t len;
	size_t n = 0;
	unsigned char *p;
	int status = locate(b, scope, ns, key, &rowid, &len);

	if (status != SFS_OK)
		return status;
	if (off < len)
		n = len - off < want ? (size_t)(len - off) : want;
	if (!(p = malloc(n + 1)))
		return sfs_err(SFS_NOMEM, "reading %zu bytes of a value", n);
	status = blob_get(b, rowid, off, n, p);
	if (status != SFS_OK) {
		free(p);
		return status;
	}
	p[n] = 0;
	out->ptr = p;
	out->len = n;
	*size = len;
	return SFS_OK;
}

int sqlb_kv_read(sfs_backend *b, sfs_slice scope, sfs_slice ns, sfs_slice key,
                 uint64_t off, size_t len, sfs_buf *out, uint64_t *size)
{
	sfs_buf v = { NULL, 0 };
	uint64_t total = 0;
	int status = sqlb_begin_read(b); /* the length and the bytes: one
	                                    snapshot */

	if (status != SFS_OK)
		return status;
	status = read_tx(b, scope, ns, key, off, len, &v, &total);
	if (status == SFS_OK) {
		status = sqlb_commit(b);
	} else {
		sqlb_rollback(b);
	}
	if (status != SFS_OK) {
		sfs_buf_free(&v);
		return status;
	}
	*out = v;
	if (size)
		*size = total;
	return SFS_OK;
}
