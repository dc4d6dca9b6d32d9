/*
 * file.c - open files: values, counters, log entries and queue items
 * (OPEN, CREATE, READ, WRITE, FLUSH, FSYNC, RELEASE, COPY_FILE_RANGE).
 *
 * A value open for reading is a snapshot taken at OPEN (sfs_kv_get);
 * reads inside it stay consistent, and a reader at its end is served what
 * the value holds past it now (sfs_kv_read), so `tail -f` and `less +F`
 * follow a value that grows. A value open for writing holds only what the
 * handle changed (image.c): written extents, a truncation, bytes appended
 * with O_APPEND; reads through it compose those with the store's bytes.
 * Nothing reaches the store before FLUSH applies the changes in one
 * sfs_kv_edit: a small write to a large value costs what it changes, and
 * O_APPEND writers all land, each whole. FLUSH is how close(2) reports
 * errors and the only request close waits for, so `echo v > k; cat k`
 * never races; it may come several times per open (dup, fork, dd) and
 * commits only what changed since the last one. RELEASE, sent later and
 * asynchronously, frees the handle (and commits what a writer left after
 * its last FLUSH). Every file is opened with direct_io: the kernel's page
 * cache would mix pages of different snapshots and show a writer's bytes
 * before its commit.
 *
 * A process that dies of a signal commits nothing: when a FLUSH would
 * commit, the closing task is looked at (caller.c), and if it is dying of
 * a signal the handle is cancelled: what it holds is dropped, and nothing
 * more commits through it (not at RELEASE, not at the close of a process
 * that shares it, whose writes then fail with EIO).
 *
 * Counters take tokens, one per line: "N" or "=N" sets, "+N" and "-N" add,
 * surrounded by optional blanks; a commit applies what they come to as one
 * set or add (fs_counter_tokens). A write that cannot be (the prefix of)
 * such tokens, or an add that would overflow the current value, fails at
 * WRITE with EINVAL, where the shell sees it; the store is left as it was.
 * A value handle that had a write refused (EFBIG, ENOBUFS) commits nothing
 * at all, so bad input never changes the store, not even by a create, and
 * says so: its later writes, its close and fsync fail with the same error.
 * A counter drops the refused token only.
 *
 * A file created in a log key or a queue is a new entry or item: its bytes
 * are appended or pushed at FLUSH (each FLUSH or FSYNC after new writes
 * adds one more, starting where the first write after the last one
 * lands; a file created and closed empty adds an empty one). Entries and
 * items are read-only; read = peek.
 *
 * A file being created exists for the mount from CREATE on (empty; the
 * node counts it pending) and for the store from its commit. The bytes
 * write handles hold are counted against the mount's bound
 * (fs.max_buffered): a write past it fails with ENOBUFS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* The most a COPY_FILE_RANGE moves at once; callers loop on short copies. */
#define COPY_CHUNK (8u << 20)

static fs_file *file_of(struct fuse_file_info *fi)
{
	return (fs_file *)(uintptr_t)fi->fh;
}

fs_file *fs_file_new(fs *f, fs_node *n, fs_kind kind, int flags,
                     pid_t opener)
{
	fs_file *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->node = n;
	h->kind = kind;
	h->flags = flags;
	h->opener = opener;
	fs_writers_add(&h->writers, opener); /* its create or O_TRUNC */
	h->async_since = fs_async_sample(f);
	fs_node_ref(f, n);
	fs_node_file_add(f, n, h);
	fs_link_add(f, &f->files, &h->link);
	return h;
}

/* fs.async_error: an errno in the low bits, a bit set once an fsync has
 * told it, and a count above them, bumped by a failure after that. */
#define ASYNC_ERRNO 0xfffu
#define ASYNC_SEEN 0x1000u
#define ASYNC_ONE 0x2000u

void fs_async_failed(fs *f, int err)
{
	uint32_t old = __atomic_load_n(&f->async_error, __ATOMIC_RELAXED), new;

	do {
		new = (old & ~(ASYNC_ERRNO | ASYNC_SEEN)) |
		      ((uint32_t)err & ASYNC_ERRNO);
		if (old & ASYNC_SEEN)
			new += ASYNC_ONE;
	} while (new != old &&
	         !__atomic_compare_exchange_n(&f->async_error, &old, new, 0,
	                                      __ATOMIC_RELAXED,
	                                      __ATOMIC_RELAXED));
}

uint32_t fs_async_sample(fs *f)
{
	uint32_t cur = __atomic_load_n(&f->async_error, __ATOMIC_RELAXED);

	return cur & ASYNC_SEEN ? cur : 0; /* not told yet: the opener tells */
}

