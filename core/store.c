/*
 * store.c - the public handle: the choice of backend, open, close, sync,
 * version, the whole-store operations (checkpoint, restore, info, verify,
 * rekey, export, import), and the argument checks every public entry point
 * shares.
 *
 * This layer knows no database: it checks arguments, picks the backend by
 * the store's name (the table below), takes the handle's lock and calls the
 * backend's ops table (backend_i.h). The rules that find a store and its
 * key are config.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_i.h"

/* --- argument checks ---------------------------------------------------- */

int chk_name(sfs_slice n, const char *what)
{
	if (!n.ptr)
		return sfs_err(SFS_INVALID, "%s is NULL", what);
	return SFS_OK;
}

int chk_new_name(sfs_slice n, const char *what)
{
	CHECK(chk_name(n, what));
	if (n.len > SFS_MAX_NAME)
		return sfs_err(SFS_TOOBIG, "%s is %zu bytes, more than the %u a"
		               " name statefs writes may have", what, n.len,
		               SFS_MAX_NAME);
	return SFS_OK;
}

int chk_policy(int64_t ttl_ms, int64_t max_deliveries)
{
	if (ttl_ms < 0 || max_deliveries < 0)
		return sfs_err(SFS_INVALID, "a negative time-to-live or"
		               " delivery limit");
	if (ttl_ms > MAX_LEASE_MS)
		return sfs_err(SFS_INVALID, "time-to-live of %lld ms is out of"
		               " range", (long long)ttl_ms);
	if (max_deliveries > SFS_DELIVERIES_MAX)
		return sfs_err(SFS_INVALID, "a delivery limit of %lld is more"
		               " than the %lld deliveries an item can count"
		               " (0: no limit)", (long long)max_deliveries,
		               (long long)SFS_DELIVERIES_MAX);
	return SFS_OK;
}

int chk_key3(sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	return chk_name(key, "key");
}

int chk_ns2(sfs_slice scope, sfs_slice ns)
{
	CHECK(chk_name(scope, "scope"));
	return chk_name(ns, "namespace");
}

int chk_new_key3(sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	CHECK(chk_new_name(scope, "scope"));
	CHECK(chk_new_name(ns, "namespace"));
	return chk_new_name(key, "key");
}

int chk_new_ns2(sfs_slice scope, sfs_slice ns)
{
	CHECK(chk_new_name(scope, "scope"));
	return chk_new_name(ns, "namespace");
}

int chk_opt_name(sfs_slice n, const char *what)
{
	if (!n.ptr) {
		if (n.len)
			return sfs_err(SFS_INVALID, "%s has a length but no bytes",
			               what);
		return SFS_OK;
	}
	return chk_name(n, what);
}

int chk_value(const sfs_store *s, sfs_slice v, const char *what)
{
	if (!v.ptr)
		return sfs_err(SFS_INVALID, "%s is NULL", what);
	if (v.len > s->max_value)
		return sfs_err(SFS_TOOBIG, "%s is %zu bytes, more than the"
		               " store's limit of %llu", what, v.len,
		               (unsigned long long)s->max_value);
	return SFS_OK;
}

int chk_pairs(const sfs_store *s, const sfs_slice *keys,
              const sfs_slice *values, size_t n)
{
	if (n && (!keys || !values))
		return sfs_err(SFS_INVALID, "keys or values is NULL");
	for (size_t i = 0; i < n; i++) {
		CHECK(chk_new_name(keys[i], "key"));
		CHECK(chk_value(s, values[i], "value"));
	}
	return SFS_OK;
}

/* This process's id, kept by the fork handlers below (a getpid on every
 * call would be a system call on every call). A child made without them
 * (a raw clone) keeps its parent's: getpid says then. */
static pid_t proc_pid;

int chk_store(const sfs_store *s)
{
	if (!s)
		return sfs_err(SFS_INVALID, "the store handle is NULL");
	/* Inherited across fork (below): its connection locks nothing here,
	 * so its commits could be lost at another process's close; and
	 * once let go of it has none. */
	if (s->pid != __atomic_load_n(&proc_pid, __ATOMIC_RELAXED) &&
	    s->pid != getpid())
		return sfs_err(SFS_INVALID, "%s: the handle was opened by "
		               "process %d, and a child after fork() cannot "
		               "use it (open one of its own)", s->path,
		               (int)s->pid);
	return SFS_OK;
}

int chk_writable(const sfs_store *s)
{
	CHECK(chk_store(s));
	if (s->flags & SFS_OPEN_READONLY)
		return sfs_err(SFS_READONLY, "%s was opened read-only", s->path);
	return SFS_OK;
}

