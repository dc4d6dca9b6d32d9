/*
 * special.c - the files that change the store when read: .drain of a
 * namespace, and .pop, .drain, .wait, .claim of a queue.
 *
 * They report size 0 and are opened with direct_io (file.c), so the kernel
 * asks us instead of trusting the size. The store is touched at the first
 * READ of a handle, never at OPEN: `: < q/.pop` opens and closes without
 * reading and must not lose an item. What the first READ took is kept in
 * the handle and later READs are served from it by offset (`head -c`, `dd
 * bs=1`, `read -r line` all work and pop once).
 *
 * .pop, .wait and .claim take the head item under a claim (sfs_claim, the
 * mount's lease), and a queue's .drain every pending item under one claim
 * (a namespace's .drain is sfs_kv_drain: keys have no claims). .pop, .wait
 * and .drain ack once the bytes are delivered;
 * .claim returns the item's name and leaves the claim to the reader, who
 * settles it under inflight/ (rm = ack, mv back = nack, touch =
 * heartbeat). If the reader was interrupted (Ctrl-C, `timeout`) by the
 * time the item was taken, or the kernel refuses the reply, the claim is
 * nacked: the item is back at its place, the head, under its name, and
 * the READ fails with EINTR. Should the daemon die between the take and
 * the ack, the lease runs out and the item comes back: nothing is lost.
 * Once bytes were delivered a pop is done: RELEASE drops whatever part of
 * them the reader did not read (a pop is at-most-once; .claim is the
 * at-least-once way).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"

/* Serves [off, off + size) of what the handle took. Lock held. */
static int serve(fuse_req_t req, fs_file *h, size_t size, off_t off)
{
	if (off < 0 || (size_t)off >= h->len)
		return fuse_reply_buf(req, NULL, 0);
	return fuse_reply_buf(req, (const char *)h->buf + off,
	                      h->len - (size_t)off < size ? h->len - (size_t)off
	                                                  : size);
}

static int take_buf(fs_file *h, sfs_buf *b)
{
	int err = fs_file_reserve(h, b->len + 1);

	if (!err) {
		memcpy(h->buf, b->ptr, b->len);
		h->len = b->len;
		h->loaded = 1;
	}
	sfs_buf_free(b);
	return err;
}

/* Puts a taken item back at its place (the claim's nack). Lock held. */
static void put_back(fs *f, fs_file *h)
{
	int rc = sfs_claim_nack(f->store, h->claim);

	/* A lost claim went back by itself (its lease ran out). */
	if (rc && rc != SFS_CLAIMLOST)
		fs_log(f, LOG_ERR, "an item taken for an interrupted reader "
		       "could not be put back now (its claim %lld returns it "
		       "when its lease ends): %s: %s", (long long)h->claim,
		       sfs_strerror(rc), sfs_errdetail());
	h->claim = 0;
	h->loaded = 0;
	h->len = 0;
}

/* What a take serves, into *b (malloc'd): the item's bytes (.pop, .wait),
 * its name under inflight/ and a newline (.claim), or every item as JSON
 * Lines with the time each was enqueued (.drain). SFS_OK or a status. */
static int render(fs *f, fs_file *h, sfs_slice queue, sfs_list *l,
                  sfs_buf *b)
{
	char name[FS_ID_NAME + 1];
	sfs_claim_info ci;
	sfs_slice v;
	int rc;

	switch (h->kind) {
	case FS_QUEUE_DRAIN:
		/* the claim's items carry their lease end: show when each
		 * was enqueued, as a peek and the engine's drain do */
		for (size_t i = 0; i < l->n; i++) {
			rc = sfs_inflight_stat(f->store, queue, l->items[i].id,
			                       &ci);
			if (rc)
				return rc;
			l->items[i].mtime_ns = ci.enqueued_ns;
		}
		return fs_json_queue_lines(l, b) ? SFS_NOMEM : SFS_OK;
	case FS_QUEUE_CLAIM:
		fs_id_name(l->items[0].id, name);
		strcat(name, "\n");
		v = sfs_str(name);
		break;
	default:
		v = sfs_bytes(l->items[0].value.ptr, l->items[0].value.len);
		break;
	}
	b->len = v.len;
	if (!(b->ptr = malloc(v.len + 1)))
		return SFS_NOMEM;
	memcpy(b->ptr, v.ptr, v.len);
	return SFS_OK;
}

