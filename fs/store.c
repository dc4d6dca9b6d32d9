/*
 * store.c - the engine calls behind each kind: whether an address exists,
 * a page of a directory, mkdir, rmdir, unlink and rename.
 *
 * This is the only file of fs/ that knows which sfs_* function serves which
 * part of the tree; the handlers ask it by kind. Everything returns an
 * engine status: the handlers turn it into an errno (fs_errno).
 *
 * Two deliberate choices:
 *  - A queue always exists. Queues have no registration in the engine (a
 *    queue is its items), and a consumer must be able to wait on
 *    /queue/jobs/.wait before the first producer has pushed. Listings show
 *    the queues that hold items (or were made with the API's dir_create).
 *  - A log key with no entries cannot be stored; mkdir of one keeps it in
 *    the inode table (ephemeral) until rmdir or unmount, so that
 *    `mkdir -p exec/s/ns/k && echo x > exec/s/ns/k/new` works.
 * A queue's inflight/ and dead/ always exist too (reached by name); their
 * items are the item functions' in another state (sfs_item_*).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

size_t fs_counter_text(int64_t v, char *out)
{
	return (size_t)snprintf(out, 24, "%" PRId64 "\n", v);
}

int64_t fs_mtime(fs_kind k, const sfs_stat *st)
{
	/* An in-flight item shows when its lease ends (ls -l inflight/;
	 * touch moves it): what its owner has to watch. */
	return k == FS_INFLIGHT_ITEM ? st->lease_until_ns : st->mtime_ns;
}

int fs_store_nonempty(fs *f, const fs_addr *a)
{
	sfs_list l = { NULL, 0 };
	uint64_t n;
	int rc;

	if (a->kind == FS_QUEUE) {
		rc = sfs_item_count(f->store, fs_part(a, 0), SFS_ITEM_PENDING, &n);
		return rc ? rc : n ? SFS_OK : SFS_NOTFOUND;
	}
	rc = sfs_log_scan(f->store, fs_part(a, 0), fs_part(a, 1), fs_part(a, 2),
	                  -1, 1, 1, &l);
	if (rc)
		return rc;
	rc = l.n ? SFS_OK : SFS_NOTFOUND;
	sfs_list_free(&l);
	return rc;
}

int fs_store_stat(fs *f, const fs_addr *a, uint64_t *size, int64_t *mtime)
{
	const fs_class *c = fs_class_of(a->kind);
	sfs_stat st = { 0 };
	char text[24];
	int rc;

	switch (a->kind) {
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
		rc = sfs_dir_exists(f->store, c->fam, fs_part(a, 0), SFS_NONE);
		break;
	case FS_KV_NS:
	case FS_LOG_NS:
	case FS_CNT_NS:
		rc = sfs_dir_exists(f->store, c->fam, fs_part(a, 0), fs_part(a, 1));
		break;
	case FS_LOG_KEY:
		rc = fs_store_nonempty(f, a);
		break;
	case FS_KV_KEY:
		rc = sfs_kv_stat(f->store, fs_part(a, 0), fs_part(a, 1),
		                 fs_part(a, 2), &st);
		break;
	case FS_LOG_ENTRY:
		rc = sfs_log_stat(f->store, fs_part(a, 0), fs_part(a, 1),
		                  fs_part(a, 2), a->id, &st);
		break;
	case FS_QUEUE_ITEM:
	case FS_INFLIGHT_ITEM:
	case FS_DEAD_ITEM:
		rc = sfs_item_stat(f->store, fs_part(a, 0), c->state, a->id, &st);
		break;
	case FS_CNT_KEY:
		rc = sfs_counter_get(f->store, fs_part(a, 0), fs_part(a, 1),
		                     fs_part(a, 2), &st.counter, &st.mtime_ns);
		break;
	default:
		/* The fixed directories, queues (always there) and the
		 * special files, whose directory the kernel just resolved. */
		rc = SFS_OK;
		break;
	}
	if (rc)
		return rc;
	*size = a->kind == FS_CNT_KEY ? fs_counter_text(st.counter, text)
	                               : st.size;
	*mtime = fs_mtime(a->kind, &st);
	return SFS_OK;
}

