/*
 * schema.c - the store's tables: the VGI Go SDK's four, with its exact
 * DDL, and ours, prefixed statefs_, with a schema version.
 *
 * The SDK's tables are created with the SDK's own statements (whitespace
 * aside) so the sqlite3 tool shows the same schema whichever side created
 * the file, and a Go worker's CREATE TABLE IF NOT EXISTS finds nothing to
 * do on ours. We never add columns to them: the SDK drops its tables when it
 * finds an unexpected created_at column, and a Go worker must be able to
 * write rows without knowing about us. What we need beyond the SDK lives in
 * side tables written in the same transaction:
 *
 *   statefs_meta          name -> value; 'schema_version'
 *   statefs_kv_time       last write time of a function_state row
 *   statefs_counter_time  last write time of a function_counter row
 *   statefs_log_timemap   write times of function_state_log rows, sparse
 *   statefs_queue_timemap enqueue times of work_queue rows, sparse
 *   statefs_queue_pending enqueue time and delivery count of pending items
 *                         that need their own (they re-entered the queue
 *                         at their old id, or were delivered before)
 *   statefs_claim         claims (claim.c): queue (or scope and
 *                         namespace), lease end
 *   statefs_kv_taken      the entries a namespace claim (drain) took
 *   statefs_qmark         the markers of queues with items in flight
 *   statefs_inflight      claimed items, with their original ids
 *   statefs_dead          dead letters
 *   statefs_queue_policy  per-queue time-to-live and delivery limit
 *   statefs_queue_stats   items pushed and taken per queue (stats.c)
 *   statefs_dir           explicit (persisting) scopes and namespaces
 *
 * A key/value or counter row the Go SDK wrote has no time row: its mtime
 * reads as 0. A time row whose data row the SDK deleted is invisible
 * (reads join on the data row) and is removed by the next statefs delete
 * or clear of that key or scope. The time maps are timemap.c's.
 *
 * Versions: 1 kept one time row per log entry and queue item
 * (statefs_log_time, statefs_queue_time); 2 has the sparse maps and
 * statefs_queue_timeoverride; 3 renames that to statefs_queue_pending with
 * a delivery count, and adds the claim tables; 4 adds statefs_queue_stats
 * (which create_own makes like any missing table), claims on a namespace's
 * entries (statefs_claim.ns, statefs_kv_taken) and the queue markers with
 * their triggers. Opening an older store
 * read-write migrates it in one BEGIN IMMEDIATE, every entry keeping
 * exactly its time; read-only, temporary views show version 1's time
 * tables as maps (one row per entry) so nothing reads as unknown, and
 * missing tables are shadowed by empty temporary ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"

/* One text per table, each table's index after it. */
static const char *const sdk_ddl[] = {
	"CREATE TABLE IF NOT EXISTS work_queue (\n"
	"\t\t\tid INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"\t\t\texecution_id BLOB NOT NULL,\n"
	"\t\t\twork_item BLOB NOT NULL\n"
	"\t\t);\n"
	"CREATE INDEX IF NOT EXISTS idx_work_queue_execution ON work_queue(execution_id, id);\n",
	"CREATE TABLE IF NOT EXISTS function_state (\n"
	"\t\t\tscope_id BLOB NOT NULL,\n"
	"\t\t\tns BLOB NOT NULL,\n"
	"\t\t\tkey BLOB NOT NULL,\n"
	"\t\t\tvalue BLOB NOT NULL,\n"
	"\t\t\tPRIMARY KEY (scope_id, ns, key)\n"
	"\t\t);\n",
	"CREATE TABLE IF NOT EXISTS function_state_log (\n"
	"\t\t\tid INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"\t\t\tscope_id BLOB NOT NULL,\n"
	"\t\t\tns BLOB NOT NULL,\n"
	"\t\t\tkey BLOB NOT NULL,\n"
	"\t\t\tvalue BLOB NOT NULL\n"
	"\t\t);\n"
	"CREATE INDEX IF NOT EXISTS idx_function_state_log_lookup\n"
	"\t\t\tON function_state_log(scope_id, ns, key, id);\n",
	"CREATE TABLE IF NOT EXISTS function_counter (\n"
	"\t\t\tscope_id BLOB NOT NULL,\n"
	"\t\t\tns BLOB NOT NULL,\n"
	"\t\t\tkey BLOB NOT NULL,\n"
	"\t\t\tn INTEGER NOT NULL,\n"
	"\t\t\tPRIMARY KEY (scope_id, ns, key)\n"
	"\t\t);\n",
};

