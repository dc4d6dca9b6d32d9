/*
 * test_stats.c - sfs_store_stats: the figures of statectl top and metrics.
 *
 * Per queue and per scope from one snapshot, their sums equal to
 * sfs_store_info's counts; the push and take counts written at most once a
 * second per connection, at close, and by a recovery pass; dropped with a
 * rollback of their transaction, kept across a restore; idle counts
 * forgotten after a day; a version-3 store migrated. The clock is the
 * engine's injectable one, so "a second later" is exact.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "fixture.h"

#define SEC 1000000000LL

/* The figures of queue q in st, or NULL. */
static const sfs_queue_stats *queue_of(const sfs_stats *st, const char *q)
{
	for (size_t i = 0; i < st->nqueues; i++)
		if (st->queues[i].queue.len == strlen(q) &&
		    !memcmp(st->queues[i].queue.ptr, q, strlen(q)))
			return &st->queues[i];
	return NULL;
}

static const sfs_scope_stats *scope_of(const sfs_stats *st, const char *s)
{
	for (size_t i = 0; i < st->nscopes; i++)
		if (st->scopes[i].scope.len == strlen(s) &&
		    !memcmp(st->scopes[i].scope.ptr, s, strlen(s)))
			return &st->scopes[i];
	return NULL;
}

/* What another process (a read-only handle) sees of q's counts. */
static void counts_are(const char *path, const char *q, uint64_t pushed,
                       uint64_t taken)
{
	const sfs_queue_stats *qs;
	sfs_stats *st;
	sfs_store *r;

	OK(tfx_open(path, SFS_OPEN_READONLY, &r));
	OK(sfs_store_stats(r, &st));
	qs = queue_of(st, q);
	if (!qs)
		fail_msg("no figures for queue %s", q);
	if (qs->pushed != pushed || qs->taken != taken)
		fail_msg("queue %s: pushed %llu taken %llu, want %llu %llu", q,
		         (unsigned long long)qs->pushed,
		         (unsigned long long)qs->taken,
		         (unsigned long long)pushed, (unsigned long long)taken);
	sfs_stats_free(st);
	sfs_store_close(r);
}

static void push(sfs_store *s, const char *q, int n)
{
	sfs_slice items[16];

	for (int i = 0; i < n; i++)
		items[i] = S("item");
	OK(sfs_queue_push(s, S(q), items, (size_t)n, NULL));
}

static void pop(sfs_store *s, const char *q)
{
	sfs_list l;

	OK(sfs_queue_pop(s, S(q), 1, &l));
	sfs_list_free(&l);
}

