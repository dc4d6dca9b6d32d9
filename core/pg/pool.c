/*
 * pool.c - connections: the pool, prepared statements, running one
 * statement, the retry loop, and the one translation of PostgreSQL
 * failures into sfs_status.
 *
 * The pool. A handle opens connections on demand, up to its size
 * (pool=, default 10: the daemon's worker threads), and keeps them idle
 * between calls; a call holds one for its duration, so threads of one
 * handle run concurrently (the SQLite backend serialises them on one
 * connection). A connection that failed is closed when it comes back, and
 * an idle one is checked before it is lent: if the server closed it
 * meanwhile (a restart, an administrator's pg_terminate_backend), its
 * socket is readable, and a new one is made before anything is sent. That
 * costs one poll() and turns the common case of a restarted server into
 * "reconnect, then run", with nothing in doubt.
 *
 * Statements. Every statement text is registered once per handle
 * (pgb_reg: text -> number) and prepared on a connection the first time
 * that connection runs it, as "s<number>". Parameters and results travel
 * in binary: a bytea is its bytes, an int8 eight big-endian bytes.
 *
 * Retries (PGB_TRY). A serialization failure or a deadlock rolled the
 * transaction back: running the whole call again is safe. So is a lost
 * connection before the commit point: the server rolled back. A lost
 * connection *during* the commit point (the statement that commits) is
 * settled by asking the server about the transaction's id, which the
 * commit point's round trip brought back first (commit_exec): not
 * committed, the call runs again; committed, it succeeds; no answer, the
 * outcome is unknown: the call fails with SFS_IO and a sentence saying
 * so, unless the caller declared the operation idempotent. Retries go on
 * with a growing pause until the busy timeout has passed, so a server
 * restart shorter than that is invisible to callers. Once a call has
 * waited out the busy timeout without getting a connection, the server
 * is taken as unreachable: later calls try once to connect and fail at
 * once, until a connection is made again. An outage then costs one busy
 * timeout, not one per call (a read through the mount makes two lookups,
 * the kernel's revalidation and its fresh lookup, each a call).
 *
 * Locks: b->mu guards the idle list and the count of open connections;
 * reg->mu guards the registry. Neither is held across a network call.
 * Lock order: b->mu and reg->mu are never held together.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_i.h"
#include "util_i.h"

/* Type OIDs (pg_type.h, stable since forever). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25
#define OID_BYTEA_ARRAY 1001
#define OID_INT8_ARRAY 1016

/* --- the statement registry ------------------------------------------------- */

struct pgb_reg {
	pthread_mutex_t mu;
	struct { char *sql; uint64_t h; } *v;  /* guarded by mu */
	size_t n, cap;                         /* guarded by mu */
	size_t *slot;                          /* hash -> index+1; guarded */
	size_t nslot;                          /* a power of two */
};

static uint64_t hash_sql(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int reg_grow(pgb_reg *r)
{
	size_t nslot = r->nslot ? r->nslot * 2 : 256;
	size_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < r->n; i++) {
		size_t j = r->v[i].h & (nslot - 1);

		while (slot[j])
			j = (j + 1) & (nslot - 1);
		slot[j] = i + 1;
	}
	free(r->slot);
	r->slot = slot;
	r->nslot = nslot;
	return 0;
}

/* The number of a statement text, registering it; -1 out of memory. */
static long reg_id(pgb_reg *r, const char *sql)
{
	uint64_t h = hash_sql(sql);
	long id = -1;
	size_t j;

	pthread_mutex_lock(&r->mu);
	if (r->nslot == 0 && reg_grow(r) != 0)
		goto out;
	for (j = h & (r->nslot - 1); r->slot[j]; j = (j + 1) & (r->nslot - 1)) {
		size_t i = r->slot[j] - 1;

		if (r->v[i].h == h && !strcmp(r->v[i].sql, sql)) {
			id = (long)i;
			goto out;
		}
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 128;
		void *v = realloc(r->v, cap * sizeof(*r->v));

		if (!v)
			goto out;
		r->v = v;
		r->cap = cap;
	}
	if (!(r->v[r->n].sql = strdup(sql)))
		goto out;
	r->v[r->n].h = h;
	r->slot[j] = r->n + 1;
	id = (long)r->n++;
	if (r->n * 2 > r->nslot && reg_grow(r) != 0) {
		/* the entry is in; the table is merely fuller */
	}
out:
	pthread_mutex_unlock(&r->mu);
	return id;
}

/* --- parameters -------------------------------------------------------------- */

