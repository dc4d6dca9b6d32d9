/*
 * store.c - the public handle: open, close, sync, version, whole-store
 * operations (checkpoint, restore, info, verify, export, import), and the
 * argument checks every public entry point shares.
 *
 * This layer knows no SQL: it checks arguments, picks the backend, takes the
 * handle's lock and calls the backend's ops table (backend_i.h).
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

/* --- argument checks ---------------------------------------------------- */

int chk_name(sfs_slice n, const char *what)
{
	if (!n.ptr)
		return sfs_err(SFS_INVALID, "%s is NULL", what);
	if (n.len > SFS_MAX_NAME)
		return sfs_err(SFS_TOOBIG, "%s is %zu bytes, more than %u", what,
		               n.len, SFS_MAX_NAME);
	return SFS_OK;
}

int chk_key3(sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	return chk_name(key, "key");
}

int chk_opt_name(sfs_slice n, const char *what)
{
	if (!n.ptr) {
		if (n.len)
			return sfs_err(SFS_INVALID, "%s has a length but no bytes",
			               what);
		return SFS_OK;
	}
	return chk_name(n, what);
}

int chk_value(const sfs_store *s, sfs_slice v, const char *what)
{
	if (!v.ptr)
		return sfs_err(SFS_INVALID, "%s is NULL", what);
	if (v.len > s->max_value)
		return sfs_err(SFS_TOOBIG, "%s is %zu bytes, more than the"
		               " store's limit of %llu", what, v.len,
		               (unsigned long long)s->max_value);
	return SFS_OK;
}

int chk_pairs(const sfs_store *s, const sfs_slice *keys,
              const sfs_slice *values, size_t n)
{
	if (n && (!keys || !values))
		return sfs_err(SFS_INVALID, "keys or values is NULL");
	for (size_t i = 0; i < n; i++) {
		CHECK(chk_name(keys[i], "key"));
		CHECK(chk_value(s, values[i], "value"));
	}
	return SFS_OK;
}

int chk_store(const sfs_store *s)
{
	return s ? SFS_OK : sfs_err(SFS_INVALID, "the store handle is NULL");
}

int chk_writable(const sfs_store *s)
{
	CHECK(chk_store(s));
	if (s->flags & SFS_OPEN_READONLY)
		return sfs_err(SFS_READONLY, "%s was opened read-only", s->path);
	return SFS_OK;
}

/* A family's name in error details: what a user calls it, as statectl's
 * export does ("queue"), never its number. */
static const char *fam_name(sfs_family fam)
{
	static const char *const names[] = {
		[SFS_FAM_KV] = "key/value", [SFS_FAM_COUNTER] = "counter",
		[SFS_FAM_LOG] = "log", [SFS_FAM_QUEUE] = "queue",
		[SFS_FAM_DIR] = "directory", [SFS_FAM_CLAIM] = "claim",
		[SFS_FAM_INFLIGHT] = "in-flight item",
		[SFS_FAM_DEAD] = "dead letter", [SFS_FAM_POLICY] = "queue policy",
	};

	if ((int)fam < 0 || (size_t)fam >= sizeof(names) / sizeof(names[0]) ||
	    !names[fam])
		return NULL;
	return names[fam];
}

int chk_family(sfs_family fam, sfs_slice ns)
{
	if (fam < SFS_FAM_KV || fam > SFS_FAM_QUEUE) {
		const char *name = fam_name(fam);
		return name ? sfs_err(SFS_INVALID, "the %s family has no scopes "
		                      "(key/value, counter, log and queue do)",
		                      name)
		            : sfs_err(SFS_INVALID, "unknown family %d", (int)fam);
	}
	if (fam == SFS_FAM_QUEUE && ns.ptr)
		return sfs_err(SFS_INVALID, "queues have no namespaces");
	return chk_opt_name(ns, "namespace");
}

