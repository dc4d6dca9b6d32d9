/*
 * pg_bench.c - the engine on PostgreSQL against raw libpq running the
 * same statements, in the same run.
 *
 * Usage: pg_bench [-n OPS] [-r ROUNDS] [-e] [-t THREADS]
 *   -n  operations per measurement (default 2000)
 *   -r  rounds; each number is the median over rounds (default 3)
 *   -e  encrypted stores (values sealed on the client)
 *   -t  the mix on THREADS threads at once, each on its own keys
 *       (default 1; raw gives each thread its own connection, the engine
 *       shares one handle, whose pool lends each thread a connection)
 * The server: $STATEFS_TEST_PG (scripts/with-pg starts one).
 *
 * For put, get, log append, counter add and push+pop it times, on stores
 * the engine created in schemas of their own (same tables, functions and
 * triggers):
 *   raw     the engine's own statements (core/pg/sql_i.h), prepared
 *           once, over libpq with binary parameters, in the same round
 *           trips the engine makes (an encrypted append's transaction and
 *           its id first, an encrypted push's ids first; sealed-size
 *           random values), with nothing else: no pool, no retries, no
 *           argument checks, no sealing, no list building;
 *   engine  the public API.
 * Raw and engine run in alternating blocks of 50 operations, so that both
 * see the same load. It prints microseconds per operation as a thread
 * sees it (median of the rounds) and raw/engine (the median of the
 * rounds' ratios; the target: >= 0.8). It asserts nothing: timings on a
 * shared machine are noisy (docs/postgres.md).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#include "pg/pg_i.h"
#include "pg/sql_i.h"
#include "statefs.h"

#define KEYS 1000
#define VLEN 100
#define OVERHEAD 41

static int ops = 2000, rounds = 3, enc, threads = 1;
static const char *server;
static sfs_key *key;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "pg_bench: %s: %s\n", what, detail);
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc != SFS_OK)
		die(what, sfs_errdetail());
}

static char *db_of(const char *schema)
{
	char *db;

	if (asprintf(&db, "%s schema=%s", server, schema) < 0)
		die("asprintf", "out of memory");
	return db;
}

static sfs_store *open_store(const char *schema)
{
	sfs_config o;
	sfs_store *s;
	char *db = db_of(schema);

	memset(&o, 0, sizeof(o));
	o.db = db;
	o.flags = SFS_OPEN_CREATE | (enc ? 0 : SFS_OPEN_PLAINTEXT);
	o.key = enc ? key : NULL;
	check(sfs_store_open(&o, &s, NULL), "open");
	free(db);
	return s;
}

static void drop(const char *schema)
{
	PGconn *c = PQconnectdb(server);
	char sql[200];

	snprintf(sql, sizeof(sql), "SET client_min_messages = warning;"
	         " DROP SCHEMA IF EXISTS %s CASCADE", schema);
	PQclear(PQexec(c, sql));
	PQfinish(c);
}

/* --- raw libpq ---------------------------------------------------------------- */

typedef struct raw {
	PGconn *c;
	int prepared[16];
} raw;

