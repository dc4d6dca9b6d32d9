/*
 * cmd_counter.c - `counter get|add|set|del|scan`.
 *
 * An absent counter reads 0 (the engine's rule): `counter get` prints 0 and
 * exits 0 for it, and --json says "exists": false. `add` is one atomic
 * engine call and prints the value it produced, so concurrent scripts each
 * see their own result; overflow changes nothing and exits 8.
 */
#include <stdlib.h>

#include "cli_i.h"

static int number_arg(const cli *c, const char *text, const char *what,
                      int64_t *out)
{
	if (cli_parse_i64(text, out) < 0)
		return cli_usage(c, "%s must be a whole number in the 64-bit range, "
		                    "not '%s'", what, text);
	return CLI_EXIT_OK;
}

static int print_value(const cli *c, const cli_name *nm, int64_t v,
                       int exists)
{
	json_t *o;

	if (!c->json) {
		printf("%lld\n", (long long)v);
		return CLI_EXIT_OK;
	}
	o = json_object();
	cli_names_json(o, nm, 3);
	json_object_set_new(o, "value", json_integer(v));
	if (exists >= 0)
		json_object_set_new(o, "exists", json_boolean(exists));
	return cli_out_json(o);
}

/* The common shape of the single-counter commands: names, a store, one
 * call. op: 'g' get, 'a' add, 's' set, 'd' del. */
static int counter_cmd(cli *c, cli_args *a, int op)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	int64_t arg = 1, v = 0;
	int exists = 1, rc, st;
	char *where;
	json_t *o;

	if (op == 'a' && a->npos > 3 &&
	    (rc = number_arg(c, a->pos[3], "DELTA", &arg)))
		return rc;
	if (op == 's' && (rc = number_arg(c, a->pos[3], "VALUE", &arg)))
		return rc;
	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, op == 'g' ? CLI_STORE_READ
	                                            : CLI_STORE_WRITE,
	                               &s, SFS_FAM_COUNTER, nm, 3)))
		goto out;
	switch (op) {
	case 'g':
		/* an absent counter reads 0, as an add starts it */
		st = sfs_counter_get(s, nm[0].s, nm[1].s, nm[2].s, &v, NULL);
		if (st == SFS_NOTFOUND) {
			st = SFS_OK;
			exists = 0;
		}
		break;
	case 'a': st = sfs_counter_add(s, nm[0].s, nm[1].s, nm[2].s, arg, &v); break;
	case 's': st = sfs_counter_set(s, nm[0].s, nm[1].s, nm[2].s, arg); v = arg; break;
	default: st = sfs_counter_delete(s, nm[0].s, nm[1].s, nm[2].s); break;
	}
	if (st != SFS_OK) {
		if (st == SFS_OVERFLOW) {
			where = cli_names_where(nm, 3, "counter");
			rc = cli_fail(c, CLI_EXIT_DATA, "adding %lld to %s would "
			              "leave the 64-bit range; nothing changed",
			              (long long)arg, where);
			free(where);
		} else {
			rc = cli_fail_names(c, st, nm, 3, "counter",
			                    op == 'g' ? "read" : op == 'd' ? "delete"
			                                                   : "change");
		}
		goto out;
	}
	if (op == 'd') {
		if (c->json) {
			o = json_object();
			cli_names_json(o, nm, 3);
			json_object_set_new(o, "deleted", json_true());
			rc = cli_out_json(o);
		}
	} else if (op != 's' || c->json) {
		rc = print_value(c, nm, v, op == 'g' ? exists : -1);
	}
out:
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* counter get SCOPE NS KEY */
int cmd_counter_get(cli *c, cli_args *a) { return counter_cmd(c, a, 'g'); }
/* counter add SCOPE NS KEY [DELTA] */
int cmd_counter_add(cli *c, cli_args *a) { return counter_cmd(c, a, 'a'); }
/* counter set SCOPE NS KEY VALUE */
int cmd_counter_set(cli *c, cli_args *a) { return counter_cmd(c, a, 's'); }
/* counter del SCOPE NS KEY */
int cmd_counter_del(cli *c, cli_args *a) { return counter_cmd(c, a, 'd'); }

/* counter scan SCOPE NS [--start K] [--end K] [--reverse] [--limit N] */
int cmd_counter_scan(cli *c, cli_args *a)
{
	cli_name nm[2], start, end;
	sfs_store *s = NULL;
	sfs_scan_opts so = { .start = SFS_NONE, .end = SFS_NONE };
	sfs_list l = { NULL, 0 };
	json_t *o, *arr, *e;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 2, nm)))
		return rc;
	if ((rc = cli_bounds_parse(c, a, nm[1].s, &start, &end))) {
		cli_names_free(nm, 2);
		return rc;
	}
	if ((rc = cli_store_open_names(c, CLI_STORE_READ, &s,
	                                 SFS_FAM_COUNTER, nm, 2)))
		goto out;
	so.start = start.s;
	so.end = end.s;
	so.reverse = a->reverse;
	so.limit = a->limit;
	st = sfs_counter_scan(s, nm[0].s, nm[1].s, &so, &l);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 2, NULL, "scan the counters of");
		goto out;
	}
	if (!c->json) {
		for (size_t i = 0; i < l.n; i++) {
			cli_name_print(stdout, l.items[i].key.ptr, l.items[i].key.len,
			               fs_name_key_kind(nm[1].s));
			printf("\t%lld\n", (long long)l.items[i].st.counter);
		}
		goto out;
	}
	o = json_object();
	cli_names_json(o, nm, 2);
	arr = json_array();
	for (size_t i = 0; i < l.n; i++) {
		e = json_object();
		cli_json_set_bytes(e, "key", l.items[i].key.ptr, l.items[i].key.len);
		json_object_set_new(e, "value",
		                    json_integer(l.items[i].st.counter));
		if (l.items[i].st.mtime_ns)
			json_object_set_new(e, "mtime_ns",
			                    json_integer(l.items[i].st.mtime_ns));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "entries", arr);
	rc = cli_out_json(o);
out:
	sfs_list_free(&l);
	sfs_store_close(s);
	cli_name_free(&start);
	cli_name_free(&end);
	cli_names_free(nm, 2);
	return rc;
}
