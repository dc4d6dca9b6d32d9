/*
 * cmd_transfer.c - export and import: the whole store as JSON Lines.
 *
 * Format, version 2 (docs/statectl.md has the full description):
 *   line 1: {"format":"statefs-export","version":2}
 *   then one object per row, in the engine's export order:
 *   {"family":"kv","scope":..,"ns":..,"key":..,"value":..,"mtime_ns":..}
 *   families kv counter log queue dir, and the claim tables' claim
 *   inflight dead policy (with "deliveries"; see docs/statectl.md)
 *   last line: {"end":"statefs-export","rows":N}, written only once every
 *   row is out, so that an export cut anywhere (a killed export into a
 *   pipe, a partial copy) is refused rather than imported in part.
 *   Version 1, the same without the end row, is still read.
 * Byte fields (scope, ns, key, value) are JSON strings when the bytes are
 * valid UTF-8, else base64 under the same name with "_b64" appended. id (log
 * and queue rows) and n (counters) are integers. A field is left out when
 * the row does not have it; the header has no date, so exporting the same
 * state twice gives the same bytes, which is what the round-trip test and
 * `diff` between two exports rely on.
 *
 * An export holds the store's contents decrypted: a file written by
 * `export FILE` is created with mode 0600, and never overwrites.
 *
 * Import is one engine transaction: any bad line aborts it and the store is
 * unchanged; rows that already exist identically change nothing, so running
 * the same import twice is harmless. Unknown fields are refused rather than
 * dropped, so that a newer export is never half-read.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cli_i.h"

#define EXPORT_FORMAT "statefs-export"
#define EXPORT_VERSION 2
#define EXPORT_VERSION_NO_END 1  /* the older version read: no end row */

/* The fields a row may have besides "family" and "scope" (docs/statectl.md,
 * "Export format"); import refuses the others rather than drop them. */
enum {
	F_NS = 1 << 0, F_KEY = 1 << 1, F_ID = 1 << 2, F_N = 1 << 3,
	F_VALUE = 1 << 4, F_MTIME = 1 << 5, F_DELIVERIES = 1 << 6,
};

static const struct {
	const char *name;
	int mask;
} row_fields[] = {
	{ "ns", F_NS }, { "ns_b64", F_NS }, { "key", F_KEY },
	{ "key_b64", F_KEY }, { "id", F_ID }, { "n", F_N },
	{ "value", F_VALUE }, { "value_b64", F_VALUE },
	{ "mtime_ns", F_MTIME }, { "deliveries", F_DELIVERIES },
};

static const struct {
	const char *name;
	sfs_family fam;
	int fields;
} families[] = {
	{ "kv", SFS_FAM_KV, F_NS | F_KEY | F_VALUE | F_MTIME },
	{ "counter", SFS_FAM_COUNTER, F_NS | F_KEY | F_N | F_MTIME },
	{ "log", SFS_FAM_LOG, F_NS | F_KEY | F_ID | F_VALUE | F_MTIME },
	{ "queue", SFS_FAM_QUEUE, F_ID | F_VALUE | F_MTIME | F_DELIVERIES },
	{ "dir", SFS_FAM_DIR, F_NS | F_N },
	{ "claim", SFS_FAM_CLAIM, F_ID | F_N | F_MTIME },
	{ "inflight", SFS_FAM_INFLIGHT,
	  F_ID | F_N | F_VALUE | F_MTIME | F_DELIVERIES },
	{ "dead", SFS_FAM_DEAD, F_KEY | F_ID | F_VALUE | F_MTIME | F_DELIVERIES },
	{ "policy", SFS_FAM_POLICY, F_N | F_DELIVERIES },
	{ "seq", SFS_FAM_SEQ, F_ID },
};

static const char *family_name(sfs_family f)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (families[i].fam == f)
			return families[i].name;
	return NULL;
}

/* Sets a byte field; for the families where the field always exists, a
 * NULL pointer is an empty string. */
static void set_field(json_t *o, const char *name, sfs_slice s, int always)
{
	if (s.ptr)
		cli_json_set_bytes(o, name, s.ptr, s.len);
	else if (always)
		cli_json_set_bytes(o, name, "", 0);
}

/* Format version 1 writes several fields of a row in one integer, "n" (a
 * counter's value, a directory's family, a claim's lease end, an
 * in-flight item's claim, a policy's time-to-live), a dead letter's reason
 * as "key" and a policy's delivery limit as "deliveries". */
static int64_t row_n(const sfs_row *r)
{
	switch (r->family) {
	case SFS_FAM_COUNTER: return r->counter;
	case SFS_FAM_DIR: return (int64_t)r->dir_family;
	case SFS_FAM_CLAIM: return r->lease_until_ns;
	case SFS_FAM_INFLIGHT: return r->claim_id;
	case SFS_FAM_POLICY: return r->ttl_ms;
	default: return 0;
	}
}

