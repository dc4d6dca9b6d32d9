/*
 * config.c - how the daemon and statectl find a store and its key.
 *
 * sfs_store_open_config and sfs_config_resolve, so that every tool follows
 * the same rules (statefs.h): the store is cfg->db, $STATEFS_DB or the
 * default store; the key is cfg->key, cfg->keyfile, $STATEFS_KEY, $STATEFS_KEY_FILE or the
 * default key file, in that order. The first run (no store, no key
 * anywhere, create asked for) writes a new random key file under
 * $XDG_CONFIG_HOME/statefs/ (apart from the data under $XDG_STATE_HOME) and
 * then creates the store, and hands back a sentence saying where the key is.
 *
 * STATEFS_KEY is always wiped from the environment once seen, even when
 * another source wins, so children of the daemon never inherit it.
 * Plaintext is never chosen implicitly: a plaintext store opened without
 * cfg->plaintext is refused with a sentence saying how to open it.
 *
 * The store may be a PostgreSQL connection string (docs/postgres.md). One
 * given as cfg->db (which tools fill from their command line) must not
 * hold a password: argv is readable by every user of the machine.
 * Whether such a store exists, and is encrypted, is asked of the server.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_i.h"
#include "crypt_i.h"
#include "err_i.h"

/* $XDG_<var> if absolute (the XDG spec ignores relative values), else
 * $HOME/<fallback>, else the passwd entry's home; + "/statefs/<leaf>". */
static int xdg_path(const char *var, const char *fallback, const char *leaf,
                    char **out)
{
	const char *base = getenv(var), *home;
	char *p;
	int n;

	if (base && base[0] == '/') {
		n = asprintf(&p, "%s/statefs/%s", base, leaf);
	} else {
		home = getenv("HOME");
		if (!home || home[0] != '/') {
			struct passwd *pw = getpwuid(geteuid());
			home = pw ? pw->pw_dir : NULL;
		}
		if (!home || home[0] != '/')
			return sfs_err(SFS_NOTFOUND, "neither %s nor HOME is set, "
			               "and the user has no home directory", var);
		n = asprintf(&p, "%s/%s/statefs/%s", home, fallback, leaf);
	}
	if (n < 0)
		return sfs_err(SFS_NOMEM, "out of memory");
	*out = p;
	return SFS_OK;
}

int sfs_default_keyfile(char **out)
{
	if (!out)
		return sfs_err(SFS_INVALID, "sfs_default_keyfile: out is NULL");
	return xdg_path("XDG_CONFIG_HOME", ".config", "key", out);
}

/* The key the rules chose, and the key file they chose (read, or missing). */
struct key_choice {
	sfs_key *owned;            /* a key we loaded and must destroy */
	const sfs_key *key;        /* the key to use, or NULL */
	char *file;                /* the key file the rules chose, or NULL */
	const char *file_from;     /* how: "given as an option", ...; NULL for
	                              the default key file */
	int file_missing;          /* that file does not exist */
};

static void choice_free(struct key_choice *c)
{
	sfs_key_destroy(c->owned);
	free(c->file);
}

/* Reads the key file the rules chose; a missing one is not an error here
 * (callers decide: first run, or a sentence). */
static int choose_file(struct key_choice *c, const char *path,
                       const char *from)
{
	int rc;

	c->file = strdup(path);
	if (!c->file)
		return sfs_err(SFS_NOMEM, "out of memory");
	c->file_from = from;
	rc = sfs_key_from_file(path, &c->owned);
	if (rc == SFS_NOTFOUND) {
		c->file_missing = 1;
		sfs_err_clear();
		return SFS_OK;
	}
	if (rc == SFS_OK)
		c->key = c->owned;
	return rc;
}

/* Picks the key by the rules above. STATEFS_KEY is consumed either way. */
static int choose_key(const sfs_config *cfg, struct key_choice *c)
{
	sfs_key *env_key = NULL;
	const char *kf;
	char *dflt = NULL;
	int env_rc = SFS_NOTFOUND, rc;
	char env_detail[512] = "";

	if (getenv("STATEFS_KEY")) {
		env_rc = sfs_key_from_env(&env_key);
		if (env_rc)
			snprintf(env_detail, sizeof(env_detail), "%s",
			         sfs_errdetail());
	}
	sfs_err_clear();
	if (cfg->plaintext || cfg->key || cfg->keyfile)
		sfs_key_destroy(env_key);
	if (cfg->plaintext)
		return SFS_OK;
	if (cfg->key) {
		c->key = cfg->key;
		return SFS_OK;
	}
	if (cfg->keyfile)
		return choose_file(c, cfg->keyfile, "given as an option");
	if (env_rc != SFS_NOTFOUND) {
		if (env_rc)
			return sfs_err(env_rc, "%s", env_detail);
		c->owned = env_key;
		c->key = env_key;
		return SFS_OK;
	}
	kf = getenv("STATEFS_KEY_FILE");
	if (kf && *kf)
		return choose_file(c, kf, "from STATEFS_KEY_FILE");
	rc = sfs_default_keyfile(&dflt);
	if (rc)
		return rc;
	rc = choose_file(c, dflt, NULL);
	free(dflt);
	return rc;
}

