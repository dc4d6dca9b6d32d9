/*
 * attr.c - attributes: what GETATTR, SETATTR, ACCESS and STATFS answer, and
 * the timeouts every reply gives the kernel (fs_ttl).
 *
 * Attributes come from the store at every request (a file's attributes are
 * never cached: another process may change it at any time). SETATTR's size
 * change truncates a value, its time change of an in-flight item is a
 * heartbeat; the other changes of mode, owner and time belong to the store
 * and are accepted and ignored, so cp -a, tar x and rsync -a work.
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

/* The mode a node of kind k shows: its class's bits less the mount's
 * umask (077 by default: the owner only, which is who the daemon acts
 * for) and, on a read-only mount, every write bit. A special file whose
 * read changes the store shows read permission only to those the umask
 * lets change it: with default_permissions (always on with allow_other)
 * the kernel then refuses a pop to whoever may not write. */
static mode_t fs_mode(const fs *f, fs_kind k)
{
	mode_t m = fs_class_of(k)->mode, bits = m & 07777;

	if (fs_kind_takes(k))
		bits = ((0222 & ~f->umask) << 1) & 0444;
	else
		bits &= ~f->umask;
	if (f->readonly)
		bits &= fs_kind_takes(k) ? 0 : ~(mode_t)0222;
	return (m & S_IFMT) | bits;
}

void fs_stat_fill(fs *f, fs_kind k, uint64_t ino, uint64_t size,
                  int64_t mtime_ns, struct stat *st)
{
	struct timespec t;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = fs_mode(f, k);
	st->st_nlink = fs_kind_is_dir(k) ? 2 : 1;
	st->st_uid = f->uid;
	st->st_gid = f->gid;
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	if (fs_kind_is_dir(k) || fs_kind_is_special(k)) {
		t = f->start;
	} else if (mtime_ns == SFS_MTIME_EPOCH) {
		/* a value given the epoch (touch -d @0) */
		t.tv_sec = 0;
		t.tv_nsec = 0;
	} else {
		/* 0: written by another SDK, time unknown: the epoch. An
		 * imported time keeps its nanoseconds, which stay in [0, 1 s)
		 * before 1970 too: the second is rounded down. */
		t.tv_sec = mtime_ns / 1000000000;
		t.tv_nsec = mtime_ns % 1000000000;
		if (t.tv_nsec < 0) {
			t.tv_sec--;
			t.tv_nsec += 1000000000;
		}
	}
	st->st_atim = st->st_mtim = st->st_ctim = t;
}

/* The timeouts a reply gives a node of kind k. */
void fs_ttl(fs_kind k, double *entry, double *attr)
{
	if (fs_kind_streams(k)) {
		/* its size grows as it is read (tail -f polls it) */
		*entry = FS_TTL_DIR;
		*attr = 0;
	} else if (fs_kind_is_dir(k) || fs_kind_is_special(k)) {
		*entry = *attr = FS_TTL_DIR;
	} else if (k == FS_LOG_NEW || k == FS_QUEUE_NEW) {
		/* The name given at creation is not kept. */
		*entry = *attr = 0;
	} else if (k == FS_QUEUE_ITEM || k == FS_INFLIGHT_ITEM ||
	           k == FS_DEAD_ITEM) {
		/* An item moves between the queue, inflight/ and dead/ under
		 * one name (a claim by mv, a nack, a requeue): after such a
		 * rename the kernel's dentry still points at the node of the
		 * place it left, so the name must be looked up again. */
		*entry = *attr = 0;
	} else {
		*entry = FS_TTL_ENTRY;
		*attr = FS_TTL_ATTR;
	}
}

/* The attributes of a node now, through handle h or without one. A value
 * with unsaved changes in an open file shows that image's length (through
 * h, h's): fstat of a writer and lseek(SEEK_END) see what it wrote, and so
 * does the kernel, which bounds copy_file_range by the size it was told.
 * Otherwise the store's (fs_store_stat); a file still being created, its
 * empty self; a value deleted while open, the open file's length with no
 * link (st_nlink 0), as a deleted file has; a directory removed through
 * the mount that the kernel still holds, no link either. */
static int node_stat(fs *f, fs_node *n, fs_file *h, const fs_addr *a,
                     struct stat *st)
{
	uint64_t size = 0;
	int64_t mtime = 0;
	fs_view v;
	int rc, linked = 1;

