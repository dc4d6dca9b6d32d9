/*
 * claim.c - claims on PostgreSQL: the client side of the server
 * functions in schema.c (sfs_claim, sfs_hold, sfs_heartbeat,
 * sfs_settle, sfs_requeue, sfs_recover), and the reads of in-flight items
 * and dead letters.
 *
 * Each write is one call of one function, hence one round trip and one
 * transaction that reads the server's clock once: recovery of the queue
 * concerned, then the act, as docs/claims.md says. Items move between the
 * pending, in-flight and dead tables as stored bytes, keeping their ids,
 * so their seals stay valid. The two outcomes that give an item a new id
 * (retry, requeue of a dead letter) take the queue's lock first, as a
 * push does (seq.c: a follower paging by id missed a retried item whose
 * id committed after a higher one), so they hold it from the new id to
 * the commit. They need the item sealed again in an encrypted store: in
 * one transaction under that lock, the client reads those items, takes
 * new ids, seals them and passes the new bytes to the function, which
 * checks everything again (an item's bytes never change while it is in
 * flight or dead, so the new seal fits whatever the function finds).
 *
 * An item that fails authentication when a claim hands it out goes to the
 * dead letters with the reason "damaged" instead of to the caller, so a
 * damaged item can neither be processed nor block its queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_i.h"

/* sfs_settle's outcome for a damaged item (beside sfs_outcome's). */
#define OUTCOME_DAMAGED 5

/* --- claiming ----------------------------------------------------------------- */

/* Items of a fresh claim: the good ones into *out; the damaged ones'
 * ids into bad[] (*nbad). */
static int claim_items(sfs_backend *b, sfs_slice queue, const PGresult *r,
                       sfs_list *out, int64_t *bad, size_t *nbad)
{
	listb lb = LISTB_INIT;
	char detail[512] = "";
	int st = SFS_OK;

	*nbad = 0;
	for (int i = 0; i < PQntuples(r) && st == SFS_OK; i++) {
		pgb_ad ad = { PGB_AD_QUEUE, queue, SFS_NONE, SFS_NONE,
		              pgr_i64(r, i, 1) };
		sfs_slice v = pgr_bytes(r, i, 2);
		int64_t len = pgb_plain_len(b, v.len);
		sfs_item *it;
		unsigned char *m;

		if (!(it = listb_push(&lb)))
			break;
		it->id = ad.id;
		it->st.size = len > 0 ? (uint64_t)len : 0;
		it->st.claim_id = pgr_i64(r, i, 0);
		it->st.deliveries = pgr_i64(r, i, 3);
		it->st.lease_until_ns = pgr_i64(r, i, 4);
		m = len >= 0 ? listb_value_space(&lb, (size_t)len) : NULL;
		if (len >= 0 && !m)
			break;
		st = len < 0 ? SFS_CORRUPT : pgb_unseal(b, &ad, v, m);
		if (st == SFS_CORRUPT) {
			if (!*detail)
				snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
			bad[(*nbad)++] = ad.id;
			lb.n--; /* its bytes stay unused in the block */
			st = SFS_OK;
		}
	}
	if (st != SFS_OK) {
		listb_discard(&lb);
		return st;
	}
	if (*nbad)
		sfs_err(SFS_CORRUPT, "%s", detail);
	return listb_finish(&lb, out);
}

static int settle_call(pgc *c, int64_t cid, const sfs_slice *queue,
                       const int64_t *ids, const int64_t *outs, size_t n,
                       const int64_t *rids, const sfs_slice *ritems,
                       const int64_t *lock, int64_t res[2]);

/* The items' enqueue times (st.mtime_ns: when their wait began), which
 * the claim function does not return, read after its commit: the claim
 * stands whatever happens here (an item whose time cannot be read shows
 * 0, "unknown"), and the error detail is kept. */
static void claimed_times(pgc *c, int64_t cid, sfs_list *items)
{
	char detail[512];
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	if (!items->n)
		return;
	snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
	pgp_i64(&p, cid);
	st = pgb_exec(c, "SELECT id, enqueued_ns FROM statefs_inflight WHERE"
	              " claim_id = $1", &p, 0, &r, "reading claimed items");
	if (*detail)
		sfs_err(SFS_CORRUPT, "%s", detail);
	if (st != SFS_OK) {
		c->transient = 0;
		return;
	}
	for (int i = 0; i < PQntuples(r); i++)
		for (size_t k = 0; k < items->n; k++)
			if (items->items[k].id == pgr_i64(r, i, 0))
				items->items[k].st.mtime_ns = pgr_i64(r, i, 1);
	PQclear(r);
}

static int claim_body(pgc *c, sfs_slice queue, long max, int64_t one,
                      int64_t lease_ns, int want_items, int64_t *cid,
                      size_t *taken, sfs_list *items)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int64_t *bad = NULL, res[2];
	size_t nbad = 0;
	int st;

	pgp_bytes(&p, queue);
	pgp_i64(&p, max);
	if (one)
		pgp_i64(&p, one);
	else
		pgp_null_i64(&p);
	pgp_i64(&p, lease_ns);
	pgp_clock(&p);
	st = pgb_exec(c, "SELECT * FROM sfs_claim($1, $2, $3, $4, $5)", &p,
	              PGB_COMMIT, &r, "claiming");
	if (st != SFS_OK)
		return st;
	if (!PQntuples(r)) {
		PQclear(r);
		return one ? sfs_err(SFS_NOTFOUND, "item %lld is not pending",
		                     (long long)one) : SFS_NOTFOUND;
	}
	*cid = pgr_i64(r, 0, 0);
	*taken = (size_t)PQntuples(r);
	pgb_committed(c->b);
	if (!want_items) {
		PQclear(r);
		return SFS_OK;
	}
	bad = malloc((size_t)PQntuples(r) * sizeof(*bad));
	st = bad ? claim_items(c->b, queue, r, items, bad, &nbad)
	         : sfs_err(SFS_NOMEM, "reading claimed items");
	PQclear(r);
	if (st == SFS_OK && nbad) {
		char detail[512];
		int64_t *outs = malloc(nbad * sizeof(*outs));

		snprintf(detail, sizeof(detail), "%s", sfs_errdetail());
		for (size_t i = 0; outs && i < nbad; i++)
			outs[i] = OUTCOME_DAMAGED;
		if (outs)
			settle_call(c, *cid, NULL, bad, outs, nbad, NULL, NULL, NULL,
			            res);
		free(outs);
		sfs_log(LOG_WARNING, "%s: %s; it went to the dead letters",
		        c->b->display, detail);
		if (items->n == 0) {
			sfs_list_free(items);
			st = sfs_err(SFS_CORRUPT, "%s; it went to the dead letters",
			             detail);
		}
	}
	free(bad);
	if (st == SFS_OK || st == SFS_CORRUPT)
		claimed_times(c, *cid, items);
	return st;
}

