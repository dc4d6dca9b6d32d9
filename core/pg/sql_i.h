/*
 * sql_i.h - the statements of the engine's hot paths on PostgreSQL,
 * in one place, because two programs run them: the backend (kv.c,
 * seq.c) and the benchmark's raw libpq baseline (bench/pg_bench.c),
 * which must run exactly what the engine runs for its ratio to mean
 * "what the engine costs".
 *
 * Parameters, as the statements number them:
 *   $1 scope (queue), $2 namespace, $3 key, $4 value, then as noted.
 * A clock parameter is the test clock (ns) or NULL: the server's.
 */
#ifndef STATEFS_PGB_SQL_I_H
#define STATEFS_PGB_SQL_I_H

#define PGB_KEYEQ "scope_id = $1 AND ns = $2 AND key = $3"

/* put: the value and its time row (written only when the stored second
 * is another: a write's time is its own, also when earlier), one
 * statement. $5 clock. */
#define PGB_SQL_PUT                                                        \
	"WITH t AS (INSERT INTO statefs_kv_time (scope_id, ns, key, mtime_ns)" \
	" VALUES ($1, $2, $3, sfs_mtime($5)) ON CONFLICT (scope_id, ns, key)" \
	" DO UPDATE SET mtime_ns = excluded.mtime_ns"                      \
	" WHERE statefs_kv_time.mtime_ns <> excluded.mtime_ns)"            \
	" INSERT INTO function_state (scope_id, ns, key, value)"           \
	" VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key)"         \
	" DO UPDATE SET value = excluded.value"

#define PGB_SQL_GET "SELECT value FROM function_state WHERE " PGB_KEYEQ

/* counter add, one atomic upsert that fails on bigint overflow. $4 delta,
 * $5 clock. */
#define PGB_SQL_CTR_TIME                                                   \
	"WITH t AS (INSERT INTO statefs_counter_time (scope_id, ns, key,"   \
	" mtime_ns) VALUES ($1, $2, $3, sfs_mtime($5))"                     \
	" ON CONFLICT (scope_id, ns, key) DO UPDATE SET"                    \
	" mtime_ns = excluded.mtime_ns"                                     \
	" WHERE statefs_counter_time.mtime_ns <> excluded.mtime_ns) "
#define PGB_SQL_CTR_ADD                                                    \
	PGB_SQL_CTR_TIME "INSERT INTO function_counter (scope_id, ns, key, n)" \
	" VALUES ($1, $2, $3, $4) ON CONFLICT (scope_id, ns, key) DO UPDATE" \
	" SET n = function_counter.n + excluded.n RETURNING n"

/* An entry's time, $6 the clock: the server's second, but never before
 * the time of the log's last entry (a clock stepped back does not make a
 * log's times go backwards, as in a SQLite store). */
#define PGB_SQL_LOG_TIME                                                   \
	"greatest(sfs_mtime($6), coalesce((SELECT t2.mtime_ns FROM"        \
	" function_state_log l2 JOIN statefs_log_time t2 ON t2.id = l2.id"  \
	" WHERE l2.scope_id = $1 AND l2.ns = $2 AND l2.key = $3"            \
	" ORDER BY l2.id DESC LIMIT 1), 0))"

/* The plaintext append: the log's advisory lock ($5), then its id, the
 * entry and its time, one statement. */
#define PGB_SQL_APPEND                                                     \
	"WITH l AS (SELECT pg_advisory_xact_lock($5)),"                    \
	" i AS (INSERT INTO function_state_log (id, scope_id, ns, key, value)" \
	" SELECT sfs_ids('function_state_log_id_seq', 1), $1, $2, $3, $4"  \
	" FROM l RETURNING id),"                                           \
	" t AS (INSERT INTO statefs_log_time (id, mtime_ns)"               \
	" SELECT id, " PGB_SQL_LOG_TIME " FROM i) SELECT id FROM i"

