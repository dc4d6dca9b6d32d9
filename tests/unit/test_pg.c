/*
 * test_pg.c - what only the PostgreSQL backend has: its store names
 * (connection strings, our keywords, passwords never shown), schemas it
 * must not touch or may adopt (someone else's, the VGI SDK's), hosts
 * creating one store at once, the order in which log ids become visible,
 * claims across handles, the server's clock, a pool that lets threads
 * run at once, transient failures retried and a commit in doubt reported
 * as such, and what the seals catch (and the one thing they cannot).
 * Runs in modes postgres and postgres-plain (fixture.h).
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

/* --- names -------------------------------------------------------------------- */

static void test_db_strings(void **state)
{
	char *name;
	int has = -1;

	(void)state;
	assert_true(pgb_is_db("postgresql://h/db"));
	assert_true(pgb_is_db("postgres://u@h:5/db?schema=x"));
	assert_true(pgb_is_db("host=/tmp dbname=x"));
	assert_true(pgb_is_db("  dbname = x"));
	assert_true(pgb_is_db("service=prod"));
	assert_true(pgb_is_db("schema=mine"));
	assert_false(pgb_is_db("/tmp/a=b.db"));
	assert_false(pgb_is_db("a=b.db"));
	assert_false(pgb_is_db("state.db"));
	assert_false(pgb_is_db(":memory:"));
	assert_false(pgb_is_db("hostname"));
	/* the name shown: no password, in either form; our keywords kept */
	OK(sfs_store_name("host=h password=s3cr3t dbname=d schema=sc", &name));
	assert_null(strstr(name, "s3cr3t"));
	assert_non_null(strstr(name, "schema=sc"));
	assert_non_null(strstr(name, "dbname=d"));
	free(name);
	OK(sfs_store_name("postgresql://u:s3cr3t@h/d?schema=sc&pool=3", &name));
	assert_null(strstr(name, "s3cr3t"));
	assert_non_null(strstr(name, "user=u"));
	free(name);
	OK(sfs_store_name("postgresql://h/d", &name));
	assert_non_null(strstr(name, "schema=statefs")); /* the default */
	free(name);
	OK(pgb_db_has_password("host=h password='a b' dbname=d", &has));
	assert_int_equal(has, 1);
	OK(pgb_db_has_password("postgresql://u:pw@h/d", &has));
	assert_int_equal(has, 1);
	OK(pgb_db_has_password("host=h dbname=d", &has));
	assert_int_equal(has, 0);
	/* ours and libpq's mistakes, each named */
	IS(SFS_INVALID, sfs_store_name("host=h schema=", &name));
	IS(SFS_INVALID, sfs_store_name("host=h pool=0", &name));
	IS(SFS_INVALID, sfs_store_name("host=h pool=many", &name));
	IS(SFS_INVALID, sfs_store_name("host=h frobnicate=1", &name));
	assert_non_null(strstr(sfs_errdetail(), "frobnicate"));
	IS(SFS_INVALID, sfs_store_name("postgresql://h/d?frob=1", &name));
	IS(SFS_INVALID, sfs_store_name("host='unterminated", &name));
}

/* A password on the command line (cfg->db) is refused; in STATEFS_DB it
 * is the user's own environment. */
static void test_password_rule(void **state)
{
	sfs_config cfg;
	sfs_store *s;
	char *db = NULL, *pw;
	sfs_key *k = NULL;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_PLAINTEXT;
	if (asprintf(&pw, "%s password=hunter2 schema=nowhere",
	             getenv("STATEFS_TEST_PG")) < 0)
		fail();
	cfg.db = pw;
	IS(SFS_INVALID, sfs_store_open(&cfg, &s, NULL));
	assert_non_null(strstr(sfs_errdetail(), "~/.pgpass"));
	assert_null(strstr(sfs_errdetail(), "hunter2"));
	IS(SFS_INVALID, sfs_config_resolve(&cfg, &db, &k, NULL));
	cfg.db = NULL;
	setenv("STATEFS_DB", pw, 1);
	OK(sfs_config_resolve(&cfg, &db, &k, NULL));
	assert_string_equal(db, pw);
	unsetenv("STATEFS_DB");
	free(db);
	free(pw);
}

/* --- schemas ------------------------------------------------------------------ */

static void test_foreign_schema(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_store *s;
	PGconn *c;

	snprintf(path, sizeof(path), "%s/foreign", t->dir);
	c = tfx_pg_conn(path);
	tfx_pg_do(c, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)");
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_CREATE, &s));
	assert_non_null(strstr(sfs_errdetail(), "not a statefs or VGI"));
	assert_int_equal(tfx_pg_int(c, "SELECT count(*) FROM pg_tables WHERE"
	                 " schemaname = current_schema()"), 1);
	PQfinish(c);
	snprintf(path, sizeof(path), "%s/missing", t->dir);
	IS(SFS_NOTFOUND, tfx_open(path, 0, &s));
	assert_non_null(strstr(sfs_errdetail(), "does not exist"));

	/* The store's schema dropped under an open handle: an I/O failure
	 * that says so (it was SFS_INTERNAL: "internal error" in the
	 * mount's log, statectl's exit 10, "a bug"); a column renamed, as a
	 * newer statefs's migration may, too (it was SFS_INTERNAL) */
	OK(tfx_open(t->path, SFS_OPEN_CREATE, &s));
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	c = tfx_pg_conn(t->path);
	tfx_pg_do(c, "ALTER TABLE statefs_kv_time RENAME COLUMN mtime_ns TO t");
	IS(SFS_IO, sfs_kv_put(s, S("s"), S("n"), S("k"), S("u")));
	assert_non_null(strstr(sfs_errdetail(), "a newer statefs upgraded"));
	tfx_pg_do(c, "DO $$ BEGIN EXECUTE format('DROP SCHEMA %I CASCADE',"
	       " current_schema()); END $$");
	PQfinish(c);
	IS(SFS_IO, sfs_kv_put(s, S("s"), S("n"), S("k"), S("w")));
	assert_non_null(strstr(sfs_errdetail(), "schema was dropped"));
	IS(SFS_IO, sfs_counter_add(s, S("s"), S("n"), S("c"), 1, NULL));
	sfs_store_close(s);
}

/* A worker that speaks the VGI schema created the tables and wrote rows
 * with the SDK's statements; a plaintext open adopts the schema. */
