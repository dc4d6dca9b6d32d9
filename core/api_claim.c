/*
 * api_claim.c - the public claim functions (statefs.h, "Claims"): check the
 * arguments, turn leases into nanoseconds, take the handle's lock, call the
 * backend once. The protocol itself is docs/claims.md; its SQL is
 * core/sqlite/claim.c.
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

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

int sfs_claim_end(sfs_store *s, int64_t claim_id, sfs_outcome outcome)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_outcome(outcome));
	if (outcome == SFS_OUTCOME_DONE)
		CALL_DELETE(s, s->ops->claim_settle(s->be, claim_id, NULL,
		                                    &outcome, 1));
	CALL(s, s->ops->claim_settle(s->be, claim_id, NULL, &outcome, 1));
}

int sfs_claim_settle(sfs_store *s, int64_t claim_id, const int64_t *ids,
                     const sfs_outcome *outcomes, size_t n)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_settle(ids, outcomes, n));
	for (size_t i = 0; i < n; i++)
		if (outcomes[i] != SFS_OUTCOME_DONE)
			CALL(s, s->ops->claim_settle(s->be, claim_id, ids,
			                             outcomes, n));
	/* every one done: a delete (a drain's acks on a full disk) */
	CALL_DELETE(s, s->ops->claim_settle(s->be, claim_id, ids, outcomes,
	                                    n));
}

int sfs_item_settle(sfs_store *s, sfs_slice queue, int64_t id,
                    sfs_outcome outcome)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_outcome(outcome));
	CALL_DELETE(s, s->ops->item_settle(s->be, queue, id, outcome));
}

int sfs_item_heartbeat(sfs_store *s, sfs_slice queue, int64_t id,
                       int64_t lease_ms)
{
	int64_t ns = 0;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CHECK(chk_lease(s, lease_ms, &ns));
	CALL(s, s->ops->item_heartbeat(s->be, queue, id, ns, 0));
}

int sfs_item_heartbeat_until(sfs_store *s, sfs_slice queue, int64_t id,
                             int64_t until_ns)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	if (until_ns <= 0)
		return sfs_err(SFS_INVALID, "a lease cannot end in the past");
	CALL(s, s->ops->item_heartbeat(s->be, queue, id, 0, until_ns));
}

int sfs_item_requeue(sfs_store *s, sfs_slice queue, int64_t id,
                     int64_t *new_id)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(queue, "queue"));
	CALL(s, s->ops->item_requeue(s->be, queue, id, new_id));
}

int sfs_queue_policy_set(sfs_store *s, sfs_slice queue,
                         const sfs_queue_policy *p)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_name(queue, "queue"));
	CHECK(chk_out(p, "policy"));
	CHECK(chk_policy(p->ttl_ms, p->max_deliveries));
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
