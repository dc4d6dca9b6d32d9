/*
 * cmd_claim.c - `queue claim|heartbeat|ack|nack|inflight|dead|requeue|gc|
 * policy`: at-least-once work from the command line (docs/claims.md).
 *
 * `claim` prints the claim id on the first line and then one line per item,
 * "ID<TAB>VALUE" (the value escaped for people; --json gives the exact
 * bytes), and exits 1 when there is nothing to claim, so a shell consumer
 * reads naturally:
 *
 *   while out=$(statectl queue claim jobs); do
 *           cid=${out%%$'\n'*} ...; statectl queue ack "$cid"
 *   done
 *
 * A claim that is no longer held (its lease ran out, or it was settled)
 * exits 11 on heartbeat, ack and nack: the caller's work may be done twice.
 * `ack CLAIM ITEM:OUTCOME...` settles named items all or nothing. Leases and
 * time-to-live are durations ("30s", "10m"); claims, items and dead letters
 * are named by their ids, as `queue scan` prints them.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_i.h"

/* A claim or item id argument. */
static int parse_id(const cli *c, const char *text, const char *what,
                    int64_t *out)
{
	if (cli_parse_i64(text, out) < 0 || *out <= 0)
		return cli_usage(c, "%s '%s' is not an id (a whole number > 0)",
		                 what, text);
	return CLI_EXIT_OK;
}

/* "2026-11-29T10:05:06Z" for a time in ns since the epoch. */
static void print_time(FILE *f, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char buf[32];

	if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ",
	                                  &tm))
		fputs(buf, f);
	else
		fprintf(f, "%lld", (long long)ns);
}

/* The lease to pass: 0 (the store's default) unless --lease was given. */
static int64_t lease_of(const cli_args *a)
{
	return a->lease_ms < 0 ? 0 : a->lease_ms;
}

/* queue claim QUEUE [--max N] [--lease D] */
int cmd_claim(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	sfs_list l = { NULL, 0 };
	int64_t cid = 0;
	json_t *o, *arr, *e;
	char *name, *where = NULL;
	int rc, st;

	if ((rc = cli_store_open_queue(c, a, CLI_STORE_WRITE, &q, &s)))
		return rc;
	/* an output that fails puts the items back (cli_out_settle): a
	 * claim whose id nobody read held them for its whole lease */
	cli_out_no_sigpipe();
	st = sfs_claim(s, q.s, a->max ? a->max : 1, lease_of(a), &cid, &l);
	name = cli_name_show(q.s.ptr, q.s.len, FS_NAME_SCOPE);
	where = cli_xasprintf("queue %s", name);
	free(name);
	if (st == SFS_NOTFOUND) {
		rc = cli_fail(c, CLI_EXIT_NOTFOUND, "%s has nothing to claim",
		              where);
		goto out;
	}
	if (st != SFS_OK) {
		rc = cli_fail_queue(c, st, "claim from", &q);
		goto out;
	}
	if (!c->json) {
		printf("%lld\n", (long long)cid);
		for (size_t i = 0; i < l.n; i++) {
			printf("%lld\t", (long long)l.items[i].id);
			cli_out_human(stdout, l.items[i].value.ptr,
			              l.items[i].value.len);
			fputc('\n', stdout);
		}
		rc = cli_out_settle(c, s, cid, CLI_EXIT_OK, where, 0);
		goto out;
	}
	o = json_object();
	cli_json_set_queue(o, &q);
	json_object_set_new(o, "claim", json_integer(cid));
	json_object_set_new(o, "lease_until_ns",
	                    json_integer(l.items[0].st.lease_until_ns));
	arr = json_array();
	for (size_t i = 0; i < l.n; i++) {
		e = json_object();
		json_object_set_new(e, "id", json_integer(l.items[i].id));
		cli_json_set_bytes(e, "value", l.items[i].value.ptr,
		                   l.items[i].value.len);
		json_object_set_new(e, "size",
		                    json_integer((json_int_t)l.items[i].st.size));
		json_object_set_new(e, "deliveries",
		                    json_integer(l.items[i].st.deliveries));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "items", arr);
	rc = cli_out_settle(c, s, cid, cli_out_json(o), where, 0);
out:
	free(where);
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}

