/*
 * cli_i.h - what the files of statectl share (private to statectl/).
 *
 * statectl is a thin client of the engine: main.c parses the global options
 * and walks the command table (table.c) to one handler; the handler parses
 * its own arguments with args.c, opens the store with store.c, makes one or
 * two engine calls and reports through output.c. Handlers live in cmd_*.c,
 * one file per command family. The table is data, so a new family (claims:
 * `queue claim|heartbeat|ack|...`) is a new cmd_*.c plus rows in table.c.
 *
 * Conventions: a handler returns an exit code (CLI_EXIT_*). It prints its
 * result on stdout (JSON with --json, text for people otherwise) and every
 * error on stderr through cli_fail*, which also picks the exit code, so that
 * the mapping from engine status to exit code lives in one place.
 */
#ifndef STATECTL_CLI_I_H
#define STATECTL_CLI_I_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "statefs.h"
#include "text.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* Exit codes, documented in statectl(1) and docs/statectl.md. Stable: scripts
 * test them. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_NOTFOUND = 1,   /* no such key/entry/item; an empty queue */
	CLI_EXIT_USAGE = 2,      /* unknown command or option, bad argument */
	CLI_EXIT_KEY = 3,        /* wrong key, no key, unsafe key file, key for a plaintext store */
	CLI_EXIT_CORRUPT = 4,    /* verification or authentication failed */
	CLI_EXIT_NOSTORE = 5,    /* no store at the path, or not a statefs store */
	CLI_EXIT_EXISTS = 6,     /* would overwrite (init, keygen, checkpoint), or not empty */
	CLI_EXIT_BUSY = 7,       /* another process held the store past the timeout */
	CLI_EXIT_DATA = 8,       /* rejected data: too large, overflow, bad import input;
	                            what the store's backend cannot do */
	CLI_EXIT_SYSTEM = 9,     /* I/O error, disk full, read-only, out of memory */
	CLI_EXIT_INTERNAL = 10,  /* a bug in statefs or statectl */
	CLI_EXIT_CLAIMLOST = 11, /* a claim expired before it was acked */
	CLI_EXIT_INTERRUPTED = 130, /* Ctrl-C during a long operation */
};

enum cli_progress_mode {
	CLI_PROGRESS_AUTO = 0,   /* a bar when stderr is a terminal */
	CLI_PROGRESS_ALWAYS,     /* a bar whatever stderr is, from the start */
	CLI_PROGRESS_NEVER,
};

/* Options, by id. The global ones are accepted anywhere on the line; the
 * others only by commands whose table row lists them. */
enum cli_optid {
	OPT_DB,
	OPT_KEY_FILE,
	OPT_PLAINTEXT,
	OPT_PASSPHRASE,
	OPT_JSON,
	OPT_RAW,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_MAX_VALUE,
	OPT_HELP,
	OPT_VERSION,
	OPT_GLOBAL_LAST = OPT_VERSION,
	OPT_START,
	OPT_END,
	OPT_REVERSE,
	OPT_LIMIT,
	OPT_KEYS_ONLY,
	OPT_ALL,
	OPT_AFTER,
	OPT_LINES,
	OPT_NULL,
	OPT_GENERATE,
	OPT_NEW_KEY_FILE,
	OPT_NEW_PASSPHRASE,
	OPT_DECRYPT,
	OPT_FAMILY,
	OPT_MAX,
	OPT_LEASE,
	OPT_TTL,
	OPT_MAX_DELIVERIES,
	OPT_DELETE,
	OPT_COUNT,
	OPT_INTERVAL,
	OPT_ONCE,
};

#define CLI_OPT(id) (1ull << (id))

