/*
 * dir.c - directory handles: OPENDIR, READDIR, READDIRPLUS, RELEASEDIR.
 *
 * A listing pages through the store with a cursor (the last name or id
 * returned), never by position, so the daemon holds only the pages read
 * since the kernel's last request (memory stays flat on a namespace of
 * any size) and entries added or removed while a listing runs neither
 * repeat nor hide the others. The kernel's directory offset (d_off, what
 * telldir returns) is the entry's count in its high 32 bits and a hash of
 * its name in the low 32 (dir_cookie). The kernel asks again from an
 * earlier offset when the reader's buffer took fewer entries than our
 * reply held (getdents with less than the kernel's 4 KiB): that offset is
 * in the pages kept, which answer it as before. Any other offset (seekdir)
 * restarts the listing and resumes after the entry of that name, however
 * many entries before it were added or removed since (as on ext4 and
 * tmpfs); only when that entry is gone does it skip by count.
 *
 * Special files (.drain, .pop, .wait) are never listed: a tool that walks
 * the tree must not pop or drain anything. READDIRPLUS gives each entry's
 * attributes with FS_TTL_LIST, so `ls -l` costs no GETATTR per entry, and
 * reads no more of them than its reply holds; plain READDIR reads names
 * only (sfs_dir_names: no sizes, no times), makes no nodes at all and
 * reports the inode number a lookup would give.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* Names read from the store at a time for READDIR: a page of 256 items
 * is about 27 KiB, which glibc keeps in its arena (the daemon fixes the
 * trim threshold at 128 KiB, mountd/main.c), where pages of 1,024 were
 * trimmed and faulted in again at every page (madvise, a TLB shootdown
 * here). */
#define PAGE 256
/* Pages kept for a kernel that asks again from an entry of an earlier
 * page: a reply of up to 1 MiB of names. */
#define WINDOW 32

enum stage { ST_DOT, ST_DOTDOT, ST_FIXED, ST_STORE, ST_EPHEMERAL, ST_END };

typedef struct fs_dir {
	fs_link link;            /* first: in fs.dirs */
	pthread_mutex_t lock;    /* guards the listing state below */
	fs_addr addr;            /* the directory, copied at OPENDIR */
	fs_node *node;           /* a reference */
	uint32_t async_since;    /* fs.async_error as FSYNCDIR last saw it */
	uint64_t ihash;          /* its identity hash when addr was taken */
	uint64_t parent_ino;
	off_t pos;               /* entries returned so far */
	uint32_t last_tag;       /* the name hash of the last one */
	enum stage stage;
	size_t idx;              /* position within ST_FIXED / ST_EPHEMERAL */
	fs_names eph;            /* children the store does not hold yet
	                            (ephemeral, being created), taken at
	                            OPENDIR, listed after the store's */
	unsigned char *eph_seen; /* [i]: eph.v[i] was listed by the store
	                            in this pass (committed since OPENDIR),
	                            so it is not listed again */
	fs_name_kind nk;         /* how its children's names are spelled */
	/* ST_STORE: the pages read since the kernel's last request, in
	 * order, each starting where the one before ended. */
	struct dir_page {
		sfs_list l;
		off_t base;          /* the offset of its first entry */
		int names;           /* names only (READDIR) */
	} win[WINDOW];
	size_t nwin;
	size_t cur;              /* the page in use */
	size_t page_pos;         /* the next entry in it */
	int page_last;           /* the store has nothing after win[nwin-1] */
	fs_cursor after;         /* where win[0] (or the next page) starts */
} fs_dir;

static void dir_release_memory(fs_dir *d);

