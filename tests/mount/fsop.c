/*
 * fsop.c - one file-system call, and its errno by name, for the mount
 * tests' error cases (shell tools print messages, not errno values).
 *
 * Usage: fsop OP PATH [ARG]
 *   write PATH DATA     open(O_WRONLY|O_CREAT|O_TRUNC), write, close
 *   append PATH DATA    the same with O_APPEND instead of O_TRUNC
 *   read PATH [FLAG]    open(O_RDONLY), read to EOF, close; with FLAG,
 *                       creates the file FLAG once PATH is open (a test
 *                       knows the next request is the READ)
 *   readtrunc PATH      the same with O_RDONLY|O_TRUNC (Linux cuts)
 *   tmpfile DIR         open(DIR, O_RDWR|O_TMPFILE) and close
 *   getxattr PATH NAME  setxattr PATH NAME   listxattr PATH
 *   openw PATH          open(O_WRONLY) and close
 *   symlink PATH TARGET   link PATH OLD   mknod PATH   mkfifo PATH
 *   mkreg PATH          mknod of a regular file (S_IFREG), as tar does
 *   mkdir PATH   rmdir PATH   unlink PATH   rename PATH NEW
 *   exchange PATH OTHER renameat2(RENAME_EXCHANGE)
 *   truncate PATH SIZE   stat PATH
 *   utime PATH SECONDS  utimensat of both times to SECONDS since 1970
 * Prints "OK" or the errno's name ("ENODATA") of the first call that
 * failed, and for read the bytes read before "OK" on stdout when -v is the
 * first argument. Exit: 0 whatever the outcome, 2 on a bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static int result(int failed)
{
	if (failed)
		printf("%s\n", strerrorname_np(errno) ? strerrorname_np(errno)
		                                      : "E?");
	else
		printf("OK\n");
	return 0;
}

static int do_write(const char *path, const char *data, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	size_t n = strlen(data);

	if (fd < 0)
		return result(1);
	if (write(fd, data, n) != (ssize_t)n) {
		int e = errno;
		close(fd);
		errno = e;
		return result(1);
	}
	return result(close(fd) != 0);
}

static int do_read(const char *path, int verbose, const char *flag,
                   int flags)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | flags);

	if (fd < 0)
		return result(1);
	if (flag) {
		int ffd = open(flag, O_WRONLY | O_CREAT, 0644);
		if (ffd < 0)
			return 2;
		close(ffd);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (verbose)
			fwrite(buf, 1, (size_t)n, stdout);
	if (n < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return result(1);
	}
	return result(close(fd) != 0);
}

int main(int argc, char **argv)
{
	int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	const char *op, *path, *a;

	argv += verbose;
	argc -= verbose;
	if (argc < 3)
		return 2;
	op = argv[1];
	path = argv[2];
	a = argc > 3 ? argv[3] : NULL;
	if (!strcmp(op, "write") && a)
		return do_write(path, a, O_TRUNC);
	if (!strcmp(op, "append") && a)
		return do_write(path, a, O_APPEND);
	if (!strcmp(op, "read"))
		return do_read(path, verbose, a, 0);
	if (!strcmp(op, "readtrunc"))
		return do_read(path, verbose, NULL, O_TRUNC);
	if (!strcmp(op, "openw")) {
		int fd = open(path, O_WRONLY);
		if (fd < 0)
			return result(1);
		return result(close(fd) != 0);
	}
	if (!strcmp(op, "tmpfile")) {
		int fd = open(path, O_RDWR | O_TMPFILE, 0600);
		if (fd < 0)
			return result(1);
		return result(close(fd) != 0);
	}
	if (!strcmp(op, "getxattr") && a) {
		char v[64];
		return result(getxattr(path, a, v, sizeof(v)) < 0);
	}
	if (!strcmp(op, "setxattr") && a)
		return result(setxattr(path, a, "v", 1, 0) != 0);
	if (!strcmp(op, "listxattr")) {
		char v[256];
		return result(listxattr(path, v, sizeof(v)) < 0);
	}
	if (!strcmp(op, "symlink") && a)
		return result(symlink(a, path) != 0);
	if (!strcmp(op, "link") && a)
		return result(link(a, path) != 0);
	if (!strcmp(op, "mknod"))
		return result(mknod(path, S_IFCHR | 0644, makedev(1, 3)) != 0);
	if (!strcmp(op, "mkreg"))
		return result(mknod(path, S_IFREG | 0644, 0) != 0);
	if (!strcmp(op, "mkfifo"))
		return result(mkfifo(path, 0644) != 0);
	if (!strcmp(op, "mkdir"))
		return result(mkdir(path, 0755) != 0);
	if (!strcmp(op, "rmdir"))
		return result(rmdir(path) != 0);
	if (!strcmp(op, "unlink"))
		return result(unlink(path) != 0);
	if (!strcmp(op, "rename") && a)
		return result(rename(path, a) != 0);
	if (!strcmp(op, "exchange") && a)
		return result(renameat2(AT_FDCWD, path, AT_FDCWD, a,
		                        RENAME_EXCHANGE) != 0);
	if (!strcmp(op, "stat")) {
		struct stat st;
		return result(stat(path, &st) != 0);
	}
	if (!strcmp(op, "truncate") && a)
		return result(truncate(path, atoll(a)) != 0);
	if (!strcmp(op, "utime") && a) {
		struct timespec ts[2] = { { .tv_sec = atoll(a) },
		                          { .tv_sec = atoll(a) } };
		return result(utimensat(AT_FDCWD, path, ts, 0) != 0);
	}
	return 2;
}
