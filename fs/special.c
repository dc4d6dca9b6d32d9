/*
 * special.c - the files that are not a value: .pop, .wait and .claim of a
 * queue, which take one item when read, and the streams: .drain of a
 * namespace or a queue, and .follow of a log key or a queue.
 *
 * They report size 0 and are opened with direct_io (file.c), so the kernel
 * asks us instead of trusting the size. The store is touched at the first
 * READ of a handle, never at OPEN: `: < q/.pop` opens and closes without
 * reading and must not lose an item.
 *
 * .pop, .wait and .claim take the head item under a claim (sfs_claim, the
 * mount's lease) into the handle, and later READs are served from it by
 * offset (`head -c`, `dd bs=1`, `read -r line` all work and pop once).
 * .pop and .wait ack once the bytes are delivered; .claim returns the
 * item's name and leaves the claim to the reader, who settles it under
 * inflight/ (rm = ack, mv back = nack, touch = heartbeat). If the reader
 * was interrupted (Ctrl-C, `timeout`) by the time the item was taken, or
 * the kernel refuses the reply, the claim is released (a nack that takes
 * back the delivery it counted): the item is back at
 * its place, the head, under its name, and the READ fails with EINTR.
 * Should the daemon die between the take and the ack, the lease runs out
 * and the item comes back: nothing is lost. Once bytes were delivered a
 * pop is done: RELEASE drops whatever part of them the reader did not read
 * (a pop is at-most-once; .claim is the at-least-once way).
 *
 * A stream is JSON Lines (json.c), rendered a page at a time (at most 256
 * rows, at most about 1 MiB of values, at least one row), so memory holds
 * one page whatever the size of what is streamed. The reader reads it in
 * order; the page goes when the reader asks past its end, and the next one
 * is rendered then. A READ before the page is EINVAL (the bytes are gone).
 *  - A drain takes everything at its first READ, in one transaction,
 *    under a claim with the mount's lease (sfs_kv_claim for a namespace,
 *    sfs_claim of every pending item for a queue), and reads the claim's
 *    items by page (sfs_claim_items). Each reply acks the rows whose last
 *    byte it carried (sfs_claim_settle DONE), so a row is done once the
 *    reader has it whole (an ack that fails is kept for fs_tick, as a
 *    pop's is, and tried first at RELEASE). RELEASE gives back what is
 *    left (nack: items at their places, entries into their namespace
 *    unless written again; with acks still unsettled, fs_tick does once
 *    they are), and a daemon killed meanwhile leaves it to
 *    the lease: nothing is lost, and what a reader got may at worst come
 *    again. The lease is
 *    extended while the reader reads (at any reply, a third of it after
 *    the last extension, also inside a page).
 *  - .follow takes nothing: it renders the log key's entries or the
 *    queue's pending items from the first, then each new one (by id), and
 *    a READ at the end waits (wait.c) until there is more. A stat of a
 *    .follow (fstat too: the kernel sends no handle) shows what its
 *    followers have rendered, after rendering what is new for them:
 *    `tail -f` polls that, reads when it grows, and then just reads;
 *    `cat` and `tail -n +1 -f` just read. An interrupted reader is
 *    answered EINTR.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

#define PAGE_ROWS 256
#define PAGE_BYTES (1u << 20)

/* ---- .pop, .wait, .claim ---- */

/* Serves [off, off + size) of what the handle took. Lock held. */
static int serve(fuse_req_t req, fs_file *h, size_t size, off_t off)
{
	if (off < 0 || (size_t)off >= h->len)
		return fuse_reply_buf(req, NULL, 0);
	return fuse_reply_buf(req, (const char *)h->buf + off,
	                      h->len - (size_t)off < size ? h->len - (size_t)off
	                                                  : size);
}

/* Puts a taken item back at its place, the delivery its claim counted
 * taken back: the reader got nothing (a release). Lock held. */
