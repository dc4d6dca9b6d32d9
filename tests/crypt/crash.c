/*
 * crash.c - kill -9 during writes to an encrypted store loses nothing that
 * was acknowledged.
 *
 * A child writes in a loop, one commit per call (a value put, a counter
 * add, every 40th a 30 KB value on overflow pages, every 100th a batch of
 * queue items), and after each commit writes its sequence number to a
 * pipe. The parent kills it with SIGKILL after a delay that differs per
 * round, reads every acknowledgement that reached the pipe, reopens the
 * store and checks: sfs_store_verify (every page authenticates, SQLite's
 * integrity check) is ok, and every acknowledged commit is there. Rounds
 * continue on the same store, so kills land during WAL appends,
 * autocheckpoints and recovery of the previous crash.
 *
 * Usage: crypt_crash [ROUNDS]   (default 8). Exit 0 when every round
 * passes; 1 with a FATAL line otherwise.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctest.h"

#define BIG 30000

static void value_of(uint32_t seq, unsigned char *v, size_t *n)
{
	*n = seq % 40 == 0 ? BIG : 200 + seq % 300;
	for (size_t i = 0; i < *n; i++)
		v[i] = (unsigned char)(seq * 2654435761u >> (i % 24));
	memcpy(v, &seq, sizeof(seq));
}

static void keyname(uint32_t seq, char out[16])
{
	snprintf(out, 16, "w%08u", seq);
}

/* Commits seq 'from', from+1, ... and acknowledges each on fd. Odd
 * sequence numbers are puts, even ones counter adds. */
static void writer(const char *path, const sfs_key *key, uint32_t from,
                   int fd)
{
	static unsigned char v[BIG];
	sfs_store *s;
	size_t n;
	char name[16];

	if (ct_open(path, key, SFS_OPEN_CREATE, &s))
		ct_die("writer open: %s", sfs_errdetail());
	for (uint32_t seq = from;; seq++) {
		int rc;
		if (seq % 2) {
			value_of(seq, v, &n);
			keyname(seq, name);
			rc = sfs_kv_put(s, sfs_str("crash"), sfs_str("ns"),
			                sfs_str(name), sfs_bytes(v, n));
		} else if (seq % 100 == 0) {
			sfs_slice items[20];
			for (int i = 0; i < 20; i++)
				items[i] = sfs_bytes(&seq, sizeof(seq));
			rc = sfs_queue_push(s, sfs_str("q"), items, 20, NULL);
		} else {
			rc = sfs_counter_add(s, sfs_str("crash"), sfs_str("ns"),
			                     sfs_str("adds"), 1, NULL);
		}
		if (rc)
			ct_die("writer seq %u: %s", seq, sfs_errdetail());
		if (write(fd, &seq, sizeof(seq)) != sizeof(seq))
			ct_die("writer: pipe");
	}
}

/* Sequence numbers that may or may not have committed: the one each
 * killed writer was working on, never acknowledged. */
static uint32_t maybe[64];
static int nmaybe;

static int is_maybe(uint32_t seq)
{
	for (int i = 0; i < nmaybe; i++)
		if (maybe[i] == seq)
			return 1;
	return 0;
}

/* Expected state after commits 1..acked, except the maybes. */
static void check(const char *path, const sfs_key *key, uint32_t acked)
{
	static unsigned char v[BIG];
	uint64_t adds_min = 0, pushes_min = 0, qlen;
	int64_t adds = 0;
	sfs_store *s;
	int rc;
	size_t n;
	char name[16];

	if (ct_open(path, key, 0, &s))
		ct_die("reopen: %s", sfs_errdetail());
	if (sfs_store_verify(s, NULL, NULL))
		ct_die("verify: %s", sfs_errdetail());
	for (uint32_t seq = 1; seq <= acked; seq++) {
		if (is_maybe(seq))
			continue;
		if (seq % 2 == 0) {
			if (seq % 100 == 0)
				pushes_min += 20;
			else
				adds_min++;
			continue;
		}
		sfs_buf b = { 0 };
		keyname(seq, name);
		if (sfs_kv_get(s, sfs_str("crash"), sfs_str("ns"),
		               sfs_str(name), &b))
			ct_die("acknowledged put %u is missing: %s", seq,
			       sfs_errdetail());
		value_of(seq, v, &n);
		if (b.len != n || memcmp(b.ptr, v, n))
			ct_die("acknowledged put %u has other bytes", seq);
		sfs_buf_free(&b);
	}
	/* absent: no add was acknowledged (adds stays 0) */
	rc = sfs_counter_get(s, sfs_str("crash"), sfs_str("ns"),
	                     sfs_str("adds"), &adds, NULL);
	if ((rc && rc != SFS_NOTFOUND) ||
	    sfs_item_count(s, sfs_str("q"), SFS_ITEM_PENDING, &qlen))
		ct_die("reading counters: %s", sfs_errdetail());
	/* Unacknowledged commits may have made it. */
	if ((uint64_t)adds < adds_min ||
	    (uint64_t)adds > adds_min + (uint64_t)nmaybe + 1)
		ct_die("counter %lld, acknowledged adds %llu", (long long)adds,
		       (unsigned long long)adds_min);
	if (qlen < pushes_min || qlen > pushes_min + 20 * (uint64_t)nmaybe + 20)
		ct_die("queue %llu, acknowledged items %llu",
		       (unsigned long long)qlen,
		       (unsigned long long)pushes_min);
	sfs_store_close(s);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	char wal[140];
	char dir[64], path[128];
	uint32_t acked = 0;
	sfs_key *key;

	ct_mkdir(dir, "crash");
	snprintf(path, sizeof(path), "%s/state.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (rounds < 1 || rounds > 64)
		ct_die("ROUNDS: 1 to 64");
	if (sfs_key_generate(&key))
		ct_die("keygen");
	for (int r = 0; r < rounds; r++) {
		long delay = 60 + (r * 137) % 400;
		int p[2], st;
		uint32_t seq, got = acked;
		pid_t pid;

		if (pipe(p))
			ct_die("pipe");
		pid = fork();
		if (pid < 0)
			ct_die("fork");
		if (pid == 0) {
			close(p[0]);
			writer(path, key, acked + 1, p[1]);
		}
		close(p[1]);
		ct_sleep_ms(delay);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		if (!WIFSIGNALED(st))
			ct_die("round %d: the writer ended by itself (status %d)",
			       r, st);
		while (read(p[0], &seq, sizeof(seq)) == sizeof(seq)) {
			if (seq != got + 1)
				ct_die("acknowledgements out of order");
			got = seq;
		}
		close(p[0]);
		/* The unacknowledged commit, if any, is the writer's next
		 * sequence number; the next round starts after it so that no
		 * number is written twice. */
		maybe[nmaybe++] = got + 1;
		printf("round %d: killed after %ld ms, %u commits acknowledged "
		       "(db %lld, wal %lld bytes); ", r, delay, got - acked,
		       (long long)ct_size(path), (long long)ct_size(wal));
		if (got == 0 && ct_size(path) < 0) {
			/* killed before it made the store (a slow start: the
			 * sanitizer, a busy machine): nothing was promised */
			printf("no store yet, nothing to check\n");
			fflush(stdout);
			acked = got + 1;
			continue;
		}
		check(path, key, got);
		printf("all there, verify ok\n");
		fflush(stdout);
		acked = got + 1;
	}
	sfs_key_destroy(key);
	ct_rmtree(dir);
	printf("ok\n");
	return 0;
}
