/*
 * api_claim.c - the public claim functions (statefs.h, "Claims"): check the
 * arguments, turn leases into nanoseconds, take the handle's lock, call the
 * backend once. The protocol itself is docs/claims.md; its SQL is
 * sqlb_claim.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

/* Leases longer than this are refused: now + lease must fit int64 ns. */
#define MAX_LEASE_MS (1000LL * 3600 * 24 * 365 * 100)

/* lease_ms (0: the store's default) in ns, into *ns. */
static int chk_lease(const sfs_store *s, int64_t lease_ms, int64_t *ns)
{
	if (lease_ms < 0 || lease_ms > MAX_LEASE_MS)
		return sfs_err(SFS_INVALID, "lease of %lld ms is out of range",
		               (long long)lease_ms);
	*ns = (lease_ms ? lease_ms : s->lease_ms) * 1000000LL;
	return SFS_OK;
}

static int chk_outcome(sfs_outcome o)
{
	if (o < SFS_OUTCOME_DONE || o > SFS_OUTCOME_NACK)
		return sfs_err(SFS_INVALID, "unknown outcome %d", (int)o);
	return SFS_OK;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every outcome valid and no id named twice. */
static int chk_settle(const int64_t *ids, const sfs_outcome *outcomes,
                      size_t n)
{
	int64_t *sorted;
	int status = SFS_OK;

	if (n == 0)
		return sfs_err(SFS_INVALID, "no items to settle");
	CHECK(chk_out(ids, "ids"));
	CHECK(chk_out(outcomes, "outcomes"));
	for (size_t i = 0; i < n; i++)
		CHECK(chk_outcome(outcomes[i]));
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return sfs_err(SFS_NOMEM, "checking ids");
	memcpy(sorted, ids, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_id);
	for (size_t i = 1; i < n && status == SFS_OK; i++)
		if (sorted[i] == sorted[i - 1])
			status = sfs_err(SFS_INVALID, "item %lld is named twice",
			                 (long long)sorted[i]);
	free(sorted);
	return status;
}

int sfs_claim(sfs_store *s, sfs_slice queue, long max, int64_t lease_ms,
              int64_t *claim_id, sfs_list *items)
{
	int64_t ns = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(claim_id, "claim_id"));
	CHECK(chk_lease(s, lease_ms, &ns));
	if (max < 1)
		return sfs_err(SFS_INVALID, "max must be at least 1");
	CALL(s, s->ops->claim(s->be, queue, max, ns, claim_id, items));
}

int sfs_claim_item(sfs_store *s, sfs_slice queue, int64_t id,
                   int64_t lease_ms, int64_t *claim_id)
{
	int64_t ns = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_lease(s, lease_ms, &ns));
	if (id <= 0)
		return sfs_err(SFS_NOTFOUND, "no item %lld", (long long)id);
	CALL(s, s->ops->claim_item(s->be, queue, id, ns, claim_id));
}

int sfs_kv_claim(sfs_store *s, sfs_slice scope, sfs_slice ns,
                 int64_t lease_ms, int64_t *claim_id, uint64_t *count)
{
	int64_t lease = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_out(claim_id, "claim_id"));
	CHECK(chk_lease(s, lease_ms, &lease));
	CALL(s, s->ops->kv_claim(s->be, scope, ns, lease, claim_id, count));
}

int sfs_claim_items(sfs_store *s, int64_t claim_id, int64_t after_id,
                    long limit, int keys_only, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->claim_items(s->be, claim_id, after_id, limit,
	                            keys_only, out));
}

int sfs_claim_heartbeat(sfs_store *s, int64_t claim_id, int64_t lease_ms,
                        int64_t *lease_until_ns)
{
	int64_t ns = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_lease(s, lease_ms, &ns));
	CALL(s, s->ops->claim_heartbeat(s->be, claim_id, ns, lease_until_ns));
}

int sfs_claim_ack(sfs_store *s, int64_t claim_id)
{
	sfs_outcome o = SFS_OUTCOME_DONE;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CALL_DELETE(s, s->ops->claim_settle(s->be, claim_id, NULL, &o, 0));
}

int sfs_claim_nack(sfs_store *s, int64_t claim_id)
{
	sfs_outcome o = SFS_OUTCOME_NACK;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CALL(s, s->ops->claim_settle(s->be, claim_id, NULL, &o, 0));
}

