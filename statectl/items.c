/*
 * items.c - listings read past damaged rows: a queue's items in one state
 * (pending, in flight, dead) for `queue scan`, `queue inflight` and
 * `queue dead`, a namespace's keys for `scan`, a log's entries for
 * `log scan`.
 *
 * A PostgreSQL store authenticates each row alone (docs/postgres.md), so
 * one row whose seal fails need not hide the others; a scan with values
 * still fails as a whole (SFS_CORRUPT), as every read of a damaged row
 * does. When it does, the listing is made again without values (keys,
 * ids, reasons, counts: nothing there is sealed) and each value read
 * alone: the rows that open are listed, each one that does not is named on
 * stderr and left out, and the command exits 4 once it has printed the
 * rest. A claim sends a damaged item to the dead letters, so without this
 * the listing meant to show it could show nothing.
 *
 * A SQLite store authenticates pages, not rows: a damaged page usually
 * fails the listing without values too, and then the listing fails as
 * before.
 */
#include <stdlib.h>
#include <string.h>

#include "cli_i.h"

static void drop_values(cli_items *it)
{
	if (!it->owned)
		return;
	for (size_t i = 0; i < it->l.n; i++)
		sfs_buf_free(&it->l.items[i].value);
}

/* Reads one row's value: sfs_kv_get, sfs_log_get, sfs_item_get. */
typedef int (*row_get)(sfs_store *s, const void *ctx, const sfs_item *cur,
                       sfs_buf *v);
/* Names the row for the message: malloc'd. */
typedef char *(*row_name)(const void *ctx, const sfs_item *cur);

/* Reads each row of the listing without values alone; keeps those that
 * open, with their values (malloc'd, it->owned), and reports each that
 * does not. Any other failure ends it. */
static int read_each(const cli *c, sfs_store *s, cli_items *it,
                     row_get get, row_name name, const void *ctx)
{
	size_t k = 0;
	char *where;
	int st;

	it->owned = 1;
	for (size_t i = 0; i < it->l.n; i++) {
		sfs_item cur = it->l.items[i];
		sfs_buf v = { NULL, 0 };

		st = get(s, ctx, &cur, &v);
		if (st == SFS_NOTFOUND)     /* gone meanwhile */
			continue;
		if (st == SFS_CORRUPT) {
			where = name(ctx, &cur);
			cli_fail_status(c, st, "cannot read %s, so it is left "
			                "out of the listing", where);
			free(where);
			it->damaged++;
			continue;
		}
		if (st != SFS_OK) {
			it->l.n = k;
			return st;
		}
		cur.value = v;
		it->l.items[k++] = cur; /* its key and reason live in the
		                           list's block, which stays */
	}
	it->l.n = k;
	return SFS_OK;
}

/* A queue's item, for cli_items_read_each. */
typedef struct queue_ctx {
	const cli_name *q;
	sfs_item_state state;
	const char *what;
} queue_ctx;

static int queue_get(sfs_store *s, const void *ctx, const sfs_item *cur,
                     sfs_buf *v)
{
	const queue_ctx *x = ctx;

	return sfs_item_get(s, x->q->s, x->state, cur->id, v);
}

static char *queue_name(const void *ctx, const sfs_item *cur)
{
	const queue_ctx *x = ctx;
	char *q = cli_name_show(x->q->s.ptr, x->q->s.len, FS_NAME_SCOPE);
	char *w = cli_xasprintf("%s %lld of queue %s", x->what,
	                        (long long)cur->id, q);

	free(q);
	return w;
}

/* A key of namespace nm[1] of scope nm[0]. */
static int kv_get(sfs_store *s, const void *ctx, const sfs_item *cur,
                  sfs_buf *v)
{
	const cli_name *nm = ctx;

	return sfs_kv_get(s, nm[0].s, nm[1].s,
	                  sfs_bytes(cur->key.ptr, cur->key.len), v);
}

static char *kv_name(const void *ctx, const sfs_item *cur)
{
	const cli_name *nm = ctx;
	cli_name at[3] = { nm[0], nm[1], nm[1] };

	at[2].s = sfs_bytes(cur->key.ptr, cur->key.len);
	at[2].kind = fs_name_key_kind(nm[1].s);
	return cli_names_where(at, 3, NULL);
}

int cli_items_kv(const cli *c, sfs_store *s, const cli_name *nm,
                 const sfs_scan_opts *so, cli_items *out)
{
	sfs_scan_opts again = *so;
	int st;

	memset(out, 0, sizeof(*out));
	st = sfs_kv_scan(s, nm[0].s, nm[1].s, so, &out->l);
	if (st == SFS_CORRUPT && !so->keys_only) {
		again.keys_only = 1;
		st = sfs_kv_scan(s, nm[0].s, nm[1].s, &again, &out->l);
		if (st == SFS_OK)
			st = read_each(c, s, out, kv_get, kv_name, nm);
	}
	if (st != SFS_OK)
		cli_items_free(out);
	return st;
}

/* An entry of log nm[2] in namespace nm[1] of scope nm[0]. */
static int log_get(sfs_store *s, const void *ctx, const sfs_item *cur,
                   sfs_buf *v)
{
	const cli_name *nm = ctx;

	return sfs_log_get(s, nm[0].s, nm[1].s, nm[2].s, cur->id, v);
}

static char *log_name(const void *ctx, const sfs_item *cur)
{
	char *where = cli_names_where(ctx, 3, "log");
	char *w = cli_xasprintf("entry %lld of %s", (long long)cur->id, where);

	free(where);
	return w;
}

int cli_items_log(const cli *c, sfs_store *s, const cli_name *nm,
                  const cli_args *a, cli_items *out)
{
	int st;

	memset(out, 0, sizeof(*out));
	st = sfs_log_scan(s, nm[0].s, nm[1].s, nm[2].s, a->after, a->limit,
	                  a->keys_only, &out->l);
	if (st == SFS_CORRUPT && !a->keys_only) {
		st = sfs_log_scan(s, nm[0].s, nm[1].s, nm[2].s, a->after,
		                  a->limit, 1, &out->l);
		if (st == SFS_OK)
			st = read_each(c, s, out, log_get, log_name, nm);
	}
	if (st != SFS_OK)
		cli_items_free(out);
	return st;
}

int cli_items_scan(const cli *c, sfs_store *s, const cli_name *q,
                   sfs_item_state state, const cli_args *a,
                   const char *what, const char *verb, cli_items *out)
{
	cli_items it = { { NULL, 0 }, 0, 0 };
	int st;

	st = sfs_item_scan(s, q->s, state, a->after, a->limit, a->keys_only,
	                   &it.l);
	if (st == SFS_CORRUPT && !a->keys_only) {
		/* If this fails too (a damaged page), it says why. */
		st = sfs_item_scan(s, q->s, state, a->after, a->limit, 1,
		                   &it.l);
		if (st == SFS_OK) {
			queue_ctx x = { q, state, what };

			st = read_each(c, s, &it, queue_get, queue_name,
			               &x);
		}
	}
	if (st != SFS_OK) {
		cli_items_free(&it);
		return cli_fail_queue(c, st, verb, q);
	}
	*out = it;
	return CLI_EXIT_OK;
}

int cli_items_end(const cli_items *it, int rc)
{
	return rc == CLI_EXIT_OK && it->damaged ? CLI_EXIT_CORRUPT : rc;
}

void cli_items_free(cli_items *it)
{
	drop_values(it);
	sfs_list_free(&it->l);
	it->owned = 0;
	it->damaged = 0;
}
