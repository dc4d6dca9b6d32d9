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
 * its directory, or until its process has FS_ALIASES_PROC newer ones (its
 * oldest goes first). Bounds per process, so that 100 rsyncs at once do
 * not push out each other's names between a close and a rename, as a
 * bound per mount did; and over all, on memory and descriptors: at most
 * FS_ALIASES_MAX aliases (past it the oldest of a process with the most
 * goes) and procs_max processes, a pidfd each (a quarter of
 * RLIMIT_NOFILE; past it the process that committed least recently loses
 * its aliases). Nothing is written to the store.
 *
 * The table: aliases hashed by (directory node, name) for lookups and by
 * node for the entry's or item's own requests; processes hashed by tgid,
 * each with its aliases oldest first, and listed by how many they have
 * (the one with the most is found at once) and by their last commit.
 * Their pidfds are in an epoll set: each commit drops the processes that
 * exited (an epoll_wait that does not wait), so a process found in the
 * table lives, and its pid is its own. What it costs a create nobody
 * looks up again: a copy of the name at CREATE, that epoll_wait at the
 * commit, and a pidfd_open and an epoll_ctl at its process's first. A
 * lookup of a name that is no alias costs a hash chain in memory (no
 * system call); of an alias, a poll of its pidfd, and a read of
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
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_i.h"

typedef struct fs_aproc fs_aproc;

typedef struct fs_alias {
	fs_node *node;  /* the created file's node (a reference). Its
	                   parent, the queue or log key, is read without
	                   fs.lock: a new entry's node never moves */
	char *name;     /* the name in node->parent, as given */
	int64_t id;     /* the entry or item it names: the newest made */
	fs_aproc *proc; /* the creating process */
	struct fs_alias *name_next; /* chain of (node->parent, name) */
	struct fs_alias *node_next; /* chain of node: one alias a node */
	struct fs_alias *prev, *next; /* proc's aliases, oldest first */
} fs_alias;

/* A process with aliases. */
struct fs_aproc {
	pid_t tgid;
	int pidfd;      /* of it: readable once it has exited; in the epoll
	                   set, so a commit finds the exited at once */
	unsigned n;     /* its aliases: 1 to FS_ALIASES_PROC (one more for
	                   a moment in fs_alias_commit) */
	fs_alias *first, *last;
	fs_aproc *hash_next;         /* chain of tgid */
	fs_aproc *cprev, *cnext;     /* list of the processes with n */
	fs_aproc *lprev, *lnext;     /* all, by their last commit */
};

#define NAME_BUCKETS 1024 /* FS_ALIASES_MAX / 4: chains of 4 when full */
#define PROC_BUCKETS 256

struct fs_aliases {
	pthread_mutex_t lock;
	unsigned used;  /* aliases; read without the lock as a hint */
	unsigned procs, procs_max; /* processes, and their bound (pidfds) */
	int epfd;       /* the processes' pidfds; -1: none (no alias) */
	fs_alias *by_name[NAME_BUCKETS]; /* all guarded by lock */
	fs_alias *by_node[NAME_BUCKETS];
	fs_aproc *by_tgid[PROC_BUCKETS];
	fs_aproc *by_count[FS_ALIASES_PROC + 2]; /* heads, by n */
	fs_aproc *lru, *mru;
};

static unsigned name_hash(const fs_node *dn, const char *name)
{
	uint64_t h = 14695981039346656037ull ^ (uint64_t)(uintptr_t)dn;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (unsigned)(h ^ h >> 32) % NAME_BUCKETS;
}

static unsigned node_hash(const fs_node *n)
{
	uint64_t h = (uint64_t)(uintptr_t)n * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 40) % NAME_BUCKETS;
}

/* Unlinks x from the singly linked chain at *head. */
#define CHAIN_REMOVE(type, head, x, link)                                    \
	do {                                                                 \
		type **pp_ = (head);                                         \
		while (*pp_ != (x))                                          \
			pp_ = &(*pp_)->link;                                 \
		*pp_ = (x)->link;                                            \
	} while (0)

static void count_unlink(fs_aliases *t, fs_aproc *p)
{
	if (p->cprev)
		p->cprev->cnext = p->cnext;
	else
		t->by_count[p->n] = p->cnext;
	if (p->cnext)
		p->cnext->cprev = p->cprev;
	p->cprev = p->cnext = NULL;
}

