/*
 * table.c - statectl's command table: every command, its synopsis, the
 * options it takes and the handler that runs it.
 *
 * Help, usage lines, argument counting and bash completion all come from
 * here (completion asks `statectl --list-commands`), so a command is added
 * in one place. Families (counter, log, queue) have a sub-table; the claim
 * commands (queue claim|heartbeat|ack|nack|inflight|dead|requeue|gc|policy,
 * docs/claims.md) are rows of queue_commands, handled in cmd_claim.c.
 */
#include <string.h>

#include "cli_i.h"

#define SCAN_OPTS (CLI_OPT(OPT_START) | CLI_OPT(OPT_END) | \
                   CLI_OPT(OPT_REVERSE) | CLI_OPT(OPT_LIMIT) | \
                   CLI_OPT(OPT_KEYS_ONLY))

static const cli_cmd counter_commands[] = {
	{ "get", "SCOPE NS KEY", "print a counter (0 when absent)",
	  0, 3, 3, cmd_counter_get, NULL },
	{ "add", "SCOPE NS KEY [DELTA]", "add DELTA (default 1) atomically; print the new value",
	  0, 3, 4, cmd_counter_add, NULL },
	{ "set", "SCOPE NS KEY VALUE", "set a counter",
	  0, 4, 4, cmd_counter_set, NULL },
	{ "del", "SCOPE NS KEY", "delete a counter",
	  0, 3, 3, cmd_counter_del, NULL },
	{ "scan", "SCOPE NS", "list the counters of a namespace",
	  SCAN_OPTS & ~CLI_OPT(OPT_KEYS_ONLY), 2, 2, cmd_counter_scan, NULL },
	{ NULL, NULL, NULL, 0, 0, 0, NULL, NULL },
};

static const cli_cmd log_commands[] = {
	{ "append", "SCOPE NS KEY [VALUE]", "append an entry (VALUE or stdin); print its id",
	  0, 3, 4, cmd_log_append, NULL },
	{ "scan", "SCOPE NS KEY", "list entries after --after ID, at most --limit N",
	  CLI_OPT(OPT_AFTER) | CLI_OPT(OPT_LIMIT) | CLI_OPT(OPT_KEYS_ONLY),
	  3, 3, cmd_log_scan, NULL },
	{ "clear", "SCOPE [NS [KEY]]", "delete the entries of a scope, namespace or key; print the count",
	  0, 1, 3, cmd_log_clear, NULL },
	{ NULL, NULL, NULL, 0, 0, 0, NULL, NULL },
};

static const cli_cmd queue_commands[] = {
	{ "push", "QUEUE [ITEM...]", "push items (arguments, or stdin); print their ids",
	  CLI_OPT(OPT_LINES) | CLI_OPT(OPT_NULL), 1, -1, cmd_queue_push, NULL },
	{ "pop", "QUEUE", "remove and print the oldest item (exit 1 when empty)",
	  0, 1, 1, cmd_queue_pop, NULL },
	{ "len", "QUEUE", "print the number of pending items",
	  0, 1, 1, cmd_queue_len, NULL },
	{ "clear", "QUEUE", "remove every pending item; print the count",
	  0, 1, 1, cmd_queue_clear, NULL },
	{ "scan", "QUEUE", "list pending items without removing them",
	  CLI_OPT(OPT_AFTER) | CLI_OPT(OPT_LIMIT) | CLI_OPT(OPT_KEYS_ONLY),
	  1, 1, cmd_queue_scan, NULL },
	{ "claim", "QUEUE", "claim items under a lease; print the claim id, then each item (exit 1 when empty)",
	  CLI_OPT(OPT_MAX) | CLI_OPT(OPT_LEASE), 1, 1, cmd_claim, NULL },
	{ "heartbeat", "CLAIM", "extend a claim's lease (exit 11 when it was lost)",
	  CLI_OPT(OPT_LEASE), 1, 1, cmd_claim_heartbeat, NULL },
	{ "ack", "CLAIM [ITEM[:OUTCOME]...]", "settle a claim: all done, or each item done, retry, reject or nack",
	  0, 1, -1, cmd_claim_ack, NULL },
	{ "nack", "CLAIM [ITEM...]", "put a claim's items (or the ones named) back at their place",
	  0, 1, -1, cmd_claim_nack, NULL },
	{ "inflight", "QUEUE", "list claimed items: claim, lease end, deliveries",
	  CLI_OPT(OPT_AFTER) | CLI_OPT(OPT_LIMIT) | CLI_OPT(OPT_KEYS_ONLY),
	  1, 1, cmd_claim_inflight, NULL },
	{ "dead", "QUEUE [ID...]", "list dead letters, print one, or --delete them",
	  CLI_OPT(OPT_AFTER) | CLI_OPT(OPT_LIMIT) | CLI_OPT(OPT_KEYS_ONLY) |
	  CLI_OPT(OPT_DELETE) | CLI_OPT(OPT_ALL), 1, -1, cmd_claim_dead, NULL },
	{ "requeue", "QUEUE [ID...]", "put dead letters (or --all) back at the tail; print their new ids",
	  CLI_OPT(OPT_ALL), 1, -1, cmd_claim_requeue, NULL },
	{ "gc", "[QUEUE]", "return expired claims and apply time-to-live, now (all queues by default)",
	  0, 0, 1, cmd_claim_gc, NULL },
	{ "policy", "QUEUE", "show or set a queue's time-to-live and delivery limit",
	  CLI_OPT(OPT_TTL) | CLI_OPT(OPT_MAX_DELIVERIES), 1, 1, cmd_claim_policy,
	  NULL },
	{ NULL, NULL, NULL, 0, 0, 0, NULL, NULL },
};