static int pgp_slot(pgp *p, Oid type)
{
	int i = p->n;

	if (i >= PGP_MAX)
		abort(); /* a statement in this file set has more: a bug */
	p->n++;
	p->types[i] = type;
	p->fmts[i] = 1;
	p->vals[i] = NULL;
	p->lens[i] = 0;
	p->owned[i] = NULL;
	return i;
}

static void put64(char *o, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		o[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

static void put32(unsigned char *o, uint32_t v)
{
	o[0] = (unsigned char)(v >> 24);
	o[1] = (unsigned char)(v >> 16);
	o[2] = (unsigned char)(v >> 8);
	o[3] = (unsigned char)v;
}

void pgp_bytes(pgp *p, sfs_slice s)
{
	int i = pgp_slot(p, OID_BYTEA);

	if (!s.ptr)
		return;
	p->vals[i] = s.len ? s.ptr : "";
	p->lens[i] = (int)s.len;
}

void pgp_i64(pgp *p, int64_t v)
{
	int i = pgp_slot(p, OID_INT8);

	put64(p->ints[i], (uint64_t)v);
	p->vals[i] = p->ints[i];
	p->lens[i] = 8;
}

void pgp_null_i64(pgp *p)
{
	pgp_slot(p, OID_INT8);
}

/* The only host clock that ever reaches the server: a test's. */
void pgp_clock(pgp *p)
{
	if (sfs_clock_is_set())
		pgp_i64(p, sfs_clock_ns());
	else
		pgp_null_i64(p);
}

void pgp_text(pgp *p, const char *s)
{
	int i = pgp_slot(p, OID_TEXT);

	p->vals[i] = s;
	p->lens[i] = (int)strlen(s);
}

/* The binary array format: ndim, has-nulls, element type, then per
 * dimension its length and lower bound, then per element a length (-1:
 * NULL) and its bytes. */
static unsigned char *array_head(size_t bytes, Oid elem, size_t n)
{
	unsigned char *a = malloc(20 + bytes);

	if (!a)
		return NULL;
	put32(a, n ? 1 : 0); /* an empty array has no dimension */
	put32(a + 4, 1);
	put32(a + 8, elem);
	put32(a + 12, (uint32_t)n);
	put32(a + 16, 1);
	return a;
}

int pgp_i64_array(pgp *p, const int64_t *v, const char *isnull, size_t n)
{
	int i = pgp_slot(p, OID_INT8_ARRAY);
	unsigned char *a = array_head(n * 12, OID_INT8, n), *o;

	if (!a)
		return sfs_err(SFS_NOMEM, "building a statement's parameters");
	o = a + (n ? 20 : 12);
	for (size_t k = 0; k < n; k++) {
		if (isnull && isnull[k]) {
			put32(o, 0xffffffffu);
			o += 4;
			continue;
		}
		put32(o, 8);
		put64((char *)o + 4, (uint64_t)v[k]);
		o += 12;
	}
	p->owned[i] = a;
	p->vals[i] = (const char *)a;
	p->lens[i] = (int)(o - a);
	return SFS_OK;
}

int pgp_bytes_array(pgp *p, const sfs_slice *v, size_t n)
{
	int i = pgp_slot(p, OID_BYTEA_ARRAY);
	size_t bytes = 0;
	unsigned char *a, *o;

	for (size_t k = 0; k < n; k++)
		bytes += 4 + v[k].len;
	if (bytes > 0x7fffffffu - 20)
		return sfs_err(SFS_TOOBIG, "a batch of %zu bytes is more than one"
		               " statement carries", bytes);
	a = array_head(bytes, OID_BYTEA, n);
	if (!a)
		return sfs_err(SFS_NOMEM, "building a statement's parameters");
	o = a + (n ? 20 : 12);
	for (size_t k = 0; k < n; k++) {
		if (!v[k].ptr) {
			put32(o, 0xffffffffu);
			o += 4;
			continue;
		}
		put32(o, (uint32_t)v[k].len);
		if (v[k].len)
			memcpy(o + 4, v[k].ptr, v[k].len);
		o += 4 + v[k].len;
	}
	p->owned[i] = a;
	p->vals[i] = (const char *)a;
	p->lens[i] = (int)(o - a);
	return SFS_OK;
}

void pgp_null_array(pgp *p, int bytes)
{
	pgp_slot(p, bytes ? OID_BYTEA_ARRAY : OID_INT8_ARRAY);
}

void pgp_free(pgp *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->owned[i]);
		p->owned[i] = NULL;
	}
}

/* --- results ---------------------------------------------------------------- */

