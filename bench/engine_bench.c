/*
 * engine_bench.c - the engine against hand-written SQLite, same run.
 *
 * Usage: engine_bench [-n OPS] [-r ROUNDS] [-e] [-d DIR] [-o OPERATION]
 *   -n  operations per measurement (default 20000)
 *   -r  rounds; each number is the median over rounds (default 3)
 *   -e  encrypted stores: the engine with a key, the raw statements through
 *       the same encrypting VFS (links the engine's private crypt layer)
 *   -d  directory for the scratch stores (default $TMPDIR or /tmp)
 *   -o  only this operation (its name in the table, e.g. delete); with
 *       valgrind --tool=callgrind --toggle-collect=eng_<op> it counts the
 *       engine's instructions per operation, which load does not change
 *
 * For put, get, log append, counter add and push+pop it times, on fresh
 * stores created by the engine (same schema, same file, same PRAGMAs:
 * WAL, synchronous=NORMAL, busy_timeout, temp_store=MEMORY, 64 MiB cache):
 *   sdk     the VGI Go SDK's own statements, one autocommit statement per
 *           operation (the baseline: "equivalent hand-written
 *           SQLite statements on the same schema");
 *   best    the fastest hand-written statement for the same effect on the
 *           SDK's tables; differs from sdk only for put, where an upsert
 *           updates the row in place and INSERT OR REPLACE re-inserts it;
 *   same    hand-written statements doing what the engine does: best plus
 *           the modification time (the time row's upsert, which writes
 *           only when the stored second is older; for logs and queues the
 *           time map's conditional insert and, for pop, the override's
 *           delete), in one BEGIN IMMEDIATE transaction (what times cost,
 *           without the engine);
 *   engine  the public API.
 * Then group commit: 1, 2, 4 and 8 threads putting into one handle at
 * once (each its own namespace, ops puts in all), the puts per second,
 * the speedup over one thread and the puts per commit (the handle's
 * sfs_store_version counts its commits: how large the groups were).
 *
 * It prints microseconds per operation (median of the rounds) and the
 * ratios best/engine (the target: >= 0.9) and same/engine (the engine's own
 * overhead). It asserts nothing: timings on a shared machine are noisy.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pagecount.h"
#include "sqlite/vfs_i.h"
#include "statefs.h"

#define KEYS 1000
#define VLEN 100

static int ops = 20000, rounds = 3, enc;
static const char *only;
static char dir[256];
static sfs_key *key;
static unsigned char value[VLEN];
/* what a raw listing reads goes here, so that the reads are not optimised out */
static volatile int64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "engine_bench: %s: %s\n", what, detail);
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc != SFS_OK)
		die(what, sfs_errdetail());
}

/* A fresh store created by the engine; *path gets its name. name NULL:
 * reopen the store at path. */
static sfs_store *fresh(char *path, size_t n, const char *name)
{
	sfs_config o;
	sfs_store *s;
	char cmd[1400];

	if (name) {
		snprintf(path, n, "%s/%s.db", dir, name);
		snprintf(cmd, sizeof(cmd), "rm -f '%s' '%s-wal' '%s-shm'", path,
		         path, path);
		if (system(cmd) != 0)
			die("rm", path);
	}
	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = SFS_OPEN_CREATE | (enc ? 0 : SFS_OPEN_PLAINTEXT);
	o.key = enc ? key : NULL;
	check(sfs_store_open(&o, &s, NULL), "open");
	return s;
}

/* --- raw SQLite --------------------------------------------------------- */

typedef struct raw {
	sqlite3 *db;
	crypt_vfs *vfs;
} raw;

static void raw_exec(raw *r, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(r->db, sql, NULL, NULL, &err) != SQLITE_OK)
		die(sql, err ? err : "?");
}