static void test_sdk_schema(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_store *s;
	sfs_buf b;
	sfs_list l;
	int64_t v;
	PGconn *c;

	snprintf(path, sizeof(path), "%s/sdk", t->dir);
	c = tfx_pg_conn(path);
	tfx_pg_do(c, "CREATE TABLE work_queue (id bigserial PRIMARY KEY,"
	       " execution_id bytea NOT NULL, work_item bytea NOT NULL);"
	       "CREATE TABLE function_state (scope_id bytea NOT NULL,"
	       " ns bytea NOT NULL, key bytea NOT NULL, value bytea NOT NULL,"
	       " PRIMARY KEY (scope_id, ns, key));"
	       "CREATE TABLE function_state_log (id bigserial PRIMARY KEY,"
	       " scope_id bytea NOT NULL, ns bytea NOT NULL, key bytea NOT NULL,"
	       " value bytea NOT NULL);"
	       "CREATE TABLE function_counter (scope_id bytea NOT NULL,"
	       " ns bytea NOT NULL, key bytea NOT NULL, n bigint NOT NULL,"
	       " PRIMARY KEY (scope_id, ns, key));"
	       "INSERT INTO function_state VALUES ('att', 'cur', 'k', '42');"
	       "INSERT INTO function_counter VALUES ('att', 'c', 'k', 5);"
	       "INSERT INTO function_state_log (scope_id, ns, key, value)"
	       " VALUES ('exec', 'log', 'k', 'entry');"
	       "INSERT INTO work_queue (execution_id, work_item)"
	       " VALUES ('exec', 'item')");
	if (tfx_encrypted()) {
		IS(SFS_NOTENCRYPTED, tfx_open(path, 0, &s));
		PQfinish(c);
		return;
	}
	OK(tfx_open(path, 0, &s));
	OK(sfs_kv_get(s, S("att"), S("cur"), S("k"), &b));
	tfx_buf(&b, "42");
	sfs_buf_free(&b);
	OK(sfs_counter_add(s, S("att"), S("c"), S("k"), 1, &v));
	assert_int_equal(v, 6);
	OK(sfs_log_scan(s, S("exec"), S("log"), S("k"), -1, 0, 0, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].st.mtime_ns, 0); /* the SDK keeps no times */
	sfs_list_free(&l);
	OK(sfs_log_append(s, S("exec"), S("log"), S("k"), S("mine"), &v));
	assert_int_equal(v, 2); /* the same sequence */
	OK(sfs_queue_pop(s, S("exec"), 1, &l));
	tfx_buf(&l.items[0].value, "item");
	sfs_list_free(&l);
	/* and the SDK reads ours with its statements */
	OK(sfs_kv_put(s, S("att"), S("cur"), S("k2"), S("ours")));
	assert_int_equal(tfx_pg_int(c, "SELECT count(*) FROM function_state WHERE"
	                 " key = 'k2' AND value = 'ours'"), 1);
	sfs_store_close(s);
	PQfinish(c);
}

/* Hosts opening a new store at once create it once (an advisory lock);
 * every one opens it, with one key check. */
typedef struct opener {
	const char *path;
	int st;
} opener;

static void *open_one(void *arg)
{
	opener *o = arg;
	sfs_store *s;

	o->st = tfx_open(o->path, SFS_OPEN_CREATE, &s);
	if (o->st == SFS_OK) {
		o->st = sfs_kv_put(s, S("s"), S("n"), S("k"), S("v"));
		sfs_store_close(s);
	}
	return NULL;
}

