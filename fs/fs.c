/*
 * fs.c - the statefs filesystem: the libfuse low-level operations table,
 * the status-to-errno translation, and the handlers that work on names and
 * attributes (lookup, getattr, setattr, mkdir, rmdir, unlink, rename...).
 *
 * Every handler is a thin translation: find the node, copy its store
 * address, make one or two engine calls (through store.c, by kind), reply
 * exactly once. Files and directories being read are in file.c, special.c
 * and dir.c.
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
	case SFS_OVERFLOW:   /* counters: nothing changed (issue 4) */
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

static fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

int64_t fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
	} else {
		/* 0: written by another SDK, time unknown: the epoch. */
		t.tv_sec = mtime_ns / 1000000000;
		t.tv_nsec = mtime_ns % 1000000000;
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

int fs_resolve(fs *f, const fs_addr *dir, const char *name, int naming,
               fs_addr *out)
{
	static const fs_kind fixed[] = { FS_EXEC_ROOT, FS_QUEUE_ROOT,
	                                 FS_COUNTER_ROOT, FS_INFLIGHT,
	                                 FS_DEAD };
	fs_kind child = fs_class_of(dir->kind)->child;
	sfs_buf b = { NULL, 0 };
	int hashed, rc;
	int64_t id;

	/* Fixed directories: exec, queue, counter at the root; inflight and
	 * dead in a queue (item names are digits: no collision). */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fs_class_of(fixed[i])->parent == dir->kind &&
		    strcmp(name, fs_class_of(fixed[i])->what) == 0)
			return fs_addr_child(dir, fixed[i], NULL, 0, 0, out)
			       ? SFS_NOMEM : SFS_OK;
	for (int k = 1; k < FS_KIND_MAX; k++) {
		const fs_class *c = fs_class_of((fs_kind)k);
		if (c->special && c->parent == dir->kind &&
		    strcmp(c->special, name) == 0)
			return fs_addr_child(dir, (fs_kind)k, NULL, 0, 0, out)
			       ? SFS_NOMEM : SFS_OK;
	}
	if (child == FS_NONE)
		return naming ? SFS_INVALID : SFS_NOTFOUND;
	if (fs_class_of(child)->by_id) {
		if (!fs_id_parse(name, &id))
			return naming ? SFS_INVALID : SFS_NOTFOUND;
		return fs_addr_child(dir, child, NULL, 0, id, out)
		       ? SFS_NOMEM : SFS_OK;
	}
	rc = sfs_name_decode(name, strlen(name), fs_name_kind(dir, child), &b,
	                     &hashed);
	if (rc == SFS_INVALID && !naming)
		return SFS_NOTFOUND; /* names nothing, so there is no such file */
	if (rc)
		return rc;
	if (hashed) {
		rc = fs_store_resolve(f, dir, child, name,
		                      sfs_bytes(b.ptr, b.len), out);
		/* A long name only finds; it cannot name something new. */
		if (rc == SFS_NOTFOUND && naming)
			rc = SFS_INVALID;
	} else {
		rc = fs_addr_child(dir, child, b.ptr, b.len, 0, out)
		     ? SFS_NOMEM : SFS_OK;
	}
	sfs_buf_free(&b);
	return rc;
}

/* The node and address of a request's inode; ENOENT for an inode number
 * we do not know (cannot happen with a well-behaved kernel). */
static int node_addr(fs *f, fuse_ino_t ino, fs_node **n, fs_addr *a)
{
	*n = fs_node_get(f, ino);
	if (!*n)
		return ENOENT;
	return fs_node_addr(f, *n, a);
}

/* The part a child address adds to its directory (for the inode table). */
void fs_child_part(const fs_addr *a, const void **p, size_t *n)
{
	const fs_class *c = fs_class_of(a->kind);

	*p = NULL;
	*n = 0;
	if (!c->by_id && !c->special && c->parts > 0 &&
	    c->parts > fs_class_of(c->parent)->parts) {
		*p = a->part[c->parts - 1].ptr;
		*n = a->part[c->parts - 1].len;
	}
	if (fs_kind_is_fixed(a->kind)) {
		*p = c->what;
		*n = strlen(c->what);
	}
}

