/*
 * test_crypt_config.c - sfs_store_open with SFS_OPEN_ENV and
 * sfs_config_resolve (core/config.c): the rules every tool uses to find a
 * store and its key, and the first run that creates both. Each test points
 * XDG_STATE_HOME and XDG_CONFIG_HOME at its own directories, so nothing
 * outside the test directory is touched.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlite/vfs_i.h"
#include "fixture.h"
#include "statefs.h"

static char dir[64];
static char state_home[128], config_home[128];
static char store[256], keyfile[256];
static int seq;

static int setup(void **state)
{
	(void)state;
	return tfx_mkdtemp(dir, sizeof(dir), "cfg");
}

static int teardown(void **state)
{
	(void)state;
	return tfx_rmtree(dir);
}

/* Fresh homes for one test; no key or store variables. */
static int fresh(void **state)
{
	(void)state;
	seq++;
	snprintf(state_home, sizeof(state_home), "%s/%d/state", dir, seq);
	snprintf(config_home, sizeof(config_home), "%s/%d/config", dir, seq);
	snprintf(store, sizeof(store), "%s/statefs/state.db", state_home);
	snprintf(keyfile, sizeof(keyfile), "%s/statefs/key", config_home);
	setenv("XDG_STATE_HOME", state_home, 1);
	setenv("XDG_CONFIG_HOME", config_home, 1);
	unsetenv("STATEFS_DB");
	unsetenv("STATEFS_KEY");
	unsetenv("STATEFS_KEY_FILE");
	return 0;
}

static void put_get(sfs_store *s, const char *val)
{
	sfs_buf b = { 0 };

	assert_int_equal(sfs_kv_put(s, sfs_str("sc"), sfs_str("ns"),
	                            sfs_str("k"), sfs_str(val)), SFS_OK);
	assert_int_equal(sfs_kv_get(s, sfs_str("sc"), sfs_str("ns"),
	                            sfs_str("k"), &b), SFS_OK);
	assert_string_equal((char *)b.ptr, val);
	sfs_buf_free(&b);
}

static void test_first_run(void **state)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV | SFS_OPEN_CREATE };
	sfs_store *s = NULL;
	char *notice = NULL;
	crypt_kind kind;
	struct stat st;
	sfs_key *k;
	(void)state;

	assert_int_equal(sfs_store_open(&cfg, &s, &notice), SFS_OK);
	assert_non_null(notice);
	assert_non_null(strstr(notice, keyfile));
	assert_non_null(strstr(notice, store));
	assert_non_null(strstr(notice, "Back up"));
	free(notice);
	put_get(s, "first");
	sfs_store_close(s);

	assert_int_equal(stat(keyfile, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(crypt_preflight(store, NULL, &kind), SFS_NOKEY);
	assert_int_equal(sfs_key_from_file(keyfile, &k), SFS_OK);
	assert_int_equal(crypt_preflight(store, k, &kind), SFS_OK);
	sfs_key_destroy(k);

	/* Second run: same key, nothing to say. */
	assert_int_equal(sfs_store_open(&cfg, &s, &notice), SFS_OK);
	assert_null(notice);
	put_get(s, "second");
	sfs_store_close(s);

	/* Without create, an existing store opens; a missing one does not. */
	cfg.flags &= ~(unsigned)SFS_OPEN_CREATE;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_OK);
	sfs_store_close(s);
	setenv("STATEFS_DB", "/nonexistent/statefs-test.db", 1);
	assert_int_equal(sfs_store_open(&cfg, &s, &notice),
	                 SFS_NOTFOUND);
	assert_null(notice);
	unsetenv("STATEFS_DB");
}

