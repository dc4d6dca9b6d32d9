/*
 * store.c - a PostgreSQL store's handle: open and close, sync, the
 * change counter, and the ops table.
 *
 * The change counter (sfs_store_version) is this handle's own commits
 * plus the notifications it received: a thread of the handle holds one
 * more connection that does nothing but LISTEN on the store's channel,
 * blocked in poll() on its socket, so a push from any host wakes this
 * host's waiters (the mount's .wait readers poll the counter, which is an
 * atomic read here: no statement reaches the server while nobody pushes).
 * The thread starts with the first call of sfs_store_version (statectl
 * never pays for it), and reconnects by itself; after every (re)connect it
 * moves the counter once, because a push may have happened while nobody
 * listened. It turns the server's idle_session_timeout off for itself
 * (the pool's connections keep it).
 *
 * What notifies (schema.c): a statement that made queue items
 * pending. Other hosts' writes to values, counters and logs do not move
 * this handle's counter; nothing above core/ depends on that today (the
 * mount's caches are time-based), and a notifying commit takes a
 * database-wide lock that would serialise every write of every host.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypt/crypt_i.h"
#include "pg_i.h"

#define DEFAULT_POOL 10

/* The listening thread. It waits only in poll() on its sockets, never
 * inside libpq (its connect and its statements are asynchronous, each
 * answer awaited up to the busy timeout), so a server that stops answering
 * costs it a reconnect, and a stop (its wake pipe) is heard at once. Out of
 * a wait it is busy: inside libpq, the allocator, the logger. A fork
 * (pgb_fork_hold) takes mu, waits until it is not busy, and keeps mu until
 * after the fork; the thread takes mu to be busy again, so it does not
 * leave its wait meanwhile and the child inherits no lock it held. Lock
 * order: store.c's live list, listen_mu, then mu. */
struct pgb_listener {
	sfs_backend *b;
	pthread_t thread;
	int wake[2];             /* a byte on wake[1] stops the thread */
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* busy went to 0 */
	int busy;                /* guarded by mu; 1 from its creation until
	                            its first wait */
};

