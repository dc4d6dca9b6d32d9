/*
 * pgfx.h - what the PostgreSQL backend's tests share (pgfx.c).
 */
#ifndef STATEFS_TEST_PGFX_H
#define STATEFS_TEST_PGFX_H

#include <stdint.h>

#include <libpq-fe.h>

#include "fixture.h"

/* A handle on the test's store whose connections can be told apart on
 * the server: their application_name is app. */
sfs_store *open_named(tfx *t, const char *app);
/* Ends app's backends (only those waiting for a lock, with waiting_only). */
void kill_app(PGconn *c, const char *app, int waiting_only);
/* Waits until a backend of app waits for a lock. */
void until_waiting(PGconn *c, const char *app);
/* Waits until the server has no backend of app left. */
void until_gone(PGconn *c, const char *app);
/* Waits (up to 30 s) for the change counter of s to move from v; its new
 * value. */
uint64_t version_moves(sfs_store *s, uint64_t v);

#endif