static void raw_open(raw *r, const char *schema)
{
	char sql[200];
	PGresult *res;

	memset(r, 0, sizeof(*r));
	r->c = PQconnectdb(server);
	if (PQstatus(r->c) != CONNECTION_OK)
		die("connect", PQerrorMessage(r->c));
	snprintf(sql, sizeof(sql), "SET search_path TO %s", schema);
	res = PQexec(r->c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(sql, PQerrorMessage(r->c));
	PQclear(res);
}

static void raw_text(raw *r, const char *sql)
{
	PGresult *res = PQexec(r->c, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(sql, PQerrorMessage(r->c));
	PQclear(res);
}

/* Statement slot i, prepared on first use; returns the result. */
static PGresult *raw_run(raw *r, int i, const char *sql, pgp *p)
{
	char name[16];
	PGresult *res;
	ExecStatusType s;

	snprintf(name, sizeof(name), "b%d", i);
	if (!r->prepared[i]) {
		res = PQprepare(r->c, name, sql, p->n, p->types);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die(sql, PQerrorMessage(r->c));
		PQclear(res);
		r->prepared[i] = 1;
	}
	res = PQexecPrepared(r->c, name, p->n, p->vals, p->lens, p->fmts, 1);
	s = PQresultStatus(res);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		die(sql, PQerrorMessage(r->c));
	pgp_free(p);
	memset(p, 0, sizeof(*p)); /* ready for the next statement */
	return res;
}

static void keyname(char *k, int t, int i)
{
	snprintf(k, 24, "key-%02d-%06d", t, i % KEYS);
}

/* Each write stores different bytes; encrypted raw values have a sealed
 * value's size. */
static void val(unsigned char *v, int i)
{
	memcpy(v, &i, sizeof(i));
}

static size_t vlen(void)
{
	return VLEN + (enc ? OVERHEAD : 0);
}

static void key3(pgp *p, const char *ns, const char *k)
{
	pgp_bytes(p, sfs_str("scope"));
	pgp_bytes(p, sfs_str(ns));
	pgp_bytes(p, sfs_str(k));
}

enum { OP_PUT, OP_GET, OP_APPEND, OP_COUNTER, OP_PUSHPOP, N_OPS };
static const char *const op_names[N_OPS] = { "put", "get", "append",
	"counter add", "push+pop" };

static void raw_op(raw *r, int op, int t, int i)
{
	unsigned char v[VLEN + OVERHEAD] = { 0 };
	char k[24];
	pgp p = PGP_INIT;
	PGresult *res;
	sfs_slice it;
	int64_t id;

	val(v, i);
	switch (op) {
	case OP_PUT:
		keyname(k, t, i);
		key3(&p, "ns", k);
		pgp_bytes(&p, sfs_bytes(v, vlen()));
		pgp_null_i64(&p);
		PQclear(raw_run(r, 0, PGB_SQL_PUT, &p));
		break;
	case OP_GET:
		keyname(k, t, i);
		key3(&p, "ns", k);
		res = raw_run(r, 1, PGB_SQL_GET, &p);
		if (PQntuples(res) != 1)
			die("get", "no row");
		/* the caller gets its own copy, as from the engine */
		memcpy(v, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0));
		PQclear(res);
		break;
	case OP_APPEND:
		keyname(k, t, i % 10);
		if (!enc) {
			key3(&p, "log", k);
			pgp_bytes(&p, sfs_bytes(v, vlen()));
			pgp_i64(&p, 1000 + t * 10 + i % 10);
			pgp_null_i64(&p);
			PQclear(raw_run(r, 2, PGB_SQL_APPEND, &p));
			break;
		}
		raw_text(r, "BEGIN");
		pgp_i64(&p, 1000 + t * 10 + i % 10);
		res = raw_run(r, 3, PGB_SQL_APPEND_ID, &p);
		id = pgr_i64(res, 0, 0);
		PQclear(res);
		key3(&p, "log", k);
		pgp_bytes(&p, sfs_bytes(v, vlen()));
		pgp_i64(&p, id);
		pgp_null_i64(&p);
		PQclear(raw_run(r, 4, PGB_SQL_APPEND_SEALED, &p));
		raw_text(r, "COMMIT");
		break;
	case OP_COUNTER:
		keyname(k, t, i % 100);
		key3(&p, "c", k);
		pgp_i64(&p, 1);
		pgp_null_i64(&p);
		PQclear(raw_run(r, 5, PGB_SQL_CTR_ADD, &p));
		break;
	case OP_PUSHPOP:
		snprintf(k, sizeof(k), "q%02d", t);
		it = sfs_bytes(v, vlen());
		pgp_bytes(&p, sfs_str(k));
		/* the queue's lock: any number (the engine's is a hash) */
		if (enc) {
			pgp q = PGP_INIT;

			raw_text(r, "BEGIN");
			pgp_i64(&q, 1);
			pgp_i64(&q, 2000 + t);
			res = raw_run(r, 6, PGB_SQL_PUSH_IDS, &q);
			id = pgr_i64(res, 0, 0);
			PQclear(res);
			pgp_i64_array(&p, &id, NULL, 1);
		} else {
			pgp_i64_array(&p, NULL, NULL, 0);
		}
		pgp_bytes_array(&p, &it, 1);
		pgp_null_i64(&p);
		pgp_i64(&p, 2000 + t);
		PQclear(raw_run(r, 7, PGB_SQL_PUSH, &p));
		if (enc)
			raw_text(r, "COMMIT");
		pgp_bytes(&p, sfs_str(k));
		pgp_i64(&p, 1);
		res = raw_run(r, 8, PGB_SQL_POP, &p);
		if (PQntuples(res) != 1)
			die("pop", "no item");
		memcpy(v, PQgetvalue(res, 0, 1), (size_t)PQgetlength(res, 0, 1));
		PQclear(res);
		break;
	}
}

/* --- the engine --------------------------------------------------------------- */

static void engine_op(sfs_store *s, int op, int t, int i)
{
	unsigned char v[VLEN] = { 0 };
	char k[24];
	sfs_buf b;
	sfs_list l;
	sfs_slice it;
	int64_t n;

	val(v, i);
	switch (op) {
	case OP_PUT:
		keyname(k, t, i);
		check(sfs_kv_put(s, sfs_str("scope"), sfs_str("ns"), sfs_str(k),
		                 sfs_bytes(v, VLEN)), "put");
		break;
	case OP_GET:
		keyname(k, t, i);
		check(sfs_kv_get(s, sfs_str("scope"), sfs_str("ns"), sfs_str(k), &b), "get");
		sfs_buf_free(&b);
		break;
	case OP_APPEND:
		keyname(k, t, i % 10);
		check(sfs_log_append(s, sfs_str("scope"), sfs_str("log"), sfs_str(k),
		                     sfs_bytes(v, VLEN), NULL), "append");
		break;
	case OP_COUNTER:
		keyname(k, t, i % 100);
		check(sfs_counter_add(s, sfs_str("scope"), sfs_str("c"), sfs_str(k), 1, &n),
		      "counter add");
		break;
	case OP_PUSHPOP:
		snprintf(k, sizeof(k), "q%02d", t);
		it = sfs_bytes(v, VLEN);
		check(sfs_queue_push(s, sfs_str(k), &it, 1, NULL), "push");
		check(sfs_queue_pop(s, sfs_str(k), 1, &l), "pop");
		sfs_list_free(&l);
		break;
	}
}

/* --- timing ------------------------------------------------------------------- */

/* Raw and engine run in alternating blocks of BLOCK operations (which of
 * the two goes first alternates too), each block timed on its own: on a
 * shared machine the load comes and goes within seconds, and both sides
 * of a ratio must see the same load. */
#define BLOCK 50

typedef struct job {
	int op, t;
	sfs_store *s;
	raw *r;
	double secs[2]; /* raw, engine */
} job;

static void *run_job(void *arg)
{
	job *j = arg;

	for (int b = 0; b * BLOCK < ops; b++) {
		for (int pass = 0; pass < 2; pass++) {
			int engine = (b + pass) % 2;
			double t0 = now();

			for (int i = b * BLOCK; i < ops && i < (b + 1) * BLOCK; i++) {
				if (engine)
					engine_op(j->s, j->op, j->t, i);
				else
					raw_op(j->r, j->op, j->t, i);
			}
			j->secs[engine] += now() - t0;
		}
	}
	return NULL;
}

/* Seconds per operation, as each thread saw them, raw and engine. */
static void timed(int op, sfs_store *s, raw *r, double *raw_s, double *eng_s)
{
	pthread_t th[64];
	job j[64];

	*raw_s = *eng_s = 0;
	for (int t = 0; t < threads; t++) {
		j[t] = (job){ op, t, s, &r[t], { 0, 0 } };
		if (pthread_create(&th[t], NULL, run_job, &j[t]) != 0)
			die("pthread_create", "failed");
	}
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		*raw_s += j[t].secs[0] / ops / threads;
		*eng_s += j[t].secs[1] / ops / threads;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	double res[N_OPS][2][32];
	char sraw[64], seng[64];
	raw r[64];
	sfs_store *s;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:et:")) != -1) {
		switch (opt) {
		case 'n': ops = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'e': enc = 1; break;
		case 't': threads = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: pg_bench [-n OPS] [-r ROUNDS] [-e]"
			        " [-t THREADS]\n");
			return 2;
		}
	}
	if (ops < 1 || rounds < 1 || rounds > 32 || threads < 1 || threads > 64)
		die("arguments", "out of range");
	server = getenv("STATEFS_TEST_PG");
	if (!server || !*server) {
		printf("pg_bench: no server (STATEFS_TEST_PG; scripts/with-pg"
		       " starts one): skipped\n");
		return 77;
	}
	if (enc)
		check(sfs_key_generate(&key), "key");
	snprintf(sraw, sizeof(sraw), "bench_raw_%ld", (long)getpid());
	snprintf(seng, sizeof(seng), "bench_eng_%ld", (long)getpid());
	for (int round = 0; round < rounds; round++) {
		drop(sraw);
		drop(seng);
		sfs_store_close(open_store(sraw)); /* the engine's schema */
		s = open_store(seng);
		for (int t = 0; t < threads; t++)
			raw_open(&r[t], sraw);
		for (int op = 0; op < N_OPS; op++)
			timed(op, s, r, &res[op][0][round], &res[op][1][round]);
		for (int t = 0; t < threads; t++)
			PQfinish(r[t].c);
		sfs_store_close(s);
	}
	drop(sraw);
	drop(seng);
	printf("statefs pg_bench: %d ops x %d rounds x %d thread(s), %s,"
	       " %d-byte values\n", ops, rounds, threads,
	       enc ? "encrypted" : "plaintext", VLEN);
	printf("%-12s %9s %9s %10s\n", "operation", "raw us", "eng us",
	       "raw/engine");
	for (int op = 0; op < N_OPS; op++) {
		double ratio[32];

		for (int round = 0; round < rounds; round++)
			ratio[round] = res[op][0][round] / res[op][1][round];
		printf("%-12s %9.1f %9.1f %10.2f\n", op_names[op],
		       median(res[op][0], rounds) * 1e6,
		       median(res[op][1], rounds) * 1e6, median(ratio, rounds));
	}
	sfs_key_destroy(key);
	return 0;
}