static char *quote_ident(const char *s)
{
	size_t n = strlen(s);
	char *q = malloc(2 * n + 3), *o = q;

	if (!q)
		return NULL;
	*o++ = '"';
	for (; *s; s++) {
		if (*s == '"')
			*o++ = '"';
		*o++ = *s;
	}
	*o++ = '"';
	*o = '\0';
	return q;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_busy(pgb_listener *l, int busy)
{
	pthread_mutex_lock(&l->mu);
	l->busy = busy;
	if (!busy)
		pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

enum { W_READY, W_TIME, W_STOP, W_ERR };

/* Waits, not busy, for events ev on fd (-1: none) up to the monotonic
 * time until (-1: no limit), or until the listener is told to stop (or
 * poll fails, which nothing should make it). */
static int wait_for(pgb_listener *l, int fd, short ev, int64_t until)
{
	struct pollfd p[2] = { { l->wake[0], POLLIN, 0 }, { fd, ev, 0 } };
	int n, saved, ms = -1;

	if (until >= 0) {
		int64_t left = until - now_ms();

		ms = left > 0 ? (int)left : 0;
	}
	set_busy(l, 0);
	n = poll(p, fd >= 0 ? 2 : 1, ms);
	saved = errno;
	set_busy(l, 1);
	if ((n < 0 && saved != EINTR) || p[0].revents)
		return W_STOP;
	if (n > 0 && p[1].revents)
		return W_READY;
	return until >= 0 && now_ms() >= until ? W_TIME : W_READY;
}

/* Sleeps up to ms, or until the listener is told to stop: 1 when told. */
static int nap(pgb_listener *l, int ms)
{
	return wait_for(l, -1, 0, now_ms() + ms) == W_STOP;
}

/* How long the listener waits for the server at each step: the busy
 * timeout, the longest any call waits (2 s at least). */
static int64_t patience(const sfs_backend *b)
{
	return b->busy_ms > 2000 ? b->busy_ms : 2000;
}

/* Runs sql on conn, awaiting its answers: W_READY when every one was a
 * success, W_ERR (*why set) when one was an error, W_TIME (*why set) when
 * the connection was lost or no answer came in time; W_STOP when told to
 * stop. */
static int run(pgb_listener *l, PGconn *conn, const char *sql,
               const char **why)
{
	int64_t until = now_ms() + patience(l->b);
	PGresult *r;
	int ok = 1;

	if (!PQsendQuery(conn, sql)) {
		*why = PQerrorMessage(conn);
		return W_TIME;
	}
	for (;;) {
		while (PQisBusy(conn)) {
			int w = wait_for(l, PQsocket(conn), POLLIN, until);

			if (w == W_STOP)
				return W_STOP;
			if (w == W_TIME) {
				*why = "no answer from the server within the "
				       "busy timeout";
				return W_TIME;
			}
			if (!PQconsumeInput(conn)) {
				*why = PQerrorMessage(conn);
				return W_TIME;
			}
		}
		if (!(r = PQgetResult(conn)))
			break;
		if (PQresultStatus(r) != PGRES_COMMAND_OK && ok) {
			ok = 0;
			*why = PQerrorMessage(conn);
		}
		PQclear(r);
	}
	return ok ? W_READY : W_ERR;
}

/* A connection that listens on the store's channel (listen: the
 * statement), or NULL; *stop 1 when told to stop meanwhile. */
static PGconn *listen_connect(pgb_listener *l, const char *listen,
                              int *stop)
{
	sfs_backend *b = l->b;
	int64_t until = now_ms() + patience(b);
	PGconn *conn = pgb_connect_start(b);
	PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
	const char *why = NULL;
	int w = W_READY;

	*stop = 0;
	if (!conn || PQstatus(conn) == CONNECTION_BAD)
		goto fail;
	while (ps != PGRES_POLLING_OK) {
		if (ps == PGRES_POLLING_FAILED)
			goto fail;
		w = wait_for(l, PQsocket(conn), ps == PGRES_POLLING_READING ?
		             POLLIN : POLLOUT, until);
		if (w != W_READY)
			goto fail;
		ps = PQconnectPoll(conn);
	}
	w = run(l, conn, listen, &why);
	if (w != W_READY) {
		if (w != W_STOP)
			sfs_log(LOG_WARNING, "%s: cannot listen for pushes: %s",
			        b->display, why);
		goto fail;
	}
	/* Idle by nature: a server's idle_session_timeout (PostgreSQL 14
	 * on; an older one refuses the name, and has no such timeout)
	 * would end it again and again, each time a wake-up for nothing. */
	w = run(l, conn, "SET idle_session_timeout = 0", &why);
	if (w == W_STOP || w == W_TIME)
		goto fail;
	return conn;
fail:
	/* (A failed connect says nothing: every call of the handle tells
	 * its caller that the server cannot be reached.) */
	*stop = w == W_STOP;
	PQfinish(conn);
	return NULL;
}

static void *listen_main(void *arg)
{
	pgb_listener *l = arg;
	sfs_backend *b = l->b;
	PGconn *conn = NULL;
	int stop = 0, pause = 50;
	char sql[160], *q = quote_ident(b->channel);

	/* The channel as an identifier: a '"' in the schema's name doubled. */
	if (!q) {
		sfs_log(LOG_WARNING, "%s: cannot listen for pushes: out of"
		        " memory", b->display);
		set_busy(l, 0); /* for good */
		return NULL;
	}
	snprintf(sql, sizeof(sql), "LISTEN %s", q);
	free(q);
	while (!stop) {
		PGnotify *n;
		int w;

		if (!conn) {
			conn = listen_connect(l, sql, &stop);
			if (stop)
				break;
			if (!conn) {
				stop = nap(l, pause);
				pause = pause < 2000 ? pause * 2 : 2000;
				continue;
			}
			pause = 50;
			/* Something may have been pushed while nobody listened. */
			atomic_fetch_add(&b->notes, 1);
		}
		w = wait_for(l, PQsocket(conn), POLLIN, -1);
		if (w == W_STOP)
			break;
		if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK) {
			sfs_log(LOG_INFO, "%s: the listening connection was lost;"
			        " reconnecting", b->display);
			PQfinish(conn);
			conn = NULL;
			continue;
		}
		while ((n = PQnotifies(conn))) {
			atomic_fetch_add(&b->notes, 1);
			PQfreemem(n);
		}
	}
	PQfinish(conn);
	set_busy(l, 0);
	return NULL;
}

static void listener_stop(sfs_backend *b)
{
	pgb_listener *l = b->listener;

	if (!l)
		return;
	if (write(l->wake[1], "x", 1) < 0) {
		/* the pipe is ours and empty: cannot fail */
	}
	pthread_join(l->thread, NULL);
	close(l->wake[0]);
	close(l->wake[1]);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
	b->listener = NULL;
}

static int listener_start(sfs_backend *b)
{
	pgb_listener *l = calloc(1, sizeof(*l));

	if (!l)
		return sfs_err(SFS_NOMEM, "allocating a listener");
	l->b = b;
	l->busy = 1;
	if (pipe2(l->wake, O_CLOEXEC) != 0) {
		free(l);
		return sfs_err(SFS_IO, "pipe: %s", strerror(errno));
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (pthread_create(&l->thread, NULL, listen_main, l) != 0) {
		close(l->wake[0]);
		close(l->wake[1]);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return sfs_err(SFS_IO, "cannot start the listening thread");
	}
	b->listener = l;
	return SFS_OK;
}

static int pgb_version(sfs_backend *b, uint64_t *out)
{
	int st = SFS_OK;

	pthread_mutex_lock(&b->listen_mu);
	if (!b->listener)
		st = listener_start(b);
	pthread_mutex_unlock(&b->listen_mu);
	if (st == SFS_OK)
		*out = atomic_load(&b->commits) + atomic_load(&b->notes);
	return st;
}

/* Around fork (backend_i.h, fork_hold): no listener starts, and one
 * under way is waited for until it is in poll() (above), and held there
 * until hold 0, in both processes. The child has no listener thread: the
 * handle it inherited cannot be used there (store.c), and a handle of its
 * own starts one of its own. */
static void pgb_fork_hold(sfs_backend *b, int hold)
{
	pgb_listener *l;

	if (!hold) {
		if ((l = b->listener))
			pthread_mutex_unlock(&l->mu);
		pthread_mutex_unlock(&b->listen_mu);
		return;
	}
	pthread_mutex_lock(&b->listen_mu);
	if (!(l = b->listener))
		return;
	pthread_mutex_lock(&l->mu);
	while (l->busy)
		pthread_cond_wait(&l->cv, &l->mu);
}

static void pgb_close(sfs_backend *b)
{
	if (!b)
		return;
	listener_stop(b);
	pgb_qstat_close(b); /* the counts not written yet */
	pgb_pool_destroy(b);
	pthread_mutex_destroy(&b->listen_mu);
	pthread_mutex_destroy(&b->sweep_mu);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			sfs_buf_free(&b->sweep_after[i][j]);
	pgb_keys_free(b->keys);
	sfs_key_destroy(b->key);
	if (b->conninfo) {
		memset(b->conninfo, 0, strlen(b->conninfo));
		free(b->conninfo);
	}
	free(b->display);
	free(b->schema);
	free(b->qschema);
	free(b->channel);
	free(b);
}

/* Everything a handle needs before its first connection. */
static int prepare(const char *db, unsigned flags, int busy_ms,
                   sfs_backend **out)
{
	sfs_backend *b = calloc(1, sizeof(*b));
	pgb_target t;
	size_t cut;
	int st;

	if (!b)
		return sfs_err(SFS_NOMEM, "allocating a store");
	pthread_mutex_init(&b->listen_mu, NULL);
	pthread_mutex_init(&b->sweep_mu, NULL);
	st = pgb_target_parse(db, &t);
	if (st != SFS_OK) {
		pgb_close(b);
		return st;
	}
	b->conninfo = t.conninfo;
	b->display = t.display;
	b->schema = t.schema;
	b->readonly = !!(flags & SFS_OPEN_READONLY);
	b->busy_ms = busy_ms;
	if (!t.has_timeout && !getenv("PGCONNECT_TIMEOUT") &&
	    !getenv("PGSERVICE"))
		snprintf(b->connect_timeout, sizeof(b->connect_timeout), "%d",
		         busy_ms > 2000 ? (busy_ms + 999) / 1000 : 2);
	b->qschema = quote_ident(b->schema);
	/* A channel name is at most 63 bytes: a long schema's is cut, which
	 * can only wake another store's waiters for nothing. The cut never
	 * splits a UTF-8 character: the server refuses a channel name that
	 * is not valid in the database's encoding (and the store could not
	 * be created). */
	cut = strlen(b->schema);
	if (cut > 54)
		for (cut = 54; cut > 0 &&
		     ((unsigned char)b->schema[cut] & 0xc0) == 0x80; cut--)
			;
	if (b->qschema && asprintf(&b->channel, "statefs %.*s", (int)cut,
	                           b->schema) < 0)
		b->channel = NULL;
	if (!b->qschema || !b->channel) {
		pgb_close(b);
		return sfs_err(SFS_NOMEM, "allocating a store");
	}
	st = pgb_pool_init(b, t.pool ? (size_t)t.pool : DEFAULT_POOL);
	if (st == SFS_OK)
		st = pgb_qstat_init(b);
	if (st != SFS_OK) {
		pgb_close(b);
		return st;
	}
	*out = b;
	return SFS_OK;
}

int pgb_open(const sfs_backend_cfg *cfg, sfs_backend **out)
{
	sfs_backend *b;
	pgc *c;
	int st = prepare(cfg->db, cfg->flags, cfg->busy_timeout_ms, &b);

	if (st != SFS_OK)
		return st;
	/* Creating and checking the schema is retried like any call, but
	 * only while the failure is transient (two hosts creating at once);
	 * a server that cannot be reached fails the open at once. */
	if (cfg->key)
		st = crypt_key_dup(cfg->key, &b->key);
	if (st == SFS_OK) {
		PGB_TRY(b, c, st, PGB_FAILFAST) {
			st = pgb_schema_init(b, c, cfg);
		}
	}
	if (st != SFS_OK) {
		pgb_close(b);
		return st;
	}
	*out = b;
	return SFS_OK;
}

int pgb_probe(const char *db, int *encrypted)
{
	sfs_backend *b;
	pgc *c;
	int st = prepare(db, SFS_OPEN_READONLY, 30000, &b);

	if (st != SFS_OK)
		return st;
	PGB_TRY(b, c, st, PGB_FAILFAST) {
		st = pgb_schema_probe(b, c, encrypted);
	}
	pgb_close(b);
	return st;
}

/* What is at a connection string: nothing yet (no store in that schema),
 * or a plaintext or an encrypted store. */
static int pg_probe_kind(const char *db, be_kind *kind)
{
	int enc = 0, st = pgb_probe(db, &enc);

	if (st == SFS_NOTFOUND) {
		sfs_err_clear();
		*kind = BE_KIND_NEW;
		return SFS_OK;
	}
	if (st == SFS_OK)
		*kind = enc ? BE_KIND_ENCRYPTED : BE_KIND_PLAIN;
	return st;
}

/* A connection string on a command line must not hold a password: argv
 * is readable by every user of the machine. */
static int pg_given(const char *db)
{
	int has = 0, st = pgb_db_has_password(db, &has);

	if (st || !has)
		return st;
	return sfs_err(SFS_INVALID, "the connection string holds a password,"
	               " and a command line is readable by every user of this"
	               " machine: put the password in ~/.pgpass (or the file"
	               " PGPASSFILE names), in a service file (PGSERVICE), or in"
	               " PGPASSWORD, or give the whole string in STATEFS_DB");
}

/* Other hosts hold a PostgreSQL store open: it is never rekeyed in
 * place. */
static int pg_rekey(const char *db, const sfs_key *old_key,
                    const sfs_key *new_key, sfs_progress_fn progress,
                    void *ctx)
{
	(void)db, (void)old_key, (void)new_key, (void)progress, (void)ctx;
	return sfs_err(SFS_UNSUPPORTED, "a PostgreSQL store cannot be rekeyed"
	               " in place (other hosts hold it open): export it with"
	               " the old key and import it with the new one into a new"
	               " schema (statectl --db '...schema=new' init, then"
	               " statectl export | statectl --db '...schema=new'"
	               " import), see docs/postgres.md");
}

/* A commit is durable when the server says so, unless the server runs
 * with synchronous_commit off: then one synchronous commit of a
 * transaction that has an id flushes the WAL up to it, and every commit
 * before it with it. */
static int sync_body(pgc *c)
{
	int st = pgb_begin(c);

	if (st == SFS_OK)
		st = pgb_exec_text(c, "SET LOCAL synchronous_commit = on;"
		                   " SELECT pg_current_xact_id()", 0, "syncing");
	return st == SFS_OK ? pgb_commit(c) : st;
}

static int pgb_sync(sfs_backend *b)
{
	pgc *c;
	int st;

	if (b->readonly)
		return SFS_OK; /* it committed nothing */
	PGB_TRY(b, c, st, PGB_IDEMPOTENT) {
		st = sync_body(c);
	}
	return st;
}

const sfs_backend_ops pgb_ops = {
	.name = "postgresql",
	.concurrent = 1,
	.accepts = pgb_is_db,
	.open = pgb_open,
	.probe = pg_probe_kind,
	.display = pgb_name,
	.given = pg_given,
	.rekey = pg_rekey,
	.close = pgb_close,
	.fork_hold = pgb_fork_hold,
	.sync = pgb_sync,
	.version = pgb_version,
	.kv_put_many = pgb_kv_put_many,
	.kv_get = pgb_kv_get,
	.kv_get_many = pgb_kv_get_many,
	.kv_stat = pgb_kv_stat,
	.kv_delete = pgb_kv_delete,
	.kv_set_mtime = pgb_kv_set_mtime,
	.kv_edit = pgb_kv_edit,
	.kv_read = pgb_kv_read,
	.kv_scan = pgb_kv_scan,
	.kv_delete_range = pgb_kv_delete_range,
	.kv_drain = pgb_kv_drain,
	.kv_rename = pgb_kv_rename,
	.dir_list = pgb_dir_list,
	.dir_exists = pgb_dir_exists,
	.dir_create = pgb_dir_create,
	.dir_remove = pgb_dir_remove,
	.dir_rename = pgb_dir_rename,
	.counter_get = pgb_counter_get,
	.counter_add = pgb_counter_add,
	.counter_set = pgb_counter_set,
	.counter_delete = pgb_counter_delete,
	.counter_rename = pgb_counter_rename,
	.counter_scan = pgb_counter_scan,
	.log_append = pgb_log_append,
	.log_scan = pgb_log_scan,
	.log_get = pgb_log_get,
	.log_stat = pgb_log_stat,
	.log_delete = pgb_log_delete,
	.log_clear = pgb_log_clear,
	.queue_push = pgb_queue_push,
	.queue_pop = pgb_queue_pop,
	.item_count = pgb_item_count,
	.item_scan = pgb_item_scan,
	.item_get = pgb_item_get,
	.item_stat = pgb_item_stat,
	.item_delete = pgb_item_delete,
	.item_clear = pgb_item_clear,
	.claim = pgb_claim,
	.claim_item = pgb_claim_item,
	.kv_claim = pgb_kv_claim,
	.claim_items = pgb_claim_items,
	.claim_heartbeat = pgb_claim_heartbeat,
	.claim_settle = pgb_claim_settle,
	.item_settle = pgb_item_settle,
	.item_heartbeat = pgb_item_heartbeat,
	.item_requeue = pgb_item_requeue,
	.policy_set = pgb_policy_set,
	.policy_get = pgb_policy_get,
	.queue_gc = pgb_queue_gc,
	.exec_clear = pgb_exec_clear,
	.checkpoint = pgb_checkpoint,
	.restore = pgb_restore,
	.info = pgb_info,
	.stats = pgb_stats,
	.flush_counts = pgb_flush_counts,
	.verify = pgb_verify,
	.export_rows = pgb_export,
	.import_rows = pgb_import_rows,
};