static void test_key_sources(void **state)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV | SFS_OPEN_CREATE };
	sfs_store *s = NULL;
	sfs_key *other;
	char text[45], path[300];
	(void)state;

	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_OK);
	sfs_store_close(s);

	/* STATEFS_KEY wins over the default key file, and is wiped. */
	assert_int_equal(sfs_key_generate(&other), SFS_OK);
	assert_int_equal(sfs_key_to_text(other, text, sizeof(text)), SFS_OK);
	setenv("STATEFS_KEY", text, 1);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_WRONGKEY);
	assert_non_null(strstr(sfs_errdetail(), "wrong key"));
	assert_null(strstr(sfs_errdetail(), text));
	assert_null(getenv("STATEFS_KEY"));

	/* ... and is wiped even when an option names a key file. */
	setenv("STATEFS_KEY", "not even a key", 1);
	cfg.keyfile = keyfile;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_OK);
	sfs_store_close(s);
	assert_null(getenv("STATEFS_KEY"));
	/* A bad STATEFS_KEY is an error when it is the source used. */
	cfg.keyfile = NULL;
	setenv("STATEFS_KEY", "not even a key", 1);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_BADKEY);
	assert_non_null(strstr(sfs_errdetail(), "STATEFS_KEY"));

	/* STATEFS_KEY_FILE. */
	snprintf(path, sizeof(path), "%s/%d/other.key", dir, seq);
	assert_int_equal(sfs_key_write_file(other, path), SFS_OK);
	setenv("STATEFS_KEY_FILE", path, 1);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_WRONGKEY);
	chmod(path, 0644);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_KEYPERM);
	assert_non_null(strstr(sfs_errdetail(), "0644"));
	unsetenv("STATEFS_KEY_FILE");

	/* A caller's key overrides everything. */
	cfg.key = other;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_WRONGKEY);
	cfg.key = NULL;

	/* A missing key file given as an option. */
	cfg.keyfile = "/nonexistent/statefs.key";
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_NOTFOUND);
	assert_non_null(strstr(sfs_errdetail(), "/nonexistent/statefs.key"));
	sfs_key_destroy(other);
}

static void test_no_key_sentences(void **state)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV | SFS_OPEN_CREATE };
	sfs_store *s = NULL;
	char plain[300];
	(void)state;

	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_OK);
	sfs_store_close(s);
	/* The key is gone: say where we looked, make nothing new. */
	assert_int_equal(unlink(keyfile), 0);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_NOKEY);
	assert_non_null(strstr(sfs_errdetail(), keyfile));
	assert_non_null(strstr(sfs_errdetail(), "STATEFS_KEY"));
	assert_int_equal(access(keyfile, F_OK), -1);

	/* Encrypted store asked for in plaintext mode. */
	cfg.flags |= SFS_OPEN_PLAINTEXT;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_NOKEY);
	assert_non_null(strstr(sfs_errdetail(), "plaintext mode"));

	/* A plaintext store: only in plaintext mode, never implicitly. */
	snprintf(plain, sizeof(plain), "%s/%d/plain.db", dir, seq);
	cfg.db = plain;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_OK);
	put_get(s, "plain");
	sfs_store_close(s);
	cfg.flags &= ~(unsigned)SFS_OPEN_PLAINTEXT;
	cfg.flags &= ~(unsigned)SFS_OPEN_CREATE;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL),
	                 SFS_NOTENCRYPTED);
	assert_non_null(strstr(sfs_errdetail(), "plaintext"));
	/* Even with a key at hand. */
	assert_int_equal(sfs_key_generate((sfs_key **)&cfg.key), SFS_OK);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL),
	                 SFS_NOTENCRYPTED);
	sfs_key_destroy((sfs_key *)cfg.key);

	/* Read-only never creates: a missing store is not there, and
	 * asking for both is a mistake. */
	cfg.key = NULL;
	cfg.db = NULL;
	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_READONLY;
	setenv("XDG_STATE_HOME", "/nonexistent-statefs", 1);
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_NOTFOUND);
	cfg.flags |= SFS_OPEN_CREATE;
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_INVALID);
	assert_int_equal(access("/nonexistent-statefs", F_OK), -1);
}

