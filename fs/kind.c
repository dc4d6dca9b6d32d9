/*
 * kind.c - what each node of the tree is (the class table) and the store
 * addresses nodes stand for.
 *
 * The table is the tree of docs/filesystem.md written as data: for each
 * kind, its parent, what the store lists in it, what CREATE and MKDIR make
 * in it and which special file it is. The handlers read it instead of
 * switching on paths, so a new kind (a queue's inflight/ and dead/ were
 * one) is a row here plus its engine calls in store.c. Rows name only the
 * fields that are set: the rest are 0, NULL or FS_NONE.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* Before the mount's umask (fs_mode). */
#define DIR_MODE (S_IFDIR | 0777)
#define RW_MODE (S_IFREG | 0666)
#define RO_MODE (S_IFREG | 0444)

const fs_class fs_classes[FS_KIND_MAX] = {
	[FS_ROOT] = { .what = "root", .mode = DIR_MODE, .fam = SFS_FAM_KV,
		.child = FS_KV_SCOPE, .mkdir = FS_KV_SCOPE },
	[FS_EXEC_ROOT] = { .what = FS_NAME_EXEC, .mode = DIR_MODE, .parent = FS_ROOT,
		.fam = SFS_FAM_LOG, .child = FS_LOG_SCOPE,
		.mkdir = FS_LOG_SCOPE },
	[FS_QUEUE_ROOT] = { .what = FS_NAME_QUEUE, .mode = DIR_MODE,
		.parent = FS_ROOT, .fam = SFS_FAM_QUEUE, .child = FS_QUEUE,
		.mkdir = FS_QUEUE },
	[FS_COUNTER_ROOT] = { .what = FS_NAME_COUNTER, .mode = DIR_MODE,
		.parent = FS_ROOT, .fam = SFS_FAM_COUNTER,
		.child = FS_CNT_SCOPE, .mkdir = FS_CNT_SCOPE },

	[FS_KV_SCOPE] = { .what = "scope", .mode = DIR_MODE, .parent = FS_ROOT,
		.parts = 1, .fam = SFS_FAM_KV, .child = FS_KV_NS,
		.mkdir = FS_KV_NS },
	[FS_KV_NS] = { .what = "namespace", .mode = DIR_MODE,
		.parent = FS_KV_SCOPE, .parts = 2, .fam = SFS_FAM_KV,
		.child = FS_KV_KEY, .create = FS_KV_KEY },
	[FS_KV_KEY] = { .what = "key", .mode = RW_MODE, .parent = FS_KV_NS,
		.parts = 3 },
	[FS_KV_DRAIN] = { .what = "namespace drain", .mode = RO_MODE,
		.parent = FS_KV_NS, .parts = 2, .special = FS_NAME_DRAIN },

	[FS_LOG_SCOPE] = { .what = "log scope", .mode = DIR_MODE,
		.parent = FS_EXEC_ROOT, .parts = 1, .fam = SFS_FAM_LOG,
		.child = FS_LOG_NS, .mkdir = FS_LOG_NS },
	[FS_LOG_NS] = { .what = "log namespace", .mode = DIR_MODE,
		.parent = FS_LOG_SCOPE, .parts = 2, .fam = SFS_FAM_LOG,
		.child = FS_LOG_KEY, .mkdir = FS_LOG_KEY },
	[FS_LOG_KEY] = { .what = "log key", .mode = DIR_MODE,
		.parent = FS_LOG_NS, .parts = 3, .child = FS_LOG_ENTRY,
		.create = FS_LOG_NEW },
	[FS_LOG_ENTRY] = { .what = "log entry", .mode = RO_MODE,
		.parent = FS_LOG_KEY, .parts = 3, .by_id = 1 },
	[FS_LOG_NEW] = { .what = "new log entry", .mode = RW_MODE,
		.parent = FS_LOG_KEY, .parts = 3, .by_id = 1 },
	[FS_LOG_FOLLOW] = { .what = "log follow", .mode = RO_MODE,
		.parent = FS_LOG_KEY, .parts = 3, .special = FS_NAME_FOLLOW },

	[FS_QUEUE] = { .what = "queue", .mode = DIR_MODE,
		.parent = FS_QUEUE_ROOT, .parts = 1, .fam = SFS_FAM_QUEUE,
		.child = FS_QUEUE_ITEM, .create = FS_QUEUE_NEW,
		.state = SFS_ITEM_PENDING },
	[FS_QUEUE_ITEM] = { .what = "queue item", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .by_id = 1,
		.state = SFS_ITEM_PENDING },
	[FS_QUEUE_NEW] = { .what = "new queue item", .mode = RW_MODE,
		.parent = FS_QUEUE, .parts = 1, .by_id = 1 },
	[FS_QUEUE_POP] = { .what = "queue pop", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .special = FS_NAME_POP },
	[FS_QUEUE_DRAIN] = { .what = "queue drain", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .special = FS_NAME_DRAIN },
	[FS_QUEUE_WAIT] = { .what = "queue wait", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .special = FS_NAME_WAIT },
	[FS_QUEUE_CLAIM] = { .what = "queue claim", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .special = FS_NAME_CLAIM },
	[FS_QUEUE_FOLLOW] = { .what = "queue follow", .mode = RO_MODE,
		.parent = FS_QUEUE, .parts = 1, .special = FS_NAME_FOLLOW },
	/* Claims (docs/claims.md): fixed directories of a queue, reached by
	 * name like the special files (a listing of the queue shows exactly
	 * its pending items). Their `what` is their name. */
	[FS_INFLIGHT] = { .what = FS_NAME_INFLIGHT, .mode = DIR_MODE,
		.parent = FS_QUEUE, .parts = 1, .child = FS_INFLIGHT_ITEM,
		.state = SFS_ITEM_INFLIGHT },
	[FS_INFLIGHT_ITEM] = { .what = "in-flight item", .mode = RO_MODE,
		.parent = FS_INFLIGHT, .parts = 1, .by_id = 1,
		.state = SFS_ITEM_INFLIGHT },
	[FS_DEAD] = { .what = FS_NAME_DEAD, .mode = DIR_MODE,
		.parent = FS_QUEUE, .parts = 1, .child = FS_DEAD_ITEM,
		.state = SFS_ITEM_DEAD },
	[FS_DEAD_ITEM] = { .what = "dead letter", .mode = RO_MODE,
		.parent = FS_DEAD, .parts = 1, .by_id = 1,
		.state = SFS_ITEM_DEAD },

	[FS_CNT_SCOPE] = { .what = "counter scope", .mode = DIR_MODE,
		.parent = FS_COUNTER_ROOT, .parts = 1, .fam = SFS_FAM_COUNTER,
		.child = FS_CNT_NS, .mkdir = FS_CNT_NS },
	[FS_CNT_NS] = { .what = "counter namespace", .mode = DIR_MODE,
		.parent = FS_CNT_SCOPE, .parts = 2, .fam = SFS_FAM_COUNTER,
		.child = FS_CNT_KEY, .create = FS_CNT_KEY },
	[FS_CNT_KEY] = { .what = "counter", .mode = RW_MODE,
		.parent = FS_CNT_NS, .parts = 3 },
};

