/*
 * dir.c - directory handles: OPENDIR, READDIR, READDIRPLUS, RELEASEDIR.
 *
 * A listing pages through the store with a cursor (the last name or id
 * returned), never by position, so the daemon holds one page at a time
 * (memory stays flat on a namespace of any size) and entries added or
 * removed while a listing runs neither repeat nor hide the others. The
 * kernel's directory offset is our entry count; an offset other than the
 * one we are at (seekdir, rewinddir) restarts the listing and skips.
 *
 * Special files (.drain, .pop, .wait) are never listed: a tool that walks
 * the tree must not pop or drain anything. READDIRPLUS gives each entry's
 * attributes with FS_TTL_LIST, so `ls -l` costs no GETATTR per entry; plain
 * READDIR makes no nodes at all and reports the inode number a lookup
 * would give.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define PAGE 1024

enum stage { ST_DOT, ST_DOTDOT, ST_FIXED, ST_EPHEMERAL, ST_STORE, ST_END };

typedef struct fs_dir {
	fs_link link;            /* first: in fs.dirs */
	pthread_mutex_t lock;    /* guards the listing state below */
	fs_addr addr;            /* the directory, copied at OPENDIR */
	fs_node *node;           /* a reference */
	uint64_t ihash;          /* its identity hash at OPENDIR */
	uint64_t parent_ino;
	off_t pos;               /* entries returned so far */
	enum stage stage;
	size_t idx;              /* position within ST_FIXED / ST_EPHEMERAL */
	fs_names eph;            /* ephemeral children, taken at OPENDIR */
	sfs_list page;           /* the current page of ST_STORE */
	size_t page_pos;
	int page_last;           /* the store has nothing after this page */
	fs_cursor cur;           /* where the next page starts */
} fs_dir;

static void dir_release_memory(fs_dir *d);

static const fs_kind fixed_dirs[] = { FS_EXEC_ROOT, FS_QUEUE_ROOT,
                                      FS_COUNTER_ROOT };

/* One entry ready to be added: its name, kind, part and attributes. */
typedef struct entry {
	char name[FS_NAME_MAX + 1];
	fs_dent d;
	uint64_t ino;       /* for ".", ".." and the fixed directories */
} entry;

static void dir_reset(fs_dir *d)
{
	d->pos = 0;
	d->stage = ST_DOT;
	d->idx = 0;
	sfs_list_free(&d->page);
	d->page_pos = 0;
	d->page_last = 0;
	fs_cursor_free(&d->cur);
}

/* Fills *e with the entry at the current position without consuming it.
 * SFS_OK, SFS_NOTFOUND at the end, or an engine status. */
static int dir_peek(fs *f, fs_dir *d, entry *e)
{
	int rc;

	memset(&e->d, 0, sizeof(e->d));
	e->ino = 0;
	for (;;) {
		switch (d->stage) {
		case ST_DOT:
			strcpy(e->name, ".");
			e->d.kind = d->addr.kind;
			e->ino = d->node->ino;
			return SFS_OK;
		case ST_DOTDOT:
			strcpy(e->name, "..");
			e->d.kind = FS_ROOT; /* any directory kind */
			e->ino = d->parent_ino;
			return SFS_OK;
		case ST_FIXED:
			if (d->addr.kind != FS_ROOT ||
			    d->idx >= sizeof(fixed_dirs) / sizeof(fixed_dirs[0])) {
				d->stage = ST_EPHEMERAL;
				d->idx = 0;
				continue;
			}
			e->d.kind = fixed_dirs[d->idx];
			e->d.p = fs_class_of(e->d.kind)->what;
			e->d.n = strlen(e->d.p);
			strcpy(e->name, e->d.p);
			e->ino = 2 + d->idx;
			return SFS_OK;
		case ST_EPHEMERAL:
			if (d->idx >= d->eph.n) {
				d->stage = ST_STORE;
				continue;
			}
			e->d.kind = fs_class_of(d->addr.kind)->child;
			e->d.p = d->eph.v[d->idx].ptr;
			e->d.n = d->eph.v[d->idx].len;
			break;
		case ST_STORE:
			if (d->page_pos == d->page.n) {
				if (d->page.n) {
					fs_dent last;
					fs_store_dent(&d->addr, &d->page, d->page.n - 1,
					              &last);
					if ((rc = fs_cursor_set(&d->cur, &last)))
						return rc;
				}
				sfs_list_free(&d->page);
				d->page_pos = 0;
				if (d->page_last) {
					d->stage = ST_END;
					continue;
				}
				rc = fs_store_list(f, &d->addr, &d->cur, PAGE, &d->page);
				if (rc)
					return rc;
				d->page_last = d->page.n < PAGE;
				if (d->page.n == 0) {
					d->stage = ST_END;
					continue;
				}
			}
			fs_store_dent(&d->addr, &d->page, d->page_pos, &e->d);
			break;
		case ST_END:
		default:
			return SFS_NOTFOUND;
		}
		/* A named or numbered child of the store. */
		if (fs_class_of(e->d.kind)->by_id) {
			fs_id_name(e->d.id, e->name);
			return SFS_OK;
		}
		rc = fs_name_encode(sfs_bytes(e->d.p, e->d.n),
		                     fs_names_of(&d->addr, e->d.kind), e->name,
		                     NULL);
		return rc;
	}
}