#define N_SDK (sizeof(sdk_ddl) / sizeof(sdk_ddl[0]))

/* After "CREATE TABLE " (or "CREATE TEMP TABLE " for read-only shadows). */
static const char *const own_ddl[] = {
	"IF NOT EXISTS statefs_meta ("
	" name TEXT NOT NULL PRIMARY KEY, value ANY) WITHOUT ROWID",
	"IF NOT EXISTS statefs_kv_time ("
	" scope BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL,"
	" mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope, ns, key)) WITHOUT ROWID",
	"IF NOT EXISTS statefs_counter_time ("
	" scope BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL,"
	" mtime_ns INTEGER NOT NULL,"
	" PRIMARY KEY (scope, ns, key)) WITHOUT ROWID",
	/* (id, t): entries from id up to the next row were written at t. */
	"IF NOT EXISTS statefs_log_timemap ("
	" id INTEGER PRIMARY KEY, mtime_ns INTEGER NOT NULL)",
	"IF NOT EXISTS statefs_queue_timemap ("
	" id INTEGER PRIMARY KEY, enqueued_ns INTEGER NOT NULL)",
	"IF NOT EXISTS statefs_queue_pending ("
	" id INTEGER PRIMARY KEY, enqueued_ns INTEGER NOT NULL,"
	" deliveries INTEGER NOT NULL DEFAULT 0)",
	/* lease_until: ns; the claim is held while now < lease_until. A
	 * claim on a namespace's entries (a drain) has its scope in queue
	 * and its namespace in ns; a queue's claims have ns NULL. */
	"IF NOT EXISTS statefs_claim ("
	" claim_id INTEGER PRIMARY KEY AUTOINCREMENT, queue BLOB NOT NULL,"
	" lease_until INTEGER NOT NULL, claimed_ns INTEGER NOT NULL,"
	" ns BLOB)",
	/* The entries a namespace claim took, numbered in key order. */
	"IF NOT EXISTS statefs_kv_taken ("
	" id INTEGER PRIMARY KEY, claim_id INTEGER NOT NULL,"
	" key BLOB NOT NULL, value BLOB NOT NULL, mtime_ns INTEGER NOT NULL)",
	/* A queue with items in flight has two marker rows at the tail of
	 * work_queue, ids lo and lo + 1, so that another program's clear of
	 * the queue can be seen (the triggers below); cleared: its claims up
	 * to this id were cleared while in flight and do not come back. */
	"IF NOT EXISTS statefs_qmark ("
	" queue BLOB NOT NULL PRIMARY KEY, lo INTEGER NOT NULL,"
	" cleared INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
	/* id: the item's work_queue id, kept while it is in flight. */
	"IF NOT EXISTS statefs_inflight ("
	" id INTEGER PRIMARY KEY, claim_id INTEGER NOT NULL,"
	" queue BLOB NOT NULL, item BLOB NOT NULL,"
	" enqueued_ns INTEGER NOT NULL, deliveries INTEGER NOT NULL)",
	"IF NOT EXISTS statefs_dead ("
	" id INTEGER PRIMARY KEY, queue BLOB NOT NULL, item BLOB NOT NULL,"
	" reason TEXT NOT NULL, deliveries INTEGER NOT NULL,"
	" dead_ns INTEGER NOT NULL)",
	/* Items pushed and taken per queue, written at most once a second
	 * by each writer (stats.c); updated_ns: the last write. */
	"IF NOT EXISTS statefs_queue_stats ("
	" queue BLOB NOT NULL PRIMARY KEY, pushed INTEGER NOT NULL,"
	" taken INTEGER NOT NULL, updated_ns INTEGER NOT NULL) WITHOUT ROWID",
	"IF NOT EXISTS statefs_queue_policy ("
	" queue BLOB NOT NULL PRIMARY KEY, ttl_ms INTEGER NOT NULL,"
	" max_deliveries INTEGER NOT NULL) WITHOUT ROWID",
	/* family: an sfs_family; has_ns 0 is the scope itself (ns = x''),
	 * which is not the namespace named "" (has_ns 1, ns = x''). */
	"IF NOT EXISTS statefs_dir ("
	" family INTEGER NOT NULL, scope BLOB NOT NULL,"
	" has_ns INTEGER NOT NULL, ns BLOB NOT NULL,"
	" PRIMARY KEY (family, scope, has_ns, ns)) WITHOUT ROWID",
};

