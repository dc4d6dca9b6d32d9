/*
 * loop.c - the session loop of a mount whose store runs one call at a time
 * (SQLite): a pool of threads of which one reads /dev/fuse.
 *
 * Why not libfuse's pool. In fuse_session_loop_mt every idle thread waits
 * in read() on the device, so every request wakes a sleeping thread while
 * the one that answered the last goes back to sleep: a hand-off per
 * request (docs/performance-rounds.md, "How many threads": 11.7 context
 * switches of the daemon per file with two such threads, 8.1 with one). A lone
 * reader that finishes a request and reads again often finds the next one
 * (or the kernel's asynchronous RELEASE) queued already, and does not
 * sleep. On a SQLite store the extra threads buy no overlap: every call
 * takes the handle's one lock.
 *
 * Why not one thread (fuse_session_loop). A reader of .pop, .claim or
 * .drain whose signal comes while the daemon is between taking the item
 * and answering must get EINTR and the item must go back (special.c): the
 * kernel's INTERRUPT has to be read by some thread while the one serving
 * the READ has not answered yet.
 *
 * So: threads take turns as the reader, one at a time. A thread that has
 * answered a request reads the next itself if no other thread is reading;
 * otherwise it waits on a condition variable, not on the device. Nothing
 * wakes a waiting thread, except while some handler is inside
 * fs_hear_begin/fs_hear_end (delivering a taken item, a drain's page): then
 * fs_hear_begin wakes one, which reads if no thread does, and a reader
 * that receives a request wakes the next before serving it, so that a
 * thread is reading for as long as any handler must hear. The reader gets
 * the INTERRUPT (libfuse flags the request: fuse_req_interrupted) or any
 * other request; one that took an ordinary request and waits on the
 * store's lock does not stop the next from reading.
 *
 * Held FLUSH answers: one commit for many writers. On its own, every
 * FLUSH is a commit (its locks, its WAL frames, on an encrypted store its
 * pages sealed), and with one reader the engine's groups never form: no
 * second thread is waiting to write while the reader commits. So the
 * reader holds its FLUSHes' writes (sfs_store_hold) and their answers
 * while the device has more requests queued, serves those (other writers'
 * LOOKUPs read beside the held writes, their FLUSHes join them), and
 * commits once and answers them all (sfs_store_commit's outcome for each)
 * when nothing is queued, HOLD_MAX answers are held or HOLD_SERVED
 * requests have been served meanwhile (so a stream of other requests
 * cannot keep them waiting). A lone writer waits for its FLUSH's answer,
 * so nothing is queued behind it and it is answered at once, as before.
 * "Nothing queued" is first a poll() with no wait (a lone writer's case:
 * one system call), then, once it saw a request, reads of the device made
 * non-blocking until the answers go (O_NONBLOCK on the session's
 * descriptor, which only the one reader reads): EAGAIN says the queue is
 * empty. A blocking read after the poll could wait forever, with the
 * writers waiting for their answers, if the request it saw was withdrawn
 * (its process got SIGKILL) before the read. A thread that stops reading
 * (another reads, the pool ends) answers its held ones first, and one
 * holding answers is never cancelled (its reads do not block). A thread
 * woken to read meanwhile (fs_hear_begin) finds the device non-blocking
 * and waits in poll() instead of read(), until a request comes or the
 * holder, seeing a reader, answers its FLUSHes and makes reads block
 * again.
 *
 * -o async_close: answered at once, committed when idle. The same held
 * writes, but nobody waits for their commit: a value's FLUSH is answered
 * at once and its RELEASE writes it (fs_hold_done; file.c), a counter's,
 * entry's or item's FLUSH and a key's or counter's UNLINK (tree.c) are
 * answered as soon as the write is made in the open transaction, and the
 * commit waits for the device to stay empty for ASYNC_IDLE_MS (a lone
 * writer's next file comes well within it and joins the commit), for
 * HOLD_MAX such writes, or for HOLD_SERVED requests, whichever is first;
 * an fsync, a read that is not one row, another thread's call and the
 * pool's end commit before it (sfs_store_hold). So close(2) no longer
 * says the change is stored: up to HOLD_MAX closes are lost to a crash of
 * the daemon, other processes see them after the commit, and a commit
 * that fails is logged and told by fsync (fs_async_failed, file.c).
 * docs/performance-rounds.md, "Answered before the commit", has the cost.
 *
 * Ending. Only the calling thread takes SIGINT, SIGTERM and SIGHUP: the
 * pool blocks them, and so do the threads the pool starts (the .wait
 * thread, at INIT) and the daemon's claim recovery thread (mountd/gc.c).
 * The caller waits in ppoll with them unblocked, so the session's handlers
 * (fuse_set_signal_handlers: fuse_session_exit) wake it without a race
 * between the check and the wait: outside ppoll a signal stays pending.
 * A reader that finds the device gone (unmount: libfuse exits the
 * session) or failing ends the pool too, through a pipe the caller polls.
 * Then the caller wakes the waiting threads, cancels the one in read()
 * (cancellation is enabled only there, as in libfuse's own pool: a
 * request is always served whole), joins them all, and stops the .wait
 * thread (fs_stop), the one other caller of fs_hear_begin.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"

struct fs_loop {
	fs *f;
	struct fuse_session *se;
	int fd;                /* the session's device */
	int fd_flags;          /* its file status flags (blocking) */
	pthread_mutex_t lock;
	pthread_cond_t turn;   /* an idle thread waits here to become a reader */
	unsigned readers;      /* threads in fuse_session_receive_buf: 0 or
	                          1 */
	unsigned hearing;      /* handlers between fs_hear_begin and _end */
	int stop;              /* the pool is ending */
	int error;             /* a read's failure (an errno), or 0 */
	int wake[2];           /* a thread that ends the pool writes here */
};

