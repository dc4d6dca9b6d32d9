/*
 * config.c - how a store and its key are found: the rules of
 * sfs_store_open and sfs_config_resolve (statefs.h), in one place so that
 * the daemon, statectl and an embedding program follow the same ones.
 *
 * Without SFS_OPEN_ENV the caller names everything: the store (or the
 * default store) and the key (or a key file to read). With it, the tools'
 * rules: the store is cfg->db, $STATEFS_DB or the default store; the key is
 * cfg->key, cfg->keyfile, $STATEFS_KEY, $STATEFS_KEY_FILE or the default key
 * file, in that order. The first run (no store, no key anywhere, create
 * asked for) writes a new random key file under $XDG_CONFIG_HOME/statefs/
 * (apart from the data under $XDG_STATE_HOME) and then creates the store,
 * and hands back a sentence saying where the key is.
 *
 * STATEFS_KEY is always wiped from the environment once seen, even when
 * another source wins, so children of the daemon never inherit it.
 * Plaintext is never chosen implicitly: a plaintext store opened without
 * SFS_OPEN_PLAINTEXT is refused with a sentence saying how to open it. What
 * is at the store's name is the backend's to say (its probe): this file
 * knows no file format.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypt/crypt_i.h"
#include "store_i.h"

/* $XDG_<var> if absolute (the XDG spec ignores relative values), else
 * $HOME/<fallback>, else the passwd entry's home; + "/statefs/<leaf>". */