int fs_async_check(fs *f, uint32_t *since)
{
	uint32_t cur = __atomic_load_n(&f->async_error, __ATOMIC_RELAXED);
	uint32_t expect = cur;

	if (cur == *since)
		return 0;
	/* Marked seen unless a new failure came meanwhile (told next time). */
	__atomic_compare_exchange_n(&f->async_error, &expect, cur | ASYNC_SEEN,
	                            0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	*since = cur | ASYNC_SEEN;
	return (int)(cur & ASYNC_ERRNO);
}

int fs_sync_store(fs *f, pthread_mutex_t *lock, uint32_t *since,
                  const char *what)
{
	int err;

	fs_hold_commit(f);
	err = fs_errno(f, sfs_store_sync(f->store), what);
	pthread_mutex_lock(lock);
	if (!err)
		err = fs_async_check(f, since);
	pthread_mutex_unlock(lock);
	return err;
}

static void file_release_memory(fs_file *h)
{
	fs_stream_free(h->stream);
	free(h->buf);
	free(h->in);
	free(h->made_as);
	fs_image_free(&h->img);
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

/* Sets what h holds against the mount's bound to want bytes. With check,
 * growth past the bound is refused (ENOBUFS) and nothing changes. */
static int hold(fs *f, fs_file *h, size_t want, int check)
{
	int err = 0;

	pthread_mutex_lock(&f->lock);
	if (check && want > h->held &&
	    f->buffered + (want - h->held) > f->max_buffered)
		err = ENOBUFS;
	else
		f->buffered = f->buffered - h->held + want;
	if (!err)
		h->held = want;
	pthread_mutex_unlock(&f->lock);
	return err;
}

void fs_file_free(fs *f, fs_file *h)
{
	if (!h)
		return;
	if (h->pending)
		fs_node_pending(f, h->node, -1);
	hold(f, h, 0, 0);
	fs_node_file_del(f, h->node, h);
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

/* Publishes what GETATTR shows for h: its length, and whether it has
 * changes not yet stored (a write, a truncation, a create). written: h
 * was just written or truncated, which makes a time given to its value
 * before (fs_node_give_mtime) the write's own again. Called with h->lock
 * held (then fs.lock, the documented order). */
static void publish_as(fs *f, fs_file *h, int written)
{
	int unsaved = h->image && h->dirty && !h->cancelled;

	pthread_mutex_lock(&f->lock);
	if (written)
		h->node->has_mtime = 0;
	h->pub_cancelled = h->cancelled;
	h->pub_size = h->image ? h->img.size : h->item_base + h->len;
	if (unsaved) {
		h->pub_seq = ++f->file_seq;
		h->pub_mtime = fs_write_time_ns();
	} else {
		h->pub_seq = 0;
	}
	pthread_mutex_unlock(&f->lock);
}

static void publish(fs *f, fs_file *h)
{
	publish_as(f, h, 0);
}

/* The opener holds no descriptor of h any more (fs_file.pub_closed):
 * its descriptors on the file are other handles'. */
static void closed_by_opener(fs *f, fs_file *h)
{
	pthread_mutex_lock(&f->lock);
	h->pub_closed = 1;
	pthread_mutex_unlock(&f->lock);
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

/* Whether the handle holds something the store does not: what a commit
 * would store. */
static int has_work(const fs_file *h)
{
	if (h->refused || h->cancelled)
		return 0;
	switch (h->kind) {
	case FS_KV_KEY:
		return h->dirty;
	case FS_CNT_KEY:
		return h->inlen > 0 || h->created;
	case FS_LOG_NEW:
	case FS_QUEUE_NEW:
		return h->written || !h->committed;
	default:
		return 0;
	}
}

/* Drops what the handle holds that is not stored: after a refused write,
 * a cancellation, a commit that failed, or one that had nowhere to go. */
static void drop(fs *f, fs_file *h)
{
	h->dirty = h->written = 0;
	h->writers.n = 0;
	h->inlen = h->len = 0;
	h->created = 0;
	h->idle_flushes = 0;
	if (h->image)
		fs_image_reset(&h->img, h->img.base);
	set_pending(f, h, 0);
	hold(f, h, 0, 0);
	publish(f, h);
}

/* A value's changes as one sfs_kv_edit. A handle whose image covers the
 * whole value (a create, O_TRUNC) or whose key is still being created
 * makes the key if it is absent; a handle that patches a value another
 * process deleted meanwhile writes to nothing, as writes to a deleted file
 * do. A handle whose only change is a cut (`exec 3>k`, an ftruncate, no
 * write after it) stores nothing if another handle stored the value after
 * the cut: on a local filesystem the cut came first and that value
 * stays. */
static int commit_value(fs *f, fs_file *h, const fs_addr *a)
{
	/* The check and the edit as one against other handles' commits of
	 * the value (a pool of threads serves them at once on PostgreSQL). */
	pthread_mutex_t *mu = &f->value_mu[h->node->ino % FS_VALUE_LOCKS];
	sfs_edit *e;
	int64_t mtime;
	uint64_t size = 0;
	unsigned flags = 0;
	size_t n;
	int rc;

	if (!(e = malloc((h->img.n + 3) * sizeof(*e))))
		return SFS_NOMEM;
	n = fs_image_edits(&h->img, e);
	if (h->img.cut == 0 || fs_node_held(f, h->node))
		flags = SFS_EDIT_CREATE;
	pthread_mutex_lock(mu);
	if (h->img.n == 0 && h->img.applen == 0 && h->img.cut != FS_NO_CUT &&
	    fs_node_stored_seq(f, h->node) != h->cut_stored) {
		rc = SFS_OK; /* a cut, and a value stored after it */
	} else {
		rc = sfs_kv_edit(f->store, fs_part(a, 0), fs_part(a, 1),
		                 fs_part(a, 2), e, n, flags, &size);
		if (rc == SFS_OK) {
			fs_image_reset(&h->img, size);
			h->base_stored = fs_node_stored(f, h->node);
		}
		if (rc == SFS_OK && fs_node_take_mtime(f, h->node, &mtime))
			rc = sfs_kv_set_mtime(f->store, fs_part(a, 0),
			                      fs_part(a, 1), fs_part(a, 2), mtime);
	}
	pthread_mutex_unlock(mu);
	free(e);
	return rc == SFS_NOTFOUND ? SFS_OK : rc;
}

/* Commits what the handle holds that the store does not: the value's
 * changes, the counter token, or a new entry or item. final: the writer's
 * last close (or RELEASE, FSYNC). Without it (a FLUSH whose process could
 * not be looked at) what was written is committed at once, but a create
 * or O_TRUNC open that nothing was written to waits for a second FLUSH or
 * RELEASE: a shell redirection dups the file and closes the original
 * before the command writes, and committing then would show readers an
 * empty value in the middle of `echo v > k`. Called with the handle's
 * lock held. Returns an errno. */
static int commit(fs *f, fs_file *h, int final, const char *op)
{
	fs_addr a = { 0 };
	sfs_slice item;
	int64_t v, id = 0;
	int rc = SFS_OK, err, set;

	if (h->refused) {
		/* All or nothing: a value that could not be written whole
		 * is not written at all, and close and fsync say so. */
		drop(f, h);
		return h->refused;
	}
	if (!has_work(h))
		return 0;
	if (!final && !h->written && h->inlen == 0 && ++h->idle_flushes < 2)
		return 0;
	if ((err = fs_node_addr(f, h->node, &a)))
		return err;
	if ((h->kind == FS_KV_KEY || h->kind == FS_CNT_KEY) &&
	    !fs_node_linked(f, h->node)) {
		/* Deleted or replaced while open: its writes go with it. */
		rc = SFS_OK;
	} else if (h->kind == FS_KV_KEY) {
		rc = commit_value(f, h, &a);
	} else if (h->kind == FS_CNT_KEY) {
		if (h->inlen == 0)
			rc = sfs_counter_set(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), 0); /* touch */
		else if (fs_counter_tokens(h->in, h->inlen, &set, &v) != 0)
			rc = SFS_INVALID; /* "+" alone: refused, nothing changes */
		else if (set)
			rc = sfs_counter_set(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), v);
		else
			rc = sfs_counter_add(f->store, fs_part(&a, 0), fs_part(&a, 1),
			                     fs_part(&a, 2), v, NULL);
	} else {
		/* The next entry or item starts where this one ends in the
		 * file: a writer that goes on after an fsync (a logger) or a
		 * commit at a FLUSH writes at the offsets after these bytes,
		 * which must not become leading zeros of the next one. */
		h->item_base += h->len;
		h->item_rebase = 1;
		item = sfs_bytes(h->buf ? (void *)h->buf : "", h->len);
		rc = h->kind == FS_LOG_NEW
		   ? sfs_log_append(f->store, fs_part(&a, 0), fs_part(&a, 1),
		                    fs_part(&a, 2), item, &id)
		   : sfs_queue_push(f->store, fs_part(&a, 0), &item, 1, &id);
		/* Pushed or refused, it is settled: a push that failed is
		 * not followed by an empty one at the next FLUSH or the
		 * RELEASE (another process holding the file, which wrote
		 * nothing, closing it after the server took writes again). */
		h->committed = 1;
		if (rc == SFS_OK) {
			fs_alias_commit(f, h, id);
			if (h->kind == FS_QUEUE_NEW)
				fs_wait_kick(f);
		}
	}
	/* Committed or refused, it is settled: close reports the outcome,
	 * and a later FLUSH must not apply it a second time. */
	drop(f, h);
	fs_addr_free(&a);
	return fs_errno(f, rc, op);
}

/* A process holding h died of a signal with changes unsaved: nothing of
 * h is committed from now on (docs/filesystem.md, "Killed writers"). */
static void cancel(fs *f, fs_file *h, pid_t pid)
{
	fs_log(f, LOG_NOTICE, "a %s was not stored: the process writing it "
	       "(%d) was killed by a signal", fs_class_of(h->kind)->what,
	       (int)pid);
	h->cancelled = 1;
	drop(f, h); /* publishes the cancellation */
}

/* Fills a fresh handle for kind from the store, per the open flags.
 * Returns an engine status. */
static int load(fs *f, fs_file *h, const fs_addr *a)
{
	sfs_buf v = { NULL, 0 };
	char text[24];
	sfs_stat st;
	int64_t n = 0;
	int rc, held, acc = h->flags & O_ACCMODE;

	switch (h->kind) {
	case FS_KV_KEY:
		if (acc != O_RDONLY) {
			/* Written: the changes only, over the store's value. */
			if (h->flags & O_TRUNC) {
				fs_image_init(&h->img, 0, 1);
				h->cut_stored = fs_node_stored_seq(f, h->node);
				h->dirty = 1; /* `> key`: empty unless written */
			} else if (fs_node_pending_empty(f, h->node)) {
				fs_image_init(&h->img, 0, 0); /* being created */
			} else {
				h->base_stored = fs_node_stored_seq(f, h->node);
				rc = sfs_kv_stat(f->store, fs_part(a, 0),
				                 fs_part(a, 1), fs_part(a, 2), &st);
				if (rc)
					return rc;
				fs_image_init(&h->img, st.size, 0);
			}
			h->image = 1;
			return SFS_OK;
		}
		if (fs_node_pending_empty(f, h->node))
			return SFS_OK; /* being created: empty until stored */
		rc = sfs_kv_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                fs_part(a, 2), &v);
		return rc ? rc : take(h, &v) ? SFS_NOMEM : SFS_OK;
	case FS_CNT_KEY:
		/* Pending first: its creator stores it, then stops holding
		 * it, so one of the two is seen. */
		held = fs_node_held(f, h->node);
		rc = sfs_counter_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                     fs_part(a, 2), &n, NULL);
		if (rc == SFS_NOTFOUND && held) {
			rc = SFS_OK; /* being created: 0 until stored */
			n = 0;
		}
		if (rc)
			return rc;
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
	case FS_INFLIGHT_ITEM:
	case FS_DEAD_ITEM:
		rc = sfs_item_get(f->store, fs_part(a, 0), fs_item_state(h->kind),
		                  a->id, &v);
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

/* OPEN of a new entry's or item's file by its alias (alias.c), a (its
 * address) borrowed: for writing, one more new entry or item, pushed at
 * its commit as a create's is (`echo 1 > q/job; echo 2 > q/job` pushes
 * two); for reading, a peek of the one the alias names. ENOENT once that
 * is gone, or with no alias (its creator exited). */
static void open_alias(fuse_req_t req, fs *f, fs_node *n, const fs_addr *a,
                       int flags, int writing, struct fuse_file_info *fi)
{
	fs_addr item = { 0 };
	fs_file *h = NULL;
	int64_t id;
	int rc, err;

	if (!fs_alias_of_node(f, n, &id)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((err = fs_alias_addr(a, id, &item)))
		goto fail;
	h = fs_file_new(f, n, writing ? n->kind : item.kind, flags,
	                fuse_req_ctx(req)->pid);
	if (!h) {
		err = ENOMEM;
		goto fail;
	}
	if (!writing && (rc = load(f, h, &item)) != SFS_OK) {
		if (rc == SFS_NOTFOUND)
			fs_alias_drop(f, n); /* consumed or deleted */
		err = fs_errno(f, rc, "reading a new entry or item");
		goto fail;
	}
	publish(f, h);
	set_open_flags(h, fi);
	if (fuse_reply_open(req, fi) != 0)
		fs_file_free(f, h); /* interrupted: no RELEASE will come */
	fs_addr_free(&item);
	return;
fail:
	fs_file_free(f, h);
	fuse_reply_err(req, err);
	fs_addr_free(&item);
}

/* OPEN: a snapshot (sfs_kv_get, sfs_counter_get, sfs_log_get,
 * sfs_item_get) for reading; for writing a value, only its length
 * (sfs_kv_stat; nothing for O_TRUNC); nothing yet for special files. */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_node *n = fs_node_get(f, ino);
	fs_addr a = { 0 };
	fs_file *h;
	mode_t mode;
	int rc, err, flags = fi->flags;
	int writing = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	mode = fs_class_of(n->kind)->mode;
	if (fs_kind_is_dir(n->kind)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* O_RDONLY|O_TRUNC cuts the value, as Linux does on a local
	 * filesystem (the kernel leaves the cut to us: atomic O_TRUNC):
	 * the handle is a writing one that reads its own, empty, bytes.
	 * A counter's cut changes nothing, as `: > counter`. */
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) == O_RDONLY &&
	    n->kind == FS_KV_KEY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
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
	if (n->kind == FS_LOG_NEW || n->kind == FS_QUEUE_NEW) {
		open_alias(req, f, n, &a, flags, writing, fi);
		fs_addr_free(&a);
		return;
	}
	h = fs_file_new(f, n, n->kind, flags, fuse_req_ctx(req)->pid);
	if (!h) {
		fs_addr_free(&a);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = load(f, h, &a);
	fs_addr_free(&a);
	if (rc == SFS_NOTFOUND && (n->kind == FS_KV_KEY || n->kind == FS_CNT_KEY)) {
		/* Gone since the kernel looked the name up (deleted elsewhere,
		 * or its creator's commit failed): ESTALE makes the kernel look
		 * it up again and retry once, so an O_CREAT open creates it
		 * and another open fails with ENOENT. */
		fs_file_free(f, h);
		fuse_reply_err(req, ESTALE);
		return;
	}
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
	publish(f, h);
	set_open_flags(h, fi);
	if (fuse_reply_open(req, fi) != 0)
		fs_file_free(f, h); /* interrupted: no RELEASE will come */
}
/* CREATE: a key or counter that the first FLUSH stores (sfs_kv_edit,
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
	if ((err = fs_name_check(name)) || (err = fs_node_addr(f, dn, &dir))) {
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
		if (!n || !(h = fs_file_new(f, n, kind, fi->flags,
		                               fuse_req_ctx(req)->pid)) ||
		    !(h->made_as = strdup(name))) {
			err = ENOMEM;
			goto fail;
		}
		memset(&e, 0, sizeof(e));
		e.ino = n->ino;
		fs_ttl(kind, &e.entry_timeout, &e.attr_timeout);
		fs_stat_fill(f, kind, n->ino, 0, fs_write_time_ns(), &e.attr);
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
	if ((err = fs_entry_fill(f, dn, &child, size,
	                         mtime ? mtime : fs_write_time_ns(), &e, &n)))
		goto fail;
	h = fs_file_new(f, n, kind, fi->flags, fuse_req_ctx(req)->pid);
	if (!h) {
		fs_node_forget(f, n, 1);
		err = ENOMEM;
		goto fail;
	}
	if (rc == SFS_OK && (rc = load(f, h, &child)) == SFS_NOTFOUND)
		e.attr.st_size = 0; /* deleted since the stat: made anew */
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
		if ((fi->flags & O_EXCL) &&
		    (kind == FS_KV_KEY || kind == FS_CNT_KEY) &&
		    (rc = kind == FS_KV_KEY
		          ? sfs_kv_edit(f->store, fs_part(&child, 0),
		                        fs_part(&child, 1), fs_part(&child, 2),
		                        NULL, 0, SFS_EDIT_CREATE | SFS_EDIT_EXCL,
		                        NULL)
		          : sfs_counter_create(f->store, fs_part(&child, 0),
		                               fs_part(&child, 1),
		                               fs_part(&child, 2), 0)) != SFS_OK) {
			/* O_EXCL holds among every client of the store:
			 * its empty value (its counter at 0) is made now,
			 * where other creates wait for their first commit. */
			fs_file_free(f, h);
			fs_node_forget(f, n, 1);
			h = NULL;
			err = rc == SFS_EXISTS ? EEXIST : fs_errno(f, rc, "create");
			goto fail;
		}
		if (kind == FS_KV_KEY) {
			/* Without O_TRUNC its changes go over whatever the key
			 * holds at the commit: another process may have created
			 * it meanwhile (two `>>` racing to make a key). */
			h->image = 1;
			fs_image_init(&h->img, 0, (fi->flags & O_TRUNC) != 0);
			h->dirty = 1;
		}
	} else if (rc != SFS_OK) {
		fs_file_free(f, h);
		fs_node_forget(f, n, 1);
		h = NULL;
		err = fs_errno(f, rc, "create");
		goto fail;
	}
reply:
	publish(f, h);
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

void fs_file_keep(fs *f, fs_node *dn, const fs_addr *a)
{
	const void *p;
	size_t n;
	fs_node *node;
	sfs_buf v = { NULL, 0 };

	fs_child_part(a, &p, &n);
	node = fs_node_find(f, dn, a->kind, p, n, 0);
	if (!node || !fs_node_wants_kept(f, node))
		return;
	if (sfs_kv_get(f->store, fs_part(a, 0), fs_part(a, 1), fs_part(a, 2),
	               &v) == SFS_OK)
		fs_node_set_kept(f, node, &v);
}

/* The store's bytes below an image's cut, for fs_image_read: the node's
 * kept bytes once it was deleted or replaced (fs_file_keep). */
typedef struct base_ctx {
	fs *f;
	fs_node *node;
	const fs_addr *a;
} base_ctx;

static int read_base(void *ctx, uint64_t off, size_t n, unsigned char *out)
{
	base_ctx *c = ctx;
	const sfs_buf *kept;
	sfs_buf v = { NULL, 0 };
	int rc = fs_node_kept(c->f, c->node, &kept);

	if (rc < 0)
		return EIO; /* over max_buffered: logged when it was deleted */
	if (rc) {
		if (off < kept->len)
			memcpy(out, (const unsigned char *)kept->ptr + off,
			       kept->len - off < n ? (size_t)(kept->len - off) : n);
		return 0;
	}
	rc = sfs_kv_read(c->f->store, fs_part(c->a, 0), fs_part(c->a, 1),
	                 fs_part(c->a, 2), off, n, &v, NULL);

	if (rc == SFS_NOTFOUND)
		return 0; /* deleted meanwhile: zeros */
	if (rc)
		return fs_errno(c->f, rc, "reading a value");
	memcpy(out, v.ptr, v.len);
	sfs_buf_free(&v);
	return 0;
}

/* A reader back at the end of its snapshot after it was told that was
 * the end: what the value holds past it now is added to the snapshot
 * (sfs_kv_read of the bytes past the end only; sfs_store_version cannot
 * spare it, since on PostgreSQL another host's write does not move the
 * version). Whatever the
 * value holds past that offset is given: an appended value continues, a
 * value replaced meanwhile by a longer one shows the new bytes from there
 * on (as a file rewritten under `tail -f` does). */
static int follow(fs *f, fs_file *h, uint64_t end)
{
	fs_addr a = { 0 };
	sfs_buf v = { NULL, 0 };
	int rc, err;

	if (!fs_node_linked(f, h->node) || fs_node_pending_empty(f, h->node))
		return 0; /* deleted through the mount, or not stored yet */
	if ((err = fs_node_addr(f, h->node, &a)))
		return err;
	rc = sfs_kv_read(f->store, fs_part(&a, 0), fs_part(&a, 1),
	                 fs_part(&a, 2), h->len, (size_t)(end - h->len), &v,
	                 NULL);
	fs_addr_free(&a);
	if (rc == SFS_NOTFOUND)
		rc = SFS_OK;
	if (rc)
		return fs_errno(f, rc, "reading a value");
	if (v.len && !(err = fs_file_reserve(h, h->len + v.len + 1))) {
		memcpy(h->buf + h->len, v.ptr, v.len);
		h->len += v.len;
	}
	sfs_buf_free(&v);
	if (!err)
		publish(f, h);
	return err;
}

/* An O_RDWR handle with no changes of its own reads the value as it is:
 * when another handle of the mount stored the value since its base was
 * read, the image starts again over the new length. Before, it kept the
 * old length, and a shorter value read back padded with zeros that no
 * version held. Called with h->lock held. */
static void rebase(fs *f, fs_file *h, const fs_addr *a)
{
	uint64_t seq = fs_node_stored_seq(f, h->node);
	sfs_stat st;

	if (seq == h->base_stored || fs_image_changed(&h->img) ||
	    h->refused || h->cancelled || !fs_node_linked(f, h->node))
		return;
	if (sfs_kv_stat(f->store, fs_part(a, 0), fs_part(a, 1), fs_part(a, 2),
	                &st) != SFS_OK)
		return; /* reads show what the store has, as before */
	fs_image_reset(&h->img, st.size);
	h->base_stored = seq;
	publish(f, h);
}

/* The bytes of a handle at [off, off + size) for READ and
 * COPY_FILE_RANGE: *p points into the snapshot (valid while h->lock is
 * held) or into *tmp (malloc'd; the caller frees it). Called with h->lock
 * held. Returns an errno. */
static int file_bytes(fs *f, fs_file *h, uint64_t off, size_t size,
                      const unsigned char **p, size_t *got,
                      unsigned char **tmp)
{
	fs_addr a = { 0 };
	base_ctx c = { f, h->node, &a };
	int err;

	*got = 0;
	*p = NULL;
	*tmp = NULL;
	if (h->image) {
		if ((err = fs_node_addr(f, h->node, &a)))
			return err;
		rebase(f, h, &a);
		if (off >= h->img.size || size == 0) {
			fs_addr_free(&a);
			return 0;
		}
		if (size > h->img.size - off)
			size = (size_t)(h->img.size - off);
		if (!(*tmp = malloc(size))) {
			fs_addr_free(&a);
			return ENOMEM;
		}
		err = fs_image_read(&h->img, off, size, *tmp, got, read_base, &c);
		fs_addr_free(&a);
		*p = *tmp;
		return err;
	}
	if (h->kind == FS_KV_KEY && off >= h->len && size) {
		/* The first read at the end is the end: `cat` and every
		 * read-to-EOF get the snapshot whole. A reader that comes back
		 * after it (tail -f, less +F) follows. */
		if (!h->at_end)
			h->at_end = 1;
		else if (off <= f->max_value && (err = follow(f, h, off + size)))
			return err;
	}
	if (h->kind == FS_LOG_NEW || h->kind == FS_QUEUE_NEW) {
		if (off < h->item_base)
			return 0; /* committed: no longer the handle's */
		off -= h->item_base;
	}
	if (off < h->len) {
		*p = h->buf + off;
		*got = h->len - off < size ? (size_t)(h->len - off) : size;
	}
	return 0;
}

/* READ: from the handle's snapshot (a reader at its end is given what was
 * added since), or its image over the store's bytes; special files take
 * their bytes from the store at the first READ (special.c). */
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	const unsigned char *p = NULL;
	unsigned char *tmp = NULL;
	size_t got = 0;
	int err;

	(void)ino;
	if (fs_kind_is_special(h->kind)) {
		fs_special_read(f, req, h, size, off);
		return;
	}
	pthread_mutex_lock(&h->lock);
	err = off < 0 ? EINVAL
	              : file_bytes(f, h, (uint64_t)off, size, &p, &got, &tmp);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, (const char *)p, got);
	pthread_mutex_unlock(&h->lock);
	free(tmp);
}