/* Sets the field "n" carries. A dir row's family is an enum: an n outside
 * the four families is refused here, before the cast would wrap it (2^32+1
 * is 1 as an int) into one the engine accepts. */
static int row_set_n(sfs_row *r, int64_t n, const char **err)
{
	static char msg[160];

	switch (r->family) {
	case SFS_FAM_COUNTER: r->counter = n; break;
	case SFS_FAM_DIR:
		if (n < SFS_FAM_KV || n > SFS_FAM_QUEUE) {
			snprintf(msg, sizeof(msg), "a directory row's family "
			         "is %lld, not key/value (1), counter (2), log "
			         "(3) or queue (4)", (long long)n);
			*err = msg;
			return -1;
		}
		r->dir_family = (sfs_family)n;
		break;
	case SFS_FAM_CLAIM: r->lease_until_ns = n; break;
	case SFS_FAM_INFLIGHT: r->claim_id = n; break;
	case SFS_FAM_POLICY: r->ttl_ms = n; break;
	default: break;
	}
	return 0;
}

static json_t *row_to_json(const sfs_row *r)
{
	const char *fam = family_name(r->family);
	int named = r->family == SFS_FAM_KV || r->family == SFS_FAM_COUNTER ||
	            r->family == SFS_FAM_LOG;
	json_t *o;

	if (!fam)
		return NULL;
	o = json_object();
	json_object_set_new(o, "family", json_string(fam));
	set_field(o, "scope", r->scope, 1);
	set_field(o, "ns", r->ns, named);
	set_field(o, "key", r->family == SFS_FAM_DEAD ? r->reason : r->key,
	          named);
	if (r->family == SFS_FAM_LOG || r->family == SFS_FAM_QUEUE || r->id)
		json_object_set_new(o, "id", json_integer(r->id));
	if (r->family == SFS_FAM_COUNTER || row_n(r))
		json_object_set_new(o, "n", json_integer(row_n(r)));
	set_field(o, "value", r->value, r->family == SFS_FAM_KV ||
	          r->family == SFS_FAM_LOG || r->family == SFS_FAM_QUEUE ||
	          r->family == SFS_FAM_INFLIGHT || r->family == SFS_FAM_DEAD);
	/* 0 unknown: left out; a value given the epoch: 0 (import reads
	 * it back as that) */
	if (r->mtime_ns)
		json_object_set_new(o, "mtime_ns", json_integer(
		        r->family == SFS_FAM_KV && r->mtime_ns == SFS_MTIME_EPOCH
		        ? 0 : r->mtime_ns));
	if (r->family == SFS_FAM_POLICY ? r->max_deliveries : r->deliveries)
		json_object_set_new(o, "deliveries", json_integer(
		        r->family == SFS_FAM_POLICY ? r->max_deliveries
		                                    : r->deliveries));
	return o;
}

/* What export FILE and import print with --json. */
static json_t *json_path_rows(const char *path, uint64_t rows)
{
	json_t *o = cli_json_path_object("path", path);

	json_object_set_new(o, "rows", json_integer((json_int_t)rows));
	return o;
}

typedef struct export_ctx {
	FILE *out;
	uint64_t rows;
	int bad_family;          /* a family this statectl does not know */
	int write_error;         /* errno of a failed write */
} export_ctx;

static int export_row(const sfs_row *row, void *ctx)
{
	export_ctx *x = ctx;
	json_t *o = row_to_json(row);

	if (!o) {
		x->bad_family = (int)row->family;
		return -1;
	}
	if (cli_json_dumpf(o, x->out, JSON_COMPACT) < 0 || fputc('\n', x->out) == EOF) {
		x->write_error = errno ? errno : EIO;
		json_decref(o);
		return -1;
	}
	json_decref(o);
	x->rows++;
	return 0;
}

/* The export's file: an unnamed file (O_TMPFILE) in FILE's directory,
 * given its name only once it is whole (export_link), so that an export
 * that dies (SIGKILL, a crash, SIGPIPE from a progress bar's reader gone)
 * leaves no half-written FILE that would import as a part of the store.
 * Where the file system has no unnamed files, FILE itself, as before.
 * *named is 1 then. Returns the descriptor, or -1 with errno. */
static int export_create(const char *file, int *named)
{
	char *copy = cli_xstrdup(file), *dir = dirname(copy);
	struct stat sb;
	int fd;

	*named = 0;
	if (lstat(file, &sb) == 0) {
		free(copy);
		errno = EEXIST;
		return -1;
	}
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	free(copy);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR &&
	                errno != EINVAL))
		return fd;
	*named = 1;
	return open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* Gives the whole export its name, never over a file that exists. */
static int export_link(int fd, const char *file)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, file, AT_SYMLINK_FOLLOW);
}

/* Makes a new name in file's directory durable. */
static int fsync_dir_of(const char *file)
{
	char *copy = cli_xstrdup(file);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 ? -1 : fsync(fd), saverr = errno;

	if (fd >= 0)
		close(fd);
	free(copy);
	errno = saverr;
	return rc;
}

