/*
 * gc.c - periodic claim recovery: a thread of the daemon that runs
 * sfs_queue_gc for every queue each interval (a tenth of the mount's lease,
 * 1 s to 1 min), so that a dead worker's items come back to their queue
 * soon after its lease ends even when nobody claims from that queue; and
 * each second between, sfs_store_flush_counts, so that `statectl top` and
 * `metrics` see the queue counts of a mount gone idle; and each second the
 * filesystem's timer (fs_tick: acks of popped items that failed, tried
 * again).
 *
 * It lives here, with the daemon's other parts that follow the process's
 * lifetime, because it is a timer over the store and not a filesystem
 * operation: main.c starts it once the mount is up and stops it before the
 * store closes. Every claim made through the mount (or anywhere) also
 * recovers its queue first; this thread is for the queue nobody touches.
 * One pass is one short engine transaction under the store handle's lock:
 * requests wait at most that long. The thread only sleeps on its condition
 * variable between passes, so mountd_gc_stop wakes it at once.
 *
 * Locks: g.lock guards stop; never held across the engine call.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "mountd_i.h"

struct mountd_gc {
	sfs_store *store;          /* borrowed; outlives the thread */
	fs *fs;                    /* borrowed; outlives the thread */
	long interval_ms;
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* CLOCK_MONOTONIC */
	int stop;                  /* guarded by lock */
	int last_rc;               /* the last pass's status; the thread's */
	pthread_t thread;
};

/* One pass, and a line in the log when it did something or failed. A
 * failure like the last pass's is not logged again (a read-only
 * database fails every pass, once a second with a short lease); the
 * first pass that works after failures says so. */
static void gc_pass(struct mountd_gc *g)
{
	sfs_gc_stats st;
	int rc = sfs_queue_gc(g->store, SFS_NONE, &st);

	if (rc && rc != g->last_rc)
		mountd_log(rc == SFS_BUSY ? LOG_WARNING : LOG_ERR,
		           "claim recovery: %s: %s (not logged again while"
		           " it fails so)", sfs_strerror(rc), sfs_errdetail());
	else if (!rc && g->last_rc)
		mountd_log(LOG_INFO, "claim recovery works again");
	g->last_rc = rc;
	if (rc)
		return;
	if (st.returned || st.dead || st.expired)
		mountd_log(LOG_INFO, "claim recovery: %llu items back in their"
		           " queues, %llu to dead letters, %llu dropped by their"
		           " time-to-live", (unsigned long long)st.returned,
		           (unsigned long long)st.dead,
		           (unsigned long long)st.expired);
}

/* Every second: the queue counts the daemon holds back (a burst of pushes
 * through a mount that then fell idle showed in `statectl metrics` only
 * at the next pass, up to a minute later; nothing is written when none
 * are held). A failure is the next write's to report. The recovery passes
 * fall on these seconds: an interval is rounded up to whole seconds. */
static void counts_pass(struct mountd_gc *g)
{
	(void)sfs_store_flush_counts(g->store);
}

static void *gc_main(void *arg)
{
	struct mountd_gc *g = arg;
	struct timespec ts;
	long since = 0;            /* ms since the last recovery pass */

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		while (!g->stop &&
		       pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->lock);
		fs_tick(g->fs);
		since += 1000;
		if (since >= g->interval_ms) {
			since = 0;
			gc_pass(g);
		} else {
			counts_pass(g);
		}
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	fs_tick(g->fs); /* the last pops' acks, the session over */
	return NULL;
}

int mountd_gc_start(sfs_store *store, fs *f, int64_t lease_ms,
                    mountd_gc **out)
{
	struct mountd_gc *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	if (!g)
		return ENOMEM;
	g->store = store;
	g->fs = f;
	/* A tenth of a lease apart, between 1 s and 1 min: a dead worker's
	 * items come back at most that much after its lease. */
	g->interval_ms = (lease_ms ? lease_ms : 600000) / 10;
	if (g->interval_ms < 1000)
		g->interval_ms = 1000;
	if (g->interval_ms > 60000)
		g->interval_ms = 60000;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* The thread takes no signal: SIGINT, SIGTERM and SIGHUP go to the
	 * thread that waits for them (fs/loop.c), not to a timer. It
	 * inherits the mask it is created with. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&g->thread, NULL, gc_main, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return EAGAIN;
	}
	*out = g;
	return 0;
}

void mountd_gc_stop(mountd_gc *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
