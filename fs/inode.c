/*
 * inode.c - the inode table: kernel inode numbers and lookup counts for the
 * nodes the kernel currently holds.
 *
 * A node is an identity in the tree (parent node, kind, and the byte string
 * or id it adds), not a row of the store: the store may not hold it at all
 * (a deleted key whose file is still open, a file being created) or hold a
 * different row under it later. Nothing here is persistent; at mount the
 * table holds the four fixed directories only.
 *
 * Inode numbers are a hash of the identity's path, so a name gets the same
 * number every time it is looked up, in every mount, and plain READDIR can
 * report the number a later lookup will give (d_ino == st_ino) without
 * making a node. The rare collision with a live node moves on to the next
 * free number. A renamed node keeps its number (the kernel's inode does).
 *
 * A node lives while the kernel holds lookups on it (LOOKUP, CREATE, MKDIR,
 * READDIRPLUS count one each; FORGET returns them) or something references
 * it: its children, its open handles, an ephemeral directory's existence.
 * Two hash tables find it, by number and by identity; fs.lock guards both
 * and every field of every node except the immutable ino and kind.
 */
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define FIRST_HASHED_INO 16 /* below: the root and the fixed directories */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t ident_hash(uint64_t parent, fs_kind kind, const void *p,
                           size_t n, int64_t id)
{
	const unsigned char *b = p;
	uint64_t h = mix64(parent ^ ((uint64_t)kind << 56) ^ (uint64_t)id);

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a step */
	return mix64(h ^ n);
}

static uint64_t ino_of(uint64_t ihash)
{
	/* 62 bits: positive in every signed 64-bit view of st_ino */
	uint64_t ino = ihash & ((1ull << 62) - 1);

	return ino < FIRST_HASHED_INO ? ino + FIRST_HASHED_INO : ino;
}

uint64_t fs_ino_hash(uint64_t dir_ihash, fs_kind kind, const void *p,
                     size_t n, int64_t id)
{
	return ino_of(ident_hash(dir_ihash, kind, p, n, id));
}

static size_t ino_bucket(const fs *f, uint64_t ino)
{
	return (size_t)mix64(ino) & (f->ino_buckets - 1);
}

static size_t name_bucket(const fs *f, uint64_t ihash)
{
	return (size_t)ihash & (f->name_buckets - 1);
}

static fs_node *by_ino(fs *f, uint64_t ino)
{
	fs_node *n;

	for (n = f->by_ino[ino_bucket(f, ino)]; n; n = n->ino_next)
		if (n->ino == ino)
			return n;
	return NULL;
}

static int same_identity(const fs_node *n, const fs_node *parent,
                         fs_kind kind, const void *p, size_t len, int64_t id)
{
	return n->parent == parent && n->kind == kind && n->id == id &&
	       n->namelen == len && (len == 0 || memcmp(n->name, p, len) == 0);
}

static fs_node *by_name(fs *f, uint64_t ihash, const fs_node *parent,
                        fs_kind kind, const void *p, size_t len, int64_t id)
{
	fs_node *n;

	for (n = f->by_name[name_bucket(f, ihash)]; n; n = n->name_next)
		if (n->ihash == ihash && same_identity(n, parent, kind, p, len, id))
			return n;
	return NULL;
}

static void name_insert(fs *f, fs_node *n)
{
	size_t b = name_bucket(f, n->ihash);

	n->name_next = f->by_name[b];
	f->by_name[b] = n;
}

static void name_remove(fs *f, fs_node *n)
{
	fs_node **pp = &f->by_name[name_bucket(f, n->ihash)];

	while (*pp && *pp != n)
		pp = &(*pp)->name_next;
	if (*pp)
		*pp = n->name_next;
}

static void ino_insert(fs *f, fs_node *n)
{
	size_t b = ino_bucket(f, n->ino);

	n->ino_next = f->by_ino[b];
	f->by_ino[b] = n;
}

