/*
 * fs_i.h - the filesystem's private model, shared by the files of fs/.
 *
 * Three layers, each in its own files:
 *   kinds and addresses (kind.c): what every node of the tree is, and the
 *     store address (scope, namespace, key or id) it stands for;
 *   the inode table (inode.c): kernel inode numbers and lookup counts for
 *     the nodes the kernel holds; nothing in it is persistent;
 *   the handlers: one libfuse operation each, translating to the few
 *     engine calls of store.c: names and lookups (lookup.c), attributes
 *     (attr.c), changes to the tree (tree.c), open files (file.c,
 *     special.c), directories being read (dir.c), .wait readers (wait.c),
 *     the names new entries and items were created under (alias.c);
 *     fs.c holds the operations table and the filesystem's lifetime.
 * The mount's reserved names and the name codec are text.h's, shared with
 * statectl.
 * Persistent truth is the store's; the kernel's caches are controlled per
 * reply (timeouts below, direct_io on every file).
 *
 * Locks: fs.lock guards the inode table and is never held across an engine
 * call or a reply. A handle's lock guards the handle. The waiter list has
 * its own lock (wait.c), and so has the table of aliases (alias.c). Order:
 * handle lock, then the aliases' lock, then fs.lock; the waiter lock is
 * never held with any of them.
 */
#ifndef STATEFS_FS_I_H
#define STATEFS_FS_I_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <syslog.h>
#include <time.h>

#include "fs.h"
#include "text.h"

/* ------------------------------------------------------------------------
 * Kinds: every node of the tree is one of these.
 */
typedef enum fs_kind {
	FS_NONE = 0,
	FS_ROOT,          /* /: kv scopes, exec, queue, counter */
	FS_EXEC_ROOT,     /* /exec */
	FS_QUEUE_ROOT,    /* /queue */
	FS_COUNTER_ROOT,  /* /counter */
	FS_KV_SCOPE,      /* /<scope> */
	FS_KV_NS,         /* /<scope>/<ns> */
	FS_KV_KEY,        /* /<scope>/<ns>/<key> */
	FS_KV_DRAIN,      /* /<scope>/<ns>/.drain */
	FS_LOG_SCOPE,     /* /exec/<scope> */
	FS_LOG_NS,        /* /exec/<scope>/<ns> */
	FS_LOG_KEY,       /* /exec/<scope>/<ns>/<key> (a directory) */
	FS_LOG_ENTRY,     /* /exec/<scope>/<ns>/<key>/<id> */
	FS_LOG_NEW,       /* a file being created in a log key: one entry */
	FS_LOG_FOLLOW,    /* /exec/<scope>/<ns>/<key>/.follow */
	FS_QUEUE,         /* /queue/<id> */
	FS_QUEUE_ITEM,    /* /queue/<id>/<item> */
	FS_QUEUE_NEW,     /* a file being created in a queue: one item */
	FS_QUEUE_POP,     /* /queue/<id>/.pop */
	FS_QUEUE_DRAIN,   /* /queue/<id>/.drain */
	FS_QUEUE_WAIT,    /* /queue/<id>/.wait */
	FS_QUEUE_CLAIM,   /* /queue/<id>/.claim: read = claim the head item */
	FS_QUEUE_FOLLOW,  /* /queue/<id>/.follow: read = pending items, then
	                     each one pushed, without taking any */
	FS_INFLIGHT,      /* /queue/<id>/inflight (reached by name) */
	FS_INFLIGHT_ITEM, /* /queue/<id>/inflight/<item> */
	FS_DEAD,          /* /queue/<id>/dead (reached by name) */
	FS_DEAD_ITEM,     /* /queue/<id>/dead/<item> */
	FS_CNT_SCOPE,     /* /counter/<scope> */
	FS_CNT_NS,        /* /counter/<scope>/<ns> */
	FS_CNT_KEY,       /* /counter/<scope>/<ns>/<key> */
	FS_KIND_MAX
} fs_kind;

/* Static facts about a kind. */
typedef struct fs_class {
	const char *what;     /* for log lines: "key", "queue item" */
	mode_t mode;          /* file type and permission bits */
	fs_kind parent;       /* the kind of the directory holding it */
	int parts;            /* byte strings in its address (scope, ns, key) */
	int by_id;            /* named by a store id (entries, items) */
	sfs_family fam;       /* the family of sfs_dir_* calls; 0: none */
	sfs_item_state state; /* queue items, and the directories that list
	                         them: the state of those items; 0: none */
	fs_kind child;        /* directories: the kind the store lists in it */
	fs_kind create;       /* the kind CREATE makes in it; 0: EPERM */
	fs_kind mkdir;        /* the kind MKDIR makes in it; 0: EPERM */
	const char *special;  /* special files: the name they are reached by */
} fs_class;

extern const fs_class fs_classes[FS_KIND_MAX];

static inline const fs_class *fs_class_of(fs_kind k)
{
	return &fs_classes[k];
}

static inline sfs_item_state fs_item_state(fs_kind k)
{
	return fs_classes[k].state;
}

static inline int fs_kind_is_dir(fs_kind k)
{
	return S_ISDIR(fs_classes[k].mode);
}

/* Special files are reached by name only; never listed. */
static inline int fs_kind_is_special(fs_kind k)
{
	return fs_classes[k].special != NULL;
}

/* Special files whose READ changes the store (.drain, .pop, .wait,
 * .claim): reading one needs the permission to change it. */
static inline int fs_kind_takes(fs_kind k)
{
	return k == FS_KV_DRAIN || k == FS_QUEUE_POP || k == FS_QUEUE_DRAIN ||
	       k == FS_QUEUE_WAIT || k == FS_QUEUE_CLAIM;
}

/* Special files read as a stream of JSON Lines (special.c): the drains,
 * taken page by page and acked as delivered, and .follow, which never
 * ends and takes nothing. */
