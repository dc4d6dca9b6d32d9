/*
 * test_claim.c - claims (statefs.h "Claims", docs/claims.md) on the
 * engine's injectable clock, so leases are tested exactly at the cut-off:
 * a lease ending at t is lost at t, whether or not recovery ran first;
 * heartbeats keep a claim past its first lease; an ack of a returned claim
 * deletes nothing (not the redelivered items); outcomes are all or
 * nothing; nack keeps the FIFO place; the delivery limit, the time-to-live
 * and its order against returns; recovery at open; dead letters; export,
 * import and restore of every claim table; queues that hold only claimed
 * items exist as directories. Another program on the same file (the SDKs):
 * test_claimsdk.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "claimfx.h"

static void test_claim_ack(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c"), cid = 0;
	sfs_stat ci;
	sfs_info info;
	sfs_list l;
	sfs_buf b;

	OK(sfs_claim(t->s, Q, 2, 60000, &cid, &l));
	assert_true(cid > 0);
	values_are(&l, "a b");
	assert_int_equal(l.items[0].id, first);
	assert_int_equal(l.items[1].id, first + 1);
	assert_int_equal(l.items[0].st.deliveries, 1);
	assert_int_equal(l.items[0].st.size, 1);
	assert_int_equal(l.items[0].st.lease_until_ns, tfx_now + 60 * SEC);
	assert_int_equal(l.items[0].st.mtime_ns, 1000 * SEC); /* enqueued */
	assert_int_equal(l.items[0].st.claim_id, cid);
	sfs_list_free(&l);
	/* in flight is not pending */
	assert_int_equal(qlen(t->s), 1);
	pending_are(t->s, "c");
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l));
	assert_int_equal(l.n, 2);
	assert_null(l.items[0].value.ptr);
	assert_int_equal(l.items[1].st.claim_id, cid);
	assert_int_equal(l.items[1].st.lease_until_ns, tfx_now + 60 * SEC);
	sfs_list_free(&l);
	OK(sfs_item_get(t->s, Q, SFS_ITEM_INFLIGHT, first, &b));
	tfx_buf(&b, "a");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_item_get(t->s, Q, SFS_ITEM_INFLIGHT, first + 2, &b));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, first + 1, &ci));
	assert_int_equal(ci.claim_id, cid);
	assert_int_equal(ci.lease_until_ns, tfx_now + 60 * SEC);
	assert_int_equal(ci.mtime_ns, 1000 * SEC); /* enqueued */
	assert_int_equal(ci.deliveries, 1);
	assert_int_equal(ci.size, 1);
	IS(SFS_NOTFOUND, sfs_item_stat(t->s, Q, SFS_ITEM_PENDING, first + 1,
	                               &ci));
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.queue_rows, 1);
	assert_int_equal(info.claimed_rows, 2);
	assert_int_equal(info.dead_rows, 0);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	inflight_are(t->s, "");
	pending_are(t->s, "c");
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.claimed_rows, 0);
	/* the claim is over: a second ack reports it not held */
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	/* a claim id never issued is no claim at all */
	IS(SFS_NOTFOUND, sfs_claim_end(t->s, cid + 100, SFS_OUTCOME_DONE));
	IS(SFS_NOTFOUND, sfs_claim_heartbeat(t->s, 0, 0, NULL));
}

static void test_claim_empty(void **state)
{
	tfx *t = *state;
	int64_t cid = -7;
	sfs_list l;

	IS(SFS_NOTFOUND, sfs_claim(t->s, Q, 5, 0, &cid, &l));
	assert_int_equal(cid, -7);
	push(t->s, "a");
	OK(sfs_claim(t->s, Q, 5, 0, &cid, NULL));
	/* the empty claim created nothing: this is the first claim id */
	assert_int_equal(cid, 1);
	IS(SFS_NOTFOUND, sfs_claim(t->s, Q, 5, 0, &cid, &l));
	assert_int_equal(cid, 1);
	IS(SFS_NOTFOUND, sfs_claim_heartbeat(t->s, 2, 0, NULL));
	/* the default lease is ten minutes */
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l));
	assert_int_equal(l.items[0].st.lease_until_ns, tfx_now + 600 * SEC);
	sfs_list_free(&l);
}

/* now == lease end is expired, now == lease end - 1 ns is held; the same
 * with and without a recovery pass before the call. */
static void check_cutoff(sfs_store *s, int gc_first)
{
	int64_t first = push(s, "a b"), cid = 0, until = 0;
	sfs_gc_stats g;
	sfs_list l;

	OK(sfs_claim(s, Q, 2, 1000, &cid, NULL));
	until = tfx_now + SEC;
	tfx_now = until - 1;
	OK(sfs_queue_gc(s, SFS_NONE, &g));
	assert_int_equal(g.returned, 0);
	OK(sfs_claim_heartbeat(s, cid, 1, &until)); /* until = now + 1 ms */
	assert_int_equal(until, tfx_now + MS);
	tfx_now = until;
	if (gc_first) {
		OK(sfs_queue_gc(s, Q, &g));
		assert_int_equal(g.returned, 2);
		assert_int_equal(g.claims, 1);
	}
	IS(SFS_CLAIMLOST, sfs_claim_end(s, cid, SFS_OUTCOME_DONE));
	/* nothing was deleted: both are back, at their original ids */
	OK(sfs_item_scan(s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "a b");
	assert_int_equal(l.items[0].id, first);
	assert_int_equal(l.items[1].id, first + 1);
	assert_int_equal(l.items[0].st.mtime_ns, until - until % SEC);
	sfs_list_free(&l);
	inflight_are(s, "");
	IS(SFS_CLAIMLOST, sfs_claim_heartbeat(s, cid, 0, NULL));
	IS(SFS_CLAIMLOST, sfs_claim_end(s, cid, SFS_OUTCOME_NACK));
}

static void test_cutoff_without_gc(void **state)
{
	check_cutoff(((tfx *)*state)->s, 0);
}

static void test_cutoff_after_gc(void **state)
{
	check_cutoff(((tfx *)*state)->s, 1);
}

static void test_heartbeat_keeps_claim(void **state)
{
	tfx *t = *state;
	int64_t cid = 0, start = tfx_now;
	sfs_gc_stats g;

	push(t->s, "a");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, NULL));
	for (int i = 1; i <= 10; i++) {
		tfx_now = start + i * 900 * MS; /* well past the first lease */
		OK(sfs_queue_gc(t->s, SFS_NONE, &g));
		assert_int_equal(g.returned, 0);
		OK(sfs_claim_heartbeat(t->s, cid, 1000, NULL));
	}
	inflight_are(t->s, "a");
	assert_int_equal(qlen(t->s), 0);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	inflight_are(t->s, "");
	assert_int_equal(qlen(t->s), 0);
}

