/*
 * api_kv.c - the public key/value, directory and counter functions, the Go
 * SDK's id keys and a whole scope's clear: check the arguments, take the
 * handle's lock, call the backend once.
 */
#include "store_i.h"

int sfs_kv_put(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_slice value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_key3(scope, ns, key));
	CHECK(chk_value(s, value, "value"));
	GROUP_CALL(s, s->ops->kv_put_many(s->be, scope, ns, &key, &value, 1,
	                                  0));
}

int sfs_kv_put_many(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, const sfs_slice *values, size_t n,
                    unsigned flags)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_ns2(scope, ns));
	CHECK(chk_pairs(s, keys, values, n));
	if (flags & ~(unsigned)SFS_PUT_REPLACE)
		return sfs_err(SFS_INVALID, "unknown put flags 0x%x", flags);
	if (n == 0 && !(flags & SFS_PUT_REPLACE))
		return SFS_OK;
	GROUP_CALL(s, s->ops->kv_put_many(s->be, scope, ns, keys, values, n,
	                                  flags));
}

int sfs_kv_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_buf *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->kv_get(s->be, scope, ns, key, out));
}

int sfs_kv_get_many(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    const sfs_slice *keys, size_t n, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_ns2(scope, ns));
	CHECK(chk_out(out, "out"));
	if (n && !keys)
		return sfs_err(SFS_INVALID, "keys is NULL");
	for (size_t i = 0; i < n; i++)
		CHECK(chk_name(keys[i], "key"));
	if (n == 0) {
		out->items = NULL;
		out->n = 0;
		return SFS_OK;
	}
	CALL(s, s->ops->kv_get_many(s->be, scope, ns, keys, n, out));
}

int sfs_kv_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                sfs_stat *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL_PEEK(s, s->ops->kv_stat(s->be, scope, ns, key, out));
}

int sfs_kv_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	GROUP_CALL_DELETE(s, s->ops->kv_delete(s->be, scope, ns, key));
}

/* The edits as far as they can be checked without the value: ops, bytes,
 * and offsets and lengths within the store's limit (so the backend's
 * arithmetic cannot overflow). */
static int chk_edits(const sfs_store *s, const sfs_edit *e, size_t n,
                     unsigned flags)
{
	if (n && !e)
		return sfs_err(SFS_INVALID, "edits is NULL");
	if (flags & ~(unsigned)(SFS_EDIT_CREATE | SFS_EDIT_EXCL))
		return sfs_err(SFS_INVALID, "unknown edit flags 0x%x", flags);
	if ((flags & SFS_EDIT_EXCL) && !(flags & SFS_EDIT_CREATE))
		return sfs_err(SFS_INVALID, "SFS_EDIT_EXCL without "
		               "SFS_EDIT_CREATE");
	for (size_t i = 0; i < n; i++) {
		switch (e[i].op) {
		case SFS_EDIT_WRITE:
			CHECK(chk_value(s, e[i].bytes, "an edit's bytes"));
			if (e[i].off > s->max_value - e[i].bytes.len)
				return sfs_err(SFS_TOOBIG, "a write at %llu ends"
				               " past the store's limit of %llu",
				               (unsigned long long)e[i].off,
				               (unsigned long long)s->max_value);
			break;
		case SFS_EDIT_APPEND:
			CHECK(chk_value(s, e[i].bytes, "an edit's bytes"));
			break;
		case SFS_EDIT_TRUNCATE:
			if (e[i].off > s->max_value)
				return sfs_err(SFS_TOOBIG, "a length of %llu is"
				               " more than the store's limit of %llu",
				               (unsigned long long)e[i].off,
				               (unsigned long long)s->max_value);
			break;
		default:
			return sfs_err(SFS_INVALID, "unknown edit op %d",
			               (int)e[i].op);
		}
	}
	return SFS_OK;
}

