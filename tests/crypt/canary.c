/*
 * canary.c - no plaintext reaches the disk, even in a crash.
 *
 * A child process writes a known random 32-byte canary through the engine
 * as scope, namespace, key and value of every family (and inside a value
 * large enough to need overflow pages), signals that it is in its loop of
 * large transactions, and is killed with SIGKILL in the middle of one.
 * Every file left in the store's directory (the store, -wal, -shm, any
 * journal) is then searched for the canary raw, as hex and as base64; after
 * a reopen and a clean close, again. The control runs the same writer on a
 * plaintext store and must find the canary, which proves the search works.
 *
 * Exit 0 when all checks pass; 1 with a FATAL line otherwise.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "ctest.h"

static unsigned char canary[32];

static sfs_slice C(void)
{
	return sfs_bytes(canary, sizeof(canary));
}

/* The writer: never returns. Writes ready (one byte) to fd once the
 * canary is everywhere, then loops over big transactions. */
static void writer(const char *path, const sfs_key *key, int fd)
{
	unsigned char big[20000];
	sfs_slice items[64], keys[300], vals[300];
	char names[300][16];
	sfs_store *s;
	int64_t id;

	if (ct_open(path, key, SFS_OPEN_CREATE, &s) != SFS_OK)
		ct_die("writer open: %s", sfs_errdetail());
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	for (size_t off = 100; off + 32 < sizeof(big); off += 4999)
		memcpy(big + off, canary, 32);
	if (sfs_kv_put(s, C(), C(), C(), C()) ||
	    sfs_kv_put(s, sfs_str("s"), sfs_str("n"), sfs_str("big"),
	               sfs_bytes(big, sizeof(big))) ||
	    sfs_counter_add(s, C(), C(), C(), 7, NULL) ||
	    sfs_log_append(s, C(), C(), C(), C(), &id))
		ct_die("writer puts: %s", sfs_errdetail());
	for (int i = 0; i < 64; i++)
		items[i] = C();
	if (sfs_queue_push(s, C(), items, 64, NULL))
		ct_die("writer push: %s", sfs_errdetail());
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "k%05d", i);
		keys[i] = sfs_str(names[i]);
		vals[i] = sfs_bytes(big, 1000 + (size_t)i * 10);
	}
	if (write(fd, "r", 1) != 1)
		ct_die("writer: pipe");
	for (;;) {
		/* One transaction of ~300 values, each holding the canary. */
		if (sfs_kv_put_many(s, C(), sfs_str(SFS_NS_TXN), keys, vals, 300,
		                    0))
			ct_die("writer txn_put: %s", sfs_errdetail());
		if (sfs_kv_put_many(s, sfs_str("s"), C(), keys, vals, 300, SFS_PUT_REPLACE))
			ct_die("writer restore: %s", sfs_errdetail());
	}
}

/* Runs the writer on path, kills it after delay_ms, returns when dead. */
static void crash_writer(const char *path, const sfs_key *key, long delay_ms)
{
	int p[2], st;
	char b;
	pid_t pid;

	if (pipe(p) != 0)
		ct_die("pipe");
	pid = fork();
	if (pid < 0)
		ct_die("fork");
	if (pid == 0) {
		close(p[0]);
		writer(path, key, p[1]);
	}
	close(p[1]);
	if (read(p[0], &b, 1) != 1)
		ct_die("the writer died before it was ready");
	ct_sleep_ms(delay_ms);
	kill(pid, SIGKILL);
	if (waitpid(pid, &st, 0) != pid || !WIFSIGNALED(st))
		ct_die("the writer was not killed (status %d)", st);
	close(p[0]);
}

static void check_dir(const char *dir, int want_leak, const char *when)
{
	char which[256] = "";
	const char *how = ct_dir_leaks(dir, canary, sizeof(canary), which,
	                               sizeof(which));

	if (want_leak && !how)
		ct_die("control (%s): the canary was not found in the plaintext "
		       "store: the search is broken", when);
	if (!want_leak && how)
		ct_die("%s: the canary is in %s (%s)", when, which, how);
	printf("%s: %s\n", when, how ? how : "no canary in any file");
}

static void run(int encrypted, long delay_ms)
{
	char dir[64], path[128], when[128];
	const char *mode = encrypted ? "encrypted" : "plaintext";
	sfs_key *key = NULL;
	sfs_store *s;
	sfs_buf b = { 0 };

	ct_mkdir(dir, "canary");
	snprintf(path, sizeof(path), "%s/state.db", dir);
	if (encrypted && sfs_key_generate(&key))
		ct_die("keygen");
	crash_writer(path, key, delay_ms);
	if (ct_size(path) <= 0)
		ct_die("no store file after the crash");
	{
		char wal[140], shm[140];
		snprintf(wal, sizeof(wal), "%s-wal", path);
		snprintf(shm, sizeof(shm), "%s-shm", path);
		/* The point is a crash with pages in the WAL: make sure. */
		if (ct_size(wal) <= 0 || ct_size(shm) <= 0)
			ct_die("no -wal or -shm after the crash");
		snprintf(when, sizeof(when), "%s, killed after %ld ms (db %lld, "
		         "wal %lld, shm %lld bytes)", mode, delay_ms,
		         (long long)ct_size(path), (long long)ct_size(wal),
		         (long long)ct_size(shm));
	}
	check_dir(dir, !encrypted, when);

	/* Recovery sees the committed canary, and a clean close (checkpoint
	 * into the main file) still leaks nothing. */
	if (ct_open(path, key, 0, &s))
		ct_die("reopen: %s", sfs_errdetail());
	if (sfs_kv_get(s, C(), C(), C(), &b) || b.len != 32 ||
	    memcmp(b.ptr, canary, 32))
		ct_die("the canary value did not survive: %s", sfs_errdetail());
	sfs_buf_free(&b);
	if (sfs_store_verify(s, NULL, NULL))
		ct_die("verify after the crash: %s", sfs_errdetail());
	sfs_store_close(s);
	snprintf(when, sizeof(when), "%s, after reopen and close", mode);
	check_dir(dir, !encrypted, when);
	sfs_key_destroy(key);
	ct_rmtree(dir);
}

int main(void)
{
	if (sodium_init() < 0)
		ct_die("sodium_init");
	randombytes_buf(canary, sizeof(canary));
	run(0, 300);
	for (long ms = 50; ms <= 650; ms += 300)
		run(1, ms);
	printf("ok\n");
	return 0;
}
