/*
 * claims.c - claims across real processes, on the real clock (meson suite
 * multiproc; the unit suite tests the cut-off on the injectable clock).
 *
 * Usage: claims TEST          run one test (the parent)
 *        claims child ...     a worker process (the parent execs these)
 * Tests:
 *   crash      a consumer claims items and is killed with SIGKILL: until
 *              its lease ends nobody else gets them (checked only by claims
 *              that finished before the lease end, so a slow machine cannot
 *              make the test lie), after it they come back at their ids as
 *              second deliveries and another consumer acks them.
 *   heartbeat  a consumer heartbeating every fifth of a lease keeps its
 *              claim for four leases while another process keeps trying to
 *              claim; it acks, and the item is gone. The lease is 1 s, or
 *              twenty times the slowest of five writes measured on this
 *              machine now. A heartbeat that returned before the lease
 *              it extended ended must succeed, and a claim by the other
 *              process that returned before the lease end in force when it
 *              began must find nothing; a machine that stalls a heartbeat
 *              past the lease makes the round prove nothing, and another
 *              runs (at most 5).
 *   chaos      4 consumers drain 10,000 items while the parent kills one
 *              with SIGKILL at random moments (and starts another). Every
 *              consumer writes, unbuffered, "P claim item" before it
 *              processes an item and "A claim" after an ack returned OK.
 *              Checked: the store ends empty (nothing pending, in flight or
 *              dead: items only leave by ack); every item was processed; no
 *              item was acked twice; an item with no ack record was last
 *              processed in the final claim of a killed consumer (the kill
 *              came between the ack's commit and its record); every
 *              delivery but the last of an item was in a claim of a killed
 *              consumer or of one a stall lost (duplicates only where a
 *              crash or a stall past the lease happened); no ack found its
 *              claim lost before the lease end. The lease is 3 s, or thirty
 *              times the slowest of five writes on this machine now.
 * STATEFS_TEST_MODE=encrypted shares one key through a key file. The
 * scratch store and the spawning of children are harness.c's.
 * Exit: 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define Q S("jobs")
#define NS_PER_MS 1000000LL

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits until path exists (a child's "ready" signal). */
static int wait_file(const char *path, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		sleep_ms(10);
	}
	return -1;
}

/* A lease for this machine now: min_ms, or factor times the slowest of
 * five small writes when that is more (a loaded machine). */
static int64_t measured_lease_ms(sfs_store *s, int64_t min_ms, int factor)
{
	int64_t worst = 0, t, ms;
	int rc;

	for (int i = 0; i < 5; i++) {
		t = now_ns();
		if ((rc = sfs_counter_add(s, S("t"), S("n"), S("probe"), 1, NULL)))
			mp_die("probe", rc);
		t = now_ns() - t;
		worst = t > worst ? t : worst;
	}
	ms = factor * worst / NS_PER_MS;
	ms = ms < min_ms ? min_ms : ms;
	fprintf(stderr, "lease %lld ms\n", (long long)ms);
	return ms;
}

static void push_n(sfs_store *s, int n)
{
	char buf[32];
	int rc;

	for (int i = 0; i < n; i++) {
		sfs_slice it;

		snprintf(buf, sizeof(buf), "%d", i);
		it = S(buf);
		if ((rc = sfs_queue_push(s, Q, &it, 1, NULL)))
			mp_die("push", rc);
	}
}

/* --- crash ---------------------------------------------------------------- */

/* Claims every item with a lease of lease_ms, writes "CLAIM LEASE_END" to
 * ready (whole: written aside and renamed), then waits to be killed. */
static void child_hold(const char *ready, int lease_ms)
{
	sfs_store *s = mp_open_store(0);
	char tmp[420];
	int64_t cid;
	sfs_list l;
	FILE *f;
	int rc;

	if ((rc = sfs_claim(s, Q, 100, lease_ms, &cid, &l)))
		mp_die("claim", rc);
	snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
	f = fopen(tmp, "w");
	if (!f)
		mp_die("ready", SFS_IO);
	fprintf(f, "%lld %lld\n", (long long)cid, (long long)l.items[0].st.lease_until_ns);
	if (fclose(f) != 0 || rename(tmp, ready) != 0)
		mp_die("ready", SFS_IO);
	sfs_list_free(&l);
	for (;;)
		pause();
}

