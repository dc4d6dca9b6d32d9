/*
 * fileops.c - sequences of file calls for the mount tests that shell tools
 * cannot make (fstat and lseek on a handle, copy_file_range, pwrite far
 * out, writers that die in set ways). Each prints what it saw on stdout,
 * one "name value" per line, for the script to compare; a failing call
 * prints "FAIL <what>: <errno name>" and exits 1.
 *
 * Usage: fileops OP ARGS...
 *   handle PATH        O_RDWR|O_CREAT|O_TRUNC; ftruncate 0 then 100000 and
 *                      fstat (fsx's first probe); then write "hello world"
 *                      at 0 after ftruncate 0, lseek(SEEK_END), fstat,
 *                      write "X" (appends after SEEK_END), close
 *   listed PATH        PATH holds a shorter value: opens it O_RDWR, writes
 *                      100 bytes "y" at 0, lists PATH's directory (the
 *                      kernel's READDIRPLUS), then fstat and
 *                      lseek(SEEK_END) on the handle, writes "Z" there,
 *                      closes; prints fstat's size and SEEK_END's offset
 *   copy SRC DST       writes 10,000 bytes to SRC (O_TRUNC) and, on that
 *                      handle before its commit, fstat and copy_file_range
 *                      them to DST in 3,000-byte calls until all are
 *                      copied (a call returning 0 early fails after 100
 *                      calls); prints the bytes copied
 *   deleted PATH       writes 3 bytes, reopens read-only, unlinks, fstat:
 *                      nlink and size
 *   churn PATH N       N times: open O_CREAT|O_EXCL, close, unlink; prints
 *                      the failures and the first errno
 *   unlinkopen PATH    creates, unlinks while open, writes, closes; prints
 *                      whether PATH exists afterwards
 *   sparse DIR N PID   N files in DIR, each a 1-byte pwrite at 64 MiB - 1 on
 *                      its own descriptor; prints fstat's size and PID's
 *                      VmRSS (kB) with all N open, then truncates them to 0
 *                      and closes
 *   hold PATH N GO [sync]
 *                      opens PATH O_WRONLY|O_CREAT (no O_TRUNC; with
 *                      sync, O_DSYNC too), writes N
 *                      zero bytes, prints "ready" (or "write <errno>"),
 *                      waits until the file GO exists, closes (a close
 *                      that fails after a failed write prints "close
 *                      <errno>")
 *   refused PATH OFF   opens PATH O_WRONLY|O_TRUNC, writes "header", a
 *                      byte at OFF, "body", fsyncs and closes; prints
 *                      each call's errno name or 0, on one line
 *   race DIR N K       N rounds; in each, K processes released at once do
 *                      `echo +1 > DIR/cROUND` (open O_WRONLY|O_CREAT|
 *                      O_TRUNC, write "+1\n", close) on a counter that
 *                      does not exist yet; prints the opens and writes
 *                      that failed and the first errno, and the rounds
 *                      whose counter is not K
 *   listing DIR N U    creates DIR/s00000.. (N files), then lists DIR by
 *                      getdents64 into a 1,000-byte buffer (fewer entries
 *                      than the kernel's reply holds) while, between
 *                      calls, it creates DIR/cI, removes DIR/c(I-3) and
 *                      every 5th call stats the next of DIR/u00000..
 *                      (U files the caller made through the engine: the
 *                      kernel has no entry for them, so a LOOKUP, and its
 *                      next call is a READDIRPLUS); prints the entries
 *                      listed, fails unless each sNNNNN and uNNNNN, "."
 *                      and ".." came exactly once and no name twice.
 *                      Then, with nothing changing,
 *                      lists DIR again noting each entry's offset, and
 *                      seeks back (lseek, as seekdir) to 20 of them: each
 *                      must list the entries that followed it; prints
 *                      "seeks 20"
 *   die PATH DATA HOW  opens PATH O_WRONLY|O_CREAT|O_TRUNC, writes DATA,
 *                      prints "ready" and then: kill (waits to be killed),
 *                      threads (starts 4 threads, waits to be killed),
 *                      abort, _exit (exits 0 without closing)
 *   stream DIR S       DIR/k1, k2, ... for ever: open O_WRONLY|O_CREAT|
 *                      O_TRUNC, write "value I", close; prints I once the
 *                      close returned; for the S-th, fsync before the
 *                      close and prints "synced S" after it
 *   syncs PATH GO      opens PATH (a file or a directory) read-only,
 *                      prints "ready", waits until the file GO exists,
 *                      then fsyncs that descriptor twice and a new
 *                      descriptor of PATH once; prints "held E1",
 *                      "again E2", "reopened E3", each the errno's name
 *                      or 0
 * Exit: 0; 1 on a failed call; 2 on a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die_errno(const char *what)
{
	const char *n = strerrorname_np(errno);

	printf("FAIL %s: %s\n", what, n ? n : "E?");
	exit(1);
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		die_errno(path);
	return fd;
}

static void write_or_die(int fd, const void *p, size_t n, const char *what)
{
	if (write(fd, p, n) != (ssize_t)n)
		die_errno(what);
}

static int op_handle(const char *path)
{
	int fd = open_or_die(path, O_RDWR | O_CREAT | O_TRUNC);
	struct stat st;
	off_t end;

	if (ftruncate(fd, 0) || ftruncate(fd, 100000) || fstat(fd, &st))
		die_errno("ftruncate, fstat");
	printf("probe %lld\n", (long long)st.st_size);
	if (ftruncate(fd, 0))
		die_errno("ftruncate");
	write_or_die(fd, "hello world", 11, "write");
	if ((end = lseek(fd, 0, SEEK_END)) < 0 || fstat(fd, &st))
		die_errno("lseek, fstat");
	printf("seek_end %lld\nfstat %lld\n", (long long)end,
	       (long long)st.st_size);
	write_or_die(fd, "X", 1, "write after SEEK_END");
	if (close(fd))
		die_errno("close");
	return 0;
}

static int op_listed(const char *path)
{
	char dir[4096], y[100];
	int fd = open_or_die(path, O_RDWR);
	struct dirent *de;
	struct stat st;
	off_t end;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	memset(y, 'y', sizeof(y));
	if (pwrite(fd, y, sizeof(y), 0) != (ssize_t)sizeof(y))
		die_errno("pwrite");
	if (!(d = opendir(dir)))
		die_errno("opendir");
	while ((de = readdir(d)))
		;
	closedir(d);
	if (fstat(fd, &st))
		die_errno("fstat");
	if ((end = lseek(fd, 0, SEEK_END)) < 0)
		die_errno("lseek");
	printf("fstat %lld\nseek_end %lld\n", (long long)st.st_size,
	       (long long)end);
	write_or_die(fd, "Z", 1, "write after SEEK_END");
	if (close(fd))
		die_errno("close");
	return 0;
}

static int op_copy(const char *src, const char *dst)
{
	char buf[10000];
	int in = open_or_die(src, O_RDWR | O_CREAT | O_TRUNC);
	int out = open_or_die(dst, O_WRONLY | O_CREAT | O_TRUNC);
	loff_t off_in = 0;
	struct stat st;
	ssize_t n;
	long long total = 0;
	int spins = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)('a' + i % 26);
	write_or_die(in, buf, sizeof(buf), "write");
	/* As cp does: fstat first (the kernel takes the size it is told
	 * then, and bounds copy_file_range by it), then a loop until it has
	 * copied what it wants: a 0 before the end would spin it forever. */
	if (fstat(in, &st))
		die_errno("fstat");
	while (total < (long long)sizeof(buf)) {
		n = copy_file_range(in, &off_in, out, NULL, 3000, 0);
		if (n < 0)
			die_errno("copy_file_range");
		total += n;
		if (++spins > 100) {
			printf("FAIL copy_file_range: %lld of %zu bytes after 100"
			       " calls\n", total, sizeof(buf));
			return 1;
		}
	}
	if (close(out) || close(in))
		die_errno("close");
	printf("copied %lld\n", total);
	return 0;
}