static inline int fs_kind_streams(fs_kind k)
{
	return k == FS_KV_DRAIN || k == FS_QUEUE_DRAIN || k == FS_LOG_FOLLOW ||
	       k == FS_QUEUE_FOLLOW;
}

/* Fixed directories: exec, queue, counter at the root, inflight and dead
 * in a queue. Their name is the class's `what`. */
static inline int fs_kind_is_fixed(fs_kind k)
{
	return k == FS_EXEC_ROOT || k == FS_QUEUE_ROOT || k == FS_COUNTER_ROOT ||
	       k == FS_INFLIGHT || k == FS_DEAD;
}

/* ------------------------------------------------------------------------
 * Addresses: where in the store a node is.
 */
typedef struct fs_addr {
	fs_kind kind;
	sfs_buf part[3];  /* scope (or queue id), ns, key: owned, never NULL
	                     when present, so an empty string stays a string */
	int64_t id;       /* entries and items */
} fs_addr;

static inline sfs_slice fs_part(const fs_addr *a, int i)
{
	return sfs_bytes(a->part[i].ptr, a->part[i].len);
}

void fs_addr_free(fs_addr *a);
/* Copies src into *dst (dst is overwritten). 0 or ENOMEM. */
int fs_addr_copy(fs_addr *dst, const fs_addr *src);
/* *child = dir + one more part (bytes) or an id, as kind. 0 or ENOMEM. */
int fs_addr_child(const fs_addr *dir, fs_kind kind, const void *p, size_t n,
                  int64_t id, fs_addr *child);
/* The codec kind of the names of dir's children of kind k. */
fs_name_kind fs_names_of(const fs_addr *dir, fs_kind k);
/* Entry and item names: the id, zero-padded to 19 digits (every int64)
 * so that ls and globs sort them in id order. */
#define FS_ID_NAME 24
void fs_id_name(int64_t id, char out[FS_ID_NAME]);
/* Parses an entry or item name; 0 if it is not one. */
int fs_id_parse(const char *name, int64_t *id);

/* ------------------------------------------------------------------------
 * The inode table (inode.c).
 */
typedef struct fs_node {
	uint64_t ino;              /* immutable */
	fs_kind kind;              /* immutable */
	struct fs_node *parent;    /* holds a reference on the parent */
	unsigned char *name;       /* the part it adds to its parent's address */
	size_t namelen;
	int64_t id;                /* entries, items; a sequence for new files */
	uint64_t ihash;            /* hash of the identity (parent, kind, name) */
	uint64_t nlookup;          /* the kernel's lookups */
	uint32_t refs;             /* children, open handles, waiting readers */
	uint32_t pending;          /* handles holding it empty but not yet
	                              stored: a create, or an O_TRUNC open
	                              closed without writing (file.c) */
	uint64_t pending_seq;      /* fs.file_seq when a create last began */
	uint64_t stored_seq;       /* fs.file_seq when a value was last stored
	                              through the mount at it: what others see
	                              is the newer of it and the unsaved images
	                              and creates (fs_node_view,
	                              fs_node_pending_empty), and a handle whose
	                              only change is a cut does not undo a
	                              later value (commit_value, file.c) */
	unsigned unlinked : 1;     /* out of the name table */
	unsigned has_kept : 1;     /* kept holds the bytes below */
	unsigned has_mtime : 1;    /* mtime was given (touch -d, cp -a's
	                              futimens) while the value's changes
	                              were unsaved: stored after them
	                              (fs_node_give_mtime) */
	int64_t mtime;
	unsigned kept_over : 1;    /* they were not kept: over max_buffered */
	sfs_buf kept;              /* the value as it was just before it was
	                              deleted or replaced through the mount
	                              while open for reading and writing: what
	                              reads of those handles show of the
	                              store's bytes once the node is unlinked
	                              (file.c, fs_file_keep). Counted in
	                              fs.buffered; freed with the node */
	unsigned ephemeral : 1;    /* a log key or queue made by mkdir that the
	                              store cannot hold empty: lives here */
	struct fs_file *files;     /* its open files (fs_file.node_next) */
	struct fs_node *ino_next;  /* chains; everything here guarded by fs.lock */
	struct fs_node *name_next;
} fs_node;

int fs_inodes_init(fs *f);
void fs_inodes_free(fs *f);
/* The node of an inode number the kernel gave us, or NULL. */
fs_node *fs_node_get(fs *f, fuse_ino_t ino);
/* The address of a node, copied under the lock. 0, ENOENT (unlinked and
 * want_linked), ENOMEM. */
int fs_node_addr(fs *f, fs_node *n, fs_addr *out);
/* Finds or makes the child node (parent, kind, name or id) and counts one
 * kernel lookup (count) or one reference (!count). NULL: ENOMEM. */
fs_node *fs_node_child(fs *f, fs_node *parent, fs_kind kind, const void *p,
                       size_t n, int64_t id, int count);
/* The child node if the table has it (no count taken; valid only while the
 * caller holds the parent's request), else NULL. */
fs_node *fs_node_find(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t n, int64_t id);
/* Whether the table holds that child as a pending create or an ephemeral
 * directory: something lookup must find though the store does not. */
int fs_node_find_held(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t n, int64_t id);
/* A node for a file being created that has no name yet (new entries and
 * items), with one kernel lookup. */
fs_node *fs_node_anon(fs *f, fs_node *parent, fs_kind kind);
/* Counts one more kernel lookup of n (an alias's node, alias.c). */
void fs_node_count(fs *f, fs_node *n);
void fs_node_forget(fs *f, fs_node *n, uint64_t nlookup);
void fs_node_trim(fs *f);
void fs_node_ref(fs *f, fs_node *n);
void fs_node_unref(fs *f, fs_node *n);
/* Takes the child (if present) out of the name table: deleted or replaced.
 * Open handles keep working on their bytes. */
