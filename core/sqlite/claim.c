/*
 * claim.c - claims over SQLite: items move from work_queue into
 * statefs_inflight under a statefs_claim with a lease, and leave it by ack
 * (deleted), nack (back at their original id), retry (a new id at the
 * tail), reject (statefs_dead), or recovery when the lease ran out.
 * docs/claims.md is the protocol; this file is its SQL.
 *
 * The rules every function follows:
 *  - An item is in exactly one of work_queue, statefs_inflight and
 *    statefs_dead at any commit (its id moves with it), so nothing is lost
 *    and nothing is in two places. Every move is one write transaction.
 *  - Every write on a claim starts, in its own BEGIN IMMEDIATE transaction,
 *    with recovery of the claim's queue at the current time, and then acts
 *    only if the claim's row is still there. A claim whose lease ended at or
 *    before now is therefore gone by the time it is checked: the outcome
 *    never depends on whether a GC pass happened to run before, and ack and
 *    recovery, both under the write lock with one clock, can never both
 *    take an item.
 *  - Recovery is one pass: time-to-live first (pending items only), then
 *    expired claims back to the queue (or dead at the delivery limit). An
 *    item returned in a pass restarts its wait clock, so the TTL step of
 *    that pass cannot drop it for time spent in flight.
 *  - A pending item's delivery count and, once it re-entered the queue at
 *    its old id, its enqueue time live in statefs_queue_pending (the time
 *    map cannot hold an earlier id's later time). In flight and dead, the
 *    item's row carries them.
 *  - Lease times are sfs_clock_ns() (CLOCK_REALTIME, ns); the times shown
 *    as mtimes (enqueue, death) are whole seconds, as every mtime.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"
#include "util_i.h"

#define NS_PER_MS 1000000LL

/* Whether an in-flight item (alias i) reached its queue's delivery
 * limit. */
#define LIMIT_REACHED                                                      \
	"EXISTS (SELECT 1 FROM statefs_queue_policy p WHERE p.queue=i.queue" \
	" AND p.max_deliveries>0 AND i.deliveries>=p.max_deliveries)"

/* The in-flight items of a claim with ids in [?2, ?3]: the whole claim
 * (ack, nack) or one item (settle). */
#define OF_CLAIM "i.claim_id=?1 AND i.id BETWEEN ?2 AND ?3"

/* Whether an in-flight item (alias i) was cleared while in flight (its
 * queue cleared by anyone, statefs_qmark.cleared): whatever its claim
 * does, it does not come back. */
#define CLEARED                                                            \
	"EXISTS (SELECT 1 FROM statefs_qmark m WHERE m.queue=i.queue"       \
	" AND i.claim_id<=m.cleared)"

/* Entries of namespace claims (alias t, claim c) going back to their
 * namespace, for the claims in the condition cond: a key written again
 * meanwhile keeps its new value (and time), so times go first and only
 * where no value is. */
#define KV_BACK_TIME(cond)                                                 \
	"INSERT OR IGNORE INTO statefs_kv_time (scope, ns, key, mtime_ns)"    \
	" SELECT c.queue, c.ns, t.key, t.mtime_ns FROM statefs_kv_taken t"    \
	" JOIN statefs_claim c ON c.claim_id=t.claim_id WHERE " cond          \
	" AND t.mtime_ns>0 AND NOT EXISTS (SELECT 1 FROM function_state f"    \
	" WHERE f.scope_id=c.queue AND f.ns=c.ns AND f.key=t.key)"
#define KV_BACK(cond)                                                      \
	"INSERT OR IGNORE INTO function_state (scope_id, ns, key, value)"    \
	" SELECT c.queue, c.ns, t.key, t.value FROM statefs_kv_taken t"       \
	" JOIN statefs_claim c ON c.claim_id=t.claim_id WHERE " cond

/* The claims whose lease ended by ?2 (now), of every queue or of ?1. */
#define EXPIRED(qf)                                                        \
	"(SELECT claim_id FROM statefs_claim WHERE lease_until<=?2" qf ")"
#define ALLQ ""
#define ONEQ " AND queue=?1"

/* Binds int64 values to ?first.. as far as the statement has parameters. */
static void bind_ints(sqlite3_stmt *st, int first, int n, const int64_t *v)
{
	int max = sqlite3_bind_parameter_count(st);

	for (int i = 0; i < n && first + i <= max; i++)
		sqlite3_bind_int64(st, first + i, v[i]);
}

/* Steps a statement that returns at most one row of int64 columns into
 * v[0..n); *found says whether there was a row (NULL columns read 0). */
static int one_row(sfs_backend *b, sqlite3_stmt *st, int64_t *v, int n,
                   int *found, const char *what)
{
	int rc = sqlite3_step(st);

	*found = rc == SQLITE_ROW;
	for (int i = 0; i < n && rc == SQLITE_ROW; i++)
		v[i] = sqlite3_column_int64(st, i);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, what);
	return SFS_OK;
}

/* --- recovery ------------------------------------------------------------ */

/* Time-to-live of one queue: drops its pending items whose wait began
 * before cut, keeping those whose time is unknown (0). The queue map is
 * monotone (timemap.c), so the items it dates before cut are the ids
 * in [Z, C): Z the first row with a known time, C the first at or after
 * cut. Items with their own time (statefs_queue_pending) are judged by it. */
static int ttl_pass(sfs_backend *b, sfs_slice queue, int64_t cut,
                    uint64_t *dropped)
{
	int status = SFS_OK, fz, fc;
	sqlite3_stmt *z = sqlb_stmt(b, ST_GC_TTL_Z, "SELECT id FROM"
	        " statefs_queue_timemap WHERE enqueued_ns>0 ORDER BY"
	        " enqueued_ns, id LIMIT 1", &status);
	sqlite3_stmt *c = z ? sqlb_stmt(b, ST_GC_TTL_C, "SELECT id FROM"
	        " statefs_queue_timemap WHERE enqueued_ns>=?1"
	        " ORDER BY enqueued_ns, id LIMIT 1", &status) : NULL;
	/* Not the items of other programs: above TM_QUEUE_KNOWN, or in a
	 * run the map dates 0. */
	sqlite3_stmt *m = c ? sqlb_stmt(b, ST_GC_TTL_MAP, "DELETE FROM work_queue"
	        " WHERE execution_id=?1 AND id>=?2 AND id<?3 AND "
	        SQLB_QLIVE("") " AND NOT EXISTS (SELECT 1 FROM"
	        " statefs_queue_pending p WHERE p.id=work_queue.id) AND"
	        " id<=coalesce(" TM_QUEUE_KNOWN ", 9223372036854775807) AND"
	        " (SELECT t.enqueued_ns FROM statefs_queue_timemap t WHERE"
	        " t.id<=work_queue.id ORDER BY t.id DESC LIMIT 1)>0", &status)
	        : NULL;
	sqlite3_stmt *o = m ? sqlb_stmt(b, ST_GC_TTL_OWN, "DELETE FROM work_queue"
	        " WHERE execution_id=?1 AND id IN (SELECT id FROM"
	        " statefs_queue_pending WHERE enqueued_ns>0 AND enqueued_ns<?2)",
	        &status) : NULL;
	sqlite3_stmt *p = o ? sqlb_stmt(b, ST_GC_TTL_PEND, "DELETE FROM"
	        " statefs_queue_pending WHERE enqueued_ns>0 AND enqueued_ns<?1"
	        " AND NOT EXISTS (SELECT 1 FROM work_queue q"
	        " WHERE q.id=statefs_queue_pending.id)", &status) : NULL;
	int64_t zid = 0, cid = INT64_MAX, n = 0;

	if (!p)
		return status;
	status = one_row(b, z, &zid, 1, &fz, "reading enqueue times");
	if (status != SFS_OK)
		return status;
	bind_ints(c, 1, 1, &cut);
	status = one_row(b, c, &cid, 1, &fc, "reading enqueue times");
	if (status != SFS_OK)
		return status;
	if (!fc)
		cid = INT64_MAX;
	if (fz && zid < cid) {
		sqlb_bind(m, 1, queue);
		sqlite3_bind_int64(m, 2, zid);
		sqlite3_bind_int64(m, 3, cid);
		status = sqlb_run(b, m, "dropping expired items");
		if (status != SFS_OK)
			return status;
		n = sqlite3_changes64(b->db);
		if (n)
			status = tm_prune(b, TM_QUEUE, zid,
			                  cid == INT64_MAX ? INT64_MAX - 1 : cid);
		if (status != SFS_OK)
			return status;
	}
	sqlb_bind(o, 1, queue);
	sqlite3_bind_int64(o, 2, cut);
	status = sqlb_run(b, o, "dropping expired items");
	if (status != SFS_OK)
		return status;
	n += sqlite3_changes64(b->db);
	sqlite3_bind_int64(p, 1, cut);
	status = sqlb_run(b, p, "dropping expired items");
	if (status == SFS_OK)
		*dropped += (uint64_t)n;
	return status;
}

