/*
 * options.c - the command line, in the style of sshfs: one fuse_opt table
 * built with an offsetof macro, defaults set before parsing, combinations
 * checked after with a plain sentence and "see -h".
 *
 * mount(8) runs a fuse.statefs line of /etc/fstab as
 *   statefs STORE MOUNTPOINT -o OPTIONS
 * so a first positional argument names the store ("none" or "statefs" for
 * the default), like -o db=. A key is never accepted on the command line:
 * every process can read argv in /proc.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountd_i.h"

/* Most threads -o threads= may ask for. */
#define MAX_THREADS 64

enum {
	KEY_HELP,
	KEY_VERSION,
	KEY_KEY,
	KEY_DEBUG,
};

#define MOUNTD_OPT(t, p, v) { t, offsetof(mountd_opts, p), v }

static const struct fuse_opt mountd_opt_table[] = {
	MOUNTD_OPT("db=%s", db, 0),
	MOUNTD_OPT("keyfile=%s", keyfile, 0),
	MOUNTD_OPT("plaintext", plaintext, 1),
	MOUNTD_OPT("ro", ro, 1),
	MOUNTD_OPT("max_value=%s", max_value_text, 0),
	MOUNTD_OPT("lease=%s", lease_text, 0),
	MOUNTD_OPT("max_buffered=%s", max_buffered_text, 0),
	MOUNTD_OPT("umask=%s", umask_text, 0),
	MOUNTD_OPT("threads=%s", threads_text, 0),
	MOUNTD_OPT("async_close", async_close, 1),
	MOUNTD_OPT("allow_other", allow_other, 1),
	MOUNTD_OPT("default_permissions", default_permissions, 1),
	MOUNTD_OPT("-f", foreground, 1),
	MOUNTD_OPT("-s", singlethread, 1),
	MOUNTD_OPT("-d", debug, 1),
	MOUNTD_OPT("debug", debug, 1),
	FUSE_OPT_KEY("ro", FUSE_OPT_KEY_KEEP),       /* and mount read-only */
	FUSE_OPT_KEY("allow_other", FUSE_OPT_KEY_KEEP),
	FUSE_OPT_KEY("default_permissions", FUSE_OPT_KEY_KEEP),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("key=", KEY_KEY),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

static int proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	mountd_opts *o = data;

	(void)out;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (o->nargs < 3 && !(o->args[o->nargs] = strdup(arg)))
			return -1;
		o->nargs++;
		return 0;
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case KEY_KEY:
		/* Never repeated anywhere; fuse_opt's copy is wiped here and
		 * argv by mountd_wipe_argv_keys. */
		o->key_on_command_line = 1;
		memset((char *)arg, 0, strlen(arg));
		return 0;
	case KEY_DEBUG:
		return fuse_opt_add_arg(out, "-odebug") ? -1 : 0;
	default:
		return 1; /* keep: an option for libfuse */
	}
}

void mountd_wipe_argv_keys(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		for (char *p = argv[i]; (p = strstr(p, "key=")); p += 4) {
			int boundary = p == argv[i] || p[-1] == ',' ||
			               (p - argv[i] == 2 && argv[i][0] == '-' &&
			                argv[i][1] == 'o');
			if (!boundary)
				continue;
			for (char *v = p + 4; *v && *v != ','; v++)
				*v = 'x';
		}
	}
}