/* A family's name in error details: what a user calls it, as statectl's
 * export does ("queue"), never its number. */
static const char *fam_name(sfs_family fam)
{
	static const char *const names[] = {
		[SFS_FAM_KV] = "key/value", [SFS_FAM_COUNTER] = "counter",
		[SFS_FAM_LOG] = "log", [SFS_FAM_QUEUE] = "queue",
		[SFS_FAM_DIR] = "directory", [SFS_FAM_CLAIM] = "claim",
		[SFS_FAM_INFLIGHT] = "in-flight item",
		[SFS_FAM_DEAD] = "dead letter", [SFS_FAM_POLICY] = "queue policy",
		[SFS_FAM_SEQ] = "sequence",
	};

	if ((int)fam < 0 || (size_t)fam >= sizeof(names) / sizeof(names[0]) ||
	    !names[fam])
		return NULL;
	return names[fam];
}

int chk_family(sfs_family fam, sfs_slice ns)
{
	if (fam < SFS_FAM_KV || fam > SFS_FAM_QUEUE) {
		const char *name = fam_name(fam);
		return name ? sfs_err(SFS_INVALID, "the %s family has no scopes "
		                      "(key/value, counter, log and queue do)",
		                      name)
		            : sfs_err(SFS_INVALID, "unknown family %d", (int)fam);
	}
	if (fam == SFS_FAM_QUEUE && ns.ptr)
		return sfs_err(SFS_INVALID, "queues have no namespaces");
	return chk_opt_name(ns, "namespace");
}

int chk_state(sfs_item_state st)
{
	if (st < SFS_ITEM_PENDING || st > SFS_ITEM_DEAD)
		return sfs_err(SFS_INVALID, "unknown item state %d", (int)st);
	return SFS_OK;
}

int chk_lease(const sfs_store *s, int64_t lease_ms, int64_t *ns)
{
	if (lease_ms < 0 || lease_ms > MAX_LEASE_MS)
		return sfs_err(SFS_INVALID, "lease of %lld ms is out of range",
		               (long long)lease_ms);
	*ns = (lease_ms ? lease_ms : s->lease_ms) * 1000000LL;
	return SFS_OK;
}

int chk_outcome(sfs_outcome o)
{
	if (o < SFS_OUTCOME_DONE || o > SFS_OUTCOME_RELEASE)
		return sfs_err(SFS_INVALID, "unknown outcome %d", (int)o);
	return SFS_OK;
}

int chk_out(const void *p, const char *what)
{
	return p ? SFS_OK : sfs_err(SFS_INVALID, "%s is NULL", what);
}

int chk_scan_opts(const sfs_scan_opts *in, sfs_scan_opts *o)
{
	if (!in) {
		memset(o, 0, sizeof(*o));
		return SFS_OK;
	}
	CHECK(chk_opt_name(in->start, "the start bound"));
	CHECK(chk_opt_name(in->end, "the end bound"));
	*o = *in;
	return SFS_OK;
}

/* --- group commit -------------------------------------------------------- */

/*
 * Writes from many threads (a mount's FLUSHes of different files, pushes,
 * counter adds) share a transaction and its commit: one WAL append of the
 * pages they changed, one round of locks, instead of one per write.
 *
 * A writer takes the lock as any call does, opening a group if none is
 * open, and makes its change in the group's transaction (the backend gives
 * it a savepoint of its own, so a failure undoes only its own change and it
 * returns its error at once). If other writers are waiting for the lock by
 * then, it leaves its change uncommitted and waits; the last writer of the
 * group, the one that finds no writer waiting (or the GROUP_MAX-th), commits
 * for all and wakes them, and each returns the commit's status. So a writer
 * is answered only after its change is committed, as durable as a commit
 * of its own; a lone writer commits at once, as before. Any other call
 * taking the lock ends the open group first (store_lock), so nothing reads
 * or writes beside a change that is not committed: it lets the writers
 * already lined up finish the group (a mount's LOOKUPs would otherwise cut
 * every group short), then commits it if it is still open.
 *
 * Held writes (sfs_store_hold) are the same groups without the waiting: a
 * thread that holds leaves its change in the open group and returns at
 * once; it registers on the group's list of holders, and whoever ends the
 * group (a writer finding nobody behind it, any other call, the holder's
 * own sfs_store_commit) records the commit's status there for the
 * holder's next sfs_store_commit. A held write that is the last of the
 * writers lined up wakes whoever waits for that: writers of other threads
 * waiting for the group's commit (it commits the group) and calls waiting
 * to end it (they end it); none waits for the holder's commit. Only the
 * holder's one-statement reads (store_lock_peek) run inside the open
 * group.
 *
 * Only a backend serialised by the handle's lock has groups (SQLite: one
 * connection, one transaction at a time). A concurrent backend
 * (PostgreSQL: a connection per call from a pool) takes no lock here and
 * each of its writes commits on its own, as its threads run at once.
 */