static void test_create_race(void **state)
{
	tfx *t = *state;
	char path[400];
	pthread_t th[6];
	opener o[6];
	sfs_store *s;

	snprintf(path, sizeof(path), "%s/race", t->dir);
	for (int i = 0; i < 6; i++) {
		o[i].path = path;
		o[i].st = -1;
		assert_int_equal(pthread_create(&th[i], NULL, open_one, &o[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		OK(o[i].st);
	}
	OK(tfx_open(path, 0, &s));
	sfs_store_close(s);
}

/* --- order and exactly once -------------------------------------------------- */

/* Appenders (or pushers) on their own handles (connections) to one log
 * (queue); a reader that pages with "after the last id I saw" must end up
 * with every entry (pending item): ids become visible in id order. A
 * sequence hands out ids before the commit, so without a lock two writers
 * commit out of id order: a queue's `.follow` missed items pushed by
 * other hosts at the same time (3 runs in 3 before pushes took the
 * queue's lock). The two other ways an item gets a new id, a retry of an
 * in-flight item and a requeue of a dead letter, take the lock too: the
 * follower missed retried and requeued items the same way. */
enum { AP_LOG, AP_PUSH, AP_RETRY, AP_REQUEUE };

typedef struct appender {
	const char *path;
	int n;
	int mode;             /* AP_* */
	const int64_t *ids;   /* AP_RETRY, AP_REQUEUE: the items, n */
	int st;               /* -1 while it runs */
} appender;

static void *append_many(void *arg)
{
	appender *a = arg;
	sfs_slice e = S("e");
	sfs_store *s;
	int st = tfx_open(a->path, 0, &s);

	for (int i = 0; i < a->n && st == SFS_OK; i++) {
		switch (a->mode) {
		case AP_LOG:
			st = sfs_log_append(s, S("sc"), S("ns"), S("log"), e, NULL);
			break;
		case AP_PUSH:
			st = sfs_queue_push(s, S("q"), &e, 1, NULL);
			break;
		case AP_RETRY:
			st = sfs_item_settle(s, S("q"), a->ids[i],
			                     SFS_OUTCOME_RETRY);
			break;
		default:
			st = sfs_item_requeue(s, S("q"), a->ids[i], NULL);
		}
	}
	if (st == SFS_OK)
		sfs_store_close(s);
	__atomic_store_n(&a->st, st, __ATOMIC_RELEASE);
	return NULL;
}

static int scan_after(tfx *t, int mode, int64_t after, sfs_list *l)
{
	return mode != AP_LOG ? sfs_item_scan(t->s, S("q"), SFS_ITEM_PENDING,
	                                      after, 0, 1, l)
	                      : sfs_log_scan(t->s, S("sc"), S("ns"), S("log"),
	                                     after, 0, 1, l);
}

static void visibility_order(tfx *t, int mode)
{
	pthread_t th[4];
	appender a[4];
	int64_t after = -1, ids[600];
	size_t seen = 0;
	int running = 4;
	sfs_list l;

	if (mode == AP_RETRY || mode == AP_REQUEUE) {
		/* 600 items in flight (or dead), the reader past them */
		sfs_slice e = S("e");
		int64_t cid;

		for (int i = 0; i < 600; i++)
			OK(sfs_queue_push(t->s, S("q"), &e, 1, &ids[i]));
		for (int i = 0; i < 4; i++) {
			OK(sfs_claim(t->s, S("q"), 150, 600000, &cid, &l));
			assert_int_equal(l.n, 150);
			sfs_list_free(&l);
		}
		for (int i = 0; mode == AP_REQUEUE && i < 600; i++)
			OK(sfs_item_settle(t->s, S("q"), ids[i], SFS_OUTCOME_REJECT));
		after = ids[599];
	}
	for (int i = 0; i < 4; i++) {
		a[i] = (appender){ t->path, 150, mode, ids + 150 * i, -1 };
		assert_int_equal(pthread_create(&th[i], NULL, append_many, &a[i]),
		                 0);
	}
	while (running) {
		OK(scan_after(t, mode, after, &l));
		for (size_t i = 0; i < l.n; i++) {
			assert_true(l.items[i].id > after);
			after = l.items[i].id;
		}
		seen += l.n;
		sfs_list_free(&l);
		running = 0;
		for (int i = 0; i < 4; i++)
			running += __atomic_load_n(&a[i].st, __ATOMIC_ACQUIRE) == -1;
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		OK(a[i].st);
	}
	OK(scan_after(t, mode, after, &l));
	seen += l.n;
	sfs_list_free(&l);
	/* nothing committed behind the reader's cursor */
	assert_int_equal(seen, 600);
}

static void test_log_visibility_order(void **state)
{
	visibility_order(*state, AP_LOG);
}

static void test_queue_visibility_order(void **state)
{
	visibility_order(*state, AP_PUSH);
}

static void test_retry_visibility_order(void **state)
{
	visibility_order(*state, AP_RETRY);
}

static void test_requeue_visibility_order(void **state)
{
	visibility_order(*state, AP_REQUEUE);
}

typedef struct claimer {
	const char *path;
	int got;
	int st;
	unsigned char seen[2001];
} claimer;

static void *claim_all(void *arg)
{
	claimer *c = arg;
	sfs_store *s;
	int64_t cid;
	sfs_list l;

	c->st = tfx_open(c->path, 0, &s);
	while (c->st == SFS_OK) {
		int st = sfs_claim(s, S("q"), 3, 60000, &cid, &l);

		if (st == SFS_NOTFOUND)
			break;
		if ((c->st = st) != SFS_OK)
			break;
		for (size_t i = 0; i < l.n; i++) {
			int v = atoi(l.items[i].value.ptr);

			if (v >= 1 && v <= 2000) {
				c->seen[v]++;
				c->got++;
			}
		}
		sfs_list_free(&l);
		c->st = sfs_claim_end(s, cid, SFS_OUTCOME_DONE);
	}
	if (c->st == SFS_OK)
		sfs_store_close(s);
	return NULL;
}

/* Claimers on four handles take 2,000 items, each exactly once. */
static void test_claims_exactly_once(void **state)
{
	tfx *t = *state;
	static claimer c[4];
	pthread_t th[4];
	char buf[2001][8];
	sfs_slice items[2000];
	int total = 0;

	for (int i = 0; i < 2000; i++) {
		snprintf(buf[i], sizeof(buf[i]), "%d", i + 1);
		items[i] = S(buf[i]);
	}
	OK(sfs_queue_push(t->s, S("q"), items, 2000, NULL));
	for (int i = 0; i < 4; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].path = t->path;
		assert_int_equal(pthread_create(&th[i], NULL, claim_all, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		OK(c[i].st);
		total += c[i].got;
	}
	assert_int_equal(total, 2000);
	for (int v = 1; v <= 2000; v++) {
		int n = 0;

		for (int i = 0; i < 4; i++)
			n += c[i].seen[v];
		if (n != 1)
			fail_msg("item %d delivered %d times", v, n);
	}
}

/* --- the server's clock -------------------------------------------------------- */

static void test_server_clock(void **state)
{
	tfx *t = *state;
	PGconn *c = tfx_pg_conn(NULL);
	long long t0, t1;
	sfs_stat sst;
	int64_t mt;

	t0 = tfx_pg_int(c, "SELECT floor(extract(epoch FROM clock_timestamp()))");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	t1 = tfx_pg_int(c, "SELECT floor(extract(epoch FROM clock_timestamp()))");
	OK(sfs_kv_stat(t->s, S("s"), S("n"), S("k"), &sst));
	mt = sst.mtime_ns;
	assert_true(mt / 1000000000 >= t0 && mt / 1000000000 <= t1);
	assert_int_equal(mt % 1000000000, 0); /* whole seconds */
	PQfinish(c);
}

/* --- the pool: threads of one handle run at once ----------------------------- */

typedef struct blocked {
	sfs_store *s;
	int st;
	int done;
} blocked;

static void *put_blocked(void *arg)
{
	blocked *b = arg;

	b->st = sfs_kv_put(b->s, S("s"), S("n"), S("locked"), S("late"));
	__atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_pool_concurrency(void **state)
{
	tfx *t = *state;
	PGconn *c = tfx_pg_conn(t->path);
	blocked b = { t->s, -1, 0 };
	pthread_t th;
	sfs_buf v;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("locked"), S("early")));
	/* another client holds the row: the put waits for it */
	tfx_pg_do(c, "BEGIN; SELECT 1 FROM function_state WHERE key = 'locked'"
	       " FOR UPDATE");
	assert_int_equal(pthread_create(&th, NULL, put_blocked, &b), 0);
	usleep(200000);
	/* meanwhile another thread of the same handle is not held up */
	for (int i = 0; i < 5; i++)
		OK(sfs_kv_put(t->s, S("s"), S("n"), S("free"), S("x")));
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("free"), &v));
	sfs_buf_free(&v);
	assert_int_equal(__atomic_load_n(&b.done, __ATOMIC_SEQ_CST), 0);
	tfx_pg_do(c, "COMMIT");
	pthread_join(th, NULL);
	OK(b.st);
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("locked"), &v));
	tfx_buf(&v, "late");
	sfs_buf_free(&v);
	PQfinish(c);
}

/* --- transient failures -------------------------------------------------------- */

/* A handle whose connections can be told apart on the server. */
static sfs_store *open_named(tfx *t, const char *app)
{
	char *db = tfx_db(t->path), *named;
	sfs_config o;
	sfs_store *s;

	memset(&o, 0, sizeof(o));
	if (asprintf(&named, "%s application_name=%s", db, app) < 0)
		fail();
	o.db = named;
	o.key = tfx_key();
	if (!o.key)
		o.flags = SFS_OPEN_PLAINTEXT;
	OK(sfs_store_open(&o, &s, NULL));
	free(named);
	free(db);
	return s;
}

static void kill_app(PGconn *c, const char *app, int waiting_only)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(pg_terminate_backend(pid)) FROM"
	         " pg_stat_activity WHERE application_name = '%s'%s", app,
	         waiting_only ? " AND wait_event_type = 'Lock'" : "");
	tfx_pg_do(c, q);
}