/* Expired claims of one queue (queue != NULL) or of all: their items back
 * to the queue at their original ids with the wait restarted (now_s), or
 * dead once they reached the delivery limit; then the claims go. */
static int return_expired(sfs_backend *b, const sfs_slice *queue,
                          int64_t now, int64_t now_s, sfs_gc_stats *g)
{
	static const char *const sql[8][2] = {
		{ "INSERT INTO statefs_dead (id, queue, item, reason, deliveries,"
		  " dead_ns) SELECT i.id, i.queue, i.item, 'delivery limit',"
		  " i.deliveries, ?3 FROM statefs_inflight i WHERE i.claim_id IN "
		  EXPIRED(ALLQ) " AND " LIMIT_REACHED " AND NOT " CLEARED,
		  "INSERT INTO statefs_dead (id, queue, item, reason, deliveries,"
		  " dead_ns) SELECT i.id, i.queue, i.item, 'delivery limit',"
		  " i.deliveries, ?3 FROM statefs_inflight i WHERE i.claim_id IN "
		  EXPIRED(ONEQ) " AND " LIMIT_REACHED " AND NOT " CLEARED },
		{ "INSERT INTO work_queue (id, execution_id, work_item)"
		  " SELECT i.id, i.queue, i.item FROM statefs_inflight i"
		  " WHERE i.claim_id IN " EXPIRED(ALLQ) " AND NOT " LIMIT_REACHED
		  " AND NOT " CLEARED " ORDER BY i.id",
		  "INSERT INTO work_queue (id, execution_id, work_item)"
		  " SELECT i.id, i.queue, i.item FROM statefs_inflight i"
		  " WHERE i.claim_id IN " EXPIRED(ONEQ) " AND NOT " LIMIT_REACHED
		  " AND NOT " CLEARED " ORDER BY i.id" },
		{ "INSERT OR REPLACE INTO statefs_queue_pending (id, enqueued_ns,"
		  " deliveries) SELECT i.id, ?3, i.deliveries FROM"
		  " statefs_inflight i WHERE i.claim_id IN " EXPIRED(ALLQ)
		  " AND NOT " LIMIT_REACHED " AND NOT " CLEARED,
		  "INSERT OR REPLACE INTO statefs_queue_pending (id, enqueued_ns,"
		  " deliveries) SELECT i.id, ?3, i.deliveries FROM"
		  " statefs_inflight i WHERE i.claim_id IN " EXPIRED(ONEQ)
		  " AND NOT " LIMIT_REACHED " AND NOT " CLEARED },
		{ "DELETE FROM statefs_inflight WHERE claim_id IN " EXPIRED(ALLQ),
		  "DELETE FROM statefs_inflight WHERE claim_id IN " EXPIRED(ONEQ) },
		{ KV_BACK_TIME("t.claim_id IN " EXPIRED(ALLQ)),
		  KV_BACK_TIME("t.claim_id IN " EXPIRED(ONEQ)) },
		{ KV_BACK("t.claim_id IN " EXPIRED(ALLQ)),
		  KV_BACK("t.claim_id IN " EXPIRED(ONEQ)) },
		{ "DELETE FROM statefs_kv_taken WHERE claim_id IN " EXPIRED(ALLQ),
		  "DELETE FROM statefs_kv_taken WHERE claim_id IN "
		  EXPIRED(ONEQ) },
		{ "DELETE FROM statefs_claim WHERE lease_until<=?2" ALLQ,
		  "DELETE FROM statefs_claim WHERE lease_until<=?2" ONEQ },
	};
	static const int slot[8] = { ST_GC_DEAD, ST_GC_BACK, ST_GC_PEND, ST_GC_DEL_ITEMS,
		                     ST_GC_KV_TIME, ST_GC_KV_BACK, ST_GC_KV_DEL,
		                     ST_GC_DEL_CLAIMS };
	int v = queue != NULL, status = SFS_OK, found;
	int64_t t[2] = { now, now_s }, one;
	/* The common case, nothing expired, costs one index seek. */
	sqlite3_stmt *any = sqlb_stmt(b, ST_GC_EXPIRED + v, v ?
	        "SELECT 1 FROM statefs_claim WHERE queue=?1 AND lease_until<=?2"
	        " LIMIT 1" :
	        "SELECT 1 FROM statefs_claim WHERE lease_until<=?2 LIMIT 1",
	        &status);

	if (!any)
		return status;
	if (queue)
		sqlb_bind(any, 1, *queue);
	sqlite3_bind_int64(any, 2, now);
	status = one_row(b, any, &one, 1, &found, "looking for expired claims");
	if (status != SFS_OK || !found)
		return status;

	for (int i = 0; i < 8; i++) {
		sqlite3_stmt *st = sqlb_stmt(b, slot[i] + v, sql[i][v], &status);

		if (!st)
			return status;
		if (queue)
			sqlb_bind(st, 1, *queue);
		bind_ints(st, 2, 2, t);
		status = sqlb_run(b, st, "returning expired claims");
		if (status != SFS_OK)
			return status;
		if (i == 0)
			g->dead += (uint64_t)sqlite3_changes64(b->db);
		else if (i == 1 || i == 5)
			g->returned += (uint64_t)sqlite3_changes64(b->db);
		else if (i == 7)
			g->claims += (uint64_t)sqlite3_changes64(b->db);
	}
	return SFS_OK;
}

/* --- markers ------------------------------------------------------------- *
 *
 * A claim moves items out of work_queue, where another program's clear
 * (the Go SDK's DELETE FROM work_queue WHERE execution_id = ?) cannot see
 * them, even when nothing is left pending and the clear deletes no row. So
 * a queue with items in flight keeps two marker rows of its own at the
 * tail of work_queue (ids lo, lo + 1 in statefs_qmark; the trigger
 * statefs_queue_push keeps them last). Every program's pop takes the
 * smallest id, so it reaches a marker only when nothing is pending, and
 * only the first: the trigger statefs_queue_clear skips that delete (the
 * pop finds nothing). A statement that deletes the second marker deletes
 * more than the head: a clear. The trigger then records the queue's
 * claims so far as cleared (their items never come back, CLEARED) and
 * skips that delete too, so nothing the clear counts is a marker. Our own
 * reads never see markers (SQLB_QLIVE); our clear meets them like any
 * other. Markers go when the queue's last item leaves flight. */

