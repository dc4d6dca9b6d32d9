/*
 * stats.c - the figures behind statectl top and metrics on a
 * PostgreSQL store: per-queue counts of items pushed and taken, and the
 * snapshot (sfs_store_stats). The SQLite store's design (sqlb_stats.c),
 * with what a server shared by hosts changes:
 *
 * The counts. A counter row written by every push and take would be a row
 * lock every consumer of a queue waits on, on every host. So each handle
 * keeps what its calls pushed and took, per queue, in memory (counted
 * once the call committed: a call that failed, or whose commit's outcome
 * is unknown, counts nothing), and adds it to statefs_queue_stats in one
 * statement of its own: at the first count of a later second (the
 * calling thread, after its call), in a recovery pass (the daemon's
 * periodic one), and at close. A write that fails puts its counts back
 * for the next one, unless its outcome is unknown: then they are dropped,
 * as counting them again could count them twice (a count may be low,
 * never high). Counts of queues empty and idle for a day are deleted
 * (checked at most once an hour per handle). Times are the server's.
 *
 * The snapshot is one REPEATABLE READ READ ONLY transaction: pgb_info's
 * figures, one row per queue, one per scope, and the server's time.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pg_i.h"
#include "util_i.h"

#define NS_PER_S 1000000000LL
#define PRUNE_EVERY_S 3600 /* a handle's prune pass */
#define PRUNE_IDLE_S 86400 /* a queue's counts kept idle */

typedef struct qcount {
	unsigned char *queue;
	size_t len;
	uint64_t pushed, taken;
} qcount;

struct pgb_qstat {
	pthread_mutex_t mu;
	qcount *v;               /* guarded by mu */
	size_t n, cap;           /* guarded by mu */
	/* Wall-clock seconds, compared for another second, not a later one
	 * (after a step back of the clock, the counts waited for as long as
	 * the step). */
	int64_t written_s;       /* when a write last began; guarded by mu */
	int64_t pruned_s;        /* guarded by mu */
};

int pgb_qstat_init(sfs_backend *b)
{
	b->qstat = calloc(1, sizeof(*b->qstat));
	if (!b->qstat)
		return sfs_err(SFS_NOMEM, "allocating queue counts");
	pthread_mutex_init(&b->qstat->mu, NULL);
	return SFS_OK;
}

static void counts_free(qcount *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].queue);
	free(v);
}

/* Adds to queue's counts; under q->mu. A count that cannot be kept (out
 * of memory) is lost, never the operation. */
static void add(pgb_qstat *q, const unsigned char *queue, size_t len,
                uint64_t pushed, uint64_t taken)
{
	qcount *c = NULL;

	for (size_t i = 0; i < q->n && !c; i++)
		if (q->v[i].len == len && !memcmp(q->v[i].queue, queue, len))
			c = &q->v[i];
	if (!c) {
		if (q->n == q->cap) {
			size_t cap = q->cap ? 2 * q->cap : 8;
			qcount *nv = realloc(q->v, cap * sizeof(*nv));

			if (!nv)
				return;
			q->v = nv;
			q->cap = cap;
		}
		c = &q->v[q->n];
		c->queue = malloc(len ? len : 1);
		if (!c->queue)
			return;
		memcpy(c->queue, queue, len);
		c->len = len;
		c->pushed = c->taken = 0;
		q->n++;
	}
	c->pushed += pushed;
	c->taken += taken;
}

static int by_queue(const void *a, const void *b)
{
	const qcount *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->queue, y->queue, n);

	return d ? d : (x->len > y->len) - (x->len < y->len);
}

#define WRITE_SQL                                                          \
	"INSERT INTO statefs_queue_stats (queue, pushed, taken, updated_ns)" \
	" SELECT q, p, t, sfs_mtime($4) FROM unnest($1::bytea[],"          \
	" $2::bigint[], $3::bigint[]) AS u(q, p, t) ORDER BY q"             \
	" ON CONFLICT (queue) DO UPDATE SET"                               \
	" pushed = statefs_queue_stats.pushed + excluded.pushed,"          \
	" taken = statefs_queue_stats.taken + excluded.taken,"             \
	" updated_ns = excluded.updated_ns"