/* A heartbeat after recovery returned the claim reports the loss; the
 * items' delivery counts go on. */
static void test_heartbeat_after_return(void **state)
{
	tfx *t = *state;
	int64_t cid = 0, cid2 = 0;
	sfs_gc_stats g;
	sfs_list l;

	push(t->s, "a");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, NULL));
	tfx_now += 2 * SEC;
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 1);
	IS(SFS_CLAIMLOST, sfs_claim_heartbeat(t->s, cid, 1000, NULL));
	assert_string_not_equal(sfs_errdetail(), "");
	pending_are(t->s, "a");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid2, &l));
	assert_true(cid2 > cid);
	assert_int_equal(l.items[0].st.deliveries, 2); /* second delivery */
	sfs_list_free(&l);
}

/* A claim that was returned and whose items were claimed again: its ack
 * fails and deletes nothing; the new claim's ack works. */
static void test_ack_of_returned_claim(void **state)
{
	tfx *t = *state;
	int64_t cid1 = 0, cid2 = 0;

	push(t->s, "a b");
	OK(sfs_claim(t->s, Q, 2, 1000, &cid1, NULL));
	tfx_now += 1001 * MS;
	OK(sfs_claim(t->s, Q, 2, 1000, &cid2, NULL)); /* recovers first */
	inflight_are(t->s, "a b");
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid1, SFS_OUTCOME_DONE));
	inflight_are(t->s, "a b");
	{
		sfs_outcome o = SFS_OUTCOME_DONE;
		sfs_list l;
		int64_t id;

		OK(sfs_item_scan(t->s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l));
		id = l.items[0].id;
		assert_int_equal(l.items[0].st.claim_id, cid2);
		sfs_list_free(&l);
		IS(SFS_CLAIMLOST, sfs_claim_settle(t->s, cid1, &id, &o, 1));
	}
	inflight_are(t->s, "a b");
	OK(sfs_claim_end(t->s, cid2, SFS_OUTCOME_DONE));
	inflight_are(t->s, "");
	pending_are(t->s, "");
}

/* Nack puts the items back where they were in FIFO order, wait restarted. */
static void test_nack_keeps_place(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c d"), cid = 0;
	sfs_list l;

	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	tfx_now += 7 * SEC;
	push(t->s, "e");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "a b c d e");
	assert_int_equal(l.items[0].id, first);
	assert_int_equal(l.items[1].id, first + 1);
	assert_int_equal(l.items[0].st.mtime_ns, 1007 * SEC); /* restarted */
	assert_int_equal(l.items[2].st.mtime_ns, 1000 * SEC);
	/* pending items say how often they were delivered, as PostgreSQL's
	 * did (SQLite's said 0; helper-45's find) */
	assert_int_equal(l.items[0].st.deliveries, 1);
	assert_int_equal(l.items[2].st.deliveries, 0);
	sfs_list_free(&l);
	{
		sfs_stat st;

		OK(sfs_item_stat(t->s, Q, SFS_ITEM_PENDING, first, &st));
		assert_int_equal(st.deliveries, 1);
		OK(sfs_item_stat(t->s, Q, SFS_ITEM_PENDING, first + 2, &st));
		assert_int_equal(st.deliveries, 0);
	}
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	/* the next claim gets them first, as second deliveries */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	values_are(&l, "a");
	assert_int_equal(l.items[0].st.deliveries, 2);
	sfs_list_free(&l);
}

static void test_settle_all_or_nothing(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c"), cid = 0, other = 0;
	int64_t ids[3] = { first, first + 1, first + 2 };
	sfs_outcome o[3] = { SFS_OUTCOME_DONE, SFS_OUTCOME_RETRY,
		             SFS_OUTCOME_REJECT };
	sfs_list l;

	OK(sfs_claim(t->s, Q, 3, 0, &cid, NULL));
	push(t->s, "x");
	OK(sfs_claim(t->s, Q, 1, 0, &other, NULL));
	/* an item of another claim: nothing changes */
	ids[2] = first + 3;
	IS(SFS_NOTFOUND, sfs_claim_settle(t->s, cid, ids, o, 3));
	inflight_are(t->s, "a b c x");
	/* a bad outcome, a repeated id, no items: nothing changes */
	ids[2] = first + 2;
	o[2] = (sfs_outcome)99;
	IS(SFS_INVALID, sfs_claim_settle(t->s, cid, ids, o, 3));
	o[2] = SFS_OUTCOME_REJECT;
	ids[1] = first;
	IS(SFS_INVALID, sfs_claim_settle(t->s, cid, ids, o, 3));
	ids[1] = first + 1;
	IS(SFS_INVALID, sfs_claim_settle(t->s, cid, ids, o, 0));
	inflight_are(t->s, "a b c x");
	pending_are(t->s, "");
	dead_are(t->s, "");
	/* all three at once */
	tfx_now += 3 * SEC;
	OK(sfs_claim_settle(t->s, cid, ids, o, 3));
	inflight_are(t->s, "x");
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "b");
	assert_true(l.items[0].id > first + 3); /* retry: a new id, the tail */
	assert_int_equal(l.items[0].st.mtime_ns, 1003 * SEC);
	sfs_list_free(&l);
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_DEAD, -1, 0, 0, &l));
	values_are(&l, "c");
	assert_int_equal(l.items[0].id, first + 2);
	assert_int_equal(l.items[0].reason.len, 8);
	assert_memory_equal(l.items[0].reason.ptr, "rejected", 8);
	assert_int_equal(l.items[0].st.deliveries, 1);
	assert_int_equal(l.items[0].st.mtime_ns, 1003 * SEC);
	sfs_list_free(&l);
	/* its last item settled, the claim is over */
	IS(SFS_CLAIMLOST, sfs_claim_heartbeat(t->s, cid, 0, NULL));
	/* a retried item keeps counting deliveries */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	values_are(&l, "b");
	assert_int_equal(l.items[0].st.deliveries, 2);
	sfs_list_free(&l);
	/* partial settle: the claim goes on with the rest */
	OK(sfs_claim_end(t->s, other, SFS_OUTCOME_DONE));
}

static void test_claim_item_race(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b"), c1 = 0, c2 = 0;
	sfs_store *s2;

	OK(tfx_open(t->path, 0, &s2));
	OK(sfs_claim_item(t->s, Q, first + 1, 0, &c1));
	IS(SFS_NOTFOUND, sfs_claim_item(s2, Q, first + 1, 0, &c2));
	assert_int_equal(c2, 0);
	IS(SFS_NOTFOUND, sfs_claim_item(s2, S("other"), first, 0, &c2));
	IS(SFS_NOTFOUND, sfs_claim_item(s2, Q, first + 99, 0, NULL));
	inflight_are(t->s, "b");
	pending_are(s2, "a");
	OK(sfs_claim_item(s2, Q, first, 0, &c2));
	assert_true(c2 > c1);
	inflight_are(t->s, "a b");
	sfs_store_close(s2);
}