/* Markers for queue, if it has items in flight and none yet. */
static int marks_make(sfs_backend *b, sfs_slice queue)
{
	int status = SFS_OK, found;
	sqlite3_stmt *has = sqlb_stmt(b, ST_MARK_HAS, "SELECT 1 FROM statefs_qmark WHERE"
	        " queue=?1", &status);
	sqlite3_stmt *rows = has ? sqlb_stmt(b, ST_MARK_ROWS, "INSERT INTO work_queue"
	        " (execution_id, work_item) VALUES (?1, x''), (?1, x'')",
	        &status) : NULL;
	sqlite3_stmt *set = rows ? sqlb_stmt(b, ST_MARK_SET, "INSERT INTO statefs_qmark"
	        " (queue, lo, cleared) VALUES (?1, ?2, 0)", &status) : NULL;
	/* Markers take no id of the queue's sequence: an export's "seq"
	 * row (export.c) is the last id an item had, which an import
	 * reproduces, whatever markers it makes. Later pushes get ids past
	 * the markers all the same (the largest rowid). */
	sqlite3_stmt *seq = set ? sqlb_stmt(b, ST_MARK_SEQ, "SELECT"
	        " coalesce((SELECT seq FROM sqlite_sequence WHERE"
	        " name='work_queue'), 0)", &status) : NULL;
	sqlite3_stmt *seq_set = seq ? sqlb_stmt(b, ST_MARK_SEQ_SET, "UPDATE"
	        " sqlite_sequence SET seq=?1 WHERE name='work_queue'", &status)
	        : NULL;
	int64_t v, lo, before;

	if (!seq_set)
		return status;
	sqlb_bind(has, 1, queue);
	status = one_row(b, has, &v, 0, &found, "reading queue markers");
	if (status != SFS_OK || found)
		return status;
	status = one_row(b, seq, &before, 1, &found, "reading queue markers");
	if (status != SFS_OK)
		return status;
	sqlb_bind(rows, 1, queue);
	status = sqlb_run(b, rows, "adding queue markers");
	if (status != SFS_OK)
		return status;
	lo = sqlite3_last_insert_rowid(b->db) - 1;
	sqlite3_bind_int64(seq_set, 1, before);
	status = sqlb_run(b, seq_set, "adding queue markers");
	if (status != SFS_OK)
		return status;
	sqlb_bind(set, 1, queue);
	sqlite3_bind_int64(set, 2, lo);
	status = sqlb_run(b, set, "adding queue markers");
	/* the markers are ours: no other program's items */
	return status == SFS_OK ? tm_queue_ours(b, lo) : status;
}

/* Removes the markers of queue (or of every queue) that has no item in
 * flight any more: the rows first, while their statefs_qmark row says
 * where they are (the trigger lets them go: nothing is in flight). */
static int marks_tidy(sfs_backend *b, const sfs_slice *queue)
{
	static const char *const sql[2][2] = {
		{ "DELETE FROM work_queue WHERE id IN (SELECT lo FROM"
		  " statefs_qmark m WHERE NOT EXISTS (SELECT 1 FROM"
		  " statefs_inflight i WHERE i.queue=m.queue) UNION ALL SELECT"
		  " lo+1 FROM statefs_qmark m WHERE NOT EXISTS (SELECT 1 FROM"
		  " statefs_inflight i WHERE i.queue=m.queue))",
		  "DELETE FROM work_queue WHERE id IN (SELECT lo FROM"
		  " statefs_qmark m WHERE m.queue=?1 AND NOT EXISTS (SELECT 1"
		  " FROM statefs_inflight i WHERE i.queue=m.queue) UNION ALL"
		  " SELECT lo+1 FROM statefs_qmark m WHERE m.queue=?1 AND NOT"
		  " EXISTS (SELECT 1 FROM statefs_inflight i"
		  " WHERE i.queue=m.queue))" },
		{ "DELETE FROM statefs_qmark WHERE NOT EXISTS (SELECT 1 FROM"
		  " statefs_inflight i WHERE i.queue=statefs_qmark.queue)",
		  "DELETE FROM statefs_qmark WHERE queue=?1 AND NOT EXISTS"
		  " (SELECT 1 FROM statefs_inflight i WHERE i.queue=?1)" },
	};
	int v = queue != NULL, status = SFS_OK;

	for (int i = 0; i < 2 && status == SFS_OK; i++) {
		sqlite3_stmt *st = sqlb_stmt(b, (i ? ST_MARK_TIDY : ST_MARK_TIDY_ROWS) + v,
		                        sql[i][v], &status);
		if (!st)
			return status;
		if (queue)
			sqlb_bind(st, 1, *queue);
		status = sqlb_run(b, st, "removing queue markers");
	}
	return status;
}

int sqlb_marks_ensure(sfs_backend *b)
{
	sqlite3_stmt *st;
	sfs_list l = { NULL, 0 };
	int rc, status;

	rc = sqlite3_prepare_v2(b->db, "SELECT DISTINCT 0, NULL, 0, 0, 0, queue"
	                        " FROM statefs_inflight ORDER BY queue", -1, &st,
	                        NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading claimed items");
	status = sqlb_rows(b, st, &l, "reading claimed items");
	sqlite3_finalize(st);
	for (size_t i = 0; i < l.n && status == SFS_OK; i++)
		status = marks_make(b, sfs_bytes(l.items[i].key.ptr,
		                                 l.items[i].key.len));
	sfs_list_free(&l);
	return status;
}

/* The queue's policy (zeros when it has none). */
static int policy_of(sfs_backend *b, sfs_slice queue, sfs_queue_policy *p)
{
	int status = SFS_OK, found;
	sqlite3_stmt *st = sqlb_stmt(b, ST_GC_POLICY, "SELECT ttl_ms,"
	        " max_deliveries FROM statefs_queue_policy WHERE"
	        " queue=?1", &status);
	int64_t v[2] = { 0, 0 };

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	status = one_row(b, st, v, 2, &found, "reading a queue's policy");
	p->ttl_ms = v[0];
	p->max_deliveries = v[1];
	return status;
}

/* One recovery pass, inside a write transaction: of one queue, or of every
 * queue (queue == NULL). */
static int recover(sfs_backend *b, const sfs_slice *queue, sfs_gc_stats *g)
{
	int64_t now = sfs_clock_ns(), now_s = sfs_clock_mtime_ns();
	sfs_queue_policy p;
	int status = SFS_OK;

	if (queue) {
		status = policy_of(b, *queue, &p);
		if (status == SFS_OK && p.ttl_ms > 0)
			status = ttl_pass(b, *queue, now - p.ttl_ms * NS_PER_MS,
			                  &g->expired);
	} else {
		/* Every queue with a time-to-live, one at a time, each read
		 * with a fresh seek (the passes write between them). */
		sqlite3_stmt *st = sqlb_stmt(b, ST_GC_POLICIES, "SELECT queue,"
		        " ttl_ms FROM statefs_queue_policy WHERE ttl_ms>0 AND"
		        " (?2=0 OR queue>?1) ORDER BY queue LIMIT 1", &status);
		sfs_buf cur = { NULL, 0 };
		int64_t ttl;
		size_t n;
		const void *q;
		int rc;

		if (!st)
			return status;
		while (status == SFS_OK) {
			sqlb_bind(st, 1, sfs_bytes(cur.ptr, cur.len));
			sqlite3_bind_int(st, 2, cur.ptr != NULL);
			rc = sqlite3_step(st);
			if (rc != SQLITE_ROW) {
				sqlite3_reset(st);
				if (rc != SQLITE_DONE)
					status = sqlb_fail(b, rc, "reading queue"
					                   " policies");
				break;
			}
			q = sqlb_col(st, 0, &n);
			ttl = sqlite3_column_int64(st, 1);
			sfs_buf_free(&cur);
			status = buf_copy(&cur, q, n);
			sqlite3_reset(st);
			if (status == SFS_OK)
				status = ttl_pass(b, sfs_bytes(cur.ptr, cur.len),
				                  now - ttl * NS_PER_MS,
				                  &g->expired);
		}
		sfs_buf_free(&cur);
	}
	if (status == SFS_OK)
		status = return_expired(b, queue, now, now_s, g);
	return status == SFS_OK ? marks_tidy(b, queue) : status;
}

static int changed(const sfs_gc_stats *g)
{
	return g->expired || g->returned || g->dead || g->claims;
}

/* Ends a write transaction as sqlb_end_write does, except that a failure
 * with keep set commits: the recovery done first stays (a lost claim, an
 * empty queue: the call itself wrote nothing). */
static int finish(sfs_backend *b, int status, int keep)
{
	int c;

	if (status == SFS_OK || keep) {
		c = sqlb_commit(b);
		return c != SFS_OK ? c : status;
	}
	sqlb_rollback(b);
	return status;
}

int sqlb_queue_gc(sfs_backend *b, sfs_slice queue, int at_open,
                  sfs_gc_stats *out)
{
	sfs_gc_stats g = { 0, 0, 0, 0 };
	int status = SFS_OK, found;
	int64_t any = 0, now = sfs_clock_ns();
	uint64_t swept = 0;

	if (at_open) {
		/* Opening must not take the write lock when there is nothing
		 * to do: many processes open at once. */
		sqlite3_stmt *st = sqlb_stmt(b, ST_GC_ANY, "SELECT EXISTS"
		        " (SELECT 1 FROM statefs_claim WHERE lease_until<=?1)"
		        " OR EXISTS (SELECT 1 FROM statefs_queue_policy WHERE"
		        " ttl_ms>0)", &status);

		if (!st)
			return status;
		sqlite3_bind_int64(st, 1, now);
		status = one_row(b, st, &any, 1, &found, "checking claims");
		if (status != SFS_OK || !any) {
			if (status == SFS_OK && out)
				*out = g;
			return status;
		}
	}
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	status = recover(b, queue.ptr ? &queue : NULL, &g);
	/* A pass of every queue also sweeps a stretch of the time tables
	 * for rows another program orphaned (kv.c, "The sweep"). */
	if (status == SFS_OK && !queue.ptr && !at_open)
		status = sqlb_time_sweep(b, &swept);
	/* Also commits to write the connection's queue counts when due: the
	 * daemon's periodic pass brings an idle daemon's counts out. */
	status = sqlb_end_write_if(b, status, changed(&g) || swept ||
	                           qstat_due(b));
	if (status == SFS_OK && out)
		*out = g;
	return status;
}

/* --- claiming ------------------------------------------------------------ */

/* Reads a claim's items into a list: item.id, value and the in-flight
 * sfs_stat (its lease ends at until). */
static int read_claim(sfs_backend *b, int64_t cid, int64_t until,
                      sfs_list *out)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CLAIM_READ, "SELECT id, item,"
	        " length(item), enqueued_ns, 0, NULL, deliveries, claim_id, ?2"
	        " FROM statefs_inflight WHERE claim_id=?1 ORDER BY id", &status);

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, cid);
	sqlite3_bind_int64(st, 2, until);
	return sqlb_rows(b, st, out, "reading claimed items");
}

