/*
 * cmd_metrics.c - statectl metrics [FILE]: the figures of `statectl top`
 * (sfs_store_stats, one read-only snapshot) in the Prometheus text
 * exposition format, for the node exporter's textfile collector or any
 * scraper.
 *
 * Every metric is under statefs_, with HELP and TYPE; the push and take
 * counts are counters (_total), everything else gauges. Queues and scopes
 * are labels, spelled as under the mount (the name codec: printable UTF-8,
 * so only \ " and newline need escaping, and never do in practice).
 * statefs_store_rows repeats sfs_store_info's counts (statectl --json
 * info): the sums of the per-queue and per-scope series are equal to them.
 *
 * With FILE the output goes to a temporary file beside it, which is
 * renamed over FILE once complete: a collector never reads half a file.
 * The file is made as a shell redirection would (0666 less the umask),
 * since the collector usually runs as another user; it names scopes and
 * queues, which the store itself keeps encrypted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_i.h"

/* A label value: the name under the mount, with \ " and newline escaped
 * (the codec never makes a newline, but the format's rule is kept). */
static void label(FILE *f, const char *key, sfs_buf name)
{
	char s[FS_NAME_MAX + 1];

	if (fs_name_encode(sfs_bytes(name.ptr, name.len), FS_NAME_SCOPE, s,
	                    NULL) != SFS_OK)
		snprintf(s, sizeof(s), "?");
	fprintf(f, "{%s=\"", key);
	for (const char *p = s; *p; p++) {
		if (*p == '\\' || *p == '"')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputs("\"}", f);
}

static void head(FILE *f, const char *name, const char *type,
                 const char *help)
{
	fprintf(f, "# HELP statefs_%s %s\n# TYPE statefs_%s %s\n", name, help,
	        name, type);
}

/* One metric per queue: which figure, by offset into sfs_queue_stats. */
typedef struct qmetric {
	const char *name, *type, *help;
	size_t off;          /* of a uint64_t or int64_t field */
	int age;             /* an int64_t time: printed as seconds before now,
	                        only for queues that have one */
} qmetric;

#define QOFF(f) offsetof(sfs_queue_stats, f)

static const qmetric qmetrics[] = {
	{ "queue_pending", "gauge", "Items waiting in the queue.",
	  QOFF(pending), 0 },
	{ "queue_inflight", "gauge", "Items under a claim.",
	  QOFF(inflight), 0 },
	{ "queue_dead", "gauge", "Dead letters of the queue.", QOFF(dead), 0 },
	{ "queue_claims", "gauge", "Claims holding items.", QOFF(claims), 0 },
	{ "queue_claims_expired", "gauge",
	  "Claims whose lease ran out and that recovery has not yet returned.",
	  QOFF(expired), 0 },
	{ "queue_oldest_claim_age_seconds", "gauge",
	  "Age of the queue's oldest claim.", QOFF(oldest_claim_ns), 1 },
	{ "queue_head_wait_seconds", "gauge",
	  "How long the item at the head of the queue has waited.",
	  QOFF(head_ns), 1 },
	{ "queue_pushed_total", "counter",
	  "Items pushed through statefs (SDKs' own SQL not counted).",
	  QOFF(pushed), 0 },
	{ "queue_taken_total", "counter",
	  "Items popped, drained or claimed through statefs.",
	  QOFF(taken), 0 },
};

typedef struct smetric {
	const char *name, *help;
	size_t off;
} smetric;

static const smetric smetrics[] = {
	{ "scope_keys", "Key/value entries of the scope, all namespaces.",
	  offsetof(sfs_scope_stats, kv) },
	{ "scope_log_entries", "Append-log entries of the scope.",
	  offsetof(sfs_scope_stats, log) },
	{ "scope_counters", "Counters of the scope.",
	  offsetof(sfs_scope_stats, counter) },
};

/* The backend's facts that are metrics (statefs.h, sfs_info.facts): a
 * store whose backend has no such fact has no such metric. */
static const struct {
	const char *fact, *name, *help;
} fmetrics[] = {
	{ "file_size", "store_size_bytes", "Size of the store's main file." },
	{ "wal_size", "store_wal_size_bytes",
	  "Size of the store's write-ahead log." },
	{ "page_count", "store_pages", "Pages of the store's main file." },
	{ "page_size", "store_page_size_bytes", "Size of a page." },
};

static void write_metrics(FILE *f, const sfs_stats *st)
{
	const sfs_info *in = &st->info;
	const struct { const char *family; uint64_t n; } rows[] = {
		{ "kv", in->kv_rows }, { "counter", in->counter_rows },
		{ "log", in->log_rows }, { "queue", in->queue_rows },
		{ "claimed", in->claimed_rows }, { "dead", in->dead_rows },
	};

	/* every backend's (the facts below are SQLite's, and PostgreSQL
	 * has no file: its size was in no metric) */
	if (in->size) {
		head(f, "store_bytes", "gauge", "Bytes of storage the store "
		     "takes (SQLite: its file and WAL; PostgreSQL: its tables).");
		fprintf(f, "statefs_store_bytes %llu\n",
		        (unsigned long long)in->size);
	}
	for (size_t i = 0; i < sizeof(fmetrics) / sizeof(fmetrics[0]); i++) {
		uint64_t v;

		if (!cli_info_fact(in, fmetrics[i].fact, &v))
			continue;
		head(f, fmetrics[i].name, "gauge", fmetrics[i].help);
		fprintf(f, "statefs_%s %llu\n", fmetrics[i].name,
		        (unsigned long long)v);
	}
	head(f, "store_encrypted", "gauge",
	     "1 when the store is encrypted at rest, else 0.");
	fprintf(f, "statefs_store_encrypted %d\n", in->encrypted ? 1 : 0);
	head(f, "store_schema_version", "gauge", "The store's schema version.");
	fprintf(f, "statefs_store_schema_version %d\n", in->schema_version);
	head(f, "store_rows", "gauge", "Rows of each family in the store "
	     "(queue: pending items; claimed: items in flight).");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		fprintf(f, "statefs_store_rows{family=\"%s\"} %llu\n",
		        rows[i].family, (unsigned long long)rows[i].n);

	for (size_t m = 0; m < sizeof(qmetrics) / sizeof(qmetrics[0]); m++) {
		const qmetric *d = &qmetrics[m];

		head(f, d->name, d->type, d->help);
		for (size_t i = 0; i < st->nqueues; i++) {
			const char *base = (const char *)&st->queues[i];
			int64_t t;

			if (d->age) {
				memcpy(&t, base + d->off, sizeof(t));
				if (t <= 0)
					continue;
			}
			fprintf(f, "statefs_%s", d->name);
			label(f, "queue", st->queues[i].queue);
			if (d->age) {
				fprintf(f, " %.3f\n", t < st->now_ns ?
				        (double)(st->now_ns - t) / 1e9 : 0.0);
			} else {
				uint64_t v;

				memcpy(&v, base + d->off, sizeof(v));
				fprintf(f, " %llu\n", (unsigned long long)v);
			}
		}
	}
	for (size_t m = 0; m < sizeof(smetrics) / sizeof(smetrics[0]); m++) {
		head(f, smetrics[m].name, "gauge", smetrics[m].help);
		for (size_t i = 0; i < st->nscopes; i++) {
			uint64_t v;

			memcpy(&v, (const char *)&st->scopes[i] + smetrics[m].off,
			       sizeof(v));
			fprintf(f, "statefs_%s", smetrics[m].name);
			label(f, "scope", st->scopes[i].scope);
			fprintf(f, " %llu\n", (unsigned long long)v);
		}
	}
}

#define ABANDONED_S (10 * 60)

/* Removes the temporary files (path.tmp-PID) of `metrics path` runs that
 * were killed before their rename (SIGKILL, a timer's timeout): those of
 * a process that is gone, unchanged for ten minutes (a pid of another PID
 * namespace looks gone too, but a file in use is being written). They
 * stayed, one per killed run, in the collector's directory. */
static void sweep_abandoned(const char *path)
{
	char *dcopy = cli_xstrdup(path), *bcopy = cli_xstrdup(path);
	const char *base = basename(bcopy);
	size_t blen = strlen(base);
	time_t now = time(NULL);
	DIR *d = opendir(dirname(dcopy));
	struct dirent *e;
	struct stat sb;

	while (d && (e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, base, blen) ||
		    strncmp(e->d_name + blen, ".tmp-", 5))
			continue;
		errno = 0;
		pid = strtol(e->d_name + blen + 5, &end, 10);
		if (errno || pid <= 0 || *end || end == e->d_name + blen + 5 ||
		    pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode) && now - sb.st_mtime >= ABANDONED_S)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
	free(dcopy);
	free(bcopy);
}