/* The file view's per-item calls: whatever claim holds the item. */
static void test_inflight_item_calls(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c"), cid = 0;
	sfs_stat ci;

	OK(sfs_claim(t->s, Q, 3, 1000, &cid, NULL));
	OK(sfs_item_settle(t->s, Q, first, SFS_OUTCOME_DONE));
	IS(SFS_NOTFOUND, sfs_item_settle(t->s, Q, first, SFS_OUTCOME_DONE));
	IS(SFS_NOTFOUND, sfs_item_settle(t->s, S("other"), first + 1,
	                                     SFS_OUTCOME_DONE));
	IS(SFS_INVALID, sfs_item_settle(t->s, Q, first + 1,
	                                    (sfs_outcome)0));
	OK(sfs_item_settle(t->s, Q, first + 1, SFS_OUTCOME_NACK));
	pending_are(t->s, "b");
	tfx_now += 900 * MS;
	OK(sfs_item_heartbeat(t->s, Q, first + 2, 1000));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, first + 2, &ci));
	assert_int_equal(ci.lease_until_ns, tfx_now + SEC);
	/* an end given is kept to the nanosecond; one not after now is
	 * refused and changes nothing */
	OK(sfs_item_heartbeat_until(t->s, Q, first + 2, tfx_now + 3 * SEC + 7));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, first + 2, &ci));
	assert_int_equal(ci.lease_until_ns, tfx_now + 3 * SEC + 7);
	IS(SFS_INVALID, sfs_item_heartbeat_until(t->s, Q, first + 2, tfx_now));
	IS(SFS_INVALID, sfs_item_heartbeat_until(t->s, Q, first + 2, 0));
	IS(SFS_INVALID, sfs_item_heartbeat_until(t->s, Q, first + 2,
	        tfx_now + 101LL * 365 * 86400 * SEC));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, first + 2, &ci));
	assert_int_equal(ci.lease_until_ns, tfx_now + 3 * SEC + 7);
	IS(SFS_NOTFOUND, sfs_item_heartbeat_until(t->s, Q, first,
	                                          tfx_now + SEC));
	OK(sfs_item_heartbeat_until(t->s, Q, first + 2, tfx_now + SEC));
	tfx_now += SEC; /* exactly at the end of the new lease */
	IS(SFS_CLAIMLOST, sfs_item_heartbeat(t->s, Q, first + 2, 1000));
	IS(SFS_NOTFOUND, sfs_item_settle(t->s, Q, first + 2,
	                                     SFS_OUTCOME_DONE));
	pending_are(t->s, "b c");
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
}

static void test_dead_letters(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b"), cid = 0, nid = 0;
	uint64_t n = 0;
	sfs_stat st;
	sfs_outcome rej[2] = { SFS_OUTCOME_REJECT, SFS_OUTCOME_REJECT };
	int64_t ids[2] = { first, first + 1 };
	sfs_info info;
	sfs_list l;
	sfs_buf b;

	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	tfx_now += 5 * SEC;
	OK(sfs_claim_settle(t->s, cid, ids, rej, 2));
	dead_are(t->s, "a b");
	OK(sfs_store_info(t->s, &info));
	assert_int_equal(info.dead_rows, 2);
	OK(sfs_item_get(t->s, Q, SFS_ITEM_DEAD, first, &b));
	tfx_buf(&b, "a");
	sfs_buf_free(&b);
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_DEAD, first + 1, &st));
	assert_int_equal(st.size, 1);
	assert_int_equal(st.mtime_ns, 1005 * SEC);
	assert_int_equal(st.deliveries, 1);
	assert_int_equal(st.claim_id, 0); /* a dead letter has no claim */
	IS(SFS_NOTFOUND, sfs_item_stat(t->s, S("other"), SFS_ITEM_DEAD, first,
	                               &st));
	/* a queue with only dead letters still exists */
	assert_int_equal(qlen(t->s), 0);
	OK(sfs_dir_exists(t->s, SFS_FAM_QUEUE, Q, SFS_NONE));
	IS(SFS_NOTEMPTY, sfs_dir_remove(t->s, SFS_FAM_QUEUE, Q, SFS_NONE));
	/* requeue: a new id at the tail, a fresh count */
	push(t->s, "z");
	OK(sfs_item_requeue(t->s, Q, first, &nid));
	IS(SFS_NOTFOUND, sfs_item_requeue(t->s, Q, first, NULL));
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "z a");
	assert_int_equal(l.items[1].id, nid);
	assert_int_equal(l.items[1].st.mtime_ns, 1005 * SEC);
	sfs_list_free(&l);
	OK(sfs_claim(t->s, Q, 2, 0, &cid, &l));
	assert_int_equal(l.items[1].st.deliveries, 1);
	sfs_list_free(&l);
	OK(sfs_item_delete(t->s, Q, SFS_ITEM_DEAD, first + 1));
	IS(SFS_NOTFOUND, sfs_item_delete(t->s, Q, SFS_ITEM_DEAD, first + 1));
	dead_are(t->s, "");
	OK(sfs_claim_settle(t->s, cid, &nid, rej, 1));
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_DEAD, &n));
	assert_int_equal(n, 1);
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_DEAD, &n));
	assert_int_equal(n, 0);
}