/* Puts p first in the list of processes with p->n aliases. */
static void count_link(fs_aliases *t, fs_aproc *p)
{
	p->cprev = NULL;
	p->cnext = t->by_count[p->n];
	if (p->cnext)
		p->cnext->cprev = p;
	t->by_count[p->n] = p;
}

/* p's count of aliases changed by d: it moves to that count's list. */
static void count_add(fs_aliases *t, fs_aproc *p, int d)
{
	count_unlink(t, p);
	p->n += (unsigned)d;
	count_link(t, p);
}

static void lru_unlink(fs_aliases *t, fs_aproc *p)
{
	if (p->lprev)
		p->lprev->lnext = p->lnext;
	else
		t->lru = p->lnext;
	if (p->lnext)
		p->lnext->lprev = p->lprev;
	else
		t->mru = p->lprev;
	p->lprev = p->lnext = NULL;
}

static void lru_append(fs_aliases *t, fs_aproc *p)
{
	p->lprev = t->mru;
	if (t->mru)
		t->mru->lnext = p;
	else
		t->lru = p;
	t->mru = p;
}

/* Frees process p, which has no alias left. Lock held. */
static void proc_free(fs_aliases *t, fs_aproc *p)
{
	count_unlink(t, p);
	CHAIN_REMOVE(fs_aproc, &t->by_tgid[(unsigned)p->tgid % PROC_BUCKETS], p,
	             hash_next);
	lru_unlink(t, p);
	close(p->pidfd); /* out of the epoll set with it */
	free(p);
	t->procs--;
}

/* Frees alias a, and its process with its last alias. With the table's
 * lock held, or at the end (unref: 0, the inode table frees the nodes). */
static void alias_free(fs *f, fs_alias *a, int unref)
{
	fs_aliases *t = f->aliases;
	fs_aproc *p = a->proc;

	CHAIN_REMOVE(fs_alias, &t->by_name[name_hash(a->node->parent, a->name)],
	             a, name_next);
	CHAIN_REMOVE(fs_alias, &t->by_node[node_hash(a->node)], a, node_next);
	if (a->prev)
		a->prev->next = a->next;
	else
		p->first = a->next;
	if (a->next)
		a->next->prev = a->prev;
	else
		p->last = a->prev;
	count_add(t, p, -1);
	if (!p->n)
		proc_free(t, p);
	t->used--;
	if (unref)
		fs_node_unref(f, a->node);
	free(a->name);
	free(a);
}

/* Drops every alias of process p (it exited), and so p. */
static void proc_drop(fs *f, fs_aproc *p)
{
	unsigned n = p->n;

	while (n--)
		alias_free(f, p->first, 1);
}

int fs_aliases_init(fs *f)
{
	struct rlimit r;
	fs_aliases *t = calloc(1, sizeof(*f->aliases));

	if (!t)
		return ENOMEM;
	/* A pidfd per process: at most a quarter of the descriptors the
	 * daemon may open (256 where the limit is systemd's 1024). */
	t->procs_max = FS_ALIASES_MAX;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur / 4 < t->procs_max)
		t->procs_max = r.rlim_cur / 4 > 16 ? (unsigned)(r.rlim_cur / 4) : 16;
	t->epfd = epoll_create1(EPOLL_CLOEXEC); /* -1: no alias is made */
	pthread_mutex_init(&t->lock, NULL);
	f->aliases = t;
	return 0;
}

/* At fs_destroy, before the inode table goes (it frees the nodes). */
void fs_aliases_free(fs *f)
{
	fs_aliases *t = f->aliases;

	if (!t)
		return;
	while (t->lru) {
		fs_aproc *p = t->lru;
		unsigned n = p->n;

		while (n--)
			alias_free(f, p->first, 0);
	}
	if (t->epfd >= 0)
		close(t->epfd);
	pthread_mutex_destroy(&t->lock);
	free(t);
	f->aliases = NULL;
}

/* Whether p has exited (its pidfd is readable). */
static int gone(const fs_aproc *p)
{
	struct pollfd x = { .fd = p->pidfd, .events = POLLIN };

	return poll(&x, 1, 0) != 0;
}

/* Drops the processes that exited (their pidfds are readable): an
 * epoll_wait that returns at once. Called with the table's lock held. */
static void reap(fs *f)
{
	fs_aliases *t = f->aliases;
	struct epoll_event ev[16];
	int k;

	if (!t->procs)
		return;
	do {
		k = epoll_wait(t->epfd, ev, 16, 0);
		for (int i = 0; i < k; i++)
			proc_drop(f, ev[i].data.ptr);
	} while (k == 16);
}

