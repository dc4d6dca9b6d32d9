/*
 * alias.c - the name a new log entry or queue item was created under,
 * kept for the process that created it.
 *
 * A file created in a log key or a queue becomes, at its commit, an entry
 * or item that the store names by its id; the name given is not the
 * store's, and other processes never see it. But tools that write a file
 * and then go on by its name met ENOENT there: rsync writes `.f.XXXXXX`,
 * closes it, then stats, chmods and utimes it and renames it to `f` (exit
 * 23), install(1) chmods what it wrote (exit 1), and a script that retried
 * pushed duplicates. So each commit leaves the name an alias of the entry
 * or item just made, for the creating process (its thread group) alone:
 * its lookups find the name, the node the kernel was given at CREATE, with
 * the entry's or item's attributes; chmod, chown and times change nothing
 * (attr.c); a rename within the directory renames the alias (tree.c); an
 * unlink deletes the item; a read peeks it; an open for writing makes a
 * new one, as a create does (file.c), which the alias then names.
 *
 * Lifetime, deterministic and bounded: an alias lives until its creator
 * exits (a pidfd taken at the commit: a new process given the same pid,
 * which pid_max makes likely on a busy host, is not the creator), until
 * its entry or item is no longer there (consumed, deleted: looked at
 * whenever the alias is used), until it is unlinked or renamed away from
 * its directory, or until FS_ALIASES newer ones push it out, the oldest
 * first. Nothing is written to the store. What it costs a create nobody
 * looks up again: a copy of the name at CREATE, a pidfd_open at the
 * commit, or a poll when an alias of the same process is in the table
 * (the process's aliases share its pidfd). A lookup of a name that is no alias costs a look at the table
 * (no system call); of an alias, a poll of its pidfd, and a read of
 * /proc/<tid>/status (as caller.c does: a read that never waits for an
 * exec; never stat) only when the caller is not the creator's leader
 * thread.
 *
 * Left out: a kernel without pidfd_open (before 5.3) gets no alias (the
 * names are ENOENT after the commit, as before); so does a creator the
 * daemon cannot see (another pid namespace: pid 0).
 *
 * Locks: the table's own, taken after a handle's lock and before fs.lock.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_i.h"

typedef struct fs_alias {
	fs_node *node;  /* the created file's node (a reference); NULL: free.
	                   Its parent, the queue or log key, is read without
	                   fs.lock: a new entry's node never moves */
	char *name;     /* the name in node->parent, as given */
	int64_t id;     /* the entry or item it names: the newest made */
	pid_t tgid;     /* the creating process */
	int pidfd;      /* of it: readable once it has exited; shared by
	                   the process's slots */
	uint64_t seq;   /* when it was made: the oldest goes first */
} fs_alias;

struct fs_aliases {
	pthread_mutex_t lock;
	unsigned used;  /* slots in use; read without the lock as a hint */
	uint64_t seq;
	fs_alias slot[FS_ALIASES]; /* guarded by lock */
};

/* Closes a slot's pidfd unless another slot shares it (a process's
 * aliases share one: fs_alias_commit) or it is keep, the one a slot being
 * made takes. Called with the table's lock held, or at the end. */
static void pidfd_release(fs_aliases *t, fs_alias *a, int keep)
{
	if (a->pidfd == keep)
		return;
	for (int i = 0; i < FS_ALIASES; i++)
		if (&t->slot[i] != a && t->slot[i].node &&
		    t->slot[i].pidfd == a->pidfd)
			return;
	close(a->pidfd);
}

int fs_aliases_init(fs *f)
{
	f->aliases = calloc(1, sizeof(*f->aliases));
	if (!f->aliases)
		return ENOMEM;
	pthread_mutex_init(&f->aliases->lock, NULL);
	return 0;
}

