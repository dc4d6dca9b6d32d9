/*
 * fs_bench.c - the timing loops behind bench/fs_bench.sh: small-file
 * create+write+close, read, readdir and unlink in one directory of any
 * mount, the listing of a large directory, and filling a namespace through
 * the engine (much faster than through the mount) for that listing.
 *
 * It only measures; the script mounts, compares and prints ratios. Timings
 * are medians over repetitions because the machine's two CPUs are shared
 * by the daemon, this program and whatever else runs.
 *
 * Usage:
 *   fs_bench ops DIR N SIZE REPS
 *       per repetition: create N files of SIZE bytes in DIR, read them all
 *       back, list DIR, unlink them all; prints one line per operation:
 *       "<op> <median microseconds per file>"
 *   fs_bench list DIR REPS
 *       lists DIR (opendir/readdir, no stat) REPS times; prints
 *       "list <entries> <median milliseconds>"
 *   fs_bench writers DIR K N SIZE [PID]
 *       K processes at once, each creating N files of SIZE bytes
 *       (create+write+close) in a directory of its own, DIR/w<i>; prints
 *       "writers <K> <files per second, all writers together>"; then
 *       removes the files (not timed; kept with FS_BENCH_KEEP set in the
 *       environment). With PID (the daemon serving DIR)
 *       the line goes on with what the files cost in CPU time while they
 *       were made: "<daemon us/file> <writers us/file> <idle CPUs>", the
 *       daemon's user and system time from /proc/PID/stat, the writers'
 *       from their rusage, and the machine's idle time from /proc/stat
 *       divided by the run's time (0: every CPU busy throughout, with
 *       this run or anything else).
 *   fs_bench push DIR N SIZE REPS
 *       per repetition: create+write+close N files of SIZE bytes under new
 *       names in DIR (a queue of a statefs mount: N pushes; on any other
 *       mount, N files made or overwritten); prints "push <median
 *       microseconds per file>". Nothing is removed.
 *   fs_bench fill NS N
 *       puts keys k0000000..k<N-1> (100-byte values) into scope "bench",
 *       namespace NS of the store named by STATEFS_DB (plaintext if
 *       STATEFS_BENCH_PLAINTEXT is set, else the key as the daemon finds
 *       it), one transaction per key.
 * Exit: 0, or 1 with a sentence on stderr.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "statefs.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fs_bench: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static long list_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long n = 0;

	if (!d)
		die("opendir", dir);
	errno = 0;
	while ((e = readdir(d)))
		n++;
	if (errno)
		die("readdir", dir);
	closedir(d);
	return n - 2;
}

/* create+write+close of n files of size bytes: DIR/<prefix><7 digits> */
static void make_files(const char *dir, const char *prefix, long n,
                       const char *buf, size_t size)
{
	char path[4096];

	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%07ld", dir, prefix, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("create", path);
		if (write(fd, buf, size) != (ssize_t)size)
			die("write", path);
		if (close(fd) < 0)
			die("close", path);
	}
}

static int cmd_ops(const char *dir, long n, size_t size, int reps)
{
	double t[4][64], t0;
	char path[4096], *buf = malloc(size + 65536);
	ssize_t got;
	const char *names[4] = { "create", "read", "readdir", "unlink" };

	if (!buf || reps < 1 || reps > 64)
		return 1;
	memset(buf, 'x', size);
	for (int r = 0; r < reps; r++) {
		t0 = now_us();
		make_files(dir, "f", n, buf, size);
		t[0][r] = (now_us() - t0) / n;

		t0 = now_us();
		for (long i = 0; i < n; i++) {
			size_t total = 0;
			snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
			int fd = open(path, O_RDONLY);
			if (fd < 0)
				die("open", path);
			while ((got = read(fd, buf, size + 65536)) > 0)
				total += (size_t)got;
			if (got < 0 || total != size)
				die("read", path);
			close(fd);
		}
		t[1][r] = (now_us() - t0) / n;

		t0 = now_us();
		if (list_dir(dir) != n) {
			fprintf(stderr, "fs_bench: %s does not hold %ld files\n",
			        dir, n);
			return 1;
		}
		t[2][r] = (now_us() - t0) / n;

		t0 = now_us();
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
			if (unlink(path) < 0)
				die("unlink", path);
		}
		t[3][r] = (now_us() - t0) / n;
	}
	for (int k = 0; k < 4; k++)
		printf("%s %.3f\n", names[k], median(t[k], reps));
	free(buf);
	return 0;
}

static int cmd_push(const char *dir, long n, size_t size, int reps)
{
	double t[64], t0;
	char prefix[16], *buf = malloc(size + 1);

	if (!buf || reps < 1 || reps > 64)
		return 1;
	memset(buf, 'x', size);
	for (int r = 0; r < reps; r++) {
		snprintf(prefix, sizeof(prefix), "p%d.", r);
		t0 = now_us();
		make_files(dir, prefix, n, buf, size);
		t[r] = (now_us() - t0) / n;
	}
	printf("push %.3f\n", median(t, reps));
	free(buf);
	return 0;
}

static int cmd_list(const char *dir, int reps)
{
	double t[64], t0;
	long n = 0;

	if (reps < 1 || reps > 64)
		return 1;
	for (int r = 0; r < reps; r++) {
		t0 = now_us();
		n = list_dir(dir);
		t[r] = (now_us() - t0) / 1000;
	}
	printf("list %ld %.1f\n", n, median(t, reps));
	return 0;
}

/* One writer: waits for the start signal (a byte on fd), then creates its
 * files. Exits 0, or 1 with a sentence. */
