/*
 * helper.c - "another process" for the mount tests: changes and reads the
 * store through the engine, beside a running daemon.
 *
 * Usage: sfs_helper COMMAND ARGS...
 *   put SCOPE NS KEY VALUE      get SCOPE NS KEY       del SCOPE NS KEY
 *   worker EXEC ID VALUE        cset SCOPE NS KEY N    cget SCOPE NS KEY
 *   lappend SCOPE NS KEY VALUE  qpush QUEUE VALUE...   qlen QUEUE
 *   kvcount SCOPE NS            verify                 dump
 *   qinflight QUEUE             qdead QUEUE            (counts)
 *   qpolicy QUEUE TTL_MS MAX_DELIVERIES
 *   kvtimed SCOPE NS KEY VALUE MTIME_NS  the value with that time to the
 *                               nanosecond, as an import gives it
 *   append SCOPE NS KEY VALUE   (sfs_kv_edit: the value's end, made if
 *                               absent)
 *   putcheck SCOPE NS KEY N     N times: put a value starting with the
 *                               round's number (7 digits), get it back and
 *                               check that it starts so (a truncation may
 *                               have cut it since; nothing may undo the
 *                               put); prints the rounds that failed, exits
 *                               1 when there were any
 * Byte-string arguments are taken as they are, or as hex after "x:"
 * ("x:00ff"). get prints the raw value; dump prints every row of the store
 * (hex fields), so two dumps compare equal iff the store is the same.
 * The store is $STATEFS_DB; plaintext when STATEFS_TEST_MODE is plain or
 * postgres-plain, else the key as the daemon finds it (SFS_OPEN_ENV),
 * without the
 * claim recovery of a writable open: the helper observes, the daemon (or a
 * claim) recovers.
 * Exit: 0; 1 with a sentence (2 for get/cget of something absent).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statefs.h"

static sfs_store *store;

static void die(const char *what, int rc)
{
	fprintf(stderr, "sfs_helper: %s: %s: %s\n", what, sfs_strerror(rc),
	        sfs_errdetail());
	exit(1);
}

/* Decoded "x:" arguments, freed at the end (sanitizers count leaks). */
static void *decoded[16];
static int ndecoded;

/* An argument as bytes: "x:HEX" or the string itself. */
static sfs_slice arg(const char *s)
{
	size_t n;
	unsigned char *p;

	if (strncmp(s, "x:", 2) != 0)
		return sfs_str(s);
	s += 2;
	n = strlen(s) / 2;
	p = malloc(n + 1);
	if (!p || ndecoded == 16)
		exit(1);
	decoded[ndecoded++] = p;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			exit(1);
		p[i] = (unsigned char)v;
	}
	return sfs_bytes(p, n);
}