int sfs_claim_settle(sfs_store *s, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_settle(ids, outcomes, n));
	CALL(s, s->ops->claim_settle(s->be, claim_id, ids, outcomes, n));
}

int sfs_inflight_scan(sfs_store *s, sfs_slice queue, int64_t after_id,
                      long limit, int keys_only, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->inflight_scan(s->be, queue, after_id, limit, keys_only,
	                              out));
}

int sfs_inflight_peek(sfs_store *s, sfs_slice queue, int64_t id,
                      sfs_buf *item)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(item, "item"));
	CALL(s, s->ops->inflight_peek(s->be, queue, id, item));
}

int sfs_inflight_stat(sfs_store *s, sfs_slice queue, int64_t id,
                      sfs_claim_info *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->inflight_stat(s->be, queue, id, out));
}

int sfs_inflight_settle(sfs_store *s, sfs_slice queue, int64_t id,
                        sfs_outcome outcome)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_outcome(outcome));
	CALL_DELETE(s, s->ops->inflight_settle(s->be, queue, id, outcome));
}

int sfs_inflight_heartbeat(sfs_store *s, sfs_slice queue, int64_t id,
                           int64_t lease_ms)
{
	int64_t ns = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_lease(s, lease_ms, &ns));
	CALL(s, s->ops->inflight_heartbeat(s->be, queue, id, ns));
}

int sfs_dead_scan(sfs_store *s, sfs_slice queue, int64_t after_id,
                  long limit, int keys_only, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->dead_scan(s->be, queue, after_id, limit, keys_only,
	                          out));
}

int sfs_dead_peek(sfs_store *s, sfs_slice queue, int64_t id, sfs_buf *item)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(item, "item"));
	CALL(s, s->ops->dead_peek(s->be, queue, id, item));
}

int sfs_dead_stat(sfs_store *s, sfs_slice queue, int64_t id, uint64_t *size,
                  int64_t *mtime_ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(size, "size"));
	CALL(s, s->ops->dead_stat(s->be, queue, id, size, mtime_ns));
}

int sfs_dead_requeue(sfs_store *s, sfs_slice queue, int64_t id,
                     int64_t *new_id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL(s, s->ops->dead_requeue(s->be, queue, id, new_id));
}

int sfs_dead_delete(sfs_store *s, sfs_slice queue, int64_t id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL_DELETE(s, s->ops->dead_delete(s->be, queue, id));
}

int sfs_dead_clear(sfs_store *s, sfs_slice queue, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL_DELETE(s, s->ops->dead_clear(s->be, queue, count));
}

int sfs_queue_policy_set(sfs_store *s, sfs_slice queue,
                         const sfs_queue_policy *p)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(p, "policy"));
	if (p->ttl_ms < 0 || p->max_deliveries < 0)
		return sfs_err(SFS_INVALID, "a negative time-to-live or"
		               " delivery limit");
	if (p->ttl_ms > MAX_LEASE_MS)
		return sfs_err(SFS_INVALID, "time-to-live of %lld ms is out of"
		               " range", (long long)p->ttl_ms);
	CALL(s, s->ops->policy_set(s->be, queue, p));
}

int sfs_queue_policy_get(sfs_store *s, sfs_slice queue,
                         sfs_queue_policy *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->policy_get(s->be, queue, out));
}

int sfs_queue_gc(sfs_store *s, sfs_slice queue, sfs_gc_stats *stats)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_opt_name(queue, "queue"));
	CALL(s, s->ops->queue_gc(s->be, queue, 0, stats));
}

int sfs_duration_parse(const char *text, int64_t *ms)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	char *end;
	long long v;

	sfs_err_clear();
	if (!text || !ms)
		return sfs_err(SFS_INVALID, "no duration");
	if (*text < '0' || *text > '9')
		return sfs_err(SFS_INVALID, "'%s' is not a duration (a whole"
		               " number, then ms, s, m, h or d)", text);
	errno = 0;
	v = strtoll(text, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (errno || v > MAX_LEASE_MS / units[i].ms)
			return sfs_err(SFS_INVALID, "'%s' is too long", text);
		*ms = (int64_t)v * units[i].ms;
		return SFS_OK;
	}
	return sfs_err(SFS_INVALID, "'%s' is not a duration (a whole number,"
	               " then ms, s, m, h or d)", text);
}