void fs_addr_free(fs_addr *a)
{
	for (int i = 0; i < 3; i++)
		sfs_buf_free(&a->part[i]);
	a->kind = FS_NONE;
	a->id = 0;
}

static int part_dup(sfs_buf *dst, const void *p, size_t n)
{
	dst->ptr = malloc(n + 1);
	if (!dst->ptr)
		return ENOMEM;
	if (n)
		memcpy(dst->ptr, p, n);
	((char *)dst->ptr)[n] = '\0';
	dst->len = n;
	return 0;
}

int fs_addr_copy(fs_addr *dst, const fs_addr *src)
{
	fs_addr a = { src->kind, { { NULL, 0 } }, src->id };

	for (int i = 0; i < 3; i++) {
		if (!src->part[i].ptr)
			continue;
		if (part_dup(&a.part[i], src->part[i].ptr, src->part[i].len)) {
			fs_addr_free(&a);
			return ENOMEM;
		}
	}
	*dst = a;
	return 0;
}

int fs_addr_child(const fs_addr *dir, fs_kind kind, const void *p, size_t n,
                  int64_t id, fs_addr *child)
{
	const fs_class *c = fs_class_of(kind);
	fs_addr a;

	if (fs_addr_copy(&a, dir))
		return ENOMEM;
	a.kind = kind;
	a.id = id;
	if (!c->by_id && !c->special && c->parts > fs_class_of(dir->kind)->parts
	    && part_dup(&a.part[c->parts - 1], p, n)) {
		fs_addr_free(&a);
		return ENOMEM;
	}
	*child = a;
	return 0;
}

fs_name_kind fs_names_of(const fs_addr *dir, fs_kind k)
{
	switch (k) {
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
	case FS_QUEUE:
		return FS_NAME_SCOPE;
	case FS_KV_KEY:
	case FS_LOG_KEY:
	case FS_CNT_KEY:
		/* The typed namespaces show their 8-byte ids in decimal, in
		 * every family, as statectl does. */
		return fs_name_key_kind(fs_part(dir, 1));
	default:
		return FS_NAME_KEY;
	}
}

void fs_id_name(int64_t id, char out[FS_ID_NAME])
{
	if (id < 0) /* never made by the engine; still one name per id */
		snprintf(out, FS_ID_NAME, "-%019" PRIu64,
		         (uint64_t)0 - (uint64_t)id);
	else
		snprintf(out, FS_ID_NAME, "%019" PRId64, id);
}

int fs_id_parse(const char *name, int64_t *id)
{
	char canon[FS_ID_NAME];
	uint64_t v = 0;
	int64_t r;
	size_t i = 0, n = strlen(name);

	if (name[0] == '-')
		i = 1;
	if (n - i != 19)
		return 0;
	for (; i < n; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(name[i] - '0'); /* 19 digits fit */
	}
	if (name[0] == '-' ? v > (uint64_t)INT64_MAX + 1 : v > INT64_MAX)
		return 0;
	r = name[0] == '-' ? (int64_t)((uint64_t)0 - v) : (int64_t)v;
	fs_id_name(r, canon);
	if (strcmp(canon, name) != 0)
		return 0;
	*id = r;
	return 1;
}