/* A whole number in base from lo to hi into *out: 0, or -1. */
static int parse_unsigned(const char *s, int base, unsigned long lo,
                          unsigned long hi, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1; /* strtoul would take " 3", "+3" and "-1" */
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* "64M" -> 67108864; 0 when it is not a size. */
/* fsname=PATH for mount(8) and df, with fuse_opt's separators escaped. */
static int add_fsname(struct fuse_args *args, const char *db)
{
	size_t n = strlen(db);
	char *s = malloc(2 * n + 16), *p;
	int rc;

	if (!s)
		return -1;
	p = s + sprintf(s, "-ofsname=");
	for (size_t i = 0; i < n; i++) {
		if (db[i] == ',' || db[i] == '\\')
			*p++ = '\\';
		*p++ = db[i];
	}
	*p = '\0';
	rc = fuse_opt_add_arg(args, s);
	free(s);
	return rc;
}

int mountd_opts_parse(struct fuse_args *args, mountd_opts *o)
{
	const char *prog = args->argc > 0 ? args->argv[0] : "statefs";

	memset(o, 0, sizeof(*o));
	if (fuse_opt_parse(args, o, mountd_opt_table, proc) == -1)
		return -1;
	if (o->show_help || o->show_version)
		return 0;
	if (o->debug)
		o->foreground = 1;

	if (o->key_on_command_line) {
		fprintf(stderr, "%s: a key is never given on the command line "
		        "(ps would show it); use -o keyfile=PATH, STATEFS_KEY or "
		        "STATEFS_KEY_FILE; see -h\n", prog);
		return -1;
	}
	if (o->nargs == 0) {
		fprintf(stderr, "%s: no mountpoint given; see -h\n", prog);
		return -1;
	}
	if (o->nargs > 2) {
		fprintf(stderr, "%s: too many arguments (%s); the usage is "
		        "statefs [options] [STORE] MOUNTPOINT; see -h\n", prog,
		        o->args[2]);
		return -1;
	}
	o->mountpoint = o->args[o->nargs - 1];
	if (o->nargs == 2 && strcmp(o->args[0], "none") != 0 &&
	    strcmp(o->args[0], "statefs") != 0) {
		if (o->db && strcmp(o->db, o->args[0]) != 0) {
			fprintf(stderr, "%s: the store is given twice (%s and "
			        "-o db=%s); see -h\n", prog, o->args[0], o->db);
			return -1;
		}
		if (!o->db && !(o->db = strdup(o->args[0])))
			return -1;
	}
	if (o->plaintext && o->keyfile) {
		fprintf(stderr, "%s: -o plaintext and -o keyfile= cannot be used "
		        "together (a plaintext store has no key); see -h\n", prog);
		return -1;
	}
	if (o->max_value_text) {
		o->max_value = fs_size_parse(o->max_value_text);
		if (o->max_value == 0) {
			fprintf(stderr, "%s: -o max_value=%s is not a size (a number "
			        "of bytes, optionally followed by K, M or G); see -h\n",
			        prog, o->max_value_text);
			return -1;
		}
		if (o->max_value > FS_MAX_VALUE_CEILING) {
			fprintf(stderr, "%s: -o max_value=%s is %llu bytes, more than "
			        "SQLite stores in one value (%llu bytes, %lluM at "
			        "most); see -h\n", prog, o->max_value_text,
			        (unsigned long long)o->max_value,
			        (unsigned long long)FS_MAX_VALUE_CEILING,
			        (unsigned long long)(FS_MAX_VALUE_CEILING >> 20));
			return -1;
		}
	}
	if (o->max_buffered_text) {
		uint64_t vmax = o->max_value ? o->max_value
		                             : SFS_DEFAULT_MAX_VALUE;

		o->max_buffered = fs_size_parse(o->max_buffered_text);
		if (o->max_buffered == 0) {
			fprintf(stderr, "%s: -o max_buffered=%s is not a size (a "
			        "number, optionally followed by K, M or G); see "
			        "-h\n", prog, o->max_buffered_text);
			return -1;
		}
		if (o->max_buffered < vmax) {
			fprintf(stderr, "%s: -o max_buffered=%s is less than the "
			        "largest value (%llu bytes): a value of that size "
			        "could never be written; see -h\n", prog,
			        o->max_buffered_text, (unsigned long long)vmax);
			return -1;
		}
	}
	if (o->lease_text) {
		int st = fs_duration_parse(o->lease_text, &o->lease_ms);

		if (st == SFS_TOOBIG) {
			/* a duration all the same: not "is not a duration" */
			fprintf(stderr, "%s: -o lease=%s is longer than a lease "
			        "can be (100 years, 36500d); see -h\n", prog,
			        o->lease_text);
			return -1;
		}
		if (st != SFS_OK || o->lease_ms <= 0) {
			fprintf(stderr, "%s: -o lease=%s is not a duration "
			        "(seconds, or a number followed by ms, s, m, h "
			        "or d, more than 0); see -h\n", prog,
			        o->lease_text);
			return -1;
		}
	}
	o->umask = 077;
	if (o->umask_text &&
	    parse_unsigned(o->umask_text, 8, 0, 0777, &o->umask) != 0) {
		fprintf(stderr, "%s: -o umask=%s is not an octal mode mask from "
		        "0 to 777; see -h\n", prog, o->umask_text);
		return -1;
	}
	if (o->threads_text &&
	    parse_unsigned(o->threads_text, 10, 1, MAX_THREADS, &o->threads)) {
		fprintf(stderr, "%s: -o threads=%s is not a number of threads "
		        "from 1 to %d; see -h\n", prog, o->threads_text,
		        MAX_THREADS);
		return -1;
	}
	/* With allow_other every local user reaches the daemon, which acts
	 * as the store's owner: without default_permissions nothing would
	 * check the modes the mount shows (docs/filesystem.md, "Other
	 * users"). */
	if (o->allow_other && !o->default_permissions) {
		if (fuse_opt_add_arg(args, "-odefault_permissions") != 0)
			return -1;
		o->default_permissions = 1;
	}
	if (o->db && add_fsname(args, o->db) != 0)
		return -1;
	if (!o->db && fuse_opt_add_arg(args, "-ofsname=statefs") != 0)
		return -1;
	if (fuse_opt_add_arg(args, "-osubtype=statefs") != 0)
		return -1;
	return 0;
}

void mountd_opts_free(mountd_opts *o)
{
	free(o->db);
	free(o->keyfile);
	free(o->max_value_text);
	free(o->lease_text);
	free(o->max_buffered_text);
	free(o->umask_text);
	free(o->threads_text);
	for (int i = 0; i < 3; i++)
		free(o->args[i]);
	memset(o, 0, sizeof(*o));
}

void mountd_usage(const char *prog)
{
	printf("usage: %s [options] [STORE] MOUNTPOINT\n"
	       "\n"
	       "Mounts a statefs store as a directory tree (see statefs(1)).\n"
	       "\n"
	       "statefs options:\n"
	       "    -o db=PATH             the store (default: $STATEFS_DB, else\n"
	       "                           ~/.local/state/statefs/state.db,\n"
	       "                           created on first use with a new key)\n"
	       "    -o keyfile=PATH        the key file (default: the key in\n"
	       "                           $STATEFS_KEY, else $STATEFS_KEY_FILE,\n"
	       "                           else ~/.config/statefs/key)\n"
	       "    -o plaintext           the store is not encrypted\n"
	       "    -o ro                  mount read-only\n"
	       "    -o max_value=SIZE      largest value, log entry or queue item\n"
	       "                           (default 64M, at most 953M, SQLite's\n"
	       "                           limit; suffixes K, M and G)\n"
	       "    -o max_buffered=SIZE   most bytes that files open for\n"
	       "                           writing hold before their commit,\n"
	       "                           all together (ENOBUFS past it;\n"
	       "                           default 256M, at least max_value)\n"
	       "    -o lease=DURATION      the lease of claims made through the\n"
	       "                           mount (.claim, mv to inflight/, touch):\n"
	       "                           seconds, or 30s, 10m, 1h (default 10m;\n"
	       "                           .pop and .wait: at least 1m)\n"
	       "    -o umask=MASK          octal mask of the modes files and\n"
	       "                           directories show (default 077: the\n"
	       "                           owner only; 022 lets others read)\n"
	       "    -o threads=N           threads serving requests, at most %d\n"
	       "                           (default 4 on a SQLite store, one\n"
	       "                           reading the device at a time, as its\n"
	       "                           calls run one at a time; 10 on\n"
	       "                           PostgreSQL; 1 is -s)\n"
	       "    -o async_close         close(2) and rm return before the\n"
	       "                           commit, made once the mount is idle\n"
	       "                           for 1 ms, after 16 changes, or at\n"
	       "                           fsync or unmount: faster, but a\n"
	       "                           crash of the daemon loses those\n"
	       "                           changes, and other processes see\n"
	       "                           them later\n"
	       "                           (SQLite stores, several threads)\n"
	       "\n"
	       "general options:\n"
	       "    -h   --help            print help\n"
	       "    -V   --version         print version\n"
	       "    -f                     foreground, logging to stderr\n"
	       "    -d   -o debug          foreground, every request logged\n"
	       "    -s                     single-threaded\n"
	       "\n"
	       "FUSE options (-o allow_other lets other users in, always\n"
	       "with default_permissions: the kernel enforces the modes shown):\n",
	       prog, MAX_THREADS);
	fflush(stdout);
	fuse_lowlevel_help();
}