static int op_deleted(const char *path)
{
	int fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
	struct stat st;

	write_or_die(fd, "abc", 3, "write");
	if (close(fd))
		die_errno("close");
	fd = open_or_die(path, O_RDONLY);
	if (unlink(path))
		die_errno("unlink");
	if (fstat(fd, &st))
		die_errno("fstat after unlink");
	printf("nlink %lu\nsize %lld\n", (unsigned long)st.st_nlink,
	       (long long)st.st_size);
	close(fd);
	return 0;
}

static int op_churn(const char *path, int n)
{
	int failures = 0, first = 0;

	for (int i = 0; i < n; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		int e = 0;

		if (fd < 0)
			e = errno;
		else if (close(fd))
			e = errno;
		else if (unlink(path))
			e = errno;
		if (e) {
			failures++;
			if (!first)
				first = e;
			unlink(path);
		}
	}
	printf("failures %d\nfirst %s\n", failures,
	       first ? strerrorname_np(first) : "none");
	return 0;
}

static int op_unlinkopen(const char *path)
{
	int fd = open_or_die(path, O_WRONLY | O_CREAT | O_EXCL);

	if (unlink(path))
		die_errno("unlink while open");
	write_or_die(fd, "x", 1, "write");
	if (close(fd))
		die_errno("close");
	printf("exists %d\n", access(path, F_OK) == 0);
	return 0;
}

