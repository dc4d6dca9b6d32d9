/*
 * test_pg_conn.c - the PostgreSQL backend when its server cannot be
 * reached or misbehaves: a server down (a socket that closes each
 * connection), one that accepts and never answers, a proxy that makes the
 * listening connection mute or ends a backend just as its answer leaves,
 * a fork while the listening thread runs, and a server whose
 * idle_session_timeout would end the listening connection. Runs in modes
 * postgres and postgres-plain (fixture.h).
 */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "fixture.h"
#include "pg/pg_i.h"
#include "pgfx.h"

/* --- a server down or mute ------------------------------------------------------ */

/* A stand-in for a server that is down: a Unix socket that accepts each
 * connection and closes it at once, counting them. */
typedef struct doorman {
	int fd;
	atomic_int stop;
	atomic_int n;
	pthread_t th;
} doorman;

static void *doorman_main(void *arg)
{
	doorman *d = arg;

	while (!atomic_load(&d->stop)) {
		struct pollfd p = { d->fd, POLLIN, 0 };
		int c;

		if (poll(&p, 1, 50) <= 0)
			continue;
		c = accept(d->fd, NULL, NULL);
		if (c >= 0) {
			atomic_fetch_add(&d->n, 1);
			close(c);
		}
	}
	return NULL;
}

/* The server's socket file ("<dir>/.s.PGSQL.<port>", from
 * $STATEFS_TEST_PG) into real, and its port; skips the calling test for a
 * server over TCP (no socket file to stand in for). */
static void server_socket(char *real, size_t n, char *port, size_t np)
{
	const char *srv = getenv("STATEFS_TEST_PG");
	char host[200] = "", *tok, *list = strdup(srv ? srv : "");

	snprintf(port, np, "5432");
	for (tok = strtok(list, " "); tok; tok = strtok(NULL, " ")) {
		if (!strncmp(tok, "host=", 5))
			snprintf(host, sizeof(host), "%s", tok + 5);
		else if (!strncmp(tok, "port=", 5))
			snprintf(port, np, "%s", tok + 5);
	}
	free(list);
	if (host[0] != '/')
		skip();
	snprintf(real, n, "%s/.s.PGSQL.%s", host, port);
}

/* A Unix socket bound and listening at path. */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	return fd;
}

/* Opens the test's store through the socket directory dir (standing in
 * for the server's; NULL: the server's), with more connection options:
 * sfs_store_open's status. */
static int try_open_via(tfx *t, const char *dir, const char *more,
                        int busy_timeout_ms, sfs_store **s)
{
	char *db = tfx_db(t->path), *named;
	sfs_config o;
	int st;

	if (asprintf(&named, "%s %s%s%s", db, more, dir ? " host=" : "",
	             dir ? dir : "") < 0)
		fail();
	memset(&o, 0, sizeof(o));
	o.db = named;
	o.key = tfx_key();
	if (!o.key)
		o.flags = SFS_OPEN_PLAINTEXT;
	o.busy_timeout_ms = busy_timeout_ms;
	st = sfs_store_open(&o, s, NULL);
	free(named);
	free(db);
	return st;
}

/* The same, which must open. */
static sfs_store *open_via(tfx *t, const char *dir, const char *more,
                           int busy_timeout_ms)
{
	sfs_store *s = NULL;

	OK(try_open_via(t, dir, more, busy_timeout_ms, &s));
	return s;
}

/* The server cannot be reached for longer than the busy timeout: the
 * first call waits it out, retrying; the next ones try to connect once
 * and fail (a read through the mount makes two lookups, and each used to
 * wait the whole timeout); once the server is back, the next call
 * connects and runs. The handle reaches the server through a symlink to
 * its socket, replaced meanwhile by a socket that only closes. */
