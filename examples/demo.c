/*
 * demo.c - statefs-demo: a tour of the engine through its public API only.
 *
 * Creates an encrypted scratch store in a new temporary directory, uses each
 * family briefly (key/value, counters, append-log, work queue, the VGI
 * typed families, execution clear, checkpoint and restore), prints what it
 * does, and removes the directory with every file of the store (the store,
 * its -wal and -shm, and the -reserve the engine keeps beside it for deletes
 * on a full disk: docs/engine.md, "A full disk"). Exit status 0 when every
 * step worked and nothing is left behind.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "statefs.h"

static int failed;

/* Prints a failed step with the engine's detail; returns the status. */
static int step(int rc, const char *what)
{
	if (rc != SFS_OK) {
		fprintf(stderr, "statefs-demo: %s: %s (%s)\n", what,
		        sfs_strerror(rc), sfs_errdetail());
		failed = 1;
	}
	return rc;
}

static void show_list(const char *title, const sfs_list *l)
{
	printf("  %s:", title);
	for (size_t i = 0; i < l->n; i++) {
		const sfs_item *it = &l->items[i];

		if (it->value.ptr)
			printf(" %s=%s", (const char *)it->key.ptr,
			       (const char *)it->value.ptr);
		else
			printf(" %s", (const char *)it->key.ptr);
	}
	printf("\n");
}

static void kv(sfs_store *s)
{
	sfs_scan_opts range = { .start = sfs_str("b"), .end = sfs_str("d") };
	sfs_slice sc = sfs_str("demo"), ns = sfs_str("cursors");
	sfs_list l;
	sfs_buf b;
	uint64_t n;

	printf("key/value: put a, b, c, d under scope demo, namespace cursors\n");
	step(sfs_kv_put(s, sc, ns, sfs_str("a"), sfs_str("1")), "put a");
	step(sfs_kv_put(s, sc, ns, sfs_str("b"), sfs_str("2")), "put b");
	step(sfs_kv_put(s, sc, ns, sfs_str("c"), sfs_str("3")), "put c");
	step(sfs_kv_put(s, sc, ns, sfs_str("d"), sfs_str("4")), "put d");
	if (step(sfs_kv_get(s, sc, ns, sfs_str("c"), &b), "get c") == SFS_OK) {
		printf("  get c = %s\n", (const char *)b.ptr);
		sfs_buf_free(&b);
	}
	printf("  get z: %s\n",
	       sfs_strerror(sfs_kv_get(s, sc, ns, sfs_str("z"), &b)));
	if (step(sfs_kv_scan(s, sc, ns, &range, &l), "scan") == SFS_OK) {
		show_list("scan [b, d)", &l);
		sfs_list_free(&l);
	}
	if (step(sfs_kv_delete_range(s, sc, ns, sfs_str("b"), sfs_str("d"), &n),
	         "delete range") == SFS_OK)
		printf("  delete [b, d): %" PRIu64 " keys\n", n);
	if (step(sfs_kv_drain(s, sc, ns, &l), "drain") == SFS_OK) {
		show_list("drain", &l);
		sfs_list_free(&l);
	}
}

static void counters(sfs_store *s)
{
	sfs_slice sc = sfs_str("demo"), ns = sfs_str("rows");
	int64_t v = 0;

	printf("counters: add 5, add -2, add INT64_MAX\n");
	step(sfs_counter_add(s, sc, ns, sfs_str("seen"), 5, &v), "add");
	step(sfs_counter_add(s, sc, ns, sfs_str("seen"), -2, &v), "add");
	printf("  seen = %" PRId64 "\n", v);
	printf("  add INT64_MAX: %s\n",
	       sfs_strerror(sfs_counter_add(s, sc, ns, sfs_str("seen"),
	                                    INT64_MAX, &v)));
}

static void logs(sfs_store *s)
{
	sfs_slice sc = sfs_str("exec-1"), ns = sfs_str(SFS_NS_LOG);
	int64_t id1 = 0, id2 = 0;
	sfs_list l;

	printf("append-log: two partials under exec-1\n");
	step(sfs_log_append(s, sc, ns, sfs_str("partials"), sfs_str("10"), &id1),
	     "append");
	step(sfs_log_append(s, sc, ns, sfs_str("partials"), sfs_str("32"), &id2),
	     "append");
	printf("  ids %" PRId64 ", %" PRId64 "\n", id1, id2);
	if (step(sfs_log_scan(s, sc, ns, sfs_str("partials"), -1, 0, 0, &l),
	         "log scan") == SFS_OK) {
		printf("  scan:");
		for (size_t i = 0; i < l.n; i++)
			printf(" #%" PRId64 "=%s", l.items[i].id,
			       (const char *)l.items[i].value.ptr);
		printf("\n");
		sfs_list_free(&l);
	}
}

static void queues(sfs_store *s)
{
	sfs_slice items[3] = { sfs_str("job-1"), sfs_str("job-2"),
	                       sfs_str("job-3") };
	sfs_slice q = sfs_str("exec-1");
	uint64_t len = 0;
	sfs_list l;

	printf("work queue: push 3 jobs, pop until empty\n");
	step(sfs_queue_push(s, q, items, 3, NULL), "push");
	step(sfs_item_count(s, q, SFS_ITEM_PENDING, &len), "count");
	printf("  length %" PRIu64 "\n", len);
	while (sfs_queue_pop(s, q, 1, &l) == SFS_OK) {
		printf("  pop %s\n", (const char *)l.items[0].value.ptr);
		sfs_list_free(&l);
	}
	printf("  pop on the empty queue: %s\n",
	       sfs_strerror(sfs_queue_pop(s, q, 1, &l)));
}

