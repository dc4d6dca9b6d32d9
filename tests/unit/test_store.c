/*
 * test_store.c - opening and closing stores: flags and their errors, the
 * default path, memory and read-only stores, the change counter, commits
 * surviving a crashed process, and compatibility with the VGI Go SDK's
 * plaintext store in both directions (a store the SDK's statements wrote
 * opens here; the sqlite3 tool and the SDK's statements read ours).
 */
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sqlite/vfs_i.h"
#include "fixture.h"

/* The store a handle opened, as sfs_store_info names it. */
static const char *path_of(sfs_store *s, sfs_info *in)
{
	OK(sfs_store_info(s, in));
	return in->path;
}

static void test_open_flags(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_config o;
	sfs_info in;
	sfs_store *s = (sfs_store *)0x1;

	snprintf(path, sizeof(path), "%s/none.db", t->dir);
	IS(SFS_NOTFOUND, tfx_open(path, 0, &s));
	assert_ptr_equal(s, (sfs_store *)0x1); /* untouched on failure */
	IS(SFS_EXISTS, tfx_open(t->path, SFS_OPEN_CREATE | SFS_OPEN_EXCL, &s));
	IS(SFS_INVALID, tfx_open(path, SFS_OPEN_EXCL, &s));
	IS(SFS_INVALID, tfx_open(path, SFS_OPEN_CREATE | SFS_OPEN_READONLY, &s));
	IS(SFS_INVALID, tfx_open(path, 1u << 20, &s));
	IS(SFS_INVALID, sfs_store_open(NULL, &s, NULL));
	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = SFS_OPEN_CREATE;
	/* neither key nor PLAINTEXT */
	IS(SFS_INVALID, sfs_store_open(&o, &s, NULL));
	IS(SFS_INVALID, sfs_store_open(&o, NULL, NULL));
	o.flags |= SFS_OPEN_PLAINTEXT;
	o.busy_timeout_ms = -1;
	IS(SFS_INVALID, sfs_store_open(&o, &s, NULL));
	o.busy_timeout_ms = 0;
	o.lease_ms = -5;
	IS(SFS_INVALID, sfs_store_open(&o, &s, NULL));
	/* a default lease over 100 years, as a claim's own: 300 years as ns
	 * left int64, and every claim with the default was lost at once */
	o.lease_ms = INT64_C(1000) * 3600 * 24 * 365 * 300;
	IS(SFS_INVALID, sfs_store_open(&o, &s, NULL));
	o.db = "";
	o.lease_ms = 0;
	IS(SFS_INVALID, sfs_store_open(&o, &s, NULL));
	/* CREATE makes missing parents; the file is private */
	snprintf(path, sizeof(path), "%s/a/b/new.db", t->dir);
	OK(tfx_open(path, SFS_OPEN_CREATE | SFS_OPEN_EXCL, &s));
	if (tfx_postgres()) {
		/* the store goes by its connection string and schema */
		assert_non_null(strstr(path_of(s, &in), " schema=t"));
		sfs_store_close(s);
		sfs_store_close(NULL);
		return;
	}
	assert_string_equal(path_of(s, &in), path);
	assert_string_equal(in.backend, "sqlite");
	assert_string_equal(in.file, path);
	sfs_store_close(s);
	{
		struct stat sb;

		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}
	sfs_store_close(NULL);
}

