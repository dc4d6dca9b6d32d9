/*
 * cmd_admin.c - commands about the store itself: init, keygen, info,
 * verify, rekey, checkpoint and restore.
 *
 * Nothing here overwrites a store, a key file or a checkpoint: init, keygen
 * and checkpoint refuse an existing target (exit 6). A key is printed
 * (keygen without a path) to a pipe or a file the caller redirected to,
 * never to a terminal; a key file keygen writes is a 0600 file that the
 * engine creates.
 *
 * rekey with --generate and no --new-key-file writes the new key beside the
 * old key file (KEYFILE.new), re-encrypts, and only then renames it over the
 * old one: if the machine dies in between, both files are there, and the
 * store opens with one of them (the engine's rekey is crash-safe). The
 * next rekey --generate takes that KEYFILE.new as its new key, so it
 * finishes the switch whichever of the two the store is under.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cli_i.h"

static int exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

/* The files a SQLite store has beside it, by the suffix of their names:
 * SQLite's write-ahead log and its index, its rollback journal (a new
 * store's first transaction, a rekey's copy), statefs's reserve for a
 * full disk (core/sqlite/conn.c) and a rekey's copy (core/sqlite/rekey.c).
 * A key file written to one of those names is read, or removed, as the
 * store's (a -journal is rolled back into the store). */
static const struct {
	const char *sfx, *what;
} store_files[] = {
	{ "-wal", "its write-ahead log" },
	{ "-shm", "its write-ahead log's index" },
	{ "-journal", "its rollback journal" },
	{ "-reserve", "the space it keeps for deletes on a full disk" },
	{ ".rekey", "a rekey's copy of it" },
	{ ".rekey-journal", "the journal of a rekey's copy of it" },
};

/* path with its directory resolved (realpath) and its last name as
 * given, malloc'd; NULL when the directory cannot be resolved. */
static char *canon_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *real, *out = NULL;

	if (!slash)
		dir = cli_xstrdup(".");
	else if (slash == path)
		dir = cli_xstrdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (dir && (real = realpath(dir, NULL)) != NULL) {
		if (asprintf(&out, "%s/%s", real, slash ? slash + 1 : path) < 0)
			out = NULL;
		free(real);
	}
	free(dir);
	return out;
}

/* Whether a and b name one file: the same inode when both exist, else
 * the same name in the same directory. */
static int same_name(const char *a, const char *b)
{
	struct stat sa, sb;
	int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0, same;
	char *ca, *cb;

	if (ea && eb)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (ea != eb)
		return 0;
	ca = canon_name(a);
	cb = canon_name(b);
	same = ca && cb && strcmp(ca, cb) == 0;
	free(ca);
	free(cb);
	return same;
}

/* Refuses (exit 2) a key file at file when it is a store's own file: the
 * store itself (store, or any store there) or one of the files SQLite or
 * statefs keeps beside a store (store's, or an existing store's whose
 * name it ends in). opt: the option or command that named it. 0 when
 * file is none of those. */