int fs_store_list(fs *f, const fs_addr *dir, const fs_cursor *after,
                  long limit, int names, sfs_list *out)
{
	const fs_class *c = fs_class_of(dir->kind);
	sfs_slice cur = after->set ? sfs_bytes(after->key.ptr, after->key.len)
	                           : SFS_NONE;
	int64_t id = after->set ? after->id : -1;

	switch (dir->kind) {
	case FS_ROOT:
	case FS_EXEC_ROOT:
	case FS_QUEUE_ROOT:
	case FS_COUNTER_ROOT:
		return sfs_dir_list(f->store, c->fam, SFS_NONE, SFS_NONE, cur,
		                    limit, out);
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
		return sfs_dir_list(f->store, c->fam, fs_part(dir, 0), SFS_NONE,
		                    cur, limit, out);
	case FS_KV_NS:
	case FS_LOG_NS:
	case FS_CNT_NS:
		return (names ? sfs_dir_names : sfs_dir_list)(f->store, c->fam,
		        fs_part(dir, 0), fs_part(dir, 1), cur, limit, out);
	case FS_LOG_KEY:
		return sfs_log_scan(f->store, fs_part(dir, 0), fs_part(dir, 1),
		                    fs_part(dir, 2), id, limit, 1, out);
	case FS_QUEUE:
	case FS_INFLIGHT:
	case FS_DEAD:
		return sfs_item_scan(f->store, fs_part(dir, 0), c->state, id,
		                     limit, 1, out);
	default:
		return SFS_INVALID;
	}
}

void fs_store_dent(const fs_addr *dir, const sfs_list *page, size_t i,
                   fs_dent *out)
{
	const sfs_item *it = &page->items[i];
	fs_kind k = fs_class_of(dir->kind)->child;
	char text[24];

	memset(out, 0, sizeof(*out));
	out->kind = k;
	if (fs_class_of(k)->by_id) {
		out->id = it->id;
	} else {
		out->p = it->key.ptr ? it->key.ptr : "";
		out->n = it->key.len;
	}
	if (!fs_kind_is_dir(k)) {
		out->size = k == FS_CNT_KEY ? fs_counter_text(it->st.counter, text)
		                            : it->st.size;
		out->mtime_ns = fs_mtime(k, &it->st);
	}
}

int fs_cursor_set(fs_cursor *c, const fs_dent *d)
{
	unsigned char *p = malloc(d->n + 1);

	if (!p)
		return SFS_NOMEM;
	if (d->n)
		memcpy(p, d->p, d->n);
	p[d->n] = 0;
	sfs_buf_free(&c->key);
	c->key.ptr = p;
	c->key.len = d->n;
	c->id = d->id;
	c->set = 1;
	return SFS_OK;
}

void fs_cursor_free(fs_cursor *c)
{
	sfs_buf_free(&c->key);
	c->set = 0;
	c->id = 0;
}

int fs_store_resolve(fs *f, const fs_addr *dir, fs_kind kind,
                     const char *name, sfs_slice prefix, fs_addr *out)
{
	fs_name_kind nk = fs_names_of(dir, kind);
	char enc[FS_NAME_MAX + 1];
	fs_cursor cur = { 0 };
	sfs_list page = { NULL, 0 };
	fs_dent d;
	int rc;

	if (fs_class_of(kind)->by_id)
		return SFS_NOTFOUND;
	cur.set = 1;
	cur.key.ptr = malloc(prefix.len + 1);
	if (!cur.key.ptr)
		return SFS_NOMEM;
	memcpy(cur.key.ptr, prefix.ptr, prefix.len);
	cur.key.len = prefix.len;
	/* Every string with this prefix sorts right after the prefix itself,
	 * which is short and so never a long name. */
	rc = SFS_NOTFOUND;
	for (;;) {
		int r = fs_store_list(f, dir, &cur, 256, 1, &page), stop = 0;

		if (r || page.n == 0) {
			rc = r ? r : rc;
			sfs_list_free(&page);
			break;
		}
		for (size_t i = 0; i < page.n && !stop; i++) {
			fs_store_dent(dir, &page, i, &d);
			if (d.n < prefix.len || memcmp(d.p, prefix.ptr, prefix.len)) {
				stop = 1;
			} else if (fs_name_encode(sfs_bytes(d.p, d.n), nk, enc,
			                           NULL) == SFS_OK &&
			           strcmp(enc, name) == 0) {
				rc = fs_addr_child(dir, kind, d.p, d.n, 0, out)
				   ? SFS_NOMEM : SFS_OK;
				stop = 1;
			}
		}
		if (!stop) {
			fs_store_dent(dir, &page, page.n - 1, &d);
			if (fs_cursor_set(&cur, &d)) {
				rc = SFS_NOMEM;
				stop = 1;
			}
		}
		sfs_list_free(&page);
		if (stop)
			break;
	}
	fs_cursor_free(&cur);
	return rc;
}