/* What main() knows when it calls a handler. */
typedef struct cli {
	/* global options */
	const char *db;          /* --db, NULL: the engine's rules */
	const char *keyfile;     /* --key-file */
	int plaintext;           /* --plaintext */
	int passphrase;          /* --passphrase: prompt on the terminal */
	int json;                /* --json */
	int raw;                 /* --raw: names are bytes as given */
	int progress;            /* enum cli_progress_mode */
	uint64_t max_value;      /* --max-value, 0: the engine's default */
	/* the command being run, for usage messages */
	const struct cli_cmd *cmd;
	char cmdname[48];        /* "queue push" */
	char *opened;            /* the store cli_store_open opened, for
	                            messages (malloc'd) */
	const char *corrupt_hint; /* what to do, added when the store is
	                             damaged (restore), or NULL */
	int writer;              /* the store was opened to be changed: an
	                            output that then fails says the change
	                            was made (cli_out_finish) */
} cli;

/* A command's own arguments, after parsing. Strings point into argv. */
typedef struct cli_args {
	char **pos;              /* positional arguments */
	int npos;
	const char *start;       /* --start, NULL when not given */
	const char *end;         /* --end */
	int reverse;
	int keys_only;
	int all;
	long limit;              /* --limit, 0: none */
	int64_t after;           /* --after, -1: from the start */
	int lines;               /* --lines: one item per line of stdin */
	int nul;                 /* --null: items separated by NUL */
	int generate;            /* --generate */
	const char *new_key_file;/* --new-key-file */
	int new_passphrase;      /* --new-passphrase */
	int decrypt;             /* --decrypt */
	const char *family;      /* --family */
	long max;                /* --max, 0: not given */
	int64_t lease_ms;        /* --lease, -1: not given */
	int64_t ttl_ms;          /* --ttl, -1: not given */
	int64_t max_deliveries;  /* --max-deliveries, -1: not given */
	int del;                 /* --delete */
	int64_t interval_ms;     /* --interval, -1: not given */
	int once;                /* --once */
} cli_args;

typedef int (*cli_run_fn)(cli *c, cli_args *a);

/* One row of the command table. A row with `sub` is a family (counter, log,
 * queue): its next word picks the row in `sub`. */
typedef struct cli_cmd {
	const char *name;
	const char *synopsis;    /* arguments after the name, for usage */
	const char *summary;     /* one line for --help */
	uint64_t opts;           /* CLI_OPT() bits of the command options it takes */
	int min_pos, max_pos;    /* positional arguments; max -1: any number */
	cli_run_fn run;
	const struct cli_cmd *sub; /* NULL-name terminated */
} cli_cmd;

/* table.c */
extern const cli_cmd cli_commands[];
const cli_cmd *cli_cmd_find(const cli_cmd *table, const char *name);

/* args.c */
/* Parses the global options at argv[*i...] up to the first word that is not
 * one; returns CLI_EXIT_OK or an exit code after printing the error. */
int cli_parse_global(cli *c, int argc, char **argv, int *i);
/* Parses a command's options and positional arguments (rest of the line). */
int cli_parse_command(cli *c, const cli_cmd *cmd, int argc, char **argv,
                      cli_args *a);
int cli_parse_i64(const char *text, int64_t *out);
void cli_print_help(FILE *f, const cli_cmd *family);
void cli_print_command_help(FILE *f, const cli *c, const cli_cmd *cmd);
void cli_print_usage_line(FILE *f, const cli *c, const cli_cmd *cmd);
/* The global options and those in mask, one "--name" per line. */
void cli_print_option_names(FILE *f, uint64_t mask);

/* output.c */
int cli_exit_for_status(int status);
/* "statectl: <sentence>" on stderr (a JSON object with --json); returns
 * the exit code given. */
int cli_fail(const cli *c, int code, const char *fmt, ...) CLI_PRINTF(3, 4);
/* "statectl: <context>: <what the engine said>"; the exit code follows the
 * status. */
int cli_fail_status(const cli *c, int status, const char *fmt, ...)
	CLI_PRINTF(3, 4);
/* A usage error: the sentence, the command's usage line, "see statectl
 * --help". Returns CLI_EXIT_USAGE. */