static int refuse_store_file(const cli *c, const char *opt,
                             const char *store, const char *file)
{
	size_t n = strlen(file), k;
	char *hf = NULL, *hs = NULL, *owner = NULL;
	const char *what = NULL;
	int rc;

	if (store && same_name(store, file)) {
		what = "the store itself";
		owner = cli_xstrdup(store);
	}
	for (size_t i = 0; !what && i < sizeof(store_files) /
	                                 sizeof(store_files[0]); i++) {
		char *cand = NULL;

		k = strlen(store_files[i].sfx);
		if (store && asprintf(&cand, "%s%s", store,
		                      store_files[i].sfx) >= 0 &&
		    same_name(cand, file)) {
			what = store_files[i].what;
			owner = cli_xstrdup(store);
		} else if (n > k && !strcmp(file + n - k, store_files[i].sfx)) {
			owner = strndup(file, n - k);
			if (owner && sfs_store_exists(owner) == SFS_OK)
				what = store_files[i].what;
			else {
				free(owner);
				owner = NULL;
			}
		}
		free(cand);
	}
	if (!what && sfs_store_exists(file) == SFS_OK) {
		what = "a store";
		owner = NULL;
	}
	if (!what)
		return 0;
	hf = cli_human(file);
	hs = owner ? cli_human(owner) : NULL;
	if (hs && !strcmp(what, "the store itself"))
		rc = cli_usage(c, "%s %s is the store itself, not a key file: "
		               "give the key a path of its own (nothing was "
		               "changed)", opt, hf);
	else if (hs)
		rc = cli_usage(c, "%s %s is a file the store %s keeps beside it "
		               "(%s), not a key file: give the key a path of "
		               "its own (nothing was changed)", opt, hf, hs, what);
	else
		rc = cli_usage(c, "%s %s is a store, not a key file: give the key "
		               "a path of its own (nothing was changed)", opt, hf);
	free(hf);
	free(hs);
	free(owner);
	return rc;
}

/* The length of the prefix of path that names its shallowest parent
 * directory missing now (0: every one is there): what writing a file at
 * path will make, for remove_made_parents once that file is gone. */
static size_t missing_parents(const char *path)
{
	char *p = cli_xstrdup(path);
	size_t made = 0;
	struct stat sb;

	for (char *slash = strchr(p + 1, '/'); slash && !made;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (stat(p, &sb) != 0 && errno == ENOENT)
			made = (size_t)(slash - p);
		*slash = '/';
	}
	free(p);
	return made;
}

/* Removes path's parent directories down to the one missing_parents
 * found missing, deepest first, each only if it is empty. */
static void remove_made_parents(const char *path, size_t made)
{
	char *p, *slash;

	if (!made)
		return;
	p = cli_xstrdup(path);
	while ((slash = strrchr(p, '/')) && (size_t)(slash - p) >= made) {
		*slash = '\0';
		if (rmdir(p) != 0 && errno != ENOENT)
			break;
	}
	free(p);
}

/* init */
int cmd_init(cli *c, cli_args *a)
{
	sfs_config o;
	sfs_store *s = NULL;
	sfs_key *key = NULL, *found = NULL;
	char *path = NULL, *name = NULL, *kpath = NULL;
	const char *ksrc = NULL;
	int rc = CLI_EXIT_OK, st, wrote = 0;
	size_t kmade = 0;
	json_t *j;

	(void)a;
	if (c->passphrase &&
	    (rc = cli_passphrase_key(c, "New passphrase: ", 1, &key)))
		return rc;
	if ((rc = cli_resolve(c, key, 0, &path, key ? &found : &key, &kpath)))
		goto out;
	if ((st = sfs_store_name(path, &name)) != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot create the store");
		goto out;
	}
	if (sfs_store_exists(path) == SFS_OK) {
		rc = cli_fail(c, CLI_EXIT_EXISTS, "a store already exists at %s "
		              "(statectl init never overwrites one)", name);
		goto out;
	}
	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_EXCL;
	if (c->plaintext) {
		o.flags |= SFS_OPEN_PLAINTEXT;
	} else if (c->passphrase) {
		ksrc = "the passphrase";
	} else if (key && !kpath) {
		ksrc = "STATEFS_KEY";
	} else if (key) {
		rc = cli_fail(c, CLI_EXIT_EXISTS, "a key file already exists "
		              "at %s (statectl init never overwrites one; give "
		              "--key-file with a new path for the new store's "
		              "key)", kpath);
		goto out;
	} else {
		if ((st = sfs_key_generate(&key)) != SFS_OK) {
			rc = cli_fail_status(c, st, "cannot generate a key");
			goto out;
		}
		if ((rc = refuse_store_file(c, "--key-file", path, kpath)))
			goto out;
		/* the directories the key file's writing makes go with
		 * it if the store cannot be made */
		kmade = missing_parents(kpath);
		if ((st = sfs_key_write_file(key, kpath)) != SFS_OK) {
			rc = cli_fail_status(c, st, "cannot write the key file %s",
			                     kpath);
			goto out;
		}
		wrote = 1;
		ksrc = kpath;
	}
	o.key = key;
	/* (the engine makes a new store file's missing directories) */
	if ((st = sfs_store_open(&o, &s, NULL)) != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot create the store %s", name);
		goto out;
	}
	if ((st = sfs_store_sync(s)) != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot sync the new store %s", name);
		goto out;
	}
	wrote = 0; /* the store exists: keep its key */
	c->writer = 1; /* an output that fails says it exists */
	if (c->json) {
		j = cli_json_path_object("path", name);
		json_object_set_new(j, "encrypted", json_boolean(!c->plaintext));
		if (kpath)
			cli_json_set_path(j, "key_file", kpath);
		rc = cli_out_json(j);
	} else {
		/* paths for people: escaped as listings write bytes */
		const char *k = kpath ? kpath : ksrc;
		char *hn = cli_human(name), *hk = k ? cli_human(k) : NULL;

		printf("created the %s store %s\n",
		       c->plaintext ? "plaintext" : "encrypted", hn);
		if (!c->plaintext && kpath)
			printf("its key is in %s: back it up apart from the store; "
			       "without it the store cannot be read\n", hk);
		else if (!c->plaintext && hk)
			printf("it opens with %s\n", hk);
		free(hn);
		free(hk);
	}
out:
	if (wrote && unlink(kpath) < 0)
		fprintf(stderr, "statectl: could not remove the unused key file "
		        "%s: %s\n", kpath, strerror(errno));
	else if (wrote)
		remove_made_parents(kpath, kmade);
	sfs_store_close(s);
	sfs_key_destroy(key);
	sfs_key_destroy(found);
	free(kpath);
	free(path);
	free(name);
	return rc;
}

