/*
 * fixture.h - what every unit test of the engine shares: a temporary
 * directory with a store in it, opened as STATEFS_TEST_MODE says:
 * "plain" (the default) or "encrypted" (a key made with
 * sfs_key_generate) SQLite stores, or "postgres" / "postgres-plain":
 * encrypted / plaintext stores on the PostgreSQL server that
 * STATEFS_TEST_PG names (scripts/with-pg starts one), each store path
 * standing for a schema of its own that teardown drops. Without a
 * server, a postgres mode test exits 77 (skipped). Also: assertions that
 * print the engine's detail.
 */
#ifndef STATEFS_TEST_FIXTURE_H
#define STATEFS_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "statefs.h"

typedef struct tfx {
	char dir[256];    /* the test's temporary directory */
	char path[320];   /* dir/store.db */
	sfs_store *s;     /* open on path */
} tfx;

/* cmocka setup/teardown: a fresh directory and store per test. */
int tfx_setup(void **state);
int tfx_teardown(void **state);

/* 1 when the tests run against encrypted stores (SQLite or PostgreSQL). */
int tfx_encrypted(void);
/* 1 when they run against PostgreSQL. */
int tfx_postgres(void);
/* In a postgres mode, skips the calling test with the reason (a feature
 * of SQLite stores only, listed in docs/postgres.md); else nothing. */
void tfx_sqlite_only(const char *why);
/* The name a store path stands for in this mode (the path, or a
 * PostgreSQL connection string), malloc'd. */
char *tfx_db(const char *path);
/* A plain libpq connection (PGconn) to the test's PostgreSQL server, in
 * the schema of the store at path (NULL: no schema), standing for
 * someone else: another client, an SDK worker, the server's operator.
 * PQfinish it. */
struct pg_conn *tfx_pg_conn(const char *path);
/* Runs SQL on it that must succeed (the test fails otherwise); _int: the
 * first column of the first row as an integer, -1 when there is none. */
void tfx_pg_do(struct pg_conn *c, const char *q);
long long tfx_pg_int(struct pg_conn *c, const char *q);
/* The process's key (encrypted mode), else NULL. */
const sfs_key *tfx_key(void);
/* Opens path as the mode says, with extra flags; returns the status. */
int tfx_open(const char *path, unsigned flags, sfs_store **out);
/* Opens the SQLite store file at path (a checkpoint: a SQLite store in
 * every mode) with the mode's key, or in plaintext. */
int tfx_open_file(const char *path, unsigned flags, sfs_store **out);
/* Closes and reopens t->s. */
void tfx_reopen(tfx *t);
/* For tests that make their own stores: a new directory for the whole
 * group, "statefs-<what>-XXXXXX" under $TMPDIR or /tmp, written into dir
 * (n bytes). Returns 0, or -1. */
int tfx_mkdtemp(char *dir, size_t n, const char *what);
/* Removes a directory tree. Returns 0, or -1 when something stayed. */
int tfx_rmtree(const char *dir);

/* The engine's injectable clock (sfs_clock_set): cmocka setup/teardown
 * that also start it at 1000 s, which the test moves through tfx_now, and
 * put the real clock back. */
extern int64_t tfx_now;
int tfx_setup_clock(void **state);
int tfx_teardown_clock(void **state);

/* An export as bytes (every field of every row, in order) and its row
 * counts, to compare two exports byte for byte. Zero it before use;
 * tfx_dump_free releases it. */
typedef struct tfx_dump {
	unsigned char *p;
	size_t len, cap;
	int rows, fam_rows[16];   /* rows in all, and by sfs_family */
} tfx_dump;
/* An sfs_export callback: appends the row to the tfx_dump ctx. */
int tfx_dump_row(const sfs_row *r, void *ctx);
void tfx_dump_free(tfx_dump *d);

/* Rows kept for an import: tfx_rows_add (an sfs_export callback) copies
 * each row, tfx_rows_next (an sfs_import source) gives them back in order
 * from the start. Zero it before use; tfx_rows_free releases it. */
typedef struct tfx_rows {
	sfs_row *r;
	size_t n, cap, next;
} tfx_rows;
int tfx_rows_add(const sfs_row *r, void *ctx);
int tfx_rows_next(sfs_row *r, void *ctx);
void tfx_rows_free(tfx_rows *rows);
/* The backend's fact name from sfs_store_info (*found 1), or 0 (*found
 * 0). */
uint64_t tfx_fact(sfs_store *s, const char *name, int *found);
/* Exports every row of src and imports them into dst in one import;
 * returns the import's status. */
int tfx_copy(sfs_store *src, sfs_store *dst);

#define S(x) sfs_str(x)

#define OK(expr)                                                           \
	do {                                                               \
		int r_ = (expr);                                           \
		if (r_ != SFS_OK)                                          \
			fail_msg("%s = %s: %s", #expr, sfs_strerror(r_),   \
			         sfs_errdetail());                         \
	} while (0)

#define IS(code, expr)                                                     \
	do {                                                               \
		int r_ = (expr);                                           \
		if (r_ != (code))                                          \
			fail_msg("%s = %s, want %s: %s", #expr,            \
			         sfs_strerror(r_), sfs_strerror(code),     \
			         sfs_errdetail());                         \
	} while (0)

/* SQL that turns a store of today's schema into one of version 4 (our
 * scope columns named scope_id, as the SDKs' are) or 3 (also no queue
 * counts, no namespace claims, no queue markers), for the tests of the
 * migration. */
#define TFX_SQL_SCOPE_ID                                                   \
	" ALTER TABLE statefs_kv_time RENAME COLUMN scope TO scope_id;"    \
	" ALTER TABLE statefs_counter_time RENAME COLUMN scope TO scope_id;" \
	" ALTER TABLE statefs_dir RENAME COLUMN scope TO scope_id;"
#define TFX_SQL_TO_V3                                                      \
	"DROP TRIGGER statefs_queue_clear;"                                \
	" DROP TRIGGER statefs_queue_push;"                                \
	" DELETE FROM work_queue WHERE id IN (SELECT lo FROM statefs_qmark" \
	" UNION ALL SELECT lo + 1 FROM statefs_qmark);"                    \
	" DROP TABLE statefs_qmark; DROP TABLE statefs_kv_taken;"          \
	" DROP TABLE statefs_queue_stats;"                                 \
	" ALTER TABLE statefs_claim DROP COLUMN ns;"                       \
	TFX_SQL_SCOPE_ID                                                   \
	" UPDATE statefs_meta SET value=3 WHERE name='schema_version'"
#define TFX_SQL_TO_V4                                                      \
	TFX_SQL_SCOPE_ID                                                   \
	" UPDATE statefs_meta SET value=4 WHERE name='schema_version'"

/* Asserts the list's keys, in order, are the space-separated words. */
void tfx_keys(const sfs_list *l, const char *words);
/* Asserts a buffer holds exactly the string. */
void tfx_buf(const sfs_buf *b, const char *s);

#endif
