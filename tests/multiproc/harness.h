/*
 * harness.h - what the multi-process tests (multiproc.c, claims.c) share:
 * one scratch directory with a store (and, encrypted, its key file) that
 * the parent makes and children find through the environment, children
 * that are this same program run again, and the reports of how they ended.
 *
 * A test program is "PROG TEST" (the parent: a fresh directory, the test,
 * "TEST ok" or "TEST FAILED" on stdout, exit 0 or 1) or "PROG child ..." (a
 * worker the parent spawned). STATEFS_TEST_MODE=encrypted shares one key
 * through the key file; anything else is a plaintext store.
 */
#ifndef STATEFS_TEST_HARNESS_H
#define STATEFS_TEST_HARNESS_H

#include <sys/types.h>

#include "statefs.h"

#define S(x) sfs_str(x)

/* The scratch directory, its store and its key file (set in parent and
 * children alike before a test or child runs). */
extern char mp_dir[256], mp_store[512], mp_keyfile[320];

/* Prints "[pid] what: status (detail)" on stderr and exits 1. */
void mp_die(const char *what, int rc);
/* 1 when STATEFS_TEST_MODE is "encrypted". */
int mp_encrypted(void);
/* Opens the store at path with the mode's key (or plaintext) and flags;
 * dies on failure. */
sfs_store *mp_open(const char *path, unsigned flags);
/* mp_open of the test's store. */
sfs_store *mp_open_store(unsigned flags);

/* Forks and execs this program with argv (argv[1] "child"); the pid. The
 * child is killed when the parent dies, however it dies. */
pid_t mp_spawn(const char *const *argv);
/* Waits for pid; 1 when it exited with status 0, else 0. */
int mp_exited_ok(pid_t pid);
/* Kills pid with SIGKILL and reaps it. */
void mp_kill(pid_t pid);
/* Waits for every pid, saying on stderr which failed; 1 when one did. */
int mp_reap(const pid_t *pids, int n);

typedef struct mp_test {
	const char *name;
	int (*run)(void);        /* 0 pass, 1 fail */
} mp_test;

/* The whole main() of a test program named prog: a child runs
 * child(argc, argv) (its exit code: 0, or 2 for arguments it does not
 * know); the parent makes the directory and the store, runs the test
 * named by argv[1] among tests (ended by a NULL name), removes the
 * directory and prints the outcome. Returns the exit code. */
int mp_main(int argc, char **argv, const char *prog, const mp_test *tests,
            int (*child)(int argc, char **argv));

#endif
