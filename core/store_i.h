/*
 * store_i.h - the store handle and the argument checks every public entry
 * point shares (private).
 *
 * A public function checks its arguments here, takes s->mu, calls one entry
 * of the backend's ops table and releases the lock. The lock makes one handle
 * usable from many threads; it is the only lock above the backends, so
 * there is no lock order to keep. Callbacks (export, progress) run under
 * it, which is why statefs.h forbids them to call back into the same
 * store. A concurrent backend (PostgreSQL) is called without it: it has a
 * connection per call and locks of its own.
 */
#ifndef STATEFS_STORE_I_H
#define STATEFS_STORE_I_H

#include <pthread.h>
#include <sys/types.h>

#include "backend_i.h"
#include "err_i.h"

struct sfs_store {
	pthread_mutex_t mu;
	const sfs_backend_ops *ops;  /* immutable after open */
	sfs_backend *be;             /* guarded by mu */
	char *path;                  /* immutable after open */
	unsigned flags;              /* SFS_OPEN_*, immutable */
	uint64_t max_value;          /* immutable */
	int64_t lease_ms;            /* immutable; for claims */
	/* Group commit (store.c): guarded by mu, but g_waiting */
	int g_waiting;               /* writers waiting for mu (atomic) */
	int g_open;                  /* a group is open on be */
	int g_members;               /* writes that joined it */
	uint64_t g_gen;              /* moves when a group ends */
	struct group_waiter *g_waiters; /* writers waiting for its end */
	struct group_holder *g_holders; /* threads with held writes in it */
	pthread_cond_t g_done;       /* a group ended */
	uint64_t serial;             /* this handle among every one the
	                                process opened (immutable): a
	                                thread's hold names its handle by
	                                it too, not by its address alone,
	                                which a later handle may get */
	/* Handles inherited across fork (store.c): guarded by live_mu */
	pid_t pid;                   /* the process that opened it */
	struct sfs_store *live_next; /* on the process's list of handles */
	int opened;                  /* its backend is open (live_mu) */
	int fork_held;               /* its backend held for a fork */
	int forsaken;                /* inherited and let go of: only
	                                sfs_store_close frees it */
};

/* What sfs_store_open opens, once the rules of config.c have run. */
typedef struct cfg_plan {
	char *db;                    /* malloc'd */
	const sfs_key *key;          /* NULL: plaintext or memory */
	sfs_key *owned;              /* the key, when the rules loaded it */
	unsigned flags;              /* SFS_OPEN_*, PLAINTEXT added for memory */
	int memory;                  /* db is ":memory:" */
} cfg_plan;

/* What sfs_store_open refuses in cfg itself as SFS_INVALID (store.c):
 * unknown or contradictory flags, a negative time, a lease over 100
 * years. sfs_config_resolve refuses the same. */
int cfg_check(const sfs_config *cfg);

/* Applies the open rules to cfg (config.c): the store and the key, the
 * first run's key file (and its *notice), the sentences for a missing
 * key. On SFS_OK *p is the caller's to release with cfg_plan_free. */
int cfg_plan_open(const sfs_config *cfg, cfg_plan *p, char **notice);
void cfg_plan_free(cfg_plan *p);
/* The key by the tools' rules with nothing given (STATEFS_KEY, else
 * STATEFS_KEY_FILE, else the default key file), for a process that must
 * have one and may not create one (the SQLite extension, sqlite/ext.c).
 * No key is SFS_NOKEY, a named key file that is missing SFS_NOTFOUND,
 * each with the sentence sfs_store_open gives. */
int cfg_env_key(sfs_key **out);

/* Ends the open group commit, if any: commits the writes in it and answers
 * the writers waiting for that (store.c). mu held. */
int group_close(sfs_store *s);

/* Takes the lock for anything but a write of a group: an open group ends
 * first, so no call ever sees a write that is not committed yet (store.c
 * says when it waits for that and when it commits it itself). A concurrent
 * backend takes no lock here, and has no groups. */
void store_lock(sfs_store *s);
/* store_lock for a read of one statement, which can run inside the open
 * transaction: a thread with held writes in the open group (sfs_store_hold)
 * reads beside them, and they stay uncommitted; any other caller ends the
 * group as store_lock does. */
void store_lock_peek(sfs_store *s);

/* Ends a call: the backend settles what the call left (settle may be
 * NULL), then the lock goes. */
static inline void store_unlock(sfs_store *s)
{
	if (s->ops->settle)
		s->ops->settle(s->be);
	if (!s->ops->concurrent)
		pthread_mutex_unlock(&s->mu);
}

/* Returns expr's status from the calling function unless it is SFS_OK. */
#define CHECK(expr)                                                        \
	do {                                                               \
		int c_ = (expr);                                           \
		if (c_ != SFS_OK)                                          \
			return c_;                                         \
	} while (0)

/* Calls one backend entry under the handle's lock, taken by lock
 * (store_lock or store_lock_peek), and returns its status from the calling
 * function. */
#define CALL_LOCKED(lock, s, expr)                                         \
	do {                                                               \
		int r_;                                                    \
		lock(s);                                                   \
		r_ = (expr);                                               \
		store_unlock(s);                                           \
		return r_;                                                 \
	} while (0)
#define CALL(s, expr) CALL_LOCKED(store_lock, s, expr)
/* CALL for a one-statement read (store_lock_peek). */
#define CALL_PEEK(s, expr) CALL_LOCKED(store_lock_peek, s, expr)