static long rss_kb(const char *pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

static int op_sparse(const char *dir, int n, const char *pid)
{
	int fds[64];
	char path[4096];
	struct stat st;

	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/sparse%d", dir, i);
		fds[i] = open_or_die(path, O_RDWR | O_CREAT | O_TRUNC);
		if (pwrite(fds[i], "z", 1, (64 << 20) - 1) != 1)
			die_errno("pwrite at 64 MiB - 1");
	}
	if (fstat(fds[0], &st))
		die_errno("fstat");
	printf("size %lld\nrss %ld\n", (long long)st.st_size, rss_kb(pid));
	for (int i = 0; i < n; i++)
		if (ftruncate(fds[i], 0) || close(fds[i]))
			die_errno("ftruncate, close");
	return 0;
}

static int op_hold(const char *path, long n, const char *go, int sync)
{
	static const char zeros[65536];
	int fd = open_or_die(path, O_WRONLY | O_CREAT | (sync ? O_DSYNC : 0));
	long done = 0;

	while (done < n) {
		size_t c = n - done < (long)sizeof(zeros) ? (size_t)(n - done)
		                                          : sizeof(zeros);
		ssize_t w = write(fd, zeros, c);
		if (w < 0)
			break;
		done += w;
	}
	if (done < n)
		printf("write %s\n", strerrorname_np(errno));
	else
		printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK) != 0)
		usleep(20000);
	if (close(fd)) {
		if (done == n)
			die_errno("close");
		printf("close %s\n", strerrorname_np(errno));
	}
	return 0;
}

static const char *says(int r)
{
	return r < 0 ? strerrorname_np(errno) : "0";
}

static int op_refused(const char *path, long off)
{
	int fd = open_or_die(path, O_WRONLY | O_TRUNC);

	printf("write %s", says((int)write(fd, "header", 6)));
	printf(" pwrite %s", says((int)pwrite(fd, "x", 1, off)));
	printf(" write %s", says((int)write(fd, "body", 4)));
	printf(" fsync %s", says(fsync(fd)));
	printf(" close %s\n", says(close(fd)));
	return 0;
}

static const char *fsync_says(int fd)
{
	const char *n;

	if (!fsync(fd))
		return "0";
	n = strerrorname_np(errno);
	return n ? n : "E?";
}

static int op_syncs(const char *path, const char *go)
{
	int fd = open_or_die(path, O_RDONLY), fd2;

	printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK) != 0)
		usleep(20000);
	printf("held %s\n", fsync_says(fd));
	printf("again %s\n", fsync_says(fd));
	fd2 = open_or_die(path, O_RDONLY);
	printf("reopened %s\n", fsync_says(fd2));
	close(fd2);
	close(fd);
	return 0;
}