int pgb_claim(sfs_backend *b, sfs_slice queue, long max, int64_t lease_ns,
              int64_t *claim_id, sfs_list *items)
{
	sfs_list l = { NULL, 0 };
	int64_t cid = 0;
	size_t n = 0;
	pgc *c;
	int st;

	/* Run again when the commit's outcome is unknown: a claim lost
	 * after its commit left its items in flight under a claim nobody
	 * holds, and they come back when that lease ends, as a crashed
	 * worker's do (a delivery counted, none lost). A claim of one
	 * named item (pgb_claim_item) would find it gone and say so, and a
	 * namespace's (pgb_kv_claim) would find it empty: those report the
	 * doubt instead. */
	PGB_TRY(b, c, st, PGB_IDEMPOTENT) {
		st = claim_body(c, queue, max, 0, lease_ns, items != NULL, &cid,
		                &n, &l);
	}
	if (st != SFS_OK)
		return st;
	pgb_qstat_note(b, queue, 0, n);
	*claim_id = cid;
	if (items)
		*items = l;
	return SFS_OK;
}

int pgb_claim_item(sfs_backend *b, sfs_slice queue, int64_t id,
                   int64_t lease_ns, int64_t *claim_id)
{
	int64_t cid = 0;
	size_t n = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = claim_body(c, queue, 1, id, lease_ns, 0, &cid, &n, NULL);
	}
	if (st != SFS_OK)
		return st;
	pgb_qstat_note(b, queue, 0, n);
	if (claim_id)
		*claim_id = cid;
	return SFS_OK;
}

/* --- namespace drains ------------------------------------------------------------ */