void fs_node_unlink(fs *f, fs_node *parent, fs_kind kind, const void *p,
                    size_t n, int64_t id);
/* A rename: the node (if present) now stands for (newparent, name). */
void fs_node_move(fs *f, fs_node *parent, fs_kind kind, const void *p,
                  size_t n, fs_node *newparent, const void *np, size_t nn);
/* RENAME_EXCHANGE of two files of one kind: each node takes the other's
 * name (one the kernel never looked up: the other moves). */
void fs_node_exchange(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t len, fs_node *newparent, const void *np,
                      size_t nn);
/* Sets or clears the ephemeral flag; pending creates are counted with
 * fs_node_pending(+1/-1). */
void fs_node_set_ephemeral(fs *f, fs_node *n, int on);
void fs_node_pending(fs *f, fs_node *n, int delta);
/* Whether lookup should find a node the store does not hold (a pending
 * create or an ephemeral directory). */
int fs_node_held(fs *f, fs_node *n);
/* The node's open handles for writing other than one (fs_node_writers),
 * for fs_caller_close: how many there are, and the tasks that opened
 * those whose opener's last close of them was not seen
 * (fs_file.pub_closed). A task's descriptors on the file, up to the
 * number of times it is listed, may be theirs. */
#define FS_OPENERS 8
typedef struct fs_others {
	unsigned writers;          /* all of them */
	unsigned n;                /* openers listed: at most FS_OPENERS (a
	                              task listed fewer times than it opened
	                              them is taken to hold its descriptors
	                              for the closing handle: the old
	                              behaviour) */
	pid_t opener[FS_OPENERS];
} fs_others;
/* Fills *out for the node's handles open for writing other than h. */
void fs_node_writers(fs *f, fs_node *n, const struct fs_file *h,
                     fs_others *out);
/* Counts one more pending create; with excl, only if there is none yet
 * (O_EXCL). Returns whether it counted. */
int fs_node_pending_claim(fs *f, fs_node *n, int excl);
/* Whether the mount must show it empty whatever the store holds: a pending
 * create (node->pending) begun after the last value stored through the
 * mount. */
int fs_node_pending_empty(fs *f, fs_node *n);
/* A value was stored through the mount at n (fs_node.stored_seq); returns
 * the stamp. fs_node_stored_seq reads it. */
uint64_t fs_node_stored(fs *f, fs_node *n);
uint64_t fs_node_stored_seq(fs *f, const fs_node *n);
/* Whether the node still stands for its name (not deleted or replaced). */
int fs_node_linked(fs *f, fs_node *n);
/* Whether the node still stands for its name and has a file open for
 * reading and writing (O_RDWR): a delete or replacement must keep its
 * bytes for it. */
int fs_node_wants_kept(fs *f, fs_node *n);
/* Gives the node the bytes of its value (*v, taken), replacing what a
 * delete or rename that then failed kept; freed at once when the node was
 * unlinked meanwhile. They count against max_buffered, as the bytes of
 * open files do; past it they are not kept, and reads of the unlinked
 * node's handles fail (fs_node_kept). */
void fs_node_set_kept(fs *f, fs_node *n, sfs_buf *v);
/* Once the node is unlinked: 1 and its kept bytes in *out (borrowed for
 * as long as the caller holds a reference on the node: an unlinked
 * node's are never replaced), or -1 when they were over max_buffered.
 * Else 0: the store holds its bytes. */
int fs_node_kept(fs *f, fs_node *n, const sfs_buf **out);
/* The node's open files: linked at open, unlinked at free. */
void fs_node_file_add(fs *f, fs_node *n, struct fs_file *h);
void fs_node_file_del(fs *f, fs_node *n, struct fs_file *h);
/* What a node's open files show GETATTR (as they published it): through
 * one handle (h), or without one the most recently changed handle with
 * unsaved changes, unless a value stored through the mount since is
 * newer. */
typedef struct fs_view {
	int files;         /* the node has open files (h: that one counts;
	                      without h, a cancelled one does not) */
	int unsaved;       /* size and mtime are an unsaved image's */
	uint64_t size;     /* h's, the unsaved image's, else an open file's */
	int64_t mtime_ns;
} fs_view;
void fs_node_view(fs *f, fs_node *n, struct fs_file *h, fs_view *out);
/* A time given to a value whose node has changes not yet stored (an open
 * file's, a create's): 1, and the node keeps it for the commit that
 * stores them (fs_node_take_mtime); a write or truncation before that
 * drops it (file.c, publish_as), as a write after a time given makes the
 * write's time. 0: nothing unsaved; the caller stores the time. Both
 * under the value's commit lock (fs.value_mu). */
int fs_node_give_mtime(fs *f, fs_node *n, int64_t mtime_ns);
int fs_node_take_mtime(fs *f, fs_node *n, int64_t *mtime_ns);
/* Whether dir has a child that a pending create holds (rmdir must say
 * ENOTEMPTY though the store has nothing in it). */
int fs_node_holds_children(fs *f, fs_node *dir);
/* Byte strings owned by fs/ (an sfs_list is one engine block, not ours). */
typedef struct fs_names {
	sfs_buf *v;
	size_t n;
} fs_names;
void fs_names_free(fs_names *l);
/* The names of dir's children the store may not hold, for its listing:
 * ephemeral ones (log keys made by mkdir) and files being created
 * (node.pending). 0 or ENOMEM. */
int fs_node_held_children(fs *f, fs_node *dir, fs_names *out);
/* Whether any node is being created (fs.pending_nodes): listings look
 * for such children only then. */
int fs_nodes_pending(fs *f);
/* A node's identity hash, and its parent's inode number, under the lock. */
uint64_t fs_node_ihash(fs *f, fs_node *n);
uint64_t fs_node_parent_ino(fs *f, fs_node *n);
/* The inode number the kernel sees for a child that has no node (plain
 * READDIR): the number a lookup would give it, from the directory's
 * identity hash. */