/* Opens the file as the engine does: same VFS, same PRAGMAs. */
static void raw_open(raw *r, const char *path)
{
	const char *vfs = NULL;

	memset(r, 0, sizeof(*r));
	if (enc) {
		check(crypt_vfs_open(key, &r->vfs), "crypt vfs");
		vfs = crypt_vfs_name(r->vfs);
	}
	if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE |
	                    SQLITE_OPEN_NOMUTEX, vfs) != SQLITE_OK)
		die("sqlite3_open_v2", sqlite3_errmsg(r->db));
	if (enc)
		check(crypt_db_setup(r->db), "crypt setup");
	sqlite3_busy_timeout(r->db, 30000);
	raw_exec(r, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
	         " PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;");
}

static void raw_close(raw *r)
{
	sqlite3_close(r->db);
	if (r->vfs)
		crypt_vfs_close(r->vfs);
}

static sqlite3_stmt *prep(raw *r, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	                       NULL) != SQLITE_OK)
		die(sql, sqlite3_errmsg(r->db));
	return st;
}

static void run(raw *r, sqlite3_stmt *st)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE)
		die(sqlite3_sql(st), sqlite3_errmsg(r->db));
	sqlite3_reset(st);
}

static void keyname(char *k, int i)
{
	snprintf(k, 16, "key-%06d", i % KEYS);
}

/* The i-th of ops distinct keys (delete and list work on that many). */
static void keyname_all(char *k, int i)
{
	snprintf(k, 16, "key-%07d", i);
}

/* Every write stores different bytes: SQLite skips rewriting a cell whose
 * bytes did not change, which would time a no-op. */
static const unsigned char *val(int i)
{
	memcpy(value, &i, sizeof(i));
	return value;
}

#define BIND(st, i, p, n) sqlite3_bind_blob(st, i, p, (int)(n), SQLITE_STATIC)

/* Binds a row's scope ("scope"), namespace and key to parameters 1-3. */
static void bind_key(sqlite3_stmt *st, const char *ns, const char *k)
{
	BIND(st, 1, "scope", 5);
	BIND(st, 2, ns, strlen(ns));
	BIND(st, 3, k, strlen(k));
}

/* Each raw function times ops operations in a mode: SDK statements,
 * BEST statements, or the SAME work as the engine (best plus time rows in
 * one transaction). */
enum { SDK, BEST, SAME };

static int64_t clock_mtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000; /* whole seconds, as the engine */
}

/* The time row's upsert of a key (kv and counters; statement t takes
 * scope, ns, key, mtime_ns), as the engine writes it. */
static void key_time(raw *r, sqlite3_stmt *t, const char *ns, const char *k)
{
	bind_key(t, ns, k);
	sqlite3_bind_int64(t, 4, clock_mtime());
	run(r, t);
}

static double raw_put(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *put = prep(r, mode != SDK ?
	        "INSERT INTO function_state (scope_id, ns, key, value)"
	        " VALUES (?, ?, ?, ?) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET value=excluded.value" :
	        "INSERT OR REPLACE INTO function_state (scope_id, ns, key,"
	        " value) VALUES (?, ?, ?, ?)");
	sqlite3_stmt *t = prep(r, "INSERT INTO statefs_kv_time (scope, ns,"
	        " key, mtime_ns) VALUES (?, ?, ?, ?) ON CONFLICT (scope, ns,"
	        " key) DO UPDATE SET mtime_ns=excluded.mtime_ns"
	        " WHERE mtime_ns<excluded.mtime_ns");
	sqlite3_stmt *b = prep(r, "BEGIN IMMEDIATE"), *c = prep(r, "COMMIT");
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i);
		if (same)
			run(r, b);
		bind_key(put, "ns", k);
		BIND(put, 4, val(i), VLEN);
		run(r, put);
		if (same) {
			key_time(r, t, "ns", k);
			run(r, c);
		}
	}
	t0 = now() - t0;
	sqlite3_finalize(put);
	sqlite3_finalize(t);
	sqlite3_finalize(b);
	sqlite3_finalize(c);
	return t0;
}

