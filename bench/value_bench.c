/*
 * value_bench.c - small changes to one large file, timed per operation:
 * what bench/values.sh runs on a value through the mount and on a file of
 * a tmpfs (the baseline) in the same run.
 *
 * Usage: value_bench MODE PATH SIZE OPS [PID]
 *   PATH is made SIZE bytes long (random bytes, written once, not timed),
 *   then OPS times, each as a shell or an editor would do it:
 *     append   open O_WRONLY|O_APPEND, write 4 KiB, close (`>>`);
 *     inplace  open O_WRONLY, pwrite 4 KiB at a random 4 KiB-aligned
 *              offset inside SIZE, close (`dd conv=notrunc`);
 *     write    open O_WRONLY|O_TRUNC, write the whole SIZE bytes in
 *              writes of 128 KiB, close (`cp` of a new version: the
 *              rounds alternate between two values that differ in every
 *              4 KiB);
 *     read     open O_RDONLY, read the whole value in reads of 128 KiB,
 *              close (`cat`; each round's bytes are checked).
 *   The file is then read back and checked against what was written.
 * Output: one line "MODE SIZE ns_per_op cpu_ns_per_op": the CPU time is
 * that of process PID's threads (the daemon) during the timed operations,
 * from the schedstat of each /proc/PID/task entry; 0 without PID.
 * Exit: 0; 1 on a failed call or a mismatch; 2 on a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096
#define WHOLE_IO (128 * 1024)

static int die(const char *what, const char *path)
{
	fprintf(stderr, "value_bench: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The CPU time of every thread of pid, ns (0 when pid is 0). */
static int64_t cpu_ns(long pid)
{
	char path[64];
	struct dirent *e;
	int64_t sum = 0;
	DIR *d;

	if (!pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		char p[400];
		long long ns;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/schedstat", path, e->d_name);
		if ((f = fopen(p, "r"))) {
			if (fscanf(f, "%lld", &ns) == 1)
				sum += ns;
			fclose(f);
		}
	}
	closedir(d);
	return sum;
}

static int write_all(int fd, const unsigned char *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n < WHOLE_IO ? n : WHOLE_IO, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode, *path;
	size_t size, total, pos = 0;
	long ops, pid;
	unsigned char *model, *back, *alt = NULL;
	int append, whole_write, whole_read, fd;
	int64_t t0, t1, c0, c1;
	ssize_t r;

	if (argc < 5 || argc > 6 ||
	    (strcmp(argv[1], "append") && strcmp(argv[1], "inplace") && strcmp(argv[1], "write") &&
	     strcmp(argv[1], "read")) ||
	    (size = strtoul(argv[3], NULL, 0)) < CHUNK || (ops = atol(argv[4])) < 1) {
		fprintf(stderr, "usage: value_bench append|inplace|write|read PATH SIZE OPS [PID]\n");
		return 2;
	}
	pid = argc == 6 ? atol(argv[5]) : 0;
	mode = argv[1];
	path = argv[2];
	append = !strcmp(mode, "append");
	whole_write = !strcmp(mode, "write");
	whole_read = !strcmp(mode, "read");
	total = append ? size + (size_t)ops * CHUNK : size;
	model = malloc(total);
	back = malloc(total + 1);
	if (!model || !back)
		return die("malloc", "");
	srandom((unsigned)size);
	for (size_t i = 0; i < total; i++)
		model[i] = (unsigned char)random();
	if (whole_write) {
		if (!(alt = malloc(total)))
			return die("malloc", "");
		for (size_t i = 0; i < total; i++)
			alt[i] = (unsigned char)random();
	}

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_all(fd, model, size, 0) || close(fd))
		return die("writing", path);

	c0 = cpu_ns(pid);
	t0 = now_ns();
	for (long i = 0; i < ops; i++) {
		off_t off;

		if (whole_read) {
			if ((fd = open(path, O_RDONLY)) < 0)
				return die("open", path);
			pos = 0;
			while ((r = read(fd, back + pos, WHOLE_IO < total + 1 - pos ? WHOLE_IO
			                                                          : total + 1 - pos)) > 0)
				pos += (size_t)r;
			if (r < 0 || close(fd))
				return die("read", path);
			if (pos != total || memcmp(back, model, total)) {
				fprintf(stderr, "value_bench: read %s: %zu bytes read, %zu written\n",
				        path, pos, total);
				return 1;
			}
			continue;
		}
		if (whole_write) {
			unsigned char *t = model;

			model = alt;
			alt = t;
			fd = open(path, O_WRONLY | O_TRUNC);
			if (fd < 0)
				return die("open", path);
			if (write_all(fd, model, size, 0) || close(fd))
				return die("write", path);
			continue;
		}
		fd = open(path, append ? O_WRONLY | O_APPEND : O_WRONLY);
		if (fd < 0)
			return die("open", path);
		if (append) {
			off = (off_t)(size + (size_t)i * CHUNK);
		} else {
			off = (off_t)((size_t)random() % (size / CHUNK)) * CHUNK;
			for (size_t j = 0; j < CHUNK; j++)
				model[off + j] = (unsigned char)random();
		}
		/* O_APPEND: the kernel writes at the end, whatever off says */
		if (write_all(fd, model + off, CHUNK, off) || close(fd))
			return die("write", path);
	}
	t1 = now_ns();
	c1 = cpu_ns(pid);

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return die("open", path);
	pos = 0;
	while ((r = read(fd, back + pos, total + 1 - pos)) > 0)
		pos += (size_t)r;
	close(fd);
	if (r < 0)
		return die("read", path);
	if (pos != total || memcmp(back, model, total)) {
		fprintf(stderr, "value_bench: %s %s: %zu bytes read back, %zu written%s\n",
		        mode, path, pos, total, pos == total ? ", other bytes" : "");
		return 1;
	}
	printf("%s %zu %lld %lld\n", mode, size, (long long)((t1 - t0) / ops),
	       (long long)((c1 - c0) / ops));
	free(model);
	free(alt);
	free(back);
	return 0;
}
