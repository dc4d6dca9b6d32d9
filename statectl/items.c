/*
 * items.c - a queue's items in one state (pending, in flight, dead) for
 * the listings `queue scan`, `queue inflight` and `queue dead`, read past
 * damaged items.
 *
 * A PostgreSQL store authenticates each row alone (docs/postgres.md), so
 * one item whose seal fails need not hide the others; sfs_item_scan with
 * values still fails as a whole (SFS_CORRUPT), as every read of a damaged
 * row does. When it does, the listing is made again without values (ids,
 * reasons, counts: nothing there is sealed) and each value read alone: the
 * items that open are listed, each one that does not is named on stderr
 * and left out, and the command exits 4 once it has printed the rest. A
 * claim sends a damaged item to the dead letters, so without this the
 * listing meant to show it could show nothing.
 *
 * A SQLite store authenticates pages, not items: a damaged page usually
 * fails the listing without values too, and then the listing fails as
 * before. What this leaves out: listings of keys and log entries (`scan`,
 * `log scan`) still fail as a whole on one damaged row.
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

/* Reads each item of the listing without values alone; keeps those that
 * open, with their values (malloc'd, it->owned), and reports each that
 * does not. Any other failure ends it. */
static int read_each(const cli *c, sfs_store *s, const cli_name *q,
                     sfs_item_state state, const char *what, cli_items *it)
{
	size_t k = 0;
	char *where;
	int st;

	it->owned = 1;
	for (size_t i = 0; i < it->l.n; i++) {
		sfs_item cur = it->l.items[i];
		sfs_buf v = { NULL, 0 };

		st = sfs_item_get(s, q->s, state, cur.id, &v);
		if (st == SFS_NOTFOUND)     /* taken or settled meanwhile */
			continue;
		if (st == SFS_CORRUPT) {
			where = cli_name_show(q->s.ptr, q->s.len, FS_NAME_SCOPE);
			cli_fail_status(c, st, "cannot read %s %lld of queue %s,"
			                " so it is left out of the listing", what,
			                (long long)cur.id, where);
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
		if (st == SFS_OK)
			st = read_each(c, s, q, state, what, &it);
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