static double raw_get(raw *r, int mode)
{
	sqlite3_stmt *get = prep(r, "SELECT value FROM function_state WHERE"
	                         " scope_id = ? AND ns = ? AND key = ?");
	static unsigned char out[VLEN + 1];
	char k[16];
	double t0 = now();

	(void)mode; /* a read writes no time: one statement for all */
	for (int i = 0; i < ops; i++) {
		keyname(k, i);
		bind_key(get, "ns", k);
		if (sqlite3_step(get) != SQLITE_ROW)
			die("get", "no row");
		/* the caller gets its own copy, as from the engine */
		memcpy(out, sqlite3_column_blob(get, 0),
		       (size_t)sqlite3_column_bytes(get, 0));
		sqlite3_reset(get);
	}
	t0 = now() - t0;
	sqlite3_finalize(get);
	return t0;
}

static double raw_append(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *ins = prep(r, "INSERT INTO function_state_log (scope_id,"
	                         " ns, key, value) VALUES (?, ?, ?, ?)");
	sqlite3_stmt *t = prep(r, "INSERT INTO statefs_log_timemap (id,"
	        " mtime_ns) SELECT ?1, ?2 WHERE ?2 > coalesce((SELECT mtime_ns"
	        " FROM statefs_log_timemap ORDER BY id DESC LIMIT 1), -1)");
	sqlite3_stmt *b = prep(r, "BEGIN IMMEDIATE"), *c = prep(r, "COMMIT");
	volatile int64_t id = 0;
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i % 10);
		if (same)
			run(r, b);
		bind_key(ins, "log", k);
		BIND(ins, 4, val(i), VLEN);
		run(r, ins);
		id = sqlite3_last_insert_rowid(r->db);
		if (same) {
			sqlite3_bind_int64(t, 1, id);
			sqlite3_bind_int64(t, 2, clock_mtime());
			run(r, t);
			run(r, c);
		}
	}
	t0 = now() - t0;
	sqlite3_finalize(ins);
	sqlite3_finalize(t);
	sqlite3_finalize(b);
	sqlite3_finalize(c);
	return t0;
}

static double raw_counter(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *add = prep(r, same ?
	        "INSERT INTO function_counter (scope_id, ns, key, n)"
	        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (scope_id, ns, key)"
	        " DO UPDATE SET n=n+excluded.n WHERE n BETWEEN ?5 AND ?6"
	        " RETURNING n" :
	        "INSERT INTO function_counter (scope_id, ns, key, n) VALUES"
	        " (?, ?, ?, ?) ON CONFLICT(scope_id, ns, key) DO UPDATE SET"
	        " n = n + excluded.n RETURNING n");
	sqlite3_stmt *t = prep(r, "INSERT INTO statefs_counter_time (scope,"
	        " ns, key, mtime_ns) VALUES (?, ?, ?, ?) ON CONFLICT (scope,"
	        " ns, key) DO UPDATE SET mtime_ns=excluded.mtime_ns"
	        " WHERE mtime_ns<excluded.mtime_ns");
	sqlite3_stmt *b = prep(r, "BEGIN IMMEDIATE"), *c = prep(r, "COMMIT");
	volatile int64_t v = 0;
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i % 100);
		if (same)
			run(r, b);
		bind_key(add, "c", k);
		sqlite3_bind_int64(add, 4, 1);
		if (same) {
			sqlite3_bind_int64(add, 5, INT64_MIN);
			sqlite3_bind_int64(add, 6, INT64_MAX - 1);
		}
		if (sqlite3_step(add) != SQLITE_ROW)
			die("counter", sqlite3_errmsg(r->db));
		v = sqlite3_column_int64(add, 0);
		sqlite3_reset(add);
		if (same) {
			key_time(r, t, "c", k);
			run(r, c);
		}
	}
	(void)v;
	t0 = now() - t0;
	sqlite3_finalize(add);
	sqlite3_finalize(t);
	sqlite3_finalize(b);
	sqlite3_finalize(c);
	return t0;
}