/* Waits until a backend of app waits for a lock. */
static void until_waiting(PGconn *c, const char *app)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE"
	         " application_name = '%s' AND wait_event_type = 'Lock'", app);
	for (int i = 0; i < 600 && tfx_pg_int(c, q) == 0; i++)
		usleep(50000);
	assert_true(tfx_pg_int(c, q) > 0);
}

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

/* Waits until the server has no backend of app left: each one killed has
 * sent its FATAL, and closes its socket, before its row goes. */
static void until_gone(PGconn *c, const char *app)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE"
	         " application_name = '%s'", app);
	for (int i = 0; i < 600 && tfx_pg_int(c, q) > 0; i++)
		usleep(50000);
	assert_int_equal(tfx_pg_int(c, q), 0);
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

/* A stand-in for a server that is down: a Unix socket that accepts each
 * connection and closes it at once, counting them. */
typedef struct doorman {
	int fd;
	atomic_int stop;
	atomic_int n;
	pthread_t th;
} doorman;

static void *doorman_main(void *arg)
{
	doorman *d = arg;

	while (!atomic_load(&d->stop)) {
		struct pollfd p = { d->fd, POLLIN, 0 };
		int c;

		if (poll(&p, 1, 50) <= 0)
			continue;
		c = accept(d->fd, NULL, NULL);
		if (c >= 0) {
			atomic_fetch_add(&d->n, 1);
			close(c);
		}
	}
	return NULL;
}

/* The server's socket file ("<dir>/.s.PGSQL.<port>", from
 * $STATEFS_TEST_PG) into real, and its port; skips the calling test for a
 * server over TCP (no socket file to stand in for). */
static void server_socket(char *real, size_t n, char *port, size_t np)
{
	const char *srv = getenv("STATEFS_TEST_PG");
	char host[200] = "", *tok, *list = strdup(srv ? srv : "");

	snprintf(port, np, "5432");
	for (tok = strtok(list, " "); tok; tok = strtok(NULL, " ")) {
		if (!strncmp(tok, "host=", 5))
			snprintf(host, sizeof(host), "%s", tok + 5);
		else if (!strncmp(tok, "port=", 5))
			snprintf(port, np, "%s", tok + 5);
	}
	free(list);
	if (host[0] != '/')
		skip();
	snprintf(real, n, "%s/.s.PGSQL.%s", host, port);
}

/* A Unix socket bound and listening at path. */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	return fd;
}

/* Opens the test's store through the socket directory dir (standing in
 * for the server's; NULL: the server's), with more connection options:
 * sfs_store_open's status. */
static int try_open_via(tfx *t, const char *dir, const char *more,
                        int busy_timeout_ms, sfs_store **s)
{
	char *db = tfx_db(t->path), *named;
	sfs_config o;
	int st;

	if (asprintf(&named, "%s %s%s%s", db, more, dir ? " host=" : "",
	             dir ? dir : "") < 0)
		fail();
	memset(&o, 0, sizeof(o));
	o.db = named;
	o.key = tfx_key();
	if (!o.key)
		o.flags = SFS_OPEN_PLAINTEXT;
	o.busy_timeout_ms = busy_timeout_ms;
	st = sfs_store_open(&o, s, NULL);
	free(named);
	free(db);
	return st;
}

/* The same, which must open. */
static sfs_store *open_via(tfx *t, const char *dir, const char *more,
                           int busy_timeout_ms)
{
	sfs_store *s = NULL;

	OK(try_open_via(t, dir, more, busy_timeout_ms, &s));
	return s;
}

/* The server cannot be reached for longer than the busy timeout: the
 * first call waits it out, retrying; the next ones try to connect once
 * and fail (a read through the mount makes two lookups, and each used to
 * wait the whole timeout); once the server is back, the next call
 * connects and runs. The handle reaches the server through a symlink to
 * its socket, replaced meanwhile by a socket that only closes. */