static void put_back(fs *f, fs_file *h)
{
	int rc = sfs_claim_end(f->store, h->claim, SFS_OUTCOME_RELEASE);

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

/* The bytes .pop and .wait serve (the item's) or .claim's (its name under
 * inflight/ and a newline) into the handle. Lock held. */
static int keep_item(fs_file *h, const sfs_item *it)
{
	char name[FS_ID_NAME + 1];
	sfs_slice v;

	if (h->kind == FS_QUEUE_CLAIM) {
		fs_id_name(it->id, name);
		strcat(name, "\n");
		v = sfs_str(name);
	} else {
		v = sfs_bytes(it->value.ptr, it->value.len);
	}
	if (fs_file_reserve(h, v.len + 1))
		return SFS_NOMEM;
	memcpy(h->buf, v.ptr, v.len);
	h->len = v.len;
	h->loaded = 1;
	return SFS_OK;
}

/* The lease of the claim a .pop or .wait takes its item under: the
 * mount's, but at least POP_LEASE_MS. That claim is the daemon's own,
 * acked as soon as the reply is out; its lease matters only if the daemon
 * dies in between (the item comes back when it ends), and one that ran
 * out before the ack (-o lease=1s on a machine that stalled a second)
 * delivered the item twice though the daemon lived. */
#define POP_LEASE_MS 60000

static int64_t pop_lease_ms(const fs *f)
{
	return f->lease_ms && f->lease_ms < POP_LEASE_MS ? POP_LEASE_MS
	                                                 : f->lease_ms;
}

static int take_item(fs *f, fs_file *h, sfs_slice queue)
{
	int64_t cid = 0;
	sfs_list l = { NULL, 0 };
	int rc;

	if (h->loaded)
		return SFS_OK;
	rc = sfs_claim(f->store, queue, 1,
	               h->kind == FS_QUEUE_CLAIM ? f->lease_ms : pop_lease_ms(f),
	               &cid, &l);
	if (rc == SFS_OK) {
		h->claim = cid;
		rc = keep_item(h, &l.items[0]);
		if (rc != SFS_OK)
			put_back(f, h); /* cannot keep it: back in its place */
	}
	sfs_list_free(&l);
	return rc;
}

/* The most acks fs_tick keeps trying: beyond, an item is delivered
 * again when its lease ends, as it was before there was a retry. */
#define MAX_UNSETTLED 4096

/* Keeps acks that failed, for fs_tick to try again: a .pop's claim (ids
 * NULL) or n rows of a drain's. 0 when they cannot be kept. */
static int keep_unsettled(fs *f, int64_t claim, const int64_t *ids,
                          size_t n)
{
	struct fs_unsettled *v;
	size_t k = ids ? n : 1;
	int kept = 0;

	pthread_mutex_lock(&f->unsettled_mu);
	if (f->nunsettled + k <= MAX_UNSETTLED &&
	    (v = realloc(f->unsettled, (f->nunsettled + k) * sizeof(*v)))) {
		f->unsettled = v;
		for (size_t i = 0; i < k; i++)
			v[f->nunsettled++] = (struct fs_unsettled){
				claim, ids ? ids[i] : 0 };
		kept = 1;
	}
	pthread_mutex_unlock(&f->unsettled_mu);
	return kept;
}

/* Puts acks that failed again back in front of those kept meanwhile
 * (v is taken; out of memory, they are dropped). */
static void keep_again(fs *f, struct fs_unsettled *v, size_t n)
{
	pthread_mutex_lock(&f->unsettled_mu);
	if (f->nunsettled) {
		struct fs_unsettled *all =
			realloc(v, (n + f->nunsettled) * sizeof(*v));

		if (!all) {
			pthread_mutex_unlock(&f->unsettled_mu);
			fs_log(f, LOG_WARNING, "out of memory: %zu delivered "
			       "items' acks are not tried again (they may be "
			       "delivered again)", n);
			free(v);
			return;
		}
		v = all;
		memcpy(v + n, f->unsettled, f->nunsettled * sizeof(*v));
	}
	/* (Empty, it may still be allocated: settle_drain leaves it so.) */
	free(f->unsettled);
	f->unsettled = v;
	f->nunsettled += n;
	pthread_mutex_unlock(&f->unsettled_mu);
}

/* Tries the acks v[0..n) in order, up to the first that fails for want
 * of the server; returns how many were tried. */
static size_t settle_kept(fs *f, const struct fs_unsettled *v, size_t n)
{
	static const sfs_outcome done = SFS_OUTCOME_DONE;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		if (v[i].item == FS_UNSETTLED_RELEASE) {
			rc = sfs_claim_end(f->store, v[i].claim,
			                   SFS_OUTCOME_RELEASE);
			if (rc == SFS_OK)
				fs_log(f, LOG_INFO, "claim %lld of a closed drain "
				       "gave back the rows it did not deliver",
				       (long long)v[i].claim);
			/* ended: its last row's ack ended it, or its lease */
			else if (rc != SFS_CLAIMLOST && rc != SFS_NOTFOUND)
				break;
			continue;
		}
		rc = v[i].item
		   ? sfs_claim_settle(f->store, v[i].claim, &v[i].item, &done, 1)
		   : sfs_claim_end(f->store, v[i].claim, SFS_OUTCOME_DONE);
		/* A drain's row not found was settled under inflight/. */
		if (rc == SFS_OK || (rc == SFS_NOTFOUND && v[i].item))
			fs_log(f, LOG_INFO, "claim %lld of a delivered item "
			       "settled after all", (long long)v[i].claim);
		else if (rc == SFS_CLAIMLOST || rc == SFS_NOTFOUND)
			fs_log(f, LOG_WARNING, "claim %lld of a delivered item "
			       "ended before it could be settled: the item is "
			       "back in its place and will be delivered again",
			       (long long)v[i].claim);
		else
			break;
	}
	return i;
}

