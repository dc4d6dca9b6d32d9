/*
 * stats.c - the figures behind statectl top and metrics: per-queue
 * counts of items pushed and taken, and the read-only snapshot
 * (sfs_store_stats).
 *
 * The counts. Rates ("pushes per second") need counters; a snapshot only
 * sees what is there, not what passed through between two snapshots. A
 * counter row written by every push and pop would put one more B-tree page
 * in each of their commits, about a third more WAL per operation (a
 * measurement while designing: +20 to +50 % per push and pop pair). So,
 * like the times (stamp.c), the counts are batched: each connection
 * keeps what its committed transactions pushed and took, per queue, in
 * memory, and writes it into statefs_queue_stats inside the first write
 * transaction of a later second (at most one extra page per second per
 * writer), and at close. A rollback drops the counts of its transaction;
 * a transaction that writes them forgets them only once it committed. A
 * process killed before it wrote them loses at most its last second.
 * Counts of queues empty and unused for a day are deleted (checked at most
 * once an hour per connection), so per-execution queues do not pile up.
 *
 * The snapshot is one read transaction: sqlb_info's figures, one row per
 * queue (the union of every table that names queues, each count by its
 * queue index) and one per scope (the union of the three families' scopes,
 * each count by its primary key's prefix).
 *
 * What it leaves out: counts of what the SDKs do with their own SQL (only
 * the engine counts), and any history: rates are the reader's business.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"
#include "util_i.h"

#define NS_PER_S 1000000000LL
#define PRUNE_EVERY_S 3600              /* a connection's prune pass */
#define PRUNE_IDLE_NS (86400 * NS_PER_S) /* a queue's counts kept idle */

/* One queue's counts: [0] committed and not yet written, [1] of the
 * current transaction, [2] of the current write of a group commit (its
 * savepoint in the shared transaction, conn.c), which joins [1] when the
 * savepoint is released and is dropped when it is undone. */
typedef struct qcount {
	unsigned char *queue;
	size_t len;
	uint64_t pushed[3], taken[3];
} qcount;

struct qstat {
	qcount *v;
	size_t n, cap;
	int64_t written_s;         /* when counts were last written */
	int64_t pruned_s;          /* when stale rows were last deleted */
	/* Both are wall-clock seconds, compared for another second, not a
	 * later one: after a step back of the clock, a later one made the
	 * counts wait as long as the step. */
	int writing;               /* this transaction writes them */
	int force;                 /* write whatever the second (close) */
};

static qstat *qs(sfs_backend *b)
{
	if (!b->qstats)
		b->qstats = calloc(1, sizeof(qstat));
	return b->qstats;
}

void qstat_note(sfs_backend *b, sfs_slice queue, uint64_t pushed,
                uint64_t taken)
{
	qstat *q = qs(b);
	qcount *c = NULL;

	if (!q || (!pushed && !taken))
		return;
	for (size_t i = 0; i < q->n && !c; i++)
		if (q->v[i].len == queue.len &&
		    !memcmp(q->v[i].queue, queue.ptr, queue.len))
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
		memset(c, 0, sizeof(*c));
		c->queue = malloc(queue.len ? queue.len : 1);
		if (!c->queue)
			return;
		memcpy(c->queue, queue.ptr, queue.len);
		c->len = queue.len;
		q->n++;
	}
	c->pushed[b->in_member ? 2 : 1] += pushed;
	c->taken[b->in_member ? 2 : 1] += taken;
}

void qstat_member_end(sfs_backend *b, int kept)
{
	qstat *q = b->qstats;

	for (size_t i = 0; q && i < q->n; i++) {
		qcount *c = &q->v[i];

		if (kept) {
			c->pushed[1] += c->pushed[2];
			c->taken[1] += c->taken[2];
		}
		c->pushed[2] = c->taken[2] = 0;
	}
}

int qstat_due(sfs_backend *b)
{
	qstat *q = b->qstats;

	return q && q->n &&
	       (q->force || sfs_clock_mtime_ns() / NS_PER_S != q->written_s);
}

/* Deletes the counts of queues empty and idle for a day. */
static int prune(sfs_backend *b, int64_t now_ns)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_QSTAT_PRUNE,
	        "DELETE FROM statefs_queue_stats WHERE updated_ns<?1"
	        " AND NOT EXISTS (SELECT 1 FROM work_queue WHERE"
	        " execution_id=statefs_queue_stats.queue)"
	        " AND NOT EXISTS (SELECT 1 FROM statefs_inflight WHERE"
	        " queue=statefs_queue_stats.queue)"
	        " AND NOT EXISTS (SELECT 1 FROM statefs_dead WHERE"
	        " queue=statefs_queue_stats.queue)", &status);

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, now_ns - PRUNE_IDLE_NS);
	return sqlb_run(b, st, "forgetting idle queue counts");
}

