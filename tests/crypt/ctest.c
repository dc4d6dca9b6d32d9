/*
 * ctest.c - see ctest.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ctest.h"

void ct_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FATAL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

void ct_mkdir(char *out, const char *tag)
{
	snprintf(out, 64, "/tmp/sfs-%s-XXXXXX", tag);
	if (!mkdtemp(out))
		ct_die("mkdtemp: %s", strerror(errno));
}

void ct_rmtree(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ct_die("%s failed", cmd);
}

off_t ct_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void rw(const char *path, void *buf, size_t n, off_t off, int write)
{
	int fd = open(path, O_RDWR);
	ssize_t r;

	if (fd < 0)
		ct_die("open %s: %s", path, strerror(errno));
	r = write ? pwrite(fd, buf, n, off) : pread(fd, buf, n, off);
	if (r != (ssize_t)n)
		ct_die("%s %s at %lld: %zd", write ? "pwrite" : "pread", path,
		       (long long)off, r);
	close(fd);
}

void ct_pread(const char *path, void *buf, size_t n, off_t off)
{
	rw(path, buf, n, off, 0);
}

void ct_pwrite(const char *path, const void *buf, size_t n, off_t off)
{
	rw(path, (void *)buf, n, off, 1);
}

void ct_flip(const char *path, off_t off)
{
	unsigned char b;

	ct_pread(path, &b, 1, off);
	b ^= 0x10;
	ct_pwrite(path, &b, 1, off);
}

void ct_copy(const char *from, const char *to)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	if (system(cmd) != 0)
		ct_die("%s failed", cmd);
}

static int has(const unsigned char *hay, size_t hn, const void *needle,
               size_t nn)
{
	return nn && hn >= nn && memmem(hay, hn, needle, nn) != NULL;
}

const char *ct_file_leaks(const char *path, const unsigned char *secret,
                          size_t n)
{
	static const int b64[] = { sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
	                           sodium_base64_VARIANT_URLSAFE_NO_PADDING };
	unsigned char *data;
	char enc[1024];
	off_t size = ct_size(path);
	const char *found = NULL;

	if (size <= 0)
		return NULL;
	if (n > 300 || sodium_init() < 0)
		ct_die("ct_file_leaks: secret too long");
	data = malloc((size_t)size);
	if (!data)
		ct_die("out of memory");
	ct_pread(path, data, (size_t)size, 0);
	if (has(data, (size_t)size, secret, n))
		found = "raw";
	sodium_bin2hex(enc, sizeof(enc), secret, n);
	if (!found && has(data, (size_t)size, enc, strlen(enc)))
		found = "hex";
	for (char *p = enc; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'f' ? *p - 32 : *p);
	if (!found && has(data, (size_t)size, enc, strlen(enc)))
		found = "HEX";
	/* Base64 of a stream that contains the secret at stream offset o:
	 * from the first multiple of 3 after o, whole groups encode on their
	 * own. Try the three alignments, whole groups only. */
	for (int v = 0; v < 2 && !found; v++) {
		for (size_t shift = 0; shift < 3 && !found; shift++) {
			size_t len = (n - shift) / 3 * 3;
			sodium_bin2base64(enc, sizeof(enc), secret + shift, len,
			                  b64[v]);
			if (has(data, (size_t)size, enc, strlen(enc)))
				found = "base64";
		}
	}
	free(data);
	return found;
}

const char *ct_dir_leaks(const char *dir, const unsigned char *secret,
                         size_t n, char *which, size_t whichlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	const char *found = NULL;
	char path[1024];

	if (!d)
		ct_die("opendir %s: %s", dir, strerror(errno));
	while (!found && (e = readdir(d))) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		found = ct_file_leaks(path, secret, n);
		if (found)
			snprintf(which, whichlen, "%s", e->d_name);
	}
	closedir(d);
	return found;
}

int ct_open(const char *path, const sfs_key *key, unsigned flags,
            sfs_store **out)
{
	sfs_config o = { 0 };

	o.db = path;
	o.key = key;
	o.flags = flags | (key ? 0 : SFS_OPEN_PLAINTEXT);
	return sfs_store_open(&o, out, NULL);
}

void ct_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