int fs_store_mkdir(fs *f, const fs_addr *a)
{
	const fs_class *c = fs_class_of(a->kind);

	switch (a->kind) {
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
		return sfs_dir_create(f->store, c->fam, fs_part(a, 0), SFS_NONE);
	case FS_KV_NS:
	case FS_LOG_NS:
	case FS_CNT_NS:
		return sfs_dir_create(f->store, c->fam, fs_part(a, 0), fs_part(a, 1));
	case FS_LOG_KEY:
		/* Ephemeral (see above): nothing in the store, unless it
		 * has entries already. */
		return fs_store_nonempty(f, a) == SFS_OK ? SFS_EXISTS : SFS_OK;
	case FS_QUEUE:
		return SFS_EXISTS; /* queues always exist */
	default:
		return SFS_INVALID;
	}
}

int fs_store_rmdir(fs *f, const fs_addr *a)
{
	const fs_class *c = fs_class_of(a->kind);
	sfs_slice ns = SFS_NONE;
	int rc;

	switch (a->kind) {
	case FS_KV_NS:
	case FS_LOG_NS:
	case FS_CNT_NS:
		ns = fs_part(a, 1);
		__attribute__((fallthrough));
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
		rc = sfs_dir_remove(f->store, c->fam, fs_part(a, 0), ns);
		return rc == SFS_NOTFOUND ? SFS_OK : rc;
	case FS_LOG_KEY:
	case FS_QUEUE:
		rc = fs_store_nonempty(f, a);
		if (rc == SFS_OK)
			return SFS_NOTEMPTY;
		if (rc != SFS_NOTFOUND)
			return rc;
		if (a->kind == FS_QUEUE) {
			rc = sfs_dir_remove(f->store, SFS_FAM_QUEUE, fs_part(a, 0),
			                    SFS_NONE);
			if (rc != SFS_NOTFOUND)
				return rc;
		}
		return SFS_OK;
	default:
		return SFS_INVALID;
	}
}

int fs_store_unlink(fs *f, const fs_addr *a)
{
	switch (a->kind) {
	case FS_KV_KEY:
		return sfs_kv_delete(f->store, fs_part(a, 0), fs_part(a, 1),
		                     fs_part(a, 2));
	case FS_LOG_ENTRY:
		return sfs_log_delete(f->store, fs_part(a, 0), fs_part(a, 1),
		                      fs_part(a, 2), a->id);
	case FS_QUEUE_ITEM:
	case FS_INFLIGHT_ITEM: /* rm = ack; a lost claim: ENOENT */
	case FS_DEAD_ITEM:
		return sfs_item_delete(f->store, fs_part(a, 0),
		                       fs_item_state(a->kind), a->id);
	case FS_CNT_KEY:
		return sfs_counter_delete(f->store, fs_part(a, 0), fs_part(a, 1),
		                          fs_part(a, 2));
	default:
		return SFS_INVALID;
	}
}

int fs_store_rename(fs *f, const fs_addr *from, const fs_addr *to,
                    unsigned flags)
{
	const fs_class *c = fs_class_of(from->kind);

	switch (from->kind) {
	case FS_KV_KEY:
		return sfs_kv_rename(f->store, fs_part(from, 0), fs_part(from, 1),
		                     fs_part(from, 2), fs_part(to, 0), fs_part(to, 1),
		                     fs_part(to, 2), flags);
	case FS_CNT_KEY:
		return sfs_counter_rename(f->store, fs_part(from, 0),
		                          fs_part(from, 1), fs_part(from, 2),
		                          fs_part(to, 0), fs_part(to, 1),
		                          fs_part(to, 2), flags);
	case FS_KV_NS:
	case FS_LOG_NS:
	case FS_CNT_NS:
		return sfs_dir_rename(f->store, c->fam, fs_part(from, 0),
		                      fs_part(from, 1), fs_part(to, 0),
		                      fs_part(to, 1), flags);
	case FS_KV_SCOPE:
	case FS_LOG_SCOPE:
	case FS_CNT_SCOPE:
	case FS_QUEUE:
		return sfs_dir_rename(f->store, c->fam, fs_part(from, 0), SFS_NONE,
		                      fs_part(to, 0), SFS_NONE, flags);
	default:
		return SFS_INVALID;
	}
}
