/*
 * main.c - statectl's entry: process hardening, global options, and the
 * walk down the command table to one handler.
 *
 * Keys live in this process's memory, so core dumps are off before anything
 * else happens (a crash must not write the key to disk), and the process is
 * made non-dumpable so that another process of the same user cannot ptrace
 * it or read /proc/PID/mem.
 *
 * Two words are not in the command table: `help [COMMAND [SUB]]`, and the
 * undocumented-in-help `--list-commands [FAMILY]` / `--list-options COMMAND
 * [SUB]` that the bash completion calls, so completion follows the table.
 */
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <sodium.h>

#include "cli_i.h"

static void harden(void)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* A command lives for one request, and its large buffers (an import's
 * line and its decoded value, the value's copies through jansson and
 * SQLite: 64 MiB each, several times over, at --max-value) come and go.
 * glibc gives each of those its own mmap, and hands it back at free, so
 * the next one faults in every page afresh, and each heap top freed is
 * trimmed too: an import of one 64 MiB value spent a third of its time
 * in page faults. Here the heap keeps what it got, and reuses it, until
 * the process exits; the peak is the same (the 1 GiB line of
 * tests/cli/cli_export.sh peaks at the same 400 MiB). (An allocator
 * without these knobs, a sanitizer's, ignores them.) */
static void tune_malloc(void)
{
#if defined(M_MMAP_MAX) && defined(M_TRIM_THRESHOLD)
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

/* For bash completion: the names in a table, one per line. */
static int list_commands(int argc, char **argv)
{
	const cli_cmd *table = cli_commands, *fam;

	if (argc > 2) {
		fam = cli_cmd_find(cli_commands, argv[2]);
		if (!fam || !fam->sub)
			return CLI_EXIT_NOTFOUND;
		table = fam->sub;
	}
	for (const cli_cmd *c = table; c->name; c++)
		printf("%s\n", c->name);
	if (table == cli_commands)
		printf("help\n");
	return CLI_EXIT_OK;
}

/* For bash completion: the options of a command, one per line. */
static int list_options(int argc, char **argv)
{
	const cli_cmd *cmd = argc > 2 ? cli_cmd_find(cli_commands, argv[2]) : NULL;

	if (cmd && cmd->sub)
		cmd = argc > 3 ? cli_cmd_find(cmd->sub, argv[3]) : NULL;
	cli_print_option_names(stdout, cmd ? cmd->opts : 0);
	return CLI_EXIT_OK;
}

/* Finds the command named at argv[*i] (and its subcommand), sets c->cmd. */
static int resolve(cli *c, int argc, char **argv, int *i, const cli_cmd **out)
{
	const cli_cmd *cmd, *fam;
	int rc;

	cmd = cli_cmd_find(cli_commands, argv[*i]);
	if (!cmd)
		return cli_usage(c, "unknown command '%s'", argv[*i]);
	++*i;
	if (cmd->sub) {
		fam = cmd;
		c->cmd = fam;
		snprintf(c->cmdname, sizeof(c->cmdname), "%s", fam->name);
		if ((rc = cli_parse_global(c, argc, argv, i)))
			return rc;
		if (*i >= argc) {
			/* every subcommand, from the table (the synopsis
			 * names a few and '...') */
			char names[512];
			size_t n = 0;

			names[0] = '\0';
			for (const cli_cmd *s = fam->sub; s->name; s++) {
				int w = snprintf(names + n, sizeof(names) - n,
				                 "%s%s", n ? ", " : "", s->name);

				if (w < 0 || (size_t)w >= sizeof(names) - n)
					break;
				n += (size_t)w;
			}
			return cli_usage(c, "'%s' needs a command: %s (see "
			                 "statectl %s --help)", fam->name, names,
			                 fam->name);
		}
		cmd = cli_cmd_find(fam->sub, argv[*i]);
		if (!cmd)
			return cli_usage(c, "unknown command '%s %s'", fam->name,
			                 argv[*i]);
		++*i;
		snprintf(c->cmdname, sizeof(c->cmdname), "%s %s", fam->name,
		         cmd->name);
	} else {
		snprintf(c->cmdname, sizeof(c->cmdname), "%s", cmd->name);
	}
	c->cmd = cmd;
	*out = cmd;
	return CLI_EXIT_OK;
}

/* `statectl help [COMMAND [SUB]]` */
static int help(cli *c, int argc, char **argv, int i)
{
	const cli_cmd *cmd;
	int rc;

	if (i >= argc) {
		cli_print_help(stdout, NULL);
		return CLI_EXIT_OK;
	}
	cmd = cli_cmd_find(cli_commands, argv[i]);
	if (cmd && cmd->sub && i + 1 >= argc) { /* help FAMILY */
		cli_print_help(stdout, cmd);
		return CLI_EXIT_OK;
	}
	if ((rc = resolve(c, argc, argv, &i, &cmd)))
		return rc;
	if (i < argc)
		return cli_usage(c, "'help' takes one command");
	cli_print_command_help(stdout, c, cmd);
	return CLI_EXIT_OK;
}

/* The command line's work; its exit code, or -1 after --help or
 * --version printed. main() checks the output once, after it. */
static int run(cli *c, int argc, char **argv)
{
	cli_args a;
	const cli_cmd *cmd;
	int i = 1, rc;

	memset(&a, 0, sizeof(a));
	if (argc > 1 && strcmp(argv[1], "--list-commands") == 0)
		return list_commands(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--list-options") == 0)
		return list_options(argc, argv);
	if ((rc = cli_parse_global(c, argc, argv, &i)))
		return rc;
	if (i >= argc) {
		cli_print_help(stderr, NULL);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[i], "help") == 0) {
		/* help --help (-h): what help is for is the general help */
		if (argc == i + 2 && (strcmp(argv[i + 1], "--help") == 0 ||
		                      strcmp(argv[i + 1], "-h") == 0))
			return help(c, argc, argv, argc);
		if (argc > i + 1 && argv[i + 1][0] == '-')
			return cli_usage(c, "'help' takes a command name");
		return help(c, argc, argv, i + 1);
	}
	if ((rc = resolve(c, argc, argv, &i, &cmd)))
		return rc;
	rc = cli_parse_command(c, cmd, argc - i, argv + i, &a);
	if (rc == CLI_EXIT_OK) {
		cli_names_init(c);
		rc = cmd->run(c, &a);
	}
	free(a.pos);
	return rc;
}

int main(int argc, char **argv)
{
	cli c;
	int rc;

	harden();
	tune_malloc();
	if (sodium_init() < 0) {
		fputs("statectl: cannot initialise libsodium\n", stderr);
		return CLI_EXIT_INTERNAL;
	}
	memset(&c, 0, sizeof(c));
	rc = run(&c, argc, argv);
	free(c.opened);
	/* once: a failed write is reported by the first call, and a second
	 * would report it again (`statectl get --help >/dev/full` said
	 * it twice, the second time as an I/O error) */
	return cli_out_finish(&c, rc < 0 ? CLI_EXIT_OK : rc);
}