int64_t pgr_i64(const PGresult *r, int row, int col)
{
	const unsigned char *v;
	int len;
	uint64_t x = 0;

	if (PQgetisnull(r, row, col))
		return 0;
	v = (const unsigned char *)PQgetvalue(r, row, col);
	len = PQgetlength(r, row, col);
	for (int i = 0; i < len && i < 8; i++)
		x = x << 8 | v[i];
	/* sign-extend narrower integers (int4, int2) and bool */
	if (len > 0 && len < 8 && (v[0] & 0x80))
		x |= ~(uint64_t)0 << (8 * len);
	return (int64_t)x;
}

sfs_slice pgr_bytes(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return SFS_NONE;
	return sfs_bytes(PQgetvalue(r, row, col),
	                 (size_t)PQgetlength(r, row, col));
}

/* --- failures ----------------------------------------------------------------- */

static int is(const char *code, const char *want)
{
	return code && !strcmp(code, want);
}

static int class_is(const char *code, const char *cls)
{
	return code && !strncmp(code, cls, 2);
}

/* The server's sentence for a failure, or libpq's for a connection's
 * (into buf). */
static const char *fail_msg(pgc *c, const PGresult *res, char *buf,
                            size_t size)
{
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
	                      : NULL;

	if (!msg) {
		const char *m = c->conn ? PQerrorMessage(c->conn) : "";
		size_t n = strlen(m);

		while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
			n--;
		snprintf(buf, size, "%.*s", (int)n, m);
		msg = buf;
	}
	return msg;
}

int pgb_fail(pgc *c, const PGresult *res, unsigned flags, const char *what)
{
	sfs_backend *b = c->b;
	const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char conn_msg[256];
	const char *msg = fail_msg(c, res, conn_msg, sizeof(conn_msg));
	int st;

	/* The connection is gone (or going: the server said so). */
	if (!c->conn || PQstatus(c->conn) != CONNECTION_OK ||
	    class_is(code, "08") || class_is(code, "57")) {
		if (!is(code, "57014")) { /* 57014: a cancelled query */
			c->broken = 1;
			if (flags & PGB_COMMIT) {
				c->unknown = 1;
				return sfs_err(SFS_IO, "%s: the connection to %s was"
				               " lost while committing, so the outcome"
				               " is unknown (%s)", what, b->display,
				               msg);
			}
			c->transient = 1;
			return sfs_err(SFS_IO, "%s: lost the connection to %s: %s",
			               what, b->display, msg);
		}
	}
	if (is(code, "40001") || is(code, "40P01")) {
		c->transient = 1;
		st = SFS_BUSY;
	} else if (is(code, "55P03") || is(code, "57014") || is(code, "53300")) {
		st = SFS_BUSY;       /* lock_timeout, a cancel, no connection slot */
	} else if (is(code, "22003")) {
		st = SFS_OVERFLOW;   /* numeric_value_out_of_range */
	} else if (is(code, "2200H")) {
		/* sequence_generator_limit_exceeded: every id sequence stops
		 * at SFS_ID_MAX (schema.c); the statement failed whole. */
		return sfs_err(SFS_OVERFLOW, "%s would need an id past the"
		               " largest id a store issues (%lld); nothing"
		               " changed", what, (long long)SFS_ID_MAX);
	} else if (is(code, "23505")) {
		st = SFS_EXISTS;
	} else if (is(code, "25006")) {
		st = SFS_READONLY;
	} else if (is(code, "53100")) {
		st = SFS_FULL;
	} else if (is(code, "53200")) {
		st = SFS_NOMEM;
	} else if (is(code, "54000")) {
		/* A B-tree entry holds at most about 2.7 kB: names together
		 * longer than that cannot be keys on PostgreSQL. */
		return sfs_err(SFS_TOOBIG, "%s: a name is too long for a"
		               " PostgreSQL index (scope, namespace and key"
		               " together must stay under about 2,700 bytes): %s",
		               what, msg);
	} else if (is(code, "3D000") || is(code, "3F000")) {
		st = SFS_NOTFOUND;   /* no such database, no such schema */
	} else if (is(code, "42P01") || is(code, "42883") ||
	           is(code, "42703")) {
		/* undefined_table, _function, _column: the store's schema was
		 * dropped or changed on the server under an open handle, or a
		 * newer statefs on some host migrated it. Not a bug here
		 * (SFS_INTERNAL: the mount's log and statectl's exit 10 said
		 * "internal error"). */
		return sfs_err(SFS_IO, "%s: %s (PostgreSQL %s): the store's"
		               " tables or functions are gone from %s or changed"
		               " (its schema was dropped or changed on the server;"
		               " or a newer statefs upgraded it: then restart this"
		               " process with that version)", what, msg, code,
		               b->display);
	} else if (class_is(code, "28") || is(code, "42501")) {
		st = SFS_IO;         /* authentication, privileges */
	} else if (class_is(code, "XX")) {
		st = SFS_CORRUPT;
	} else if (class_is(code, "58") || class_is(code, "53")) {
		st = SFS_IO;
	} else {
		st = SFS_INTERNAL;
	}
	return sfs_err(st, "%s: %s (PostgreSQL %s)", what, msg,
	               code ? code : "error");
}

