/*
 * pq.c - loads libpq on first use (pq_i.h says why and how).
 */
#define PQ_LOADER
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "err_i.h"
#include "pq_i.h"

#define PQ_SONAME "libpq.so.5"

static pq_api api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int loaded;  /* 1: api is whole; -1: the load failed */
static char why[256];      /* dlerror() of a failed load */

static void load(void)
{
	void *h = dlopen(PQ_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h)
		goto fail;
#define PQ_SYM(f) \
	if (!(*(void **)&api.f = dlsym(h, #f))) \
		goto fail;
	PQ_FUNCS(PQ_SYM)
#undef PQ_SYM
	atomic_store_explicit(&loaded, 1, memory_order_release);
	return;
fail:
	e = dlerror();
	snprintf(why, sizeof(why), "%s", e ? e : "unknown reason");
	if (h)
		dlclose(h);
	atomic_store_explicit(&loaded, -1, memory_order_release);
}

int pq_load(void)
{
	pthread_once(&once, load);
	if (atomic_load_explicit(&loaded, memory_order_acquire) == 1)
		return SFS_OK;
	return sfs_err(SFS_UNSUPPORTED, "PostgreSQL stores need libpq, and "
	               "%s could not be loaded: %s (install PostgreSQL's client "
	               "library)", PQ_SONAME, why);
}

const pq_api *pq_get(void)
{
	if (atomic_load_explicit(&loaded, memory_order_acquire) == 1)
		return &api;
	pthread_once(&once, load);
	if (atomic_load_explicit(&loaded, memory_order_acquire) != 1) {
		fprintf(stderr, "statefs: libpq used before it was loaded, and "
		        "%s cannot be loaded: %s\n", PQ_SONAME, why);
		abort();
	}
	return &api;
}