/* A name's 32-bit FNV-1a hash, the low half of its offset. */
static uint32_t name_tag(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

/* The offset after the entry at position pos (counted from 0) named
 * name: the position of the next one and the name's hash. */
static off_t dir_cookie(off_t pos, const char *name)
{
	return (off_t)(((uint64_t)(pos + 1) << 32) | name_tag(name));
}

static const fs_kind fixed_dirs[] = { FS_EXEC_ROOT, FS_QUEUE_ROOT,
                                      FS_COUNTER_ROOT };

/* One entry ready to be added: its name, kind, part and attributes. */
typedef struct entry {
	char name[FS_NAME_MAX + 1];
	fs_dent d;
	uint64_t ino;       /* for ".", ".." and the fixed directories */
} entry;

/* Drops the window's first k pages; d->after moves past them. */
static int win_drop_front(fs_dir *d, size_t k)
{
	int rc = SFS_OK;

	if (k == 0)
		return SFS_OK;
	if (d->win[k - 1].l.n) {
		fs_dent last;

		fs_store_dent(&d->addr, &d->win[k - 1].l,
		              d->win[k - 1].l.n - 1, &last);
		rc = fs_cursor_set(&d->after, &last);
	}
	for (size_t i = 0; i < k; i++)
		sfs_list_free(&d->win[i].l);
	memmove(d->win, d->win + k, (d->nwin - k) * sizeof(d->win[0]));
	d->nwin -= k;
	d->cur = d->cur >= k ? d->cur - k : 0;
	return rc;
}

/* Drops the window's pages from the current position on (to read them
 * again with attributes). */
static void win_cut(fs_dir *d)
{
	struct dir_page *pg = &d->win[d->cur];
	size_t keep = d->cur + (d->page_pos > 0);

	pg->l.n = d->page_pos; /* the block is freed whole all the same */
	for (size_t i = keep; i < d->nwin; i++)
		sfs_list_free(&d->win[i].l);
	d->nwin = keep;
	d->cur = keep ? keep - 1 : 0;
	d->page_pos = keep ? d->win[d->cur].l.n : 0; /* at its end */
	d->page_last = 0;
}

static void dir_reset(fs_dir *d)
{
	d->pos = 0;
	d->last_tag = 0;
	d->stage = ST_DOT;
	d->idx = 0;
	if (d->eph.n)
		memset(d->eph_seen, 0, d->eph.n);
	for (size_t i = 0; i < d->nwin; i++)
		sfs_list_free(&d->win[i].l);
	d->nwin = d->cur = d->page_pos = 0;
	d->page_last = 0;
	fs_cursor_free(&d->after);
}

/* Reads the page after the window's last into the window and makes it
 * the current page. */
static int win_read(fs *f, fs_dir *d, int attrs, long limit)
{
	fs_cursor c = { 0 };
	const fs_cursor *from = &d->after;
	struct dir_page *pg;
	int rc;

	if (d->nwin == WINDOW && (rc = win_drop_front(d, 1)))
		return rc;
	if (d->nwin) {
		fs_dent last;
		struct dir_page *lp = &d->win[d->nwin - 1];

		fs_store_dent(&d->addr, &lp->l, lp->l.n - 1, &last);
		c.set = 1; /* borrowed from the page */
		c.key.ptr = (void *)(uintptr_t)last.p;
		c.key.len = last.n;
		c.id = last.id;
		from = &c;
	}
	pg = &d->win[d->nwin];
	rc = fs_store_list(f, &d->addr, from, limit, !attrs, &pg->l);
	if (rc)
		return rc;
	d->page_last = pg->l.n < (size_t)limit;
	if (pg->l.n == 0)
		return SFS_OK;
	pg->base = d->pos;
	pg->names = !attrs;
	d->cur = d->nwin++;
	d->page_pos = 0;
	return SFS_OK;
}

/* Fills *e with the entry at the current position without consuming it.
 * With attrs, the store's entries come with their sizes and times
 * (READDIRPLUS), read limit at a time; without, names only, PAGE at a
 * time. SFS_OK, SFS_NOTFOUND at the end, or an engine status. */
static int dir_peek(fs *f, fs_dir *d, entry *e, int attrs, long limit)
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
				d->stage = ST_STORE;
				continue;
			}
			e->d.kind = fixed_dirs[d->idx];
			e->d.p = fs_class_of(e->d.kind)->what;
			e->d.n = strlen(e->d.p);
			strcpy(e->name, e->d.p);
			e->ino = 2 + d->idx;
			return SFS_OK;
		case ST_EPHEMERAL:
			while (d->idx < d->eph.n && d->eph_seen[d->idx])
				d->idx++;
			if (d->idx >= d->eph.n) {
				d->stage = ST_END;
				continue;
			}
			e->d.kind = fs_class_of(d->addr.kind)->child;
			e->d.p = d->eph.v[d->idx].ptr;
			e->d.n = d->eph.v[d->idx].len;
			break;
		case ST_STORE:
			if (attrs && d->nwin && d->win[d->cur].names &&
			    d->page_pos < d->win[d->cur].l.n)
				/* READDIRPLUS after READDIR: the rest of a
				 * page of names is read again, with attributes */
				win_cut(d);
			if (d->nwin && d->page_pos == d->win[d->cur].l.n &&
			    d->cur + 1 < d->nwin) {
				/* read already: the kernel asked again */
				d->cur++;
				d->page_pos = 0;
			}
			if (!d->nwin || d->page_pos == d->win[d->cur].l.n) {
				if (d->page_last) {
					d->stage = ST_EPHEMERAL;
					d->idx = 0;
					continue;
				}
				if ((rc = win_read(f, d, attrs,
				                   attrs ? limit : PAGE)))
					return rc;
				if (d->page_last && (!d->nwin ||
				    d->page_pos == d->win[d->cur].l.n)) {
					d->stage = ST_EPHEMERAL;
					d->idx = 0;
					continue;
				}
			}
			fs_store_dent(&d->addr, &d->win[d->cur].l, d->page_pos,
			              &e->d);
			for (size_t i = 0; i < d->eph.n; i++)
				if (d->eph.v[i].len == e->d.n &&
				    !memcmp(d->eph.v[i].ptr, e->d.p, e->d.n))
					d->eph_seen[i] = 1;
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
		rc = fs_name_encode(sfs_bytes(e->d.p, e->d.n), d->nk, e->name,
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
	free(d->eph_seen);
	fs_addr_free(&d->addr);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The name hash of the entry at position pos of the window's pages, or
 * -1 when they do not hold it. */
static int64_t win_tag(fs_dir *d, off_t pos)
{
	for (size_t i = d->nwin; i-- > 0;) {
		struct dir_page *pg = &d->win[i];
		entry e;

		if (pg->base > pos)
			continue;
		if ((size_t)(pos - pg->base) >= pg->l.n)
			return -1;
		fs_store_dent(&d->addr, &pg->l, (size_t)(pos - pg->base), &e.d);
		if (fs_class_of(e.d.kind)->by_id)
			fs_id_name(e.d.id, e.name);
		else if (fs_name_encode(sfs_bytes(e.d.p, e.d.n), d->nk, e.name,
		                        NULL))
			return -1;
		return name_tag(e.name);
	}
	return -1;
}

/* Brings the listing to offset off (dir_cookie): where we are, back
 * within the pages read since the last request, or else a fresh start,
 * up to the entry whose name has the offset's hash (a seekdir: entries
 * before it may have come or gone since its telldir), or, when there is
 * none, a skip by count. Pages before off are dropped: the kernel asks
 * for them again only after a seekdir, which starts afresh. */
static int dir_seek(fs *f, fs_dir *d, off_t cookie)
{
	off_t off = (off_t)((uint64_t)cookie >> 32);
	uint32_t tag = (uint32_t)cookie;
	entry e;
	int rc;

	if (d->nwin && (d->stage == ST_STORE ||
	                (d->stage == ST_END && !d->eph.n)) &&
	    off >= d->win[0].base && off <= d->pos &&
	    (off == d->pos ? tag == d->last_tag : win_tag(d, off - 1) == tag)) {
		/* Where we are, or, for a reader whose buffer took fewer
		 * entries than the last reply held (getdents with less than
		 * the kernel's page), the first entry it dropped. The entry
		 * before must be the one the offset names: after a rewind,
		 * an offset from before it may count other entries. */
		size_t i = d->nwin - 1;

		while (d->win[i].base > off)
			i--;
		if (off < d->pos) {
			d->stage = ST_STORE;
			d->cur = i;
			d->page_pos = (size_t)(off - d->win[i].base);
			d->pos = off;
			d->last_tag = tag;
		}
		return win_drop_front(d, d->cur);
	}
	if (off == d->pos && (off == 0 || tag == d->last_tag))
		return SFS_OK;
	dir_reset(d);
	if (off == 0)
		return SFS_OK;
	for (;;) {
		rc = dir_peek(f, d, &e, 0, PAGE);
		if (rc == SFS_NOTFOUND)
			break;
		if (rc)
			return rc;
		dir_advance(d);
		d->last_tag = name_tag(e.name);
		if (d->last_tag == tag)
			return SFS_OK;
	}
	dir_reset(d); /* that entry is gone: by count */
	while (d->pos < off) {
		rc = dir_peek(f, d, &e, 0, PAGE);
		if (rc == SFS_NOTFOUND)
			return SFS_OK;
		if (rc)
			return rc;
		dir_advance(d);
		d->last_tag = name_tag(e.name);
	}
	return SFS_OK;
}

/* The directory moved (a rename of it or of a directory above it) since
 * its address was taken: the listing goes on at its new address, as an
 * open directory's does on a local filesystem. Its pages and cursor are
 * names within it, which the rename did not change. */
static void dir_follow(fs *f, fs_dir *d)
{
	uint64_t ih = fs_node_ihash(f, d->node);
	fs_addr a;

	if (ih == d->ihash || fs_node_addr(f, d->node, &a))
		return;
	fs_addr_free(&d->addr);
	d->addr = a;
	d->ihash = ih;
	d->nk = fs_names_of(&d->addr, fs_class_of(d->addr.kind)->child);
	d->parent_ino = fs_node_parent_ino(f, d->node);
}

/* OPENDIR: copies the directory's address, and takes the children the
 * store does not hold yet: a log namespace's ephemeral keys that hold no
 * entry (fs_store_nonempty), and the keys and counters being created.
 * They are listed after the store's, but for those the store's pages
 * listed (a create committed since: once, as a local filesystem lists a
 * file made during a listing at most once). */
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
	d->async_since = fs_async_sample(f);
	if ((err = fs_node_addr(f, n, &d->addr)))
		goto fail;
	if ((d->addr.kind == FS_LOG_NS ||
	     ((d->addr.kind == FS_KV_NS || d->addr.kind == FS_CNT_NS) &&
	      fs_nodes_pending(f))) &&
	    (err = fs_node_held_children(f, n, &d->eph)))
		goto fail;
	for (size_t i = 0; i < d->eph.n; i++) {
		fs_kind kind = fs_class_of(d->addr.kind)->child;
		uint64_t size;
		int64_t mtime;
		fs_addr k;
		int rc;

		if (fs_addr_child(&d->addr, kind, d->eph.v[i].ptr,
		                  d->eph.v[i].len, 0, &k))
			continue;
		rc = kind == FS_LOG_KEY ? fs_store_nonempty(f, &k)
		                        : fs_store_stat(f, &k, &size, &mtime);
		if (rc == SFS_OK) {
			/* listed by the store already */
			sfs_buf_free(&d->eph.v[i]);
			d->eph.v[i--] = d->eph.v[--d->eph.n];
		}
		fs_addr_free(&k);
	}
	if (d->eph.n && !(d->eph_seen = calloc(d->eph.n, 1))) {
		err = ENOMEM;
		goto fail;
	}
	fs_node_ref(f, n);
	d->node = n;
	d->ihash = fs_node_ihash(f, n);
	d->nk = fs_names_of(&d->addr, fs_class_of(d->addr.kind)->child);
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
	free(d->eph_seen);
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
	/* READDIRPLUS reads no more entries with attributes than the
	 * reply can hold, each at least an entry with an empty name. */
	long limit = plus ? (long)(size / fuse_add_direntry_plus(req, NULL, 0,
	                                                         "", NULL, 0)) + 1
	                  : PAGE;
	entry e;
	int rc = SFS_OK;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->lock);
	dir_follow(f, d);
	rc = dir_seek(f, d, off);
	while (rc == SFS_OK) {
		struct fuse_entry_param ep;
		int dots = d->stage == ST_DOT || d->stage == ST_DOTDOT;

		rc = dir_peek(f, d, &e, plus, limit < PAGE ? limit : PAGE);
		if (rc)
			break;
		memset(&ep, 0, sizeof(ep));
		if (!plus) {
			ep.attr.st_ino = e.ino ? e.ino
			               : fs_ino_hash(d->ihash, e.d.kind, e.d.p, e.d.n,
			                             e.d.id);
			ep.attr.st_mode = fs_class_of(e.d.kind)->mode;
			need = fuse_add_direntry(req, p, rem, e.name, &ep.attr,
			                         dir_cookie(d->pos, e.name));
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
				fs_view v;

				if (!n) {
					rc = SFS_NOMEM;
					break;
				}
				/* An open file's unsaved changes, as GETATTR
				 * shows them: the kernel takes this size for
				 * its own, also for the writer's fstat and
				 * lseek(SEEK_END) (fs_node_view). */
				fs_node_view(f, n, NULL, &v);
				if (v.unsaved) {
					e.d.size = v.size;
					e.d.mtime_ns = v.mtime_ns;
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
			fuse_add_direntry_plus(req, p, rem, e.name, &ep,
			                       dir_cookie(d->pos, e.name));
		}
		p += need;
		rem -= need;
		dir_advance(d);
		d->last_tag = name_tag(e.name);
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

/* FSYNCDIR: what FSYNC does for the store (directory changes are commits
 * already): fs_sync_store. */
void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                    struct fuse_file_info *fi)
{
	fs *f = fuse_req_userdata(req);
	fs_dir *d = (fs_dir *)(uintptr_t)fi->fh;

	(void)ino, (void)datasync;
	fuse_reply_err(req, fs_sync_store(f, &d->lock, &d->async_since,
	                                  "fsyncdir"));
}
