/*
 * file.c - open files: values, counters, log entries and queue items
 * (OPEN, CREATE, READ, WRITE, FLUSH, FSYNC, RELEASE).
 *
 * A value is atomic. OPEN takes a snapshot of it (sfs_kv_get) into the
 * handle; reads are served from the snapshot and writes change the
 * handle's image of it, at any offset, so dd conv=notrunc, truncate and
 * O_APPEND work; nothing reaches the store until FLUSH puts the whole image
 * (sfs_kv_put). FLUSH is how close(2) reports errors and the only request
 * close waits for, so `echo v > k; cat k` never races; it may come several
 * times per open (dup, fork, dd) and commits only what changed since the
 * last one. RELEASE, sent later and asynchronously, frees the handle (and
 * commits what a writer left after its last FLUSH, which only mmap could).
 * Every file is opened with direct_io: the kernel's page cache would mix
 * pages of different snapshots and show a writer's bytes before its commit.
 *
 * Counters take one token per commit: "N" or "=N" sets, "+N" and "-N" add,
 * surrounded by optional blanks. A write that cannot be (the prefix of)
 * such a token, or an add that would overflow the current value, fails at
 * WRITE with EINVAL, where the shell sees it; the store is left as it was.
 * A value handle that had a write refused (EFBIG) commits nothing at all,
 * so bad input never changes the store, not even by a create; a counter
 * drops the refused token only.
 *
 * A file created in a log key or a queue is a new entry or item: its bytes
 * are appended or pushed at FLUSH (each FLUSH after new writes adds one
 * more; a file created and closed empty adds an empty one). Entries and
 * items are read-only; read = peek.
 *
 * A file being created exists for the mount from CREATE on (empty; the
 * node counts it pending) and for the store from its commit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define COUNTER_INPUT_MAX 64

static fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static fs_file *file_of(struct fuse_file_info *fi)
{
	return (fs_file *)(uintptr_t)fi->fh;
}

fs_file *fs_file_new(fs *f, fs_node *n, fs_kind kind, int flags)
{
	fs_file *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->node = n;
	h->kind = kind;
	h->flags = flags;
	fs_node_ref(f, n);
	fs_link_add(f, &f->files, &h->link);
	return h;
}

static void file_release_memory(fs_file *h)
{
	fs_stream_free(h->stream);
	free(h->buf);
	free(h->in);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fs_files_free_all(fs *f)
{
	while (f->files.next != &f->files) {
		fs_file *h = (fs_file *)f->files.next;
		fs_link_del(f, &h->link);
		file_release_memory(h);
	}
}

void fs_file_free(fs *f, fs_file *h)
{
	if (!h)
		return;
	if (h->pending)
		fs_node_pending(f, h->node, -1);
	fs_node_unref(f, h->node);
	fs_link_del(f, &h->link);
	file_release_memory(h);
}

int fs_file_reserve(fs_file *h, size_t cap)
{
	unsigned char *p;
	size_t nc;

	if (cap <= h->cap)
		return 0;
	nc = h->cap ? h->cap : 64;
	while (nc < cap)
		nc = nc > SIZE_MAX / 2 ? cap : nc * 2;
	p = realloc(h->buf, nc);
	if (!p)
		return ENOMEM;
	h->buf = p;
	h->cap = nc;
	return 0;
}

/* Takes the engine's buffer into the handle (copied: the handle grows its
 * own memory, the engine's is released with sfs_buf_free). */
static int take(fs_file *h, sfs_buf *v)
{
	int err = fs_file_reserve(h, v->len + 1);

	if (!err) {
		memcpy(h->buf, v->ptr, v->len);
		h->len = v->len;
	}
	sfs_buf_free(v);
	return err;
}

/* Counter input: 0 a whole token, 1 a proper prefix of one (or nothing),
 * -1 not a token. On 0: *set (1: set, 0: add) and *v. */
