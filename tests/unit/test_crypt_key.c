/*
 * test_crypt_key.c - key sources and key hygiene (core/crypt/key.c, core/config.c).
 *
 * Runs in the unit suite, so also under ASan+UBSan. The environment test
 * re-executes this binary with STATEFS_KEY in its *initial* environment,
 * because only that block is what /proc/self/environ shows; a setenv()
 * value would live on the heap and prove nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "crypt/crypt_i.h"
#include "fixture.h"
#include "statefs.h"

/* A fixed key, and the same key in each accepted text form. */
static unsigned char raw_key[32];
static char hex_key[65], b64_key[45], b64_nopad[44], url_key[45];

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	for (int i = 0; i < 32; i++)
		raw_key[i] = (unsigned char)(0xf0 + i * 7);
	sodium_bin2hex(hex_key, sizeof(hex_key), raw_key, 32);
	sodium_bin2base64(b64_key, sizeof(b64_key), raw_key, 32,
	                  sodium_base64_VARIANT_ORIGINAL);
	sodium_bin2base64(b64_nopad, sizeof(b64_nopad), raw_key, 32,
	                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	sodium_bin2base64(url_key, sizeof(url_key), raw_key, 32,
	                  sodium_base64_VARIANT_URLSAFE);
	return tfx_mkdtemp(tmpdir, sizeof(tmpdir), "key");
}

static int teardown(void **state)
{
	(void)state;
	return tfx_rmtree(tmpdir);
}

/* The key's text form, for comparing keys without reaching inside. */
static void text_of(const sfs_key *k, char out[45])
{
	assert_int_equal(sfs_key_to_text(k, out, 45), SFS_OK);
}

static void write_file(const char *path, const void *data, size_t n,
                       mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_generate_is_random(void **state)
{
	sfs_key *a, *b;
	char ta[45], tb[45];
	(void)state;

	assert_int_equal(sfs_key_generate(&a), SFS_OK);
	assert_int_equal(sfs_key_generate(&b), SFS_OK);
	text_of(a, ta);
	text_of(b, tb);
	assert_int_equal(strlen(ta), 44);
	assert_string_not_equal(ta, tb);
	sfs_key_destroy(a);
	sfs_key_destroy(b);
	sfs_key_destroy(NULL);
}

static void test_text_forms(void **state)
{
	const char *forms[] = { hex_key, b64_key, b64_nopad, url_key };
	char spaced[128], t[45];
	sfs_key *k;
	(void)state;

	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(sfs_key_from_text(forms[i], strlen(forms[i]),
		                                   &k), SFS_OK);
		text_of(k, t);
		assert_string_equal(t, b64_key);
		sfs_key_destroy(k);
	}
	snprintf(spaced, sizeof(spaced), "  \t%s\n\n", hex_key);
	assert_int_equal(sfs_key_from_text(spaced, strlen(spaced), &k), SFS_OK);
	text_of(k, t);
	assert_string_equal(t, b64_key);
	sfs_key_destroy(k);
}

static void test_text_refused(void **state)
{
	char bad[128];
	sfs_key *k = NULL;
	(void)state;

	/* 31 bytes as hex, 33 bytes as base64, a bad alphabet, a
	 * passphrase-like string, the empty string. */
	snprintf(bad, sizeof(bad), "%.62s", hex_key);
	assert_int_equal(sfs_key_from_text(bad, strlen(bad), &k), SFS_BADKEY);
	assert_null(strstr(sfs_errdetail(), bad));
	assert_non_null(strstr(sfs_errdetail(), "32-byte key"));
	assert_int_equal(sfs_key_from_text("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
	                                   48, &k), SFS_BADKEY);
	snprintf(bad, sizeof(bad), "%s", b64_key);
	bad[5] = '!';
	assert_int_equal(sfs_key_from_text(bad, strlen(bad), &k), SFS_BADKEY);
	assert_null(strstr(sfs_errdetail(), bad));
	assert_int_equal(sfs_key_from_text("correct horse battery staple",
	                                   28, &k), SFS_BADKEY);
	assert_int_equal(sfs_key_from_text("", 0, &k), SFS_BADKEY);
	assert_null(k);
	assert_int_equal(sfs_key_from_text(NULL, 3, &k), SFS_INVALID);
	/* A status of its own, added after the others so that their values
	 * stay what programs built against an older header know. */
	assert_int_equal(SFS_BADKEY, SFS_INTERNAL + 1);
	assert_string_equal(sfs_strerror(SFS_BADKEY), "not a usable key");
}