static int test_crash(void)
{
	char ready[400];
	const char *argv[] = { "claims", "child", "hold", ready, "2000", NULL };
	long long cid = 0, until = 0;
	int bad = 0, checked_before = 0, rc;
	int64_t t0, t1, got;
	sfs_store *s;
	sfs_list l;
	pid_t pid;
	FILE *f;

	s = mp_open_store(0);
	push_n(s, 5);
	snprintf(ready, sizeof(ready), "%s/ready", mp_dir);
	pid = mp_spawn(argv);
	if (wait_file(ready, 120000) < 0) {
		fprintf(stderr, "the holder did not claim in 120 s\n");
		mp_kill(pid);
		return 1;
	}
	f = fopen(ready, "r");
	if (!f || fscanf(f, "%lld %lld", &cid, &until) != 2) {
		fprintf(stderr, "cannot read %s\n", ready);
		return 1;
	}
	fclose(f);
	mp_kill(pid);
	/* Before the lease ends: nothing to claim, five in flight. A claim
	 * that returned before the lease end proves it; one that ended after
	 * it may rightly get the items, and then is the redelivery. */
	for (;;) {
		t0 = now_ns();
		rc = sfs_claim(s, Q, 100, 0, &got, &l);
		t1 = now_ns();
		if (rc == SFS_OK) {
			if (t1 < until) {
				fprintf(stderr, "redelivered %lld ns before the"
				        " lease end\n", (long long)(until - t1));
				return 1;
			}
			break;
		}
		if (rc != SFS_NOTFOUND)
			mp_die("claim", rc);
		if (t0 > until) {
			/* a claim recovers expired claims first */
			fprintf(stderr, "a claim that began %lld ns after the lease"
			        " end found nothing\n", (long long)(t0 - until));
			return 1;
		}
		if (t1 < until) {
			if (sfs_item_scan(s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l))
				mp_die("inflight", 1);
			bad |= l.n != 5;
			sfs_list_free(&l);
			checked_before++;
		}
		sleep_ms(50);
	}
	if (!checked_before)
		fprintf(stderr, "note: the machine was too slow to check before"
		        " the lease end\n");
	/* After it: the same five, second deliveries, at their ids. */
	if (l.n != 5 || got == cid) {
		fprintf(stderr, "redelivered %zu items under claim %lld\n", l.n,
		        (long long)got);
		bad = 1;
	}
	for (size_t i = 0; i < l.n; i++) {
		char want[24];

		snprintf(want, sizeof(want), "%zu", i);
		if (l.items[i].st.deliveries != 2 ||
		    strcmp(l.items[i].value.ptr, want) ||
		    (i && l.items[i].id != l.items[0].id + (int64_t)i)) {
			fprintf(stderr, "item %zu: '%s' delivery %lld\n", i,
			        (char *)l.items[i].value.ptr,
			        (long long)l.items[i].st.deliveries);
			bad = 1;
		}
	}
	sfs_list_free(&l);
	if ((rc = sfs_claim_end(s, cid, SFS_OUTCOME_DONE)) != SFS_CLAIMLOST) {
		fprintf(stderr, "the dead holder's ack: %s\n", sfs_strerror(rc));
		bad = 1;
	}
	if ((rc = sfs_claim_end(s, got, SFS_OUTCOME_DONE)))
		mp_die("ack", rc);
	if (sfs_item_scan(s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l))
		mp_die("inflight", 1);
	bad |= l.n != 0;
	sfs_list_free(&l);
	sfs_store_close(s);
	return bad;
}

/* --- heartbeat ------------------------------------------------------------ */

/* What a heartbeating consumer's call that found its claim lost means:
 * a defect if the call returned before the lease end in force (until),
 * else a stall of the machine (exit 3: the round proves nothing). */
static void beat_lost(const char *what, int64_t until)
{
	int64_t t = now_ns();

	if (t < until) {
		fprintf(stderr, "%s found the claim lost %lld ns before its lease"
		        " end\n", what, (long long)(until - t));
		exit(1);
	}
	fprintf(stderr, "note: %s came %lld ns after the lease end (a stall)\n",
	        what, (long long)(t - until));
	exit(3);
}