/* One push of one item and one pop, per operation. */
static double raw_pushpop(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *push = prep(r, "INSERT INTO work_queue (execution_id,"
	                          " work_item) VALUES (?, ?)");
	sqlite3_stmt *pop = prep(r, "DELETE FROM work_queue WHERE id = (SELECT"
	        " id FROM work_queue WHERE execution_id = ? ORDER BY id ASC"
	        " LIMIT 1) RETURNING id, work_item");
	sqlite3_stmt *t = prep(r, "INSERT INTO statefs_queue_timemap (id,"
	        " enqueued_ns) SELECT ?1, ?2 WHERE ?2 > coalesce((SELECT"
	        " enqueued_ns FROM statefs_queue_timemap ORDER BY id DESC"
	        " LIMIT 1), -1)");
	sqlite3_stmt *dt = prep(r, "DELETE FROM statefs_queue_pending"
	                        " WHERE id=?");
	sqlite3_stmt *b = prep(r, "BEGIN IMMEDIATE"), *c = prep(r, "COMMIT");
	static unsigned char out[VLEN + 1];
	int64_t id;
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		if (same)
			run(r, b);
		BIND(push, 1, "q", 1);
		BIND(push, 2, val(i), VLEN);
		run(r, push);
		if (same) {
			sqlite3_bind_int64(t, 1, sqlite3_last_insert_rowid(r->db));
			sqlite3_bind_int64(t, 2, clock_mtime());
			run(r, t);
			run(r, c);
			run(r, b);
		}
		BIND(pop, 1, "q", 1);
		if (sqlite3_step(pop) != SQLITE_ROW)
			die("pop", "empty");
		id = sqlite3_column_int64(pop, 0);
		memcpy(out, sqlite3_column_blob(pop, 1),
		       (size_t)sqlite3_column_bytes(pop, 1));
		if (sqlite3_step(pop) != SQLITE_DONE)
			die("pop", "two rows");
		sqlite3_reset(pop);
		if (same) {
			sqlite3_bind_int64(dt, 1, id);
			run(r, dt);
			run(r, c);
		}
	}
	t0 = now() - t0;
	sqlite3_finalize(push);
	sqlite3_finalize(pop);
	sqlite3_finalize(t);
	sqlite3_finalize(dt);
	sqlite3_finalize(b);
	sqlite3_finalize(c);
	return t0;
}

/* One delete per operation, of ops keys that exist. */
static double raw_delete(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *del = prep(r, "DELETE FROM function_state WHERE"
	                         " scope_id = ? AND ns = ? AND key = ?");
	sqlite3_stmt *t = prep(r, "DELETE FROM statefs_kv_time WHERE"
	                       " scope = ? AND ns = ? AND key = ?");
	sqlite3_stmt *b = prep(r, "BEGIN IMMEDIATE"), *c = prep(r, "COMMIT");
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname_all(k, i);
		if (same)
			run(r, b);
		bind_key(del, "ns", k);
		run(r, del);
		if (sqlite3_changes(r->db) != 1)
			die("delete", "no row");
		if (same) {
			bind_key(t, "ns", k);
			run(r, t);
			run(r, c);
		}
	}
	t0 = now() - t0;
	sqlite3_finalize(del);
	sqlite3_finalize(t);
	sqlite3_finalize(b);
	sqlite3_finalize(c);
	return t0;
}

#define LIST_REPS 5

/* A namespace of ops keys listed LIST_REPS times in pages of PAGE keys
 * (as the mount's readdir asks), keys and sizes; an operation is one key.
 * best reads the data table alone; same also each key's time, as a join
 * (a seek into the time table per key). */