int fs_entry_fill(fs *f, fs_node *dir, const fs_addr *child, uint64_t size,
                  int64_t mtime, struct fuse_entry_param *e, fs_node **node)
{
	const void *p;
	size_t n;
	fs_node *nd;

	fs_child_part(child, &p, &n);
	nd = fs_node_child(f, dir, child->kind, p, n, child->id, 1);
	if (!nd)
		return ENOMEM;
	memset(e, 0, sizeof(*e));
	e->ino = nd->ino;
	fs_ttl(child->kind, &e->entry_timeout, &e->attr_timeout);
	fs_stat_fill(f, child->kind, nd->ino, size, mtime, &e->attr);
	if (node)
		*node = nd;
	return 0;
}

/* Replies with an entry for child (counts one lookup). */
static void reply_entry(fs *f, fuse_req_t req, fs_node *dir,
                        const fs_addr *child, uint64_t size, int64_t mtime)
{
	struct fuse_entry_param e;
	fs_node *node;
	int err = fs_entry_fill(f, dir, child, size, mtime, &e, &node);

	if (err)
		fuse_reply_err(req, err);
	else if (fuse_reply_entry(req, &e) != 0)
		fs_node_forget(f, node, 1); /* the kernel never got it */
}

/* LOOKUP: fs_store_stat (sfs_dir_exists, sfs_kv_stat, sfs_log_stat,
 * sfs_queue_stat, sfs_counter_scan by kind); long names via a scan. */