uint64_t fs_ino_hash(uint64_t dir_ihash, fs_kind kind, const void *p,
                     size_t n, int64_t id);

/* ------------------------------------------------------------------------
 * The filesystem.
 */
struct fs_waitq;
typedef struct fs_procs fs_procs;
typedef struct fs_aliases fs_aliases;

/* Open handles are linked into the fs (under fs.lock): after a forced
 * unmount the kernel sends no RELEASE, and fs_destroy frees what is left. */
typedef struct fs_link {
	struct fs_link *prev, *next;
} fs_link;
void fs_link_add(fs *f, fs_link *head, fs_link *l);
void fs_link_del(fs *f, fs_link *l);

/* A delivered item whose ack failed, kept for fs_tick (special.c): a
 * .pop's or .wait's claim (item 0: the claim's one item, ended DONE), one
 * row of a drain's claim (settled DONE), or FS_UNSETTLED_RELEASE: the
 * release of a closed drain's claim, tried once the entries before it,
 * its rows, are settled. */
struct fs_unsettled {
	int64_t claim;
	int64_t item;
};

#define FS_UNSETTLED_RELEASE ((int64_t)-1)

#define FS_VALUE_LOCKS 16
struct fs {
	sfs_store *store;
	int readonly;
	uint64_t max_value;
	int64_t lease_ms;          /* claims through the mount; 0: the store's */
	long test_commit_delay_ms; /* tests only: the pause before the commit
	                              of held FLUSHes
	                              (STATEFS_TEST_COMMIT_DELAY_MS), so that
	                              the daemon can be killed in between */
	long test_deliver_delay_ms; /* tests only: the pause between taking an
	                              item for a special file and answering
	                              (STATEFS_TEST_DELIVER_DELAY_MS), so that
	                              an interrupt can land in between; an
	                              interrupt ends it */
	char *test_deliver_gate;   /* tests only: the same pause, for as long
	                              as this file exists
	                              (STATEFS_TEST_DELIVER_GATE) */
	sfs_log_fn log;
	void *log_ctx;
	uid_t uid;
	gid_t gid;
	mode_t umask;              /* cleared from every mode shown */
	int async_close;           /* answer before the commit (loop.c) */
	uint32_t async_error;      /* commits of changes already answered
	                              that failed, as Linux's errseq_t: the
	                              last errno, a seen bit and a count
	                              (fs_async_*, file.c); atomic */
	struct timespec start;     /* directories' times: the mount */

	pthread_mutex_t value_mu[FS_VALUE_LOCKS]; /* a value's commit with
	                              the check before it, by inode number
	                              (commit_value, file.c) */
	pthread_mutex_t lock;      /* guards the inode table below */
	fs_node **by_ino;
	size_t ino_buckets;
	fs_node **by_name;
	size_t name_buckets;
	size_t nodes;
	size_t nodes_peak;         /* the most nodes since the last trim
	                              (fs_node_trim); guarded by lock */
	int64_t anon_seq;
	fs_node *root, *exec_root, *queue_root, *counter_root;
	fs_link files, dirs;       /* open handles; guarded by lock */
	uint64_t max_buffered;     /* bound on the bytes write handles hold */
	uint64_t buffered;         /* what they hold; guarded by lock */
	uint64_t file_seq;         /* orders changes of images; guarded by
	                              lock */
	size_t pending_nodes;      /* nodes being created (node.pending > 0);
	                              guarded by lock */

	struct fs_waitq *waitq;    /* .wait readers (wait.c) */
	fs_aliases *aliases;       /* names new entries and items were
	                              created under (alias.c) */
	fs_procs *procs;           /* FLUSH's /proc files (caller.c); may be
	                              NULL */
	struct fs_loop *loop;      /* the pool serving the session (loop.c),
	                              while fs_loop runs; else NULL */
	pthread_mutex_t tick_mu;   /* held by fs_tick while it settles what
	                              it took out of unsettled, and by a
	                              drain's release while it looks for its
	                              own there (order: a handle's lock,
	                              tick_mu, unsettled_mu) */
	pthread_mutex_t unsettled_mu; /* guards the two below */
	struct fs_unsettled *unsettled; /* acks of items a .pop, a .wait or
	                              a drain delivered that failed (the
	                              server out of reach): fs_tick tries
	                              again (special.c) */
	size_t nunsettled;
};