#define GROUP_MAX 64

/* A writer waiting for its group's commit (group_wait). */
struct group_waiter {
	struct group_waiter *next;
	int done, status;
	char detail[256];
};

/* A thread's held writes (sfs_store_hold): on s->g_holders while some are
 * in the open group. member, status and detail are written under s->mu by
 * whoever ends the group; the rest is the thread's own. */
struct group_holder {
	struct group_holder *next;
	sfs_store *s;       /* the store it holds on, or NULL */
	uint64_t serial;    /* its serial: s may be closed, and its memory
	                       another handle's */
	int on;             /* sfs_store_hold(s, 1) in effect */
	int pending;        /* held writes since its last sfs_store_commit */
	int member;         /* on s->g_holders */
	int status;         /* the first failed commit of its writes */
	char detail[256];
};
static __thread struct group_holder holder;

/* Whether the calling thread's hold names s (not a closed handle whose
 * memory s got). */
static int holder_is(const sfs_store *s)
{
	return holder.s == s && holder.serial == s->serial;
}

/* Whether the calling thread's writes on s are held. */
static int holding(const sfs_store *s)
{
	return holder.on && holder_is(s);
}

int group_close(sfs_store *s)
{
	int r = s->ops->group_end(s->be);
	const char *detail = r == SFS_OK ? "" : sfs_errdetail();

	for (struct group_waiter *w = s->g_waiters; w; w = w->next) {
		w->status = r;
		snprintf(w->detail, sizeof(w->detail), "%s", detail);
		w->done = 1;
	}
	s->g_waiters = NULL;
	for (struct group_holder *h = s->g_holders, *next; h; h = next) {
		next = h->next;
		h->member = 0;
		if (r != SFS_OK && h->status == SFS_OK) {
			h->status = r;
			snprintf(h->detail, sizeof(h->detail), "%s", detail);
		}
	}
	s->g_holders = NULL;
	s->g_open = 0;
	s->g_members = 0;
	s->g_gen++;
	pthread_cond_broadcast(&s->g_done);
	return r;
}

/* Takes the handle's lock, ending the open group first (see above).
 * Returns the status of that group's commit if this call made it (its
 * sentence set), else SFS_OK. */
static int lock_for(sfs_store *s, int peek)
{
	uint64_t gen;

	if (s->ops->concurrent)
		return SFS_OK;
	pthread_mutex_lock(&s->mu);
	if (!s->g_open || (peek && holder.member && holder_is(s)))
		return SFS_OK;
	/* Writers lined up for the lock join the open group before this
	 * call runs, and the last of them commits it; this call waits for
	 * that group only, not for the ones after it. */
	gen = s->g_gen;
	while (s->g_open && s->g_gen == gen &&
	       __atomic_load_n(&s->g_waiting, __ATOMIC_SEQ_CST) > 0)
		pthread_cond_wait(&s->g_done, &s->mu);
	return s->g_open ? group_close(s) : SFS_OK;
}

/* The writers and holders of a group a call ended got the news; the
 * call's own status is its own. */
void store_lock(sfs_store *s)
{
	if (lock_for(s, 0) != SFS_OK)
		sfs_err_clear();
}

void store_lock_peek(sfs_store *s)
{
	if (lock_for(s, 1) != SFS_OK)
		sfs_err_clear();
}

void group_enter(sfs_store *s)
{
	if (s->ops->concurrent)
		return;
	__atomic_add_fetch(&s->g_waiting, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&s->mu);
	__atomic_sub_fetch(&s->g_waiting, 1, __ATOMIC_SEQ_CST);
	if (!s->g_open && s->ops->group_begin) {
		s->ops->group_begin(s->be);
		s->g_open = 1;
	}
	if (s->g_open && holding(s) && s->ops->group_hold)
		s->ops->group_hold(s->be);
}

/* Waits for the end of the open group, which holds this writer's change,
 * and returns its status (with its detail). mu held. A thread waits for
 * one group at a time: its entry in the group's list is its own. */
static int group_wait(sfs_store *s)
{
	static __thread struct group_waiter me;

	memset(&me, 0, sizeof(me));
	me.next = s->g_waiters;
	s->g_waiters = &me;
	while (!me.done)
		pthread_cond_wait(&s->g_done, &s->mu);
	if (me.status != SFS_OK)
		sfs_err(me.status, "%s", me.detail);
	return me.status;
}

