/*
 * ckpt.c - WAL checkpoints off the commit path (SFS_OPEN_WAL_THREAD;
 * docs/engine.md, "Checkpoints off the commit path").
 *
 * SQLite's automatic checkpoint runs inside the commit that takes the log
 * past 1,000 pages: that commit copies the log's pages into the store file
 * and, with synchronous=NORMAL, fsyncs the log before and the store file
 * after. On this project's disks that is 10-12 ms, in one request every
 * ~250 creates through the mount (docs/performance-rounds.md, "Checkpoints off
 * the commit path"), about a fifth of what a create costs on average.
 *
 * With the flag, the store opens a second connection and a thread that
 * owns it, and replaces the automatic checkpoint with a WAL hook (called
 * in the writer's thread after each of its commits, with the log's length
 * in frames):
 *  - at CKPT_PAGES frames, the hook asks the thread for a round: a PASSIVE
 *    checkpoint, which copies every frame no reader still needs and does
 *    the fsyncs, while the writer goes on committing;
 *  - at the writer's first commit after the round, the hook checkpoints
 *    on the writer's own connection: what was appended during the round,
 *    a few pages and two short fsyncs. That leaves the log fully copied,
 *    so the next write starts it over from its beginning (a PASSIVE round
 *    alone never gets there under steady writes: frames keep coming while
 *    it runs);
 *  - past CKPT_LIMIT frames the writer waits for the round it asked for
 *    before it finishes: the log stays bounded however the threads are
 *    scheduled;
 *  - when the finish cannot copy everything (a reader, maybe another
 *    process's, still reads an old snapshot), the log cannot start over
 *    until the reader lets go, and the next round is asked for a round's
 *    worth of frames later (with the limit moved as far), not at every
 *    commit.
 * Neither side waits on a lock: a PASSIVE checkpoint that finds another
 * (another process's) running returns SQLITE_BUSY, which is no failure.
 * While the store is short of space no checkpoint runs, as without the
 * flag (conn.c, "a full disk"); a round under way when the reserve is
 * given back ends first (sqlb_ckpt_quiet).
 *
 * The thread blocks every signal, and stops and closes its connection
 * (without the checkpoint a last close makes) before the store's own.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "sqlite_i.h"

#define CKPT_PAGES 1000  /* SQLite's automatic checkpoint's threshold */
#define CKPT_LIMIT 4000  /* the writer waits for the round past this */

struct sqlb_ckpt {
	sqlite3 *db;            /* the thread's connection */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* the thread waits for want; a writer past
	                           CKPT_LIMIT for the round's end */
	int parked;             /* the thread is in its loop (started) */
	int want;               /* a round is asked for */
	int running;            /* a round is under way */
	int stop;
	int logged;             /* a failure has been logged */
	uint64_t rounds;        /* rounds the thread finished */
	uint64_t seen;          /* rounds the writer has finished after */
	uint64_t writer;        /* the writer's own checkpoints */
	int from;               /* the log's length at which the next round
	                           is asked for (the writer's own) */
	int last;               /* the log's length at its previous commit */
};

/* Logs a checkpoint's failure once per store: it loses nothing (the log
 * keeps every frame), and the next round tries again. */
static void ckpt_failed(sqlb_ckpt *c, sqlite3 *db, int rc)
{
	int first;

	if (rc == SQLITE_OK || rc == SQLITE_BUSY)
		return;
	pthread_mutex_lock(&c->mu);
	first = !c->logged;
	c->logged = 1;
	pthread_mutex_unlock(&c->mu);
	if (first)
		sfs_log(LOG_WARNING, "%s: a WAL checkpoint failed: %s (the log "
		        "keeps every commit; checkpoints go on being tried)",
		        sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
}

static void *ckpt_main(void *arg)
{
	sqlb_ckpt *c = arg;
	int rc;

	pthread_mutex_lock(&c->mu);
	c->parked = 1; /* past its start (sqlb_ckpt_fork_hold) */
	pthread_cond_broadcast(&c->cv);
	for (;;) {
		while (!c->want && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		c->want = 0;
		c->running = 1;
		pthread_mutex_unlock(&c->mu);
		rc = sqlite3_wal_checkpoint_v2(c->db, "main",
		                               SQLITE_CHECKPOINT_PASSIVE, NULL,
		                               NULL);
		ckpt_failed(c, c->db, rc);
		pthread_mutex_lock(&c->mu);
		c->running = 0;
		c->rounds++;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* The WAL hook of the store's connection (see above). */
static int ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	sfs_backend *b = arg;
	sqlb_ckpt *c = b->ckpt;
	int finish = 0;

	if (frames < c->last) /* the log started over */
		c->from = CKPT_PAGES;
	c->last = frames;
	if (b->short_of_space || frames < c->from)
		return SQLITE_OK;
	pthread_mutex_lock(&c->mu);
	if (!c->want && !c->running && c->rounds == c->seen) {
		c->want = 1;
		pthread_cond_broadcast(&c->cv);
	}
	while (frames >= c->from + (CKPT_LIMIT - CKPT_PAGES) &&
	       (c->want || c->running) && !c->stop)
		pthread_cond_wait(&c->cv, &c->mu);
	if (!c->want && !c->running && c->rounds != c->seen) {
		c->seen = c->rounds;
		c->writer++;
		finish = 1;
	}
	pthread_mutex_unlock(&c->mu);
	if (finish) {
		int log = 0, copied = 0,
		    rc = sqlite3_wal_checkpoint_v2(db, name,
		                                   SQLITE_CHECKPOINT_PASSIVE, &log,
		                                   &copied);

		ckpt_failed(c, db, rc);
		/* Not all copied: a reader on an old snapshot (or another
		 * process's checkpoint) holds frames back, and the log cannot
		 * start over until it lets go. Rounds would copy nothing
		 * meanwhile, and past the limit the writer would wait for one
		 * at every commit: ask again a round's worth of frames on. */
		c->from = rc == SQLITE_OK && copied >= log ? CKPT_PAGES
		                                           : frames + CKPT_PAGES;
	}
	return SQLITE_OK;
}

/* Opens the thread's connection: no schema, no writes; a first read opens
 * the log, which a checkpoint needs. */
static int ckpt_connect(sqlb_ckpt *c, const char *path, const char *vfs,
                        int busy_ms)
{
	int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE |
	                         SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
	                         vfs);

	if (rc == SQLITE_OK)
		rc = sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		                       1, (int *)NULL);
	if (rc == SQLITE_OK && crypt_db_setup(c->db) != SFS_OK)
		rc = SQLITE_ERROR;
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(c->db, busy_ms);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "PRAGMA synchronous=NORMAL;"
		                  "SELECT count(*) FROM sqlite_schema;", NULL,
		                  NULL, NULL);
	return rc;
}