/* export [FILE], - for stdout */
int cmd_export(cli *c, cli_args *a)
{
	sfs_store *s = NULL;
	export_ctx x;
	cli_progress p;
	const char *file = a->npos && strcmp(a->pos[0], "-") ? a->pos[0] : NULL;
	int rc, st, fd = -1, named = 1, linked = 0;

	memset(&x, 0, sizeof(x));
	x.out = stdout;
	if ((rc = cli_store_open(c, CLI_STORE_READ, &s)))
		return rc;
	/* from before FILE exists until it is whole or removed: a signal
	 * (Ctrl-C, SIGTERM, SIGHUP) cancels the export, which removes it */
	cli_progress_begin(&p, c, "export", "rows");
	if (file) {
		fd = export_create(file, &named);
		if (fd < 0) {
			rc = errno == EEXIST
			   ? cli_fail(c, CLI_EXIT_EXISTS, "%s exists (export never "
			              "overwrites a file)", file)
			   : cli_fail(c, CLI_EXIT_SYSTEM, "cannot create %s: %s", file,
			              strerror(errno));
			goto end;
		}
		x.out = fdopen(fd, "w");
		if (!x.out) {
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot write %s: %s", file,
			              strerror(errno));
			close(fd);
			if (named)
				unlink(file);
			goto end;
		}
	}
	fprintf(x.out, "{\"format\":\"%s\",\"version\":%d}\n", EXPORT_FORMAT,
	        EXPORT_VERSION);
	st = sfs_export(s, export_row, &x, cli_progress_cb, &p);
	if (st == SFS_OK && !x.write_error && !x.bad_family)
		fprintf(x.out, "{\"end\":\"%s\",\"rows\":%llu}\n",
		        EXPORT_FORMAT, (unsigned long long)x.rows);
	if (st == SFS_OK && (fflush(x.out) != 0 || ferror(x.out)))
		x.write_error = errno ? errno : EIO;
	if (st == SFS_OK && file && !x.write_error && fsync(fileno(x.out)) < 0)
		x.write_error = errno;
	if (x.write_error == EINTR && cli_interrupted()) {
		/* a signal while a row waited for a reader that does not
		 * read (a full pipe): the cancel it asks for, as through the
		 * progress callback; what stdout holds unwritten is dropped
		 * (flushed at the exit, it would wait for that reader again) */
		if (x.out == stdout)
			cli_out_discard();
		rc = cli_fail(c, CLI_EXIT_INTERRUPTED, "cannot export %s: "
		              "interrupted", c->opened);
	} else if (x.write_error)
		rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot write the export: %s",
		              strerror(x.write_error));
	else if (x.bad_family)
		rc = cli_fail(c, CLI_EXIT_INTERNAL, "the store has rows of family "
		              "%d, which this statectl cannot export", x.bad_family);
	else if (st != SFS_OK)
		rc = cli_fail_status(c, st, "cannot export %s", c->opened);
	if (file) {
		if (rc == CLI_EXIT_OK && !named) {
			if (export_link(fileno(x.out), file) == 0)
				linked = 1;
			else if (errno == EEXIST)
				rc = cli_fail(c, CLI_EXIT_EXISTS, "%s exists (export "
				              "never overwrites a file; it was made "
				              "while the export ran)", file);
			else
				rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot create %s: "
				              "%s", file, strerror(errno));
		}
		if (fclose(x.out) != 0 && rc == CLI_EXIT_OK)
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot write %s: %s", file,
			              strerror(errno));
		if (rc == CLI_EXIT_OK && linked && fsync_dir_of(file) < 0)
			rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot write %s: %s", file,
			              strerror(errno));
		if (rc != CLI_EXIT_OK && (named || linked))
			unlink(file);
	}
end:
	cli_progress_end(&p);
	if (file && rc == CLI_EXIT_OK) {
		c->writer = 1; /* FILE is made */
		if (c->json)
			rc = cli_out_json(json_path_rows(file, x.rows));
		else {
			char *hf = cli_human(file);

			printf("exported %llu rows to %s\n",
			       (unsigned long long)x.rows, hf);
			free(hf);
		}
	}
	sfs_store_close(s);
	return rc;
}

/* The decoded byte fields of one row, alive while the row is imported. */
typedef struct row_mem {
	void *p[4];
} row_mem;

static void row_mem_free(row_mem *m)
{
	for (int i = 0; i < 4; i++)
		free(m->p[i]);
}

