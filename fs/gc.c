/*
 * gc.c - periodic claim recovery: a thread that runs sfs_queue_gc for every
 * queue each f->gc_interval_ms (a tenth of the mount's lease, 1 s to 1 min),
 * so that a dead worker's items come back to their queue soon after its
 * lease ends even when nobody claims from that queue.
 *
 * Every claim made through the mount (or anywhere) also recovers its queue
 * first; this thread is for the queue nobody touches. One pass is one short
 * engine transaction under the store handle's lock: requests wait at most
 * that long. The thread only sleeps on its condition variable between
 * passes, so fs_gc_stop wakes it at once.
 *
 * Locks: g.lock guards stop; never held across the engine call.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "fs_i.h"

struct fs_gc {
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* CLOCK_MONOTONIC */
	int stop;                  /* guarded by lock */
	pthread_t thread;
};

static void *gc_main(void *arg)
{
	fs *f = arg;
	struct fs_gc *g = f->gc;
	struct timespec ts;
	sfs_gc_stats st;
	int rc;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		fs_deadline(CLOCK_MONOTONIC, f->gc_interval_ms, &ts);
		while (!g->stop &&
		       pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->lock);
		rc = sfs_queue_gc(f->store, SFS_NONE, &st);
		if (rc)
			fs_errno(f, rc, "claim recovery"); /* logs it */
		else if (st.returned || st.dead || st.expired)
			fs_log(f, LOG_INFO, "claim recovery: %llu items back in"
			       " their queues, %llu to dead letters, %llu dropped"
			       " by their time-to-live",
			       (unsigned long long)st.returned,
			       (unsigned long long)st.dead,
			       (unsigned long long)st.expired);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int fs_gc_start(fs *f)
{
	struct fs_gc *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	f->gc = g;
	if (pthread_create(&g->thread, NULL, gc_main, f) != 0) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g);
		f->gc = NULL;
		return EAGAIN;
	}
	return 0;
}

void fs_gc_stop(fs *f)
{
	struct fs_gc *g = f->gc;

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
	f->gc = NULL;
}