static void dir_advance(fs_dir *d)
{
	d->pos++;
	switch (d->stage) {
	case ST_DOT:
		d->stage = ST_DOTDOT;
		break;
	case ST_DOTDOT:
		d->stage = ST_FIXED;
		d->idx = 0;
		break;
	case ST_FIXED:
	case ST_EPHEMERAL:
		d->idx++;
		break;
	case ST_STORE:
		d->page_pos++;
		break;
	default:
		break;
	}
}

static void dir_release_memory(fs_dir *d)
{
	dir_reset(d);
	fs_names_free(&d->eph);
	fs_addr_free(&d->addr);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Brings the listing to offset off (a fresh start and a skip unless we
 * are there already). */
static int dir_seek(fs *f, fs_dir *d, off_t off)
{
	entry e;
	int rc;

	if (off == d->pos)
		return SFS_OK;
	dir_reset(d);
	while (d->pos < off) {
		rc = dir_peek(f, d, &e);
		if (rc == SFS_NOTFOUND)
			return SFS_OK;
		if (rc)
			return rc;
		dir_advance(d);
	}
	return SFS_OK;
}

/* OPENDIR: copies the directory's address; for a log namespace, takes the
 * ephemeral keys that hold no entry yet (fs_store_nonempty). */
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fuse_req_userdata(req);
	fs_node *n = fs_node_get(f, ino);
	fs_dir *d;
	int err;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	if ((err = fs_node_addr(f, n, &d->addr)))
		goto fail;
	if (d->addr.kind == FS_LOG_NS &&
	    (err = fs_node_ephemeral_children(f, n, &d->eph)))
		goto fail;
	for (size_t i = 0; i < d->eph.n; i++) {
		fs_addr k;
		if (fs_addr_child(&d->addr, FS_LOG_KEY, d->eph.v[i].ptr,
		                  d->eph.v[i].len, 0, &k))
			continue;
		if (fs_store_nonempty(f, &k) == SFS_OK) {
			/* listed by the store already */
			sfs_buf_free(&d->eph.v[i]);
			d->eph.v[i--] = d->eph.v[--d->eph.n];
		}
		fs_addr_free(&k);
	}
	fs_node_ref(f, n);
	d->node = n;
	d->ihash = fs_node_ihash(f, n);
	d->parent_ino = fs_node_parent_ino(f, n);
	dir_reset(d);
	fi->fh = (uintptr_t)d;
	fs_link_add(f, &f->dirs, &d->link);
	if (fuse_reply_open(req, fi) != 0) {
		fs_link_del(f, &d->link);
		fs_node_unref(f, n);
		d->node = NULL;
		err = 0;
		goto free;
	}
	return;
fail:
	fuse_reply_err(req, err);
free:
	fs_names_free(&d->eph);
	fs_addr_free(&d->addr);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* READDIR / READDIRPLUS: fs_store_list pages (sfs_scope_list, sfs_ns_list,
 * sfs_kv_scan, sfs_log_keys, sfs_log_scan, sfs_item_scan,
 * sfs_counter_scan by kind). */
static void do_readdir(fuse_req_t req, size_t size, off_t off,
                       struct fuse_file_info *fi, int plus)
{
	fs *f = fuse_req_userdata(req);
	fs_dir *d = (fs_dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size), *p = buf;
	size_t rem = size, need;
	entry e;
	int rc = SFS_OK;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->lock);
	rc = dir_seek(f, d, off);
	while (rc == SFS_OK) {
		struct fuse_entry_param ep;
		int dots = d->stage == ST_DOT || d->stage == ST_DOTDOT;

		rc = dir_peek(f, d, &e);
		if (rc)
			break;
		memset(&ep, 0, sizeof(ep));
		if (!plus) {
			ep.attr.st_ino = e.ino ? e.ino
			               : fs_ino_hash(d->ihash, e.d.kind, e.d.p, e.d.n,
			                             e.d.id);
			ep.attr.st_mode = fs_class_of(e.d.kind)->mode;
			need = fuse_add_direntry(req, p, rem, e.name, &ep.attr,
			                         d->pos + 1);
			if (need > rem)
				break;
		} else {
			need = fuse_add_direntry_plus(req, NULL, 0, e.name, NULL, 0);
			if (need > rem)
				break;
			if (dots) {
				/* Not counted by the kernel: no node, no lookup. */
				ep.attr.st_ino = e.ino;
				ep.attr.st_mode = S_IFDIR;
			} else {
				fs_node *n = fs_node_child(f, d->node, e.d.kind, e.d.p,
				                           e.d.n, e.d.id, 1);
				if (!n) {
					rc = SFS_NOMEM;
					break;
				}
				ep.ino = n->ino;
				/* names as LOOKUP gives them (0 for items,
				 * which move: fs_ttl) */
				fs_ttl(e.d.kind, &ep.entry_timeout, &ep.attr_timeout);
				ep.attr_timeout = fs_kind_is_dir(e.d.kind)
				                ? FS_TTL_DIR : FS_TTL_LIST;
				fs_stat_fill(f, e.d.kind, n->ino, e.d.size,
				             e.d.mtime_ns, &ep.attr);
			}
			fuse_add_direntry_plus(req, p, rem, e.name, &ep, d->pos + 1);
		}
		p += need;
		rem -= need;
		dir_advance(d);
	}
	pthread_mutex_unlock(&d->lock);
	if (rc != SFS_OK && rc != SFS_NOTFOUND && rem == size)
		fuse_reply_err(req, fs_errno(f, rc, "readdir"));
	else
		fuse_reply_buf(req, buf, size - rem);
	/* A reply the kernel did not take leaves READDIRPLUS lookups counted
	 * that it never saw; libfuse gives us no way to know, and the kernel
	 * retries the same offset, which finds the same nodes. */
	free(buf);
}

/* READDIR: names and inode numbers only (no nodes); see do_readdir. */
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, 0);
}

/* READDIRPLUS: with attributes, one lookup counted per entry; see
 * do_readdir. */
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, 1);
}

/* RELEASEDIR: frees the handle; no engine call. */
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
                      struct fuse_file_info *fi)
{
	fs *f = fuse_req_userdata(req);
	fs_dir *d = (fs_dir *)(uintptr_t)fi->fh;

	(void)ino;
	fs_link_del(f, &d->link);
	fs_node_unref(f, d->node);
	dir_release_memory(d);
	fuse_reply_err(req, 0);
}

void fs_dirs_free_all(fs *f)
{
	while (f->dirs.next != &f->dirs) {
		fs_dir *d = (fs_dir *)f->dirs.next;
		fs_link_del(f, &d->link);
		dir_release_memory(d);
	}
}
