/*
 * util.c - the clock, the default store path, and file-system helpers for
 * creating stores and writing checkpoints durably.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* $HOME, else the password database (into buf). NULL if neither knows. */
static const char *home_dir(char *buf, size_t len)
{
	const char *h = getenv("HOME");
	struct passwd pw, *res = NULL;

	if (h && *h)
		return h;
	if (getpwuid_r(getuid(), &pw, buf, len, &res) != 0 || !res ||
	    !pw.pw_dir || !*pw.pw_dir)
		return NULL;
	return pw.pw_dir;
}

int sfs_default_path(char **out)
{
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home;
	char *p = NULL, pwbuf[4096];
	int n;

	sfs_err_clear();
	if (!out)
		return sfs_err(SFS_INVALID, "out is NULL");
	/* The XDG spec says relative values are to be ignored. */
	if (xdg && xdg[0] == '/') {
		n = asprintf(&p, "%s/statefs/state.db", xdg);
	} else {
		home = home_dir(pwbuf, sizeof(pwbuf));
		if (!home)
			return sfs_err(SFS_NOTFOUND,
			               "neither XDG_STATE_HOME nor HOME is set");
		n = asprintf(&p, "%s/.local/state/statefs/state.db", home);
	}
	if (n < 0)
		return sfs_err(SFS_NOMEM, "building the default path");
	*out = p;
	return SFS_OK;
}

int util_mkparents(const char *path, unsigned mode)
{
	char *p = strdup(path);
	char *slash;

	if (!p)
		return sfs_err(SFS_NOMEM, "copying a path");
	for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(p, mode) != 0 && errno != EEXIST) {
			int e = errno, len = (int)(slash - p);

			free(p);
			return sfs_err(SFS_IO, "mkdir %.*s: %s", len, path,
			               strerror(e));
		}
		*slash = '/';
	}
	free(p);
	return SFS_OK;
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

char *util_tmp_beside(const char *path, const char *prefix)
{
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path) + 1 : 0;
	unsigned r = 0;
	char *out = NULL;
	int fd;

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