int group_leave(sfs_store *s, int status)
{
	if (s->ops->concurrent)
		return status;
	if (!s->g_open) {
		/* a backend without groups, or a group cut short before this
		 * write (group_cut): the write committed itself */
	} else if (status != SFS_OK) {
		/* Its own change is undone. The group ends now, so that no
		 * later writer joins a transaction this failure may have
		 * ended; the others get the commit's status. */
		group_cut(s, status);
	} else if (holding(s)) {
		/* Left in the group for sfs_store_commit (or whoever ends
		 * the group first) to commit. Unless it is the last writer
		 * lined up and others wait for the group's end: they are not
		 * kept waiting for the holder's commit (which could wait for
		 * them). Writers waiting for the commit get it now; a call
		 * waiting for the writers lined up (lock_for) is woken and
		 * ends the group itself. */
		int last = __atomic_load_n(&s->g_waiting,
		                           __ATOMIC_SEQ_CST) == 0;

		holder.pending = 1;
		if (!holder.member) {
			holder.member = 1;
			holder.next = s->g_holders;
			s->g_holders = &holder;
		}
		if (++s->g_members >= GROUP_MAX || (s->g_waiters && last))
			group_close(s);
		else if (last)
			pthread_cond_broadcast(&s->g_done);
	} else if (++s->g_members < GROUP_MAX &&
	           __atomic_load_n(&s->g_waiting, __ATOMIC_SEQ_CST) > 0) {
		/* Its group's end is its answer, even if the next group has
		 * ended too by the time it runs again. */
		status = group_wait(s);
	} else {
		status = group_close(s);
	}
	store_unlock(s);
	return status;
}

void group_cut(sfs_store *s, int status)
{
	char own[256];

	if (!s->g_open)
		return;
	snprintf(own, sizeof(own), "%s", sfs_errdetail());
	group_close(s);
	sfs_err(status, "%s", own);
}

int sfs_store_hold(sfs_store *s, int on)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	if (on && holder.s && !holder_is(s) && holder.pending)
		return sfs_err(SFS_INVALID, "this thread holds writes on another"
		               " store: sfs_store_commit them first");
	if (on || holder_is(s)) {
		holder.s = s;
		holder.serial = s->serial;
		holder.on = on;
	}
	return SFS_OK;
}

int sfs_store_commit(sfs_store *s)
{
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	if (s->ops->concurrent || !holder_is(s) || !holder.pending)
		return SFS_OK;
	pthread_mutex_lock(&s->mu);
	if (holder.member)
		group_close(s);
	r = holder.status;
	if (r != SFS_OK)
		sfs_err(r, "%s", holder.detail);
	holder.status = SFS_OK;
	holder.pending = 0;
	store_unlock(s);
	return r;
}

/* --- the backends ------------------------------------------------------ */

/* In order: the first that accepts a store's name serves it. SQLite, last,
 * accepts every name (a file path). */
static const sfs_backend_ops *const backends[] = {
	&pgb_ops,
	&sqlb_ops,
};

const sfs_backend_ops *be_for(const char *db)
{
	size_t n = sizeof(backends) / sizeof(backends[0]);

	for (size_t i = 0; i + 1 < n; i++)
		if (backends[i]->accepts(db))
			return backends[i];
	return backends[n - 1];
}

/* --- open and close ----------------------------------------------------- */

#define KNOWN_FLAGS (SFS_OPEN_CREATE | SFS_OPEN_READONLY | \
                     SFS_OPEN_PLAINTEXT | SFS_OPEN_EXCL | \
                     SFS_OPEN_NORECOVER | SFS_OPEN_ENV | \
                     SFS_OPEN_WAL_THREAD)

int cfg_check(const sfs_config *c)
{
	if (c->flags & ~(unsigned)KNOWN_FLAGS)
		return sfs_err(SFS_INVALID, "unknown open flags 0x%x",
		               c->flags & ~(unsigned)KNOWN_FLAGS);
	if ((c->flags & SFS_OPEN_EXCL) && !(c->flags & SFS_OPEN_CREATE))
		return sfs_err(SFS_INVALID, "SFS_OPEN_EXCL needs SFS_OPEN_CREATE");
	if ((c->flags & SFS_OPEN_READONLY) && (c->flags & SFS_OPEN_CREATE))
		return sfs_err(SFS_INVALID, "a read-only open cannot create");
	if (c->busy_timeout_ms < 0)
		return sfs_err(SFS_INVALID, "negative busy timeout");
	if (c->lease_ms < 0)
		return sfs_err(SFS_INVALID, "negative lease");
	/* the bound of a claim's own lease (chk_lease): a longer default
	 * would leave int64 as ns, and every claim with lease 0 would be
	 * lost as it was made */
	if (c->lease_ms > MAX_LEASE_MS)
		return sfs_err(SFS_INVALID, "a lease of %lld ms is over 100 "
		               "years", (long long)c->lease_ms);
	return SFS_OK;
}

