/*
 * whole.c - operations on a whole scope or the whole store: execution
 * clear, checkpoint, restore, info and verify.
 *
 * Checkpoint is VACUUM INTO a temporary file beside the target, through the
 * connection's own VFS (so an encrypted store gives an encrypted copy with
 * the same key). VACUUM INTO reads the source inside one read transaction:
 * the copy is one consistent snapshot however much other processes write
 * meanwhile, and unlike the backup API it never restarts when they do.
 * SQLite does not fsync the copy; we do, then link it into place (which
 * fails if the target exists, with no window for a race) and fsync the
 * directory. A crash leaves at worst a stray temporary file, never a
 * half-written file under the target's name.
 *
 * Restore attaches the checkpoint through the same VFS (a wrong key or a
 * damaged page fails here, before anything changes), checks it page by page,
 * then replaces every table in ONE write transaction: other processes see
 * one commit, and any failure rolls back to the untouched live store. The
 * AUTOINCREMENT sequences end at the larger of the live and the checkpoint
 * value, so ids never go backwards: a consumer holding a log cursor does not
 * miss entries appended after the restore.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlite_i.h"
#include "util_i.h"

/* --- execution clear ---------------------------------------------------- */

int sqlb_exec_clear(sfs_backend *b, sfs_slice scope, uint64_t *count)
{
	/* The log's id range first (for its time map), then the counted
	 * statements (their changes() make the count), then the side tables,
	 * which are not rows of the SDK's schema. */
	static const char *const sql[] = {
		("SELECT min(id), max(id) FROM function_state_log"
		 " WHERE scope_id=?1"),
		"DELETE FROM function_state WHERE scope_id=?1",
		"DELETE FROM function_state_log WHERE scope_id=?1",
		"DELETE FROM function_counter WHERE scope_id=?1",
		"DELETE FROM statefs_kv_time WHERE scope=?1",
		"DELETE FROM statefs_counter_time WHERE scope=?1",
		"DELETE FROM statefs_dir WHERE scope=?1 AND family IN (1,2,3)",
	};
	uint64_t total = 0;
	int64_t lo = 0, hi = -1;
	int status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		sqlite3_stmt *st;
		int rc = sqlite3_prepare_v2(b->db, sql[i], -1, &st, NULL);

		if (rc != SQLITE_OK) {
			status = sqlb_fail(b, rc, "clearing a scope");
			break;
		}
		sqlb_bind(st, 1, scope);
		rc = sqlite3_step(st);
		if (i == 0 && rc == SQLITE_ROW) {
			if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
				lo = sqlite3_column_int64(st, 0);
				hi = sqlite3_column_int64(st, 1);
			}
			rc = SQLITE_DONE;
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE) {
			status = sqlb_fail(b, rc, "clearing a scope");
			break;
		}
		if (i >= 1 && i <= 3)
			total += (uint64_t)sqlite3_changes64(b->db);
	}
	if (status == SFS_OK)
		status = tm_prune(b, TM_LOG, lo, hi);
	status = sqlb_end_write(b, status);
	if (status == SFS_OK && count)
		*count = total;
	return status;
}

/* --- progress ----------------------------------------------------------- */

typedef struct progress {
	sfs_progress_fn fn;
	void *ctx;
	const char *file;     /* checkpoint: the file being written */
	uint64_t page_size;
	uint64_t done, total;
	int cancelled;
} progress;

/* SQLite's progress handler: reports and lets the caller cancel. For a
 * checkpoint, the work done is the size of the copy so far in pages. */
static int on_progress(void *arg)
{
	progress *p = arg;
	struct stat sb;

	if (p->file && p->page_size && stat(p->file, &sb) == 0)
		p->done = (uint64_t)sb.st_size / p->page_size;
	if (p->total < p->done)
		p->total = p->done;
	if (p->fn(p->done, p->total, p->ctx)) {
		p->cancelled = 1;
		return 1;
	}
	return 0;
}

static void progress_on(sfs_backend *b, progress *p)
{
	if (p->fn)
		sqlite3_progress_handler(b->db, 10000, on_progress, p);
}

static void progress_off(sfs_backend *b)
{
	sqlite3_progress_handler(b->db, 0, NULL, NULL);
}

/* Reports one step outside SQLite; nonzero from the caller cancels. */
static int report(progress *p)
{
	if (p->fn && p->fn(p->done, p->total, p->ctx)) {
		p->cancelled = 1;
		return sfs_err(SFS_CANCELLED, "cancelled by the caller");
	}
	return SFS_OK;
}

