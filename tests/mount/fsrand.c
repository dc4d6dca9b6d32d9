/*
 * fsrand.c - random file operations on one value through the mount,
 * checked against a model in memory: the properties fsx (xfstests) checks,
 * written for our suite (fsx itself is how the mount is judged; it is not
 * vendored).
 *
 * One descriptor O_RDWR, as fsx uses it, and per operation one of:
 *   write     pwrite of random bytes at a random offset (also past the end,
 *             leaving a hole of zeros)
 *   truncate  ftruncate to a random length, shorter or longer
 *   read      pread of a random range, compared with the model
 *   copy      copy_file_range of a range of the file to a range that does
 *             not overlap it, looping on short copies
 *   stat      fstat: st_size is the model's length
 *   append    lseek(SEEK_END) is the model's length, and a write there
 *   fsync     the handle's changes committed (fsync)
 *   reopen    close (commit) and open again; then a second, read-only
 *             descriptor reads the whole value and compares it
 *   oappend   close, open O_WRONLY|O_APPEND, write, close, reopen
 * The seed and every operation are printed on a failure (the last 20).
 *
 * Usage: fsrand PATH OPS SEED [MAXLEN]
 *   MAXLEN: the longest the value gets (default 262144, fsx's default)
 * Exit: 0 when every operation matched; 1 at the first mismatch or failed
 * call; 2 on a bad command line.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXOP 65536
#define HISTORY 20

static const char *path;
static unsigned long seed;
static long maxlen = 262144;
static unsigned char *model, *buf, *buf2;
static long size;  /* the model's length */
static int fd = -1;
static char history[HISTORY][96];
static long opno;

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: reproducible from the seed on every platform */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static long upto(long n)
{
	return n > 0 ? (long)(rnd() % (uint64_t)n) : 0;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	char *h = history[opno % HISTORY];
	int n = snprintf(h, sizeof(history[0]), "%ld ", opno);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h + n, sizeof(history[0]) - (size_t)n, fmt, ap);
	va_end(ap);
}

static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL at operation %ld (seed %lu): ", opno, seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nthe last operations:\n");
	for (long i = opno - HISTORY + 1; i <= opno; i++)
		if (i >= 1)
			printf("  %s\n", history[i % HISTORY]);
	exit(1);
}

static void check_errno(int ok, const char *what)
{
	if (!ok)
		failed("%s: %s", what, strerrorname_np(errno) ? strerrorname_np(errno)
		                                               : "E?");
}

static void model_resize(long n)
{
	if (n > size)
		memset(model + size, 0, (size_t)(n - size));
	size = n;
}

static void fill(unsigned char *p, long n)
{
	for (long i = 0; i < n; i++)
		p[i] = (unsigned char)(rnd() >> 24);
}

static void compare(const unsigned char *got, long off, long n,
                    const char *what)
{
	for (long i = 0; i < n; i++)
		if (got[i] != model[off + i])
			failed("%s: byte %ld is 0x%02x, want 0x%02x", what, off + i,
			       got[i], model[off + i]);
}

static void op_write(void)
{
	long off = upto(maxlen), n = 1 + upto(MAXOP);

	if (off + n > maxlen)
		n = maxlen - off;
	note("write %ld +%ld", off, n);
	fill(buf, n);
	check_errno(pwrite(fd, buf, (size_t)n, off) == n, "pwrite");
	if (off + n > size)
		model_resize(off + n);
	memcpy(model + off, buf, (size_t)n);
}

static void op_truncate(void)
{
	long n = upto(maxlen + 1);

	note("truncate %ld", n);
	check_errno(ftruncate(fd, n) == 0, "ftruncate");
	model_resize(n);
}

static void op_read(void)
{
	long off = upto(size + 100), n = 1 + upto(MAXOP);
	long want = off >= size ? 0 : (off + n > size ? size - off : n);
	ssize_t got;

	note("read %ld +%ld", off, n);
	got = pread(fd, buf, (size_t)n, off);
	check_errno(got >= 0, "pread");
	if (got != want)
		failed("pread of %ld at %ld gave %zd bytes, want %ld", n, off, got,
		       want);
	compare(buf, off, want, "pread");
}