int pgb_kv_claim(sfs_backend *b, sfs_slice scope, sfs_slice ns,
                 int64_t lease_ns, int64_t *claim_id, uint64_t *count)
{
	int64_t v[2] = { 0, 0 };
	int found = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_bytes(&p, scope);
		pgp_bytes(&p, ns);
		pgp_i64(&p, lease_ns);
		pgp_clock(&p);
		st = pgb_exec(c, "SELECT * FROM sfs_kv_claim($1, $2, $3, $4)", &p,
		              PGB_COMMIT, &r, "taking a namespace's entries");
		if (st == SFS_OK) {
			found = PQntuples(r) > 0;
			for (int k = 0; found && k < 2; k++)
				v[k] = pgr_i64(r, 0, k);
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	pgb_committed(b); /* recovery may have run, even with nothing found */
	if (!found)
		return SFS_NOTFOUND;
	*claim_id = v[0];
	if (count)
		*count = (uint64_t)v[1];
	return SFS_OK;
}

/* The AD of a row of a claim's items: a queue item's (its id in column
 * 0) or a namespace entry's (its key in column 5). */
typedef struct claim_place {
	int kv;
	sfs_slice scope, ns;     /* the queue, or the scope and namespace */
} claim_place;

static void claim_row_ad(const PGresult *r, int row, void *ctx, pgb_ad *ad)
{
	const claim_place *w = ctx;

	if (w->kv)
		*ad = (pgb_ad){ PGB_AD_KV, w->scope, w->ns, pgr_bytes(r, row, 5),
		                0 };
	else
		*ad = (pgb_ad){ PGB_AD_QUEUE, w->scope, SFS_NONE, SFS_NONE,
		                pgr_i64(r, row, 0) };
}

/* Items by id, as pgb_rows reads them (id, value, size, mtime, counter,
 * key, deliveries, claim, lease end): [kv][keys_only]. */
#define CLAIMED_ITEMS(value)                                               \
	"SELECT i.id, " value ", sfs_len(i.item), i.enqueued_ns, 0::bigint,"  \
	" NULL::bytea, i.deliveries, i.claim_id, coalesce(c.lease_until, 0)" \
	" FROM statefs_inflight i LEFT JOIN statefs_claim c ON c.claim_id ="  \
	" i.claim_id WHERE i.claim_id = $1 AND i.id > $2 ORDER BY i.id"       \
	" LIMIT $3"
static const char *const items_sql[2][2] = {
	{ CLAIMED_ITEMS("i.item"), CLAIMED_ITEMS("NULL::bytea") },
	{ "SELECT id, value, sfs_len(value), mtime_ns, 0::bigint, key FROM"
	  " statefs_kv_taken WHERE claim_id = $1 AND id > $2 ORDER BY id"
	  " LIMIT $3",
	  "SELECT id, NULL::bytea, sfs_len(value), mtime_ns, 0::bigint, key"
	  " FROM statefs_kv_taken WHERE claim_id = $1 AND id > $2 ORDER BY id"
	  " LIMIT $3" },
};

/* The body of pgb_claim_items, in one snapshot: the claim (held: its
 * lease has not run out by the server's clock), then its items. */
static int claim_items_body(pgc *c, int64_t cid, int64_t after_id,
                            long limit, int keys_only, sfs_list *out)
{
	PGresult *cr = NULL, *r = NULL;
	pgp p = PGP_INIT;
	claim_place w;
	int st = pgb_begin_snapshot(c);

	if (st != SFS_OK)
		return st;
	pgp_i64(&p, cid);
	pgp_clock(&p);
	/* held, issued (its id taken from the sequence), queue, ns */
	st = pgb_exec(c, "SELECT (SELECT lease_until > sfs_now($2) FROM"
	              " statefs_claim WHERE claim_id = $1), $1 > 0 AND"
	              " s.is_called AND $1 <= s.last_value, c.queue, c.ns"
	              " FROM statefs_claim_claim_id_seq s LEFT JOIN"
	              " statefs_claim c ON c.claim_id = $1", &p, 0, &cr,
	              "reading a claim");
	if (st != SFS_OK)
		return st;
	if (PQgetisnull(cr, 0, 0) || !pgr_i64(cr, 0, 0)) {
		st = !PQgetisnull(cr, 0, 0) || pgr_i64(cr, 0, 1)
		     ? sfs_err(SFS_CLAIMLOST, "claim %lld is not held (its lease"
		               " ran out, or it was settled)", (long long)cid)
		     : sfs_err(SFS_NOTFOUND, "no claim %lld", (long long)cid);
		PQclear(cr);
		return st;
	}
	w.kv = !PQgetisnull(cr, 0, 3);
	w.scope = pgr_bytes(cr, 0, 2);
	w.ns = pgr_bytes(cr, 0, 3);
	memset(&p, 0, sizeof(p));
	pgp_i64(&p, cid);
	pgp_i64(&p, after_id);
	if (limit > 0)
		pgp_i64(&p, limit);
	else
		pgp_null_i64(&p);
	st = pgb_exec(c, items_sql[w.kv][!!keys_only], &p, 0, &r,
	              "reading claimed items");
	if (st == SFS_OK) {
		st = pgb_rows(c->b, r, claim_row_ad, &w, out);
		PQclear(r);
	}
	PQclear(cr);
	return st;
}

int pgb_claim_items(sfs_backend *b, int64_t claim_id, int64_t after_id,
                    long limit, int keys_only, sfs_list *out)
{
	sfs_list l = { NULL, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = claim_items_body(c, claim_id, after_id, limit, keys_only,
		                      &l);
	}
	if (st == SFS_OK)
		*out = l;
	return st;
}

/* --- heartbeats ------------------------------------------------------------------ */

/* until_ns > 0: the lease ends then, on the server's clock: the server
 * reads it once, and sfs_heartbeat gets that reading as its now and the
 * end minus it as the lease (a lease computed on this host's clock ended
 * off by the host's and the server's difference); -4 when it is not
 * after that now. */
static int heartbeat(sfs_backend *b, int64_t cid, const sfs_slice *queue,
                     int64_t id, int64_t lease_ns, int64_t until_ns,
                     int64_t *until)
{
	int64_t u = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_i64(&p, cid);
		if (queue) {
			pgp_bytes(&p, *queue);
			pgp_i64(&p, id);
		} else {
			pgp_bytes(&p, SFS_NONE);
			pgp_null_i64(&p);
		}
		pgp_i64(&p, until_ns > 0 ? until_ns : lease_ns);
		pgp_clock(&p);
		if (until_ns > 0)
			pgp_i64(&p, MAX_LEASE_MS * 1000000);
		st = pgb_exec(c, until_ns > 0
		              ? "SELECT CASE WHEN $4 <= n OR $4 - n > $6"
		                " THEN -4 ELSE"
		                " sfs_heartbeat($1, $2, $3, $4 - n, n) END"
		                " FROM (SELECT sfs_now($5) AS n) t"
		              : "SELECT sfs_heartbeat($1, $2, $3, $4, $5)", &p,
		              PGB_COMMIT, &r, "extending a lease");
		if (st == SFS_OK) {
			u = pgr_i64(r, 0, 0);
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	pgb_committed(b);
	if (u == -4)
		return sfs_err(SFS_INVALID, "a lease cannot end in the past or"
		               " more than 100 years ahead");
	if (u == -3)
		return sfs_err(SFS_NOTFOUND, "item %lld is not in flight",
		               (long long)id);
	if (u == -1 && !queue)
		return sfs_err(SFS_NOTFOUND, "no claim %lld", (long long)cid);
	if (u < 0)
		return queue ? sfs_err(SFS_CLAIMLOST, "the lease on item %lld ran"
		                       " out; it went back to the queue",
		                       (long long)id)
		             : sfs_err(SFS_CLAIMLOST, "claim %lld is not held (its"
		                       " lease ran out, or it was settled)",
		                       (long long)cid);
	if (until)
		*until = u;
	return SFS_OK;
}

int pgb_claim_heartbeat(sfs_backend *b, int64_t claim_id, int64_t lease_ns,
                        int64_t *lease_until_ns)
{
	return heartbeat(b, claim_id, NULL, 0, lease_ns, 0, lease_until_ns);
}

int pgb_item_heartbeat(sfs_backend *b, sfs_slice queue, int64_t id,
                       int64_t lease_ns, int64_t until_ns)
{
	return heartbeat(b, 0, &queue, id, lease_ns, until_ns, NULL);
}

/* --- settling ------------------------------------------------------------------- */

/* One call of sfs_settle; res gets its {code, id}. queue: the one item
 * ids[0] of that queue, whatever claim holds it. ids NULL: every item of
 * the claim with outs[0]. Under the queue's lock *lock when not NULL
 * (retries), in the caller's transaction when there is one. */
static int settle_call(pgc *c, int64_t cid, const sfs_slice *queue,
                       const int64_t *ids, const int64_t *outs, size_t n,
                       const int64_t *rids, const sfs_slice *ritems,
                       const int64_t *lock, int64_t res[2])
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	pgp_i64(&p, cid);
	pgp_bytes(&p, queue ? *queue : SFS_NONE);
	st = ids ? pgp_i64_array(&p, ids, NULL, n) : SFS_OK;
	if (!ids)
		pgp_null_array(&p, 0);
	if (st == SFS_OK)
		st = pgp_i64_array(&p, outs, NULL, ids ? n : 1);
	if (st == SFS_OK && rids) {
		char *isnull = calloc(n, 1);

		for (size_t i = 0; isnull && i < n; i++)
			isnull[i] = !ritems[i].ptr;
		st = isnull ? pgp_i64_array(&p, rids, isnull, n)
		            : sfs_err(SFS_NOMEM, "settling");
		free(isnull);
		if (st == SFS_OK)
			st = pgp_bytes_array(&p, ritems, n);
	} else if (st == SFS_OK) {
		pgp_null_array(&p, 0);
		pgp_null_array(&p, 1);
	}
	pgp_clock(&p);
	if (lock)
		pgp_i64(&p, *lock);
	if (st == SFS_OK)
		st = pgb_exec(c, lock ? "SELECT sfs_settle($1, $2, $3, $4, $5, $6,"
		              " $7) FROM (SELECT pg_advisory_xact_lock($8)) l"
		              : "SELECT sfs_settle($1, $2, $3, $4, $5, $6, $7)", &p,
		              c->in_tx ? 0 : PGB_COMMIT, &r, "settling");
	pgp_free(&p);
	if (st != SFS_OK)
		return st;
	/* {code, id} as a bigint[]: header 20 bytes, then (4 + 8) each */
	{
		sfs_slice a = pgr_bytes(r, 0, 0);
		const unsigned char *u = a.ptr;

		res[0] = res[1] = 0;
		for (int k = 0; k < 2 && a.len >= 20 + 12 * (size_t)(k + 1); k++) {
			uint64_t v = 0;

			for (int j = 0; j < 8; j++)
				v = v << 8 | u[20 + 12 * k + 4 + j];
			res[k] = (int64_t)v;
		}
	}
	PQclear(r);
	return SFS_OK;
}

/* In an encrypted store, the items to retry sealed again under new ids
 * (rids, ritems: n entries parallel to ids, SFS_NONE where the outcome is
 * not a retry), taken under the queue's lock *lock in the caller's
 * transaction. owned[] gets what to free. */
static int reseal_retries(pgc *c, int64_t cid, const sfs_slice *queue,
                          const int64_t *ids, const int64_t *outs, size_t n,
                          const int64_t *lock, int64_t *rids,
                          sfs_slice *ritems, void **owned)
{
	size_t nretry = 0, k = 0;
	int64_t first = 0;
	int st = SFS_OK;

	for (size_t i = 0; i < n; i++)
		nretry += outs[i] == SFS_OUTCOME_RETRY;
	if (!nretry)
		return SFS_OK;
	st = pgb_item_ids(c, nretry, lock, &first);
	for (size_t i = 0; i < n && st == SFS_OK; i++) {
		PGresult *r;
		pgp p = PGP_INIT;
		sfs_buf plain = { NULL, 0 };
		pgb_ad from, to;

		if (outs[i] != SFS_OUTCOME_RETRY)
			continue;
		pgp_i64(&p, ids[i]);
		if (queue) {
			pgp_bytes(&p, *queue);
			st = pgb_exec(c, "SELECT queue, item FROM statefs_inflight"
			              " WHERE id = $1 AND queue = $2", &p, 0, &r,
			              "settling");
		} else {
			pgp_i64(&p, cid);
			st = pgb_exec(c, "SELECT queue, item FROM statefs_inflight"
			              " WHERE id = $1 AND claim_id = $2", &p, 0, &r,
			              "settling");
		}
		if (st != SFS_OK)
			break;
		if (!PQntuples(r)) { /* the function says why */
			PQclear(r);
			continue;
		}
		from = (pgb_ad){ PGB_AD_QUEUE, pgr_bytes(r, 0, 0), SFS_NONE,
		                 SFS_NONE, ids[i] };
		to = from;
		to.id = first + (int64_t)k++;
		st = pgb_unseal_buf(c->b, &from, pgr_bytes(r, 0, 1), &plain);
		if (st == SFS_OK)
			st = pgb_seal(c->b, &to, sfs_bytes(plain.ptr, plain.len),
			              &ritems[i], &owned[i]);
		if (st == SFS_OK)
			rids[i] = to.id;
		sfs_buf_free(&plain);
		PQclear(r);
	}
	return st;
}

/* The lock of the queue of claim cid (or queue), for its retries: *have
 * 0 and *lock unset when there is no such claim (sfs_settle says so). */
static int retry_lock(pgc *c, int64_t cid, const sfs_slice *queue,
                      int64_t *lock, int *have)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int st;

	*have = 0;
	if (queue) {
		*lock = pgb_queue_lock_key(c->b, *queue);
		*have = 1;
		return SFS_OK;
	}
	pgp_i64(&p, cid);
	st = pgb_exec(c, "SELECT queue FROM statefs_claim WHERE claim_id = $1"
	              " AND ns IS NULL", &p, 0, &r, "settling");
	if (st != SFS_OK)
		return st;
	if (PQntuples(r)) {
		*lock = pgb_queue_lock_key(c->b, pgr_bytes(r, 0, 0));
		*have = 1;
	}
	PQclear(r);
	return SFS_OK;
}