/* The encrypted append, in a transaction: the lock ($1) and the id, then
 * (the value sealed for that id) the entry ($5 its id) and its time. */
#define PGB_SQL_APPEND_ID                                                  \
	"SELECT sfs_ids('function_state_log_id_seq', 1)"                   \
	" FROM (SELECT pg_advisory_xact_lock($1)) l"
#define PGB_SQL_APPEND_SEALED                                              \
	"WITH i AS (INSERT INTO function_state_log (id, scope_id, ns, key,"  \
	" value) VALUES ($5, $1, $2, $3, $4) RETURNING id)"                \
	" INSERT INTO statefs_log_time (id, mtime_ns)"                     \
	" SELECT id, " PGB_SQL_LOG_TIME " FROM i"

/* $1 n consecutive item ids (retries and requeues of an encrypted store
 * ask first). */
#define PGB_SQL_ITEM_IDS "SELECT sfs_ids('work_queue_id_seq', $1)"
/* The same for an encrypted push, in its transaction, under the queue's
 * lock ($2: see PGB_SQL_PUSH). */
#define PGB_SQL_PUSH_IDS                                                   \
	"SELECT sfs_ids('work_queue_id_seq', $1)"                          \
	" FROM (SELECT pg_advisory_xact_lock($2)) l"

/* push: ids ($2 bigint[]; empty: taken here, consecutive) and items ($3
 * bytea[]) of queue $1, each with its enqueue time ($4 clock), under the
 * queue's lock ($5), taken before the ids as an append takes its log's:
 * the items of one queue become visible in id order, so a reader paging
 * by "after id X" (a queue's .follow) misses none pushed by another host
 * at the same time. */
#define PGB_SQL_PUSH                                                       \
	"WITH l AS (SELECT pg_advisory_xact_lock($5)),"                    \
	" f AS (SELECT CASE WHEN cardinality($2::bigint[]) = 0 THEN"       \
	" sfs_ids('work_queue_id_seq', cardinality($3::bytea[])) END AS f" \
	" FROM l),"                                                        \
	" u AS (SELECT coalesce($2[o::int], f.f + o - 1) AS id, v, o"      \
	" FROM f, unnest($3::bytea[]) WITH ORDINALITY u(v, o)),"           \
	" i AS (INSERT INTO work_queue (id, execution_id, work_item)"      \
	" SELECT id, $1, v FROM u ORDER BY o RETURNING id),"               \
	" t AS (INSERT INTO statefs_queue_item (id, enqueued_ns, deliveries)" \
	" SELECT id, sfs_mtime($4), 0 FROM i) SELECT min(id) FROM i"

/* Taking items (pop, drain): d the deleted work_queue rows; the result's
 * columns: id, item, size, enqueued, deliveries. */
#define PGB_SQL_TAKE_ITEMS                                                 \
	" t AS (DELETE FROM statefs_queue_item s USING d WHERE s.id = d.id"  \
	" RETURNING s.id, s.enqueued_ns, s.deliveries)"
#define PGB_SQL_TAKEN_COLS                                                 \
	" SELECT d.id, d.work_item, sfs_len(d.work_item),"                 \
	" coalesce(t.enqueued_ns, 0), 0::bigint, NULL::bytea,"              \
	" coalesce(t.deliveries, 0) FROM d LEFT JOIN t ON t.id = d.id"

/* pop: the $2 oldest visible items of queue $1, skipping rows another
 * transaction holds, in one statement. */
#define PGB_SQL_POP                                                        \
	"WITH h AS (SELECT id FROM work_queue WHERE execution_id = $1"      \
	" ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED),"                   \
	" d AS (DELETE FROM work_queue w USING h WHERE w.id = h.id"         \
	" RETURNING w.id, w.work_item)," PGB_SQL_TAKE_ITEMS PGB_SQL_TAKEN_COLS \
	" ORDER BY d.id"

#endif /* STATEFS_PGB_SQL_I_H */