void fs_log(fs *f, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The one place where an engine status becomes an errno. For the statuses
 * that mean the engine itself failed (I/O, corruption, authentication, a
 * bug) it also logs op, the status and the engine's detail. */
int fs_errno(fs *f, int status, const char *op);

/* Kernel cache timeouts, seconds: see docs/filesystem.md. */
#define FS_TTL_DIR 1.0     /* directories: entry and attributes */
#define FS_TTL_ENTRY 1.0   /* a file's name (positive lookups only) */
#define FS_TTL_ATTR 0.0    /* a file's size and mtime from LOOKUP/GETATTR */
#define FS_TTL_LIST 0.02   /* a file's attributes from READDIRPLUS: long
                              enough for ls -l to stat what it listed */

/* The timeouts a reply gives a node of kind k. */
void fs_ttl(fs_kind k, double *entry, double *attr);
/* CLOCK_MONOTONIC in ns: for what the daemon times on its own, which a
 * step of the wall clock must not move. */
int64_t fs_mono_ns(void);
int64_t fs_write_time_ns(void);
/* Now on clock, plus ms: the deadline for a pthread_cond_timedwait on a
 * condition variable that waits on that clock. */
void fs_deadline(clockid_t clock, long ms, struct timespec *ts);
/* ENAMETOOLONG when a name is longer than any the mount shows or takes
 * (FS_NAME_MAX, statfs's f_namemax; the kernel passes FUSE names of up to
 * 1024 bytes), else 0. Every handler that takes a name checks it first, as
 * a local filesystem does, so such a name is ENAMETOOLONG at lookup,
 * create, mkdir, rename, unlink and rmdir alike. */
static inline int fs_name_check(const char *name)
{
	return strnlen(name, FS_NAME_MAX + 1) > FS_NAME_MAX ? ENAMETOOLONG : 0;
}
/* Decodes name as a child of dir: a fixed directory, a special file, an
 * entry id or a byte string in the codec (long names found by a scan).
 * SFS_OK with *out set. A name that names nothing is SFS_NOTFOUND when
 * looking (naming 0: LOOKUP, UNLINK...) and SFS_INVALID when naming
 * something new (CREATE, MKDIR, a rename's target), where it is EINVAL. */
int fs_resolve(fs *f, const fs_addr *dir, const char *name, int naming,
               fs_addr *out);
/* The part a child address adds to its directory's (for the node table). */
void fs_child_part(const fs_addr *a, const void **p, size_t *n);
/* The node and address of a request's inode; ENOENT for an inode number
 * we do not know (cannot happen with a well-behaved kernel). */
int fs_node_addr_of(fs *f, fuse_ino_t ino, fs_node **n, fs_addr *a);
/* Replies with an entry for child (counts one lookup). */
void fs_reply_entry(fs *f, fuse_req_t req, fs_node *dir,
                    const fs_addr *child, uint64_t size, int64_t mtime);
/* An entry for child with one lookup counted; *node (may be NULL) gets
 * its node. 0 or ENOMEM. */
int fs_entry_fill(fs *f, fs_node *dir, const fs_addr *child, uint64_t size,
                  int64_t mtime, struct fuse_entry_param *e, fs_node **node);
/* The attributes of a node of kind k with the given size and time. */
void fs_stat_fill(fs *f, fs_kind k, uint64_t ino, uint64_t size,
                  int64_t mtime_ns, struct stat *st);

/* ------------------------------------------------------------------------
 * Engine calls per kind (store.c).
 */

/* Whether the address exists, with its size and time (directories: 0 and
 * the mount time). SFS_NOTFOUND when it does not. */
int fs_store_stat(fs *f, const fs_addr *a, uint64_t *size, int64_t *mtime);

/* One listed child of a directory, as a page of the store gives it. */
typedef struct fs_dent {
	fs_kind kind;
	const void *p;     /* its part (borrowed from the page), or NULL */
	size_t n;
	int64_t id;
	uint64_t size;
	int64_t mtime_ns;
} fs_dent;

/* Where a listing continues: strictly after this part or id. */
typedef struct fs_cursor {
	int set;
	sfs_buf key;
	int64_t id;
} fs_cursor;

/* A page of at most limit children of dir after the cursor, into *out;
 * fs_store_dent() reads item i of it. names: only the children's names
 * are read (sfs_dir_names), their sizes and times may be 0. */
int fs_store_list(fs *f, const fs_addr *dir, const fs_cursor *after,
                  long limit, int names, sfs_list *out);
void fs_store_dent(const fs_addr *dir, const sfs_list *page, size_t i,
                   fs_dent *out);
int fs_cursor_set(fs_cursor *c, const fs_dent *d);
void fs_cursor_free(fs_cursor *c);

/* Finds the child whose (long, hashed) name is name: the prefix is the
 * decoded part. *out gets the child's address. SFS_NOTFOUND if none. */
int fs_store_resolve(fs *f, const fs_addr *dir, fs_kind kind,
                     const char *name, sfs_slice prefix, fs_addr *out);

int fs_store_mkdir(fs *f, const fs_addr *a);
/* Removes an empty directory; one that the store no longer holds (its last
 * entry went) is gone already, which is success. */
int fs_store_rmdir(fs *f, const fs_addr *a);
int fs_store_unlink(fs *f, const fs_addr *a);
/* Rename within one family. flags: SFS_RENAME_NOREPLACE. */
int fs_store_rename(fs *f, const fs_addr *from, const fs_addr *to,
                    unsigned flags);
/* Whether a log key directory has an entry (SFS_OK) or not
 * (SFS_NOTFOUND); a queue whether it holds an item. */
int fs_store_nonempty(fs *f, const fs_addr *a);

/* The time a node of kind k shows as its mtime, from what the store says
 * of it: the store's mtime, except for in-flight items (their lease's
 * end). */
int64_t fs_mtime(fs_kind k, const sfs_stat *st);

/* The decimal text a counter reads as ("42\n"), into out (>= 24 bytes);
 * returns its length. */
size_t fs_counter_text(int64_t v, char *out);

/* Counter input (counter.c): a token, "N" or "=N" sets, "+N" and "-N"
 * add, blanks around it, at most FS_COUNTER_INPUT_MAX bytes. Returns 0 for
 * a whole token (*set: 1 set, 0 add; *v the number), 1 for a proper prefix
 * of one (or nothing), -1 for what cannot become one. */
#define FS_COUNTER_INPUT_MAX 64
int fs_counter_parse(const unsigned char *s, size_t n, int *set, int64_t *v);
/* What one commit of a counter file takes: tokens, one per line (blank
 * lines allowed), at most FS_COUNTER_TOKENS_MAX bytes in all, as one
 * operation: the last set plus the adds after it (*set 1), or the adds'
 * sum (*set 0). Returns 0 with at least one token and no line that is a
 * token's prefix; 1 while the last line is a prefix of one (or there is
 * nothing yet); -1 for a line that cannot become one, or adds whose sum
 * leaves int64. */
#define FS_COUNTER_TOKENS_MAX 4096
int fs_counter_tokens(const unsigned char *s, size_t n, int *set, int64_t *v);

/* ------------------------------------------------------------------------
 * What a handle writing a value changed (image.c): see that file. Not
 * locked itself: it lives in a handle, under the handle's lock.
 */
#define FS_NO_CUT UINT64_MAX

typedef struct fs_extent {
	uint64_t off;
	size_t len, cap;
	unsigned char *p;
} fs_extent;

typedef struct fs_image {
	uint64_t base;     /* the value's length when the image began (0 for a
	                      create or O_TRUNC) */
	uint64_t cut;      /* the shortest length it was cut to, FS_NO_CUT if
	                      never: the store's bytes below min(cut, base)
	                      show through */
	uint64_t size;     /* the image's length */
	fs_extent *ext;    /* written bytes: sorted, disjoint, not touching */
	size_t n, cap;
	unsigned char *app; /* O_APPEND: bytes for the end of the value as it
	                      is at the commit */
	size_t applen, appcap;
	size_t held;       /* bytes held: the extents' and the appended */
} fs_image;

void fs_image_init(fs_image *im, uint64_t base, int truncated);
void fs_image_free(fs_image *im);
/* After a commit: nothing changed over a value of length base. */
void fs_image_reset(fs_image *im, uint64_t base);
/* Whether it differs from the value it began from. */
int fs_image_changed(const fs_image *im);
/* The bytes a write of n at off would add to im->held. */
size_t fs_image_added(const fs_image *im, uint64_t off, size_t n);
/* Changes; 0 or ENOMEM (then nothing changed). */
int fs_image_write(fs_image *im, uint64_t off, const void *p, size_t n);
int fs_image_append(fs_image *im, const void *p, size_t n);
int fs_image_truncate(fs_image *im, uint64_t size);
/* The image's bytes [off, off + n) into out, *got of them (fewer at its
 * end): the store's through base(ctx, off, n, out) (0 or an errno; it
 * leaves what the store lacks as zeros), the rest from the image. */
int fs_image_read(const fs_image *im, uint64_t off, size_t n,
                  unsigned char *out, size_t *got,
                  int (*base)(void *ctx, uint64_t off, size_t n,
                              unsigned char *out),
                  void *ctx);
/* The commit as an edit list into e (room for im->n + 3), borrowing the
 * image's bytes; returns the count. */
size_t fs_image_edits(const fs_image *im, sfs_edit *e);

/* ------------------------------------------------------------------------
 * Open files (file.c, special.c).
 */
/* The tasks (thread ids, as FUSE gives them) that changed a handle since
 * their last close of it: the writes since its last commit, and the
 * opener's create or truncation. n > FS_WRITERS: more than it holds. */
#define FS_WRITERS 4
typedef struct fs_writers {
	pid_t pid[FS_WRITERS];
	unsigned n;
} fs_writers;

typedef struct fs_file {
	fs_link link;              /* first: in fs.files */
	fs_node *node;             /* a reference for the life of the handle */
	fs_kind kind;
	int flags;                 /* open flags */
	pid_t opener;              /* the task that opened it (OPEN, CREATE) */
	pthread_mutex_t lock;      /* guards what follows */
	unsigned char *buf;        /* a snapshot, popped bytes, or a new entry's
	                              or item's bytes */
	size_t len, cap;
	uint64_t item_base;        /* new entries and items: the file offset
	                              of buf[0] (where the bytes not yet
	                              committed start; 0 until a commit) */
	fs_image img;              /* a value open for writing (image.c):
	                              its changes; buf is unused */
	size_t held;               /* bytes counted in fs.buffered */
	unsigned char *in;         /* counters: the text written so far */
	size_t inlen;
	unsigned dirty : 1;        /* the image differs from the store */
	unsigned written : 1;      /* written (or ftruncated) since the last
	                              commit: what makes FLUSH commit */
	unsigned loaded : 1;       /* special files: bytes taken from the store */
	unsigned given : 1;        /* .pop, .wait, .claim: what was taken was
	                              delivered (a reply carried it) */
	unsigned committed : 1;    /* new entries and items: pushed, or the
	                              push refused, once */
	unsigned item_rebase : 1;  /* new entries and items: committed, and
	                              nothing written since: the next write
	                              starts the next one where it lands */
	unsigned created : 1;      /* made by CREATE (counters: set 0 if never
	                              written) */
	unsigned pending : 1;      /* holds one count of node->pending */
	unsigned image : 1;        /* img is in use (a value open for writing) */
	unsigned at_end : 1;       /* a value's snapshot: a read was told it
	                              was at the end (reads after that follow
	                              the value, file.c) */
	unsigned cancelled : 1;    /* a process holding it died of a signal
	                              with changes unsaved: nothing of it is
	                              committed any more, writes fail (EIO) */
	unsigned idle_flushes : 2; /* FLUSHes with nothing written */
	fs_writers writers;        /* who changed it (fs_caller_close) */
	uint64_t cut_stored;       /* node->stored_seq when the image was last
	                              cut (O_TRUNC, ftruncate) */
	uint64_t base_stored;      /* node->stored_seq when the image's base
	                              length was last read from the store */
	int refused;               /* the errno of a refused write (EFBIG,
	                              ENOBUFS, EINVAL) or 0: the handle
	                              commits nothing, not even its create or
	                              truncation, and its later writes,
	                              FLUSHes and FSYNCs fail with it */
	uint32_t async_since;      /* fs.async_error when opened, or when
	                              an fsync of it last reported it */
	int64_t claim;             /* .pop, .wait, .claim: the claim that
	                              took the item (0: none) */
	/* Guarded by fs.lock, so GETATTR can see them without the handle's
	 * lock (file.c publishes them under it): */
	struct fs_file *node_next; /* the node's open files */
	uint64_t pub_size;         /* the length it shows: its image's or
	                              snapshot's */
	int64_t pub_mtime;         /* when its image last changed */
	uint64_t pub_seq;          /* fs.file_seq at that change; 0: nothing
	                              unsaved */
	int pub_cancelled;         /* cancelled (a killed writer's): it shows
	                              nothing of the file to others */
	int pub_closed;            /* a FLUSH from its opener was its last
	                              close there (FS_CLOSE_LAST): the opener
	                              holds no descriptor of it, RELEASE or
	                              not (fs_node_writers) */
	struct fs_stream *stream;  /* drains, .follow (special.c) */
	char *made_as;             /* new entries and items made by CREATE:
	                              the name given, until their first
	                              commit gives it to the aliases */
} fs_file;

fs_file *fs_file_new(fs *f, fs_node *n, fs_kind kind, int flags,
                     pid_t opener);
void fs_file_free(fs *f, fs_file *h);
/* At fs_destroy: the handles no RELEASE came for (nodes are gone too). */
void fs_files_free_all(fs *f);
void fs_dirs_free_all(fs *f);
int fs_file_reserve(fs_file *h, size_t cap);

/* Handlers, shared with the operations table in fs.c. */
/* lookup.c */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_op_forget_multi(fuse_req_t req, size_t count,
                        struct fuse_forget_data *forgets);
/* attr.c */
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                   int valid, struct fuse_file_info *fi);
void fs_op_access(fuse_req_t req, fuse_ino_t ino, int mask);
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino);
/* tree.c */
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                 mode_t mode);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                  fuse_ino_t newparent, const char *newname,
                  unsigned int flags);
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                 mode_t mode, dev_t rdev);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                   const char *name);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                const char *newname);
/* file.c */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                 size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                 struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                           struct fuse_file_info *fi_in, fuse_ino_t ino_out,
                           off_t off_out, struct fuse_file_info *fi_out,
                           size_t len, int flags);