/* Every figure of a small store, and the sums against sfs_store_info. */
static void test_figures(void **state)
{
	tfx *t = *state;
	const sfs_queue_stats *q;
	const sfs_scope_stats *c;
	sfs_list items;
	sfs_stats *st;
	sfs_info in;
	int64_t cid;
	sfs_outcome rej = SFS_OUTCOME_REJECT;

	OK(sfs_kv_put(t->s, S("a"), S("n1"), S("k1"), S("v")));
	OK(sfs_kv_put(t->s, S("a"), S("n2"), S("k2"), S("v")));
	OK(sfs_counter_add(t->s, S("a"), S("c"), S("k"), 1, NULL));
	OK(sfs_log_append(t->s, S("b"), S("log"), S("k"), S("e"), NULL));
	OK(sfs_log_append(t->s, S("b"), S("log"), S("k"), S("e"), NULL));
	push(t->s, "jobs", 6);
	pop(t->s, "jobs");
	tfx_now += SEC;
	OK(sfs_claim(t->s, S("jobs"), 2, 60000, &cid, &items));
	OK(sfs_claim_settle(t->s, cid, &items.items[0].id, &rej, 1));
	sfs_list_free(&items);
	/* a drain's claim on a namespace is no queue, and its entry is the
	 * scope's until delivered (export shows it as an entry): counted
	 * among the scope's keys and info's kv rows */
	OK(sfs_kv_put(t->s, S("a"), S("n3"), S("k3"), S("v")));
	OK(sfs_kv_claim(t->s, S("a"), S("n3"), 60000, &cid, NULL));
	tfx_now += SEC;

	OK(sfs_store_stats(t->s, &st));
	OK(sfs_store_info(t->s, &in));
	assert_string_equal(st->info.path, in.path);
	assert_int_equal(st->now_ns, tfx_now);
	assert_int_equal(st->nqueues, 1);
	q = queue_of(st, "jobs");
	assert_non_null(q);
	assert_int_equal(q->pending, 3);
	assert_int_equal(q->inflight, 1);
	assert_int_equal(q->dead, 1);
	assert_int_equal(q->claims, 1);
	assert_int_equal(q->expired, 0);
	assert_int_equal(q->oldest_claim_ns, 1001 * SEC);
	assert_int_equal(q->head_ns, 1000 * SEC);
	/* the push (written at its commit: nothing was written before), then
	 * the pop's take and the claim's two at the claim, a second later */
	assert_int_equal(q->pushed, 6);
	assert_int_equal(q->taken, 3);
	assert_int_equal(st->nscopes, 2);
	c = scope_of(st, "a");
	assert_non_null(c);
	assert_int_equal(c->kv, 3);
	assert_int_equal(c->counter, 1);
	assert_int_equal(c->log, 0);
	c = scope_of(st, "b");
	assert_int_equal(c->log, 2);
	/* the sums are info's */
	assert_int_equal(st->info.kv_rows, in.kv_rows);
	assert_int_equal(in.kv_rows, 3);
	assert_int_equal(in.log_rows, 2);
	assert_int_equal(in.counter_rows, 1);
	assert_int_equal(in.queue_rows, q->pending);
	assert_int_equal(in.claimed_rows, q->inflight);
	assert_int_equal(in.dead_rows, q->dead);
	assert_string_equal(st->info.backend, in.backend);
	assert_int_equal(st->info.nfacts, in.nfacts);
	for (size_t i = 0; i < in.nfacts; i++) {
		assert_string_equal(st->info.facts[i].name, in.facts[i].name);
		if (strcmp(in.facts[i].name, "page_count") == 0)
			assert_int_equal(st->info.facts[i].value,
			                 in.facts[i].value);
	}
	sfs_stats_free(st);

	/* the lease runs out: expired, not yet recovered (read-only) */
	tfx_now += 120 * SEC;
	{
		sfs_store *r;

		OK(tfx_open(t->path, SFS_OPEN_READONLY, &r));
		OK(sfs_store_stats(r, &st));
		q = queue_of(st, "jobs");
		assert_int_equal(q->claims, 1);
		assert_int_equal(q->expired, 1);
		sfs_stats_free(st);
		sfs_store_close(r);
	}
	sfs_stats_free(NULL);
}

/* At most one write of the counts per second per connection, at close,
 * and by a recovery pass; never a count of a rolled back transaction. */
