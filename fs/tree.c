/*
 * tree.c - changes to the tree: MKDIR, RMDIR, UNLINK and RENAME (and the
 * MKNOD, SYMLINK and LINK the store cannot hold), each one or two engine
 * calls through store.c.
 *
 * A rename within one family is one engine call (a key, or a scope or
 * namespace with everything in it); an item moving between a queue, its
 * inflight/ and its dead/ under its own name is a claim operation
 * (claim_move); anything else is EXDEV, so mv falls back to copy and
 * remove.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

/* MKDIR: sfs_dir_create (scopes and namespaces of every family); a log
 * key is kept in the inode table until its first entry (store.c). */
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
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
	    (err = fs_node_addr_of(f, parent, &dn, &dir))) {
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
		fs_reply_entry(f, req, dn, &child, 0, 0);
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
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn, *node;
	const void *p;
	size_t n;
	int rc, err;

	if ((err = fs_name_check(name)) ||
	    (err = fs_node_addr_of(f, parent, &dn, &dir))) {
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
 * with it (the open file keeps its bytes, which go nowhere). Under -o
 * async_close a key's or counter's delete is held and answered before its
 * commit, as a close is (loop.c). */
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn, *an;
	const void *p;
	size_t n;
	int64_t id;
	int rc, err, hold = 0;

	if ((err = fs_name_check(name)) ||
	    (err = fs_node_addr_of(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	rc = fs_resolve(f, &dir, name, 0, &child);
	if (rc == SFS_NOTFOUND && !f->readonly &&
	    (dir.kind == FS_QUEUE || dir.kind == FS_LOG_KEY) &&
	    fs_alias_find(f, dn, name, fuse_req_ctx(req)->pid, &an, &id)) {
		/* The caller's alias (alias.c): the entry or item it names,
		 * ENOENT if a consumer took it. The alias goes either way. */
		fs_addr_free(&child);
		rc = fs_alias_addr(&dir, id, &child) ? SFS_NOMEM : SFS_OK;
		fs_alias_drop(f, an);
		fs_node_unref(f, an);
	}
	if (f->readonly)
		err = EROFS;
	else if (rc)
		err = fs_errno(f, rc, "unlink");
	else if (fs_kind_is_special(child.kind))
		err = EPERM;
	else if (fs_kind_is_dir(child.kind))
		err = EISDIR;
	else {
		if (child.kind == FS_KV_KEY)
			fs_file_keep(f, dn, &child);
		hold = f->async_close && (child.kind == FS_KV_KEY ||
		                          child.kind == FS_CNT_KEY) &&
		       fs_hold_begin(f);
		rc = fs_store_unlink(f, &child);
		if (hold)
			fs_hold_end(f);
		if (rc != SFS_OK &&
		    !(rc == SFS_NOTFOUND && held(f, dn, &child)))
			err = fs_errno(f, rc, "unlink");
	}
	if (!err) {
		fs_child_part(&child, &p, &n);
		fs_node_unlink(f, dn, child.kind, p, n, child.id);
	}
	fuse_reply_err(req, err);
	if (hold && rc == SFS_OK)
		fs_hold_done(f); /* committed with the next ones */
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

static int same_part(const fs_addr *a, const fs_addr *b)
{
	return a->part[0].len == b->part[0].len &&
	       !memcmp(a->part[0].ptr, b->part[0].ptr, a->part[0].len);
}

/* Whether dir is item's queue, or its inflight/ or dead/. */
static int in_queue(const fs_addr *dir, const fs_addr *item)
{
	return (dir->kind == FS_QUEUE || dir->kind == FS_INFLIGHT ||
	        dir->kind == FS_DEAD) && same_part(dir, item);
}

/* An item moving within its queue between the pending items, inflight/
 * and dead/, under its own name: sfs_claim_item (the Maildir mv: one of
 * racing claimers wins, the others get ENOENT), sfs_item_settle with
 * NACK (back at its place) or REJECT, sfs_item_requeue (the tail, under a
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
		return sfs_item_requeue(f->store, fs_part(from, 0), from->id, NULL);
	return sfs_item_settle(f->store, fs_part(from, 0), from->id,
	                           b == FS_DEAD_ITEM ? SFS_OUTCOME_REJECT
	                                             : SFS_OUTCOME_NACK);
}

/* A scope moved to be a namespace of its family, or a namespace to be a
 * scope, while it holds anything: mv's copy would make the target and
 * stop at its first child (a namespace's child cannot be a directory, a
 * scope's cannot be a key), leaving it half made and the source whole.
 * EPERM instead, as a mkdir or a create there is; an empty one is
 * copied (a mkdir and an rmdir). */
static int level_change_refused(fs *f, const fs_addr *from,
                                const fs_addr *ndir)
{
	const fs_class *c = fs_class_of(from->kind);
	fs_kind to = fs_class_of(ndir->kind)->child;
	sfs_list l = { NULL, 0 };
	int full;

	if (!fs_kind_is_dir(from->kind) || !c->fam || c->parts < 1 ||
	    !fs_kind_is_dir(to) || fs_class_of(to)->fam != c->fam)
		return 0;
	if (sfs_dir_names(f->store, c->fam, fs_part(from, 0),
	                  c->parts > 1 ? fs_part(from, 1) : SFS_NONE,
	                  SFS_NONE, 1, &l) != SFS_OK)
		return 0;
	full = l.n > 0;
	sfs_list_free(&l);
	return full;
}

/* Whether newname in ndir is the long (hashed) name of from's own bytes
 * there: a long name cannot name something new, but `mv a/LONG b/` keeps
 * the name it has, so the bytes are from's. */
static int same_long_name(const fs_addr *ndir, const char *newname,
                          const fs_addr *from)
{
	fs_kind kind = fs_class_of(ndir->kind)->child;
	char name[FS_NAME_MAX + 1];
	const void *p;
	size_t n;

	if (kind != from->kind || !strstr(newname, "%~"))
		return 0;
	fs_child_part(from, &p, &n);
	return p && fs_name_encode(sfs_bytes(p, n), fs_names_of(ndir, kind),
	                           name, NULL) == SFS_OK &&
	       strcmp(name, newname) == 0;
}

/* A rename's target, newname in ndir: 0, or the errno (EPERM for special
 * files and the fixed directories). A long name is from's when it is the
 * name from's bytes have there (same_long_name). */
static int rename_target(fs *f, const fs_addr *ndir, const char *newname,
                         const fs_addr *from, fs_addr *to)
{
	const void *p;
	size_t n;
	int rc = fs_resolve(f, ndir, newname, 1, to);

	if (rc == SFS_INVALID && same_long_name(ndir, newname, from)) {
		fs_child_part(from, &p, &n);
		rc = fs_addr_child(ndir, from->kind, p, n, 0, to) ? SFS_NOMEM
		                                                  : SFS_OK;
	}
	if (rc)
		return fs_errno(f, rc, "rename");
	if (fs_kind_is_special(to->kind) || fs_class_of(to->kind)->parts == 0)
		return EPERM;
	return 0;
}

/* RENAME_EXCHANGE of from (in dn) with newname in ndir (ndn): two values
 * or two counters swap in one transaction (SFS_RENAME_EXCHANGE), each with
 * its time, and their nodes swap names, so open files follow their bytes.
 * One still being created (held, not in the store yet) is a name only: the
 * other is renamed onto it in the store, and its commit follows its node
 * to the other name. Both must exist (ENOENT); anything else is EINVAL,
 * what renameat2 says where a filesystem cannot exchange. */
static int exchange(fs *f, fs_node *dn, const fs_addr *from, fs_node *ndn,
                    const fs_addr *ndir, const char *newname)
{
	fs_addr to = { 0 };
	const void *p, *np;
	size_t n, nn;
	int rc, err = 0;

	if ((err = rename_target(f, ndir, newname, from, &to)))
		goto out;
	if (from->kind != to.kind ||
	    (from->kind != FS_KV_KEY && from->kind != FS_CNT_KEY)) {
		err = EINVAL;
		goto out;
	}
	rc = fs_store_rename(f, from, &to, SFS_RENAME_EXCHANGE);
	if (rc == SFS_NOTFOUND) {
		int fh = held(f, dn, from), th = held(f, ndn, &to);

		if (fh && th)
			rc = SFS_OK;
		else if (fh)
			rc = fs_store_rename(f, &to, from, SFS_RENAME_NOREPLACE);
		else if (th)
			rc = fs_store_rename(f, from, &to, SFS_RENAME_NOREPLACE);
	}
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	fs_child_part(from, &p, &n);
	fs_child_part(&to, &np, &nn);
	fs_node_exchange(f, dn, from->kind, p, n, ndn, np, nn);
out:
	fs_addr_free(&to);
	return err;
}

/* RENAME: sfs_kv_rename for keys, sfs_counter_rename for counters,
 * sfs_dir_rename for scopes, namespaces and queues; claim moves of items
 * (claim_move); RENAME_EXCHANGE of two keys or two counters (exchange).
 * Anything else (entries, items, log keys, across families or levels) is
 * EXDEV, so mv falls back to copy and remove, but a scope or namespace that
 * changes level with anything in it is EPERM. */
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, ndir = { 0 }, from = { 0 }, to = { 0 };
	fs_node *dn, *ndn, *an, *alias = NULL;
	const void *p, *np;
	size_t n, nn;
	int64_t id;
	int rc, err;

	if ((err = fs_name_check(name)) || (err = fs_name_check(newname)) ||
	    (err = fs_node_addr_of(f, parent, &dn, &dir)) ||
	    (err = fs_node_addr_of(f, newparent, &ndn, &ndir))) {
		fuse_reply_err(req, err);
		fs_addr_free(&dir);
		return;
	}
	if (f->readonly) {
		err = EROFS;
		goto out;
	}
	if ((flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))) {
		err = EINVAL; /* RENAME_WHITEOUT, or both */
		goto out;
	}
	rc = fs_resolve(f, &dir, name, 0, &from);
	if (rc == SFS_NOTFOUND &&
	    (dir.kind == FS_QUEUE || dir.kind == FS_LOG_KEY) &&
	    fs_alias_find(f, dn, name, fuse_req_ctx(req)->pid, &an, &id)) {
		/* The caller's alias (alias.c). Within its directory, to a
		 * name that is nothing there (rsync's `.f.XXXXXX` to `f`):
		 * the alias is renamed, the store is not touched. Else a
		 * rename of the entry or item it names. */
		alias = an; /* referenced until out */
		if (ndn == dn && !(flags & RENAME_EXCHANGE) &&
		    fs_resolve(f, &dir, newname, 0, &to) == SFS_NOTFOUND) {
			err = fs_alias_rename(f, dn, name, newname,
			                      fuse_req_ctx(req)->pid,
			                      (flags & RENAME_NOREPLACE) != 0);
			goto out;
		}
		fs_addr_free(&to);
		fs_addr_free(&from);
		rc = fs_alias_addr(&dir, id, &from) ? SFS_NOMEM : SFS_OK;
	}
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	if (fs_kind_is_special(from.kind) || fs_class_of(from.kind)->parts == 0 ||
	    fs_kind_is_fixed(from.kind)) {
		err = EPERM; /* special files and the fixed directories */
		goto out;
	}
	if (flags & RENAME_EXCHANGE) {
		err = exchange(f, dn, &from, ndn, &ndir, newname);
		goto out;
	}
	if (from.kind == FS_QUEUE_ITEM || from.kind == FS_INFLIGHT_ITEM ||
	    from.kind == FS_DEAD_ITEM) {
		int handled = 0;

		rc = fs_resolve(f, &ndir, newname, 1, &to);
		if (rc == SFS_OK)
			rc = claim_move(f, &from, &to, &handled);
		else if (rc == SFS_INVALID && !in_queue(&ndir, &from))
			rc = SFS_OK; /* not an item's name there: EXDEV */
		if (rc || handled) {
			err = fs_errno(f, rc, "rename");
			if (!err) {
				if (alias) /* no longer pending */
					fs_alias_drop(f, alias);
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
	if (fs_class_of(ndir.kind)->child != from.kind) {
		/* into another family, or another level: mv copies */
		err = level_change_refused(f, &from, &ndir) ? EPERM : EXDEV;
		goto out;
	}
	if ((err = rename_target(f, &ndir, newname, &from, &to)))
		goto out;
	if (from.kind != to.kind || fs_class_of(from.kind)->by_id ||
	    from.kind == FS_LOG_KEY) {
		err = EXDEV;
		goto out;
	}
	if (!(flags & RENAME_NOREPLACE) && to.kind == FS_KV_KEY)
		fs_file_keep(f, ndn, &to); /* the target is replaced */
	rc = fs_store_rename(f, &from, &to,
	                     flags & RENAME_NOREPLACE ? SFS_RENAME_NOREPLACE : 0);
	fs_child_part(&from, &p, &n);
	fs_child_part(&to, &np, &nn);
	if (rc == SFS_NOTFOUND &&
	    (from.kind == FS_KV_KEY || from.kind == FS_CNT_KEY) &&
	    held(f, dn, &from))
		rc = SFS_OK; /* still being created: its commit follows it */
	if (rc) {
		err = fs_errno(f, rc, "rename");
		goto out;
	}
	fs_node_move(f, dn, from.kind, p, n, ndn, np, nn);
out:
	fuse_reply_err(req, err);
	if (alias)
		fs_node_unref(f, alias);
	fs_addr_free(&from);
	fs_addr_free(&to);
	fs_addr_free(&dir);
	fs_addr_free(&ndir);
}

/* The empty file mknod(S_IFREG) makes: a value with one insert-if-absent
 * (sfs_kv_edit, SFS_EDIT_EXCL), a counter at 0 (an add of 0 makes it
 * absent, changes nothing present). SFS_EXISTS when it exists. */
static int make_empty(fs *f, fs_node *dn, const fs_addr *child)
{
	uint64_t size;
	int64_t mtime;
	int rc;

	if (held(f, dn, child))
		return SFS_EXISTS; /* being created */
	if (child->kind == FS_KV_KEY)
		return sfs_kv_edit(f->store, fs_part(child, 0), fs_part(child, 1),
		                   fs_part(child, 2), NULL, 0,
		                   SFS_EDIT_CREATE | SFS_EDIT_EXCL, NULL);
	rc = fs_store_stat(f, child, &size, &mtime);
	if (rc != SFS_NOTFOUND)
		return rc == SFS_OK ? SFS_EXISTS : rc;
	return sfs_counter_add(f->store, fs_part(child, 0), fs_part(child, 1),
	                       fs_part(child, 2), 0, NULL);
}

/* MKNOD of a regular file (tar --xattrs makes each file so, then opens
 * it; Python's os.mknod): an empty value or counter, made at once
 * (make_empty); EEXIST when there is one, as on a local filesystem.
 * Entries and items are named by the store, so not made so (EPERM), nor
 * devices, fifos and sockets, which the store does not hold. */
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev)
{
	fs *f = fs_of(req);
	fs_addr dir = { 0 }, child = { 0 };
	fs_node *dn;
	fs_kind kind;
	int rc, err;

	(void)rdev;
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((err = fs_name_check(name)) ||
	    (err = fs_node_addr_of(f, parent, &dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	kind = fs_class_of(dir.kind)->create;
	if (f->readonly)
		err = EROFS;
	else if (kind != FS_KV_KEY && kind != FS_CNT_KEY)
		err = EPERM;
	else if ((rc = fs_resolve(f, &dir, name, 1, &child)) != SFS_OK)
		err = fs_errno(f, rc, "mknod"); /* EINVAL: no name of anything */
	else if (child.kind != kind)
		err = EEXIST; /* a special file */
	else if ((rc = make_empty(f, dn, &child)) != SFS_OK)
		err = rc == SFS_EXISTS ? EEXIST : fs_errno(f, rc, "mknod");
	if (err)
		fuse_reply_err(req, err);
	else
		fs_reply_entry(f, req, dn, &child, child.kind == FS_CNT_KEY ? 2 : 0,
		               fs_write_time_ns());
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* SYMLINK, LINK: the store holds neither. */

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                       const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EPERM);
}

void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EPERM);
}
