/*
 * helper.c - what the cli tests need done through the engine directly,
 * because no command does it or because it must be fast.
 *
 *   helper fill DB KEYFILE|-
 *       writes rows of every family with binary names and values (every
 *       byte 0x00..0xff, invalid UTF-8, NUL inside valid UTF-8), the typed
 *       namespaces, explicit empty directories, and every claim table
 *       (a held claim with an in-flight item, a dead letter with a binary
 *       item, a pending item delivered once, a queue policy), for the
 *       export round trip.
 *   helper writer DB KEYFILE|- ID STOPFILE
 *       loops until STOPFILE exists, each round in this order: one log
 *       entry (scope "ck", ns "wID", key "log", value = round number), +1 on
 *       counter (ck, wID, n), one item (round number) on queue "qID". Any
 *       moment of the store therefore has, per writer, Q <= C <= L <= Q + 1
 *       (L log entries, C the counter, Q queue items), entries and items
 *       numbered 1..L and 1..Q. Prints the rounds it made.
 *   helper forkopen DB USEC
 *       a thread opens DB (a PostgreSQL store, plaintext, the first of the
 *       process: libpq is loaded then) while the main thread forks USEC
 *       microseconds after starting it; the child opens DB too and prints
 *       "child STATUS DETAIL". Exit 0 when the child ended on its own (1
 *       when a signal ended it, its alarm after 60 s included).
 *   helper maxrss COMMAND [ARG...]
 *       runs COMMAND and prints "STATUS MAXRSS_KIB" (its exit status, or
 *       128 + the signal, and its peak resident memory) on stdout.
 * KEYFILE "-" opens the store in plaintext. Exit: 0, or 1 with a message.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "statefs.h"

static sfs_store *open_store(const char *db, const char *keyfile)
{
	sfs_config cfg;
	sfs_store *s;
	int st;

	memset(&cfg, 0, sizeof(cfg));
	cfg.db = db;
	cfg.flags = SFS_OPEN_ENV;
	if (strcmp(keyfile, "-") == 0)
		cfg.flags |= SFS_OPEN_PLAINTEXT;
	else
		cfg.keyfile = keyfile;
	st = sfs_store_open(&cfg, &s, NULL);
	if (st != SFS_OK) {
		fprintf(stderr, "helper: open %s: %s (%s)\n", db, sfs_strerror(st),
		        sfs_errdetail());
		exit(1);
	}
	return s;
}

static void check(int st, const char *what)
{
	if (st != SFS_OK) {
		fprintf(stderr, "helper: %s: %s (%s)\n", what, sfs_strerror(st),
		        sfs_errdetail());
		exit(1);
	}
}

/* Queue "cq": "again" pending after one delivery, "held" in flight under
 * a claim with a day's lease, every byte dead ("rejected"); a policy. */
static int fill_claims(sfs_store *s, const unsigned char *all)
{
	sfs_slice items[3] = { sfs_str("again"), sfs_str("held"),
		               sfs_bytes(all, 256) };
	sfs_queue_policy p = { 3600000, 4 };
	sfs_outcome rej = SFS_OUTCOME_REJECT;
	int64_t first, cid;

	check(sfs_queue_push(s, sfs_str("cq"), items, 3, &first), "claims push");
	check(sfs_queue_policy_set(s, sfs_str("cq"), &p), "policy");
	check(sfs_claim_item(s, sfs_str("cq"), first, 0, &cid), "claim");
	check(sfs_claim_end(s, cid, SFS_OUTCOME_NACK), "nack");
	check(sfs_claim_item(s, sfs_str("cq"), first + 2, 0, &cid), "claim 3");
	first += 2;
	check(sfs_claim_settle(s, cid, &first, &rej, 1), "reject");
	check(sfs_claim_item(s, sfs_str("cq"), first - 1, 86400000, &cid),
	      "claim 2");
	return 0;
}