/* --- running statements ------------------------------------------------------- */

static int ensure_prepared(pgc *c, const char *sql, const pgp *p,
                           char name[24], const char *what)
{
	long id = reg_id(c->b->reg, sql);
	PGresult *r;
	int st;

	if (id < 0)
		return sfs_err(SFS_NOMEM, "registering a statement");
	snprintf(name, 24, "s%ld", id);
	if ((size_t)id < c->nprepared && c->prepared[id])
		return SFS_OK;
	if ((size_t)id >= c->nprepared) {
		size_t n = c->nprepared ? c->nprepared : 64;
		unsigned char *v;

		while (n <= (size_t)id)
			n *= 2;
		v = realloc(c->prepared, n);
		if (!v)
			return sfs_err(SFS_NOMEM, "registering a statement");
		memset(v + c->nprepared, 0, n - c->nprepared);
		c->prepared = v;
		c->nprepared = n;
	}
	r = PQprepare(c->conn, name, sql, p ? p->n : 0, p ? p->types : NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		st = pgb_fail(c, r, 0, what);
		PQclear(r);
		return st;
	}
	PQclear(r);
	c->prepared[id] = 1;
	return SFS_OK;
}

/* --- the commit point --------------------------------------------------------- */

/* A connection lost at the commit point leaves its outcome unknown to
 * the client, but not to the server, which can say what became of a
 * transaction by its id (txid_status). So the commit point carries, in
 * its own round trip, a question before it: the transaction's id
 * (txid_current() assigns one; before a COMMIT, txid_current_if_assigned
 * is NULL when the transaction wrote nothing). The answer is flushed to
 * the client before the statement runs, so a connection ended while it
 * runs or commits (pg_terminate_backend, a lock wait killed) still leaves
 * the id here. (The statement's own answer comes with the commit's: a
 * flush before the commit too would keep it from a connection lost
 * after the commit, a narrow window, but cost a counter add a third of
 * its time on a Unix socket.)
 *
 * Ids are handed out again after a crash: one given to a transaction
 * whose WAL never reached the disk goes to another transaction once the
 * server has recovered. "Not committed" and "not issued yet" stay true
 * then (had ours committed, its id would not be issued again), but
 * "committed" could be another transaction's. So the first commit point
 * of a connection also asks which run of the server this is: when the
 * postmaster started, and when the shared statistics were last reset,
 * which crash recovery does (a backend that crashed restarts every
 * other without a new postmaster). A connection that lived to its
 * commit point has seen no crash since it was made. */
#define RUN_SQL "(extract(epoch FROM pg_postmaster_start_time()) * 1000000)" \
	"::int8, coalesce((SELECT (extract(epoch FROM stats_reset) * 1000000)" \
	"::int8 FROM pg_stat_bgwriter), 0)"

static int64_t mono_ns(void);
static void backoff(int n);

enum { XACT_UNKNOWN, XACT_COMMITTED, XACT_ABORTED };

/* What became of transaction xid, asked on a connection of its own and
 * waited for (a backend still ending it, a server restarting) up to the
 * busy timeout. A "committed" counts only from the run of the server
 * that issued the id (run[2], RUN_SQL's). */
