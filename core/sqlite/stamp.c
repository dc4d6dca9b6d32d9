/*
 * stamp.c - what this connection knows is already stamped.
 *
 * A write's modification time is a second statement in its transaction:
 * the key's time row upsert, or the time map's conditional insert. Within
 * one second both usually change nothing (the stored time is already this
 * second), yet each costs a statement and a B-tree seek. The stamp cache
 * remembers, per connection, which keys' time rows hold the current second
 * and which time maps' latest rows hold it or later, so those statements can
 * be skipped when their outcome is known. A key's time row holds its last
 * write's second exactly (earlier or later than before); a map's latest
 * row holds that second or a later one.
 *
 * What is remembered is only true while nobody else changed the store.
 * SQLite's pager keeps a data version (SQLITE_FCNTL_DATA_VERSION) that
 * moves on every commit of this connection and whenever the start of a
 * transaction finds a commit of another connection or process (the same
 * check that keeps SQLite's own page cache valid). So:
 *  - A "stamped" transaction (sqlb_begin_stamped) is one whose writes only
 *    move times forward: put, counter add and set, log append, queue push
 *    and pop. After its BEGIN IMMEDIATE it compares the data version with
 *    the one recorded after this connection's last stamped commit; if they
 *    differ (anyone committed anything in between, including this
 *    connection's own deletes, renames, restores, imports), the cache is
 *    emptied. Its lookups and notes are then exact.
 *  - Its commit records the new data version; a rollback forgets (notes
 *    made in the transaction may not have happened).
 *  - Every other write transaction neither reads nor writes the cache,
 *    and its commit moves the data version, which empties the cache at the
 *    next stamped transaction.
 * The cache is a fixed two-way table of slots (a key longer than a slot
 * holds is never cached), emptied in O(1) by a generation number.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlite_i.h"

#define SETS 1024           /* a power of two; two slots each */
#define SLOT_BYTES 100      /* tag, scope, ns, key with 2-byte lengths */

typedef struct slot {
	uint32_t gen;       /* valid when == the cache's gen */
	uint16_t len;
	unsigned char k[SLOT_BYTES];
	int64_t t;          /* the time row holds t */
} slot;

struct stamp_cache {
	uint32_t gen;
	unsigned version;   /* data version after the last stamped commit */
	int valid;          /* version means something */
	int in_tx;          /* inside a stamped transaction */
	int64_t map[2];     /* [tm_which]: the latest map row holds this or
	                     * later; INT64_MIN unknown */
	slot s[SETS][2];
	unsigned char victim[SETS]; /* the set's least recently used slot */
};

static int data_version(sfs_backend *b, unsigned *v)
{
	return sqlite3_file_control(b->db, "main", SQLITE_FCNTL_DATA_VERSION,
	                            v) == SQLITE_OK;
}

static void forget(stamp_cache *c)
{
	c->gen++;
	if (c->gen == 0) { /* wrapped: no slot may look current */
		for (size_t i = 0; i < SETS; i++)
			c->s[i][0].gen = c->s[i][1].gen = 0;
		c->gen = 1;
	}
	c->map[TM_LOG] = c->map[TM_QUEUE] = INT64_MIN;
}

void stamp_begin(sfs_backend *b, int stamped)
{
	stamp_cache *c = b->stamps;
	unsigned v;

	if (!stamped) {
		if (c)
			c->in_tx = 0;
		return;
	}
	if (!c && !(c = b->stamps = calloc(1, sizeof(*c))))
		return; /* no cache: every time statement runs */
	if (!data_version(b, &v)) {
		c->valid = c->in_tx = 0;
		return;
	}
	if (!c->valid || v != c->version)
		forget(c);
	c->in_tx = 1;
}

void stamp_end(sfs_backend *b, int committed)
{
	stamp_cache *c = b->stamps;

	if (!c)
		return;
	if (c->in_tx && committed)
		c->valid = data_version(b, &c->version);
	else if (c->in_tx)
		c->valid = 0;
	c->in_tx = 0;
}

void stamp_forget(sfs_backend *b)
{
	stamp_cache *c = b->stamps;

	if (c) {
		forget(c);
		c->valid = 0;
	}
}

void stamp_free(sfs_backend *b)
{
	free(b->stamps);
	b->stamps = NULL;
}

static size_t put_part(unsigned char *p, sfs_slice s)
{
	p[0] = (unsigned char)(s.len >> 8);
	p[1] = (unsigned char)s.len;
	memcpy(p + 2, s.ptr, s.len);
	return 2 + s.len;
}

int stamp_key(sfs_backend *b, int counters, sfs_slice scope, sfs_slice ns,
              sfs_slice key, int64_t now)
{
	stamp_cache *c = b->stamps;
	unsigned char k[SLOT_BYTES];
	size_t n = 1;
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */
	size_t set;
	int w;
	slot *sl;

	if (!c || !c->in_tx || scope.len > SLOT_BYTES || ns.len > SLOT_BYTES ||
	    1 + 2 + scope.len + 2 + ns.len + key.len > SLOT_BYTES)
		return 0;
	k[0] = (unsigned char)counters;
	n += put_part(k + n, scope);
	n += put_part(k + n, ns);
	memcpy(k + n, key.ptr, key.len);
	n += key.len;
	for (size_t i = 0; i < n; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	set = (h ^ (h >> 32)) & (SETS - 1);
	for (w = 0; w < 2; w++) {
		sl = &c->s[set][w];
		if (sl->gen == c->gen && sl->len == n &&
		    memcmp(sl->k, k, n) == 0) {
			c->victim[set] = (unsigned char)!w;
			if (now == sl->t)
				return 1;
			sl->t = now;
			return 0;
		}
	}
	w = c->s[set][0].gen != c->gen ? 0 : c->s[set][1].gen != c->gen ? 1
	    : c->victim[set];
	sl = &c->s[set][w];
	c->victim[set] = (unsigned char)!w;
	sl->gen = c->gen;
	sl->len = (uint16_t)n;
	memcpy(sl->k, k, n);
	sl->t = now;
	return 0;
}

int stamp_map(sfs_backend *b, tm_which w, int64_t now)
{
	stamp_cache *c = b->stamps;

	if (!c || !c->in_tx)
		return 0;
	if (now <= c->map[w])
		return 1;
	c->map[w] = now;
	return 0;
}