static int pragma_int(sfs_backend *b, const char *sql, uint64_t *v)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, sql);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? SFS_OK : sqlb_fail(b, rc, sql);
}

/* --- checkpoint --------------------------------------------------------- */

int sqlb_checkpoint(sfs_backend *b, const char *path,
                    sfs_progress_fn fn, void *ctx)
{
	progress p = { fn, ctx, NULL, 0, 0, 0, 0 };
	char *tmp = NULL;
	sqlite3_stmt *st = NULL;
	struct stat sb;
	int rc, status, fd;

	if (stat(path, &sb) == 0)
		return sfs_err(SFS_EXISTS, "%s exists", path);
	if (errno != ENOENT)
		return sfs_err(SFS_IO, "stat %s: %s", path, strerror(errno));
	tmp = util_tmp_beside(path, ".statefs-ckpt-");
	if (!tmp)
		return sfs_err(SFS_NOMEM, "naming a temporary file");
	status = pragma_int(b, "PRAGMA page_size", &p.page_size);
	if (status == SFS_OK)
		status = pragma_int(b, "PRAGMA page_count", &p.total);
	if (status == SFS_OK)
		status = report(&p);
	if (status != SFS_OK)
		goto out;
	/* VACUUM INTO accepts an empty file: create it private, as the store
	 * is (SQLite would create it 0644). */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		status = sfs_err(SFS_IO, "create %s: %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	p.file = tmp;
	rc = sqlite3_prepare_v2(b->db, "VACUUM INTO ?1", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC);
		progress_on(b, &p);
		rc = sqlite3_step(st);
		progress_off(b);
	}
	if (rc != SQLITE_DONE) {
		status = p.cancelled ? sfs_err(SFS_CANCELLED, "cancelled by the"
		                               " caller")
		                     : sqlb_fail(b, rc, "writing a checkpoint");
		goto out;
	}
	status = util_fsync_file(tmp);
	if (status != SFS_OK)
		goto out;
	/* link() fails if path appeared meanwhile: never replace a file. */
	if (link(tmp, path) != 0) {
		status = errno == EEXIST ? sfs_err(SFS_EXISTS, "%s exists", path)
		       : sfs_err(errno == ENOSPC ? SFS_FULL : SFS_IO,
		                 "link %s: %s", path, strerror(errno));
		goto out;
	}
	unlink(tmp);
	status = util_fsync_parent(path);
	p.done = p.total;
	if (status == SFS_OK && p.fn)
		p.fn(p.done, p.total, p.ctx);
out:
	sqlite3_finalize(st);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	return status;
}

/* --- restore ------------------------------------------------------------ */

/* Runs one SQL text with ?1 bound to a table name, ignoring rows. */
static int run_named(sfs_backend *b, const char *sql, const char *name,
                     const char *what)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, what);
	if (name)
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SFS_OK : sqlb_fail(b, rc, what);
}

/* The checkpoint must be a store of our schema version or an older one
 * (*version gets it), intact. */
static int check_checkpoint(sfs_backend *b, const char *path,
                            int64_t *version)
{
	sqlite3_stmt *st;
	const char *res;
	int rc, status = SFS_OK;
	int64_t v = 0;

	rc = sqlite3_prepare_v2(b->db, "SELECT value FROM ckpt.statefs_meta"
	                        " WHERE name='schema_version'", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		if ((rc & 0xff) == SQLITE_ERROR)
			return sfs_err(SFS_FORMAT, "%s is not a statefs checkpoint",
			               path);
		return sqlb_fail(b, rc, "reading the checkpoint");
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "reading the checkpoint");
	if (v < 1 || v > SQLB_SCHEMA_VERSION)
		return sfs_err(SFS_FORMAT, "%s has schema version %lld; this"
		               " statefs restores 1 to %d", path, (long long)v,
		               SQLB_SCHEMA_VERSION);
	*version = v;
	/* Every page, authenticated by the VFS when encrypted. */
	rc = sqlite3_prepare_v2(b->db, "PRAGMA ckpt.quick_check(1)", -1, &st,
	                        NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		res = (const char *)sqlite3_column_text(st, 0);
		if (!res || strcmp(res, "ok"))
			status = sfs_err(SFS_CORRUPT, "%s: %s", path,
			                 res ? res : "check failed");
	} else {
		status = sqlb_fail(b, rc, "checking the checkpoint");
	}
	sqlite3_finalize(st);
	return status;
}