/* After delivery: a pop is done (ack); a .claim is the reader's now. An
 * ack that fails is tried again (fs_tick) while the claim lasts: until
 * the server is back, or the lease ends and the item returns. */
static void delivered(fs *f, fs_file *h)
{
	int rc;

	if (h->kind == FS_QUEUE_CLAIM || !h->claim)
		return;
	rc = sfs_claim_end(f->store, h->claim, SFS_OUTCOME_DONE);
	if (rc) {
		int kept = rc != SFS_CLAIMLOST && rc != SFS_NOTFOUND &&
		           keep_unsettled(f, h->claim, NULL, 0);

		fs_log(f, LOG_WARNING, "an item read from %s was delivered but "
		       "its claim %lld could not be settled%s: %s: %s",
		       fs_class_of(h->kind)->special, (long long)h->claim,
		       kept ? " yet (tried again each second until its lease "
		              "ends, when it would be delivered again)"
		            : " (it may be delivered again)",
		       sfs_strerror(rc), sfs_errdetail());
	}
	h->claim = 0;
}

void fs_tick(fs *f)
{
	struct fs_unsettled *v;
	size_t n, done;

	/* tick_mu: a drain's release meanwhile must not find its rows
	 * gone from the list while they are being settled here, and give
	 * them back (settle_drain). */
	pthread_mutex_lock(&f->tick_mu);
	pthread_mutex_lock(&f->unsettled_mu);
	v = f->unsettled;
	n = f->nunsettled;
	f->unsettled = NULL;
	f->nunsettled = 0;
	pthread_mutex_unlock(&f->unsettled_mu);
	/* Up to the first that fails for want of the server: it and the
	 * rest wait for the next second (one failed connection attempt a
	 * second, not one per item). */
	done = settle_kept(f, v, n);
	if (done == n)
		free(v);
	else {
		memmove(v, v + done, (n - done) * sizeof(*v));
		keep_again(f, v, n - done);
	}
	pthread_mutex_unlock(&f->tick_mu);
}

/* A drain's release: its rows whose acks failed are tried now, before
 * the rest is given back (a release would give them back too, and they
 * would be delivered again). Returns how many are still unsettled. */
