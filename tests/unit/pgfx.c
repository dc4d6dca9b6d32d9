/*
 * pgfx.c - what the PostgreSQL backend's tests (test_pg.c,
 * test_pg_outcome.c, test_pg_conn.c) share: a handle whose connections
 * can be told apart on the server (by application_name), ending and
 * awaiting those backends, and waiting for the change counter to move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "fixture.h"
#include "pgfx.h"

/* A handle whose connections can be told apart on the server. */
sfs_store *open_named(tfx *t, const char *app)
{
	char *db = tfx_db(t->path), *named;
	sfs_config o;
	sfs_store *s;

	memset(&o, 0, sizeof(o));
	if (asprintf(&named, "%s application_name=%s", db, app) < 0)
		fail();
	o.db = named;
	o.key = tfx_key();
	if (!o.key)
		o.flags = SFS_OPEN_PLAINTEXT;
	OK(sfs_store_open(&o, &s, NULL));
	free(named);
	free(db);
	return s;
}

void kill_app(PGconn *c, const char *app, int waiting_only)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(pg_terminate_backend(pid)) FROM"
	         " pg_stat_activity WHERE application_name = '%s'%s", app,
	         waiting_only ? " AND wait_event_type = 'Lock'" : "");
	tfx_pg_do(c, q);
}

/* Waits until a backend of app waits for a lock. */
void until_waiting(PGconn *c, const char *app)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE"
	         " application_name = '%s' AND wait_event_type = 'Lock'", app);
	for (int i = 0; i < 600 && tfx_pg_int(c, q) == 0; i++)
		usleep(50000);
	assert_true(tfx_pg_int(c, q) > 0);
}

/* Waits until the server has no backend of app left: each one killed has
 * sent its FATAL, and closes its socket, before its row goes. */
void until_gone(PGconn *c, const char *app)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE"
	         " application_name = '%s'", app);
	for (int i = 0; i < 600 && tfx_pg_int(c, q) > 0; i++)
		usleep(50000);
	assert_int_equal(tfx_pg_int(c, q), 0);
}

/* Waits (up to 30 s) for the change counter of s to move from v; its new
 * value. */
uint64_t version_moves(sfs_store *s, uint64_t v)
{
	uint64_t now = v;

	for (int i = 0; i < 3000 && now == v; i++) {
		OK(sfs_store_version(s, &now));
		if (now == v)
			usleep(10000);
	}
	assert_true(now != v);
	return now;
}