static void test_file_modes(void **state)
{
	char path[PATH_MAX], line[64], t[45];
	sfs_key *k = NULL;
	(void)state;

	snprintf(path, sizeof(path), "%s/key", tmpdir);
	snprintf(line, sizeof(line), "%s\n", b64_key);
	write_file(path, line, strlen(line), 0644);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_KEYPERM);
	assert_non_null(strstr(sfs_errdetail(), "0644"));
	assert_non_null(strstr(sfs_errdetail(), path));
	assert_null(strstr(sfs_errdetail(), b64_key));
	assert_null(k);

	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_KEYPERM);
	assert_non_null(strstr(sfs_errdetail(), "0640"));
	assert_int_equal(chmod(path, 0602), 0);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_KEYPERM);

	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_OK);
	text_of(k, t);
	assert_string_equal(t, b64_key);
	sfs_key_destroy(k);

	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_OK);
	sfs_key_destroy(k);

	/* 32 raw bytes. */
	write_file(path, raw_key, 32, 0600);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_OK);
	text_of(k, t);
	assert_string_equal(t, b64_key);
	sfs_key_destroy(k);

	/* Hex text, no newline. */
	write_file(path, hex_key, 64, 0600);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_OK);
	sfs_key_destroy(k);

	/* Garbage, empty, a directory, a missing file: *out untouched. */
	k = NULL;
	write_file(path, "not a key\n", 10, 0600);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_BADKEY);
	write_file(path, "", 0, 0600);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_BADKEY);
	assert_non_null(strstr(sfs_errdetail(), "is empty"));
	{
		static char big[4097];

		memset(big, 'A', sizeof(big));
		write_file(path, big, sizeof(big), 0600);
		assert_int_equal(sfs_key_from_file(path, &k), SFS_BADKEY);
		assert_non_null(strstr(sfs_errdetail(), "too large"));
	}
	/* Misuse of the call is not a bad key. */
	assert_int_equal(sfs_key_from_file(NULL, &k), SFS_INVALID);
	assert_int_equal(sfs_key_from_file(path, NULL), SFS_INVALID);
	/* Not a regular file: refused for what it is, not for its mode, and
	 * a FIFO without waiting for a writer (this test would hang). */
	assert_int_equal(sfs_key_from_file(tmpdir, &k), SFS_BADKEY);
	assert_non_null(strstr(sfs_errdetail(), "is a directory, not a regular file"));
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_BADKEY);
	assert_non_null(strstr(sfs_errdetail(), "is a FIFO (named pipe), not a regular file"));
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/absent", tmpdir);
	assert_int_equal(sfs_key_from_file(path, &k), SFS_NOTFOUND);
	assert_null(k);
}

