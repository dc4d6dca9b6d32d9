/*
 * passthrough_ll.c - the FUSE floor for bench/fs_bench: a minimal
 * low-level passthrough of one directory, written from libfuse's documented
 * low-level API (fuse_lowlevel.h).
 *
 * The benchmark mounts it over a tmpfs, so what it measures is the cost of
 * FUSE itself on this machine: the same kernel round trips statefs pays,
 * with no store behind them. It behaves like libfuse's example of the same
 * name with its default cache mode (1 s entry and attribute timeouts, page
 * cache on, no keep_cache), except that inodes are found through a hash
 * table instead of a list, so the floor does not slow down with the number
 * of files and flatter us.
 *
 * Deliberately left out: symlinks, hard links, xattrs, locks, mknod,
 * copy_file_range, fallocate, the splice paths. The benchmark needs none.
 *
 * Usage: passthrough_ll [-f] [-d] [-s] -o source=DIR MOUNTPOINT
 */
#define FUSE_USE_VERSION 312

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

struct pt_inode {
	struct pt_inode *next;    /* hash chain; guarded by pt.lock */
	int fd;                   /* O_PATH descriptor of the file */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;         /* guarded by pt.lock */
};

struct pt {
	pthread_mutex_t lock;
	struct pt_inode root;
	struct pt_inode **table;  /* guarded by lock */
	size_t nbuckets;
	size_t count;             /* guarded by lock */
	double timeout;
	char *source;
};

static struct pt *pt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct pt_inode *pt_inode_of(fuse_req_t req, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &pt_of(req)->root;
	return (struct pt_inode *)(uintptr_t)ino;
}

static int pt_fd(fuse_req_t req, fuse_ino_t ino)
{
	return pt_inode_of(req, ino)->fd;
}

static size_t pt_bucket(const struct pt *pt, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (size_t)(h >> 20) & (pt->nbuckets - 1);
}

/* Grows the table at load 1; called with the lock held. */
static void pt_grow(struct pt *pt)
{
	size_t n = pt->nbuckets * 2;
	struct pt_inode **t = calloc(n, sizeof(*t));
	struct pt_inode *in, *next;

	if (!t)
		return;  /* keep the old table: slower, still correct */
	for (size_t b = 0; b < pt->nbuckets; b++) {
		for (in = pt->table[b]; in; in = next) {
			uint64_t h = (uint64_t)in->ino * 0x9e3779b97f4a7c15ull ^
			             (uint64_t)in->dev;
			size_t nb = (size_t)(h >> 20) & (n - 1);
			next = in->next;
			in->next = t[nb];
			t[nb] = in;
		}
	}
	free(pt->table);
	pt->table = t;
	pt->nbuckets = n;
}

/* Looks name up in parent and fills e; one lookup counted. */
static int pt_do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
                        struct fuse_entry_param *e)
{
	struct pt *pt = pt_of(req);
	struct pt_inode *in;
	int fd, saverr;
	size_t b;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = pt->timeout;
	e->entry_timeout = pt->timeout;
	fd = openat(pt_fd(req, parent), name, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return errno;
	if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		saverr = errno;
		close(fd);
		return saverr;
	}
	pthread_mutex_lock(&pt->lock);
	b = pt_bucket(pt, e->attr.st_dev, e->attr.st_ino);
	for (in = pt->table[b]; in; in = in->next)
		if (in->ino == e->attr.st_ino && in->dev == e->attr.st_dev)
			break;
	if (in) {
		close(fd);
	} else {
		in = calloc(1, sizeof(*in));
		if (!in) {
			pthread_mutex_unlock(&pt->lock);
			close(fd);
			return ENOMEM;
		}
		in->fd = fd;
		in->dev = e->attr.st_dev;
		in->ino = e->attr.st_ino;
		in->next = pt->table[b];
		pt->table[b] = in;
		if (++pt->count > pt->nbuckets)
			pt_grow(pt);
	}
	in->nlookup++;
	pthread_mutex_unlock(&pt->lock);
	e->ino = (fuse_ino_t)(uintptr_t)in;
	return 0;
}

static void pt_forget_one(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	struct pt *pt = pt_of(req);
	struct pt_inode *in = pt_inode_of(req, ino), **pp;

	if (in == &pt->root)
		return;
	pthread_mutex_lock(&pt->lock);
	in->nlookup -= n;
	if (in->nlookup == 0) {
		pp = &pt->table[pt_bucket(pt, in->dev, in->ino)];
		while (*pp != in)
			pp = &(*pp)->next;
		*pp = in->next;
		pt->count--;
		close(in->fd);
		free(in);
	}
	pthread_mutex_unlock(&pt->lock);
}

