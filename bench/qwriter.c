/*
 * qwriter.c - a writer for bench/top_cost.sh: for a number of seconds it
 * pushes and pops queue items, puts keys and adds to counters through the
 * engine, as a worker does, and prints how many operations it made per
 * second. The store and its key by statefs's rules (STATEFS_DB,
 * STATEFS_KEY_FILE, ...).
 *
 * Usage: qwriter SECONDS
 * Output: "<ops per second> <CPU microseconds per op>" on one line (the
 * CPU time, user and system, is steadier than wall time on a shared
 * machine). Exit: 0, 1 on an engine error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "statefs.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(int rc, const char *what)
{
	if (rc != SFS_OK) {
		fprintf(stderr, "qwriter: %s: %s: %s\n", what, sfs_strerror(rc),
		        sfs_errdetail());
		exit(1);
	}
}

int main(int argc, char **argv)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV };
	sfs_store *s;
	sfs_slice item = sfs_str("a work item of some forty bytes, say");
	double secs, t0, t, cpu;
	struct rusage ru0, ru;
	unsigned long ops = 0;
	char key[32];

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: qwriter SECONDS\n");
		return 2;
	}
	check(sfs_store_open(&cfg, &s, NULL), "open");
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	do {
		for (int i = 0; i < 50; i++, ops += 4) {
			sfs_list l;

			snprintf(key, sizeof(key), "k%lu", ops % 1000);
			check(sfs_queue_push(s, sfs_str("work"), &item, 1, NULL),
			      "push");
			check(sfs_queue_pop(s, sfs_str("work"), 1, &l), "pop");
			sfs_list_free(&l);
			check(sfs_kv_put(s, sfs_str("writer"), sfs_str("ns"),
			                 sfs_str(key), item), "put");
			check(sfs_counter_add(s, sfs_str("writer"), sfs_str("c"),
			                      sfs_str("n"), 1, NULL), "add");
		}
		t = now();
	} while (t - t0 < secs);
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
	               ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e6 +
	      (double)(ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
	               ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
	printf("%.0f %.1f\n", (double)ops / (t - t0), cpu / (double)ops);
	sfs_store_close(s);
	return 0;
}