static void test_open_not_a_store(void **state)
{
	tfx *t = *state;
	char path[400];
	sqlite3 *db;
	sfs_store *s;
	FILE *f;

	tfx_sqlite_only("files that are not stores (test_pg: a schema holding"
	                " someone else's tables)");
	snprintf(path, sizeof(path), "%s/text.db", t->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not a database, just some text of a few bytes\n", f);
	fclose(f);
	IS(SFS_FORMAT, tfx_open(path, 0, &s));
	/* someone else's SQLite database is refused, not modified */
	snprintf(path, sizeof(path), "%s/foreign.db", t->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t"
	                              " VALUES (1)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	if (tfx_encrypted())
		IS(SFS_NOTENCRYPTED, tfx_open(path, 0, &s));
	else
		IS(SFS_FORMAT, tfx_open(path, 0, &s));
}

/* An error about a long path keeps its end, which says what went wrong:
 * the detail was cut at 512 bytes, in the path (helper-39's find). */
static void test_long_path_detail(void **state)
{
	tfx *t = *state;
	char path[6000];
	sfs_store *s;
	int n;

	tfx_sqlite_only("a path (PostgreSQL's store is a database)");
	n = snprintf(path, sizeof(path), "%s/", t->dir);
	memset(path + n, 'a', 5000);
	strcpy(path + n + 5000, ".db");
	assert_int_not_equal(tfx_open(path, 0, &s), SFS_OK);
	assert_true(strlen(sfs_errdetail()) < 512);
	assert_non_null(strstr(sfs_errdetail(), "[...]"));
	assert_non_null(strstr(sfs_errdetail(), "too long"));
}

/* A rekey killed before its rename leaves PATH.rekey, in plaintext when
 * it was decrypting: the next read-write open removes it (helper-40's
 * find: it stayed until the next rekey); a read-only one does not. */
static void test_rekey_leftover_removed(void **state)
{
	tfx *t = *state;
	char path[400], left[420], journal[440];
	sfs_store *s;
	FILE *f;

	tfx_sqlite_only("a file beside the store");
	snprintf(path, sizeof(path), "%s/left.db", t->dir);
	snprintf(left, sizeof(left), "%s.rekey", path);
	snprintf(journal, sizeof(journal), "%s-journal", left);
	OK(tfx_open_file(path, SFS_OPEN_CREATE, &s));
	sfs_store_close(s);
	for (int i = 0; i < 2; i++) {
		f = fopen(i ? journal : left, "w");
		assert_non_null(f);
		fputs("plaintext of a rekey --decrypt that was killed\n", f);
		fclose(f);
	}
	OK(tfx_open_file(path, SFS_OPEN_READONLY, &s));
	sfs_store_close(s);
	assert_int_equal(access(left, F_OK), 0);
	OK(tfx_open_file(path, 0, &s));
	assert_int_not_equal(access(left, F_OK), 0);
	assert_int_not_equal(access(journal, F_OK), 0);
	sfs_store_close(s);
}

/* Encrypted stores: the key decides. */
static void test_open_keys(void **state)
{
	tfx *t = *state;
	sfs_config o;
	sfs_key *other;
	sfs_store *s;
	char *db;

	if (!tfx_encrypted())
		skip();
	sfs_store_close(t->s);
	t->s = NULL;
	memset(&o, 0, sizeof(o));
	db = tfx_db(t->path);
	o.db = db;
	o.flags = SFS_OPEN_PLAINTEXT;
	IS(SFS_NOKEY, sfs_store_open(&o, &s, NULL));
	OK(sfs_key_generate(&other));
	o.flags = 0;
	o.key = other;
	IS(SFS_WRONGKEY, sfs_store_open(&o, &s, NULL));
	assert_non_null(strstr(sfs_errdetail(), "wrong key: the key given does"
	                       " not open"));
	sfs_key_destroy(other);
	free(db);
	OK(tfx_open(t->path, 0, &t->s));
}

static void test_memory_store(void **state)
{
	sfs_config o;
	sfs_info in;
	sfs_store *s, *s2;
	sfs_buf b;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.db = ":memory:";
	/* no key needed: nothing reaches a disk */
	OK(sfs_store_open(&o, &s, NULL));
	OK(sfs_store_open(&o, &s2, NULL));
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "v");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_kv_get(s2, S("s"), S("n"), S("k"), &b));
	OK(sfs_store_sync(s));
	assert_string_equal(path_of(s, &in), ":memory:");
	assert_null(in.file); /* no file: nothing on a disk to measure */
	sfs_store_close(s);
	sfs_store_close(s2);
}

static void test_readonly(void **state)
{
	tfx *t = *state;
	sfs_store *ro;
	sfs_buf b;
	sfs_list l;
	int64_t v;

	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	OK(tfx_open(t->path, SFS_OPEN_READONLY, &ro));
	OK(sfs_kv_get(ro, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "v");
	sfs_buf_free(&b);
	IS(SFS_READONLY, sfs_kv_put(ro, S("s"), S("n"), S("k"), S("w")));
	IS(SFS_READONLY, sfs_counter_add(ro, S("s"), S("n"), S("k"), 1, &v));
	IS(SFS_READONLY, sfs_queue_pop(ro, S("q"), 1, &l));
	/* a read-only handle sees other handles' later commits */
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k2"), S("w")));
	OK(sfs_kv_get(ro, S("s"), S("n"), S("k2"), &b));
	tfx_buf(&b, "w");
	sfs_buf_free(&b);
	sfs_store_close(ro);
}

/* Whether calls run at once: PostgreSQL's do, SQLite's one at a time. */
static void test_concurrent(void **state)
{
	tfx *t = *state;

	assert_int_equal(sfs_store_concurrent(t->s), tfx_postgres());
	assert_int_equal(sfs_store_concurrent(NULL), 0);
}

static void test_version(void **state)
{
	tfx *t = *state;
	uint64_t v0, v1, v2, v3;
	sfs_store *other;
	sfs_buf b;

	OK(sfs_store_version(t->s, &v0));
	OK(sfs_store_version(t->s, &v1));
	assert_int_equal(v0, v1);
	/* reads and no-op writes change nothing */
	IS(SFS_NOTFOUND, sfs_kv_get(t->s, S("s"), S("n"), S("k"), &b));
	IS(SFS_NOTFOUND, sfs_kv_delete(t->s, S("s"), S("n"), S("k")));
	OK(sfs_store_version(t->s, &v1));
	assert_int_equal(v0, v1);
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_store_version(t->s, &v2));
	assert_true(v2 != v1);
	/* another handle's commit (another connection, as another process) */
	OK(tfx_open(t->path, 0, &other));
	if (tfx_postgres()) {
		/* There the counter follows pushes from anywhere (a
		 * notification, received by another thread: wait for it). */
		sfs_slice it = S("i");

		OK(sfs_queue_push(other, S("q"), &it, 1, NULL));
		for (int i = 0; i < 3000; i++) {
			OK(sfs_store_version(t->s, &v3));
			if (v3 != v2)
				break;
			usleep(10000);
		}
	} else {
		OK(sfs_counter_add(other, S("s"), S("n"), S("c"), 1, NULL));
		OK(sfs_store_version(t->s, &v3));
	}
	assert_true(v3 != v2);
	sfs_store_close(other);
	IS(SFS_INVALID, sfs_store_version(t->s, NULL));
}