/* keygen [PATH] */
int cmd_keygen(cli *c, cli_args *a)
{
	sfs_key *key = NULL;
	char text[64], line[80];
	int rc = CLI_EXIT_OK, st;
	/* "-" is stdout, as for export */
	int to_file = a->npos == 1 && strcmp(a->pos[0], "-") != 0;

	if (!to_file && isatty(STDOUT_FILENO))
		return cli_usage(c, "keygen will not print a key to a terminal: "
		                    "give a PATH, or pipe it");
	if (to_file && (rc = refuse_store_file(c, "keygen:", c->db,
	                                         a->pos[0])))
		return rc;
	if ((st = sfs_key_generate(&key)) != SFS_OK)
		return cli_fail_status(c, st, "cannot generate a key");
	if (to_file) {
		/* an output that fails says the file is made (a failure
		 * to make it is reported as such) */
		c->writer = 1;
		st = sfs_key_write_file(key, a->pos[0]);
		if (st == SFS_EXISTS)
			rc = cli_fail(c, CLI_EXIT_EXISTS, "%s exists (keygen never "
			              "overwrites a file)", a->pos[0]);
		else if (st != SFS_OK)
			rc = cli_fail_status(c, st, "cannot write the key file %s",
			                     a->pos[0]);
		else if (c->json)
			rc = cli_out_json(cli_json_path_object("path", a->pos[0]));
		else {
			char *hk = cli_human(a->pos[0]);

			printf("wrote a new key to %s\n", hk);
			free(hk);
		}
		goto out;
	}
	if ((st = sfs_key_to_text(key, text, sizeof(text))) != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot encode the key");
		goto out;
	}
	/* written with write(2) from a buffer we wipe, not through jansson
	 * or stdio, whose copies would be freed unwiped; base64 needs no JSON
	 * escaping */
	snprintf(line, sizeof(line), c->json ? "{\"key\":\"%s\"}\n" : "%s\n",
	         text);
	fflush(stdout);
	if (write(STDOUT_FILENO, line, strlen(line)) != (ssize_t)strlen(line))
		rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot write the key: %s",
		              strerror(errno));