/* The Go SDK's typed state: key/value under its namespaces, with int64
 * ids as 8-byte keys (statefs.h, "The Go SDK's families"). */
static void typed(sfs_store *s)
{
	sfs_slice ex = sfs_str("exec-1"), worker = sfs_str(SFS_NS_WORKER);
	sfs_slice agg = sfs_str(SFS_NS_AGG);
	unsigned char k[3][8];
	sfs_slice keys[2] = { sfs_bytes(k[1], 8), sfs_bytes(k[2], 8) };
	sfs_slice states[1] = { sfs_str("sum=42") };
	uint64_t n = 0;
	sfs_list l;

	printf("VGI typed state: two workers, one aggregate group\n");
	sfs_id_encode(1001, k[0]);
	step(sfs_kv_put(s, ex, worker, sfs_bytes(k[0], 8), sfs_str("w1")),
	     "worker put");
	sfs_id_encode(1002, k[0]);
	step(sfs_kv_put(s, ex, worker, sfs_bytes(k[0], 8), sfs_str("w2")),
	     "worker put");
	sfs_id_encode(7, k[1]);
	sfs_id_encode(8, k[2]);
	step(sfs_kv_put_many(s, ex, agg, keys, states, 1, 0), "agg put");
	if (step(sfs_kv_get_many(s, ex, agg, keys, 2, &l), "agg get")
	    == SFS_OK) {
		for (size_t i = 0; i < l.n; i++)
			printf("  group %d: %s\n", 7 + (int)i,
			       l.items[i].value.ptr ? (const char *)l.items[i].value.ptr
			                            : "(no state)");
		sfs_list_free(&l);
	}
	if (step(sfs_kv_drain(s, ex, worker, &l), "collect") == SFS_OK) {
		printf("  collected %zu worker states\n", l.n);
		sfs_list_free(&l);
	}
	if (step(sfs_exec_clear(s, ex, &n), "exec clear") == SFS_OK)
		printf("  execution clear removed %" PRIu64 " rows\n", n);
}

static void checkpoint(sfs_store *s, const char *dir)
{
	char path[4096];
	sfs_buf b;

	snprintf(path, sizeof(path), "%s/checkpoint.db", dir);
	printf("checkpoint and restore\n");
	step(sfs_kv_put(s, sfs_str("demo"), sfs_str("cp"), sfs_str("k"),
	                sfs_str("before")), "put");
	step(sfs_checkpoint(s, path, NULL, NULL), "checkpoint");
	step(sfs_kv_put(s, sfs_str("demo"), sfs_str("cp"), sfs_str("k"),
	                sfs_str("after")), "put");
	step(sfs_restore(s, path, NULL, NULL), "restore");
	if (step(sfs_kv_get(s, sfs_str("demo"), sfs_str("cp"), sfs_str("k"), &b),
	         "get") == SFS_OK) {
		printf("  after restore k = %s\n", (const char *)b.ptr);
		sfs_buf_free(&b);
	}
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/statefs-demo-XXXXXX";
	char path[64], wal[80], shm[80], reserve[80];
	sfs_config o;
	sfs_key *key = NULL;
	sfs_store *s;
	sfs_info info;

	if (!mkdtemp(dir)) {
		perror("statefs-demo: mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/state.db", dir);
	memset(&o, 0, sizeof(o));
	o.db = path;
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_EXCL;
	if (sfs_key_generate(&key) == SFS_OK) {
		o.key = key;
	} else {
		printf("(no key support: using a plaintext store)\n");
		o.flags |= SFS_OPEN_PLAINTEXT;
	}
	printf("statefs %s demo: store %s\n", SFS_VERSION_STRING, path);
	if (step(sfs_store_open(&o, &s, NULL), "open") != SFS_OK) {
		sfs_key_destroy(key);
		rmdir(dir);
		return 1;
	}
	sfs_key_destroy(key); /* the store keeps what it needs */
	kv(s);
	counters(s);
	logs(s);
	queues(s);
	typed(s);
	checkpoint(s, dir);
	if (step(sfs_store_info(s, &info), "info") == SFS_OK)
		printf("store: %s, %s, schema %d, cipher %s, %" PRIu64
		       " bytes\n", info.backend,
		       info.encrypted ? "encrypted" : "plaintext",
		       info.schema_version, info.cipher, info.size);
	sfs_store_close(s);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(shm, sizeof(shm), "%s-shm", path);
	snprintf(reserve, sizeof(reserve), "%s-reserve", path);
	unlink(wal);
	unlink(shm);
	unlink(reserve);
	unlink(path);
	if (rmdir(dir) != 0) {
		perror("statefs-demo: rmdir");
		failed = 1;
	}
	printf(failed ? "statefs-demo: some steps failed\n"
	              : "statefs-demo: done, scratch store removed\n");
	return failed;
}
