/*
 * pq.c - loads libpq on first use (pq_i.h says why and how).
 */
#define PQ_LOADER
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "err_i.h"
#include "pq_i.h"

#define PQ_SONAME "libpq.so.5"

static pq_api api;
/* 0: not tried; 1: a thread is loading it (under mu); 2: api is whole;
 * 3: the load failed (why says why) */
static atomic_int state;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char why[320];      /* dlerror() of a failed load */
static pid_t parent;       /* a child's parent, which forked it mid-load */

/* A fork while another thread was inside dlopen leaves the child a copy
 * of the dynamic loader in the middle of its work (the loading thread is
 * not in the child, nor is the lock it held; glibc's fork does not wait
 * for it): a dlopen there crashed (SIGSEGV, "Inconsistency detected by
 * ld.so") or failed on some library's half-bound symbols ("undefined
 * symbol: GSS_C_NT_HOSTBASED_SERVICE"). pthread_once started the load
 * again in such a child. Now the child never loads libpq: its PostgreSQL
 * opens fail with a sentence. (Waiting in the fork's prepare handler for
 * the load to end instead could deadlock: GnuTLS and p11-kit, loaded with
 * libpq, call pthread_atfork as they start, and glibc's fork holds the
 * lock that call takes while it runs the prepare handlers.) */
static void forked_child(void)
{
	/* (the child has one thread: a lock held by another is let go) */
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	mu = fresh;
	if (atomic_load_explicit(&state, memory_order_relaxed) == 1) {
		parent = getppid();
		atomic_store_explicit(&state, 3, memory_order_relaxed);
	}
}

/* (a child forked while this ran runs it again: glibc's pthread_once
 * starts over in a new process; the handler, if registered twice, does
 * the same twice) */
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static void watch(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

static void load(void)
{
	void *h;
	const char *e;

	h = dlopen(PQ_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		goto fail;
	/* (one that is there but lacks a function is older than the
	 * pipeline mode statefs uses: PostgreSQL 14) */
#define PQ_SYM(f) \
	if (!(*(void **)&api.f = dlsym(h, #f))) \
		goto fail;
	PQ_FUNCS(PQ_SYM)
#undef PQ_SYM
	atomic_store_explicit(&state, 2, memory_order_release);
	return;
fail:
	e = dlerror();
	snprintf(why, sizeof(why), "%s (%s)", e ? e : "unknown reason",
	         h ? "statefs needs the libpq of PostgreSQL 14 or later"
	           : "install PostgreSQL's client library");
	if (h)
		dlclose(h);
	atomic_store_explicit(&state, 3, memory_order_release);
}

/* 2 or 3, having loaded it when nobody had tried. */
static int loaded(void)
{
	int s = atomic_load_explicit(&state, memory_order_acquire);

	if (s >= 2)
		return s;
	pthread_once(&watch_once, watch);
	pthread_mutex_lock(&mu);
	if (atomic_load_explicit(&state, memory_order_acquire) == 0) {
		atomic_store_explicit(&state, 1, memory_order_release);
		load();
	}
	pthread_mutex_unlock(&mu);
	return atomic_load_explicit(&state, memory_order_acquire);
}

int pq_load(void)
{
	if (loaded() == 2)
		return SFS_OK;
	if (parent)
		return sfs_err(SFS_UNSUPPORTED, "PostgreSQL stores need libpq, "
		               "and %s could not be loaded: this process was "
		               "forked from process %d while another of its "
		               "threads was loading it, and a load cannot be "
		               "finished or started again here (open a "
		               "PostgreSQL store before forking, or exec)",
		               PQ_SONAME, (int)parent);
	return sfs_err(SFS_UNSUPPORTED, "PostgreSQL stores need libpq, and "
	               "%s could not be loaded: %s", PQ_SONAME, why);
}

const pq_api *pq_get(void)
{
	if (loaded() != 2) {
		fprintf(stderr, "statefs: libpq used before it was loaded, and "
		        "%s cannot be loaded: %s\n", PQ_SONAME,
		        parent ? "forked while it was loading" : why);
		abort();
	}
	return &api;
}