#define PRUNE_SQL                                                          \
	"WITH d AS (DELETE FROM statefs_queue_stats s"                     \
	" WHERE updated_ns < sfs_mtime($1) - $2"                           \
	" AND NOT EXISTS (SELECT 1 FROM work_queue WHERE execution_id = s.queue)" \
	" AND NOT EXISTS (SELECT 1 FROM statefs_inflight WHERE queue = s.queue)" \
	" AND NOT EXISTS (SELECT 1 FROM statefs_dead WHERE queue = s.queue)" \
	" RETURNING 1) SELECT 0 FROM d LIMIT 0"

/* Writes counts v[0..n) in one statement, in queue order (two hosts
 * writing the same queues lock their rows in one order). *unknown: the
 * write failed with its outcome unknown. */
static int write_counts(sfs_backend *b, qcount *v, size_t n, int *unknown)
{
	sfs_slice *qs = malloc(n * sizeof(*qs));
	int64_t *pt = malloc(2 * n * sizeof(*pt));
	pgp p = PGP_INIT;
	pgc *c;
	int st = SFS_OK;

	*unknown = 0;
	if (!qs || !pt)
		st = sfs_err(SFS_NOMEM, "writing queue counts");
	qsort(v, n, sizeof(*v), by_queue);
	for (size_t i = 0; st == SFS_OK && i < n; i++) {
		qs[i] = sfs_bytes(v[i].queue, v[i].len);
		pt[i] = (int64_t)v[i].pushed;
		pt[n + i] = (int64_t)v[i].taken;
	}
	if (st == SFS_OK && (pgp_bytes_array(&p, qs, n) ||
	                     pgp_i64_array(&p, pt, NULL, n) ||
	                     pgp_i64_array(&p, pt + n, NULL, n)))
		st = sfs_err(SFS_NOMEM, "writing queue counts");
	if (st == SFS_OK) {
		pgp_clock(&p);
		PGB_TRY(b, c, st, 0) {
			st = pgb_exec(c, WRITE_SQL, &p, PGB_COMMIT, NULL,
			              "writing queue counts");
			*unknown = st != SFS_OK && c->unknown;
		}
	}
	pgp_free(&p);
	free(qs);
	free(pt);
	return st;
}

/* Writes the counts when due (force: whatever the second). The counts
 * are taken out under the lock and written without it; another thread
 * counting meanwhile starts a new table. */
static int flush(sfs_backend *b, int force)
{
	pgb_qstat *q = b->qstat;
	int64_t now_s = sfs_clock_mtime_ns() / NS_PER_S, rows;
	qcount *v;
	size_t n;
	int prune, unknown, st;
	pgp p = PGP_INIT;

	if (!q || b->readonly)
		return SFS_OK;
	pthread_mutex_lock(&q->mu);
	if (!q->n || (!force && now_s == q->written_s)) {
		pthread_mutex_unlock(&q->mu);
		return SFS_OK;
	}
	v = q->v;
	n = q->n;
	q->v = NULL;
	q->n = q->cap = 0;
	q->written_s = now_s;
	prune = now_s < q->pruned_s || now_s - q->pruned_s >= PRUNE_EVERY_S;
	if (prune)
		q->pruned_s = now_s;
	pthread_mutex_unlock(&q->mu);

	st = write_counts(b, v, n, &unknown);
	if (st != SFS_OK && !unknown) {
		pthread_mutex_lock(&q->mu);
		for (size_t i = 0; i < n; i++)
			add(q, v[i].queue, v[i].len, v[i].pushed, v[i].taken);
		pthread_mutex_unlock(&q->mu);
	}
	counts_free(v, n);
	if (st == SFS_OK && prune) {
		pgp_clock(&p);
		pgp_i64(&p, PRUNE_IDLE_S * NS_PER_S);
		st = pgb_run_int(b, PRUNE_SQL, &p, PGB_COMMIT, &rows,
		                 "forgetting idle queue counts");
		pgp_free(&p);
	}
	return st;
}

