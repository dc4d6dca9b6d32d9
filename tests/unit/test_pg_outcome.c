/*
 * test_pg_outcome.c - the PostgreSQL backend's commits when the server
 * fails them: transient failures (a backend ended while it waited for a
 * lock) retried, a commit in doubt reported as such, dead idle
 * connections replaced before the first statement of a call, and a
 * deadlock run again. Runs in modes postgres and postgres-plain
 * (fixture.h).
 */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "fixture.h"
#include "pg/pg_i.h"
#include "pgfx.h"

/* --- transient failures -------------------------------------------------------- */

typedef struct adder {
	sfs_store *s;
	int st;
	char detail[512];
} adder;

static void *add_one(void *arg)
{
	adder *a = arg;

	a->st = sfs_counter_add(a->s, S("s"), S("n"), S("c"), 1, NULL);
	snprintf(a->detail, sizeof(a->detail), "%s", sfs_errdetail());
	return NULL;
}

static void *put_one(void *arg)
{
	adder *a = arg;

	a->st = sfs_kv_put(a->s, S("s"), S("n"), S("k"), S("after"));
	return NULL;
}

static void *push_one(void *arg)
{
	adder *a = arg;
	sfs_slice item = S("pushed");

	a->st = sfs_queue_push(a->s, S("q"), &item, 1, NULL);
	snprintf(a->detail, sizeof(a->detail), "%s", sfs_errdetail());
	return NULL;
}

static void *claim_one(void *arg)
{
	adder *a = arg;
	sfs_list l = { NULL, 0 };
	int64_t cid;

	a->st = sfs_claim(a->s, S("q"), 1, 0, &cid, &l);
	snprintf(a->detail, sizeof(a->detail), "%.*s", l.n ?
	         (int)l.items[0].value.len : 0, l.n ?
	         (const char *)l.items[0].value.ptr : "");
	if (a->st == SFS_OK)
		a->st = sfs_claim_end(a->s, cid, SFS_OUTCOME_DONE);
	sfs_list_free(&l);
	return NULL;
}

/* Runs fn on s in a thread while c holds what lock_sql takes, kills the
 * thread's backend once it waits for that lock, then lets the lock go:
 * a call that is run again on a new connection gets it then. */
static void run_killed(PGconn *c, const char *app, const char *lock_sql,
                       void *(*fn)(void *), sfs_store *s, adder *a)
{
	pthread_t th;

	tfx_pg_do(c, lock_sql);
	memset(a, 0, sizeof(*a));
	a->s = s;
	assert_int_equal(pthread_create(&th, NULL, fn, a), 0);
	until_waiting(c, app);
	kill_app(c, app, 1);
	usleep(100000);
	tfx_pg_do(c, "COMMIT");
	pthread_join(th, NULL);
}

static void test_transient_failures(void **state)
{
	tfx *t = *state;
	char app[40];
	PGconn *c = tfx_pg_conn(t->path);
	sfs_store *s;
	adder a;
	sfs_buf v;
	int64_t n;

	snprintf(app, sizeof(app), "sfs_test_%ld", (long)getpid());
	s = open_named(t, app);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("before")));
	OK(sfs_counter_set(s, S("s"), S("n"), S("c"), 10));
	/* 1. the server ends idle connections (a restart, an operator):
	 *    the next calls reconnect, nothing fails */
	kill_app(c, app, 0);
	usleep(100000);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "before");
	sfs_buf_free(&v);
	OK(sfs_counter_add(s, S("s"), S("n"), S("c"), 1, &n));
	assert_int_equal(n, 11);
	/* 2. lost while its committing statement ran: a counter add is not
	 *    idempotent, but the id of its transaction came back before the
	 *    statement ran, and the server says it did not commit: run
	 *    again, added once (it used to fail, "the outcome is unknown") */
	run_killed(c, app, "BEGIN; SELECT 1 FROM function_counter WHERE"
	           " key = 'c' FOR UPDATE", add_one, s, &a);
	OK(a.st);
	OK(sfs_counter_get(s, S("s"), S("n"), S("c"), &n, NULL));
	assert_int_equal(n, 12);
	/* 3. the same for a put, which is idempotent: run again, done */
	run_killed(c, app, "BEGIN; SELECT 1 FROM function_state WHERE"
	           " key = 'k' FOR UPDATE", put_one, s, &a);
	OK(a.st);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "after");
	sfs_buf_free(&v);
	/* 4. the same for a claim of the next items: run again (had the
	 *    lost one committed, its item would come back at its lease's
	 *    end), so a .wait across a server restart gets its item, not EIO */
	{
		sfs_slice items[2] = { S("first"), S("second") };

		OK(sfs_queue_push(s, S("q"), items, 2, NULL));
	}
	run_killed(c, app, "BEGIN; LOCK TABLE statefs_claim IN EXCLUSIVE MODE",
	           claim_one, s, &a);
	OK(a.st);
	assert_string_equal(a.detail, "first");
	{
		uint64_t left, inflight;

		OK(sfs_item_count(s, S("q"), SFS_ITEM_PENDING, &left));
		OK(sfs_item_count(s, S("q"), SFS_ITEM_INFLIGHT, &inflight));
		assert_int_equal(left, 1);
		assert_int_equal(inflight, 0);
	}
	/* 5. a push killed the same way: run again, there once */
	run_killed(c, app, "BEGIN; LOCK TABLE work_queue IN EXCLUSIVE MODE",
	           push_one, s, &a);
	OK(a.st);
	{
		sfs_list l;

		OK(sfs_queue_pop(s, S("q"), LONG_MAX, &l));
		assert_int_equal(l.n, 2);
		tfx_buf(&l.items[0].value, "second");
		tfx_buf(&l.items[1].value, "pushed");
		sfs_list_free(&l);
	}
	sfs_store_close(s);
	PQfinish(c);
}