/* A release is a nack that first takes back the delivery the claim
 * counted: the items were never delivered. They go back where they were,
 * with the count they had before the claim, also when it had reached a
 * delivery limit lowered after their last delivery (a nack sends those to
 * the dead letters; a release sent to the dead letters what a reader
 * never got: statectl's pop whose output failed said "nothing was
 * taken"). The server's sfs_settle knows nacks only, so in one
 * transaction with it: the claim held (sfs_hold: recovery of its queue,
 * then its row locked, before any item's, as recovery locks them), the
 * counts of the released items set aside (*zr: id, count less this
 * claim's delivery) and 0 in flight, which no limit reaches; the nack;
 * then release_end() puts the counts on the items back in the queue.
 * When the nack settles nothing (the claim is not held, an id it does not
 * hold) the caller rolls it all back. *zr stays NULL when there is
 * nothing to set aside (sfs_settle then says why). */
static int release_begin(pgc *c, int64_t cid, const sfs_slice *queue,
                         const int64_t *ids, const char *rel, size_t n,
                         PGresult **zr)
{
	PGresult *r;
	pgp p = PGP_INIT;
	int64_t h = 0, *rids = NULL;
	size_t k = 0;
	int st = c->in_tx ? SFS_OK : pgb_begin(c);

	if (st == SFS_OK && queue) { /* one item, whatever claim holds it */
		pgp_i64(&p, ids[0]);
		pgp_bytes(&p, *queue);
		st = pgb_exec(c, "SELECT claim_id FROM statefs_inflight WHERE"
		              " id = $1 AND queue = $2", &p, 0, &r, "settling");
		if (st != SFS_OK)
			return st;
		cid = PQntuples(r) ? pgr_i64(r, 0, 0) : 0;
		PQclear(r);
		if (!cid)
			return SFS_OK;
		memset(&p, 0, sizeof(p));
	}
	if (st == SFS_OK) {
		pgp_i64(&p, cid);
		pgp_clock(&p);
		st = pgb_exec_int(c, "SELECT sfs_hold($1, $2)", &p, 0, &h,
		                  "settling");
		memset(&p, 0, sizeof(p));
	}
	if (st != SFS_OK || h != 0)
		return st;
	if (ids && n) {
		rids = malloc(n * sizeof(*rids));
		if (!rids)
			return sfs_err(SFS_NOMEM, "settling");
		for (size_t i = 0; i < n; i++)
			if (rel[i])
				rids[k++] = ids[i];
	}
	pgp_i64(&p, cid);
	st = rids ? pgp_i64_array(&p, rids, NULL, k) : SFS_OK;
	if (!rids)
		pgp_null_array(&p, 0);
	if (st == SFS_OK)
		st = pgb_exec(c, "WITH o AS (SELECT id, deliveries FROM"
		              " statefs_inflight WHERE claim_id = $1 AND"
		              " ($2::int8[] IS NULL OR id = ANY ($2))),"
		              " u AS (UPDATE statefs_inflight i SET deliveries = 0"
		              " FROM o WHERE i.id = o.id RETURNING i.id,"
		              " GREATEST(o.deliveries - 1, 0) AS d)"
		              " SELECT id, d FROM u", &p, 0, zr, "settling");
	pgp_free(&p);
	free(rids);
	return st;
}