static size_t settle_drain(fs *f, int64_t claim)
{
	struct fs_unsettled *mine = NULL;
	size_t n = 0, done;

	pthread_mutex_lock(&f->tick_mu);
	pthread_mutex_lock(&f->unsettled_mu);
	for (size_t i = 0; i < f->nunsettled; i++)
		n += f->unsettled[i].claim == claim;
	if (n && (mine = malloc(n * sizeof(*mine)))) {
		size_t j = 0;

		for (size_t i = 0; i < f->nunsettled; i++) {
			if (f->unsettled[i].claim == claim)
				mine[j++] = f->unsettled[i];
			else
				f->unsettled[i - j] = f->unsettled[i];
		}
		f->nunsettled -= n;
	}
	pthread_mutex_unlock(&f->unsettled_mu);
	if (!mine) {
		pthread_mutex_unlock(&f->tick_mu);
		return n; /* none; or out of memory, and fs_tick keeps them */
	}
	done = settle_kept(f, mine, n);
	if (done == n) {
		free(mine);
	} else {
		memmove(mine, mine + done, (n - done) * sizeof(*mine));
		keep_again(f, mine, n - done);
	}
	pthread_mutex_unlock(&f->tick_mu);
	return n - done;
}

/* The test hooks: a pause, for a time or while a file exists, that ends
 * early when the reader is interrupted, so a test can interrupt it, or
 * change the server under it, at a moment it chooses. */
static void test_delay(fs *f, fuse_req_t req)
{
	for (long ms = 0; (ms < f->test_deliver_delay_ms ||
	                   (f->test_deliver_gate &&
	                    access(f->test_deliver_gate, F_OK) == 0)) &&
	                  !fuse_req_interrupted(req); ms += 10) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* ---- streams ---- */

struct fs_stream {
	fs_file *h;            /* the handle it belongs to */
	struct fs_stream *next; /* .follow: in followers; guarded by
	                          followers_lock */
	int64_t claim;         /* drains: the claim on what is not yet
	                          delivered (0: none, or all settled) */
	int64_t after;         /* id of the last row rendered; -1: none */
	int64_t beat_ns;       /* drains: when the lease was last extended
	                          (CLOCK_MONOTONIC: a step of the wall
	                          clock back held every heartbeat back by
	                          the step, and on PostgreSQL, whose server
	                          clock did not move, the lease ran out) */
	off_t base;            /* stream offset of out's first byte */
	off_t served;          /* .follow: where the last reply ended, */
	pid_t reader;          /* and the task it went to */
	sfs_buf out;           /* the page rendered: [base, base + out.len) */
	size_t cap;
	int64_t *ids;          /* drains: the rows in out, in order, */
	off_t *ends;           /* with the offset just after each one */
	size_t n, acked, alloc;
	unsigned taken : 1;    /* drains: the take was done */
	unsigned ended : 1;    /* drains: every row rendered */
	unsigned lost : 1;     /* drains: an ack found the claim lost */
	unsigned last : 1;     /* drains: the page rendered holds the
	                          claim's last rows */
};

/* The open .follow handles, so that a stat of a .follow (which the
 * kernel sends without a handle: fstat too) can render what is new for
 * them and show the file grown. Lock order: followers_lock, then a
 * handle's lock; never the other way. */
static pthread_mutex_t followers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fs_stream *followers;

static int is_follow(fs_kind k)
{
	return k == FS_LOG_FOLLOW || k == FS_QUEUE_FOLLOW;
}

void fs_stream_free(struct fs_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&followers_lock);
	for (struct fs_stream **pp = &followers; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&followers_lock);
	free(s->out.ptr);
	free(s->ids);
	free(s->ends);
	free(s);
}

static int is_drain(const fs_file *h)
{
	return h->kind == FS_KV_DRAIN || h->kind == FS_QUEUE_DRAIN;
}

static int64_t lease_ms(const fs *f)
{
	return f->lease_ms ? f->lease_ms : 600000;
}

/* Remembers a row rendered into the page (drains). 0 or ENOMEM. */
static int note_row(struct fs_stream *s, int64_t id)
{
	if (s->n == s->alloc) {
		size_t na = s->alloc ? s->alloc * 2 : 64;
		int64_t *ids = realloc(s->ids, na * sizeof(*ids));
		off_t *ends;

		if (!ids)
			return ENOMEM;
		s->ids = ids;
		ends = realloc(s->ends, na * sizeof(*ends));
		if (!ends)
			return ENOMEM;
		s->ends = ends;
		s->alloc = na;
	}
	s->ids[s->n] = id;
	s->ends[s->n++] = s->base + (off_t)s->out.len;
	return 0;
}

/* The rows after s->after of what the stream shows, at most limit, with
 * or without their values. */