/* A failure on a claim; a lost claim says what that means. */
static int claim_fail(const cli *c, int st, const char *verb, int64_t cid)
{
	if (st == SFS_CLAIMLOST)
		return cli_fail(c, CLI_EXIT_CLAIMLOST, "claim %lld is lost (its"
		                " lease ran out, or it was settled): its items"
		                " may be delivered again", (long long)cid);
	return cli_fail_status(c, st, "cannot %s claim %lld", verb,
	                       (long long)cid);
}

/* queue heartbeat CLAIM [--lease D] */
int cmd_claim_heartbeat(cli *c, cli_args *a)
{
	sfs_store *s = NULL;
	int64_t cid, until = 0;
	json_t *o;
	int rc, st;

	if ((rc = parse_id(c, a->pos[0], "claim", &cid)))
		return rc;
	if ((rc = cli_store_open(c, CLI_STORE_WRITE, &s)))
		return rc;
	st = sfs_claim_heartbeat(s, cid, lease_of(a), &until);
	if (st != SFS_OK) {
		rc = claim_fail(c, st, "extend", cid);
	} else if (c->json) {
		o = json_object();
		json_object_set_new(o, "claim", json_integer(cid));
		json_object_set_new(o, "lease_until_ns", json_integer(until));
		rc = cli_out_json(o);
	}
	sfs_store_close(s);
	return rc;
}

static const struct {
	const char *name;
	sfs_outcome o;
} outcomes[] = {
	{ "done", SFS_OUTCOME_DONE }, { "retry", SFS_OUTCOME_RETRY },
	{ "reject", SFS_OUTCOME_REJECT }, { "nack", SFS_OUTCOME_NACK },
};

/* "ID" or "ID:OUTCOME" (def when no outcome is given). */
static int parse_item(const cli *c, const char *arg, sfs_outcome def,
                      int64_t *id, sfs_outcome *o)
{
	const char *colon = strchr(arg, ':');
	char num[32];
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);

	if (n >= sizeof(num))
		return cli_usage(c, "item '%s' is not an id", arg);
	memcpy(num, arg, n);
	num[n] = 0;
	if (parse_id(c, num, "item", id))
		return CLI_EXIT_USAGE;
	*o = def;
	if (!colon)
		return CLI_EXIT_OK;
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		if (!strcmp(colon + 1, outcomes[i].name)) {
			*o = outcomes[i].o;
			return CLI_EXIT_OK;
		}
	return cli_usage(c, "outcome '%s' of item %lld is not done, retry,"
	                 " reject or nack", colon + 1, (long long)*id);
}

/* ack / nack: the whole claim, or the items named, in one transaction. */
static int settle(cli *c, cli_args *a, sfs_outcome def, const char *verb)
{
	size_t n = (size_t)a->npos - 1;
	int64_t cid, *ids = NULL;
	sfs_outcome *os = NULL;
	sfs_store *s = NULL;
	json_t *o;
	int rc, st;

	if ((rc = parse_id(c, a->pos[0], "claim", &cid)))
		return rc;
	if (n) {
		ids = cli_xmalloc(n * sizeof(*ids));
		os = cli_xmalloc(n * sizeof(*os));
		for (size_t i = 0; i < n; i++)
			if ((rc = parse_item(c, a->pos[i + 1], def, &ids[i],
			                     &os[i])))
				goto out;
	}
	if ((rc = cli_store_open(c, CLI_STORE_WRITE, &s)))
		goto out;
	st = n ? sfs_claim_settle(s, cid, ids, os, n)
	       : sfs_claim_end(s, cid, def);
	if (st == SFS_NOTFOUND && n)
		rc = cli_fail(c, CLI_EXIT_NOTFOUND, "%s; nothing was settled",
		              sfs_errdetail());
	else if (st != SFS_OK)
		rc = claim_fail(c, st, verb, cid);
	else if (c->json) {
		o = json_object();
		json_object_set_new(o, "claim", json_integer(cid));
		rc = cli_out_json(o);
	}
out:
	free(ids);
	free(os);
	sfs_store_close(s);
	return rc;
}

int cmd_claim_ack(cli *c, cli_args *a)
{
	return settle(c, a, SFS_OUTCOME_DONE, "ack");
}

int cmd_claim_nack(cli *c, cli_args *a)
{
	for (int i = 1; i < a->npos; i++)
		if (strchr(a->pos[i], ':'))
			return cli_usage(c, "nack takes item ids; give outcomes"
			                 " to ack");
	return settle(c, a, SFS_OUTCOME_NACK, "nack");
}

