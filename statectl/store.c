/*
 * store.c - opening the store and finding the key, by the rules the daemon
 * follows too (sfs_store_open with SFS_OPEN_ENV): --db, else $STATEFS_DB,
 * else the default store; --key-file, else $STATEFS_KEY, else
 * $STATEFS_KEY_FILE, else the default key file; none with --plaintext.
 * --passphrase asks on the terminal instead.
 *
 * Only `init` creates a store: a typo in --db must not leave a new empty
 * store behind, so every other command reports a missing store as such
 * ("create one with statectl init"). Checking for the file first is also
 * what tells a missing store from a missing key file, which the engine
 * reports with the same status.
 *
 * Passphrases are read from /dev/tty with echo off, never from argv or the
 * environment, and wiped right after the key is derived from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "cli_i.h"

#define PASS_MAX 1024

int cli_resolve(cli *c, const sfs_key *have, int ignore_plaintext,
                char **db, sfs_key **key, char **keyfile)
{
	sfs_config cfg;
	int st;

	memset(&cfg, 0, sizeof(cfg));
	cfg.db = c->db;
	cfg.keyfile = c->keyfile;
	cfg.flags = SFS_OPEN_ENV |
	            (c->plaintext && !ignore_plaintext ? SFS_OPEN_PLAINTEXT : 0);
	cfg.key = have;
	st = sfs_config_resolve(&cfg, db, key, keyfile);
	if (st != SFS_OK)
		return cli_fail_status(c, st, "cannot find the store or its key");
	return CLI_EXIT_OK;
}

/* The terminal's settings while echo is off, to restore after Ctrl-C. */
static int tty_fd = -1;
static struct termios tty_saved;