static void ino_remove(fs *f, fs_node *n)
{
	fs_node **pp = &f->by_ino[ino_bucket(f, n->ino)];

	while (*pp && *pp != n)
		pp = &(*pp)->ino_next;
	if (*pp)
		*pp = n->ino_next;
}

/* Doubles both tables at load 1. On allocation failure the tables stay as
 * they are: longer chains, still correct. */
static void grow(fs *f)
{
	size_t ni = f->ino_buckets * 2, nn = f->name_buckets * 2, old;
	fs_node **ti = calloc(ni, sizeof(*ti)), **tn = calloc(nn, sizeof(*tn));
	fs_node **oi = f->by_ino, *n, *next;

	if (!ti || !tn) {
		free(ti);
		free(tn);
		return;
	}
	old = f->ino_buckets;
	f->by_ino = ti;
	f->ino_buckets = ni;
	free(f->by_name);
	f->by_name = tn;
	f->name_buckets = nn;
	for (size_t b = 0; b < old; b++) {
		for (n = oi[b]; n; n = next) {
			next = n->ino_next;
			ino_insert(f, n);
			if (!n->unlinked)
				name_insert(f, n);
		}
	}
	free(oi);
}

/* Frees n and then every ancestor left with no lookups and no references.
 * Called with the lock held. */
static void maybe_free(fs *f, fs_node *n)
{
	while (n && n->nlookup == 0 && n->refs == 0) {
		fs_node *parent = n->parent;

		ino_remove(f, n);
		if (!n->unlinked)
			name_remove(f, n);
		f->nodes--;
		f->buffered -= n->kept.len;
		sfs_buf_free(&n->kept);
		free(n->name);
		free(n);
		if (!parent)
			break;
		parent->refs--;
		n = parent;
	}
}

static fs_node *node_new(fs *f, fs_node *parent, fs_kind kind,
                         const void *p, size_t len, int64_t id, uint64_t ino)
{
	fs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (len) {
		n->name = malloc(len);
		if (!n->name) {
			free(n);
			return NULL;
		}
		memcpy(n->name, p, len);
	}
	n->namelen = len;
	n->kind = kind;
	n->id = id;
	n->parent = parent;
	n->ihash = ident_hash(parent ? parent->ihash : 0, kind, p, len, id);
	if (!ino) {
		ino = ino_of(n->ihash);
		while (by_ino(f, ino))
			ino = ino + 1 < (1ull << 62) ? ino + 1 : FIRST_HASHED_INO;
	}
	n->ino = ino;
	if (parent)
		parent->refs++;
	ino_insert(f, n);
	name_insert(f, n);
	if (++f->nodes > f->ino_buckets)
		grow(f);
	if (f->nodes > f->nodes_peak)
		f->nodes_peak = f->nodes;
	return n;
}

/* The fixed directories: numbers 1 to 4, never freed (refs stays 1). */
static fs_node *fixed(fs *f, fs_node *parent, fs_kind kind, uint64_t ino)
{
	const char *name = fs_class_of(kind)->what;
	fs_node *n = node_new(f, parent, kind, name, parent ? strlen(name) : 0,
	                      0, ino);

	if (n)
		n->refs = 1;
	return n;
}

void fs_link_add(fs *f, fs_link *head, fs_link *l)
{
	pthread_mutex_lock(&f->lock);
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
	pthread_mutex_unlock(&f->lock);
}