static int xact_fate(sfs_backend *b, int64_t xid, const int64_t run[2])
{
	int64_t deadline = mono_ns() + (int64_t)b->busy_ms * 1000000;
	static const Oid types[3] = { OID_INT8, OID_INT8, OID_INT8 };
	static const int fmts[3] = { 1, 1, 1 };
	static const int lens[3] = { 8, 8, 8 };
	char v[3][8];
	const char *vals[3] = { v[0], v[1], v[2] };
	PGconn *conn = NULL;
	int fate = -1, st;

	put64(v[0], (uint64_t)xid);
	put64(v[1], (uint64_t)run[0]);
	put64(v[2], (uint64_t)run[1]);
	for (int n = 1; fate < 0; n++) {
		if (!conn)
			conn = pgb_connect(b, NULL, &st);
		if (conn) {
			PGresult *r = PQexecParams(conn, "SELECT CASE WHEN $1 >="
			        " txid_snapshot_xmax(txid_current_snapshot()) THEN"
			        " 'future' ELSE txid_status($1) END, (" RUN_SQL
			        ") = ($2, $3)", 3, types, vals, lens, fmts, 0);
			const char *s = PQresultStatus(r) == PGRES_TUPLES_OK &&
			                PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)
			                ? PQgetvalue(r, 0, 0) : NULL;
			const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			/* (this connection ended too: ask on another) */
			int gone = PQstatus(conn) != CONNECTION_OK ||
			           class_is(code, "08") || class_is(code, "57");

			if (!s) {
				if (!gone)
					fate = XACT_UNKNOWN;  /* refused; forgotten */
			} else if (!strcmp(s, "aborted") || !strcmp(s, "future")) {
				fate = XACT_ABORTED;
			} else if (!strcmp(s, "committed")) {
				fate = strcmp(PQgetvalue(r, 0, 1), "t") ? XACT_UNKNOWN
				       : XACT_COMMITTED;
			}                             /* else in progress: wait */
			PQclear(r);
			if (gone) {
				PQfinish(conn);
				conn = NULL;
			}
		}
		if (fate < 0 && mono_ns() >= deadline)
			fate = XACT_UNKNOWN;
		if (fate < 0)
			backoff(n);
	}
	PQfinish(conn);
	return fate;
}

static int res_ok(const PGresult *r)
{
	ExecStatusType s = PQresultStatus(r);

	return r && (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK);
}

/* Runs the commit point in one round trip: the question above, then the
 * statement prepared as name (with p) in the implicit transaction that
 * ends at the pipeline's sync, or COMMIT (name NULL). *res as pgb_exec's.
 * If the connection is lost before the end, the server is asked about the
 * transaction: committed, the call succeeds with the answer it got (or,
 * when that was lost too, fails saying so); not committed, the call is
 * transient and runs again; anything else leaves the outcome unknown. */
