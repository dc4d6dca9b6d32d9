/*
 * test_pg.c - what only the PostgreSQL backend has: its store names
 * (connection strings, our keywords, passwords never shown), schemas it
 * must not touch or may adopt (someone else's, the VGI SDK's, one with
 * an odd name), hosts creating one store at once, the order in which log
 * ids become visible, claims across handles, the server's clock, a pool
 * that lets threads run at once, what the seals catch (and the one thing
 * they cannot), and ids and names at their bounds. Connection failures
 * are test_pg_conn.c's, commit outcomes test_pg_outcome.c's.
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
#include "pgfx.h"

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
		T(test_tampering),
		T(test_long_names),
		T(test_ids_bound),
		T(test_odd_schema),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