static void test_delivery_limit(void **state)
{
	tfx *t = *state;
	sfs_queue_policy p = { 0, 2 }, got;
	int64_t cid = 0;
	sfs_gc_stats g;
	sfs_list l;

	OK(sfs_queue_policy_set(t->s, Q, &p));
	OK(sfs_queue_policy_get(t->s, Q, &got));
	assert_int_equal(got.max_deliveries, 2);
	assert_int_equal(got.ttl_ms, 0);
	push(t->s, "poison ok");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, NULL)); /* delivery 1 */
	tfx_now += 2 * SEC;
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.returned, 1);
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, &l)); /* delivery 2 */
	values_are(&l, "poison");
	assert_int_equal(l.items[0].st.deliveries, 2);
	sfs_list_free(&l);
	tfx_now += 2 * SEC;
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 0);
	assert_int_equal(g.dead, 1);
	assert_int_equal(g.claims, 1);
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_DEAD, -1, 0, 0, &l));
	values_are(&l, "poison");
	assert_memory_equal(l.items[0].reason.ptr, "delivery limit", 14);
	assert_int_equal(l.items[0].st.deliveries, 2);
	sfs_list_free(&l);
	/* a release (the taker got nothing) takes its delivery back: at a
	 * limit of 1, "ok" claimed and released three times stays pending,
	 * no delivery counted; per item (the file view's call) too */
	p.max_deliveries = 1;
	OK(sfs_queue_policy_set(t->s, Q, &p));
	for (int i = 0; i < 3; i++) {
		OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
		OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_RELEASE));
	}
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	OK(sfs_item_settle(t->s, Q, l.items[0].id, SFS_OUTCOME_RELEASE));
	sfs_list_free(&l);
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "ok");
	assert_int_equal(l.items[0].st.deliveries, 0);
	sfs_list_free(&l);
	IS(SFS_INVALID, sfs_claim_end(t->s, cid, (sfs_outcome)(SFS_OUTCOME_RELEASE + 1)));
	p.max_deliveries = 2;
	OK(sfs_queue_policy_set(t->s, Q, &p));
	/* a nack at the limit goes dead too; below it, back */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	pending_are(t->s, "ok");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	pending_are(t->s, "");
	dead_are(t->s, "poison ok");
	/* removing the policy */
	p.max_deliveries = 0;
	OK(sfs_queue_policy_set(t->s, Q, &p));
	OK(sfs_queue_policy_get(t->s, Q, &got));
	assert_int_equal(got.max_deliveries, 0);
	p.ttl_ms = -1;
	IS(SFS_INVALID, sfs_queue_policy_set(t->s, Q, &p));
	/* a limit no count reaches (counts stop at SFS_DELIVERIES_MAX) */
	p.ttl_ms = 0;
	p.max_deliveries = SFS_DELIVERIES_MAX + 1;
	IS(SFS_INVALID, sfs_queue_policy_set(t->s, Q, &p));
	p.max_deliveries = SFS_DELIVERIES_MAX;
	OK(sfs_queue_policy_set(t->s, Q, &p));
	/* a release sends nothing to the dead letters that was not there
	 * before it: an item whose count reached a limit set after its
	 * deliveries stays pending with the count it had, by claim and per
	 * item (it went to the dead letters: statectl's pop whose output
	 * failed said "nothing was taken"); a nack there still sends it */
	{
		sfs_slice late = S("late");
		sfs_queue_policy lim = { 0, 2 };
		uint64_t n = 0;

		OK(sfs_queue_push(t->s, S("lim"), &late, 1, NULL));
		for (int i = 0; i < 2; i++) {
			OK(sfs_claim(t->s, S("lim"), 1, 0, &cid, NULL));
			OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
		}
		OK(sfs_queue_policy_set(t->s, S("lim"), &lim));
		OK(sfs_claim(t->s, S("lim"), 1, 0, &cid, NULL));
		OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_RELEASE));
		OK(sfs_claim(t->s, S("lim"), 1, 0, &cid, &l));
		assert_int_equal(l.items[0].st.deliveries, 3);
		OK(sfs_item_settle(t->s, S("lim"), l.items[0].id,
		                   SFS_OUTCOME_RELEASE));
		sfs_list_free(&l);
		OK(sfs_item_count(t->s, S("lim"), SFS_ITEM_DEAD, &n));
		assert_int_equal(n, 0);
		OK(sfs_claim(t->s, S("lim"), 1, 0, &cid, &l));
		values_are(&l, "late");
		assert_int_equal(l.items[0].st.deliveries, 3);
		sfs_list_free(&l);
		OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
		OK(sfs_item_count(t->s, S("lim"), SFS_ITEM_PENDING, &n));
		assert_int_equal(n, 0);
		OK(sfs_item_count(t->s, S("lim"), SFS_ITEM_DEAD, &n));
		assert_int_equal(n, 1);
	}
}

/* The time-to-live drops pending items that waited longer than it, and
 * runs before expired claims return: an item whose worker died is never
 * dropped for the time it spent in flight. */
static void test_ttl(void **state)
{
	tfx *t = *state;
	sfs_queue_policy p = { 10000, 0 };
	int64_t cid = 0;
	sfs_gc_stats g;
	sfs_list l;

	OK(sfs_queue_policy_set(t->s, Q, &p));
	push(t->s, "old1 old2");                       /* at 1000 s */
	OK(sfs_claim(t->s, Q, 1, 30000, &cid, NULL));  /* old1, 30 s lease */
	tfx_now = 1005 * SEC;
	push(t->s, "mid");
	tfx_now = 1010 * SEC; /* old2 waited exactly 10 s: kept */
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 0);
	tfx_now = 1010 * SEC + 1;
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 1);
	pending_are(t->s, "mid");
	/* old1's lease ends at 1030: returned, not dropped, in one pass */
	tfx_now = 1030 * SEC;
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.expired, 1);  /* mid, pushed at 1005 */
	assert_int_equal(g.returned, 1);
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "old1");
	assert_int_equal(l.items[0].st.mtime_ns, 1030 * SEC);
	sfs_list_free(&l);
	/* its restarted wait counts from its return */
	tfx_now = 1040 * SEC;
	OK(sfs_queue_gc(t->s, Q, &g));
	assert_int_equal(g.expired, 0);
	tfx_now = 1041 * SEC;
	IS(SFS_NOTFOUND, sfs_claim(t->s, Q, 1, 0, &cid, NULL)); /* dropped */
	pending_are(t->s, "");
	/* an item another program pushed: test_ttl_foreign */
}

static void test_recovery_at_open(void **state)
{
	tfx *t = *state;
	int64_t cid = 0;
	sfs_store *ro;

	push(t->s, "a");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, NULL));
	sfs_store_close(t->s);
	t->s = NULL;
	tfx_now += 5 * SEC;
	/* read-only opens change nothing */
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &ro));
	inflight_are(ro, "a");
	IS(SFS_READONLY, sfs_queue_gc(ro, SFS_NONE, NULL));
	sfs_store_close(ro);
	OK(tfx_open(t->path, 0, &t->s));
	inflight_are(t->s, "");
	pending_are(t->s, "a");
}

/* An open that skips recovery leaves the expired claim to sfs_queue_gc,
 * which then reports it. */
static void test_open_norecover(void **state)
{
	tfx *t = *state;
	int64_t cid = 0;
	sfs_gc_stats g;

	push(t->s, "a b");
	OK(sfs_claim(t->s, Q, 2, 1000, &cid, NULL));
	sfs_store_close(t->s);
	t->s = NULL;
	tfx_now += 5 * SEC;
	OK(tfx_open(t->path, SFS_OPEN_NORECOVER, &t->s));
	inflight_are(t->s, "a b");
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 2);
	assert_int_equal(g.claims, 1);
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 0);
	pending_are(t->s, "a b");
}