/* queue inflight QUEUE [--after ID] [--limit N] [--keys-only] */
int cmd_claim_inflight(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	cli_items l = { { NULL, 0 }, 0, 0 };
	json_t *o = NULL, *arr = NULL, *e;
	int rc;

	if ((rc = cli_store_open_queue(c, a, CLI_STORE_READ, &q, &s)))
		return rc;
	if ((rc = cli_items_scan(c, s, &q, SFS_ITEM_INFLIGHT, a,
	                         "item in flight", "list claims of", &l)))
		goto out;
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		arr = json_array();
	}
	for (size_t i = 0; i < l.l.n; i++) {
		const sfs_item *it = &l.l.items[i];

		if (!c->json) {
			printf("%lld\t%lld\t", (long long)it->id,
			       (long long)it->st.claim_id);
			print_time(stdout, it->st.lease_until_ns);
			printf("\t%lld", (long long)it->st.deliveries);
			if (!a->keys_only) {
				fputc('\t', stdout);
				cli_out_human(stdout, it->value.ptr,
				              it->value.len);
			}
			fputc('\n', stdout);
			continue;
		}
		e = json_object();
		json_object_set_new(e, "id", json_integer(it->id));
		json_object_set_new(e, "claim", json_integer(it->st.claim_id));
		json_object_set_new(e, "lease_until_ns",
		                    json_integer(it->st.lease_until_ns));
		json_object_set_new(e, "deliveries",
		                    json_integer(it->st.deliveries));
		if (!a->keys_only)
			cli_json_set_bytes(e, "value", it->value.ptr,
			                   it->value.len);
		json_object_set_new(e, "size",
		                    json_integer((json_int_t)it->st.size));
		json_array_append_new(arr, e);
	}
	if (c->json) {
		json_object_set_new(o, "entries", arr);
		rc = cli_out_json(o);
	}
	rc = cli_items_end(&l, rc);
out:
	cli_items_free(&l);
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}

static int dead_list(cli *c, cli_args *a, sfs_store *s, const cli_name *q)
{
	cli_items l;
	json_t *o, *arr, *e;
	int rc = cli_items_scan(c, s, q, SFS_ITEM_DEAD, a, "dead letter",
	                        "list dead letters of", &l);

	if (rc != CLI_EXIT_OK)
		return rc;
	if (!c->json) {
		for (size_t i = 0; i < l.l.n; i++) {
			const sfs_item *it = &l.l.items[i];

			printf("%lld\t", (long long)it->id);
			cli_out_human(stdout, it->reason.ptr, it->reason.len);
			printf("\t%lld", (long long)it->st.deliveries);
			if (!a->keys_only) {
				fputc('\t', stdout);
				cli_out_human(stdout, it->value.ptr,
				              it->value.len);
			}
			fputc('\n', stdout);
		}
		rc = cli_items_end(&l, CLI_EXIT_OK);
		cli_items_free(&l);
		return rc;
	}
	o = json_object();
	cli_json_set_queue(o, q);
	arr = json_array();
	for (size_t i = 0; i < l.l.n; i++) {
		const sfs_item *it = &l.l.items[i];

		e = json_object();
		json_object_set_new(e, "id", json_integer(it->id));
		cli_json_set_bytes(e, "reason", it->reason.ptr, it->reason.len);
		json_object_set_new(e, "deliveries",
		                    json_integer(it->st.deliveries));
		if (!a->keys_only)
			cli_json_set_bytes(e, "value", it->value.ptr,
			                   it->value.len);
		json_object_set_new(e, "size",
		                    json_integer((json_int_t)it->st.size));
		json_object_set_new(e, "mtime_ns",
		                    json_integer(it->st.mtime_ns));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "entries", arr);
	rc = cli_items_end(&l, cli_out_json(o));
	cli_items_free(&l);
	return rc;
}

/* One dead letter's bytes, unchanged (or JSON). */
static int dead_show(cli *c, sfs_store *s, const cli_name *q, int64_t id)
{
	sfs_buf b = { NULL, 0 };
	json_t *o;
	int rc, st = sfs_item_get(s, q->s, SFS_ITEM_DEAD, id, &b);

	if (st == SFS_NOTFOUND)
		return cli_fail(c, CLI_EXIT_NOTFOUND, "no dead letter %lld",
		                (long long)id);
	if (st != SFS_OK)
		return cli_fail_queue(c, st, "read a dead letter of", q);
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, q);
		json_object_set_new(o, "id", json_integer(id));
		cli_json_set_bytes(o, "value", b.ptr, b.len);
		json_object_set_new(o, "size", json_integer((json_int_t)b.len));
		rc = cli_out_json(o);
	} else {
		rc = cli_out_raw(b.ptr, b.len);
	}
	sfs_buf_free(&b);
	return rc;
}

