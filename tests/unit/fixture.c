/*
 * fixture.c - temporary stores, the fake clock and export dumps for the
 * unit tests (see fixture.h).
 */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#include "fixture.h"
#include "util_i.h"

static sfs_key *key;

static const char *mode(void)
{
	const char *m = getenv("STATEFS_TEST_MODE");

	return m ? m : "plain";
}

int tfx_postgres(void)
{
	return !strncmp(mode(), "postgres", 8);
}

int tfx_encrypted(void)
{
	return !strcmp(mode(), "encrypted") || !strcmp(mode(), "postgres");
}

void tfx_sqlite_only(const char *why)
{
	if (!tfx_postgres())
		return;
	fprintf(stderr, "skipped on PostgreSQL: %s\n", why);
	skip();
}

/* --- PostgreSQL: a schema per store path --------------------------------- */

/* Created by this process, dropped at teardown.  Tests open stores from
 * several threads at once (test_pg's create race), so the list has a lock:
 * without it two threads could claim one slot and lose a name. */
static char *schemas[64];
static int nschemas;
static pthread_mutex_t schemas_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *server(void)
{
	const char *pg = getenv("STATEFS_TEST_PG");

	if (!pg || !*pg) {
		printf("no PostgreSQL server (STATEFS_TEST_PG): skipped; run the"
		       " suite under scripts/with-pg\n");
		exit(77);
	}
	return pg;
}

/* "t" + 16 hex digits of a hash of the path and the test process's pid
 * (a forked child's store is its parent's): the same path is the same
 * store within a test, and tests running at once never meet. */
static void schema_of(const char *path, char out[40])
{
	static long pid;
	unsigned char h[8];
	char in[600];

	if (!pid)
		pid = (long)getpid();
	snprintf(in, sizeof(in), "%ld:%s", pid, path);
	crypto_generichash(h, sizeof(h), (const unsigned char *)in, strlen(in),
	                   NULL, 0);
	snprintf(out, 40, "t%02x%02x%02x%02x%02x%02x%02x%02x", h[0], h[1],
	         h[2], h[3], h[4], h[5], h[6], h[7]);
}

char *tfx_db(const char *path)
{
	char sc[40], *db;
	int known = 0;

	if (!tfx_postgres()) {
		db = strdup(path);
	} else {
		pthread_mutex_lock(&schemas_lock);
		schema_of(path, sc);
		if (asprintf(&db, "%s schema=%s", server(), sc) < 0)
			db = NULL;
		for (int i = 0; db && i < nschemas && !known; i++)
			known = !strcmp(schemas[i], sc);
		if (db && !known && nschemas < 64)
			schemas[nschemas++] = strdup(sc);
		pthread_mutex_unlock(&schemas_lock);
	}
	assert_non_null(db);
	return db;
}

struct pg_conn *tfx_pg_conn(const char *path)
{
	PGconn *c = PQconnectdb(getenv("STATEFS_TEST_PG"));
	char *db, *sc, sql[160];

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	if (path) {
		db = tfx_db(path);
		sc = strstr(db, "schema=");
		assert_non_null(sc);
		snprintf(sql, sizeof(sql), "CREATE SCHEMA IF NOT EXISTS \"%s\";"
		         " SET search_path TO \"%s\"", sc + 7, sc + 7);
		PQclear(PQexec(c, sql));
		free(db);
	}
	return c;
}

/* Runs SQL that must succeed. */
static PGresult *pg_sql(PGconn *c, const char *q)
{
	PGresult *r = PQexec(c, q);
	ExecStatusType s = PQresultStatus(r);

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		fail_msg("%s: %s", q, PQerrorMessage(c));
	return r;
}

void tfx_pg_do(struct pg_conn *c, const char *q)
{
	PQclear(pg_sql(c, q));
}

long long tfx_pg_int(struct pg_conn *c, const char *q)
{
	PGresult *r = pg_sql(c, q);
	long long v = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;

	PQclear(r);
	return v;
}

static void drop_schemas(void)
{
	PGconn *c;

	if (!nschemas)
		return;
	c = PQconnectdb(server());
	for (int i = 0; i < nschemas; i++) {
		char sql[128];

		snprintf(sql, sizeof(sql), "SET client_min_messages = warning;"
		         " DROP SCHEMA IF EXISTS \"%s\" CASCADE", schemas[i]);
		if (PQstatus(c) == CONNECTION_OK)
			PQclear(PQexec(c, sql));
		free(schemas[i]);
	}
	nschemas = 0;
	PQfinish(c);
}