static int rows(fs *f, fs_file *h, const fs_addr *a, long limit,
                int keys_only, sfs_list *out)
{
	struct fs_stream *s = h->stream;

	switch (h->kind) {
	case FS_LOG_FOLLOW:
		return sfs_log_scan(f->store, fs_part(a, 0), fs_part(a, 1),
		                    fs_part(a, 2), s->after, limit, keys_only, out);
	case FS_QUEUE_FOLLOW:
		return sfs_item_scan(f->store, fs_part(a, 0), SFS_ITEM_PENDING,
		                     s->after, limit, keys_only, out);
	default:
		return sfs_claim_items(f->store, s->claim, s->after, limit,
		                       keys_only, out);
	}
}

/* A drain's take: everything, in one transaction, under a claim.
 * SFS_NOTFOUND: nothing to take (the stream is empty). */
static int take_all(fs *f, fs_file *h, const fs_addr *a)
{
	struct fs_stream *s = h->stream;
	int64_t cid = 0;
	int rc;

	s->taken = 1;
	rc = h->kind == FS_KV_DRAIN
	   ? sfs_kv_claim(f->store, fs_part(a, 0), fs_part(a, 1), lease_ms(f),
	                  &cid, NULL)
	   : sfs_claim(f->store, fs_part(a, 0), LONG_MAX, lease_ms(f), &cid,
	               NULL);
	if (rc == SFS_OK) {
		s->claim = cid;
		s->beat_ns = fs_mono_ns();
	}
	return rc;
}

/* Extends a drain's lease when a third of it has passed. */
static int beat(fs *f, struct fs_stream *s)
{
	int64_t now = fs_mono_ns();
	int rc;

	if (!s->claim || now - s->beat_ns < lease_ms(f) * 1000000 / 3)
		return SFS_OK;
	rc = sfs_claim_heartbeat(f->store, s->claim, lease_ms(f), NULL);
	if (rc == SFS_OK)
		s->beat_ns = now;
	return rc;
}

/* Renders the next page after what the stream holds (appended to out).
 * SFS_OK when a row was rendered, SFS_NOTFOUND when there is none now
 * (a drain: none left). Lock held. */
static int fill(fs *f, fs_file *h, const fs_addr *a)
{
	struct fs_stream *s = h->stream;
	fs_name_kind nk = fs_name_key_kind(fs_part(a, 1));
	sfs_list keys = { NULL, 0 }, page = { NULL, 0 };
	uint64_t bytes = 0;
	long take = 0;
	int rc = SFS_OK, err = 0;

	if (is_drain(h)) {
		if (s->ended)
			return SFS_NOTFOUND;
		if (!s->taken && (rc = take_all(f, h, a)) != SFS_OK) {
			s->ended = rc == SFS_NOTFOUND;
			return rc;
		}
		rc = beat(f, s);
	}
	/* Sizes first: as many rows as fit in a page, at least one; one
	 * more than a page's rows tells whether this page is the last. */
	if (rc == SFS_OK)
		rc = rows(f, h, a, PAGE_ROWS + 1, 1, &keys);
	if (rc == SFS_CLAIMLOST && is_drain(h) && !s->lost && s->last) {
		/* Every row was delivered and settled: the claim ended with
		 * its last one. Without the last page acked, a lost claim is
		 * a lease that ran out (the rest went back): ENOENT, not an
		 * end that would pass a cut stream off as whole. */
		s->claim = 0;
		s->ended = 1;
		return SFS_NOTFOUND;
	}
	if (rc != SFS_OK)
		return rc;
	while ((size_t)take < keys.n && take < PAGE_ROWS &&
	       (take == 0 || bytes + keys.items[take].st.size <= PAGE_BYTES))
		bytes += keys.items[take++].st.size;
	s->last = (size_t)take == keys.n;
	sfs_list_free(&keys);
	if (take == 0) {
		s->ended = is_drain(h);
		return SFS_NOTFOUND;
	}
	rc = rows(f, h, a, take, 0, &page);
	if (rc != SFS_OK)
		return rc;
	for (size_t i = 0; i < page.n && !err; i++) {
		err = fs_json_line(&s->out, &s->cap, &page.items[i],
		                   h->kind != FS_KV_DRAIN, nk);
		if (!err && is_drain(h))
			err = note_row(s, page.items[i].id);
		if (!err)
			s->after = page.items[i].id;
	}
	rc = page.n ? SFS_OK : SFS_NOTFOUND;
	sfs_list_free(&page);
	return err ? SFS_NOMEM : rc;
}