int sfs_kv_edit(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                const sfs_edit *edits, size_t n, unsigned flags,
                uint64_t *size)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_edits(s, edits, n, flags));
	if ((flags & SFS_EDIT_CREATE) && chk_new_key3(scope, ns, key)) {
		/* A name over SFS_MAX_NAME (another program's): the value is
		 * edited when it exists, never made (SFS_TOOBIG, with the
		 * check's sentence, in place of SFS_NOTFOUND). */
		int r = flags & SFS_EDIT_EXCL
		        ? SFS_NOTFOUND
		        : sfs_kv_edit(s, scope, ns, key, edits, n, 0, size);

		return r == SFS_NOTFOUND ? chk_new_key3(scope, ns, key) : r;
	}
	GROUP_CALL_OUT(s, uint64_t, size,
	               s->ops->kv_edit(s->be, scope, ns, key, edits, n, flags,
	                               s->max_value, size ? &v_ : NULL));
}

int sfs_kv_read(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t off, size_t len, sfs_buf *out, uint64_t *size)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->kv_read(s->be, scope, ns, key, off, len, out, size));
}

int sfs_kv_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *opts, sfs_list *out)
{
	sfs_scan_opts o;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_ns2(scope, ns));
	CHECK(chk_scan_opts(opts, &o));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->kv_scan(s->be, scope, ns, &o, out));
}

int sfs_kv_delete_range(sfs_store *s, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_ns2(scope, ns));
	CHECK(chk_opt_name(start, "the start bound"));
	CHECK(chk_opt_name(end, "the end bound"));
	CALL_DELETE(s, s->ops->kv_delete_range(s->be, scope, ns, start, end,
	                                       count));
}

int sfs_kv_drain(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_ns2(scope, ns));
	CHECK(chk_out(out, "out"));
	CALL_DELETE(s, s->ops->kv_drain(s->be, scope, ns, out));
}

/* The arguments of a key's or a counter's rename. */
static int chk_rename(const sfs_store *s, sfs_slice scope, sfs_slice ns,
                      sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                      sfs_slice to_key, unsigned flags)
{
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_new_key3(to_scope, to_ns, to_key));
	if (flags & ~(unsigned)(SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE))
		return sfs_err(SFS_INVALID, "unknown rename flags 0x%x", flags);
	if ((flags & SFS_RENAME_NOREPLACE) && (flags & SFS_RENAME_EXCHANGE))
		return sfs_err(SFS_INVALID, "a rename cannot both exchange and "
		               "refuse to replace");
	return SFS_OK;
}

int sfs_kv_rename(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  sfs_slice to_scope, sfs_slice to_ns, sfs_slice to_key,
                  unsigned flags)
{
	sfs_err_clear();
	CHECK(chk_rename(s, scope, ns, key, to_scope, to_ns, to_key, flags));
	CALL(s, s->ops->kv_rename(s->be, scope, ns, key, to_scope, to_ns,
	                          to_key, flags));
}

/* --- directories -------------------------------------------------------- */

static int dir_list(sfs_store *s, sfs_family fam, sfs_slice scope,
                    sfs_slice ns, sfs_slice after, long limit, int names,
                    sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_opt_name(scope, "scope"));
	if (ns.ptr && !scope.ptr)
		return sfs_err(SFS_INVALID, "a namespace without a scope");
	if (fam == SFS_FAM_QUEUE && scope.ptr)
		return sfs_err(SFS_INVALID, "queues have no namespaces");
	CHECK(chk_opt_name(after, "after"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->dir_list(s->be, fam, scope, ns, after, limit, names,
	                         out));
}

int sfs_dir_list(sfs_store *s, sfs_family fam, sfs_slice scope, sfs_slice ns,
                 sfs_slice after, long limit, sfs_list *out)
{
	return dir_list(s, fam, scope, ns, after, limit, 0, out);
}

int sfs_dir_names(sfs_store *s, sfs_family fam, sfs_slice scope, sfs_slice ns,
                  sfs_slice after, long limit, sfs_list *out)
{
	return dir_list(s, fam, scope, ns, after, limit, 1, out);
}

int sfs_dir_exists(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_name(scope, "scope"));
	CALL_PEEK(s, s->ops->dir_exists(s->be, fam, scope, ns));
}

int sfs_dir_create(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_new_name(scope, "scope"));
	if (ns.ptr)
		CHECK(chk_new_name(ns, "namespace"));
	CALL(s, s->ops->dir_create(s->be, fam, scope, ns));
}

int sfs_dir_remove(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_name(scope, "scope"));
	CALL_DELETE(s, s->ops->dir_remove(s->be, fam, scope, ns));
}