/* The default store: what sfs_config_resolve names when cfg names none. */
static int default_path(char **p)
{
	sfs_config cfg = { .flags = SFS_OPEN_PLAINTEXT };
	sfs_key *k = NULL;
	int rc = sfs_config_resolve(&cfg, p, &k, NULL);

	assert_null(k);
	return rc;
}

static void test_default_path(void **state)
{
	char *saved_x = getenv("XDG_STATE_HOME"), *saved_h = getenv("HOME");
	char *x = saved_x ? strdup(saved_x) : NULL;
	char *h = saved_h ? strdup(saved_h) : NULL;
	sfs_config cfg = { .flags = SFS_OPEN_PLAINTEXT };
	sfs_key *k = NULL;
	char *p;

	(void)state;
	setenv("XDG_STATE_HOME", "/xdg/state", 1);
	OK(default_path(&p));
	assert_string_equal(p, "/xdg/state/statefs/state.db");
	free(p);
	setenv("XDG_STATE_HOME", "relative/ignored", 1);
	setenv("HOME", "/home/u", 1);
	OK(default_path(&p));
	assert_string_equal(p, "/home/u/.local/state/statefs/state.db");
	free(p);
	unsetenv("XDG_STATE_HOME");
	OK(default_path(&p));
	assert_string_equal(p, "/home/u/.local/state/statefs/state.db");
	free(p);
	/* HOME unset: the passwd entry's home, read without touching the
	 * entry getpwuid hands the embedding program (the library used
	 * getpwuid, whose static buffer it overwrote: the caller's "nobody"
	 * became the user running the test) */
	unsetenv("HOME");
	{
		struct passwd *mine = getpwnam("nobody");
		uid_t nobody = mine ? mine->pw_uid : geteuid();
		struct passwd *me = getpwuid(geteuid());
		char *home = me ? strdup(me->pw_dir) : NULL;

		mine = getpwuid(nobody);
		if (mine && home && geteuid() != nobody) {
			OK(default_path(&p));
			assert_non_null(strstr(p, home));
			free(p);
			assert_string_equal(mine->pw_name, "nobody");
		}
		free(home);
	}
	IS(SFS_INVALID, sfs_config_resolve(&cfg, NULL, &k, NULL));
	if (x)
		setenv("XDG_STATE_HOME", x, 1);
	if (h)
		setenv("HOME", h, 1);
	else
		unsetenv("HOME");
	free(x);
	free(h);
}

/* A successful call is committed: a child that writes and then dies
 * without closing leaves its writes behind. */
static void test_commit_survives_crash(void **state)
{
	tfx *t = *state;
	int64_t v = 0;
	sfs_buf b;
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sfs_store *s;

		if (tfx_open(t->path, 0, &s) != SFS_OK ||
		    sfs_kv_put(s, S("c"), S("n"), S("k"), S("kept")) != SFS_OK ||
		    sfs_counter_add(s, S("c"), S("n"), S("k"), 9, NULL) != SFS_OK)
			_exit(3);
		abort(); /* no close, no checkpoint */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	OK(sfs_kv_get(t->s, S("c"), S("n"), S("k"), &b));
	tfx_buf(&b, "kept");
	sfs_buf_free(&b);
	OK(sfs_counter_get(t->s, S("c"), S("n"), S("k"), &v, NULL));
	assert_int_equal(v, 9);
	OK(sfs_store_sync(t->s));
}

/* The SDK's DDL and statements, verbatim (vgi/function_storage_sqlite.go). */
static const char sdk_schema[] =
	"PRAGMA busy_timeout=30000; PRAGMA journal_mode=WAL;"
	"CREATE TABLE IF NOT EXISTS work_queue (id INTEGER PRIMARY KEY"
	" AUTOINCREMENT, execution_id BLOB NOT NULL, work_item BLOB NOT NULL);"
	"CREATE INDEX IF NOT EXISTS idx_work_queue_execution ON"
	" work_queue(execution_id, id);"
	"CREATE TABLE IF NOT EXISTS function_state (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));"
	"CREATE TABLE IF NOT EXISTS function_state_log (id INTEGER PRIMARY KEY"
	" AUTOINCREMENT, scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT"
	" NULL, value BLOB NOT NULL);"
	"CREATE INDEX IF NOT EXISTS idx_function_state_log_lookup ON"
	" function_state_log(scope_id, ns, key, id);"
	"CREATE TABLE IF NOT EXISTS function_counter (scope_id BLOB NOT NULL,"
	" ns BLOB NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,"
	" PRIMARY KEY (scope_id, ns, key));";