static void test_write_file(void **state)
{
	char path[PATH_MAX], dir[128], t1[45], t2[45];
	sfs_key *k, *back, *pass;
	struct stat st;
	(void)state;

	snprintf(dir, sizeof(dir), "%s/cfg/statefs", tmpdir);
	snprintf(path, sizeof(path), "%s/key", dir);
	assert_int_equal(sfs_key_generate(&k), SFS_OK);
	assert_int_equal(sfs_key_write_file(k, path), SFS_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(sfs_key_from_file(path, &back), SFS_OK);
	text_of(k, t1);
	text_of(back, t2);
	assert_string_equal(t1, t2);
	/* Never overwrites. */
	assert_int_equal(sfs_key_write_file(back, path), SFS_EXISTS);
	sfs_key_destroy(back);
	sfs_key_destroy(k);

	assert_int_equal(sfs_key_from_passphrase("hunter2", 7, &pass), SFS_OK);
	snprintf(path, sizeof(path), "%s/passkey", tmpdir);
	assert_int_equal(sfs_key_write_file(pass, path), SFS_INVALID);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(sfs_key_to_text(pass, t1, sizeof(t1)), SFS_INVALID);
	sfs_key_destroy(pass);
}

static void test_passphrase_root(void **state)
{
	unsigned char salt[16] = { 1, 2, 3 }, other[16] = { 9 };
	unsigned char r1[32], r2[32], r3[32];
	sfs_key *p, *q, *raw;
	(void)state;

	assert_int_equal(sfs_key_from_passphrase("", 0, &p), SFS_BADKEY);
	{
		static char longpass[4097];

		memset(longpass, 'x', sizeof(longpass));
		assert_int_equal(sfs_key_from_passphrase(longpass,
		                                         sizeof(longpass), &p),
		                 SFS_BADKEY);
	}
	assert_int_equal(sfs_key_from_passphrase(NULL, 2, &p), SFS_INVALID);
	assert_int_equal(sfs_key_from_passphrase("pw", 2, &p), SFS_OK);
	assert_int_equal(crypt_key_kdf(p), CRYPT_KDF_MODERATE);
	assert_true(crypt_key_is_passphrase(p));
	/* INTERACTIVE keeps the test fast; the profile is the file's. */
	assert_int_equal(crypt_key_root(p, salt, CRYPT_KDF_INTERACTIVE, r1),
	                 SFS_OK);
	assert_int_equal(crypt_key_root(p, salt, CRYPT_KDF_INTERACTIVE, r2),
	                 SFS_OK);
	assert_memory_equal(r1, r2, 32);
	assert_int_equal(crypt_key_root(p, other, CRYPT_KDF_INTERACTIVE, r3),
	                 SFS_OK);
	assert_memory_not_equal(r1, r3, 32);
	/* A copy carries the cache and gives the same root. */
	assert_int_equal(crypt_key_dup(p, &q), SFS_OK);
	assert_int_equal(crypt_key_root(q, salt, CRYPT_KDF_INTERACTIVE, r2),
	                 SFS_OK);
	assert_memory_equal(r1, r2, 32);
	/* A passphrase never opens a raw-key file and the reverse. */
	assert_int_equal(crypt_key_root(p, salt, CRYPT_KDF_RAW, r2),
	                 SFS_WRONGKEY);
	assert_int_equal(sfs_key_from_text(b64_key, strlen(b64_key), &raw),
	                 SFS_OK);
	assert_int_equal(crypt_key_root(raw, salt, CRYPT_KDF_MODERATE, r2),
	                 SFS_WRONGKEY);
	assert_int_equal(crypt_key_root(raw, salt, CRYPT_KDF_RAW, r2), SFS_OK);
	assert_memory_equal(r2, raw_key, 32);
	sfs_key_destroy(raw);
	sfs_key_destroy(q);
	sfs_key_destroy(p);
}

/* The default key file: what sfs_config_resolve names by the tools'
 * rules when nothing else gives a key. */
static int default_keyfile(char **p)
{
	sfs_config cfg = { .flags = SFS_OPEN_ENV };
	sfs_key *k = NULL;
	char *db = NULL;
	int rc;

	unsetenv("STATEFS_KEY");
	unsetenv("STATEFS_KEY_FILE");
	rc = sfs_config_resolve(&cfg, &db, &k, p);
	free(db);
	sfs_key_destroy(k);
	return rc;
}

static void test_default_keyfile(void **state)
{
	char *p;
	(void)state;

	setenv("XDG_CONFIG_HOME", "/srv/cfg", 1);
	assert_int_equal(default_keyfile(&p), SFS_OK);
	assert_string_equal(p, "/srv/cfg/statefs/key");
	free(p);
	/* A relative XDG value is ignored, as the XDG spec says. */
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", "/home/someone", 1);
	assert_int_equal(default_keyfile(&p), SFS_OK);
	assert_string_equal(p, "/home/someone/.config/statefs/key");
	free(p);
	unsetenv("XDG_CONFIG_HOME");
	assert_int_equal(default_keyfile(&p), SFS_OK);
	assert_string_equal(p, "/home/someone/.config/statefs/key");
	free(p);
}

/* Does /proc/self/environ contain s? */
static int environ_has(const char *s)
{
	char buf[65536];
	size_t n = 0, len = strlen(s);
	ssize_t r;
	int fd = open("/proc/self/environ", O_RDONLY);

	if (fd < 0)
		return -1;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	close(fd);
	for (size_t i = 0; i + len <= n; i++)
		if (memcmp(buf + i, s, len) == 0)
			return 1;
	return 0;
}

/* The re-executed child: exit 0 when from_env reads and wipes the key. */
static int env_child(const char *expect_status)
{
	sfs_key *k = NULL;
	char t[45];
	const char *val = getenv("STATEFS_KEY");
	char copy[256];
	int rc;

	if (!val || strlen(val) >= sizeof(copy))
		return 10;
	snprintf(copy, sizeof(copy), "%s", val);
	if (environ_has(copy) != 1)
		return 11;
	rc = crypt_key_from_env(&k);
	if (rc != atoi(expect_status))
		return 12;
	if (getenv("STATEFS_KEY"))
		return 13;
	if (environ_has(copy) != 0)
		return 14;
	if (strstr(sfs_errdetail(), copy))
		return 15;
	if (rc == SFS_OK) {
		sfs_key_to_text(k, t, sizeof(t));
		if (strcmp(t, b64_key) != 0)
			return 16;
		sfs_key_destroy(k);
	}
	return 0;
}

static void run_env_child(const char *value, int expect)
{
	char var[256], status[16];
	char *argv[] = { "/proc/self/exe", "--env-child", status, NULL };
	char *envp[] = { var, NULL };
	int st;
	pid_t pid;

	snprintf(var, sizeof(var), "STATEFS_KEY=%s", value);
	snprintf(status, sizeof(status), "%d", expect);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_env(void **state)
{
	sfs_key *k = NULL;
	char bad[80];
	(void)state;

	unsetenv("STATEFS_KEY");
	assert_int_equal(crypt_key_from_env(&k), SFS_NOTFOUND);
	run_env_child(b64_key, SFS_OK);
	run_env_child(hex_key, SFS_OK);
	/* Wrong length and wrong alphabet: refused, and wiped all the same. */
	snprintf(bad, sizeof(bad), "%.40s", b64_key);
	run_env_child(bad, SFS_BADKEY);
	snprintf(bad, sizeof(bad), "%s", hex_key);
	bad[10] = 'g';
	run_env_child(bad, SFS_BADKEY);
}

/* Threads that read STATEFS_KEY at once (opens with SFS_OPEN_ENV). */
#define ENV_THREADS 8
static pthread_barrier_t env_start;

static void *env_reader(void *arg)
{
	int *rc = arg;
	sfs_key *k = NULL;
	char t[45];

	pthread_barrier_wait(&env_start);
	*rc = crypt_key_from_env(&k);
	if (*rc == SFS_OK) {
		sfs_key_to_text(k, t, sizeof(t));
		if (strcmp(t, b64_key) != 0)
			*rc = -1; /* another key */
		sfs_key_destroy(k);
	}
	return NULL;
}

/* STATEFS_KEY read by several threads at once: one gets the key, the
 * others find it consumed (SFS_NOTFOUND), as one after another would.
 * Before 2026-12-03 a thread could copy it while another wiped it, and
 * got SFS_BADKEY, "STATEFS_KEY is not a 32-byte key", for a good key
 * (about one round in 20 of 8 threads opening stores at once). */
static void test_env_threads(void **state)
{
	pthread_t th[ENV_THREADS];
	int rc[ENV_THREADS];
	(void)state;

	for (int round = 0; round < 200; round++) {
		int ok = 0;

		setenv("STATEFS_KEY", b64_key, 1);
		pthread_barrier_init(&env_start, NULL, ENV_THREADS);
		for (int i = 0; i < ENV_THREADS; i++)
			assert_int_equal(pthread_create(&th[i], NULL, env_reader,
			                                &rc[i]), 0);
		for (int i = 0; i < ENV_THREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&env_start);
		for (int i = 0; i < ENV_THREADS; i++) {
			if (rc[i] != SFS_OK && rc[i] != SFS_NOTFOUND)
				fail_msg("round %d: a thread got %d", round,
				         rc[i]);
			ok += rc[i] == SFS_OK;
		}
		assert_int_equal(ok, 1);
		assert_null(getenv("STATEFS_KEY"));
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate_is_random),
		cmocka_unit_test(test_text_forms),
		cmocka_unit_test(test_text_refused),
		cmocka_unit_test(test_file_modes),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_passphrase_root),
		cmocka_unit_test(test_default_keyfile),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_env_threads),
	};

	if (argc == 3 && strcmp(argv[1], "--env-child") == 0) {
		if (setup(NULL) != 0)
			return 20;
		rmdir(tmpdir);
		return env_child(argv[2]);
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