static void test_unreachable_once(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-downXXXXXX";
	char real[256], sock[256], app[40], more[64];
	PGconn *c;
	doorman d = { .fd = -1 };
	sfs_store *s;
	sfs_buf v;
	int n1;

	server_socket(real, sizeof(real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	assert_int_equal(symlink(real, sock), 0);
	snprintf(app, sizeof(app), "sfs_down_%ld", (long)getpid());
	snprintf(more, sizeof(more), "application_name=%s", app);
	s = open_via(t, dir, more, 2000);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));

	/* the server goes away */
	assert_int_equal(unlink(sock), 0);
	d.fd = listen_at(sock);
	assert_int_equal(pthread_create(&d.th, NULL, doorman_main, &d), 0);
	c = tfx_pg_conn(NULL);
	kill_app(c, app, 0);
	until_gone(c, app);
	IS(SFS_IO, sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	assert_non_null(strstr(sfs_errdetail(), "cannot connect"));
	n1 = atomic_load(&d.n);
	assert_true(n1 >= 1);
	IS(SFS_IO, sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	assert_int_equal(atomic_load(&d.n) - n1, 1);
	IS(SFS_IO, sfs_kv_put(s, S("s"), S("n"), S("k"), S("w")));
	assert_int_equal(atomic_load(&d.n) - n1, 2);

	/* it is back */
	atomic_store(&d.stop, 1);
	pthread_join(d.th, NULL);
	close(d.fd);
	assert_int_equal(unlink(sock), 0);
	assert_int_equal(symlink(real, sock), 0);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	sfs_store_close(s);
	unlink(sock);
	rmdir(dir);
	PQfinish(c);
}

/* A server that accepts and never answers (a hung postmaster, or, as
 * for a host that drops packets, nothing coming back): a connection gives
 * up after the busy timeout instead of waiting for ever (libpq has no
 * connect_timeout of its own). The stand-in is a socket that nobody
 * accepts on: the kernel queues the connection and libpq waits for the
 * startup packet's answer. The alarm turns a hang into a failure. */
static void test_mute_server(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-muteXXXXXX";
	char real[256], sock[256];
	sfs_store *s = NULL;
	int fd;

	server_socket(real, sizeof(real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	fd = listen_at(sock);
	alarm(60);
	IS(SFS_IO, try_open_via(t, dir, "", 2000, &s));
	alarm(0);
	assert_null(s);
	assert_non_null(strstr(sfs_errdetail(), "cannot connect"));
	assert_non_null(strstr(sfs_errdetail(), "timeout"));
	close(fd);
	unlink(sock);
	rmdir(dir);
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

/* A proxy between a store and the server, on a socket of its own: each
 * client gets a connection to the real socket, and bytes go both ways.
 * Armed, the next answer that ends with ReadyForQuery (after skip of
 * them) reaches the client
 * with a backend's FATAL after it, in one write; then the server's side
 * is closed and the client's stays open until the client sends again:
 * what a client sees when pg_terminate_backend lands as an answer leaves
 * and the backend takes a moment to close its socket. */
#define PX_MAX 16
typedef struct proxy {
	int fd;
	char real[256];
	atomic_int armed, stop, poisoned;
	atomic_int skip;    /* armed: answers to pass first */
	atomic_int answers; /* answers that ended with ReadyForQuery */
	atomic_int accepted;  /* clients so far, numbered from 1 */
	atomic_int mute_from; /* >0: from the client of that number on,
	                         nothing after the startup's answer
	                         reaches a client (a server gone mute) */
	atomic_int cut;       /* 1: every connection is closed, then 0 */
	pthread_t th;
} proxy;

static size_t px_fatal(char *o)
{
	static const char f[] = "SFATAL\0VFATAL\0C57P01\0Mterminating connection"
	                        " due to administrator command\0";
	uint32_t len = 4 + sizeof(f); /* the fields, each ended, then a 0 */

	o[0] = 'E';
	o[1] = (char)(len >> 24);
	o[2] = (char)(len >> 16);
	o[3] = (char)(len >> 8);
	o[4] = (char)len;
	memcpy(o + 5, f, sizeof(f)); /* sizeof: the final 0 too */
	return 1 + len;
}

static void px_write(int fd, const char *b, ssize_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, b, (size_t)n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		b += w;
		n -= w;
	}
}

static void *proxy_main(void *arg)
{
	proxy *x = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int cl[PX_MAX], up[PX_MAX], id[PX_MAX], zc[PX_MAX], n = 0;
	static char buf[65536 + 256];

	memcpy(sa.sun_path, x->real, strlen(x->real) + 1);
	while (!atomic_load(&x->stop)) {
		struct pollfd p[1 + 2 * PX_MAX];

		p[0] = (struct pollfd){ x->fd, POLLIN, 0 };
		for (int i = 0; i < n; i++) {
			p[1 + 2 * i] = (struct pollfd){ cl[i], POLLIN, 0 };
			p[2 + 2 * i] = (struct pollfd){ up[i], POLLIN, 0 };
		}
		if (atomic_load(&x->cut)) {
			for (int i = 0; i < n; i++) {
				if (cl[i] >= 0)
					close(cl[i]);
				if (up[i] >= 0)
					close(up[i]);
				cl[i] = up[i] = -1;
			}
			atomic_store(&x->cut, 0);
		}
		if (poll(p, (nfds_t)(1 + 2 * n), 50) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			int k = 0;

			while (k < n && cl[k] >= 0) /* a closed one's place */
				k++;
			if (k == PX_MAX)
				goto serve;
			cl[k] = accept(x->fd, NULL, NULL);
			id[k] = atomic_fetch_add(&x->accepted, 1) + 1;
			zc[k] = 0;
			up[k] = socket(AF_UNIX, SOCK_STREAM, 0);
			if (connect(up[k], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
				close(cl[k]);  /* the client sees a closed */
				close(up[k]);  /* connection: a test failure */
				cl[k] = up[k] = -1;
			}
			if (k == n)
				n++;
			continue;
		}
serve:
		for (int i = 0; i < n; i++) {
			ssize_t m;

			if (cl[i] >= 0 && p[1 + 2 * i].revents) {
				m = read(cl[i], buf, 65536);
				if (m <= 0 || up[i] < 0) {
					close(cl[i]);
					if (up[i] >= 0)
						close(up[i]);
					cl[i] = up[i] = -1;
					continue;
				}
				px_write(up[i], buf, m);
			}
			if (up[i] >= 0 && p[2 + 2 * i].revents) {
				m = read(up[i], buf, 65536);
				if (m <= 0) {
					close(cl[i]);
					close(up[i]);
					cl[i] = up[i] = -1;
					continue;
				}
				int z = m >= 6 && buf[m - 6] == 'Z' &&
				        !memcmp(buf + m - 5, "\0\0\0\5", 4);
				int mf = atomic_load(&x->mute_from);

				if (mf > 0 && id[i] >= mf && zc[i] > 0)
					continue; /* swallowed */
				zc[i] += z;
				if (z)
					atomic_fetch_add(&x->answers, 1);
				if (z && atomic_load(&x->armed) &&
				    atomic_load(&x->skip) > 0) {
					atomic_fetch_sub(&x->skip, 1);
				} else if (z && atomic_load(&x->armed)) {
					m += (ssize_t)px_fatal(buf + m);
					atomic_store(&x->armed, 0);
					close(up[i]);
					up[i] = -1;
					atomic_fetch_add(&x->poisoned, 1);
				}
				px_write(cl[i], buf, m);
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (cl[i] >= 0)
			close(cl[i]);
		if (up[i] >= 0)
			close(up[i]);
	}
	return NULL;
}

static uint64_t version_moves(sfs_store *s, uint64_t v);

/* A proxy (above) at a socket directory of its own, running. */
static void proxy_start(proxy *x, char *dir, char *sock, size_t n)
{
	char port[16];

	server_socket(x->real, sizeof(x->real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, n, "%s/.s.PGSQL.%s", dir, port);
	x->fd = listen_at(sock);
	assert_int_equal(pthread_create(&x->th, NULL, proxy_main, x), 0);
}

static void proxy_stop(proxy *x, const char *dir, const char *sock)
{
	atomic_store(&x->stop, 1);
	pthread_join(x->th, NULL);
	close(x->fd);
	unlink(sock);
	rmdir(dir);
}

/* A child forked now exits 0 (it is not left waiting for a lock). */
static void fork_and_reap(void)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A server that accepts the listening connection and then answers
 * nothing (a host gone, a backend stopped with SIGSTOP): the listener
 * waited for the answer to its set-up for ever, blocked inside libpq, so
 * it never listened again (no push of another host woke this one's
 * waiters any more) and sfs_store_close, which joins it, never returned
 * (the mount's unmount hung). It now waits for each answer up to the
 * busy timeout, in poll() with its stop, and connects again; a fork
 * meanwhile does not wait for the server either. The alarm turns a hang
 * into a failure. */
static void test_listener_mute_server(void **state)
{
	tfx *t = *state;
	char dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_slice it = S("i");
	sfs_store *s;
	uint64_t v0, v1;
	int from;

	proxy_start(&x, dir, sock, sizeof(sock));
	s = open_via(t, dir, "", 2000);
	from = atomic_load(&x.accepted) + 1;
	atomic_store(&x.mute_from, from);
	alarm(120);
	OK(sfs_store_version(s, &v0));
	/* it gave up on its first connection and made another */
	while (atomic_load(&x.accepted) < from + 1)
		usleep(10000);
	fork_and_reap();
	atomic_store(&x.mute_from, 0);
	/* it listens again (its connect moves the counter), and a push by
	 * another handle wakes it */
	v1 = version_moves(s, v0);
	OK(sfs_queue_push(t->s, S("q"), &it, 1, NULL));
	version_moves(s, v1);
	sfs_store_close(s);
	/* a close while the listener waits for a mute server returns */
	s = open_via(t, dir, "", 2000);
	from = atomic_load(&x.accepted) + 1;
	atomic_store(&x.mute_from, from);
	OK(sfs_store_version(s, &v0));
	while (atomic_load(&x.accepted) < from)
		usleep(10000);
	sfs_store_close(s);
	alarm(0);
	proxy_stop(&x, dir, sock);
}

/* A logger that, like the mount's, takes a lock to write its line. */
static pthread_mutex_t fork_log_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int fork_logged;

static void fork_log(int level, const char *msg, void *ctx)
{
	(void)level, (void)msg, (void)ctx;
	pthread_mutex_lock(&fork_log_mu);
	atomic_fetch_add(&fork_logged, 1);
	usleep(500); /* writing */
	pthread_mutex_unlock(&fork_log_mu);
}

/* A child forked now opens a handle of its own and uses it, and logs;
 * the inherited handle h is refused (SFS_INVALID), and its close leaves
 * it alone (it would end the parent's connections). */
static void fork_child_uses(tfx *t, sfs_store *h)
{
	sfs_slice it = S("i");
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		sfs_store *c = NULL;
		uint64_t v;
		int rc;

		alarm(60);
		if (sfs_queue_push(h, S("fq"), &it, 1, NULL) != SFS_INVALID)
			_exit(2);
		fork_log(LOG_INFO, "child", NULL);
		rc = try_open_via(t, NULL, "", 0, &c);
		if (rc == SFS_OK)
			rc = sfs_queue_push(c, S("fc"), &it, 1, NULL);
		if (rc == SFS_OK)
			rc = sfs_store_version(c, &v);
		sfs_store_close(c);
		sfs_store_close(h); /* inherited: left alone */
		_exit(rc == SFS_OK ? 0 : 10 + rc);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the parent's handle works on (the child ended nothing) */
	OK(sfs_queue_push(h, S("fq"), &it, 1, NULL));
}

/* A child forked while the handle's listening thread runs (just started,
 * or logging that its connection was lost and connecting again) opens a
 * handle of its own and logs. The fork waits for the listener to be in
 * poll() (pgb_fork_hold): before, the child could inherit a lock the
 * thread held at the fork, which nothing in the child releases: the
 * logger's (here as in the mount's logger), the allocator's under clang's
 * ASan (not fork-safe), libpq's. The listener's connection is ended by
 * the test's proxy, which allocates nothing (under ASan a thread of the
 * test's own inside malloc at a fork hangs the child just the same). The
 * alarm turns a hang into a failure. */
static void test_fork_listener(void **state)
{
	tfx *t = *state;
	char dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_store *s;
	uint64_t v;
	sfs_list l;

	sfs_set_logger(fork_log, NULL);
	for (int i = 0; i < 20; i++) {
		s = open_via(t, NULL, "", 0);
		OK(sfs_store_version(s, &v)); /* its listener starts */
		fork_child_uses(t, s);
		sfs_store_close(s);
	}
	proxy_start(&x, dir, sock, sizeof(sock));
	s = open_via(t, dir, "", 0);
	OK(sfs_store_version(s, &v));
	atomic_store(&fork_logged, 0);
	for (int i = 0; i < 60; i++) {
		atomic_store(&x.cut, 1);
		while (atomic_load(&x.cut))
			usleep(100);
		usleep((useconds_t)(i % 6) * 200); /* into its reconnect */
		fork_child_uses(t, s);
	}
	while (!atomic_load(&fork_logged)) /* its connection was cut */
		usleep(1000);
	sfs_set_logger(NULL, NULL);
	sfs_store_close(s);
	proxy_stop(&x, dir, sock);
	OK(sfs_queue_pop(t->s, S("fc"), 200, &l));
	assert_int_equal(l.n, 80);
	sfs_list_free(&l);
}

/* The FATAL of a backend ended just as an answer left it came with that
 * answer, and libpq read it as a notice at once, while the backend's
 * socket was still open: the pool's check (a poll) saw nothing, lent the
 * connection, and the next call's commit point met the closed socket
 * with no answer: a pop failed, "the outcome is unknown" (seen about
 * once in 500 calls through two mounts while a loop ended the daemons'
 * backends every 150 ms). The notice now marks the connection as
 * ending, and it is replaced before anything is sent. */
static void test_fatal_with_answer(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_slice item = S("item");
	sfs_store *s;
	sfs_list l;
	sfs_buf v;

	server_socket(x.real, sizeof(x.real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	x.fd = listen_at(sock);
	assert_int_equal(pthread_create(&x.th, NULL, proxy_main, &x), 0);
	s = open_via(t, dir, "pool=1", 0);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_queue_push(s, S("q"), &item, 1, NULL));
	OK(sfs_queue_push(s, S("q"), &item, 1, NULL));
	OK(sfs_queue_pop(s, S("q"), 1, &l));   /* prepared */
	sfs_list_free(&l);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v)); /* prepared */
	sfs_buf_free(&v);

	atomic_store(&x.armed, 1);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	assert_int_equal(atomic_load(&x.poisoned), 1);
	OK(sfs_queue_pop(s, S("q"), 1, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "item");
	sfs_list_free(&l);

	/* The same inside a transaction: the FATAL came with the answer of
	 * the statement before the COMMIT, so the session had ended before
	 * the COMMIT left. Nothing was committed, and the call runs again;
	 * it failed "the outcome is unknown" (a settle, an encrypted append
	 * or push, seen while a loop ended the daemon's backends). A rename
	 * is one: its answers counted in a run (the last is the COMMIT's),
	 * the next run's last but one is poisoned. */
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k"), S("s"), S("n"), S("k1"), 0));
	atomic_store(&x.answers, 0);
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k1"), S("s"), S("n"), S("k2"), 0));
	assert_true(atomic_load(&x.answers) >= 3); /* BEGIN, ..., COMMIT */
	atomic_store(&x.skip, atomic_load(&x.answers) - 2);
	atomic_store(&x.armed, 1);
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k2"), S("s"), S("n"), S("k3"), 0));
	assert_int_equal(atomic_load(&x.poisoned), 2);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k3"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	assert_int_equal(sfs_kv_get(s, S("s"), S("n"), S("k2"), &v),
	                 SFS_NOTFOUND);

	sfs_store_close(s);
	atomic_store(&x.stop, 1);
	pthread_join(x.th, NULL);
	close(x.fd);
	unlink(sock);
	rmdir(dir);
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

/* --- what the seals catch ------------------------------------------------------- */

static void test_tampering(void **state)
{
	tfx *t = *state;
	sfs_slice items[2] = { S("one"), S("two") };
	PGconn *c;
	sfs_buf v;
	sfs_list l;
	int64_t cid;

	if (!tfx_encrypted())
		skip(); /* plaintext rows carry no seal */
	c = tfx_pg_conn(t->path);
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("a"), S("alpha")));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("b"), S("beta")));
	OK(sfs_log_append(t->s, S("s"), S("n"), S("log"), S("e1"), NULL));
	OK(sfs_log_append(t->s, S("s"), S("n"), S("log"), S("e2"), NULL));
	OK(sfs_store_verify(t->s, NULL, NULL));
	/* the operator's moves: b's sealed value under a, log entries
	 * swapped: each fails authentication */
	tfx_pg_do(c, "UPDATE function_state SET value = (SELECT value FROM"
	       " function_state WHERE key = 'b') WHERE key = 'a'");
	IS(SFS_CORRUPT, sfs_kv_get(t->s, S("s"), S("n"), S("a"), &v));
	assert_non_null(strstr(sfs_errdetail(), "failed authentication"));
	IS(SFS_CORRUPT, sfs_store_verify(t->s, NULL, NULL));
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("a"), S("alpha")));
	tfx_pg_do(c, "UPDATE function_state_log l SET value = m.value FROM"
	       " function_state_log m WHERE m.key = l.key AND m.id <> l.id");
	OK(sfs_log_scan(t->s, S("s"), S("n"), S("log"), -1, 0, 1, &l));
	sfs_list_free(&l); /* sizes and ids need no key */
	IS(SFS_CORRUPT, sfs_log_scan(t->s, S("s"), S("n"), S("log"), -1, 0, 0,
	                             &l));
	OK(sfs_log_clear(t->s, S("s"), S("n"), S("log"), NULL));
	/* a flipped byte of a pending item: pop reports it and leaves it;
	 * a claim sends it to the dead letters as "damaged" */
	OK(sfs_queue_push(t->s, S("q"), items, 2, NULL));
	tfx_pg_do(c, "UPDATE work_queue SET work_item = set_byte(work_item, 30,"
	       " get_byte(work_item, 30) # 1) WHERE id = (SELECT min(id) FROM"
	       " work_queue)");
	IS(SFS_CORRUPT, sfs_queue_pop(t->s, S("q"), 1, &l));
	assert_non_null(strstr(sfs_errdetail(), "stays in the queue"));
	OK(sfs_claim(t->s, S("q"), 2, 0, &cid, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "two");
	sfs_list_free(&l);
	OK(sfs_claim_end(t->s, cid, SFS_OUTCOME_DONE));
	OK(sfs_item_scan(t->s, S("q"), SFS_ITEM_DEAD, -1, 0, 1, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].reason, "damaged");
	sfs_list_free(&l);
	/* what seals cannot see (docs/postgres.md): an older value of the
	 * same key, kept and written back by the operator, opens */
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("r"), S("old")));
	tfx_pg_do(c, "CREATE TEMP TABLE kept AS SELECT value FROM function_state"
	       " WHERE key = 'r'");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("r"), S("new")));
	tfx_pg_do(c, "UPDATE function_state SET value = (SELECT value FROM kept)"
	       " WHERE key = 'r'");
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("r"), &v));
	tfx_buf(&v, "old");
	sfs_buf_free(&v);
	PQfinish(c);
}