static void sdk_exec(sqlite3 *db, const char *sql, const void *a, int na,
                     const void *b, int nb, const void *c, int nc,
                     const void *d, int nd)
{
	sqlite3_stmt *st;
	int rc;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (a)
		sqlite3_bind_blob(st, 1, a, na, SQLITE_STATIC);
	if (b)
		sqlite3_bind_blob(st, 2, b, nb, SQLITE_STATIC);
	if (c)
		sqlite3_bind_blob(st, 3, c, nc, SQLITE_STATIC);
	if (d)
		sqlite3_bind_blob(st, 4, d, nd, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	assert_int_equal(rc, SQLITE_DONE);
	sqlite3_finalize(st);
}

static void test_go_sdk_store_opens(void **state)
{
	tfx *t = *state;
	unsigned char wid[8];
	char path[400];
	sqlite3 *db;
	sfs_store *s;
	sfs_buf b;
	sfs_list l;
	sfs_stat st = { .mtime_ns = -1 };
	int64_t v;

	tfx_sqlite_only("the Go SDK's SQLite file (test_pg: a schema the SDK's"
	                " four tables were created in opens)");
	snprintf(path, sizeof(path), "%s/go.db", t->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sdk_schema, NULL, NULL, NULL),
	                 SQLITE_OK);
	sfs_id_encode(4242, wid);
	sdk_exec(db, "INSERT OR REPLACE INTO function_state (scope_id, ns, key,"
	         " value) VALUES (?, ?, ?, ?)", "exec", 4, "worker", 6, wid, 8,
	         "wstate", 6);
	sdk_exec(db, "INSERT OR REPLACE INTO function_state (scope_id, ns, key,"
	         " value) VALUES (?, ?, ?, ?)", "att", 3, "cur", 3, "k", 1,
	         "42", 2);
	sdk_exec(db, "INSERT INTO function_counter (scope_id, ns, key, n) VALUES"
	         " (?, ?, ?, 5) ON CONFLICT(scope_id, ns, key) DO UPDATE SET"
	         " n = n + excluded.n RETURNING n", "att", 3, "c", 1, "k", 1,
	         NULL, 0);
	sdk_exec(db, "INSERT INTO function_state_log (scope_id, ns, key, value)"
	         " VALUES (?, ?, ?, ?)", "exec", 4, "log", 3, "k", 1, "entry", 5);
	sdk_exec(db, "INSERT INTO work_queue (execution_id, work_item) VALUES"
	         " (?, ?)", "exec", 4, "item", 4, NULL, 0, NULL, 0);
	sqlite3_close(db);

	if (tfx_encrypted()) {
		/* A key for a plaintext store is refused, not used. */
		IS(SFS_NOTENCRYPTED, tfx_open(path, 0, &s));
		return;
	}
	/* Read-only first: nothing may be added to the file. */
	OK(tfx_open(path, SFS_OPEN_READONLY, &s));
	OK(sfs_kv_get(s, S("att"), S("cur"), S("k"), &b));
	tfx_buf(&b, "42");
	sfs_buf_free(&b);
	OK(sfs_kv_stat(s, S("att"), S("cur"), S("k"), &st));
	assert_int_equal(st.mtime_ns, 0); /* the SDK keeps no times */
	sfs_store_close(s);

	OK(tfx_open(path, 0, &s));
	OK(sfs_kv_scan(s, S("exec"), S(SFS_NS_WORKER), NULL, &l));
	assert_int_equal(l.n, 1);
	OK(sfs_id_decode(sfs_bytes(l.items[0].key.ptr, l.items[0].key.len),
	                 &v));
	assert_int_equal(v, 4242);
	tfx_buf(&l.items[0].value, "wstate");
	sfs_list_free(&l);
	OK(sfs_counter_add(s, S("att"), S("c"), S("k"), 1, &v));
	assert_int_equal(v, 6);
	OK(sfs_log_scan(s, S("exec"), S("log"), S("k"), -1, 0, 0, &l));
	assert_int_equal(l.n, 1);
	assert_int_equal(l.items[0].id, 1);
	assert_int_equal(l.items[0].st.mtime_ns, 0);
	sfs_list_free(&l);
	OK(sfs_log_append(s, S("exec"), S("log"), S("k"), S("mine"), &v));
	assert_int_equal(v, 2);
	OK(sfs_queue_pop(s, S("exec"), 1, &l));
	tfx_buf(&l.items[0].value, "item");
	sfs_list_free(&l);
	sfs_store_close(s);
}

/* The TypeScript SDK creates three of the four tables (no counters): a
 * read-only open shows what it holds and adds nothing; a writable one adds
 * the missing table. */
