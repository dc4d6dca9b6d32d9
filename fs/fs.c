/*
 * fs.c - the statefs filesystem: its lifetime (create, stop, destroy), the
 * libfuse low-level operations table, and the one status-to-errno
 * translation (fs_errno).
 *
 * Every handler is a thin translation: find the node, copy its store
 * address, make one or two engine calls (through store.c, by kind), reply
 * exactly once. The handlers live by job: names and lookups in lookup.c,
 * attributes in attr.c, changes to the tree in tree.c, open files in
 * file.c and special.c, directories being read in dir.c, the .wait readers
 * in wait.c.
 *
 * Cache choices (docs/filesystem.md has the reasoning): positive entries
 * live FS_TTL_ENTRY, negative ones are never cached (a plain ENOENT), a
 * file's attributes from LOOKUP and GETATTR are never cached (another
 * process may change the value at any time), and every file is opened with
 * direct_io, so content always comes from the handle's snapshot of the
 * store. What is left out: xattrs, locks (the kernel keeps POSIX locks
 * local), symlinks, hard links and device nodes (EPERM).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

void fs_log(fs *f, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!f->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f->log(level, msg, f->log_ctx);
}

int fs_errno(fs *f, int status, const char *op)
{
	switch (status) {
	case SFS_OK:
		return 0;
	case SFS_NOTFOUND:
	case SFS_CLAIMLOST:  /* a lost claim shows as its file gone */
		return ENOENT;
	case SFS_INVALID:
	case SFS_OVERFLOW:   /* counters: nothing changed */
		return EINVAL;
	case SFS_TOOBIG:
		return EFBIG;
	case SFS_EXISTS:
		return EEXIST;
	case SFS_NOTEMPTY:
		return ENOTEMPTY;
	case SFS_READONLY:
		return EROFS;
	case SFS_FULL:
		return ENOSPC;
	case SFS_NOMEM:
		return ENOMEM;
	case SFS_CANCELLED:
		return EINTR;
	case SFS_BUSY:
		fs_log(f, LOG_WARNING, "%s: %s: %s", op, sfs_strerror(status),
		       sfs_errdetail());
		return EBUSY;
	default:
		/* The engine failed: I/O, a page that fails authentication,
		 * a wrong key, a bug. The user sees EIO; the log says why. */
		fs_log(f, LOG_ERR, "%s: %s: %s", op, sfs_strerror(status),
		       sfs_errdetail());
		return EIO;
	}
}

int64_t fs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The time the store records for a write made now: whole seconds of
 * the coarse clock, as the engine takes it (sfs_clock_mtime_ns), so a
 * time shown before the commit is never later than the one stored. */
int64_t fs_write_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000;
}

void fs_deadline(clockid_t clock, long ms, struct timespec *ts)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}


#define FS_ASYNC_BACKGROUND 1024

/* INIT: O_TRUNC arrives with OPEN (so `> key` is one atomic replace, not a
 * truncate then a write), no writeback cache, no splice. */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	fs *f = userdata;

	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE |
	                          FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
	                          FUSE_CAP_SPLICE_MOVE);
	/* -o async_close stores a value at its RELEASE, which the kernel
	 * sends in the background: past max_background (12 by default)
	 * RELEASEs outstanding it queues them apart, and a request made
	 * after a close returned could overtake the RELEASE and miss the
	 * value. The kernel caps this for other users than root. */
	if (f->async_close && conn->max_background < FS_ASYNC_BACKGROUND)
		conn->max_background = FS_ASYNC_BACKGROUND;
	if (fs_wait_start(f) != 0)
		fs_log(f, LOG_ERR, "cannot start the .wait thread: .wait "
		                   "readers will fail with EIO");
}