/* --- ids ----------------------------------------------------------------------- */

#define ID_MAX_SQL "4000000000000000000"

/* Idle connections holding an advisory lock: none, ever (sfs_ids holds
 * its lock of the session only while it takes ids; the others end with
 * their transaction). */
static long long idle_advisory_locks(PGconn *c)
{
	return tfx_pg_int(c, "SELECT count(*) FROM pg_locks l JOIN"
	               " pg_stat_activity a ON a.pid = l.pid WHERE"
	               " l.locktype = 'advisory' AND a.state = 'idle'");
}

static long long bounded_sequences(PGconn *c)
{
	return tfx_pg_int(c, "SELECT count(*) FROM pg_sequences WHERE"
	               " schemaname = current_schema() AND max_value = "
	               ID_MAX_SQL);
}

/* Every id sequence stops at SFS_ID_MAX: with one set near the bound (as
 * the server's superuser can), a push, append or claim past it is
 * SFS_OVERFLOW with the engine's sentence, changes nothing, and leaves no
 * lock behind. A store of schema version 1 (sequences to INT64_MAX) is
 * bounded by its first writable open, and reads as it is before. */
static void test_ids_bound(void **state)
{
	tfx *t = *state;
	sfs_slice two[2] = { S("a"), S("b") };
	PGconn *c = tfx_pg_conn(t->path);
	int64_t id = 0, cid = 0;
	sfs_store *ro;
	uint64_t n = 0;
	sfs_list l;

	assert_int_equal(bounded_sequences(c), 3);
	/* version 1, as it was created */
	sfs_store_close(t->s);
	t->s = NULL;
	tfx_pg_do(c, "ALTER SEQUENCE work_queue_id_seq NO MAXVALUE;"
	       " ALTER SEQUENCE function_state_log_id_seq NO MAXVALUE;"
	       " ALTER SEQUENCE statefs_claim_claim_id_seq NO MAXVALUE;"
	       " UPDATE statefs_meta SET value = '1'"
	       " WHERE name = 'schema_version'");
	/* and its sfs_claim, whose delivery count had no bound */
	tfx_pg_do(c, "DO $$ BEGIN EXECUTE replace(pg_get_functiondef("
	       "'sfs_claim'::regproc), '2147483647', '9223372036854775807');"
	       " END $$");
	assert_int_equal(tfx_pg_int(c, "SELECT count(*) FROM pg_proc WHERE"
	                 " proname = 'sfs_claim' AND prosrc LIKE '%2147483647%'"
	                 " AND pronamespace = current_schema()::regnamespace"),
	                 0);
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &ro));
	OK(sfs_item_count(ro, S("q"), SFS_ITEM_PENDING, &n));
	sfs_store_close(ro);
	assert_int_equal(bounded_sequences(c), 0);
	OK(tfx_open(t->path, 0, &t->s));
	assert_int_equal(bounded_sequences(c), 3);
	assert_int_equal(tfx_pg_int(c, "SELECT convert_from(value, 'UTF8')::int"
	                 " FROM statefs_meta WHERE name = 'schema_version'"),
	                 PGB_SCHEMA_VERSION);
	assert_int_equal(tfx_pg_int(c, "SELECT count(*) FROM pg_proc WHERE"
	                 " proname = 'sfs_claim' AND prosrc LIKE '%2147483647%'"
	                 " AND pronamespace = current_schema()::regnamespace"),
	                 1);
	tfx_reopen(t);   /* at the current version: nothing to do */

	/* a batch that would cross the bound is refused whole */
	tfx_pg_do(c, "SELECT setval('work_queue_id_seq', " ID_MAX_SQL " - 3)");
	OK(sfs_queue_push(t->s, S("q"), two, 2, &id));
	assert_true(id == SFS_ID_MAX - 2);
	IS(SFS_OVERFLOW, sfs_queue_push(t->s, S("q"), two, 2, &id));
	assert_non_null(strstr(sfs_errdetail(), "past the largest id"));
	IS(SFS_OVERFLOW, sfs_queue_push(t->s, S("q"), two, 1, &id));
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 2);
	/* an append at the bound */
	tfx_pg_do(c, "SELECT setval('function_state_log_id_seq', " ID_MAX_SQL ")");
	IS(SFS_OVERFLOW, sfs_log_append(t->s, S("sc"), S("ns"), S("k"), S("e"),
	                                &id));
	assert_non_null(strstr(sfs_errdetail(), "past the largest id"));
	OK(sfs_log_scan(t->s, S("sc"), S("ns"), S("k"), -1, 0, 1, &l));
	assert_int_equal(l.n, 0);
	sfs_list_free(&l);
	/* a claim at the bound takes nothing */
	tfx_pg_do(c, "SELECT setval('statefs_claim_claim_id_seq', " ID_MAX_SQL ")");
	IS(SFS_OVERFLOW, sfs_claim(t->s, S("q"), 1, 0, &cid, &l));
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &n));
	assert_int_equal(n, 2);
	assert_int_equal(idle_advisory_locks(c), 0);
	PQfinish(c);
}