#define LIST_PAGE 1024
static double raw_list(raw *r, int mode)
{
	int same = mode == SAME;
	sqlite3_stmt *first = prep(r, same ?
	        "SELECT f.key, length(f.value), t.mtime_ns FROM function_state"
	        " f LEFT JOIN statefs_kv_time t ON t.scope=f.scope_id AND"
	        " t.ns=f.ns AND t.key=f.key WHERE f.scope_id=?1 AND f.ns=?2"
	        " AND f.key>?3 ORDER BY f.key LIMIT ?4" :
	        "SELECT key, length(value) FROM function_state WHERE"
	        " scope_id=?1 AND ns=?2 AND key>?3 ORDER BY key LIMIT ?4");
	static unsigned char last[64];
	int n, got = 0;
	size_t len;
	double t0 = now();

	for (int rep = 0; rep < LIST_REPS; rep++) {
		len = 0;
		do {
			BIND(first, 1, "scope", 5);
			BIND(first, 2, "ns", 2);
			BIND(first, 3, last, len);
			sqlite3_bind_int(first, 4, LIST_PAGE);
			n = 0;
			while (sqlite3_step(first) == SQLITE_ROW) {
				len = (size_t)sqlite3_column_bytes(first, 0);
				memcpy(last, sqlite3_column_blob(first, 0), len);
				sink += sqlite3_column_int64(first, 1);
				if (same)
					sink += sqlite3_column_int64(first, 2);
				n++;
			}
			sqlite3_reset(first);
			got += n;
		} while (n == LIST_PAGE);
	}
	t0 = now() - t0;
	if (got != ops * LIST_REPS)
		die("list", "wrong number of keys");
	sqlite3_finalize(first);
	return t0 / LIST_REPS;
}

/* --- the engine --------------------------------------------------------- */

static double eng_put(sfs_store *s)
{
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i);
		check(sfs_kv_put(s, sfs_str("scope"), sfs_str("ns"), sfs_str(k),
		                 sfs_bytes(val(i), VLEN)), "put");
	}
	return now() - t0;
}

static double eng_get(sfs_store *s)
{
	char k[16];
	sfs_buf b;
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i);
		check(sfs_kv_get(s, sfs_str("scope"), sfs_str("ns"), sfs_str(k),
		                 &b), "get");
		sfs_buf_free(&b);
	}
	return now() - t0;
}

static double eng_append(sfs_store *s)
{
	int64_t id;
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i % 10);
		check(sfs_log_append(s, sfs_str("scope"), sfs_str("log"),
		                     sfs_str(k), sfs_bytes(val(i), VLEN), &id),
		      "append");
	}
	return now() - t0;
}

static double eng_counter(sfs_store *s)
{
	int64_t v;
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname(k, i % 100);
		check(sfs_counter_add(s, sfs_str("scope"), sfs_str("c"), sfs_str(k),
		                      1, &v), "counter add");
	}
	return now() - t0;
}

static double eng_pushpop(sfs_store *s)
{
	sfs_slice it = sfs_bytes(value, VLEN);
	sfs_list l;
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		val(i);
		check(sfs_queue_push(s, sfs_str("q"), &it, 1, NULL), "push");
		check(sfs_queue_pop(s, sfs_str("q"), 1, &l), "pop");
		sfs_list_free(&l);
	}
	return now() - t0;
}

static double eng_delete(sfs_store *s)
{
	char k[16];
	double t0 = now();

	for (int i = 0; i < ops; i++) {
		keyname_all(k, i);
		check(sfs_kv_delete(s, sfs_str("scope"), sfs_str("ns"),
		                    sfs_str(k)), "delete");
	}
	return now() - t0;
}

static double eng_list(sfs_store *s)
{
	sfs_scan_opts o = { .start_after = 1, .limit = LIST_PAGE,
	                    .keys_only = 1 };
	static unsigned char last[64];
	sfs_list l;
	size_t got = 0;
	double t0 = now();

	for (int rep = 0; rep < LIST_REPS; rep++) {
		size_t n;

		o.start = SFS_NONE;
		do {
			check(sfs_kv_scan(s, sfs_str("scope"), sfs_str("ns"), &o,
			                  &l), "list");
			n = l.n;
			got += n;
			if (n) {
				sfs_item *it = &l.items[n - 1];
				memcpy(last, it->key.ptr, it->key.len);
				o.start = sfs_bytes(last, it->key.len);
			}
			sfs_list_free(&l);
		} while (n == LIST_PAGE);
	}
	t0 = now() - t0;
	if (got != (size_t)ops * LIST_REPS)
		die("list", "wrong number of keys");
	return t0 / LIST_REPS;
}

/* --- driver ------------------------------------------------------------- */