struct worker {
	struct fs_loop *l;
	pthread_t thread;
	int started;
	struct fuse_buf buf;   /* freed after the join: a cancelled read
	                          leaves it behind */
};

/* A pool thread's held FLUSH answers (see above). */
#define HOLD_MAX 16
#define HOLD_SERVED 64
#define ASYNC_IDLE_MS 1

static __thread struct held {
	struct fs_loop *l;       /* set in a pool thread */
	fuse_req_t req[HOLD_MAX];
	unsigned n;              /* answers held */
	unsigned done;           /* writes held whose answers went
	                            (async_close) */
	unsigned served;         /* requests served since the first */
	int nonblock;            /* the device's reads do not block */
} held;

/* Sets or clears O_NONBLOCK on the device: reads find out whether a
 * request is queued while answers are held. */
static int device_nonblock(struct fs_loop *l, int on)
{
	if (fcntl(l->fd, F_SETFL, on ? l->fd_flags | O_NONBLOCK
	                             : l->fd_flags) != 0)
		return 0;
	held.nonblock = on;
	return 1;
}

/* Waits up to timeout ms (-1: no limit) for a request (or the device's
 * end) to be there to read; poll()'s result. */
static int device_wait(struct fs_loop *l, int timeout)
{
	struct pollfd p = { .fd = l->fd, .events = POLLIN };

	return poll(&p, 1, timeout);
}

/* Whether the thread holds writes not yet committed. */
static int holding(void)
{
	return held.n || held.done;
}

/* How long to wait for a request before committing: not at all while a
 * writer waits for its answer, ASYNC_IDLE_MS when only answered writes
 * are held. */
static int idle_ms(void)
{
	return held.n ? 0 : ASYNC_IDLE_MS;
}

/* Commits the held writes and answers every held FLUSH with the outcome;
 * the device reads block again. */
static void answer_held(void)
{
	struct fs_loop *l = held.l;
	int err;

	if (!holding())
		return;
	if (held.nonblock)
		device_nonblock(l, 0);
	for (long ms = 0; ms < l->f->test_commit_delay_ms; ms++)
		usleep(1000); /* tests: the daemon is killed meanwhile */
	err = fs_errno(l->f, sfs_store_commit(l->f->store), "flush");
	if (err && held.done) {
		fs_log(l->f, LOG_ERR, "%u changes already answered (-o "
		       "async_close) were not stored: %s", held.done,
		       strerror(err));
		fs_async_failed(l->f, err);
	}
	for (unsigned i = 0; i < held.n; i++)
		fuse_reply_err(held.req[i], err);
	held.n = held.done = held.served = 0;
}

/* answer_held from a thread holding the pool's lock. */
static void answer_held_locked(struct fs_loop *l)
{
	if (!holding())
		return;
	pthread_mutex_unlock(&l->lock);
	answer_held();
	pthread_mutex_lock(&l->lock);
}

int fs_hold_begin(fs *f)
{
	if (!held.l || held.l != f->loop || held.l->fd_flags < 0)
		return 0;
	return sfs_store_hold(f->store, 1) == SFS_OK;
}

void fs_hold_end(fs *f)
{
	sfs_store_hold(f->store, 0);
}

void fs_hold_commit(fs *f)
{
	if (held.l && held.l == f->loop)
		answer_held();
}

/* Commits once HOLD_MAX writes are held, answered or not. */
static void hold_one(void)
{
	if (held.n + held.done >= HOLD_MAX)
		answer_held();
}

void fs_hold_done(fs *f)
{
	(void)f;
	held.done++;
	hold_one();
}

void fs_hold_answer(fs *f, fuse_req_t req)
{
	if (f->async_close) { /* answered now, committed later */
		fuse_reply_err(req, 0);
		fs_hold_done(f);
		return;
	}
	held.req[held.n++] = req;
	hold_one();
}