static int fill(sfs_store *s)
{
	unsigned char all[256], inv[] = { 'k', 0xff, 0xfe, 0xc3 };
	const char nul_utf8[] = "a\0b\xc3\xa9"; /* valid UTF-8 with a NUL */
	sfs_slice items[3];
	unsigned char id8[8], gid[2][8], wid[8];
	sfs_slice vals[2], gids[2];

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	/* key/value: every byte as key and value, invalid UTF-8, NULs */
	check(sfs_kv_put(s, sfs_bytes(all, 256), sfs_str("ns"),
	                 sfs_bytes(all, 256), sfs_bytes(all, 256)), "kv all");
	check(sfs_kv_put(s, sfs_str("bin"), sfs_bytes(inv, 4),
	                 sfs_bytes(inv, 4), sfs_bytes(inv, 3)), "kv invalid");
	check(sfs_kv_put(s, sfs_str("bin"), sfs_str("text"),
	                 sfs_bytes(nul_utf8, 5), sfs_bytes(nul_utf8, 5)), "kv nul");
	check(sfs_kv_put(s, sfs_str("bin"), sfs_str("text"), sfs_str(""),
	                 sfs_str("")), "kv empty");
	check(sfs_kv_put(s, sfs_str("bin"), sfs_str("text"), sfs_str("café"),
	                 sfs_str("crème\n")), "kv utf8");
	/* the Go SDK's typed namespaces: ids as 8-byte keys */
	sfs_id_encode(4242, wid);
	check(sfs_kv_put(s, sfs_str("exec1"), sfs_str(SFS_NS_WORKER),
	                 sfs_bytes(wid, 8), sfs_bytes(all, 16)), "worker");
	vals[0] = sfs_str("g7");
	vals[1] = sfs_bytes(all + 250, 6);
	sfs_id_encode(7, gid[0]);
	sfs_id_encode(-7, gid[1]);
	gids[0] = sfs_bytes(gid[0], 8);
	gids[1] = sfs_bytes(gid[1], 8);
	check(sfs_kv_put_many(s, sfs_str("exec1"), sfs_str(SFS_NS_AGG), gids,
	                      vals, 2, 0), "agg");
	sfs_id_encode(-1, id8);
	check(sfs_kv_put(s, sfs_str("exec1"), sfs_str(SFS_NS_WIN),
	                 sfs_bytes(id8, 8), sfs_bytes(id8, 8)), "win");
	/* counters */
	check(sfs_counter_set(s, sfs_bytes(all, 256), sfs_bytes(inv, 4),
	                      sfs_bytes(all + 128, 128), INT64_MIN), "counter min");
	check(sfs_counter_set(s, sfs_str("c"), sfs_str("n"), sfs_str("max"),
	                      INT64_MAX), "counter max");
	check(sfs_counter_set(s, sfs_str("c"), sfs_str("n"), sfs_str("zero"), 0),
	      "counter zero");
	/* logs */
	for (int i = 0; i < 3; i++)
		check(sfs_log_append(s, sfs_str("l"), sfs_str(SFS_NS_LOG),
		                     sfs_bytes(inv, 4), sfs_bytes(all, 256), NULL),
		      "log");
	check(sfs_log_append(s, sfs_bytes(all, 10), sfs_str("n"), sfs_str("k"),
	                     sfs_str(""), NULL), "log empty");
	/* queues */
	items[0] = sfs_bytes(all, 256);
	items[1] = sfs_str("");
	items[2] = sfs_bytes(nul_utf8, 5);
	check(sfs_queue_push(s, sfs_bytes(inv, 4), items, 3, NULL), "queue");
	check(sfs_queue_push(s, sfs_str("q"), items + 1, 2, NULL), "queue 2");
	/* explicit empty directories */
	check(sfs_dir_create(s, SFS_FAM_KV, sfs_str("emptyscope"), SFS_NONE),
	      "dir scope");
	check(sfs_dir_create(s, SFS_FAM_KV, sfs_str("bin"), sfs_bytes(all, 3)),
	      "dir ns");
	check(sfs_dir_create(s, SFS_FAM_COUNTER, sfs_str("cdir"), SFS_NONE),
	      "dir counter");
	check(sfs_dir_create(s, SFS_FAM_LOG, sfs_str("ldir"), sfs_str("lns")),
	      "dir log");
	return fill_claims(s, all);
}

static int writer(sfs_store *s, const char *id, const char *stopfile)
{
	char ns[32], queue[32], num[32];
	long round;

	snprintf(ns, sizeof(ns), "w%s", id);
	snprintf(queue, sizeof(queue), "q%s", id);
	for (round = 1; access(stopfile, F_OK) != 0; round++) {
		snprintf(num, sizeof(num), "%ld", round);
		check(sfs_log_append(s, sfs_str("ck"), sfs_str(ns), sfs_str("log"),
		                     sfs_str(num), NULL), "append");
		check(sfs_counter_add(s, sfs_str("ck"), sfs_str(ns), sfs_str("n"), 1,
		                      NULL), "add");
		sfs_slice item = sfs_str(num);
		check(sfs_queue_push(s, sfs_str(queue), &item, 1, NULL), "push");
	}
	printf("%ld\n", round - 1);
	return 0;
}

static int open_pg(const char *db)
{
	sfs_config cfg;
	sfs_store *s = NULL;
	int st;

	memset(&cfg, 0, sizeof(cfg));
	cfg.db = db;
	cfg.flags = SFS_OPEN_PLAINTEXT;
	st = sfs_store_open(&cfg, &s, NULL);
	sfs_store_close(s);
	return st;
}

static void *open_pg_thread(void *db)
{
	open_pg(db);
	return NULL;
}

static int forkopen(const char *db, const char *usec)
{
	pthread_t t;
	pid_t pid;
	int st;

	if (pthread_create(&t, NULL, open_pg_thread, (void *)db))
		return 1;
	usleep((useconds_t)atoi(usec));
	pid = fork();
	if (pid == 0) {
		alarm(60);
		st = open_pg(db);
		printf("child %d %s\n", st, sfs_errdetail());
		fflush(stdout);
		_exit(0);
	}
	pthread_join(t, NULL);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	if (!WIFEXITED(st)) {
		printf("child killed by signal %d\n", WTERMSIG(st));
		return 1;
	}
	return 0;
}

static int maxrss(char **argv)
{
	struct rusage ru;
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return 1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid)
		return 1;
	printf("%d %ld\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
	       ru.ru_maxrss);
	return 0;
}

int main(int argc, char **argv)
{
	sfs_store *s;
	int rc;

	if (argc >= 3 && strcmp(argv[1], "maxrss") == 0)
		return maxrss(argv + 2);
	if (argc >= 4 && strcmp(argv[1], "forkopen") == 0)
		return forkopen(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "fill") == 0) {
		s = open_store(argv[2], argv[3]);
		rc = fill(s);
	} else if (argc >= 6 && strcmp(argv[1], "writer") == 0) {
		s = open_store(argv[2], argv[3]);
		rc = writer(s, argv[4], argv[5]);
	} else {
		fprintf(stderr, "usage: helper fill DB KEYFILE|-\n"
		                "       helper writer DB KEYFILE|- ID STOPFILE\n"
		                "       helper forkopen DB USEC\n"
		                "       helper maxrss COMMAND [ARG...]\n");
		return 2;
	}
	sfs_store_close(s);
	return rc;
}
