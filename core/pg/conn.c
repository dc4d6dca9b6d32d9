/*
 * conn.c - the connection string of a PostgreSQL store, and one
 * connection's setup.
 *
 * A store on PostgreSQL is named by what libpq accepts, a
 * postgresql:// (or postgres://) URI or a key=value string, plus two
 * keywords of ours: schema= (the store's schema, default "statefs") and
 * pool= (how many connections a handle may open, default 10). They are
 * taken out before libpq sees the string, in whichever form it was
 * written. Everything else is libpq's, so its environment and files work
 * as they do for psql: PGHOST, PGUSER, PGSERVICE with pg_service.conf,
 * ~/.pgpass, PGSSLMODE and the rest.
 *
 * The string may hold a password. It is never shown: the name the store
 * goes by in messages and sfs_store_path (display) is rebuilt from
 * libpq's own parse with every field libpq marks secret left out.
 * Whether a password written in argv is refused is the config layer's
 * decision (config.c), which knows where the string came from.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_i.h"

#define DEFAULT_SCHEMA "statefs"
#define MAX_POOL 100

/* libpq's connection keywords (PQconndefaults of PostgreSQL 18's libpq),
 * for telling a connection string from a path when libpq is not there. */
static const char *const libpq_keywords[] = {
	"service", "user", "password", "passfile", "channel_binding",
	"connect_timeout", "dbname", "host", "hostaddr", "port",
	"client_encoding", "options", "application_name",
	"fallback_application_name", "keepalives", "keepalives_idle",
	"keepalives_interval", "keepalives_count", "tcp_user_timeout",
	"sslmode", "sslnegotiation", "sslcompression", "sslcert", "sslkey",
	"sslkeylogfile", "sslcertmode", "sslpassword", "sslrootcert",
	"sslcrl", "sslcrldir", "sslsni", "requirepeer", "require_auth",
	"min_protocol_version", "max_protocol_version",
	"ssl_min_protocol_version", "ssl_max_protocol_version", "gssencmode",
	"krbsrvname", "gsslib", "gssdelegation", "scram_client_key",
	"scram_server_key", "oauth_issuer", "oauth_client_id",
	"oauth_client_secret", "oauth_scope", "replication",
	"target_session_attrs", "load_balance_hosts",
};

int pgb_is_db(const char *db)
{
	const char *p = db;
	size_t n;
	PQconninfoOption *opts;
	int known = 0;

	if (!db)
		return 0;
	if (!strncmp(db, "postgresql://", 13) || !strncmp(db, "postgres://", 11))
		return 1;
	/* key=value: the first word must be a keyword, of libpq or ours. A
	 * path never starts like that unless it is relative and named like
	 * one ("host=x"), which `./host=x` still reaches. */
	while (isspace((unsigned char)*p))
		p++;
	for (n = 0; isalnum((unsigned char)p[n]) || p[n] == '_'; n++)
		;
	if (n == 0)
		return 0;
	for (const char *q = p + n; ; q++) {
		if (*q == '=')
			break;
		if (!isspace((unsigned char)*q))
			return 0;
	}
	if ((n == 6 && !strncmp(p, "schema", 6)) ||
	    (n == 4 && !strncmp(p, "pool", 4)))
		return 1;
	/* Without libpq, its keywords as of PostgreSQL 18: a string that
	 * starts with one is a connection string, whose open then says that
	 * libpq is missing; any other name is a path, as it is with libpq
	 * (a file named a=b.db was refused for want of libpq). */
	if (pq_load() != SFS_OK) {
		sfs_err_clear();
		for (size_t i = 0; i < sizeof(libpq_keywords) /
		     sizeof(libpq_keywords[0]); i++)
			if (strlen(libpq_keywords[i]) == n &&
			    !strncmp(libpq_keywords[i], p, n))
				return 1;
		return 0;
	}
	opts = PQconndefaults();
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strlen(o->keyword) == n && !strncmp(o->keyword, p, n))
			known = 1;
	PQconninfoFree(opts);
	return known;
}

/* --- our keywords out of the string ----------------------------------------- */

typedef struct strb {
	char *p;
	size_t len, cap;
	int nomem;
} strb;

static void sb_add(strb *s, const char *p, size_t n)
{
	if (s->nomem)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 128;
		char *q;

		while (cap < s->len + n + 1)
			cap *= 2;
		q = realloc(s->p, cap);
		if (!q) {
			s->nomem = 1;
			return;
		}
		s->p = q;
		s->cap = cap;
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
	s->p[s->len] = '\0';
}

static void sb_str(strb *s, const char *p)
{
	sb_add(s, p, strlen(p));
}

