/*
 * cmd_kv.c - the key/value commands (get, put, del, scan, delete-range,
 * drain), exec-clear, and ls, which looks around the store like `ls` looks
 * around the mount.
 *
 * `get` writes the value's bytes unchanged (like `cat` on the mount), so
 * `v=$(statectl get s n k)` and binary values both work; listings (scan,
 * drain) are for people: one "KEY<TAB>VALUE" line per entry with the value
 * escaped; --json gives the exact bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_i.h"

/* Reads a value from argument i, or stdin when it is absent or "-".
 * *mem is set when the bytes were read (free() it). */
int cli_value_arg(const cli *c, cli_args *a, int i, sfs_slice *out,
                  void **mem)
{
	size_t n;

	*mem = NULL;
	if (a->npos > i && strcmp(a->pos[i], "-") != 0) {
		*out = sfs_str(a->pos[i]);
		return CLI_EXIT_OK;
	}
	cli_tty_notice("the value");
	switch (cli_read_all(stdin, cli_max_value(c), -1, 0, mem, &n)) {
	case 0: break;
	case -2: return cli_fail_too_long(c, "the value");
	default: return cli_fail(c, CLI_EXIT_SYSTEM, "cannot read stdin: %s",
	                         strerror(errno));
	}
	*out = sfs_bytes(*mem, n);
	return CLI_EXIT_OK;
}

/* A kv or drain listing (cli_out_entries) of namespace nm[1] of scope
 * nm[0]. */
static int print_entries(const cli *c, const cli_name *nm, const sfs_list *l,
                         int keys_only)
{
	json_t *head = json_object();

	cli_names_json(head, nm, 2);
	return cli_out_entries(c, head, l, keys_only,
	                       fs_name_key_kind(nm[1].s));
}

/* get SCOPE NS KEY */
int cmd_get(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	sfs_buf v = { NULL, 0 };
	json_t *o;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_READ, &s,
	                                 SFS_FAM_KV, nm, 3)))
		goto out;
	st = sfs_kv_get(s, nm[0].s, nm[1].s, nm[2].s, &v);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 3, NULL, "read");
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_names_json(o, nm, 3);
		cli_json_set_bytes(o, "value", v.ptr, v.len);
		json_object_set_new(o, "size", json_integer((json_int_t)v.len));
		rc = cli_out_json(o);
	} else {
		rc = cli_out_raw(v.ptr, v.len);
	}
out:
	sfs_buf_free(&v);
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* put SCOPE NS KEY [VALUE|-] */
int cmd_put(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	sfs_slice value;
	void *mem = NULL;
	json_t *o;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_value_arg(c, a, 3, &value, &mem)))
		goto out;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_KV, nm, 3)))
		goto out;
	st = sfs_kv_put(s, nm[0].s, nm[1].s, nm[2].s, value);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 3, NULL, "write");
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_names_json(o, nm, 3);
		json_object_set_new(o, "size", json_integer((json_int_t)value.len));
		rc = cli_out_json(o);
	}
out:
	free(mem);
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* del SCOPE NS KEY */
int cmd_del(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	json_t *o;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_KV, nm, 3)))
		goto out;
	st = sfs_kv_delete(s, nm[0].s, nm[1].s, nm[2].s);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 3, NULL, "delete");
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_names_json(o, nm, 3);
		json_object_set_new(o, "deleted", json_true());
		rc = cli_out_json(o);
	}
out:
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* The --start/--end bounds as names (SFS_NONE when not given). */
int cli_bounds_parse(const cli *c, const cli_args *a, sfs_slice ns,
                     cli_name *start, cli_name *end)
{
	fs_name_kind kind = fs_name_key_kind(ns);
	int rc;

	memset(start, 0, sizeof(*start));
	memset(end, 0, sizeof(*end));
	if (a->start && (rc = cli_name_parse(c, a->start, "key", kind, start)))
		return rc;
	if (a->end && (rc = cli_name_parse(c, a->end, "key", kind, end))) {
		cli_name_free(start);
		return rc;
	}
	if (start->hashed || end->hashed) {
		cli_name_free(start);
		cli_name_free(end);
		return cli_usage(c, "a long name (ending in %%~ and a hash) cannot "
		                    "be a bound: give its prefix");
	}
	return CLI_EXIT_OK;
}