/* The ids of positional arguments 1.. */
static int ids_of(cli *c, cli_args *a, int64_t **ids, size_t *n)
{
	int rc;

	*n = (size_t)a->npos - 1;
	*ids = cli_xmalloc((*n ? *n : 1) * sizeof(**ids));
	for (size_t i = 0; i < *n; i++)
		if ((rc = parse_id(c, a->pos[i + 1], "dead letter", &(*ids)[i])))
			return rc;
	return CLI_EXIT_OK;
}

/* --delete ID... or --delete --all. Each deletion is its own transaction;
 * a missing one is reported after the rest went. */
static int dead_delete(cli *c, cli_args *a, sfs_store *s, const cli_name *q,
                       const int64_t *ids, size_t n)
{
	uint64_t count = 0;
	int rc = CLI_EXIT_OK, st;
	json_t *o;

	if (a->all) {
		st = sfs_item_clear(s, q->s, SFS_ITEM_DEAD, &count);
		if (st != SFS_OK)
			return cli_fail_queue(c, st, "clear dead letters of", q);
	}
	for (size_t i = 0; i < n; i++) {
		st = sfs_item_delete(s, q->s, SFS_ITEM_DEAD, ids[i]);
		if (st == SFS_OK)
			count++;
		else if (st == SFS_NOTFOUND)
			rc = cli_fail(c, CLI_EXIT_NOTFOUND, "no dead letter %lld",
			              (long long)ids[i]);
		else
			return cli_fail_queue(c, st, "delete a dead letter of", q);
	}
	if (rc != CLI_EXIT_OK)
		return rc;
	if (!c->json) {
		printf("%llu\n", (unsigned long long)count);
		return CLI_EXIT_OK;
	}
	o = json_object();
	cli_json_set_queue(o, q);
	json_object_set_new(o, "count", json_integer((json_int_t)count));
	return cli_out_json(o);
}

/* queue dead QUEUE [ID] [--delete [ID...] [--all]] */
int cmd_claim_dead(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	int64_t *ids = NULL;
	size_t n = 0;
	int rc;

	if ((rc = ids_of(c, a, &ids, &n)))
		goto out0;
	if (a->all && !a->del) {
		rc = cli_usage(c, "--all goes with --delete");
		goto out0;
	}
	if (a->del && !n && !a->all) {
		rc = cli_usage(c, "--delete needs ids, or --all");
		goto out0;
	}
	if (!a->del && n > 1) {
		rc = cli_usage(c, "give one id to print a dead letter");
		goto out0;
	}
	if ((rc = cli_store_open_queue(c, a, a->del ? CLI_STORE_WRITE
	                                            : CLI_STORE_READ, &q, &s)))
		goto out0;
	if (a->del)
		rc = dead_delete(c, a, s, &q, ids, n);
	else if (n)
		rc = dead_show(c, s, &q, ids[0]);
	else
		rc = dead_list(c, a, s, &q);
	sfs_store_close(s);
	cli_name_free(&q);
out0:
	free(ids);
	return rc;
}