/* Tells the caller the pool is over. Lock held. */
static void end_pool(struct fs_loop *l, int error)
{
	char c = 0;

	if (!l->error)
		l->error = error;
	l->stop = 1;
	pthread_cond_broadcast(&l->turn);
	if (write(l->wake[1], &c, 1) < 0) {
		/* The pipe is non-blocking and read only once: a full pipe
		 * has woken the caller already. */
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct fs_loop *l = w->l;
	int res;

	held.l = l;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (!l->stop && l->readers) {
			if (holding()) { /* another reads: answer first */
				answer_held_locked(l);
				continue;
			}
			pthread_cond_wait(&l->turn, &l->lock);
		}
		if (l->stop || fuse_session_exited(l->se))
			break;
		l->readers++;
		pthread_mutex_unlock(&l->lock);

		/* A lone writer waits for its answer: nothing is queued
		 * (one poll). Else, until the answers go, reads tell. */
		if (holding() && (++held.served > HOLD_SERVED ||
		                  (!held.nonblock &&
		                   device_wait(l, idle_ms()) == 0)))
			answer_held();
		if (holding() && !held.nonblock && !device_nonblock(l, 1))
			answer_held(); /* cannot tell: no waiting */
		if (held.nonblock) {
			/* Does not block: EAGAIN says nothing is queued. Not a
			 * cancellation point either: a thread cancelled now
			 * would leave its writes held. */
			res = fuse_session_receive_buf(l->se, &w->buf);
			if (res == -EAGAIN &&
			    (held.n || device_wait(l, idle_ms()) <= 0))
				answer_held();
		} else {
			pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
			res = fuse_session_receive_buf(l->se, &w->buf);
			if (res == -EAGAIN) /* another thread holds
			                       answers (it set O_NONBLOCK):
			                       wait, do not spin */
				device_wait(l, -1);
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		}

		pthread_mutex_lock(&l->lock);
		l->readers--;
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {
			/* 0: the device is gone and libfuse has exited the
			 * session; below 0: it failed (libfuse said how). */
			end_pool(l, res < 0 ? -res : 0);
			break;
		}
		if (l->hearing) {
			answer_held_locked(l); /* then the next reader blocks */
			pthread_cond_signal(&l->turn); /* take over reading */
		}
		pthread_mutex_unlock(&l->lock);
		fuse_session_process_buf(l->se, &w->buf);
		pthread_mutex_lock(&l->lock);
	}
	if (!l->stop && fuse_session_exited(l->se))
		end_pool(l, 0); /* exited by a request's handler */
	pthread_mutex_unlock(&l->lock);
	answer_held(); /* committed, whether or not the answers arrive */
	return NULL;
}

void fs_hear_begin(fs *f)
{
	struct fs_loop *l = f->loop;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->hearing++;
	pthread_cond_signal(&l->turn);
	pthread_mutex_unlock(&l->lock);
}

void fs_hear_end(fs *f)
{
	struct fs_loop *l = f->loop;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->hearing--;
	pthread_mutex_unlock(&l->lock);
}

/* Waits, with the session's signals unblocked only while waiting, until a
 * signal has exited the session or a thread has ended the pool. */
static void wait_for_end(struct fs_loop *l, const sigset_t *open)
{
	struct pollfd p = { .fd = l->wake[0], .events = POLLIN };

	for (;;) {
		int stop;

		pthread_mutex_lock(&l->lock);
		stop = l->stop;
		pthread_mutex_unlock(&l->lock);
		if (stop || fuse_session_exited(l->se))
			return;
		if (ppoll(&p, 1, NULL, open) < 0 && errno != EINTR)
			return; /* cannot wait: end rather than spin */
	}
}

int fs_loop(fs *f, struct fuse_session *se, unsigned threads)
{
	struct fs_loop l = { .f = f, .se = se, .fd = fuse_session_fd(se),
	                     .fd_flags = fcntl(fuse_session_fd(se), F_GETFL),
	                     .wake = { -1, -1 } };
	struct worker *w = calloc(threads, sizeof(*w));
	sigset_t ends, open;
	int err = 0;

	if (!w)
		return -ENOMEM;
	if (pipe2(l.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		free(w);
		return -errno;
	}
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.turn, NULL);
	f->loop = &l;

	sigemptyset(&ends);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &ends, &open); /* the pool inherits it */
	for (unsigned i = 0; i < threads; i++) {
		w[i].l = &l;
		err = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (err)
			break;
		w[i].started = 1;
	}
	if (!err)
		wait_for_end(&l, &open);
	pthread_sigmask(SIG_SETMASK, &open, NULL);

	pthread_mutex_lock(&l.lock);
	l.stop = 1;
	pthread_cond_broadcast(&l.turn);
	pthread_mutex_unlock(&l.lock);
	for (unsigned i = 0; i < threads; i++)
		if (w[i].started)
			pthread_cancel(w[i].thread);
	for (unsigned i = 0; i < threads; i++) {
		if (w[i].started)
			pthread_join(w[i].thread, NULL);
		free(w[i].buf.mem);
	}
	/* The .wait thread calls fs_hear_begin: it stops before l goes. */
	fs_stop(f);
	f->loop = NULL;
	if (!err)
		err = l.error;
	pthread_cond_destroy(&l.turn);
	pthread_mutex_destroy(&l.lock);
	close(l.wake[0]);
	close(l.wake[1]);
	free(w);
	return -err;
}