/* A counter write: appends to the token, refuses what cannot become one
 * and an add that would overflow now (sfs_counter_get). */
static int counter_write(fs *f, fs_file *h, const char *buf, size_t size)
{
	fs_addr a = { 0 };
	unsigned char *p;
	int64_t cur = 0, v, r;
	int set, st, rc, err;

	if (h->inlen + size > FS_COUNTER_TOKENS_MAX)
		return EINVAL;
	p = realloc(h->in, h->inlen + size + 1);
	if (!p)
		return ENOMEM;
	h->in = p;
	memcpy(h->in + h->inlen, buf, size);
	st = fs_counter_tokens(h->in, h->inlen + size, &set, &v);
	if (st < 0)
		return EINVAL; /* the bytes are not kept: nothing changes */
	if (st == 0 && !set) {
		if ((err = fs_node_addr(f, h->node, &a)))
			return err;
		rc = sfs_counter_get(f->store, fs_part(&a, 0), fs_part(&a, 1),
		                     fs_part(&a, 2), &cur, NULL);
		fs_addr_free(&a);
		if (rc == SFS_NOTFOUND)
			rc = SFS_OK; /* an add starts at 0 */
		if (rc)
			return fs_errno(f, rc, "counter read");
		if (__builtin_add_overflow(cur, v, &r))
			return EINVAL;
	}
	h->inlen += size;
	return 0;
}