/* The server ended the pool's idle connections (pg_terminate_backend, as
 * a restart does): the first call of each kind, even one whose first
 * statement commits (a claim, a pop, a counter add, which are not run
 * again when their commit is in doubt), runs on a new connection and
 * succeeds. The killed backend's FATAL, read as a notice on an idle
 * connection, used to pass the pool's check, and the call failed with
 * "the outcome is unknown" for a statement that never reached a server. */
static void test_dead_idle_replaced(void **state)
{
	tfx *t = *state;
	sfs_slice items[4] = { S("a"), S("b"), S("c"), S("d") };
	char app[40];
	PGconn *c = tfx_pg_conn(t->path);
	sfs_store *s;
	sfs_list l;
	int64_t cid, n;

	snprintf(app, sizeof(app), "sfs_dead_%ld", (long)getpid());
	s = open_named(t, app);
	OK(sfs_queue_push(s, S("q"), items, 4, NULL));
	OK(sfs_counter_set(s, S("s"), S("n"), S("c"), 0));
	/* every statement below prepared on the pooled connection once */
	OK(sfs_claim(s, S("q"), 1, 0, &cid, &l));
	sfs_list_free(&l);
	OK(sfs_claim_end(s, cid, SFS_OUTCOME_DONE));
	OK(sfs_queue_pop(s, S("q"), 1, &l));
	sfs_list_free(&l);
	OK(sfs_counter_add(s, S("s"), S("n"), S("c"), 1, NULL));

	kill_app(c, app, 0);
	until_gone(c, app);
	OK(sfs_claim(s, S("q"), 1, 0, &cid, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "c");
	sfs_list_free(&l);
	kill_app(c, app, 0);
	until_gone(c, app);
	OK(sfs_claim_end(s, cid, SFS_OUTCOME_DONE));
	kill_app(c, app, 0);
	until_gone(c, app);
	OK(sfs_queue_pop(s, S("q"), 1, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "d");
	sfs_list_free(&l);
	kill_app(c, app, 0);
	until_gone(c, app);
	OK(sfs_counter_add(s, S("s"), S("n"), S("c"), 1, &n));
	assert_int_equal(n, 2);
	sfs_store_close(s);
	PQfinish(c);
}

/* Two transactions taking the same rows in opposite orders deadlock; the
 * server aborts one, which is run again: both succeed, every time. */
typedef struct swapper {
	sfs_store *s;
	int rev;
	int st;
} swapper;

static void *swap_puts(void *arg)
{
	swapper *w = arg;
	sfs_slice keys[2] = { S("a"), S("b") }, vals[2] = { S("1"), S("2") };
	sfs_slice rk[2] = { S("b"), S("a") };

	for (int i = 0; i < 40 && w->st == SFS_OK; i++)
		w->st = sfs_kv_put_many(w->s, S("T"), S("txn"),
		                        w->rev ? rk : keys, vals, 2, 0);
	return NULL;
}

static void test_deadlock_retried(void **state)
{
	tfx *t = *state;
	swapper w[2] = { { t->s, 0, SFS_OK }, { t->s, 1, SFS_OK } };
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, swap_puts, &w[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		OK(w[i].st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_transient_failures),
		T(test_dead_idle_replaced),
		T(test_deadlock_retried),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