/* A password in a connection string on the command line is refused. */
static int check_argv_db(const char *db)
{
	int has = 0, rc;

	if (!pgb_is_db(db))
		return SFS_OK;
	rc = pgb_db_has_password(db, &has);
	if (rc || !has)
		return rc;
	return sfs_err(SFS_INVALID, "the connection string holds a password,"
	               " and a command line is readable by every user of this"
	               " machine: put the password in ~/.pgpass (or the file"
	               " PGPASSFILE names), in a service file (PGSERVICE), or in"
	               " PGPASSWORD, or give the whole string in STATEFS_DB");
}

/* The store: cfg->db, else $STATEFS_DB, else the default store. */
static int choose_db(const sfs_config *cfg, char **out)
{
	const char *db = cfg->db && *cfg->db ? cfg->db : getenv("STATEFS_DB");
	int rc;

	if (cfg->db && *cfg->db && (rc = check_argv_db(cfg->db)))
		return rc;
	if (!db || !*db)
		return sfs_default_path(out);
	*out = strdup(db);
	return *out ? SFS_OK : sfs_err(SFS_NOMEM, "out of memory");
}

int sfs_config_resolve(const sfs_config *cfg, char **db, sfs_key **key,
                       char **keyfile)
{
	struct key_choice c = { 0 };
	char *path = NULL;
	int rc;

	if (!cfg || !db || !key)
		return sfs_err(SFS_INVALID, "sfs_config_resolve: NULL argument");
	sfs_err_clear();
	rc = choose_db(cfg, &path);
	if (rc)
		return rc;
	rc = choose_key(cfg, &c);
	if (rc) {
		choice_free(&c);
		free(path);
		return rc;
	}
	*db = path;
	*key = c.owned;
	c.owned = NULL;
	if (keyfile) {
		*keyfile = c.file;
		c.file = NULL;
	}
	choice_free(&c);
	return SFS_OK;
}

/* Whether the store exists; for PostgreSQL also whether it is encrypted
 * (*enc; -1 when the caller must look at a file). */
static int store_exists(const char *path, int *exists, int *enc)
{
	struct stat st;
	int saverr, rc;

	*enc = -1;
	if (pgb_is_db(path)) {
		rc = pgb_probe(path, enc);
		*exists = rc == SFS_OK;
		if (rc == SFS_NOTFOUND)
			sfs_err_clear();
		return rc == SFS_NOTFOUND ? SFS_OK : rc;
	}
	if (stat(path, &st) == 0) {
		*exists = st.st_size > 0;
		return SFS_OK;
	}
	saverr = errno;
	if (saverr == ENOENT) {
		*exists = 0;
		return SFS_OK;
	}
	return sfs_err(SFS_IO, "cannot stat %s: %s", path, strerror(saverr));
}

/* First run: writes a new key at the default path; two first runs racing
 * end up with the same key (the loser reads the winner's file). */
static int first_run_key(struct key_choice *c, char **notice,
                         const char *db)
{
	sfs_key *k = NULL;
	int rc;

	rc = sfs_key_generate(&k);
	if (rc)
		return rc;
	rc = sfs_key_write_file(k, c->file);
	if (rc == SFS_EXISTS) {
		sfs_key_destroy(k);
		rc = sfs_key_from_file(c->file, &k);
		if (rc)
			return rc;
		c->owned = k;
		c->key = k;
		return SFS_OK;
	}
	if (rc) {
		sfs_key_destroy(k);
		return rc;
	}
	c->owned = k;
	c->key = k;
	if (notice &&
	    asprintf(notice, "statefs: created a new encrypted store at %s and "
	             "its key at %s. Back up the key file apart from the "
	             "store: without it the store cannot be read.", db,
	             c->file) < 0)
		*notice = NULL;
	return SFS_OK;
}

/* Where the rules looked when they found no key (the default key file's
 * path goes in). */
#define NONE_FOUND "none given, STATEFS_KEY and STATEFS_KEY_FILE are not " \
                   "set, and the default key file %s does not exist"

/* A key file named by an option or STATEFS_KEY_FILE that does not exist. */
static int missing_file(const struct key_choice *c)
{
	return sfs_err(SFS_NOTFOUND, "the key file %s (%s) does not exist",
	               c->file, c->file_from);
}

/* An existing store and no key: say which kind of store it is and where we
 * looked, instead of letting the open fail vaguely. enc: a PostgreSQL
 * store's kind (1 encrypted, 0 plaintext), -1 for a file. */
