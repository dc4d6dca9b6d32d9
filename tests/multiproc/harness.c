/*
 * harness.c - the parent and child plumbing of the multi-process tests
 * (see harness.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* How children find the parent's directory. */
#define DIR_ENV "STATEFS_MP_DIR"

char mp_dir[256], mp_store[512], mp_keyfile[320];

void mp_die(const char *what, int rc)
{
	fprintf(stderr, "[%ld] %s: %s (%s)\n", (long)getpid(), what,
	        sfs_strerror(rc), sfs_errdetail());
	exit(1);
}

int mp_encrypted(void)
{
	const char *m = getenv("STATEFS_TEST_MODE");

	return m && !strcmp(m, "encrypted");
}

sfs_store *mp_open(const char *path, unsigned flags)
{
	sfs_config o;
	sfs_key *key = NULL;
	sfs_store *s;
	int rc;

	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = flags;
	if (mp_encrypted()) {
		if ((rc = sfs_key_from_file(mp_keyfile, &key)))
			mp_die("key", rc);
		o.key = key;
	} else {
		o.flags |= SFS_OPEN_PLAINTEXT;
	}
	rc = sfs_store_open(&o, &s, NULL);
	sfs_key_destroy(key);
	if (rc)
		mp_die("open", rc);
	return s;
}

sfs_store *mp_open_store(unsigned flags)
{
	return mp_open(mp_store, flags);
}

pid_t mp_spawn(const char *const *argv)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		/* A child dies with the test: a parent that fails (or is
		 * killed by meson's timeout) must not leave workers holding
		 * the test's stdout, which meson reads to the end. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int mp_exited_ok(pid_t pid)
{
	int st;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

void mp_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int mp_reap(const pid_t *pids, int n)
{
	int bad = 0, st;

	for (int i = 0; i < n; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "child %ld failed (status 0x%x)\n",
			        (long)pids[i], st);
			bad = 1;
		}
	}
	return bad;
}

static void set_paths(const char *dir)
{
	snprintf(mp_dir, sizeof(mp_dir), "%s", dir);
	snprintf(mp_store, sizeof(mp_store), "%s/store.db", mp_dir);
	snprintf(mp_keyfile, sizeof(mp_keyfile), "%s/key", mp_dir);
}

/* A fresh directory with an empty store (and its key file). */
static void setup_dir(const char *prog)
{
	const char *tmp = getenv("TMPDIR");
	char dir[sizeof(mp_dir)];
	sfs_key *key;
	int rc;

	snprintf(dir, sizeof(dir), "%s/statefs-%s-XXXXXX",
	         tmp && *tmp ? tmp : "/tmp", prog);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	set_paths(dir);
	if (mp_encrypted()) {
		if ((rc = sfs_key_generate(&key)))
			mp_die("keygen", rc);
		if ((rc = sfs_key_write_file(key, mp_keyfile)))
			mp_die("key file", rc);
		sfs_key_destroy(key);
	}
	sfs_store_close(mp_open_store(SFS_OPEN_CREATE | SFS_OPEN_EXCL));
}

static void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", mp_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", mp_dir);
}

int mp_main(int argc, char **argv, const char *prog, const mp_test *tests,
            int (*child)(int argc, char **argv))
{
	const mp_test *t;
	int bad = 2;

	if (argc >= 3 && !strcmp(argv[1], "child")) {
		const char *dir = getenv(DIR_ENV);

		if (!dir)
			return 2;
		set_paths(dir);
		return child(argc, argv);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s ", prog);
		for (t = tests; t->name; t++)
			fprintf(stderr, "%s%s", t->name, t[1].name ? "|" : "\n");
		return 2;
	}
	setup_dir(prog);
	setenv(DIR_ENV, mp_dir, 1);
	for (t = tests; t->name; t++)
		if (!strcmp(argv[1], t->name)) {
			bad = t->run();
			break;
		}
	cleanup();
	printf("%s %s\n", argv[1], bad ? "FAILED" : "ok");
	return bad;
}