static void hex(const void *p, size_t n)
{
	const unsigned char *b = p;

	if (!p) {
		fputs("-", stdout);
		return;
	}
	putchar('x');
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static int dump_row(const sfs_row *r, void *ctx)
{
	(void)ctx;
	printf("%d ", (int)r->family);
	hex(r->scope.ptr, r->scope.len);
	putchar(' ');
	hex(r->ns.ptr, r->ns.len);
	putchar(' ');
	if (r->family == SFS_FAM_DEAD)
		hex(r->reason.ptr, r->reason.len);
	else
		hex(r->key.ptr, r->key.len);
	putchar(' ');
	hex(r->value.ptr, r->value.len);
	/* each family sets at most one of the integers after the id */
	printf(" %" PRId64 " %" PRId64 " %d %" PRId64 " %" PRId64 " %" PRId64
	       "\n", r->id, r->counter, (int)r->dir_family, r->lease_until_ns,
	       r->claim_id, r->ttl_ms);
	return 0;
}

/* kvtimed's one row for sfs_import, then the end. */
static int one_row(sfs_row *row, void *ctx)
{
	sfs_row **r = ctx;

	if (!*r)
		return SFS_NOTFOUND;
	*row = **r;
	*r = NULL;
	return SFS_OK;
}

int main(int argc, char **argv)
{
	sfs_config cfg = { 0 };
	const char *mode = getenv("STATEFS_TEST_MODE");
	const char *cmd = argc > 1 ? argv[1] : "";
	sfs_buf v = { NULL, 0 };
	int64_t n;
	uint64_t len;
	int rc;

	/* no recovery at open: a test's claims stay as it made them */
	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_CREATE | SFS_OPEN_NORECOVER |
	            (mode && (!strcmp(mode, "plain") ||
	                      !strcmp(mode, "postgres-plain"))
	             ? SFS_OPEN_PLAINTEXT : 0);
	rc = sfs_store_open(&cfg, &store, NULL);
	if (rc)
		die("open", rc);

	if (!strcmp(cmd, "put") && argc == 6) {
		rc = sfs_kv_put(store, arg(argv[2]), arg(argv[3]), arg(argv[4]),
		                arg(argv[5]));
	} else if (!strcmp(cmd, "kvtimed") && argc == 7) {
		sfs_row row = { .family = SFS_FAM_KV }, *r = &row;

		row.scope = arg(argv[2]);
		row.ns = arg(argv[3]);
		row.key = arg(argv[4]);
		row.value = arg(argv[5]);
		row.mtime_ns = strtoll(argv[6], NULL, 10);
		rc = sfs_import(store, one_row, &r);
	} else if (!strcmp(cmd, "kvmtime") && argc == 5) {
		/* the time the store keeps: seconds, or "unknown" (0) */
		sfs_stat st;

		rc = sfs_kv_stat(store, arg(argv[2]), arg(argv[3]),
		                 arg(argv[4]), &st);
		if (!rc && st.mtime_ns)
			printf("%lld\n", (long long)(st.mtime_ns / 1000000000 -
			       (st.mtime_ns % 1000000000 < 0)));
		else if (!rc)
			printf("unknown\n");
	} else if (!strcmp(cmd, "get") && argc == 5) {
		rc = sfs_kv_get(store, arg(argv[2]), arg(argv[3]), arg(argv[4]), &v);
		if (rc == SFS_NOTFOUND)
			exit(2);
		if (!rc)
			fwrite(v.ptr, 1, v.len, stdout);
		sfs_buf_free(&v);
	} else if (!strcmp(cmd, "del") && argc == 5) {
		rc = sfs_kv_delete(store, arg(argv[2]), arg(argv[3]), arg(argv[4]));
	} else if (!strcmp(cmd, "worker") && argc == 5) {
		unsigned char k[8];

		sfs_id_encode(strtoll(argv[3], NULL, 10), k);
		rc = sfs_kv_put(store, arg(argv[2]), sfs_str(SFS_NS_WORKER),
		                sfs_bytes(k, 8), arg(argv[4]));
	} else if (!strcmp(cmd, "cset") && argc == 6) {
		rc = sfs_counter_set(store, arg(argv[2]), arg(argv[3]), arg(argv[4]),
		                     strtoll(argv[5], NULL, 10));
	} else if (!strcmp(cmd, "cget") && argc == 5) {
		rc = sfs_counter_get(store, arg(argv[2]), arg(argv[3]), arg(argv[4]),
		                     &n, NULL);
		if (rc == SFS_NOTFOUND)
			exit(2);
		if (!rc)
			printf("%" PRId64 "\n", n);
	} else if (!strcmp(cmd, "lappend") && argc == 6) {
		rc = sfs_log_append(store, arg(argv[2]), arg(argv[3]), arg(argv[4]),
		                    arg(argv[5]), NULL);
	} else if (!strcmp(cmd, "qpush") && argc >= 4) {
		for (int i = 3; i < argc && !rc; i++) {
			sfs_slice it = arg(argv[i]);
			rc = sfs_queue_push(store, arg(argv[2]), &it, 1, NULL);
		}
	} else if (!strcmp(cmd, "qlen") && argc == 3) {
		rc = sfs_item_count(store, arg(argv[2]), SFS_ITEM_PENDING, &len);
		if (!rc)
			printf("%" PRIu64 "\n", len);
	} else if (!strcmp(cmd, "kvcount") && argc == 4) {
		sfs_list l = { NULL, 0 };
		sfs_scan_opts o = { .keys_only = 1 };
		rc = sfs_kv_scan(store, arg(argv[2]), arg(argv[3]), &o, &l);
		if (!rc)
			printf("%zu\n", l.n);
		sfs_list_free(&l);
	} else if ((!strcmp(cmd, "qinflight") || !strcmp(cmd, "qdead")) &&
	           argc == 3) {
		sfs_list l = { NULL, 0 };
		rc = cmd[1] == 'i'
		   ? sfs_item_scan(store, arg(argv[2]), SFS_ITEM_INFLIGHT, -1, 0, 1, &l)
		   : sfs_item_scan(store, arg(argv[2]), SFS_ITEM_DEAD, -1, 0, 1, &l);
		if (!rc)
			printf("%zu\n", l.n);
		sfs_list_free(&l);
	} else if (!strcmp(cmd, "qpolicy") && argc == 5) {
		sfs_queue_policy p = { strtoll(argv[3], NULL, 10),
		                       strtoll(argv[4], NULL, 10) };
		rc = sfs_queue_policy_set(store, arg(argv[2]), &p);
	} else if (!strcmp(cmd, "append") && argc == 6) {
		sfs_edit e = { SFS_EDIT_APPEND, 0, arg(argv[5]) };
		rc = sfs_kv_edit(store, arg(argv[2]), arg(argv[3]), arg(argv[4]),
		                 &e, 1, SFS_EDIT_CREATE, NULL);
	} else if (!strcmp(cmd, "putcheck") && argc == 6) {
		long rounds = atol(argv[5]), lost = 0;
		char val[64];
		for (long i = 0; i < rounds && !rc; i++) {
			snprintf(val, sizeof(val), "%07ld%s", i,
			         "---------------------------------");
			rc = sfs_kv_put(store, arg(argv[2]), arg(argv[3]),
			                arg(argv[4]), sfs_str(val));
			if (!rc)
				rc = sfs_kv_get(store, arg(argv[2]), arg(argv[3]),
				                arg(argv[4]), &v);
			if (!rc && (v.len < 7 || memcmp(v.ptr, val, 7) != 0))
				lost++;
			sfs_buf_free(&v);
		}
		printf("%ld\n", lost);
		if (!rc && lost)
			exit(1);
	} else if (!strcmp(cmd, "verify") && argc == 2) {
		rc = sfs_store_verify(store, NULL, NULL);
	} else if (!strcmp(cmd, "dump") && argc == 2) {
		rc = sfs_export(store, dump_row, NULL, NULL, NULL);
	} else {
		fprintf(stderr, "sfs_helper: bad command line (see the file's "
		        "header)\n");
		exit(1);
	}
	if (rc)
		die(cmd, rc);
	sfs_store_close(store);
	while (ndecoded > 0)
		free(decoded[--ndecoded]);
	return 0;
}
