/*
 * kind.c - what each node of the tree is (the class table) and the store
 * addresses nodes stand for.
 *
 * The table is the tree of issue 4 written as data: for each kind, its
 * parent, what the store lists in it, what CREATE and MKDIR make in it and
 * which special file it is. The handlers read it instead of switching on
 * paths, so a new kind (issue 6's inflight/ and dead/) is a row here plus
 * its engine calls in store.c.
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
	[FS_ROOT] = { "root", DIR_MODE, FS_NONE, 0, 0, SFS_FAM_KV,
	              FS_KV_SCOPE, FS_NONE, FS_KV_SCOPE, NULL },
	[FS_EXEC_ROOT] = { "exec", DIR_MODE, FS_ROOT, 0, 0, SFS_FAM_LOG,
	                   FS_LOG_SCOPE, FS_NONE, FS_LOG_SCOPE, NULL },
	[FS_QUEUE_ROOT] = { "queue", DIR_MODE, FS_ROOT, 0, 0, SFS_FAM_QUEUE,
	                    FS_QUEUE, FS_NONE, FS_QUEUE, NULL },
	[FS_COUNTER_ROOT] = { "counter", DIR_MODE, FS_ROOT, 0, 0,
	                      SFS_FAM_COUNTER, FS_CNT_SCOPE, FS_NONE,
	                      FS_CNT_SCOPE, NULL },

	[FS_KV_SCOPE] = { "scope", DIR_MODE, FS_ROOT, 1, 0, SFS_FAM_KV,
	                  FS_KV_NS, FS_NONE, FS_KV_NS, NULL },
	[FS_KV_NS] = { "namespace", DIR_MODE, FS_KV_SCOPE, 2, 0, SFS_FAM_KV,
	               FS_KV_KEY, FS_KV_KEY, FS_NONE, NULL },
	[FS_KV_KEY] = { "key", RW_MODE, FS_KV_NS, 3, 0, 0, FS_NONE, FS_NONE,
	                FS_NONE, NULL },
	[FS_KV_DRAIN] = { "namespace drain", RO_MODE, FS_KV_NS, 2, 0, 0,
	                  FS_NONE, FS_NONE, FS_NONE, ".drain" },

	[FS_LOG_SCOPE] = { "log scope", DIR_MODE, FS_EXEC_ROOT, 1, 0,
	                   SFS_FAM_LOG, FS_LOG_NS, FS_NONE, FS_LOG_NS, NULL },
	[FS_LOG_NS] = { "log namespace", DIR_MODE, FS_LOG_SCOPE, 2, 0,
	                SFS_FAM_LOG, FS_LOG_KEY, FS_NONE, FS_LOG_KEY, NULL },
	[FS_LOG_KEY] = { "log key", DIR_MODE, FS_LOG_NS, 3, 0, 0, FS_LOG_ENTRY,
	                 FS_LOG_NEW, FS_NONE, NULL },
	[FS_LOG_ENTRY] = { "log entry", RO_MODE, FS_LOG_KEY, 3, 1, 0, FS_NONE,
	                   FS_NONE, FS_NONE, NULL },
	[FS_LOG_NEW] = { "new log entry", RW_MODE, FS_LOG_KEY, 3, 1, 0,
	                 FS_NONE, FS_NONE, FS_NONE, NULL },
	[FS_LOG_FOLLOW] = { "log follow", RO_MODE, FS_LOG_KEY, 3, 0, 0,
	                    FS_NONE, FS_NONE, FS_NONE, ".follow" },

	[FS_QUEUE] = { "queue", DIR_MODE, FS_QUEUE_ROOT, 1, 0, SFS_FAM_QUEUE,
	               FS_QUEUE_ITEM, FS_QUEUE_NEW, FS_NONE, NULL },
	[FS_QUEUE_ITEM] = { "queue item", RO_MODE, FS_QUEUE, 1, 1, 0, FS_NONE,
	                    FS_NONE, FS_NONE, NULL },
	[FS_QUEUE_NEW] = { "new queue item", RW_MODE, FS_QUEUE, 1, 1, 0,
	                   FS_NONE, FS_NONE, FS_NONE, NULL },
	[FS_QUEUE_POP] = { "queue pop", RO_MODE, FS_QUEUE, 1, 0, 0, FS_NONE,
	                   FS_NONE, FS_NONE, ".pop" },
	[FS_QUEUE_DRAIN] = { "queue drain", RO_MODE, FS_QUEUE, 1, 0, 0,
	                     FS_NONE, FS_NONE, FS_NONE, ".drain" },
	[FS_QUEUE_WAIT] = { "queue wait", RO_MODE, FS_QUEUE, 1, 0, 0, FS_NONE,
	                    FS_NONE, FS_NONE, ".wait" },
	[FS_QUEUE_CLAIM] = { "queue claim", RO_MODE, FS_QUEUE, 1, 0, 0, FS_NONE,
	                     FS_NONE, FS_NONE, ".claim" },
	[FS_QUEUE_FOLLOW] = { "queue follow", RO_MODE, FS_QUEUE, 1, 0, 0,
	                      FS_NONE, FS_NONE, FS_NONE, ".follow" },
	/* Claims (docs/claims.md): fixed directories of a queue, reached by
	 * name like the special files (a listing of the queue shows exactly
	 * its pending items). Their `what` is their name. */
	[FS_INFLIGHT] = { "inflight", DIR_MODE, FS_QUEUE, 1, 0, 0,
	                  FS_INFLIGHT_ITEM, FS_NONE, FS_NONE, NULL },
	[FS_INFLIGHT_ITEM] = { "in-flight item", RO_MODE, FS_INFLIGHT, 1, 1, 0,
	                       FS_NONE, FS_NONE, FS_NONE, NULL },
	[FS_DEAD] = { "dead", DIR_MODE, FS_QUEUE, 1, 0, 0, FS_DEAD_ITEM,
	              FS_NONE, FS_NONE, NULL },
	[FS_DEAD_ITEM] = { "dead letter", RO_MODE, FS_DEAD, 1, 1, 0, FS_NONE,
	                   FS_NONE, FS_NONE, NULL },

	[FS_CNT_SCOPE] = { "counter scope", DIR_MODE, FS_COUNTER_ROOT, 1, 0,
	                   SFS_FAM_COUNTER, FS_CNT_NS, FS_NONE, FS_CNT_NS, NULL },
	[FS_CNT_NS] = { "counter namespace", DIR_MODE, FS_CNT_SCOPE, 2, 0,
	                SFS_FAM_COUNTER, FS_CNT_KEY, FS_CNT_KEY, FS_NONE, NULL },
	[FS_CNT_KEY] = { "counter", RW_MODE, FS_CNT_NS, 3, 0, 0, FS_NONE,
	                 FS_NONE, FS_NONE, NULL },
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

sfs_name_kind fs_name_kind(const fs_addr *dir, fs_kind k)
{
	switch (k) {
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
	case FS_QUEUE:
		return SFS_NAME_SCOPE;
	case FS_KV_KEY:
	case FS_LOG_KEY:
	case FS_CNT_KEY:
		/* The typed namespaces show their 8-byte ids in decimal, in
		 * every family, as statectl does. */
		return sfs_name_key_kind(fs_part(dir, 1));
	default:
		return SFS_NAME_KEY;
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
