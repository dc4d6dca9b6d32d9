/*
 * cmd_queue.c - `queue push|pop|len|clear|scan`: the FIFO work queues.
 *
 * `pop` prints the item's bytes unchanged and exits 1 on an empty queue,
 * so `while item=$(statectl queue pop q); do ...; done` ends when the work
 * does. A pop takes the item under a claim (docs/claims.md) and acks it
 * once the item is written to stdout and flushed; an output that fails (a
 * full disk, a reader gone: SIGPIPE is ignored so EPIPE can be handled)
 * nacks it, so it stays at the head. A pop killed in between leaves the
 * item to the lease. Claims are for consumers that may crash after that. `push` with several items (arguments, or stdin split by --lines
 * or --null) pushes them in one transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_i.h"

/* What one push reads from stdin with --lines or --null: it is one
 * transaction, so the whole input is held at once (a runaway `yes |` would
 * otherwise take all memory). */
#define PUSH_STDIN_MAX_BYTES ((size_t)1 << 30)
#define PUSH_STDIN_MAX_ITEMS ((size_t)1 << 24)

/* Splits buf at sep into slices pointing into it. A final separator ends
 * the last item rather than starting an empty one. NULL past max items. */
static sfs_slice *split(char *buf, size_t n, char sep, size_t max,
                        size_t *count)
{
	size_t k = 0, cap = 16, start = 0;
	sfs_slice *v = cli_xmalloc(cap * sizeof(*v)), *nv;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && buf[i] != sep)
			continue;
		if (i == n && start == n)
			break;
		if (k == max) {
			free(v);
			return NULL;
		}
		if (k == cap) {
			cap *= 2;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fputs("statectl: out of memory\n", stderr);
				exit(CLI_EXIT_SYSTEM);
			}
			v = nv;
		}
		v[k++] = sfs_bytes(buf + start, i - start);
		start = i + 1;
	}
	*count = k;
	return v;
}

static int too_many(cli *c)
{
	return cli_fail(c, CLI_EXIT_DATA, "the items on stdin are more than one "
	                "push takes (%zu MiB or %zu items); nothing was "
	                "written: push the input in parts (split -l)",
	                PUSH_STDIN_MAX_BYTES >> 20, PUSH_STDIN_MAX_ITEMS);
}

/* queue push QUEUE [ITEM...] [--lines|--null] */
int cmd_queue_push(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	sfs_slice *items = NULL;
	size_t n = 0, len;
	void *mem = NULL;
	int64_t first = 0;
	json_t *o, *ids;
	int rc, st;

	if (a->lines && a->nul)
		return cli_usage(c, "give --lines or --null, not both");
	if ((a->lines || a->nul) && a->npos > 1)
		return cli_usage(c, "--%s splits stdin: give no ITEM arguments",
		                 a->lines ? "lines" : "null");
	if ((rc = cli_name_parse(c, a->pos[0], "queue", FS_NAME_SCOPE, &q)))
		return rc;
	if (a->npos > 1) {
		n = (size_t)a->npos - 1;
		items = cli_xmalloc(n * sizeof(*items));
		for (size_t i = 0; i < n; i++)
			items[i] = sfs_str(a->pos[i + 1]);
	} else {
		cli_tty_notice(a->lines ? "items, one per line,"
		               : a->nul ? "items, NUL-separated," : "the item");
		/* one item: at most the largest value; --lines and --null
		 * up to PUSH_STDIN_MAX_* of them */
		switch (a->lines || a->nul
		        ? cli_read_all(stdin, PUSH_STDIN_MAX_BYTES,
		                       a->nul ? '\0' : '\n', PUSH_STDIN_MAX_ITEMS,
		                       &mem, &len)
		        : cli_read_all(stdin, cli_max_value(c), -1, 0, &mem,
		                       &len)) {
		case 0: break;
		case -2:
			rc = a->lines || a->nul ? too_many(c)
			     : cli_fail_too_long(c, "the item");
			goto out;
		default:
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot read stdin: %s",
			              strerror(errno));
			goto out;
		}
		if (a->lines || a->nul) {
			items = split(mem, len, a->nul ? '\0' : '\n',
			              PUSH_STDIN_MAX_ITEMS, &n);
			if (!items) {
				rc = too_many(c);
				goto out;
			}
		} else {
			n = 1;
			items = cli_xmalloc(sizeof(*items));
			items[0] = sfs_bytes(mem, len);
		}
	}
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_QUEUE, &q, 1)))
		goto out;
	st = sfs_queue_push(s, q.s, items, n, &first);
	if (st != SFS_OK) {
		rc = cli_fail_queue(c, st, "push to", &q);
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		ids = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(ids, json_integer(first + (int64_t)i));
		json_object_set_new(o, "ids", ids);
		rc = cli_out_json(o);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%lld\n", (long long)(first + (int64_t)i));
	}