/* queue requeue QUEUE ID... | --all */
int cmd_claim_requeue(cli *c, cli_args *a)
{
	cli_name q;
	sfs_store *s = NULL;
	sfs_list l = { NULL, 0 };
	int64_t *ids = NULL, *nids = NULL, nid;
	size_t n = 0, done = 0;
	json_t *o, *arr;
	int rc, st, missing = CLI_EXIT_OK, failed = CLI_EXIT_OK;

	if ((rc = ids_of(c, a, &ids, &n)))
		goto out0;
	if (!n == !a->all) {
		rc = cli_usage(c, "give the dead letters' ids, or --all");
		goto out0;
	}
	if ((rc = cli_store_open_queue(c, a, CLI_STORE_WRITE, &q, &s)))
		goto out0;
	if (a->all) {
		st = sfs_item_scan(s, q.s, SFS_ITEM_DEAD, -1, 0, 1, &l);
		if (st != SFS_OK) {
			rc = cli_fail_queue(c, st, "list dead letters of", &q);
			goto out;
		}
		free(ids);
		n = l.n;
		ids = cli_xmalloc((n ? n : 1) * sizeof(*ids));
		for (size_t i = 0; i < n; i++)
			ids[i] = l.items[i].id;
	}
	/* Each requeue is its own transaction, so the new ids of those done
	 * are printed whatever happens after them: an item requeued and not
	 * shown is one its user cannot find. A missing one is reported and
	 * the rest go, as with --delete. */
	nids = cli_xmalloc((n ? n : 1) * sizeof(*nids));
	for (size_t i = 0; i < n; i++) {
		st = sfs_item_requeue(s, q.s, ids[i], &nid);
		if (st == SFS_NOTFOUND) {
			missing = cli_fail(c, CLI_EXIT_NOTFOUND, "no dead letter "
			                   "%lld", (long long)ids[i]);
			continue;
		}
		if (st != SFS_OK) {
			failed = cli_fail_queue(c, st, "requeue a dead letter of",
			                        &q);
			break;
		}
		nids[done++] = nid;
	}
	if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		arr = json_array();
		for (size_t i = 0; i < done; i++)
			json_array_append_new(arr, json_integer(nids[i]));
		json_object_set_new(o, "ids", arr);
		rc = cli_out_json(o);
	} else {
		for (size_t i = 0; i < done; i++)
			printf("%lld\n", (long long)nids[i]);
	}
	if (failed)
		rc = failed;
	else if (missing && rc == CLI_EXIT_OK)
		rc = missing;
out:
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_name_free(&q);
out0:
	free(ids);
	free(nids);
	return rc;
}

/* queue gc [QUEUE] */
int cmd_claim_gc(cli *c, cli_args *a)
{
	cli_name q = { SFS_NONE, { NULL, 0 }, NULL, FS_NAME_SCOPE, 0, NULL };
	sfs_store *s = NULL;
	sfs_gc_stats g;
	json_t *o;
	int rc, st;

	if (a->npos)
		rc = cli_store_open_queue(c, a, CLI_STORE_GC, &q, &s);
	else
		rc = cli_store_open(c, CLI_STORE_GC, &s);
	if (rc)
		return rc;
	st = sfs_queue_gc(s, q.s, &g);
	if (st != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot recover claims");
	} else if (c->json) {
		o = json_object();
		if (a->npos)
			cli_json_set_queue(o, &q);
		json_object_set_new(o, "expired", json_integer((json_int_t)g.expired));
		json_object_set_new(o, "returned",
		                    json_integer((json_int_t)g.returned));
		json_object_set_new(o, "dead", json_integer((json_int_t)g.dead));
		json_object_set_new(o, "claims", json_integer((json_int_t)g.claims));
		rc = cli_out_json(o);
	} else {
		printf("expired %llu, returned %llu, dead %llu, claims ended"
		       " %llu\n", (unsigned long long)g.expired,
		       (unsigned long long)g.returned,
		       (unsigned long long)g.dead, (unsigned long long)g.claims);
	}
	sfs_store_close(s);
	if (a->npos)
		cli_name_free(&q);
	return rc;
}

/* queue policy QUEUE [--ttl D] [--max-deliveries N] */
int cmd_claim_policy(cli *c, cli_args *a)
{
	int set = a->ttl_ms >= 0 || a->max_deliveries >= 0;
	sfs_queue_policy p;
	cli_name q;
	sfs_store *s = NULL;
	json_t *o;
	int rc, st;

	if ((rc = cli_store_open_queue(c, a, set ? CLI_STORE_WRITE
	                                         : CLI_STORE_READ, &q, &s)))
		return rc;
	st = sfs_queue_policy_get(s, q.s, &p);
	if (st == SFS_OK && set) {
		if (a->ttl_ms >= 0)
			p.ttl_ms = a->ttl_ms;
		if (a->max_deliveries >= 0)
			p.max_deliveries = a->max_deliveries;
		st = sfs_queue_policy_set(s, q.s, &p);
	}
	if (st != SFS_OK) {
		rc = cli_fail_queue(c, st, set ? "set the policy of" :
		                "read the policy of", &q);
	} else if (c->json) {
		o = json_object();
		cli_json_set_queue(o, &q);
		json_object_set_new(o, "ttl_ms", json_integer(p.ttl_ms));
		json_object_set_new(o, "max_deliveries",
		                    json_integer(p.max_deliveries));
		rc = cli_out_json(o);
	} else {
		printf("ttl_ms %lld\nmax_deliveries %lld\n", (long long)p.ttl_ms,
		       (long long)p.max_deliveries);
	}
	sfs_store_close(s);
	cli_name_free(&q);
	return rc;
}