static void test_unreachable_once(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-downXXXXXX";
	char real[256], sock[256], app[40], more[64];
	PGconn *c;
	doorman d = { .fd = -1 };
	sfs_store *s;
	sfs_buf v;
	int n1;

	server_socket(real, sizeof(real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	assert_int_equal(symlink(real, sock), 0);
	snprintf(app, sizeof(app), "sfs_down_%ld", (long)getpid());
	snprintf(more, sizeof(more), "application_name=%s", app);
	s = open_via(t, dir, more, 2000);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));

	/* the server goes away */
	assert_int_equal(unlink(sock), 0);
	d.fd = listen_at(sock);
	assert_int_equal(pthread_create(&d.th, NULL, doorman_main, &d), 0);
	c = tfx_pg_conn(NULL);
	kill_app(c, app, 0);
	until_gone(c, app);
	IS(SFS_IO, sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	assert_non_null(strstr(sfs_errdetail(), "cannot connect"));
	n1 = atomic_load(&d.n);
	assert_true(n1 >= 1);
	IS(SFS_IO, sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	assert_int_equal(atomic_load(&d.n) - n1, 1);
	IS(SFS_IO, sfs_kv_put(s, S("s"), S("n"), S("k"), S("w")));
	assert_int_equal(atomic_load(&d.n) - n1, 2);

	/* it is back */
	atomic_store(&d.stop, 1);
	pthread_join(d.th, NULL);
	close(d.fd);
	assert_int_equal(unlink(sock), 0);
	assert_int_equal(symlink(real, sock), 0);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	sfs_store_close(s);
	unlink(sock);
	rmdir(dir);
	PQfinish(c);
}

/* A server that accepts and never answers (a hung postmaster, or, as
 * for a host that drops packets, nothing coming back): a connection gives
 * up after the busy timeout instead of waiting for ever (libpq has no
 * connect_timeout of its own). The stand-in is a socket that nobody
 * accepts on: the kernel queues the connection and libpq waits for the
 * startup packet's answer. The alarm turns a hang into a failure. */
static void test_mute_server(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-muteXXXXXX";
	char real[256], sock[256];
	sfs_store *s = NULL;
	int fd;

	server_socket(real, sizeof(real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	fd = listen_at(sock);
	alarm(60);
	IS(SFS_IO, try_open_via(t, dir, "", 2000, &s));
	alarm(0);
	assert_null(s);
	assert_non_null(strstr(sfs_errdetail(), "cannot connect"));
	assert_non_null(strstr(sfs_errdetail(), "timeout"));
	close(fd);
	unlink(sock);
	rmdir(dir);
}

/* A proxy between a store and the server, on a socket of its own: each
 * client gets a connection to the real socket, and bytes go both ways.
 * Armed, the next answer that ends with ReadyForQuery (after skip of
 * them) reaches the client
 * with a backend's FATAL after it, in one write; then the server's side
 * is closed and the client's stays open until the client sends again:
 * what a client sees when pg_terminate_backend lands as an answer leaves
 * and the backend takes a moment to close its socket. */
#define PX_MAX 16
typedef struct proxy {
	int fd;
	char real[256];
	atomic_int armed, stop, poisoned;
	atomic_int skip;    /* armed: answers to pass first */
	atomic_int answers; /* answers that ended with ReadyForQuery */
	atomic_int accepted;  /* clients so far, numbered from 1 */
	atomic_int mute_from; /* >0: from the client of that number on,
	                         nothing after the startup's answer
	                         reaches a client (a server gone mute) */
	atomic_int cut;       /* 1: every connection is closed, then 0 */
	pthread_t th;
} proxy;

static size_t px_fatal(char *o)
{
	static const char f[] = "SFATAL\0VFATAL\0C57P01\0Mterminating connection"
	                        " due to administrator command\0";
	uint32_t len = 4 + sizeof(f); /* the fields, each ended, then a 0 */

	o[0] = 'E';
	o[1] = (char)(len >> 24);
	o[2] = (char)(len >> 16);
	o[3] = (char)(len >> 8);
	o[4] = (char)len;
	memcpy(o + 5, f, sizeof(f)); /* sizeof: the final 0 too */
	return 1 + len;
}

static void px_write(int fd, const char *b, ssize_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, b, (size_t)n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		b += w;
		n -= w;
	}
}

static void *proxy_main(void *arg)
{
	proxy *x = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int cl[PX_MAX], up[PX_MAX], id[PX_MAX], zc[PX_MAX], n = 0;
	static char buf[65536 + 256];

	memcpy(sa.sun_path, x->real, strlen(x->real) + 1);
	while (!atomic_load(&x->stop)) {
		struct pollfd p[1 + 2 * PX_MAX];

		p[0] = (struct pollfd){ x->fd, POLLIN, 0 };
		for (int i = 0; i < n; i++) {
			p[1 + 2 * i] = (struct pollfd){ cl[i], POLLIN, 0 };
			p[2 + 2 * i] = (struct pollfd){ up[i], POLLIN, 0 };
		}
		if (atomic_load(&x->cut)) {
			for (int i = 0; i < n; i++) {
				if (cl[i] >= 0)
					close(cl[i]);
				if (up[i] >= 0)
					close(up[i]);
				cl[i] = up[i] = -1;
			}
			atomic_store(&x->cut, 0);
		}
		if (poll(p, (nfds_t)(1 + 2 * n), 50) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			int k = 0;

			while (k < n && cl[k] >= 0) /* a closed one's place */
				k++;
			if (k == PX_MAX)
				goto serve;
			cl[k] = accept(x->fd, NULL, NULL);
			id[k] = atomic_fetch_add(&x->accepted, 1) + 1;
			zc[k] = 0;
			up[k] = socket(AF_UNIX, SOCK_STREAM, 0);
			if (connect(up[k], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
				close(cl[k]);  /* the client sees a closed */
				close(up[k]);  /* connection: a test failure */
				cl[k] = up[k] = -1;
			}
			if (k == n)
				n++;
			continue;
		}
serve:
		for (int i = 0; i < n; i++) {
			ssize_t m;

			if (cl[i] >= 0 && p[1 + 2 * i].revents) {
				m = read(cl[i], buf, 65536);
				if (m <= 0 || up[i] < 0) {
					close(cl[i]);
					if (up[i] >= 0)
						close(up[i]);
					cl[i] = up[i] = -1;
					continue;
				}
				px_write(up[i], buf, m);
			}
			if (up[i] >= 0 && p[2 + 2 * i].revents) {
				m = read(up[i], buf, 65536);
				if (m <= 0) {
					close(cl[i]);
					close(up[i]);
					cl[i] = up[i] = -1;
					continue;
				}
				int z = m >= 6 && buf[m - 6] == 'Z' &&
				        !memcmp(buf + m - 5, "\0\0\0\5", 4);
				int mf = atomic_load(&x->mute_from);

				if (mf > 0 && id[i] >= mf && zc[i] > 0)
					continue; /* swallowed */
				zc[i] += z;
				if (z)
					atomic_fetch_add(&x->answers, 1);
				if (z && atomic_load(&x->armed) &&
				    atomic_load(&x->skip) > 0) {
					atomic_fetch_sub(&x->skip, 1);
				} else if (z && atomic_load(&x->armed)) {
					m += (ssize_t)px_fatal(buf + m);
					atomic_store(&x->armed, 0);
					close(up[i]);
					up[i] = -1;
					atomic_fetch_add(&x->poisoned, 1);
				}
				px_write(cl[i], buf, m);
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (cl[i] >= 0)
			close(cl[i]);
		if (up[i] >= 0)
			close(up[i]);
	}
	return NULL;
}

/* A proxy (above) at a socket directory of its own, running. */
static void proxy_start(proxy *x, char *dir, char *sock, size_t n)
{
	char port[16];

	server_socket(x->real, sizeof(x->real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, n, "%s/.s.PGSQL.%s", dir, port);
	x->fd = listen_at(sock);
	assert_int_equal(pthread_create(&x->th, NULL, proxy_main, x), 0);
}

static void proxy_stop(proxy *x, const char *dir, const char *sock)
{
	atomic_store(&x->stop, 1);
	pthread_join(x->th, NULL);
	close(x->fd);
	unlink(sock);
	rmdir(dir);
}

/* A child forked now exits 0 (it is not left waiting for a lock). */
static void fork_and_reap(void)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A server that accepts the listening connection and then answers
 * nothing (a host gone, a backend stopped with SIGSTOP): the listener
 * waited for the answer to its set-up for ever, blocked inside libpq, so
 * it never listened again (no push of another host woke this one's
 * waiters any more) and sfs_store_close, which joins it, never returned
 * (the mount's unmount hung). It now waits for each answer up to the
 * busy timeout, in poll() with its stop, and connects again; a fork
 * meanwhile does not wait for the server either. The alarm turns a hang
 * into a failure. */
static void test_listener_mute_server(void **state)
{
	tfx *t = *state;
	char dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_slice it = S("i");
	sfs_store *s;
	uint64_t v0, v1;
	int from;

	proxy_start(&x, dir, sock, sizeof(sock));
	s = open_via(t, dir, "", 2000);
	from = atomic_load(&x.accepted) + 1;
	atomic_store(&x.mute_from, from);
	alarm(120);
	OK(sfs_store_version(s, &v0));
	/* it gave up on its first connection and made another */
	while (atomic_load(&x.accepted) < from + 1)
		usleep(10000);
	fork_and_reap();
	atomic_store(&x.mute_from, 0);
	/* it listens again (its connect moves the counter), and a push by
	 * another handle wakes it */
	v1 = version_moves(s, v0);
	OK(sfs_queue_push(t->s, S("q"), &it, 1, NULL));
	version_moves(s, v1);
	sfs_store_close(s);
	/* a close while the listener waits for a mute server returns */
	s = open_via(t, dir, "", 2000);
	from = atomic_load(&x.accepted) + 1;
	atomic_store(&x.mute_from, from);
	OK(sfs_store_version(s, &v0));
	while (atomic_load(&x.accepted) < from)
		usleep(10000);
	sfs_store_close(s);
	alarm(0);
	proxy_stop(&x, dir, sock);
}

/* A logger that, like the mount's, takes a lock to write its line. */
static pthread_mutex_t fork_log_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int fork_logged;

static void fork_log(int level, const char *msg, void *ctx)
{
	(void)level, (void)msg, (void)ctx;
	pthread_mutex_lock(&fork_log_mu);
	atomic_fetch_add(&fork_logged, 1);
	usleep(500); /* writing */
	pthread_mutex_unlock(&fork_log_mu);
}

/* A child forked now opens a handle of its own and uses it, and logs;
 * the inherited handle h is refused (SFS_INVALID), and its close leaves
 * it alone (it would end the parent's connections). */
static void fork_child_uses(tfx *t, sfs_store *h)
{
	sfs_slice it = S("i");
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		sfs_store *c = NULL;
		uint64_t v;
		int rc;

		alarm(60);
		if (sfs_queue_push(h, S("fq"), &it, 1, NULL) != SFS_INVALID)
			_exit(2);
		fork_log(LOG_INFO, "child", NULL);
		rc = try_open_via(t, NULL, "", 0, &c);
		if (rc == SFS_OK)
			rc = sfs_queue_push(c, S("fc"), &it, 1, NULL);
		if (rc == SFS_OK)
			rc = sfs_store_version(c, &v);
		sfs_store_close(c);
		sfs_store_close(h); /* inherited: left alone */
		_exit(rc == SFS_OK ? 0 : 10 + rc);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the parent's handle works on (the child ended nothing) */
	OK(sfs_queue_push(h, S("fq"), &it, 1, NULL));
}

/* A child forked while the handle's listening thread runs (just started,
 * or logging that its connection was lost and connecting again) opens a
 * handle of its own and logs. The fork waits for the listener to be in
 * poll() (pgb_fork_hold): before, the child could inherit a lock the
 * thread held at the fork, which nothing in the child releases: the
 * logger's (here as in the mount's logger), the allocator's under clang's
 * ASan (not fork-safe), libpq's. The listener's connection is ended by
 * the test's proxy, which allocates nothing (under ASan a thread of the
 * test's own inside malloc at a fork hangs the child just the same). The
 * alarm turns a hang into a failure. */
static void test_fork_listener(void **state)
{
	tfx *t = *state;
	char dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_store *s;
	uint64_t v;
	sfs_list l;

	sfs_set_logger(fork_log, NULL);
	for (int i = 0; i < 20; i++) {
		s = open_via(t, NULL, "", 0);
		OK(sfs_store_version(s, &v)); /* its listener starts */
		fork_child_uses(t, s);
		sfs_store_close(s);
	}
	proxy_start(&x, dir, sock, sizeof(sock));
	s = open_via(t, dir, "", 0);
	OK(sfs_store_version(s, &v));
	atomic_store(&fork_logged, 0);
	for (int i = 0; i < 60; i++) {
		atomic_store(&x.cut, 1);
		while (atomic_load(&x.cut))
			usleep(100);
		usleep((useconds_t)(i % 6) * 200); /* into its reconnect */
		fork_child_uses(t, s);
	}
	while (!atomic_load(&fork_logged)) /* its connection was cut */
		usleep(1000);
	sfs_set_logger(NULL, NULL);
	sfs_store_close(s);
	proxy_stop(&x, dir, sock);
	OK(sfs_queue_pop(t->s, S("fc"), 200, &l));
	assert_int_equal(l.n, 80);
	sfs_list_free(&l);
}

/* The FATAL of a backend ended just as an answer left it came with that
 * answer, and libpq read it as a notice at once, while the backend's
 * socket was still open: the pool's check (a poll) saw nothing, lent the
 * connection, and the next call's commit point met the closed socket
 * with no answer: a pop failed, "the outcome is unknown" (seen about
 * once in 500 calls through two mounts while a loop ended the daemons'
 * backends every 150 ms). The notice now marks the connection as
 * ending, and it is replaced before anything is sent. */
static void test_fatal_with_answer(void **state)
{
	tfx *t = *state;
	char port[16], dir[] = "/tmp/sfs-proxyXXXXXX", sock[256];
	proxy x = { .fd = -1 };
	sfs_slice item = S("item");
	sfs_store *s;
	sfs_list l;
	sfs_buf v;

	server_socket(x.real, sizeof(x.real), port, sizeof(port));
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", dir, port);
	x.fd = listen_at(sock);
	assert_int_equal(pthread_create(&x.th, NULL, proxy_main, &x), 0);
	s = open_via(t, dir, "pool=1", 0);
	OK(sfs_kv_put(s, S("s"), S("n"), S("k"), S("v")));
	OK(sfs_queue_push(s, S("q"), &item, 1, NULL));
	OK(sfs_queue_push(s, S("q"), &item, 1, NULL));
	OK(sfs_queue_pop(s, S("q"), 1, &l));   /* prepared */
	sfs_list_free(&l);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v)); /* prepared */
	sfs_buf_free(&v);

	atomic_store(&x.armed, 1);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	assert_int_equal(atomic_load(&x.poisoned), 1);
	OK(sfs_queue_pop(s, S("q"), 1, &l));
	assert_int_equal(l.n, 1);
	tfx_buf(&l.items[0].value, "item");
	sfs_list_free(&l);

	/* The same inside a transaction: the FATAL came with the answer of
	 * the statement before the COMMIT, so the session had ended before
	 * the COMMIT left. Nothing was committed, and the call runs again;
	 * it failed "the outcome is unknown" (a settle, an encrypted append
	 * or push, seen while a loop ended the daemon's backends). A rename
	 * is one: its answers counted in a run (the last is the COMMIT's),
	 * the next run's last but one is poisoned. */
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k"), S("s"), S("n"), S("k1"), 0));
	atomic_store(&x.answers, 0);
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k1"), S("s"), S("n"), S("k2"), 0));
	assert_true(atomic_load(&x.answers) >= 3); /* BEGIN, ..., COMMIT */
	atomic_store(&x.skip, atomic_load(&x.answers) - 2);
	atomic_store(&x.armed, 1);
	OK(sfs_kv_rename(s, S("s"), S("n"), S("k2"), S("s"), S("n"), S("k3"), 0));
	assert_int_equal(atomic_load(&x.poisoned), 2);
	OK(sfs_kv_get(s, S("s"), S("n"), S("k3"), &v));
	tfx_buf(&v, "v");
	sfs_buf_free(&v);
	assert_int_equal(sfs_kv_get(s, S("s"), S("n"), S("k2"), &v),
	                 SFS_NOTFOUND);

	sfs_store_close(s);
	atomic_store(&x.stop, 1);
	pthread_join(x.th, NULL);
	close(x.fd);
	unlink(sock);
	rmdir(dir);
}

/* A server (or role, or database) with idle_session_timeout ends idle
 * sessions, and the listening connection is idle by nature: it was ended
 * and reconnected at every timeout, each time moving the change counter
 * (a wake-up of every waiter for nothing) and logging a line. It turns the
 * timeout off for itself; the pool's connections keep it. */
static void test_listener_idle_timeout(void **state)
{
	tfx *t = *state;
	sfs_store *s = open_via(t, NULL, "options='-c idle_session_timeout=100'",
	                        0);
	sfs_slice it = S("i");
	uint64_t v0, v1;

	/* the listener's connect moves the counter once */
	OK(sfs_store_version(s, &v0));
	v1 = version_moves(s, v0);
	/* ten timeouts later, nothing pushed: it has not moved again */
	usleep(1000000);
	OK(sfs_store_version(s, &v0));
	assert_true(v0 == v1);
	/* and a push by another handle still wakes it */
	OK(sfs_queue_push(t->s, S("q"), &it, 1, NULL));
	version_moves(s, v1);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_listener_idle_timeout),
		T(test_unreachable_once),
		T(test_mute_server),
		T(test_listener_mute_server),
		T(test_fork_listener),
		T(test_fatal_with_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