out:
	sodium_memzero(text, sizeof(text));
	sodium_memzero(line, sizeof(line));
	sfs_key_destroy(key);
	return rc;
}

/* info */
int cmd_info(cli *c, cli_args *a)
{
	sfs_store *s = NULL;
	sfs_info in;
	json_t *j;
	int rc, st;

	(void)a;
	if ((rc = cli_store_open(c, CLI_STORE_READ, &s)))
		return rc;
	if ((st = sfs_store_info(s, &in)) != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot read the store's information");
		goto out;
	}
	if (c->json) {
		j = cli_json_path_object("path", in.path);
		json_object_update_new(j, json_pack("{s:s, s:i, s:b, s:s, s:i, s:s, s:I, "
		              "s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
		              "backend", in.backend,
		              "schema_version", in.schema_version,
		              "encrypted", in.encrypted, "cipher", in.cipher,
		              "crypt_format", in.crypt_format, "kdf", in.kdf,
		              "size", (json_int_t)in.size, "rows",
		              "kv", (json_int_t)in.kv_rows,
		              "counter", (json_int_t)in.counter_rows,
		              "log", (json_int_t)in.log_rows,
		              "queue", (json_int_t)in.queue_rows,
		              "claimed", (json_int_t)in.claimed_rows,
		              "dead", (json_int_t)in.dead_rows));
		/* what only this backend has, beside the rest */
		cli_json_set_facts(j, &in);
		rc = cli_out_json(j);
		goto out;
	}
	/* a path is bytes: a newline or an escape sequence in it is
	 * written as listings write them, not sent to the terminal */
	fputs("path:         ", stdout);
	cli_out_human(stdout, in.path, strlen(in.path));
	putchar('\n');
	printf("format:       schema %d, %s\n", in.schema_version, in.backend);
	if (in.encrypted)
		printf("encryption:   %s (format %d, key: %s)\n", in.cipher,
		       in.crypt_format, in.kdf);
	else
		printf("encryption:   none (plaintext)\n");
	printf("size:         %llu bytes", (unsigned long long)in.size);
	for (size_t i = 0; i < in.nfacts; i++)
		printf("%s%s %llu", i ? ", " : " (", in.facts[i].name,
		       (unsigned long long)in.facts[i].value);
	printf("%s\n", in.nfacts ? ")" : "");
	printf("key/value:    %llu\n", (unsigned long long)in.kv_rows);
	printf("counters:     %llu\n", (unsigned long long)in.counter_rows);
	printf("log entries:  %llu\n", (unsigned long long)in.log_rows);
	printf("queue items:  %llu pending, %llu claimed, %llu dead\n",
	       (unsigned long long)in.queue_rows,
	       (unsigned long long)in.claimed_rows,
	       (unsigned long long)in.dead_rows);
out:
	sfs_store_close(s);
	return rc;
}

/* verify */
int cmd_verify(cli *c, cli_args *a)
{
	sfs_store *s = NULL;
	cli_progress p;
	const char *path, *unit = "pages", *how = "authenticated",
	           *check = "integrity check";
	sfs_info in;
	json_t *j;
	int rc, st;

	(void)a;
	if ((rc = cli_store_open(c, CLI_STORE_READ, &s)))
		return rc;
	path = c->opened;
	/* What verify counts is the backend's: a SQLite store's pages, a
	 * PostgreSQL store's rows (each sealed one authenticated, then its
	 * items checked for one place each: docs/postgres.md). */
	if (sfs_store_info(s, &in) == SFS_OK) {
		/* a plaintext store's pages or rows are read, and nothing
		 * authenticates them (it said "authenticated" of a SQLite
		 * store's pages all the same) */
		how = in.encrypted ? "authenticated" : "read";
		if (strcmp(in.backend, "sqlite")) {
			unit = "rows";
			check = "consistency check";
		}
	}
	cli_progress_begin(&p, c, "verify", unit);
	st = sfs_store_verify(s, cli_progress_cb, &p);
	cli_progress_end(&p);
	if (st == SFS_CORRUPT)
		rc = cli_fail_status(c, st, "%s failed verification", path);
	else if (st != SFS_OK)
		rc = cli_fail_status(c, st, "cannot verify %s", path);
	else if (c->json) {
		j = cli_json_path_object("path", path);
		json_object_update_new(j, json_pack("{s:b, s:I}", "ok", 1, unit,
		                                    (json_int_t)p.total));
		rc = cli_out_json(j);
	} else {
		cli_out_human(stdout, path, strlen(path));
		printf(": ok (%llu %s %s, %s passed)\n",
		       (unsigned long long)p.total, unit, how, check);
	}
	sfs_store_close(s);
	return rc;
}