static void op_copy(void)
{
	long n, src, dst;
	loff_t in, out;
	long done = 0;
	int spins = 0;

	if (size < 2)
		return;
	n = 1 + upto(size / 2 < MAXOP ? size / 2 : MAXOP);
	src = upto(size - n + 1);
	/* A destination that does not overlap the source. */
	do {
		dst = upto(maxlen - n + 1);
	} while (dst < src + n && src < dst + n);
	note("copy %ld +%ld to %ld", src, n, dst);
	in = src;
	out = dst;
	while (done < n) {
		ssize_t c = copy_file_range(fd, &in, fd, &out, (size_t)(n - done), 0);
		check_errno(c >= 0, "copy_file_range");
		if (c == 0 && ++spins > 20)
			failed("copy_file_range gave 0 with %ld of %ld bytes copied",
			       done, n);
		done += c;
	}
	memmove(buf, model + src, (size_t)n);
	if (dst + n > size)
		model_resize(dst + n);
	memcpy(model + dst, buf, (size_t)n);
}

static void op_stat(void)
{
	struct stat st;

	note("fstat");
	check_errno(fstat(fd, &st) == 0, "fstat");
	if (st.st_size != size)
		failed("fstat says %lld bytes, want %ld", (long long)st.st_size,
		       size);
}

static void op_append(void)
{
	long n = 1 + upto(MAXOP / 8);
	off_t end;

	if (size + n > maxlen)
		return;
	note("seek_end, write %ld", n);
	end = lseek(fd, 0, SEEK_END);
	check_errno(end >= 0, "lseek SEEK_END");
	if (end != size)
		failed("lseek(SEEK_END) gave %lld, want %ld", (long long)end, size);
	fill(buf, n);
	check_errno(write(fd, buf, (size_t)n) == n, "write after SEEK_END");
	memcpy(model + size, buf, (size_t)n);
	size += n;
}

static void open_main(void)
{
	fd = open(path, O_RDWR);
	check_errno(fd >= 0, "open");
}

/* The whole value through a new read-only descriptor (a snapshot of what
 * the store holds). */
static void verify_all(void)
{
	int r = open(path, O_RDONLY);
	long got = 0;
	ssize_t n;

	check_errno(r >= 0, "open read-only");
	while ((n = read(r, buf2 + got, (size_t)(maxlen + 1 - got))) > 0)
		got += n;
	check_errno(n == 0, "read");
	close(r);
	if (got != size)
		failed("the stored value is %ld bytes, want %ld", got, size);
	compare(buf2, 0, got, "stored value");
}

static void op_fsync(void)
{
	note("fsync");
	check_errno(fsync(fd) == 0, "fsync");
	verify_all();
}

static void op_reopen(void)
{
	note("close, open");
	check_errno(close(fd) == 0, "close");
	open_main();
	verify_all();
}

static void op_oappend(void)
{
	long n = 1 + upto(MAXOP / 8);
	int a;

	if (size + n > maxlen)
		return;
	note("O_APPEND write %ld", n);
	check_errno(close(fd) == 0, "close");
	a = open(path, O_WRONLY | O_APPEND);
	check_errno(a >= 0, "open O_APPEND");
	fill(buf, n);
	check_errno(pwrite(a, buf, (size_t)n, 0) == n, "write O_APPEND");
	check_errno(close(a) == 0, "close O_APPEND");
	memcpy(model + size, buf, (size_t)n);
	size += n;
	open_main();
}

int main(int argc, char **argv)
{
	long ops;

	if (argc < 4 || argc > 5)
		return 2;
	path = argv[1];
	ops = atol(argv[2]);
	seed = strtoul(argv[3], NULL, 10);
	if (argc == 5)
		maxlen = atol(argv[4]);
	if (ops <= 0 || maxlen < 2)
		return 2;
	rng_state = seed;
	model = calloc(1, (size_t)maxlen + MAXOP);
	buf = malloc((size_t)maxlen + MAXOP);
	buf2 = malloc((size_t)maxlen + 1);
	if (!model || !buf || !buf2)
		return 1;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	check_errno(fd >= 0, "create");
	for (opno = 1; opno <= ops; opno++) {
		unsigned r = (unsigned)upto(100);

		if (r < 30)
			op_write();
		else if (r < 40)
			op_truncate();
		else if (r < 65)
			op_read();
		else if (r < 75)
			op_copy();
		else if (r < 85)
			op_stat();
		else if (r < 94)
			op_append();
		else if (r < 95)
			op_fsync();
		else if (r < 98)
			op_reopen();
		else
			op_oappend();
	}
	opno--;
	check_errno(close(fd) == 0, "close");
	verify_all();
	printf("%ld operations, seed %lu, final length %ld: all matched\n", ops,
	       seed, size);
	free(model);
	free(buf);
	free(buf2);
	return 0;
}
