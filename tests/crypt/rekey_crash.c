/*
 * rekey_crash.c - an interrupted rekey leaves a store that opens with the
 * old key or the new one, never neither; afterwards the old key is refused.
 *
 * A store of a few megabytes under key A is rekeyed to key B by a child
 * process that is killed with SIGKILL at points spread over the time a
 * whole rekey takes (measured first). After each kill exactly one of the
 * keys must open the store, the store must verify, and its content must be
 * what was written. Then sfs_rekey is run again, which must finish the job
 * (or find it finished), after which A gets SFS_WRONGKEY and B reads the
 * same content.
 *
 * Usage: crypt_rekey_crash [KILLS]   (default 14). Exit 0 when all pass.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctest.h"

#define NVALS 12000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* FNV-1a over every key and value, in scan order. */
static uint64_t digest(sfs_store *s)
{
	uint64_t h = 1469598103934665603ull;
	sfs_list l = { 0 };

	if (sfs_kv_scan(s, sfs_str("rk"), sfs_str("ns"), NULL, &l))
		ct_die("scan: %s", sfs_errdetail());
	if (l.n != NVALS)
		ct_die("scan: %zu values, want %d", l.n, NVALS);
	for (size_t i = 0; i < l.n; i++) {
		const unsigned char *k = l.items[i].key.ptr;
		const unsigned char *v = l.items[i].value.ptr;
		for (size_t j = 0; j < l.items[i].key.len; j++)
			h = (h ^ k[j]) * 1099511628211ull;
		for (size_t j = 0; j < l.items[i].value.len; j++)
			h = (h ^ v[j]) * 1099511628211ull;
	}
	sfs_list_free(&l);
	return h;
}

/* Opens with key, verifies, returns the digest; -1 (as status) when the
 * key does not open the store. */
static int read_with(const char *path, const sfs_key *key, uint64_t *d)
{
	sfs_store *s;
	int rc = ct_open(path, key, 0, &s);

	if (rc == SFS_WRONGKEY)
		return rc;
	if (rc)
		ct_die("open: %s: %s", sfs_strerror(rc), sfs_errdetail());
	if (sfs_store_verify(s, NULL, NULL))
		ct_die("verify: %s", sfs_errdetail());
	*d = digest(s);
	sfs_store_close(s);
	return SFS_OK;
}

static void make(const char *path, const sfs_key *key)
{
	unsigned char v[1500];
	sfs_store *s;
	char name[16];

	if (ct_open(path, key, SFS_OPEN_CREATE, &s))
		ct_die("create: %s", sfs_errdetail());
	for (int i = 0; i < NVALS; i++) {
		for (size_t j = 0; j < sizeof(v); j++)
			v[j] = (unsigned char)(i ^ (int)j * 13);
		snprintf(name, sizeof(name), "k%05d", i);
		if (sfs_kv_put(s, sfs_str("rk"), sfs_str("ns"), sfs_str(name),
		               sfs_bytes(v, 500 + (size_t)i % 1000)))
			ct_die("put: %s", sfs_errdetail());
	}
	sfs_store_close(s);
}

int main(int argc, char **argv)
{
	int kills = argc > 1 ? atoi(argv[1]) : 14, n_old = 0, n_new = 0;
	char dir[64], orig[128], work[128];
	sfs_key *a, *b;
	uint64_t want, got;
	double t0, full;

	ct_mkdir(dir, "rekeycrash");
	snprintf(orig, sizeof(orig), "%s/orig.db", dir);
	snprintf(work, sizeof(work), "%s/state.db", dir);
	if (sfs_key_generate(&a) || sfs_key_generate(&b))
		ct_die("keygen");
	make(orig, a);
	if (read_with(orig, a, &want))
		ct_die("the original does not open");

	ct_copy(orig, work);
	t0 = now();
	if (sfs_rekey(work, a, b, NULL, NULL))
		ct_die("rekey: %s", sfs_errdetail());
	full = now() - t0;
	printf("store %lld bytes, a whole rekey takes %.0f ms\n",
	       (long long)ct_size(orig), full * 1000);

	for (int i = 0; i < kills; i++) {
		/* Kill points: half spread over the first 90% of a whole
		 * rekey, half packed into 90-125%, around the switch (the
		 * child also pays for fork and for opening the store). */
		int h = kills / 2 > 0 ? kills / 2 : 1;
		double at = full * (i < h ? 0.02 + 0.88 * i / h :
		                    0.90 + 0.35 * (i - h) / (kills - h));
		int st, ra, rb;
		pid_t pid;

		unlink(work);
		ct_copy(orig, work);
		pid = fork();
		if (pid < 0)
			ct_die("fork");
		if (pid == 0)
			_exit(sfs_rekey(work, a, b, NULL, NULL) ? 1 : 0);
		ct_sleep_ms((long)(at * 1000));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);

		ra = read_with(work, a, &got);
		if (ra == SFS_OK && got != want)
			ct_die("kill %d: old key opens other content", i);
		rb = read_with(work, b, &got);
		if (rb == SFS_OK && got != want)
			ct_die("kill %d: new key opens other content", i);
		if ((ra == SFS_OK) == (rb == SFS_OK))
			ct_die("kill %d at %.0f ms: old key %s, new key %s", i,
			       at * 1000, sfs_strerror(ra), sfs_strerror(rb));
		ra == SFS_OK ? n_old++ : n_new++;
		printf("kill %d at %.0f ms (%s): opens with the %s key; ", i,
		       at * 1000, WIFSIGNALED(st) ? "killed" : "had finished",
		       ra == SFS_OK ? "old" : "new");

		/* Finish the job. */
		if (sfs_rekey(work, a, b, NULL, NULL))
			ct_die("rekey after the kill: %s", sfs_errdetail());
		if (read_with(work, a, &got) != SFS_WRONGKEY)
			ct_die("the old key still opens the store");
		if (read_with(work, b, &got) || got != want)
			ct_die("the new key does not read the content");
		printf("rekey finished, old key refused\n");
		fflush(stdout);
	}
	printf("%d kills: %d left the old key, %d the new one, 0 neither\n",
	       kills, n_old, n_new);
	sfs_key_destroy(a);
	sfs_key_destroy(b);
	ct_rmtree(dir);
	return 0;
}