int chk_out(const void *p, const char *what)
{
	return p ? SFS_OK : sfs_err(SFS_INVALID, "%s is NULL", what);
}

int chk_scan_opts(const sfs_scan_opts *in, sfs_scan_opts *o)
{
	if (!in) {
		memset(o, 0, sizeof(*o));
		return SFS_OK;
	}
	CHECK(chk_opt_name(in->start, "the start bound"));
	CHECK(chk_opt_name(in->end, "the end bound"));
	*o = *in;
	return SFS_OK;
}

/* --- open and close ----------------------------------------------------- */

#define KNOWN_FLAGS (SFS_OPEN_CREATE | SFS_OPEN_READONLY | \
                     SFS_OPEN_PLAINTEXT | SFS_OPEN_EXCL | SFS_OPEN_NORECOVER)

static int check_opts(const sfs_open_opts *o, int memory)
{
	if (o->flags & ~(unsigned)KNOWN_FLAGS)
		return sfs_err(SFS_INVALID, "unknown open flags 0x%x",
		               o->flags & ~(unsigned)KNOWN_FLAGS);
	if ((o->flags & SFS_OPEN_EXCL) && !(o->flags & SFS_OPEN_CREATE))
		return sfs_err(SFS_INVALID, "SFS_OPEN_EXCL needs SFS_OPEN_CREATE");
	if ((o->flags & SFS_OPEN_READONLY) && (o->flags & SFS_OPEN_CREATE))
		return sfs_err(SFS_INVALID, "a read-only open cannot create");
	if ((o->flags & SFS_OPEN_PLAINTEXT) && o->key)
		return sfs_err(SFS_INVALID, "a key was given with "
		               "SFS_OPEN_PLAINTEXT");
	if (!memory && !(o->flags & SFS_OPEN_PLAINTEXT) && !o->key)
		return sfs_err(SFS_INVALID, "no key given and SFS_OPEN_PLAINTEXT "
		               "not set");
	if (o->busy_timeout_ms < 0)
		return sfs_err(SFS_INVALID, "negative busy timeout");
	if (o->lease_ms < 0)
		return sfs_err(SFS_INVALID, "negative lease");
	return SFS_OK;
}

int sfs_store_open(const sfs_open_opts *opts, sfs_store **out)
{
	sfs_backend_cfg cfg;
	char *path = NULL;
	sfs_store *s;
	int memory, pg, status;

	sfs_err_clear();
	CHECK(chk_out(opts, "opts"));
	CHECK(chk_out(out, "out"));
	if (opts->path) {
		if (!*opts->path)
			return sfs_err(SFS_INVALID, "the path is empty");
		path = strdup(opts->path);
		if (!path)
			return sfs_err(SFS_NOMEM, "copying the path");
	} else {
		CHECK(sfs_default_path(&path));
	}
	memory = strcmp(path, ":memory:") == 0;
	pg = pgb_is_db(path);
	status = check_opts(opts, memory);
	if (status != SFS_OK) {
		free(path);
		return status;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(path);
		return sfs_err(SFS_NOMEM, "allocating a store handle");
	}
	pthread_mutex_init(&s->mu, NULL);
	s->path = path;
	s->flags = opts->flags;
	s->max_value = opts->max_value ? opts->max_value : SFS_DEFAULT_MAX_VALUE;
	s->lease_ms = opts->lease_ms ? opts->lease_ms : 10 * 60 * 1000;
	cfg.path = path;
	cfg.flags = opts->flags;
	/* A memory store never reaches a disk: it has nothing to encrypt. */
	cfg.key = memory ? NULL : opts->key;
	cfg.busy_timeout_ms = opts->busy_timeout_ms ? opts->busy_timeout_ms
	                                            : 30000;
	cfg.max_value = s->max_value;
	/* A PostgreSQL connection string, or a SQLite file. */
	s->ops = pg ? &pgb_ops : &sqlb_ops;
	status = pg ? pgb_open(&cfg, &s->be) : sqlb_open(&cfg, &s->be);
	if (status == SFS_OK && pg) {
		/* Its name without a password, for messages. */
		char *name = strdup(pgb_display(s->be));

		if (!name) {
			s->ops->close(s->be);
			status = sfs_err(SFS_NOMEM, "copying the store's name");
		} else {
			free(path);
			s->path = path = name;
		}
	}
	if (status != SFS_OK) {
		pthread_mutex_destroy(&s->mu);
		free(path);
		free(s);
		return status;
	}
	/* Claim recovery at open (docs/claims.md). It takes the write lock
	 * only when a lease has run out or a queue has a time-to-live. A
	 * failure here does not fail the open: every claim call recovers its
	 * queue again before it acts. */
	if (!(opts->flags & (SFS_OPEN_READONLY | SFS_OPEN_NORECOVER)) &&
	    s->ops->queue_gc(s->be, SFS_NONE, 1, NULL) != SFS_OK)
		sfs_log(LOG_WARNING, "%s: claim recovery at open: %s", s->path,
		        sfs_errdetail());
	sfs_err_clear();
	*out = s;
	return SFS_OK;
}