#define OWN_START "# HELP statefs_" /* how every output of ours starts */

/* Whether path may be replaced: absent, or a regular file that is an
 * earlier output of ours. Anything else is someone's data: `metrics
 * ~/.local/state/statefs/state.db` (the store taken for an argument)
 * renamed the figures over the store, and over the key file the store's
 * only key, exit 0. Not an empty file either: a store's -wal is one
 * between checkpoints, and a process that has the store open would go
 * on writing the one it opened. CLI_EXIT_OK, or the refusal, reported. */
static int check_target(cli *c, const char *path)
{
	char start[sizeof(OWN_START) - 1];
	struct stat sb;
	ssize_t got;
	int fd, saverr;

	if (stat(path, &sb) != 0)
		return CLI_EXIT_OK; /* absent, or a link to nothing */
	if (!S_ISREG(sb.st_mode))
		return cli_fail(c, CLI_EXIT_EXISTS, "%s exists and is not a "
		                "regular file (metrics replaces only a file it "
		                "wrote)", path);
	fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	got = fd < 0 ? -1 : read(fd, start, sizeof(start));
	saverr = errno;
	if (fd >= 0)
		close(fd);
	if (got < 0)
		return cli_fail(c, CLI_EXIT_SYSTEM, "cannot read %s to see that "
		                "metrics wrote it: %s", path, strerror(saverr));
	if ((size_t)got != sizeof(start) ||
	    memcmp(start, OWN_START, sizeof(start)) != 0)
		return cli_fail(c, CLI_EXIT_EXISTS, "%s exists and is not what "
		                "metrics writes (a file starting '%s'): metrics "
		                "replaces only a file it wrote", path, OWN_START);
	return CLI_EXIT_OK;
}