/* The counts release_begin() set aside, on the released items now back
 * in the queue (one that was cleared meanwhile did not come back). */
static int release_end(pgc *c, const PGresult *zr)
{
	size_t n = (size_t)PQntuples(zr);
	int64_t *v = malloc((n ? n : 1) * 2 * sizeof(*v));
	pgp p = PGP_INIT;
	int st;

	if (!v)
		return sfs_err(SFS_NOMEM, "settling");
	for (size_t i = 0; i < n; i++) {
		v[i] = pgr_i64(zr, (int)i, 0);
		v[n + i] = pgr_i64(zr, (int)i, 1);
	}
	st = pgp_i64_array(&p, v, NULL, n);
	if (st == SFS_OK)
		st = pgp_i64_array(&p, v + n, NULL, n);
	if (st == SFS_OK)
		st = pgb_exec(c, "UPDATE statefs_queue_item t SET deliveries = v.d"
		              " FROM unnest($1::int8[], $2::int8[]) AS v (id, d)"
		              " WHERE t.id = v.id", &p, 0, NULL, "settling");
	pgp_free(&p);
	free(v);
	return st;
}

static int settle_body(pgc *c, int64_t cid, const sfs_slice *queue,
                       const int64_t *ids, const int64_t *outs,
                       const char *rel, size_t n, int64_t res[2])
{
	int64_t *rids = NULL, lock = 0;
	sfs_slice *ritems = NULL;
	void **owned = NULL;
	PGresult *zr = NULL;
	int st = SFS_OK, retry = 0, locked = 0;

	for (size_t i = 0; ids && i < n; i++)
		retry |= outs[i] == SFS_OUTCOME_RETRY;
	if (retry)
		st = retry_lock(c, cid, queue, &lock, &locked);
	if (st == SFS_OK && retry && c->b->keys) {
		rids = calloc(n, sizeof(*rids));
		ritems = calloc(n, sizeof(*ritems));
		owned = calloc(n, sizeof(*owned));
		st = rids && ritems && owned ? pgb_begin(c)
		     : sfs_err(SFS_NOMEM, "settling");
		if (st == SFS_OK)
			st = reseal_retries(c, cid, queue, ids, outs, n,
			                    locked ? &lock : NULL, rids, ritems,
			                    owned);
	}
	if (st == SFS_OK && rel)
		st = release_begin(c, cid, queue, ids, rel, n, &zr);
	if (st == SFS_OK)
		st = settle_call(c, cid, queue, ids, outs, n, rids, ritems,
		                 locked ? &lock : NULL, res);
	if (st == SFS_OK && zr && res[0] == 0)
		st = release_end(c, zr);
	if (st == SFS_OK && zr && res[0] != 0) {
		/* nothing settled: the counts set aside go back as they were */
		st = pgb_exec_text(c, "ROLLBACK", 0, "settling");
		c->in_tx = 0;
	}
	if (st == SFS_OK && c->in_tx)
		st = pgb_commit(c);
	PQclear(zr);
	for (size_t i = 0; owned && i < n; i++)
		free(owned[i]);
	free(owned);
	free(ritems);
	free(rids);
	return st;
}

static int settle(sfs_backend *b, int64_t cid, const sfs_slice *queue,
                  const int64_t *ids, const sfs_outcome *outcomes, size_t n)
{
	int64_t res[2] = { 0, 0 }, *outs;
	char *rel;
	int any = 0;
	pgc *c;
	int st;

	outs = malloc((n ? n : 1) * sizeof(*outs));
	rel = calloc(n ? n : 1, 1);
	if (!outs || !rel) {
		free(outs);
		free(rel);
		return sfs_err(SFS_NOMEM, "settling");
	}
	/* a release is a nack to the server (release_begin) */
	for (size_t i = 0; i < (ids ? n : 1); i++) {
		rel[i] = outcomes[i] == SFS_OUTCOME_RELEASE;
		any |= rel[i];
		outs[i] = rel[i] ? SFS_OUTCOME_NACK : outcomes[i];
	}
	PGB_TRY(b, c, st, 0) {
		st = settle_body(c, cid, queue, ids, outs, any ? rel : NULL, n,
		                 res);
	}
	free(outs);
	free(rel);
	if (st != SFS_OK)
		return st;
	switch (res[0]) {
	case 0:
		pgb_committed(b);
		return SFS_OK;
	case 1:
		return sfs_err(SFS_NOTFOUND, "no claim %lld", (long long)cid);
	case 2:
		pgb_committed(b); /* recovery may have run */
		return queue ? sfs_err(SFS_CLAIMLOST, "the lease on item %lld ran"
		                       " out; it went back to the queue",
		                       (long long)ids[0])
		             : sfs_err(SFS_CLAIMLOST, "claim %lld is not held (its"
		                       " lease ran out, or it was settled)",
		                       (long long)cid);
	case 3:
		return sfs_err(SFS_NOTFOUND, "claim %lld does not hold item %lld",
		               (long long)cid, (long long)res[1]);
	case 5:
		return sfs_err(SFS_INVALID, "a namespace's entries are done or "
		               "put back (nack), not outcome %lld",
		               (long long)res[1]);
	default:
		return sfs_err(SFS_NOTFOUND, "item %lld is not in flight",
		               (long long)res[1]);
	}
}