	if (n->kind == FS_LOG_NEW || n->kind == FS_QUEUE_NEW) {
		fs_addr item = { 0 };
		int64_t id;

		if (h || !fs_alias_of_node(f, n, &id)) {
			fs_stat_fill(f, n->kind, n->ino, h ? h->pub_size : 0,
			             fs_write_time_ns(), st);
			return SFS_OK;
		}
		/* Named by its alias: the entry's or item's (alias.c). */
		rc = fs_alias_addr(a, id, &item) ? SFS_NOMEM
		   : fs_store_stat(f, &item, &size, &mtime);
		fs_addr_free(&item);
		if (rc == SFS_NOTFOUND)
			fs_alias_drop(f, n); /* consumed or deleted */
		if (rc == SFS_OK)
			fs_stat_fill(f, n->kind, n->ino, size, mtime, st);
		return rc;
	}
	fs_node_view(f, n, h, &v);
	if (v.unsaved) {
		rc = SFS_OK;
		size = v.size;
		mtime = v.mtime_ns;
		linked = fs_node_linked(f, n);
	} else {
		rc = fs_store_stat(f, a, &size, &mtime);
		if (rc == SFS_NOTFOUND && fs_node_held(f, n)) {
			rc = SFS_OK;
			mtime = fs_write_time_ns();
		} else if (rc == SFS_NOTFOUND && v.files) {
			rc = SFS_OK;
			size = v.size;
			mtime = fs_write_time_ns();
			linked = 0;
		} else if (rc == SFS_NOTFOUND && fs_kind_is_dir(n->kind) &&
		           !fs_node_linked(f, n)) {
			/* removed through the mount while a process holds
			 * it (its cwd, an open descriptor): an empty
			 * directory with no link, as a removed one is on a
			 * local filesystem, so fstat and `ls` in it work */
			rc = SFS_OK;
			linked = 0;
		}
	}
	if (rc == SFS_OK) {
		fs_stat_fill(f, n->kind, n->ino, size, mtime, st);
		if (!linked)
			st->st_nlink = 0;
	}
	return rc;
}

/* Replies with the attributes of node n at a (node_stat), or the errno. */
static void reply_attr(fs *f, fuse_req_t req, fs_node *n, fs_file *h,
                       const fs_addr *a, const char *op)
{
	struct stat st;
	double entry, attr;
	int rc = node_stat(f, n, h, a, &st);

	fs_ttl(n->kind, &entry, &attr);
	if (rc)
		fuse_reply_err(req, fs_errno(f, rc, op));
	else
		fuse_reply_attr(req, &st, attr);
}

/* The open file a request names (GETATTR and SETATTR through a handle:
 * fstat after the kernel's FUSE_GETATTR_FH, lseek(SEEK_END), ftruncate),
 * or NULL. Directories' handles are not fs_files. */
static fs_file *file_of_req(const fs_node *n, struct fuse_file_info *fi)
{
	return fi && !fs_kind_is_dir(n->kind) ? (fs_file *)(uintptr_t)fi->fh
	                                      : NULL;
}

