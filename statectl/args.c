/*
 * args.c - statectl's options: one table of every option, a GNU-style parser
 * (options anywhere, --name=value or --name value, "--" ends them), and the
 * help and usage text built from the command table.
 *
 * Not getopt_long: positional words that start with '-' must pass through
 * (a counter delta "-5", "-" for stdin), and each command accepts only the
 * options its table row lists, with a sentence naming the command when it
 * does not. Global options (--db, --json, ...) are accepted anywhere, so
 * `statectl get s n k --json` works as well as `statectl --json get s n k`.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli_i.h"

typedef struct cli_optdef {
	const char *name;
	int id;
	const char *argname;     /* NULL: a flag */
	const char *help;
} cli_optdef;

static const cli_optdef optdefs[] = {
	{ "db", OPT_DB, "PATH", "the store (default: $STATEFS_DB, else ~/.local/state/statefs/state.db)" },
	{ "key-file", OPT_KEY_FILE, "PATH", "the key file (default: $STATEFS_KEY, $STATEFS_KEY_FILE, ~/.config/statefs/key)" },
	{ "plaintext", OPT_PLAINTEXT, NULL, "the store is not encrypted (no key)" },
	{ "passphrase", OPT_PASSPHRASE, NULL, "ask for a passphrase on the terminal instead of a key" },
	{ "json", OPT_JSON, NULL, "machine-readable output: one JSON document on stdout" },
	{ "raw", OPT_RAW, NULL, "names are bytes as given, not written as under the mount" },
	{ "progress", OPT_PROGRESS, NULL, "always draw progress bars on stderr" },
	{ "no-progress", OPT_NO_PROGRESS, NULL, "never draw progress bars" },
	{ "max-value", OPT_MAX_VALUE, "SIZE", "the largest value a put or an import takes (default 64M, at most 953M)" },
	{ "help", OPT_HELP, NULL, "show help (also -h)" },
	{ "version", OPT_VERSION, NULL, "show the version (also -V)" },
	{ "start", OPT_START, "KEY", "first key, inclusive (default: from the first key)" },
	{ "end", OPT_END, "KEY", "end key, exclusive (default: to the last key)" },
	{ "reverse", OPT_REVERSE, NULL, "descending order (the bounds stay the same)" },
	{ "limit", OPT_LIMIT, "N", "at most N rows" },
	{ "keys-only", OPT_KEYS_ONLY, NULL, "print keys (or ids), not values (--json: with their sizes)" },
	{ "all", OPT_ALL, NULL, "the whole namespace (needed when no bound is given)" },
	{ "after", OPT_AFTER, "ID", "only ids greater than ID" },
	{ "lines", OPT_LINES, NULL, "one item per line of stdin" },
	{ "null", OPT_NULL, NULL, "items separated by NUL bytes on stdin" },
	{ "generate", OPT_GENERATE, NULL, "generate the new key" },
	{ "new-key-file", OPT_NEW_KEY_FILE, "PATH", "the new key's file" },
	{ "new-passphrase", OPT_NEW_PASSPHRASE, NULL, "ask for a new passphrase on the terminal" },
	{ "decrypt", OPT_DECRYPT, NULL, "write the store back in plaintext (no key)" },
	{ "family", OPT_FAMILY, "FAMILY", "kv (default), counter, log or queue" },
	{ "max", OPT_MAX, "N", "claim at most N items (default 1)" },
	{ "lease", OPT_LEASE, "DURATION", "the lease: 30s, 10m, 1500ms... (default: the store's, ten minutes)" },
	{ "ttl", OPT_TTL, "DURATION", "drop pending items that waited longer (0: never)" },
	{ "max-deliveries", OPT_MAX_DELIVERIES, "N", "dead after N deliveries (0: no limit)" },
	{ "delete", OPT_DELETE, NULL, "delete the dead letters named (or all, with --all)" },
	{ "interval", OPT_INTERVAL, "DURATION", "between two frames: 1s (default), 500ms, 5s..." },
	{ "once", OPT_ONCE, NULL, "one frame, measured over one interval, then exit" },
	{ NULL, 0, NULL, NULL },
};