/* sfs_config_resolve: the same choices as opening, and nothing created. */
static void test_resolve(void **state)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV };
	sfs_key *k = NULL, *env = NULL;
	sfs_store *s = NULL;
	char *db = NULL, *kf = NULL, text[45];
	(void)state;

	/* Nothing exists yet: the default places, no key, nothing made. */
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_string_equal(db, store);
	assert_string_equal(kf, keyfile);
	assert_null(k);
	assert_int_equal(access(keyfile, F_OK), -1);
	assert_int_equal(access(store, F_OK), -1);
	free(db);
	free(kf);

	/* The key file the rules chose, read. */
	assert_int_equal(sfs_key_generate(&env), SFS_OK);
	assert_int_equal(sfs_key_write_file(env, keyfile), SFS_OK);
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_non_null(k);
	assert_string_equal(kf, keyfile);
	sfs_key_destroy(k);
	free(db);
	free(kf);

	/* STATEFS_KEY wins, leaves no key file, and is consumed. */
	assert_int_equal(sfs_key_to_text(env, text, sizeof(text)), SFS_OK);
	setenv("STATEFS_KEY", text, 1);
	setenv("STATEFS_DB", "/elsewhere/state.db", 1);
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_string_equal(db, "/elsewhere/state.db");
	assert_non_null(k);
	assert_null(kf);
	assert_null(getenv("STATEFS_KEY"));
	sfs_key_destroy(k);
	free(db);

	/* An option beats the environment; plaintext has no key at all. */
	cfg.db = "/given.db";
	cfg.keyfile = "/nonexistent/given.key";
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_string_equal(db, "/given.db");
	assert_string_equal(kf, "/nonexistent/given.key");
	assert_null(k);
	free(db);
	free(kf);
	cfg.flags |= SFS_OPEN_PLAINTEXT;
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_null(k);
	assert_null(kf);
	free(db);

	/* A store named and empty (`--db "$DB"`, `-o db=$DB` with DB unset)
	 * is refused, never taken for none: not $STATEFS_DB, not the default
	 * store, and nothing opened. An empty $STATEFS_DB names none. */
	cfg.db = "";
	db = NULL;
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf),
	                 SFS_INVALID);
	assert_null(db);
	assert_non_null(strstr(sfs_errdetail(), "name is empty"));
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_INVALID);
	unsetenv("STATEFS_DB");
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_INVALID);
	assert_int_equal(access(store, F_OK), -1);
	cfg.db = NULL;
	setenv("STATEFS_DB", "", 1);
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf), SFS_OK);
	assert_string_equal(db, store);
	free(db);
	unsetenv("STATEFS_DB");

	/* What an open refuses in cfg, resolve refuses too (it said SFS_OK
	 * for flags the open calls unknown), and before STATEFS_KEY is
	 * consumed. */
	db = NULL;
	setenv("STATEFS_KEY", text, 1);
	cfg.flags = SFS_OPEN_ENV | (1u << 20);
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf),
	                 SFS_INVALID);
	assert_non_null(strstr(sfs_errdetail(), "unknown open flags"));
	assert_int_equal(sfs_store_open(&cfg, &s, NULL), SFS_INVALID);
	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_EXCL;
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf),
	                 SFS_INVALID);
	cfg.flags = SFS_OPEN_ENV;
	cfg.lease_ms = -1;
	assert_int_equal(sfs_config_resolve(&cfg, &db, &k, &kf),
	                 SFS_INVALID);
	assert_null(db);
	assert_non_null(getenv("STATEFS_KEY"));
	unsetenv("STATEFS_KEY");
	sfs_key_destroy(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_first_run, fresh),
		cmocka_unit_test_setup(test_key_sources, fresh),
		cmocka_unit_test_setup(test_no_key_sentences, fresh),
		cmocka_unit_test_setup(test_resolve, fresh),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