void sfs_store_close(sfs_store *s)
{
	if (!s)
		return;
	s->ops->close(s->be);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

const char *sfs_store_path(const sfs_store *s)
{
	return s ? s->path : NULL;
}

int sfs_store_sync(sfs_store *s)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CALL(s, s->ops->sync(s->be));
}

int sfs_store_version(sfs_store *s, uint64_t *out)
{
	uint64_t v = 0;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	store_lock(s);
	r = s->ops->version(s->be, &v);
	store_unlock(s);
	if (r == SFS_OK)
		*out = v;
	return r;
}

/* --- whole-store operations --------------------------------------------- */

int sfs_checkpoint(sfs_store *s, const char *path, sfs_progress_fn progress,
                   void *ctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	if (!path || !*path)
		return sfs_err(SFS_INVALID, "no checkpoint path");
	CALL(s, s->ops->checkpoint(s->be, path, progress, ctx));
}

int sfs_restore(sfs_store *s, const char *path, sfs_progress_fn progress,
                void *ctx)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	if (!path || !*path)
		return sfs_err(SFS_INVALID, "no checkpoint path");
	CALL(s, s->ops->restore(s->be, path, progress, ctx));
}

int sfs_store_info(sfs_store *s, sfs_info *out)
{
	sfs_info info;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	memset(&info, 0, sizeof(info));
	store_lock(s);
	r = s->ops->info(s->be, &info);
	store_unlock(s);
	if (r == SFS_OK) {
		info.path = s->path;
		*out = info;
	}
	return r;
}

int sfs_store_stats(sfs_store *s, sfs_stats **out)
{
	sfs_stats *st;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	st = calloc(1, sizeof(*st));
	if (!st)
		return sfs_err(SFS_NOMEM, "allocating the figures");
	store_lock(s);
	r = s->ops->stats(s->be, st);
	store_unlock(s);
	if (r != SFS_OK) {
		sfs_stats_free(st);
		return r;
	}
	st->info.path = s->path;
	*out = st;
	return SFS_OK;
}

void sfs_stats_free(sfs_stats *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nqueues; i++)
		sfs_buf_free(&st->queues[i].queue);
	for (size_t i = 0; i < st->nscopes; i++)
		sfs_buf_free(&st->scopes[i].scope);
	free(st->queues);
	free(st->scopes);
	free(st);
}

int sfs_store_verify(sfs_store *s, sfs_progress_fn progress, void *ctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CALL(s, s->ops->verify(s->be, progress, ctx));
}

int sfs_export(sfs_store *s, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out((const void *)fn, "fn"));
	CALL(s, s->ops->export_rows(s->be, fn, ctx, progress, pctx));
}