#define N_OWN (sizeof(own_ddl) / sizeof(own_ddl[0]))

/* Indexes of our tables (not created for read-only shadows). */
static const char own_idx[] =
	"CREATE INDEX IF NOT EXISTS statefs_claim_lease"
	" ON statefs_claim(lease_until);"
	"CREATE INDEX IF NOT EXISTS statefs_claim_queue"
	" ON statefs_claim(queue, lease_until);"
	"CREATE INDEX IF NOT EXISTS statefs_inflight_claim"
	" ON statefs_inflight(claim_id, id);"
	"CREATE INDEX IF NOT EXISTS statefs_inflight_queue"
	" ON statefs_inflight(queue, id);"
	"CREATE INDEX IF NOT EXISTS statefs_dead_queue ON statefs_dead(queue, id);"
	/* the time-to-live's cut-off: one seek in a monotone map */
	"CREATE INDEX IF NOT EXISTS statefs_queue_timemap_time"
	" ON statefs_queue_timemap(enqueued_ns, id);"
	"CREATE INDEX IF NOT EXISTS statefs_kv_taken_claim"
	" ON statefs_kv_taken(claim_id, id);"
	/* Another program's clear of a queue whose items are in flight
	 * (docs/claims.md, "Clears"). A delete of the first marker is an
	 * SDK pop of a queue with nothing pending (it takes the smallest
	 * id): skipped, the pop finds nothing. A delete of the second can
	 * only come from a statement that deletes more than the head, a
	 * clear: the queue's claims so far are cleared, and the marker
	 * stays. Needs nothing the SDK's connection lacks. */
	"CREATE TRIGGER IF NOT EXISTS statefs_queue_clear BEFORE DELETE"
	" ON work_queue WHEN EXISTS (SELECT 1 FROM statefs_qmark m"
	" WHERE m.queue=OLD.execution_id AND OLD.id IN (m.lo, m.lo+1))"
	" AND EXISTS (SELECT 1 FROM statefs_inflight i"
	" WHERE i.queue=OLD.execution_id) BEGIN"
	" UPDATE statefs_qmark SET cleared=(SELECT coalesce(max(claim_id), 0)"
	" FROM statefs_claim WHERE queue=OLD.execution_id AND ns IS NULL)"
	" WHERE queue=OLD.execution_id AND lo+1=OLD.id;"
	" SELECT RAISE(IGNORE); END;"
	/* The markers stay the queue's last rows whoever pushes: an SDK pop
	 * must reach them only when nothing is pending. */
	"CREATE TRIGGER IF NOT EXISTS statefs_queue_push AFTER INSERT"
	" ON work_queue WHEN EXISTS (SELECT 1 FROM statefs_qmark m"
	" WHERE m.queue=NEW.execution_id AND m.lo<NEW.id) BEGIN"
	" UPDATE work_queue SET id=NEW.id+1+id-(SELECT lo FROM statefs_qmark"
	" WHERE queue=NEW.execution_id) WHERE id IN (SELECT lo FROM"
	" statefs_qmark WHERE queue=NEW.execution_id UNION ALL SELECT lo+1"
	" FROM statefs_qmark WHERE queue=NEW.execution_id);"
	" UPDATE statefs_qmark SET lo=NEW.id+1 WHERE queue=NEW.execution_id;"
	" END;";