/* Before the value a (a key, child of dn) is deleted or replaced through
 * the mount: if it is open for reading and writing, its bytes are kept
 * for those handles, whose reads would otherwise show the store's bytes
 * below their changes, gone then (zeros) or another value's. Best
 * effort: on an error the handles read what the store holds. */
void fs_file_keep(fs *f, fs_node *dn, const fs_addr *a);
/* SETATTR's size change on an open handle (ftruncate) by task pid. 0 or
 * an errno. */
int fs_file_truncate(fs *f, fs_file *h, off_t size, pid_t pid);
void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
                     off_t len, struct fuse_file_info *fi);
/* What a FLUSH from task pid (fuse_req_ctx: a thread id) is for a file of
 * inode ino that it had open for writing (caller.c), opened by task
 * opener; shared: another handle has the file open for writing too. */
void fs_writers_add(fs_writers *w, pid_t pid);
void fs_writers_remove(fs_writers *w, pid_t pid);
typedef enum fs_close_kind {
	FS_CLOSE_UNKNOWN = 0, /* cannot tell: taken as a close */
	FS_CLOSE_LAST,        /* its last descriptor of the file for writing,
	                         or it exits normally and its parent does not
	                         hold the file for writing */
	FS_CLOSE_HELD,        /* it still holds the file for writing through
	                         another descriptor (a shell's dup2) */
	FS_CLOSE_PARENT,      /* it holds it no more, its parent does
	                         (`exec 3>k` in a script, `(a; b) > k`): as
	                         HELD, but it can write no more through it */
	FS_CLOSE_KILLED,      /* the process is dying of a signal, and it
	                         made changes to the file (w) */
} fs_close_kind;
/* w: who changed the file (NULL: anyone may have). A process dying of a
 * signal that made none of them (a child that only inherited the
 * descriptor: `yes` killed by SIGPIPE in `(...; yes | head -1) > k`) is
 * not KILLED: its close is what it would be had it exited. others: the
 * file's other handles open for writing (NULL: none); a task's
 * descriptors on ino that may be theirs (`exec 3>k; echo v > k` holds
 * fd 3, which is not echo's file) do not make the close HELD or PARENT. */