/* scan SCOPE NS [--start K] [--end K] [--reverse] [--limit N] [--keys-only] */
int cmd_scan(cli *c, cli_args *a)
{
	cli_name nm[2], start, end;
	sfs_store *s = NULL;
	sfs_scan_opts so;
	cli_items it = { { NULL, 0 }, 0, 0 };
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 2, nm)))
		return rc;
	if ((rc = cli_bounds_parse(c, a, nm[1].s, &start, &end))) {
		cli_names_free(nm, 2);
		return rc;
	}
	if ((rc = cli_store_open_names(c, CLI_STORE_READ, &s,
	                                 SFS_FAM_KV, nm, 2)))
		goto out;
	memset(&so, 0, sizeof(so));
	so.start = start.s;
	so.end = end.s;
	so.reverse = a->reverse;
	so.limit = a->limit;
	so.keys_only = a->keys_only;
	st = cli_items_kv(c, s, nm, &so, &it);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 2, NULL, "scan");
		goto out;
	}
	rc = cli_items_end(&it, print_entries(c, nm, &it.l, a->keys_only));
out:
	cli_items_free(&it);
	sfs_store_close(s);
	cli_name_free(&start);
	cli_name_free(&end);
	cli_names_free(nm, 2);
	return rc;
}

/* delete-range SCOPE NS [--start K] [--end K] [--all] */
int cmd_delete_range(cli *c, cli_args *a)
{
	cli_name nm[2], start, end;
	sfs_store *s = NULL;
	uint64_t count = 0;
	int rc, st;

	if (!a->start && !a->end && !a->all)
		return cli_usage(c, "'delete-range' without --start or --end "
		                    "deletes the whole namespace: say --all");
	if (a->all && (a->start || a->end))
		return cli_usage(c, "--all cannot be combined with --start or --end");
	if ((rc = cli_names_parse(c, a->pos, 2, nm)))
		return rc;
	if ((rc = cli_bounds_parse(c, a, nm[1].s, &start, &end))) {
		cli_names_free(nm, 2);
		return rc;
	}
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_KV, nm, 2)))
		goto out;
	st = sfs_kv_delete_range(s, nm[0].s, nm[1].s, start.s, end.s, &count);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 2, NULL, "delete keys of");
		goto out;
	}
	rc = cli_out_count(c, nm, 2, count);
out:
	sfs_store_close(s);
	cli_name_free(&start);
	cli_name_free(&end);
	cli_names_free(nm, 2);
	return rc;
}

/* drain SCOPE NS: every entry under a claim (sfs_kv_claim), acked once
 * the listing is written and flushed; an output that fails gives every
 * entry back. */
int cmd_drain(cli *c, cli_args *a)
{
	cli_name nm[2];
	sfs_store *s = NULL;
	sfs_list l = { NULL, 0 };
	int64_t cid = 0;
	char *where;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 2, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_KV, nm, 2)))
		goto out;
	cli_out_no_sigpipe();
	st = sfs_kv_claim(s, nm[0].s, nm[1].s, 0, &cid, NULL);
	if (st == SFS_NOTFOUND) { /* an empty namespace: an empty listing */
		rc = print_entries(c, nm, &l, 0);
		goto out;
	}
	if (st == SFS_OK)
		st = sfs_claim_items(s, cid, -1, 0, 0, &l);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 2, NULL, "drain");
		if (cid)
			sfs_claim_end(s, cid, SFS_OUTCOME_NACK);
		goto out;
	}
	rc = print_entries(c, nm, &l, 0);
	where = cli_names_where(nm, 2, NULL);
	rc = cli_out_settle(c, s, cid, rc, where, 1);
	free(where);