/* LOOKUP: openat(O_PATH) + fstatat. */
static void pt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int err = pt_do_lookup(req, parent, name, &e);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

/* FORGET: drops lookups; the inode goes at zero. */
static void pt_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pt_forget_one(req, ino, nlookup);
	fuse_reply_none(req);
}

/* FORGET_MULTI: the batched FORGET. */
static void pt_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		pt_forget_one(req, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* GETATTR: fstatat(AT_EMPTY_PATH). */
static void pt_getattr(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (fstatat(pt_fd(req, ino), "", &st,
	            AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, pt_of(req)->timeout);
}

/* SETATTR: chmod, truncate, utimensat through /proc/self/fd. */
static void pt_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int valid, struct fuse_file_info *fi)
{
	char path[64];
	int fd = pt_fd(req, ino), rc = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (valid & FUSE_SET_ATTR_MODE)
		rc = fi ? fchmod((int)fi->fh, attr->st_mode)
		        : chmod(path, attr->st_mode);
	if (!rc && (valid & FUSE_SET_ATTR_SIZE))
		rc = fi ? ftruncate((int)fi->fh, attr->st_size)
		        : truncate(path, attr->st_size);
	if (!rc && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		rc = fi ? futimens((int)fi->fh, tv)
		        : utimensat(AT_FDCWD, path, tv, 0);
	}
	if (rc)
		fuse_reply_err(req, errno);
	else
		pt_getattr(req, ino, fi);
}

/* MKDIR: mkdirat + lookup. */
static void pt_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode)
{
	struct fuse_entry_param e;
	int err;

	if (mkdirat(pt_fd(req, parent), name, mode) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	err = pt_do_lookup(req, parent, name, &e);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

/* UNLINK: unlinkat. */
static void pt_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, unlinkat(pt_fd(req, parent), name, 0) < 0 ? errno : 0);
}

/* RMDIR: unlinkat(AT_REMOVEDIR). */
static void pt_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, unlinkat(pt_fd(req, parent), name, AT_REMOVEDIR) < 0
	                    ? errno : 0);
}

/* RENAME: renameat2. */
static void pt_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
	fuse_reply_err(req, renameat2(pt_fd(req, parent), name,
	                              pt_fd(req, newparent), newname, flags) < 0
	                    ? errno : 0);
}

struct pt_dir {
	DIR *dp;
	struct dirent *entry;
	off_t offset;
};

/* OPENDIR: openat + fdopendir. */
static void pt_opendir(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	struct pt_dir *d = calloc(1, sizeof(*d));
	int fd, saverr;

	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = openat(pt_fd(req, ino), ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		saverr = errno;
		if (fd >= 0)
			close(fd);
		free(d);
		fuse_reply_err(req, saverr);
		return;
	}
	fi->fh = (uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* READDIR and READDIRPLUS: readdir with telldir offsets; plus looks each
 * entry up (one lookup counted per entry that fits). */
static void pt_do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
                          off_t offset, struct fuse_file_info *fi, int plus)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fi->fh;
	char *buf = calloc(1, size), *p = buf;
	size_t rem = size;
	int err = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (offset != d->offset) {
		seekdir(d->dp, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	for (;;) {
		struct fuse_entry_param e;
		size_t entsize;
		off_t nextoff;
		const char *name;

		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				err = errno;
				break;
			}
		}
		nextoff = d->entry->d_off;
		name = d->entry->d_name;
		if (plus) {
			if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = d->entry->d_ino;
				e.attr.st_mode = (mode_t)d->entry->d_type << 12;
			} else if ((err = pt_do_lookup(req, ino, name, &e))) {
				break;
			}
			entsize = fuse_add_direntry_plus(req, p, rem, name, &e, nextoff);
			if (entsize > rem) {
				if (e.ino)
					pt_forget_one(req, e.ino, 1);
				break;
			}
		} else {
			struct stat st = {
				.st_ino = d->entry->d_ino,
				.st_mode = (mode_t)d->entry->d_type << 12,
			};
			entsize = fuse_add_direntry(req, p, rem, name, &st, nextoff);
			if (entsize > rem)
				break;
		}
		p += entsize;
		rem -= entsize;
		d->entry = NULL;
		d->offset = nextoff;
	}
	if (err && rem == size)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size - rem);
	free(buf);
}

static void pt_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t offset, struct fuse_file_info *fi)
{
	pt_do_readdir(req, ino, size, offset, fi, 0);
}