static void test_ts_sdk_store_opens(void **state)
{
	tfx *t = *state;
	unsigned char le[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	char path[400];
	sqlite3 *db;
	sfs_store *s;
	sfs_buf b;
	int64_t v;

	tfx_sqlite_only("the TypeScript SDK's SQLite file (test_pg: a schema"
	                " the SDK's tables were created in opens)");
	if (tfx_encrypted())
		return; /* an SDK's own store is plaintext */
	snprintf(path, sizeof(path), "%s/ts.db", t->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	        "PRAGMA journal_mode=WAL;"
	        "CREATE TABLE IF NOT EXISTS work_queue (id INTEGER PRIMARY KEY"
	        " AUTOINCREMENT, execution_id BLOB NOT NULL, work_item BLOB NOT"
	        " NULL);"
	        "CREATE TABLE IF NOT EXISTS function_state (scope_id BLOB NOT"
	        " NULL, ns BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL,"
	        " PRIMARY KEY (scope_id, ns, key));"
	        "CREATE TABLE IF NOT EXISTS function_state_log (id INTEGER"
	        " PRIMARY KEY AUTOINCREMENT, scope_id BLOB NOT NULL, ns BLOB NOT"
	        " NULL, key BLOB NOT NULL, value BLOB NOT NULL);",
	        NULL, NULL, NULL), SQLITE_OK);
	sdk_exec(db, "INSERT OR REPLACE INTO function_state (scope_id, ns, key,"
	         " value) VALUES (?, ?, ?, ?)", "exec", 4, "_vgi/buffering_init",
	         19, le, 8, "init", 4);
	sqlite3_close(db);

	OK(tfx_open(path, SFS_OPEN_READONLY, &s));
	OK(sfs_kv_get(s, S("exec"), S("_vgi/buffering_init"),
	              sfs_bytes(le, 8), &b));
	tfx_buf(&b, "init");
	sfs_buf_free(&b);
	IS(SFS_NOTFOUND, sfs_counter_get(s, S("exec"), S("n"), S("k"), &v,
	                                 NULL));
	sfs_store_close(s);
	{
		sqlite3_stmt *st;

		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM"
		        " sqlite_schema WHERE name NOT IN ('work_queue',"
		        " 'function_state', 'function_state_log')"
		        " AND name NOT LIKE 'sqlite%'", -1, &st, NULL),
		        SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(st, 0), 0);
		sqlite3_finalize(st);
		sqlite3_close(db);
	}

	OK(tfx_open(path, 0, &s));
	OK(sfs_counter_add(s, S("exec"), S("n"), S("k"), 2, &v));
	assert_int_equal(v, 2);
	sfs_store_close(s);
}

/* What a Go worker sees of our plaintext store: its own statements work. */
/* Reads a whole file into a malloc'd buffer (*n bytes); NULL if missing. */
static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = NULL;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	p = malloc((size_t)len + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* path and path-wal hold exactly what was saved. */
static void unchanged(const char *path, const unsigned char *db, size_t ndb,
                      const unsigned char *wal, size_t nwal)
{
	char w[512];
	unsigned char *p;
	size_t n;

	p = slurp(path, &n);
	assert_true(p && n == ndb && !memcmp(p, db, n));
	free(p);
	snprintf(w, sizeof(w), "%s-wal", path);
	p = slurp(w, &n);
	assert_true(p && n == nwal && !memcmp(p, wal, n));
	free(p);
}

/* A store made the way SQLite makes any database in WAL mode (the Go
 * SDK's, or statefs before it created its tables first): page 1 in the
 * file, the tables and rows only in the write-ahead log, which is kept
 * (no checkpoint at close). Through the encrypting VFS when the tests run
 * encrypted. */
static void wal_only_store(const char *path)
{
	crypt_vfs *v = NULL;
	sqlite3 *db;

	if (tfx_encrypted())
		OK(crypt_vfs_open(tfx_key(), &v));
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	                                 SQLITE_OPEN_CREATE,
	                                 v ? crypt_vfs_name(v) : NULL),
	                 SQLITE_OK);
	if (v)
		OK(crypt_db_setup(db));
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	assert_int_equal(sqlite3_exec(db, sdk_schema, NULL, NULL, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO function_state VALUES"
	                              " (x'73', x'6e', x'6b', x'76')", NULL,
	                              NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	crypt_vfs_close(v);
}

/* Issue 10 item 8: an existing file that is not a valid store is refused,
 * never reformatted, and what is left of it (its write-ahead log) stays as
 * it was. Only an empty file is a store not made yet. */
static void test_open_never_reformats(void **state)
{
	tfx *t = *state;
	char path[400], wal[420];
	unsigned char *db, *lg, b8;
	size_t ndb, nlg;
	sfs_store *s;
	sfs_buf b;
	int fd;

	tfx_sqlite_only("files and write-ahead logs that are not stores"
	                " (test_pg: a schema holding other tables)");
	/* An empty file: a store not made yet (nothing to lose), made by the
	 * first read-write open. */
	snprintf(path, sizeof(path), "%s/empty.db", t->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_READONLY, &s));
	OK(tfx_open(path, 0, &s));
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	sfs_store_close(s);

	/* A store whose tables were only in its write-ahead log, and the log
	 * damaged (its header: SQLite then ignores the whole log): the file
	 * has page 1 and no tables. Refused, read-write and read-only, and
	 * neither file changes; with the log repaired it opens with its row. */
	snprintf(path, sizeof(path), "%s/lost.db", t->dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	wal_only_store(path);
	fd = open(wal, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b8, 1, 17), 1);
	b8 ^= 0x40;
	assert_int_equal(pwrite(fd, &b8, 1, 17), 1);
	db = slurp(path, &ndb);
	lg = slurp(wal, &nlg);
	assert_true(db && lg && ndb > 0 && nlg > 32);
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_CREATE, &s));
	assert_non_null(strstr(sfs_errdetail(), "no tables"));
	unchanged(path, db, ndb, lg, nlg);
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_READONLY, &s));
	unchanged(path, db, ndb, lg, nlg);
	b8 ^= 0x40;
	assert_int_equal(pwrite(fd, &b8, 1, 17), 1);
	close(fd);
	OK(tfx_open(path, 0, &s));
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "v");
	sfs_buf_free(&b);
	sfs_store_close(s);

	/* A store file cut to nothing while its log still holds frames. */
	snprintf(path, sizeof(path), "%s/cut.db", t->dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	wal_only_store(path);
	assert_int_equal(truncate(path, 0), 0);
	free(lg);
	lg = slurp(wal, &nlg);
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_CREATE, &s));
	assert_non_null(strstr(sfs_errdetail(), "write-ahead log"));
	unchanged(path, (const unsigned char *)"", 0, lg, nlg);

	/* Someone else's database that has pages but no tables. */
	if (!tfx_encrypted()) {
		sqlite3 *x;

		snprintf(path, sizeof(path), "%s/notables.db", t->dir);
		assert_int_equal(sqlite3_open(path, &x), SQLITE_OK);
		assert_int_equal(sqlite3_exec(x, "PRAGMA user_version=7", NULL,
		                              NULL, NULL), SQLITE_OK);
		sqlite3_close(x);
		free(db);
		db = slurp(path, &ndb);
		IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_CREATE, &s));
		assert_non_null(strstr(sfs_errdetail(), "no tables"));
		free(lg);
		lg = slurp(path, &nlg);
		assert_true(nlg == ndb && !memcmp(lg, db, ndb));
	}
	free(db);
	free(lg);
}