/* Acks the next m rows one by one, after an ack of all of them together
 * found one that is not the claim's any more: someone settled it under
 * inflight/ (a file is an item, whatever claim holds it). The others were
 * delivered whole all the same, and would come back at the release if
 * left. A lost claim after an ack here ended with its last item: the
 * rest were settled elsewhere. Lock held. */
static int ack_each(fs *f, struct fs_stream *s, size_t m)
{
	static const sfs_outcome done = SFS_OUTCOME_DONE;
	int rc = SFS_OK, any = 0;

	for (size_t i = 0; i < m && rc == SFS_OK; i++) {
		rc = sfs_claim_settle(f->store, s->claim, s->ids + s->acked + i,
		                      &done, 1);
		if (rc == SFS_OK)
			any = 1;
		else if (rc == SFS_NOTFOUND)
			rc = SFS_OK;
		else if (rc == SFS_CLAIMLOST && any)
			return SFS_OK;
	}
	return rc;
}

/* Acks the drain's rows whose last byte is before offset e: the reader
 * has them whole. Lock held. */
static void ack_through(fs *f, struct fs_stream *s, off_t e)
{
	static const sfs_outcome done[64] = {
		[0 ... 63] = SFS_OUTCOME_DONE
	};
	size_t k = s->acked;
	int rc;

	while (k < s->n && s->ends[k] <= e)
		k++;
	while (s->acked < k) {
		size_t m = k - s->acked > 64 ? 64 : k - s->acked;

		rc = sfs_claim_settle(f->store, s->claim, s->ids + s->acked,
		                      done, m);
		if (rc == SFS_NOTFOUND)
			rc = ack_each(f, s, m);
		if (rc) {
			int kept = rc != SFS_CLAIMLOST &&
			           keep_unsettled(f, s->claim, s->ids + s->acked,
			                          m);

			s->lost = !kept;
			fs_log(f, LOG_WARNING, "rows of a drain were delivered "
			       "but their claim %lld could not be settled%s: "
			       "%s: %s", (long long)s->claim,
			       kept ? " yet (tried again each second until its "
			              "lease ends, when they would be delivered "
			              "again)"
			            : " (they may be delivered again)",
			       sfs_strerror(rc), sfs_errdetail());
		}
		s->acked += m;
	}
}

/* The reader is at the page's end: it has had all of it. Drop it. */
static void next_page(fs *f, struct fs_stream *s)
{
	if (s->claim)
		ack_through(f, s, s->base + (off_t)s->out.len);
	s->base += (off_t)s->out.len;
	s->out.len = 0;
	s->n = s->acked = 0;
	if (s->ended && s->claim)
		s->claim = 0; /* all settled: the engine ended the claim */
}

static int stream_open(fs_file *h)
{
	if (h->stream)
		return 0;
	h->stream = calloc(1, sizeof(*h->stream));
	if (!h->stream)
		return ENOMEM;
	h->stream->h = h;
	h->stream->after = -1;
	return 0;
}

int fs_special_open(fs *f, fs_file *h)
{
	(void)f;
	if (!is_follow(h->kind))
		return 0; /* a drain takes nothing before its first READ */
	if (stream_open(h))
		return ENOMEM;
	pthread_mutex_lock(&followers_lock);
	h->stream->next = followers;
	followers = h->stream;
	pthread_mutex_unlock(&followers_lock);
	return 0;
}

/* Replies to a READ of the stream at off, with what the page holds there;
 * acks what the reply completed. 1 when there was nothing to serve at the
 * end of the page (the caller renders more or waits), else 0 (answered).
 * Lock held. */