/* A new claim row, of a queue (ns == SFS_NONE) or of a namespace's
 * entries, with a lease of lease_ns from now: *cid, *until. */
static int new_claim(sfs_backend *b, sfs_slice queue, sfs_slice ns,
                     int64_t lease_ns, int64_t *cid, int64_t *until)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CLAIM_NEW, "INSERT INTO statefs_claim"
	        " (queue, ns, lease_until, claimed_ns) VALUES (?1, ?2, ?3, ?4)",
	        &status);
	int64_t now = sfs_clock_ns();

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	if (ns.ptr)
		sqlb_bind(st, 2, ns);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int64(st, 3, now + lease_ns);
	sqlite3_bind_int64(st, 4, now);
	status = sqlb_run(b, st, "creating a claim");
	if (status == SFS_OK)
		status = sqlb_id_check(sqlite3_last_insert_rowid(b->db),
		                       "creating a claim");
	if (status == SFS_OK) {
		*cid = sqlite3_last_insert_rowid(b->db);
		*until = now + lease_ns;
	}
	return status;
}

/* The claim body: head items (id == 0, up to max) or one item by id move
 * into flight under a new claim. SFS_NOTFOUND when there is nothing to
 * claim; *keep then says whether recovery changed anything. */
static int claim_tx(sfs_backend *b, sfs_slice queue, long max, int64_t id,
                    int64_t lease_ns, int64_t *claim_id, sfs_list *items,
                    int *keep)
{
	int status = SFS_OK, found;
	sqlite3_stmt *any = id ? sqlb_stmt(b, ST_CLAIM_ANY_ONE, "SELECT 1 FROM work_queue"
	        " WHERE id=?2 AND execution_id=?1 AND " SQLB_QLIVE(""), &status)
	        : sqlb_stmt(b, ST_CLAIM_ANY, "SELECT 1 FROM work_queue WHERE"
	        " execution_id=?1 AND " SQLB_QLIVE("") " LIMIT 1", &status);
	/* The items' delivery counts and enqueue times come along. */
	sqlite3_stmt *mv = !any ? NULL : id ? sqlb_stmt(b, ST_CLAIM_ONE,
	        "INSERT INTO statefs_inflight (id, claim_id, queue, item,"
	        " enqueued_ns, deliveries) SELECT q.id, ?2, q.execution_id,"
	        " q.work_item, " TM_QUEUE_AT("q.id") ","
	        " min(" TM_QUEUE_DELIVERIES("q.id") ", " SQLB_DELIVERIES_MAX
	        "-1)+1"
	        " FROM work_queue q WHERE q.id=?3 AND q.execution_id=?1 AND "
	        SQLB_QLIVE("q."), &status) : sqlb_stmt(b, ST_CLAIM_HEAD,
	        "INSERT INTO statefs_inflight (id, claim_id, queue, item,"
	        " enqueued_ns, deliveries) SELECT q.id, ?2, q.execution_id,"
	        " q.work_item, " TM_QUEUE_AT("q.id") ","
	        " min(" TM_QUEUE_DELIVERIES("q.id") ", " SQLB_DELIVERIES_MAX
	        "-1)+1"
	        " FROM work_queue q WHERE q.execution_id=?1 AND "
	        SQLB_QLIVE("q.") " ORDER BY q.id LIMIT ?3", &status);
	sqlite3_stmt *dp = mv ? sqlb_stmt(b, ST_CLAIM_DEL_PEND, "DELETE FROM"
	        " statefs_queue_pending WHERE id IN (SELECT id FROM"
	        " statefs_inflight WHERE claim_id=?1)", &status) : NULL;
	sqlite3_stmt *dq = dp ? sqlb_stmt(b, ST_CLAIM_DEL_Q, "DELETE FROM"
	        " work_queue WHERE id IN (SELECT id FROM statefs_inflight WHERE"
	        " claim_id=?1)",
	        &status) : NULL;
	sfs_gc_stats g = { 0, 0, 0, 0 };
	int64_t until, cid, v;

	*keep = 0;
	if (!dq)
		return status;
	status = recover(b, &queue, &g);
	if (status != SFS_OK)
		return status;
	*keep = changed(&g);
	sqlb_bind(any, 1, queue);
	if (id)
		sqlite3_bind_int64(any, 2, id);
	status = one_row(b, any, &v, 0, &found, "looking for pending items");
	if (status != SFS_OK)
		return status;
	if (!found)
		return id ? sfs_err(SFS_NOTFOUND, "item %lld is not pending",
		                    (long long)id)
		          : SFS_NOTFOUND;
	status = new_claim(b, queue, SFS_NONE, lease_ns, &cid, &until);
	if (status != SFS_OK)
		return status;
	sqlb_bind(mv, 1, queue);
	sqlite3_bind_int64(mv, 2, cid);
	sqlite3_bind_int64(mv, 3, id ? id : (int64_t)max);
	status = sqlb_run(b, mv, "claiming");
	if (status == SFS_OK)
		qstat_note(b, queue, 0, (uint64_t)sqlite3_changes(b->db));
	for (int i = 0; i < 2 && status == SFS_OK; i++) {
		sqlite3_stmt *st = i ? dq : dp;

		sqlite3_bind_int64(st, 1, cid);
		status = sqlb_run(b, st, "claiming");
	}
	if (status == SFS_OK)
		status = marks_make(b, queue);
	if (status == SFS_OK && items)
		status = read_claim(b, cid, until, items);
	if (status == SFS_OK)
		*claim_id = cid;
	return status;
}