static int op_race(const char *dir, int rounds, int k)
{
	char path[4096], buf[32];
	int failed = 0, wrong = 0, first = 0, go[2], res[2];

	for (int r = 0; r < rounds; r++) {
		snprintf(path, sizeof(path), "%s/c%d", dir, r);
		if (pipe(go) || pipe(res))
			die_errno("pipe");
		for (int i = 0; i < k; i++) {
			pid_t p = fork();
			if (p < 0)
				die_errno("fork");
			if (p == 0) {
				int e = 0, fd;
				close(go[1]);
				if (read(go[0], buf, 1) < 0)
					_exit(1);
				fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd < 0 || write(fd, "+1\n", 3) != 3 || close(fd))
					e = errno;
				if (write(res[1], &e, sizeof(e)) != sizeof(e))
					_exit(1);
				_exit(0);
			}
		}
		close(go[0]);
		close(res[1]);
		close(go[1]); /* EOF releases every child at once */
		for (int i = 0; i < k; i++) {
			int e = EIO;
			if (read(res[0], &e, sizeof(e)) != sizeof(e) || e) {
				failed++;
				if (!first)
					first = e;
			}
		}
		close(res[0]);
		while (wait(NULL) > 0)
			;
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		if (atoi(buf) != k)
			wrong++;
	}
	printf("failures %d\nfirst %s\nwrong %d\n", failed,
	       first ? strerrorname_np(first) : "none", wrong);
	return 0;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* One getdents64 into 1,000 bytes: the entries' count, their names into
 * names[] (NAME_LEN each, 64 at most) and offsets into offs[]. */
#define NAME_LEN 32
static int dents(int fd, char (*names)[NAME_LEN], off_t *offs)
{
	char buf[1000];
	long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
	int k = 0;

	if (n < 0)
		die_errno("getdents64");
	for (long at = 0; at < n; k++) {
		struct dirent64 *e = (struct dirent64 *)(buf + at);

		size_t len = strnlen(e->d_name, NAME_LEN - 1);

		memcpy(names[k], e->d_name, len);
		names[k][len] = '\0';
		offs[k] = e->d_off;
		at += e->d_reclen;
	}
	return k;
}

static int op_listing(const char *dir, int n, int u)
{
	char path[4096], names[64][NAME_LEN], (*all)[NAME_LEN];
	off_t offs[64], *alloffs;
	unsigned char *seen = calloc((size_t)n, 1);
	unsigned char *useen = calloc((size_t)u + 1, 1);
	unsigned char *cseen = calloc((size_t)n * 4, 1);
	int fd, k, calls = 0, total = 0, dots = 0, bad = 0;

	all = malloc(sizeof(*all) * (size_t)(n + 2));
	alloffs = malloc(sizeof(*alloffs) * (size_t)(n + 2));
	if (!seen || !useen || !cseen || !all || !alloffs || n < 1 || u < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/s%05d", dir, i);
		close(open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC));
	}
	fd = open_or_die(dir, O_RDONLY | O_DIRECTORY);
	while ((k = dents(fd, names, offs)) > 0) {
		for (int j = 0; j < k; j++, total++) {
			int i;

			if (!strcmp(names[j], ".") || !strcmp(names[j], "..")) {
				dots++;
			} else if (names[j][0] == 's' &&
			           sscanf(names[j] + 1, "%d", &i) == 1 &&
			           i >= 0 && i < n) {
				if (seen[i]++)
					printf("twice %s\n", names[j]), bad = 1;
			} else if (names[j][0] == 'u' &&
			           sscanf(names[j] + 1, "%d", &i) == 1 &&
			           i >= 0 && i < u) {
				if (useen[i]++)
					printf("twice %s\n", names[j]), bad = 1;
			} else if (names[j][0] == 'c' &&
			           sscanf(names[j] + 1, "%d", &i) == 1 &&
			           i >= 0 && i < 4 * n) {
				if (cseen[i]++)
					printf("twice %s\n", names[j]), bad = 1;
			} else {
				printf("unknown %s\n", names[j]), bad = 1;
			}
		}
		snprintf(path, sizeof(path), "%s/c%05d", dir, calls);
		close(open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC));
		if (calls >= 3) {
			snprintf(path, sizeof(path), "%s/c%05d", dir, calls - 3);
			if (unlink(path))
				die_errno("unlink");
		}
		if (calls % 5 == 0 && calls / 5 < u) {
			struct stat st;

			snprintf(path, sizeof(path), "%s/u%05d", dir, calls / 5);
			if (stat(path, &st))
				die_errno("stat");
		}
		calls++;
	}
	if (k < 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (seen[i] != 1)
			printf("s%05d listed %d times\n", i, seen[i]), bad = 1;
	for (int i = 0; i < u; i++)
		if (useen[i] != 1)
			printf("u%05d listed %d times\n", i, useen[i]), bad = 1;
	if (dots != 2)
		printf("dots %d\n", dots), bad = 1;
	printf("listed %d\n", total);

	/* seekdir: the same entries from an offset of a quiet listing */
	lseek(fd, 0, SEEK_SET);
	total = 0;
	while ((k = dents(fd, names, offs)) > 0)
		for (int j = 0; j < k && total < n + 2; j++, total++) {
			memcpy(all[total], names[j], NAME_LEN);
			alloffs[total] = offs[j];
		}
	for (int r = 0; r < 20; r++) {
		int at = (int)((long)r * 7919 % total);

		if (at + 1 >= total)
			continue;
		if (lseek(fd, alloffs[at], SEEK_SET) != alloffs[at])
			die_errno("lseek");
		k = dents(fd, names, offs);
		for (int j = 0; j < k && at + 1 + j < total; j++)
			if (strcmp(names[j], all[at + 1 + j]))
				printf("seek to %lld: %s, not %s\n",
				       (long long)alloffs[at], names[j],
				       all[at + 1 + j]), bad = 1;
	}
	printf("seeks 20\n");
	close(fd);
	free(seen);
	free(useen);
	free(cseen);
	free(all);
	free(alloffs);
	return bad;
}