static void restore_tty(int sig)
{
	tcsetattr(tty_fd, TCSAFLUSH, &tty_saved);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Reads one line from the terminal without echo into buf (wiped by the
 * caller). Returns its length, or -1 with errno. */
static ssize_t read_secret(const char *prompt, char *buf, size_t cap)
{
	struct termios t;
	struct sigaction sa, old_int, old_term;
	size_t len = 0;
	ssize_t got;
	char ch;
	int saverr = 0;

	tty_fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
	if (tty_fd < 0)
		return -1;
	if (tcgetattr(tty_fd, &tty_saved) < 0) {
		saverr = errno;
		close(tty_fd);
		errno = saverr;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = restore_tty;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	t = tty_saved;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	t.c_lflag |= ICANON;
	/* echo off before the prompt: what is typed once the prompt shows is
	 * never echoed nor discarded */
	if (tcsetattr(tty_fd, TCSAFLUSH, &t) < 0 ||
	    write(tty_fd, prompt, strlen(prompt)) < 0) {
		saverr = errno;
		goto out;
	}
	for (;;) {
		got = read(tty_fd, &ch, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			saverr = errno;
			break;
		}
		if (got == 0 || ch == '\n')
			break;
		if (len + 1 < cap)
			buf[len++] = ch;
	}
	sodium_memzero(&ch, sizeof(ch));
	tcsetattr(tty_fd, TCSAFLUSH, &tty_saved);
	if (write(tty_fd, "\n", 1) < 0) {
		/* the newline is cosmetic */
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	close(tty_fd);
	tty_fd = -1;
	if (saverr) {
		errno = saverr;
		return -1;
	}
	buf[len] = 0;
	return (ssize_t)len;
}

int cli_passphrase_key(const cli *c, const char *prompt, int confirm,
                       sfs_key **out)
{
	char *a = sodium_malloc(PASS_MAX), *b = sodium_malloc(PASS_MAX);
	ssize_t na, nb = 0;
	int st, code = CLI_EXIT_OK;

	if (!a || !b) {
		code = cli_fail(c, CLI_EXIT_SYSTEM, "out of memory");
		goto out;
	}
	na = read_secret(prompt, a, PASS_MAX);
	if (na < 0) {
		code = cli_fail(c, CLI_EXIT_KEY,
		                "cannot read a passphrase from the terminal: %s",
		                strerror(errno));
		goto out;
	}
	if (na == 0) {
		code = cli_fail(c, CLI_EXIT_KEY, "the passphrase is empty");
		goto out;
	}
	if (confirm) {
		nb = read_secret("Again: ", b, PASS_MAX);
		if (nb != na || sodium_memcmp(a, b, (size_t)na) != 0) {
			code = cli_fail(c, CLI_EXIT_KEY,
			                "the passphrases do not match");
			goto out;
		}
	}
	st = sfs_key_from_passphrase(a, (size_t)na, out);
	if (st != SFS_OK)
		code = cli_fail_status(c, st, "cannot use the passphrase");
out:
	sodium_free(a); /* sodium_free wipes */
	sodium_free(b);
	return code;
}

int cli_key_load(cli *c, char **db, sfs_key **key, char **keyfile)
{
	int code;

	*keyfile = NULL;
	if (c->passphrase) {
		sfs_key *none; /* stays NULL: the passphrase is the key */

		if ((code = cli_passphrase_key(c, "Passphrase: ", 0, key)))
			return code;
		if ((code = cli_resolve(c, *key, 0, db, &none, NULL))) {
			sfs_key_destroy(*key);
			*key = NULL;
		}
		return code;
	}
	if ((code = cli_resolve(c, NULL, 0, db, key, keyfile)))
		return code;
	if (*key)
		return CLI_EXIT_OK;
	code = cli_fail(c, CLI_EXIT_KEY, "no key file at %s", *keyfile);
	free(*keyfile);
	free(*db);
	*keyfile = *db = NULL;
	return code;
}

/* "cannot open the store NAME: <status> (<why>)", as cli_fail_status
 * says it, with the detail saved before another call cleared it. */
static int open_failed(cli *c, int status, const char *name,
                       const char *why)
{
	const char *what = sfs_strerror(status);
	const char *hint = status == SFS_CORRUPT && c->corrupt_hint ?
	                   c->corrupt_hint : NULL;

	if (*why && strcmp(why, what) != 0)
		return cli_fail(c, cli_exit_for_status(status),
		                "cannot open the store %s: %s (%s)%s%s", name,
		                what, why, hint ? "; " : "", hint ? hint : "");
	return cli_fail(c, cli_exit_for_status(status),
	                "cannot open the store %s: %s%s%s", name, what,
	                hint ? "; " : "", hint ? hint : "");
}

/* Whether the key file at kpath now holds a key other than key: a rekey
 * renamed its new key over it since key was read. *fresh gets that key. */
static int key_file_changed(const char *kpath, const sfs_key *key,
                            sfs_key **fresh)
{
	char a[64], b[64];
	int changed;

	*fresh = NULL;
	if (!kpath || !key || sfs_key_from_file(kpath, fresh) != SFS_OK)
		return 0;
	changed = sfs_key_to_text(key, a, sizeof(a)) == SFS_OK &&
	          sfs_key_to_text(*fresh, b, sizeof(b)) == SFS_OK &&
	          strcmp(a, b) != 0;
	sodium_memzero(a, sizeof(a));
	sodium_memzero(b, sizeof(b));
	if (!changed) {
		sfs_key_destroy(*fresh);
		*fresh = NULL;
	}
	return changed;
}

/* Waits for the rekey --generate that holds KEYFILE.new locked (from
 * before it replaces the store until its new key replaces the key file)
 * to end; at once when there is none (the lock of a rekey that died went
 * with it). */
static void rekey_wait(const char *kpath)
{
	char next[4096];
	int fd;

	if ((size_t)snprintf(next, sizeof(next), "%s.new", kpath) >=
	    sizeof(next))
		return;
	fd = open(next, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
		;
	close(fd);
}

int cli_store_open(cli *c, int mode, sfs_store **out)
{
	sfs_config cfg;
	sfs_key *pass = NULL, *key = NULL, *fresh;
	char *path = NULL, *name = NULL, *notice = NULL, *kpath = NULL;
	char why[1024];
	int st, exists, code;

	if (c->passphrase &&
	    (code = cli_passphrase_key(c, "Passphrase: ", 0, &pass)))
		return code;
	/* Resolving first tells a missing store from a missing key file,
	 * which the engine reports with the same status. */
	if ((code = cli_resolve(c, pass, 0, &path, &key, pass ? NULL : &kpath)))
		goto out;
	if ((st = sfs_store_name(path, &name)) != SFS_OK) {
		code = cli_fail_status(c, st, "cannot open the store");
		goto out;
	}
	memset(&cfg, 0, sizeof(cfg));
	/* The name as given: one from STATEFS_DB, which may hold a password,
	 * is found there again, not passed as if from the command line. */
	cfg.db = c->db;
	cfg.keyfile = c->keyfile;
	cfg.flags = SFS_OPEN_ENV | (c->plaintext ? SFS_OPEN_PLAINTEXT : 0) |
	            (mode == CLI_STORE_READ ? SFS_OPEN_READONLY : 0) |
	            (mode == CLI_STORE_GC ? SFS_OPEN_NORECOVER : 0);
	cfg.key = pass ? pass : key;
	cfg.max_value = c->max_value;
	for (int tries = 0;; tries++) {
		st = sfs_store_open(&cfg, out, &notice);
		/* the detail, before reading a key file clears it */
		snprintf(why, sizeof(why), "%s", st ? sfs_errdetail() : "");
		if (notice) {
			fprintf(stderr, "statectl: %s\n", notice);
			free(notice);
			notice = NULL;
		}
		/* rekey --generate renames its new store over the old, then
		 * its new key (KEYFILE.new) over the key file: an open in
		 * between finds that the key it read does not open the
		 * store. The key file's next key does, once that rekey has
		 * ended (it holds KEYFILE.new locked till then). */
		if (st != SFS_WRONGKEY || pass || !kpath || tries == 10)
			break;
		rekey_wait(kpath);
		if (!key_file_changed(kpath, key, &fresh))
			break;
		sfs_key_destroy(key);
		cfg.key = key = fresh;
	}
	if (st == SFS_OK) {
		code = CLI_EXIT_OK;
		c->writer = mode == CLI_STORE_WRITE;
		free(c->opened);
		c->opened = name;
		name = NULL;
		goto out;
	}
	/* Why it failed: no store there (asked only now, as for a store on
	 * a server asking is a connection of its own), else the open's
	 * reason; SFS_NOTFOUND with the store there is the key file. */
	exists = sfs_store_exists(path);
	if (exists == SFS_NOTFOUND)
		code = cli_fail(c, CLI_EXIT_NOSTORE,
		                "no store at %s (create one with 'statectl init')",
		                name);
	else if (exists != SFS_OK)
		/* The store could not be asked about (a server down or
		 * refusing the login, no connection slot, a statement
		 * timeout): that failure's own exit code, 9 or 7. Exit 5 says
		 * there is no store here, which tells a script to make one. */
		code = cli_fail(c, cli_exit_for_status(exists),
		                "cannot open the store %s: %s", name,
		                sfs_errdetail());
	else
		code = open_failed(c, st == SFS_NOTFOUND ? SFS_NOKEY : st, name,
		                   why);
out:
	sfs_key_destroy(pass);
	sfs_key_destroy(key);
	free(kpath);
	free(path);
	free(name);
	return code;
}

int cli_store_open_names(cli *c, int mode, sfs_store **out, sfs_family fam,
                         cli_name *nm, int n)
{
	int rc = cli_store_open(c, mode, out);

	if (rc == CLI_EXIT_OK && (rc = cli_names_resolve(c, *out, fam, nm, n))) {
		sfs_store_close(*out);
		*out = NULL;
	}
	return rc;
}

int cli_store_open_queue(cli *c, const cli_args *a, int mode, cli_name *q,
                         sfs_store **out)
{
	int rc = cli_name_parse(c, a->pos[0], "queue", FS_NAME_SCOPE, q);

	if (rc)
		return rc;
	rc = cli_store_open_names(c, mode, out, SFS_FAM_QUEUE, q, 1);
	if (rc)
		cli_name_free(q);
	return rc;
}