static void test_queue_dirs(void **state)
{
	tfx *t = *state;
	int64_t cid = 0;
	sfs_queue_policy p = { 0, 3 }, got;
	sfs_list l;

	push(t->s, "a");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
	OK(sfs_dir_list(t->s, SFS_FAM_QUEUE, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l));
	tfx_keys(&l, "jobs");
	sfs_list_free(&l);
	OK(sfs_dir_exists(t->s, SFS_FAM_QUEUE, Q, SFS_NONE));
	IS(SFS_NOTEMPTY, sfs_dir_remove(t->s, SFS_FAM_QUEUE, Q, SFS_NONE));
	OK(sfs_queue_policy_set(t->s, Q, &p));
	/* renaming the queue moves its claims, items and policy along */
	OK(sfs_dir_rename(t->s, SFS_FAM_QUEUE, Q, SFS_NONE, S("work"),
	                  SFS_NONE, 0));
	IS(SFS_NOTFOUND, sfs_dir_exists(t->s, SFS_FAM_QUEUE, Q, SFS_NONE));
	OK(sfs_item_scan(t->s, S("work"), SFS_ITEM_INFLIGHT, -1, 0, 0, &l));
	values_are(&l, "a");
	sfs_list_free(&l);
	OK(sfs_queue_policy_get(t->s, S("work"), &got));
	assert_int_equal(got.max_deliveries, 3);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	OK(sfs_item_scan(t->s, S("work"), SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "a");
	sfs_list_free(&l);
}

/* Clearing a queue removes pending items only; exec clear touches none. */
static void test_clears(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c"), cid = 0;
	sfs_outcome rej = SFS_OUTCOME_REJECT;
	uint64_t n = 0;

	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	OK(sfs_claim_settle(t->s, cid, &first, &rej, 1));
	OK(sfs_exec_clear(t->s, Q, &n));
	assert_int_equal(n, 0);
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 1);
	inflight_are(t->s, "b");
	dead_are(t->s, "a");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
}

/* sfs_claim_end with each outcome settles every item of the claim, and
 * the claim ends: REJECT sends them all to the dead letters, RETRY pushes
 * each again at the tail under a new id, in order. */
static void test_claim_end_outcomes(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b"), cid = 0;
	uint64_t n = 9;
	sfs_list l;

	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	OK(sfs_item_count(t->s, Q, SFS_ITEM_INFLIGHT, &n));
	assert_int_equal(n, 2);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_REJECT));
	dead_are(t->s, "a b");
	OK(sfs_item_count(t->s, Q, SFS_ITEM_DEAD, &n));
	assert_int_equal(n, 2);
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_DEAD, &n));
	assert_int_equal(n, 2);

	push(t->s, "c d");
	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_RETRY));
	OK(sfs_item_scan(t->s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, "c d");
	assert_true(l.items[0].id > first + 3);
	assert_true(l.items[1].id > l.items[0].id);
	sfs_list_free(&l);
	inflight_are(t->s, "");
	IS(SFS_INVALID, sfs_claim_end(t->s, cid, (sfs_outcome)0));
}

/* The item functions take the state they act on: deleting an in-flight
 * item is its ack; in-flight items cannot be cleared wholesale. */
static void test_item_states(void **state)
{
	tfx *t = *state;
	int64_t first = push(t->s, "a b c"), cid = 0;
	uint64_t n = 0;
	sfs_stat st;

	OK(sfs_claim(t->s, Q, 2, 0, &cid, NULL));
	IS(SFS_NOTFOUND, sfs_item_delete(t->s, Q, SFS_ITEM_PENDING, first));
	OK(sfs_item_delete(t->s, Q, SFS_ITEM_INFLIGHT, first));
	inflight_are(t->s, "b");
	IS(SFS_NOTFOUND, sfs_item_delete(t->s, Q, SFS_ITEM_INFLIGHT, first));
	IS(SFS_INVALID, sfs_item_clear(t->s, Q, SFS_ITEM_INFLIGHT, &n));
	IS(SFS_INVALID, sfs_item_count(t->s, Q, (sfs_item_state)0, &n));
	IS(SFS_INVALID, sfs_item_stat(t->s, Q, (sfs_item_state)4, first, &st));
	OK(sfs_item_stat(t->s, Q, SFS_ITEM_PENDING, first + 2, &st));
	assert_int_equal(st.claim_id, 0);
	assert_int_equal(st.deliveries, 0);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	pending_are(t->s, "c");
}