static int int_field(json_t *o, const char *name, int64_t *out,
                     const char **err)
{
	json_t *v = json_object_get(o, name);

	if (!v)
		return 0;
	if (!json_is_integer(v)) {
		*err = "an id, n, mtime_ns or deliveries field is not an"
		       " integer";
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

/* Parses one export line into row; the bytes live in m. */
static int json_to_row(json_t *o, sfs_row *row, row_mem *m, const char **err)
{
	static const char *const bytes[] = { "scope", "ns", "key", "value" };
	static char msg[160];
	sfs_slice *slots[] = { &row->scope, &row->ns, &row->key, &row->value };
	const char *fam, *field;
	json_t *v;
	size_t n, f = 0;
	int64_t num = 0, deliveries = 0;
	int present, allowed = 0, mask;

	memset(row, 0, sizeof(*row));
	memset(m, 0, sizeof(*m));
	if (!json_is_object(o)) {
		*err = "not a JSON object";
		return -1;
	}
	fam = json_string_value(json_object_get(o, "family"));
	if (!fam) {
		*err = "no family";
		return -1;
	}
	row->family = 0;
	for (f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		if (strcmp(families[f].name, fam) == 0) {
			row->family = families[f].fam;
			allowed = families[f].fields;
			break;
		}
	}
	if (!row->family) {
		*err = "unknown family";
		return -1;
	}
	json_object_foreach(o, field, v) {
		if (!strcmp(field, "family") || !strcmp(field, "scope") ||
		    !strcmp(field, "scope_b64"))
			continue;
		mask = 0;
		for (size_t i = 0; i < sizeof(row_fields) / sizeof(row_fields[0]);
		     i++)
			if (strcmp(field, row_fields[i].name) == 0)
				mask = row_fields[i].mask;
		if (mask & allowed)
			continue;
		/* (field is a JSON key: UTF-8, any length) */
		if (!mask)
			snprintf(msg, sizeof(msg), "unknown field \"%.40s\" in a %s"
			         " row (an export from a newer statectl?)", field,
			         families[f].name);
		else
			snprintf(msg, sizeof(msg), "a %s row has no field \"%.40s\"",
			         families[f].name, field);
		*err = msg;
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		if (cli_json_get_bytes(o, bytes[i], &m->p[i], &n, &present, err) < 0)
			return -1;
		*slots[i] = present ? sfs_bytes(m->p[i], n) : SFS_NONE;
	}
	/* export writes a counter's value always, 0 included: a row
	 * without it (a filter that dropped the field) is not a 0, which
	 * would replace the counter's value with it */
	if (row->family == SFS_FAM_COUNTER && !json_object_get(o, "n")) {
		*err = "a counter row has no value (field \"n\")";
		return -1;
	}
	if (int_field(o, "id", &row->id, err) < 0 ||
	    int_field(o, "n", &num, err) < 0 ||
	    int_field(o, "mtime_ns", &row->mtime_ns, err) < 0 ||
	    int_field(o, "deliveries", &deliveries, err) < 0)
		return -1;
	/* a value's time given as 0 is the epoch (left out: unknown) */
	if (row->family == SFS_FAM_KV && row->mtime_ns == 0 &&
	    json_object_get(o, "mtime_ns"))
		row->mtime_ns = SFS_MTIME_EPOCH;
	if (row_set_n(row, num, err) < 0)
		return -1;
	if (row->family == SFS_FAM_POLICY)
		row->max_deliveries = deliveries;
	else
		row->deliveries = deliveries;
	if (row->family == SFS_FAM_DEAD) {
		row->reason = row->key;
		row->key = SFS_NONE;
	}
	return 0;
}

/* Checks the first line; *version is the export's format version. */
static int check_header(const cli *c, const char *line, size_t len,
                        int *version)
{
	json_error_t jerr;
	json_t *h = json_loadb(line, len, 0, &jerr);
	const char *fmt = json_string_value(json_object_get(h, "format"));
	json_t *ver = json_object_get(h, "version"), *v;
	const char *field;
	int rc = CLI_EXIT_OK;

	if (!fmt || strcmp(fmt, EXPORT_FORMAT) != 0 || !json_is_integer(ver))
		rc = cli_fail(c, CLI_EXIT_DATA, "line 1: not a statefs export "
		              "(it starts with a {\"format\":\"%s\",\"version\":N} "
		              "line)", EXPORT_FORMAT);
	else if (json_integer_value(ver) != EXPORT_VERSION &&
	         json_integer_value(ver) != EXPORT_VERSION_NO_END)
		rc = cli_fail(c, CLI_EXIT_DATA, "line 1: export format version "
		              "%lld; this statectl reads versions %d and %d",
		              (long long)json_integer_value(ver),
		              EXPORT_VERSION_NO_END, EXPORT_VERSION);
	else
		json_object_foreach(h, field, v) {
			if (strcmp(field, "format") != 0 &&
			    strcmp(field, "version") != 0) {
				rc = cli_fail(c, CLI_EXIT_DATA, "line 1: unknown field "
				              "\"%.40s\" in the header (an export from a "
				              "newer statectl?); nothing was imported",
				              field);
				break;
			}
		}
	if (rc == CLI_EXIT_OK)
		*version = (int)json_integer_value(ver);
	json_decref(h);
	return rc;
}

/* Checks the end row of a version 2 export, o, against the rows read. */
static int check_end(const cli *c, json_t *o, uint64_t lineno, uint64_t rows)
{
	const char *end = json_string_value(json_object_get(o, "end"));
	json_t *n = json_object_get(o, "rows");

	if (!end || strcmp(end, EXPORT_FORMAT) != 0 || !json_is_integer(n) ||
	    json_object_size(o) != 2)
		return cli_fail(c, CLI_EXIT_DATA, "line %llu: not an end row "
		                "({\"end\":\"%s\",\"rows\":N}); nothing was "
		                "imported", (unsigned long long)lineno,
		                EXPORT_FORMAT);
	if (json_integer_value(n) < 0 ||
	    (uint64_t)json_integer_value(n) != rows)
		return cli_fail(c, CLI_EXIT_DATA, "line %llu: the end row counts "
		                "%lld rows and the export has %llu; nothing was "
		                "imported", (unsigned long long)lineno,
		                (long long)json_integer_value(n),
		                (unsigned long long)rows);
	return CLI_EXIT_OK;
}

/* The longest line a row can take: every byte field at its largest (a
 * value of max_value, --max-value or the default, three names of
 * SFS_MAX_NAME), written in the longest JSON form, \u00XX escapes of six
 * bytes a byte (base64 is 4/3), plus field names and integers. About 385
 * MiB by default. */
#define IMPORT_LINE_MAX(max_value) \
	(6 * ((size_t)(max_value) + 3 * (size_t)SFS_MAX_NAME) + 4096)
#define IMPORT_READ_BLOCK (1u << 14)

/* The input of an import from a pipe, a FIFO or a terminal, copied whole
 * before the import begins. sfs_import holds the store's write lock from
 * its first row to its commit, so an import reading a pipe as it came held
 * every other writer of the store (the daemon, workers, statectl) for as
 * long as the producer took: a slow `zcat`, an `ssh`, a paused pipeline
 * made their writes wait and then fail busy after the busy timeout. The
 * copy is an unnamed file in $TMPDIR (else /tmp), sealed in 16 KiB chunks
 * with a key that lives only in this process (libsodium's secretstream):
 * an export holds the store decrypted, and that never reaches a disk
 * unasked. Lines are copied whole; where the input cannot be read to its
 * end (a line longer than any row, a read error) the copy stops after the
 * last whole line and the reading of the copy ends with that failure, so
 * what is reported, and in which order, is what reading the input itself
 * reported. */
typedef struct spool {
	int fd;
	crypto_secretstream_xchacha20poly1305_state st;
	unsigned char key[crypto_secretstream_xchacha20poly1305_KEYBYTES];
	unsigned char *plain, *sealed; /* a chunk, and it sealed */
	size_t have;             /* bytes in plain (writing) */
	uint64_t bytes;          /* the input's bytes copied */
	int end;                 /* how the copy ends: 0 the input's end, -1 a
	                            read error (errno in err), -2 a line too
	                            long */
	int err;
	int done;                /* its last chunk was read */
} spool;

#define SPOOL_CHUNK (1u << 14) /* IMPORT_READ_BLOCK: a chunk is one read */
#define SPOOL_SEALED (SPOOL_CHUNK + \
                      crypto_secretstream_xchacha20poly1305_ABYTES)

/* The lines of an export, read(2) into one buffer (what a pipe has, as it
 * comes), or from the spool: a line longer than max is refused once that
 * many bytes are in, so it costs at most that much memory, never its whole
 * length. */
typedef struct line_in {
	int fd;
	spool *sp;               /* read this instead of fd */
	size_t max;
	char *buf;
	size_t cap, start, end;  /* unread bytes: buf[start, end) */
	int eof;
} line_in;

/* The next chunk of the spool into buf (room for SPOOL_CHUNK bytes): its
 * length, 0 after the last, -1 with errno set. */
static ssize_t spool_read(spool *sp, char *buf)
{
	unsigned long long n = 0;
	unsigned char tag = 0;
	ssize_t got = 0, r;

	if (sp->done)
		return 0;
	while ((size_t)got < SPOOL_SEALED) {
		r = read(sp->fd, sp->sealed + got, SPOOL_SEALED - (size_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += r;
	}
	if ((size_t)got < crypto_secretstream_xchacha20poly1305_ABYTES ||
	    crypto_secretstream_xchacha20poly1305_pull(&sp->st,
	        (unsigned char *)buf, &n, &tag, sp->sealed,
	        (unsigned long long)got, NULL, 0) != 0) {
		errno = EIO; /* our own file, changed or cut under us */
		return -1;
	}
	if (tag == crypto_secretstream_xchacha20poly1305_TAG_FINAL)
		sp->done = 1;
	return (ssize_t)n;
}

/* The next line, without its newline and NUL-terminated, in *line and
 * *len (valid until the next call): 1 a line, 0 the end of the input, -1 a
 * read error (errno set) or Ctrl-C, -2 a line longer than max. */
static int line_next(line_in *r, char **line, size_t *len)
{
	size_t scanned = 0, have, want;
	ssize_t n;
	char *nl;

	for (;;) {
		have = r->end - r->start;
		nl = have > scanned ? memchr(r->buf + r->start + scanned, '\n',
		                             have - scanned) : NULL;
		if (nl || (r->eof && have > 0)) {
			*line = r->buf + r->start;
			*len = nl ? (size_t)(nl - *line) : have;
			(*line)[*len] = '\0';  /* buf keeps a byte spare for this */
			r->start = nl ? (size_t)(nl + 1 - r->buf) : r->end;
			return *len > r->max ? -2 : 1;
		}
		if (r->eof)
			return 0;
		scanned = have;
		if (have > r->max)
			return -2;
		/* the partial line to the front, and room for a block more */
		if (r->start) {
			memmove(r->buf, r->buf + r->start, have);
			r->start = 0;
			r->end = have;
		}
		want = have + IMPORT_READ_BLOCK + 1;
		if (want > r->cap) {
			size_t nc = r->cap ? r->cap : IMPORT_READ_BLOCK;
			char *nb;

			while (nc < want)
				nc *= 2;
			/* never past the bound (want is within it: have <= max),
			 * and straight to it: growing by a block at a time would
			 * copy the buffer for every block */
			if (nc > r->max + IMPORT_READ_BLOCK + 1)
				nc = r->max + IMPORT_READ_BLOCK + 1;
			if (!(nb = realloc(r->buf, nc))) {
				errno = ENOMEM;
				return -1;
			}
			r->buf = nb;
			r->cap = nc;
		}
		n = r->sp ? spool_read(r->sp, r->buf + r->end)
		          : read(r->fd, r->buf + r->end, IMPORT_READ_BLOCK);
		if (n < 0 && errno == EINTR && !cli_interrupted())
			continue;
		if (n < 0)
			return -1;
		r->end += (size_t)n;
		r->eof = n == 0;
	}
}

static int write_full(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Seals the chunk in plain and appends it; final: the last one. */
static int spool_put(spool *sp, int final)
{
	unsigned long long n = 0;

	crypto_secretstream_xchacha20poly1305_push(&sp->st, sp->sealed, &n,
	        sp->plain, sp->have, NULL, 0, final ?
	        crypto_secretstream_xchacha20poly1305_TAG_FINAL : 0);
	sp->have = 0;
	return write_full(sp->fd, sp->sealed, (size_t)n);
}

static int spool_add(spool *sp, const char *p, size_t n)
{
	while (n) {
		size_t k = SPOOL_CHUNK - sp->have;

		if (k > n)
			k = n;
		memcpy(sp->plain + sp->have, p, k);
		sp->have += k;
		p += k;
		n -= k;
		if (sp->have == SPOOL_CHUNK && spool_put(sp, 0) < 0)
			return -1;
	}
	return 0;
}

static void spool_free(spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
	if (sp->plain)
		sodium_free(sp->plain);
	free(sp->sealed);
	sp->plain = sp->sealed = NULL;
	sodium_memzero(sp->key, sizeof(sp->key));
	sodium_memzero(&sp->st, sizeof(sp->st));
}

/* The unnamed file in *dir, and the key: 0, or -1 with errno set. */
static int spool_open(spool *sp, const char **dir)
{
	unsigned char head[crypto_secretstream_xchacha20poly1305_HEADERBYTES];
	const char *d = getenv("TMPDIR");
	char *name;

	if (!d || !*d)
		d = "/tmp";
	*dir = d;
	if (sodium_init() < 0) {
		errno = ENOSYS;
		return -1;
	}
	sp->fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (sp->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR ||
	                   errno == EINVAL)) {
		/* a file system without unnamed files: named for a moment */
		name = cli_xasprintf("%s/statectl-import-XXXXXX", d);
		if ((sp->fd = mkostemp(name, O_CLOEXEC)) >= 0)
			unlink(name);
		free(name);
	}
	sp->plain = sodium_malloc(SPOOL_CHUNK);
	sp->sealed = malloc(SPOOL_SEALED);
	if (sp->fd < 0)
		return -1;
	if (!sp->plain || !sp->sealed) {
		errno = ENOMEM;
		return -1;
	}
	crypto_secretstream_xchacha20poly1305_keygen(sp->key);
	crypto_secretstream_xchacha20poly1305_init_push(&sp->st, head, sp->key);
	return write_full(sp->fd, head, sizeof(head));
}

/* Copies the lines of fd into sp (above) and makes it ready to read.
 * CLI_EXIT_OK, or the failure, reported. */
static int spool_fill(const cli *c, spool *sp, int fd, size_t max,
                      const char *name, cli_progress *p)
{
	unsigned char head[crypto_secretstream_xchacha20poly1305_HEADERBYTES];
	line_in raw = { .fd = fd, .max = max };
	const char *dir = "/tmp";
	char *line;
	size_t len;
	int got, rc = CLI_EXIT_OK;

	if (spool_open(sp, &dir) < 0) {
		rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot make a temporary file "
		              "in %s for the input: %s; nothing was imported",
		              dir, strerror(errno));
		goto out;
	}
	while ((got = line_next(&raw, &line, &len)) > 0) {
		line[len] = '\n'; /* where line_next put the NUL */
		if (spool_add(sp, line, len + 1) < 0)
			goto werr;
		sp->bytes += len + 1;
		/* the bytes read so far (their total is not known) */
		if (cli_progress_cb(sp->bytes, 0, p))
			break;
	}
	if (cli_interrupted()) {
		rc = cli_fail(c, CLI_EXIT_INTERRUPTED, "interrupted; nothing was"
		              " imported");
		goto out;
	}
	sp->end = got;
	sp->err = got == -1 ? errno : 0;
	if (spool_put(sp, 1) < 0 || lseek(sp->fd, 0, SEEK_SET) != 0)
		goto werr;
	if (read(sp->fd, head, sizeof(head)) != (ssize_t)sizeof(head) ||
	    crypto_secretstream_xchacha20poly1305_init_pull(&sp->st, head,
	                                                    sp->key) != 0) {
		errno = errno ? errno : EIO;
		goto werr;
	}
	goto out;
werr:
	rc = cli_fail(c, CLI_EXIT_SYSTEM, "cannot copy %s to a temporary file "
	              "in %s: %s; nothing was imported", name, dir,
	              strerror(errno));
out:
	free(raw.buf);
	return rc;
}

/* The import's source: the lines of an export, one row at a time. */
typedef struct import_ctx {
	const cli *c;
	line_in r;
	const char *name;
	uint64_t lineno, rows, bytes, total;
	row_mem m;               /* the bytes of the row last given */
	cli_progress p;
	int rc;                  /* why next_row stopped the import */
	int ended;               /* every line was read */
	int version;             /* the export's format version */
	uint64_t end_line;       /* where its end row was, 0 before it */
} import_ctx;

/* An sfs_import source: the next row of the export, SFS_NOTFOUND at its
 * end, or -1 after printing why the input cannot be imported. */
static int next_row(sfs_row *row, void *arg)
{
	import_ctx *x = arg;
	json_error_t jerr;
	const char *err;
	char *line;
	size_t len;
	json_t *o;
	int got;

	row_mem_free(&x->m);
	memset(&x->m, 0, sizeof(x->m));
	while ((got = line_next(&x->r, &line, &len)) > 0) {
		x->lineno++;
		x->bytes += len + 1;
		if (cli_progress_cb(x->bytes, x->total > x->bytes ? x->total
		                                                  : x->bytes,
		                    &x->p)) {
			x->rc = cli_fail(x->c, CLI_EXIT_INTERRUPTED, "interrupted;"
			                 " nothing was imported");
			return -1;
		}
		if (x->lineno == 1) {
			/* a UTF-8 byte order mark, which an editor or
			 * PowerShell puts first, as jq reads it: not part of
			 * the header (it was "not a statefs export") */
			if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
				line += 3;
				len -= 3;
			}
			if ((x->rc = check_header(x->c, line, len, &x->version)))
				return -1;
			continue;
		}
		/* blank, also of white space: the "\r" left of a blank line
		 * of an export copied with CRLF line ends (jq skips it; it
		 * was "not valid JSON", or "a line after the end row") */
		if (strspn(line, " \t\r") == len)
			continue;
		if (x->end_line) {
			x->rc = cli_fail(x->c, CLI_EXIT_DATA, "line %llu: a line "
			                 "after the export's end row (line %llu); "
			                 "nothing was imported",
			                 (unsigned long long)x->lineno,
			                 (unsigned long long)x->end_line);
			return -1;
		}
		o = json_loadb(line, len, JSON_ALLOW_NUL |
		               JSON_REJECT_DUPLICATES, &jerr);
		if (!o) {
			x->rc = cli_fail(x->c, CLI_EXIT_DATA, "line %llu: not valid"
			                 " JSON (%s); nothing was imported",
			                 (unsigned long long)x->lineno, jerr.text);
			return -1;
		}
		if (x->version != EXPORT_VERSION_NO_END &&
		    json_object_get(o, "end")) {
			x->rc = check_end(x->c, o, x->lineno, x->rows);
			json_decref(o);
			if (x->rc)
				return -1;
			x->end_line = x->lineno;
			continue;
		}
		if (json_to_row(o, row, &x->m, &err) < 0) {
			json_decref(o);
			x->rc = cli_fail(x->c, CLI_EXIT_DATA, "line %llu: %s; nothing"
			                 " was imported",
			                 (unsigned long long)x->lineno, err);
			return -1;
		}
		json_decref(o);
		x->rows++;
		return SFS_OK;
	}
	if (got == 0 && x->r.sp && x->r.sp->end) { /* where its copy stopped */
		got = x->r.sp->end;
		errno = x->r.sp->err;
	}
	if (got == -2) {
		x->rc = cli_fail(x->c, CLI_EXIT_DATA, "line %llu: longer than any"
		                 " row of an export (%zu bytes); nothing was"
		                 " imported%s", (unsigned long long)x->lineno + 1,
		                 x->r.max, x->c->max_value ? "" : " (a value"
		                 " larger than 64M: --max-value)");
		return -1;
	}
	if (cli_interrupted()) { /* Ctrl-C while waiting for input */
		x->rc = cli_fail(x->c, CLI_EXIT_INTERRUPTED, "interrupted; nothing"
		                 " was imported");
		return -1;
	}
	if (got < 0) {
		x->rc = cli_fail(x->c, CLI_EXIT_SYSTEM, "cannot read %s: %s;"
		                 " nothing was imported", x->name, strerror(errno));
		return -1;
	}
	if (x->lineno == 0) {
		x->rc = cli_fail(x->c, CLI_EXIT_DATA, "the input is empty, not a"
		                 " statefs export");
		return -1;
	}
	if (x->version != EXPORT_VERSION_NO_END && !x->end_line) {
		x->rc = cli_fail(x->c, CLI_EXIT_DATA, "the export is cut: it ends"
		                 " at line %llu without its end row; nothing was"
		                 " imported", (unsigned long long)x->lineno);
		return -1;
	}
	x->ended = 1;
	return SFS_NOTFOUND;
}

int cli_import_read(const cli *c, FILE *in, const char *name, sfs_store *s,
                    uint64_t *rows)
{
	import_ctx x;
	spool sp;
	struct stat sb;
	int rc = CLI_EXIT_OK, st;

	memset(&x, 0, sizeof(x));
	memset(&sp, 0, sizeof(sp));
	sp.fd = -1;
	x.c = c;
	x.name = name;
	x.r.fd = fileno(in);
	x.r.max = IMPORT_LINE_MAX(c->max_value ? c->max_value
	                                       : SFS_DEFAULT_MAX_VALUE);
	cli_progress_begin(&x.p, c, "import", "bytes");
	if (fstat(fileno(in), &sb) == 0 && S_ISREG(sb.st_mode)) {
		x.total = (uint64_t)sb.st_size;
	} else {
		/* a pipe: read whole before the store is locked (spool) */
		if ((rc = spool_fill(c, &sp, x.r.fd, x.r.max, name,
		                     &x.p))) {
			cli_progress_end(&x.p);
			spool_free(&sp);
			return rc;
		}
		x.r.sp = &sp;
		x.total = sp.bytes;
	}
	st = sfs_import(s, next_row, &x);
	cli_progress_end(&x.p);
	spool_free(&sp);
	if (st == -1)
		rc = x.rc;
	else if (st != SFS_OK && x.ended)
		rc = cli_fail_status(c, st, "cannot commit the import; nothing was"
		                     " imported");
	else if (st == SFS_TOOBIG && strstr(sfs_errdetail(), "store's limit"))
		rc = cli_fail_status(c, st, "line %llu: cannot import the row"
		                     " (--max-value SIZE takes larger values);"
		                     " nothing was imported",
		                     (unsigned long long)x.lineno);
	else if (st != SFS_OK)
		rc = cli_fail_status(c, st, "line %llu: cannot import the row;"
		                     " nothing was imported",
		                     (unsigned long long)x.lineno);
	*rows = x.rows;
	row_mem_free(&x.m);
	free(x.r.buf);
	return rc;
}

/* import [FILE], - for stdin */
int cmd_import(cli *c, cli_args *a)
{
	const char *file = a->npos && strcmp(a->pos[0], "-") ? a->pos[0] : NULL;
	FILE *in = stdin;
	sfs_store *s = NULL;
	uint64_t rows = 0;
	int rc;

	if (file && !(in = fopen(file, "re")))
		return cli_fail(c, errno == ENOENT ? CLI_EXIT_NOTFOUND
		                                   : CLI_EXIT_SYSTEM,
		                "cannot read %s: %s", file, strerror(errno));
	/* stdin closed (<&-): said now, before opening the store gives its
	 * descriptor to a file (SQLite puts /dev/null there), which would
	 * read as an empty input */
	if (!file && fcntl(STDIN_FILENO, F_GETFL) < 0)
		return cli_fail(c, CLI_EXIT_SYSTEM, "cannot read stdin: %s; "
		                "nothing was imported", strerror(errno));
	/* `statectl import` with the file forgotten waited in silence */
	if (!file)
		cli_tty_notice("an export");
	if ((rc = cli_store_open(c, CLI_STORE_WRITE, &s)))
		goto out;
	if ((rc = cli_import_read(c, in, file ? file : "stdin", s, &rows)))
		goto out;
	if (c->json)
		rc = cli_out_json(json_path_rows(c->opened, rows));
	else {
		char *hp = cli_human(c->opened);

		printf("imported %llu rows into %s\n", (unsigned long long)rows,
		       hp);
		free(hp);
	}
out:
	sfs_store_close(s);
	if (in != stdin)
		fclose(in);
	return rc;
}