static int stream_serve(fs *f, fuse_req_t req, fs_file *h, size_t size,
                        off_t off)
{
	struct fs_stream *s = h->stream;
	off_t end = s->base + (off_t)s->out.len;
	pid_t reader;
	size_t n;

	if (off < s->base || off > end) {
		fuse_reply_err(req, EINVAL); /* gone, or not yet rendered */
		return 0;
	}
	if (off == end)
		return 1;
	n = (size_t)(end - off) < size ? (size_t)(end - off) : size;
	if (fuse_req_interrupted(req)) {
		fuse_reply_err(req, EINTR); /* nothing acked: all stays */
		return 0;
	}
	/* A reader inside a page reads too: extend the drain's lease here,
	 * not only at a new page (a page read in small pieces for longer
	 * than the lease lost the rest to recovery while it was read). A
	 * failure is the acks' to report. Not once every row is settled:
	 * the claim ended with its last one. */
	if (s->claim && s->acked < s->n)
		(void)beat(f, s);
	reader = fuse_req_ctx(req)->pid; /* the reply frees req */
	if (fuse_reply_buf(req, (const char *)s->out.ptr + (off - s->base),
	                   n) != 0)
		return 0;
	if (s->claim)
		ack_through(f, s, off + (off_t)n);
	s->served = off + (off_t)n;
	s->reader = reader;
	return 0;
}

/* A READ of a stream: serve what the page has, else render the next one,
 * else (a drain's end) EOF or (.follow) wait for more. */
static void stream_read(fs *f, fuse_req_t req, fs_file *h, size_t size,
                        off_t off)
{
	fs_addr a = { 0 };
	int rc, err;

	pthread_mutex_lock(&h->lock);
	if ((err = stream_open(h)) ||
	    (err = fs_node_addr(f, h->node, &a))) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, err);
		return;
	}
	if (!stream_serve(f, req, h, size, off))
		goto out;
	next_page(f, h->stream);
	rc = fill(f, h, &a);
	if (rc == SFS_OK) {
		test_delay(f, req);
		stream_serve(f, req, h, size, off);
	} else if (rc == SFS_NOTFOUND && is_drain(h)) {
		fuse_reply_buf(req, NULL, 0); /* the end */
	} else if (rc == SFS_NOTFOUND) {
		pthread_mutex_unlock(&h->lock);
		fs_wait_add(f, req, h, fs_part(&a, 0), size, off);
		fs_addr_free(&a);
		return;
	} else {
		fuse_reply_err(req, fs_errno(f, rc, "reading a stream"));
	}
out:
	pthread_mutex_unlock(&h->lock);
	fs_addr_free(&a);
}

uint64_t fs_special_size(fs *f, fs_node *n, pid_t pid)
{
	uint64_t size = 0, sz;
	fs_addr a = { 0 };

	/* Every follower of n renders what is new (at most a page ahead of
	 * its reader), and the file shows the longest: tail -f reads when
	 * it grows, and never finds it shorter than what it has read. A
	 * follower whose reader stats it (pid) after a read that ended at
	 * the end of what it rendered drops that first, as its READ at the
	 * end would: tail -f reads up to the size it was told and never at
	 * the end, so a follower a page ahead (a log of more than
	 * PAGE_BYTES) showed the same size for ever and tail -f never saw a
	 * new entry. Only its own reader's stat: tail reads the end first
	 * and then the lines before it, which another process's stat must
	 * not drop in between. */
	pthread_mutex_lock(&followers_lock);
	for (struct fs_stream *s = followers; s; s = s->next) {
		fs_file *h = s->h;

		if (h->node != n)
			continue;
		pthread_mutex_lock(&h->lock);
		if (fs_node_addr(f, n, &a) == 0) {
			if (s->out.len && s->reader == pid &&
			    s->served == s->base + (off_t)s->out.len)
				next_page(f, s);
			while (s->out.len < PAGE_BYTES && fill(f, h, &a) == SFS_OK)
				;
			fs_addr_free(&a);
		}
		sz = (uint64_t)(s->base + (off_t)s->out.len);
		if (sz > size)
			size = sz;
		pthread_mutex_unlock(&h->lock);
	}
	pthread_mutex_unlock(&followers_lock);
	return size;
}