static int explain_no_key(const char *db, int enc,
                          const struct key_choice *c)
{
	crypt_kind kind = CRYPT_KIND_ENCRYPTED;
	int rc = enc < 0 ? crypt_preflight(db, NULL, &kind)
	         : enc ? SFS_NOKEY : SFS_OK;

	if (rc == SFS_NOKEY)
		return sfs_err(SFS_NOKEY, "%s is encrypted and no key was "
		               "found: " NONE_FOUND, db, c->file);
	if (rc)
		return rc;
	if (enc == 0 || kind == CRYPT_KIND_PLAIN)
		return sfs_err(SFS_NOTENCRYPTED, "%s is a plaintext store: open "
		               "it in plaintext mode explicitly, or encrypt it "
		               "first", db);
	return SFS_OK;
}

int sfs_store_name(const char *db, char **out)
{
	char *n;

	if (!db || !out)
		return sfs_err(SFS_INVALID, "sfs_store_name: NULL argument");
	if (pgb_is_db(db))
		return pgb_name(db, out);
	n = strdup(db);
	if (!n)
		return sfs_err(SFS_NOMEM, "out of memory");
	*out = n;
	return SFS_OK;
}

int sfs_store_exists(const char *db)
{
	char *name;
	int exists = 0, enc, rc;

	sfs_err_clear();
	if (!db || !*db)
		return sfs_err(SFS_INVALID, "no store named");
	if (!strcmp(db, ":memory:"))
		return SFS_OK;
	if (!pgb_is_db(db))
		return access(db, F_OK) == 0 ? SFS_OK
		       : errno == ENOENT ? sfs_err(SFS_NOTFOUND, "no store at %s",
		                                   db)
		       : sfs_err(SFS_IO, "cannot look at %s: %s", db,
		                 strerror(errno));
	rc = store_exists(db, &exists, &enc);
	if (rc || exists)
		return rc;
	rc = pgb_name(db, &name);
	if (rc)
		return rc;
	rc = sfs_err(SFS_NOTFOUND, "no store at %s", name);
	free(name);
	return rc;
}

int sfs_store_open_config(const sfs_config *cfg, sfs_store **out,
                          char **notice)
{
	struct key_choice c = { 0 };
	sfs_open_opts o = { 0 };
	char *db = NULL, *name = NULL;
	int rc, exists = 0, memory, enc = -1;

	if (notice)
		*notice = NULL;
	if (!cfg || !out)
		return sfs_err(SFS_INVALID, "sfs_store_open_config: NULL "
		               "argument");
	sfs_err_clear();
	rc = choose_db(cfg, &db);
	if (rc)
		return rc;
	memory = strcmp(db, ":memory:") == 0;
	rc = choose_key(cfg, &c);
	if (rc == SFS_OK && c.file_missing && c.file_from)
		rc = missing_file(&c);
	if (rc)
		goto out;
	/* Only a store without a key needs looking at first (a question to
	 * the server for a PostgreSQL store: skipped when not needed). */
	if (!memory && !cfg->plaintext && !c.key) {
		rc = store_exists(db, &exists, &enc);
		if (rc)
			goto out;
	}
	/* What messages call it: never a password. */
	rc = sfs_store_name(db, &name);
	if (rc)
		goto out;

	o.path = db;
	o.busy_timeout_ms = cfg->busy_timeout_ms;
	o.max_value = cfg->max_value;
	o.lease_ms = cfg->lease_ms;
	if (cfg->readonly)
		o.flags |= SFS_OPEN_READONLY;
	if (cfg->no_recovery)
		o.flags |= SFS_OPEN_NORECOVER;
	else if (cfg->create)
		o.flags |= SFS_OPEN_CREATE;
	if (cfg->plaintext || memory) {
		/* A memory store never reaches a disk: nothing to encrypt. */
		o.flags |= SFS_OPEN_PLAINTEXT;
	} else if (c.key) {
		o.key = c.key;
	} else if (exists) {
		rc = explain_no_key(name, enc, &c);
		if (rc == SFS_OK)
			rc = sfs_err(SFS_NOKEY, "no key was found for %s: "
			             NONE_FOUND, name, c.file);
		goto out;
	} else if (cfg->create && !cfg->readonly) {
		rc = first_run_key(&c, notice, name);
		if (rc)
			goto out;
		o.key = c.key;
	} else {
		rc = sfs_err(SFS_NOTFOUND, "the store %s does not exist", name);
		goto out;
	}
	rc = sfs_store_open(&o, out);
out:
	choice_free(&c);
	free(db);
	free(name);
	if (rc && notice && *notice) {
		/* The key file stays (it is valid and may be reused), but the
		 * store was not created: say that instead. */
		free(*notice);
		*notice = NULL;
	}
	return rc;
}

int crypt_config_key(sfs_key **out)
{
	struct key_choice c = { 0 };
	sfs_config cfg = { 0 };
	int rc;

	sfs_err_clear();
	rc = choose_key(&cfg, &c);
	if (rc == SFS_OK && c.file_missing)
		rc = c.file_from ? missing_file(&c)
		                 : sfs_err(SFS_NOKEY, "no key was found: "
		                           NONE_FOUND, c.file);
	if (rc == SFS_OK) {
		*out = c.owned;
		c.owned = NULL;
	}
	choice_free(&c);
	return rc;
}