/* Replaces main.<table> with ckpt.<table> (or empties it when the
 * checkpoint lacks the table). Columns are named from main's schema. */
static int copy_table(sfs_backend *b, const char *table, int in_ckpt)
{
	char sql[1200], cols[512] = "", from[512] = "";
	sqlite3_stmt *st;
	size_t len = 0, flen = 0;
	int rc, status;

	snprintf(sql, sizeof(sql), "DELETE FROM main.\"%s\"", table);
	status = run_named(b, sql, NULL, "restoring");
	if (status != SFS_OK || !in_ckpt)
		return status;
	/* The columns both have: an older checkpoint's table may lack one
	 * (statefs_claim.ns before version 4), which keeps its default; our
	 * scope columns were scope_id before version 5 (schema.c). */
	rc = sqlite3_prepare_v2(b->db, "SELECT m.name, CASE WHEN m.name IN"
	                        " (SELECT name FROM pragma_table_info(?1,"
	                        " 'ckpt')) THEN m.name WHEN m.name='scope' AND"
	                        " 'scope_id' IN (SELECT name FROM"
	                        " pragma_table_info(?1, 'ckpt')) THEN 'scope_id'"
	                        " END FROM pragma_table_info(?1, 'main') m",
	                        -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading columns");
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		const char *s = (const char *)sqlite3_column_text(st, 1);
		int n, m;

		if (!c || !s)
			continue;
		n = snprintf(cols + len, sizeof(cols) - len, "%s\"%s\"",
		             len ? "," : "", c);
		m = snprintf(from + flen, sizeof(from) - flen, "%s\"%s\"",
		             flen ? "," : "", s);
		if (n < 0 || (size_t)n >= sizeof(cols) - len || m < 0 ||
		    (size_t)m >= sizeof(from) - flen) {
			sqlite3_finalize(st);
			return sfs_err(SFS_INTERNAL, "too many columns in %s",
			               table);
		}
		len += (size_t)n;
		flen += (size_t)m;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "reading columns");
	snprintf(sql, sizeof(sql), "INSERT INTO main.\"%s\" (%s) SELECT %s"
	         " FROM ckpt.\"%s\"", table, cols, from, table);
	return run_named(b, sql, NULL, "restoring");
}

/* sqlite_sequence[t] = max(live, checkpoint): ids never go backwards. */
static int keep_sequence(sfs_backend *b, const char *table)
{
	int status = run_named(b,
	        "UPDATE main.sqlite_sequence SET seq = max(seq, coalesce((SELECT"
	        " seq FROM ckpt.sqlite_sequence WHERE name=?1), 0))"
	        " WHERE name=?1", table, "restoring sequences");

	if (status != SFS_OK || sqlite3_changes(b->db) > 0)
		return status;
	return run_named(b,
	        "INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq"
	        " FROM ckpt.sqlite_sequence WHERE name=?1", table,
	        "restoring sequences");
}

static int has_ckpt_table(sfs_backend *b, const char *table)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(b->db, "SELECT 1 FROM ckpt.sqlite_schema"
	                            " WHERE type='table' AND name=?1", -1, &st,
	                            NULL);

	if (rc != SQLITE_OK)
		return -sqlb_fail(b, rc, "reading the checkpoint");
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : -sqlb_fail(b, rc, "reading the checkpoint");
}

/* Tables of ours the checkpoint lacks are emptied; an older checkpoint's
 * times are converted (version 1: per-entry times into the time maps;
 * version 2: time overrides into the pending items' table). */