out:
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_names_free(nm, 2);
	return rc;
}

/* exec-clear SCOPE */
int cmd_exec_clear(cli *c, cli_args *a)
{
	cli_name nm[1];
	sfs_store *s = NULL;
	uint64_t count = 0;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 1, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_DIR, nm, 1)))
		goto out;
	st = sfs_exec_clear(s, nm[0].s, &count);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 1, NULL, "clear");
		goto out;
	}
	rc = cli_out_count(c, nm, 1, count);
out:
	sfs_store_close(s);
	cli_names_free(nm, 1);
	return rc;
}

static int family_parse(const cli *c, const char *name, sfs_family *out)
{
	static const struct { const char *name; sfs_family fam; } fams[] = {
		{ "kv", SFS_FAM_KV }, { "counter", SFS_FAM_COUNTER },
		{ "log", SFS_FAM_LOG }, { "queue", SFS_FAM_QUEUE },
	};

	if (!name) {
		*out = SFS_FAM_KV;
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		if (strcmp(fams[i].name, name) == 0) {
			*out = fams[i].fam;
			return CLI_EXIT_OK;
		}
	}
	return cli_usage(c, "--family takes kv, counter, log or queue, not '%s'",
	                 name);
}

/* The listing of ls: names, or (queue items) ids. */
static int print_names(const cli *c, const sfs_list *l, int ids,
                       fs_name_kind kind)
{
	json_t *o, *arr, *e;

	if (!c->json) {
		for (size_t i = 0; i < l->n; i++) {
			if (ids)
				printf("%lld", (long long)l->items[i].id);
			else
				cli_name_print(stdout, l->items[i].key.ptr,
				               l->items[i].key.len, kind);
			fputc('\n', stdout);
		}
		return CLI_EXIT_OK;
	}
	o = json_object();
	arr = json_array();
	for (size_t i = 0; i < l->n; i++) {
		e = json_object();
		if (ids) {
			json_object_set_new(e, "id", json_integer(l->items[i].id));
			json_object_set_new(e, "size",
			                    json_integer((json_int_t)l->items[i].st.size));
		} else {
			cli_json_set_bytes(e, "name", l->items[i].key.ptr,
			                   l->items[i].key.len);
		}
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "entries", arr);
	return cli_out_json(o);
}

/* ls [--family F] [--limit N] [SCOPE [NS]] */
int cmd_ls(cli *c, cli_args *a)
{
	cli_name nm[2];
	sfs_store *s = NULL;
	sfs_family fam = SFS_FAM_KV;
	sfs_list l = { NULL, 0 };
	int rc, st = SFS_OK, ids = 0;

	if ((rc = family_parse(c, a->family, &fam)))
		return rc;
	if (fam == SFS_FAM_QUEUE && a->npos > 1)
		return cli_usage(c, "queues have no namespaces: 'ls --family queue "
		                    "[QUEUE]'");
	if ((rc = cli_names_parse(c, a->pos, a->npos, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_READ, &s,
	                                 fam, nm, a->npos)))
		goto out;
	if (fam == SFS_FAM_QUEUE && a->npos == 1) {
		st = sfs_item_scan(s, nm[0].s, SFS_ITEM_PENDING, -1, a->limit, 1,
		                   &l);
		ids = 1;
	} else {
		st = sfs_dir_list(s, fam, a->npos > 0 ? nm[0].s : SFS_NONE,
		                  a->npos > 1 ? nm[1].s : SFS_NONE, SFS_NONE,
		                  a->limit, &l);
	}
	if (st != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot list");
		goto out;
	}
	rc = print_names(c, &l, ids, a->npos == 0 ? FS_NAME_SCOPE
	                             : a->npos == 1 ? FS_NAME_KEY
	                             : fs_name_key_kind(nm[1].s));
out:
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_names_free(nm, a->npos);
	return rc;
}