static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn;
	uint64_t size = 0;
	int64_t mtime = 0;
	const void *p;
	size_t n;
	int rc, err;

	if ((err = fs_name_check(name)) ||
	    (err = node_addr(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	rc = fs_resolve(f, &dir, name, 0, &child);
	if (rc == SFS_OK)
		rc = fs_store_stat(f, &child, &size, &mtime);
	if (rc == SFS_NOTFOUND) {
		fs_child_part(&child, &p, &n);
		if (child.kind && fs_node_find_held(f, dn, child.kind, p, n,
		                                    child.id)) {
			rc = SFS_OK;
			mtime = fs_now_ns();
		}
	}
	if (rc)
		fuse_reply_err(req, fs_errno(f, rc, "lookup"));
	else
		reply_entry(f, req, dn, &child, size, mtime);
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* FORGET: returns kernel lookups; the node goes when none are left. */
static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs *f = fs_of(req);
	fs_node *n = fs_node_get(f, ino);

	if (n && ino != FUSE_ROOT_ID)
		fs_node_forget(f, n, nlookup);
	fuse_reply_none(req);
}

/* FORGET_MULTI: the batched FORGET. */
static void op_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
	fs *f = fs_of(req);

	for (size_t i = 0; i < count; i++) {
		fs_node *n = fs_node_get(f, forgets[i].ino);
		if (n && forgets[i].ino != FUSE_ROOT_ID)
			fs_node_forget(f, n, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

/* The attributes of a node now, through handle h or without one. A value
 * with unsaved changes in an open file shows that image's length (through
 * h, h's): fstat of a writer and lseek(SEEK_END) see what it wrote, and so
 * does the kernel, which bounds copy_file_range by the size it was told.
 * Otherwise the store's (fs_store_stat); a file still being created, its
 * empty self; a value deleted while open, the open file's length with no
 * link (st_nlink 0), as a deleted file has. */
static int node_stat(fs *f, fs_node *n, fs_file *h, const fs_addr *a,
                     struct stat *st)
{
	uint64_t size = 0;
	int64_t mtime = 0;
	fs_view v;
	int rc, linked = 1;

	if (n->kind == FS_LOG_NEW || n->kind == FS_QUEUE_NEW) {
		fs_stat_fill(f, n->kind, n->ino, h ? h->pub_size : 0, fs_now_ns(),
		             st);
		return SFS_OK;
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
			mtime = fs_now_ns();
		} else if (rc == SFS_NOTFOUND && v.files) {
			rc = SFS_OK;
			size = v.size;
			mtime = fs_now_ns();
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
static void op_getattr(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_addr a = { 0 };
	fs_node *n;
	struct stat st;
	double entry, attr;
	int err;

	if ((err = node_addr(f, ino, &n, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	if (n->kind == FS_LOG_FOLLOW || n->kind == FS_QUEUE_FOLLOW) {
		fs_stat_fill(f, n->kind, n->ino, fs_special_size(f, n), 0, &st);
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
static int truncate_value(fs *f, const fs_addr *a, off_t size)
{
	sfs_edit e = { SFS_EDIT_TRUNCATE, (uint64_t)size, SFS_NONE };

	if ((uint64_t)size > f->max_value)
		return SFS_TOOBIG;
	return sfs_kv_edit(f->store, fs_part(a, 0), fs_part(a, 1),
	                   fs_part(a, 2), &e, 1, 0, NULL);
}

/* touch of an in-flight item: sfs_inflight_heartbeat. Its mtime is when
 * the lease ends, so "now" (plain touch) extends it by the mount's lease
 * and an explicit time (touch -d) makes the lease end then. */
static int heartbeat(fs *f, const fs_addr *a, const struct stat *attr,
                     int valid)
{
	int64_t lease = f->lease_ms, until;

	if ((valid & FUSE_SET_ATTR_MTIME) && !(valid & FUSE_SET_ATTR_MTIME_NOW)) {
		until = (int64_t)attr->st_mtim.tv_sec * 1000000000 +
		        attr->st_mtim.tv_nsec;
		lease = (until - fs_now_ns()) / 1000000;
		if (lease <= 0)
			return SFS_INVALID; /* a lease cannot end in the past */
	}
	return sfs_inflight_heartbeat(f->store, fs_part(a, 0), a->id, lease);
}

/* SETATTR: a size change is a truncate of the open handle's image
 * (committed at FLUSH) or, without a handle, one sfs_kv_edit.
 * A time change of an in-flight item is a heartbeat (touch). Other mode,
 * owner and time changes are the store's and are accepted and ignored, so
 * cp -a, tar x and rsync -a work. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int valid, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_addr a = { 0 };
	fs_node *n;
	fs_file *h;
	int err;

	if ((err = node_addr(f, ino, &n, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	h = file_of_req(n, fi);
	if (valid & FUSE_SET_ATTR_SIZE) {
		if (f->readonly) {
			err = EROFS;
		} else if (h) {
			err = fs_file_truncate(f, h, attr->st_size);
		} else if (n->kind == FS_KV_KEY) {
			err = fs_errno(f, truncate_value(f, &a, attr->st_size),
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
	reply_attr(f, req, n, h, &a, "setattr");
	fs_addr_free(&a);
}

/* ACCESS: the modes of the class; no engine call. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
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

/* MKDIR: sfs_dir_create (scopes and namespaces of every family); a log
 * key is kept in the inode table until its first entry (store.c). */
static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn, *node;
	const void *p;
	size_t n;
	int rc, err;

	(void)mode;
	if ((err = fs_name_check(name)) ||
	    (err = node_addr(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	if (f->readonly) {
		err = EROFS;
	} else if (fs_class_of(dir.kind)->mkdir == FS_NONE) {
		err = EPERM;
	} else if ((rc = fs_resolve(f, &dir, name, 1, &child)) != SFS_OK) {
		err = fs_errno(f, rc, "mkdir"); /* EINVAL: no name of anything */
	} else if (child.kind != fs_class_of(dir.kind)->mkdir) {
		err = EEXIST; /* a special file or fixed directory */
	} else if ((rc = fs_store_mkdir(f, &child)) != SFS_OK) {
		err = fs_errno(f, rc, "mkdir");
	}
	if (err) {
		fuse_reply_err(req, err);
	} else {
		if (child.kind == FS_LOG_KEY) {
			fs_child_part(&child, &p, &n);
			node = fs_node_child(f, dn, child.kind, p, n, 0, 0);
			if (node) {
				fs_node_set_ephemeral(f, node, 1);
				fs_node_unref(f, node);
			}
		}
		reply_entry(f, req, dn, &child, 0, 0);
	}
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* Whether the directory child of dn has a file being created in it. */
static int holds_pending(fs *f, fs_node *dn, const fs_addr *child)
{
	const void *p;
	size_t n;
	fs_node *node;

	fs_child_part(child, &p, &n);
	node = fs_node_find(f, dn, child->kind, p, n, 0);
	return node && fs_node_holds_children(f, node);
}

/* RMDIR: sfs_dir_remove (ENOTEMPTY while it holds anything, also a file
 * still being created); a log key or queue: refused while it has entries
 * or items. */
static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn, *node;
	const void *p;
	size_t n;
	int rc, err;

	if ((err = fs_name_check(name)) ||
	    (err = node_addr(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	rc = fs_resolve(f, &dir, name, 0, &child);
	if (f->readonly)
		err = EROFS;
	else if (rc)
		err = fs_errno(f, rc, "rmdir");
	else if (!fs_kind_is_dir(child.kind))
		err = ENOTDIR;
	else if (fs_kind_is_fixed(child.kind))
		err = EBUSY;
	else if (holds_pending(f, dn, &child))
		err = ENOTEMPTY; /* a file in it is being created */
	else if ((rc = fs_store_rmdir(f, &child)) != SFS_OK)
		err = fs_errno(f, rc, "rmdir");
	if (!err) {
		fs_child_part(&child, &p, &n);
		node = fs_node_find(f, dn, child.kind, p, n, 0);
		if (node)
			fs_node_set_ephemeral(f, node, 0);
		fs_node_unlink(f, dn, child.kind, p, n, 0);
	}
	fuse_reply_err(req, err);
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* Whether the mount holds child of dir though the store does not: a key
 * or counter still being created. */
static int held(fs *f, fs_node *dn, const fs_addr *child)
{
	const void *p;
	size_t n;

	fs_child_part(child, &p, &n);
	return fs_node_find_held(f, dn, child->kind, p, n, child->id);
}

/* UNLINK: sfs_kv_delete, sfs_log_delete, sfs_queue_delete or
 * sfs_counter_delete by kind; special files cannot be removed. A key or
 * counter still being created is removed from the mount, and its commit
 * with it (the open file keeps its bytes, which go nowhere). */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn;
	const void *p;
	size_t n;
	int rc, err;

	if ((err = fs_name_check(name)) ||
	    (err = node_addr(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	rc = fs_resolve(f, &dir, name, 0, &child);
	if (f->readonly)
		err = EROFS;
	else if (rc)
		err = fs_errno(f, rc, "unlink");
	else if (fs_kind_is_special(child.kind))
		err = EPERM;
	else if (fs_kind_is_dir(child.kind))
		err = EISDIR;
	else if ((rc = fs_store_unlink(f, &child)) != SFS_OK &&
	         !(rc == SFS_NOTFOUND && held(f, dn, &child)))
		err = fs_errno(f, rc, "unlink");
	if (!err) {
		fs_child_part(&child, &p, &n);
		fs_node_unlink(f, dn, child.kind, p, n, child.id);
	}
	fuse_reply_err(req, err);
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

static int same_part(const fs_addr *a, const fs_addr *b)
{
	return a->part[0].len == b->part[0].len &&
	       !memcmp(a->part[0].ptr, b->part[0].ptr, a->part[0].len);
}

/* An item moving within its queue between the pending items, inflight/
 * and dead/, under its own name: sfs_claim_item (the Maildir mv: one of
 * racing claimers wins, the others get ENOENT), sfs_inflight_settle with
 * NACK (back at its place) or REJECT, sfs_dead_requeue (the tail, under a
 * new id). *handled is 0 for any other rename of an item, which is left to
 * the caller (EXDEV: mv copies and removes, also to another queue). */
static int claim_move(fs *f, const fs_addr *from, const fs_addr *to,
                      int *handled)
{
	fs_kind a = from->kind, b = to->kind;

	*handled = (a == FS_QUEUE_ITEM && b == FS_INFLIGHT_ITEM) ||
	           (a == FS_INFLIGHT_ITEM && b == FS_QUEUE_ITEM) ||
	           (a == FS_INFLIGHT_ITEM && b == FS_DEAD_ITEM) ||
	           (a == FS_DEAD_ITEM && b == FS_QUEUE_ITEM);
	if (!*handled || !same_part(from, to)) {
		*handled = 0;
		return SFS_OK;
	}
	if (from->id != to->id)
		return SFS_INVALID; /* an item keeps its name */
	if (a == FS_QUEUE_ITEM)
		return sfs_claim_item(f->store, fs_part(from, 0), from->id,
		                      f->lease_ms, NULL);
	if (a == FS_DEAD_ITEM)
		return sfs_dead_requeue(f->store, fs_part(from, 0), from->id, NULL);
	return sfs_inflight_settle(f->store, fs_part(from, 0), from->id,
	                           b == FS_DEAD_ITEM ? SFS_OUTCOME_REJECT
	                                             : SFS_OUTCOME_NACK);
}

/* RENAME: sfs_kv_rename for keys, sfs_dir_rename for scopes, namespaces
 * and queues; claim moves of items (claim_move). Anything else (entries,
 * items, counters, log keys, across families) is EXDEV, so mv falls back
 * to copy and remove. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, ndir = { 0 }, from = { 0 }, to = { 0 };
	fs_node *dn, *ndn;
	const void *p, *np;
	size_t n, nn;
	int rc, err;

	if ((err = fs_name_check(name)) || (err = fs_name_check(newname)) ||
	    (err = node_addr(f, parent, &dn, &dir)) ||
	    (err = node_addr(f, newparent, &ndn, &ndir))) {
		fuse_reply_err(req, err);
		fs_addr_free(&dir);
		return;
	}
	if (f->readonly) {
		err = EROFS;
		goto out;
	}
	if (flags & ~(unsigned)RENAME_NOREPLACE) {
		err = EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
		goto out;
	}
	rc = fs_resolve(f, &dir, name, 0, &from);
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	if (fs_kind_is_special(from.kind) || fs_class_of(from.kind)->parts == 0 ||
	    fs_kind_is_fixed(from.kind)) {
		err = EPERM; /* special files and the fixed directories */
		goto out;
	}
	if (from.kind == FS_QUEUE_ITEM || from.kind == FS_INFLIGHT_ITEM ||
	    from.kind == FS_DEAD_ITEM) {
		int handled = 0;

		rc = fs_resolve(f, &ndir, newname, 1, &to);
		if (rc == SFS_OK)
			rc = claim_move(f, &from, &to, &handled);
		if (rc || handled) {
			err = fs_errno(f, rc, "rename");
			if (!err) {
				fs_node_unlink(f, dn, from.kind, NULL, 0, from.id);
				if (to.kind == FS_QUEUE_ITEM)
					fs_wait_kick(f); /* an item is back */
			}
			goto out;
		}
	}
	if (fs_class_of(from.kind)->by_id) {
		err = EXDEV; /* entries and items keep their ids: mv copies */
		goto out;
	}
	rc = fs_resolve(f, &ndir, newname, 1, &to);
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	if (fs_kind_is_special(to.kind) || fs_class_of(to.kind)->parts == 0) {
		err = EPERM;
		goto out;
	}
	if (from.kind != to.kind || fs_class_of(from.kind)->by_id ||
	    from.kind == FS_CNT_KEY || from.kind == FS_LOG_KEY) {
		err = EXDEV;
		goto out;
	}
	rc = fs_store_rename(f, &from, &to,
	                     flags & RENAME_NOREPLACE ? SFS_RENAME_NOREPLACE : 0);
	fs_child_part(&from, &p, &n);
	fs_child_part(&to, &np, &nn);
	if (rc == SFS_NOTFOUND && from.kind == FS_KV_KEY && held(f, dn, &from))
		rc = SFS_OK; /* still being created: its commit follows it */
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	fs_node_move(f, dn, from.kind, p, n, ndn, np, nn);
out:
	fuse_reply_err(req, err);
	fs_addr_free(&from);
	fs_addr_free(&to);
	fs_addr_free(&dir);
	fs_addr_free(&ndir);
}

/* MKNOD, SYMLINK, LINK: the store holds none of these. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                       const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EPERM);
}

/* STATFS: sfs_store_info (sizes, rows) and the disk under the store: used
 * is the store's size, available what the disk has left. A store with no
 * local disk under it (one on a database server) reports 1 TiB available,
 * as network filesystems do when they cannot know: zero would read as
 * "full" to tools that check. */
#define UNKNOWN_FREE_BLOCKS ((1ULL << 40) / 4096)
static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	fs *f = fs_of(req);
	struct statvfs sv, disk;
	const char *path = sfs_store_path(f->store);
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
	if (path && strcmp(path, ":memory:") != 0 && (copy = strdup(path))) {
		have_disk = statvfs(dirname(copy), &disk) == 0;
		free(copy);
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	if (have_disk)
		avail = (uint64_t)disk.f_bavail * disk.f_frsize / 4096;
	else if (path && strcmp(path, ":memory:") != 0)
		avail = UNKNOWN_FREE_BLOCKS;
	sv.f_blocks = (info.file_size + info.wal_size + 4095) / 4096 + avail;
	sv.f_bfree = sv.f_bavail = avail;
	sv.f_files = info.kv_rows + info.counter_rows + info.log_rows +
	             info.queue_rows + avail;
	sv.f_ffree = sv.f_favail = avail;
	sv.f_namemax = SFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* FSYNCDIR: sfs_store_sync (directory changes are commits already). */
static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
	fs *f = fs_of(req);

	(void)ino, (void)datasync, (void)fi;
	fuse_reply_err(req, fs_errno(f, sfs_store_sync(f->store), "fsyncdir"));
}

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
	if (fs_wait_start(f) != 0)
		fs_log(f, LOG_ERR, "cannot start the .wait thread: .wait "
		                   "readers will fail with EIO");
	if (!f->readonly && fs_gc_start(f) != 0)
		fs_log(f, LOG_ERR, "cannot start the claim recovery thread: "
		                   "expired claims return at the next claim");
}

/* DESTROY: ends every kept .wait read before the session goes. */
static void op_destroy(void *userdata)
{
	fs_stop(userdata);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.access = op_access,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.link = op_link,
	.rename = op_rename,
	.open = fs_op_open,
	.create = fs_op_create,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.fsync = fs_op_fsync,
	.release = fs_op_release,
	.copy_file_range = fs_op_copy_file_range,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
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
	if (getenv("STATEFS_TEST_DELIVER_DELAY_MS"))
		f->test_deliver_delay_ms =
			atol(getenv("STATEFS_TEST_DELIVER_DELAY_MS"));
	/* Recovery a tenth of a lease apart, between 1 s and 1 min: a dead
	 * worker's items come back at most that much after its lease. */
	f->gc_interval_ms = (cfg->lease_ms ? cfg->lease_ms : 600000) / 10;
	if (f->gc_interval_ms < 1000)
		f->gc_interval_ms = 1000;
	if (f->gc_interval_ms > 60000)
		f->gc_interval_ms = 60000;
	f->log = cfg->log;
	f->log_ctx = cfg->log_ctx;
	f->uid = geteuid();
	f->gid = getegid();
	clock_gettime(CLOCK_REALTIME, &f->start);
	pthread_mutex_init(&f->lock, NULL);
	f->files.next = f->files.prev = &f->files;
	f->dirs.next = f->dirs.prev = &f->dirs;
	if ((err = fs_inodes_init(f))) {
		fs_destroy(f);
		return err;
	}
	*out = f;
	return 0;
}

void fs_stop(fs *f)
{
	fs_gc_stop(f);
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
	fs_inodes_free(f);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