/* Names are keys of a B-tree, whose entries hold about 2.7 kB. */
static void test_long_names(void **state)
{
	tfx *t = *state;
	unsigned char *big = malloc(3000);
	uint32_t x = 2463534242u;

	assert_non_null(big);
	for (int i = 0; i < 3000; i++) { /* xorshift: incompressible */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		big[i] = (unsigned char)x;
	}
	IS(SFS_TOOBIG, sfs_kv_put(t->s, S("s"), S("n"), sfs_bytes(big, 3000),
	                          S("v")));
	assert_non_null(strstr(sfs_errdetail(), "2,700 bytes"));
	OK(sfs_kv_put(t->s, S("s"), S("n"), sfs_bytes(big, 2000), S("v")));
	free(big);
}

/* Waits (up to 30 s) for the change counter of s to move from v; its new
 * value. */
static uint64_t version_moves(sfs_store *s, uint64_t v)
{
	uint64_t now = v;

	for (int i = 0; i < 3000 && now == v; i++) {
		OK(sfs_store_version(s, &now));
		if (now == v)
			usleep(10000);
	}
	assert_true(now != v);
	return now;
}

/* A schema named with a '"' and a two-byte character where its channel
 * name is cut (54 bytes in): the store is created, and a push from
 * another handle reaches this one's listener (before, the cut split the
 * character and the server refused the channel: no store; and LISTEN
 * did not double the '"': no wake-ups, ever). */