int cli_usage(const cli *c, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Prints obj as one line of JSON on stdout and releases it. */
int cli_out_json(json_t *obj);
/* json_dumpf, with DEL and the C1 controls in strings written \u00XX so
 * that no control byte reaches a terminal: 0, or -1 (errno set by the
 * failed write). */
int cli_json_dumpf(const json_t *obj, FILE *f, size_t flags);
/* Sets obj[name] to the bytes as a JSON string when they are valid UTF-8,
 * else obj[name + "_b64"] to their base64. */
int cli_json_set_bytes(json_t *obj, const char *name, const void *p,
                       size_t n);
/* A file name is bytes too: cli_json_set_bytes of path (NUL-terminated). */
int cli_json_set_path(json_t *obj, const char *name, const char *path);
/* A new object holding only that field (so that it comes first). */
json_t *cli_json_path_object(const char *name, const char *path);
/* Reads back what cli_json_set_bytes wrote. *present is 0 when neither
 * field is there. The buffer is malloc'd (NUL-terminated); free() it. */
int cli_json_get_bytes(json_t *obj, const char *name, void **p, size_t *n,
                       int *present, const char **err);
/* Writes bytes for people: printable UTF-8 as is, the rest as \n, \t, \\,
 * \xNN. */
void cli_out_human(FILE *f, const void *p, size_t n);
/* The same for a C string (a store's path), as a new string; free() it. */
char *cli_human(const char *s);
/* Writes bytes unchanged to stdout. */
int cli_out_raw(const void *p, size_t n);
/* Prints a count: the number alone, or {scope, ns, key, count}. */
struct cli_name;
int cli_out_count(const cli *c, const struct cli_name *nm, int nnames,
                  uint64_t count);
/* Prints a listing of kv entries, log entries or queue items: for people
 * one "NAME<TAB>VALUE" line each (the value escaped; NAME alone with
 * keys_only), NAME being the key as under the mount (kind: the
 * fs_name_kind of the keys) or, with kind CLI_LIST_IDS, the id; with
 * --json, head (the object that names what is listed) gets "entries":
 * [{"key" or "id", "value" (not with keys_only), "size", "mtime_ns" when
 * known}] and is printed. Takes head over. */
#define CLI_LIST_IDS (-1)
int cli_out_entries(const cli *c, json_t *head, const sfs_list *l,
                    int keys_only, int kind);
/* Sets obj["queue"] to the queue's name. */
/* A fact only the store's backend has (statefs.h, sfs_info.facts): 1 and
 * *value when it has the one named, else 0. */
int cli_info_fact(const sfs_info *in, const char *name, uint64_t *value);
/* Sets each of the backend's facts in obj under its own name. */
void cli_json_set_facts(json_t *obj, const sfs_info *in);
void cli_json_set_queue(json_t *obj, const struct cli_name *q);
/* A failure on a queue: "statectl: cannot <verb> queue 'q': <engine>";
 * the exit code follows the status. */
int cli_fail_queue(const cli *c, int status, const char *verb,
                   const struct cli_name *q);
/* For commands that take what they print (queue pop, drain, claim): a
 * reader that went away becomes a write error (EPIPE) instead of a SIGPIPE
 * that would kill the process before it can put back what it took. */
void cli_out_no_sigpipe(void);
/* Ends what such a command took under claim from where (a queue or a
 * namespace, quoted as in messages): flushes stdout and, when that and
 * rc (the printing's exit code) succeeded, acks the claim (what it took
 * is gone) if ack, else leaves it held (queue claim: the reader settles
 * it); when either failed, nacks it (all of it is back in its place,
 * also rows a reader may have got before the write failed: nobody learnt
 * the claim's id) and reports "cannot write the output: <why>; nothing
 * was taken from <where>" (exit 9). Returns the exit code. */
int cli_out_settle(const cli *c, sfs_store *s, int64_t claim, int rc,
                   const char *where, int ack);
/* Flushes stdout: 9 when that fails, which cli_out_finish then reports
 * with its reason. */
int cli_out_flush(void);
/* Drops what stdout holds unwritten and forgets a failed write: for a
 * command that quits (top, on a signal) while its output waits for a
 * reader, so that the exit neither waits for it again nor reports it. */
void cli_out_discard(void);
/* Checks that everything reached stdout, at exit: when it did not, says
 * so ("cannot write the output: <why>") unless an error was reported
 * already, and returns 9 for a code that was 0. */
int cli_out_finish(const cli *c, int code);

/* names.c: scopes, namespaces and keys on the command line and in messages,
 * in the filesystem's name codec. */
typedef struct cli_name { /* a decoded name */
	sfs_slice s;             /* the bytes; valid while the cli_name lives */
	sfs_buf mem;             /* owns them (decoded) */
	void *copy;              /* or owns them (resolved), malloc'd */
	fs_name_kind kind;
	int hashed;              /* a long name: s is only its prefix */
	const char *text;        /* the name as given */
} cli_name;
/* Takes --raw into account for everything below (call once). */
void cli_names_init(const cli *c);
/* Decodes a name given on the command line. what: "scope", "key"... */
int cli_name_parse(const cli *c, const char *arg, const char *what,
                   fs_name_kind kind, cli_name *out);
void cli_name_free(cli_name *n);
/* The name as it appears under the mount, quoted for a message:
 * malloc'd, free() it. Never NULL (exits on allocation failure). */
char *cli_name_show(const void *p, size_t n, fs_name_kind kind);
/* The name as it appears under the mount, unquoted, for plain listings. */
void cli_name_print(FILE *f, const void *p, size_t n, fs_name_kind kind);
/* Decodes n names from args: scope, namespace, key (in that order). On
 * failure the ones decoded are freed. */
int cli_names_parse(const cli *c, char **args, int n, cli_name *out);
void cli_names_free(cli_name *nm, int n);
/* Finds the strings that long (hashed) names among nm stand for, in the
 * given family of the open store (SFS_FAM_DIR: a scope of any family that
 * has scopes, key/value, log or counter). Exit 1 when one names nothing. */
int cli_names_resolve(const cli *c, sfs_store *s, sfs_family fam,
                      cli_name *nm, int n);
/* "key 'k' in scope 's' namespace 'n'" (n == 3; noun replaces "key" when
 * not NULL), "namespace 'n' of scope 's'" (2), "scope 's'" (1): malloc'd. */
char *cli_names_where(const cli_name *nm, int n, const char *noun);
/* The failure of an operation on the names nm (described as
 * cli_names_where does): SFS_NOTFOUND is "no such <where>" (exit 1), any
 * other status "cannot <doing> <where>: <status>" (cli_fail_status). */
int cli_fail_names(const cli *c, int status, const cli_name *nm, int n,
                   const char *noun, const char *doing);
/* Sets "scope", "ns", "key" (the first n) on a JSON object. */
void cli_names_json(json_t *obj, const cli_name *nm, int n);

/* cmd_kv.c: shared with the other families */
/* A value from argument i, or stdin when it is absent or "-". *mem is the
 * buffer read from stdin, if any: free() it. */
int cli_value_arg(const cli *c, cli_args *a, int i, sfs_slice *out,
                  void **mem);
/* --start and --end as key names of namespace ns; SFS_NONE when not
 * given. */
int cli_bounds_parse(const cli *c, const cli_args *a, sfs_slice ns,
                     cli_name *start, cli_name *end);

/* items.c: listings read past damaged rows (a store that authenticates
 * each row alone: PostgreSQL): a queue's items in one state, a
 * namespace's keys, a log's entries. */
typedef struct cli_items {
	sfs_list l;              /* the items that could be read */
	int owned;               /* their values are malloc'd one by one */
	size_t damaged;          /* items left out, each named on stderr */
} cli_items;
/* sfs_item_scan with a's --after, --limit and --keys-only. When the values
 * do not open (SFS_CORRUPT), lists again without them and reads each alone:
 * an item that fails authentication is named on stderr ("cannot read
 * <what> ID of queue 'q', so it is left out of the listing: ...") and left
 * out of *out, the others stay. Any other failure is reported as "cannot
 * <verb> queue 'q'". Returns CLI_EXIT_OK (*out filled: cli_items_free it)
 * or the exit code of the failure. */
int cli_items_scan(const cli *c, sfs_store *s, const struct cli_name *q,
                   sfs_item_state state, const cli_args *a,
                   const char *what, const char *verb, cli_items *out);
/* sfs_kv_scan of namespace nm[1] of scope nm[0], and sfs_log_scan of log
 * nm[2] there with a's --after, --limit and --keys-only, read past
 * damaged rows as cli_items_scan does ("cannot read key 'k' in scope 's'
 * namespace 'n', so it is left out of the listing", "cannot read entry 7
 * of log 'k' in ..."). Return the engine's status: the caller reports a
 * failure. */
int cli_items_kv(const cli *c, sfs_store *s, const struct cli_name *nm,
                 const sfs_scan_opts *so, cli_items *out);
int cli_items_log(const cli *c, sfs_store *s, const struct cli_name *nm,
                  const cli_args *a, cli_items *out);
/* The listing's exit code: rc, or CLI_EXIT_CORRUPT when it left out an
 * item and rc is 0. */
int cli_items_end(const cli_items *it, int rc);
void cli_items_free(cli_items *it);

/* store.c */
/* CLI_STORE_GC: writable, without the claim recovery every writable open
 * runs (queue gc reports what its own pass did). */
enum { CLI_STORE_READ = 0, CLI_STORE_WRITE = 1, CLI_STORE_GC = 2 };
/* Opens the store by the engine's rules (sfs_store_open with
 * SFS_OPEN_ENV), with the passphrase prompt when --passphrase was given,
 * and keeps its name in c->opened. Prints the error. */
int cli_store_open(cli *c, int mode, sfs_store **out);
/* cli_store_open, then cli_names_resolve of the names given. */
int cli_store_open_names(cli *c, int mode, sfs_store **out, sfs_family fam,
                         cli_name *nm, int n);
/* The queue named by the first positional argument (into *q) and the
 * store, opened with cli_store_open_names; on failure neither is left to
 * free. */
int cli_store_open_queue(cli *c, const cli_args *a, int mode, cli_name *q,
                         sfs_store **out);
/* The store path, key and key file the engine's rules pick
 * (sfs_config_resolve) from --db, --key-file, --plaintext and the
 * environment; have: a key the caller already holds (a passphrase);
 * ignore_plaintext: as if --plaintext were not given (to find where an
 * encrypted store's key file goes). Prints the error. */
int cli_resolve(cli *c, const sfs_key *have, int ignore_plaintext,
                char **db, sfs_key **key, char **keyfile);
/* The store path and the key itself, for commands that need it (rekey):
 * from the passphrase prompt with --passphrase, else by the rules. *keyfile
 * gets the key file it came from, or NULL (environment, passphrase). A
 * missing key file is an error. Prints the error. */
int cli_key_load(cli *c, char **db, sfs_key **key, char **keyfile);
/* Prompts twice (confirm != 0) or once on the terminal, without echo. */
int cli_passphrase_key(const cli *c, const char *prompt, int confirm,
                       sfs_key **out);

/* progress.c */
typedef struct cli_progress {
	const char *label;
	const char *unit;
	int on;                  /* 0 no bar, 1 after a delay, 2 at once */
	int drawn;               /* something is on the line */
	int64_t start_ns;
	int64_t last_ns;
	uint64_t done, total;
	uint64_t shown;           /* done when last drawn */
} cli_progress;
void cli_progress_begin(cli_progress *p, const cli *c, const char *label,
                        const char *unit);
/* An sfs_progress_fn; ctx is the cli_progress. Returns nonzero after
 * Ctrl-C, which cancels the engine call. */
int cli_progress_cb(uint64_t done, uint64_t total, void *ctx);
void cli_progress_end(cli_progress *p);
/* Erases a bar on the terminal so that a message can be written. */
void cli_progress_clear(void);
/* Whether Ctrl-C was pressed since cli_progress_begin. */
int cli_interrupted(void);

/* util (output.c): reading all of a stream, binary-safe, into *p (NUL
 * terminated; free() it) and *n: 0; -1 with errno set; -2 when the stream
 * holds more than max bytes, or (sep >= 0) more than max_seps bytes sep,
 * having read that far (so a runaway input, `yes |` or /dev/zero, costs
 * that much memory, not all there is). */
int cli_read_all(FILE *f, size_t max, int sep, size_t max_seps, void **p,
                 size_t *n);
/* Tells a user whose stdin is a terminal that what (as "the value") is
 * read from it, and how to end it: a command waiting in silence looked
 * hung. */
void cli_tty_notice(const char *what);
/* The largest value the engine takes (--max-value, else its default). */
size_t cli_max_value(const cli *c);
/* Reports an input of more than cli_max_value(c) bytes on stdin (what, as
 * "the value", "the item"): exit 8. */
int cli_fail_too_long(const cli *c, const char *what);
void *cli_xmalloc(size_t n);
/* asprintf that exits on allocation failure, as cli_xmalloc. */
char *cli_xasprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
char *cli_xstrdup(const char *s);

/* Command handlers, by file. */
/* cmd_admin.c */
int cmd_init(cli *c, cli_args *a);
int cmd_keygen(cli *c, cli_args *a);
int cmd_info(cli *c, cli_args *a);
int cmd_verify(cli *c, cli_args *a);
int cmd_rekey(cli *c, cli_args *a);
int cmd_checkpoint(cli *c, cli_args *a);
int cmd_restore(cli *c, cli_args *a);
/* cmd_kv.c */
int cmd_get(cli *c, cli_args *a);
int cmd_put(cli *c, cli_args *a);
int cmd_del(cli *c, cli_args *a);
int cmd_scan(cli *c, cli_args *a);
int cmd_delete_range(cli *c, cli_args *a);
int cmd_drain(cli *c, cli_args *a);
int cmd_exec_clear(cli *c, cli_args *a);
int cmd_ls(cli *c, cli_args *a);
/* cmd_counter.c */
int cmd_counter_get(cli *c, cli_args *a);
int cmd_counter_add(cli *c, cli_args *a);
int cmd_counter_set(cli *c, cli_args *a);
int cmd_counter_del(cli *c, cli_args *a);
int cmd_counter_scan(cli *c, cli_args *a);
/* cmd_log.c */
int cmd_log_append(cli *c, cli_args *a);
int cmd_log_scan(cli *c, cli_args *a);
int cmd_log_clear(cli *c, cli_args *a);
/* cmd_queue.c */
int cmd_queue_push(cli *c, cli_args *a);
int cmd_queue_pop(cli *c, cli_args *a);
int cmd_queue_len(cli *c, cli_args *a);
int cmd_queue_clear(cli *c, cli_args *a);
int cmd_queue_scan(cli *c, cli_args *a);
/* cmd_transfer.c */
int cmd_export(cli *c, cli_args *a);
int cmd_import(cli *c, cli_args *a);
/* The import's reading: the export read from in (name says what it is in
 * messages) into s in one sfs_import, the header line, then a row a line;
 * *rows gets the rows read. CLI_EXIT_OK, or the failure, already reported
 * (then nothing was imported). Separate for fuzz/fuzz_import.c. */
int cli_import_read(const cli *c, FILE *in, const char *name, sfs_store *s,
                    uint64_t *rows);
/* cmd_top.c, cmd_metrics.c */
int cmd_top(cli *c, cli_args *a);
int cmd_metrics(cli *c, cli_args *a);
/* cmd_claim.c */
int cmd_claim(cli *c, cli_args *a);
int cmd_claim_heartbeat(cli *c, cli_args *a);
int cmd_claim_ack(cli *c, cli_args *a);
int cmd_claim_nack(cli *c, cli_args *a);
int cmd_claim_inflight(cli *c, cli_args *a);
int cmd_claim_dead(cli *c, cli_args *a);
int cmd_claim_requeue(cli *c, cli_args *a);
int cmd_claim_gc(cli *c, cli_args *a);
int cmd_claim_policy(cli *c, cli_args *a);

#endif /* STATECTL_CLI_I_H */