static int xdg_path(const char *var, const char *fallback, const char *leaf,
                    char **out)
{
	const char *base = crypt_getenv(var), *home;
	char *p, buf[4096];
	int n;

	if (base && base[0] == '/') {
		n = asprintf(&p, "%s/statefs/%s", base, leaf);
	} else {
		home = crypt_getenv("HOME");
		if (!home || home[0] != '/') {
			/* _r: getpwuid's entry is the embedding program's */
			struct passwd pwd, *pw = NULL;

			if (getpwuid_r(geteuid(), &pwd, buf, sizeof(buf),
			               &pw) != 0)
				pw = NULL;
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

static int default_keyfile(char **out)
{
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

/* Picks the key by the rules above. With SFS_OPEN_ENV, STATEFS_KEY is
 * consumed either way. */
static int choose_key(const sfs_config *cfg, struct key_choice *c)
{
	int env = !!(cfg->flags & SFS_OPEN_ENV);
	int plaintext = !!(cfg->flags & SFS_OPEN_PLAINTEXT);
	sfs_key *env_key = NULL;
	const char *kf;
	char *dflt = NULL;
	int env_rc = SFS_NOTFOUND, rc;
	char env_detail[512] = "";

	if (env && crypt_getenv("STATEFS_KEY")) {
		env_rc = crypt_key_from_env(&env_key);
		if (env_rc)
			snprintf(env_detail, sizeof(env_detail), "%s",
			         sfs_errdetail());
	}
	sfs_err_clear();
	if (plaintext || cfg->key || cfg->keyfile)
		sfs_key_destroy(env_key);
	if (plaintext)
		return SFS_OK;
	if (cfg->key) {
		c->key = cfg->key;
		return SFS_OK;
	}
	if (cfg->keyfile)
		return choose_file(c, cfg->keyfile, "given as an option");
	if (!env)
		return SFS_OK;
	if (env_rc != SFS_NOTFOUND) {
		if (env_rc)
			return sfs_err(env_rc, "%s", env_detail);
		c->owned = env_key;
		c->key = env_key;
		return SFS_OK;
	}
	kf = crypt_getenv("STATEFS_KEY_FILE");
	if (kf && *kf)
		return choose_file(c, kf, "from STATEFS_KEY_FILE");
	rc = default_keyfile(&dflt);
	if (rc)
		return rc;
	rc = choose_file(c, dflt, NULL);
	free(dflt);
	return rc;
}

/* The store: cfg->db, else (with SFS_OPEN_ENV) $STATEFS_DB, else the
 * default store. A name given and empty is refused, with SFS_OPEN_ENV too:
 * it is what `--db "$DB"` or `-o db=$DB` makes of an unset variable, and
 * taking it for "none given" would read and write the default store
 * instead of the one meant. An empty $STATEFS_DB names no store: it
 * counts as unset. */
static int choose_db(const sfs_config *cfg, char **out)
{
	const char *db = cfg->db;

	if (db && !*db)
		return sfs_err(SFS_INVALID, "the store's name is empty: name a "
		               "store, or give none for %s",
		               (cfg->flags & SFS_OPEN_ENV) ? "$STATEFS_DB or the "
		               "default store" : "the default store");
	if ((cfg->flags & SFS_OPEN_ENV) && db && *db && be_for(db)->given) {
		int rc = be_for(db)->given(db);

		if (rc)
			return rc;
	}
	if (!db && (cfg->flags & SFS_OPEN_ENV))
		db = crypt_getenv("STATEFS_DB");
	if (!db || !*db)
		return xdg_path("XDG_STATE_HOME", ".local/state", "state.db",
		                out);
	*out = strdup(db);
	return *out ? SFS_OK : sfs_err(SFS_NOMEM, "out of memory");
}

int sfs_config_resolve(const sfs_config *cfg, char **db, sfs_key **key,
                       char **keyfile)
{
	struct key_choice c = { 0 };
	char *path = NULL;
	int rc;

	sfs_err_clear();
	if (!cfg || !db || !key)
		return sfs_err(SFS_INVALID, "sfs_config_resolve: NULL argument");
	rc = cfg_check(cfg); /* what an open would refuse, before STATEFS_KEY
	                      * is consumed */
	if (rc)
		return rc;
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
 * looked, instead of letting the open fail vaguely. */
static int explain_no_key(const char *db, be_kind kind,
                          const struct key_choice *c)
{
	if (kind == BE_KIND_PLAIN)
		return sfs_err(SFS_NOTENCRYPTED, "%s is a plaintext store: open "
		               "it in plaintext mode explicitly, or encrypt it "
		               "first", db);
	return sfs_err(SFS_NOKEY, "%s is encrypted and no key was found: "
	               NONE_FOUND, db, c->file);
}

/* The name a message gives the store db (malloc'd): the backend's
 * display name, without any password. */
static int shown_name(const char *db, char **out)
{
	const sfs_backend_ops *ops = be_for(db);

	if (ops->display)
		return ops->display(db, out);
	*out = strdup(db);
	return *out ? SFS_OK : sfs_err(SFS_NOMEM, "out of memory");
}

/* The tools' rules (SFS_OPEN_ENV): the key, or the first run, or why
 * neither. */
static int plan_env(const sfs_config *cfg, cfg_plan *p, struct key_choice *c,
                    char **notice)
{
	be_kind kind = BE_KIND_NEW;
	char *shown = NULL;
	int rc;

	if (c->file_missing && c->file_from)
		return missing_file(c);
	if ((p->flags & SFS_OPEN_PLAINTEXT) || c->key)
		return SFS_OK;
	rc = be_for(p->db)->probe(p->db, &kind);
	if (rc)
		return rc;
	/* The sentences below name the store as every message does: by the
	 * backend's display name, which leaves out a password that a
	 * connection string in STATEFS_DB may hold. */
	rc = shown_name(p->db, &shown);
	if (rc)
		return rc;
	if (kind != BE_KIND_NEW)
		rc = explain_no_key(shown, kind, c);
	else if ((cfg->flags & SFS_OPEN_CREATE) &&
	         !(cfg->flags & SFS_OPEN_READONLY))
		rc = first_run_key(c, notice, shown);
	else
		rc = sfs_err(SFS_NOTFOUND, "the store %s does not exist", shown);
	free(shown);
	return rc;
}

int cfg_plan_open(const sfs_config *cfg, cfg_plan *p, char **notice)
{
	struct key_choice c = { 0 };
	int rc;

	memset(p, 0, sizeof(*p));
	p->flags = cfg->flags;
	if ((p->flags & SFS_OPEN_PLAINTEXT) && cfg->key)
		return sfs_err(SFS_INVALID, "a key was given with "
		               "SFS_OPEN_PLAINTEXT");
	rc = choose_db(cfg, &p->db);
	if (rc)
		return rc;
	p->memory = strcmp(p->db, ":memory:") == 0;
	/* A memory store never reaches a disk: nothing to encrypt. */
	if (p->memory)
		p->flags |= SFS_OPEN_PLAINTEXT;
	rc = choose_key(cfg, &c);
	if (rc == SFS_OK && (cfg->flags & SFS_OPEN_ENV))
		rc = plan_env(cfg, p, &c, notice);
	else if (rc == SFS_OK && c.file_missing)
		rc = sfs_err(SFS_NOTFOUND, "the key file %s does not exist",
		             c.file);
	if (rc == SFS_OK && !c.key && !(p->flags & SFS_OPEN_PLAINTEXT))
		rc = sfs_err(SFS_INVALID, "no key given and SFS_OPEN_PLAINTEXT "
		             "not set");
	if (rc) {
		choice_free(&c);
		cfg_plan_free(p);
		return rc;
	}
	if (!p->memory) {
		p->key = c.key;
		p->owned = c.owned;
		c.owned = NULL;
	}
	choice_free(&c);
	return SFS_OK;
}

void cfg_plan_free(cfg_plan *p)
{
	sfs_key_destroy(p->owned);
	free(p->db);
	memset(p, 0, sizeof(*p));
}

int cfg_env_key(sfs_key **out)
{
	struct key_choice c = { 0 };
	sfs_config cfg = { .flags = SFS_OPEN_ENV };
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