void fs_special_release(fs *f, fs_file *h)
{
	struct fs_stream *s = h->stream;
	size_t left;
	int rc;

	if (!s)
		return;
	pthread_mutex_lock(&h->lock);
	if (s->claim && (left = settle_drain(f, s->claim)) != 0) {
		/* The release goes after them: once they are settled, the
		 * rows not delivered come back (they waited for the lease,
		 * ten minutes by default, before 2026-12-04). */
		static const int64_t release = FS_UNSETTLED_RELEASE;
		int later = keep_unsettled(f, s->claim, &release, 1);

		fs_log(f, LOG_WARNING, "a drain ended with %zu delivered rows "
		       "not settled yet: its claim %lld is kept for them, and "
		       "gives back the rows not delivered %s", left,
		       (long long)s->claim, later ? "once they are settled"
		                                  : "when its lease ends");
	} else if (s->claim &&
	           (rc = sfs_claim_end(f->store, s->claim,
	                               SFS_OUTCOME_RELEASE)) != SFS_OK &&
	           rc != SFS_CLAIMLOST) {
		fs_log(f, LOG_ERR, "a drain's rows that were not delivered "
		       "could not be given back now (its claim %lld returns "
		       "them when its lease ends): %s: %s",
		       (long long)s->claim, sfs_strerror(rc), sfs_errdetail());
	}
	s->claim = 0;
	pthread_mutex_unlock(&h->lock);
}

/* ---- the entry points ---- */

int fs_special_take(fs *f, fs_file *h, sfs_slice queue)
{
	fs_addr a = { 0 };
	int rc;

	pthread_mutex_lock(&h->lock);
	if (!h->stream) {
		rc = take_item(f, h, queue);
	} else if ((rc = fs_node_addr(f, h->node, &a)) != 0) {
		rc = SFS_NOMEM;
	} else {
		rc = h->stream->out.len ? SFS_OK : fill(f, h, &a);
		fs_addr_free(&a);
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void fs_special_deliver(fs *f, fuse_req_t req, fs_file *h, sfs_slice queue,
                        size_t size, off_t off)
{
	(void)queue;
	fs_hear_begin(f); /* the reader's INTERRUPT, until it is answered */
	test_delay(f, req);
	pthread_mutex_lock(&h->lock);
	if (h->stream) {
		if (stream_serve(f, req, h, size, off))
			fuse_reply_buf(req, NULL, 0); /* cannot happen */
	} else if (fuse_req_interrupted(req)) {
		put_back(f, h);
		fuse_reply_err(req, EINTR);
	} else if (!h->given && off > 0 && (size_t)off >= h->len) {
		/* A first read past the item's end (`dd skip=`, a seek
		 * first) would carry none of it: it goes back, as to a
		 * reader that was interrupted. Before, it was popped (or
		 * claimed) with nothing delivered. */
		put_back(f, h);
		fuse_reply_buf(req, NULL, 0);
	} else if (serve(req, h, size, off) != 0) {
		put_back(f, h);
	} else {
		h->given = 1;
		delivered(f, h);
	}
	pthread_mutex_unlock(&h->lock);
	fs_hear_end(f);
}

void fs_special_read(fs *f, fuse_req_t req, fs_file *h, size_t size,
                     off_t off)
{
	fs_addr a = { 0 };
	int rc, err;

	if (is_follow(h->kind)) {
		stream_read(f, req, h, size, off); /* takes nothing */
		return;
	}
	if (fs_kind_streams(h->kind)) {
		/* A drain's reply acks what it carries: hear its INTERRUPT. */
		fs_hear_begin(f);
		stream_read(f, req, h, size, off);
		fs_hear_end(f);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (h->loaded) {
		serve(req, h, size, off);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	if ((err = fs_node_addr(f, h->node, &a))) {
		fuse_reply_err(req, err);
		return;
	}
	rc = fs_special_take(f, h, fs_part(&a, 0));
	if (rc == SFS_OK)
		fs_special_deliver(f, req, h, fs_part(&a, 0), size, off);
	else if (rc == SFS_NOTFOUND && h->kind == FS_QUEUE_WAIT)
		fs_wait_add(f, req, h, fs_part(&a, 0), size, off);
	else if (rc == SFS_NOTFOUND)
		fuse_reply_err(req, ENODATA); /* the loop's end */
	else
		fuse_reply_err(req, fs_errno(f, rc, "pop"));
	fs_addr_free(&a);
}