/* One of our keywords and its value (a copy, unescaped). */
static int ours(const char *kw, size_t kn, char *val, pgb_target *t)
{
	char *end;

	if (kn == 6 && !strncmp(kw, "schema", 6)) {
		if (!*val || strlen(val) > 63) {
			free(val);
			return sfs_err(SFS_INVALID, "schema= needs a name of 1 to 63"
			               " bytes");
		}
		free(t->schema);
		t->schema = val;
		return SFS_OK;
	}
	t->pool = strtol(val, &end, 10);
	if (!*val || *end || t->pool < 1 || t->pool > MAX_POOL) {
		int st = sfs_err(SFS_INVALID, "pool=%s is not a number of"
		                 " connections from 1 to %d", val, MAX_POOL);
		free(val);
		return st;
	}
	free(val);
	return SFS_OK;
}

/* Percent-decodes a URI query value. */
static char *uri_decode(const char *p, size_t n)
{
	char *v = malloc(n + 1), *o = v;

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '%' && i + 2 < n &&
		    isxdigit((unsigned char)p[i + 1]) &&
		    isxdigit((unsigned char)p[i + 2])) {
			char hx[3] = { p[i + 1], p[i + 2], 0 };
			*o++ = (char)strtol(hx, NULL, 16);
			i += 2;
		} else {
			*o++ = p[i];
		}
	}
	*o = '\0';
	return v;
}

/* A URI: schema= and pool= leave the query string. */
static int strip_uri(const char *db, pgb_target *t, strb *out)
{
	const char *q = strchr(db, '?'), *p;
	int first = 1, st;

	if (!q) {
		sb_str(out, db);
		return SFS_OK;
	}
	sb_add(out, db, (size_t)(q - db));
	for (p = q + 1; *p; ) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		size_t kn = eq ? (size_t)(eq - p) : n;

		if (eq && ((kn == 6 && !strncmp(p, "schema", 6)) ||
		           (kn == 4 && !strncmp(p, "pool", 4)))) {
			char *val = uri_decode(eq + 1, n - kn - 1);

			if (!val)
				return sfs_err(SFS_NOMEM, "parsing the db string");
			st = ours(p, kn, val, t);
			if (st != SFS_OK)
				return st;
		} else if (n) {
			sb_add(out, first ? "?" : "&", 1);
			sb_add(out, p, n);
			first = 0;
		}
		p += n;
		if (*p == '&')
			p++;
	}
	return SFS_OK;
}

/* key=value: libpq's syntax (spaces around '=', values bare or in single
 * quotes with \' and \\); our pairs are dropped, the others copied as
 * written. */
static int strip_kv(const char *db, pgb_target *t, strb *out)
{
	const char *p = db;

	for (;;) {
		const char *kw, *vs;
		size_t kn;
		char *val, *o;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			return SFS_OK;
		kw = p;
		while (*p && *p != '=' && !isspace((unsigned char)*p))
			p++;
		kn = (size_t)(p - kw);
		while (isspace((unsigned char)*p))
			p++;
		if (*p != '=')
			return sfs_err(SFS_INVALID, "the db string has \"%.*s\""
			               " without \"=\" after it", (int)kn, kw);
		p++;
		while (isspace((unsigned char)*p))
			p++;
		vs = p;
		val = malloc(strlen(p) + 1);
		if (!val)
			return sfs_err(SFS_NOMEM, "parsing the db string");
		o = val;
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++) {
				if (*p == '\\' && p[1])
					p++;
				*o++ = *p;
			}
			if (*p != '\'') {
				free(val);
				return sfs_err(SFS_INVALID, "the db string has an"
				               " unterminated quoted value");
			}
			p++;
		} else {
			for (; *p && !isspace((unsigned char)*p); p++) {
				if (*p == '\\' && p[1])
					p++;
				*o++ = *p;
			}
		}
		*o = '\0';
		if ((kn == 6 && !strncmp(kw, "schema", 6)) ||
		    (kn == 4 && !strncmp(kw, "pool", 4))) {
			int st = ours(kw, kn, val, t);

			if (st != SFS_OK)
				return st;
			continue;
		}
		free(val);
		if (out->len)
			sb_add(out, " ", 1);
		sb_add(out, kw, kn);
		sb_add(out, "=", 1);
		sb_add(out, vs, (size_t)(p - vs));
	}
}