/* An empty file that a read-write open makes a store in is made private
 * before anything is written to it, as a new file is: with or without
 * SFS_OPEN_CREATE (statectl's put opens without it), and its -wal and
 * -shm follow. A read-only open makes nothing and changes no mode. */
static void test_empty_file_made_private(void **state)
{
	static const unsigned flags[] = { 0, SFS_OPEN_CREATE };
	tfx *t = *state;
	char path[400], aux[420];
	struct stat sb;
	sfs_store *s;
	int fd;

	tfx_sqlite_only("a store in a local file");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		snprintf(path, sizeof(path), "%s/touched%zu.db", t->dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, 0664), 0); /* umask 002's touch */
		close(fd);
		IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_READONLY, &s));
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0664);
		OK(tfx_open(path, flags[i], &s));
		OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("secret")));
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
		snprintf(aux, sizeof(aux), "%s-wal", path);
		assert_int_equal(stat(aux, &sb), 0);
		assert_int_equal(sb.st_mode & 0077, 0);
		sfs_store_close(s);
	}
}

/* A FIFO named as a store, or as a checkpoint to restore, is refused as
 * not a regular file, at once: opening it to read would wait for a
 * writer that never comes. The alarm fails the test where it would
 * hang. */
static void test_fifo_refused(void **state)
{
	tfx *t = *state;
	char path[400];
	sfs_store *s;

	tfx_sqlite_only("a store in a local file");
	snprintf(path, sizeof(path), "%s/fifo.db", t->dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(60);
	IS(SFS_FORMAT, sfs_store_exists(path));
	assert_non_null(strstr(sfs_errdetail(), "not a regular file"));
	IS(SFS_FORMAT, tfx_open(path, 0, &s));
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_READONLY, &s));
	IS(SFS_FORMAT, tfx_open(path, SFS_OPEN_CREATE, &s));
	IS(SFS_FORMAT, sfs_restore(t->s, path, NULL, NULL));
	assert_non_null(strstr(sfs_errdetail(), "not a regular file"));
	if (tfx_encrypted())
		IS(SFS_FORMAT, sfs_rekey(path, tfx_key(), NULL, NULL, NULL));
	alarm(0);
}

/* A store opened by a relative path stays the file that path named when
 * the process changes its working directory afterwards (the daemon,
 * detached, goes to "/"): the files beside it (the reserve, the -wal, the
 * directory to fsync) and what info and verify read are found from an
 * absolute path taken at open. */