int qstat_flush(sfs_backend *b)
{
	qstat *q = b->qstats;
	int64_t now = sfs_clock_mtime_ns();
	sqlite3_stmt *st;
	int status = SFS_OK;

	if (!qstat_due(b))
		return SFS_OK;
	st = sqlb_stmt(b, ST_QSTAT_ADD, "INSERT INTO statefs_queue_stats"
	        " (queue, pushed, taken, updated_ns) VALUES (?1, ?2, ?3, ?4)"
	        " ON CONFLICT(queue) DO UPDATE SET"
	        " pushed=pushed+excluded.pushed, taken=taken+excluded.taken,"
	        " updated_ns=excluded.updated_ns", &status);
	for (size_t i = 0; st && i < q->n && status == SFS_OK; i++) {
		qcount *c = &q->v[i];
		uint64_t p = c->pushed[0] + c->pushed[1];
		uint64_t t = c->taken[0] + c->taken[1];

		if (!p && !t)
			continue;
		sqlb_bind(st, 1, sfs_bytes(c->queue, c->len));
		sqlite3_bind_int64(st, 2, (int64_t)p);
		sqlite3_bind_int64(st, 3, (int64_t)t);
		sqlite3_bind_int64(st, 4, now);
		status = sqlb_run(b, st, "writing queue counts");
	}
	if (st && status == SFS_OK && (now / NS_PER_S < q->pruned_s ||
	    now / NS_PER_S - q->pruned_s >= PRUNE_EVERY_S)) {
		status = prune(b, now);
		if (status == SFS_OK)
			q->pruned_s = now / NS_PER_S;
	}
	if (status == SFS_OK)
		q->writing = 1;
	return status;
}

void qstat_end(sfs_backend *b, int committed)
{
	qstat *q = b->qstats;

	if (!q)
		return;
	if (committed && q->writing) {
		for (size_t i = 0; i < q->n; i++)
			free(q->v[i].queue);
		q->n = 0;
		q->written_s = sfs_clock_mtime_ns() / NS_PER_S;
	} else {
		for (size_t i = 0; i < q->n; i++) {
			qcount *c = &q->v[i];

			if (committed) {
				c->pushed[0] += c->pushed[1];
				c->taken[0] += c->taken[1];
			}
			c->pushed[1] = c->taken[1] = 0;
			c->pushed[2] = c->taken[2] = 0;
		}
	}
	q->writing = 0;
}

int sqlb_flush_counts(sfs_backend *b)
{
	qstat *q = b->qstats;
	int status;

	if (!q || !q->n || b->readonly)
		return SFS_OK;
	q->force = 1;
	status = sqlb_begin_write(b);
	if (status == SFS_OK)
		status = sqlb_commit(b);
	q->force = 0;
	return status;
}

void qstat_close(sfs_backend *b)
{
	qstat *q = b->qstats;

	if (sqlb_flush_counts(b) != SFS_OK)
		sfs_log(LOG_WARNING, "%s: the last queue counts were not "
		        "written: %s", b->path, sfs_errdetail());
	if (q) {
		for (size_t i = 0; i < q->n; i++)
			free(q->v[i].queue);
		free(q->v);
		free(q);
		b->qstats = NULL;
	}
}

/* --- the snapshot -------------------------------------------------------- */

/* Reads the rows of a snapshot statement into a growing array of
 * elements of size sz: column 0, the name, into the sfs_buf at name_off;
 * columns 1.. (integers) into the 8-byte fields at offs[]. */
static int read_rows(sfs_backend *b, sqlite3_stmt *st, void **v, size_t *n,
                     size_t sz, size_t name_off, const size_t *offs,
                     int noffs, const char *what)
{
	size_t cap = 0;
	int status = SFS_OK, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		unsigned char *e;
		const void *p;
		size_t len;

		if (*n == cap) {
			void *nv = realloc(*v, (cap ? 2 * cap : 16) * sz);

			if (!nv) {
				status = sfs_err(SFS_NOMEM, "%s", what);
				break;
			}
			*v = nv;
			cap = cap ? 2 * cap : 16;
		}
		e = (unsigned char *)*v + *n * sz;
		memset(e, 0, sz);
		p = sqlb_col(st, 0, &len);
		if ((status = buf_copy((sfs_buf *)(e + name_off), p, len)))
			break;
		++*n;
		for (int i = 0; i < noffs; i++) {
			int64_t x = sqlite3_column_int64(st, i + 1);

			memcpy(e + offs[i], &x, sizeof(x));
		}
	}
	sqlite3_reset(st);
	if (status == SFS_OK && rc != SQLITE_DONE)
		status = sqlb_fail(b, rc, what);
	return status;
}