/* A value write: into the image, at off or (O_APPEND) after the value's
 * end at the commit, within max_value and the mount's bound. */
static int value_write(fs *f, fs_file *h, const void *buf, size_t size,
                       off_t off)
{
	int append = (h->flags & O_APPEND) != 0, err;
	uint64_t start = append ? h->img.size : (uint64_t)off;

	if (!append && off < 0)
		return EINVAL;
	if (start > f->max_value || size > f->max_value - start)
		return EFBIG;
	err = hold(f, h, h->held + (append ? size
	                                   : fs_image_added(&h->img, start, size)),
	           1);
	if (!err)
		err = append ? fs_image_append(&h->img, buf, size)
		             : fs_image_write(&h->img, start, buf, size);
	hold(f, h, h->img.held, 0);
	return err;
}

/* A new entry's or item's bytes, whole in the handle (the engine takes
 * an entry in one piece). */
static int item_write(fs *f, fs_file *h, const void *buf, size_t size,
                      off_t off)
{
	size_t end;
	int err;

	if (h->flags & O_APPEND)
		off = (off_t)(h->item_base + h->len);
	if (off < 0)
		return EINVAL;
	if (h->item_rebase && h->len == 0)
		h->item_base = (uint64_t)off; /* the first write after a commit */
	if ((uint64_t)off < h->item_base)
		return EINVAL; /* into an entry or item already committed */
	h->item_rebase = 0;
	off -= (off_t)h->item_base;
	if ((uint64_t)off > f->max_value || size > f->max_value - (uint64_t)off)
		return EFBIG;
	end = (size_t)off + size;
	if ((err = hold(f, h, end > h->len ? end : h->len, 1)))
		return err;
	if ((err = fs_file_reserve(h, end + 1))) {
		hold(f, h, h->len, 0);
		return err;
	}
	if ((size_t)off > h->len)
		memset(h->buf + h->len, 0, (size_t)off - h->len);
	memcpy(h->buf + off, buf, size);
	if (end > h->len)
		h->len = end;
	return 0;
}