/* --- handles inherited across fork ---------------------------------------
 *
 * statefs.h says a child after fork() opens a handle of its own. What the
 * parent's handles hold in the child's memory must not meet it: SQLite
 * keeps one record of its process's locks on a file for every connection
 * of the process, so a child's connection that joined the inherited one
 * took no lock, and its commits could be lost (core/sqlite/conn.c,
 * sqlb_forsake). So the process lists its handles with the pid that
 * opened them, and an open in a child first has the handles it inherited
 * let go of what their backend holds (backend_i.h, forsake): each one
 * idle at the fork, which its mutex says (a lock taken by a thread that
 * is not in the child) and the group commit (held writes). One that was
 * in use (or being opened) cannot be let go of: an open on its backend
 * fails with SFS_UNSUPPORTED (for good) rather than open a connection
 * that locks nothing. The list's mutex is taken around fork
 * (pthread_atfork), so the child's copy is whole. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static sfs_store *live;               /* guarded by live_mu */
static pthread_once_t live_once = PTHREAD_ONCE_INIT;

static void live_lock(void)
{
	pthread_mutex_lock(&live_mu);
}

static void live_unlock(void)
{
	pthread_mutex_unlock(&live_mu);
}

/* Around fork: the list whole, and no handle's own thread inside the
 * library (backend_i.h, fork_hold). */
static void fork_prepare(void)
{
	pid_t me = getpid();

	live_lock();
	for (sfs_store *s = live; s; s = s->live_next)
		if (s->opened && s->pid == me && s->ops->fork_hold) {
			s->ops->fork_hold(s->be, 1);
			s->fork_held = 1;
		}
}

static void fork_done(void)
{
	for (sfs_store *s = live; s; s = s->live_next)
		if (s->fork_held) {
			s->fork_held = 0;
			s->ops->fork_hold(s->be, 0);
		}
	live_unlock();
}

static void fork_child(void)
{
	__atomic_store_n(&proc_pid, getpid(), __ATOMIC_RELAXED);
	fork_done();
}

static void live_watch(void)
{
	__atomic_store_n(&proc_pid, getpid(), __ATOMIC_RELAXED);
	pthread_atfork(fork_prepare, fork_done, fork_child);
}

/* Lets go of the handles this process inherited (above). SFS_UNSUPPORTED
 * when one of backend ops (NULL: none) could not be: for good, since
 * nothing in this process will ever end the call it was in. */
static int forsake_inherited(const sfs_backend_ops *ops)
{
	pid_t me = getpid();
	int status = SFS_OK;

	pthread_once(&live_once, live_watch);
	live_lock();
	for (sfs_store **pp = &live; *pp;) {
		sfs_store *s = *pp;
		int r = SFS_BUSY;

		if (s->pid == me || !s->ops->forsake) {
			pp = &s->live_next;
			continue;
		}
		if (s->be && pthread_mutex_trylock(&s->mu) == 0) {
			if (!s->g_open && !s->g_holders)
				r = s->ops->forsake(s->be);
			pthread_mutex_unlock(&s->mu);
		}
		if (r == SFS_OK) {
			s->forsaken = 1;
			*pp = s->live_next;
			continue;
		}
		/* Not SFS_BUSY, which says "retry": it stays in use here for
		 * as long as this process lives. */
		if (s->ops == ops && status == SFS_OK)
			status = sfs_err(SFS_UNSUPPORTED, "%s was in use (a "
			                 "call under way, or writes held) when "
			                 "process %d forked this one; no store of "
			                 "its kind can be opened safely in this "
			                 "process, now or later (fork when no call"
			                 " is under way and no writes are held, or"
			                 " exec)", s->path, (int)s->pid);
		pp = &s->live_next;
	}
	live_unlock();
	return status;
}

static void live_add(sfs_store *s)
{
	s->pid = getpid();
	live_lock();
	s->live_next = live;
	live = s;
	live_unlock();
}

static void live_remove(sfs_store *s)
{
	live_lock();
	for (sfs_store **pp = &live; *pp; pp = &(*pp)->live_next)
		if (*pp == s) {
			*pp = s->live_next;
			break;
		}
	live_unlock();
}

/* The last serial a handle got (sfs_store.serial). */
static uint64_t serials;