void pgb_qstat_note(sfs_backend *b, sfs_slice queue, uint64_t pushed,
                    uint64_t taken)
{
	pgb_qstat *q = b->qstat;

	if (!q || (!pushed && !taken))
		return;
	pthread_mutex_lock(&q->mu);
	add(q, queue.ptr, queue.len, pushed, taken);
	pthread_mutex_unlock(&q->mu);
	pgb_qstat_due(b);
}

void pgb_qstat_due(sfs_backend *b)
{
	/* Called after a call that succeeded, which stands whatever this
	 * does. */
	if (flush(b, 0) != SFS_OK) {
		sfs_log(LOG_WARNING, "%s: queue counts not written yet: %s",
		        b->display, sfs_errdetail());
		sfs_err_clear();
	}
}

int pgb_flush_counts(sfs_backend *b)
{
	return flush(b, 1);
}

void pgb_qstat_close(sfs_backend *b)
{
	pgb_qstat *q = b->qstat;

	if (!q)
		return;
	if (flush(b, 1) != SFS_OK)
		sfs_log(LOG_WARNING, "%s: the last queue counts were not "
		        "written: %s", b->display, sfs_errdetail());
	counts_free(q->v, q->n);
	pthread_mutex_destroy(&q->mu);
	free(q);
	b->qstat = NULL;
}

/* --- the snapshot -------------------------------------------------------- */

#define QUEUES_SQL                                                         \
	"WITH q(queue) AS (SELECT execution_id FROM work_queue"            \
	" UNION SELECT queue FROM statefs_inflight"                        \
	" UNION SELECT queue FROM statefs_dead"                            \
	" UNION SELECT queue FROM statefs_claim WHERE ns IS NULL"          \
	" UNION SELECT queue FROM statefs_queue_stats)"                    \
	" SELECT q.queue,"                                                 \
	" (SELECT count(*) FROM work_queue WHERE execution_id = q.queue),"  \
	" (SELECT count(*) FROM statefs_inflight WHERE queue = q.queue),"   \
	" (SELECT count(*) FROM statefs_dead WHERE queue = q.queue),"       \
	" (SELECT count(*) FROM statefs_claim WHERE queue = q.queue"        \
	"  AND ns IS NULL),"                                               \
	" (SELECT count(*) FROM statefs_claim WHERE queue = q.queue"        \
	"  AND ns IS NULL AND lease_until <= $1),"                         \
	" (SELECT min(claimed_ns) FROM statefs_claim WHERE queue = q.queue" \
	"  AND ns IS NULL),"                                               \
	" (SELECT t.enqueued_ns FROM statefs_queue_item t WHERE t.id ="     \
	"  (SELECT min(id) FROM work_queue WHERE execution_id = q.queue)),"  \
	" coalesce(s.pushed, 0), coalesce(s.taken, 0)"                     \
	" FROM q LEFT JOIN statefs_queue_stats s ON s.queue = q.queue"      \
	" ORDER BY q.queue"

#define SCOPES_SQL                                                         \
	"WITH d(scope, n) AS (SELECT c.queue, count(*) FROM"               \
	" statefs_kv_taken t JOIN statefs_claim c ON"                      \
	" c.claim_id = t.claim_id WHERE c.ns IS NOT NULL GROUP BY c.queue)," \
	" s(scope) AS (SELECT scope_id FROM function_state"                \
	" UNION SELECT scope_id FROM function_state_log"                   \
	" UNION SELECT scope_id FROM function_counter"                     \
	" UNION SELECT scope FROM d)"                                      \
	" SELECT s.scope,"                                                 \
	" (SELECT count(*) FROM function_state WHERE scope_id = s.scope)"   \
	"  + coalesce((SELECT n FROM d WHERE d.scope = s.scope), 0),"      \
	" (SELECT count(*) FROM function_state_log WHERE scope_id = s.scope)," \
	" (SELECT count(*) FROM function_counter WHERE scope_id = s.scope)"  \
	" FROM s ORDER BY s.scope"

