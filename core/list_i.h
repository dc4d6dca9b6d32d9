/*
 * list_i.h - building the sfs_list and sfs_buf values the engine returns
 * (private).
 *
 * A list is one allocation: the item array followed by every key and value
 * byte (each NUL-terminated), so sfs_list_free() is one free() and a long
 * listing costs two mallocs however many rows it has. While rows arrive the
 * builder keeps items and bytes in two growing arrays and records offsets;
 * listb_finish() packs them into the final block.
 */
#ifndef STATEFS_LIST_I_H
#define STATEFS_LIST_I_H

#include "statefs.h"

typedef struct listb {
	sfs_item *items;    /* key, value and reason .ptr hold offset+1
	                       (0: NULL) */
	size_t n, cap;
	unsigned char *bytes;
	size_t len, bcap;
	int nomem;          /* an allocation failed: finish returns SFS_NOMEM */
} listb;

#define LISTB_INIT { NULL, 0, 0, NULL, 0, 0, 0 }

/* Appends a zeroed item and returns it (valid until the next push), or NULL
 * on allocation failure (then finish fails). */
sfs_item *listb_push(listb *lb);
/* Copies bytes into the last item's key, value or reason (p may be NULL
 * with n 0: an empty, present string). */
void listb_key(listb *lb, const void *p, size_t n);
void listb_value(listb *lb, const void *p, size_t n);
void listb_reason(listb *lb, const void *p, size_t n);
/* Reserves n bytes (and a NUL) as the last item's value and returns
 * them for the caller to fill, or NULL on allocation failure (then finish
 * fails). Valid until the next listb call. */
void *listb_value_space(listb *lb, size_t n);
/* Packs the list into *out (on SFS_OK) and releases the builder. */
int listb_finish(listb *lb, sfs_list *out);
/* Releases the builder without producing a list. */
void listb_discard(listb *lb);

/* A list of one item without the builder (one malloc, for a hot path):
 * id, and value with st.size, a copy of value[0..n) (NULL when n is 0). */
int list_one(sfs_list *out, int64_t id, const void *value, size_t n);

/* Fills *out with a malloc'd, NUL-terminated copy of p[0..n). p may be NULL
 * when n is 0; out->ptr is never NULL on SFS_OK. */
int buf_copy(sfs_buf *out, const void *p, size_t n);

#endif /* STATEFS_LIST_I_H */