/* Claims the item with a lease of lease_ms, heartbeats every fifth of it
 * for four leases, acks. Exits 0 when every heartbeat and the ack
 * succeeded, 3 after a stall, 1 on a defect. */
static void child_beat(const char *ready, int64_t lease_ms)
{
	sfs_store *s = mp_open_store(0);
	int64_t cid, start, until, t;
	sfs_list l;
	FILE *f;
	int rc;

	if ((rc = sfs_claim(s, Q, 1, lease_ms, &cid, &l)))
		mp_die("claim", rc);
	until = l.items[0].st.lease_until_ns;
	sfs_list_free(&l);
	if (!(f = fopen(ready, "w")))
		mp_die("ready", SFS_IO);
	fclose(f);
	start = now_ns();
	while (now_ns() - start < 4 * lease_ms * NS_PER_MS) {
		sleep_ms((long)(lease_ms / 5));
		t = now_ns();
		rc = sfs_claim_heartbeat(s, cid, lease_ms, NULL);
		if (rc == SFS_CLAIMLOST)
			beat_lost("a heartbeat", until);
		if (rc)
			mp_die("heartbeat", rc);
		until = t + lease_ms * NS_PER_MS; /* at least: it began after t */
	}
	rc = sfs_claim_end(s, cid, SFS_OUTCOME_DONE);
	if (rc == SFS_CLAIMLOST)
		beat_lost("the ack", until);
	if (rc)
		mp_die("ack", rc);
	sfs_store_close(s);
}

/* One round: 0 the claim was kept and acked, 3 a stall made the round
 * prove nothing (the item is pending again), 1 a defect. */
static int heartbeat_round(sfs_store *s, int round, int64_t lease_ms)
{
	char ready[400], lease[24];
	const char *argv[] = { "claims", "child", "beat", ready, lease, NULL };
	int tries = 0, stalled = 0, rc, st;
	int64_t cid, until, t1;
	sfs_list l;
	uint64_t n;
	pid_t pid;

	push_n(s, 1);
	snprintf(ready, sizeof(ready), "%s/ready%d", mp_dir, round);
	snprintf(lease, sizeof(lease), "%lld", (long long)lease_ms);
	pid = mp_spawn(argv);
	if (wait_file(ready, 120000) < 0) {
		fprintf(stderr, "the consumer did not claim in 120 s\n");
		return 1;
	}
	/* keep trying while the holder heartbeats */
	while (waitpid(pid, &st, WNOHANG) == 0) {
		/* the lease end in force before the attempt */
		if ((rc = sfs_item_scan(s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l)))
			mp_die("inflight", rc);
		until = l.n ? l.items[0].st.lease_until_ns : 0;
		sfs_list_free(&l);
		rc = sfs_claim(s, Q, 1, 0, &cid, NULL);
		t1 = now_ns();
		if (rc == SFS_OK && t1 < until) {
			fprintf(stderr, "a heartbeating claim was taken %lld ns"
			        " before its lease end\n", (long long)(until - t1));
			mp_kill(pid);
			return 1;
		}
		if (rc == SFS_OK) { /* the holder stalled: the item is ours */
			stalled = 1;
			if ((rc = sfs_claim_end(s, cid, SFS_OUTCOME_NACK)))
				mp_die("nack", rc);
		} else if (rc != SFS_NOTFOUND) {
			mp_die("claim", rc);
		}
		tries++;
		sleep_ms(50);
	}
	if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 3)) {
		fprintf(stderr, "the heartbeating consumer failed\n");
		return 1;
	}
	if (stalled || WEXITSTATUS(st) == 3) {
		/* the item went back: take it away for the next round */
		for (int i = 0; (rc = sfs_claim(s, Q, 1, 0, &cid, NULL)) ==
		                SFS_NOTFOUND && i < 2400; i++)
			sleep_ms(50);
		if (rc || (rc = sfs_claim_end(s, cid, SFS_OUTCOME_DONE)))
			mp_die("clearing the round", rc);
		return 3;
	}
	if (sfs_item_count(s, Q, SFS_ITEM_PENDING, &n) || n != 0)
		return 1;
	if (sfs_claim(s, Q, 1, 0, &cid, NULL) != SFS_NOTFOUND)
		return 1; /* acked: gone for good */
	if (tries < 20)
		fprintf(stderr, "note: only %d claim attempts\n", tries);
	return 0;
}