/* The ids of a claim's items, for settling all of them with an outcome
 * the server settles only by id (a retry, a reject). */
static int claim_ids(sfs_backend *b, int64_t cid, int64_t **ids, size_t *n)
{
	PGresult *r = NULL;
	pgp p = PGP_INIT;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		pgp_i64(&p, cid);
		st = pgb_exec(c, "SELECT id FROM statefs_inflight WHERE claim_id"
		              " = $1 ORDER BY id", &p, 0, &r, "reading a claim");
		memset(&p, 0, sizeof(p));
	}
	if (st != SFS_OK)
		return st;
	*n = (size_t)PQntuples(r);
	*ids = malloc((*n ? *n : 1) * sizeof(**ids));
	for (size_t i = 0; *ids && i < *n; i++)
		(*ids)[i] = pgr_i64(r, (int)i, 0);
	PQclear(r);
	return *ids ? SFS_OK : sfs_err(SFS_NOMEM, "reading a claim");
}

int pgb_claim_settle(sfs_backend *b, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n)
{
	sfs_outcome *outs;
	int64_t *all = NULL;
	size_t k = 0;
	int st;

	/* Every item of the claim (ids NULL) with outcomes[0]: the server
	 * does it at once for done and nack (a release is a nack there); a
	 * retry or a reject goes by the ids the claim holds. */
	if (ids || outcomes[0] == SFS_OUTCOME_DONE ||
	    outcomes[0] == SFS_OUTCOME_NACK ||
	    outcomes[0] == SFS_OUTCOME_RELEASE)
		return settle(b, claim_id, NULL, ids, outcomes, ids ? n : 0);
	if ((st = claim_ids(b, claim_id, &all, &k)) != SFS_OK)
		return st;
	if (k == 0) {
		free(all);
		return settle(b, claim_id, NULL, NULL, outcomes, 0);
	}
	outs = malloc(k * sizeof(*outs));
	if (!outs) {
		free(all);
		return sfs_err(SFS_NOMEM, "settling");
	}
	for (size_t i = 0; i < k; i++)
		outs[i] = outcomes[0];
	st = settle(b, claim_id, NULL, all, outs, k);
	free(outs);
	free(all);
	return st;
}

int pgb_item_settle(sfs_backend *b, sfs_slice queue, int64_t id,
                        sfs_outcome outcome)
{
	return settle(b, 0, &queue, &id, &outcome, 1);
}

/* --- in-flight items and dead letters: reading ---------------------------- */

#define INFLIGHT_SCAN(value)                                               \
	"SELECT i.id, " value ", sfs_len(i.item), i.enqueued_ns, 0::bigint,"  \
	" NULL::bytea, i.deliveries, i.claim_id, coalesce(c.lease_until, 0)" \
	" FROM statefs_inflight i LEFT JOIN statefs_claim c"                 \
	" ON c.claim_id = i.claim_id WHERE i.queue = $1 AND i.id > $2"       \
	" ORDER BY i.id LIMIT $3"

int pgb_inflight_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                      long limit, int keys_only, sfs_list *out)
{
	return pgb_sql_item_scan(b, keys_only ? INFLIGHT_SCAN("NULL::bytea")
	                                  : INFLIGHT_SCAN("i.item"),
	                     queue, after_id, limit, out);
}

int pgb_inflight_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                      sfs_buf *item)
{
	return pgb_sql_item_get(b, "SELECT item FROM statefs_inflight WHERE id = $2"
	                    " AND queue = $1", queue, id, item);
}

