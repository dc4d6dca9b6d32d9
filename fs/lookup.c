/*
 * lookup.c - names to nodes: how a name in a directory resolves to a store
 * address (fs_resolve), the entries the kernel is given for them, and the
 * LOOKUP and FORGET handlers that count the kernel's references.
 *
 * A name is a fixed directory, a special file, an entry or item id, or a
 * byte string in the name codec (text.h); a long, hashed name is found by
 * a scan of its directory (store.c). Negative entries are never cached: a
 * missing name is a plain ENOENT, so a file another process creates is
 * seen at the next lookup.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

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
	rc = fs_name_decode(name, strlen(name), fs_names_of(dir, child), &b,
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
int fs_node_addr_of(fs *f, fuse_ino_t ino, fs_node **n, fs_addr *a)
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
void fs_reply_entry(fs *f, fuse_req_t req, fs_node *dir,
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

/* A name in a queue or log key (dn, at dir) that is the caller's alias of
 * an entry or item (alias.c): replies with its node and the entry's or
 * item's attributes (ENOENT once it is gone) and returns 1; 0 if the name
 * is no alias of the caller's. */
static int reply_alias(fs *f, fuse_req_t req, fs_node *dn,
                       const fs_addr *dir, const char *name)
{
	struct fuse_entry_param e;
	fs_addr item = { 0 };
	fs_node *n;
	uint64_t size = 0;
	int64_t id, mtime = 0;
	int rc;

	if (!fs_alias_find(f, dn, name, fuse_req_ctx(req)->pid, &n, &id))
		return 0;
	rc = fs_alias_addr(dir, id, &item) ? SFS_NOMEM
	   : fs_store_stat(f, &item, &size, &mtime);
	if (rc == SFS_NOTFOUND)
		fs_alias_drop(f, n); /* consumed or deleted */
	if (rc) {
		fuse_reply_err(req, fs_errno(f, rc, "lookup"));
	} else {
		memset(&e, 0, sizeof(e));
		e.ino = n->ino;
		fs_ttl(n->kind, &e.entry_timeout, &e.attr_timeout);
		fs_stat_fill(f, n->kind, n->ino, size, mtime, &e.attr);
		fs_node_count(f, n);
		if (fuse_reply_entry(req, &e) != 0)
			fs_node_forget(f, n, 1); /* the kernel never got it */
	}
	fs_node_unref(f, n);
	fs_addr_free(&item);
	return 1;
}

/* LOOKUP: fs_store_stat (sfs_dir_exists, sfs_kv_stat, sfs_log_stat,
 * sfs_item_stat, sfs_counter_scan by kind); long names via a scan; in a
 * queue or log key, the caller's aliases (alias.c). */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	    (err = fs_node_addr_of(f, parent, &dn, &dir))) {
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
			mtime = fs_write_time_ns();
		}
	}
	if (rc == SFS_NOTFOUND &&
	    (dir.kind == FS_QUEUE || dir.kind == FS_LOG_KEY) &&
	    reply_alias(f, req, dn, &dir, name)) {
		fs_addr_free(&child);
		fs_addr_free(&dir);
		return;
	}
	if (rc)
		fuse_reply_err(req, fs_errno(f, rc, "lookup"));
	else
		fs_reply_entry(f, req, dn, &child, size, mtime);
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* FORGET: returns kernel lookups; the node goes when none are left. */
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs *f = fs_of(req);
	fs_node *n = fs_node_get(f, ino);

	if (n && ino != FUSE_ROOT_ID)
		fs_node_forget(f, n, nlookup);
	fuse_reply_none(req);
	fs_node_trim(f);
}

/* FORGET_MULTI: the batched FORGET. */
void fs_op_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
	fs *f = fs_of(req);

	for (size_t i = 0; i < count; i++) {
		fs_node *n = fs_node_get(f, forgets[i].ino);
		if (n && forgets[i].ino != FUSE_ROOT_ID)
			fs_node_forget(f, n, forgets[i].nlookup);
	}
	fuse_reply_none(req);
	fs_node_trim(f);
}
