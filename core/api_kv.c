/*
 * api_kv.c - the public key/value, counter and directory functions: check
 * the arguments, take the handle's lock, call the backend once.
 */
#include "store_i.h"

int sfs_kv_put(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
               sfs_slice value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_value(s, value, "value"));
	CALL(s, s->ops->kv_put_many(s->be, scope, ns, &key, &value, 1));
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

int sfs_kv_stat(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                uint64_t *size, int64_t *mtime_ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(size, "size"));
	CALL(s, s->ops->kv_stat(s->be, scope, ns, key, size, mtime_ns));
}

int sfs_kv_delete(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CALL_DELETE(s, s->ops->kv_delete(s->be, scope, ns, key));
}

int sfs_kv_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                const sfs_scan_opts *opts, sfs_list *out)
{
	sfs_scan_opts o;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_scan_opts(opts, &o));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->kv_scan(s->be, scope, ns, &o, out));
}

int sfs_kv_delete_range(sfs_store *s, sfs_slice scope, sfs_slice ns,
                        sfs_slice start, sfs_slice end, uint64_t *count)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_opt_name(start, "the start bound"));
	CHECK(chk_opt_name(end, "the end bound"));
	CALL_DELETE(s, s->ops->kv_delete_range(s->be, scope, ns, start, end,
	                                       count));
}

int sfs_kv_delete_ns(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     uint64_t *count)
{
	return sfs_kv_delete_range(s, scope, ns, SFS_NONE, SFS_NONE, count);
}

int sfs_kv_drain(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->kv_drain(s->be, scope, ns, out));
}

int sfs_kv_restore(sfs_store *s, sfs_slice scope, sfs_slice ns,
                   const sfs_slice *keys, const sfs_slice *values, size_t n)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_pairs(s, keys, values, n));
	CALL(s, s->ops->kv_restore(s->be, scope, ns, keys, values, n));
}

int sfs_kv_rename(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                  sfs_slice to_scope, sfs_slice to_ns, sfs_slice to_key,
                  unsigned flags)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_key3(to_scope, to_ns, to_key));
	if (flags & ~(unsigned)SFS_RENAME_NOREPLACE)
		return sfs_err(SFS_INVALID, "unknown rename flags 0x%x", flags);
	CALL(s, s->ops->kv_rename(s->be, scope, ns, key, to_scope, to_ns,
	                          to_key, flags));
}

/* --- directories -------------------------------------------------------- */

int sfs_scope_list(sfs_store *s, sfs_family fam, sfs_slice after, long limit,
                   sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_family(fam, SFS_NONE));
	CHECK(chk_opt_name(after, "after"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->scope_list(s->be, fam, after, limit, out));
}

int sfs_ns_list(sfs_store *s, sfs_family fam, sfs_slice scope,
                sfs_slice after, long limit, sfs_list *out)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_family(fam, SFS_NONE));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_opt_name(after, "after"));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->ns_list(s->be, fam, scope, after, limit, out));
}

int sfs_dir_exists(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_name(scope, "scope"));
	CALL(s, s->ops->dir_exists(s->be, fam, scope, ns));
}

int sfs_dir_create(sfs_store *s, sfs_family fam, sfs_slice scope,
                   sfs_slice ns)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_family(fam, ns));
	CHECK(chk_name(scope, "scope"));
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
	CHECK(chk_name(to_scope, "target scope"));
	if (ns.ptr)
		CHECK(chk_name(to_ns, "target namespace"));
	else
		to_ns = SFS_NONE; /* a scope rename ignores to_ns */
	if (flags & ~(unsigned)SFS_RENAME_NOREPLACE)
		return sfs_err(SFS_INVALID, "unknown rename flags 0x%x", flags);
	CALL(s, s->ops->dir_rename(s->be, fam, scope, ns, to_scope, to_ns,
	                           flags));
}

/* --- counters ----------------------------------------------------------- */

int sfs_counter_get(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t *value, int *exists)
{
	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_key3(scope, ns, key));
	CHECK(chk_out(value, "value"));
	CALL(s, s->ops->counter_get(s->be, scope, ns, key, value, exists));
}

int sfs_counter_add(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t delta, int64_t *value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CALL(s, s->ops->counter_add(s->be, scope, ns, key, delta, value));
}

int sfs_counter_set(sfs_store *s, sfs_slice scope, sfs_slice ns, sfs_slice key,
                    int64_t value)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CALL(s, s->ops->counter_set(s->be, scope, ns, key, value));
}

int sfs_counter_delete(sfs_store *s, sfs_slice scope, sfs_slice ns,
                       sfs_slice key)
{
	sfs_err_clear();
	CHECK(chk_writable(s));
	CHECK(chk_key3(scope, ns, key));
	CALL_DELETE(s, s->ops->counter_delete(s->be, scope, ns, key));
}

int sfs_counter_scan(sfs_store *s, sfs_slice scope, sfs_slice ns,
                     const sfs_scan_opts *opts, sfs_list *out)
{
	sfs_scan_opts o;

	sfs_err_clear();
	CHECK(chk_store(s));
	CHECK(chk_name(scope, "scope"));
	CHECK(chk_name(ns, "namespace"));
	CHECK(chk_scan_opts(opts, &o));
	CHECK(chk_out(out, "out"));
	CALL(s, s->ops->counter_scan(s->be, scope, ns, &o, out));
}