static int counter_parse(const unsigned char *s, size_t n, int *set,
                         int64_t *v)
{
	size_t i = 0;
	uint64_t u = 0, lim = INT64_MAX;
	int neg = 0, digits = 0, mode = 1; /* 1: set, 0: add */

	if (n > COUNTER_INPUT_MAX)
		return -1;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	                 s[i] == '\r'))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-')) {
		mode = 0;
		neg = s[i] == '-';
		i++;
	} else if (i < n && s[i] == '=') {
		i++;
		if (i < n && s[i] == '-') {
			neg = 1;
			i++;
		}
	}
	if (neg)
		lim = (uint64_t)INT64_MAX + 1;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (u > (lim - (uint64_t)(s[i] - '0')) / 10)
			return -1; /* does not fit in int64 */
		u = u * 10 + (uint64_t)(s[i] - '0');
	}
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	                 s[i] == '\r'))
		i++;
	if (i < n)
		return -1;
	if (!digits)
		return 1;
	*set = mode;
	*v = neg ? (int64_t)((uint64_t)0 - u) : (int64_t)u;
	return 0;
}

static void set_pending(fs *f, fs_file *h, int on)
{
	if (on && !h->pending) {
		h->pending = 1;
		fs_node_pending(f, h->node, +1);
	} else if (!on && h->pending) {
		h->pending = 0;
		fs_node_pending(f, h->node, -1);
	}
}

/* Commits what the handle holds that the store does not: the value image,
 * the counter token, or a new entry or item. FLUSH (final 0) commits what
 * was written since the last commit at once. A create or O_TRUNC open that
 * nothing was written to is committed at its second FLUSH or at RELEASE
 * (final 1), not its first: a shell redirection dups the file and closes
 * the original before the command writes, and committing then would show
 * readers an empty value in the middle of `echo v > k`. Called with the
 * handle's lock held. Returns an errno. */
static int commit(fs *f, fs_file *h, int final, const char *op)
{
	fs_addr a = { 0 };
	sfs_slice item;
	int64_t v;
	int rc = SFS_OK, err, set;

	if (h->refused) {
		/* All or nothing: a value that could not be written whole
		 * is not written at all. */
		h->dirty = h->written = 0;
		h->inlen = h->len = 0;
		h->created = 0;
		set_pending(f, h, 0);
		return 0;
	}
	switch (h->kind) {
	case FS_KV_KEY:
		if (!h->dirty)
			return 0;
		break;
	case FS_CNT_KEY:
		if (h->inlen == 0 && !h->created)
			return 0;
		break;
	case FS_LOG_NEW:
	case FS_QUEUE_NEW:
		if (!h->written && h->committed)
			return 0;
		break;
	default:
		return 0;
	}
	if (!final && !h->written && h->inlen == 0 && ++h->idle_flushes < 2)
		return 0;
	if ((err = fs_node_addr(f, h->node, &a)))
		return err;
	if ((h->kind == FS_KV_KEY || h->kind == FS_CNT_KEY) &&
	    !fs_node_linked(f, h->node)) {
		/* Deleted or replaced while open: its writes go with it. */
		rc = SFS_OK;
	} else if (h->kind == FS_KV_KEY) {
		rc = sfs_kv_put(f->store, fs_part(&a, 0), fs_part(&a, 1),
		                fs_part(&a, 2), sfs_bytes(h->buf ? (void *)h->buf : "",
		                                          h->len));
	} else if (h->kind == FS_CNT_KEY) {
		if (h->inlen == 0)
			rc = sfs_counter_set(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), 0); /* touch */
		else if (counter_parse(h->in, h->inlen, &set, &v) != 0)
			rc = SFS_INVALID; /* "+" alone: refused, nothing changes */
		else if (set)
			rc = sfs_counter_set(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), v);
		else
			rc = sfs_counter_add(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), v, NULL);
		h->inlen = 0;
		h->created = 0;
	} else {
		item = sfs_bytes(h->buf ? (void *)h->buf : "", h->len);
		rc = h->kind == FS_LOG_NEW
		   ? sfs_log_append(f->store, fs_part(&a, 0), fs_part(&a, 1),
		                    fs_part(&a, 2), item, NULL)
		   : sfs_queue_push(f->store, fs_part(&a, 0), &item, 1, NULL);
		if (rc == SFS_OK) {
			h->committed = 1;
			h->len = 0; /* later writes make the next one */
			if (h->kind == FS_QUEUE_NEW)
				fs_wait_kick(f);
		}
	}
	/* Committed or refused, it is settled: close reports the outcome,
	 * and a later FLUSH must not apply it a second time. */
	h->dirty = 0;
	h->written = 0;
	h->idle_flushes = 0;
	set_pending(f, h, 0);
	fs_addr_free(&a);
	return fs_errno(f, rc, op);
}