void fs_link_del(fs *f, fs_link *l)
{
	pthread_mutex_lock(&f->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->next = l->prev = l;
	pthread_mutex_unlock(&f->lock);
}

int fs_inodes_init(fs *f)
{
	f->ino_buckets = f->name_buckets = 1024;
	f->by_ino = calloc(f->ino_buckets, sizeof(*f->by_ino));
	f->by_name = calloc(f->name_buckets, sizeof(*f->by_name));
	if (!f->by_ino || !f->by_name)
		return ENOMEM;
	f->root = fixed(f, NULL, FS_ROOT, FUSE_ROOT_ID);
	if (!f->root)
		return ENOMEM;
	f->exec_root = fixed(f, f->root, FS_EXEC_ROOT, 2);
	f->queue_root = fixed(f, f->root, FS_QUEUE_ROOT, 3);
	f->counter_root = fixed(f, f->root, FS_COUNTER_ROOT, 4);
	if (!f->exec_root || !f->queue_root || !f->counter_root)
		return ENOMEM;
	return 0;
}

void fs_inodes_free(fs *f)
{
	fs_node *n, *next;

	for (size_t b = 0; f->by_ino && b < f->ino_buckets; b++) {
		for (n = f->by_ino[b]; n; n = next) {
			next = n->ino_next;
			sfs_buf_free(&n->kept);
			free(n->name);
			free(n);
		}
	}
	free(f->by_ino);
	free(f->by_name);
	f->by_ino = f->by_name = NULL;
}

fs_node *fs_node_get(fs *f, fuse_ino_t ino)
{
	fs_node *n;

	pthread_mutex_lock(&f->lock);
	n = by_ino(f, ino);
	pthread_mutex_unlock(&f->lock);
	return n;
}

int fs_node_addr(fs *f, fs_node *n, fs_addr *out)
{
	fs_addr a = { n->kind, { { NULL, 0 } }, 0 };
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	for (fs_node *x = n; x && x->parent; x = x->parent) {
		const fs_class *c = fs_class_of(x->kind);
		if (c->by_id && x == n)
			a.id = x->id;
		if (c->by_id || c->special ||
		    c->parts <= fs_class_of(x->parent->kind)->parts)
			continue;
		sfs_buf *b = &a.part[c->parts - 1];
		b->ptr = malloc(x->namelen + 1);
		if (!b->ptr) {
			rc = ENOMEM;
			break;
		}
		memcpy(b->ptr, x->name ? (void *)x->name : "", x->namelen);
		((char *)b->ptr)[x->namelen] = '\0';
		b->len = x->namelen;
	}
	pthread_mutex_unlock(&f->lock);
	if (rc) {
		fs_addr_free(&a);
		return rc;
	}
	*out = a;
	return 0;
}

fs_node *fs_node_child(fs *f, fs_node *parent, fs_kind kind, const void *p,
                       size_t len, int64_t id, int count)
{
	fs_node *n;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, ident_hash(parent->ihash, kind, p, len, id), parent,
	            kind, p, len, id);
	if (!n)
		n = node_new(f, parent, kind, p, len, id, 0);
	if (n) {
		if (count)
			n->nlookup++;
		else
			n->refs++;
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

fs_node *fs_node_find(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t len, int64_t id)
{
	fs_node *n;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, ident_hash(parent->ihash, kind, p, len, id), parent,
	            kind, p, len, id);
	pthread_mutex_unlock(&f->lock);
	return n;
}

int fs_node_find_held(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t len, int64_t id)
{
	fs_node *n;
	int held;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, ident_hash(parent->ihash, kind, p, len, id), parent,
	            kind, p, len, id);
	held = n && (n->pending > 0 || n->ephemeral);
	pthread_mutex_unlock(&f->lock);
	return held;
}