/* Column i + 1 of row r, for the 8-byte fields at offs[i] of element e. */
static void ints(const PGresult *r, int row, unsigned char *e,
                 const size_t *offs, int n)
{
	for (int i = 0; i < n; i++) {
		int64_t x = pgr_i64(r, row, i + 1);

		memcpy(e + offs[i], &x, sizeof(x));
	}
}

/* The rows of r as an array of n elements of size sz: column 0 (the
 * name) into the sfs_buf at name_off, the others by ints(). */
static int rows_of(const PGresult *r, size_t sz, size_t name_off,
                   const size_t *offs, int noffs, void **v, size_t *n)
{
	int rows = PQntuples(r);
	unsigned char *a = calloc(rows ? (size_t)rows : 1, sz);

	if (!a)
		return sfs_err(SFS_NOMEM, "reading the figures");
	for (int i = 0; i < rows; i++) {
		unsigned char *e = a + (size_t)i * sz;
		sfs_slice name = pgr_bytes(r, i, 0);
		sfs_buf *b = (sfs_buf *)(e + name_off);

		if (buf_copy(b, name.ptr, name.len) != SFS_OK) {
			for (int j = 0; j < i; j++)
				sfs_buf_free((sfs_buf *)(a + (size_t)j * sz +
				                         name_off));
			free(a);
			return SFS_NOMEM;
		}
		ints(r, i, e, offs, noffs);
	}
	*v = a;
	*n = (size_t)rows;
	return SFS_OK;
}

#define QOFF(f) offsetof(sfs_queue_stats, f)
#define SOFF(f) offsetof(sfs_scope_stats, f)

static int stats_body(pgc *c, sfs_stats *out)
{
	static const size_t qoffs[] = {
		QOFF(pending), QOFF(inflight), QOFF(dead), QOFF(claims),
		QOFF(expired), QOFF(oldest_claim_ns), QOFF(head_ns),
		QOFF(pushed), QOFF(taken),
	};
	static const size_t soffs[] = { SOFF(kv), SOFF(log), SOFF(counter) };
	PGresult *qr = NULL, *sr = NULL;
	sfs_stats s;
	pgp p = PGP_INIT, q = PGP_INIT; /* the clock's; the queues' ($1: now) */
	int64_t now = 0;
	int st = pgb_begin_snapshot(c);

	memset(&s, 0, sizeof(s));
	if (st == SFS_OK) {
		pgp_clock(&p);
		st = pgb_exec_int(c, "SELECT sfs_now($1)", &p, 0, &now,
		                  "reading the server's time");
	}
	if (st == SFS_OK)
		st = pgb_info_tx(c, &s.info);
	if (st == SFS_OK) {
		pgp_i64(&q, now);
		st = pgb_exec(c, QUEUES_SQL, &q, 0, &qr, "reading queue figures");
	}
	if (st == SFS_OK)
		st = pgb_exec(c, SCOPES_SQL, NULL, 0, &sr,
		              "reading scope figures");
	if (st == SFS_OK)
		st = rows_of(qr, sizeof(sfs_queue_stats), QOFF(queue), qoffs,
		             (int)(sizeof(qoffs) / sizeof(qoffs[0])),
		             (void **)&s.queues, &s.nqueues);
	if (st == SFS_OK) {
		st = rows_of(sr, sizeof(sfs_scope_stats), SOFF(scope), soffs,
		             (int)(sizeof(soffs) / sizeof(soffs[0])),
		             (void **)&s.scopes, &s.nscopes);
		if (st != SFS_OK) {
			for (size_t i = 0; i < s.nqueues; i++)
				sfs_buf_free(&s.queues[i].queue);
			free(s.queues);
		}
	}
	PQclear(qr);
	PQclear(sr);
	if (st == SFS_OK) {
		s.now_ns = now;
		*out = s;
	}
	return st;
}

int pgb_stats(sfs_backend *b, sfs_stats *out)
{
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = stats_body(c, out);
	}
	return st;
}