/* Writes to a temporary file beside path and renames it over path. */
static int write_file(cli *c, const char *path, const sfs_stats *st)
{
	char *tmp = NULL;
	FILE *f;
	int fd, saverr, rc;
	mode_t um = umask(0);

	umask(um);
	if ((rc = check_target(c, path)))
		return rc;
	sweep_abandoned(path);
	if (asprintf(&tmp, "%s.tmp-%ld", path, (long)getpid()) < 0)
		return cli_fail(c, CLI_EXIT_SYSTEM, "out of memory");
	/* One of this pid is not this run's (it has made none yet): a
	 * killed run's, whose pid came round again; it failed EEXIST */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666 & ~um);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		saverr = errno;
		if (fd >= 0)
			close(fd);
		free(tmp);
		return cli_fail(c, CLI_EXIT_SYSTEM, "cannot create %s.tmp-*: "
		                "%s", path, strerror(saverr));
	}
	write_metrics(f, st);
	if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0) {
		saverr = errno;
		fclose(f);
		unlink(tmp);
		free(tmp);
		return cli_fail(c, CLI_EXIT_SYSTEM, "cannot write %s: %s", path,
		                strerror(saverr));
	}
	fclose(f);
	if (rename(tmp, path) != 0) {
		saverr = errno;
		unlink(tmp);
		free(tmp);
		return cli_fail(c, CLI_EXIT_SYSTEM, "cannot rename over %s: %s",
		                path, strerror(saverr));
	}
	free(tmp);
	return CLI_EXIT_OK;
}

/* metrics [FILE] */
int cmd_metrics(cli *c, cli_args *a)
{
	sfs_store *s = NULL;
	sfs_stats *st = NULL;
	int rc, status;

	if ((rc = cli_store_open(c, CLI_STORE_READ, &s)))
		return rc;
	status = sfs_store_stats(s, &st);
	if (status != SFS_OK)
		rc = cli_fail_status(c, status, "cannot read the store's figures");
	else if (a->npos == 1 && strcmp(a->pos[0], "-") != 0) /* -: stdout */
		rc = write_file(c, a->pos[0], st);
	else
		write_metrics(stdout, st);
	sfs_stats_free(st);
	sfs_store_close(s);
	return rc;
}