static int commit_exec(pgc *c, const char *name, const pgp *p,
                       PGresult **res, const char *what)
{
	PGconn *conn = c->conn;
	PGresult *got[2] = { NULL, NULL }, *r;
	char xname[24], buf[256];
	int q = 0, synced = 0, st, fate;
	const char *msg, *xsql;

	/* The server ended the session before the commit point left: its
	 * FATAL came with an earlier answer of this call (the statement
	 * before a COMMIT), and libpq read it as a notice (on_receive).
	 * The transaction was rolled back and nothing of the commit point
	 * can reach the server, so the call runs again. Sent anyway, it met
	 * the closed socket and the outcome was "unknown". */
	if (c->ending) {
		c->broken = 1;
		c->transient = 1;
		return sfs_err(SFS_IO, "%s: the server ended the connection to"
		               " %s before the commit, so nothing was committed",
		               what, c->b->display);
	}
	/* (the first one, with the run, once per connection: not
	 * prepared) */
	xsql = name ? "SELECT txid_current()"
	            : "SELECT txid_current_if_assigned()";
	st = c->run_known ? ensure_prepared(c, xsql, NULL, xname, what) : SFS_OK;
	if (st != SFS_OK)
		return st;
	if (!PQenterPipelineMode(conn))
		return pgb_fail(c, NULL, 0, what); /* not idle: nothing sent */
	if (!(c->run_known
	      ? PQsendQueryPrepared(conn, xname, 0, NULL, NULL, NULL, 1)
	      : PQsendQueryParams(conn, name ? "SELECT txid_current(), "
	                          RUN_SQL : "SELECT txid_current_if_assigned(),"
	                          " " RUN_SQL, 0, NULL, NULL, NULL, NULL, 1)) ||
	    !PQsendFlushRequest(conn) ||
	    !(name ? PQsendQueryPrepared(conn, name, p ? p->n : 0,
	                                 p ? p->vals : NULL, p ? p->lens : NULL,
	                                 p ? p->fmts : NULL, 1)
	           : PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL,
	                               NULL, 1)) ||
	    !PQpipelineSync(conn)) {
		st = pgb_fail(c, NULL, PGB_COMMIT, what);
		c->broken = 1;
		return st;
	}
	/* The two queries' results, each ended by a NULL, then the sync;
	 * a lost connection ends it early (bounded: libpq answers each
	 * query left with an error once the connection is gone). */
	for (int guard = 0; guard < 16 && !synced; guard++) {
		r = PQgetResult(conn);
		if (!r) {
			q++;
		} else if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			synced = 1;
			PQclear(r);
		} else if (q < 2 && !got[q]) {
			got[q] = r;
		} else {
			PQclear(r);
		}
		if (PQstatus(conn) != CONNECTION_OK)
			break;
	}
	if (!c->run_known && res_ok(got[0]) && PQntuples(got[0]) == 1 &&
	    PQnfields(got[0]) == 3) {
		c->run[0] = pgr_i64(got[0], 0, 1);
		c->run[1] = pgr_i64(got[0], 0, 2);
		c->run_known = 1;
	}
	if (synced && PQstatus(conn) == CONNECTION_OK &&
	    PQexitPipelineMode(conn)) {
		if (!res_ok(got[0]))
			st = pgb_fail(c, got[0], 0, what);
		else if (!res_ok(got[1]))
			st = pgb_fail(c, got[1], 0, what);
		goto out;
	}
	/* Lost before the end (or a pipeline libpq would not close: the
	 * connection is dropped either way). */
	c->broken = 1;
	r = got[1] && !res_ok(got[1]) ? got[1]
	    : got[0] && !res_ok(got[0]) ? got[0] : NULL;
	msg = fail_msg(c, r, buf, sizeof(buf));
	if (got[0] && !res_ok(got[0]) &&
	    PQresultErrorField(got[0], PG_DIAG_SQLSTATE)) {
		/* The server's own error (its FATAL as it ended the session)
		 * came in place of the question's answer: what follows the
		 * question never ran. */
		fate = XACT_ABORTED;
	} else if (!res_ok(got[0]) || PQntuples(got[0]) != 1) {
		/* The question went unanswered: as before it. */
		st = pgb_fail(c, r, PGB_COMMIT, what);
		goto out;
	} else if (PQgetisnull(got[0], 0, 0)) {
		fate = XACT_ABORTED;  /* it wrote nothing: nothing to lose */
	} else {
		fate = xact_fate(c->b, pgr_i64(got[0], 0, 0), c->run);
	}
	if (fate == XACT_COMMITTED && (!name || res_ok(got[1]))) {
		st = SFS_OK;
		sfs_log(LOG_WARNING, "%s: the connection to %s was lost while"
		        " committing (%s); the server says it committed",
		        what, c->b->display, msg);
	} else if (fate == XACT_COMMITTED) {
		c->unknown = 1;
		st = sfs_err(SFS_IO, "%s: the connection to %s was lost while"
		             " committing (%s); the server says it committed, but"
		             " its answer was lost", what, c->b->display, msg);
	} else if (fate == XACT_ABORTED) {
		c->transient = 1;
		st = sfs_err(SFS_IO, "%s: the connection to %s was lost while"
		             " committing (%s); the server says it did not commit",
		             what, c->b->display, msg);
	} else {
		c->unknown = 1;
		st = sfs_err(SFS_IO, "%s: the connection to %s was lost while"
		             " committing, so the outcome is unknown (%s)", what,
		             c->b->display, msg);
	}
out:
	PQclear(got[0]);
	if (st == SFS_OK && res && name)
		*res = got[1];
	else
		PQclear(got[1]);
	return st;
}

int pgb_exec(pgc *c, const char *sql, pgp *p, unsigned flags,
             PGresult **res, const char *what)
{
	char name[24];
	PGresult *r;
	ExecStatusType rs;
	int st = ensure_prepared(c, sql, p, name, what);

	if (st != SFS_OK)
		return st;
	if ((flags & PGB_COMMIT) && !c->in_tx)
		return commit_exec(c, name, p, res, what);
	r = PQexecPrepared(c->conn, name, p ? p->n : 0, p ? p->vals : NULL,
	                   p ? p->lens : NULL, p ? p->fmts : NULL, 1);
	rs = PQresultStatus(r);
	if (rs == PGRES_COMMAND_OK || rs == PGRES_TUPLES_OK) {
		if (res)
			*res = r;
		else
			PQclear(r);
		return SFS_OK;
	}
	st = pgb_fail(c, r, flags, what);
	PQclear(r);
	return st;
}

int pgb_exec_int(pgc *c, const char *sql, pgp *p, unsigned flags,
                 int64_t *v, const char *what)
{
	PGresult *r;
	int st = pgb_exec(c, sql, p, flags, &r, what);

	if (st != SFS_OK)
		return st;
	*v = PQntuples(r) ? pgr_i64(r, 0, 0) : 0;
	PQclear(r);
	return SFS_OK;
}

int pgb_exec_stat(pgc *c, const char *sql, pgp *p, uint64_t *size,
                  int64_t *mtime, const char *what)
{
	PGresult *r;
	int st = pgb_exec(c, sql, p, 0, &r, what);

	if (st != SFS_OK)
		return st;
	if (PQntuples(r)) {
		*size = (uint64_t)pgr_i64(r, 0, 0);
		*mtime = pgr_i64(r, 0, 1);
	} else {
		st = SFS_NOTFOUND;
	}
	PQclear(r);
	return st;
}