/* Opens the backend the plan's store needs and makes the handle. */
static int open_plan(const sfs_config *c, const cfg_plan *p, sfs_store **out)
{
	sfs_backend_cfg bc;
	sfs_store *s = calloc(1, sizeof(*s));
	int status;

	if (!s)
		return sfs_err(SFS_NOMEM, "allocating a store handle");
	s->ops = be_for(p->db);
	status = forsake_inherited(s->ops);
	if (status != SFS_OK) {
		free(s);
		return status;
	}
	/* The name messages and sfs_info show: never a password. */
	if (s->ops->display) {
		status = s->ops->display(p->db, &s->path);
		if (status != SFS_OK) {
			free(s);
			return status;
		}
	} else if (!(s->path = strdup(p->db))) {
		free(s);
		return sfs_err(SFS_NOMEM, "copying the store's name");
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->g_done, NULL);
	s->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	s->flags = p->flags;
	s->max_value = c->max_value ? c->max_value : SFS_DEFAULT_MAX_VALUE;
	s->lease_ms = c->lease_ms ? c->lease_ms : 10 * 60 * 1000;
	bc.db = p->db;
	bc.flags = p->flags;
	bc.key = p->key;
	bc.busy_timeout_ms = c->busy_timeout_ms ? c->busy_timeout_ms : 30000;
	bc.max_value = s->max_value;
	live_add(s); /* before its connections: a fork meanwhile sees it */
	status = s->ops->open(&bc, &s->be);
	live_lock();
	s->opened = status == SFS_OK;
	live_unlock();
	if (status != SFS_OK) {
		live_remove(s);
		pthread_cond_destroy(&s->g_done);
		pthread_mutex_destroy(&s->mu);
		free(s->path);
		free(s);
		return status;
	}
	/* Claim recovery at open (docs/claims.md). It takes the write lock
	 * only when a lease has run out or a queue has a time-to-live. A
	 * failure here does not fail the open: every claim call recovers its
	 * queue again before it acts. A store the server or the file's mode
	 * keeps read-only says nothing: no write of any caller can succeed
	 * there, and each open would warn (every statectl command). */
	if (!(p->flags & (SFS_OPEN_READONLY | SFS_OPEN_NORECOVER))) {
		status = s->ops->queue_gc(s->be, SFS_NONE, 1, NULL);
		if (status != SFS_OK && status != SFS_READONLY)
			sfs_log(LOG_WARNING, "%s: claim recovery at open: %s",
			        s->path, sfs_errdetail());
	}
	*out = s;
	return SFS_OK;
}

int sfs_store_open(const sfs_config *cfg, sfs_store **out, char **notice)
{
	cfg_plan p;
	int status;

	sfs_err_clear();
	if (notice)
		*notice = NULL;
	CHECK(chk_out(cfg, "cfg"));
	CHECK(chk_out(out, "out"));
	CHECK(cfg_check(cfg));
	CHECK(cfg_plan_open(cfg, &p, notice));
	status = open_plan(cfg, &p, out);
	cfg_plan_free(&p);
	if (status == SFS_OK) {
		sfs_err_clear();
	} else if (notice && *notice) {
		/* The key file stays (it is valid and may be reused), but the
		 * store was not created: say that instead. */
		free(*notice);
		*notice = NULL;
	}
	return status;
}