static void writer(const char *dir, int fd, long n, const char *buf,
                   size_t size)
{
	char path[4096], c;

	if (read(fd, &c, 1) != 1)
		die("start signal", dir);
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
		int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (f < 0)
			die("create", path);
		if (write(f, buf, size) != (ssize_t)size)
			die("write", path);
		if (close(f) < 0)
			die("close", path);
	}
	_exit(0);
}

/* A process's user + system time in microseconds (/proc/PID/stat,
 * fields 14 and 15, in clock ticks; its exited threads included). */
static double proc_cpu_us(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		die("open", path);
	if (!fgets(buf, sizeof(buf), f))
		die("read", path);
	fclose(f);
	/* after the command's name, which may hold spaces: state is field 3 */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	           &ut, &st) != 2)
		die("parse", path);
	return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static double tv_us(struct timeval tv)
{
	return tv.tv_sec * 1e6 + tv.tv_usec;
}

/* The machine's idle time (idle + iowait of the "cpu" line of /proc/stat)
 * in microseconds, all CPUs together. */
static double idle_us(void)
{
	unsigned long long v[5];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		die("open", "/proc/stat");
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
	           &v[3], &v[4]) != 5)
		die("parse", "/proc/stat");
	fclose(f);
	return (double)(v[3] + v[4]) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static int cmd_writers(const char *dir, int k, long n, size_t size,
                       pid_t daemon)
{
	double d0 = 0, i0 = 0, dcpu = 0, idle = 0;
	struct rusage ru;
	char sub[64][2048], path[4096], *buf = malloc(size + 1);
	int go[2], status, failed = 0;
	pid_t pids[64];
	double t0, t;

	if (!buf || k < 1 || k > 64 || n < 1 || pipe(go) < 0)
		return 1;
	memset(buf, 'w', size);
	if (strlen(dir) > 1024)
		return 1;
	for (int i = 0; i < k; i++) {
		snprintf(sub[i], sizeof(sub[i]), "%.1024s/w%d", dir, i);
		if (mkdir(sub[i], 0755) < 0 && errno != EEXIST)
			die("mkdir", sub[i]);
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork", dir);
		if (pids[i] == 0) {
			close(go[1]);
			writer(sub[i], go[0], n, buf, size);
		}
	}
	close(go[0]);
	if (daemon) {
		d0 = proc_cpu_us(daemon);
		i0 = idle_us();
	}
	t0 = now_us();
	for (int i = 0; i < k; i++) /* one byte each: all start now */
		if (write(go[1], "g", 1) != 1)
			die("start signal", dir);
	for (int i = 0; i < k; i++)
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed = 1;
	t = now_us() - t0;
	if (daemon) { /* what the run cost, read before anything else runs */
		getrusage(RUSAGE_CHILDREN, &ru);
		dcpu = (proc_cpu_us(daemon) - d0) / (k * n);
		idle = (idle_us() - i0) / t;
	}
	close(go[1]);
	if (failed) {
		fprintf(stderr, "fs_bench: a writer failed\n");
		return 1;
	}
	printf("writers %d %.1f", k, (double)k * n / (t / 1e6));
	if (daemon)
		printf(" %.1f %.1f %.2f", dcpu,
		       (tv_us(ru.ru_utime) + tv_us(ru.ru_stime)) / (k * n), idle);
	printf("\n");
	if (getenv("FS_BENCH_KEEP")) { /* the caller looks at them */
		free(buf);
		return 0;
	}
	for (int i = 0; i < k; i++)
		for (long j = 0; j < n; j++) {
			snprintf(path, sizeof(path), "%.2000s/f%07ld", sub[i], j);
			if (unlink(path) < 0)
				die("unlink", path);
		}
	free(buf);
	return 0;
}

static int cmd_fill(const char *ns, long n)
{
	sfs_config cfg = { 0 };
	sfs_store *s;
	char key[32], value[100];
	int rc;

	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_CREATE |
	            (getenv("STATEFS_BENCH_PLAINTEXT") ? SFS_OPEN_PLAINTEXT : 0);
	rc = sfs_store_open(&cfg, &s, NULL);
	if (rc) {
		fprintf(stderr, "fs_bench: open: %s: %s\n", sfs_strerror(rc),
		        sfs_errdetail());
		return 1;
	}
	memset(value, 'v', sizeof(value));
	for (long i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%07ld", i);
		rc = sfs_kv_put(s, sfs_str("bench"), sfs_str(ns), sfs_str(key),
		                sfs_bytes(value, sizeof(value)));
		if (rc) {
			fprintf(stderr, "fs_bench: put: %s: %s\n", sfs_strerror(rc),
			        sfs_errdetail());
			sfs_store_close(s);
			return 1;
		}
	}
	sfs_store_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "ops") == 0)
		return cmd_ops(argv[2], atol(argv[3]), (size_t)atol(argv[4]),
		               atoi(argv[5]));
	if (argc == 6 && strcmp(argv[1], "push") == 0)
		return cmd_push(argv[2], atol(argv[3]), (size_t)atol(argv[4]),
		                atoi(argv[5]));
	if (argc == 4 && strcmp(argv[1], "list") == 0)
		return cmd_list(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "fill") == 0)
		return cmd_fill(argv[2], atol(argv[3]));
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "writers") == 0)
		return cmd_writers(argv[2], atoi(argv[3]), atol(argv[4]),
		                   (size_t)atol(argv[5]),
		                   argc == 7 ? (pid_t)atol(argv[6]) : 0);
	fprintf(stderr, "usage: fs_bench ops DIR N SIZE REPS | "
	                "push DIR N SIZE REPS | list DIR REPS | "
	                "writers DIR K N SIZE [PID] | fill NS N\n");
	return 1;
}