static int op_die(const char *path, const char *data, const char *how)
{
	int fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
	pthread_t t;

	write_or_die(fd, data, strlen(data), "write");
	printf("ready\n");
	fflush(stdout);
	if (!strcmp(how, "threads")) {
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t, NULL, idle_thread, NULL)) {
				printf("FAIL pthread_create\n");
				return 1;
			}
	} else if (!strcmp(how, "abort")) {
		abort();
	} else if (!strcmp(how, "_exit")) {
		_exit(0);
	} else if (strcmp(how, "kill") != 0) {
		return 2;
	}
	for (;;)
		pause();
}

static int op_stream(const char *dir, long synced)
{
	char path[4096], v[32];

	for (long i = 1;; i++) {
		int fd, n = snprintf(v, sizeof(v), "value %ld", i);

		snprintf(path, sizeof(path), "%s/k%ld", dir, i);
		fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
		write_or_die(fd, v, (size_t)n, "write");
		if (i == synced && fsync(fd))
			die_errno("fsync");
		if (close(fd))
			die_errno("close");
		printf("%ld\n", i);
		if (i == synced)
			printf("synced %ld\n", i);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(op, "handle") && argc == 3)
		return op_handle(argv[2]);
	if (!strcmp(op, "listed") && argc == 3)
		return op_listed(argv[2]);
	if (!strcmp(op, "copy") && argc == 4)
		return op_copy(argv[2], argv[3]);
	if (!strcmp(op, "deleted") && argc == 3)
		return op_deleted(argv[2]);
	if (!strcmp(op, "churn") && argc == 4)
		return op_churn(argv[2], atoi(argv[3]));
	if (!strcmp(op, "unlinkopen") && argc == 3)
		return op_unlinkopen(argv[2]);
	if (!strcmp(op, "sparse") && argc == 5)
		return op_sparse(argv[2], atoi(argv[3]), argv[4]);
	if (!strcmp(op, "hold") && (argc == 5 ||
	                             (argc == 6 && !strcmp(argv[5], "sync"))))
		return op_hold(argv[2], atol(argv[3]), argv[4], argc == 6);
	if (!strcmp(op, "refused") && argc == 4)
		return op_refused(argv[2], atol(argv[3]));
	if (!strcmp(op, "race") && argc == 5)
		return op_race(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(op, "listing") && argc == 5)
		return op_listing(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(op, "die") && argc == 5)
		return op_die(argv[2], argv[3], argv[4]);
	if (!strcmp(op, "syncs") && argc == 4)
		return op_syncs(argv[2], argv[3]);
	if (!strcmp(op, "stream") && argc == 4)
		return op_stream(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: see fileops.c\n");
	return 2;
}