/* The live process of leader tgid in the table, or NULL. A live
 * process's pid is no other task's id. Called with the lock held. */
static fs_aproc *proc_find(fs_aliases *t, pid_t tgid)
{
	fs_aproc *p = t->by_tgid[(unsigned)tgid % PROC_BUCKETS];

	while (p && p->tgid != tgid)
		p = p->hash_next;
	return p;
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

/* The process of the task that opened h, in the table (made if it is
 * not there yet), the most recent to commit; NULL if its pidfd cannot be
 * had (it exited, or no pidfd_open). Taken with the lock held, which it
 * releases and takes again around a pidfd_open. */
static fs_aproc *proc_of(fs *f, pid_t tid)
{
	fs_aliases *t = f->aliases;
	struct epoll_event ev = { .events = EPOLLIN };
	fs_aproc *p;
	pid_t tgid = 0;
	int fd;

	reap(f); /* what remains lives: its pid is no other task's */
	if ((p = proc_find(t, tid)))
		goto recent;
	pthread_mutex_unlock(&t->lock);
	fd = creator_of(tid, &tgid);
	pthread_mutex_lock(&t->lock);
	if (fd < 0)
		return NULL;
	if ((p = proc_find(t, tgid))) { /* a thread's, or made meanwhile */
		close(fd);
		goto recent;
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		close(fd);
		return NULL;
	}
	p->tgid = tgid;
	p->pidfd = fd;
	ev.data.ptr = p;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		free(p);
		return NULL;
	}
	p->hash_next = t->by_tgid[(unsigned)tgid % PROC_BUCKETS];
	t->by_tgid[(unsigned)tgid % PROC_BUCKETS] = p;
	count_link(t, p); /* with 0 aliases, until the caller adds one */
	lru_append(t, p);
	t->procs++;
	return p;
recent:
	lru_unlink(t, p);
	lru_append(t, p);
	return p;
}

/* The alias of name in dn of process p, or NULL. Lock held. */
static fs_alias *alias_of_proc(fs_aliases *t, fs_node *dn, const char *name,
                               const fs_aproc *p)
{
	fs_alias *a = t->by_name[name_hash(dn, name)];

	while (a && (a->proc != p || a->node->parent != dn ||
	             strcmp(a->name, name)))
		a = a->name_next;
	return a;
}

/* Keeps the table within its bounds once p has a new alias: p's oldest
 * goes past FS_ALIASES_PROC; past procs_max processes, every alias of the
 * one that committed least recently (not p: the most recent); past
 * FS_ALIASES_MAX, the oldest of a process with the most (an rsync racing
 * 99 others keeps its one). Lock held. */
static void trim(fs *f, fs_aproc *p)
{
	fs_aliases *t = f->aliases;

	if (p->n > FS_ALIASES_PROC)
		alias_free(f, p->first, 1);
	if (t->procs > t->procs_max)
		proc_drop(f, t->lru);
	if (t->used > FS_ALIASES_MAX) {
		/* Some process has two or more (procs_max <= FS_ALIASES_MAX):
		 * its oldest is not p's new one. */
		unsigned k = FS_ALIASES_PROC;

		while (k > 2 && !t->by_count[k])
			k--;
		alias_free(f, t->by_count[k]->first, 1);
	}
}

/* The alias of node n, or NULL. Lock held. */
static fs_alias *alias_of_node(fs_aliases *t, const fs_node *n)
{
	fs_alias *a = t->by_node[node_hash(n)];

	while (a && a->node != n)
		a = a->node_next;
	return a;
}

void fs_alias_commit(fs *f, fs_file *h, int64_t id)
{
	fs_aliases *t = f->aliases;
	fs_node *dn = h->node->parent;
	fs_alias *a, *old;
	fs_aproc *p = NULL;
	unsigned b;

	pthread_mutex_lock(&t->lock);
	if (!h->made_as) {
		/* Written again through its alias: it names the newest. */
		if ((a = alias_of_node(t, h->node)))
			a->id = id;
		pthread_mutex_unlock(&t->lock);
		return; /* or its alias was pushed out or dropped */
	}
	if (t->epfd < 0 || !(p = proc_of(f, h->opener)) ||
	    !(a = calloc(1, sizeof(*a)))) {
		if (p && !p->n) /* made for this alias */
			proc_free(t, p);
		pthread_mutex_unlock(&t->lock);
		free(h->made_as); /* no alias: its creator is gone */
		h->made_as = NULL;
		return;
	}
	old = alias_of_proc(t, dn, h->made_as, p); /* the name is the new one's */
	fs_node_ref(f, h->node);
	a->node = h->node;
	a->name = h->made_as;
	h->made_as = NULL;
	a->id = id;
	a->proc = p;
	b = name_hash(dn, a->name);
	a->name_next = t->by_name[b];
	t->by_name[b] = a;
	b = node_hash(a->node);
	a->node_next = t->by_node[b];
	t->by_node[b] = a;
	a->prev = p->last;
	if (p->last)
		p->last->next = a;
	else
		p->first = a;
	p->last = a;
	count_add(t, p, 1);
	t->used++;
	if (old)
		alias_free(f, old, 1);
	trim(f, p);
	pthread_mutex_unlock(&t->lock);
}