int sqlb_claim(sfs_backend *b, sfs_slice queue, long max, int64_t lease_ns,
               int64_t *claim_id, sfs_list *items)
{
	sfs_list l = { NULL, 0 };
	int64_t cid = 0;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = claim_tx(b, queue, max, 0, lease_ns, &cid, items ? &l : NULL,
	                  &keep);
	status = finish(b, status, keep && status == SFS_NOTFOUND);
	if (status != SFS_OK) {
		sfs_list_free(&l);
		return status;
	}
	*claim_id = cid;
	if (items)
		*items = l;
	return SFS_OK;
}

int sqlb_claim_item(sfs_backend *b, sfs_slice queue, int64_t id,
                    int64_t lease_ns, int64_t *claim_id)
{
	int64_t cid = 0;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = claim_tx(b, queue, 1, id, lease_ns, &cid, NULL, &keep);
	status = finish(b, status, keep && status == SFS_NOTFOUND);
	if (status == SFS_OK && claim_id)
		*claim_id = cid;
	return status;
}

/* A namespace's entries under a new claim: the body of sqlb_kv_claim. */
static int kv_claim_tx(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                       int64_t lease_ns, int64_t *claim_id, uint64_t *count,
                       int *keep)
{
	int status = SFS_OK, found;
	sqlite3_stmt *any = sqlb_stmt(b, ST_KVC_ANY, "SELECT 1 FROM function_state"
	        " WHERE scope_id=?1 AND ns=?2 LIMIT 1", &status);
	/* Numbered in key order: the claim's items are read by id. */
	sqlite3_stmt *take = any ? sqlb_stmt(b, ST_KVC_TAKE, "INSERT INTO statefs_kv_taken"
	        " (claim_id, key, value, mtime_ns) SELECT ?3, f.key, f.value,"
	        " coalesce(t.mtime_ns, 0) FROM function_state f LEFT JOIN"
	        " statefs_kv_time t ON t.scope=f.scope_id AND t.ns=f.ns AND"
	        " t.key=f.key WHERE f.scope_id=?1 AND f.ns=?2 ORDER BY f.key",
	        &status) : NULL;
	sqlite3_stmt *dt = take ? sqlb_stmt(b, ST_KVC_DEL_TIME, "DELETE FROM"
	        " statefs_kv_time WHERE scope=?1 AND ns=?2", &status) : NULL;
	sqlite3_stmt *dv = dt ? sqlb_stmt(b, ST_KVC_DEL, "DELETE FROM function_state"
	        " WHERE scope_id=?1 AND ns=?2", &status) : NULL;
	sfs_gc_stats g = { 0, 0, 0, 0 };
	int64_t until, cid, v;
	uint64_t n;

	*keep = 0;
	if (!dv)
		return status;
	/* Expired claims on this scope come back first: a drain after a
	 * crashed one takes what the crashed one had taken. */
	status = recover(b, &scope, &g);
	if (status != SFS_OK)
		return status;
	*keep = changed(&g);
	sqlb_bind(any, 1, scope);
	sqlb_bind(any, 2, ns);
	status = one_row(b, any, &v, 0, &found, "looking for entries");
	if (status != SFS_OK)
		return status;
	if (!found)
		return SFS_NOTFOUND;
	status = new_claim(b, scope, ns, lease_ns, &cid, &until);
	if (status != SFS_OK)
		return status;
	sqlb_bind(take, 1, scope);
	sqlb_bind(take, 2, ns);
	sqlite3_bind_int64(take, 3, cid);
	status = sqlb_run(b, take, "taking entries");
	n = (uint64_t)sqlite3_changes64(b->db);
	for (int i = 0; i < 2 && status == SFS_OK; i++) {
		sqlite3_stmt *st = i ? dv : dt;

		sqlb_bind(st, 1, scope);
		sqlb_bind(st, 2, ns);
		status = sqlb_run(b, st, "taking entries");
	}
	if (status == SFS_OK) {
		*claim_id = cid;
		*count = n;
	}
	return status;
}

int sqlb_kv_claim(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                  int64_t lease_ns, int64_t *claim_id, uint64_t *count)
{
	int64_t cid = 0;
	uint64_t n = 0;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = kv_claim_tx(b, scope, ns, lease_ns, &cid, &n, &keep);
	status = finish(b, status, keep && status == SFS_NOTFOUND);
	if (status == SFS_OK) {
		*claim_id = cid;
		if (count)
			*count = n;
	}
	return status;
}

/* --- acting on a claim ---------------------------------------------------- */

/* Claim ?1's queue; no row once the claim is not held. */
#define CLAIM_GET "SELECT queue FROM statefs_claim WHERE claim_id=?1"

/* The queue of a claim into *queue (malloc'd). SFS_CLAIMLOST when the
 * claim was issued but is gone, SFS_NOTFOUND when it never was. */
static int claim_queue(sfs_backend *b, int64_t cid, sfs_buf *queue)
{
	int status = SFS_OK, found;
	sqlite3_stmt *get = sqlb_stmt(b, ST_CLAIM_GET, CLAIM_GET, &status);
	sqlite3_stmt *seq = get ? sqlb_stmt(b, ST_CLAIM_SEQ, "SELECT seq FROM"
	        " sqlite_sequence WHERE name='statefs_claim'", &status) : NULL;
	int64_t last = 0;

	if (!seq)
		return status;
	sqlite3_bind_int64(get, 1, cid);
	status = sqlb_one_blob(b, get, queue, "reading a claim");
	if (status != SFS_NOTFOUND)
		return status;
	status = one_row(b, seq, &last, 1, &found, "reading a claim");
	if (status != SFS_OK)
		return status;
	if (cid > 0 && cid <= last)
		return sfs_err(SFS_CLAIMLOST, "claim %lld is not held (its lease"
		               " ran out, or it was settled)", (long long)cid);
	return sfs_err(SFS_NOTFOUND, "no claim %lld", (long long)cid);
}

/* Whether the claim's row is still there (after recovery): SFS_OK or
 * SFS_CLAIMLOST. */
static int still_held(sfs_backend *b, int64_t cid)
{
	int status = SFS_OK, found;
	sqlite3_stmt *get = sqlb_stmt(b, ST_CLAIM_GET, CLAIM_GET, &status);
	int64_t v;

	if (!get)
		return status;
	sqlite3_bind_int64(get, 1, cid);
	status = one_row(b, get, &v, 0, &found, "reading a claim");
	if (status == SFS_OK && !found)
		status = sfs_err(SFS_CLAIMLOST, "the lease of claim %lld ran out;"
		                 " its items went back to the queue",
		                 (long long)cid);
	return status;
}

/* Recovery of the claim's queue, then whether the claim is held. *keep
 * says whether recovery changed anything. */