int pgb_exec_value(pgc *c, const char *sql, pgp *p, const pgb_ad *ad,
                   sfs_buf *out, const char *what)
{
	PGresult *r;
	int st = pgb_exec(c, sql, p, 0, &r, what);

	if (st != SFS_OK)
		return st;
	st = PQntuples(r) ? pgb_unseal_buf(c->b, ad, pgr_bytes(r, 0, 0), out)
	                  : SFS_NOTFOUND;
	PQclear(r);
	return st;
}

int pgb_exec_text(pgc *c, const char *sql, unsigned flags, const char *what)
{
	PGresult *r = PQexec(c->conn, sql);
	ExecStatusType rs = PQresultStatus(r);
	int st = SFS_OK;

	if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK)
		st = pgb_fail(c, r, flags, what);
	PQclear(r);
	return st;
}

int pgb_begin(pgc *c)
{
	int st = pgb_exec_text(c, "BEGIN", 0, "beginning a transaction");

	c->in_tx = st == SFS_OK;
	return st;
}

int pgb_begin_snapshot(pgc *c)
{
	int st = pgb_exec_text(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"
	                       " READ ONLY", 0, "beginning a read");

	c->in_tx = st == SFS_OK;
	return st;
}

int pgb_commit(pgc *c)
{
	int st = commit_exec(c, NULL, NULL, NULL, "committing");

	/* A failed COMMIT rolled back (or the connection is gone). */
	c->in_tx = 0;
	return st;
}

void pgb_committed(sfs_backend *b)
{
	atomic_fetch_add(&b->commits, 1);
}

/* --- the pool ------------------------------------------------------------------- */

int pgb_pool_init(sfs_backend *b, size_t max)
{
	b->reg = calloc(1, sizeof(*b->reg));
	b->idle = calloc(max, sizeof(*b->idle));
	if (!b->reg || !b->idle) {
		free(b->reg);
		free(b->idle);
		b->reg = NULL;
		b->idle = NULL;
		return sfs_err(SFS_NOMEM, "allocating a connection pool");
	}
	pthread_mutex_init(&b->reg->mu, NULL);
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->max = max;
	return SFS_OK;
}

static void conn_free(pgc *c)
{
	if (!c)
		return;
	PQfinish(c->conn);
	free(c->prepared);
	free(c);
}

void pgb_pool_destroy(sfs_backend *b)
{
	if (!b->reg)
		return;
	for (size_t i = 0; i < b->nidle; i++)
		conn_free(b->idle[i]);
	free(b->idle);
	for (size_t i = 0; i < b->reg->n; i++)
		free(b->reg->v[i].sql);
	free(b->reg->v);
	free(b->reg->slot);
	pthread_mutex_destroy(&b->reg->mu);
	free(b->reg);
	b->reg = NULL;
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->mu);
}

/* Whether an idle connection is still good. A pooled connection listens
 * to nothing and has no query out, so the server has nothing to send on
 * it: anything readable is the server ending it. That is the close
 * itself, or the FATAL (pg_terminate_backend) or WARNING (a shutdown)
 * a backend sends just before it goes, which libpq, when idle, takes as
 * a notice and reports as nothing wrong. The connection is not lent
 * then: a statement sent on it would fail, and a commit point's failure
 * reads as "the outcome is unknown" for a statement no server ran. (A
 * message the server sends idle clients for another reason costs one
 * reconnect.) A connection ended after this check is the retry loop's. */
static int still_good(pgc *c)
{
	struct pollfd pfd = { PQsocket(c->conn), POLLIN, 0 };

	if (c->ending || PQstatus(c->conn) != CONNECTION_OK || pfd.fd < 0)
		return 0;
	return poll(&pfd, 1, 0) == 0;
}

/* A notice on a pooled connection. That FATAL (or WARNING) can also
 * reach the client with the last answer of a call, in one read: libpq
 * then reads it as a notice at once, while the backend may still be on
 * its way out with its socket open, and the poll above sees nothing. The
 * next call's statement then met the closed socket with no answer, and a
 * commit point's outcome was unknown. So the notice itself marks the
 * connection as ending. */
static void on_receive(void *arg, const PGresult *res)
{
	pgc *c = arg;
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if ((sev && (!strcmp(sev, "FATAL") || !strcmp(sev, "PANIC"))) ||
	    class_is(code, "57") || class_is(code, "08"))
		c->ending = 1;
	if (c->rcv)
		c->rcv(NULL, res); /* libpq's: our notice processor, conn.c */
}