static void test_bad_args(void **state)
{
	tfx *t = *state;
	int64_t cid;
	sfs_list l;
	sfs_store *ro;

	IS(SFS_INVALID, sfs_claim(t->s, Q, 0, 0, &cid, &l));
	IS(SFS_INVALID, sfs_claim(t->s, Q, 1, -1, &cid, &l));
	IS(SFS_INVALID, sfs_claim(t->s, Q, 1, 0, NULL, &l));
	IS(SFS_INVALID, sfs_claim(t->s, SFS_NONE, 1, 0, &cid, &l));
	IS(SFS_INVALID, sfs_claim(NULL, Q, 1, 0, &cid, &l));
	IS(SFS_INVALID, sfs_claim_heartbeat(t->s, 1, -5, NULL));
	IS(SFS_INVALID, sfs_claim_settle(t->s, 1, NULL, NULL, 1));
	IS(SFS_INVALID, sfs_queue_policy_set(t->s, Q, NULL));
	IS(SFS_INVALID, sfs_item_scan(t->s, Q, SFS_ITEM_INFLIGHT, -1, 0, 0, NULL));
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &ro));
	IS(SFS_READONLY, sfs_claim(ro, Q, 1, 0, &cid, &l));
	IS(SFS_READONLY, sfs_claim_end(ro, 1, SFS_OUTCOME_DONE));
	OK(sfs_item_scan(ro, Q, SFS_ITEM_INFLIGHT, -1, 0, 0, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	sfs_store_close(ro);
}

static void kv_is(sfs_store *s, const char *key, const char *want)
{
	sfs_buf b;

	if (!want) {
		IS(SFS_NOTFOUND, sfs_kv_get(s, S("sc"), S("ns"), S(key), &b));
		return;
	}
	OK(sfs_kv_get(s, S("sc"), S("ns"), S(key), &b));
	tfx_buf(&b, want);
	sfs_buf_free(&b);
}

/* A namespace drain under a claim (issue 10 item 6): the namespace is
 * taken in one transaction, read by id in pages, settled per entry;
 * what is not done goes back, except a key written again meanwhile; a
 * lease that runs out gives everything back. */
static void test_kv_claim(void **state)
{
	tfx *t = *state;
	sfs_outcome done = SFS_OUTCOME_DONE, retry = SFS_OUTCOME_RETRY;
	int64_t cid = 0, id0;
	uint64_t n = 0;
	sfs_gc_stats g;
	sfs_list l;

	IS(SFS_NOTFOUND, sfs_kv_claim(t->s, S("sc"), S("ns"), 0, &cid, &n));
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k2"), S("two")));
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k1"), S("one")));
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k3"), S("three")));
	OK(sfs_kv_put(t->s, S("sc"), S("other"), S("k"), S("stays")));
	OK(sfs_kv_claim(t->s, S("sc"), S("ns"), 0, &cid, &n));
	assert_int_equal(n, 3);
	kv_is(t->s, "k1", NULL);                   /* taken: gone for all */
	OK(sfs_kv_scan(t->s, S("sc"), S("ns"), NULL, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	OK(sfs_kv_scan(t->s, S("sc"), S("other"), NULL, &l));
	assert_int_equal(l.n, 1);
	sfs_list_free(&l);
	/* pages, in key order */
	OK(sfs_claim_items(t->s, cid, -1, 2, 0, &l));
	values_are(&l, "one two");
	assert_int_equal(l.items[0].key.len, 2);
	assert_memory_equal(l.items[0].key.ptr, "k1", 2);
	assert_int_equal(l.items[0].st.mtime_ns, 1000 * SEC);
	id0 = l.items[0].id;
	{
		sfs_list rest;
		OK(sfs_claim_items(t->s, cid, l.items[1].id, 2, 1, &rest));
		assert_int_equal(rest.n, 1);
		assert_null(rest.items[0].value.ptr);
		assert_int_equal(rest.items[0].st.size, 5);
		sfs_list_free(&rest);
	}
	sfs_list_free(&l);
	OK(sfs_claim_items(t->s, cid, id0, 0, 0, &l));
	values_are(&l, "two three");
	sfs_list_free(&l);
	/* k1 delivered; k2 written again meanwhile; the rest back */
	IS(SFS_INVALID, sfs_claim_settle(t->s, cid, &id0, &retry, 1));
	OK(sfs_claim_settle(t->s, cid, &id0, &done, 1));
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k2"), S("new")));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	kv_is(t->s, "k1", NULL);
	kv_is(t->s, "k2", "new");
	kv_is(t->s, "k3", "three");
	IS(SFS_CLAIMLOST, sfs_claim_items(t->s, cid, -1, 0, 0, &l));

	/* A lease that runs out gives everything back, times kept; reading
	 * after it is a lost claim even before recovery ran. */
	OK(sfs_kv_claim(t->s, S("sc"), S("ns"), 1000, &cid, &n));
	assert_int_equal(n, 2);
	tfx_now += 1 * SEC;
	IS(SFS_CLAIMLOST, sfs_claim_items(t->s, cid, -1, 0, 0, &l));
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 2);
	kv_is(t->s, "k2", "new");
	kv_is(t->s, "k3", "three");
	OK(sfs_kv_scan(t->s, S("sc"), S("ns"), NULL, &l));
	assert_int_equal(l.n, 2);
	assert_int_equal(l.items[1].st.mtime_ns, 1000 * SEC);
	sfs_list_free(&l);

	/* An export while a drain holds the entries still has them. */
	OK(sfs_kv_claim(t->s, S("sc"), S("ns"), 0, &cid, &n));
	{
		tfx_dump d = { 0 };
		OK(sfs_export(t->s, tfx_dump_row, &d, NULL, NULL));
		assert_int_equal(d.fam_rows[SFS_FAM_KV], 3);
		assert_int_equal(d.fam_rows[SFS_FAM_CLAIM], 0);
		tfx_dump_free(&d);
	}
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	kv_is(t->s, "k3", NULL);
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
}

/* Our own clear reaches items in flight (every backend): the clear
 * counts what was pending; what its claims held never comes back, by a
 * nack, a retry, a reject or the lease's end, while the holder may still
 * ack; a claim made after the clear is not cleared. A drained namespace
 * renamed while the drain holds its entries gets them back at its new
 * name. */
static void test_clear_in_flight(void **state)
{
	tfx *t = *state;
	sfs_outcome retry = SFS_OUTCOME_RETRY, rej = SFS_OUTCOME_REJECT;
	int64_t cid = 0, cid2 = 0, cid3 = 0;
	uint64_t n = 9;
	sfs_gc_stats g;
	sfs_list l;

	push(t->s, "a b c d");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));           /* a */
	OK(sfs_claim(t->s, Q, 2, 1000, &cid2, &l));          /* b c */
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 1);                              /* d */
	inflight_are(t->s, "a b c");
	push(t->s, "e");
	OK(sfs_claim(t->s, Q, 1, 0, &cid3, NULL));          /* e */
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	OK(sfs_claim_settle(t->s, cid2, &l.items[0].id, &retry, 1));
	OK(sfs_claim_settle(t->s, cid2, &l.items[1].id, &rej, 1));
	sfs_list_free(&l);
	pending_are(t->s, "");
	dead_are(t->s, "");
	OK(sfs_claim_end(t->s, cid3, SFS_OUTCOME_NACK));                      /* not cleared */
	pending_are(t->s, "e");
	OK(sfs_claim(t->s, Q, 1, 1000, &cid, NULL));         /* e */
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 0);
	tfx_now += 2 * SEC;
	OK(sfs_queue_gc(t->s, SFS_NONE, &g));
	assert_int_equal(g.returned, 0);
	assert_int_equal(g.claims, 1);
	pending_are(t->s, "");
	inflight_are(t->s, "");
	push(t->s, "f");
	OK(sfs_claim(t->s, Q, 1, 0, &cid, NULL));
	OK(sfs_item_clear(t->s, Q, SFS_ITEM_PENDING, &n));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));                        /* may finish */
	assert_int_equal(qlen(t->s), 0);

	/* a drained namespace renamed: its entries come back at the new
	 * name (in an encrypted store, sealed for it) */
	OK(sfs_dir_create(t->s, SFS_FAM_KV, S("sc"), S("ns")));
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k"), S("v")));
	OK(sfs_kv_claim(t->s, S("sc"), S("ns"), 0, &cid, &n));
	OK(sfs_dir_rename(t->s, SFS_FAM_KV, S("sc"), S("ns"), S("sc"),
	                  S("ns2"), 0));
	OK(sfs_claim_items(t->s, cid, -1, 0, 0, &l));
	values_are(&l, "v");
	sfs_list_free(&l);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	{
		sfs_buf b;

		OK(sfs_kv_get(t->s, S("sc"), S("ns2"), S("k"), &b));
		tfx_buf(&b, "v");
		sfs_buf_free(&b);
	}
}

/* --- export, import, restore ---------------------------------------------- */

/* A store with every claim table in use. */
static void fill_claims(sfs_store *s, int64_t *cid)
{
	sfs_queue_policy p = { 60000, 5 };
	int64_t first = push(s, "a b c d"), c2, c = first + 2;
	sfs_outcome rej = SFS_OUTCOME_REJECT;

	OK(sfs_queue_policy_set(s, Q, &p));
	OK(sfs_claim(s, Q, 1, 1000, &c2, NULL));   /* a */
	OK(sfs_claim_end(s, c2, SFS_OUTCOME_NACK));                  /* a: pending, 1 delivery */
	OK(sfs_claim(s, Q, 2, 600000, cid, NULL));  /* a, b in flight */
	OK(sfs_claim_item(s, Q, first + 2, 0, &c2)); /* c */
	OK(sfs_claim_settle(s, c2, &c, &rej, 1));
	push(s, "e");
}

