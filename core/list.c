/*
 * list.c - returned lists and buffers: the builder of list_i.h and the
 * public sfs_buf_free / sfs_list_free.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err_i.h"
#include "list_i.h"

void sfs_buf_free(sfs_buf *b)
{
	if (!b)
		return;
	free(b->ptr);
	b->ptr = NULL;
	b->len = 0;
}

void sfs_list_free(sfs_list *l)
{
	if (!l)
		return;
	free(l->items); /* the items and all their bytes: one block */
	l->items = NULL;
	l->n = 0;
}

int buf_copy(sfs_buf *out, const void *p, size_t n)
{
	unsigned char *m = malloc(n + 1);

	if (!m)
		return sfs_err(SFS_NOMEM, "allocating %zu bytes", n + 1);
	if (n)
		memcpy(m, p, n);
	m[n] = '\0';
	out->ptr = m;
	out->len = n;
	return SFS_OK;
}

sfs_item *listb_push(listb *lb)
{
	if (lb->nomem)
		return NULL;
	if (lb->n == lb->cap) {
		size_t cap = lb->cap ? lb->cap * 2 : 16;
		sfs_item *it = realloc(lb->items, cap * sizeof(*it));

		if (!it) {
			lb->nomem = 1;
			return NULL;
		}
		lb->items = it;
		lb->cap = cap;
	}
	memset(&lb->items[lb->n], 0, sizeof(lb->items[0]));
	return &lb->items[lb->n++];
}

/* Copies n bytes plus a NUL into the byte array; returns offset+1, or 0 on
 * allocation failure. */
static size_t put_bytes(listb *lb, const void *p, size_t n)
{
	size_t off;

	if (lb->nomem)
		return 0;
	if (lb->bcap - lb->len < n + 1) {
		size_t cap = lb->bcap ? lb->bcap : 256;
		unsigned char *b;

		while (cap - lb->len < n + 1)
			cap *= 2;
		b = realloc(lb->bytes, cap);
		if (!b) {
			lb->nomem = 1;
			return 0;
		}
		lb->bytes = b;
		lb->bcap = cap;
	}
	off = lb->len;
	if (n && p)
		memcpy(lb->bytes + off, p, n);
	lb->bytes[off + n] = '\0';
	lb->len += n + 1;
	return off + 1;
}

/* Points b (a buffer of the last item) at a copy of the bytes. */
static void put_buf(listb *lb, sfs_buf *b, const void *p, size_t n)
{
	size_t off = put_bytes(lb, p, n);

	b->ptr = (void *)(uintptr_t)off;
	b->len = off ? n : 0;
}

void listb_key(listb *lb, const void *p, size_t n)
{
	if (!lb->nomem && lb->n)
		put_buf(lb, &lb->items[lb->n - 1].key, p, n);
}

void listb_value(listb *lb, const void *p, size_t n)
{
	if (!lb->nomem && lb->n)
		put_buf(lb, &lb->items[lb->n - 1].value, p, n);
}

void listb_reason(listb *lb, const void *p, size_t n)
{
	if (!lb->nomem && lb->n)
		put_buf(lb, &lb->items[lb->n - 1].reason, p, n);
}

void *listb_value_space(listb *lb, size_t n)
{
	listb_value(lb, NULL, n);
	if (lb->nomem || lb->n == 0)
		return NULL;
	return lb->bytes + ((uintptr_t)lb->items[lb->n - 1].value.ptr - 1);
}

void listb_discard(listb *lb)
{
	free(lb->items);
	free(lb->bytes);
	memset(lb, 0, sizeof(*lb));
}

static void *rebase(unsigned char *base, void *off)
{
	uintptr_t o = (uintptr_t)off;

	return o ? base + (o - 1) : NULL;
}

int listb_finish(listb *lb, sfs_list *out)
{
	size_t head = lb->n * sizeof(sfs_item);
	unsigned char *block, *bytes;
	sfs_item *items;

	if (lb->nomem) {
		listb_discard(lb);
		return sfs_err(SFS_NOMEM, "building a list");
	}
	if (lb->n == 0) {
		listb_discard(lb);
		out->items = NULL;
		out->n = 0;
		return SFS_OK;
	}
	/* The item array becomes the block (in place when it has the room,
	 * as it mostly has): only the bytes are copied behind it. */
	block = realloc(lb->items, head + lb->len);
	if (!block) {
		listb_discard(lb);
		return sfs_err(SFS_NOMEM, "allocating a list of %zu bytes",
		               head + lb->len);
	}
	lb->items = NULL;
	items = (sfs_item *)block;
	bytes = block + head;
	if (lb->len)
		memcpy(bytes, lb->bytes, lb->len);
	for (size_t i = 0; i < lb->n; i++) {
		items[i].key.ptr = rebase(bytes, items[i].key.ptr);
		items[i].value.ptr = rebase(bytes, items[i].value.ptr);
		items[i].reason.ptr = rebase(bytes, items[i].reason.ptr);
	}
	out->items = items;
	out->n = lb->n;
	listb_discard(lb);
	return SFS_OK;
}

int list_one(sfs_list *out, int64_t id, const void *value, size_t n)
{
	unsigned char *block = malloc(sizeof(sfs_item) + n + 1), *bytes;
	sfs_item *it = (sfs_item *)block;

	if (!block)
		return sfs_err(SFS_NOMEM, "allocating a list of %zu bytes",
		               sizeof(sfs_item) + n + 1);
	memset(it, 0, sizeof(*it));
	it->id = id;
	bytes = block + sizeof(sfs_item);
	if (n)
		memcpy(bytes, value, n);
	bytes[n] = '\0';
	it->value.ptr = bytes;
	it->value.len = n;
	it->st.size = n;
	out->items = it;
	out->n = 1;
	return SFS_OK;
}