#define QOFF(f) offsetof(sfs_queue_stats, f)
#define SOFF(f) offsetof(sfs_scope_stats, f)

static int queues_tx(sfs_backend *b, int64_t now, sfs_stats *out)
{
	/* The columns after the queue, in order. */
	static const size_t offs[] = {
		QOFF(pending), QOFF(inflight), QOFF(dead), QOFF(claims),
		QOFF(expired), QOFF(oldest_claim_ns), QOFF(head_ns),
		QOFF(pushed), QOFF(taken),
	};
	void *v = NULL;
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_STATS_QUEUES,
	        /* Pending rows stop below a queue's markers (SQLB_QLIVE);
	         * claims with a namespace are a drain's, not a queue's. */
	        "WITH q(queue) AS (SELECT execution_id FROM work_queue"
	        " UNION SELECT queue FROM statefs_inflight"
	        " UNION SELECT queue FROM statefs_dead"
	        " UNION SELECT queue FROM statefs_claim WHERE ns IS NULL"
	        " UNION SELECT queue FROM statefs_queue_stats),"
	        " l(queue, lim) AS (SELECT q.queue, coalesce((SELECT lo FROM"
	        " statefs_qmark WHERE queue=q.queue), 9223372036854775807)"
	        " FROM q)"
	        " SELECT l.queue,"
	        " (SELECT count(*) FROM work_queue WHERE execution_id=l.queue"
	        "  AND id<l.lim),"
	        " (SELECT count(*) FROM statefs_inflight WHERE queue=l.queue),"
	        " (SELECT count(*) FROM statefs_dead WHERE queue=l.queue),"
	        " (SELECT count(*) FROM statefs_claim WHERE queue=l.queue"
	        "  AND ns IS NULL),"
	        " (SELECT count(*) FROM statefs_claim WHERE queue=l.queue"
	        "  AND ns IS NULL AND lease_until<=?1),"
	        " (SELECT min(claimed_ns) FROM statefs_claim WHERE"
	        "  queue=l.queue AND ns IS NULL),"
	        " (SELECT " TM_QUEUE_AT("h.id") " FROM (SELECT min(id) AS id"
	        "  FROM work_queue WHERE execution_id=l.queue AND id<l.lim) h"
	        "  WHERE h.id IS NOT NULL),"
	        " coalesce(s.pushed, 0), coalesce(s.taken, 0)"
	        " FROM l LEFT JOIN statefs_queue_stats s ON s.queue=l.queue"
	        " ORDER BY l.queue", &status);

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, now);
	status = read_rows(b, st, &v, &out->nqueues, sizeof(sfs_queue_stats),
	                   QOFF(queue), offs,
	                   (int)(sizeof(offs) / sizeof(offs[0])),
	                   "reading queue figures");
	out->queues = v;
	return status;
}

static int scopes_tx(sfs_backend *b, sfs_stats *out)
{
	static const size_t offs[] = { SOFF(kv), SOFF(log), SOFF(counter) };
	void *v = NULL;
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_STATS_SCOPES,
	        /* A drain's entries (d) are its scope's keys, as in info. */
	        "WITH d(scope, n) AS (SELECT c.queue, count(*) FROM"
	        " statefs_kv_taken t JOIN statefs_claim c ON"
	        " c.claim_id=t.claim_id WHERE c.ns IS NOT NULL GROUP BY c.queue),"
	        " s(scope) AS (SELECT scope_id FROM function_state"
	        " UNION SELECT scope_id FROM function_state_log"
	        " UNION SELECT scope_id FROM function_counter"
	        " UNION SELECT scope FROM d)"
	        " SELECT s.scope,"
	        " (SELECT count(*) FROM function_state WHERE scope_id=s.scope)"
	        "  + coalesce((SELECT n FROM d WHERE d.scope=s.scope), 0),"
	        " (SELECT count(*) FROM function_state_log WHERE"
	        "  scope_id=s.scope),"
	        " (SELECT count(*) FROM function_counter WHERE scope_id=s.scope)"
	        " FROM s ORDER BY s.scope", &status);

	if (!st)
		return status;
	status = read_rows(b, st, &v, &out->nscopes, sizeof(sfs_scope_stats),
	                   SOFF(scope), offs,
	                   (int)(sizeof(offs) / sizeof(offs[0])),
	                   "reading scope figures");
	out->scopes = v;
	return status;
}

int sqlb_stats(sfs_backend *b, sfs_stats *out)
{
	int status = sqlb_begin_read(b);

	if (status != SFS_OK)
		return status;
	out->now_ns = sfs_clock_ns();
	status = sqlb_info_tx(b, &out->info);
	if (status == SFS_OK)
		status = queues_tx(b, out->now_ns, out);
	if (status == SFS_OK)
		status = scopes_tx(b, out);
	sqlb_rollback(b);
	return status;
}