out:
	free(items);
	free(mem);
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}

/* queue pop QUEUE: the head item under a claim, acked once it is
 * printed, so that an output that fails puts it back at the head. */
int cmd_queue_pop(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	sfs_list l = { NULL, 0 };
	const sfs_item *it;
	int64_t cid = 0;
	json_t *o;
	char *name, *where;
	int rc, st;

	if ((rc = cli_store_open_queue(c, a, CLI_STORE_WRITE, &q, &s)))
		return rc;
	cli_out_no_sigpipe();
	st = sfs_claim(s, q.s, 1, 0, &cid, &l);
	name = cli_name_show(q.s.ptr, q.s.len, FS_NAME_SCOPE);
	if (asprintf(&where, "queue %s", name) < 0) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	free(name);
	if (st == SFS_NOTFOUND) {
		rc = cli_fail(c, CLI_EXIT_NOTFOUND, "%s is empty", where);
		goto out;
	}
	if (st != SFS_OK) {
		rc = cli_fail_queue(c, st, "pop from", &q);
		goto out;
	}
	it = &l.items[0];
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		json_object_set_new(o, "id", json_integer(it->id));
		cli_json_set_bytes(o, "value", it->value.ptr, it->value.len);
		json_object_set_new(o, "size",
		                    json_integer((json_int_t)it->value.len));
		rc = cli_out_json(o);
	} else {
		rc = cli_out_raw(it->value.ptr, it->value.len);
	}
	rc = cli_out_settle(c, s, cid, rc, where, 1);
out:
	free(where);
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}

/* queue len QUEUE; queue clear QUEUE */
static int len_or_clear(cli *c, cli_args *a, int clear)
{
	cli_name q;
	sfs_store *s = NULL;
	uint64_t n = 0;
	json_t *o;
	int rc, st;

	if ((rc = cli_store_open_queue(c, a, clear ? CLI_STORE_WRITE
	                                           : CLI_STORE_READ, &q, &s)))
		return rc;
	st = clear ? sfs_item_clear(s, q.s, SFS_ITEM_PENDING, &n)
	           : sfs_item_count(s, q.s, SFS_ITEM_PENDING, &n);
	if (st != SFS_OK) {
		rc = cli_fail_queue(c, st, clear ? "clear" : "count", &q);
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		json_object_set_new(o, clear ? "count" : "len",
		                    json_integer((json_int_t)n));
		rc = cli_out_json(o);
	} else {
		printf("%llu\n", (unsigned long long)n);
	}
out:
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}

int cmd_queue_len(cli *c, cli_args *a) { return len_or_clear(c, a, 0); }
int cmd_queue_clear(cli *c, cli_args *a) { return len_or_clear(c, a, 1); }

/* queue scan QUEUE [--after ID] [--limit N] [--keys-only] */
int cmd_queue_scan(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	cli_items l = { { NULL, 0 }, 0, 0 };
	json_t *o;
	int rc;

	if ((rc = cli_store_open_queue(c, a, CLI_STORE_READ, &q, &s)))
		return rc;
	if ((rc = cli_items_scan(c, s, &q, SFS_ITEM_PENDING, a, "item", "list",
	                         &l)))
		goto out;
	o = json_object();
	cli_json_set_queue(o, &q);
	rc = cli_items_end(&l, cli_out_entries(c, o, &l.l, a->keys_only,
	                                       CLI_LIST_IDS));
out:
	cli_items_free(&l);
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}