/* CALL for a delete: one that failed on a full disk is tried once more
 * after the backend gave back its reserve, so that deleting is how a user
 * recovers from a full disk (docs/engine.md, "A full disk"). */
#define CALL_DELETE(s, expr)                                               \
	do {                                                               \
		int r_;                                                    \
		store_lock(s);                                             \
		r_ = (expr);                                               \
		if (r_ == SFS_FULL && (s)->ops->free_reserve &&            \
		    (s)->ops->free_reserve((s)->be) == SFS_OK)             \
			r_ = (expr);                                       \
		store_unlock(s);                                           \
		return r_;                                                 \
	} while (0)

/* A write that may share its commit with the writes of other threads
 * (group commit, store.c): a key/value put, edit or delete, a counter's
 * add, set or delete, a log append, a queue push. expr is the backend call; the
 * calling function returns its status once the write is committed (or
 * failed). Its outputs are only good with SFS_OK. */
#define GROUP_CALL(s, expr)                                                \
	do {                                                               \
		group_enter(s);                                            \
		return group_leave(s, (expr));                             \
	} while (0)
/* The same for a write with one output of type `type`: expr writes it
 * into v_, and *out (out may be NULL) gets it only once the write is
 * committed. */
#define GROUP_CALL_OUT(s, type, out, expr)                                 \
	do {                                                               \
		type v_ = 0;                                               \
		int r_;                                                    \
		group_enter(s);                                            \
		r_ = group_leave(s, (expr));                               \
		if (r_ == SFS_OK && (out))                                 \
			*(out) = v_;                                       \
		return r_;                                                 \
	} while (0)
/* GROUP_CALL for a delete: one that failed on a full disk ends the group
 * (the others' writes are committed), and is tried once more, on its own,
 * after the backend gave back its reserve, as CALL_DELETE does. */
#define GROUP_CALL_DELETE(s, expr)                                         \
	do {                                                               \
		int r_;                                                    \
		group_enter(s);                                            \
		r_ = (expr);                                               \
		if (r_ == SFS_FULL && (s)->ops->free_reserve) {            \
			group_cut(s, r_);                                  \
			if ((s)->ops->free_reserve((s)->be) == SFS_OK)     \
				r_ = (expr);                               \
		}                                                          \
		return group_leave(s, r_);                                 \
	} while (0)
void group_enter(sfs_store *s);
int group_leave(sfs_store *s, int status);
/* Ends the open group (if any) after a write of it failed with status,
 * keeping that failure's detail for the caller. mu held. */
void group_cut(sfs_store *s, int status);

/* Argument checks. Each returns SFS_OK or a status with the detail set;
 * `what` names the argument in the detail ("key", "scope"). */

/* A scope, namespace or key a call reads, lists after, moves away or
 * removes: present, of any length (other programs sharing the store write
 * names longer than SFS_MAX_NAME, and what the store holds stays
 * readable, removable, exportable and importable). */
int chk_name(sfs_slice n, const char *what);
/* The three names of a key/value, counter or log key. */
int chk_key3(sfs_slice scope, sfs_slice ns, sfs_slice key);
/* A scope and namespace. */
int chk_ns2(sfs_slice scope, sfs_slice ns);
/* The same for a name a call writes (a put, add, append, push, the target
 * of a rename, a created directory or policy, an edit that makes the
 * value): at most SFS_MAX_NAME bytes, SFS_TOOBIG beyond. */
int chk_new_name(sfs_slice n, const char *what);
int chk_new_key3(sfs_slice scope, sfs_slice ns, sfs_slice key);
int chk_new_ns2(sfs_slice scope, sfs_slice ns);
/* An optional name (scan bound, `after`): SFS_NONE or a present name. */
int chk_opt_name(sfs_slice n, const char *what);
/* A value: present, at most the store's max_value bytes. */
int chk_value(const sfs_store *s, sfs_slice v, const char *what);
/* n (key, value) pairs; either array may be NULL only when n is 0. */
int chk_pairs(const sfs_store *s, const sfs_slice *keys,
              const sfs_slice *values, size_t n);
/* The handle itself, and for writes, that it is not read-only. */
int chk_store(const sfs_store *s);
int chk_writable(const sfs_store *s);
/* A family that has scopes (not SFS_FAM_DIR); for SFS_FAM_QUEUE, ns must be
 * SFS_NONE. */
int chk_family(sfs_family fam, sfs_slice ns);
/* A queue policy's fields: not negative, a time-to-live up to
 * MAX_LEASE_MS, a delivery limit up to SFS_DELIVERIES_MAX (a count
 * never passes it, so a larger limit would never be reached). */
int chk_policy(int64_t ttl_ms, int64_t max_deliveries);

/* An item state. */
int chk_state(sfs_item_state st);
/* A lease in ms (0: the store's default) as ns, into *ns. */
int chk_lease(const sfs_store *s, int64_t lease_ms, int64_t *ns);
/* An outcome of sfs_outcome. */
int chk_outcome(sfs_outcome o);
/* A required output pointer. */
int chk_out(const void *p, const char *what);

/* Normalises scan options (NULL = everything ascending) into *o. */
int chk_scan_opts(const sfs_scan_opts *in, sfs_scan_opts *o);

#endif /* STATEFS_STORE_I_H */
