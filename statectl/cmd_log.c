/*
 * cmd_log.c - `log append|scan|clear`: the append-logs, addressed by scope,
 * namespace and key (the Go SDK's log uses namespace "log").
 *
 * Ids come from the store, not from this process, so `log append` run by
 * many shells at once prints strictly increasing, never reused ids, and
 * `log scan --after ID` is how a reader resumes where it stopped.
 */
#include <stdlib.h>

#include "cli_i.h"

/* log append SCOPE NS KEY [VALUE|-] */
int cmd_log_append(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	sfs_slice value;
	void *mem = NULL;
	int64_t id = 0;
	json_t *o;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_value_arg(c, a, 3, &value, &mem)))
		goto out;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_LOG, nm, 3)))
		goto out;
	st = sfs_log_append(s, nm[0].s, nm[1].s, nm[2].s, value, &id);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 3, "log", "append to");
		goto out;
	}
	if (c->json) {
		o = json_object();
		cli_names_json(o, nm, 3);
		json_object_set_new(o, "id", json_integer(id));
		rc = cli_out_json(o);
	} else {
		printf("%lld\n", (long long)id);
	}
out:
	free(mem);
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* log scan SCOPE NS KEY [--after ID] [--limit N] [--keys-only] */
int cmd_log_scan(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	cli_items it = { { NULL, 0 }, 0, 0 };
	json_t *o;
	int rc, st;

	if ((rc = cli_names_parse(c, a->pos, 3, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_READ, &s,
	                                 SFS_FAM_LOG, nm, 3)))
		goto out;
	st = cli_items_log(c, s, nm, a, &it);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, 3, "log", "read");
		goto out;
	}
	o = json_object();
	cli_names_json(o, nm, 3);
	rc = cli_items_end(&it, cli_out_entries(c, o, &it.l, a->keys_only,
	                                        CLI_LIST_IDS));
out:
	cli_items_free(&it);
	sfs_store_close(s);
	cli_names_free(nm, 3);
	return rc;
}

/* log clear SCOPE [NS [KEY]] */
int cmd_log_clear(cli *c, cli_args *a)
{
	cli_name nm[3];
	sfs_store *s = NULL;
	uint64_t count = 0;
	int rc, st, n = a->npos;

	if ((rc = cli_names_parse(c, a->pos, n, nm)))
		return rc;
	if ((rc = cli_store_open_names(c, CLI_STORE_WRITE, &s,
	                                 SFS_FAM_LOG, nm, n)))
		goto out;
	st = sfs_log_clear(s, nm[0].s, n > 1 ? nm[1].s : SFS_NONE,
	                   n > 2 ? nm[2].s : SFS_NONE, &count);
	if (st != SFS_OK) {
		rc = cli_fail_names(c, st, nm, n, "log", "clear the logs of");
		goto out;
	}
	rc = cli_out_count(c, nm, n, count);
out:
	sfs_store_close(s);
	cli_names_free(nm, n);
	return rc;
}