int fs_special_take(fs *f, fs_file *h, sfs_slice queue)
{
	int64_t cid = 0;
	sfs_list l = { NULL, 0 };
	sfs_buf b = { NULL, 0 };
	int rc;

	pthread_mutex_lock(&h->lock);
	if (h->loaded) {
		pthread_mutex_unlock(&h->lock);
		return SFS_OK;
	}
	rc = sfs_claim(f->store, queue, h->kind == FS_QUEUE_DRAIN ? LONG_MAX : 1,
	               f->lease_ms, &cid, &l);
	if (rc == SFS_OK) {
		h->claim = cid;
		rc = render(f, h, queue, &l, &b);
		if (rc == SFS_OK && take_buf(h, &b))
			rc = SFS_NOMEM;
		if (rc != SFS_OK) {
			sfs_buf_free(&b);
			put_back(f, h); /* cannot keep it: back in its place */
		}
	}
	sfs_list_free(&l);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* After delivery: a pop is done (ack); a .claim is the reader's now. */
static void delivered(fs *f, fs_file *h)
{
	int rc;

	if (h->kind == FS_QUEUE_CLAIM || !h->claim)
		return;
	rc = sfs_claim_ack(f->store, h->claim);
	if (rc)
		fs_log(f, LOG_WARNING, "an item read from %s was delivered but "
		       "its claim %lld could not be settled (it may be "
		       "delivered again): %s: %s",
		       fs_class_of(h->kind)->special, (long long)h->claim,
		       sfs_strerror(rc), sfs_errdetail());
	h->claim = 0;
}

void fs_special_deliver(fs *f, fuse_req_t req, fs_file *h, sfs_slice queue,
                        size_t size, off_t off)
{
	(void)queue;
	/* The test hook: a pause that ends early when the reader is
	 * interrupted, so a test can interrupt it at a moment it chooses. */
	for (long ms = 0; ms < f->test_deliver_delay_ms &&
	                  !fuse_req_interrupted(req); ms += 10) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&h->lock);
	if (fuse_req_interrupted(req)) {
		put_back(f, h);
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, EINTR);
		return;
	}
	if (serve(req, h, size, off) != 0)
		put_back(f, h);
	else
		delivered(f, h);
	pthread_mutex_unlock(&h->lock);
}

/* Puts a namespace's drained rows back: the reader never got them. A
 * value written meanwhile by someone else is overwritten: the window is
 * one reply long. */
static void restore_rows(fs *f, const fs_addr *a, const sfs_list *l)
{
	int rc = SFS_OK;

	for (size_t i = 0; i < l->n && rc == SFS_OK; i++) {
		const sfs_item *it = &l->items[i];

		rc = sfs_kv_put(f->store, fs_part(a, 0), fs_part(a, 1),
		                sfs_bytes(it->key.ptr ? it->key.ptr : "",
		                          it->key.len),
		                sfs_bytes(it->value.ptr ? it->value.ptr : "",
		                          it->value.len));
	}
	if (rc)
		fs_log(f, LOG_ERR, "drained rows of an interrupted reader could "
		       "not be put back: %s: %s", sfs_strerror(rc),
		       sfs_errdetail());
}

/* The first READ of a namespace's .drain: sfs_kv_drain, in one
 * transaction, rendered as JSON Lines into the handle; *rows keeps what
 * was taken until it is delivered. Lock held; returns an errno. */
static int drain(fs *f, fs_file *h, const fs_addr *a, sfs_list *rows)
{
	sfs_buf out = { NULL, 0 };
	int rc, err;

	rc = sfs_kv_drain(f->store, fs_part(a, 0), fs_part(a, 1), rows);
	if (rc)
		return fs_errno(f, rc, "drain");
	err = fs_json_kv_lines(rows, sfs_name_key_kind(fs_part(a, 1)), &out);
	if (err) {
		restore_rows(f, a, rows);
		return err;
	}
	free(h->buf);
	h->buf = out.ptr;
	h->len = h->cap = out.len;
	h->loaded = 1;
	return 0;
}

/* A queue's .drain that found nothing reads as empty, and stays so for
 * the handle: one take per handle, as for the other special files. */
static void drained_nothing(fuse_req_t req, fs_file *h, size_t size,
                            off_t off)
{
	pthread_mutex_lock(&h->lock);
	if (!h->loaded) {
		h->loaded = 1;
		h->len = 0;
	}
	serve(req, h, size, off);
	pthread_mutex_unlock(&h->lock);
}

void fs_special_read(fs *f, fuse_req_t req, fs_file *h, size_t size,
                     off_t off)
{
	fs_addr a = { 0 };
	sfs_list rows = { NULL, 0 };
	sfs_slice queue;
	int rc, err;

	pthread_mutex_lock(&h->lock);
	if (h->loaded) {
		serve(req, h, size, off);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if ((err = fs_node_addr(f, h->node, &a))) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, err);
		return;
	}
	queue = fs_part(&a, 0);
	switch (h->kind) {
	case FS_KV_DRAIN:
		err = drain(f, h, &a, &rows);
		if (err) {
			fuse_reply_err(req, err);
		} else if (fuse_req_interrupted(req)) {
			restore_rows(f, &a, &rows);
			h->loaded = 0;
			h->len = 0;
			fuse_reply_err(req, EINTR);
		} else if (serve(req, h, size, off) != 0) {
			/* The reply did not reach the reader (and freed
			 * the request): nobody has these rows. */
			restore_rows(f, &a, &rows);
			h->loaded = 0;
			h->len = 0;
		}
		sfs_list_free(&rows);
		pthread_mutex_unlock(&h->lock);
		break;
	case FS_QUEUE_POP:
	case FS_QUEUE_WAIT:
	case FS_QUEUE_CLAIM:
	case FS_QUEUE_DRAIN:
		pthread_mutex_unlock(&h->lock);
		rc = fs_special_take(f, h, queue);
		if (rc == SFS_OK)
			fs_special_deliver(f, req, h, queue, size, off);
		else if (rc == SFS_NOTFOUND && h->kind == FS_QUEUE_WAIT)
			fs_wait_add(f, req, h, queue, size, off);
		else if (rc == SFS_NOTFOUND && h->kind == FS_QUEUE_DRAIN)
			drained_nothing(req, h, size, off);
		else if (rc == SFS_NOTFOUND)
			fuse_reply_err(req, ENODATA); /* the loop's end */
		else
			fuse_reply_err(req, fs_errno(f, rc, "pop"));
		break;
	default:
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, EIO);
		break;
	}
	fs_addr_free(&a);
}