/* A value as libpq's key=value syntax wants it. */
static void kv_value(strb *s, const char *v)
{
	int plain = *v != '\0';

	for (const char *p = v; *p; p++)
		if (isspace((unsigned char)*p) || *p == '\'' || *p == '\\')
			plain = 0;
	if (plain) {
		sb_str(s, v);
		return;
	}
	sb_add(s, "'", 1);
	for (const char *p = v; *p; p++) {
		if (*p == '\'' || *p == '\\')
			sb_add(s, "\\", 1);
		sb_add(s, p, 1);
	}
	sb_add(s, "'", 1);
}

/* --- libpq's parse errors without the password ----------------------------- */

/* Whether msg holds the secret of n bytes (n > 0). */
static int holds(const char *msg, const char *sec, size_t n)
{
	for (const char *p = msg; (p = strchr(p, *sec)); p++)
		if (!strncmp(p, sec, n))
			return 1;
	return 0;
}

/* Whether libpq's message about a URI it could not parse shows the
 * password: libpq quotes what it could not read ("invalid
 * percent-encoded token: \"...\"", the whole URI after a bad IPv6
 * address), and that can be the password of the userinfo or of a
 * password= parameter, as written or decoded. */
static int shows_password(const char *db, const char *msg)
{
	const char *p = strstr(db, "://"), *at = NULL, *colon;
	size_t end;
	int shown = 0;

	if (!p)
		return 0;
	p += 3;
	end = strcspn(p, "/?");
	for (size_t i = 0; i < end; i++)
		if (p[i] == '@')
			at = p + i;
	if (at && (colon = memchr(p, ':', (size_t)(at - p))) && at > colon + 1) {
		char *dec = uri_decode(colon + 1, (size_t)(at - colon - 1));

		shown = holds(msg, colon + 1, (size_t)(at - colon - 1)) ||
		        !dec || (*dec && holds(msg, dec, strlen(dec)));
		free(dec);
	}
	for (p = strchr(p, '?'); p && !shown; p = strchr(p + 1, '&')) {
		const char *v = p + 1;
		size_t n;
		char *dec;

		if (strncmp(v, "password=", 9))
			continue;
		v += 9;
		n = strcspn(v, "&");
		if (!n)
			continue;
		dec = uri_decode(v, n);
		shown = holds(msg, v, n) || !dec ||
		        (*dec && holds(msg, dec, strlen(dec)));
		free(dec);
	}
	return shown;
}

int pgb_target_parse(const char *db, pgb_target *t)
{
	PQconninfoOption *opts = NULL;
	char *perr = NULL;
	strb cs = { 0 }, ds = { 0 };
	int st, uri = !strncmp(db, "postgresql://", 13) ||
	              !strncmp(db, "postgres://", 11);

	memset(t, 0, sizeof(*t));
	if ((st = pq_load()) != SFS_OK)
		return st;
	st = uri ? strip_uri(db, t, &cs) : strip_kv(db, t, &cs);
	if (st != SFS_OK)
		goto fail;
	if (cs.nomem || (!cs.p && (sb_str(&cs, ""), cs.nomem))) {
		st = sfs_err(SFS_NOMEM, "parsing the db string");
		goto fail;
	}
	opts = PQconninfoParse(cs.p, &perr);
	if (!opts) {
		size_t n = perr ? strlen(perr) : 0;

		while (n && (perr[n - 1] == '\n' || perr[n - 1] == ' '))
			perr[--n] = '\0';
		if (perr && uri && shows_password(db, perr))
			st = sfs_err(SFS_INVALID, "the db string is not a"
			             " PostgreSQL connection string (libpq's"
			             " reason is not shown: it quotes the"
			             " password); check the URI's syntax and its"
			             " percent-encoding (%%XX)");
		else
			st = sfs_err(perr ? SFS_INVALID : SFS_NOMEM, "the db"
			             " string is not a PostgreSQL connection"
			             " string: %s", perr ? perr : "out of memory");
		if (perr)
			memset(perr, 0, n);
		PQfreemem(perr);
		goto fail;
	}
	/* The name people see: what was given, minus secrets. */
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "connect_timeout") ||
		    !strcmp(o->keyword, "service"))
			t->has_timeout = 1;
		if (o->dispchar && o->dispchar[0] == '*') {
			if (*o->val)
				t->has_password = 1;
			continue;
		}
		if (ds.len)
			sb_add(&ds, " ", 1);
		sb_str(&ds, o->keyword);
		sb_add(&ds, "=", 1);
		kv_value(&ds, o->val);
	}
	if (!t->schema && !(t->schema = strdup(DEFAULT_SCHEMA))) {
		st = sfs_err(SFS_NOMEM, "parsing the db string");
		goto fail;
	}
	if (ds.len)
		sb_add(&ds, " ", 1);
	sb_str(&ds, "schema=");
	kv_value(&ds, t->schema);
	if (ds.nomem) {
		st = sfs_err(SFS_NOMEM, "parsing the db string");
		goto fail;
	}
	PQconninfoFree(opts);
	t->conninfo = cs.p;
	t->display = ds.p;
	return SFS_OK;
