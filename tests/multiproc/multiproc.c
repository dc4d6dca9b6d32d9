/*
 * multiproc.c - many processes on one store file (meson suite multiproc).
 *
 * Usage: multiproc TEST        run one test (the parent)
 *        multiproc child ...   a worker process (the parent execs these)
 * Tests: counter  8 processes x 1,000 adds of 1 end at exactly 8,000
 *        queue    4 producers and 4 consumers deliver every item once
 *        drain    a drainer racing 4 writers loses and duplicates nothing
 *        checkpoint  checkpoints taken while 4 writers commit are
 *                 consistent snapshots that restore
 * Every child fails on any status but the expected ones: none may see
 * SFS_BUSY. STATEFS_TEST_MODE=encrypted shares one key through a key file.
 * The scratch store and the spawning and reaping of children are
 * harness.c's. Exit: 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* --- children ----------------------------------------------------------- */

static void child_counter(int n)
{
	sfs_store *s = mp_open_store(0);
	int rc;

	for (int i = 0; i < n; i++)
		if ((rc = sfs_counter_add(s, S("mp"), S("n"), S("c"), 1, NULL)))
			mp_die("counter add", rc);
	sfs_store_close(s);
}

static void child_produce(int id, int n)
{
	sfs_store *s = mp_open_store(0);
	char buf[32];
	int rc;

	for (int i = 0; i < n; i++) {
		sfs_slice it;

		snprintf(buf, sizeof(buf), "%d-%d", id, i);
		it = S(buf);
		if ((rc = sfs_queue_push(s, S("q"), &it, 1, NULL)))
			mp_die("push", rc);
	}
	/* after the last push committed: consumers may stop once all four
	 * producers said so and the queue is empty */
	if ((rc = sfs_counter_add(s, S("mp"), S("n"), S("done"), 1, NULL)))
		mp_die("done", rc);
	sfs_store_close(s);
}

static void child_consume(const char *out)
{
	sfs_store *s = mp_open_store(0);
	FILE *f = fopen(out, "w");
	int64_t done = 0;
	sfs_list l;
	int rc;

	if (!f)
		mp_die("fopen", SFS_IO);
	for (;;) {
		rc = sfs_counter_get(s, S("mp"), S("n"), S("done"), &done, NULL);
		if (rc && rc != SFS_NOTFOUND) /* absent: none done yet */
			mp_die("get", rc);
		rc = sfs_queue_pop(s, S("q"), 1, &l);
		if (rc == SFS_OK) {
			fprintf(f, "%s\n", (char *)l.items[0].value.ptr);
			sfs_list_free(&l);
		} else if (rc == SFS_NOTFOUND) {
			if (done == 4)
				break; /* read before the pop: nothing can come */
			usleep(200);
		} else {
			mp_die("pop", rc);
		}
	}
	fclose(f);
	sfs_store_close(s);
}

static void child_write(int id, int n)
{
	sfs_store *s = mp_open_store(0);
	char k[32];
	int rc;

	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%d-%d", id, i);
		if ((rc = sfs_kv_put(s, S("mp"), S("inbox"), S(k), S("v"))))
			mp_die("put", rc);
	}
	if ((rc = sfs_counter_add(s, S("mp"), S("n"), S("done"), 1, NULL)))
		mp_die("done", rc);
	sfs_store_close(s);
}

static void child_drain(const char *out)
{
	sfs_store *s = mp_open_store(0);
	FILE *f = fopen(out, "w");
	int64_t done = 0;
	int last = 0, rc;
	sfs_list l;

	if (!f)
		mp_die("fopen", SFS_IO);
	while (!last) {
		rc = sfs_counter_get(s, S("mp"), S("n"), S("done"), &done, NULL);
		if (rc && rc != SFS_NOTFOUND) /* absent: none done yet */
			mp_die("get", rc);
		last = done == 4; /* one more drain after the writers ended */
		if ((rc = sfs_kv_drain(s, S("mp"), S("inbox"), &l)))
			mp_die("drain", rc);
		for (size_t i = 0; i < l.n; i++)
			fprintf(f, "%s\n", (char *)l.items[i].key.ptr);
		sfs_list_free(&l);
	}
	fclose(f);
	sfs_store_close(s);
}

/* Writes pairs (a, b) that are always equal in one transaction, and a
 * counter, until told to stop. */