static int pool_new(sfs_backend *b, pgc **out)
{
	pgc *c = calloc(1, sizeof(*c));
	int st = SFS_OK;

	if (!c)
		return sfs_err(SFS_NOMEM, "allocating a connection");
	c->b = b;
	c->conn = pgb_connect(b, b->qschema, &st);
	if (!c->conn) {
		free(c);
		return st;
	}
	c->rcv = PQsetNoticeReceiver(c->conn, on_receive, c);
	atomic_store(&b->unreachable, 0);
	*out = c;
	return SFS_OK;
}

static int pool_get(sfs_backend *b, pgc **out)
{
	pgc *c = NULL;
	int st;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		if (b->nidle) {
			c = b->idle[--b->nidle];
			pthread_mutex_unlock(&b->mu);
			if (still_good(c)) {
				*out = c;
				return SFS_OK;
			}
			conn_free(c);  /* stays counted: replaced below */
			st = pool_new(b, out);
			if (st != SFS_OK) {
				pthread_mutex_lock(&b->mu);
				b->nopen--;
				pthread_cond_signal(&b->cond);
				pthread_mutex_unlock(&b->mu);
			}
			return st;
		}
		if (b->nopen < b->max) {
			b->nopen++;
			pthread_mutex_unlock(&b->mu);
			st = pool_new(b, out);
			if (st != SFS_OK) {
				pthread_mutex_lock(&b->mu);
				b->nopen--;
				pthread_cond_signal(&b->cond);
				pthread_mutex_unlock(&b->mu);
			}
			return st;
		}
		pthread_cond_wait(&b->cond, &b->mu);
	}
}

static void pool_put(sfs_backend *b, pgc *c)
{
	if (c->broken) {
		conn_free(c);
		c = NULL;
	}
	pthread_mutex_lock(&b->mu);
	if (c)
		b->idle[b->nidle++] = c;
	else
		b->nopen--;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->mu);
}

int pgb_acquire(sfs_backend *b, pgc **c)
{
	return pool_get(b, c);
}

void pgb_release(sfs_backend *b, pgc *c)
{
	if (c->in_tx && !c->broken) {
		PGresult *r = PQexec(c->conn, "ROLLBACK");

		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			c->broken = 1;
		PQclear(r);
	}
	c->in_tx = 0;
	pool_put(b, c);
}

int pgb_run_int(sfs_backend *b, const char *sql, pgp *p, unsigned flags,
                int64_t *v, const char *what)
{
	int64_t x = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = pgb_exec_int(c, sql, p, flags, &x, what);
	}
	if (st != SFS_OK)
		return st;
	if ((flags & PGB_COMMIT) && x)
		pgb_committed(b);
	*v = x;
	return SFS_OK;
}

/* --- the retry loop -------------------------------------------------------------- */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A pause before attempt n: 1 ms doubling to 500 ms, with jitter so that
 * clients that failed together do not retry together. */
static void backoff(int n)
{
	int64_t ms = n > 10 ? 500 : (int64_t)1 << (n - 1);
	struct timespec ts;

	if (ms > 500)
		ms = 500;
	ms = ms / 2 + (int64_t)(random() % (ms / 2 + 1));
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int pgb_try_next(pgb_try *t, pgc **cp, int *st)
{
	pgc *c = t->c;
	int retry, got, late;

	if (t->attempt == 0) {
		t->deadline_ns = mono_ns() + (int64_t)t->b->busy_ms * 1000000;
	} else {
		retry = *st != SFS_OK && (c->transient ||
		        (c->unknown && (t->flags & PGB_IDEMPOTENT)));
		if (retry && !c->transient)
			sfs_log(LOG_WARNING, "%s; running it again",
			        sfs_errdetail());
		c->transient = c->unknown = 0;
		pgb_release(t->b, c);
		t->c = NULL;
		if (!retry || mono_ns() >= t->deadline_ns)
			return 0;
		backoff(t->attempt);
	}
	for (;;) {
		t->attempt++;
		got = pool_get(t->b, &c);
		if (got == SFS_OK)
			break;
		if (t->flags & PGB_FAILFAST)
			late = 1;
		else if ((late = mono_ns() >= t->deadline_ns))
			atomic_store(&t->b->unreachable, 1);
		if (late || atomic_load(&t->b->unreachable)) {
			*st = got;
			return 0;
		}
		backoff(t->attempt);
	}
	t->c = c;
	*cp = c;
	return 1;
}