int sfs_dir_rename(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns, sfs_slice to_scope, sfs_slice to_ns,
                   unsigned flags)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_new_name(to_scope, "target scope"));
	if (ns.ptr)
		CHECK(chk_new_name(to_ns, "target namespace"));
	else
		to_ns = SFS_NONE; /* a scope rename ignores to_ns */
	if (flags & ~(unsigned)SFS_RENAME_NOREPLACE)
		return sfs_err(SFS_INVALID, "unknown rename flags 0x%x", flags);
	CALL(s, s->ops->dir_rename(s->be, fam, scope, ns, to_scope, to_ns,
	                           flags));
}

/* --- counters ----------------------------------------------------------- */

int sfs_counter_get(sfs_store *s, sfs_slice scope, sfs_slice ns,
                    sfs_slice key, int64_t *value, int64_t *mtime_ns)
{
	int64_t v = 0, t = 0;
	int r;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(value, "value"));
	store_lock_peek(s);
	r = s->ops->counter_get(s->be, scope, ns, key, &v, &t);
	store_unlock(s);
	if (r == SFS_OK) {
		*value = v;
		if (mtime_ns)
			*mtime_ns = t;
	}
	return r;
}

int sfs_counter_add(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t delta, int64_t *value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_key3(scope, ns, key));
	GROUP_CALL_OUT(s, int64_t, value,
	               s->ops->counter_add(s->be, scope, ns, key, delta, &v_));
}

int sfs_kv_set_mtime(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     sfs_slice key, int64_t mtime_ns)
{
	int64_t sec = mtime_ns / 1000000000;

	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	/* whole seconds down, before 1970 too; but a time in the second
	 * below INT64_MIN / 10^9 s has no whole second below it in int64
	 * ns, and takes the earliest one there is (sec-- left int64: a
	 * time of INT64_MIN became one in 2262) */
	if (mtime_ns < 0 && mtime_ns % 1000000000 &&
	    sec > INT64_MIN / 1000000000)
		sec--;
	/* the epoch given is kept as the epoch, not read as "unknown" */
	CALL(s, s->ops->kv_set_mtime(s->be, scope, ns, key,
	                             sec ? sec * 1000000000 : SFS_MTIME_EPOCH));
}

int sfs_counter_set(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_key3(scope, ns, key));
	GROUP_CALL(s, s->ops->counter_set(s->be, scope, ns, key, value, 0));
}

int sfs_counter_create(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, int64_t value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_new_key3(scope, ns, key));
	GROUP_CALL(s, s->ops->counter_set(s->be, scope, ns, key, value, 1));
}

int sfs_counter_delete(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	GROUP_CALL_DELETE(s, s->ops->counter_delete(s->be, scope, ns, key));
}

int sfs_counter_rename(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key, sfs_slice to_scope, sfs_slice to_ns,
                       sfs_slice to_key, unsigned flags)
{
	sfs_err_clear();
	CHECK(chk_rename(s, scope, ns, key, to_scope, to_ns, to_key, flags));
	CALL(s, s->ops->counter_rename(s->be, scope, ns, key, to_scope, to_ns,
	                               to_key, flags));
}

int sfs_counter_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *opts, sfs_list *out)
{
	sfs_scan_opts o;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_ns2(scope, ns));
	CHECK(chk_scan_opts(opts, &o));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->counter_scan(s->be, scope, ns, &o, out));
}

/* --- the Go SDK's id keys, and a whole scope ----------------------------- */

void sfs_id_encode(int64_t id, unsigned char out[8])
{
	uint64_t u = (uint64_t)id;

	for (int i = 7; i >= 0; i--) {
		out[i] = (unsigned char)(u & 0xff);
		u >>= 8;
	}
}

int sfs_id_decode(sfs_slice key, int64_t *id)
{
	const unsigned char *p = key.ptr;
	uint64_t u = 0;

	sfs_err_clear();
	if (!p || key.len != 8)
		return sfs_err(SFS_INVALID, "an id key is 8 bytes, not %zu",
		               key.len);
	CHECK(chk_out(id, "id"));
	for (int i = 0; i < 8; i++)
		u = (u << 8) | p[i];
	*id = (int64_t)u;
	return SFS_OK;
}

int sfs_exec_clear(sfs_store *s, sfs_slice scope, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CALL_DELETE(s, s->ops->exec_clear(s->be, scope, count));
}