typedef struct bench {
	const char *name;
	double (*raw)(raw *r, int mode);
	double (*eng)(sfs_store *s);
	int needs_data;  /* FILL_KEYS: the KEYS keys must exist first;
	                  * FILL_ALL: ops keys (keyname_all) */
	int best_differs; /* else best is the sdk statement */
} bench;

enum { FILL_KEYS = 1, FILL_ALL };

static const bench benches[] = {
	{ "put", raw_put, eng_put, 0, 1 },
	{ "get", raw_get, eng_get, FILL_KEYS, 0 },
	{ "delete", raw_delete, eng_delete, FILL_ALL, 0 },
	{ "list/key", raw_list, eng_list, FILL_ALL, 0 },
	{ "append", raw_append, eng_append, 0, 0 },
	{ "counter add", raw_counter, eng_counter, 0, 0 },
	{ "push+pop", raw_pushpop, eng_pushpop, 0, 0 },
};

/* --- group commit ---------------------------------------------------- */

static double median(double *v, int n);

typedef struct putter {
	sfs_store *s;
	int idx, n;
} putter;

static void *put_loop(void *arg)
{
	putter *p = arg;
	char ns[16], k[16];

	snprintf(ns, sizeof(ns), "ns%d", p->idx);
	for (int i = 0; i < p->n; i++) {
		keyname(k, i);
		check(sfs_kv_put(p->s, sfs_str("scope"), sfs_str(ns), sfs_str(k),
		                 sfs_bytes(val(i), VLEN)), "put");
	}
	return NULL;
}

static void group_bench(void)
{
	static const int counts[] = { 1, 2, 4, 8 };
	double rate[4][16], per[4][16], one = 0;
	char path[400];

	printf("\ngroup commit: T threads putting at once into one handle, %d"
	       " puts in all (median of %d rounds)\n", ops, rounds);
	printf("%-8s %10s %8s %12s\n", "threads", "puts/s", "speedup",
	       "puts/commit");
	for (int r = 0; r < rounds; r++) {
		for (int c = 0; c < 4; c++) {
			pthread_t th[8];
			putter p[8];
			uint64_t v0, v1;
			sfs_store *s = fresh(path, sizeof(path), "g");
			double t0;

			check(sfs_store_version(s, &v0), "version");
			t0 = now();
			for (int i = 0; i < counts[c]; i++) {
				p[i] = (putter){ s, i, ops / counts[c] };
				pthread_create(&th[i], NULL, put_loop, &p[i]);
			}
			for (int i = 0; i < counts[c]; i++)
				pthread_join(th[i], NULL);
			t0 = now() - t0;
			check(sfs_store_version(s, &v1), "version");
			rate[c][r] = ops / counts[c] * counts[c] / t0;
			per[c][r] = (double)(ops / counts[c] * counts[c]) /
			            (double)(v1 - v0);
			sfs_store_close(s);
		}
	}
	for (int c = 0; c < 4; c++) {
		double x = median(rate[c], rounds);

		if (c == 0)
			one = x;
		printf("%-8d %10.0f %8.2f %12.2f\n", counts[c], x, x / one,
		       median(per[c], rounds));
	}
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return v[n / 2];
}