void sfs_store_close(sfs_store *s)
{
	if (!s)
		return;
	/* Inherited across fork: let go of first, or left alone when it
	 * was in use at the fork (its close could write to the store and
	 * would wait for threads that are not here). */
	if (!s->forsaken && s->pid != getpid()) {
		(void)forsake_inherited(NULL);
		if (!s->forsaken)
			return;
	}
	if (s->forsaken) {
		/* Its mutex and condition variable as the fork left them:
		 * freed, not destroyed (that could wait for threads that
		 * are not in this process). */
		s->ops->close(s->be);
		free(s->path);
		free(s);
		return;
	}
	live_remove(s);
	if (s->g_open)
		group_close(s);
	if (holder_is(s))
		memset(&holder, 0, sizeof(holder)); /* its hold ends with it */
	s->ops->close(s->be);
	pthread_cond_destroy(&s->g_done);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

int sfs_store_sync(sfs_store *s)
{
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	/* Writes another thread holds are among what it must make last: a
	 * failed commit of them is this call's failure too. */
	r = lock_for(s, 0);
	if (r == SFS_OK)
		r = s->ops->sync(s->be);
	store_unlock(s);
	return r;
}

int sfs_store_exists(const char *db)
{
	const sfs_backend_ops *ops;
	be_kind kind = BE_KIND_NEW;
	char *name;
	int r;

	sfs_err_clear();
	if (!db || !*db)
		return sfs_err(SFS_INVALID, "no store named");
	if (strcmp(db, ":memory:") == 0)
		return SFS_OK;
	ops = be_for(db);
	CHECK(ops->probe(db, &kind));
	if (kind != BE_KIND_NEW)
		return SFS_OK;
	CHECK(sfs_store_name(db, &name));
	r = sfs_err(SFS_NOTFOUND, "no store at %s", name);
	free(name);
	return r;
}

int sfs_store_name(const char *db, char **out)
{
	const sfs_backend_ops *ops;

	sfs_err_clear();
	if (!db || !out)
		return sfs_err(SFS_INVALID, "sfs_store_name: NULL argument");
	ops = be_for(db);
	if (ops->display)
		return ops->display(db, out);
	*out = strdup(db);
	return *out ? SFS_OK : sfs_err(SFS_NOMEM, "out of memory");
}

int sfs_store_concurrent(const sfs_store *s)
{
	return s && s->ops->concurrent;
}

int sfs_store_version(sfs_store *s, uint64_t *out)
{
	uint64_t v = 0;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	store_lock(s);
	r = s->ops->version(s->be, &v);
	store_unlock(s);
	if (r == SFS_OK)
		*out = v;
	return r;
}

/* --- whole-store operations --------------------------------------------- */

int sfs_checkpoint(sfs_store *s, const char *path, sfs_progress_fn progress,
                   void *ctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	if (!path || !*path)
		return sfs_err(SFS_INVALID, "no checkpoint path");
	CALL(s, s->ops->checkpoint(s->be, path, progress, ctx));
}

int sfs_restore(sfs_store *s, const char *path, sfs_progress_fn progress,
                void *ctx)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	if (!path || !*path)
		return sfs_err(SFS_INVALID, "no checkpoint path");
	CALL(s, s->ops->restore(s->be, path, progress, ctx));
}

int sfs_store_info(sfs_store *s, sfs_info *out)
{
	sfs_info info;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	memset(&info, 0, sizeof(info));
	store_lock(s);
	r = s->ops->info(s->be, &info);
	store_unlock(s);
	if (r == SFS_OK) {
		info.path = s->path;
		info.backend = s->ops->name;
		*out = info;
	}
	return r;
}

int sfs_store_stats(sfs_store *s, sfs_stats **out)
{
	sfs_stats *st;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out(out, "out"));
	st = calloc(1, sizeof(*st));
	if (!st)
		return sfs_err(SFS_NOMEM, "allocating the figures");
	store_lock(s);
	r = s->ops->stats(s->be, st);
	store_unlock(s);
	if (r != SFS_OK) {
		sfs_stats_free(st);
		return r;
	}
	st->info.path = s->path;
	st->info.backend = s->ops->name;
	*out = st;
	return SFS_OK;
}

int sfs_store_flush_counts(sfs_store *s)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CALL(s, s->ops->flush_counts(s->be));
}

void sfs_stats_free(sfs_stats *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nqueues; i++)
		sfs_buf_free(&st->queues[i].queue);
	for (size_t i = 0; i < st->nscopes; i++)
		sfs_buf_free(&st->scopes[i].scope);
	free(st->queues);
	free(st->scopes);
	free(st);
}

int sfs_store_verify(sfs_store *s, sfs_progress_fn progress, void *ctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CALL(s, s->ops->verify(s->be, progress, ctx));
}

int sfs_rekey(const char *db, const sfs_key *old_key, const sfs_key *new_key,
              sfs_progress_fn progress, void *ctx)
{
	sfs_err_clear();
	if (!db || !*db || strcmp(db, ":memory:") == 0)
		return sfs_err(SFS_INVALID, "sfs_rekey needs the name of a"
		               " store");
	if (!old_key && !new_key)
		return sfs_err(SFS_INVALID, "sfs_rekey: no key on either side");
	return be_for(db)->rekey(db, old_key, new_key, progress, ctx);
}

int sfs_export(sfs_store *s, int (*fn)(const sfs_row *row, void *ctx),
               void *ctx, sfs_progress_fn progress, void *pctx)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_out((const void *)fn, "fn"));
	CALL(s, s->ops->export_rows(s->be, fn, ctx, progress, pctx));
}