static void pt_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                           off_t offset, struct fuse_file_info *fi)
{
	pt_do_readdir(req, ino, size, offset, fi, 1);
}

/* RELEASEDIR: closedir. */
static void pt_releasedir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fi->fh;

	(void)ino;
	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

/* CREATE: openat(O_CREAT) + lookup. */
static void pt_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                      mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	int fd, err;

	fd = openat(pt_fd(req, parent), name,
	            (fi->flags | O_CREAT) & ~O_NOFOLLOW, mode);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	err = pt_do_lookup(req, parent, name, &e);
	if (err) {
		close(fd);
		fuse_reply_err(req, err);
	} else {
		fuse_reply_create(req, &e, fi);
	}
}

/* OPEN: open through /proc/self/fd. */
static void pt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", pt_fd(req, ino));
	fd = open(path, fi->flags & ~O_NOFOLLOW);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fuse_reply_open(req, fi);
}

/* READ: pread. */
static void pt_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pread((int)fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* WRITE: pwrite. */
static void pt_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                     size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n = pwrite((int)fi->fh, buf, size, off);

	(void)ino;
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

/* FLUSH: close(dup(fd)), which reports NFS-style deferred errors (and
 * EMFILE, not EBADF, when no descriptor is left for the dup). */
static void pt_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int fd = dup((int)fi->fh);

	(void)ino;
	fuse_reply_err(req, fd < 0 || close(fd) < 0 ? errno : 0);
}

/* RELEASE: close. */
static void pt_release(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

/* FSYNC: fsync or fdatasync. */
static void pt_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                     struct fuse_file_info *fi)
{
	int fd = (int)fi->fh;

	(void)ino;
	fuse_reply_err(req, (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? errno : 0);
}

/* STATFS: fstatvfs. */
static void pt_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	if (fstatvfs(pt_fd(req, ino), &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops pt_ops = {
	.lookup = pt_lookup,
	.forget = pt_forget,
	.forget_multi = pt_forget_multi,
	.getattr = pt_getattr,
	.setattr = pt_setattr,
	.mkdir = pt_mkdir,
	.unlink = pt_unlink,
	.rmdir = pt_rmdir,
	.rename = pt_rename,
	.opendir = pt_opendir,
	.readdir = pt_readdir,
	.readdirplus = pt_readdirplus,
	.releasedir = pt_releasedir,
	.create = pt_create,
	.open = pt_open,
	.read = pt_read,
	.write = pt_write,
	.flush = pt_flush,
	.release = pt_release,
	.fsync = pt_fsync,
	.statfs = pt_statfs,
};

static const struct fuse_opt pt_opts[] = {
	{ "source=%s", offsetof(struct pt, source), 0 },
	{ "timeout=%lf", offsetof(struct pt, timeout), 0 },
	FUSE_OPT_END
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_loop_config *cfg = NULL;
	struct fuse_session *se;
	struct pt pt = { .timeout = 1.0 };
	struct rlimit rl;
	int ret = 1;

	pthread_mutex_init(&pt.lock, NULL);
	pt.root.nlookup = 2;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	if (opts.show_help || opts.show_version || !opts.mountpoint) {
		printf("usage: %s [-f] [-d] [-s] -o source=DIR MOUNTPOINT\n",
		       argv[0]);
		ret = opts.mountpoint ? 0 : 1;
		goto out_args;
	}
	if (fuse_opt_parse(&args, &pt, pt_opts, NULL) == -1)
		goto out_args;
	if (!pt.source) {
		fprintf(stderr, "passthrough_ll: -o source=DIR is required\n");
		goto out_args;
	}
	/* An O_PATH descriptor for every inode the kernel holds, as in
	 * libfuse's example: a soft limit of 1,024 would fail a run of
	 * fs_bench.sh's 10,000 files with EMFILE, so take all the hard limit
	 * allows. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	pt.root.fd = open(pt.source, O_PATH);
	if (pt.root.fd < 0) {
		perror(pt.source);
		goto out_args;
	}
	pt.nbuckets = 1024;
	pt.table = calloc(pt.nbuckets, sizeof(*pt.table));
	if (!pt.table)
		goto out_fd;

	se = fuse_session_new(&args, &pt_ops, sizeof(pt_ops), &pt);
	if (!se)
		goto out_table;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(opts.foreground);
	if (opts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(cfg, opts.clone_fd);
		fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
		ret = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_table:
	free(pt.table);  /* inodes left at unmount die with the process */
out_fd:
	close(pt.root.fd);
out_args:
	free(opts.mountpoint);
	free(pt.source);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