static void fill_keys(sfs_store *s, int how)
{
	char k[16];

	if (how == FILL_KEYS) {
		for (int i = 0; i < KEYS; i++) {
			keyname(k, i);
			check(sfs_kv_put(s, sfs_str("scope"), sfs_str("ns"),
			                 sfs_str(k), sfs_bytes(value, VLEN)),
			      "fill");
		}
		return;
	}
	/* many keys: in batches, one transaction each */
	for (int i = 0; i < ops; i += 1000) {
		static char names[1000][16];
		sfs_slice keys[1000], vals[1000];
		int n = ops - i < 1000 ? ops - i : 1000;

		for (int j = 0; j < n; j++) {
			keyname_all(names[j], i + j);
			keys[j] = sfs_str(names[j]);
			vals[j] = sfs_bytes(value, VLEN);
		}
		check(sfs_kv_put_many(s, sfs_str("scope"), sfs_str("ns"), keys,
		                      vals, (size_t)n, 0), "fill");
	}
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	double t[4][16];
	char path[400];
	int opt;

	while ((opt = getopt(argc, argv, "n:r:ed:o:")) != -1) {
		switch (opt) {
		case 'n': ops = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'e': enc = 1; break;
		case 'd': tmp = optarg; break;
		case 'o': only = optarg; break;
		default:
			fprintf(stderr, "usage: engine_bench [-n OPS] [-r ROUNDS]"
			        " [-e] [-d DIR] [-o OPERATION]\n");
			return 2;
		}
	}
	if (ops <= 0 || rounds <= 0 || rounds > 16)
		die("arguments", "-n > 0, 1 <= -r <= 16");
	if (pc_install() != 0)
		die("pagecount", "cannot register the counting VFS");
	snprintf(dir, sizeof(dir), "%s/statefs-bench-XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp", dir);
	if (enc)
		check(sfs_key_generate(&key), "key");
	for (int i = 0; i < VLEN; i++)
		value[i] = (unsigned char)(i * 31);
	printf("statefs engine_bench: %d ops x %d rounds, %s, %d-byte values,"
	       " %s\n", ops, rounds, enc ? "encrypted" : "plaintext", VLEN, dir);
	printf("%-12s %8s %8s %8s %8s %11s %9s %7s %7s %7s\n", "operation",
	       "sdk us", "best us", "same us", "eng us", "best/engine",
	       "same/eng", "best pw", "eng pw", "eng pr");
	for (size_t bi = 0; bi < sizeof(benches) / sizeof(benches[0]); bi++) {
		const bench *b = &benches[bi];
		double sdk, best, same, eng, pw[4][16], pr[4][16];

		if (only && strcmp(only, b->name) != 0)
			continue;
		/* Interleaved rounds, each on a fresh store. */
		for (int r = 0; r < rounds; r++) {
			for (int mode = SDK; mode <= SAME + 1; mode++) {
				sfs_store *s;
				pc_counts a, z, d;
				raw rw;

				if (mode == BEST && !b->best_differs)
					continue;
				s = fresh(path, sizeof(path), "b");
				if (b->needs_data) {
					/* both sides start from the same
					 * closed file and a cold cache */
					fill_keys(s, b->needs_data);
					sfs_store_close(s);
					s = fresh(path, sizeof(path), NULL);
				}
				if (mode != SAME + 1) {
					sfs_store_close(s);
					raw_open(&rw, path);
				}
				pc_get(&a);
				t[mode][r] = mode == SAME + 1 ? b->eng(s)
				                              : b->raw(&rw, mode);
				pc_get(&z);
				d = pc_diff(&z, &a);
				pw[mode][r] = (double)(d.wal_written +
				                       d.db_written) / ops;
				pr[mode][r] = (double)(d.wal_read + d.db_read) /
				              ops;
				if (mode == SAME + 1)
					sfs_store_close(s);
				else
					raw_close(&rw);
			}
			if (!b->best_differs) {
				t[BEST][r] = t[SDK][r];
				pw[BEST][r] = pw[SDK][r];
			}
		}
		sdk = median(t[SDK], rounds) / ops * 1e6;
		best = median(t[BEST], rounds) / ops * 1e6;
		same = median(t[SAME], rounds) / ops * 1e6;
		eng = median(t[SAME + 1], rounds) / ops * 1e6;
		printf("%-12s %8.2f %8.2f %8.2f %8.2f %11.2f %9.2f %7.2f %7.2f"
		       " %7.2f\n", b->name, sdk, best, same, eng, best / eng,
		       same / eng, median(pw[BEST], rounds),
		       median(pw[SAME + 1], rounds),
		       median(pr[SAME + 1], rounds));
		fflush(stdout);
	}
	printf("pw, pr: pages written and read per operation (WAL frames,"
	       " checkpoint writes; cache misses, WAL and checkpoint reads),"
	       " counted below the encryption.\n");
	if (!only || strcmp(only, "group") == 0)
		group_bench();
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "engine_bench: could not remove %s\n", dir);
	}
	sfs_key_destroy(key);
	return 0;
}
