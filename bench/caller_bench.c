/*
 * caller_bench.c - what the FLUSH check (fs/caller.c) costs, in system
 * calls: every create through the mount pays for it once.
 *
 * A child process holds FDS descriptors (besides its standard three) and
 * sleeps; this process plays the daemon and asks fs_caller_close about a
 * close by the child of a file it does not hold, in rounds that interleave:
 *   getppid      a system call that does nothing: the unit
 *   /proc read   open, read and close of /proc/<child>/status
 *   opener       the check for a close by the task that opened the file
 *                (the common case: the child's own fdinfo only)
 *   full         the check for any other close (the child's fdinfo, its
 *                status, and its parent's fdinfo: this process's)
 *   ... kept     the same two checks with the daemon's cache of /proc
 *                files kept open (fs_procs), as a daemon makes them
 *                for a task that closed a file before
 * and prints microseconds per call, the median of the rounds, and each as
 * a number of getppid calls measured in the same rounds: that ratio is
 * what to compare between machines and between versions of the check.
 *
 * Usage: caller_bench [-n CALLS] [-r ROUNDS] [-f FDS]
 *   (defaults 2000, 5, 4). Exit: 0, or 1 with a sentence on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

enum { OP_GETPPID, OP_PROC, OP_OPENER, OP_FULL, OP_OPENER_KEPT,
       OP_FULL_KEPT, OPS };
static const char *const op_names[OPS] = {
	"getppid", "/proc read", "check, opener's close", "check, other close",
	"opener's close, kept", "other close, kept",
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One call of op about task pid. */
static void call(int op, pid_t pid, fs_procs *kept, volatile long *sink)
{
	char path[48], buf[2048];
	int fd;

	switch (op) {
	case OP_GETPPID:
		*sink += getppid();
		break;
	case OP_PROC:
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			*sink += read(fd, buf, sizeof(buf));
			close(fd);
		}
		break;
	case OP_OPENER: /* inode 1: held by no descriptor, every one read */
		*sink += fs_caller_close(NULL, pid, pid, 0, 1, NULL);
		break;
	case OP_FULL:
		*sink += fs_caller_close(NULL, pid, pid + 1, 0, 1, NULL);
		break;
	case OP_OPENER_KEPT:
		*sink += fs_caller_close(kept, pid, pid, 0, 1, NULL);
		break;
	default:
		*sink += fs_caller_close(kept, pid, pid + 1, 0, 1, NULL);
		break;
	}
}

/* A whole decimal number from lo to hi, or -1. */
static int number(const char *s, int lo, int hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v < lo || v > hi ? -1 : (int)v;
}

int main(int argc, char **argv)
{
	int n = 2000, rounds = 5, fds = 4, opt, op, r, i;
	double *t[OPS], med[OPS];
	volatile long sink = 0;
	fs_procs *kept;
	int ready[2];
	pid_t child;
	char c;

	while ((opt = getopt(argc, argv, "n:r:f:")) != -1) {
		switch (opt) {
		case 'n': n = number(optarg, 1, 100000000); break;
		case 'r': rounds = number(optarg, 1, 1000); break;
		case 'f': fds = number(optarg, 0, 1000); break;
		default:
			fprintf(stderr, "usage: caller_bench [-n CALLS] [-r ROUNDS] "
			        "[-f FDS]\n");
			return 1;
		}
	}
	if (n < 0 || rounds < 0 || fds < 0) {
		fprintf(stderr, "caller_bench: CALLS must be a number from 1 to "
		        "100000000, ROUNDS from 1 to 1000, FDS from 0 to 1000\n");
		return 1;
	}
	if (pipe(ready) != 0 || (child = fork()) < 0) {
		fprintf(stderr, "caller_bench: cannot start the child: %s\n",
		        strerror(errno));
		return 1;
	}
	if (child == 0) {
		close(ready[0]);
		for (i = 0; i < fds; i++)
			if (open("/dev/null", O_WRONLY) < 0)
				_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		fprintf(stderr, "caller_bench: the child did not start\n");
		waitpid(child, NULL, 0);
		return 1;
	}
	close(ready[0]);
	kept = fs_procs_new();
	for (op = 0; op < OPS; op++)
		if (!kept || !(t[op] = calloc((size_t)rounds, sizeof(double)))) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			fprintf(stderr, "caller_bench: out of memory\n");
			return 1;
		}
	for (r = 0; r < rounds; r++)
		for (op = 0; op < OPS; op++) {
			double t0 = now_us();

			for (i = 0; i < n; i++)
				call(op, child, kept, &sink);
			t[op][r] = (now_us() - t0) / n;
		}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fs_procs_free(kept);

	printf("caller_bench: %d calls, median of %d rounds, a child with %d "
	       "descriptors besides its standard three\n", n, rounds, fds);
	printf("%-24s %10s %14s\n", "operation", "us/call", "getppid calls");
	for (op = 0; op < OPS; op++) {
		qsort(t[op], (size_t)rounds, sizeof(double), cmp_double);
		med[op] = t[op][rounds / 2];
		printf("%-24s %10.2f %14.1f\n", op_names[op], med[op],
		       med[op] / med[OP_GETPPID]);
		free(t[op]);
	}
	printf("(check, other close / check, opener's close: %.2f; kept / "
	       "afresh: opener's close %.2f, other close %.2f)\n",
	       med[OP_FULL] / med[OP_OPENER],
	       med[OP_OPENER_KEPT] / med[OP_OPENER],
	       med[OP_FULL_KEPT] / med[OP_FULL]);
	return sink == -1; /* never: keeps the calls */
}
