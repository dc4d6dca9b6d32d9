/*
 * util.c - the clock, the default store path, file-system helpers for
 * creating stores and writing checkpoints durably, and sfs_digest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "err_i.h"
#include "util_i.h"

static _Atomic(int64_t (*)(void)) clock_fn;

int64_t sfs_clock_ns(void)
{
	int64_t (*fn)(void) = atomic_load(&clock_fn);
	struct timespec ts;

	if (fn)
		return fn();
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sfs_clock_mtime_ns(void)
{
	int64_t (*fn)(void) = atomic_load(&clock_fn);
	struct timespec ts;
	int64_t t;

	if (fn) {
		t = fn();
		return t - (t % 1000000000 + 1000000000) % 1000000000;
	}
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000;
}

void sfs_clock_set(int64_t (*fn)(void))
{
	atomic_store(&clock_fn, fn);
}

int sfs_clock_is_set(void)
{
	return atomic_load(&clock_fn) != NULL;
}

int util_mkparents(const char *path, unsigned mode, size_t *made)
{
	char *p = strdup(path);
	char *slash;

	*made = 0;
	if (!p)
		return sfs_err(SFS_NOMEM, "copying a path");
	for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(p, mode) == 0) {
			if (!*made)
				*made = (size_t)(slash - p);
		} else if (errno != EEXIST) {
			int e = errno, len = (int)(slash - p);

			free(p);
			util_rmparents(path, *made);
			*made = 0;
			return sfs_err(SFS_IO, "mkdir %.*s: %s", len, path,
			               strerror(e));
		}
		*slash = '/';
	}
	free(p);
	return SFS_OK;
}

void util_rmparents(const char *path, size_t made)
{
	char *p, *slash;
	int saverr = errno;

	if (!made || !(p = strdup(path)))
		return;
	/* deepest first (one that is not there, past a mkdir that failed,
	 * is skipped); a directory that is not empty (another process put
	 * something in it) stops the walk: it and those above it stay */
	while ((slash = strrchr(p, '/')) && (size_t)(slash - p) >= made) {
		*slash = '\0';
		if (rmdir(p) != 0 && errno != ENOENT)
			break;
	}
	free(p);
	errno = saverr;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	int e;

	if (fd < 0)
		return sfs_err(SFS_IO, "open %s: %s", path, strerror(errno));
	if (fsync(fd) != 0) {
		e = errno;
		close(fd);
		/* Some file systems cannot fsync a directory; that is no error. */
		if ((flags & O_DIRECTORY) && (e == EINVAL || e == ENOTSUP))
			return SFS_OK;
		return sfs_err(e == ENOSPC ? SFS_FULL : SFS_IO, "fsync %s: %s",
		               path, strerror(e));
	}
	close(fd);
	return SFS_OK;
}

int util_fsync_file(const char *path)
{
	return fsync_path(path, O_RDONLY);
}

int util_abspath(const char *path, char **out)
{
	const char *slash = strrchr(path, '/'), *base;
	char *dir, *real = NULL, *cwd = NULL;
	int n, saverr;

	if (path[0] == '/') {
		*out = strdup(path);
		return *out ? SFS_OK : sfs_err(SFS_NOMEM, "copying a path");
	}
	base = slash ? slash + 1 : path;
	dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return sfs_err(SFS_NOMEM, "copying a path");
	if (*base)
		real = realpath(dir, NULL);
	free(dir);
	if (real) {
		n = asprintf(out, "%s%s%s", real, strcmp(real, "/") ? "/" : "",
		             base);
		free(real);
		return n < 0 ? sfs_err(SFS_NOMEM, "copying a path") : SFS_OK;
	}
	cwd = getcwd(NULL, 0);
	if (!cwd) {
		saverr = errno;
		return sfs_err(saverr == ENOMEM ? SFS_NOMEM : SFS_IO,
		               "cannot make %s absolute: no working directory "
		               "(%s)", path, strerror(saverr));
	}
	n = asprintf(out, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", path);
	free(cwd);
	return n < 0 ? sfs_err(SFS_NOMEM, "copying a path") : SFS_OK;
}

int util_fsync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int rc;

	if (!slash)
		return fsync_path(".", O_RDONLY | O_DIRECTORY);
	dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!dir)
		return sfs_err(SFS_NOMEM, "copying a path");
	rc = fsync_path(dir, O_RDONLY | O_DIRECTORY);
	free(dir);
	return rc;
}

/* Removes from dir (dirlen bytes of path, or ".") what util_tmp_beside
 * named with prefix for a process that is gone (SIGKILL left it, with
 * its "-journal" or "-wal"), once it has not changed for ABANDONED_S: a
 * pid of another PID namespace or host looks gone too, but a temporary
 * file in use is written to. */
#define ABANDONED_S (10 * 60)

static void sweep_abandoned(const char *path, int dirlen, const char *prefix)
{
	size_t plen = strlen(prefix);
	char *dir = dirlen ? strndup(path, (size_t)dirlen) : strdup(".");
	struct dirent *e;
	DIR *d = dir ? opendir(dir) : NULL;
	time_t now = time(NULL);

	while (d && (e = readdir(d))) {
		char *end, *name = NULL;
		long pid;
		struct stat sb;

		if (strncmp(e->d_name, prefix, plen))
			continue;
		errno = 0;
		pid = strtol(e->d_name + plen, &end, 10);
		if (errno || pid <= 0 || *end != '-' ||
		    strspn(end + 1, "0123456789abcdef") != 8 ||
		    (end[9] && strcmp(end + 9, "-journal") &&
		     strcmp(end + 9, "-wal") && strcmp(end + 9, "-shm")))
			continue;
		if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		if (asprintf(&name, "%s/%s", dir, e->d_name) < 0)
			break;
		if (lstat(name, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    now - sb.st_mtime >= ABANDONED_S)
			unlink(name);
		free(name);
	}
	if (d)
		closedir(d);
	free(dir);
}

char *util_tmp_beside(const char *path, const char *prefix)
{
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path) + 1 : 0;
	unsigned r = 0;
	char *out = NULL;
	int fd;

	sweep_abandoned(path, dirlen, prefix);

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
			r = 0;
		close(fd);
	}
	if (!r)
		r = (unsigned)sfs_clock_ns();
	if (asprintf(&out, "%.*s%s%ld-%08x", dirlen, path, prefix,
	             (long)getpid(), r) < 0)
		return NULL;
	return out;
}

void sfs_digest(const void *p, size_t n, unsigned char out[SFS_DIGEST_BYTES])
{
	/* crypto_generichash needs no sodium_init(): before it the portable
	 * BLAKE2b implementation is used. */
	crypto_generichash(out, SFS_DIGEST_BYTES, p, n, NULL, 0);
}