static void test_export_import_claims(void **state)
{
	tfx *t = *state;
	tfx_dump d1 = { 0 }, d2 = { 0 }, d3 = { 0 };
	char path[400];
	sfs_store *s2;
	int64_t cid = 0, next = 0, id = 0;
	sfs_slice f = S("f");
	sfs_list l;

	fill_claims(t->s, &cid);
	OK(sfs_export(t->s, tfx_dump_row, &d1, NULL, NULL));
	assert_int_equal(d1.fam_rows[SFS_FAM_CLAIM], 1);
	assert_int_equal(d1.fam_rows[SFS_FAM_INFLIGHT], 2);
	assert_int_equal(d1.fam_rows[SFS_FAM_DEAD], 1);
	assert_int_equal(d1.fam_rows[SFS_FAM_POLICY], 1);
	assert_int_equal(d1.fam_rows[SFS_FAM_QUEUE], 2);
	snprintf(path, sizeof(path), "%s/copy.db", t->dir);
	OK(tfx_open(path, SFS_OPEN_CREATE, &s2));
	OK(tfx_copy(t->s, s2));
	OK(sfs_export(s2, tfx_dump_row, &d2, NULL, NULL));
	assert_int_equal(d1.len, d2.len);
	assert_memory_equal(d1.p, d2.p, d1.len);
	OK(tfx_copy(t->s, s2)); /* idempotent */
	OK(sfs_export(s2, tfx_dump_row, &d3, NULL, NULL));
	assert_int_equal(d1.len, d3.len);
	assert_memory_equal(d1.p, d3.p, d1.len);
	/* the copy works: the claim is held there, ids are not reissued */
	OK(sfs_claim_heartbeat(s2, cid, 0, NULL));
	OK(sfs_claim(s2, Q, 1, 0, &next, &l));
	assert_true(next > cid);
	values_are(&l, "d");
	sfs_list_free(&l);
	OK(sfs_queue_push(s2, Q, &f, 1, &id));
	OK(sfs_item_scan(s2, Q, SFS_ITEM_DEAD, -1, 0, 1, &l));
	assert_true(id > l.items[0].id);
	sfs_list_free(&l);
	OK(sfs_claim_end(s2, cid, SFS_OUTCOME_DONE));
	/* an item id that is in flight here cannot be imported as pending */
	{
		tfx_rows one = { 0 };
		sfs_row r;

		memset(&r, 0, sizeof(r));
		r.family = SFS_FAM_QUEUE;
		r.scope = Q;
		r.value = S("zz");
		OK(sfs_item_scan(t->s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l));
		r.id = l.items[0].id;
		sfs_list_free(&l);
		tfx_rows_add(&r, &one);
		IS(SFS_EXISTS, sfs_import(t->s, tfx_rows_next, &one));
		tfx_rows_free(&one);
		/* an in-flight row whose claim is missing */
		r.family = SFS_FAM_INFLIGHT;
		r.id = 999;
		r.claim_id = 777;
		r.deliveries = 1;
		tfx_rows_add(&r, &one);
		IS(SFS_INVALID, sfs_import(t->s, tfx_rows_next, &one));
		tfx_rows_free(&one);
	}
	sfs_store_close(s2);
	tfx_dump_free(&d1);
	tfx_dump_free(&d2);
	tfx_dump_free(&d3);
}

/* Restore brings claims back as they were, and never reissues a claim id
 * issued after the checkpoint. */
static void test_restore_claims(void **state)
{
	tfx *t = *state;
	int64_t cid = 0, later = 0, again = 0;
	char path[400];

	fill_claims(t->s, &cid);
	snprintf(path, sizeof(path), "%s/ckpt.db", t->dir);
	OK(sfs_checkpoint(t->s, path, NULL, NULL));
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	OK(sfs_claim(t->s, Q, 1, 0, &later, NULL));
	OK(sfs_restore(t->s, path, NULL, NULL));
	inflight_are(t->s, "a b");
	dead_are(t->s, "c");
	IS(SFS_CLAIMLOST, sfs_claim_end(t->s, later, SFS_OUTCOME_DONE));
	OK(sfs_claim(t->s, Q, 1, 0, &again, NULL));
	assert_true(again > later);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
}

#define T(f) \
	cmocka_unit_test_setup_teardown(f, tfx_setup_clock, tfx_teardown_clock)

/* One row imported on its own: the import's status. */
static int import_one(sfs_store *s, const sfs_row *r)
{
	tfx_rows one = { 0 };
	int st;

	tfx_rows_add(r, &one);
	st = sfs_import(s, tfx_rows_next, &one);
	tfx_rows_free(&one);
	return st;
}

/* An import refuses log, item and claim ids past SFS_ID_MAX (up to
 * INT64_MAX, where an imported row used to leave every later push and
 * append failing with "no space left"), and imports nothing. */
static void test_ids_imported(void **state)
{
	tfx *t = *state;
	uint64_t n = 0;
	sfs_row r;

	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_QUEUE;
	r.scope = Q;
	r.value = S("last");
	r.id = SFS_ID_MAX + 1;
	IS(SFS_INVALID, import_one(t->s, &r));
	assert_non_null(strstr(sfs_errdetail(), "past the largest id"));
	r.id = INT64_MAX;
	IS(SFS_INVALID, import_one(t->s, &r));
	r.family = SFS_FAM_LOG;
	r.scope = S("sc");
	r.ns = S("ns");
	r.key = S("k");
	IS(SFS_INVALID, import_one(t->s, &r));
	r.family = SFS_FAM_CLAIM;
	r.scope = Q;
	r.ns = SFS_NONE;
	r.key = SFS_NONE;
	IS(SFS_INVALID, import_one(t->s, &r));
	r.id = 5;
	r.lease_until_ns = INT64_MAX / 2;
	r.family = SFS_FAM_INFLIGHT;
	r.claim_id = SFS_ID_MAX + 1;
	IS(SFS_INVALID, import_one(t->s, &r));
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 0);
}

/* Delivery counts stop at SFS_DELIVERIES_MAX on every backend: an import
 * refuses a larger one (at INT64_MAX the next claim's count was a REAL in
 * SQLite, an overflow on PostgreSQL) and imports nothing, and a claim of
 * an item already at the bound leaves its count there. */