static void test_odd_schema(void **state)
{
	char name[64], *db, sql_text[256];
	sfs_store *s, *other;
	sfs_config o;
	sfs_slice it = S("i");
	uint64_t v0, v1;
	PGconn *c;

	(void)state;
	/* the pid: the two modes' runs never meet */
	snprintf(name, sizeof(name), "q\"%08x", (unsigned)getpid());
	memset(name + 10, 'a', 43);
	memcpy(name + 53, "\xc3\xa9", 3); /* é, bytes 54 and 55 */
	assert_true(asprintf(&db, "%s schema='%s'", getenv("STATEFS_TEST_PG"),
	                     name) > 0);
	memset(&o, 0, sizeof(o));
	o.db = db;
	o.key = tfx_key();
	o.flags = SFS_OPEN_CREATE | (o.key ? 0 : SFS_OPEN_PLAINTEXT);
	OK(sfs_store_open(&o, &s, NULL));
	o.flags &= ~(unsigned)SFS_OPEN_CREATE;
	OK(sfs_store_open(&o, &other, NULL));
	/* the listener's connect moves the counter once; then a push */
	OK(sfs_store_version(s, &v0));
	v1 = version_moves(s, v0);
	OK(sfs_queue_push(other, S("q"), &it, 1, NULL));
	version_moves(s, v1);
	sfs_store_close(other);
	sfs_store_close(s);
	c = tfx_pg_conn(NULL);
	snprintf(sql_text, sizeof(sql_text), "DROP SCHEMA \"q\"\"%s\" CASCADE",
	         name + 2);
	tfx_pg_do(c, sql_text);
	PQfinish(c);
	free(db);
}

/* A server (or role, or database) with idle_session_timeout ends idle
 * sessions, and the listening connection is idle by nature: it was ended
 * and reconnected at every timeout, each time moving the change counter
 * (a wake-up of every waiter for nothing) and logging a line. It turns the
 * timeout off for itself; the pool's connections keep it. */
static void test_listener_idle_timeout(void **state)
{
	tfx *t = *state;
	sfs_store *s = open_via(t, NULL, "options='-c idle_session_timeout=100'",
	                        0);
	sfs_slice it = S("i");
	uint64_t v0, v1;

	/* the listener's connect moves the counter once */
	OK(sfs_store_version(s, &v0));
	v1 = version_moves(s, v0);
	/* ten timeouts later, nothing pushed: it has not moved again */
	usleep(1000000);
	OK(sfs_store_version(s, &v0));
	assert_true(v0 == v1);
	/* and a push by another handle still wakes it */
	OK(sfs_queue_push(t->s, S("q"), &it, 1, NULL));
	version_moves(s, v1);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_db_strings),
		T(test_password_rule),
		T(test_foreign_schema),
		T(test_sdk_schema),
		T(test_create_race),
		T(test_log_visibility_order),
		T(test_queue_visibility_order),
		T(test_retry_visibility_order),
		T(test_requeue_visibility_order),
		T(test_claims_exactly_once),
		T(test_server_clock),
		T(test_pool_concurrency),
		T(test_transient_failures),
		T(test_dead_idle_replaced),
		T(test_listener_idle_timeout),
		T(test_unreachable_once),
		T(test_mute_server),
		T(test_listener_mute_server),
		T(test_fork_listener),
		T(test_fatal_with_answer),
		T(test_deadlock_retried),
		T(test_tampering),
		T(test_long_names),
		T(test_ids_bound),
		T(test_odd_schema),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