/* A write by task pid to any kind, with h->lock held: into the value's
 * image, the new entry or item, or the counter token. Nothing reaches the
 * store before FLUSH. Returns an errno. */
static int file_write(fs *f, fs_file *h, pid_t pid, const void *buf,
                      size_t size, off_t off)
{
	int err;

	if (h->cancelled)
		return EIO; /* a writer sharing it was killed: not stored */
	if (h->refused)
		return h->refused; /* nothing of it will be stored */
	switch (h->kind) {
	case FS_KV_KEY:
		err = h->image ? value_write(f, h, buf, size, off) : EBADF;
		break;
	case FS_LOG_NEW:
	case FS_QUEUE_NEW:
		err = item_write(f, h, buf, size, off);
		break;
	case FS_CNT_KEY:
		err = counter_write(f, h, buf, size);
		break;
	default:
		err = EACCES;
		break;
	}
	if (!err)
		fs_writers_add(&h->writers, pid);
	if (!err && h->kind != FS_CNT_KEY) {
		h->dirty = 1;
		h->written = 1;
		publish_as(f, h, 1);
	}
	if (err == EFBIG || err == EINVAL || err == ENOBUFS) {
		/* A counter's refused token is simply not kept (later ones
		 * still count), but a create whose only write was refused
		 * makes no counter; a value is all or nothing. */
		if (h->kind == FS_CNT_KEY)
			h->created = 0;
		else
			h->refused = err;
	}
	return err;
}

