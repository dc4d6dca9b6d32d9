/*
 * fuzz_resolve.c - libFuzzer target: path resolution in fs/ (fs_resolve,
 * then fs_store_stat), over a store holding every family, binary and long
 * (hashed) names, typed namespaces, entries and items.
 *
 * Input: a first byte of flags, then a path. Its components ('/'
 * separated) are resolved from the root one at a time, as the kernel's
 * LOOKUPs walk it; with flag bit 0 the last one is resolved as a name for
 * something new (CREATE, MKDIR, a rename's target). A name over
 * FS_NAME_MAX stops the walk as the handlers do (ENAMETOOLONG). Checked:
 *   - a component that resolves is a child of its directory's kind, and
 *     the mount would list it under exactly that name: its special or
 *     fixed name, its id's name, or the codec's name of its bytes (one
 *     name per node, also for long names found in the store);
 *   - resolving gives only "found", "no such name" or "names nothing";
 *     the store answers a resolved address without failing;
 *   - no crash, leak or undefined behaviour.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define CHECK(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "fuzz_resolve: %s:%d: %s\n",        \
			        __FILE__, __LINE__, #c);                   \
			abort();                                         \
		}                                                        \
	} while (0)

static sfs_store *store;
static fs *f;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void fill(void)
{
	static const unsigned char bin[] = { 0x00, 0xff, '/', '%', 0x80, 'x' };
	unsigned char id[8] = { 0, 0, 0, 0, 0, 0, 0x04, 0x12 };
	char longkey[400];
	sfs_slice item = sfs_str("job");
	int64_t cid;

	memset(longkey, 'k', sizeof(longkey));
	CHECK(sfs_kv_put(store, sfs_str("app"), sfs_str("cfg"), sfs_str("k"),
	                 sfs_str("v")) == SFS_OK);
	CHECK(sfs_kv_put(store, sfs_str("app"), sfs_str("cfg"),
	                 sfs_bytes(bin, sizeof(bin)), sfs_str("b")) == SFS_OK);
	for (int i = 0; i < 2; i++) {
		longkey[sizeof(longkey) - 1] = (char)('A' + i);
		CHECK(sfs_kv_put(store, sfs_str("app"), sfs_str("long"),
		                 sfs_bytes(longkey, sizeof(longkey)),
		                 sfs_str("l")) == SFS_OK);
		CHECK(sfs_log_append(store, sfs_str("app"), sfs_str("long"),
		                     sfs_bytes(longkey, sizeof(longkey)),
		                     sfs_str("e"), NULL) == SFS_OK);
	}
	CHECK(sfs_kv_put(store, sfs_str("exec1"), sfs_str(SFS_NS_WORKER),
	                 sfs_bytes(id, 8), sfs_str("w")) == SFS_OK);
	CHECK(sfs_kv_put(store, sfs_str("exec1"), sfs_str(SFS_NS_WORKER),
	                 sfs_str("77"), sfs_str("w")) == SFS_OK);
	CHECK(sfs_log_append(store, sfs_str("exec1"), sfs_str("log"),
	                     sfs_str("k"), sfs_str("entry"), NULL) == SFS_OK);
	CHECK(sfs_queue_push(store, sfs_str("jobs"), &item, 1, NULL) == SFS_OK);
	CHECK(sfs_queue_push(store, sfs_str("jobs"), &item, 1, NULL) == SFS_OK);
	CHECK(sfs_queue_push(store, sfs_bytes(bin, sizeof(bin)), &item, 1,
	                     NULL) == SFS_OK);
	CHECK(sfs_counter_add(store, sfs_str("app"), sfs_str("stats"),
	                      sfs_str("n"), 1, NULL) == SFS_OK);
	CHECK(sfs_claim(store, sfs_str("jobs"), 1, 600000, &cid, NULL) ==
	      SFS_OK); /* one item in inflight/ */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sfs_config o;
	fs_config cfg;

	(void)argc, (void)argv;
	memset(&o, 0, sizeof(o));
	o.db = ":memory:";
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_PLAINTEXT;
	CHECK(sfs_store_open(&o, &store, NULL) == SFS_OK);
	fill();
	memset(&cfg, 0, sizeof(cfg));
	cfg.store = store;
	CHECK(fs_create(&cfg, &f) == 0);
	return 0;
}

/* The name the mount lists a node a under, in directory dir. */
static void check_name(const fs_addr *dir, const fs_addr *a, const char *name)
{
	const fs_class *c = fs_class_of(a->kind);
	char want[FS_NAME_MAX + 1];
	const void *p;
	size_t n, len;

	CHECK(c->parent == dir->kind);
	if (c->special) {
		CHECK(strcmp(c->special, name) == 0);
	} else if (fs_kind_is_fixed(a->kind)) {
		CHECK(strcmp(c->what, name) == 0);
	} else if (c->by_id) {
		fs_id_name(a->id, want);
		CHECK(strcmp(want, name) == 0);
	} else {
		fs_child_part(a, &p, &n);
		CHECK(p != NULL);
		CHECK(fs_name_encode(sfs_bytes(p, n), fs_names_of(dir, a->kind),
		                      want, &len) == SFS_OK);
		CHECK(len == strlen(name) && strcmp(want, name) == 0);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	fs_addr dir = { FS_ROOT, { { NULL, 0 } }, 0 }, child;
	char *path, *comp, *next;
	uint64_t sz;
	int64_t mtime;
	int rc;

	if (size < 1 || size > 4096)
		return 0;
	path = malloc(size);
	CHECK(path);
	memcpy(path, data + 1, size - 1);
	path[size - 1] = '\0'; /* a path ends at its first NUL */
	for (comp = path; comp; comp = next) {
		int last;

		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		last = !next || !*next;
		if (!*comp)
			continue; /* "a//b", a leading or trailing '/' */
		if (fs_name_check(comp))
			break; /* ENAMETOOLONG before any resolution */
		memset(&child, 0, sizeof(child));
		rc = fs_resolve(f, &dir, comp, last && (data[0] & 1), &child);
		CHECK(rc == SFS_OK || rc == SFS_NOTFOUND || rc == SFS_INVALID);
		if (rc != SFS_OK) {
			fs_addr_free(&child);
			break;
		}
		check_name(&dir, &child, comp);
		rc = fs_store_stat(f, &child, &sz, &mtime);
		if (rc != SFS_OK && rc != SFS_NOTFOUND)
			fprintf(stderr, "fuzz_resolve: stat of %s: %s (%s)\n", comp,
			        sfs_strerror(rc), sfs_errdetail());
		CHECK(rc == SFS_OK || rc == SFS_NOTFOUND);
		fs_addr_free(&dir);
		dir = child;
		if (!fs_kind_is_dir(dir.kind))
			break;
	}
	fs_addr_free(&dir);
	free(path);
	return 0;
}
