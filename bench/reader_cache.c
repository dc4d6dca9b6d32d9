/*
 * reader_cache.c - what a read costs on a second SQLite connection of the
 * same process while the first one commits: the question behind giving a
 * store handle read connections beside its writing one (docs/engine.md,
 * "Concurrency"; docs/performance-rounds.md, "Eight writers").
 *
 * One WAL database on a tmpfs, KEYS rows of 100 bytes keyed (scope, ns,
 * key) in 8 namespaces, as a mount's writers leave them. Two connections:
 * the writer and a reader. Each pass looks up READS random keys, one
 * point read each (what a LOOKUP or GETATTR asks of the engine):
 *   writer, commits   on the writing connection, one commit of a new row
 *                     before each read (the mount under writers today)
 *   reader, quiet     on the second connection, nothing committed between
 *   reader, commits   on the second connection, one commit on the writer
 *                     before each read (the mount with read connections)
 * and prints, per read, the pages the reading connection loaded into its
 * cache (SQLITE_DBSTATUS_CACHE_MISS: each one a pread from the WAL or the
 * database file, and on an encrypted store a page opened, crypt_bench's
 * cost per page) and the microseconds it took (noise on a busy machine;
 * the pages are not).
 *
 * SQLite keeps a connection's page cache across transactions only while
 * the WAL has not changed under it: a read transaction that finds a commit
 * by any other connection drops the whole cache (pager.c,
 * pagerBeginReadTransaction), and the writing connection's own commits do
 * not count. So a reader beside a busy writer reads every page it needs
 * anew.
 *
 * Usage: reader_cache [-n KEYS] [-r READS] [-d DIR]
 *   (defaults 20000, 2000, /dev/shm). Exit: 0, or 1 with a sentence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void check(sqlite3 *db, int rc, const char *what)
{
	if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
		return;
	fprintf(stderr, "reader_cache: %s: %s\n", what,
	        db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
	check(db, sqlite3_exec(db, sql, NULL, NULL, NULL), sql);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	check(db, sqlite3_prepare_v2(db, sql, -1, &st, NULL), sql);
	return st;
}

/* Runs st once with ?1 = ns, ?2 = key, and resets it. */
static void run(sqlite3 *db, sqlite3_stmt *st, const char *ns,
                const char *key)
{
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW)
		;
	check(db, sqlite3_reset(st), "step");
}

static int misses(sqlite3 *db)
{
	int cur = 0, hi = 0;

	sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &cur, &hi, 0);
	return cur;
}

int main(int argc, char **argv)
{
	static const char *const passes[] = {
		"writer, commits", "reader, quiet", "reader, commits",
	};
	const char *dir = "/dev/shm";
	const char *get_sql = "SELECT length(value) FROM kv"
	                      " WHERE scope='s' AND ns=?1 AND key=?2";
	long nkeys = 20000, reads = 2000, added = 0;
	char path[4096], ns[16], key[32];
	sqlite3 *w, *r;
	sqlite3_stmt *put, *get_w, *get_r;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:d:")) != -1) {
		if (opt == 'n')
			nkeys = atol(optarg);
		else if (opt == 'r')
			reads = atol(optarg);
		else if (opt == 'd')
			dir = optarg;
		else
			return fprintf(stderr, "usage: reader_cache [-n KEYS]"
			               " [-r READS] [-d DIR]\n"), 1;
	}
	if (nkeys < 1 || reads < 1)
		return fprintf(stderr, "reader_cache: -n and -r must be"
		               " positive\n"), 1;
	snprintf(path, sizeof(path), "%s/reader_cache.%d.db", dir, (int)getpid());
	check(NULL, sqlite3_open(path, &w), path);
	exec(w, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
	        " CREATE TABLE kv(scope TEXT, ns TEXT, key TEXT, value BLOB,"
	        " PRIMARY KEY(scope, ns, key))");
	put = prepare(w, "INSERT INTO kv VALUES('s', ?1, ?2, zeroblob(100))");
	exec(w, "BEGIN");
	for (long i = 0; i < nkeys; i++) {
		snprintf(ns, sizeof(ns), "w%ld", i % 8);
		snprintf(key, sizeof(key), "f%07ld", i);
		run(w, put, ns, key);
	}
	exec(w, "COMMIT");
	check(NULL, sqlite3_open(path, &r), path);
	get_w = prepare(w, get_sql);
	get_r = prepare(r, get_sql);

	printf("reader_cache: %ld keys, %ld point reads per pass, WAL\n",
	       nkeys, reads);
	printf("%-16s %16s %10s\n", "reads on", "pages loaded/read", "us/read");
	srand(1);
	for (int p = 0; p < 3; p++) {
		sqlite3 *db = p == 0 ? w : r;
		sqlite3_stmt *get = p == 0 ? get_w : get_r;
		int m0 = misses(db);
		double t = 0, t0;

		for (long i = 0; i < reads; i++) {
			long k = rand() % nkeys;

			if (p != 1) {
				snprintf(ns, sizeof(ns), "w%ld", added % 8);
				snprintf(key, sizeof(key), "n%07ld", added++);
				run(w, put, ns, key);
			}
			snprintf(ns, sizeof(ns), "w%ld", k % 8);
			snprintf(key, sizeof(key), "f%07ld", k);
			t0 = now_us();
			run(db, get, ns, key);
			t += now_us() - t0;
		}
		printf("%-16s %16.2f %10.2f\n", passes[p],
		       (double)(misses(db) - m0) / reads, t / reads);
	}
	sqlite3_finalize(put);
	sqlite3_finalize(get_w);
	sqlite3_finalize(get_r);
	sqlite3_close(r);
	sqlite3_close(w);
	unlink(path);
	return 0; /* closing the last connection removed -wal and -shm */
}