/* WRITE: file_write. A value opened O_SYNC or O_DSYNC is committed and
 * synced at each write, as FSYNC does: the kernel sends no FSYNC after a
 * synchronous write to a direct_io file, and write(2) must not return
 * before its bytes are stored. Not entries, items and counters, where
 * each commit is one more entry, item or token. */
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                 size_t size, off_t off, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err, sync = (h->flags & O_DSYNC) && h->kind == FS_KV_KEY;

	(void)ino;
	pthread_mutex_lock(&h->lock);
	err = file_write(f, h, fuse_req_ctx(req)->pid, buf, size, off);
	if (!err && sync)
		err = h->cancelled ? EIO : commit(f, h, 1, "write");
	pthread_mutex_unlock(&h->lock);
	if (!err && sync)
		err = fs_sync_store(f, &h->lock, &h->async_since, "write");
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, size);
}

/* A new entry's or item's truncation to size (the file's offset) as a
 * length of the bytes it holds: one to before them (or any, once
 * committed with nothing written since) starts them there. */
static void truncate_item(fs_file *h, off_t *size)
{
	if ((uint64_t)*size < h->item_base || (h->item_rebase && h->len == 0)) {
		h->item_base = (uint64_t)*size;
		*size = 0;
	} else {
		*size -= (off_t)h->item_base;
	}
}