static const cli_optdef *optdef_find(const char *name, size_t len)
{
	for (const cli_optdef *d = optdefs; d->name; d++)
		if (strlen(d->name) == len && memcmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

int cli_parse_i64(const char *text, int64_t *out)
{
	char *end;
	long long v;

	/* strtoll skips leading white space; a number here has none */
	if (!text || !*text || isspace((unsigned char)*text))
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || *end || end == text)
		return -1;
	*out = v;
	return 0;
}

static int parse_long(const cli *c, const char *opt, const char *text,
                      int64_t min, int64_t *out)
{
	int64_t v;

	if (cli_parse_i64(text, &v) < 0 || v < min) {
		if (min > 0)
			return cli_usage(c, "--%s takes a positive whole number, "
			                 "not '%s'", opt, text);
		/* "-2" is a whole number: say where the range starts */
		return cli_usage(c, "--%s takes a whole number, %lld or more, "
		                 "not '%s'", opt, (long long)min, text);
	}
	*out = v;
	return CLI_EXIT_OK;
}

/* A duration (text.h: "90", "30s", "1500ms", "10m"). */
static int parse_duration(const cli *c, const char *opt, const char *text,
                          int64_t *out)
{
	int st = fs_duration_parse(text, out);

	if (st == SFS_TOOBIG)
		return cli_usage(c, "--%s: '%s' is too long", opt, text);
	if (st != SFS_OK)
		return cli_usage(c, "--%s: '%s' is not a duration (a whole"
		                 " number, then ms, s, m, h or d)", opt, text);
	return CLI_EXIT_OK;
}

/* Stores one option's value. arg is NULL for flags. */
static int apply(cli *c, cli_args *a, const cli_optdef *d, const char *arg)
{
	int64_t v = 0;
	int rc;

	switch (d->id) {
	case OPT_DB:
		/* --db "$DB" with DB unset: never the default store instead
		 * (the engine refuses an empty name too) */
		if (!*arg)
			return cli_usage(c, "--db: the store's name is empty; "
			                 "leave --db out for $STATEFS_DB or the "
			                 "default store");
		c->db = arg;
		break;
	case OPT_KEY_FILE:
	case OPT_NEW_KEY_FILE:
		/* --key-file "$KEY" with KEY unset, as --db: it was exit 3
		 * "no key file at  (...)", or exit 8 from init ("NULL
		 * argument") */
		if (!*arg)
			return cli_usage(c, "--%s: the key file's name is empty%s",
			                 d->name, d->id == OPT_KEY_FILE
			                 ? "; leave --key-file out for $STATEFS_KEY, "
			                   "$STATEFS_KEY_FILE or the default key file"
			                 : "");
		*(d->id == OPT_KEY_FILE ? &c->keyfile : &a->new_key_file) = arg;
		break;
	case OPT_PLAINTEXT: c->plaintext = 1; break;
	case OPT_PASSPHRASE: c->passphrase = 1; break;
	case OPT_JSON: c->json = 1; break;
	case OPT_RAW: c->raw = 1; break;
	case OPT_PROGRESS: c->progress = CLI_PROGRESS_ALWAYS; break;
	case OPT_NO_PROGRESS: c->progress = CLI_PROGRESS_NEVER; break;
	case OPT_MAX_VALUE:
		c->max_value = fs_size_parse(arg);
		if (!c->max_value)
			return cli_usage(c, "--max-value: '%s' is not a size (a"
			                 " number of bytes, then K, M or G)", arg);
		if (c->max_value > FS_MAX_VALUE_CEILING)
			return cli_usage(c, "--max-value: '%s' is more than SQLite"
			                 " stores in one value (%lluM at most)", arg,
			                 (unsigned long long)(FS_MAX_VALUE_CEILING
			                                      >> 20));
		break;
	case OPT_START: a->start = arg; break;
	case OPT_END: a->end = arg; break;
	case OPT_REVERSE: a->reverse = 1; break;
	case OPT_KEYS_ONLY: a->keys_only = 1; break;
	case OPT_ALL: a->all = 1; break;
	case OPT_LINES: a->lines = 1; break;
	case OPT_NULL: a->nul = 1; break;
	case OPT_GENERATE: a->generate = 1; break;
	case OPT_NEW_PASSPHRASE: a->new_passphrase = 1; break;
	case OPT_DECRYPT: a->decrypt = 1; break;
	case OPT_FAMILY: a->family = arg; break;
	case OPT_DELETE: a->del = 1; break;
	case OPT_ONCE: a->once = 1; break;
	case OPT_INTERVAL:
		if ((rc = parse_duration(c, d->name, arg, &v)))
			return rc;
		if (v < 100 || v > 3600 * 1000)
			return cli_usage(c, "--interval must be between 100ms "
			                 "and 1h");
		a->interval_ms = v;
		break;
	case OPT_MAX:
		if ((rc = parse_long(c, d->name, arg, 1, &v)))
			return rc;
		a->max = v > (int64_t)(~0ul >> 1) ? (long)(~0ul >> 1) : (long)v;
		break;
	case OPT_MAX_DELIVERIES:
		if ((rc = parse_long(c, d->name, arg, 0, &a->max_deliveries)))
			return rc;
		if (a->max_deliveries > SFS_DELIVERIES_MAX)
			return cli_usage(c, "--%s takes at most %lld (the"
			                 " deliveries an item can count; 0: no"
			                 " limit), not '%s'", d->name,
			                 (long long)SFS_DELIVERIES_MAX, arg);
		break;
	case OPT_LEASE:
	case OPT_TTL:
		if ((rc = parse_duration(c, d->name, arg, &v)))
			return rc;
		if (d->id == OPT_LEASE && v == 0)
			return cli_usage(c, "--lease must be longer than 0");
		*(d->id == OPT_LEASE ? &a->lease_ms : &a->ttl_ms) = v;
		break;
	case OPT_LIMIT:
		if ((rc = parse_long(c, d->name, arg, 1, &v)))
			return rc;
		a->limit = v > (int64_t)(~0ul >> 1) ? (long)(~0ul >> 1) : (long)v;
		break;
	case OPT_AFTER:
		if ((rc = parse_long(c, d->name, arg, -1, &v)))
			return rc;
		a->after = v;
		break;
	default:
		return cli_fail(c, CLI_EXIT_INTERNAL, "option --%s has no handler",
		                d->name);
	}
	return CLI_EXIT_OK;
}

/* Parses the option at argv[*i] (it starts with '-' and is not "-", "--" or
 * a negative number), consuming its argument if it takes one. allowed: the
 * command's option bits; 0 for the global parse. */
static int parse_one(cli *c, cli_args *a, uint64_t allowed, int argc,
                     char **argv, int *i)
{
	const char *w = argv[*i];
	const cli_optdef *d;
	const char *arg = NULL, *eq;

	if (w[1] != '-') { /* short options: only -h and -V */
		if (strcmp(w, "-h") == 0)
			d = optdef_find("help", 4);
		else if (strcmp(w, "-V") == 0)
			d = optdef_find("version", 7);
		else
			goto unknown;
		if (!d)
			goto unknown;
	} else {
		eq = strchr(w + 2, '=');
		d = optdef_find(w + 2, eq ? (size_t)(eq - w - 2) : strlen(w + 2));
		if (!d)
			goto unknown;
		if (eq)
			arg = eq + 1;
	}
	if (d->id > OPT_GLOBAL_LAST && !(allowed & CLI_OPT(d->id))) {
		if (c->cmd)
			return cli_usage(c, "'%s' does not take --%s", c->cmdname,
			                 d->name);
		return cli_usage(c, "--%s belongs after a command", d->name);
	}
	if (d->argname && !arg) {
		if (*i + 1 >= argc)
			return cli_usage(c, "--%s needs %s", d->name, d->argname);
		arg = argv[++*i];
	} else if (!d->argname && arg) {
		return cli_usage(c, "--%s takes no value", d->name);
	}
	if (d->id == OPT_HELP) {
		if (c->cmd)
			cli_print_command_help(stdout, c, c->cmd);
		else
			cli_print_help(stdout, NULL);
		return -1;
	}
	if (d->id == OPT_VERSION) {
		printf("statectl %s\n", SFS_VERSION_STRING);
		return -1;
	}
	return apply(c, a, d, arg);
unknown:
	if (c->cmd)
		return cli_usage(c, "unknown option '%s' for '%s'", w, c->cmdname);
	return cli_usage(c, "unknown option '%s'", w);
}

/* Whether a word is an option (and not "-", "--" or a negative number). */
static int is_option(const char *w)
{
	if (w[0] != '-' || w[1] == '\0')
		return 0;
	if (w[1] >= '0' && w[1] <= '9')
		return 0;
	return strcmp(w, "--") != 0;
}

int cli_parse_global(cli *c, int argc, char **argv, int *i)
{
	cli_args scratch;
	int rc;

	memset(&scratch, 0, sizeof(scratch));
	while (*i < argc && is_option(argv[*i])) {
		if ((rc = parse_one(c, &scratch, 0, argc, argv, i)))
			return rc;
		++*i;
	}
	if (*i < argc && strcmp(argv[*i], "--") == 0)
		++*i;
	return CLI_EXIT_OK;
}

int cli_parse_command(cli *c, const cli_cmd *cmd, int argc, char **argv,
                      cli_args *a)
{
	int rc, only_pos = 0;

	a->pos = cli_xmalloc(sizeof(char *) * (size_t)(argc + 1));
	a->npos = 0;
	a->after = -1;
	a->lease_ms = -1;
	a->ttl_ms = -1;
	a->max_deliveries = -1;
	a->interval_ms = -1;
	for (int i = 0; i < argc; i++) {
		if (!only_pos && strcmp(argv[i], "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (!only_pos && is_option(argv[i])) {
			if ((rc = parse_one(c, a, cmd->opts, argc, argv, &i)))
				return rc;
			continue;
		}
		a->pos[a->npos++] = argv[i];
	}
	a->pos[a->npos] = NULL;
	if (a->npos < cmd->min_pos)
		return cli_usage(c, "'%s' needs %s", c->cmdname, cmd->synopsis);
	if (cmd->max_pos >= 0 && a->npos > cmd->max_pos)
		return cli_usage(c, "too many arguments for '%s' (from '%s' on)",
		                 c->cmdname, a->pos[cmd->max_pos]);
	/* a file's name ("$FILE" with FILE unset) is never empty, as --db */
	if ((strstr(cmd->synopsis, "FILE") || strstr(cmd->synopsis, "PATH")) &&
	    a->npos && !*a->pos[0])
		return cli_usage(c, "'%s': the file's name is empty",
		                 c->cmdname);
	if (c->plaintext && (c->keyfile || c->passphrase))
		return cli_usage(c, "--plaintext cannot be combined with %s",
		                 c->keyfile ? "--key-file" : "--passphrase");
	if (c->keyfile && c->passphrase)
		return cli_usage(c, "give --key-file or --passphrase, not both");
	return CLI_EXIT_OK;
}

/* An option's help in a command with the options in mask: --all of
 * delete-range takes a namespace, of queue dead and requeue the dead
 * letters (the only commands with --all and no --start). */
static const char *option_help(const cli_optdef *d, uint64_t mask)
{
	if (d->id == OPT_ALL && !(mask & CLI_OPT(OPT_START)))
		return "every dead letter of the queue (with --delete, or to requeue)";
	return d->help;
}

/* Prints the options whose bits are in mask. */
static void print_options(FILE *f, uint64_t mask)
{
	char left[64];

	for (const cli_optdef *d = optdefs; d->name; d++) {
		if (!(mask & CLI_OPT(d->id)))
			continue;
		snprintf(left, sizeof(left), "--%s%s%s", d->name,
		         d->argname ? " " : "", d->argname ? d->argname : "");
		fprintf(f, "  %-22s %s\n", left, option_help(d, mask));
	}
}

void cli_print_usage_line(FILE *f, const cli *c, const cli_cmd *cmd)
{
	fprintf(f, "usage: statectl [options] %s%s%s%s\n", c->cmdname,
	        cmd->opts ? " [options]" : "", *cmd->synopsis ? " " : "",
	        cmd->synopsis);
}

void cli_print_command_help(FILE *f, const cli *c, const cli_cmd *cmd)
{
	if (cmd->sub) {
		cli_print_help(f, cmd);
		return;
	}
	cli_print_usage_line(f, c, cmd);
	fprintf(f, "\n%s.\n", cmd->summary);
	if (cmd->opts) {
		fprintf(f, "\nOptions:\n");
		print_options(f, cmd->opts);
	}
	fprintf(f, "\nGlobal options (see statectl --help) apply too; "
	           "see statectl(1) for details.\n");
}

void cli_print_help(FILE *f, const cli_cmd *family)
{
	const cli_cmd *table = family ? family->sub : cli_commands;
	char left[64];

	if (family)
		fprintf(f, "usage: statectl [options] %s COMMAND [ARGS...]\n\n"
		           "Commands:\n", family->name);
	else
		fprintf(f, "usage: statectl [options] COMMAND [ARGS...]\n\n"
		           "statectl reads and changes a statefs store: key/value "
		           "entries, counters,\nlogs and queues, and the store "
		           "itself (keys, checkpoints, export).\n\nCommands:\n");
	for (const cli_cmd *cmd = table; cmd->name; cmd++) {
		snprintf(left, sizeof(left), "%s %s", cmd->name,
		         cmd->sub ? "..." : cmd->synopsis);
		fprintf(f, "  %-30s %s\n", left, cmd->summary);
	}
	if (family)
		return;
	fprintf(f, "\nOptions (anywhere on the line):\n");
	print_options(f, (CLI_OPT(OPT_GLOBAL_LAST + 1) - 1));
	fprintf(f,
	        "\nScopes, namespaces and keys are written as they appear under "
	        "the mount.\n"
	        "Exit status: 0 ok, 1 not found, 2 usage, 3 key problem, "
	        "4 corrupt, 5 no store,\n6 exists, 7 busy, 8 bad data, "
	        "9 system error, 10 internal error, 11 claim lost,\n"
	        "130 interrupted.\n"
	        "`statectl help COMMAND` shows a command's options; "
	        "statectl(1) has the details.\n");
}

void cli_print_option_names(FILE *f, uint64_t mask)
{
	mask |= CLI_OPT(OPT_GLOBAL_LAST + 1) - 1;
	for (const cli_optdef *d = optdefs; d->name; d++)
		if (mask & CLI_OPT(d->id))
			fprintf(f, "--%s\n", d->name);
}