/* At fs_destroy, before the inode table goes (it frees the nodes). */
void fs_aliases_free(fs *f)
{
	fs_aliases *t = f->aliases;

	if (!t)
		return;
	for (int i = 0; i < FS_ALIASES; i++) {
		if (!t->slot[i].node)
			continue;
		free(t->slot[i].name);
		pidfd_release(t, &t->slot[i], -1);
		t->slot[i].node = NULL;
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
	f->aliases = NULL;
}


/* Empties a slot, its pidfd closed unless shared or keep. Called with the
 * table's lock held. */
static void slot_clear_keep(fs *f, fs_alias *a, int keep)
{
	fs_node *n = a->node;

	free(a->name);
	pidfd_release(f->aliases, a, keep);
	memset(a, 0, sizeof(*a));
	f->aliases->used--;
	fs_node_unref(f, n);
}

static void slot_clear(fs *f, fs_alias *a)
{
	slot_clear_keep(f, a, -1);
}

/* Whether the slot's creator has exited (its pidfd is readable). */
static int gone(const fs_alias *a)
{
	struct pollfd p = { .fd = a->pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

/* A pidfd of the process of task tid, and its tgid; -1 if there is none
 * (it exited, or no pidfd_open). */
static int creator_of(pid_t tid, pid_t *tgid)
{
	int fd;

	if (tid <= 0)
		return -1;
	/* The common case: a thread group's leader (a single-threaded
	 * process), which its pidfd names. */
	fd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (fd >= 0) {
		*tgid = tid;
		return fd;
	}
	/* Another thread (EINVAL, or ENOENT on 6.x kernels), or gone. */
	if (errno == ENOSYS || (*tgid = fs_caller_tgid(tid)) <= 0 ||
	    *tgid == tid)
		return -1;
	/* While tid lives its leader's pid cannot be given to another. */
	return (int)syscall(SYS_pidfd_open, *tgid, 0);
}

/* The pidfd of a live process whose leader is tid, shared with an alias
 * of it already in the table (a poll, 1.2 us here, where a pidfd_open and
 * its close cost 4.4 us: a process pushing many files pays the open
 * once); -1 if there is none. A live process's pid is no other task's id,
 * so a slot of tgid tid whose process lives is tid's own process. Called
 * with the table's lock held, which the fd needs until a slot holds it. */
static int pidfd_shared(fs_aliases *t, pid_t tid)
{
	for (int i = 0; i < FS_ALIASES; i++)
		if (t->slot[i].node && t->slot[i].tgid == tid)
			return gone(&t->slot[i]) ? -1 : t->slot[i].pidfd;
	return -1;
}

void fs_alias_commit(fs *f, fs_file *h, int64_t id)
{
	fs_aliases *t = f->aliases;
	fs_alias *a, *pick = NULL;
	pid_t tgid = 0;
	int fd = -1;

	pthread_mutex_lock(&t->lock);
	if (h->made_as && h->opener > 0 &&
	    (fd = pidfd_shared(t, h->opener)) >= 0) {
		tgid = h->opener;
	} else if (h->made_as) {
		pthread_mutex_unlock(&t->lock);
		if ((fd = creator_of(h->opener, &tgid)) < 0) {
			free(h->made_as); /* its creator is gone */
			h->made_as = NULL;
			return;
		}
		pthread_mutex_lock(&t->lock);
	}
	for (int i = 0; i < FS_ALIASES; i++) {
		a = &t->slot[i];
		if (!a->node) {
			if (!pick || pick->node)
				pick = a;
			continue;
		}
		if (a->node == h->node && !h->made_as) {
			a->id = id; /* written again through the alias */
			pthread_mutex_unlock(&t->lock);
			return;
		}
		if (h->made_as && a->node->parent == h->node->parent &&
		    a->tgid == tgid && strcmp(a->name, h->made_as) == 0) {
			/* the name is the new one's now */
			slot_clear_keep(f, a, fd);
			if (!pick || pick->node)
				pick = a;
			continue;
		}
		/* The oldest, if nothing is free: no look at whether its
		 * creator lives (a syscall each), which lookups do. */
		if (!pick || (pick->node && a->seq < pick->seq))
			pick = a;
	}
	if (!h->made_as) {
		pthread_mutex_unlock(&t->lock);
		return; /* its alias was pushed out or dropped */
	}
	if (pick->node)
		slot_clear_keep(f, pick, fd);
	fs_node_ref(f, h->node);
	pick->node = h->node;
	pick->name = h->made_as;
	pick->id = id;
	pick->tgid = tgid;
	pick->pidfd = fd;
	pick->seq = ++t->seq;
	t->used++;
	h->made_as = NULL;
	pthread_mutex_unlock(&t->lock);
}

/* The slot of name in dn for the process of task tid (whose tgid is
 * tgid, or 0 if not read yet), dropping the slots of creators that
 * exited. *seen: a live alias of that name was found for some process.
 * Called with the table's lock held. */
static fs_alias *slot_find(fs *f, fs_node *dn, const char *name, pid_t tid,
                           pid_t tgid, int *seen)
{
	fs_aliases *t = f->aliases;

	for (int i = 0; i < FS_ALIASES; i++) {
		fs_alias *a = &t->slot[i];

		if (!a->node || a->node->parent != dn || strcmp(a->name, name))
			continue;
		if (gone(a)) {
			slot_clear(f, a);
			continue;
		}
		*seen = 1;
		/* A live process's tgid is no other task's id: a caller
		 * whose id it is, is its leader. */
		if (a->tgid == tid || (tgid > 0 && a->tgid == tgid))
			return a;
	}
	return NULL;
}

/* The slot of name in dn for task tid, with the table's lock held (taken
 * here), or NULL with it released. */
static fs_alias *slot_lock(fs *f, fs_node *dn, const char *name, pid_t tid)
{
	fs_aliases *t = f->aliases;
	fs_alias *a;
	pid_t tgid;
	int seen = 0;

	if (tid <= 0 || __atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if ((a = slot_find(f, dn, name, tid, 0, &seen)))
		return a;
	pthread_mutex_unlock(&t->lock);
	/* Some process's alias: is the caller a thread of it? */
	if (!seen || (tgid = fs_caller_tgid(tid)) <= 0 || tgid == tid)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if ((a = slot_find(f, dn, name, tid, tgid, &seen)))
		return a;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int fs_alias_find(fs *f, fs_node *dn, const char *name, pid_t tid,
                  fs_node **node, int64_t *id)
{
	fs_alias *a = slot_lock(f, dn, name, tid);

	if (!a)
		return 0;
	fs_node_ref(f, a->node);
	*node = a->node;
	*id = a->id;
	pthread_mutex_unlock(&f->aliases->lock);
	return 1;
}

int fs_alias_of_node(fs *f, fs_node *n, int64_t *id)
{
	fs_aliases *t = f->aliases;
	int found = 0;

	if (__atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < FS_ALIASES && !found; i++) {
		fs_alias *a = &t->slot[i];

		if (a->node != n)
			continue;
		if (gone(a)) {
			slot_clear(f, a);
			break;
		}
		*id = a->id;
		found = 1;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int fs_alias_rename(fs *f, fs_node *dn, const char *name,
                    const char *newname, pid_t tid, int noreplace)
{
	fs_alias *a = slot_lock(f, dn, name, tid), *b;
	char *copy;
	int seen = 0;

	if (!a)
		return ENOENT;
	if (strcmp(name, newname) == 0) {
		pthread_mutex_unlock(&f->aliases->lock);
		return 0;
	}
	if (!(copy = strdup(newname))) {
		pthread_mutex_unlock(&f->aliases->lock);
		return ENOMEM;
	}
	/* Replacing one of its own aliases, as a rename replaces. */
	if ((b = slot_find(f, dn, newname, a->tgid, 0, &seen))) {
		if (noreplace) {
			pthread_mutex_unlock(&f->aliases->lock);
			free(copy);
			return EEXIST;
		}
		slot_clear(f, b);
	}
	free(a->name);
	a->name = copy;
	pthread_mutex_unlock(&f->aliases->lock);
	return 0;
}

void fs_alias_drop(fs *f, fs_node *n)
{
	fs_aliases *t = f->aliases;

	if (__atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < FS_ALIASES; i++)
		if (t->slot[i].node == n)
			slot_clear(f, &t->slot[i]);
	pthread_mutex_unlock(&t->lock);
}

int fs_alias_addr(const fs_addr *a, int64_t id, fs_addr *out)
{
	fs_kind k = a->kind == FS_QUEUE_NEW ? FS_QUEUE_ITEM
	          : a->kind == FS_LOG_NEW ? FS_LOG_ENTRY
	          : fs_class_of(a->kind)->child;

	if (fs_addr_copy(out, a))
		return ENOMEM;
	out->kind = k;
	out->id = id;
	return 0;
}