/* fs_file_truncate with h->lock held. */
static int truncate_locked(fs *f, fs_file *h, off_t size, pid_t pid)
{
	int err = 0;

	if (h->cancelled) {
		err = EIO;
	} else if (h->refused) {
		err = h->refused;
	} else if (h->kind == FS_CNT_KEY) {
		err = size == 0 ? 0 : EINVAL; /* `> counter` */
	} else if (h->kind != FS_KV_KEY && h->kind != FS_LOG_NEW &&
	           h->kind != FS_QUEUE_NEW) {
		err = EACCES;
	} else if (size < 0) {
		err = EINVAL;
	} else if ((uint64_t)size > f->max_value) {
		err = h->refused = EFBIG;
	} else if (h->image) {
		err = fs_image_truncate(&h->img, (uint64_t)size);
		h->cut_stored = fs_node_stored_seq(f, h->node);
		hold(f, h, h->img.held, 0);
	} else if (h->kind == FS_KV_KEY) {
		err = EBADF; /* not open for writing */
	} else if (truncate_item(h, &size),
	           !(err = hold(f, h, (size_t)size, 1)) &&
	           !(err = fs_file_reserve(h, (size_t)size + 1))) {
		if ((size_t)size > h->len)
			memset(h->buf + h->len, 0, (size_t)size - h->len);
		h->len = (size_t)size;
	} else {
		if (err == ENOBUFS)
			h->refused = err;
		hold(f, h, h->len, 0);
	}
	if (!err && h->kind != FS_CNT_KEY) {
		h->dirty = 1;
		h->written = 1;
		fs_writers_add(&h->writers, pid);
		publish_as(f, h, 1);
	}
	return err;
}

int fs_file_truncate(fs *f, fs_file *h, off_t size, pid_t pid)
{
	int err;

	pthread_mutex_lock(&h->lock);
	err = truncate_locked(f, h, size, pid);
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* FALLOCATE: mode 0 makes the value at least off + len bytes long (zeros
 * past its end, as a truncate up), under the handle's lock, so a write
 * past that end meanwhile is never cut back; FALLOC_FL_KEEP_SIZE changes
 * nothing (no blocks to reserve: the store's pages are made at the
 * commit). Punching, zeroing, collapsing and inserting ranges are
 * EOPNOTSUPP, on which tools fall back or say so. */
void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
                     off_t len, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	uint64_t size;
	int err = 0;

	(void)ino;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		err = EOPNOTSUPP;
	else if (off < 0 || len <= 0)
		err = EINVAL;
	else if (off > INT64_MAX - len)
		err = EFBIG;
	else if (!(mode & FALLOC_FL_KEEP_SIZE)) {
		pthread_mutex_lock(&h->lock);
		size = h->image ? h->img.size : h->len;
		if ((uint64_t)(off + len) > size)
			err = truncate_locked(f, h, off + len,
			                      fuse_req_ctx(req)->pid);
		pthread_mutex_unlock(&h->lock);
	}
	fuse_reply_err(req, err);
}

/* COPY_FILE_RANGE: the bytes of one open file written into another (or
 * the same), as a READ and a WRITE would, at most COPY_CHUNK at a time:
 * the kernel and the callers loop on a short copy. Special files are not
 * copied from (a copy would pop or drain): EXDEV, on which cp and the C
 * library fall back to read and write. */
void fs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                           struct fuse_file_info *fi_in, fuse_ino_t ino_out,
                           off_t off_out, struct fuse_file_info *fi_out,
                           size_t len, int flags)
{
	fs *f = fs_of(req);
	fs_file *in = file_of(fi_in), *out = file_of(fi_out);
	const unsigned char *p;
	unsigned char *tmp = NULL, *copy = NULL;
	size_t got = 0;
	int err;

	(void)ino_in, (void)ino_out;
	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (fs_kind_is_special(in->kind) || fs_kind_is_special(out->kind)) {
		fuse_reply_err(req, EXDEV);
		return;
	}
	if (len > COPY_CHUNK)
		len = COPY_CHUNK;
	/* One lock at a time (never two handle locks at once): the bytes
	 * are copied out of the source before the destination is locked. */
	pthread_mutex_lock(&in->lock);
	err = off_in < 0 ? EINVAL
	                 : file_bytes(f, in, (uint64_t)off_in, len, &p, &got, &tmp);
	if (!err && got && !tmp) {
		if ((copy = malloc(got)))
			memcpy(copy, p, got);
		else
			err = ENOMEM;
	}
	pthread_mutex_unlock(&in->lock);
	if (tmp)
		copy = tmp;
	if (!err && got) {
		pthread_mutex_lock(&out->lock);
		err = file_write(f, out, fuse_req_ctx(req)->pid, copy, got,
		                 off_out);
		pthread_mutex_unlock(&out->lock);
	}
	free(copy);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, got);
}

