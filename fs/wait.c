/*
 * wait.c - readers blocked on /queue/<id>/.wait.
 *
 * A READ of .wait that finds the queue empty is not answered by the thread
 * that received it: the request is kept in a list and that thread goes back
 * to serving others (a blocked reader must not take a worker thread, or ten
 * waiting consumers would hang the mount). One waiter thread answers kept
 * requests: it tries their queues in arrival order whenever the store's
 * version changes (sfs_store_version, polled every POLL_MS: a push by any
 * process), when a push comes through this mount (fs_wait_kick), and when a
 * reader is added.
 *
 * Interrupts: the kernel sends INTERRUPT when a waiting reader gets a
 * signal (Ctrl-C, `timeout`). libfuse calls on_interrupt on the thread that
 * read it, with the request's lock held: it only flags the waiter and wakes
 * the thread, which answers EINTR without having popped anything, so the
 * item stays in the queue. When the daemon stops, kept readers get
 * ENOTCONN (fs_wait_stop). A waiter is freed only after its interrupt
 * callback is cleared (fuse_req_interrupt_func(req, NULL, NULL) waits for a
 * running callback), and never with q.lock held while doing so.
 *
 * Locks: q.lock guards the list, the flags and every waiter's interrupted
 * field. It is never held across an engine call or a reply.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"

#define POLL_MS 20

typedef struct waiter {
	struct waiter *next;       /* guarded by q.lock */
	struct fs_waitq *q;
	fuse_req_t req;
	fs_file *h;                /* the kernel keeps the file open meanwhile */
	sfs_buf queue;
	size_t size;
	off_t off;
	int interrupted;           /* guarded by q.lock */
} waiter;

struct fs_waitq {
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* CLOCK_MONOTONIC */
	waiter *head;              /* arrival order; guarded by lock */
	int stop;                  /* guarded by lock */
	int look;                  /* try the queues now; guarded by lock */
	pthread_t thread;
	int running;
};

static void on_interrupt(fuse_req_t req, void *data)
{
	waiter *w = data;

	(void)req;
	pthread_mutex_lock(&w->q->lock);
	w->interrupted = 1;
	pthread_cond_signal(&w->q->cond);
	pthread_mutex_unlock(&w->q->lock);
}

static void waiter_free(waiter *w)
{
	sfs_buf_free(&w->queue);
	free(w);
}

/* Answers and frees a waiter that is out of the list: err 0 delivers
 * what its handle took, else the READ fails with err. The handle may be
 * released (and freed by another thread) as soon as the reply is out: it
 * is not touched after. */
static void finish(fs *f, waiter *w, int err)
{
	fs_node *node = w->h->node;

	fuse_req_interrupt_func(w->req, NULL, NULL);
	if (!err)
		fs_special_deliver(f, w->req, w->h, sfs_bytes(w->queue.ptr,
		                   w->queue.len), w->size, w->off);
	else
		fuse_reply_err(w->req, err);
	fs_node_unref(f, node);
	waiter_free(w);
}

static void *waiter_main(void *arg)
{
	fs *f = arg;
	struct fs_waitq *q = f->waitq;
	uint64_t seen = 0, v;
	int have_seen = 0;

	pthread_mutex_lock(&q->lock);
	while (!q->stop) {
		waiter *list, *w, *next, *keep = NULL, **kt = &keep;
		int look;

		if (!q->head) {
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}
		list = q->head;
		q->head = NULL;
		look = q->look;
		q->look = 0;
		pthread_mutex_unlock(&q->lock);

		if (sfs_store_version(f->store, &v) == SFS_OK &&
		    (!have_seen || v != seen)) {
			look = 1;
			seen = v;
			have_seen = 1;
		}
		for (w = list; w; w = next) {
			int interrupted, rc = SFS_NOTFOUND;

			next = w->next;
			pthread_mutex_lock(&q->lock);
			interrupted = w->interrupted;
			pthread_mutex_unlock(&q->lock);
			if (!interrupted && look)
				rc = fs_special_take(f, w->h,
				        sfs_bytes(w->queue.ptr, w->queue.len));
			if (rc == SFS_OK) {
				finish(f, w, 0);
			} else if (interrupted) {
				finish(f, w, EINTR);
			} else if (rc != SFS_NOTFOUND) {
				finish(f, w, fs_errno(f, rc, "wait"));
			} else {
				w->next = NULL;
				*kt = w;
				kt = &w->next;
			}
		}

		pthread_mutex_lock(&q->lock);
		/* The ones kept go before any that arrived meanwhile. */
		*kt = q->head;
		q->head = keep;
		if (q->head && !q->look && !q->stop) {
			struct timespec ts;
			fs_deadline(CLOCK_MONOTONIC, POLL_MS, &ts);
			int any_interrupted = 0;
			for (w = q->head; w; w = w->next)
				any_interrupted |= w->interrupted;
			if (!any_interrupted)
				pthread_cond_timedwait(&q->cond, &q->lock, &ts);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int fs_wait_start(fs *f)
{
	struct fs_waitq *q = calloc(1, sizeof(*q));
	pthread_condattr_t ca;

	if (!q)
		return ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	/* The poll's pause is measured on the monotonic clock: on the wall
	 * clock, a step back (NTP, a VM resumed, date -s) made it last as
	 * long as the step, and an item pushed by another process reached
	 * no reader until then. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	f->waitq = q;
	if (pthread_create(&q->thread, NULL, waiter_main, f) != 0)
		return EAGAIN;
	q->running = 1;
	return 0;
}

void fs_wait_stop(fs *f)
{
	struct fs_waitq *q = f->waitq;
	waiter *w, *next;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	if (q->running)
		pthread_join(q->thread, NULL);
	/* The session is ending: every kept reader gets ENOTCONN, what any
	 * access to the mount gets once the daemon is gone. Not EINTR: cat,
	 * Python and Go retry a read that fails with EINTR, and the retry
	 * would meet the unmount instead (ENOTCONN or ECONNABORTED by
	 * timing). */
	for (w = q->head; w; w = next) {
		next = w->next;
		finish(f, w, ENOTCONN);
	}
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
	f->waitq = NULL;
}

void fs_wait_add(fs *f, fuse_req_t req, fs_file *h, sfs_slice queue,
                 size_t size, off_t off)
{
	struct fs_waitq *q = f->waitq;
	waiter *w, **pp;

	if (!q || !q->running) {
		fuse_reply_err(req, EIO);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->queue.ptr = malloc(queue.len + 1))) {
		free(w);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(w->queue.ptr, queue.ptr, queue.len);
	w->queue.len = queue.len;
	w->q = q;
	w->req = req;
	w->h = h;
	w->size = size;
	w->off = off;
	fs_node_ref(f, h->node);
	/* May call on_interrupt at once: q.lock must not be held. */
	fuse_req_interrupt_func(req, on_interrupt, w);
	pthread_mutex_lock(&q->lock);
	for (pp = &q->head; *pp; pp = &(*pp)->next)
		;
	*pp = w;
	q->look = 1; /* tried before it was kept: look once more */
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void fs_wait_kick(fs *f)
{
	struct fs_waitq *q = f->waitq;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	if (q->head) {
		q->look = 1;
		pthread_cond_signal(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
}