const sfs_key *tfx_key(void)
{
	static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;
	int st = SFS_OK;

	if (!tfx_encrypted())
		return NULL;
	/* the first open may come from several threads at once */
	pthread_mutex_lock(&key_lock);
	if (!key)
		st = sfs_key_generate(&key);
	pthread_mutex_unlock(&key_lock);
	if (st != SFS_OK) {
		fprintf(stderr, "sfs_key_generate: %s\n", sfs_errdetail());
		abort();
	}
	return key;
}

int tfx_open(const char *path, unsigned flags, sfs_store **out)
{
	sfs_config o;
	char *db = tfx_db(path);
	int st;

	memset(&o, 0, sizeof(o));
	o.db = db;
	o.flags = flags;
	o.key = tfx_key();
	if (!o.key)
		o.flags |= SFS_OPEN_PLAINTEXT;
	st = sfs_store_open(&o, out, NULL);
	free(db);
	return st;
}

int tfx_open_file(const char *path, unsigned flags, sfs_store **out)
{
	sfs_config o;

	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = flags;
	o.key = tfx_key();
	if (!o.key)
		o.flags |= SFS_OPEN_PLAINTEXT;
	return sfs_store_open(&o, out, NULL);
}

static int rm_one(const char *p, const struct stat *sb, int type,
                  struct FTW *f)
{
	(void)sb;
	(void)type;
	(void)f;
	return remove(p);
}