static int test_heartbeat(void)
{
	sfs_store *s = mp_open_store(0);
	int64_t lease_ms = measured_lease_ms(s, 1000, 20);
	int rc = 3;

	for (int round = 1; round <= 5 && rc == 3; round++)
		rc = heartbeat_round(s, round, lease_ms);
	if (rc == 3)
		fprintf(stderr, "5 rounds in a row stalled past the lease\n");
	sfs_store_close(s);
	return rc != 0;
}

/* --- chaos ---------------------------------------------------------------- */

#define CHAOS_ITEMS 10000

/* Claims 1-20 items at a time (a lease of lease_ms), records "P claim
 * item" for each before processing it, acks, records "A claim", or when
 * the ack found the claim lost, "X claim" if that was after the lease end
 * (a stall) and "E claim" if before (a defect). Stops when the counter
 * "stop" is set. */
static void child_consume(const char *log, int64_t lease_ms)
{
	sfs_store *s = mp_open_store(0);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int64_t cid, stop = 0, until;
	unsigned seed = (unsigned)getpid();
	sfs_list l;
	int rc;

	if (fd < 0)
		mp_die("log", SFS_IO);
	while (!stop) {
		rc = sfs_claim(s, Q, 1 + rand_r(&seed) % 20, lease_ms, &cid, &l);
		if (rc == SFS_NOTFOUND) {
			rc = sfs_counter_get(s, S("t"), S("n"), S("stop"), &stop,
			                     NULL);
			if (rc && rc != SFS_NOTFOUND) /* absent: not yet */
				mp_die("get", rc);
			sleep_ms(20);
			continue;
		}
		if (rc)
			mp_die("claim", rc);
		for (size_t i = 0; i < l.n; i++) {
			dprintf(fd, "P %lld %s\n", (long long)cid,
			        (char *)l.items[i].value.ptr);
			usleep(200 + rand_r(&seed) % 600); /* "processing" */
		}
		until = l.items[0].st.lease_until_ns;
		sfs_list_free(&l);
		rc = sfs_claim_end(s, cid, SFS_OUTCOME_DONE);
		if (rc == SFS_CLAIMLOST)
			dprintf(fd, "%c %lld\n", now_ns() < until ? 'E' : 'X',
			        (long long)cid);
		else if (rc)
			mp_die("ack", rc);
		else
			dprintf(fd, "A %lld\n", (long long)cid);
	}
	close(fd);
	sfs_store_close(s);
}

/* What the consumers' logs say. Claim ids grow with time store-wide, so
 * an item's deliveries in claim-id order are in time order, whichever logs
 * they are in. */
typedef struct chaos_log {
	char *acked;        /* [claim]: an A record */
	char *crashed;      /* [claim]: a killed consumer's last claim, no A,
	                       or a claim a stall lost (X) */
	long long nclaims;
	long long *dcid;    /* deliveries: claim ... */
	int *ditem;         /* ... and item */
	size_t nd, capd;
	int lost;           /* an E record: a claim lost before its lease end */
} chaos_log;

static int read_log(chaos_log *c, const char *path, int killed, int pass)
{
	char line[128];
	long long cid, item, last = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0; /* killed before it wrote anything */
	while (fgets(line, sizeof(line), f)) {
		if (pass == 0) {
			if (sscanf(line, "P %lld %lld", &cid, &item) == 2 &&
			    cid >= c->nclaims)
				c->nclaims = cid + 1;
			continue;
		}
		if (line[0] == 'E')
			c->lost = 1;
		if (sscanf(line, "X %lld", &cid) == 1 && cid >= 0 &&
		    cid < c->nclaims)
			c->crashed[cid] = 1;
		if (sscanf(line, "A %lld", &cid) == 1 && cid >= 0 &&
		    cid < c->nclaims)
			c->acked[cid] = 1;
		if (sscanf(line, "P %lld %lld", &cid, &item) != 2)
			continue;
		if (item < 0 || item >= CHAOS_ITEMS || cid < 0) {
			fprintf(stderr, "%s: bad line %s", path, line);
			fclose(f);
			return 1;
		}
		last = cid;
		if (c->nd == c->capd) {
			c->capd = c->capd * 2 + 1024;
			c->dcid = realloc(c->dcid, c->capd * sizeof(*c->dcid));
			c->ditem = realloc(c->ditem, c->capd * sizeof(*c->ditem));
			if (!c->dcid || !c->ditem)
				return 1;
		}
		c->dcid[c->nd] = cid;
		c->ditem[c->nd++] = (int)item;
	}
	fclose(f);
	if (pass == 1 && killed && last >= 0 && !c->acked[last])
		c->crashed[last] = 1;
	return 0;
}