static int restore_tx(sfs_backend *b, progress *p, int64_t version)
{
	char **tables = NULL;
	int status, t;
	size_t n;

	status = sqlb_schema_tables(b, "main", &tables);
	if (status != SFS_OK)
		return status;
	for (n = 0; tables[n]; n++)
		;
	p->total = n + 1;
	/* The queue markers' table first: with it empty, the triggers on
	 * work_queue let its rows (markers included) be replaced. */
	status = run_named(b, "DELETE FROM main.statefs_qmark", NULL,
	                   "restoring");
	for (size_t i = 0; tables[i] && status == SFS_OK; i++) {
		t = has_ckpt_table(b, tables[i]);
		if (t < 0) {
			status = -t;
			break;
		}
		status = copy_table(b, tables[i], t);
		p->done = i + 1;
		if (status == SFS_OK)
			status = report(p);
	}
	if (status == SFS_OK && version == 1)
		status = tm_convert_v1(b, "ckpt");
	if (status == SFS_OK && version == 2)
		status = run_named(b, "INSERT INTO main.statefs_queue_pending (id,"
		                   " enqueued_ns) SELECT id, enqueued_ns FROM"
		                   " ckpt.statefs_queue_timeoverride", NULL,
		                   "restoring");
	if (status == SFS_OK)
		status = keep_sequence(b, "function_state_log");
	if (status == SFS_OK)
		status = keep_sequence(b, "work_queue");
	/* Which items statefs dated is the checkpoint's (none said: an older
	 * store, whose items keep the map's times). */
	if (status == SFS_OK)
		status = run_named(b, "DELETE FROM main.sqlite_sequence WHERE"
		                   " name=?1", TM_QUEUE_KNOWN_NAME, "restoring");
	if (status == SFS_OK && (t = has_ckpt_table(b, "sqlite_sequence")) < 0)
		status = -t;
	if (status == SFS_OK && t)
		status = run_named(b, "INSERT INTO main.sqlite_sequence (name,"
		                   " seq) SELECT name, seq FROM ckpt.sqlite_sequence"
		                   " WHERE name=?1", TM_QUEUE_KNOWN_NAME,
		                   "restoring");
	/* A claim id issued after the checkpoint must never be issued again:
	 * its holder's ack would reach the new claim. */
	if (status == SFS_OK)
		status = keep_sequence(b, "statefs_claim");
	if (status == SFS_OK && version < SQLB_SCHEMA_VERSION)
		status = sqlb_marks_ensure(b);
	sqlb_schema_tables_free(tables);
	return status;
}

int sqlb_restore(sfs_backend *b, const char *path, sfs_progress_fn fn,
                 void *ctx)
{
	progress p = { fn, ctx, NULL, 0, 0, 1, 0 };
	struct stat sb;
	crypt_kind kind;
	int64_t version = 0;
	int status;

	if (stat(path, &sb) != 0)
		return sfs_err(errno == ENOENT ? SFS_NOTFOUND : SFS_IO,
		               "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return sfs_err(SFS_FORMAT, "%s is not a regular file", path);
	status = report(&p);
	if (status != SFS_OK)
		return status;
	/* The key first, as an open does: through ATTACH a checkpoint under
	 * another key is only a page that fails authentication (corrupt). */
	status = crypt_preflight(path, b->vfs ? crypt_vfs_key(b->vfs) : NULL,
	                         &kind);
	if (status != SFS_OK)
		return status;
	status = run_named(b, "ATTACH ?1 AS ckpt", path, "opening the checkpoint");
	if (status != SFS_OK)
		return status;
	status = check_checkpoint(b, path, &version);
	if (status == SFS_OK)
		status = sqlb_begin_write(b);
	if (status == SFS_OK) {
		progress_on(b, &p);
		status = restore_tx(b, &p, version);
		progress_off(b);
		if (status != SFS_OK && p.cancelled)
			status = sfs_err(SFS_CANCELLED, "cancelled by the caller");
		status = sqlb_end_write(b, status);
	}
	run_named(b, "DETACH ckpt", NULL, "closing the checkpoint");
	if (status == SFS_OK && fn)
		fn(p.total, p.total, ctx);
	return status;
}

/* --- info and verify ---------------------------------------------------- */

static int count_rows(sfs_backend *b, const char *table, uint64_t *n)
{
	char sql[128];
	sqlite3_stmt *st;
	int rc;

	*n = 0;
	rc = sqlite3_prepare_v2(b->db, "SELECT 1 FROM sqlite_schema WHERE"
	                        " type='table' AND name=?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading the schema");
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return SFS_OK; /* a table a later feature adds */
	if (rc != SQLITE_ROW)
		return sqlb_fail(b, rc, "reading the schema");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"", table);
	return pragma_int(b, sql, n);
}