static int hold(sfs_backend *b, int64_t cid, int *keep)
{
	sfs_gc_stats g = { 0, 0, 0, 0 };
	sfs_buf q = { NULL, 0 };
	int status = claim_queue(b, cid, &q);

	*keep = 0;
	if (status != SFS_OK)
		return status;
	status = recover(b, &(sfs_slice){ q.ptr, q.len }, &g);
	sfs_buf_free(&q);
	*keep = changed(&g);
	return status == SFS_OK ? still_held(b, cid) : status;
}

/* A held claim's items, by id (no recovery: a read). */
static int claim_items_rd(sfs_backend *b, int64_t cid, int64_t after_id,
                          long limit, int keys_only, sfs_list *out)
{
	/* The columns of sqlb_rows: an entry has a key and no deliveries,
	 * an item no key; both the claim and its lease end (?4). */
	static const char *const sql[2][2] = {
		{ "SELECT id, item, length(item), enqueued_ns, 0, NULL,"
		  " deliveries, claim_id, ?4 FROM statefs_inflight"
		  " WHERE claim_id=?1 AND id>?2 ORDER BY id LIMIT ?3",
		  "SELECT id, NULL, length(item), enqueued_ns, 0, NULL,"
		  " deliveries, claim_id, ?4 FROM statefs_inflight"
		  " WHERE claim_id=?1 AND id>?2 ORDER BY id LIMIT ?3" },
		{ "SELECT id, value, length(value), mtime_ns, 0, key, 0,"
		  " claim_id, ?4 FROM statefs_kv_taken"
		  " WHERE claim_id=?1 AND id>?2 ORDER BY id LIMIT ?3",
		  "SELECT id, NULL, length(value), mtime_ns, 0, key, 0,"
		  " claim_id, ?4 FROM statefs_kv_taken"
		  " WHERE claim_id=?1 AND id>?2 ORDER BY id LIMIT ?3" },
	};
	int status = SFS_OK, found, kv;
	sqlite3_stmt *get = sqlb_stmt(b, ST_CLAIM_HOLD_Q, "SELECT ns IS NOT NULL,"
	        " lease_until FROM statefs_claim WHERE claim_id=?1", &status);
	sqlite3_stmt *st;
	sfs_buf q = { NULL, 0 };
	int64_t v[2] = { 0, 0 };

	if (!get)
		return status;
	sqlite3_bind_int64(get, 1, cid);
	status = one_row(b, get, v, 2, &found, "reading a claim");
	if (status != SFS_OK)
		return status;
	if (!found) {
		status = claim_queue(b, cid, &q); /* lost, or never issued */
		sfs_buf_free(&q);
		return status == SFS_OK ? SFS_INTERNAL : status;
	}
	if (v[1] <= sfs_clock_ns())
		return sfs_err(SFS_CLAIMLOST, "the lease of claim %lld ran out;"
		               " its items go back", (long long)cid);
	kv = v[0] != 0;
	st = sqlb_stmt(b, ST_CLAIM_ITEMS + kv * 2 + !!keys_only,
	               sql[kv][!!keys_only], &status);
	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, cid);
	sqlite3_bind_int64(st, 2, after_id);
	sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
	sqlite3_bind_int64(st, 4, v[1]);
	return sqlb_rows(b, st, out, "reading claimed items");
}

int sqlb_claim_items(sfs_backend *b, int64_t cid, int64_t after_id,
                     long limit, int keys_only, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	int status = sqlb_begin_read(b);

	if (status != SFS_OK)
		return status;
	status = claim_items_rd(b, cid, after_id, limit, keys_only, &l);
	sqlb_rollback(b);
	if (status != SFS_OK) {
		sfs_list_free(&l);
		return status;
	}
	*out = l;
	return SFS_OK;
}

/* Runs statement slot (sql) on the items [lo, hi] of a claim with ?4 =
 * now_s and ?5 = extra; *changes gets the rows it changed. */
static int on_items(sfs_backend *b, int slot, const char *sql, int64_t cid,
                    int64_t lo, int64_t hi, int64_t now_s, int64_t extra,
                    int64_t *changes)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, slot, sql, &status);
	int64_t v[5] = { cid, lo, hi, now_s, extra };

	if (!st)
		return status;
	bind_ints(st, 1, 5, v);
	status = sqlb_run(b, st, "settling claimed items");
	if (changes)
		*changes = sqlite3_changes64(b->db);
	return status;
}

#define DEAD_SQL(reason, cond)                                             \
	"INSERT INTO statefs_dead (id, queue, item, reason, deliveries,"   \
	" dead_ns) SELECT i.id, i.queue, i.item, '" reason "',"             \
	" i.deliveries, ?4 FROM statefs_inflight i WHERE " OF_CLAIM cond    \
	" AND NOT " CLEARED

/* The items [lo, hi] of claim cid back in the queue at their ids, their
 * wait restarted: a nack's, which leaves those at the delivery limit (its
 * dead-letter step took them), or a release's (release set), which puts
 * back every one: an item nobody got goes where it was, also when its
 * count had reached a limit lowered after its last delivery (a release
 * sent it to the dead letters). A cleared item does not come back. */
static int back(sfs_backend *b, int64_t cid, int64_t lo, int64_t hi,
                int64_t now_s, int release)
{
	int status = on_items(b, ST_SETTLE_BACK, "INSERT INTO work_queue (id,"
	        " execution_id, work_item) SELECT i.id, i.queue, i.item FROM"
	        " statefs_inflight i WHERE " OF_CLAIM " AND (?5 OR NOT "
	        LIMIT_REACHED ") AND NOT " CLEARED " ORDER BY i.id", cid, lo,
	        hi, now_s, release, NULL);

	if (status == SFS_OK)
		status = on_items(b, ST_SETTLE_BACK_PEND, "INSERT OR REPLACE INTO"
		        " statefs_queue_pending (id, enqueued_ns, deliveries)"
		        " SELECT i.id, ?4, i.deliveries FROM statefs_inflight i"
		        " WHERE " OF_CLAIM " AND (?5 OR NOT " LIMIT_REACHED ")"
		        " AND NOT " CLEARED, cid, lo, hi, now_s, release, NULL);
	return status;
}

/* Applies one outcome to the items [lo, hi] of claim cid (all of them, or
 * one); the items leave statefs_inflight. */
static int apply(sfs_backend *b, int64_t cid, int64_t lo, int64_t hi,
                 sfs_outcome o, int64_t now_s)
{
	int64_t n = 0, nid;
	int status = SFS_OK;

	switch (o) {
	case SFS_OUTCOME_DONE:
		break;
	case SFS_OUTCOME_REJECT:
		status = on_items(b, ST_SETTLE_DEAD_REJECT, DEAD_SQL("rejected", ""),
		                  cid, lo, hi, now_s, 0, NULL);
		break;
	case SFS_OUTCOME_RELEASE: /* the claim's delivery taken back, a nack */
		status = on_items(b, ST_SETTLE_UNCOUNT, "UPDATE statefs_inflight"
		        " AS i SET deliveries=max(deliveries - 1, 0) WHERE "
		        OF_CLAIM, cid, lo, hi, now_s, 0, NULL);
		if (status == SFS_OK)
			status = back(b, cid, lo, hi, now_s, 1);
		break;
	case SFS_OUTCOME_NACK:
		status = on_items(b, ST_SETTLE_DEAD_LIMIT, DEAD_SQL("delivery limit",
		                  " AND " LIMIT_REACHED), cid, lo, hi, now_s, 0,
		                  NULL);
		if (status == SFS_OK)
			status = back(b, cid, lo, hi, now_s, 0);
		break;
	case SFS_OUTCOME_RETRY: /* one item: lo == hi */
		status = on_items(b, ST_SETTLE_DEAD_LIMIT, DEAD_SQL("delivery limit",
		                  " AND " LIMIT_REACHED), cid, lo, hi, now_s, 0,
		                  &n);
		if (status != SFS_OK || n)
			break;
		status = on_items(b, ST_SETTLE_RETRY, "INSERT INTO work_queue"
		        " (execution_id, work_item) SELECT i.queue, i.item FROM"
		        " statefs_inflight i WHERE " OF_CLAIM " AND NOT " CLEARED,
		        cid, lo, hi, now_s, 0, &n);
		if (status != SFS_OK || !n)
			break;
		nid = sqlite3_last_insert_rowid(b->db);
		status = sqlb_id_check(nid, "putting an item back at the tail");
		if (status != SFS_OK)
			break;
		status = on_items(b, ST_SETTLE_RETRY_PEND, "INSERT INTO"
		        " statefs_queue_pending (id, enqueued_ns, deliveries)"
		        " SELECT ?5, ?4, i.deliveries FROM statefs_inflight i"
		        " WHERE " OF_CLAIM, cid, lo, hi, now_s, nid, NULL);
		break;
	default:
		return sfs_err(SFS_INVALID, "unknown outcome %d", (int)o);
	}
	if (status == SFS_OK)
		status = on_items(b, ST_SETTLE_DEL, "DELETE FROM statefs_inflight WHERE"
		                  " claim_id=?1 AND id BETWEEN ?2 AND ?3", cid, lo,
		                  hi, now_s, 0, NULL);
	return status;
}