/* The tables of sdk_ddl, in its order. */
static const char *const sdk_tables[N_SDK] = {
	"work_queue", "function_state", "function_state_log",
	"function_counter",
};

/* 1 if table exists in main, 0 if not, negative status on failure. */
/* Whether a query of the schema with text parameters ?1 (and ?2, when
 * p2 is not NULL) finds a row: 1, 0, or a negative status. */
static int schema_has(sfs_backend *b, const char *sql, const char *p1,
                      const char *p2)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return -sqlb_fail(b, rc, "reading the schema");
	sqlite3_bind_text(st, 1, p1, -1, SQLITE_STATIC);
	if (p2)
		sqlite3_bind_text(st, 2, p2, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return -sqlb_fail(b, rc, "reading the schema");
}

static int has_table(sfs_backend *b, const char *name)
{
	return schema_has(b, "SELECT 1 FROM main.sqlite_schema WHERE"
	                  " type='table' AND name=?1", name, NULL);
}

/* Our tables keyed by scope that had the SDKs' column name, scope_id,
 * before version 5: the Python SDK's audit of a store takes every table
 * with a scope_id column for one of its own (and fails on a statefs
 * store), so ours call it scope. */
static const char *const scoped_own[] = {
	"statefs_kv_time", "statefs_counter_time", "statefs_dir",
};

/* 1 when table has column col, 0 when not (or there is no such table), or
 * a negative status. */
static int has_column(sfs_backend *b, const char *table, const char *col)
{
	return schema_has(b, "SELECT 1 FROM pragma_table_info(?1, 'main')"
	                  " WHERE name=?2", table, col);
}

/* Version 4 and before to 5: scope_id becomes scope in our tables. */
static int migrate_v4(sfs_backend *b)
{
	char sql[128];
	int status = SFS_OK, c;

	for (size_t i = 0; i < 3 && status == SFS_OK; i++) {
		c = has_column(b, scoped_own[i], "scope_id");
		if (c < 0)
			return -c;
		if (!c)
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s RENAME COLUMN"
		         " scope_id TO scope", scoped_own[i]);
		status = sqlb_exec(b, sql, "migrating the schema");
	}
	return status;
}