static int chk_row(const sfs_store *s, const sfs_row *row)
{
	/* entries and items keep their ids; claims too. Ids past SFS_ID_MAX
	 * would leave the engine no room above them (statefs.h). */
	int has_id = row->family == SFS_FAM_LOG ||
	             row->family == SFS_FAM_QUEUE ||
	             row->family == SFS_FAM_CLAIM ||
	             row->family == SFS_FAM_INFLIGHT ||
	             row->family == SFS_FAM_DEAD ||
	             row->family == SFS_FAM_SEQ;

	if (has_id && row->id <= 0)
		return sfs_err(SFS_INVALID, "%s rows need an id > 0",
		               fam_name(row->family));
	if (has_id && row->id > SFS_ID_MAX)
		return sfs_err(SFS_INVALID, "a %s row's id %lld is past the"
		               " largest id a store issues (%lld)",
		               fam_name(row->family), (long long)row->id,
		               (long long)SFS_ID_MAX);
	if (row->family == SFS_FAM_INFLIGHT && row->claim_id > SFS_ID_MAX)
		return sfs_err(SFS_INVALID, "an in-flight row's claim id %lld is"
		               " past the largest id a store issues (%lld)",
		               (long long)row->claim_id, (long long)SFS_ID_MAX);
	/* a claim adds one to the count: past the bound it could overflow */
	if ((row->family == SFS_FAM_QUEUE || row->family == SFS_FAM_INFLIGHT ||
	     row->family == SFS_FAM_DEAD) && row->deliveries > SFS_DELIVERIES_MAX)
		return sfs_err(SFS_INVALID, "a %s row's delivery count %lld is"
		               " past the largest a store keeps (%lld)",
		               fam_name(row->family), (long long)row->deliveries,
		               (long long)SFS_DELIVERIES_MAX);
	switch (row->family) {
	case SFS_FAM_KV:
	case SFS_FAM_COUNTER:
	case SFS_FAM_LOG:
		CHECK(chk_key3(row->scope, row->ns, row->key));
		if (row->family != SFS_FAM_COUNTER)
			CHECK(chk_value(s, row->value, "value"));
		return SFS_OK;
	case SFS_FAM_QUEUE:
		CHECK(chk_name(row->scope, "queue"));
		if (row->deliveries < 0)
			return sfs_err(SFS_INVALID, "a negative delivery count");
		return chk_value(s, row->value, "item");
	case SFS_FAM_DIR:
		CHECK(chk_name(row->scope, "scope"));
		/* (chk_family's sentence is about scopes, not this row) */
		if (row->dir_family < SFS_FAM_KV || row->dir_family > SFS_FAM_QUEUE)
			return sfs_err(SFS_INVALID, "a directory row's family is %d,"
			               " not key/value (1), counter (2), log (3) or"
			               " queue (4)", (int)row->dir_family);
		return chk_family(row->dir_family, row->ns);
	case SFS_FAM_CLAIM:
		return chk_name(row->scope, "queue");
	case SFS_FAM_INFLIGHT:
	case SFS_FAM_DEAD:
		CHECK(chk_name(row->scope, "queue"));
		CHECK(chk_value(s, row->value, "item"));
		if (row->family == SFS_FAM_DEAD)
			CHECK(chk_name(row->reason, "reason"));
		else if (row->claim_id <= 0)
			return sfs_err(SFS_INVALID, "an in-flight row needs its"
			               " claim's id");
		if (row->deliveries < 0)
			return sfs_err(SFS_INVALID, "a negative delivery count");
		return SFS_OK;
	case SFS_FAM_POLICY:
		CHECK(chk_name(row->scope, "queue"));
		return chk_policy(row->ttl_ms, row->max_deliveries);
	case SFS_FAM_SEQ:
		for (size_t i = 0; i < 3; i++) {
			static const char *const spaces[] = { "log", "queue",
			                                      "claim" };

			if (row->scope.ptr && row->scope.len == strlen(spaces[i]) &&
			    !memcmp(row->scope.ptr, spaces[i], row->scope.len))
				return SFS_OK;
		}
		return sfs_err(SFS_INVALID, "a sequence row names \"log\","
		               " \"queue\" or \"claim\"");
	}
	return sfs_err(SFS_INVALID, "unknown family %d", (int)row->family);
}

/* The caller's row source, each row checked before the backend sees it. */
struct import_src {
	const sfs_store *s;
	int (*next)(sfs_row *row, void *ctx);
	void *ctx;
};

static int checked_next(sfs_row *row, void *arg)
{
	struct import_src *src = arg;
	int r;

	memset(row, 0, sizeof(*row));
	sfs_err_clear();
	r = src->next(row, src->ctx);
	return r == SFS_OK ? chk_row(src->s, row) : r;
}

int sfs_import(sfs_store *s, int (*next)(sfs_row *row, void *ctx), void *ctx)
{
	struct import_src src = { s, next, ctx };

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_out((const void *)next, "next"));
	CALL(s, s->ops->import_rows(s->be, checked_next, &src));
}