static void test_counts_batched(void **state)
{
	tfx *t = *state;
	sfs_store *w;
	sfs_list l;

	OK(tfx_open(t->path, 0, &w));
	push(w, "q", 1);                 /* written at once: none before */
	counts_are(t->path, "q", 1, 0);
	push(w, "q", 2);                 /* the same second: kept */
	pop(w, "q");
	counts_are(t->path, "q", 1, 0);
	tfx_now += SEC;
	pop(w, "q");                     /* a second later: all of it */
	counts_are(t->path, "q", 3, 2);
	pop(w, "q");
	IS(SFS_NOTFOUND, sfs_queue_pop(w, S("q"), 1, &l)); /* counts nothing */
	counts_are(t->path, "q", 3, 2);
	tfx_now += SEC;
	OK(sfs_queue_gc(w, SFS_NONE, NULL)); /* a pass with nothing to do */
	counts_are(t->path, "q", 3, 3);
	push(w, "q", 4);                 /* the same second: kept */
	counts_are(t->path, "q", 3, 3);
	OK(sfs_store_flush_counts(w));   /* written, whatever the second */
	counts_are(t->path, "q", 7, 3);
	{
		uint64_t v0, v1;

		/* nothing held: no transaction, no commit */
		OK(sfs_store_version(w, &v0));
		OK(sfs_store_flush_counts(w));
		OK(sfs_store_version(w, &v1));
		assert_int_equal(v0, v1);
	}
	push(w, "q", 4);
	sfs_store_close(w);              /* close writes the rest */
	counts_are(t->path, "q", 11, 3);
	/* drains and claims are takes */
	OK(tfx_open(t->path, 0, &w));
	{
		int64_t cid;

		OK(sfs_queue_pop(w, S("q"), LONG_MAX, &l));
		assert_int_equal(l.n, 8);
		sfs_list_free(&l);
		push(w, "q", 3);
		OK(sfs_claim(w, S("q"), 2, 60000, &cid, NULL));
	}
	sfs_store_close(w);
	counts_are(t->path, "q", 14, 13);
	/* the clock stepped back an hour: the next second's counts are
	 * written as ever (they waited for the hour) */
	OK(tfx_open(t->path, 0, &w));
	push(w, "q", 1);                 /* written at once: none before */
	counts_are(t->path, "q", 15, 13);
	tfx_now -= 3600 * SEC;
	push(w, "q", 1);
	counts_are(t->path, "q", 16, 13);
	sfs_store_close(w);
	tfx_now += 3600 * SEC;
}

/* A restore keeps the live counts (they only grow); counts of a queue
 * empty and idle for a day are forgotten. */
static void test_counts_restore_and_prune(void **state)
{
	tfx *t = *state;
	char ck[400];
	sfs_stats *st;

	snprintf(ck, sizeof(ck), "%s/ck.db", t->dir);
	push(t->s, "old", 2);
	pop(t->s, "old");
	pop(t->s, "old");
	OK(sfs_checkpoint(t->s, ck, NULL, NULL));
	tfx_now += SEC;
	push(t->s, "live", 1);
	OK(sfs_restore(t->s, ck, NULL, NULL));
	tfx_reopen(t);
	counts_are(t->path, "old", 2, 2);
	counts_are(t->path, "live", 1, 0);

	tfx_now += 2 * 86400 * SEC;
	push(t->s, "live", 1);           /* the next write prunes */
	OK(sfs_store_stats(t->s, &st));
	assert_null(queue_of(st, "old"));
	assert_non_null(queue_of(st, "live"));
	assert_int_equal(queue_of(st, "live")->pending, 1); /* restored */
	sfs_stats_free(st);
}

/* A version-3 store (before the counts) is migrated read-write, and read
 * as it is read-only. */
static void test_v3_store(void **state)
{
	tfx *t = *state;
	sfs_store *r;
	sfs_stats *st;
	sfs_info in;
	sqlite3 *db;

	tfx_sqlite_only("SQLite schema version 3");
	if (tfx_encrypted())
		return; /* the store is edited with plain SQLite */
	push(t->s, "q", 1);
	sfs_store_close(t->s);
	t->s = NULL;
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, TFX_SQL_TO_V3, NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &r));
	OK(sfs_store_stats(r, &st));
	assert_int_equal(st->info.schema_version, 3);
	assert_int_equal(queue_of(st, "q")->pending, 1);
	assert_int_equal(queue_of(st, "q")->pushed, 0);
	sfs_stats_free(st);
	sfs_store_close(r);
	OK(tfx_open(t->path, 0, &t->s));
	OK(sfs_store_info(t->s, &in));
	assert_int_equal(in.schema_version, 5);
	pop(t->s, "q");
	sfs_store_close(t->s);
	t->s = NULL;
	counts_are(t->path, "q", 0, 1);
	OK(tfx_open(t->path, 0, &t->s));
}

#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup_clock, \
                                             tfx_teardown_clock)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_figures),
		T(test_counts_batched),
		T(test_counts_restore_and_prune),
		T(test_v3_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