static void child_pairs(int id)
{
	sfs_store *s = mp_open_store(0);
	sfs_slice keys[2] = { S("a"), S("b") };
	char scope[16], v[32];
	int64_t stop = 0;
	int rc;

	snprintf(scope, sizeof(scope), "w%d", id);
	for (long i = 0; !stop; i++) {
		sfs_slice vals[2];

		snprintf(v, sizeof(v), "%ld", i);
		vals[0] = vals[1] = S(v);
		if ((rc = sfs_kv_put_many(s, S(scope), S(SFS_NS_TXN), keys,
		                          vals, 2, 0)))
			mp_die("txn put", rc);
		if ((rc = sfs_log_append(s, S(scope), S("log"), S("k"), S(v),
		                         NULL)))
			mp_die("append", rc);
		if ((rc = sfs_counter_get(s, S("mp"), S("n"), S("stop"), &stop,
		                          NULL)) == SFS_NOTFOUND)
			rc = SFS_OK; /* absent: not stopped */
		if (rc)
			mp_die("get", rc);
	}
	sfs_store_close(s);
}

/* --- the parent ---------------------------------------------------------- */

/* Reads every line of the files into one sorted array and checks it holds
 * exactly "<p>-<i>" for p < np, i < ni, once each. */
static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int check_once(const char *prefix, int files, int np, int ni)
{
	size_t n = 0, cap = (size_t)np * ni + 16;
	char **lines = calloc(cap, sizeof(*lines));
	char path[400], line[64], want[32];
	int bad = 0;

	for (int f = 0; f < files; f++) {
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s%d", mp_dir, prefix, f);
		fp = fopen(path, "r");
		if (!fp)
			return 1;
		while (fgets(line, sizeof(line), fp)) {
			line[strcspn(line, "\n")] = 0;
			if (n == cap) {
				fprintf(stderr, "more items than pushed\n");
				fclose(fp);
				return 1;
			}
			lines[n++] = strdup(line);
		}
		fclose(fp);
	}
	qsort(lines, n, sizeof(*lines), cmp);
	if (n != (size_t)np * ni) {
		fprintf(stderr, "%zu items delivered, want %d\n", n, np * ni);
		bad = 1;
	}
	for (size_t i = 1; i < n; i++)
		if (!strcmp(lines[i], lines[i - 1])) {
			fprintf(stderr, "%s delivered twice\n", lines[i]);
			bad = 1;
		}
	for (int p = 0; p < np && !bad; p++)
		for (int i = 0; i < ni; i++) {
			const char *k = want;

			snprintf(want, sizeof(want), "%d-%d", p, i);
			if (!bsearch(&k, lines, n, sizeof(*lines), cmp)) {
				fprintf(stderr, "%s lost\n", want);
				bad = 1;
				break;
			}
		}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return bad;
}

static int test_counter(void)
{
	const char *argv[] = { "multiproc", "child", "counter", "1000", NULL };
	pid_t pids[8];
	sfs_store *s;
	int64_t v;
	int bad;

	for (int i = 0; i < 8; i++)
		pids[i] = mp_spawn(argv);
	bad = mp_reap(pids, 8);
	s = mp_open_store(0);
	if (sfs_counter_get(s, S("mp"), S("n"), S("c"), &v, NULL))
		mp_die("get", 1);
	sfs_store_close(s);
	if (v != 8000) {
		fprintf(stderr, "counter is %lld, want 8000\n", (long long)v);
		bad = 1;
	}
	return bad;
}

static int test_queue(void)
{
	char ids[4][8], outs[4][400];
	pid_t pids[8];
	int bad;

	for (int i = 0; i < 4; i++) {
		const char *p[] = { "multiproc", "child", "produce", ids[i], "500",
		                    NULL };
		const char *c[] = { "multiproc", "child", "consume", outs[i],
		                    NULL };

		snprintf(ids[i], sizeof(ids[i]), "%d", i);
		snprintf(outs[i], sizeof(outs[i]), "%s/popped%d", mp_dir, i);
		pids[i] = mp_spawn(c);
		pids[4 + i] = mp_spawn(p);
	}
	bad = mp_reap(pids, 8);
	bad |= check_once("popped", 4, 4, 500);
	/* Every process wrote its push and take counts (at most once a
	 * second, and at close): exactly what went through. */
	{
		sfs_store *s = mp_open_store(0);
		sfs_stats *st = NULL;

		if (sfs_store_stats(s, &st) || st->nqueues != 1 ||
		    st->queues[0].pushed != 2000 || st->queues[0].taken != 2000) {
			fprintf(stderr, "queue counts: %s, pushed %llu taken %llu,"
			        " want 2000 2000\n", sfs_errdetail(),
			        st && st->nqueues ? (unsigned long long)st->queues[0].pushed : 0ULL,
			        st && st->nqueues ? (unsigned long long)st->queues[0].taken : 0ULL);
			bad = 1;
		}
		sfs_stats_free(st);
		sfs_store_close(s);
	}
	return bad;
}