fs_close_kind fs_caller_close(fs_procs *c, pid_t pid, pid_t opener,
                              const fs_others *others, uint64_t ino,
                              const fs_writers *w);
/* What a FLUSH from task pid says of its writing to inode ino, for -o
 * async_close, which does not tell held closes from last ones: whether it
 * holds the file for writing still, and if not, how it ended. */
typedef enum fs_exit {
	FS_EXIT_NONE,   /* it may write on: it holds a descriptor for
	                 * writing on ino, or it cannot be read */
	FS_EXIT_LEFT,   /* it writes no more: no such descriptor, or it
	                 * exits, not by a signal */
	FS_EXIT_KILLED, /* dying of a signal, having made changes (w, as
	                 * for fs_caller_close) */
} fs_exit;
fs_exit fs_caller_exit(fs_procs *c, pid_t pid, uint64_t ino,
                       const fs_writers *w);
/* The thread group of task tid, from /proc/<tid>/status (a read that
 * never waits for an exec); 0 if it cannot be read. */
pid_t fs_caller_tgid(pid_t tid);
/* The /proc files of the tasks that closed files lately, kept open for
 * fs_caller_close (caller.c); NULL (as from a failed fs_procs_new) reads
 * /proc afresh every time. */
fs_procs *fs_procs_new(void);
void fs_procs_free(fs_procs *c);

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
                      struct fuse_file_info *fi);
void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                    struct fuse_file_info *fi);

/* Special files (special.c): the first READ takes bytes from the store. */
void fs_special_read(fs *f, fuse_req_t req, fs_file *h, size_t size,
                     off_t off);
/* What a kept READ (wait.c) waits for: the head item of queue taken into
 * h under a claim (.wait), or the next entries of a .follow rendered.
 * SFS_OK, SFS_NOTFOUND when there is nothing yet. */
int fs_special_take(fs *f, fs_file *h, sfs_slice queue);
/* Replies to a READ of what h took. Delivered, a pop's claim is acked (a
 * .claim's is kept for the reader to settle); if the reader was
 * interrupted meanwhile or the reply fails, the claim is nacked: the item
 * is back at its place. A stream serves the bytes at off. */