struct sfs_import {
	sfs_store *s;
	sfs_import_be *be;
};

/* The import holds the handle's lock from begin to commit or abort, so
 * other threads wait instead of writing into the import's transaction. */
int sfs_import_begin(sfs_store *s, sfs_import **out)
{
	sfs_import *imp;
	int r;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_out(out, "out"));
	imp = calloc(1, sizeof(*imp));
	if (!imp)
		return sfs_err(SFS_NOMEM, "allocating an import");
	imp->s = s;
	store_lock(s);
	r = s->ops->import_begin(s->be, &imp->be);
	if (r != SFS_OK) {
		store_unlock(s);
		free(imp);
		return r;
	}
	*out = imp;
	return SFS_OK;
}

static int chk_row(const sfs_store *s, const sfs_row *row)
{
	CHECK(chk_out(row, "row"));
	/* entries and items keep their ids; claims too */
	if ((row->family == SFS_FAM_LOG || row->family == SFS_FAM_QUEUE ||
	     row->family == SFS_FAM_CLAIM || row->family == SFS_FAM_INFLIGHT ||
	     row->family == SFS_FAM_DEAD) && row->id <= 0)
		return sfs_err(SFS_INVALID, "%s rows need an id > 0",
		               fam_name(row->family));
	switch (row->family) {
	case SFS_FAM_KV:
	case SFS_FAM_COUNTER:
	case SFS_FAM_LOG:
		CHECK(chk_name(row->scope, "scope"));
		CHECK(chk_name(row->ns, "namespace"));
		CHECK(chk_name(row->key, "key"));
		if (row->family != SFS_FAM_COUNTER)
			CHECK(chk_value(s, row->value, "value"));
		return SFS_OK;
	case SFS_FAM_QUEUE:
		CHECK(chk_name(row->scope, "queue"));
		if (row->deliveries < 0)
			return sfs_err(SFS_INVALID, "a negative delivery count");
		return chk_value(s, row->value, "item");
	case SFS_FAM_DIR:
		CHECK(chk_name(row->scope, "scope"));
		return chk_family((sfs_family)row->n, row->ns);
	case SFS_FAM_CLAIM:
		return chk_name(row->scope, "queue");
	case SFS_FAM_INFLIGHT:
	case SFS_FAM_DEAD:
		CHECK(chk_name(row->scope, "queue"));
		CHECK(chk_value(s, row->value, "item"));
		if (row->family == SFS_FAM_DEAD)
			CHECK(chk_name(row->key, "reason"));
		else if (row->n <= 0)
			return sfs_err(SFS_INVALID, "an in-flight row needs its"
			               " claim's id in n");
		if (row->deliveries < 0)
			return sfs_err(SFS_INVALID, "a negative delivery count");
		return SFS_OK;
	case SFS_FAM_POLICY:
		CHECK(chk_name(row->scope, "queue"));
		if (row->n < 0 || row->deliveries < 0)
			return sfs_err(SFS_INVALID, "a negative time-to-live or"
			               " delivery limit");
		return SFS_OK;
	}
	return sfs_err(SFS_INVALID, "unknown family %d", (int)row->family);
}

int sfs_import_row(sfs_import *imp, const sfs_row *row)
{
	sfs_err_clear();
	CHECK(chk_out(imp, "imp"));
	CHECK(chk_row(imp->s, row));
	return imp->s->ops->import_row(imp->be, row);
}

int sfs_import_commit(sfs_import *imp)
{
	sfs_store *s;
	int r;

	sfs_err_clear();
	CHECK(chk_out(imp, "imp"));
	s = imp->s;
	r = s->ops->import_commit(imp->be);
	store_unlock(s);
	free(imp);
	return r;
}

void sfs_import_abort(sfs_import *imp)
{
	sfs_store *s;

	if (!imp)
		return;
	s = imp->s;
	s->ops->import_abort(imp->be);
	store_unlock(s);
	free(imp);
}