static uint64_t file_size(const char *path, const char *suffix)
{
	char buf[4096];
	struct stat sb;

	snprintf(buf, sizeof(buf), "%s%s", path, suffix);
	return stat(buf, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Appends a fact only this backend has (statefs.h, sfs_info). */
static void fact(sfs_info *out, const char *name, uint64_t value)
{
	if (out->nfacts < SFS_INFO_FACTS) {
		out->facts[out->nfacts].name = name;
		out->facts[out->nfacts].value = value;
		out->nfacts++;
	}
}

int sqlb_info(sfs_backend *b, sfs_info *out)
{
	int status = sqlb_begin_read(b);

	if (status != SFS_OK)
		return status;
	status = sqlb_info_tx(b, out);
	sqlb_rollback(b);
	return status;
}

int sqlb_info_tx(sfs_backend *b, sfs_info *out)
{
	uint64_t v = 0, page_size = 0, page_count = 0, file = 0, wal = 0;
	int status = pragma_int(b, "PRAGMA page_size", &page_size);

	if (status == SFS_OK)
		status = pragma_int(b, "PRAGMA page_count", &page_count);
	if (status == SFS_OK)
		status = pragma_int(b, "SELECT value FROM statefs_meta WHERE"
		                    " name='schema_version' UNION ALL SELECT 0"
		                    " LIMIT 1", &v);
	if (status == SFS_OK)
		/* with the entries a drain holds: the namespace's until
		 * delivered, as export shows them (docs/claims.md) */
		status = pragma_int(b, "SELECT (SELECT count(*) FROM"
		                    " function_state) + (SELECT count(*) FROM"
		                    " statefs_kv_taken)", &out->kv_rows);
	if (status == SFS_OK)
		status = count_rows(b, "function_counter", &out->counter_rows);
	if (status == SFS_OK)
		status = count_rows(b, "function_state_log", &out->log_rows);
	if (status == SFS_OK)
		status = pragma_int(b, "SELECT (SELECT count(*) FROM work_queue)"
		                    " - 2 * (SELECT count(*) FROM statefs_qmark)",
		                    &out->queue_rows);
	if (status == SFS_OK)
		status = count_rows(b, "statefs_inflight", &out->claimed_rows);
	if (status == SFS_OK)
		status = count_rows(b, "statefs_dead", &out->dead_rows);
	if (status != SFS_OK)
		return status;
	out->schema_version = (int)v;
	out->encrypted = b->vfs != NULL;
	if (b->vfs) {
		crypt_vfs_describe(b->vfs, &out->cipher, &out->crypt_format,
		                   &out->kdf);
	} else {
		out->cipher = "none";
		out->crypt_format = 0;
		out->kdf = "none";
	}
	if (!b->memory) {
		out->file = b->path;
		file = file_size(b->path, "");
		wal = file_size(b->path, "-wal");
	}
	out->size = file + wal;
	fact(out, "page_size", page_size);
	fact(out, "page_count", page_count);
	fact(out, "file_size", file);
	fact(out, "wal_size", wal);
	if (b->ckpt) {
		uint64_t rounds, writer;

		sqlb_ckpt_counts(b, &rounds, &writer);
		fact(out, "wal_checkpoints_thread", rounds);
		fact(out, "wal_checkpoints_writer", writer);
	}
	return SFS_OK;
}

int sqlb_verify(sfs_backend *b, sfs_progress_fn fn, void *ctx)
{
	progress p = { fn, ctx, NULL, 0, 0, 0, 0 };
	sqlite3_stmt *st;
	const char *res;
	int rc, status;

	status = pragma_int(b, "PRAGMA page_count", &p.total);
	if (status != SFS_OK)
		return status;
	if (b->vfs && !b->memory) {
		status = crypt_verify_file(b->path, b->vfs, fn, ctx);
		if (status != SFS_OK)
			return status;
	}
	status = report(&p);
	if (status != SFS_OK)
		return status;
	rc = sqlite3_prepare_v2(b->db, "PRAGMA integrity_check(1)", -1, &st,
	                        NULL);
	if (rc == SQLITE_OK) {
		progress_on(b, &p);
		rc = sqlite3_step(st);
		progress_off(b);
	}
	if (rc == SQLITE_ROW) {
		res = (const char *)sqlite3_column_text(st, 0);
		if (!res || strcmp(res, "ok"))
			status = sfs_err(SFS_CORRUPT, "%s: %s", b->path,
			                 res ? res : "integrity check failed");
	} else {
		status = p.cancelled ? sfs_err(SFS_CANCELLED, "cancelled by the"
		                               " caller")
		                     : sqlb_fail(b, rc, "checking integrity");
	}
	sqlite3_finalize(st);
	if (status == SFS_OK) {
		p.done = p.total;
		status = report(&p);
	}
	return status;
}