/* DESTROY: ends every kept .wait read before the session goes. */
static void op_destroy(void *userdata)
{
	fs_stop(userdata);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = fs_op_lookup,
	.forget = fs_op_forget,
	.forget_multi = fs_op_forget_multi,
	.getattr = fs_op_getattr,
	.setattr = fs_op_setattr,
	.access = fs_op_access,
	.mknod = fs_op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = fs_op_unlink,
	.rmdir = fs_op_rmdir,
	.symlink = fs_op_symlink,
	.link = fs_op_link,
	.rename = fs_op_rename,
	.open = fs_op_open,
	.create = fs_op_create,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.fsync = fs_op_fsync,
	.release = fs_op_release,
	.copy_file_range = fs_op_copy_file_range,
	.fallocate = fs_op_fallocate,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.fsyncdir = fs_op_fsyncdir,
	.statfs = fs_op_statfs,
};

const struct fuse_lowlevel_ops *fs_lowlevel_ops(void)
{
	return &ops;
}

int fs_create(const fs_config *cfg, fs **out)
{
	fs *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return ENOMEM;
	f->store = cfg->store;
	f->readonly = cfg->readonly;
	f->max_value = cfg->max_value ? cfg->max_value : SFS_DEFAULT_MAX_VALUE;
	f->max_buffered = cfg->max_buffered ? cfg->max_buffered
	                                    : fs_default_max_buffered(f->max_value);
	f->lease_ms = cfg->lease_ms;
	f->umask = (mode_t)(cfg->umask & 0777);
	f->async_close = cfg->async_close;
	if (getenv("STATEFS_TEST_COMMIT_DELAY_MS"))
		f->test_commit_delay_ms =
			atol(getenv("STATEFS_TEST_COMMIT_DELAY_MS"));
	if (getenv("STATEFS_TEST_DELIVER_DELAY_MS"))
		f->test_deliver_delay_ms =
			atol(getenv("STATEFS_TEST_DELIVER_DELAY_MS"));
	if (getenv("STATEFS_TEST_DELIVER_GATE") &&
	    !(f->test_deliver_gate = strdup(getenv("STATEFS_TEST_DELIVER_GATE")))) {
		free(f);
		return ENOMEM;
	}
	f->log = cfg->log;
	f->log_ctx = cfg->log_ctx;
	f->uid = geteuid();
	f->gid = getegid();
	clock_gettime(CLOCK_REALTIME, &f->start);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->unsettled_mu, NULL);
	pthread_mutex_init(&f->tick_mu, NULL);
	for (int i = 0; i < FS_VALUE_LOCKS; i++)
		pthread_mutex_init(&f->value_mu[i], NULL);
	f->files.next = f->files.prev = &f->files;
	f->dirs.next = f->dirs.prev = &f->dirs;
	f->procs = fs_procs_new(); /* none: FLUSH reads /proc afresh */
	if ((err = fs_inodes_init(f)) || (err = fs_aliases_init(f))) {
		fs_destroy(f);
		return err;
	}
	*out = f;
	return 0;
}

void fs_stop(fs *f)
{
	fs_wait_stop(f);
}

void fs_set_store(fs *f, sfs_store *store)
{
	f->store = store;
}

void fs_destroy(fs *f)
{
	if (!f)
		return;
	fs_stop(f);
	fs_files_free_all(f);
	fs_dirs_free_all(f);
	fs_aliases_free(f);
	fs_inodes_free(f);
	fs_procs_free(f->procs);
	if (f->nunsettled)
		fs_log(f, LOG_WARNING, "%zu items read from .pop, .wait or a drain "
		       "were delivered but their claims could not be settled: they "
		       "return to their queues when their leases end",
		       f->nunsettled);
	free(f->unsettled);
	free(f->test_deliver_gate);
	pthread_mutex_destroy(&f->unsettled_mu);
	pthread_mutex_destroy(&f->tick_mu);
	pthread_mutex_destroy(&f->lock);
	for (int i = 0; i < FS_VALUE_LOCKS; i++)
		pthread_mutex_destroy(&f->value_mu[i]);
	free(f);
}