static void test_deliveries_bound(void **state)
{
	static const sfs_family fams[] = { SFS_FAM_QUEUE, SFS_FAM_DEAD };
	tfx *t = *state;
	int64_t cid = 0;
	uint64_t n = 0;
	sfs_stat st;
	sfs_list l;
	sfs_row r;

	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.family = fams[i];
		r.scope = Q;
		r.value = S("many");
		r.reason = S("rejected");
		r.id = 7;
		r.deliveries = SFS_DELIVERIES_MAX + 1;
		IS(SFS_INVALID, import_one(t->s, &r));
		assert_non_null(strstr(sfs_errdetail(), "delivery count"));
		r.deliveries = INT64_MAX;
		IS(SFS_INVALID, import_one(t->s, &r));
	}
	OK(sfs_item_count(t->s, Q, SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 0);
	OK(sfs_item_count(t->s, Q, SFS_ITEM_DEAD, &n));
	assert_int_equal(n, 0);

	/* One below the bound: the claim takes it to the bound, and there
	 * it stays, claim after claim. */
	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_QUEUE;
	r.scope = Q;
	r.value = S("many");
	r.id = 7;
	r.deliveries = SFS_DELIVERIES_MAX - 1;
	OK(import_one(t->s, &r));
	for (int round = 0; round < 3; round++) {
		OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
		values_are(&l, "many");
		sfs_list_free(&l);
		OK(sfs_item_stat(t->s, Q, SFS_ITEM_INFLIGHT, 7, &st));
		assert_true(st.deliveries == SFS_DELIVERIES_MAX);
		OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	}
	/* An in-flight row past the bound is refused like the others. */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	sfs_list_free(&l);
	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_INFLIGHT;
	r.scope = Q;
	r.value = S("other");
	r.id = 9;
	r.claim_id = cid;
	r.deliveries = SFS_DELIVERIES_MAX + 1;
	IS(SFS_INVALID, import_one(t->s, &r));
	inflight_are(t->s, "many");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
}

/* A store issues no id past SFS_ID_MAX: every call that would (append,
 * push, retry, requeue) is SFS_OVERFLOW and changes nothing, while the
 * items at the bound stay visible and claimable (a claim of the last item
 * adds the queue's two markers past it, a push then moves them: the room
 * above the bound). On PostgreSQL the import raises the sequences to the
 * bound, their MAXVALUE. */
static void test_ids_bounded(void **state)
{
	tfx *t = *state;
	sfs_slice it = S("x");
	int64_t id = 0, cid = 0, ids[1];
	sfs_outcome out[1] = { SFS_OUTCOME_RETRY };
	sfs_list l;
	sfs_row r;

	/* A log at the bound: the next append is refused, nothing added. */
	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_LOG;
	r.scope = S("sc");
	r.ns = S("ns");
	r.key = S("k");
	r.value = S("e");
	r.id = SFS_ID_MAX;
	OK(import_one(t->s, &r));
	IS(SFS_OVERFLOW, sfs_log_append(t->s, S("sc"), S("ns"), S("k"), it,
	                                &id));
	assert_non_null(strstr(sfs_errdetail(), "past the largest id"));
	OK(sfs_log_scan(t->s, S("sc"), S("ns"), S("k"), -1, 0, 1, &l));
	assert_int_equal(l.n, 1);
	assert_true(l.items[0].id == SFS_ID_MAX);
	sfs_list_free(&l);

	/* A queue one below the bound: the push that takes the bound works
	 * and is seen, the next is refused. */
	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_QUEUE;
	r.scope = Q;
	r.value = S("first");
	r.id = SFS_ID_MAX - 1;
	OK(import_one(t->s, &r));
	OK(sfs_queue_push(t->s, Q, &it, 1, &id));
	assert_true(id == SFS_ID_MAX);
	IS(SFS_OVERFLOW, sfs_queue_push(t->s, Q, &it, 1, &id));
	pending_are(t->s, "first x");
	/* Claiming the last item puts the markers past the bound; a push
	 * with them there is refused as cleanly. */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	values_are(&l, "first");
	sfs_list_free(&l);
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	values_are(&l, "x");
	ids[0] = l.items[0].id;
	sfs_list_free(&l);
	IS(SFS_OVERFLOW, sfs_queue_push(t->s, Q, &it, 1, &id));
	inflight_are(t->s, "first x");
	pending_are(t->s, "");
	/* A retry needs a new id at the tail: refused, the item stays in
	 * flight under its claim. A nack keeps its id. */
	IS(SFS_OVERFLOW, sfs_claim_settle(t->s, cid, ids, out, 1));
	inflight_are(t->s, "first x");
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_NACK));
	pending_are(t->s, "x");
	/* A dead letter cannot be requeued: no id left for it. */
	OK(sfs_claim(t->s, Q, 1, 0, &cid, &l));
	sfs_list_free(&l);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_REJECT));
	IS(SFS_OVERFLOW, sfs_item_requeue(t->s, Q, SFS_ID_MAX, &id));
	dead_are(t->s, "x");

}

/* Claim ids stop at SFS_ID_MAX too: with a claim at the bound, a claim
 * of a queue or of a namespace's entries is SFS_OVERFLOW and takes
 * nothing. */
static void test_claim_ids_bounded(void **state)
{
	tfx *t = *state;
	int64_t cid = 0;
	uint64_t n = 0;
	sfs_stat st;
	sfs_list l;
	sfs_row r;

	push(t->s, "a");
	OK(sfs_kv_put(t->s, S("sc"), S("ns"), S("k"), S("v")));
	memset(&r, 0, sizeof(r));
	r.family = SFS_FAM_CLAIM;
	r.scope = S("other");
	r.id = SFS_ID_MAX;
	r.lease_until_ns = INT64_MAX / 2;
	OK(import_one(t->s, &r));
	IS(SFS_OVERFLOW, sfs_claim(t->s, Q, 1, 0, &cid, &l));
	assert_non_null(strstr(sfs_errdetail(), "past the largest id"));
	pending_are(t->s, "a");
	IS(SFS_OVERFLOW, sfs_kv_claim(t->s, S("sc"), S("ns"), 0, &cid, &n));
	OK(sfs_kv_stat(t->s, S("sc"), S("ns"), S("k"), &st));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_claim_ack),
		T(test_claim_empty),
		T(test_cutoff_without_gc),
		T(test_cutoff_after_gc),
		T(test_heartbeat_keeps_claim),
		T(test_heartbeat_after_return),
		T(test_ack_of_returned_claim),
		T(test_nack_keeps_place),
		T(test_settle_all_or_nothing),
		T(test_claim_item_race),
		T(test_inflight_item_calls),
		T(test_dead_letters),
		T(test_delivery_limit),
		T(test_ttl),
		T(test_recovery_at_open),
		T(test_open_norecover),
		T(test_queue_dirs),
		T(test_clears),
		T(test_claim_end_outcomes),
		T(test_item_states),
		T(test_kv_claim),
		T(test_clear_in_flight),
		T(test_bad_args),
		T(test_export_import_claims),
		T(test_restore_claims),
		T(test_ids_imported),
		T(test_deliveries_bound),
		T(test_ids_bounded),
		T(test_claim_ids_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