int pgb_inflight_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                      sfs_stat *out)
{
	int64_t v[5] = { 0 };
	int found = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		pgp_i64(&p, id);
		st = pgb_exec(c, "SELECT i.claim_id, coalesce(c.lease_until, 0),"
		              " i.enqueued_ns, i.deliveries, sfs_len(i.item)"
		              " FROM statefs_inflight i LEFT JOIN statefs_claim c"
		              " ON c.claim_id = i.claim_id WHERE i.id = $2"
		              " AND i.queue = $1", &p, 0, &r, "reading an item");
		if (st == SFS_OK) {
			found = PQntuples(r) > 0;
			for (int k = 0; found && k < 5; k++)
				v[k] = pgr_i64(r, 0, k);
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	if (!found)
		return SFS_NOTFOUND;
	out->claim_id = v[0];
	out->lease_until_ns = v[1];
	out->mtime_ns = v[2];
	out->deliveries = v[3];
	out->size = (uint64_t)v[4];
	return SFS_OK;
}

#define DEAD_SCAN(value)                                                   \
	"SELECT id, " value ", sfs_len(item), dead_ns, 0::bigint,"          \
	" NULL::bytea, deliveries, 0::bigint, 0::bigint,"                    \
	" convert_to(reason, 'UTF8') FROM statefs_dead WHERE queue = $1"    \
	" AND id > $2 ORDER BY id LIMIT $3"

int pgb_dead_scan(sfs_backend *b, sfs_slice queue, int64_t after_id,
                  long limit, int keys_only, sfs_list *out)
{
	return pgb_sql_item_scan(b, keys_only ? DEAD_SCAN("NULL::bytea")
	                                  : DEAD_SCAN("item"),
	                     queue, after_id, limit, out);
}

int pgb_dead_peek(sfs_backend *b, sfs_slice queue, int64_t id,
                  sfs_buf *item)
{
	return pgb_sql_item_get(b, "SELECT item FROM statefs_dead WHERE id = $2"
	                    " AND queue = $1", queue, id, item);
}

int pgb_dead_stat(sfs_backend *b, sfs_slice queue, int64_t id,
                  sfs_stat *out)
{
	sfs_list l = { NULL, 0 };
	int st = pgb_sql_item_scan(b, "SELECT id, NULL::bytea, sfs_len(item),"
	                           " dead_ns, 0::bigint, NULL::bytea,"
	                           " deliveries FROM statefs_dead WHERE"
	                           " queue = $1 AND id = $2 + 0 * $3", queue,
	                           id, 1, &l);

	if (st == SFS_OK && l.n == 0)
		st = SFS_NOTFOUND;
	if (st == SFS_OK)
		*out = l.items[0].st;
	sfs_list_free(&l);
	return st;
}

/* --- dead letters and policies: writing -------------------------------------- */

/* A dead letter back at the tail under a new id, taken under the queue's
 * lock (see the top). */
static int requeue_body(pgc *c, sfs_slice queue, int64_t id, int64_t *nid)
{
	PGresult *r;
	pgp p = PGP_INIT;
	sfs_slice sealed = SFS_NONE;
	void *owned = NULL;
	int64_t fresh = 0, lock = pgb_queue_lock_key(c->b, queue);
	int st = SFS_OK;

	if (c->b->keys) {
		pgb_ad from = { PGB_AD_QUEUE, queue, SFS_NONE, SFS_NONE, id }, to;
		sfs_buf plain = { NULL, 0 };

		if ((st = pgb_begin(c)) != SFS_OK)
			return st;
		pgp_bytes(&p, queue);
		pgp_i64(&p, id);
		st = pgb_exec(c, "SELECT item FROM statefs_dead WHERE id = $2"
		              " AND queue = $1", &p, 0, &r, "requeueing");
		if (st != SFS_OK)
			return st;
		if (!PQntuples(r)) {
			PQclear(r);
			return sfs_err(SFS_NOTFOUND, "item %lld is not a dead letter",
			               (long long)id);
		}
		st = pgb_item_ids(c, 1, &lock, &fresh);
		to = from;
		to.id = fresh;
		if (st == SFS_OK)
			st = pgb_unseal_buf(c->b, &from, pgr_bytes(r, 0, 0), &plain);
		if (st == SFS_OK)
			st = pgb_seal(c->b, &to, sfs_bytes(plain.ptr, plain.len),
			              &sealed, &owned);
		sfs_buf_free(&plain);
		PQclear(r);
		if (st != SFS_OK)
			return st;
		memset(&p, 0, sizeof(p));
	}
	pgp_bytes(&p, queue);
	pgp_i64(&p, id);
	if (fresh)
		pgp_i64(&p, fresh);
	else
		pgp_null_i64(&p);
	pgp_bytes(&p, sealed);
	pgp_clock(&p);
	pgp_i64(&p, lock);
	st = pgb_exec(c, "SELECT sfs_requeue($1, $2, $3, $4, $5)"
	              " FROM (SELECT pg_advisory_xact_lock($6)) l", &p,
	              c->in_tx ? 0 : PGB_COMMIT, &r, "requeueing a dead letter");
	free(owned);
	if (st != SFS_OK)
		return st;
	if (PQgetisnull(r, 0, 0))
		st = sfs_err(SFS_NOTFOUND, "item %lld is not a dead letter",
		             (long long)id);
	else
		*nid = pgr_i64(r, 0, 0);
	PQclear(r);
	if (st == SFS_OK && c->in_tx)
		st = pgb_commit(c);
	return st;
}

int pgb_item_requeue(sfs_backend *b, sfs_slice queue, int64_t id,
                     int64_t *new_id)
{
	int64_t nid = 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		st = requeue_body(c, queue, id, &nid);
	}
	if (st == SFS_OK) {
		pgb_committed(b);
		if (new_id)
			*new_id = nid;
	}
	return st;
}

int pgb_dead_delete(sfs_backend *b, sfs_slice queue, int64_t id)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	pgp_bytes(&p, queue);
	pgp_i64(&p, id);
	st = pgb_run_int(b, "WITH d AS (DELETE FROM statefs_dead WHERE id = $2"
	                 " AND queue = $1 RETURNING 1) SELECT count(*) FROM d",
	                 &p, PGB_COMMIT, &n, "deleting a dead letter");
	if (st == SFS_OK && !n)
		return sfs_err(SFS_NOTFOUND, "item %lld is not a dead letter",
		               (long long)id);
	return st;
}

int pgb_dead_clear(sfs_backend *b, sfs_slice queue, uint64_t *count)
{
	pgp p = PGP_INIT;
	int64_t n = 0;
	int st;

	pgp_bytes(&p, queue);
	st = pgb_run_int(b, "WITH d AS (DELETE FROM statefs_dead WHERE"
	                 " queue = $1 RETURNING 1) SELECT count(*) FROM d", &p,
	                 PGB_COMMIT, &n, "clearing dead letters");
	if (st == SFS_OK && count)
		*count = (uint64_t)n;
	return st;
}

int pgb_policy_set(sfs_backend *b, sfs_slice queue, const sfs_queue_policy *q)
{
	int del = q->ttl_ms == 0 && q->max_deliveries == 0;
	pgc *c;
	int st;

	PGB_TRY(b, c, st, PGB_IDEMPOTENT) {
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		if (!del) {
			pgp_i64(&p, q->ttl_ms);
			pgp_i64(&p, q->max_deliveries);
		}
		st = pgb_exec(c, del ? "DELETE FROM statefs_queue_policy WHERE"
		              " queue = $1" : "INSERT INTO statefs_queue_policy"
		              " (queue, ttl_ms, max_deliveries) VALUES ($1, $2, $3)"
		              " ON CONFLICT (queue) DO UPDATE SET"
		              " ttl_ms = excluded.ttl_ms,"
		              " max_deliveries = excluded.max_deliveries", &p,
		              PGB_COMMIT, NULL, "setting a queue's policy");
	}
	if (st == SFS_OK)
		pgb_committed(b);
	return st;
}

int pgb_policy_get(sfs_backend *b, sfs_slice queue, sfs_queue_policy *out)
{
	sfs_queue_policy q = { 0, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		st = pgb_exec(c, "SELECT ttl_ms, max_deliveries FROM"
		              " statefs_queue_policy WHERE queue = $1", &p, 0, &r,
		              "reading a queue's policy");
		if (st == SFS_OK) {
			if (PQntuples(r)) {
				q.ttl_ms = pgr_i64(r, 0, 0);
				q.max_deliveries = pgr_i64(r, 0, 1);
			}
			PQclear(r);
		}
	}
	if (st == SFS_OK)
		*out = q;
	return st;
}

/* --- the sweep of orphaned time rows ------------------------------------ */