/* GETATTR: fs_store_stat by kind, or what an open file holds; a .follow
 * shows what its followers have rendered (fs_special_size). */
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino,
                   struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_addr a = { 0 };
	fs_node *n;
	struct stat st;
	double entry, attr;
	int err;

	if ((err = fs_node_addr_of(f, ino, &n, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	if (n->kind == FS_LOG_FOLLOW || n->kind == FS_QUEUE_FOLLOW) {
		fs_stat_fill(f, n->kind, n->ino, fs_special_size(f, n,
		             fuse_req_ctx(req)->pid), 0, &st);
		fs_ttl(n->kind, &entry, &attr);
		fuse_reply_attr(req, &st, attr);
		fs_addr_free(&a);
		return;
	}
	reply_attr(f, req, n, file_of_req(n, fi), &a, "getattr");
	fs_addr_free(&a);
}

/* truncate(2) of a value with no open handle: one sfs_kv_edit, so a put
 * by another process is never lost in between. */
static int truncate_value(fs *f, fs_node *n, const fs_addr *a, off_t size)
{
	sfs_edit e = { SFS_EDIT_TRUNCATE, (uint64_t)size, SFS_NONE };
	int rc;

	if ((uint64_t)size > f->max_value)
		return SFS_TOOBIG;
	rc = sfs_kv_edit(f->store, fs_part(a, 0), fs_part(a, 1), fs_part(a, 2),
	                 &e, 1, 0, NULL);
	if (rc == SFS_OK)
		fs_node_stored(f, n);
	return rc;
}

/* touch of an in-flight item: sfs_item_heartbeat. Its mtime is when
 * the lease ends, so "now" (plain touch) extends it by the mount's lease
 * and an explicit time (touch -d) makes the lease end then, on the
 * store's clock, which the mtime shows (sfs_item_heartbeat_until: on
 * PostgreSQL a lease of "the time minus this host's now" ended off by the
 * difference between this host's clock and the server's). */
static int heartbeat(fs *f, const fs_addr *a, const struct stat *attr,
                     int valid)
{
	if ((valid & FUSE_SET_ATTR_MTIME) && !(valid & FUSE_SET_ATTR_MTIME_NOW)) {
		/* Nanoseconds since 1970 end in 2262: a later time would
		 * wrap around (into the past, or into an hour from now), an
		 * earlier one than 1970 is past anyway. */
		if (attr->st_mtim.tv_sec < 0 ||
		    attr->st_mtim.tv_sec >= INT64_MAX / 1000000000)
			return SFS_INVALID;
		/* a lease cannot end in the past: SFS_INVALID */
		return sfs_item_heartbeat_until(f->store, fs_part(a, 0), a->id,
		        (int64_t)attr->st_mtim.tv_sec * 1000000000 +
		        attr->st_mtim.tv_nsec);
	}
	return sfs_item_heartbeat(f->store, fs_part(a, 0), a->id, f->lease_ms);
}

/* touch of a value (utimes to now): sfs_kv_edit with no edits, which
 * sets its write time and changes nothing else. A value being created
 * gets its time at its commit. */
static int touch_value(fs *f, fs_node *n, const fs_addr *a)
{
	int rc = sfs_kv_edit(f->store, fs_part(a, 0), fs_part(a, 1),
	                     fs_part(a, 2), NULL, 0, 0, NULL);

	if (rc == SFS_OK)
		fs_node_stored(f, n);
	return rc == SFS_NOTFOUND ? SFS_OK : rc;
}

/* A time given to a value (touch -d, cp -a, tar x, rsync -a): stored in
 * whole seconds, the store's; through a handle whose changes are not
 * stored yet (any file's, fs_node_give_mtime), after them, at the commit
 * that stores them (a value being created gets it then too). A time past
 * what int64 nanoseconds hold (2262, or before 1677) is stored as the
 * nearest one they do, as ext4 stores one past 2446 as 2446: tar x and
 * rsync -a of such a file succeed on a local file system. */
static int set_mtime(fs *f, fs_node *n, const fs_addr *a,
                     const struct stat *attr)
{
	pthread_mutex_t *mu = &f->value_mu[n->ino % FS_VALUE_LOCKS];
	time_t s = attr->st_mtim.tv_sec;
	int64_t t;
	int rc;

	if (s > INT64_MAX / 1000000000)
		s = INT64_MAX / 1000000000;
	else if (s < INT64_MIN / 1000000000)
		s = INT64_MIN / 1000000000;
	t = (int64_t)s * 1000000000;
	pthread_mutex_lock(mu);
	rc = fs_node_give_mtime(f, n, t) ? SFS_OK
	   : sfs_kv_set_mtime(f->store, fs_part(a, 0), fs_part(a, 1),
	                      fs_part(a, 2), t);
	pthread_mutex_unlock(mu);
	return rc == SFS_NOTFOUND ? SFS_OK : rc;
}

/* SETATTR: a size change is a truncate of the open handle's image
 * (committed at FLUSH) or, without a handle, one sfs_kv_edit.
 * A time change of an in-flight item is a heartbeat (touch); a value's
 * mtime set to now (touch) is a write time of now (touch_value), a time
 * given is its write time (set_mtime). Other mode, owner and time changes
 * are accepted and ignored, so cp -a, tar x and rsync -a work. */
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int valid, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_addr a = { 0 };
	fs_node *n;
	fs_file *h;
	int err;

	if ((err = fs_node_addr_of(f, ino, &n, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	h = file_of_req(n, fi);
	if (valid & FUSE_SET_ATTR_SIZE) {
		if (f->readonly) {
			err = EROFS;
		} else if (h) {
			err = fs_file_truncate(f, h, attr->st_size,
			                       fuse_req_ctx(req)->pid);
		} else if (n->kind == FS_KV_KEY) {
			err = fs_errno(f, truncate_value(f, n, &a, attr->st_size),
			               "truncate");
		} else if (n->kind == FS_CNT_KEY) {
			err = attr->st_size == 0 ? 0 : EINVAL;
		} else {
			err = fs_kind_is_dir(n->kind) ? EISDIR : EACCES;
		}
		if (err) {
			fuse_reply_err(req, err);
			fs_addr_free(&a);
			return;
		}
	}
	if (n->kind == FS_INFLIGHT_ITEM &&
	    (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	              FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW))) {
		err = f->readonly ? EROFS
		                  : fs_errno(f, heartbeat(f, &a, attr, valid),
		                             "heartbeat");
		if (err) {
			fuse_reply_err(req, err);
			fs_addr_free(&a);
			return;
		}
	}
	if (n->kind == FS_KV_KEY && (valid & FUSE_SET_ATTR_MTIME_NOW) &&
	    !(valid & FUSE_SET_ATTR_SIZE)) {
		err = f->readonly ? EROFS
		                  : fs_errno(f, touch_value(f, n, &a), "touch");
		if (err) {
			fuse_reply_err(req, err);
			fs_addr_free(&a);
			return;
		}
	} else if (n->kind == FS_KV_KEY && (valid & FUSE_SET_ATTR_MTIME)) {
		err = f->readonly ? EROFS
		                  : fs_errno(f, set_mtime(f, n, &a, attr),
		                             "setting a time");
		if (err) {
			fuse_reply_err(req, err);
			fs_addr_free(&a);
			return;
		}
	}
	reply_attr(f, req, n, h, &a, "setattr");
	fs_addr_free(&a);
}

/* ACCESS: the modes of the class; no engine call. */
void fs_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	fs *f = fs_of(req);
	fs_node *n = fs_node_get(f, ino);
	mode_t mode;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	mode = fs_class_of(n->kind)->mode;
	if ((mask & W_OK) && f->readonly)
		fuse_reply_err(req, EROFS);
	else if ((mask & W_OK) && !(mode & 0200))
		fuse_reply_err(req, EACCES);
	else if ((mask & X_OK) && !(mode & 0100))
		fuse_reply_err(req, EACCES);
	else
		fuse_reply_err(req, 0);
}

/* STATFS: sfs_store_info (size, rows) and, for a store in a local file,
 * the disk under it: used is the store's size, available what the disk
 * has left. A store with no local disk under it (one on a database
 * server) reports 1 TiB available, as network filesystems do when they
 * cannot know: zero would read as "full" to tools that check. */
#define UNKNOWN_FREE_BLOCKS ((1ULL << 40) / 4096)
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	fs *f = fs_of(req);
	struct statvfs sv, disk;
	sfs_info info;
	char *copy;
	uint64_t avail = 0;
	int rc, have_disk = 0;

	(void)ino;
	rc = sfs_store_info(f->store, &info);
	if (rc) {
		fuse_reply_err(req, fs_errno(f, rc, "statfs"));
		return;
	}
	if (info.file && (copy = strdup(info.file))) {
		have_disk = statvfs(dirname(copy), &disk) == 0;
		free(copy);
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	if (have_disk)
		avail = (uint64_t)disk.f_bavail * disk.f_frsize / 4096;
	else if (!info.file && strcmp(info.path, ":memory:") != 0)
		avail = UNKNOWN_FREE_BLOCKS;
	sv.f_blocks = (info.size + 4095) / 4096 + avail;
	sv.f_bfree = sv.f_bavail = avail;
	/* every row that is a file: items in flight and dead letters are
	 * files of inflight/ and dead/ */
	sv.f_files = info.kv_rows + info.counter_rows + info.log_rows +
	             info.queue_rows + info.claimed_rows + info.dead_rows +
	             avail;
	sv.f_ffree = sv.f_favail = avail;
	sv.f_namemax = FS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