fs_node *fs_node_anon(fs *f, fs_node *parent, fs_kind kind)
{
	fs_node *n;

	pthread_mutex_lock(&f->lock);
	n = node_new(f, parent, kind, NULL, 0, ++f->anon_seq, 0);
	if (n) {
		/* Never found by name: the entry it becomes gets its own. */
		name_remove(f, n);
		n->unlinked = 1;
		n->nlookup = 1;
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

void fs_node_count(fs *f, fs_node *n)
{
	pthread_mutex_lock(&f->lock);
	n->nlookup++;
	pthread_mutex_unlock(&f->lock);
}

void fs_node_forget(fs *f, fs_node *n, uint64_t nlookup)
{
	pthread_mutex_lock(&f->lock);
	n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
	maybe_free(f, n);
	pthread_mutex_unlock(&f->lock);
}

/* Nodes are small blocks spread over the allocator's per-thread arenas,
 * which glibc keeps as free space once they are freed: a daemon that
 * listed 100,000 keys and removed them stayed at 32 MB where a
 * malloc_trim took it to 15. So once the kernel has forgotten more than
 * half of the nodes there were at the peak (and the peak was large), the
 * free space goes back to the system, and the peak starts again from
 * what is left. Called by the FORGET handlers after a batch. */
#define TRIM_NODES 8192

void fs_node_trim(fs *f)
{
	int trim = 0;

	pthread_mutex_lock(&f->lock);
	if (f->nodes_peak >= TRIM_NODES && f->nodes < f->nodes_peak / 2) {
		f->nodes_peak = f->nodes;
		trim = 1;
	}
	pthread_mutex_unlock(&f->lock);
#ifdef __GLIBC__
	if (trim)
		malloc_trim(0);
#else
	(void)trim;
#endif
}

void fs_node_ref(fs *f, fs_node *n)
{
	pthread_mutex_lock(&f->lock);
	n->refs++;
	pthread_mutex_unlock(&f->lock);
}

void fs_node_unref(fs *f, fs_node *n)
{
	pthread_mutex_lock(&f->lock);
	n->refs--;
	maybe_free(f, n);
	pthread_mutex_unlock(&f->lock);
}

static void unlink_locked(fs *f, fs_node *n)
{
	if (n->unlinked)
		return;
	name_remove(f, n);
	n->unlinked = 1;
	if (n->ephemeral) {
		n->ephemeral = 0;
		n->refs--; /* maybe_free by the caller */
	}
}

void fs_node_unlink(fs *f, fs_node *parent, fs_kind kind, const void *p,
                    size_t len, int64_t id)
{
	fs_node *n;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, ident_hash(parent->ihash, kind, p, len, id), parent,
	            kind, p, len, id);
	if (n) {
		unlink_locked(f, n);
		maybe_free(f, n);
	}
	pthread_mutex_unlock(&f->lock);
}

static int depth_of(const fs_node *n)
{
	int d = 0;

	for (; n->parent; n = n->parent)
		d++;
	return d;
}

/* After a directory moved, its descendants' identity hashes changed:
 * recompute them top-down and rebuild the name table. Renames of
 * directories are rare; this is one pass per depth over the table. */
static void rehash_all(fs *f)
{
	fs_node *n;

	for (size_t b = 0; b < f->name_buckets; b++)
		f->by_name[b] = NULL;
	for (int d = 1; d <= 5; d++)
		for (size_t b = 0; b < f->ino_buckets; b++)
			for (n = f->by_ino[b]; n; n = n->ino_next)
				if (n->parent && depth_of(n) == d)
					n->ihash = ident_hash(n->parent->ihash,
					                      n->kind, n->name,
					                      n->namelen, n->id);
	for (size_t b = 0; b < f->ino_buckets; b++)
		for (n = f->by_ino[b]; n; n = n->ino_next)
			if (!n->unlinked)
				name_insert(f, n);
}

/* Gives n the name np/nn under newparent, where nothing stands. Called
 * with the lock held. */
static void move_locked(fs *f, fs_node *n, fs_kind kind, fs_node *newparent,
                        const void *np, size_t nn)
{
	fs_node *oldparent;
	unsigned char *name = NULL;

	if (nn && !(name = malloc(nn))) {
		/* Out of memory: forget the identity rather than keep a
		 * wrong one; its handles keep their bytes. */
		unlink_locked(f, n);
		maybe_free(f, n);
		return;
	}
	if (nn)
		memcpy(name, np, nn);
	name_remove(f, n);
	free(n->name);
	n->name = name;
	n->namelen = nn;
	oldparent = n->parent;
	n->parent = newparent;
	newparent->refs++;
	n->ihash = ident_hash(newparent->ihash, kind, np, nn, 0);
	name_insert(f, n);
	if (fs_kind_is_dir(kind))
		rehash_all(f);
	oldparent->refs--;
	maybe_free(f, oldparent);
}

void fs_node_move(fs *f, fs_node *parent, fs_kind kind, const void *p,
                  size_t len, fs_node *newparent, const void *np, size_t nn)
{
	fs_node *n, *target;

	pthread_mutex_lock(&f->lock);
	/* Whatever stood at the target was replaced. */
	target = by_name(f, ident_hash(newparent->ihash, kind, np, nn, 0),
	                 newparent, kind, np, nn, 0);
	n = by_name(f, ident_hash(parent->ihash, kind, p, len, 0), parent,
	            kind, p, len, 0);
	if (target && target != n) {
		unlink_locked(f, target);
		maybe_free(f, target);
	}
	if (n && n != target)
		move_locked(f, n, kind, newparent, np, nn);
	pthread_mutex_unlock(&f->lock);
}

void fs_node_exchange(fs *f, fs_node *parent, fs_kind kind, const void *p,
                      size_t len, fs_node *newparent, const void *np,
                      size_t nn)
{
	fs_node *a, *b, *ap;
	unsigned char *an;
	size_t al;

	pthread_mutex_lock(&f->lock);
	a = by_name(f, ident_hash(parent->ihash, kind, p, len, 0), parent,
	            kind, p, len, 0);
	b = by_name(f, ident_hash(newparent->ihash, kind, np, nn, 0),
	            newparent, kind, np, nn, 0);
	if (a && b && a != b) {
		/* each takes the other's name and parent (whose references
		 * stay as they are: one child each, before and after) */
		name_remove(f, a);
		name_remove(f, b);
		an = a->name, al = a->namelen, ap = a->parent;
		a->name = b->name, a->namelen = b->namelen, a->parent = b->parent;
		b->name = an, b->namelen = al, b->parent = ap;
		a->ihash = ident_hash(a->parent->ihash, kind, a->name, a->namelen,
		                      0);
		b->ihash = ident_hash(b->parent->ihash, kind, b->name, b->namelen,
		                      0);
		name_insert(f, a);
		name_insert(f, b);
	} else if (a && !b) {
		move_locked(f, a, kind, newparent, np, nn);
	} else if (b && !a) {
		move_locked(f, b, kind, parent, p, len);
	}
	pthread_mutex_unlock(&f->lock);
}

void fs_node_set_ephemeral(fs *f, fs_node *n, int on)
{
	pthread_mutex_lock(&f->lock);
	if (on && !n->ephemeral && !n->unlinked) {
		n->ephemeral = 1;
		n->refs++;
	} else if (!on && n->ephemeral) {
		n->ephemeral = 0;
		n->refs--;
		maybe_free(f, n);
	}
	pthread_mutex_unlock(&f->lock);
}

/* Adds delta to n->pending, counting the nodes being created. Called
 * with the lock held. */
static void pending_add(fs *f, fs_node *n, int delta)
{
	int was = n->pending > 0;

	n->pending += delta;
	if (!was && n->pending > 0)
		f->pending_nodes++;
	else if (was && n->pending == 0)
		f->pending_nodes--;
}

void fs_node_pending(fs *f, fs_node *n, int delta)
{
	pthread_mutex_lock(&f->lock);
	pending_add(f, n, delta);
	pthread_mutex_unlock(&f->lock);
}

int fs_nodes_pending(fs *f)
{
	int any;

	pthread_mutex_lock(&f->lock);
	any = f->pending_nodes > 0;
	pthread_mutex_unlock(&f->lock);
	return any;
}

int fs_node_pending_claim(fs *f, fs_node *n, int excl)
{
	int ok;

	pthread_mutex_lock(&f->lock);
	ok = !excl || n->pending == 0;
	if (ok) {
		pending_add(f, n, 1);
		n->pending_seq = ++f->file_seq;
	}
	pthread_mutex_unlock(&f->lock);
	return ok;
}

int fs_node_pending_empty(fs *f, fs_node *n)
{
	int pending;

	pthread_mutex_lock(&f->lock);
	pending = n->pending > 0 && n->pending_seq > n->stored_seq;
	pthread_mutex_unlock(&f->lock);
	return pending;
}

uint64_t fs_node_stored(fs *f, fs_node *n)
{
	uint64_t seq;

	pthread_mutex_lock(&f->lock);
	seq = n->stored_seq = ++f->file_seq;
	pthread_mutex_unlock(&f->lock);
	return seq;
}

uint64_t fs_node_stored_seq(fs *f, const fs_node *n)
{
	uint64_t seq;

	pthread_mutex_lock(&f->lock);
	seq = n->stored_seq;
	pthread_mutex_unlock(&f->lock);
	return seq;
}

int fs_node_held(fs *f, fs_node *n)
{
	int held;

	pthread_mutex_lock(&f->lock);
	held = !n->unlinked && (n->pending > 0 || n->ephemeral);
	pthread_mutex_unlock(&f->lock);
	return held;
}

int fs_node_linked(fs *f, fs_node *n)
{
	int linked;

	pthread_mutex_lock(&f->lock);
	linked = !n->unlinked;
	pthread_mutex_unlock(&f->lock);
	return linked;
}

int fs_node_wants_kept(fs *f, fs_node *n)
{
	int want = 0;

	pthread_mutex_lock(&f->lock);
	for (fs_file *h = n->files; h && !n->unlinked && !want; h = h->node_next)
		want = (h->flags & O_ACCMODE) == O_RDWR;
	pthread_mutex_unlock(&f->lock);
	return want;
}

void fs_node_set_kept(fs *f, fs_node *n, sfs_buf *v)
{
	sfs_buf old = { NULL, 0 };
	int over = 0;

	pthread_mutex_lock(&f->lock);
	if (!n->unlinked) { /* else another delete kept them first */
		old = n->kept;
		f->buffered -= old.len;
		n->kept = (sfs_buf){ NULL, 0 };
		n->has_kept = 1;
		over = f->buffered + v->len > f->max_buffered;
		n->kept_over = (unsigned)over;
		if (!over) {
			n->kept = *v;
			f->buffered += v->len;
			*v = (sfs_buf){ NULL, 0 };
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (over)
		fs_log(f, LOG_WARNING, "a value deleted or replaced while open"
		       " for reading and writing (%zu bytes) is over"
		       " -o max_buffered: not kept, reads of it fail with EIO",
		       v->len);
	sfs_buf_free(&old);
	sfs_buf_free(v);
}

int fs_node_kept(fs *f, fs_node *n, const sfs_buf **out)
{
	int kept = 0;

	pthread_mutex_lock(&f->lock);
	if (n->unlinked && n->has_kept)
		kept = n->kept_over ? -1 : 1;
	pthread_mutex_unlock(&f->lock);
	*out = &n->kept;
	return kept;
}

uint64_t fs_node_ihash(fs *f, fs_node *n)
{
	uint64_t h;

	pthread_mutex_lock(&f->lock);
	h = n->ihash;
	pthread_mutex_unlock(&f->lock);
	return h;
}

void fs_names_free(fs_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		sfs_buf_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

uint64_t fs_node_parent_ino(fs *f, fs_node *n)
{
	uint64_t ino;

	pthread_mutex_lock(&f->lock);
	ino = n->parent ? n->parent->ino : n->ino;
	pthread_mutex_unlock(&f->lock);
	return ino;
}

int fs_node_held_children(fs *f, fs_node *dir, fs_names *out)
{
	fs_names l = { NULL, 0 };
	size_t cap = 0;
	fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t b = 0; b < f->ino_buckets && !rc; b++) {
		for (n = f->by_ino[b]; n && !rc; n = n->ino_next) {
			if (n->parent != dir || n->unlinked ||
			    !(n->ephemeral || n->pending > 0))
				continue;
			if (l.n == cap) {
				size_t nc = cap ? cap * 2 : 8;
				sfs_buf *v = realloc(l.v, nc * sizeof(*v));
				if (!v) {
					rc = ENOMEM;
					break;
				}
				l.v = v;
				cap = nc;
			}
			sfs_buf *it = &l.v[l.n];
			it->ptr = malloc(n->namelen + 1);
			if (!it->ptr) {
				rc = ENOMEM;
				break;
			}
			memcpy(it->ptr, n->name ? (void *)n->name : "", n->namelen);
			((char *)it->ptr)[n->namelen] = '\0';
			it->len = n->namelen;
			l.n++;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (rc) {
		fs_names_free(&l);
		return rc;
	}
	*out = l;
	return 0;
}

void fs_node_writers(fs *f, fs_node *n, const fs_file *h, fs_others *out)
{
	out->writers = out->n = 0;
	pthread_mutex_lock(&f->lock);
	for (fs_file *x = n->files; x; x = x->node_next) {
		if (x == h || (x->flags & O_ACCMODE) == O_RDONLY)
			continue;
		out->writers++;
		if (!x->pub_closed && out->n < FS_OPENERS)
			out->opener[out->n++] = x->opener;
	}
	pthread_mutex_unlock(&f->lock);
}

void fs_node_file_add(fs *f, fs_node *n, fs_file *h)
{
	pthread_mutex_lock(&f->lock);
	h->node_next = n->files;
	n->files = h;
	pthread_mutex_unlock(&f->lock);
}

void fs_node_file_del(fs *f, fs_node *n, fs_file *h)
{
	fs_file **pp;

	pthread_mutex_lock(&f->lock);
	for (pp = &n->files; *pp && *pp != h; pp = &(*pp)->node_next)
		;
	if (*pp)
		*pp = h->node_next;
	h->node_next = NULL;
	pthread_mutex_unlock(&f->lock);
}

void fs_node_view(fs *f, fs_node *n, fs_file *h, fs_view *out)
{
	fs_file *best = h;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->lock);
	if (!best) {
		/* The newest unsaved image, unless a value stored through
		 * the mount since is newer. */
		for (fs_file *x = n->files; x; x = x->node_next)
			if (x->pub_seq > n->stored_seq &&
			    (!best || x->pub_seq > best->pub_seq))
				best = x;
		/* Not a killed writer's handle waiting for its RELEASE: what
		 * it created was not made, and a stat by path between the
		 * kill and the RELEASE must not find it. */
		for (fs_file *x = n->files; !best && x; x = x->node_next)
			if (!x->pub_cancelled)
				best = x;
	}
	if (best) {
		out->files = 1;
		out->unsaved = best->pub_seq > (best == h ? 0 : n->stored_seq);
		out->size = best->pub_size;
		out->mtime_ns = out->unsaved && n->has_mtime ? n->mtime
		                                            : best->pub_mtime;
	}
	pthread_mutex_unlock(&f->lock);
}

int fs_node_give_mtime(fs *f, fs_node *n, int64_t mtime_ns)
{
	int held;

	pthread_mutex_lock(&f->lock);
	held = n->pending > 0;
	for (fs_file *x = n->files; x && !held; x = x->node_next)
		held = x->pub_seq > n->stored_seq && !x->pub_cancelled;
	if (held) {
		n->has_mtime = 1;
		n->mtime = mtime_ns;
	}
	pthread_mutex_unlock(&f->lock);
	return held;
}

int fs_node_take_mtime(fs *f, fs_node *n, int64_t *mtime_ns)
{
	int had;

	pthread_mutex_lock(&f->lock);
	had = n->has_mtime;
	*mtime_ns = n->mtime;
	n->has_mtime = 0;
	pthread_mutex_unlock(&f->lock);
	return had;
}


int fs_node_holds_children(fs *f, fs_node *dir)
{
	fs_node *n;
	int found = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t b = 0; f->pending_nodes && b < f->ino_buckets && !found; b++)
		for (n = f->by_ino[b]; n && !found; n = n->ino_next)
			found = n->parent == dir && !n->unlinked && n->pending > 0;
	pthread_mutex_unlock(&f->lock);
	return found;
}