/* Every item processed; acked at most once; an item without an ack was
 * last in a crashed claim; every delivery but an item's last was in a
 * crashed claim. */
static int check_chaos(chaos_log *c)
{
	int *n = calloc(CHAOS_ITEMS, sizeof(*n)), bad = 0, dup = 0;
	int *acks = calloc(CHAOS_ITEMS, sizeof(*acks));
	long long *last = calloc(CHAOS_ITEMS, sizeof(*last));

	if (!n || !acks || !last)
		return 1;
	for (size_t i = 0; i < c->nd; i++) {
		int it = c->ditem[i];

		n[it]++;
		acks[it] += c->acked[c->dcid[i]];
		if (c->dcid[i] > last[it])
			last[it] = c->dcid[i];
	}
	for (size_t i = 0; i < c->nd && !bad; i++) {
		int it = c->ditem[i];

		if (c->dcid[i] != last[it] && !c->crashed[c->dcid[i]]) {
			fprintf(stderr, "item %d: delivered in claim %lld and"
			        " again later, with no crash in between\n", it,
			        c->dcid[i]);
			bad = 1;
		}
	}
	for (int i = 0; i < CHAOS_ITEMS && !bad; i++) {
		dup += n[i] > 1;
		if (n[i] == 0) {
			fprintf(stderr, "item %d was never processed\n", i);
			bad = 1;
		} else if (acks[i] > 1) {
			fprintf(stderr, "item %d was acked %d times\n", i,
			        acks[i]);
			bad = 1;
		} else if (acks[i] == 0 && !c->crashed[last[i]]) {
			fprintf(stderr, "item %d has no ack, and its last claim"
			        " was not a killed consumer's\n", i);
			bad = 1;
		}
	}
	if (c->lost) {
		fprintf(stderr, "an ack found its claim lost before its lease"
		        " end\n");
		bad = 1;
	}
	fprintf(stderr, "chaos: %zu deliveries recorded, %d items delivered"
	        " more than once\n", c->nd, dup);
	free(n);
	free(acks);
	free(last);
	return bad;
}