/* A time row whose data row another program deleted (an SDK worker's
 * own DELETE FROM function_state WHERE scope_id = $1 on a plaintext
 * store, or of its counters, log entries or queue items) is invisible,
 * every read joining on the data row, but it stayed: with executions
 * coming and going the time tables grew by each execution's rows. A
 * recovery pass of every queue also deletes those among the next 1,024
 * rows of each time table (key or id order, round the table), in one
 * statement that commits alone (its deletes run whether or not its
 * answer, where the stretches ended, reads them). READ COMMITTED: a
 * candidate is deleted only while it is the row version the statement
 * read (ctid and xmin):
 * one a put updated meanwhile (the key written again, ON CONFLICT DO
 * UPDATE of the orphan) has a new version and is left, where a recheck
 * of NOT EXISTS would still read the old snapshot. */
#define SWEEP_KEYS(c, d, tt, dt, p1, p2, p3)                               \
	" " c " AS (SELECT t.ctid AS tid, t.xmin AS x, t.scope_id, t.ns,"   \
	" t.key FROM " tt " t WHERE (t.scope_id, t.ns, t.key) > (" p1 ","   \
	" " p2 ", " p3 ") ORDER BY t.scope_id, t.ns, t.key LIMIT 1024),"    \
	" " d " AS (DELETE FROM " tt " t USING " c " WHERE t.ctid = " c    \
	".tid AND t.xmin = " c ".x AND NOT EXISTS (SELECT 1 FROM " dt " f"   \
	" WHERE f.scope_id = " c ".scope_id AND f.ns = " c ".ns"             \
	" AND f.key = " c ".key) RETURNING 1),"
#define SWEEP_IDS(c, d, tt, dt, p)                                         \
	" " c " AS (SELECT t.ctid AS tid, t.xmin AS x, t.id FROM " tt " t"  \
	" WHERE t.id > " p " ORDER BY t.id LIMIT 1024),"                     \
	" " d " AS (DELETE FROM " tt " t USING " c " WHERE t.ctid = " c     \
	".tid AND t.xmin = " c ".x AND NOT EXISTS (SELECT 1 FROM " dt " f"   \
	" WHERE f.id = " c ".id) RETURNING 1)"
#define SWEEP_LAST(c)                                                      \
	" LEFT JOIN LATERAL (SELECT scope_id, ns, key FROM " c " ORDER BY"   \
	" scope_id DESC, ns DESC, key DESC LIMIT 1) " c "l ON true"

static const char sweep_sql[] =
	"WITH"
	SWEEP_KEYS("kc", "kd", "statefs_kv_time", "function_state",
	           "$1", "$2", "$3")
	SWEEP_KEYS("cc", "cd", "statefs_counter_time", "function_counter",
	           "$4", "$5", "$6")
	SWEEP_IDS("lc", "ld", "statefs_log_time", "function_state_log", "$7") ","
	SWEEP_IDS("qc", "qd", "statefs_queue_item", "work_queue", "$8")
	" SELECT kcl.scope_id, kcl.ns, kcl.key, ccl.scope_id, ccl.ns, ccl.key,"
	" (SELECT max(id) FROM lc), (SELECT max(id) FROM qc)"
	" FROM (SELECT 1) one" SWEEP_LAST("kc") SWEEP_LAST("cc");

/* Keeps a key part of where a stretch ended; an empty one (not NULL:
 * the comparison must hold) when the stretch reached the table's end. */
static int sweep_keep(sfs_buf *b, sfs_slice v)
{
	void *p = malloc(v.len + 1);

	if (!p)
		return SFS_NOMEM;
	if (v.len)
		memcpy(p, v.ptr, v.len);
	((char *)p)[v.len] = 0;
	sfs_buf_free(b);
	b->ptr = p;
	b->len = v.ptr ? v.len : 0;
	return SFS_OK;
}

static sfs_slice sweep_at(const sfs_buf *b)
{
	return sfs_bytes(b->ptr ? (const char *)b->ptr : "", b->len);
}

static int time_sweep(sfs_backend *b)
{
	pgc *c;
	int st;

	pthread_mutex_lock(&b->sweep_mu);
	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++)
				pgp_bytes(&p, sweep_at(&b->sweep_after[i][j]));
		pgp_i64(&p, b->sweep_after_id[0]);
		pgp_i64(&p, b->sweep_after_id[1]);
		st = pgb_exec(c, sweep_sql, &p, PGB_COMMIT, &r,
		              "deleting orphaned time rows");
		if (st == SFS_OK) {
			for (int i = 0; i < 2 && st == SFS_OK; i++)
				for (int j = 0; j < 3 && st == SFS_OK; j++)
					st = sweep_keep(&b->sweep_after[i][j],
					                pgr_bytes(r, 0, 3 * i + j));
			b->sweep_after_id[0] = pgr_i64(r, 0, 6);
			b->sweep_after_id[1] = pgr_i64(r, 0, 7);
			PQclear(r);
		}
	}
	pthread_mutex_unlock(&b->sweep_mu);
	return st;
}

/* Recovery of one queue or all. At open it is the same call: when
 * nothing has expired it changes nothing and costs two index probes.
 * Of every queue, but at open, it also sweeps a stretch of the time
 * tables (above). */
int pgb_queue_gc(sfs_backend *b, sfs_slice queue, int at_open,
                 sfs_gc_stats *out)
{
	sfs_gc_stats g = { 0, 0, 0, 0 };
	pgc *c;
	int st;

	PGB_TRY(b, c, st, 0) {
		PGresult *r;
		pgp p = PGP_INIT;

		pgp_bytes(&p, queue);
		pgp_clock(&p);
		st = pgb_exec(c, "SELECT * FROM sfs_recover($1, $2)", &p,
		              PGB_COMMIT, &r, "recovering claims");
		if (st == SFS_OK) {
			g.expired = (uint64_t)pgr_i64(r, 0, 0);
			g.returned = (uint64_t)pgr_i64(r, 0, 1);
			g.dead = (uint64_t)pgr_i64(r, 0, 2);
			g.claims = (uint64_t)pgr_i64(r, 0, 3);
			PQclear(r);
		}
	}
	if (st != SFS_OK)
		return st;
	if (g.expired || g.returned || g.dead || g.claims)
		pgb_committed(b);
	if (!queue.ptr && !at_open && (st = time_sweep(b)) != SFS_OK)
		return st;
	/* the daemon's periodic pass brings an idle daemon's counts out */
	pgb_qstat_due(b);
	if (out)
		*out = g;
	return SFS_OK;
}