/* The schema version in statefs_meta: 0 when there is none. */
static int read_version(sfs_backend *b, int64_t *v)
{
	sqlite3_stmt *st;
	int rc, t = has_table(b, "statefs_meta");

	*v = 0;
	if (t <= 0)
		return -t;
	rc = sqlite3_prepare_v2(b->db,
	        "SELECT value FROM main.statefs_meta WHERE name='schema_version'",
	        -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading the schema version");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "reading the schema version");
	return SFS_OK;
}

/* What a database without our schema version is, inside the write
 * transaction that would create the schema: a store of the Go SDK (its
 * tables, which get ours), a new one (an empty file: nothing to lose, so
 * any read-write open makes it, as a first run that died left it), or
 * something that must be left alone. A database with
 * pages but no tables is a store that lost them (its write-ahead log gone
 * or damaged) or someone else's empty database; one with tables but none
 * of ours or the SDK's is someone else's. Never reformatted. */
static int check_unknown(sfs_backend *b)
{
	sqlite3_stmt *st;
	int rc, n_any = 0, n_ours = 0;
	sqlite3_int64 size = 0;

	rc = sqlite3_prepare_v2(b->db,
	        "SELECT name FROM main.sqlite_schema WHERE type='table'"
	        " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "reading the schema");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		n_any++;
		if (!name)
			continue;
		if (!strncmp(name, "statefs_", 8))
			n_ours++;
		for (size_t i = 0; i < N_SDK; i++)
			if (!strcmp(name, sdk_tables[i]))
				n_ours++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sqlb_fail(b, rc, "reading the schema");
	if (n_any > 0 && n_ours == 0)
		return sfs_err(SFS_FORMAT, "%s is a SQLite database but not a "
		               "statefs or VGI state store", b->path);
	if (n_any > 0)
		return SFS_OK;
	/* The file, not the page count: a write transaction on an empty
	 * database already counts the page 1 it will write. (An empty file
	 * with a write-ahead log is refused before SQLite opens it.) */
	if (!b->memory) {
		sqlite3_file *f = NULL;

		rc = sqlite3_file_control(b->db, "main",
		                          SQLITE_FCNTL_FILE_POINTER, &f);
		if (rc == SQLITE_OK && f && f->pMethods)
			rc = f->pMethods->xFileSize(f, &size);
		if (rc != SQLITE_OK)
			return sqlb_fail(b, rc, "reading the file size");
	}
	if (size > 0)
		return sfs_err(SFS_FORMAT, "%s has no tables: it is not a statefs "
		               "store, or it lost its tables (its write-ahead log "
		               "missing or damaged); it is left as it is, never "
		               "made into a new store", b->path);
	return SFS_OK;
}

static int create_own(sfs_backend *b, const char *prefix)
{
	char sql[512];
	int status;

	for (size_t i = 0; i < N_OWN; i++) {
		snprintf(sql, sizeof(sql), "CREATE %sTABLE %s", prefix, own_ddl[i]);
		status = sqlb_exec(b, sql, "creating statefs tables");
		if (status != SFS_OK)
			return status;
	}
	return sqlb_exec(b, own_idx, "creating statefs indexes");
}

static int check_version(sfs_backend *b, int64_t v)
{
	if (v > SQLB_SCHEMA_VERSION)
		return sfs_err(SFS_FORMAT, "%s has schema version %lld; this "
		               "statefs reads up to %d", b->path, (long long)v,
		               SQLB_SCHEMA_VERSION);
	return SFS_OK;
}

/* The name a table of own_ddl creates ("IF NOT EXISTS <name> (..."). */
static void own_name(size_t i, char *out, size_t len)
{
	const char *p = own_ddl[i] + strlen("IF NOT EXISTS ");
	size_t n = strcspn(p, " (");

	snprintf(out, len, "%.*s", (int)n, p);
}

/* Read-only, the SDK's tables: a store one SDK made may lack some (the
 * TypeScript SDK creates no function_counter); they are shadowed by empty
 * temporary tables of the same shape. A file with none of them is not a
 * store. */
static int shadow_sdk(sfs_backend *b)
{
	int status, t, have[N_SDK], any = 0;
	char *sql;

	for (size_t i = 0; i < N_SDK; i++) {
		t = has_table(b, sdk_tables[i]);
		if (t < 0)
			return -t;
		have[i] = t;
		any |= t;
	}
	if (!any)
		return sfs_err(SFS_FORMAT, "%s has none of the tables of a "
		               "statefs or VGI state store", b->path);
	for (size_t i = 0; i < N_SDK; i++) {
		if (have[i])
			continue;
		/* The table's statement, less its index: "CREATE TEMP TABLE". */
		sql = sqlite3_mprintf("CREATE TEMP %.*s",
		                      (int)(strstr(sdk_ddl[i], ");") + 2 -
		                            sdk_ddl[i] - strlen("CREATE ")),
		                      sdk_ddl[i] + strlen("CREATE "));
		if (!sql)
			return sfs_err(SFS_NOMEM, "shadowing %s", sdk_tables[i]);
		status = sqlb_exec(b, sql, "shadowing the VGI tables");
		sqlite3_free(sql);
		if (status != SFS_OK)
			return status;
	}
	return SFS_OK;
}

/* Read-only: nothing may be written. Missing tables of the SDK's and ours
 * (a store only an SDK has written, or an older version) are shadowed by
 * temporary ones so every statement still prepares: empty tables, except
 * that a version-1 store's per-entry time tables are shown as time maps
 * (one row per entry, 0 where an entry has no time) and a version-2
 * store's time overrides as the pending items' table. */
static int init_readonly(sfs_backend *b)
{
	char name[64], sql[512];
	int64_t v;
	int status, t;

	status = read_version(b, &v);
	if (status != SFS_OK)
		return status;
	status = check_version(b, v);
	if (status != SFS_OK)
		return status;
	if (v == SQLB_SCHEMA_VERSION)
		return SFS_OK;
	status = shadow_sdk(b);
	if (status != SFS_OK)
		return status;
	if (has_table(b, "statefs_claim") == 1) {
		/* Version 3: its claims have no namespace column. */
		status = sqlb_exec(b, "CREATE TEMP VIEW statefs_claim AS SELECT"
		                   " claim_id, queue, lease_until, claimed_ns,"
		                   " NULL AS ns FROM main.statefs_claim",
		                   "shadowing statefs tables");
		if (status != SFS_OK)
			return status;
	}
	for (size_t i = 0; i < N_OWN; i++) {
		own_name(i, name, sizeof(name));
		t = has_table(b, name);
		if (t < 0)
			return -t;
		if (t) {
			/* Before version 5 (scoped_own): scope_id, shown as
			 * scope. */
			if ((t = has_column(b, name, "scope_id")) < 0)
				return -t;
			if (!t)
				continue;
			snprintf(sql, sizeof(sql), "CREATE TEMP VIEW %s AS SELECT"
			         " %s FROM main.%s", name,
			         !strcmp(name, "statefs_dir")
			         ? "family, scope_id AS scope, has_ns, ns"
			         : "scope_id AS scope, ns, key, mtime_ns", name);
		} else if (!strcmp(name, "statefs_log_timemap") &&
		    has_table(b, "statefs_log_time") == 1)
			snprintf(sql, sizeof(sql), "CREATE TEMP VIEW %s AS SELECT"
			         " l.id AS id, coalesce(o.mtime_ns, 0) AS mtime_ns"
			         " FROM main.function_state_log l LEFT JOIN"
			         " main.statefs_log_time o ON o.id=l.id", name);
		else if (!strcmp(name, "statefs_queue_timemap") &&
		         has_table(b, "statefs_queue_time") == 1)
			snprintf(sql, sizeof(sql), "CREATE TEMP VIEW %s AS SELECT"
			         " q.id AS id, coalesce(o.enqueued_ns, 0) AS"
			         " enqueued_ns FROM main.work_queue q LEFT JOIN"
			         " main.statefs_queue_time o ON o.id=q.id", name);
		else if (!strcmp(name, "statefs_queue_pending") &&
		         has_table(b, "statefs_queue_timeoverride") == 1)
			snprintf(sql, sizeof(sql), "CREATE TEMP VIEW %s AS SELECT"
			         " id, enqueued_ns, 0 AS deliveries FROM"
			         " main.statefs_queue_timeoverride", name);
		else
			snprintf(sql, sizeof(sql), "CREATE TEMP TABLE %s",
			         own_ddl[i]);
		status = sqlb_exec(b, sql, "shadowing statefs tables");
		if (status != SFS_OK)
			return status;
	}
	return SFS_OK;
}

/* Version 2 to 3, before create_own: the time overrides become the
 * pending items' table, with a delivery count. */
static int migrate_v2(sfs_backend *b)
{
	int t = has_table(b, "statefs_queue_timeoverride");

	if (t < 0)
		return -t;
	if (!t)
		return SFS_OK; /* create_own makes the new one */
	return sqlb_exec(b, "ALTER TABLE statefs_queue_timeoverride"
	                 " RENAME TO statefs_queue_pending;"
	                 "ALTER TABLE statefs_queue_pending ADD COLUMN"
	                 " deliveries INTEGER NOT NULL DEFAULT 0;",
	                 "migrating the schema");
}

/* Version 1 to 2: the per-entry time tables become sparse maps. The new
 * tables exist (create_own ran); every entry keeps exactly its time. */
static int migrate_v1(sfs_backend *b)
{
	int status, t = has_table(b, "statefs_log_time");
	int u = t < 0 ? t : has_table(b, "statefs_queue_time");

	if (t < 0 || u < 0)
		return t < 0 ? -t : -u;
	if (!t || !u)
		return sfs_err(SFS_FORMAT, "%s has schema version 1 but not its"
		               " time tables", b->path);
	status = tm_convert_v1(b, "main");
	if (status == SFS_OK)
		status = sqlb_exec(b, "DROP TABLE statefs_log_time;"
		                   " DROP TABLE statefs_queue_time;",
		                   "migrating the schema");
	return status;
}

int sqlb_schema_init(sfs_backend *b)
{
	char sql[128];
	int64_t v;
	int status;

	if (b->readonly)
		return init_readonly(b);
	/* The common case, an existing store at our version, takes no write
	 * lock: many processes open at once. */
	status = read_version(b, &v);
	if (status != SFS_OK)
		return status;
	status = check_version(b, v);
	if (status != SFS_OK || v == SQLB_SCHEMA_VERSION)
		return status;
	status = sqlb_begin_write(b);
	if (status != SFS_OK)
		return status;
	status = read_version(b, &v); /* another process may have won */
	if (status == SFS_OK)
		status = check_version(b, v);
	if (status == SFS_OK && v == 0)
		status = check_unknown(b);
	for (size_t i = 0; i < N_SDK && status == SFS_OK &&
	     v < SQLB_SCHEMA_VERSION; i++)
		status = sqlb_exec(b, sdk_ddl[i], "creating the VGI tables");
	if (status == SFS_OK && v == 2)
		status = migrate_v2(b);
	if (status == SFS_OK && v == 3)
		status = sqlb_exec(b, "ALTER TABLE statefs_claim ADD COLUMN ns"
		                   " BLOB", "migrating the schema");
	if (status == SFS_OK && v > 0 && v < 5)
		status = migrate_v4(b);
	if (status == SFS_OK && v < SQLB_SCHEMA_VERSION)
		status = create_own(b, "");
	if (status == SFS_OK && v == 1)
		status = migrate_v1(b);
	if (status == SFS_OK && v == 3)
		status = sqlb_marks_ensure(b);
	if (status == SFS_OK && v < SQLB_SCHEMA_VERSION) {
		snprintf(sql, sizeof(sql),
		         "INSERT OR REPLACE INTO statefs_meta VALUES"
		         " ('schema_version', %d)", SQLB_SCHEMA_VERSION);
		status = sqlb_exec(b, sql, "writing the schema version");
	}
	status = sqlb_end_write(b, status);
	if (status == SFS_OK && v == 0)
		b->made_schema = 1;
	if (status == SFS_OK && v > 0)
		sfs_log(LOG_INFO, "%s: migrated from schema version %lld to %d",
		        b->path, (long long)v, SQLB_SCHEMA_VERSION);
	b->commits = 0; /* creating the schema is no change of state */
	return status;
}

int sqlb_schema_tables(sfs_backend *b, const char *db, char ***names)
{
	char sql[512];
	sqlite3_stmt *st;
	char **v = NULL;
	size_t n = 0;
	int rc;

	/* The SDK's tables first (fixed order), then ours by name. */
	snprintf(sql, sizeof(sql),
	         "SELECT name FROM \"%s\".sqlite_schema WHERE type='table' AND"
	         " (name IN ('function_state','function_counter',"
	         "'function_state_log','work_queue') OR (name LIKE"
	         " 'statefs\\_%%' ESCAPE '\\' AND name NOT IN ('statefs_meta',"
	         " 'statefs_queue_stats')))"
	         " ORDER BY name LIKE 'statefs\\_%%' ESCAPE '\\', name", db);
	rc = sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlb_fail(b, rc, "listing tables");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char **nv = realloc(v, (n + 2) * sizeof(*v));
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (!nv || !name || !(nv[n] = strdup(name))) {
			v = nv ? nv : v;
			if (v)
				v[n] = NULL;
			sqlite3_finalize(st);
			sqlb_schema_tables_free(v);
			return sfs_err(SFS_NOMEM, "listing tables");
		}
		v = nv;
		v[++n] = NULL;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		sqlb_schema_tables_free(v);
		return sqlb_fail(b, rc, "listing tables");
	}
	if (!v && !(v = calloc(1, sizeof(*v))))
		return sfs_err(SFS_NOMEM, "listing tables");
	*names = v;
	return SFS_OK;
}

void sqlb_schema_tables_free(char **names)
{
	if (!names)
		return;
	for (size_t i = 0; names[i]; i++)
		free(names[i]);
	free(names);
}