void fs_special_deliver(fs *f, fuse_req_t req, fs_file *h, sfs_slice queue,
                        size_t size, off_t off);
/* OPEN of a special file (after the handle is made): a .follow joins
 * its node's followers. 0 or ENOMEM. */
int fs_special_open(fs *f, fs_file *h);
/* The size a .follow node shows to task pid: what its open handles have
 * rendered, after rendering what is new for them. */
uint64_t fs_special_size(fs *f, fs_node *n, pid_t pid);
/* RELEASE of a stream: a drain gives back what was not delivered. */
void fs_special_release(fs *f, fs_file *h);
void fs_stream_free(struct fs_stream *s);

/* The .wait readers (wait.c). */
int fs_wait_start(fs *f);
void fs_wait_stop(fs *f);
/* Around an answer that an interrupt turns into EINTR and a give-back (a
 * taken item's delivery, a drain's page): while any handler is in between,
 * fs_loop keeps a thread reading the device, so the kernel's INTERRUPT of
 * that reader is heard (loop.c). No-ops outside fs_loop (one thread:
 * nothing can hear it; libfuse's pool: every idle thread reads). */
void fs_hear_begin(fs *f);
void fs_hear_end(fs *f);

/* A commit of changes whose close was answered before it (-o
 * async_close) failed with err: every descriptor open now, and the next
 * one opened if no fsync has told it yet, returns err at its next fsync,
 * once (Linux's errseq_t; for the mount as a whole, as syncfs(2) tells). */
void fs_async_failed(fs *f, int err);
/* What a new descriptor starts from (fs_file.async_since). */
uint32_t fs_async_sample(fs *f);
/* The errno of an asynchronous commit that failed since *since (0: none);
 * moves *since past it. */
int fs_async_check(fs *f, uint32_t *since);
/* What an fsync of a file or a directory does for the store after its own
 * changes: the calling thread's held writes committed (fs_hold_commit),
 * sfs_store_sync, then fs_async_check of the descriptor's *since (guarded
 * by lock). Returns an errno, or 0. */
int fs_sync_store(fs *f, pthread_mutex_t *lock, uint32_t *since,
                  const char *what);

/* Held FLUSH answers (loop.c): one commit for the FLUSHes fs_loop's reader
 * serves while more requests are queued. fs_hold_begin returns 1 when the
 * calling thread is fs_loop's and holds the store's writes
 * (sfs_store_hold) until fs_hold_end; a FLUSH whose commit went well is
 * then answered with fs_hold_answer, which keeps the answer until the
 * commit (the device has nothing queued, or enough are held), and answers
 * every held FLUSH with the commit's outcome; with -o async_close it
 * answers at once and only the commit waits. Outside fs_loop (one thread,
 * PostgreSQL's pool) fs_hold_begin returns 0 and nothing is held. */
int fs_hold_begin(fs *f);
void fs_hold_end(fs *f);
void fs_hold_answer(fs *f, fuse_req_t req);
/* A held write whose close returned already (-o async_close: a value's
 * RELEASE): counted until the commit. */
void fs_hold_done(fs *f);
/* Commits what the calling thread holds now and answers its held FLUSHes
 * (an fsync: a failed commit of answered writes is then in
 * fs.async_error before the fsync answers). */
void fs_hold_commit(fs *f);

/* Aliases (alias.c): after the commit that made a new entry or item, the
 * name its file was created under names it for the creating process
 * (its thread group) alone, until that process exits, the entry or item
 * is gone, or the process has FS_ALIASES_PROC newer ones; at most
 * FS_ALIASES_MAX in all (docs/filesystem.md, "Names of new entries and
 * items"). */
#define FS_ALIASES_PROC 64
#define FS_ALIASES_MAX 4096
int fs_aliases_init(fs *f);
void fs_aliases_free(fs *f);
/* A commit through h (its lock held) made entry or item id: h's name
 * (made_as, taken) becomes an alias of it, or the alias of h's node now
 * names it. */
void fs_alias_commit(fs *f, fs_file *h, int64_t id);
/* Whether name in dn is an alias for the process of task tid: 1 with
 * *node (a reference: fs_node_unref) and *id, else 0. */
int fs_alias_find(fs *f, fs_node *dn, const char *name, pid_t tid,
                  fs_node **node, int64_t *id);
/* Whether node n (a new entry's or item's) is an alias's: 1 and *id. */
int fs_alias_of_node(fs *f, fs_node *n, int64_t *id);
/* A rename of task tid's alias name in dn to newname in dn: 0, ENOENT
 * (no such alias), EEXIST (noreplace, and newname is one of the
 * process's aliases, which is replaced otherwise), ENOMEM. */
int fs_alias_rename(fs *f, fs_node *dn, const char *name,
                    const char *newname, pid_t tid, int noreplace);
/* Drops the aliases of node n (its entry or item is gone). */
void fs_alias_drop(fs *f, fs_node *n);
/* The address of entry or item id: of a new entry's or item's node a,
 * or a child of directory a. 0 or ENOMEM. */
int fs_alias_addr(const fs_addr *a, int64_t id, fs_addr *out);

/* Keeps req until an item of queue arrives or the reader is interrupted. */
void fs_wait_add(fs *f, fuse_req_t req, fs_file *h, sfs_slice queue,
                 size_t size, off_t off);
/* Something was pushed through the mount: look again now. */
void fs_wait_kick(fs *f);

/* One JSON line of a .drain or .follow (json.c), appended to out (whose
 * allocation is *cap bytes): an entry or item by id (by_id: id, name,
 * value, mtime_ns) or a namespace's entry (name in the codec's kind,
 * key, value, mtime_ns). 0 or ENOMEM. */
int fs_json_line(sfs_buf *out, size_t *cap, const sfs_item *it, int by_id,
                 fs_name_kind kind);

#endif /* STATEFS_FS_I_H */