fail:
	PQconninfoFree(opts);
	if (cs.p) {
		memset(cs.p, 0, cs.len); /* it may hold a password */
		free(cs.p);
	}
	free(ds.p);
	free(t->schema);
	memset(t, 0, sizeof(*t));
	return st;
}

void pgb_target_free(pgb_target *t)
{
	if (t->conninfo) {
		memset(t->conninfo, 0, strlen(t->conninfo));
		free(t->conninfo);
	}
	free(t->display);
	free(t->schema);
	memset(t, 0, sizeof(*t));
}

int pgb_name(const char *db, char **out)
{
	pgb_target t;
	int st = pgb_target_parse(db, &t);

	if (st != SFS_OK)
		return st;
	*out = t.display;
	t.display = NULL;
	pgb_target_free(&t);
	return SFS_OK;
}

int pgb_db_has_password(const char *db, int *has)
{
	pgb_target t;
	int st = pgb_target_parse(db, &t);

	if (st == SFS_OK) {
		*has = t.has_password;
		pgb_target_free(&t);
	}
	return st;
}

/* --- one connection --------------------------------------------------------- */

/* libpq's message without its trailing newline, into a sentence. */
static int conn_fail(sfs_backend *b, PGconn *conn, int *status)
{
	const char *m = conn ? PQerrorMessage(conn) : "out of memory";
	size_t n = strlen(m);

	while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
		n--;
	*status = sfs_err(conn ? SFS_IO : SFS_NOMEM, "cannot connect to %s: %.*s",
	                  b->display, (int)n, m);
	return *status;
}

/* The server's notices (NOTICE, WARNING) go to the engine's logger, never
 * to stderr: the engine is a library. */
static void on_notice(void *arg, const char *msg)
{
	size_t n = strlen(msg);

	(void)arg;
	while (n && msg[n - 1] == '\n')
		n--;
	sfs_log(LOG_DEBUG, "PostgreSQL: %.*s", (int)n, msg);
}

/* Without a connect_timeout libpq waits for a server that accepts and
 * never answers, or a host that drops packets, as long as TCP does
 * (minutes; forever on a socket): ours, when the string, a service and the
 * environment give none, is the busy timeout, the longest any call waits
 * for the server. dbname comes after it, so the string's own would win.
 * (A connection started, pgb_connect_start, ignores it: its caller
 * bounds the wait.) */
static const char *const conn_kw[] = { "connect_timeout", "dbname",
	"fallback_application_name", NULL };

PGconn *pgb_connect_start(sfs_backend *b)
{
	const char *val[] = { b->connect_timeout, b->conninfo, "statefs",
		NULL };
	int first = b->connect_timeout[0] ? 0 : 1;
	PGconn *conn = PQconnectStartParams(conn_kw + first, val + first, 1);

	if (conn)
		PQsetNoticeProcessor(conn, on_notice, NULL);
	return conn;
}

PGconn *pgb_connect(sfs_backend *b, const char *schema, int *status)
{
	const char *val[] = { b->connect_timeout, b->conninfo, "statefs",
		NULL };
	int first = b->connect_timeout[0] ? 0 : 1;
	char sql[256];
	PGconn *conn = PQconnectdbParams(conn_kw + first, val + first, 1);
	PGresult *r;

	if (!conn || PQstatus(conn) != CONNECTION_OK) {
		conn_fail(b, conn, status);
		PQfinish(conn);
		return NULL;
	}
	PQsetNoticeProcessor(conn, on_notice, NULL);
	/* The store's tables and functions by their plain names; waits for
	 * another client's lock bounded as SQLite's busy timeout bounds
	 * them; a read-only handle cannot write by mistake. A writable
	 * handle leaves default_transaction_read_only as the server has it:
	 * a database or role an administrator made read-only stays so (its
	 * writes fail, SFS_READONLY), never written behind their back. */
	snprintf(sql, sizeof(sql), "SET search_path TO %s;"
	         " SET lock_timeout = %d%s", schema ? schema : "pg_catalog",
	         b->busy_ms, b->readonly ? "; SET default_transaction_read_only"
	         " = on" : "");
	r = PQexec(conn, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);

		*status = sfs_err(SFS_IO, "setting up a connection to %s: %s",
		                  b->display, m ? m : PQerrorMessage(conn));
		PQclear(r);
		PQfinish(conn);
		return NULL;
	}
	PQclear(r);
	return conn;
}