int tfx_rmtree(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int tfx_mkdtemp(char *dir, size_t n, const char *what)
{
	const char *tmp = getenv("TMPDIR");
	int len = snprintf(dir, n, "%s/statefs-%s-XXXXXX",
	                   tmp && *tmp ? tmp : "/tmp", what);

	if (len < 0 || (size_t)len >= n || !mkdtemp(dir))
		return -1;
	return 0;
}

int tfx_setup(void **state)
{
	tfx *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	if (tfx_mkdtemp(t->dir, sizeof(t->dir), "test") != 0) {
		free(t);
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s/store.db", t->dir);
	if (tfx_open(t->path, SFS_OPEN_CREATE, &t->s) != SFS_OK) {
		fprintf(stderr, "open %s: %s\n", t->path, sfs_errdetail());
		drop_schemas();
		tfx_rmtree(t->dir);
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

int tfx_teardown(void **state)
{
	tfx *t = *state;

	if (!t)
		return 0;
	sfs_store_close(t->s);
	tfx_rmtree(t->dir);
	drop_schemas();
	free(t);
	*state = NULL;
	return 0;
}

int64_t tfx_now;

static int64_t fake_clock(void)
{
	return tfx_now;
}

int tfx_setup_clock(void **state)
{
	tfx_now = 1000 * 1000000000LL;
	sfs_clock_set(fake_clock);
	return tfx_setup(state);
}

int tfx_teardown_clock(void **state)
{
	sfs_clock_set(NULL);
	return tfx_teardown(state);
}

void tfx_reopen(tfx *t)
{
	sfs_store_close(t->s);
	t->s = NULL;
	OK(tfx_open(t->path, 0, &t->s));
}

void tfx_keys(const sfs_list *l, const char *words)
{
	char *copy = strdup(words), *save = NULL, *w;
	size_t i = 0;

	assert_non_null(copy);
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (i >= l->n)
			fail_msg("list has %zu keys, want more (next: %s)", l->n, w);
		if (l->items[i].key.len != strlen(w) ||
		    memcmp(l->items[i].key.ptr, w, strlen(w)))
			fail_msg("key %zu is '%.*s', want '%s'", i,
			         (int)l->items[i].key.len,
			         (const char *)l->items[i].key.ptr, w);
		i++;
	}
	free(copy);
	if (i != l->n)
		fail_msg("list has %zu keys, want %zu (%s)", l->n, i, words);
}

void tfx_buf(const sfs_buf *b, const char *s)
{
	assert_non_null(b->ptr);
	assert_int_equal(b->len, strlen(s));
	assert_memory_equal(b->ptr, s, b->len);
	assert_int_equal(((const char *)b->ptr)[b->len], '\0');
}

static void dump_bytes(tfx_dump *d, const void *p, size_t n)
{
	if (d->len + n > d->cap) {
		d->cap = (d->len + n) * 2 + 64;
		d->p = realloc(d->p, d->cap);
		assert_non_null(d->p);
	}
	memcpy(d->p + d->len, p, n);
	d->len += n;
}

/* A length (-1: no bytes, SFS_NONE) and the bytes. */
static void dump_slice(tfx_dump *d, sfs_slice s)
{
	long long n = s.ptr ? (long long)s.len : -1;

	dump_bytes(d, &n, sizeof(n));
	if (s.ptr)
		dump_bytes(d, s.ptr, s.len);
}

int tfx_dump_row(const sfs_row *r, void *ctx)
{
	tfx_dump *d = ctx;
	int f = r->family;

	dump_bytes(d, &f, sizeof(f));
	dump_slice(d, r->scope);
	dump_slice(d, r->ns);
	dump_slice(d, r->key);
	dump_slice(d, r->value);
	dump_slice(d, r->reason);
	dump_bytes(d, &r->id, sizeof(r->id));
	dump_bytes(d, &r->mtime_ns, sizeof(r->mtime_ns));
	dump_bytes(d, &r->counter, sizeof(r->counter));
	dump_bytes(d, &r->dir_family, sizeof(r->dir_family));
	dump_bytes(d, &r->claim_id, sizeof(r->claim_id));
	dump_bytes(d, &r->lease_until_ns, sizeof(r->lease_until_ns));
	dump_bytes(d, &r->deliveries, sizeof(r->deliveries));
	dump_bytes(d, &r->ttl_ms, sizeof(r->ttl_ms));
	dump_bytes(d, &r->max_deliveries, sizeof(r->max_deliveries));
	d->rows++;
	if (f >= 0 && f < 16)
		d->fam_rows[f]++;
	return 0;
}

void tfx_dump_free(tfx_dump *d)
{
	free(d->p);
	memset(d, 0, sizeof(*d));
}

/* A malloc'd copy of a slice's bytes (SFS_NONE stays SFS_NONE). */
static sfs_slice slice_dup(sfs_slice s)
{
	void *p;

	if (!s.ptr)
		return SFS_NONE;
	p = malloc(s.len + 1);
	assert_non_null(p);
	memcpy(p, s.ptr, s.len);
	return sfs_bytes(p, s.len);
}

int tfx_rows_add(const sfs_row *r, void *ctx)
{
	tfx_rows *rows = ctx;
	sfs_row *c;

	if (rows->n == rows->cap) {
		rows->cap = rows->cap ? rows->cap * 2 : 16;
		rows->r = realloc(rows->r, rows->cap * sizeof(*rows->r));
		assert_non_null(rows->r);
	}
	c = &rows->r[rows->n++];
	*c = *r;
	c->scope = slice_dup(r->scope);
	c->ns = slice_dup(r->ns);
	c->key = slice_dup(r->key);
	c->value = slice_dup(r->value);
	c->reason = slice_dup(r->reason);
	return 0;
}

int tfx_rows_next(sfs_row *r, void *ctx)
{
	tfx_rows *rows = ctx;

	if (rows->next == rows->n) {
		rows->next = 0; /* ready to be imported again */
		return SFS_NOTFOUND;
	}
	*r = rows->r[rows->next++];
	return SFS_OK;
}

void tfx_rows_free(tfx_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++) {
		free((void *)rows->r[i].scope.ptr);
		free((void *)rows->r[i].ns.ptr);
		free((void *)rows->r[i].key.ptr);
		free((void *)rows->r[i].value.ptr);
		free((void *)rows->r[i].reason.ptr);
	}
	free(rows->r);
	memset(rows, 0, sizeof(*rows));
}

uint64_t tfx_fact(sfs_store *s, const char *name, int *found)
{
	sfs_info in;

	OK(sfs_store_info(s, &in));
	for (size_t i = 0; i < in.nfacts; i++)
		if (strcmp(in.facts[i].name, name) == 0) {
			*found = 1;
			return in.facts[i].value;
		}
	*found = 0;
	return 0;
}

int tfx_copy(sfs_store *src, sfs_store *dst)
{
	tfx_rows rows = { 0 };
	int r = sfs_export(src, tfx_rows_add, &rows, NULL, NULL);

	if (r == SFS_OK)
		r = sfs_import(dst, tfx_rows_next, &rows);
	tfx_rows_free(&rows);
	return r;
}