static void test_relative_path(void **state)
{
	tfx *t = *state;
	char *cwd, *real, want[PATH_MAX + 16], other[400];
	sfs_store *s;
	sfs_info in;
	struct stat sb;

	tfx_sqlite_only("a store in a local file");
	cwd = getcwd(NULL, 0);
	real = realpath(t->dir, NULL);
	assert_true(cwd && real);
	snprintf(want, sizeof(want), "%s/rel.db", real);
	snprintf(other, sizeof(other), "%s/elsewhere", t->dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(chdir(t->dir), 0);
	OK(tfx_open("rel.db", SFS_OPEN_CREATE, &s));
	assert_int_equal(chdir(other), 0);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_store_info(s, &in));
	assert_string_equal(in.path, "rel.db");    /* as the caller named it */
	assert_non_null(in.file);
	assert_string_equal(in.file, want);
	assert_int_equal(stat(want, &sb), 0);
	assert_true(in.size >= (uint64_t)sb.st_size && sb.st_size > 0);
	OK(sfs_store_sync(s));
	OK(sfs_store_verify(s, NULL, NULL));
	sfs_store_close(s);
	snprintf(want, sizeof(want), "%s/rel.db-reserve", real);
	assert_int_equal(stat(want, &sb), 0);
	snprintf(want, sizeof(want), "%s/rel.db-reserve", other);
	assert_int_not_equal(stat(want, &sb), 0);
	assert_int_equal(chdir(cwd), 0);
	free(cwd);
	free(real);
}

static void test_go_sdk_reads_ours(void **state)
{
	tfx *t = *state;
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc;

	tfx_sqlite_only("the Go SDK's SQLite statements (test_pg: its"
	                " statements on our PostgreSQL tables)");
	OK(sfs_kv_put(t->s, S("att"), S("cur"), S("k"), S("ours")));
	OK(sfs_counter_add(t->s, S("att"), S("c"), S("k"), 11, NULL));
	rc = sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READWRITE, NULL);
	assert_int_equal(rc, SQLITE_OK);
	rc = sqlite3_exec(db, sdk_schema, NULL, NULL, NULL);
	if (tfx_encrypted()) {
		assert_int_equal(rc, SQLITE_NOTADB);
		sqlite3_close(db);
		return;
	}
	assert_int_equal(rc, SQLITE_OK); /* its CREATE IF NOT EXISTS: no-ops */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM function_state"
	                 " WHERE scope_id = ? AND ns = ? AND key = ?", -1, &st,
	                 NULL), SQLITE_OK);
	sqlite3_bind_blob(st, 1, "att", 3, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, "cur", 3, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, "k", 1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_bytes(st, 0), 4);
	assert_memory_equal(sqlite3_column_blob(st, 0), "ours", 4);
	assert_int_equal(sqlite3_column_type(st, 0), SQLITE_BLOB);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The sqlite3 command-line tool shows the SDK's four tables with their
 * columns on a plaintext store we created. */