/* Fills a fresh handle for kind from the store, per the open flags.
 * Returns an engine status. */
static int load(fs *f, fs_file *h, const fs_addr *a)
{
	sfs_buf v = { NULL, 0 };
	char text[24];
	int64_t n;
	int rc, exists, acc = h->flags & O_ACCMODE;

	switch (h->kind) {
	case FS_KV_KEY:
		if ((h->flags & O_TRUNC) && acc != O_RDONLY) {
			h->dirty = 1; /* `> key`: the empty value unless written */
			return SFS_OK;
		}
		if (fs_node_pending_empty(f, h->node))
			return SFS_OK; /* being created: empty until stored */
		rc = sfs_kv_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                fs_part(a, 2), &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	case FS_CNT_KEY:
		rc = sfs_counter_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                     fs_part(a, 2), &n, &exists);
		if (rc)
			return rc;
		if (!exists && !fs_node_held(f, h->node))
			return SFS_NOTFOUND;
		v.len = fs_counter_text(n, text);
		if (fs_file_reserve(h, v.len + 1))
			return SFS_NOMEM;
		memcpy(h->buf, text, v.len);
		h->len = v.len;
		return SFS_OK;
	case FS_LOG_ENTRY:
		rc = sfs_log_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                 fs_part(a, 2), a->id, &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	case FS_QUEUE_ITEM:
		rc = sfs_queue_peek(f->store, fs_part(a, 0), a->id, &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	case FS_INFLIGHT_ITEM:
		rc = sfs_inflight_peek(f->store, fs_part(a, 0), a->id, &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	case FS_DEAD_ITEM:
		rc = sfs_dead_peek(f->store, fs_part(a, 0), a->id, &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	default:
		return SFS_OK; /* special files: at the first READ */
	}
}

static void set_open_flags(fs_file *h, struct fuse_file_info *fi)
{
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* Nothing to commit at close: spare the FLUSH round trip. */
	fi->noflush = (h->flags & O_ACCMODE) == O_RDONLY;
}

/* OPEN: sfs_kv_get, sfs_counter_get, sfs_log_get or sfs_queue_peek into a
 * snapshot (nothing for O_TRUNC, nothing yet for special files). */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_node *n = fs_node_get(f, ino);
	fs_addr a = { 0 };
	fs_file *h;
	mode_t mode;
	int rc, err, writing = (fi->flags & O_ACCMODE) != O_RDONLY;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	mode = fs_class_of(n->kind)->mode;
	if (fs_kind_is_dir(n->kind)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (writing && f->readonly) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (writing && !(mode & 0200)) {
		fuse_reply_err(req, EACCES); /* entries, items, special files */
		return;
	}
	if ((err = fs_node_addr(f, n, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	h = fs_file_new(f, n, n->kind, fi->flags);
	if (!h) {
		fs_addr_free(&a);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = load(f, h, &a);
	fs_addr_free(&a);
	if (rc) {
		char op[64];
		snprintf(op, sizeof(op), "reading a %s", fs_class_of(n->kind)->what);
		fs_file_free(f, h);
		fuse_reply_err(req, fs_errno(f, rc, op));
		return;
	}
	if (fs_kind_is_special(n->kind) && (err = fs_special_open(f, h))) {
		fs_file_free(f, h);
		fuse_reply_err(req, err);
		return;
	}
	set_open_flags(h, fi);
	if (fuse_reply_open(req, fi) != 0)
		fs_file_free(f, h); /* interrupted: no RELEASE will come */
}

/* CREATE: a key or counter that the first FLUSH stores (sfs_kv_put,
 * sfs_counter_set), or a new log entry or queue item (sfs_log_append,
 * sfs_queue_push at FLUSH; the name is not kept). */
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	struct fuse_entry_param e;
	fs_node *dn = fs_node_get(f, parent), *n = NULL;
	fs_addr dir = { 0 }, child = { 0 };
	fs_kind kind;
	fs_file *h = NULL;
	uint64_t size = 0;
	int64_t mtime = 0;
	int rc, err;

	(void)mode;
	if (!dn) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((err = fs_node_addr(f, dn, &dir))) {
		fuse_reply_err(req, err);
		return;
	}
	kind = fs_class_of(dir.kind)->create;
	if (f->readonly) {
		err = EROFS;
		goto fail;
	}
	if (kind == FS_NONE) {
		err = EPERM; /* values live in namespaces, not in scopes */
		goto fail;
	}

	if (kind == FS_LOG_NEW || kind == FS_QUEUE_NEW) {
		n = fs_node_anon(f, dn, kind);
		if (!n || !(h = fs_file_new(f, n, kind, fi->flags))) {
			err = ENOMEM;
			goto fail;
		}
		memset(&e, 0, sizeof(e));
		e.ino = n->ino;
		fs_ttl(kind, &e.entry_timeout, &e.attr_timeout);
		fs_stat_fill(f, kind, n->ino, 0, fs_now_ns(), &e.attr);
		goto reply;
	}

	rc = fs_resolve(f, &dir, name, 1, &child);
	if (rc == SFS_OK && child.kind != kind)
		rc = SFS_EXISTS; /* .drain */
	if (rc) {
		err = fs_errno(f, rc, "create"); /* EINVAL: no name of anything */
		goto fail;
	}
	rc = fs_store_stat(f, &child, &size, &mtime);
	if (rc == SFS_OK && (fi->flags & O_EXCL)) {
		err = EEXIST;
		goto fail;
	}
	if (rc != SFS_OK && rc != SFS_NOTFOUND) {
		err = fs_errno(f, rc, "create");
		goto fail;
	}
	if ((err = fs_entry_fill(f, dn, &child, size, mtime ? mtime : fs_now_ns(),
	                         &e, &n)))
		goto fail;
	h = fs_file_new(f, n, kind, fi->flags);
	if (!h) {
		fs_node_forget(f, n, 1);
		err = ENOMEM;
		goto fail;
	}
	if (rc == SFS_NOTFOUND) {
		/* Exists once the first FLUSH commits; until then lookups
		 * and GETATTR see it through the node (fs_node_held). Two
		 * O_EXCL creates of one name: the second finds it pending. */
		if (!fs_node_pending_claim(f, n, fi->flags & O_EXCL)) {
			fs_file_free(f, h);
			fs_node_forget(f, n, 1);
			h = NULL;
			err = EEXIST;
			goto fail;
		}
		h->pending = 1;
		h->created = 1;
		h->dirty = kind == FS_KV_KEY;
	} else if ((rc = load(f, h, &child)) != SFS_OK) {
		fs_file_free(f, h);
		fs_node_forget(f, n, 1);
		h = NULL;
		err = fs_errno(f, rc, "create");
		goto fail;
	}
reply:
	set_open_flags(h, fi);
	if (fuse_reply_create(req, &e, fi) != 0) {
		fs_file_free(f, h);
		fs_node_forget(f, n, 1);
	}
	fs_addr_free(&child);
	fs_addr_free(&dir);
	return;
fail:
	if (h)
		fs_file_free(f, h);
	if (n && (kind == FS_LOG_NEW || kind == FS_QUEUE_NEW))
		fs_node_forget(f, n, 1);
	fuse_reply_err(req, err);
	fs_addr_free(&child);
	fs_addr_free(&dir);
}

/* READ: from the handle's snapshot; special files take their bytes from
 * the store at the first READ (special.c). */
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);

	(void)ino;
	if (fs_kind_is_special(h->kind)) {
		fs_special_read(f, req, h, size, off);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (off < 0 || (size_t)off >= h->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, (const char *)h->buf + off,
		               h->len - (size_t)off < size ? h->len - (size_t)off
		                                           : size);
	pthread_mutex_unlock(&h->lock);
}

/* A counter write: appends to the token, refuses what cannot become one
 * and an add that would overflow now (sfs_counter_get). */
static int counter_write(fs *f, fs_file *h, const char *buf, size_t size)
{
	fs_addr a = { 0 };
	unsigned char *p;
	int64_t cur, v, r;
	int set, st, rc, exists, err;

	if (h->inlen + size > COUNTER_INPUT_MAX)
		return EINVAL;
	p = realloc(h->in, h->inlen + size + 1);
	if (!p)
		return ENOMEM;
	h->in = p;
	memcpy(h->in + h->inlen, buf, size);
	st = counter_parse(h->in, h->inlen + size, &set, &v);
	if (st < 0)
		return EINVAL; /* the bytes are not kept: nothing changes */
	if (st == 0 && !set) {
		if ((err = fs_node_addr(f, h->node, &a)))
			return err;
		rc = sfs_counter_get(f->store, fs_part(&a, 0), fs_part(&a, 1),
		                     fs_part(&a, 2), &cur, &exists);
		fs_addr_free(&a);
		if (rc)
			return fs_errno(f, rc, "counter read");
		if (__builtin_add_overflow(cur, v, &r))
			return EINVAL;
	}
	h->inlen += size;
	return 0;
}

/* WRITE: into the handle's image (values, new entries and items) or the
 * counter token; nothing reaches the store before FLUSH. */
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                 size_t size, off_t off, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	size_t end;
	int err = 0;

	(void)ino;
	pthread_mutex_lock(&h->lock);
	switch (h->kind) {
	case FS_KV_KEY:
	case FS_LOG_NEW:
	case FS_QUEUE_NEW:
		if (h->flags & O_APPEND)
			off = (off_t)h->len; /* the kernel's idea of the size
			                        may be older than our snapshot */
		if (off < 0) {
			err = EINVAL;
			break;
		}
		end = (size_t)off + size;
		if (end > f->max_value) {
			err = EFBIG;
			break;
		}
		if ((err = fs_file_reserve(h, end + 1)))
			break;
		if ((size_t)off > h->len)
			memset(h->buf + h->len, 0, (size_t)off - h->len);
		memcpy(h->buf + off, buf, size);
		if (end > h->len)
			h->len = end;
		h->dirty = 1;
		h->written = 1;
		break;
	case FS_CNT_KEY:
		err = counter_write(f, h, buf, size);
		break;
	default:
		err = EACCES;
		break;
	}
	if (err == EFBIG || err == EINVAL) {
		/* A counter's refused token is simply not kept (later ones
		 * still count), but a create whose only write was refused
		 * makes no counter; a value is all or nothing. */
		if (h->kind == FS_CNT_KEY)
			h->created = 0;
		else
			h->refused = 1;
	}
	pthread_mutex_unlock(&h->lock);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, size);
}

int fs_file_truncate(fs *f, fs_file *h, off_t size)
{
	int err = 0;

	pthread_mutex_lock(&h->lock);
	switch (h->kind) {
	case FS_KV_KEY:
	case FS_LOG_NEW:
	case FS_QUEUE_NEW:
		if (size < 0)
			err = EINVAL;
		else if ((uint64_t)size > f->max_value)
			err = EFBIG;
		else if (!(err = fs_file_reserve(h, (size_t)size + 1))) {
			if ((size_t)size > h->len)
				memset(h->buf + h->len, 0, (size_t)size - h->len);
			h->len = (size_t)size;
			h->dirty = 1;
			h->written = 1;
		}
		break;
	case FS_CNT_KEY:
		err = size == 0 ? 0 : EINVAL; /* `> counter` */
		break;
	default:
		err = EACCES;
		break;
	}
	if (err == EFBIG)
		h->refused = 1;
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* FLUSH: commit (sfs_kv_put, sfs_counter_set/add, sfs_log_append,
 * sfs_queue_push) of what changed since the last FLUSH; close(2) returns
 * its outcome. */
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err;

	(void)ino;
	pthread_mutex_lock(&h->lock);
	err = commit(f, h, 0, "flush");
	pthread_mutex_unlock(&h->lock);
	fuse_reply_err(req, err);
}

/* FSYNC: commit, then sfs_store_sync (durable across power loss). */
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                 struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err;

	(void)ino, (void)datasync;
	pthread_mutex_lock(&h->lock);
	err = commit(f, h, 1, "fsync");
	pthread_mutex_unlock(&h->lock);
	if (!err)
		err = fs_errno(f, sfs_store_sync(f->store), "fsync");
	fuse_reply_err(req, err);
}

/* RELEASE: commits what is left (normally nothing: FLUSH came first) and
 * frees the handle. Popped bytes never read are dropped (special.c). */
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err;

	(void)ino;
	if (fs_kind_streams(h->kind))
		fs_special_release(f, h);
	pthread_mutex_lock(&h->lock);
	err = commit(f, h, 1, "release");
	pthread_mutex_unlock(&h->lock);
	if (err)
		fs_log(f, LOG_WARNING, "a %s was not stored when its file was "
		       "released: %s", fs_class_of(h->kind)->what, strerror(err));
	fs_file_free(f, h);
	fuse_reply_err(req, 0);
}