/* Where rekey takes the new key from; *newpath is set when it wrote a new
 * key file there. defpath: where a generated key goes without
 * --new-key-file (NULL: nowhere known). */
static int new_key(cli *c, const cli_args *a, const char *defpath,
                   sfs_key **out, char **newpath)
{
	int st;

	*newpath = NULL;
	if (a->new_passphrase)
		return cli_passphrase_key(c, "New passphrase: ", 1, out);
	if (!a->generate) {
		st = sfs_key_from_file(a->new_key_file, out);
		if (st == SFS_OK)
			return CLI_EXIT_OK;
		if (st == SFS_NOTFOUND)
			return cli_fail(c, CLI_EXIT_KEY, "no key file at %s (to "
			                "generate one there, add --generate)",
			                a->new_key_file);
		return cli_fail_status(c, st, "cannot read the new key file %s",
		                       a->new_key_file);
	}
	if (a->new_key_file)
		*newpath = cli_xstrdup(a->new_key_file);
	else if (defpath)
		*newpath = cli_xstrdup(defpath);
	else
		return cli_usage(c, "the old key did not come from a file: say "
		                    "where the new one goes with --new-key-file PATH");
	if ((st = sfs_key_generate(out)) != SFS_OK)
		return cli_fail_status(c, st, "cannot generate a key");
	st = sfs_key_write_file(*out, *newpath);
	if (st == SFS_OK)
		return CLI_EXIT_OK;
	sfs_key_destroy(*out);
	*out = NULL;
	if (st == SFS_EXISTS)
		st = cli_fail(c, CLI_EXIT_EXISTS, "%s exists (left over from an "
		              "interrupted rekey? the store opens with the old key "
		              "or that one; move it away first)", *newpath);
	else
		st = cli_fail_status(c, st, "cannot write the key file %s",
		                     *newpath);
	free(*newpath);
	*newpath = NULL;
	return st;
}

/* Whether key opens the store at path: 1 yes, 0 it is another key's
 * (SFS_WRONGKEY), -1 it cannot be told (busy, damaged, ...). Opens it
 * read-only, without recovery: nothing is written. */
static int key_opens(const char *path, const sfs_key *key)
{
	sfs_config cfg = { .db = path, .key = key,
	                   .flags = SFS_OPEN_READONLY | SFS_OPEN_NORECOVER };
	sfs_store *s = NULL;
	int st = sfs_store_open(&cfg, &s, NULL);

	sfs_store_close(s);
	return st == SFS_OK ? 1 : st == SFS_WRONGKEY ? 0 : -1;
}

/* A KEYFILE.new left by an interrupted rekey --generate: the store is
 * under the old key (the leftover was never used: it is taken as the new
 * key, as a fresh one would be) or under the leftover (the rekey got past
 * the engine, not past the rename: the rekey below is then SFS_OK and the
 * rename finishes the switch). Either way the leftover is the key to move
 * to, and no key that opens the store is ever removed. Returns the
 * leftover key, or NULL when there is none (or it cannot be read: then
 * new_key refuses as before). */