/* Whether h is a value whose close returns before its commit, which its
 * RELEASE makes (-o async_close, under fs_loop). */
static int async_value(const fs *f, const fs_file *h)
{
	return f->async_close && f->loop && h->kind == FS_KV_KEY;
}

/* FLUSH: commit (sfs_kv_edit, sfs_counter_set/add, sfs_log_append,
 * sfs_queue_push) of what changed since the last commit; close(2) returns
 * its outcome. What the closing process is decides (caller.c): its last
 * close of the file (or a normal exit) commits; a close while it still
 * holds the file for writing through another descriptor (the dup2 and
 * close of a shell redirection) leaves the commit to that one; a process
 * dying of a signal commits nothing, and the handle is cancelled. With -o
 * async_close close(2) returns before the commit (loop.c). */
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	pid_t pid = fuse_req_ctx(req)->pid;
	int err = 0, held = 0, work;
	fs_close_kind kind = FS_CLOSE_UNKNOWN;
	fs_others others;

	(void)ino;
	if (async_value(f, h)) {
		/* -o async_close: close returns now, and the value is
		 * stored at RELEASE, which the kernel sends once no
		 * descriptor of any process holds the file: no look at the
		 * closing process's descriptors beyond what tells whether it
		 * writes on. A writer dying of a signal still cancels the
		 * handle (loop.c). One that closed its last descriptor of
		 * the file, or exits normally, leaves h's writers, as its
		 * last close does without the option: else, once reaped, it
		 * is a writer gone that a child dying of a signal might have
		 * been a thread of (`yes | head -1` with stderr on the file:
		 * `yes`, killed by SIGPIPE after head's exit, cancelled the
		 * value). */
		pthread_mutex_lock(&h->lock);
		switch (has_work(h) ? fs_caller_exit(f->procs, pid,
		                                     h->node->ino, &h->writers)
		                    : FS_EXIT_NONE) {
		case FS_EXIT_KILLED:
			cancel(f, h, pid);
			break;
		case FS_EXIT_LEFT:
			fs_writers_remove(&h->writers, pid);
			break;
		case FS_EXIT_NONE:
			break;
		}
		err = h->refused;
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, err);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if ((work = has_work(h))) {
		fs_node_writers(f, h->node, h, &others);
		kind = fs_caller_close(f->procs, pid, h->opener, &others,
		                       h->node->ino, &h->writers);
	}
	if (kind != FS_CLOSE_HELD) /* it writes no more through h */
		fs_writers_remove(&h->writers, pid);
	if (kind == FS_CLOSE_LAST && pid == h->opener)
		closed_by_opener(f, h);
	switch (kind) {
	case FS_CLOSE_KILLED:
		cancel(f, h, pid);
		break;
	case FS_CLOSE_HELD:
	case FS_CLOSE_PARENT:
		break;
	default:
		held = work && fs_hold_begin(f);
		err = commit(f, h, kind == FS_CLOSE_LAST, "flush");
		if (held)
			fs_hold_end(f);
		/* close(2) tells the writer, but a shell's redirection
		 * does not look (`echo v > k` on a store made read-only
		 * says nothing): the log does. Engine failures (EIO,
		 * EBUSY) were logged by fs_errno already. */
		if (err == EROFS || err == ENOSPC || err == ENOMEM)
			fs_log(f, LOG_WARNING, "a %s was not stored at its "
			       "close: %s", fs_class_of(h->kind)->what,
			       strerror(err));
		break;
	}
	pthread_mutex_unlock(&h->lock);
	if (held && !err)
		fs_hold_answer(f, req); /* answered once it is committed */
	else
		fuse_reply_err(req, err);
}

/* FSYNC: commit, then fs_sync_store (sfs_store_sync: durable across
 * power loss; and the failure of a commit whose closes were answered
 * before it, -o async_close, once to each descriptor). */
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                 struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err;

	(void)ino, (void)datasync;
	pthread_mutex_lock(&h->lock);
	err = h->cancelled ? EIO : commit(f, h, 1, "fsync");
	pthread_mutex_unlock(&h->lock);
	if (!err)
		err = fs_sync_store(f, &h->lock, &h->async_since, "fsync");
	fuse_reply_err(req, err);
}

/* RELEASE: commits what is left (normally nothing: FLUSH came first;
 * nothing at all after a killed writer's FLUSH) and frees the handle.
 * Popped bytes never read are dropped (special.c). */
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs *f = fs_of(req);
	fs_file *h = file_of(fi);
	int err, held = 0, answered;

	(void)ino;
	if (fs_kind_streams(h->kind))
		fs_special_release(f, h);
	pthread_mutex_lock(&h->lock);
	/* A value under -o async_close: its close returned already. */
	answered = async_value(f, h) && has_work(h);
	held = answered && fs_hold_begin(f);
	err = commit(f, h, 1, "release");
	if (held)
		fs_hold_end(f);
	pthread_mutex_unlock(&h->lock);
	if (held && !err)
		fs_hold_done(f); /* committed with the next ones */
	if (err && !h->refused) /* a refusal was told at the write */
		fs_log(f, LOG_WARNING, "a %s was not stored when its file was "
		       "released: %s", fs_class_of(h->kind)->what, strerror(err));
	if (err && answered) /* told by fsync */
		fs_async_failed(f, err);
	fs_file_free(f, h);
	fuse_reply_err(req, 0);
}