static void test_sqlite3_cli(void **state)
{
	tfx *t = *state;
	char cmd[1024], out[4096];
	size_t n;
	FILE *p;

	tfx_sqlite_only("the sqlite3 tool (test_pg: psql's view of the"
	                " schema)");
	OK(sfs_kv_put(t->s, S("s"), S("n"), S("k"), S("v")));
	snprintf(cmd, sizeof(cmd), "sqlite3 -batch '%s' \"SELECT m.name || ':' "
	         "|| group_concat(c.name, ',') FROM sqlite_schema m, "
	         "pragma_table_info(m.name) c WHERE m.type='table' AND m.name IN "
	         "('function_state','function_state_log','function_counter',"
	         "'work_queue') GROUP BY m.name ORDER BY m.name; SELECT name FROM "
	         "sqlite_schema WHERE type='index' AND name LIKE 'idx%%' ORDER BY "
	         "name;\" 2>&1", t->path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	pclose(p);
	if (tfx_encrypted()) {
		assert_non_null(strstr(out, "not a database"));
		return;
	}
	assert_string_equal(out,
	        "function_counter:scope_id,ns,key,n\n"
	        "function_state:scope_id,ns,key,value\n"
	        "function_state_log:id,scope_id,ns,key,value\n"
	        "work_queue:id,execution_id,work_item\n"
	        "idx_function_state_log_lookup\n"
	        "idx_work_queue_execution\n");
}

/* Handle used after the data changed under it by another connection. */
static void test_two_handles(void **state)
{
	tfx *t = *state;
	sfs_store *other;
	sfs_buf b;

	OK(tfx_open(t->path, 0, &other));
	OK(sfs_kv_put(other, S("s"), S("n"), S("k"), S("from-other")));
	OK(sfs_kv_get(t->s, S("s"), S("n"), S("k"), &b));
	tfx_buf(&b, "from-other");
	sfs_buf_free(&b);
	sfs_store_close(other);
}

/* A child forked while the parent has the store open opens a handle of
 * its own, as statefs.h says to: its commits stay when the parent then
 * closes its handles (a last close by another process). Before, SQLite's
 * record of the parent's locks, inherited, made the child's connection
 * take none of its own, the parent's close took the store's exclusive
 * lock and deleted the write-ahead log under the child, and its later
 * commits, each SFS_OK, were lost (20 of 20 here). The parent's second
 * handle has the checkpoint thread (SFS_OPEN_WAL_THREAD), which is not in
 * the child. A call on an inherited handle fails with SFS_INVALID: it
 * used to run on the inherited connection (commits, each SFS_OK, lost at
 * the parent's close as above: 4 children's 2,000 adds ended at 1,509)
 * or, once the child's own open had let go of it, fail with SFS_INTERNAL
 * ("API misuse"). */
static void test_fork_child_opens(void **state)
{
	tfx *t = *state;
	int go[2], done[2], st;
	sfs_store *w;
	sfs_list l;
	char c = 0;
	pid_t pid;

	OK(tfx_open(t->path, SFS_OPEN_WAL_THREAD, &w));
	OK(sfs_kv_put(t->s, S("f"), S("n"), S("parent"), S("1")));
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sfs_store *s;
		char k[32];

		/* a parent that fails before "g": EOF, not a child left
		 * waiting (and holding the test's output open) */
		close(go[1]);
		close(done[0]);
		/* the inherited handles are refused, before the child's
		 * own open and after it (let go of: no connection) */
		if (sfs_kv_put(t->s, S("f"), S("n"), S("inh"), S("1")) !=
		    SFS_INVALID || !strstr(sfs_errdetail(), "fork()"))
			_exit(5);
		if (tfx_open(t->path, 0, &s) != SFS_OK ||
		    sfs_counter_add(w, S("f"), S("n"), S("c"), 1, NULL) !=
		    SFS_INVALID ||
		    sfs_kv_put(s, S("f"), S("n"), S("before"), S("1")) != SFS_OK ||
		    write(done[1], "o", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		for (int i = 0; i < 20; i++) {
			snprintf(k, sizeof(k), "after%d", i);
			if (sfs_kv_put(s, S("f"), S("n"), S(k), S("1")) != SFS_OK)
				_exit(4);
		}
		sfs_store_close(s);
		sfs_store_close(w); /* inherited, let go of: frees only */
		_exit(0);
	}
	close(done[1]); /* a child that fails before it writes: EOF */
	assert_int_equal(read(done[0], &c, 1), 1);
	sfs_store_close(w);
	sfs_store_close(t->s); /* the last handle of this process */
	t->s = NULL;
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	OK(tfx_open(t->path, 0, &t->s));
	OK(sfs_kv_scan(t->s, S("f"), S("n"), NULL, &l));
	assert_int_equal(l.n, 22);
	sfs_list_free(&l);
	close(go[0]);
	close(go[1]);
	close(done[0]);
}

/* A child forked while the parent holds writes (a transaction open) cannot
 * let go of the inherited handle: its open of a SQLite store fails with
 * SFS_UNSUPPORTED rather than give it a connection that locks nothing,
 * every time (it was SFS_BUSY, "retry", which never succeeded), and its
 * sfs_store_close of the inherited handle leaves it alone (a rollback
 * would write the log's index the parent is using). On PostgreSQL
 * nothing is held and the open works. */
static void test_fork_held_writes(void **state)
{
	tfx *t = *state;
	int st, want = tfx_postgres() ? 0 : SFS_UNSUPPORTED;
	sfs_buf b;
	pid_t pid;

	OK(sfs_store_hold(t->s, 1));
	OK(sfs_kv_put(t->s, S("f"), S("n"), S("held"), S("1")));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sfs_store *s = NULL;
		int rc = tfx_open(t->path, 0, &s);

		/* the sentence says it is for good, and what to do */
		if (rc == SFS_UNSUPPORTED &&
		    (!strstr(sfs_errdetail(), "now or later") ||
		     !strstr(sfs_errdetail(), "exec") ||
		     tfx_open(t->path, 0, &s) != SFS_UNSUPPORTED))
			_exit(9);
		if (rc == SFS_OK)
			sfs_store_close(s);
		sfs_store_close(t->s); /* in use at the fork: left alone */
		_exit(rc == want ? 0 : 10 + rc);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	OK(sfs_store_commit(t->s));
	OK(sfs_store_hold(t->s, 0));
	OK(sfs_kv_get(t->s, S("f"), S("n"), S("held"), &b));
	tfx_buf(&b, "1");
	sfs_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_open_flags),
		T(test_open_not_a_store),
		T(test_long_path_detail),
		T(test_rekey_leftover_removed),
		T(test_open_keys),
		T(test_memory_store),
		T(test_readonly),
		T(test_concurrent),
		T(test_version),
		T(test_default_path),
		T(test_commit_survives_crash),
		T(test_go_sdk_store_opens),
		T(test_ts_sdk_store_opens),
		T(test_open_never_reformats),
		T(test_empty_file_made_private),
		T(test_fifo_refused),
		T(test_relative_path),
		T(test_go_sdk_reads_ours),
		T(test_sqlite3_cli),
		T(test_two_handles),
		T(test_fork_child_opens),
		T(test_fork_held_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