static int test_chaos(void)
{
	enum { CONSUMERS = 4, KILLS = 40, MAXPROC = CONSUMERS + KILLS };
	char logs[MAXPROC][400];
	pid_t pids[MAXPROC];
	int killed[MAXPROC] = { 0 }, live[CONSUMERS];
	sfs_store *s = mp_open_store(0);
	unsigned seed = (unsigned)time(NULL);
	int nproc = 0, bad = 0, kills = 0, rc;
	int64_t lease_ms = measured_lease_ms(s, 3000, 30);
	char lease[24];
	chaos_log c;
	sfs_list l;
	uint64_t n;

	memset(&c, 0, sizeof(c));
	snprintf(lease, sizeof(lease), "%lld", (long long)lease_ms);
	fprintf(stderr, "chaos seed %u\n", seed);
	{
		sfs_slice items[500];
		char buf[500][8];

		for (int b = 0; b < CHAOS_ITEMS / 500; b++) {
			for (int i = 0; i < 500; i++) {
				snprintf(buf[i], sizeof(buf[i]), "%d", b * 500 + i);
				items[i] = S(buf[i]);
			}
			if ((rc = sfs_queue_push(s, Q, items, 500, NULL)))
				mp_die("push", rc);
		}
	}
	for (int i = 0; i < CONSUMERS; i++) {
		const char *argv[] = { "claims", "child", "consume", logs[nproc],
		                       lease, NULL };

		snprintf(logs[nproc], sizeof(logs[nproc]), "%s/log%d", mp_dir, nproc);
		pids[nproc] = mp_spawn(argv);
		live[i] = nproc++;
	}
	/* while items are pending, kill one consumer at a random moment
	 * and start another (at most KILLS times) */
	for (kills = 0; kills < KILLS; kills++) {
		int victim = rand_r(&seed) % CONSUMERS;
		const char *argv[] = { "claims", "child", "consume", logs[nproc],
		                       lease, NULL };
		sfs_info info;

		sleep_ms(50 + rand_r(&seed) % 250);
		if (sfs_store_info(s, &info))
			mp_die("info", 1);
		if (info.queue_rows == 0)
			break;
		mp_kill(pids[live[victim]]);
		killed[live[victim]] = 1;
		snprintf(logs[nproc], sizeof(logs[nproc]), "%s/log%d", mp_dir, nproc);
		pids[nproc] = mp_spawn(argv);
		live[victim] = nproc++;
	}
	/* drained: nothing pending or in flight (a dead consumer's claims
	 * come back after their lease). However slow the machine, the count
	 * keeps falling; a minute and two leases without a change is a
	 * hang. */
	for (int64_t left = -1, since = now_ns();;) {
		sfs_info info;

		/* one snapshot: pending and in flight counted together */
		if (sfs_queue_gc(s, SFS_NONE, NULL) || sfs_store_info(s, &info))
			mp_die("poll", 1);
		if (info.queue_rows == 0 && info.claimed_rows == 0)
			break;
		if ((int64_t)(info.queue_rows + info.claimed_rows) != left) {
			left = (int64_t)(info.queue_rows + info.claimed_rows);
			since = now_ns();
		} else if (now_ns() - since > (60000 + 2 * lease_ms) * NS_PER_MS) {
			fprintf(stderr, "chaos: %lld items left and no progress"
			        " in %lld ms\n", (long long)left,
			        (long long)(60000 + 2 * lease_ms));
			bad = 1;
			break;
		}
		sleep_ms(20);
	}
	if ((rc = sfs_counter_set(s, S("t"), S("n"), S("stop"), 1)))
		mp_die("stop", rc);
	fprintf(stderr, "chaos: %d consumers killed while items were pending\n",
	        kills);
	if (kills < 3) {
		fprintf(stderr, "too few kills to mean anything\n");
		bad = 1;
	}
	for (int i = 0; i < CONSUMERS; i++)
		if (!mp_exited_ok(pids[live[i]])) {
			fprintf(stderr, "consumer %d failed\n", live[i]);
			bad = 1;
		}
	if (sfs_item_count(s, Q, SFS_ITEM_PENDING, &n) || n) {
		fprintf(stderr, "%llu items still pending\n",
		        (unsigned long long)n);
		bad = 1;
	}
	if (sfs_item_scan(s, Q, SFS_ITEM_INFLIGHT, -1, 0, 1, &l) || l.n) {
		fprintf(stderr, "%zu items still in flight\n", l.n);
		bad = 1;
	}
	sfs_list_free(&l);
	if (sfs_item_scan(s, Q, SFS_ITEM_DEAD, -1, 0, 1, &l) || l.n)
		bad = 1;
	sfs_list_free(&l);
	sfs_store_close(s);

	for (int pass = 0; pass < 2 && !bad; pass++) {
		if (pass == 1) {
			c.acked = calloc((size_t)c.nclaims + 1, 1);
			c.crashed = calloc((size_t)c.nclaims + 1, 1);
			if (!c.acked || !c.crashed)
				return 1;
		}
		for (int p = 0; p < nproc; p++)
			bad |= read_log(&c, logs[p], killed[p], pass);
	}
	if (!bad)
		bad = check_chaos(&c);
	free(c.acked);
	free(c.crashed);
	free(c.dcid);
	free(c.ditem);
	return bad;
}

static int child(int argc, char **argv)
{
	if (!strcmp(argv[2], "hold") && argc == 5)
		child_hold(argv[3], atoi(argv[4]));
	else if (!strcmp(argv[2], "beat") && argc == 5)
		child_beat(argv[3], atoll(argv[4]));
	else if (!strcmp(argv[2], "consume") && argc == 5)
		child_consume(argv[3], atoll(argv[4]));
	else
		return 2;
	return 0;
}

int main(int argc, char **argv)
{
	static const mp_test tests[] = {
		{ "crash", test_crash },
		{ "heartbeat", test_heartbeat },
		{ "chaos", test_chaos },
		{ NULL, NULL },
	};

	return mp_main(argc, argv, "claims", tests, child);
}
