/*
 * claimfx.h - what test_claim.c and test_claimsdk.c share: the queue they
 * use, pushes and assertions on its items in each state.
 */
#ifndef STATEFS_TEST_CLAIMFX_H
#define STATEFS_TEST_CLAIMFX_H

#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define Q S("jobs")

/* Pushes the space-separated words as items; returns the first id. */
static inline int64_t push(sfs_store *s, const char *words)
{
	sfs_slice items[16];
	char *copy = strdup(words), *save = NULL, *w;
	size_t n = 0;
	int64_t first = 0;

	for (w = strtok_r(copy, " ", &save); w && n < 16;
	     w = strtok_r(NULL, " ", &save))
		items[n++] = S(w);
	OK(sfs_queue_push(s, Q, items, n, &first));
	free(copy);
	return first;
}

/* Asserts the values of a list, in order. */
static inline void values_are(const sfs_list *l, const char *words)
{
	char *copy = strdup(words), *save = NULL, *w;
	size_t i = 0;

	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (i >= l->n)
			fail_msg("list has %zu items, want more (%s)", l->n, words);
		if (l->items[i].value.len != strlen(w) ||
		    memcmp(l->items[i].value.ptr, w, strlen(w)))
			fail_msg("item %zu is '%.*s', want '%s'", i,
			         (int)l->items[i].value.len,
			         (const char *)l->items[i].value.ptr, w);
		i++;
	}
	free(copy);
	if (i != l->n)
		fail_msg("list has %zu items, want %zu (%s)", l->n, i, words);
}

static inline void pending_are(sfs_store *s, const char *words)
{
	sfs_list l;

	OK(sfs_item_scan(s, Q, SFS_ITEM_PENDING, -1, 0, 0, &l));
	values_are(&l, words);
	sfs_list_free(&l);
}

static inline void inflight_are(sfs_store *s, const char *words)
{
	sfs_list l;

	OK(sfs_item_scan(s, Q, SFS_ITEM_INFLIGHT, -1, 0, 0, &l));
	values_are(&l, words);
	sfs_list_free(&l);
}

static inline void dead_are(sfs_store *s, const char *words)
{
	sfs_list l;

	OK(sfs_item_scan(s, Q, SFS_ITEM_DEAD, -1, 0, 0, &l));
	values_are(&l, words);
	sfs_list_free(&l);
}

static inline uint64_t qlen(sfs_store *s)
{
	uint64_t n = 0;

	OK(sfs_item_count(s, Q, SFS_ITEM_PENDING, &n));
	return n;
}

#endif