static sfs_key *leftover_key(const char *defpath)
{
	sfs_key *k = NULL;

	if (!defpath || access(defpath, F_OK) != 0)
		return NULL;
	return sfs_key_from_file(defpath, &k) == SFS_OK ? k : NULL;
}

/* Whether paths a and b name one file. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* rekey (--generate [--new-key-file PATH] | --new-key-file PATH |
 *        --new-passphrase | --decrypt); with --plaintext, encrypts a
 * plaintext store */
int cmd_rekey(cli *c, cli_args *a)
{
	sfs_key *oldk = NULL, *newk = NULL;
	char *path = NULL, *oldsrc = NULL, *newpath = NULL, *defpath = NULL;
	const char *final = NULL;
	int rc, st, replace = 0, fresh = 1, lockfd = -1, keylock = -1;
	cli_progress p;
	json_t *j;
	/* the new keys asked for: exactly one */
	int keys = a->new_passphrase + (a->generate || a->new_key_file) +
	           a->decrypt;

	if (keys > 1)
		/* two new keys at once: it said "needs one of", as if none */
		return cli_usage(c, "rekey takes one of --generate [--new-key-"
		                 "file PATH], --new-key-file PATH, --new-passphrase"
		                 " or --decrypt, not both %s and %s",
		                 a->generate ? "--generate" : a->new_key_file
		                 ? "--new-key-file" : "--new-passphrase",
		                 a->decrypt ? "--decrypt" : "--new-passphrase");
	if (keys != 1)
		return cli_usage(c, "rekey needs one of --generate [--new-key-file "
		                    "PATH], --new-key-file PATH, --new-passphrase "
		                    "or --decrypt");
	if (c->plaintext && a->decrypt)
		return cli_usage(c, "the store is plaintext already");
	if (c->plaintext)
		rc = cli_resolve(c, NULL, 0, &path, &oldk, NULL);
	else
		rc = cli_key_load(c, &path, &oldk, &oldsrc);
	if (rc)
		goto out;
	if ((st = sfs_store_exists(path)) != SFS_OK) {
		rc = st == SFS_NOTFOUND
		     ? cli_fail(c, CLI_EXIT_NOSTORE, "%s", sfs_errdetail())
		     : cli_fail_status(c, st, "cannot rekey the store");
		goto out;
	}
	if (a->new_key_file &&
	    (rc = refuse_store_file(c, "--new-key-file", path,
	                            a->new_key_file)))
		goto out;
	if (oldsrc && a->new_key_file && same_file(oldsrc, a->new_key_file)) {
		rc = cli_usage(c, "--new-key-file names the key file the store "
		               "opens with now (%s): give the path of a new key",
		               oldsrc);
		goto out;
	}
	if (oldsrc) {
		/* a generated key takes the old key file's place, once the
		 * store is re-encrypted */
		if (asprintf(&defpath, "%s.new", oldsrc) < 0) {
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "out of memory");
			goto out;
		}
		replace = 1;
	} else if (c->plaintext && a->generate && !a->new_key_file) {
		/* encrypting: the key goes where the rules will look for it */
		char *ignored = NULL;
		sfs_key *existing = NULL;

		rc = cli_resolve(c, NULL, 1, &ignored, &existing, &defpath);
		free(ignored);
		sfs_key_destroy(existing);
		if (rc)
			goto out;
	}
	/* One rekey --generate of a key file at a time, which holds the key
	 * file locked till it ends: a second one took the first's
	 * KEYFILE.new, new or still being written, for one an interrupted
	 * rekey left ("taking the key left ... by an interrupted rekey"),
	 * or refused it as one, exit 6, "move it away first". */
	if (replace && a->generate && !a->new_key_file) {
		keylock = open(oldsrc, O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if (keylock >= 0 && flock(keylock, LOCK_EX | LOCK_NB) < 0 &&
		    errno == EWOULDBLOCK) {
			rc = cli_fail(c, CLI_EXIT_BUSY, "another rekey of the key "
			              "file %s is running; %s is unchanged", oldsrc,
			              path);
			goto out;
		}
	}
	if (replace && a->generate && !a->new_key_file &&
	    (newk = leftover_key(defpath)) != NULL) {
		newpath = cli_xstrdup(defpath);
		fresh = 0;
		fprintf(stderr, "statectl: taking the key left in %s by an "
		        "interrupted rekey as the new key\n", newpath);
	} else if (!a->decrypt &&
	           (rc = new_key(c, a, defpath, &newk, &newpath))) {
		goto out;
	}
	replace = replace && newpath && !a->new_key_file;
	/* KEYFILE.new stays locked until it is the key file: a command that
	 * opens the store in between, with the old key, waits for that and
	 * reads the key file again (store.c) */
	if (replace && (lockfd = open(newpath, O_RDONLY | O_NOCTTY |
	                              O_CLOEXEC)) >= 0)
		while (flock(lockfd, LOCK_EX) < 0 && errno == EINTR)
			;
	cli_progress_begin(&p, c, "rekey", "pages");
	st = sfs_rekey(path, oldk, newk, cli_progress_cb, &p);
	cli_progress_end(&p);
	if (st != SFS_OK) {
		rc = cli_fail_status(c, st, "cannot rekey %s", path);
		/* A key file this run made and that does not open the store
		 * was never used: it goes, as when the store's backend
		 * refused the rekey (PostgreSQL: it never began). One that
		 * may (or cannot be told) stays, as does a leftover of
		 * another run. */
		if (newpath && fresh &&
		    (st == SFS_UNSUPPORTED || key_opens(path, newk) == 0))
			unlink(newpath);
		else if (newpath)
			fprintf(stderr, "statectl: the new key stays in %s in case "
			        "the store needs it\n", newpath);
		goto out;
	}
	final = newpath ? newpath : a->new_key_file;
	if (replace) {
		if (rename(newpath, oldsrc) < 0) {
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "the store now opens with "
			              "the key in %s, but it could not replace %s: %s",
			              newpath, oldsrc, strerror(errno));
			goto out;
		}
		final = oldsrc;
	}
	c->writer = 1;
	if (c->json) {
		j = cli_json_path_object("path", path);
		json_object_update_new(j, json_pack("{s:b, s:I}", "encrypted",
		                        !a->decrypt, "pages", (json_int_t)p.total));
		if (final)
			cli_json_set_path(j, "key_file", final);
		rc = cli_out_json(j);
	} else if (a->decrypt) {
		char *hp = cli_human(path);

		printf("%s is now plaintext: it opens with --plaintext and no "
		       "key.\n", hp);
		free(hp);
	} else {
		char *hp = cli_human(path), *hf = final ? cli_human(final) : NULL;

		printf("%s is now encrypted with the new key", hp);
		if (hf)
			printf(", which is in %s", hf);
		free(hp);
		free(hf);
		if (c->plaintext)
			printf(".\nBack the key up apart from the store: without it "
			       "the store cannot be read.\n");
		else
			printf(".\nThe old key no longer opens it; checkpoints made "
			       "before still need the old key.\n");
	}