/* The same for the entries [lo, hi] of a namespace claim: done deletes
 * them, nack puts them back in their namespace (a key written again
 * meanwhile keeps its new value); retry and reject mean nothing for a
 * key. */
static int apply_kv(sfs_backend *b, int64_t cid, int64_t lo, int64_t hi,
                    sfs_outcome o, int64_t now_s)
{
	int status = SFS_OK;

	switch (o) {
	case SFS_OUTCOME_DONE:
		break;
	case SFS_OUTCOME_NACK:
	case SFS_OUTCOME_RELEASE: /* entries count no deliveries */
		status = on_items(b, ST_KVC_BACK_TIME, KV_BACK_TIME("t.claim_id=?1"
		                  " AND t.id BETWEEN ?2 AND ?3"), cid, lo, hi,
		                  now_s, 0, NULL);
		if (status == SFS_OK)
			status = on_items(b, ST_KVC_BACK, KV_BACK("t.claim_id=?1 AND"
			                  " t.id BETWEEN ?2 AND ?3"), cid, lo, hi,
			                  now_s, 0, NULL);
		break;
	default:
		return sfs_err(SFS_INVALID, "a namespace's entries are done or "
		               "put back (nack), not outcome %d", (int)o);
	}
	if (status == SFS_OK)
		status = on_items(b, ST_KVC_DONE, "DELETE FROM statefs_kv_taken WHERE"
		                  " claim_id=?1 AND id BETWEEN ?2 AND ?3", cid, lo,
		                  hi, now_s, 0, NULL);
	return status;
}

/* Whether a claim (held) is on a namespace's entries. */
static int is_kv_claim(sfs_backend *b, int64_t cid, int *kv)
{
	int status = SFS_OK, found;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CLAIM_KIND, "SELECT ns IS NOT NULL FROM"
	        " statefs_claim WHERE claim_id=?1", &status);
	int64_t v = 0;

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, cid);
	status = one_row(b, st, &v, 1, &found, "reading a claim");
	*kv = v != 0;
	return status;
}

/* Ends the claim when it holds no item any more. */
static int end_if_empty(sfs_backend *b, int64_t cid)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_SETTLE_END, "DELETE FROM statefs_claim WHERE"
	        " claim_id=?1 AND NOT EXISTS (SELECT 1 FROM statefs_inflight"
	        " WHERE claim_id=?1) AND NOT EXISTS (SELECT 1 FROM"
	        " statefs_kv_taken WHERE claim_id=?1)", &status);

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, cid);
	return sqlb_run(b, st, "ending a claim");
}

static int holds(sfs_backend *b, int64_t cid, int kv, int64_t id)
{
	int status = SFS_OK, found;
	sqlite3_stmt *st = kv ? sqlb_stmt(b, ST_KVC_HOLDS, "SELECT 1 FROM"
	        " statefs_kv_taken WHERE id=?1 AND claim_id=?2", &status)
	        : sqlb_stmt(b, ST_CLAIM_HOLDS, "SELECT 1 FROM statefs_inflight"
	        " WHERE id=?1 AND claim_id=?2", &status);
	int64_t v;

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, cid);
	status = one_row(b, st, &v, 0, &found, "reading claimed items");
	if (status == SFS_OK && !found)
		status = sfs_err(SFS_NOTFOUND, "claim %lld does not hold item"
		                 " %lld", (long long)cid, (long long)id);
	return status;
}

/* Settles a held claim: every item with outcomes[0] (ids == NULL), or the
 * named ones, all validated first. */
static int settle_tx(sfs_backend *b, int64_t cid, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n, int *keep)
{
	int64_t now_s = sfs_clock_mtime_ns();
	int kv = 0, status = hold(b, cid, keep);
	int (*act)(sfs_backend *, int64_t, int64_t, int64_t, sfs_outcome,
	           int64_t);

	if (status == SFS_OK)
		status = is_kv_claim(b, cid, &kv);
	if (status != SFS_OK)
		return status;
	act = kv ? apply_kv : apply;
	if (!ids && !kv && outcomes[0] == SFS_OUTCOME_RETRY) {
		/* A retry pushes each item again: one at a time. */
		sfs_list l = { NULL, 0 };

		status = read_claim(b, cid, 0, &l);
		for (size_t i = 0; i < l.n && status == SFS_OK; i++)
			status = apply(b, cid, l.items[i].id, l.items[i].id,
			               SFS_OUTCOME_RETRY, now_s);
		sfs_list_free(&l);
	} else if (!ids) {
		status = act(b, cid, INT64_MIN, INT64_MAX, outcomes[0], now_s);
	} else {
		for (size_t i = 0; i < n && status == SFS_OK; i++)
			status = holds(b, cid, kv, ids[i]);
		for (size_t i = 0; i < n && status == SFS_OK; i++)
			status = act(b, cid, ids[i], ids[i], outcomes[i], now_s);
	}
	if (status == SFS_OK)
		status = end_if_empty(b, cid);
	return status == SFS_OK && !kv ? marks_tidy(b, NULL) : status;
}

int sqlb_claim_settle(sfs_backend *b, int64_t cid, const int64_t *ids,
                      const sfs_outcome *outcomes, size_t n)
{
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = settle_tx(b, cid, ids, outcomes, n, &keep);
	return finish(b, status, keep && status == SFS_CLAIMLOST);
}

/* Extends a held claim's lease to now + lease_ns, into *until. */
static int extend(sfs_backend *b, int64_t cid, int64_t lease_ns,
                  int64_t until_ns, int64_t *until)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CLAIM_BEAT, "UPDATE statefs_claim"
	        " SET lease_until=?2 WHERE claim_id=?1", &status);

	if (!st)
		return status;
	*until = until_ns > 0 ? until_ns : sfs_clock_ns() + lease_ns;
	sqlite3_bind_int64(st, 1, cid);
	sqlite3_bind_int64(st, 2, *until);
	return sqlb_run(b, st, "extending a lease");
}

static int heartbeat_tx(sfs_backend *b, int64_t cid, int64_t lease_ns,
                        int64_t *until, int *keep)
{
	int status = hold(b, cid, keep);

	return status == SFS_OK ? extend(b, cid, lease_ns, 0, until) : status;
}