/* Closes the thread's connection and frees c (the thread is not running). */
static void ckpt_free(sqlb_ckpt *c)
{
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void sqlb_ckpt_start(sfs_backend *b, const char *vfs, int busy_ms)
{
	sqlb_ckpt *c = calloc(1, sizeof(*c));
	sigset_t all, old;
	const char *why;
	int rc;

	if (!c) {
		why = "no memory for the checkpoint thread";
		goto fail;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->from = CKPT_PAGES;
	rc = ckpt_connect(c, b->path, vfs, busy_ms);
	if (rc != SQLITE_OK) {
		why = c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
		goto fail;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, ckpt_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		why = "cannot start the checkpoint thread";
		goto fail;
	}
	b->ckpt = c;
	sqlite3_wal_hook(b->db, ckpt_hook, b); /* in place of the automatic
	                                          checkpoint */
	return;
fail:
	sfs_log(LOG_WARNING, "%s: no checkpoint thread (%s); commits "
	        "checkpoint the log themselves", b->path, why);
	if (c)
		ckpt_free(c);
}

void sqlb_ckpt_stop(sfs_backend *b)
{
	sqlb_ckpt *c = b->ckpt;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	/* The hook goes (a commit before the close checkpoints itself). */
	sqlite3_wal_autocheckpoint(b->db, b->short_of_space ? 0 : CKPT_PAGES);
	ckpt_free(c);
	b->ckpt = NULL;
}

int sqlb_ckpt_forsake(sfs_backend *b)
{
	sqlb_ckpt *c = b->ckpt;
	int busy;

	if (!c)
		return SFS_OK;
	/* Its mutex and condition variable as the fork left them: a lock
	 * held by a thread that is not here, waiters that are not either
	 * (destroying it would wait for them). Freed, not destroyed. */
	if (pthread_mutex_trylock(&c->mu) != 0)
		return SFS_BUSY;
	busy = c->running;
	pthread_mutex_unlock(&c->mu);
	if (busy)
		return SFS_BUSY;
	sqlite3_close(c->db); /* NO_CKPT_ON_CLOSE: it touches no file */
	free(c);
	b->ckpt = NULL;
	return SFS_OK;
}

void sqlb_ckpt_fork_hold(sfs_backend *b, int hold)
{
	sqlb_ckpt *c = b->ckpt;

	if (!c)
		return;
	if (!hold) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	/* A thread still starting may hold a lock of the allocator's (an
	 * ASan runtime's allocates there and is not fork-safe: the child of
	 * a fork just after an open with SFS_OPEN_WAL_THREAD waited for it
	 * forever in its first malloc): it is waited for too. */
	pthread_mutex_lock(&c->mu);
	while (c->running || !c->parked)
		pthread_cond_wait(&c->cv, &c->mu);
}

void sqlb_ckpt_quiet(sfs_backend *b)
{
	sqlb_ckpt *c = b->ckpt;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->want = 0;
	while (c->running)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

void sqlb_ckpt_counts(sfs_backend *b, uint64_t *rounds, uint64_t *writer)
{
	sqlb_ckpt *c = b->ckpt;

	pthread_mutex_lock(&c->mu);
	*rounds = c->rounds;
	*writer = c->writer;
	pthread_mutex_unlock(&c->mu);
}