/* The alias of name in dn of the process of task tid (whose tgid is
 * tgid, or 0 if not read yet), dropping its process if it exited.
 * *seen: the name is an alias of some other process. Lock held. */
static fs_alias *alias_find(fs *f, fs_node *dn, const char *name, pid_t tid,
                            pid_t tgid, int *seen)
{
	fs_alias *a = f->aliases->by_name[name_hash(dn, name)];

	for (; a; a = a->name_next) {
		if (a->node->parent != dn || strcmp(a->name, name))
			continue;
		/* A live process's tgid is no other task's id: a caller
		 * whose id it is, is its leader. */
		if (a->proc->tgid != tid && (tgid <= 0 || a->proc->tgid != tgid)) {
			*seen = 1;
			continue;
		}
		if (!gone(a->proc))
			return a;
		/* A process has one alias of a name: nothing more to find */
		proc_drop(f, a->proc);
		return NULL;
	}
	return NULL;
}

/* The alias of name in dn for task tid, with the table's lock held (taken
 * here), or NULL with it released. */
static fs_alias *alias_lock(fs *f, fs_node *dn, const char *name, pid_t tid)
{
	fs_aliases *t = f->aliases;
	fs_alias *a;
	pid_t tgid;
	int seen = 0;

	if (tid <= 0 || __atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if ((a = alias_find(f, dn, name, tid, 0, &seen)))
		return a;
	pthread_mutex_unlock(&t->lock);
	/* Some process's alias: is the caller a thread of it? */
	if (!seen || (tgid = fs_caller_tgid(tid)) <= 0 || tgid == tid)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if ((a = alias_find(f, dn, name, tid, tgid, &seen)))
		return a;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int fs_alias_find(fs *f, fs_node *dn, const char *name, pid_t tid,
                  fs_node **node, int64_t *id)
{
	fs_alias *a = alias_lock(f, dn, name, tid);

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
	fs_alias *a;
	int found = 0;

	if (__atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return 0;
	pthread_mutex_lock(&t->lock);
	if ((a = alias_of_node(t, n))) {
		if (gone(a->proc)) {
			proc_drop(f, a->proc);
		} else {
			*id = a->id;
			found = 1;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int fs_alias_rename(fs *f, fs_node *dn, const char *name,
                    const char *newname, pid_t tid, int noreplace)
{
	fs_aliases *t;
	fs_alias *a = alias_lock(f, dn, name, tid), *b;
	char *copy;
	unsigned k;

	if (!a)
		return ENOENT;
	t = f->aliases;
	if (strcmp(name, newname) == 0) {
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	if (!(copy = strdup(newname))) {
		pthread_mutex_unlock(&t->lock);
		return ENOMEM;
	}
	/* Replacing one of its own aliases, as a rename replaces. */
	if ((b = alias_of_proc(t, dn, newname, a->proc))) {
		if (noreplace) {
			pthread_mutex_unlock(&t->lock);
			free(copy);
			return EEXIST;
		}
		alias_free(f, b, 1); /* not a's process's last: a is left */
	}
	CHAIN_REMOVE(fs_alias, &t->by_name[name_hash(dn, a->name)], a, name_next);
	free(a->name);
	a->name = copy;
	k = name_hash(dn, copy);
	a->name_next = t->by_name[k];
	t->by_name[k] = a;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void fs_alias_drop(fs *f, fs_node *n)
{
	fs_aliases *t = f->aliases;
	fs_alias *a;

	if (__atomic_load_n(&t->used, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_lock(&t->lock);
	if ((a = alias_of_node(t, n)))
		alias_free(f, a, 1);
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