out:
	if (lockfd >= 0)
		close(lockfd);
	if (keylock >= 0)
		close(keylock);
	sfs_key_destroy(oldk);
	sfs_key_destroy(newk);
	free(newpath);
	free(defpath);
	free(oldsrc);
	free(path);
	return rc;
}

/* A restore is a transaction of the store: one whose pages fail (a
 * damaged store, exactly the one to restore) cannot run it, and said only
 * "cannot restore PATH from CK (the store is unchanged): store is
 * corrupt", or that it cannot open the store, with no way out. */
#define RESTORE_DAMAGED "a damaged store is not restored in place: stop " \
	"every process using it, move it and its -wal and -shm aside, and " \
	"copy the checkpoint to its name"

/* Whether detail names path (a whole path: not a longer name it
 * begins, such as PATH.bak). */
static int names_path(const char *detail, const char *path, size_t len)
{
	for (const char *p = strstr(detail, path); p; p = strstr(p + 1, path)) {
		char next = p[len];

		if ((p == detail || p[-1] == ' ') &&
		    (next == '\0' || next == ' ' || next == ':' || next == ')' ||
		     next == ','))
			return 1;
	}
	return 0;
}

/* checkpoint PATH; restore PATH */
static int checkpoint_or_restore(cli *c, cli_args *a, int restore)
{
	sfs_store *s = NULL;
	cli_progress p;
	const char *target = a->pos[0], *path;
	size_t tlen = strlen(target);
	json_t *j;
	int rc, st;

	/* "-" is standard output for export, keygen and metrics; a
	 * checkpoint is a store file, not a stream (it was a file named -
	 * in the working directory) */
	if (strcmp(target, "-") == 0)
		return cli_fail(c, CLI_EXIT_USAGE, "%s takes the path of a "
		                "checkpoint file, not '-' (a checkpoint is a "
		                "store file, not a stream; ./- names a file "
		                "called -)", restore ? "restore" : "checkpoint");
	if (!restore && exists(target))
		return cli_fail(c, CLI_EXIT_EXISTS, "%s exists (checkpoint never "
		                "overwrites a file)", target);
	if (restore && !exists(target))
		return cli_fail(c, CLI_EXIT_NOTFOUND, "no checkpoint at %s", target);
	c->corrupt_hint = restore ? RESTORE_DAMAGED : NULL;
	rc = cli_store_open(c, restore ? CLI_STORE_WRITE : CLI_STORE_READ, &s);
	c->corrupt_hint = NULL;
	if (rc)
		return rc;
	path = c->opened;
	/* the store's own file (by any name: a symlink, a hard link) would
	 * wait on its own lock, then fail busy */
	if (restore && same_file(target, path)) {
		rc = cli_fail(c, CLI_EXIT_USAGE, "%s is the store itself, not a "
		              "checkpoint of it (make one with 'statectl "
		              "checkpoint PATH')", target);
		goto out;
	}
	cli_progress_begin(&p, c, restore ? "restore" : "checkpoint", "pages");
	c->writer = 1; /* the checkpoint is made; a failure says so */
	st = restore ? sfs_restore(s, target, cli_progress_cb, &p)
	             : sfs_checkpoint(s, target, cli_progress_cb, &p);
	cli_progress_end(&p);
	if (st != SFS_OK) {
		/* damage in the checkpoint names its path (first, or after
		 * what was being done: "opening the checkpoint: page N of
		 * PATH ...", when the open reads the damaged page) */
		if (restore && st == SFS_CORRUPT &&
		    !names_path(sfs_errdetail(), target, tlen))
			rc = cli_fail_status(c, st, "cannot restore %s from %s "
			                     "(the store is unchanged, and "
			                     "damaged; " RESTORE_DAMAGED ")", path,
			                     target);
		else if (restore)
			rc = cli_fail_status(c, st, "cannot restore %s from %s "
			                     "(the store is unchanged)", path, target);
		else
			rc = cli_fail_status(c, st, "cannot checkpoint %s to %s", path,
			                     target);
	} else if (c->json) {
		j = cli_json_path_object("path", path);
		cli_json_set_path(j, "checkpoint", target);
		rc = cli_out_json(j);
	} else {
		char *hp = cli_human(path), *ht = cli_human(target);

		if (restore)
			printf("restored %s from the checkpoint %s\n", hp, ht);
		else
			printf("wrote a checkpoint of %s to %s\n", hp, ht);
		free(hp);
		free(ht);
	}
out:
	sfs_store_close(s);
	return rc;
}

int cmd_checkpoint(cli *c, cli_args *a) { return checkpoint_or_restore(c, a, 0); }
int cmd_restore(cli *c, cli_args *a) { return checkpoint_or_restore(c, a, 1); }