int sqlb_claim_heartbeat(sfs_backend *b, int64_t cid, int64_t lease_ns,
                         int64_t *lease_until_ns)
{
	int64_t until = 0;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = heartbeat_tx(b, cid, lease_ns, &until, &keep);
	status = finish(b, status, keep && status == SFS_CLAIMLOST);
	if (status == SFS_OK && lease_until_ns)
		*lease_until_ns = until;
	return status;
}

/* The claim holding an in-flight item of a queue: SFS_NOTFOUND when the
 * item is not in flight there. */
static int owner_of(sfs_backend *b, sfs_slice queue, int64_t id,
                    int64_t *cid)
{
	int status = SFS_OK, found;
	sqlite3_stmt *st = sqlb_stmt(b, ST_CLAIM_OWNER, "SELECT claim_id FROM"
	        " statefs_inflight WHERE id=?1 AND queue=?2", &status);

	if (!st)
		return status;
	sqlite3_bind_int64(st, 1, id);
	sqlb_bind(st, 2, queue);
	status = one_row(b, st, cid, 1, &found, "reading claimed items");
	if (status == SFS_OK && !found)
		status = sfs_err(SFS_NOTFOUND, "item %lld is not in flight",
		                 (long long)id);
	return status;
}

/* An in-flight item's claim, after recovery of its queue: SFS_CLAIMLOST
 * when recovery took the item back. */
static int item_held(sfs_backend *b, sfs_slice queue, int64_t id,
                     int64_t *cid, int *keep)
{
	sfs_gc_stats g = { 0, 0, 0, 0 };
	int status = owner_of(b, queue, id, cid);

	*keep = 0;
	if (status != SFS_OK)
		return status;
	status = recover(b, &queue, &g);
	*keep = changed(&g);
	if (status == SFS_OK)
		status = owner_of(b, queue, id, cid);
	if (status == SFS_NOTFOUND)
		status = sfs_err(SFS_CLAIMLOST, "the lease on item %lld ran out;"
		                 " it went back to the queue", (long long)id);
	return status;
}

int sqlb_item_settle(sfs_backend *b, sfs_slice queue, int64_t id,
                     sfs_outcome outcome)
{
	int64_t cid = 0;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = item_held(b, queue, id, &cid, &keep);
	if (status == SFS_OK)
		status = apply(b, cid, id, id, outcome, sfs_clock_mtime_ns());
	if (status == SFS_OK)
		status = end_if_empty(b, cid);
	if (status == SFS_OK)
		status = marks_tidy(b, &queue);
	return finish(b, status, keep && status == SFS_CLAIMLOST);
}

int sqlb_item_heartbeat(sfs_backend *b, sfs_slice queue, int64_t id,
                        int64_t lease_ns, int64_t until_ns)
{
	int64_t cid = 0, until;
	int keep = 0, status = sqlb_begin_write(b);

	if (status != SFS_OK)
		return status;
	status = item_held(b, queue, id, &cid, &keep);
	/* an end given is on the clock the claim is held by: this one;
	 * in the past, or further than the longest lease, it is refused */
	if (status == SFS_OK && until_ns > 0 &&
	    (until_ns <= sfs_clock_ns() ||
	     until_ns - sfs_clock_ns() > MAX_LEASE_MS * 1000000))
		status = sfs_err(SFS_INVALID, "a lease cannot end in the past"
		                 " or more than 100 years ahead");
	if (status == SFS_OK)
		status = extend(b, cid, lease_ns, until_ns, &until);
	return finish(b, status, keep && status == SFS_CLAIMLOST);
}

/* --- dead letters and policies: writing ----------------------------------- */

static int dead_delete_tx(sfs_backend *b, sfs_slice queue, int64_t id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_DEAD_DEL, "DELETE FROM statefs_dead"
	        " WHERE id=?2 AND queue=?1", &status);

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	sqlite3_bind_int64(st, 2, id);
	status = sqlb_run(b, st, "deleting a dead letter");
	if (status == SFS_OK && sqlite3_changes(b->db) == 0)
		status = sfs_err(SFS_NOTFOUND, "item %lld is not a dead letter",
		                 (long long)id);
	return status;
}

/* A new id at the tail, a fresh delivery count (no pending row), the
 * current second as its enqueue time (the time map's). */
static int requeue_tx(sfs_backend *b, sfs_slice queue, int64_t id,
                      int64_t *new_id)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_DEAD_REQ, "INSERT INTO work_queue"
	        " (execution_id, work_item) SELECT queue, item FROM"
	        " statefs_dead WHERE id=?2 AND queue=?1", &status);

	if (!st)
		return status;
	sqlb_bind(st, 1, queue);
	sqlite3_bind_int64(st, 2, id);
	status = sqlb_run(b, st, "requeueing a dead letter");
	if (status != SFS_OK)
		return status;
	if (sqlite3_changes(b->db) == 0)
		return sfs_err(SFS_NOTFOUND, "item %lld is not a dead letter",
		               (long long)id);
	*new_id = sqlite3_last_insert_rowid(b->db);
	status = sqlb_id_check(*new_id, "requeueing a dead letter");
	if (status == SFS_OK)
		status = tm_note(b, TM_QUEUE, *new_id, sfs_clock_mtime_ns());
	return status == SFS_OK ? dead_delete_tx(b, queue, id) : status;
}

int sqlb_item_requeue(sfs_backend *b, sfs_slice queue, int64_t id,
                      int64_t *new_id)
{
	int64_t nid = 0;
	int status = sqlb_begin_write(b);

	if (status == SFS_OK)
		status = sqlb_end_write(b, requeue_tx(b, queue, id, &nid));
	if (status == SFS_OK && new_id)
		*new_id = nid;
	return status;
}

int sqlb_dead_delete(sfs_backend *b, sfs_slice queue, int64_t id)
{
	IN_WRITE_TX(b, dead_delete_tx(b, queue, id));
}

int sqlb_dead_clear(sfs_backend *b, sfs_slice queue, uint64_t *count)
{
	int status = SFS_OK;
	sqlite3_stmt *st = sqlb_stmt(b, ST_DEAD_CLEAR, "DELETE FROM"
	        " statefs_dead WHERE queue=?1", &status);
	uint64_t c = 0;

	if (!st)
		return status;
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	sqlb_bind(st, 1, queue);
	status = sqlb_run(b, st, "clearing dead letters");
	if (status == SFS_OK)
		c = (uint64_t)sqlite3_changes64(b->db);
	status = sqlb_end_write_if(b, status, c > 0);
	if (status == SFS_OK && count)
		*count = c;
	return status;
}

int sqlb_policy_set(sfs_backend *b, sfs_slice queue,
                    const sfs_queue_policy *p)
{
	int del = p->ttl_ms == 0 && p->max_deliveries == 0;
	int status = SFS_OK;
	sqlite3_stmt *st = del ? sqlb_stmt(b, ST_POLICY_DEL, "DELETE FROM"
	        " statefs_queue_policy WHERE queue=?1", &status)
	        : sqlb_stmt(b, ST_POLICY_SET, "INSERT INTO statefs_queue_policy"
	        " (queue, ttl_ms, max_deliveries) VALUES (?1, ?2, ?3) ON"
	        " CONFLICT (queue) DO UPDATE SET ttl_ms=excluded.ttl_ms,"
	        " max_deliveries=excluded.max_deliveries", &status);

	if (!st)
		return status;
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	sqlb_bind(st, 1, queue);
	if (!del) {
		sqlite3_bind_int64(st, 2, p->ttl_ms);
		sqlite3_bind_int64(st, 3, p->max_deliveries);
	}
	return sqlb_end_write(b, sqlb_run(b, st, "setting a queue's policy"));
}

int sqlb_policy_get(sfs_backend *b, sfs_slice queue, sfs_queue_policy *out)
{
	sfs_queue_policy p;
	int status = policy_of(b, queue, &p);

	if (status == SFS_OK)
		*out = p;
	return status;
}