static int test_drain(void)
{
	char ids[4][8], out[400];
	pid_t pids[5];
	int bad;

	snprintf(out, sizeof(out), "%s/drained0", mp_dir);
	{
		const char *d[] = { "multiproc", "child", "drain", out, NULL };

		pids[4] = mp_spawn(d);
	}
	for (int i = 0; i < 4; i++) {
		const char *w[] = { "multiproc", "child", "write", ids[i], "500",
		                    NULL };

		snprintf(ids[i], sizeof(ids[i]), "%d", i);
		pids[i] = mp_spawn(w);
	}
	bad = mp_reap(pids, 5);
	return bad | check_once("drained", 1, 4, 500);
}

static int test_checkpoint(void)
{
	char ids[4][8], cp[400];
	pid_t pids[4];
	sfs_store *s;
	int bad = 0, rc;

	for (int i = 0; i < 4; i++) {
		const char *w[] = { "multiproc", "child", "pairs", ids[i], NULL };

		snprintf(ids[i], sizeof(ids[i]), "%d", i);
		pids[i] = mp_spawn(w);
	}
	s = mp_open_store(0);
	/* start checkpointing once every writer is writing, however long a
	 * loaded machine takes to start them (two minutes is a hang) */
	for (int tries = 0, started = 0; started < 4; tries++) {
		if (tries == 12000) {
			fprintf(stderr, "the writers did not start in 120 s\n");
			return 1;
		}
		started = 0;

		for (int i = 0; i < 4; i++) {
			char scope[16];
			sfs_list l;

			snprintf(scope, sizeof(scope), "w%d", i);
			if (sfs_log_scan(s, S(scope), S("log"), S("k"), -1, 1, 1,
			                 &l) == SFS_OK) {
				started += l.n > 0;
				sfs_list_free(&l);
			}
		}
		if (started < 4)
			usleep(10 * 1000);
	}
	for (int round = 0; round < 3 && !bad; round++) {
		sfs_store *c;

		snprintf(cp, sizeof(cp), "%s/cp%d.db", mp_dir, round);
		if ((rc = sfs_checkpoint(s, cp, NULL, NULL)))
			mp_die("checkpoint", rc);
		/* consistent: every writer's pair is equal in the copy */
		c = mp_open(cp, SFS_OPEN_READONLY);
		if ((rc = sfs_store_verify(c, NULL, NULL)))
			mp_die("verify checkpoint", rc);
		for (int i = 0; i < 4; i++) {
			sfs_slice keys[2] = { S("a"), S("b") };
			char scope[16];
			sfs_list l;

			snprintf(scope, sizeof(scope), "w%d", i);
			if ((rc = sfs_kv_get_many(c, S(scope), S(SFS_NS_TXN),
			                          keys, 2, &l)))
				mp_die("txn get", rc);
			/* every writer has written: both present and equal */
			if (!l.items[0].value.ptr || !l.items[1].value.ptr ||
			    strcmp(l.items[0].value.ptr, l.items[1].value.ptr)) {
				fprintf(stderr, "checkpoint %d, writer %d: torn pair"
				        " %s / %s\n", round, i,
				        (char *)l.items[0].value.ptr,
				        (char *)l.items[1].value.ptr);
				bad = 1;
			}
			sfs_list_free(&l);
		}
		sfs_store_close(c);
		usleep(50 * 1000);
	}
	/* restore while the writers keep writing: one transaction */
	if (!bad && (rc = sfs_restore(s, cp, NULL, NULL)))
		mp_die("restore", rc);
	if ((rc = sfs_counter_set(s, S("mp"), S("n"), S("stop"), 1)))
		mp_die("stop", rc);
	bad |= mp_reap(pids, 4);
	sfs_store_close(s);
	return bad;
}

static int child(int argc, char **argv)
{
	(void)argc;
	if (!strcmp(argv[2], "counter"))
		child_counter(atoi(argv[3]));
	else if (!strcmp(argv[2], "produce"))
		child_produce(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[2], "consume"))
		child_consume(argv[3]);
	else if (!strcmp(argv[2], "write"))
		child_write(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[2], "drain"))
		child_drain(argv[3]);
	else if (!strcmp(argv[2], "pairs"))
		child_pairs(atoi(argv[3]));
	else
		return 2;
	return 0;
}

int main(int argc, char **argv)
{
	static const mp_test tests[] = {
		{ "counter", test_counter },
		{ "queue", test_queue },
		{ "drain", test_drain },
		{ "checkpoint", test_checkpoint },
		{ NULL, NULL },
	};

	return mp_main(argc, argv, "multiproc", tests, child);
}