const cli_cmd cli_commands[] = {
	{ "init", "", "create a new store and a new key (never overwrites either)",
	  0, 0, 0, cmd_init, NULL },
	{ "keygen", "[PATH]", "write a new key file (mode 0600), or print a key (no PATH, or -; never to a terminal)",
	  0, 0, 1, cmd_keygen, NULL },
	{ "info", "", "show the store: path, format, encryption, size, rows",
	  0, 0, 0, cmd_info, NULL },
	{ "verify", "", "read every page or row (an encrypted one authenticated) and check integrity",
	  0, 0, 0, cmd_verify, NULL },
	{ "top", "", "a live view of queues, scopes and the store (q quits; frames when piped)",
	  CLI_OPT(OPT_INTERVAL) | CLI_OPT(OPT_ONCE), 0, 0, cmd_top, NULL },
	{ "metrics", "[FILE]", "the figures of top in Prometheus text format (to FILE, replaced atomically; - or none: stdout)",
	  0, 0, 1, cmd_metrics, NULL },
	{ "rekey", "", "re-encrypt the store under a new key (or encrypt or decrypt it)",
	  CLI_OPT(OPT_GENERATE) | CLI_OPT(OPT_NEW_KEY_FILE) |
	  CLI_OPT(OPT_NEW_PASSPHRASE) | CLI_OPT(OPT_DECRYPT), 0, 0, cmd_rekey,
	  NULL },
	{ "ls", "[SCOPE [NS]]", "list scopes, the namespaces of a scope, or the keys of a namespace",
	  CLI_OPT(OPT_FAMILY) | CLI_OPT(OPT_LIMIT), 0, 2, cmd_ls, NULL },
	{ "get", "SCOPE NS KEY", "print a value (its bytes, unchanged)",
	  0, 3, 3, cmd_get, NULL },
	{ "put", "SCOPE NS KEY [VALUE]", "store VALUE (or stdin when absent or -)",
	  0, 3, 4, cmd_put, NULL },
	{ "del", "SCOPE NS KEY", "delete a key",
	  0, 3, 3, cmd_del, NULL },
	{ "scan", "SCOPE NS", "list the entries of a namespace in [--start, --end)",
	  SCAN_OPTS, 2, 2, cmd_scan, NULL },
	{ "delete-range", "SCOPE NS", "delete the keys in [--start, --end) (or --all); print the count",
	  CLI_OPT(OPT_START) | CLI_OPT(OPT_END) | CLI_OPT(OPT_ALL),
	  2, 2, cmd_delete_range, NULL },
	{ "drain", "SCOPE NS", "read and remove every entry of a namespace at once",
	  0, 2, 2, cmd_drain, NULL },
	{ "counter", "get|add|set|del|scan ...", "counters",
	  0, 0, 0, NULL, counter_commands },
	{ "log", "append|scan|clear ...", "append-logs",
	  0, 0, 0, NULL, log_commands },
	{ "queue", "push|pop|len|clear|scan|claim|ack|... ...", "work queues, and claims on them",
	  0, 0, 0, NULL, queue_commands },
	{ "exec-clear", "SCOPE", "delete every key/value, log and counter row of a scope; print the count",
	  0, 1, 1, cmd_exec_clear, NULL },
	{ "checkpoint", "PATH", "write a consistent copy of the live store to PATH",
	  0, 1, 1, cmd_checkpoint, NULL },
	{ "restore", "PATH", "bring the store back to the state of checkpoint PATH",
	  0, 1, 1, cmd_restore, NULL },
	{ "export", "[FILE]", "write every row as JSON Lines (to FILE or stdout)",
	  0, 0, 1, cmd_export, NULL },
	{ "import", "[FILE]", "read an export (from FILE or stdin) in one transaction",
	  0, 0, 1, cmd_import, NULL },
	{ NULL, NULL, NULL, 0, 0, 0, NULL, NULL },
};

const cli_cmd *cli_cmd_find(const cli_cmd *table, const char *name)
{
	for (const cli_cmd *c = table; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}
